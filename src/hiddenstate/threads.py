"""How many threads hiddenstate's compiled kernels use, and the pool that runs them.

The parallel kernels (forward-backward, scoring, Viterbi, sampling, the diagonal-Gaussian
table, k-best paths, the sparse and blocked recursions) split their work into *chunks* that
depend only on the data (:func:`hiddenstate.kernels.chunk_bounds`). A call runs on the
calling thread and, when the work is large enough to pay for it, on helper threads of a
small pool of Python threads: every thread takes the next chunk that no thread has taken
yet (an atomic counter in the kernel, :func:`hiddenstate.kernels.chunks.claim`) until none
is left. Each chunk owns its accumulators, which the caller adds in chunk order, so the
numbers are the same, bit for bit, for any number of threads and any assignment of chunks
to threads.

Four things keep threads from costing more than they save, on an idle or a busy machine:

- a call whose estimated single-thread time is below :data:`PARALLEL_SECONDS` (about 50
  times what starting a helper costs, ``benchmarks/bench_threads.py``), or that has a
  single chunk, runs on the calling thread alone and never touches the pool;
- below :data:`BUSY_PARALLEL_SECONDS` a call takes only as many helpers as there are idle
  CPUs (:func:`idle_cpus`): on a machine whose cores other processes keep busy, a helper
  would wait for an OS time slice, and the call with it;
- a helper that has not started by the time the calling thread has taken every chunk is
  cancelled, never waited for;
- the pool is shared by the whole process: calls from several Python threads at once (the
  kernels release the GIL) share its helpers instead of starting more threads than cores.

The number of threads of a call (:func:`get_num_threads`, the calling thread included) is
the process-wide value of :func:`set_num_threads`, by default read from the environment
when this module is imported (``NUMBA_NUM_THREADS`` if set: joblib's process workers set it
to the CPU count over ``n_jobs``; else ``OMP_NUM_THREADS`` if set: Dask's worker processes
set it to 1; else the CPUs this process may run on), capped on the calling thread by every
:func:`limit` in force and by ``threadpoolctl.threadpool_limits``. numba's own
``numba.set_num_threads`` does not apply: the kernels do not use numba's threading layer.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np

from ._validation import check_positive_int

#: estimated single-thread seconds of a call below which it runs on the calling thread
#: alone (benchmarks/bench_threads.py: about 50 times the cost of starting a helper)
PARALLEL_SECONDS = 200e-6
#: ... and below which it uses only the CPUs that are idle when it starts (busy machine)
BUSY_PARALLEL_SECONDS = 20e-3

__all__ = ["BUSY_PARALLEL_SECONDS", "PARALLEL_SECONDS", "get_num_threads", "idle_cpus", "limit",
           "run", "set_num_threads"]


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no sched_getaffinity (macOS, Windows)
        return os.cpu_count() or 1


def _env_threads() -> int:
    """The default thread count from the environment (see the module docstring)."""
    for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(var, "").strip().split(",")[0]
        if value.isdigit() and int(value) >= 1:
            return int(value)
    return max(1, _cpus())


_default = _env_threads()
_local = threading.local()  # .limits: this thread's limit() caps; .outer: threadpoolctl's


def _caps() -> list[int]:
    return getattr(_local, "limits", None) or []


def get_num_threads() -> int:
    """Return the number of threads a kernel call made from this thread may use.

    The calling thread included: 1 means every call runs on the calling thread alone.

    Returns
    -------
    int
        The process-wide value (:func:`set_num_threads`, else the default from the
        environment), capped by every :func:`limit` in force on the calling thread and by
        ``threadpoolctl.threadpool_limits``.

    Examples
    --------
    >>> from hiddenstate import threads
    >>> with threads.limit(1):
    ...     threads.get_num_threads()
    1
    """
    n = min([_default, *_caps()])
    outer = getattr(_local, "outer", None)
    return n if outer is None else min(n, outer)


def set_num_threads(n_threads: int | None) -> None:
    """Set the number of threads of the kernels, for every thread of the process.

    A :func:`limit` (or ``threadpoolctl.threadpool_limits``) in force on a thread still
    caps it there.

    Parameters
    ----------
    n_threads : int >= 1 or None
        The number of threads of each kernel call, the calling thread included; None: the
        default from the environment (see :mod:`hiddenstate.threads`).

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``n_threads`` is not an integer >= 1 or None.

    Examples
    --------
    >>> from hiddenstate import threads
    >>> threads.set_num_threads(1)      # every fit, score and decode on one thread
    >>> threads.get_num_threads()
    1
    >>> threads.set_num_threads(None)   # back to the default
    """
    global _default
    _default = _env_threads() if n_threads is None else check_positive_int(n_threads,
                                                                           "n_threads")


@contextmanager
def limit(n_threads: int):
    """Use at most ``n_threads`` threads for the kernel calls of this thread, in a block.

    A cap on :func:`get_num_threads` (nested limits: the smallest holds), as
    ``threadpoolctl.threadpool_limits(n_threads)`` is for hiddenstate's kernels
    (threadpoolctl also limits BLAS and OpenMP libraries).

    Parameters
    ----------
    n_threads : int >= 1
        The most threads of each kernel call made from this thread in the block, the
        calling thread included.

    Yields
    ------
    None

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``n_threads`` is not an integer >= 1.

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> from hiddenstate import threads
    >>> X = np.random.default_rng(0).integers(0, 3, size=(400, 1))
    >>> with threads.limit(1):
    ...     model = hs.HMM(n_states=2, random_state=0).fit(X, [100] * 4)
    ...     threads.get_num_threads()
    1
    """
    n = check_positive_int(n_threads, "n_threads")
    stack = getattr(_local, "limits", None)
    if stack is None:
        stack = _local.limits = []
    stack.append(n)
    try:
        yield
    finally:
        stack.pop()


def _set_outer_limit(n_threads: int) -> None:
    """threadpoolctl's setter: the calling thread's cap. threadpoolctl restores a limit by
    setting the value it read on entry; a value that caps nothing clears the cap, so that
    a later :func:`set_num_threads` applies again after the block."""
    n = max(1, int(n_threads))
    _local.outer = None if n >= min([_default, *_caps()]) else n


# -- the pool -----------------------------------------------------------------------------
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


def _helpers(n: int) -> ThreadPoolExecutor:
    """The process's pool, with at least ``n`` helper threads."""
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < n:
            old = _pool
            _pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="hiddenstate")
            _pool_size = n
            if old is not None:
                old.shutdown(wait=False)
        return _pool


def _forget_pool() -> None:
    """In a forked child the pool's threads do not exist: start a new pool when needed."""
    global _pool, _pool_size, _pool_lock
    _pool, _pool_size, _pool_lock = None, 0, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


_LOADAVG = "/proc/loadavg"
_idle = [0.0, 0]  # (time of the last reading, idle CPUs then)


def idle_cpus() -> int:
    """Return how many of this process's CPUs no runnable thread is waiting for.

    The CPUs this process may run on minus the threads the kernel has running or ready to
    run, the calling one included (Linux: the fourth field of ``/proc/loadavg``, read at
    most every 20 ms; elsewhere every CPU counts as idle).

    Returns
    -------
    int
        The idle CPUs (>= 0).

    Examples
    --------
    >>> from hiddenstate import threads
    >>> threads.idle_cpus() >= 0
    True
    """
    now = time.monotonic()
    if now - _idle[0] > 0.02:
        try:
            with open(_LOADAVG, "rb") as f:
                running = int(f.read().split()[3].split(b"/")[0])
        except (OSError, ValueError, IndexError):
            running = 1
        _idle[:] = [now, max(0, _cpus() - running)]
    return _idle[1]


def run(kernel, n_chunks: int, seconds: float, *args) -> None:
    """Call a chunked kernel, ``kernel(*args, ticket)``, on one or several threads.

    ``ticket`` is a fresh counter (an int64 array of one zero) from which every thread
    running the kernel claims chunks (:func:`hiddenstate.kernels.chunks.claim`) until
    ``n_chunks`` have been taken. The calling thread always runs it. Helpers of the pool
    join when there are at least 2 chunks and ``seconds`` (the estimated single-thread
    time) is at least :data:`PARALLEL_SECONDS`: as many as :func:`get_num_threads` allows,
    but below :data:`BUSY_PARALLEL_SECONDS` only as many as there are idle CPUs
    (:func:`idle_cpus`). A helper that has not started when the calling thread is done is
    cancelled.

    Parameters
    ----------
    kernel : callable
        A numba kernel compiled with ``nogil=True`` whose last argument is the ticket.
    n_chunks : int
        The number of chunks the kernel has.
    seconds : float
        The estimated time of the call on one thread.
    *args
        The kernel's arguments but the ticket.

    Examples
    --------
    >>> import numpy as np
    >>> from numba import njit
    >>> from hiddenstate import threads
    >>> from hiddenstate.kernels.chunks import claim
    >>> @njit(nogil=True)
    ... def squares(out, ticket):
    ...     while True:
    ...         c = claim(ticket)
    ...         if c >= out.shape[0]:
    ...             return
    ...         out[c] = c * c
    >>> out = np.zeros(5)
    >>> threads.run(squares, 5, 1.0, out)
    >>> out
    array([ 0.,  1.,  4.,  9., 16.])
    """
    ticket = np.zeros(1, dtype=np.int64)
    n = 1
    if n_chunks > 1 and seconds >= PARALLEL_SECONDS:
        n = min(get_num_threads(), n_chunks)
        if n > 1 and seconds < BUSY_PARALLEL_SECONDS:
            n = min(n, 1 + idle_cpus())
    if n <= 1:
        kernel(*args, ticket)
        return
    pool = _helpers(n - 1)
    futures = [pool.submit(kernel, *args, ticket) for _ in range(n - 1)]
    try:
        kernel(*args, ticket)
    finally:
        for future in futures:
            if not future.cancel():  # started: it holds chunks; wait for them
                future.result()


# -- threadpoolctl ------------------------------------------------------------------------
def _register_threadpoolctl() -> None:
    """Make ``threadpoolctl.threadpool_limits`` (and ``threadpool_info``) see the kernels'
    threads, as the library ``hiddenstate``.

    threadpoolctl finds the libraries it controls among the loaded shared objects; the
    kernels have none of their own, so the controller is attached to ``_ctypes``, the
    extension module that threadpoolctl itself loads (``import ctypes``).
    """
    try:
        import threadpoolctl
    except ImportError:  # pragma: no cover - scikit-learn depends on it
        return

    from ._version import __version__

    class HiddenstateController(threadpoolctl.LibController):
        user_api = "hiddenstate"
        internal_api = "hiddenstate"
        filename_prefixes = ("_ctypes",)

        def get_num_threads(self):
            return get_num_threads()

        def set_num_threads(self, num_threads):
            _set_outer_limit(num_threads)

        def get_version(self):
            return __version__

    threadpoolctl.register(HiddenstateController)


_register_threadpoolctl()

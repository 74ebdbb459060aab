"""``fit(model, data, client)``: an HMM's batch learning mode on a Dask cluster.

The same learner as :meth:`hiddenstate.HMM.fit` (:func:`hiddenstate.learn.fit`, every
``learn=`` mode, ``n_init`` restarts) driving a :class:`~.problem.DaskProblem`: the workers
load and validate their partitions, run the E-step where the data are, and merge the
statistics in a fixed tree; the client runs the M-step. The model is initialised as
``HMM.fit`` initialises it, from the first partitions up to ``init_rows`` observations
(all of them for data of that size or less: the fit is then the local fit's, to rounding).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

import numpy as np

from .._validation import make_rng
from ..errors import InvalidInputError, MissingDependencyError
from ..inference import Sequences
from ..learn import MODES
from ..models.hmm.weights import SampleWeights
from ..progress import FitProgress
from .cluster import (
    TIMEOUT,
    WORKER_WAIT,
    Shards,
    check_timeout,
    check_worker_wait,
    live_workers,
)
from .partitions import Partitions, as_partitions, named
from .problem import DaskProblem

#: observations gathered on the client to initialise the parameters (k-means, persistence)
INIT_ROWS = 1_000_000


#: Dask settings for workers that run E-steps. Dask's nannies set ``MALLOC_TRIM_THRESHOLD_``
#: (65536), which turns off glibc's adaptive mmap threshold: every large temporary array of
#: an E-step is then mapped and unmapped again, and the E-step ran 1.5-2x slower in a worker
#: than in the client process (benchmarks/bench_distributed.py); the worker's sampling
#: profiler (every 10 ms) cost a little more. Use the same settings on a real cluster
#: (docs/distributed.md).
WORKER_CONFIG = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
                 "distributed.worker.profile.enabled": False}


def _client_module():
    try:
        import distributed
    except ImportError as exc:  # pragma: no cover - the extra is missing
        raise MissingDependencyError(
            "hiddenstate.distributed needs Dask's distributed scheduler: "
            "pip install 'hiddenstate[dask]'") from exc
    return distributed


@contextlib.contextmanager
def local_client(n_workers: int | None = None, **cluster_kwargs):
    """Open a ``distributed.Client`` on a new ``LocalCluster``, closed on exit.

    ``n_workers`` processes with one thread each, started with :data:`WORKER_CONFIG`. The
    kernels run on one thread in each worker too: the worker's nanny sets
    ``OMP_NUM_THREADS=1``, which :func:`hiddenstate.threads.get_num_threads` follows (set
    ``NUMBA_NUM_THREADS`` in ``distributed.nanny.pre-spawn-environ`` for more).

    Parameters
    ----------
    n_workers : int or None, default=None
        The number of workers; None: the CPU count.
    **cluster_kwargs
        More arguments of ``distributed.LocalCluster`` (``processes=False``: workers in this
        process, as threads).

    Yields
    ------
    distributed.Client
        The client of the cluster.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``n_workers`` is not an int >= 1 or None.
    hiddenstate.errors.MissingDependencyError
        If Dask's distributed scheduler is not installed (the ``dask`` extra).

    Examples
    --------
    >>> from hiddenstate import distributed as hsd
    >>> with hsd.local_client(2, processes=False) as client:
    ...     print(len(client.nthreads()))
    2
    """
    import dask

    if n_workers is not None and (isinstance(n_workers, bool) or not isinstance(
            n_workers, (int, np.integer)) or n_workers < 1):
        raise InvalidInputError(
            f"n_workers: expected an int >= 1 or None (one per CPU), got {n_workers!r}")
    distributed = _client_module()
    n = int(n_workers or os.cpu_count() or 1)
    cluster_kwargs = {"processes": True, "threads_per_worker": 1, "dashboard_address": None,
                      **cluster_kwargs}
    with dask.config.set(WORKER_CONFIG), \
            distributed.LocalCluster(n_workers=n, **cluster_kwargs) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def _read(source, name: str, model, n_features):
    """The validated ``(X, Sequences, SampleWeights or None)`` of one source (a loader, or
    the computed list of a bag partition), as ``HMM.fit`` validates its input
    (``model.validate_data``; the source's ``sample_weight`` attribute, if any)."""
    if isinstance(source, list):  # a bag partition: its elements are sequences
        if not source:
            raise InvalidInputError(f"data: {name} is empty; repartition the bag")
        seqs = [np.asarray(s) for s in source]
        raw = np.concatenate(seqs), np.array([len(s) for s in seqs], dtype=np.int64)
    else:
        raw = named(name, source.load)
    X, seqs = named(name, model.validate_data, raw[0], raw[1], n_features)
    weights = named(name, SampleWeights.of, getattr(source, "sample_weight", None), seqs, True)
    return X, seqs, weights


def _summary(data, name: str, model):
    """Rows, the number of features the data imply, and per column the (weighted) sum and
    count of the observed (not NaN) entries (for VB's data-mean priors) of one partition."""
    X, seqs, weights = data
    inferred = named(name, model.resolve_n_features, X)
    flat = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
    seen = ~np.isnan(flat)
    w = np.ones(len(X)) if weights is None else weights.row_weights(seqs)
    return (len(X), inferred, (w[:, None] * np.where(seen, flat, 0.0)).sum(axis=0),
            (w[:, None] * seen).sum(axis=0))


def _to_problem(data, name: str, model, family, n_features, known: bool):
    """The partition's own Problem (validated again against the fit's ``n_features`` when
    it was inferred from the partitions; refused before allocating when its E-step would
    not fit in the worker's memory)."""
    X, seqs, weights = data
    if not known:
        X, seqs = named(name, model.validate_data, X, seqs.lengths, n_features)
    named(name, model.check_fit_memory, X, seqs, family)
    return model.problem(family, X, seqs, weights=weights)


def _data_of(problem, name: str):
    return problem.X, problem.seqs.lengths


def _n_features(summary: list, names: list):
    """The number of features of the fit from each partition's: the largest alphabet
    (categorical), feature by feature for several categorical features."""
    first = summary[0][1]
    if not isinstance(first, tuple):
        return max(s[1] for s in summary)
    for (_, nf, _, _), name in zip(summary, names, strict=True):
        if not isinstance(nf, tuple) or len(nf) != len(first):
            raise InvalidInputError(
                f"X: {name} has {len(nf) if isinstance(nf, tuple) else 1} categorical "
                f"feature(s), {names[0]} has {len(first)}; give every partition the same "
                "columns")
    return tuple(int(max(s[1][f] for s in summary)) for f in range(len(first)))


def _progress(callback, model, enabled: bool):
    """The user's callback, preceded by a :class:`~hiddenstate.progress.FitProgress` bar
    per restart when ``enabled``; and the function that ends the last bar."""
    if not enabled:
        return callback, lambda: None
    bar = FitProgress(model.n_iter, model.n_init)

    def step(iteration: int, objective: float) -> None:
        bar(iteration, objective)
        if callback is not None:
            callback(iteration, objective)

    return step, bar.close


def _check_model(model) -> None:
    if not all(callable(getattr(model, hook, None)) for hook in
               ("check_hyperparameters", "validate_data", "problem", "fit_problem")):
        raise InvalidInputError(
            f"model: expected a hiddenstate HMM (hs.HMM or a subclass), got "
            f"{type(model).__name__}; other models: build a DaskProblem and call "
            "hiddenstate.learn.fit")


def _check_client(client, distributed):
    if not isinstance(client, distributed.Client):
        raise InvalidInputError(
            f"client: expected a distributed.Client, got {type(client).__name__}; pass "
            "Client('tcp://host:8786'), or None for a local cluster")


def fit(model, data, client=None, *, lengths=None, n_partitions: int | None = None,
        n_workers: int | None = None, init_rows: int = INIT_ROWS, progress: bool = False,
        callback: Callable[[int, float], None] | None = None,
        timeout: float | None = TIMEOUT, sample_weight=None,
        worker_wait: float | None = WORKER_WAIT):
    """Fit an HMM's batch learning mode on a Dask cluster, as ``model.fit`` would.

    The workers load and validate their partitions and run the E-step where the data are;
    the statistics are merged in a fixed tree and the client runs the M-step (every batch
    ``learn=`` mode, ``n_init`` restarts).

    Parameters
    ----------
    model : hiddenstate.HMM
        The model, with a batch ``learn=`` mode.
    data : ndarray, list, dask.bag.Bag or Partitions
        An array of concatenated sequences with ``lengths`` (cut into ``n_partitions``
        partitions), a list of arrays (one partition each), a list of ``.npy``/CSV paths or
        of ``.parquet`` paths (a ``sequence`` id column), a Dask bag of sequences, or
        :class:`Partitions` (:func:`from_files`, :func:`from_parquet` with other options).
    client : distributed.Client or None, default=None
        The cluster's client; None: the current one, else a new ``LocalCluster`` of
        ``n_workers`` processes for this call.
    lengths : array-like or list or None, default=None
        With an array, the length of each sequence; with a list of arrays, one lengths array
        per partition (None: one sequence each); with ``.npy``/CSV paths, one lengths file
        per data file.
    n_partitions : int or None, default=None
        The partitions an array is cut into; None: one per worker.
    n_workers : int or None, default=None
        The workers of the local cluster made when there is no client; None: the CPU count.
    init_rows : int, default=1_000_000
        The observations gathered on the client to initialise the parameters (every row of
        smaller data: the fit is then the local fit's, to rounding).
    progress : bool, default=False
        A tqdm progress bar per restart.
    callback : callable or None, default=None
        ``callback(iteration, objective)`` after every iteration, as in ``HMM.fit``.
    timeout : float or None, default=600.0
        The longest wait in seconds for any one step on the cluster (loading the
        partitions, one E-step of a worker); None: no limit.
    sample_weight : array-like, dict, list or None, default=None
        ``HMM.fit``'s weights (same meaning, :mod:`hiddenstate.models.hmm.weights`): with an
        array, one per sequence or observation (or a dict of both), cut with the data; with
        a list of arrays, one such entry per array. Other data: give each source a
        ``sample_weight`` attribute.
    worker_wait : float or None, default=60.0
        The longest wait in seconds for a worker when every worker of the cluster has gone
        mid-fit (a restarted worker is back within seconds); None: no limit. A cluster with
        no worker when the fit starts fails at once.

    Returns
    -------
    hiddenstate.HMM
        ``model``, fitted.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``model`` is not an HMM with a batch mode, or an argument or the data is invalid
        (the message names the partition or file).
    hiddenstate.errors.ClusterError
        If the cluster has no worker, a step waits longer than ``timeout``, every worker
        has gone for longer than ``worker_wait``, the client is not running or a
        partition's worker died 3 times; the message names the cluster and what it waited
        for.
    hiddenstate.errors.MissingDependencyError
        If Dask's distributed scheduler is not installed (the ``dask`` extra).

    See Also
    --------
    DaskProblem : The same for any model that hands the learner a Problem.

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> from hiddenstate import distributed as hsd
    >>> X = np.array([0, 0, 1, 0, 2, 2, 1, 2, 0, 0, 1, 2, 2, 2, 1, 0])
    >>> with hsd.local_client(1, processes=False) as client:
    ...     model = hsd.fit(hs.HMM(2, n_iter=20, random_state=0), X, client,
    ...                     lengths=[6, 8, 2], n_partitions=2)
    >>> local = hs.HMM(2, n_iter=20, random_state=0).fit(X, [6, 8, 2])
    >>> bool(np.isclose(model.monitor_.history[-1], local.monitor_.history[-1]))
    True
    """
    distributed = _client_module()
    _check_model(model)
    model.check_hyperparameters()
    if model.learn not in MODES:
        raise InvalidInputError(
            f"learn: the distributed fit runs the batch modes {MODES}; the streaming learner "
            f"{model.learn!r} sees each sequence once, in order (use model.partial_fit)")
    if isinstance(init_rows, bool) or not isinstance(init_rows, (int, np.integer)) \
            or init_rows < 1:
        raise InvalidInputError(f"init_rows: expected an int >= 1, got {init_rows!r}")
    if n_partitions is not None and (isinstance(n_partitions, bool) or not isinstance(
            n_partitions, (int, np.integer)) or n_partitions < 1):
        raise InvalidInputError(
            f"n_partitions: expected an int >= 1 or None (one per worker), got "
            f"{n_partitions!r}")
    if callback is not None and not callable(callback):
        raise InvalidInputError(
            f"callback: expected a function callback(iteration, objective), got "
            f"{type(callback).__name__}")
    timeout = check_timeout(timeout)
    worker_wait = check_worker_wait(worker_wait)
    if client is None:
        try:
            client = distributed.default_client()
        except ValueError:  # no client yet: a local cluster for this call
            with local_client(n_workers) as own:
                return fit(model, data, own, lengths=lengths, n_partitions=n_partitions,
                           init_rows=init_rows, progress=progress, callback=callback,
                           timeout=timeout, sample_weight=sample_weight,
                           worker_wait=worker_wait)
    _check_client(client, distributed)
    workers = live_workers(client, 0.0, timeout)  # no worker: fail at once
    if n_partitions is None:
        n_partitions = len(workers)
    parts = as_partitions(data, lengths, n_partitions, sample_weight)
    step, close = _progress(callback, model, progress)
    try:
        return _fit(model, parts, client, int(init_rows), step, timeout, worker_wait)
    finally:
        close()


def _fit(model, parts: Partitions, client, init_rows: int, callback, timeout, worker_wait):
    names = list(parts.names)
    known = model.resolve_n_features()
    shards = Shards(client, list(parts.sources), names, timeout, worker_wait)
    try:
        # each worker reads and validates its partitions once and keeps them
        shards.load(_read, model, known)
        summary = shards.map(_summary, model, what="summarising the partitions")
        rows = np.array([s[0] for s in summary])
        n_features = known if known is not None else _n_features(summary, names)
        total, seen = summary[0][2], summary[0][3]
        for s in summary[1:]:
            total, seen = total + s[2], seen + s[3]
        # a one-row stand-in whose column means (over the observed entries) are the
        # data's: all that the family reads from X (NaN: a column without observations)
        with np.errstate(invalid="ignore", divide="ignore"):
            family = model.emission_family(n_features, (total / seen)[None, :])
        shards.map(_to_problem, model, family, n_features, known is not None, keep=True,
                   what="building the partitions' Problems")
        problem = DaskProblem.on(shards)
        X0 = seqs0 = None
        if set(model.init_params) & (set("t") | set(family.letters)):
            n_init = max(1, int(np.searchsorted(np.cumsum(rows), init_rows, side="right")))
            sample = shards.map(_data_of, indices=list(range(n_init)),
                                what="gathering the initialisation sample")
            X0 = np.concatenate([x for x, _ in sample])
            seqs0 = Sequences.from_lengths(np.concatenate([ln for _, ln in sample]))
        return model.fit_problem(problem, family, n_features, X0, seqs0,
                                 make_rng(model.random_state), callback)
    finally:
        shards.close()

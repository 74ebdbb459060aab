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
import warnings
from collections.abc import Callable

import numpy as np

from .._validation import make_rng
from ..errors import InvalidInputError
from ..inference import Sequences
from ..learn import MODES
from ..progress import FitProgress
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
        raise ImportError(
            "hiddenstate.distributed needs Dask's distributed scheduler: "
            "pip install 'hiddenstate[dask]'") from exc
    return distributed


@contextlib.contextmanager
def local_client(n_workers: int | None = None, **cluster_kwargs):
    """A ``distributed.Client`` on a new ``LocalCluster`` of ``n_workers`` processes (default:
    the CPU count) with one thread each (numba runs its own threads inside a task), closed
    on exit. The workers are started with :data:`WORKER_CONFIG`."""
    import dask

    distributed = _client_module()
    n = n_workers or os.cpu_count() or 1
    cluster_kwargs = {"processes": True, "threads_per_worker": 1, "dashboard_address": None,
                      **cluster_kwargs}
    with dask.config.set(WORKER_CONFIG), \
            distributed.LocalCluster(n_workers=n, **cluster_kwargs) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def _is_delayed(source) -> bool:
    return hasattr(source, "dask") and hasattr(source, "compute")


def _read(source, model, n_features: int | None, name: str):
    """The validated ``(X, Sequences)`` of one source (a loader, or the computed list of a
    bag partition), as ``HMM.fit`` validates its input (``model.validate_data``)."""
    if isinstance(source, list):  # a bag partition: its elements are sequences
        if not source:
            raise InvalidInputError(f"data: {name} is empty; repartition the bag")
        seqs = [np.asarray(s) for s in source]
        raw = np.concatenate(seqs), np.array([len(s) for s in seqs], dtype=np.int64)
    else:
        raw = named(name, source.load)
    return named(name, model.validate_data, raw[0], raw[1], n_features)


def _summary(source, model, n_features: int | None, name: str):
    """Rows, the number of features the data imply, column sums (for VB's data-mean
    priors) of one source (read, then dropped)."""
    X, _ = _read(source, model, n_features, name)
    inferred = named(name, model.resolve_n_features, X)
    return len(X), inferred, np.asarray(X, dtype=np.float64).reshape(len(X), -1).sum(axis=0)


class _HMMPart:
    """``make_problem`` of an HMM: the model's own Problem on a source's sequences (read
    and validated on the worker; the Problem is the only copy of the data it keeps)."""

    def __init__(self, model, family, n_features: int):
        self.model = model
        self.family = family
        self.n_features = n_features

    def __call__(self, source, name: str):
        X, seqs = _read(source, self.model, self.n_features, name)
        return self.model.problem(self.family, X, seqs)


def _data_of(problem):
    return problem.X, problem.seqs.lengths


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


def fit(model, data, client=None, *, lengths=None, n_partitions: int | None = None,
        n_workers: int | None = None, init_rows: int = INIT_ROWS, progress: bool = False,
        callback: Callable[[int, float], None] | None = None):
    """Fit ``model`` (a :class:`hiddenstate.HMM` with a batch ``learn=`` mode) on ``data``
    with a Dask cluster; returns the model, fitted as by ``model.fit``.

    ``data``: an array of concatenated sequences with ``lengths`` (cut into
    ``n_partitions`` partitions, default one per worker), a list of arrays (one partition
    each; ``lengths`` then holds one lengths array per partition, default one sequence
    each), a list of ``.npy``/CSV paths (``lengths``: one lengths file per data file) or
    of ``.parquet`` paths (a ``sequence`` id column), a Dask bag of sequences, or
    :class:`~.partitions.Partitions` (:func:`~.partitions.from_files`,
    :func:`~.partitions.from_parquet` with other options).

    ``client``: a ``distributed.Client``; default the current one, else a new
    ``LocalCluster`` of ``n_workers`` processes for this call. ``init_rows``: observations
    gathered on the client to initialise the parameters (every row of smaller data).
    ``progress``: a tqdm bar per restart; ``callback(iteration, objective)`` as in
    ``HMM.fit``.
    """
    distributed = _client_module()
    model.check_hyperparameters()
    if model.learn not in MODES:
        raise InvalidInputError(
            f"learn: the distributed fit runs the batch modes {MODES}; the streaming learner "
            f"{model.learn!r} sees each sequence once, in order (use model.partial_fit)")
    if not isinstance(init_rows, (int, np.integer)) or init_rows < 1:
        raise InvalidInputError(f"init_rows: expected an int >= 1, got {init_rows!r}")
    if client is None:
        try:
            client = distributed.default_client()
        except ValueError:  # no client yet: a local cluster for this call
            with local_client(n_workers) as own:
                return fit(model, data, own, lengths=lengths, n_partitions=n_partitions,
                           init_rows=init_rows, progress=progress, callback=callback)
    if n_partitions is None:
        n_partitions = max(1, len(client.nthreads()))
    parts = as_partitions(data, lengths, n_partitions)
    step, close = _progress(callback, model, progress)
    try:
        return _fit(model, parts, client, init_rows, step)
    finally:
        close()


def _fit(model, parts: Partitions, client, init_rows: int, callback):
    names = list(parts.names)
    n_features = model.resolve_n_features()
    with warnings.catch_warnings():
        # in-memory arrays travel inside their tasks on purpose: the scheduler keeps them,
        # so a partition lost with its worker is rebuilt (scattered data would be lost)
        warnings.filterwarnings("ignore", "Sending large graph", UserWarning)
        # a bag partition is computed once and kept; the other sources are read twice (a
        # summary pass, then the Problem), so that a worker holds one copy of its data
        sources = [client.compute(s) if _is_delayed(s) else s for s in parts.sources]
        summary = client.gather([client.submit(_summary, s, model, n_features, n, pure=False)
                                 for s, n in zip(sources, names, strict=True)])
    rows = np.array([s[0] for s in summary])
    if n_features is None:
        n_features = max(s[1] for s in summary)
    column_sum = summary[0][2]
    for s in summary[1:]:
        column_sum = column_sum + s[2]
    # a one-row stand-in whose mean is the data's: all that the family reads from X
    family = model.emission_family(n_features, (column_sum / rows.sum())[None, :])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Sending large graph", UserWarning)
        problem = DaskProblem.build(client, sources, names,
                                    _HMMPart(model, family, n_features))
    X0 = seqs0 = None
    if set(model.init_params) & (set("t") | set(family.letters)):
        n_init_parts = max(1, int(np.searchsorted(np.cumsum(rows), init_rows, side="right")))
        sample = client.gather([client.submit(_data_of, p, pure=False)
                                for p in problem.problems[:n_init_parts]])
        X0 = np.concatenate([x for x, _ in sample])
        seqs0 = Sequences.from_lengths(np.concatenate([ln for _, ln in sample]))
    return model.fit_problem(problem, family, n_features, X0, seqs0,
                             make_rng(model.random_state), callback)

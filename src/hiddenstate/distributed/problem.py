"""A learning :class:`~hiddenstate.learn.batch.Problem` whose sequences are partitions held
by the workers of a Dask cluster.

Each call of the E-step (``expected_counts`` or ``path_counts``)

1. sends the parameters to each worker once, with the call that runs the E-step of all the
   partitions the worker holds (one actor call per worker: :mod:`.cluster`),
2. gets back each partition's statistics, and
3. merges them on the client pairwise in a binary tree whose shape depends on the
   partition index only, (0, 1), (2, 3), ... then the pairs of pairs
   (:func:`hiddenstate.learn.merge_statistics`); the learner then runs the M-step.

The numbers therefore do not depend on how many workers there are, which one held which
partition, or whether a partition was loaded again because a worker died. Max-product
passes send back a digest of each partition's paths instead of the paths (the learner only
asks whether the paths changed).
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..learn import merge_statistics
from .cluster import (
    TIMEOUT,
    WORKER_WAIT,
    Shards,
    check_timeout,
    check_worker_wait,
    live_workers,
)
from .partitions import named


def _expected_counts(problem, name: str, views):
    value, stats = named(name, problem.expected_counts, views)
    return value, stats, b""


def _path_counts(problem, name: str, views, k: int):
    value, stats, paths = named(name, problem.path_counts, views, k)
    paths = np.ascontiguousarray(paths)
    digest = hashlib.blake2b(repr(paths.shape).encode() + paths.tobytes(), digest_size=16)
    return value, stats, digest.digest()


def _describe(problem, name: str):
    return problem.blocks, problem.letters, problem.n_virtual, problem.n_observations


def _build(source, name: str, make_problem):
    return make_problem(source, name)


def merge_tree(blocks: dict, results: list) -> tuple:
    """``(value, stats, digests)`` of every partition merged pairwise in the fixed binary
    tree over the partition index: (0, 1), (2, 3), ..., then pairs of pairs."""
    level = list(results)
    while len(level) > 1:
        pairs = [(a[0] + b[0], merge_statistics(blocks, a[1], b[1]), a[2] + b[2])
                 for a, b in zip(level[0:-1:2], level[1::2], strict=True)]
        level = pairs + level[len(pairs) * 2:]
    return level[0]


class DaskProblem:
    """The learning Problem of all partitions, each held (as its own Problem) by a worker.

    A :class:`~hiddenstate.learn.batch.Problem` for :func:`hiddenstate.learn.fit` and
    :func:`hiddenstate.learn.fit_restarts`: its E-step runs on the workers and the
    partitions' statistics are merged in a fixed tree (see the module docstring). Call
    :meth:`close` (or use ``with``) to release the workers' copies. :meth:`build` makes one.

    Parameters
    ----------
    shards : hiddenstate.distributed.cluster.Shards
        The partitions' Problems, held by one actor per worker.
    blocks : dict of str to Block
        The parameter blocks (those of every partition's Problem).
    letters : dict of str to str
        The letters of each block (hmmlearn's ``params``).
    n_virtual : dict of str to float
        The observations per state of each block, summed over the partitions.
    n_observations : int
        The observations of all partitions (the unit of the stop rule's ``tol``).

    See Also
    --------
    hiddenstate.distributed.fit : The distributed fit of an HMM, built on this class.

    Examples
    --------
    The E-step of two partitions on a worker gives the statistics of the whole data:

    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> from hiddenstate import distributed as hsd
    >>> X, lengths = np.array([0, 0, 1, 0, 2, 2, 1, 2, 0, 0, 1, 2, 2, 2, 1, 0]), [6, 8, 2]
    >>> def make_problem(source, name):
    ...     model = hs.HMM(2)
    ...     X, seqs = model.validate_data(*source.load(), 3)
    ...     return model.problem(model.emission_family(3, X), X, seqs)
    >>> params = {"startprob": np.array([0.5, 0.5]),
    ...           "transmat": np.array([[0.8, 0.2], [0.3, 0.7]]),
    ...           "emission": {"emissionprob": np.array([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]])}}
    >>> parts = hsd.from_arrays(X, lengths, n_partitions=2)
    >>> with hsd.local_client(1, processes=False) as client:
    ...     with hsd.DaskProblem.build(client, parts.sources, parts.names,
    ...                                make_problem) as problem:
    ...         loglik, stats = problem.expected_counts(params)
    >>> whole = make_problem(hsd.from_arrays(X, lengths, n_partitions=1).sources[0], "all")
    >>> loglik_whole, stats_whole = whole.expected_counts(params)
    >>> bool(np.isclose(loglik, loglik_whole)), bool(np.allclose(stats["transmat"],
    ...                                                         stats_whole["transmat"]))
    (True, True)
    """

    def __init__(self, shards: Shards, blocks: dict, letters: dict, n_virtual: dict,
                 n_observations: int):
        self.shards = shards
        self.blocks = blocks
        self.letters = letters
        self.n_virtual = n_virtual
        self.n_observations = n_observations

    @classmethod
    def build(cls, client, partitions: list, names: list[str], make_problem,
              timeout: float | None = TIMEOUT,
              worker_wait: float | None = WORKER_WAIT) -> DaskProblem:
        """Build ``make_problem(partition, name)`` on a worker for each partition, in data order.

        ``n_virtual`` and ``n_observations`` are summed over the partitions (they count
        data).

        Parameters
        ----------
        client : distributed.Client
            A running client of the cluster.
        partitions : list
            The partitions' sources: objects that load the data (``Partitions.sources``), or
            Dask Delayed objects computed on the worker first.
        names : list of str
            The partitions' names, used by error messages (``Partitions.names``).
        make_problem : callable
            ``make_problem(partition, name)``: the partition's
            :class:`~hiddenstate.learn.batch.Problem`, run on the worker that holds it.
        timeout : float or None, default=600.0
            The longest wait in seconds for any one step (None: no limit).
        worker_wait : float or None, default=60.0
            The longest wait in seconds for a worker once every worker has gone (None: no
            limit); a cluster with no worker at the start fails at once.

        Returns
        -------
        DaskProblem
            The Problem of all partitions.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``timeout`` or ``worker_wait`` is invalid or there are no partitions.
        hiddenstate.errors.ClusterError
            If the cluster has no worker, a step takes longer than ``timeout``, the client is
            not running, or a partition's worker died 3 times.
        """
        timeout = check_timeout(timeout)
        worker_wait = check_worker_wait(worker_wait)
        live_workers(client, 0.0, timeout)
        shards = Shards(client, list(partitions), list(names), timeout, worker_wait)
        try:
            shards.load(_build, make_problem)
            return cls.on(shards)
        except BaseException:
            shards.close()
            raise

    @classmethod
    def on(cls, shards: Shards) -> DaskProblem:
        """Return the Problem of ``shards`` whose items are already the partitions' Problems.

        Parameters
        ----------
        shards : hiddenstate.distributed.cluster.Shards
            The partitions' Problems, held by the workers.

        Returns
        -------
        DaskProblem
            Their Problem, with ``n_virtual`` summed over the partitions.
        """
        described = shards.map(_describe, what="describing the partitions' Problems")
        blocks, letters, n_virtual, n_observations = described[0]
        for _, _, more, more_observations in described[1:]:
            n_virtual = {key: n_virtual[key] + more[key] for key in n_virtual}
            n_observations += more_observations
        return cls(shards, blocks, letters, n_virtual, n_observations)

    def close(self) -> None:
        """Release the workers' copies of the partitions."""
        self.shards.close()

    def __enter__(self) -> DaskProblem:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def expected_counts(self, views: dict) -> tuple[float, dict]:
        """Run the sum-product E-step on every partition and merge the statistics.

        Parameters
        ----------
        views : dict
            The parameters per block (for VB, the blocks' expected views).

        Returns
        -------
        loglik : float
            The sum over all sequences of their log-likelihoods (log Z).
        stats : dict
            The statistics per block, merged in the fixed tree over the partitions.
        """
        results = self.shards.map(_expected_counts, views, what="the E-step")
        value, stats, _ = merge_tree(self.blocks, results)
        return value, stats

    def path_counts(self, views: dict, k: int) -> tuple[float, dict, np.ndarray]:
        """Run the max-product E-step (the ``k`` best paths) on every partition.

        Parameters
        ----------
        views : dict
            The parameters per block.
        k : int
            The number of best paths per sequence.

        Returns
        -------
        value : float
            The objective of the ``k`` best paths, over all sequences.
        stats : dict
            The counts per block along the paths, merged in the fixed tree.
        digest : ndarray of uint8
            A digest of every partition's paths in place of the paths (the learner only
            asks whether they changed).
        """
        results = self.shards.map(_path_counts, views, k, what="the E-step (best paths)")
        value, stats, digests = merge_tree(self.blocks, results)
        return value, stats, np.frombuffer(digests, dtype=np.uint8)

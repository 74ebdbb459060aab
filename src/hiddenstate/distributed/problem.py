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
from .cluster import TIMEOUT, Shards, check_timeout, live_workers
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
    return problem.blocks, problem.letters, problem.n_virtual


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
    """The Problem of all partitions, each held (as its own Problem) by a worker:
    ``shards`` (:class:`~.cluster.Shards`). Call :meth:`close` (or use ``with``) to
    release the workers' copies."""

    def __init__(self, shards: Shards, blocks: dict, letters: dict, n_virtual: dict):
        self.shards = shards
        self.blocks = blocks
        self.letters = letters
        self.n_virtual = n_virtual

    @classmethod
    def build(cls, client, partitions: list, names: list[str], make_problem,
              timeout: float | None = TIMEOUT) -> DaskProblem:
        """Build ``make_problem(partition, name)`` on a worker for each partition (an
        object that loads the data, or a Dask Delayed computed on the worker first), in
        data order; ``n_virtual`` is summed over the partitions (it counts data).
        ``timeout``: the longest wait in seconds for any one step (None: no limit)."""
        timeout = check_timeout(timeout)
        live_workers(client, timeout)
        shards = Shards(client, list(partitions), list(names), timeout)
        try:
            shards.load(_build, make_problem)
            return cls.on(shards)
        except BaseException:
            shards.close()
            raise

    @classmethod
    def on(cls, shards: Shards) -> DaskProblem:
        """The Problem of ``shards`` whose items are already the partitions' Problems."""
        described = shards.map(_describe, what="describing the partitions' Problems")
        blocks, letters, n_virtual = described[0]
        for _, _, more in described[1:]:
            n_virtual = {key: n_virtual[key] + more[key] for key in n_virtual}
        return cls(shards, blocks, letters, n_virtual)

    def close(self) -> None:
        self.shards.close()

    def __enter__(self) -> DaskProblem:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def expected_counts(self, views: dict) -> tuple[float, dict]:
        results = self.shards.map(_expected_counts, views, what="the E-step")
        value, stats, _ = merge_tree(self.blocks, results)
        return value, stats

    def path_counts(self, views: dict, k: int) -> tuple[float, dict, np.ndarray]:
        results = self.shards.map(_path_counts, views, k, what="the E-step (best paths)")
        value, stats, digests = merge_tree(self.blocks, results)
        return value, stats, np.frombuffer(digests, dtype=np.uint8)

"""A learning :class:`~hiddenstate.learn.batch.Problem` whose sequences are partitions held
by the workers of a Dask cluster.

Each call of the E-step (``expected_counts`` or ``path_counts``)

1. sends the parameters once (one task whose result every worker fetches once),
2. runs the partition's own Problem where the partition lives (one task per partition),
3. merges the statistics pairwise in a binary tree whose shape depends on the partition
   index only, (0, 1), (2, 3), ... then the pairs of pairs
   (:func:`hiddenstate.learn.merge_statistics`), and
4. returns the merged statistics to the learner on the client, which runs the M-step.

The numbers therefore do not depend on how many workers there are, which one ran which
task, or whether a task ran twice because a worker died (Dask recomputes lost results from
the tasks that made them). Max-product passes send back a digest of each partition's paths
instead of the paths (the learner only asks whether the paths changed).
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..learn import merge_statistics
from .partitions import named


def _expected_counts(problem, shared, name: str):
    value, stats = named(name, problem.expected_counts, shared[0])
    return value, stats, b""


def _path_counts(problem, shared, name: str, k: int):
    value, stats, paths = named(name, problem.path_counts, shared[0], k)
    paths = np.ascontiguousarray(paths)
    digest = hashlib.blake2b(repr(paths.shape).encode() + paths.tobytes(), digest_size=16)
    return value, stats, digest.digest()


def _shared(obj):
    return obj


def _merge(a, b, shared):
    return a[0] + b[0], merge_statistics(shared[1], a[1], b[1]), a[2] + b[2]


def _describe(problem):
    return problem.blocks, problem.letters, problem.n_virtual


class DaskProblem:
    """The Problem of all partitions: ``problems`` are futures of the partitions' own
    Problems (built on the workers, in data order, by :meth:`build`)."""

    def __init__(self, client, problems: list, names: list[str], blocks: dict, letters: dict,
                 n_virtual: dict):
        self.client = client
        self.problems = problems
        self.names = names
        self.blocks = blocks
        self.letters = letters
        self.n_virtual = n_virtual

    @classmethod
    def build(cls, client, partitions: list, names: list[str], make_problem) -> DaskProblem:
        """Build ``make_problem(partition, name)`` on a worker for each partition (an object
        that loads the data, or a future of them), in data order; ``n_virtual`` is summed
        over the partitions (it counts data)."""
        problems = [client.submit(make_problem, part, name, pure=False)
                    for part, name in zip(partitions, names, strict=True)]
        described = client.gather([client.submit(_describe, p, pure=False) for p in problems])
        blocks, letters, n_virtual = described[0]
        for _, _, more in described[1:]:
            n_virtual = {key: n_virtual[key] + more[key] for key in n_virtual}
        return cls(client, problems, list(names), blocks, letters, n_virtual)

    def _broadcast(self, obj):
        """``obj`` on the cluster once, as the result of a task: each worker fetches it once
        (from a peer) for all its tasks. Unlike scattered data it has a lineage: if the
        worker that holds it dies, the scheduler runs the task again (``client.scatter``
        with ``broadcast=True`` both loses that and, measured, hangs when a worker dies
        during the transfer)."""
        return self.client.submit(_shared, obj, pure=False)

    def _map_reduce(self, step, views, *args):
        # the parameters, and the blocks that merge statistics, sent once per iteration
        theta = self._broadcast((views, self.blocks))
        level = [self.client.submit(step, problem, theta, name, *args, pure=False)
                 for problem, name in zip(self.problems, self.names, strict=True)]
        while len(level) > 1:
            pairs = [self.client.submit(_merge, level[i], level[i + 1], theta,
                                        pure=False) for i in range(0, len(level) - 1, 2)]
            level = pairs + level[len(pairs) * 2:]
        return level[0].result()

    def expected_counts(self, views: dict) -> tuple[float, dict]:
        value, stats, _ = self._map_reduce(_expected_counts, views)
        return value, stats

    def path_counts(self, views: dict, k: int) -> tuple[float, dict, np.ndarray]:
        value, stats, digests = self._map_reduce(_path_counts, views, k)
        return value, stats, np.frombuffer(digests, dtype=np.uint8)

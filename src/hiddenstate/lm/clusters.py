r"""Brown clusters: Liang's ``paths`` files and our own clustering (exchange algorithm).

``paths`` format (percyliang/brown-cluster ``wcluster``): one line per word,
``<bit-string>\t<word>\t<count>``; words with the same bit string share a cluster.

:func:`brown_clusters` clusters a corpus itself, with no external tool, by the exchange
algorithm (:mod:`hiddenstate.kernels.brown`), which maximises the same objective as Brown
et al.'s agglomerative merging -- the average mutual information (AMI) of the class
bigram model, :func:`average_mutual_information` -- by moving one word at a time to its
best class. Its clusters are flat: :func:`write_brown_paths` writes each cluster's index as
a fixed-width bit string (no merge hierarchy).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InvalidInputError
from ..kernels.brown import exchange_pass
from ..textio import Vocabulary, read_text_file

__all__ = ["BrownClusters", "average_mutual_information", "brown_clusters",
           "read_brown_paths", "write_brown_paths"]


@dataclass(frozen=True)
class BrownClusters:
    """Brown clusters as a ``paths`` file holds them: one entry per word.

    Parameters
    ----------
    words : list of str
        The words.
    paths : list of str
        The bit string of each word; words with the same bit string share a cluster.
    counts : list of int
        The training count of each word.

    Examples
    --------
    >>> from hiddenstate.lm import BrownClusters
    >>> from hiddenstate.textio import Vocabulary
    >>> clusters = BrownClusters(words=["the", "a", "cat"], paths=["0", "0", "1"],
    ...                          counts=[40, 40, 20])
    >>> clusters.n_clusters
    2
    >>> vocabulary = Vocabulary(["the", "a", "cat", "dog"])   # id 0 is <unk>
    >>> clusters.word_cluster(vocabulary)   # <unk> and dog: the extra cluster
    array([2, 0, 0, 1, 2])
    """

    words: list[str]
    paths: list[str]
    counts: list[int]

    @property
    def n_clusters(self) -> int:
        """The number of distinct bit strings (clusters)."""
        return len(set(self.paths))

    def word_cluster(self, vocabulary: Vocabulary) -> np.ndarray:
        """Return the cluster id of every vocabulary id.

        Clusters are numbered in order of first appearance in the file; vocabulary words the
        file lacks (``<eos>`` for the PTB files) share one extra cluster after them.

        Parameters
        ----------
        vocabulary : hiddenstate.textio.Vocabulary
            The vocabulary of the model.

        Returns
        -------
        ndarray of int64 of shape (len(vocabulary),)
            The cluster of each word id.
        """
        index: dict[str, int] = {}
        by_word = {}
        for w, p in zip(self.words, self.paths, strict=True):
            by_word[w] = index.setdefault(p, len(index))
        extra = len(index)
        return np.array([by_word.get(t, extra) for t in vocabulary.tokens], dtype=np.int64)


def read_brown_paths(path) -> BrownClusters:
    r"""Read a ``paths`` file (percyliang/brown-cluster's ``wcluster`` output).

    One line per word: ``<bit-string>\t<word>\t<count>``.

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns
    -------
    BrownClusters
        The clusters.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If a line is malformed or a word appears twice.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate.lm import read_brown_paths
    >>> _ = Path("paths").write_text("0\tthe\t40\n0\ta\t40\n1\tcat\t20\n")
    >>> read_brown_paths("paths")
    BrownClusters(words=['the', 'a', 'cat'], paths=['0', '0', '1'], counts=[40, 40, 20])
    """
    words, paths, counts = [], [], []
    for n, line in enumerate(read_text_file(path).split("\n"), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3 or not parts[0] or set(parts[0]) - {"0", "1"} \
                or not parts[2].isdigit():
            raise InvalidInputError(
                f"{path}, line {n}: expected '<bit-string>\\t<word>\\t<count>'; pass a "
                "wcluster paths file")
        words.append(parts[1])
        paths.append(parts[0])
        counts.append(int(parts[2]))
    if len(set(words)) != len(words):
        raise InvalidInputError(f"{path}: a word appears twice; pass a wcluster paths file")
    return BrownClusters(words, paths, counts)


def write_brown_paths(clusters: BrownClusters, path) -> None:
    """Write clusters in the ``paths`` format, grouped by cluster.

    Parameters
    ----------
    clusters : BrownClusters
        The clusters.
    path : str or os.PathLike
        The file to write.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate.lm import BrownClusters, write_brown_paths
    >>> write_brown_paths(BrownClusters(["cat", "the"], ["1", "0"], [20, 40]), "paths")
    >>> print(Path("paths").read_text(), end="")
    0	the	40
    1	cat	20
    """
    order = sorted(range(len(clusters.words)),
                   key=lambda i: (clusters.paths[i], clusters.counts[i], clusters.words[i]))
    lines = [f"{clusters.paths[i]}\t{clusters.words[i]}\t{clusters.counts[i]}\n" for i in order]
    Path(path).write_text("".join(lines), encoding="utf-8")


def _bigrams(ids: np.ndarray, W: int):
    a, b = ids[:-1], ids[1:]
    key, cnt = np.unique(a * W + b, return_counts=True)
    return key // W, key % W, cnt.astype(np.float64)


def average_mutual_information(ids, word_cluster) -> float:
    r"""Compute the average mutual information (nats) of adjacent classes in a token stream.

    :math:`\sum_{c,d} p(c,d) \log \frac{p(c,d)}{p(c) p(d)}` with the left and right marginals
    of the class bigram counts: the objective Brown clustering maximises.

    Parameters
    ----------
    ids : array-like of int
        The token ids.
    word_cluster : array-like of int
        The class of every word id.

    Returns
    -------
    float
        The average mutual information.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.lm import average_mutual_information
    >>> ids = np.array([0, 1, 0, 1, 0])
    >>> round(average_mutual_information(ids, [0, 1]), 4)  # ln 2: a class gives the next one
    0.6931
    >>> average_mutual_information(ids, [0, 0])
    0.0
    """
    ids = np.asarray(ids, dtype=np.int64)
    wc = np.asarray(word_cluster, dtype=np.int64)
    C = int(wc.max()) + 1
    M = np.zeros((C, C))
    a, b, cnt = _bigrams(ids, len(wc))
    np.add.at(M, (wc[a], wc[b]), cnt)
    N = M.sum()
    nl, nr = M.sum(axis=1), M.sum(axis=0)
    nz = M > 0
    return float((M[nz] / N * np.log(M[nz] * N / np.outer(nl, nr)[nz])).sum())


def brown_clusters(ids, n_clusters: int, n_words: int | None = None, max_iter: int = 30,
                   tol: float = 1e-3, verbose: bool = False) -> np.ndarray:
    """Cluster the words of a token stream by the exchange algorithm.

    Start: the ``n_clusters - 1`` most frequent words each in a class of their own, every
    other word in the last class (Martin, Liermann & Ney 1998). Passes visit words by
    decreasing frequency and stop when fewer than ``tol`` of the words moved or after
    ``max_iter`` passes. Words that never occur stay in the last class. The objective is
    :func:`average_mutual_information`.

    Parameters
    ----------
    ids : array-like of int
        The token ids.
    n_clusters : int
        The number of classes, 2 .. the number of words.
    n_words : int or None, default=None
        The number of word ids; None: ``max(ids) + 1``.
    max_iter : int, default=30
        The largest number of passes.
    tol : float, default=1e-3
        Stop when fewer than this fraction of the words moved in a pass.
    verbose : bool, default=False
        Print each pass's objective to stderr.

    Returns
    -------
    ndarray of int64 of shape (n_words,)
        The cluster of every word id.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``ids`` is not a stream of at least 2 ids >= 0, or ``n_clusters`` is out of range.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.lm import brown_clusters
    >>> ids = np.array([0, 2, 1, 3] * 10)   # words 0, 1 precede words 2, 3
    >>> clusters = brown_clusters(ids, n_clusters=2)
    >>> bool(clusters[0] == clusters[1] != clusters[2] == clusters[3])
    True
    """
    ids = np.asarray(ids, dtype=np.int64)
    if ids.ndim != 1 or len(ids) < 2 or ids.min() < 0:
        raise InvalidInputError("ids: expected a 1-D stream of at least 2 token ids >= 0")
    W = int(ids.max()) + 1 if n_words is None else int(n_words)
    if isinstance(n_clusters, bool) or not 2 <= int(n_clusters) <= W:
        raise InvalidInputError(
            f"n_clusters: expected an integer in 2 .. number of words ({W}), got {n_clusters!r}")
    C = int(n_clusters)
    a, b, cnt = _bigrams(ids, W)
    self_mask = a == b
    selfc = np.zeros(W)
    selfc[a[self_mask]] = cnt[self_mask]
    a2, b2, c2 = a[~self_mask], b[~self_mask], cnt[~self_mask]
    rptr = np.concatenate(([0], np.cumsum(np.bincount(a2, minlength=W))))  # a2 is sorted
    o = np.argsort(b2, kind="stable")
    lptr = np.concatenate(([0], np.cumsum(np.bincount(b2, minlength=W))))
    nl = np.bincount(a, weights=cnt, minlength=W)
    nr = np.bincount(b, weights=cnt, minlength=W)
    freq = np.bincount(ids, minlength=W)
    order = np.argsort(-freq, kind="stable").astype(np.int64)
    cls = np.full(W, C - 1, dtype=np.int64)
    cls[order[:C - 1]] = np.arange(C - 1)
    M = np.zeros((C, C))
    np.add.at(M, (cls[a], cls[b]), cnt)
    Nl, Nr = M.sum(axis=1), M.sum(axis=0)
    seen = order[freq[order] > 0]
    t0 = time.perf_counter()
    for it in range(max_iter):
        moved = exchange_pass(seen, cls, rptr, b2, c2, lptr, a2[o], c2[o], selfc, nl, nr,
                              M, Nl, Nr)
        if verbose:
            print(f"pass {it + 1}: {moved} words moved, AMI "
                  f"{average_mutual_information(ids, cls):.5f}, "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
        if moved < tol * len(seen):
            break
    return cls

r"""The exact CPU E-step and scoring of a blocked HMM over whole sentences (numba).

A token stream is cut into sentences after every ``<eos>`` (:class:`SentenceLayout`); the
sentences are independent (the state restarts from the start distribution), so the
scaled forward-backward of :mod:`hiddenstate.kernels.blocked` runs over each whole
sentence, in parallel by fixed chunks: exact expected counts (no truncation at batch
boundaries) for batch EM and the exact log-likelihood for perplexity. The batched torch
recursion of :mod:`.forward` is the GPU implementation of the same recursion and is
tested against this one.

Memory. The transition matrix is copied into the kernels' block layout (one ``K x K``
float64 copy) and each chunk of the E-step owns a ``K x K`` float64 transition
accumulator; the number of chunks is ``min(4, max_accumulator_bytes // (8 K^2))`` (at
least one), a function of ``K`` and the cap only, so the counts do not depend on the
thread count. With the default cap (3 GB) that is one accumulator at K = 16,512 (2.2 GB;
the E-step then runs on one thread), 4 at K = 4,128. :func:`check_memory` refuses a call
that would not fit in the available RAM. A ``work`` dict (:func:`buffer`) keeps the
``K x K`` arrays from one call to the next (EM iterations).

State dropout (:func:`dropout_counts`, Chiu & Rush 2020, sec. 3.2, applied to batch EM):
the sentences are cut into groups, each with its own mask that keeps ``k'`` of the ``k``
states of every cluster. A group's E-step runs on the dropped model (start and transition
rows renormalised over the kept states, emissions unchanged), through the same kernel on a
model of ``C k'`` states, and its counts are added at the kept states' entries. The
M-step is the ordinary one on the summed counts: it normalises the counts over all states,
which is not the exact maximiser of the dropped models' expected log-likelihood (that
would account for each mask's renormalisation), so this is a stochastic regulariser of
EM, judged on held-out perplexity, not a method with EM's monotonicity guarantee.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_memory as check_parts
from ..kernels.blocked import (
    blocked_counts,
    blocked_loglik,
    gather_kept_blocks,
    scatter_kept_blocks,
)
from ..kernels.chunks import chunk_bounds

__all__ = ["SentenceLayout", "dropout_counts", "exact_counts",
           "exact_log_likelihood"]

#: default cap on the bytes of the per-chunk ``K x K`` transition accumulators
MAX_ACCUMULATOR_BYTES = 3 * 10**9
_F64 = 8


@dataclass(frozen=True)
class SentenceLayout:
    """``x (N,)`` token ids, ``bounds (S + 1,)`` sentence offsets (a sentence ends with its
    ``<eos>``; trailing tokens without one form the last sentence), ``max_len``."""

    x: np.ndarray
    bounds: np.ndarray
    max_len: int

    @classmethod
    def from_ids(cls, ids: np.ndarray, eos_id: int) -> SentenceLayout:
        x = np.ascontiguousarray(ids, dtype=np.int64)
        ends = np.flatnonzero(x == eos_id) + 1
        bounds = np.unique(np.concatenate(([0], ends, [len(x)]))).astype(np.int64)
        return cls(x, bounds, int(np.diff(bounds).max()))

    @property
    def n_sentences(self) -> int:
        return len(self.bounds) - 1

    def chunks(self, n: int) -> np.ndarray:
        """At most ``n`` contiguous groups of sentences of similar total length."""
        return chunk_bounds(np.diff(self.bounds), n)

    def reordered(self, order: np.ndarray) -> SentenceLayout:
        """The same sentences in the order ``order`` (a permutation of ``0 .. S - 1``)."""
        lengths = np.diff(self.bounds)[order]
        bounds = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        idx = np.repeat(self.bounds[:-1][order] - bounds[:-1], lengths) + np.arange(bounds[-1])
        return SentenceLayout(self.x[idx], bounds, self.max_len)

    def part(self, s0: int, s1: int) -> SentenceLayout:
        """Sentences ``s0 .. s1 - 1`` (views; ``max_len`` kept)."""
        b0 = self.bounds[s0]
        return SentenceLayout(self.x[b0:self.bounds[s1]], self.bounds[s0:s1 + 1] - b0,
                              self.max_len)


def check_memory(needed: float, what: str) -> None:
    """Refuse (:class:`~hiddenstate.errors.InsufficientMemoryError`, before allocating) an
    exact E-step whose ``needed`` bytes exceed the available RAM: the library's one memory
    check (:func:`hiddenstate._validation.check_memory`), charged to ``n_states``."""
    check_parts({"n_states": float(needed)}, what, {
        "n_states": "use fewer states (states_per_cluster), or the torch E-step on a GPU "
                    "(device='cuda')"})


def n_accumulators(K: int, n_sentences: int, max_chunks: int = 4,
                   max_accumulator_bytes: int = MAX_ACCUMULATOR_BYTES) -> int:
    """Chunks (each with a ``K x K`` accumulator) of the E-step; see the module docstring."""
    by_memory = max(1, int(max_accumulator_bytes) // (_F64 * K * K))
    return max(1, min(max_chunks, by_memory, n_sentences))


def block_layout(word_states: np.ndarray, n_states: int) -> tuple[np.ndarray, int, bool]:
    """``(word_block (V,), n_cb, partition)`` of the kernels' block layout: for aligned
    blocks of ``k`` states (Brown) the cluster of each word and the number of clusters;
    otherwise one block (``n_cb = 1``)."""
    ws = np.asarray(word_states)
    k = ws.shape[1]
    part = n_states % k == 0 and bool(np.all(ws[:, 0] % k == 0)) \
        and bool(np.all(ws == ws[:, :1] + np.arange(k)))
    if part:
        return (ws[:, 0] // k).astype(np.int64), n_states // k, True
    return np.zeros(len(ws), dtype=np.int64), 1, False


def buffer(work: dict | None, name: str, shape: tuple) -> np.ndarray:
    """An uninitialised float64 array of ``shape``: ``work[name]`` when ``work`` (a dict
    kept across EM iterations) holds one of that shape, else a new one stored there.
    Reusing the ``K x K`` arrays saves the page faults of fresh ones (at K = 16,512 they
    were about 40% of an iteration's CPU time)."""
    a = None if work is None else work.get(name)
    if a is None or a.shape != tuple(shape):
        a = np.empty(shape)
        if work is not None:
            work[name] = a
    return a


def to_blocks(transmat: np.ndarray, k: int, partition: bool,
              out: np.ndarray | None = None) -> np.ndarray:
    """``(n_b, R, R)`` float64 blocks of ``transmat`` (a copy into ``out`` for a partition;
    see the kernels' docstring)."""
    K = transmat.shape[0]
    if not partition:
        return np.ascontiguousarray(transmat, dtype=np.float64)[None]
    C = K // k
    if out is None:
        out = np.empty((C * C, k, k))
    out.reshape(C, C, k, k)[...] = np.asarray(transmat).reshape(C, k, C, k).transpose(
        0, 2, 1, 3)
    return out


def from_blocks(blocks: np.ndarray, n_states: int, out: np.ndarray | None = None
                ) -> np.ndarray:
    """The ``K x K`` matrix of a block layout (inverse of :func:`to_blocks`)."""
    nb, k, _ = blocks.shape
    if nb == 1:
        return blocks[0]
    C = n_states // k
    if out is None:
        out = np.empty((n_states, n_states))
    out.reshape(C, k, C, k)[...] = blocks.reshape(C, C, k, k).transpose(0, 2, 1, 3)
    return out


def _arguments(word_states, startprob, transmat, emit, work):
    ws = np.ascontiguousarray(word_states, dtype=np.int64)
    K, k = len(startprob), ws.shape[1]
    word_block, n_cb, part = block_layout(ws, K)
    out = buffer(work, "blocks", ((K // k) ** 2, k, k)) if part else None
    return (ws, word_block, n_cb, np.ascontiguousarray(startprob, dtype=np.float64),
            to_blocks(transmat, k, part, out), np.ascontiguousarray(emit, dtype=np.float64))


def exact_counts(layout: SentenceLayout, word_states: np.ndarray, startprob: np.ndarray,
                 transmat: np.ndarray, emit: np.ndarray,
                 max_accumulator_bytes: int = MAX_ACCUMULATOR_BYTES, work: dict | None = None
                 ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """``(log p(X), start (K,), trans (K, K), emit (V, k))``: the expected counts of the
    stream, summed over its sentences (:func:`~hiddenstate.kernels.blocked.blocked_counts`;
    probabilities, not logs; the chunk accumulators summed in chunk order). With ``work``
    (see :func:`buffer`) the ``K x K`` arrays, the returned ``trans`` included, live in it
    and are overwritten by the next call."""
    K, (V, k) = len(startprob), np.shape(word_states)
    n = n_accumulators(K, layout.n_sentences, max_accumulator_bytes=max_accumulator_bytes)
    check_memory(_F64 * K * K * (n + 2) + _F64 * (V * k + K) * n,
                 f"the exact E-step at K = {K} (the transition matrix, its block copy and "
                 f"{n} accumulators)")
    args = _arguments(word_states, startprob, transmat, emit, work)
    blocks = args[4]
    chunks = layout.chunks(n)
    n = len(chunks) - 1
    start_acc = np.zeros((n, K))
    trans_acc = buffer(work, "trans_acc", (n, *blocks.shape))
    trans_acc.fill(0.0)
    emit_acc = np.zeros((n, V, k))
    loglik = np.empty(layout.n_sentences)
    blocked_counts(layout.x, layout.bounds, chunks, *args, layout.max_len, start_acc,
                   trans_acc, emit_acc, loglik)
    del args, blocks
    for c in range(1, n):  # fixed order, in place (no second K x K temporary)
        start_acc[0] += start_acc[c]
        trans_acc[0] += trans_acc[c]
        emit_acc[0] += emit_acc[c]
    out = buffer(work, "trans", (K, K)) if trans_acc.shape[1] > 1 else None
    trans = from_blocks(trans_acc[0], K, out)
    return float(loglik.sum()), start_acc[0], trans, emit_acc[0]


def exact_log_likelihood(layout: SentenceLayout, word_states: np.ndarray,
                         startprob: np.ndarray, transmat: np.ndarray, emit: np.ndarray,
                         work: dict | None = None) -> np.ndarray:
    """``log p`` of every sentence ``(S,)``
    (:func:`~hiddenstate.kernels.blocked.blocked_loglik`; ``work``: see :func:`buffer`)."""
    loglik = np.empty(layout.n_sentences)
    blocked_loglik(layout.x, layout.bounds, layout.chunks(32),
                   *_arguments(word_states, startprob, transmat, emit, work), loglik)
    return loglik


def dropout_counts(layout: SentenceLayout, word_cluster: np.ndarray, k: int,
                   startprob: np.ndarray, transmat: np.ndarray, emit: np.ndarray,
                   keeps: np.ndarray, max_accumulator_bytes: int = MAX_ACCUMULATOR_BYTES,
                   work: dict | None = None
                   ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`exact_counts` with state dropout (see the module docstring): the sentences of
    ``layout`` (shuffle them first with :meth:`SentenceLayout.reordered`) are cut into
    ``G = len(keeps)`` contiguous groups of similar token count and group ``g`` runs on the
    model that keeps, in cluster ``c``, the states ``c k + keeps[g, c]`` (``keeps (G, C, k')``,
    sorted rows). ``word_cluster (V,)``: Brown clusters of ``k`` states each (dense: one
    cluster). Returns ``(sum of the dropped models' log p, start (K,), trans (K, K),
    emit (V, k))``; the dropped states' entries get no counts from a group."""
    keeps = np.ascontiguousarray(keeps, dtype=np.int64)
    G, C, kp = keeps.shape
    K, V = C * k, len(word_cluster)
    Kp = C * kp
    n = n_accumulators(Kp, layout.n_sentences, max_accumulator_bytes=max_accumulator_bytes)
    check_memory(_F64 * (3 * K * K + (n + 1) * Kp * Kp) + _F64 * (V * kp + Kp) * n,
                 f"the exact E-step with state dropout at K = {K} (the transition matrix, its "
                 f"block copy, the counts and {n} accumulators of {Kp} kept states)")
    wc = np.ascontiguousarray(word_cluster, dtype=np.int64)
    blocks = to_blocks(transmat, k, True, buffer(work, "blocks", (C * C, k, k)))
    full = buffer(work, "trans_full", (C * C, k, k))
    full.fill(0.0)
    kept_blocks = buffer(work, "kept_blocks", (C * C, kp, kp))
    acc = buffer(work, "kept_acc", (n, C * C, kp, kp))
    acc.fill(0.0)
    start = np.zeros(K)
    emit_counts = np.zeros((V, k))
    kept_states = wc[:, None] * kp + np.arange(kp)
    rows = np.arange(V)[:, None]
    startprob = np.asarray(startprob, dtype=np.float64)
    emit = np.asarray(emit, dtype=np.float64)
    loglik = np.empty(layout.n_sentences)
    groups = layout.chunks(G)
    for g in range(len(groups) - 1):
        keep = keeps[g]
        gather_kept_blocks(blocks, keep, kept_blocks)
        kept = (np.arange(C)[:, None] * k + keep).ravel()
        kept_start = startprob[kept] / startprob[kept].sum()
        cols = keep[wc]
        part = layout.part(groups[g], groups[g + 1])
        chunks = part.chunks(n)
        nc = len(chunks) - 1
        start_acc = np.zeros((nc, Kp))
        emit_acc = np.zeros((nc, V, kp))
        blocked_counts(part.x, part.bounds, chunks, kept_states, wc, C, kept_start,
                       kept_blocks, np.ascontiguousarray(emit[rows, cols]), part.max_len,
                       start_acc, acc[:nc], emit_acc, loglik[groups[g]:groups[g + 1]])
        scatter_kept_blocks(acc[:nc], keep, full)
        for c in range(nc):  # fixed order
            start[kept] += start_acc[c]
            emit_counts[rows, cols] += emit_acc[c]
    del blocks
    # the block copy is free now: the K x K counts go into its buffer
    out = None if work is None else work["blocks"].reshape(K, K)
    return float(loglik.sum()), start, from_blocks(full, K, out), emit_counts

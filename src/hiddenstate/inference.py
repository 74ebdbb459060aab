"""Inference as pure functions of parameters and data (the layer right above ``kernels``).

Prepares the sequence layout once (:class:`Sequences`), calls the numba kernels and reduces
their per-chunk outputs in a fixed order. No validation happens here: estimators validate at
their public boundary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import kernels


@dataclass(frozen=True)
class Sequences:
    """Layout of concatenated sequences: offsets, parallel chunks and the longest length."""

    lengths: np.ndarray
    bounds: np.ndarray
    chunks: np.ndarray
    max_len: int

    @classmethod
    def from_lengths(cls, lengths: np.ndarray) -> Sequences:
        lengths = np.asarray(lengths, dtype=np.int64)
        bounds = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=bounds[1:])
        return cls(lengths, bounds, kernels.chunk_bounds(lengths), int(lengths.max()))

    @property
    def n_samples(self) -> int:
        return int(self.bounds[-1])

    @property
    def n_chunks(self) -> int:
        return len(self.chunks) - 1

    def per_sequence_sum(self, values: np.ndarray) -> np.ndarray:
        """Sum of a per-row array within each sequence."""
        return np.add.reduceat(values, self.bounds[:-1]) if len(values) else values


@dataclass(frozen=True)
class EmissionTable:
    """Emission probabilities in the kernels' ``(emis, idx)`` form.

    Row ``t`` of the data has emission probabilities ``emis[idx[t]] * exp(log_offset[t])``;
    ``log_offset`` is ``None`` when the table is unscaled (categorical emissions).
    ``by_idx`` says that rows of ``emis`` are shared by many observations (posteriors are
    then accumulated per row of ``emis`` rather than stored per observation).
    """

    emis: np.ndarray
    idx: np.ndarray
    log_offset: np.ndarray | None
    by_idx: bool

    @classmethod
    def from_log_likelihood(cls, log_frame: np.ndarray) -> EmissionTable:
        """Scale a dense ``(N, K)`` log-likelihood table row by row so its max is 1."""
        shift = log_frame.max(axis=1)
        # a row of all -inf has probability zero in every state: keep it zero
        safe = np.where(np.isfinite(shift), shift, 0.0)
        emis = np.exp(log_frame - safe[:, None])
        offset = np.where(np.isfinite(shift), shift, -np.inf)
        return cls(emis, np.arange(len(log_frame), dtype=np.int64), offset, False)

    @classmethod
    def from_symbols(cls, emissionprob: np.ndarray, symbols: np.ndarray) -> EmissionTable:
        """Categorical emissions: ``emissionprob`` is ``(K, W)``; no per-row table is built."""
        return cls(np.ascontiguousarray(emissionprob.T), symbols, None, True)

    def log_emis(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self.emis)

    def offset_per_sequence(self, seqs: Sequences) -> np.ndarray:
        if self.log_offset is None:
            return np.zeros(len(seqs.lengths))
        return seqs.per_sequence_sum(self.log_offset)


@dataclass
class Posteriors:
    """Output of the E-step: per-sequence log-likelihoods and sufficient statistics."""

    loglik: np.ndarray  # (S,)
    start: np.ndarray  # (K,) expected initial-state counts
    trans: np.ndarray  # (K, K) expected transition counts
    post: np.ndarray  # (M, K) summed by emission row if by_idx, else (N, K) per observation


def forward_backward(startprob, transmat, table: EmissionTable, seqs: Sequences) -> Posteriors:
    """Expected counts and state posteriors (scaled forward-backward, fused statistics)."""
    K = len(startprob)
    C = seqs.n_chunks
    if table.by_idx:
        post_acc = np.zeros((C, table.emis.shape[0], K))
        post_dense = np.empty((0, K))
    else:
        post_acc = np.empty((C, 0, K))
        post_dense = np.empty((seqs.n_samples, K))
    start_acc = np.zeros((C, K))
    trans_acc = np.zeros((C, K, K))
    loglik = np.empty(len(seqs.lengths))
    kernels.forward_backward(
        startprob, transmat, np.ascontiguousarray(transmat.T), table.emis, table.idx,
        seqs.bounds, seqs.chunks, seqs.max_len, table.by_idx, post_acc, post_dense,
        start_acc, trans_acc, loglik,
    )
    # fixed-order reductions: identical for any thread count
    trans = trans_acc[0].copy()
    start = start_acc[0].copy()
    for c in range(1, C):
        trans += trans_acc[c]
        start += start_acc[c]
    trans *= transmat
    if table.by_idx:
        post = post_acc[0].copy()
        for c in range(1, C):
            post += post_acc[c]
    else:
        post = post_dense
        impossible = ~np.isfinite(loglik)
        if impossible.any():
            for s in np.flatnonzero(impossible):
                post[seqs.bounds[s]:seqs.bounds[s + 1]] = 0.0
    return Posteriors(loglik + table.offset_per_sequence(seqs), start, trans, post)


def log_likelihood(startprob, transmat, table: EmissionTable, seqs: Sequences) -> np.ndarray:
    """Per-sequence log p(x) by the forward pass alone."""
    loglik = np.empty(len(seqs.lengths))
    kernels.forward_loglik(startprob, transmat, table.emis, table.idx, seqs.bounds,
                           seqs.chunks, loglik)
    return loglik + table.offset_per_sequence(seqs)


def viterbi(startprob, transmat, table: EmissionTable, seqs: Sequences):
    """Most probable state path of each sequence: returns (per-sequence log p(x, z*), states)."""
    K = len(startprob)
    bp_dtype = np.uint8 if K <= 256 else (np.uint16 if K <= 65536 else np.uint32)
    backptr = np.empty((seqs.n_samples, K), dtype=bp_dtype)
    logprob = np.empty(len(seqs.lengths))
    states = np.empty(seqs.n_samples, dtype=np.int64)
    with np.errstate(divide="ignore"):
        kernels.viterbi(np.log(startprob), np.log(transmat), table.log_emis(), table.idx,
                        seqs.bounds, seqs.chunks, backptr, logprob, states)
    return logprob + table.offset_per_sequence(seqs), states


def sample_posterior(startprob, transmat, table: EmissionTable, seqs: Sequences,
                     rng: np.random.Generator) -> np.ndarray:
    """One draw of the hidden path of every sequence from p(z | x) (FFBS)."""
    uniforms = rng.random(seqs.n_samples)
    states = np.empty(seqs.n_samples, dtype=np.int64)
    kernels.sample_posterior_paths(startprob, transmat, table.emis, table.idx, seqs.bounds,
                                   seqs.chunks, seqs.max_len, uniforms, states)
    return states


def sample_chain(startprob, transmat, n: int, rng: np.random.Generator) -> np.ndarray:
    """A path of ``n`` states of the Markov chain."""
    states = np.empty(n, dtype=np.int64)
    kernels.sample_states(startprob, transmat, rng.random(n), states)
    return states

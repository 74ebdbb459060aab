r"""Inference in explicit-duration hidden semi-Markov models: pure functions of parameters and
data over many sequences (the layer of :mod:`hiddenstate.inference`, whose emission tables,
sequence layouts and chunked parallel calls it shares).

The model: a segment of state :math:`j` starts with :math:`\pi_j` (first segment) or
:math:`A_{ij}` (after a segment of :math:`i \ne j`; the diagonal of :math:`A` is zero), lasts
:math:`d` steps with probability :math:`f_j(d)` and emits :math:`x_t \sim p(\cdot \mid j)` at
each of them. The last segment of a sequence is right-censored: the sequence may end inside
it, which contributes :math:`S_j(d) = P(\text{duration} \ge d)` instead of :math:`f_j(d)`.
Only segmentations whose segments last at most ``max_duration`` steps are counted (for a
distribution with mass beyond ``max_duration``, a truncation; none when every sequence is
that short).

Every function runs the one segment recursion of :mod:`hiddenstate.kernels.semimarkov`
(the semiring is its argument) on a :class:`SegmentChain`: the likelihood and the filter,
posteriors with the expected counts of EM, the k best segmentations, posterior samples.
Memory: ``memory_estimate`` (no array grows as T K D). Phase-type durations (negative
binomial, geometric) can also run as an ordinary HMM over their phases
(:func:`expand_phases`), with :mod:`hiddenstate.inference`'s kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import threads
from .inference import EmissionTable, Sequences
from .kernels import semimarkov as sm

PAD = sm.PAD
#: bytes of forward state a backward pass keeps per running sequence: a sequence whose every
#: step fits is never recomputed (benchmarks/bench_hsmm.py: recomputing blocks of 32 steps
#: cost 1.7x the E-step of keeping 1000)
_BLOCK_BYTES = 32 * 2**20


def _f64(a) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.float64)
    return a if a.flags.writeable else a.copy()


def _padded(values: np.ndarray, W: int) -> np.ndarray:
    out = np.zeros((values.shape[0], W))
    out[:, PAD:PAD + values.shape[1]] = values
    return out


@dataclass(frozen=True)
class SegmentChain:
    r"""The parameters of a hidden semi-Markov chain in the kernels' form.

    Parameters
    ----------
    startprob : ndarray of shape (K,)
        :math:`\pi`.
    transmat : ndarray of shape (K, K)
        :math:`A`, zero diagonal.
    rho : ndarray of shape (K, W)
        The continuation factors, padded (see :mod:`hiddenstate.kernels.semimarkov`).
    haz : ndarray of shape (K, W)
        The hazards, padded.
    max_duration : int
        D.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.segments import SegmentChain
    >>> pmf = np.array([[0.5, 0.5], [1.0, 0.0]])
    >>> surv = np.array([[1.0, 0.5], [1.0, 0.0]])
    >>> chain = SegmentChain.from_pmf([1.0, 0.0], [[0, 1.0], [1.0, 0]], pmf, surv)
    >>> chain.max_duration, chain.rho.shape
    (2, (2, 24))
    """

    startprob: np.ndarray
    transmat: np.ndarray
    rho: np.ndarray
    haz: np.ndarray
    max_duration: int

    @classmethod
    def from_factors(cls, startprob, transmat, continuation: np.ndarray,
                     hazard: np.ndarray) -> SegmentChain:
        r"""Build the chain from the factors of each age.

        Parameters
        ----------
        startprob : array-like of shape (K,)
            :math:`\pi`.
        transmat : array-like of shape (K, K)
            :math:`A`, zero diagonal.
        continuation : ndarray of shape (K, D)
            :math:`\rho(1) = S(1)`, :math:`\rho(d) = S(d)/S(d-1)`.
        hazard : ndarray of shape (K, D)
            :math:`h(d) = f(d)/S(d)`.

        Returns
        -------
        SegmentChain
            The chain.
        """
        D = continuation.shape[1]
        W = -(-D // sm.LANES) * sm.LANES + 2 * PAD
        return cls(_f64(startprob), _f64(transmat), _padded(continuation, W),
                   _padded(hazard, W), int(D))

    @classmethod
    def from_pmf(cls, startprob, transmat, pmf: np.ndarray,
                 survival: np.ndarray) -> SegmentChain:
        r"""Build the chain from the duration pmf and survival function on 1..D.

        Parameters
        ----------
        startprob : array-like of shape (K,)
            :math:`\pi`.
        transmat : array-like of shape (K, K)
            :math:`A`, zero diagonal.
        pmf : ndarray of shape (K, D)
            :math:`f(d)`.
        survival : ndarray of shape (K, D)
            :math:`S(d) = P(\text{duration} \ge d)`.

        Returns
        -------
        SegmentChain
            The chain.
        """
        S = np.asarray(survival, dtype=np.float64)
        f = np.asarray(pmf, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = np.empty_like(S)
            rho[:, 0] = S[:, 0]
            prev = S[:, :-1]
            rho[:, 1:] = np.where(prev > 0, S[:, 1:] / np.where(prev > 0, prev, 1.0), 0.0)
            haz = np.where(S > 0, f / np.where(S > 0, S, 1.0), 0.0)
        return cls.from_factors(startprob, transmat, rho, np.minimum(haz, 1.0))

    def limited(self, max_len: int) -> SegmentChain:
        """The same chain for sequences of at most ``max_len`` steps (ages beyond cannot occur).

        Parameters
        ----------
        max_len : int
            The longest sequence.

        Returns
        -------
        SegmentChain
            ``self``, or a chain with ``max_duration = max_len``.
        """
        if max_len >= self.max_duration:
            return self
        D = int(max_len)
        W = -(-D // sm.LANES) * sm.LANES + 2 * PAD
        return SegmentChain(self.startprob, self.transmat, _f64(self.rho[:, :W]),
                            _f64(np.where(np.arange(W) < PAD + D, self.haz[:, :W], 0.0)), D)

    @property
    def n_states(self) -> int:
        """K."""
        return len(self.startprob)

    @property
    def width(self) -> int:
        """W, the columns of a state's register."""
        return self.rho.shape[1]


@dataclass
class SegmentPosteriors:
    """The E-step of a hidden semi-Markov model.

    Parameters
    ----------
    loglik : ndarray of shape (n_sequences,)
        log p(x) of each sequence.
    start : ndarray of shape (K,)
        The expected first states.
    trans : ndarray of shape (K, K)
        The expected transitions between segments.
    post : ndarray of shape (N, K)
        The state posteriors of every row.
    complete : ndarray of shape (K, D)
        The expected complete segments of each duration 1..D.
    censored : ndarray of shape (K, D)
        The expected last (right-censored) segments by observed length.
    starts : ndarray of shape (N, K) or None
        P(a segment of k starts at t | x), when asked for.
    """

    loglik: np.ndarray
    start: np.ndarray
    trans: np.ndarray
    post: np.ndarray
    complete: np.ndarray
    censored: np.ndarray
    starts: np.ndarray | None = None


def block_length(K: int, D: int, max_len: int) -> int:
    """Steps per block of the backward passes: the whole sequence when its forward state
    fits in ``_BLOCK_BYTES``, else at least sqrt(T) steps (the checkpoints, one per block,
    then take no more room than a block).

    Parameters
    ----------
    K : int
        The number of states.
    D : int
        The longest duration.
    max_len : int
        The longest sequence.

    Returns
    -------
    int
        The block length.
    """
    W = -(-D // sm.LANES) * sm.LANES + 2 * PAD
    fits = max(1, _BLOCK_BYTES // (K * W * 8))
    return int(max(1, min(max_len, max(fits, int(np.ceil(np.sqrt(max_len)))))))


def _limited(chain: SegmentChain, seqs: Sequences) -> SegmentChain:
    return chain.limited(seqs.max_len)


def _offsets(table: EmissionTable, seqs: Sequences) -> np.ndarray:
    return table.offset_per_sequence(seqs)


def _forward(chain: SegmentChain, table: EmissionTable, seqs: Sequences,
             filtered: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The forward pass of :func:`~.kernels.semimarkov.segment_loglik`: the scale of every
    row and log p(x) of each sequence (the table's offsets aside); with ``filtered`` (N, K),
    also the filtered posteriors into it."""
    chain = _limited(chain, seqs)
    scale = np.empty(seqs.n_samples)
    loglik = np.empty(len(seqs.lengths))
    keep = filtered is not None
    sm.segment_loglik(chain.startprob, chain.transmat, chain.rho, chain.haz,
                      chain.max_duration, _f64(table.emis), table.idx, seqs.bounds,
                      seqs.chunks, scale, filtered if keep else np.empty((1, 1)), keep, loglik)
    return scale, loglik


def log_likelihood(chain: SegmentChain, table: EmissionTable, seqs: Sequences) -> np.ndarray:
    """Compute log p(x) of each sequence (the forward pass in the sum-product semiring).

    Parameters
    ----------
    chain : SegmentChain
        The parameters.
    table : hiddenstate.inference.EmissionTable
        The emission probabilities of the data.
    seqs : hiddenstate.inference.Sequences
        The layout of the data.

    Returns
    -------
    ndarray of shape (n_sequences,)
        The log-likelihoods (``-inf``: probability zero).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference, segments
    >>> pmf = np.array([[0.5, 0.5], [0.5, 0.5]])
    >>> surv = np.array([[1.0, 0.5], [1.0, 0.5]])
    >>> chain = segments.SegmentChain.from_pmf([0.5, 0.5], [[0, 1.0], [1.0, 0]], pmf, surv)
    >>> table = inference.EmissionTable.from_symbols(np.array([[0.9, 0.1], [0.2, 0.8]]),
    ...                                             np.array([0, 0, 1]))
    >>> segments.log_likelihood(chain, table, inference.Sequences.from_lengths([3])).round(4)
    array([-1.5921])
    """
    return _forward(chain, table, seqs)[1] + _offsets(table, seqs)


def filter_states(chain: SegmentChain, table: EmissionTable,
                  seqs: Sequences) -> tuple[np.ndarray, np.ndarray]:
    r"""Compute the filtered state posteriors and the predictive log-probabilities.

    :math:`p(z_t \mid x_{0:t})` (the segment of :math:`z_t` may go on) and
    :math:`\log p(x_t \mid x_{0:t-1})` (a sequence's entries sum to its log-likelihood).

    Parameters
    ----------
    chain : SegmentChain
        The parameters.
    table : hiddenstate.inference.EmissionTable
        The emission probabilities of the data.
    seqs : hiddenstate.inference.Sequences
        The layout of the data.

    Returns
    -------
    filtered : ndarray of shape (N, K)
        The filtered posteriors (rows of 0 from an impossible observation on).
    log_pred : ndarray of shape (N,)
        The predictive log-probabilities (``-inf`` from an impossible observation on).
    """
    filtered = np.zeros((seqs.n_samples, chain.n_states))
    scale = _forward(chain, table, seqs, filtered)[0]
    with np.errstate(divide="ignore"):
        log_pred = np.log(scale)
    if table.log_offset is not None:
        log_pred += table.log_offset
    return filtered, log_pred


def posteriors(chain: SegmentChain, table: EmissionTable, seqs: Sequences,
               starts: bool = False) -> SegmentPosteriors:
    """Compute the posteriors and expected counts (forward-backward over segments).

    Parameters
    ----------
    chain : SegmentChain
        The parameters.
    table : hiddenstate.inference.EmissionTable
        The emission probabilities of the data.
    seqs : hiddenstate.inference.Sequences
        The layout of the data.
    starts : bool, default=False
        Also the posteriors of segment starts.

    Returns
    -------
    SegmentPosteriors
        The log-likelihoods and statistics (an impossible sequence adds nothing; its rows of
        ``post`` are 0).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference, segments
    >>> pmf = np.array([[0.5, 0.5], [0.5, 0.5]])
    >>> surv = np.array([[1.0, 0.5], [1.0, 0.5]])
    >>> chain = segments.SegmentChain.from_pmf([0.5, 0.5], [[0, 1.0], [1.0, 0]], pmf, surv)
    >>> table = inference.EmissionTable.from_symbols(np.array([[0.9, 0.1], [0.2, 0.8]]),
    ...                                             np.array([0, 0, 1]))
    >>> out = segments.posteriors(chain, table, inference.Sequences.from_lengths([3]))
    >>> out.post.sum(axis=1), float(out.complete.sum() + out.censored.sum()) > 1
    (array([1., 1., 1.]), True)
    """
    full_D = chain.max_duration
    chain = _limited(chain, seqs)
    N, S, K, W = seqs.n_samples, len(seqs.lengths), chain.n_states, chain.width
    D = chain.max_duration
    B = block_length(K, D, seqs.max_len)
    n_blocks_max = -(-seqs.max_len // B)
    C = seqs.n_chunks
    scale = np.empty(N)
    loglik = np.empty(S)
    post = np.empty((N, K))
    seg_starts = np.empty((N, K)) if starts else np.empty((1, 1))
    start_acc = np.zeros((C, K))
    trans_acc = np.zeros((C, K, K))
    complete_acc = np.zeros((C, K, W))
    censored_acc = np.zeros((C, K, W))
    sm.segment_posteriors(chain.startprob, chain.transmat, chain.rho, chain.haz, D,
                          _f64(table.emis),
                    table.idx, seqs.bounds, seqs.chunks, B, n_blocks_max, scale, loglik, post,
                    seg_starts, starts, start_acc, trans_acc, complete_acc, censored_acc)

    def reduce(acc):  # chunk 0, 1, 2, ... in that order: the same numbers on any thread count
        out = np.zeros(acc.shape[1:])
        for c in range(C):
            out += acc[c]
        return out

    complete = np.zeros((K, full_D))
    censored = np.zeros((K, full_D))
    complete[:, :D] = reduce(complete_acc)[:, PAD:PAD + D]
    censored[:, :D] = reduce(censored_acc)[:, PAD:PAD + D]
    return SegmentPosteriors(loglik + _offsets(table, seqs), reduce(start_acc),
                             reduce(trans_acc), post, complete, censored,
                             seg_starts if starts else None)


def best_paths(chain: SegmentChain, table: EmissionTable, seqs: Sequences,
               k: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Find the ``k`` best segmentations of each sequence (max-product; ``k = 1``: Viterbi).

    Parameters
    ----------
    chain : SegmentChain
        The parameters.
    table : hiddenstate.inference.EmissionTable
        The emission probabilities of the data.
    seqs : hiddenstate.inference.Sequences
        The layout of the data.
    k : int, default=1
        The number of segmentations.

    Returns
    -------
    logprob : ndarray of shape (n_sequences, k)
        log p(x, z_r), best first (``-inf`` where a sequence has fewer than ``k``).
    paths : ndarray of int64 of shape (k, N)
        The state of every row on each path (-1 where the path does not exist).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference, segments
    >>> pmf = np.array([[0.5, 0.5], [0.5, 0.5]])
    >>> surv = np.array([[1.0, 0.5], [1.0, 0.5]])
    >>> chain = segments.SegmentChain.from_pmf([0.5, 0.5], [[0, 1.0], [1.0, 0]], pmf, surv)
    >>> table = inference.EmissionTable.from_symbols(np.array([[0.9, 0.1], [0.2, 0.8]]),
    ...                                             np.array([0, 0, 1]))
    >>> logprob, paths = segments.best_paths(chain, table, inference.Sequences.from_lengths([3]))
    >>> paths
    array([[0, 0, 1]])
    """
    chain = _limited(chain, seqs)
    N, S, K = seqs.n_samples, len(seqs.lengths), chain.n_states
    bp_start = np.empty((N, K, k), dtype=np.int32)
    bp_end = np.empty((N, K, k), dtype=np.int32)
    logprob = np.empty((S, k))
    paths = np.empty((k, N), dtype=np.int64)
    sm.segment_best(chain.startprob,
                    chain.transmat, chain.rho, chain.haz, chain.max_duration, k,
                    _f64(table.emis), table.idx, seqs.bounds, seqs.chunks, bp_start, bp_end,
                    logprob, paths)
    return logprob + _offsets(table, seqs)[:, None], paths


def sample_posterior(chain: SegmentChain, table: EmissionTable, seqs: Sequences,
                     rng: np.random.Generator) -> np.ndarray:
    """Draw one segmentation of each sequence from p(z | x) (forward filtering, backward sampling).

    What a Gibbs sweep over the states of a hidden semi-Markov model draws: the kernel takes
    one uniform per row (the draw of the segment that ends there), so the draw does not
    depend on the thread count.

    Parameters
    ----------
    chain : SegmentChain
        The parameters.
    table : hiddenstate.inference.EmissionTable
        The emission probabilities of the data.
    seqs : hiddenstate.inference.Sequences
        The layout of the data.
    rng : numpy.random.Generator
        The random generator.

    Returns
    -------
    ndarray of int64 of shape (N,)
        The states (-1 throughout a sequence of probability zero).
    """
    chain = _limited(chain, seqs)
    N, K = seqs.n_samples, chain.n_states
    D = chain.max_duration
    B = block_length(K, D, seqs.max_len)
    uniforms = rng.random(N)
    states = np.empty(N, dtype=np.int64)
    sm.segment_sample(chain.startprob,
                    chain.transmat, chain.rho, chain.haz, D, _f64(table.emis), table.idx,
                    seqs.bounds, seqs.chunks, B, -(-seqs.max_len // B), np.empty(N), uniforms,
                    states)
    return states


def _running(n_chunks: int) -> int:
    return max(1, min(n_chunks, threads.get_num_threads()))


def memory_estimate(op: str, K: int, D: int, seqs: Sequences, k: int = 1) -> dict[str, float]:
    """Estimate the bytes an inference function of this module allocates (the table aside).

    Per running chunk: two registers of ``K k W`` numbers (``W`` = D rounded up to 8, plus
    16); a backward pass also a block of ``B`` registers, one checkpoint per block of the
    longest sequence and two backward registers (:func:`block_length`: ``B`` >= sqrt(T)),
    and per chunk its accumulators; per row: the scale, and the posteriors (``K``), the
    filter (``K``) or the back-pointers (``2 K k`` int32). Nothing grows as T K D: at
    T = 1e6, K = 10, D = 500 the backward state is (1000 + 1000 + 4) registers of 41.6 kB.

    Parameters
    ----------
    op : {"log_likelihood", "filter", "posteriors", "best", "sample_posterior"}
        The function.
    K : int
        The number of states.
    D : int
        The longest duration.
    seqs : hiddenstate.inference.Sequences
        The layout of the data.
    k : int, default=1
        The number of paths (``"best"``).

    Returns
    -------
    dict of str to float
        ``{"n_states": bytes, "X": bytes}``: the share that grows with K and D, and the one
        that grows with the data.

    Examples
    --------
    >>> from hiddenstate.inference import Sequences
    >>> from hiddenstate.segments import memory_estimate
    >>> parts = memory_estimate("posteriors", 10, 500, Sequences.from_lengths([10**6]))
    >>> round(sum(parts.values()) / 2**20)   # MiB
    164
    """
    D = min(D, seqs.max_len)
    W = -(-D // sm.LANES) * sm.LANES + 2 * PAD
    N = seqs.n_samples
    reg = 8.0 * K * W
    P = _running(seqs.n_chunks)
    states, rows = P * (2 * k * reg + 8.0 * K * (6 + 2 * k)), 8.0 * N
    if op in ("posteriors", "sample_posterior"):
        B = block_length(K, D, seqs.max_len)
        nb = -(-seqs.max_len // B)
        states += P * (B + nb + 2) * reg + P * 8.0 * K * nb
        if op == "posteriors":
            states += seqs.n_chunks * (2 * reg + 8.0 * (K + K * K)) + 2 * reg
            rows += 8.0 * N * K
        else:
            rows += 16.0 * N
    elif op == "filter":
        rows += 8.0 * N * K
    elif op == "best":
        rows += 8.0 * N * K * k + 8.0 * N * k + 8.0 * len(seqs.lengths) * k
    elif op != "log_likelihood":
        raise ValueError(f"op: unknown inference function {op!r}")
    return {"n_states": states, "X": rows}


# -- phase-type durations as an HMM over their phases -----------------------------------------
@dataclass(frozen=True)
class PhaseChain:
    """A hidden semi-Markov chain with negative-binomial (or geometric) durations as an HMM
    over the phases of its segments.

    Parameters
    ----------
    startprob : ndarray of shape (M,)
        The initial distribution over phases.
    transmat : ndarray of shape (M, M)
        The transitions between phases.
    owner : ndarray of int64 of shape (M,)
        The state of each phase.
    first : ndarray of int64 of shape (K,)
        The first phase of each state.
    """

    startprob: np.ndarray
    transmat: np.ndarray
    owner: np.ndarray
    first: np.ndarray

    def table(self, table: EmissionTable) -> EmissionTable:
        """The emission table of the phases (each phase emits as its state).

        Parameters
        ----------
        table : hiddenstate.inference.EmissionTable
            The states' table.

        Returns
        -------
        hiddenstate.inference.EmissionTable
            The phases' table.
        """
        counts = np.diff(np.append(self.first, len(self.owner)))
        return EmissionTable(np.repeat(table.emis, counts, axis=1), table.idx,
                             table.log_offset, table.by_idx)

    def states(self, phase_values: np.ndarray) -> np.ndarray:
        """Sum columns of phases into their states.

        Parameters
        ----------
        phase_values : ndarray of shape (n, M)
            Values per phase.

        Returns
        -------
        ndarray of shape (n, K)
            Values per state.
        """
        return np.add.reduceat(phase_values, self.first, axis=1)  # a state's phases: a run


def expand_phases(startprob, transmat, shapes, probs) -> PhaseChain:
    r"""Write a chain of negative-binomial durations as an HMM over phases (exact).

    :math:`d - 1 \sim \mathrm{NB}(r, p)` is the number of failures before the r-th success of
    Bernoulli(p) trials: a segment in phase :math:`c` (successes so far) goes on one more
    step in phase :math:`c' \ge c` with probability :math:`p^{c' - c}(1 - p)`, or ends with
    :math:`p^{r - c}` and starts phase 0 of the next state :math:`j` with :math:`A_{ij}`.
    Every sequence length is exact (no ``max_duration``); r = 1 is an ordinary HMM with
    self-transitions :math:`1 - p`.

    Parameters
    ----------
    startprob : array-like of shape (K,)
        :math:`\pi`.
    transmat : array-like of shape (K, K)
        :math:`A`, zero diagonal.
    shapes : array-like of int of shape (K,)
        r of each state.
    probs : array-like of shape (K,)
        p of each state.

    Returns
    -------
    PhaseChain
        The phases' HMM.

    Examples
    --------
    >>> from hiddenstate.segments import expand_phases
    >>> phases = expand_phases([1.0, 0.0], [[0, 1.0], [1.0, 0]], [2, 1], [0.5, 0.25])
    >>> phases.transmat
    array([[0.5 , 0.25, 0.25],
           [0.  , 0.5 , 0.5 ],
           [0.25, 0.  , 0.75]])
    >>> phases.owner, phases.first
    (array([0, 0, 1]), array([0, 2]))
    """
    pi = np.asarray(startprob, dtype=np.float64)
    A = np.asarray(transmat, dtype=np.float64)
    r = np.asarray(shapes, dtype=np.int64)
    p = np.asarray(probs, dtype=np.float64)
    K = len(pi)
    first = np.concatenate(([0], np.cumsum(r)[:-1])).astype(np.int64)
    M = int(r.sum())
    owner = np.repeat(np.arange(K, dtype=np.int64), r)
    start = np.zeros(M)
    start[first] = pi
    T = np.zeros((M, M))
    for k in range(K):
        for c in range(r[k]):
            row = first[k] + c
            gap = np.arange(r[k] - c)
            T[row, row:first[k] + r[k]] = p[k] ** gap * (1.0 - p[k])
            T[row, first] += p[k] ** (r[k] - c) * A[k]
    return PhaseChain(start, T, owner, first)

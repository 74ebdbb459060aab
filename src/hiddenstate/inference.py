"""Inference as pure functions of parameters and data (the layer right above ``kernels``).

Prepares the sequence layout once (:class:`Sequences`, with its lane plans), calls the numba
kernels and reduces their per-chunk outputs in a fixed order. No validation happens here:
estimators validate at their public boundary.

**Long sequences.** A sequence longer than ``_SEGMENT`` rows is split into equal segments
that run as independent lanes (in parallel and in lockstep). Segment ``m > 0`` starts
``_WARMUP`` rows early from a flat prior; the filter (or the max-normalised Viterbi scores)
forgets where it started, and the result of segment ``m`` is kept only if its state at the
end of the warm-up agrees with the state at the end of segment ``m - 1``: to a relative
``_FILTER_RTOL`` in every state for the forward filter (the log-likelihood then matches the
serial recursion to about that relative accuracy), bit for bit for Viterbi (the path and the
per-step scores are then exactly those of the serial recursion). Otherwise the segment is
run again, serially, from that exact state. Forward-backward does the same for the backward
recursion, from the end of the sequence (``_segmented_forward_backward``). The segments, the
checks and the order of every sum depend on the data only, so the result does not depend on
the thread count.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import kernels, threads
from .kernels.chunks import lane_plan

_SEGMENT = 16384  # longest sequence run as a single lane; longer ones are split in segments
_WARMUP = 1024  # rows of warm-up before each further segment
_FILTER_RTOL = 1e-13  # agreement required of the warmed-up filter, in every state
_LANE_BYTES = 8 * 8  # bytes of one f64x8 lane vector


@dataclass(frozen=True)
class LanePlan:
    """Rows that each lane of the lockstep kernels runs (see :mod:`hiddenstate.kernels`).

    Entry ``l`` runs rows ``first[l] .. end[l] - 1``; rows before ``lo[l]`` are a warm-up.
    Entries are sorted by decreasing length so that the lanes of a block finish together, and
    padded to whole blocks of 8.

    Parameters
    ----------
    first : ndarray of int64
        The first row of each entry, warm-up included.
    lo : ndarray of int64
        The first row whose result is kept.
    end : ndarray of int64
        One past the last row.
    init : ndarray of int64
        0 for the start of a sequence (prior ``startprob``), 1 for a warm-up (flat prior).
    seq : ndarray of int64
        The sequence of each entry (``-1`` for the padding entries).
    part : ndarray of int64
        The segment of each entry within its sequence.
    chunks : ndarray of int64
        The bounds of the parallel chunks (blocks of 8 entries).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference
    >>> startprob = np.array([0.6, 0.4])
    >>> transmat = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> emissionprob = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    >>> seqs = inference.Sequences.from_lengths([3, 3])
    >>> table = inference.EmissionTable.from_symbols(emissionprob, np.array([0, 0, 1, 2, 2, 2]))
    >>> plan = inference.LanePlan.build(seqs.bounds)
    >>> plan.first[:2], plan.end[:2], plan.seq[:3], plan.rows
    (array([0, 3]), array([3, 6]), array([ 0,  1, -1]), 6)
    """

    first: np.ndarray
    lo: np.ndarray
    end: np.ndarray
    init: np.ndarray
    seq: np.ndarray
    part: np.ndarray
    chunks: np.ndarray

    @classmethod
    def build(cls, bounds: np.ndarray, segment: int | None = None, warmup: int = 0,
              only: np.ndarray | None = None, fill: bool = False) -> LanePlan:
        """Build the plan of concatenated sequences.

        One entry per sequence, or per segment of at most ``segment`` rows (segments after the
        first start ``warmup`` rows early).

        Parameters
        ----------
        bounds : ndarray of int64 of shape (n_sequences + 1,)
            The sequences' offsets.
        segment : int or None, default=None
            The longest segment; None: whole sequences.
        warmup : int, default=0
            The warm-up rows before each further segment.
        only : ndarray of bool of shape (n_sequences,) or None, default=None
            The sequences to plan; None: all.
        fill : bool, default=False
            With ``segment``: while the entries do not fill whole blocks of 8 lanes, cut
            the sequence with the longest segments (already in segments, the first on ties)
            into one more, as long as they are longer than ``2 * warmup`` rows. A block with
            an empty lane runs every step lane by lane; a full one runs its steps where
            every lane is past its warm-up as vectors (scoring: 3x faster at T = 10^5).

        Returns
        -------
        LanePlan
            The plan.
        """
        return cls(*lane_plan(np.ascontiguousarray(bounds, dtype=np.int64), segment or 0,
                              warmup, np.empty(0, np.bool_) if only is None
                              else np.ascontiguousarray(only, dtype=np.bool_), fill))

    @property
    def n_chunks(self) -> int:
        """The number of parallel chunks."""
        return len(self.chunks) - 1

    @cached_property
    def rows(self) -> int:
        """The rows processed by all entries, warm-ups included."""
        return int((self.end - self.first).sum())

    @cached_property
    def unit_weights(self) -> np.ndarray:
        """Return the kernels' lane weights without sample weights.

        1.0 for each real entry and 0.0 for a padding entry; cached, so never written.
        """
        return (self.seq >= 0).astype(np.float64)

    @cached_property
    def _heads(self) -> np.ndarray:
        """The first entry of each sequence."""
        return np.flatnonzero((self.seq >= 0) & (self.part == 0))

    def _by_sequence(self) -> list[np.ndarray]:
        """The real entries of each sequence that has several, in segment order."""
        if not self.part.any():
            return []
        real = np.flatnonzero(self.seq >= 0)
        real = real[np.lexsort((self.part[real], self.seq[real]))]
        cuts = np.flatnonzero(np.diff(self.seq[real])) + 1
        return [group for group in np.split(real, cuts) if len(group) > 1]

    def join(self, n_seq: int, total: np.ndarray, snap_lo: np.ndarray, snap_end: np.ndarray,
             agree, rerun) -> tuple[np.ndarray, np.ndarray]:
        """Sum the entries' results per sequence, in segment order, after checking the warm-ups.

        Parameters
        ----------
        n_seq : int
            The number of sequences.
        total : ndarray of shape (n_entries,)
            Each entry's result.
        snap_lo : ndarray of shape (n_entries, K)
            Each entry's state at the end of its warm-up.
        snap_end : ndarray of shape (n_entries, K)
            Each entry's state at its last row.
        agree : callable
            ``agree(state, reference)``: whether a warm-up reached the state that the previous
            segment ended in.
        rerun : callable
            ``rerun(l, reference)``: recompute entry ``l`` from that state; returns its
            ``(total, end state)``.

        Returns
        -------
        sums : ndarray of shape (n_seq,)
            The per-sequence sums.
        last : ndarray of shape (n_seq, K)
            The per-sequence end states.
        """
        out = np.zeros(n_seq)
        last = np.zeros((n_seq, snap_end.shape[1]))
        heads = self._heads
        out[self.seq[heads]] = total[heads]
        last[self.seq[heads]] = snap_end[heads]
        for group in self._by_sequence():
            s = self.seq[group[0]]
            for l in group[1:]:
                if out[s] == -np.inf:
                    break
                t, state = total[l], snap_end[l]
                if not agree(snap_lo[l], last[s]):
                    t, state = rerun(l, last[s])
                out[s] += t
                last[s] = state
        return out, last

    def join_backward(self, snap_g_end: np.ndarray, snap_g_lo: np.ndarray,
                      snap_b_lo: np.ndarray, agree, rerun) -> np.ndarray:
        """Return the exact scaled beta at row ``end`` of every entry but the last of its sequence.

        Goes through each sequence's segments from the last one: segment ``m``'s warm-up must
        have reached (``agree``) the posterior that segment ``m + 1`` has on its first row; if
        not, ``rerun`` recomputes entry ``l``'s backward pass from segment ``m + 1``'s beta.
        Updates ``snap_g_lo`` and ``snap_b_lo`` in place.

        Parameters
        ----------
        snap_g_end : ndarray of shape (n_entries, K)
            Each entry's posterior at its last row.
        snap_g_lo : ndarray of shape (n_entries, K)
            Each entry's posterior at row ``lo``.
        snap_b_lo : ndarray of shape (n_entries, K)
            Each entry's scaled beta at row ``lo``.
        agree : callable
            ``agree(state, reference)``: whether two posteriors agree.
        rerun : callable
            ``rerun(l, beta)``: recompute entry ``l`` from ``beta``; returns its
            ``(gamma, beta)`` on row ``lo``.

        Returns
        -------
        ndarray of shape (n_entries, K)
            The beta each entry starts its backward pass from.
        """
        states = np.zeros_like(snap_b_lo)
        for group in self._by_sequence():
            for l, nxt in zip(group[-2::-1], group[:0:-1], strict=True):
                states[l] = snap_b_lo[nxt]
                if not agree(snap_g_end[l], snap_g_lo[nxt]):
                    snap_g_lo[l], snap_b_lo[l] = rerun(l, states[l])
        return states

    def single(self, l: int) -> tuple[LanePlan, np.ndarray]:
        """Return entry ``l`` alone and without its warm-up, to run again from a given state.

        Parameters
        ----------
        l : int
            The entry.

        Returns
        -------
        plan : LanePlan
            A block of 8 entries, ``l`` in the first lane and empty lanes after it.
        from_state : ndarray of bool of shape (8,)
            The lanes that start from a given state (lane 0).
        """
        plan = LanePlan(_lane0(self.lo[l]), _lane0(self.lo[l]), _lane0(self.end[l]), _lane0(0),
                        _lane0(self.seq[l]), _lane0(self.part[l]), np.array([0, 1], np.int64))
        return plan, np.arange(kernels.LANES) == 0


def _lane0(x) -> np.ndarray:
    """A block of 8 plan entries: ``x`` in the first, 0 (an empty lane) in the others."""
    out = np.zeros(kernels.LANES, dtype=np.int64)
    out[0] = x
    return out


@dataclass(frozen=True)
class Sequences:
    """Layout of concatenated sequences: offsets, parallel chunks and the longest length.

    Parameters
    ----------
    lengths : ndarray of int64 of shape (n_sequences,)
        The length of each sequence.
    bounds : ndarray of int64 of shape (n_sequences + 1,)
        Their offsets.
    chunks : ndarray of int64
        The bounds of the parallel chunks (groups of sequences).
    max_len : int
        The longest length.

    Examples
    --------
    >>> from hiddenstate.inference import Sequences
    >>> seqs = Sequences.from_lengths([3, 2])
    >>> seqs.bounds, seqs.n_samples, seqs.max_len
    (array([0, 3, 5]), 5, 3)
    """

    lengths: np.ndarray
    bounds: np.ndarray
    chunks: np.ndarray
    max_len: int

    @classmethod
    def from_lengths(cls, lengths: np.ndarray) -> Sequences:
        """Build the layout of sequences of the given lengths.

        Parameters
        ----------
        lengths : array-like of int
            The length of each sequence (positive; validated by the caller).

        Returns
        -------
        Sequences
            The layout.
        """
        lengths = np.asarray(lengths, dtype=np.int64)
        if len(lengths) == 1:  # one sequence: one chunk (what chunk_bounds gives)
            n = int(lengths[0])
            return cls(lengths, np.array([0, n], dtype=np.int64),
                       np.array([0, 1], dtype=np.int64), n)
        bounds = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=bounds[1:])
        return cls(lengths, bounds, kernels.chunk_bounds(lengths), int(lengths.max()))

    @property
    def n_samples(self) -> int:
        """The number of rows of all the sequences."""
        return int(self.bounds[-1])

    @property
    def n_chunks(self) -> int:
        """The number of parallel chunks."""
        return len(self.chunks) - 1

    @cached_property
    def lanes(self) -> LanePlan:
        """One lane per sequence (sampling)."""
        return LanePlan.build(self.bounds)

    @cached_property
    def segments(self) -> LanePlan:
        """Long sequences in warmed-up segments filling whole blocks (scoring, Viterbi)."""
        return LanePlan.build(self.bounds, _SEGMENT, _WARMUP, fill=True)

    @cached_property
    def short_lanes(self) -> LanePlan:
        """One lane per sequence of at most ``_SEGMENT`` rows (forward-backward)."""
        return LanePlan.build(self.bounds, only=self.lengths <= _SEGMENT)

    @cached_property
    def long_segments(self) -> LanePlan:
        """The longer sequences in warmed-up segments (forward-backward)."""
        return LanePlan.build(self.bounds, _SEGMENT, _WARMUP, only=self.lengths > _SEGMENT)

    def per_sequence_sum(self, values: np.ndarray) -> np.ndarray:
        """Sum a per-row array within each sequence.

        Parameters
        ----------
        values : ndarray of shape (n_samples,)
            One value per row.

        Returns
        -------
        ndarray of shape (n_sequences,)
            The sums.

        Examples
        --------
        >>> import numpy as np
        >>> from hiddenstate.inference import Sequences
        >>> Sequences.from_lengths([3, 2]).per_sequence_sum(np.arange(5.0))
        array([3., 7.])
        """
        return np.add.reduceat(values, self.bounds[:-1]) if len(values) else values


@dataclass(frozen=True)
class Transitions:
    r"""The allowed transitions of a structured model, by rows (CSR).

    Row ``i`` may move to the states ``indices[indptr[i]:indptr[i + 1]]`` (sorted).
    Transition probabilities travel as one value per allowed entry (``(nnz,)``,
    :meth:`gather` / :meth:`dense`); the sparse kernels (:mod:`hiddenstate.kernels.sparse`)
    cost :math:`O(\mathrm{nnz})` per step.

    Parameters
    ----------
    n_states : int
        The number of states K.
    indptr : ndarray of int64 of shape (K + 1,)
        The offsets of each row's entries.
    indices : ndarray of int64 of shape (nnz,)
        The destination of each entry.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference
    >>> transitions = inference.Transitions.band(4, below=0, above=1)   # left-to-right
    >>> transmat = np.array([[0.9, 0.1, 0, 0], [0, 0.8, 0.2, 0], [0, 0, 0.7, 0.3],
    ...                      [0, 0, 0, 1.0]])
    >>> values = transitions.gather(transmat)
    >>> startprob = np.array([1.0, 0, 0, 0])
    >>> seqs = inference.Sequences.from_lengths([4])
    >>> table = inference.EmissionTable.from_symbols(np.full((4, 3), 1 / 3), np.array([0, 1, 2, 0]))
    >>> transitions.nnz, transitions.indices
    (7, array([0, 1, 1, 2, 2, 3, 3]))
    >>> values
    array([0.9, 0.1, 0.8, 0.2, 0.7, 0.3, 1. ])
    """

    n_states: int
    indptr: np.ndarray
    indices: np.ndarray

    @classmethod
    def from_mask(cls, mask: np.ndarray) -> Transitions:
        """Build the transitions a boolean ``(K, K)`` mask allows.

        Parameters
        ----------
        mask : ndarray of bool of shape (K, K)
            The allowed transitions.

        Returns
        -------
        Transitions
            The transitions.

        Examples
        --------
        >>> import numpy as np
        >>> from hiddenstate.inference import Transitions
        >>> Transitions.from_mask(np.array([[True, True], [False, True]])).indices
        array([0, 1, 1])
        """
        rows, cols = np.nonzero(mask)
        indptr = np.zeros(len(mask) + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=len(mask)), out=indptr[1:])
        return cls(len(mask), indptr, cols.astype(np.int64))

    @classmethod
    def band(cls, K: int, below: int, above: int) -> Transitions:
        r"""Build a band: row ``i`` allows ``i - below .. i + above`` (clipped to the states).

        Built in :math:`O(\mathrm{nnz})`, without a ``(K, K)`` mask.

        Parameters
        ----------
        K : int
            The number of states.
        below : int
            The states allowed below the diagonal.
        above : int
            The states allowed above it.

        Returns
        -------
        Transitions
            The transitions.

        Examples
        --------
        >>> from hiddenstate.inference import Transitions
        >>> Transitions.band(3, below=1, above=0).mask().astype(int)
        array([[1, 0, 0],
               [1, 1, 0],
               [0, 1, 1]])
        """
        i = np.arange(K, dtype=np.int64)
        lo, hi = np.maximum(i - below, 0), np.minimum(i + above, K - 1)
        counts = hi - lo + 1
        indptr = np.zeros(K + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        indices = np.arange(indptr[-1], dtype=np.int64) - np.repeat(indptr[:-1] - lo, counts)
        return cls(K, indptr, indices)

    @property
    def nnz(self) -> int:
        """The number of allowed transitions."""
        return int(self.indptr[-1])

    @cached_property
    def rows(self) -> np.ndarray:
        """The row of every stored entry."""
        return np.repeat(np.arange(self.n_states, dtype=np.int64), np.diff(self.indptr))

    @cached_property
    def keys(self) -> np.ndarray:
        """``i * K + j`` of every stored entry (sorted)."""
        return self.rows * self.n_states + self.indices

    def mask(self) -> np.ndarray:
        """Return the allowed transitions as a boolean matrix.

        Returns
        -------
        ndarray of bool of shape (K, K)
            The mask.
        """
        out = np.zeros((self.n_states, self.n_states), dtype=bool)
        out[self.rows, self.indices] = True
        return out

    def gather(self, transmat: np.ndarray) -> np.ndarray:
        """Return the allowed entries of a dense ``(K, K)`` matrix.

        Parameters
        ----------
        transmat : array-like of shape (K, K)
            The matrix.

        Returns
        -------
        ndarray of shape (nnz,)
            Its allowed entries, float64, in storage order.
        """
        return np.ascontiguousarray(np.asarray(transmat)[self.rows, self.indices],
                                    dtype=np.float64)

    def dense(self, values: np.ndarray) -> np.ndarray:
        """Return the dense ``(K, K)`` matrix of one value per allowed entry (zero elsewhere).

        Parameters
        ----------
        values : ndarray of shape (nnz,)
            The values.

        Returns
        -------
        ndarray of shape (K, K)
            The matrix.
        """
        out = np.zeros((self.n_states, self.n_states))
        out[self.rows, self.indices] = values
        return out

    def row_sums(self, values: np.ndarray) -> np.ndarray:
        """Sum the values of each row.

        Parameters
        ----------
        values : ndarray of shape (nnz,)
            The values.

        Returns
        -------
        ndarray of shape (K,)
            The sums.
        """
        return np.add.reduceat(values, self.indptr[:-1]) if len(values) else values

    def position(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Return the stored entry of each transition ``src -> dst`` (which must be allowed).

        Parameters
        ----------
        src : ndarray of int
            The origins.
        dst : ndarray of int
            The destinations.

        Returns
        -------
        ndarray of int
            The positions in the stored entries.
        """
        return np.searchsorted(self.keys, src * self.n_states + dst)

    def successors(self, values: np.ndarray):
        """Return the successor function of the positive allowed transitions.

        For :func:`state_supports`.

        Parameters
        ----------
        values : ndarray of shape (nnz,)
            The transition probabilities.

        Returns
        -------
        callable
            ``mask -> mask``: the states one positive allowed transition away.
        """
        positive = values > 0

        def step(mask: np.ndarray) -> np.ndarray:
            out = np.zeros(self.n_states, dtype=bool)
            out[self.indices[positive & mask[self.rows]]] = True
            return out
        return step


def state_supports(startprob, transmat, max_len: int) -> tuple[np.ndarray, int, int]:
    """Compute the states the chain can be in at each position of a sequence.

    :math:`S_0` = the support of ``startprob``, :math:`S_{t+1}` = the states one positive
    transition away from :math:`S_t`. The sequence of sets is eventually periodic: with
    ``(masks, s, p)`` returned, :math:`S_t` is ``masks[t]`` for :math:`t < M` and
    ``masks[s + (t - s) % p]`` beyond (only the first ``max_len`` positions are looked at). A
    state outside :math:`S_t` has probability exactly 0 at position :math:`t`, whatever the
    data (:func:`emission_table` leaves it out of the row scaling).

    Parameters
    ----------
    startprob : array-like of shape (K,)
        The initial distribution.
    transmat : array-like of shape (K, K) or callable
        The transition matrix, or a function from a mask to the next one
        (:meth:`Transitions.successors`).
    max_len : int
        The longest sequence.

    Returns
    -------
    masks : ndarray of bool of shape (M, K)
        The supports of the first positions.
    s : int
        Where the period starts.
    p : int
        The period.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference
    >>> transitions = inference.Transitions.band(4, below=0, above=1)   # left-to-right
    >>> transmat = np.array([[0.9, 0.1, 0, 0], [0, 0.8, 0.2, 0], [0, 0, 0.7, 0.3],
    ...                      [0, 0, 0, 1.0]])
    >>> values = transitions.gather(transmat)
    >>> startprob = np.array([1.0, 0, 0, 0])
    >>> seqs = inference.Sequences.from_lengths([4])
    >>> table = inference.EmissionTable.from_symbols(np.full((4, 3), 1 / 3), np.array([0, 1, 2, 0]))
    >>> masks, s, p = inference.state_supports(startprob, transmat, max_len=10)
    >>> masks.astype(int), s, p
    (array([[1, 0, 0, 0],
           [1, 1, 0, 0],
           [1, 1, 1, 0],
           [1, 1, 1, 1]]), 3, 1)
    """
    if callable(transmat):  # a structured model's successor function (Transitions)
        successors = transmat
    elif np.asarray(transmat).all():  # every state one step after any state
        first = np.asarray(startprob) > 0
        if first.all():  # every state at every position
            return np.ones((1, len(first)), dtype=bool), 0, 1
        if first.any() and max_len > 1:
            masks = np.ones((2, len(first)), dtype=bool)
            masks[0] = first
            return masks, 1, 1
        return first[None], 0, 1
    else:
        step = np.asarray(transmat) > 0

        def successors(mask):
            return step[mask].any(axis=0)
    masks = [np.asarray(startprob) > 0]
    seen = {masks[0].tobytes(): 0}
    while len(masks) < max_len:
        nxt = successors(masks[-1])
        key = nxt.tobytes()
        if key in seen:
            return np.array(masks), seen[key], len(masks) - seen[key]
        seen[key] = len(masks)
        masks.append(nxt)
    return np.array(masks), len(masks) - 1, 1


def emission_table(family, params: dict, X: np.ndarray, startprob, transmat,
                   seqs: Sequences) -> EmissionTable:
    """Build the emission table of the data, each row scaled over the states the chain can be in.

    ``family.table(params, X)`` with each row scaled by its largest log-likelihood over the
    states the chain can be in at that row's position (:func:`state_supports`), the others at
    probability 0. Scaling by the maximum over every state fails when a state the chain
    cannot be in beats all those it can be in by more than ~745 nats: their probabilities
    underflow to 0 and a possible observation looks impossible. EM makes such states when a
    state's posterior underflows; a left-to-right model whose sequences start mid-way makes
    them by design. The table is built once with the mask of most positions; the rows at
    other positions are computed again.

    Parameters
    ----------
    family : hiddenstate.families.EmissionFamily
        The emission family.
    params : dict
        Its parameters.
    X : ndarray
        The validated observations.
    startprob : array-like of shape (K,)
        The initial distribution.
    transmat : array-like of shape (K, K) or callable
        The transition matrix (or its successor function, see :func:`state_supports`).
    seqs : Sequences
        The layout of ``X``.

    Returns
    -------
    EmissionTable
        The table.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference
    >>> startprob = np.array([0.6, 0.4])
    >>> transmat = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> emissionprob = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    >>> seqs = inference.Sequences.from_lengths([3, 3])
    >>> table = inference.EmissionTable.from_symbols(emissionprob, np.array([0, 0, 1, 2, 2, 2]))
    >>> from hiddenstate.families import CategoricalEmissions
    >>> X = np.array([0, 0, 1, 2, 2, 2])
    >>> inference.emission_table(CategoricalEmissions(2, 3), {"emissionprob": emissionprob}, X,
    ...                          startprob, transmat, seqs).idx
    array([0, 0, 1, 2, 2, 2])
    """
    masks, s, p = state_supports(startprob, transmat, seqs.max_len)
    base = masks[s] if p == 1 else masks[s:].any(axis=0)
    table = family.table(params, X, base)
    # unscaled probabilities (categorical): nothing underflows; one support: nothing to redo
    if table.log_offset is None or len(masks) == 1:
        return table
    other = (masks != base).any(axis=1)
    if not other.any():
        return table
    rows, at = _rows_at(seqs, other, s, p)
    if len(rows) and family.table_rows_exact and (masks[at] == masks[at[0]]).all():
        sub = family.table(params, X[rows], masks[at[0]])  # one support: one table call
        table.emis[rows] = sub.emis
        table.log_offset[rows] = sub.log_offset
    elif len(rows):
        log_frame = np.where(masks[at], family.log_likelihood(params, X[rows]), -np.inf)
        top = log_frame.max(axis=1)
        table.emis[rows] = np.exp(log_frame - np.where(top > -np.inf, top, 0.0)[:, None])
        table.log_offset[rows] = top
    return table


def _rows_at(seqs: Sequences, other: np.ndarray, s: int, p: int
             ) -> tuple[np.ndarray, np.ndarray]:
    """The rows whose position ``t`` in their sequence has ``other[m(t)]``, in row order,
    and ``m(t)`` for each (``m(t) = t`` below ``len(other)``, ``s + (t - s) % p`` beyond:
    :func:`state_supports`). Period 1: only positions below ``s`` can be set, a few rows
    of each sequence, found without a pass over every row."""
    if p == 1:
        t = np.flatnonzero(other[:s])
        if len(seqs.lengths) == 1:
            return t, t  # s < max_len: every such position is in the sequence
        hit = t[None, :] < seqs.lengths[:, None]
        at = np.empty(hit.shape, dtype=np.int64)
        at[:] = t
        return (seqs.bounds[:-1, None] + t[None, :])[hit], at[hit]
    pos = np.arange(seqs.n_samples) - np.repeat(seqs.bounds[:-1], seqs.lengths)
    idx = np.where(pos < len(other), pos, s + (pos - s) % p)
    rows = np.flatnonzero(other[idx])
    return rows, idx[rows]


def clamp_states(table: EmissionTable, states: np.ndarray, log_likelihood
                 ) -> tuple[EmissionTable, np.ndarray | None]:
    r"""Mask every labelled row of an emission table to its label.

    :math:`p(x_t \mid z_t = k)\,[k = s_t]`, so that every path through another state at a
    labelled step has probability 0 and the posterior at that step is the label
    (semi-supervised learning; all rows labelled: the counts of supervised learning). Dense
    tables: each labelled row becomes the one-hot row of its label with the offset
    ``log_likelihood(rows)[:, label]`` (computed afresh, so no scaled value underflows).
    Shared (``by_idx``) tables: one extra row per (table row, label) pair that occurs.

    Parameters
    ----------
    table : EmissionTable
        The table.
    states : ndarray of int of shape (n_samples,)
        The labels, ``-1`` where the state is unknown.
    log_likelihood : callable
        ``log_likelihood(rows)``: the ``(len(rows), K)`` log-likelihoods of those rows (dense
        tables only).

    Returns
    -------
    table : EmissionTable
        The clamped table.
    fold : ndarray of int64 or None
        Shared tables: the original table row of every row of the new table (sum the
        posteriors of the new rows into the old ones with :func:`fold_rows`); else None.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference
    >>> startprob = np.array([0.6, 0.4])
    >>> transmat = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> emissionprob = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    >>> seqs = inference.Sequences.from_lengths([3, 3])
    >>> table = inference.EmissionTable.from_symbols(emissionprob, np.array([0, 0, 1, 2, 2, 2]))
    >>> labels = np.array([1, -1, -1, -1, -1, -1])   # the first step is in state 1
    >>> clamped, fold = inference.clamp_states(table, labels, None)
    >>> inference.forward_backward(startprob, transmat, clamped, seqs).post[3]  # its row
    array([0., 1.])
    >>> fold
    array([0, 1, 2, 0])
    """
    rows = np.flatnonzero(states >= 0)
    if not len(rows):
        return table, None
    labels = states[rows]
    K = table.emis.shape[1]
    if table.by_idx:
        M = table.emis.shape[0]
        pairs, inverse = np.unique(table.idx[rows] * K + labels, return_inverse=True)
        src, lab = pairs // K, pairs % K
        extra = np.zeros((len(pairs), K))
        extra[np.arange(len(pairs)), lab] = table.emis[src, lab]
        idx = table.idx.copy()
        idx[rows] = M + inverse.reshape(-1)
        fold = np.concatenate((np.arange(M, dtype=np.int64), src))
        return EmissionTable(np.vstack((table.emis, extra)), idx, table.log_offset,
                             True), fold
    clamped = EmissionTable.from_log_likelihood(
        clamp_log_likelihood(log_likelihood(rows), labels))  # one-hot rows, offset the value
    emis = table.emis.copy()
    emis[rows] = clamped.emis
    offset = (np.zeros(len(emis)) if table.log_offset is None
              else table.log_offset.copy())
    offset[rows] = clamped.log_offset
    return EmissionTable(emis, table.idx, offset, False), None


def clamp_log_likelihood(loglik: np.ndarray, states: np.ndarray) -> np.ndarray:
    r"""Mask every labelled row of a log-likelihood table to its label.

    :math:`\log p(x_t \mid z_t = k) + \log [k = s_t]` (``-inf`` for every other state): the
    clamp of :func:`clamp_states` before any table is built (what it builds its rows from,
    and what the streaming learners that score a row at a time use).

    Parameters
    ----------
    loglik : ndarray of shape (N, K)
        The log-likelihoods.
    states : ndarray of int of shape (N,)
        The labels, ``-1`` where the state is unknown.

    Returns
    -------
    ndarray of shape (N, K)
        ``loglik`` itself when nothing is labelled, else a clamped copy.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.inference import clamp_log_likelihood
    >>> clamp_log_likelihood(np.log([[0.5, 0.25], [0.1, 0.2]]), np.array([1, -1])).round(3)
    array([[  -inf, -1.386],
           [-2.303, -1.609]])
    """
    rows = np.flatnonzero(states >= 0)
    if not len(rows):
        return loglik
    out = np.full_like(loglik, -np.inf)
    out[~(states >= 0)] = loglik[~(states >= 0)]
    out[rows, states[rows]] = loglik[rows, states[rows]]
    return out


def weigh_observations(table: EmissionTable, weights: np.ndarray
                       ) -> tuple[EmissionTable, np.ndarray | None]:
    r"""Raise each observation's emission term to its weight: :math:`p(x_t \mid z_t)^{w_t}`.

    The table of the weighted likelihood :math:`\prod_t p(x_t \mid z_t)^{w_t}` (an integer
    :math:`w_t` counts :math:`x_t` as :math:`w_t` copies emitted from the same state; 0 as
    missing). Dense tables keep their scaling (:math:`e^{w}` of a row whose maximum is 1,
    offset times :math:`w`); a shared (``by_idx``) table becomes a dense one, scaled afresh,
    whose posteriors :func:`fold_rows` sums back onto the shared rows (``fold``).

    Parameters
    ----------
    table : EmissionTable
        The table.
    weights : ndarray of shape (n_samples,)
        The weight of each observation (finite, >= 0).

    Returns
    -------
    table : EmissionTable
        The weighted table (dense).
    fold : ndarray of int64 or None
        Shared tables: the row of the original table of each observation (``table.idx``);
        dense tables: None.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference
    >>> table = inference.EmissionTable.from_symbols(np.array([[0.5, 0.5], [0.1, 0.9]]),
    ...                                              np.array([0, 1]))
    >>> weighted, fold = inference.weigh_observations(table, np.array([2.0, 0.0]))
    >>> np.exp(np.log(weighted.emis) + weighted.log_offset[:, None]).round(3), fold
    (array([[0.25, 0.01],
           [1.  , 1.  ]]), array([0, 1]))
    """
    w = np.asarray(weights, dtype=np.float64)
    if table.by_idx:
        with np.errstate(divide="ignore", invalid="ignore"):
            log_frame = np.where(w[:, None] > 0, w[:, None] * table.log_emis()[table.idx], 0.0)
        return EmissionTable.from_log_likelihood(log_frame), table.idx
    offset = np.zeros(len(w)) if table.log_offset is None else table.log_offset
    with np.errstate(invalid="ignore"):
        emis = np.power(table.emis, w[:, None])  # 0 ** 0 = 1: weight 0 is missing
        offset = np.where(w > 0, w * offset, 0.0)
    return EmissionTable(emis, np.arange(len(w), dtype=np.int64), offset, False), None


def fold_rows(post: np.ndarray, fold: np.ndarray | None,
              n_rows: int | None = None) -> np.ndarray:
    """Sum the posteriors of a clamped shared table back onto the rows of the original table.

    See :func:`clamp_states` and :func:`weigh_observations`.

    Parameters
    ----------
    post : ndarray of shape (M, K)
        The posteriors by row of the clamped table.
    fold : ndarray of int64 or None
        The original row of each row (None: nothing was clamped).
    n_rows : int or None, default=None
        The rows of the original table; None: ``fold.max() + 1``.

    Returns
    -------
    ndarray
        The posteriors by row of the original table.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.inference import fold_rows
    >>> fold_rows(np.ones((4, 2)), np.array([0, 1, 2, 0]))
    array([[2., 2.],
           [1., 1.],
           [1., 1.]])
    """
    if fold is None:
        return post
    out = np.zeros((int(fold.max()) + 1 if n_rows is None else n_rows, post.shape[1]))
    np.add.at(out, fold, post)
    return out


def all_occupied(K: int, occupied: np.ndarray | None) -> np.ndarray:
    """Return ``occupied`` as a boolean array, every one of the ``K`` states when it is None.

    Parameters
    ----------
    K : int
        The number of states.
    occupied : array-like of bool or None
        The states.

    Returns
    -------
    ndarray of bool of shape (K,)
        The states.

    Examples
    --------
    >>> from hiddenstate.inference import all_occupied
    >>> all_occupied(3, None), all_occupied(3, [True, False, True])
    (array([ True,  True,  True]), array([ True, False,  True]))
    """
    return np.ones(K, np.bool_) if occupied is None else np.asarray(occupied, np.bool_)


@dataclass(frozen=True)
class EmissionTable:
    """Emission probabilities in the kernels' ``(emis, idx)`` form.

    Row ``t`` of the data has emission probabilities ``emis[idx[t]] * exp(log_offset[t])``.

    Parameters
    ----------
    emis : ndarray of shape (M, K)
        The (scaled) emission probabilities.
    idx : ndarray of int64 of shape (N,)
        The row of ``emis`` of each observation.
    log_offset : ndarray of shape (N,) or None
        The log scale of each row; None when the table is unscaled (categorical emissions).
    by_idx : bool
        The rows of ``emis`` are shared by many observations (posteriors are then
        accumulated per row of ``emis`` rather than stored per observation).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.inference import EmissionTable
    >>> table = EmissionTable.from_log_likelihood(np.log([[0.5, 0.25], [1e-300, 1e-310]]))
    >>> table.emis, table.log_offset.round(2).tolist()
    (array([[1.e+00, 5.e-01],
           [1.e+00, 1.e-10]]), [-0.69, -690.78])
    """

    emis: np.ndarray
    idx: np.ndarray
    log_offset: np.ndarray | None
    by_idx: bool

    @classmethod
    def from_log_likelihood(cls, log_frame: np.ndarray,
                            occupied: np.ndarray | None = None) -> EmissionTable:
        """Scale a dense ``(N, K)`` log-likelihood table row by row.

        Each row's maximum over the ``occupied`` states (default all; see
        :func:`emission_table`) becomes 1; the other states get probability 0. A row of all
        ``-inf`` (impossible in every state) stays a row of zeros with offset ``-inf``.

        Parameters
        ----------
        log_frame : ndarray of shape (N, K)
            The log-likelihoods.
        occupied : ndarray of bool of shape (K,) or None, default=None
            The states the scaling looks at.

        Returns
        -------
        EmissionTable
            The table.

        Examples
        --------
        >>> import numpy as np
        >>> from hiddenstate.inference import EmissionTable
        >>> EmissionTable.from_log_likelihood(np.array([[-1.0, -3.0]]),
        ...                                   occupied=np.array([False, True])).emis
        array([[0., 1.]])
        """
        log_frame = np.ascontiguousarray(log_frame, dtype=np.float64)
        shifted = np.empty_like(log_frame)
        offset = np.empty(len(log_frame))
        kernels.shift_rows(log_frame, all_occupied(log_frame.shape[1], occupied), shifted,
                           offset)
        return cls.from_shifted(shifted, offset)

    @classmethod
    def from_shifted(cls, shifted: np.ndarray, offset: np.ndarray) -> EmissionTable:
        """Build the table of a log-likelihood already split as ``shifted[t] + offset[t]``.

        ``max(shifted[t]) = 0`` (or ``-inf`` everywhere); ``shifted`` is exponentiated in place.

        Parameters
        ----------
        shifted : ndarray of shape (N, K)
            The shifted log-likelihoods (C-contiguous float64).
        offset : ndarray of shape (N,)
            The offsets.

        Returns
        -------
        EmissionTable
            The table.
        """
        np.exp(shifted, out=shifted)
        return cls(shifted, np.arange(len(shifted), dtype=np.int64), offset, False)

    @classmethod
    def from_symbols(cls, emissionprob: np.ndarray, symbols: np.ndarray) -> EmissionTable:
        """Build the table of categorical emissions; no per-row table is built.

        A missing symbol (``-1``) has no emission term: it reads an extra row of ones (row
        ``W``), whose posterior sums the statistics leave out.

        Parameters
        ----------
        emissionprob : ndarray of shape (K, W)
            The symbol probabilities of each state.
        symbols : ndarray of int of shape (N,)
            The observations.

        Returns
        -------
        EmissionTable
            The table (``by_idx``: one row per symbol).

        Examples
        --------
        >>> import numpy as np
        >>> from hiddenstate.inference import EmissionTable
        >>> table = EmissionTable.from_symbols(np.array([[0.7, 0.3], [0.1, 0.9]]),
        ...                                    np.array([0, -1, 1]))
        >>> table.emis, table.idx
        (array([[0.7, 0.1],
               [0.3, 0.9],
               [1. , 1. ]]), array([0, 2, 1]))
        """
        emis = _f64(np.asarray(emissionprob).T)
        idx = np.ascontiguousarray(symbols, dtype=np.int64)
        if len(idx) and idx.min() < 0:
            W, K = emis.shape
            emis = np.vstack([emis, np.ones((1, K))])
            idx = np.where(idx < 0, W, idx)
        return cls(emis, idx, None, True)

    def log_emis(self) -> np.ndarray:
        """Return the log of ``emis`` (``-inf`` where it is 0).

        Returns
        -------
        ndarray of shape (M, K)
            The log emission table.
        """
        with np.errstate(divide="ignore"):
            return np.log(self.emis)

    def offset_per_sequence(self, seqs: Sequences) -> np.ndarray:
        """Sum the row offsets within each sequence.

        Parameters
        ----------
        seqs : Sequences
            The layout of the data.

        Returns
        -------
        ndarray of shape (n_sequences,)
            The sums (zeros for an unscaled table).
        """
        if self.log_offset is None:
            return np.zeros(len(seqs.lengths))
        return seqs.per_sequence_sum(self.log_offset)


@dataclass
class Posteriors:
    """Output of the E-step: per-sequence log-likelihoods and sufficient statistics.

    Parameters
    ----------
    loglik : ndarray of shape (n_sequences,)
        The log-likelihood of each sequence.
    start : ndarray of shape (K,)
        The expected initial-state counts.
    trans : ndarray of shape (K, K)
        The expected transition counts (sparse: one per allowed entry, ``(nnz,)``).
    post : ndarray of shape (M, K) or (N, K)
        The state posteriors, summed by emission row if the table is ``by_idx``, else per
        observation.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference
    >>> startprob = np.array([0.6, 0.4])
    >>> transmat = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> emissionprob = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    >>> seqs = inference.Sequences.from_lengths([3, 3])
    >>> table = inference.EmissionTable.from_symbols(emissionprob, np.array([0, 0, 1, 2, 2, 2]))
    >>> posteriors = inference.forward_backward(startprob, transmat, table, seqs)
    >>> posteriors.start.round(3), float(posteriors.trans.sum().round(6))   # 2 starts, 4 moves
    (array([1.008, 0.992]), 4.0)
    """

    loglik: np.ndarray  # (S,)
    start: np.ndarray  # (K,) expected initial-state counts
    trans: np.ndarray  # (K, K) expected transition counts
    post: np.ndarray  # (M, K) summed by emission row if by_idx, else (N, K) per observation


def _f64(a) -> np.ndarray:
    """C-contiguous, writable float64 (a read-only array, such as a model's learned-array
    view, is copied: numba would compile every kernel again for read-only arguments)."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    return a if a.flags.writeable else a.copy()


def forward_backward(startprob, transmat, table: EmissionTable, seqs: Sequences,
                     weights: np.ndarray | None = None) -> Posteriors:
    """Compute the expected counts and state posteriors (scaled forward-backward).

    Fused statistics. Sequences of at most ``_SEGMENT`` rows run as one lane each; longer
    ones in segments. An impossible sequence (log-likelihood ``-inf``) contributes exactly
    zero to every statistic and its rows of ``post`` (dense tables) are zero.

    Parameters
    ----------
    startprob : array-like of shape (K,)
        The initial distribution.
    transmat : array-like of shape (K, K)
        The transition matrix.
    table : EmissionTable
        The emission probabilities of the data.
    seqs : Sequences
        The layout of the data.
    weights : ndarray of shape (n_sequences,) or None, default=None
        The weight of each sequence: every statistic of sequence ``s`` (``start``,
        ``trans``, its ``post`` rows) is multiplied by ``weights[s]`` (the log-likelihoods
        are not); None: 1 (the same numbers, bit for bit).

    Returns
    -------
    Posteriors
        The log-likelihoods and the statistics.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference
    >>> startprob = np.array([0.6, 0.4])
    >>> transmat = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> emissionprob = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    >>> seqs = inference.Sequences.from_lengths([3, 3])
    >>> table = inference.EmissionTable.from_symbols(emissionprob, np.array([0, 0, 1, 2, 2, 2]))
    >>> posteriors = inference.forward_backward(startprob, transmat, table, seqs)
    >>> posteriors.loglik.round(3), posteriors.post.sum(axis=1)   # posteriors by symbol
    (array([-2.833, -2.798]), array([2., 1., 3.]))
    """
    startprob, transmat = _f64(startprob), _f64(transmat)
    transmat_t = np.ascontiguousarray(transmat.T)
    K = len(startprob)
    short, long = seqs.short_lanes, seqs.long_segments
    C = short.n_chunks + long.n_chunks
    post_acc, post_dense = _posterior_buffers(table, seqs, C, K)
    start_acc = np.zeros((C, K))
    trans_acc = np.zeros((C, K, K))
    loglik = np.zeros(len(seqs.lengths))
    if short.n_chunks:
        Cs = short.n_chunks
        kernels.forward_backward(
            startprob, transmat, transmat_t, table.emis, table.idx, short.first, short.end,
            short.seq, short.chunks, table.by_idx, post_acc[:Cs], post_dense, start_acc[:Cs],
            trans_acc[:Cs], loglik, _lane_weights(short, weights))
    if long.n_chunks:
        Cs = short.n_chunks
        loglik += _segmented_forward_backward(
            startprob, transmat, transmat_t, table, seqs, post_acc[Cs:], post_dense,
            start_acc[Cs:], trans_acc[Cs:], weights)
    out = _reduce_chunks(loglik, start_acc, trans_acc, post_acc, post_dense, table, seqs)
    out.trans *= transmat
    return out


def _lane_weights(plan: LanePlan, weights: np.ndarray | None) -> np.ndarray:
    """The weight of each entry of a lane plan: that of its sequence (1 without
    ``weights``; 0 for a padding entry)."""
    if weights is None:
        return plan.unit_weights
    real = plan.seq >= 0
    return np.where(real, np.asarray(weights, dtype=np.float64)[np.where(real, plan.seq, 0)],
                    0.0)


def _posterior_buffers(table: EmissionTable, seqs: Sequences, C: int, K: int):
    """``(post_acc, post_dense)`` for the forward-backward kernels: per-chunk sums by
    emission row (tables indexed by symbol) or one posterior row per observation."""
    if table.by_idx:
        return np.zeros((C, table.emis.shape[0], K)), np.empty((0, K))
    return np.empty((C, 0, K)), np.empty((seqs.n_samples, K))


def _reduce_chunks(loglik, start_acc, trans_acc, post_acc, post_dense, table: EmissionTable,
                   seqs: Sequences) -> Posteriors:
    """The per-chunk statistics of a forward-backward summed chunk 0, 1, 2, ... in that
    order (a fixed-order reduction: identical for any thread count)."""
    start, trans = start_acc[0].copy(), trans_acc[0].copy()
    for c in range(1, len(start_acc)):
        start += start_acc[c]
        trans += trans_acc[c]
    post = post_dense
    if table.by_idx:
        post = post_acc[0].copy()
        for c in range(1, len(post_acc)):
            post += post_acc[c]
    return Posteriors(loglik + table.offset_per_sequence(seqs), start, trans, post)


def _agree(state: np.ndarray, ref: np.ndarray) -> bool:
    """Every entry of ``state`` within a relative ``_FILTER_RTOL`` of ``ref`` (>= 0)."""
    return bool(np.all(np.abs(state - ref) <= _FILTER_RTOL * ref))


def _filter_segments(startprob, transmat_t, table: EmissionTable, plan: LanePlan, n_seq: int,
                     store=None) -> np.ndarray:
    r"""Per-sequence log p(x) of a segmented plan: forward pass, warm-up checks, reruns.

    ``store = (alpha, alpha_base, inv_c)`` also keeps :math:`\hat\alpha` and :math:`1/c`
    of every row (a rerun overwrites its segment's rows).
    """
    K = len(startprob)
    n = len(plan.first)
    alpha, alpha_base, inv_c = store or (np.empty((0, K)), np.zeros(n, np.int64), np.empty(0))
    total, snap_lo, snap_end = np.empty(n), np.zeros((n, K)), np.zeros((n, K))
    kernels.forward_loglik(
        np.stack([startprob, np.full(K, 1.0 / K)]), np.zeros(n, np.bool_), transmat_t,
        table.emis, table.idx, plan.first, plan.lo, plan.end, plan.init, plan.chunks, total,
        snap_lo, snap_end, alpha, alpha_base, inv_c)

    def rerun(l, ref):
        one, from_state = plan.single(l)
        t, s_lo, s_end = (np.empty(kernels.LANES), np.zeros((kernels.LANES, K)),
                          np.zeros((kernels.LANES, K)))
        kernels.forward_loglik(
            ref[None, :], from_state, transmat_t, table.emis, table.idx, one.first, one.lo,
            one.end, one.init, one.chunks, t, s_lo, s_end, alpha,
            np.full(kernels.LANES, alpha_base[l]), inv_c)
        return t[0], s_end[0]

    return plan.join(n_seq, total, snap_lo, snap_end, _agree, rerun)[0]


def _segmented_forward_backward(startprob, transmat, transmat_t, table: EmissionTable,
                                seqs: Sequences, post_acc, post_dense, start_acc,
                                trans_acc, weights=None) -> np.ndarray:
    r"""Forward-backward of the sequences longer than ``_SEGMENT``, segment by segment.

    1. Forward pass of all segments (warm-ups, checks and reruns as in scoring), keeping
       :math:`\hat\alpha` and :math:`1/c` of every row.
    2. A backward pass without statistics: segment ``m`` starts :math:`\hat\beta = 1`
       ``_WARMUP`` rows past its end and is rescaled on reaching it; its posterior on the
       first row of segment ``m + 1`` must agree (``_FILTER_RTOL``) with the one that
       segment computed, else it is rerun from that segment's exact :math:`\hat\beta`.
    3. The backward pass with the statistics, each segment starting from the exact
       :math:`\hat\beta` of the row after it: no warm-up, every row counted once.

    Returns the per-sequence log-likelihoods (0 for the sequences not in the plan).
    """
    plan = seqs.long_segments
    K = len(startprob)
    n = len(plan.first)
    bounds, lengths = seqs.bounds, seqs.lengths
    real = plan.seq >= 0
    seq = np.where(real, plan.seq, 0)
    # alpha and 1/c of every row of these sequences, each sequence contiguous, + a zero row
    in_plan = np.zeros(len(lengths), dtype=bool)
    in_plan[seq[real]] = True
    stored = np.where(in_plan, lengths, 0)
    n_rows = int(stored.sum())
    alpha_base = np.where(real, (np.cumsum(stored) - stored)[seq] + plan.lo - bounds[seq],
                          n_rows)
    alpha = np.empty((n_rows + 1, K))
    inv_c = np.empty(n_rows + 1)
    alpha[n_rows] = 0.0
    inv_c[n_rows] = 0.0
    # 1. forward
    loglik = _filter_segments(startprob, transmat_t, table, plan, len(lengths),
                              (alpha, alpha_base, inv_c))
    # the backward passes leave impossible sequences out: they contribute nothing
    ok = real & np.isfinite(loglik[seq])
    alpha_base = np.where(ok, alpha_base, n_rows)
    lo = np.where(ok, plan.lo, 0)
    end = np.where(ok, plan.end, 0)
    seq_end = bounds[seq + 1]
    inner = ok & (end < seq_end)  # segments followed by another one
    counts_start = ok & (plan.part == 0)
    snaps = [np.zeros((n, K)) for _ in range(3)]
    lane_w = _lane_weights(plan, weights)

    def backward(lo, stop, end, from_state, states, stats, chunks, base, snaps):
        kernels.backward_pass(
            transmat, table.emis, table.idx, lo, stop, end, counts_start, chunks, alpha, base,
            inv_c, states, from_state, stats, table.by_idx, post_acc, post_dense, start_acc,
            trans_acc, *snaps, lane_w if stats else np.ones(len(lo)))

    def rerun(l, beta):
        one = [np.zeros((kernels.LANES, K)) for _ in range(3)]
        backward(_lane0(lo[l]), _lane0(end[l] + 1), _lane0(end[l]),
                 np.arange(kernels.LANES) == 0, beta[None, :], False,
                 np.array([0, 1], dtype=np.int64), np.full(kernels.LANES, alpha_base[l]), one)
        return one[1][0], one[2][0]

    # 2. backward with warm-ups, checked from the end of each sequence
    backward(lo, np.where(inner, np.minimum(end + _WARMUP, seq_end), end), end,
             np.zeros(n, np.bool_), np.zeros((0, K)), False, plan.chunks, alpha_base, snaps)
    states = plan.join_backward(*snaps, _agree, rerun)
    # 3. backward with the statistics, from the exact beta of the row after each segment
    backward(lo, np.where(inner, end + 1, end), end, inner, states, True, plan.chunks,
             alpha_base, snaps)
    if not table.by_idx:
        for s in np.flatnonzero(in_plan & ~np.isfinite(loglik)):
            post_dense[bounds[s]:bounds[s + 1]] = 0.0
    return loglik


def log_likelihood(startprob, transmat, table: EmissionTable, seqs: Sequences) -> np.ndarray:
    r"""Compute the log-likelihood of each sequence by the forward pass alone.

    Long sequences run in segments.

    Parameters
    ----------
    startprob : array-like of shape (K,)
        The initial distribution.
    transmat : array-like of shape (K, K)
        The transition matrix.
    table : EmissionTable
        The emission probabilities of the data.
    seqs : Sequences
        The layout of the data.

    Returns
    -------
    ndarray of shape (n_sequences,)
        :math:`\log p(x)` of each sequence.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference
    >>> startprob = np.array([0.6, 0.4])
    >>> transmat = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> emissionprob = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    >>> seqs = inference.Sequences.from_lengths([3, 3])
    >>> table = inference.EmissionTable.from_symbols(emissionprob, np.array([0, 0, 1, 2, 2, 2]))
    >>> inference.log_likelihood(startprob, transmat, table, seqs).round(3)
    array([-2.833, -2.798])
    """
    startprob, transmat = _f64(startprob), _f64(transmat)
    loglik = _filter_segments(startprob, np.ascontiguousarray(transmat.T), table,
                              seqs.segments, len(seqs.lengths))
    return loglik + table.offset_per_sequence(seqs)


def filter_states(startprob, transmat, table: EmissionTable,
                  seqs: Sequences) -> tuple[np.ndarray, np.ndarray]:
    r"""Run the forward filter and keep every row.

    ``filtered[t]`` is :math:`p(z_t \mid x_{\le t})` (the normalised :math:`\hat\alpha_t`)
    and ``log_pred[t]`` is :math:`\log p(x_t \mid x_{<t}) = \log c_t` (plus the table's row
    offset), so ``log_pred`` summed over a sequence is its log-likelihood. The same forward
    pass as :func:`log_likelihood`; rows of an impossible sequence from the first impossible
    one on are 0 and ``-inf``.

    Parameters
    ----------
    startprob : array-like of shape (K,)
        The initial distribution.
    transmat : array-like of shape (K, K)
        The transition matrix.
    table : EmissionTable
        The emission probabilities of the data.
    seqs : Sequences
        The layout of the data.

    Returns
    -------
    filtered : ndarray of shape (n_samples, K)
        The filtered posteriors.
    log_pred : ndarray of shape (n_samples,)
        The predictive log-probability of every row.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference
    >>> startprob = np.array([0.6, 0.4])
    >>> transmat = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> emissionprob = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    >>> seqs = inference.Sequences.from_lengths([3, 3])
    >>> table = inference.EmissionTable.from_symbols(emissionprob, np.array([0, 0, 1, 2, 2, 2]))
    >>> filtered, log_pred = inference.filter_states(startprob, transmat, table, seqs)
    >>> filtered[:2].round(2), seqs.per_sequence_sum(log_pred).round(3)
    (array([[0.91, 0.09],
           [0.97, 0.03]]), array([-2.833, -2.798]))
    """
    startprob, transmat = _f64(startprob), _f64(transmat)
    K = len(startprob)
    plan = seqs.segments
    N = seqs.n_samples
    alpha = np.zeros((N + 1, K))
    inv_c = np.zeros(N + 1)
    base = np.where(plan.seq >= 0, plan.lo, N)  # padding lanes write to the spare row N
    _filter_segments(startprob, np.ascontiguousarray(transmat.T), table, plan,
                     len(seqs.lengths), (alpha, base, inv_c))
    inv_c = inv_c[:N]
    with np.errstate(divide="ignore"):
        log_pred = np.where(inv_c > 0, -np.log(inv_c), -np.inf)
    if table.log_offset is not None:
        log_pred += table.log_offset
    return alpha[:N], log_pred


def viterbi(startprob, transmat, table: EmissionTable, seqs: Sequences):
    r"""Find the most probable state path of each sequence.

    Ties go to the lowest state index; an impossible sequence gets ``-inf`` and states -1.

    Parameters
    ----------
    startprob : array-like of shape (K,)
        The initial distribution.
    transmat : array-like of shape (K, K)
        The transition matrix.
    table : EmissionTable
        The emission probabilities of the data.
    seqs : Sequences
        The layout of the data.

    Returns
    -------
    log_prob : ndarray of shape (n_sequences,)
        :math:`\log p(x, z^*)` of each sequence.
    states : ndarray of int64 of shape (n_samples,)
        The paths, laid out like the data.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference
    >>> startprob = np.array([0.6, 0.4])
    >>> transmat = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> emissionprob = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    >>> seqs = inference.Sequences.from_lengths([3, 3])
    >>> table = inference.EmissionTable.from_symbols(emissionprob, np.array([0, 0, 1, 2, 2, 2]))
    >>> log_prob, states = inference.viterbi(startprob, transmat, table, seqs)
    >>> log_prob.round(3), states
    (array([-3.044, -2.895]), array([0, 0, 0, 1, 1, 1]))
    """
    K = len(startprob)
    plan = seqs.segments
    bp_dtype = np.uint8 if K <= 256 else (np.uint16 if K <= 65536 else np.uint32)
    backptr = np.empty((seqs.n_samples, K), dtype=bp_dtype)
    with np.errstate(divide="ignore"):
        log_start = np.log(_f64(startprob))
        log_transmat_t = np.ascontiguousarray(np.log(_f64(transmat)).T)
    log_emis = table.log_emis()
    n = len(plan.first)
    total, snap_lo, snap_end = np.empty(n), np.zeros((n, K)), np.zeros((n, K))
    kernels.viterbi_forward(
        np.stack([log_start, np.zeros(K)]), np.zeros(n, np.bool_), log_transmat_t, log_emis,
        table.idx, plan.first, plan.lo, plan.end, plan.init, plan.chunks, backptr, total,
        snap_lo, snap_end)

    def rerun(l, ref):
        one, from_state = plan.single(l)
        t, s_lo, s_end = np.empty(kernels.LANES), np.zeros((kernels.LANES, K)), np.zeros(
            (kernels.LANES, K))
        kernels.viterbi_forward(
            ref[None, :], from_state, log_transmat_t, log_emis, table.idx, one.first, one.lo,
            one.end, one.init, one.chunks, backptr, t, s_lo, s_end)
        return t[0], s_end[0]

    logprob, last = plan.join(len(seqs.lengths), total, snap_lo, snap_end, np.array_equal,
                              rerun)
    last_state = np.where(logprob > -np.inf, np.argmax(last, axis=1), -1)
    states = np.empty(seqs.n_samples, dtype=np.int64)
    kernels.viterbi_backtrack(seqs.bounds, seqs.chunks, last_state, backptr, states)
    return logprob + table.offset_per_sequence(seqs), states


def sample_posterior(startprob, transmat, table: EmissionTable, seqs: Sequences,
                     rng: np.random.Generator) -> np.ndarray:
    r"""Draw one hidden path of every sequence from :math:`p(z \mid x)` (FFBS).

    Uses one ``rng.random()`` draw per observation; an impossible sequence gets states -1.

    Parameters
    ----------
    startprob : array-like of shape (K,)
        The initial distribution.
    transmat : array-like of shape (K, K)
        The transition matrix.
    table : EmissionTable
        The emission probabilities of the data.
    seqs : Sequences
        The layout of the data.
    rng : numpy.random.Generator
        The generator.

    Returns
    -------
    ndarray of int64 of shape (n_samples,)
        The sampled paths, laid out like the data.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference
    >>> startprob = np.array([0.6, 0.4])
    >>> transmat = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> emissionprob = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    >>> seqs = inference.Sequences.from_lengths([3, 3])
    >>> table = inference.EmissionTable.from_symbols(emissionprob, np.array([0, 0, 1, 2, 2, 2]))
    >>> inference.sample_posterior(startprob, transmat, table, seqs, np.random.default_rng(0))
    array([0, 0, 0, 0, 1, 1])
    """
    startprob, transmat = _f64(startprob), _f64(transmat)
    uniforms = rng.random(seqs.n_samples)
    states = np.empty(seqs.n_samples, dtype=np.int64)
    plan = seqs.lanes
    kernels.sample_posterior_paths(
        startprob, transmat, np.ascontiguousarray(transmat.T), table.emis, table.idx,
        plan.first, plan.end, plan.chunks, uniforms, states)
    return states


def sample_chain(startprob, transmat, n: int, rng: np.random.Generator) -> np.ndarray:
    """Draw a path of ``n`` states of the Markov chain.

    Parameters
    ----------
    startprob : array-like of shape (K,)
        The initial distribution.
    transmat : array-like of shape (K, K)
        The transition matrix.
    n : int
        The length of the path.
    rng : numpy.random.Generator
        The generator.

    Returns
    -------
    ndarray of int64 of shape (n,)
        The states.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.inference import sample_chain
    >>> sample_chain(np.array([1.0, 0.0]), np.array([[0.0, 1.0], [1.0, 0.0]]), 5,
    ...              np.random.default_rng(0))
    array([0, 1, 0, 1, 0])
    """
    states = np.empty(n, dtype=np.int64)
    kernels.sample_states(_f64(startprob), _f64(transmat), rng.random(n), states)
    return states


def sparse_forward_backward(startprob, transitions: Transitions, values,
                            table: EmissionTable, seqs: Sequences,
                            weights: np.ndarray | None = None) -> Posteriors:
    """Compute :func:`forward_backward` over the allowed transitions only.

    See :func:`hiddenstate.kernels.sparse.sparse_forward_backward`.

    Parameters
    ----------
    startprob : array-like of shape (K,)
        The initial distribution.
    transitions : Transitions
        The allowed transitions.
    values : array-like of shape (nnz,)
        The probability of each allowed transition (:meth:`Transitions.gather`).
    table : EmissionTable
        The emission probabilities of the data.
    seqs : Sequences
        The layout of the data.
    weights : ndarray of shape (n_sequences,) or None, default=None
        The weight of each sequence (see :func:`forward_backward`).

    Returns
    -------
    Posteriors
        The statistics; ``trans`` holds the expected count of each stored entry of
        ``transitions`` (``(nnz,)``).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference
    >>> transitions = inference.Transitions.band(4, below=0, above=1)   # left-to-right
    >>> transmat = np.array([[0.9, 0.1, 0, 0], [0, 0.8, 0.2, 0], [0, 0, 0.7, 0.3],
    ...                      [0, 0, 0, 1.0]])
    >>> values = transitions.gather(transmat)
    >>> startprob = np.array([1.0, 0, 0, 0])
    >>> seqs = inference.Sequences.from_lengths([4])
    >>> table = inference.EmissionTable.from_symbols(np.full((4, 3), 1 / 3), np.array([0, 1, 2, 0]))
    >>> posteriors = inference.sparse_forward_backward(startprob, transitions, values, table,
    ...                                                seqs)
    >>> posteriors.trans.shape, float(posteriors.trans.sum().round(6))   # 3 moves
    ((7,), 3.0)
    """
    startprob, values = _f64(startprob), _f64(values)
    K = len(startprob)
    C = seqs.n_chunks
    post_acc, post_dense = _posterior_buffers(table, seqs, C, K)
    start_acc = np.zeros((C, K))
    trans_acc = np.zeros((C, transitions.nnz))
    loglik = np.empty(len(seqs.lengths))
    kernels.sparse_forward_backward(
        startprob, transitions.indptr, transitions.indices, values, table.emis, table.idx,
        seqs.bounds, seqs.chunks, table.by_idx, post_acc, post_dense, start_acc, trans_acc,
        loglik, np.ones(len(seqs.lengths)) if weights is None
        else np.ascontiguousarray(weights, dtype=np.float64))
    return _reduce_chunks(loglik, start_acc, trans_acc, post_acc, post_dense, table, seqs)


def sparse_log_likelihood(startprob, transitions: Transitions, values, table: EmissionTable,
                          seqs: Sequences) -> np.ndarray:
    r"""Compute :func:`log_likelihood` over the allowed transitions only.

    Parameters
    ----------
    startprob : array-like of shape (K,)
        The initial distribution.
    transitions : Transitions
        The allowed transitions.
    values : array-like of shape (nnz,)
        The probability of each allowed transition (:meth:`Transitions.gather`).
    table : EmissionTable
        The emission probabilities of the data.
    seqs : Sequences
        The layout of the data.

    Returns
    -------
    ndarray of shape (n_sequences,)
        :math:`\log p(x)` of each sequence.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference
    >>> transitions = inference.Transitions.band(4, below=0, above=1)   # left-to-right
    >>> transmat = np.array([[0.9, 0.1, 0, 0], [0, 0.8, 0.2, 0], [0, 0, 0.7, 0.3],
    ...                      [0, 0, 0, 1.0]])
    >>> values = transitions.gather(transmat)
    >>> startprob = np.array([1.0, 0, 0, 0])
    >>> seqs = inference.Sequences.from_lengths([4])
    >>> table = inference.EmissionTable.from_symbols(np.full((4, 3), 1 / 3), np.array([0, 1, 2, 0]))
    >>> bool(np.allclose(
    ...     inference.sparse_log_likelihood(startprob, transitions, values, table, seqs),
    ...     inference.log_likelihood(startprob, transmat, table, seqs)))
    True
    """
    loglik = np.empty(len(seqs.lengths))
    kernels.sparse_log_likelihood(
        _f64(startprob), transitions.indptr, transitions.indices, _f64(values), table.emis,
        table.idx, seqs.bounds, seqs.chunks, loglik)
    return loglik + table.offset_per_sequence(seqs)


def sparse_viterbi(startprob, transitions: Transitions, values, table: EmissionTable,
                   seqs: Sequences):
    r"""Compute :func:`viterbi` over the allowed transitions only.

    Parameters
    ----------
    startprob : array-like of shape (K,)
        The initial distribution.
    transitions : Transitions
        The allowed transitions.
    values : array-like of shape (nnz,)
        The probability of each allowed transition (:meth:`Transitions.gather`).
    table : EmissionTable
        The emission probabilities of the data.
    seqs : Sequences
        The layout of the data.

    Returns
    -------
    log_prob : ndarray of shape (n_sequences,)
        :math:`\log p(x, z^*)` of each sequence.
    states : ndarray of int64 of shape (n_samples,)
        The paths.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference
    >>> transitions = inference.Transitions.band(4, below=0, above=1)   # left-to-right
    >>> transmat = np.array([[0.9, 0.1, 0, 0], [0, 0.8, 0.2, 0], [0, 0, 0.7, 0.3],
    ...                      [0, 0, 0, 1.0]])
    >>> values = transitions.gather(transmat)
    >>> startprob = np.array([1.0, 0, 0, 0])
    >>> seqs = inference.Sequences.from_lengths([4])
    >>> table = inference.EmissionTable.from_symbols(np.full((4, 3), 1 / 3), np.array([0, 1, 2, 0]))
    >>> inference.sparse_viterbi(startprob, transitions, values, table, seqs)[1]
    array([0, 0, 0, 0])
    """
    K = len(startprob)
    with np.errstate(divide="ignore"):
        log_start, log_values = np.log(_f64(startprob)), np.log(_f64(values))
    backptr = np.empty((seqs.n_samples, K), dtype=np.int32 if K < 2**31 else np.int64)
    logprob = np.empty(len(seqs.lengths))
    states = np.empty(seqs.n_samples, dtype=np.int64)
    kernels.sparse_viterbi(
        log_start, transitions.indptr, transitions.indices, log_values, table.log_emis(),
        table.idx, seqs.bounds, seqs.chunks, backptr, logprob, states)
    return logprob + table.offset_per_sequence(seqs), states


def kbest(startprob, transmat, table: EmissionTable, seqs: Sequences, k: int):
    r"""Find the ``k`` most probable state paths of each sequence.

    Parameters
    ----------
    startprob : array-like of shape (K,)
        The initial distribution.
    transmat : array-like of shape (K, K)
        The transition matrix.
    table : EmissionTable
        The emission probabilities of the data.
    seqs : Sequences
        The layout of the data.
    k : int
        The number of paths.

    Returns
    -------
    log_prob : ndarray of shape (n_sequences, k)
        :math:`\log p(x, z_r)` in decreasing order (``-inf`` where fewer than ``k`` paths
        exist).
    paths : ndarray of int64 of shape (k, n_samples)
        The paths laid out like the data (state -1 where fewer than ``k`` paths exist).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference
    >>> startprob = np.array([0.6, 0.4])
    >>> transmat = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> emissionprob = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    >>> seqs = inference.Sequences.from_lengths([3, 3])
    >>> table = inference.EmissionTable.from_symbols(emissionprob, np.array([0, 0, 1, 2, 2, 2]))
    >>> log_prob, paths = inference.kbest(startprob, transmat, table, seqs, 2)
    >>> log_prob.round(3)
    array([[-3.044, -4.836],
           [-2.895, -6.073]])
    >>> paths
    array([[0, 0, 0, 1, 1, 1],
           [0, 0, 1, 1, 1, 0]])
    """
    logprob = np.empty((len(seqs.lengths), k))
    paths = np.empty((k, seqs.n_samples), dtype=np.int64)
    with np.errstate(divide="ignore"):
        kernels.kbest_paths(np.log(startprob), np.log(transmat), table.log_emis(), table.idx,
                            seqs.bounds, seqs.chunks, seqs.max_len, k, logprob, paths)
    return logprob + table.offset_per_sequence(seqs)[:, None], paths


# -- memory -------------------------------------------------------------------------------------
_F64 = 8  # bytes of a float64 / int64


def _running(n_chunks: int) -> int:
    """Chunks that may hold their scratch at the same time (one per thread of a call,
    :func:`hiddenstate.threads.get_num_threads`)."""
    return max(1, min(n_chunks, threads.get_num_threads()))


def memory_estimate(op: str, K: int, seqs: Sequences, table_rows: int, by_idx: bool,
                    k: int = 1, n_transitions: int | None = None) -> dict[str, float]:
    """Estimate the bytes an inference function allocates.

    For ``K`` states and the layout ``seqs``, with an emission table of ``table_rows`` rows
    (shared by observations if ``by_idx``; the table itself is not counted). Split into the
    share that grows with the number of states (``"n_states"``: ``K**2`` matrices, per-chunk
    ``K**2`` scratch, tables over the alphabet) and the share that grows with the data
    (``"X"``: per-row arrays). The model follows the allocations of the functions above and
    of their kernels (lane scratch of ``(K, 8)`` and, for the backward pass, ``(K, K, 8)``
    per running chunk). Measured peak resident memory was within about 10% of it for
    K = 3000 or N = 2e6 (2 threads); ``tests/test_trust_params.py`` checks the NumPy share
    against ``tracemalloc``.

    Parameters
    ----------
    op : {"log_likelihood", "filter", "forward_backward", "viterbi", "sample_posterior", "kbest"}
        The inference function.
    K : int
        The number of states.
    seqs : Sequences
        The layout of the data.
    table_rows : int
        The rows of the emission table.
    by_idx : bool
        The table's rows are shared by observations.
    k : int, default=1
        The number of paths (``"kbest"``).
    n_transitions : int or None, default=None
        The allowed transitions of a structured model (the sparse kernels); None: dense.

    Returns
    -------
    dict of str to float
        ``{"n_states": bytes, "X": bytes}``.

    Examples
    --------
    >>> from hiddenstate.inference import Sequences, memory_estimate
    >>> seqs = Sequences.from_lengths([1000])
    >>> small = memory_estimate("viterbi", 10, seqs, 10, True)
    >>> large = memory_estimate("viterbi", 1000, seqs, 10, True)
    >>> bool(large["n_states"] > 1000 * small["n_states"])   # K**2 matrices
    True
    """
    F = _F64
    N = seqs.n_samples
    if n_transitions is not None and op in ("log_likelihood", "forward_backward", "viterbi"):
        # the sparse kernels (``n_transitions`` allowed entries): per-chunk counts, the
        # values, alpha and the posteriors (forward-backward) or back-pointers (Viterbi),
        # and the dense (K, K) transmat_ the model keeps
        C = seqs.n_chunks
        states = (C + 3.0) * n_transitions * F + K * K * F
        rows = {"log_likelihood": 0.0, "forward_backward": 2.0 * N * K * F,
                "viterbi": N * K * (4.0 + F)}[op]
        if op == "forward_backward" and by_idx:
            states += (C + 1) * table_rows * K * F
        return {"n_states": states, "X": rows}
    states, rows = 1.0 * K * K * F, 0.0  # transmat_t, or log(transmat)
    if op in ("log_likelihood", "filter", "viterbi"):
        plan = seqs.segments
        L = len(plan.first)
        rows += L * (1 + 2 * K) * F  # per-entry totals and snapshots
        states += _running(plan.n_chunks) * 4 * K * _LANE_BYTES
        if op == "filter":
            rows += (N + 1) * (K + 4) * F  # alpha, 1/c, log_pred and its temporaries
        elif op == "viterbi":
            states += K * K * F  # its transpose
            bp = 1 if K <= 256 else (2 if K <= 65536 else 4)
            rows += N * (K * bp + F)
            log_emis = table_rows * K * F
            if by_idx:
                states += log_emis
            else:
                rows += log_emis
    elif op in ("forward_backward", "sample_posterior"):
        plans = ([seqs.lanes] if op == "sample_posterior"
                 else [seqs.short_lanes, seqs.long_segments])
        C = sum(p.n_chunks for p in plans)
        P = _running(C)
        # the alpha of the chunks that run at once (one lane per sequence)
        lanes = plans[0]
        rows += lanes.rows * K * F * min(1.0, P / max(lanes.n_chunks, 1))
        if op == "sample_posterior":
            rows += 2 * N * F
            states += P * 4 * K * _LANE_BYTES
        else:
            states += C * (K * K + K) * F + K * K * F  # accumulators, reduction
            states += P * (K * K + 8 * K) * _LANE_BYTES  # backward lane scratch
            if by_idx:
                states += (C + 1) * table_rows * K * F
            else:
                rows += N * K * F
            long = seqs.long_segments
            if long.n_chunks:
                rows += (long.rows + 1) * (K + 1) * F + 4 * len(long.first) * K * F
    elif op == "kbest":
        plan_chunks = seqs.n_chunks
        rows += _running(plan_chunks) * seqs.max_len * K * k * F + (k + 1) * N * F
        log_emis = table_rows * K * F
        if by_idx:
            states += log_emis
        else:
            rows += log_emis
    else:
        raise ValueError(f"op: unknown inference function {op!r}")
    return {"n_states": states, "X": rows}

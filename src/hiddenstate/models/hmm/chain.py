"""The hidden Markov chain of an HMM: its allowed transitions (``topology``, ``bandwidth``,
``transmat_mask``) and :class:`Chain`, which runs inference with the dense kernels or, when
few transitions are allowed, the sparse ones (:mod:`hiddenstate.kernels.sparse`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import inference
from ..._validation import check_choice, check_positive_int
from ...errors import InvalidInputError
from ...inference import Transitions

#: allowed transitions per K**2 below which a structured model runs the sparse kernels
#: (benchmarks/bench_structured.py: the dense lockstep kernels win above about this)
SPARSE_DENSITY = 0.25
TOPOLOGIES = ("full", "left-right", "banded")


def runs_sparse(transitions: Transitions | None, n_states: int) -> bool:
    """Whether a chain with these allowed transitions runs the sparse kernels (at most
    :data:`SPARSE_DENSITY` of the ``n_states**2`` entries allowed)."""
    return transitions is not None and transitions.nnz <= SPARSE_DENSITY * n_states**2


def allowed_transitions(n_states, topology="full", bandwidth=None,
                        transmat_mask=None) -> Transitions | None:
    """The allowed transitions of a structured model, or None when every transition is
    allowed; the three hyper-parameters are checked here (errors name them)."""
    K = check_positive_int(n_states, "n_states")
    topology = check_choice(topology, "topology", TOPOLOGIES)
    bw, mask = bandwidth, transmat_mask
    if bw is not None:
        check_positive_int(bw, "bandwidth", minimum=0)
    if topology == "banded" and bw is None:
        raise InvalidInputError(
            "bandwidth: topology='banded' needs bandwidth (state i moves to the states "
            "i - bandwidth .. i + bandwidth); pass e.g. bandwidth=1")
    if topology == "full" and bw is not None:
        raise InvalidInputError(
            "bandwidth: only used with topology='banded' or 'left-right'")
    if topology == "full":
        transitions = None
    elif topology == "banded":
        transitions = Transitions.band(K, bw, bw)
    else:
        transitions = Transitions.band(K, 0, K - 1 if bw is None else bw)
    if mask is None:
        return transitions
    mask = np.asarray(mask)
    if mask.shape != (K, K) or mask.dtype != np.bool_:
        raise InvalidInputError(
            f"transmat_mask: expected a boolean array of shape {(K, K)}, got "
            f"{mask.dtype} {mask.shape}")
    if transitions is not None:
        mask = mask & transitions.mask()
    empty = np.flatnonzero(~mask.any(axis=1))
    if len(empty):
        raise InvalidInputError(
            f"transmat_mask: state {empty[0]} has no allowed transition (with "
            f"topology={topology!r}); every row needs at least one True entry")
    return Transitions.from_mask(mask)


def transitions_of(model) -> Transitions | None:
    """:func:`allowed_transitions` of ``model``'s hyper-parameters (subclasses with their
    own constructor, PROPS and the hmmlearn classes, have none: unstructured)."""
    return allowed_transitions(model.n_states, getattr(model, "topology", "full"),
                               getattr(model, "bandwidth", None),
                               getattr(model, "transmat_mask", None))


def check_structure(transmat: np.ndarray, transitions: Transitions | None,
                    name: str = "transmat_") -> np.ndarray | None:
    """The allowed entries of a (valid, row-stochastic) ``transmat``, after checking that it
    puts no probability elsewhere; None for an unstructured model."""
    if transitions is None:
        return None
    values = transitions.gather(transmat)
    outside = 1.0 - transitions.row_sums(values)
    bad = np.flatnonzero(outside > 1e-8)
    if len(bad):
        raise InvalidInputError(
            f"{name}: row {bad[0]} puts probability {outside[bad[0]]:.3g} on transitions "
            "that topology / transmat_mask do not allow; set those entries to 0")
    return values


@dataclass
class Chain:
    """The Markov chain as inference sees it: ``startprob`` and either a dense ``transmat``
    or, for a structured model, its allowed ``transitions`` with one value per entry
    (``values``; ``transmat`` may also be set). Chooses the sparse kernels
    (:mod:`hiddenstate.kernels.sparse`) when few transitions are allowed."""

    startprob: np.ndarray
    transmat: np.ndarray | None
    transitions: Transitions | None = None
    values: np.ndarray | None = None

    @classmethod
    def of(cls, startprob, transmat, transitions: Transitions | None) -> Chain:
        """The chain of dense parameters (structured: their allowed entries)."""
        if transitions is None:
            return cls(startprob, transmat)
        return cls(startprob, transmat, transitions, transitions.gather(transmat))

    @property
    def sparse(self) -> bool:
        return runs_sparse(self.transitions, len(self.startprob))

    def successors(self):
        """What :func:`inference.state_supports` follows."""
        if self.transitions is None:
            return self.transmat
        return self.transitions.successors(self.values)

    def dense(self) -> np.ndarray:
        return self.transmat if self.transmat is not None else self.transitions.dense(
            self.values)

    def log_likelihood(self, table, seqs):
        if self.sparse:
            return inference.sparse_log_likelihood(self.startprob, self.transitions,
                                                   self.values, table, seqs)
        return inference.log_likelihood(self.startprob, self.dense(), table, seqs)

    def forward_backward(self, table, seqs, weights=None):
        """Posteriors; ``trans`` per allowed entry for a structured model; every statistic
        of sequence ``s`` times ``weights[s]`` (None: 1)."""
        if self.sparse:
            return inference.sparse_forward_backward(self.startprob, self.transitions,
                                                     self.values, table, seqs, weights)
        post = inference.forward_backward(self.startprob, self.dense(), table, seqs, weights)
        if self.transitions is not None:
            post.trans = self.transitions.gather(post.trans)
        return post

    def viterbi(self, table, seqs):
        if self.sparse:
            return inference.sparse_viterbi(self.startprob, self.transitions, self.values,
                                            table, seqs)
        return inference.viterbi(self.startprob, self.dense(), table, seqs)

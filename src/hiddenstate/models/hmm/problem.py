"""The HMM as the generic batch learner sees it (a :class:`~hiddenstate.learn.batch.Problem`:
blocks ``startprob``, ``transmat``, ``emission`` and the two inference routines), and the
error for data of probability zero."""

from __future__ import annotations

import numpy as np

from ... import inference
from ...families import DirichletRows
from ...families.dirichlet import SparseDirichletRows
from ...inference import Sequences, Transitions
from ...kernels import path_counts
from ...learn import check_possible as learn_check_possible
from ...learn import kbest_weights
from .chain import Chain
from .sampling import HMMSampling
from .weights import SampleWeights


class HMMProblem(HMMSampling):
    """The HMM as the generic learner sees it: blocks ``startprob``, ``transmat``,
    ``emission`` and the inference routines (see :mod:`hiddenstate.learn.batch`; Gibbs
    sampling's ``sample_counts`` and ``state_groups``: :class:`~.sampling.HMMSampling`)."""

    def __init__(self, family, X, seqs: Sequences, startprob_prior, transmat_prior,
                 states: np.ndarray | None = None, transitions: Transitions | None = None,
                 weights: SampleWeights | None = None, fixed: dict | None = None):
        self.family = family
        self.X = X
        self.seqs = seqs
        self.states = states  # partial state labels (-1: unknown), or None
        # a structured model's transmat block holds its allowed entries only
        self.transitions = transitions
        # fixed entries of the chain (see .fixed): {"startprob": ..., "transmat": ...}
        fixed = fixed or {}
        trans_block = (DirichletRows("transmat", "t", transmat_prior, fixed.get("transmat"))
                       if transitions is None
                       else SparseDirichletRows("transmat", "t", transmat_prior, transitions,
                                                fixed.get("transmat")))
        self.blocks = {"startprob": DirichletRows("startprob", "s", startprob_prior,
                                                  fixed.get("startprob")),
                       "transmat": trans_block,
                       "emission": family}
        self.letters = {"startprob": "s", "transmat": "t",
                        "emission": "".join(family.letters)}
        n = len(X) / family.n_states
        self.n_virtual = {"startprob": len(seqs.lengths), "transmat": n, "emission": n}
        self.n_observations = len(X)  # time steps (weighted: their total weight)
        # sample weights (see .weights): None, or the sequences' and observations' weights
        self.weights = weights
        if weights is not None:
            self.n_virtual = weights.n_virtual(seqs, family.n_states)
            # integer weights are repeated data: the stop rule counts the repeats
            self.n_observations = float(weights.row_weights(seqs).sum())

    def _chain(self, views) -> Chain:
        if self.transitions is None:
            return Chain(views["startprob"], views["transmat"])
        return Chain(views["startprob"], None, self.transitions, views["transmat"])

    def _table(self, views) -> tuple[inference.EmissionTable, np.ndarray | None]:
        """The emission table, clamped at the labelled steps (and the clamped table's
        ``fold``, see :func:`inference.clamp_states`); with sample weights, weighted and
        then clamped (``fold``: see :meth:`.weights.SampleWeights.table`)."""
        table = inference.emission_table(self.family, views["emission"], self.X,
                                         views["startprob"], self._chain(views).successors(),
                                         self.seqs)
        clamp = None
        if self.states is not None:
            obs = None if self.weights is None else self.weights.observation

            def clamp(table):
                def loglik(rows):
                    out = self.family.log_likelihood(views["emission"], self.X[rows])
                    return out if obs is None else np.where(
                        obs[rows, None] > 0, obs[rows, None] * out, 0.0)
                return inference.clamp_states(table, self.states, loglik)
        if self.weights is not None:
            return self.weights.table(table, clamp)
        return (table, None) if clamp is None else clamp(table)

    def _stats(self, start, trans, post, views, fold, X=None):
        post = (inference.fold_rows(post, fold) if self.weights is None
                else self.weights.posteriors(post, fold))
        return {"startprob": start, "transmat": trans,
                "emission": self.family.statistics_at(views["emission"],
                                                      self.X if X is None else X, post)}

    def check_paths(self, loglik) -> None:
        """The zero-probability rule while learning (:func:`check_possible`)."""
        check_possible(loglik, labelled=self.states is not None)

    def _total(self, loglik) -> float:
        """The objective's data term: the (weighted) sum over the sequences."""
        live = loglik if self.weights is None else self.weights.live(loglik)
        check_possible(live, labelled=self.states is not None)
        return float(loglik.sum()) if self.weights is None else self.weights.total(loglik)

    def expected_counts(self, views):
        table, fold = self._table(views)
        seq_w = None if self.weights is None else self.weights.sequence
        post = self._chain(views).forward_backward(table, self.seqs, seq_w)
        value = self._total(post.loglik)
        return value, self._stats(post.start, post.trans, post.post, views, fold)

    def path_counts(self, views, k):
        table, fold = self._table(views)
        chain = self._chain(views)
        if k == 1:
            logp, states = chain.viterbi(table, self.seqs)
            value = self._total(logp)
            paths, weights = states[None], np.ones((len(logp), 1))
        else:
            logp, paths = inference.kbest(views["startprob"], chain.dense(), table,
                                          self.seqs, k)
            self._total(logp[:, 0])
            weights, log_mass = kbest_weights(logp)
            value = self._total(log_mass)
        if self.weights is not None:
            weights = self.weights.path_weights(weights)
        return value, self.hard_stats(table, fold, paths, weights, views), paths

    def hard_stats(self, table, fold, paths, weights, views, X=None) -> dict:
        """The statistics per block of weighted paths ``(r, n)`` (weights ``(n_seqs, r)``):
        Viterbi training's and Gibbs sampling's counts (``X``: the observations with their
        missing entries drawn, default ``self.X``)."""
        X = self.X if X is None else X
        K = self.family.n_states
        rows = table.idx if table.by_idx else np.arange(len(X), dtype=np.int64)
        post = np.zeros((table.emis.shape[0] if table.by_idx else len(self.X), K))
        if self.transitions is None:
            start, trans = np.zeros(K), np.zeros((K, K))
            path_counts(paths, weights, rows, self.seqs.bounds, start, trans, post)
        else:
            start, trans = self._structured_path_counts(paths, weights, rows, post)
        return self._stats(start, trans, post, views, fold, X)

    def _structured_path_counts(self, paths, weights, rows, post):
        """:func:`~hiddenstate.kernels.path_counts` with the transition counts per allowed
        entry (``(nnz,)``): no ``(K, K)`` array."""
        K = self.family.n_states
        bounds = self.seqs.bounds
        seq_of = np.repeat(np.arange(len(self.seqs.lengths)), self.seqs.lengths)
        start, trans = np.zeros(K), np.zeros(self.transitions.nnz)
        inner = np.ones(len(rows), dtype=bool)
        inner[bounds[:-1]] = False
        t = np.flatnonzero(inner)
        for r in range(paths.shape[0]):
            w = weights[seq_of, r]
            ok = paths[r] >= 0
            np.add.at(start, paths[r][bounds[:-1]][ok[bounds[:-1]]],
                      w[bounds[:-1]][ok[bounds[:-1]]])
            tt = t[ok[t]]
            np.add.at(trans, self.transitions.position(paths[r][tt - 1], paths[r][tt]), w[tt])
            np.add.at(post, (rows[ok], paths[r][ok]), w[ok])
        return start, trans


def check_possible(loglik: np.ndarray, fitting: bool = True, labelled: bool = False,
                   use: str = "state path or posterior") -> None:
    """The zero-probability rule (:func:`hiddenstate.learn.check_possible`) for sequences:
    a :class:`ZeroProbabilityError` naming the sequences whose log-likelihood is ``-inf``
    (``fitting``: while learning; otherwise for a method that needs their ``use``;
    ``labelled``: with state labels)."""
    if labelled:
        learn_check_possible(
            loglik, "sequence", "a labelled state that cannot emit its observation, or two "
            "consecutive labels joined by a zero transition", "check the labels, or start "
            "from parameters that allow them (init_params)", argument="states",
            given="given its state labels under the current parameters")
    elif fitting:
        learn_check_possible(
            loglik, "sequence", "an observation no reachable state can emit",
            "check the data or use init_params to start from parameters that allow it")
    else:
        learn_check_possible(
            loglik, "sequence", "an observation that no reachable state can emit",
            "Check the data, or the parameters (zeros in startprob_, transmat_ or the "
            "emission parameters)", use=use)



def drawn_path_loglik(states: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """0 for each sequence whose drawn path is a path, -inf where the draw holds a negative
    state (the samplers' mark for "no path has positive probability"): what a model's
    zero-probability check reads after ``sample_posterior``; ``bounds`` are the sequences'
    first rows and the end."""
    impossible = np.add.reduceat((states < 0).astype(np.int64), bounds[:-1]) > 0
    return np.where(impossible, -np.inf, 0.0)

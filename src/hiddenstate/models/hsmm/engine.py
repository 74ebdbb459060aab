"""How an :class:`~hiddenstate.HSMM` runs inference on given parameters: the segment
recursion (:mod:`hiddenstate.segments`), or for phase-type durations (negative binomial,
geometric) the ordinary HMM over their phases (:func:`hiddenstate.segments.expand_phases`,
:mod:`hiddenstate.inference`'s kernels), whichever costs less for the size at hand. The two
give the same numbers whenever no sequence is longer than ``max_duration`` (the phases never
truncate a duration); with a longer sequence only the segment recursion runs, and it counts
the segmentations whose segments are at most ``max_duration`` long.

What each engine can do: the segment recursion everything; the phases the likelihood, the
filter, the posteriors and posterior samples, and for geometric durations (one phase per
state: the HMM itself) also the Viterbi path and the statistics of learning.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import inference, segments
from ...errors import InvalidInputError
from ...inference import EmissionTable, Sequences
from ...segments import SegmentChain, SegmentPosteriors

ENGINES = ("auto", "segments", "phases")
#: phase-HMM cost (M**2 per row) relative to the segment recursion's K (D + K) per row at
#: which "auto" still takes the phases (benchmarks/bench_hsmm.py)
PHASE_COST = 2.0


@dataclass
class Runner:
    """The parameters of an HSMM (or their variational views) ready for one of the engines.

    Parameters
    ----------
    startprob : ndarray of shape (K,)
        The initial distribution.
    transmat : ndarray of shape (K, K)
        The transitions between segments (zero diagonal).
    dfamily : hiddenstate.families.durations.DurationFamily
        The duration family.
    dparams : dict
        Its parameters (or view).
    phases : hiddenstate.segments.PhaseChain or None
        The phase HMM, when that engine runs.
    """

    startprob: np.ndarray
    transmat: np.ndarray
    dfamily: object
    dparams: dict
    phases: segments.PhaseChain | None = None

    @classmethod
    def build(cls, startprob, transmat, dfamily, dparams, engine: str, seqs: Sequences,
              need: str = "any") -> Runner:
        """Choose the engine for data of layout ``seqs``.

        Parameters
        ----------
        startprob, transmat : ndarray
            The chain's parameters (dense ``transmat``).
        dfamily : DurationFamily
            The duration family.
        dparams : dict
            Its parameters.
        engine : {"auto", "segments", "phases"}
            The user's choice.
        seqs : hiddenstate.inference.Sequences
            The layout of the data.
        need : {"any", "viterbi", "learn"}
            What will be asked: the phases of a negative-binomial duration cannot decode
            (a segmentation has many phase paths) or learn (the statistics are durations).

        Returns
        -------
        Runner
            The runner.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``engine="phases"`` cannot run here (the durations, the request or a sequence
            longer than ``max_duration``); the message names ``engine``.
        """
        run = cls(np.asarray(startprob, dtype=np.float64),
                  np.asarray(transmat, dtype=np.float64), dfamily, dparams)
        why = run._no_phases(need, seqs)
        if engine == "phases" and why:
            raise InvalidInputError(f"engine: 'phases' cannot run here: {why}; use "
                                    "engine='segments' or 'auto'")
        if engine == "segments" or why:
            return run
        M = run._n_phases()
        K, D = len(run.startprob), min(dfamily.max_duration, seqs.max_len)
        if engine == "phases" or M * M <= PHASE_COST * K * (D + K):
            run.phases = run._phase_chain()
        return run

    def _no_phases(self, need: str, seqs: Sequences) -> str:
        f = self.dfamily
        if not f.expandable:
            return f"{type(f).__name__} are not phase-type durations"
        if need == "viterbi" and not f.learns_by_expansion:
            return ("the best segmentation of negative-binomial durations is not the best "
                    "path over their phases")
        if need == "learn" and not f.learns_by_expansion:
            return "learning negative-binomial durations needs the durations' statistics"
        if seqs.max_len > f.max_duration:
            return (f"a sequence of {seqs.max_len} steps is longer than max_duration="
                    f"{f.max_duration}, which the phases would not enforce")
        return ""

    def _n_phases(self) -> int:
        if "duration_shapes" in self.dparams:
            return int(np.sum(self.dparams["duration_shapes"]))
        return len(self.startprob)

    def _phase_chain(self) -> segments.PhaseChain:
        if "duration_shapes" in self.dparams:
            return segments.expand_phases(self.startprob, self.transmat,
                                          self.dparams["duration_shapes"],
                                          self.dparams["duration_probs"])
        rho, haz = self.dfamily.chain_factors(self.dparams)  # geometric: constant factors
        K = len(self.startprob)
        T = np.diag(rho[:, 1] if rho.shape[1] > 1 else 1.0 - haz[:, 0]) \
            + haz[:, :1] * self.transmat
        idx = np.arange(K, dtype=np.int64)
        return segments.PhaseChain(self.startprob, T, idx, idx)

    @property
    def chain(self) -> SegmentChain:
        """The parameters for the segment recursion."""
        rho, haz = self.dfamily.chain_factors(self.dparams)
        return SegmentChain.from_factors(self.startprob, self.transmat, rho, haz)

    # -- the queries ---------------------------------------------------------------------------
    def log_likelihood(self, table: EmissionTable, seqs: Sequences) -> np.ndarray:
        """log p(x) per sequence."""
        if self.phases is None:
            return segments.log_likelihood(self.chain, table, seqs)
        ph = self.phases
        return inference.log_likelihood(ph.startprob, ph.transmat, ph.table(table), seqs)

    def filter_states(self, table: EmissionTable, seqs: Sequences):
        """``(filtered (N, K), log_pred (N,))``."""
        if self.phases is None:
            return segments.filter_states(self.chain, table, seqs)
        ph = self.phases
        filtered, log_pred = inference.filter_states(ph.startprob, ph.transmat,
                                                     ph.table(table), seqs)
        return ph.states(filtered), log_pred

    def posteriors(self, table: EmissionTable, seqs: Sequences, starts: bool = False
                   ) -> tuple[SegmentPosteriors, dict | None]:
        """The posteriors (per row, ``post`` of shape (N, K)) and, from the phases of
        geometric durations, the durations' statistics (else None: they come from
        ``complete`` and ``censored``)."""
        if self.phases is None or starts:
            return segments.posteriors(self.chain, table, seqs, starts), None
        ph = self.phases
        t = ph.table(table)
        if t.by_idx:
            t = EmissionTable(t.emis, t.idx, t.log_offset, False)
        out = inference.forward_backward(ph.startprob, ph.transmat, t, seqs)
        K = len(self.startprob)
        stats = None
        trans = out.trans
        if len(ph.owner) == K:  # geometric: the HMM itself
            stays = np.diag(trans).copy()
            between = trans - np.diag(stays)
            stats = {"ends": between.sum(axis=1), "stays": stays}
            trans = between
        else:
            moves = np.zeros((K, K))
            np.add.at(moves, (ph.owner[:, None], ph.owner[None, :]), trans)
            trans = moves - np.diag(np.diag(moves))
        start = out.start[ph.first]
        return SegmentPosteriors(out.loglik, start, trans, ph.states(out.post), None,
                                 None), stats

    def best_paths(self, table: EmissionTable, seqs: Sequences, k: int = 1):
        """``(logprob (S, k), paths (k, N))``."""
        if self.phases is None or k > 1:
            return segments.best_paths(self.chain, table, seqs, k)
        ph = self.phases
        logprob, states = inference.viterbi(ph.startprob, ph.transmat, ph.table(table), seqs)
        return logprob[:, None], np.where(states >= 0, ph.owner[np.maximum(states, 0)],
                                          -1)[None]

    def sample_posterior(self, table: EmissionTable, seqs: Sequences,
                         rng: np.random.Generator) -> np.ndarray:
        """One posterior segmentation per sequence (states; -1 for an impossible one)."""
        if self.phases is None:
            return segments.sample_posterior(self.chain, table, seqs, rng)
        ph = self.phases
        states = inference.sample_posterior(ph.startprob, ph.transmat, ph.table(table), seqs,
                                            rng)
        return np.where(states >= 0, ph.owner[np.maximum(states, 0)], -1)


def path_counts(paths: np.ndarray, weights: np.ndarray, seqs: Sequences, K: int, D: int,
                rows: np.ndarray, n_rows: int):
    """The counts along weighted segmentations (Viterbi training: one path of weight 1).

    Parameters
    ----------
    paths : ndarray of int of shape (P, N)
        The states of each path (-1: no path).
    weights : ndarray of shape (n_sequences, P)
        The weight of each path of each sequence.
    seqs : hiddenstate.inference.Sequences
        The layout.
    K, D : int
        The number of states and the longest duration.
    rows : ndarray of int64 of shape (N,)
        The row of the posterior array of each observation (the table's ``idx`` for a shared
        table, else ``arange(N)``).
    n_rows : int
        The rows of the posterior array.

    Returns
    -------
    start : ndarray of shape (K,)
    trans : ndarray of shape (K, K)
    post : ndarray of shape (n_rows, K)
    complete, censored : ndarray of shape (K, D)
        The segments by duration (the last of a sequence: by observed length).
    """
    N = seqs.n_samples
    bounds = seqs.bounds
    seq_of = np.repeat(np.arange(len(seqs.lengths)), seqs.lengths)
    start, trans = np.zeros(K), np.zeros((K, K))
    post = np.zeros((n_rows, K))
    complete, censored = np.zeros((K, D)), np.zeros((K, D))
    first = np.zeros(N, dtype=bool)
    first[bounds[:-1]] = True
    last = np.zeros(N, dtype=bool)
    last[bounds[1:] - 1] = True
    for p in range(paths.shape[0]):
        z = paths[p]
        w = weights[seq_of, p]
        ok = (z >= 0) & (w > 0)
        if not ok.any():
            continue
        np.add.at(post, (rows[ok], z[ok]), w[ok])
        new = first.copy()
        new[1:] |= z[1:] != z[:-1]
        begin = np.flatnonzero(new & ok)
        end = np.flatnonzero(np.concatenate((new[1:], [True])) & ok)
        length = end - begin + 1
        state = z[begin]
        wt = w[begin]
        np.add.at(start, state[first[begin]], wt[first[begin]])
        cens = last[end]
        np.add.at(complete, (state[~cens], length[~cens] - 1), wt[~cens])
        np.add.at(censored, (state[cens], length[cens] - 1), wt[cens])
        nxt = ~cens
        np.add.at(trans, (state[nxt], z[end[nxt] + 1]), wt[nxt])
    return start, trans, post, complete, censored

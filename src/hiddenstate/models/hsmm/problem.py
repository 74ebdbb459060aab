"""The HSMM as the generic batch learner sees it: a :class:`~hiddenstate.learn.batch.Problem`
with the blocks ``startprob``, ``transmat`` (the transitions between segments: its
off-diagonal entries only, so the diagonal stays exactly zero in every mode), ``emission``
(the HMM's emission family, unchanged) and ``durations`` (a duration family of
:mod:`hiddenstate.families.durations`), and the two inference routines."""

from __future__ import annotations

import numpy as np

from ... import inference
from ...families import DirichletRows
from ...families.dirichlet import SparseDirichletRows
from ...inference import Sequences, Transitions
from ...learn import check_possible as learn_check_possible
from ...learn import kbest_weights
from ..hmm.problem import drawn_path_loglik
from .engine import Runner, path_counts


def between_states(K: int) -> Transitions:
    """The allowed transitions between segments: every pair of distinct states."""
    return Transitions.from_mask(~np.eye(K, dtype=bool))


def check_possible(loglik: np.ndarray, fitting: bool = True, labelled: bool = False,
                   use: str = "state path or posterior") -> None:
    """The zero-probability rule for the sequences of an HSMM (see
    :func:`hiddenstate.learn.check_possible`), naming the causes an HSMM adds: durations of
    probability zero and ``max_duration``."""
    if labelled:
        learn_check_possible(
            loglik, "sequence", "a labelled state that cannot emit its observation, a "
            "labelled run longer than max_duration or of a duration of probability zero, or "
            "two consecutive labelled segments joined by a zero transition",
            "check the labels, raise max_duration, or start from parameters that allow them "
            "(init_params)", argument="states",
            given="given its state labels under the current parameters")
    elif fitting:
        learn_check_possible(
            loglik, "sequence", "an observation no reachable state can emit",
            "check the data or use init_params to start from parameters that allow it")
    else:
        learn_check_possible(
            loglik, "sequence", "an observation no reachable state can emit, or no "
            "segmentation into segments of at most max_duration steps of durations of "
            "non-zero probability",
            "Check the data, or the parameters (zeros in startprob_, transmat_, the duration "
            "or the emission parameters; max_duration)", use=use)


def fold_by_row(post: np.ndarray, table: inference.EmissionTable) -> np.ndarray:
    """Per-observation posteriors summed by row of a shared (``by_idx``) table."""
    if not table.by_idx:
        return post
    out = np.empty((table.emis.shape[0], post.shape[1]))
    for j in range(post.shape[1]):
        out[:, j] = np.bincount(table.idx, weights=post[:, j], minlength=len(out))
    return out


class HSMMProblem:
    """The HSMM as the generic learner sees it (see :mod:`hiddenstate.learn.batch`).

    Parameters
    ----------
    family : hiddenstate.families.EmissionFamily
        The emission family.
    dfamily : hiddenstate.families.durations.DurationFamily
        The duration family (its ``max_duration`` is the model's).
    X : ndarray
        The validated observations.
    seqs : hiddenstate.inference.Sequences
        Their layout.
    startprob_prior, transmat_prior : float or array-like
        The Dirichlet priors in force.
    engine : {"auto", "segments", "phases"}
        See :class:`hiddenstate.HSMM`.
    states : ndarray of int or None, default=None
        Partial state labels (-1: unknown).
    """

    def __init__(self, family, dfamily, X, seqs: Sequences, startprob_prior, transmat_prior,
                 engine: str = "auto", states: np.ndarray | None = None):
        K = family.n_states
        self.family = family
        self.dfamily = dfamily
        self.X = X
        self.seqs = seqs
        self.states = states
        self.engine = engine
        self.transitions = between_states(K)
        self.blocks = {"startprob": DirichletRows("startprob", "s", startprob_prior),
                       "transmat": SparseDirichletRows("transmat", "t", transmat_prior,
                                                       self.transitions),
                       "emission": family,
                       "durations": dfamily}
        self.letters = {"startprob": "s", "transmat": "t",
                        "emission": "".join(family.letters), "durations": "d"}
        self.n_observations = len(X)  # time steps: the unit of the stop rule's tol
        n = len(X) / K
        self.n_virtual = {"startprob": len(seqs.lengths), "transmat": n, "emission": n,
                          "durations": n}

    def dense_transmat(self, transmat) -> np.ndarray:
        """The ``(K, K)`` transitions between segments of the block's parameters."""
        return self.transitions.dense(transmat)

    def _runner(self, views, need: str) -> Runner:
        return Runner.build(views["startprob"], self.dense_transmat(views["transmat"]),
                            self.dfamily, views["durations"], self.engine, self.seqs, need)

    def _table(self, views, runner: Runner):
        stay = runner.transmat + np.eye(len(runner.startprob))  # a segment may go on
        table = inference.emission_table(self.family, views["emission"], self.X,
                                         runner.startprob, stay, self.seqs)
        if self.states is None:
            return table, None
        return inference.clamp_states(
            table, self.states,
            lambda rows: self.family.log_likelihood(views["emission"], self.X[rows]))

    def _stats(self, start, trans, post, complete, censored, dstats, views, table, fold):
        visits = post.sum(axis=0)
        post = inference.fold_rows(fold_by_row(post, table), fold)
        if dstats is None:
            dstats = self.dfamily.statistics(complete, censored)
        return {"startprob": start, "transmat": self._trans_stats(start, trans, visits),
                "emission": self.family.statistics_at(views["emission"], self.X, post),
                "durations": dstats}

    def expected_counts(self, views):
        """Sum-product: ``(sum of log p(x) over the sequences, statistics per block)``."""
        runner = self._runner(views, "learn")
        table, fold = self._table(views, runner)
        out, dstats = runner.posteriors(table, self.seqs)
        check_possible(out.loglik, labelled=self.states is not None)
        return float(out.loglik.sum()), self._stats(out.start, out.trans, out.post,
                                                    out.complete, out.censored, dstats,
                                                    views, table, fold)

    def _counts(self, views, table, fold, paths, weights, X=None):
        K, D = self.family.n_states, self.dfamily.max_duration
        rows = table.idx if table.by_idx else np.arange(len(self.X), dtype=np.int64)
        n_rows = table.emis.shape[0] if table.by_idx else len(self.X)
        start, trans, post, complete, censored = path_counts(paths, weights, self.seqs, K, D,
                                                             rows, n_rows)
        visits = post.sum(axis=0)
        post = inference.fold_rows(post, fold)
        stats = {"startprob": start, "transmat": self._trans_stats(start, trans, visits),
                 "emission": self.family.statistics_at(views["emission"],
                                                       self.X if X is None else X, post),
                 "durations": self.dfamily.statistics(complete, censored)}
        return stats, (start, trans, complete, censored)

    def _trans_stats(self, start, trans, visits):
        """The transition block's statistics: its allowed entries of the move counts."""
        return self.transitions.gather(trans)

    def path_counts(self, views, k):
        """Max-product: ``(objective of the k best segmentations, counts per block, paths)``."""
        runner = self._runner(views, "viterbi" if k == 1 else "learn")
        table, fold = self._table(views, runner)
        logprob, paths = runner.best_paths(table, self.seqs, k)
        check_possible(logprob[:, 0], labelled=self.states is not None)
        weights, log_mass = kbest_weights(logprob)
        stats, _ = self._counts(views, table, fold, paths, weights)
        return float(np.sum(log_mass)), stats, paths

    def sample_counts(self, views, rng):
        r"""One segmentation of every sequence drawn from :math:`p(z \mid X, \theta)` (forward
        filtering, backward sampling of segments), and the counts along it: what a Gibbs
        sweep draws before each block's conjugate posterior (``sample_posterior``). Missing
        observations are filled with draws given the segmentation (the family's
        ``sample_missing``, as the HMM's sweep does).

        Parameters
        ----------
        views : dict
            The parameters per block.
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        log_joint : float
            :math:`\log p(X, z \mid \theta)` of the drawn segmentations (the last segment
            of each sequence with its survival).
        stats : dict
            The counts per block.
        states : ndarray of int64 of shape (n_samples,)
            The drawn states.
        """
        runner = self._runner(views, "any")
        table, fold = self._table(views, runner)
        states = runner.sample_posterior(table, self.seqs, rng)
        check_possible(drawn_path_loglik(states, self.seqs.bounds),
                       labelled=self.states is not None)
        X = self.family.sample_missing(views["emission"], self.X, states, rng)
        stats, (start, trans, complete, censored) = self._counts(
            views, table, fold, states[None], np.ones((len(self.seqs.lengths), 1)), X)
        dfam, dparams = self.dfamily, views["durations"]
        with np.errstate(divide="ignore", invalid="ignore"):
            emis = np.log(table.emis[table.idx, states])
            parts = [emis.sum(), 0.0 if table.log_offset is None else table.log_offset.sum(),
                     start @ np.log(runner.startprob),
                     np.sum(np.where(trans > 0, trans * np.log(runner.transmat), 0.0)),
                     np.sum(np.where(complete > 0, complete * np.log(dfam.pmf(dparams)), 0.0)),
                     np.sum(np.where(censored > 0,
                                     censored * np.log(dfam.survival(dparams)), 0.0))]
        return float(np.sum(parts)), stats, states

    @property
    def state_groups(self) -> list:
        """The exchangeable states for relabelling Gibbs draws
        (:func:`hiddenstate.learn.gibbs.relabel_draws`): ``startprob``, both axes of the
        transitions between segments (stored as their off-diagonal entries, which every
        permutation keeps), the emission parameters (the family's ``state_axes``) and the
        duration parameters."""
        from ...learn.gibbs import StateGroup

        members = [("startprob", (), (0,), 0), ("transmat", (), (0, 1), 0, self.transitions)]
        for key, axis in self.family.state_axes().items():
            if axis is not None:
                members.append((f"emission.{key}", (), (axis,), 0))
        members += [(f"durations.{key}", (), (0,), 0) for key in self.dfamily.keys]
        return [StateGroup(self.family.n_states, members)]

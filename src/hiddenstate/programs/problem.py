r"""A program's explanation graph as the generic learner sees it (:class:`ProgramProblem`,
a :class:`hiddenstate.learn.batch.Problem`).

The switches used by the graph are grouped by number of outcomes into
:class:`~hiddenstate.families.DirichletRows` blocks (one row per switch): ``learned<m>`` for
switches that are learned, ``fixed<m>`` (letter ``f``, never in ``which``) for switches
declared ``fixed=True``. Expected counts come from the inside-outside passes, hard counts
from the Viterbi or k-best passes (:mod:`hiddenstate.kernels.explanation_graph`).

Deterministic annealing (Ueda & Nakano 1998; PRISM's DAEM): with inverse temperature
``beta`` the E-step uses the tempered posterior :math:`p(E \mid G)^\beta / \sum_{E'}
p(E' \mid G)^\beta`, i.e. the inside pass on :math:`\theta^\beta`, and the objective is the
tempered log-likelihood :math:`\frac1\beta \sum_G \log \sum_{E} p(E)^\beta`, which EM at a
fixed ``beta`` does not decrease; at ``beta = 1`` both are plain EM's.
"""

from __future__ import annotations

import numpy as np

from ..families import DirichletRows
from ..learn import check_possible as learn_check_possible
from ..learn import kbest_weights
from .graph import ExplanationGraph
from .switches import SwitchTable

LEARNED, FIXED = "l", "f"


def check_possible(graph: ExplanationGraph, logp: np.ndarray, use: str | None = None,
                   argument: str = "goals", structural: bool = False) -> None:
    """The zero-probability rule (:func:`hiddenstate.learn.check_possible`) for observed
    goals: a :class:`~hiddenstate.errors.ZeroProbabilityError` naming the goals whose
    ``logp`` is -inf, while learning (``use`` None; ``structural``: no probabilities of the
    learned switches explain them) or for a method that needs their ``use``."""
    def label(i: int) -> str:
        return repr(graph.goals[int(graph.roots[i])])

    if structural:
        learn_check_possible(
            logp, "goal", "every explanation needs an outcome of a fixed switch of "
            "probability 0, or a goal that fails (it has no explanation)",
            "check the observation or the program", argument=argument, labels=label,
            given="whatever the probabilities of the learned switches")
    elif use is None:
        learn_check_possible(
            logp, "goal", "every explanation uses an outcome of probability 0",
            "check the observation, or start from probabilities that allow it (priors > 1 "
            "keep learned outcomes above zero)", argument=argument, labels=label,
            given="under the current switch probabilities")
    else:
        learn_check_possible(
            logp, "goal", "every explanation uses an outcome of probability 0, or it has "
            "no explanation", "Check the observation, or the zero probabilities of the "
            "switches (set_probs)", argument=argument, labels=label, use=use,
            given="under the switch probabilities")


class SwitchRows(DirichletRows):
    """Dirichlet rows of switches. A switch that no explanation uses in an iteration (common
    in Viterbi training) keeps its probabilities, silently: that is the program's meaning,
    not a degenerate state."""

    def mstep(self, theta, counts, which):
        return super().mstep(theta, counts, which)[0], []


class FlatSwitches:
    """Switch probabilities as one flat vector (``base``) and as Dirichlet blocks: block
    ``name`` is ``theta[index[name]]``, one row per switch of its number of outcomes. Shared
    by the program engine's Problem and the PCFG's."""

    base: np.ndarray
    index: dict

    def views(self, theta: np.ndarray) -> dict:
        """The block matrices of a flat probability vector."""
        return {name: theta[idx] for name, idx in self.index.items()}

    def flat(self, views: dict) -> np.ndarray:
        """The flat vector with every block written back over ``base``."""
        theta = self.base.copy()
        for name, idx in self.index.items():
            theta[idx] = views[name]
        return theta


class ProgramProblem(FlatSwitches):
    """Blocks, expected counts and path counts of one explanation graph (``flat_priors``:
    every Dirichlet concentration 1, i.e. maximum likelihood, as ``learn="em"`` wants)."""

    def __init__(self, graph: ExplanationGraph, table: SwitchTable, theta: np.ndarray,
                 flat_priors: bool = False):
        self.graph = graph
        self.base = theta  # flat probabilities of every switch (those not in a block stay)
        self.beta = 1.0
        used = graph.uses_switch
        groups: dict = {}
        for sid, spec in enumerate(table.specs):
            lo = table.offsets[sid]
            if lo >= graph.n_params or not used[lo:lo + len(spec.outcomes)].any():
                continue
            key = (FIXED if spec.fixed else LEARNED, len(spec.outcomes))
            groups.setdefault(key, []).append(sid)
        self.blocks, self.letters, self.index, self.sids = {}, {}, {}, {}
        for (letter, m), sids in sorted(groups.items()):
            name = f"{'fixed' if letter == FIXED else 'learned'}{m}"
            offs = np.asarray([table.offsets[s] for s in sids], dtype=np.int64)
            prior = (np.stack([table.specs[s].prior for s in sids])
                     if letter == LEARNED and not flat_priors else 1.0)
            self.blocks[name] = SwitchRows(name, letter, prior)
            self.letters[name] = letter
            self.index[name] = offs[:, None] + np.arange(m)
            self.sids[name] = sids
        self.n_virtual = {name: 1.0 for name in self.blocks}
        # the observed goals; a model whose goals hold many observations (PLCG: sentences
        # of words) sets its own count
        self.n_observations = len(graph.roots)

    def set_temperature(self, beta: float) -> None:
        """Deterministic annealing: the E-step at inverse temperature ``beta`` (see the
        module docstring; :func:`hiddenstate.learn.fit_restarts` sets it per stage)."""
        self.beta = float(beta)

    def check_explainable(self) -> None:
        """Refuse observed goals that no probabilities of the learned switches explain
        (the fixed switches as they are): the fit-time half of the zero-probability rule."""
        probe = self.base.copy()
        for name, idx in self.index.items():
            if self.letters[name] == LEARNED:
                probe[idx] = 1.0 / idx.shape[1]
        with np.errstate(divide="ignore"):
            ins, _ = self.graph.inside(np.log(probe[:self.graph.n_params]))
        check_possible(self.graph, ins[self.graph.roots], structural=True)

    def switch_posteriors(self, posterior: dict | None, table: SwitchTable) -> dict:
        """VB's Dirichlet posteriors (one row per switch of each block) by switch name."""
        out = {}
        for name, q in (posterior or {}).items():
            for row, sid in zip(q, self.sids[name], strict=True):
                out[table.names[sid]] = np.asarray(row, dtype=np.float64)
        return out

    def _log(self, views: dict) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self.flat(views)[:self.graph.n_params])

    def _stats(self, counts: np.ndarray) -> dict:
        return {name: counts[idx] for name, idx in self.index.items()}

    def set_start(self, views: dict) -> None:
        """VB centres q(theta) on the starting point as if each switch of a block had been
        used as often as the block's switches are on average at that point."""
        _, _, counts = self.graph.expected(self._log(views))
        for name, idx in self.index.items():
            self.n_virtual[name] = max(float(counts[idx].sum()) / len(idx), 1.0)

    # -- the Problem protocol ------------------------------------------------------------------
    def expected_counts(self, views: dict) -> tuple[float, dict]:
        beta = self.beta
        logtheta = self._log(views)
        ins, _, counts = self.graph.expected(logtheta * beta if beta != 1.0 else logtheta)
        logp = ins[self.graph.roots]
        check_possible(self.graph, logp)
        return float(logp.sum()) / beta, self._stats(counts)

    def sample_counts(self, views: dict, rng) -> tuple[float, dict, np.ndarray]:
        """Gibbs sampling: one explanation of every observed goal drawn from its posterior
        (top-down through the inside pass's alternative probabilities), the log joint
        :math:`\\sum_G \\log p(E_G \\mid \theta)` of the drawn explanations and the switch
        counts along them (the exact posterior of the explanations when they are exclusive,
        as for EM)."""
        g = self.graph
        logtheta = self._log(views)
        ins, cond = g.inside(logtheta)
        check_possible(g, ins[g.roots])
        _, alts, _ = g.sample_arrays(cond, g.roots, rng)
        used = g.switch_outcomes(alts)
        counts = np.bincount(used, minlength=g.n_params).astype(np.float64)
        return float(logtheta[used].sum()), self._stats(counts), alts

    def path_counts(self, views: dict, k: int) -> tuple[float, dict, np.ndarray]:
        g = self.graph
        logtheta = self._log(views)
        if k == 1:
            vit, best = g.viterbi(logtheta)
            check_possible(self.graph, vit[g.roots])
            counts, chosen = g.viterbi_counts(best)
            return float(vit[g.roots].sum()), self._stats(counts), chosen
        score, alt, rank = g.kbest(logtheta, k, "k_best")
        top = score[g.roots]
        check_possible(self.graph, top[:, 0])
        weights, log_mass = kbest_weights(top)
        counts, uses = g.kbest_counts(alt, rank, weights)
        used = uses > 0
        signature = np.concatenate((np.where(used, alt, -1).ravel(),
                                    np.where(used[:, :, None], rank, -1).ravel()))
        return float(np.sum(log_mass)), self._stats(counts), signature

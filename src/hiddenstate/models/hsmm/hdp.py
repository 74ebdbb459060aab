r"""The HDP-HSMM: an :class:`~hiddenstate.HSMM` whose transitions between segments have the
hierarchical Dirichlet process prior of Johnson & Willsky (2013), in its weak-limit
approximation, learned by Gibbs sampling only. ``hs.HSMM(n_states=L, learn="gibbs",
transmat_prior="hdp")``: ``L`` is the truncation, the most states the model may use; the
posterior says how many it does (``sample_stats_["n_states_used"]``,
:meth:`~hiddenstate.HSMM.n_states_posterior`).

No stickiness is needed: a segment's state never follows itself, and its durations (the
``duration`` family) say how long it lasts. The block is
:class:`~hiddenstate.families.hdp.HDPSegmentTransitions` (the sticky HDP-HMM's prior at
:math:`\kappa = 0` with the diagonal left out; it shares the sticky block's table counts,
:math:`\gamma` step and draws); :class:`HDPHSMMProblem` is :class:`~.problem.HSMMProblem`
with that block.
"""

from __future__ import annotations

import numpy as np

from ...errors import InvalidInputError
from ...families.hdp import HDP_HSMM_OPTIONS, HDPSegmentTransitions
from .problem import HSMMProblem

#: the spelling of the prior (``transmat_prior``)
HDP = "hdp"


def is_hdp(model) -> bool:
    """Whether ``model``'s transition prior is the HDP."""
    return isinstance(getattr(model, "transmat_prior", None), str) \
        and model.transmat_prior == HDP


def check_hdp(model) -> None:
    """The HDP needs ``learn="gibbs"``; its options (``learner_options``) are checked."""
    if model.learn != "gibbs":
        raise InvalidInputError(
            f"transmat_prior: 'hdp' is sampled by learn='gibbs' only (got "
            f"learn={model.learn!r})")
    options = {**HDP_HSMM_OPTIONS, **(model.learner_options or {})}
    HDPSegmentTransitions.check_options({k: options[k] for k in HDP_HSMM_OPTIONS})


class HDPHSMMProblem(HSMMProblem):
    """:class:`~.problem.HSMMProblem` with the HDP transition block (see the module
    docstring).

    Parameters
    ----------
    options : dict
        The HDP's options (:data:`~hiddenstate.families.hdp.HDP_HSMM_OPTIONS`).
    *args, **kwargs
        As :class:`~.problem.HSMMProblem`'s (``transmat_prior`` is unused).
    """

    def __init__(self, family, dfamily, X, seqs, startprob_prior, options: dict,
                 engine: str = "auto", states=None):
        super().__init__(family, dfamily, X, seqs, startprob_prior, 1.0, engine, states)
        self.blocks["transmat"] = HDPSegmentTransitions(
            family.n_states, "t", **{k: options[k] for k in HDP_HSMM_OPTIONS})

    def dense_transmat(self, transmat) -> np.ndarray:
        """The transitions between segments of the block's parameters (or the matrix)."""
        if isinstance(transmat, dict):
            transmat = transmat["transmat"]
        return np.asarray(transmat, dtype=np.float64)

    def _trans_stats(self, start, trans, visits):
        return {"trans": trans, "start": np.asarray(start), "visits": visits}

    def start_params(self, params: dict) -> dict:
        """``params`` with the transition block's starting dict around its matrix (the
        gathered transitions between segments of an HSMM start)."""
        dense = self.transitions.dense(params["transmat"])
        return {**params, "transmat": self.blocks["transmat"].initial(dense)}

    @property
    def state_groups(self) -> list:
        groups = super().state_groups
        for g in groups:
            g.members = [m for m in g.members if m[0] != "transmat"]
            g.members.append(("transmat.transmat", (), (0, 1), 0))
            g.members.append(("transmat.beta", (), (0,), 0))
        return groups

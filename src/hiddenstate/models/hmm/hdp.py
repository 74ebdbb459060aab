r"""The sticky HDP-HMM: an HMM whose transition matrix has the sticky HDP prior of Fox et al.
(2011) in its weak-limit approximation (:mod:`hiddenstate.families.hdp`), learned by Gibbs
sampling only. ``hs.HMM(n_states=L, learn="gibbs", transmat_prior="sticky-hdp")``: ``L`` is
the truncation, the most states the model may use; the posterior says how many it does
(``sample_stats_["n_states_used"]``, :meth:`~hiddenstate.HMM.n_states_posterior`).

:class:`StickyHDPProblem` is :class:`~.problem.HMMProblem` with the transition block
replaced by :class:`~hiddenstate.families.hdp.StickyHDPTransitions`, whose parameters are a
dict (the matrix, the global weights :math:`\beta`, the concentrations) and whose statistics
are the transition and start counts.
"""

from __future__ import annotations

import numpy as np

from ...errors import InvalidInputError
from ...families.hdp import HDP_OPTIONS, StickyHDPTransitions
from .chain import Chain
from .problem import HMMProblem

#: the spelling of the prior (``transmat_prior``)
STICKY_HDP = "sticky-hdp"


def is_sticky(model) -> bool:
    """Whether ``model``'s transition prior is the sticky HDP."""
    return isinstance(getattr(model, "transmat_prior", None), str) \
        and model.transmat_prior == STICKY_HDP


def check_sticky(model) -> None:
    """The sticky HDP needs ``learn="gibbs"`` and a full topology; its options (in
    ``learner_options``) are checked here."""
    if model.learn != "gibbs":
        raise InvalidInputError(
            f"transmat_prior: 'sticky-hdp' is sampled by learn='gibbs' only (got "
            f"learn={model.learn!r})")
    if getattr(model, "topology", "full") != "full" or \
            getattr(model, "transmat_mask", None) is not None:
        raise InvalidInputError(
            "transmat_prior: 'sticky-hdp' draws every transition; use topology='full' and "
            "no transmat_mask")
    StickyHDPTransitions.check_options({**HDP_OPTIONS, **(model.learner_options or {})})


class StickyHDPProblem(HMMProblem):
    """:class:`~.problem.HMMProblem` with the sticky HDP transition block."""

    def __init__(self, family, X, seqs, startprob_prior, options: dict, states=None,
                 weights=None):
        super().__init__(family, X, seqs, startprob_prior, 1.0, states, None, weights)
        hdp = {k: options[k] for k in HDP_OPTIONS}
        self.blocks["transmat"] = StickyHDPTransitions(family.n_states, "t", **hdp)

    def _chain(self, views) -> Chain:
        trans = views["transmat"]
        return Chain(views["startprob"], trans["transmat"] if isinstance(trans, dict)
                     else trans)

    def _stats(self, start, trans, post, views, fold, X=None):
        out = super()._stats(start, trans, post, views, fold, X)
        out["transmat"] = {"trans": trans, "start": np.asarray(start)}
        return out

    def start_params(self, params: dict) -> dict:
        """``params`` with the transition block's starting dict around its matrix."""
        return {**params, "transmat": self.blocks["transmat"].initial(params["transmat"])}

    @property
    def state_groups(self) -> list:
        groups = super().state_groups
        for g in groups:
            g.members = [m for m in g.members if m[0] != "transmat"]
            g.members.append(("transmat.transmat", (), (0, 1), 0))
            g.members.append(("transmat.beta", (), (0,), 0))
        return groups

"""Streaming learners: each observation (online EM) or each sequence (Baum-Welch online,
Baldi-Chauvin, Bayesian online, mean posterior) is seen once.

Every learner follows :class:`~.base.OnlineLearner`: its whole state is a flat ``dict`` of
NumPy arrays and Python scalars, so a stream can be checkpointed (JSON + npz) and resumed
with bit-identical results.
"""

from __future__ import annotations

from .base import OnlineLearner
from .online_em import OnlineEM
from .per_sequence import BaldiChauvin, BaumWelchOnline, BayesianOnline, MeanPosterior

#: ``learn=`` name -> learner class
ONLINE_LEARNERS: dict[str, type] = {
    cls.name: cls for cls in (OnlineEM, BaumWelchOnline, BaldiChauvin, BayesianOnline,
                              MeanPosterior)
}
ONLINE_MODES = tuple(ONLINE_LEARNERS)

__all__ = ["ONLINE_LEARNERS", "ONLINE_MODES", "BaldiChauvin", "BaumWelchOnline",
           "BayesianOnline", "MeanPosterior", "OnlineEM", "OnlineLearner"]

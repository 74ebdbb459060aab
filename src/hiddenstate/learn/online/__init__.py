"""Streaming learners: each observation (online EM) or each sequence (Baum-Welch online,
Baldi-Chauvin, Bayesian online, mean posterior) is seen once.

Every learner follows :class:`~.base.OnlineLearner`: its whole state is a flat ``dict`` of
NumPy arrays and Python scalars, so a stream can be checkpointed (JSON + npz) and resumed
with bit-identical results.
"""

from __future__ import annotations

import inspect

from ...errors import InvalidInputError
from .base import OnlineLearner, StateRecord
from .online_em import OnlineEM
from .per_sequence import BaldiChauvin, BaumWelchOnline, BayesianOnline, MeanPosterior

#: ``learn=`` name -> learner class
ONLINE_LEARNERS: dict[str, type] = {
    cls.name: cls for cls in (OnlineEM, BaumWelchOnline, BaldiChauvin, BayesianOnline,
                              MeanPosterior)
}
ONLINE_MODES = tuple(ONLINE_LEARNERS)


def make_learner(name: str, options: dict):
    """Build the streaming learner of a ``learn=`` name.

    Parameters
    ----------
    name : str
        One of :data:`ONLINE_MODES`: ``"online-em"``, ``"bwo"``, ``"baldi-chauvin"``,
        ``"bona"``, ``"mpa"``.
    options : dict
        The learner's keyword arguments (an estimator's ``learner_options``).

    Returns
    -------
    OnlineLearner
        The learner.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``options`` holds an option the learner does not have (the message lists its
        options).

    Examples
    --------
    >>> from hiddenstate.learn.online import make_learner
    >>> make_learner("bwo", {"eta": 0.05}).eta
    0.05
    >>> make_learner("bwo", {"step": 0.05})
    Traceback (most recent call last):
    ...
    hiddenstate.errors.InvalidInputError: learner_options: 'step' is not an option of ...
    """
    cls = ONLINE_LEARNERS[name]
    known = list(inspect.signature(cls).parameters)
    unknown = [k for k in options if k not in known]
    if unknown:
        raise InvalidInputError(
            f"learner_options: {unknown[0]!r} is not an option of learn={name!r} (its options: "
            f"{', '.join(known)})")
    return cls(**options)

__all__ = ["ONLINE_LEARNERS", "ONLINE_MODES", "BaldiChauvin", "BaumWelchOnline",
           "BayesianOnline", "MeanPosterior", "OnlineEM", "OnlineLearner", "StateRecord",
           "make_learner"]

"""Estimators users touch.

Each estimator's module is imported when its name is first used (PEP 562, as
:mod:`hiddenstate` itself), so ``from hiddenstate.models import HMM`` does not import the
grammar, program, tree-network and source modules the other estimators are built on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .hmm import HMM
    from .nbh import NaiveBayesHidden
    from .pcfg import PCFG
    from .props import PROPS, TokenScores
    from .treenet import TreeNet

__all__ = ["HMM", "NaiveBayesHidden", "PCFG", "PROPS", "TokenScores", "TreeNet"]


def __getattr__(name: str):
    """Import an estimator, or a submodule, on first use."""
    if name == "HMM":
        from .hmm import HMM as value
    elif name == "NaiveBayesHidden":
        from .nbh import NaiveBayesHidden as value
    elif name == "PCFG":
        from .pcfg import PCFG as value
    elif name in ("PROPS", "TokenScores"):
        from . import props
        value = getattr(props, name)
    elif name == "TreeNet":
        from .treenet import TreeNet as value
    else:
        from .._lazy import submodule

        value = submodule(__name__, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

"""Estimators users touch.

Each estimator's module is imported when its name is first used (PEP 562, as
:mod:`hiddenstate` itself), so ``from hiddenstate.models import HMM`` does not import the
grammar, program, tree-network and source modules the other estimators are built on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from .hmm import HMM
    from .hsmm import HSMM
    from .nbh import NaiveBayesHidden
    from .pcfg import PCFG
    from .plcg import PLCG
    from .props import PROPS, TokenScores
    from .regression import RegressionHMM
    from .treenet import TreeNet

__all__ = ["HMM", "HSMM", "NaiveBayesHidden", "PCFG", "PLCG", "PROPS", "RegressionHMM",
           "TokenScores", "TreeNet"]


__getattr__, __dir__ = attach(__name__, {
    "HMM": ".hmm",
    "HSMM": ".hsmm",
    "NaiveBayesHidden": ".nbh",
    "PCFG": ".pcfg",
    "PLCG": ".plcg",
    "PROPS": ".props",
    "RegressionHMM": ".regression",
    "TokenScores": ".props",
    "TreeNet": ".treenet",
}, __all__)

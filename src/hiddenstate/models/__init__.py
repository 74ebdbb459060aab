"""Estimators users touch."""

from .hmm import HMM
from .pcfg import PCFG
from .props import PROPS, TokenScores
from .treenet import TreeNet

__all__ = ["HMM", "PCFG", "PROPS", "TokenScores", "TreeNet"]

"""Estimators users touch."""

from .hmm import HMM
from .props import PROPS, TokenScores
from .treenet import TreeNet

__all__ = ["HMM", "PROPS", "TokenScores", "TreeNet"]

"""Estimators users touch."""

from .hmm import HMM
from .props import PROPS, TokenScores

__all__ = ["HMM", "PROPS", "TokenScores"]

"""Estimators users touch."""

from .hmm import HMM
from .nbh import NaiveBayesHidden
from .pcfg import PCFG
from .props import PROPS, TokenScores
from .treenet import TreeNet

__all__ = ["HMM", "NaiveBayesHidden", "PCFG", "PROPS", "TokenScores", "TreeNet"]

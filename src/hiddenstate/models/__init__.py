"""Estimators users touch."""

from .hmm import HMM
from .nbh import NaiveBayesHidden
from .props import PROPS, TokenScores
from .treenet import TreeNet

__all__ = ["HMM", "NaiveBayesHidden", "PROPS", "TokenScores", "TreeNet"]

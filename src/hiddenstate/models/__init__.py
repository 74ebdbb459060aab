"""Estimators users touch."""

from .hmm import HMM
from .nbh import NaiveBayesHidden
from .pcfg import PCFG
from .plcg import PLCG
from .props import PROPS, TokenScores
from .treenet import TreeNet

__all__ = ["HMM", "NaiveBayesHidden", "PCFG", "PLCG", "PROPS", "TokenScores", "TreeNet"]

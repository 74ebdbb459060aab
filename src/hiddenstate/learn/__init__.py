"""Learning algorithms, generic over models: a model hands statistics, a learner returns
parameters. Batch modes (EM, MAP, VB, VT, k-best VT) live in :mod:`.batch`."""

from .batch import MODES, OBJECTIVES, Fitted, fit, merge_statistics
from .monitor import ConvergenceMonitor

__all__ = ["MODES", "OBJECTIVES", "ConvergenceMonitor", "Fitted", "fit", "merge_statistics"]

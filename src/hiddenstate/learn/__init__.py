"""Learning algorithms, generic over models: a model hands statistics, a learner returns
parameters. Batch EM lives in :mod:`.em`."""

from .em import ConvergenceMonitor, em

__all__ = ["ConvergenceMonitor", "em"]

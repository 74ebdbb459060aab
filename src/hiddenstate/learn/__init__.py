"""Learning algorithms, generic over models: a model hands statistics, a learner returns
parameters. Batch modes (EM, MAP, VB, VT, k-best VT), the restart loop and the stop rules
live in :mod:`.batch`; blocked Gibbs sampling (``learn="gibbs"``) in :mod:`.gibbs` and its
ArviZ diagnostics in :mod:`.diagnostics`; what a model hands the learner, the k-best weights
and the zero-probability rule in :mod:`.problem`; the warnings of a fit in
:mod:`.fit_warnings`."""

from .batch import MODES, OBJECTIVES, TOL, Fitted, fit, fit_restarts, merge_statistics
from .fit_warnings import FitWarnings
from .monitor import ConvergenceMonitor
from .problem import check_possible, kbest_weights

__all__ = ["MODES", "OBJECTIVES", "TOL", "ConvergenceMonitor", "FitWarnings", "Fitted",
           "check_possible", "fit", "fit_restarts", "kbest_weights", "merge_statistics"]

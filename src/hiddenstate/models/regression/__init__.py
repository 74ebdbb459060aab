"""HMMs with regression emissions and input-driven transitions (:class:`RegressionHMM`):
the estimator (:mod:`.estimator`), its queries and forecasts (:mod:`.queries`,
:mod:`.forecast`), the layout of its rows (:mod:`.design`) and its Problem with
time-varying transitions (:mod:`.problem`)."""

from .estimator import RegressionHMM
from .forecast import Forecast
from .problem import InputDrivenProblem

__all__ = ["Forecast", "InputDrivenProblem", "RegressionHMM"]

"""Emission families: one parameter block each (log-likelihood table, sufficient
statistics, M-step, initialisation, sampling). The initial distribution and the rows of the
transition matrix are :func:`categorical.estimate_rows` blocks too."""

from .base import EmissionFamily
from .categorical import CategoricalEmissions, estimate_rows
from .gaussian import COVARIANCE_TYPES, GaussianEmissions
from .poisson import PoissonEmissions

FAMILIES = {
    "categorical": CategoricalEmissions,
    "gaussian": GaussianEmissions,
    "poisson": PoissonEmissions,
}

__all__ = [
    "COVARIANCE_TYPES",
    "FAMILIES",
    "CategoricalEmissions",
    "EmissionFamily",
    "GaussianEmissions",
    "PoissonEmissions",
    "estimate_rows",
]

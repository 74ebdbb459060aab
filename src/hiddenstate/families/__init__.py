"""Conjugate parameter blocks. Emission families own one block each (log-likelihood table,
sufficient statistics, MLE/MAP M-step, log prior, variational updates, initialisation,
sampling); the initial distribution and the transition rows are :class:`DirichletRows`
blocks, as are categorical emissions. Regression emissions (linear, logistic) and the
input-driven :class:`SoftmaxTransitions` serve :class:`hiddenstate.RegressionHMM`."""

from .base import EmissionFamily
from .blackbox import BlackBoxEmissions
from .categorical import CategoricalEmissions
from .dirichlet import DirichletRows, estimate_rows
from .durations import (
    DURATIONS,
    DurationFamily,
    GeometricDurations,
    NegativeBinomialDurations,
    NonparametricDurations,
    PoissonDurations,
)
from .gaussian import COVARIANCE_TYPES, GaussianEmissions
from .gmm import GMMEmissions
from .logistic import LogisticEmissions
from .multinomial import MultinomialEmissions
from .poisson import PoissonEmissions
from .regression import LinearRegressionEmissions
from .softmax import SoftmaxTransitions

FAMILIES = {
    "categorical": CategoricalEmissions,
    "gaussian": GaussianEmissions,
    "poisson": PoissonEmissions,
    "gmm": GMMEmissions,
    "multinomial": MultinomialEmissions,
}

__all__ = [
    "BlackBoxEmissions",
    "COVARIANCE_TYPES",
    "DURATIONS",
    "FAMILIES",
    "CategoricalEmissions",
    "DirichletRows",
    "DurationFamily",
    "EmissionFamily",
    "GMMEmissions",
    "GaussianEmissions",
    "GeometricDurations",
    "LinearRegressionEmissions",
    "LogisticEmissions",
    "MultinomialEmissions",
    "NegativeBinomialDurations",
    "NonparametricDurations",
    "PoissonDurations",
    "PoissonEmissions",
    "SoftmaxTransitions",
    "estimate_rows",
]

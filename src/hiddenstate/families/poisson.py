r"""Poisson emissions, independent across features.

.. math::
    \log p(x \mid z=k) = \sum_d x_d \log\lambda_{kd} - \lambda_{kd} - \log\Gamma(x_d + 1).

M-step under a Gamma(:math:`a`, :math:`b`) prior (shape-rate; hmmlearn's ``lambdas_prior``
and ``lambdas_weight``): :math:`\lambda_k = (a + \sum_t \gamma_{tk} x_t)/(b + n_k)`;
EM uses :math:`a = b = 0`. A state with no posterior mass keeps its rates (with a
:class:`~hiddenstate.errors.DegenerateStateWarning`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from .._validation import check_counts
from ..errors import InvalidInputError
from .base import EmissionFamily

_DEAD = 1e-10


class PoissonEmissions(EmissionFamily):
    letters = {"l": "lambdas"}

    def __init__(self, n_states, n_features, lambdas_prior=0.0, lambdas_weight=0.0):
        super().__init__(n_states, n_features)
        self.lambdas_prior = lambdas_prior
        self.lambdas_weight = lambdas_weight

    def validate_X(self, X, fitted_n_features):
        return check_counts(X, fitted_n_features)

    def infer_n_features(self, X):
        return X.shape[1]

    def log_likelihood(self, params, X):
        lam = params["lambdas"]
        with np.errstate(divide="ignore", invalid="ignore"):
            logl = np.log(lam)
            # 0 * log(0) = 0: a zero rate explains zero counts with probability one
            terms = X @ np.where(lam > 0, logl, 0.0).T
            impossible = (X > 0).astype(np.float64) @ (lam <= 0).T.astype(np.float64)
        out = terms - lam.sum(axis=1) - gammaln(X + 1).sum(axis=1)[:, None]
        out[impossible > 0] = -np.inf
        return out

    def statistics(self, X, post):
        return {"post": post.sum(axis=0), "obs": post.T @ X}

    def mstep(self, params, stats, which):
        if "l" not in which:
            return params, []
        n = stats["post"]
        dead = np.flatnonzero(n < _DEAD)
        live = n >= _DEAD
        lam = params["lambdas"].copy()
        a, b = self.lambdas_prior, self.lambdas_weight
        with np.errstate(divide="ignore", invalid="ignore"):  # dead states are skipped
            new = (a + stats["obs"]) / (b + n[:, None])
        lam[live] = np.broadcast_to(new, lam.shape)[live]
        return {"lambdas": lam}, dead.tolist()

    def initialize(self, X, rng):
        mean = X.mean(axis=0)
        var = X.var(axis=0)
        mean = np.where(mean > 0, mean, 1.0)
        var = np.where(var > 0, var, mean)
        lam = rng.gamma(shape=mean**2 / var, scale=var / mean,
                        size=(self.n_states, X.shape[1]))
        return {"lambdas": np.maximum(lam, 1e-3 * mean)}

    def check_params(self, params):
        lam = np.asarray(params["lambdas"], dtype=np.float64)
        shape = (self.n_states, self.n_features)
        if lam.shape != shape:
            raise InvalidInputError(f"lambdas_: expected shape {shape}, got {lam.shape}")
        if not np.all(np.isfinite(lam)) or np.any(lam < 0):
            raise InvalidInputError("lambdas_: rates must be finite and non-negative")
        return {"lambdas": lam}

    def sample(self, params, states, rng):
        return rng.poisson(params["lambdas"][states]).astype(np.float64)

    def n_free_parameters(self):
        return self.n_states * self.n_features

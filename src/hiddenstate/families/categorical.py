r"""Categorical blocks: discrete emissions, and the initial/transition distributions.

MLE of a categorical row from expected counts :math:`n_w`: :math:`\hat\theta_w = n_w/\sum n`;
under a Dirichlet(:math:`\alpha`) prior the MAP estimate is
:math:`\hat\theta_w \propto \max(n_w + \alpha_w - 1, 0)` (hmmlearn's convention).
Structural zeros (a zero in the current parameters) stay zero, so left-to-right models keep
their shape.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_stochastic, check_symbols
from ..errors import InvalidInputError
from ..inference import EmissionTable
from .base import EmissionFamily

#: an alphabet inferred from the data may not exceed this; pass n_features to go beyond
MAX_INFERRED_SYMBOLS = 2**24


def estimate_rows(counts: np.ndarray, current: np.ndarray, prior=1.0) -> tuple[np.ndarray, list]:
    """Row-normalised MAP estimate (MLE for ``prior == 1``) keeping structural zeros.

    A row with no mass at all (a state never visited) keeps its current value; its index
    is returned so the caller can warn.
    """
    est = np.maximum(counts + (np.asarray(prior, dtype=np.float64) - 1.0), 0.0)
    est = np.where(current == 0, 0.0, est)
    est = np.atleast_2d(est)
    cur = np.atleast_2d(current)
    sums = est.sum(axis=1)
    dead = np.flatnonzero(sums <= 0)
    out = np.empty_like(est)
    live = sums > 0
    out[live] = est[live] / sums[live, None]
    out[~live] = cur[~live]
    return out.reshape(current.shape), dead.tolist()


class CategoricalEmissions(EmissionFamily):
    """``emissionprob`` ``(K, W)``: p(x = w | z = k). Observations are symbols 0..W-1."""

    letters = {"e": "emissionprob"}

    def __init__(self, n_states: int, n_features: int, emissionprob_prior=1.0):
        super().__init__(n_states, n_features)
        self.emissionprob_prior = emissionprob_prior

    def validate_X(self, X, fitted_n_features):
        return check_symbols(X, fitted_n_features)

    def infer_n_features(self, X):
        W = int(X.max()) + 1
        if W > MAX_INFERRED_SYMBOLS:
            raise InvalidInputError(
                f"X: the largest symbol, {W - 1}, implies an alphabet of {W} symbols; "
                "relabel symbols to 0..W-1 (np.unique(X, return_inverse=True)) or pass "
                "n_features explicitly")
        return W

    def log_likelihood(self, params, X):
        with np.errstate(divide="ignore"):
            return np.log(params["emissionprob"].T[X])

    def table(self, params, X):
        return EmissionTable.from_symbols(params["emissionprob"], X)

    def statistics(self, X, post):
        # the kernel already summed posteriors by symbol: post is (W, K)
        return {"counts": post.T}

    def mstep(self, params, stats, which):
        if "e" not in which:
            return params, []
        B, dead = estimate_rows(stats["counts"], params["emissionprob"], self.emissionprob_prior)
        return {"emissionprob": B}, dead

    def initialize(self, X, rng):
        B = rng.dirichlet(np.ones(self.n_features), size=self.n_states)
        return {"emissionprob": B}

    def check_params(self, params):
        return {"emissionprob": check_stochastic(
            params["emissionprob"], (self.n_states, self.n_features), "emissionprob_")}

    def sample(self, params, states, rng):
        cdf = np.cumsum(params["emissionprob"], axis=1)
        u = rng.random(len(states)) * cdf[states, -1]
        out = (u[:, None] >= cdf[states]).sum(axis=1)
        return np.minimum(out, self.n_features - 1)[:, None]

    def n_free_parameters(self):
        return self.n_states * (self.n_features - 1)

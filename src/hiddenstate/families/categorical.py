"""Categorical emissions: ``emissionprob`` rows, one Dirichlet block (see
:mod:`.dirichlet` for the estimates, the prior and the variational updates)."""

from __future__ import annotations

import numpy as np

from .._validation import check_stochastic, check_symbols
from ..errors import InvalidInputError
from ..inference import EmissionTable
from .base import EmissionFamily, labelled_mean
from .dirichlet import DirichletEmissionRows, DirichletRows

#: an alphabet inferred from the data may not exceed this; pass n_features to go beyond
MAX_INFERRED_SYMBOLS = 2**24


class CategoricalEmissions(DirichletEmissionRows, EmissionFamily):
    """``emissionprob`` ``(K, W)``: p(x = w | z = k). Observations are symbols 0..W-1."""

    letters = {"e": "emissionprob"}

    def __init__(self, n_states: int, n_features: int, emissionprob_prior=1.0):
        super().__init__(n_states, n_features)
        self.emissionprob_prior = emissionprob_prior
        self.rows = DirichletRows("emissionprob", "e", emissionprob_prior)

    def validate_X(self, X, fitted_n_features):
        return check_symbols(X, fitted_n_features, allow_missing=True)

    def infer_n_features(self, X):
        W = max(int(X.max()) + 1, 1)
        if W > MAX_INFERRED_SYMBOLS:
            raise InvalidInputError(
                f"X: the largest symbol, {W - 1}, implies an alphabet of {W} symbols; "
                "relabel symbols to 0..W-1 (np.unique(X, return_inverse=True)) or pass "
                "n_features explicitly")
        return W

    def log_likelihood(self, params, X):
        """log p(x_t | z_t = k); 0 for a missing symbol (``-1``: no emission term)."""
        with np.errstate(divide="ignore"):
            out = np.log(params["emissionprob"].T[np.maximum(X, 0)])
        out[X < 0] = 0.0
        return out

    def table(self, params, X, occupied=None):
        """The emission matrix itself, unscaled: nothing to underflow, so ``occupied`` is
        not needed."""
        return EmissionTable.from_symbols(params["emissionprob"], X)

    def statistics(self, X, post):
        # the kernel already summed posteriors by symbol: post is (W, K), or (W + 1, K)
        # with the missing symbols' row last (see EmissionTable.from_symbols), left out
        return {"counts": post[:self.n_features].T}

    # -- a family of symbols --------------------------------------------------------------
    table_by_symbol = True

    @property
    def alphabets(self) -> tuple[int, ...]:
        return (self.n_features,)

    def autocorrelation_data(self, X):
        """The symbols themselves (their persistence is that of one-hot indicators)."""
        return X, True

    def labelled_start(self, params, X, states, init_params):
        """The rows moved to the one-hot labelled symbols (a missing one counts for
        nothing), when ``"e"`` is initialised."""
        if "e" not in init_params:
            return params
        V = np.where(X[:, None] < 0, np.nan, X[:, None] == np.arange(self.n_features))
        return {**params, "emissionprob": labelled_mean(params["emissionprob"], V, states)}

    def feature_rows(self, emissionprob):
        return [emissionprob]

    def from_feature_rows(self, rows):
        return np.array(rows[0], dtype=np.float64)

    def validate_symbols(self, X):
        return check_symbols(X, self.n_features, allow_missing=True)

    def stream_symbols(self, X):
        y = np.asarray(X)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        W = self.n_features
        if y.ndim != 1 or (len(y) and (y.min() < -1 or y.max() >= W)):
            raise InvalidInputError(
                f"X: expected symbols 0 .. {W - 1} (-1: missing; one column), got shape "
                f"{np.shape(X)} with "
                f"values {y.min() if len(y) else ''} .. {y.max() if len(y) else ''}")
        return np.ascontiguousarray(y[:, None], dtype=np.int64)

    def impute(self, params, X, post):
        r"""Missing symbols (``-1``) replaced by the most probable symbol under the
        posterior predictive :math:`p(x_t = w \mid X) = \sum_k \gamma_{tk} B_{kw}`."""
        out = X.copy()
        rows = np.flatnonzero(X < 0)
        out[rows] = np.argmax(post[rows] @ params["emissionprob"], axis=1)
        return out

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

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
    r"""Categorical emissions: ``emissionprob`` ``(K, W)``, :math:`p(x = w \mid z = k)`.

    Observations are symbols ``0 .. W-1`` (``-1``: missing, no emission term). The rows are
    one :class:`DirichletRows` block (see :mod:`hiddenstate.families.dirichlet` for the
    estimates, the prior and the variational updates). Built by :class:`hiddenstate.HMM`
    for ``emission="categorical"``; an alphabet inferred from the data may not exceed
    2**24 symbols (pass ``n_features`` to go beyond).

    Parameters
    ----------
    n_states : int
        The number of hidden states K.
    n_features : int
        The number of symbols W.
    emissionprob_prior : float or array-like, default=1.0
        The Dirichlet :math:`\alpha` of the rows (1: maximum likelihood).

    See Also
    --------
    MultinomialEmissions : Counts over W categories.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families import CategoricalEmissions
    >>> family = CategoricalEmissions(n_states=2, n_features=3)
    >>> params = {"emissionprob": np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]])}
    >>> X = family.validate_X(np.array([[0], [2], [-1]]), None)      # -1: missing
    >>> np.exp(family.log_likelihood(params, X))
    array([[0.7, 0.1],
           [0.1, 0.7],
           [1. , 1. ]])
    """

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
        r"""Compute :math:`\log p(x_t \mid z_t = k)`; 0 for a missing symbol.

        A missing symbol, ``-1``, has no emission term.

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"emissionprob"``, ``"means"``, ``"covars"``, ...).
        X : ndarray
            Observations as :meth:`validate_X` returns them (rows ``(N, D)``; symbols
            ``(N,)`` for categorical emissions).

        Returns
        -------
        ndarray of shape (n_samples, n_states)
            :math:`\log p(x_t \mid z_t = k)`.
        """
        with np.errstate(divide="ignore"):
            out = np.log(params["emissionprob"].T[np.maximum(X, 0)])
        out[X < 0] = 0.0
        return out

    def table(self, params, X, occupied=None):
        """Return the emission matrix itself as the table, unscaled.

        Nothing can underflow, so ``occupied`` is not needed.

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"emissionprob"``, ``"means"``, ``"covars"``, ...).
        X : ndarray
            Observations as :meth:`validate_X` returns them (rows ``(N, D)``; symbols
            ``(N,)`` for categorical emissions).
        occupied : ndarray of bool or None, default=None
            Unused.

        Returns
        -------
        hiddenstate.inference.EmissionTable
            The table by symbol (:meth:`EmissionTable.from_symbols
            <hiddenstate.inference.EmissionTable.from_symbols>`).
        """
        return EmissionTable.from_symbols(params["emissionprob"], X)

    def statistics(self, X, post):
        # the kernel already summed posteriors by symbol: post is (W, K), or (W + 1, K)
        # with the missing symbols' row last (see EmissionTable.from_symbols), left out
        return {"counts": post[:self.n_features].T}

    # -- a family of symbols --------------------------------------------------------------
    table_by_symbol = True

    @property
    def alphabets(self) -> tuple[int, ...]:
        """The alphabet of the one feature: ``(n_features,)``."""
        return (self.n_features,)

    def autocorrelation_data(self, X):
        """Return the symbols themselves, whose persistence is that of one-hot indicators.

        Parameters
        ----------
        X : ndarray
            Observations as :meth:`validate_X` returns them (rows ``(N, D)``; symbols
            ``(N,)`` for categorical emissions).

        Returns
        -------
        data : ndarray
            ``X``.
        symbols : bool
            True (compared by equality).
        """
        return X, True

    def labelled_start(self, params, X, states, init_params):
        """Move the rows towards the one-hot labelled symbols, when ``"e"`` is initialised.

        A missing symbol counts for nothing (see :meth:`EmissionFamily.labelled_start`).

        Parameters
        ----------
        params : dict of str to ndarray
            The initial parameters.
        X : ndarray
            The observations of the labelled steps.
        states : ndarray of int
            Their labels (all >= 0).
        init_params : str
            The hmmlearn letters of the parameters being initialised.

        Returns
        -------
        dict of str to ndarray
            The parameters, keyed as ``params``.
        """
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
        r"""Replace missing symbols by the most probable symbol under the posterior predictive.

        :math:`p(x_t = w \mid X) = \sum_k \gamma_{tk} B_{kw}`.

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"emissionprob"``, ``"means"``, ``"covars"``, ...).
        X : ndarray
            The symbols (``-1``: missing).
        post : ndarray of shape (n_samples, n_states)
            The state posteriors :math:`\gamma_{tk}`.

        Returns
        -------
        ndarray
            ``X`` with its missing entries filled in (a copy).
        """
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

r"""Source states next to an ordinary emission family (PROPS, Wojnowicz & Zhao, sec. III).

The first :math:`K_s` states are *source* states: the emission probability of
observation :math:`t` in source state :math:`k` is the black-box predictive probability
:math:`f_k(y_t \mid y_{<t})`, fixed, with no statistics and no M-step. The other
:math:`K_p` states are *perturbation* states of an ordinary family (``inner``), learned
as usual.

The black-box numbers depend on the history, not on any parameter, so they travel with
the data: the family's observations are rows ``[log f_1, ..., log f_Ks, x]`` (the source
log-probabilities of the row, then the inner family's observation; a categorical symbol
is stored as a float, exact below :math:`2^{53}`). :class:`hiddenstate.PROPS` builds these
rows from its sources; every learning mode then sees an emission family like any other:
the table is ``[log f | inner log-likelihood]``, the statistics and the M-step are the
inner family's on the perturbation columns of the posteriors.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from ..inference import EmissionTable
from .base import EmissionFamily
from .categorical import CategoricalEmissions


class BlackBoxEmissions(EmissionFamily):
    """Source states next to an ordinary emission family (PROPS, Wojnowicz & Zhao, sec. III).

    ``n_sources`` source states, whose emission probabilities are the black-box predictions
    that travel with the data, followed by the ``inner`` family's states, learned as usual
    (see the module docstring, :mod:`hiddenstate.families.blackbox`). The family's rows are
    ``[log f_1, ..., log f_Ks, x]``; :class:`hiddenstate.PROPS` builds them from its sources
    (:meth:`join`), and its ``validate_X`` refuses data from anywhere else.

    Parameters
    ----------
    n_sources : int
        The number of source states :math:`K_s`.
    inner : EmissionFamily
        The family of the perturbation states.

    See Also
    --------
    hiddenstate.PROPS : The model that uses this family.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families import BlackBoxEmissions, CategoricalEmissions
    >>> family = BlackBoxEmissions(1, CategoricalEmissions(n_states=1, n_features=3))
    >>> rows = family.join(np.log([[0.5], [0.25]]), np.array([2, 0]))  # f(y_t), then y_t
    >>> params = {"emissionprob": np.array([[0.2, 0.3, 0.5]])}
    >>> np.exp(family.log_likelihood(params, rows))
    array([[0.5 , 0.5 ],
           [0.25, 0.2 ]])
    """

    def __init__(self, n_sources: int, inner: EmissionFamily):
        super().__init__(n_sources + inner.n_states, inner.n_features)
        self.n_sources = n_sources
        self.inner = inner
        self.letters = inner.letters

    # -- data -----------------------------------------------------------------------------------
    def split(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Split augmented rows into the source log-probabilities and the inner observations.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_sources + n_inner)
            Augmented rows.

        Returns
        -------
        log_f : ndarray of shape (n_samples, n_sources)
            The source log-probabilities.
        Xi : ndarray
            The inner family's observations (categorical: int64 symbols).
        """
        Ks = self.n_sources
        Xi = X[:, Ks:]
        if isinstance(self.inner, CategoricalEmissions):
            Xi = Xi[:, 0].astype(np.int64)
        return X[:, :Ks], Xi

    @staticmethod
    def join(log_f: np.ndarray, Xi: np.ndarray) -> np.ndarray:
        r"""Build augmented rows from source log-probabilities and inner observations.

        Parameters
        ----------
        log_f : ndarray of shape (n_samples, n_sources)
            The source log-probabilities :math:`\log f_k(y_t \mid y_{<t})`.
        Xi : array-like
            The inner family's observations (a symbol is stored as a float, exact below
            :math:`2^{53}`).

        Returns
        -------
        ndarray of shape (n_samples, n_sources + n_inner)
            The rows ``[log f | x]``.
        """
        Xi = np.asarray(Xi, dtype=np.float64)
        return np.hstack([log_f, Xi.reshape(len(Xi), -1)])

    def validate_X(self, X, fitted_n_features):
        raise InvalidInputError(
            "X: a BlackBoxEmissions family takes rows built by hiddenstate.PROPS from its "
            "sources; use PROPS")

    def infer_n_features(self, X):
        return self.inner.n_features

    # -- the emission table and the statistics -----------------------------------------------------
    def log_likelihood(self, params, X):
        log_f, Xi = self.split(X)
        return np.hstack([log_f, self.inner.log_likelihood(params, Xi)])

    def table(self, params, X, occupied=None):
        return EmissionTable.from_log_likelihood(self.log_likelihood(params, X), occupied)

    def statistics(self, X, post):
        r"""Compute the inner family's statistics from the perturbation columns of ``post``.

        Per row; categorical counts are summed by symbol, as the inner family expects; a
        missing symbol, ``-1``, counts for none.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            The observations, as :meth:`validate_X` returns them.
        post : ndarray of shape (n_samples, n_states)
            The E-step's state posteriors :math:`\gamma_{tk}`.

        Returns
        -------
        dict
            The sufficient statistics (see :meth:`mstep`).
        """
        _, Xi = self.split(X)
        post_p = post[:, self.n_sources:]
        if isinstance(self.inner, CategoricalEmissions):
            if len(Xi) and Xi.min() < 0:
                seen = Xi >= 0
                Xi, post_p = Xi[seen], post_p[seen]
            W = self.inner.n_features
            by_symbol = np.empty((W, post_p.shape[1]))
            for j in range(post_p.shape[1]):
                by_symbol[:, j] = np.bincount(Xi, weights=post_p[:, j], minlength=W)
            return self.inner.statistics(Xi, by_symbol)
        return self.inner.statistics(Xi, post_p)

    def statistics_at(self, params, X, post):
        r"""Compute the statistics with the E-step's parameters at hand.

        The inner family's ``statistics_at``: a Gaussian's rows with missing entries need them.

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"means"``, ``"covars"``, ...).
        X : ndarray of shape (n_samples, n_features)
            The observations, as :meth:`validate_X` returns them.
        post : ndarray of shape (n_samples, n_states)
            The E-step's state posteriors :math:`\gamma_{tk}`.

        Returns
        -------
        dict
            The sufficient statistics (see :meth:`mstep`).
        """
        if isinstance(self.inner, CategoricalEmissions):
            return self.statistics(X, post)
        _, Xi = self.split(X)
        return self.inner.statistics_at(params, Xi, post[:, self.n_sources:])

    # -- everything else is the inner family's --------------------------------------------------
    def merge_statistics(self, a, b):
        return self.inner.merge_statistics(a, b)

    def learned_part(self):
        """Return the inner family, after the ``n_sources`` source states.

        Returns
        -------
        family : EmissionFamily
            The inner family.
        n_fixed : int
            ``n_sources``.
        """
        return self.inner, self.n_sources

    def autocorrelation_data(self, X):
        """Return the inner family's autocorrelation data, of the inner observations.

        The source columns are left out.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            The observations, as :meth:`validate_X` returns them.

        Returns
        -------
        data : ndarray
            The observations to correlate.
        symbols : bool
            Whether they are symbols.
        """
        return self.inner.autocorrelation_data(self.split(X)[1])

    def table_build_copies(self):
        """Count the inner family's arrays, plus the source columns' log-likelihood and its copy.

        Returns
        -------
        int
            The number of ``(N, K)`` arrays alive at once (see
            :meth:`EmissionFamily.table_build_copies`).
        """
        return 2 + self.inner.table_build_copies()

    def statistic_vector(self):
        return self.inner.statistic_vector()

    def mstep(self, params, stats, which):
        new, dead = self.inner.mstep(params, stats, which)
        return new, [self.n_sources + k for k in dead]

    def log_prior(self, params):
        return self.inner.log_prior(params)

    def vb_init(self, params, n_virtual):
        return self.inner.vb_init(params, n_virtual)

    def vb_update(self, q, stats, which):
        return self.inner.vb_update(q, stats, which)

    def vb_expected(self, q):
        return self.inner.vb_expected(q)

    def vb_kl(self, q):
        return self.inner.vb_kl(q)

    def vb_mean(self, q):
        return self.inner.vb_mean(q)

    def sample_posterior(self, params, stats, which, rng):
        return self.inner.sample_posterior(params, stats, which, rng)

    def sample_missing(self, params, X, states, rng):
        Xi = self.split(X)[1]
        k = self.n_sources
        learned = states >= k
        if not learned.any():
            return X
        filled = Xi.copy()
        filled[learned] = self.inner.sample_missing(params, Xi[learned], states[learned] - k,
                                                    rng)
        if filled is Xi or np.array_equal(filled, Xi, equal_nan=True):
            return X
        out = X.copy()
        out[:, k:] = filled.reshape(len(X), -1)
        return out

    def initialize(self, X, rng):
        return self.inner.initialize(self.split(X)[1], rng)

    def check_params(self, params):
        return self.inner.check_params(params)

    def sample(self, params, states, rng):
        raise InvalidInputError(
            "states: source states emit from their black-box model, which needs the history; "
            "use PROPS.sample")

    def n_free_parameters(self):
        return self.inner.n_free_parameters()

r"""Multinomial emissions: each observation is a vector of counts over W categories from
:math:`n` trials (hmmlearn 0.3's ``MultinomialHMM``),

.. math::
    \log p(x \mid z = k) = \log n! - \sum_w \log x_w! + \sum_w x_w \log p_{kw},
    \qquad n = \sum_w x_w .

The statistics are the posterior-weighted counts :math:`\sum_t \gamma_{tk} x_{tw}`; the
``emissionprob`` rows are a :class:`~.dirichlet.DirichletRows` block on those counts, so
the MLE, the MAP estimate under a Dirichlet ``emissionprob_prior`` and the variational
posterior (MacKay 1997; Beal 2003, ch. 3: the E-step uses
:math:`\exp E_q\log p_{kw}`, which enters the log-likelihood linearly) are the categorical
family's. With ``n_trials = 1`` the model is a categorical HMM on one-hot rows.

``n_trials``: ``None`` (each row's total is its own number of trials) or an int (or an
``(n_samples,)`` array) that every row's total must equal; sampling needs a single int.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from .._validation import check_counts, check_positive_int, check_stochastic
from ..errors import InvalidInputError
from .base import EmissionFamily, kmeans
from .dirichlet import DirichletEmissionRows, DirichletRows


def check_n_trials(n_trials, name: str = "n_trials"):
    """``None``, an int >= 1 or an array of ints >= 0 (per row); returned as given (an
    array as int64)."""
    if n_trials is None:
        return None
    if isinstance(n_trials, (int, np.integer)) and not isinstance(n_trials, bool):
        return check_positive_int(n_trials, name)
    arr = np.asarray(n_trials)
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer) or np.any(arr < 0):
        raise InvalidInputError(
            f"{name}: expected None, an int >= 1 or a 1-D array of non-negative ints (one "
            f"per row), got {n_trials!r:.60}")
    return arr.astype(np.int64)


class MultinomialEmissions(DirichletEmissionRows, EmissionFamily):
    r"""Multinomial emissions: count vectors over W categories from :math:`n` trials.

    ``emissionprob`` ``(K, W)``: the category probabilities of state k's trials; the rows are
    a :class:`DirichletRows` block on the posterior-weighted counts (see the module
    docstring, :mod:`hiddenstate.families.multinomial`). Observations are ``(n_samples, W)``
    count vectors; with ``n_trials = 1`` the model is a categorical HMM on one-hot rows.
    Built by :class:`hiddenstate.HMM` for ``emission="multinomial"`` (hmmlearn 0.3's
    MultinomialHMM).

    Parameters
    ----------
    n_states : int
        The number of hidden states K.
    n_features : int
        The number of categories W.
    n_trials : int or array-like of int or None, default=None
        None: each row's total is its own number of trials; an int (or an ``(n_samples,)``
        array) that every row's total must equal. Sampling needs a single int.
    emissionprob_prior : float or array-like, default=1.0
        The Dirichlet :math:`\alpha` of the rows (1: maximum likelihood).

    See Also
    --------
    CategoricalEmissions : One symbol per observation.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families import MultinomialEmissions
    >>> family = MultinomialEmissions(n_states=2, n_features=3, n_trials=2)
    >>> params = {"emissionprob": np.array([[0.5, 0.5, 0.0], [0.1, 0.1, 0.8]])}
    >>> X = family.validate_X(np.array([[1, 1, 0], [0, 0, 2]]), None)
    >>> np.exp(family.log_likelihood(params, X)).round(3)
    array([[0.5 , 0.02],
           [0.  , 0.64]])
    """

    letters = {"e": "emissionprob"}
    counts_key = "obs"   # the Poisson layout, which online EM accumulates

    def __init__(self, n_states: int, n_features: int, n_trials=None, emissionprob_prior=1.0):
        super().__init__(n_states, n_features)
        self.n_trials = check_n_trials(n_trials)
        self.emissionprob_prior = emissionprob_prior
        self.rows = DirichletRows("emissionprob", "e", emissionprob_prior)

    def validate_X(self, X, fitted_n_features):
        X = check_counts(X, fitted_n_features, family="multinomial")
        if self.n_trials is not None:
            totals = X.sum(axis=1)
            want = np.broadcast_to(self.n_trials, totals.shape) \
                if np.ndim(self.n_trials) == 0 or len(self.n_trials) == len(X) else None
            if want is None:
                raise InvalidInputError(
                    f"n_trials: has {len(self.n_trials)} entries but X has {len(X)} rows")
            bad = np.flatnonzero(totals != want)
            if len(bad):
                raise InvalidInputError(
                    f"X: row {bad[0]} has {totals[bad[0]]:g} trials in total, but n_trials is "
                    f"{want[bad[0]]}; every row's counts must add up to n_trials (or pass "
                    "n_trials=None)")
        return X

    def infer_n_features(self, X):
        return X.shape[1]

    def log_likelihood(self, params, X):
        r"""Compute the multinomial log pmf of every row under every state.

        A count in a category of probability 0 makes the row impossible (-inf), a zero count
        there contributes nothing (0 log 0 = 0).

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"means"``, ``"covars"``, ...).
        X : ndarray of shape (n_samples, n_features)
            The observations, as :meth:`validate_X` returns them.

        Returns
        -------
        ndarray of shape (n_samples, n_states)
            :math:`\log p(x_t \mid z_t = k)`.
        """
        p = params["emissionprob"]
        with np.errstate(divide="ignore"):
            logp = np.log(p)
        terms = X @ np.where(p > 0, logp, 0.0).T
        impossible = (X > 0).astype(np.float64) @ (p <= 0).T.astype(np.float64)
        out = terms + (gammaln(X.sum(axis=1) + 1) - gammaln(X + 1).sum(axis=1))[:, None]
        out[impossible > 0] = -np.inf
        return out

    def statistics(self, X, post):
        r"""Compute the posterior mass and the posterior-weighted counts.

        ``post`` (K,) and ``obs`` (K, W): the Poisson family's layout, which the online EM
        learner accumulates.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            The observations, as :meth:`validate_X` returns them.
        post : ndarray of shape (n_samples, n_states)
            The E-step's state posteriors :math:`\gamma_{tk}`.

        Returns
        -------
        dict
            ``post`` and ``obs``.
        """
        return {"post": post.sum(axis=0), "obs": post.T @ X}

    def statistic_vector(self):
        """Tell online EM to accumulate (1, x), the Poisson family's vector.

        Returns
        -------
        tuple of (str, None)
            ``("counts", None)``.
        """
        return "counts", None

    def streaming_mstep_family(self, params, emissionprob_prior):
        """Return a copy under online EM's Dirichlet prior: the rows are categorical rows.

        Online EM estimates them under its own prior ``emissionprob_prior(params["emissionprob"])``.

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"means"``, ``"covars"``, ...).
        emissionprob_prior : callable
            ``emissionprob_prior(emissionprob) -> alpha``, the learner's Dirichlet prior.

        Returns
        -------
        MultinomialEmissions
            The family with that prior.
        """
        return MultinomialEmissions(self.n_states, self.n_features, None,
                                    emissionprob_prior(params["emissionprob"]))

    def initialize(self, X, rng):
        """Initialise the rows by k-means on the rows' proportions.

        Each state starts at the pooled proportions of one cluster (:func:`~.base.kmeans`),
        mixed 99:1 with the overall proportions so that no category is impossible in any state.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            The observations, as :meth:`validate_X` returns them.
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        dict of str to ndarray
            ``{"emissionprob": (K, W)}``.
        """
        K, W = self.n_states, X.shape[1]
        totals = X.sum(axis=1, keepdims=True)
        prop = X / np.where(totals > 0, totals, 1.0)
        overall = X.sum(axis=0) + 1.0
        overall /= overall.sum()
        if len(X) >= K:
            labels = kmeans(prop, K, rng)[1]
            sums = np.zeros((K, W))
            np.add.at(sums, labels, X)
        else:
            sums = X[rng.integers(len(X), size=K)].astype(np.float64)
        row = sums.sum(axis=1, keepdims=True)
        B = np.where(row > 0, sums / np.where(row > 0, row, 1.0), overall)
        return {"emissionprob": 0.99 * B + 0.01 * overall}

    def check_params(self, params):
        return {"emissionprob": check_stochastic(
            params["emissionprob"], (self.n_states, self.n_features), "emissionprob_")}

    def sample(self, params, states, rng):
        n = self.n_trials
        if n is None or np.ndim(n) != 0:
            raise InvalidInputError(
                "n_trials: sampling needs a single number of trials per row; set n_trials "
                "to an int")
        p = params["emissionprob"]
        out = np.empty((len(states), self.n_features))
        for k in np.unique(states):
            rows = np.flatnonzero(states == k)
            out[rows] = rng.multinomial(n, p[k] / p[k].sum(), size=len(rows))
        return out

    def n_free_parameters(self):
        return self.n_states * (self.n_features - 1)

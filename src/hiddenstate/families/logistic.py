r"""Logistic-regression emissions (the GLM-HMM of decision-making studies): each state
regresses a categorical observation on a design row by a softmax.

.. math::
    P(y_t = c \mid z_t = k) = \frac{e^{w_{kc}^\top \phi_t}}{\sum_{c'} e^{w_{kc'}^\top\phi_t}},
    \qquad w_{k0} = 0,

with categories ``0 .. C - 1`` (``C = 2``: Bernoulli logistic regression, ``coef[:, 1]``
the usual logistic weights) and category 0 the reference. The rows are ``Z = [y | phi]``
(``y`` the category as a number, ``-1`` missing; ``phi = [inputs | 1]``), built by
:class:`hiddenstate.RegressionHMM` for ``emission="logistic"``.

The M-step is exact: per state, Newton's method (IRLS) with a line search on the expected
complete-data log-likelihood (:func:`~.softmax.softmax_newton`), so EM never decreases the
objective. Maximum likelihood does not exist when a state's rows are separable (the
coefficients grow without bound; the state is then reported degenerate); the prior, a
zero-mean Gaussian of precision ``coef_weight`` on every coefficient (intercepts included),
makes the MAP estimate unique and finite. There is no conjugate prior: ``learn="vb"`` is
refused (:meth:`EmissionFamily.vb_init <hiddenstate.families.EmissionFamily.vb_init>`).
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from .base import DEAD_MASS
from .regression import _RegressionFamily
from .softmax import logsumexp, softmax_newton


class LogisticEmissions(_RegressionFamily):
    r"""Softmax (logistic) regression of a categorical observation per state.

    Parameters ``coef`` ``(K, C, Q)`` and ``intercept`` ``(K, C)``, category 0's row kept
    at zero by the M-step (module docstring).

    Parameters
    ----------
    n_states : int
        The number of hidden states K.
    n_features : int
        The number of categories C (>= 2).
    n_regressors : int
        The design columns Q besides the intercept.
    fit_intercept : bool, default=True
        Whether the design ends with a column of ones.
    coef_weight : float or array-like, default=0.0
        The precision of the Gaussian prior on every coefficient row: a scalar (times the
        identity), a ``(P,)`` diagonal or ``(P, P)`` (0: flat).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families import LogisticEmissions
    >>> family = LogisticEmissions(n_states=2, n_features=2, n_regressors=1)
    >>> params = {"coef": np.array([[[0.0], [2.0]], [[0.0], [-2.0]]]),
    ...           "intercept": np.zeros((2, 2))}
    >>> Z = np.array([[1.0, 1.0, 1.0], [-1.0, 0.3, 1.0]])   # [y | input, 1]; -1: missing
    >>> np.exp(family.log_likelihood(params, Z)).round(3)
    array([[0.881, 0.119],
           [1.   , 1.   ]])
    """

    letters = {"r": "coef"}

    def __init__(self, n_states, n_features, n_regressors, fit_intercept=True,
                 coef_weight=0.0):
        super().__init__(n_states, n_features, n_regressors, fit_intercept, coef_weight)

    @property
    def parameter_columns(self) -> int:
        return self.n_features * self.n_design

    def infer_n_features(self, X):
        return max(2, int(np.max(X[:, 0])) + 1)

    def autocorrelation_data(self, X):
        return X[:, 0].astype(np.int64), True

    def _rows(self, Z):
        y = Z[:, 0].astype(np.int64)
        return y, Z[:, 1:], y < 0

    def category_log_proba(self, params: dict, design: np.ndarray) -> np.ndarray:
        r""":math:`\log P(y = c \mid z = k, \phi)` for every design row, state and category.

        Parameters
        ----------
        params : dict
            ``coef`` and ``intercept``.
        design : ndarray of shape (n, P)
            The design rows.

        Returns
        -------
        ndarray of shape (n, K, C)
            The log-probabilities.
        """
        logits = np.einsum("tp,kcp->tkc", design, self.weights(params))
        return logits - logsumexp(logits, axis=2, keepdims=True)

    def log_likelihood(self, params, X):
        r"""Compute :math:`\log P(y_t \mid z_t = k, \phi_t)` (0 for a missing ``y``).

        Parameters
        ----------
        params : dict
            ``coef`` and ``intercept``.
        X : ndarray of shape (n, 1 + P)
            Rows ``[y | phi]``.

        Returns
        -------
        ndarray of shape (n, K)
            The log-likelihoods.
        """
        y, phi, miss = self._rows(X)
        logp = self.category_log_proba(params, phi)
        out = np.take_along_axis(logp, np.maximum(y, 0)[:, None, None], axis=2)[..., 0]
        if miss.any():
            out[miss] = 0.0
        return out

    def statistics(self, X, post):
        r"""Compute the sums :math:`S_{kc} = \sum_t \gamma_{tk}[y_t = c]\phi_t` and keep the rows.

        Parameters
        ----------
        X : ndarray of shape (n, 1 + P)
            Rows ``[y | phi]``.
        post : ndarray of shape (n, K)
            The state posteriors.

        Returns
        -------
        dict
            ``S`` (K, C, P), ``n`` (K,), and the observed rows' ``post`` (m, K) and ``phi``
            (m, P), which the Newton M-step reads.
        """
        y, phi, miss = self._rows(X)
        keep = ~miss
        y, phi, post = y[keep], phi[keep], post[keep]
        onehot = np.zeros((len(y), self.n_features))
        onehot[np.arange(len(y)), y] = 1.0
        S = np.einsum("tk,tc,tp->kcp", post, onehot, phi)
        return {"S": S, "n": post.sum(axis=0), "post": post, "phi": phi}

    def merge_statistics(self, a, b):
        """Sum ``S`` and ``n``; concatenate the rows (exact).

        Parameters
        ----------
        a, b : dict
            The statistics of two disjoint sets of rows.

        Returns
        -------
        dict
            Those of their union.
        """
        return {"S": a["S"] + b["S"], "n": a["n"] + b["n"],
                "post": np.concatenate([a["post"], b["post"]]),
                "phi": np.concatenate([a["phi"], b["phi"]])}

    def mstep(self, params, stats, which):
        if "r" not in which:
            return params, []
        W = self.weights(params).copy()
        free = np.arange(self.n_features) > 0
        degenerate = []
        for k in range(self.n_states):
            if not stats["n"][k] >= DEAD_MASS:
                degenerate.append(k)
                continue
            r = stats["post"][:, k]
            rows = r > 0
            W0 = W[k] - W[k, 0]    # the reference row at zero (same probabilities)
            W[k], ok = softmax_newton(stats["S"][k], r[rows], stats["phi"][rows], W0,
                                      self._precision(), free)
            if not ok:
                degenerate.append(k)
        return self._split(W), degenerate

    def log_prior(self, params):
        r"""Compute :math:`-\tfrac\kappa2 \sum \|w\|^2` (0 for the flat prior of EM).

        Parameters
        ----------
        params : dict
            ``coef`` and ``intercept``.

        Returns
        -------
        float
            The log prior up to a constant.
        """
        W = self.weights(params)
        return float(-0.5 * np.einsum("kcp,pq,kcq->", W, self._precision(), W))

    def initialize(self, X, rng):
        """Start every state at the one-state fit, perturbed.

        The MAP fit of one softmax regression to every observed row (prior precision 1),
        plus per state Gaussian noise of standard deviation ``0.5 / sd(column)`` on each
        coefficient (0.5 on the intercepts), so that the states start apart on the scale of
        the inputs.

        Parameters
        ----------
        X : ndarray of shape (n, 1 + P)
            Rows ``[y | phi]``.
        rng : numpy.random.Generator
            The generator.

        Returns
        -------
        dict
            ``coef`` and ``intercept``.
        """
        K, C, P = self.n_states, self.n_features, self.n_design
        y, phi, miss = self._rows(X)
        y, phi = y[~miss], phi[~miss]
        if len(y) == 0:
            raise InvalidInputError("X: every observation is missing (-1); nothing to fit")
        onehot = np.zeros((len(y), C))
        onehot[np.arange(len(y)), y] = 1.0
        W, _ = softmax_newton(np.einsum("tc,tp->cp", onehot, phi), np.ones(len(y)), phi,
                              np.zeros((C, P)),
                              np.eye(P), np.arange(C) > 0, max_iter=25)
        sd = phi.std(axis=0)
        scale = 0.5 / np.where(sd > 0, sd, 1.0)
        noise = rng.normal(size=(K, C, P)) * scale
        noise[:, 0] = 0.0
        return self._split(W[None] + noise)

    def check_params(self, params):
        K, C, Q = self.n_states, self.n_features, self.n_regressors
        return self._checked(params, {"coef": ((K, C, Q), ", n_regressors)"),
                                      "intercept": ((K, C), ")")}, "n_categories")

    def sample(self, params, states, rng, design=None):
        """Draw one category per row of ``design`` from the state's softmax.

        Parameters
        ----------
        params : dict
            ``coef`` and ``intercept``.
        states : ndarray of int of shape (n,)
            The state of each draw.
        rng : numpy.random.Generator
            The generator.
        design : ndarray of shape (n, P)
            The design row of each draw (required).

        Returns
        -------
        ndarray of int64 of shape (n,)
            The categories.
        """
        self._require_design(design)
        p = np.exp(self.category_log_proba(params, design)[np.arange(len(states)), states])
        u = rng.random(len(states))
        return np.minimum((np.cumsum(p, axis=1) < u[:, None]).sum(axis=1),
                          self.n_features - 1).astype(np.int64)

    def n_free_parameters(self):
        return self.n_states * (self.n_features - 1) * self.n_design

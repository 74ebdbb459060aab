r"""Gaussian emissions with spherical, diagonal, full or tied covariances.

M-step (Huang, Acero & Hon, *Spoken Language Processing*, pp. 443-445, as in hmmlearn),
with posterior weights :math:`\gamma_{tk}`, :math:`n_k = \sum_t \gamma_{tk}`, prior mean
:math:`\mu_0` with weight :math:`\lambda` and covariance prior :math:`\Psi` with weight
:math:`\nu`:

.. math::
    \mu_k = \frac{\lambda\mu_0 + \sum_t \gamma_{tk} x_t}{\lambda + n_k}, \qquad
    \Sigma_k = \frac{\Psi + \lambda(\mu_k-\mu_0)(\mu_k-\mu_0)^\top
        + \sum_t \gamma_{tk}(x_t-\mu_k)(x_t-\mu_k)^\top}{\max(\nu - D', 0) + n_k},

(:math:`D' = 1` for diagonal/spherical, :math:`D` for full/tied). Plain EM uses
:math:`\lambda = 0, \Psi = 0, \nu = 1`: the maximum-likelihood estimate.

The sums are never raw moments: :meth:`GaussianEmissions.statistics` takes them about a
reference point near each state (``shift``), and the M-step computes the scatter about the
new mean from them, so that data far from the origin (an offset of 1e12 on unit spread)
are fitted as accurately as data near it: the fit of ``X + c`` is that of ``X`` shifted,
up to the rounding of ``X + c`` itself.

Safeguards, each with a :class:`~hiddenstate.errors.DegenerateStateWarning` naming the
state: a state with no posterior mass (below :data:`~.base.DEAD_MASS`; any larger mass,
however small, gets its M-step, as in hmmlearn) keeps its previous mean and covariance; a
variance (or covariance eigenvalue) below ``min_covar`` is raised to ``min_covar``; a
full/tied covariance that is still not positive definite to working precision (its
eigenvalues spanning more than the 16 digits of float64, e.g. under a huge MAP prior
scatter divided by a tiny mass) keeps its previous value.

**Variational Bayes** (Bishop, PRML sec. 10.2; Beal 2003, ch. 3). The prior is
Normal-Wishart on the mean and *precision* :math:`\Lambda_k = \Sigma_k^{-1}`,

.. math::
    \mu_k \mid \Lambda_k \sim N(m_0, (\beta_0\Lambda_k)^{-1}), \qquad
    \Lambda_k \sim \mathcal W(\nu_0, W_0), \quad W_0 = S_0^{-1},

with the MAP arguments read as :math:`m_0` = ``means_prior``, :math:`\beta_0` =
``means_weight``, :math:`\nu_0` = ``covars_weight`` and :math:`S_0` = ``covars_prior``, the
*covariance-like* scale :math:`W_0^{-1}` (prior covariance times dof, as hmmlearn's
``VariationalGaussianHMM.scale_prior``; a scalar means that times the identity for
full/tied, a ``(D,)`` vector a diagonal). The MAP M-step above is the mode of exactly this
prior times the likelihood in :math:`(\mu, \Lambda)` (the :math:`\max(\nu - D, 0)` is
:math:`\nu_0 - D` below the Wishart's :math:`|\Lambda|^{(\nu_0-D-1)/2}` plus the Normal's
:math:`|\Lambda|^{1/2}`), so MAP and VB share one prior. Diagonal: independent Normal-Gamma
per dimension, :math:`\lambda_{kd} \sim \mathrm{Gamma}(\nu_0/2, \text{rate } s_{0d}/2)` (the
one-dimensional Wishart). Spherical: one precision per state,
:math:`\lambda_k \sim \mathrm{Gamma}(D\nu_0/2, \text{rate } D s_0/2)` (:math:`\nu_0`
pseudo-observations of each of the D coordinates). Tied: one :math:`\Lambda` for all states.
A proper prior needs :math:`\beta_0 > 0`, :math:`\nu_0 > D - 1` (full, tied) or
:math:`\nu_0 > 0` (diag, spherical) and a positive (definite) :math:`S_0`; anything else
raises :class:`~hiddenstate.errors.InvalidInputError` in VB.

The posterior ``q`` has the same form, with keys ``means`` :math:`m` (K, D), ``beta``
:math:`\beta` (K,), ``dof`` :math:`\nu` ((K,); a scalar when tied) and ``scale`` :math:`S`
(shaped like ``covars``): hmmlearn's ``VariationalGaussianHMM`` names and conventions
(``means_posterior_``...). For full and tied covariances the updates, the expected
log-likelihood and the bound are those of hmmlearn (whose table leaves out the
:math:`-\frac D2\log 2\pi`). For diagonal and spherical covariances hmmlearn treats
:math:`\mathrm{diag}(s)` / :math:`sI` as the scale of a D-dimensional Wishart, which is not
conjugate to those models: the updates agree, but its :math:`E\log|\Lambda|` uses
:math:`\sum_{i<D}\psi(\frac{\nu-i}2)` where the Gamma model has :math:`D\psi(\frac\nu2)`
(diag) or :math:`D\psi(\frac{D\nu}2) - D\log D` (spherical), and its KL is a Wishart KL;
the two coincide for D = 1.

*Missing entries in VB.* A row with observed dimensions :math:`o` is scored by the exact
:math:`E_q[\log N(x_o \mid \mu_o, \Sigma_{oo})]` (per dimension for diag/spherical; for
full/tied through the marginal posterior of :math:`\Sigma_{oo}`, see
:meth:`GaussianEmissions._vb_marginal`). Its missing dimensions enter the update of
:math:`q(\mu, \Lambda)` by their conditional moments under :math:`N(m, (E_q\Lambda)^{-1})`
(the E-step view's ``means`` and ``covars``): the mean-field optimum
:math:`q(x_m \mid z) \propto \exp E_q \log N(x \mid \mu, \Lambda^{-1})`, whose mean is
also :math:`E_q[E[x_m \mid x_o, \mu, \Lambda]]` (under the inverse Wishart,
:math:`E[\Sigma_{mo}\Sigma_{oo}^{-1}] = S_{mo}S_{oo}^{-1}`). The collapsed bound that the
exact row term belongs to has no conjugate maximiser over :math:`q(\mu, \Lambda)` when
the patterns differ, so this update is not its exact coordinate step: the bound rises
until convergence and may then drift by less than 1e-9 relative (measured 7e-12 with 30%
of the entries missing; ``tests/test_vb_families.py``).
"""

from __future__ import annotations

import numpy as np
from scipy import linalg
from scipy.special import digamma, gammaln, multigammaln

from .._validation import broadcast_param, check_real_X
from ..errors import InvalidInputError, NumericalError
from ..inference import EmissionTable, all_occupied
from ..kernels import gaussian_diag_cancelling, gaussian_diag_loglik, gaussian_diag_mstep
from .base import (
    DEAD_MASS,
    EmissionFamily,
    fill_missing,
    kmeans,
    labelled_mean,
    reference_point,
)
from .fixed import as_fixed, impose
from .posterior_draws import covariance_draw, normal_given_covariance, normal_wishart

COVARIANCE_TYPES = ("spherical", "diag", "full", "tied")
_LOG_2PI = np.log(2.0 * np.pi)
_SUM_ROWS = 2048  # rows per block of the statistics' matrix products
#: second moment about the reference point over the centred variance above which a
#: (state, dimension) is summed again about its own mean (the variance would keep fewer
#: than about 16 - 6 = 10 significant digits)
_CANCEL = 1e6


def covars_shape(covariance_type: str, K: int, D: int) -> tuple[int, ...]:
    return {"spherical": (K,), "diag": (K, D), "full": (K, D, D), "tied": (D, D)}[
        covariance_type]


def full_covars(covars: np.ndarray, covariance_type: str, K: int, D: int) -> np.ndarray:
    """Expand stored covariances to ``(K, D, D)`` (hmmlearn's ``covars_`` getter)."""
    if covariance_type == "full":
        return covars
    if covariance_type == "diag":
        return np.stack([np.diag(c) for c in covars])
    if covariance_type == "tied":
        return np.broadcast_to(covars, (K, D, D)).copy()
    return np.eye(D)[None] * covars[:, None, None]


class GaussianEmissions(EmissionFamily):
    r"""Gaussian emissions with spherical, diagonal, full or tied covariances.

    Parameters ``means`` ``(K, D)`` and ``covars`` (``(K,)`` spherical, ``(K, D)`` diag,
    ``(K, D, D)`` full, ``(D, D)`` tied). The M-step (Huang, Acero & Hon, as in hmmlearn),
    its MAP prior, the Normal-Wishart variational posterior, the statistics about reference
    points that make fits shift-invariant, the safeguards and the treatment of missing entries
    (NaN, marginalised) are stated in the module docstring
    (:mod:`hiddenstate.families.gaussian`). Built by :class:`hiddenstate.HMM` for
    ``emission="gaussian"``.

    Parameters
    ----------
    n_states : int
        The number of hidden states K.
    n_features : int
        The number of features D.
    covariance_type : {"spherical", "diag", "full", "tied"}, default="diag"
        The form of the covariances.
    min_covar : float, default=1e-3
        The floor of every variance (covariance eigenvalue); a state raised to it gets a
        :class:`~hiddenstate.errors.DegenerateStateWarning`.
    means_prior : float or array-like, default=0.0
        :math:`\mu_0`, the prior mean of the means (VB: :math:`m_0`).
    means_weight : float or array-like, default=0.0
        :math:`\lambda`, its weight in pseudo-observations (VB: :math:`\beta_0`, > 0).
    covars_prior : float or array-like, default=0.0
        :math:`\Psi`, the prior scatter of the covariances (VB: the covariance-like Wishart
        scale :math:`S_0`, positive (definite)).
    covars_weight : float or array-like, default=1.0
        :math:`\nu`, its weight (VB: :math:`\nu_0`, > D - 1 for full/tied, > 0 otherwise).

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``covariance_type`` is not one of :data:`COVARIANCE_TYPES`.

    See Also
    --------
    GMMEmissions : A mixture of Gaussians per state.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families import GaussianEmissions
    >>> family = GaussianEmissions(n_states=2, n_features=2, covariance_type="diag")
    >>> params = {"means": np.array([[0.0, 0.0], [5.0, 5.0]]), "covars": np.ones((2, 2))}
    >>> X = family.validate_X(np.array([[0.0, 0.5], [5.0, np.nan], [np.nan, np.nan]]), None)
    >>> family.log_likelihood(params, X).round(3)            # NaN entries marginalised
    array([[ -1.963, -24.463],
           [-13.419,  -0.919],
           [  0.   ,   0.   ]])
    """

    letters = {"m": "means", "c": "covars"}
    table_rows_exact = True  # the scaling kernel, or table's default: the same numbers

    def __init__(self, n_states, n_features, covariance_type="diag", min_covar=1e-3,
                 means_prior=0.0, means_weight=0.0, covars_prior=0.0, covars_weight=1.0):
        super().__init__(n_states, n_features)
        if covariance_type not in COVARIANCE_TYPES:
            raise InvalidInputError(
                f"covariance_type: {covariance_type!r} is not one of {COVARIANCE_TYPES}")
        self.covariance_type = covariance_type
        self.min_covar = float(min_covar)
        self.means_prior = means_prior
        self.means_weight = means_weight
        self.covars_prior = covars_prior
        self.covars_weight = covars_weight

    def validate_X(self, X, fitted_n_features):
        """Check real rows; NaN marks a missing entry (see :meth:`log_likelihood`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The observations.
        fitted_n_features : int or None
            The number of features of a fitted model, which ``X`` must match; None: not fitted
            yet.

        Returns
        -------
        ndarray of shape (n_samples, n_features), dtype float64
            The rows.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``X`` is not a 2-D array of real numbers (infinities refused), or has another
            number of features than the fitted model.
        """
        return check_real_X(X, fitted_n_features, allow_missing=True)

    def infer_n_features(self, X):
        return X.shape[1]

    # -- log-likelihood ---------------------------------------------------------------------
    def _diag_loglik(self, params, X, scale: bool,
                     occupied: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Diagonal/spherical table by :func:`~hiddenstate.kernels.gaussian_diag_loglik`:
        ``(log-likelihood, empty)``, or with ``scale`` ``(log-likelihood - row max, row max)``
        (the max over the ``occupied`` states)."""
        K, D = self.n_states, X.shape[1]
        covars = params["covars"]
        var = covars if self.covariance_type == "diag" else np.repeat(covars[:, None], D, axis=1)
        log_norm = -0.5 * (D * _LOG_2PI + np.log(var).sum(axis=1))
        if "log_offset" in params:
            log_norm = log_norm + params["log_offset"]
        out = np.empty((len(X), K))
        shift = np.empty(len(X) if scale else 0)
        gaussian_diag_loglik(np.ascontiguousarray(X, dtype=np.float64),
                             np.ascontiguousarray(params["means"], dtype=np.float64), 1.0 / var,
                             log_norm, scale, all_occupied(K, occupied), out, shift)
        return out, shift

    def log_likelihood(self, params, X):
        r"""Compute the Gaussian log density of every row under every state.

        :math:`\log N(x_t \mid \mu_k, \Sigma_k)`, plus ``params["log_offset"][k]`` when present
        (the variational view from :meth:`vb_expected`). Computed from the differences
        ``x_t - means_k`` (never from expanded squares), so it is as accurate for data far
        from the origin as near it.

        Missing entries (NaN) are marginalised: a row with observed dimensions :math:`o`
        gets :math:`\log N(x_o \mid \mu_{k,o}, \Sigma_{k,oo})` (a row with none, 0: no
        emission term). Under the variational view (:meth:`vb_expected`) it gets the
        exact :math:`E_q[\log N(x_o \mid \mu_o, \Sigma_{oo})]`: per observed dimension
        for diagonal and spherical covariances (``log_offset`` times :math:`|o|/D`), and
        for full/tied ones from the marginal posterior of :math:`\Sigma_{oo}`
        (``_vb_marginal``: the inverse-Wishart block, Gupta & Nagar thm. 3.4.1).

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

        Raises
        ------
        hiddenstate.errors.NumericalError
            If a full/tied covariance is not positive definite to working precision.
        """
        miss = np.isnan(X)
        if miss.any():
            return self._missing_loglik(params, X, miss)
        K, D = self.n_states, X.shape[1]
        ct = self.covariance_type
        if ct in ("diag", "spherical"):
            return self._diag_loglik(params, X, False)[0]
        means = params["means"]
        covs = full_covars(params["covars"], ct, K, D)
        out = np.empty((len(X), K))
        for k in range(K):
            chol = _cholesky(covs[k], f"covars_: covariance {k}")
            z = linalg.solve_triangular(chol, (X - means[k]).T, lower=True)
            out[:, k] = -0.5 * (D * _LOG_2PI + (z * z).sum(axis=0)) - np.log(
                np.diag(chol)).sum()
        if "log_offset" in params:
            out += params["log_offset"]
        return out

    def _missing_loglik(self, params, X, miss):
        """:meth:`log_likelihood` of data with missing entries: the complete rows as usual,
        the others by pattern of missing dimensions (:func:`_patterns`)."""
        K, D = self.n_states, X.shape[1]
        out = np.zeros((len(X), K))
        complete = ~miss.any(axis=1)
        if complete.any():
            out[complete] = self.log_likelihood(params, X[complete])
        base = params.get("log_offset")
        means = params["means"]
        covs = full_covars(params["covars"], self.covariance_type, K, D)
        for rows, o in _patterns(miss, complete):
            if "dof" in params:  # full/tied variational view: the marginal posterior
                cov_scale, offset = self._vb_marginal(params, int(o.sum()))
            else:
                cov_scale = np.ones(K)
                offset = None if base is None else base * o.sum() / D
            for k in range(K):
                chol = _cholesky(cov_scale[k] * covs[k][np.ix_(o, o)],
                                 f"covars_: covariance {k} (observed dimensions)")
                z = linalg.solve_triangular(chol, (X[np.ix_(rows, o)] - means[k, o]).T,
                                            lower=True)
                out[rows, k] = (-0.5 * (o.sum() * _LOG_2PI + (z * z).sum(axis=0))
                                - np.log(np.diag(chol)).sum())
                if offset is not None:
                    out[rows, k] += offset[k]
        return out

    def _vb_marginal(self, view: dict, n_obs: int) -> tuple[np.ndarray, np.ndarray]:
        r"""Full/tied variational view, rows with ``n_obs`` = :math:`p` observed dimensions
        :math:`o` (and :math:`D - p` missing): ``(c, offset)`` per state such that
        :math:`E_q[\log N(x_o \mid \mu_o, \Sigma_{oo})] = \log N(x_o \mid m_o,
        c\,(S/\nu)_{oo}) + \text{offset}`.

        If :math:`\Lambda \sim \mathcal W_D(\nu, S^{-1})` then :math:`\Sigma = \Lambda^{-1}`
        is inverse Wishart and its block :math:`\Sigma_{oo}` is inverse Wishart with
        :math:`\nu' = \nu - D + p` degrees of freedom and scale :math:`S_{oo}`, i.e.
        :math:`\Sigma_{oo}^{-1} \sim \mathcal W_p(\nu', S_{oo}^{-1})` (Gupta & Nagar,
        *Matrix Variate Distributions*, thm. 3.4.1), and :math:`\mu_o \mid \Sigma \sim
        N(m_o, \Sigma_{oo}/\beta)`. So (Bishop, PRML eqs. 10.64-10.65 in :math:`p`
        dimensions) :math:`E[\Sigma_{oo}^{-1}] = \nu' S_{oo}^{-1}`, the quadratic term is
        that of :math:`N(m_o, S_{oo}/\nu')` (:math:`c = \nu/\nu'` times the view's
        :math:`(S/\nu)_{oo}`) plus :math:`p/\beta`, and

        .. math::
            \text{offset} = \tfrac12 \textstyle\sum_{i<p}
                \big(\psi(\tfrac{\nu'-i}2) - \log\tfrac{\nu'}2\big) - \tfrac{p}{2\beta}

        (:math:`E\log|\Lambda_o| - \log|E\Lambda_o|` halved; with :math:`p = D` it is the
        view's ``log_offset``)."""
        dof, beta = view["dof"], view["beta"]
        D = self.n_features
        nu = dof - (D - n_obs)
        i = np.arange(n_obs)[:, None]
        half_gap = 0.5 * (digamma(0.5 * (nu - i)).sum(axis=0) - n_obs * np.log(0.5 * nu))
        return dof / nu, half_gap - 0.5 * n_obs / beta

    def _conditionals(self, params, X, miss):
        r"""For the rows with some (not all) dimensions missing, by pattern: ``(rows, m,
        filled, cov)`` with ``filled[k]`` the rows with their missing dimensions :math:`m`
        replaced by :math:`E[x_m \mid x_o, z = k] = \mu_{k,m} + \Sigma_{k,mo}
        \Sigma_{k,oo}^{-1}(x_o - \mu_{k,o})` and ``cov[k]`` the ``(D, D)`` conditional
        covariance, :math:`\Sigma_{k,mm} - \Sigma_{k,mo}\Sigma_{k,oo}^{-1}\Sigma_{k,om}`
        in its ``(m, m)`` block and 0 elsewhere (Ghahramani & Jordan 1994, "Supervised
        learning from incomplete data via an EM approach", sec. 3)."""
        K, D = self.n_states, X.shape[1]
        means = params["means"]
        covs = full_covars(params["covars"], self.covariance_type, K, D)
        for rows, o in _patterns(miss, ~miss.any(axis=1)):
            m = ~o
            filled = np.repeat(X[rows][None], K, axis=0)
            cov = np.zeros((K, D, D))
            for k in range(K):
                S_oo, S_mo = covs[k][np.ix_(o, o)], covs[k][np.ix_(m, o)]
                gain = linalg.cho_solve(linalg.cho_factor(S_oo, lower=True), S_mo.T).T
                filled[k][:, m] = means[k, m] + (X[np.ix_(rows, o)] - means[k, o]) @ gain.T
                cov[k][np.ix_(m, m)] = covs[k][np.ix_(m, m)] - gain @ S_mo.T
            yield rows, m, filled, cov

    def impute(self, params, X, post):
        r"""Replace missing entries by the posterior predictive mean.

        :math:`\sum_k \gamma_{tk} E[x_{t,m} \mid x_{t,o}, z_t = k]` (a row with nothing
        observed: :math:`\sum_k \gamma_{tk}\mu_k`), the conditional means of Ghahramani & Jordan
        (1994).

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"means"``, ``"covars"``, ...).
        X : ndarray of shape (n_samples, n_features)
            The rows (NaN: missing).
        post : ndarray of shape (n_samples, n_states)
            The E-step's state posteriors :math:`\gamma_{tk}`.

        Returns
        -------
        ndarray
            ``X`` with its missing entries filled in (a copy).
        """
        out = X.copy()
        miss = np.isnan(X)
        for rows, m, filled, _ in self._conditionals(params, X, miss):
            mean = np.einsum("nk,knd->nd", post[rows], filled)
            out[np.ix_(rows, m)] = mean[:, m]
        empty = miss.all(axis=1)
        out[empty] = post[empty] @ params["means"]
        return out

    def table(self, params, X, occupied=None):
        """Return the emission table; diagonal/spherical: scaled by the kernel as it computes.

        The kernel (:func:`~hiddenstate.kernels.gaussian_diag_loglik`) scales each row as it
        computes the log-likelihood; full/tied covariances and rows with missing entries go
        through :meth:`EmissionFamily.table`.

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"means"``, ``"covars"``, ...).
        X : ndarray of shape (n_samples, n_features)
            The observations, as :meth:`validate_X` returns them.
        occupied : ndarray of bool, shape (n_states,), or None, default=None
            The states the chain can be in; the others get probability 0 and take no part in
            the row scaling. None: every state.

        Returns
        -------
        hiddenstate.inference.EmissionTable
            The table the forward-backward and Viterbi kernels read.
        """
        if self.covariance_type in ("diag", "spherical") and self._complete(X):
            return EmissionTable.from_shifted(*self._diag_loglik(params, X, True, occupied))
        return super().table(params, X, occupied)

    # -- statistics and M-step --------------------------------------------------------------
    def _complete(self, X) -> bool:
        """Whether ``X`` has no missing entry; computed once per data array (EM asks every
        iteration; a few rows are checked afresh, leaving the data's answer cached)."""
        if len(X) < 64:
            return not np.isnan(X).any()
        cached = getattr(self, "_complete_cache", None)
        if cached is None or cached[0] is not X:
            cached = (X, not np.isnan(X).any())
            self._complete_cache = cached
        return cached[1]

    def _moments(self, X):
        """``(ref, [1, X - ref, (X - ref)**2])`` (``[1, X - ref]`` for full/tied
        covariances), with ``ref`` the :func:`~.base.reference_point` of ``X``; computed
        once per data array (EM reuses it)."""
        cached = getattr(self, "_moments_cache", None)
        if cached is None or cached[0] is not X:
            ref = reference_point(X)
            Xc = X - ref
            cols = [np.ones((len(X), 1)), Xc]
            if self.covariance_type in ("diag", "spherical"):
                cols.append(Xc * Xc)
            cached = (X, ref, np.hstack(cols))
            self._moments_cache = cached
        return cached[1], cached[2]

    def statistics_at(self, params, X, post):
        r"""Compute the statistics with the E-step's parameters at hand.

        Rows with missing entries need them for their conditional expectations
        (:meth:`statistics` with ``params``).

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
        return self.statistics(X, post, params)

    def statistics(self, X, post, params=None):
        r"""Compute the weighted sums about a per-state reference point :math:`a_k`.

        :math:`a_k` is ``shift`` (K, D): :math:`n_k = \sum_t \gamma_{tk}`, ``obs``
        :math:`\sum_t \gamma_{tk} (x_t - a_k)` and ``obs**2``
        :math:`\sum_t \gamma_{tk} (x_t - a_k)^2` (diagonal, spherical) or ``obs*obs.T``
        :math:`\sum_t \gamma_{tk} (x_t - a_k)(x_t - a_k)^\top` (full, tied).

        Raw moments (:math:`a = 0`) would lose every digit of a variance that is small
        next to the squared mean (data with an offset of 1e8 and unit spread). Diagonal and
        spherical: :math:`a` is the :func:`~.base.reference_point` of ``X`` (column
        medians) and the sums come from one matrix product
        :math:`\gamma^\top [1, X - a, (X - a)^2]` (``_weighted_sums``); a state and
        dimension whose second moment about :math:`a` exceeds ``_CANCEL`` (1e6) times its
        centred variance (a state far from the medians next to its spread) is summed again
        about its own weighted mean. Full and tied: every state is summed about its own
        weighted mean.

        Missing entries (NaN): a row with nothing observed is left out; a row with some
        dimensions :math:`m` missing contributes, for state :math:`k`, its conditional
        expectations :math:`E[x \mid x_o, z=k]` and :math:`E[xx^\top \mid x_o, z=k]`
        under the current parameters ``params`` (``_conditionals``): the E-step of
        EM with the missing entries as latent variables (Ghahramani & Jordan 1994), so
        every mode's M-step is unchanged.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            The observations, as :meth:`validate_X` returns them.
        post : ndarray of shape (n_samples, n_states)
            The E-step's state posteriors :math:`\gamma_{tk}`.
        params : dict of str to ndarray or None, default=None
            The E-step's parameters; needed when ``X`` has missing entries.

        Returns
        -------
        dict
            ``post``, ``shift``, ``obs`` and ``obs**2`` or ``obs*obs.T``.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``X`` has missing entries and ``params`` is None.
        """
        if not self._complete(X):
            return self._missing_statistics(X, post, params, np.isnan(X))
        K, D = self.n_states, X.shape[1]
        ref, F = self._moments(X)
        both = _weighted_sums(post, F)
        n = both[:, 0]
        shift = np.empty((K, D))
        shift[:] = ref
        stats = {"post": n, "shift": shift, "obs": both[:, 1:D + 1]}
        if self.covariance_type in ("diag", "spherical"):
            stats["obs**2"] = both[:, D + 1:]
            _resum_cancelling(stats, X, post)
        else:
            stats["obs*obs.T"] = _centred_outer(stats, X, post)
        return stats

    def merge_statistics(self, a, b):
        r"""Combine the statistics of two disjoint data sets, moving ``b``'s sums to ``a``'s points.

        The result is taken about ``a``'s reference points :math:`a_k` (``b``'s where ``a`` has no
        mass): ``b``'s sums move from its points :math:`b_k` by :math:`\delta = b_k - a_k` (the
        pairwise update of Chan, Golub & LeVeque 1979): :math:`s_1 + n\delta`,
        :math:`s_2 + 2\delta s_1 + n\delta^2`,
        :math:`S + \delta s_1^\top + s_1\delta^\top + n\delta\delta^\top`. Both
        points lie near the state's data, so :math:`\delta` is small next to its spread
        and no digits cancel.

        Parameters
        ----------
        a, b : dict
            The statistics of two disjoint sets of observations.

        Returns
        -------
        dict
            The statistics of the union.
        """
        n_a, n_b = a["post"], b["post"]
        shift = np.where((n_a > 0)[:, None], a["shift"], b["shift"])
        d = b["shift"] - shift
        nb = n_b[:, None]
        s1 = b["obs"]
        out = {"post": n_a + n_b, "shift": shift, "obs": a["obs"] + (s1 + nb * d)}
        if "obs**2" in a:
            out["obs**2"] = a["obs**2"] + (b["obs**2"] + 2.0 * d * s1 + nb * d * d)
        if "obs*obs.T" in a:
            cross = np.einsum("ki,kj->kij", d, s1)
            out["obs*obs.T"] = a["obs*obs.T"] + (
                b["obs*obs.T"] + cross + cross.transpose(0, 2, 1)
                + n_b[:, None, None] * np.einsum("ki,kj->kij", d, d))
        return out
    def statistic_vector(self):
        """Tell online EM to accumulate centred moments about a per-state point a.

        (1, x - a, (x - a)**2) (diagonal, spherical) or (1, x - a, vec((x - a)(x - a)^T))
        (full, tied).

        Returns
        -------
        tuple of (str, None)
            ``("diag", None)`` or ``("full", None)``.
        """
        return ("diag" if self.covariance_type in ("diag", "spherical") else "full"), None

    def table_build_copies(self):
        """Return 1 for diagonal/spherical covariances (scaled in place), 2 for full/tied.

        Returns
        -------
        int
            The number of ``(N, K)`` arrays alive at once (see
            :meth:`EmissionFamily.table_build_copies`).
        """
        return 1 if self.covariance_type in ("diag", "spherical") else 2

    def labelled_start(self, params, X, states, init_params):
        """Move the means towards the labelled rows, when ``"m"`` is initialised.

        A missing entry counts for nothing; the covariances keep their data-wide start (see
        :meth:`EmissionFamily.labelled_start`).

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
        if "m" not in init_params:
            return params
        return {**params, "means": labelled_mean(params["means"], X, states)}

    def _missing_statistics(self, X, post, params, miss):
        """:meth:`statistics` of data with missing entries: those of the complete rows
        (about their reference points), plus the conditional expectations of the rows with
        some dimensions observed."""
        if params is None:
            raise InvalidInputError(
                "X: missing entries need the current parameters for their conditional "
                "expectations; pass params to statistics")
        K, D = self.n_states, X.shape[1]
        complete = ~miss.any(axis=1)
        if complete.any():
            stats = self.statistics(X[complete], post[complete])
        else:
            stats = {"post": np.zeros(K), "shift": np.array(params["means"], dtype=np.float64),
                     "obs": np.zeros((K, D))}
            if self.covariance_type in ("diag", "spherical"):
                stats["obs**2"] = np.zeros((K, D))
            else:
                stats["obs*obs.T"] = np.zeros((K, D, D))
        for rows, _, filled, cov in self._conditionals(params, X, miss):
            w = post[rows]
            for k in range(K):
                e = filled[k] - stats["shift"][k]
                n = w[:, k].sum()
                stats["post"][k] += n
                stats["obs"][k] += w[:, k] @ e
                if "obs**2" in stats:
                    stats["obs**2"][k] += w[:, k] @ (e * e) + n * np.diag(cov[k])
                else:
                    stats["obs*obs.T"][k] += (w[:, k, None] * e).T @ e + n * cov[k]
        return stats

    def mstep(self, params, stats, which):
        scalar = self.__dict__.get("_scalar_priors")
        if scalar is None:  # looked at once: the priors are set when the family is built
            scalar = self._scalar_priors = all(
                np.ndim(v) == 0 for v in (self.means_prior, self.means_weight,
                                          self.covars_prior, self.covars_weight))
        if scalar and self.covariance_type == "diag" and not self.fixed and "obs**2" in stats:
            return self._diag_mstep(params, stats, which)
        return self._mstep(params, stats, which)

    def _mstep(self, params, stats, which):
        """:meth:`mstep` of every covariance type, priors and fixed values (NumPy)."""
        K, D = self.n_states, self.n_features
        n = stats["post"]
        dead = np.flatnonzero(n < DEAD_MASS)
        live = n >= DEAD_MASS
        a = stats["shift"]
        means = params["means"].copy()
        covars = params["covars"].copy()
        mp, mw = self.means_prior, self.means_weight
        if "m" in which:
            with np.errstate(divide="ignore", invalid="ignore"):  # dead states are skipped
                new = a + (mw * (mp - a) + stats["obs"]) / (mw + n[:, None])
            means[live] = new[live]
            # fixed means before the covariances: these are then estimated about them
            means = impose(means, self.fixed.get("means"))
        floored = []
        if "c" in which:
            cp, cw = self.covars_prior, self.covars_weight
            diff = means - mp
            d = means - a  # the means about the statistics' reference points
            ct = self.covariance_type
            if ct in ("diag", "spherical"):
                c_n = mw * diff**2 + _scatter_diag(stats, d)
                new = (cp + c_n) / np.maximum(max(cw - 1, 0) + n[:, None], 1e-5)
                if ct == "spherical":
                    new = new.mean(axis=1)
                low = np.atleast_2d(new.T).T < self.min_covar
                floored = np.flatnonzero(low.reshape(K, -1).any(axis=1) & live).tolist()
                new = np.maximum(new, self.min_covar)
                covars[live] = new[live]
            else:
                c_n = mw * np.einsum("ki,kj->kij", diff, diff) + _scatter_full(stats, d)
                cvw = max(cw - D, 0)
                if ct == "tied":
                    new, fl = _floor_eigen((cp + c_n.sum(axis=0)) / (cvw + n.sum()),
                                           self.min_covar)
                    ok = _definite(new)
                    floored = list(range(K)) if fl or not ok else []
                    covars = new if ok else covars
                else:
                    with np.errstate(divide="ignore", invalid="ignore"):  # dead: skipped
                        new = (cp + c_n) / (cvw + n[:, None, None])
                    for k in np.flatnonzero(live):
                        cov, fl = _floor_eigen(new[k], self.min_covar)
                        ok = _definite(cov)
                        if ok:
                            covars[k] = cov
                        if fl or not ok:
                            floored.append(int(k))
            covars = impose(covars, self.fixed.get("covars"))
        return {"means": means, "covars": covars}, sorted(set(dead.tolist()) | set(floored))

    def _diag_mstep(self, params, stats, which):
        """:meth:`mstep` of diagonal covariances under scalar priors, nothing fixed: one
        compiled loop (:func:`~hiddenstate.kernels.gaussian_diag_mstep`), the same numbers
        as the general path."""
        means = np.array(params["means"], dtype=np.float64)
        covars = np.array(params["covars"], dtype=np.float64)
        flags = np.empty(self.n_states, dtype=np.int8)
        gaussian_diag_mstep(np.asarray(stats["post"], dtype=np.float64), stats["shift"],
                            stats["obs"], stats["obs**2"], means, covars,
                            float(self.means_prior), float(self.means_weight),
                            float(self.covars_prior), float(max(self.covars_weight - 1, 0)),
                            self.min_covar, DEAD_MASS, "m" in which, "c" in which, flags)
        return {"means": means, "covars": covars}, np.flatnonzero(flags).tolist()

    fixable = ("means", "covars")

    def state_axis(self, key, value):
        """Return 0, or None for the one matrix of tied covariances.

        Tied: ``covars`` and the VB posterior's ``scale`` and ``dof`` are shared.

        Parameters
        ----------
        key : str
            The array's key.
        value : ndarray
            The array.

        Returns
        -------
        int or None
            The axis of the states.
        """
        if self.covariance_type == "tied" and key in ("covars", "scale", "dof"):
            return None
        return 0

    def check_fixed(self, key, value):
        r"""Check fixed means or covariances (NaN: free).

        Means: any entries for diagonal and spherical covariances (each coordinate's
        estimate is independent of the others), whole rows (a state's mean vector) for full
        and tied ones. Covariances, in the type's own shape: any entries (diagonal,
        spherical), whole matrices (full: a state's; tied: the one matrix), positive
        (definite). The covariances are estimated about the means after these are fixed,
        so every step is the constrained maximiser.

        Parameters
        ----------
        key : str
            ``"means"`` or ``"covars"``.
        value : array-like
            The fixed values.

        Returns
        -------
        ndarray or None
            The fixed values; None when nothing is fixed.
        """
        K, D, ct = self.n_states, self.n_features, self.covariance_type
        if key == "means":
            arr = as_fixed(value, (K, D), key)
            if arr is not None and ct in ("full", "tied"):
                part = np.isnan(arr).any(axis=1) & ~np.isnan(arr).all(axis=1)
                if part.any():
                    raise InvalidInputError(
                        f"fixed['means']: state {int(np.flatnonzero(part)[0])} fixes part of "
                        f"its mean; with covariance_type={ct!r} fix a state's whole mean "
                        "vector (its coordinates' estimates depend on each other)")
            return arr
        arr = as_fixed(value, covars_shape(ct, K, D), key)
        if arr is None:
            return None
        if ct in ("spherical", "diag"):
            if np.any(arr <= 0):
                raise InvalidInputError("fixed['covars']: variances must be > 0")
            return arr
        mats = arr.reshape(-1, D, D)
        for k, m in enumerate(mats):
            nan = np.isnan(m)
            if nan.all():
                continue
            if nan.any():
                raise InvalidInputError(
                    f"fixed['covars']: matrix {k} is fixed in part; with covariance_type="
                    f"{ct!r} fix whole matrices")
            if not _definite(m):
                raise InvalidInputError(
                    f"fixed['covars']: matrix {k} is not symmetric positive definite")
        return arr

    def _is_flat(self) -> bool:
        D1 = 1 if self.covariance_type in ("diag", "spherical") else self.n_features
        return (np.all(np.asarray(self.means_weight) == 0)
                and np.all(np.asarray(self.covars_prior) == 0) and self.covars_weight <= D1)

    def log_prior(self, params):
        r"""Compute the log prior density whose joint maximiser with the data is the M-step.

        The (unnormalised) density, with :math:`d_k = \mu_k - \mu_0`, :math:`b = \max(\nu-D', 0)`,

        .. math::
            \sum_k -\tfrac b2 \log|\Sigma_k| - \tfrac12\mathrm{tr}(\Psi\Sigma_k^{-1})
                    - \tfrac\lambda2 d_k^\top \Sigma_k^{-1} d_k

        (per dimension for diagonal/spherical covariances; one shared Σ when tied).

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"means"``, ``"covars"``, ...).

        Returns
        -------
        float
            :math:`\log p(\text{params})` up to a constant (0 for a flat prior).
        """
        if self._is_flat():
            return 0.0
        K, D = self.n_states, self.n_features
        means, covars = params["means"], params["covars"]
        lam = np.broadcast_to(np.asarray(self.means_weight, dtype=np.float64).reshape(-1), (K,))
        diff = means - self.means_prior
        ct = self.covariance_type
        if ct in ("diag", "spherical"):
            var = covars if ct == "diag" else np.repeat(covars[:, None], D, axis=1)
            psi = np.broadcast_to(np.asarray(self.covars_prior, dtype=np.float64), (K, D))
            b = max(self.covars_weight - 1, 0)
            return float(np.sum(-0.5 * b * np.log(var)
                                - (psi + lam[:, None] * diff**2) / (2 * var)))
        b = max(self.covars_weight - D, 0)
        psi = np.broadcast_to(np.asarray(self.covars_prior, dtype=np.float64), (K, D, D))
        covs = full_covars(covars, ct, K, D)
        total = 0.0
        for k in range(K):
            inv = np.linalg.inv(covs[k])
            quad = -0.5 * lam[k] * diff[k] @ inv @ diff[k]
            if ct == "tied":
                total += quad
                continue
            total += (-0.5 * b * np.linalg.slogdet(covs[k])[1] - 0.5 * np.trace(psi[k] @ inv)
                      + quad)
        if ct == "tied":
            inv = np.linalg.inv(covars)
            total += -0.5 * b * np.linalg.slogdet(covars)[1] - 0.5 * np.trace(psi[0] @ inv)
        return float(total)

    # -- variational Bayes: q(mu, Lambda) Normal-Wishart (Normal-Gamma per dimension) ----------
    def _vb_prior(self, mode: str = "vb") -> dict:
        r"""The prior's hyper-parameters in the shapes of ``q`` (see the module docstring):
        ``means`` :math:`m_0` (K, D), ``beta`` :math:`\beta_0` (K,), ``dof`` :math:`\nu_0`
        ((K,), a scalar when tied) and ``scale`` :math:`S_0` (the covariance-like Wishart
        scale :math:`W_0^{-1}`, in the shape of ``covars``). Accepted: ``means_prior`` a
        scalar, (D,) or (K, D); ``means_weight`` a scalar or (K,); ``covars_weight`` a
        scalar or (K,) (a scalar when tied); ``covars_prior`` a scalar or (K,) (spherical;
        (K, D) is averaged over D), broadcastable to (K, D) (diag), a scalar (times the
        identity), a (D,) diagonal, (D, D) or (K, D, D) (full; tied: not (K, D, D)). Raises
        :class:`~hiddenstate.errors.InvalidInputError` for an improper prior."""
        K, D, ct = self.n_states, self.n_features, self.covariance_type
        m0 = broadcast_param("means_prior", self.means_prior, (K, D))
        if not np.all(np.isfinite(m0)):
            raise InvalidInputError("means_prior: must be finite")
        b0 = broadcast_param("means_weight", self.means_weight, (K,))
        if not np.all(np.isfinite(b0) & (b0 > 0)):
            raise InvalidInputError(
                f"means_weight: learn={mode!r} needs a proper Normal prior on the means, "
                f"means_weight > 0 (got {_short(self.means_weight)}); pass e.g. means_weight=1.0 "
                "(one pseudo-observation at means_prior)")
        low = D - 1 if ct in ("full", "tied") else 0
        nu0 = broadcast_param("covars_weight", self.covars_weight, () if ct == "tied" else (K,))
        if not np.all(np.isfinite(nu0) & (nu0 > low)):
            what = ("Wishart prior on the precision, covars_weight > n_features - 1 = "
                    f"{low}" if low else "Gamma prior on each precision, covars_weight > 0")
            raise InvalidInputError(
                f"covars_weight: learn={mode!r} needs a proper {what} (got "
                f"{_short(self.covars_weight)}); pass e.g. covars_weight={D}")
        cp = broadcast_param("covars_prior", self.covars_prior, None)
        if ct == "spherical":
            s0 = (broadcast_param("covars_prior", cp, (K, D)).mean(axis=1) if cp.ndim == 2
                  else broadcast_param("covars_prior", cp, (K,)))
        elif ct == "diag":
            s0 = broadcast_param("covars_prior", cp, (K, D))
        else:
            if cp.ndim == 0:
                cp = cp * np.eye(D)
            elif cp.ndim == 1 and cp.shape == (D,):
                cp = np.diag(cp)
            s0 = broadcast_param("covars_prior", cp, (D, D) if ct == "tied" else (K, D, D))
        if ct in ("spherical", "diag"):
            ok = np.all(np.isfinite(s0) & (s0 > 0))
        else:
            mats = s0.reshape(-1, D, D)
            ok = (np.all(np.isfinite(mats)) and np.allclose(mats, mats.transpose(0, 2, 1))
                  and np.linalg.eigvalsh(mats).min() > 0)
        if not ok:
            kind = ("positive" if ct in ("spherical", "diag")
                    else "symmetric positive definite")
            raise InvalidInputError(
                f"covars_prior: learn={mode!r} needs a proper prior, a {kind} covariance-like "
                f"scale (prior covariance times covars_weight); got {_short(cp)}"
                + ("" if ct in ("spherical", "diag") else
                   f" (smallest eigenvalue {np.linalg.eigvalsh(mats).min():g})") + ". "
                "Pass e.g. covars_prior=1e-3 (read as 1e-3 * identity for full/tied)")
        return {"means": m0, "beta": b0, "dof": nu0, "scale": s0}

    def _vb_stats(self, params: dict, n_virtual: float) -> dict:
        """Statistics of ``n_virtual`` observations per state with the moments of ``params``
        (about the means)."""
        K, D, ct = self.n_states, self.n_features, self.covariance_type
        means = params["means"]
        n = np.full(K, float(n_virtual))
        stats = {"post": n, "shift": means.copy(), "obs": np.zeros((K, D))}
        if ct in ("diag", "spherical"):
            var = params["covars"] if ct == "diag" else params["covars"][:, None]
            stats["obs**2"] = n[:, None] * np.broadcast_to(var, (K, D))
        else:
            stats["obs*obs.T"] = n[:, None, None] * full_covars(params["covars"], ct, K, D)
        return stats

    def vb_init(self, params, n_virtual):
        r"""Build the variational posterior centred on ``params``.

        :meth:`vb_update` of the prior with the statistics of ``n_virtual`` pseudo-
        observations per state whose mean and covariance are ``params`` (the same
        "prior plus virtual counts" as :class:`~.dirichlet.DirichletRows`): for
        ``n_virtual`` :math:`\to\infty`, :meth:`vb_mean` returns ``params``.

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"means"``, ``"covars"``, ...).
        n_virtual : float
            The number of pseudo-observations per state.

        Returns
        -------
        dict
            ``means``, ``beta``, ``dof`` and ``scale`` (see the module docstring).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the prior is improper.
        """
        if self.fixed:
            raise InvalidInputError(
                f"fixed: learn='vb' does not fix Gaussian {' or '.join(sorted(self.fixed))} "
                "(the Normal-Wishart posterior couples them); use learn='map' or 'em'")
        return self.vb_update(None, self._vb_stats(params, n_virtual), "mc")

    def vb_update(self, q, stats, which):
        r"""Update the Normal-Wishart posterior (Bishop, PRML 10.60-10.63; Beal 2003, 3.3).

        :math:`\beta = \beta_0 + n`, :math:`m = (\beta_0 m_0 + \sum_t\gamma_t x_t)/\beta`,
        :math:`\nu = \nu_0 + n` and

        .. math::
            S = S_0 + \sum_t \gamma_t (x_t - m)(x_t - m)^\top + \beta_0 (m - m_0)(m - m_0)^\top

        (equal to :math:`S_0 + \sum_t\gamma_t x_t x_t^\top + \beta_0 m_0 m_0^\top -
        \beta m m^\top`, hmmlearn's form, which is not how it is computed: the scatter comes
        from the statistics about their reference points, see :meth:`statistics`).
        Diagonal: the diagonal of that, per dimension; spherical: its mean over dimensions;
        tied: summed over states, with :math:`\nu = \nu_0 + \sum_k n_k`. With only ``m`` in
        ``which``, :math:`(\nu, S)` are kept; with only ``c``, :math:`(m, \beta)` are kept
        and :math:`S` uses the current :math:`m` (each is the exact coordinate update of the
        bound).

        Parameters
        ----------
        q : dict
            The variational posterior's hyper-parameters (from :meth:`vb_init` /
            :meth:`vb_update`).
        stats : dict
            Sufficient statistics from :meth:`statistics` (merged over parts of the data by
            :meth:`merge_statistics`).
        which : str
            The hmmlearn letters of the parameters to update; the others are kept.

        Returns
        -------
        dict
            ``means``, ``beta``, ``dof`` and ``scale``.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the prior is improper.
        hiddenstate.errors.NumericalError
            If a full/tied :math:`S` is not positive definite to working precision.
        """
        if "m" not in which and "c" not in which:
            return q
        p = self._vb_prior()
        ct = self.covariance_type
        n, obs, a = stats["post"], stats["obs"], stats["shift"]
        if "m" in which:
            beta = p["beta"] + n
            means = a + (p["beta"][:, None] * (p["means"] - a) + obs) / beta[:, None]
        else:
            beta, means = q["beta"], q["means"]
        if "c" not in which:
            return {"means": means, "beta": beta, "dof": q["dof"], "scale": q["scale"]}
        diff = means - p["means"]
        if ct in ("diag", "spherical"):
            sq = _scatter_diag(stats, means - a) + p["beta"][:, None] * diff**2
            dof = p["dof"] + n
            scale = p["scale"] + (sq if ct == "diag" else sq.mean(axis=1))
        else:
            sq = (_scatter_full(stats, means - a)
                  + p["beta"][:, None, None] * np.einsum("ki,kj->kij", diff, diff))
            if ct == "tied":
                dof = p["dof"] + n.sum()
                scale = p["scale"] + sq.sum(axis=0)
            else:
                dof = p["dof"] + n
                scale = p["scale"] + sq
            scale = 0.5 * (scale + np.swapaxes(scale, -1, -2))
            bad = [k for k, S in enumerate(scale.reshape(-1, *scale.shape[-2:]))
                   if not _definite(S)]
            if bad:
                owner = "the states'" if ct == "tied" else f"state {bad[0]}'s"
                raise NumericalError(
                    f"covars_prior: {owner} variational posterior scale matrix is not "
                    "positive definite to working precision: the data are (nearly) "
                    "degenerate in some direction and covars_prior is too small next to "
                    "their spread to make up for it; pass a covars_prior on the scale of the "
                    "data's variance, or remove collinear features")
        return {"means": means, "beta": beta, "dof": np.asarray(dof, dtype=np.float64),
                "scale": scale}

    def _vb_covars(self, q) -> np.ndarray:
        r""":math:`E_q[\Lambda]^{-1} = S/\nu` in the shape of ``covars``."""
        dof, scale = q["dof"], q["scale"]
        if self.covariance_type == "diag":
            return scale / dof[:, None]
        if self.covariance_type == "full":
            return scale / dof[:, None, None]
        return scale / dof

    def _vb_log_offset(self, q) -> np.ndarray:
        r""":math:`\tfrac12(E_q\log|\Lambda_k| - \log|E_q\Lambda_k|) - D/(2\beta_k)` per state."""
        K, D, ct = self.n_states, self.n_features, self.covariance_type
        dof = np.broadcast_to(q["dof"], (K,))
        if ct == "spherical":
            a = 0.5 * D * dof
            half_gap = 0.5 * D * (digamma(a) - np.log(a))
        elif ct == "diag":
            half_gap = 0.5 * D * (digamma(0.5 * dof) - np.log(0.5 * dof))
        else:
            i = np.arange(D)[:, None]
            half_gap = 0.5 * (digamma(0.5 * (dof - i)).sum(axis=0) - D * np.log(0.5 * dof))
        return half_gap - 0.5 * D / q["beta"]

    def vb_expected(self, q):
        r"""Return what :meth:`log_likelihood` needs for the expected log density under q.

        :math:`E_q[\log N(x\mid\mu_k, \Lambda_k^{-1})]` (Bishop, PRML eqs. 10.64-10.65):

        .. math::
            \tfrac12 E\log|\Lambda_k| - \tfrac D2\log 2\pi
            - \tfrac12\big(D/\beta_k + \nu_k (x - m_k)^\top S_k^{-1} (x - m_k)\big),

        i.e. the Gaussian log density at ``means`` :math:`m_k` and ``covars``
        :math:`S_k/\nu_k = (E\Lambda_k)^{-1}`, plus the per-state ``log_offset``
        :math:`\tfrac12(E\log|\Lambda_k| - \log|E\Lambda_k|) - D/(2\beta_k)`, where
        :math:`E\log|\Lambda| - \log|E\Lambda|` is
        :math:`\sum_{i<D}\psi(\tfrac{\nu-i}2) - D\log\tfrac\nu2` (full, tied),
        :math:`D(\psi(\tfrac\nu2) - \log\tfrac\nu2)` (diag) or
        :math:`D(\psi(\tfrac{D\nu}2) - \log\tfrac{D\nu}2)` (spherical). Full and tied
        views also carry ``dof`` :math:`\nu_k` and ``beta`` :math:`\beta_k`, which rows with
        missing entries need (``_vb_marginal``).

        Parameters
        ----------
        q : dict
            The variational posterior's hyper-parameters (from :meth:`vb_init` /
            :meth:`vb_update`).

        Returns
        -------
        dict
            ``means``, ``covars`` and ``log_offset`` (full/tied: also ``dof`` and ``beta``).
        """
        view = {"means": q["means"], "covars": self._vb_covars(q),
                "log_offset": self._vb_log_offset(q)}
        if self.covariance_type in ("full", "tied"):  # for rows with missing entries
            view["dof"] = np.broadcast_to(np.asarray(q["dof"], dtype=np.float64),
                                          (self.n_states,)).copy()
            view["beta"] = np.asarray(q["beta"], dtype=np.float64)
        return view

    def vb_kl(self, q):
        r"""Compute the KL divergence of the Normal-Wishart posterior from the prior.

        :math:`\mathrm{KL}(q(\mu,\Lambda)\,\|\,p(\mu,\Lambda))` summed over states, in
        closed form (Penny 2001, "KL-divergences of Normal, Gamma, Dirichlet and Wishart
        densities"): the Normal part, averaged over :math:`q(\Lambda)` (exact, since it is
        linear in :math:`\Lambda`),

        .. math::
            \tfrac12\big(D\beta_0/\beta - D + D\log(\beta/\beta_0)
            + \beta_0 (m - m_0)^\top E[\Lambda] (m - m_0)\big),

        plus :math:`\mathrm{KL}(\mathcal W(\nu, S^{-1})\,\|\,\mathcal W(\nu_0, S_0^{-1}))`
        (full; once when tied), or the Gamma KLs per dimension (diag: shape
        :math:`\nu/2`, rate :math:`s_d/2`; spherical: shape :math:`D\nu/2`, rate
        :math:`Ds/2`).

        Parameters
        ----------
        q : dict
            The variational posterior's hyper-parameters (from :meth:`vb_init` /
            :meth:`vb_update`).

        Returns
        -------
        float
            :math:`\mathrm{KL}(q \,\|\, p)`, summed over states.
        """
        p = self._vb_prior()
        K, D, ct = self.n_states, self.n_features, self.covariance_type
        beta, b0 = q["beta"], p["beta"]
        d = q["means"] - p["means"]
        dof = np.broadcast_to(q["dof"], (K,))
        if ct in ("diag", "spherical"):
            prec = dof[:, None] / (q["scale"] if ct == "diag" else q["scale"][:, None])
            quad = np.sum(prec * d**2, axis=1)
        else:
            scale = np.broadcast_to(q["scale"], (K, D, D))
            quad = dof * np.einsum("ki,ki->k", d, np.linalg.solve(scale, d[..., None])[..., 0])
        total = 0.5 * np.sum(D * b0 / beta - D + D * np.log(beta / b0) + b0 * quad)
        if ct == "diag":
            total += _kl_gamma(0.5 * q["dof"][:, None], 0.5 * q["scale"],
                               0.5 * p["dof"][:, None], 0.5 * p["scale"]).sum()
        elif ct == "spherical":
            total += _kl_gamma(0.5 * D * q["dof"], 0.5 * D * q["scale"],
                               0.5 * D * p["dof"], 0.5 * D * p["scale"]).sum()
        elif ct == "full":
            total += sum(_kl_wishart(q["dof"][k], q["scale"][k], p["dof"][k], p["scale"][k])
                         for k in range(K))
        else:
            total += _kl_wishart(float(q["dof"]), q["scale"], float(p["dof"]), p["scale"])
        return float(total)

    def vb_mean(self, q):
        r"""Return the posterior means and the inverse of the posterior mean precision.

        ``means`` :math:`m_k` (the posterior mean of :math:`\mu_k`) and ``covars``
        :math:`S_k/\nu_k = (E_q\Lambda_k)^{-1}`, the inverse of the posterior mean
        precision (not :math:`E_q[\Sigma_k] = S_k/(\nu_k - D - 1)`, which needs
        :math:`\nu_k > D + 1`); hmmlearn's ``VariationalGaussianHMM.covars_``.

        Parameters
        ----------
        q : dict
            The variational posterior's hyper-parameters (from :meth:`vb_init` /
            :meth:`vb_update`).

        Returns
        -------
        dict
            ``means`` and ``covars``.
        """
        return {"means": q["means"].copy(), "covars": self._vb_covars(q)}

    # -- Gibbs sampling: the Normal-Wishart posterior -------------------------------------------
    def sample_posterior(self, params, stats, which, rng):
        r"""Draw the means and covariances from their Normal-Wishart posterior.

        The prior is variational Bayes' (module docstring; it must be proper) and the
        posterior hyper-parameters are :meth:`vb_update`'s, which for the hard statistics of
        one draw of the states are the exact conjugate posterior; the draw is
        :func:`~.posterior_draws.normal_wishart`. With only ``m`` in ``which`` the means are
        drawn given the covariances, :math:`N(m_k, \Sigma_k/\beta_k)`; with only ``c`` the
        covariances given the means: :math:`\nu = \nu_0 + n_k + 1` (the Normal prior of the
        fixed mean adds one; tied: :math:`\nu_0 + \sum_k n_k + K`) and
        :math:`S = S_0 + \sum_t (x_t - \mu_k)(x_t - \mu_k)^\top +
        \beta_0(\mu_k - m_0)(\mu_k - m_0)^\top`.

        Parameters
        ----------
        params : dict of str to ndarray
            ``means`` and ``covars`` (the ones not in ``which`` are kept).
        stats : dict
            The statistics of one draw of the hidden states (no missing entries:
            :meth:`sample_missing` fills them first).
        which : str
            The hmmlearn letters to draw (``"m"``, ``"c"``).
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        dict
            ``means`` and ``covars``.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the prior is improper.
        """
        draw_m, draw_c = "m" in which, "c" in which
        if not (draw_m or draw_c):
            return params
        if self.fixed:
            raise InvalidInputError(
                f"fixed: learn='gibbs' does not fix Gaussian {' or '.join(sorted(self.fixed))} "
                "(the Normal-Wishart posterior couples them); use learn='map' or 'em', or "
                "leave them out of params")
        ct = self.covariance_type
        if draw_m and draw_c:
            self._vb_prior("gibbs")
            q = self.vb_update(None, stats, "mc")
            means, covars = normal_wishart(q["means"], q["beta"], q["dof"], q["scale"], ct,
                                           rng)
            return {"means": means, "covars": covars}
        p = self._vb_prior("gibbs")
        n, obs, a = stats["post"], stats["obs"], stats["shift"]
        if draw_m:
            beta = p["beta"] + n
            m = a + (p["beta"][:, None] * (p["means"] - a) + obs) / beta[:, None]
            return {"means": normal_given_covariance(m, beta, params["covars"], ct, rng),
                    "covars": params["covars"]}
        mu = params["means"]
        diff = mu - p["means"]
        D = self.n_features
        if ct in ("diag", "spherical"):
            sq = _scatter_diag(stats, mu - a) + p["beta"][:, None] * diff**2
            dof = p["dof"] + n + 1.0
            if ct == "diag":
                covars, _ = covariance_draw(dof, p["scale"] + sq, ct, rng)
            else:
                covars, _ = covariance_draw(D * dof, D * (p["scale"] + sq.mean(axis=1)), ct,
                                            rng)
        else:
            sq = (_scatter_full(stats, mu - a)
                  + p["beta"][:, None, None] * np.einsum("ki,kj->kij", diff, diff))
            if ct == "tied":
                covars, _ = covariance_draw(p["dof"] + n.sum() + len(n),
                                            p["scale"] + sq.sum(axis=0), ct, rng)
            else:
                covars, _ = covariance_draw(p["dof"] + n + 1.0, p["scale"] + sq, ct, rng)
        return {"means": mu, "covars": covars}

    def state_axes(self):
        """Return the state axis of ``means`` and ``covars`` (none when tied).

        Returns
        -------
        dict
            ``{"means": 0, "covars": 0}``, with ``None`` for ``covars`` when tied.
        """
        return {"means": 0, "covars": None if self.covariance_type == "tied" else 0}

    def sample_missing(self, params, X, states, rng):
        r"""Draw the missing entries given the states (data augmentation).

        :math:`x_m \sim N(\mu_{k,m} + \Sigma_{k,mo}\Sigma_{k,oo}^{-1}(x_o - \mu_{k,o}),\
        \Sigma_{k,mm} - \Sigma_{k,mo}\Sigma_{k,oo}^{-1}\Sigma_{k,om})` (``_conditionals``),
        a row with nothing observed from :math:`N(\mu_k, \Sigma_k)`; the statistics are
        then those of complete rows.

        Parameters
        ----------
        params : dict of str to ndarray
            ``means`` and ``covars``.
        X : ndarray of shape (n_samples, n_features)
            The rows (NaN: missing).
        states : ndarray of int of shape (n_samples,)
            The drawn state of every row.
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        ndarray
            ``X`` (nothing missing), or a copy with its missing entries drawn.
        """
        miss = np.isnan(X)
        if not miss.any():
            return X
        K, D = self.n_states, X.shape[1]
        out = X.copy()
        covs = full_covars(params["covars"], self.covariance_type, K, D)
        for rows, m, filled, cov in self._conditionals(params, X, miss):
            z = states[rows]
            for k in np.unique(z):
                sel = z == k
                chol = np.linalg.cholesky(cov[k][np.ix_(m, m)])
                eps = rng.standard_normal((int(sel.sum()), int(m.sum())))
                out[np.ix_(rows[sel], m)] = filled[k][sel][:, m] + eps @ chol.T
        empty = np.flatnonzero(miss.all(axis=1))
        if len(empty):
            z = states[empty]
            chol = np.linalg.cholesky(covs)
            eps = rng.standard_normal((len(empty), D))
            out[empty] = params["means"][z] + np.einsum("nij,nj->ni", chol[z], eps)
        return out

    # -- initialisation, checks, sampling -----------------------------------------------------
    def initialize(self, X, rng):
        """Initialise the means by k-means and every covariance at the data's.

        Means by k-means (:func:`~.base.kmeans`, shift-invariant), every covariance the
        data's covariance plus ``min_covar`` (missing entries: their column's mean,
        :func:`~.base.fill_missing`).

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            The observations, as :meth:`validate_X` returns them.
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        dict of str to ndarray
            ``means`` and ``covars``.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a column has no observed value.
        hiddenstate.errors.NumericalError
            If full/tied covariances start from a data covariance that is not positive definite.
        """
        K, D = self.n_states, X.shape[1]
        X = fill_missing(X)
        if len(X) >= K:
            means = kmeans(X, K, rng)[0]
        else:
            means = X[rng.integers(len(X), size=K)] + rng.standard_normal((K, D))
        cv = np.atleast_2d(np.cov(X.T)) if len(X) > 1 else np.eye(D)
        cv = cv + self.min_covar * np.eye(D)
        ct = self.covariance_type
        if ct in ("full", "tied") and not _definite(cv):
            raise _not_definite("X: the covariance of the data plus min_covar (the initial "
                                "covars_)", cv)
        if ct == "spherical":
            covars = np.full(K, np.diag(cv).mean())
        elif ct == "diag":
            covars = np.tile(np.diag(cv), (K, 1))
        elif ct == "tied":
            covars = cv
        else:
            covars = np.tile(cv, (K, 1, 1))
        return {"means": means, "covars": covars}

    def check_params(self, params):
        K, D = self.n_states, self.n_features
        means = np.asarray(params["means"], dtype=np.float64)
        if means.shape != (K, D) or not np.all(np.isfinite(means)):
            raise InvalidInputError(
                f"means_: expected finite values of shape {(K, D)}, got {means.shape}")
        shape = covars_shape(self.covariance_type, K, D)
        covars = np.asarray(params["covars"], dtype=np.float64)
        if covars.shape != shape:
            raise InvalidInputError(
                f"covars_: for covariance_type={self.covariance_type!r} expected shape "
                f"{shape}, got {covars.shape}")
        if self.covariance_type in ("spherical", "diag"):
            if not np.all(np.isfinite(covars)) or np.any(covars <= 0):
                raise InvalidInputError("covars_: variances must be finite and positive")
        else:
            mats = covars[None] if covars.ndim == 2 else covars
            for k, c in enumerate(mats):
                if not np.all(np.isfinite(c)) or not np.allclose(c, c.T) \
                        or not _definite(c):
                    raise InvalidInputError(
                        f"covars_: matrix {k} must be symmetric positive definite")
        return {"means": means, "covars": covars}

    def sample(self, params, states, rng):
        K, D = self.n_states, self.n_features
        covs = full_covars(params["covars"], self.covariance_type, K, D)
        chol = np.linalg.cholesky(covs)
        z = rng.standard_normal((len(states), D))
        return params["means"][states] + np.einsum("nij,nj->ni", chol[states], z)

    def n_free_parameters(self):
        K, D = self.n_states, self.n_features
        cov = {"spherical": K, "diag": K * D, "full": K * D * (D + 1) // 2,
               "tied": D * (D + 1) // 2}[self.covariance_type]
        return K * D + cov


def _weighted_sums(post: np.ndarray, F: np.ndarray) -> np.ndarray:
    """``post.T @ F`` (``(N, K)`` and ``(N, J)``) as products over blocks of ``_SUM_ROWS``
    rows added in block order: BLAS is several times faster on a stack of such products than
    on one with an inner dimension of N."""
    K, J = post.shape[1], F.shape[1]
    whole = len(post) // _SUM_ROWS * _SUM_ROWS
    out = post[whole:].T @ F[whole:]
    if whole:
        blocks = np.matmul(post[:whole].reshape(-1, _SUM_ROWS, K).transpose(0, 2, 1),
                           F[:whole].reshape(-1, _SUM_ROWS, J))
        out = blocks.sum(axis=0) + out
    return out


def _resum_cancelling(stats: dict, X: np.ndarray, post: np.ndarray) -> None:
    """Diagonal statistics: sum again, about the state's own weighted mean, each live
    (state, dimension) whose second moment about ``shift`` exceeds ``_CANCEL`` times its
    centred variance (or whose centred variance came out <= 0); updates ``shift``, ``obs``
    and ``obs**2`` in place."""
    n, s1, s2, a = stats["post"], stats["obs"], stats["obs**2"], stats["shift"]
    redo = np.empty(s1.shape, dtype=np.bool_)
    if not gaussian_diag_cancelling(n, s1, s2, DEAD_MASS, _CANCEL, redo):
        return
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = s1 / n[:, None]
    for k in np.flatnonzero(redo.any(axis=1)):
        cols = np.flatnonzero(redo[k])
        m = a[k, cols] + mean[k, cols]
        Z = X[:, cols] - m
        w = post[:, k]
        a[k, cols] = m
        s1[k, cols] = w @ Z
        s2[k, cols] = w @ (Z * Z)


def _patterns(miss: np.ndarray, skip: np.ndarray):
    """``(rows, observed)`` for each pattern of missing dimensions (bool ``(N, D)``
    ``miss``) among the rows not in ``skip`` that have at least one dimension observed."""
    rows = np.flatnonzero(~skip & ~miss.all(axis=1))
    if not len(rows):
        return
    pats, inv = np.unique(miss[rows], axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    for p, m in enumerate(pats):
        yield rows[inv == p], ~m


def _centred_outer(stats: dict, X: np.ndarray, post: np.ndarray) -> np.ndarray:
    r"""Full/tied: :math:`\sum_t \gamma_{tk} (x_t - m_k)(x_t - m_k)^\top` about each state's
    weighted mean :math:`m_k` (from ``shift`` and ``obs``), which become the state's
    ``shift`` (``obs`` is recomputed about it: zero up to rounding). A state without mass
    keeps zeros."""
    K, D = post.shape[1], X.shape[1]
    n, s1, a = stats["post"], stats["obs"], stats["shift"]
    out = np.zeros((K, D, D))
    for k in np.flatnonzero(n > 0):
        m = a[k] + s1[k] / n[k]
        Z = X - m
        w = post[:, k]
        a[k] = m
        s1[k] = w @ Z
        out[k] = (w[:, None] * Z).T @ Z
    return out


def _scatter_diag(stats: dict, d: np.ndarray) -> np.ndarray:
    r""":math:`\sum_t \gamma_{tk}(x_{td} - \mu_{kd})^2` for :math:`\mu = a + d` from
    statistics about :math:`a` (``shift``), as the sum of its two non-negative parts
    :math:`(s_2 - s_1^2/n) + n(s_1/n - d)^2`; the first, a centred sum of squares, is
    raised to 0 where rounding left it below (:meth:`GaussianEmissions.statistics` bounds
    that rounding). 0 for a state without mass."""
    n, s1, s2 = stats["post"][:, None], stats["obs"], stats["obs**2"]
    has = n > 0
    mean = np.divide(s1, n, out=np.zeros_like(s1), where=has)
    centred = np.maximum(s2 - mean * s1, 0.0)
    return np.where(has, centred + n * (mean - d) ** 2, 0.0)


def _scatter_full(stats: dict, d: np.ndarray) -> np.ndarray:
    r""":math:`\sum_t \gamma_{tk}(x_t - \mu_k)(x_t - \mu_k)^\top` for :math:`\mu = a + d`
    from statistics about :math:`a` (``shift``): :math:`S - s_1 s_1^\top/n + n e e^\top`
    with :math:`e = s_1/n - d` (each part is small unless :math:`a` is far from the data:
    :meth:`GaussianEmissions.statistics` takes :math:`a` at the weighted means)."""
    n, s1 = stats["post"], stats["obs"]
    has = n > 0
    mean = np.divide(s1, n[:, None], out=np.zeros_like(s1), where=has[:, None])
    e = np.where(has[:, None], mean - d, 0.0)
    return (stats["obs*obs.T"] - np.einsum("ki,kj->kij", mean, s1)
            + n[:, None, None] * np.einsum("ki,kj->kij", e, e))


def _definite(cov: np.ndarray) -> bool:
    """Whether a symmetric matrix is positive definite to working precision: positive
    eigenvalues, and a Cholesky factor (what :meth:`GaussianEmissions.log_likelihood`
    needs; with eigenvalues spanning more than about 16 digits either can fail)."""
    if not np.linalg.eigvalsh(cov).min() > 0:
        return False
    try:
        np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        return False
    return True


def _cholesky(cov: np.ndarray, what: str) -> np.ndarray:
    """Lower Cholesky factor of the covariance ``what`` describes (for the message)."""
    try:
        return linalg.cholesky(cov, lower=True)
    except linalg.LinAlgError as exc:
        raise _not_definite(what, cov) from exc


def _not_definite(what: str, cov: np.ndarray) -> NumericalError:
    """The error for a covariance matrix that is not positive definite to working
    precision."""
    w = np.linalg.eigvalsh(0.5 * (cov + cov.T))
    return NumericalError(
        f"{what} is not positive definite to working precision (eigenvalues from "
        f"{w.min():.3g} to {w.max():.3g}: features are collinear, or min_covar is too small "
        "next to the data's variance); remove collinear features, scale the data or raise "
        "min_covar")


def _floor_eigen(cov: np.ndarray, floor: float) -> tuple[np.ndarray, bool]:
    """Raise eigenvalues of a symmetric matrix below ``floor`` to ``floor``."""
    cov = 0.5 * (cov + cov.T)
    w, v = np.linalg.eigh(cov)
    if w.min() >= floor:
        return cov, False
    return (v * np.maximum(w, floor)) @ v.T, True


def _short(arr) -> str:
    """A one-line description of a hyper-parameter for error messages."""
    arr = np.asarray(arr)
    if arr.size == 1:
        return f"{arr.item():g}"
    if arr.size <= 4:
        return "[" + ", ".join(f"{v:g}" for v in arr.ravel()) + "]"
    return f"an array of shape {arr.shape}"


def _kl_gamma(a, b, a0, b0):
    r""":math:`\mathrm{KL}(\mathrm{Gamma}(a, b)\,\|\,\mathrm{Gamma}(a_0, b_0))`, shape-rate,
    elementwise (Penny 2001)."""
    return ((a - a0) * digamma(a) - gammaln(a) + gammaln(a0) + a0 * (np.log(b) - np.log(b0))
            + a * (b0 - b) / b)


def _wishart_elogdet(dof: float, scale: np.ndarray) -> float:
    r""":math:`E\log|\Lambda|` for :math:`\Lambda\sim\mathcal W(\nu, S^{-1})`:
    :math:`\sum_{i<D}\psi(\frac{\nu-i}2) + D\log 2 - \log|S|` (Bishop, PRML eq. B.81)."""
    D = scale.shape[0]
    return float(digamma(0.5 * (dof - np.arange(D))).sum() + D * np.log(2.0)
                 - np.linalg.slogdet(scale)[1])


def _wishart_log_norm(dof: float, scale: np.ndarray) -> float:
    r""":math:`\log Z(\nu, S) = -\log B(S^{-1}, \nu)` (Bishop, PRML eq. B.79):
    :math:`\frac{\nu D}2\log 2 - \frac\nu2\log|S| + \log\Gamma_D(\frac\nu2)`."""
    D = scale.shape[0]
    return float(0.5 * dof * D * np.log(2.0) - 0.5 * dof * np.linalg.slogdet(scale)[1]
                 + multigammaln(0.5 * dof, D))


def _kl_wishart(dof, scale, dof0, scale0) -> float:
    r""":math:`\mathrm{KL}(\mathcal W(\nu, S^{-1})\,\|\,\mathcal W(\nu_0, S_0^{-1}))`
    (Penny 2001):

    .. math::
        \tfrac{\nu-\nu_0}2 E_q\log|\Lambda| - \tfrac{\nu D}2 + \tfrac\nu2\mathrm{tr}(S_0 S^{-1})
        + \log Z(\nu_0, S_0) - \log Z(\nu, S).
    """
    D = scale.shape[0]
    return float(0.5 * (dof - dof0) * _wishart_elogdet(dof, scale) - 0.5 * dof * D
                 + 0.5 * dof * np.trace(np.linalg.solve(scale, scale0))
                 + _wishart_log_norm(dof0, scale0) - _wishart_log_norm(dof, scale))

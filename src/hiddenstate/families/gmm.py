r"""Gaussian-mixture emissions: each hidden state emits from its own mixture of ``n_mix``
Gaussians (hmmlearn's ``GMMHMM``),

.. math::
    p(x \mid z = k) = \sum_{c=1}^{M} w_{kc}\, N(x \mid \mu_{kc}, \Sigma_{kc}).

Parameters (hmmlearn's shapes): ``weights`` (K, M), ``means`` (K, M, D) and ``covars``
(K, M) spherical, (K, M, D) diag, (K, M, D, D) full, or (K, D, D) tied (*one* full
covariance per state, shared by that state's M components: hmmlearn's GMMHMM meaning of
"tied", not GaussianHMM's).

EM treats the pair (state, component) as the latent variable (Rabiner 1989, eqs. 52-54;
Huang, Acero & Hon, sec. 8.3): with state posteriors :math:`\gamma_{tk}` and component
responsibilities :math:`r_{tkc} = w_{kc}N(x_t\mid\mu_{kc},\Sigma_{kc}) / p(x_t\mid z_t=k)`,
each component is a Gaussian with posterior weights :math:`\gamma_{tk} r_{tkc}`, and the
weights are categorical rows with counts :math:`\sum_t \gamma_{tk} r_{tkc}`. So this
family is built from the two existing blocks and repeats neither:

- the components' statistics, M-step, MAP prior and variational posterior are those of
  :class:`~.gaussian.GaussianEmissions` (centred statistics about reference points, the
  min_covar floor, the Normal-Wishart / Normal-Gamma prior), one instance of M
  "states" per hidden state (tied: that instance's own tied covariance);
- the weights are :class:`~.dirichlet.DirichletRows` under a Dirichlet ``weights_prior``.

The covariance M-step is the exact one, about the *new* means. hmmlearn 0.3.3 sums the
scatter about the *previous* means, which is not the M-step (its log-likelihood can then
fall between iterations, hmmlearn issue #410); the two agree whenever the means are not
being learned.

Variational Bayes (Beal 2003, ch. 4, the mixture of factor analysers' treatment of the
component indicator): q(w) Dirichlet, q(mu, Lambda) per component as in the Gaussian
family; the E-step's emission weight of state k is
:math:`\sum_c \exp(E\log w_{kc} + E\log N(x_t\mid\mu_{kc},\Lambda_{kc}))` and the
responsibilities are its normalised terms; the bound subtracts the Dirichlet and the
components' KL divergences.
"""

from __future__ import annotations

import numpy as np

from .._validation import broadcast_param, check_number, check_real_X, check_stochastic
from ..errors import InvalidInputError
from .base import EmissionFamily, fill_missing, kmeans
from .dirichlet import DirichletRows
from .gaussian import COVARIANCE_TYPES, GaussianEmissions


def gmm_covars_shape(covariance_type: str, K: int, M: int, D: int) -> tuple[int, ...]:
    """hmmlearn's GMMHMM ``covars_`` shape."""
    return {"spherical": (K, M), "diag": (K, M, D), "full": (K, M, D, D),
            "tied": (K, D, D)}[covariance_type]


#: number of leading (state, component) axes a per-component prior carries, by name
_PRIOR_NDIM = {
    "means_prior": {"spherical": 3, "diag": 3, "full": 3, "tied": 3},
    "means_weight": {"spherical": 2, "diag": 2, "full": 2, "tied": 2},
    "covars_prior": {"spherical": 2, "diag": 3, "full": 4, "tied": 3},
    "covars_weight": {"spherical": 2, "diag": 2, "full": 2, "tied": 1},
}


class GMMEmissions(EmissionFamily):
    """Gaussian-mixture emissions: each hidden state emits from its own mixture of Gaussians.

    ``weights`` (K, M), ``means`` (K, M, D), ``covars`` (hmmlearn's GMMHMM shapes:
    ``gmm_covars_shape``; tied is *one* full covariance per state, shared by its M
    components). EM treats the pair (state, component) as the latent variable; the
    components are :class:`GaussianEmissions` blocks and the weights a
    :class:`DirichletRows` block (see the module docstring, :mod:`hiddenstate.families.gmm`,
    for the exact covariance M-step that hmmlearn 0.3.3 lacks, and the variational
    treatment). Built by :class:`hiddenstate.HMM` for ``emission="gmm"``.

    Priors: ``weights_prior`` (Dirichlet concentration, broadcast to (K, M)) and the
    Gaussian family's ``means_prior``, ``means_weight``, ``covars_prior``,
    ``covars_weight``, read per component as :class:`~.gaussian.GaussianEmissions` reads
    them per state; an array whose leading axis is the K states (``means_prior`` (K, M, D),
    ``covars_prior`` (K, M, D) for diag...) gives each state its own.

    Parameters
    ----------
    n_states : int
        The number of hidden states K.
    n_features : int
        The number of features D.
    n_mix : int, default=1
        The number of components M per state.
    covariance_type : {"spherical", "diag", "full", "tied"}, default="diag"
        The form of the components' covariances.
    min_covar : float, default=1e-3
        The floor of every variance (covariance eigenvalue).
    weights_prior : float or array-like, default=1.0
        The Dirichlet concentration of the weights.
    means_prior : float or array-like, default=0.0
        The prior mean of the components' means.
    means_weight : float or array-like, default=0.0
        Its weight in pseudo-observations.
    covars_prior : float or array-like, default=0.0
        The prior scatter of the covariances.
    covars_weight : float or array-like, default=1.0
        Its weight.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``covariance_type`` is not one of :data:`COVARIANCE_TYPES`.

    See Also
    --------
    GaussianEmissions : One Gaussian per state.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families import GMMEmissions
    >>> family = GMMEmissions(n_states=1, n_features=1, n_mix=2)
    >>> params = {"weights": np.array([[0.5, 0.5]]), "means": np.array([[[0.0], [4.0]]]),
    ...           "covars": np.ones((1, 2, 1))}
    >>> log_likelihood, resp = family.responsibilities(params, np.array([[0.0], [2.0]]))
    >>> resp[:, 0].round(3)                     # x = 2 lies halfway between the components
    array([[1. , 0. ],
           [0.5, 0.5]])
    """

    letters = {"m": "means", "c": "covars", "w": "weights"}

    def __init__(self, n_states, n_features, n_mix=1, covariance_type="diag", min_covar=1e-3,
                 weights_prior=1.0, means_prior=0.0, means_weight=0.0, covars_prior=0.0,
                 covars_weight=1.0):
        super().__init__(n_states, n_features)
        if covariance_type not in COVARIANCE_TYPES:
            raise InvalidInputError(
                f"covariance_type: {covariance_type!r} is not one of {COVARIANCE_TYPES}")
        self.n_mix = M = int(n_mix)
        self.covariance_type = covariance_type
        self.min_covar = float(min_covar)
        self.weights_prior = weights_prior
        self.means_prior = means_prior
        self.means_weight = means_weight
        self.covars_prior = covars_prior
        self.covars_weight = covars_weight
        K, D = n_states, n_features
        self.rows = DirichletRows("weights", "w", weights_prior)
        # every (state, component) as one Gaussian: log-likelihoods and statistics
        self._flat = GaussianEmissions(K * M, D, "full" if covariance_type == "tied"
                                       else covariance_type, min_covar)
        # state k's M components with their priors: M-step, log prior, VB
        self._states = [GaussianEmissions(
            M, D, covariance_type, min_covar,
            **{name: self._for_state(name, k) for name in _PRIOR_NDIM}) for k in range(K)]

    def _for_state(self, name: str, k: int):
        value = getattr(self, name)
        arr = np.asarray(value)
        if arr.ndim == _PRIOR_NDIM[name][self.covariance_type] and arr.shape[0] == self.n_states:
            return arr[k]
        return value

    def validate_X(self, X, fitted_n_features):
        """Check real rows; NaN marks a missing entry.

        Marginalised, as in :class:`~.gaussian.GaussianEmissions`.

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
            If ``X`` is not a 2-D array of real numbers, or does not match the fitted model.
        """
        return check_real_X(X, fitted_n_features, allow_missing=True)

    def infer_n_features(self, X):
        return X.shape[1]

    # -- views -------------------------------------------------------------------------------
    def _flat_params(self, params: dict) -> dict:
        """Every (state, component) as one of K*M Gaussians (tied: the state's matrix
        repeated for each of its components)."""
        K, M, D = self.n_states, self.n_mix, self.n_features
        covars = params["covars"]
        if self.covariance_type == "tied":
            covars = np.repeat(covars, M, axis=0)
        else:
            covars = covars.reshape(K * M, *covars.shape[2:])
        out = {"means": params["means"].reshape(K * M, D), "covars": covars}
        for key in ("log_offset", "dof", "beta"):  # the variational view (full/tied: all)
            if key in params:
                out[key] = np.asarray(params[key]).reshape(K * M)
        return out

    @staticmethod
    def _state_params(params: dict, k: int) -> dict:
        return {key: value[k] for key, value in params.items()}

    def _component_loglik(self, params: dict, X: np.ndarray) -> np.ndarray:
        """``(N, K, M)``: log w_kc + log N(x_t | mu_kc, Sigma_kc)."""
        K, M = self.n_states, self.n_mix
        comp = self._flat.log_likelihood(self._flat_params(params), X).reshape(len(X), K, M)
        with np.errstate(divide="ignore"):
            return comp + np.log(params["weights"])

    # -- likelihood and statistics ---------------------------------------------------------
    def log_likelihood(self, params, X):
        r"""Compute the mixture's log density of every row under every state, in log space.

        :math:`\log \sum_c w_{kc} N(x_t \mid \mu_{kc}, \Sigma_{kc})`; with ``params["log_offset"]``
        (K, M) (the variational view from :meth:`vb_expected`) each component's term gets its
        offset. Missing entries (NaN) are marginalised in every component
        (:meth:`GaussianEmissions.log_likelihood <.gaussian.GaussianEmissions.log_likelihood>`);
        a row with nothing observed has log-likelihood 0.

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
        return self.responsibilities(params, X)[0]

    def responsibilities(self, params: dict, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r"""Compute the log-likelihood and the component responsibilities.

        :math:`r_{tkc} = p(c \mid z_t = k, x_t) = w_{kc} N(x_t\mid\mu_{kc},\Sigma_{kc}) /
        p(x_t \mid z_t = k)` (of the observed dimensions; the weights for a row with nothing
        observed).

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"means"``, ``"covars"``, ...).
        X : ndarray of shape (n_samples, n_features)
            The observations, as :meth:`validate_X` returns them.

        Returns
        -------
        log_likelihood : ndarray of shape (n_samples, n_states)
            :meth:`log_likelihood`.
        resp : ndarray of shape (n_samples, n_states, n_mix)
            :math:`r_{tkc}`.
        """
        comp = self._component_loglik(params, X)
        with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
            # log-sum-exp about each row's largest term (scipy's logsumexp costs ten
            # times more on the one-row calls of online EM)
            top = comp.max(axis=2, keepdims=True)
            top = np.where(np.isfinite(top), top, 0.0)
            terms = np.exp(comp - top)
            total = np.log(terms.sum(axis=2)) + top[:, :, 0]
            resp = terms / terms.sum(axis=2, keepdims=True)
        return total, np.where(np.isfinite(resp), resp, 0.0)

    def statistics(self, X, post):
        raise InvalidInputError(
            "GMMEmissions.statistics: the component responsibilities need the parameters; "
            "call statistics_at(params, X, post)")

    def statistics_at(self, params, X, post):
        r"""Compute the components' statistics, weighted by :math:`\gamma_{tk} r_{tkc}`.

        The K*M components' statistics (:meth:`GaussianEmissions.statistics
        <.gaussian.GaussianEmissions.statistics>`: centred about reference points); their
        ``post`` (K*M,) are the weights' counts. A partly missing row contributes each
        component's conditional moments of its missing dimensions (the Gaussian family's, with
        the component as one more latent variable); a row with nothing observed, its weight to
        the counts only.

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
        resp = self.responsibilities(params, X)[1]
        weighted = (np.asarray(post)[:, :, None] * resp).reshape(len(X), -1)
        return self._flat.statistics(X, weighted, self._flat_params(params))

    def merge_statistics(self, a, b):
        """Combine the components' statistics as the Gaussian family merges them.

        Each part's sums are taken about its own reference points
        (:meth:`GaussianEmissions.merge_statistics
        <.gaussian.GaussianEmissions.merge_statistics>`).

        Parameters
        ----------
        a, b : dict
            The statistics of two disjoint sets of observations.

        Returns
        -------
        dict
            The statistics of the union.
        """
        return self._flat.merge_statistics(a, b)

    def statistic_vector(self):
        """Tell online EM to keep one Gaussian vector per component (full for a tied mixture).

        Returns
        -------
        tuple of (str, int)
            ``("diag" or "full", n_mix)``.
        """
        return self._flat.statistic_vector()[0], self.n_mix

    def table_build_copies(self):
        """Count the ``(N, K, M)`` component tables, then their sum.

        Returns
        -------
        int
            The number of ``(N, K)`` arrays alive at once (see
            :meth:`EmissionFamily.table_build_copies`).
        """
        return 3 * self.n_mix + 1

    def impute(self, params, X, post):
        r"""Replace missing entries by the posterior predictive mean over the components.

        :math:`\sum_{k,c} \gamma_{tk} r_{tkc} E[x_{t,m} \mid x_{t,o}, z_t = k, c]`
        (:meth:`GaussianEmissions.impute <.gaussian.GaussianEmissions.impute>` over the K*M
        components).

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
        resp = self.responsibilities(params, X)[1]
        flat_post = (np.asarray(post)[:, :, None] * resp).reshape(len(X), -1)
        return self._flat.impute(self._flat_params(params), X, flat_post)

    def _state_stats(self, stats: dict, k: int) -> dict:
        M = self.n_mix
        return {key: value[k * M:(k + 1) * M] for key, value in stats.items()}

    def _counts(self, stats: dict) -> np.ndarray:
        return stats["post"].reshape(self.n_states, self.n_mix)

    def mstep(self, params, stats, which):
        weights, dead = self.rows.mstep(params["weights"], self._counts(stats), which)
        means, covars = params["means"].copy(), params["covars"].copy()
        if "m" in which or "c" in which:
            for k, fam in enumerate(self._states):
                new, bad = fam.mstep(self._state_params(params, k), self._state_stats(stats, k),
                                     which)
                means[k], covars[k] = new["means"], new["covars"]
                if bad:
                    dead.append(k)
        return ({"weights": weights, "means": means, "covars": covars},
                sorted(set(int(k) for k in dead)))

    def log_prior(self, params):
        r"""Compute the weights' Dirichlet log density plus every state's Gaussian log prior.

        The prior whose joint maximiser with the data is :meth:`mstep`.

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
        return self.rows.log_prior(params["weights"]) + sum(
            fam.log_prior(self._state_params(params, k)) for k, fam in enumerate(self._states))

    def check_point_priors(self, learn: str) -> None:
        """Check the priors of the point-estimate modes.

        ``means_weight`` and ``covars_weight`` single numbers (``means_weight >= 0``),
        ``means_prior`` finite and broadcastable to (K, M, D), ``covars_prior`` broadcastable to
        the covariances' shape and non-negative (positive semi-definite for full/tied).
        ``weights_prior`` is checked with the Dirichlet priors.

        Parameters
        ----------
        learn : str
            The learning mode, for the message.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a prior fails a check.
        """
        K, M, D, ct = self.n_states, self.n_mix, self.n_features, self.covariance_type
        for name, minimum in (("means_weight", 0.0), ("covars_weight", None)):
            arr = broadcast_param(name, getattr(self, name), None)
            if arr.size != 1:
                raise InvalidInputError(
                    f"{name}: learn={learn!r} takes a single number, got an array of shape "
                    f"{arr.shape} (per-component values are for learn='vb')")
            check_number(float(arr.reshape(())), name, minimum=minimum)
        mp = broadcast_param("means_prior", self.means_prior, (K, M, D))
        if not np.all(np.isfinite(mp)):
            raise InvalidInputError("means_prior: must be finite")
        shape = gmm_covars_shape(ct, K, M, D)
        cp = broadcast_param("covars_prior", self.covars_prior, shape)
        if ct in ("spherical", "diag"):
            bad = not np.all(np.isfinite(cp) & (cp >= 0))
        else:
            mats = cp.reshape(-1, D, D)
            bad = not (np.all(np.isfinite(mats)) and np.allclose(mats, mats.transpose(0, 2, 1))
                       and np.linalg.eigvalsh(mats).min() >= -1e-12 * max(
                           1.0, float(np.abs(mats).max())))
        if bad:
            kind = "non-negative" if ct in ("spherical", "diag") else \
                "symmetric positive semi-definite"
            raise InvalidInputError(
                f"covars_prior: must be finite and {kind} for covariance_type={ct!r} (it is "
                "added to the scatter of every component's covariance estimate); pass e.g. "
                "covars_prior=1e-2")

    # -- variational Bayes -----------------------------------------------------------------
    def _state_q(self, q: dict, k: int) -> dict:
        return {key: q[key][k] for key in ("means", "beta", "dof", "scale")}

    @staticmethod
    def _stack(parts: list[dict]) -> dict:
        return {key: np.stack([np.asarray(p[key]) for p in parts]) for key in parts[0]}

    def vb_init(self, params, n_virtual):
        """Build the variational posterior centred on ``params``.

        Dirichlet(prior + n_virtual * weights) on the weights, and each component's posterior
        as if estimated from ``n_virtual / n_mix`` observations.

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
            The variational posterior's hyper-parameters.
        """
        n = n_virtual / self.n_mix
        comps = self._stack([fam.vb_init(self._state_params(params, k), n)
                             for k, fam in enumerate(self._states)])
        return {"weights": self.rows.vb_init(params["weights"], n_virtual), **comps}

    def vb_update(self, q, stats, which):
        weights = self.rows.vb_update(q["weights"], self._counts(stats), which)
        comps = self._stack([fam.vb_update(self._state_q(q, k), self._state_stats(stats, k),
                                           which) for k, fam in enumerate(self._states)])
        return {"weights": weights, **comps}

    def vb_expected(self, q):
        """Return what the E-step uses under the variational posterior.

        ``weights`` exp E[log w] (rows sum to less than one) and each component's Gaussian view
        with its ``log_offset`` (see :meth:`GaussianEmissions.vb_expected
        <.gaussian.GaussianEmissions.vb_expected>`).

        Parameters
        ----------
        q : dict
            The variational posterior's hyper-parameters (from :meth:`vb_init` /
            :meth:`vb_update`).

        Returns
        -------
        dict
            ``weights``, ``means``, ``covars`` and ``log_offset`` (K, M).
        """
        comps = self._stack([fam.vb_expected(self._state_q(q, k))
                             for k, fam in enumerate(self._states)])
        return {"weights": self.rows.vb_expected(q["weights"]), **comps}

    def vb_kl(self, q):
        return self.rows.vb_kl(q["weights"]) + sum(
            fam.vb_kl(self._state_q(q, k)) for k, fam in enumerate(self._states))

    def vb_mean(self, q):
        comps = self._stack([fam.vb_mean(self._state_q(q, k))
                             for k, fam in enumerate(self._states)])
        return {"weights": self.rows.vb_mean(q["weights"]), **comps}

    # -- initialisation, checks, sampling -------------------------------------------------
    def initialize(self, X, rng):
        """Initialise by hmmlearn's scheme on shift-invariant k-means.

        K clusters by k-means (:func:`~.base.kmeans`), then ``n_mix`` means by k-means within
        each (a cluster with fewer points than ``n_mix`` gets its centre plus noise of the data's
        spread), uniform weights, every covariance the data's covariance plus ``min_covar``
        (missing entries: their column's mean, :func:`~.base.fill_missing`).

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            The observations, as :meth:`validate_X` returns them.
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        dict of str to ndarray
            ``weights``, ``means`` and ``covars``.
        """
        K, M, D = self.n_states, self.n_mix, X.shape[1]
        X = fill_missing(X)
        cv = np.atleast_2d(np.cov(X.T)) if len(X) > 1 else np.eye(D)
        cv = cv + self.min_covar * np.eye(D)
        spread = np.sqrt(np.diag(cv))
        if len(X) >= K:
            centres, labels = kmeans(X, K, rng)
        else:
            centres, labels = X[rng.integers(len(X), size=K)], np.full(len(X), -1)
        means = np.empty((K, M, D))
        for k in range(K):
            Xk = X[labels == k]
            if len(Xk) >= M:
                means[k] = kmeans(Xk, M, rng)[0]
            else:
                means[k] = centres[k] + spread * rng.standard_normal((M, D))
        ct = self.covariance_type
        if ct == "spherical":
            covars = np.full((K, M), np.diag(cv).mean())
        elif ct == "diag":
            covars = np.tile(np.diag(cv), (K, M, 1))
        elif ct == "full":
            covars = np.tile(cv, (K, M, 1, 1))
        else:
            covars = np.tile(cv, (K, 1, 1))
        return {"weights": np.full((K, M), 1.0 / M), "means": means, "covars": covars}

    def check_params(self, params):
        K, M, D, ct = self.n_states, self.n_mix, self.n_features, self.covariance_type
        weights = check_stochastic(params["weights"], (K, M), "weights_")
        means = np.asarray(params["means"], dtype=np.float64)
        if means.shape != (K, M, D) or not np.all(np.isfinite(means)):
            raise InvalidInputError(
                f"means_: expected finite values of shape (n_states, n_mix, n_features) = "
                f"{(K, M, D)}, got {means.shape}")
        shape = gmm_covars_shape(ct, K, M, D)
        covars = np.asarray(params["covars"], dtype=np.float64)
        if covars.shape != shape:
            raise InvalidInputError(
                f"covars_: for covariance_type={ct!r} expected shape {shape}, got "
                f"{covars.shape}")
        for k, fam in enumerate(self._states):
            try:
                fam.check_params({"means": means[k], "covars": covars[k]})
            except InvalidInputError as exc:
                raise InvalidInputError(f"covars_: state {k}: {exc}") from None
        return {"weights": weights, "means": means, "covars": covars}

    def sample(self, params, states, rng):
        """Draw a component from the state's weights, then a draw from that Gaussian.

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"means"``, ``"covars"``, ...).
        states : ndarray of int, shape (n,)
            The hidden state of each observation to draw.
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        ndarray of shape (n, n_features)
            The observations.
        """
        cdf = np.cumsum(params["weights"], axis=1)
        u = rng.random(len(states)) * cdf[states, -1]
        comp = np.minimum((u[:, None] >= cdf[states]).sum(axis=1), self.n_mix - 1)
        return self._flat.sample(self._flat_params(params), states * self.n_mix + comp, rng)

    def n_free_parameters(self):
        K, M, D = self.n_states, self.n_mix, self.n_features
        cov = {"spherical": K * M, "diag": K * M * D, "full": K * M * D * (D + 1) // 2,
               "tied": K * D * (D + 1) // 2}[self.covariance_type]
        return K * (M - 1) + K * M * D + cov

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

Safeguards, each with a :class:`~hiddenstate.errors.DegenerateStateWarning` naming the
state: a state with no posterior mass keeps its previous mean and covariance; a variance
(or covariance eigenvalue) below ``min_covar`` is raised to ``min_covar``.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import linalg

from .._validation import check_real_X
from ..errors import InvalidInputError
from ..kernels import gaussian_diag_loglik
from .base import EmissionFamily

COVARIANCE_TYPES = ("spherical", "diag", "full", "tied")
_LOG_2PI = np.log(2.0 * np.pi)
_DEAD = 1e-10  # posterior mass below which a state is treated as unvisited


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
    letters = {"m": "means", "c": "covars"}

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
        return check_real_X(X, fitted_n_features)

    def infer_n_features(self, X):
        return X.shape[1]

    # -- log-likelihood ---------------------------------------------------------------------
    def log_likelihood(self, params, X):
        K, D = self.n_states, X.shape[1]
        means, covars = params["means"], params["covars"]
        ct = self.covariance_type
        if ct in ("diag", "spherical"):
            var = covars if ct == "diag" else np.repeat(covars[:, None], D, axis=1)
            log_norm = -0.5 * (D * _LOG_2PI + np.log(var).sum(axis=1))
            out = np.empty((len(X), K))
            gaussian_diag_loglik(X, means, 1.0 / var, log_norm, out)
            return out
        covs = full_covars(covars, ct, K, D)
        out = np.empty((len(X), K))
        for k in range(K):
            chol = linalg.cholesky(covs[k], lower=True)
            z = linalg.solve_triangular(chol, (X - means[k]).T, lower=True)
            out[:, k] = -0.5 * (D * _LOG_2PI + (z * z).sum(axis=0)) - np.log(
                np.diag(chol)).sum()
        return out

    # -- statistics and M-step --------------------------------------------------------------
    def statistics(self, X, post):
        stats = {"post": post.sum(axis=0), "obs": post.T @ X}
        if self.covariance_type in ("diag", "spherical"):
            stats["obs**2"] = post.T @ (X * X)
        else:
            stats["obs*obs.T"] = np.stack(
                [(post[:, k, None] * X).T @ X for k in range(self.n_states)])
        return stats

    def mstep(self, params, stats, which):
        K, D = self.n_states, self.n_features
        n = stats["post"]
        dead = np.flatnonzero(n < _DEAD)
        live = n >= _DEAD
        means = params["means"].copy()
        covars = params["covars"].copy()
        mp, mw = self.means_prior, self.means_weight
        if "m" in which:
            with np.errstate(divide="ignore", invalid="ignore"):  # dead states are skipped
                new = (mw * mp + stats["obs"]) / (mw + n[:, None])
            means[live] = np.broadcast_to(new, means.shape)[live]
        floored = []
        if "c" in which:
            cp, cw = self.covars_prior, self.covars_weight
            diff = means - mp
            ct = self.covariance_type
            if ct in ("diag", "spherical"):
                c_n = (mw * diff**2 + stats["obs**2"] - 2 * means * stats["obs"]
                       + means**2 * n[:, None])
                new = (cp + c_n) / np.maximum(max(cw - 1, 0) + n[:, None], 1e-5)
                if ct == "spherical":
                    new = new.mean(axis=1)
                low = np.atleast_2d(new.T).T < self.min_covar
                floored = np.flatnonzero(low.reshape(K, -1).any(axis=1) & live).tolist()
                new = np.maximum(new, self.min_covar)
                covars[live] = new[live]
            else:
                c_n = np.empty((K, D, D))
                for k in range(K):
                    om = np.outer(stats["obs"][k], means[k])
                    c_n[k] = (mw * np.outer(diff[k], diff[k]) + stats["obs*obs.T"][k]
                              - om - om.T + np.outer(means[k], means[k]) * n[k])
                cvw = max(cw - D, 0)
                if ct == "tied":
                    new, fl = _floor_eigen((cp + c_n.sum(axis=0)) / (cvw + n.sum()),
                                           self.min_covar)
                    floored = list(range(K)) if fl else []
                    covars = new
                else:
                    new = (cp + c_n) / (cvw + n[:, None, None])
                    for k in np.flatnonzero(live):
                        covars[k], fl = _floor_eigen(new[k], self.min_covar)
                        if fl:
                            floored.append(int(k))
        return {"means": means, "covars": covars}, sorted(set(dead.tolist()) | set(floored))

    # -- initialisation, checks, sampling -----------------------------------------------------
    def initialize(self, X, rng):
        from sklearn.cluster import KMeans

        K, D = self.n_states, X.shape[1]
        if len(X) >= K:
            km = KMeans(n_clusters=K, n_init=1, random_state=int(rng.integers(2**31 - 1)))
            with warnings.catch_warnings():  # fewer distinct points than states is fine here
                warnings.simplefilter("ignore")
                means = km.fit(X).cluster_centers_
        else:
            means = X[rng.integers(len(X), size=K)] + rng.standard_normal((K, D))
        cv = np.atleast_2d(np.cov(X.T)) if len(X) > 1 else np.eye(D)
        cv = cv + self.min_covar * np.eye(D)
        ct = self.covariance_type
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
                if not np.allclose(c, c.T) or np.linalg.eigvalsh(c).min() <= 0:
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


def _floor_eigen(cov: np.ndarray, floor: float) -> tuple[np.ndarray, bool]:
    """Raise eigenvalues of a symmetric matrix below ``floor`` to ``floor``."""
    cov = 0.5 * (cov + cov.T)
    w, v = np.linalg.eigh(cov)
    if w.min() >= floor:
        return cov, False
    return (v * np.maximum(w, floor)) @ v.T, True

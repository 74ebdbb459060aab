r"""Gaussian linear-regression emissions: each state regresses the observation on a design
row (inputs, lagged observations for an autoregressive model, and an intercept).

.. math::
    y_t \mid z_t = k \;\sim\; N(W_k \phi_t,\ \Sigma_k), \qquad
    W_k = [\,\text{coef}_k \mid \text{intercept}_k\,] \in \mathbb R^{D \times P}

(the intercept is the last column when the model fits one). The family reads its data as
one array per row, ``Z = [y | phi]`` (``D + P`` columns), built by
:class:`hiddenstate.RegressionHMM` from the observations, the inputs and the lags: that way
every part of the framework that slices rows of the data (emission tables, clamped rows,
partitions) carries the design with the observation.

**Prior** (Minka 2000, "Bayesian linear regression"; Fox et al. 2011 for AR-HMMs): matrix
normal inverse Wishart (MNIW),

.. math::
    W_k \mid \Sigma_k \sim MN(M_0, \Sigma_k, \Lambda_0^{-1}), \qquad
    \Sigma_k \sim IW(\Psi_0, \nu_0),

with :math:`M_0` = ``coef_prior`` (the intercept column: the data mean of ``y`` when the
estimator builds the family), :math:`\Lambda_0` = ``coef_weight`` (a precision in
pseudo-observations of the design; a scalar means that times the identity), :math:`\Psi_0` =
``covars_prior`` and :math:`\nu_0` = ``covars_weight``. With the statistics
:math:`n_k = \sum_t\gamma_{tk}`, :math:`S_{\phi\phi} = \sum_t \gamma_{tk}\phi_t\phi_t^\top`,
:math:`S_{y\phi}`, :math:`S_{yy}` the posterior is MNIW with

.. math::
    \Lambda_n = \Lambda_0 + S_{\phi\phi}, \quad
    M_n = (M_0\Lambda_0 + S_{y\phi})\Lambda_n^{-1}, \quad
    \Psi_n = \Psi_0 + S_{yy} + M_0\Lambda_0 M_0^\top - M_n\Lambda_n M_n^\top, \quad
    \nu_n = \nu_0 + n_k.

*EM* is the maximum-likelihood update (:math:`\Lambda_0 = 0, \Psi_0 = 0`): weighted least
squares and the weighted residual covariance. *MAP* is the posterior mode in
:math:`(W, \Sigma^{-1})`, :math:`W = M_n` and
:math:`\Sigma = \Psi_n / (n_k + \max(\nu_0 - D - 1 + r, 0))` with :math:`r` the rank of
:math:`\Lambda_0` (the Gaussian family's convention: its ``max(covars_weight - D, 0)`` is
this with :math:`r = 1`, the mean's normal); a positive :math:`\Lambda_0` (ridge) makes it
well posed when a state's design is rank-deficient. *VB* keeps :math:`q(W, \Sigma)` =
MNIW(:math:`M_n, \Lambda_n, \Psi_n, \nu_n`) (a proper prior is needed: :math:`\Lambda_0`,
:math:`\Psi_0` positive definite, :math:`\nu_0 > D - 1`); its E-step scores a row by

.. math::
    E_q \log N(y \mid W\phi, \Sigma) = \tfrac12 E\log|\Sigma^{-1}| - \tfrac D2 \log 2\pi
    - \tfrac12\big(\nu_n (y - M_n\phi)^\top\Psi_n^{-1}(y - M_n\phi)
    + D\,\phi^\top\Lambda_n^{-1}\phi\big).

**Accuracy.** The statistics are taken about a reference point, the column means of the
training rows (``center``), with the intercept absorbing the shift; the M-step solves in
those centred coordinates (the prior moved with them exactly: :math:`\tilde\Lambda_0 =
A\Lambda_0A^\top` for the affine map :math:`A` of the design) and maps back. So a series far
from the origin (a price level of :math:`10^4` with daily moves of 1) is fitted without the
cancellation of raw second moments.

**Missing values.** A row whose observation is missing (every entry NaN) has no emission
term: log-likelihood 0 in every state, no statistics. A partly missing row is refused by
the estimator.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg
from scipy.special import digamma

from ..errors import InvalidInputError
from ..inference import EmissionTable, all_occupied
from ..kernels.regression import regression_loglik, weighted_outer_sums
from .base import DEAD_MASS, EmissionFamily, kmeans
from .gaussian import _definite, _floor_eigen, _kl_wishart

_LOG_2PI = np.log(2.0 * np.pi)
# Products with a long dimension of rows and short others ((N, P) x (P, K)) are written as
# np.einsum, which does not call BLAS: OpenBLAS's threads took 100 ms for what einsum does in
# 2 ms on a busy two-core machine (benchmarks/bench_covariates.py).
#: rows of at most this many columns get their statistics from a numba loop
#: (:mod:`hiddenstate.kernels.regression`), wider ones from a BLAS product per state
_NARROW = 16


def _solve_sym(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, bool]:
    """``A^{-1} B`` for a symmetric positive semi-definite ``A``: Cholesky, or the
    minimum-norm least-squares solution when ``A`` is singular (then ``False``)."""
    try:
        return linalg.cho_solve(linalg.cho_factor(A), B), True
    except linalg.LinAlgError:
        return np.linalg.lstsq(A, B, rcond=None)[0], False


class _RegressionFamily(EmissionFamily):
    """What the regression emission families share: a design of ``n_regressors`` columns
    (and the intercept's column of ones), the rows ``[y | phi]`` the estimator lays out, and
    per state one matrix ``[coef | intercept]`` with a Gaussian prior of precision
    ``coef_weight`` on its rows."""

    def __init__(self, n_states, n_features, n_regressors, fit_intercept=True,
                 coef_weight=0.0):
        super().__init__(n_states, n_features)
        self.n_regressors = int(n_regressors)
        self.fit_intercept = bool(fit_intercept)
        self.coef_weight = coef_weight

    @property
    def n_design(self) -> int:
        """P, the design columns with the intercept."""
        return self.n_regressors + int(self.fit_intercept)

    # -- parameters as one matrix W (K, D, P) ----------------------------------------------
    def weights(self, params: dict) -> np.ndarray:
        """The regression matrices :math:`W_k = [\\text{coef}_k | \\text{intercept}_k]`.

        Parameters
        ----------
        params : dict
            ``coef`` and ``intercept``.

        Returns
        -------
        ndarray of shape (K, n_features, P)
            The matrices (one row per feature; per category for logistic emissions).
        """
        if not self.fit_intercept:
            return np.asarray(params["coef"])
        return np.concatenate([params["coef"], params["intercept"][..., None]], axis=2)

    def _split(self, W: np.ndarray) -> dict:
        if not self.fit_intercept:
            return {"coef": W, "intercept": np.zeros(W.shape[:2])}
        return {"coef": W[..., :-1].copy(), "intercept": W[..., -1].copy()}

    def _precision(self) -> np.ndarray:
        """The prior precision of a row of ``W`` from ``coef_weight``: a scalar times the
        identity, a ``(P,)`` diagonal, or the ``(P, P)`` (or per state ``(K, P, P)``) given."""
        weight = np.asarray(self.coef_weight, dtype=np.float64)
        if weight.ndim == 0:
            return float(weight) * np.eye(self.n_design)
        return np.diag(weight) if weight.ndim == 1 else weight

    # -- data -----------------------------------------------------------------------------
    def validate_X(self, X, fitted_n_features):
        """The estimator validates and lays out the rows (:class:`hiddenstate.RegressionHMM`).

        Parameters
        ----------
        X : ndarray
            Rows ``[y | phi]`` as the estimator built them.
        fitted_n_features : int or None
            Not used.

        Returns
        -------
        ndarray
            ``X``.
        """
        return X

    # -- checks and sampling --------------------------------------------------------------
    def _checked(self, params: dict, shapes: dict, rows: str) -> dict:
        """The arrays of ``shapes`` (key -> (shape, the message's end of its axes after
        ``rows``)) as float64, each of its shape and finite, the intercepts 0 without
        ``fit_intercept``."""
        out = {}
        for key, (shape, axes) in shapes.items():
            arr = np.asarray(params[key], dtype=np.float64)
            if arr.shape != shape:
                raise InvalidInputError(
                    f"{key}_: expected shape {shape} (n_states, {rows}{axes}, got {arr.shape}")
            if not np.all(np.isfinite(arr)):
                raise InvalidInputError(f"{key}_: entries must be finite")
            out[key] = arr
        if not self.fit_intercept and np.any(out["intercept"]):
            raise InvalidInputError(
                "intercept_: fit_intercept=False, so the intercepts must be 0")
        return out

    @staticmethod
    def _require_design(design) -> None:
        if design is None:
            raise InvalidInputError(
                "design: a regression emission needs the design row of every draw")


class LinearRegressionEmissions(_RegressionFamily):
    r"""Gaussian linear regression per state, with the MNIW prior (module docstring).

    Parameters ``coef`` ``(K, D, Q)``, ``intercept`` ``(K, D)`` (zeros, not learned, without
    an intercept) and ``covars`` ``(K, D, D)`` (full). Built by
    :class:`hiddenstate.RegressionHMM` for ``emission="linear"``; reads rows
    ``Z = [y | phi]``, ``phi = [inputs | lags | 1]``.

    Parameters
    ----------
    n_states : int
        The number of hidden states K.
    n_features : int
        The dimension D of the observations.
    n_regressors : int
        The design columns Q besides the intercept (inputs, then ``n_lags * D`` lags).
    fit_intercept : bool, default=True
        Whether the design ends with a column of ones.
    min_covar : float, default=1e-3
        The floor of the covariance eigenvalues, applied with a warning.
    coef_prior : float or array-like, default=0.0
        :math:`M_0`, broadcastable to ``(K, D, P)`` (P = Q + fit_intercept).
    coef_weight : float or array-like, default=0.0
        :math:`\Lambda_0`: a scalar (times the identity), a ``(P,)`` diagonal, ``(P, P)`` or
        ``(K, P, P)``.
    covars_prior : float or array-like, default=0.0
        :math:`\Psi_0`: a scalar (times the identity), ``(D, D)`` or ``(K, D, D)``.
    covars_weight : float, default=1.0
        :math:`\nu_0`.
    center : array-like of shape (D + P,) or None, default=None
        The reference point of the statistics (the intercept's entry is ignored); None: 0.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families import LinearRegressionEmissions
    >>> family = LinearRegressionEmissions(n_states=2, n_features=1, n_regressors=1)
    >>> params = {"coef": np.array([[[1.0]], [[-1.0]]]), "intercept": np.zeros((2, 1)),
    ...           "covars": np.ones((2, 1, 1))}
    >>> Z = np.array([[2.0, 2.0, 1.0], [np.nan, 0.5, 1.0]])   # [y | input, 1]
    >>> family.log_likelihood(params, Z).round(3)
    array([[-0.919, -8.919],
           [ 0.   ,  0.   ]])
    """

    letters = {"r": "coef", "c": "covars"}

    def __init__(self, n_states, n_features, n_regressors, fit_intercept=True, min_covar=1e-3,
                 coef_prior=0.0, coef_weight=0.0, covars_prior=0.0, covars_weight=1.0,
                 center=None):
        super().__init__(n_states, n_features, n_regressors, fit_intercept, coef_weight)
        self.min_covar = float(min_covar)
        self.coef_prior = coef_prior
        self.covars_prior = covars_prior
        self.covars_weight = covars_weight
        self.center = None if center is None else np.asarray(center, dtype=np.float64)

    @property
    def parameter_columns(self) -> int:
        return self.n_features * (self.n_design + self.n_features)

    # -- data -----------------------------------------------------------------------------
    def infer_n_features(self, X):
        return self.n_features

    def autocorrelation_data(self, X):
        return X[:, :self.n_features], False

    def _rows(self, Z):
        D = self.n_features
        y, phi = Z[:, :D], Z[:, D:]
        miss = np.isnan(y[:, 0])
        if miss.any():
            y = np.where(miss[:, None], 0.0, y)
        return y, phi, miss

    # -- log-likelihood -------------------------------------------------------------------
    def _kernel_loglik(self, params, X, scale: bool, occupied=None):
        """``(table, shift)`` by :func:`~hiddenstate.kernels.regression.regression_loglik`
        (scaled per row with ``scale``)."""
        K, D = self.n_states, self.n_features
        covars = np.asarray(params["covars"], dtype=np.float64)
        chol = np.linalg.cholesky(covars)
        inv_chol = np.ascontiguousarray(np.linalg.inv(chol))
        log_norm = -0.5 * (D * _LOG_2PI) - np.log(np.diagonal(chol, axis1=1,
                                                              axis2=2)).sum(axis=1)
        if "log_offset" in params:
            log_norm = log_norm + params["log_offset"]
        out = np.empty((len(X), K))
        shift = np.empty(len(X) if scale else 0)
        regression_loglik(np.ascontiguousarray(X, dtype=np.float64),
                          np.ascontiguousarray(self.weights(params), dtype=np.float64),
                          inv_chol, np.ascontiguousarray(log_norm), scale,
                          all_occupied(K, occupied), out, shift)
        return out, shift

    def log_likelihood(self, params, X):
        r"""Compute :math:`\log N(y_t \mid W_k\phi_t, \Sigma_k)` for every row and state.

        With the VB view's ``design_var`` :math:`V_k = \Lambda_n^{-1}`, the row term
        :math:`-\tfrac D2\phi_t^\top V_k\phi_t` is added; ``log_offset`` per state too. A
        missing row (NaN) scores 0.

        Parameters
        ----------
        params : dict
            ``coef``, ``intercept``, ``covars`` (and the VB view's extra keys).
        X : ndarray of shape (n, D + P)
            Rows ``[y | phi]``.

        Returns
        -------
        ndarray of shape (n, K)
            The log-likelihoods.
        """
        if "design_var" not in params:
            return self._kernel_loglik(params, X, False)[0]
        D = self.n_features
        out = self._kernel_loglik({k: v for k, v in params.items() if k != "design_var"},
                                  X, False)[0]
        y, phi, miss = self._rows(X)
        out -= 0.5 * D * np.einsum("tp,kpq,tq->tk", phi, params["design_var"], phi)
        if miss.any():
            out[miss] = 0.0
        return out

    def table(self, params, X, occupied=None):
        """Return the emission table, scaled per row as the kernel computes it.

        Parameters
        ----------
        params : dict
            ``coef``, ``intercept``, ``covars`` (and the VB view's extra keys).
        X : ndarray of shape (n, D + P)
            Rows ``[y | phi]``.
        occupied : ndarray of bool of shape (n_states,) or None, default=None
            The states the chain can be in (the others: probability 0).

        Returns
        -------
        hiddenstate.inference.EmissionTable
            The table the forward-backward and Viterbi kernels read.
        """
        if "design_var" in params:
            return super().table(params, X, occupied)
        return EmissionTable.from_shifted(*self._kernel_loglik(params, X, True, occupied))

    # -- statistics -----------------------------------------------------------------------
    def _center(self) -> np.ndarray:
        D, P = self.n_features, self.n_design
        if self.center is None or not self.fit_intercept:
            return np.zeros(D + P)
        c = self.center.copy()
        c[-1] = 0.0   # the intercept column stays 1
        return c

    def statistics(self, X, post):
        r"""Compute the weighted second moments of ``[y | phi]`` about the reference point.

        Parameters
        ----------
        X : ndarray of shape (n, D + P)
            Rows ``[y | phi]``.
        post : ndarray of shape (n, K)
            The state posteriors.

        Returns
        -------
        dict
            ``post`` :math:`n_k` (K,) and ``G`` (K, D + P, D + P), the blocks
            :math:`S_{yy}, S_{y\phi}, S_{\phi\phi}` about :attr:`center`.
        """
        K, W = self.n_states, X.shape[1]
        center = self._center()
        if W <= _NARROW:   # see hiddenstate.kernels.regression
            G, n = np.zeros((K, W, W)), np.zeros(K)
            weighted_outer_sums(np.ascontiguousarray(X, dtype=np.float64), center,
                                np.ascontiguousarray(post, dtype=np.float64), G, n)
            return {"post": n, "G": G}
        Zc = X - center
        miss = np.isnan(Zc[:, 0])
        if miss.any():
            Zc[miss] = 0.0
            post = np.where(miss[:, None], 0.0, post)
        G = np.stack([(Zc * post[:, k, None]).T @ Zc for k in range(K)])
        return {"post": post.sum(axis=0), "G": G}

    def merge_statistics(self, a, b):
        """Sum the statistics (taken about the family's fixed :attr:`center`).

        Parameters
        ----------
        a, b : dict
            The statistics of two disjoint sets of rows.

        Returns
        -------
        dict
            Those of their union.
        """
        return {"post": a["post"] + b["post"], "G": a["G"] + b["G"]}

    # -- the prior, in raw and centred coordinates ----------------------------------------
    def _prior(self) -> dict:
        K, D, P = self.n_states, self.n_features, self.n_design
        M0 = np.broadcast_to(np.asarray(self.coef_prior, dtype=np.float64), (K, D, P))
        L0 = np.broadcast_to(self._precision(), (K, P, P))
        psi = np.asarray(self.covars_prior, dtype=np.float64)
        psi = np.broadcast_to(psi * np.eye(D) if psi.ndim == 0 else psi, (K, D, D))
        rank = np.array([np.linalg.matrix_rank(L0[k]) if np.any(L0[k]) else 0
                         for k in range(K)])
        return {"M0": M0, "L0": L0, "psi": psi, "nu": float(self.covars_weight),
                "rank": rank}

    def _maps(self):
        """``(A, A^{-1}, c_y)``: the design's centring map and the observation's centre."""
        D, P = self.n_features, self.n_design
        c = self._center()
        A = np.eye(P)
        Ainv = np.eye(P)
        if self.fit_intercept:
            A[:-1, -1] = -c[D:-1]      # phi~ = A phi: phi~_j = phi_j - c_j (phi_int = 1)
            Ainv[:-1, -1] = c[D:-1]
        return A, Ainv, c[:D]

    def _to_centred(self, W, A_inv, cy):
        Wc = W.copy()
        if self.fit_intercept:
            Wc[..., -1] -= cy
        return Wc @ A_inv

    def _from_centred(self, Wc, A, cy):
        W = Wc @ A
        if self.fit_intercept:
            W[..., -1] += cy
        return W

    def _centred_prior(self, p, A, A_inv, cy):
        M0c = self._to_centred(p["M0"].copy(), A_inv, cy)
        L0c = np.einsum("pq,kqr,sr->kps", A, p["L0"], A)
        return M0c, L0c

    # -- M-step ---------------------------------------------------------------------------
    def mstep(self, params, stats, which):
        K, D = self.n_states, self.n_features
        if "r" not in which and "c" not in which:
            return params, []
        n, G = stats["post"], stats["G"]
        p = self._prior()
        A, A_inv, cy = self._maps()
        M0c, L0c = self._centred_prior(p, A, A_inv, cy)
        W = self.weights(params).copy()
        covars = np.array(params["covars"], dtype=np.float64, copy=True)
        degenerate = []
        for k in range(K):
            if not n[k] >= DEAD_MASS:
                degenerate.append(k)
                continue
            Syy, Syp, Spp = G[k, :D, :D], G[k, :D, D:], G[k, D:, D:]
            Wc = self._to_centred(W[k], A_inv, cy)
            if "r" in which:
                Wc_t, ok = _solve_sym(L0c[k] + Spp, (M0c[k] @ L0c[k] + Syp).T)
                Wc = Wc_t.T
                if not ok:
                    degenerate.append(k)
            if "c" in which:
                d = Wc - M0c[k]
                S = (Syy - Wc @ Syp.T - Syp @ Wc.T + Wc @ Spp @ Wc.T
                     + d @ L0c[k] @ d.T + p["psi"][k])
                denom = n[k] + max(p["nu"] - D - 1 + p["rank"][k], 0.0)
                cov, floored = _floor_eigen(S / denom, self.min_covar)
                if _definite(cov):
                    covars[k] = cov
                if floored or not _definite(cov):
                    degenerate.append(k)
            W[k] = self._from_centred(Wc, A, cy)
        out = self._split(W) if "r" in which else {"coef": params["coef"],
                                                   "intercept": params["intercept"]}
        return {**out, "covars": covars}, sorted(set(degenerate))

    def log_prior(self, params):
        r"""Compute the log prior whose joint maximiser with the data is the M-step.

        .. math::
            \sum_k -\tfrac b2\log|\Sigma_k| - \tfrac12\mathrm{tr}\big((\Psi_0 +
            (W_k - M_0)\Lambda_0(W_k - M_0)^\top)\Sigma_k^{-1}\big),
            \quad b = \max(\nu_0 - D - 1 + r, 0)

        (0 for the flat prior of EM).

        Parameters
        ----------
        params : dict
            ``coef``, ``intercept``, ``covars``.

        Returns
        -------
        float
            The log prior up to a constant.
        """
        p = self._prior()
        D = self.n_features
        W = self.weights(params)
        total = 0.0
        for k in range(self.n_states):
            b = max(p["nu"] - D - 1 + p["rank"][k], 0.0)
            d = W[k] - p["M0"][k]
            S = p["psi"][k] + d @ p["L0"][k] @ d.T
            if b == 0 and not np.any(S):
                continue
            cov = params["covars"][k]
            total += -0.5 * b * np.linalg.slogdet(cov)[1] - 0.5 * np.trace(
                np.linalg.solve(cov, S))
        return float(total)

    # -- variational Bayes: q(W, Sigma) matrix-normal inverse-Wishart -----------------------
    def _vb_prior(self) -> dict:
        p = self._prior()
        D = self.n_features
        if not (np.all(np.isfinite(p["L0"])) and np.linalg.eigvalsh(p["L0"]).min() > 0):
            raise InvalidInputError(
                "coef_weight: learn='vb' needs a proper matrix-normal prior on the "
                "coefficients, a positive definite precision (got smallest eigenvalue "
                f"{np.linalg.eigvalsh(p['L0']).min():g}); pass e.g. coef_weight=1e-2")
        if not (np.all(np.isfinite(p["psi"])) and np.linalg.eigvalsh(p["psi"]).min() > 0):
            raise InvalidInputError(
                "covars_prior: learn='vb' needs a proper inverse-Wishart prior, a positive "
                "definite scale; pass e.g. covars_prior=1e-3")
        if not p["nu"] > D - 1:
            raise InvalidInputError(
                f"covars_weight: learn='vb' needs covars_weight > n_features - 1 = {D - 1} "
                f"(got {p['nu']:g}); pass e.g. covars_weight={D}")
        return p

    def _check_vb_letters(self, which):
        if ("r" in which) != ("c" in which):
            raise InvalidInputError(
                "params: learn='vb' updates coef_, intercept_ and covars_ together (one "
                "matrix-normal inverse-Wishart posterior); put both 'r' and 'c' in params, "
                "or neither")

    def vb_init(self, params, n_virtual):
        r"""Build the MNIW posterior centred on ``params``.

        :math:`M_n` = the coefficients, :math:`\nu_n = \nu_0 + n`, :math:`\Psi_n = \nu_n
        \Sigma` (so that :math:`E_q[\Sigma^{-1}]^{-1} = \Sigma`) and :math:`\Lambda_n =
        \Lambda_0 + n\,(I + \bar\phi\bar\phi^\top)` with :math:`\bar\phi` the centre of the
        design, as if each state had been estimated from ``n_virtual`` rows.

        Parameters
        ----------
        params : dict
            ``coef``, ``intercept``, ``covars``.
        n_virtual : float
            The pseudo-observations per state.

        Returns
        -------
        dict
            ``coef`` :math:`M_n` (K, D, P), ``precision`` :math:`\Lambda_n` (K, P, P),
            ``scale`` :math:`\Psi_n` (K, D, D) and ``dof`` :math:`\nu_n` (K,).
        """
        p = self._vb_prior()
        K, D, P = self.n_states, self.n_features, self.n_design
        m = np.r_[self._center()[D:-1], 1.0] if self.fit_intercept else np.zeros(P)
        moment = np.eye(P) + np.outer(m, m)
        dof = np.full(K, p["nu"] + n_virtual)
        return {"coef": self.weights(params).copy(),
                "precision": p["L0"] + n_virtual * moment,
                "scale": dof[:, None, None] * params["covars"], "dof": dof}

    def vb_update(self, q, stats, which):
        """Prior plus statistics (module docstring), solved in centred coordinates.

        Parameters
        ----------
        q : dict
            The variational posterior (:meth:`vb_init`).
        stats : dict
            The statistics.
        which : str
            ``"r"`` and ``"c"`` together, or neither.

        Returns
        -------
        dict
            The updated posterior.
        """
        self._check_vb_letters(which)
        if "r" not in which:
            return q
        p = self._vb_prior()
        D = self.n_features
        A, A_inv, cy = self._maps()
        M0c, L0c = self._centred_prior(p, A, A_inv, cy)
        n, G = stats["post"], stats["G"]
        Syy, Syp, Spp = G[:, :D, :D], G[:, :D, D:], G[:, D:, D:]
        Ln = L0c + Spp
        rhs = np.einsum("kdp,kpq->kdq", M0c, L0c) + Syp
        Mn = np.stack([_solve_sym(Ln[k], rhs[k].T)[0].T for k in range(self.n_states)])
        scale = (p["psi"] + Syy + np.einsum("kdp,kpq,keq->kde", M0c, L0c, M0c)
                 - np.einsum("kdp,kpq,keq->kde", Mn, Ln, Mn))
        scale = 0.5 * (scale + np.swapaxes(scale, 1, 2))
        # back to raw coordinates: W = W~ A + c_y e_int^T, precision A^{-1} Ln A^{-T}
        return {"coef": self._from_centred(Mn, A, cy),
                "precision": np.einsum("pq,kqr,sr->kps", A_inv, Ln, A_inv),
                "scale": scale, "dof": p["nu"] + n}

    def vb_expected(self, q):
        r"""Return what :meth:`log_likelihood` needs for :math:`E_q[\log p(y_t\mid z_t=k)]`.

        Parameters
        ----------
        q : dict
            The variational posterior.

        Returns
        -------
        dict
            ``coef``, ``intercept`` (:math:`M_n`), ``covars`` :math:`\Psi_n/\nu_n`,
            ``design_var`` :math:`\Lambda_n^{-1}` and ``log_offset``
            :math:`\tfrac12(\sum_{i<D}\psi(\tfrac{\nu_n-i}2) - D\log\tfrac{\nu_n}2)`.
        """
        D = self.n_features
        dof = q["dof"]
        i = np.arange(D)[:, None]
        gap = 0.5 * (digamma(0.5 * (dof - i)).sum(axis=0) - D * np.log(0.5 * dof))
        return {**self.vb_mean(q), "design_var": np.linalg.inv(q["precision"]),
                "log_offset": gap}

    def vb_kl(self, q):
        r"""Compute :math:`\mathrm{KL}(q\,\|\,p)` of the MNIW posterior, summed over states.

        The inverse-Wishart part is the Wishart KL of the precisions
        (:func:`~hiddenstate.families.gaussian._kl_wishart`); the matrix-normal part,
        averaged over :math:`q(\Sigma)`, is
        :math:`\tfrac12(D\,\mathrm{tr}(\Lambda_0\Lambda_n^{-1}) - DP + D\log
        \tfrac{|\Lambda_n|}{|\Lambda_0|} + \nu_n\mathrm{tr}(\Psi_n^{-1}(M_n - M_0)
        \Lambda_0(M_n - M_0)^\top))`.

        Parameters
        ----------
        q : dict
            The variational posterior.

        Returns
        -------
        float
            The KL divergence.
        """
        p = self._vb_prior()
        D, P = self.n_features, self.n_design
        total = 0.0
        for k in range(self.n_states):
            Ln, L0 = q["precision"][k], p["L0"][k]
            d = q["coef"][k] - p["M0"][k]
            total += _kl_wishart(float(q["dof"][k]), q["scale"][k], p["nu"], p["psi"][k])
            total += 0.5 * (D * np.trace(np.linalg.solve(Ln, L0)) - D * P
                            + D * (np.linalg.slogdet(Ln)[1] - np.linalg.slogdet(L0)[1])
                            + q["dof"][k] * np.trace(np.linalg.solve(q["scale"][k],
                                                                     d @ L0 @ d.T)))
        return float(total)

    def vb_mean(self, q):
        r"""Return :math:`M_n` and :math:`\Psi_n/\nu_n = E_q[\Sigma^{-1}]^{-1}`.

        Parameters
        ----------
        q : dict
            The variational posterior.

        Returns
        -------
        dict
            ``coef``, ``intercept`` and ``covars``.
        """
        return {**self._split(q["coef"].copy()),
                "covars": q["scale"] / q["dof"][:, None, None]}

    # -- initialisation, checks, sampling -------------------------------------------------
    def initialize(self, X, rng):
        """Start each state from a weighted least-squares fit to a k-means cluster.

        k-means on the observations (:func:`~.base.kmeans`), then per cluster the ridge
        regression of ``y`` on the design (the regression on all rows for a cluster with
        fewer than ``2 P`` rows) and every covariance the residual covariance of all rows
        about the regression of all rows (floored at ``min_covar``).

        Parameters
        ----------
        X : ndarray of shape (n, D + P)
            Rows ``[y | phi]``.
        rng : numpy.random.Generator
            The generator of k-means.

        Returns
        -------
        dict
            ``coef``, ``intercept`` and ``covars``.
        """
        K, D, P = self.n_states, self.n_features, self.n_design
        y, phi, miss = self._rows(X)
        y, phi = y[~miss], phi[~miss]
        if len(y) == 0:
            raise InvalidInputError("X: every observation is missing (NaN); nothing to fit")
        c = self._center()
        yc, pc = y - c[:D], phi - c[D:]

        def ridge(rows):
            G = np.einsum("tp,tq->pq", pc[rows], pc[rows])
            G += 1e-8 * (np.trace(G) / P + 1.0) * np.eye(P)
            return _solve_sym(G, np.einsum("tp,td->pd", pc[rows], yc[rows]))[0].T

        everything = np.arange(len(y))
        W_all = ridge(everything)
        resid = yc - np.einsum("tp,dp->td", pc, W_all)
        cov = np.einsum("td,te->de", resid, resid) / max(len(y), 1)
        cov, _ = _floor_eigen(cov + 1e-12 * np.eye(D), self.min_covar)
        _, labels = kmeans(y, K, rng)
        A, _, cy = self._maps()
        Wc = np.empty((K, D, P))
        for k in range(K):
            rows = np.flatnonzero(labels == k)
            Wc[k] = ridge(rows) if len(rows) >= 2 * P else W_all
        return {**self._split(self._from_centred(Wc, A, cy)),
                "covars": np.repeat(cov[None], K, axis=0)}

    def check_params(self, params):
        K, D, Q = self.n_states, self.n_features, self.n_regressors
        out = self._checked(params, {"coef": ((K, D, Q), ", n_regressors)"),
                                     "intercept": ((K, D), ")"),
                                     "covars": ((K, D, D), ", n_features)")}, "n_features")
        for k in range(K):
            cov = out["covars"][k]
            if not (np.allclose(cov, cov.T) and _definite(cov)):
                raise InvalidInputError(
                    f"covars_: the covariance of state {k} is not symmetric positive "
                    "definite")
        return out

    def sample(self, params, states, rng, design=None):
        r"""Draw :math:`y_t \sim N(W_{z_t}\phi_t, \Sigma_{z_t})`, one per row of ``design``.

        Parameters
        ----------
        params : dict
            ``coef``, ``intercept``, ``covars``.
        states : ndarray of int of shape (n,)
            The state of each draw.
        rng : numpy.random.Generator
            The generator.
        design : ndarray of shape (n, P)
            The design row of each draw (required: the mean depends on it).

        Returns
        -------
        ndarray of shape (n, D)
            The draws.
        """
        self._require_design(design)
        W = self.weights(params)
        mean = np.einsum("tdp,tp->td", W[states], design)
        L = np.linalg.cholesky(params["covars"])
        return mean + np.einsum("tde,te->td", L[states],
                                rng.standard_normal((len(states), self.n_features)))

    def n_free_parameters(self):
        D = self.n_features
        return self.n_states * (D * self.n_design + D * (D + 1) // 2)

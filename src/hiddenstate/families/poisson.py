r"""Poisson emissions, independent across features.

.. math::
    \log p(x \mid z=k) = \sum_d x_d \log\lambda_{kd} - \lambda_{kd} - \log\Gamma(x_d + 1).

M-step under a Gamma(:math:`a`, :math:`b`) prior (shape-rate; hmmlearn's ``lambdas_prior``
and ``lambdas_weight``): :math:`\lambda_k = (a + \sum_t \gamma_{tk} x_t)/(b + n_k)`;
EM uses :math:`a = b = 0`. Missing counts (NaN) have no emission term and are left out of
the statistics: :math:`n_{kd} = \sum_t \gamma_{tk}[x_{td}\text{ observed}]` replaces
:math:`n_k` for feature :math:`d` (the exact M-step, as the features are independent given
the state). A state with no posterior mass keeps its rates (with a
:class:`~hiddenstate.errors.DegenerateStateWarning`).

That M-step is the mode of the posterior under the prior
:math:`\lambda_{kd} \sim \mathrm{Gamma}(a + 1, b)` (shape, rate), and **variational Bayes**
uses that same prior (conjugate; MacKay 1997, Beal 2003 ch. 3): :math:`q(\lambda_{kd}) =
\mathrm{Gamma}(\hat a_{kd}, \hat b_{kd})` with

.. math::
    \hat a = a + 1 + \textstyle\sum_t \gamma_{tk} x_{td}, \qquad \hat b = b + n_k,

the E-step uses :math:`E_q\log p(x\mid\lambda) = \sum_d x_d(\psi(\hat a) - \log\hat b) -
\hat a/\hat b - \log\Gamma(x_d+1)` and the bound subtracts
:math:`\sum\mathrm{KL}(\mathrm{Gamma}(\hat a, \hat b)\,\|\,\mathrm{Gamma}(a+1, b))`. The
learned rates are the posterior means :math:`\hat a/\hat b`; the posterior is reported as
``lambdas_shape`` and ``lambdas_rate`` (K, D). VB needs a proper prior: ``lambdas_weight``
:math:`b > 0` and ``lambdas_prior`` :math:`a > -1`.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma, gammaln

from .._validation import broadcast_param, check_counts
from ..errors import InvalidInputError
from .base import DEAD_MASS, EmissionFamily, fill_missing, kmeans, labelled_mean
from .fixed import as_fixed, impose
from .posterior_draws import gamma_rates


class PoissonEmissions(EmissionFamily):
    r"""Poisson emissions: rates ``lambdas`` ``(K, D)``, independent across features.

    The log-likelihood, the M-step under a Gamma prior, the treatment of missing counts and
    the variational posterior are stated in the module docstring
    (:mod:`hiddenstate.families.poisson`). Built by :class:`hiddenstate.HMM` for
    ``emission="poisson"``. Observations are non-negative counts (NaN: missing).

    Parameters
    ----------
    n_states : int
        The number of hidden states K.
    n_features : int
        The number of features D.
    lambdas_prior : float or array-like, default=0.0
        :math:`a` of the Gamma(:math:`a`, :math:`b`) prior (shape-rate; hmmlearn's
        ``lambdas_prior``): the MAP M-step is :math:`(a + \sum_t \gamma_{tk} x_t)/(b + n_k)`.
        VB needs :math:`a > -1`.
    lambdas_weight : float or array-like, default=0.0
        :math:`b` of that prior (hmmlearn's ``lambdas_weight``). VB needs :math:`b > 0`.

    See Also
    --------
    hiddenstate.compat.hmmlearn.PoissonHMM : The hmmlearn PoissonHMM on this family.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families import PoissonEmissions
    >>> family = PoissonEmissions(n_states=2, n_features=1)
    >>> params = {"lambdas": np.array([[1.0], [10.0]])}
    >>> X = family.validate_X(np.array([[0.0], [10.0], [np.nan]]), None)   # NaN: missing
    >>> family.log_likelihood(params, X).round(3)
    array([[ -1.   , -10.   ],
           [-16.104,  -2.079],
           [  0.   ,   0.   ]])
    """
    letters = {"l": "lambdas"}

    def __init__(self, n_states, n_features, lambdas_prior=0.0, lambdas_weight=0.0):
        super().__init__(n_states, n_features)
        self.lambdas_prior = lambdas_prior
        self.lambdas_weight = lambdas_weight

    def validate_X(self, X, fitted_n_features):
        return check_counts(X, fitted_n_features, allow_missing=True)

    def infer_n_features(self, X):
        return X.shape[1]

    def log_likelihood(self, params, X):
        r"""Compute the Poisson log-likelihood of every row under every state.

        :math:`\log p(x_t \mid \lambda_k)`; with ``params["log_lambdas"]`` (the variational view
        from :meth:`vb_expected`) that replaces :math:`\log\lambda`:
        :math:`E_q[\log p(x_t \mid \lambda_k)]`. A missing count has no emission term; a positive
        count at a rate of 0 is impossible (:math:`-\infty`), a zero count there contributes
        nothing.

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
        lam = params["lambdas"]
        miss = np.isnan(X)
        if miss.any():  # no term for a missing count: its rate term is masked out too
            seen = (~miss).astype(np.float64)
            X = np.where(miss, 0.0, X)
            log_lam = (params["log_lambdas"] if "log_lambdas" in params
                       else np.log(np.where(lam > 0, lam, 1.0)))
            impossible = (X > 0).astype(np.float64) @ (lam <= 0).T.astype(np.float64)
            out = X @ log_lam.T - seen @ lam.T - gammaln(X + 1).sum(axis=1)[:, None]
            out[impossible > 0] = -np.inf
            return out
        if "log_lambdas" in params:
            return (X @ params["log_lambdas"].T - lam.sum(axis=1)
                    - gammaln(X + 1).sum(axis=1)[:, None])
        with np.errstate(divide="ignore", invalid="ignore"):
            logl = np.log(lam)
            # 0 * log(0) = 0: a zero rate explains zero counts with probability one
            terms = X @ np.where(lam > 0, logl, 0.0).T
            impossible = (X > 0).astype(np.float64) @ (lam <= 0).T.astype(np.float64)
        out = terms - lam.sum(axis=1) - gammaln(X + 1).sum(axis=1)[:, None]
        out[impossible > 0] = -np.inf
        return out

    def statistics(self, X, post):
        r"""Compute the posterior-weighted counts.

        ``post`` :math:`n_k`, ``obs`` :math:`\sum_t\gamma_{tk}x_t` and, with missing counts,
        ``seen`` :math:`n_{kd}` (their sums over the observed entries only).

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
        miss = np.isnan(X)
        if not miss.any():
            return {"post": post.sum(axis=0), "obs": post.T @ X}
        return {"post": post.sum(axis=0), "obs": post.T @ np.where(miss, 0.0, X),
                "seen": post.T @ (~miss).astype(np.float64)}

    def merge_statistics(self, a, b):
        """Combine the statistics of two disjoint data sets: sums, key by key.

        Where only one part had missing counts, the other part's ``seen`` is its ``post`` for
        every feature (all its counts observed).

        Parameters
        ----------
        a, b : dict
            The statistics of two disjoint sets of observations.

        Returns
        -------
        dict
            The statistics of the union.
        """
        out = {"post": a["post"] + b["post"], "obs": a["obs"] + b["obs"]}
        if "seen" in a or "seen" in b:
            out["seen"] = _seen(a) + _seen(b)
        return out

    def statistic_vector(self):
        """Tell online EM to accumulate (1, x) per state.

        Returns
        -------
        tuple of (str, None)
            ``("counts", None)``.
        """
        return "counts", None

    def labelled_start(self, params, X, states, init_params):
        """Move the rates towards the labelled counts, when ``"l"`` is initialised.

        A missing count counts for nothing (see :meth:`EmissionFamily.labelled_start`).

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
        if "l" not in init_params:
            return params
        return {**params, "lambdas": labelled_mean(params["lambdas"], X, states)}

    def impute(self, params, X, post):
        r"""Replace missing counts by the posterior predictive mean.

        :math:`\sum_k\gamma_{tk}\lambda_{kd}`.

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"means"``, ``"covars"``, ...).
        X : ndarray of shape (n_samples, n_features)
            The counts (NaN: missing).
        post : ndarray of shape (n_samples, n_states)
            The E-step's state posteriors :math:`\gamma_{tk}`.

        Returns
        -------
        ndarray
            ``X`` with its missing entries filled in (a copy).
        """
        miss = np.isnan(X)
        return np.where(miss, post @ params["lambdas"], X)

    def mstep(self, params, stats, which):
        if "l" not in which:
            return params, []
        n = stats["post"]
        dead = np.flatnonzero(n < DEAD_MASS)
        live = n >= DEAD_MASS
        lam = params["lambdas"].copy()
        a, b = self.lambdas_prior, self.lambdas_weight
        seen = stats.get("seen", n[:, None])
        with np.errstate(divide="ignore", invalid="ignore"):  # dead states are skipped
            new = (a + stats["obs"]) / (b + seen)
        # a feature never observed in a live state keeps its rate (0 / 0 under EM)
        new = np.where(np.isfinite(new), new, params["lambdas"])
        lam[live] = np.broadcast_to(new, lam.shape)[live]
        return {"lambdas": impose(lam, self.fixed.get("lambdas"))}, dead.tolist()

    fixable = ("lambdas",)

    def check_fixed(self, key, value):
        """Check fixed rates: finite and >= 0 (NaN: free).

        Each is kept by every mode; the other rates' estimates do not depend on it.

        Parameters
        ----------
        key : str
            ``"lambdas"``.
        value : array-like
            The fixed values ``(K, D)``.

        Returns
        -------
        ndarray or None
            The fixed values; None when nothing is fixed.
        """
        arr = as_fixed(value, (self.n_states, self.n_features), key)
        if arr is not None and np.any(arr < 0):
            raise InvalidInputError("fixed['lambdas']: rates must be >= 0")
        return arr

    def log_prior(self, params):
        r"""Compute the Gamma(a + 1, b) log density of the rates, up to a constant.

        :math:`\sum a \log\lambda - b\lambda`: the prior whose joint maximiser with the data is
        :meth:`mstep`.

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
        a = np.asarray(self.lambdas_prior, dtype=np.float64)
        b = np.asarray(self.lambdas_weight, dtype=np.float64)
        if np.all(a == 0) and np.all(b == 0):
            return 0.0
        lam = params["lambdas"]
        with np.errstate(divide="ignore"):
            return float(np.sum(np.where(a != 0, a * np.log(lam), 0.0) - b * lam))

    # -- variational Bayes: q(lambda_kd) = Gamma(shape, rate) ------------------------------------
    def _vb_prior(self, mode: str = "vb") -> tuple[np.ndarray, np.ndarray]:
        """Prior shape ``lambdas_prior + 1`` and rate ``lambdas_weight``, (K, D) each."""
        shape = (self.n_states, self.n_features)
        a = broadcast_param("lambdas_prior", self.lambdas_prior, shape) + 1.0
        b = broadcast_param("lambdas_weight", self.lambdas_weight, shape)
        if not np.all(np.isfinite(b) & (b > 0)):
            raise InvalidInputError(
                f"lambdas_weight: learn={mode!r} needs a proper Gamma(lambdas_prior + 1, "
                f"lambdas_weight) prior, lambdas_weight > 0 (got {self.lambdas_weight!r:.60}); "
                "pass e.g. lambdas_weight=1e-3")
        if not np.all(np.isfinite(a) & (a > 0)):
            raise InvalidInputError(
                f"lambdas_prior: learn={mode!r} needs a proper Gamma(lambdas_prior + 1, "
                f"lambdas_weight) prior, lambdas_prior > -1 (got {self.lambdas_prior!r:.60}); "
                "pass e.g. lambdas_prior=0.0")
        return a, b

    def vb_init(self, params, n_virtual):
        """Build the variational posterior centred on the rates.

        The prior updated with ``n_virtual`` pseudo-observations per state at the rates
        ``params["lambdas"]`` (as :class:`~.dirichlet.DirichletRows`).

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
            ``lambdas_shape`` and ``lambdas_rate`` (K, D).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the prior is improper (``lambdas_weight`` <= 0 or ``lambdas_prior`` <= -1).
        """
        n = np.full(self.n_states, float(n_virtual))
        return self.vb_update(None, {"post": n, "obs": n[:, None] * params["lambdas"]}, "l")

    def vb_update(self, q, stats, which):
        r"""Update the Gamma posterior by the statistics.

        :math:`\hat a = a + 1 + \sum_t\gamma_{tk}x_t`, :math:`\hat b = b + n_k`.

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
            ``lambdas_shape`` :math:`\hat a` and ``lambdas_rate`` :math:`\hat b` (K, D).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the prior is improper.
        """
        if "l" not in which:
            return q
        a, b = self._vb_prior()
        return {"lambdas_shape": a + stats["obs"],
                "lambdas_rate": b + stats.get("seen", stats["post"][:, None])}

    def vb_expected(self, q):
        r"""Return the expected rates and log rates under the posterior.

        ``lambdas`` :math:`E_q\lambda = \hat a/\hat b` and ``log_lambdas``
        :math:`E_q\log\lambda = \psi(\hat a) - \log\hat b` (see :meth:`log_likelihood`).

        Parameters
        ----------
        q : dict
            The variational posterior's hyper-parameters (from :meth:`vb_init` /
            :meth:`vb_update`).

        Returns
        -------
        dict
            ``lambdas`` and ``log_lambdas`` (K, D).
        """
        shape, rate = q["lambdas_shape"], q["lambdas_rate"]
        lam, log_lam = shape / rate, digamma(shape) - np.log(rate)
        fixed = self.fixed.get("lambdas")
        if fixed is not None:  # a fixed rate is a point mass: E[lambda], E[log lambda] exact
            with np.errstate(divide="ignore"):
                log_lam = np.where(np.isnan(fixed), log_lam, np.log(np.nan_to_num(fixed)))
            lam = impose(lam, fixed)
        return {"lambdas": lam, "log_lambdas": log_lam}

    def vb_kl(self, q):
        r"""Compute the KL divergence of the Gamma posteriors from the prior.

        :math:`\sum_{kd}\mathrm{KL}(\mathrm{Gamma}(\hat a, \hat b)\,\|\,\mathrm{Gamma}(a_0,
        b_0))` with :math:`a_0 = a + 1`, :math:`b_0 = b` (Penny 2001):
        :math:`(\hat a - a_0)\psi(\hat a) - \log\Gamma(\hat a) + \log\Gamma(a_0)
        + a_0(\log\hat b - \log b_0) + \hat a(b_0 - \hat b)/\hat b`.

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
        a0, b0 = self._vb_prior()
        a, b = q["lambdas_shape"], q["lambdas_rate"]
        kl = ((a - a0) * digamma(a) - gammaln(a) + gammaln(a0)
              + a0 * (np.log(b) - np.log(b0)) + a * (b0 - b) / b)
        fixed = self.fixed.get("lambdas")
        return float(np.sum(kl if fixed is None else np.where(np.isnan(fixed), kl, 0.0)))

    def vb_mean(self, q):
        r"""Return the posterior mean rates :math:`\hat a/\hat b`.

        Parameters
        ----------
        q : dict
            The variational posterior's hyper-parameters (from :meth:`vb_init` /
            :meth:`vb_update`).

        Returns
        -------
        dict
            ``lambdas`` (K, D) (the fixed rates where fixed).
        """
        return {"lambdas": impose(q["lambdas_shape"] / q["lambdas_rate"],
                                  self.fixed.get("lambdas"))}

    def sample_posterior(self, params, stats, which, rng):
        r"""Draw the rates from their Gamma posterior.

        :math:`\mathrm{Gamma}(a + 1 + \sum_t x_t [z_t = k], \text{rate } b + n_k)` (missing
        counts left out per feature; the prior must be proper, as for variational Bayes).

        Parameters
        ----------
        params : dict of str to ndarray
            ``lambdas`` (kept when ``"l"`` is not in ``which``).
        stats : dict
            The statistics of one draw of the hidden states.
        which : str
            The hmmlearn letters to draw.
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        dict
            ``lambdas``.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the prior is improper.
        """
        if "l" not in which:
            return params
        a, b = self._vb_prior("gibbs")
        lam = gamma_rates(a + stats["obs"], b + stats.get("seen", stats["post"][:, None]), rng)
        return {"lambdas": impose(lam, self.fixed.get("lambdas"))}   # fixed rates kept

    def initialize(self, X, rng):
        r"""Initialise the rates by k-means on :math:`\sqrt{x}`.

        Poisson counts have about the same variance, 1/4, on that scale whatever their rate:
        each state's rates are the mean counts of one cluster (:func:`~.base.kmeans`), so every
        state starts where some data are. (Rates drawn around the overall mean, as hmmlearn does,
        put states many Poisson standard deviations :math:`\sqrt\lambda` away from every
        observation once counts are large; such a state's log-likelihood is then hundreds of nats
        below another state's everywhere, its posterior underflows to 0 and EM never moves it.)
        With fewer observations than states, or fewer distinct ones, some states share a
        cluster's rates. A rate of 0 (a cluster of zero counts) is raised to 1e-3 times the
        feature's mean count (1e-3 for an all-zero feature) so that every count stays possible in
        every state.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            The observations, as :meth:`validate_X` returns them.
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        dict of str to ndarray
            ``{"lambdas": (K, D)}``.
        """
        K = self.n_states
        X = fill_missing(X)
        if len(X) >= K:
            centres, labels = kmeans(np.sqrt(X), K, rng)
            counts = np.bincount(labels, minlength=K)[:, None]
            sums = np.zeros((K, X.shape[1]))
            np.add.at(sums, labels, X)
            lam = np.where(counts > 0, sums / np.maximum(counts, 1), centres**2)
        else:
            lam = X[rng.integers(len(X), size=K)]
        mean = X.mean(axis=0)
        return {"lambdas": np.maximum(lam, 1e-3 * np.where(mean > 0, mean, 1.0))}

    def check_params(self, params):
        lam = np.asarray(params["lambdas"], dtype=np.float64)
        shape = (self.n_states, self.n_features)
        if lam.shape != shape:
            raise InvalidInputError(f"lambdas_: expected shape {shape}, got {lam.shape}")
        if not np.all(np.isfinite(lam)) or np.any(lam < 0):
            raise InvalidInputError("lambdas_: rates must be finite and non-negative")
        return {"lambdas": lam}

    def sample(self, params, states, rng):
        check_samplable_rates(params["lambdas"])
        return rng.poisson(params["lambdas"][states]).astype(np.float64)

    def n_free_parameters(self):
        return self.n_states * self.n_features


#: the largest rate numpy's Poisson sampler accepts (a bit below 2**63)
MAX_SAMPLABLE_RATE = 9.2e18


def check_samplable_rates(lambdas: np.ndarray) -> None:
    """NumPy draws Poisson counts for rates up to about 9.2e18 (int64): a larger rate is an
    :class:`InvalidInputError` naming ``lambdas_``."""
    if lambdas.size and lambdas.max() > MAX_SAMPLABLE_RATE:
        raise InvalidInputError(
            f"lambdas_: a rate of {lambdas.max():g} is too large to draw counts from (the "
            f"largest is {MAX_SAMPLABLE_RATE:g})")


def _seen(stats: dict) -> np.ndarray:
    """The statistic ``seen`` ``(K, D)``, also of data without missing counts."""
    if "seen" in stats:
        return stats["seen"]
    return np.repeat(stats["post"][:, None], stats["obs"].shape[1], axis=1)

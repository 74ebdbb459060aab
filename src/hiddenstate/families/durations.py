r"""Duration distributions of the states of a hidden semi-Markov model (:class:`hiddenstate.HSMM`).

A segment of state :math:`k` lasts :math:`d \ge 1` steps with probability :math:`f_k(d)`;
:math:`S_k(d) = P(\text{duration} \ge d)` is its survival function. Each family owns one
parameter block of the model (like an emission family): the pmf and survival function the
segment recursion reads (:meth:`DurationFamily.chain_factors`), the statistics, the M-step
(maximum likelihood, or MAP under its conjugate prior), variational Bayes where the prior
is conjugate, sampling and :meth:`~DurationFamily.merge_statistics`.

**Statistics.** The E-step gives, per state, the expected number of complete segments of
each duration :math:`\eta_k(d)` and of last segments, right-censored, observed for
:math:`d` steps, :math:`c_k(d)` (the segment lasted at least :math:`d`; its true end is
not seen), :math:`d = 1..D`. The expected complete-data log-likelihood of the durations
is :math:`Q(\theta) = \sum_d \eta(d) \log f_\theta(d) + c(d) \log S_\theta(d)`.

============== ======================== ================================================
family         parameters               M-step (``em``; ``map`` adds the prior)
============== ======================== ================================================
nonparametric  pmf on 1..D (Dirichlet)  the censored segments' true durations imputed at
                                        the current pmf (:math:`c(d) f(d')/S(d)` for
                                        :math:`d' \ge d`), then the Dirichlet MAP of the
                                        completed counts: a generalised EM step (Q never
                                        decreases); VB exact (the true durations are
                                        latent variables of the mean field)
geometric      p (Beta)                 closed form: ends / (ends + stays), with
                                        :math:`\log S(d) = (d - 1)\log(1 - p)`; the EM of
                                        :class:`hiddenstate.HMM` step for step; VB exact
poisson        rate λ of d - 1 (Gamma)  imputation as for the nonparametric family
                                        (:math:`E[Y \mid Y \ge m]` in closed form), then
                                        :math:`(a + \sum y) / (b + n)`; VB exact
negative       integer shape r, p       imputation of the censored tails, then p in closed
binomial       (Beta on p; r flat)      form for each r and r by a search over the
                                        integers 1..``max_shape`` (coarse powers of two,
                                        then steps of one); no VB (r has no conjugate
                                        prior)
============== ======================== ================================================

Every M-step keeps the current value when it would not raise :math:`Q` (plus the log
prior), so the objective of every learning mode never decreases.

**Gibbs sampling** (``learn="gibbs"``, :meth:`DurationFamily.sample_posterior`): given one
segmentation, a complete segment of duration :math:`d` contributes :math:`f(d)` and a
censored last segment observed for :math:`d` steps :math:`S(d) = \sum_{d' \ge d} f(d')`,
which is not conjugate. Each draw first completes every censored segment with a true
duration :math:`d' \sim f(d') / S(d)`, :math:`d' \ge d`, at the current parameters (data
augmentation, Tanner & Wong 1987: the pmf on ``d..D`` for the nonparametric family, the
Poisson tail beyond ``d - 1`` for the Poisson one, over the whole support, not only
1..D), then the parameters from their conjugate posterior given the completed durations:
a Dirichlet per state (nonparametric), a Gamma on the rate (Poisson). Summed over
:math:`d'`, the completed likelihood is :math:`S(d)`, so the pair of draws leaves the exact
posterior invariant. Geometric durations need no completion: :math:`S(d) = (1 - p)^{d-1}`
is conjugate to the Beta, whose posterior counts the ends and the steps that continue a
segment, censored ones included. The negative-binomial shape has no conjugate prior, and
the family refuses.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from scipy.special import betaln, digamma, gammaln

from .._validation import as_float_array, broadcast_param
from ..errors import InvalidInputError
from .dirichlet import DirichletRows

#: the learning modes that need a proper prior (variational Bayes, Gibbs sampling)
PROPER_PRIOR_MODES = ("vb", "gibbs")
#: the largest negative-binomial shape r the M-step considers
MAX_SHAPE = 1000
#: mass of a censored negative-binomial tail left out of the imputation (relative)
_TAIL = 1e-18
#: the longest imputed negative-binomial tail (terms)
_LONGEST = 10**6


def _sps():
    """``scipy.stats``, imported when a Poisson or negative-binomial duration first needs it
    (it costs a third of a second, and an HMM never does)."""
    from scipy import stats

    return stats


def _reverse_cumsum(f: np.ndarray) -> np.ndarray:
    return np.cumsum(f[:, ::-1], axis=1)[:, ::-1]


def _impute(pmf: np.ndarray, surv: np.ndarray, censored: np.ndarray) -> np.ndarray:
    r"""The censored segments' true durations at the current pmf, on 1..D:
    :math:`\sum_{d \le d'} c(d) f(d') / S(d)` (nothing for ages where :math:`S = 0`), summed
    in logs so that a tiny survival does not overflow the ratio."""
    with np.errstate(divide="ignore"):
        return _tail(np.log(pmf), np.log(surv), censored)


def _tail(log_pmf: np.ndarray, log_surv: np.ndarray, censored: np.ndarray) -> np.ndarray:
    """``exp(log_pmf(d') + log sum_{d <= d'} c(d) / S(d))`` along the last axis (the censored
    counts padded with their last running sum when ``log_pmf`` is longer)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where((censored > 0) & np.isfinite(log_surv),
                         np.log(np.where(censored > 0, censored, 1.0)) - log_surv, -np.inf)
        acc = np.logaddexp.accumulate(terms, axis=-1)
        extra = log_pmf.shape[-1] - acc.shape[-1]
        if extra > 0:
            acc = np.concatenate((acc, np.repeat(acc[..., -1:], extra, axis=-1)), axis=-1)
        return np.where(np.isfinite(acc) & np.isfinite(log_pmf), np.exp(log_pmf + acc), 0.0)


def _beta_prior(value, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A Beta prior ``(a, b)`` per state from a scalar (``Beta(a, a)``) or a pair."""
    arr = broadcast_param(name, value, None)
    if arr.ndim >= 1 and arr.shape[-1] == 2:
        return arr[..., 0], arr[..., 1]
    return arr, arr


class DurationFamily(ABC):
    r"""The duration distributions of the ``n_states`` states: one parameter block.

    Parameters travel as a ``dict`` of arrays keyed by the estimator's attribute names
    without the trailing underscore; the family holds only its configuration (the number of
    states, the longest duration ``max_duration`` the segment recursion considers, the
    prior). The module docstring (:mod:`hiddenstate.families.durations`) states the
    statistics and each family's M-step.

    Parameters
    ----------
    n_states : int
        The number of hidden states K.
    max_duration : int
        D: durations 1..D are considered (the support of nonparametric durations).
    prior : float, array-like or None, default=None
        The family's prior (see each family); None: flat.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families import GeometricDurations
    >>> family = GeometricDurations(n_states=2, max_duration=4)
    >>> family.pmf({"duration_probs": np.array([0.5, 0.25])}).round(4)
    array([[0.5   , 0.25  , 0.125 , 0.0625],
           [0.25  , 0.1875, 0.1406, 0.1055]])
    """

    #: hmmlearn-style letter of the duration parameters (``init_params`` / ``params``)
    letter = "d"
    #: the parameter keys
    keys: tuple[str, ...] = ()
    #: the durations are phase-type (a chain of geometric phases): the model can run as an
    #: HMM over the phases (:func:`hiddenstate.segments.expand_phases`)
    expandable = False
    #: the phase statistics of an expanded HMM are this family's statistics (learning can
    #: run on the expansion)
    learns_by_expansion = False

    def __init__(self, n_states: int, max_duration: int, prior=None):
        self.n_states = n_states
        self.max_duration = max_duration
        self.prior = prior

    @property
    def letters(self) -> dict[str, str]:
        """The letter of the block and its first key (as an emission family's ``letters``)."""
        return {self.letter: self.keys[0]}

    # -- the distribution ---------------------------------------------------------------------
    @abstractmethod
    def pmf(self, params: dict) -> np.ndarray:
        r"""Return :math:`f_k(d)` for d = 1..D.

        Parameters
        ----------
        params : dict of str to ndarray
            The parameters (or the variational view of :meth:`vb_expected`, sub-normalised).

        Returns
        -------
        ndarray of shape (n_states, max_duration)
            The pmf.
        """

    @abstractmethod
    def survival(self, params: dict) -> np.ndarray:
        r"""Return :math:`S_k(d) = P(\text{duration} \ge d)` for d = 1..D (the whole tail).

        Parameters
        ----------
        params : dict of str to ndarray
            The parameters (or their variational view).

        Returns
        -------
        ndarray of shape (n_states, max_duration)
            The survival function.
        """

    def chain_factors(self, params: dict) -> tuple[np.ndarray, np.ndarray]:
        r"""Return the continuation and hazard factors of the segment recursion.

        :math:`\rho_k(1) = S_k(1)`, :math:`\rho_k(d) = S_k(d) / S_k(d - 1)` and
        :math:`h_k(d) = f_k(d) / S_k(d)` (0 where the survival is 0), for d = 1..D (see
        :mod:`hiddenstate.kernels.semimarkov`).

        Parameters
        ----------
        params : dict of str to ndarray
            The parameters (or their variational view).

        Returns
        -------
        continuation : ndarray of shape (n_states, max_duration)
            :math:`\rho`.
        hazard : ndarray of shape (n_states, max_duration)
            :math:`h`.
        """
        f, S = self.pmf(params), self.survival(params)
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = np.empty_like(S)
            rho[:, 0] = S[:, 0]
            rho[:, 1:] = np.where(S[:, :-1] > 0, S[:, 1:] / np.where(S[:, :-1] > 0,
                                                                     S[:, :-1], 1.0), 0.0)
            haz = np.where(S > 0, f / np.where(S > 0, S, 1.0), 0.0)
        return rho, np.minimum(haz, 1.0)

    @abstractmethod
    def mean(self, params: dict) -> np.ndarray:
        """Return the mean duration of each state (of the whole distribution, not only 1..D).

        Parameters
        ----------
        params : dict of str to ndarray
            The parameters.

        Returns
        -------
        ndarray of shape (n_states,)
            The means.
        """

    def sample(self, params: dict, states: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Draw one duration per entry of ``states``, from the pmf on 1..D (renormalised).

        Parameters
        ----------
        params : dict of str to ndarray
            The parameters.
        states : ndarray of int
            The state of each segment.
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        ndarray of int64
            The durations (1..D).
        """
        cdf = np.cumsum(self.pmf(params), axis=1)
        cdf /= cdf[:, -1:]
        u = rng.random(len(states))
        out = np.empty(len(states), dtype=np.int64)
        for k in range(self.n_states):
            sel = states == k
            out[sel] = np.minimum(np.searchsorted(cdf[k], u[sel], side="right"),
                                  cdf.shape[1] - 1) + 1
        return out

    # -- learning -----------------------------------------------------------------------------
    def statistics(self, complete: np.ndarray, censored: np.ndarray) -> dict:
        """Return the statistics from the expected segment counts of the E-step.

        Parameters
        ----------
        complete : ndarray of shape (n_states, max_duration)
            The expected number of complete segments of each duration.
        censored : ndarray of shape (n_states, max_duration)
            The expected number of last (right-censored) segments by observed length.

        Returns
        -------
        dict
            The statistics.
        """
        return {"complete": complete, "censored": censored}

    def merge_statistics(self, a: dict, b: dict) -> dict:
        """Combine the statistics of two disjoint data sets: sums, key by key.

        Parameters
        ----------
        a, b : dict
            The statistics.

        Returns
        -------
        dict
            The statistics of both.
        """
        return {key: a[key] + b[key] for key in a}

    @abstractmethod
    def mstep(self, params: dict, stats: dict, which: str) -> tuple[dict, list]:
        """Estimate the parameters from the statistics (kept without the letter ``d``).

        Parameters
        ----------
        params : dict of str to ndarray
            The parameters of the E-step.
        stats : dict
            The statistics (:meth:`statistics`, merged by :meth:`merge_statistics`).
        which : str
            The letters of the learned parameters.

        Returns
        -------
        params : dict of str to ndarray
            The new parameters.
        degenerate : list of int
            The states without segments, which kept their parameters.
        """

    def log_prior(self, params: dict) -> float:
        """Return the log prior density of the parameters (0 for a flat prior).

        Parameters
        ----------
        params : dict of str to ndarray
            The parameters.

        Returns
        -------
        float
            The log density, up to a constant.
        """
        return 0.0

    def _no_vb(self):
        raise InvalidInputError(
            f"learn: 'vb' is not available for {type(self).__name__} (no conjugate prior); "
            "use 'em', 'map', 'vt' or 'kvt', or another duration")

    def vb_init(self, params: dict, n_virtual: float) -> dict:
        """Build the variational posterior centred on ``params`` (``n_virtual`` segments).

        Parameters
        ----------
        params : dict of str to ndarray
            The parameters.
        n_virtual : float
            Pseudo-segments per state.

        Returns
        -------
        dict
            The posterior's hyper-parameters.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the family has no variational treatment.
        """
        self._no_vb()

    def vb_update(self, q: dict, stats: dict, which: str) -> dict:
        """Update the variational posterior from the statistics.

        Parameters
        ----------
        q : dict
            The posterior's hyper-parameters (those of the E-step).
        stats : dict
            The statistics.
        which : str
            The letters of the learned parameters.

        Returns
        -------
        dict
            The new hyper-parameters.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the family has no variational treatment.
        """
        self._no_vb()

    def vb_expected(self, q: dict) -> dict:
        r"""Return the E-step's view: :math:`\exp E_q[\log f(d)]` (sub-normalised).

        Parameters
        ----------
        q : dict
            The posterior's hyper-parameters.

        Returns
        -------
        dict
            Parameters that :meth:`pmf` and :meth:`survival` read.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the family has no variational treatment.
        """
        self._no_vb()

    def vb_kl(self, q: dict) -> float:
        """Return KL(q || prior), summed over states.

        Parameters
        ----------
        q : dict
            The posterior's hyper-parameters.

        Returns
        -------
        float
            The divergence.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the family has no variational treatment.
        """
        self._no_vb()

    def vb_mean(self, q: dict) -> dict:
        """Return the posterior mean parameters.

        Parameters
        ----------
        q : dict
            The posterior's hyper-parameters.

        Returns
        -------
        dict of str to ndarray
            The parameters.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the family has no variational treatment.
        """
        self._no_vb()

    def sample_posterior(self, params: dict, stats: dict, which: str,
                         rng: np.random.Generator) -> dict:
        """Draw the parameters from their conjugate posterior given hard counts (Gibbs).

        The true durations of the censored last segments are drawn first (from the pmf
        beyond their observed length, at ``params``: data augmentation), then the
        parameters given the completed durations.

        Parameters
        ----------
        params : dict of str to ndarray
            The current parameters.
        stats : dict
            Hard counts (:meth:`statistics` of one segmentation per sequence).
        which : str
            The letters of the learned parameters (without ``d`` they are kept).
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        dict of str to ndarray
            The drawn parameters.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the family has no conjugate posterior (the default).
        """
        raise InvalidInputError(
            f"learn: Gibbs sampling needs a conjugate prior, and {type(self).__name__} has "
            "none; use another duration")

    def _augment(self, params: dict, censored: np.ndarray, rng) -> np.ndarray:
        """Complete durations (1..D) of the censored segments, drawn from f(d') / S(d),
        d' >= d, at ``params``: one per censored segment (``censored`` holds counts)."""
        f = self.pmf(params)
        out = np.zeros_like(f)
        for k, d in zip(*np.nonzero(censored > 0), strict=True):
            tail = f[k, d:]
            if not tail.sum() > 0:
                continue
            n = int(round(censored[k, d]))
            draws = rng.choice(len(tail), size=n, p=tail / tail.sum())
            np.add.at(out[k], d + draws, 1.0)
        return out

    # -- initial values, checks ---------------------------------------------------------------
    @abstractmethod
    def initialize(self, continuation: np.ndarray) -> dict:
        """Return initial parameters close to geometric durations.

        Parameters
        ----------
        continuation : ndarray of shape (n_states,)
            The probability of staying one more step (an HMM's self-transition), in [0, 1).

        Returns
        -------
        dict of str to ndarray
            The parameters.
        """

    @abstractmethod
    def check_params(self, params: dict) -> dict:
        """Check parameters set by hand (shapes, ranges); errors name the attribute.

        Parameters
        ----------
        params : dict of str to array-like
            The parameters.

        Returns
        -------
        dict of str to ndarray
            The parameters as float64 arrays.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a parameter has the wrong shape or a value out of range.
        """

    @abstractmethod
    def n_free_parameters(self) -> int:
        """Return the number of free parameters (for AIC and BIC).

        Returns
        -------
        int
            The count.
        """

    @abstractmethod
    def check_prior(self, learn: str) -> None:
        """Check the prior in force for the learning mode ``learn`` (errors name it).

        Parameters
        ----------
        learn : str
            The learning mode.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the prior is not usable by the mode.
        """

    def _vector(self, params: dict, key: str, lo: float, hi: float | None,
                open_lo: bool = False) -> np.ndarray:
        arr = as_float_array(params[key], key + "_")
        K = self.n_states
        if arr.shape != (K,):
            raise InvalidInputError(f"{key}_: expected shape ({K},), got {arr.shape}")
        bad = ~np.isfinite(arr) | (arr <= lo if open_lo else arr < lo)
        if hi is not None:
            bad |= arr > hi
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            rng = f"{'(' if open_lo else '['}{lo:g}, {'inf)' if hi is None else f'{hi:g}]'}"
            raise InvalidInputError(f"{key}_: entries must lie in {rng}, got {arr[i]!r} for "
                                    f"state {i}")
        return arr


def _beta_check(prior, learn: str, name: str = "duration_prior") -> None:
    a, b = _beta_prior(1.0 if prior is None else prior, name)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise InvalidInputError(f"{name}: must be finite, got {prior!r:.60}")
    proper = learn in PROPER_PRIOR_MODES
    if (proper and not (np.all(a > 0) and np.all(b > 0))) or (
            not proper and not (np.all(a >= 1.0) and np.all(b >= 1.0))):
        raise InvalidInputError(
            f"{name}: learn={learn!r} needs Beta concentrations "
            f"{'> 0' if proper else '>= 1'} (got {prior!r:.60}); pass e.g. "
            f"{name}=1.0 (flat)")


class NonparametricDurations(DurationFamily):
    r"""Nonparametric durations: a categorical pmf on 1..D per state (``durations``, (K, D)).

    The prior is a Dirichlet of concentration ``prior`` (a scalar or ``(K, D)``; 1: flat). The
    M-step imputes the true durations of the last (right-censored) segments at the E-step's
    pmf and takes the Dirichlet MAP of the completed counts (a generalised EM step: the
    expected complete-data log-likelihood never decreases); variational Bayes treats the
    true durations as latent (q is a Dirichlet per state, exact mean field).

    Parameters
    ----------
    n_states : int
        The number of hidden states K.
    max_duration : int
        D, the longest duration.
    prior : float, array-like or None, default=None
        The Dirichlet concentration; None: 1 (flat).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families import NonparametricDurations
    >>> family = NonparametricDurations(n_states=1, max_duration=3)
    >>> params = {"durations": np.array([[0.2, 0.5, 0.3]])}
    >>> family.survival(params)
    array([[1. , 0.8, 0.3]])
    >>> stats = family.statistics(np.array([[2.0, 1.0, 0.0]]), np.array([[0.0, 1.0, 0.0]]))
    >>> family.mstep(params, stats, "d")[0]["durations"].round(3)   # 1 censored at >= 2
    array([[0.5  , 0.406, 0.094]])
    """

    keys = ("durations",)

    def _rows(self) -> DirichletRows:
        return DirichletRows("durations", "d", 1.0 if self.prior is None else self.prior)

    def pmf(self, params):
        return np.asarray(params["durations"], dtype=np.float64)

    def survival(self, params):
        return _reverse_cumsum(self.pmf(params))

    def _completed(self, pmf, stats):
        return stats["complete"] + _impute(pmf, _reverse_cumsum(pmf), stats["censored"])

    def mstep(self, params, stats, which):
        if self.letter not in which:
            return params, []
        f = self.pmf(params)
        new, kept = self._rows().mstep(f, self._completed(f, stats), "d")
        return {"durations": new}, kept

    def log_prior(self, params):
        return self._rows().log_prior(self.pmf(params))

    def vb_init(self, params, n_virtual):
        return {"durations": self._rows().vb_init(self.pmf(params), n_virtual)}

    def vb_update(self, q, stats, which):
        if self.letter not in which:
            return q
        view = self.pmf(self.vb_expected(q))
        return {"durations": self._rows().vb_update(q["durations"],
                                                    self._completed(view, stats), "d")}

    def vb_expected(self, q):
        return {"durations": self._rows().vb_expected(q["durations"])}

    def vb_kl(self, q):
        return self._rows().vb_kl(q["durations"])

    def vb_mean(self, q):
        return {"durations": self._rows().vb_mean(q["durations"])}

    def sample_posterior(self, params, stats, which, rng):
        if self.letter not in which:
            return params
        counts = stats["complete"] + self._augment(params, stats["censored"], rng)
        alpha = np.broadcast_to(np.asarray(1.0 if self.prior is None else self.prior,
                                           dtype=np.float64), counts.shape) + counts
        draw = rng.gamma(alpha)
        return {"durations": draw / draw.sum(axis=1, keepdims=True)}

    def mean(self, params):
        f = self.pmf(params)
        return f @ np.arange(1, f.shape[1] + 1) / f.sum(axis=1)

    def initialize(self, continuation):
        """Return the geometric pmf of ``continuation`` on 1..D mixed with a uniform one.

        9:1, so that no duration starts at probability zero (EM keeps zeros).

        Parameters
        ----------
        continuation : ndarray of shape (n_states,)
            The probability of staying one more step.

        Returns
        -------
        dict of str to ndarray
            The parameters.
        """
        d = np.arange(self.max_duration)
        c = np.asarray(continuation, dtype=np.float64)[:, None]
        f = (1.0 - c) * c ** d
        f = 0.9 * f / f.sum(axis=1, keepdims=True) + 0.1 / self.max_duration
        return {"durations": f / f.sum(axis=1, keepdims=True)}

    def check_params(self, params):
        arr = as_float_array(params["durations"], "durations_")
        shape = (self.n_states, self.max_duration)
        if arr.shape != shape:
            raise InvalidInputError(
                f"durations_: expected shape {shape} (n_states, max_duration), got "
                f"{arr.shape}; set max_duration to the number of columns")
        bad = ~np.isfinite(arr) | (arr < 0)
        if bad.any():
            k, d = (int(i) for i in np.argwhere(bad)[0])
            raise InvalidInputError(
                f"durations_: entries must be finite and non-negative, got {arr[k, d]!r} "
                f"for state {k}, duration {d + 1}")
        sums = arr.sum(axis=1)
        if not np.allclose(sums, 1.0, atol=1e-8, rtol=0):
            k = int(np.flatnonzero(~np.isclose(sums, 1.0, atol=1e-8, rtol=0))[0])
            raise InvalidInputError(
                f"durations_: each row must sum to 1 (a pmf on 1..max_duration), row {k} "
                f"sums to {sums[k]!r}")
        return {"durations": arr}

    def n_free_parameters(self):
        return self.n_states * (self.max_duration - 1)

    def check_prior(self, learn):
        if self.prior is None:
            return
        alpha = broadcast_param("duration_prior", self.prior, None)
        try:
            ok = np.broadcast_shapes(alpha.shape, (self.n_states, self.max_duration)) == (
                self.n_states, self.max_duration)
        except ValueError:
            ok = False
        if not ok or not np.all(np.isfinite(alpha)):
            raise InvalidInputError(
                f"duration_prior: expected a finite number or an array broadcastable to "
                f"{(self.n_states, self.max_duration)}, got shape {alpha.shape}")
        if learn in PROPER_PRIOR_MODES and not np.all(alpha > 0):
            raise InvalidInputError(
                f"duration_prior: learn={learn!r} needs a proper Dirichlet prior, every "
                f"concentration > 0 (got {float(alpha.min()):g}); pass e.g. duration_prior=1.0")
        if learn not in PROPER_PRIOR_MODES and not np.all(alpha >= 1):
            raise InvalidInputError(
                f"duration_prior: learn={learn!r} needs Dirichlet concentrations >= 1 (got "
                f"{float(alpha.min()):g}): below 1 the posterior has no mode. Use >= 1, or "
                "learn='vb'")


class GeometricDurations(DurationFamily):
    r"""Geometric durations: :math:`f(d) = p (1 - p)^{d - 1}` (``duration_probs``, (K,)).

    ``p`` is the probability of ending at each step; the states of an :class:`hiddenstate.HMM`
    with :math:`p_k = 1 - A_{kk}`. The statistics are the expected segment ends and the
    expected steps that continue a segment (censored ones included, as
    :math:`\log S(d) = (d - 1)\log(1 - p)`), so the M-step is that of the HMM's
    self-transitions, :math:`p = \text{ends} / (\text{ends} + \text{stays})`. Prior: Beta
    (``prior``: a concentration for both, or a pair ``(a, b)``; 1: flat), conjugate for MAP
    and variational Bayes.

    Parameters
    ----------
    n_states : int
        The number of hidden states K.
    max_duration : int
        D, the longest duration the segment recursion considers.
    prior : float, array-like or None, default=None
        The Beta concentration; None: 1 (flat).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families import GeometricDurations
    >>> family = GeometricDurations(n_states=1, max_duration=3)
    >>> stats = family.statistics(np.array([[2.0, 1.0, 0.0]]), np.array([[0.0, 0.0, 1.0]]))
    >>> stats                                      # 3 ends; 1 + 2 steps that continue
    {'ends': array([3.]), 'stays': array([3.])}
    >>> family.mstep({"duration_probs": np.array([0.9])}, stats, "d")[0]
    {'duration_probs': array([0.5])}
    """

    keys = ("duration_probs",)
    expandable = True
    learns_by_expansion = True

    def _ab(self):
        return _beta_prior(1.0 if self.prior is None else self.prior, "duration_prior")

    def _logs(self, params):
        if "log_p" in params:
            return np.asarray(params["log_p"]), np.asarray(params["log_q"])
        p = np.asarray(params["duration_probs"], dtype=np.float64)
        with np.errstate(divide="ignore"):
            return np.log(p), np.log1p(-p)

    def pmf(self, params):
        lp, lq = self._logs(params)
        d = np.arange(self.max_duration)
        with np.errstate(invalid="ignore"):
            return np.exp(lp[:, None] + np.where(d == 0, 0.0, lq[:, None] * d))

    def survival(self, params):
        _, lq = self._logs(params)
        d = np.arange(self.max_duration)
        with np.errstate(invalid="ignore"):
            return np.exp(np.where(d == 0, 0.0, lq[:, None] * d))

    def chain_factors(self, params):
        lp, lq = self._logs(params)
        D = self.max_duration
        rho = np.repeat(np.exp(lq)[:, None], D, axis=1)
        rho[:, 0] = 1.0
        return rho, np.repeat(np.exp(lp)[:, None], D, axis=1)

    def statistics(self, complete, censored):
        d = np.arange(complete.shape[1], dtype=np.float64)
        return {"ends": complete.sum(axis=1), "stays": (complete + censored) @ d}

    def mstep(self, params, stats, which):
        if self.letter not in which:
            return params, []
        a, b = self._ab()
        num = stats["ends"] + a - 1.0
        den = num + stats["stays"] + b - 1.0
        live = den > 0
        p = np.asarray(params["duration_probs"], dtype=np.float64)
        new = np.where(live, num / np.where(live, den, 1.0), p)
        return {"duration_probs": np.clip(new, 0.0, 1.0)}, np.flatnonzero(~live).tolist()

    def log_prior(self, params):
        a, b = self._ab()
        if np.all(a == 1.0) and np.all(b == 1.0):
            return 0.0
        lp, lq = self._logs(params)
        with np.errstate(invalid="ignore"):
            terms = np.where(a != 1, (a - 1) * lp, 0.0) + np.where(b != 1, (b - 1) * lq, 0.0)
        return float(np.sum(terms - betaln(a, b)))

    def vb_init(self, params, n_virtual):
        a, b = self._ab()
        p = np.asarray(params["duration_probs"], dtype=np.float64)
        return {"duration_probs_a": a + n_virtual * p,
                "duration_probs_b": b + n_virtual * (1.0 - p)}

    def vb_update(self, q, stats, which):
        if self.letter not in which:
            return q
        a, b = self._ab()
        return {"duration_probs_a": a + stats["ends"], "duration_probs_b": b + stats["stays"]}

    def vb_expected(self, q):
        a, b = q["duration_probs_a"], q["duration_probs_b"]
        return {"duration_probs": a / (a + b), "log_p": digamma(a) - digamma(a + b),
                "log_q": digamma(b) - digamma(a + b)}

    def vb_kl(self, q):
        a0, b0 = self._ab()
        a, b = q["duration_probs_a"], q["duration_probs_b"]
        return float(np.sum(betaln(a0, b0) - betaln(a, b) + (a - a0) * digamma(a)
                            + (b - b0) * digamma(b) + (a0 - a + b0 - b) * digamma(a + b)))

    def vb_mean(self, q):
        a, b = q["duration_probs_a"], q["duration_probs_b"]
        return {"duration_probs": a / (a + b)}

    def sample_posterior(self, params, stats, which, rng):
        if self.letter not in which:
            return params
        a, b = self._ab()
        return {"duration_probs": rng.beta(a + stats["ends"], b + stats["stays"])}

    def mean(self, params):
        return 1.0 / np.asarray(params["duration_probs"], dtype=np.float64)

    def initialize(self, continuation):
        return {"duration_probs": 1.0 - np.asarray(continuation, dtype=np.float64)}

    def check_params(self, params):
        return {"duration_probs": self._vector(params, "duration_probs", 0.0, 1.0,
                                               open_lo=True)}

    def n_free_parameters(self):
        return self.n_states

    def check_prior(self, learn):
        _beta_check(self.prior, learn)


class PoissonDurations(DurationFamily):
    r"""Shifted Poisson durations: :math:`d - 1 \sim \mathrm{Poisson}(\lambda)`.

    ``duration_rates``, (K,); mean duration :math:`1 + \lambda`.

    The M-step imputes the censored segments' tails in closed form,
    :math:`E[Y \mid Y \ge m] = \lambda P(Y \ge m - 1) / P(Y \ge m)` (a generalised EM step),
    then :math:`\lambda = (a + \sum y) / (b + n)` under a Gamma prior (``prior`` = a, the
    shape minus one; ``weight`` = b, the rate; 0 and 0: maximum likelihood), as the Poisson
    emission family. Variational Bayes: :math:`q(\lambda) = \mathrm{Gamma}(a + 1 + \sum y,
    b + n)`, the tails imputed at :math:`\tilde\lambda = \exp E_q[\log\lambda]`; it needs
    ``weight`` > 0.

    Parameters
    ----------
    n_states : int
        The number of hidden states K.
    max_duration : int
        D, the longest duration the segment recursion considers.
    prior : float, array-like or None, default=None
        The Gamma prior's a (None: 0).
    weight : float, array-like or None, default=None
        The Gamma prior's b (None: 0).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families import PoissonDurations
    >>> family = PoissonDurations(n_states=1, max_duration=4)
    >>> family.pmf({"duration_rates": np.array([1.0])}).round(4)
    array([[0.3679, 0.3679, 0.1839, 0.0613]])
    >>> stats = family.statistics(np.array([[1.0, 2.0, 1.0, 0.0]]), np.zeros((1, 4)))
    >>> family.mstep({"duration_rates": np.array([1.0])}, stats, "d")[0]   # mean of d - 1
    {'duration_rates': array([1.])}
    """

    keys = ("duration_rates",)

    def __init__(self, n_states, max_duration, prior=None, weight=None):
        super().__init__(n_states, max_duration, prior)
        self.weight = weight

    def _ab(self):
        a = broadcast_param("duration_prior", 0.0 if self.prior is None else self.prior, None)
        b = broadcast_param("duration_weight", 0.0 if self.weight is None else self.weight,
                            None)
        return a, b

    def _rate_and_factor(self, params):
        """The Poisson rate whose pmf the family reads and the log factor before it (the
        variational view: exp E[log f] = exp(tilde lambda - E lambda) Poisson(tilde lambda))."""
        lam = np.asarray(params["duration_rates"], dtype=np.float64)
        if "log_rates" in params:
            tilde = np.exp(params["log_rates"])
            return tilde, tilde - lam
        return lam, np.zeros_like(lam)

    def pmf(self, params):
        lam, logc = self._rate_and_factor(params)
        y = np.arange(self.max_duration)
        return np.exp(logc[:, None] + _sps().poisson.logpmf(y[None, :], lam[:, None]))

    def survival(self, params):
        lam, logc = self._rate_and_factor(params)
        y = np.arange(self.max_duration)
        return np.exp(logc[:, None] + _sps().poisson.logsf(y[None, :] - 1, lam[:, None]))

    def _sum_y(self, lam, stats):
        """The completed sum of d - 1 and the number of segments."""
        C, c = stats["complete"], stats["censored"]
        m = np.arange(C.shape[1], dtype=np.float64)      # observed d - 1
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.exp(_sps().poisson.logsf(m[None, :] - 2, lam[:, None])
                           - _sps().poisson.logsf(m[None, :] - 1, lam[:, None]))
        tail = np.where((c > 0) & np.isfinite(ratio), lam[:, None] * ratio, 0.0)
        tail[:, 0] = lam  # nothing known: the mean
        return C @ m + (c * tail).sum(axis=1), C.sum(axis=1) + c.sum(axis=1)

    def mstep(self, params, stats, which):
        if self.letter not in which:
            return params, []
        lam = np.asarray(params["duration_rates"], dtype=np.float64)
        a, b = self._ab()
        sy, n = self._sum_y(lam, stats)
        den = b + n
        live = (den > 0) & (n > 0)
        new = np.where(live, (a + sy) / np.where(live, den, 1.0), lam)
        return {"duration_rates": np.maximum(new, 0.0)}, np.flatnonzero(~live).tolist()

    def log_prior(self, params):
        a, b = self._ab()
        if np.all(a == 0) and np.all(b == 0):
            return 0.0
        lam = np.asarray(params["duration_rates"], dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.sum(np.where(a != 0, a * np.log(lam), 0.0) - b * lam))

    def vb_init(self, params, n_virtual):
        a, b = self._ab()
        lam = np.asarray(params["duration_rates"], dtype=np.float64)
        return {"duration_rates_shape": a + 1.0 + n_virtual * lam,
                "duration_rates_rate": b + n_virtual + 0.0 * lam}

    def vb_update(self, q, stats, which):
        if self.letter not in which:
            return q
        a, b = self._ab()
        tilde = np.exp(self.vb_expected(q)["log_rates"])
        sy, n = self._sum_y(tilde, stats)
        return {"duration_rates_shape": a + 1.0 + sy, "duration_rates_rate": b + n}

    def vb_expected(self, q):
        a, b = q["duration_rates_shape"], q["duration_rates_rate"]
        return {"duration_rates": a / b, "log_rates": digamma(a) - np.log(b)}

    def vb_kl(self, q):
        a0, b0 = self._ab()
        a0 = a0 + 1.0
        a, b = q["duration_rates_shape"], q["duration_rates_rate"]
        return float(np.sum((a - a0) * digamma(a) - gammaln(a) + gammaln(a0)
                            + a0 * (np.log(b) - np.log(b0)) + a * (b0 - b) / b))

    def vb_mean(self, q):
        return {"duration_rates": q["duration_rates_shape"] / q["duration_rates_rate"]}

    def sample_posterior(self, params, stats, which, rng):
        if self.letter not in which:
            return params
        lam = np.asarray(params["duration_rates"], dtype=np.float64)
        a, b = self._ab()
        C, c = stats["complete"], stats["censored"]
        y = np.arange(C.shape[1], dtype=np.float64)
        sy, n = C @ y, C.sum(axis=1) + c.sum(axis=1)
        for k, m in zip(*np.nonzero(c > 0), strict=True):   # d - 1 >= m, drawn
            sy[k] += _poisson_tail(lam[k], int(m), int(round(c[k, m])), rng).sum()
        shape = np.broadcast_to(a, lam.shape) + 1.0 + sy
        rate = np.broadcast_to(b, lam.shape) + n
        return {"duration_rates": rng.gamma(shape, 1.0 / rate)}

    def mean(self, params):
        return 1.0 + np.asarray(params["duration_rates"], dtype=np.float64)

    def initialize(self, continuation):
        c = np.asarray(continuation, dtype=np.float64)
        return {"duration_rates": c / (1.0 - c)}

    def check_params(self, params):
        return {"duration_rates": self._vector(params, "duration_rates", 0.0, None)}

    def n_free_parameters(self):
        return self.n_states

    def check_prior(self, learn):
        a, b = self._ab()
        for name, v in (("duration_prior", a), ("duration_weight", b)):
            if not np.all(np.isfinite(v)) or v.ndim > 1 or (v.ndim == 1 and len(v) !=
                                                            self.n_states):
                raise InvalidInputError(
                    f"{name}: expected a finite number or one per state ({self.n_states}), "
                    f"got {v!r:.60}")
        if learn in PROPER_PRIOR_MODES:
            if not (np.all(b > 0) and np.all(a > -1)):
                raise InvalidInputError(
                    f"duration_weight: learn={learn!r} needs a proper Gamma prior on the "
                    "rates, duration_weight > 0 and duration_prior > -1; pass e.g. "
                    "duration_weight=0.1")
        elif not (np.all(a >= 0) and np.all(b >= 0)):
            raise InvalidInputError(
                f"duration_prior: learn={learn!r} needs duration_prior >= 0 and "
                "duration_weight >= 0 (a negative value can make the rate negative)")


def _poisson_tail(lam: float, m: int, n: int, rng: np.random.Generator) -> np.ndarray:
    r"""``n`` draws of :math:`Y \sim \mathrm{Poisson}(\lambda)` given :math:`Y \ge m`, by
    the normalised pmf on :math:`m..\max(m, \lambda) + 12\sqrt{\lambda + 1} + 40` in
    logs (the pmf falls faster than geometrically beyond its mode; the mass left out is
    below 1e-30 of the tail's), so that a tail far beyond the rate neither underflows nor
    rounds to a certain event as ``ppf`` of a uniform on ``[cdf(m - 1), 1]`` would."""
    hi = int(max(m, lam) + 12.0 * np.sqrt(lam + 1.0) + 40.0)
    y = np.arange(m, hi + 1)
    with np.errstate(divide="ignore"):
        logp = _sps().poisson.logpmf(y, lam)
    if not np.isfinite(logp.max()):   # lambda = 0: every mass at 0
        return np.full(n, float(m))
    p = np.exp(logp - logp.max())
    return rng.choice(y, size=n, p=p / p.sum()).astype(np.float64)


class NegativeBinomialDurations(DurationFamily):
    r"""Shifted negative-binomial durations: :math:`d - 1 \sim \mathrm{NB}(r, p)`.

    :math:`P(d - 1 = y) = \binom{y + r - 1}{y} p^r (1 - p)^y` (``duration_shapes`` r, an
    integer >= 1, and ``duration_probs`` p, (K,); mean duration :math:`1 + r(1 - p)/p`).

    A segment is a chain of r geometric phases (:math:`r = 1`: geometric durations), so the
    model can also run as an HMM over the phases. M-step: the censored segments' tails are
    imputed at the E-step's (r, p) (summed until less than a relative 1e-18 is left out);
    then for each r, :math:`p = (r n + a - 1) / (r n + \sum y + a + b - 2)` under a
    Beta(a, b) prior on p (``prior``; 1: flat) and the completed log-likelihood of the
    best p, maximised over the integers :math:`1 \le r \le` ``max_shape`` by a search over
    the powers of two, then steps of one from the best (r has a flat prior). The current
    value is kept when nothing beats it, so the objective never decreases. No variational
    Bayes (r has no conjugate prior).

    Parameters
    ----------
    n_states : int
        The number of hidden states K.
    max_duration : int
        D, the longest duration the segment recursion considers.
    prior : float, array-like or None, default=None
        The Beta concentration of p; None: 1 (flat).
    max_shape : int, default=1000
        The largest shape r considered.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families import NegativeBinomialDurations
    >>> family = NegativeBinomialDurations(n_states=1, max_duration=40)
    >>> params = {"duration_shapes": np.array([1.0]), "duration_probs": np.array([0.5])}
    >>> counts = np.zeros((1, 40))
    >>> counts[0, 9:12] = [10, 30, 10]                 # durations 10, 11, 12
    >>> new, _ = family.mstep(params, family.statistics(counts, 0 * counts), "d")
    >>> int(new["duration_shapes"][0]), bool(new["duration_shapes"][0] > 50)
    (1000, True)
    """

    keys = ("duration_shapes", "duration_probs")
    expandable = True

    def __init__(self, n_states, max_duration, prior=None, max_shape: int = MAX_SHAPE):
        super().__init__(n_states, max_duration, prior)
        self.max_shape = max_shape

    def _ab(self):
        return _beta_prior(1.0 if self.prior is None else self.prior, "duration_prior")

    def _rp(self, params):
        return (np.asarray(params["duration_shapes"], dtype=np.float64),
                np.asarray(params["duration_probs"], dtype=np.float64))

    def pmf(self, params):
        r, p = self._rp(params)
        y = np.arange(self.max_duration)
        return np.exp(_sps().nbinom.logpmf(y[None, :], r[:, None], p[:, None]))

    def survival(self, params):
        r, p = self._rp(params)
        y = np.arange(self.max_duration)
        return np.exp(_sps().nbinom.logsf(y[None, :] - 1, r[:, None], p[:, None]))

    def _completed(self, r: float, p: float, complete: np.ndarray, censored: np.ndarray):
        """The histogram of d - 1 over 0..L-1 with the censored tails imputed at (r, p)."""
        D = len(complete)
        hi = D
        if censored.any() and p < 1.0:
            seen = np.flatnonzero(censored > 0)
            smin = float(np.exp(_sps().nbinom.logsf(seen - 1, r, p)).min())
            if smin > 0:
                hi = int(min(max(D, _sps().nbinom.isf(_TAIL * smin, r, p) + 2), _LONGEST))
        h = np.zeros(hi)
        h[:D] += complete
        if censored.any():
            logsf = _sps().nbinom.logsf(np.arange(D) - 1, r, p)      # P(Y >= m), m = 0..D-1
            h += _tail(_sps().nbinom.logpmf(np.arange(hi), r, p), logsf, censored)
        return h

    def _profile(self, r: float, h: np.ndarray, y: np.ndarray, a: float, b: float):
        """(Q, p) of shape r at the best p for the completed histogram ``h``."""
        n, sy = h.sum(), h @ y
        num, den = r * n + a - 1.0, r * n + sy + a + b - 2.0
        if not den > 0:
            return -np.inf, 0.5
        p = min(max(num / den, 0.0), 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            lp = (r * n + a - 1.0) * np.log(p) if num > 0 else 0.0
            lq = (sy + b - 1.0) * np.log1p(-p) if sy + b - 1.0 > 0 else 0.0
            q = (h @ (gammaln(y + r) - gammaln(y + 1)) - n * gammaln(r) + lp + lq)
        return float(q), p

    def mstep(self, params, stats, which):
        if self.letter not in which:
            return params, []
        r0, p0 = self._rp(params)
        a, b = self._ab()
        a = np.broadcast_to(a, r0.shape)
        b = np.broadcast_to(b, r0.shape)
        rs, ps, dead = r0.copy(), p0.copy(), []
        for k in range(self.n_states):
            h = self._completed(r0[k], p0[k], stats["complete"][k], stats["censored"][k])
            if not h.sum() > 0:
                dead.append(k)
                continue
            y = np.arange(len(h), dtype=np.float64)
            seen = {}

            def q_of(r, k=k, h=h, y=y, seen=seen):
                if r not in seen:
                    seen[r] = self._profile(float(r), h, y, float(a[k]), float(b[k]))
                return seen[r][0]

            best = int(r0[k])
            q_of(best)
            r = 1
            while r <= self.max_shape:
                if q_of(r) > q_of(best):
                    best = r
                r *= 2
            if q_of(self.max_shape) > q_of(best):
                best = self.max_shape
            for step in (1, -1):
                while 1 <= best + step <= self.max_shape and q_of(best + step) > q_of(best):
                    best += step
            current_p = self._profile(float(r0[k]), h, y, float(a[k]), float(b[k]))
            if seen[best][0] > current_p[0]:
                rs[k], ps[k] = best, seen[best][1]
            else:  # nothing beats the current shape: its best p
                ps[k] = current_p[1]
        return {"duration_shapes": rs, "duration_probs": ps}, dead

    def log_prior(self, params):
        a, b = self._ab()
        if np.all(a == 1.0) and np.all(b == 1.0):
            return 0.0
        _, p = self._rp(params)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = (np.where(a != 1, (a - 1) * np.log(p), 0.0)
                     + np.where(b != 1, (b - 1) * np.log1p(-p), 0.0))
        return float(np.sum(terms - betaln(a, b)))

    def mean(self, params):
        r, p = self._rp(params)
        return 1.0 + r * (1.0 - p) / p

    def initialize(self, continuation):
        return {"duration_shapes": np.ones(self.n_states),
                "duration_probs": 1.0 - np.asarray(continuation, dtype=np.float64)}

    def check_params(self, params):
        r = self._vector(params, "duration_shapes", 1.0, None)
        if not np.all(r == np.round(r)):
            i = int(np.flatnonzero(r != np.round(r))[0])
            raise InvalidInputError(
                f"duration_shapes_: the shape r of negative-binomial durations is a whole "
                f"number of phases (>= 1), got {r[i]!r} for state {i}")
        p = self._vector(params, "duration_probs", 0.0, 1.0, open_lo=True)
        return {"duration_shapes": r, "duration_probs": p}

    def n_free_parameters(self):
        return 2 * self.n_states

    def check_prior(self, learn):
        if learn == "vb":
            self._no_vb()
        _beta_check(self.prior, learn)


#: the duration families by the name ``hs.HSMM(duration=...)`` takes
DURATIONS = {
    "nonparametric": NonparametricDurations,
    "geometric": GeometricDurations,
    "poisson": PoissonDurations,
    "negative-binomial": NegativeBinomialDurations,
}

"""hmmlearn 0.3.3's ``CategoricalHMM``, ``GaussianHMM``, ``PoissonHMM``, ``GMMHMM`` and
``MultinomialHMM``, backed by :class:`hiddenstate.HMM`.

Switching is a changed import::

    from hiddenstate.compat import hmmlearn as hmm   # was: from hmmlearn import hmm

    model = hmm.GaussianHMM(n_components=3, covariance_type="full", n_iter=100)
    model.fit(X, lengths)

The classes take hmmlearn's constructor arguments with hmmlearn's defaults (``n_iter=10``,
``tol=1e-2``, its priors), expose the same attributes (``startprob_``, ``transmat_``,
``emissionprob_``/``means_``/``covars_``/``lambdas_``/``weights_``, ``n_features``,
``monitor_``) and
methods, and initialise like hmmlearn: a parameter whose letter is in ``init_params`` is
(re)initialised by ``fit`` (with a logged warning if it was already set), a parameter that
is missing is initialised whatever ``init_params`` says, and the random draws are
hmmlearn's own (same ``random_state``, same starting point). Inference and learning run
on hiddenstate's kernels and emission families.

Deliberate differences (see ``docs/migrating-from-hmmlearn.md``): ``monitor_.converged``
is False when EM stopped at ``n_iter`` without meeting ``tol``; errors are
:class:`~hiddenstate.errors.HiddenStateError` subclasses (still ``ValueError`` where
hmmlearn raises ``ValueError``); a state that receives no posterior mass keeps its previous
parameters (with a :class:`~hiddenstate.errors.DegenerateStateWarning`) instead of turning
into zero or NaN rows; ``min_covar`` floors variances at every M-step; spherical
covariances are stored as ``(n_components,)``; ``implementation`` is accepted and ignored.
"""

from __future__ import annotations

import logging
import sys
from collections import deque

import numpy as np
from scipy import linalg
from sklearn import cluster
from sklearn.exceptions import NotFittedError as _SklearnNotFittedError
from sklearn.utils import check_random_state

from .. import errors
from .._validation import (
    broadcast_param,
    check_choice,
    check_lengths,
    check_memory,
    check_number,
    check_positive_int,
    check_sequence_list,
    check_stochastic,
)
from ..errors import InvalidInputError
from ..families import COVARIANCE_TYPES, FAMILIES
from ..families.categorical import MAX_INFERRED_SYMBOLS
from ..families.gaussian import full_covars
from ..families.poisson import check_samplable_rates
from ..inference import Sequences
from ..learn import fit as fit_mode
from ..models.hmm import HMM
from ..models.hmm.priors import prior_array, spherical_prior

__all__ = [
    "CategoricalHMM",
    "ConvergenceMonitor",
    "GMMHMM",
    "GaussianHMM",
    "MultinomialHMM",
    "NotFittedError",
    "PoissonHMM",
]

_log = logging.getLogger(__name__)

#: Supported decoder algorithms (hmmlearn's ``DECODER_ALGORITHMS``).
DECODER_ALGORITHMS = frozenset(("viterbi", "map"))
_IMPLEMENTATIONS = ("log", "scaling")
# hmmlearn's np.allclose(sum, 1): |sum - 1| <= 1e-8 + 1e-5
_SUM_ATOL = 1e-5 + 1e-8


class NotFittedError(errors.NotFittedError, _SklearnNotFittedError):
    """A method needs parameters that are not set yet.

    Caught by ``except`` clauses for hiddenstate's and for scikit-learn's
    ``NotFittedError`` alike (it derives from both).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.exceptions import NotFittedError
    >>> from hiddenstate.compat import hmmlearn as hmm
    >>> try:
    ...     hmm.GaussianHMM(n_components=2).predict(np.zeros((3, 1)))
    ... except NotFittedError:
    ...     print("fit first")
    fit first
    """


class ConvergenceMonitor:
    """The convergence monitor of hmmlearn: the log-likelihood of every EM iteration.

    ``history`` holds the log-likelihood per iteration (at the parameters entering it);
    ``iter``, ``n_iter``, ``tol``, ``verbose`` as in hmmlearn. :attr:`converged` is True
    when the last iteration improved the log-likelihood by less than ``tol``. Unlike hmmlearn
    it is *not* set merely because ``n_iter`` was reached: check
    ``monitor_.iter == monitor_.n_iter`` for that. A custom monitor (any object with
    ``report``, ``converged``, ``iter`` and ``_reset``) may replace ``model.monitor_``
    before ``fit``, as in hmmlearn.

    Parameters
    ----------
    tol : float
        The improvement below which EM has converged.
    n_iter : int
        The maximum number of iterations.
    verbose : bool
        Print each iteration to stderr.

    Examples
    --------
    >>> from hiddenstate.compat.hmmlearn import ConvergenceMonitor
    >>> monitor = ConvergenceMonitor(tol=0.01, n_iter=10, verbose=False)
    >>> monitor.report(-10.0)
    >>> monitor.report(-9.995)
    >>> monitor.converged, monitor.iter
    (True, 2)
    """

    _template = "{iter:>10d} {log_prob:>16.8f} {delta:>+16.8f}"

    def __init__(self, tol, n_iter, verbose):
        self.tol = tol
        self.n_iter = n_iter
        self.verbose = verbose
        self.history = deque()
        self.iter = 0

    def __repr__(self):
        params = sorted(dict(vars(self), history=list(self.history)).items())
        return (f"{type(self).__name__}(\n"
                + "".join(f"    {k}={v},\n" for k, v in params) + ")")

    def _reset(self):
        """Forget the history (called at the start of every ``fit``)."""
        self.iter = 0
        self.history.clear()

    def report(self, log_prob):
        """Record the log-likelihood of one iteration.

        Printed to stderr if ``verbose``; a decrease beyond rounding is logged as a warning
        ("Model is not converging"), as hmmlearn does.

        Parameters
        ----------
        log_prob : float
            The log-likelihood of the data at the parameters entering the iteration.
        """
        if self.verbose:
            delta = log_prob - self.history[-1] if self.history else np.nan
            print(self._template.format(iter=self.iter + 1, log_prob=log_prob, delta=delta),
                  file=sys.stderr)
        precision = np.finfo(float).eps ** 0.5
        if self.history and (log_prob - self.history[-1]) < -precision:
            _log.warning("Model is not converging.  Current: %s is not greater than %s. "
                         "Delta is %s", log_prob, self.history[-1],
                         log_prob - self.history[-1])
        self.history.append(log_prob)
        self.iter += 1

    @property
    def converged(self):
        """Whether the last iteration improved the log-likelihood by less than ``tol``."""
        return len(self.history) >= 2 and self.history[-1] - self.history[-2] < self.tol


class _StopRule:
    """Adapts an hmmlearn-style monitor (``report`` + ``converged``) to
    :func:`hiddenstate.learn.fit`'s stopping protocol."""

    def __init__(self, monitor, n_iter: int):
        self.monitor = monitor
        self.n_iter = n_iter

    @property
    def iter(self) -> int:
        return self.monitor.iter

    def report(self, value: float) -> bool:
        self.monitor.report(value)
        return bool(self.monitor.converged)


def _check_dist(value, shape, name) -> np.ndarray:
    """A probability vector / row-stochastic matrix with hmmlearn's sum tolerance."""
    return check_stochastic(value, shape, name, atol=_SUM_ATOL)


def _as_prior(value, name: str):
    arr = broadcast_param(name, value, None)
    return float(arr) if arr.ndim == 0 else arr


class _HmmlearnHMM(HMM):
    """What the three hmmlearn classes share: hmmlearn's hyper-parameters, initialisation,
    checks, decoding defaults and sampling on top of :class:`hiddenstate.HMM`."""

    #: hmmlearn letters of this class's parameters (``params`` / ``init_params``)
    _letters = "st"
    #: hmmlearn's parameters are plain writable arrays, validated at every call (``_check``)
    _read_only_params = False
    n_init = 1  # hmmlearn has no restarts
    learn = "em"  # hmmlearn records log p(X); its priors act through the blocks' M-step
    k_best = 1

    # -- hiddenstate.HMM's names for hmmlearn's hyper-parameters --------------------------
    @property
    def n_states(self) -> int:
        """The number of hidden states: ``n_components`` (hiddenstate's name)."""
        return self.n_components

    @property
    def n_features_(self):
        return self.n_features

    @n_features_.setter
    def n_features_(self, value) -> None:
        self.n_features = value

    def prior(self, name: str):
        """Return a prior as set: hmmlearn's priors act through the M-step whatever the mode.

        Parameters
        ----------
        name : str
            The prior's attribute name (``"transmat_prior"``, ...).

        Returns
        -------
        float or ndarray
            Its value.
        """
        return _as_prior(getattr(self, name), name)

    def emission_family(self, n_features, X=None, n_states=None):
        """Build the emission family with this class's hmmlearn priors.

        hmmlearn fills in no prior from the data, so ``X`` is not read.

        Parameters
        ----------
        n_features : int
            The number of features (symbols).
        X : ndarray or None, default=None
            Unused.
        n_states : int or None, default=None
            The number of states; None: ``n_components``.

        Returns
        -------
        hiddenstate.families.EmissionFamily
            The family.
        """
        K = self.n_components if n_states is None else n_states
        kwargs = self._family_kwargs()
        if self.emission == "gaussian" and self.covariance_type == "spherical":
            kwargs["covars_prior"] = spherical_prior(kwargs["covars_prior"], K)
        return FAMILIES[self.emission](K, n_features, **kwargs)

    def check_hyperparameters(self) -> None:
        check_positive_int(self.n_components, "n_components")
        check_positive_int(self.n_iter, "n_iter", minimum=0)
        check_number(self.tol, "tol", finite=False)
        for name in ("params", "init_params"):
            letters = getattr(self, name)
            if not isinstance(letters, str) or set(letters) - set(self._letters):
                raise InvalidInputError(
                    f"{name}: {type(self).__name__} takes letters from {self._letters!r}, "
                    f"got {letters!r}")
        if not isinstance(self.implementation, str) or \
                self.implementation not in _IMPLEMENTATIONS:
            raise InvalidInputError(
                f"implementation: expected one of {_IMPLEMENTATIONS}, got "
                f"{self.implementation!r:.40} (accepted for compatibility; hiddenstate always "
                "uses its scaled kernels)")
        check_choice(self.algorithm, "algorithm", DECODER_ALGORITHMS)
        if not isinstance(self.verbose, (bool, int, np.bool_, np.integer)):
            raise InvalidInputError(f"verbose: expected True or False, got {self.verbose!r:.40}")
        _check_seed(self.random_state)

    #: prior name -> (parameter shape, shapes the M-step combines it with), by K and W/D
    def _prior_shapes(self, K: int, D: int) -> dict:
        return {"startprob_prior": ((K,), ()), "transmat_prior": ((K, K), ())}

    def _check_priors(self, n_features: int, n_emission_states: int) -> None:
        """hmmlearn's priors act through the M-step whatever their value; they must still
        be finite numbers whose shape fits the parameter they are added to."""
        for name, (shape, combine) in self._prior_shapes(n_emission_states,
                                                         n_features).items():
            prior_array(name, getattr(self, name), shape, combine)

    # -- hmmlearn's initialisation ---------------------------------------------------------
    def _validate_X(self, X) -> np.ndarray:
        return self.validate_data(X, None, None)[0]

    def validate_data(self, X, lengths, n_features, stream=False, continues=False):
        """Validate the observations as the native estimator does, without missing values.

        See :meth:`hiddenstate.HMM.validate_data`. hmmlearn's classes take complete data: a
        list of sequences of different lengths and NaN are refused with a message that
        gives the fix (hmmlearn #381, #327).

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None
            The length of each sequence; None: one sequence.
        n_features : int or None
            The number of symbols or features; None before it is known.
        stream, continues : bool, default=False
            See :meth:`hiddenstate.HMM.validate_data`.

        Returns
        -------
        X : ndarray
            The observations.
        seqs : hiddenstate.inference.Sequences
            Their layout.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``X`` or ``lengths`` is invalid, or ``X`` holds NaN.
        """
        check_sequence_list(X, lengths, categorical=False)
        Xv, seqs = super().validate_data(X, lengths, n_features, stream, continues)
        if Xv.dtype.kind == "f" and np.isnan(Xv).any():
            raise InvalidInputError(
                f"X: contains NaN; hmmlearn's {type(self).__name__} takes complete data. "
                f"hiddenstate's own estimator treats NaN as a missing entry: "
                f"hs.HMM(n_states, emission={self.emission!r}).fit(X, lengths) "
                "(import hiddenstate as hs)")
        return Xv, seqs

    def _needs_init(self, code: str, name: str) -> bool:
        if code in self.init_params:
            if hasattr(self, name):
                _log.warning(
                    "Even though the %r attribute is set, it will be overwritten during "
                    "initialization because 'init_params' contains %r", name, code)
            return True
        return not hasattr(self, name)

    def _check_and_set_n_features(self, X) -> None:
        X = self._validate_X(X)
        n_features = X.shape[1]
        if hasattr(self, "n_features"):
            if self.n_features != n_features:
                raise InvalidInputError(
                    f"X: has {n_features} features but the model expects {self.n_features}; "
                    "pass data with the columns used before (or a new model)")
        else:
            self.n_features = n_features

    def _get_n_fit_scalars_per_param(self) -> dict[str, int]:
        K = self.n_components
        return {"s": K - 1, "t": K * (K - 1)}

    def _init(self, X, lengths=None) -> None:
        """hmmlearn's ``_init``: set ``n_features`` and initialise the parameters that
        ``_needs_init`` asks for, drawing from ``random_state`` exactly as hmmlearn does."""
        X = self._validate_X(X)
        self._check_and_set_n_features(X)
        K = self.n_components
        init = 1.0 / K
        random_state = check_random_state(self.random_state)
        if self._needs_init("s", "startprob_"):
            self.startprob_ = random_state.dirichlet(np.full(K, init))
        if self._needs_init("t", "transmat_"):
            self.transmat_ = random_state.dirichlet(np.full(K, init), size=K)
        per_param = self._get_n_fit_scalars_per_param()
        n_fit_scalars = sum(per_param[p] for p in self.params)
        if X.size < n_fit_scalars:
            _log.warning(
                "Fitting a model with %d free scalar parameters with only %d data points "
                "will result in a degenerate solution.", n_fit_scalars, X.size)
        self._init_emissions(X)

    def _init_emissions(self, X) -> None:
        raise NotImplementedError

    # -- hmmlearn's checks -----------------------------------------------------------------
    def _attr(self, name: str):
        if not hasattr(self, name):
            raise NotFittedError(
                f"{name} is not set: call fit, or set {name} before using "
                f"{type(self).__name__} with init_params excluding it")
        return getattr(self, name)

    def _check(self) -> None:
        """Validate (and convert to float arrays) the parameters set on the model."""
        K = self.n_components
        self.startprob_ = _check_dist(self._attr("startprob_"), (K,), "startprob_")
        self.transmat_ = _check_dist(self._attr("transmat_"), (K, K), "transmat_")
        self._check_emissions()

    def _check_emissions(self) -> None:
        raise NotImplementedError

    def check_is_fitted(self) -> None:
        if not hasattr(self, "startprob_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet: call fit, or set "
                "its parameters (startprob_, transmat_, ...) first")
        self._check()

    # -- fitting ---------------------------------------------------------------------------
    def fit(self, X, lengths=None):
        """Estimate the parameters by EM, as hmmlearn's ``fit``.

        ``_init`` (hmmlearn's initialisation draws for the parameters ``init_params`` names, or
        that are missing), ``_check``, then at most ``n_iter`` iterations until
        ``monitor_.converged``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.

        Returns
        -------
        object
            The model itself, fitted.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a hyper-parameter, the data or a parameter set by hand is invalid.
        """
        self.check_hyperparameters()
        X = self._validate_X(X)
        if lengths is None:
            lengths = np.asarray([len(X)])
        seqs = Sequences.from_lengths(check_lengths(lengths, len(X)))
        self._check_and_set_n_features(X)
        # before _init draws
        self.check_fit_memory(X, seqs, self.emission_family(self.n_features))
        self._init(X, lengths)
        self._check()
        self._check_priors(int(self.n_features), self.n_components)
        X = self.validate_data(X, None, self.n_features)[0]  # X agrees with the parameters
        family = self.emission_family(self.n_features)
        theta = {"startprob": self.startprob_, "transmat": self.transmat_,
                 "emission": family.check_params(self.emission_params())}
        monitor = getattr(self, "monitor_", None)
        if monitor is None:
            monitor = self.monitor_ = ConvergenceMonitor(self.tol, self.n_iter, self.verbose)
        elif type(monitor) is ConvergenceMonitor:  # follow set_params / attribute changes
            monitor.tol, monitor.n_iter, monitor.verbose = self.tol, self.n_iter, self.verbose
        monitor._reset()
        # hmmlearn records log p(X) while its M-step uses the priors: the "em" objective
        # with the priors of this class's blocks (see _family_kwargs / prior)
        theta = fit_mode(self.problem(family, X, seqs), "em", theta,
                         _StopRule(monitor, int(self.n_iter)), self.params).params
        self.assign_params(theta["startprob"], theta["transmat"], theta["emission"])
        return self

    # -- inference -------------------------------------------------------------------------
    def _compute_log_likelihood(self, X) -> np.ndarray:
        """``(n_samples, n_components)`` emission log-likelihoods log p(x_t | z_t)."""
        self._check()
        X = self.validate_data(X, None, self.n_features)[0]
        return self.emission_family(self.n_features).log_likelihood(self.emission_params(), X)

    def score_samples(self, X, lengths=None):
        r"""Compute the log-likelihood and the state posteriors, as hmmlearn's ``score_samples``.

        hmmlearn's meaning: ``(log p(X), state posteriors)``. :class:`hiddenstate.HMM`
        names these ``score`` and ``predict_proba``; its ``score_samples`` is the
        log-likelihood of each sequence.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.

        Returns
        -------
        log_prob : float
            :math:`\log p(X)`, summed over the sequences.
        posteriors : ndarray of shape (n_samples, n_components)
            :math:`p(z_t = k \mid X)` for every sample.

        Raises
        ------
        NotFittedError
            Before ``fit`` (or parameters set by hand).
        hiddenstate.errors.InvalidInputError
            If the data are invalid.
        """
        logprob, posteriors = self._posteriors(X, lengths)
        return float(logprob.sum()), posteriors

    def score(self, X, lengths=None) -> float:
        r"""Compute the log-likelihood of the data (forward pass only).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.

        Returns
        -------
        float
            :math:`\log p(X)`, summed over the sequences.

        Raises
        ------
        NotFittedError
            Before ``fit`` (or parameters set by hand).
        hiddenstate.errors.InvalidInputError
            If the data are invalid.
        """
        return float(HMM.score_samples(self, X, lengths).sum())

    def decode(self, X, lengths=None, algorithm=None):
        r"""Find the most likely states.

        ``"viterbi"`` returns :math:`(\log p(X, z^*), z^*)`. ``"map"`` returns the per-step
        posterior argmax and, as hmmlearn 0.3.3 does, the sum over samples of the largest
        posterior *probability* (not a log-probability; ``score`` gives :math:`\log p(X)`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.
        algorithm : {"viterbi", "map"} or None, default=None
            The decoder; None: ``self.algorithm``.

        Returns
        -------
        log_prob : float
            See above.
        state_sequence : ndarray of shape (n_samples,)
            The decoded states.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``algorithm`` is unknown or the data are invalid.
        NotFittedError
            Before ``fit`` (or parameters set by hand).
        """
        algorithm = algorithm or self.algorithm
        if not isinstance(algorithm, str) or algorithm not in DECODER_ALGORITHMS:
            raise InvalidInputError(
                f"algorithm: unknown decoder {algorithm!r:.40}; use 'viterbi' or 'map'")
        if algorithm == "map":
            posteriors = self.predict_proba(X, lengths)
            return float(posteriors.max(axis=1).sum()), posteriors.argmax(axis=1)
        return super().decode(X, lengths, algorithm)

    def predict(self, X, lengths=None):
        """Find the most likely state of every sample, decoded with ``self.algorithm``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.

        Returns
        -------
        ndarray of shape (n_samples,)
            The decoded states.
        """
        return self.decode(X, lengths)[1]

    def get_stationary_distribution(self) -> np.ndarray:
        """Compute the stationary distribution of the chain.

        The left eigenvector of ``transmat_`` for the largest eigenvalue, normalised.

        Returns
        -------
        ndarray of shape (n_components,)
            The stationary distribution.

        Raises
        ------
        NotFittedError
            Before ``transmat_`` is set.
        """
        if not hasattr(self, "transmat_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance has no transmat_ yet; call fit first")
        eigvals, eigvecs = linalg.eig(np.asarray(self.transmat_, dtype=np.float64).T)
        eigvec = np.real_if_close(eigvecs[:, np.argmax(eigvals)])
        return eigvec / eigvec.sum()

    def sample(self, n_samples=1, random_state=None, currstate=None):
        """Draw observations and their states, exactly as hmmlearn does.

        The same ``random_state`` gives the same draws.

        Parameters
        ----------
        n_samples : int, default=1
            The number of samples.
        random_state : int, numpy.random.RandomState or None, default=None
            The seed; None: ``self.random_state``.
        currstate : int or None, default=None
            The first state; None: drawn from ``startprob_``.

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
            The observations.
        state_sequence : ndarray of shape (n_samples,)
            Their states.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``n_samples`` or ``currstate`` is out of range, or the samples would not fit in
            memory.
        """
        self.check_is_fitted()
        if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) \
                or n_samples < 1:
            raise InvalidInputError(f"n_samples: expected an integer >= 1, got {n_samples!r}")
        if random_state is None:
            random_state = self.random_state
        _check_seed(random_state)
        random_state = check_random_state(random_state)
        # a Python list of n_samples observations before the array: ~100 bytes each
        check_memory({"n_samples": n_samples * (120.0 + 16.0 * int(self.n_features))},
                     f"sample(n_samples={n_samples})")
        transmat_cdf = np.cumsum(self.transmat_, axis=1)
        if currstate is None:
            startprob_cdf = np.cumsum(self.startprob_)
            currstate = (startprob_cdf > random_state.rand()).argmax()
        elif not 0 <= int(currstate) < self.n_components:
            raise InvalidInputError(
                f"currstate: {currstate!r} is not a state in 0..{self.n_components - 1}")
        draw = self._sampler()
        states = [int(currstate)]
        X = [draw(currstate, random_state)]
        for _ in range(n_samples - 1):
            currstate = (transmat_cdf[currstate] > random_state.rand()).argmax()
            states.append(int(currstate))
            X.append(draw(currstate, random_state))
        return np.atleast_2d(X), np.array(states, dtype=int)

    def _sampler(self):
        """``draw(state, random_state)`` -> one observation (hmmlearn's
        ``_generate_sample_from_state``, with per-model work hoisted out of the loop)."""
        raise NotImplementedError

    # -- persistence -----------------------------------------------------------------------
    def to_hmm(self) -> HMM:
        """Return the equivalent :class:`hiddenstate.HMM`.

        Same parameters and fitted state (the monitor's history included); prior
        hyper-parameters are not carried over. ``tol`` keeps its number, which the native
        model reads per observation (hmmlearn's is an absolute gain).

        Returns
        -------
        hiddenstate.HMM
            The native model.
        """
        from ..learn import ConvergenceMonitor as NativeMonitor

        self.check_is_fitted()
        kwargs = {}
        if self.emission in ("gaussian", "gmm"):
            kwargs = {"covariance_type": self.covariance_type, "min_covar": self.min_covar}
        if self.emission == "gmm":
            kwargs["n_mix"] = int(self.n_mix)
        if self.emission == "multinomial" and np.ndim(self.n_trials) == 0:
            kwargs["n_trials"] = self.n_trials
        rs = self.random_state
        out = HMM(n_states=self.n_components, emission=self.emission,
                  n_features=int(self.n_features), n_iter=max(int(self.n_iter), 1),
                  tol=float(self.tol), init_params="", params=self.params,
                  random_state=int(rs) if isinstance(rs, (int, np.integer)) else None,
                  **kwargs)
        monitor = getattr(self, "monitor_", None)
        history = [float(v) for v in getattr(monitor, "history", [])]
        out.monitor_ = NativeMonitor(out.tol, out.n_iter, False, history,
                                     bool(getattr(monitor, "converged", False)))
        out.n_features_ = int(self.n_features)
        out.assign_params(self.startprob_.copy(), self.transmat_.copy(),
                          {k: np.array(v, dtype=np.float64)
                           for k, v in self.emission_params().items()})
        return out

    def save(self, path) -> None:
        """Save as the equivalent :class:`hiddenstate.HMM` (JSON + ``.npz``, no pickle).

        :func:`hiddenstate.load` returns that ``HMM``.

        Parameters
        ----------
        path : str or os.PathLike
            The directory.
        """
        self.to_hmm().save(path)


class _EmissionRows:
    """What hmmlearn's CategoricalHMM and MultinomialHMM share: ``emissionprob_`` rows of
    ``n_features`` probabilities, started uniformly at random (hmmlearn's draws)."""

    def _get_n_fit_scalars_per_param(self):
        out = super()._get_n_fit_scalars_per_param()
        out["e"] = self.n_components * (self.n_features - 1)
        return out

    def _init_emissions(self, X) -> None:
        self.random_state = check_random_state(self.random_state)
        if self._needs_init("e", "emissionprob_"):
            B = self.random_state.rand(self.n_components, self.n_features)
            B /= B.sum(axis=1, keepdims=True)
            self.emissionprob_ = B


class CategoricalHMM(_EmissionRows, _HmmlearnHMM):
    """Hidden Markov model with categorical (discrete) emissions: hmmlearn's CategoricalHMM.

    ``X`` holds integer symbols, shape ``(n_samples, 1)``. See the module docstring
    (:mod:`hiddenstate.compat.hmmlearn`) for what is hmmlearn's and the deliberate
    differences.

    Parameters
    ----------
    n_components : int, default=1
        The number of hidden states.
    startprob_prior : float or array-like, default=1.0
        The Dirichlet concentration of the initial distribution (the M-step adds
        ``startprob_prior - 1`` to the counts, as hmmlearn does).
    transmat_prior : float or array-like, default=1.0
        The Dirichlet concentration of each transition row.
    emissionprob_prior : float or array-like, default=1.0
        The Dirichlet concentration of each emission row.
    n_features : int or None, default=None
        The number of symbols; None: the largest symbol of the data plus one.
    algorithm : {"viterbi", "map"}, default="viterbi"
        The decoder of :meth:`decode` and :meth:`predict`.
    random_state : int, numpy.random.RandomState or None, default=None
        Seeds hmmlearn's own initialisation draws (the same seed gives hmmlearn's starting
        point) and :meth:`sample`.
    n_iter : int, default=10
        The maximum number of EM iterations.
    tol : float, default=1e-2
        EM stops when an iteration improves the log-likelihood by less than this.
    verbose : bool, default=False
        Print each iteration's log-likelihood to stderr (the monitor's ``report``).
    params : str, default="ste"
        The parameters EM updates: ``s`` start, ``t`` transitions, ``e`` emissions.
    init_params : str, default="ste"
        The parameters ``fit`` initialises.
    implementation : {"log", "scaling"}, default="log"
        Accepted for compatibility and ignored: hiddenstate always uses its scaled kernels.

    Attributes
    ----------
    n_features : int
        The number of symbols.
    monitor_ : ConvergenceMonitor
        The log-likelihood of every EM iteration.
    startprob_ : ndarray of shape (n_components,)
        The initial state distribution.
    transmat_ : ndarray of shape (n_components, n_components)
        The transition matrix.
    emissionprob_ : ndarray of shape (n_components, n_features)
        The emission probabilities.

    See Also
    --------
    hiddenstate.HMM : The native estimator (``emission="categorical"``).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.compat import hmmlearn as hmm
    >>> X = np.array([[0], [0], [1], [0], [2], [2], [1], [2]])
    >>> model = hmm.CategoricalHMM(n_components=2, random_state=0).fit(X)
    >>> model.n_features, model.emissionprob_.shape
    (3, (2, 3))
    """

    emission = "categorical"
    _letters = "ste"

    def __init__(self, n_components=1, startprob_prior=1.0, transmat_prior=1.0, *,
                 emissionprob_prior=1.0, n_features=None, algorithm="viterbi",
                 random_state=None, n_iter=10, tol=1e-2, verbose=False, params="ste",
                 init_params="ste", implementation="log"):
        self.n_components = n_components
        self.startprob_prior = startprob_prior
        self.transmat_prior = transmat_prior
        self.emissionprob_prior = emissionprob_prior
        self.n_features = n_features
        self.algorithm = algorithm
        self.random_state = random_state
        self.n_iter = n_iter
        self.tol = tol
        self.verbose = verbose
        self.params = params
        self.init_params = init_params
        self.implementation = implementation
        self.monitor_ = ConvergenceMonitor(tol, n_iter, verbose)

    def _family_kwargs(self) -> dict:
        return {"emissionprob_prior": _as_prior(self.emissionprob_prior, "emissionprob_prior")}

    def check_hyperparameters(self) -> None:
        super().check_hyperparameters()
        if self.n_features is not None:
            check_positive_int(self.n_features, "n_features")

    def _prior_shapes(self, K, D):
        return {**super()._prior_shapes(K, D), "emissionprob_prior": ((K, D), ())}

    def validate_data(self, X, lengths, n_features, stream=False, continues=False):
        """Validate integer symbols, one per row (``(n_samples, 1)``; hmmlearn #455).

        Parameters
        ----------
        X : array-like of int
            The symbols, the sequences one after the other.
        lengths : array-like of int or None
            The length of each sequence; None: one sequence.
        n_features : int or None
            The number of symbols; None before it is known.
        stream, continues : bool, default=False
            See :meth:`hiddenstate.HMM.validate_data`.

        Returns
        -------
        X : ndarray
            The symbols.
        seqs : hiddenstate.inference.Sequences
            Their layout.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``X`` is not integer symbols in one column, or ``lengths`` is invalid.
        """
        check_sequence_list(X, lengths, categorical=False)   # hmmlearn #381
        arr = np.asarray(X)
        if arr.dtype == object or not np.issubdtype(arr.dtype, np.integer):
            raise InvalidInputError(
                f"X: symbols should be integers, got dtype {arr.dtype}; encode them as ints "
                "(e.g. sklearn.preprocessing.LabelEncoder) with shape (n_samples, 1)")
        if arr.ndim == 2 and arr.shape[1] != 1:  # hmmlearn #455
            raise InvalidInputError(
                f"X: CategoricalHMM takes one symbol per row, shape (n_samples, 1), got shape "
                f"{arr.shape}; a sequence of {arr.shape[1]} symbols is the column "
                "np.asarray(seq).reshape(-1, 1) (several sequences: concatenate them and pass "
                "lengths); several categorical features per step: hs.HMM(n_states, "
                "n_features=(W1, W2, ...)) (import hiddenstate as hs)")
        return super().validate_data(arr, lengths, n_features, stream, continues)

    def _check_and_set_n_features(self, X) -> None:
        arr = np.asarray(X)
        if arr.dtype == object or not np.issubdtype(arr.dtype, np.integer):
            raise InvalidInputError(f"X: symbols should be integers, got dtype {arr.dtype}")
        if arr.size and arr.min() < 0:
            raise InvalidInputError(
                f"X: symbols should be non-negative, got {int(arr.min())}")
        top = int(arr.max())
        if self.n_features is not None:
            if self.n_features - 1 < top:
                raise InvalidInputError(
                    f"X: largest symbol is {top} but the model only emits symbols up to "
                    f"{self.n_features - 1}; raise n_features")
        else:
            if top + 1 > MAX_INFERRED_SYMBOLS:
                raise InvalidInputError(
                    f"X: the largest symbol, {top}, implies an alphabet of {top + 1} symbols; "
                    "relabel symbols to 0..W-1 (np.unique(X, return_inverse=True)) or pass "
                    "n_features explicitly")
            self.n_features = top + 1

    def _check_emissions(self) -> None:
        B = np.atleast_2d(np.asarray(self._attr("emissionprob_"), dtype=np.float64))
        if self.n_features is None:
            self.n_features = B.shape[1]
        self.emissionprob_ = _check_dist(B, (self.n_components, self.n_features),
                                         "emissionprob_")

    def _sampler(self):
        cdfs = np.cumsum(self.emissionprob_, axis=1)

        def draw(state, random_state):
            return [(cdfs[state] > random_state.rand()).argmax()]
        return draw


class GaussianHMM(_HmmlearnHMM):
    """Hidden Markov model with Gaussian emissions: hmmlearn's GaussianHMM.

    ``covars_`` reads as ``(n_components, n_features, n_features)`` matrices whatever the
    type and is set in the type's own shape (``(n_components,)``, ``(n_components,
    n_features)``, ``(n_components, n_features, n_features)`` or ``(n_features,
    n_features)``); the stored form is ``_covars_``. See the module docstring
    (:mod:`hiddenstate.compat.hmmlearn`) for what is hmmlearn's and the deliberate
    differences.

    Parameters
    ----------
    n_components : int, default=1
        The number of hidden states.
    covariance_type : {"spherical", "diag", "full", "tied"}, default="diag"
        The form of the covariances.
    min_covar : float, default=1e-3
        The floor of every variance, applied at every M-step.
    startprob_prior : float or array-like, default=1.0
        The Dirichlet concentration of the initial distribution (the M-step adds
        ``startprob_prior - 1`` to the counts, as hmmlearn does).
    transmat_prior : float or array-like, default=1.0
        The Dirichlet concentration of each transition row.
    means_prior : float or array-like, default=0
        The prior mean of the means.
    means_weight : float or array-like, default=0
        Its weight.
    covars_prior : float or array-like, default=1e-2
        The prior scatter of the covariances.
    covars_weight : float or array-like, default=1
        Its weight.
    algorithm : {"viterbi", "map"}, default="viterbi"
        The decoder of :meth:`decode` and :meth:`predict`.
    random_state : int, numpy.random.RandomState or None, default=None
        Seeds hmmlearn's own initialisation draws (the same seed gives hmmlearn's starting
        point) and :meth:`sample`.
    n_iter : int, default=10
        The maximum number of EM iterations.
    tol : float, default=1e-2
        EM stops when an iteration improves the log-likelihood by less than this.
    verbose : bool, default=False
        Print each iteration's log-likelihood to stderr (the monitor's ``report``).
    params : str, default="stmc"
        The parameters EM updates: ``s``, ``t``, ``m`` means, ``c`` covariances.
    init_params : str, default="stmc"
        The parameters ``fit`` initialises.
    implementation : {"log", "scaling"}, default="log"
        Accepted for compatibility and ignored: hiddenstate always uses its scaled kernels.

    Attributes
    ----------
    n_features : int
        The number of features.
    monitor_ : ConvergenceMonitor
        The log-likelihood of every EM iteration.
    startprob_ : ndarray of shape (n_components,)
        The initial state distribution.
    transmat_ : ndarray of shape (n_components, n_components)
        The transition matrix.
    means_ : ndarray of shape (n_components, n_features)
        The means.
    covars_ : ndarray of shape (n_components, n_features, n_features)
        The covariances (set in the type's own shape).

    See Also
    --------
    hiddenstate.HMM : The native estimator (``emission="gaussian"``).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.compat import hmmlearn as hmm
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(0, 1, (100, 1)), rng.normal(5, 1, (100, 1))])
    >>> model = hmm.GaussianHMM(n_components=2, random_state=0).fit(X)
    >>> np.sort(model.means_.ravel()).round(1)
    array([0.1, 4.9])
    >>> model.covars_.shape
    (2, 1, 1)
    """

    emission = "gaussian"
    _letters = "stmc"

    def __init__(self, n_components=1, covariance_type="diag", min_covar=1e-3,
                 startprob_prior=1.0, transmat_prior=1.0, means_prior=0, means_weight=0,
                 covars_prior=1e-2, covars_weight=1, algorithm="viterbi", random_state=None,
                 n_iter=10, tol=1e-2, verbose=False, params="stmc", init_params="stmc",
                 implementation="log"):
        self.n_components = n_components
        self.covariance_type = covariance_type
        self.min_covar = min_covar
        self.startprob_prior = startprob_prior
        self.transmat_prior = transmat_prior
        self.means_prior = means_prior
        self.means_weight = means_weight
        self.covars_prior = covars_prior
        self.covars_weight = covars_weight
        self.algorithm = algorithm
        self.random_state = random_state
        self.n_iter = n_iter
        self.tol = tol
        self.verbose = verbose
        self.params = params
        self.init_params = init_params
        self.implementation = implementation
        self.monitor_ = ConvergenceMonitor(tol, n_iter, verbose)

    def check_hyperparameters(self) -> None:
        super().check_hyperparameters()
        check_choice(self.covariance_type, "covariance_type", COVARIANCE_TYPES)
        check_number(self.min_covar, "min_covar", minimum=0.0)

    def _prior_shapes(self, K, D):
        cov = {"spherical": (K, D), "diag": (K, D), "full": (K, D, D),
               "tied": (D, D)}[self.covariance_type]
        return {**super()._prior_shapes(K, D), "means_prior": ((K, D), ()),
                "means_weight": ((K, D), ((K, 1),)), "covars_prior": (cov, ()),
                "covars_weight": ((), ())}

    def _family_kwargs(self) -> dict:
        return {"covariance_type": self.covariance_type, "min_covar": self.min_covar,
                "means_prior": _as_prior(self.means_prior, "means_prior"),
                "means_weight": _as_prior(self.means_weight, "means_weight"),
                "covars_prior": _as_prior(self.covars_prior, "covars_prior"),
                "covars_weight": _as_prior(self.covars_weight, "covars_weight")}

    @property
    def covars_(self) -> np.ndarray:
        """Covariances as ``(n_components, n_features, n_features)`` matrices."""
        if not hasattr(self, "_covars_"):
            raise AttributeError("covars_")
        cov = self._covars_
        if hasattr(self, "n_features"):
            D = self.n_features
        elif hasattr(self, "means_"):
            D = np.shape(self.means_)[1]
        else:
            D = 1 if self.covariance_type == "spherical" else cov.shape[-1]
        return full_covars(cov, self.covariance_type, self.n_components, D)

    @covars_.setter
    def covars_(self, value) -> None:
        """Covariances as ``(n_components, n_features, n_features)`` matrices."""
        self._covars_ = _validate_covars(np.array(value, dtype=np.float64, copy=True),
                                         self.covariance_type, self.n_components)

    def _get_n_fit_scalars_per_param(self):
        out = super()._get_n_fit_scalars_per_param()
        K, D = self.n_components, self.n_features
        out["m"] = K * D
        out["c"] = {"spherical": K, "diag": K * D, "full": K * D * (D + 1) // 2,
                    "tied": D * (D + 1) // 2}[self.covariance_type]
        return out

    def _init_emissions(self, X) -> None:
        K = self.n_components
        if self._needs_init("m", "means_"):
            if len(X) < K:
                raise InvalidInputError(
                    f"X: {len(X)} samples cannot initialise {K} means by k-means; pass more "
                    "data, or set means_ and remove 'm' from init_params")
            kmeans = cluster.KMeans(n_clusters=K, random_state=self.random_state, n_init=10)
            kmeans.fit(X)
            self.means_ = kmeans.cluster_centers_
        if self._needs_init("c", "covars_"):
            cv = np.cov(X.T) + self.min_covar * np.eye(X.shape[1])
            if not cv.shape:
                cv.shape = (1, 1)
            ct = self.covariance_type
            if ct == "spherical":
                covars = np.tile(cv.mean() * np.ones(cv.shape[1]), (K, 1))
            elif ct == "tied":
                covars = cv
            elif ct == "diag":
                covars = np.tile(np.diag(cv), (K, 1))
            else:
                covars = np.tile(cv, (K, 1, 1))
            self.covars_ = covars

    def _check_emissions(self) -> None:
        means = np.asarray(self._attr("means_"), dtype=np.float64)
        if means.ndim != 2 or means.shape[0] != self.n_components:
            raise InvalidInputError(
                f"means_: expected shape (n_components, n_features) with n_components="
                f"{self.n_components}, got {means.shape}")
        self.n_features = means.shape[1]
        if self.covariance_type not in COVARIANCE_TYPES:
            raise InvalidInputError(
                f"covariance_type: {self.covariance_type!r} is not one of {COVARIANCE_TYPES}")
        checked = self.emission_family(self.n_features).check_params(
            {"means": means, "covars": self._attr("_covars_")})
        self.means_ = checked["means"]
        self._covars_ = checked["covars"]

    def _sampler(self):
        means, covs = self.means_, self.covars_

        def draw(state, random_state):
            return random_state.multivariate_normal(means[state], covs[state])
        return draw


class PoissonHMM(_HmmlearnHMM):
    """Hidden Markov model with Poisson emissions: hmmlearn's PoissonHMM.

    ``X`` holds non-negative integer counts, shape ``(n_samples, n_features)``.
    ``lambdas_prior`` and ``lambdas_weight`` are the shape and rate of a Gamma prior on the
    rates; the M-step is the conjugate posterior mean
    ``(lambdas_prior + sum_t gamma_tk x_t) / (lambdas_weight + sum_t gamma_tk)``. With the
    default ``0, 0`` this is the maximum-likelihood estimate, identical to hmmlearn's. (With
    a non-zero prior hmmlearn 0.3.3 weighs the data by the total posterior mass of *all*
    states instead of state k's; we do not reproduce that.)

    Parameters
    ----------
    n_components : int, default=1
        The number of hidden states.
    startprob_prior : float or array-like, default=1.0
        The Dirichlet concentration of the initial distribution (the M-step adds
        ``startprob_prior - 1`` to the counts, as hmmlearn does).
    transmat_prior : float or array-like, default=1.0
        The Dirichlet concentration of each transition row.
    lambdas_prior : float or array-like, default=0.0
        The shape of the Gamma prior on the rates.
    lambdas_weight : float or array-like, default=0.0
        Its rate.
    algorithm : {"viterbi", "map"}, default="viterbi"
        The decoder of :meth:`decode` and :meth:`predict`.
    random_state : int, numpy.random.RandomState or None, default=None
        Seeds hmmlearn's own initialisation draws (the same seed gives hmmlearn's starting
        point) and :meth:`sample`.
    n_iter : int, default=10
        The maximum number of EM iterations.
    tol : float, default=1e-2
        EM stops when an iteration improves the log-likelihood by less than this.
    verbose : bool, default=False
        Print each iteration's log-likelihood to stderr (the monitor's ``report``).
    params : str, default="stl"
        The parameters EM updates: ``s``, ``t``, ``l`` rates.
    init_params : str, default="stl"
        The parameters ``fit`` initialises.
    implementation : {"log", "scaling"}, default="log"
        Accepted for compatibility and ignored: hiddenstate always uses its scaled kernels.

    Attributes
    ----------
    n_features : int
        The number of features.
    monitor_ : ConvergenceMonitor
        The log-likelihood of every EM iteration.
    startprob_ : ndarray of shape (n_components,)
        The initial state distribution.
    transmat_ : ndarray of shape (n_components, n_components)
        The transition matrix.
    lambdas_ : ndarray of shape (n_components, n_features)
        The rates.

    See Also
    --------
    hiddenstate.HMM : The native estimator (``emission="poisson"``).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.compat import hmmlearn as hmm
    >>> X = np.random.default_rng(0).poisson(3, size=(50, 2))
    >>> hmm.PoissonHMM(n_components=2, random_state=0).fit(X).lambdas_.shape
    (2, 2)
    """

    emission = "poisson"
    _letters = "stl"

    def __init__(self, n_components=1, startprob_prior=1.0, transmat_prior=1.0,
                 lambdas_prior=0.0, lambdas_weight=0.0, algorithm="viterbi",
                 random_state=None, n_iter=10, tol=1e-2, verbose=False, params="stl",
                 init_params="stl", implementation="log"):
        self.n_components = n_components
        self.startprob_prior = startprob_prior
        self.transmat_prior = transmat_prior
        self.lambdas_prior = lambdas_prior
        self.lambdas_weight = lambdas_weight
        self.algorithm = algorithm
        self.random_state = random_state
        self.n_iter = n_iter
        self.tol = tol
        self.verbose = verbose
        self.params = params
        self.init_params = init_params
        self.implementation = implementation
        self.monitor_ = ConvergenceMonitor(tol, n_iter, verbose)

    def _family_kwargs(self) -> dict:
        return {"lambdas_prior": _as_prior(self.lambdas_prior, "lambdas_prior"),
                "lambdas_weight": _as_prior(self.lambdas_weight, "lambdas_weight")}

    def _prior_shapes(self, K, D):
        return {**super()._prior_shapes(K, D), "lambdas_prior": ((K, D), ()),
                "lambdas_weight": ((K, D), ((K, 1),))}

    def _get_n_fit_scalars_per_param(self):
        out = super()._get_n_fit_scalars_per_param()
        out["l"] = self.n_components * self.n_features
        return out

    def _init_emissions(self, X) -> None:
        self.random_state = check_random_state(self.random_state)
        mean_X = X.mean()
        var_X = X.var()
        if self._needs_init("l", "lambdas_"):
            if not (mean_X > 0 and var_X > 0):
                raise InvalidInputError(
                    "X: cannot initialise lambdas_ by the method of moments from data whose "
                    f"mean ({mean_X:g}) or variance ({var_X:g}) is zero; set lambdas_ and "
                    "remove 'l' from init_params")
            self.lambdas_ = self.random_state.gamma(
                shape=mean_X**2 / var_X, scale=var_X / mean_X,
                size=(self.n_components, self.n_features))

    def _check_emissions(self) -> None:
        lam = np.atleast_2d(np.asarray(self._attr("lambdas_"), dtype=np.float64))
        n_features = getattr(self, "n_features", lam.shape[1])
        if lam.shape != (self.n_components, n_features):
            raise InvalidInputError(
                f"lambdas_: expected shape (n_components, n_features) = "
                f"{(self.n_components, n_features)}, got {lam.shape}")
        self.n_features = n_features
        self.lambdas_ = self.emission_family(n_features).check_params({"lambdas": lam})["lambdas"]

    def _sampler(self):
        lambdas = self.lambdas_
        check_samplable_rates(lambdas)

        def draw(state, random_state):
            return random_state.poisson(lambdas[state])
        return draw


class GMMHMM(_HmmlearnHMM):
    """Hidden Markov model with Gaussian-mixture emissions: hmmlearn's GMMHMM.

    Each state emits from its own mixture of ``n_mix`` Gaussians. hmmlearn's priors
    (``weights_prior``, ``means_prior``, ``means_weight`` and its inverse-gamma /
    inverse-Wishart ``covars_prior``, ``covars_weight``, with its covariance-type-dependent
    defaults) are translated into the Gaussian family's ``(covars_prior, covars_weight)``
    so that the M-step's numerator and denominator are hmmlearn's (``_family_kwargs``).
    Differences: the covariance M-step sums the scatter about the new means (hmmlearn: about
    the previous ones, which is not the EM update; the two agree when ``'m'`` is not in
    ``params``); a denominator that hmmlearn's defaults make smaller than the posterior mass
    (spherical with ``n_mix > n_features``) is the maximum-likelihood one here; variances are
    floored at ``min_covar``.

    Parameters
    ----------
    n_components : int, default=1
        The number of hidden states.
    n_mix : int, default=1
        The number of components per state.
    min_covar : float, default=1e-3
        The floor of every variance.
    startprob_prior : float or array-like, default=1.0
        The Dirichlet concentration of the initial distribution (the M-step adds
        ``startprob_prior - 1`` to the counts, as hmmlearn does).
    transmat_prior : float or array-like, default=1.0
        The Dirichlet concentration of each transition row.
    weights_prior : float or array-like, default=1.0
        The Dirichlet concentration of the mixture weights.
    means_prior : float or array-like, default=0.0
        The prior mean of the components' means.
    means_weight : float, default=0.0
        Its weight (a single number here).
    covars_prior : float or array-like or None, default=None
        The covariance prior of hmmlearn; None: its default for the covariance type (diag
        -1.5, spherical -(n_mix + 2)/2, full and tied 0).
    covars_weight : float or None, default=None
        The weight of that prior; None: its default (diag and spherical 0, full
        -(n_features + 2), tied -(n_mix + n_features + 1)).
    algorithm : {"viterbi", "map"}, default="viterbi"
        The decoder of :meth:`decode` and :meth:`predict`.
    covariance_type : {"spherical", "diag", "full", "tied"}, default="diag"
        The form of the covariances (tied: one matrix per state, shared by its components).
    random_state : int, numpy.random.RandomState or None, default=None
        Seeds hmmlearn's own initialisation draws and :meth:`sample`.
    n_iter : int, default=10
        The maximum number of EM iterations.
    tol : float, default=1e-2
        EM stops when an iteration improves the log-likelihood by less than this.
    verbose : bool, default=False
        Print each iteration's log-likelihood to stderr.
    params : str, default="stmcw"
        The parameters EM updates: ``s``, ``t``, ``m``, ``c``, ``w`` weights.
    init_params : str, default="stmcw"
        The parameters ``fit`` initialises.
    implementation : {"log", "scaling"}, default="log"
        Accepted for compatibility and ignored: hiddenstate always uses its scaled kernels.

    Attributes
    ----------
    n_features : int
        The number of features.
    monitor_ : ConvergenceMonitor
        The log-likelihood of every EM iteration.
    startprob_ : ndarray of shape (n_components,)
        The initial state distribution.
    transmat_ : ndarray of shape (n_components, n_components)
        The transition matrix.
    weights_ : ndarray of shape (n_components, n_mix)
        The mixture weights.
    means_ : ndarray of shape (n_components, n_mix, n_features)
        The components' means.
    covars_ : ndarray
        hmmlearn's shapes: ``(n_components, n_mix)`` (spherical), ``(n_components, n_mix,
        n_features)`` (diag), ``(n_components, n_mix, n_features, n_features)`` (full) or
        ``(n_components, n_features, n_features)`` (tied).

    See Also
    --------
    hiddenstate.HMM : The native estimator (``emission="gmm"``).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.compat import hmmlearn as hmm
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(0, 1, (100, 1)), rng.normal(5, 1, (100, 1))])
    >>> model = hmm.GMMHMM(n_components=2, n_mix=2, random_state=0).fit(X)
    >>> model.weights_.shape, model.means_.shape
    ((2, 2), (2, 2, 1))
    """

    emission = "gmm"
    _letters = "stmcw"

    def __init__(self, n_components=1, n_mix=1, min_covar=1e-3, startprob_prior=1.0,
                 transmat_prior=1.0, weights_prior=1.0, means_prior=0.0, means_weight=0.0,
                 covars_prior=None, covars_weight=None, algorithm="viterbi",
                 covariance_type="diag", random_state=None, n_iter=10, tol=1e-2,
                 verbose=False, params="stmcw", init_params="stmcw", implementation="log"):
        self.n_components = n_components
        self.n_mix = n_mix
        self.min_covar = min_covar
        self.startprob_prior = startprob_prior
        self.transmat_prior = transmat_prior
        self.weights_prior = weights_prior
        self.means_prior = means_prior
        self.means_weight = means_weight
        self.covars_prior = covars_prior
        self.covars_weight = covars_weight
        self.algorithm = algorithm
        self.covariance_type = covariance_type
        self.random_state = random_state
        self.n_iter = n_iter
        self.tol = tol
        self.verbose = verbose
        self.params = params
        self.init_params = init_params
        self.implementation = implementation
        self.monitor_ = ConvergenceMonitor(tol, n_iter, verbose)

    def check_hyperparameters(self) -> None:
        super().check_hyperparameters()
        check_choice(self.covariance_type, "covariance_type", COVARIANCE_TYPES)
        check_positive_int(self.n_mix, "n_mix")
        check_number(self.min_covar, "min_covar", minimum=0.0)

    def _hmmlearn_covar_priors(self) -> tuple:
        """``(covars_prior, covars_weight)`` with hmmlearn's defaults filled in
        (``GMMHMM._init_covar_priors``)."""
        D, M, ct = self.n_features, self.n_mix, self.covariance_type
        defaults = {"full": (0.0, -(1.0 + D + 1.0)), "tied": (0.0, -(M + D + 1.0)),
                    "diag": (-1.5, 0.0), "spherical": (-(M + 2.0) / 2.0, 0.0)}[ct]
        cp = defaults[0] if self.covars_prior is None else self.covars_prior
        cw = defaults[1] if self.covars_weight is None else self.covars_weight
        return cp, cw

    @staticmethod
    def _single(value, name: str) -> float:
        arr = broadcast_param(name, value, None)
        if arr.size != 1 and not np.all(arr == arr.reshape(-1)[0]):
            raise InvalidInputError(
                f"{name}: per-component values are not supported by the compat GMMHMM; pass "
                "a single number")
        return float(arr.reshape(-1)[0])

    def _family_kwargs(self) -> dict:
        r"""hmmlearn's GMMHMM M-step in the Gaussian family's parameterisation
        (numerator :math:`\Psi + \lambda dd^\top + \text{scatter}`, denominator
        :math:`\max(\nu - D', 0) + n`): diag (inverse gamma, :math:`\alpha` =
        ``covars_prior``, :math:`\beta` = ``covars_weight``): :math:`\Psi = 2\beta`,
        :math:`\nu = 2\alpha + 4`; spherical: :math:`\Psi = 2\beta/D`,
        :math:`\nu = 2 + (2\alpha + 2)/D`; full: :math:`\Psi` = ``covars_prior``,
        :math:`\nu` = ``covars_weight`` + 2D + 2; tied: :math:`\nu` = ``covars_weight`` +
        ``n_mix`` + 2D + 1."""
        kwargs = {"covariance_type": self.covariance_type, "min_covar": self.min_covar,
                  "n_mix": self.n_mix,
                  "weights_prior": _as_prior(self.weights_prior, "weights_prior"),
                  "means_prior": _as_prior(self.means_prior, "means_prior"),
                  "means_weight": self._single(self.means_weight, "means_weight")}
        D = getattr(self, "n_features", None)
        if D is None:  # before the data are seen: the likelihood does not use the priors
            return kwargs
        cp, cw = self._hmmlearn_covar_priors()
        ct = self.covariance_type
        if ct == "diag":
            psi, nu = 2.0 * self._single(cw, "covars_weight"), 2.0 * self._single(
                cp, "covars_prior") + 4.0
        elif ct == "spherical":
            psi = 2.0 * self._single(cw, "covars_weight") / D
            nu = 2.0 + (2.0 * self._single(cp, "covars_prior") + 2.0) / D
        else:
            psi = _as_prior(cp, "covars_prior")
            nu = self._single(cw, "covars_weight") + 2.0 * D + (
                2.0 if ct == "full" else 1.0 + self.n_mix)
        kwargs.update(covars_prior=psi, covars_weight=nu)
        return kwargs

    def _check_priors(self, n_features: int, n_emission_states: int) -> None:
        K = n_emission_states
        prior_array("startprob_prior", self.startprob_prior, (K,))
        prior_array("transmat_prior", self.transmat_prior, (K, K))
        prior_array("weights_prior", self.weights_prior, (K, self.n_mix))
        self.emission_family(n_features).check_point_priors("em")

    @property
    def covars_(self) -> np.ndarray:
        """Covariances in hmmlearn's GMMHMM shape for ``covariance_type``."""
        if not hasattr(self, "_covars_"):
            raise AttributeError("covars_")
        return self._covars_

    @covars_.setter
    def covars_(self, value) -> None:
        self._covars_ = np.array(value, dtype=np.float64, copy=True)

    def _get_n_fit_scalars_per_param(self):
        out = super()._get_n_fit_scalars_per_param()
        K, M, D = self.n_components, self.n_mix, self.n_features
        out["m"] = K * M * D
        out["c"] = {"spherical": K * M, "diag": K * M * D, "full": K * M * D * (D + 1) // 2,
                    "tied": K * D * (D + 1) // 2}[self.covariance_type]
        out["w"] = K * (M - 1)
        return out

    def _init_emissions(self, X) -> None:
        """hmmlearn's ``GMMHMM._init``: k-means with ``n_components`` clusters, then
        ``n_mix`` means by k-means within each (a cluster with fewer points than ``n_mix``
        draws its means around the centroid from NumPy's global generator, as hmmlearn
        does), uniform weights, every covariance the data's covariance plus
        ``min_covar``."""
        K, M, D = self.n_components, self.n_mix, self.n_features
        if len(X) < K:
            raise InvalidInputError(
                f"X: {len(X)} samples cannot initialise {K} states by k-means; pass more "
                "data, or set the parameters and remove 'mcw' from init_params")

        def compute_cv():
            return np.atleast_2d(np.cov(X.T)) + self.min_covar * np.eye(D)

        main = cluster.KMeans(n_clusters=K, random_state=self.random_state, n_init=10)
        labels = main.fit_predict(X)
        centroid = np.mean(main.cluster_centers_, axis=0)
        cv = None
        means = []
        for label in range(K):
            X_cluster = X[labels == label]
            if len(X_cluster) >= M:
                km = cluster.KMeans(n_clusters=M, random_state=self.random_state, n_init=10)
                km.fit(X_cluster)
                means.append(km.cluster_centers_)
            else:
                cv = compute_cv() if cv is None else cv
                # hmmlearn draws these from the global generator
                means.append(np.random.multivariate_normal(  # noqa: NPY002
                    centroid, cov=cv, size=M))
        if self._needs_init("w", "weights_"):
            self.weights_ = np.full((K, M), 1.0 / M)
        if self._needs_init("m", "means_"):
            self.means_ = np.stack(means)
        if self._needs_init("c", "covars_"):
            cv = compute_cv() if cv is None else cv
            ct = self.covariance_type
            shape = {"tied": (K, D, D), "full": (K, M, D, D), "diag": (K, M, D),
                     "spherical": (K, M)}[ct]
            fill = {"tied": cv, "full": cv, "diag": np.diag(cv), "spherical": cv.mean()}[ct]
            covars = np.zeros(shape)
            covars[:] = fill
            self.covars_ = covars

    def _check_emissions(self) -> None:
        if self.covariance_type not in COVARIANCE_TYPES:
            raise InvalidInputError(
                f"covariance_type: {self.covariance_type!r} is not one of {COVARIANCE_TYPES}")
        means = np.asarray(self._attr("means_"), dtype=np.float64)
        if means.ndim != 3 or means.shape[:2] != (self.n_components, self.n_mix):
            raise InvalidInputError(
                f"means_: expected shape (n_components, n_mix, n_features) with "
                f"n_components={self.n_components}, n_mix={self.n_mix}, got {means.shape}")
        self.n_features = means.shape[2]
        checked = self.emission_family(self.n_features).check_params(
            {"weights": np.atleast_2d(np.asarray(self._attr("weights_"), dtype=np.float64)),
             "means": means, "covars": self._attr("_covars_")})
        self.weights_ = _check_dist(checked["weights"], (self.n_components, self.n_mix),
                                    "weights_")
        self.means_ = checked["means"]
        self._covars_ = checked["covars"]

    def _sampler(self):
        weights, means, covars = self.weights_, self.means_, self._covars_
        K, M, D, ct = self.n_components, self.n_mix, self.n_features, self.covariance_type

        def draw(state, random_state):
            comp = random_state.choice(M, p=weights[state])
            if ct == "tied":
                cov = covars[state]
            else:
                cov = full_covars(covars[:, comp], ct, K, D)[state]
            return random_state.multivariate_normal(means[state, comp], cov)
        return draw


class MultinomialHMM(_EmissionRows, _HmmlearnHMM):
    """Hidden Markov model with multinomial emissions: hmmlearn 0.3's MultinomialHMM.

    Each sample is a vector of counts over ``n_features`` categories from ``n_trials``
    trials, ``X`` of shape ``(n_samples, n_features)``.

    Parameters
    ----------
    n_components : int, default=1
        The number of hidden states.
    n_trials : int or None, default=None
        The number of trials per sample; None: ``fit`` sets it to the rows' totals (an
        array, as hmmlearn does). Sampling needs a single number.
    startprob_prior : float or array-like, default=1.0
        The Dirichlet concentration of the initial distribution (the M-step adds
        ``startprob_prior - 1`` to the counts, as hmmlearn does).
    transmat_prior : float or array-like, default=1.0
        The Dirichlet concentration of each transition row.
    algorithm : {"viterbi", "map"}, default="viterbi"
        The decoder of :meth:`decode` and :meth:`predict`.
    random_state : int, numpy.random.RandomState or None, default=None
        Seeds hmmlearn's own initialisation draws (the same seed gives hmmlearn's starting
        point) and :meth:`sample`.
    n_iter : int, default=10
        The maximum number of EM iterations.
    tol : float, default=1e-2
        EM stops when an iteration improves the log-likelihood by less than this.
    verbose : bool, default=False
        Print each iteration's log-likelihood to stderr (the monitor's ``report``).
    params : str, default="ste"
        The parameters EM updates: ``s``, ``t``, ``e`` emissions.
    init_params : str, default="ste"
        The parameters ``fit`` initialises.
    implementation : {"log", "scaling"}, default="log"
        Accepted for compatibility and ignored: hiddenstate always uses its scaled kernels.

    Attributes
    ----------
    n_features : int
        The number of categories.
    monitor_ : ConvergenceMonitor
        The log-likelihood of every EM iteration.
    startprob_ : ndarray of shape (n_components,)
        The initial state distribution.
    transmat_ : ndarray of shape (n_components, n_components)
        The transition matrix.
    emissionprob_ : ndarray of shape (n_components, n_features)
        The category probabilities of each state.

    See Also
    --------
    hiddenstate.HMM : The native estimator (``emission="multinomial"``).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.compat import hmmlearn as hmm
    >>> X = np.random.default_rng(0).multinomial(3, [0.2, 0.3, 0.5], size=40)
    >>> hmm.MultinomialHMM(n_components=2, n_trials=3, random_state=0).fit(X).emissionprob_.shape
    (2, 3)
    """

    emission = "multinomial"
    _letters = "ste"

    def __init__(self, n_components=1, n_trials=None, startprob_prior=1.0, transmat_prior=1.0,
                 algorithm="viterbi", random_state=None, n_iter=10, tol=1e-2, verbose=False,
                 params="ste", init_params="ste", implementation="log"):
        self.n_components = n_components
        self.n_trials = n_trials
        self.startprob_prior = startprob_prior
        self.transmat_prior = transmat_prior
        self.algorithm = algorithm
        self.random_state = random_state
        self.n_iter = n_iter
        self.tol = tol
        self.verbose = verbose
        self.params = params
        self.init_params = init_params
        self.implementation = implementation
        self.monitor_ = ConvergenceMonitor(tol, n_iter, verbose)

    def _family_kwargs(self) -> dict:
        # n_trials is checked by _check_and_set_n_features (fit), as hmmlearn does
        return {"n_trials": None, "emissionprob_prior": 1.0}

    def _check_and_set_n_features(self, X) -> None:
        super()._check_and_set_n_features(X)
        totals = np.asarray(X).sum(axis=1)
        if self.n_trials is None:
            self.n_trials = totals
        elif not np.all(totals == self.n_trials):
            raise InvalidInputError(
                "X: the total count of every sample should add up to n_trials "
                f"({self.n_trials!r:.40}); pass n_trials=None to take each row's total")

    def _check_emissions(self) -> None:
        B = np.atleast_2d(np.asarray(self._attr("emissionprob_"), dtype=np.float64))
        n_features = getattr(self, "n_features", None) or B.shape[1]
        if B.shape != (self.n_components, n_features):
            raise InvalidInputError(
                f"emissionprob_: expected shape (n_components, n_features) = "
                f"{(self.n_components, n_features)}, got {B.shape}")
        self.n_features = n_features
        if self.n_trials is None:
            raise InvalidInputError(
                "n_trials: must be set (an int, or fit with n_trials=None to take each row's "
                "total)")
        self.emissionprob_ = _check_dist(B, (self.n_components, n_features), "emissionprob_")

    def _sampler(self):
        from scipy.stats import multinomial

        trials = np.unique(np.asarray(self.n_trials))
        if trials.size != 1:
            raise InvalidInputError(
                f"n_trials: sampling needs a single number of trials, got {trials.size} "
                "different values; set n_trials to an int")
        n, B = int(trials[0]), self.emissionprob_

        def draw(state, random_state):
            return multinomial.rvs(n=n, p=B[state], random_state=random_state)
        return draw


def _check_seed(random_state) -> None:
    """What hmmlearn's ``check_random_state`` takes: None, an int in [0, 2**32) or a
    ``numpy.random.RandomState`` (raised as InvalidInputError, a ValueError)."""
    if random_state is None or isinstance(random_state, np.random.RandomState):
        return
    if isinstance(random_state, (int, np.integer)) and not isinstance(
            random_state, (bool, np.bool_)) and 0 <= random_state < 2**32:
        return
    raise InvalidInputError(
        f"random_state: expected None, an int in [0, 2**32) or a numpy.random.RandomState "
        f"(hmmlearn's convention), got {random_state!r:.40}")


def _validate_covars(covars: np.ndarray, covariance_type: str, n_components: int):
    """hmmlearn's covariance checks (at assignment), raising InvalidInputError; spherical
    covariances are stored as ``(n_components,)``."""
    if covariance_type == "spherical":
        if covars.ndim == 0 or len(covars) != n_components:
            raise InvalidInputError(
                f"covars_: 'spherical' covars have length n_components={n_components}")
        flat = covars.reshape(n_components, -1)
        if flat.shape[1] == 0 or not np.all(flat == flat[:, :1]):
            raise InvalidInputError(
                "covars_: 'spherical' covars hold one variance per state, shape "
                "(n_components,)")
        covars = flat[:, 0].copy()
        if np.any(covars <= 0) or not np.all(np.isfinite(covars)):
            raise InvalidInputError("covars_: 'spherical' covars must be positive")
    elif covariance_type == "tied":
        if covars.ndim != 2 or covars.shape[0] != covars.shape[1]:
            raise InvalidInputError("covars_: 'tied' covars must have shape (n_dim, n_dim)")
        if not np.all(np.isfinite(covars)) or not np.allclose(covars, covars.T) \
                or np.any(linalg.eigvalsh(covars) <= 0):
            raise InvalidInputError("covars_: 'tied' covars must be symmetric, "
                                    "positive-definite")
    elif covariance_type == "diag":
        if covars.ndim != 2:
            raise InvalidInputError("covars_: 'diag' covars must have shape "
                                    "(n_components, n_dim)")
        if np.any(covars <= 0) or not np.all(np.isfinite(covars)):
            raise InvalidInputError("covars_: 'diag' covars must be positive")
    elif covariance_type == "full":
        if covars.ndim != 3 or covars.shape[1] != covars.shape[2]:
            raise InvalidInputError("covars_: 'full' covars must have shape "
                                    "(n_components, n_dim, n_dim)")
        for n, cv in enumerate(covars):
            if not np.all(np.isfinite(cv)) or not np.allclose(cv, cv.T) \
                    or np.any(linalg.eigvalsh(cv) <= 0):
                raise InvalidInputError(
                    f"covars_: component {n} of 'full' covars must be symmetric, "
                    "positive-definite")
    else:
        raise InvalidInputError(
            f"covariance_type: {covariance_type!r} is not one of {COVARIANCE_TYPES}")
    return covars

r"""The regression HMM estimator, :class:`RegressionHMM`: HMMs whose emissions, and
optionally transitions, are regressions on inputs (covariates) and on lagged observations.

One estimator covers the switching linear regression (dynamax ``LinearRegressionHMM``,
statsmodels ``MarkovRegression``), the autoregressive HMM (``n_lags``; dynamax
``LinearAutoregressiveHMM``), the GLM-HMM (``emission="logistic"``; dynamax
``LogisticRegressionHMM``, ``CategoricalRegressionHMM``) and the input-output HMM
(``transitions="softmax"``; statsmodels' time-varying transition probabilities), with every
batch learning mode of :func:`hiddenstate.learn.fit_restarts`. It is a separate estimator
rather than more ``emission=`` values of :class:`~hiddenstate.HMM` because its data contract
differs (``inputs=`` aligned with ``X`` in every method, the first ``n_lags`` rows of a
sequence conditioned on, a time-varying chain) while the parts it shares with the HMM are
the layers below: the families (:class:`~hiddenstate.families.LinearRegressionEmissions`,
:class:`~hiddenstate.families.LogisticEmissions`,
:class:`~hiddenstate.families.SoftmaxTransitions`), the HMM's own Problem for fixed
transitions (:class:`~hiddenstate.models.hmm.HMMProblem`), the inference functions and the
learner.

The module's hooks (``check_hyperparameters``, ``validate_data``, ``resolve_n_features``,
``emission_family``, ``problem``, ``fit_problem``, ``check_fit_memory``) are those of
:mod:`hiddenstate.models.hmm.estimator`, so :func:`hiddenstate.distributed.fit` runs a
model without inputs (an AR-HMM) on a Dask cluster; inputs do not travel with its
partitions, so a model that needs them is refused there.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..._sklearn_base import BaseEstimator
from ..._validation import (
    broadcast_param,
    check_choice,
    check_lengths,
    check_memory,
    check_number,
    check_positive_int,
    check_random_state,
    check_real_X,
    check_stochastic,
    check_symbols,
    make_rng,
)
from ...errors import InvalidInputError, NotFittedError
from ...families import LinearRegressionEmissions, LogisticEmissions, SoftmaxTransitions
from ...inference import Sequences
from ...learn import MODES, fit_restarts
from .. import _learned
from .._learned import LearnedArray
from ..hmm.init import persistence
from ..hmm.priors import column_means, prior_array, prior_in_force
from ..hmm.problem import HMMProblem
from . import design as layout
from .problem import InputDrivenProblem
from .queries import RegressionQueries

EMISSIONS = ("linear", "logistic")
TRANSITIONS = ("fixed", "softmax")
#: the letters of ``init_params`` / ``params``: startprob, transitions, regression
#: coefficients (``coef_``, ``intercept_``), covariances
LETTERS = "strc"
#: the priors; flat values (maximum likelihood), and the defaults of the other modes
_FLAT = {"coef_prior": 0.0, "coef_weight": 0.0, "transition_coef_weight": 0.0}
_DEFAULT = {"coef_prior": 0.0, "coef_weight": 1e-2, "transition_coef_weight": 1e-2}
_HMM_PRIORS = ("startprob_prior", "transmat_prior", "covars_prior", "covars_weight")
_PRIORS = _HMM_PRIORS + tuple(_FLAT)
#: VB posterior attributes' suffix (as the HMM's)
_POSTERIOR = "_posterior_"


class RegressionHMM(RegressionQueries, BaseEstimator):
    r"""HMM with regression emissions and optionally input-driven transitions.

    .. math::
        p(y, z \mid u) = \pi_{z_0} \prod_{t \ge 1} A_t(z_{t-1}, z_t)
                         \prod_t p(y_t \mid z_t, \phi_t), \qquad
        \phi_t = [u_t,\ y_{t-1}, \dots, y_{t-p},\ 1]

    - ``emission="linear"``: :math:`y_t \sim N(W_{z_t}\phi_t, \Sigma_{z_t})`, a switching
      linear regression on the inputs :math:`u_t`; with ``n_lags = p > 0`` an autoregressive
      HMM (AR-HMM). EM is weighted least squares; MAP and VB use the matrix-normal
      inverse-Wishart prior (:mod:`hiddenstate.families.regression`).
    - ``emission="logistic"``: :math:`P(y_t = c) = \mathrm{softmax}(W_{z_t}\phi_t)_c` for
      categories ``0 .. C - 1`` (the GLM-HMM; ``C = 2`` is Bernoulli logistic regression),
      fitted by an exact Newton (IRLS) M-step (:mod:`hiddenstate.families.logistic`).
    - ``transitions="softmax"``: :math:`A_t(i, j) \propto A_{ij}\exp(w_{ij}^\top u_t)`,
      the input-output HMM (Bengio & Frasconi 1995), by a Newton M-step per row
      (:class:`~hiddenstate.families.SoftmaxTransitions`); ``"fixed"``: :math:`A_t = A`.

    The Newton M-steps accept only steps that raise their objective, so every mode is a
    generalised EM whose objective never decreases. ``learn="vb"`` needs the conjugate
    linear emissions and fixed transitions; ``"kvt"`` needs fixed transitions.

    The first ``n_lags`` observations of each sequence are conditioned on (they are the
    first lags; the chain starts at row ``n_lags``, and ``startprob_`` is the distribution
    of that state), as statsmodels' ``MarkovRegression`` on lagged regressors: per-row
    outputs keep one row per observation, NaN (probabilities) or -1 (states) in the rows
    conditioned on.

    Parameters
    ----------
    n_states : int, default=2
        The number of hidden states K.
    emission : {"linear", "logistic"}, default="linear"
        The emission family.
    n_lags : int, default=0
        The lagged observations in the design (``emission="linear"`` only).
    transitions : {"fixed", "softmax"}, default="fixed"
        A fixed transition matrix, or a softmax regression on the inputs.
    fit_intercept : bool, default=True
        Whether each state's regression has an intercept (``intercept_``).
    emission_inputs : sequence of int or None, default=None
        The columns of ``inputs`` the emissions regress on; None: every column.
    transition_inputs : sequence of int or None, default=None
        The columns of ``inputs`` the softmax transitions regress on; None: every column.
    n_iter : int, default=100
        The most iterations of a run.
    tol : float, default=1e-4
        EM, MAP and VB stop when an iteration gains less than ``tol`` nats per modelled
        observation (``-inf``: never); VT ignores it (see
        :func:`hiddenstate.learn.fit_restarts`).
    n_init : int, default=1
        The restarts; the run with the highest final objective is kept.
    init_params : str, default="strc"
        The letters ``fit`` initialises (``s`` startprob, ``t`` transitions, ``r``
        regression coefficients and intercepts, ``c`` covariances); the others must be set.
        Replacing a parameter set by hand warns
        (:class:`~hiddenstate.errors.ParameterOverwriteWarning`), as the HMM does.
    params : str, default="strc"
        The letters the batch modes update.
    min_covar : float, default=1e-3
        The floor of the covariance eigenvalues (linear), applied with a warning.
    random_state : int, numpy.random.Generator or None, default=None
        The seed of the initialisation, the restarts and the samplers.
    verbose : bool, default=False
        Print the objective of every iteration.
    learn : {"em", "map", "vb", "vt", "kvt"}, default="em"
        The learning mode (:mod:`hiddenstate.learn`). ``"gibbs"`` is refused, naming the
        blocks without a conjugate posterior draw (logistic emissions, softmax
        transitions; for linear emissions the draw is not written yet).
    k_best : int, default=1
        The paths of ``learn="kvt"``.
    startprob_prior, transmat_prior : float, array-like or None, default=None
        Dirichlet concentrations of the initial distribution and of the transition rows
        (softmax transitions: of the transitions at inputs 0), as in
        :class:`~hiddenstate.HMM`.
    coef_prior : float, array-like or None, default=None
        The prior mean of ``coef_`` (linear; the intercepts' prior mean is the data mean).
    coef_weight : float, array-like or None, default=None
        The prior precision of the regression coefficients (linear: :math:`\Lambda_0` of the
        MNIW prior, a scalar, ``(P,)`` or ``(P, P)``; logistic: of a zero-mean Gaussian).
        None: 0 for ``"em"``, 1e-2 otherwise.
    covars_prior, covars_weight : float, array-like or None, default=None
        The inverse-Wishart scale and weight of the covariances (linear), as in
        :class:`~hiddenstate.HMM`.
    transition_coef_weight : float or None, default=None
        The prior precision of ``transition_coef_`` (softmax transitions).

    Attributes
    ----------
    startprob_ : ndarray of shape (n_states,)
        The initial distribution.
    transmat_ : ndarray of shape (n_states, n_states)
        The transition matrix (softmax transitions: at inputs 0).
    transition_coef_ : ndarray of shape (n_states, n_states, n_transition_inputs)
        Softmax transitions: the change in log-odds of moving from ``i`` to ``j`` rather
        than staying, per unit of input (``transition_coef_[i, i] = 0``).
    coef_ : ndarray of shape (n_states, n_features, n_regressors)
        The regression coefficients, columns ``[inputs | lag 1 | ... | lag p]`` (the
        ``emission_inputs``, then each lag ``n_features`` wide); logistic: ``(n_states,
        n_categories, n_emission_inputs)``, category 0 the reference (zeros).
    intercept_ : ndarray of shape (n_states, n_features)
        The intercepts (logistic: ``(n_states, n_categories)``).
    covars_ : ndarray of shape (n_states, n_features, n_features)
        The noise covariances (linear).
    n_features_ : int
        The observation dimension (logistic: the number of categories).
    n_inputs_ : int
        The number of inputs.
    monitor_ : hiddenstate.learn.ConvergenceMonitor
        The objective of every iteration.

    See Also
    --------
    hiddenstate.HMM : Emissions that do not depend on inputs.

    Examples
    --------
    A two-regime regression, fitted from sampled data:

    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> teacher = hs.RegressionHMM(2)
    >>> teacher.startprob_, teacher.transmat_ = [0.5, 0.5], [[0.95, 0.05], [0.05, 0.95]]
    >>> teacher.coef_ = np.array([[[2.0]], [[-1.0]]])
    >>> teacher.intercept_ = np.array([[0.0], [3.0]])
    >>> teacher.covars_ = np.full((2, 1, 1), 0.25)
    >>> u = np.random.default_rng(0).normal(size=(2000, 1))
    >>> X, states = teacher.sample(2000, random_state=1, inputs=u)
    >>> model = hs.RegressionHMM(2, random_state=0, n_init=3).fit(X, inputs=u)
    >>> np.sort(model.coef_.ravel()).round(1)
    array([-1.,  2.])
    """

    startprob_ = LearnedArray()
    transmat_ = LearnedArray()
    transition_coef_ = LearnedArray()
    coef_ = LearnedArray()
    intercept_ = LearnedArray()
    covars_ = LearnedArray()

    def __init__(self, n_states: int = 2, *, emission: str = "linear", n_lags: int = 0,
                 transitions: str = "fixed", fit_intercept: bool = True,
                 emission_inputs=None, transition_inputs=None, n_iter: int = 100,
                 tol: float = 1e-4, n_init: int = 1, init_params: str = LETTERS,
                 params: str = LETTERS, min_covar: float = 1e-3, random_state=None,
                 verbose: bool = False, learn: str = "em", k_best: int = 1,
                 startprob_prior=None, transmat_prior=None, coef_prior=None,
                 coef_weight=None, covars_prior=None, covars_weight=None,
                 transition_coef_weight=None):
        self.n_states = n_states
        self.emission = emission
        self.n_lags = n_lags
        self.transitions = transitions
        self.fit_intercept = fit_intercept
        self.emission_inputs = emission_inputs
        self.transition_inputs = transition_inputs
        self.n_iter = n_iter
        self.tol = tol
        self.n_init = n_init
        self.init_params = init_params
        self.params = params
        self.min_covar = min_covar
        self.random_state = random_state
        self.verbose = verbose
        self.learn = learn
        self.k_best = k_best
        self.startprob_prior = startprob_prior
        self.transmat_prior = transmat_prior
        self.coef_prior = coef_prior
        self.coef_weight = coef_weight
        self.covars_prior = covars_prior
        self.covars_weight = covars_weight
        self.transition_coef_weight = transition_coef_weight

    # -- hyper-parameters --------------------------------------------------------------------
    def check_hyperparameters(self) -> None:
        """**Hook.** Validate the hyper-parameters (errors name them).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a hyper-parameter is invalid, or the combination has no learner (VB with
            logistic emissions or softmax transitions, k-best VT with softmax transitions).
        """
        check_positive_int(self.n_states, "n_states")
        check_choice(self.emission, "emission", EMISSIONS)
        check_positive_int(self.n_lags, "n_lags", minimum=0)
        check_choice(self.transitions, "transitions", TRANSITIONS)
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise InvalidInputError(
                f"fit_intercept: expected True or False, got {self.fit_intercept!r:.40}")
        check_positive_int(self.n_iter, "n_iter")
        check_positive_int(self.n_init, "n_init")
        check_number(self.tol, "tol", finite=False)
        check_number(self.min_covar, "min_covar", minimum=0.0)
        check_random_state(self.random_state)
        check_positive_int(self.k_best, "k_best")
        if not isinstance(self.verbose, (bool, int, np.bool_, np.integer)):
            raise InvalidInputError(f"verbose: expected True or False, got {self.verbose!r:.40}")
        for name in ("emission_inputs", "transition_inputs"):
            _check_columns(getattr(self, name), name)
        if self.transitions == "fixed" and self.transition_inputs is not None:
            raise InvalidInputError(
                "transition_inputs: only used by transitions='softmax'; drop it")
        for name in ("init_params", "params"):
            letters = getattr(self, name)
            if not isinstance(letters, str) or set(letters) - set(LETTERS):
                raise InvalidInputError(
                    f"{name}: expected a string of letters from {LETTERS!r}, got {letters!r}")
        if self.learn not in MODES:
            raise InvalidInputError(
                f"learn: {self.learn!r} is not one of {list(MODES)} (RegressionHMM has the "
                "batch modes; the streaming learners are hs.HMM's)")
        if self.learn == "gibbs":
            raise InvalidInputError(self._no_gibbs())
        if self.emission == "logistic" and self.n_lags:
            raise InvalidInputError(
                "n_lags: lagged observations are regressors of emission='linear' only; pass "
                "lagged categories as inputs (one-hot) for a logistic model")
        if self.learn == "vb" and self.emission == "logistic":
            raise InvalidInputError(
                "learn: 'vb' needs a conjugate prior, which emission='logistic' does not "
                "have; use 'em', 'map' or 'vt'")
        if self.learn == "vb" and self.transitions == "softmax":
            raise InvalidInputError(
                "learn: 'vb' is not available with transitions='softmax' (a softmax "
                "regression has no conjugate prior); use 'em', 'map' or 'vt'")
        if self.learn == "kvt" and self.transitions == "softmax":
            raise InvalidInputError(
                "learn: 'kvt' is not available with transitions='softmax' (k-best paths of a "
                "time-varying chain are not implemented); use 'vt', 'em' or 'map'")
        if self.emission == "logistic":
            given = [n for n in ("coef_prior", "covars_prior", "covars_weight")
                     if getattr(self, n) is not None]
            if given:
                raise InvalidInputError(
                    f"{given[0]}: not used by emission='logistic' (its prior is a zero-mean "
                    "Gaussian of precision coef_weight); drop it")
        if self.transitions == "fixed" and self.transition_coef_weight is not None:
            raise InvalidInputError(
                "transition_coef_weight: only used by transitions='softmax'; drop it")
        if self.learn == "em":
            given = [n for n in _PRIORS if getattr(self, n) is not None]
            if given:
                raise InvalidInputError(
                    f"{given[0]}: priors are not used by learn='em' (maximum likelihood); "
                    "use learn='map', 'vb' or 'vt', or drop the prior")

    def _no_gibbs(self) -> str:
        """Why ``learn="gibbs"`` is refused, naming the blocks without a conjugate draw and
        what to use instead."""
        blocks = []
        if self.emission == "logistic":
            blocks.append("the logistic-regression emissions (a softmax of the regressors) "
                          "have no conjugate prior")
        if self.transitions == "softmax":
            blocks.append("the softmax transitions (a regression of each row on the "
                          "inputs) have no conjugate prior")
        if not blocks:
            blocks.append("the linear-regression emissions have a conjugate prior "
                          "(matrix-normal inverse-Wishart, which learn='vb' uses), but no "
                          "posterior draw is written for it yet, nor a draw of the hidden "
                          "paths on RegressionHMM's Problem")
        instead = ("learn='vb' (a factorised posterior, with its *_posterior_ attributes) "
                   "or learn='map'" if self.emission == "linear"
                   and self.transitions == "fixed" else
                   "learn='map' (a point estimate under the priors; learn='vb' needs linear "
                   "emissions and fixed transitions)")
        return (f"learn: 'gibbs' draws every learned block from its conjugate posterior, and "
                f"in this RegressionHMM {' and '.join(blocks)}; use {instead}")

    def _check_hyper(self) -> None:
        """:meth:`check_hyperparameters` under the name every model's loader calls."""
        self.check_hyperparameters()

    def prior(self, name: str):
        """**Hook.** Return the prior hyper-parameter ``name`` in force for the mode.

        Flat for ``"em"``; as set, else the mode's default (the HMM's for the Dirichlet and
        covariance priors, :mod:`hiddenstate.models.hmm.priors`).

        Parameters
        ----------
        name : str
            The prior's name.

        Returns
        -------
        float, ndarray or None
            The value in force.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> hs.RegressionHMM(learn="map").prior("coef_weight")
        0.01
        """
        if name in _HMM_PRIORS:
            return prior_in_force(self.learn, name, getattr(self, name))
        if self.learn == "em":
            return _FLAT[name]
        value = getattr(self, name)
        return _DEFAULT[name] if value is None else value

    def _check_priors(self, n_features: int, n_inputs: int) -> None:
        """The priors in force, checked when fitting (errors name them)."""
        if self.learn == "em":
            return
        K = self.n_states
        vb = self.learn == "vb"
        for name, shape in (("startprob_prior", (K,)), ("transmat_prior", (K, K))):
            alpha = prior_array(name, self.prior(name), shape)
            if vb and not np.all(alpha > 0):
                raise InvalidInputError(
                    f"{name}: learn='vb' needs every concentration > 0; pass e.g. {name}=1.0")
            if not vb and not np.all(alpha >= 1):
                raise InvalidInputError(
                    f"{name}: learn={self.learn!r} needs Dirichlet concentrations >= 1 (below "
                    "1 the posterior has no mode); use >= 1, or learn='vb'")
        P = self._n_regressors(n_features, n_inputs) + int(self.fit_intercept)
        weight = broadcast_param("coef_weight", self.prior("coef_weight"), None)
        if not (weight.shape in ((), (P,), (P, P)) and np.all(np.isfinite(weight))):
            raise InvalidInputError(
                f"coef_weight: expected a number, a ({P},) diagonal or a ({P}, {P}) "
                f"precision, got shape {weight.shape}")
        mat = weight * np.eye(P) if weight.ndim == 0 else (
            np.diag(weight) if weight.ndim == 1 else weight)
        if not (np.allclose(mat, mat.T) and np.linalg.eigvalsh(mat).min() >= -1e-12):
            raise InvalidInputError(
                "coef_weight: must be non-negative (a symmetric positive semi-definite "
                "precision); pass e.g. coef_weight=1e-2")
        if self.transitions == "softmax":
            check_number(self.prior("transition_coef_weight"), "transition_coef_weight",
                         minimum=0.0)
        if self.emission == "linear":
            D = n_features
            prior_array("coef_prior", self.prior("coef_prior"),
                        (K, D, self._n_regressors(n_features, n_inputs)))
            check_number(self.prior("covars_weight") if self.prior("covars_weight")
                         is not None else float(D), "covars_weight")
            psi = broadcast_param("covars_prior", self.prior("covars_prior"), None)
            psi = psi * np.eye(D) if psi.ndim == 0 else psi
            try:
                mats = np.broadcast_to(psi, (K, D, D))
            except ValueError:
                raise InvalidInputError(
                    f"covars_prior: expected a number, ({D}, {D}) or ({K}, {D}, {D}), got "
                    f"shape {psi.shape}") from None
            if not (np.all(np.isfinite(mats)) and np.allclose(mats, np.swapaxes(mats, 1, 2))
                    and np.linalg.eigvalsh(mats).min() >= -1e-12):
                raise InvalidInputError(
                    "covars_prior: must be symmetric positive semi-definite (it is added to "
                    "every state's residual scatter); pass e.g. covars_prior=1e-2")

    # -- shapes --------------------------------------------------------------------------------
    def _columns(self, which: str, n_inputs: int) -> np.ndarray:
        """The columns of ``inputs`` the emissions (``which="emission"``) or the
        transitions read."""
        chosen = getattr(self, f"{which}_inputs")
        if chosen is None:
            return np.arange(n_inputs)
        cols = np.asarray(chosen, dtype=np.int64).reshape(-1)
        if len(cols) and cols.max() >= n_inputs:
            raise InvalidInputError(
                f"{which}_inputs: column {int(cols.max())} does not exist; inputs has "
                f"{n_inputs} column(s)")
        return cols

    def _n_regressors(self, n_features: int, n_inputs: int) -> int:
        """Q, the emission design columns besides the intercept."""
        lags = self.n_lags * n_features if self.emission == "linear" else 0
        return len(self._columns("emission", n_inputs)) + lags

    @property
    def n_features_(self) -> int:
        """The observation dimension (logistic: the number of categories).

        Set by ``fit``; with parameters set by hand, the rows of ``coef_``.
        """
        stored = self.__dict__.get("_fitted_n_features")
        if stored is not None:
            return stored
        if _learned.has(self, "coef_"):
            return int(_learned.raw(self, "coef_").shape[1])
        raise AttributeError("n_features_")

    @n_features_.setter
    def n_features_(self, value) -> None:
        self.__dict__["_fitted_n_features"] = int(value)
        _learned.invalidate(self)

    @property
    def n_inputs_(self) -> int:
        """The number of columns of ``inputs``.

        Set by ``fit``; with parameters set by hand, from the shape of ``coef_`` (or of
        ``transition_coef_``) when a model reads every input, else the largest column of
        ``emission_inputs`` / ``transition_inputs`` plus one.
        """
        stored = self.__dict__.get("_fitted_n_inputs")
        if stored is not None:
            return stored
        has_coef = _learned.has(self, "coef_")
        has_tc = _learned.has(self, "transition_coef_")
        if has_coef and self.emission_inputs is None:
            Q = _learned.raw(self, "coef_").shape[-1]
            lags = self.n_lags * self.n_features_ if self.emission == "linear" else 0
            return int(Q - lags)
        if has_tc and self.transition_inputs is None:
            return int(_learned.raw(self, "transition_coef_").shape[-1])
        if has_coef or has_tc:
            cols = [*(self.emission_inputs or []), *(self.transition_inputs or [])]
            return int(max(cols)) + 1 if cols else 0
        raise AttributeError("n_inputs_")

    @n_inputs_.setter
    def n_inputs_(self, value) -> None:
        self.__dict__["_fitted_n_inputs"] = int(value)
        _learned.invalidate(self)

    def _emission_keys(self) -> tuple[str, ...]:
        return ("coef", "intercept", "covars") if self.emission == "linear" else (
            "coef", "intercept")

    def _parameter_attrs(self) -> list[str]:
        attrs = ["startprob_", "transmat_"]
        if self.transitions == "softmax":
            attrs.append("transition_coef_")
        return attrs + [k + "_" for k in self._emission_keys()]

    # -- the data ------------------------------------------------------------------------------
    def _design(self, X, lengths, inputs, n_features=None, n_inputs=None) -> layout.Design:
        """Validate ``X``, ``lengths`` and ``inputs`` and lay out the modelled rows."""
        if self.emission == "linear":
            y = check_real_X(X, n_features, allow_missing=True)
            miss = np.isnan(y)
            rows = miss.any(axis=1)
            if rows.any():
                partial = np.flatnonzero(rows & ~miss.all(axis=1))
                if len(partial):
                    raise InvalidInputError(
                        f"X: row {partial[0]} is partly missing (NaN); a regression HMM "
                        "takes whole missing rows only (all entries NaN): impute the entry "
                        "or mark the whole row missing")
                if self.n_lags:
                    raise InvalidInputError(
                        f"X: row {int(np.flatnonzero(rows)[0])} is missing (NaN), but with "
                        f"n_lags={self.n_lags} it is a regressor of the rows after it; split "
                        "the sequence at the gap (lengths) or fill it in")
        else:
            y = check_symbols(X, n_features, allow_missing=True)
        lengths = check_lengths(lengths, len(y))
        U = layout.check_inputs(inputs, len(y), n_inputs)
        if self.transitions == "softmax" and len(self._columns("transition", U.shape[1])) == 0:
            raise InvalidInputError(
                "inputs: transitions='softmax' regresses the transitions on the inputs; pass "
                "inputs= (or use transitions='fixed')")
        return layout.build(y, lengths, U, self.n_lags, self.fit_intercept,
                            self._columns("emission", U.shape[1]),
                            self._columns("transition", U.shape[1]))

    def validate_data(self, X, lengths, n_features, stream: bool = False,
                      continues: bool = False):
        """**Hook.** Validate data without inputs and lay out its modelled rows.

        What :func:`hiddenstate.distributed.fit` calls on every partition (which carries no
        inputs: a model that needs them is refused).

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None
            The length of each sequence.
        n_features : int or None
            The dimension (categories), None before it is known.
        stream : bool, default=False
            Not used (no streaming learner).
        continues : bool, default=False
            Not used.

        Returns
        -------
        Z : ndarray
            The modelled rows ``[y | lags | 1]``.
        seqs : hiddenstate.inference.Sequences
            Their layout.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the data are invalid, or the model needs inputs.
        """
        if isinstance(X, layout.Rows):   # laid out already
            return X, Sequences.from_lengths(check_lengths(lengths, len(X)))
        d = self._design(X, lengths, None, n_features, None)
        return d.Z.view(layout.Rows), d.seqs

    def resolve_n_features(self, X: np.ndarray | None = None):
        """**Hook.** The dimension (categories) known, or the one modelled rows imply.

        Parameters
        ----------
        X : ndarray or None, default=None
            Modelled rows without inputs (:meth:`validate_data`).

        Returns
        -------
        int or None
            None without ``X``; else the dimension (linear) or the number of categories.
        """
        if X is None:
            return None
        if self.emission == "logistic":
            return max(2, int(np.max(X[:, 0])) + 1)
        return (X.shape[1] - int(self.fit_intercept)) // (self.n_lags + 1)

    def emission_family(self, n_features, X: np.ndarray | None = None,
                        n_states: int | None = None, n_inputs: int | None = None):
        """**Hook.** Return the emission family with the priors in force.

        With modelled rows ``X`` (fitting): the priors are checked, the intercepts' prior
        mean is the data mean and the statistics' reference point the column means.

        Parameters
        ----------
        n_features : int
            The dimension (logistic: the number of categories).
        X : ndarray or None, default=None
            The modelled rows (or a row of their column means), when fitting.
        n_states : int or None, default=None
            The number of states; None: ``n_states``.
        n_inputs : int or None, default=None
            The columns of ``inputs``; None: from ``X``'s width (a model that reads every
            input), else the fitted model's.

        Returns
        -------
        hiddenstate.families.EmissionFamily
            The family.
        """
        K = self.n_states if n_states is None else n_states
        D = int(n_features)
        if n_inputs is None:
            if X is not None:
                own = (D if self.emission == "linear" else 1) + self.n_lags * (
                    D if self.emission == "linear" else 0) + int(self.fit_intercept)
                n_inputs = X.shape[1] - own
            else:
                n_inputs = self.n_inputs_
        Q = self._n_regressors(D, n_inputs)
        if X is not None:
            self._check_priors(D, n_inputs)
        weight = self.prior("coef_weight")
        if self.emission == "logistic":
            return LogisticEmissions(K, D, Q, self.fit_intercept, weight)
        P = Q + int(self.fit_intercept)
        means = column_means(X) if X is not None else None
        M0 = np.zeros((K, D, P))
        M0[..., :Q] = np.broadcast_to(np.asarray(self.prior("coef_prior"), dtype=np.float64),
                                      (K, D, Q))
        if self.fit_intercept and means is not None:
            M0[..., -1] = means[:D]
        nu = self.prior("covars_weight")
        return LinearRegressionEmissions(
            K, D, Q, self.fit_intercept, self.min_covar, M0, weight,
            self.prior("covars_prior"), float(D) if nu is None else nu, means)

    def _transition_block(self, n_inputs: int) -> SoftmaxTransitions:
        """The softmax transitions of a model with ``n_inputs`` inputs."""
        return SoftmaxTransitions(self.n_states, len(self._columns("transition", n_inputs)),
                                  self.prior("transmat_prior"),
                                  float(self.prior("transition_coef_weight")))

    # -- parameters ----------------------------------------------------------------------------
    def _params(self) -> dict:
        """The validated parameters as the learner's blocks."""
        self.check_is_fitted()
        raw = {a: _learned.raw(self, a) for a in self._parameter_attrs()}
        transmat = raw["transmat_"]
        if self.transitions == "softmax":
            transmat = {"transmat": transmat, "coef": raw["transition_coef_"]}
        return {"startprob": raw["startprob_"], "transmat": transmat,
                "emission": {k: raw[k + "_"] for k in self._emission_keys()}}

    @staticmethod
    def _transmat(params: dict) -> np.ndarray:
        t = params["transmat"]
        return t["transmat"] if isinstance(t, dict) else t

    def check_is_fitted(self) -> None:
        """**Hook.** Check that every parameter is set, then validate them.

        Raises
        ------
        NotFittedError
            Unless every parameter is set.
        hiddenstate.errors.InvalidInputError
            If a parameter is invalid; the message names it.
        """
        needed = self._parameter_attrs() if self.emission in EMISSIONS and \
            self.transitions in TRANSITIONS else ["startprob_", "transmat_", "coef_"]
        missing = [a for a in needed if not _learned.has(self, a)]
        if missing:
            if len(missing) == len(needed):
                raise NotFittedError(
                    f"This {type(self).__name__} has no learned parameters yet; call fit "
                    f"first, or set {', '.join(needed)} by hand")
            raise NotFittedError(
                f"{missing[0]}: not set; set it (or call fit) before using "
                f"{type(self).__name__}")
        _learned.checked(self)

    def validation_key(self) -> tuple:
        """**Hook.** What the parameters are validated against (validated again on change).

        Returns
        -------
        tuple
            The shape-defining hyper-parameters and the fitted dimensions.
        """
        check_positive_int(self.n_states, "n_states")
        check_choice(self.emission, "emission", EMISSIONS)
        check_choice(self.transitions, "transitions", TRANSITIONS)
        check_positive_int(self.n_lags, "n_lags", minimum=0)
        return (self.n_states, self.emission, self.transitions, self.n_lags,
                bool(self.fit_intercept), self.n_features_, self.n_inputs_,
                _columns_key(self.emission_inputs), _columns_key(self.transition_inputs))

    def _check_learned(self) -> None:
        """Validate the parameters against the hyper-parameters: shapes, probabilities,
        finite coefficients, positive definite covariances."""
        K = self.n_states
        check_stochastic(_learned.raw(self, "startprob_"), (K,), "startprob_")
        check_stochastic(_learned.raw(self, "transmat_"), (K, K), "transmat_")
        M = self.n_inputs_
        if M < 0:
            raise InvalidInputError(
                f"coef_: has {_learned.raw(self, 'coef_').shape[-1]} columns, fewer than the "
                f"{self.n_lags * self.n_features_} lag columns of n_lags={self.n_lags}")
        if self.transitions == "softmax":
            tc = _learned.raw(self, "transition_coef_")
            Mt = len(self._columns("transition", M))
            if tc.shape != (K, K, Mt) or not np.all(np.isfinite(tc)):
                raise InvalidInputError(
                    f"transition_coef_: expected finite values of shape {(K, K, Mt)} "
                    f"(n_states, n_states, n_transition_inputs), got {tc.shape}")
        if self.emission == "logistic" and self.n_features_ < 2:
            raise InvalidInputError("coef_: a logistic model needs at least 2 categories")
        family = self.emission_family(self.n_features_, n_inputs=M)
        family.check_params({k: _learned.raw(self, k + "_") for k in self._emission_keys()})

    def _assign(self, params: dict) -> None:
        self.startprob_ = params["startprob"]
        t = params["transmat"]
        if isinstance(t, dict):
            self.transmat_ = t["transmat"]
            self.transition_coef_ = t["coef"]
        else:
            self.transmat_ = t
        for key, value in params["emission"].items():
            setattr(self, key + "_", value)

    # -- fitting -------------------------------------------------------------------------------
    def problem(self, family, X, seqs, states=None, U=None, weights=None):
        """**Entry point.** The model on its modelled rows as the learner's Problem.

        Parameters
        ----------
        family : hiddenstate.families.EmissionFamily
            The emission family.
        X : ndarray
            The modelled rows.
        seqs : hiddenstate.inference.Sequences
            Their layout.
        states : None
            Not supported (no state labels).
        U : ndarray or None, default=None
            The inputs of the rows (softmax transitions).
        weights : None
            Sample weights are not supported (the HMM's ``sample_weight``); must be None.

        Returns
        -------
        Problem
            :class:`~hiddenstate.models.hmm.HMMProblem` (fixed transitions) or
            :class:`~.problem.InputDrivenProblem`.
        """
        X = np.asarray(X)
        if weights is not None or states is not None:
            raise InvalidInputError(
                f"{'sample_weight' if weights is not None else 'states'}: RegressionHMM "
                "does not take " + ("sample weights" if weights is not None else
                                    "state labels") + " (hs.HMM does); drop them")
        if self.transitions == "softmax":
            return InputDrivenProblem(family, X, seqs, U, self.prior("startprob_prior"),
                                      self.prior("transmat_prior"),
                                      float(self.prior("transition_coef_weight")))
        return HMMProblem(family, X, seqs, self.prior("startprob_prior"),
                          self.prior("transmat_prior"))

    def check_fit_memory(self, X, seqs, family, started: bool = False) -> None:
        """**Entry point.** Refuse a fit whose E-step would not fit in memory.

        Parameters
        ----------
        X : ndarray
            The modelled rows.
        seqs : hiddenstate.inference.Sequences
            Their layout.
        family : hiddenstate.families.EmissionFamily
            The family.
        started : bool, default=False
            Not used.

        Raises
        ------
        hiddenstate.errors.InsufficientMemoryError
            If it would not fit.
        """
        K = self.n_states
        per_row = 8.0 * (K * (6 + (3 * K if self.transitions == "softmax" else 0))
                         + 3 * X.shape[1])
        check_memory({"X": per_row * len(X)},
                     f"fit (learn={self.learn!r}) on {len(X)} observations with {K} states")

    def fit(self, X, lengths=None, *, inputs=None,
            callback: Callable[[int, float], None] | None = None):
        """Learn the parameters with the mode ``learn`` chooses.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other: ``(n_samples,
            n_features)`` numbers (NaN rows: missing, without lags), or for
            ``emission="logistic"`` categories ``0 .. C - 1`` (``-1``: missing).
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.
        inputs : array-like of shape (n_samples, n_inputs) or None, default=None
            The inputs (covariates) of every observation: regressors of the emissions and,
            with ``transitions="softmax"``, of the move into that step. Finite everywhere.
        callback : callable or None, default=None
            ``callback(iteration, objective)`` after every iteration.

        Returns
        -------
        RegressionHMM
            The model itself, fitted.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a hyper-parameter, the data, the inputs or a parameter set by hand is
            invalid.

        Examples
        --------
        An AR(1)-HMM on two regimes of persistence:

        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> teacher = hs.RegressionHMM(2, n_lags=1)
        >>> teacher.startprob_, teacher.transmat_ = [1.0, 0.0], [[0.98, 0.02], [0.02, 0.98]]
        >>> teacher.coef_ = np.array([[[0.9]], [[-0.6]]])
        >>> teacher.intercept_, teacher.covars_ = np.zeros((2, 1)), np.full((2, 1, 1), 0.1)
        >>> X, _ = teacher.sample(3000, random_state=0)
        >>> model = hs.RegressionHMM(2, n_lags=1, n_init=2, random_state=0).fit(X)
        >>> np.sort(model.coef_.ravel()).round(1)
        array([-0.6,  0.9])
        """
        self.check_hyperparameters()
        d = self._design(X, lengths, inputs)
        n_emission = len(self._columns("emission", d.n_inputs))
        n_features = (d.Z.shape[1] - n_emission - int(self.fit_intercept)) // (
            self.n_lags + 1) if self.emission == "linear" else self.resolve_n_features(d.Z)
        family = self.emission_family(n_features, d.Z, n_inputs=d.n_inputs)
        self.check_fit_memory(d.Z, d.seqs, family)
        problem = self.problem(family, d.Z, d.seqs, U=d.U)
        return self.fit_problem(problem, family, n_features, d.Z, d.seqs,
                                make_rng(self.random_state), callback, n_inputs=d.n_inputs)

    def fit_problem(self, problem, family, n_features, X, seqs, rng, callback=None,
                    states=None, *, n_inputs: int = 0):
        """**Entry point.** Run the ``n_init`` restarts of the batch mode on ``problem``.

        Parameters
        ----------
        problem : Problem
            The problem (one data set, or every partition of a distributed fit).
        family : hiddenstate.families.EmissionFamily
            The emission family.
        n_features : int
            The dimension (categories).
        X : ndarray
            The modelled rows the initial parameters are drawn from.
        seqs : hiddenstate.inference.Sequences
            Their layout.
        rng : numpy.random.Generator
            The generator.
        callback : callable or None, default=None
            ``callback(iteration, objective)``.
        states : None
            Not supported.
        n_inputs : int, default=0
            The columns of the inputs (none in a distributed fit).

        Returns
        -------
        RegressionHMM
            The model itself, fitted.
        """
        K = self.n_states
        X = np.asarray(X)
        n_trans = len(self._columns("transition", n_inputs))
        init = self.init_params

        def user(attr, letter):
            if not _learned.has(self, attr):
                raise InvalidInputError(
                    f"init_params: {letter!r} is not in init_params={init!r}, so {attr} must "
                    f"be set before fit; set it or add {letter!r} to init_params")
            return _learned.raw(self, attr).copy()

        by_letter = {"s": ["startprob_"], "t": ["transmat_", "transition_coef_"],
                     "r": ["coef_", "intercept_"], "c": ["covars_"]}
        replaced = [a for letter in init for a in by_letter.get(letter, [])
                    if a in self._parameter_attrs()]
        hand = _learned.set_by_hand(self, replaced)
        letters = "".join(c for c in init if set(by_letter.get(c, [])) & set(hand))
        _learned.warn_replaced(
            self, replaced, "init_params",
            f"init_params={init!r} initialises {letters!r}: pass init_params="
            f"{''.join(c for c in init if c not in letters)!r} to start from the values "
            "you set (or delete them to silence this)")

        def start(_restart):
            startprob = np.full(K, 1.0 / K) if "s" in init else user("startprob_", "s")
            if "t" in init:
                lam = persistence(*family.autocorrelation_data(X), seqs.bounds)
                transmat = lam * np.eye(K) + (1.0 - lam) / K
                coef = np.zeros((K, K, n_trans))
            else:
                transmat = user("transmat_", "t")
                coef = user("transition_coef_", "t") if self.transitions == "softmax" \
                    else None
            drawn = family.initialize(X, rng) if set(init) & set("rc") else {}
            emission = {}
            for key in self._emission_keys():
                letter = "c" if key == "covars" else "r"
                emission[key] = drawn[key] if letter in init else user(key + "_", letter)
            emission = family.check_params(emission)
            startprob = check_stochastic(startprob, (K,), "startprob_")
            transmat = check_stochastic(transmat, (K, K), "transmat_")
            chain = ({"transmat": transmat, "coef": coef} if self.transitions == "softmax"
                     else transmat)
            return {"startprob": startprob, "transmat": chain, "emission": emission}

        best = fit_restarts(problem, self.learn, start, n_init=self.n_init, n_iter=self.n_iter,
                            tol=self.tol, which=self.params, k_best=self.k_best,
                            verbose=self.verbose, callback=callback)
        self.monitor_ = best.monitor
        self.n_features_ = n_features
        self.n_inputs_ = n_inputs
        self._assign(best.params)
        _learned.mark_own(self, self._parameter_attrs())   # the fit's values, not the user's
        for attr in [a for a in vars(self) if a.endswith(_POSTERIOR)]:
            delattr(self, attr)
        for name, value in (best.posterior or {}).items():
            items = value.items() if isinstance(value, dict) else [(name, value)]
            for key, arr in items:
                setattr(self, key + _POSTERIOR, np.asarray(arr, dtype=np.float64))
        return self

    # -- persistence ---------------------------------------------------------------------------
    def learned_arrays(self) -> dict[str, np.ndarray]:
        """Return the learned arrays by attribute name (what :meth:`save` writes).

        Returns
        -------
        dict of str to ndarray
            The parameters and the VB posteriors.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        """
        self.check_is_fitted()
        out = {a: getattr(self, a) for a in self._parameter_attrs()}
        out.update({a: getattr(self, a) for a in sorted(vars(self)) if a.endswith(_POSTERIOR)})
        return out

    def learned_scalars(self) -> dict:
        """Return the learned scalars: the number of inputs.

        Returns
        -------
        dict
            ``{"n_inputs_": M}``.
        """
        return {"n_inputs_": int(self.n_inputs_)}

    def set_learned(self, arrays: dict, scalars: dict) -> None:
        """Restore what :meth:`learned_arrays` returned.

        Parameters
        ----------
        arrays : dict of str to ndarray
            The arrays, by attribute name.
        scalars : dict
            ``n_inputs_``.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a parameter is missing, or a name is not a learned attribute.
        """
        names = set(self._parameter_attrs())
        missing = sorted(names - set(arrays))
        if missing:
            raise InvalidInputError(f"{missing[0]}: missing from the saved arrays")
        for key, value in {**arrays, **scalars}.items():
            if key == "n_inputs_":
                if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                        or value < 0:
                    raise InvalidInputError(f"n_inputs_: expected an int >= 0, got {value!r}")
                self.n_inputs_ = value
            elif key in names:
                setattr(self, key, value)
            elif key.endswith(_POSTERIOR) and key.isidentifier():
                if not (isinstance(value, np.ndarray) and np.all(np.isfinite(value))):
                    raise InvalidInputError(f"{key}: VB posterior parameters must be finite")
                setattr(self, key, np.asarray(value, dtype=np.float64))
            else:
                raise InvalidInputError(f"{key}: not a learned attribute of RegressionHMM")
        _learned.mark_own(self, names)   # a load's values are the model's own

    def save(self, path) -> None:
        """Save the model to the directory ``path`` (JSON + npz, no pickle).

        :func:`hiddenstate.load` reads it back.

        Parameters
        ----------
        path : str or os.PathLike
            The directory.

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> m = hs.RegressionHMM(2)
        >>> m.startprob_, m.transmat_ = [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]]
        >>> m.coef_ = np.array([[[1.0]], [[-1.0]]])
        >>> m.intercept_, m.covars_ = np.zeros((2, 1)), np.ones((2, 1, 1))
        >>> m.save("regression-model")
        >>> hs.load("regression-model").score([[1.0]], inputs=[[1.0]]) == m.score(
        ...     [[1.0]], inputs=[[1.0]])
        True
        """
        from .._saving import save

        save(self, path)


def _check_columns(value, name: str) -> None:
    """None, or distinct column indices >= 0."""
    if value is None:
        return
    if isinstance(value, (str, bytes)) or np.ndim(value) != 1:
        raise InvalidInputError(
            f"{name}: expected a list of column indices of inputs (or None: every column), "
            f"got {value!r:.60}")
    cols = list(value)
    if not all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) and c >= 0
               for c in cols) or len(set(cols)) != len(cols):
        raise InvalidInputError(
            f"{name}: expected distinct column indices >= 0, got {value!r:.60}")


def _columns_key(value):
    return None if value is None else tuple(int(c) for c in value)

r"""The explicit-duration hidden semi-Markov model, :class:`HSMM`.

An :class:`~hiddenstate.HMM` whose states last a number of steps drawn from a duration
distribution of their own (:mod:`hiddenstate.families.durations`) instead of the geometric
number an HMM's self-transitions imply. It is a subclass of the HMM: the emission families,
data validation, priors, initialisation, saving and the entry points that
:mod:`hiddenstate.distributed` calls are the HMM's; the model adds the durations, its
Problem (:mod:`.problem`) and the queries that run the segment recursion
(:mod:`hiddenstate.segments`, or the phases of :mod:`.engine`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np

from ... import inference, segments
from ..._deprecation import keyword_only_after_first
from ..._validation import (
    check_choice,
    check_positive_int,
    check_states,
    check_stochastic,
    make_rng,
)
from ..._validation import (
    check_memory as check_parts,
)
from ...errors import InvalidInputError
from ...families.durations import DURATIONS
from ...families.hdp import HDP_HSMM_OPTIONS
from ...inference import Sequences
from ...learn import MODES, fit_restarts
from ...learn.gibbs_fit import clear_gibbs, posterior_predictive
from ...learn.online import ONLINE_MODES
from .. import _learned
from .._learned import LearnedArray
from ..hmm import HMM
from ..hmm.gibbs import fit_hmm_gibbs
from ..hmm.hyperparameters import ALL_LETTERS, check_hyperparameters
from ..hmm.init import (
    MAX_PERSISTENCE,
    initial_params,
    labelled_start,
    persistence,
    user_param,
)
from ..hmm.memory import sample_bytes
from ..hmm.parameters import POSTERIOR_SUFFIX
from ..hmm.problem import drawn_path_loglik
from .engine import ENGINES, Runner
from .hdp import HDP, HDPHSMMProblem, check_hdp, is_hdp
from .problem import HSMMProblem, between_states, check_possible

#: the letters of every parameter: the HMM's and ``d`` (the durations)
LETTERS = ALL_LETTERS + "d"
#: the duration parameters' attributes of each family
DURATION_ATTRS = {name: tuple(key + "_" for key in cls.keys) for name, cls in
                  DURATIONS.items()}


def _no_weights(weights) -> None:
    if weights is not None:
        raise InvalidInputError(
            "sample_weight: the HSMM does not take sample weights yet (the segment recursion "
            "has no per-sequence or per-observation weight); drop it, or repeat sequences")


def check_gibbs_durations(model) -> None:
    """``learn="gibbs"`` draws every block from its conjugate posterior: refuse the
    negative-binomial durations (their shape r has no conjugate prior)."""
    if model.duration == "negative-binomial":
        raise InvalidInputError(
            "duration: learn='gibbs' draws every parameter block from its conjugate "
            "posterior, and the negative-binomial shape r has none; use duration="
            "'nonparametric', 'geometric' or 'poisson' with learn='gibbs' (Dirichlet, Beta "
            "and Gamma draws), or learn='em', 'map', 'vt' or 'kvt' for "
            "negative-binomial durations")


class HSMM(HMM):
    r"""Explicit-duration hidden semi-Markov model (HSMM).

    .. math::
        p(x, z) = \pi_{j_1} \Bigl[\prod_{m < M} f_{j_m}(d_m)\, A_{j_m j_{m+1}}\Bigr]
                  S_{j_M}(d_M) \prod_t p(x_t \mid z_t)

    for a segmentation of a sequence into :math:`M` segments of states :math:`j_m` and
    durations :math:`d_m`: a state lasts :math:`d` steps with probability :math:`f_j(d)` (the
    ``duration`` family), then the chain moves to another state (``transmat_`` has a zero
    diagonal: no self-transitions). The last segment is **right-censored**: the sequence
    may end inside it, which contributes :math:`S_j(d) = P(\text{duration} \ge d)`. Only
    segmentations whose segments last at most ``max_duration`` steps count (with the
    default, the longest training sequence, that excludes none of the training data). With
    geometric durations, :math:`f_j(d) = p_j (1 - p_j)^{d-1}`, the model is the HMM with
    :math:`A_{jj} = 1 - p_j` (and the same EM iterations).

    Inference runs the segment recursion of :mod:`hiddenstate.segments` (sum-product,
    max-product with k-best lists, and sampling; O(T K (D + K)) time, memory that does not
    grow as T K D) or, for negative-binomial and geometric durations, when cheaper and no
    sequence is longer than ``max_duration``, the ordinary HMM over their phases
    (``engine``). Every batch mode of :mod:`hiddenstate.learn` works (EM, MAP, VB, Viterbi
    and k-best Viterbi training), with restarts, partial state labels and the distributed
    fit, and blocked Gibbs sampling (``learn="gibbs"``: segmentations by forward filtering,
    backward sampling, every block from its conjugate posterior; ``docs/gibbs.md``);
    ``docs/hsmm.md`` is the guide.

    Parameters
    ----------
    n_states : int, default=2
        The number of hidden states K (at least 2: a state never follows itself).
    duration : str, default="nonparametric"
        The duration family, ``"nonparametric"``, ``"poisson"``, ``"negative-binomial"`` or
        ``"geometric"``: a pmf on 1..``max_duration`` per state (``durations_``); a
        shifted Poisson, d - 1 ~ Poisson(``duration_rates_``); a shifted negative binomial,
        d - 1 ~ NB(``duration_shapes_``, ``duration_probs_``), the shape a whole number; a
        geometric, ``duration_probs_`` the probability of ending at each step.
    max_duration : int or None, default=None
        The longest segment counted (and the support of nonparametric durations). None: the
        length of the longest training sequence (``max_duration_``); set it for long
        sequences, as the cost grows with it, and for :func:`hiddenstate.distributed.fit`.
    emission : {"categorical", "gaussian", "poisson", "gmm", "multinomial"}, default="categorical"
        The emission family, as :class:`~hiddenstate.HMM`'s (missing entries and several
        categorical features included).
    n_features : int, sequence of int or None, default=None
        As :class:`~hiddenstate.HMM`'s.
    covariance_type : {"spherical", "diag", "full", "tied"}, default="diag"
        As :class:`~hiddenstate.HMM`'s.
    n_iter : int, default=100
        The maximum number of iterations.
    tol : float, default=1e-4
        The stop rule of EM, MAP and VB (:func:`hiddenstate.learn.fit_restarts`).
    n_init : int, default=1
        The number of random restarts; the best run is kept.
    init_params : str, default="stemclwd"
        The letters of the parameters ``fit`` initialises (the HMM's and ``d``, the
        durations); the others must be set by hand.
    params : str, default="stemclwd"
        The letters of the parameters the batch modes update.
    min_covar : float, default=1e-3
        The floor of the variances.
    random_state : int, numpy.random.Generator or None, default=None
        The seed of the initialisation, the restarts and the samplers.
    verbose : bool, default=False
        Print the objective of every iteration.
    learn : {"em", "map", "vb", "vt", "kvt", "gibbs"}, default="em"
        The batch learning mode (no streaming learner: a segment spans many observations).
        ``"gibbs"`` samples the posterior (nonparametric, geometric and Poisson durations:
        the negative-binomial shape has no conjugate prior) and sets the fitted attributes
        to the posterior mean (:mod:`hiddenstate.learn.gibbs_fit`).
    k_best : int, default=1
        The number of segmentations of ``learn="kvt"``.
    startprob_prior, transmat_prior : float, array-like or None, default=None
        The Dirichlet concentrations of the initial distribution and of each row of
        transitions between segments (its diagonal is not a parameter). ``transmat_prior=
        "hdp"`` (``learn="gibbs"`` only): the HDP-HSMM of Johnson & Willsky (2013), weak
        limit with truncation ``n_states``, its options in ``learner_options``
        (:mod:`hiddenstate.models.hsmm.hdp`); :meth:`n_states_posterior` gives the
        posterior of the number of states in use.
    emissionprob_prior, means_prior, means_weight : float, array-like or None, default=None
        The emission priors, as :class:`~hiddenstate.HMM`'s.
    covars_prior, covars_weight : float, array-like or None, default=None
        The emission priors, as :class:`~hiddenstate.HMM`'s.
    lambdas_prior, lambdas_weight : float, array-like or None, default=None
        The emission priors, as :class:`~hiddenstate.HMM`'s.
    n_mix : int, default=1
        Mixture components per state (``emission="gmm"``).
    n_trials : int or None, default=None
        Trials per row (``emission="multinomial"``).
    weights_prior : float, array-like or None, default=None
        The Dirichlet concentration of the mixture weights.
    duration_prior : float, array-like or None, default=None
        The durations' prior: the Dirichlet concentration of the nonparametric pmf (a number
        or ``(K, max_duration)``); the Beta concentration of the geometric and
        negative-binomial ``p`` (a number, or a pair ``(a, b)``); the Gamma prior's shape
        minus one of the Poisson rate. None: flat (VB: 1 for Dirichlet and Beta).
    duration_weight : float, array-like or None, default=None
        The Gamma prior's rate of the Poisson durations (None: 0; VB: ``1 / max_duration``).
    engine : {"auto", "segments", "phases"}, default="auto"
        How inference runs: the segment recursion, or for negative-binomial and geometric
        durations the HMM over their phases (:mod:`hiddenstate.models.hsmm.engine`);
        ``"auto"`` takes the cheaper of the two where both apply. Same results.
    learner_options : dict or None, default=None
        The options of ``learn="gibbs"``: ``n_samples``, ``burn_in``, ``thin``,
        ``n_chains``, ``n_jobs``, ``check_convergence`` (as :class:`~hiddenstate.HMM`'s);
        with ``transmat_prior="hdp"`` also ``alpha``, ``gamma`` (fixed concentrations;
        None: sampled), ``alpha_prior``, ``gamma_prior`` (their Gamma (shape, rate)
        hyper-priors) and ``min_share``
        (:data:`hiddenstate.families.hdp.HDP_HSMM_OPTIONS`).

    Attributes
    ----------
    startprob_ : ndarray of shape (n_states,)
        :math:`\pi`.
    transmat_ : ndarray of shape (n_states, n_states)
        The transitions between segments (zero diagonal).
    durations_ : ndarray of shape (n_states, max_duration)
        The nonparametric duration pmf (``duration="nonparametric"``).
    duration_rates_ : ndarray of shape (n_states,)
        The Poisson rates of d - 1 (``duration="poisson"``).
    duration_shapes_, duration_probs_ : ndarray of shape (n_states,)
        The negative-binomial shapes and probabilities (geometric: ``duration_probs_``).
    max_duration_ : int
        The ``max_duration`` in force.
    monitor_ : hiddenstate.learn.ConvergenceMonitor
        The objective of every iteration.
    posterior_samples_ : dict of str to ndarray
        After ``learn="gibbs"``: the relabelled draws of every parameter, ``(n_chains,
        n_draws, *shape)``, by attribute name (``startprob_``, ``transmat_``, the emission
        and the duration parameters); ``sample_log_joint_``, ``best_sample_``,
        ``convergence_`` as :class:`~hiddenstate.HMM`'s.

    See Also
    --------
    hiddenstate.HMM : The model with geometric durations.

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> teacher = hs.HSMM(2, duration="poisson", max_duration=20, n_features=3)
    >>> teacher.startprob_ = [0.5, 0.5]
    >>> teacher.transmat_ = [[0.0, 1.0], [1.0, 0.0]]
    >>> teacher.duration_rates_ = [6.0, 2.0]          # mean durations 7 and 3
    >>> teacher.emissionprob_ = [[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]]
    >>> X, states = teacher.sample(5000, random_state=0)
    >>> model = hs.HSMM(2, duration="poisson", max_duration=20, random_state=0).fit(X)
    >>> order = np.argsort(model.emissionprob_[:, 0])[::-1]
    >>> model.duration_rates_[order].round(1)
    array([5.3, 2.2])
    """

    durations_ = LearnedArray()
    duration_rates_ = LearnedArray()
    duration_shapes_ = LearnedArray()
    duration_probs_ = LearnedArray()

    # the HMM's structure, streaming and fixed-value options do not apply: at their defaults
    topology = "full"
    bandwidth = None
    transmat_mask = None
    fixed = None
    #: the priors ``transmat_prior`` may name (under ``learn="gibbs"``): the HDP-HSMM's
    named_transmat_priors = (HDP,)

    @keyword_only_after_first
    def __init__(self, n_states: int = 2, duration: str = "nonparametric",
                 max_duration: int | None = None, emission: str = "categorical",
                 n_features: int | None = None, covariance_type: str = "diag",
                 n_iter: int = 100, tol: float = 1e-4, n_init: int = 1,
                 init_params: str = LETTERS, params: str = LETTERS, min_covar: float = 1e-3,
                 random_state=None, verbose: bool = False, learn: str = "em",
                 k_best: int = 1, startprob_prior=None, transmat_prior=None,
                 emissionprob_prior=None, means_prior=None, means_weight=None,
                 covars_prior=None, covars_weight=None, lambdas_prior=None,
                 lambdas_weight=None, n_mix: int = 1, n_trials=None, weights_prior=None,
                 duration_prior=None, duration_weight=None, engine: str = "auto",
                 learner_options: dict | None = None):
        self.n_states = n_states
        self.duration = duration
        self.max_duration = max_duration
        self.emission = emission
        self.n_features = n_features
        self.covariance_type = covariance_type
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
        self.emissionprob_prior = emissionprob_prior
        self.means_prior = means_prior
        self.means_weight = means_weight
        self.covars_prior = covars_prior
        self.covars_weight = covars_weight
        self.lambdas_prior = lambdas_prior
        self.lambdas_weight = lambdas_weight
        self.n_mix = n_mix
        self.n_trials = n_trials
        self.weights_prior = weights_prior
        self.duration_prior = duration_prior
        self.duration_weight = duration_weight
        self.engine = engine
        self.learner_options = learner_options

    # -- hyper-parameters ------------------------------------------------------------------------
    def check_hyperparameters(self) -> None:
        """**Hook.** Validate the hyper-parameters (errors name the argument and the fix).

        The HMM's checks (:mod:`hiddenstate.models.hmm.hyperparameters`), then the HSMM's:
        at least 2 states, a batch mode, the duration family, ``max_duration`` and
        ``engine``.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a hyper-parameter is invalid; the message names it.
        """
        check_positive_int(self.n_states, "n_states", minimum=2)
        if self.learn == "gibbs":
            check_gibbs_durations(self)
        if is_hdp(self):
            check_hdp(self)
        if isinstance(self.learn, str) and self.learn in ONLINE_MODES:
            raise InvalidInputError(
                f"learn: the HSMM learns by the batch modes {MODES}; the streaming learner "
                f"{self.learn!r} updates after every observation, and a segment spans many")
        for name in ("init_params", "params"):
            letters = getattr(self, name)
            if not isinstance(letters, str) or set(letters) - set(LETTERS):
                raise InvalidInputError(
                    f"{name}: expected a string of letters from {LETTERS!r}, got {letters!r}")
        view = copy.copy(self)  # the HMM's checks, on its own letters
        view.init_params = self.init_params.replace("d", "")
        view.params = self.params.replace("d", "")
        check_hyperparameters(view)
        check_choice(self.duration, "duration", DURATIONS)
        if self.max_duration is not None:
            check_positive_int(self.max_duration, "max_duration")
        check_choice(self.engine, "engine", ENGINES)
        if self.learn == "em":
            given = [n for n in ("duration_prior", "duration_weight")
                     if getattr(self, n) is not None]
            if given:
                raise InvalidInputError(
                    f"{given[0]}: priors are not used by learn='em' (maximum likelihood); "
                    "use learn='map', 'vb', 'vt' or 'kvt', or drop the prior")
        if self.duration_weight is not None and self.duration != "poisson":
            raise InvalidInputError(
                "duration_weight: only the Poisson durations have a Gamma prior's rate; drop "
                "it or use duration='poisson'")

    def duration_family(self, max_duration: int | None = None):
        """**Hook.** Return the duration family with the priors in force.

        Parameters
        ----------
        max_duration : int or None, default=None
            D; None: :attr:`max_duration_`.

        Returns
        -------
        hiddenstate.families.durations.DurationFamily
            The family.
        """
        D = self.max_duration_ if max_duration is None else max_duration
        cls = DURATIONS[self.duration]
        if self.learn == "em":
            return cls(self.n_states, D)
        prior = self.duration_prior
        if self.duration == "poisson":
            weight = self.duration_weight
            if weight is None and self.learn in ("vb", "gibbs"):
                weight = 1.0 / D
            return cls(self.n_states, D, prior, weight)
        return cls(self.n_states, D, prior)

    @property
    def max_duration_(self) -> int:
        """The longest segment counted.

        ``max_duration``, else what ``fit`` took (the longest training sequence), else the
        columns of a ``durations_`` set by hand.
        """
        if self.max_duration is not None:
            return int(self.max_duration)
        stored = self.__dict__.get("_max_duration")
        if stored is not None:
            return stored
        if self.duration == "nonparametric" and _learned.has(self, "durations_"):
            shape = _learned.raw(self, "durations_").shape
            if len(shape) == 2:
                return int(shape[1])
        raise AttributeError("max_duration_")

    @max_duration_.setter
    def max_duration_(self, value: int) -> None:
        self.__dict__["_max_duration"] = int(value)
        _learned.invalidate(self)

    def _duration_keys(self) -> tuple[str, ...]:
        return DURATIONS[self.duration].keys

    def duration_params(self) -> dict:
        """Return the duration parameters by family key (the stored arrays: do not modify them).

        Returns
        -------
        dict of str to ndarray
            The parameters.
        """
        return {key: _learned.raw(self, key + "_") for key in self._duration_keys()}

    # -- parameters -------------------------------------------------------------------------------
    def check_is_fitted(self) -> None:
        """**Hook.** Check that every parameter is set (durations included), then validate them.

        Raises
        ------
        NotFittedError
            Unless every parameter is set.
        hiddenstate.errors.InvalidInputError
            If a parameter is invalid; the message names it.
        """
        from ...errors import NotFittedError

        if isinstance(self.duration, str) and self.duration in DURATIONS:
            missing = [a for a in DURATION_ATTRS[self.duration] if not _learned.has(self, a)]
            has_other = _learned.has(self, "startprob_") or _learned.has(self, "transmat_")
            if missing and has_other:
                raise NotFittedError(
                    f"{missing[0]}: not set; set it (or call fit) before using "
                    f"{type(self).__name__}")
            if missing:
                raise NotFittedError(
                    f"This {type(self).__name__} has no learned parameters yet; call fit "
                    f"first, or set startprob_, transmat_, the emission parameters and "
                    f"{', '.join(DURATION_ATTRS[self.duration])} by hand")
        super().check_is_fitted()

    def validation_key(self) -> tuple:
        """**Hook.** Return what the parameters are validated against.

        :meth:`hiddenstate.HMM.validation_key`'s, with the duration family and
        ``max_duration_``.

        Returns
        -------
        tuple
            The key.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If one of these hyper-parameters is invalid.
        """
        check_choice(self.duration, "duration", DURATIONS)
        try:
            D = self.max_duration_
        except AttributeError:
            raise InvalidInputError(
                "max_duration: not known; pass max_duration (the longest segment) or fit "
                "the model") from None
        return (*super().validation_key(), self.duration, D)

    def _check_learned(self) -> None:
        """The HMM's checks, a zero diagonal of ``transmat_`` and the durations' own."""
        K = check_positive_int(self.n_states, "n_states", minimum=2)
        check_stochastic(_learned.raw(self, "startprob_"), (K,), "startprob_")
        A = check_stochastic(_learned.raw(self, "transmat_"), (K, K), "transmat_")
        diag = np.flatnonzero(np.diag(A) != 0)
        if len(diag):
            raise InvalidInputError(
                f"transmat_: the diagonal must be zero (a state never follows itself in an "
                f"HSMM; its durations say how long it lasts), got {A[diag[0], diag[0]]!r} for "
                f"state {diag[0]}")
        self.emission_family(self.n_features_).check_params(self.emission_params())
        self.duration_family().check_params(self.duration_params())

    def learned_arrays(self) -> dict[str, np.ndarray]:
        """Return the learned arrays by attribute name (what ``save`` writes).

        Returns
        -------
        dict of str to ndarray
            The HMM's parameters and VB posteriors, and the duration parameters.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        """
        out = super().learned_arrays()
        for attr in DURATION_ATTRS[self.duration]:
            out[attr] = getattr(self, attr)
        return out

    def learned_scalars(self) -> dict:
        """Return the learned scalars: ``max_duration_`` (saved as JSON).

        Returns
        -------
        dict
            ``{"max_duration_": int}``.
        """
        return {"max_duration_": int(self.max_duration_)}

    def set_learned(self, arrays: dict, scalars: dict) -> None:
        """Restore what :meth:`learned_arrays` and :meth:`learned_scalars` returned.

        Parameters
        ----------
        arrays : dict of str to ndarray
            The arrays, by attribute name.
        scalars : dict
            ``max_duration_``.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a parameter is missing, or a name is not a learned attribute.
        """
        scalars = dict(scalars)
        D = scalars.pop("max_duration_", None)
        if D is not None:
            if isinstance(D, bool) or not isinstance(D, int) or D < 1:
                raise InvalidInputError(f"max_duration_: expected an integer >= 1, got {D!r}")
            self.max_duration_ = D
        super().set_learned(arrays, scalars)

    def learned_attribute_names(self, arrays: dict) -> set[str]:
        """Return the names a saved model may set: the HMM's and the duration parameters.

        Parameters
        ----------
        arrays : dict of str to ndarray
            The saved arrays.

        Returns
        -------
        set of str
            The attribute names.
        """
        return super().learned_attribute_names(arrays) | set(DURATION_ATTRS[self.duration])

    # -- fitting ----------------------------------------------------------------------------------
    def problem(self, family, X, seqs: Sequences, states=None, weights=None) -> HSMMProblem:
        """**Entry point.** Return the model on validated data as the batch learner's Problem.

        Parameters
        ----------
        family : hiddenstate.families.EmissionFamily
            The emission family.
        X : ndarray
            The validated observations.
        seqs : hiddenstate.inference.Sequences
            Their layout.
        states : ndarray of int or None, default=None
            Partial state labels (``-1``: unknown).
        weights : object or None, default=None
            Sample weights: not taken by the HSMM (None only).

        Returns
        -------
        hiddenstate.models.hsmm.HSMMProblem
            The Problem (its statistics merge with :func:`hiddenstate.learn.merge_statistics`).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``max_duration`` is None outside :meth:`fit` (the distributed fit needs it), or
            there are sample weights.
        """
        _no_weights(weights)
        D = self.max_duration if self.max_duration is not None else \
            self.__dict__.get("_fit_max_duration")
        if D is None:
            raise InvalidInputError(
                "max_duration: None takes the longest training sequence in fit; a fit that "
                "sees the data in parts (hiddenstate.distributed.fit) needs max_duration "
                "set, e.g. max_duration=100")
        dfamily = self.duration_family(D)
        dfamily.check_prior(self.learn)
        if is_hdp(self):
            options = {**HDP_HSMM_OPTIONS, **(self.learner_options or {})}
            return HDPHSMMProblem(family, dfamily, X, seqs, self.prior("startprob_prior"),
                                  options, self.engine, states)
        return HSMMProblem(family, dfamily, X, seqs, self.prior("startprob_prior"),
                           self.prior("transmat_prior"), self.engine, states)

    def fit(self, X, lengths=None, callback: Callable[[int, float], None] | None = None,
            states=None, sample_weight=None):
        """Learn the parameters with the batch mode ``learn`` chooses.

        With ``max_duration=None`` the longest training sequence becomes ``max_duration_``.
        Known hidden states (``states``, ``-1`` where unknown) clamp each labelled step in
        every mode (semi-supervised learning).

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other (as for
            :meth:`hiddenstate.HMM.fit`).
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.
        callback : callable or None, default=None
            ``callback(iteration, objective)`` after every iteration.
        states : array-like of int of shape (n_samples,) or None, default=None
            Known hidden states, ``-1`` where the state is unknown.
        sample_weight : None, default=None
            Not taken by the HSMM yet (the HMM's per-sequence and per-observation weights).

        Returns
        -------
        HSMM
            The model itself, fitted.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a hyper-parameter, the data or a parameter set by hand is invalid, or
            ``sample_weight`` is given.
        hiddenstate.errors.ZeroProbabilityError
            If a sequence has probability zero under the starting parameters (or its labels).
        hiddenstate.errors.InsufficientMemoryError
            If the fit would not fit in memory (raised before anything is allocated).
        """
        self.check_hyperparameters()
        _no_weights(sample_weight)
        X, seqs = self.validate_data(X, lengths, self.resolve_n_features())
        if states is not None:
            states = check_states(states, len(X), self.n_states)
        n_features = self.resolve_n_features(X)
        family = self.emission_family(n_features, X)
        D = self.max_duration if self.max_duration is not None else seqs.max_len
        self.__dict__["_fit_max_duration"] = int(D)
        try:
            self.check_fit_memory(X, seqs, family)
            problem = self.problem(family, X, seqs, states)
        finally:
            del self.__dict__["_fit_max_duration"]
        return self.fit_problem(problem, family, n_features, X, seqs,
                                make_rng(self.random_state), callback, states)

    def fit_problem(self, problem, family, n_features, X, seqs: Sequences | None, rng,
                    callback=None, states=None) -> HSMM:
        """**Entry point.** Run the ``n_init`` restarts of the batch mode on ``problem``.

        Each restart starts from the HMM's initial values (:mod:`hiddenstate.models.hmm.init`):
        transitions between segments uniform, durations close to the geometric ones of the
        persistence the data show (:func:`hiddenstate.models.hmm.init.persistence`).

        Parameters
        ----------
        problem : hiddenstate.learn.batch.Problem
            The problem (one data set, or all the partitions of a distributed fit).
        family : hiddenstate.families.EmissionFamily
            The emission family.
        n_features : int or tuple of int
            The number of symbols or features.
        X : ndarray or None
            The data the initial parameters are drawn from.
        seqs : hiddenstate.inference.Sequences or None
            The layout of ``X``.
        rng : numpy.random.Generator
            The generator of the initialisations.
        callback : callable or None, default=None
            ``callback(iteration, objective)`` after every iteration.
        states : ndarray of int or None, default=None
            Partial state labels of ``X``.

        Returns
        -------
        HSMM
            The model itself, fitted.
        """
        dfamily = problem.blocks["durations"]
        K = self.n_states
        transitions = between_states(K)

        def start(restart):
            startprob, transmat, emis = initial_params(self, X, family, rng, seqs,
                                                       values=True, warn=restart == 0)
            if states is not None:
                emis = labelled_start(family, X, states, emis, self.init_params)
            if "t" in self.init_params:
                hmm_stay = float(np.mean(np.diag(transmat)))
                transmat = np.full((K, K), 1.0 / (K - 1))
                np.fill_diagonal(transmat, 0.0)
            if "d" in self.init_params:
                durations = dfamily.initialize(self._initial_stay(
                    restart, dfamily, family, X, seqs, rng,
                    hmm_stay if "t" in self.init_params else None))
            else:
                durations = dfamily.check_params(
                    {key: user_param(self, key + "_", "d") for key in dfamily.keys})
            return {"startprob": startprob, "transmat": transitions.gather(transmat),
                    "emission": emis, "durations": durations}

        if self.learn == "gibbs":
            self.max_duration_ = dfamily.max_duration
            return fit_hmm_gibbs(self, problem, start, n_features, rng, callback)
        clear_gibbs(self)
        best = fit_restarts(problem, self.learn, start, n_init=self.n_init,
                            n_iter=self.n_iter, tol=self.tol, which=self.learned_letters(),
                            k_best=self.k_best, verbose=self.verbose, callback=callback)
        self.monitor_ = best.monitor
        self.n_features_ = n_features
        self.max_duration_ = dfamily.max_duration
        self.assign_params(best.params["startprob"], transitions.dense(best.params["transmat"]),
                           best.params["emission"])
        for key, value in best.params["durations"].items():
            setattr(self, key + "_", value)
        self._set_posterior_(best.posterior)
        return self

    def _gibbs_transitions(self):
        """The transitions between segments are stored as their off-diagonal entries."""
        return between_states(self.n_states)

    def _gibbs_extra_options(self) -> dict:
        """The HDP-HSMM's ``learner_options`` (``transmat_prior="hdp"``)."""
        return dict(HDP_HSMM_OPTIONS) if is_hdp(self) else {}

    def _check_gibbs_transmat_prior(self) -> None:
        """A ``transmat_prior`` given by name under ``learn="gibbs"``: ``"hdp"``."""
        if not is_hdp(self):
            raise InvalidInputError(
                f"transmat_prior: {self.transmat_prior!r} is not a prior of the HSMM; pass a "
                f"Dirichlet concentration or {HDP!r} (the HDP-HSMM: the transitions "
                "between segments need no stickiness)")

    def _gibbs_assign(self, draw: dict) -> None:
        """Set the parameters to one draw of ``posterior_samples_`` (by name)."""
        super()._gibbs_assign(draw)
        for attr in DURATION_ATTRS[self.duration]:
            setattr(self, attr, draw[attr])

    def _initial_stay(self, restart: int, dfamily, family, X, seqs, rng,
                      hmm_stay: float | None) -> np.ndarray:
        """The probability of staying one more step that the initial durations imply, per
        state. Geometric durations start where :class:`~hiddenstate.HMM` starts (its
        self-transitions). The others: the first restart from the data's persistence
        (:func:`~hiddenstate.models.hmm.init.persistence`, mean durations up to D/2 rather
        than the HMM's 10, so that long segments are reachable: on daily sea-ice extent the
        capped start left Poisson durations at 15-37 days instead of about 150); each
        further restart from mean durations drawn log-uniformly in [1, D/2] per state."""
        K, D = self.n_states, dfamily.max_duration
        if self.duration == "geometric" and hmm_stay is not None:
            return np.full(K, hmm_stay)
        longest = max(1.0, D / 2.0)
        if restart > 0 and self.duration != "geometric":
            mean = np.exp(rng.uniform(0.0, np.log(longest), size=K))
            return 1.0 - 1.0 / mean
        cap = 1.0 - 1.0 / longest if self.duration != "geometric" else MAX_PERSISTENCE
        s = persistence(*family.autocorrelation_data(X), seqs.bounds, cap) \
            if X is not None else 0.0
        return np.full(K, s + (1.0 - s) / K)

    def partial_fit(self, X, lengths=None, continues: bool = False, states=None):
        """Refuse: the HSMM has no streaming learner.

        Parameters
        ----------
        X : array-like
            The observations.
        lengths : array-like of int or None, default=None
            Their lengths.
        continues : bool, default=False
            Unused.
        states : array-like or None, default=None
            Unused.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            Always.
        """
        raise InvalidInputError(
            "learn: the HSMM has no streaming learner (a segment spans many observations); "
            "use fit with a batch mode")

    # -- memory -----------------------------------------------------------------------------------
    def _memory_parts(self, op: str, X, seqs: Sequences, family, k: int = 1) -> dict:
        K = self.n_states
        try:  # unknown (a distributed fit without max_duration): at most the longest sequence
            D = self.__dict__.get("_fit_max_duration") or self.max_duration_
        except AttributeError:
            D = seqs.max_len
        parts = segments.memory_estimate(op, K, D, seqs, k)
        by_symbol = family.table_by_symbol
        if by_symbol:
            parts["n_states"] += family.n_features * K * 8.0
        else:
            table = len(X) * K * 8.0
            parts["X"] += table + max(0.0, (family.table_build_copies() - 1) * table
                                      - parts["X"])
        return parts

    def check_memory(self, op: str, X, seqs: Sequences, family, k: int = 1,
                     fixed: dict | None = None, what: str | None = None,
                     fixes: dict | None = None) -> None:
        """**Entry point.** Refuse inference ``op`` on ``X`` when it would not fit in memory.

        See :func:`hiddenstate.segments.memory_estimate` (the emission table added).

        Parameters
        ----------
        op : str
            The inference function (``"log_likelihood"``, ``"filter"``, ``"posteriors"``,
            ``"best"``, ``"sample_posterior"``).
        X : ndarray
            The validated observations.
        seqs : hiddenstate.inference.Sequences
            Their layout.
        family : hiddenstate.families.EmissionFamily
            The emission family.
        k : int, default=1
            The number of paths.
        fixed : dict or None, default=None
            Further arrays, name -> bytes.
        what : str or None, default=None
            The operation as the error message names it.
        fixes : dict or None, default=None
            Remedies the error message suggests.

        Raises
        ------
        hiddenstate.errors.InsufficientMemoryError
            If the operation would not fit in the available memory.
        """
        parts = self._memory_parts(op, X, seqs, family, k)
        for key, value in (fixed or {}).items():
            parts[key] = parts.get(key, 0.0) + value
        what = what or f"{op} of {len(X)} observations with {self.n_states} states"
        check_parts(parts, f"{type(self).__name__}: {what}", fixes)

    def check_fit_memory(self, X, seqs: Sequences, family, started: bool = False) -> None:
        """**Entry point.** Refuse a fit that would not fit in memory.

        The E-step of the mode (posteriors, or the best segmentations) and the emission table.

        Parameters
        ----------
        X : ndarray
            The validated observations.
        seqs : hiddenstate.inference.Sequences
            Their layout.
        family : hiddenstate.families.EmissionFamily
            The emission family.
        started : bool, default=False
            Unused (no streaming learner).

        Raises
        ------
        hiddenstate.errors.InsufficientMemoryError
            If the fit would not fit in the available memory.
        """
        op = "best" if self.learn in ("vt", "kvt") else "posteriors"
        k = self.k_best if self.learn == "kvt" else 1
        self.check_memory(op, X, seqs, family, k,
                          what=f"fit (learn={self.learn!r}) on {len(X)} observations with "
                               f"{self.n_states} states")

    # -- queries ----------------------------------------------------------------------------------
    def _prepare_segments(self, X, lengths, op: str, need: str = "any", k: int = 1):
        """``(runner, seqs, table)`` after validating the parameters and the data and checking
        memory."""
        startprob, transmat, emis = self.checked_params()
        X, seqs = self.validate_data(X, lengths, self.n_features_)
        family = self.emission_family(self.n_features_)
        self.check_memory(op, X, seqs, family, k)
        runner = Runner.build(startprob, transmat, self.duration_family(),
                              self.duration_params(), self.engine, seqs, need)
        stay = transmat + np.eye(self.n_states)
        table = inference.emission_table(family, emis, X, startprob, stay, seqs)
        return runner, seqs, table

    @posterior_predictive
    def score_samples(self, X, lengths=None) -> np.ndarray:
        r"""Compute the log-likelihood of each sequence (the forward pass).

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.

        Returns
        -------
        ndarray of shape (n_sequences,)
            :math:`\log p(x)` of each sequence (``-inf``: probability zero); after
            ``learn="gibbs"`` the posterior predictive :math:`\log \frac1S \sum_s p(x \mid
            \theta_s)` over the draws (:mod:`hiddenstate.learn.gibbs_fit`).

        Raises
        ------
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InvalidInputError
            If the data, or a parameter set by hand, are invalid.
        """
        runner, seqs, table = self._prepare_segments(X, lengths, "log_likelihood")
        return runner.log_likelihood(table, seqs)

    def _segment_posteriors(self, X, lengths=None, starts: bool = False):
        runner, seqs, table = self._prepare_segments(X, lengths, "posteriors")
        out, _ = runner.posteriors(table, seqs, starts)
        check_possible(out.loglik, fitting=False)
        return out

    def _posteriors(self, X, lengths=None):
        """``(log p(x) per sequence, state posteriors (n, K))`` (as the HMM's: ``impute`` and
        ``decode(algorithm="map")`` read them)."""
        out = self._segment_posteriors(X, lengths)
        return out.loglik, out.post

    def predict_proba(self, X, lengths=None) -> np.ndarray:
        r"""Compute the state posteriors :math:`p(z_t \mid x)`.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.

        Returns
        -------
        ndarray of shape (n_samples, n_states)
            The posteriors.

        Raises
        ------
        ZeroProbabilityError
            If a sequence has probability zero under the model.
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InvalidInputError
            If the data, or a parameter set by hand, are invalid.
        """
        return self._posteriors(X, lengths)[1]

    def segment_proba(self, X, lengths=None) -> np.ndarray:
        r"""Compute the posteriors of segment starts.

        :math:`P(\text{a segment of } k \text{ starts at } t \mid x)`; summed over the
        states: the probability of a segment boundary before step ``t`` (1 at the first
        step of a sequence).

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.

        Returns
        -------
        ndarray of shape (n_samples, n_states)
            The posteriors of segment starts.

        Raises
        ------
        ZeroProbabilityError
            If a sequence has probability zero under the model.
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InvalidInputError
            If the data, or a parameter set by hand, are invalid.
        """
        return self._segment_posteriors(X, lengths, starts=True).starts

    def duration_counts(self, X, lengths=None) -> tuple[np.ndarray, np.ndarray]:
        """Compute the expected segments of each state by duration, given the data.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.

        Returns
        -------
        complete : ndarray of shape (n_states, D)
            The expected number of complete segments of each duration 1..D (D =
            ``max_duration_``).
        censored : ndarray of shape (n_states, D)
            The expected number of last segments (right-censored) by observed length.

        Raises
        ------
        ZeroProbabilityError
            If a sequence has probability zero under the model.
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InvalidInputError
            If the data, or a parameter set by hand, are invalid.
        """
        out = self._segment_posteriors(X, lengths, starts=True)
        return out.complete, out.censored

    def filter_proba(self, X, lengths=None) -> np.ndarray:
        r"""Compute the filtered state posteriors :math:`p(z_t \mid x_{0:t})`.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.

        Returns
        -------
        ndarray of shape (n_samples, n_states)
            The filtered posteriors.

        Raises
        ------
        ZeroProbabilityError
            If a sequence has probability zero under the model.
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InvalidInputError
            If the data, or a parameter set by hand, are invalid.
        """
        runner, seqs, table = self._prepare_segments(X, lengths, "filter")
        filtered, log_pred = runner.filter_states(table, seqs)
        check_possible(seqs.per_sequence_sum(log_pred), fitting=False)
        return filtered

    def score_tokens(self, X, lengths=None) -> np.ndarray:
        r"""Compute the predictive log-probability of every observation.

        :math:`\log p(x_t \mid x_{0:t-1})`; a sequence's entries sum to its log-likelihood.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.

        Returns
        -------
        ndarray of shape (n_samples,)
            The predictive log-probabilities.

        Raises
        ------
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InvalidInputError
            If the data, or a parameter set by hand, are invalid.
        """
        runner, seqs, table = self._prepare_segments(X, lengths, "filter")
        return runner.filter_states(table, seqs)[1]

    def decode(self, X, lengths=None, algorithm: str = "viterbi"):
        r"""Find the most likely segmentation (``"viterbi"``) or the per-step posterior argmax.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.
        algorithm : {"viterbi", "map"}, default="viterbi"
            ``"viterbi"``: the best segmentation; ``"map"``: the argmax of each step's
            posterior.

        Returns
        -------
        log_prob : float
            ``"viterbi"``: :math:`\log p(X, z^*)`; ``"map"``: :math:`\log p(X)`.
        state_sequence : ndarray of shape (n_samples,)
            The decoded states.

        Raises
        ------
        ZeroProbabilityError
            If a sequence has probability zero under the model.
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InvalidInputError
            If the data, a parameter set by hand or ``algorithm`` are invalid.
        """
        if algorithm == "viterbi":
            logprob, paths = self.best_segmentations(X, lengths, 1)
            return float(logprob[:, 0].sum()), paths[0]
        if algorithm == "map":
            loglik, post = self._posteriors(X, lengths)
            return float(loglik.sum()), post.argmax(axis=1)
        raise InvalidInputError(f"algorithm: {algorithm!r} is not 'viterbi' or 'map'")

    def best_segmentations(self, X, lengths=None, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Find the ``k`` most probable segmentations of each sequence.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.
        k : int, default=1
            The number of segmentations per sequence.

        Returns
        -------
        logprob : ndarray of shape (n_sequences, k)
            :math:`\\log p(x, z_r)`, best first (``-inf`` where a sequence has fewer than
            ``k`` of non-zero probability).
        paths : ndarray of int64 of shape (k, n_samples)
            The states of each (-1 where it does not exist).

        Raises
        ------
        ZeroProbabilityError
            If a sequence has probability zero under the model.
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InvalidInputError
            If the data, ``k`` or a parameter set by hand are invalid.
        """
        k = check_positive_int(k, "k")
        runner, seqs, table = self._prepare_segments(X, lengths, "best",
                                                     "viterbi" if k == 1 else "learn", k)
        logprob, paths = runner.best_paths(table, seqs, k)
        check_possible(logprob[:, 0], fitting=False, use="best segmentation")
        return logprob, paths

    def sample_posterior(self, X, lengths=None, random_state=None) -> np.ndarray:
        r"""Draw one segmentation from :math:`p(z \mid x)` (forward filtering, backward sampling).

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.
        random_state : int, numpy.random.Generator or None, default=None
            The seed; None: the estimator's ``random_state``.

        Returns
        -------
        ndarray of shape (n_samples,)
            The sampled states.

        Raises
        ------
        ZeroProbabilityError
            If a sequence has probability zero under the model.
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InvalidInputError
            If the data, or a parameter set by hand, are invalid.
        """
        rng = make_rng(self.random_state if random_state is None else random_state)
        runner, seqs, table = self._prepare_segments(X, lengths, "sample_posterior")
        states = runner.sample_posterior(table, seqs, rng)
        check_possible(drawn_path_loglik(states, seqs.bounds), fitting=False)
        return states

    def sample(self, n_samples: int = 1, random_state=None):
        """Draw one sequence of ``n_samples`` steps.

        Segments of states and durations, then the observations. Durations are drawn from
        the family's pmf on 1..``max_duration_`` (renormalised); the last segment is cut at
        ``n_samples``.

        Parameters
        ----------
        n_samples : int, default=1
            The length of the sequence.
        random_state : int, numpy.random.Generator or None, default=None
            The seed; None: the estimator's ``random_state``.

        Returns
        -------
        X : ndarray
            The observations.
        states : ndarray of shape (n_samples,)
            The hidden states.

        Raises
        ------
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InsufficientMemoryError
            If the sample would not fit in memory.
        """
        startprob, transmat, emis = self.checked_params()
        n = check_positive_int(n_samples, "n_samples")
        rng = make_rng(self.random_state if random_state is None else random_state)
        check_parts({"n_samples": sample_bytes(self, n) + 24.0 * n},
                    f"sample(n_samples={n})")
        dfamily = self.duration_family()
        dparams = self.duration_params()
        states = np.empty(n, dtype=np.int64)
        t = 0
        j = int(rng.choice(self.n_states, p=startprob))
        while t < n:
            d = int(dfamily.sample(dparams, np.array([j]), rng)[0])
            states[t:t + d] = j
            t += d
            if t < n:
                j = int(rng.choice(self.n_states, p=transmat[j]))
        X = self.emission_family(self.n_features_).sample(emis, states, rng)
        return X, states

    def permute_states(self, perm) -> HSMM:
        """Reorder the hidden states: state ``j`` becomes what state ``perm[j]`` was.

        Applied to ``startprob_``, both axes of ``transmat_``, the emission and the duration
        parameters and the variational posteriors, so the model describes the same
        distribution (``score_samples`` unchanged to rounding).

        Parameters
        ----------
        perm : array-like of int of shape (n_states,)
            A permutation of ``0 .. n_states - 1``.

        Returns
        -------
        HSMM
            The model itself, permuted.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``perm`` is not a permutation of the states.
        NotFittedError
            If the parameters are not set.
        """
        startprob, transmat, emission = self.checked_params()
        K = len(startprob)
        perm = np.asarray(perm)
        if perm.shape != (K,) or perm.dtype.kind not in "iu" or not np.array_equal(
                np.sort(perm), np.arange(K)):
            raise InvalidInputError(
                f"perm: expected a permutation of 0 .. {K - 1} (one entry per state), got "
                f"{np.asarray(perm).tolist()!r:.80}")
        family = self.emission_family(self.n_features_)
        durations = {key: value[perm] for key, value in self.duration_params().items()}
        posterior = {a[:-len(POSTERIOR_SUFFIX)]: getattr(self, a)
                     for a in self._posterior_attrs()}
        transitions = between_states(K)
        self.assign_params(startprob[perm], transmat[np.ix_(perm, perm)],
                           family.permute_states(emission, perm))
        for key, value in durations.items():
            setattr(self, key + "_", value)
        for key, value in posterior.items():
            if key == "startprob":
                new = value[perm]
            elif key == "transmat":
                new = transitions.gather(transitions.dense(value)[np.ix_(perm, perm)])
            elif key.startswith("duration"):  # the durations' posteriors: one row per state
                new = value[perm]
            else:
                new = family.permute_states({key: value}, perm)[key]
            setattr(self, key + POSTERIOR_SUFFIX, np.ascontiguousarray(new))
        return self

    def n_parameters(self) -> int:
        """Count the free parameters (for AIC and BIC).

        Returns
        -------
        int
            :math:`(K - 1) + K (K - 2)` (the rows of ``transmat_`` without their diagonal),
            the emission family's and the durations' free parameters.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        """
        self.check_is_fitted()
        K = self.n_states
        return ((K - 1) + K * (K - 2)
                + self.emission_family(self.n_features_).n_free_parameters()
                + self.duration_family().n_free_parameters())

    def duration_pmf(self) -> np.ndarray:
        """Return the duration pmf of every state on 1..``max_duration_``.

        Returns
        -------
        ndarray of shape (n_states, D)
            :math:`f_k(d)` for d = 1..D, D = ``max_duration_``.

        Raises
        ------
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        """
        self.check_is_fitted()
        return self.duration_family().pmf(self.duration_params())

    def mean_durations(self) -> np.ndarray:
        """Return the mean duration of every state (of its whole duration distribution).

        Returns
        -------
        ndarray of shape (n_states,)
            The means.

        Raises
        ------
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        """
        self.check_is_fitted()
        return self.duration_family().mean(self.duration_params())

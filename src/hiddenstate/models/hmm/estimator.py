r"""The hidden Markov model estimator, :class:`HMM` (scikit-learn conventions, hmmlearn
attribute names), and the framework its subclasses and other layers build on.

The estimator is a template: ``fit``, ``partial_fit`` and every inference method run the
same steps, and a subclass (:class:`~hiddenstate.PROPS`, the hmmlearn classes of
:mod:`hiddenstate.compat.hmmlearn`) or another layer (:mod:`hiddenstate.distributed`)
changes or reuses a step through the named methods below, never through the private ones.
The rest lives in the package's other modules: :mod:`.chain` (allowed transitions, dense or
sparse inference), :mod:`.problem` (the model as the batch learner's Problem),
:mod:`.priors`, :mod:`.init` (initial parameters; the restart loop is
:func:`hiddenstate.learn.fit_restarts`),
:mod:`.hyperparameters` and :mod:`.memory`; the estimator's methods are grouped in its bases
:class:`~.queries.HMMQueries` (scores, posteriors, decoding, sampling, information
criteria), :class:`~.streaming.HMMStreaming` (``partial_fit``),
:class:`~.storage.HMMStorage` (``save`` and restoring) and
:class:`~.parameters.HMMParameters` (the learned attributes); this module holds the
construction, the hooks and ``fit``.

Extension points
----------------
Hooks (a subclass overrides them; the default is the plain HMM's):

``check_hyperparameters()``
    Validate the hyper-parameters; returns nothing, raises
    :class:`~hiddenstate.errors.InvalidInputError`. Called first by ``fit``,
    ``partial_fit`` and :func:`hiddenstate.distributed.fit`.
``validate_data(X, lengths, n_features, stream=False, continues=False)``
    The observations as the emission family reads them and their layout
    (:class:`~hiddenstate.inference.Sequences`); ``n_features`` None before it is known;
    ``stream``/``continues``: the data feed a streaming learner (and continue its last
    sequence). Called on every input (fit, inference, each partition of a distributed fit).
``resolve_n_features(X=None)``
    Without ``X``: the number of features known before seeing data (or None); with
    validated ``X``: that number, else the one ``X`` implies. Called by ``fit`` around
    ``validate_data`` and by ``n_features_`` when nothing set it.
``emission_family(n_features, X=None, n_states=None)``
    The emission family (:class:`~hiddenstate.families.EmissionFamily`) of ``n_states``
    states (default all) with the priors in force; ``X`` given when fitting (the priors are
    checked and data-dependent defaults filled in). Called wherever a family is needed.
``prior(name)``
    The prior hyper-parameter ``name`` in force for the learning mode (its default for
    None). Read when building the chain's Dirichlet blocks and the family.
``learned_letters()``
    The letters (``params``) of the parameters the batch modes learn.
``make_learner()``
    The streaming learner of ``learn`` with its options (see
    :mod:`hiddenstate.learn.online`).
``validation_key()``
    A value that changes whenever a hyper-parameter that shapes the learned parameters
    changes; the parameters are validated again at their next use then (see
    :mod:`hiddenstate.models._learned`).
``check_learner_state(state)``
    Validate a streaming learner's state (a saved one, or one set by hand) before use.
``extra_learner_state()``
    Entries (a dict) added to ``learner_state_`` after each streaming update (PROPS: the
    sources' positions in the stream); called by ``fit``/``partial_fit``.
``check_is_fitted()``
    Raise :class:`~hiddenstate.errors.NotFittedError` unless every parameter is set, then
    validate them; called by every method that reads the parameters.

Entry points (called, not overridden):

``problem(family, X, seqs, states=None)``
    The model on validated data as a :class:`~hiddenstate.learn.batch.Problem` (one per
    partition in a distributed fit; its statistics merge with
    :func:`hiddenstate.learn.merge_statistics`).
``fit_problem(problem, family, n_features, X, seqs, rng, callback=None, states=None)``
    The ``n_init`` restarts of the batch mode on ``problem`` (any Problem: one data set or
    all partitions), each started from ``X``/``seqs`` (the data, or a sample of them);
    stores the best run's parameters and ``monitor_``; returns the model.
``checked_params()``, ``emission_params()``, ``assign_params(startprob, transmat, emission)``
    The validated ``(startprob, transmat, emission params)``; the emission parameters by
    family key; set all the parameters at once.
``check_memory(op, X, seqs, family, ...)``, ``check_fit_memory(X, seqs, family)``
    Refuse an inference operation, or a fit, that would not fit in memory (before
    anything is allocated).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..._deprecation import keyword_only_after_first, renamed_method
from ..._sklearn_base import BaseEstimator
from ..._validation import (
    check_lengths,
    check_sequence_list,
    check_states,
    make_rng,
)
from ...errors import InvalidInputError
from ...families.mixed import is_mixed
from ...families.multicategorical import MultiCategoricalEmissions, check_feature_symbols
from ...inference import Sequences, Transitions
from ...learn import fit_restarts
from ...learn.gibbs_fit import clear_gibbs
from ...learn.online import ONLINE_MODES, make_learner
from .chain import Chain, transitions_of
from .fixed import chain_fixed, impose_start
from .gibbs import HMMGibbs, fit_hmm_gibbs, gibbs_extra_options
from .hdp import StickyHDPProblem, is_sticky
from .hyperparameters import ALL_LETTERS, as_n_features, check_hyperparameters
from .init import initial_params, labelled_start
from .memory import check_fit_memory
from .parameters import HMMParameters, mixed_n_features
from .priors import build_family, prior_in_force
from .problem import HMMProblem
from .queries import HMMQueries
from .storage import HMMStorage
from .streaming import HMMStreaming
from .weights import SampleWeights


class HMM(HMMQueries, HMMStreaming, HMMStorage, HMMParameters, HMMGibbs, BaseEstimator):
    r"""Hidden Markov model with categorical, Gaussian, Poisson, mixture or multinomial emissions.

    .. math::
        p(x_{0:T}, z_{0:T}) = \pi_{z_0} \prod_{t\ge1} A_{z_{t-1} z_t}
                              \prod_t p(x_t \mid z_t)

    The parameters are learned by the mode ``learn`` names (batch: EM, MAP, VB, Viterbi
    training; streaming: online EM and the other learners of :mod:`hiddenstate.learn.online`)
    and follow hmmlearn's names (``startprob_``, ``transmat_``, ``emissionprob_``, ``means_``,
    ``covars_``, ``lambdas_``, ``weights_``). They can also be set by hand (every one of them,
    before any inference method); they are validated at their first use after a change. The
    hooks a subclass overrides and the entry points other layers call are listed in
    :mod:`hiddenstate.models.hmm.estimator`.

    Parameters
    ----------
    n_states : int, default=2
        The number of hidden states K.
    emission : str or dict, default="categorical"
        The emission family, ``"categorical"``, ``"gaussian"``, ``"poisson"``, ``"gmm"`` or
        ``"multinomial"``: integer symbols, Gaussian vectors, Poisson counts, a mixture of
        ``n_mix`` Gaussians per state, or count vectors (see ``docs/families.md``); or a
        dict of families to the columns of ``X`` they emit, ``{"gaussian": [0, 1],
        "categorical": [2], "poisson": [3]}``: mixed emissions, independent given the
        state, NaN missing in any column (:mod:`hiddenstate.families.mixed`).
    n_features : int, sequence of int or None, default=None
        The number of symbols (categorical) or features; None: inferred from the data.
        Several categorical features per step (``X`` of shape ``(n, F)``, F > 1): a product
        of per-feature categoricals, ``n_features`` is then the alphabet size of each
        feature (a sequence of F ints) and ``emissionprob_`` has shape ``(F, K, W)`` with
        ``W`` the largest alphabet (zeros past a feature's own). Mixed emissions: one
        entry per column (a categorical column's alphabet, 1 for the others).
    covariance_type : {"spherical", "diag", "full", "tied"}, default="diag"
        The form of the covariances (``"gaussian"`` and ``"gmm"``; gmm's ``"tied"`` shares
        one matrix among a state's components).
    n_iter : int, default=100
        The maximum number of iterations of a batch mode.
    tol : float, default=1e-4
        EM, MAP and VB stop when an iteration improves their objective by less than ``tol``
        nats per observation (per time step: the gain divided by the number of samples;
        ``-inf``: run all ``n_iter`` iterations). VT and k-best VT ignore ``tol``: they stop
        when their paths repeat (see :func:`hiddenstate.learn.fit_restarts`).
    n_init : int, default=1
        The number of random restarts; the run with the highest final objective of the mode
        is kept (the earliest among equal ones).
    init_params : str, default="stemclw"
        The letters of the parameters ``fit`` initialises (``s`` startprob, ``t`` transmat,
        ``e`` emissionprob, ``m`` means, ``c`` covars, ``l`` lambdas, ``w`` mixture
        weights); a parameter whose letter is absent must be set by hand before ``fit`` and
        starts from that value.
    params : str, default="stemclw"
        The letters of the parameters the batch modes update; the others keep their value.
    min_covar : float, default=1e-3
        The floor of the variances (and covariance eigenvalues), applied with a warning.
    random_state : int, numpy.random.Generator or None, default=None
        The seed of the initialisation, the restarts and the samplers.
    verbose : bool, default=False
        Print the objective of every iteration to stderr.
    learn : str, default="em"
        The learning mode (see :mod:`hiddenstate.learn`): ``"em"`` (maximum likelihood),
        ``"map"`` (posterior mode under the priors below), ``"vb"`` (mean-field variational
        Bayes; posterior hyper-parameters in ``*_posterior_``), ``"vt"`` (Viterbi training:
        hard EM on the best path) or ``"kvt"`` (the ``k_best`` best paths). Streaming learners
        (each observation or sequence seen once; ``fit`` is one pass and :meth:`partial_fit`
        continues the stream): ``"online-em"`` (Cappé 2011), ``"bwo"`` (Baum-Welch online),
        ``"baldi-chauvin"``, ``"bona"`` (Bayesian online) and ``"mpa"`` (mean posterior
        approximation); see :mod:`hiddenstate.learn.online`.
    k_best : int, default=1
        The number of paths of ``learn="kvt"``.
    startprob_prior : float, array-like or None, default=None
        The Dirichlet concentration of the initial distribution.
    transmat_prior : float, array-like or None, default=None
        The Dirichlet concentration of each transition row.
    emissionprob_prior : float, array-like or None, default=None
        The Dirichlet concentration of each row of ``emissionprob_`` (categorical).
    means_prior : float, array-like or None, default=None
        The prior mean of the means (Gaussian, gmm; hmmlearn's meaning).
    means_weight : float, array-like or None, default=None
        The weight of ``means_prior``.
    covars_prior : float, array-like or None, default=None
        The scale of the covariances' prior.
    covars_weight : float, array-like or None, default=None
        The weight of ``covars_prior``.
    lambdas_prior : float, array-like or None, default=None
        The Gamma prior of the Poisson rates: its shape minus one.
    lambdas_weight : float, array-like or None, default=None
        The Gamma prior of the Poisson rates: its rate.
    learner_options : dict or None, default=None
        The keyword arguments of the streaming learner (``{"step_exponent": 0.7}`` for online
        EM, ``{"eta": 0.1}`` for BWO); None: its defaults.
    n_mix : int, default=1
        The number of mixture components per state (``emission="gmm"``).
    n_trials : int or None, default=None
        The trials per row (``emission="multinomial"``): None, each row's total; an int,
        the total every row must have (needed by :meth:`sample`).
    weights_prior : float, array-like or None, default=None
        The Dirichlet concentration of the mixture weights (gmm; its components take the
        Gaussian priors above). The priors are used by every mode but ``"em"``; None takes
        the mode's default (see ``docs/learning-modes.md``).
    topology : {"full", "left-right", "banded"}, default="full"
        The allowed transitions: all; state ``i`` to ``j >= i`` only (with ``bandwidth``,
        ``i <= j <= i + bandwidth``); ``|i - j| <= bandwidth``.
    bandwidth : int or None, default=None
        See ``topology`` (needed by ``"banded"``).
    transmat_mask : array-like of bool of shape (n_states, n_states) or None, default=None
        The allowed transitions, combined with ``topology``. The other entries of
        ``transmat_`` are zero and stay exactly zero in every mode; with few allowed
        transitions (at most a quarter of ``K**2``) the sparse kernels run, at a cost
        proportional to their number.
    fixed : dict or None, default=None
        Entries of the parameters that stay at given values while the others are learned:
        a parameter's name without the trailing underscore (``"startprob"``,
        ``"transmat"``, ``"emissionprob"``, ``"means"``, ``"covars"``, ``"lambdas"``) ->
        an array of its shape, NaN for the learned entries (``{"transmat": [[nan, 0.3],
        [nan, nan]]}`` fixes one transition at 0.3; each row's other entries share 0.7).
        Every batch mode honours them by constrained M-steps (rows stay normalised); see
        :mod:`hiddenstate.models.hmm.fixed`.

    Attributes
    ----------
    startprob_ : ndarray of shape (n_states,)
        The initial state distribution :math:`\pi`.
    transmat_ : ndarray of shape (n_states, n_states)
        The transition matrix :math:`A`.
    emissionprob_ : ndarray of shape (n_states, n_features)
        The symbol probabilities of each state (categorical; ``(F, K, W)`` for F features).
    means_ : ndarray of shape (n_states, n_features)
        The means (Gaussian; gmm: ``(n_states, n_mix, n_features)``).
    lambdas_ : ndarray of shape (n_states, n_features)
        The Poisson rates.
    weights_ : ndarray of shape (n_states, n_mix)
        The mixture weights (gmm).
    monitor_ : hiddenstate.learn.ConvergenceMonitor
        The objective of every iteration (``history``) and ``converged``.
    stream_log_prob_ : ndarray of shape (n_samples,)
        ``learn="online-em"``: the prequential log-probability
        :math:`\log p(x_t \mid x_{<t}, \theta_{t-1})` of each observation of the last
        ``fit``/``partial_fit`` call, predicted before the parameters learned from it (a
        running learning curve; the running iterate, also with Polyak-Ruppert averaging).
    learner_state_ : dict
        The streaming learner's state (streaming modes).

    See Also
    --------
    hiddenstate.compat.hmmlearn : The same model under hmmlearn's classes and meanings.

    Examples
    --------
    >>> import hiddenstate as hs
    >>> teacher = hs.HMM(n_states=2, n_features=3)
    >>> teacher.startprob_ = [0.6, 0.4]
    >>> teacher.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
    >>> teacher.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
    >>> X, states = teacher.sample(500, random_state=1)
    >>> model = hs.HMM(n_states=2, n_iter=200, random_state=0).fit(X)
    >>> model.monitor_.converged
    True
    >>> model.emissionprob_.round(1)
    array([[0.8, 0.2, 0. ],
           [0. , 0.4, 0.6]])
    >>> bool((model.predict(X) == states).mean() > 0.7)
    True
    """

    score_sequences = renamed_method("score_sequences", "score_samples")

    @keyword_only_after_first
    def __init__(self, n_states: int = 2, emission: str = "categorical",
                 n_features: int | None = None, covariance_type: str = "diag",
                 n_iter: int = 100, tol: float = 1e-4, n_init: int = 1,
                 init_params: str = ALL_LETTERS, params: str = ALL_LETTERS,
                 min_covar: float = 1e-3, random_state=None, verbose: bool = False,
                 learn: str = "em", k_best: int = 1, startprob_prior=None,
                 transmat_prior=None, emissionprob_prior=None, means_prior=None,
                 means_weight=None, covars_prior=None, covars_weight=None,
                 lambdas_prior=None, lambdas_weight=None, learner_options: dict | None = None,
                 n_mix: int = 1, n_trials=None, weights_prior=None, topology: str = "full",
                 bandwidth: int | None = None, transmat_mask=None, fixed: dict | None = None):
        self.n_states = n_states
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
        self.learner_options = learner_options
        self.n_mix = n_mix
        self.n_trials = n_trials
        self.weights_prior = weights_prior
        self.topology = topology
        self.bandwidth = bandwidth
        self.transmat_mask = transmat_mask
        self.fixed = fixed

    # -- hooks: configuration --------------------------------------------------------------------
    def check_hyperparameters(self) -> None:
        """**Hook.** Validate the hyper-parameters.

        See :mod:`hiddenstate.models.hmm.hyperparameters`. Called first by ``fit``,
        ``partial_fit`` and :func:`hiddenstate.distributed.fit`.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a hyper-parameter is invalid; the message names it.
        """
        check_hyperparameters(self)

    def _check_hyper(self) -> None:
        """:meth:`check_hyperparameters` under the name every model's loader calls
        (:func:`hiddenstate.load`)."""
        self.check_hyperparameters()

    def prior(self, name: str):
        """**Hook.** Return the prior hyper-parameter ``name`` in force for the learning mode.

        Flat for ``"em"``, else as set, else the mode's default
        (:mod:`hiddenstate.models.hmm.priors`).

        Parameters
        ----------
        name : str
            The name of a prior hyper-parameter (``"transmat_prior"``, ``"means_weight"`` ...).

        Returns
        -------
        float, ndarray or None
            The value in force.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> hs.HMM(learn="map", transmat_prior=2.0).prior("transmat_prior")
        2.0
        """
        return prior_in_force(self.learn, name, getattr(self, name))

    def emission_family(self, n_features, X: np.ndarray | None = None,
                        n_states: int | None = None):
        """**Hook.** Return the emission family with the priors in force.

        With data (fitting) the priors are checked and VB's data-dependent prior defaults filled
        in (:func:`hiddenstate.models.hmm.priors.build_family`).

        Parameters
        ----------
        n_features : int or tuple of int
            The number of symbols or features.
        X : ndarray or None, default=None
            The validated training data, when fitting.
        n_states : int or None, default=None
            The number of states; None: ``n_states``.

        Returns
        -------
        hiddenstate.families.EmissionFamily
            The family.
        """
        return build_family(self, n_features, X, n_states)

    def learned_letters(self) -> str:
        """**Hook.** Return the letters of the parameters the batch modes learn.

        Returns
        -------
        str
            ``params`` (PROPS leaves out the parameters its sources fix).
        """
        return self.params

    def make_learner(self):
        """**Hook.** Return the streaming learner of ``learn`` with ``learner_options``.

        Returns
        -------
        hiddenstate.learn.online.OnlineLearner
            The learner (see :func:`hiddenstate.learn.online.make_learner`).
        """
        return make_learner(self.learn, self.learner_options or {})

    def _transitions(self) -> Transitions | None:
        """The allowed transitions of a structured model (``topology``, ``bandwidth``,
        ``transmat_mask``), or None when every transition is allowed."""
        return transitions_of(self)

    def _chain(self, startprob, transmat) -> Chain:
        """The chain of the model's parameters (structured: its allowed entries)."""
        return Chain.of(startprob, transmat, self._transitions())

    # -- hooks: data ---------------------------------------------------------------------------
    def resolve_n_features(self, X: np.ndarray | None = None):
        """**Hook.** Return the number of features known, or the one ``X`` implies.

        Known before seeing data: ``n_features``, or the shape of an ``emissionprob_`` set by
        hand that ``fit`` keeps.

        Parameters
        ----------
        X : ndarray or None, default=None
            Validated observations.

        Returns
        -------
        int, tuple of int or None
            The number known, else (with ``X``) the one ``X`` implies; None when nothing is known
            yet.
        """
        known = as_n_features(self.n_features)
        if is_mixed(self.emission):  # per column: needs the alphabets of categorical ones
            if known is None and ("e" not in self.init_params
                                  or "categorical" not in self.emission):
                known = mixed_n_features(self)
            if known is not None or X is None:
                return known
            return self.emission_family(1).infer_n_features(X)
        if self.n_features is None and "e" not in self.init_params \
                and hasattr(self, "emissionprob_"):
            shape = np.asarray(self.emissionprob_).shape
            known = (shape[2],) * shape[0] if len(shape) == 3 else shape[1]
        if known is not None or X is None:
            return known
        if self.emission == "categorical" and X.ndim == 2:  # several features
            return MultiCategoricalEmissions(self.n_states, (1,) * X.shape[1]
                                             ).infer_n_features(X)
        return self.emission_family(1).infer_n_features(X)

    def validate_data(self, X, lengths, n_features, stream: bool = False,
                      continues: bool = False):
        """**Hook.** Validate the observations and return them with their layout.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None
            The length of each sequence; None: one sequence.
        n_features : int, tuple of int or None
            The number of symbols or features; None before it is known.
        stream : bool, default=False
            The data feed a streaming learner.
        continues : bool, default=False
            The data continue the last sequence of the stream.

        Returns
        -------
        X : ndarray
            The observations as the emission family reads them.
        seqs : hiddenstate.inference.Sequences
            Their layout.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``X`` or ``lengths`` is invalid.
        """
        check_sequence_list(X, lengths, categorical=self.emission == "categorical",
                            rows_declared=isinstance(n_features, tuple))
        if self.emission == "categorical" and (
                isinstance(n_features, tuple) or (len(np.shape(X)) == 2
                                                  and np.shape(X)[1] > 1)):
            Xv = check_feature_symbols(X, n_features)   # several categorical features
            seqs = Sequences.from_lengths(check_lengths(lengths, len(Xv)))
            return Xv, seqs
        Xv = self.emission_family(n_features or 1).validate_X(X, n_features)
        seqs = Sequences.from_lengths(check_lengths(lengths, len(Xv)))
        return Xv, seqs

    # -- fitting ---------------------------------------------------------------------------------
    def problem(self, family, X, seqs: Sequences, states=None,
                weights: SampleWeights | None = None) -> HMMProblem:
        """**Entry point.** Return the model on validated data as the batch learner's Problem.

        Parameters
        ----------
        family : hiddenstate.families.EmissionFamily
            The emission family (:meth:`emission_family`).
        X : ndarray
            The validated observations (:meth:`validate_data`).
        seqs : hiddenstate.inference.Sequences
            Their layout.
        states : ndarray of int or None, default=None
            Partial state labels (``-1``: unknown).
        weights : hiddenstate.models.hmm.weights.SampleWeights or None, default=None
            The sample weights (:meth:`fit`'s ``sample_weight``, checked).

        Returns
        -------
        hiddenstate.models.hmm.HMMProblem
            The :class:`~hiddenstate.learn.batch.Problem` (its statistics merge with
            :func:`hiddenstate.learn.merge_statistics`).
        """
        if is_sticky(self):
            options = {**gibbs_extra_options(self), **(self.learner_options or {})}
            return StickyHDPProblem(family, X, seqs, self.prior("startprob_prior"), options,
                                    states, weights)
        return HMMProblem(family, X, seqs, self.prior("startprob_prior"),
                          self.prior("transmat_prior"), states, self._transitions(), weights,
                          chain_fixed(self))

    def fit(self, X, lengths=None, callback: Callable[[int, float], None] | None = None,
            states=None, sample_weight=None):
        r"""Learn the parameters with the mode ``learn`` chooses from one or more sequences.

        With ``n_init > 1`` the run with the highest final objective of the mode is kept. A
        streaming mode makes one pass over the data (from a fresh learner).

        Known hidden states (``states``) clamp each labelled step's posterior to its label (its
        emission row is masked to the label, :func:`hiddenstate.inference.clamp_states`), in
        the E-step of every mode: semi-supervised learning; with every step labelled, one
        iteration gives the supervised estimates (counts, plus the priors of the mode). The
        streaming learners clamp the same way (online EM's filter, each sequence's
        forward-backward for BWO and Baldi-Chauvin, the paths that BOnA and MPA enumerate).

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other: categorical, integer symbols
            of shape ``(n_samples,)`` or ``(n_samples, 1)`` (``(n_samples, F)`` for ``F``
            categorical features); the other families, ``(n_samples, n_features)``.
        lengths : array-like of int or None, default=None
            The length of each sequence (they sum to ``n_samples``); None: one sequence.
        callback : callable or None, default=None
            ``callback(iteration, objective)``, called after every iteration of a batch mode
            (for example a :class:`hiddenstate.progress.FitProgress`).
        states : array-like of int of shape (n_samples,) or None, default=None
            Known hidden states, ``-1`` where the state is unknown.
        sample_weight : array-like, dict or None, default=None
            Batch modes only. One weight per sequence (the objective is
            :math:`\sum_s v_s \log p(x_s)`: an integer weight counts the sequence that many
            times), one per observation (its emission term raised to the weight: an
            integer weight counts the observation that many times at its step, 0 is
            missing), or ``{"sequence": v, "observation": w}`` for both (or when every
            sequence is one observation long). Weights are finite and >= 0; the monitor
            records the weighted objective. See :mod:`hiddenstate.models.hmm.weights`.

        Returns
        -------
        HMM
            The model itself, fitted.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a hyper-parameter, the data or a parameter set by hand is invalid.
        hiddenstate.errors.InsufficientMemoryError
            If the fit would not fit in memory (raised before anything is allocated).

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> X = np.array([0, 0, 1, 0, 2, 2, 1, 2, 0, 0, 1, 2, 2, 2])
        >>> model = hs.HMM(n_states=2, n_init=3, random_state=0).fit(X, lengths=[6, 8])
        >>> model.transmat_.shape, model.emissionprob_.shape
        ((2, 2), (2, 3))
        """
        self.check_hyperparameters()
        streaming = self.learn in ONLINE_MODES
        X, seqs = self.validate_data(X, lengths, self.resolve_n_features(), stream=streaming)
        if states is not None:
            states = check_states(states, len(X), self.n_states)
        weights = SampleWeights.of(sample_weight, seqs)
        if weights is not None and streaming:
            raise InvalidInputError(
                f"sample_weight: the streaming learner {self.learn!r} does not take weights; "
                "use a batch mode (learn='em', 'map', 'vb', 'vt' or 'kvt')")
        n_features = self.resolve_n_features(X)
        family = self.emission_family(
            n_features, X if weights is None else weights.prior_data(X, seqs))
        self.check_fit_memory(X, seqs, family)
        rng = make_rng(self.random_state)
        if streaming:
            clear_gibbs(self)
            if hasattr(self, "learner_state_"):
                delattr(self, "learner_state_")
            return self._stream(X, seqs, family, rng, n_features, continues=False,
                                states=states)
        return self.fit_problem(self.problem(family, X, seqs, states, weights), family,
                                n_features, X, seqs, rng, callback, states)

    def fit_problem(self, problem, family, n_features, X, seqs: Sequences | None, rng,
                    callback=None, states=None) -> HMM:
        """**Entry point.** Run the ``n_init`` restarts of the batch mode on ``problem``.

        Each restart starts from :func:`hiddenstate.models.hmm.init.initial_params` of ``X`` and
        ``seqs`` (the data, or the sample of it that :func:`hiddenstate.distributed.fit`
        gathers) and, with partial state labels ``states``, emission parameters from the
        labelled steps; the run with the highest final objective is kept
        (:func:`hiddenstate.learn.fit_restarts`, which owns the stop rules): its parameters
        and ``monitor_``.

        Parameters
        ----------
        problem : hiddenstate.learn.batch.Problem
            The problem (one data set, or all the partitions of a distributed fit).
        family : hiddenstate.families.EmissionFamily
            The emission family.
        n_features : int or tuple of int
            The number of symbols or features (stored as ``n_features_``).
        X : ndarray or None
            The data the initial parameters are drawn from; None when nothing is initialised
            from data.
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
        HMM
            The model itself, fitted.
        """
        def start(restart):
            startprob, transmat, emis = initial_params(self, X, family, rng, seqs,
                                                       values=True, warn=restart == 0)
            if states is not None:
                emis = labelled_start(family, X, states, emis, self.init_params)
            if getattr(self, "fixed", None):
                startprob, transmat, emis = impose_start(self, family, startprob, transmat,
                                                         emis, values=True)
            return {"startprob": startprob, "transmat": transmat, "emission": emis}

        if self.learn == "gibbs":
            return fit_hmm_gibbs(self, problem, start, n_features, rng, callback)
        clear_gibbs(self)
        best = fit_restarts(problem, self.learn, start, n_init=self.n_init,
                            n_iter=self.n_iter, tol=self.tol, which=self.learned_letters(),
                            k_best=self.k_best, verbose=self.verbose, callback=callback)
        self.monitor_ = best.monitor
        self.n_features_ = n_features
        transmat = best.params["transmat"]
        transitions = self._transitions()
        if transitions is not None:  # the allowed entries only: back to K x K
            transmat = transitions.dense(transmat)
        self.assign_params(best.params["startprob"], transmat, best.params["emission"])
        self._set_posterior_(best.posterior)
        return self

    def check_fit_memory(self, X, seqs: Sequences, family, started: bool = False) -> None:
        """**Entry point.** Refuse a fit that would not fit in memory.

        See :func:`hiddenstate.models.hmm.memory.check_fit_memory`.

        Parameters
        ----------
        X : ndarray
            The validated observations.
        seqs : hiddenstate.inference.Sequences
            Their layout.
        family : hiddenstate.families.EmissionFamily
            The emission family.
        started : bool, default=False
            A streaming learner already holds its state (its arrays are not counted again).

        Raises
        ------
        hiddenstate.errors.InsufficientMemoryError
            If the fit would not fit in the available memory.
        """
        check_fit_memory(self, X, seqs, family, started)

    # -- streaming -------------------------------------------------------------------------------
    def extra_learner_state(self) -> dict:
        """**Hook.** Return the entries added to ``learner_state_`` after each streaming update.

        Returns
        -------
        dict
            Nothing for the plain HMM; PROPS adds the sources' positions in the stream.
        """
        return {}

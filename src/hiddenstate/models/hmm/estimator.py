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
:mod:`.hyperparameters` and :mod:`.memory`.

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

from ... import inference
from ..._deprecation import renamed_method
from ..._sklearn_base import BaseEstimator
from ..._validation import (
    check_lengths,
    check_positive_int,
    check_sequence_list,
    check_states,
    make_rng,
)
from ..._validation import check_memory as check_parts
from ...errors import InvalidInputError
from ...families.multicategorical import MultiCategoricalEmissions, check_feature_symbols
from ...inference import Sequences, Transitions
from ...learn import ConvergenceMonitor, fit_restarts
from ...learn.online import ONLINE_MODES, StateRecord, make_learner
from .chain import Chain, transitions_of
from .hyperparameters import ALL_LETTERS, as_n_features, check_hyperparameters
from .init import initial_params, labelled_start
from .memory import check_fit_memory, check_memory, sample_bytes
from .parameters import POSTERIOR_SUFFIX, HMMParameters
from .priors import build_family, prior_in_force
from .problem import HMMProblem, check_possible

_STATE_PREFIX = "learner_state_."


class HMM(HMMParameters, BaseEstimator):
    r"""Hidden Markov model with categorical, Gaussian, Poisson, Gaussian-mixture or
    multinomial emissions.

    .. math::
        p(x_{0:T}, z_{0:T}) = \pi_{z_0} \prod_{t\ge1} A_{z_{t-1} z_t}
                              \prod_t p(x_t \mid z_t)

    Parameters
    ----------
    n_states : number of hidden states K.
    emission : ``"categorical"`` (integer symbols), ``"gaussian"``, ``"poisson"``, ``"gmm"``
        (a mixture of ``n_mix`` Gaussians per state) or ``"multinomial"`` (count vectors;
        see ``docs/families.md``).
    n_features : number of symbols (categorical) or features; inferred from the data if None.
        Several categorical features per step (``X`` of shape ``(n, F)``, F > 1): a product
        of per-feature categoricals; ``n_features`` is then the alphabet size of each
        feature (a sequence of F ints), and ``emissionprob_`` has shape ``(F, K, W)`` with
        ``W`` the largest alphabet (zeros past a feature's own).
    covariance_type : ``"spherical"``, ``"diag"``, ``"full"`` or ``"tied"`` (Gaussian and
        gmm; gmm's "tied" shares one matrix among a state's components).
    n_mix : number of mixture components per state (``emission="gmm"``).
    n_trials : trials per row (``emission="multinomial"``): None (each row's total) or an
        int every row's total must equal (needed by ``sample``).
    n_iter, tol : EM stops after ``n_iter`` iterations or when the log-likelihood improves by
        less than ``tol`` (``tol=-inf`` runs all iterations); so do MAP and VB on their
        objectives. VT and k-best VT ignore ``tol``: they stop when their paths repeat (see
        :func:`hiddenstate.learn.fit_restarts`).
    n_init : random restarts; the run with the highest final objective of the mode is kept
        (the earliest among equal ones).
    init_params : letters of the parameters initialised by ``fit`` (``s`` startprob, ``t``
        transmat, ``e`` emissionprob, ``m`` means, ``c`` covars, ``l`` lambdas, ``w``
        mixture weights); parameters
        whose letter is absent must be set by the user before ``fit`` and are kept as set.
    params : letters of the parameters updated by EM.
    min_covar : floor on variances (and covariance eigenvalues), applied with a warning.
    random_state : seed, numpy Generator or None.
    verbose : print the objective per iteration to stderr.
    learn : the learning mode (see :mod:`hiddenstate.learn.batch`): ``"em"`` (maximum
        likelihood), ``"map"`` (posterior mode under the priors below), ``"vb"`` (mean-field
        variational Bayes; posterior hyper-parameters in ``*_posterior_``), ``"vt"``
        (Viterbi training: hard EM on the best path) or ``"kvt"`` (the ``k_best`` best paths).
        Streaming learners (each observation or sequence seen once; ``fit`` is one pass and
        :meth:`partial_fit` continues the stream): ``"online-em"`` (Cappé 2011),
        ``"bwo"`` (Baum-Welch online), ``"baldi-chauvin"``, ``"bona"`` (Bayesian online)
        and ``"mpa"`` (mean posterior approximation); see :mod:`hiddenstate.learn.online`.
    k_best : number of paths for ``learn="kvt"``.
    learner_options : keyword arguments of the streaming learner (e.g.
        ``{"step_exponent": 0.7}`` for online EM, ``{"eta": 0.1}`` for BWO).
    startprob_prior, transmat_prior, emissionprob_prior : Dirichlet concentrations.
    means_prior, means_weight, covars_prior, covars_weight : Gaussian priors (hmmlearn's
        names and meaning: prior mean and its weight, covariance scale and its weight).
    lambdas_prior, lambdas_weight : Gamma prior on Poisson rates (shape - 1 and rate).
    topology : ``"full"`` (every transition allowed), ``"left-right"`` (state ``i`` moves to
        ``j >= i`` only; with ``bandwidth``, ``i <= j <= i + bandwidth``) or ``"banded"``
        (``|i - j| <= bandwidth``).
    bandwidth : see ``topology`` (needed by ``"banded"``).
    transmat_mask : boolean ``(K, K)``, the transitions allowed (combined with
        ``topology``). The other entries of ``transmat_`` are zero and stay exactly zero
        in every mode; with few allowed transitions (at most a quarter of ``K**2``) the
        sparse kernels run, at a cost proportional to their number.
    weights_prior : Dirichlet concentration of the mixture weights (gmm); the gmm
        components take the Gaussian priors above, per component.
        Priors are used by every mode but ``"em"``; ``None`` takes the mode's default
        (see ``docs/learning-modes.md``).

    Attributes
    ----------
    startprob_ (K,), transmat_ (K, K), emissionprob_ (K, W), means_ (K, D),
    covars_ (hmmlearn's getter: (K, D, D) whatever the type; set it in the type's own shape),
    lambdas_ (K, D), weights_ (K, M) (gmm, whose ``means_`` are (K, M, D) and ``covars_``
    hmmlearn's GMMHMM shapes), n_features_, monitor_ (``history``, ``converged``).
    stream_log_prob_ (``learn="online-em"``): the prequential log-probability
    log p(x_t | x_<t, θ_{t-1}) of each observation of the last ``fit``/``partial_fit``
    call, predicted before the parameters learned from it (a running learning curve). It
    uses the running iterate θ_{t-1}, also with Polyak-Ruppert averaging (whose averaged
    parameters are what the attributes report).
    """

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
                 bandwidth: int | None = None, transmat_mask=None):
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

    # -- hooks: configuration --------------------------------------------------------------------
    def check_hyperparameters(self) -> None:
        """**Hook.** Validate the hyper-parameters (see :mod:`.hyperparameters`)."""
        check_hyperparameters(self)

    def _check_hyper(self) -> None:
        """:meth:`check_hyperparameters` under the name every model's loader calls
        (:func:`hiddenstate.load`)."""
        self.check_hyperparameters()

    def prior(self, name: str):
        """**Hook.** The prior hyper-parameter ``name`` in force for the learning mode:
        flat for ``"em"``, else as set, else the mode's default (:mod:`.priors`)."""
        return prior_in_force(self.learn, name, getattr(self, name))

    def emission_family(self, n_features, X: np.ndarray | None = None,
                        n_states: int | None = None):
        """**Hook.** The emission family (of ``n_states`` states, default all); with data
        (fitting) the priors are checked and VB's data-dependent prior defaults filled in
        (:func:`.priors.build_family`)."""
        return build_family(self, n_features, X, n_states)

    def learned_letters(self) -> str:
        """**Hook.** Letters of the parameters the batch modes learn."""
        return self.params

    def make_learner(self):
        """**Hook.** The streaming learner of ``learn`` with ``learner_options``."""
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
        """**Hook.** ``n_features`` known before seeing data (given, or from a set
        ``emissionprob_`` that ``fit`` keeps), or None; with validated ``X``, that number
        else the one ``X`` implies."""
        known = as_n_features(self.n_features)
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
        """**Hook.** Validated observations and their layout. ``stream``/``continues``: the
        data feed a streaming learner (and continue its last sequence)."""
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
    def problem(self, family, X, seqs: Sequences, states=None) -> HMMProblem:
        """**Entry point.** The model on validated data ``X``/``seqs`` (``states``: partial
        state labels) as a :class:`~hiddenstate.learn.batch.Problem`."""
        return HMMProblem(family, X, seqs, self.prior("startprob_prior"),
                          self.prior("transmat_prior"), states, self._transitions())

    def fit(self, X, lengths=None, callback: Callable[[int, float], None] | None = None,
            states=None):
        """Learn the parameters with the mode chosen by ``learn`` from one or more sequences.

        ``X`` holds the sequences concatenated (categorical: integer symbols, shape
        ``(n,)`` or ``(n, 1)``; Gaussian/Poisson: ``(n, n_features)``); ``lengths`` gives
        each sequence's length (default: one sequence). ``callback(iteration, objective)``
        is called after every iteration. With ``n_init > 1`` the run with the highest final
        objective of the mode is kept.

        ``states``: known hidden states, ``(n,)`` integers with ``-1`` where the state is
        unknown. Each labelled step's posterior is clamped to its label (its emission row
        is masked to the label, :func:`inference.clamp_states`), in the E-step of every
        mode: semi-supervised learning; with every step labelled, one iteration gives the
        supervised estimates (counts, plus the priors of the mode). The streaming learners
        clamp the same way (online EM's filter, each sequence's forward-backward for BWO and
        Baldi-Chauvin, the paths that BOnA and MPA enumerate).
        """
        self.check_hyperparameters()
        streaming = self.learn in ONLINE_MODES
        X, seqs = self.validate_data(X, lengths, self.resolve_n_features(), stream=streaming)
        if states is not None:
            states = check_states(states, len(X), self.n_states)
        n_features = self.resolve_n_features(X)
        family = self.emission_family(n_features, X)
        self.check_fit_memory(X, seqs, family)
        rng = make_rng(self.random_state)
        if streaming:
            if hasattr(self, "learner_state_"):
                delattr(self, "learner_state_")
            return self._stream(X, seqs, family, rng, n_features, continues=False,
                                states=states)
        return self.fit_problem(self.problem(family, X, seqs, states), family, n_features, X,
                                seqs, rng, callback, states)

    def fit_problem(self, problem, family, n_features, X, seqs: Sequences | None, rng,
                    callback=None, states=None) -> HMM:
        """**Entry point.** The ``n_init`` restarts of the batch mode on ``problem``, each
        started from :func:`.init.initial_params` of ``X``/``seqs`` (the data, or the
        sample of it that :func:`hiddenstate.distributed.fit` gathers; None when nothing is
        initialised from data) and, with partial state labels ``states``, emission
        parameters from the labelled steps; keeps the run with the highest final objective
        (:func:`hiddenstate.learn.fit_restarts`, which owns the stop rules) and returns the
        model."""
        def start(_restart):
            startprob, transmat, emis = initial_params(self, X, family, rng, seqs,
                                                       values=True)
            if states is not None:
                emis = labelled_start(family, X, states, emis, self.init_params)
            return {"startprob": startprob, "transmat": transmat, "emission": emis}

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
        """**Entry point.** Refuse a fit that would not fit in memory
        (:func:`.memory.check_fit_memory`)."""
        check_fit_memory(self, X, seqs, family, started)

    # -- streaming -------------------------------------------------------------------------------
    def extra_learner_state(self) -> dict:
        """**Hook.** Entries added to ``learner_state_`` after each streaming update."""
        return {}

    def _stream(self, X, seqs, family, rng, n_features, continues: bool, states=None):
        """Feed sequences to the streaming learner (starting it if needed); ``states``:
        partial state labels (validated)."""
        learner = self.make_learner()
        state = getattr(self, "learner_state_", None)
        if state is None:
            if continues:
                raise InvalidInputError(
                    "continues: there is no stream to continue yet; call partial_fit without "
                    "continues=True first")
            startprob, transmat, emis = initial_params(self, X, family, rng, seqs)
            if states is not None:  # as batch: the labels pin which state is which
                emis = labelled_start(family, X, states, emis, self.init_params)
            state = learner.start({"startprob": startprob, "transmat": transmat,
                                   "emission": emis}, family, rng)
            self.monitor_ = ConvergenceMonitor(self.tol, self.n_iter, self.verbose)
            self.n_features_ = n_features
        if self.learn == "online-em":
            log_pred = np.empty(len(X))
            state = learner.update(state, X, seqs.lengths, family, continues=continues,
                                   log_pred=log_pred, states=states)
            self.stream_log_prob_ = log_pred
        else:
            state = learner.update(state, X, seqs.lengths, family, continues=continues,
                                   states=states)
        theta = learner.params(state, family)
        state.update(self.extra_learner_state())
        self.learner_state_ = state
        self._checked_state = StateRecord(state)
        self.assign_params(theta["startprob"], theta["transmat"], theta["emission"])
        return self

    def partial_fit(self, X, lengths=None, continues: bool = False, states=None):
        """Continue the stream with the sequences ``X`` (streaming learners only).

        Each sequence restarts the filter from ``startprob_``; learned statistics carry
        over. ``continues=True`` makes the first sequence the continuation of the one the
        previous call ended in (online EM). The first call initialises the learner from
        ``init_params`` and its data. Results are identical whether a stream is fed in one
        call or many, and across :meth:`save` / :func:`hiddenstate.load`. ``states``:
        partial state labels of ``X`` (``-1``: unknown), clamped as in :meth:`fit`.
        """
        self.check_hyperparameters()
        if self.learn not in ONLINE_MODES:
            raise InvalidInputError(
                f"learn: partial_fit needs a streaming learner {ONLINE_MODES}, not "
                f"{self.learn!r}; use fit for batch learning")
        started = hasattr(self, "learner_state_")
        if started:
            record = getattr(self, "_checked_state", None)
            if record is None or not record.matches(self.learner_state_):
                self.check_is_fitted()  # a state set or edited by hand: check it first
                self._check_loaded()
            n_features = self.n_features_
        else:
            n_features = self.resolve_n_features()
        X, seqs = self.validate_data(X, lengths, n_features, stream=True, continues=continues)
        if states is not None:
            states = check_states(states, len(X), self.n_states)
        if not started:
            n_features = self.resolve_n_features(X)
        family = self.emission_family(n_features, X)
        self.check_fit_memory(X, seqs, family, started=started)
        return self._stream(X, seqs, family, None if started else make_rng(self.random_state),
                            n_features, continues, states)

    # -- inference -------------------------------------------------------------------------------
    def _prepare(self, X, lengths, op: str, chain: bool = False):
        """Validated parameters, the layout of ``X`` and its emission table, after checking
        that the inference function ``op`` (see :func:`inference.memory_estimate`) fits in
        memory: ``(startprob, transmat, seqs, table)``; with ``chain``, the
        :class:`~.chain.Chain` in place of ``(startprob, transmat)``."""
        startprob, transmat, emis = self.checked_params()
        X, seqs = self.validate_data(X, lengths, self.n_features_)
        family = self.emission_family(self.n_features_)
        self.check_memory(op, X, seqs, family)
        c = self._chain(startprob, transmat)
        table = inference.emission_table(family, emis, X, startprob, c.successors(), seqs)
        return (c, seqs, table) if chain else (startprob, transmat, seqs, table)

    def check_memory(self, op: str, X, seqs: Sequences, family, k: int = 1,
                     fixed: dict | None = None, what: str | None = None,
                     fixes: dict | None = None) -> None:
        """**Entry point.** Refuse inference ``op`` on ``X`` when it would not fit in
        memory (:func:`.memory.check_memory`)."""
        check_memory(self, op, X, seqs, family, k, fixed, what, fixes)

    def score_samples(self, X, lengths=None) -> np.ndarray:
        """Log-likelihood log p(x) of each sequence, float64 ``(n_sequences,)`` (``-inf`` for
        a sequence that has probability zero); forward pass only. (hmmlearn's
        ``score_samples``, log p(X) with the posteriors, is ``score`` and
        :meth:`predict_proba`; :mod:`hiddenstate.compat.hmmlearn` keeps it.)"""
        chain, seqs, table = self._prepare(X, lengths, "log_likelihood", chain=True)
        return chain.log_likelihood(table, seqs)

    score_sequences = renamed_method("score_sequences", "score_samples")

    def score(self, X, lengths=None) -> float:
        """Log-likelihood log p(X) of the sequences (summed; ``-inf`` if one of them has
        probability zero)."""
        return float(self.score_samples(X, lengths).sum())

    def _posteriors(self, X, lengths=None):
        """``(log p(x) per sequence, state posteriors p(z_t | x) (n, K))``. A sequence of
        probability zero has no posteriors: :class:`ZeroProbabilityError`."""
        chain, seqs, table = self._prepare(X, lengths, "posteriors", chain=True)
        if table.by_idx:  # per-observation posteriors, not sums per symbol
            table = inference.EmissionTable(table.emis, table.idx, table.log_offset, False)
        post = chain.forward_backward(table, seqs)
        check_possible(post.loglik, fitting=False)
        return post.loglik, post.post

    def filter_proba(self, X, lengths=None) -> np.ndarray:
        """Filtered state posteriors p(z_t | x_{0:t}) ``(n, K)``: what the model believes at
        each step having seen only the past and present (:class:`ZeroProbabilityError` for
        a sequence of probability zero)."""
        startprob, transmat, seqs, table = self._prepare(X, lengths, "filter")
        filtered, log_pred = inference.filter_states(startprob, transmat, table, seqs)
        check_possible(seqs.per_sequence_sum(log_pred), fitting=False)
        return filtered

    def score_tokens(self, X, lengths=None) -> np.ndarray:
        """Predictive log-probability log p(x_t | x_{0:t-1}) of every observation ``(n,)``
        (a sequence's entries sum to its log-likelihood; in a sequence of probability zero
        they are ``-inf`` from the first impossible observation on)."""
        startprob, transmat, seqs, table = self._prepare(X, lengths, "filter")
        return inference.filter_states(startprob, transmat, table, seqs)[1]

    def predict_proba(self, X, lengths=None) -> np.ndarray:
        """State posteriors p(z_t | x_{0:T}) ``(n, K)`` (:class:`ZeroProbabilityError` for a
        sequence of probability zero)."""
        return self._posteriors(X, lengths)[1]

    def impute(self, X, lengths=None) -> np.ndarray:
        r"""``X`` with its missing entries filled in from the posterior predictive given all
        the observed data: Gaussian and Poisson, the mean
        :math:`\sum_k p(z_t = k \mid X)\, E[x_{t,m} \mid x_{t,o}, z_t = k]` (Gaussian:
        given the row's observed dimensions :math:`o`); categorical, the most probable
        symbol :math:`\arg\max_w \sum_k p(z_t = k \mid X) B_{kw}`. Missing entries are
        NaN (Gaussian, Poisson), ``-1`` (categorical) or masked (``numpy.ma``); observed
        entries are returned unchanged."""
        emis = self.checked_params()[2]
        Xv = self.validate_data(X, lengths, self.n_features_)[0]
        post = self._posteriors(Xv, lengths)[1]
        out = self.emission_family(self.n_features_).impute(emis, Xv, post)
        return out.reshape(np.shape(X)) if self.emission == "categorical" else out

    def decode(self, X, lengths=None, algorithm: str = "viterbi"):
        """Most likely states: ``"viterbi"`` (best joint path; returns log p(X, z*)) or
        ``"map"`` (per-step posterior argmax; returns log p(X)). A sequence of probability
        zero has no most likely path: :class:`ZeroProbabilityError`."""
        if algorithm == "viterbi":
            chain, seqs, table = self._prepare(X, lengths, "viterbi", chain=True)
            logprob, states = chain.viterbi(table, seqs)
            check_possible(logprob, fitting=False)
            return float(logprob.sum()), states
        if algorithm == "map":
            logprob, post = self._posteriors(X, lengths)
            return float(logprob.sum()), post.argmax(axis=1)
        raise InvalidInputError(
            f"algorithm: {algorithm!r} is not 'viterbi' or 'map'")

    def predict(self, X, lengths=None, algorithm: str = "viterbi") -> np.ndarray:
        """Most likely state of every observation (see :meth:`decode`)."""
        return self.decode(X, lengths, algorithm)[1]

    def sample_posterior(self, X, lengths=None, random_state=None) -> np.ndarray:
        """One draw of the hidden path from p(z | x) (forward filtering, backward sampling;
        :class:`ZeroProbabilityError` for a sequence of probability zero)."""
        rng = make_rng(self.random_state if random_state is None else random_state)
        startprob, transmat, seqs, table = self._prepare(X, lengths, "sample_posterior")
        states = inference.sample_posterior(startprob, transmat, table, seqs, rng)
        impossible = np.add.reduceat((states < 0).astype(np.int64), seqs.bounds[:-1]) > 0
        check_possible(np.where(impossible, -np.inf, 0.0), fitting=False)
        return states

    def sample(self, n_samples: int = 1, random_state=None):
        """Draw one sequence of ``n_samples`` steps: returns ``(X, states)``
        (``random_state=None``: the estimator's ``random_state``)."""
        startprob, transmat, emis = self.checked_params()
        n = check_positive_int(n_samples, "n_samples")
        rng = make_rng(self.random_state if random_state is None else random_state)
        family = self.emission_family(self.n_features_)
        check_parts({"n_samples": sample_bytes(self, n)}, f"sample(n_samples={n})")
        states = inference.sample_chain(startprob, transmat, n, rng)
        X = family.sample(emis, states, rng)
        return X, states

    def n_parameters(self) -> int:
        """Number of free parameters (for AIC/BIC)."""
        self.check_is_fitted()
        K = self.n_states
        return (K - 1) + K * (K - 1) + self.emission_family(self.n_features_).n_free_parameters()

    def bic(self, X, lengths=None) -> float:
        self.check_is_fitted()
        n = len(self.validate_data(X, lengths, self.n_features_)[0])
        return -2 * self.score(X, lengths) + self.n_parameters() * np.log(n)

    def aic(self, X, lengths=None) -> float:
        return -2 * self.score(X, lengths) + 2 * self.n_parameters()

    # -- persistence ----------------------------------------------------------------------------
    def learned_arrays(self) -> dict[str, np.ndarray]:
        """Learned parameters by attribute name (what :meth:`save` writes)."""
        self.check_is_fitted()
        out = {"startprob_": self.startprob_, "transmat_": self.transmat_}
        for key in self._emission_keys().values():
            attr = "_covars_" if key == "covars" else key + "_"
            out[attr] = getattr(self, attr)
        for attr in self._posterior_attrs():
            out[attr] = getattr(self, attr)
        for key, value in getattr(self, "learner_state_", {}).items():
            if isinstance(value, np.ndarray):
                out[_STATE_PREFIX + key] = value
        return out

    def learned_scalars(self) -> dict:
        """Scalar entries of a streaming learner's state (what :meth:`save` writes as JSON)."""
        return {_STATE_PREFIX + k: v for k, v in getattr(self, "learner_state_", {}).items()
                if not isinstance(v, np.ndarray)}

    def set_learned(self, arrays: dict, scalars: dict) -> None:
        """Restore what :meth:`learned_arrays` and :meth:`learned_scalars` returned."""
        missing = sorted(n for n in self.learned_attribute_names(arrays)
                         if n not in arrays and not n.endswith(POSTERIOR_SUFFIX))
        if missing:
            raise InvalidInputError(f"{missing[0]}: missing from the saved arrays")
        state = {}
        for key, value in {**arrays, **scalars}.items():
            if key.startswith(_STATE_PREFIX):
                state[key[len(_STATE_PREFIX):]] = value
            elif key in self.learned_attribute_names(arrays):
                setattr(self, key, value)
            else:
                raise InvalidInputError(f"{key}: not a learned attribute of {type(self).__name__}")
        if state:
            self.learner_state_ = state

    def learned_attribute_names(self, arrays: dict) -> set[str]:
        """Names a saved model may set: parameters and VB posteriors."""
        names = {"startprob_", "transmat_"}
        names |= {"_covars_" if k == "covars" else k + "_" for k in self._emission_keys().values()}
        names |= {a for a in arrays if a.endswith(POSTERIOR_SUFFIX) and a.isidentifier()}
        return names

    def _check_loaded(self) -> None:
        """Validate what a saved model (or a hand-set learner state) brings besides the
        parameters: :meth:`_check_learned`, finite VB posteriors and the streaming
        learner's state (recorded, so that ``partial_fit`` does not check it again)."""
        self._check_learned()
        for attr in self._posterior_attrs():
            value = getattr(self, attr)
            if not (isinstance(value, np.ndarray) and value.dtype == np.float64
                    and np.all(np.isfinite(value))):
                raise InvalidInputError(f"{attr}: VB posterior parameters must be finite floats")
        if hasattr(self, "learner_state_"):
            self.check_learner_state(self.learner_state_)
            self._checked_state = StateRecord(self.learner_state_)

    def check_learner_state(self, state) -> None:
        """**Hook.** Validate a streaming learner's state against the learner, its options
        and the parameters (see the learners' ``check_state``); called when a saved model
        or a hand-set ``learner_state_`` is first used."""
        if self.learn not in ONLINE_MODES:
            raise InvalidInputError(
                f"learner_state_: a streaming learner's state, but learn={self.learn!r} is "
                "not a streaming learner; delete learner_state_ or restore learn")
        theta = {"startprob": self.startprob_, "transmat": self.transmat_,
                 "emission": self.emission_params()}
        self.make_learner().check_state(state, theta, self.emission_family(self.n_features_),
                                        "learner_state_.")

    def save(self, path) -> None:
        """Save to a directory ``path`` (``model.json`` + ``arrays.<token>.npz``; no pickle),
        atomically: ``path`` then holds the previous model or this one (see
        :mod:`hiddenstate._bundle`)."""
        from .._saving import save

        save(self, path)

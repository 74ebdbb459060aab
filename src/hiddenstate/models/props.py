r"""PROPS: personalise pre-trained black-box sequence models with source states
(Wojnowicz & Zhao, "PROPS: Probabilistic personalization of black-box sequence models").

An HMM over :math:`K = K_s + K_p` states. In *source* state :math:`k < K_s` the next
symbol is drawn from the black-box predictive distribution of source :math:`k`,

.. math:: p(y_t \mid z_t = k, y_{<t}) = f_k(y_t \mid y_1, \dots, y_{t-1}),

never updated; in a *perturbation* state it is drawn from an ordinary emission row that
is learned, and the transitions between all :math:`K` states are learned. The filtered
posterior :math:`p_t = P(z_t \in K_p \mid y_{\le t})` tells, symbol by symbol, whether the
user writes like the reference corpus (source states) or like themselves.

Learning is streaming online EM (Cappé 2011; PROPS sec. IV) by default, or any batch
mode of :mod:`hiddenstate.learn.batch`: the source columns enter as a
:class:`~hiddenstate.families.BlackBoxEmissions` family with no statistics. The source
probabilities depend on the history only, so they are computed once per sequence (the
sources' batched :meth:`~hiddenstate.sources.Source.log_probs`) and travel with the data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._deprecation import keyword_only_after_first
from .._validation import (
    check_choice,
    check_lengths,
    check_memory,
    check_positive_int,
    check_symbols,
    make_rng,
)
from ..errors import InvalidInputError, ModelFileError
from ..families import FAMILIES
from ..families.blackbox import BlackBoxEmissions
from ..inference import Sequences
from ..learn import MODES
from ..learn.online import ONLINE_MODES, make_learner
from ..sources import (
    MISSING,
    DensitySource,
    ProtocolDensitySource,
    ProtocolSource,
    Source,
    as_source,
    is_savable,
    require_missing_support,
    sequence_log_probs,
)
from .hmm import ALL_LETTERS, HMM, check_possible

__all__ = ["PROPS", "TokenScores", "perturbation_log_odds"]

_SOURCE_STATE = "source."  # learner_state_ keys of the sources' positions in the stream


@dataclass
class TokenScores:
    """Per-token outputs of :meth:`PROPS.token_scores` (``n`` rows, ``K`` states)."""

    #: log P(y_t | y_<t) under PROPS
    log_prob: np.ndarray
    #: log f_k(y_t | y_<t) of each source alone ``(n, K_s)``
    source_log_prob: np.ndarray
    #: filtered posteriors P(z_t | y_<=t) ``(n, K)``
    filtered: np.ndarray
    #: smoothed posteriors P(z_t | y_1..y_T) ``(n, K)``
    smoothed: np.ndarray
    #: the Viterbi path
    viterbi: np.ndarray
    #: log(p_t / (1 - p_t)), p_t = P(z_t in perturbation states | y_<=t)
    membership_log_odds: np.ndarray


class PROPS(HMM):
    r"""PROPS: an HMM whose first states emit from pre-trained black-box sources.

    The first ``len(sources)`` states emit from the sources' predictions
    :math:`f_k(y_t \mid y_{<t})`; the ``n_perturbation_states`` other states are learned (an
    emission family of :class:`hiddenstate.HMM`), and so are the transitions. Everything
    :class:`hiddenstate.HMM` does (decoding, filtering, scoring, streaming) works the same.
    See ``docs/props.md`` and :mod:`hiddenstate.personalize`.

    Parameters
    ----------
    sources : sequence of Source, default=()
        The source states, in order: sources over the same ``n_symbols`` (and the same
        vocabulary, if they have one). A source is a :class:`~hiddenstate.sources.Source`
        or any object with the protocol's ``reset()``, ``step(y)`` and ``n_symbols``
        (``snapshot()``/``restore(d)`` are needed only to continue a sequence across
        :meth:`partial_fit` calls; what such an object returns is checked:
        :class:`~hiddenstate.sources.ProtocolSource`).
    n_perturbation_states : int, default=1
        The number of learned states :math:`K_p` (>= 0).
    emission : {"categorical", "gaussian", "poisson"}, default="categorical"
        The emission family of the perturbation states: symbols (the sources are
        :class:`~hiddenstate.sources.Source`) or real vectors (the sources are
        :class:`~hiddenstate.sources.DensitySource`).
    n_features : int or None, default=None
        The number of symbols (categorical) or features; it must equal the sources'
        ``n_symbols`` / ``n_features`` (None: theirs).
    learn : {"online-em", "em", "map", "vb", "vt", "kvt"}, default="online-em"
        Online EM (one pass; :meth:`partial_fit` continues the stream) or a batch mode.
    learn_startprob : bool, default=False
        Also learn the initial distribution (otherwise it keeps its initial value, uniform
        unless set by hand and ``"s"`` is not in ``init_params``).
    n_iter : int, default=100
        As :class:`hiddenstate.HMM`.
    tol : float, default=1e-4
        As :class:`hiddenstate.HMM`.
    n_init : int, default=1
        As :class:`hiddenstate.HMM`.
    k_best : int, default=1
        As :class:`hiddenstate.HMM`.
    init_params : str, default="stemclw"
        As :class:`hiddenstate.HMM`.
    params : str, default="stemclw"
        As :class:`hiddenstate.HMM`.
    random_state : int, numpy.random.Generator or None, default=None
        As :class:`hiddenstate.HMM`.
    verbose : bool, default=False
        As :class:`hiddenstate.HMM`.
    covariance_type : {"spherical", "diag", "full", "tied"}, default="diag"
        As :class:`hiddenstate.HMM` (the perturbation states).
    min_covar : float, default=1e-3
        As :class:`hiddenstate.HMM`.
    startprob_prior : float, array-like or None, default=None
        As :class:`hiddenstate.HMM`.
    transmat_prior : float, array-like or None, default=None
        As :class:`hiddenstate.HMM`.
    emissionprob_prior : float, array-like or None, default=None
        As :class:`hiddenstate.HMM`; the emission priors apply to the perturbation states.
    means_prior : float, array-like or None, default=None
        As :class:`hiddenstate.HMM`.
    means_weight : float, array-like or None, default=None
        As :class:`hiddenstate.HMM`.
    covars_prior : float, array-like or None, default=None
        As :class:`hiddenstate.HMM`.
    covars_weight : float, array-like or None, default=None
        As :class:`hiddenstate.HMM`.
    lambdas_prior : float, array-like or None, default=None
        As :class:`hiddenstate.HMM`.
    lambdas_weight : float, array-like or None, default=None
        As :class:`hiddenstate.HMM`.
    learner_options : dict or None, default=None
        The options of the online EM learner (step size, warm-up, priors ...; see
        :class:`hiddenstate.learn.online.OnlineEM`).

    Attributes
    ----------
    startprob_ : ndarray of shape (n_states,)
        The initial distribution.
    transmat_ : ndarray of shape (n_states, n_states)
        The transition matrix, source states first.
    emissionprob_ : ndarray of shape (n_perturbation_states, n_features)
        The perturbation states' symbol probabilities (categorical; ``means_``/``covars_``
        or ``lambdas_`` for the other families).
    monitor_ : hiddenstate.learn.ConvergenceMonitor
        The objective of every iteration (batch modes).
    learner_state_ : dict
        The online learner's state, with the sources' positions in the stream.
    stream_log_prob_ : ndarray of shape (n_samples,)
        The prequential log-probability of each observation of the last streaming call.

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> from hiddenstate.sources import KneserNeySource
    >>> source = KneserNeySource(order=2).fit(np.tile([0, 1, 2, 3], 50))
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([np.tile([0, 1, 2, 3], 10), rng.integers(0, 4, 40)])
    >>> model = hs.PROPS(sources=[source], n_perturbation_states=1, random_state=0).fit(X)
    >>> model.n_states, model.n_sources
    (2, 1)
    >>> model.predict(X[:8]), model.predict(X[40:48])
    (array([0, 0, 0, 0, 0, 0, 0, 0]), array([1, 1, 1, 1, 1, 1, 1, 1]))
    """

    _grows_alphabet = False  # the sources fix the alphabet

    @keyword_only_after_first
    def __init__(self, sources: Sequence[Source] = (), n_perturbation_states: int = 1,
                 emission: str = "categorical", n_features: int | None = None,
                 learn: str = "online-em", learn_startprob: bool = False, n_iter: int = 100,
                 tol: float = 1e-4, n_init: int = 1, k_best: int = 1,
                 init_params: str = ALL_LETTERS, params: str = ALL_LETTERS, random_state=None,
                 verbose: bool = False, covariance_type: str = "diag",
                 min_covar: float = 1e-3, startprob_prior=None, transmat_prior=None,
                 emissionprob_prior=None, means_prior=None, means_weight=None,
                 covars_prior=None, covars_weight=None, lambdas_prior=None,
                 lambdas_weight=None, learner_options: dict | None = None):
        self.sources = sources
        self.n_perturbation_states = n_perturbation_states
        self.emission = emission
        self.n_features = n_features
        self.learn = learn
        self.learn_startprob = learn_startprob
        self.n_iter = n_iter
        self.tol = tol
        self.n_init = n_init
        self.k_best = k_best
        self.init_params = init_params
        self.params = params
        self.random_state = random_state
        self.verbose = verbose
        self.covariance_type = covariance_type
        self.min_covar = min_covar
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

    def __sklearn_clone__(self) -> PROPS:
        """``sklearn.base.clone``: the same hyper-parameters, unfitted, with the same
        sources. A pre-trained source is a fixed part of the model, not an estimator to
        learn again (scikit-learn would clone a :class:`~hiddenstate.sources.KneserNeySource`
        to an empty one). Only ``sklearn.base.clone`` calls this, so scikit-learn is
        already imported."""
        from sklearn.base import clone

        params = self.get_params(deep=False)
        return type(self)(**{k: v if k == "sources" else clone(v, safe=False)
                             for k, v in params.items()})

    # -- configuration --------------------------------------------------------------------------
    @property
    def n_sources(self) -> int:
        """The number of source states :math:`K_s` (``len(sources)``)."""
        return len(self.sources)

    @property
    def n_states(self) -> int:
        """The number of states, :math:`K = K_s + K_p`."""
        return len(self.sources) + self.n_perturbation_states

    def check_hyperparameters(self) -> None:
        """**Hook.** Validate the sources, the perturbation states' family and the learning mode.

        Then the HMM's hyper-parameters (:meth:`hiddenstate.HMM.check_hyperparameters`).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a hyper-parameter is invalid, or the sources do not share one alphabet (or feature
            space) and vocabulary.
        """
        if isinstance(self.sources, (str, bytes)) or not isinstance(self.sources, Sequence) \
                or not self.sources:
            raise InvalidInputError(
                "sources: expected a non-empty list of sources (KneserNeySource, LSTMSource, "
                "CallableSource, or objects with reset(), step(y) and n_symbols)")
        # the perturbation states' families (not the mixture and multinomial ones)
        check_choice(self.emission, "emission", [f for f in FAMILIES
                                                 if f not in ("gmm", "multinomial")])
        dense = self.emission != "categorical"
        sources = self._sources()
        W = {int(src.n_features if dense else src.n_symbols) for src in sources}
        if len(W) != 1:
            raise InvalidInputError(
                f"sources: the sources predict over different "
                f"{'feature counts' if dense else 'alphabets'} ({sorted(W)}); they must "
                "share one vocabulary / feature space")
        vocabs = [src.vocabulary for src in sources if src.vocabulary is not None]
        if any(v != vocabs[0] for v in vocabs[1:]):
            raise InvalidInputError(
                "sources: the sources were trained with different vocabularies; build one "
                "Vocabulary and train every source with it")
        if isinstance(self.n_perturbation_states, bool) or not isinstance(
                self.n_perturbation_states, (int, np.integer)) or self.n_perturbation_states < 0:
            raise InvalidInputError(
                f"n_perturbation_states: expected an integer >= 0, got "
                f"{self.n_perturbation_states!r}")
        if self.n_features is not None and check_positive_int(
                self.n_features, "n_features") != W.copy().pop():
            raise InvalidInputError(
                f"n_features: {self.n_features} differs from the sources' "
                f"{'n_features' if dense else 'n_symbols'} {W.pop()}; leave it None")
        if check_choice(self.learn, "learn", MODES + ONLINE_MODES) in ONLINE_MODES \
                and self.learn != "online-em":
            raise InvalidInputError(
                f"learn: PROPS learns by 'online-em' or a batch mode ('em', 'map', 'vb', 'vt', "
                f"'kvt'); {self.learn!r} has no source states")
        if not isinstance(self.learn_startprob, (bool, np.bool_)):
            raise InvalidInputError(
                f"learn_startprob: expected True or False, got {self.learn_startprob!r}")
        check_positive_int(self.n_states, "n_perturbation_states + len(sources)")
        super().check_hyperparameters()

    def _sources(self) -> list[Source]:
        """The sources as :class:`Source` objects: plain objects that follow the protocol
        wrapped (their outputs checked); ``self.sources`` is left as given."""
        dense = self.emission != "categorical"
        return [as_source(src, dense, f"sources: entry {i}", f"emission={self.emission!r}")
                for i, src in enumerate(self.sources)]

    def validation_key(self) -> tuple:
        """**Hook.** Return the sources (by identity) and the HMM's key.

        The sources are checked at every call (cheap next to computing their predictions).

        Returns
        -------
        tuple
            The key.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a hyper-parameter is invalid.
        """
        self.check_hyperparameters()
        return (tuple(id(src) for src in self.sources), self.n_perturbation_states,
                *super().validation_key())

    def emission_family(self, n_features: int, X: np.ndarray | None = None,
                        n_states: int | None = None):
        """**Hook.** Return the source states' columns before the perturbation states' family.

        Parameters
        ----------
        n_features : int
            The number of symbols or features.
        X : ndarray or None, default=None
            The validated training data (``[log f_1 .. log f_Ks, y]`` rows), when fitting.
        n_states : int or None, default=None
            Ignored: the inner family has ``n_perturbation_states`` states.

        Returns
        -------
        hiddenstate.families.BlackBoxEmissions
            The family (HMM's family of the perturbation states on the inner observations).
        """
        Xi = None if X is None else X[:, self.n_sources:]
        inner = super().emission_family(n_features, Xi, self.n_perturbation_states)
        return BlackBoxEmissions(self.n_sources, inner)

    def resolve_n_features(self, X: np.ndarray | None = None) -> int:
        """**Hook.** Return the sources' ``n_symbols`` (or ``n_features``), whatever the data.

        Parameters
        ----------
        X : ndarray or None, default=None
            Ignored.

        Returns
        -------
        int
            The sources' alphabet size or number of features.
        """
        src = self._sources()[0]
        return int(src.n_features if isinstance(src, DensitySource) else src.n_symbols)

    def learned_letters(self) -> str:
        """**Hook.** Return the letters of the parameters the batch modes learn.

        Returns
        -------
        str
            ``params``, without ``"s"`` unless ``learn_startprob``.
        """
        return self.params if self.learn_startprob else self.params.replace("s", "")

    def make_learner(self):
        options = {"learn_startprob": bool(self.learn_startprob), **(self.learner_options or {})}
        return make_learner(self.learn, options)

    # -- data: symbols -> [log f_1 .. log f_Ks, y] ------------------------------------------------
    def validate_data(self, X, lengths, n_features, stream: bool = False,
                      continues: bool = False):
        """**Hook.** Return the ``[log f_1 .. log f_Ks, y]`` rows of ``X`` and their layout.

        A missing observation (symbol ``-1`` or masked; a row of NaN) has no emission term: its
        source columns are 0 (and so is the inner family's), and every source gets the marker in
        its history (it must declare ``supports_missing``).

        Parameters
        ----------
        X : array-like
            The observations.
        lengths : array-like of int or None
            The length of each sequence; None: one sequence.
        n_features : int or None
            The number of symbols or features.
        stream : bool, default=False
            The data feed the streaming learner (each source's position at the end is kept).
        continues : bool, default=False
            The first sequence continues the stream's last one.

        Returns
        -------
        X : ndarray of shape (n_samples, n_sources + n_columns)
            The sources' log-predictions, then the observations.
        seqs : hiddenstate.inference.Sequences
            Their layout.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the data are invalid, a row is partly missing, a source cannot take a missing
            observation, or there is no stream to continue.
        """
        W = self.resolve_n_features()
        dense = self.emission != "categorical"
        missing = None
        if not dense:
            y = check_symbols(X, W, allow_missing=True)
            if y.min() < 0:
                missing = y == MISSING
        else:
            y = super().emission_family(W, n_states=1).validate_X(X, W)
            nan = np.isnan(y)
            if nan.any():
                missing = nan.all(axis=1)
                partly = np.flatnonzero(nan.any(axis=1) & ~missing)
                if len(partly):
                    raise InvalidInputError(
                        f"X: row {int(partly[0])} is partly missing (some features NaN); "
                        "PROPS takes rows missing entirely (every feature NaN), because a "
                        "source's predictive density has no marginal for the observed "
                        "features; mark the whole row missing or fill it in first")
        if missing is not None:
            for i, src in enumerate(self._sources()):
                n = int(missing.sum())
                require_missing_support(
                    src, f"sources: entry {i}",
                    f"X has {n} missing observation{'s' if n != 1 else ''}", dense)
        seqs = Sequences.from_lengths(check_lengths(lengths, len(y)))
        resume = None
        if continues:
            for src in self._sources():  # a plain object needs snapshot/restore for this
                if isinstance(src, (ProtocolSource, ProtocolDensitySource)):
                    src.check_restorable()
            state = getattr(self, "learner_state_", None)
            if state is None or not any(k.startswith(_SOURCE_STATE) for k in state):
                raise InvalidInputError(
                    "continues: there is no stream to continue yet; call partial_fit without "
                    "continues=True first")
            resume = [_positions(state, k) for k in range(self.n_sources)]
        log_f, ends = self._source_columns(y, seqs, resume, keep_end=stream)
        if missing is not None:  # no emission term, whatever a source returned there
            log_f[missing] = 0.0
        if stream:  # kept until extra_learner_state stores them with the learner's state
            self._source_ends = ends
        return BlackBoxEmissions.join(log_f, y), seqs

    def _source_columns(self, y, seqs: Sequences, resume, keep_end: bool):
        """``log f_k(y_t | y_<t)`` for every source (``(n, K_s)``); with ``keep_end`` also each
        source's position after the last symbol (to continue the stream later)."""
        bounds = seqs.bounds
        S = len(seqs.lengths)
        log_f = np.empty((len(y), self.n_sources))
        ends = []
        for k, src in enumerate(self._sources()):
            lo, hi = 0, S
            if resume is not None:  # the first sequence continues the previous call's last
                b = bounds[1]
                log_f[:b, k], end = src.log_probs_from(y[:b], resume[k])
                lo = 1
            if keep_end and hi > lo:
                hi -= 1
            if hi > lo:
                a, b = bounds[lo], bounds[hi]
                log_f[a:b, k] = sequence_log_probs(src, y[a:b], seqs.lengths[lo:hi])
            if keep_end and hi < S:
                a = bounds[S - 1]
                log_f[a:, k], end = src.log_probs_from(y[a:], None)
            ends.append(end if keep_end else None)
        return log_f, ends

    def extra_learner_state(self) -> dict:
        """**Hook.** Return each source's position at the end of the stream, to continue it later.

        From the last :meth:`validate_data` of streamed data.

        Returns
        -------
        dict of str to ndarray
            ``source.<k>.*`` entries.
        """
        ends = self.__dict__.pop("_source_ends")
        return {f"{_SOURCE_STATE}{k}.{key}": np.asarray(value)
                for k, end in enumerate(ends) for key, value in end.items()}

    def check_learner_state(self, state) -> None:
        """**Hook.** Validate the learner's state and the sources' positions in the stream.

        See :meth:`hiddenstate.HMM.check_learner_state`; the positions (``source.<k>.*``) are
        none, or a valid position of every source.

        Parameters
        ----------
        state : dict
            The learner's state.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the state was modified or does not fit the learner and the sources.
        """
        if isinstance(state, dict):
            odd = [k for k in state if not isinstance(k, str)]
            if odd:
                raise InvalidInputError(
                    f"learner_state_: keys must be strings, got {odd[0]!r}; the state was "
                    "modified or corrupted")
            positions = {k for k in state if k.startswith(_SOURCE_STATE)}
            if positions:
                for k, src in enumerate(self.sources):
                    prefix = f"learner_state_.{_SOURCE_STATE}{k}."
                    src.check_position(_positions(state, k), prefix)
                    positions -= {f"{_SOURCE_STATE}{k}.{key}" for key in _positions(state, k)}
                if positions:
                    raise InvalidInputError(
                        f"learner_state_.{sorted(positions)[0]}: not the position of one of the "
                        f"{self.n_sources} sources; the state was modified or corrupted")
                state = {k: v for k, v in state.items() if not k.startswith(_SOURCE_STATE)}
        super().check_learner_state(state)

    # -- outputs --------------------------------------------------------------------------------
    def membership_log_odds(self, X, lengths=None) -> np.ndarray:
        r"""Compute the log-odds that each observation comes from a perturbation state.

        :math:`\log(p_t / (1 - p_t))` with :math:`p_t = P(z_t \in K_p \mid y_{\le t})`, the
        filtered probability.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other: symbols ``(n_samples,)``
            (categorical) or rows ``(n_samples, n_features)``.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.

        Returns
        -------
        ndarray of shape (n_samples,)
            The log-odds (``+inf``/``-inf`` where the filter is certain).

        Raises
        ------
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InvalidInputError
            If the data, the sources or a parameter set by hand are invalid.

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> from hiddenstate.sources import KneserNeySource
        >>> source = KneserNeySource(order=2).fit(np.tile([0, 1, 2, 3], 50))
        >>> rng = np.random.default_rng(0)
        >>> X = np.concatenate([np.tile([0, 1, 2, 3], 10), rng.integers(0, 4, 40)])
        >>> model = hs.PROPS(sources=[source], n_perturbation_states=1, random_state=0).fit(X)
        >>> model.membership_log_odds(X)[[5, 60]].round(1)
        array([-3. , 10.5])
        """
        return perturbation_log_odds(self.filter_proba(X, lengths), self.n_sources)

    def token_scores(self, X, lengths=None) -> TokenScores:
        """Compute every per-token output at once (the model is not changed).

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other: symbols ``(n_samples,)``
            (categorical) or rows ``(n_samples, n_features)``.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.

        Returns
        -------
        hiddenstate.models.props.TokenScores
            ``log_prob`` (predictive log-probability), ``source_log_prob`` (each source's),
            ``filtered`` and ``smoothed`` state posteriors, the ``viterbi`` path and
            ``membership_log_odds``, one row per observation.

        Raises
        ------
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InvalidInputError
            If the data, the sources or a parameter set by hand are invalid.
        ZeroProbabilityError
            If a sequence has probability zero under the model.

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> from hiddenstate.sources import KneserNeySource
        >>> source = KneserNeySource(order=2).fit(np.tile([0, 1, 2, 3], 50))
        >>> rng = np.random.default_rng(0)
        >>> X = np.concatenate([np.tile([0, 1, 2, 3], 10), rng.integers(0, 4, 40)])
        >>> model = hs.PROPS(sources=[source], n_perturbation_states=1, random_state=0).fit(X)
        >>> scores = model.token_scores(X[:6])
        >>> scores.filtered.shape, scores.viterbi.shape
        ((6, 2), (6,))
        """
        from .. import inference

        startprob, transmat, emis = self.checked_params()
        Xa, seqs = self.validate_data(X, lengths, self.n_features_)
        family = self.emission_family(self.n_features_)
        K, N = self.n_states, len(Xa)
        outputs = inference.memory_estimate("filter", K, seqs, N, False)["X"] + \
            inference.memory_estimate("forward_backward", K, seqs, N, False)["X"]
        self.check_memory("viterbi", Xa, seqs, family, fixed={"X": outputs},
                           what=f"token_scores of {N} observations with {K} states")
        table = family.table(emis, Xa)
        filtered, log_prob = inference.filter_states(startprob, transmat, table, seqs)
        fb = inference.forward_backward(startprob, transmat, table, seqs)
        check_possible(fb.loglik, fitting=False)
        post = fb.post
        _, states = inference.viterbi(startprob, transmat, table, seqs)
        return TokenScores(log_prob, Xa[:, :self.n_sources].copy(), filtered, post, states,
                           perturbation_log_odds(filtered, self.n_sources))

    def impute(self, X, lengths=None) -> np.ndarray:
        r"""Fill in the missing observations of ``X`` from the posterior predictive.

        .. math:: p(y_t = w \mid X) = \sum_k p(z_t = k \mid X)\, e_{k,t}(w),

        where :math:`e_{k,t}` is source :math:`k`'s prediction at :math:`t` (from the history
        before :math:`t`, holes included, by the source's missing-history rule) or perturbation
        state :math:`k`'s emission distribution. Under that rule no later source prediction
        depends on the missing value, so this is the model's exact posterior predictive.
        Symbols: the most probable symbol; real rows: the mean
        :math:`\sum_k p(z_t = k \mid X)\, E_{k,t}[x]` (a source's predictive distribution needs
        a ``mean``, as a frozen ``scipy.stats`` distribution has).

        Parameters
        ----------
        X : array-like
            The observations with missing entries: ``-1`` or masked (symbols) or rows of NaN.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.

        Returns
        -------
        ndarray
            ``X`` with its missing observations filled in; observed entries are unchanged.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        hiddenstate.errors.InvalidInputError
            If the data are invalid, or a source cannot take a missing observation.
        ZeroProbabilityError
            If a sequence has probability zero under the model.

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> from hiddenstate.sources import KneserNeySource
        >>> source = KneserNeySource(order=2).fit(np.tile([0, 1, 2, 3], 50))
        >>> rng = np.random.default_rng(0)
        >>> X = np.concatenate([np.tile([0, 1, 2, 3], 10), rng.integers(0, 4, 40)])
        >>> model = hs.PROPS(sources=[source], n_perturbation_states=1, random_state=0).fit(X)
        >>> model.impute(np.array([0, 1, -1, 3]))
        array([0, 1, 2, 3])
        """
        from .. import inference

        startprob, transmat, emis = self.checked_params()
        Xa, seqs = self.validate_data(X, lengths, self.n_features_)
        family = self.emission_family(self.n_features_)
        self.check_memory("forward_backward", Xa, seqs, family,
                           what=f"impute of {len(Xa)} observations with {self.n_states} states")
        fb = inference.forward_backward(startprob, transmat, family.table(emis, Xa), seqs)
        check_possible(fb.loglik, fitting=False)
        Ks, dense = self.n_sources, self.emission != "categorical"
        _, Xi = family.split(Xa)
        rows = np.flatnonzero(np.isnan(Xi).all(axis=1) if dense else Xi < 0)
        out = family.inner.impute(emis, Xi, fb.post[:, Ks:]) if dense else Xi.copy()
        if len(rows):
            at = self._source_predictions(Xi, seqs, rows)   # (K_s, len(rows), W or D)
            mix = np.einsum("nk,knd->nd", fb.post[rows, :Ks], at)
            if dense:
                out[rows] += mix
            else:
                mix += fb.post[rows, Ks:] @ emis["emissionprob"]
                out[rows] = np.argmax(mix, axis=1)
        return out if dense else out.reshape(np.shape(X))

    def _source_predictions(self, y, seqs: Sequences, rows: np.ndarray) -> np.ndarray:
        """Each source's prediction at the positions ``rows`` of ``y`` (the distribution
        over the symbols, or the mean of a density source's predictive distribution),
        stepping through each sequence up to its last such position."""
        dense = self.emission != "categorical"
        sources = self._sources()
        width = self.n_features_
        out = np.empty((len(sources), len(rows), width))
        bounds = seqs.bounds
        which = np.searchsorted(bounds, rows, side="right") - 1
        for s in np.unique(which):
            a, wanted = bounds[s], rows[which == s]
            index = {int(t): int(i) for i, t in zip(np.flatnonzero(which == s), wanted,
                                                    strict=True)}
            for k, src in enumerate(sources):
                pred = src.reset()
                for t in range(a, int(wanted[-1]) + 1):
                    if t in index:
                        out[k, index[t]] = _predictive_mean(pred, width, k) if dense else pred
                    if t < wanted[-1]:
                        pred = src.step(y[t] if dense else int(y[t]))
        return out

    def sample(self, n_samples: int = 1, random_state=None):
        """Draw one sequence from the model.

        The state path from the chain, each observation from its state's distribution (a
        source's predictive distribution given every observation so far, whichever state
        emitted it; a :class:`~hiddenstate.sources.DensitySource`'s predictive distributions
        need a ``sample(rng)`` method).

        Parameters
        ----------
        n_samples : int, default=1
            The length of the sequence.
        random_state : int, numpy.random.Generator or None, default=None
            The seed; None: the estimator's ``random_state``.

        Returns
        -------
        X : ndarray
            The observations (``(n_samples, 1)`` symbols or ``(n_samples, n_features)`` rows).
        states : ndarray of shape (n_samples,)
            The hidden states.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        hiddenstate.errors.InsufficientMemoryError
            If the sample would not fit in memory (raised before anything is allocated).

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> from hiddenstate.sources import KneserNeySource
        >>> source = KneserNeySource(order=2).fit(np.tile([0, 1, 2, 3], 50))
        >>> rng = np.random.default_rng(0)
        >>> X = np.concatenate([np.tile([0, 1, 2, 3], 10), rng.integers(0, 4, 40)])
        >>> model = hs.PROPS(sources=[source], n_perturbation_states=1, random_state=0).fit(X)
        >>> X_new, states = model.sample(6, random_state=0)
        >>> X_new.shape, states.shape
        ((6, 1), (6,))
        """
        startprob, transmat, params = self.checked_params()
        n = check_positive_int(n_samples, "n_samples")
        rng = make_rng(self.random_state if random_state is None else random_state)
        from .. import inference

        dense = self.emission != "categorical"
        check_memory({"n_samples": 8.0 * n * (3 + (self.n_features_ if dense else 1))},
                     f"PROPS.sample(n_samples={n})")
        states = inference.sample_chain(startprob, transmat, n, rng)
        Ks = self.n_sources
        inner = self.emission_family(self.n_features_).inner
        sources = self._sources()
        preds = [src.reset() for src in sources]
        X = np.empty((n, self.n_features_ if dense else 1))
        for t, z in enumerate(states):
            if z >= Ks:
                X[t] = inner.sample(params, np.array([z - Ks]), rng)[0]
            elif dense:
                X[t] = preds[z].sample(rng)
            else:
                p = preds[z]
                X[t] = min(int(np.searchsorted(np.cumsum(p), rng.random() * p.sum(), "right")),
                           len(p) - 1)
            if t + 1 < n:
                preds = [src.step(X[t] if dense else int(X[t, 0])) for src in sources]
        return (X if dense else X.astype(np.int64)), states

    def n_parameters(self) -> int:
        """Count the free parameters.

        The transitions, the initial distribution if learned and the perturbation emissions (the
        sources are fixed).

        Returns
        -------
        int
            The number of free parameters.

        Raises
        ------
        NotFittedError
            Before ``fit``.

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> from hiddenstate.sources import KneserNeySource
        >>> source = KneserNeySource(order=2).fit(np.tile([0, 1, 2, 3], 50))
        >>> rng = np.random.default_rng(0)
        >>> X = np.concatenate([np.tile([0, 1, 2, 3], 10), rng.integers(0, 4, 40)])
        >>> model = hs.PROPS(sources=[source], n_perturbation_states=1, random_state=0).fit(X)
        >>> model.n_parameters()
        5
        """
        self.check_is_fitted()
        K = self.n_states
        start = K - 1 if self.learn_startprob else 0
        return start + K * (K - 1) + self.emission_family(self.n_features_).n_free_parameters()

    # -- persistence ----------------------------------------------------------------------------
    def saved_params(self, parts: dict) -> dict:
        """Return the hyper-parameters written to ``model.json``.

        Each source becomes the sub-bundle ``source-<k>`` (its ``save`` is added to ``parts``,
        see :func:`hiddenstate._bundle.write_bundle`: saved with the model, atomically).

        Parameters
        ----------
        parts : dict
            The sub-bundles to write, name -> save function; filled in.

        Returns
        -------
        dict
            The hyper-parameters, the sources by sub-bundle name.

        Raises
        ------
        hiddenstate.errors.ModelFileError
            If a source is not a ``KneserNeySource`` or ``LSTMSource`` (the sources that can be
            read back).
        """
        params = self.get_params(deep=False)
        for k, src in enumerate(self.sources):
            if not is_savable(src):
                raise ModelFileError(
                    f"sources: entry {k} ({type(src).__name__}) cannot be saved: a PROPS model "
                    "is saved only with KneserNeySource and LSTMSource sources (exactly these "
                    "classes, which hiddenstate.sources.load_source reads back); keep this "
                    "model in memory, or store its learned_arrays() and rebuild it around your "
                    "source")
            parts[f"source-{k}"] = src.save
        params["sources"] = [f"source-{k}" for k in range(len(self.sources))]
        return params

    @classmethod
    def from_saved_params(cls, params: dict, part: Callable[[str], Path]) -> PROPS:
        """Build the model from saved hyper-parameters.

        Parameters
        ----------
        params : dict
            The hyper-parameters of ``model.json``.
        part : callable
            ``part(name)``: the directory of the sub-bundle ``name`` (a source).

        Returns
        -------
        PROPS
            The model, with its sources loaded (not yet its learned parameters).

        Raises
        ------
        hiddenstate.errors.ModelFileError
            If the list of saved sources is malformed.
        """
        from ..sources import load_source

        names = params.get("sources")
        if not isinstance(names, list) or not all(
                isinstance(n, str) and n == f"source-{k}" for k, n in enumerate(names)):
            raise ModelFileError(f"sources: malformed list of saved sources {names!r}")
        params = {**params, "sources": [load_source(part(n)) for n in names]}
        return cls(**params)


def _predictive_mean(d, n_features: int, k: int) -> np.ndarray:
    """The mean of a density source's predictive distribution ``d`` (``d.mean()`` or the
    attribute ``d.mean``, as scipy's frozen distributions have), as ``(n_features,)``."""
    mean = getattr(d, "mean", None)
    if mean is None:
        raise InvalidInputError(
            f"sources: entry {k} returned a predictive distribution ({type(d).__name__}) "
            "without a mean; impute fills a missing row with the posterior predictive mean, "
            "so give it mean() (a frozen scipy.stats distribution has one)")
    mean = np.asarray(mean() if callable(mean) else mean, dtype=np.float64)
    try:
        return np.broadcast_to(mean, (n_features,)).copy()
    except ValueError:
        raise InvalidInputError(
            f"sources: entry {k}: the mean of its predictive distribution has shape "
            f"{mean.shape}, not ({n_features},)") from None


def _positions(state: dict, k: int) -> dict:
    prefix = f"{_SOURCE_STATE}{k}."
    return {key[len(prefix):]: value for key, value in state.items() if key.startswith(prefix)}


def perturbation_log_odds(filtered: np.ndarray, n_sources: int) -> np.ndarray:
    """log(p_t / (1 - p_t)) with p_t the mass of the states after the first ``n_sources``
    in each row of ``filtered`` (+-inf where a row is certain)."""
    p_pert = filtered[:, n_sources:].sum(axis=1)
    p_src = filtered[:, :n_sources].sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(p_pert) - np.log(p_src)

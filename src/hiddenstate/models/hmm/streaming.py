"""Streaming learning of an :class:`~.estimator.HMM`: ``partial_fit`` and the loop that
feeds sequences to a streaming learner of :mod:`hiddenstate.learn.online`. :class:`HMMStreaming`
is a base of :class:`~.estimator.HMM`."""

from __future__ import annotations

import numpy as np

from ..._validation import check_states, make_rng
from ...errors import InvalidInputError
from ...learn import ConvergenceMonitor
from ...learn.online import ONLINE_MODES, StateRecord
from .init import initial_params, labelled_start


class HMMStreaming:
    """``partial_fit`` of :class:`~.estimator.HMM` (the class it is mixed into provides the
    hooks and entry points listed in :mod:`.estimator`)."""

    #: a categorical stream whose alphabet was inferred (``n_features=None``) grows it when
    #: a later call brings new symbols (False: PROPS, whose sources fix the alphabet)
    _grows_alphabet = True

    def _grow_alphabet(self, X, lengths, n_features, continues: bool):
        """The alphabet size for this call of a started stream: larger than ``n_features``
        (the learner's state grown, :meth:`~hiddenstate.learn.online.OnlineLearner.grow`)
        when ``X`` holds symbols beyond it and the alphabet was inferred; a declared
        ``n_features`` is refused with the fix. Returns ``(n_features, undo)``: ``undo()``
        puts the state back if the call fails."""
        if not (self._grows_alphabet and self.emission == "categorical"
                and isinstance(n_features, (int, np.integer))):
            return n_features, None
        symbols = self.validate_data(X, lengths, None, stream=True, continues=continues)[0]
        top = int(symbols.max()) + 1 if len(symbols) else 0
        if top <= n_features:
            return n_features, None
        if self.n_features is not None:
            raise InvalidInputError(
                f"X: symbol {top - 1} is beyond the alphabet of n_features={self.n_features} "
                "this stream was made with, and a stream keeps the alphabet it declared: make "
                "the model with n_features large enough for every symbol the stream will meet "
                "(a symbol never seen costs only its prior), or with n_features=None to let "
                "the alphabet grow (docs/streaming.md)")
        old_state, old_n = self.learner_state_, self.n_features_

        def undo():
            self.learner_state_, self.n_features_ = old_state, old_n

        self.learner_state_ = self.make_learner().grow(old_state, top)
        self.n_features_ = top
        return top, undo

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
            startprob, transmat, emis = initial_params(self, X, family, rng, seqs, warn=True)
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

        Each sequence restarts the filter from ``startprob_``; learned statistics carry over. The
        first call initialises the learner from ``init_params`` and its data. Results are
        identical whether a stream is fed in one call or many, and across :meth:`save` /
        :func:`hiddenstate.load`. A categorical stream made with ``n_features=None`` grows
        its alphabet when a call brings larger symbols (the learner's
        :meth:`~hiddenstate.learn.online.OnlineLearner.grow`; ``docs/streaming.md``, "The
        alphabet of a categorical stream"); one made with ``n_features`` keeps it.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other: categorical, integer symbols
            of shape ``(n_samples,)`` or ``(n_samples, 1)`` (``(n_samples, F)`` for ``F``
            categorical features); the other families, ``(n_samples, n_features)``.
        lengths : array-like of int or None, default=None
            The length of each sequence (they sum to ``n_samples``); None: one sequence.
        continues : bool, default=False
            The first sequence of ``X`` continues the one the previous call ended in (online EM).
        states : array-like of int of shape (n_samples,) or None, default=None
            Partial state labels of ``X`` (``-1``: unknown), clamped as in :meth:`fit`.

        Returns
        -------
        HMM
            The model itself, updated.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``learn`` is not a streaming learner, or the data are invalid (a symbol
            beyond a declared ``n_features`` included).

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> model = hs.HMM(n_states=2, n_features=3, learn="online-em", random_state=0)
        >>> rng = np.random.default_rng(0)
        >>> for _ in range(3):
        ...     model = model.partial_fit(rng.integers(0, 3, 200))
        >>> model.stream_log_prob_.shape
        (200,)
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
            n_features, undo = self._grow_alphabet(X, lengths, self.n_features_, continues)
        else:
            n_features, undo = self.resolve_n_features(), None
        try:
            X, seqs = self.validate_data(X, lengths, n_features, stream=True,
                                         continues=continues)
            if states is not None:
                states = check_states(states, len(X), self.n_states)
            if not started:
                n_features = self.resolve_n_features(X)
            family = self.emission_family(n_features, X)
            self.check_fit_memory(X, seqs, family, started=started)
            return self._stream(X, seqs, family,
                                None if started else make_rng(self.random_state), n_features,
                                continues, states)
        except BaseException:
            if undo is not None:  # the call failed: the stream's alphabet as it was
                undo()
            raise

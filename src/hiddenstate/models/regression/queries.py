"""What a fitted :class:`~.estimator.RegressionHMM` answers, each with ``inputs=``: scores,
posteriors, decoding, posterior and prior sampling, forecasts and the information criteria.
:class:`RegressionQueries` is a base of the estimator (which provides the parameters, the
design and the family)."""

from __future__ import annotations

import numpy as np

from ... import inference, time_varying
from ..._validation import check_memory as check_parts
from ..._validation import check_positive_int, make_rng
from ...errors import InvalidInputError
from ..hmm.problem import check_possible, drawn_path_loglik
from . import forecast as fc
from .design import check_inputs


class _Chain:
    """The hidden chain of a fitted model on some rows: the fixed-matrix inference of
    :mod:`hiddenstate.inference`, or the time-varying one of :mod:`hiddenstate.time_varying`
    with one matrix per row (``transmats``)."""

    def __init__(self, startprob, transmat, transmats=None):
        self.startprob = startprob
        self.transmat = transmat
        self.transmats = transmats

    def _tv(self):
        return self.startprob, self.transmats, np.arange(len(self.transmats))

    def log_likelihood(self, table, seqs):
        if self.transmats is None:
            return inference.log_likelihood(self.startprob, self.transmat, table, seqs)
        return time_varying.log_likelihood(*self._tv(), table, seqs)

    def posteriors(self, table, seqs):
        if self.transmats is None:
            post = inference.forward_backward(self.startprob, self.transmat, table, seqs)
        else:
            post = time_varying.forward_backward(*self._tv(), table, seqs)
        return post.loglik, post.post

    def filter(self, table, seqs):
        if self.transmats is None:
            return inference.filter_states(self.startprob, self.transmat, table, seqs)
        return time_varying.filter_states(*self._tv(), table, seqs)

    def viterbi(self, table, seqs):
        if self.transmats is None:
            return inference.viterbi(self.startprob, self.transmat, table, seqs)
        return time_varying.viterbi(*self._tv(), table, seqs)

    def sample_posterior(self, table, seqs, rng):
        if self.transmats is None:
            return inference.sample_posterior(self.startprob, self.transmat, table, seqs, rng)
        return time_varying.sample_posterior(*self._tv(), table, seqs, rng)


class RegressionQueries:
    """The inference methods of :class:`~.estimator.RegressionHMM`."""

    # -- set-up ------------------------------------------------------------------------------
    def _prepare(self, X, lengths, inputs, what: str, per_row: int = 2):
        """Parameters, the design of ``X``, its emission table and the chain, after the
        memory check of ``what`` (``per_row``: (n, K) arrays it keeps)."""
        params = self._params()
        d = self._design(X, lengths, inputs, self.n_features_, self.n_inputs_)
        K = self.n_states
        soft = self.transitions == "softmax"
        check_parts({"X": 8.0 * len(d.Z) * (K * (per_row + 3 + (2 * K if soft else 0))
                                             + d.Z.shape[1])},
                    f"{what} of {len(d.Z)} observations with {K} states")
        family = self.emission_family(self.n_features_)
        transmat = self._transmat(params)
        table = inference.emission_table(family, params["emission"], d.Z,
                                         params["startprob"], transmat, d.seqs)
        transmats = (self._transition_block(d.n_inputs).matrices(params["transmat"], d.U)
                     if soft else None)
        return params, d, table, _Chain(params["startprob"], transmat, transmats)

    def _posteriors(self, X, lengths, inputs, what: str):
        """The design of ``X``, the log-likelihood of each sequence and the state posteriors
        of its rows (a sequence of probability zero refused)."""
        _, d, table, chain = self._prepare(X, lengths, inputs, what)
        loglik, post = chain.posteriors(table, d.seqs)
        check_possible(loglik, fitting=False)
        return d, loglik, post

    def _filtered(self, X, lengths, inputs, what: str):
        """The design of ``X`` and the filtered state posteriors of its rows (a sequence of
        probability zero refused)."""
        _, d, table, chain = self._prepare(X, lengths, inputs, what)
        filtered, log_pred = chain.filter(table, d.seqs)
        check_possible(d.seqs.per_sequence_sum(log_pred), fitting=False)
        return d, filtered

    # -- scores ------------------------------------------------------------------------------
    def score_samples(self, X, lengths=None, *, inputs=None) -> np.ndarray:
        r"""Compute the log-likelihood of each sequence.

        With ``n_lags > 0`` the log-likelihood of each sequence given its first ``n_lags``
        observations (:mod:`hiddenstate.models.regression.design`).

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other (``(n_samples,
            n_features)`` numbers; categories ``(n_samples,)`` for ``emission="logistic"``).
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.
        inputs : array-like of shape (n_samples, n_inputs) or None, default=None
            The inputs of every observation (None for a model without inputs).

        Returns
        -------
        ndarray of shape (n_sequences,)
            :math:`\log p(x)` of each sequence.

        Raises
        ------
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InvalidInputError
            If the data, the inputs or a parameter set by hand are invalid.

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> m = hs.RegressionHMM(2)
        >>> m.startprob_, m.transmat_ = [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]]
        >>> m.coef_ = np.array([[[1.0]], [[-1.0]]])   # y = +-u + noise
        >>> m.intercept_, m.covars_ = np.zeros((2, 1)), np.ones((2, 1, 1))
        >>> m.score_samples([[1.0], [-2.0], [0.5]], inputs=[1.0, -2.0, 0.5]).round(3)
        array([-3.58])
        """
        _, d, table, chain = self._prepare(X, lengths, inputs, "score_samples", 1)
        return chain.log_likelihood(table, d.seqs)

    def score(self, X, lengths=None, *, inputs=None) -> float:
        """Compute the log-likelihood of the sequences, summed (see :meth:`score_samples`).

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.
        inputs : array-like of shape (n_samples, n_inputs) or None, default=None
            The inputs of every observation.

        Returns
        -------
        float
            :math:`\\log p(X)`.

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> m = hs.RegressionHMM(2)
        >>> m.startprob_, m.transmat_ = [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]]
        >>> m.coef_ = np.array([[[1.0]], [[-1.0]]])
        >>> m.intercept_, m.covars_ = np.zeros((2, 1)), np.ones((2, 1, 1))
        >>> round(m.score([[1.0], [-2.0], [0.5]], inputs=[1.0, -2.0, 0.5]), 3)
        -3.58
        """
        return float(self.score_samples(X, lengths, inputs=inputs).sum())

    # -- posteriors and decoding -------------------------------------------------------------
    def predict_proba(self, X, lengths=None, *, inputs=None) -> np.ndarray:
        r"""Compute the state posteriors :math:`p(z_t \mid x, u)`.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.
        inputs : array-like of shape (n_samples, n_inputs) or None, default=None
            The inputs of every observation.

        Returns
        -------
        ndarray of shape (n_samples, n_states)
            The posteriors; NaN in the first ``n_lags`` rows of each sequence, which the
            model conditions on (they have no state).

        Raises
        ------
        ZeroProbabilityError
            If a sequence has probability zero under the model.

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> m = hs.RegressionHMM(2)
        >>> m.startprob_, m.transmat_ = [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]]
        >>> m.coef_ = np.array([[[1.0]], [[-1.0]]])
        >>> m.intercept_, m.covars_ = np.zeros((2, 1)), np.ones((2, 1, 1))
        >>> m.predict_proba([[2.0], [2.1]], inputs=[2.0, 2.0]).round(3)
        array([[1., 0.],
               [1., 0.]])
        """
        d, _, post = self._posteriors(X, lengths, inputs, "predict_proba")
        return d.scatter(post, np.nan)

    def filter_proba(self, X, lengths=None, *, inputs=None) -> np.ndarray:
        r"""Compute the filtered state posteriors :math:`p(z_t \mid x_{\le t}, u_{\le t})`.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.
        inputs : array-like of shape (n_samples, n_inputs) or None, default=None
            The inputs of every observation.

        Returns
        -------
        ndarray of shape (n_samples, n_states)
            The filtered posteriors (NaN in the rows the model conditions on).

        Raises
        ------
        ZeroProbabilityError
            If a sequence has probability zero under the model.

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> m = hs.RegressionHMM(2)
        >>> m.startprob_, m.transmat_ = [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]]
        >>> m.coef_ = np.array([[[1.0]], [[-1.0]]])
        >>> m.intercept_, m.covars_ = np.zeros((2, 1)), np.ones((2, 1, 1))
        >>> m.filter_proba([[0.0], [2.0]], inputs=[1.0, 2.0]).round(3)
        array([[0.5, 0.5],
               [1. , 0. ]])
        """
        d, filtered = self._filtered(X, lengths, inputs, "filter_proba")
        return d.scatter(filtered, np.nan)

    def decode(self, X, lengths=None, algorithm: str = "viterbi", *, inputs=None):
        r"""Find the most likely states.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.
        algorithm : {"viterbi", "map"}, default="viterbi"
            ``"viterbi"``: the best joint path; ``"map"``: the per-step posterior argmax.
        inputs : array-like of shape (n_samples, n_inputs) or None, default=None
            The inputs of every observation.

        Returns
        -------
        log_prob : float
            ``"viterbi"``: :math:`\log p(X, z^*)`; ``"map"``: :math:`\log p(X)`.
        state_sequence : ndarray of shape (n_samples,)
            The decoded states (-1 in the rows the model conditions on).

        Raises
        ------
        ZeroProbabilityError
            If a sequence has probability zero under the model.
        hiddenstate.errors.InvalidInputError
            If ``algorithm`` is neither ``"viterbi"`` nor ``"map"``.

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> m = hs.RegressionHMM(2)
        >>> m.startprob_, m.transmat_ = [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]]
        >>> m.coef_ = np.array([[[1.0]], [[-1.0]]])
        >>> m.intercept_, m.covars_ = np.zeros((2, 1)), np.ones((2, 1, 1))
        >>> m.decode([[2.0], [2.0], [-2.0]], inputs=[2.0, -2.0, 2.0])[1]
        array([0, 1, 1])
        """
        if algorithm == "viterbi":
            _, d, table, chain = self._prepare(X, lengths, inputs, "decode")
            logprob, states = chain.viterbi(table, d.seqs)
            check_possible(logprob, fitting=False)
            return float(logprob.sum()), d.scatter(states, -1)
        if algorithm == "map":
            d, loglik, post = self._posteriors(X, lengths, inputs, "decode")
            return float(loglik.sum()), d.scatter(post.argmax(axis=1), -1)
        raise InvalidInputError(f"algorithm: {algorithm!r} is not 'viterbi' or 'map'")

    def predict(self, X, lengths=None, algorithm: str = "viterbi", *,
                inputs=None) -> np.ndarray:
        """Find the most likely state of every observation (see :meth:`decode`).

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.
        algorithm : {"viterbi", "map"}, default="viterbi"
            The decoder.
        inputs : array-like of shape (n_samples, n_inputs) or None, default=None
            The inputs of every observation.

        Returns
        -------
        ndarray of shape (n_samples,)
            The decoded states (-1 in the rows the model conditions on).

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> m = hs.RegressionHMM(2)
        >>> m.startprob_, m.transmat_ = [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]]
        >>> m.coef_ = np.array([[[1.0]], [[-1.0]]])
        >>> m.intercept_, m.covars_ = np.zeros((2, 1)), np.ones((2, 1, 1))
        >>> m.predict([[2.0], [2.0]], inputs=[2.0, -2.0], algorithm="map")
        array([0, 1])
        """
        return self.decode(X, lengths, algorithm, inputs=inputs)[1]

    def sample_posterior(self, X, lengths=None, random_state=None, *,
                         inputs=None) -> np.ndarray:
        r"""Draw one hidden path from :math:`p(z \mid x, u)` (forward filtering, backward sampling).

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.
        random_state : int, numpy.random.Generator or None, default=None
            The seed; None: the estimator's ``random_state``.
        inputs : array-like of shape (n_samples, n_inputs) or None, default=None
            The inputs of every observation.

        Returns
        -------
        ndarray of shape (n_samples,)
            The sampled states (-1 in the rows the model conditions on).

        Raises
        ------
        ZeroProbabilityError
            If a sequence has probability zero under the model.

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> m = hs.RegressionHMM(2, n_lags=1)
        >>> m.startprob_, m.transmat_ = [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]]
        >>> m.coef_ = np.array([[[0.9]], [[-0.9]]])    # y_t = +-0.9 y_{t-1} + noise
        >>> m.intercept_, m.covars_ = np.zeros((2, 1)), np.full((2, 1, 1), 0.01)
        >>> m.sample_posterior([[1.0], [0.9], [-0.8]], random_state=0)
        array([-1,  0,  1])
        """
        rng = make_rng(self.random_state if random_state is None else random_state)
        _, d, table, chain = self._prepare(X, lengths, inputs, "sample_posterior", 1)
        states = chain.sample_posterior(table, d.seqs, rng)
        check_possible(drawn_path_loglik(states, d.seqs.bounds), fitting=False)
        return d.scatter(states, -1)

    # -- sampling ----------------------------------------------------------------------------
    def _emit(self, params, family, states, rng, lags, U):
        """Draw the observations of a path ``states`` (n,), each step's design from its
        inputs ``U[t]`` and the lag vector ``lags`` (the previous observations, most recent
        first), which the draws update. Returns the (n, D) draws (categories: (n,))."""
        n = len(states)
        D = self.n_features_
        if not self.n_lags:
            return family.sample(params["emission"], states, rng,
                                 design=self._design_rows(U, None))
        out = np.empty((n, D))
        for t in range(n):
            y = family.sample(params["emission"], states[t:t + 1], rng,
                              design=self._design_rows(U[t:t + 1], lags[None]))
            out[t] = y[0]
            lags = np.concatenate([y[0], lags[:-D]])
        return out

    def _design_rows(self, U, lags):
        """Design rows ``[inputs | lags | 1]`` of draws (``lags`` (n, p D) or None)."""
        parts = [U] + ([] if lags is None else [lags])
        if self.fit_intercept:
            parts.append(np.ones((len(U), 1)))
        return np.hstack(parts)

    def _history(self, history, what: str = "history") -> np.ndarray:
        """The lag vector (most recent first) of ``history``, the ``n_lags`` observations
        before a draw in time order (None: zeros)."""
        D, p = self.n_features_, self.n_lags
        if history is None:
            return np.zeros(p * D)
        H = np.asarray(history, dtype=np.float64).reshape(-1, D) if np.size(history) else \
            np.empty((0, D))
        if H.shape != (p, D) or not np.all(np.isfinite(H)):
            raise InvalidInputError(
                f"{what}: expected the {p} observation(s) before the draw as a finite array "
                f"of shape ({p}, {D}), oldest first; got shape {np.shape(history)}")
        return H[::-1].reshape(-1)

    def sample(self, n_samples: int = 1, random_state=None, *, inputs=None, history=None):
        """Draw one sequence of ``n_samples`` steps.

        Parameters
        ----------
        n_samples : int, default=1
            The length of the sequence.
        random_state : int, numpy.random.Generator or None, default=None
            The seed; None: the estimator's ``random_state``.
        inputs : array-like of shape (n_samples, n_inputs) or None, default=None
            The inputs of every step (required by a model with inputs).
        history : array-like of shape (n_lags, n_features) or None, default=None
            ``n_lags > 0``: the observations before the first draw, oldest first (None:
            zeros, as dynamax's ``prev_emissions``).

        Returns
        -------
        X : ndarray
            The observations (``(n_samples, n_features)``; categories ``(n_samples, 1)``).
        states : ndarray of shape (n_samples,)
            The hidden states.

        Raises
        ------
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InsufficientMemoryError
            If the sample would not fit in memory (raised before anything is allocated).

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> m = hs.RegressionHMM(2, n_lags=1)
        >>> m.startprob_, m.transmat_ = [0.5, 0.5], [[0.95, 0.05], [0.05, 0.95]]
        >>> m.coef_ = np.array([[[0.9]], [[-0.5]]])
        >>> m.intercept_, m.covars_ = np.array([[0.1], [0.0]]), np.full((2, 1, 1), 0.1)
        >>> X, states = m.sample(5, random_state=0, history=[[1.0]])
        >>> X.shape, states.shape
        ((5, 1), (5,))
        """
        params = self._params()
        n = check_positive_int(n_samples, "n_samples")
        K = self.n_states
        check_parts({"n_samples": 8.0 * n * (2 * self.n_features_ + self.n_inputs_ + 2
                                              + (K * K if self.transitions == "softmax"
                                                 else 0))}, f"sample(n_samples={n})")
        rng = make_rng(self.random_state if random_state is None else random_state)
        U = check_inputs(inputs, n, self.n_inputs_)
        lags = self._history(history)
        family = self.emission_family(self.n_features_)
        states = self._sample_states(params, U[:, self._columns("transition", U.shape[1])],
                                     rng)
        X = self._emit(params, family, states, rng, lags,
                       U[:, self._columns("emission", U.shape[1])])
        return (X.reshape(n, -1) if self.emission == "linear" else X.reshape(n, 1)), states

    def _sample_states(self, params, U, rng) -> np.ndarray:
        """A path of the chain over the rows of ``U``, the transition inputs (the move into
        row ``t`` reads ``U[t]``)."""
        n = len(U)
        if self.transitions == "softmax":
            transmats = self._transition_block(self.n_inputs_).matrices(params["transmat"], U)
            tidx = np.arange(n)
        else:
            transmats = np.asarray(params["transmat"])[None]
            tidx = np.zeros(n, dtype=np.int64)
        return time_varying.sample_chain(params["startprob"], transmats, tidx, rng)

    # -- forecasts ---------------------------------------------------------------------------
    def _future(self, X, lengths, inputs, future_inputs, steps):
        """Filtered last states, the history lags and the future inputs of each sequence."""
        params = self._params()
        h = check_positive_int(steps, "steps")
        d, filtered = self._filtered(X, lengths, inputs, "forecast")
        S = len(d.seqs.lengths)
        ends = d.seqs.bounds[1:] - 1   # the last modelled row: lag 1 of the first step
        alpha = filtered[ends]
        M = self.n_inputs_
        Uf = check_inputs(future_inputs, S * h, M).reshape(S, h, M) if M or \
            future_inputs is not None else np.zeros((S, h, 0))
        if M == 0 and future_inputs is not None and np.size(future_inputs):
            raise InvalidInputError("future_inputs: the model has no inputs; drop it")
        D, p = self.n_features_, self.n_lags
        Y = d.Z[:, :D]
        Me = len(self._columns("emission", M))
        lags = np.hstack([Y[ends]] + [d.Z[ends, D + Me + (lag - 1) * D:D + Me + lag * D]
                                      for lag in range(1, p)]) if p else np.zeros((S, 0))
        if self.transitions == "softmax":
            block = self._transition_block(M)
            Ut = Uf[..., self._columns("transition", M)]
            transmats = block.matrices(params["transmat"], Ut.reshape(S * h, -1)).reshape(
                S, h, self.n_states, self.n_states)
        else:
            transmats = np.broadcast_to(params["transmat"], (S, h, self.n_states,
                                                             self.n_states))
        return params, alpha, lags, Uf[..., self._columns("emission", M)], transmats

    def forecast(self, X, lengths=None, steps: int = 1, *, inputs=None,
                 future_inputs=None) -> fc.Forecast:
        r"""Predict the next ``steps`` observations and states of each sequence.

        The predictive distribution from the filtered state at the end of each sequence
        (:mod:`hiddenstate.models.regression.forecast`): state probabilities; for linear
        emissions (with or without lags) the exact mean and covariance of each step's
        Gaussian mixture; for logistic emissions the category probabilities.

        Parameters
        ----------
        X : array-like
            The history, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.
        steps : int, default=1
            How many steps ahead.
        inputs : array-like of shape (n_samples, n_inputs) or None, default=None
            The inputs of the history.
        future_inputs : array-like of shape (n_sequences * steps, n_inputs) or None
            The inputs of the steps to forecast, ``steps`` rows per sequence in order
            (required by a model with inputs).

        Returns
        -------
        Forecast
            ``state_proba`` ``(n_sequences, steps, n_states)`` and ``mean``, ``covariance``
            (linear) or ``proba`` (logistic).

        Raises
        ------
        ZeroProbabilityError
            If a history has probability zero under the model.

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> m = hs.RegressionHMM(2, n_lags=1)
        >>> m.startprob_, m.transmat_ = [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]]
        >>> m.coef_ = np.array([[[0.5]], [[0.5]]])      # y_t = 0.5 y_{t-1} + c_k + noise
        >>> m.intercept_, m.covars_ = np.array([[1.0], [-1.0]]), np.ones((2, 1, 1))
        >>> f = m.forecast([[0.0], [1.0], [1.5]], steps=2)
        >>> f.mean[0, :, 0].round(3), f.std()[0, :, 0].round(3)
        (array([1.499, 1.349]), array([1.2  , 1.534]))
        """
        params, alpha, lags, Uf, transmats = self._future(X, lengths, inputs, future_inputs,
                                                          steps)
        family = self.emission_family(self.n_features_)
        W = family.weights(params["emission"])
        if self.emission == "linear":
            state, mean, cov = fc.linear_moments(alpha, transmats, W,
                                                 params["emission"]["covars"], lags, Uf,
                                                 Uf.shape[2], self.n_lags, self.fit_intercept)
            return fc.Forecast(state, mean, cov)
        state = fc.state_path(alpha, transmats)

        def log_proba(j):
            design = self._design_rows(Uf[:, j], None)
            return family.category_log_proba(params["emission"], design)

        return fc.Forecast(state, proba=fc.logistic_proba(state, log_proba))

    def sample_forecast(self, X, lengths=None, steps: int = 1, n_scenarios: int = 100,
                        random_state=None, *, inputs=None, future_inputs=None):
        """Draw scenarios of the next ``steps`` observations and states of each sequence.

        Each scenario starts from a state drawn from the filtered state at the end of its
        sequence and follows the model (its lags from the history and its own draws), so
        the steps of a scenario keep their correlation.

        Parameters
        ----------
        X : array-like
            The history, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.
        steps : int, default=1
            How many steps ahead.
        n_scenarios : int, default=100
            The scenarios per sequence.
        random_state : int, numpy.random.Generator or None, default=None
            The seed; None: the estimator's ``random_state``.
        inputs : array-like of shape (n_samples, n_inputs) or None, default=None
            The inputs of the history.
        future_inputs : array-like of shape (n_sequences * steps, n_inputs) or None
            The inputs of the steps to forecast (see :meth:`forecast`).

        Returns
        -------
        X : ndarray
            ``(n_sequences, n_scenarios, steps, n_features)`` (categories: ``(n_sequences,
            n_scenarios, steps)``).
        states : ndarray of shape (n_sequences, n_scenarios, steps)
            The hidden states.

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> m = hs.RegressionHMM(2, n_lags=1)
        >>> m.startprob_, m.transmat_ = [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]]
        >>> m.coef_ = np.array([[[0.5]], [[0.5]]])
        >>> m.intercept_, m.covars_ = np.array([[1.0], [-1.0]]), np.ones((2, 1, 1))
        >>> Y, Z = m.sample_forecast([[0.0], [1.0], [1.5]], steps=3, n_scenarios=4,
        ...                          random_state=0)
        >>> Y.shape, Z.shape
        ((1, 4, 3, 1), (1, 4, 3))
        """
        n = check_positive_int(n_scenarios, "n_scenarios")
        rng = make_rng(self.random_state if random_state is None else random_state)
        params, alpha, lags, Uf, transmats = self._future(X, lengths, inputs, future_inputs,
                                                          steps)
        S, h = Uf.shape[:2]
        family = self.emission_family(self.n_features_)
        D = self.n_features_
        ys = np.empty((S, n, h, D) if self.emission == "linear" else (S, n, h))
        zs = np.empty((S, n, h), dtype=np.int64)
        for s in range(S):
            z = _draw(np.broadcast_to(alpha[s], (n, self.n_states)), rng)
            state = np.repeat(lags[s][None], n, axis=0)
            for j in range(h):
                z = _draw(transmats[s, j][z], rng)
                design = self._design_rows(np.repeat(Uf[s, j][None], n, axis=0),
                                           state if self.n_lags else None)
                y = family.sample(params["emission"], z, rng, design=design)
                zs[s, :, j] = z
                ys[s, :, j] = y
                if self.n_lags:
                    state = np.hstack([y, state[:, :-D]])
        return ys, zs

    # -- information criteria ----------------------------------------------------------------
    def n_parameters(self) -> int:
        """Count the free parameters (for AIC and BIC).

        Returns
        -------
        int
            The initial distribution's ``K - 1``, the transitions' ``K (K - 1)`` (times
            ``n_inputs + 1`` for softmax transitions) and the emission family's.

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> m = hs.RegressionHMM(2)
        >>> m.startprob_, m.transmat_ = [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]]
        >>> m.coef_ = np.array([[[1.0]], [[-1.0]]])
        >>> m.intercept_, m.covars_ = np.zeros((2, 1)), np.ones((2, 1, 1))
        >>> m.n_parameters()   # 1 + 2 + 2 x (slope, intercept, variance)
        9
        """
        self.check_is_fitted()
        K = self.n_states
        per_row = K - 1
        if self.transitions == "softmax":
            per_row *= len(self._columns("transition", self.n_inputs_)) + 1
        family = self.emission_family(self.n_features_)
        return (K - 1) + K * per_row + family.n_free_parameters()

    def bic(self, X, lengths=None, *, inputs=None) -> float:
        r"""Compute the Bayesian information criterion :math:`-2\log p(X) + p \log n`.

        ``n`` counts the modelled observations (not the ``n_lags`` conditioned on).

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.
        inputs : array-like of shape (n_samples, n_inputs) or None, default=None
            The inputs of every observation.

        Returns
        -------
        float
            The BIC (lower is better).

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> m = hs.RegressionHMM(2)
        >>> m.startprob_, m.transmat_ = [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]]
        >>> m.coef_ = np.array([[[1.0]], [[-1.0]]])
        >>> m.intercept_, m.covars_ = np.zeros((2, 1)), np.ones((2, 1, 1))
        >>> round(m.bic([[1.0], [-2.0], [0.5]], inputs=[1.0, -2.0, 0.5]), 2)
        17.05
        """
        d = self._design(X, lengths, inputs, self.n_features_, self.n_inputs_)
        return float(-2 * self.score(X, lengths, inputs=inputs)
                     + self.n_parameters() * np.log(len(d.Z)))

    def aic(self, X, lengths=None, *, inputs=None) -> float:
        r"""Compute the Akaike information criterion :math:`-2\log p(X) + 2p`.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.
        inputs : array-like of shape (n_samples, n_inputs) or None, default=None
            The inputs of every observation.

        Returns
        -------
        float
            The AIC (lower is better).

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> m = hs.RegressionHMM(2)
        >>> m.startprob_, m.transmat_ = [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]]
        >>> m.coef_ = np.array([[[1.0]], [[-1.0]]])
        >>> m.intercept_, m.covars_ = np.zeros((2, 1)), np.ones((2, 1, 1))
        >>> round(m.aic([[1.0], [-2.0], [0.5]], inputs=[1.0, -2.0, 0.5]), 2)
        25.16
        """
        return float(-2 * self.score(X, lengths, inputs=inputs) + 2 * self.n_parameters())


def _draw(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One category per row of the probability rows ``p`` (n, K)."""
    u = rng.random(len(p))
    return np.minimum((np.cumsum(p, axis=1) < u[:, None] * p.sum(axis=1)[:, None]).sum(
        axis=1), p.shape[1] - 1)

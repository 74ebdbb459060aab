"""What a fitted :class:`~.estimator.HMM` answers: scores, posteriors, decoding, imputation,
sampling and the information criteria. :class:`HMMQueries` is a base of
:class:`~.estimator.HMM`; its ``check_memory`` is an entry point listed in :mod:`.estimator`."""

from __future__ import annotations

import numpy as np

from ... import inference
from ..._validation import check_memory as check_parts
from ..._validation import check_positive_int, make_rng
from ...errors import InvalidInputError
from ...inference import Sequences
from ...learn.gibbs_fit import posterior_predictive
from .memory import check_memory, sample_bytes
from .problem import check_possible, drawn_path_loglik


class HMMQueries:
    """The inference methods of :class:`~.estimator.HMM` (the class it is mixed into provides
    ``checked_params``, ``validate_data``, ``emission_family`` and the parameters)."""

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
        """**Entry point.** Refuse inference ``op`` on ``X`` when it would not fit in memory.

        See :func:`hiddenstate.models.hmm.memory.check_memory`.

        Parameters
        ----------
        op : str
            The inference function (see :func:`hiddenstate.inference.memory_estimate`).
        X : ndarray
            The validated observations.
        seqs : hiddenstate.inference.Sequences
            Their layout.
        family : hiddenstate.families.EmissionFamily
            The emission family.
        k : int, default=1
            The number of paths (k-best decoding).
        fixed : dict or None, default=None
            Further arrays the operation needs, name -> bytes.
        what : str or None, default=None
            The operation as the error message names it; None: ``op``.
        fixes : dict or None, default=None
            Remedies the error message suggests.

        Raises
        ------
        hiddenstate.errors.InsufficientMemoryError
            If the operation would not fit in the available memory.
        """
        check_memory(self, op, X, seqs, family, k, fixed, what, fixes)

    @posterior_predictive
    def score_samples(self, X, lengths=None) -> np.ndarray:
        r"""Compute the log-likelihood of each sequence (forward pass only).

        hmmlearn's ``score_samples`` (log p(X) with the posteriors) is :meth:`score` and
        :meth:`predict_proba` here; :mod:`hiddenstate.compat.hmmlearn` keeps hmmlearn's meaning.
        After ``learn="gibbs"``: the posterior predictive :math:`\log \frac1S \sum_s
        p(x \mid \theta_s)` of each sequence over the kept draws (see
        :mod:`hiddenstate.learn.gibbs_fit`), and :meth:`score` is its sum.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other: categorical, integer symbols
            of shape ``(n_samples,)`` or ``(n_samples, 1)`` (``(n_samples, F)`` for ``F``
            categorical features); the other families, ``(n_samples, n_features)``.
        lengths : array-like of int or None, default=None
            The length of each sequence (they sum to ``n_samples``); None: one sequence.

        Returns
        -------
        ndarray of shape (n_sequences,)
            :math:`\log p(x)` of each sequence, float64 (``-inf`` for a sequence of probability
            zero).

        Raises
        ------
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InvalidInputError
            If the data, or a parameter set by hand, are invalid.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> model = hs.HMM(n_states=2, n_features=3, random_state=0)
        >>> model.startprob_ = [0.6, 0.4]
        >>> model.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
        >>> model.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
        >>> model.score_samples([0, 0, 1, 2, 2, 2], lengths=[3, 3]).round(3)
        array([-2.833, -2.798])
        """
        chain, seqs, table = self._prepare(X, lengths, "log_likelihood", chain=True)
        return chain.log_likelihood(table, seqs)

    def score(self, X, lengths=None) -> float:
        r"""Compute the log-likelihood of the sequences, summed.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other: categorical, integer symbols
            of shape ``(n_samples,)`` or ``(n_samples, 1)`` (``(n_samples, F)`` for ``F``
            categorical features); the other families, ``(n_samples, n_features)``.
        lengths : array-like of int or None, default=None
            The length of each sequence (they sum to ``n_samples``); None: one sequence.

        Returns
        -------
        float
            :math:`\log p(X)` (``-inf`` if a sequence has probability zero).

        Raises
        ------
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InvalidInputError
            If the data, or a parameter set by hand, are invalid.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> model = hs.HMM(n_states=2, n_features=3, random_state=0)
        >>> model.startprob_ = [0.6, 0.4]
        >>> model.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
        >>> model.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
        >>> round(model.score([0, 0, 1, 2, 2, 2], lengths=[3, 3]), 3)
        -5.631
        """
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
        r"""Compute the filtered state posteriors :math:`p(z_t \mid x_{0:t})`.

        What the model believes at each step having seen only the past and present.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other: categorical, integer symbols
            of shape ``(n_samples,)`` or ``(n_samples, 1)`` (``(n_samples, F)`` for ``F``
            categorical features); the other families, ``(n_samples, n_features)``.
        lengths : array-like of int or None, default=None
            The length of each sequence (they sum to ``n_samples``); None: one sequence.

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

        Examples
        --------
        >>> import hiddenstate as hs
        >>> model = hs.HMM(n_states=2, n_features=3, random_state=0)
        >>> model.startprob_ = [0.6, 0.4]
        >>> model.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
        >>> model.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
        >>> model.filter_proba([0, 2, 2]).round(2)
        array([[0.91, 0.09],
               [0.47, 0.53],
               [0.16, 0.84]])
        """
        startprob, transmat, seqs, table = self._prepare(X, lengths, "filter")
        filtered, log_pred = inference.filter_states(startprob, transmat, table, seqs)
        check_possible(seqs.per_sequence_sum(log_pred), fitting=False)
        return filtered

    def score_tokens(self, X, lengths=None) -> np.ndarray:
        r"""Compute the predictive log-probability of every observation.

        :math:`\log p(x_t \mid x_{0:t-1})`; a sequence's entries sum to its log-likelihood (in
        a sequence of probability zero they are ``-inf`` from the first impossible observation
        on).

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other: categorical, integer symbols
            of shape ``(n_samples,)`` or ``(n_samples, 1)`` (``(n_samples, F)`` for ``F``
            categorical features); the other families, ``(n_samples, n_features)``.
        lengths : array-like of int or None, default=None
            The length of each sequence (they sum to ``n_samples``); None: one sequence.

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

        Examples
        --------
        >>> import hiddenstate as hs
        >>> model = hs.HMM(n_states=2, n_features=3, random_state=0)
        >>> model.startprob_ = [0.6, 0.4]
        >>> model.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
        >>> model.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
        >>> model.score_tokens([0, 0, 1]).round(3)
        array([-0.777, -0.505, -1.552])
        """
        startprob, transmat, seqs, table = self._prepare(X, lengths, "filter")
        return inference.filter_states(startprob, transmat, table, seqs)[1]

    def predict_proba(self, X, lengths=None) -> np.ndarray:
        r"""Compute the state posteriors :math:`p(z_t \mid x_{0:T})`.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other: categorical, integer symbols
            of shape ``(n_samples,)`` or ``(n_samples, 1)`` (``(n_samples, F)`` for ``F``
            categorical features); the other families, ``(n_samples, n_features)``.
        lengths : array-like of int or None, default=None
            The length of each sequence (they sum to ``n_samples``); None: one sequence.

        Returns
        -------
        ndarray of shape (n_samples, n_states)
            The posteriors (forward-backward).

        Raises
        ------
        ZeroProbabilityError
            If a sequence has probability zero under the model.
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InvalidInputError
            If the data, or a parameter set by hand, are invalid.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> model = hs.HMM(n_states=2, n_features=3, random_state=0)
        >>> model.startprob_ = [0.6, 0.4]
        >>> model.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
        >>> model.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
        >>> model.predict_proba([0, 2, 2]).round(2)
        array([[0.65, 0.35],
               [0.21, 0.79],
               [0.16, 0.84]])
        """
        return self._posteriors(X, lengths)[1]

    def impute(self, X, lengths=None) -> np.ndarray:
        r"""Fill in the missing entries of ``X`` from the posterior predictive.

        Gaussian and Poisson: the mean
        :math:`\sum_k p(z_t = k \mid X)\, E[x_{t,m} \mid x_{t,o}, z_t = k]` (Gaussian: given the
        row's observed dimensions :math:`o`); categorical: the most probable symbol
        :math:`\arg\max_w \sum_k p(z_t = k \mid X) B_{kw}`.

        Parameters
        ----------
        X : array-like
            The observations with missing entries: NaN (Gaussian, Poisson), ``-1``
            (categorical) or masked (``numpy.ma``).
        lengths : array-like of int or None, default=None
            The length of each sequence; None: one sequence.

        Returns
        -------
        ndarray
            ``X`` with its missing entries filled in; observed entries are unchanged.

        Raises
        ------
        ZeroProbabilityError
            If a sequence has probability zero under the model.
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InvalidInputError
            If the data, or a parameter set by hand, are invalid.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> model = hs.HMM(n_states=2, n_features=3, random_state=0)
        >>> model.startprob_ = [0.6, 0.4]
        >>> model.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
        >>> model.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
        >>> model.impute([0, -1, 2, 2])
        array([0, 0, 2, 2])
        """
        emis = self.checked_params()[2]
        Xv = self.validate_data(X, lengths, self.n_features_)[0]
        post = self._posteriors(Xv, lengths)[1]
        out = self.emission_family(self.n_features_).impute(emis, Xv, post)
        return out.reshape(np.shape(X)) if self.emission == "categorical" else out

    def decode(self, X, lengths=None, algorithm: str = "viterbi"):
        r"""Find the most likely states.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other: categorical, integer symbols
            of shape ``(n_samples,)`` or ``(n_samples, 1)`` (``(n_samples, F)`` for ``F``
            categorical features); the other families, ``(n_samples, n_features)``.
        lengths : array-like of int or None, default=None
            The length of each sequence (they sum to ``n_samples``); None: one sequence.
        algorithm : {"viterbi", "map"}, default="viterbi"
            ``"viterbi"``: the best joint path; ``"map"``: the per-step posterior argmax.

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
            If the data, or a parameter set by hand, are invalid.
        hiddenstate.errors.InvalidInputError
            If ``algorithm`` is neither ``"viterbi"`` nor ``"map"``.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> model = hs.HMM(n_states=2, n_features=3, random_state=0)
        >>> model.startprob_ = [0.6, 0.4]
        >>> model.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
        >>> model.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
        >>> log_prob, states = model.decode([0, 0, 2, 2, 2])
        >>> states
        array([0, 0, 1, 1, 1])
        """
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
        """Find the most likely state of every observation (see :meth:`decode`).

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other: categorical, integer symbols
            of shape ``(n_samples,)`` or ``(n_samples, 1)`` (``(n_samples, F)`` for ``F``
            categorical features); the other families, ``(n_samples, n_features)``.
        lengths : array-like of int or None, default=None
            The length of each sequence (they sum to ``n_samples``); None: one sequence.
        algorithm : {"viterbi", "map"}, default="viterbi"
            The decoder.

        Returns
        -------
        ndarray of shape (n_samples,)
            The decoded states.

        Raises
        ------
        ZeroProbabilityError
            If a sequence has probability zero under the model.
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InvalidInputError
            If the data, or a parameter set by hand, are invalid.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> model = hs.HMM(n_states=2, n_features=3, random_state=0)
        >>> model.startprob_ = [0.6, 0.4]
        >>> model.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
        >>> model.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
        >>> model.predict([0, 0, 2, 2, 2], algorithm="map")
        array([0, 0, 1, 1, 1])
        """
        return self.decode(X, lengths, algorithm)[1]

    def sample_posterior(self, X, lengths=None, random_state=None) -> np.ndarray:
        r"""Draw one hidden path from :math:`p(z \mid x)` (forward filtering, backward sampling).

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other: categorical, integer symbols
            of shape ``(n_samples,)`` or ``(n_samples, 1)`` (``(n_samples, F)`` for ``F``
            categorical features); the other families, ``(n_samples, n_features)``.
        lengths : array-like of int or None, default=None
            The length of each sequence (they sum to ``n_samples``); None: one sequence.
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

        Examples
        --------
        >>> import hiddenstate as hs
        >>> model = hs.HMM(n_states=2, n_features=3, random_state=0)
        >>> model.startprob_ = [0.6, 0.4]
        >>> model.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
        >>> model.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
        >>> model.sample_posterior([0, 0, 2, 2], random_state=0).shape
        (4,)
        """
        rng = make_rng(self.random_state if random_state is None else random_state)
        startprob, transmat, seqs, table = self._prepare(X, lengths, "sample_posterior")
        states = inference.sample_posterior(startprob, transmat, table, seqs, rng)
        check_possible(drawn_path_loglik(states, seqs.bounds), fitting=False)
        return states

    def sample(self, n_samples: int = 1, random_state=None):
        """Draw one sequence of ``n_samples`` steps.

        Parameters
        ----------
        n_samples : int, default=1
            The length of the sequence.
        random_state : int, numpy.random.Generator or None, default=None
            The seed; None: the estimator's ``random_state``.

        Returns
        -------
        X : ndarray
            The observations (categorical: ``(n_samples, 1)``; the other families
            ``(n_samples, n_features)``).
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
        >>> import hiddenstate as hs
        >>> model = hs.HMM(n_states=2, n_features=3, random_state=0)
        >>> model.startprob_ = [0.6, 0.4]
        >>> model.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
        >>> model.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
        >>> X, states = model.sample(5, random_state=1)
        >>> X.shape, states.shape
        ((5, 1), (5,))
        """
        startprob, transmat, emis = self.checked_params()
        n = check_positive_int(n_samples, "n_samples")
        rng = make_rng(self.random_state if random_state is None else random_state)
        family = self.emission_family(self.n_features_)
        check_parts({"n_samples": sample_bytes(self, n)}, f"sample(n_samples={n})")
        states = inference.sample_chain(startprob, transmat, n, rng)
        X = family.sample(emis, states, rng)
        return X, states

    def get_stationary_distribution(self) -> np.ndarray:
        r"""Compute the stationary distribution of the hidden chain: :math:`\pi A = \pi`.

        The distribution the chain settles into, :math:`\pi A = \pi`, :math:`\sum_k \pi_k =
        1`. It is unique when the chain has one closed class of states (states that reach
        each other and nothing outside); states outside it (transient ones) get 0. Solved
        as a linear system on that class (irreducible there, so the system has one
        solution), not by an eigen-decomposition. (The hmmlearn classes of
        :mod:`hiddenstate.compat.hmmlearn` keep hmmlearn's eigenvector.)

        Returns
        -------
        ndarray of shape (n_states,)
            :math:`\pi`.

        Raises
        ------
        NotFittedError
            If the parameters are not set.
        hiddenstate.errors.InvalidInputError
            If the chain has several closed classes (no unique stationary distribution: the
            long-run distribution depends on where it starts); the message names them.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> model = hs.HMM(2, n_features=2)
        >>> model.startprob_ = [1.0, 0.0]
        >>> model.transmat_ = [[0.9, 0.1], [0.3, 0.7]]
        >>> model.emissionprob_ = [[0.5, 0.5], [0.5, 0.5]]
        >>> model.get_stationary_distribution().round(6)
        array([0.75, 0.25])
        """
        from scipy.sparse.csgraph import connected_components

        transmat = self.checked_params()[1]
        K = len(transmat)
        _, label = connected_components(transmat > 0, directed=True, connection="strong")
        leaves = (transmat > 0) & (label[:, None] != label[None, :])
        closed = [c for c in np.unique(label) if not leaves[label == c].any()]
        if len(closed) > 1:
            named = "; ".join(str(np.flatnonzero(label == c).tolist()) for c in closed[:3])
            raise InvalidInputError(
                f"transmat_: the chain has {len(closed)} closed classes of states ({named}), "
                "so no unique stationary distribution; the long-run distribution depends on "
                "the start (use startprob_ @ matrix_power(transmat_, t) for a given t)")
        members = np.flatnonzero(label == closed[0])
        A = transmat[np.ix_(members, members)]
        M = A.T - np.eye(len(members))
        M[-1] = 1.0
        b = np.zeros(len(members))
        b[-1] = 1.0
        out = np.zeros(K)
        out[members] = np.linalg.solve(M, b)
        return out

    def n_parameters(self) -> int:
        """Count the free parameters (for AIC and BIC).

        Returns
        -------
        int
            :math:`(K - 1) + K (K - 1)` plus the emission family's free parameters.

        Raises
        ------
        NotFittedError
            Before ``fit``.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> model = hs.HMM(n_states=2, n_features=3, random_state=0)
        >>> model.startprob_ = [0.6, 0.4]
        >>> model.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
        >>> model.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
        >>> model.n_parameters()
        7
        """
        self.check_is_fitted()
        K = self.n_states
        return (K - 1) + K * (K - 1) + self.emission_family(self.n_features_).n_free_parameters()

    def bic(self, X, lengths=None) -> float:
        r"""Compute the Bayesian information criterion of the model on ``X``.

        :math:`-2 \log p(X) + p \log n` with ``p`` free parameters (:meth:`n_parameters`) and
        ``n`` observations.

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other: categorical, integer symbols
            of shape ``(n_samples,)`` or ``(n_samples, 1)`` (``(n_samples, F)`` for ``F``
            categorical features); the other families, ``(n_samples, n_features)``.
        lengths : array-like of int or None, default=None
            The length of each sequence (they sum to ``n_samples``); None: one sequence.

        Returns
        -------
        float
            The BIC (lower is better).

        Raises
        ------
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InvalidInputError
            If the data, or a parameter set by hand, are invalid.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> model = hs.HMM(n_states=2, n_features=3, random_state=0)
        >>> model.startprob_ = [0.6, 0.4]
        >>> model.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
        >>> model.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
        >>> print(round(model.bic([0, 0, 1, 2, 2, 2]), 2))
        24.91
        """
        self.check_is_fitted()
        n = len(self.validate_data(X, lengths, self.n_features_)[0])
        return -2 * self.score(X, lengths) + self.n_parameters() * np.log(n)

    def aic(self, X, lengths=None) -> float:
        r"""Compute the Akaike information criterion of the model on ``X``.

        :math:`-2 \log p(X) + 2 p` with ``p`` free parameters (:meth:`n_parameters`).

        Parameters
        ----------
        X : array-like
            The observations, the sequences one after the other: categorical, integer symbols
            of shape ``(n_samples,)`` or ``(n_samples, 1)`` (``(n_samples, F)`` for ``F``
            categorical features); the other families, ``(n_samples, n_features)``.
        lengths : array-like of int or None, default=None
            The length of each sequence (they sum to ``n_samples``); None: one sequence.

        Returns
        -------
        float
            The AIC (lower is better).

        Raises
        ------
        NotFittedError
            Before ``fit`` (or before every parameter is set by hand).
        hiddenstate.errors.InvalidInputError
            If the data, or a parameter set by hand, are invalid.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> model = hs.HMM(n_states=2, n_features=3, random_state=0)
        >>> model.startprob_ = [0.6, 0.4]
        >>> model.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
        >>> model.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
        >>> print(round(model.aic([0, 0, 1, 2, 2, 2]), 2))
        26.36
        """
        return -2 * self.score(X, lengths) + 2 * self.n_parameters()

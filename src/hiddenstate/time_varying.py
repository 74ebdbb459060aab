r"""Inference over many sequences for a chain whose transition matrix changes with the step
(the layer of :mod:`hiddenstate.inference`, for :mod:`hiddenstate.kernels.time_varying`).

Transition matrices are given as ``(transmats, tidx)``: ``transmats[tidx[t]]`` is
:math:`A_t`, the matrix of the move into row ``t`` (see the kernels' module), and emissions as
an :class:`~hiddenstate.inference.EmissionTable`; its rows are read per observation (a table
shared by symbol is read through its index; posteriors always come back per row). An input-
driven HMM (:class:`hiddenstate.RegressionHMM` with ``transitions="softmax"``) builds one
matrix per row from its inputs; a fixed chain is the special case ``transmats[None]``, which
the tests use to check these functions against :mod:`hiddenstate.inference`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .inference import EmissionTable, Sequences, _f64
from .kernels.time_varying import (
    tv_filter,
    tv_forward_backward,
    tv_sample_chain,
    tv_sample_posterior,
    tv_viterbi,
)

__all__ = ["VaryingPosteriors", "filter_states", "forward_backward", "log_likelihood",
           "sample_chain", "sample_posterior", "viterbi"]


@dataclass
class VaryingPosteriors:
    r"""Output of :func:`forward_backward`.

    Parameters
    ----------
    loglik : ndarray of shape (n_sequences,)
        The log-likelihood of each sequence.
    start : ndarray of shape (K,)
        The expected initial-state counts.
    trans : ndarray of shape (K, K)
        The expected transition counts :math:`\sum_t \xi_t(i, j)`.
    post : ndarray of shape (N, K)
        The state posteriors of every row.
    xi_design : ndarray of shape (K, K, P)
        :math:`\sum_t \xi_t(i, j)\,\phi_t` for the design ``phi`` given (``P = 0`` when
        none was).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference, time_varying
    >>> table = inference.EmissionTable.from_log_likelihood(np.zeros((3, 2)))
    >>> post = time_varying.forward_backward(np.array([1.0, 0.0]), np.full((1, 2, 2), 0.5),
    ...                                      np.zeros(3, int), table,
    ...                                      inference.Sequences.from_lengths([3]))
    >>> post.trans, post.xi_design.shape
    (array([[0.75, 0.75],
           [0.25, 0.25]]), (2, 2, 0))
    """

    loglik: np.ndarray
    start: np.ndarray
    trans: np.ndarray
    post: np.ndarray
    xi_design: np.ndarray


def _index(tidx) -> np.ndarray:
    return np.ascontiguousarray(tidx, dtype=np.int64)


def _forward(startprob, transmats, tidx, table: EmissionTable, seqs: Sequences):
    """The scaled forward filter of every row (:func:`tv_filter`): ``(alpha, log_c,
    loglik)`` without the table's offsets."""
    startprob = _f64(startprob)
    N = seqs.n_samples
    alpha = np.zeros((N, len(startprob)))
    log_c = np.zeros(N)
    loglik = np.zeros(len(seqs.lengths))
    tv_filter(startprob, _f64(transmats), _index(tidx), table.emis, table.idx, seqs.bounds,
              seqs.chunks, alpha, log_c, loglik)
    return alpha, log_c, loglik


def forward_backward(startprob, transmats, tidx, table: EmissionTable, seqs: Sequences,
                     design: np.ndarray | None = None) -> VaryingPosteriors:
    r"""Compute the posteriors and expected counts (scaled forward-backward, :math:`A_t`).

    Parameters
    ----------
    startprob : array-like of shape (K,)
        The initial distribution.
    transmats : array-like of shape (M, K, K)
        The transition matrices.
    tidx : array-like of int of shape (n_samples,)
        The matrix of the move into each row (``transmats[tidx[t]]``).
    table : hiddenstate.inference.EmissionTable
        The emission probabilities of the data.
    seqs : hiddenstate.inference.Sequences
        The layout of the data.
    design : ndarray of shape (n_samples, P) or None, default=None
        A per-row design :math:`\phi_t` against which the transition posteriors are summed
        (``xi_design``); None: none.

    Returns
    -------
    VaryingPosteriors
        The log-likelihoods and the statistics (an impossible sequence contributes none).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference, time_varying
    >>> startprob = np.array([0.6, 0.4])
    >>> transmat = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> emissionprob = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    >>> seqs = inference.Sequences.from_lengths([3, 3])
    >>> table = inference.EmissionTable.from_symbols(emissionprob, np.array([0, 0, 1, 2, 2, 2]))
    >>> post = time_varying.forward_backward(startprob, transmat[None], np.zeros(6, int),
    ...                                      table, seqs)
    >>> post.loglik.round(3), float(post.trans.sum().round(6))
    (array([-2.833, -2.798]), 4.0)
    """
    startprob = _f64(startprob)
    K = len(startprob)
    N = seqs.n_samples
    design = np.empty((N, 0)) if design is None else np.asarray(design, dtype=np.float64)
    full = np.ascontiguousarray(np.column_stack([design, np.ones(N)]))  # + the plain counts
    C = seqs.n_chunks
    post = np.zeros((N, K))
    start_acc = np.zeros((C, K))
    xi_acc = np.zeros((C, K, K, full.shape[1]))
    loglik = np.zeros(len(seqs.lengths))
    tv_forward_backward(startprob, _f64(transmats), _index(tidx), table.emis, table.idx,
                        seqs.bounds, seqs.chunks, full, post, start_acc, xi_acc, loglik)
    xi = xi_acc.sum(axis=0)
    return VaryingPosteriors(loglik + table.offset_per_sequence(seqs), start_acc.sum(axis=0),
                             xi[..., -1], post, xi[..., :-1])


def filter_states(startprob, transmats, tidx, table: EmissionTable,
                  seqs: Sequences) -> tuple[np.ndarray, np.ndarray]:
    r"""Run the forward filter and keep every row.

    Parameters
    ----------
    startprob : array-like of shape (K,)
        The initial distribution.
    transmats : array-like of shape (M, K, K)
        The transition matrices.
    tidx : array-like of int of shape (n_samples,)
        The matrix of the move into each row.
    table : hiddenstate.inference.EmissionTable
        The emission probabilities of the data.
    seqs : hiddenstate.inference.Sequences
        The layout of the data.

    Returns
    -------
    filtered : ndarray of shape (n_samples, K)
        :math:`p(z_t \mid x_{\le t})` (0 from the first impossible row of a sequence on).
    log_pred : ndarray of shape (n_samples,)
        :math:`\log p(x_t \mid x_{<t})`, which sums to each sequence's log-likelihood.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference, time_varying
    >>> table = inference.EmissionTable.from_symbols(np.array([[0.7, 0.3], [0.1, 0.9]]),
    ...                                              np.array([0, 1, 1]))
    >>> transmats = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.5, 0.5]]])
    >>> filtered, log_pred = time_varying.filter_states(
    ...     np.array([0.5, 0.5]), transmats, np.array([0, 1, 0]), table,
    ...     inference.Sequences.from_lengths([3]))
    >>> filtered.round(3)
    array([[0.875, 0.125],
           [0.25 , 0.75 ],
           [0.167, 0.833]])
    """
    alpha, log_c, _ = _forward(startprob, transmats, tidx, table, seqs)
    if table.log_offset is not None:
        log_c = log_c + table.log_offset
    return alpha, log_c


def log_likelihood(startprob, transmats, tidx, table: EmissionTable,
                   seqs: Sequences) -> np.ndarray:
    r"""Compute the log-likelihood of each sequence by the forward pass.

    Parameters
    ----------
    startprob : array-like of shape (K,)
        The initial distribution.
    transmats : array-like of shape (M, K, K)
        The transition matrices.
    tidx : array-like of int of shape (n_samples,)
        The matrix of the move into each row.
    table : hiddenstate.inference.EmissionTable
        The emission probabilities of the data.
    seqs : hiddenstate.inference.Sequences
        The layout of the data.

    Returns
    -------
    ndarray of shape (n_sequences,)
        :math:`\log p(x)` of each sequence (``-inf`` if impossible).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference, time_varying
    >>> table = inference.EmissionTable.from_symbols(np.array([[0.7, 0.3], [0.1, 0.9]]),
    ...                                              np.array([0, 1, 1]))
    >>> float(time_varying.log_likelihood(np.array([0.5, 0.5]), np.full((1, 2, 2), 0.5),
    ...                                   np.zeros(3, int), table,
    ...                                   inference.Sequences.from_lengths([3]))[0].round(4))
    -1.9379
    """
    loglik = _forward(startprob, transmats, tidx, table, seqs)[2]
    return loglik + table.offset_per_sequence(seqs)


def viterbi(startprob, transmats, tidx, table: EmissionTable, seqs: Sequences):
    r"""Find the most probable state path of each sequence.

    Parameters
    ----------
    startprob : array-like of shape (K,)
        The initial distribution.
    transmats : array-like of shape (M, K, K)
        The transition matrices.
    tidx : array-like of int of shape (n_samples,)
        The matrix of the move into each row.
    table : hiddenstate.inference.EmissionTable
        The emission probabilities of the data.
    seqs : hiddenstate.inference.Sequences
        The layout of the data.

    Returns
    -------
    log_prob : ndarray of shape (n_sequences,)
        :math:`\log p(x, z^*)` of each sequence (``-inf`` if impossible).
    states : ndarray of int64 of shape (n_samples,)
        The paths (-1 for an impossible sequence); ties go to the lowest state.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference, time_varying
    >>> table = inference.EmissionTable.from_symbols(np.array([[0.7, 0.3], [0.1, 0.9]]),
    ...                                              np.array([0, 1, 1]))
    >>> transmats = np.array([[[0.9, 0.1], [0.2, 0.8]]])
    >>> time_varying.viterbi(np.array([0.5, 0.5]), transmats, np.zeros(3, int), table,
    ...                      inference.Sequences.from_lengths([3]))[1]
    array([1, 1, 1])
    """
    startprob = _f64(startprob)
    K = len(startprob)
    N = seqs.n_samples
    with np.errstate(divide="ignore"):
        log_start = np.log(startprob)
        log_transmats = np.log(_f64(transmats))
    log_emis = table.log_emis()
    backptr = np.empty((N, K), dtype=np.int64)
    logprob = np.zeros(len(seqs.lengths))
    states = np.empty(N, dtype=np.int64)
    tv_viterbi(log_start, log_transmats, _index(tidx), log_emis, table.idx, seqs.bounds,
               seqs.chunks, backptr, logprob, states)
    return logprob + table.offset_per_sequence(seqs), states


def sample_posterior(startprob, transmats, tidx, table: EmissionTable, seqs: Sequences,
                     rng: np.random.Generator) -> np.ndarray:
    r"""Draw one hidden path of every sequence from :math:`p(z \mid x)` (FFBS).

    Parameters
    ----------
    startprob : array-like of shape (K,)
        The initial distribution.
    transmats : array-like of shape (M, K, K)
        The transition matrices.
    tidx : array-like of int of shape (n_samples,)
        The matrix of the move into each row.
    table : hiddenstate.inference.EmissionTable
        The emission probabilities of the data.
    seqs : hiddenstate.inference.Sequences
        The layout of the data.
    rng : numpy.random.Generator
        The generator (one draw per row).

    Returns
    -------
    ndarray of int64 of shape (n_samples,)
        The sampled paths (-1 for an impossible sequence).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate import inference, time_varying
    >>> table = inference.EmissionTable.from_symbols(np.array([[1.0, 0.0], [0.0, 1.0]]),
    ...                                              np.array([0, 1, 1]))
    >>> time_varying.sample_posterior(np.array([0.5, 0.5]), np.full((1, 2, 2), 0.5),
    ...                               np.zeros(3, int), table,
    ...                               inference.Sequences.from_lengths([3]),
    ...                               np.random.default_rng(0))
    array([0, 1, 1])
    """
    startprob = _f64(startprob)
    N = seqs.n_samples
    uniforms = rng.random(N)
    states = np.empty(N, dtype=np.int64)
    tv_sample_posterior(startprob, _f64(transmats), _index(tidx), table.emis, table.idx,
                        seqs.bounds, seqs.chunks, uniforms, states)
    return states


def sample_chain(startprob, transmats, tidx, rng: np.random.Generator) -> np.ndarray:
    r"""Draw a path of the chain, one state per entry of ``tidx``.

    Parameters
    ----------
    startprob : array-like of shape (K,)
        The initial distribution.
    transmats : array-like of shape (M, K, K)
        The transition matrices.
    tidx : array-like of int of shape (n,)
        The matrix of the move into each step (the first entry is not used).
    rng : numpy.random.Generator
        The generator (one draw per step).

    Returns
    -------
    ndarray of int64 of shape (n,)
        The states.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.time_varying import sample_chain
    >>> flip, stay = [[0.0, 1.0], [1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]
    >>> sample_chain(np.array([1.0, 0.0]), np.array([flip, stay]), np.array([0, 0, 1, 0]),
    ...              np.random.default_rng(0))
    array([0, 1, 1, 0])
    """
    tidx = _index(tidx)
    states = np.empty(len(tidx), dtype=np.int64)
    if len(tidx):
        tv_sample_chain(_f64(startprob), _f64(transmats), tidx, rng.random(len(tidx)),
                        states)
    return states

r"""Forward-backward and Viterbi over the allowed transitions only (a structured transition
matrix stored by rows, CSR: row ``i`` allows states ``indices[indptr[i]:indptr[i + 1]]``
with probabilities ``values[...]``). Each step costs :math:`O(\mathrm{nnz})` instead of
:math:`O(K^2)`, which is what makes a banded or left-right model with :math:`10^4` states
tractable; the dense lockstep kernels (:mod:`.forward_backward`, :mod:`.viterbi`) remain
the general path, and the tests check these against them.

Scaled recursions (Rabiner 1989, sec. V.A), one sequence at a time, sequences in parallel
by chunk:

.. math::
    \hat\alpha_t(j) = \frac{e_t(j)\sum_{i \to j}\hat\alpha_{t-1}(i)A_{ij}}{c_t},\qquad
    \hat\beta_t(i) = \frac{\sum_{i \to j}A_{ij}e_{t+1}(j)\hat\beta_{t+1}(j)}{c_{t+1}},

:math:`\log p(x) = \sum_t \log c_t`, :math:`\gamma_t = \hat\alpha_t\hat\beta_t` and the
expected count of each allowed transition
:math:`\sum_t \hat\alpha_t(i)A_{ij}e_{t+1}(j)\hat\beta_{t+1}(j)/c_{t+1}`, one number per
stored entry. Viterbi is the same forward sweep in max-plus (ties go to the lowest source
state, as in the dense kernel). Emissions come as ``(emis, idx)`` like every kernel.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..threads import run
from .chunks import claim
from .forward_backward import normalise_scale

_ENTRY_NS = 4.0  # single-thread nanoseconds per (row, allowed transition) and pass (measured)


def _seconds(bounds, nnz, passes):
    return bounds[-1] * max(nnz, 1) * passes * _ENTRY_NS * 1e-9


@njit(cache=True)
def _forward_step(first, prev, cur, startprob, indptr, indices, values, row):
    """One scaled forward step into ``cur`` (from ``startprob`` when ``first``, else from
    ``prev`` along the allowed transitions); returns the scale :math:`c_t` (0 when the
    step is impossible, ``cur`` then left unnormalised)."""
    K = len(startprob)
    if first:
        for j in range(K):
            cur[j] = startprob[j] * row[j]
    else:
        for j in range(K):
            cur[j] = 0.0
        for i in range(K):
            ai = prev[i]
            if ai != 0.0:
                for p in range(indptr[i], indptr[i + 1]):
                    cur[indices[p]] += ai * values[p]
        for j in range(K):
            cur[j] *= row[j]
    return normalise_scale(cur, K)


@njit(cache=True)
def _forward_sequence(a, b, startprob, indptr, indices, values, emis, idx, alpha, log_c):
    """Scaled forward pass of rows ``a .. b - 1`` into ``alpha`` and ``log_c``; returns
    ``log p(x)`` (``-inf`` for an impossible sequence)."""
    total = 0.0
    for t in range(a, b):
        c = _forward_step(t == a, alpha[max(t - 1, a)], alpha[t], startprob, indptr,
                          indices, values, emis[idx[t]])
        if c == 0.0:
            return -np.inf
        log_c[t] = np.log(c)
        total += log_c[t]
    return total


def sparse_forward_backward(startprob, indptr, indices, values, emis, idx, bounds, chunks,
                            by_idx, post_acc, post_dense, start_acc, trans_acc, loglik,
                            seq_weight):
    """Posteriors and expected counts of every sequence. Per chunk ``c`` of sequences:
    ``start_acc[c]`` (K,), ``trans_acc[c]`` (nnz,) and, with ``by_idx``, ``post_acc[c]``
    (rows of ``emis``, K) summed by emission row; otherwise ``post_dense`` (N, K) per row;
    every statistic of sequence ``s`` times ``seq_weight[s]``.
    ``loglik[s]`` = log p(x_s). An impossible sequence contributes nothing (its rows of
    ``post_dense`` are 0)."""
    N, K = len(idx), len(startprob)
    run(_sparse_forward_backward, len(chunks) - 1, _seconds(bounds, len(values), 2), startprob,
        indptr, indices, values, emis, idx, bounds, chunks, by_idx, post_acc, post_dense,
        start_acc, trans_acc, loglik, seq_weight, np.empty((N, K)), np.empty(N))


@njit(nogil=True, cache=True)
def _sparse_forward_backward(startprob, indptr, indices, values, emis, idx, bounds, chunks,
                             by_idx, post_acc, post_dense, start_acc, trans_acc, loglik,
                             seq_weight, alpha, log_c, ticket):
    """:func:`sparse_forward_backward` of the chunks this thread claims from ``ticket``
    (``alpha`` and ``log_c``: scratch rows for every observation)."""
    K = len(startprob)
    beta = np.empty(K)
    nxt = np.empty(K)
    while True:
        c = claim(ticket)
        if c >= len(chunks) - 1:
            return
        for s in range(chunks[c], chunks[c + 1]):
            a, b = bounds[s], bounds[s + 1]
            ll = _forward_sequence(a, b, startprob, indptr, indices, values, emis, idx,
                                   alpha, log_c)
            loglik[s] = ll
            if ll == -np.inf:
                if not by_idx:
                    for t in range(a, b):
                        for j in range(K):
                            post_dense[t, j] = 0.0
                continue
            f = seq_weight[s]
            for j in range(K):
                beta[j] = 1.0
            for t in range(b - 1, a - 1, -1):
                for j in range(K):
                    g = alpha[t, j] * beta[j] * f
                    if by_idx:
                        post_acc[c, idx[t], j] += g
                    else:
                        post_dense[t, j] = g
                if t == a:
                    for j in range(K):
                        start_acc[c, j] += alpha[t, j] * beta[j] * f
                    break
                # beta_{t-1}(i) = sum_j A_ij e_t(j) beta_t(j) / c_t, and the counts of t-1 -> t
                row = emis[idx[t]]
                inv = np.exp(-log_c[t])
                for j in range(K):
                    nxt[j] = row[j] * beta[j] * inv
                for i in range(K):
                    acc = 0.0
                    ai = alpha[t - 1, i]
                    for p in range(indptr[i], indptr[i + 1]):
                        w = values[p] * nxt[indices[p]]
                        acc += w
                        trans_acc[c, p] += ai * w * f
                    beta[i] = acc


def sparse_log_likelihood(startprob, indptr, indices, values, emis, idx, bounds, chunks,
                          loglik):
    """``loglik[s]`` = log p(x_s) by the scaled forward pass alone (two rows of scratch
    per thread)."""
    run(_sparse_log_likelihood, len(chunks) - 1, _seconds(bounds, len(values), 1), startprob,
        indptr, indices, values, emis, idx, bounds, chunks, loglik)


@njit(nogil=True, cache=True)
def _sparse_log_likelihood(startprob, indptr, indices, values, emis, idx, bounds, chunks,
                           loglik, ticket):
    """:func:`sparse_log_likelihood` of the chunks this thread claims from ``ticket``."""
    K = len(startprob)
    alpha = np.empty((2, K))
    while True:
        c = claim(ticket)
        if c >= len(chunks) - 1:
            return
        for s in range(chunks[c], chunks[c + 1]):
            total = 0.0
            a, b = bounds[s], bounds[s + 1]
            for t in range(a, b):
                cur = (t - a) % 2
                norm = _forward_step(t == a, alpha[1 - cur], alpha[cur], startprob, indptr,
                                     indices, values, emis[idx[t]])
                if norm == 0.0:
                    total = -np.inf
                    break
                total += np.log(norm)
            loglik[s] = total


@njit(cache=True)
def shift_max(delta):
    """Subtract the largest score from every entry of ``delta`` and return it (``-inf``, and
    ``delta`` unchanged, when every entry is ``-inf``): one step of max-normalised Viterbi,
    the maximum going to the path's total."""
    top = -np.inf
    for j in range(delta.shape[0]):
        top = max(top, delta[j])
    if top != -np.inf:
        for j in range(delta.shape[0]):
            delta[j] -= top
    return top


@njit(cache=True)
def backtrack(delta, total, backptr, a, b, states):
    """The end of a Viterbi pass over rows ``a .. b - 1``: the best last state (ties go to the
    lowest) and the path back through ``backptr`` into ``states`` (-1 throughout for an
    impossible sequence); returns :math:`\\log p(x, z^*)`, ``total`` plus the last score."""
    best = 0
    for j in range(1, delta.shape[0]):
        if delta[j] > delta[best]:
            best = j
    logprob = total + delta[best]
    if delta[best] == -np.inf:
        for t in range(a, b):
            states[t] = -1
        return logprob
    states[b - 1] = best
    for t in range(b - 1, a, -1):
        best = backptr[t, best]
        states[t - 1] = best
    return logprob


def sparse_viterbi(log_start, indptr, indices, log_values, log_emis, idx, bounds, chunks,
                   backptr, logprob, states):
    """Most probable path of every sequence (``states``, -1 for an impossible sequence)
    and its ``logprob``; ``backptr`` (N, K) is scratch."""
    run(_sparse_viterbi, len(chunks) - 1, _seconds(bounds, len(log_values), 1), log_start,
        indptr, indices, log_values, log_emis, idx, bounds, chunks, backptr, logprob, states)


@njit(nogil=True, cache=True)
def _sparse_viterbi(log_start, indptr, indices, log_values, log_emis, idx, bounds, chunks,
                    backptr, logprob, states, ticket):
    """:func:`sparse_viterbi` of the chunks this thread claims from ``ticket``."""
    K = len(log_start)
    delta = np.empty(K)
    nxt = np.empty(K)
    while True:
        c = claim(ticket)
        if c >= len(chunks) - 1:
            return
        for s in range(chunks[c], chunks[c + 1]):
            a, b = bounds[s], bounds[s + 1]
            row = log_emis[idx[a]]
            total = 0.0
            for j in range(K):
                delta[j] = log_start[j] + row[j]
            for t in range(a + 1, b):
                # max-normalised scores, as the dense kernel: the maximum goes to the total
                top = shift_max(delta)
                if top == -np.inf:
                    break
                total += top
                row = log_emis[idx[t]]
                for j in range(K):
                    nxt[j] = -np.inf
                    backptr[t, j] = 0
                for i in range(K):
                    di = delta[i]
                    if di == -np.inf:
                        continue
                    for p in range(indptr[i], indptr[i + 1]):
                        j = indices[p]
                        v = di + log_values[p]
                        if v > nxt[j]:
                            nxt[j] = v
                            backptr[t, j] = i
                for j in range(K):
                    delta[j] = nxt[j] + row[j]
            logprob[s] = backtrack(delta, total, backptr, a, b, states)

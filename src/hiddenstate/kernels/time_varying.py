r"""Forward-backward, filtering, Viterbi and sampling for a chain whose transition matrix
changes from step to step (input-driven transitions: an IOHMM's softmax regression of the
next state on the inputs).

Transition matrices come in the same ``(table, index)`` form as the emissions: a stack
``transmats`` of shape ``(M, K, K)`` and an index ``tidx`` of shape ``(N,)`` such that
``transmats[tidx[t]]`` is the matrix :math:`A_t` of the move *into* row ``t`` (from row
``t - 1``; unused at the first row of a sequence). A fixed chain is ``M = 1``, ``tidx = 0``;
an input-driven one has one matrix per row, or one per distinct input.

Scaled recursions (Rabiner 1989, sec. V.A, with :math:`A` replaced by :math:`A_t`):

.. math::
    c_t\hat\alpha_t(j) = e_t(j)\sum_i \hat\alpha_{t-1}(i) A_t(i, j),\qquad
    \hat\beta_{t-1}(i) = \sum_j A_t(i, j)\, e_t(j)\hat\beta_t(j) / c_t,

:math:`\log p(x) = \sum_t \log c_t`, :math:`\gamma_t = \hat\alpha_t\hat\beta_t` and
:math:`\xi_t(i, j) = \hat\alpha_{t-1}(i) A_t(i, j) e_t(j)\hat\beta_t(j) / c_t`. Because the
M-step of a softmax regression needs :math:`\xi_t` against the inputs of step ``t``, the
forward-backward kernel accumulates :math:`\sum_t \xi_t(i, j)\,\phi_t` for a per-row design
``phi`` (``(N, P)``; a column of ones gives the plain expected counts) instead of storing
:math:`\xi_t`.

One sequence at a time, scalar loops, chunks of sequences (``chunks``, bounds of groups of
sequences) shared out among threads as :mod:`.sparse` does (each public function hands a
``nogil`` kernel of the same name, with a leading underscore, to
:func:`hiddenstate.threads.run` with its estimated time): the time-varying matrix defeats
the lockstep lanes of :mod:`.forward_backward`, whose transposed matrix is shared by every
lane.
A step whose scale :math:`c_t` is zero marks the sequence impossible (log-likelihood
:math:`-\infty`, no statistics). ``tests/test_time_varying.py`` checks every kernel against
enumeration of the state paths, and against the fixed-matrix kernels when every
:math:`A_t` is the same.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..threads import run
from .chunks import claim
from .forward_backward import _draw, normalise_scale
from .sparse import backtrack, shift_max

_STEP_NS = 3.0  # single-thread nanoseconds per (row, K**2 entry) and pass (measured)


def _seconds(bounds, K, passes):
    return bounds[-1] * K * K * passes * _STEP_NS * 1e-9


@njit(cache=True)
def _forward_step(first, prev, cur, startprob, A, row):
    """One scaled forward step into ``cur`` (from ``startprob`` when ``first``, else from
    ``prev`` through ``A``); returns the scale :math:`c_t` (0: impossible)."""
    K = startprob.shape[0]
    if first:
        for j in range(K):
            cur[j] = startprob[j] * row[j]
    else:
        for j in range(K):
            cur[j] = 0.0
        for i in range(K):
            ai = prev[i]
            if ai != 0.0:
                for j in range(K):
                    cur[j] += ai * A[i, j]
        for j in range(K):
            cur[j] *= row[j]
    return normalise_scale(cur, K)


@njit(cache=True)
def _forward_sequence(a, b, startprob, transmats, tidx, emis, idx, alpha, log_c):
    """Scaled forward pass of rows ``a .. b - 1`` into ``alpha`` and ``log_c`` (indexed by
    row); returns ``log p(x)`` (``-inf`` for an impossible sequence, its rows from the
    first impossible one on left at 0)."""
    total = 0.0
    for t in range(a, b):
        c = _forward_step(t == a, alpha[max(t - 1, a)], alpha[t], startprob,
                          transmats[tidx[t]], emis[idx[t]])
        if c == 0.0:
            for r in range(t, b):
                log_c[r] = -np.inf
                for j in range(alpha.shape[1]):
                    alpha[r, j] = 0.0
            return -np.inf
        log_c[t] = np.log(c)
        total += log_c[t]
    return total


def tv_forward_backward(startprob, transmats, tidx, emis, idx, bounds, chunks, design, post,
                        start_acc, xi_acc, loglik):
    r"""Posteriors and expected statistics of every sequence.

    ``post`` (N, K): :math:`\gamma_t` per row (0 for an impossible sequence). Per chunk
    ``c`` of sequences: ``start_acc[c]`` (K,) the expected initial states and
    ``xi_acc[c]`` (K, K, P) :math:`\sum_t \xi_t(i, j)\,\phi_t` with ``phi = design`` (N, P).
    ``loglik[s]`` = log p(x_s) (scaled probabilities only: the table's offsets are the
    caller's).
    """
    N, K = len(idx), len(startprob)
    run(_tv_forward_backward, len(chunks) - 1, _seconds(bounds, K, 2) * design.shape[1],
        startprob, transmats, tidx, emis, idx, bounds, chunks, design, post, start_acc,
        xi_acc, loglik, np.empty((N, K)), np.empty(N))


@njit(nogil=True, cache=True)
def _tv_forward_backward(startprob, transmats, tidx, emis, idx, bounds, chunks, design, post,
                         start_acc, xi_acc, loglik, alpha, log_c, ticket):
    """:func:`tv_forward_backward` of the chunks this thread claims from ``ticket``
    (``alpha``, ``log_c``: scratch rows for every observation)."""
    K = startprob.shape[0]
    P = design.shape[1]
    beta = np.empty(K)
    nxt = np.empty(K)
    while True:
        c = claim(ticket)
        if c >= len(chunks) - 1:
            return
        for s in range(chunks[c], chunks[c + 1]):
            a, b = bounds[s], bounds[s + 1]
            ll = _forward_sequence(a, b, startprob, transmats, tidx, emis, idx, alpha, log_c)
            loglik[s] = ll
            if ll == -np.inf:
                for t in range(a, b):
                    for j in range(K):
                        post[t, j] = 0.0
                continue
            for j in range(K):
                beta[j] = 1.0
            for t in range(b - 1, a - 1, -1):
                for j in range(K):
                    post[t, j] = alpha[t, j] * beta[j]
                if t == a:
                    for j in range(K):
                        start_acc[c, j] += post[t, j]
                    break
                A = transmats[tidx[t]]
                row = emis[idx[t]]
                inv = np.exp(-log_c[t])
                for j in range(K):
                    nxt[j] = row[j] * beta[j] * inv
                for i in range(K):
                    acc = 0.0
                    ai = alpha[t - 1, i]
                    for j in range(K):
                        w = A[i, j] * nxt[j]
                        acc += w
                        x = ai * w
                        if x != 0.0:
                            for p in range(P):
                                xi_acc[c, i, j, p] += x * design[t, p]
                    beta[i] = acc


def tv_filter(startprob, transmats, tidx, emis, idx, bounds, chunks, alpha, log_c, loglik):
    r"""The scaled forward filter of every sequence: ``alpha[t]`` :math:`= p(z_t \mid
    x_{\le t})` and ``log_c[t]`` :math:`= \log c_t` per row (0 and ``-inf`` from the first
    impossible row of a sequence on), ``loglik[s]`` their sum."""
    run(_tv_filter, len(chunks) - 1, _seconds(bounds, len(startprob), 1), startprob,
        transmats, tidx, emis, idx, bounds, chunks, alpha, log_c, loglik)


@njit(nogil=True, cache=True)
def _tv_filter(startprob, transmats, tidx, emis, idx, bounds, chunks, alpha, log_c, loglik,
               ticket):
    """:func:`tv_filter` of the chunks this thread claims from ``ticket``."""
    while True:
        c = claim(ticket)
        if c >= len(chunks) - 1:
            return
        for s in range(chunks[c], chunks[c + 1]):
            loglik[s] = _forward_sequence(bounds[s], bounds[s + 1], startprob, transmats,
                                          tidx, emis, idx, alpha, log_c)


def tv_viterbi(log_start, log_transmats, tidx, log_emis, idx, bounds, chunks, backptr,
               logprob, states):
    """Most probable path of every sequence (``states``, -1 for an impossible sequence)
    and its ``logprob``; ties go to the lowest source state; ``backptr`` (N, K) is
    scratch. Max-normalised scores, as the fixed-matrix kernels."""
    run(_tv_viterbi, len(chunks) - 1, _seconds(bounds, len(log_start), 1), log_start,
        log_transmats, tidx, log_emis, idx, bounds, chunks, backptr, logprob, states)


@njit(nogil=True, cache=True)
def _tv_viterbi(log_start, log_transmats, tidx, log_emis, idx, bounds, chunks, backptr,
                logprob, states, ticket):
    """:func:`tv_viterbi` of the chunks this thread claims from ``ticket``."""
    K = log_start.shape[0]
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
                top = shift_max(delta)
                if top == -np.inf:
                    break
                total += top
                L = log_transmats[tidx[t]]
                row = log_emis[idx[t]]
                for j in range(K):
                    nxt[j] = -np.inf
                    backptr[t, j] = 0
                for i in range(K):
                    di = delta[i]
                    if di == -np.inf:
                        continue
                    for j in range(K):
                        v = di + L[i, j]
                        if v > nxt[j]:
                            nxt[j] = v
                            backptr[t, j] = i
                for j in range(K):
                    delta[j] = nxt[j] + row[j]
            logprob[s] = backtrack(delta, total, backptr, a, b, states)


def tv_sample_posterior(startprob, transmats, tidx, emis, idx, bounds, chunks, uniforms,
                        states):
    r"""Forward-filtering backward-sampling (Chib 1996): one path per sequence from
    :math:`p(z \mid x)`, :math:`z_{T-1} \sim \hat\alpha_{T-1}`,
    :math:`z_{t-1} \sim \hat\alpha_{t-1}(i) A_t(i, z_t)`. One U[0, 1) draw per row
    (``uniforms``), so the result does not depend on the thread count; impossible
    sequences get -1."""
    N, K = len(idx), len(startprob)
    run(_tv_sample_posterior, len(chunks) - 1, _seconds(bounds, K, 2), startprob, transmats,
        tidx, emis, idx, bounds, chunks, uniforms, states, np.empty((N, K)), np.empty(N))


@njit(nogil=True, cache=True)
def _tv_sample_posterior(startprob, transmats, tidx, emis, idx, bounds, chunks, uniforms,
                         states, alpha, log_c, ticket):
    """:func:`tv_sample_posterior` of the chunks this thread claims from ``ticket``."""
    K = startprob.shape[0]
    w = np.empty(K)
    while True:
        c = claim(ticket)
        if c >= len(chunks) - 1:
            return
        for s in range(chunks[c], chunks[c + 1]):
            a, b = bounds[s], bounds[s + 1]
            ll = _forward_sequence(a, b, startprob, transmats, tidx, emis, idx, alpha, log_c)
            if ll == -np.inf:
                for t in range(a, b):
                    states[t] = -1
                continue
            z = _draw(alpha[b - 1], uniforms[b - 1])
            states[b - 1] = z
            for t in range(b - 1, a, -1):
                A = transmats[tidx[t]]
                for i in range(K):
                    w[i] = alpha[t - 1, i] * A[i, z]
                z = _draw(w, uniforms[t - 1])
                states[t - 1] = z


@njit(cache=True)
def tv_sample_chain(startprob, transmats, tidx, uniforms, states):
    """A path of the chain: :math:`z_0 \\sim` ``startprob``, :math:`z_t \\sim A_t(z_{t-1},
    \\cdot)` with :math:`A_t` = ``transmats[tidx[t]]``; one uniform per step."""
    z = _draw(startprob, uniforms[0])
    states[0] = z
    for t in range(1, uniforms.shape[0]):
        z = _draw(transmats[tidx[t]][z], uniforms[t])
        states[t] = z

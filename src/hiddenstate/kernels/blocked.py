r"""Scaled forward-backward over per-token state sets (blocked emissions), whole sentences.

Each word ``w`` may only be emitted by the ``k`` states ``word_states[w]`` (Chiu & Rush
2020, sec. 3.1), so the forward recursion of a sentence :math:`x_0 \dots x_{T-1}` runs over
``k`` states per token, with :math:`s_{t,j}` = ``word_states[x_t, j]``, the ``k x k``
block :math:`P_t(i, j) = A[s_{t-1,i}, s_{t,j}]` of the transition matrix and
:math:`e_t(j) = p(x_t \mid s_{t,j})` (``emit[x_t, j]``). Scaled recursions (Rabiner 1989,
sec. V.A; the conventions of :mod:`.forward_backward`):

.. math::
    c_0\hat\alpha_0(j) = \pi_{s_{0,j}} e_0(j), \qquad
    c_t\hat\alpha_t(j) = e_t(j) \sum_i \hat\alpha_{t-1}(i) P_t(i, j), \qquad
    \textstyle\sum_j \hat\alpha_t(j) = 1,

    \hat\beta_{T-1} = 1, \qquad u_t(j) = e_t(j)\hat\beta_t(j) / c_t, \qquad
    \hat\beta_{t-1}(i) = \sum_j P_t(i, j) u_t(j),

:math:`\log p(x) = \sum_t \log c_t`, posteriors :math:`\gamma_t = \hat\alpha_t \circ
\hat\beta_t` and edge marginals :math:`\xi_t(i, j) = \hat\alpha_{t-1}(i) P_t(i, j) u_t(j)`.
Expected counts: ``start[s_{0,j}] += gamma_0(j)``, ``trans[s_{t-1,i}, s_{t,j}] +=
xi_t(i, j)`` (only the ``k x k`` blocks between consecutive tokens' states are touched),
``emit[x_t, j] += gamma_t(j)`` (per word, per its state slot). A step whose scale is below
the smallest normal float64 marks the sentence impossible: its log-likelihood is
:math:`-\infty` and it contributes no counts. Cost: about ``3 k^2`` multiply-adds per token
for the counts, ``k^2`` for the log-likelihood alone. Any state sets work (Brown blocks,
random subsets, one set of all states = a dense HMM).

**Block layout.** The transition matrix reaches the kernels as ``blocks (n_b, R, R)``, a
word's block id ``word_block (V,)`` and ``n_cb``: the block of a token pair
``(w', w)`` is ``blocks[word_block[w'] * n_cb + word_block[w]]``. For a partition into
aligned blocks of ``k`` states (Brown: ``word_states[w] = c k .. c k + k - 1``), ``R = k``,
``n_cb = C`` and block ``c' C + c`` is ``A[c' k : c' k + k, c k : c k + k]`` stored
contiguously, so :math:`P_t` is one contiguous ``k x k`` array (a strided block of a
``K x K`` matrix costs a cache miss per row: about 10x slower at K = 16,512). Otherwise
(random or overlapping sets) ``R = K``, ``n_cb = 1``, one block (``A`` itself) and
:math:`P_t(i, j)` = ``A[word_states[w', i], word_states[w, j]]``, gathered.

Sentences are independent (the state restarts from :math:`\pi` after ``<eos>``): sentence
``s`` is tokens ``bounds[s] .. bounds[s + 1] - 1``. They run in parallel by fixed
``chunks`` of sentences (``chunks[c] .. chunks[c + 1] - 1``, chosen from the lengths only);
chunk ``c`` owns its accumulators ``start_acc[c]`` etc. and the caller reduces them in
a fixed order, so results do not depend on thread timing. All arithmetic is float64.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..threads import run
from .chunks import claim
from .forward_backward import normalise_scale

#: single-thread nanoseconds per token and k**2 (measured order of magnitude: always far
#: above threads.PARALLEL_SECONDS at the sizes the language models run)
_COUNTS_NS, _LOGLIK_NS = 1.5, 0.5


@njit(cache=True)
def _forward_step(x, t, first, word_states, word_block, n_cb, startprob, blocks, emit, prev,
                  cur):
    """One scaled forward step of token ``x[t]`` into ``cur`` (from ``startprob`` when
    ``first``, else from the filter ``prev`` of ``x[t - 1]``); returns the scale
    :math:`c_t`, 0 when the step is impossible (``cur`` then left unnormalised)."""
    k = word_states.shape[1]
    w = x[t]
    if first:
        for j in range(k):
            cur[j] = startprob[word_states[w, j]] * emit[w, j]
    else:
        wp = x[t - 1]
        blk = blocks[word_block[wp] * n_cb + word_block[w]]
        part = blocks.shape[1] == k  # a partition: the block is P_t itself, no gather
        cols = word_states[w]
        for j in range(k):
            cur[j] = 0.0
        for i in range(k):
            ai = prev[i]
            if ai != 0.0:
                if part:
                    row = blk[i]
                    for j in range(k):
                        cur[j] += ai * row[j]
                else:
                    row = blk[word_states[wp, i]]
                    for j in range(k):
                        cur[j] += ai * row[cols[j]]
        for j in range(k):
            cur[j] *= emit[w, j]
    return normalise_scale(cur, k)


@njit(cache=True)
def _forward_sentence(x, a, b, word_states, word_block, n_cb, startprob, blocks, emit, alpha,
                      inv_c):
    """Scaled forward pass of tokens ``a .. b - 1`` into ``alpha[0 .. b - a - 1]`` and
    ``inv_c`` (``1 / c_t``); returns :math:`\\log p` (``-inf`` if impossible)."""
    total = 0.0
    for t in range(b - a):
        c = _forward_step(x, a + t, t == 0, word_states, word_block, n_cb, startprob, blocks,
                          emit, alpha[max(t - 1, 0)], alpha[t])
        if c == 0.0:
            return -np.inf
        inv_c[t] = 1.0 / c
        total += np.log(c)
    return total


@njit(cache=True)
def _backward_sentence(x, a, b, word_states, word_block, n_cb, blocks, emit, alpha, inv_c,
                       beta, nbeta, u, start_acc, trans_acc, emit_acc):
    """Scaled backward pass of tokens ``a .. b - 1`` (after ``_forward_sentence``), adding
    the sentence's expected counts to the accumulators (``trans_acc`` in the layout of
    ``blocks``)."""
    k = word_states.shape[1]
    part = blocks.shape[1] == k
    for j in range(k):
        beta[j] = 1.0
    for t in range(b - a - 1, 0, -1):
        w = x[a + t]
        wp = x[a + t - 1]
        q = word_block[wp] * n_cb + word_block[w]
        blk = blocks[q]
        blk_acc = trans_acc[q]
        cols = word_states[w]
        cur = alpha[t]
        prev = alpha[t - 1]
        for j in range(k):
            emit_acc[w, j] += cur[j] * beta[j]
            u[j] = emit[w, j] * beta[j] * inv_c[t]
        for i in range(k):
            ai = prev[i]
            s = 0.0
            if part:
                row = blk[i]
                acc = blk_acc[i]
                for j in range(k):
                    pu = row[j] * u[j]
                    acc[j] += ai * pu
                    s += pu
            else:
                row = blk[word_states[wp, i]]
                acc = blk_acc[word_states[wp, i]]
                for j in range(k):
                    pu = row[cols[j]] * u[j]
                    acc[cols[j]] += ai * pu
                    s += pu
            nbeta[i] = s
        for i in range(k):
            beta[i] = nbeta[i]
    w = x[a]
    for j in range(k):
        g = alpha[0, j] * beta[j]
        emit_acc[w, j] += g
        start_acc[word_states[w, j]] += g


def blocked_counts(x, bounds, chunks, word_states, word_block, n_cb, startprob, blocks, emit,
                   max_len, start_acc, trans_acc, emit_acc, loglik):
    """Expected counts and log-likelihoods of every sentence (see the module docstring).

    ``x (N,)`` token ids; ``bounds (S + 1,)`` sentence offsets; ``chunks (C + 1,)`` offsets
    into the sentences; ``word_states (V, k)``; ``startprob (K,)`` and ``emit (V, k)``
    probabilities; the transition matrix in the block layout of the module docstring
    (``blocks``, ``word_block``, ``n_cb``); ``max_len`` the longest sentence. Chunk ``c``
    adds its counts to ``start_acc[c] (K,)``, ``trans_acc[c]`` (the shape of ``blocks``)
    and ``emit_acc[c] (V, k)`` (not zeroed here); ``loglik (S,)`` receives
    :math:`\\log p` of each sentence.
    """
    k = word_states.shape[1]
    run(_blocked_counts, len(chunks) - 1, len(x) * k * k * _COUNTS_NS * 1e-9, x, bounds,
        chunks, word_states, word_block, n_cb, startprob, blocks, emit, max_len, start_acc,
        trans_acc, emit_acc, loglik)


@njit(nogil=True, cache=True)
def _blocked_counts(x, bounds, chunks, word_states, word_block, n_cb, startprob, blocks, emit,
                    max_len, start_acc, trans_acc, emit_acc, loglik, ticket):
    """:func:`blocked_counts` of the chunks this thread claims from ``ticket``."""
    k = word_states.shape[1]
    alpha = np.empty((max_len, k))
    inv_c = np.empty(max_len)
    beta = np.empty(k)
    nbeta = np.empty(k)
    u = np.empty(k)
    while True:
        c = claim(ticket)
        if c >= chunks.shape[0] - 1:
            return
        for s in range(chunks[c], chunks[c + 1]):
            a, b = bounds[s], bounds[s + 1]
            ll = _forward_sentence(x, a, b, word_states, word_block, n_cb, startprob, blocks,
                                   emit, alpha, inv_c)
            loglik[s] = ll
            if ll > -np.inf:
                _backward_sentence(x, a, b, word_states, word_block, n_cb, blocks, emit,
                                   alpha, inv_c, beta, nbeta, u, start_acc[c], trans_acc[c],
                                   emit_acc[c])


def blocked_loglik(x, bounds, chunks, word_states, word_block, n_cb, startprob, blocks, emit,
                   loglik):
    """:math:`\\log p` of every sentence into ``loglik (S,)`` (the forward pass alone,
    two ``k``-vectors of scratch per thread); arguments as :func:`blocked_counts`."""
    k = word_states.shape[1]
    run(_blocked_loglik, len(chunks) - 1, len(x) * k * k * _LOGLIK_NS * 1e-9, x, bounds,
        chunks, word_states, word_block, n_cb, startprob, blocks, emit, loglik)


@njit(nogil=True, cache=True)
def _blocked_loglik(x, bounds, chunks, word_states, word_block, n_cb, startprob, blocks, emit,
                    loglik, ticket):
    """:func:`blocked_loglik` of the chunks this thread claims from ``ticket``."""
    k = word_states.shape[1]
    alpha = np.empty((2, k))
    while True:
        c = claim(ticket)
        if c >= chunks.shape[0] - 1:
            return
        for s in range(chunks[c], chunks[c + 1]):
            a, b = bounds[s], bounds[s + 1]
            total = 0.0
            for t in range(a, b):
                r = (t - a) % 2
                cs = _forward_step(x, t, t == a, word_states, word_block, n_cb, startprob,
                                   blocks, emit, alpha[1 - r], alpha[r])
                if cs == 0.0:
                    total = -np.inf
                    break
                total += np.log(cs)
            loglik[s] = total


def gather_kept_blocks(blocks, keep, out):
    r"""The transition blocks of a state-dropout mask, rows renormalised (Chiu & Rush 2020,
    sec. 3.2: :math:`A^b_{ij} = A_{ij} b_j / \sum_{j'} A_{ij'} b_{j'}`).

    ``blocks (C * C, k, k)``: a partition's block layout (module docstring); ``keep (C, k')``:
    the kept positions of every cluster's states (sorted); ``out (C * C, k', k')`` receives
    the kept rows and columns, each row divided by its sum over all kept columns (a row whose
    kept entries are all zero stays zero)."""
    C, kp = keep.shape
    run(_gather_kept_blocks, C, C * C * kp * kp * 1e-9, blocks, keep, out)


@njit(nogil=True, cache=True)
def _gather_kept_blocks(blocks, keep, out, ticket):
    """:func:`gather_kept_blocks` of the block rows ``a`` this thread claims from ``ticket``."""
    C, kp = keep.shape
    while True:
        a = claim(ticket)
        if a >= C:
            return
        for i in range(kp):
            ii = keep[a, i]
            z = 0.0
            for b in range(C):
                src = blocks[a * C + b, ii]
                dst = out[a * C + b, i]
                for j in range(kp):
                    v = src[keep[b, j]]
                    dst[j] = v
                    z += v
            if z > 0.0:
                inv = 1.0 / z
                for b in range(C):
                    dst = out[a * C + b, i]
                    for j in range(kp):
                        dst[j] *= inv


def scatter_kept_blocks(acc, keep, full):
    """Add the chunk accumulators ``acc (n, C * C, k', k')`` of a dropout mask (summed in
    chunk order) to the kept entries of ``full (C * C, k, k)`` and zero ``acc`` (ready for
    the next mask); ``keep`` as :func:`gather_kept_blocks`."""
    C, kp = keep.shape
    run(_scatter_kept_blocks, C, acc.shape[0] * C * C * kp * kp * 1e-9, acc, keep, full)


@njit(nogil=True, cache=True)
def _scatter_kept_blocks(acc, keep, full, ticket):
    """:func:`scatter_kept_blocks` of the block rows ``a`` this thread claims from
    ``ticket``."""
    n = acc.shape[0]
    C, kp = keep.shape
    while True:
        a = claim(ticket)
        if a >= C:
            return
        for b in range(C):
            q = a * C + b
            for i in range(kp):
                row = full[q, keep[a, i]]
                for j in range(kp):
                    s = 0.0
                    for c in range(n):
                        s += acc[c, q, i, j]
                        acc[c, q, i, j] = 0.0
                    row[keep[b, j]] += s

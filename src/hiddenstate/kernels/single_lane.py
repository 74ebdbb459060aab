r"""One lane alone: the lockstep recursions for a block whose other 7 lanes are empty.

A block of 8 lanes (:mod:`.forward_backward`, :mod:`.viterbi`) costs the same with one
sequence as with eight: one sequence of at most 16,384 steps (the usual single-sequence
fit, score or decode) would pay for 8. These functions run the recursion of that one lane
with scalars, vectorised over the states instead, and perform exactly the floating-point
operations of its lane in the 8-lane kernels, in the same order (``fma`` is the one-lane
:func:`~.simd.vfma`), so that their results are bit for bit those of the lockstep kernels;
the tests compare the two. The notation is that of :mod:`.forward_backward` and
:mod:`.viterbi`; ``transmat`` and ``transmat_t`` are both passed so that every inner loop
reads a contiguous row.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .simd import fma

#: blocks with one lane run it alone; False: in lockstep, as any block (the tests compare)
ENABLED = True
TINY = 1e-280  # fold the running product of scales into the log before it underflows
HUGE = 1e280
MIN_NORMAL = 2.2250738585072014e-308  # a scale below this counts as zero
_FEW = 8  # up to this many states a sum over states stays in a register


@njit(cache=True)
def alone(l0, first, end):
    """Whether plan entry ``l0`` is the only lane of its block with rows
    (``first[l] .. end[l] - 1``)."""
    for b in range(1, 8):
        if end[l0 + b] > first[l0 + b]:
            return False
    return True


@njit(cache=True)
def forward_lane(l, first, lo, end, init, inits, from_state, transmat_t, transmat, emis, idx,
                 alpha, base, inv_c, snap_lo, snap_end, loglik, a, v):
    r"""``_forward_block`` of plan entry ``l`` alone (``base``: its ``alpha_base``;
    ``a``, ``v``: scratch of ``K``). Writes ``loglik[l]`` and, if ``alpha`` / ``snap_lo``
    have rows, its rows and snapshots."""
    K = transmat_t.shape[0]
    keep_alpha = alpha.shape[0] > 0
    keep_snap = snap_lo.shape[0] > 0
    for j in range(K):
        a[j] = inits[init[l], j]
    prior = not from_state[l]
    prod = 1.0
    logp = 0.0
    for t in range(end[l] - first[l]):
        r = first[l] + t
        if K <= _FEW:  # each sum over i in a register: memory would add its latency
            for j in range(K):
                acc = 0.0
                for i in range(K):
                    acc = fma(a[i], transmat_t[j, i], acc)
                v[j] = acc
        else:  # vectorised over j (the same sums, in the same order)
            for j in range(K):
                v[j] = 0.0
            for i in range(K):
                ai = a[i]
                for j in range(K):
                    v[j] = fma(ai, transmat[i, j], v[j])
        if t == 0 and prior:
            for j in range(K):
                v[j] = a[j]
        e = idx[r]
        s = 0.0
        for j in range(K):
            x = v[j] * emis[e, j]
            v[j] = x
            s = s + x
        inv = 1.0 / s if s > MIN_NORMAL else 0.0
        for j in range(K):
            a[j] = v[j] * inv
        if r >= lo[l]:
            scale = s if inv > 0.0 else 0.0
            p = prod * scale
            if p < TINY or p > HUGE:
                logp += np.log(prod) + np.log(scale)
                prod = 1.0
            else:
                prod = p
            if keep_alpha:
                q = base + r - lo[l]
                inv_c[q] = inv
                for j in range(K):
                    alpha[q, j] = a[j]
        if keep_snap:
            if r == lo[l] - 1:
                for j in range(K):
                    snap_lo[l, j] = a[j]
            if r == end[l] - 1:
                for j in range(K):
                    snap_end[l, j] = a[j]
    loglik[l] = logp + np.log(prod)


@njit(cache=True)
def backward_lane(l, lo, stop, end, transmat, transmat_t, emis, idx, alpha, base, inv_c,
                  binits, from_state, stats, by_idx, post_acc, post_dense, snap_g_end,
                  snap_g_lo, snap_b_lo, beta, u, a_cur, st, tr, f):
    r"""``_backward_block`` of plan entry ``l`` alone: its :math:`\hat\beta` recursion from
    row ``stop - 1`` down to ``lo``, the posteriors (times ``f``, the lane's weight), and
    with ``stats`` its start and transition sums in ``st`` (K,) and ``tr`` (K, K)
    (``beta``, ``u``, ``a_cur``: scratch of ``K``)."""
    K = transmat.shape[0]
    for j in range(K):
        beta[j] = 1.0
        st[j] = 0.0
    for i in range(K):
        for j in range(K):
            tr[i, j] = 0.0
    n = stop[l] - lo[l]
    for j in range(K):
        a_cur[j] = alpha[base + max(n - 1, 0), j]
    for t in range(n - 1, -1, -1):
        r = lo[l] + t
        if r == stop[l] - 1 and from_state[l]:
            for j in range(K):
                beta[j] = binits[l, j]
        if not stats:
            if r == end[l]:
                _normalised(a_cur, beta, snap_g_end[l])
            if t == 0:
                _normalised(a_cur, beta, snap_g_lo[l])
                for j in range(K):
                    snap_b_lo[l, j] = beta[j]
        elif r < end[l]:
            if by_idx:
                pr = idx[r]
                for j in range(K):
                    post_acc[pr, j] += a_cur[j] * beta[j] * f
            else:
                for j in range(K):
                    post_dense[r, j] = a_cur[j] * beta[j] * f
        if t == 0:
            if stats:
                for j in range(K):
                    st[j] = (a_cur[j] * beta[j]) * 1.0
            break
        scale = inv_c[base + t] * 1.0
        e = idx[r]
        for j in range(K):
            u[j] = (emis[e, j] * beta[j]) * scale
        prev = base + t - 1
        if stats:
            for i in range(K):
                ai = alpha[prev, i]
                for j in range(K):
                    tr[i, j] = fma(ai, u[j], tr[i, j])
        if K <= _FEW:
            for i in range(K):
                acc = 0.0
                for j in range(K):
                    acc = fma(u[j], transmat[i, j], acc)
                beta[i] = acc
        else:
            for i in range(K):
                beta[i] = 0.0
            for j in range(K):
                uj = u[j]
                for i in range(K):
                    beta[i] = fma(uj, transmat_t[j, i], beta[i])
        for i in range(K):
            a_cur[i] = alpha[prev, i]
        if not stats and r == end[l] and not from_state[l]:
            s = 0.0
            for j in range(K):
                s += a_cur[j] * beta[j]
            f = 1.0 / s if s > 0.0 else 0.0
            for j in range(K):
                beta[j] *= f


@njit(cache=True)
def _normalised(x, y, out):
    """``out = x * y`` scaled to sum to 1 (zeros stay zeros), as ``_normalised_product``."""
    K = x.shape[0]
    s = 0.0
    for j in range(K):
        out[j] = x[j] * y[j]
        s += out[j]
    if s > 0.0:
        for j in range(K):
            out[j] /= s


@njit(cache=True)
def add_lane_statistics(l, counts_start, st, tr, start_acc, trans_acc, f):
    """``_add_lane_statistics`` of a block whose only lane is ``l`` (weight ``f``)."""
    K = start_acc.shape[0]
    if counts_start[l]:
        for j in range(K):
            start_acc[j] += st[j] * f
    for i in range(K):
        for j in range(K):
            trans_acc[i, j] += tr[i, j] * f


@njit(cache=True)
def viterbi_lane(l, first, lo, end, init, inits, from_state, log_transmat_t, log_transmat,
                 log_emis, idx, backptr, logprob, snap_lo, snap_end, dn, d, arg):
    r"""The max-product forward pass of plan entry ``l`` alone (``_viterbi_forward``'s
    lane; ``dn``, ``d``: float scratch, ``arg``: int scratch of ``K``). Ties go to the lowest
    state, as in ``_maxplus``."""
    K = log_transmat_t.shape[0]
    for j in range(K):
        dn[j] = inits[init[l], j]
    prior = not from_state[l]
    logprob[l] = 0.0
    for t in range(end[l] - first[l]):
        r = first[l] + t
        if K <= _FEW:  # best and its state in registers
            for j in range(K):
                best = dn[0] + log_transmat_t[j, 0]
                at = 0
                for i in range(1, K):
                    y = dn[i] + log_transmat_t[j, i]
                    if y > best:
                        best = y
                        at = i
                d[j] = best
                arg[j] = at
        else:
            for j in range(K):
                d[j] = dn[0] + log_transmat_t[j, 0]
                arg[j] = 0
            for i in range(1, K):
                di = dn[i]
                for j in range(K):
                    y = di + log_transmat[i, j]
                    if y > d[j]:
                        d[j] = y
                        arg[j] = i
        if t == 0 and prior:
            for j in range(K):
                d[j] = dn[j]
        e = idx[r]
        m = -np.inf
        for j in range(K):
            x = d[j] + log_emis[e, j]
            d[j] = x
            if x > m:
                m = x
        shift = m if m > -np.inf else 0.0
        for j in range(K):
            dn[j] = d[j] - shift
        if r >= lo[l]:
            logprob[l] += m
            if t > 0 or not prior:
                for j in range(K):
                    backptr[r, j] = arg[j]
        if r == lo[l] - 1:
            for j in range(K):
                snap_lo[l, j] = dn[j]
        if r == end[l] - 1:
            for j in range(K):
                snap_end[l, j] = dn[j]


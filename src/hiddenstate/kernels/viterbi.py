r"""Viterbi decoding in log space (max-product; Rabiner 1989, sec. III.B), 8 lanes in lockstep.

With :math:`\tilde\delta` the max-normalised scores (their maximum is 0 at every step):

.. math::
    \delta_t(j) = \max_i\,[\tilde\delta_{t-1}(i) + \log A_{ij}] + \log e_t(j), \qquad
    \delta_0(j) = \log p_j + \log e_0(j),

    m_t = \max_j \delta_t(j), \qquad \tilde\delta_t = \delta_t - m_t, \qquad
    \log p(x, z^*) = \textstyle\sum_t m_t .

Subtracting :math:`m_t` changes no argmax; it makes the state of the recursion a function of
the recent past only, which is what lets :mod:`hiddenstate.inference` decode a long sequence
as independent segments and check, bit for bit, that each segment's warm-up reached the same
:math:`\tilde\delta` as the segment before it. Back-pointers are stored in the narrowest
unsigned type that holds ``K``, one row per time step; ties go to the lowest state index.
The lane layout, plans and chunks are those of :mod:`.forward_backward`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..threads import run
from . import single_lane
from .chunks import claim
from .forward_backward import _block_length, _lane_rows, _steady_steps, chunk_seconds
from .simd import LANES, aligned_empty, vadd, vgather, vload, vsplat, vstore, vsub, vwhere_gt
from .single_lane import alone, viterbi_lane

#: single-thread nanoseconds per row: the forward pass ``a + b * K**2`` (as
#: :data:`~.forward_backward.FORWARD_NS`), the backtrack (measured)
VITERBI_NS = (12.0, 0.09)
_BACKTRACK_NS = 2.0


@njit(cache=True, inline="always")
def _maxplus(x, m, out, arg):
    """``out[j] = max_i (x[i] + m[j, i])`` and ``arg[j]`` = the first maximiser, every lane.

    Four rows of ``m`` at a time, so that four independent compare-select chains overlap.
    """
    K = m.shape[0]
    j = 0
    while j + 4 <= K:
        x0 = vload(x, 0)
        b0 = vadd(x0, vsplat(m[j, 0]))
        b1 = vadd(x0, vsplat(m[j + 1, 0]))
        b2 = vadd(x0, vsplat(m[j + 2, 0]))
        b3 = vadd(x0, vsplat(m[j + 3, 0]))
        a0 = a1 = a2 = a3 = vsplat(0.0)
        for i in range(1, K):
            xi = vload(x, i * LANES)
            fi = vsplat(i)
            y0 = vadd(xi, vsplat(m[j, i]))
            y1 = vadd(xi, vsplat(m[j + 1, i]))
            y2 = vadd(xi, vsplat(m[j + 2, i]))
            y3 = vadd(xi, vsplat(m[j + 3, i]))
            a0 = vwhere_gt(y0, b0, fi, a0)
            a1 = vwhere_gt(y1, b1, fi, a1)
            a2 = vwhere_gt(y2, b2, fi, a2)
            a3 = vwhere_gt(y3, b3, fi, a3)
            b0 = vwhere_gt(y0, b0, y0, b0)
            b1 = vwhere_gt(y1, b1, y1, b1)
            b2 = vwhere_gt(y2, b2, y2, b2)
            b3 = vwhere_gt(y3, b3, y3, b3)
        vstore(out, j * LANES, b0)
        vstore(out, (j + 1) * LANES, b1)
        vstore(out, (j + 2) * LANES, b2)
        vstore(out, (j + 3) * LANES, b3)
        vstore(arg, j * LANES, a0)
        vstore(arg, (j + 1) * LANES, a1)
        vstore(arg, (j + 2) * LANES, a2)
        vstore(arg, (j + 3) * LANES, a3)
        j += 4
    if j + 2 <= K:  # a pair: two chains overlap
        x0 = vload(x, 0)
        b0 = vadd(x0, vsplat(m[j, 0]))
        b1 = vadd(x0, vsplat(m[j + 1, 0]))
        a0 = a1 = vsplat(0.0)
        for i in range(1, K):
            xi = vload(x, i * LANES)
            fi = vsplat(i)
            y0 = vadd(xi, vsplat(m[j, i]))
            y1 = vadd(xi, vsplat(m[j + 1, i]))
            a0 = vwhere_gt(y0, b0, fi, a0)
            a1 = vwhere_gt(y1, b1, fi, a1)
            b0 = vwhere_gt(y0, b0, y0, b0)
            b1 = vwhere_gt(y1, b1, y1, b1)
        vstore(out, j * LANES, b0)
        vstore(out, (j + 1) * LANES, b1)
        vstore(arg, j * LANES, a0)
        vstore(arg, (j + 1) * LANES, a1)
        j += 2
    for jj in range(j, K):
        best = vadd(vload(x, 0), vsplat(m[jj, 0]))
        a = vsplat(0.0)
        for i in range(1, K):
            y = vadd(vload(x, i * LANES), vsplat(m[jj, i]))
            a = vwhere_gt(y, best, vsplat(i), a)
            best = vwhere_gt(y, best, y, best)
        vstore(out, jj * LANES, best)
        vstore(arg, jj * LANES, a)


def viterbi_forward(inits, from_state, log_transmat_t, log_emis, idx, first, lo, end, init,
                    chunks, backptr, logprob, snap_lo, snap_end):
    r"""Max-product forward pass of every lane; back-pointers for the rows ``>= lo``.

    Lane ``l`` starts at row ``first[l]`` from ``inits[init[l]]``: a log prior
    (:math:`\delta = \log p + \log e`) or, if ``from_state[l]``, the normalised scores
    :math:`\tilde\delta` of the row before (a regular step). ``logprob[l]`` receives
    :math:`\sum m_t` over the rows ``>= lo``; ``snap_lo[l]`` and ``snap_end[l]`` the
    normalised scores at rows ``lo - 1`` and ``end - 1``.
    """
    run(_viterbi_forward, len(chunks) - 1,
        chunk_seconds(chunks, first, end, log_transmat_t.shape[0], VITERBI_NS), inits,
        from_state, log_transmat_t, log_emis, idx, first, lo, end, init, chunks, backptr,
        logprob, snap_lo, snap_end, single_lane.ENABLED)


@njit(nogil=True, cache=True)
def _viterbi_forward(inits, from_state, log_transmat_t, log_emis, idx, first, lo, end, init,
                     chunks, backptr, logprob, snap_lo, snap_end, single, ticket):
    """:func:`viterbi_forward` of the chunks this thread claims from ``ticket``."""
    K = log_transmat_t.shape[0]
    log_transmat = np.ascontiguousarray(log_transmat_t.T)
    dn1 = np.empty(K)
    d1 = np.empty(K)
    arg1 = np.empty(K, dtype=np.int64)
    neg_inf = vsplat(-np.inf)
    zero = vsplat(0.0)
    half = vsplat(0.5)
    dn = aligned_empty(K * LANES)
    d = aligned_empty(K * LANES)
    arg = aligned_empty(K * LANES)
    rows = np.empty(LANES, dtype=np.int64)
    offs = np.empty(LANES, dtype=np.int64)
    active = aligned_empty(LANES)
    mode = aligned_empty(LANES)
    mx = aligned_empty(LANES)
    while True:
        c = claim(ticket)
        if c >= chunks.shape[0] - 1:
            return
        for l0 in range(chunks[c] * LANES, chunks[c + 1] * LANES, LANES):
            if single and alone(l0, first, end):
                viterbi_lane(l0, first, lo, end, init, inits, from_state, log_transmat_t,
                             log_transmat, log_emis, idx, backptr, logprob, snap_lo, snap_end,
                             dn1, d1, arg1)
                for b in range(1, LANES):
                    logprob[l0 + b] = 0.0
                continue
            for b in range(LANES):
                offs[b] = init[l0 + b] * K
                mode[b] = 1.0 if from_state[l0 + b] else 0.0
                logprob[l0 + b] = 0.0
            for j in range(K):
                vstore(dn, j * LANES, vgather(inits, offs, j))
            state_lanes = vload(mode, 0)
            fast_lo, fast_hi = _steady_steps(l0, first, lo, end)
            total = zero
            for t in range(_block_length(l0, first, end)):
                if fast_lo <= t < fast_hi:  # every lane active, counted, no snapshot
                    if t == fast_lo:  # the running log-probabilities as one vector
                        for b in range(LANES):
                            mx[b] = logprob[l0 + b]
                        total = vload(mx, 0)
                    for b in range(LANES):
                        offs[b] = idx[first[l0 + b] + t] * K
                    _maxplus(dn, log_transmat_t, d, arg)
                    m = neg_inf
                    for j in range(K):
                        x = vadd(vload(d, j * LANES), vgather(log_emis, offs, j))
                        vstore(d, j * LANES, x)
                        m = vwhere_gt(x, m, x, m)
                    shift = vwhere_gt(m, neg_inf, m, zero)
                    for j in range(K):
                        vstore(dn, j * LANES, vsub(vload(d, j * LANES), shift))
                    total = vadd(total, m)
                    for b in range(LANES):
                        r = first[l0 + b] + t
                        for j in range(K):
                            backptr[r, j] = int(arg[j * LANES + b])
                    if t == fast_hi - 1:
                        vstore(mx, 0, total)
                        for b in range(LANES):
                            logprob[l0 + b] = mx[b]
                    continue
                _lane_rows(l0, first, end, t, idx, K, rows, offs, active)
                _maxplus(dn, log_transmat_t, d, arg)
                m = neg_inf
                for j in range(K):
                    best = vload(d, j * LANES)
                    if t == 0:  # prior lanes: log p_j instead of the max over i
                        best = vwhere_gt(state_lanes, half, best, vload(dn, j * LANES))
                    x = vadd(best, vgather(log_emis, offs, j))
                    vstore(d, j * LANES, x)
                    m = vwhere_gt(x, m, x, m)
                shift = vwhere_gt(m, neg_inf, m, zero)  # an impossible lane stays at -inf
                for j in range(K):
                    vstore(dn, j * LANES, vsub(vload(d, j * LANES), shift))
                vstore(mx, 0, m)
                for b in range(LANES):
                    r = rows[b]
                    if active[b] == 0.0:
                        continue
                    if r >= lo[l0 + b]:
                        logprob[l0 + b] += mx[b]
                        if t > 0 or mode[b] > 0.0:
                            for j in range(K):
                                backptr[r, j] = int(arg[j * LANES + b])
                    if r == lo[l0 + b] - 1:
                        for j in range(K):
                            snap_lo[l0 + b, j] = dn[j * LANES + b]
                    if r == end[l0 + b] - 1:
                        for j in range(K):
                            snap_end[l0 + b, j] = dn[j * LANES + b]


def viterbi_backtrack(bounds, chunks, last_state, backptr, states):
    """Follow the back-pointers of each sequence from ``last_state`` (``-1``: impossible)."""
    run(_viterbi_backtrack, len(chunks) - 1, bounds[-1] * _BACKTRACK_NS * 1e-9, bounds,
        chunks, last_state, backptr, states)


@njit(nogil=True, cache=True)
def _viterbi_backtrack(bounds, chunks, last_state, backptr, states, ticket):
    """:func:`viterbi_backtrack` of the chunks this thread claims from ``ticket``."""
    while True:
        c = claim(ticket)
        if c >= chunks.shape[0] - 1:
            return
        for s in range(chunks[c], chunks[c + 1]):
            lo = bounds[s]
            hi = bounds[s + 1]
            z = last_state[s]
            if z < 0:
                for t in range(lo, hi):
                    states[t] = -1
                continue
            states[hi - 1] = z
            for t in range(hi - 1, lo, -1):
                z = backptr[t, z]
                states[t - 1] = z

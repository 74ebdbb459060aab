r"""Scaled forward-backward, forward-only scoring and sampling, 8 lanes in lockstep.

Scaled recursions (Rabiner 1989, sec. V.A; Bishop PRML eq. 13.59-13.62), with
:math:`e_t(j)` the emission probability of observation *t* in state *j* and :math:`p` the
lane's prior (``startprob`` at the start of a sequence):

.. math::
    c_t\,\hat\alpha_t(j) = e_t(j) \sum_i \hat\alpha_{t-1}(i) A_{ij}, \qquad
    c_0\,\hat\alpha_0(j) = p_j\, e_0(j), \qquad \sum_j \hat\alpha_t(j) = 1,

    \hat\beta_{T-1} = 1, \qquad
    \hat\beta_{t-1}(i) = \sum_j A_{ij}\, u_t(j), \qquad u_t(j) = e_t(j)\,\hat\beta_t(j) / c_t,

    \log p(x_{0:T}) = \sum_t \log c_t, \qquad \gamma_t = \hat\alpha_t \circ \hat\beta_t, \qquad
    \textstyle\sum_t \xi_t = A \circ \sum_{t \ge 1} \hat\alpha_{t-1} u_t^\top .

A step whose scale :math:`c_t` is zero (or below the smallest normal float64) marks the
sequence impossible: from then on :math:`1/c_t` is taken as 0, so every :math:`\hat\alpha`,
:math:`\hat\beta`, :math:`\gamma` and :math:`\xi` of that sequence is exactly 0 (it
contributes no statistics) and its log-likelihood is :math:`-\infty`.

**Lanes.** The kernels run blocks of :data:`LANES` = 8 *lanes* in lockstep: lane ``b`` of
block ``k`` is plan entry ``l = 8k + b`` and processes rows ``first[l] .. end[l] - 1``; its
state is one ``f64x8`` value per hidden state (layout ``(K, 8)``, the lane index innermost),
so every step is ``K**2`` vector multiply-adds with no dependency between lanes. A lane that
has finished (or a padding lane, ``first == end``) keeps computing on its last row with a
lane mask of 0: its :math:`u` is 0, its :math:`\hat\beta` stays exactly 1 and nothing it
computes is stored or counted, so each lane's numbers are bitwise independent of the other
lanes of its block. Blocks are grouped in fixed ``chunks`` that run in parallel; each chunk
owns its accumulators, reduced in a fixed order by the caller.

**Segments.** A lane can also be one segment of a long sequence (see
:mod:`hiddenstate.inference`). Its forward pass then either starts early (a *warm-up*)
from a flat prior, or on its first row from the exact filter of the segment before, and
counts only the scales of its own rows; its backward pass (``backward_pass``) either starts
late, from :math:`\hat\beta = 1` rescaled on reaching the segment so that
:math:`\sum_j \hat\alpha(j)\hat\beta(j) = 1`, or from the exact :math:`\hat\beta` of the
segment after. Snapshots of the filter and of the
posterior at the segment boundaries let the caller check that the warm-ups forgot their
start.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from ..threads import run
from . import single_lane
from .chunks import claim
from .simd import (
    LANES,
    aligned_empty,
    vadd,
    vdiv,
    vfma,
    vgather,
    vget,
    vload,
    vmul,
    vsplat,
    vstore,
    vsub,
    vwhere_gt,
)
from .single_lane import (
    HUGE,
    MIN_NORMAL,
    TINY,
    add_lane_statistics,
    alone,
    backward_lane,
    forward_lane,
)

_TINY, _HUGE, _MIN_NORMAL = TINY, HUGE, MIN_NORMAL
#: single-thread nanoseconds per row of each lockstep kernel, ``a + b * K**2`` (measured
#: with thread CPU time, 8 full lanes, K = 2..64): what :func:`hiddenstate.threads.run` weighs
FORWARD_BACKWARD_NS = (35.0, 0.21)
FORWARD_NS = (10.0, 0.035)
BACKWARD_NS = (20.0, 0.15)
SAMPLE_NS = (20.0, 0.05)


def recursion_seconds(first, end, K: int, ns: tuple[float, float]) -> float:
    """Estimated single-thread seconds of a lockstep kernel over the rows
    ``first[l] .. end[l] - 1`` of every lane ``l`` with ``K`` states (``ns``: its cost)."""
    rows = int((end - first).sum())
    return rows * (ns[0] + ns[1] * K * K) * 1e-9


def chunk_seconds(chunks, first, end, K: int, ns: tuple[float, float]) -> float:
    """:func:`recursion_seconds` for :func:`~hiddenstate.threads.run`, which reads it only
    when there are several chunks (``chunks``: their bounds): 0 for one chunk."""
    return recursion_seconds(first, end, K, ns) if len(chunks) > 2 else 0.0


@njit(cache=True)
def normalise_scale(cur, n):
    """Scale ``cur[:n]`` to sum to one and return the sum :math:`c_t` (a scaled recursion's
    normaliser); a sum below the smallest normal float counts as zero: 0 is returned and
    ``cur`` is left as it is (the step is impossible)."""
    c = 0.0
    for j in range(n):
        c += cur[j]
    if not c >= _MIN_NORMAL:
        return 0.0
    inv = 1.0 / c
    for j in range(n):
        cur[j] *= inv
    return c


@njit(cache=True)
def _block_length(l0, first, end):
    """Number of lockstep steps of the block starting at plan entry ``l0``."""
    n = 0
    for b in range(LANES):
        n = max(n, end[l0 + b] - first[l0 + b])
    return n


@njit(cache=True)
def _lane_rows(l0, first, end, t, idx, n_cols, rows, offs, active):
    """Row of step ``t`` of every lane, the flat offset of its emission row and its mask.

    A lane past its end is parked on its last row (row 0 for a padding lane) with mask 0.
    """
    for b in range(LANES):
        r = first[l0 + b] + t
        stop = end[l0 + b]
        if r < stop:
            active[b] = 1.0
        else:
            active[b] = 0.0
            r = max(stop - 1, 0)
        rows[b] = r
        offs[b] = idx[r] * n_cols


@njit(cache=True, inline="always")
def _matvec(x, m, out):
    """``out[j] = sum_i m[j, i] * x[i]`` for every lane (``x``, ``out``: layout ``(K, 8)``).

    Four rows of ``m`` at a time, so that four independent multiply-add chains overlap.
    """
    K = m.shape[0]
    zero = vsplat(0.0)
    j = 0
    while j + 4 <= K:
        acc0, acc1, acc2, acc3 = zero, zero, zero, zero
        for i in range(K):
            xi = vload(x, i * LANES)
            acc0 = vfma(xi, vsplat(m[j, i]), acc0)
            acc1 = vfma(xi, vsplat(m[j + 1, i]), acc1)
            acc2 = vfma(xi, vsplat(m[j + 2, i]), acc2)
            acc3 = vfma(xi, vsplat(m[j + 3, i]), acc3)
        vstore(out, j * LANES, acc0)
        vstore(out, (j + 1) * LANES, acc1)
        vstore(out, (j + 2) * LANES, acc2)
        vstore(out, (j + 3) * LANES, acc3)
        j += 4
    if j + 2 <= K:  # a pair: two chains overlap
        acc0, acc1 = zero, zero
        for i in range(K):
            xi = vload(x, i * LANES)
            acc0 = vfma(xi, vsplat(m[j, i]), acc0)
            acc1 = vfma(xi, vsplat(m[j + 1, i]), acc1)
        vstore(out, j * LANES, acc0)
        vstore(out, (j + 1) * LANES, acc1)
        j += 2
    for jj in range(j, K):
        acc = zero
        for i in range(K):
            acc = vfma(vload(x, i * LANES), vsplat(m[jj, i]), acc)
        vstore(out, jj * LANES, acc)


_ForwardWork = namedtuple("_ForwardWork",
                          "a v rows offs active s inv prod logp from_state a1 v1")


@njit(cache=True)
def _forward_work(K):
    """Scratch arrays of ``_forward_block`` and ``forward_lane`` (one set per thread)."""
    f64 = aligned_empty
    return _ForwardWork(f64(K * LANES), f64(K * LANES), np.empty(LANES, dtype=np.int64),
                        np.empty(LANES, dtype=np.int64), f64(LANES), f64(LANES), f64(LANES),
                        f64(LANES), f64(LANES), f64(LANES), np.empty(K), np.empty(K))


@njit(cache=True)
def _steady_steps(l0, first, lo, end):
    """The steps ``t`` of the block at plan entry ``l0`` at which every lane is active on a
    row ``first + t`` past its warm-up (``>= lo``) and before its last: ``[t_lo, t_hi)``,
    ``t_lo >= 1`` (empty if a lane has no such row, a padding lane for one)."""
    t_lo, t_hi = 1, end[l0] - first[l0] - 1
    for b in range(LANES):
        t_lo = max(t_lo, lo[l0 + b] - first[l0 + b])
        t_hi = min(t_hi, end[l0 + b] - first[l0 + b] - 1)
    return t_lo, t_hi


@njit(cache=True, inline="always")
def _forward_steady_step(l0, t, first, lo, transmat_t, emis, idx, alpha, alpha_base, inv_c,
                         keep_alpha, w):
    """One step of ``_forward_block`` in its steady part (``_steady_steps``): the same
    arithmetic without the per-lane bookkeeping; the running products of scales are
    multiplied as one vector unless a lane's leaves ``[_TINY, _HUGE]`` (then lane by lane,
    as the general step does)."""
    K = transmat_t.shape[0]
    a, v = w.a, w.v
    zero = vsplat(0.0)
    for b in range(LANES):
        w.offs[b] = idx[first[l0 + b] + t] * K
    _matvec(a, transmat_t, v)
    s = zero
    for j in range(K):
        x = vmul(vload(v, j * LANES), vgather(emis, w.offs, j))
        vstore(v, j * LANES, x)
        s = vadd(s, x)
    inv = vwhere_gt(s, vsplat(_MIN_NORMAL), vdiv(vsplat(1.0), s), zero)
    for j in range(K):
        vstore(a, j * LANES, vmul(vload(v, j * LANES), inv))
    vstore(w.inv, 0, inv)
    prod = vmul(vload(w.prod, 0), vwhere_gt(inv, zero, s, zero))
    steady = True
    for b in range(LANES):
        p = vget(prod, b)
        if p < _TINY or p > _HUGE:
            steady = False
    if steady:
        vstore(w.prod, 0, prod)
    else:
        vstore(w.s, 0, s)
        for b in range(LANES):
            scale = w.s[b] if w.inv[b] > 0.0 else 0.0
            p = w.prod[b] * scale
            if p < _TINY or p > _HUGE:
                w.logp[b] += np.log(w.prod[b]) + np.log(scale)
                w.prod[b] = 1.0
            else:
                w.prod[b] = p
    if keep_alpha:
        for b in range(LANES):
            q = alpha_base[b] + first[l0 + b] + t - lo[l0 + b]
            inv_c[q] = w.inv[b]
            for j in range(K):
                alpha[q, j] = a[j * LANES + b]


@njit(cache=True)
def _forward_block(l0, first, lo, end, init, inits, from_state, transmat_t, emis, idx,
                   alpha, alpha_base, inv_c, snap_lo, snap_end, loglik, w):
    r"""Scaled forward recursion of the 8 lanes of the block that starts at plan entry ``l0``.

    Lane ``b`` (plan entry ``l = l0 + b``) starts at row ``first[l]`` from the vector
    ``inits[init[l]]``: a prior :math:`p` (:math:`c_0\hat\alpha_0 = p \circ e_0`) or, if
    ``from_state[l]``, the normalised filter of the row before (then the first step is a
    regular one). ``loglik[l]`` receives :math:`\sum \log c_t` over the rows ``>= lo[l]``.
    If ``alpha`` has rows, :math:`\hat\alpha_t` and :math:`1/c_t` of each row ``r >= lo[l]``
    go to ``alpha[q]`` and ``inv_c[q]``, ``q = alpha_base[b] + r - lo[l]``. If ``snap_lo`` has
    rows, the filter at rows ``lo - 1`` (the end of a warm-up) and ``end - 1`` goes to
    ``snap_lo[l]`` and ``snap_end[l]``. ``w`` is the chunk's ``_forward_work``.
    """
    K = transmat_t.shape[0]
    a, v = w.a, w.v
    keep_alpha = alpha.shape[0] > 0
    keep_snap = snap_lo.shape[0] > 0
    for b in range(LANES):
        w.offs[b] = init[l0 + b] * K
        w.from_state[b] = 1.0 if from_state[l0 + b] else 0.0
        w.prod[b] = 1.0
        w.logp[b] = 0.0
    for j in range(K):
        vstore(a, j * LANES, vgather(inits, w.offs, j))
    state_lanes = vload(w.from_state, 0)
    half = vsplat(0.5)
    tiny = vsplat(_MIN_NORMAL)
    zero = vsplat(0.0)
    one = vsplat(1.0)
    fast_lo, fast_hi = _steady_steps(l0, first, lo, end)
    for t in range(_block_length(l0, first, end)):
        if fast_lo <= t < fast_hi:  # every lane active, counted, no snapshot
            _forward_steady_step(l0, t, first, lo, transmat_t, emis, idx, alpha, alpha_base,
                                 inv_c, keep_alpha, w)
            continue
        _lane_rows(l0, first, end, t, idx, K, w.rows, w.offs, w.active)
        _matvec(a, transmat_t, v)
        s = zero
        for j in range(K):
            x = vload(v, j * LANES)
            if t == 0:  # prior lanes: p_j instead of (alpha A)_j
                x = vwhere_gt(state_lanes, half, x, vload(a, j * LANES))
            x = vmul(x, vgather(emis, w.offs, j))
            vstore(v, j * LANES, x)
            s = vadd(s, x)
        inv = vwhere_gt(s, tiny, vdiv(one, s), zero)
        for j in range(K):
            vstore(a, j * LANES, vmul(vload(v, j * LANES), inv))
        vstore(w.s, 0, s)
        vstore(w.inv, 0, inv)
        for b in range(LANES):
            if w.active[b] == 0.0:
                continue
            r = w.rows[b]
            if r >= lo[l0 + b]:
                scale = w.s[b] if w.inv[b] > 0.0 else 0.0
                prod = w.prod[b] * scale
                if prod < _TINY or prod > _HUGE:  # fold into the log: the factors' logs,
                    w.logp[b] += np.log(w.prod[b]) + np.log(scale)  # as prod may underflow
                    w.prod[b] = 1.0  # (a tiny scale: e^-300 less likely than the best state)
                else:
                    w.prod[b] = prod
            if keep_alpha and r >= lo[l0 + b]:
                q = alpha_base[b] + r - lo[l0 + b]
                inv_c[q] = w.inv[b]
                for j in range(K):
                    alpha[q, j] = a[j * LANES + b]
            if keep_snap:
                if r == lo[l0 + b] - 1:
                    for j in range(K):
                        snap_lo[l0 + b, j] = a[j * LANES + b]
                if r == end[l0 + b] - 1:
                    for j in range(K):
                        snap_end[l0 + b, j] = a[j * LANES + b]
    for b in range(LANES):
        loglik[l0 + b] = w.logp[b] + np.log(w.prod[b])


def forward_backward(startprob, transmat, transmat_t, emis, idx, first, end, seq, chunks,
                     by_idx, post_acc, post_dense, start_acc, trans_acc, loglik, lane_weight):
    r"""Forward-backward of whole sequences (one lane each), fused with the statistics.

    Parameters
    ----------
    transmat_t : the transpose of ``transmat``, C-contiguous.
    first, end, seq : the lane plan: rows ``first[l] .. end[l] - 1`` are sequence
        ``seq[l]`` (``-1`` and ``first == end`` for padding entries); a multiple of 8 long.
    chunks : offsets into the blocks of 8 lanes; chunk ``c`` owns ``post_acc[c]``,
        ``start_acc[c]`` and ``trans_acc[c]``.
    by_idx : if True, posteriors are summed into ``post_acc[c, idx[t]]`` (categorical
        counts); otherwise written to ``post_dense[t]``.
    start_acc, trans_acc : per-chunk outputs ``(C, K)`` and ``(C, K, K)``; ``trans_acc``
        holds :math:`\sum_t \hat\alpha_{t-1} u_t^\top`: multiply it elementwise by
        ``transmat`` to get expected transition counts.
    loglik : per-sequence log-likelihood ``(S,)`` (``-inf``: impossible sequence, which
        contributes exactly zero statistics).
    lane_weight : per plan entry, the factor of every statistic of its lane (the weight of
        its sequence; 1.0 leaves the numbers bitwise unchanged).
    """
    K = startprob.shape[0]
    run(_forward_backward, len(chunks) - 1,
        chunk_seconds(chunks, first, end, K, FORWARD_BACKWARD_NS), startprob, transmat, transmat_t,
        emis, idx, first, end, seq, chunks, by_idx, post_acc, post_dense, start_acc, trans_acc,
        loglik, lane_weight, single_lane.ENABLED)


@njit(nogil=True, cache=True)
def _forward_backward(startprob, transmat, transmat_t, emis, idx, first, end, seq, chunks,
                      by_idx, post_acc, post_dense, start_acc, trans_acc, loglik, lane_weight,
                      single, ticket):
    """:func:`forward_backward` of the chunks this thread claims from ``ticket``
    (``single``: a block with one lane runs it alone)."""
    K = startprob.shape[0]
    lane_ll = np.empty(first.shape[0])
    fw = _forward_work(K)
    bw = _backward_work(K)
    while True:
        c = claim(ticket)
        if c >= chunks.shape[0] - 1:
            return
        _forward_backward_chunk(c, startprob, transmat, transmat_t, emis, idx, first, end, seq,
                                chunks, by_idx, post_acc[c], post_dense, start_acc[c],
                                trans_acc[c], loglik, lane_ll, lane_weight, single, fw, bw)


@njit(cache=True)
def _forward_backward_chunk(c, startprob, transmat, transmat_t, emis, idx, first, end, seq,
                            chunks, by_idx, post_acc, post_dense, start_acc, trans_acc, loglik,
                            lane_ll, lane_weight, single, fw, bw):
    """Chunk ``c`` of ``forward_backward``: block by block, forward then backward."""
    K = startprob.shape[0]
    inits = startprob.reshape((1, K))
    l_lo = chunks[c] * LANES
    l_hi = chunks[c + 1] * LANES
    init = np.zeros(l_hi, dtype=np.int64)
    from_state = np.zeros(l_hi, dtype=np.bool_)
    no_snap = np.empty((0, K))
    base, alpha, inv_c = _chunk_buffers(l_lo, l_hi, first, end, K)
    real = seq >= 0
    # a run-time True (not a literal): this call and backward_pass share one compilation
    with_stats = np.bool_(True)
    for l0 in range(l_lo, l_hi, LANES):
        block_base = base[l0 - l_lo:l0 - l_lo + LANES]
        if single and alone(l0, first, end):
            forward_lane(l0, first, first, end, init, inits, from_state, transmat_t, transmat,
                         emis, idx, alpha, block_base[0], inv_c, no_snap, no_snap, lane_ll,
                         fw.a1, fw.v1)
            backward_lane(l0, first, end, end, transmat, transmat_t, emis, idx, alpha,
                          block_base[0],
                          inv_c, no_snap, from_state, with_stats, by_idx, post_acc, post_dense,
                          no_snap, no_snap, no_snap, bw.beta1, bw.u1, bw.a_cur1, bw.st1,
                          bw.tr1, lane_weight[l0])
            if seq[l0] >= 0:
                loglik[seq[l0]] = lane_ll[l0]
            add_lane_statistics(l0, real, bw.st1, bw.tr1, start_acc, trans_acc,
                                lane_weight[l0])
            continue
        _forward_block(l0, first, first, end, init, inits, from_state, transmat_t, emis, idx,
                       alpha, block_base, inv_c, no_snap, no_snap, lane_ll, fw)
        _backward_block(l0, first, end, end, transmat, emis, idx, alpha, block_base, inv_c,
                        no_snap, from_state, with_stats, by_idx, post_acc, post_dense, no_snap,
                        no_snap, no_snap, bw, lane_weight)
        for b in range(LANES):
            if seq[l0 + b] >= 0:
                loglik[seq[l0 + b]] = lane_ll[l0 + b]
        _add_lane_statistics(l0, real, bw, start_acc, trans_acc, lane_weight)


@njit(cache=True)
def _chunk_buffers(l_lo, l_hi, first, end, K):
    """Chunk-local storage of alpha and 1/c: lane ``l`` uses rows ``base[l - l_lo] + t``.

    A zeroed spare row at the end is where empty (padding) lanes are parked.
    """
    n = 0
    for l in range(l_lo, l_hi):
        n += end[l] - first[l]
    base = np.empty(l_hi - l_lo, dtype=np.int64)
    q = 0
    for l in range(l_lo, l_hi):
        base[l - l_lo] = q if end[l] > first[l] else n
        q += end[l] - first[l]
    alpha = np.empty((n + 1, K))
    inv_c = np.empty(n + 1)
    alpha[n] = 0.0
    inv_c[n] = 0.0
    return base, alpha, inv_c


@njit(cache=True)
def _add_lane_statistics(l0, counts_start, w, start_acc, trans_acc, lane_weight):
    """Add the lane accumulators of a block to the chunk's, in lane order, each times its
    lane's weight."""
    K = start_acc.shape[0]
    for b in range(LANES):
        if counts_start[l0 + b]:
            f = lane_weight[l0 + b]
            for j in range(K):
                start_acc[j] += w.st[j * LANES + b] * f
    for b in range(LANES):
        f = lane_weight[l0 + b]
        for i in range(K):
            for j in range(K):
                trans_acc[i, j] += w.tr[(i * K + j) * LANES + b] * f


_BackwardWork = namedtuple("_BackwardWork", "beta u a_cur a_prev tr st rows offs arow aoffs "
                                           "active inv beta1 u1 a_cur1 st1 tr1 ab ub")


@njit(cache=True)
def _steps_per_flush(K):
    r"""Steps whose :math:`\hat\alpha_{t-1}` and :math:`u_t` are kept for one pass of
    ``_add_outer_products`` (both fit in about 256 KB)."""
    return max(4, min(64, 2048 // K))


@njit(cache=True)
def _backward_work(K):
    """Scratch arrays and lane accumulators of ``_backward_block`` and ``backward_lane``
    (one set per thread)."""
    f64 = aligned_empty
    i64 = np.int64
    B = _steps_per_flush(K)
    return _BackwardWork(f64(K * LANES), f64(K * LANES), f64(K * LANES), f64(K * LANES),
                         f64(K * K * LANES), f64(K * LANES), np.empty(LANES, dtype=i64),
                         np.empty(LANES, dtype=i64), np.empty(LANES, dtype=i64),
                         np.empty(LANES, dtype=i64), f64(LANES), f64(LANES), np.empty(K),
                         np.empty(K), np.empty(K), np.empty(K), np.empty((K, K)),
                         f64(B * K * LANES), f64(B * K * LANES))


@njit(cache=True)
def _add_outer_products(ab, ub, n, K, tr):
    r"""``tr[i, j] += ab[s, i] * ub[s, j]`` for the kept steps ``s = 0 .. n - 1``, in that
    order, every lane (layouts ``(n, K, 8)`` and ``(K, K, 8)``).

    The sum :math:`\sum_t \hat\alpha_{t-1} u_t^\top` of the backward pass, a block of
    steps at a time: a 4 x 4 tile of ``tr`` stays in registers over the ``n`` steps, so each
    multiply-add costs half a load instead of a load and a store of ``tr``. Every lane's
    multiply-adds happen in the order of the steps, as one at a time would do them.
    """
    K4 = K // 4 * 4
    for i0 in range(0, K4, 4):
        for j0 in range(0, K4, 4):
            o = (i0 * K + j0) * LANES
            r1, r2, r3 = o + K * LANES, o + 2 * K * LANES, o + 3 * K * LANES
            c00, c01, c02, c03 = (vload(tr, o), vload(tr, o + LANES), vload(tr, o + 2 * LANES),
                                  vload(tr, o + 3 * LANES))
            c10, c11, c12, c13 = (vload(tr, r1), vload(tr, r1 + LANES),
                                  vload(tr, r1 + 2 * LANES), vload(tr, r1 + 3 * LANES))
            c20, c21, c22, c23 = (vload(tr, r2), vload(tr, r2 + LANES),
                                  vload(tr, r2 + 2 * LANES), vload(tr, r2 + 3 * LANES))
            c30, c31, c32, c33 = (vload(tr, r3), vload(tr, r3 + LANES),
                                  vload(tr, r3 + 2 * LANES), vload(tr, r3 + 3 * LANES))
            for s in range(n):
                ai = (s * K + i0) * LANES
                uj = (s * K + j0) * LANES
                a0, a1 = vload(ab, ai), vload(ab, ai + LANES)
                a2, a3 = vload(ab, ai + 2 * LANES), vload(ab, ai + 3 * LANES)
                u0, u1 = vload(ub, uj), vload(ub, uj + LANES)
                u2, u3 = vload(ub, uj + 2 * LANES), vload(ub, uj + 3 * LANES)
                c00, c01, c02, c03 = (vfma(a0, u0, c00), vfma(a0, u1, c01), vfma(a0, u2, c02),
                                      vfma(a0, u3, c03))
                c10, c11, c12, c13 = (vfma(a1, u0, c10), vfma(a1, u1, c11), vfma(a1, u2, c12),
                                      vfma(a1, u3, c13))
                c20, c21, c22, c23 = (vfma(a2, u0, c20), vfma(a2, u1, c21), vfma(a2, u2, c22),
                                      vfma(a2, u3, c23))
                c30, c31, c32, c33 = (vfma(a3, u0, c30), vfma(a3, u1, c31), vfma(a3, u2, c32),
                                      vfma(a3, u3, c33))
            vstore(tr, o, c00)
            vstore(tr, o + LANES, c01)
            vstore(tr, o + 2 * LANES, c02)
            vstore(tr, o + 3 * LANES, c03)
            vstore(tr, r1, c10)
            vstore(tr, r1 + LANES, c11)
            vstore(tr, r1 + 2 * LANES, c12)
            vstore(tr, r1 + 3 * LANES, c13)
            vstore(tr, r2, c20)
            vstore(tr, r2 + LANES, c21)
            vstore(tr, r2 + 2 * LANES, c22)
            vstore(tr, r2 + 3 * LANES, c23)
            vstore(tr, r3, c30)
            vstore(tr, r3 + LANES, c31)
            vstore(tr, r3 + 2 * LANES, c32)
            vstore(tr, r3 + 3 * LANES, c33)
    for i in range(K):  # the rows and columns outside the 4 x 4 tiles
        for j in range(K4 if i < K4 else 0, K):
            o = (i * K + j) * LANES
            c = vload(tr, o)
            for s in range(n):
                c = vfma(vload(ab, (s * K + i) * LANES), vload(ub, (s * K + j) * LANES), c)
            vstore(tr, o, c)



@njit(cache=True)
def _alpha_rows(l0, lo, stop, alpha_base, t, K, arow, aoffs):
    """Each lane's stored row at step ``t`` (clamped to its rows) and its flat offset."""
    for b in range(LANES):
        n = stop[l0 + b] - lo[l0 + b]
        arow[b] = alpha_base[b] + max(min(t, n - 1), 0)
        aoffs[b] = arow[b] * K


@njit(cache=True)
def _normalised_product(x, y, b, K, out):
    """``out = x[:, b] * y[:, b]``, scaled to sum to 1 (zeros stay zeros); returns the sum."""
    s = 0.0
    for j in range(K):
        out[j] = x[j * LANES + b] * y[j * LANES + b]
        s += out[j]
    if s > 0.0:
        for j in range(K):
            out[j] /= s
    return s


@njit(cache=True)
def _backward_block(l0, lo, stop, end, transmat, emis, idx, alpha, alpha_base, inv_c, binits,
                    from_state, stats, by_idx, post_acc, post_dense, snap_g_end, snap_g_lo,
                    snap_b_lo, w, lane_weight):
    r"""Scaled backward recursion of one block, with or without the statistics.

    Lane ``b`` (plan entry ``l = l0 + b``) runs from row ``stop[l] - 1`` down to ``lo[l]``
    (lanes are aligned on ``lo``: step ``t`` is row ``lo + t``), reading :math:`\hat\alpha`
    and :math:`1/c` of row ``r`` from ``alpha[q]``, ``inv_c[q]``, ``q = alpha_base[b] + r -
    lo[l]``. It starts from :math:`\hat\beta = 1` or, if ``from_state[l]``, from
    ``binits[l]`` (the scaled :math:`\hat\beta` of its top row).

    With ``stats``: the posteriors :math:`\gamma_r` of the rows ``r < end[l]``, times
    ``lane_weight[l]``, go to ``post_dense`` rows or are summed into ``post_acc``, and the
    lane accumulators ``w.tr`` (:math:`\sum \hat\alpha_{t-1} u_t^\top`, layout
    ``(K, K, 8)``, every transition into the lane's rows above ``lo``) and ``w.st``
    (:math:`\gamma` of row ``lo``) are filled.

    Without: a pass that only computes :math:`\hat\beta` (for the checks of segmented
    forward-backward). Rows ``>= end`` of a lane that starts from 1 are a warm-up: on
    reaching row ``end - 1`` its :math:`\hat\beta` is rescaled so that
    :math:`\sum_j \hat\alpha(j)\hat\beta(j) = 1`, which makes it the scaled
    :math:`\hat\beta` of the whole sequence once the warm-up has forgotten its start.
    ``snap_g_end[l]`` receives the normalised :math:`\gamma` of row ``end`` (warm-up lanes),
    ``snap_g_lo[l]`` and ``snap_b_lo[l]`` the normalised :math:`\gamma` and the
    :math:`\hat\beta` of row ``lo``.
    """
    K = transmat.shape[0]
    beta, u, a_cur, a_prev = w.beta, w.u, w.a_cur, w.a_prev
    zero = vsplat(0.0)
    one = vsplat(1.0)
    for j in range(K):
        vstore(beta, j * LANES, one)
        vstore(w.st, j * LANES, zero)
    for k in range(K * K):
        vstore(w.tr, k * LANES, zero)
    T = _block_length(l0, lo, stop)
    _alpha_rows(l0, lo, stop, alpha_base, T - 1, K, w.arow, w.aoffs)
    for j in range(K):
        vstore(a_cur, j * LANES, vgather(alpha, w.aoffs, j))
    B = _steps_per_flush(K)
    kept = 0
    for t in range(T - 1, -1, -1):
        _lane_rows(l0, lo, stop, t, idx, K, w.rows, w.offs, w.active)
        for b in range(LANES):
            l = l0 + b
            if w.active[b] == 0.0:
                continue
            r = w.rows[b]
            if r == stop[l] - 1 and from_state[l]:  # the lane's first step
                for j in range(K):
                    beta[j * LANES + b] = binits[l, j]
            if not stats:
                if r == end[l]:
                    _normalised_product(a_cur, beta, b, K, snap_g_end[l])
                if t == 0:
                    _normalised_product(a_cur, beta, b, K, snap_g_lo[l])
                    for j in range(K):
                        snap_b_lo[l, j] = beta[j * LANES + b]
            elif r < end[l]:  # gamma_r = alpha_r * beta_r, times the lane's weight
                f = lane_weight[l]
                if by_idx:
                    pr = idx[r]
                    for j in range(K):
                        post_acc[pr, j] += a_cur[j * LANES + b] * beta[j * LANES + b] * f
                else:
                    for j in range(K):
                        post_dense[r, j] = a_cur[j * LANES + b] * beta[j * LANES + b] * f
        m = vload(w.active, 0)
        if t == 0:
            if stats:
                for j in range(K):
                    x = vmul(vload(a_cur, j * LANES), vload(beta, j * LANES))
                    vstore(w.st, j * LANES, vmul(x, m))
            break
        # u_t = e_t * beta_t / c_t (0 on lanes that have no step t)
        for b in range(LANES):
            w.inv[b] = inv_c[w.arow[b]]
        scale = vmul(vload(w.inv, 0), m)
        for j in range(K):
            x = vmul(vgather(emis, w.offs, j), vload(beta, j * LANES))
            vstore(u, j * LANES, vmul(x, scale))
        _alpha_rows(l0, lo, stop, alpha_base, t - 1, K, w.arow, w.aoffs)
        for i in range(K):
            vstore(a_prev, i * LANES, vgather(alpha, w.aoffs, i))
        if stats:  # tr += alpha_{t-1} u_t^T, B steps at a time
            slot = kept * K * LANES
            for i in range(K):
                vstore(w.ab, slot + i * LANES, vload(a_prev, i * LANES))
                vstore(w.ub, slot + i * LANES, vload(u, i * LANES))
            kept += 1
            if kept == B:
                _add_outer_products(w.ab, w.ub, kept, K, w.tr)
                kept = 0
        # beta_{t-1} = A u_t, exactly 1 on lanes that have no step t
        _matvec(u, transmat, beta)
        rest = vsub(one, m)
        for i in range(K):
            vstore(beta, i * LANES, vadd(vload(beta, i * LANES), rest))
            vstore(a_cur, i * LANES, vload(a_prev, i * LANES))
        if not stats:  # the end of a warm-up: make sum_j alpha beta = 1 on row end - 1
            for b in range(LANES):
                l = l0 + b
                if (w.active[b] != 0.0 and w.rows[b] == end[l] and not from_state[l]):
                    s = 0.0
                    for j in range(K):
                        s += a_cur[j * LANES + b] * beta[j * LANES + b]
                    f = 1.0 / s if s > 0.0 else 0.0
                    for j in range(K):
                        beta[j * LANES + b] *= f
    if stats and kept:
        _add_outer_products(w.ab, w.ub, kept, K, w.tr)


def backward_pass(transmat, emis, idx, lo, stop, end, counts_start, chunks, alpha, alpha_base,
                  inv_c, binits, from_state, stats, by_idx, post_acc, post_dense, start_acc,
                  trans_acc, snap_g_end, snap_g_lo, snap_b_lo, lane_weight):
    """The backward half of segmented forward-backward: every block of a lane plan.

    See ``_backward_block`` for the lanes, ``stats`` and the snapshots; ``alpha_base`` is
    per plan entry. With ``stats``, chunk ``c`` adds its lanes' statistics to
    ``post_acc[c]`` (or ``post_dense`` rows), ``trans_acc[c]`` and, for the entries with
    ``counts_start``, ``start_acc[c]``, each times ``lane_weight`` of its entry.
    """
    run(_backward_pass, len(chunks) - 1,
        chunk_seconds(chunks, lo, stop, transmat.shape[0], BACKWARD_NS), transmat, emis, idx, lo,
        stop, end, counts_start, chunks, alpha, alpha_base, inv_c, binits, from_state, stats,
        by_idx, post_acc, post_dense, start_acc, trans_acc, snap_g_end, snap_g_lo, snap_b_lo,
        lane_weight, single_lane.ENABLED)


@njit(nogil=True, cache=True)
def _backward_pass(transmat, emis, idx, lo, stop, end, counts_start, chunks, alpha, alpha_base,
                   inv_c, binits, from_state, stats, by_idx, post_acc, post_dense, start_acc,
                   trans_acc, snap_g_end, snap_g_lo, snap_b_lo, lane_weight, single, ticket):
    """:func:`backward_pass` of the chunks this thread claims from ``ticket``."""
    w = _backward_work(transmat.shape[0])
    transmat_t = np.ascontiguousarray(transmat.T)
    while True:
        c = claim(ticket)
        if c >= chunks.shape[0] - 1:
            return
        for l0 in range(chunks[c] * LANES, chunks[c + 1] * LANES, LANES):
            if single and alone(l0, lo, stop):
                backward_lane(l0, lo, stop, end, transmat, transmat_t, emis, idx, alpha,
                              alpha_base[l0],
                              inv_c, binits, from_state, stats, by_idx, post_acc[c],
                              post_dense, snap_g_end, snap_g_lo, snap_b_lo, w.beta1, w.u1,
                              w.a_cur1, w.st1, w.tr1, lane_weight[l0])
                if stats:
                    add_lane_statistics(l0, counts_start, w.st1, w.tr1, start_acc[c],
                                        trans_acc[c], lane_weight[l0])
                continue
            _backward_block(l0, lo, stop, end, transmat, emis, idx, alpha,
                            alpha_base[l0:l0 + LANES], inv_c, binits, from_state, stats, by_idx,
                            post_acc[c], post_dense, snap_g_end, snap_g_lo, snap_b_lo, w,
                            lane_weight)
            if stats:
                _add_lane_statistics(l0, counts_start, w, start_acc[c], trans_acc[c],
                                     lane_weight)


def forward_loglik(inits, from_state, transmat_t, emis, idx, first, lo, end, init, chunks,
                   loglik, snap_lo, snap_end, alpha, alpha_base, inv_c):
    r"""Forward pass of every lane: :math:`\sum_{t \ge lo} \log c_t` and filter snapshots.

    Lane ``l`` starts at row ``first[l]`` from ``inits[init[l]]`` (see ``_forward_block``);
    rows ``first .. lo - 1`` are a warm-up whose scales are not counted. ``snap_lo[l]`` and
    ``snap_end[l]`` receive the normalised filter at rows ``lo - 1`` and ``end - 1`` (for
    the exactness check of segmented scoring). If ``alpha`` has rows, :math:`\hat\alpha`
    and :math:`1/c` of the rows ``>= lo`` are stored (``alpha_base`` is per plan entry).
    """
    run(_forward_loglik, len(chunks) - 1,
        chunk_seconds(chunks, first, end, transmat_t.shape[0], FORWARD_NS), inits, from_state,
        transmat_t, emis, idx, first, lo, end, init, chunks, loglik, snap_lo, snap_end, alpha,
        alpha_base, inv_c, single_lane.ENABLED)


@njit(nogil=True, cache=True)
def _forward_loglik(inits, from_state, transmat_t, emis, idx, first, lo, end, init, chunks,
                    loglik, snap_lo, snap_end, alpha, alpha_base, inv_c, single, ticket):
    """:func:`forward_loglik` of the chunks this thread claims from ``ticket``."""
    w = _forward_work(transmat_t.shape[0])
    transmat = np.ascontiguousarray(transmat_t.T)
    while True:
        c = claim(ticket)
        if c >= chunks.shape[0] - 1:
            return
        for l0 in range(chunks[c] * LANES, chunks[c + 1] * LANES, LANES):
            if single and alone(l0, first, end):
                forward_lane(l0, first, lo, end, init, inits, from_state, transmat_t,
                             transmat, emis, idx, alpha, alpha_base[l0], inv_c, snap_lo,
                             snap_end, loglik, w.a1, w.v1)
                for b in range(1, LANES):  # the empty lanes' product of scales stays 1
                    loglik[l0 + b] = 0.0
                continue
            _forward_block(l0, first, lo, end, init, inits, from_state, transmat_t, emis, idx,
                           alpha, alpha_base[l0:l0 + LANES], inv_c, snap_lo, snap_end, loglik,
                           w)


@njit(cache=True)
def _draw(p, u):
    """Index drawn from the unnormalised weights ``p`` with the uniform ``u`` in [0, 1)."""
    total = 0.0
    for k in range(p.shape[0]):
        total += p[k]
    target = u * total
    acc = 0.0
    last = 0
    for k in range(p.shape[0]):
        pk = p[k]
        if pk > 0.0:
            last = k
            acc += pk
            if target < acc:
                return k
    return last


def sample_posterior_paths(startprob, transmat, transmat_t, emis, idx, first, end, chunks,
                           uniforms, states):
    r"""Forward-filtering backward-sampling (Chib 1996; Frühwirth-Schnatter 1994).

    Draws one path per sequence from p(z | x): :math:`z_{T-1} \sim \hat\alpha_{T-1}`,
    :math:`z_t \sim \hat\alpha_t(i) A_{i, z_{t+1}}`. ``uniforms`` has one U[0,1) draw per
    row, so the result does not depend on the thread count. Impossible sequences get -1.
    """
    run(_sample_posterior_paths, len(chunks) - 1,
        chunk_seconds(chunks, first, end, startprob.shape[0], SAMPLE_NS), startprob, transmat,
        transmat_t, emis, idx, first, end, chunks, uniforms, states, single_lane.ENABLED)


@njit(nogil=True, cache=True)
def _sample_posterior_paths(startprob, transmat, transmat_t, emis, idx, first, end, chunks,
                            uniforms, states, single, ticket):
    """:func:`sample_posterior_paths` of the chunks this thread claims from ``ticket``."""
    K = startprob.shape[0]
    inits = startprob.reshape((1, K))
    init = np.zeros(first.shape[0], dtype=np.int64)
    from_state = np.zeros(first.shape[0], dtype=np.bool_)
    lane_ll = np.empty(first.shape[0])
    w = _forward_work(K)
    no_snap = np.empty((0, K))
    wts = np.empty(K)
    while True:
        c = claim(ticket)
        if c >= chunks.shape[0] - 1:
            return
        l_lo = chunks[c] * LANES
        l_hi = chunks[c + 1] * LANES
        base, alpha, inv_c = _chunk_buffers(l_lo, l_hi, first, end, K)
        for l0 in range(l_lo, l_hi, LANES):
            bb = base[l0 - l_lo:l0 - l_lo + LANES]
            if single and alone(l0, first, end):
                forward_lane(l0, first, first, end, init, inits, from_state, transmat_t,
                             transmat, emis, idx, alpha, bb[0], inv_c, no_snap, no_snap,
                             lane_ll, w.a1, w.v1)
                for b in range(1, LANES):
                    lane_ll[l0 + b] = 0.0
            else:
                _forward_block(l0, first, first, end, init, inits, from_state, transmat_t,
                               emis, idx, alpha, bb, inv_c, no_snap, no_snap, lane_ll, w)
            for b in range(LANES):
                lo = first[l0 + b]
                hi = end[l0 + b]
                if lane_ll[l0 + b] == -np.inf:
                    for r in range(lo, hi):
                        states[r] = -1
                    continue
                if hi == lo:
                    continue
                q = bb[b] + hi - 1 - lo
                z = _draw(alpha[q], uniforms[hi - 1])
                states[hi - 1] = z
                for r in range(hi - 2, lo - 1, -1):
                    q -= 1
                    for i in range(K):
                        wts[i] = alpha[q, i] * transmat[i, z]
                    z = _draw(wts, uniforms[r])
                    states[r] = z


@njit(cache=True)
def sample_states(startprob, transmat, uniforms, states):
    """A Markov chain path: z_0 ~ startprob, z_t ~ transmat[z_{t-1}]."""
    z = _draw(startprob, uniforms[0])
    states[0] = z
    for t in range(1, uniforms.shape[0]):
        z = _draw(transmat[z], uniforms[t])
        states[t] = z

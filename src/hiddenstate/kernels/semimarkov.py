r"""The segment recursion of explicit-duration hidden semi-Markov models, written once.

A segment of state :math:`j` that started :math:`a - 1` steps ago is an *age* :math:`a`
(1 .. D). The chain over (state, age) pairs moves from age :math:`a` to :math:`a + 1` with
the continuation probability :math:`\rho_j(a + 1) = S_j(a + 1) / S_j(a)` and ends with the
hazard :math:`h_j(a) = f_j(a) / S_j(a)`, where :math:`f_j` is the duration pmf and
:math:`S_j(a) = P(\text{duration} \ge a)` its survival function; an ended segment of
:math:`i` starts one of :math:`j \ne i` with :math:`A_{ij}`. A path of this chain is a
segmentation, and its probability is :math:`\pi \prod A \prod f(d)` times
:math:`S(d)` for the last segment (right-censored: the sequence may end inside it). The
forward variable is

.. math::
    u_t(j, 1) = s_t(j)\, S_j(1)\, e_t(j), \qquad
    u_t(j, a) = u_{t-1}(j, a - 1)\, \rho_j(a)\, e_t(j) / n_{t-1}, \qquad
    s_{t+1}(j) = \bigoplus_i \Bigl[\bigoplus_a u_t(i, a)\, h_i(a)\Bigr] A_{ij},

normalised every step by :math:`n_t = \sum_{j,a} u_t(j, a)`, so every value is a
probability (the filter over (state, age) of a scaled HMM): nothing overflows and nothing
that matters underflows, for any length. :math:`\oplus` is the semiring's sum: ``SUM``
(sum-product: likelihood, posteriors, sampling) or ``MAX`` (max-product with ``k``-best
lists: Viterbi and k-best segmentations). This one forward step (:func:`_step`) is shared by
every kernel below; the backward passes (posteriors, back-tracking, backward sampling) read
what it leaves. Time O(T K (D + K)) per sequence; memory O(K D) per running sequence, plus
for a backward pass the forward state of a block of ``B`` steps and one checkpoint per
block (recomputed block by block, never stored for all T steps).

Arrays: the state registers are ``(rows, W)`` with ``rows = K k`` (row ``j k + r``: rank
``r`` of state ``j``) and age ``a`` in column ``PAD + a - 1`` (``PAD`` free columns before
age 1 and after age D rounded up to whole blocks of 8); ``rho`` and ``haz`` are ``(K, W)``
in that layout, zero outside ages 1..D (``rho[:, PAD]`` is :math:`S_j(1)`). Each row is
processed 8 ages at a time (:mod:`.simd`); sums over ages add the 8 lanes in a fixed order,
so results do not depend on the thread count.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..threads import run
from .chunks import claim
from .kbest import _insert
from .simd import LANES, vadd, vfma, vget, vload, vmul, vsplat, vstore, vwhere_gt

SUM = 0
MAX = 1
PAD = LANES
#: single-thread nanoseconds of each kernel per (row, state, age), and per (row, state**2):
#: what :func:`hiddenstate.threads.run` weighs against starting helper threads
LOGLIK_NS = (0.5, 1.0)
POSTERIORS_NS = (2.5, 3.0)
BEST_NS = (1.0, 2.0)
SAMPLE_NS = (1.5, 1.0)


def _seconds(bounds, K: int, D: int, ns: tuple[float, float], k: int = 1) -> float:
    """Estimated single-thread seconds of a segment kernel over the sequences ``bounds``."""
    rows = float(bounds[-1] - bounds[0])
    return rows * K * (ns[0] * min(D, rows) * k + ns[1] * K * k) * 1e-9


@njit(cache=True)
def n_blocks(t, D):
    """Blocks of 8 ages that hold the ages a segment can have at step ``t`` (1..min(D, t+1))."""
    a = min(D, t + 1)
    return (a + LANES - 1) // LANES


@njit(cache=True)
def _hsum(v):
    return ((vget(v, 0) + vget(v, 1)) + (vget(v, 2) + vget(v, 3))) + (
        (vget(v, 4) + vget(v, 5)) + (vget(v, 6) + vget(v, 7)))


@njit(cache=True)
def _step(sem, k, t, D, Us, Ud, start, inv, emis, erow, rho, haz, fend, fend_tag, rowsum):
    r"""One step of the forward recursion in semiring ``sem``: ``Ud`` = u_t from ``Us`` =
    u_{t-1} (unnormalised by its own n_{t-1}; ``inv`` = 1 / n_{t-1}) and the start scores
    ``start`` (rows, unnormalised by n_{t-1}). Fills ``fend`` with the scores of ending at
    step ``t`` (``SUM``: the sum over ages of u_t h; ``MAX``: the top-``k`` of state ``i``
    in ``fend[i k : i k + k]`` with tags ``age k + rank`` in ``fend_tag``) and ``rowsum``
    with each state's sum of u_t. Returns n_t = the sum of u_t."""
    K = rho.shape[0]
    W = rho.shape[1]
    nb = n_blocks(t, D)
    more = nb * LANES < W - 2 * PAD  # zero the block after the last one written: the next
    zero = vsplat(0.0)               # step reads one age further
    total = 0.0
    for j in range(K):
        m = vsplat(emis[erow, j] * inv)
        fj = j * W
        sj = 0.0
        for r in range(k):
            row = j * k + r
            Us[row, PAD - 1] = start[row]
            off = row * W
            acc = zero
            end = zero
            bidx = zero
            for b in range(nb):
                c = PAD + b * LANES
                v = vmul(vmul(vload(Us, off + c - 1), vload(rho, fj + c)), m)
                vstore(Ud, off + c, v)
                acc = vadd(acc, v)
                h = vmul(v, vload(haz, fj + c))
                if sem == SUM:
                    end = vadd(end, h)
                elif k == 1:
                    bidx = vwhere_gt(h, end, vsplat(float(b)), bidx)
                    end = vwhere_gt(h, end, h, end)
            if more:
                vstore(Ud, off + PAD + nb * LANES, zero)
            sj += _hsum(acc)
            if sem == SUM:
                fend[row] = _hsum(end)
            elif k == 1:
                best = -1.0
                age = 0
                for lane in range(LANES):
                    val = vget(end, lane)
                    a = int(vget(bidx, lane)) * LANES + lane + 1
                    if val > best or (val == best and a < age):
                        best = val
                        age = a
                fend[row] = best
                fend_tag[row] = age
        rowsum[j] = sj
        total += sj
    if sem == MAX and k > 1:  # top-k lists of ending: over (age, rank) of each state
        amax = min(D, t + 1)
        for i in range(K):
            for r in range(k):
                fend[i * k + r] = -1.0
                fend_tag[i * k + r] = -1
            for r in range(k):
                for a in range(1, amax + 1):
                    c = PAD + a - 1
                    _insert(fend[i * k:i * k + k], fend_tag[i * k:i * k + k], k,
                            Ud[i * k + r, c] * haz[i, c], a * k + r)
    return total


@njit(cache=True)
def _next_start(sem, k, A, fend, start, tags):
    """The start scores of the next step from the end scores: ``SUM`` sum_i fend_i A_ij;
    ``MAX`` the top-k over (i, rank) of fend A_ij, tags ``i k + rank`` (-1: none)."""
    K = A.shape[0]
    if sem == SUM:  # as axpys over the rows of A: independent sums, vectorised
        for j in range(K):
            start[j] = 0.0
        for i in range(K):
            fi = fend[i]
            for j in range(K):
                start[j] += fi * A[i, j]
        return
    for j in range(K):
        for r in range(k):
            start[j * k + r] = -1.0
            tags[j * k + r] = -1
        for i in range(K):
            a = A[i, j]
            if a == 0.0:
                continue
            for r in range(k):
                _insert(start[j * k:j * k + k], tags[j * k:j * k + k], k,
                        fend[i * k + r] * a, i * k + r)
    for q in range(start.shape[0]):  # an absent entry (-1) starts nothing
        if start[q] < 0.0:
            start[q] = 0.0


@njit(cache=True)
def _begin(sem, k, startprob, start, tags):
    """The start scores of step 0: ``startprob`` (rank 0 only for ``MAX``)."""
    K = startprob.shape[0]
    for j in range(K):
        for r in range(k):
            start[j * k + r] = startprob[j] if r == 0 else 0.0
            tags[j * k + r] = -1


# -- sum-product: the likelihood and the filter -----------------------------------------------
def segment_loglik(startprob, A, rho, haz, D, emis, idx, bounds, chunks, scale, filtered,
                   want_filter, loglik):
    """Forward pass (``SUM``): ``loglik[s]`` = sum_t log n_t of each sequence (without the
    emission table's row offsets), ``scale[row]`` = n_t and, with ``want_filter``,
    ``filtered[row, j]`` = P(z_t = j | x_0..t). An impossible sequence gets ``-inf`` (its
    later scales 0)."""
    run(_segment_loglik, chunks.shape[0] - 1, _seconds(bounds, rho.shape[0], D, LOGLIK_NS),
        startprob, A, rho, haz, D, emis, idx, bounds, chunks, scale, filtered, want_filter, loglik)


@njit(nogil=True, cache=True)
def _segment_loglik(startprob, A, rho, haz, D, emis, idx, bounds, chunks, scale, filtered,
                    want_filter, loglik, ticket):
    """:func:`segment_loglik` of the chunks this thread claims from ``ticket``."""
    K = rho.shape[0]
    W = rho.shape[1]
    U = np.zeros((2, K, W))
    start = np.empty(K)
    tags = np.empty(K, dtype=np.int64)
    fend = np.empty(K)
    ftag = np.empty(K, dtype=np.int64)
    rowsum = np.empty(K)
    while True:
        c = claim(ticket)
        if c >= chunks.shape[0] - 1:
            return
        for s in range(chunks[c], chunks[c + 1]):
            lo = bounds[s]
            T = bounds[s + 1] - lo
            U[:] = 0.0
            _begin(SUM, 1, startprob, start, tags)
            inv = 1.0
            src = 0
            ll = 0.0
            for t in range(T):
                n = _step(SUM, 1, t, D, U[src], U[1 - src], start, inv, emis, idx[lo + t],
                          rho, haz, fend, ftag, rowsum)
                scale[lo + t] = n
                if not n > 0.0:
                    ll = -np.inf
                    for q in range(t + 1, T):
                        scale[lo + q] = 0.0
                    break
                ll += np.log(n)
                inv = 1.0 / n
                if want_filter:
                    for j in range(K):
                        filtered[lo + t, j] = rowsum[j] * inv
                _next_start(SUM, 1, A, fend, start, tags)
                src = 1 - src
            loglik[s] = ll


# -- sum-product: posteriors and expected counts ----------------------------------------------
@njit(cache=True)
def _forward_blocks(startprob, A, rho, haz, D, emis, idx, lo, T, B, U, UB, CK, CKS, scale,
                    start, tags, fend, ftag, rowsum):
    """The forward pass of one sequence storing what the backward pass reads: ``scale``,
    a checkpoint (``CK``: u_t; ``CKS``: the next start scores) at the end of every block of
    ``B`` steps but the last, and u_t of the last block in ``UB``. Returns sum_t log n_t
    (``-inf``: the sequence is impossible)."""
    U[:] = 0.0
    _begin(SUM, 1, startprob, start, tags)
    inv = 1.0
    src = 0
    last0 = ((T - 1) // B) * B
    ll = 0.0
    for t in range(T):
        dst = UB[t - last0] if t >= last0 else U[1 - src]
        Us = U[src] if t <= last0 else UB[t - 1 - last0]
        n = _step(SUM, 1, t, D, Us, dst, start, inv, emis, idx[lo + t], rho, haz, fend,
                  ftag, rowsum)
        scale[lo + t] = n
        if not n > 0.0:
            return -np.inf
        ll += np.log(n)
        inv = 1.0 / n
        _next_start(SUM, 1, A, fend, start, tags)
        if t < last0:
            src = 1 - src
            if (t + 1) % B == 0:
                CK[t // B] = U[src]
                CKS[t // B] = start
    return ll


@njit(cache=True)
def _recompute_block(startprob, A, rho, haz, D, emis, idx, lo, b0, b1, B, U, UB, CK, CKS,
                     scale, start, tags, fend, ftag, rowsum):
    """u_t for t in [b0, b1) into ``UB[t - b0]``, from the checkpoint before ``b0``."""
    U[:] = 0.0
    if b0 == 0:
        _begin(SUM, 1, startprob, start, tags)
        inv = 1.0
    else:
        U[0] = CK[b0 // B - 1]
        start[:] = CKS[b0 // B - 1]
        inv = 1.0 / scale[lo + b0 - 1]
    for t in range(b0, b1):
        Us = U[0] if t == b0 else UB[t - 1 - b0]
        _step(SUM, 1, t, D, Us, UB[t - b0], start, inv, emis, idx[lo + t], rho, haz, fend,
              ftag, rowsum)
        inv = 1.0 / scale[lo + t]
        _next_start(SUM, 1, A, fend, start, tags)


def segment_posteriors(startprob, A, rho, haz, D, emis, idx, bounds, chunks, B, n_blocks_max, scale,
                       loglik, post, starts, want_starts, start_acc, trans_acc, complete_acc,
                       censored_acc):
    r"""Forward-backward over (state, age): per sequence ``loglik`` (sum_t log n_t),
    ``post[row, j]`` = P(z_t = j | x), optionally ``starts[row, j]`` = P(a segment of j
    starts at t | x); per chunk ``c``: the expected initial states ``start_acc[c]``,
    transitions between segments ``trans_acc[c]``, complete segments by duration
    ``complete_acc[c, j, PAD + d - 1]`` and last (right-censored) segments by observed
    length ``censored_acc[c]``. The backward variable

    .. math::
        \beta_t(j, a) = h_j(a)\, b_t(j) + \rho_j(a + 1)\, e_{t+1}(j)\, \beta_{t+1}(j, a + 1)
        / n_{t+1}, \qquad b_t(j) = \sum_k A_{jk} S_k(1)\, e_{t+1}(k)\, \beta_{t+1}(k, 1)
        / n_{t+1},

    with :math:`\beta_{T-1} = 1`, gives the posterior of (j, a) at t as
    :math:`u_t(j, a) \beta_t(j, a) / n_t`. An impossible sequence (``-inf``) adds nothing
    and its rows of ``post`` are 0."""
    run(_segment_posteriors, chunks.shape[0] - 1, _seconds(bounds, rho.shape[0], D, POSTERIORS_NS),
        startprob, A, rho, haz, D, emis, idx, bounds, chunks, B, n_blocks_max, scale, loglik, post,
        starts, want_starts, start_acc, trans_acc, complete_acc, censored_acc)


@njit(nogil=True, cache=True)
def _segment_posteriors(startprob, A, rho, haz, D, emis, idx, bounds, chunks, B, n_blocks_max,
                        scale, loglik, post, starts, want_starts, start_acc, trans_acc,
                        complete_acc, censored_acc, ticket):
    """:func:`segment_posteriors` of the chunks this thread claims from ``ticket``."""
    K = rho.shape[0]
    W = rho.shape[1]
    U = np.zeros((2, K, W))
    UB = np.zeros((B, K, W))
    CK = np.zeros((n_blocks_max, K, W))
    CKS = np.zeros((n_blocks_max, K))
    Bt = np.zeros((K, W))
    start = np.empty(K)
    tags = np.empty(K, dtype=np.int64)
    fend = np.empty(K)
    ftag = np.empty(K, dtype=np.int64)
    rowsum = np.empty(K)
    w = np.empty(K)
    bend = np.empty(K)
    AT = np.ascontiguousarray(A.T)
    fhat = np.empty(K)
    while True:
        c = claim(ticket)
        if c >= chunks.shape[0] - 1:
            return
        eta = complete_acc[c]
        cens = censored_acc[c]
        for s in range(chunks[c], chunks[c + 1]):
            lo = bounds[s]
            T = bounds[s + 1] - lo
            ll = _forward_blocks(startprob, A, rho, haz, D, emis, idx, lo, T, B, U, UB, CK,
                                 CKS, scale, start, tags, fend, ftag, rowsum)
            loglik[s] = ll
            if ll == -np.inf:
                for t in range(T):
                    for j in range(K):
                        post[lo + t, j] = 0.0
                        if want_starts:
                            starts[lo + t, j] = 0.0
                continue
            Bt[:] = 0.0
            last0 = ((T - 1) // B) * B
            b0 = last0
            while b0 >= 0:
                b1 = min(b0 + B, T)
                if b0 < last0:
                    _recompute_block(startprob, A, rho, haz, D, emis, idx, lo, b0, b1, B, U,
                                     UB, CK, CKS, scale, start, tags, fend, ftag, rowsum)
                for t in range(b1 - 1, b0 - 1, -1):
                    ut = UB[t - b0]
                    inv = 1.0 / scale[lo + t]
                    nb = n_blocks(t, D)
                    if t == T - 1:
                        Bt[:, PAD:] = 1.0
                        inv_t = vsplat(inv)
                        for j in range(K):
                            g = vsplat(0.0)
                            for b in range(nb):
                                col = PAD + b * LANES
                                a = vmul(vload(ut, j * W + col), inv_t)
                                g = vadd(g, a)
                                vstore(cens, j * W + col, vadd(vload(cens, j * W + col), a))
                            post[lo + t, j] = _hsum(g)
                            if want_starts:
                                starts[lo + t, j] = ut[j, PAD] * inv
                        continue
                    # beta_{t+1} in Bt becomes beta_t in place: age a reads age a + 1,
                    # which the blocks in increasing order have not overwritten yet
                    cn = 1.0 / scale[lo + t + 1]
                    er = idx[lo + t + 1]
                    for q in range(K):
                        w[q] = rho[q, PAD] * emis[er, q] * cn * Bt[q, PAD]
                    for j in range(K):
                        bend[j] = 0.0
                    for q in range(K):  # axpys over the columns of A (rows of AT)
                        wq = w[q]
                        for j in range(K):
                            bend[j] += AT[q, j] * wq
                    for j in range(K):
                        mj = vsplat(emis[er, j] * cn)
                        bj = vsplat(bend[j])
                        bi = vsplat(bend[j] * inv)  # the hazard term of eta, alpha unscaled
                        g = vsplat(0.0)
                        fh = vsplat(0.0)
                        off = j * W
                        for b in range(nb):
                            col = PAD + b * LANES
                            hz = vload(haz, off + col)
                            beta = vfma(hz, bj, vmul(vmul(vload(rho, off + col + 1), mj),
                                                     vload(Bt, off + col + 1)))
                            vstore(Bt, off + col, beta)
                            u = vload(ut, off + col)
                            g = vfma(u, beta, g)
                            uh = vmul(u, hz)
                            fh = vadd(fh, uh)
                            vstore(eta, off + col, vfma(uh, bi, vload(eta, off + col)))
                        if nb * LANES < W - 2 * PAD:
                            vstore(Bt, off + PAD + nb * LANES, vsplat(0.0))
                        post[lo + t, j] = _hsum(g) * inv
                        fhat[j] = _hsum(fh) * inv
                        if want_starts:
                            starts[lo + t, j] = ut[j, PAD] * inv * Bt[j, PAD]
                    tr = trans_acc[c]
                    for i in range(K):
                        fi = fhat[i]
                        for j in range(K):
                            tr[i, j] += fi * A[i, j] * w[j]
                b0 -= B
            for j in range(K):
                start_acc[c, j] += post[lo, j]


# -- max-product: the k best segmentations ----------------------------------------------------
def segment_best(startprob, A, rho, haz, D, k, emis, idx, bounds, chunks, bp_start, bp_end, logprob,
                 paths):
    """The ``k`` best segmentations of each sequence (max-product with top-k lists; ``k = 1``:
    Viterbi): ``logprob[s, r]`` = log p(x, z_r) without the table's row offsets (``-inf``
    where a sequence has fewer than ``k`` paths of non-zero probability; their state -1) and
    the paths in ``paths[r]``. Back-pointers ``bp_start`` (N, K, k): the tag ``i k + rank``
    of the segment that ended before a segment of j started at t; ``bp_end`` (N, K, k): the
    tag ``age k + rank`` of ending state i at t. Ties keep the candidate met first."""
    run(_segment_best, chunks.shape[0] - 1, _seconds(bounds, rho.shape[0], D, BEST_NS, k),
        startprob, A, rho, haz, D, k, emis, idx, bounds, chunks, bp_start, bp_end, logprob, paths)


@njit(nogil=True, cache=True)
def _segment_best(startprob, A, rho, haz, D, k, emis, idx, bounds, chunks, bp_start, bp_end,
                  logprob, paths, ticket):
    """:func:`segment_best` of the chunks this thread claims from ``ticket``."""
    K = rho.shape[0]
    W = rho.shape[1]
    R = K * k
    U = np.zeros((2, R, W))
    start = np.empty(R)
    tags = np.empty(R, dtype=np.int64)
    fend = np.empty(R)
    ftag = np.empty(R, dtype=np.int64)
    rowsum = np.empty(K)
    fin = np.empty(k)
    fin_tag = np.empty(k, dtype=np.int64)
    while True:
        c = claim(ticket)
        if c >= chunks.shape[0] - 1:
            return
        for s in range(chunks[c], chunks[c + 1]):
            lo = bounds[s]
            T = bounds[s + 1] - lo
            U[:] = 0.0
            _begin(MAX, k, startprob, start, tags)
            inv = 1.0
            src = 0
            ll = 0.0
            dead = False
            for t in range(T):
                for j in range(K):
                    for r in range(k):
                        bp_start[lo + t, j, r] = tags[j * k + r]
                n = _step(MAX, k, t, D, U[src], U[1 - src], start, inv, emis, idx[lo + t],
                          rho, haz, fend, ftag, rowsum)
                if not n > 0.0:
                    dead = True
                    break
                for i in range(K):
                    for r in range(k):
                        bp_end[lo + t, i, r] = ftag[i * k + r]
                src = 1 - src
                if t < T - 1:
                    ll += np.log(n)
                    inv = 1.0 / n
                    _next_start(MAX, k, A, fend, start, tags)
            for r in range(k):
                fin[r] = -1.0
                fin_tag[r] = -1
            if not dead:
                amax = min(D, T)
                Ul = U[src]
                for j in range(K):
                    for r in range(k):
                        for a in range(1, amax + 1):
                            _insert(fin, fin_tag, k, Ul[j * k + r, PAD + a - 1],
                                    (j * k + r) * (D + 1) + a)
            for p in range(k):
                if not fin[p] > 0.0:
                    logprob[s, p] = -np.inf
                    for t in range(T):
                        paths[p, lo + t] = -1
                    continue
                logprob[s, p] = ll + np.log(fin[p])
                tag = fin_tag[p]
                a = tag % (D + 1)
                j = (tag // (D + 1)) // k
                r = (tag // (D + 1)) % k
                t_end = T - 1
                while True:
                    s0 = t_end - a + 1
                    for t in range(s0, t_end + 1):
                        paths[p, lo + t] = j
                    if s0 == 0:
                        break
                    tg = bp_start[lo + s0, j, r]
                    i = tg // k
                    re = tg % k
                    tg2 = bp_end[lo + s0 - 1, i, re]
                    a = tg2 // k
                    r = tg2 % k
                    j = i
                    t_end = s0 - 1


# -- sampling: forward filtering, backward sampling of segmentations --------------------------
@njit(cache=True)
def _draw(u, weights, n):
    """Index of the first cumulative weight above ``u`` (times the total): ``weights[:n]``."""
    total = 0.0
    for q in range(n):
        total += weights[q]
    target = u * total
    acc = 0.0
    for q in range(n):
        acc += weights[q]
        if acc > target and weights[q] > 0.0:
            return q
    for q in range(n - 1, -1, -1):  # rounding at the very end: the last positive weight
        if weights[q] > 0.0:
            return q
    return -1


def segment_sample(startprob, A, rho, haz, D, emis, idx, bounds, chunks, B, n_blocks_max, scale,
                   uniforms, states):
    """One segmentation per sequence drawn from p(z | x): the forward pass (``SUM``), then
    backward from the end the last segment's (state, age) in proportion to u_{T-1}, and for
    each segment that starts at s > 0 the (state, age) of the one before in proportion to
    u_{s-1}(i, a) h_i(a) A_ij; ``uniforms[row]`` decides the segment that ends at ``row``.
    An impossible sequence gets state -1 throughout."""
    run(_segment_sample, chunks.shape[0] - 1, _seconds(bounds, rho.shape[0], D, SAMPLE_NS),
        startprob, A, rho, haz, D, emis, idx, bounds, chunks, B, n_blocks_max, scale, uniforms,
        states)


@njit(nogil=True, cache=True)
def _segment_sample(startprob, A, rho, haz, D, emis, idx, bounds, chunks, B, n_blocks_max, scale,
                    uniforms, states, ticket):
    """:func:`segment_sample` of the chunks this thread claims from ``ticket``."""
    K = rho.shape[0]
    W = rho.shape[1]
    U = np.zeros((2, K, W))
    UB = np.zeros((B, K, W))
    CK = np.zeros((n_blocks_max, K, W))
    CKS = np.zeros((n_blocks_max, K))
    start = np.empty(K)
    tags = np.empty(K, dtype=np.int64)
    fend = np.empty(K)
    ftag = np.empty(K, dtype=np.int64)
    rowsum = np.empty(K)
    weights = np.empty(K * D)
    while True:
        c = claim(ticket)
        if c >= chunks.shape[0] - 1:
            return
        for s in range(chunks[c], chunks[c + 1]):
            lo = bounds[s]
            T = bounds[s + 1] - lo
            ll = _forward_blocks(startprob, A, rho, haz, D, emis, idx, lo, T, B, U, UB, CK,
                                 CKS, scale, start, tags, fend, ftag, rowsum)
            if ll == -np.inf:
                for t in range(T):
                    states[lo + t] = -1
                continue
            loaded = ((T - 1) // B) * B  # the block whose u_t are in UB
            t_end = T - 1
            j = -1
            while t_end >= 0:
                b0 = (t_end // B) * B
                if b0 != loaded:
                    _recompute_block(startprob, A, rho, haz, D, emis, idx, lo, b0,
                                     min(b0 + B, T), B, U, UB, CK, CKS, scale, start, tags,
                                     fend, ftag, rowsum)
                    loaded = b0
                ut = UB[t_end - b0]
                amax = min(D, t_end + 1)
                for i in range(K):
                    f = 1.0 if j < 0 else A[i, j]
                    for a in range(1, amax + 1):
                        col = PAD + a - 1
                        x = ut[i, col] * f
                        if j >= 0:
                            x *= haz[i, col]
                        weights[i * amax + a - 1] = x
                q = _draw(uniforms[lo + t_end], weights, K * amax)
                j = q // amax
                a = q % amax + 1
                for t in range(t_end - a + 1, t_end + 1):
                    states[lo + t] = j
                t_end -= a

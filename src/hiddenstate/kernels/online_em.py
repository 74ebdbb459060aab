r"""Online EM for HMMs (Cappé 2011; written out in PROPS, Wojnowicz & Zhao, sec. IV).

Plain functions on arrays, compiled with numba; the learner
(:class:`hiddenstate.learn.online.online_em.OnlineEM`) documents the conventions and owns
the validation. One step, observation :math:`y_t` (global index :math:`t = 1, 2, \dots`),
parameters :math:`\theta_{t-1} = (\pi, \tau, b)` as left by the previous step:

.. math::
    \text{pred}_t(k) = \sum_{k'} \phi_{t-1}(k')\,\tau(k', k), \qquad
    \phi_t(k) \propto \text{pred}_t(k)\, b_k(y_t), \qquad
    r_t(k' \mid k) = \phi_{t-1}(k')\,\tau(k', k) / \text{pred}_t(k),

and at the first observation of a sequence :math:`\text{pred}_t = \pi` and
:math:`r_t(k' \mid k) = \phi_{t-1}(k')` (the new sequence is independent of the old one).
With :math:`R_t[k', k] = r_t(k' \mid k)` (columns sum to one), :math:`\gamma_t` and
:math:`\bar\gamma_t = 1 - \gamma_t`, every auxiliary follows

.. math::
    \rho_t(\cdot, k) = \bar\gamma_t \textstyle\sum_{k'} \rho_{t-1}(\cdot, k')\, R_t[k', k]
        + \gamma_t\, \text{new}_t(\cdot, k), \qquad
    S_t = \textstyle\sum_k \rho_t(\cdot, k)\, \phi_t(k),

with new terms :math:`\delta(j, k)\, r_t(i \mid k)` for the transitions :math:`(i, j)`
(none at a sequence start), :math:`\delta(i, k)\, s(y_t)` for the emissions of state
:math:`i` and, at a sequence start only, :math:`\delta(i, k)` for the initial state.

**Categorical emissions, lazily.** Write the emission auxiliary of symbol :math:`w` as the
:math:`K\times K` matrix :math:`E_w[i, k] = \rho_t(i, w, k)`. Then
:math:`E_w \leftarrow \bar\gamma_t E_w R_t + \gamma_t [y_t = w]\, I`: every unobserved
symbol is multiplied on the right by the same :math:`F_t = \bar\gamma_t R_t`. The kernel
keeps, in a *window* of at most ``B`` steps,

- ``TP``: a segment tree (heap layout, leaves ``B .. 2B-1``) of the window's kernels
  :math:`R_t` with their ordered products; a node is filled when its last leaf arrives
  (amortised one :math:`K^3` product per step), and a range that ends at the newest leaf
  decomposes into at most :math:`2\log_2 B` filled nodes;
- the scalar :math:`c = \prod \bar\gamma` since the window began (the :math:`R` products
  are column-stochastic and never need rescaling, the decay is kept apart), with a flush
  as soon as :math:`c` falls below ``SCALE_FLOOR``, so :math:`1/c` stays finite;
- per symbol the stored :math:`\hat E_w` and ``touch[w]``, the window position of its last
  update (0: before the window), meaning
  :math:`E_w = c\, \hat E_w \prod_{s = \text{touch}+1}^{\text{now}} R_s`.

At a step only the observed symbol's block is brought up to date (one range product,
:math:`O(K^3 \log B)`, no inverse), and only two numbers per state are needed: the
statistic :math:`S(i, y_t)` and the normaliser :math:`N(i) = \sum_w S(i, w)`, which follows
its own recursion :math:`G \leftarrow \bar\gamma_t G R_t + \gamma_t I`,
:math:`N = G\phi` (:math:`O(K^3)`). A *flush* (window full, or :math:`c` too small)
brings every block up to date: :math:`O(W K^3)` once per window, so the amortised cost per
step is :math:`O(K^3 \log B + W K^3 / B)`.

Nothing underflows but what should: a flush multiplies each stored block by :math:`c`, so
the statistic of a symbol unseen for very long decays like
:math:`\prod(1 - \gamma_s)` and may reach 0 after millions of steps, when it is far
below the prior's pseudo-count that it is added to.

**Several categorical features** (``F`` columns, alphabets :math:`W_f`): the emission is
the product :math:`b_k(y_t) = \prod_f b^{(f)}_k(y_{tf})`; every feature's symbols get
blocks of their own (the alphabets laid end to end, symbol :math:`w` of feature :math:`f`
at ``bounds[f] + w``), all sharing the one window of kernels :math:`R_t`; each feature
keeps its own normaliser :math:`G^{(f)}` (a feature missing at a step adds no
:math:`\gamma_t I` to it) and, for averaging, its own :math:`u^{(f)}` and tree ``TQ[f]``.
One feature is ``F = 1``.

**Partial state labels**: at a step with label :math:`s_t \ge 0` the emission
probability of every other state is 0, :math:`b_k(y_t)\,[k = s_t]` (the clamp of
:func:`hiddenstate.inference.clamp_states`), so the filter, the retrospective kernel and
every statistic see only the paths that agree with the labels.

Polyak-Ruppert averaging of the emission matrix is lazy in the same way: the running sum
of :math:`u_s(i) S_s(i, w)` with :math:`u_s(i) = 1/(N_s(i) + A_i)` grows, between two
touches of :math:`w`, by :math:`\mathrm{diag}(\hat E_w Q)` where the tree also carries
:math:`Q = \sum_s c_s (\prod_{\text{range start}}^{s} R)\, \phi_s u_s^\top`, combined as
:math:`(P_1, Q_1)(P_2, Q_2) = (P_1 P_2,\; Q_1 + P_1 Q_2)` (table ``TQ``).

**Dense families** (Gaussian, Poisson): the emission auxiliary is ``rho_g[i, p, k]`` for
state ``i``'s statistic vector :math:`s_i(x)`: :math:`(1, x)` for Poisson,
:math:`(1, x - a_i, (x - a_i)^2)` or :math:`(1, x - a_i, \mathrm{vec}((x - a_i)(x -
a_i)^\top))` for Gaussians, about a reference point :math:`a_i` near the state's mean
(the learner's ``frame``, moved with the mean; see
:class:`hiddenstate.learn.online.online_em.OnlineEM`). The emission M-step is the
family's own (in Python, by the learner), so :func:`online_em_dense` takes the emission
log-likelihoods of its rows as given; so too the statistic vectors of rows that hide
something besides the state (a partly missing Gaussian row, a mixture's component), which
the learner computes as expectations under the step's parameters.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: flush the window before its decay factor ``c`` falls below this (1/c stays finite)
SCALE_FLOOR = 1e-200
#: largest supported window: ranges decompose into at most 2 * 30 tree nodes
MAX_WINDOW = 2**30


# -- small dense helpers -----------------------------------------------------------------------
@njit(cache=True)
def step_size(t, step_scale, step_exponent):
    """:math:`\\gamma_t` = ``step_scale * t**(-step_exponent)`` for observation ``t >= 1``."""
    return step_scale * float(t) ** (-step_exponent)


@njit(cache=True)
def _mm(A, B, out):
    """``out = A @ B`` (``out`` must not alias ``A`` or ``B``)."""
    n, K = out.shape
    inner = B.shape[0]
    for i in range(n):
        for j in range(K):
            acc = 0.0
            for m in range(inner):
                acc += A[i, m] * B[m, j]
            out[i, j] = acc


@njit(cache=True)
def dirichlet_map(counts, prior_a, current):
    """MAP rows in place of ``current`` (:func:`hiddenstate.families.estimate_rows` with
    ``prior_a = alpha - 1``): ``max(counts + prior_a, 0)`` on the support of ``current``,
    normalised; a row with no mass keeps its value. ``counts``/``prior_a``/``current`` are
    2-D ``(rows, K)``."""
    rows, K = current.shape
    for i in range(rows):
        total = 0.0
        for j in range(K):
            if current[i, j] != 0.0:
                v = counts[i, j] + prior_a[i, j]
                if v > 0.0:
                    total += v
        if total > 0.0:
            for j in range(K):
                v = 0.0
                if current[i, j] != 0.0:
                    v = counts[i, j] + prior_a[i, j]
                    if v < 0.0:
                        v = 0.0
                current[i, j] = v / total


@njit(cache=True)
def _filter_step(phi, startprob, transmat, b, start, pred, R, phin):
    """Prediction, retrospective kernel ``R[k', k]`` and the new filter; returns the
    normaliser (0: the observation is impossible)."""
    K = phi.shape[0]
    if start:
        for k in range(K):
            pred[k] = startprob[k]
            for kp in range(K):
                R[kp, k] = phi[kp]
    else:
        for k in range(K):
            acc = 0.0
            for kp in range(K):
                acc += phi[kp] * transmat[kp, k]
            pred[k] = acc
            if acc > 0.0:
                for kp in range(K):
                    R[kp, k] = phi[kp] * transmat[kp, k] / acc
            else:  # unreachable state: any column-stochastic value, phi_t(k) = 0
                for kp in range(K):
                    R[kp, k] = phi[kp]
    z = 0.0
    for k in range(K):
        phin[k] = pred[k] * b[k]
        z += phin[k]
    if z > 0.0:
        for k in range(K):
            phin[k] /= z
    return z


@njit(cache=True)
def _update_transitions(rho_q, R, omg, gam, start, tmp):
    """``rho_q[i, j, k] = omg * (rho_q[i, j, :] @ R)[k] + gam * [j == k] * R[i, k]``
    (``tmp``: a scratch vector of length K)."""
    K = R.shape[0]
    for i in range(K):
        for j in range(K):
            for k in range(K):
                acc = 0.0
                for m in range(K):
                    acc += rho_q[i, j, m] * R[m, k]
                tmp[k] = acc
            for k in range(K):
                rho_q[i, j, k] = omg * tmp[k]
            if not start:
                rho_q[i, j, j] += gam * R[i, j]


@njit(cache=True)
def _update_initial(rho_pi, R, omg, gam, start, tmp):
    """``rho_pi[i, k] = omg * (rho_pi[i, :] @ R)[k] + gam * [start] * [i == k]``; ``tmp``
    is a ``(K, K)`` scratch array."""
    K = R.shape[0]
    _mm(rho_pi, R, tmp)
    for i in range(K):
        for k in range(K):
            rho_pi[i, k] = omg * tmp[i, k]
        if start:
            rho_pi[i, i] += gam


@njit(cache=True)
def _transition_step(t, step_scale, step_exponent, rho_q, rho_pi, R, start, learn_start, tmp,
                     tmp_k):
    r"""The step size of observation ``t`` and the transition (and initial-state)
    auxiliaries brought to it; returns :math:`\gamma_t`."""
    gam = step_size(t, step_scale, step_exponent)
    omg = 1.0 - gam
    _update_transitions(rho_q, R, omg, gam, start, tmp)
    if learn_start:
        _update_initial(rho_pi, R, omg, gam, start, tmp_k)
    return gam


@njit(cache=True)
def _mstep_transitions(rho_q, rho_pi, phin, trans_a, start_a, learn_start, transmat,
                       startprob, Sq, Sp):
    K = phin.shape[0]
    for i in range(K):
        for j in range(K):
            acc = 0.0
            for k in range(K):
                acc += rho_q[i, j, k] * phin[k]
            Sq[i, j] = acc
    dirichlet_map(Sq, trans_a, transmat)
    if learn_start:
        for i in range(K):
            acc = 0.0
            for k in range(K):
                acc += rho_pi[i, k] * phin[k]
            Sp[0, i] = acc
        dirichlet_map(Sp, start_a.reshape(1, K), startprob.reshape(1, K))


# -- the window tree ---------------------------------------------------------------------------
@njit(cache=True)
def _decompose(lo, hi, B, nodes, right):
    """Tree nodes covering window positions ``lo .. hi`` (1-based, inclusive), in order."""
    if lo > hi:
        return 0
    n = 0
    m = 0
    left_i = lo + B - 1
    right_i = hi + B
    while left_i < right_i:
        if left_i & 1:
            nodes[n] = left_i
            n += 1
            left_i += 1
        if right_i & 1:
            right_i -= 1
            right[m] = right_i
            m += 1
        left_i >>= 1
        right_i >>= 1
    for q in range(m - 1, -1, -1):
        nodes[n] = right[q]
        n += 1
    return n


@njit(cache=True)
def _append_leaf(TP, TQ, pos, avg_on):
    """Fill the ancestors of leaf ``pos`` (1-based) that it completes (``TQ``: one tree
    per feature, ``(F, 2B, K, K)``)."""
    B = TP.shape[0] // 2
    K = TP.shape[1]
    v = B + pos - 1
    while v > 1 and (v & 1) == 1:
        par = v >> 1
        lf = v - 1
        for i in range(K):
            for j in range(K):
                acc = 0.0
                for m in range(K):
                    acc += TP[lf, i, m] * TP[v, m, j]
                TP[par, i, j] = acc
        if avg_on:
            for f in range(TQ.shape[0]):
                Q = TQ[f]
                for i in range(K):
                    for j in range(K):
                        acc = Q[lf, i, j]
                        for m in range(K):
                            acc += TP[lf, i, m] * Q[v, m, j]
                        Q[par, i, j] = acc
        v = par


@njit(cache=True)
def _advance(E, w, TP, TQ, nodes, n, avg_on, M, M2, dq):
    """``M = E[w] @ prod(TP[nodes])`` and ``dq[i] = diag(E[w] @ Q(nodes))[i]`` (``M2``:
    scratch)."""
    K = M.shape[0]
    for i in range(K):
        dq[i] = 0.0
        for j in range(K):
            M[i, j] = E[w, i, j]
    for q in range(n):
        node = nodes[q]
        if avg_on:
            for i in range(K):
                acc = 0.0
                for m in range(K):
                    acc += M[i, m] * TQ[node, m, i]
                dq[i] += acc
        _mm(M, TP[node], M2)
        M[:, :] = M2


@njit(cache=True)
def _flush(E, touch, TP, TQ, acc, bounds, cur, c, avg_on):
    """Bring every symbol's block up to date at window position ``cur``; the new window
    starts with decay 1. Feature ``f`` owns symbols ``bounds[f] .. bounds[f + 1] - 1`` and
    the averaging tree ``TQ[f]``."""
    K = E.shape[1]
    B = TP.shape[0] // 2
    nodes = np.empty(2 * 64, dtype=np.int64)
    whole = np.empty(2 * 64, dtype=np.int64)
    right = np.empty(64, dtype=np.int64)
    M = np.empty((K, K))
    M2 = np.empty((K, K))
    dq = np.empty(K)
    n_full = _decompose(1, cur, B, whole, right)
    Pf = np.eye(K)  # the pair (P, Q) of the whole window
    for q in range(n_full):
        _mm(Pf, TP[whole[q]], M2)
        Pf[:, :] = M2
    for f in range(len(bounds) - 1):
        Qf = np.zeros((K, K))
        if avg_on:
            Pq = np.eye(K)
            for q in range(n_full):
                node = whole[q]
                for i in range(K):
                    for j in range(K):
                        s = 0.0
                        for m in range(K):
                            s += Pq[i, m] * TQ[f, node, m, j]
                        Qf[i, j] += s
                _mm(Pq, TP[node], M2)
                Pq[:, :] = M2
        for w in range(bounds[f], bounds[f + 1]):
            if touch[w] == 0:
                for i in range(K):
                    for j in range(K):
                        s = 0.0
                        for m in range(K):
                            s += E[w, i, m] * Pf[m, j]
                        M[i, j] = s
                if avg_on:
                    for i in range(K):
                        s = 0.0
                        for m in range(K):
                            s += E[w, i, m] * Qf[m, i]
                        acc[w, i] += s
            else:
                n = _decompose(touch[w] + 1, cur, B, nodes, right)
                _advance(E, w, TP, TQ[f], nodes, n, avg_on, M, M2, dq)
                if avg_on:
                    for i in range(K):
                        acc[w, i] += dq[i]
                touch[w] = 0
            for i in range(K):
                for j in range(K):
                    E[w, i, j] = c * M[i, j]


def flush_window(E, touch, TP, TQ, acc, bounds, cur, c, avg_on) -> None:
    """Bring every symbol's block up to date at window position ``cur`` (``c``: the
    window's decay), in place, as the kernel does when its window is full: afterwards
    every ``touch`` is 0 and the next window may start empty (of any length) with decay
    1. ``TQ`` has the feature axis; ``bounds`` the features' first symbols and the end."""
    _flush(E, touch, TP, TQ, acc, bounds, cur, c, avg_on)


# -- categorical emissions ---------------------------------------------------------------------
@njit(cache=True)
def online_em_categorical(y, src_b, labels, starts, step_scale, step_exponent, warmup,
                          avg_start, learn_start, trans_a, start_a, emis_a, emis_A, bounds,
                          emission0, startprob, transmat, phi, rho_q, rho_pi, G, E, touch, TP,
                          TQ, acc, U, avg_trans, avg_startp, counters, scale, log_pred):
    r"""Consume the symbols ``y (N, F)`` (``starts[n]``: observation ``n`` begins a
    sequence), updating the state arrays in place.

    Feature ``f``'s symbols are the blocks ``bounds[f] .. bounds[f + 1] - 1`` (``y`` holds
    them with the offset ``bounds[f]`` added; ``-1``: missing); ``G (F, K, K)``,
    ``U (F, K)``, ``emis_A (F, K)`` and ``TQ (F, 2B or 0, K, K)`` are per feature.
    ``labels[n] >= 0`` clamps observation ``n`` to that state (``-1``: unknown).
    ``counters = [t, cur, n_avg]`` (observations seen, window position, averaged iterates),
    ``scale = [c]``. ``warmup``: the first M-step follows observation ``max(warmup, 1)``;
    ``avg_start < 0``: no averaging, else iterates ``t >= max(avg_start, warmup, 1)`` are
    averaged. ``src_b (N, K_s)``: the emission probabilities of the first ``K_s`` states,
    given (PROPS source states, :math:`f_k(y_t \mid y_{<t})`; ``K_s = 0`` for a plain HMM):
    their rows of the emission statistics are carried but never used. A missing symbol
    (``-1``) has emission probability 1 in every state and adds no emission statistic
    (the statistics still decay and follow the step's transition). Priors are
    ``alpha - 1`` (``emis_a`` zero off the support of ``emission0``, ``emis_A`` its row
    sums per feature). ``log_pred[n]`` receives :math:`\log p(y_t \mid y_{<t},
    \theta_{t-1})`, the prequential predictive log-probability of observation ``n`` (the
    filter's normaliser, before the parameters learn from it; at a labelled step that of
    the observation and its label). Returns -1, or the index of an observation of
    probability 0 (the state is then left as it was after the observation before).
    """
    N, F = y.shape
    K = transmat.shape[0]
    Ks = src_b.shape[1]
    B = TP.shape[0] // 2
    avg_on = avg_start >= 0
    first_m = max(warmup, 1)
    first_avg = max(avg_start, first_m)
    t = counters[0]
    cur = counters[1]
    n_avg = counters[2]
    c = scale[0]
    nodes = np.empty(2 * 64, dtype=np.int64)
    right = np.empty(64, dtype=np.int64)
    Ms = np.empty((F, K, K))
    M2 = np.empty((K, K))
    R = np.empty((K, K))
    tmp = np.empty(K)
    dqs = np.empty((F, K))
    b = np.empty(K)
    pred = np.empty(K)
    phin = np.empty(K)
    u = np.empty((F, K))
    v = np.empty(K)
    Sq = np.empty((K, K))
    Sp = np.empty((1, K))
    status = -1
    for n in range(N):
        start = starts[n]
        for f in range(F):  # a missing symbol (-1): no emission term, no emission statistic
            w = y[n, f]
            if w >= 0:
                # E_w up to the previous step, M = c * E_w(t-1) / c; pending averages of w
                nn = _decompose(touch[w] + 1, cur, B, nodes, right)
                _advance(E, w, TP, TQ[f], nodes, nn, avg_on, Ms[f], M2, dqs[f])
        # b_k(y_t) under theta_{t-1}: the product over the observed features
        for k in range(K):
            b[k] = 1.0
        for f in range(F):
            w = y[n, f]
            if w < 0:
                continue
            if t >= first_m:
                for k in range(K):
                    s = 0.0
                    nk = 0.0
                    for m in range(K):
                        s += Ms[f, k, m] * phi[m]
                        nk += G[f, k, m] * phi[m]
                    b[k] *= (c * s + emis_a[k, w]) / (nk + emis_A[f, k])
            else:
                for k in range(K):
                    b[k] *= emission0[k, w]
        for k in range(Ks):
            b[k] = src_b[n, k]
        lab = labels[n]
        if lab >= 0:  # clamped: every other state has emission probability 0
            for k in range(K):
                if k != lab:
                    b[k] = 0.0
        z = _filter_step(phi, startprob, transmat, b, start, pred, R, phin)
        if not z > 0.0:
            status = n
            break
        log_pred[n] = np.log(z)
        if avg_on:
            for f in range(F):
                w = y[n, f]
                if w >= 0:
                    for i in range(K):
                        acc[w, i] += dqs[f, i]
        t += 1
        gam = _transition_step(t, step_scale, step_exponent, rho_q, rho_pi, R, start,
                               learn_start, tmp, M2)
        omg = 1.0 - gam
        # G <- omg * G @ R + gam * I (the sum of the E_w: no new term for a missing symbol)
        for f in range(F):
            _mm(G[f], R, M2)
            for i in range(K):
                for j in range(K):
                    G[f, i, j] = omg * M2[i, j]
                if y[n, f] >= 0:
                    G[f, i, i] += gam
        # E_w(t) / c(t) = (E_w(t-1) / c(t-1)) @ R_t + gam / c(t) * I
        if omg > 0.0:
            c = c * omg
            keep = 1.0
        else:  # gamma_1 = 1: everything before is forgotten (the statistics were all 0)
            keep = 0.0
        for f in range(F):
            w = y[n, f]
            if w >= 0:
                for i in range(K):
                    for j in range(K):
                        s = 0.0
                        for m in range(K):
                            s += Ms[f, i, m] * R[m, j]
                        E[w, i, j] = keep * s
                    E[w, i, i] += gam / c
        # M-step
        if t >= first_m:
            _mstep_transitions(rho_q, rho_pi, phin, trans_a, start_a, learn_start, transmat,
                               startprob, Sq, Sp)
        averaging = avg_on and t >= first_avg
        if averaging:
            n_avg += 1
            for i in range(K):
                avg_startp[i] += startprob[i]
                for j in range(K):
                    avg_trans[i, j] += transmat[i, j]
            for f in range(F):
                for i in range(K):
                    s = 0.0
                    for m in range(K):
                        s += G[f, i, m] * phin[m]
                    u[f, i] = 1.0 / (s + emis_A[f, i])
                    U[f, i] += u[f, i]
                w = y[n, f]
                if w >= 0:
                    for i in range(K):
                        s = 0.0
                        for m in range(K):
                            s += E[w, i, m] * phin[m]
                        acc[w, i] += u[f, i] * (c * s)
        # the window: leaf R_t (and c_t R_t phi_t u_t^T per feature), then the symbols'
        # positions
        cur += 1
        leaf = B + cur - 1
        for i in range(K):
            for j in range(K):
                TP[leaf, i, j] = R[i, j]
        if avg_on:
            for i in range(K):
                s = 0.0
                for m in range(K):
                    s += R[i, m] * phin[m]
                v[i] = c * s
            for f in range(F):
                Q = TQ[f, leaf]
                for i in range(K):
                    for j in range(K):
                        Q[i, j] = v[i] * u[f, j] if averaging else 0.0
        _append_leaf(TP, TQ, cur, avg_on)
        for f in range(F):
            if y[n, f] >= 0:
                touch[y[n, f]] = cur
        for k in range(K):
            phi[k] = phin[k]
        if cur == B or c < SCALE_FLOOR:
            _flush(E, touch, TP, TQ, acc, bounds, cur, c, avg_on)
            cur = 0
            c = 1.0
    counters[0] = t
    counters[1] = cur
    counters[2] = n_avg
    scale[0] = c
    return status


@njit(cache=True)
def categorical_statistics(E, touch, TP, TQ, acc, bounds, phi, c, cur, avg_on, S, acc_now):
    """Materialise without changing the state: ``S[i, w]`` = the current emission
    statistic and ``acc_now[w, i]`` = the averaging sum including the window's pending
    terms (when ``avg_on``; feature ``f``'s symbols ``bounds[f] .. bounds[f + 1] - 1`` use
    its tree ``TQ[f]``)."""
    K = E.shape[1]
    B = TP.shape[0] // 2
    nodes = np.empty(2 * 64, dtype=np.int64)
    right = np.empty(64, dtype=np.int64)
    M = np.empty((K, K))
    M2 = np.empty((K, K))
    dq = np.empty(K)
    for f in range(len(bounds) - 1):
        for w in range(bounds[f], bounds[f + 1]):
            n = _decompose(touch[w] + 1, cur, B, nodes, right)
            _advance(E, w, TP, TQ[f], nodes, n, avg_on, M, M2, dq)
            for i in range(K):
                s = 0.0
                for m in range(K):
                    s += M[i, m] * phi[m]
                S[i, w] = c * s
                if avg_on:
                    acc_now[w, i] = acc[w, i] + dq[i]


# -- dense families (statistic vectors) --------------------------------------------------------
#: statistic vectors of the dense families (see :func:`online_em_dense`)
POISSON, DIAG, FULL = 0, 1, 2


@njit(cache=True)
def _dense_statistic(kind, x, a, out):
    """The statistic vector of observation ``x`` about the reference point ``a``:
    ``(1, x)`` (``POISSON``, ``a`` not used), ``(1, x - a, (x - a)**2)`` (``DIAG``) or
    ``(1, x - a, vec((x - a)(x - a)^T))`` (``FULL``)."""
    D = x.shape[0]
    out[0] = 1.0
    for d in range(D):
        out[1 + d] = x[d] if kind == POISSON else x[d] - a[d]
    if kind == DIAG:
        for d in range(D):
            out[1 + D + d] = out[1 + d] * out[1 + d]
    elif kind == FULL:
        for i in range(D):
            for j in range(D):
                out[1 + D + i * D + j] = out[1 + i] * out[1 + j]


@njit(cache=True)
def online_em_dense(loglik, X, kind, frame, given, row_stats, starts, step_scale,
                    step_exponent, warmup, avg_start, learn_start, trans_a, start_a, startprob,
                    transmat, phi, rho_q, rho_pi, rho_g, Sg, avg_trans, avg_startp, counters,
                    log_pred):
    """Consume rows with emission log-likelihoods ``loglik (N, K)`` (under the parameters
    current at each row: the caller passes one row per call once M-steps have begun) and
    observations ``X (N, D)``; state ``i``'s emission auxiliary ``rho_g[i] (P, K)``
    accumulates the statistic vector of ``kind`` about ``frame[i]`` (see
    :func:`_dense_statistic`; a missing row, all NaN, adds none: its ``loglik`` row is 0;
    statistics about a point near the data keep the centred
    second moments that raw moments of data far from the origin would cancel away).
    Where ``given[n]``, state ``i``'s new term is ``row_stats[n, i]`` instead: the
    expected statistic vector of the row given state ``i`` under the parameters of the
    step, computed by the caller (a partly missing Gaussian row: conditional moments of
    its missing dimensions; a Gaussian mixture: expectations over the component). On
    return ``Sg (K, P)`` holds the emission statistics after the last row.
    ``counters = [t, n_avg]``; ``log_pred[n]`` receives the prequential log-probability of
    row ``n`` (as in :func:`online_em_categorical`). A row's emission probabilities are
    scaled by its largest log-likelihood; if that leaves every state of positive
    prediction at probability 0 (a state the filter cannot be in beat them by more than
    ~745 nats), again by its largest among those states.
    Transition and initial-state M-steps and their averages as in
    :func:`online_em_categorical`. Returns -1 or the index of an impossible row."""
    N = loglik.shape[0]
    K = transmat.shape[0]
    P = rho_g.shape[1]
    avg_on = avg_start >= 0
    first_m = max(warmup, 1)
    first_avg = max(avg_start, first_m)
    t = counters[0]
    n_avg = counters[1]
    R = np.empty((K, K))
    tmp = np.empty(K)
    tmp_g = np.empty((K * P, K))
    tmp_k = np.empty((K, K))
    b = np.empty(K)
    pred = np.empty(K)
    phin = np.empty(K)
    Sq = np.empty((K, K))
    Sp = np.empty((1, K))
    stat = np.empty(P)
    flat_g = rho_g.reshape(K * P, K)
    status = -1
    for n in range(N):
        start = starts[n]
        top = -np.inf
        for k in range(K):
            top = max(top, loglik[n, k])
        if not top > -np.inf:
            status = n
            break
        for k in range(K):
            b[k] = np.exp(loglik[n, k] - top)
        z = _filter_step(phi, startprob, transmat, b, start, pred, R, phin)
        if not z > 0.0:  # perhaps only states the filter cannot be in set the scale
            top = -np.inf
            for k in range(K):
                if pred[k] > 0.0:
                    top = max(top, loglik[n, k])
            if top > -np.inf:
                for k in range(K):
                    b[k] = np.exp(loglik[n, k] - top) if pred[k] > 0.0 else 0.0
                z = _filter_step(phi, startprob, transmat, b, start, pred, R, phin)
        if not z > 0.0:
            status = n
            break
        log_pred[n] = np.log(z) + top
        t += 1
        gam = _transition_step(t, step_scale, step_exponent, rho_q, rho_pi, R, start,
                               learn_start, tmp, tmp_k)
        omg = 1.0 - gam
        _mm(flat_g, R, tmp_g)
        for r in range(K * P):
            for k in range(K):
                flat_g[r, k] = omg * tmp_g[r, k]
        if given[n]:
            for i in range(K):
                for p in range(P):
                    rho_g[i, p, i] += gam * row_stats[n, i, p]
        elif not np.isnan(X[n, 0]):  # a missing row (all NaN) adds no statistic
            for i in range(K):
                _dense_statistic(kind, X[n], frame[i], stat)
                for p in range(P):
                    rho_g[i, p, i] += gam * stat[p]
        if t >= first_m:
            _mstep_transitions(rho_q, rho_pi, phin, trans_a, start_a, learn_start, transmat,
                               startprob, Sq, Sp)
        if avg_on and t >= first_avg:
            n_avg += 1
            for i in range(K):
                avg_startp[i] += startprob[i]
                for j in range(K):
                    avg_trans[i, j] += transmat[i, j]
        for k in range(K):
            phi[k] = phin[k]
    for i in range(K):
        for p in range(P):
            s = 0.0
            for k in range(K):
                s += rho_g[i, p, k] * phi[k]
            Sg[i, p] = s
    counters[0] = t
    counters[1] = n_avg
    return status

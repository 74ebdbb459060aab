r"""Scaled forward-backward, forward-only scoring and sampling kernels.

Scaled recursions (Rabiner 1989, sec. V.A; Bishop PRML eq. 13.59-13.62), with
:math:`e_t(j)` the emission probability of observation *t* in state *j*:

.. math::
    c_t\,\hat\alpha_t(j) = e_t(j) \sum_i \hat\alpha_{t-1}(i) A_{ij}, \qquad
    \hat\alpha_0(j) \propto \pi_j e_0(j), \qquad \sum_j \hat\alpha_t(j) = 1,

    \hat\beta_{T-1} = 1, \qquad
    \hat\beta_t(i) = \sum_j A_{ij}\, e_{t+1}(j)\, \hat\beta_{t+1}(j) / c_{t+1},

    \log p(x_{0:T}) = \sum_t \log c_t, \qquad \gamma_t = \hat\alpha_t \hat\beta_t, \qquad
    \xi_t(i,j) = \hat\alpha_t(i) A_{ij} e_{t+1}(j) \hat\beta_{t+1}(j) / c_{t+1}.

The backward pass is fused with the accumulation of the statistics: with
:math:`u_{t+1}(j) = e_{t+1}(j)\hat\beta_{t+1}(j)/c_{t+1}`, the expected transition counts are
:math:`A \circ \sum_t \hat\alpha_t u_{t+1}^\top`, so each step costs two rank-1 updates.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

_TINY = 1e-280  # renormalise the running product of scales before it underflows
_HUGE = 1e280


def chunk_bounds(lengths: np.ndarray, max_chunks: int = 32) -> np.ndarray:
    """Split sequences into at most ``max_chunks`` contiguous groups of similar total length.

    Depends only on ``lengths``, never on the thread count, which keeps every reduction
    order (and so every result) the same for any number of threads.
    """
    n_seq = len(lengths)
    n_chunks = min(n_seq, max_chunks)
    if n_chunks <= 1:
        return np.array([0, n_seq], dtype=np.int64)
    cum = np.cumsum(lengths)
    targets = cum[-1] * np.arange(1, n_chunks) / n_chunks
    cuts = np.searchsorted(cum, targets, side="left") + 1
    out = np.unique(np.concatenate(([0], np.minimum(cuts, n_seq), [n_seq])))
    return out.astype(np.int64)


@njit(cache=True, nogil=True)
def _forward_one(startprob, transmat, emis, idx, lo, hi, alpha, inv_c):
    """Scaled forward pass over rows ``lo:hi``; fills ``alpha`` and ``inv_c``; returns log p."""
    K = startprob.shape[0]
    T = hi - lo
    row = emis[idx[lo]]
    s = 0.0
    for j in range(K):
        v = startprob[j] * row[j]
        alpha[0, j] = v
        s += v
    if s <= 0.0:
        return -np.inf
    inv = 1.0 / s
    inv_c[0] = inv
    for j in range(K):
        alpha[0, j] *= inv
    logp = 0.0
    prod = s
    for t in range(1, T):
        row = emis[idx[lo + t]]
        for j in range(K):
            alpha[t, j] = 0.0
        for i in range(K):
            a = alpha[t - 1, i]
            for j in range(K):
                alpha[t, j] += a * transmat[i, j]
        s = 0.0
        for j in range(K):
            v = alpha[t, j] * row[j]
            alpha[t, j] = v
            s += v
        if s <= 0.0:
            return -np.inf
        inv = 1.0 / s
        inv_c[t] = inv
        for j in range(K):
            alpha[t, j] *= inv
        prod *= s
        if prod < _TINY or prod > _HUGE:
            logp += np.log(prod)
            prod = 1.0
    return logp + np.log(prod)


@njit(parallel=True, cache=True)
def forward_backward(startprob, transmat, transmat_t, emis, idx, bounds, chunks, max_len,
                     by_idx, post_acc, post_dense, start_acc, trans_acc, loglik):
    """Forward-backward over all sequences, fused with the sufficient statistics.

    Parameters
    ----------
    transmat_t : the transpose of ``transmat``, C-contiguous (the backward pass reads rows).
    by_idx : if True, posteriors are summed into ``post_acc[c, idx[t]]`` (categorical
        counts, one buffer per chunk); otherwise written to ``post_dense[t]``.
    start_acc, trans_acc : per-chunk outputs ``(C, K)`` and ``(C, K, K)``; ``trans_acc``
        holds :math:`\\sum_t \\hat\\alpha_t u_{t+1}^\\top`, multiply by ``transmat``
        elementwise to get expected transition counts.
    loglik : per-sequence log-likelihood output ``(S,)``; ``-inf`` marks an impossible
        sequence, which contributes no statistics.
    """
    K = startprob.shape[0]
    n_chunks = chunks.shape[0] - 1
    for c in prange(n_chunks):
        alpha = np.empty((max_len, K))
        inv_c = np.empty(max_len)
        beta = np.empty(K)
        nbeta = np.empty(K)
        u = np.empty(K)
        for s in range(chunks[c], chunks[c + 1]):
            lo = bounds[s]
            hi = bounds[s + 1]
            T = hi - lo
            lp = _forward_one(startprob, transmat, emis, idx, lo, hi, alpha, inv_c)
            loglik[s] = lp
            if lp == -np.inf:
                continue
            for j in range(K):
                beta[j] = 1.0
            # t = T-1: gamma = alpha
            for t in range(T - 1, -1, -1):
                r = lo + t
                if by_idx:
                    acc = post_acc[c, idx[r]]
                    for j in range(K):
                        acc[j] += alpha[t, j] * beta[j]
                else:
                    for j in range(K):
                        post_dense[r, j] = alpha[t, j] * beta[j]
                if t == 0:
                    break
                row = emis[idx[r]]
                ic = inv_c[t]
                for j in range(K):
                    u[j] = row[j] * beta[j] * ic
                    nbeta[j] = 0.0
                tr = trans_acc[c]
                for i in range(K):
                    a = alpha[t - 1, i]
                    for j in range(K):
                        tr[i, j] += a * u[j]
                for j in range(K):
                    uj = u[j]
                    for i in range(K):
                        nbeta[i] += transmat_t[j, i] * uj
                for i in range(K):
                    beta[i] = nbeta[i]
            for j in range(K):
                start_acc[c, j] += alpha[0, j] * beta[j]


@njit(parallel=True, cache=True)
def forward_loglik(startprob, transmat, emis, idx, bounds, chunks, loglik):
    """Log-likelihood of each sequence by the scaled forward pass alone (O(K) memory)."""
    K = startprob.shape[0]
    n_chunks = chunks.shape[0] - 1
    for c in prange(n_chunks):
        a = np.empty(K)
        b = np.empty(K)
        for s in range(chunks[c], chunks[c + 1]):
            lo = bounds[s]
            hi = bounds[s + 1]
            row = emis[idx[lo]]
            tot = 0.0
            for j in range(K):
                v = startprob[j] * row[j]
                a[j] = v
                tot += v
            logp = 0.0
            prod = 1.0
            t = lo
            while True:
                if tot <= 0.0:
                    logp = -np.inf
                    break
                inv = 1.0 / tot
                prod *= tot
                if prod < _TINY or prod > _HUGE:
                    logp += np.log(prod)
                    prod = 1.0
                t += 1
                if t >= hi:
                    logp += np.log(prod)
                    break
                for j in range(K):
                    b[j] = 0.0
                for i in range(K):
                    ai = a[i] * inv
                    for j in range(K):
                        b[j] += ai * transmat[i, j]
                row = emis[idx[t]]
                tot = 0.0
                for j in range(K):
                    v = b[j] * row[j]
                    a[j] = v
                    tot += v
            loglik[s] = logp


@njit(cache=True)
def _draw(p, u):
    """Index drawn from unnormalised weights ``p`` with the uniform ``u`` in [0, 1)."""
    total = 0.0
    for k in range(p.shape[0]):
        total += p[k]
    target = u * total
    acc = 0.0
    last = 0
    for k in range(p.shape[0]):
        if p[k] > 0.0:
            last = k
            acc += p[k]
            if target < acc:
                return k
    return last


@njit(parallel=True, cache=True)
def sample_posterior_paths(startprob, transmat, emis, idx, bounds, chunks, max_len, uniforms,
                           states):
    """Forward-filtering backward-sampling (Chib 1996; Frühwirth-Schnatter 1994).

    Draws one path per sequence from p(z | x): z_{T-1} ~ alpha_{T-1},
    z_t ~ alpha_t(i) A[i, z_{t+1}]. ``uniforms`` has one U[0,1) draw per row, so the
    result does not depend on the thread count.
    """
    K = startprob.shape[0]
    n_chunks = chunks.shape[0] - 1
    for c in prange(n_chunks):
        alpha = np.empty((max_len, K))
        inv_c = np.empty(max_len)
        w = np.empty(K)
        for s in range(chunks[c], chunks[c + 1]):
            lo = bounds[s]
            hi = bounds[s + 1]
            T = hi - lo
            lp = _forward_one(startprob, transmat, emis, idx, lo, hi, alpha, inv_c)
            if lp == -np.inf:
                for t in range(T):
                    states[lo + t] = -1
                continue
            z = _draw(alpha[T - 1], uniforms[hi - 1])
            states[hi - 1] = z
            for t in range(T - 2, -1, -1):
                for i in range(K):
                    w[i] = alpha[t, i] * transmat[i, z]
                z = _draw(w, uniforms[lo + t])
                states[lo + t] = z


@njit(cache=True)
def sample_states(startprob, transmat, uniforms, states):
    """A Markov chain path: z_0 ~ startprob, z_t ~ transmat[z_{t-1}]."""
    z = _draw(startprob, uniforms[0])
    states[0] = z
    for t in range(1, uniforms.shape[0]):
        z = _draw(transmat[z], uniforms[t])
        states[t] = z

r"""The hot loops of a regression emission
(:class:`hiddenstate.families.LinearRegressionEmissions`): its log-likelihood table and its
sufficient statistics, over rows ``z_t = [y_t | phi_t]``.

:func:`regression_loglik`: :math:`\ell_{tk} = \log N(y_t \mid W_k\phi_t, \Sigma_k)
= c_k - \tfrac12\|L_k^{-1}(y_t - W_k\phi_t)\|^2` (:math:`L_k` the Cholesky factor of
:math:`\Sigma_k`), evaluated on the residuals, optionally scaled per row as the dense
emission table needs (:func:`~hiddenstate.kernels.shift_rows`). :func:`weighted_outer_sums`:
:math:`G_k = \sum_t \gamma_{tk}\, (z_t - c)(z_t - c)^\top` about a reference point ``c``.

Why loops: these are products with a long dimension of rows and short others ((N, P) x
(P, K); (W, N) x (N, W)). OpenBLAS's threads waited on each other for 100-200 ms on such
calls on a busy two-core machine where these loops take a few milliseconds
(benchmarks/bench_covariates.py), and fused with the row scaling the table is written once.
Every row's numbers depend on that row alone, and the statistics sum in a fixed order, so
results do not depend on the thread count.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..threads import run
from .chunks import claim

_TASK_ROWS = 4096  # rows per chunk
_ENTRY_NS = 2.0  # single-thread nanoseconds per (row, state, design entry) (measured)


def regression_loglik(Z, W, inv_chol, log_norm, scale, occupied, out, shift):
    r"""``out[t, k]`` :math:`= \ell_{tk} - s_t` for rows ``Z[t] = [y_t | phi_t]`` (``D`` =
    ``W.shape[1]`` observation columns, then the design).

    :math:`\ell_{tk}` = ``log_norm[k] - 0.5 * |inv_chol[k] @ (y_t - W[k] @ phi_t)|**2``; a
    row whose first observation column is NaN (a missing row) has :math:`\ell_{tk} = 0`.
    With ``scale``, :math:`s_t` = ``shift[t]`` :math:`= \max_k \ell_{tk}` over the states with
    ``occupied[k]`` and ``out[t, k] = -inf`` for the others; without, :math:`s_t = 0`
    (``shift``, ``occupied`` not used).
    """
    N = Z.shape[0]
    K, D, P = W.shape
    run(_regression_loglik, -(-N // _TASK_ROWS), N * K * D * (P + D) * _ENTRY_NS * 1e-9, Z, W,
        inv_chol, log_norm, scale, occupied, out, shift)


@njit(nogil=True, cache=True)
def _regression_loglik(Z, W, inv_chol, log_norm, scale, occupied, out, shift, ticket):
    """:func:`regression_loglik` of the chunks of rows this thread claims from ``ticket``."""
    N = Z.shape[0]
    K, D, P = W.shape
    r = np.empty(D)
    while True:
        task = claim(ticket)
        if task * _TASK_ROWS >= N:
            return
        for t in range(task * _TASK_ROWS, min(N, (task + 1) * _TASK_ROWS)):
            missing = np.isnan(Z[t, 0])
            top = -np.inf
            for k in range(K):
                if missing:
                    v = 0.0
                else:
                    for d in range(D):
                        acc = Z[t, d]
                        for p in range(P):
                            acc -= W[k, d, p] * Z[t, D + p]
                        r[d] = acc
                    maha = 0.0
                    for e in range(D):
                        s = 0.0
                        for d in range(e + 1):   # inv_chol is lower triangular
                            s += inv_chol[k, e, d] * r[d]
                        maha += s * s
                    v = log_norm[k] - 0.5 * maha
                if scale and not occupied[k]:
                    v = -np.inf
                out[t, k] = v
                if v > top:
                    top = v
            if scale:
                shift[t] = top
                off = top if top > -np.inf else 0.0
                for k in range(K):
                    out[t, k] -= off


def weighted_outer_sums(Z, center, post, G, n):
    """``G[k] += sum_t post[t, k] * outer(Z[t] - center, Z[t] - center)`` and ``n[k] +=
    sum_t post[t, k]`` over the rows whose first column is not NaN (``Z`` (N, W), ``post``
    (N, K), ``G`` (K, W, W)). Chunks of rows accumulate apart and are added in chunk order:
    the sums do not depend on the thread count."""
    N, W = Z.shape
    K = post.shape[1]
    M = W * (W + 1) // 2
    n_chunks = -(-N // _TASK_ROWS)
    acc = np.zeros((n_chunks, K, M))
    mass = np.zeros((n_chunks, K))
    run(_weighted_outer_sums, n_chunks, N * K * M * _ENTRY_NS * 1e-9, Z, center, post, acc,
        mass)
    total = acc.sum(axis=0) if n_chunks else np.zeros((K, M))
    n += mass.sum(axis=0) if n_chunks else 0.0
    rows, cols = np.triu_indices(W)
    G[:, rows, cols] += total
    G[:, cols, rows] = G[:, rows, cols]


@njit(nogil=True, cache=True)
def _weighted_outer_sums(Z, center, post, acc, mass, ticket):
    """:func:`weighted_outer_sums` of the chunks of rows this thread claims: chunk ``c``
    into ``acc[c]`` (K, W (W + 1) / 2: each row's upper triangle packed, formed once, then
    added to every state's, a contiguous loop the compiler vectorises) and ``mass[c]``."""
    N, W = Z.shape
    K = post.shape[1]
    M = W * (W + 1) // 2
    z = np.empty(W)
    o = np.empty(M)
    while True:
        c = claim(ticket)
        if c * _TASK_ROWS >= N:
            return
        for t in range(c * _TASK_ROWS, min(N, (c + 1) * _TASK_ROWS)):
            if np.isnan(Z[t, 0]):   # a missing row: no statistics
                continue
            for i in range(W):
                z[i] = Z[t, i] - center[i]
            m = 0
            for i in range(W):
                for j in range(i, W):
                    o[m] = z[i] * z[j]
                    m += 1
            for k in range(K):
                w = post[t, k]
                mass[c, k] += w
                for m in range(M):
                    acc[c, k, m] += w * o[m]

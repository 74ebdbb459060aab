r"""Weighted second moments of narrow rows, one matrix per state: the sufficient statistics
of a regression emission (:class:`hiddenstate.families.LinearRegressionEmissions`).

:math:`G_k = \sum_t \gamma_{tk}\, z_t z_t^\top` for rows :math:`z_t` of a few columns (an
AR(p) of a few series: 3 to 16). BLAS products of such shapes, ``(W, N) x (N, W)`` with a
long inner dimension, are where OpenBLAS threads wait on each other on a busy machine
(measured 1 ms to 200 ms for the same call); this loop takes a few milliseconds for
:math:`10^5` rows, always, and sums in a fixed order, so the result does not depend on the
thread count.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True)
def weighted_outer_sums(Z, post, G):
    """``G[k] += sum_t post[t, k] * outer(Z[t], Z[t])`` (``Z`` (N, W), ``post`` (N, K),
    ``G`` (K, W, W); the upper triangle is accumulated, then mirrored)."""
    N, W = Z.shape
    K = post.shape[1]
    for t in range(N):
        for k in range(K):
            w = post[t, k]
            if w != 0.0:
                for i in range(W):
                    zi = w * Z[t, i]
                    for j in range(i, W):
                        G[k, i, j] += zi * Z[t, j]
    for k in range(K):
        for i in range(W):
            for j in range(i + 1, W):
                G[k, j, i] = G[k, i, j]

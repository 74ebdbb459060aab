r"""Per-frame emission log-likelihood tables that are worth a compiled loop.

Diagonal Gaussian (Bishop PRML eq. 2.43 with a diagonal covariance):

.. math::
    \ell_{tk} = \log \mathcal N(x_t \mid \mu_k, \mathrm{diag}\,\sigma_k^2)
      = -\tfrac12 \Big[ D \log 2\pi + \sum_d \log \sigma_{kd}^2
                        + \sum_d (x_{td} - \mu_{kd})^2 / \sigma_{kd}^2 \Big],

evaluated directly on the differences (no expansion of the square, so no cancellation).
Rows run 8 at a time, as the lanes of one ``f64x8`` (:mod:`.simd`): each lane's numbers
are independent of its block-mates, so results do not depend on how rows are grouped into
blocks or on the thread count.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..threads import run
from .chunks import claim
from .simd import (
    LANES,
    aligned_empty,
    vfma,
    vgather,
    vload,
    vmul,
    vsplat,
    vstore,
    vsub,
    vwhere_gt,
)

_TASK_BLOCKS = 128  # blocks of 8 rows per chunk
_ENTRY_NS = 0.5  # single-thread nanoseconds per (row, state, feature) (measured)


def gaussian_diag_loglik(X, means, inv_var, log_norm, scale, occupied, out, shift):
    r"""``out[t, k]`` :math:`= \ell_{tk} - s_t`, with
    :math:`\ell_{tk}` = ``log_norm[k] - 0.5 * sum_d (X[t,d] - means[k,d])**2 * inv_var[k,d]``.

    With ``scale``, :math:`s_t` = ``shift[t]`` :math:`= \max_k \ell_{tk}` over the states
    with ``occupied[k]``, and ``out[t, k] = -inf`` for the others (the dense emission
    table's row scaling, see :func:`~hiddenstate.kernels.shift_rows`; a row that is
    ``-inf`` in every occupied state keeps ``out = -inf`` and gets ``shift = -inf``);
    without, :math:`s_t = 0`, and ``shift`` and ``occupied`` are not used. ``X``, ``out``
    and ``shift`` are C-contiguous. Chunks of ``_TASK_BLOCKS`` blocks of 8 rows.
    """
    N, D = X.shape
    K = means.shape[0]
    n_blocks = -(-N // LANES)
    run(_gaussian_diag_loglik, -(-n_blocks // _TASK_BLOCKS),
        N * K * max(D, 1) * _ENTRY_NS * 1e-9, X, means, inv_var, log_norm, scale, occupied,
        out, shift)


@njit(nogil=True, cache=True)
def _gaussian_diag_loglik(X, means, inv_var, log_norm, scale, occupied, out, shift, ticket):
    """:func:`gaussian_diag_loglik` of the chunks this thread claims from ``ticket``."""
    N, D = X.shape
    K = means.shape[0]
    n_blocks = -(-N // LANES)
    offs = np.empty(LANES, np.int64)
    xs = aligned_empty(D * LANES)  # (D, 8): column d of the block's rows
    ll = aligned_empty(K * LANES)  # (K, 8): the block's rows, transposed
    top = aligned_empty(LANES)
    while True:
        task = claim(ticket)
        if task * _TASK_BLOCKS >= n_blocks:
            return
        for blk in range(task * _TASK_BLOCKS, min(n_blocks, (task + 1) * _TASK_BLOCKS)):
            t0 = blk * LANES
            n = min(LANES, N - t0)
            for b in range(LANES):  # lanes past the last row repeat it
                offs[b] = (t0 + min(b, n - 1)) * D
            for d in range(D):
                vstore(xs, d * LANES, vgather(X, offs, d))
            m = vsplat(-np.inf)
            for k in range(K):
                acc = vsplat(0.0)
                for d in range(D):
                    diff = vsub(vload(xs, d * LANES), vsplat(means[k, d]))
                    acc = vfma(vmul(diff, diff), vsplat(inv_var[k, d]), acc)
                v = vsub(vsplat(log_norm[k]), vmul(vsplat(0.5), acc))
                if scale and not occupied[k]:
                    v = vsplat(-np.inf)
                vstore(ll, k * LANES, v)
                m = vwhere_gt(v, m, v, m)
            if scale:
                vstore(top, 0, m)
                for b in range(n):
                    shift[t0 + b] = top[b]
                m = vwhere_gt(m, vsplat(-np.inf), m, vsplat(0.0))
                for k in range(K):
                    vstore(ll, k * LANES, vsub(vload(ll, k * LANES), m))
            for b in range(n):
                for k in range(K):
                    out[t0 + b, k] = ll[k * LANES + b]

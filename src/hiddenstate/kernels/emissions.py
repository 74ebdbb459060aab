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


@njit(cache=True, error_model="numpy")
def gaussian_diag_cancelling(n, s1, s2, dead_mass, cancel, redo):
    r"""``redo[k, d]`` = state ``k`` is live (``n[k] >= dead_mass``) and its second moment
    about the statistics' reference point, :math:`r = s_2/n`, exceeds ``cancel`` times its
    centred variance :math:`r - (s_1/n)^2` (the diagonal Gaussian statistics' test for
    digits lost to cancellation); returns whether any entry is set. Entry by entry the
    arithmetic of the NumPy expression it replaces (``_resum_cancelling``)."""
    K, D = s1.shape
    anyredo = False
    for k in range(K):
        for d in range(D):
            mean = s1[k, d] / n[k]
            raw = s2[k, d] / n[k]
            r = n[k] >= dead_mass and raw > cancel * (raw - mean * mean)
            redo[k, d] = r
            anyredo = anyredo or r
    return anyredo


@njit(cache=True, error_model="numpy")
def gaussian_diag_mstep(n, shift, s1, s2, means, covars, mp, mw, cp, cw1, min_covar,
                        dead_mass, do_means, do_covars, flags):
    r"""The diagonal Gaussian M-step under scalar priors, in place on ``means`` and ``covars``.

    From statistics about reference points :math:`a` (``shift``): means
    :math:`\mu = a + (w(m_0 - a) + s_1)/(w + n)` (``do_means``); variances
    :math:`(c_0 + w(\mu - m_0)^2 + S)/\max(c_1 + n, 10^{-5})`, floored at ``min_covar``
    (``do_covars``), with :math:`S = \max(s_2 - s_1^2/n, 0) + n(s_1/n - (\mu - a))^2` the
    scatter about :math:`\mu` (0 without mass). States with ``n < dead_mass`` keep their
    values. ``flags[k]``: 1 for such a state, 2 for a live state with a variance raised to
    ``min_covar``, else 0. Entry by entry the arithmetic of ``GaussianEmissions.mstep``'s
    NumPy path (the same numbers, bit for bit).
    """
    K, D = means.shape
    for k in range(K):
        nk = n[k]
        live = nk >= dead_mass
        flags[k] = 1 if nk < dead_mass else 0
        if do_means and live:
            for d in range(D):
                a = shift[k, d]
                means[k, d] = a + (mw * (mp - a) + s1[k, d]) / (mw + nk)
        if do_covars:
            den = cw1 + nk
            if den < 1e-5:
                den = 1e-5
            low = False
            for d in range(D):
                mu = means[k, d]
                diff = mu - mp
                dd = mu - shift[k, d]
                if nk > 0:
                    mean = s1[k, d] / nk
                    centred = s2[k, d] - mean * s1[k, d]
                    if centred < 0.0:
                        centred = 0.0
                    e = mean - dd
                    scat = centred + nk * (e * e)
                else:
                    scat = 0.0
                v = (cp + (mw * (diff * diff) + scat)) / den
                if v < min_covar:
                    low = True
                    v = min_covar
                if live:
                    covars[k, d] = v
            if low and live:
                flags[k] = 2

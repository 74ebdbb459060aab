"""The log joint of given state paths, :math:`\\log p(x_s, z_s)` per sequence, read off the
kernels' emission table (Gibbs sampling records it for every drawn path)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def path_log_joint(startprob, transmat, emis, idx, log_offset, has_offset, bounds, states,
                   out):
    r"""``out[s]`` :math:`= \log\pi_{z_0} + \sum_{t\ge1}\log A_{z_{t-1}z_t} + \sum_t
    (\log e_{\mathrm{idx}[t], z_t} + o_t)` for the rows ``bounds[s] .. bounds[s + 1] - 1``
    (``o_t`` = ``log_offset[t]`` when ``has_offset``); ``-inf`` for a sequence with a state
    of -1 (no path) or a step of probability zero."""
    # the probabilities are multiplied into a running product whose log is taken when it
    # falls below 1e-150 (one log per ~several steps instead of two per step); a factor below
    # 1e-150 is added in logs at once, so that no product leaves the normal range
    for s in range(bounds.shape[0] - 1):
        lo, hi = bounds[s], bounds[s + 1]
        total = 0.0
        prod = 1.0
        prev = -1
        for t in range(lo, hi):
            z = states[t]
            if z < 0:
                total = -np.inf
                break
            p = startprob[z] if t == lo else transmat[prev, z]
            e = emis[idx[t], z]
            if p <= 0.0 or e <= 0.0:
                total = -np.inf
                break
            if p < 1e-150 or e < 1e-150:
                total += np.log(p) + np.log(e)
            else:
                prod *= p * e
                if prod < 1e-150:
                    total += np.log(prod)
                    prod = 1.0
            if has_offset:
                total += log_offset[t]
            prev = z
        out[s] = total + np.log(prod) if total > -np.inf else total

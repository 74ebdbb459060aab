"""Max-product message of a tree network's arrow (numba), for
:func:`hiddenstate.treenet.passes.max_product`."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def max_message(log_w, log_up, out, arg):
    """``out[n, i] = max_j (log_w[i, j] + log_up[n, j])`` and ``arg[n, i]`` its first
    maximiser (0 when every term is -inf), for every pattern ``n``. Serial: one call is one
    arrow, too little work to amortise starting threads."""
    N, P = out.shape
    C = log_w.shape[1]
    for n in range(N):
        for i in range(P):
            best = -np.inf
            k = 0
            for j in range(C):
                val = log_w[i, j] + log_up[n, j]
                if val > best:
                    best = val
                    k = j
            out[n, i] = best
            arg[n, i] = k

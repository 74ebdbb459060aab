"""Numba kernels of a tree network's passes (:mod:`hiddenstate.treenet.passes`): the upward
pass's product of child messages and its normalisation (scaled, so that a variable with
many children never underflows), and the max-product message of ``decode``."""

from __future__ import annotations

import numpy as np
from numba import njit

#: a row of the running product of child messages whose largest entry falls below this is
#: rescaled to a largest entry of one (the log of the factor goes into the log-evidence); a
#: product of messages that are each at least ~1e-200 can then never underflow
RESCALE_BELOW = 1e-100


@njit(cache=True)
def absorb_message(u, msg, log_norm):
    """``u[n] *= msg[n]`` for every pattern ``n``; a row whose largest entry falls below
    :data:`RESCALE_BELOW` is divided by that entry and its log added to ``log_norm[n]``
    (eq. 6 with the scale factors carried, Funk's "parallel sum of log scaling values").
    Serial: one call is one arrow."""
    N, P = u.shape
    for n in range(N):
        top = 0.0
        for i in range(P):
            x = u[n, i] * msg[n, i]
            u[n, i] = x
            if x > top:
                top = x
        if 0.0 < top < RESCALE_BELOW:  # rare: divide (1 / top overflows for subnormals)
            for i in range(P):
                u[n, i] /= top
            log_norm[n] += np.log(top)


@njit(cache=True)
def normalise_upward(u, log_norm):
    """Each row of the non-negative finite ``u`` scaled to sum to one and the log of its sum
    added to ``log_norm`` (a row of zeros stays zero and adds -inf: an impossible pattern).
    The sum is taken relative to the row's largest entry, so finite entries near the float64
    maximum (soft evidence) do not overflow."""
    N, P = u.shape
    for n in range(N):
        top = 0.0
        for i in range(P):
            if u[n, i] > top:
                top = u[n, i]
        if top == 0.0:
            log_norm[n] = -np.inf
            continue
        total = 0.0
        for i in range(P):
            x = u[n, i] / top
            u[n, i] = x
            total += x
        inv = 1.0 / total  # total is in [1, P]
        for i in range(P):
            u[n, i] *= inv
        log_norm[n] += np.log(top) + np.log(total)


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

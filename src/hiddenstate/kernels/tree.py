"""Numba kernels of a tree network's passes (:mod:`hiddenstate.treenet.passes`): the upward
pass's product of child messages (scaled, so that a variable with many children never
underflows) and the scaling of each message, the downward pass's step along one arrow, and
the max-product message of ``decode``.

A sum of products :math:`\\sum_j w_j u_j` in which a product of two positive factors falls
below the smallest normal float (it lost digits, or underflowed to zero, although both
factors are representable: soft evidence or factors near 1e-310, long products of small
messages) is recomputed from the mantissas and exponents of the factors (``frexp``),
relative to its largest product, so that every entry down to 2**-1022 of the largest keeps
its digits; the exponent goes into the log normaliser. Without such a product the plain
sum is exact to rounding."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: a row of the running product of child messages whose largest entry falls below this is
#: rescaled to a largest entry of one (the log of the factor goes into the log-evidence); a
#: product of messages that are each at least ~1e-200 can then never underflow
RESCALE_BELOW = 1e-100

#: the smallest normal float64: a product of two positive factors below it has lost digits
TINY = 2.0 ** -1022

#: the exponent returned when no product is positive
NO_PRODUCT = -(2 ** 30)

_LN2 = math.log(2.0)


@njit(cache=True)
def _product_exponent(w, u):
    """The largest binary exponent (frexp's) of the positive products ``w[j] * u[j]``, or
    :data:`NO_PRODUCT` when none is positive."""
    best = NO_PRODUCT
    for j in range(len(u)):
        if w[j] > 0.0 and u[j] > 0.0:
            e = math.frexp(w[j])[1] + math.frexp(u[j])[1]
            if e > best:
                best = e
    return best


@njit(cache=True)
def _scaled_products(w, u, shift, out):
    """``out[j] = w[j] * u[j] * 2**-shift`` formed from the mantissas, so that no product
    underflows before the scaling; returns their sum. With ``shift`` from
    :func:`_product_exponent` the largest product lies in [1/4, 1)."""
    total = 0.0
    for j in range(len(u)):
        x = 0.0
        if w[j] > 0.0 and u[j] > 0.0:
            mw, ew = math.frexp(w[j])
            mu, eu = math.frexp(u[j])
            x = math.ldexp(mw * mu, ew + eu - shift)
        out[j] = x
        total += x
    return total


@njit(cache=True)
def scale_message(msg, up, rows, log_norm):
    """Each row of the message ``msg = up @ rows.T`` whose largest entry is above one or
    below :data:`RESCALE_BELOW` divided by that entry and the log of the factor added to
    ``log_norm[n]`` (the others, the usual case, are left as they are: no rounding added to
    the log-evidence). A row whose sums involve a product
    ``rows[i, j] * up[n, j]`` below :data:`TINY` (found from the smallest positive entry of
    each column of ``rows``) is first recomputed from the mantissas and exponents of
    ``rows`` and ``up`` relative to the pattern's largest product, so it keeps its digits; a
    row with no positive product stays zero and sets ``log_norm[n] = -inf`` (an impossible
    pattern). Serial: one call is one arrow."""
    N, P = msg.shape
    C = rows.shape[1]
    col_min = np.full(C, np.inf)
    for i in range(P):
        for j in range(C):
            if 0.0 < rows[i, j] < col_min[j]:
                col_min[j] = rows[i, j]
    scratch = np.empty(C)
    for n in range(N):
        exact = False
        for j in range(C):
            if up[n, j] > 0.0 and up[n, j] * col_min[j] < TINY:
                exact = True
                break
        if exact:
            shift = NO_PRODUCT
            for i in range(P):
                shift = max(shift, _product_exponent(rows[i], up[n]))
            if shift != NO_PRODUCT:
                for i in range(P):
                    msg[n, i] = _scaled_products(rows[i], up[n], shift, scratch)
                log_norm[n] += shift * _LN2
        top = 0.0
        for i in range(P):
            if msg[n, i] > top:
                top = msg[n, i]
        if top == 0.0:  # no positive product
            log_norm[n] = -np.inf
        elif top > 1.0 or top < RESCALE_BELOW:
            for i in range(P):
                msg[n, i] /= top
            log_norm[n] += np.log(top)


@njit(cache=True)
def _rescale_small(u, n, log_norm):
    """Row ``n`` of ``u`` divided by its largest entry, and the log of that entry added to
    ``log_norm[n]``, when that entry is positive and below :data:`RESCALE_BELOW`."""
    top = 0.0
    for i in range(u.shape[1]):
        if u[n, i] > top:
            top = u[n, i]
    if 0.0 < top < RESCALE_BELOW:  # rare: divide (1 / top overflows for subnormals)
        for i in range(u.shape[1]):
            u[n, i] /= top
        log_norm[n] += np.log(top)


@njit(cache=True)
def rescale_small(u, log_norm):
    """Every row of ``u`` whose largest entry is below :data:`RESCALE_BELOW` divided by that
    entry, its log added to ``log_norm`` (evidence on a variable, before its messages are
    absorbed: products with small evidence then stay normal floats)."""
    for n in range(u.shape[0]):
        _rescale_small(u, n, log_norm)


@njit(cache=True)
def absorb_message(u, msg, log_norm):
    """``u[n] *= msg[n]`` for every pattern ``n``; a row whose largest entry falls below
    :data:`RESCALE_BELOW` is divided by that entry and its log added to ``log_norm[n]``
    (eq. 6 with the scale factors carried, Funk's "parallel sum of log scaling values").
    Serial: one call is one arrow."""
    N, P = u.shape
    for n in range(N):
        for i in range(P):
            u[n, i] *= msg[n, i]
        _rescale_small(u, n, log_norm)


@njit(cache=True)
def down_arrow(post_p, rows, up_c, post_c, counts):
    """One arrow of the downward pass, for every pattern ``n``: the child's posterior given
    the parent's state, :math:`q(c_j \\mid p_i, X) = W_{ij}\\hat c_j / \\sum_k W_{ik}\\hat c_k`
    (a distribution: it sums to one whatever the scale of ``up_c``), weighted by the
    parent's posterior ``post_p[n, i]``: ``post_c[n, j] = sum_i post_p[n, i] q(j | i)``
    (eq. 3) and ``counts[i, j] += post_p[n, i] q(j | i)`` (the expected arrow counts). A
    conditional with a product below :data:`TINY` is recomputed from mantissas and
    exponents; nothing is divided by a quantity that can be subnormal, so nothing
    overflows. A parent state of posterior zero adds nothing. Serial: one call is one
    arrow."""
    N, P = post_p.shape
    C = rows.shape[1]
    a = np.empty(C)
    for n in range(N):
        for j in range(C):
            post_c[n, j] = 0.0
        for i in range(P):
            w = post_p[n, i]
            if w == 0.0:
                continue
            total = 0.0
            exact = False
            for j in range(C):
                x = rows[i, j] * up_c[n, j]
                a[j] = x
                total += x
                if x < TINY and rows[i, j] > 0.0 and up_c[n, j] > 0.0:
                    exact = True
            if exact:
                total = _scaled_products(rows[i], up_c[n],
                                         _product_exponent(rows[i], up_c[n]), a)
            if total == 0.0:  # the upward pass gave this parent state probability zero
                continue
            f = w / total
            for j in range(C):
                x = a[j] * f
                post_c[n, j] += x
                counts[i, j] += x


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

r"""Exchange algorithm for Brown clustering (Kneser & Ney 1993; Martin, Liermann & Ney 1998).

Maximises the class-bigram log-likelihood, equivalently the average mutual information of
adjacent classes (Brown et al. 1992, eq. for :math:`I(C_1; C_2)`),

.. math::

    L = \sum_{c,d} M_{cd} \log M_{cd} - \sum_c N^l_c \log N^l_c - \sum_d N^r_d \log N^r_d,

where :math:`M_{cd}` counts bigrams with classes :math:`(c, d)` and :math:`N^l, N^r` are its
row and column sums (AMI :math:`= L / N + \log N`). Each word in turn is taken out of its
class and put in the class with the largest gain; the gain of class :math:`d` touches only
the entries of row and column :math:`d` where the word has neighbours, so a pass costs
:math:`O(\sum_w C \cdot \mathrm{nnz}_w)`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["exchange_pass"]


@njit(cache=True, inline="always")
def _f(x):
    return x * np.log(x) if x > 0.0 else 0.0


@njit(cache=True)
def exchange_pass(order, cls, rptr, rcol, rval, lptr, lcol, lval, selfc, nl, nr, M, Nl, Nr):
    """One pass over the words in ``order``; updates ``cls``, ``M``, ``Nl``, ``Nr`` in place
    and returns the number of words moved. ``r*``/``l*``: CSR right/left neighbour counts of
    every word (self-bigrams excluded, in ``selfc``); ``nl``/``nr``: each word's count as
    the left/right element of a bigram."""
    C = M.shape[0]
    r = np.zeros(C)
    lv = np.zeros(C)
    tr = np.empty(C, np.int64)
    tl = np.empty(C, np.int64)
    moved = 0
    for w in order:
        ntr = 0
        for p in range(rptr[w], rptr[w + 1]):
            e = cls[rcol[p]]
            if r[e] == 0.0:
                tr[ntr] = e
                ntr += 1
            r[e] += rval[p]
        ntl = 0
        for p in range(lptr[w], lptr[w + 1]):
            e = cls[lcol[p]]
            if lv[e] == 0.0:
                tl[ntl] = e
                ntl += 1
            lv[e] += lval[p]
        s = selfc[w]
        c = cls[w]
        # take w out of c
        for i in range(ntr):
            M[c, tr[i]] -= r[tr[i]]
        for i in range(ntl):
            M[tl[i], c] -= lv[tl[i]]
        M[c, c] -= s
        Nl[c] -= nl[w]
        Nr[c] -= nr[w]
        best = c
        best_gain = -np.inf
        for d in range(C):
            g = 0.0
            for i in range(ntr):
                e = tr[i]
                if e != d:
                    g += _f(M[d, e] + r[e]) - _f(M[d, e])
            for i in range(ntl):
                e = tl[i]
                if e != d:
                    g += _f(M[e, d] + lv[e]) - _f(M[e, d])
            g += _f(M[d, d] + r[d] + lv[d] + s) - _f(M[d, d])
            g -= _f(Nl[d] + nl[w]) - _f(Nl[d]) + _f(Nr[d] + nr[w]) - _f(Nr[d])
            if d == c:
                g += 1e-9 * (abs(g) + 1.0)  # stay unless another class is strictly better
            if g > best_gain:
                best_gain = g
                best = d
        d = best
        for i in range(ntr):
            M[d, tr[i]] += r[tr[i]]
        for i in range(ntl):
            M[tl[i], d] += lv[tl[i]]
        M[d, d] += s
        Nl[d] += nl[w]
        Nr[d] += nr[w]
        if d != c:
            cls[w] = d
            moved += 1
        for i in range(ntr):
            r[tr[i]] = 0.0
        for i in range(ntl):
            lv[tl[i]] = 0.0
    return moved

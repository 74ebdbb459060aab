r"""Viterbi decoding in log space (max-product; Rabiner 1989, sec. III.B).

.. math::
    \delta_0(j) = \log\pi_j + \log e_0(j), \qquad
    \delta_t(j) = \max_i\,[\delta_{t-1}(i) + \log A_{ij}] + \log e_t(j).

Back-pointers are stored in the narrowest integer type that holds ``K`` (``uint8`` for
``K <= 256``), one row per time step; ties go to the lowest state index.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True)
def viterbi(log_startprob, log_transmat, log_emis, idx, bounds, chunks, backptr, logprob, states):
    """Most probable path of every sequence.

    ``backptr`` is a work array ``(N, K)`` of an unsigned integer type; ``logprob`` ``(S,)``
    receives log p(x, z*) (``-inf`` if the sequence is impossible, its states set to -1).
    """
    K = log_startprob.shape[0]
    n_chunks = chunks.shape[0] - 1
    for c in prange(n_chunks):
        delta = np.empty(K)
        best = np.empty(K)
        arg = np.empty(K, dtype=np.int64)
        for s in range(chunks[c], chunks[c + 1]):
            lo = bounds[s]
            hi = bounds[s + 1]
            row = log_emis[idx[lo]]
            for j in range(K):
                delta[j] = log_startprob[j] + row[j]
            for t in range(lo + 1, hi):
                row = log_emis[idx[t]]
                for j in range(K):
                    best[j] = delta[0] + log_transmat[0, j]
                    arg[j] = 0
                for i in range(1, K):
                    d = delta[i]
                    for j in range(K):
                        v = d + log_transmat[i, j]
                        if v > best[j]:
                            best[j] = v
                            arg[j] = i
                bp = backptr[t]
                for j in range(K):
                    delta[j] = best[j] + row[j]
                    bp[j] = arg[j]
            z = 0
            m = delta[0]
            for j in range(1, K):
                if delta[j] > m:
                    m = delta[j]
                    z = j
            logprob[s] = m
            if m == -np.inf:
                for t in range(lo, hi):
                    states[t] = -1
                continue
            states[hi - 1] = z
            for t in range(hi - 1, lo, -1):
                z = backptr[t, z]
                states[t - 1] = z

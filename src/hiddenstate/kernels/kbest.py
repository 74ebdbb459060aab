r"""The k best state paths of each sequence (list Viterbi; Seshadri & Sundberg 1994).

For every time step and state, the k highest partial-path scores are kept with their
back-pointers:

.. math::
    \delta_t(j, r) = \operatorname{top}^{(r)}_{i,\,r'}\,[\delta_{t-1}(i, r') + \log A_{ij}]
                     + \log e_t(j), \qquad r = 0..k-1,

and the k best complete paths are the top k of :math:`\delta_{T-1}(j, r)` over (j, r).
Ties keep the candidate met first (lower state, then lower rank), so the list is
deterministic. Cost O(T K^2 k) time and O(T K k) memory per sequence.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..threads import run
from .chunks import claim

_STEP_NS = 3.0  # single-thread nanoseconds per (row, K**2 * k) (measured)


@njit(cache=True)
def _insert(vals, tags, k, v, tag):
    """Insert (v, tag) into the descending top-k list ``vals``/``tags`` if it belongs there."""
    if not v > vals[k - 1]:
        return
    r = k - 1
    while r > 0 and v > vals[r - 1]:
        vals[r] = vals[r - 1]
        tags[r] = tags[r - 1]
        r -= 1
    vals[r] = v
    tags[r] = tag


def kbest_paths(log_startprob, log_transmat, log_emis, idx, bounds, chunks, max_len, k,
                logprob, paths):
    """Fill ``logprob (S, k)`` with log p(x, z_r) and ``paths (k, N)`` with the k best paths.

    Entries beyond the number of paths of non-zero probability get ``-inf`` and state -1.
    """
    K = log_startprob.shape[0]
    run(_kbest_paths, len(chunks) - 1, bounds[-1] * K * K * k * _STEP_NS * 1e-9,
        log_startprob, log_transmat, log_emis, idx, bounds, chunks, max_len, k, logprob, paths)


@njit(nogil=True, cache=True)
def _kbest_paths(log_startprob, log_transmat, log_emis, idx, bounds, chunks, max_len, k,
                 logprob, paths, ticket):
    """:func:`kbest_paths` of the chunks this thread claims from ``ticket``."""
    K = log_startprob.shape[0]
    delta = np.empty((K, k))
    new = np.empty((K, k))
    back = np.empty((max_len, K, k), dtype=np.int64)  # prev_state * k + prev_rank
    fin = np.empty(k)
    fin_tag = np.empty(k, dtype=np.int64)
    while True:
        c = claim(ticket)
        if c >= chunks.shape[0] - 1:
            return
        for s in range(chunks[c], chunks[c + 1]):
            lo = bounds[s]
            hi = bounds[s + 1]
            T = hi - lo
            row = log_emis[idx[lo]]
            for j in range(K):
                for r in range(k):
                    delta[j, r] = -np.inf
                delta[j, 0] = log_startprob[j] + row[j]
            for t in range(1, T):
                row = log_emis[idx[lo + t]]
                for j in range(K):
                    for r in range(k):
                        new[j, r] = -np.inf
                        back[t, j, r] = -1
                    for i in range(K):
                        a = log_transmat[i, j]
                        for r in range(k):
                            _insert(new[j], back[t, j], k, delta[i, r] + a, i * k + r)
                for j in range(K):
                    for r in range(k):
                        delta[j, r] = new[j, r] + row[j]
            for r in range(k):
                fin[r] = -np.inf
                fin_tag[r] = -1
            for j in range(K):
                for r in range(k):
                    _insert(fin, fin_tag, k, delta[j, r], j * k + r)
            for p in range(k):
                logprob[s, p] = fin[p]
                tag = fin_tag[p]
                if fin[p] == -np.inf:
                    for t in range(T):
                        paths[p, lo + t] = -1
                    continue
                for t in range(T - 1, -1, -1):
                    j = tag // k
                    paths[p, lo + t] = j
                    if t > 0:
                        tag = back[t, j, tag % k]


@njit(cache=True)
def path_counts(paths, weights, idx, bounds, start, trans, post):
    """Weighted counts along given paths: ``paths (P, N)``, ``weights (S, P)``.

    Adds ``weights[s, p]`` to ``start[z_0]``, to ``trans[z_{t-1}, z_t]`` and to
    ``post[idx[t], z_t]`` for every path ``p`` of sequence ``s`` (state -1: skipped).
    With one path of weight 1 these are the hard (Viterbi-training) counts.
    """
    P = paths.shape[0]
    for s in range(bounds.shape[0] - 1):
        lo = bounds[s]
        hi = bounds[s + 1]
        for p in range(P):
            w = weights[s, p]
            if w == 0.0 or paths[p, lo] < 0:
                continue
            start[paths[p, lo]] += w
            post[idx[lo], paths[p, lo]] += w
            for t in range(lo + 1, hi):
                trans[paths[p, t - 1], paths[p, t]] += w
                post[idx[t], paths[p, t]] += w

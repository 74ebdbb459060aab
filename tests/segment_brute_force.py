"""Brute-force enumeration of the segmentations of one short sequence under an explicit-
duration hidden semi-Markov model: the slow, obviously-correct reference of the segment
recursion (:mod:`hiddenstate.kernels.semimarkov`).

A segmentation is a list of (state, duration) with no state following itself, durations
summing to T and each at most D; its probability is
``pi[j1] * prod_m f[j_m, d_m - 1] * A[j_m, j_m+1] * S[j_M, d_M - 1] * prod_t B[t, z_t]``
(the last segment right-censored: its survival ``S``).
"""

from __future__ import annotations

import numpy as np


def segmentations(T: int, K: int, D: int) -> list[list[tuple[int, int]]]:
    """Every segmentation of T steps into segments of at most D steps, no self-transition."""
    out: list = []

    def rec(t, prev, segs):
        if t == T:
            out.append(list(segs))
            return
        for j in range(K):
            if j == prev:
                continue
            for d in range(1, min(D, T - t) + 1):
                segs.append((j, d))
                rec(t + d, j, segs)
                segs.pop()

    rec(0, -1, [])
    return out


def enumerate_hsmm(pi, A, f, S, B) -> dict:
    """Exact quantities of one sequence with emission probabilities ``B`` (T, K).

    Returns ``loglik``, ``post`` (T, K), ``starts`` (T, K) (P(a segment of k starts at t)),
    ``complete`` and ``censored`` (K, D) (expected segments by duration), ``trans`` (K, K),
    ``start`` (K,), ``paths``: every (log-probability, states) best first, and ``filter``
    (T, K): p(z_t | x_0..t) from the prefixes.
    """
    pi, A, f, S, B = (np.asarray(a, dtype=np.float64) for a in (pi, A, f, S, B))
    T, K = B.shape
    D = f.shape[1]
    items = []
    for segs in segmentations(T, K, D):
        p = pi[segs[0][0]]
        z = []
        t = 0
        for m, (j, d) in enumerate(segs):
            p *= S[j, d - 1] if m == len(segs) - 1 else f[j, d - 1] * A[j, segs[m + 1][0]]
            for _ in range(d):
                p *= B[t, j]
                z.append(j)
                t += 1
        items.append((p, segs, z))
    Z = sum(p for p, _, _ in items)
    post, starts = np.zeros((T, K)), np.zeros((T, K))
    complete, censored = np.zeros((K, D)), np.zeros((K, D))
    trans, start = np.zeros((K, K)), np.zeros(K)
    for p, segs, z in items:
        w = p / Z
        start[segs[0][0]] += w
        t = 0
        for m, (j, d) in enumerate(segs):
            starts[t, j] += w
            if m == len(segs) - 1:
                censored[j, d - 1] += w
            else:
                complete[j, d - 1] += w
                trans[j, segs[m + 1][0]] += w
            t += d
        for t, j in enumerate(z):
            post[t, j] += w
    items.sort(key=lambda item: -item[0])
    filt = np.zeros((T, K))
    for t in range(T):
        prefix = enumerate_prefix(pi, A, f, S, B[:t + 1])
        filt[t] = prefix
    with np.errstate(divide="ignore"):
        return {"loglik": float(np.log(Z)), "post": post, "starts": starts,
                "complete": complete, "censored": censored, "trans": trans, "start": start,
                "paths": [(float(np.log(p)), np.array(z)) for p, _, z in items if p > 0],
                "filter": filt}


def enumerate_prefix(pi, A, f, S, B) -> np.ndarray:
    """p(z_{T-1} = k | x) of the sequence ``B`` (its last step: the filter)."""
    T, K = B.shape
    out = np.zeros(K)
    for segs in segmentations(T, K, f.shape[1]):
        p = pi[segs[0][0]]
        t = 0
        for m, (j, d) in enumerate(segs):
            p *= S[j, d - 1] if m == len(segs) - 1 else f[j, d - 1] * A[j, segs[m + 1][0]]
            for _ in range(d):
                p *= B[t, j]
                t += 1
        out[segs[-1][0]] += p
    return out / out.sum()

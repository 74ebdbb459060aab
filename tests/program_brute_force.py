"""Slow, obviously-correct program inference: enumerate every derivation of a goal by calling
the goal functions recursively (no tabling, no graph, no kernels; tiny goals only).

A derivation is ``(logp, steps, msws)``: ``steps`` the (goal, alternative index) pairs in
pre-order (a goal, then the derivations of its child goals left to right), ``msws`` the
switch outcomes in the same order (each goal's own outcomes before its children's), ``logp``
the sum of their log-probabilities. Everything else follows from the definitions:
P(G) = sum over derivations, the posterior of a derivation is its probability over P(G), the
expected count of an outcome is its posterior-weighted number of occurrences, the expected
uses of a sub-goal likewise, and the outside probability of a sub-goal n is
sum_D #n(D) p(D) / inside(n).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from hiddenstate.programs import Goal, Msw


def derivations(goal: Goal, logp_of, memo=None) -> list[tuple[float, tuple, tuple]]:
    """Every derivation of ``goal``; ``logp_of(msw)`` gives an outcome's log-probability."""
    memo = {} if memo is None else memo
    if goal in memo:
        return memo[goal]
    out = []
    for i, alt in enumerate(goal[0].fn(*goal[1:])):
        alt = list(alt)
        sws = tuple(m for m in alt if type(m) is Msw)
        kids = [g for g in alt if type(g) is Goal]
        partial = [(sum(logp_of(m) for m in sws), ((goal, i),), sws)]
        for kid in kids:
            sub = derivations(kid, logp_of, memo)
            partial = [(lp + klp, st + kst, ms + kms)
                       for lp, st, ms in partial for klp, kst, kms in sub]
        out.extend(partial)
    memo[goal] = out
    return out


def logsumexp(x) -> float:
    x = np.asarray(x, dtype=float)
    m = x.max()
    return float(m + np.log(np.exp(x - m).sum())) if m > -np.inf else -np.inf


def summary(goal: Goal, logp_of) -> dict:
    """log P, expected outcome counts, expected goal uses and log outside probabilities."""
    ders = derivations(goal, logp_of, memo := {})
    lps = np.array([d[0] for d in ders])
    logz = logsumexp(lps)
    post = np.exp(lps - logz)
    counts: Counter = Counter()
    uses: Counter = Counter()
    for w, (_, steps, msws) in zip(post, ders, strict=True):
        for m in msws:
            counts[m] += w
        for g, _ in steps:
            uses[g] += w
    outside = {}
    for g, u in uses.items():
        inside = logsumexp([d[0] for d in memo[g]])
        outside[g] = np.log(u) + logz - inside
    return {"logz": logz, "derivations": ders, "posterior": post, "counts": counts,
            "uses": uses, "outside": outside}

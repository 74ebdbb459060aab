r"""Passes over a compiled explanation graph (PRISM's generalised inside-outside; Sato &
Kameya 2001, and Sato & Kubota, "Viterbi training in PRISM", section 2.2).

An explanation graph is an AND/OR graph: node ``n`` (a tabled goal) is the disjunction of
its alternatives ``node_ptr[n] .. node_ptr[n + 1] - 1``; alternative ``a`` is the
conjunction of the items ``items[item_ptr[a] .. item_ptr[a + 1] - 1]``: an item ``v >= 0``
is the child node ``v``, an item ``v < 0`` the switch outcome ``~v`` (its index in the flat
parameter vector). Nodes are numbered in topological order, children before parents, so every
pass is one sweep over the arrays (upwards for inside / Viterbi / k-best, downwards for the
outside and the count passes), and the graph of many observed goals is one graph: a
sub-goal shared by several goals is computed once.

Everything is in log space (no underflow on long chains), except two quantities that need
no scaling: the probability ``cond[a]`` of an alternative given its goal, and the *expected
uses* ``uses[n]`` of the downward passes, the posterior expected number of occurrences of
node ``n`` in an explanation of the observed goals (bounded by the number of goals times the
multiplicity of ``n``):

.. math::
    \mathrm{uses}(c) = \sum_{a \ni c} \mathrm{uses}(\mathrm{head}(a))\,
                       e^{\,\mathrm{in}(a) - \mathrm{in}(\mathrm{head}(a))},\qquad
    \mathrm{counts}(\theta_{i,v}) = \sum_{a \ni \mathrm{msw}(i, v)} (\text{same weight}),

with :math:`\mathrm{in}(a) = \sum_{\mathrm{msw}(i,v)\in a}\log\theta_{i,v} + \sum_{c\in a}
\mathrm{in}(c)` and :math:`\mathrm{in}(n) = \log\sum_a e^{\mathrm{in}(a)}`. The outside
probability is :math:`\mathrm{out}(n) = \mathrm{uses}(n)\,P(G) / e^{\mathrm{in}(n)}`.

No validation happens here (see :mod:`hiddenstate.programs`).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def derivable(node_ptr, item_ptr, items, ok):
    """``ok[n]``: goal ``n`` has at least one explanation (an alternative whose child
    goals all have one); ``ok_alt`` for each alternative is returned."""
    n_nodes = node_ptr.shape[0] - 1
    ok_alt = np.zeros(item_ptr.shape[0] - 1, dtype=np.bool_)
    for n in range(n_nodes):
        any_ok = False
        for a in range(node_ptr[n], node_ptr[n + 1]):
            good = True
            for j in range(item_ptr[a], item_ptr[a + 1]):
                v = items[j]
                if v >= 0 and not ok[v]:
                    good = False
                    break
            ok_alt[a] = good
            any_ok = any_ok or good
        ok[n] = any_ok
    return ok_alt


@njit(cache=True)
def reachable(node_ptr, item_ptr, items, keep_alt, reach):
    """Mark in ``reach`` (pre-set at the roots) every node used by a kept alternative of a
    reachable node."""
    for n in range(node_ptr.shape[0] - 2, -1, -1):
        if not reach[n]:
            continue
        for a in range(node_ptr[n], node_ptr[n + 1]):
            if keep_alt[a]:
                for j in range(item_ptr[a], item_ptr[a + 1]):
                    if items[j] >= 0:
                        reach[items[j]] = True


@njit(cache=True)
def inside(logtheta, node_ptr, item_ptr, items, ins_node, cond):
    r"""Sum-product: ``ins_node[n]`` = log-sum of the probabilities of goal ``n``'s
    alternatives (``-inf``: no explanation of non-zero probability) and ``cond[a]`` =
    :math:`e^{\mathrm{in}(a) - \mathrm{in}(n)}`, the probability of alternative ``a``
    given its goal (0 under an impossible goal). Pass ``beta * log(theta)`` for the
    tempered inside of deterministic annealing."""
    for n in range(node_ptr.shape[0] - 1):
        top = -np.inf
        for a in range(node_ptr[n], node_ptr[n + 1]):
            s = 0.0
            for j in range(item_ptr[a], item_ptr[a + 1]):
                v = items[j]
                s += logtheta[~v] if v < 0 else ins_node[v]
            cond[a] = s
            if s > top:
                top = s
        if top == -np.inf:
            ins_node[n] = -np.inf
            for a in range(node_ptr[n], node_ptr[n + 1]):
                cond[a] = 0.0
            continue
        acc = 0.0
        for a in range(node_ptr[n], node_ptr[n + 1]):
            e = np.exp(cond[a] - top)
            cond[a] = e
            acc += e
        for a in range(node_ptr[n], node_ptr[n + 1]):
            cond[a] /= acc
        ins_node[n] = top + np.log(acc)


@njit(cache=True, inline="always")
def _spread(item_ptr, items, a, w, counts, uses):
    """Add weight ``w`` of alternative ``a`` to its switch outcomes and its child goals."""
    for j in range(item_ptr[a], item_ptr[a + 1]):
        v = items[j]
        if v < 0:
            counts[~v] += w
        else:
            uses[v] += w


@njit(cache=True)
def outside_counts(node_ptr, item_ptr, items, cond, uses, counts):
    """Downward pass: on entry ``uses`` holds the weight of each observed goal at its node
    (0 elsewhere); on exit the expected uses of every node. Adds the expected count of
    every switch outcome to ``counts``."""
    for n in range(node_ptr.shape[0] - 2, -1, -1):
        u = uses[n]
        if u == 0.0:
            continue
        for a in range(node_ptr[n], node_ptr[n + 1]):
            w = u * cond[a]
            if w != 0.0:
                _spread(item_ptr, items, a, w, counts, uses)


@njit(cache=True)
def viterbi(logtheta, node_ptr, item_ptr, items, vit_node, best_alt):
    """Max-product: ``vit_node[n]`` = log-probability of the most probable explanation of
    goal ``n``, ``best_alt[n]`` its alternative (the first on ties; -1 if none)."""
    for n in range(node_ptr.shape[0] - 1):
        top = -np.inf
        arg = -1
        for a in range(node_ptr[n], node_ptr[n + 1]):
            s = 0.0
            for j in range(item_ptr[a], item_ptr[a + 1]):
                v = items[j]
                s += logtheta[~v] if v < 0 else vit_node[v]
            if s > top:
                top = s
                arg = a
        vit_node[n] = top
        best_alt[n] = arg if top > -np.inf else -1


@njit(cache=True)
def viterbi_counts(item_ptr, items, best_alt, uses, counts, chosen):
    """Hard counts along the Viterbi explanations: ``uses`` holds the goal weights on entry
    and the number of uses of each node on exit; ``chosen[n]`` is the alternative taken at
    node ``n`` (-1 where the explanations do not use it)."""
    for n in range(uses.shape[0] - 1, -1, -1):
        u = uses[n]
        a = best_alt[n]
        if u == 0.0 or a < 0:
            chosen[n] = -1
            continue
        chosen[n] = a
        _spread(item_ptr, items, a, u, counts, uses)


@njit(cache=True)
def _insert_row(score, alt, rank, k, v, a, ranks_of, m):
    """Insert candidate (v, a, ranks_of[:m]) into the descending top-k list of one node."""
    if not v > score[k - 1]:
        return
    r = k - 1
    while r > 0 and v > score[r - 1]:
        score[r] = score[r - 1]
        alt[r] = alt[r - 1]
        for i in range(rank.shape[1]):
            rank[r, i] = rank[r - 1, i]
        r -= 1
    score[r] = v
    alt[r] = a
    for i in range(rank.shape[1]):
        rank[r, i] = ranks_of[i] if i < m else -1


@njit(cache=True)
def kbest(logtheta, node_ptr, item_ptr, items, k, kb_score, kb_alt, kb_rank):
    r"""The ``k`` most probable explanations (derivations) of every goal.

    ``kb_score (N, k)``: their log-probabilities in decreasing order (``-inf`` past the
    number of explanations); ``kb_alt (N, k)``: the alternative taken; ``kb_rank (N, k,
    W)``: the rank, in its child's own list, of the explanation used for each child goal of
    that alternative. An alternative's candidates are built child by child, keeping the top
    k of (candidates so far) x (child's list) at each step (Huang & Chiang 2005, alg. 1).
    Ties keep the candidate met first.
    """
    W = kb_rank.shape[2]  # the most child goals in one alternative
    cur = np.empty(k)
    cur_rank = np.empty((k, max(W, 1)), dtype=np.int64)
    nxt = np.empty(k)
    nxt_rank = np.empty((k, max(W, 1)), dtype=np.int64)
    tmp_rank = np.empty(max(W, 1), dtype=np.int64)
    for n in range(node_ptr.shape[0] - 1):
        for r in range(k):
            kb_score[n, r] = -np.inf
            kb_alt[n, r] = -1
        for a in range(node_ptr[n], node_ptr[n + 1]):
            base = 0.0
            for j in range(item_ptr[a], item_ptr[a + 1]):
                if items[j] < 0:
                    base += logtheta[~items[j]]
            if base == -np.inf:
                continue
            n_cur = 1
            cur[0] = base
            m = 0
            for j in range(item_ptr[a], item_ptr[a + 1]):
                c = items[j]
                if c < 0:
                    continue
                for r in range(k):
                    nxt[r] = -np.inf
                for i in range(n_cur):
                    for b in range(k):
                        v = cur[i] + kb_score[c, b]
                        if not v > nxt[k - 1]:
                            break  # the child's list is sorted: no later b can enter
                        for q in range(m):
                            tmp_rank[q] = cur_rank[i, q]
                        tmp_rank[m] = b
                        r = k - 1
                        while r > 0 and v > nxt[r - 1]:
                            nxt[r] = nxt[r - 1]
                            for q in range(m + 1):
                                nxt_rank[r, q] = nxt_rank[r - 1, q]
                            r -= 1
                        nxt[r] = v
                        for q in range(m + 1):
                            nxt_rank[r, q] = tmp_rank[q]
                m += 1
                n_cur = 0
                for r in range(k):
                    if nxt[r] > -np.inf:
                        cur[r] = nxt[r]
                        for q in range(m):
                            cur_rank[r, q] = nxt_rank[r, q]
                        n_cur = r + 1
                if n_cur == 0:
                    break
            for i in range(n_cur):
                _insert_row(kb_score[n], kb_alt[n], kb_rank[n], k, cur[i], a, cur_rank[i], m)


@njit(cache=True)
def kbest_counts(item_ptr, items, kb_alt, kb_rank, uses, counts):
    """Counts along given derivations: ``uses (N, k)`` holds the weight of each (goal,
    rank) derivation on entry (the observed goals' rows) and the weighted number of uses of
    each on exit; switch outcomes are added to ``counts``."""
    k = uses.shape[1]
    for n in range(uses.shape[0] - 1, -1, -1):
        for r in range(k):
            u = uses[n, r]
            a = kb_alt[n, r]
            if u == 0.0 or a < 0:
                continue
            i = 0
            for j in range(item_ptr[a], item_ptr[a + 1]):
                v = items[j]
                if v < 0:
                    counts[~v] += u
                else:
                    uses[v, kb_rank[n, r, i]] += u
                    i += 1


@njit(cache=True)
def sample_derivations(node_ptr, item_ptr, items, cond, roots, uniforms, out_node, out_alt,
                       out_ptr):
    r"""Posterior samples of explanations, one per entry of ``roots``: top-down, each goal
    occurrence takes alternative ``a`` with probability ``cond[a]`` (see :func:`inside`),
    and its child goals are expanded left to right (pre-order).

    Writes the (node, alternative) steps of sample ``s`` to ``out_node/out_alt[out_ptr[s]
    .. out_ptr[s + 1] - 1]``, one uniform per step. Returns the number of steps written, or
    -1 when ``uniforms`` or the output arrays are too short (call again with longer ones:
    the same uniforms give the same samples).
    """
    stack = np.empty(64, dtype=np.int64)
    pos = 0
    cap = out_node.shape[0]
    out_ptr[0] = 0
    for s in range(roots.shape[0]):
        top = 1
        stack[0] = roots[s]
        while top > 0:
            top -= 1
            n = stack[top]
            if pos >= cap or pos >= uniforms.shape[0]:
                return -1
            total = 0.0
            for a in range(node_ptr[n], node_ptr[n + 1]):
                total += cond[a]
            target = uniforms[pos] * total
            acc = 0.0
            chosen = -1
            for a in range(node_ptr[n], node_ptr[n + 1]):
                w = cond[a]
                if w > 0.0:
                    chosen = a
                    acc += w
                    if target < acc:
                        break
            out_node[pos] = n
            out_alt[pos] = chosen
            pos += 1
            p1 = item_ptr[chosen]
            p2 = item_ptr[chosen + 1]
            need = top + (p2 - p1)
            if need > stack.shape[0]:
                bigger = np.empty(2 * need, dtype=np.int64)
                bigger[:top] = stack[:top]
                stack = bigger
            for j in range(p2 - 1, p1 - 1, -1):  # reversed, so the first child pops first
                if items[j] >= 0:
                    stack[top] = items[j]
                    top += 1
        out_ptr[s + 1] = pos
    return pos

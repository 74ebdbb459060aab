r"""The explanation graph of a probabilistic left-corner grammar, built in compiled code.

:func:`build_graph` writes, for a batch of sentences, the AND/OR graph that the tabled
search of :func:`hiddenstate.programs.left_corner.left_corner_program` finds (same goals,
same alternatives in the same order, the same pruning of goals without explanation and of
goals no observed goal uses), directly as the arrays of
:mod:`hiddenstate.kernels.explanation_graph`, whose passes (inside, outside, Viterbi, k-best,
sampling) then run on it unchanged. Tabled search in Python costs about a second per
sentence on a treebank grammar; this builder, microseconds.

Goals of one sentence of ``n`` words (``w[i]`` the word ids), in the order they are made
(children before parents, as the passes need):

for ``L = 0 .. n - 1`` and every ``j`` with ``k = j + L <= n``: the nonterminal-corner goals
``lc(G, B, j, k)`` (slot ``slot_of[G, B]``), then the word-corner goals ``lc(G, (w[j-1],),
j, k)`` (slot ``lex_of[G, w[j-1]]``); then the goals ``goal(G, i, k)`` of span ``L + 1``;
last, ``sentence``. A goal is made only if it has an alternative whose child goals exist
(``derivable``); a second sweep keeps the goals reachable from the sentence.

Tables (from :class:`hiddenstate.grammar.left_corner.LeftCorner`): ``goal_nt[G]`` the
nonterminal of goal ``G``; ``root_goal[r]``, ``root_param[r]`` the start switch;
``first_param[G, w]`` (-1: ``w`` cannot begin ``G``); ``att_param[G] = (attach, project)``
(-1: ``G`` is not left-recursive); projections with a nonterminal corner: slot ``s``'s rules
``s_ptr[s] .. s_ptr[s + 1] - 1`` with ``s_param``, left-hand side ``s_lhs`` and the goal of
the right child ``s_right``, ``s_goal[s]`` its goal; with a word corner: ``x_ptr``,
``x_param``, ``x_lhs``.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _grow(buf, need):
    if need <= buf.shape[0]:
        return buf
    out = np.empty(max(need, 2 * buf.shape[0]), dtype=buf.dtype)
    out[:buf.shape[0]] = buf
    return out


@njit(cache=True)
def _push_alt(items, n_items, item_ptr, n_alts, rule, att, child, nxt):
    """Append the alternative ``[msw rule, msw att, child goal, lc goal]`` (-1: absent)."""
    items = _grow(items, n_items + 4)
    items[n_items] = ~rule
    n_items += 1
    if att >= 0:
        items[n_items] = ~att
        n_items += 1
    if child >= 0:
        items[n_items] = child
        n_items += 1
    if nxt >= 0:
        items[n_items] = nxt
        n_items += 1
    n_alts += 1
    item_ptr = _grow(item_ptr, n_alts + 1)
    item_ptr[n_alts] = n_items
    return items, n_items, item_ptr, n_alts


@njit(cache=True)
def _close_node(node_ptr, n_nodes, n_alts):
    """The node made of the alternatives since the last one; returns its id too."""
    n_nodes += 1
    node_ptr = _grow(node_ptr, n_nodes + 1)
    node_ptr[n_nodes] = n_alts
    return node_ptr, n_nodes, n_nodes - 1


@njit(cache=True, inline="always")
def _step(g, a, at_end, goal_nt, att_param, lc_id, slot_of, m, k):
    """How a completed ``A`` (ending at ``m``) goes on under goal ``G`` ending at ``k``:
    ``(att, nxt, ok)``: the attach-switch outcome to draw (-1: none), the ``lc(G, A, m, k)``
    node to continue with (-1: none: ``A`` is the goal), ``ok`` False if it cannot."""
    if a == goal_nt[g] and at_end:
        return att_param[g, 0], -1, True
    if m < k and (a != goal_nt[g] or att_param[g, 1] >= 0):
        nxt = _lc_node(lc_id, slot_of, g, a, m, k)
        return (att_param[g, 1] if a == goal_nt[g] else -1), nxt, nxt >= 0
    return -1, -1, False


@njit(cache=True, inline="always")
def _lc_node(lc_id, slot_of, g, a, j, k):
    """The node of ``lc(G, A, j, k)`` (-1: none)."""
    slot = slot_of[g, a]
    return lc_id[j, k, slot] if slot >= 0 else -1


@njit(cache=True)
def build_graph(words, offsets, goal_nt, root_goal, root_param, first_param, att_param,
                slot_of, s_goal, s_ptr, s_param, s_lhs, s_right, lex_of, x_ptr, x_param, x_lhs):
    """``(node_ptr, item_ptr, items, roots)`` of the sentences ``words[offsets[s] :
    offsets[s + 1]]`` (see the module docstring); ``roots[s]`` is sentence ``s``'s node,
    a node without alternatives when no derivation exists."""
    n_goals = goal_nt.shape[0]
    n_slots = s_ptr.shape[0] - 1
    # the rules whose right child is goal C: by_right[right_ptr[C] .. right_ptr[C + 1] - 1]
    # (ascending), and the slot of every rule
    right_ptr = np.zeros(n_goals + 1, dtype=np.int64)
    for r in range(s_right.shape[0]):
        right_ptr[s_right[r] + 1] += 1
    for c in range(n_goals):
        right_ptr[c + 1] += right_ptr[c]
    by_right = np.empty(s_right.shape[0], dtype=np.int64)
    fill = right_ptr[:-1].copy()
    rule_slot = np.empty(s_right.shape[0], dtype=np.int64)
    for slot in range(n_slots):
        for r in range(s_ptr[slot], s_ptr[slot + 1]):
            by_right[fill[s_right[r]]] = r
            fill[s_right[r]] += 1
            rule_slot[r] = slot
    cand = np.empty(1024, dtype=np.int64)
    node_ptr = np.zeros(1024, dtype=np.int64)
    item_ptr = np.zeros(4096, dtype=np.int64)
    items = np.empty(16384, dtype=np.int64)
    n_nodes = 0
    n_alts = 0
    n_items = 0
    roots = np.empty(offsets.shape[0] - 1, dtype=np.int64)
    for s in range(offsets.shape[0] - 1):
        w = words[offsets[s]:offsets[s + 1]]
        n = w.shape[0]
        goal_id = np.full((n + 1, n + 1, n_goals), -1, dtype=np.int64)
        lc_id = np.full((n + 1, n + 1, n_slots), -1, dtype=np.int64)
        lex_id = np.full((n + 1, n + 1, n_goals), -1, dtype=np.int64)
        # the left-to-right filter (necessary conditions for a goal to be called):
        # pred[i, G]: goal(G, i, .) may be called; corner[j, slot (G, B)]: lc(G, B, j, .)
        # may be called; shifted[j, G]: lc(G, (w[j-1],), j, .) may be called
        pred = np.zeros((n + 1, n_goals), dtype=np.bool_)
        corner = np.zeros((n + 1, n_slots), dtype=np.bool_)
        shifted = np.zeros((n + 1, n_goals), dtype=np.bool_)
        for r in range(root_goal.shape[0]):
            pred[0, root_goal[r]] = True
        for k in range(1, n + 1):
            # the shift of w[k-1] under the goals predicted at k - 1, and its projections
            for g in range(n_goals):
                x = lex_of[g, w[k - 1]]
                if not pred[k - 1, g] or first_param[g, w[k - 1]] < 0 or x < 0:
                    continue
                shifted[k, g] = True
                for r in range(x_ptr[x], x_ptr[x + 1]):
                    if x_lhs[r] != goal_nt[g] or att_param[g, 1] >= 0:
                        nxt = slot_of[g, x_lhs[r]]
                        if nxt >= 0:
                            corner[k, nxt] = True
            for j in range(k, 0, -1):
                # lc(G, B, j, k), B a nonterminal: a rule A -> B C, C over j..m. The
                # candidates (rule, m) are the rules whose right child spans some j..m,
                # taken in the program's order: by slot, then rule, then m
                n_cand = 0
                for m in range(j + 1, k + 1):
                    for c in range(n_goals):
                        if goal_id[j, m, c] >= 0:
                            cand = _grow(cand, n_cand + right_ptr[c + 1] - right_ptr[c])
                            for q in range(right_ptr[c], right_ptr[c + 1]):
                                if corner[j, rule_slot[by_right[q]]]:
                                    cand[n_cand] = by_right[q] * (n + 1) + m
                                    n_cand += 1
                order = np.sort(cand[:n_cand])
                q = 0
                while q < n_cand:
                    slot = rule_slot[order[q] // (n + 1)]
                    g = s_goal[slot]
                    first_alt = n_alts
                    while q < n_cand and rule_slot[order[q] // (n + 1)] == slot:
                        r = order[q] // (n + 1)
                        m = order[q] % (n + 1)
                        q += 1
                        att, nxt, ok = _step(g, s_lhs[r], m == k, goal_nt, att_param, lc_id,
                                             slot_of, m, k)
                        if ok:
                            items, n_items, item_ptr, n_alts = _push_alt(
                                items, n_items, item_ptr, n_alts, s_param[r], att,
                                goal_id[j, m, s_right[r]], nxt)
                    if n_alts > first_alt:
                        node_ptr, n_nodes, lc_id[j, k, slot] = _close_node(node_ptr, n_nodes,
                                                                           n_alts)
                # lc(G, (w[j-1],), j, k): a lexical rule A -> w[j-1]
                for g in range(n_goals):
                    if not shifted[j, g]:
                        continue
                    slot = lex_of[g, w[j - 1]]
                    first_alt = n_alts
                    for r in range(x_ptr[slot], x_ptr[slot + 1]):
                        att, nxt, ok = _step(g, x_lhs[r], j == k, goal_nt, att_param, lc_id,
                                             slot_of, j, k)
                        if ok:
                            items, n_items, item_ptr, n_alts = _push_alt(
                                items, n_items, item_ptr, n_alts, x_param[r], att, -1, nxt)
                    if n_alts > first_alt:
                        node_ptr, n_nodes, lex_id[j, k, g] = _close_node(node_ptr, n_nodes,
                                                                         n_alts)
                # goal(G, j - 1, k): shift w[j-1], then its word-corner goal
                for g in range(n_goals):
                    if pred[j - 1, g] and lex_id[j, k, g] >= 0:
                        items, n_items, item_ptr, n_alts = _push_alt(
                            items, n_items, item_ptr, n_alts, first_param[g, w[j - 1]], -1,
                            lex_id[j, k, g], -1)
                        node_ptr, n_nodes, goal_id[j - 1, k, g] = _close_node(
                            node_ptr, n_nodes, n_alts)
            # what ends at k: a goal C over j..k completes A -> B C for the corners B at j
            for j in range(k):
                for c in range(n_goals):
                    if goal_id[j, k, c] < 0:
                        continue
                    for q in range(right_ptr[c], right_ptr[c + 1]):
                        r = by_right[q]
                        slot = rule_slot[r]
                        if not corner[j, slot]:
                            continue
                        g = s_goal[slot]
                        if s_lhs[r] != goal_nt[g] or att_param[g, 1] >= 0:
                            nxt = slot_of[g, s_lhs[r]]
                            if nxt >= 0:
                                corner[k, nxt] = True
            # and the goals a corner at k predicts: the right children of its rules
            for slot in range(n_slots):
                if corner[k, slot]:
                    for r in range(s_ptr[slot], s_ptr[slot + 1]):
                        pred[k, s_right[r]] = True
        # sentence: the start switch, then a root goal over every word
        for r in range(root_goal.shape[0]):
            if goal_id[0, n, root_goal[r]] >= 0:
                items, n_items, item_ptr, n_alts = _push_alt(
                    items, n_items, item_ptr, n_alts, root_param[r], -1,
                    goal_id[0, n, root_goal[r]], -1)
        node_ptr, n_nodes, roots[s] = _close_node(node_ptr, n_nodes, n_alts)
    return _keep_reachable(node_ptr[:n_nodes + 1], item_ptr[:n_alts + 1], items[:n_items],
                           roots)


@njit(cache=True)
def _keep_reachable(node_ptr, item_ptr, items, roots):
    """The graph restricted to the goals the roots use, renumbered in the same order."""
    n_nodes = node_ptr.shape[0] - 1
    reach = np.zeros(n_nodes, dtype=np.bool_)
    for r in roots:
        reach[r] = True
    for n in range(n_nodes - 1, -1, -1):
        if reach[n]:
            for j in range(item_ptr[node_ptr[n]], item_ptr[node_ptr[n + 1]]):
                if items[j] >= 0:
                    reach[items[j]] = True
    new_id = np.full(n_nodes, -1, dtype=np.int64)
    kept = 0
    n_alts = 0
    n_items = 0
    for n in range(n_nodes):
        if reach[n]:
            new_id[n] = kept
            kept += 1
            n_alts += node_ptr[n + 1] - node_ptr[n]
            n_items += item_ptr[node_ptr[n + 1]] - item_ptr[node_ptr[n]]
    out_node = np.zeros(kept + 1, dtype=np.int64)
    out_alt = np.zeros(n_alts + 1, dtype=np.int64)
    out_items = np.empty(n_items, dtype=np.int32)
    q = 0
    a_out = 0
    i_out = 0
    for n in range(n_nodes):
        if not reach[n]:
            continue
        for a in range(node_ptr[n], node_ptr[n + 1]):
            for j in range(item_ptr[a], item_ptr[a + 1]):
                v = items[j]
                out_items[i_out] = new_id[v] if v >= 0 else v
                i_out += 1
            a_out += 1
            out_alt[a_out] = i_out
        q += 1
        out_node[q] = a_out
    out_roots = np.empty(roots.shape[0], dtype=np.int64)
    for s in range(roots.shape[0]):
        out_roots[s] = new_id[roots[s]]
    return out_node, out_alt, out_items, out_roots

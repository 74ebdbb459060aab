r"""The chart of a probabilistic left-corner grammar: its explanation graph, or its inside
and Viterbi values directly.

:func:`chart` fills, for a batch of sentences, the cells of the program of
:func:`hiddenstate.programs.left_corner.left_corner_program` bottom-up, with one of three
uses (``mode``):

- ``GRAPH`` writes the AND/OR graph of the cells as the arrays of
  :mod:`hiddenstate.kernels.explanation_graph`, whose passes (inside, outside, Viterbi,
  k-best, sampling) then run on it unchanged; :func:`build_graph` prunes it to the goals
  the sentences use, which is the graph the tabled search of the program finds (same goals,
  same alternatives in the same order; tested). Learning runs on that graph.
- ``INSIDE`` and ``VITERBI`` compute each cell's log inside probability, or its Viterbi
  log-probability and choice, as the cell is made, and write no graph: a sentence's
  log-probability, or its best derivation. Only cells of non-zero probability are made.

The cells of one sentence of ``n`` words (``w[i]`` the word ids): ``goal(G, i, k)`` (goal
``G`` derives words ``i .. k - 1``), ``lc(G, B, j, k)`` (a nonterminal ``B`` is complete and
ends at ``j``, the goal ``G`` ends at ``k``; ``(G, B)`` is a *slot*, ``slot_of[G, B]``) and
``lc(G, (w[j-1],), j, k)`` (the word ``w[j-1]`` was shifted for goal ``G``). They are made in
this order (children before parents): for ``k = 1 .. n`` and ``j = k .. 1``: the cells
``lc(G, B, j, k)`` by slot, the cells ``lc(G, (w[j-1],), j, k)`` by goal, the cells
``goal(G, j - 1, k)`` by goal; last, ``sentence``. The alternatives of ``lc(G, B, j, k)``
are the rules ``A -> B C`` of its slot in order, each with every end ``m`` of ``C`` (``j <
m <= k``) in increasing order: ``goal(C, j, m)``, then attach (``A = G``, ``m = k``) or
``lc(G, A, m, k)``. A cell is made only if it has an alternative whose cells exist.

How the alternatives are found, each once, without scanning the grammar per cell:

- a left-to-right filter (necessary conditions for a cell to be called, from the words
  before it): at position ``k``, a slot ``(G, A)`` is *live* when a corner ``A`` may end at
  ``k`` under ``G`` (a shift of ``w[k-1]``, or a completion below) and one of its rules
  has a right child that can begin with ``w[k]``; ``goal(C, k, .)`` is called only for the
  right children of live rules (``pred``);
- when ``goal(C, j, k)`` is made, the live rules ``A -> B C`` at ``j`` (listed by right
  child) complete: the alternative ``(rule, k)`` of ``lc(G, B, j, k)`` if ``A`` is the
  goal, and, when ``A`` may go on up the spine, a *completion* kept with the slot ``(G, A)``
  at ``k``;
- when a cell ``lc(G, A, m, k)`` is made, each completion kept with its slot at ``m``
  becomes the alternative ``(rule, m)`` of its cell ``lc(G, B, j, k)`` (``j < m``, made
  later in the step). ``GRAPH`` collects them per cell and orders them by a stable counting
  sort (rules are numbered by slot; the completions come in increasing ``m``); the value
  modes add them at once to the cell's running log-sum or maximum (ties to the first in
  the graph's order, by rule then ``m``), so a cell's value is known when it is made.

The work is proportional to the alternatives and completions the filter lets through:
O(n^3) per sentence times the rules of a slot, as for CKY, with the PLCG's rules
conditioned on the goal (many more than the PCFG's; see ``docs/plcg.md``).

Tables (from :class:`hiddenstate.grammar.left_corner.LeftCorner`, built once per grammar):
``goal_nt[G]`` the nonterminal of goal ``G``; ``root_goal[r]``, ``root_param[r]`` the start
switch; ``first_param[G, w]`` (-1: ``w`` cannot begin ``G``); ``att_param[G] = (attach,
project)`` (-1: ``G`` is not left-recursive); projections with a nonterminal corner: slot
``s``'s rules ``s_ptr[s] .. s_ptr[s + 1] - 1`` with ``s_param``, the goal of the right child
``s_right``, ``s_slot`` the slot of each rule and ``s_rank`` its rank there, ``s_next`` the
slot ``(G, A)`` its left-hand side goes on with (-1: it cannot), ``s_proj`` the attach
outcome drawn then (-1: none), ``s_done`` the attach outcome when ``A`` completes the goal
(-2: ``A`` is not the goal, -1: no switch); with a word corner: ``lex_of[G, w]``,
``x_ptr``, ``x_param``, ``x_lhs``, and ``lex_alts[w]`` the number of such rules over every
goal.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: what :func:`chart` does with the cells: write the explanation graph, or compute every
#: cell's inside log-probability, or its Viterbi log-probability and derivation
GRAPH, INSIDE, VITERBI = 0, 1, 2
LIVE, DEAD = 1, 2


@njit(cache=True)
def _grow(buf, need):
    """``buf``, or a copy at least twice as long when it is shorter than ``need``."""
    if need <= buf.shape[0]:
        return buf
    out = np.empty(max(need, 2 * buf.shape[0]), dtype=buf.dtype)
    out[:buf.shape[0]] = buf
    return out


@njit(cache=True)
def _grow_rows(buf, need):
    """:func:`_grow` along the rows of a 2-d array."""
    if need <= buf.shape[0]:
        return buf
    out = np.empty((max(need, 2 * buf.shape[0]), buf.shape[1]), dtype=buf.dtype)
    out[:buf.shape[0]] = buf
    return out


@njit(cache=True, inline="always")
def _push_alt(items, n_items, item_ptr, n_alts, rule, att, child, nxt):
    """Write the alternative ``[msw rule, msw att, child goal, lc goal]`` (-1: absent);
    returns ``(n_items, n_alts)``. The caller has made room for it."""
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
    item_ptr[n_alts] = n_items
    return n_items, n_alts


@njit(cache=True, inline="always")
def _alt_score(logtheta, val, rule, att, child, nxt):
    """The log-probability of an alternative, summed in the order of its items (as
    :func:`hiddenstate.kernels.explanation_graph.inside` does)."""
    s = 0.0
    s += logtheta[rule]
    if att >= 0:
        s += logtheta[att]
    if child >= 0:
        s += val[child]
    if nxt >= 0:
        s += val[nxt]
    return s


@njit(cache=True, inline="always")
def _node_value(mode, sc, n_alt):
    """``(value, best)`` of a cell whose alternatives score ``sc[:n_alt]``: the log-sum
    (:func:`hiddenstate.kernels.explanation_graph.inside`'s arithmetic) or the maximum
    (:func:`~hiddenstate.kernels.explanation_graph.viterbi`'s), and the first best
    alternative (-1 if every one has probability zero)."""
    top = -np.inf
    arg = -1
    for a in range(n_alt):
        if sc[a] > top:
            top = sc[a]
            arg = a
    if mode == VITERBI or top == -np.inf:
        return top, arg
    acc = 0.0
    for a in range(n_alt):
        acc += np.exp(sc[a] - top)
    return top + np.log(acc), arg


@njit(cache=True, inline="always")
def _lse_add(top, acc, v):
    """``(top, acc)`` of the running log-sum ``top + log(acc)`` once ``e^v`` is added
    (``v > -inf``), rescaled when ``v`` is the largest term yet."""
    if v > top:
        return v, acc * np.exp(top - v) + 1.0
    return top, acc + np.exp(v - top)


@njit(cache=True)
def chart(mode, logtheta, words, offsets, goal_nt, root_goal, root_param, first_param,
          att_param, slot_of, s_ptr, s_param, s_right, s_slot, s_rank, s_next, s_proj, s_done,
          lex_of, x_ptr, x_param, x_lhs, lex_alts):
    """The left-corner chart of the sentences ``words[offsets[s] : offsets[s + 1]]`` (see
    the module docstring). Returns ``(node_ptr, item_ptr, items, roots, score, deriv_ptr,
    deriv)``, with ``mode``:

    - ``GRAPH``: the explanation graph of every cell (``node_ptr``, ``item_ptr``,
      ``items``; not pruned: see :func:`build_graph`), ``roots[s]`` sentence ``s``'s node
      (a node without alternatives when no derivation exists);
    - ``INSIDE``: ``score[s]``, the log-probability of sentence ``s`` under ``logtheta``
      (``-inf``: none). Each alternative's log-probability is summed as the inside pass
      on the graph sums it; a cell's alternatives are added in one pass, rescaled as a
      larger one comes (the graph's pass takes their maximum first), so the two agree to
      rounding;
    - ``VITERBI``: ``score[s]``, the log-probability of sentence ``s``'s most probable
      derivation (the first in the graph's order on ties, as the Viterbi pass on the
      graph finds it, the same number), and its flat parameters ``deriv[deriv_ptr[s] :
      deriv_ptr[s + 1]]`` in derivation order (none where the score is ``-inf``).

    The value modes make only the cells of non-zero probability, and no graph.
    """
    n_goals = goal_nt.shape[0]
    n_slots = s_ptr.shape[0] - 1
    n_sent = offsets.shape[0] - 1
    n_roots = root_goal.shape[0]
    max_rank = 0
    for slot in range(n_slots):
        max_rank = max(max_rank, s_ptr[slot + 1] - s_ptr[slot])
    graph = mode == GRAPH
    # the graph (GRAPH), or the cells' values and Viterbi choices (numbered per sentence)
    node_ptr = np.zeros(1024 if graph else 1, dtype=np.int64)
    item_ptr = np.zeros(4096 if graph else 1, dtype=np.int64)
    items = np.empty(16384 if graph else 1, dtype=np.int32)
    val = np.empty(1024, dtype=np.float64)
    back = np.empty((1024 if mode == VITERBI else 1, 4), dtype=np.int64)
    sc = np.empty(max(1024, n_roots), dtype=np.float64)
    score = np.full(n_sent, -np.inf)
    roots = np.empty(n_sent, dtype=np.int64)
    deriv = np.empty(1024, dtype=np.int64)
    deriv_ptr = np.zeros(n_sent + 1, dtype=np.int64)
    n_nodes = 0
    n_alts = 0
    n_items = 0
    n_deriv = 0
    # GRAPH: the candidate alternatives of a cell, and their order
    cand = np.empty((1024, 4), dtype=np.int64)     # rule, att, nxt, child
    order = np.empty(1024, dtype=np.int64)
    spare = np.empty(1024, dtype=np.int64)
    tally = np.zeros(max_rank + 1, dtype=np.int64)
    bucket = np.empty((4096 if graph else 1, 5), dtype=np.int64)  # + the next entry
    # values: the cells being accumulated
    acc_top = np.empty(1024, dtype=np.float64)
    acc_sum = np.empty(1024 if mode == INSIDE else 1, dtype=np.float64)
    acc_key = np.empty(1024 if mode == VITERBI else 1, dtype=np.int64)
    acc_back = np.empty((1024 if mode == VITERBI else 1, 2), dtype=np.int64)
    # (values) each projection rule's log-weight with its attach switch when its
    # left-hand side completes the goal (-inf: it does not) and when it goes on
    w_done = np.full(s_param.shape[0] if not graph else 0, -np.inf)
    w_proj = np.empty(s_param.shape[0] if not graph else 0)
    for r in range(w_proj.shape[0]):
        if s_done[r] > -2:
            w_done[r] = _alt_score(logtheta, val, s_param[r], s_done[r], -1, -1)
        w_proj[r] = _alt_score(logtheta, val, s_param[r], s_proj[r], -1, -1)
    count = np.zeros(n_goals + 1, dtype=np.int64)
    starts = np.zeros(n_goals, dtype=np.bool_)
    # the live rules: rule, the accumulator of its cell, s_next; (values) its log-weights
    # w_done, w_proj
    live = np.empty((4096, 3), dtype=np.int64)
    live_w = np.empty((4096 if not graph else 1, 2), dtype=np.float64)
    lc_node = np.empty(4096, dtype=np.int64)
    # the completions of step k: j (GRAPH) or the accumulator of the cell they are an
    # alternative of (values), rule, node of C, the slot's previous one (chain[slot]: its
    # newest); (values) the alternative's log-weight without the cell it goes on with.
    # Once step k is done, they are gathered by slot into subs and subs_w
    ends = np.empty((4096, 4), dtype=np.int64)
    ends_w = np.empty(4096 if not graph else 1, dtype=np.float64)
    chain = np.full(n_slots, -1, dtype=np.int64)
    subs = np.empty((4096, 3), dtype=np.int64)
    subs_w = np.empty(4096 if not graph else 1)
    sub_ptr = np.empty(1024, dtype=np.int64)
    state = np.zeros(n_slots, dtype=np.int8)      # at step k: 0 unseen, LIVE, DEAD
    touched = np.empty(n_slots, dtype=np.int64)
    live_slots = np.empty(n_slots, dtype=np.int64)
    stack = np.empty(64, dtype=np.int64)
    root_of = np.empty(n_roots, dtype=np.int64)
    # the graph grows about as the cube of the sentence lengths: room for all of it, as
    # estimated from the sentences done, saves copies
    cubes = 0.0
    for s in range(n_sent):
        cubes += float(offsets[s + 1] - offsets[s]) ** 3
    done = 0.0
    for s in range(n_sent):
        w = words[offsets[s]:offsets[s + 1]]
        n = w.shape[0]
        if graph and done > 0.0:
            grow = 1.1 * cubes / done
            if n_items * grow > items.shape[0]:
                items = _grow(items, int(n_items * grow))
                item_ptr = _grow(item_ptr, int(n_alts * grow) + 1)
                node_ptr = _grow(node_ptr, int(n_nodes * grow) + 1)
        done += float(n) ** 3
        if not graph:
            n_nodes = 0
        goal_id = np.full((n + 1, n + 1, n_goals), -1, dtype=np.int64)
        lex_id = np.full((n + 1, n + 1, n_goals), -1, dtype=np.int64)
        # the filter: pred[i, G]: goal(G, i, .) may be called; shift_goal[j, :n_shift[j]]:
        # the goals G with lc(G, (w[j-1],), j, .) callable; the slots met during step k:
        # touched[:n_touched] (state), the live ones live_slots[:n_found]
        pred = np.zeros((n + 1, n_goals), dtype=np.bool_)
        shift_goal = np.empty((n + 1, n_goals), dtype=np.int64)
        n_shift = np.zeros(n + 1, dtype=np.int64)
        # position j, once complete (the end of step k = j): loc_of[j, slot] the rank of a
        # live slot (-1: not live), n_live[j] how many; the node of lc(G, B, j, k) at
        # lc_node[lc_base[j] + (k - j - 1) * n_live[j] + loc_of[j, slot]] (-1: none); the
        # live rules by right child C: rows live_ptr[j, C] .. live_ptr[j, C + 1] - 1 of
        # live; the completions A -> B C, C over j'..j, whose A goes on as the live slot of
        # rank l at j: rows sub_ptr[sub_base[j] + l] .. sub_ptr[sub_base[j] + l + 1] - 1 of
        # subs; the cell lc(G, B, j, k) being accumulated (values) at acc_base[j] + its rank
        loc_of = np.full((n + 1, n_slots), -1, dtype=np.int64)
        n_live = np.zeros(n + 1, dtype=np.int64)
        lc_base = np.zeros(n + 1, dtype=np.int64)
        live_ptr = np.zeros((n + 1, n_goals + 1), dtype=np.int64)
        sub_base = np.zeros(n + 1, dtype=np.int64)
        acc_base = np.zeros(n + 2, dtype=np.int64)
        head = np.empty(n + 1, dtype=np.int64)      # bucket j's last entry (-1: empty)
        size = np.empty(n + 1, dtype=np.int64)      # and its number of entries
        n_lc = 0
        n_live_rules = 0
        n_heads = 0
        n_ends = 0
        n_subs = 0
        for r in range(n_roots):
            pred[0, root_goal[r]] = True
        for k in range(n + 1):
            # the goals that can begin at k (with w[k]); a slot (G, A) is live at k when a
            # corner A may end at k and a rule of the slot has such a right child (else
            # lc(G, A, k, .) has no alternative)
            for c in range(n_goals):
                starts[c] = k < n and first_param[c, w[k]] >= 0 and lex_of[c, w[k]] >= 0
            n_found = 0
            n_touched = 0
            if k > 0:
                # the shift of w[k-1] under the goals predicted at k - 1, and its projections
                for g in range(n_goals):
                    x = lex_of[g, w[k - 1]]
                    if not pred[k - 1, g] or first_param[g, w[k - 1]] < 0 or x < 0:
                        continue
                    shift_goal[k, n_shift[k]] = g
                    n_shift[k] += 1
                    for r in range(x_ptr[x], x_ptr[x + 1]):
                        if x_lhs[r] != goal_nt[g] or att_param[g, 1] >= 0:
                            nxt = slot_of[g, x_lhs[r]]
                            if nxt >= 0 and state[nxt] == 0:
                                touched[n_touched] = nxt   # first met at k: live or dead
                                n_touched += 1
                                state[nxt] = DEAD
                                for rr in range(s_ptr[nxt], s_ptr[nxt + 1]):
                                    if starts[s_right[rr]]:
                                        state[nxt] = LIVE
                                        live_slots[n_found] = nxt
                                        n_found += 1
                                        break
            # the cells ending at k, by decreasing start. The alternatives (rule A -> B C,
            # m) of lc(G, B, j, k) come from the completions at j (C over j..m): A is the
            # goal (m = k), or lc(G, A, m, k) exists (m < k; offered when that cell is made)
            if graph:
                head[:k + 1] = -1
                size[:k + 1] = 0
                n_bucket = 0
            else:
                acc_top[:acc_base[k]] = -np.inf
                if mode == INSIDE:
                    acc_sum[:acc_base[k]] = 0.0
            for j in range(k, 0, -1):
                n_cand = 0
                if graph:   # bucket j, newest first: increasing m for each rule
                    cand = _grow_rows(cand, size[j])
                    e = head[j]
                    while e >= 0:
                        cand[n_cand, 0] = bucket[e, 0]
                        cand[n_cand, 1] = bucket[e, 1]
                        cand[n_cand, 2] = bucket[e, 2]
                        cand[n_cand, 3] = bucket[e, 3]
                        n_cand += 1
                        e = bucket[e, 4]
                # what ends at k: a goal C over j..k completes A -> B C for the live B at j:
                # the alternative (rule, k) of lc(G, B, j, k) if A is the goal; and A is live
                # at k (its slot (G, A)) when it may go on up the spine: the completion is
                # chained to the slot, to be offered to lc(G, B, j, k') as the alternative
                # (rule, k) when the cell lc(G, A, k, k') is made
                for c in range(n_goals if j < k else 0):
                    child = goal_id[j, k, c]
                    if child < 0:
                        continue
                    lo = live_ptr[j, c]
                    hi = live_ptr[j, c + 1]
                    if n_ends + hi - lo > ends.shape[0]:
                        ends = _grow_rows(ends, n_ends + hi - lo)
                        ends_w = _grow(ends_w, ends.shape[0])
                    if graph and n_cand + hi - lo > cand.shape[0]:
                        cand = _grow_rows(cand, n_cand + hi - lo)
                    vc = 0.0 if graph else val[child]
                    for q in range(lo, hi):
                        r = live[q, 0]
                        if graph:
                            if s_done[r] > -2:
                                cand[n_cand, 0] = r
                                cand[n_cand, 1] = s_done[r]
                                cand[n_cand, 2] = -1
                                cand[n_cand, 3] = child
                                n_cand += 1
                            part = 0.0
                        else:   # the sums in the order of _alt_score's
                            v = live_w[q, 0] + vc
                            if v > -np.inf:   # an alternative (rule, k) of its cell t
                                t = live[q, 1]
                                if mode == INSIDE:
                                    acc_top[t], acc_sum[t] = _lse_add(acc_top[t], acc_sum[t], v)
                                elif v > acc_top[t] or (v == acc_top[t]
                                                        and r * (n + 1) + k < acc_key[t]):
                                    acc_top[t] = v
                                    acc_key[t] = r * (n + 1) + k
                                    acc_back[t, 0] = child
                                    acc_back[t, 1] = -1
                            part = live_w[q, 1] + vc
                        nxt = live[q, 2]
                        if nxt < 0 or part == -np.inf:
                            continue
                        if state[nxt] == 0:
                            touched[n_touched] = nxt   # first met at k: live or dead
                            n_touched += 1
                            state[nxt] = DEAD
                            for rr in range(s_ptr[nxt], s_ptr[nxt + 1]):
                                if starts[s_right[rr]]:
                                    state[nxt] = LIVE
                                    live_slots[n_found] = nxt
                                    n_found += 1
                                    break
                        if state[nxt] != LIVE:
                            continue
                        ends[n_ends, 0] = j if graph else live[q, 1]
                        ends[n_ends, 1] = r
                        ends[n_ends, 2] = child
                        ends[n_ends, 3] = chain[nxt]
                        chain[nxt] = n_ends
                        if not graph:
                            ends_w[n_ends] = part
                        n_ends += 1
                # room for every alternative and node of the step
                most = n_cand + lex_alts[w[j - 1]] + n_live[j] + n_goals
                if graph:
                    items = _grow(items, n_items + 4 * most)
                    item_ptr = _grow(item_ptr, n_alts + most + 1)
                    node_ptr = _grow(node_ptr, n_nodes + most + 1)
                else:
                    val = _grow(val, n_nodes + most)
                    sc = _grow(sc, most)
                    if mode == VITERBI:
                        back = _grow_rows(back, n_nodes + most)
                # the cells lc(G, B, j, k), B a nonterminal, by slot
                if graph:
                    # their alternatives in the program's order: by rule, then m. The
                    # candidates are in increasing m for each rule; a stable counting sort
                    # by the rule's rank in its slot, then by the slot's rank at j, orders
                    # them (rules are numbered by slot, slots ranked in their order)
                    order = _grow(order, n_cand)
                    spare = _grow(spare, n_cand)
                    tally = _grow(tally, n_live[j] + 1)
                    tally[:max_rank + 1] = 0
                    for e in range(n_cand):
                        tally[s_rank[cand[e, 0]] + 1] += 1
                    for i in range(max_rank):
                        tally[i + 1] += tally[i]
                    for e in range(n_cand):
                        i = s_rank[cand[e, 0]]
                        spare[tally[i]] = e
                        tally[i] += 1
                    tally[:n_live[j] + 1] = 0
                    for e in range(n_cand):
                        tally[loc_of[j, s_slot[cand[e, 0]]] + 1] += 1
                    for i in range(n_live[j]):
                        tally[i + 1] += tally[i]
                    for q in range(n_cand):
                        e = spare[q]
                        i = loc_of[j, s_slot[cand[e, 0]]]
                        order[tally[i]] = e
                        tally[i] += 1
                q = 0
                loc = -1
                while True:
                    if graph:
                        if q == n_cand:
                            break
                        slot = s_slot[cand[order[q], 0]]
                        while q < n_cand and s_slot[cand[order[q], 0]] == slot:
                            e = order[q]
                            q += 1
                            items[n_items] = ~s_param[cand[e, 0]]
                            n_items += 1
                            if cand[e, 1] >= 0:
                                items[n_items] = ~cand[e, 1]
                                n_items += 1
                            items[n_items] = cand[e, 3]
                            n_items += 1
                            if cand[e, 2] >= 0:
                                items[n_items] = cand[e, 2]
                                n_items += 1
                            n_alts += 1
                            item_ptr[n_alts] = n_items
                        node_ptr[n_nodes + 1] = n_alts
                        loc = loc_of[j, slot]
                    else:
                        loc += 1
                        if j == k or loc == n_live[j]:
                            break
                        t = acc_base[j] + loc
                        if acc_top[t] == -np.inf:
                            continue
                        if mode == INSIDE:
                            val[n_nodes] = acc_top[t] + np.log(acc_sum[t])
                        else:
                            val[n_nodes] = acc_top[t]
                            r = acc_key[t] // (n + 1)
                            back[n_nodes, 0] = s_param[r]
                            back[n_nodes, 1] = (s_done[r] if acc_key[t] % (n + 1) == k
                                                else s_proj[r])
                            back[n_nodes, 2] = acc_back[t, 0]
                            back[n_nodes, 3] = acc_back[t, 1]
                    node = n_nodes
                    n_nodes += 1
                    lc_node[lc_base[j] + (k - j - 1) * n_live[j] + loc] = node
                    # the alternatives (rule, j) of the cells lc(G', B', j', k) that go on
                    # with this one
                    vn = 0.0 if graph else val[node]
                    for f in range(sub_ptr[sub_base[j] + loc], sub_ptr[sub_base[j] + loc + 1]):
                        jj = subs[f, 0]
                        r = subs[f, 1]
                        if graph:
                            if n_bucket == bucket.shape[0]:
                                bucket = _grow_rows(bucket, n_bucket + 1)
                            bucket[n_bucket, 0] = r
                            bucket[n_bucket, 1] = s_proj[r]
                            bucket[n_bucket, 2] = node
                            bucket[n_bucket, 3] = subs[f, 2]
                            bucket[n_bucket, 4] = head[jj]
                            head[jj] = n_bucket
                            size[jj] += 1
                            n_bucket += 1
                        else:   # the alternative (rule, j) of the cell accumulated at jj
                            v = subs_w[f] + vn
                            if mode == INSIDE:
                                acc_top[jj], acc_sum[jj] = _lse_add(acc_top[jj], acc_sum[jj], v)
                            elif v > acc_top[jj] or (v == acc_top[jj]
                                                     and r * (n + 1) + j < acc_key[jj]):
                                acc_top[jj] = v
                                acc_key[jj] = r * (n + 1) + j
                                acc_back[jj, 0] = subs[f, 2]
                                acc_back[jj, 1] = node
                # lc(G, (w[j-1],), j, k): a lexical rule A -> w[j-1] (its alternatives in
                # rule order: the first best on ties)
                for i in range(n_shift[j]):
                    g = shift_goal[j, i]
                    x = lex_of[g, w[j - 1]]
                    n_alt = 0
                    top = -np.inf
                    acc = 0.0
                    for r in range(x_ptr[x], x_ptr[x + 1]):
                        a = x_lhs[r]
                        if a == goal_nt[g] and j == k:
                            att = att_param[g, 0]
                            nxt = -1
                        elif j < k and (a != goal_nt[g] or att_param[g, 1] >= 0):
                            att = att_param[g, 1] if a == goal_nt[g] else -1
                            nxt = slot_of[g, a]
                            if nxt < 0 or loc_of[j, nxt] < 0:
                                continue
                            nxt = lc_node[lc_base[j] + (k - j - 1) * n_live[j]
                                          + loc_of[j, nxt]]
                            if nxt < 0:
                                continue
                        else:
                            continue
                        n_alt += 1
                        if graph:
                            items[n_items] = ~x_param[r]
                            n_items += 1
                            if att >= 0:
                                items[n_items] = ~att
                                n_items += 1
                            if nxt >= 0:
                                items[n_items] = nxt
                                n_items += 1
                            n_alts += 1
                            item_ptr[n_alts] = n_items
                            continue
                        v = 0.0   # summed as _alt_score sums
                        v += logtheta[x_param[r]]
                        if att >= 0:
                            v += logtheta[att]
                        if nxt >= 0:
                            v += val[nxt]
                        if v == -np.inf:
                            continue
                        if mode == INSIDE:
                            top, acc = _lse_add(top, acc, v)
                        elif v > top:
                            top = v
                            back[n_nodes, 0] = x_param[r]
                            back[n_nodes, 1] = att
                            back[n_nodes, 2] = -1
                            back[n_nodes, 3] = nxt
                    if n_alt == 0 or (not graph and top == -np.inf):
                        continue
                    if graph:
                        node_ptr[n_nodes + 1] = n_alts
                    else:
                        val[n_nodes] = top + np.log(acc) if mode == INSIDE else top
                    lex_id[j, k, g] = n_nodes
                    n_nodes += 1
                for i in range(n_shift[j]):
                    g = shift_goal[j, i]
                    lex = lex_id[j, k, g]
                    if lex < 0:
                        continue
                    # goal(G, j - 1, k): shift w[j-1], then its word-corner goal
                    p = first_param[g, w[j - 1]]
                    if graph:
                        items[n_items] = ~p
                        items[n_items + 1] = lex
                        n_items += 2
                        n_alts += 1
                        item_ptr[n_alts] = n_items
                        node_ptr[n_nodes + 1] = n_alts
                    else:
                        v = 0.0
                        v += logtheta[p]
                        v += val[lex]
                        if v == -np.inf:
                            continue
                        val[n_nodes] = v
                        if mode == VITERBI:
                            back[n_nodes, 0] = p
                            back[n_nodes, 1] = -1
                            back[n_nodes, 2] = lex
                            back[n_nodes, 3] = -1
                    goal_id[j - 1, k, g] = n_nodes
                    n_nodes += 1
            # position k is complete: its live slots in order, room for their lc nodes
            # (k < end <= n) and cells being accumulated, the completions chained to each,
            # their rules by right child and the goals they predict
            found = np.sort(live_slots[:n_found])
            sub_base[k] = n_heads
            n_heads += n_found + 1
            if n_heads > sub_ptr.shape[0]:
                sub_ptr = _grow(sub_ptr, n_heads)
            if n_subs + n_ends > subs.shape[0]:
                subs = _grow_rows(subs, n_subs + n_ends)
                subs_w = _grow(subs_w, subs.shape[0] if not graph else 1)
            for i in range(n_found):
                loc_of[k, found[i]] = i
                sub_ptr[sub_base[k] + i] = n_subs
                f = chain[found[i]]
                while f >= 0:   # (oldest last)
                    subs[n_subs, 0] = ends[f, 0]
                    subs[n_subs, 1] = ends[f, 1]
                    subs[n_subs, 2] = ends[f, 2]
                    if not graph:
                        subs_w[n_subs] = ends_w[f]
                    n_subs += 1
                    f = ends[f, 3]
            sub_ptr[sub_base[k] + n_found] = n_subs
            n_ends = 0
            for i in range(n_touched):
                state[touched[i]] = 0
                chain[touched[i]] = -1
            n_live[k] = n_found
            lc_base[k] = n_lc
            n_lc += n_found * (n - k)
            if n_lc > lc_node.shape[0]:
                lc_node = _grow(lc_node, n_lc)
            lc_node[lc_base[k]:n_lc] = -1
            acc_base[k + 1] = acc_base[k] + n_found
            if not graph and acc_base[k + 1] > acc_top.shape[0]:
                acc_top = _grow(acc_top, acc_base[k + 1])
                acc_sum = _grow(acc_sum, acc_base[k + 1] if mode == INSIDE else 1)
                acc_key = _grow(acc_key, acc_base[k + 1] if mode == VITERBI else 1)
                acc_back = _grow_rows(acc_back, acc_base[k + 1] if mode == VITERBI else 1)
            # (only the rules whose right child can begin with w[k]: the others complete
            # nothing)
            count[:] = 0
            for i in range(n_found):
                for r in range(s_ptr[found[i]], s_ptr[found[i] + 1]):
                    if starts[s_right[r]]:
                        count[s_right[r] + 1] += 1
                        pred[k, s_right[r]] = True
            for c in range(n_goals):
                count[c + 1] += count[c]
            for c in range(n_goals + 1):
                live_ptr[k, c] = n_live_rules + count[c]
                count[c] = live_ptr[k, c]  # from here on: where C's next rule goes
            n_live_rules = live_ptr[k, n_goals]
            if n_live_rules > live.shape[0]:
                live = _grow_rows(live, n_live_rules)
                live_w = _grow_rows(live_w, n_live_rules if not graph else 1)
            for i in range(n_found):
                for r in range(s_ptr[found[i]], s_ptr[found[i] + 1]):
                    if not starts[s_right[r]]:
                        continue
                    q = count[s_right[r]]
                    count[s_right[r]] += 1
                    live[q, 0] = r
                    live[q, 1] = acc_base[k] + i
                    live[q, 2] = s_next[r]
                    if not graph:
                        live_w[q, 0] = w_done[r]
                        live_w[q, 1] = w_proj[r]
        # sentence: the start switch, then a root goal over every word
        if graph:
            items = _grow(items, n_items + 4 * n_roots)
            item_ptr = _grow(item_ptr, n_alts + n_roots + 1)
            node_ptr = _grow(node_ptr, n_nodes + 2)
        n_alt = 0
        for r in range(n_roots):
            top = goal_id[0, n, root_goal[r]]
            if top < 0:
                continue
            if graph:
                n_items, n_alts = _push_alt(items, n_items, item_ptr, n_alts, root_param[r],
                                            -1, top, -1)
            else:
                sc[n_alt] = _alt_score(logtheta, val, root_param[r], -1, top, -1)
                root_of[n_alt] = r     # the choices, in case
            n_alt += 1
        if graph:
            node_ptr[n_nodes + 1] = n_alts
            roots[s] = n_nodes
            n_nodes += 1
            continue
        score[s], best = _node_value(mode, sc, n_alt)
        if mode == VITERBI and best >= 0:
            r = root_of[best]
            deriv = _grow(deriv, n_deriv + 1)
            deriv[n_deriv] = root_param[r]
            n_deriv += 1
            top = 1
            stack[0] = goal_id[0, n, root_goal[r]]
            while top > 0:   # pre-order: a cell's choices, its child, then its next cell
                top -= 1
                node = stack[top]
                deriv = _grow(deriv, n_deriv + 2)
                deriv[n_deriv] = back[node, 0]
                n_deriv += 1
                if back[node, 1] >= 0:
                    deriv[n_deriv] = back[node, 1]
                    n_deriv += 1
                stack = _grow(stack, top + 2)
                if back[node, 3] >= 0:
                    stack[top] = back[node, 3]
                    top += 1
                if back[node, 2] >= 0:
                    stack[top] = back[node, 2]
                    top += 1
        deriv_ptr[s + 1] = n_deriv
    return (node_ptr[:n_nodes + 1], item_ptr[:n_alts + 1], items[:n_items], roots, score,
            deriv_ptr, deriv[:n_deriv])


@njit(cache=True)
def build_graph(words, offsets, goal_nt, root_goal, root_param, first_param, att_param,
                slot_of, s_ptr, s_param, s_right, s_slot, s_rank, s_next, s_proj, s_done,
                lex_of, x_ptr, x_param, x_lhs, lex_alts):
    """``(node_ptr, item_ptr, items, roots)``: the explanation graph of the sentences
    ``words[offsets[s] : offsets[s + 1]]`` that the tabled search of the program finds:
    :func:`chart`'s graph restricted to the goals the sentences use."""
    node_ptr, item_ptr, items, roots, _, _, _ = chart(
        GRAPH, np.empty(0), words, offsets, goal_nt, root_goal, root_param, first_param,
        att_param, slot_of, s_ptr, s_param, s_right, s_slot, s_rank, s_next, s_proj, s_done,
        lex_of, x_ptr, x_param, x_lhs, lex_alts)
    return _keep_reachable(node_ptr, item_ptr, items, roots)


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

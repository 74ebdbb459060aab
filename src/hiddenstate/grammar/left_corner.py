r"""The probabilistic left-corner grammar (PLCG) of a CNF grammar: its switches, their flat
layout, the kernel tables, and the one-to-one map between left-corner derivations and trees.

A PLCG (Manning 1997; Roark & Johnson 1999; Van Uytsel et al. 2001; the PRISM program of
Sato & Kubota, "Viterbi training in PRISM", sec. 4.2 and fig. 2) uses the rules of a
context-free grammar but puts its probabilities on the three operations of a left-corner
parser instead of on the expansion of nonterminals. A *goal* ``G`` (the root, or the right
child ``C`` of a rule ``A -> B C`` once ``B`` is complete) is built bottom-up:

- **shift** ``first(G)``: the first word ``w`` of ``G``, among the words that can begin a
  ``G`` (PRISM's ``msw(first(G), Wd)``);
- **projection** ``lc(G, B)``: once a ``B`` (a word, or a nonterminal) is complete, the
  rule ``A -> B ...`` that has it as left corner, among the rules whose left-hand side ``A``
  is ``G`` or can be a left corner of ``G``; the rest of the rule's right-hand side becomes
  the next goal (PRISM's ``msw(lc(G, B), rule(A, [B|RHS2]))``);
- **attach** ``attach(G)``: when the completed ``A`` is ``G`` itself and ``G`` is
  left-recursive (some ``G -> G ...`` chain exists), whether it is the goal (``"attach"``)
  or the left corner of a larger ``G`` (``"project"``); otherwise attaching is forced.

With CNF rules (``A -> B C``, ``A -> w``) every tree of the grammar whose root is a start
symbol has exactly one left-corner derivation, and every derivation builds one tree
(:meth:`LeftCorner.derivation`, :meth:`LeftCorner.build`), so a PLCG and a PCFG with the same
rules assign non-zero probability to the same trees, with different probabilities
(Manning 1997: the PLCG conditions each rule on the goal it is built for).

Switch names: ``START`` (the root, as in :class:`~hiddenstate.grammar.Grammar`),
``("first", G)``, ``("attach", G)``, ``("lc", G, B)`` for a nonterminal left corner ``B``
and ``("lc", G, (w,))`` for a word (a 1-tuple, like a lexical right-hand side, so a word and
a nonterminal with the same name stay apart). Outcomes of ``lc`` switches are rules
``(A, rhs)``; of ``first``, words; of ``attach``, ``"attach"`` / ``"project"``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..errors import InvalidInputError
from .cnf import START, Grammar
from .trees import Tree

FIRST, LC, ATTACH = "first", "lc", "attach"
#: outcomes of an ``attach`` switch
ATTACH_OPS = ("attach", "project")


class LeftCorner:
    """The PLCG switches of a CNF :class:`~hiddenstate.grammar.Grammar`.

    Attributes
    ----------
    goals : the goal categories (start symbols and right children), in nonterminal order.
    switches : ``[(name, outcomes)]`` in flat-parameter order: ``START``, then for every
        goal ``G``: ``("first", G)``, ``("attach", G)`` if ``G`` is left-recursive, the
        word projections ``("lc", G, (w,))`` in word order, the nonterminal projections
        ``("lc", G, B)`` in nonterminal order.
    offsets : switch name -> first flat index; ``n_params`` the total; ``starts`` the first
        index of every switch in order; ``index``: (switch, outcome) -> flat index;
        ``outcomes``: switch -> outcomes; ``param_switch`` / ``param_outcome``: flat index ->
        switch / outcome.
    spine : goal ``G`` -> the nonterminals ``A`` with ``G =>* A ...`` by left children
        (``G`` included), whose rules the projections under ``G`` choose from.
    left_recursive : goal -> whether it has an ``attach`` switch.
    """

    def __init__(self, grammar: Grammar):
        self.grammar = g = grammar
        nts = g.nonterminals
        left_child = {a: {r[0] for r in g.rules[a] if len(r) == 2} for a in nts}
        right = {r[1] for a in nts for r in g.rules[a] if len(r) == 2}
        self.goals = [a for a in nts if a in right or a in set(g.start)]
        self.spine: dict[str, list[str]] = {}     # G -> nonterminals A with G ->* A ...
        self.left_recursive: dict[str, bool] = {}
        self.switches: list[tuple] = [(START, list(g.start))]
        for goal in self.goals:
            seen, stack = {goal}, [goal]
            while stack:
                for b in left_child[stack.pop()]:
                    if b not in seen:
                        seen.add(b)
                        stack.append(b)
            spine = [a for a in nts if a in seen]
            self.spine[goal] = spine
            by_corner: dict = {}
            for a in spine:
                for rhs in g.rules[a]:
                    key = rhs[0] if len(rhs) == 2 else (rhs[0],)
                    by_corner.setdefault(key, []).append((a, rhs))
            first = [w for w in g.words if (w,) in by_corner]
            self.left_recursive[goal] = goal in by_corner
            if first:  # else the goal derives no word (goal(G, ...) fails)
                self.switches.append(((FIRST, goal), first))
            if self.left_recursive[goal]:
                self.switches.append(((ATTACH, goal), list(ATTACH_OPS)))
            self.switches += [((LC, goal, (w,)), by_corner[(w,)]) for w in first]
            self.switches += [((LC, goal, b), by_corner[b]) for b in nts if b in by_corner]
        self.offsets: dict = {}
        self.index: dict = {}                      # (switch, outcome) -> flat index
        pos = 0
        for name, outcomes in self.switches:
            self.offsets[name] = pos
            for q, v in enumerate(outcomes):
                self.index[name, v] = pos + q
            pos += len(outcomes)
        self.n_params = pos
        self.starts = np.asarray([self.offsets[name] for name, _ in self.switches],
                                 dtype=np.int64)
        self.outcomes = dict(self.switches)
        self.param_switch = [name for name, outs in self.switches for _ in outs]
        self.param_outcome = [v for _, outs in self.switches for v in outs]
        self._kernel_tables()

    # -- the flat layout ------------------------------------------------------------------------
    def spans(self) -> list[tuple]:
        """``(switch name, first flat index, number of outcomes)`` in layout order."""
        return [(name, self.offsets[name], len(outs)) for name, outs in self.switches]

    def uniform(self) -> np.ndarray:
        """Every switch uniform."""
        return np.concatenate([np.full(len(outs), 1.0 / len(outs)) for _, outs in self.switches])

    def _kernel_tables(self) -> None:
        """The arrays :func:`hiddenstate.kernels.left_corner.chart` takes (built once per
        grammar; the model caches its ``LeftCorner``)."""
        g = self.grammar
        nt, wi = g.nt_index, g.word_index
        n_goals, n_nt, n_words = len(self.goals), len(g.nonterminals), len(g.words)
        goal_of = {a: q for q, a in enumerate(self.goals)}
        self.goal_nt = np.asarray([nt[a] for a in self.goals], dtype=np.int64)
        self.root_goal = np.asarray([goal_of[s] for s in g.start], dtype=np.int64)
        self.root_param = np.arange(len(g.start), dtype=np.int64)
        self.first_param = np.full((n_goals, n_words), -1, dtype=np.int64)
        self.att_param = np.full((n_goals, 2), -1, dtype=np.int64)
        self.slot_of = np.full((n_goals, n_nt), -1, dtype=np.int64)
        self.lex_of = np.full((n_goals, n_words), -1, dtype=np.int64)
        s_goal, s_ptr, s_param, s_lhs, s_right = [], [0], [], [], []
        x_ptr, x_param, x_lhs = [0], [], []
        for name, outcomes in self.switches[1:]:
            q = goal_of[name[1]]
            lo = self.offsets[name]
            if name[0] == FIRST:
                for k, w in enumerate(outcomes):
                    self.first_param[q, wi[w]] = lo + k
            elif name[0] == ATTACH:
                self.att_param[q] = (lo, lo + 1)
            elif isinstance(name[2], tuple):  # a word's projection
                self.lex_of[q, wi[name[2][0]]] = len(x_ptr) - 1
                x_param += range(lo, lo + len(outcomes))
                x_lhs += [nt[a] for a, _ in outcomes]
                x_ptr.append(len(x_param))
            else:
                self.slot_of[q, nt[name[2]]] = len(s_ptr) - 1
                s_goal.append(q)
                s_param += range(lo, lo + len(outcomes))
                s_lhs += [nt[a] for a, _ in outcomes]
                s_right += [goal_of[rhs[1]] for _, rhs in outcomes]
                s_ptr.append(len(s_param))

        def arr(x):
            return np.asarray(x, dtype=np.int64)

        self.s_goal, self.s_ptr, self.s_param, self.s_lhs, self.s_right = (
            arr(s_goal), arr(s_ptr), arr(s_param), arr(s_lhs), arr(s_right))
        self.x_ptr, self.x_param, self.x_lhs = arr(x_ptr), arr(x_param), arr(x_lhs)
        # per projection rule A -> B C of slot (G, B): its slot; the slot (G, A) the spine
        # goes on with (-1: none, A being G and G not left-recursive); the attach outcome
        # drawn then (-1: none); the one drawn when A completes G (-2: A is not G)
        self.s_slot = np.repeat(np.arange(len(s_goal), dtype=np.int64), np.diff(self.s_ptr))
        self.s_rank = np.arange(len(self.s_param), dtype=np.int64) - self.s_ptr[self.s_slot]
        g_of = self.s_goal[self.s_slot]
        is_goal = self.s_lhs == self.goal_nt[g_of]
        left_rec = self.att_param[g_of, 1] >= 0
        self.s_next = np.where(~is_goal | left_rec, self.slot_of[g_of, self.s_lhs], -1)
        self.s_proj = np.where(is_goal, self.att_param[g_of, 1], -1)
        self.s_done = np.where(is_goal, self.att_param[g_of, 0], -2)
        # the word-corner projections of each word, over every goal
        sizes = np.diff(self.x_ptr)
        self.lex_alts = np.where(self.lex_of >= 0, sizes[np.maximum(self.lex_of, 0)] if
                                 len(sizes) else 0, 0).sum(axis=0).astype(np.int64)

    def kernel_args(self) -> tuple:
        """What :func:`hiddenstate.kernels.left_corner.chart` and
        :func:`~hiddenstate.kernels.left_corner.build_graph` take after the sentences."""
        return (self.goal_nt, self.root_goal, self.root_param, self.first_param,
                self.att_param, self.slot_of, self.s_ptr, self.s_param, self.s_right,
                self.s_slot, self.s_rank, self.s_next, self.s_proj, self.s_done, self.lex_of,
                self.x_ptr, self.x_param, self.x_lhs, self.lex_alts)

    # -- derivations and trees ------------------------------------------------------------------
    def build(self, choose: Callable[[object], int]) -> Tree:
        """The CNF tree of one left-corner derivation. ``choose(switch)`` returns the index of
        the outcome taken by ``switch`` (read from a derivation, or drawn); the switches are
        asked in the derivation's order: ``START``; for a goal ``G``, ``first(G)``, then
        up its left spine each projection ``lc(G, B)`` followed by ``attach(G)`` where it
        applies, and, for a binary rule, the derivation of its right child before the
        spine goes on. Runs without recursion (sentences of any length)."""
        out = self.outcomes
        goal = out[START][choose(START)]
        stack: list = []          # (goal, lhs, left child, attached?) awaiting a right child
        while True:
            if (FIRST, goal) not in out:
                raise InvalidInputError(
                    f"rules: the derivation needs a {goal!r}, which derives no word; give it "
                    "rules that end in words or drop the rules that use it")
            word = out[FIRST, goal][choose((FIRST, goal))]
            corner, node = (word,), word
            while True:
                name = (LC, goal, corner)
                lhs, rhs = out[name][choose(name)]
                attached = lhs == goal and (not self.left_recursive[goal]
                                            or out[ATTACH, goal][choose((ATTACH, goal))]
                                            == ATTACH_OPS[0])
                if len(rhs) == 2:
                    stack.append((goal, lhs, node, attached))
                    goal = rhs[1]
                    break
                node = Tree(lhs, [node])
                while attached:  # a goal is complete: it is the right child of the frame
                    if not stack:
                        return node
                    goal, lhs, left, attached = stack.pop()
                    node = Tree(lhs, [left, node])
                corner = lhs

    def derivation(self, tree: Tree) -> list[int]:
        """The flat parameter indices of the left-corner derivation of a CNF tree, in the
        order :meth:`build` asks for them (``build`` of them gives ``tree`` back).
        :class:`~hiddenstate.errors.InvalidInputError` if the tree is not one of the
        grammar's."""
        index = self.index
        out: list[int] = []

        def take(name, outcome):
            p = index.get((name, outcome))
            if p is None:
                raise InvalidInputError(
                    f"tree: {name!r} has no outcome {outcome!r}: the tree {tree} is not a "
                    "tree of this grammar (pass CNF trees, see PCFG.prepare_trees)")
            out.append(p)

        if tree.label not in self.grammar.start:
            raise InvalidInputError(f"tree: root {tree.label!r} is not a start symbol")
        take(START, tree.label)
        # tasks: (goal, node) derives a goal; (goal, spine, i) climbs its spine from node i
        todo: list = [(tree.label, tree)]
        while todo:
            task = todo.pop()
            if len(task) == 2:
                goal, node = task
                spine = [node]
                while not spine[-1].is_preterminal():
                    kids = spine[-1].children
                    if len(kids) != 2 or not all(isinstance(k, Tree) for k in kids):
                        raise InvalidInputError(
                            f"tree: node {spine[-1].label!r} is not in Chomsky normal form")
                    spine.append(kids[0])
                spine.reverse()                     # bottom-up: preterminal first
                take((FIRST, goal), spine[0].children[0])
                task = (goal, spine, 0)
            goal, spine, i = task
            while i < len(spine):
                x = spine[i]
                corner = (x.children[0],) if i == 0 else spine[i - 1].label
                rhs = tuple(k if isinstance(k, str) else k.label for k in x.children)
                take((LC, goal, corner), (x.label, rhs))
                if x.label == goal and self.left_recursive[goal]:
                    take((ATTACH, goal), ATTACH_OPS[0 if i == len(spine) - 1 else 1])
                i += 1
                if len(rhs) == 2:               # its right child first, then climb on
                    if i < len(spine):
                        todo.append((goal, spine, i))
                    todo.append((rhs[1], x.children[1]))
                    break
        return out

    def tree(self, params) -> Tree:
        """The CNF tree of a derivation given as flat parameter indices (inverse of
        :meth:`derivation`)."""
        it = iter(params)
        offsets, sw = self.offsets, self.param_switch

        def choose(name):
            p = next(it)
            if sw[p] != name:
                raise InvalidInputError(f"params: expected a draw of {name!r}, got {sw[p]!r}")
            return p - offsets[name]

        return self.build(choose)

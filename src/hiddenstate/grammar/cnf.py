r"""A context-free grammar in Chomsky normal form as the flat arrays of
:mod:`hiddenstate.kernels.cky`.

Every left-hand side :math:`A` is one categorical switch over its right-hand sides (a pair of
nonterminals ``(B, C)`` or one word ``(w,)``); the *start switch* picks the nonterminal at
the root (one outcome of probability 1 for a grammar with a single start symbol; several
for a grammar read from a treebank, whose trees have many root labels). The flat parameter
vector holds the start switch first, then each left-hand side's rules in the order given:
the same layout as the grammar written as a program
(:func:`hiddenstate.programs.grammar.grammar_program`), so the two give the same numbers
(tested). This module imports nothing of :mod:`hiddenstate.programs` (a higher layer).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidInputError
from .trees import Tree

#: the name of the start switch in ``PCFG.probs_``
START = "<start>"


def _rhs(rhs, where: str) -> tuple[str, ...]:
    if isinstance(rhs, str):
        rhs = (rhs,)
    try:
        rhs = tuple(rhs)
    except TypeError as exc:
        raise InvalidInputError(f"{where}: right-hand side {rhs!r} is not a tuple") from exc
    if len(rhs) not in (1, 2) or not all(isinstance(x, str) and x for x in rhs):
        raise InvalidInputError(
            f"{where}: right-hand side {rhs!r} is not in Chomsky normal form; use (word,) "
            "for a lexical rule or (B, C) with two nonterminal names for a binary rule")
    return rhs


@dataclass
class Grammar:
    """A CNF grammar: ``nonterminals``, ``words`` (terminals), ``start`` (root
    nonterminals), ``rules[A]`` (right-hand sides of ``A`` in order) and the kernel arrays."""

    nonterminals: list[str]
    words: list[str]
    start: list[str]
    rules: dict[str, list[tuple[str, ...]]]
    offsets: dict = field(default_factory=dict)   # switch name -> first flat index
    nt_index: dict = field(default_factory=dict)
    word_index: dict = field(default_factory=dict)

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def from_rules(cls, rules, start) -> Grammar:
        """``rules``: pairs ``(lhs, rhs)`` (or a dict ``lhs -> [rhs, ...]``); ``start``: a
        nonterminal or a list of them."""
        if isinstance(rules, dict):
            rules = [(lhs, r) for lhs, rhss in rules.items() for r in rhss]
        try:
            pairs = [tuple(p) for p in rules]
        except TypeError as exc:
            raise InvalidInputError(
                "rules: expected pairs (lhs, rhs), e.g. [('S', ('NP', 'VP')), "
                "('NP', ('dogs',))]") from exc
        if not pairs:
            raise InvalidInputError("rules: empty; a grammar needs at least one rule")
        by_lhs: dict[str, list] = {}
        for p in pairs:
            if len(p) != 2 or not isinstance(p[0], str) or not p[0]:
                raise InvalidInputError(
                    f"rules: {p!r} is not a pair (lhs name, rhs tuple)")
            lhs, rhs = p[0], _rhs(p[1], f"rules: rule of {p[0]!r}")
            if lhs == START:
                raise InvalidInputError(f"rules: {START!r} is reserved for the start switch")
            lst = by_lhs.setdefault(lhs, [])
            if rhs in lst:
                raise InvalidInputError(f"rules: {lhs} -> {' '.join(rhs)} is given twice")
            lst.append(rhs)
        nts = list(by_lhs)
        nt_set = set(nts)
        for lhs, lst in by_lhs.items():
            for rhs in lst:
                if len(rhs) == 2:
                    missing = [x for x in rhs if x not in nt_set]
                    if missing:
                        raise InvalidInputError(
                            f"rules: {lhs} -> {' '.join(rhs)} uses {missing[0]!r}, which has "
                            "no rules; add its rules or drop this one")
        if isinstance(start, str):
            start = [start]
        try:
            start = list(start)
        except TypeError as exc:
            raise InvalidInputError(f"start: expected a nonterminal or a list, got {start!r}") \
                from exc
        if not start or len(set(start)) != len(start):
            raise InvalidInputError(f"start: expected distinct nonterminals, got {start!r}")
        bad = [s for s in start if s not in nt_set]
        if bad:
            raise InvalidInputError(
                f"start: {bad[0]!r} is not the left-hand side of any rule")
        words = sorted({rhs[0] for lst in by_lhs.values() for rhs in lst if len(rhs) == 1})
        g = cls(nts, words, start, by_lhs)
        g._index()
        return g

    @classmethod
    def from_trees(cls, trees: Iterable[Tree]) -> tuple[Grammar, dict]:
        """The grammar of CNF trees (see :func:`hiddenstate.grammar.trees.to_cnf`) and the
        rule counts ``{switch name: counts in rule order}`` (the supervised estimate)."""
        counts: Counter = Counter()
        roots: Counter = Counter()
        order: dict[str, dict] = {}
        for t in trees:
            roots[t.label] += 1
            stack = [t]
            while stack:
                node = stack.pop()
                kids = node.children
                if len(kids) == 1 and isinstance(kids[0], str):
                    rhs = (kids[0],)
                elif len(kids) == 2 and all(isinstance(k, Tree) for k in kids):
                    rhs = (kids[0].label, kids[1].label)
                    stack.extend(kids)
                else:
                    raise InvalidInputError(
                        f"trees: node {node.label!r} with {len(kids)} children is not in "
                        "Chomsky normal form; pass trees through to_cnf first")
                order.setdefault(node.label, {}).setdefault(rhs, None)
                counts[node.label, rhs] += 1
        if not order:
            raise InvalidInputError("trees: empty; pass at least one tree")
        g = cls.from_rules({lhs: list(r) for lhs, r in order.items()}, list(roots))
        out = {START: np.array([roots[s] for s in g.start], dtype=np.float64)}
        for lhs, lst in g.rules.items():
            out[lhs] = np.array([counts[lhs, r] for r in lst], dtype=np.float64)
        return g, out

    def _index(self) -> None:
        self.nt_index = {a: i for i, a in enumerate(self.nonterminals)}
        self.word_index = {w: i for i, w in enumerate(self.words)}
        self.offsets = {START: 0}
        pos = len(self.start)
        for lhs in self.nonterminals:
            self.offsets[lhs] = pos
            pos += len(self.rules[lhs])
        self.n_params = pos
        N, V = len(self.nonterminals), len(self.words)
        bl, bp, lx, lp = [], [], [], []
        for lhs in self.nonterminals:
            a = self.nt_index[lhs]
            for q, rhs in enumerate(self.rules[lhs]):
                p = self.offsets[lhs] + q
                if len(rhs) == 2:
                    bl.append((self.nt_index[rhs[0]], self.nt_index[rhs[1]], a))
                    bp.append(p)
                else:
                    lx.append((self.word_index[rhs[0]], a))
                    lp.append(p)
        bl_arr = np.asarray(bl, dtype=np.int64).reshape(-1, 3)
        order = np.argsort(bl_arr[:, 0], kind="stable")
        bl_arr = bl_arr[order]
        self.b_param = np.asarray(bp, dtype=np.int64)[order]
        self.b_right = np.ascontiguousarray(bl_arr[:, 1])
        self.b_lhs = np.ascontiguousarray(bl_arr[:, 2])
        self.bl_ptr = np.searchsorted(bl_arr[:, 0], np.arange(N + 1)).astype(np.int64)
        lx_arr = np.asarray(lx, dtype=np.int64).reshape(-1, 2)
        order = np.argsort(lx_arr[:, 0], kind="stable")
        lx_arr = lx_arr[order]
        self.lx_param = np.asarray(lp, dtype=np.int64)[order]
        self.lx_lhs = np.ascontiguousarray(lx_arr[:, 1])
        self.lx_ptr = np.searchsorted(lx_arr[:, 0], np.arange(V + 1)).astype(np.int64)
        self.root_nt = np.asarray([self.nt_index[s] for s in self.start], dtype=np.int64)
        self.root_param = np.arange(len(self.start), dtype=np.int64)
        # flat index -> (switch, rhs) for reading derivations back
        self.param_lhs = [START] * len(self.start)
        self.param_rhs: list = [(s,) for s in self.start]
        for lhs in self.nonterminals:
            self.param_lhs.extend([lhs] * len(self.rules[lhs]))
            self.param_rhs.extend(self.rules[lhs])

    # -- views ----------------------------------------------------------------------------------
    @property
    def n_rules(self) -> int:
        return self.n_params - len(self.start)

    def switches(self) -> list[tuple[str, int, int]]:
        """``(switch name, first flat index, number of outcomes)``, start switch first."""
        out = [(START, 0, len(self.start))]
        out += [(a, self.offsets[a], len(self.rules[a])) for a in self.nonterminals]
        return out

    def kernel_args(self) -> tuple:
        """``(N, bl_ptr, b_right, b_lhs, b_param, lx_ptr, lx_lhs, lx_param, root_nt,
        root_param)``: what the kernels take after ``theta``."""
        return (len(self.nonterminals), self.bl_ptr, self.b_right, self.b_lhs, self.b_param,
                self.lx_ptr, self.lx_lhs, self.lx_param, self.root_nt, self.root_param)

    def rule_list(self) -> list[list]:
        """The rules as JSON-friendly ``[lhs, [rhs...]]`` pairs (how a model saves them)."""
        return [[lhs, list(rhs)] for lhs in self.nonterminals for rhs in self.rules[lhs]]

    def tree(self, derivation: np.ndarray, words: list[str]) -> Tree:
        """The CNF tree of a kernel derivation (rows ``label, i, j, param``, pre-order,
        the start-switch row first)."""
        rows = derivation[1:]
        pos = 0

        def build():
            nonlocal pos
            a, i, j, _ = rows[pos]
            pos += 1
            label = self.nonterminals[int(a)]
            if j == i + 1:
                return Tree(label, [words[int(i)]])
            left = build()
            right = build()
            return Tree(label, [left, right])

        return build()

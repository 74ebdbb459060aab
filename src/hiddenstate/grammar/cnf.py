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


#: the key of an explicitly lexical right-hand side: ``{"word": "X"}`` is the word ``X``
WORD = "word"


def _rhs(rhs, where: str) -> tuple[tuple[str, ...], bool]:
    """A right-hand side as a tuple of one word or two nonterminal names, and whether it
    was written ``{"word": w}`` (a word even if a nonterminal has the same name). A string
    is refused, not read as a one-word rule: ``"NP VP"`` is the commonest way to mistype
    ``("NP", "VP")``."""
    if isinstance(rhs, str):
        parts = rhs.split()
        shown = ", ".join(repr(x) for x in parts) + ("," if len(parts) == 1 else "")
        raise InvalidInputError(
            f"{where}: right-hand side {rhs!r} is a string; write it as a tuple: "
            f"({shown}) (a word: ('dogs',); two nonterminals: ('NP', 'VP'))")
    if isinstance(rhs, dict):
        word = rhs.get(WORD)
        if set(rhs) != {WORD} or not isinstance(word, str) or not word:
            raise InvalidInputError(
                f"{where}: right-hand side {rhs!r:.60} is a dict; the only dict form is "
                f"{{{WORD!r}: 'w'}}, the word w")
        return (word,), True
    if not isinstance(rhs, (tuple, list)):
        raise InvalidInputError(
            f"{where}: right-hand side {rhs!r:.60} is not a tuple; use (word,) for a "
            "lexical rule or (B, C) for a binary rule")
    rhs = tuple(rhs)
    if len(rhs) not in (1, 2) or not all(isinstance(x, str) and x for x in rhs):
        raise InvalidInputError(
            f"{where}: right-hand side {rhs!r:.80} is not in Chomsky normal form; use (word,) "
            "for a lexical rule or (B, C) with two nonterminal names for a binary rule")
    return rhs, False


def _pairs(rules) -> list[tuple]:
    """``rules`` (pairs or a dict) as a list of ``(lhs, rhs)`` pairs, rhs unchecked."""
    if isinstance(rules, dict):
        pairs = []
        for lhs, rhss in rules.items():
            if isinstance(rhss, str) or (isinstance(rhss, tuple) and rhss
                                         and all(isinstance(x, str) for x in rhss)):
                raise InvalidInputError(
                    f"rules[{lhs!r}]: expected a list of right-hand sides, got {rhss!r:.60}; "
                    f"write {{{lhs!r}: [('NP', 'VP'), ('dogs',)]}}: a list of tuples")
            if not isinstance(rhss, (list, tuple)):
                raise InvalidInputError(
                    f"rules[{lhs!r}]: expected a list of right-hand sides (tuples), got "
                    f"{rhss!r:.60}")
            pairs.extend((lhs, r) for r in rhss)
        return pairs
    if isinstance(rules, (str, bytes)) or not hasattr(rules, "__iter__"):
        raise InvalidInputError(
            "rules: expected pairs (lhs, rhs) or a dict lhs -> [rhs, ...], e.g. "
            "{'S': [('NP', 'VP')], 'NP': [('dogs',)]}")
    out = []
    for p in rules:
        if not isinstance(p, (tuple, list)) or len(p) != 2:
            raise InvalidInputError(
                f"rules: {p!r:.80} is not a pair (lhs name, rhs tuple), e.g. "
                "('S', ('NP', 'VP'))")
        out.append(tuple(p))
    return out


def _unary(lhs: str, child: str, by_lhs: dict) -> InvalidInputError:
    """The error for ``lhs -> (child,)`` with ``child`` a nonterminal (see
    :meth:`Grammar.from_rules` for why unary rules are refused, not supported)."""
    example = " | ".join(" ".join(r) for r in by_lhs[child][:3])
    return InvalidInputError(
        f"rules: {lhs} -> {child} is a unary rule ({child!r} is a nonterminal), which "
        f"Chomsky normal form does not have; give {lhs} the rules of {child} instead "
        f"({lhs} -> {example}{' | ...' if len(by_lhs[child]) > 3 else ''}), or merge the "
        f"chain into one nonterminal as PCFG.from_treebank does ('{lhs}+{child}'); if "
        f"{child!r} is meant as a word, write the right-hand side as {{'word': {child!r}}}")


@dataclass
class Grammar:
    """A context-free grammar in Chomsky normal form, with the flat arrays of the kernels.

    Build one with :meth:`from_rules` or :meth:`from_trees` (they check the rules and
    compute the kernel arrays: ``offsets``, ``nt_index``, ``word_index``, the rule tables of
    :meth:`kernel_args`); :class:`hiddenstate.PCFG` does it for its ``rules``.

    Parameters
    ----------
    nonterminals : list of str
        The left-hand sides, in order.
    words : list of str
        The terminals, sorted.
    start : list of str
        The nonterminals a sentence may start from (the start switch's outcomes).
    rules : dict of str to list of tuple of str
        ``rules[A]``, the right-hand sides of ``A`` in order: ``(word,)`` or ``(B, C)``.
    offsets : dict, default={}
        Switch name -> its first index in the flat parameter vector (the start switch
        :data:`START` first).
    nt_index : dict, default={}
        Nonterminal -> its index.
    word_index : dict, default={}
        Word -> its index.

    See Also
    --------
    hiddenstate.PCFG : The estimator over such a grammar.
    hiddenstate.programs.grammar_program : The same grammar as a probabilistic program.

    Examples
    --------
    >>> from hiddenstate.grammar import Grammar
    >>> rules = [("S", ("NP", "VP")), ("NP", ("she",)), ("NP", ("fish",)),
    ...          ("VP", ("V", "NP")), ("V", ("eats",))]
    >>> g = Grammar.from_rules(rules, start="S")
    >>> g.nonterminals, g.words, g.n_rules
    (['S', 'NP', 'VP', 'V'], ['eats', 'fish', 'she'], 5)
    >>> g.switches()
    [('<start>', 0, 1), ('S', 1, 1), ('NP', 2, 2), ('VP', 4, 1), ('V', 5, 1)]
    """

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
        """Build and check a grammar from its rules.

        Two common mistakes are refused rather than misread: a right-hand side written as a
        string (``"NP VP"``, which would otherwise become one word) and a one-symbol
        right-hand side that names a nonterminal (``("A",)``: a unary rule ``S -> A``,
        which would otherwise become the *word* "A" and give every sentence probability
        zero). Unary rules are refused, not supported, because every pass assumes that a
        node either splits its span in two or emits one word: with ``A -> B`` two
        nonterminals share a span, a cycle ``A -> B -> A`` turns each chart cell's inside
        probability into a fixed point (a linear solve per cell) and its Viterbi score into
        a shortest-path problem, the k-best and sampling passes would need the same, and the
        program form's goal ``span(A, i, j)`` would depend on itself, which tabling refuses.
        Folding the chains into the other rules instead would silently change the
        parameters the user sets and learns. The error says how to rewrite the rule (or to
        collapse the chain into one nonterminal ``A+B``, as treebank grammars do).

        A word that shares its name with a nonterminal (the word "X" and the treebank
        label ``X``; in a tag grammar the preterminal ``NN`` emits the word ``NN``) is
        written ``{"word": "X"}``: ``("NNP", {"word": "X"})``. :meth:`rule_list` writes
        such rules that way, so a grammar read from trees saves and loads.

        Parameters
        ----------
        rules : list of (str, tuple) or dict of str to list of tuple
            Pairs ``(lhs, rhs)`` (or a dict ``lhs -> [rhs, ...]``), each ``rhs`` a tuple
            ``(word,)``, ``{"word": w}`` or ``(B, C)``; the rules of a left-hand side keep
            their order.
        start : str or list of str
            The start nonterminal, or several (distinct, each with rules).

        Returns
        -------
        Grammar
            The grammar, its kernel arrays computed.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If there is no rule, a rule is malformed or given twice, a right-hand side is
            a string or a unary rule, uses a nonterminal without rules or the reserved
            name :data:`START`, or ``start`` is invalid.

        Examples
        --------
        >>> from hiddenstate.grammar import Grammar
        >>> Grammar.from_rules([("S", ("A",)), ("A", ("a",))], start="S")
        Traceback (most recent call last):
        ...
        hiddenstate.errors.InvalidInputError: rules: S -> A is a unary rule ...
        """
        pairs = _pairs(rules)
        if not pairs:
            raise InvalidInputError("rules: empty; a grammar needs at least one rule")
        by_lhs: dict[str, list] = {}
        lexical: set = set()  # rules written {"word": w}
        for p in pairs:
            if not isinstance(p[0], str) or not p[0]:
                raise InvalidInputError(
                    f"rules: {p!r:.80} is not a pair (lhs name, rhs tuple); the left-hand "
                    "side is a non-empty string")
            lhs, (rhs, marked) = p[0], _rhs(p[1], f"rules: rule of {p[0]!r}")
            if marked:
                lexical.add((lhs, rhs))
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
                if len(rhs) == 1 and rhs[0] in nt_set and (lhs, rhs) not in lexical:
                    raise _unary(lhs, rhs[0], by_lhs)
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
        if not all(isinstance(x, str) for x in start):
            raise InvalidInputError(
                f"start: expected nonterminal names (strings), got {start!r:.80}")
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
        """Read the grammar of CNF trees and count its rules.

        The start nonterminals are the trees' root labels; every word is written
        ``{"word": w}``, so a word named like a nonterminal is no unary rule.

        Parameters
        ----------
        trees : iterable of Tree
            Trees in Chomsky normal form (see :func:`hiddenstate.grammar.to_cnf`).

        Returns
        -------
        grammar : Grammar
            The rules used by the trees, in order of first use.
        counts : dict of str to ndarray
            ``{switch name: counts in rule order}``, the start switch :data:`START`
            included: the supervised estimate's counts.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If there is no tree, a node has no label, or a node is not in Chomsky normal
            form.

        Examples
        --------
        >>> from hiddenstate.grammar import Grammar, Tree
        >>> tree = Tree.fromstring("(S (NP she) (VP (V eats) (NP fish)))")
        >>> g, counts = Grammar.from_trees([tree])
        >>> g.rules["NP"], counts["NP"]
        ([('fish',), ('she',)], array([1., 1.]))
        """
        counts: Counter = Counter()
        roots: Counter = Counter()
        order: dict[str, dict] = {}
        for t in trees:
            roots[t.label] += 1
            stack = [t]
            while stack:
                node = stack.pop()
                kids = node.children
                if not node.label:
                    raise InvalidInputError(
                        f"trees: a node without a label spans {' '.join(node.leaves()[:6])!r}; "
                        "label it or remove its brackets")
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
        g = cls.from_rules({lhs: [{WORD: x[0]} if len(x) == 1 else x for x in r]
                            for lhs, r in order.items()}, list(roots))
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
        """The number of rules (the start switch not counted)."""
        return self.n_params - len(self.start)

    def switches(self) -> list[tuple[str, int, int]]:
        """List the categorical switches of the flat parameter vector.

        Returns
        -------
        list of (str, int, int)
            ``(switch name, first flat index, number of outcomes)``: the start switch
            first, then one per left-hand side.
        """
        out = [(START, 0, len(self.start))]
        out += [(a, self.offsets[a], len(self.rules[a])) for a in self.nonterminals]
        return out

    def kernel_args(self) -> tuple:
        """Return the arrays the CKY kernels take after ``theta``.

        Returns
        -------
        tuple
            ``(N, bl_ptr, b_right, b_lhs, b_param, lx_ptr, lx_lhs, lx_param, root_nt,
            root_param)``: the number of nonterminals, the binary rules grouped by left
            child, the lexical rules grouped by word, and the start switch (see
            :mod:`hiddenstate.kernels.cky`).
        """
        return (len(self.nonterminals), self.bl_ptr, self.b_right, self.b_lhs, self.b_param,
                self.lx_ptr, self.lx_lhs, self.lx_param, self.root_nt, self.root_param)

    def rule_list(self) -> list[list]:
        """Return the rules as JSON-friendly pairs, as a model saves them.

        Returns
        -------
        list of list
            ``[lhs, [rhs...]]`` pairs in order; a word with the name of a nonterminal as
            ``[lhs, {"word": w}]``. :meth:`from_rules` reads them back.
        """
        nts = self.nt_index
        return [[lhs, {WORD: rhs[0]} if len(rhs) == 1 and rhs[0] in nts else list(rhs)]
                for lhs in self.nonterminals for rhs in self.rules[lhs]]

    def tree(self, derivation: np.ndarray, words: list[str]) -> Tree:
        """Build the CNF tree of a kernel derivation.

        Built without recursion (a parse of any depth).

        Parameters
        ----------
        derivation : ndarray of shape (n_nodes + 1, 4), dtype int64
            Rows ``(label, i, j, param)`` in pre-order, the start-switch row first, as the
            Viterbi and sampling kernels return them.
        words : list of str
            The sentence.

        Returns
        -------
        Tree
            The parse tree (in Chomsky normal form).
        """
        root = None
        open_nodes: list[Tree] = []  # binary nodes still waiting for a child
        names = self.nonterminals
        for a, i, j, _ in derivation[1:].tolist():
            node = Tree(names[a], [words[i]] if j == i + 1 else [])
            if open_nodes:
                parent = open_nodes[-1]
                parent.children.append(node)
                if len(parent.children) == 2:
                    open_nodes.pop()
            else:
                root = node
            if j != i + 1:
                open_nodes.append(node)
        return root

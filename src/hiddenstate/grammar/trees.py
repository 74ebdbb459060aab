"""Bracketed parse trees: reading Penn-Treebank-style files and the transforms that turn a
treebank tree into a tree of a grammar in Chomsky normal form, and back.

- :func:`read_trees` / :meth:`Tree.fromstring`: ``(S (NP (DT the) (NN dog)) (VP ...))``.
- :func:`normalise`: the treebank conventions removed: the unlabelled outer bracket,
  empty elements (``-NONE-``) and the constituents left empty by them, function tags and
  co-indices (``NP-SBJ-1`` -> ``NP``); optionally the words replaced by their part-of-speech
  tags (``terminals="tags"``).
- :func:`collapse_unaries` / :func:`expand_unaries`: a chain of single-child nodes
  ``(S (VP ...))`` becomes one node ``S+VP`` (a chain ending in a part-of-speech node
  becomes a preterminal ``NP+PRP``); expanding restores the chain.
- :func:`binarize` / :func:`debinarize`: a node with more than two children is right-factored
  with intermediate nodes labelled ``A|<C2,C3,...>`` (the labels of the children still to
  come, at most ``markov`` of them: horizontal Markovisation); debinarising splices those
  nodes out.

``debinarize(binarize(collapse_unaries(t)))`` then ``expand_unaries`` gives ``t`` back for
every normalised tree (tested).

Nothing here recurses in Python: every walk over a tree (printing, comparing, the spans,
the transforms, copying) keeps its own stack, so a tree of any depth (the right-branching
parse of a 10,000-word sentence is 10,000 nodes deep) works within Python's recursion limit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..errors import InvalidInputError

#: joins the labels of a collapsed unary chain
UNARY = "+"
#: starts the label suffix of a binarisation node
FACTOR = "|<"
_TOKEN = re.compile(r"\(|\)|[^\s()]+")


class Tree:
    """A node: ``label`` (a string) and ``children`` (a list of sub-trees and word strings)."""

    __slots__ = ("children", "label")

    def __init__(self, label: str, children: list):
        if not isinstance(label, str):
            raise InvalidInputError(f"label: expected a string, got {label!r:.60}")
        if isinstance(children, (str, bytes)) or not isinstance(children, (list, tuple)):
            raise InvalidInputError(
                f"children: expected a list of sub-trees and word strings, got "
                f"{children!r:.60}; a preterminal is Tree('NN', ['dog'])")
        for c in children:
            if not isinstance(c, (Tree, str)):
                raise InvalidInputError(
                    f"children: {c!r:.60} is neither a Tree nor a word string")
        self.label = label
        self.children = list(children)

    # -- reading and writing ------------------------------------------------------------------
    @classmethod
    def fromstring(cls, text: str) -> Tree:
        """One bracketed tree (see :func:`parse_brackets` for several)."""
        trees = parse_brackets(text)
        if len(trees) != 1:
            raise InvalidInputError(f"text: expected one bracketed tree, found {len(trees)}")
        return trees[0]

    def __str__(self) -> str:
        out: list[str] = []
        stack: list = [self]
        while stack:
            x = stack.pop()
            if not isinstance(x, Tree):  # a word, or the spaces and brackets pushed below
                out.append(x)
            elif not x.children:
                out.append(f"({x.label} )" if x.label else "()")
            else:
                out.append("(" + x.label)
                stack.append(")")
                for c in reversed(x.children):
                    stack.append(c)
                    stack.append(" ")
        return "".join(out)

    def __repr__(self) -> str:
        return f"Tree.fromstring({str(self)!r})"

    def __eq__(self, other) -> bool:
        if not isinstance(other, Tree):
            return False
        stack = [(self, other)]
        while stack:
            a, b = stack.pop()
            if a.label != b.label or len(a.children) != len(b.children):
                return False
            for x, y in zip(a.children, b.children, strict=True):
                if isinstance(x, Tree):
                    if not isinstance(y, Tree):
                        return False
                    stack.append((x, y))
                elif isinstance(y, Tree) or x != y:
                    return False
        return True

    def __hash__(self) -> int:
        return hash(str(self))

    def __deepcopy__(self, memo) -> Tree:
        return _rebuild(self, lambda node, kids: Tree(node.label, kids))

    # -- queries --------------------------------------------------------------------------------
    def is_preterminal(self) -> bool:
        return len(self.children) == 1 and isinstance(self.children[0], str)

    def leaves(self) -> list[str]:
        out: list[str] = []
        stack: list = [self]
        while stack:
            node = stack.pop()
            if isinstance(node, str):
                out.append(node)
            else:
                stack.extend(reversed(node.children))
        return out

    def nodes(self) -> Iterator[tuple[Tree, int, int]]:
        """Every node with its span ``(start, end)`` over the leaves, in pre-order."""
        out: list = []
        pos = 0
        stack: list = [(self, iter(self.children), 0)]  # node, its children, its slot
        out.append(None)
        starts = [0]
        while stack:
            node, it, slot = stack[-1]
            for c in it:
                if isinstance(c, Tree):
                    stack.append((c, iter(c.children), len(out)))
                    out.append(None)
                    starts.append(pos)
                    break
                pos += 1
            else:
                stack.pop()
                out[slot] = (node, starts.pop(), pos)
        return iter(out)

    def unlabelled(self) -> Tree:
        """The same shape with every label blank (BT compares these)."""
        return _rebuild(self, lambda node, kids: Tree("", kids))


def _rebuild(tree: Tree, build):
    """Post-order rebuild without recursion: ``build(node, kids)`` is called once per node,
    children first, with ``kids`` the results for its sub-trees and its words as they are,
    in order; returns the result for the root."""
    stack: list = [(tree, iter(tree.children), [])]
    while True:
        node, it, kids = stack[-1]
        for c in it:
            if isinstance(c, Tree):
                stack.append((c, iter(c.children), []))
                break
            kids.append(c)
        else:
            stack.pop()
            result = build(node, kids)
            if not stack:
                return result
            stack[-1][2].append(result)


def parse_brackets(text: str) -> list[Tree]:
    """Every top-level bracketed tree in ``text``."""
    if not isinstance(text, str):
        raise InvalidInputError(
            f"text: expected a string of bracketed trees, got {type(text).__name__}"
            + ("; decode it first (text.decode('utf-8'))" if isinstance(text, bytes) else ""))
    out: list[Tree] = []
    stack: list[Tree] = []
    tokens = _TOKEN.findall(text)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "(":
            label = ""
            if i + 1 < len(tokens) and tokens[i + 1] not in ("(", ")"):
                label = tokens[i + 1]
                i += 1
            stack.append(Tree(label, []))
        elif tok == ")":
            if not stack:
                raise InvalidInputError("text: unbalanced ')' in bracketed trees")
            node = stack.pop()
            if stack:
                stack[-1].children.append(node)
            else:
                out.append(node)
        else:
            if not stack:
                raise InvalidInputError(f"text: word {tok!r} outside any bracket")
            stack[-1].children.append(tok)
        i += 1
    if stack:
        raise InvalidInputError("text: unbalanced '(' in bracketed trees (a tree is not closed)")
    return out


def read_trees(paths: str | Path | Iterable[str | Path]) -> list[Tree]:
    """Trees of one or more bracketed files (``.mrg``), in file order."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    try:
        paths = list(paths)
    except TypeError as exc:
        raise InvalidInputError(
            f"paths: expected a path or a list of paths, got {type(paths).__name__}") from exc
    out: list[Tree] = []
    for p in paths:
        if not isinstance(p, (str, Path)):
            raise InvalidInputError(f"paths: {p!r:.60} is not a path")
        p = Path(p)
        if not p.is_file():
            raise InvalidInputError(f"paths: {p} is not a file of bracketed trees")
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise InvalidInputError(f"paths: {p} cannot be read ({exc.strerror})") from exc
        try:
            out.extend(parse_brackets(text))
        except InvalidInputError as exc:
            raise InvalidInputError(f"paths: {p}: {exc}") from None
    return out


def _check_tree(tree, name: str = "tree") -> Tree:
    if not isinstance(tree, Tree):
        raise InvalidInputError(
            f"{name}: expected a hiddenstate.grammar.Tree, got {type(tree).__name__}; read "
            "bracketed text with Tree.fromstring or read_trees")
    return tree


# -- treebank conventions ------------------------------------------------------------------------
def _base_label(label: str) -> str:
    """``NP-SBJ-1`` -> ``NP``, ``NP=2`` -> ``NP``; labels such as ``-LRB-`` stay."""
    if label.startswith("-"):
        return label
    return re.split(r"[-=]", label, maxsplit=1)[0] or label


def normalise(tree: Tree, terminals: str = "words", strip_functions: bool = True) -> Tree | None:
    """The treebank tree without its outer unlabelled bracket, empty elements (``-NONE-``),
    constituents left empty, and (``strip_functions``) function tags; ``terminals="tags"``
    replaces every word by its part-of-speech tag. None if nothing is left.

    Every word must be the only child of its part-of-speech node (``(NN dog)``); a word
    beside other children (``(S hello (NP ...))``, ``(NP the dog)``) is an
    :class:`~hiddenstate.errors.InvalidInputError`, not silently dropped."""
    _check_tree(tree)
    if terminals not in ("words", "tags"):
        raise InvalidInputError(f"terminals: expected 'words' or 'tags', got {terminals!r}")

    def build(node: Tree, kids: list):
        if node.is_preterminal():
            if node.label == "-NONE-":
                return None
            return Tree(node.label, [node.label if terminals == "tags" else kids[0]])
        words = [k for k in kids if isinstance(k, str)]
        if words:
            raise InvalidInputError(
                f"tree: the node {node.label!r} holds the word {words[0]!r} beside other "
                "children; each word must be the only child of its part-of-speech node, "
                f"e.g. (NN {words[0]})")
        kids = [k for k in kids if k is not None]
        if not kids:
            return None
        return Tree(_base_label(node.label) if strip_functions else node.label, kids)

    while tree.label == "" and len(tree.children) == 1 and isinstance(tree.children[0], Tree):
        tree = tree.children[0]
    return _rebuild(tree, build)


# -- CNF transforms ------------------------------------------------------------------------------
def _check_label(label: str) -> None:
    if UNARY in label or FACTOR in label:
        raise InvalidInputError(
            f"trees: label {label!r} contains {UNARY!r} or {FACTOR!r}, which mark collapsed "
            "unary chains and binarisation nodes; rename the label")


def collapse_unaries(tree: Tree) -> Tree:
    """Each chain of single-child nodes as one node labelled ``A+B+...``."""
    def build(node: Tree, kids: list) -> Tree:
        _check_label(node.label)
        if len(kids) == 1 and isinstance(kids[0], Tree):  # the chain below, collapsed
            return Tree(node.label + UNARY + kids[0].label, kids[0].children)
        return Tree(node.label, kids)

    return _rebuild(_check_tree(tree), build)


def expand_unaries(tree: Tree) -> Tree:
    """Inverse of :func:`collapse_unaries`."""
    def build(node: Tree, kids: list) -> Tree:
        labels = node.label.split(UNARY)
        out = Tree(labels[-1], kids)
        for label in reversed(labels[:-1]):
            out = Tree(label, [out])
        return out

    return _rebuild(_check_tree(tree), build)


def _check_markov(markov) -> int | None:
    if markov is not None and (isinstance(markov, bool) or not isinstance(markov, int)
                               or markov < 0):
        raise InvalidInputError(
            f"markov: expected None (keep every label) or an integer >= 0, got {markov!r}")
    return markov


def binarize(tree: Tree, markov: int | None = None) -> Tree:
    """Right-factored binarisation: ``(A c1 c2 c3)`` -> ``(A c1 (A|<c2,c3> c2 c3))``; the
    factor label keeps the labels of the remaining children, at most ``markov`` of them
    (``None``: all)."""
    markov = _check_markov(markov)

    def build(node: Tree, kids: list) -> Tree:
        if len(kids) <= 2:
            return Tree(node.label, kids)
        base = node.label.split(FACTOR)[0]
        names = [c if isinstance(c, str) else c.label for c in kids]
        rest = kids[-2:]  # innermost first: the factor node over kids[i + 1:] for each i
        for i in range(len(kids) - 3, -1, -1):
            shown = names[i + 1:] if markov is None else names[i + 1:i + 1 + markov]
            rest = [kids[i], Tree(f"{base}{FACTOR}{','.join(shown)}>", rest)]
        return Tree(node.label, rest)

    return _rebuild(_check_tree(tree), build)


def debinarize(tree: Tree) -> Tree:
    """Inverse of :func:`binarize`: splice out every node whose label has ``|<``."""
    def build(node: Tree, kids: list) -> Tree:
        out: list = []
        for c in kids:
            if isinstance(c, Tree) and FACTOR in c.label:
                out.extend(c.children)  # already spliced: the factor chain below is flat
            else:
                out.append(c)
        return Tree(node.label, out)

    return _rebuild(_check_tree(tree), build)


def to_cnf(tree: Tree, markov: int | None = None) -> Tree:
    """Collapse unary chains, then binarise: a tree of a CNF grammar."""
    return binarize(collapse_unaries(tree), markov)


def from_cnf(tree: Tree) -> Tree:
    """Inverse of :func:`to_cnf`."""
    return expand_unaries(debinarize(tree))

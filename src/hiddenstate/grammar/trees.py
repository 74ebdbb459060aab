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
    """A node: ``label`` and ``children`` (sub-trees or word strings)."""

    __slots__ = ("children", "label")

    def __init__(self, label: str, children: list):
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
        inner = " ".join(str(c) for c in self.children)
        return f"({self.label} {inner})" if self.label or inner else "()"

    def __repr__(self) -> str:
        return f"Tree.fromstring({str(self)!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Tree) and self.label == other.label \
            and self.children == other.children

    def __hash__(self) -> int:
        return hash(str(self))

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
        def walk(node, start):
            yield_list.append((node, start, 0))
            slot = len(yield_list) - 1
            pos = start
            for child in node.children:
                pos = pos + 1 if isinstance(child, str) else walk(child, pos)
            yield_list[slot] = (node, start, pos)
            return pos

        yield_list: list = []
        walk(self, 0)
        return iter(yield_list)

    def unlabelled(self) -> Tree:
        """The same shape with every label blank (BT compares these)."""
        return Tree("", [c if isinstance(c, str) else c.unlabelled() for c in self.children])


def parse_brackets(text: str) -> list[Tree]:
    """Every top-level bracketed tree in ``text``."""
    out: list[Tree] = []
    stack: list[Tree] = []
    tokens = _TOKEN.findall(text)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "(":
            label = ""
            if i + 1 < len(tokens) and tokens[i + 1] not in "()":
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
    out: list[Tree] = []
    for p in paths:
        p = Path(p)
        if not p.is_file():
            raise InvalidInputError(f"paths: {p} is not a file of bracketed trees")
        out.extend(parse_brackets(p.read_text(encoding="utf-8", errors="replace")))
    return out


# -- treebank conventions ------------------------------------------------------------------------
def _base_label(label: str) -> str:
    """``NP-SBJ-1`` -> ``NP``, ``NP=2`` -> ``NP``; labels such as ``-LRB-`` stay."""
    if label.startswith("-"):
        return label
    return re.split(r"[-=]", label, maxsplit=1)[0] or label


def normalise(tree: Tree, terminals: str = "words", strip_functions: bool = True) -> Tree | None:
    """The treebank tree without its outer unlabelled bracket, empty elements (``-NONE-``),
    constituents left empty, and (``strip_functions``) function tags; ``terminals="tags"``
    replaces every word by its part-of-speech tag. None if nothing is left."""
    if terminals not in ("words", "tags"):
        raise InvalidInputError(f"terminals: expected 'words' or 'tags', got {terminals!r}")

    def walk(node: Tree):
        if node.is_preterminal():
            if node.label == "-NONE-":
                return None
            word = node.label if terminals == "tags" else node.children[0]
            return Tree(node.label, [word])
        kids = [k for k in (walk(c) for c in node.children if isinstance(c, Tree))
                if k is not None]
        if not kids:
            return None
        return Tree(_base_label(node.label) if strip_functions else node.label, kids)

    while tree.label == "" and len(tree.children) == 1 and isinstance(tree.children[0], Tree):
        tree = tree.children[0]
    return walk(tree)


# -- CNF transforms ------------------------------------------------------------------------------
def _check_label(label: str) -> None:
    if UNARY in label or FACTOR in label:
        raise InvalidInputError(
            f"trees: label {label!r} contains {UNARY!r} or {FACTOR!r}, which mark collapsed "
            "unary chains and binarisation nodes; rename the label")


def collapse_unaries(tree: Tree) -> Tree:
    """Each chain of single-child nodes as one node labelled ``A+B+...``."""
    _check_label(tree.label)
    label, node = tree.label, tree
    while len(node.children) == 1 and isinstance(node.children[0], Tree):
        node = node.children[0]
        _check_label(node.label)
        label += UNARY + node.label
    return Tree(label, [c if isinstance(c, str) else collapse_unaries(c)
                        for c in node.children])


def expand_unaries(tree: Tree) -> Tree:
    """Inverse of :func:`collapse_unaries`."""
    kids = [c if isinstance(c, str) else expand_unaries(c) for c in tree.children]
    labels = tree.label.split(UNARY)
    node = Tree(labels[-1], kids)
    for label in reversed(labels[:-1]):
        node = Tree(label, [node])
    return node


def binarize(tree: Tree, markov: int | None = None) -> Tree:
    """Right-factored binarisation: ``(A c1 c2 c3)`` -> ``(A c1 (A|<c2,c3> c2 c3))``; the
    factor label keeps the labels of the remaining children, at most ``markov`` of them
    (``None``: all)."""
    kids = [c if isinstance(c, str) else binarize(c, markov) for c in tree.children]
    if len(kids) <= 2:
        return Tree(tree.label, kids)
    base = tree.label.split(FACTOR)[0]

    def factor(rest):
        if len(rest) == 2:
            return rest
        names = [c if isinstance(c, str) else c.label for c in rest[1:]]
        if markov is not None:
            names = names[:markov]
        return [rest[0], Tree(f"{base}{FACTOR}{','.join(names)}>", factor(rest[1:]))]

    return Tree(tree.label, factor(kids))


def debinarize(tree: Tree) -> Tree:
    """Inverse of :func:`binarize`: splice out every node whose label has ``|<``."""
    kids: list = []
    for c in tree.children:
        if isinstance(c, str):
            kids.append(c)
            continue
        c = debinarize(c)
        if FACTOR in c.label:
            kids.extend(c.children)
        else:
            kids.append(c)
    return Tree(tree.label, kids)


def to_cnf(tree: Tree, markov: int | None = None) -> Tree:
    """Collapse unary chains, then binarise: a tree of a CNF grammar."""
    return binarize(collapse_unaries(tree), markov)


def from_cnf(tree: Tree) -> Tree:
    """Inverse of :func:`to_cnf`."""
    return expand_unaries(debinarize(tree))

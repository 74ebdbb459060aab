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
    """A node of a bracketed parse tree: a label and its children.

    Trees compare equal when they have the same labels, shape and words; ``str(tree)`` is
    the bracketed form. No method recurses in Python, so a tree of any depth works.

    Parameters
    ----------
    label : str
        The node's label (``""`` for the unlabelled outer bracket of a treebank tree).
    children : list of (Tree or str)
        Its sub-trees and words, in order; a preterminal has one word,
        ``Tree("NN", ["dog"])``.

    Attributes
    ----------
    label : str
        The node's label.
    children : list of (Tree or str)
        Its sub-trees and words.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``label`` is not a string, or ``children`` is not a list of trees and strings.

    See Also
    --------
    parse_brackets : Every tree of a bracketed text.
    read_trees : The trees of treebank files.

    Examples
    --------
    >>> from hiddenstate.grammar import Tree
    >>> tree = Tree.fromstring("(S (NP she) (VP (V eats) (NP fish)))")
    >>> tree.label, tree.leaves()
    ('S', ['she', 'eats', 'fish'])
    >>> tree == Tree("S", [Tree("NP", ["she"]),
    ...                    Tree("VP", [Tree("V", ["eats"]), Tree("NP", ["fish"])])])
    True
    """

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
        """Read one bracketed tree.

        Parameters
        ----------
        text : str
            Exactly one bracketed tree, ``"(S (NP she) (VP ...))"``.

        Returns
        -------
        Tree
            The tree.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the brackets do not balance or ``text`` holds another number of trees
            (:func:`parse_brackets` reads several).
        """
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
        """Whether the node has exactly one child, a word (a part-of-speech node).

        Returns
        -------
        bool
            True for ``(NN dog)``.
        """
        return len(self.children) == 1 and isinstance(self.children[0], str)

    def leaves(self) -> list[str]:
        """Return the words of the tree, left to right.

        Returns
        -------
        list of str
            The leaves.
        """
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
        """Iterate over every node with its span over the leaves, in pre-order.

        Returns
        -------
        iterator of (Tree, int, int)
            ``(node, start, end)``: the node covers the leaves ``start .. end - 1``.

        Examples
        --------
        >>> from hiddenstate.grammar import Tree
        >>> tree = Tree.fromstring("(S (NP she) (VP (V eats) (NP fish)))")
        >>> [(node.label, i, j) for node, i, j in tree.nodes()]
        [('S', 0, 3), ('NP', 0, 1), ('VP', 1, 3), ('V', 1, 2), ('NP', 2, 3)]
        """
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
        """Return the same shape with every label blank (the BT score compares these).

        Returns
        -------
        Tree
            A new tree, its labels ``""``, its words kept.
        """
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
    """Read every top-level bracketed tree of a text.

    A bracket's label is the token after ``(`` when it is not a bracket (the outer bracket
    of a treebank tree has none).

    Parameters
    ----------
    text : str
        Bracketed trees, ``"(S (NP she) ...)"``, one after the other.

    Returns
    -------
    list of Tree
        The trees in order.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``text`` is not a string, the brackets do not balance, or a word lies outside
        every bracket.

    Examples
    --------
    >>> from hiddenstate.grammar import parse_brackets
    >>> parse_brackets("(A x) (B (C y) z)")
    [Tree.fromstring('(A x)'), Tree.fromstring('(B (C y) z)')]
    """
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
    """Read the trees of one or more bracketed files (``.mrg``), in file order.

    Files are read as UTF-8 (undecodable bytes replaced).

    Parameters
    ----------
    paths : str, pathlib.Path or iterable of them
        A file or a list of files.

    Returns
    -------
    list of Tree
        The trees of every file, in order.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If a path is not a readable file or a file's brackets do not balance (the message
        names the file).

    See Also
    --------
    normalise : Remove the treebank conventions.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hiddenstate.grammar import read_trees
    >>> _ = Path("wsj_0001.mrg").write_text("( (S (NP she) (VP eats)) )\\n( (S (NP he)) )\\n")
    >>> [str(tree) for tree in read_trees("wsj_0001.mrg")]
    ['( (S (NP she) (VP eats)))', '( (S (NP he)))']
    """
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
    """Remove the treebank conventions from a tree.

    The outer unlabelled bracket, empty elements (``-NONE-``), the constituents left empty
    by them and (``strip_functions``) function tags and co-indices (``NP-SBJ-1`` -> ``NP``;
    labels such as ``-LRB-`` stay) are removed; ``terminals="tags"`` replaces every word by
    its part-of-speech tag.

    Every word must be the only child of its part-of-speech node (``(NN dog)``); a word
    beside other children (``(S hello (NP ...))``, ``(NP the dog)``) is an
    :class:`~hiddenstate.errors.InvalidInputError`, not silently dropped.

    Parameters
    ----------
    tree : Tree
        A treebank tree.
    terminals : {"words", "tags"}, default="words"
        Keep the words, or replace each by its part-of-speech tag.
    strip_functions : bool, default=True
        Strip function tags and co-indices from the labels.

    Returns
    -------
    Tree or None
        The normalised tree; None if nothing is left.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``tree`` is not a Tree, ``terminals`` is unknown, or a word is not the only child
        of its node.

    See Also
    --------
    to_cnf : The next step towards a grammar.

    Examples
    --------
    >>> from hiddenstate.grammar import Tree, normalise
    >>> tree = Tree.fromstring("( (S (NP-SBJ-1 (PRP She)) (VP (VBD saw) (NP (-NONE- *T*)))))")
    >>> print(normalise(tree))
    (S (NP (PRP She)) (VP (VBD saw)))
    >>> print(normalise(tree, terminals="tags"))
    (S (NP (PRP PRP)) (VP (VBD VBD)))
    """
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
    """Collapse each chain of single-child nodes into one node labelled ``A+B+...``.

    A chain ending in a part-of-speech node becomes a preterminal (``NP+PRP``).

    Parameters
    ----------
    tree : Tree
        A tree whose labels hold neither ``+`` nor ``|<``.

    Returns
    -------
    Tree
        The collapsed tree (a new one).

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``tree`` is not a Tree or a label holds ``+`` or ``|<``.

    See Also
    --------
    expand_unaries : The inverse.

    Examples
    --------
    >>> from hiddenstate.grammar import Tree, normalise
    >>> tree = normalise(Tree.fromstring(
    ...     "( (S (NP-SBJ (PRP She)) (VP (VBD saw) (NP (DT the) (NN dog)) (PP (IN with)"
    ...     " (NP (NN fish))))))"))
    >>> from hiddenstate.grammar import collapse_unaries
    >>> print(collapse_unaries(tree))
    (S (NP+PRP She) (VP (VBD saw) (NP (DT the) (NN dog)) (PP (IN with) (NP+NN fish))))
    """
    def build(node: Tree, kids: list) -> Tree:
        _check_label(node.label)
        if len(kids) == 1 and isinstance(kids[0], Tree):  # the chain below, collapsed
            return Tree(node.label + UNARY + kids[0].label, kids[0].children)
        return Tree(node.label, kids)

    return _rebuild(_check_tree(tree), build)


def expand_unaries(tree: Tree) -> Tree:
    """Expand collapsed unary chains back into chains: the inverse of collapse_unaries.

    Parameters
    ----------
    tree : Tree
        A tree with collapsed chains (labels ``A+B+...``).

    Returns
    -------
    Tree
        The tree with each ``A+B`` node expanded into ``(A (B ...))`` (a new one).

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``tree`` is not a Tree.

    Examples
    --------
    >>> from hiddenstate.grammar import Tree, normalise
    >>> tree = normalise(Tree.fromstring(
    ...     "( (S (NP-SBJ (PRP She)) (VP (VBD saw) (NP (DT the) (NN dog)) (PP (IN with)"
    ...     " (NP (NN fish))))))"))
    >>> from hiddenstate.grammar import collapse_unaries, expand_unaries
    >>> expand_unaries(collapse_unaries(tree)) == tree
    True
    """
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
    """Binarise a tree by right factoring.

    ``(A c1 c2 c3)`` becomes ``(A c1 (A|<c2,c3> c2 c3))``: the factor label keeps the
    labels of the remaining children, at most ``markov`` of them (horizontal
    Markovisation).

    Parameters
    ----------
    tree : Tree
        The tree.
    markov : int or None, default=None
        The most child labels a factor label keeps (>= 0); None: all.

    Returns
    -------
    Tree
        A tree whose nodes have at most two children (a new one).

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``tree`` is not a Tree or ``markov`` is not None or an integer >= 0.

    See Also
    --------
    debinarize : The inverse.
    to_cnf : Collapse unary chains, then binarise.

    Examples
    --------
    >>> from hiddenstate.grammar import Tree, binarize
    >>> tree = Tree.fromstring("(VP (V saw) (NP dog) (PP (P with) (NP fish)))")
    >>> print(binarize(tree))
    (VP (V saw) (VP|<NP,PP> (NP dog) (PP (P with) (NP fish))))
    >>> print(binarize(tree, markov=1))
    (VP (V saw) (VP|<NP> (NP dog) (PP (P with) (NP fish))))
    """
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
    """Splice out every node whose label has ``|<``: the inverse of binarize.

    Parameters
    ----------
    tree : Tree
        A binarised tree.

    Returns
    -------
    Tree
        The tree without its factor nodes (a new one).

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``tree`` is not a Tree.

    Examples
    --------
    >>> from hiddenstate.grammar import Tree, binarize, debinarize
    >>> tree = Tree.fromstring("(VP (V saw) (NP dog) (PP (P with) (NP fish)))")
    >>> debinarize(binarize(tree, markov=0)) == tree
    True
    """
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
    """Turn a tree into a tree of a grammar in Chomsky normal form.

    :func:`collapse_unaries`, then :func:`binarize`. :func:`from_cnf` gives the tree back
    for every normalised tree.

    Parameters
    ----------
    tree : Tree
        A (normalised) tree.
    markov : int or None, default=None
        Horizontal Markovisation of the factor labels (see :func:`binarize`).

    Returns
    -------
    Tree
        A CNF tree: every node has two sub-trees or one word.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        As :func:`collapse_unaries` and :func:`binarize`.

    See Also
    --------
    hiddenstate.grammar.Grammar.from_trees : The grammar of CNF trees.
    hiddenstate.PCFG.from_treebank : A PCFG learned from treebank trees.

    Examples
    --------
    >>> from hiddenstate.grammar import Tree, normalise
    >>> tree = normalise(Tree.fromstring(
    ...     "( (S (NP-SBJ (PRP She)) (VP (VBD saw) (NP (DT the) (NN dog)) (PP (IN with)"
    ...     " (NP (NN fish))))))"))
    >>> from hiddenstate.grammar import from_cnf, to_cnf
    >>> cnf = to_cnf(tree)
    >>> print(cnf)
    (S (NP+PRP She) (VP (VBD saw) (VP|<NP,PP> (NP (DT the) (NN dog))
        (PP (IN with) (NP+NN fish)))))
    >>> from_cnf(cnf) == tree
    True
    """
    return binarize(collapse_unaries(tree), markov)


def from_cnf(tree: Tree) -> Tree:
    """Turn a CNF tree back into the tree it came from: the inverse of to_cnf.

    :func:`debinarize`, then :func:`expand_unaries`.

    Parameters
    ----------
    tree : Tree
        A CNF tree (from :func:`to_cnf`, or a parse of a grammar read from such trees).

    Returns
    -------
    Tree
        The tree with its factor nodes spliced out and its unary chains expanded.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``tree`` is not a Tree.

    Examples
    --------
    >>> from hiddenstate.grammar import Tree, from_cnf
    >>> cnf = Tree.fromstring("(S (NP+PRP She) (VP (V saw) (VP|<NP> (NP it) (ADV too))))")
    >>> print(from_cnf(cnf))
    (S (NP (PRP She)) (VP (V saw) (NP it) (ADV too)))
    """
    return expand_unaries(debinarize(tree))

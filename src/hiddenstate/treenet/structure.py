"""The graph of a tree or DAG network of discrete variables (Funk 2015): hidden variables,
each with its own number of states, observed leaves over symbols, and parent -> child arrows.

A :class:`Structure` is built once from the estimator's hyper-parameters and checked there
(:func:`build`); the passes in :mod:`.passes` take it as given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError

_NAME = re.compile(r"[A-Za-z0-9_.]+")


@dataclass(frozen=True)
class Structure:
    """The checked graph of a network, its variables in a topological order.

    Every parent comes before its children. Variables are referred to by their index ``v``
    in this order. Built by :func:`build` (which checks the declaration); the passes of
    :class:`hiddenstate.TreeNet` take it as given.

    Parameters
    ----------
    names : tuple of str
        ``names[v]``, the name of variable ``v``.
    sizes : tuple of int
        ``sizes[v]``, its number of states (of symbols for an observed leaf).
    parents : tuple of tuple of int
        ``parents[v]``, the indices of its parents.
    children : tuple of tuple of int
        ``children[v]``, the indices of its children.
    edges : tuple of tuple of int
        ``(parent, child)`` index pairs in the order the user declared the arrows.
    edge_index : dict
        ``edge_index[(p, c)]``, the position of the arrow ``p -> c`` in ``edges``.
    observed : tuple of int
        The indices of the observed leaves, in the user's column order (the columns of
        ``X``).
    hidden : tuple of int
        The indices of the hidden variables, in the user's order.

    See Also
    --------
    build : Check a declared graph and build its structure.
    hiddenstate.TreeNet : The estimator that learns a network of this structure.

    Examples
    --------
    >>> from hiddenstate.treenet import build
    >>> s = build({"h": 2, "g": 3}, [("h", "g"), ("g", "x"), ("h", "y")], {"x": 4, "y": 2})
    >>> s.names, s.sizes
    (('h', 'g', 'y', 'x'), (2, 3, 2, 4))
    >>> s.observed, s.roots, s.is_tree
    ((3, 2), (0,), True)
    """

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    parents: tuple[tuple[int, ...], ...]
    children: tuple[tuple[int, ...], ...]
    edges: tuple[tuple[int, int], ...]
    edge_index: dict
    observed: tuple[int, ...]
    hidden: tuple[int, ...]

    @property
    def n_vars(self) -> int:
        """The number of variables, hidden and observed."""
        return len(self.names)

    @property
    def roots(self) -> tuple[int, ...]:
        """The indices of the variables without a parent, in topological order."""
        return tuple(v for v in range(self.n_vars) if not self.parents[v])

    @property
    def is_tree(self) -> bool:
        """Whether every variable has at most one parent (a tree or a forest of trees)."""
        return all(len(p) <= 1 for p in self.parents)

    def edge_name(self, e: int) -> str:
        """The arrow ``e`` as ``"parent->child"``, for messages and reports.

        Parameters
        ----------
        e : int
            The position of the arrow in :attr:`edges`.

        Returns
        -------
        str
            ``"{parent name}->{child name}"``.
        """
        p, c = self.edges[e]
        return f"{self.names[p]}->{self.names[c]}"


def _check_names(mapping, arg: str) -> dict[str, int]:
    if not isinstance(mapping, dict):
        raise InvalidInputError(
            f"{arg}: expected a dict {{variable name: number of states}}, got "
            f"{type(mapping).__name__}")
    out = {}
    for name, n in mapping.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise InvalidInputError(
                f"{arg}: variable name {name!r} must be a non-empty string of letters, digits, "
                "'_' or '.'")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise InvalidInputError(
                f"{arg}: {name!r} has {n!r} states; give a positive integer")
        out[name] = int(n)
    return out


def build(n_states, edges, observed) -> Structure:
    """Check a declared graph and order it topologically.

    Every observed leaf needs a parent and may have no child; the graph must be acyclic.
    The order is Kahn's algorithm in declaration order (hidden variables first, then the
    observed ones).

    Parameters
    ----------
    n_states : dict of str to int
        Hidden variable name -> number of states (at least one variable; names of letters,
        digits, ``_`` or ``.``).
    edges : iterable of (str, str)
        The ``(parent, child)`` arrows, by name, each declared once.
    observed : dict of str to int or None
        Observed leaf name -> number of symbols; the columns of ``X``, in this order.
        None: no observed variable.

    Returns
    -------
    Structure
        The checked graph, its variables in topological order.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If a name or a size is invalid, a name is both hidden and observed, an arrow names
        an undeclared variable, is a self-loop, is declared twice or leaves an observed
        variable, an observed variable has no parent, or the graph has a cycle.

    See Also
    --------
    layered : The hyper-parameters of a layered network.

    Examples
    --------
    >>> from hiddenstate.treenet import build
    >>> s = build({"h": 2}, [("h", "x"), ("h", "y")], {"x": 3, "y": 3})
    >>> s.names, s.edges
    (('h', 'x', 'y'), ((0, 1), (0, 2)))
    >>> build({"h": 2}, [("h", "x"), ("x", "h")], {"x": 3})
    Traceback (most recent call last):
    ...
    hiddenstate.errors.InvalidInputError: edges: observed variable 'x' has a child 'h'; ...
    """
    hidden = _check_names(n_states, "n_states")
    obs = _check_names({} if observed is None else observed, "observed")
    if not hidden:
        raise InvalidInputError("n_states: declare at least one hidden variable")
    both = sorted(set(hidden) & set(obs))
    if both:
        raise InvalidInputError(
            f"observed: {both[0]!r} is also a hidden variable in n_states; names must be unique")
    sizes = {**hidden, **obs}
    if isinstance(edges, (str, bytes)) or not hasattr(edges, "__iter__"):
        raise InvalidInputError(
            "edges: expected a list of (parent, child) pairs of variable names")
    pairs, seen = [], set()
    for item in edges:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise InvalidInputError(f"edges: {item!r} is not a (parent, child) pair")
        p, c = item
        for end in (p, c):
            if end not in sizes:
                raise InvalidInputError(
                    f"edges: {end!r} in {item!r} is not declared in n_states or observed")
        if p == c:
            raise InvalidInputError(f"edges: {p!r} -> {c!r} is a self-loop")
        if p in obs:
            raise InvalidInputError(
                f"edges: observed variable {p!r} has a child {c!r}; observed variables must be "
                "leaves (give soft evidence on a hidden variable with likelihoods= instead)")
        if (p, c) in seen:
            raise InvalidInputError(f"edges: {p!r} -> {c!r} is declared twice")
        seen.add((p, c))
        pairs.append((p, c))
    parents_by_name: dict[str, list[str]] = {name: [] for name in sizes}
    for p, c in pairs:
        parents_by_name[c].append(p)
    orphans = [name for name in obs if not parents_by_name[name]]
    if orphans:
        raise InvalidInputError(
            f"edges: observed variable {orphans[0]!r} has no parent; connect it to a hidden "
            "variable")
    # Kahn's algorithm in declaration order (hidden first, then observed)
    declared = list(hidden) + list(obs)
    indegree = {name: len(parents_by_name[name]) for name in declared}
    kids: dict[str, list[str]] = {name: [] for name in declared}
    for p, c in pairs:
        kids[p].append(c)
    order, ready = [], [n for n in declared if indegree[n] == 0]
    while ready:
        name = ready.pop(0)
        order.append(name)
        for c in kids[name]:
            indegree[c] -= 1
            if indegree[c] == 0:
                ready.append(c)
    if len(order) != len(declared):
        cyclic = sorted(n for n in declared if indegree[n] > 0)
        raise InvalidInputError(f"edges: the graph has a cycle through {cyclic}; it must be a DAG")
    index = {name: i for i, name in enumerate(order)}
    edge_list = tuple((index[p], index[c]) for p, c in pairs)
    parents = tuple(tuple(index[p] for p in parents_by_name[name]) for name in order)
    children_l: list[list[int]] = [[] for _ in order]
    for p, c in edge_list:
        children_l[p].append(c)
    children = tuple(tuple(c) for c in children_l)
    return Structure(
        names=tuple(order), sizes=tuple(sizes[n] for n in order), parents=parents,
        children=children, edges=edge_list,
        edge_index={pc: e for e, pc in enumerate(edge_list)},
        observed=tuple(index[n] for n in obs), hidden=tuple(index[n] for n in hidden))


def layered(layers, n_observed: int, n_symbols: int, fan_in: int | None = None,
            prefix: str = "h") -> dict:
    """Build the hyper-parameters of a layered network.

    Each variable is a child of every variable of the layer above (or of the ``fan_in``
    nearest ones, which with ``fan_in=1`` and shrinking layers gives a tree), and
    ``n_observed`` leaves ``x0 .. x{n-1}`` over ``n_symbols`` symbols hang below the last
    layer the same way. Hidden variable ``i`` of layer ``d`` is named
    ``{prefix}{d}_{i}``. The arguments are checked when the result is passed to
    :class:`hiddenstate.TreeNet` (:func:`build`).

    Parameters
    ----------
    layers : sequence of (int, int)
        ``(variables, states)`` of each hidden layer, from the top down.
    n_observed : int
        The number of observed leaves.
    n_symbols : int
        The number of symbols of every observed leaf.
    fan_in : int or None, default=None
        The number of parents of each variable among the nearest variables of the layer
        above; None: every variable of the layer above.
    prefix : str, default="h"
        The first letters of the hidden variables' names.

    Returns
    -------
    dict
        ``{"n_states": ..., "edges": ..., "observed": ...}``, the keyword arguments of
        :class:`hiddenstate.TreeNet`.

    See Also
    --------
    build : Check a declared graph and build its structure.

    Examples
    --------
    >>> from hiddenstate.treenet import layered
    >>> spec = layered([(2, 3), (1, 2)], n_observed=2, n_symbols=5)
    >>> spec["n_states"]
    {'h0_0': 3, 'h0_1': 3, 'h1_0': 2}
    >>> spec["edges"]
    [('h0_0', 'h1_0'), ('h0_1', 'h1_0'), ('h1_0', 'x0'), ('h1_0', 'x1')]
    >>> import hiddenstate as hs
    >>> model = hs.TreeNet(**spec)
    """
    n_states, edges, above = {}, [], []
    for depth, (width, states) in enumerate(layers):
        names = [f"{prefix}{depth}_{i}" for i in range(width)]
        for name in names:
            n_states[name] = states
        edges += _connect(above, names, fan_in)
        above = names
    observed = {f"x{i}": n_symbols for i in range(n_observed)}
    edges += _connect(above, list(observed), fan_in)
    return {"n_states": n_states, "edges": edges, "observed": observed}


def _connect(above: list[str], below: list[str], fan_in: int | None) -> list[tuple[str, str]]:
    if not above:
        return []
    if fan_in is None or fan_in >= len(above):
        return [(p, c) for c in below for p in above]
    out = []
    for j, c in enumerate(below):
        centre = (j + 0.5) * len(above) / len(below)
        first = int(np.clip(round(centre - fan_in / 2), 0, len(above) - fan_in))
        out += [(above[first + k], c) for k in range(fan_in)]
    return out

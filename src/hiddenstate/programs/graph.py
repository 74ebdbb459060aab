r"""The compiled explanation graph of a batch of goals and the passes over it.

Built by :func:`hiddenstate.programs.tabling.explain`; the arrays are described in
:mod:`hiddenstate.kernels.explanation_graph`. The passes take the flat vector of log switch
probabilities (``log theta``, one entry per switch outcome) and return arrays per node;
:class:`Explanation` turns a derivation back into goals and ``msw`` atoms.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .._validation import check_memory
from ..kernels import explanation_graph as kg
from .program import Goal, Msw


@dataclass(frozen=True)
class Explanation:
    """One explanation (derivation) of a goal.

    Parameters
    ----------
    logprob : float
        The sum of the log-probabilities of its switch outcomes.
    steps : tuple of (Goal, int)
        The goals it uses in pre-order, each with the index of the alternative taken (its
        position in the list the goal's function returned).
    msws : tuple of Msw
        Its switch outcomes in the same order (an outcome drawn twice appears twice).

    Examples
    --------
    >>> import hiddenstate as hs
    >>> from hiddenstate.programs import Program, msw
    >>> prog = Program("coins")
    >>> prog.switch("coin", ["a", "b"])
    'coin'
    >>> toss = prog.switch_family("toss", ["h", "t"], keys=["a", "b"])
    >>> @prog.goal
    ... def two(x, y):
    ...     return [[msw("coin", c), msw(toss(c), x), msw(toss(c), y)] for c in "ab"]
    >>> e = hs.ProgramModel(prog).viterbi(two("h", "t"))
    >>> e.steps, e.prob
    (((two('h', 't'), 0),), 0.125...)
    >>> e.msws
    (msw('coin', 'a'), msw(('toss', 'a'), 'h'), msw(('toss', 'a'), 't'))
    """

    logprob: float
    steps: tuple[tuple[Goal, int], ...]
    msws: tuple[Msw, ...]

    @property
    def prob(self) -> float:
        """Its probability, ``exp(logprob)``."""
        return float(np.exp(self.logprob))

    def __repr__(self) -> str:
        shown = ", ".join(map(repr, self.msws[:6])) + (", ..." if len(self.msws) > 6 else "")
        return f"Explanation(p={self.prob:.6g}, [{shown}])"


@dataclass
class ExplanationGraph:
    """The AND/OR explanation graph of a batch of goals, in topological order.

    Built by :func:`~hiddenstate.programs.explain`; the arrays are described in
    :mod:`hiddenstate.kernels.explanation_graph`. Nodes are goals (OR: their alternatives),
    alternatives are conjunctions (AND) of switch outcomes and child goals.

    Parameters
    ----------
    node_ptr : ndarray of shape (n_nodes + 1,)
        Node ``n``'s alternatives are ``node_ptr[n]:node_ptr[n + 1]``.
    item_ptr : ndarray of shape (n_alts + 1,)
        Alternative ``a``'s items are ``items[item_ptr[a]:item_ptr[a + 1]]``.
    items : ndarray of int
        A child node (``>= 0``) or ``~p`` for flat parameter ``p`` (``< 0``).
    alt_orig : ndarray of shape (n_alts,)
        The position of each alternative in the list its goal's function returned.
    goals : list of Goal
        ``goals[n]`` is node ``n``'s goal.
    roots : ndarray of shape (n_roots,)
        ``roots[i]`` is the node of the i-th goal explained.
    n_params : int
        The length of the flat parameter vector.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.programs import Program, explain, msw
    >>> prog = Program("coins")
    >>> prog.switch("coin", ["a", "b"])
    'coin'
    >>> toss = prog.switch_family("toss", ["h", "t"], keys=["a", "b"])
    >>> @prog.goal
    ... def two(x, y):
    ...     return [[msw("coin", c), msw(toss(c), x), msw(toss(c), y)] for c in "ab"]
    >>> graph = explain(prog, [two("h", "h"), two("h", "t")])
    >>> logtheta = np.log([0.5, 0.5, 0.9, 0.1, 0.2, 0.8])  # coin, toss(a), toss(b)
    >>> ins, cond = graph.inside(logtheta)
    >>> np.exp(ins[graph.roots]).round(4)
    array([0.425, 0.125])
    >>> graph.expected(logtheta)[2].round(4)  # expected counts of the six outcomes
    array([1.3129, 0.6871, 2.2659, 0.36  , 0.7341, 0.64  ])
    """

    node_ptr: np.ndarray
    item_ptr: np.ndarray
    items: np.ndarray
    alt_orig: np.ndarray
    goals: list
    roots: np.ndarray
    n_params: int

    @property
    def n_nodes(self) -> int:
        """The number of nodes (goals)."""
        return len(self.node_ptr) - 1

    @property
    def n_alts(self) -> int:
        """The number of alternatives."""
        return len(self.item_ptr) - 1

    @cached_property
    def width(self) -> int:
        """The largest number of child goals in one alternative."""
        alt = np.repeat(np.arange(self.n_alts), np.diff(self.item_ptr))
        kids = np.bincount(alt[self.items >= 0], minlength=self.n_alts)
        return int(kids.max()) if self.n_alts else 0

    @cached_property
    def node_of(self) -> dict:
        """Goal -> its node."""
        return {g: n for n, g in enumerate(self.goals)}

    @cached_property
    def uses_switch(self) -> np.ndarray:
        """True at the flat parameter indices some alternative uses."""
        mask = np.zeros(self.n_params, dtype=np.bool_)
        mask[~self.items[self.items < 0]] = True
        return mask

    def root_weights(self, weights=None) -> np.ndarray:
        """Return the weight of every node as an observed goal (repeated goals add up).

        Parameters
        ----------
        weights : array-like of shape (n_roots,) or None, default=None
            The weight of each observed goal (None: 1 each).

        Returns
        -------
        ndarray of shape (n_nodes,)
            The weights (0 for a node that is not a root).
        """
        w = np.zeros(self.n_nodes)
        np.add.at(w, self.roots, 1.0 if weights is None else weights)
        return w

    def _args(self):
        return self.node_ptr, self.item_ptr, self.items

    # -- sum-product ---------------------------------------------------------------------------
    def inside(self, logtheta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the log inside probability of every node (the sum-product pass).

        Parameters
        ----------
        logtheta : ndarray of shape (n_params,)
            The log-probability of every switch outcome (flat layout).

        Returns
        -------
        ins_node : ndarray of shape (n_nodes,)
            The log inside probability of every node.
        cond : ndarray of shape (n_alts,)
            The probability of every alternative given its node.
        """
        ins_node = np.empty(self.n_nodes)
        cond = np.empty(self.n_alts)
        kg.inside(logtheta, *self._args(), ins_node, cond)
        return ins_node, cond

    def expected(self, logtheta: np.ndarray, weights=None):
        """Run the inside pass then the outside pass.

        Parameters
        ----------
        logtheta : ndarray of shape (n_params,)
            The log-probability of every switch outcome (flat layout).
        weights : array-like of shape (n_roots,) or None, default=None
            The weight of each observed goal (None: 1 each).

        Returns
        -------
        ins_node : ndarray of shape (n_nodes,)
            Log inside probabilities.
        uses : ndarray of shape (n_nodes,)
            Expected uses of every node.
        counts : ndarray of shape (n_params,)
            Expected counts of every switch outcome, for the observed goals weighted by
            ``weights``.
        """
        ins_node, cond = self.inside(logtheta)
        uses = self.root_weights(weights)
        counts = np.zeros(self.n_params)
        kg.outside_counts(*self._args(), cond, uses, counts)
        return ins_node, uses, counts

    # -- max-product ---------------------------------------------------------------------------
    def viterbi(self, logtheta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the best explanation of every node (the max-product pass).

        Parameters
        ----------
        logtheta : ndarray of shape (n_params,)
            The log-probability of every switch outcome (flat layout).

        Returns
        -------
        vit : ndarray of shape (n_nodes,)
            The log-probability of the best explanation of every node.
        best : ndarray of shape (n_nodes,)
            Its alternative at every node.
        """
        vit = np.empty(self.n_nodes)
        best = np.empty(self.n_nodes, dtype=np.int64)
        kg.viterbi(logtheta, *self._args(), vit, best)
        return vit, best

    def viterbi_counts(self, best: np.ndarray, weights=None) -> tuple[np.ndarray, np.ndarray]:
        """Count the switch outcomes along the Viterbi explanations of the observed goals.

        Parameters
        ----------
        best : ndarray of shape (n_nodes,)
            The best alternative of every node (from :meth:`viterbi`).
        weights : array-like of shape (n_roots,) or None, default=None
            The weight of each observed goal (None: 1 each).

        Returns
        -------
        counts : ndarray of shape (n_params,)
            The switch counts.
        chosen : ndarray of shape (n_nodes,)
            The alternative each used node takes (-1 elsewhere).
        """
        uses = self.root_weights(weights)
        counts = np.zeros(self.n_params)
        chosen = np.empty(self.n_nodes, dtype=np.int64)
        kg.viterbi_counts(self.item_ptr, self.items, best, uses, counts, chosen)
        return counts, chosen

    def kbest(self, logtheta: np.ndarray, k: int, name: str = "k"):
        """Return the ``k`` best explanations of every node.

        See :func:`hiddenstate.kernels.explanation_graph.kbest`; the tables are checked
        against the available memory first.

        Parameters
        ----------
        logtheta : ndarray of shape (n_params,)
            The log-probability of every switch outcome (flat layout).
        k : int
            The number of explanations per node.
        name : str, default="k"
            The argument the memory error names.

        Returns
        -------
        score : ndarray of shape (n_nodes, k)
            Their log-probabilities (``-inf`` past the last).
        alt : ndarray of shape (n_nodes, k)
            The alternative of each.
        rank : ndarray of shape (n_nodes, k, width)
            The rank used for each child goal.

        Raises
        ------
        hiddenstate.errors.InsufficientMemoryError
            If the tables would not fit in memory.
        """
        check_memory({name: float(self.n_nodes) * k * (self.width + 2) * 8},
                     f"keeping the {k} best explanations of each of {self.n_nodes} goals",
                     {name: f"use a smaller {name}"})
        score = np.empty((self.n_nodes, k))
        alt = np.empty((self.n_nodes, k), dtype=np.int64)
        rank = np.full((self.n_nodes, k, self.width), -1, dtype=np.int64)
        kg.kbest(logtheta, *self._args(), k, score, alt, rank)
        return score, alt, rank

    def kbest_counts(self, alt, rank, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Count the switch outcomes along the k best explanations of each observed goal.

        Parameters
        ----------
        alt : ndarray of shape (n_nodes, k)
            From :meth:`kbest`.
        rank : ndarray of shape (n_nodes, k, width)
            From :meth:`kbest`.
        weights : ndarray of shape (n_roots, k)
            The weight of each explanation of each observed goal.

        Returns
        -------
        counts : ndarray of shape (n_params,)
            The weighted switch counts.
        uses : ndarray of shape (n_nodes, k)
            The weighted uses of every (node, rank).
        """
        uses = np.zeros(alt.shape)
        np.add.at(uses, self.roots, weights)
        counts = np.zeros(self.n_params)
        kg.kbest_counts(self.item_ptr, self.items, alt, rank, uses, counts)
        return counts, uses

    # -- explanations --------------------------------------------------------------------------
    def walk(self, node: int, rank: int, alt, child_rank) -> list[tuple[int, int]]:
        """Return the (node, alternative) steps of a derivation in pre-order.

        Parameters
        ----------
        node : int
            The node the derivation starts from.
        rank : int
            Its rank there.
        alt : ndarray of shape (n_nodes, k)
            ``alt[n, r]`` is the alternative of rank ``r`` at node ``n``.
        child_rank : ndarray of shape (n_nodes, k, width) or None
            ``child_rank[n, r, i]`` is the rank used for its i-th child goal (None: rank 0
            everywhere, i.e. Viterbi).

        Returns
        -------
        list of (int, int)
            The steps.
        """
        steps = []
        stack = [(node, rank)]
        while stack:
            n, r = stack.pop()
            a = int(alt[n, r])
            steps.append((n, a))
            kids = [v for v in self.items[self.item_ptr[a]:self.item_ptr[a + 1]].tolist()
                    if v >= 0]
            for i in range(len(kids) - 1, -1, -1):
                stack.append((kids[i], 0 if child_rank is None else int(child_rank[n, r, i])))
        return steps

    def explanation(self, steps, param_msw: list, logtheta: np.ndarray) -> Explanation:
        """Return the :class:`Explanation` of (node, alternative) steps.

        Parameters
        ----------
        steps : list of (int, int)
            The steps (from :meth:`walk` or :meth:`sample`).
        param_msw : list of Msw
            ``param_msw[p]`` is the ``msw`` atom of flat parameter ``p``.
        logtheta : ndarray of shape (n_params,)
            The log-probability of every switch outcome (flat layout).

        Returns
        -------
        Explanation
            Its goals, switch outcomes and log-probability.
        """
        params = []
        for _, a in steps:
            params.extend(~v for v in self.items[self.item_ptr[a]:self.item_ptr[a + 1]].tolist()
                          if v < 0)
        msws = [param_msw[p] for p in params]
        return Explanation(float(logtheta[params].sum()) if params else 0.0,
                           tuple((self.goals[n], int(self.alt_orig[a])) for n, a in steps),
                           tuple(msws))

    def sample(self, cond, nodes: np.ndarray, rng: np.random.Generator):
        """Draw one explanation from the posterior for each entry of ``nodes``.

        See :func:`hiddenstate.kernels.explanation_graph.sample_derivations`.

        Parameters
        ----------
        cond : ndarray of shape (n_alts,)
            The probability of every alternative given its node (from :meth:`inside`).
        nodes : ndarray of int
            The nodes to draw from.
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        list of list of (int, int)
            The (node, alternative) steps of each draw.
        """
        out_node, out_alt, out_ptr = self.sample_arrays(cond, nodes, rng)
        return [list(zip(out_node[out_ptr[s]:out_ptr[s + 1]].tolist(),
                         out_alt[out_ptr[s]:out_ptr[s + 1]].tolist(), strict=True))
                for s in range(len(nodes))]

    def sample_arrays(self, cond, nodes: np.ndarray, rng: np.random.Generator):
        """Draw one explanation per entry of ``nodes``, as arrays (see :meth:`sample`).

        The (node, alternative) steps of draw ``s`` are
        ``out_node[out_ptr[s]:out_ptr[s + 1]]`` and ``out_alt[...]``.

        Parameters
        ----------
        cond : ndarray of shape (n_alts,)
            The probability of every alternative given its node (from :meth:`inside`).
        nodes : ndarray of int
            The nodes to draw from.
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        out_node, out_alt : ndarray of int64
            The steps of every draw, one after the other.
        out_ptr : ndarray of int64 of shape (len(nodes) + 1,)
            Where each draw's steps start.
        """
        size = max(64, 4 * len(nodes))
        uniforms = rng.random(size)
        while True:
            out_node = np.empty(len(uniforms), dtype=np.int64)
            out_alt = np.empty(len(uniforms), dtype=np.int64)
            out_ptr = np.empty(len(nodes) + 1, dtype=np.int64)
            n = kg.sample_derivations(*self._args(), cond, nodes, uniforms, out_node, out_alt,
                                      out_ptr)
            if n >= 0:
                return out_node[:n], out_alt[:n], out_ptr
            uniforms = np.concatenate((uniforms, rng.random(len(uniforms))))

    def switch_outcomes(self, alts: np.ndarray) -> np.ndarray:
        """Return the flat parameter index of every switch outcome of some alternatives.

        In order; an alternative's child goals are left out.

        Parameters
        ----------
        alts : ndarray of int
            Alternatives.

        Returns
        -------
        ndarray of int64
            The outcomes they use.
        """
        lo, hi = self.item_ptr[alts], self.item_ptr[alts + 1]
        length = hi - lo
        at = np.repeat(lo - np.cumsum(length) + length, length) + np.arange(length.sum())
        items = self.items[at]
        return ~items[items < 0]

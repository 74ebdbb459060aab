"""Programs used by the docs, the tests and the benchmark.

- :func:`hmm_program`: a categorical HMM (the model of :class:`hiddenstate.HMM`).
- :func:`pcfg_program`: a PCFG in Chomsky normal form (the inside-outside algorithm); a
  :class:`~hiddenstate.grammar.Grammar` with its start switch is
  :func:`~hiddenstate.programs.grammar.grammar_program`.
- :func:`path_program`: the probabilistic graph of Sato & Kubota's figure 5 (from the
  ProbLog tutorial): six nodes, eight undirected edges, each an on/off switch; the
  explanations of ``path(x, y)`` are the simple paths from x to y, which are not exclusive.
- :func:`builtin_program`: one of these, rebuilt from a saved model's switches (how
  :func:`hiddenstate.load` restores a saved ``ProgramModel`` without ``program=``).
"""

from __future__ import annotations

from ..errors import HiddenStateError
from ..grammar.cnf import START, Grammar
from .grammar import add_span_goal, grammar_program
from .program import Program, msw

#: (node, node): probability that the edge is present (ProbLog tutorial, PRISM paper fig. 5)
PATH_EDGES = {(1, 2): 0.9, (2, 3): 0.8, (3, 4): 0.6, (1, 6): 0.7,
              (2, 6): 0.5, (6, 5): 0.4, (5, 3): 0.7, (5, 4): 0.2}


def hmm_program(n_states: int, n_symbols: int, prior=1.0) -> Program:
    """An HMM over symbols ``0 .. n_symbols - 1`` as a program.

    Switches ``"init"`` (initial state), ``("tr", s)`` (next state after ``s``) and
    ``("out", s)`` (symbol emitted in ``s``), all with Dirichlet concentration ``prior``
    (hs.HMM's ``startprob_prior``, ``transmat_prior``, ``emissionprob_prior``). The observed
    goal is ``hmm(xs)``; the sub-goal ``step(xs, t, s)`` is "in state s at time t, the chain
    emits xs[t:]". The graph of a sequence of length T has T * K goals and about T * K^2
    alternatives: forward-backward is its inside-outside.
    """
    prog = Program("hmm")
    states = range(n_states)
    prog.switch("init", states, prior=prior)
    tr = prog.switch_family("tr", states, keys=states, prior=prior)
    out = prog.switch_family("out", range(n_symbols), keys=states, prior=prior)

    @prog.goal
    def hmm(xs):
        return [[msw("init", s), step(xs, 0, s)] for s in states]

    @prog.goal
    def step(xs, t, s):
        emit = msw(out(s), xs[t])
        if t + 1 == len(xs):
            return [[emit]]
        move = tr(s)
        return [[emit, msw(move, n), step(xs, t + 1, n)] for n in states]

    @prog.sampler
    def generate(draw, length):
        s = draw("init")
        xs = []
        for t in range(length):
            xs.append(draw(out(s)))
            if t + 1 < length:
                s = draw(tr(s))
        return hmm(xs)

    return prog


def pcfg_program(rules: dict, start: str = "S", prior=1.0) -> Program:
    """A PCFG in Chomsky normal form as a program.

    ``rules`` maps each nonterminal to its right-hand sides: a 1-tuple ``(word,)`` or a
    pair of nonterminals ``(B, C)``. Each nonterminal is a switch whose outcomes are its
    right-hand sides (PRISM's ``values('A', [...])``). The observed goal is
    ``sentence(words)``; ``span(A, i, j, words)`` is "A derives words[i:j]". A sentence of
    n words has at most |N| n^2 / 2 goals and |R| n^3 / 6 alternatives; goals that derive
    nothing are pruned from the graph.
    """
    prog = Program("pcfg")
    for lhs, rhss in rules.items():
        prog.switch(lhs, rhss, prior=prior)
    span = add_span_goal(prog, rules)

    @prog.goal
    def sentence(words):
        return [[span(start, 0, len(words), words)]]

    return prog


def path_program(edges: dict | None = None, prior=1.0) -> Program:
    """Sato & Kubota's figure 5: ``path(x, y)`` holds if a simple path joins x and y in an
    undirected graph whose edges are on/off switches ``("edge", a, b)`` (probability of
    ``"on"`` from ``edges``, default :data:`PATH_EDGES`; Dirichlet concentration
    ``prior``, PRISM's pseudo-count plus one).

    Explanations contain only ``"on"`` outcomes (the edges a path uses), and the paths of
    a goal overlap: the program violates the exclusiveness condition, and the inside sum
    over-counts P(path) (see :mod:`hiddenstate.programs.model`).
    """
    edges = PATH_EDGES if edges is None else edges
    prog = Program("path")
    edge = prog.switch_family("edge", ["on", "off"],
                              probs={e: [p, 1.0 - p] for e, p in edges.items()}, prior=prior)
    nodes = sorted({n for e in edges for n in e})
    neighbours = {n: [m for m in nodes if (n, m) in edges or (m, n) in edges] for n in nodes}

    @prog.goal
    def path(x, y):
        return [[walk(x, y, frozenset([x]))]]

    @prog.goal
    def walk(x, y, visited):
        if x == y:
            return [[]]
        return [[msw(edge(*((x, z) if (x, z) in edges else (z, x))), "on"),
                 walk(z, y, visited | {z})]
                for z in neighbours[x] if z not in visited]

    return prog


def _start_symbol(rules: dict) -> str | None:
    """The one nonterminal that no right-hand side uses (the start of a
    :func:`pcfg_program`), or None when there is not exactly one."""
    used = {x for rhss in rules.values() for r in rhss if len(r) == 2 for x in r}
    roots = [lhs for lhs in rules if lhs not in used]
    return roots[0] if len(roots) == 1 else None


def builtin_program(name, switches: list[tuple]) -> Program | None:
    """The built-in example program called ``name`` whose switches are exactly
    ``switches`` (``(switch name, outcomes)`` pairs, as a saved ``ProgramModel`` lists them),
    rebuilt with its default ``prior`` (1.0); None if no example program matches.

    - ``"hmm"``: :func:`hmm_program`, its sizes from the ``"init"`` and ``("out", 0)``
      switches;
    - ``"path"``: :func:`path_program` over the saved edges (declared probabilities from
      :data:`PATH_EDGES`, 0.5 for another edge);
    - ``"pcfg"``: with a :data:`~hiddenstate.grammar.START` switch,
      :func:`~hiddenstate.programs.grammar.grammar_program` of the saved rules and start
      symbols; without, :func:`pcfg_program` whose start is the one nonterminal no rule
      uses (None when there is not exactly one).

    A program whose switches or outcomes differ in any way from the saved ones is no match
    (the saved probabilities would not mean the same)."""
    table = dict(switches)
    if len(table) != len(switches) or not isinstance(name, str):
        return None
    try:
        prog = _rebuild(name, table)
    except (HiddenStateError, TypeError, ValueError, KeyError, IndexError):
        return None  # saved switches this example cannot have
    if prog is None:
        return None
    t = prog.switches
    mine = {n: list(t.outcomes(n)) for n in t.names}
    return prog if mine == {n: list(v) for n, v in table.items()} else None


def _rebuild(name: str, table: dict) -> Program | None:
    if name == "hmm":
        return hmm_program(len(table["init"]), len(table[("out", 0)]))
    if name == "path":
        edges = [n[1:] for n in table if isinstance(n, tuple) and n[:1] == ("edge",)]
        return path_program({e: PATH_EDGES.get(e, 0.5) for e in edges})
    if name == "pcfg":
        rules = {lhs: [tuple(r) for r in rhss] for lhs, rhss in table.items() if lhs != START}
        if START in table:
            return grammar_program(Grammar.from_rules(rules, list(table[START])))
        start = _start_symbol(rules)
        return None if start is None else pcfg_program(rules, start)
    return None

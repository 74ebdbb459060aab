"""Context-free grammars in Chomsky normal form as probabilistic programs.

:func:`grammar_program` writes a :class:`~hiddenstate.grammar.Grammar` (the PCFG's grammar)
on the explanation-graph engine: one switch per left-hand side plus the start switch, in the
flat layout of the CKY kernels, so that the goal ``sentence(words)`` has the same
probability, rule counts and Viterbi parse as :class:`hiddenstate.PCFG` (tested in
``tests/test_pcfg.py``). :func:`add_span_goal` is the tabled goal ``span(A, i, j, words)``
("A derives words[i:j]") that it shares with the example
:func:`~hiddenstate.programs.examples.pcfg_program`.

(Until 0.1 this was the method ``Grammar.to_program``; it moved here because the grammar
layer sits below the programs layer, see ``docs/architecture.md``.)
"""

from __future__ import annotations

import numpy as np

from ..grammar.cnf import START, Grammar
from .program import Predicate, Program, msw


def add_span_goal(prog: Program, rules: dict) -> Predicate:
    """Declare on ``prog`` the goal ``span(lhs, i, j, words)``: "``lhs`` derives
    ``words[i:j]``", through the switch ``lhs`` (declared by the caller) whose outcomes are
    its right-hand sides ``rules[lhs]``: a 1-tuple ``(word,)`` or a pair of nonterminals
    ``(B, C)``. A span of n words has ``|rules[lhs]| (n - 1)`` binary alternatives; a goal
    that derives nothing has none and is pruned from the graph."""
    lexical = {lhs: {r[0]: msw(lhs, r) for r in rhss if len(r) == 1}
               for lhs, rhss in rules.items()}
    binary = {lhs: [(msw(lhs, r), r[0], r[1]) for r in rhss if len(r) == 2]
              for lhs, rhss in rules.items()}

    @prog.goal
    def span(lhs, i, j, words):
        if j == i + 1:
            rule = lexical[lhs].get(words[i])
            return [[rule]] if rule is not None else []
        return [[rule, span(b, i, k, words), span(c, k, j, words)]
                for rule, b, c in binary[lhs] for k in range(i + 1, j)]

    return span


def grammar_program(grammar: Grammar, theta: np.ndarray | None = None,
                    prior=1.0) -> Program:
    """Return ``grammar`` as a probabilistic program named ``"pcfg"``.

    The program has the switch :data:`~hiddenstate.grammar.START` over the start
    nonterminals, then one switch per left-hand side over its right-hand sides (in the
    grammar's order), all with Dirichlet concentration ``prior``; the observed goal
    ``sentence(words)`` picks a start symbol and derives the words from it.

    Parameters
    ----------
    grammar : hiddenstate.grammar.Grammar
        A grammar in Chomsky normal form (``PCFG.grammar()``).
    theta : ndarray of shape (n_params,) or None, default=None
        Flat rule probabilities in the kernels' layout (``PCFG.theta_``), declared in
        the program (the probabilities ``ProgramModel(..., init="declared")`` starts from);
        None declares none (uniform).
    prior : float, default=1.0
        The Dirichlet concentration of every switch.

    Returns
    -------
    Program
        The program.

    Examples
    --------
    >>> import hiddenstate as hs
    >>> from hiddenstate.programs import grammar_program
    >>> rules = {"S": [("NP", "VP")], "NP": [("she",), ("fish",)],
    ...          "VP": [("V", "NP"), ("eats",)], "V": [("eats",)]}
    >>> pcfg = hs.PCFG(rules)
    >>> prog = grammar_program(pcfg.grammar())
    >>> sentence = prog.predicates["sentence"]
    >>> hs.ProgramModel(prog).score_samples([sentence(["she", "eats", "fish"])]).round(4)
    array([-2.0794])
    >>> pcfg.score_samples([["she", "eats", "fish"]]).round(4)
    array([-2.0794])
    """
    prog = Program("pcfg")
    probs = None if theta is None else np.asarray(theta, dtype=np.float64)
    for name, lo, m in grammar.switches():
        outcomes = grammar.start if name == START else grammar.rules[name]
        prog.switch(name, outcomes, probs=None if probs is None else probs[lo:lo + m],
                    prior=prior)
    span = add_span_goal(prog, {a: grammar.rules[a] for a in grammar.nonterminals})
    start = grammar.start

    @prog.goal
    def sentence(words):
        return [[msw(START, s), span(s, 0, len(words), words)] for s in start]

    return prog

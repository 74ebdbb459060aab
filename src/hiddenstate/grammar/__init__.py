"""Context-free grammars in Chomsky normal form and the bracketed trees they are read from
(see ``docs/pcfg.md``).

- :class:`Grammar`: rules, start symbols, the flat kernel arrays (the same grammar as a
  program: :func:`hiddenstate.programs.grammar_program`).
- :mod:`.trees`: :class:`Tree`, :func:`read_trees`, treebank normalisation, unary-chain
  collapsing and binarisation (and their inverses).
"""

from .cnf import START, Grammar
from .trees import (
    Tree,
    binarize,
    collapse_unaries,
    debinarize,
    expand_unaries,
    from_cnf,
    normalise,
    parse_brackets,
    read_trees,
    to_cnf,
)

__all__ = [
    "START",
    "Grammar",
    "Tree",
    "binarize",
    "collapse_unaries",
    "debinarize",
    "expand_unaries",
    "from_cnf",
    "normalise",
    "parse_brackets",
    "read_trees",
    "to_cnf",
]

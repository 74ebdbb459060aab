r"""A probabilistic left-corner grammar as a program: :func:`left_corner_program`.

The program is Sato & Kubota's PLCG program (fig. 2 of "Viterbi training in PRISM", after
PRISM's ``plc.psm``) with the input positions made explicit so that tabling shares
sub-derivations: for a sentence ``words`` of ``n`` words,

- ``sentence(words)``: the start switch picks a root ``R``, then ``goal(R, 0, n, words)``;
- ``goal(G, i, k, words)``: goal ``G`` derives ``words[i:k]``: shift ``first(G) =
  words[i]``, then ``lc(G, (words[i],), i + 1, k, words)``;
- ``lc(G, B, j, k, words)``: a ``B`` is complete and ends at ``j``; goal ``G`` ends at
  ``k``. Each outcome ``A -> B C`` of the switch ``("lc", G, B)`` (projection), for each
  end ``m`` of ``C``: ``goal(C, j, m, words)`` then, if ``A`` is ``G`` and ``m = k``,
  attach (``attach(G) = "attach"`` when ``G`` is left-recursive); otherwise the spine goes
  on with ``lc(G, A, m, k, words)`` (``attach(G) = "project"`` when ``A`` is ``G``). A
  lexical outcome ``A -> w`` (``B = (w,)``) does the same with ``m = j``.

The start of ``B`` is not an argument (the rest of the derivation does not depend on it),
so a sentence of ``n`` words has O(n^2) goals per (goal, left corner) pair and the graph
O(n^3) alternatives, as CKY. Switches, their order (the flat parameter layout) and their
meaning are those of :class:`hiddenstate.grammar.left_corner.LeftCorner`; the sampler draws
a derivation top-down (:meth:`LeftCorner.build`; ``max_words`` bounds its length) and
returns ``sentence(words)``.
:class:`hiddenstate.PLCG` computes the same graph with a compiled builder
(:mod:`hiddenstate.kernels.left_corner`), tested against this program.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from ..grammar.cnf import START
from ..grammar.left_corner import ATTACH, ATTACH_OPS, FIRST, LC, LeftCorner
from .program import Program, msw


def left_corner_program(lc: LeftCorner, theta: np.ndarray | None = None,
                        prior=1.0) -> Program:
    """The PLCG ``lc`` as a program (see the module docstring). ``theta``: flat switch
    probabilities in ``lc``'s layout (declared in the program; default uniform);
    ``prior``: every switch's Dirichlet concentration."""
    prog = Program("plcg")
    for name, lo, m in lc.spans():
        prog.switch(name, lc.outcomes[name],
                    probs=None if theta is None else np.asarray(theta[lo:lo + m], dtype=float),
                    prior=prior)
    start, outcomes, left_rec = lc.grammar.start, lc.outcomes, lc.left_recursive

    @prog.goal
    def sentence(words):
        return [[msw(START, r), goal(r, 0, len(words), words)] for r in start]

    @prog.goal
    def goal(g, i, k, words):
        w = words[i]
        if (FIRST, g) not in outcomes or w not in outcomes[FIRST, g]:
            return []
        return [[msw((FIRST, g), w), lc_goal(g, (w,), i + 1, k, words)]]

    @prog.goal
    def lc_goal(g, b, j, k, words):
        name = (LC, g, b)
        if name not in outcomes:
            return []
        attach = [msw((ATTACH, g), ATTACH_OPS[0])] if left_rec[g] else []
        project = msw((ATTACH, g), ATTACH_OPS[1])
        out = []
        for a, rhs in outcomes[name]:
            rule = msw(name, (a, rhs))
            ends = [j] if len(rhs) == 1 else range(j + 1, k + 1)
            for m in ends:
                right = [] if len(rhs) == 1 else [goal(rhs[1], j, m, words)]
                if a == g and m == k:
                    out.append([rule, *attach, *right])
                elif a == g and m < k and left_rec[g]:
                    out.append([rule, project, *right, lc_goal(g, g, m, k, words)])
                elif a != g and m < k:
                    out.append([rule, *right, lc_goal(g, a, m, k, words)])
        return out

    @prog.sampler
    def generate(draw, max_words: int = 1000):
        words = []

        def choose(name):
            v = draw(name)
            if name[0] == FIRST:
                words.append(v)
                if len(words) > max_words:
                    raise InvalidInputError(
                        f"max_words: a derivation grew longer than {max_words} words; the "
                        "probabilities may not end derivations with probability one")
            return outcomes[name].index(v)

        lc.build(choose)
        return sentence(words)

    return prog

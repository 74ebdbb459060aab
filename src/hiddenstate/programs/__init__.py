"""Probabilistic programs in Python (PRISM): declare switches, write tabled goals that
return their alternative explanations, and learn the switch probabilities with any batch
mode (``learn="em" | "map" | "vb" | "vt" | "kvt"``) through the same generic learner as the
HMM. See ``docs/programs.md``.

- :class:`Program`, :func:`msw`: the program (switches, ``@program.goal``,
  ``@program.sampler``).
- :func:`~.tabling.explain`: tabled search to an explanation graph (compiled arrays).
- :class:`ProgramModel`: the estimator (fit, score, Viterbi / k-best explanations,
  posterior samples of explanations, sampling execution, ``save``; read back with
  :func:`hiddenstate.load`, ``program=`` the program).
- :func:`grammar_program`: a :class:`~hiddenstate.grammar.Grammar` as a program.
"""

import warnings

from .grammar import grammar_program
from .graph import Explanation, ExplanationGraph
from .model import ProgramModel, geometric_schedule
from .program import Goal, Msw, Predicate, Program, Seq, msw
from .saving import restore
from .switches import SwitchFamily
from .tabling import explain

__all__ = [
    "Explanation",
    "ExplanationGraph",
    "Goal",
    "Msw",
    "Predicate",
    "Program",
    "ProgramModel",
    "Seq",
    "SwitchFamily",
    "explain",
    "geometric_schedule",
    "grammar_program",
    "load",
    "msw",
]


def load(path, program) -> ProgramModel:
    """Deprecated alias of ``hiddenstate.load(path, program=program)`` (removed after 0.2).

    .. deprecated:: 0.2
       Use :func:`hiddenstate.load`, which reads every saved estimator.
    """
    warnings.warn("hiddenstate.programs.load is deprecated; use hiddenstate.load(path, "
                  "program=program)", FutureWarning, stacklevel=2)
    return restore(path, ProgramModel, program)

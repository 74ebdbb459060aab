"""Probabilistic programs in Python (PRISM): declare switches, write tabled goals that
return their alternative explanations, and learn the switch probabilities with any batch
mode (``learn="em" | "map" | "vb" | "vt" | "kvt"``) through the same generic learner as the
HMM. See ``docs/programs.md``.

- :class:`Program`, :func:`msw`: the program (switches, ``@program.goal``,
  ``@program.sampler``).
- :func:`~.tabling.explain`: tabled search to an explanation graph (compiled arrays).
- :class:`ProgramModel`: the estimator (fit, score, Viterbi / k-best explanations,
  posterior samples of explanations, sampling execution, save / :func:`load`).
"""

from .graph import Explanation, ExplanationGraph
from .model import ProgramModel, geometric_schedule
from .program import Goal, Msw, Predicate, Program, Seq, msw
from .saving import load
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
    "load",
    "msw",
]

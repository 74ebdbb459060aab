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
    """Restore a saved ProgramModel: the deprecated alias of :func:`hiddenstate.load`.

    .. deprecated:: 0.2
       Use :func:`hiddenstate.load`, which reads every saved estimator.

    ``hiddenstate.load(path, program=program)`` does the same (this alias is removed after
    0.2).

    Parameters
    ----------
    path : str or pathlib.Path
        The directory :meth:`ProgramModel.save` wrote.
    program : Program
        The program the model was fitted with (a program is code: it is not saved).

    Returns
    -------
    ProgramModel
        The restored model.

    Examples
    --------
    >>> import warnings
    >>> import hiddenstate as hs
    >>> from hiddenstate.programs import Program, load
    >>> prog = Program("coin")
    >>> prog.switch("coin", ["h", "t"])
    'coin'
    >>> saved = hs.ProgramModel(prog)
    >>> saved.set_probs("coin", [0.7, 0.3])
    >>> saved.save("coin_model")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     model = load("coin_model", prog)
    >>> model.probs_["coin"], caught[0].category.__name__
    (array([0.7, 0.3]), 'FutureWarning')
    """
    warnings.warn("hiddenstate.programs.load is deprecated; use hiddenstate.load(path, "
                  "program=program)", FutureWarning, stacklevel=2)
    return restore(path, ProgramModel, program)

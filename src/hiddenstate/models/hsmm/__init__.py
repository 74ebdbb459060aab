"""The explicit-duration hidden semi-Markov model: the estimator :class:`HSMM`
(:mod:`.estimator`, a subclass of :class:`~hiddenstate.HMM`), its batch-learning Problem
(:mod:`.problem`) and the choice between the segment recursion and the phases of
phase-type durations (:mod:`.engine`)."""

from .engine import ENGINES, Runner
from .estimator import HSMM
from .problem import HSMMProblem

__all__ = ["ENGINES", "HSMM", "HSMMProblem", "Runner"]

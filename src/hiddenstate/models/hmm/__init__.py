"""The hidden Markov model: the estimator :class:`HMM` (:mod:`.estimator`, whose docstring
lists the extension points PROPS, the hmmlearn layer and :mod:`hiddenstate.distributed`
use) and the modules it is built from: :mod:`.chain` (allowed transitions; dense or sparse
inference), :mod:`.problem` (the model as the batch learner's Problem), :mod:`.parameters`
(the learned attributes), :mod:`.priors`, :mod:`.init` (initial parameters, the restart
loop), :mod:`.hyperparameters`, :mod:`.memory`, and the estimator's method groups
:mod:`.queries` (scores, posteriors, decoding, sampling), :mod:`.streaming` (``partial_fit``)
and :mod:`.storage` (saving and restoring)."""

from .chain import TOPOLOGIES, Chain
from .estimator import HMM
from .hyperparameters import ALL_LETTERS
from .init import MAX_PERSISTENCE, STREAM_PERSISTENCE, persistence
from .problem import HMMProblem, check_possible

__all__ = [
    "ALL_LETTERS",
    "HMM",
    "MAX_PERSISTENCE",
    "STREAM_PERSISTENCE",
    "TOPOLOGIES",
    "Chain",
    "HMMProblem",
    "check_possible",
    "persistence",
]

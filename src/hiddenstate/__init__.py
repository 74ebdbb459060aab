"""hiddenstate: hidden Markov models and other discrete latent-variable models."""

from ._version import __version__
from .errors import HiddenStateError, InvalidInputError, ModelFileError, NotFittedError
from .models import HMM, PCFG, PLCG, PROPS, NaiveBayesHidden, TreeNet
from .persist import load
from .programs import ProgramModel

__all__ = [
    "HMM",
    "NaiveBayesHidden",
    "PCFG",
    "PLCG",
    "PROPS",
    "ProgramModel",
    "TreeNet",
    "HiddenStateError",
    "InvalidInputError",
    "ModelFileError",
    "NotFittedError",
    "__version__",
    "load",
]

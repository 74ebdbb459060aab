"""hiddenstate: hidden Markov models and other discrete latent-variable models."""

from .errors import HiddenStateError, InvalidInputError, ModelFileError, NotFittedError
from .io import load
from .models import HMM, PCFG, PLCG, PROPS, NaiveBayesHidden, TreeNet

__version__ = "0.1.0"

__all__ = [
    "HMM",
    "NaiveBayesHidden",
    "PCFG",
    "PLCG",
    "PROPS",
    "TreeNet",
    "HiddenStateError",
    "InvalidInputError",
    "ModelFileError",
    "NotFittedError",
    "__version__",
    "load",
]

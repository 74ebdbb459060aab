"""hiddenstate: hidden Markov models and other discrete latent-variable models.

``import hiddenstate`` loads only the version and the exceptions; each public name below
(and each subpackage, ``hiddenstate.treenet`` ...) is imported the first time it is used
(PEP 562 module ``__getattr__``, the lazy loading of Scientific Python's SPEC 1), so that a
script that fits an HMM does not wait for the grammar, tree-network or program modules, and
``hiddenstate --help`` does not wait for numba. Type checkers and IDEs read the
``TYPE_CHECKING`` imports; ``dir(hiddenstate)`` lists ``__all__``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._version import __version__
from .errors import HiddenStateError, InvalidInputError, ModelFileError, NotFittedError

if TYPE_CHECKING:
    from .models import HMM, PCFG, PROPS, NaiveBayesHidden, TreeNet
    from .persist import load
    from .programs import ProgramModel

__all__ = [
    "HMM",
    "NaiveBayesHidden",
    "PCFG",
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


def __getattr__(name: str):
    """Import a public name, or a subpackage or module, on first use."""
    if name == "HMM":
        from .models.hmm import HMM as value
    elif name == "NaiveBayesHidden":
        from .models.nbh import NaiveBayesHidden as value
    elif name == "PCFG":
        from .models.pcfg import PCFG as value
    elif name == "PROPS":
        from .models.props import PROPS as value
    elif name == "TreeNet":
        from .models.treenet import TreeNet as value
    elif name == "ProgramModel":
        from .programs import ProgramModel as value
    elif name == "load":
        from .persist import load as value
    else:
        from ._lazy import submodule

        value = submodule(__name__, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

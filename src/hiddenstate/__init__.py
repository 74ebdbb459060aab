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

from ._lazy import attach
from ._version import __version__
from .errors import HiddenStateError, InvalidInputError, ModelFileError, NotFittedError

if TYPE_CHECKING:
    from .align import align_states
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
    "align_states",
    "load",
]


__getattr__, __dir__ = attach(__name__, {
    "HMM": ".models.hmm",
    "NaiveBayesHidden": ".models.nbh",
    "PCFG": ".models.pcfg",
    "PLCG": ".models.plcg",
    "PROPS": ".models.props",
    "TreeNet": ".models.treenet",
    "ProgramModel": ".programs",
    "load": ".persist",
    "align_states": ".align",
}, __all__)

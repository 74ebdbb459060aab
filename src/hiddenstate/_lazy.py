"""Public names imported on first use: the PEP 562 module ``__getattr__`` and ``__dir__``
of :mod:`hiddenstate` and :mod:`hiddenstate.models` (the lazy loading of Scientific
Python's SPEC 1, as its ``lazy_loader.attach``, without the dependency)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable


def submodule(package: str, name: str):
    """The module ``package.name``, imported now; ``AttributeError`` when there is none
    (and for dunder names, which Python's machinery probes for)."""
    if not name.startswith("__"):
        full = f"{package}.{name}"
        if importlib.util.find_spec(full) is not None:
            return importlib.import_module(full)
    raise AttributeError(f"module {package!r} has no attribute {name!r}")


def attach(package: str, homes: dict[str, str],
           public: list[str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the package named ``package``: a name of
    ``homes`` is imported from its module (relative to ``package``, e.g. ``".models.hmm"``)
    the first time it is used and then kept in the package's namespace; any other name is
    a submodule (``hs.treenet``), or an ``AttributeError``. ``dir()`` lists ``public``."""

    def __getattr__(name: str):
        if name in homes:
            value = getattr(importlib.import_module(homes[name], package), name)
        else:
            value = submodule(package, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(public)

    return __getattr__, __dir__

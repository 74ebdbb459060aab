"""Submodules as attributes on first use, for the PEP 562 ``__getattr__`` of
:mod:`hiddenstate` and :mod:`hiddenstate.models` (``hs.treenet`` without ``import
hiddenstate.treenet``, as before those packages loaded their names lazily)."""

from __future__ import annotations


def submodule(package: str, name: str):
    """The module ``package.name``, imported now; ``AttributeError`` when there is none
    (and for dunder names, which Python's machinery probes for)."""
    if not name.startswith("__"):
        import importlib
        import importlib.util

        full = f"{package}.{name}"
        if importlib.util.find_spec(full) is not None:
            return importlib.import_module(full)
    raise AttributeError(f"module {package!r} has no attribute {name!r}")

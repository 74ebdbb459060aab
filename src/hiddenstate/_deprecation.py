"""Deprecated public names: an old method name kept for one release as an alias that issues
a :class:`FutureWarning` naming its replacement (``docs/changelog.md`` lists each)."""

from __future__ import annotations

import warnings
from collections.abc import Callable


def renamed_method(old: str, new: str, note: str = "") -> Callable:
    """A method ``old`` that warns and calls ``self.<new>`` with the same arguments (an
    override of ``new`` in a subclass is the one called)::

        class Model:
            def score_samples(self, X): ...
            score_sequences = renamed_method("score_sequences", "score_samples")
    """

    def alias(self, *args, **kwargs):
        warnings.warn(f"{type(self).__name__}.{old} is deprecated and will be removed in the "
                      f"next release; use {new}{note}", FutureWarning, stacklevel=2)
        return getattr(self, new)(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = (f"Deprecated alias of :meth:`{new}`{note} (one release).\n\n"
                     "Parameters\n----------\n*args, **kwargs\n"
                     f"    The arguments of :meth:`{new}`.\n\n"
                     f"Returns\n-------\nobject\n    What :meth:`{new}` returns.\n")
    return alias

"""Deprecated public names: an old method name kept for one release as an alias that issues
a :class:`FutureWarning` naming its replacement (``docs/changelog.md`` lists each); and
constructor arguments passed by position where they are becoming keyword-only."""

from __future__ import annotations

import functools
import inspect
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


def keyword_only_after_first(init: Callable) -> Callable:
    """Decorate an estimator's ``__init__`` whose arguments after the first become
    keyword-only: for one release a call that passes more by position still works and
    issues a :class:`FutureWarning` naming the argument each value was read as (so
    ``HMM(3, "gaussian", "full")`` says that ``"full"`` went to ``n_features``); the next
    release puts ``*`` after the first argument. The signature scikit-learn reads
    (``get_params``) is the original one (``functools.wraps``)::

        class Model(BaseEstimator):
            @keyword_only_after_first
            def __init__(self, n_states=2, emission="categorical", ...): ...
    """
    names = list(inspect.signature(init).parameters)[1:]  # without self

    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        if len(args) > 1:
            read = ", ".join(f"{name}={value!r:.40}"
                             for name, value in zip(names[1:], args[1:], strict=False))
            warnings.warn(
                f"{type(self).__name__}: arguments after {names[0]} are keyword-only from the "
                f"next release; this call passed by position {read}: pass them by keyword",
                FutureWarning, stacklevel=2)
        init(self, *args, **kwargs)

    return wrapper

"""Learned-parameter attributes that are checked once per value.

A model's learned arrays (``startprob_``, ``transmat_``, the emission parameters) are
:class:`LearnedArray` descriptors. Assigning one, by ``fit``, by :func:`hiddenstate.load` or
by hand, stores a float64 copy and forgets the model's last validation; reading one returns
a **read-only** view, so an in-place edit (``m.transmat_[0, 0] = 5``) fails loudly instead
of slipping past the validation. To change a parameter, assign a new array::

    A = m.transmat_.copy(); A[0] = [0.9, 0.1]; m.transmat_ = A

Methods that use the parameters call :func:`checked`, which runs the model's
``_check_learned`` only when a parameter was assigned, or a hyper-parameter that shapes the
parameters changed (the model's ``validation_key``), since the last successful check: a
model scored a million times is validated once. The stored arrays stay writable and private
(the kernels receive them, never a read-only view, which numba would compile separately).

A model class may set ``_read_only_params = False`` (the hmmlearn-compatible classes do:
they validate on every call, as hmmlearn does, and hand out the stored arrays themselves).
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float_array

#: key of the last successful validation in the model's ``__dict__``
_CHECKED = "_learned_checked_for"
_PREFIX = "_learned_"


def slot(name: str) -> str:
    """The ``__dict__`` entry where attribute ``name`` keeps its array."""
    return _PREFIX + name


class LearnedArray:
    """A learned array attribute: float64 copy on assignment, read-only view on access,
    validation cache invalidated on every assignment or deletion."""

    def __init__(self, public: str | None = None):
        self.public = public  # the name errors use (``covars_`` for ``_covars_``)

    def __set_name__(self, owner, name: str) -> None:
        self.name = name
        self.slot = slot(name)
        self.public = self.public or name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        try:
            value = obj.__dict__[self.slot]
        except KeyError:
            raise AttributeError(
                f"{type(obj).__name__!r} object has no attribute {self.name!r}") from None
        if not getattr(obj, "_read_only_params", True):
            return value
        view = value.view()
        view.flags.writeable = False
        return view

    def __set__(self, obj, value) -> None:
        if value is obj.__dict__.get(self.slot):  # re-assigning the stored array itself
            return
        obj.__dict__[self.slot] = as_float_array(value, self.public, copy=True)
        obj.__dict__.pop(_CHECKED, None)

    def __delete__(self, obj) -> None:
        if obj.__dict__.pop(self.slot, None) is None:
            raise AttributeError(self.name)
        obj.__dict__.pop(_CHECKED, None)


def raw(obj, name: str) -> np.ndarray:
    """The stored (writable, private) array of attribute ``name``; for the model's own
    computations only."""
    return obj.__dict__[slot(name)]


def has(obj, name: str) -> bool:
    return slot(name) in obj.__dict__


def invalidate(obj) -> None:
    """Forget the last validation (a value the key does not see has changed)."""
    obj.__dict__.pop(_CHECKED, None)


def checked(obj) -> None:
    """Validate ``obj``'s learned parameters unless they, and its ``validation_key()``,
    are unchanged since the last successful validation."""
    key = obj.validation_key()
    if obj.__dict__.get(_CHECKED) != key:
        obj._check_learned()
        obj.__dict__[_CHECKED] = key

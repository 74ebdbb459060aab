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

import hashlib
import warnings
from collections.abc import Iterable

import numpy as np

from .._validation import as_float_array
from ..errors import ParameterOverwriteWarning
from ..learn.fit_warnings import user_stacklevel

#: key of the last successful validation in the model's ``__dict__``
_CHECKED = "_learned_checked_for"
#: key of the digests of the values the last ``fit`` or load left (see :func:`mark_own`)
_OWN = "_learned_own_values"
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


# -- values set by hand ---------------------------------------------------------------------
def _value(obj, name: str):
    """The stored value of attribute ``name`` (a :class:`LearnedArray` or a plain one), or
    None."""
    d = obj.__dict__
    return d[slot(name)] if slot(name) in d else d.get(name)


def _digest(value) -> bytes:
    """A digest of a parameter's value: arrays (by dtype, shape and bytes), dicts and
    lists of them."""
    h = hashlib.blake2b(digest_size=16)

    def feed(v) -> None:
        if isinstance(v, dict):
            h.update(b"{%d" % len(v))
            for k in sorted(v, key=repr):
                h.update(repr(k).encode())
                feed(v[k])
        elif isinstance(v, (list, tuple)):
            h.update(b"[%d" % len(v))
            for x in v:
                feed(x)
        else:
            a = np.asarray(v)
            h.update(f"{a.dtype.str}{a.shape}".encode())
            h.update(repr(v).encode() if a.dtype == object
                     else np.ascontiguousarray(a).tobytes())

    feed(value)
    return h.digest()


def mark_own(obj, names: Iterable[str]) -> None:
    """Record the present values of ``names`` as the model's own (``fit`` or a load left
    them); :func:`set_by_hand` then reports only those assigned since. A digest is kept,
    not the values (nothing more in memory, and the model still pickles)."""
    obj.__dict__[_OWN] = {name: _digest(v) for name in names
                          if (v := _value(obj, name)) is not None}


def set_by_hand(obj, names: Iterable[str]) -> list[str]:
    """The attributes among ``names`` that hold a value the last ``fit`` or load did not
    leave (all that are set, for a model never fitted nor loaded)."""
    own = obj.__dict__.get(_OWN, {})
    return [name for name in names if (v := _value(obj, name)) is not None
            and own.get(name) != _digest(v)]


def warn_replaced(obj, names: Iterable[str], argument: str | None, fix: str) -> None:
    """Warn (:class:`~hiddenstate.errors.ParameterOverwriteWarning`, pointing at the user's
    call) that ``fit`` replaces the attributes among ``names`` set by hand
    (:func:`set_by_hand`): ``"{argument}: fit replaces A_, B_ set by hand; {fix}"`` (the
    argument that keeps them; None: there is none)."""
    hand = set_by_hand(obj, names)
    if hand:
        names = ", ".join(name.lstrip("_") for name in hand)  # _covars_: covars_
        prefix = "" if argument is None else f"{argument}: "
        warnings.warn(f"{prefix}fit replaces {names} set by hand; {fix}",
                      ParameterOverwriteWarning, stacklevel=user_stacklevel())

r"""Switches: the categorical random choices a program is made of (PRISM's ``msw``).

A switch ``i`` with outcomes :math:`v_1..v_m` takes outcome :math:`v` with probability
:math:`\theta_{i,v}`; every occurrence of ``msw(i, v)`` in an explanation is an independent
draw from the same distribution. A *family* declares many switches at once, one per key
(``tr(s)`` for every state ``s``): its switches are named ``(family, *key)``.

Every switch instance owns a slice of one flat parameter vector (:class:`SwitchTable`), in
the order the instances were created; learning groups the instances with the same number of
outcomes into :class:`~hiddenstate.families.DirichletRows` blocks.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .._validation import check_stochastic
from ..errors import InvalidInputError


def _plain(value):
    """A switch name, key or outcome as a plain Python value (numpy scalars unwrapped)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


def _check_hashable(value, what: str):
    try:
        hash(value)
    except TypeError as exc:
        raise InvalidInputError(
            f"{what}: {value!r} is not hashable; use strings, numbers or tuples of them") \
            from exc
    return value


class _Spec:
    """What one ``switch`` or ``switch_family`` declaration says."""

    def __init__(self, name, outcomes, fixed: bool, prior, where: str):
        if isinstance(outcomes, (str, bytes)) or not isinstance(outcomes, Iterable):
            raise InvalidInputError(
                f"{where}: outcomes must be a list of values, got {outcomes!r}")
        outs = tuple(_plain(_check_hashable(v, f"{where}: outcome")) for v in outcomes)
        unequal = [v for v in outs if v != v]  # NaN: no msw could ever name it
        if unequal:
            raise InvalidInputError(
                f"{where}: outcome {unequal[0]!r} is not equal to itself, so msw(...) could "
                "never name it; use another value (e.g. the string 'nan')")
        if not outs:
            raise InvalidInputError(f"{where}: outcomes is empty; a switch needs at least one")
        if len(set(outs)) != len(outs):
            raise InvalidInputError(f"{where}: outcomes {outs!r} contain a repeated value")
        self.name = name
        self.outcomes = outs
        self.index = {v: i for i, v in enumerate(outs)}
        self.fixed = bool(fixed)
        try:
            alpha = np.broadcast_to(np.asarray(prior, dtype=np.float64), (len(outs),)).copy()
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"{where}: prior must be a number or one number per outcome ({len(outs)}), "
                f"got {prior!r}") from exc
        if not np.all(np.isfinite(alpha)) or np.any(alpha <= 0):
            raise InvalidInputError(
                f"{where}: prior (Dirichlet concentration) must be finite and > 0, got "
                f"{alpha.tolist()}; 1.0 is flat, PRISM's pseudo-count delta is prior - 1")
        self.prior = alpha

    def check_probs(self, probs, where: str) -> np.ndarray:
        return check_stochastic(probs, (len(self.outcomes),), where)


class SwitchFamily:
    """A declared family of switches; calling it with a key gives the switch's name.

    Made by :meth:`~hiddenstate.programs.Program.switch_family`:
    ``tr = prog.switch_family("tr", states, keys=states)`` then ``msw(tr(s), t)``.

    Parameters
    ----------
    name : str
        The family's name, the first item of its switches' names.
    keys : collection of hashable or None
        The keys that exist (None: any key).

    Examples
    --------
    >>> from hiddenstate.programs import Program
    >>> tr = Program("hmm").switch_family("tr", [0, 1], keys=[0, 1])
    >>> tr, tr(1)
    (SwitchFamily('tr'), ('tr', 1))
    """

    def __init__(self, name: str, keys):
        self.name = name
        self.keys = keys

    def __call__(self, *key) -> tuple:
        return (self.name, *key)

    def __repr__(self) -> str:
        return f"SwitchFamily({self.name!r})"


class SwitchTable:
    """Every switch instance of a program, its outcomes and its slice of the flat
    parameter vector (created at declaration, or on first use for an open family)."""

    def __init__(self):
        self.names: list = []            # instance id -> switch name
        self.specs: list[_Spec] = []     # instance id -> its declaration
        self.offsets: list[int] = [0]    # instance id -> first flat parameter index
        self.ids: dict = {}              # switch name -> instance id
        self.declared: dict = {}         # switch name -> probabilities set by hand
        self.families: dict = {}         # family name -> (spec, SwitchFamily)
        self._params: dict = {}          # (switch name, outcome) -> flat index

    @property
    def n_params(self) -> int:
        return self.offsets[-1]

    def _add(self, name, spec: _Spec, probs) -> None:
        """Register one instance (its probabilities checked first: a refused declaration
        leaves nothing behind)."""
        if probs is not None:
            probs = spec.check_probs(probs, f"probs of switch {name!r}")
        elif spec.fixed:
            raise InvalidInputError(
                f"switch {name!r}: fixed=True needs probs; give its probabilities or drop "
                "fixed to learn them")
        self.ids[name] = len(self.names)
        self.names.append(name)
        self.specs.append(spec)
        self.offsets.append(self.offsets[-1] + len(spec.outcomes))
        if probs is not None:
            self.declared[name] = probs

    def _check_new_name(self, name) -> None:
        if name in self.ids or name in self.families:
            raise InvalidInputError(f"switch {name!r} is declared twice; use another name")
        if isinstance(name, tuple) and name and name[0] in self.families:
            raise InvalidInputError(
                f"switch {name!r} would shadow an instance of family {name[0]!r}; rename it")

    def add_switch(self, name, outcomes, probs, fixed: bool, prior) -> None:
        name = _plain(_check_hashable(name, "switch name"))
        self._check_new_name(name)
        spec = _Spec(name, outcomes, fixed, prior, f"switch {name!r}")
        self._add(name, spec, probs)

    def add_family(self, name: str, outcomes, keys, probs, fixed: bool, prior) -> SwitchFamily:
        if not isinstance(name, str):
            raise InvalidInputError(f"switch_family name: expected a string, got {name!r}")
        self._check_new_name(name)
        if any(isinstance(n, tuple) and n and n[0] == name for n in self.ids):
            raise InvalidInputError(
                f"switch_family {name!r}: a switch named ({name!r}, ...) is declared already")
        spec = _Spec(name, outcomes, fixed, prior, f"switch_family {name!r}")
        per_key = isinstance(probs, dict)
        if per_key:
            probs = {_key(k, name): v for k, v in probs.items()}
            if keys is None:
                keys = list(probs)
        if keys is not None:
            if isinstance(keys, (str, bytes)) or not isinstance(keys, Iterable):
                raise InvalidInputError(
                    f"switch_family {name!r}: keys must be a list of keys (or None for an "
                    f"open family), got {keys!r:.60}")
            keys = [_key(k, name) for k in keys]
            if len(set(keys)) != len(keys):
                raise InvalidInputError(f"switch_family {name!r}: keys contain a repeated value")
            if per_key:
                extra = [k for k in probs if k not in set(keys)]
                if extra:
                    raise InvalidInputError(
                        f"switch_family {name!r}: probs has key {extra[0]!r} that is not in "
                        "keys; add it to keys or drop it")
        family = SwitchFamily(name, None if keys is None else frozenset(keys))
        self.families[name] = (spec, family, probs)
        n_before = len(self.names)
        try:
            for key in keys or ():
                self._instance(name, key)
        except InvalidInputError:  # undo the declaration: nothing half-declared
            del self.families[name]
            for inst in self.names[n_before:]:
                del self.ids[inst]
                self.declared.pop(inst, None)
            del self.names[n_before:], self.specs[n_before:], self.offsets[n_before + 1:]
            raise
        return family

    def _instance(self, family_name: str, key):
        spec, _, probs = self.families[family_name]
        key = _plain(key)
        name = family_name_of(family_name, key)
        if isinstance(probs, dict):
            p = probs.get(key)
            if p is None and spec.fixed:
                raise InvalidInputError(
                    f"switch_family {family_name!r}: fixed=True but probs has no entry for "
                    f"key {key!r}")
        else:
            p = probs
        self._add(name, spec, p)
        return self.ids[name]

    def instance_id(self, name) -> int:
        """The instance id of switch ``name``, creating it for an open family."""
        _check_hashable(name, "switch")
        sid = self.ids.get(name)
        if sid is not None:
            return sid
        if isinstance(name, tuple) and len(name) >= 2 and name[0] in self.families:
            _, family, _ = self.families[name[0]]
            key = name[1] if len(name) == 2 else name[1:]
            if family.keys is None or key in family.keys:
                return self._instance(name[0], key)
            raise InvalidInputError(
                f"switch {name!r}: family {name[0]!r} has no key {key!r} (declared keys: "
                f"{_preview(sorted(family.keys, key=repr))}); add it to keys")
        raise InvalidInputError(
            f"switch {name!r} is not declared; declare it with program.switch(...) or "
            f"program.switch_family(...) (declared: {_preview(self.declared_names())})")

    def param_index(self, switch, outcome) -> int:
        """Flat parameter index of ``msw(switch, outcome)`` (cached)."""
        key = (switch, outcome)
        try:
            return self._params[key]
        except KeyError:
            pass
        except TypeError as exc:
            raise InvalidInputError(
                f"msw({switch!r}, {outcome!r}): switch names and outcomes must be hashable") \
                from exc
        sid = self.instance_id(switch)
        spec = self.specs[sid]
        i = spec.index.get(outcome)
        if i is None:
            raise InvalidInputError(
                f"msw({switch!r}, {outcome!r}): {outcome!r} is not an outcome of switch "
                f"{switch!r} (outcomes: {_preview(spec.outcomes)})")
        idx = self.offsets[sid] + i
        self._params[key] = idx
        return idx

    def declared_names(self) -> list:
        return list(self.ids) + [f"{f}(...)" for f in self.families]

    def outcomes(self, name) -> tuple:
        return self.specs[self.instance_id(name)].outcomes

    def declared_probs(self, sid: int) -> np.ndarray:
        """Probabilities set by hand, or uniform."""
        p = self.declared.get(self.names[sid])
        m = len(self.specs[sid].outcomes)
        return p if p is not None else np.full(m, 1.0 / m)


def _key(key, family: str):
    """A family key as stored: plain values, a 1-tuple unwrapped (``tr(s)`` is ``("tr", s)``)."""
    key = _plain(_check_hashable(key, f"switch_family {family!r}: key"))
    return key[0] if isinstance(key, tuple) and len(key) == 1 else key


def family_name_of(family: str, key) -> tuple:
    """The name of a family's switch: ``(family, *key)`` for a tuple key, else
    ``(family, key)``."""
    return (family, *key) if isinstance(key, tuple) else (family, key)


def _preview(values, n: int = 8) -> str:
    values = list(values)
    head = ", ".join(repr(v) for v in values[:n])
    return f"[{head}{', ...' if len(values) > n else ''}]"

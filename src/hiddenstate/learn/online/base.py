"""The protocol every streaming learner follows, and the checks of a learner's state.

A learner object holds hyper-parameters only (step sizes, learning rates, priors...). Its
*state* is a flat ``dict`` mapping names to NumPy arrays or Python scalars (int, float,
bool, str): everything needed to continue the stream, and nothing else, so that
``state -> save -> load -> continue`` gives bit-identical results to an uninterrupted run.

Parameters travel as the batch learners' ``theta``:
``{"startprob": (K,), "transmat": (K, K), "emission": {family keys...}}``.

A state that did not come from the learner (a loaded checkpoint, a dict assigned by hand)
is checked by the learner's ``check_state`` before the kernels see it: the exact keys,
types, dtypes and shapes of the state :meth:`OnlineLearner.start` builds for the same
parameters and family (:func:`check_layout`, so a key added to ``start`` is checked
without more code), then each key's meaning (probabilities, counts, indices in range).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ..._validation import check_stochastic
from ...errors import InvalidInputError

#: upper bound of a state's counters (observations, sequences, averaged iterates): far
#: beyond any stream, far below int64 overflow
MAX_COUNT = 2**62


# a protocol is never instantiated: no constructor parameters to document
class OnlineLearner(Protocol):  # numpydoc ignore=PR01
    """The protocol every streaming learner follows.

    A learner object holds hyper-parameters only; its *state* is a flat ``dict`` of NumPy
    arrays and Python scalars (see :mod:`hiddenstate.learn.online.base`), so that
    ``state -> save -> load -> continue`` gives bit-identical results to an uninterrupted
    run. Parameters travel as the batch learners' ``theta``: ``{"startprob": (K,),
    "transmat": (K, K), "emission": {family keys...}}``. :class:`hiddenstate.HMM` drives a
    learner through ``partial_fit`` (``learn=`` its :attr:`name`).

    See Also
    --------
    make_learner : A learner by its ``learn=`` name.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families import CategoricalEmissions
    >>> from hiddenstate.learn.online import make_learner
    >>> family = CategoricalEmissions(n_states=2, n_features=3)
    >>> theta = {"startprob": np.array([0.5, 0.5]),
    ...          "transmat": np.array([[0.6, 0.4], [0.3, 0.7]]),
    ...          "emission": {"emissionprob": np.array([[0.5, 0.3, 0.2], [0.2, 0.3, 0.5]])}}
    >>> learner = make_learner("bwo", {"eta": 0.1})
    >>> state = learner.start(theta, family)
    >>> state = learner.update(state, np.array([[0], [0], [2]]), None, family)
    >>> state["n_sequences"], learner.params(state, family)["transmat"].shape
    (1, (2, 2))
    """

    #: the ``learn=`` name of the learner ("online-em", "bwo", ...)
    name: str

    def start(self, theta: dict, family, rng: np.random.Generator) -> dict:
        """Build the initial state from initial parameters and the emission family.

        Parameters
        ----------
        theta : dict
            Initial parameters: ``{"startprob": (K,), "transmat": (K, K), "emission":
            {family keys...}}``.
        family : EmissionFamily
            The emission family (:mod:`hiddenstate.families`).
        rng : numpy.random.Generator or None, default=None
            The learner's randomness, if it has any.

        Returns
        -------
        dict
            The state: NumPy arrays and Python scalars.
        """

    def update(self, state: dict, X: np.ndarray, lengths: np.ndarray, family,
               continues: bool = False, states: np.ndarray | None = None) -> dict:
        """Consume the sequences ``X`` in order and return the new state.

        Parameters
        ----------
        state : dict
            The state to continue from (left unchanged).
        X : ndarray of shape (n_samples, n_features)
            The sequences, concatenated, validated by the family.
        lengths : array-like of int or None
            The length of each sequence; None: one sequence.
        family : EmissionFamily
            The emission family.
        continues : bool, default=False
            Whether the first sequence continues the one the previous call ended in
            (online EM only; per-sequence learners refuse it).
        states : ndarray of shape (n_samples,) or None, default=None
            Partial state labels (``-1``: unknown); at a labelled step every other state
            has emission probability 0 (:func:`hiddenstate.inference.clamp_states`).

        Returns
        -------
        dict
            The new state.
        """

    def params(self, state: dict, family) -> dict:
        """Return the current parameters, materialised from the state.

        Parameters
        ----------
        state : dict
            The state.
        family : EmissionFamily
            The emission family.

        Returns
        -------
        dict
            ``theta``: ``{"startprob", "transmat", "emission"}``.
        """

    def grow(self, state: dict, n_symbols: int) -> dict:
        """Return the state of the same stream over a larger alphabet.

        One categorical feature: a symbol not seen yet has no statistics and, in every
        emission row, the share a flat row over ``n_symbols`` symbols would give it
        (:func:`grown_rows`; the Dirichlet learners: the prior's pseudo-count and nothing
        else). The stream goes on as if those symbols had always been in its alphabet and
        never been seen (their rows of the initial emission matrix aside).

        Parameters
        ----------
        state : dict
            The state (left unchanged).
        n_symbols : int
            The new alphabet size (larger than the state's).

        Returns
        -------
        dict
            The grown state.
        """

    def check_state(self, state: dict, theta: dict, family, prefix: str = "") -> None:
        """Check a state that did not come from the learner (a checkpoint, a dict by hand).

        Parameters
        ----------
        state : dict
            The state to check.
        theta : dict
            Valid parameters of the shapes the state must have.
        family : EmissionFamily
            The emission family.
        prefix : str, default=""
            Prepended to the key in the error message.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            Unless ``state`` is a state this learner could have reached from parameters of
            the shapes of ``theta`` with this family; the message names ``prefix + key``.
        """


def template(learner, theta: dict, family, prefix: str) -> dict:
    """The state ``learner.start`` builds from ``theta``: the reference for keys, types,
    dtypes and shapes. Its sizes come from the parameters and the learner's options, never
    from the state being checked."""
    try:
        return learner.start(theta, family, None)
    except MemoryError:
        raise InvalidInputError(
            f"{prefix.rstrip('.')}: a state of learn={learner.name!r} with these parameters "
            "and learner_options does not fit in memory") from None


def _kind(value) -> str | None:
    if isinstance(value, np.ndarray):
        return "array"
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, str):
        return "str"
    return None


def check_layout(state, reference: dict, prefix: str, learner: str,
                 neg_inf: tuple[str, ...] = ()) -> dict:
    """``state`` has exactly the keys of ``reference``, each an array of the same dtype and
    shape or a scalar of the same kind (an int where a float is expected is accepted; a
    string must be equal); float arrays hold no NaN and no infinity (``-inf`` is allowed in
    the keys ``neg_inf``). Returns the state with scalars as Python int/float."""
    if not isinstance(state, dict):
        raise InvalidInputError(
            f"{prefix.rstrip('.')}: expected the dict of a learn={learner!r} state, got "
            f"{type(state).__name__}")
    missing = sorted(set(reference) - set(state), key=str)
    if missing:
        raise InvalidInputError(
            f"{prefix}{missing[0]}: missing from the state of learn={learner!r} (expected "
            f"keys {sorted(reference)}); the state was modified or comes from another model")
    extra = sorted(set(state) - set(reference), key=str)
    if extra:
        raise InvalidInputError(
            f"{prefix}{extra[0]}: not a key of the state of learn={learner!r} (expected keys "
            f"{sorted(reference)}); the state was modified or comes from another model")
    out = {}
    for key, ref in reference.items():
        value, kind, want = state[key], _kind(state[key]), _kind(ref)
        name = f"{prefix}{key}"
        if want == "array":
            if kind != "array" or value.dtype != ref.dtype or value.shape != ref.shape:
                got = (f"{value.dtype} array of shape {value.shape}" if kind == "array"
                       else type(value).__name__)
                raise InvalidInputError(
                    f"{name}: expected a {ref.dtype} array of shape {ref.shape}, got {got}; "
                    "the state does not belong to this model (states, shapes and options must "
                    "match)")
            if value.dtype.kind == "f":
                bad = np.isnan(value) | (value == np.inf)
                if key not in neg_inf:
                    bad |= value == -np.inf
                if bad.any():
                    raise InvalidInputError(f"{name}: holds NaN or infinite values")
            out[key] = value
        elif want == "str":
            if kind != "str" or value != ref:
                raise InvalidInputError(f"{name}: expected {ref!r}, got {value!r}")
            out[key] = value
        elif kind != want and not (want == "float" and kind == "int"):
            raise InvalidInputError(
                f"{name}: expected a{'n' if want == 'int' else ''} {want}, got "
                f"{type(value).__name__}")
        else:
            out[key] = {"int": int, "float": float, "bool": bool}[want](value)
    return out


def check_count(state: dict, key: str, prefix: str, high: int = MAX_COUNT,
                what: str = "a counter") -> int:
    """An integer scalar of the state in ``0 .. high``."""
    value = state[key]
    if not 0 <= value <= high:
        raise InvalidInputError(
            f"{prefix}{key}: {value} is out of range 0 .. {high} ({what}); the state was "
            "modified or corrupted")
    return value


def check_nonneg(state: dict, keys, prefix: str) -> None:
    """Arrays of non-negative numbers (statistics, counts, weights)."""
    for key in keys:
        if np.any(state[key] < 0):
            raise InvalidInputError(
                f"{prefix}{key}: holds negative values (it accumulates non-negative weights); "
                "the state was modified or corrupted")


def check_probabilities(state: dict, keys, prefix: str, atol: float = 1e-8) -> None:
    """Probability vectors / row-stochastic matrices (shapes already checked)."""
    for key in keys:
        check_stochastic(state[key], state[key].shape, prefix + key, atol=atol)


def check_sums(state: dict, key: str, total: float, prefix: str, what: str) -> None:
    """Non-negative array whose last axis sums to ``total`` (within rounding)."""
    arr = state[key]
    check_nonneg(state, [key], prefix)
    if not np.allclose(arr.sum(axis=-1), total, rtol=1e-9, atol=1e-9):
        raise InvalidInputError(
            f"{prefix}{key}: its rows must sum to {total} ({what}); the state was modified "
            "or corrupted")


class StateRecord:
    """What a checked state held, to tell cheaply whether it was replaced or edited since.

    Keeps the state dict and the objects in it; :class:`hiddenstate.HMM` checks its
    ``learner_state_`` again only when :meth:`matches` says it changed.

    Parameters
    ----------
    state : dict
        A state that was just checked.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.learn.online import StateRecord
    >>> state = {"t": 3, "phi": np.array([0.5, 0.5])}
    >>> record = StateRecord(state)
    >>> record.matches(state)
    True
    >>> state["t"] = 4
    >>> record.matches(state)
    False
    """

    def __init__(self, state: dict):
        self.state = state
        self.items = dict(state)

    def matches(self, state) -> bool:
        """Tell whether ``state`` is the recorded dict, holding the same objects.

        An array counts as unchanged only when it is the same object (an array replaced
        by an equal one counts as a change); scalars compare by value.

        Parameters
        ----------
        state : dict
            The state now.

        Returns
        -------
        bool
            True when nothing was replaced or added.
        """
        if state is not self.state or state.keys() != self.items.keys():
            return False
        for key, value in state.items():
            old = self.items[key]
            if value is old:
                continue
            if isinstance(value, np.ndarray) or isinstance(old, np.ndarray) \
                    or type(value) is not type(old) or not value == old:
                return False
        return True


def grown_rows(rows: np.ndarray, n_symbols: int) -> np.ndarray:
    """Emission rows ``(K, W)`` over ``n_symbols > W`` symbols: each new symbol gets
    ``1 / n_symbols`` of every row, the old entries are scaled by ``W / n_symbols`` (rows
    stay stochastic, structural zeros stay zero).

    Parameters
    ----------
    rows : ndarray of shape (K, W)
        Stochastic rows.
    n_symbols : int
        The new number of columns.

    Returns
    -------
    ndarray of shape (K, n_symbols)
        The grown rows.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.learn.online.base import grown_rows
    >>> grown_rows(np.array([[0.5, 0.5], [1.0, 0.0]]), 4)
    array([[0.25, 0.25, 0.25, 0.25],
           [0.5 , 0.  , 0.25, 0.25]])
    """
    K, W = rows.shape
    return np.hstack([rows * (W / n_symbols), np.full((K, n_symbols - W), 1.0 / n_symbols)])

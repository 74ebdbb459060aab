"""Input validation at the public boundary (kernels never validate).

Each check raises :class:`~hiddenstate.errors.InvalidInputError` with a message that names
the argument and the fix.
"""

from __future__ import annotations

import numpy as np

from .errors import InvalidInputError


def check_lengths(lengths, n_samples: int) -> np.ndarray:
    """Return ``lengths`` as int64, checking it partitions ``n_samples`` rows."""
    if lengths is None:
        if n_samples == 0:
            raise InvalidInputError("X: no samples; pass at least one observation")
        return np.array([n_samples], dtype=np.int64)
    arr = np.asarray(lengths)
    if arr.ndim != 1:
        raise InvalidInputError(
            f"lengths: expected a 1-D sequence of ints, got shape {arr.shape}; "
            "pass one length per sequence"
        )
    if arr.size == 0:
        raise InvalidInputError("lengths: empty; pass at least one sequence length")
    if not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr)) and np.all(
            arr == np.round(arr)
        ):
            arr = arr.astype(np.int64)
        else:
            raise InvalidInputError(
                f"lengths: expected integers, got dtype {arr.dtype}; pass whole numbers"
            )
    arr = arr.astype(np.int64)
    if np.any(arr <= 0):
        bad = int(np.flatnonzero(arr <= 0)[0])
        raise InvalidInputError(
            f"lengths: sequence {bad} has length {arr[bad]}; empty sequences are not allowed, "
            "drop them before fitting"
        )
    total = int(arr.sum())
    if total != n_samples:
        raise InvalidInputError(
            f"lengths: sums to {total} but X has {n_samples} rows; lengths must add up to len(X)"
        )
    return arr


def check_real_X(X, n_features: int | None, name: str = "X") -> np.ndarray:
    """2-D finite float64 array; a 1-D array is read as one feature."""
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"{name}: cannot be read as numbers ({exc}); pass a numeric array") from exc
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise InvalidInputError(
            f"{name}: expected a 2-D array (n_samples, n_features), got shape {arr.shape}"
        )
    if arr.shape[0] == 0:
        raise InvalidInputError(f"{name}: no samples; pass at least one observation")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise InvalidInputError(
            f"{name}: contains NaN or inf (first at row {bad[0]}, column {bad[1]}); "
            "remove or impute missing values first"
        )
    if n_features is not None and arr.shape[1] != n_features:
        raise InvalidInputError(
            f"{name}: has {arr.shape[1]} features but the model expects {n_features}; "
            "pass data with the same columns as used in fit"
        )
    return np.ascontiguousarray(arr)


def check_symbols(X, n_symbols: int | None, name: str = "X") -> np.ndarray:
    """Integer symbols in ``[0, n_symbols)`` as a 1-D int64 array.

    Accepts a 1-D array or hmmlearn's ``(n_samples, 1)`` column.
    """
    arr = np.asarray(X)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise InvalidInputError(
            f"{name}: categorical data must be a column (n_samples, 1) or 1-D array of symbols, "
            f"got shape {arr.shape}"
        )
    if arr.size == 0:
        raise InvalidInputError(f"{name}: no samples; pass at least one observation")
    if arr.dtype == object or arr.dtype.kind in "USb":
        raise InvalidInputError(
            f"{name}: symbols must be integers, got dtype {arr.dtype}; "
            "map tokens to integer ids first (see hiddenstate.textio.Vocabulary)"
        )
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.isfinite(arr)):
            raise InvalidInputError(f"{name}: contains NaN or inf; symbols must be integers")
        if not np.all(arr == np.round(arr)):
            raise InvalidInputError(
                f"{name}: symbols must be whole numbers, got dtype {arr.dtype} with fractions"
            )
    arr = arr.astype(np.int64)
    if arr.min() < 0:
        raise InvalidInputError(
            f"{name}: symbol {int(arr.min())} is negative; symbols are 0 .. n_symbols-1"
        )
    if n_symbols is not None and arr.max() >= n_symbols:
        raise InvalidInputError(
            f"{name}: symbol {int(arr.max())} is out of range for a model with {n_symbols} "
            "symbols; refit with n_features covering every symbol"
        )
    return np.ascontiguousarray(arr)


def check_counts(X, n_features: int | None, name: str = "X") -> np.ndarray:
    """Non-negative integer counts (Poisson emissions) as float64 (n_samples, n_features)."""
    arr = check_real_X(X, n_features, name)
    if np.any(arr < 0) or np.any(arr != np.round(arr)):
        raise InvalidInputError(
            f"{name}: Poisson emissions need non-negative integer counts"
        )
    return arr


def check_stochastic(p, shape: tuple[int, ...], name: str, atol: float = 1e-8) -> np.ndarray:
    """Probability vector or row-stochastic matrix of the given shape."""
    arr = np.asarray(p, dtype=np.float64)
    if arr.shape != shape:
        raise InvalidInputError(f"{name}: expected shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise InvalidInputError(f"{name}: entries must be finite and non-negative")
    sums = arr.sum(axis=-1)
    if not np.allclose(sums, 1.0, rtol=0, atol=atol):
        worst = np.unravel_index(np.argmax(np.abs(sums - 1.0)), sums.shape) if sums.ndim else ()
        raise InvalidInputError(
            f"{name}: {'row ' + str(worst[0]) + ' ' if worst else ''}sums to "
            f"{float(np.atleast_1d(sums)[worst[0] if worst else 0]):.6g}, not 1; "
            "normalise it (p / p.sum(axis=-1, keepdims=True))"
        )
    return np.ascontiguousarray(arr)


def check_positive_int(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InvalidInputError(f"{name}: expected an integer >= {minimum}, got {value!r}")
    return int(value)


def broadcast_param(name: str, value, shape: tuple[int, ...] | None) -> np.ndarray:
    """A (prior) hyper-parameter as a float64 array of ``shape`` (as given if None), or an
    error naming it."""
    try:
        arr = np.asarray(value, dtype=np.float64)
        if shape is None:
            return arr
        if arr.ndim > len(shape) and arr.size == 1:
            arr = arr.reshape(())
        return np.broadcast_to(arr, shape).copy()
    except (TypeError, ValueError) as exc:
        want = f" broadcastable to {shape}" if shape is not None else " of numbers"
        raise InvalidInputError(
            f"{name}: expected a number or an array{want}, got {value!r:.80}") from exc

"""Input validation at the public boundary (kernels never validate).

Each check raises :class:`~hiddenstate.errors.InvalidInputError` with a message that names
the argument and the fix.
"""

from __future__ import annotations

import os

import numpy as np

from .errors import InsufficientMemoryError, InvalidInputError


def check_lengths(lengths, n_samples: int) -> np.ndarray:
    """Return ``lengths`` as int64, checking it partitions ``n_samples`` rows."""
    if lengths is None:
        if n_samples == 0:
            raise InvalidInputError("X: no samples; pass at least one observation")
        return np.array([n_samples], dtype=np.int64)
    if isinstance(lengths, (str, bytes, dict, set, frozenset)):
        raise InvalidInputError(
            f"lengths: expected a 1-D sequence of ints (one length per sequence), got a "
            f"{type(lengths).__name__}")
    try:
        arr = np.asarray(lengths)
    except (TypeError, ValueError) as exc:  # ragged nesting
        raise InvalidInputError(
            f"lengths: expected a 1-D sequence of ints, got {lengths!r:.60} ({exc})") from exc
    if arr.ndim == 0:
        raise InvalidInputError(
            f"lengths: expected a 1-D sequence of ints, got the single value {lengths!r:.40}; "
            "pass a list of lengths, e.g. [len(X)] for one sequence")
    if arr.ndim != 1:
        raise InvalidInputError(
            f"lengths: expected a 1-D sequence of ints, got shape {arr.shape}; "
            "pass one length per sequence"
        )
    if arr.size == 0:
        raise InvalidInputError("lengths: empty; pass at least one sequence length")
    if arr.dtype == object:
        arr = _object_numbers(arr, "lengths", integers=True)
    if arr.dtype.kind == "b" or not (np.issubdtype(arr.dtype, np.integer)
                                     or np.issubdtype(arr.dtype, np.floating)):
        raise InvalidInputError(
            f"lengths: expected integers, got dtype {arr.dtype}; pass whole numbers"
        )
    if not np.issubdtype(arr.dtype, np.integer) and not (
            np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
        raise InvalidInputError(
            f"lengths: expected integers, got dtype {arr.dtype} with fractions or NaN; "
            "pass whole numbers")
    if np.any(arr <= 0):
        bad = int(np.flatnonzero(arr <= 0)[0])
        raise InvalidInputError(
            f"lengths: sequence {bad} has length {arr[bad]}; empty sequences are not allowed, "
            "drop them before fitting"
        )
    if np.any(arr > n_samples):  # before the cast to int64, which could wrap around
        bad = int(np.flatnonzero(arr > n_samples)[0])
        raise InvalidInputError(
            f"lengths: sequence {bad} has length {arr[bad]} but X has only {n_samples} rows; "
            "lengths must add up to len(X)")
    arr = arr.astype(np.int64)
    total = int(arr.sum(dtype=object))
    if total != n_samples:
        raise InvalidInputError(
            f"lengths: sums to {total} but X has {n_samples} rows; lengths must add up to len(X)"
        )
    return arr


def _words_example(X) -> str | None:
    """The first string in ``X`` (a flat or nested Python sequence, or a string array),
    or None."""
    if isinstance(X, np.ndarray):
        return str(X.ravel()[0]) if X.dtype.kind in "US" and X.size else None
    if not isinstance(X, (list, tuple)):
        return None
    for item in X:
        if isinstance(item, (str, bytes)):
            return str(item)
        if isinstance(item, np.ndarray) and item.dtype.kind in "US" and item.size:
            return str(item.ravel()[0])
        if isinstance(item, (list, tuple)):
            word = next((v for v in item if isinstance(v, (str, bytes))), None)
            if word is not None:
                return str(word)
    return None


def check_sequence_list(X, lengths, name: str = "X", categorical: bool = True,
                        rows_declared: bool = False) -> None:
    """Refuse the inputs an HMM would misread as rows ``(n_samples, n_features)``:

    - words (strings): an HMM reads integer symbols; the message shows how to encode them
      with :class:`hiddenstate.textio.Vocabulary`;
    - a Python list (or tuple) of sequences of different lengths, or of 2-D arrays: a list
      of sequences, which is passed as their rows one after another plus ``lengths``;
    - a list of equal-length lists of integers, for categorical emissions (``categorical``),
      without ``lengths`` and unless several categorical features were declared
      (``rows_declared``: ``n_features`` a tuple, or a model fitted on several): it reads as
      rows of several categorical features, as NumPy and scikit-learn read nested lists,
      but most often means several sequences; the message shows both spellings.

    Arrays (not lists) are rows, and so are lists of one-element lists (``[[0], [1], [2]]``,
    hmmlearn's column) and lists of rows of real numbers (Gaussian data); nothing is guessed.
    """
    word = _words_example(X)
    if word is not None:
        raise InvalidInputError(
            f"{name}: holds words (strings such as {word!r:.30}); an HMM reads integers "
            "(symbols 0..W-1): encode the sentences with a vocabulary, vocab = "
            "hiddenstate.textio.Vocabulary.build(sentences); X, lengths = "
            "hiddenstate.textio.encode_sequences(sentences, vocab); then "
            "fit(X, lengths) with n_features=len(vocab)")
    if not isinstance(X, (list, tuple)) or not X or not all(
            isinstance(item, (list, tuple, np.ndarray)) for item in X):
        return
    dims = {np.ndim(item) for item in X}
    sizes = [len(item) if np.ndim(item) else 1 for item in X]
    n, shown = len(X), ", ".join(map(str, sizes[:5])) + (", ..." if len(X) > 5 else "")
    stack = ("X = np.concatenate([np.asarray(s).reshape(len(s), -1) for s in seqs]), "
             "lengths = [len(s) for s in seqs]; fit(X, lengths)")
    if dims - {1}:
        raise InvalidInputError(
            f"{name}: a list of {n} arrays of {max(dims)} dimensions is a list of sequences; "
            "an HMM takes the sequences' rows one after another with their lengths: "
            + stack)
    if len(set(sizes)) > 1:
        raise InvalidInputError(
            f"{name}: a list of {n} sequences of different lengths ({shown}); an HMM takes "
            "the sequences' rows one after another with their lengths: " + stack)
    width = sizes[0]
    if not categorical or rows_declared or lengths is not None or width == 1:
        return
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
               for item in X for v in (item.ravel() if isinstance(item, np.ndarray)
                                       else item)):
        return
    raise InvalidInputError(
        f"{name}: a list of {n} lists of {width} integers is ambiguous: {n} sequences of "
        f"{width} symbols are passed one after another with their lengths, "
        f"fit(np.concatenate(X)[:, None], lengths=[{width}] * {n}); {n} observations of "
        f"{width} categorical features are passed as an array, fit(np.asarray(X)) (or with "
        "lengths)")


def _object_numbers(arr: np.ndarray, name: str, integers: bool) -> np.ndarray:
    """An object array of real numbers as int64 (``integers`` and all entries integral
    Python/NumPy ints) or float64; anything else (strings, None, complex, bools) is an
    error naming ``name``."""
    flat = arr.ravel()
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
           for v in flat):
        if integers:
            if any(not -2**63 <= int(v) < 2**63 for v in flat):
                raise InvalidInputError(
                    f"{name}: holds integers beyond the 64-bit range; pass smaller values")
            return arr.astype(np.int64)
        return arr.astype(np.float64)
    if all(isinstance(v, (int, float, np.integer, np.floating))
           and not isinstance(v, (bool, np.bool_)) for v in flat):
        return arr.astype(np.float64)
    bad = next(v for v in flat if isinstance(v, (bool, np.bool_))
               or not isinstance(v, (int, float, np.integer, np.floating)))
    raise InvalidInputError(
        f"{name}: expected numbers, got an object array holding {type(bad).__name__} "
        f"{bad!r:.40}; pass a numeric array")


def _reject_kinds(arr: np.ndarray, name: str, what: str) -> None:
    """Errors for complex and boolean arrays (neither is converted silently)."""
    if arr.dtype.kind == "c":
        raise InvalidInputError(
            f"{name}: complex values (dtype {arr.dtype}); {what} are real, pass the real "
            "part explicitly (X.real) if that is what you mean")
    if arr.dtype.kind == "b":
        raise InvalidInputError(
            f"{name}: a boolean array; {what} are numbers, convert it explicitly "
            "(X.astype(int) or X.astype(float))")


#: the marker of a missing symbol in categorical data
MISSING_SYMBOL = -1


def check_real_X(X, n_features: int | None, name: str = "X",
                 allow_missing: bool = False) -> np.ndarray:
    """2-D finite float64 array; a 1-D array is read as one feature. With
    ``allow_missing``, NaN marks a missing entry (so do the masked entries of a
    ``numpy.ma`` masked array); infinities are still refused."""
    if allow_missing and np.ma.isMaskedArray(X):
        X = np.ma.filled(np.ma.asarray(X, dtype=np.float64), np.nan)
    try:
        arr = np.asarray(X)
        _reject_kinds(arr, name, "observations")
        if arr.dtype == object:
            arr = _object_numbers(arr, name, integers=False)
        arr = np.asarray(arr, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, InvalidInputError):
            raise
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
    bad_values = np.isinf(arr) if allow_missing else ~np.isfinite(arr)
    if np.any(bad_values):
        bad = np.argwhere(bad_values)[0]
        raise InvalidInputError(
            f"{name}: contains inf (first at row {bad[0]}, column {bad[1]}); mark a missing "
            "value with NaN" if allow_missing else
            f"{name}: contains NaN or inf (first at row {bad[0]}, column {bad[1]}); "
            "remove or impute missing values first"
        )
    if n_features is not None and arr.shape[1] != n_features:
        raise InvalidInputError(
            f"{name}: has {arr.shape[1]} features but the model expects {n_features}; "
            "pass data with the same columns as used in fit"
        )
    return np.ascontiguousarray(arr)


def check_symbols(X, n_symbols: int | None, name: str = "X",
                  allow_missing: bool = False) -> np.ndarray:
    """Integer symbols in ``[0, n_symbols)`` as a 1-D int64 array.

    Accepts a 1-D array or hmmlearn's ``(n_samples, 1)`` column. With ``allow_missing``,
    ``-1`` (:data:`MISSING_SYMBOL`) marks a missing symbol, and so do the masked entries of
    a ``numpy.ma`` masked array.
    """
    if allow_missing and np.ma.isMaskedArray(X):
        X = np.ma.filled(X, MISSING_SYMBOL)
    try:
        arr = np.asarray(X)
    except (TypeError, ValueError) as exc:  # ragged nesting
        raise InvalidInputError(
            f"{name}: cannot be read as an array of symbols ({exc}); pass a 1-D array or an "
            "(n_samples, 1) column of integers") from exc
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise InvalidInputError(
            f"{name}: categorical data must be a column (n_samples, 1) or 1-D array of symbols, "
            f"got shape {arr.shape}"
        )
    if arr.size == 0:
        raise InvalidInputError(f"{name}: no samples; pass at least one observation")
    _reject_kinds(arr, name, "symbols")
    if arr.dtype.kind == "O" and not any(isinstance(v, (str, bytes)) for v in arr):
        arr = _object_numbers(arr, name, integers=True)
    kind = arr.dtype.kind
    if kind not in "iuf":
        raise InvalidInputError(
            f"{name}: symbols must be integers, got dtype {arr.dtype}; "
            "map tokens to integer ids first (see hiddenstate.textio.Vocabulary)"
        )
    if kind == "f":
        if not np.all(np.isfinite(arr)):
            raise InvalidInputError(f"{name}: contains NaN or inf; symbols must be integers")
        if not np.all(arr == np.round(arr)):
            raise InvalidInputError(
                f"{name}: symbols must be whole numbers, got dtype {arr.dtype} with fractions"
            )
    # values beyond int64 (uint64 >= 2**63, huge floats) would wrap around in the cast
    # (no other integer type holds any)
    wide = kind == "f" or (kind == "u" and arr.dtype.itemsize >= 8)
    if wide and arr.max() >= 2.0**63:
        raise InvalidInputError(
            f"{name}: symbol {arr.max().item()} is beyond the 64-bit range; symbols are "
            "0 .. n_symbols-1 (relabel them with np.unique(X, return_inverse=True))")
    if wide and arr.min() < -2.0**63:
        raise InvalidInputError(
            f"{name}: symbol {arr.min().item()} is negative; symbols are 0 .. n_symbols-1")
    arr = arr.astype(np.int64)
    lowest = MISSING_SYMBOL if allow_missing else 0
    if arr.min() < lowest:
        raise InvalidInputError(
            f"{name}: symbol {int(arr.min())} is negative; symbols are 0 .. n_symbols-1"
            + (f" ({MISSING_SYMBOL} marks a missing symbol)" if allow_missing else "")
        )
    if n_symbols is not None and arr.max() >= n_symbols:
        raise InvalidInputError(
            f"{name}: symbol {int(arr.max())} is out of range for a model with {n_symbols} "
            f"symbols (0 .. {n_symbols - 1}); give the model n_features covering every symbol "
            "when you make it, or map the others to one symbol kept for unseen ones"
        )
    return np.ascontiguousarray(arr)


def check_sample_weight(sample_weight, lengths: np.ndarray, name: str = "sample_weight",
                        part: bool = False) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Return ``(sequence weights (S,) or None, observation weights (N,) or None)``.

    ``sample_weight`` is None, one weight per sequence (``len(lengths)`` values), one per
    observation (``sum(lengths)`` values), or a dict with the keys ``"sequence"`` and/or
    ``"observation"``. A 1-D array whose length is both (every sequence one observation
    long) is ambiguous and refused (the message gives the dict form). Weights must be
    finite and >= 0, and not all 0 (unless the data are a ``part`` of a data set: a
    partition of a distributed fit); all-ones weights are returned as None (no weighting).
    """
    lengths = np.asarray(lengths)
    S, N = len(lengths), int(lengths.sum())
    if sample_weight is None:
        return None, None
    if isinstance(sample_weight, dict):
        extra = set(sample_weight) - {"sequence", "observation"}
        if extra:
            raise InvalidInputError(
                f"{name}: unknown key {sorted(map(str, extra))[0]!r}; a dict of weights has "
                "the keys 'sequence' (one weight per sequence) and 'observation' (one per "
                "observation)")
        seq, obs = sample_weight.get("sequence"), sample_weight.get("observation")
        return (_weights(seq, S, f"{name}['sequence']", "sequences", part),
                _weights(obs, N, f"{name}['observation']", "observations", part))
    arr = _weights(sample_weight, None, name, "", part)
    if len(arr) == S == N:
        raise InvalidInputError(
            f"{name}: {S} weights for {S} sequences of one observation each is ambiguous; "
            f"pass {name}={{'sequence': w}} (each sequence counts w times) or "
            f"{name}={{'observation': w}} (each observation's emission term to the power w)")
    if len(arr) == S:
        return _weights(arr, S, name, "sequences", part), None
    if len(arr) == N:
        return None, _weights(arr, N, name, "observations", part)
    raise InvalidInputError(
        f"{name}: has {len(arr)} values; expected one per sequence ({S}) or one per "
        f"observation ({N})")


def _weights(value, n: int | None, name: str, what: str,
             part: bool = False) -> np.ndarray | None:
    """1-D finite non-negative weights (``n`` of them when given), not all zero (unless
    ``part``); None for None or all ones."""
    if value is None:
        return None
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name}: expected a 1-D array of weights ({exc})") from exc
    if arr.dtype == object:
        arr = _object_numbers(arr, name, integers=False)
    if arr.dtype.kind not in "iuf" or arr.ndim != 1:
        raise InvalidInputError(
            f"{name}: expected a 1-D array of numbers, got {arr.dtype} of shape {arr.shape}")
    arr = arr.astype(np.float64)
    if n is not None and len(arr) != n:
        raise InvalidInputError(f"{name}: has {len(arr)} values for {n} {what}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        bad = int(np.flatnonzero(~(np.isfinite(arr) & (arr >= 0)))[0])
        raise InvalidInputError(
            f"{name}: entry {bad} is {arr[bad]}; weights must be finite and >= 0")
    if n is not None and len(arr) and not part and not np.any(arr > 0):
        raise InvalidInputError(f"{name}: every weight is 0; nothing would be learned")
    if n is not None and np.all(arr == 1.0):
        return None
    return arr


def check_states(states, n_samples: int, n_states: int, name: str = "states") -> np.ndarray:
    """Partial state labels: ``(n_samples,)`` integers in ``[-1, n_states)``, ``-1`` for
    an unknown state, as int64."""
    arr = np.asarray(states)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1 or len(arr) != n_samples:
        raise InvalidInputError(
            f"{name}: expected one state label per observation, shape ({n_samples},), got "
            f"shape {arr.shape}; use -1 where the state is unknown")
    if arr.dtype.kind not in "iu" and not (
            arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
        raise InvalidInputError(
            f"{name}: labels must be integers (dtype {arr.dtype}); use -1 where the state is "
            "unknown")
    if len(arr) and (arr.min() < -1 or arr.max() >= n_states):
        raise InvalidInputError(
            f"{name}: labels must be states 0 .. {n_states - 1} or -1 (unknown), got values "
            f"from {arr.min()} to {arr.max()}")
    return np.ascontiguousarray(arr, dtype=np.int64)


def check_counts(X, n_features: int | None, name: str = "X",
                 allow_missing: bool = False, family: str = "Poisson") -> np.ndarray:
    """Non-negative integer counts (Poisson or multinomial emissions, named by ``family``
    in the error) as float64 (n_samples, n_features); with ``allow_missing``, NaN (or a
    masked entry) marks a missing count."""
    arr = check_real_X(X, n_features, name, allow_missing)
    seen = arr[~np.isnan(arr)] if allow_missing else arr
    bad = (seen < 0) | (seen != np.round(seen))
    if np.any(bad):
        raise InvalidInputError(
            f"{name}: {family} emissions need non-negative integer counts, got "
            f"{float(seen[bad][0])!r}; round or bin real values, or use Gaussian emissions"
        )
    return arr


def as_float_array(value, name: str, copy: bool = False) -> np.ndarray:
    """``value`` as a C-contiguous, writable float64 array (a copy if ``copy``, or if the
    input is read-only), or an error naming ``name``: strings, complex numbers, booleans
    and non-numeric objects are never converted silently."""
    if isinstance(value, (str, bytes)):
        raise InvalidInputError(f"{name}: expected numbers, got a {type(value).__name__}")
    try:
        arr = np.asarray(value)
        if arr.dtype == object:
            arr = _object_numbers(arr, name, integers=False)
        if arr.dtype.kind == "c":
            raise InvalidInputError(
                f"{name}: complex values (dtype {arr.dtype}); parameters are real numbers")
        if arr.dtype.kind not in "iuf":
            raise InvalidInputError(
                f"{name}: expected numbers, got dtype {arr.dtype}; pass a float array")
        out = np.array(arr, dtype=np.float64, order="C", copy=True if copy else None)
    except InvalidInputError:
        raise
    except (TypeError, ValueError) as exc:  # ragged nesting
        raise InvalidInputError(
            f"{name}: cannot be read as an array of numbers ({exc})") from exc
    return out if out.flags.writeable else out.copy()


def check_stochastic(p, shape: tuple[int, ...], name: str, atol: float = 1e-8) -> np.ndarray:
    """Probability vector or row-stochastic matrix of the given shape (a writable float64
    array)."""
    arr = as_float_array(p, name)
    if arr.shape != shape:
        raise InvalidInputError(f"{name}: expected shape {shape}, got {arr.shape}")
    bad = ~np.isfinite(arr) | (arr < 0)
    if np.any(bad):
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InvalidInputError(
            f"{name}: entries must be finite and non-negative, got {float(arr[where])} at "
            f"{where if len(where) > 1 else where[0]}")
    sums = arr.sum(axis=-1)
    if not np.allclose(sums, 1.0, rtol=0, atol=atol):
        worst = tuple(int(i) for i in np.unravel_index(np.argmax(np.abs(sums - 1.0)),
                                                       sums.shape))
        row = f"row {worst[0] if len(worst) == 1 else worst} " if worst else ""
        raise InvalidInputError(
            f"{name}: {row}sums to {float(sums[worst]):.6g}, not 1; "
            "normalise it (p / p.sum(axis=-1, keepdims=True))"
        )
    return arr


def check_number(value, name: str, minimum: float | None = None, strict: bool = False,
                 finite: bool = True) -> float:
    """A real number (Python or NumPy; not a bool), optionally ``>= minimum`` (``>`` if
    ``strict``) and finite."""
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_))
    if ok:
        try:
            value = float(value)
        except OverflowError:  # a Python int beyond the float range
            value = float("inf") if value > 0 else float("-inf")
        ok = not np.isnan(value) and (not finite or np.isfinite(value))
    if ok and minimum is not None:
        ok = value > minimum if strict else value >= minimum
    if not ok:
        want = "a finite number" if finite else "a number"
        if minimum is not None:
            want += f" {'>' if strict else '>='} {minimum:g}"
        raise InvalidInputError(f"{name}: expected {want}, got {value!r:.60}")
    return value


# -- memory ---------------------------------------------------------------------------------------
def available_memory(device: str = "cpu") -> int | None:
    """Bytes that can be allocated now on ``device``: for the CPU what the kernel says can
    be allocated without swapping (``MemAvailable`` in ``/proc/meminfo``), else the
    physical memory; for a CUDA device its free memory (torch, imported only then). None
    where that is not known."""
    if str(device).startswith("cuda"):
        try:
            import torch

            return int(torch.cuda.mem_get_info(torch.device(device))[0])
        except (ImportError, RuntimeError, AssertionError, ValueError):
            return None
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None


def _gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**28 else f"{n / 2**20:.3g} MiB"


#: estimates below this many bytes are not checked against the available memory
_ALWAYS_FITS = 2**27
#: how to shrink each share of a memory estimate
_MEMORY_FIXES = {
    "n_states": "use fewer states (n_states)",
    "X": "pass fewer or shorter sequences per call (split X and lengths)",
    "n_samples": "draw fewer samples per call",
}


def check_memory(parts: dict[str, float], what: str, fixes: dict[str, str] | None = None,
                 device: str = "cpu") -> None:
    """Refuse an operation whose estimated allocations exceed the available memory: the one
    memory check of every estimator (HMM, PROPS, PCFG, TreeNet, NaiveBayesHidden, the
    programs model, BlockedHMMLM, the PROPS sources), run before anything is allocated.

    ``parts`` maps the argument responsible for each share of the estimate (e.g.
    ``"n_states"``, ``"X"``) to bytes; the
    :class:`~hiddenstate.errors.InsufficientMemoryError` names the largest share's argument,
    the estimate, what is available on ``device`` (``"cpu"``, or a CUDA device) and how to
    shrink it (``fixes`` by argument, or the defaults). No check where the available memory
    is not known, nor below ``_ALWAYS_FITS`` bytes (which spares small calls the read of
    ``/proc/meminfo``).
    """
    total = float(sum(parts.values()))
    if total < _ALWAYS_FITS:
        return
    available = available_memory() if device == "cpu" else available_memory(device)
    if available is None or total <= available:
        return
    argument = max(parts, key=parts.get)
    fix = (fixes or {}).get(argument) or _MEMORY_FIXES.get(argument, "")
    on = "" if device == "cpu" else f" on {device}"
    raise InsufficientMemoryError(
        f"{argument}: {what} needs about {_gib(total)} of memory{on} ({_gib(parts[argument])} "
        f"of it because of {argument}) but only {_gib(available)} is available"
        + (f"; {fix}" if fix else ""))


def check_choice(value, name: str, choices) -> str:
    """One of the strings ``choices`` (anything else, arrays included, is an error)."""
    if not isinstance(value, str) or value not in choices:
        raise InvalidInputError(
            f"{name}: {value!r:.60} is not one of {sorted(choices)}")
    return value


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


def check_random_state(random_state, name: str = "random_state") -> None:
    """Raise unless ``random_state`` is None, an int >= 0, a SeedSequence, a numpy
    Generator or a legacy RandomState."""
    if random_state is None or isinstance(
            random_state, (np.random.Generator, np.random.RandomState, np.random.SeedSequence)):
        return
    if isinstance(random_state, (int, np.integer)) and not isinstance(
            random_state, (bool, np.bool_)):
        if random_state < 0:
            raise InvalidInputError(
                f"{name}: a seed must be an integer >= 0, got {random_state}; pass e.g. "
                f"{-int(random_state)} or None")
        return
    raise InvalidInputError(
        f"{name}: expected None, an int >= 0 or a numpy Generator, got "
        f"{type(random_state).__name__} {random_state!r:.40}")


def make_rng(random_state, name: str = "random_state") -> np.random.Generator:
    """A NumPy Generator from None, an int >= 0, a SeedSequence, a Generator (returned as
    is) or a legacy RandomState (which seeds a new one)."""
    check_random_state(random_state, name)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**32 - 1, dtype=np.uint64))
    return np.random.default_rng(random_state)

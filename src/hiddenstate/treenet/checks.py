"""Checks at the boundary of :class:`hiddenstate.TreeNet`: the data (``X``, ``likelihoods``),
hand-set parameters (eq. 8's denominators included), the memory a call needs, and the
answers that do not exist (a pattern of probability zero; a DAG pattern none of whose
samples is consistent with its evidence). Each raises a
:class:`~hiddenstate.errors.HiddenStateError` whose message names the argument and the fix;
the passes in :mod:`.passes` stay free of checks.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float_array, check_memory
from ..errors import InvalidInputError, NumericalError
from ..learn import check_possible as learn_check_possible
from .structure import Structure

#: patterns per chunk of the passes (bounds their working memory on large data)
CHUNK = 8192
#: most distinct supports (sets of child states allowed by a combination of parent states)
#: the eq. 8 check follows for one child before it gives up
MAX_SUPPORTS = 1 << 16


def check_rows(value, shape: tuple, name: str, why: str) -> np.ndarray:
    """A finite, non-negative float64 matrix of ``shape`` (``None``: any number of rows, at
    least one) without an all-zero row (``why`` says what such a row would mean)."""
    arr = as_float_array(value, name)
    if arr.ndim != 2 or any(w is not None and g != w for g, w in zip(arr.shape, shape,
                                                                      strict=True)):
        want = "(" + ", ".join("n_patterns" if w is None else str(w) for w in shape) + ")"
        raise InvalidInputError(f"{name}: expected shape {want}, got {arr.shape}")
    if arr.shape[0] == 0:
        raise InvalidInputError(f"{name}: no rows")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise InvalidInputError(f"{name}: entries must be finite and non-negative")
    dead = np.flatnonzero(arr.max(axis=1) <= 0)
    if len(dead):
        raise InvalidInputError(f"{name}: row {dead[0]} is all zero ({why})")
    return arr


def check_patterns(X, sizes: list[int], names: list[str]) -> np.ndarray:
    """``(n, n_observed)`` int64 symbols, -1 for missing."""
    try:
        arr = np.asarray(X)
    except (TypeError, ValueError) as exc:  # ragged nesting
        raise InvalidInputError(
            f"X: cannot be read as a table of symbols ({exc}); pass an (n_patterns, "
            f"{len(sizes)}) integer array, -1 for a missing symbol") from None
    if arr.dtype == object or arr.dtype.kind in "USbcmMV":
        raise InvalidInputError(
            f"X: symbols must be integers, got dtype {arr.dtype}; map tokens to integer ids "
            "(see hiddenstate.textio.Vocabulary)")
    if arr.ndim == 1 and len(sizes) == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] != len(sizes):
        raise InvalidInputError(
            f"X: expected shape (n_patterns, {len(sizes)}) (one column per observed variable "
            f"{names}), got {arr.shape}")
    if arr.shape[0] == 0:
        raise InvalidInputError("X: no patterns; pass at least one row")
    if arr.dtype.kind == "f" and (not np.all(np.isfinite(arr))
                                  or not np.all(arr == np.round(arr))):
        raise InvalidInputError(
            "X: symbols must be whole numbers (use -1, not NaN, for a missing symbol)")
    for col, (size, name) in enumerate(zip(sizes, names, strict=True)):
        x = arr[:, col]  # checked before the cast to int64, which could wrap around
        out = (x < -1) | (x >= size)
        if np.any(out):
            bad = x[out][0].item()
            text = str(int(bad)) if abs(bad) < 2**63 else f"{bad:.4g}"
            raise InvalidInputError(
                f"X: column {col} ({name!r}) has symbol {text}; its symbols are "
                f"0..{size - 1} (-1 marks a missing one)")
    return arr.astype(np.int64)


def check_products(s: Structure, weights: list) -> None:
    """Refuse factors for which eq. 8 is undefined: a combination of parent states whose
    rows have no child state where all are positive (the denominator
    :math:`\\sum_m \\prod_p W_p(D_m)` is zero). The search follows the distinct supports
    left after each parent (their number is bounded by ``MAX_SUPPORTS``) and is skipped for
    parents whose rows are all positive (the learned case)."""
    for c in range(s.n_vars):
        ps = s.parents[c]
        if len(ps) < 2:
            continue
        edges = [s.edge_index[(p, c)] for p in ps]
        sparse = [e for e in edges if not np.all(weights[e] > 0)]
        if len(sparse) < 2:
            continue  # one parent's row alone always has a positive entry
        # support (bytes of a boolean mask) -> one combination of (edge, row) reaching it
        reach = {np.ones(s.sizes[c], dtype=bool).tobytes(): ()}
        for e in sparse:
            rows = {}
            for i, row in enumerate(weights[e] > 0):
                rows.setdefault(row.tobytes(), i)
            nxt = {}
            for mask, how in reach.items():
                m = np.frombuffer(mask, dtype=bool)
                for row, i in rows.items():
                    both = m & np.frombuffer(row, dtype=bool)
                    if not both.any():
                        _undefined(s, c, (*how, (e, i)))
                    nxt.setdefault(both.tobytes(), (*how, (e, i)))
            if len(nxt) > MAX_SUPPORTS:
                raise InvalidInputError(
                    f"weights_: the zeros of the factors into {s.names[c]!r} are too many to "
                    "check that eq. 8 is defined for every combination of parent states; "
                    "give its multi-parent factors positive entries")
            reach = nxt


def _undefined(s: Structure, c: int, how: tuple) -> None:
    where = ", ".join(f"{s.names[s.edges[e][0]]}={i}" for e, i in how)
    rows = " and ".join(f"row {i} of weights_[{s.edge_name(e)!r}]" for e, i in how)
    raise InvalidInputError(
        f"weights_: eq. 8 is undefined for {s.names[c]!r} when {where}: {rows} have no "
        f"state of {s.names[c]!r} where all are positive (the normalising sum is zero); "
        "give every combination of parent states a child state they all allow")


def check_work(s: Structure, n: int, what: str, per_pattern: float = 0.0,
               samples: int = 0) -> None:
    """Refuse a call whose arrays would not fit in memory, before allocating them: the
    parameters and the working arrays of one chunk of the passes (``n_states``), the
    one-hot evidence of the observed leaves and ``per_pattern`` bytes of output per pattern
    (``X``), and ``samples`` downward samples of every pattern (``n_samples``)."""
    arrows = sum(s.sizes[p] * s.sizes[c] for p, c in s.edges)
    width = sum(s.sizes) + sum(s.sizes[p] for p, _ in s.edges)
    parts = {"n_states": 8.0 * (4 * arrows + 3 * min(n, CHUNK) * width),
             "X": float(n) * (8 * sum(s.sizes[v] for v in s.observed) + per_pattern)}
    if samples:
        parts["n_samples"] = float(samples) * n * (8 * s.n_vars + 16)
    check_memory(parts, what, {
        "n_states": "use fewer states or symbols (n_states, observed)",
        "X": "pass fewer patterns per call (split X)",
        "n_samples": "lower n_samples"})


def check_possible(loglik: np.ndarray, use: str | None = None,
                   index: np.ndarray | None = None) -> None:
    """The zero-probability rule (:func:`hiddenstate.learn.check_possible`) for patterns:
    a :class:`ZeroProbabilityError` naming the patterns whose log-evidence is -inf: while
    learning (``use`` None), or for a method whose ``use`` (a posterior, a state) does not
    exist for them. ``index``: the pattern number of each entry (default: its
    position)."""
    if use is None:
        learn_check_possible(
            loglik, "pattern", "an observed symbol or a likelihood that no state allows",
            "check the data, the likelihoods or the zeros of the hand-set weights_ and "
            "priors_", index=index)
    else:
        learn_check_possible(
            loglik, "pattern", "an observed symbol or a likelihood that no state allows",
            "Check the data or the likelihoods, or the zeros of weights_ and priors_",
            use=use, index=index)


def check_consistent(ok: np.ndarray, k: int, use: str, argument: str = "n_samples") -> None:
    """An :class:`InvalidInputError` naming ``argument`` when some patterns (``ok`` False)
    got no sample consistent with their evidence among ``k`` (a DAG's optimistic upward
    pass proposes combinations its evidence rules out)."""
    bad = np.flatnonzero(~ok)
    if not len(bad):
        return
    if argument == "max_tries":
        raise InvalidInputError(
            f"max_tries: after {k} rounds, {len(bad)} of {len(ok)} patterns (first: "
            f"pattern {bad[0]}) still have no sample consistent with the evidence; raise "
            "max_tries or use correction='importance'")
    raise InvalidInputError(
        f"{argument}: none of the {k} downward sample(s) of {len(bad)} of {len(ok)} patterns "
        f"(first: pattern {bad[0]}) was consistent with the evidence (a DAG's upward pass is "
        f"optimistic, see docs/treenet.md), so they have no {use}; raise {argument} (e.g. "
        f"n_samples={max(10 * k, 100)})")


def check_step(s: Structure, weights: list, prior: dict, learning_rate: float,
               batch: int) -> None:
    """A :class:`NumericalError` naming ``learning_rate`` when a stochastic-EM step left a
    factor or a prior outside the float64 range (an infinite, NaN or all-zero row)."""
    tables = [(f"weights_[{s.edge_name(e)!r}]", w) for e, w in enumerate(weights)]
    tables += [(f"priors_[{s.names[r]!r}]", p[None]) for r, p in prior.items()]
    for name, w in tables:
        if not np.all(np.isfinite(w)) or np.any(w.max(axis=1) <= 0):
            raise NumericalError(
                f"learning_rate: the stochastic-EM step of batch {batch} (learning_rate="
                f"{learning_rate:g}) drove {name} out of the float64 range; lower "
                "learning_rate")


def check_stream(s: Structure, usage, n_batches) -> list:
    """Stochastic EM's stream state (``usage_`` by hidden variable, ``n_batches_``) as the
    learner uses it: a positive distribution per hidden variable, by variable index."""
    if isinstance(n_batches, bool) or not isinstance(n_batches, (int, np.integer)) \
            or n_batches < 0:
        raise InvalidInputError(
            f"n_batches_: expected an integer >= 0 (mini-batches seen), got {n_batches!r:.40}")
    want = {s.names[v]: v for v in s.hidden}
    if not isinstance(usage, dict) or set(usage) != set(want):
        raise InvalidInputError(
            "usage_: expected a dict {hidden variable: state-usage distribution} listing "
            "every hidden variable")
    out: list = [None] * s.n_vars
    for name, v in want.items():
        u = as_float_array(usage[name], f"usage_[{name!r}]")
        if u.shape != (s.sizes[v],):
            raise InvalidInputError(
                f"usage_[{name!r}]: expected shape ({s.sizes[v]},), got {u.shape}")
        if not np.all(np.isfinite(u)) or np.any(u <= 0) or abs(u.sum() - 1.0) > 1e-8:
            raise InvalidInputError(
                f"usage_[{name!r}]: expected positive entries summing to one")
        out[v] = u
    return out

"""Memory checks of the HMM: each operation is refused, before anything is allocated,
when its arrays would not fit in the available memory
(:class:`~hiddenstate.errors.InsufficientMemoryError`)."""

from __future__ import annotations

import numpy as np

from ... import inference
from ..._validation import check_memory as check_parts
from ...inference import Sequences
from ...learn.online import ONLINE_MODES
from .chain import runs_sparse, transitions_of

#: copies of the parameters a batch fit holds at its peak (measured; see check_fit_memory)
PARAM_COPIES = 1


def check_fit_memory(model, X, seqs: Sequences, family, started: bool = False) -> None:
    """Refuse a fit of ``model`` that would not fit in memory (checked before anything is
    allocated): the E-step of the mode (forward-backward, Viterbi or k-best paths; the streaming
    learners: forward-backward of the longest sequence, or online EM's own state with
    its ``K**3`` transition statistics) plus ``PARAM_COPIES`` copies of the
    parameters (initialisation, current and new values, M-step temporaries)."""
    K, W = model.n_states, family.parameter_columns
    by_symbol = family.table_by_symbol
    params = PARAM_COPIES * 8.0 * (K * K + K * W * (W if model.emission == "gaussian"
                                                     and model.covariance_type == "full"
                                                     else 1))
    fixed = {"n_states": 0.0 if started else params}  # a started stream holds them
    if model.learn == "online-em":
        n_mix = model.n_mix if model.emission == "gmm" else 1  # a vector per component
        by_symbol = by_symbol or family.alphabets is not None  # lazy per-symbol
        fixed["n_states"] += 0.0 if started else 8.0 * K**3 + (
            8.0 * W * K * K if by_symbol else 8.0 * K * K * n_mix * (1 + W + W * W))
        op, layout = "log_likelihood", seqs
    elif model.learn in ONLINE_MODES:
        op, layout = "forward_backward", Sequences.from_lengths(np.array([seqs.max_len]))
    else:
        op = {"vt": "viterbi", "kvt": "kbest"}.get(model.learn, "forward_backward")
        layout = seqs
        if op != "forward_backward":  # the path counts' posteriors
            fixed["X"] = 8.0 * K * (W if by_symbol else len(X))
    fixes = {"n_states": "online EM keeps K**3 transition statistics: use fewer states "
                         "or a per-sequence learner ('bwo', 'baldi-chauvin', 'bona')"} \
        if model.learn == "online-em" else None
    check_memory(model, op, X, layout, family, model.k_best, fixed,
                 f"fit (learn={model.learn!r}) on {len(X)} observations with {K} states",
                 fixes)


def check_memory(model, op: str, X, seqs: Sequences, family, k: int = 1,
                 fixed: dict | None = None, what: str | None = None,
                 fixes: dict | None = None) -> None:
    """Refuse (:class:`~hiddenstate.errors.InsufficientMemoryError`) inference ``op`` of
    ``model`` on ``X`` when it would not fit in the available memory: the allocations of
    the inference function (:func:`inference.memory_estimate`; ``"posteriors"``: forward-
    backward keeping every row's posteriors), the emission table and ``fixed`` (more
    shares by argument)."""
    K = model.n_states
    by_symbol = family.table_by_symbol
    rows = family.n_features if by_symbol else len(X)
    transitions = transitions_of(model)
    nnz = transitions.nnz if runs_sparse(transitions, K) else None
    if op == "posteriors":
        parts = inference.memory_estimate("forward_backward", K, seqs, rows, False,
                                          n_transitions=nnz)
    else:
        parts = inference.memory_estimate(op, K, seqs, rows, by_symbol, k, nnz)
    if by_symbol:
        parts["n_states"] += rows * K * 8.0
    else:  # the (N, K) table, and the temporaries that build it before inference runs
        table = rows * K * 8.0
        build = family.table_build_copies() * table
        parts["X"] += table + max(0.0, build - table - sum(parts.values()))
    for key, value in (fixed or {}).items():
        parts[key] = parts.get(key, 0.0) + value
    what = what or f"{op} of {len(X)} observations with {K} states"
    check_parts(parts, f"{type(model).__name__}: {what}", fixes)


def sample_bytes(model, n: int) -> float:
    """Bytes ``model.sample`` allocates for ``n`` observations: the path, its uniforms
    and the emission draws (categorical: an ``(n, W)`` comparison; Gaussian: the
    ``(n, D, D)`` Cholesky factors of the drawn states)."""
    D = model.n_features_
    D = len(D) * max(D) if isinstance(D, tuple) else D
    per = {"categorical": 9.0 * D + 24, "gaussian": 8.0 * (D * D + 3 * D) + 16,
           "poisson": 24.0 * D + 16, "gmm": 8.0 * (D * D + 3 * D + model.n_mix) + 24,
           "multinomial": 24.0 * D + 16,
           # mixed: at most a Gaussian's draws over every column
           "mixed": 8.0 * (D * D + 3 * D) + 24}[
        model.emission if isinstance(model.emission, str) else "mixed"]
    return n * per

"""Numba kernels: the hot path. Plain functions on arrays, no validation.

Emission probabilities reach every kernel in the same form: a table ``emis`` of shape
``(M, K)`` and an index ``idx`` of shape ``(N,)`` such that row ``emis[idx[t]]`` holds the
(scaled) emission probabilities of observation ``t``.  Categorical emissions pass the
transposed emission matrix and the symbols (no gather, no ``(N, K)`` table); dense families
pass their per-frame table and ``arange(N)``.

Sequences are described by ``bounds`` (``S + 1`` offsets into the concatenated data) and
are processed in fixed ``chunks`` (offsets into the sequence list), in parallel over chunks.
Chunk boundaries depend only on the data, so results are identical for any thread count.
"""

from .forward_backward import (
    chunk_bounds,
    forward_backward,
    forward_loglik,
    sample_posterior_paths,
    sample_states,
)
from .emissions import gaussian_diag_loglik
from .viterbi import viterbi

__all__ = [
    "chunk_bounds",
    "forward_backward",
    "forward_loglik",
    "gaussian_diag_loglik",
    "sample_posterior_paths",
    "sample_states",
    "viterbi",
]

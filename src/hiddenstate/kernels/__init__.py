"""Numba kernels: the hot path. Plain functions on arrays, no validation.

Emission probabilities reach every kernel in the same form: a table ``emis`` of shape
``(M, K)`` and an index ``idx`` of shape ``(N,)`` such that row ``emis[idx[t]]`` holds the
(scaled) emission probabilities of observation ``t``.  Categorical emissions pass the
transposed emission matrix and the symbols (no gather, no ``(N, K)`` table); dense families
pass their per-frame table and ``arange(N)``.

Work is described by a *lane plan* (built by :mod:`hiddenstate.inference`): plan entry ``l``
runs rows ``first[l] .. end[l] - 1`` of the concatenated data (one sequence, or one segment
of a long sequence with a warm-up, see ``forward_loglik`` and ``backward_pass``). Entries
are taken 8 at a time, as the 8 lanes of a block that run in lockstep with the lane index
innermost (:mod:`.simd`), so the recursions vectorise across sequences instead of waiting
on their own dependency chains. Blocks are grouped in fixed ``chunks`` that run in
parallel. Plans and chunks depend only on the sequence lengths, and every lane's numbers
are independent of its block-mates, so results are identical for any thread count.
"""

from .blocked import blocked_counts, blocked_loglik
from .chunks import chunk_bounds
from .compile_notice import install as _install_compile_notice
from .emissions import gaussian_diag_cancelling, gaussian_diag_loglik, gaussian_diag_mstep
from .forward_backward import (
    LANES,
    backward_pass,
    forward_backward,
    forward_loglik,
    sample_posterior_paths,
    sample_states,
)
from .kbest import kbest_paths, path_counts
from .sparse import sparse_forward_backward, sparse_log_likelihood, sparse_viterbi
from .tables import shift_rows
from .viterbi import viterbi_backtrack, viterbi_forward

_install_compile_notice()

__all__ = [
    "LANES",
    "backward_pass",
    "blocked_counts",
    "blocked_loglik",
    "chunk_bounds",
    "forward_backward",
    "forward_loglik",
    "gaussian_diag_cancelling",
    "gaussian_diag_loglik",
    "gaussian_diag_mstep",
    "kbest_paths",
    "path_counts",
    "sample_posterior_paths",
    "sample_states",
    "shift_rows",
    "sparse_forward_backward",
    "sparse_log_likelihood",
    "sparse_viterbi",
    "viterbi_backtrack",
    "viterbi_forward",
]

"""Chunks of work: how the parallel kernels split it, and how threads take their share.

A parallel kernel processes ``n_chunks`` chunks whose bounds depend only on the data
(:func:`chunk_bounds`); every thread that runs it (:func:`hiddenstate.threads.run`) loops
``c = claim(ticket)`` until ``c >= n_chunks``, so each chunk is processed exactly once, by
whichever thread gets to it first. A chunk owns its outputs (its rows, its accumulators), so
the result does not depend on the number of threads or on which thread took which chunk.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core.errors import TypingError
from numba.extending import intrinsic


@intrinsic
def claim(typingctx, ticket):
    """The next chunk: ``ticket[0]`` before an atomic ``ticket[0] += 1`` (an int64 array).

    Every thread sharing ``ticket`` gets a different number: 0, 1, 2, ...
    """
    if not (isinstance(ticket, types.Array) and ticket.dtype == types.int64):
        raise TypingError(f"claim: expected an int64 array, got {ticket}")

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        one = ir.Constant(ir.IntType(64), 1)
        return builder.atomic_rmw("add", ary.data, one, "monotonic")

    return types.int64(ticket), codegen


def chunk_bounds(work: np.ndarray, max_chunks: int = 32) -> np.ndarray:
    """Split items into at most ``max_chunks`` contiguous groups of similar total ``work``.

    Depends only on ``work``, never on the thread count, which keeps every reduction order
    (and so every result) the same for any number of threads.

    Parameters
    ----------
    work : ndarray of shape (n_items,)
        The work of each item.
    max_chunks : int, default=32
        The most groups.

    Returns
    -------
    ndarray of int64
        The bounds: group ``c`` is items ``bounds[c] .. bounds[c + 1] - 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.kernels import chunk_bounds
    >>> chunk_bounds(np.array([5, 1, 1, 1, 1, 1]), max_chunks=2)
    array([0, 1, 6])
    """
    n_items = len(work)
    n_chunks = min(n_items, max_chunks)
    if n_chunks <= 1:
        return np.array([0, n_items][:n_chunks + 1], dtype=np.int64)
    cum = np.cumsum(work)
    targets = cum[-1] * np.arange(1, n_chunks) / n_chunks
    cuts = np.searchsorted(cum, targets, side="left") + 1
    out = np.unique(np.concatenate(([0], np.minimum(cuts, n_items), [n_items])))
    return out.astype(np.int64)

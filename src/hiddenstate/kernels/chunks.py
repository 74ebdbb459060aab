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
from numba import njit, types
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
    return _chunk_bounds(np.ascontiguousarray(work, dtype=np.int64), int(max_chunks))


@njit(cache=True)
def _chunk_bounds(work, max_chunks):
    n_items = work.shape[0]
    n_chunks = min(n_items, max_chunks)
    if n_chunks <= 1:
        out = np.empty(n_chunks + 1, dtype=np.int64)
        out[0] = 0
        if n_chunks == 1:
            out[1] = n_items
        return out
    cum = np.cumsum(work).astype(np.float64)
    targets = cum[-1] * np.arange(1, n_chunks) / n_chunks
    cuts = np.searchsorted(cum, targets, side="left") + 1
    edges = np.empty(n_chunks + 1, dtype=np.int64)
    edges[0] = 0
    edges[n_chunks] = n_items
    for i in range(n_chunks - 1):
        edges[i + 1] = min(cuts[i], n_items)
    return np.unique(edges)


@njit(cache=True)
def lane_plan(bounds, segment, warmup, only, fill):
    """The entries of :class:`hiddenstate.inference.LanePlan` (see ``LanePlan.build``):
    ``(first, lo, end, init, seq, part, chunks)``; ``segment`` 0: whole sequences; an
    empty ``only``: every sequence; ``fill``: more segments instead of empty lanes."""
    S = bounds.shape[0] - 1
    n_parts = np.empty(S, dtype=np.int64)
    n = 0
    for s in range(S):
        length = bounds[s + 1] - bounds[s]
        k = 1 if segment == 0 else max(1, -(-length // segment))
        if only.shape[0] and not only[s]:
            k = 0
        n_parts[s] = k
        n += k
    if fill and segment > 0:
        # fill the last block: split the longest segmented sequences once more, one at a
        # time, rather than leave lanes empty (a block with an empty lane has no steady
        # part and runs every step lane by lane; shorter segments of a full block do not)
        while n % 8:
            best, best_len = -1, 0
            for s in range(S):
                if n_parts[s] > 1:
                    seg_len = (bounds[s + 1] - bounds[s]) // n_parts[s]
                    if seg_len > best_len:
                        best, best_len = s, seg_len
            if best < 0 or best_len <= 2 * warmup:
                break
            n_parts[best] += 1
            n += 1
    pad = -n % 8
    first = np.zeros(n + pad, dtype=np.int64)
    lo = np.zeros(n + pad, dtype=np.int64)
    end = np.zeros(n + pad, dtype=np.int64)
    init = np.zeros(n + pad, dtype=np.int64)
    seq = np.full(n + pad, -1, dtype=np.int64)
    part = np.zeros(n + pad, dtype=np.int64)
    f = np.empty(n, dtype=np.int64)
    lo_ = np.empty(n, dtype=np.int64)
    e = np.empty(n, dtype=np.int64)
    q = np.empty(n, dtype=np.int64)
    p = np.empty(n, dtype=np.int64)
    i = 0
    for s in range(S):
        start = bounds[s]
        length = bounds[s + 1] - start
        k = n_parts[s]
        for m in range(k):
            lo_[i] = start + m * length // k
            e[i] = start + (m + 1) * length // k
            f[i] = max(lo_[i] - warmup, start) if m > 0 else lo_[i]
            q[i] = s
            p[i] = m
            i += 1
    order = np.argsort(f - e, kind="mergesort")
    for j in range(n):
        o = order[j]
        first[j] = f[o]
        lo[j] = lo_[o]
        end[j] = e[o]
        init[j] = 1 if p[o] > 0 else 0
        seq[j] = q[o]
        part[j] = p[o]
    block_len = np.zeros((n + pad) // 8, dtype=np.int64)
    for j in range(n + pad):
        block_len[j // 8] = max(block_len[j // 8], end[j] - first[j])
    return first, lo, end, init, seq, part, _chunk_bounds(block_len, 32)

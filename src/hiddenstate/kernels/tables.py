"""Preparation of dense emission tables for the lockstep kernels."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def shift_rows(log_frame, occupied, out, shift):
    """``shift[t] = max_j log_frame[t, j]`` over the states with ``occupied[j]``, and
    ``out[t] = log_frame[t] - shift[t]`` for those states, ``-inf`` for the others.

    Scaling by the occupied states only keeps a state that the chain can never enter from
    setting the scale of a row: were it to beat every occupied state by more than ~745
    nats, their scaled probabilities would underflow to 0 and a possible observation would
    look impossible. A row that is ``-inf`` in every occupied state gets ``shift = -inf``
    and stays ``-inf`` in ``out``, so that ``exp(out)`` is a row of zeros rather than NaN.
    Serial: it streams memory at about 1 ns per entry, and a parallel region costs more than
    it saves whenever another process keeps the other cores busy.
    """
    N, K = log_frame.shape
    for t in range(N):
        m = -np.inf
        for j in range(K):
            if occupied[j]:
                m = max(m, log_frame[t, j])
        shift[t] = m
        if m == -np.inf:
            m = 0.0
        for j in range(K):
            out[t, j] = log_frame[t, j] - m if occupied[j] else -np.inf

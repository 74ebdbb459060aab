"""Preparation of dense emission tables for the lockstep kernels."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def shift_rows(log_frame, out, shift):
    """``shift[t] = max_j log_frame[t, j]`` and ``out[t] = log_frame[t] - shift[t]``.

    A row that is ``-inf`` everywhere (impossible in every state) gets ``shift = -inf`` and
    stays ``-inf`` in ``out``, so that ``exp(out)`` is a row of zeros rather than NaN.
    Serial: it streams memory at about 1 ns per entry, and a parallel region costs more than
    it saves whenever another process keeps the other cores busy.
    """
    N, K = log_frame.shape
    for t in range(N):
        m = log_frame[t, 0]
        for j in range(1, K):
            m = max(m, log_frame[t, j])
        shift[t] = m
        if m == -np.inf:
            m = 0.0
        for j in range(K):
            out[t, j] = log_frame[t, j] - m

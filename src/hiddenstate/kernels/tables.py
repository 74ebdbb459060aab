"""Preparation of dense emission tables for the lockstep kernels."""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True)
def shift_rows(log_frame, out, shift):
    """``shift[t] = max_j log_frame[t, j]`` and ``out[t] = log_frame[t] - shift[t]``.

    A row that is ``-inf`` everywhere (impossible in every state) gets ``shift = -inf`` and
    stays ``-inf`` in ``out``, so that ``exp(out)`` is a row of zeros rather than NaN.
    """
    N, K = log_frame.shape
    for t in prange(N):
        m = log_frame[t, 0]
        for j in range(1, K):
            m = max(m, log_frame[t, j])
        shift[t] = m
        if m == -np.inf:
            m = 0.0
        for j in range(K):
            out[t, j] = log_frame[t, j] - m

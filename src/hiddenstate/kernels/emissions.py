r"""Per-frame emission log-likelihood tables that are worth a compiled loop.

Diagonal Gaussian (Bishop PRML eq. 2.43 with a diagonal covariance):

.. math::
    \log \mathcal N(x \mid \mu_k, \mathrm{diag}\,\sigma_k^2)
      = -\tfrac12 \Big[ D \log 2\pi + \sum_d \log \sigma_{kd}^2
                        + \sum_d (x_d - \mu_{kd})^2 / \sigma_{kd}^2 \Big],

evaluated directly on the differences (no expansion of the square, so no cancellation).
"""

from __future__ import annotations

from numba import njit, prange


@njit(parallel=True, cache=True)
def gaussian_diag_loglik(X, means, inv_var, log_norm, out):
    """``out[t, k] = log_norm[k] - 0.5 * sum_d (X[t,d] - means[k,d])**2 * inv_var[k,d]``."""
    N, D = X.shape
    K = means.shape[0]
    for t in prange(N):
        for k in range(K):
            acc = 0.0
            for d in range(D):
                diff = X[t, d] - means[k, d]
                acc += diff * diff * inv_var[k, d]
            out[t, k] = log_norm[k] - 0.5 * acc

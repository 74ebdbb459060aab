r"""Forecasts of a :class:`~.estimator.RegressionHMM`: the predictive distribution of the
next ``h`` observations and states of each sequence, from its filtered state.

Given :math:`\alpha_T = p(z_T \mid y_{\le T})`, the state at step ``T + j`` has
:math:`p(z_{T+j}) = \alpha_T A_{T+1}\cdots A_{T+j}` (the matrices of the future inputs for
input-driven transitions). The observation's predictive distribution is a mixture:

- *linear regression* (no lags): :math:`\sum_k p(z_{T+j} = k)\,N(W_k\phi_{T+j}, \Sigma_k)`,
  whose mean and covariance are exact mixture moments;
- *autoregressive* (``n_lags = p``): a mixture over the :math:`K^j` state paths of Gaussians
  (the model is linear given the path). Its mean and covariance are computed exactly by
  carrying, per state, the first and second moments of the lag vector
  :math:`s_t = (y_t, \dots, y_{t-p+1})` restricted to that state,
  :math:`m_k = E[s_t\,1\{z_t = k\}]` and :math:`M_k = E[s_ts_t^\top 1\{z_t = k\}]`: with
  :math:`y = B_k s + c_k + \varepsilon` in state ``k`` (:math:`B_k` the lag blocks of
  :math:`W_k`, :math:`c_k` the input and intercept part) and
  :math:`\bar m_k = \sum_i A_{ik} m_i`, :math:`\bar M_k = \sum_i A_{ik} M_i`,
  :math:`\bar p_k = \sum_i A_{ik} p_i`,

  .. math::
      E[y\,1_k] = B_k\bar m_k + \bar p_k c_k, \quad
      E[yy^\top 1_k] = B_k\bar M_kB_k^\top + B_k\bar m_kc_k^\top + c_k\bar m_k^\top B_k^\top
      + \bar p_k(c_kc_k^\top + \Sigma_k),

  (the next state is independent of the lags given the current state), and the lag vector
  shifts by one observation. This is the marginal of each step; the steps are correlated,
  which the sampling form (:func:`sample`) keeps;
- *logistic*: :math:`P(y_{T+j} = c) = \sum_k p(z_{T+j} = k)\,\mathrm{softmax}(W_k\phi)_c`.

``tests/test_regression_forecast.py`` checks every number against enumeration of the state
paths.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Forecast:
    """The predictive distribution of the next ``steps`` observations of each sequence.

    Parameters
    ----------
    state_proba : ndarray of shape (n_sequences, steps, n_states)
        :math:`p(z_{T+j} \\mid y_{\\le T})`.
    mean : ndarray of shape (n_sequences, steps, n_features) or None
        The predictive mean (``emission="linear"``).
    covariance : ndarray of shape (n_sequences, steps, n_features, n_features) or None
        The predictive covariance of each step (``emission="linear"``).
    proba : ndarray of shape (n_sequences, steps, n_categories) or None
        The predictive category probabilities (``emission="logistic"``).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.models.regression import Forecast
    >>> fc = Forecast(np.full((1, 2, 2), 0.5), np.zeros((1, 2, 1)), np.ones((1, 2, 1, 1)))
    >>> fc.std()[0, :, 0]
    array([1., 1.])
    """

    state_proba: np.ndarray
    mean: np.ndarray | None = None
    covariance: np.ndarray | None = None
    proba: np.ndarray | None = None

    def std(self) -> np.ndarray:
        """Return the predictive standard deviation of each feature.

        Returns
        -------
        ndarray of shape (n_sequences, steps, n_features)
            The square roots of the covariances' diagonals.

        Raises
        ------
        AttributeError
            For a categorical forecast (no covariance).
        """
        if self.covariance is None:
            raise AttributeError("std: a categorical forecast has probabilities, no variance")
        return np.sqrt(np.diagonal(self.covariance, axis1=2, axis2=3))


def state_path(alpha: np.ndarray, transmats: np.ndarray) -> np.ndarray:
    """``(S, steps, K)`` state marginals from the filtered states ``alpha`` (S, K) through
    the future matrices ``transmats`` (S, steps, K, K)."""
    S, steps = transmats.shape[:2]
    out = np.empty((S, steps, alpha.shape[1]))
    p = alpha
    for j in range(steps):
        p = np.einsum("si,sik->sk", p, transmats[:, j])
        out[:, j] = p
    return out


def linear_moments(alpha, transmats, W, covars, lags, U_future, n_inputs, n_lags,
                   fit_intercept):
    """``(state_proba, mean, covariance)`` of a linear-regression / AR forecast (module
    docstring): ``alpha`` (S, K), ``transmats`` (S, h, K, K), ``W`` (K, D, P),
    ``covars`` (K, D, D), ``lags`` (S, p D) the last observations most recent first,
    ``U_future`` (S, h, M)."""
    S, h = transmats.shape[:2]
    K, D, _ = W.shape
    M, L = n_inputs, n_lags * D
    B = W[:, :, M:M + L]                                 # (K, D, L)
    Wu = W[:, :, :M]
    b = W[:, :, -1] if fit_intercept else np.zeros((K, D))
    state = state_path(alpha, transmats)
    m = alpha[:, :, None] * lags[:, None, :]             # (S, K, L)
    MM = alpha[:, :, None, None] * np.einsum("sl,sm->slm", lags, lags)[:, None]
    mean = np.empty((S, h, D))
    cov = np.empty((S, h, D, D))
    for j in range(h):
        A = transmats[:, j]
        p = state[:, j]
        mb = np.einsum("sik,sil->skl", A, m)
        Mb = np.einsum("sik,silm->sklm", A, MM)
        c = np.einsum("kdm,sm->skd", Wu, U_future[:, j]) + b[None]     # (S, K, D)
        Ey = np.einsum("kdl,skl->skd", B, mb) + p[:, :, None] * c
        BM = np.einsum("kdl,sklm->skdm", B, Mb)                          # (S, K, D, L)
        Bm = np.einsum("kdl,skl->skd", B, mb)
        Eyy = (np.einsum("skdm,kem->skde", BM, B)
               + np.einsum("skd,ske->skde", Bm, c) + np.einsum("skd,ske->skde", c, Bm)
               + p[:, :, None, None] * (np.einsum("skd,ske->skde", c, c) + covars[None]))
        Eys = BM + np.einsum("skd,skl->skdl", c, mb)                     # (S, K, D, L)
        mu = Ey.sum(axis=1)
        mean[:, j] = mu
        cv = Eyy.sum(axis=1) - np.einsum("sd,se->sde", mu, mu)
        cov[:, j] = 0.5 * (cv + np.swapaxes(cv, 1, 2))
        if L:   # shift the lag vector: s' = (y, s[:-D])
            keep = L - D
            m = np.concatenate([Ey, mb[:, :, :keep]], axis=2)
            top = np.concatenate([Eyy, Eys[:, :, :, :keep]], axis=3)
            bottom = np.concatenate([np.swapaxes(Eys[:, :, :, :keep], 2, 3),
                                     Mb[:, :, :keep, :keep]], axis=3)
            MM = np.concatenate([top, bottom], axis=2)
    return state, mean, cov


def logistic_proba(state: np.ndarray, log_proba_of) -> np.ndarray:
    """``(S, h, C)`` predictive category probabilities from the state marginals ``state``
    (S, h, K) and ``log_proba_of(j)``, the ``(S, K, C)`` log-probabilities of step ``j``."""
    out = np.empty((*state.shape[:2], 0))
    steps = []
    for j in range(state.shape[1]):
        steps.append(np.einsum("sk,skc->sc", state[:, j], np.exp(log_proba_of(j))))
    if steps:
        out = np.stack(steps, axis=1)
    return out

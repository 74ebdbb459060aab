r"""The blocked forward algorithm in PyTorch, with the posterior marginals as its gradient.

Each token :math:`x_t` may only be emitted by its ``k`` states :math:`C_{x_t}` (a row of
``states``), so the forward recursion (Chiu & Rush, eq. 4)

.. math::

    \alpha_t(j) = p(x_t \mid z_t = s_{t,j}) \sum_{i} \alpha_{t-1}(i)\,
                  p(z_t = s_{t,j} \mid z_{t-1} = s_{t-1,i})

runs over ``k`` states per step: the ``k x k`` block of the transition matrix between the
states of consecutive tokens is gathered per step and the scan is a batched ``bmm``. The
recursion is *scaled* (each :math:`\alpha_t` is renormalised to sum to one and the log of the
normaliser accumulated), the gathered block is shifted by its maximum before ``exp`` and
the emissions of a step by theirs, so neither long streams nor very unlikely transitions
underflow; everything runs in the dtype of the inputs (float64 in the tests).

A step whose ``reset`` flag is set starts a new sentence: :math:`z_t` is drawn from the start
distribution instead of from the transition out of :math:`z_{t-1}` (the previous token was
``<eos>``, or the stream begins).

Backward. The gradient of :math:`\log p(x)` with respect to the log potentials is the first
moment of the posterior (appendix A of Chiu & Rush): with upstream gradient ``g`` per
stream, ``d/d log_trans[a, b]`` is ``g`` times the expected number of ``a -> b``
transitions, ``d/d log_start[a]`` the expected number of sentence starts in ``a`` and
``d/d log_emit[t, j]`` the posterior :math:`\gamma_t(j)`. :class:`BlockedForward` computes
them by the scaled backward recursion (edge marginals
:math:`\xi_t(i,j) = \alpha_{t-1}(i) P_t(i,j) w_t(j) \beta_t(j) / c_t`), re-gathering each
block rather than storing them, so memory is ``O(B T k)`` plus one ``B x k x k`` block; the
same gradients are the expected counts that EM needs (:func:`expected_counts`).
"""

from __future__ import annotations

import torch

__all__ = ["BlockedForward", "blocked_log_likelihood", "expected_counts"]


def _block(log_start, log_trans, states, prev_states, reset_t):
    """Log potentials ``(B, k_prev, k)`` of one step: the transition block between the
    previous token's states and this token's, or the start row on reset."""
    K = log_trans.shape[0]
    idx = prev_states[:, :, None] * K + states[:, None, :]
    blk = log_trans.reshape(-1)[idx]
    start = log_start[states][:, None, :].expand_as(blk)
    return torch.where(reset_t[:, None, None], start, blk)


class BlockedForward(torch.autograd.Function):
    """``log p(x)`` per stream and the final filtered distribution (see the module docs).

    Inputs: ``log_start (K,)``, ``log_trans (K, K)``, ``log_emit (B, T, k)`` (the log
    emission probability of each token from each of its states), ``states (B, T, k)``
    (int64 state ids), ``prev_states (B, k)`` and ``prev_alpha (B, k)`` (the filtered
    distribution over the previous token's states, used where ``reset[:, 0]`` is False),
    ``reset (B, T)`` bool, ``valid (B, T)`` bool (False only on trailing padding).
    Outputs ``(loglik (B,), alpha (B, k))``; ``alpha`` carries no gradient.
    """

    @staticmethod
    def forward(ctx, log_start, log_trans, log_emit, states, prev_states, prev_alpha, reset,
                valid):
        B, T, k = log_emit.shape
        alphas = log_emit.new_empty(B, T + 1, k)
        alphas[:, 0] = prev_alpha
        cs = log_emit.new_ones(B, T)
        loglik = log_emit.new_zeros(B)
        alpha = prev_alpha
        prev = prev_states
        for t in range(T):
            blk = _block(log_start, log_trans, states[:, t], prev, reset[:, t])
            m = blk.amax(dim=(1, 2), keepdim=True)
            P = torch.exp(blk - m)
            e = log_emit[:, t]
            me = e.amax(dim=1, keepdim=True)
            v = torch.bmm(alpha[:, None, :], P)[:, 0] * torch.exp(e - me)
            c = v.sum(dim=1)
            ok = valid[:, t]
            c = torch.where(ok, c, torch.ones_like(c))
            alpha = torch.where(ok[:, None], v / c[:, None], alpha)
            prev = torch.where(ok[:, None], states[:, t], prev)
            loglik = loglik + torch.where(ok, torch.log(c) + m[:, 0, 0] + me[:, 0],
                                          torch.zeros_like(c))
            alphas[:, t + 1] = alpha
            cs[:, t] = c
        ctx.save_for_backward(log_start, log_trans, states, prev_states, reset, valid,
                              alphas, cs, log_emit)
        ctx.mark_non_differentiable(alpha)
        return loglik, alpha

    @staticmethod
    def backward(ctx, g, _g_alpha):
        (log_start, log_trans, states, prev_states, reset, valid, alphas, cs,
         log_emit) = ctx.saved_tensors
        B, T, k = log_emit.shape
        K = log_trans.shape[0]
        g_trans = torch.zeros(K * K, dtype=log_trans.dtype, device=log_trans.device)
        g_start = torch.zeros_like(log_start)
        g_emit = torch.zeros_like(log_emit)
        beta = log_emit.new_ones(B, k)
        for t in range(T - 1, -1, -1):
            ok = valid[:, t]
            # padding only trails, so the token before a valid step t > 0 is step t - 1
            prev = prev_states if t == 0 else states[:, t - 1]
            blk = _block(log_start, log_trans, states[:, t], prev, reset[:, t])
            P = torch.exp(blk - blk.amax(dim=(1, 2), keepdim=True))
            e = log_emit[:, t]
            w = torch.exp(e - e.amax(dim=1, keepdim=True))
            wb = w * beta / cs[:, t, None]  # (B, k)
            a_prev = alphas[:, t]
            xi = a_prev[:, :, None] * P * wb[:, None, :]  # (B, k, k), sums to 1
            gamma = alphas[:, t + 1] * beta
            gb = torch.where(ok, g, torch.zeros_like(g))
            g_emit[:, t] = gamma * gb[:, None]
            xi = xi * gb[:, None, None]
            rs = reset[:, t]
            nr = ~rs
            if bool(nr.any()):
                idx = prev[nr][:, :, None] * K + states[nr, t][:, None, :]
                g_trans.index_add_(0, idx.reshape(-1), xi[nr].reshape(-1))
            if bool(rs.any()):
                g_start.index_add_(0, states[rs, t].reshape(-1), xi[rs].sum(dim=1).reshape(-1))
            new_beta = torch.bmm(P, wb[:, :, None])[:, :, 0]
            # padding: beta restarts at one before the last valid step
            beta = torch.where(ok[:, None], new_beta, torch.ones_like(beta))
        return g_start, g_trans.reshape(K, K), g_emit, None, None, None, None, None


def blocked_log_likelihood(log_start, log_trans, log_emit, states, prev_states=None,
                           prev_alpha=None, reset=None, valid=None):
    r"""Compute the differentiable log-likelihood of token streams by the blocked forward algorithm.

    :class:`~hiddenstate.lm.forward.BlockedForward` with defaults: no previous token (every
    stream starts with a sentence), every step valid. Its gradient is the posterior
    (:func:`expected_counts`).

    Parameters
    ----------
    log_start : torch.Tensor of shape (K,)
        The log start distribution.
    log_trans : torch.Tensor of shape (K, K)
        The log transition matrix.
    log_emit : torch.Tensor of shape (B, T, k)
        The log emission probability of each token from each of its states.
    states : torch.Tensor of int64 of shape (B, T, k)
        The state ids of each token.
    prev_states : torch.Tensor of shape (B, k) or None, default=None
        The previous token's states (None: every stream starts a sentence).
    prev_alpha : torch.Tensor of shape (B, k) or None, default=None
        The filtered distribution over ``prev_states``.
    reset : torch.Tensor of bool of shape (B, T) or None, default=None
        The steps that start a sentence (None: the first one only).
    valid : torch.Tensor of bool of shape (B, T) or None, default=None
        False on trailing padding (None: every step valid).

    Returns
    -------
    loglik : torch.Tensor of shape (B,)
        :math:`\log p(x)` of each stream.
    alpha : torch.Tensor of shape (B, k)
        The final filtered distribution (no gradient).

    Examples
    --------
    >>> import torch
    >>> from hiddenstate.lm import blocked_log_likelihood
    >>> log_start = torch.tensor([0.5, 0.5], dtype=torch.float64).log()
    >>> log_trans = torch.tensor([[0.9, 0.1], [0.2, 0.8]], dtype=torch.float64).log()
    >>> emit = torch.tensor([[0.7, 0.1], [0.7, 0.1], [0.1, 0.6]], dtype=torch.float64)
    >>> log_emit = emit.log()[None]          # one stream of 3 tokens, k = 2 states each
    >>> states = torch.tensor([[[0, 1]] * 3])  # every token may come from states 0 and 1
    >>> loglik, alpha = blocked_log_likelihood(log_start, log_trans, log_emit, states)
    >>> loglik
    tensor([-3.2735], dtype=torch.float64)
    """
    B, T, k = log_emit.shape
    dev = log_emit.device
    if prev_states is None:
        prev_states = states[:, 0]
        prev_alpha = log_emit.new_full((B, k), 1.0 / k)
        if reset is None:
            reset = torch.zeros(B, T, dtype=torch.bool, device=dev)
        reset = reset.clone()
        reset[:, 0] = True
    if reset is None:
        reset = torch.zeros(B, T, dtype=torch.bool, device=dev)
    if valid is None:
        valid = torch.ones(B, T, dtype=torch.bool, device=dev)
    return BlockedForward.apply(log_start, log_trans, log_emit, states, prev_states,
                                prev_alpha, reset, valid)


def expected_counts(log_start, log_trans, log_emit, states, prev_states=None, prev_alpha=None,
                    reset=None, valid=None):
    r"""Compute the EM statistics of a batch, as the gradient of the summed log-likelihood.

    Parameters
    ----------
    log_start : torch.Tensor of shape (K,)
        The log start distribution.
    log_trans : torch.Tensor of shape (K, K)
        The log transition matrix.
    log_emit : torch.Tensor of shape (B, T, k)
        The log emission probability of each token from each of its states.
    states : torch.Tensor of int64 of shape (B, T, k)
        The state ids of each token.
    prev_states : torch.Tensor of shape (B, k) or None, default=None
        As :func:`blocked_log_likelihood`.
    prev_alpha : torch.Tensor of shape (B, k) or None, default=None
        As :func:`blocked_log_likelihood`.
    reset : torch.Tensor of bool of shape (B, T) or None, default=None
        As :func:`blocked_log_likelihood`.
    valid : torch.Tensor of bool of shape (B, T) or None, default=None
        As :func:`blocked_log_likelihood`.

    Returns
    -------
    loglik : torch.Tensor of shape (B,)
        :math:`\log p(x)` of each stream.
    alpha : torch.Tensor of shape (B, k)
        The final filtered distribution.
    start_counts : torch.Tensor of shape (K,)
        The expected number of sentence starts in each state.
    trans_counts : torch.Tensor of shape (K, K)
        The expected number of each transition.
    state_posteriors : torch.Tensor of shape (B, T, k)
        The posterior of each token's states.

    Examples
    --------
    >>> import torch
    >>> from hiddenstate.lm import expected_counts
    >>> log_start = torch.tensor([0.5, 0.5], dtype=torch.float64).log()
    >>> log_trans = torch.tensor([[0.9, 0.1], [0.2, 0.8]], dtype=torch.float64).log()
    >>> emit = torch.tensor([[0.7, 0.1], [0.7, 0.1], [0.1, 0.6]], dtype=torch.float64)
    >>> log_emit = emit.log()[None]          # one stream of 3 tokens, k = 2 states each
    >>> states = torch.tensor([[[0, 1]] * 3])  # every token may come from states 0 and 1
    >>> loglik, alpha, start, trans, post = expected_counts(log_start, log_trans, log_emit,
    ...                                                     states)
    >>> float(trans.sum()), post.sum(dim=2)   # 2 transitions; each token's posterior sums to 1
    (2.0, tensor([[1., 1., 1.]], dtype=torch.float64))
    """
    ls = log_start.detach().requires_grad_(True)
    lt = log_trans.detach().requires_grad_(True)
    le = log_emit.detach().requires_grad_(True)
    with torch.enable_grad():
        loglik, alpha = blocked_log_likelihood(ls, lt, le, states, prev_states, prev_alpha,
                                               reset, valid)
        gs, gt, ge = torch.autograd.grad(loglik.sum(), (ls, lt, le))
    return loglik.detach(), alpha, gs, gt, ge

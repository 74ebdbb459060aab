r"""The blocked recursion when the states are a partition (Brown or dense constraints).

With a partition, the ``k`` states of token :math:`x_t` are the contiguous block of its
cluster :math:`c_t` (``c_t k .. c_t k + k - 1`` in the kept-state numbering of
:class:`~.constraints.DroppedStates`), so the ``k x k`` transition block of a step is the
block ``(c_{t-1}, c_t)`` of the ``K' x K'`` matrix viewed as ``(C, k, C, k)``. This module is
the specialised fast path of :class:`~.forward.BlockedForward` (the general recursion for any
constraint set, which it is tested against): the same scaled forward recursion (Chiu & Rush,
eq. 4) and the same backward pass (the posterior marginals are the gradient, their
appendix A), arranged so that a window costs a few tensor operations per step instead of
a few dozen:

- every block of the window is gathered at once, time-major ``(T, B, k, k)``, shifted by
  its maximum and exponentiated (``P``), with the emissions likewise (``W``); a padding
  step gets ``P = I`` and ``W = 1``, so the scan needs no masking;
- the forward scan is a ``bmm``, a product, a sum and a division per step; the backward
  scan a product and a ``bmm`` per step;
- the edge marginals :math:`\xi_t(i,j) = \alpha_{t-1}(i) P_t(i,j) w_t(j) \beta_t(j) / c_t`
  of all steps are one vectorised product, and their sum onto the transition logits is one
  ``index_add_`` of whole ``k x k`` blocks into the ``(C C, k, k)`` block layout (keyed by
  the cluster pair), not a scatter of single entries; steps that start a sentence add to
  the start logits instead (no host synchronisation: their blocks go to a spare slot).

:func:`stream_counts` uses the same pieces for the exact E-step on any device: a forward
pass over all windows of the streams keeping only the scaled forward vectors, then a
backward pass from the last window to the first that carries :math:`\beta` across the
window boundaries, so the expected counts are exact over whole sentences (what the numba
kernels of :mod:`.exact` compute on CPU), with ``O(N k)`` memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["PartitionForward", "partition_log_likelihood", "stream_counts"]


@dataclass
class Potentials:
    """Time-major potentials of one window: ``P (T, B, k, k)`` the exponentiated blocks
    (identity on padding), ``W (T, B, k)`` the exponentiated emissions (one on padding),
    ``shift (T, B)`` the log of what was divided out (zero on padding), and the block ids
    ``(T, B)``: ``c_prev * C + c`` or ``C * C`` where the step starts a sentence."""

    P: torch.Tensor
    W: torch.Tensor
    shift: torch.Tensor
    block: torch.Tensor
    cluster: torch.Tensor
    reset: torch.Tensor
    valid: torch.Tensor


def potentials(log_start, log_trans, log_emit, clusters, prev_cluster, reset, valid
               ) -> Potentials:
    """The :class:`Potentials` of a window; arguments as :class:`PartitionForward`."""
    B, T, k = log_emit.shape
    C = log_trans.shape[0] // k
    cur = clusters.T
    prev = torch.cat([prev_cluster[None, :], cur[:-1]], dim=0)
    rs, ok = reset.T, valid.T
    blk = log_trans.view(C, k, C, k)[prev, :, cur, :]  # (T, B, k, k)
    start = log_start.view(C, k)[cur]  # (T, B, k)
    blk = torch.where(rs[:, :, None, None], start[:, :, None, :], blk)
    m = blk.amax(dim=(2, 3))
    P = torch.exp(blk - m[:, :, None, None])
    eye = torch.eye(k, dtype=P.dtype, device=P.device)
    P = torch.where(ok[:, :, None, None], P, eye)
    e = log_emit.transpose(0, 1)
    me = e.amax(dim=2)
    W = torch.where(ok[:, :, None], torch.exp(e - me[:, :, None]), torch.ones_like(e))
    shift = torch.where(ok, m + me, torch.zeros_like(m))
    block = torch.where(rs, torch.full_like(cur, C * C), prev * C + cur)
    return Potentials(P, W, shift, block, cur, rs, ok)


def scan_forward(pt: Potentials, prev_alpha: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(alphas (T + 1, B, k), c (T, B))``: the scaled forward vectors (``alphas[0]`` is
    ``prev_alpha``) and the normalisers; ``c`` is one on padding."""
    T, B, k = pt.W.shape
    alphas = pt.W.new_empty(T + 1, B, k)
    alphas[0] = prev_alpha
    c = pt.W.new_empty(T, B, 1)
    for t in range(T):
        v = torch.bmm(alphas[t].unsqueeze(1), pt.P[t]).squeeze(1).mul_(pt.W[t])
        torch.sum(v, dim=1, keepdim=True, out=c[t])
        torch.div(v, c[t], out=alphas[t + 1])
    return alphas, c[:, :, 0]


def scan_backward(pt: Potentials, c: torch.Tensor, beta_end: torch.Tensor | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""``(betas (T, B, k), wb (T, B, k), beta_start (B, k))``: the scaled backward vectors
    :math:`\beta_t`, :math:`w_t \beta_t / c_t` and the :math:`\beta` of the step before the
    window (what the previous window continues from). ``beta_end``: the :math:`\beta` of
    the window's last step (ones: the stream ends there)."""
    T, B, k = pt.W.shape
    Wc = pt.W / c[:, :, None]
    betas = pt.W.new_empty(T, B, k)
    betas[T - 1] = 1.0 if beta_end is None else beta_end
    wb = torch.empty_like(betas)
    beta_start = torch.empty_like(betas[0])
    for t in range(T - 1, -1, -1):
        torch.mul(Wc[t], betas[t], out=wb[t])
        out = betas[t - 1] if t > 0 else beta_start
        torch.bmm(pt.P[t], wb[t].unsqueeze(2), out=out.unsqueeze(2))
    return betas, wb, beta_start


def marginals(pt: Potentials, alphas, betas, wb, weight, n_clusters: int, dtype=None
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""``(start (K',), trans_blocks (C C, k, k), emit (B, T, k))``: the posterior counts of
    the window, each step weighted by ``weight (B,)`` (the upstream gradient; padding counts
    nothing), in ``dtype`` (default: the potentials'). ``trans_blocks[c * C + d]`` is the
    block of transitions from cluster ``c`` to cluster ``d``."""
    T, B, k = pt.W.shape
    dtype = dtype or pt.W.dtype
    C = n_clusters
    gb = torch.where(pt.valid, weight[None, :].to(dtype), torch.zeros((), dtype=dtype,
                                                                       device=weight.device))
    emit = (alphas[1:].to(dtype) * betas.to(dtype) * gb[:, :, None]).transpose(0, 1)
    xi = (alphas[:-1, :, :, None].to(dtype) * pt.P.to(dtype)) \
        * (wb.to(dtype) * gb[:, :, None])[:, :, None, :]
    blocks = torch.zeros(C * C + 1, k, k, dtype=dtype, device=xi.device)
    blocks.index_add_(0, pt.block.reshape(-1), xi.view(-1, k, k))
    firsts = xi.sum(dim=2) * pt.reset[:, :, None]  # the start counts of sentence starts
    start = torch.zeros(C, k, dtype=dtype, device=xi.device)
    start.index_add_(0, pt.cluster.reshape(-1), firsts.view(-1, k))
    return start.view(-1), blocks[:C * C], emit


def blocks_to_matrix(blocks: torch.Tensor, n_clusters: int) -> torch.Tensor:
    """The ``K' x K'`` matrix of the ``(C C, k, k)`` block layout."""
    C, k = n_clusters, blocks.shape[-1]
    return blocks.view(C, C, k, k).permute(0, 2, 1, 3).reshape(C * k, C * k)


class PartitionForward(torch.autograd.Function):
    """``log p(x)`` per stream and the final filtered distribution, for a partition.

    Inputs: ``log_start (K',)``, ``log_trans (K', K')``, ``log_emit (B, T, k)`` (each
    token's log emission probability from each of its ``k`` states), ``clusters (B, T)``
    (int64 cluster of each token), ``prev_cluster (B,)`` and ``prev_alpha (B, k)`` (the
    previous token's cluster and filtered distribution, used where ``reset[:, 0]`` is
    False), ``reset (B, T)`` and ``valid (B, T)`` bool as in
    :class:`~.forward.BlockedForward`. Outputs ``(loglik (B,), alpha (B, k))``; ``alpha``
    carries no gradient.
    """

    @staticmethod
    def forward(ctx, log_start, log_trans, log_emit, clusters, prev_cluster, prev_alpha,
                reset, valid):
        pt = potentials(log_start, log_trans, log_emit, clusters, prev_cluster, reset, valid)
        alphas, c = scan_forward(pt, prev_alpha)
        loglik = (torch.log(c) + pt.shift).sum(dim=0)
        ctx.pt = pt
        ctx.save_for_backward(alphas, c)
        ctx.n_clusters = log_trans.shape[0] // log_emit.shape[2]
        alpha = alphas[-1].clone()
        ctx.mark_non_differentiable(alpha)
        return loglik, alpha

    @staticmethod
    def backward(ctx, g, _g_alpha):
        alphas, c = ctx.saved_tensors
        pt = ctx.pt
        betas, wb, _ = scan_backward(pt, c)
        g_start, blocks, g_emit = marginals(pt, alphas, betas, wb, g, ctx.n_clusters)
        return (g_start, blocks_to_matrix(blocks, ctx.n_clusters), g_emit, None, None, None,
                None, None)


def partition_log_likelihood(log_start, log_trans, log_emit, clusters, prev_cluster,
                             prev_alpha, reset, valid):
    """Differentiable ``(loglik (B,), alpha (B, k))`` of :class:`PartitionForward`."""
    return PartitionForward.apply(log_start, log_trans, log_emit, clusters, prev_cluster,
                                  prev_alpha, reset, valid)


def step_log_normalisers(log_start, log_trans, log_emit, clusters, prev_cluster, prev_alpha,
                         reset, valid) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log c_t + shift_t (B, T), alpha (B, k))`` without gradient: each step's share of
    ``log p(x)`` (zero on padding), so a sentence's log-likelihood is the sum over its
    steps; ``-inf`` at a token of probability zero, NaN after it in its sentence)."""
    pt = potentials(log_start, log_trans, log_emit, clusters, prev_cluster, reset, valid)
    alphas, c = scan_forward(pt, prev_alpha)
    lz = torch.log(c) + pt.shift
    lz = torch.where(torch.isneginf(pt.shift), pt.shift, lz)  # every potential is zero
    return lz.T, alphas[-1]


@torch.no_grad()
def stream_counts(log_start, log_trans, log_emit_table, word_cluster, tokens, valid,
                  eos_id: int, bptt: int, dtype=torch.float64, starts=None
                  ) -> tuple[float, torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""Exact expected counts of the streams ``tokens (B, L)`` (each starting a sentence;
    ``valid`` False only on trailing padding) under one model of ``K'`` states, read
    ``bptt`` tokens at a time: ``(log p, start (K',), trans_blocks (C C, k, k),
    emit (V, k))`` in ``dtype``. A sentence starts after every ``<eos>``, or where
    ``starts (B, L)`` is True when given.

    ``log_emit_table (V, k)``: word ``w``'s log emission probability from its ``k`` states;
    ``word_cluster (V,)``: the cluster of every word. Two passes (module docstring): the
    forward vectors and normalisers of every window are kept (``O(B L k)``), then the
    backward pass runs from the last window to the first carrying :math:`\beta`, so nothing
    is truncated at window boundaries.
    """
    B, L = tokens.shape
    V, k = log_emit_table.shape
    C = log_trans.shape[0] // k
    dev = log_trans.device
    x_all = torch.as_tensor(tokens, device=dev)
    v_all = torch.as_tensor(valid, device=dev)
    if starts is None:
        reset_all = torch.zeros(B, L, dtype=torch.bool, device=dev)
        reset_all[:, 1:] = x_all[:, :-1] == eos_id
    else:
        reset_all = torch.as_tensor(starts, device=dev).clone()
    reset_all[:, 0] = True
    clusters_all = word_cluster[x_all]
    windows = range(0, L, bptt)

    def window_potentials(t0):
        x = x_all[:, t0:t0 + bptt]
        prev = clusters_all[:, t0 - 1] if t0 > 0 else clusters_all[:, 0]
        le = log_emit_table.index_select(0, x.reshape(-1)).view(*x.shape, k)
        return potentials(log_start, log_trans, le, clusters_all[:, t0:t0 + bptt], prev,
                          reset_all[:, t0:t0 + bptt], v_all[:, t0:t0 + bptt])

    saved = []
    alpha = log_trans.new_full((B, k), 1.0 / k)
    loglik = torch.zeros((), dtype=torch.float64, device=dev)
    for t0 in windows:
        pt = window_potentials(t0)
        alphas, c = scan_forward(pt, alpha)
        loglik += (torch.log(c) + pt.shift).sum().to(torch.float64)
        alpha = alphas[-1]
        saved.append((alphas, c))
    start = torch.zeros(C * k, dtype=dtype, device=dev)
    blocks = torch.zeros(C * C, k, k, dtype=dtype, device=dev)
    emit = torch.zeros(V, k, dtype=dtype, device=dev)
    ones = torch.ones(B, dtype=dtype, device=dev)
    beta = None
    for t0, (alphas, c) in zip(reversed(windows), reversed(saved), strict=True):
        pt = window_potentials(t0)
        betas, wb, beta = scan_backward(pt, c, beta)
        s, b, e = marginals(pt, alphas, betas, wb, ones, C, dtype)
        start += s
        blocks += b
        x = x_all[:, t0:t0 + bptt]
        emit.index_add_(0, x.reshape(-1), e.reshape(-1, k))
    return float(loglik), start, blocks, emit

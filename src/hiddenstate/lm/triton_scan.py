r"""The partition recursion of :mod:`.scan` as two fused Triton kernels (one per direction).

One program per stream runs a whole window: per step it gathers the ``k x k`` block
``(c_{t-1}, c_t)`` of the transition log-probabilities (or the start row after ``<eos>``)
straight from the ``K' x K'`` matrix, shifts it by its maximum, and advances the scaled
forward vector (Chiu & Rush, eq. 4), keeping ``alpha_t``, ``c_t`` and the two shifts. The
backward kernel recomputes each block, runs the scaled backward recursion, writes the
emission posteriors and adds the edge marginals :math:`\xi_t` of every step straight into
the gradient of the transition (or start) log-probabilities with atomic adds: the gather,
the scan and the scatter of the gathered blocks are one launch per direction and window,
whatever ``T``. Same inputs, outputs and numerics as :class:`~.scan.PartitionForward`
(tested against it on a CPU, where the kernels run in Triton's interpreter: this module
sets ``TRITON_INTERPRET=1`` when torch sees no GPU and triton is not imported yet); atomic adds
make the summation order, and so the last bits of the gradient, vary between runs on a
GPU.

Needs the ``triton`` package (PyTorch's CUDA builds ship it; ``pip install
'hiddenstate[gpu]'``); :data:`AVAILABLE` says whether it imported. Blocks of up to
:data:`MAX_BLOCK` states per cluster (the kept states of the paper's 2^15-state model);
larger ones use the torch path.
"""

from __future__ import annotations

import os
import sys

import torch

if "triton" not in sys.modules and not torch.cuda.is_available():
    # no GPU: the kernels can only run in Triton's interpreter (the tests), which has to be
    # chosen before triton is imported
    os.environ.setdefault("TRITON_INTERPRET", "1")

try:  # optional: the torch path of .scan runs everywhere
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - exercised where triton is absent
    triton = None
    tl = None

__all__ = ["AVAILABLE", "MAX_BLOCK", "TritonPartitionForward", "triton_log_likelihood"]

#: whether the kernels can run here (``triton`` imported; without a GPU, interpreted)
AVAILABLE = triton is not None
#: the largest number of (kept) states per cluster the kernels take
MAX_BLOCK = 128


if AVAILABLE:
    @triton.jit
    def _forward_kernel(ls_ptr, lt_ptr, le_ptr, cl_ptr, pc_ptr, pa_ptr, rs_ptr, ok_ptr,
                        alphas_ptr, c_ptr, m_ptr, me_ptr, lz_ptr, T, KP, k,
                        BLOCK: tl.constexpr):
        b = tl.program_id(0)
        i = tl.arange(0, BLOCK)
        mi = i < k
        m2 = mi[:, None] & mi[None, :]
        alpha = tl.load(pa_ptr + b * k + i, mask=mi, other=0.0)
        tl.store(alphas_ptr + b * (T + 1) * k + i, alpha, mask=mi)
        cp = tl.load(pc_ptr + b)
        for t in range(T):
            s = b * T + t
            cc = tl.load(cl_ptr + s)
            reset = tl.load(rs_ptr + s) != 0
            ok = tl.load(ok_ptr + s) != 0
            cols = cc * k + i
            blk = tl.load(lt_ptr + (cp * k + i)[:, None] * KP + cols[None, :], mask=m2,
                          other=-float("inf"))
            start = tl.load(ls_ptr + cols, mask=mi, other=-float("inf"))
            blk = tl.where(reset, start[None, :] + tl.zeros_like(blk), blk)
            m = tl.max(tl.max(blk, axis=1), axis=0)
            P = tl.exp(blk - m)
            e = tl.load(le_ptr + s * k + i, mask=mi, other=-float("inf"))
            me = tl.max(e, axis=0)
            v = tl.sum(alpha[:, None] * P, axis=0) * tl.exp(e - me)
            c = tl.where(ok, tl.sum(v, axis=0), 1.0)
            alpha = tl.where(ok, v / c, alpha)
            cp = tl.where(ok, cc, cp)
            tl.store(alphas_ptr + (b * (T + 1) + t + 1) * k + i, alpha, mask=mi)
            tl.store(c_ptr + s, c)
            tl.store(m_ptr + s, m)
            tl.store(me_ptr + s, me)
            tl.store(lz_ptr + s, tl.where(ok, tl.log(c) + m + me, 0.0))

    @triton.jit
    def _backward_kernel(ls_ptr, lt_ptr, le_ptr, cl_ptr, pc_ptr, rs_ptr, ok_ptr, alphas_ptr,
                         c_ptr, m_ptr, me_ptr, g_ptr, beta_ptr, gls_ptr, glt_ptr, gle_ptr,
                         T, KP, k, BLOCK: tl.constexpr):
        b = tl.program_id(0)
        i = tl.arange(0, BLOCK)
        mi = i < k
        m2 = mi[:, None] & mi[None, :]
        beta = tl.load(beta_ptr + b * k + i, mask=mi, other=0.0)
        g = tl.load(g_ptr + b)
        for tt in range(T):
            t = T - 1 - tt
            s = b * T + t
            cc = tl.load(cl_ptr + s)
            cp = tl.where(t > 0, tl.load(cl_ptr + s - 1, mask=t > 0, other=0),
                          tl.load(pc_ptr + b))
            r8 = tl.load(rs_ptr + s)
            o8 = tl.load(ok_ptr + s)
            reset = r8 != 0
            ok = o8 != 0
            # where the step's marginals go, as index limits (k or 0): a mask that mixes a
            # block with a scalar flag is not taken by the interpreter's atomic add
            to_trans = k * (o8 * (1 - r8)).to(tl.int32)
            to_start = k * (o8 * r8).to(tl.int32)
            rows = cp * k + i
            cols = cc * k + i
            blk = tl.load(lt_ptr + rows[:, None] * KP + cols[None, :], mask=m2,
                          other=-float("inf"))
            start = tl.load(ls_ptr + cols, mask=mi, other=-float("inf"))
            blk = tl.where(reset, start[None, :] + tl.zeros_like(blk), blk)
            P = tl.exp(blk - tl.load(m_ptr + s))
            e = tl.load(le_ptr + s * k + i, mask=mi, other=-float("inf"))
            wb = tl.exp(e - tl.load(me_ptr + s)) * beta / tl.load(c_ptr + s)
            a_prev = tl.load(alphas_ptr + (b * (T + 1) + t) * k + i, mask=mi, other=0.0)
            a_cur = tl.load(alphas_ptr + (b * (T + 1) + t + 1) * k + i, mask=mi, other=0.0)
            gb = tl.where(ok, g, 0.0)
            tl.store(gle_ptr + s * k + i, a_cur * beta * gb, mask=mi)
            xi = a_prev[:, None] * P * wb[None, :] * gb
            tl.atomic_add(glt_ptr + rows[:, None] * KP + cols[None, :], xi,
                          mask=(i[:, None] < to_trans) & mi[None, :])
            tl.atomic_add(gls_ptr + cols, tl.sum(xi, axis=0), mask=i < to_start)
            beta = tl.where(ok, tl.sum(P * wb[None, :], axis=1), beta)
        tl.store(beta_ptr + b * k + i, beta, mask=mi)


    # without a GPU the kernels run only if Triton interprets them (triton imported after
    # TRITON_INTERPRET was set, above)
    AVAILABLE = torch.cuda.is_available() or type(_forward_kernel).__name__ == \
        "InterpretedFunction"


def _launch_args(k: int) -> tuple[int, int]:
    block = max(16, triton.next_power_of_2(k))
    return block, (2 if block <= 32 else 4 if block <= 64 else 8)


class TritonPartitionForward(torch.autograd.Function):
    """:class:`~.scan.PartitionForward` by the fused kernels (same arguments and outputs)."""

    @staticmethod
    def forward(ctx, log_start, log_trans, log_emit, clusters, prev_cluster, prev_alpha,
                reset, valid):
        B, T, k = log_emit.shape
        KP = log_trans.shape[0]
        ls, lt, le = (a.contiguous() for a in (log_start, log_trans, log_emit))
        cl = clusters.contiguous().to(torch.int64)
        pc = prev_cluster.contiguous().to(torch.int64)
        rs, ok = reset.to(torch.int8).contiguous(), valid.to(torch.int8).contiguous()
        alphas = le.new_empty(B, T + 1, k)
        c, m, me, lz = (le.new_empty(B, T) for _ in range(4))
        block, warps = _launch_args(k)
        _forward_kernel[(B,)](ls, lt, le, cl, pc, prev_alpha.contiguous(), rs, ok, alphas, c,
                              m, me, lz, T, KP, k, BLOCK=block, num_warps=warps)
        ctx.save_for_backward(ls, lt, le, cl, pc, rs, ok, alphas, c, m, me)
        alpha = alphas[:, -1].clone()
        ctx.mark_non_differentiable(alpha)
        return lz.sum(dim=1), alpha

    @staticmethod
    def backward(ctx, g, _g_alpha):
        ls, lt, le, cl, pc, rs, ok, alphas, c, m, me = ctx.saved_tensors
        B, T, k = le.shape
        g_ls, g_lt = torch.zeros_like(ls), torch.zeros_like(lt)
        g_le = torch.empty_like(le)
        beta = le.new_ones(B, k)
        block, warps = _launch_args(k)
        _backward_kernel[(B,)](ls, lt, le, cl, pc, rs, ok, alphas, c, m, me,
                               g.contiguous().to(le.dtype), beta, g_ls, g_lt, g_le, T,
                               lt.shape[0], k, BLOCK=block, num_warps=warps)
        return g_ls, g_lt, g_le, None, None, None, None, None


def triton_log_likelihood(log_start, log_trans, log_emit, clusters, prev_cluster, prev_alpha,
                          reset, valid):
    """Differentiable ``(loglik (B,), alpha (B, k))`` of :class:`TritonPartitionForward`."""
    return TritonPartitionForward.apply(log_start, log_trans, log_emit, clusters, prev_cluster,
                                        prev_alpha, reset, valid)

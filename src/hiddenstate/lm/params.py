r"""Parameterisations of a blocked HMM: scalar logit tables or the neural one of Chiu & Rush.

Both produce, for the states kept in a batch (:class:`~.constraints.DroppedStates`),

- ``log_start (K',)`` and ``log_trans (K', K')``: log-softmax over the kept states (eq. 2
  and 5: with state dropout the distributions are renormalised over the kept states);
- ``log_emit (V, k')``: ``log p(w | z = word_states[w, j])``, normalised per state over the
  words that state may emit (eq. 3), stored compactly: entry ``(w, j)`` is word ``w``'s
  ``j``-th kept state. The normaliser of state ``z`` is a scatter-logsumexp over the
  entries whose state is ``z``, so neither a ``K x V`` table nor a mask is built.

Scalar: :math:`\phi` are free logit tables (start ``K``, transitions ``K x K``, emissions
``V x k``). Neural (the reference's): state embeddings :math:`e_z` (``hidden`` wide),
:math:`\phi_{ij} = \mathrm{MLP}_t(e_i) \cdot e'_j`, :math:`\phi_{z}^{start} =
\mathrm{MLP}_s(s) \cdot e'_z`, :math:`\phi_{zw} = \mathrm{MLP}_o(e_z) \cdot u_w + b_w` (for a
partition of the states, one matrix product per cluster of words and its states), each
MLP two residual ReLU layers with layer norm; ``tie_embeddings`` uses one table for
:math:`e` and :math:`e'`.
"""

from __future__ import annotations

import torch
from torch import nn

from .constraints import ConstraintSet, DroppedStates

__all__ = ["KeptLogSoftmax", "NeuralParams", "ScalarParams", "state_log_normaliser"]


def state_log_normaliser(phi: torch.Tensor, word_states: torch.Tensor, n_states: int
                         ) -> torch.Tensor:
    """``log sum_{(w, j): word_states[w, j] = z} exp(phi[w, j])`` for every state ``z``
    (``-inf`` for a state that emits nothing)."""
    flat_s = word_states.reshape(-1)
    flat = phi.reshape(-1)
    m = torch.full((n_states,), -torch.inf, dtype=phi.dtype, device=phi.device)
    m = m.scatter_reduce(0, flat_s, flat.detach(), reduce="amax")
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    s = torch.zeros(n_states, dtype=phi.dtype, device=phi.device)
    s = s.index_add(0, flat_s, torch.exp(flat - m[flat_s]))
    return torch.log(s) + m


def _normalise_emissions(phi: torch.Tensor, d: DroppedStates) -> torch.Tensor:
    logz = state_log_normaliser(phi, d.word_states, len(d.kept))
    return phi - logz[d.word_states]


class KeptLogSoftmax(torch.autograd.Function):
    r"""``log_softmax(logits[kept][:, kept], dim=1)`` for a ``K x K`` table of logits and the
    ``K'`` kept states (eq. 5), the gather fused with the softmax: one gather of the kept
    entries (no ``K' x K`` intermediate of two ``index_select``), and a backward that writes
    :math:`g - \mathrm{softmax} \cdot \sum_j g` straight into the kept entries of the
    table's gradient (the kept ids are distinct, so no accumulation)."""

    @staticmethod
    def forward(ctx, logits, kept):
        out = torch.log_softmax(logits[kept[:, None], kept[None, :]], dim=1)
        ctx.save_for_backward(out, kept)
        ctx.shape = logits.shape
        return out

    @staticmethod
    def backward(ctx, g):
        out, kept = ctx.saved_tensors
        g_sub = g - torch.exp(out) * g.sum(dim=1, keepdim=True)
        grad = g.new_zeros(ctx.shape)
        grad.index_put_((kept[:, None], kept[None, :]), g_sub)
        return grad, None


def _sub(x: torch.Tensor, kept: torch.Tensor, full: int) -> torch.Tensor:
    return x if len(kept) == full else x.index_select(0, kept)


class ScalarParams(nn.Module):
    """Free logit tables, initialised from ``N(0, init_scale^2)``."""

    def __init__(self, cs: ConstraintSet, init_scale: float, generator: torch.Generator,
                 dtype: torch.dtype):
        super().__init__()
        K, V, k = cs.n_states, cs.n_words, cs.k
        self.n_states = K

        def draw(*shape):
            return nn.Parameter(init_scale * torch.randn(*shape, generator=generator,
                                                         dtype=dtype))

        self.start_logits = draw(K)
        self.trans_logits = draw(K, K)
        self.emit_logits = draw(V, k)

    def forward(self, d: DroppedStates):
        K = self.n_states
        log_start = torch.log_softmax(_sub(self.start_logits, d.kept, K), dim=0)
        if len(d.kept) != K:
            log_trans = KeptLogSoftmax.apply(self.trans_logits, d.kept)
        else:
            log_trans = torch.log_softmax(self.trans_logits, dim=1)
        phi = self.emit_logits.gather(1, d.cols)
        return log_start, log_trans, _normalise_emissions(phi, d)


class _ResidualMLP(nn.Module):
    def __init__(self, h: int, dtype: torch.dtype):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Sequential(nn.Linear(h, h, dtype=dtype), nn.ReLU(), nn.Linear(h, h, dtype=dtype),
                          nn.ReLU()) for _ in range(2))
        self.norms = nn.ModuleList(nn.LayerNorm(h, dtype=dtype) for _ in range(2))

    def forward(self, x):
        for layer, norm in zip(self.layers, self.norms, strict=True):
            x = norm(x + layer(x))
        return x


class NeuralParams(nn.Module):
    """State embeddings and residual MLPs (see the module docstring)."""

    def __init__(self, cs: ConstraintSet, hidden: int, tie_embeddings: bool,
                 generator: torch.Generator, dtype: torch.dtype):
        super().__init__()
        K, V = cs.n_states, cs.n_words
        self.n_states = K

        def emb(*shape):
            return nn.Parameter(torch.randn(*shape, generator=generator, dtype=dtype)
                                / hidden ** 0.5)

        self.state_emb = emb(K, hidden)
        self.next_emb = None if tie_embeddings else emb(K, hidden)
        self.start_vec = emb(hidden)
        self.word_emb = emb(V, hidden)
        self.word_bias = nn.Parameter(torch.zeros(V, dtype=dtype))
        slot, padded = (None, None) if cs.word_cluster is None else \
            _cluster_slots(cs.word_cluster)
        # index buffers: moved by .to(device), not saved (derived from the constraints)
        self.register_buffer("_slot", slot, persistent=False)
        self.register_buffer("_padded", padded, persistent=False)
        # nn.Linear draws from the global RNG: seed it from the model's generator
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.start_mlp = _ResidualMLP(hidden, dtype)
            self.trans_mlp = _ResidualMLP(hidden, dtype)
            self.emit_mlp = _ResidualMLP(hidden, dtype)

    def forward(self, d: DroppedStates):
        K = self.n_states
        e = _sub(self.state_emb, d.kept, K)
        e_next = e if self.next_emb is None else _sub(self.next_emb, d.kept, K)
        log_start = torch.log_softmax(self.start_mlp(self.start_vec) @ e_next.T, dim=0)
        log_trans = torch.log_softmax(self.trans_mlp(e) @ e_next.T, dim=1)
        h = self.emit_mlp(e)  # (K', hidden)
        if self._slot is None:  # overlapping random sets: per word
            phi = torch.einsum("wjh,wh->wj", h[d.word_states], self.word_emb)
        else:  # a partition: one matrix product per cluster, the clusters padded
            C, M = self._padded.shape
            words = self.word_emb.index_select(0, self._padded.view(-1)).view(C, M, -1)
            per = torch.bmm(words, h.view(C, -1, h.shape[1]).transpose(1, 2))
            # index_select: its backward is one index_add, not the generic index backward
            phi = per.reshape(-1, per.shape[2]).index_select(0, self._slot)
        phi = phi + self.word_bias[:, None]
        return log_start, log_trans, _normalise_emissions(phi, d)


def _cluster_slots(word_cluster) -> tuple[torch.Tensor, torch.Tensor]:
    """``(slot (V,), padded (C, M))`` for the emission logits of a partition: the words of
    cluster ``c`` fill row ``c`` of ``padded`` (``M`` the largest cluster; the rest of a row
    repeats word 0 and is never read) and word ``w`` sits at ``slot[w] = c M + rank``."""
    wc = torch.as_tensor(word_cluster, dtype=torch.int64)
    C = int(wc.max()) + 1
    sizes = torch.bincount(wc, minlength=C)
    M = int(sizes.max())
    order = torch.argsort(wc, stable=True)
    first = torch.cumsum(sizes, 0) - sizes
    rank = torch.arange(len(wc)) - first[wc[order]]
    slot = torch.empty_like(wc)
    slot[order] = wc[order] * M + rank
    padded = torch.zeros(C * M, dtype=torch.int64)
    padded[slot] = torch.arange(len(wc))
    return slot, padded.view(C, M)

r"""Emission constraint sets: which states may emit which word (Chiu & Rush §3.1-3.2).

A constraint set is a table ``word_states`` of shape ``(V, k)``: word ``w`` may only be
emitted by the ``k`` states ``word_states[w]``.

- **Brown** (``from_clusters``): the words of cluster ``c`` share the state block
  ``c * k .. c * k + k - 1``; the blocks partition the ``K = C k`` states.
- **random** (``random``): every word gets its own uniformly random ``k``-subset of the
  ``K`` states (subsets of different words overlap).
- **dense** (``dense``): one cluster holding every word, ``k = K``: an ordinary HMM, used as
  the baseline and to check the blocked recursion.

**State dropout** (:meth:`ConstraintSet.dropout`, §3.2) applies to partitions only: per
batch, ``k'`` of the ``k`` states of every cluster are kept (a uniformly random subset,
the same as Gumbel top-k with equal scores), the model is restricted to the ``C k'`` kept
states and start and transition distributions are renormalised over them (eq. 5). An
emission distribution is a distribution over words, one per state, so it is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..errors import InvalidInputError

__all__ = ["ConstraintSet", "DroppedStates"]


@dataclass(frozen=True)
class DroppedStates:
    """The states kept in one batch: ``kept (K',)`` global ids in compact order,
    ``cols (V, k')`` the kept columns of ``word_states`` and ``word_states (V, k')`` the
    compact ids (positions in ``kept``) of each word's kept states."""

    kept: torch.Tensor
    cols: torch.Tensor
    word_states: torch.Tensor


@dataclass(frozen=True)
class ConstraintSet:
    """``word_states (V, k)`` int64 state ids, ``n_states`` K, ``word_cluster (V,)`` the
    cluster of each word for partitions (None for random sets), ``kind``."""

    word_states: np.ndarray
    n_states: int
    word_cluster: np.ndarray | None
    kind: str

    @property
    def k(self) -> int:
        return int(self.word_states.shape[1])

    @property
    def n_words(self) -> int:
        return int(self.word_states.shape[0])

    @property
    def n_clusters(self) -> int:
        return 0 if self.word_cluster is None else int(self.word_cluster.max()) + 1

    @classmethod
    def from_clusters(cls, word_cluster, states_per_cluster: int) -> ConstraintSet:
        """Brown constraints: ``word_cluster[w]`` in ``0 .. C - 1`` for every word id."""
        wc = np.asarray(word_cluster)
        if wc.ndim != 1 or wc.size == 0 or not np.issubdtype(wc.dtype, np.integer) \
                or wc.min() < 0:
            raise InvalidInputError(
                "word_cluster: expected a non-empty 1-D array of cluster ids >= 0, one per word")
        if isinstance(states_per_cluster, bool) or int(states_per_cluster) < 1:
            raise InvalidInputError(
                f"states_per_cluster: expected an integer >= 1, got {states_per_cluster!r}")
        _, wc = np.unique(wc, return_inverse=True)  # clusters numbered 0 .. C-1, none empty
        k = int(states_per_cluster)
        ws = wc.astype(np.int64)[:, None] * k + np.arange(k, dtype=np.int64)[None, :]
        return cls(ws, int(wc.max() + 1) * k, wc.astype(np.int64), "brown")

    @classmethod
    def dense(cls, n_words: int, n_states: int) -> ConstraintSet:
        """Every word emitted by every state (an ordinary HMM)."""
        return cls.from_clusters(np.zeros(n_words, dtype=np.int64), n_states)._replace("dense")

    @classmethod
    def random(cls, n_words: int, n_states: int, states_per_word: int,
               seed: int = 0) -> ConstraintSet:
        """Each word's ``states_per_word`` states drawn uniformly without replacement."""
        if not 1 <= states_per_word <= n_states:
            raise InvalidInputError(
                f"states_per_word: expected 1 .. n_states ({n_states}), got {states_per_word}")
        rng = np.random.default_rng(seed)
        ws = np.argsort(rng.random((n_words, n_states)), axis=1)[:, :states_per_word]
        return cls(np.sort(ws, axis=1).astype(np.int64), int(n_states), None, "random")

    def _replace(self, kind: str) -> ConstraintSet:
        return ConstraintSet(self.word_states, self.n_states, self.word_cluster, kind)

    def dropout(self, keep: int, generator: torch.Generator,
                device: torch.device | str = "cpu") -> DroppedStates:
        """Keep ``keep`` random states of every cluster (see the module docstring)."""
        if self.word_cluster is None:
            raise InvalidInputError(
                "state_dropout: needs a partition of the states (Brown or dense constraints); "
                "random constraint sets overlap, so use state_dropout=None with them")
        C, k = self.n_clusters, self.k
        if not 1 <= keep <= k:
            raise InvalidInputError(
                f"state_dropout: expected 1 .. states_per_cluster ({k}) states kept, got {keep}")
        cols_c = torch.rand(C, k, generator=generator).argsort(dim=1)[:, :keep]
        return self.kept_states(cols_c.sort(dim=1).values, device)

    def kept_states(self, keep, device: torch.device | str = "cpu") -> DroppedStates:
        """The :class:`DroppedStates` that keep, in cluster ``c``, the states
        ``c k + keep[c]`` (``keep (C, k')``, sorted rows)."""
        cols_c = torch.as_tensor(keep, dtype=torch.int64)
        C, kp = cols_c.shape
        kept = (torch.arange(C)[:, None] * self.k + cols_c).reshape(-1)
        wc = torch.as_tensor(self.word_cluster)
        cols = cols_c[wc]
        ws = wc[:, None] * kp + torch.arange(kp)[None, :]
        return DroppedStates(kept.to(device), cols.to(device), ws.to(device))

    def all_states(self, device: torch.device | str = "cpu") -> DroppedStates:
        """No dropout: every state kept, in global order."""
        ws = torch.as_tensor(self.word_states, device=device)
        cols = torch.arange(self.k, device=device).expand(self.n_words, -1)
        return DroppedStates(torch.arange(self.n_states, device=device), cols, ws)

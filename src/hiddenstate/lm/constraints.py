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
    """Which states may emit which word (an emission constraint set).

    Parameters
    ----------
    word_states : ndarray of int64 of shape (n_words, k)
        The states of each word.
    n_states : int
        The number of states K.
    word_cluster : ndarray of int64 of shape (n_words,) or None
        The cluster of each word for partitions (Brown, dense); None for random sets.
    kind : {"brown", "dense", "random"}
        How the set was built.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.lm import ConstraintSet
    >>> cs = ConstraintSet.from_clusters(np.array([0, 0, 1]), states_per_cluster=2)
    >>> cs.n_states, cs.k, cs.n_clusters
    (4, 2, 2)
    >>> cs.word_states
    array([[0, 1],
           [0, 1],
           [2, 3]])
    """

    word_states: np.ndarray
    n_states: int
    word_cluster: np.ndarray | None
    kind: str

    @property
    def k(self) -> int:
        """The number of states of each word."""
        return int(self.word_states.shape[1])

    @property
    def n_words(self) -> int:
        """The number of words V."""
        return int(self.word_states.shape[0])

    @property
    def n_clusters(self) -> int:
        """The number of clusters (0 for a random set)."""
        return 0 if self.word_cluster is None else int(self.word_cluster.max()) + 1

    @classmethod
    def from_clusters(cls, word_cluster, states_per_cluster: int) -> ConstraintSet:
        """Build Brown constraints: the words of a cluster share its ``k`` states.

        The words of cluster ``c`` may be emitted by the states ``c k .. c k + k - 1`` only.

        Parameters
        ----------
        word_cluster : array-like of int of shape (n_words,)
            The cluster of every word id (renumbered ``0 .. C - 1``, none empty).
        states_per_cluster : int
            The states of each cluster, k.

        Returns
        -------
        ConstraintSet
            The partition of the ``C k`` states.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``word_cluster`` or ``states_per_cluster`` is invalid.
        """
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
        """Build dense constraints: every word emitted by every state (an ordinary HMM).

        Parameters
        ----------
        n_words : int
            The number of words.
        n_states : int
            The number of states.

        Returns
        -------
        ConstraintSet
            One cluster holding every word, ``k = K``.

        Examples
        --------
        >>> from hiddenstate.lm import ConstraintSet
        >>> ConstraintSet.dense(n_words=5, n_states=4).word_states.shape
        (5, 4)
        """
        return cls.from_clusters(np.zeros(n_words, dtype=np.int64), n_states)._replace("dense")

    @classmethod
    def random(cls, n_words: int, n_states: int, states_per_word: int,
               seed: int = 0) -> ConstraintSet:
        """Build random constraints: each word's states drawn uniformly without replacement.

        Parameters
        ----------
        n_words : int
            The number of words.
        n_states : int
            The number of states.
        states_per_word : int
            The states of each word, k: 1 .. ``n_states``.
        seed : int, default=0
            The seed of the draw.

        Returns
        -------
        ConstraintSet
            The (overlapping) constraint set.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``states_per_word`` is out of range.

        Examples
        --------
        >>> from hiddenstate.lm import ConstraintSet
        >>> cs = ConstraintSet.random(n_words=5, n_states=6, states_per_word=2, seed=0)
        >>> cs.word_states.shape, cs.word_cluster is None
        ((5, 2), True)
        """
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
        """Keep ``keep`` random states of every cluster (state dropout, Chiu & Rush section 3.2).

        Parameters
        ----------
        keep : int
            The states kept per cluster, 1 .. k.
        generator : torch.Generator
            The random generator.
        device : torch.device or str, default="cpu"
            Where the index tensors live.

        Returns
        -------
        hiddenstate.lm.constraints.DroppedStates
            The kept states.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the set is not a partition (random constraints) or ``keep`` is out of range.

        Examples
        --------
        >>> import numpy as np
        >>> import torch
        >>> from hiddenstate.lm import ConstraintSet
        >>> cs = ConstraintSet.from_clusters(np.array([0, 0, 1]), states_per_cluster=2)
        >>> len(cs.dropout(1, torch.Generator().manual_seed(0)).kept)
        2
        """
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
        """Return the kept states of given columns of every cluster.

        In cluster ``c``, the states ``c k + keep[c]``.

        Parameters
        ----------
        keep : array-like of int of shape (n_clusters, k_kept)
            The kept columns of every cluster (sorted rows).
        device : torch.device or str, default="cpu"
            Where the index tensors live.

        Returns
        -------
        hiddenstate.lm.constraints.DroppedStates
            The kept states.
        """
        cols_c = torch.as_tensor(keep, dtype=torch.int64)
        C, kp = cols_c.shape
        kept = (torch.arange(C)[:, None] * self.k + cols_c).reshape(-1)
        wc = torch.as_tensor(self.word_cluster)
        cols = cols_c[wc]
        ws = wc[:, None] * kp + torch.arange(kp)[None, :]
        return DroppedStates(kept.to(device), cols.to(device), ws.to(device))

    def all_states(self, device: torch.device | str = "cpu") -> DroppedStates:
        """Return every state, kept in global order (no dropout).

        Parameters
        ----------
        device : torch.device or str, default="cpu"
            Where the index tensors live.

        Returns
        -------
        hiddenstate.lm.constraints.DroppedStates
            Every state.
        """
        ws = torch.as_tensor(self.word_states, device=device)
        cols = torch.arange(self.k, device=device).expand(self.n_words, -1)
        return DroppedStates(torch.arange(self.n_states, device=device), cols, ws)

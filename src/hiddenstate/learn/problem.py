r"""What a model hands the batch learner, and the two rules every model's Problem and
inference share.

- :class:`Block` and :class:`Problem`: the seam between a model and
  :func:`hiddenstate.learn.fit` (parameter blocks; expected counts by sum-product, path
  counts by max-product).
- :func:`kbest_weights`: how k-best Viterbi training weighs the ``k`` best explanations of
  an item (their probabilities normalised over the ``k``), and the objective they give.
- :func:`check_possible`: the zero-probability rule of ``docs/estimator-contract.md``. An
  item (sequence, sentence, goal, pattern, sample) of probability zero scores ``-inf``;
  a method that needs its posterior, best explanation or a conditional sample, and
  learning, raise :class:`~hiddenstate.errors.ZeroProbabilityError` naming the items (the
  first :data:`MAX_NAMED`, then how many more).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ..errors import ZeroProbabilityError

#: items a zero-probability error names before it gives only their number
MAX_NAMED = 3


class Block(Protocol):
    def merge_statistics(self, a, b): ...
    def mstep(self, params, stats, which: str) -> tuple[Any, list]: ...
    def log_prior(self, params) -> float: ...
    def vb_init(self, params, n_virtual: float): ...
    def vb_update(self, q, stats, which: str): ...
    def vb_expected(self, q): ...
    def vb_kl(self, q) -> float: ...
    def vb_mean(self, q): ...


class Problem(Protocol):
    """What a model hands the learner.

    The statistics of disjoint sets of sequences combine with
    :func:`~hiddenstate.learn.merge_statistics`, so a Problem over many partitions
    (:mod:`hiddenstate.distributed`) is again a Problem: ``n_virtual`` must then be additive
    over the data (counts of observations or sequences).

    Optional hooks, used when present: ``set_start(params)`` (variational Bayes calls it
    with the starting point before building q(θ), e.g. to set ``n_virtual`` from the
    expected counts there) and ``set_temperature(beta)`` (deterministic annealing: the
    E-step of ``em``/``map`` at inverse temperature ``beta``; see
    :func:`~hiddenstate.learn.fit_restarts`).
    """

    #: parameter blocks by name
    blocks: dict[str, Block]
    #: the letters (hmmlearn's ``params``) of each block; a block is learned if any of its
    #: letters is in ``which``
    letters: dict[str, str]
    #: observations per state, used to centre the initial variational posteriors
    n_virtual: dict[str, float]

    def expected_counts(self, views: dict) -> tuple[float, dict]:
        """Sum-product: (sum over sequences of log Z, statistics per block)."""

    def path_counts(self, views: dict, k: int) -> tuple[float, dict, np.ndarray]:
        """Max-product: (objective of the k best paths, statistics per block, the paths)."""


def kbest_weights(logp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""The weights k-best Viterbi training gives the explanations of each item, and the
    item's objective.

    ``logp`` ``(n, k)``: the log-probabilities :math:`\log p(x_s, z_r)` of the ``k`` best
    explanations of each item (``-inf`` where an item has fewer than ``k``; any order).
    Returns ``(w, log_mass)``: :math:`w_{sr} = p(x_s, z_r) / \sum_{r'<k} p(x_s, z_{r'})`
    (0 for the missing ones; each row sums to one) and :math:`\log \sum_{r<k} p(x_s, z_r)`,
    whose sum over the items is the objective of ``learn="kvt"``. Computed relative to the
    best explanation, so nothing underflows. Every item's best explanation must have
    non-zero probability (:func:`check_possible` first). The streaming learners that
    enumerate every path of a sequence (BOnA, MPA) weigh them by the same rule."""
    logp = np.asarray(logp, dtype=np.float64)
    top = logp.max(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        w = np.where(np.isfinite(logp), np.exp(logp - top), 0.0)
    mass = w.sum(axis=1, keepdims=True)
    return w / mass, top[:, 0] + np.log(mass[:, 0])


def name_items(named: list, total: int, noun: str) -> str:
    """``"sequence 3"``, ``"sequences 3 and 7"``, ``"sequences 3, 7 and 12"``,
    ``"sequences 3, 7, 12 (and 40 more)"``: the items ``named`` (at most
    :data:`MAX_NAMED`, formatted or numbers) of ``total``, then how many more."""
    shown = [str(b) for b in named[:MAX_NAMED]]
    if total == 1:
        return f"{noun} {shown[0]}"
    if total <= MAX_NAMED:
        return f"{noun}s {', '.join(shown[:-1])} and {shown[-1]}"
    return f"{noun}s {', '.join(shown)} (and {total - len(shown)} more)"


def check_possible(logp, noun: str, cause: str, fix: str, *, argument: str = "X",
                   use: str | None = None, index=None, labels=None,
                   given: str | None = None) -> None:
    """The zero-probability rule: a :class:`~hiddenstate.errors.ZeroProbabilityError`
    when an entry of ``logp`` (one log-probability per item) is ``-inf`` (or NaN), naming
    the items; nothing otherwise.

    ``noun``: what an item is ("sequence", "sentence", "goal", "pattern", "sample");
    ``labels``: how to name item ``i`` (default its number; ``index``: the item number of
    each entry, for a chunk of the data); ``argument``: the argument that holds the items;
    ``cause``: what makes an item impossible in this model; ``fix``: what to do;
    ``given``: under what it has probability zero (default "under the current
    parameters" while learning, "under the model" otherwise). ``use``: None while
    learning ("... has probability zero under the current parameters (cause); fix");
    otherwise what the failing method needs and does not exist ("... so it has no {use};
    score_samples gives -inf for it. fix").
    """
    logp = np.asarray(logp, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(logp))
    if not len(bad):
        return
    items = bad if index is None else np.asarray(index)[bad]
    named = [labels(int(i)) if labels is not None else int(i) for i in items[:MAX_NAMED]]
    text = name_items(named, len(items), noun)
    one = len(items) == 1
    if use is None:
        given = "under the current parameters" if given is None else given
        raise ZeroProbabilityError(
            f"{argument}: {text} {'has' if one else 'have'} probability zero {given} "
            f"({cause}); {fix}")
    given = "under the model" if given is None else given
    raise ZeroProbabilityError(
        f"{argument}: {text} {'has' if one else 'have'} probability zero {given} ({cause}), "
        f"so {'it has' if one else 'they have'} no {use}; score_samples gives -inf for "
        f"{'it' if one else 'them'}. {fix}")

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
    #: the observations the objective sums over (time steps, words, items): the stop rule
    #: compares an iteration's gain divided by this with ``tol``; additive over the data
    n_observations: int

    def expected_counts(self, views: dict) -> tuple[float, dict]:
        """Sum-product: (sum over sequences of log Z, statistics per block)."""

    def path_counts(self, views: dict, k: int) -> tuple[float, dict, np.ndarray]:
        """Max-product: (objective of the k best paths, statistics per block, the paths)."""


def kbest_weights(logp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Weigh the k best explanations of each item as k-best Viterbi training does.

    :math:`w_{sr} = p(x_s, z_r) / \sum_{r'<k} p(x_s, z_{r'})`, and the item's objective
    :math:`\log \sum_{r<k} p(x_s, z_r)`, whose sum over the items is the objective of
    ``learn="kvt"``. Computed relative to the best explanation, so nothing underflows.
    Every item's best explanation must have non-zero probability (:func:`check_possible`
    first). The streaming learners that enumerate every path of a sequence (BOnA, MPA) weigh
    them by the same rule.

    Parameters
    ----------
    logp : array-like of float of shape (n, k)
        The log-probabilities :math:`\log p(x_s, z_r)` of the ``k`` best explanations of each
        item (``-inf`` where an item has fewer than ``k``; any order).

    Returns
    -------
    w : ndarray of shape (n, k)
        The weights (0 for the missing explanations; each row sums to one).
    log_mass : ndarray of shape (n,)
        The log of the summed probability of each item's ``k`` explanations.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.learn import kbest_weights
    >>> w, log_mass = kbest_weights(np.log([[0.03, 0.01], [0.02, 1e-300]]))
    >>> w.round(3)
    array([[0.75, 0.25],
           [1.  , 0.  ]])
    >>> np.exp(log_mass).round(3)
    array([0.04, 0.02])
    """
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
    """Apply the zero-probability rule: refuse items of probability zero, naming them.

    Nothing happens when every entry of ``logp`` is finite.

    Parameters
    ----------
    logp : array-like of float of shape (n_items,)
        One log-probability per item.
    noun : str
        What an item is ("sequence", "sentence", "goal", "pattern", "sample").
    cause : str
        What makes an item impossible in this model.
    fix : str
        What to do.
    argument : str, default="X"
        The argument that holds the items.
    use : str or None, default=None
        None while learning ("... has probability zero under the current parameters
        (cause); fix"); otherwise what the failing method needs and does not exist ("... so
        it has no {use}; score_samples gives -inf for it. fix").
    index : array-like of int or None, default=None
        The item number of each entry, for a chunk of the data; None: the entries' positions.
    labels : callable or None, default=None
        ``labels(i)``: how to name item ``i``; None: its number.
    given : str or None, default=None
        Under what the items have probability zero; None: "under the current parameters"
        while learning, "under the model" otherwise.

    Raises
    ------
    hiddenstate.errors.ZeroProbabilityError
        If an entry of ``logp`` is ``-inf`` or NaN; the message names the first
        :data:`MAX_NAMED` such items, then how many more.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.learn import check_possible
    >>> check_possible([-1.5, -2.0], "sequence", "a symbol no state emits", "fix it")
    >>> check_possible([-1.5, -np.inf], "sequence", "a symbol no state emits",
    ...                "give every symbol a non-zero emission probability", use="Viterbi path")
    Traceback (most recent call last):
    ...
    hiddenstate.errors.ZeroProbabilityError: X: sequence 1 has probability zero under the model ...
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

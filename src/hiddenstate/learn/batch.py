r"""Batch learning modes, written once for every model (PRISM's "one switch").

A model hands the learner a :class:`Problem`: its parameter blocks (conjugate families,
each with MLE/MAP, log prior and variational updates) and two inference routines that
return statistics per block — expected counts from sum-product dynamic programming, or
counts along the k best explanations from max-product. The learner never looks inside
either.

========  ===========================================  ====================================
mode      E-step                                       objective recorded per iteration
========  ===========================================  ====================================
``em``    expected counts at θ                          log p(X | θ)
``map``   expected counts at θ                          log p(X | θ) + log p(θ)
``vb``    expected counts at θ̃ = exp E_q[log θ]        ELBO = log Z̃ − KL(q(θ) ‖ p(θ))
``vt``    counts along the Viterbi path z*              log p(X, z* | θ) + log p(θ)
``kvt``   counts along the k best paths, weighted by    Σ_s log Σ_{r<k} p(x_s, z_r | θ)
          their normalised probabilities                + log p(θ)
========  ===========================================  ====================================

EM and MAP maximise with the blocks' M-steps (MAP: under the blocks' priors); VB replaces
q(θ) by prior plus statistics (MacKay 1997; Beal 2003, ch. 3); VT and k-best VT use the
MAP M-step on hard counts and stop when the best paths stop changing (Viterbi training as
in PRISM, Sato & Kameya) or, with ties, when the objective stops rising. Every objective is
non-decreasing from one iteration to the next.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..errors import DegenerateStateWarning, InvalidInputError, NumericalError
from .monitor import ConvergenceMonitor

MODES = ("em", "map", "vb", "vt", "kvt")
_STALL = 1e-12  # relative gain below which Viterbi training has stopped moving

#: what ``monitor_.history`` holds for each mode (for progress bars, reports and plots)
OBJECTIVES = {
    "em": "log-likelihood",
    "map": "log-likelihood + log prior",
    "vb": "evidence lower bound (ELBO)",
    "vt": "log p(X, z*) + log prior",
    "kvt": "log-mass of the k best paths + log prior",
}


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

    The statistics of disjoint sets of sequences combine with :func:`merge_statistics`, so
    a Problem over many partitions (:mod:`hiddenstate.distributed`) is again a Problem:
    ``n_virtual`` must then be additive over the data (counts of observations or
    sequences).
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


def merge_statistics(blocks: dict, a: dict, b: dict) -> dict:
    """The statistics per block of two disjoint sets of sequences, combined: the reduce
    step of an E-step run over partitions of the data. Every block merges its own
    (``block.merge_statistics``: sums of counts, Gaussian sums moved between reference
    points, ...). ``merge(a, b)`` of partitions in a fixed order gives the same numbers for
    any placement of the work."""
    return {name: block.merge_statistics(a[name], b[name]) for name, block in blocks.items()}


@dataclass
class Fitted:
    """Result of :func:`fit`: point parameters, variational posteriors (VB), monitor."""

    params: dict
    posterior: dict | None
    monitor: ConvergenceMonitor


def _check_objective(value: float, monitor: ConvergenceMonitor) -> float:
    if not np.isfinite(value):
        raise NumericalError(
            f"objective is {value} at iteration {monitor.iter}; check the data for extreme "
            "values or use priors (learn='map') / min_covar")
    return value


def _learned(problem: Problem, name: str, which: str) -> bool:
    return any(letter in which for letter in problem.letters[name])


def _warn_degenerate(name: str, states: list) -> None:
    if states:
        warnings.warn(
            f"{name}: states {states} had no posterior mass or a variance at the floor "
            "(min_covar); their parameters were kept or floored", DegenerateStateWarning,
            stacklevel=4)


def fit(problem: Problem, mode: str, params: dict, monitor: ConvergenceMonitor, which: str,
        k_best: int = 1, callback: Callable[[int, float], None] | None = None) -> Fitted:
    """Run one learning mode from ``params`` until ``monitor`` says stop."""
    if mode not in MODES:
        raise InvalidInputError(f"learn: {mode!r} is not one of {MODES}")
    blocks = problem.blocks

    def mstep(theta, stats):
        new = {}
        for name, block in blocks.items():
            new[name], degenerate = block.mstep(theta[name], stats[name], which)
            _warn_degenerate(name, degenerate)
        return new

    def log_prior(theta):
        return sum(block.log_prior(theta[name]) for name, block in blocks.items())

    def report(value):
        stop = monitor.report(_check_objective(value, monitor))
        if callback is not None:
            callback(monitor.iter, value)
        return stop

    if mode in ("em", "map"):
        for _ in range(monitor.n_iter):
            loglik, stats = problem.expected_counts(params)
            value = loglik + (log_prior(params) if mode == "map" else 0.0)
            params = mstep(params, stats)
            if report(value):
                break
        return Fitted(params, None, monitor)

    if mode in ("vt", "kvt"):  # the monitor's tol is not used: the paths decide
        k = k_best if mode == "kvt" else 1
        previous = None
        for _ in range(monitor.n_iter):
            value, stats, paths = problem.path_counts(params, k)
            value += log_prior(params)
            # Stop when the explanations repeat (the M-step would return params unchanged)
            # or the objective no longer rises: paths of equal probability can trade places
            # through rounding forever (at the k-th place of a k-best list, say).
            same = previous is not None and np.array_equal(paths, previous)
            stalled = bool(monitor.history) and value <= monitor.history[-1] + _STALL * abs(value)
            if same or stalled:
                monitor.converged = True
                report(value)
                break
            params = mstep(params, stats)
            previous = paths
            if report(value):
                break
        return Fitted(params, None, monitor)

    # variational Bayes: q(θ) for learned blocks, the point value for frozen ones
    learned = {name: _learned(problem, name, which) for name in blocks}
    q = {name: blocks[name].vb_init(params[name], problem.n_virtual[name])
         for name in blocks if learned[name]}
    for _ in range(monitor.n_iter):
        views = {name: blocks[name].vb_expected(q[name]) if learned[name] else params[name]
                 for name in blocks}
        log_z, stats = problem.expected_counts(views)
        value = log_z - sum(blocks[name].vb_kl(q[name]) for name in q)
        q = {name: blocks[name].vb_update(q[name], stats[name], which) for name in q}
        if report(value):
            break
    params = {name: blocks[name].vb_mean(q[name]) if learned[name] else params[name]
              for name in blocks}
    return Fitted(params, q, monitor)

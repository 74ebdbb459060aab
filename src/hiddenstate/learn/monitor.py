"""The convergence monitor shared by every batch learning mode: the objective per
iteration and the tolerance rule of EM, MAP and VB (Viterbi training stops by its own rule,
in :func:`hiddenstate.learn.fit`).

The rule compares the *gain per observation* with ``tol``: an iteration that raises the
objective by less than ``tol * n_observations`` nats stops learning, where
``n_observations`` is the number of observations the objective sums over (time steps of
an HMM, words of a grammar, items of a classifier or tree network: the Problem's
``n_observations``). The objective of a data set grows with its size, so an absolute gain
means something else on 100 and on 100,000 observations; the gain per observation does not
(it is the gain of the average log-likelihood that scikit-learn's ``GaussianMixture`` also
compares with its ``tol``), and unlike a gain relative to the objective it does not change
when continuous data change units (which adds a constant to the objective) or when the
objective is near zero. hmmlearn's absolute rule stays in
:mod:`hiddenstate.compat.hmmlearn`."""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConvergenceWarning


@dataclass
class ConvergenceMonitor:
    """Objective per iteration and the stopping rule.

    ``history[i]`` is the objective at the parameters *entering* iteration ``i`` (as in
    hmmlearn). EM has converged when an iteration improves the objective by less than
    ``tol`` per observation, ``(history[i] - history[i-1]) / n_observations < tol``
    (:meth:`report`); reaching ``n_iter`` first leaves ``converged`` False.

    Parameters
    ----------
    tol : float
        The smallest gain of an iteration per observation (nats) that does not stop EM, MAP
        or VB (``-inf``: never stop early).
    n_iter : int
        The most iterations.
    verbose : bool, default=False
        Print each iteration's objective and gain to stderr.
    history : list of float, default=[]
        The objective per iteration so far.
    converged : bool, default=False
        Whether the tolerance rule has stopped learning.
    log : hiddenstate.learn.FitWarnings or None, default=None
        Collects a falling objective (the learner sets it); None: the monitor warns at once
        with a :class:`~hiddenstate.errors.ConvergenceWarning`.
    n_observations : float, default=1.0
        The observations the objective sums over (:func:`hiddenstate.learn.fit` sets it from
        the Problem's ``n_observations``); 1: ``tol`` is an absolute gain.

    See Also
    --------
    hiddenstate.learn.fit : Runs one learning mode with a monitor.

    Examples
    --------
    >>> from hiddenstate.learn import ConvergenceMonitor
    >>> monitor = ConvergenceMonitor(tol=0.01, n_iter=10)
    >>> [monitor.report(v) for v in (-10.0, -9.0, -8.995)]
    [False, False, True]
    >>> monitor.iter, monitor.converged, monitor.history
    (3, True, [-10.0, -9.0, -8.995])

    Over 1,000 observations the same gains are 0.001 and 0.000005 per observation:

    >>> monitor = ConvergenceMonitor(tol=1e-4, n_iter=10, n_observations=1000)
    >>> [monitor.report(v) for v in (-1000.0, -999.0, -998.995)]
    [False, False, True]
    """

    tol: float
    n_iter: int
    verbose: bool = False
    history: list[float] = field(default_factory=list)
    converged: bool = False
    log: Any = field(default=None, repr=False, compare=False)
    n_observations: float = 1.0

    @property
    def iter(self) -> int:
        """The number of objective values recorded."""
        return len(self.history)

    def record(self, value: float) -> bool:
        """Record an objective value, without the tolerance rule.

        The value is printed if ``verbose``; a decrease beyond rounding is reported (to
        ``log``, else as a :class:`~hiddenstate.errors.ConvergenceWarning`).

        Parameters
        ----------
        value : float
            The objective at the parameters entering this iteration.

        Returns
        -------
        bool
            True when ``n_iter`` values have been recorded.
        """
        if self.verbose:
            delta = value - self.history[-1] if self.history else float("nan")
            print(f"{self.iter + 1:>6} {value:>20.10f} {delta:>+16.8g} "
                  f"{delta / self.n_observations:>+14.6g}/obs", file=sys.stderr)
        if self.history:
            prev = self.history[-1]
            if value < prev - 1e-9 * max(1.0, abs(prev)):
                if self.log is not None:
                    self.log.decreased(prev, value)
                else:
                    warnings.warn(
                        f"objective decreased at iteration {self.iter}: {prev:.12g} -> "
                        f"{value:.12g}", ConvergenceWarning, stacklevel=3)
        self.history.append(float(value))
        return self.iter >= self.n_iter

    def report(self, value: float) -> bool:
        """Record an objective value and apply the tolerance rule.

        Parameters
        ----------
        value : float
            The objective at the parameters entering this iteration.

        Returns
        -------
        bool
            True when learning should stop: the gain over the previous value per
            observation is below ``tol`` (``converged`` becomes True), or ``n_iter`` values
            were recorded.
        """
        if self.history and \
                (value - self.history[-1]) / max(self.n_observations, 1.0) < self.tol:
            self.converged = True
        return self.record(value) or self.converged

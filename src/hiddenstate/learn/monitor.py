"""The convergence monitor shared by every batch learning mode: the objective per
iteration and the tolerance rule of EM, MAP and VB (Viterbi training stops by its own rule,
in :func:`hiddenstate.learn.fit`)."""

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
    ``tol`` (:meth:`report`); reaching ``n_iter`` first leaves ``converged`` False.

    Parameters
    ----------
    tol : float
        The smallest gain of an iteration that does not stop EM, MAP or VB.
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
    """

    tol: float
    n_iter: int
    verbose: bool = False
    history: list[float] = field(default_factory=list)
    converged: bool = False
    log: Any = field(default=None, repr=False, compare=False)

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
            print(f"{self.iter + 1:>6} {value:>20.10f} {delta:>+16.8g}", file=sys.stderr)
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
            True when learning should stop: the gain over the previous value is below
            ``tol`` (``converged`` becomes True), or ``n_iter`` values were recorded.
        """
        if self.history and value - self.history[-1] < self.tol:
            self.converged = True
        return self.record(value) or self.converged

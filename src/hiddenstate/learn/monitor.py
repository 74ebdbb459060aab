"""The convergence monitor shared by every batch learning mode."""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field

from ..errors import ConvergenceWarning


@dataclass
class ConvergenceMonitor:
    """Objective per iteration and the stopping rule.

    ``history[i]`` is the objective at the parameters *entering* iteration ``i`` (as in
    hmmlearn). EM has converged when an iteration improves the objective by less than
    ``tol``; reaching ``n_iter`` first leaves ``converged`` False.
    """

    tol: float
    n_iter: int
    verbose: bool = False
    history: list[float] = field(default_factory=list)
    converged: bool = False

    @property
    def iter(self) -> int:
        return len(self.history)

    def report(self, value: float) -> bool:
        """Record an objective value; return True when learning should stop."""
        if self.verbose:
            delta = value - self.history[-1] if self.history else float("nan")
            print(f"{self.iter + 1:>6} {value:>20.10f} {delta:>+16.8g}", file=sys.stderr)
        if self.history:
            prev = self.history[-1]
            if value < prev - 1e-9 * max(1.0, abs(prev)):
                warnings.warn(
                    f"objective decreased at iteration {self.iter}: {prev:.12g} -> {value:.12g}",
                    ConvergenceWarning, stacklevel=3)
            if value - prev < self.tol:
                self.converged = True
        self.history.append(float(value))
        return self.converged or self.iter >= self.n_iter

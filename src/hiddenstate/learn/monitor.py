r"""Batch expectation-maximisation, generic over models (Dempster, Laird & Rubin 1977).

Each iteration evaluates the objective and the expected sufficient statistics at the current
parameters (E-step), then maximises (M-step):
:math:`\theta^{(i+1)} = \arg\max_\theta \mathbb E_{z \sim p(z|x,\theta^{(i)})} \log p(x, z|\theta)`.
The learner never looks inside parameters or statistics: models supply both steps.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ConvergenceWarning, NumericalError


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


def em(params: Any, e_step: Callable[[Any], tuple[float, Any]],
       m_step: Callable[[Any, Any], Any], monitor: ConvergenceMonitor,
       callback: Callable[[int, float], None] | None = None) -> Any:
    """Run EM from ``params`` until ``monitor`` says stop; return the final parameters.

    ``e_step(params) -> (objective, stats)``; ``m_step(params, stats) -> params``.
    """
    for _ in range(monitor.n_iter):
        objective, stats = e_step(params)
        if not np.isfinite(objective):
            raise NumericalError(
                f"objective is {objective} at iteration {monitor.iter}; check the data for "
                "extreme values or set min_covar / priors")
        params = m_step(params, stats)
        stop = monitor.report(objective)
        if callback is not None:
            callback(monitor.iter, objective)
        if stop:
            break
    return params

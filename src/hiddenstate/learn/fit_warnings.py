"""The warnings of one fit, collected over its restarts and iterations and issued once per
distinct cause when the fit ends (``docs/estimator-contract.md``: "a warning is issued once
per distinct cause per call").

An M-step that leaves states without posterior mass does so at many iterations; an
objective that falls by rounding may fall at several. Warning at each would print the same
line dozens of times (40 :class:`~hiddenstate.errors.DegenerateStateWarning` lines for one
``HMM.fit`` before this module); instead each cause gives one line that says which states,
in how many of the iterations and when.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass, field

from ..errors import ConvergenceWarning, DegenerateStateWarning

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning issued by the caller of this function point
    at the first frame outside the hiddenstate package (the user's call)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def _iterations(its: list[tuple[int, int]], restarts: int) -> str:
    """``"1-3, 7"`` or, over several restarts, ``"restart 1: 1-3; restart 2: 4"``."""
    def spans(values: list[int]) -> str:
        values = sorted(set(values))
        out, lo = [], values[0]
        for a, b in zip(values, [*values[1:], None], strict=True):
            if b != a + 1:
                out.append(str(lo) if lo == a else f"{lo}-{a}")
                lo = b
        return ", ".join(out[:6]) + (", ..." if len(out) > 6 else "")

    if restarts == 1:
        return spans([i for _, i in its])
    by = {}
    for r, i in its:
        by.setdefault(r, []).append(i)
    return "; ".join(f"restart {r}: {spans(v)}" for r, v in sorted(by.items()))


@dataclass
class _Cause:
    states: set = field(default_factory=set)
    iterations: list = field(default_factory=list)   # (restart, iteration)
    detail: dict = field(default_factory=dict)


class FitWarnings:
    """The warnings of one fit call, issued once per cause.

    The learner reports each occurrence (:meth:`degenerate`, :meth:`decreased`) with the
    restart and iteration it happened in (:meth:`start_restart`, :meth:`step` count them);
    :meth:`issue` then warns once per cause.

    Attributes
    ----------
    restart : int
        The current restart (1 after the first :meth:`start_restart`).
    iteration : int
        The current iteration of the current restart.
    steps : int
        The iterations run over every restart.

    See Also
    --------
    hiddenstate.learn.fit_restarts : Collects the warnings of all its runs in one.

    Examples
    --------
    >>> import warnings
    >>> from hiddenstate.learn import FitWarnings
    >>> log = FitWarnings()
    >>> log.start_restart()
    >>> for _ in range(3):
    ...     log.step()
    ...     log.degenerate("emission", [1])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     log.issue()
    >>> len(caught), caught[0].category.__name__
    (1, 'DegenerateStateWarning')
    >>> print(caught[0].message)
    emission: states [1] had no posterior mass or a variance at the floor (min_covar) in 3 of
    3 iterations (iterations 1-3); their parameters were kept or floored
    """

    def __init__(self):
        self.restart = 0
        self.iteration = 0
        self.steps = 0          # iterations run over every restart
        self._causes: dict[tuple, _Cause] = {}

    def start_restart(self) -> None:
        """Begin a restart (its iterations count from 1 again)."""
        self.restart += 1
        self.iteration = 0

    def step(self) -> None:
        """One iteration (an M-step) begins."""
        self.iteration += 1
        self.steps += 1

    def _cause(self, key: tuple) -> _Cause:
        return self._causes.setdefault(key, _Cause())

    def degenerate(self, block: str, states) -> None:
        """Record degenerate states of a parameter block in the current iteration.

        The states had no posterior mass, or a variance at the floor, in the current
        iteration's M-step (their parameters were kept or floored).

        Parameters
        ----------
        block : str
            The parameter block (``"emission"``, ``"transmat"``, ...).
        states : sequence of int or of tuple
            The degenerate states (nothing is recorded when it is empty).
        """
        if len(states):
            cause = self._cause(("degenerate", block))
            cause.states.update(int(s) if not isinstance(s, tuple) else s for s in states)
            cause.iterations.append((self.restart, self.iteration))

    def decreased(self, previous: float, value: float) -> None:
        """Record that the objective fell in the current iteration.

        Parameters
        ----------
        previous : float
            The objective before.
        value : float
            The objective after, lower than ``previous``.
        """
        cause = self._cause(("decreased",))
        cause.iterations.append((self.restart, self.iteration))
        drop = previous - value
        if drop > cause.detail.get("drop", -1.0):
            cause.detail.update(drop=drop, previous=previous, value=value,
                                at=(self.restart, self.iteration))

    def messages(self) -> list[tuple[type, str]]:
        """Return the warning of each cause, in the order the causes first occurred.

        Returns
        -------
        list of tuple of (type, str)
            ``(warning class, message)`` per cause.
        """
        out = []
        restarts = max(self.restart, 1)
        of = (f"{self.steps} iterations" + (f" of {restarts} restarts" if restarts > 1 else ""))
        for key, cause in self._causes.items():
            n = len(set(cause.iterations))
            when = _iterations(cause.iterations, restarts)
            if key[0] == "degenerate":
                states = sorted(cause.states, key=repr)
                shown = ", ".join(map(str, states[:20])) + (", ..." if len(states) > 20 else "")
                out.append((DegenerateStateWarning,
                            f"{key[1]}: states [{shown}] had no posterior mass or a variance "
                            f"at the floor (min_covar) in {n} of {of} (iterations {when}); "
                            "their parameters were kept or floored"))
            else:
                d = cause.detail
                r, i = d["at"]
                at = f"iteration {i}" + (f" of restart {r}" if restarts > 1 else "")
                out.append((ConvergenceWarning,
                            f"objective decreased in {n} of {of} (iterations {when}); the "
                            f"largest drop, at {at}: {d['previous']:.12g} -> "
                            f"{d['value']:.12g}"))
        return out

    def issue(self, stacklevel: int | None = None) -> None:
        """Warn once per cause, and forget them.

        Parameters
        ----------
        stacklevel : int or None, default=None
            The ``stacklevel`` of the warnings; None: the user's call (the first frame
            outside the hiddenstate package).
        """
        level = user_stacklevel() if stacklevel is None else stacklevel
        for category, message in self.messages():
            warnings.warn(message, category, stacklevel=level)
        self._causes.clear()

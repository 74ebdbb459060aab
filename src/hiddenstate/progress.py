"""Progress bars for iterative fits, drawn by tqdm.

:class:`FitProgress` is a ``callback(iteration, objective)`` for every ``fit`` that takes
one (``HMM``, ``TreeNet``, ``hiddenstate.distributed.fit``, the CLI): one bar per restart,
the objective and its change since the previous iteration in the bar's postfix.
"""

from __future__ import annotations

import sys

from tqdm.auto import tqdm


class FitProgress:
    """A tqdm bar per restart, fed by ``bar(iteration, objective)``.

    The ``callback(iteration, objective)`` of every ``fit`` that takes one (``HMM``,
    ``TreeNet``, :func:`hiddenstate.distributed.fit`, the command line): one bar per restart,
    the objective and its change since the previous iteration in the bar's postfix.
    ``iteration`` counts from 1 within a restart; a value not larger than the previous one
    starts the next restart's bar. ``enabled=False`` draws nothing (the callback still
    runs, so it can be passed unconditionally). Call :meth:`close` (or use it as a context
    manager) to end the last bar.

    Parameters
    ----------
    n_iter : int
        The length of each bar (the iteration limit of the fit).
    n_init : int, default=1
        The number of restarts; with more than one, each bar says ``init i/n_init``.
    stream : file-like or None, default=None
        Where the bars are drawn; None: standard error.
    enabled : bool, default=True
        Draw the bars (False: the callback does nothing visible).
    label : str, default="log-lik"
        The name of the objective in the postfix.
    prefix : str, default="fit"
        The bar's description.
    show_delta : bool, default=True
        Show the change of the objective since the previous iteration.
    min_interval : float, default=0.1
        The minimum number of seconds between redraws (tqdm's ``mininterval``).

    Attributes
    ----------
    init : int
        The number of bars started so far (the current restart).

    Examples
    --------
    >>> import io
    >>> from hiddenstate.progress import FitProgress
    >>> screen = io.StringIO()
    >>> with FitProgress(n_iter=3, stream=screen) as bar:
    ...     for iteration, loglik in enumerate([-10.0, -9.0, -8.5], start=1):
    ...         bar(iteration, loglik)
    >>> "log-lik=-8.5, delta=+0.5" in screen.getvalue()
    True
    """

    def __init__(self, n_iter: int, n_init: int = 1, *, stream=None, enabled: bool = True,
                 label: str = "log-lik", prefix: str = "fit", show_delta: bool = True,
                 min_interval: float = 0.1):
        self.n_iter = n_iter
        self.n_init = n_init
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled
        self.label = label
        self.prefix = prefix
        self.show_delta = show_delta
        self.min_interval = min_interval
        self.init = 0
        self._bar = None
        self._last_iter = 0
        self._last_value: float | None = None

    def __call__(self, iteration: int, objective: float) -> None:
        if self._bar is None or iteration <= self._last_iter:
            self.close()
            self.init += 1
            self._last_iter, self._last_value = 0, None
            restart = f" init {self.init}/{self.n_init}" if self.n_init > 1 else ""
            self._bar = tqdm(total=self.n_iter, desc=self.prefix + restart, unit="it",
                             file=self.stream, disable=not self.enabled,
                             mininterval=self.min_interval, dynamic_ncols=True)
        postfix = {self.label: f"{objective:.6g}"}
        if self.show_delta and self._last_value is not None:
            postfix["delta"] = f"{objective - self._last_value:+.3g}"
        self._bar.set_postfix(postfix, refresh=False)
        self._bar.update(iteration - self._last_iter)
        self._last_iter, self._last_value = iteration, objective

    def close(self) -> None:
        """End the current bar, if any."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> FitProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

r"""The source protocol: a pre-trained black-box sequence model as PROPS sees it.

A *source* predicts the next symbol of a sequence over a fixed alphabet of ``n_symbols``
ids (a :class:`~hiddenstate.textio.Vocabulary` for text: id 0 is ``<unk>``, an ordinary
symbol whose probability is the mass of every word outside the vocabulary):

- :meth:`Source.reset` starts a new sequence and returns :math:`f(y_1)`, the predictive
  distribution of its first symbol (shape ``(n_symbols,)``);
- :meth:`Source.step` consumes the symbol :math:`y_t` and returns
  :math:`f(y_{t+1} \mid y_1, \dots, y_t)`; its cost must not grow with :math:`t` (carry a
  state, never replay the history);
- :meth:`Source.snapshot` / :meth:`Source.restore` save and restore the position in the
  current sequence as a dict of NumPy arrays (so a stream cut mid-sequence, checkpointed
  and resumed continues exactly);
- :meth:`Source.log_probs` gives :math:`\log f(y_t \mid y_{<t})` for a whole sequence, and
  :meth:`Source.log_probs_from` continues a sequence from a saved position; the defaults
  run ``reset``/``step``, a source may override them with a batched computation that gives
  the same numbers.

**Alignment.** The probability used for :math:`y_t` conditions on :math:`y_{<t}` only:
``reset()`` scores the first symbol, and the distribution returned by ``step(y_t)`` scores
:math:`y_{t+1}`.

:class:`CallableSource` adapts a plain function of the history. :class:`DensitySource` is the
same protocol for real-valued observation vectors (predictive densities), for PROPS with
Gaussian or Poisson perturbation states.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np

from ..errors import InvalidInputError

__all__ = ["CallableSource", "DensitySource", "Source", "check_distribution",
           "sequence_log_probs"]

#: tolerance on the sum of a predictive distribution
SUM_TOL = 1e-6


def check_distribution(p, n_symbols: int, who: str) -> np.ndarray:
    """``p`` as a float64 vector of ``n_symbols`` probabilities summing to one (within
    :data:`SUM_TOL`), else an :class:`InvalidInputError` naming ``who``."""
    p = np.asarray(p, dtype=np.float64)
    if p.shape != (n_symbols,):
        raise InvalidInputError(
            f"{who}: expected a predictive distribution of shape ({n_symbols},), got "
            f"{p.shape}")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise InvalidInputError(f"{who}: the predictive distribution has negative or "
                                "non-finite entries")
    if abs(p.sum() - 1.0) > SUM_TOL:
        raise InvalidInputError(
            f"{who}: the predictive distribution sums to {p.sum()!r}, not 1; normalise it")
    return p


class Source(ABC):
    """A stateful next-symbol predictor over ``n_symbols`` ids (see the module docstring).

    Subclasses set ``n_symbols`` (and ``vocabulary`` for text sources, else None) and
    implement :meth:`reset`, :meth:`step`, :meth:`snapshot` and :meth:`restore`.
    """

    n_symbols: int
    vocabulary = None

    @abstractmethod
    def reset(self) -> np.ndarray:
        """Start a new sequence; return the distribution of its first symbol."""

    @abstractmethod
    def step(self, y: int) -> np.ndarray:
        """Consume symbol ``y``; return the distribution of the next symbol."""

    @abstractmethod
    def snapshot(self) -> dict[str, np.ndarray]:
        """The position in the current sequence (arrays only)."""

    @abstractmethod
    def restore(self, snapshot: dict[str, np.ndarray]) -> None:
        """Return to a position saved by :meth:`snapshot`."""

    def log_probs(self, y: np.ndarray) -> np.ndarray:
        r""":math:`\log f(y_t \mid y_{<t})` for ``t = 0 .. len(y) - 1`` of one sequence
        (resets the source; leaves it after the last symbol)."""
        y = np.asarray(y, dtype=np.int64)
        out = np.empty(len(y))
        p = self.reset()
        for t, w in enumerate(y):
            out[t] = p[w]
            if t + 1 < len(y):
                p = self.step(int(w))
        with np.errstate(divide="ignore"):
            return np.log(out)

    def log_probs_from(self, y: np.ndarray, start: dict | None = None
                       ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        r"""Like :meth:`log_probs`, continuing the sequence at the position ``start`` (a
        dict returned by an earlier call; None: a new sequence). Returns the log-probabilities
        and the position after the last symbol: the snapshot plus ``"next"``, the
        distribution of the symbol that would follow (arrays only, so it can be saved)."""
        y = np.asarray(y, dtype=np.int64)
        if start is None:
            p = self.reset()
        else:
            self.restore({k: v for k, v in start.items() if k != "next"})
            p = np.asarray(start["next"], dtype=np.float64)
        out = np.empty(len(y))
        for t, w in enumerate(y):
            out[t] = p[w]
            p = self.step(int(w))
        with np.errstate(divide="ignore"):
            return np.log(out), {**self.snapshot(), "next": np.asarray(p, dtype=np.float64)}

    def describe(self) -> str:
        """One line for reports."""
        return f"{type(self).__name__}(n_symbols={self.n_symbols})"

    def check_position(self, position, prefix: str = "") -> None:
        """Raise :class:`InvalidInputError` (naming ``prefix + key``) unless ``position`` is a
        position :meth:`log_probs_from` could have returned: the keys of :meth:`snapshot`
        (accepted by :meth:`restore`, which moves the source there) and, for a symbol
        source, ``"next"``, a distribution over the ``n_symbols`` symbols."""
        expected = set(self.snapshot())
        if not isinstance(self, DensitySource):
            expected.add("next")
        if not isinstance(position, dict) or set(position) != expected:
            got = sorted(position) if isinstance(position, dict) else type(position).__name__
            raise InvalidInputError(
                f"{prefix.rstrip('.')}: expected the position keys {sorted(expected)} of "
                f"{self.describe()}, got {got}; the state was modified or corrupted")
        if "next" in expected:
            nxt = position["next"]
            if not isinstance(nxt, np.ndarray) or nxt.dtype != np.float64:
                raise InvalidInputError(f"{prefix}next: expected a float64 array")
            check_distribution(nxt, self.n_symbols, prefix + "next")
        snap = {k: v for k, v in position.items() if k != "next"}
        try:
            self.restore(snap)
        except (InvalidInputError, TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"{prefix}{'/'.join(sorted(snap))}: not a position of {self.describe()} "
                f"({exc})") from None


class DensitySource(Source):
    r"""A source of real-valued observation vectors (``n_features`` columns), for PROPS with
    Gaussian or Poisson perturbation states: :meth:`reset`, :meth:`step` (consuming an
    observation ``x`` of shape ``(n_features,)``) and :meth:`predictive` return the
    predictive distribution as an object with ``logpdf(x)``, the log-density of the vector
    ``x`` (an array of per-feature log-densities is summed: independent features, as a
    frozen univariate ``scipy.stats`` distribution gives) (and, for
    :meth:`hiddenstate.PROPS.sample`, ``sample(rng) -> x``), e.g. a frozen
    ``scipy.stats`` distribution with a ``sample`` method added.

    :meth:`log_probs` gives :math:`\log f(x_t \mid x_{<t})` (log-densities); the position
    saved by :meth:`log_probs_from` is the snapshot alone (the predictive distribution is
    rebuilt by :meth:`predictive` after :meth:`restore`).
    """

    n_features: int
    n_symbols = None

    @abstractmethod
    def predictive(self):
        """The predictive distribution at the current position."""

    def log_probs(self, y: np.ndarray) -> np.ndarray:
        X = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
        out = np.empty(len(X))
        d = self.reset()
        for t, x in enumerate(X):
            out[t] = np.sum(d.logpdf(x))
            if t + 1 < len(X):
                d = self.step(x)
        return out

    def log_probs_from(self, y: np.ndarray, start: dict | None = None
                       ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        X = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
        if start is None:
            d = self.reset()
        else:
            self.restore(start)
            d = self.predictive()
        out = np.empty(len(X))
        for t, x in enumerate(X):
            out[t] = np.sum(d.logpdf(x))
            d = self.step(x)
        return out, self.snapshot()

    def describe(self) -> str:
        return f"{type(self).__name__}(n_features={self.n_features})"


class CallableSource(Source):
    """Adapter for ``fn(history) -> probabilities``: ``history`` is the 1-D int64 array of
    the symbols seen so far in the sequence (empty at its start). The adapter keeps the
    history, so each call costs whatever ``fn`` costs on it; every returned distribution is
    checked (shape, non-negative, sums to one)."""

    def __init__(self, fn: Callable[[np.ndarray], np.ndarray], n_symbols: int,
                 name: str | None = None, vocabulary=None):
        if not callable(fn):
            raise InvalidInputError(f"fn: expected a callable of the history, got {fn!r}")
        if isinstance(n_symbols, bool) or not isinstance(n_symbols, (int, np.integer)) \
                or n_symbols < 1:
            raise InvalidInputError(f"n_symbols: expected an integer >= 1, got {n_symbols!r}")
        self.fn = fn
        self.n_symbols = int(n_symbols)
        self.name = name or getattr(fn, "__name__", "callable")
        self.vocabulary = vocabulary
        self._history: list[int] = []

    def _call(self) -> np.ndarray:
        p = self.fn(np.array(self._history, dtype=np.int64))
        return check_distribution(p, self.n_symbols, f"source {self.name!r}")

    def reset(self) -> np.ndarray:
        self._history = []
        return self._call()

    def step(self, y: int) -> np.ndarray:
        self._history.append(int(y))
        return self._call()

    def snapshot(self) -> dict[str, np.ndarray]:
        return {"history": np.array(self._history, dtype=np.int64)}

    def restore(self, snapshot: dict[str, np.ndarray]) -> None:
        self._history = [int(v) for v in np.asarray(snapshot["history"]).ravel()]

    def describe(self) -> str:
        return f"callable {self.name!r} (n_symbols={self.n_symbols})"


def sequence_log_probs(source: Source, y: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    r""":math:`\log f(y_t \mid y_{<t})` for concatenated sequences (each one restarts the
    source), shape ``(len(y),)`` (``y``: symbols, or rows of a :class:`DensitySource`)."""
    out = np.empty(len(y))
    start = 0
    for n in lengths:
        out[start:start + n] = source.log_probs(y[start:start + n])
        start += n
    return out

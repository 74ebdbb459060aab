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

**Missing history.** A sequence may have holes: a missing symbol is the marker
:data:`MISSING` (``-1``), a missing observation vector of a :class:`DensitySource` a row of
NaN. A source that sets :attr:`Source.supports_missing` (``True``) accepts the marker in
:meth:`Source.step` (``step(MISSING)``, ``step(nan_row)``): the history it conditions on
keeps the hole, and it returns its prediction of the next symbol *given the observed
symbols and the position of the hole*, by a rule it documents (the exact conditional
for a hole at :math:`t`,
:math:`\sum_w f(w \mid y_{<t})\, f(y_{t+1} \mid y_{<t}, w)`, would run the source once per
possible symbol, and a second hole multiplies that):
:class:`~hiddenstate.sources.KneserNeySource` backs off to the context after the last hole,
:class:`~hiddenstate.sources.LSTMSource` feeds the expected embedding under its own
predictive distribution, :class:`CallableSource` passes the marker on to the function (which
must declare that it handles it). :meth:`Source.log_probs` gives ``0`` (log 1) at a missing
position: a missing observation has no emission term. A source that does not declare support
is refused where missing data meets it (PROPS checks before computing anything), with an
error that names the source and the fix.

:class:`CallableSource` adapts a plain function of the history. :class:`DensitySource` is the
same protocol for real-valued observation vectors (predictive densities), for PROPS with
Gaussian or Poisson perturbation states.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np

from .._validation import MISSING_SYMBOL, check_memory, check_positive_int, check_symbols
from ..errors import InvalidInputError
from ..textio import Vocabulary

__all__ = ["MISSING", "CallableSource", "DensitySource", "ProtocolDensitySource", "ProtocolSource",
           "Source", "as_source", "check_distribution", "check_symbol",
           "require_missing_support", "resolve_alphabet", "sequence_log_probs"]

#: the marker of a missing symbol in a source's history (see the module docstring)
MISSING = MISSING_SYMBOL

#: tolerance on the sum of a predictive distribution
SUM_TOL = 1e-6
#: an alphabet inferred as ``max(X) + 1`` larger than this must be at least half used
#: (see :func:`resolve_alphabet`)
SPARSE_MIN = 1024


def check_distribution(p, n_symbols: int, who: str) -> np.ndarray:
    """Check a predictive distribution returned by a source.

    Parameters
    ----------
    p : array-like
        What the source returned.
    n_symbols : int
        The size of its alphabet.
    who : str
        How the error names the source.

    Returns
    -------
    ndarray of shape (n_symbols,), dtype float64
        ``p``: finite, non-negative, summing to one within :data:`SUM_TOL` (1e-6).

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``p`` is not such a vector; the message names ``who``.

    Examples
    --------
    >>> from hiddenstate.sources import check_distribution
    >>> check_distribution([0.25, 0.75], 2, "source")
    array([0.25, 0.75])
    >>> check_distribution([0.5, 0.6], 2, "source")
    Traceback (most recent call last):
    ...
    hiddenstate.errors.InvalidInputError: source: the predictive distribution sums to 1.1, ...
    """
    try:
        p = np.asarray(p, dtype=np.float64)
    except (TypeError, ValueError, RuntimeError) as exc:  # RuntimeError: a torch tensor
        raise InvalidInputError(                               # that requires grad
            f"{who}: returned {type(p).__name__}, not an array of {n_symbols} probabilities "
            f"({exc})") from None
    if p.shape != (n_symbols,):
        raise InvalidInputError(
            f"{who}: expected a predictive distribution of shape ({n_symbols},), got "
            f"{p.shape}")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise InvalidInputError(f"{who}: the predictive distribution has negative or "
                                "non-finite entries")
    if abs(p.sum() - 1.0) > SUM_TOL:
        raise InvalidInputError(
            f"{who}: the predictive distribution sums to {float(p.sum())!r}, not 1; normalise it")
    return p


def resolve_alphabet(X, n_symbols, vocabulary, memory: Callable[[int], float] | None = None,
                     what: str = "the model", device: str = "cpu",
                     fix: str = "use a smaller vocabulary (e.g. Vocabulary.build(..., "
                                "max_size=...))") -> tuple[np.ndarray, int]:
    """``(y, W)``: the training symbols ``X`` as 1-D int64 and the alphabet size of a source.

    ``W`` is ``n_symbols`` if given, else ``len(vocabulary)``, else ``max(X) + 1``; each
    symbol must be below it. An inferred size above :data:`SPARSE_MIN` of which fewer than
    half the ids occur is refused (ids such as ``[0, 10**7]`` are an encoding mistake, not a
    ten-million-word alphabet: pass ``n_symbols`` to mean it). ``memory(W)`` (bytes) is
    checked against the memory of ``device`` before the caller allocates anything; the
    error names the argument that set ``W`` and ``fix``.
    """
    y = check_symbols(X, None, "X")
    if vocabulary is not None and not isinstance(vocabulary, Vocabulary):
        raise InvalidInputError(
            f"vocabulary: expected a hiddenstate.textio.Vocabulary or None, got "
            f"{type(vocabulary).__name__}")
    top = int(y.max())
    if n_symbols is not None:
        W = check_positive_int(n_symbols, "n_symbols")
        if vocabulary is not None and W != len(vocabulary):
            raise InvalidInputError(
                f"n_symbols: {W} differs from the vocabulary size {len(vocabulary)}; pass one "
                "of them or make them agree")
        who = "n_symbols"
    elif vocabulary is not None:
        W, who = len(vocabulary), "vocabulary"
    else:
        W, who = top + 1, f"X (n_symbols inferred as max(X) + 1 = {top + 1})"
        used = len(np.unique(y))
        if W > SPARSE_MIN and 2 * used < W:
            raise InvalidInputError(
                f"X: the largest symbol is {top} but only {used} distinct symbols occur, so "
                f"the alphabet inferred as max(X) + 1 = {W} would be mostly unused ids; number "
                f"the symbols 0 .. {used - 1} (hiddenstate.textio.Vocabulary does), or pass "
                "n_symbols (or a vocabulary) to mean that alphabet")
    if top >= W:
        raise InvalidInputError(
            f"X: symbol {top} is out of range for n_symbols={W}; symbols are 0 .. {W - 1}"
            + (" (the vocabulary's ids)" if vocabulary is not None else "")
            + "; pass n_symbols (or a vocabulary) covering every symbol")
    if memory is not None:
        check_memory({who: memory(W)}, f"{what} over {W:,} symbols", {who: fix}, device)
    return y, W


def check_symbol(y, n_symbols: int, name: str = "y", allow_missing: bool = False) -> int:
    """``y`` as an int in ``0 .. n_symbols - 1`` (the argument of :meth:`Source.step`);
    with ``allow_missing`` also :data:`MISSING`."""
    lowest = MISSING if allow_missing else 0
    if isinstance(y, (bool, np.bool_)) or not isinstance(y, (int, np.integer)) \
            or not lowest <= int(y) < n_symbols:
        raise InvalidInputError(
            f"{name}: expected a symbol id in 0 .. {n_symbols - 1}"
            + (f" or {MISSING} (missing)" if allow_missing else "") + f", got {y!r}")
    return int(y)


def require_missing_support(source, who: str, reason: str, dense: bool) -> None:
    """Refuse a source that does not declare that it takes missing history.

    PROPS calls it before computing anything where missing data meets a source.

    Parameters
    ----------
    source : object
        A source (or an adapter of one); it takes missing history when its
        ``supports_missing`` is exactly True (:attr:`Source.supports_missing`).
    who : str
        How the error names the source.
    reason : str
        What is missing, for the message ("X has missing symbols").
    dense : bool
        Whether the source predicts vectors (its missing marker is a row of NaN) rather
        than symbols (the marker :data:`MISSING`).

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If the source does not declare support; the message names ``who`` and says how to
        add it.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.sources import CallableSource, require_missing_support
    >>> uniform = CallableSource(lambda history: np.full(3, 1 / 3), n_symbols=3)
    >>> require_missing_support(uniform, "source", "X has missing symbols", dense=False)
    Traceback (most recent call last):
    ...
    hiddenstate.errors.InvalidInputError: source (CallableSource) does not declare ...
    """
    if getattr(source, "supports_missing", False) is True:
        return
    marker = "a row of NaN" if dense else f"the symbol {MISSING}"
    name = type(getattr(source, "obj", source)).__name__
    raise InvalidInputError(
        f"{who} ({name}) does not declare that it takes missing history, but {reason}; "
        "make its step() "
        f"accept the missing marker ({marker}) and return its prediction of the next "
        "observation given the history with that hole, then set supports_missing = True on "
        "it (CallableSource(..., supports_missing=True) for a function of the history; see "
        "docs/props.md), or fill the missing observations in first")


class Source(ABC):
    """The source protocol: a stateful next-symbol predictor over ``n_symbols`` ids.

    Subclasses set ``n_symbols`` (and ``vocabulary`` for text sources, else None) and
    implement :meth:`reset`, :meth:`step`, :meth:`snapshot` and :meth:`restore`; see the
    module docstring (:mod:`hiddenstate.sources.base`) for the alignment of the
    predictions and the rules for missing history. A plain object with ``reset``, ``step``
    and ``n_symbols`` works too (:func:`as_source` wraps it).

    See Also
    --------
    CallableSource : A function of the history as a source.
    KneserNeySource, LSTMSource : Trained language models.
    hiddenstate.PROPS : The model that personalises a source.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.sources import Source
    >>> class Sticky(Source):
    ...     # next symbol: the last one with probability 0.9
    ...     n_symbols = 2
    ...     def reset(self):
    ...         self.last = None
    ...         return np.array([0.5, 0.5])
    ...     def step(self, y):
    ...         self.last = y
    ...         return np.where(np.arange(2) == y, 0.9, 0.1)
    ...     def snapshot(self):
    ...         return {"last": np.array([-2 if self.last is None else self.last])}
    ...     def restore(self, snapshot):
    ...         last = int(snapshot["last"][0])
    ...         self.last = None if last == -2 else last
    >>> src = Sticky()
    >>> np.exp(src.log_probs(np.array([0, 0, 1])))
    array([0.5, 0.9, 0.1])
    """

    n_symbols: int
    vocabulary = None
    #: whether :meth:`step` takes the missing marker (:data:`MISSING`; a NaN row for a
    #: :class:`DensitySource`) and predicts past the hole (see the module docstring)
    supports_missing: bool = False

    @abstractmethod
    def reset(self) -> np.ndarray:
        """Start a new sequence.

        Returns
        -------
        ndarray of shape (n_symbols,)
            The predictive distribution of its first symbol.
        """

    @abstractmethod
    def step(self, y: int) -> np.ndarray:
        """Consume one symbol of the current sequence.

        Its cost must not grow with the position (carry a state, never replay the history).

        Parameters
        ----------
        y : int
            The symbol, in ``0 .. n_symbols - 1``; :data:`MISSING` (``-1``) for a hole,
            only where :attr:`supports_missing` is True.

        Returns
        -------
        ndarray of shape (n_symbols,)
            The predictive distribution of the next symbol.
        """

    @abstractmethod
    def snapshot(self) -> dict[str, np.ndarray]:
        """Return the position in the current sequence.

        Returns
        -------
        dict of str to ndarray
            Arrays only (so a checkpoint saves it as npz); :meth:`restore` returns to it.
        """

    @abstractmethod
    def restore(self, snapshot: dict[str, np.ndarray]) -> None:
        """Return to a position saved by :meth:`snapshot`.

        Parameters
        ----------
        snapshot : dict of str to ndarray
            What :meth:`snapshot` returned.
        """

    def log_probs(self, y: np.ndarray) -> np.ndarray:
        r"""Score every symbol of one sequence given the symbols before it.

        Resets the source, then runs :meth:`step` over the sequence and leaves the source
        there (after ``y[:-1]``). A missing symbol (:data:`MISSING`) scores 0 and is passed
        on to :meth:`step`. A source may override this with a batched computation that
        gives the same numbers.

        Parameters
        ----------
        y : array-like of int, shape (T,)
            The sequence.

        Returns
        -------
        ndarray of shape (T,)
            :math:`\log f(y_t \mid y_{<t})` for ``t = 0 .. T - 1``.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the source returns something that is not a distribution over its symbols.
        """
        y = np.asarray(y, dtype=np.int64)
        W, who = self.n_symbols, self._who()
        out = np.empty(len(y))
        p = check_distribution(self.reset(), W, who)
        for t, w in enumerate(y):
            out[t] = p[w] if w >= 0 else 1.0
            if t + 1 < len(y):
                p = check_distribution(self.step(int(w)), W, who)
        with np.errstate(divide="ignore"):
            return np.log(out)

    def log_probs_from(self, y: np.ndarray, start: dict | None = None
                       ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        r"""Score symbols continuing a sequence from a saved position.

        Like :meth:`log_probs`, but from the position ``start`` and returning the position
        after the last symbol, so a stream cut mid-sequence continues exactly.

        Parameters
        ----------
        y : array-like of int, shape (T,)
            The next symbols of the sequence.
        start : dict or None, default=None
            A position returned by an earlier call; None: a new sequence.

        Returns
        -------
        log_probs : ndarray of shape (T,)
            :math:`\log f(y_t \mid \text{start}, y_{<t})`.
        position : dict of str to ndarray
            The snapshot after the last symbol plus ``"next"``, the distribution of the
            symbol that would follow (arrays only, so it can be saved).

        Examples
        --------
        >>> import numpy as np
        >>> from hiddenstate.sources import Source
        >>> class Sticky(Source):
        ...     # next symbol: the last one with probability 0.9
        ...     n_symbols = 2
        ...     def reset(self):
        ...         self.last = None
        ...         return np.array([0.5, 0.5])
        ...     def step(self, y):
        ...         self.last = y
        ...         return np.where(np.arange(2) == y, 0.9, 0.1)
        ...     def snapshot(self):
        ...         return {"last": np.array([-2 if self.last is None else self.last])}
        ...     def restore(self, snapshot):
        ...         last = int(snapshot["last"][0])
        ...         self.last = None if last == -2 else last
        >>> src = Sticky()
        >>> first, position = src.log_probs_from(np.array([0, 0]))
        >>> rest, _ = src.log_probs_from(np.array([1]), position)   # resumes after 0, 0
        >>> np.exp(np.concatenate([first, rest]))
        array([0.5, 0.9, 0.1])
        """
        y = np.asarray(y, dtype=np.int64)
        W, who = self.n_symbols, self._who()
        if start is None:
            p = check_distribution(self.reset(), W, who)
        else:
            self.restore({k: v for k, v in start.items() if k != "next"})
            p = check_distribution(start["next"], W, "start['next']")
        out = np.empty(len(y))
        for t, w in enumerate(y):
            out[t] = p[w] if w >= 0 else 1.0
            p = check_distribution(self.step(int(w)), W, who)
        with np.errstate(divide="ignore"):
            return np.log(out), {**self.snapshot(), "next": np.asarray(p, dtype=np.float64)}

    def describe(self) -> str:
        """Describe the source in one line, for reports.

        Returns
        -------
        str
            The class and its alphabet size, unless a subclass says more.
        """
        return f"{type(self).__name__}(n_symbols={self.n_symbols})"

    def _who(self) -> str:
        """How errors about what this source returned name it."""
        return f"source {type(self).__name__}"

    def check_position(self, position, prefix: str = "") -> None:
        """Check a position that did not come from the source (a loaded checkpoint).

        A valid position is one :meth:`log_probs_from` could have returned: the keys of
        :meth:`snapshot` (accepted by :meth:`restore`, which moves the source there) and,
        for a symbol source, ``"next"``, a distribution over the ``n_symbols`` symbols.

        Parameters
        ----------
        position : dict
            The position to check.
        prefix : str, default=""
            Prepended to the key in the error message (where the position came from).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``position`` is not such a position; the message names ``prefix + key``.
        """
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
    r"""The source protocol for real-valued observation vectors (predictive densities).

    For PROPS with Gaussian or Poisson perturbation states, over ``n_features`` columns:
    :meth:`reset`, :meth:`step` (consuming an observation ``x`` of shape
    ``(n_features,)``) and :meth:`predictive` return the
    predictive distribution as an object with ``logpdf(x)``, the log-density of the vector
    ``x`` (an array of per-feature log-densities is summed: independent features, as a
    frozen univariate ``scipy.stats`` distribution gives) (and, for
    :meth:`hiddenstate.PROPS.sample`, ``sample(rng) -> x``), e.g. a frozen
    ``scipy.stats`` distribution with a ``sample`` method added.

    :meth:`log_probs` gives :math:`\log f(x_t \mid x_{<t})` (log-densities); the position
    saved by :meth:`log_probs_from` is the snapshot alone (the predictive distribution is
    rebuilt by :meth:`predictive` after :meth:`restore`).

    See Also
    --------
    Source : The protocol for symbols.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> from hiddenstate.sources import DensitySource
    >>> class RandomWalk(DensitySource):
    ...     # x_{t+1} ~ N(x_t, 1), starting from N(0, 1)
    ...     n_features = 1
    ...     def reset(self):
    ...         self.last = np.zeros(1)
    ...         return self.predictive()
    ...     def step(self, x):
    ...         self.last = np.asarray(x, dtype=float)
    ...         return self.predictive()
    ...     def predictive(self):
    ...         return stats.norm(self.last, 1.0)
    ...     def snapshot(self):
    ...         return {"last": self.last.copy()}
    ...     def restore(self, snapshot):
    ...         self.last = np.asarray(snapshot["last"], dtype=float)
    >>> np.round(RandomWalk().log_probs(np.array([[0.0], [1.0], [3.0]])), 4)
    array([-0.9189, -1.4189, -2.9189])
    """

    n_features: int
    n_symbols = None

    @abstractmethod
    def predictive(self):
        """Return the predictive distribution at the current position.

        Returns
        -------
        object
            A distribution with ``logpdf(x)`` (and ``sample(rng)`` for
            :meth:`hiddenstate.PROPS.sample`), e.g. a frozen ``scipy.stats`` distribution.
        """

    def log_probs(self, y: np.ndarray) -> np.ndarray:
        X = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
        out = np.empty(len(X))
        d = self.reset()
        for t, x in enumerate(X):
            out[t] = _row_logpdf(d, x)
            if t + 1 < len(X):
                d = self.step(x)
        return _checked_log_densities(out, self._who())

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
            out[t] = _row_logpdf(d, x)
            d = self.step(x)
        return _checked_log_densities(out, self._who()), self.snapshot()

    def describe(self) -> str:
        return f"{type(self).__name__}(n_features={self.n_features})"


def _row_logpdf(d, x: np.ndarray) -> float:
    """``log d(x)`` (per-feature log-densities summed); 0 for a missing row (every entry
    NaN: no emission term)."""
    if np.isnan(x[0]) and np.isnan(x).all():
        return 0.0
    return np.sum(d.logpdf(x))


def _checked_log_densities(out: np.ndarray, who: str) -> np.ndarray:
    """Log-densities from a :class:`DensitySource`: ``-inf`` (density zero) is allowed, NaN
    and ``+inf`` are not."""
    bad = np.isnan(out) | (out == np.inf)
    if np.any(bad):
        raise InvalidInputError(
            f"{who}: logpdf returned {out[bad][0]} at observation {int(np.argmax(bad))}; a "
            "predictive density must give finite log-densities (or -inf)")
    return out


class _Adapter:
    """What the adapters of plain objects share: the wrapped object, how errors name it,
    and the optional ``snapshot()``/``restore(d)`` pair."""

    def _wrap(self, obj, who: str, methods: tuple[str, ...], size: str) -> int:
        missing = [m for m in methods if not callable(getattr(obj, m, None))]
        n = getattr(obj, size, None)
        if missing or isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) \
                or n < 1:
            lack = ", ".join(f"{m}()" for m in missing) or f"an integer {size} >= 1"
            raise InvalidInputError(
                f"{who} ({type(obj).__name__}) is not a source: it lacks {lack}; a source "
                f"has {', '.join(f'{m}()' for m in methods)} and {size} (see docs/props.md), "
                "or wrap a function of the history in hiddenstate.sources.CallableSource")
        self.obj, self.who = obj, who
        # the object's own declaration (exactly True) that step() takes the missing marker
        self.supports_missing = getattr(obj, "supports_missing", False) is True
        return int(n)

    def _who(self) -> str:
        return self.who

    def snapshot(self) -> dict[str, np.ndarray]:
        """Return the wrapped object's ``snapshot()``, or ``{}`` when it has none.

        Without one :meth:`restore` refuses: the position cannot be restored.

        Returns
        -------
        dict of str to ndarray
            The position.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the object's ``snapshot()`` does not return a dict keyed by strings.
        """
        fn = getattr(self.obj, "snapshot", None)
        if fn is None:
            return {}
        snap = fn()
        if not isinstance(snap, dict) or not all(isinstance(k, str) for k in snap):
            raise InvalidInputError(
                f"{self.who}: snapshot() returned {type(snap).__name__}; it must return a dict "
                "of NumPy arrays keyed by strings")
        return {k: np.asarray(v) for k, v in snap.items()}

    def restore(self, snapshot: dict[str, np.ndarray]) -> None:
        self.check_restorable()
        self.obj.restore(snapshot)

    def check_restorable(self) -> None:
        """Refuse an object without ``snapshot()`` and ``restore(d)``.

        A stream continued mid-sequence (``partial_fit(continues=True)``) needs both.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If either method is missing.
        """
        if not callable(getattr(self.obj, "restore", None)) \
                or not callable(getattr(self.obj, "snapshot", None)):
            raise InvalidInputError(
                f"{self.who}: a {type(self.obj).__name__} has no snapshot()/restore(), so it "
                "cannot continue a sequence where an earlier call left it (partial_fit("
                "continues=True)); add both methods (see docs/props.md) or start a new "
                "sequence (continues=False)")

    def describe(self) -> str:
        fn = getattr(self.obj, "describe", None)
        return str(fn()) if callable(fn) else type(self.obj).__name__


class ProtocolSource(_Adapter, Source):
    """A plain object that follows the source protocol, seen as a :class:`Source`.

    The object has ``reset()``, ``step(y)`` and an integer ``n_symbols``; optionally
    ``snapshot()``/``restore(d)``, ``vocabulary``, ``describe()`` and ``supports_missing``.
    Every distribution it returns is checked (shape, finite, non-negative, sums to one).
    :class:`~hiddenstate.PROPS` wraps such objects itself (:func:`as_source`).

    Parameters
    ----------
    obj : object
        The object.
    who : str, default="source"
        How errors name it.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``obj`` lacks ``reset``, ``step`` or a positive integer ``n_symbols``, or its
        ``vocabulary`` does not match ``n_symbols``.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.sources import ProtocolSource
    >>> class Sticky:
    ...     n_symbols = 2
    ...     def reset(self):
    ...         return [0.5, 0.5]
    ...     def step(self, y):
    ...         return [0.9, 0.1] if y == 0 else [0.1, 0.9]
    >>> np.exp(ProtocolSource(Sticky()).log_probs(np.array([0, 0, 1])))
    array([0.5, 0.9, 0.1])
    """

    def __init__(self, obj, who: str = "source"):
        W = self._wrap(obj, who, ("reset", "step"), "n_symbols")
        vocabulary = getattr(obj, "vocabulary", None)
        if vocabulary is not None and (not isinstance(vocabulary, Vocabulary)
                                       or len(vocabulary) != W):
            raise InvalidInputError(
                f"{who}: its vocabulary must be None or a hiddenstate.textio.Vocabulary of "
                f"n_symbols = {W} tokens, got {vocabulary!r}")
        self.n_symbols, self.vocabulary = W, vocabulary

    def reset(self) -> np.ndarray:
        return check_distribution(self.obj.reset(), self.n_symbols, self.who)

    def step(self, y: int) -> np.ndarray:
        if y is MISSING or (isinstance(y, (int, np.integer)) and y == MISSING):
            require_missing_support(self, f"y: {self.who}", f"y is the missing marker {MISSING}",
                                    dense=False)
        y = check_symbol(y, self.n_symbols, allow_missing=True)
        return check_distribution(self.obj.step(y), self.n_symbols, self.who)


class ProtocolDensitySource(_Adapter, DensitySource):
    """A plain object that follows the density protocol, seen as a :class:`DensitySource`.

    The object has ``reset()``, ``step(x)``, ``predictive()`` and an integer
    ``n_features``; optionally ``snapshot()``/``restore(d)`` and ``supports_missing``.
    Every predictive distribution must have ``logpdf``, and log-densities must not be NaN
    or ``+inf``.

    Parameters
    ----------
    obj : object
        The object.
    who : str, default="source"
        How errors name it.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``obj`` lacks ``reset``, ``step``, ``predictive`` or a positive integer
        ``n_features``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> from hiddenstate.sources import ProtocolDensitySource
    >>> class Still:
    ...     n_features = 1
    ...     def reset(self):
    ...         return stats.norm(0.0, 1.0)
    ...     def step(self, x):
    ...         return stats.norm(x, 1.0)
    ...     def predictive(self):
    ...         return stats.norm(0.0, 1.0)
    >>> np.round(ProtocolDensitySource(Still()).log_probs(np.array([[0.0], [0.0]])), 4)
    array([-0.9189, -0.9189])
    """

    def __init__(self, obj, who: str = "source"):
        self.n_features = self._wrap(obj, who, ("reset", "step", "predictive"), "n_features")

    def _checked(self, d):
        if not callable(getattr(d, "logpdf", None)):
            raise InvalidInputError(
                f"{self.who}: returned a {type(d).__name__}, not a predictive distribution "
                "with logpdf(x) (e.g. a frozen scipy.stats distribution)")
        return d

    def reset(self):
        return self._checked(self.obj.reset())

    def step(self, x):
        x = np.asarray(x, dtype=np.float64)
        if np.isnan(x).all():
            require_missing_support(self, f"x: {self.who}", "x is a missing row (all NaN)",
                                    dense=True)
        return self._checked(self.obj.step(x))

    def predictive(self):
        return self._checked(self.obj.predictive())


def as_source(obj, dense: bool, who: str = "source", needed_by: str = "the model") -> Source:
    """Return an object as a source of symbols or of vectors.

    A :class:`Source` subclass is returned as it is, a plain object that follows the
    protocol is wrapped (:class:`ProtocolSource`, :class:`ProtocolDensitySource`).

    Parameters
    ----------
    obj : object
        A source or a plain object that follows the protocol.
    dense : bool
        True: a source of real-valued vectors (a :class:`DensitySource`); False: of
        symbols.
    who : str, default="source"
        How errors name it.
    needed_by : str, default="the model"
        What needs it, for the error message.

    Returns
    -------
    Source
        ``obj`` itself or its adapter.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``obj`` is a source of the other kind or does not follow the protocol; the
        message names ``who``.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.sources import CallableSource, as_source
    >>> uniform = CallableSource(lambda history: np.full(3, 1 / 3), n_symbols=3)
    >>> as_source(uniform, dense=False) is uniform
    True
    """
    if isinstance(obj, Source):
        if isinstance(obj, DensitySource) != dense:
            raise InvalidInputError(
                f"{who} is a {type(obj).__name__}, but {needed_by} needs a source that predicts "
                + ("real-valued vectors (a DensitySource)" if dense
                   else "symbols (a Source, not a DensitySource)"))
        return obj
    return ProtocolDensitySource(obj, who) if dense else ProtocolSource(obj, who)


class CallableSource(Source):
    """A function of the history as a source.

    ``fn(history)`` returns the probabilities of the next symbol; ``history`` is the 1-D
    int64 array of the symbols seen so far in the sequence (empty at its start). The
    adapter keeps the history, so each call costs whatever ``fn`` costs on it; every
    returned distribution is checked (shape, non-negative, sums to one).

    ``supports_missing=True`` declares that ``fn`` handles holes: a missing symbol stays in
    the history as :data:`MISSING` (``-1``; careful, ``p[history[-1]]`` would silently read
    the last symbol's entry), and ``fn`` returns its prediction given that history. Without
    it, data with missing symbols is refused.

    Parameters
    ----------
    fn : callable
        ``fn(history) -> probabilities`` over ``n_symbols`` symbols.
    n_symbols : int
        The alphabet size.
    name : str or None, default=None
        How reports and errors name it; None: ``fn.__name__``.
    vocabulary : Vocabulary or None, default=None
        The token mapping of a text source (``n_symbols`` tokens).
    supports_missing : bool, default=False
        Whether ``fn`` handles the missing marker in the history.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``fn`` is not callable, ``n_symbols`` is not a positive integer, or ``name``,
        ``vocabulary`` or ``supports_missing`` is of the wrong kind.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.sources import CallableSource
    >>> def repeat(history):                 # the last symbol again, with probability 0.8
    ...     if len(history) == 0:
    ...         return np.full(3, 1 / 3)
    ...     return np.where(np.arange(3) == history[-1], 0.8, 0.1)
    >>> src = CallableSource(repeat, n_symbols=3)
    >>> np.round(np.exp(src.log_probs(np.array([2, 2, 0]))), 3)
    array([0.333, 0.8  , 0.1  ])
    """

    def __init__(self, fn: Callable[[np.ndarray], np.ndarray], n_symbols: int,
                 name: str | None = None, vocabulary=None, supports_missing: bool = False):
        if not callable(fn):
            raise InvalidInputError(f"fn: expected a callable of the history, got {fn!r}")
        n_symbols = check_positive_int(n_symbols, "n_symbols")
        if name is not None and not isinstance(name, str):
            raise InvalidInputError(f"name: expected a string or None, got {name!r}")
        if vocabulary is not None and (not isinstance(vocabulary, Vocabulary)
                                       or len(vocabulary) != n_symbols):
            raise InvalidInputError(
                f"vocabulary: expected None or a hiddenstate.textio.Vocabulary of n_symbols = "
                f"{n_symbols} tokens, got {vocabulary!r}")
        if not isinstance(supports_missing, (bool, np.bool_)):
            raise InvalidInputError(
                f"supports_missing: expected True or False, got {supports_missing!r}")
        self.fn = fn
        self.supports_missing = bool(supports_missing)
        self.n_symbols = n_symbols
        self.name = name or getattr(fn, "__name__", "callable")
        self.vocabulary = vocabulary
        self._history: list[int] = []

    def _call(self) -> np.ndarray:
        p = self.fn(np.array(self._history, dtype=np.int64))
        return check_distribution(p, self.n_symbols, self._who())

    def reset(self) -> np.ndarray:
        self._history = []
        return self._call()

    def step(self, y: int) -> np.ndarray:
        y = check_symbol(y, self.n_symbols, allow_missing=True)
        if y == MISSING:
            require_missing_support(self, f"y: {self._who()}",
                                    f"y is the missing marker {MISSING}", dense=False)
        self._history.append(y)
        return self._call()

    def snapshot(self) -> dict[str, np.ndarray]:
        return {"history": np.array(self._history, dtype=np.int64)}

    def restore(self, snapshot: dict[str, np.ndarray]) -> None:
        history = snapshot.get("history") if isinstance(snapshot, dict) else None
        if history is not None and np.size(history):
            history = check_symbols(np.ravel(history), self.n_symbols, "snapshot",
                                    allow_missing=self.supports_missing)
        elif history is not None:
            history = np.empty(0, dtype=np.int64)
        else:
            raise InvalidInputError(
                "snapshot: expected the dict with 'history' that snapshot() returned")
        self._history = history.tolist()

    def describe(self) -> str:
        return f"callable {self.name!r} (n_symbols={self.n_symbols})"

    def _who(self) -> str:
        return f"source {self.name!r}"


def sequence_log_probs(source: Source, y: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    r"""Score concatenated sequences, each from the start of the source.

    Parameters
    ----------
    source : Source
        The source (:meth:`Source.log_probs` scores each sequence).
    y : ndarray
        The sequences one after the other: symbols, or rows of a :class:`DensitySource`.
    lengths : array-like of int
        The length of each sequence.

    Returns
    -------
    ndarray of shape (len(y),)
        :math:`\log f(y_t \mid y_{<t})` within each sequence.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.sources import CallableSource, sequence_log_probs
    >>> uniform = CallableSource(lambda history: np.full(4, 0.25), n_symbols=4)
    >>> np.exp(sequence_log_probs(uniform, np.array([0, 1, 2]), [2, 1]))
    array([0.25, 0.25, 0.25])
    """
    out = np.empty(len(y))
    start = 0
    for n in lengths:
        out[start:start + n] = source.log_probs(y[start:start + n])
        start += n
    return out

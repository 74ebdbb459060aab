r"""An interpolated Kneser-Ney n-gram language model as a PROPS source.

:class:`KneserNeySource` predicts the next symbol id from the last ``order - 1`` ids with
interpolated Kneser-Ney smoothing (Kneser & Ney 1995; Chen & Goodman 1998, "An empirical
study of smoothing techniques for language modeling", TR-10-98, §3 and §4.1.6-4.1.7).

Model
-----
Write :math:`W` for ``n_symbols``, :math:`N` for ``order``, :math:`h` for a context (the
:math:`m - 1` most recent symbols, oldest first) and :math:`h'` for :math:`h` without its
oldest symbol. For every order :math:`m = 1 .. N`

.. math::

    p_m(w \mid h) = \frac{\max(a(h w) - D_m, 0)}{a(h \bullet)}
        + \frac{D_m \, N_{1+}(h \bullet)}{a(h \bullet)} \, p_{m-1}(w \mid h'),
    \qquad p_0(w) = \frac{1}{W},

where :math:`a(h \bullet) = \sum_v a(h v)` and :math:`N_{1+}(h \bullet) = |\{v : a(h v) > 0\}|`.
A context never seen in training (:math:`a(h \bullet) = 0`) passes its lower order through:
:math:`p_m(w \mid h) = p_{m-1}(w \mid h')`. The prediction is :math:`p_N(w \mid h)`.

The counts :math:`a` are the *adjusted* counts of Kneser-Ney (Chen & Goodman eq. 26, the rule
KenLM and SRILM use):

- at the highest order :math:`N`, the raw count :math:`a(g) = c(g)`;
- at a lower order, the *continuation count* :math:`a(g) = N_{1+}(\bullet g)
  = |\{v : c(v g) > 0\}|`, the number of distinct symbols seen just before :math:`g`
  (the beginning-of-sequence marker counts as one);
- an n-gram that starts with the beginning-of-sequence marker cannot be extended to the
  left, so it keeps its raw count at every order.

Sequences. Every sequence starts from a context holding one beginning-of-sequence marker
(``BOS``, internally the id ``n_symbols``). ``BOS`` is conditioned on, never predicted, and
contexts never reach back past it: the first symbol is scored with the bigram context
``(BOS)``, the second with ``(BOS, y_1)``, ... until ``order - 1`` real symbols are
available. There is no end-of-sequence symbol, so each distribution is over exactly
``n_symbols`` ids.

Unseen symbols. The lowest order interpolates with the uniform distribution over the
``n_symbols`` ids, and every discount is in :math:`(0, 1)`, so every id -- including ids never
seen in training -- has strictly positive probability in every context. Together with
:class:`~hiddenstate.textio.Vocabulary` (id 0 is ``<unk>``, which collects out-of-vocabulary
words and is counted like any other id) this is the unknown-word policy.

Missing history. A missing symbol (the marker ``-1``, :data:`~.base.MISSING`) stays in
the context as a hole, and a context that reaches back over a hole is treated like a context
never seen in training: it passes its lower order through. So the prediction after a hole
is :math:`p_m(w \mid s)` with :math:`s` the longest fully observed suffix of the context
(the symbols after the last hole, :math:`m = |s| + 1`): the model's own lower-order
Kneser-Ney distribution of that shorter context (with its continuation counts), computed
exactly as it would be for ``s`` alone. This is the conditioning the source supports; the
n-gram's conditional given the observed symbols around the hole, :math:`\sum_w p(w \mid
h)\, p(y \mid h w)`, is *not* what it returns. A missing symbol itself is scored 0 (log 1)
by :meth:`KneserNeySource.log_probs`. Right after a hole at the start of a sequence the
beginning-of-sequence marker is out of reach too (the unigram :math:`p_1`).

Discounts. With ``discount=None`` each order gets one discount estimated from the
count-of-counts of its adjusted counts (Ney, Essen & Kneser 1994; Chen & Goodman eq. 26):

.. math::

    D_m = \frac{n_1}{n_1 + 2 n_2}, \qquad
    n_r = |\{g \text{ of order } m : a(g) = r\}|,

clipped to :math:`[0.05, 0.95]` (:data:`DISCOUNT_MIN`, :data:`DISCOUNT_MAX`); when
:math:`n_1 + 2 n_2 = 0` (no n-gram seen once or twice) :math:`D_m = 0.5`. The clip keeps every
discount strictly inside :math:`(0, 1)`: :math:`D = 0` (when :math:`n_1 = 0`) would give unseen
symbols probability zero and :math:`D = 1` (when :math:`n_2 = 0`) would erase singletons. A
scalar ``discount`` in :math:`(0, 1)` is used at every order instead.

Storage. Counts live in NumPy arrays, one set per order :math:`m`: the sorted keys of the
contexts of length :math:`m - 1` (a context's key is ``id(h') * (W + 1) + oldest symbol``,
where ``id(h')`` is the index of its suffix among the contexts one shorter, so keys fit in
int64 for any order) and, sorted, the n-gram keys ``context index * W + symbol`` with their
adjusted counts. A context lookup is ``order - 1`` binary searches; saving is just the arrays.
"""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np

from .._bundle import from_json, read_bundle, reading, to_json, write_bundle
from .._validation import check_lengths, check_positive_int, check_symbols
from ..errors import InvalidInputError, ModelFileError, NotFittedError
from ..families.categorical import MAX_INFERRED_SYMBOLS
from ..textio import Vocabulary
from .base import MISSING, Source, check_symbol, resolve_alphabet

__all__ = ["DISCOUNT_MAX", "DISCOUNT_MIN", "KneserNeySource", "SOURCE_FORMAT",
           "estimate_discount"]

#: ``format`` of a saved source directory (see :func:`hiddenstate._bundle.write_bundle`)
SOURCE_FORMAT = "hiddenstate-source"
#: bounds of an estimated discount (see the module docstring)
DISCOUNT_MIN = 0.05
DISCOUNT_MAX = 0.95
#: discount used when an order has no n-gram seen once or twice
DISCOUNT_DEGENERATE = 0.5
#: largest alphabet (the bound of inferred categorical alphabets)
MAX_SYMBOLS = MAX_INFERRED_SYMBOLS


def estimate_discount(counts: np.ndarray) -> float:
    r"""Kneser-Ney discount :math:`D = n_1 / (n_1 + 2 n_2)` from the adjusted counts of one
    order, clipped to ``[DISCOUNT_MIN, DISCOUNT_MAX]``; ``DISCOUNT_DEGENERATE`` when
    :math:`n_1 + 2 n_2 = 0`."""
    counts = np.asarray(counts)
    n1 = int(np.count_nonzero(counts == 1))
    n2 = int(np.count_nonzero(counts == 2))
    if n1 + 2 * n2 == 0:
        return DISCOUNT_DEGENERATE
    return float(min(max(n1 / (n1 + 2 * n2), DISCOUNT_MIN), DISCOUNT_MAX))


def _check_discount(discount) -> float | None:
    if discount is None:
        return None
    if isinstance(discount, (bool, np.bool_)) or not isinstance(
            discount, (int, float, np.integer, np.floating)) \
            or not np.isfinite(discount) or not 0.0 < float(discount) < 1.0:
        raise InvalidInputError(
            f"discount: expected None (estimate per order) or a number strictly between 0 "
            f"and 1, got {discount!r}")
    return float(discount)


def _check_n_symbols(n) -> int:
    """A saved alphabet size in ``1 .. MAX_SYMBOLS`` (every prediction allocates ``n``
    numbers; a file claiming more is refused at load, before any prediction)."""
    n = check_positive_int(n, "n_symbols")
    if n > MAX_SYMBOLS:
        raise InvalidInputError(
            f"n_symbols: {n} symbols is more than {MAX_SYMBOLS} (each prediction is a vector "
            "of n_symbols probabilities); relabel the symbols 0 .. W-1 with a Vocabulary")
    return n


def _check_range(y: np.ndarray, W: int, name: str, fix: str) -> None:
    if y.max() >= W:
        raise InvalidInputError(
            f"{name}: symbol {int(y.max())} is out of range for a source over {W} symbols "
            f"(0 .. {W - 1}); {fix}")


def _count(y: np.ndarray, lengths: np.ndarray, order: int, W: int) -> list[dict]:
    """Context keys, n-gram keys and adjusted counts of every order (see the module
    docstring), computed with sorting only (no Python loop over tokens)."""
    T, S = len(y), len(lengths)
    base, bos = W + 1, W
    seq_of = np.repeat(np.arange(S, dtype=np.int64), lengths)
    starts = np.cumsum(lengths) - lengths
    # padded stream: BOS before every sequence; q[t] is token t's index in it
    q = np.arange(T, dtype=np.int64) + seq_of + 1
    padded = np.full(T + S, bos, dtype=np.int64)
    padded[q] = y
    # number of positions (BOS included) before token t in its padded sequence
    offset = np.arange(T, dtype=np.int64) - starts[seq_of] + 1

    levels: list[dict] = []
    ctx_id = np.zeros(T, dtype=np.int64)
    for j in range(order):  # order m = j + 1, contexts of length j
        if j == 0:
            valid = np.ones(T, dtype=bool)
            ctx_keys = np.zeros(1, dtype=np.int64)
        else:
            valid = offset >= j
            key = ctx_id[valid] * base + padded[q[valid] - j]
            ctx_keys, inv = np.unique(key, return_inverse=True)
            ctx_id = np.full(T, -1, dtype=np.int64)
            ctx_id[valid] = inv.ravel()
        ng_keys, raw = np.unique(ctx_id[valid] * W + y[valid], return_counts=True)
        levels.append({"ctx": ctx_keys.astype(np.int64), "ngram": ng_keys.astype(np.int64),
                       "raw": raw.astype(np.int64)})

    for j, lev in enumerate(levels):
        if j == order - 1:
            lev["count"] = lev["raw"]
            continue
        child = levels[j + 1]
        # suffix of each distinct (j+2)-gram (v h w) is the (j+1)-gram (h w)
        parent = child["ctx"][child["ngram"] // W] // base
        suffix = parent * W + child["ngram"] % W
        cont = np.bincount(np.searchsorted(lev["ngram"], suffix),
                           minlength=len(lev["ngram"])).astype(np.int64)
        if j == 0:
            lev["count"] = cont
        else:
            starts_bos = lev["ctx"][lev["ngram"] // W] % base == bos
            lev["count"] = np.where(starts_bos, lev["raw"], cont)
    return [{"ctx": lev["ctx"], "ngram": lev["ngram"], "count": lev["count"]}
            for lev in levels]


class KneserNeySource(Source):
    r"""Interpolated Kneser-Ney n-gram model over symbol ids ``0 .. n_symbols - 1``.

    A :class:`~hiddenstate.sources.Source` for PROPS (Chen & Goodman 1998, §3-4):

    .. math::

        p_m(w \mid h) = \frac{\max(a(h w) - D_m, 0)}{a(h \bullet)}
            + \frac{D_m N_{1+}(h \bullet)}{a(h \bullet)} \, p_{m-1}(w \mid h'),
        \qquad p_0(w) = 1 / W,

    with raw counts at the highest order and continuation counts
    :math:`N_{1+}(\bullet h w)` below it (Chen & Goodman 1998, §3-4); see the module
    docstring for the beginning-of-sequence, unseen-symbol and discount rules.

    Parameters
    ----------
    order : int, default=3
        The n-gram order :math:`N \ge 1` (the prediction conditions on ``order - 1`` symbols).
    discount : float or None, default=None
        ``None`` estimates :math:`D_m = n_1 / (n_1 + 2 n_2)` per order (clipped to
        ``[0.05, 0.95]``, 0.5 when undefined); a number in :math:`(0, 1)` is used at every
        order.

    Attributes
    ----------
    n_symbols : int
        The alphabet size (after :meth:`fit` or :meth:`load`).
    vocabulary : Vocabulary or None
        The token mapping of a text source (after :meth:`fit` or :meth:`load`).
    discounts_ : ndarray of shape (order,)
        The discount of each order, lowest first (after :meth:`fit` or :meth:`load`).

    See Also
    --------
    LSTMSource : A neural source.
    hiddenstate.PROPS : Personalises a source with a few perturbation states.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.sources import KneserNeySource
    >>> src = KneserNeySource(order=2).fit(np.array([0, 1, 2, 0, 1, 2, 0, 1]))
    >>> src.discounts_
    array([0.5, 0.2])
    >>> np.round(src.reset(), 3)           # the first symbol: after the sequence start
    array([0.9 , 0.05, 0.05])
    >>> np.round(src.step(0), 3)           # after a 0
    array([0.033, 0.95 , 0.017])
    """

    #: a missing symbol backs off to the context after it (see the module docstring)
    supports_missing = True

    def __init__(self, order: int = 3, discount: float | None = None):
        self.order = order
        self.discount = discount

    # ------------------------------------------------------------------ hyper-parameters
    def get_params(self, deep: bool = True) -> dict:
        """Return the constructor arguments (scikit-learn convention).

        Parameters
        ----------
        deep : bool, default=True
            Unused (no sub-estimators).

        Returns
        -------
        dict
            ``{"order": ..., "discount": ...}``.
        """
        return {"order": self.order, "discount": self.discount}

    def _check_hyper(self) -> tuple[int, float | None]:
        return check_positive_int(self.order, "order"), _check_discount(self.discount)

    # ------------------------------------------------------------------ fitting
    def fit(self, X, lengths=None, n_symbols: int | None = None,
            vocabulary: Vocabulary | None = None) -> KneserNeySource:
        """Count the n-grams of concatenated sequences.

        ``n_symbols`` defaults to ``len(vocabulary)`` when a vocabulary is given, else to
        ``max(X) + 1`` (refused when most of those ids never occur, and when the alphabet
        does not fit in memory: see :func:`~hiddenstate.sources.base.resolve_alphabet`).

        Parameters
        ----------
        X : array-like of int, shape (n_tokens,) or (n_tokens, 1)
            The symbols of all sequences, one after the other.
        lengths : array-like of int or None, default=None
            The length of each sequence (hmmlearn convention); None: one sequence.
        n_symbols : int or None, default=None
            The alphabet size.
        vocabulary : Vocabulary or None, default=None
            The token mapping of text data (kept on the source and saved with it).

        Returns
        -------
        KneserNeySource
            The source itself, fitted.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``order`` or ``discount`` is invalid, a symbol is out of range, the lengths
            do not match ``X``, or the alphabet is too large.
        """
        order, discount = self._check_hyper()
        # each prediction builds a few float64 vectors over the alphabet
        y, W = resolve_alphabet(X, n_symbols, vocabulary, lambda W: 3 * 8 * W,
                                "a next-symbol distribution")
        if W > MAX_SYMBOLS:  # the bound load() applies: a fitted source must save and load
            raise InvalidInputError(
                f"n_symbols: {W} symbols is more than a Kneser-Ney source holds "
                f"({MAX_SYMBOLS}); use a smaller vocabulary")
        lengths = check_lengths(lengths, len(y))
        if (len(y) + len(lengths) + 1) * (W + 1) >= 2**63:
            raise InvalidInputError(
                f"n_symbols: {W} symbols and {len(y)} tokens overflow the int64 n-gram keys; "
                "use a smaller vocabulary")
        levels = _count(y, lengths, order, W)
        if discount is None:
            discounts = np.array([estimate_discount(lev["count"]) for lev in levels])
        else:
            discounts = np.full(order, discount)
        self._set_tables(levels, discounts, W, vocabulary)
        return self

    def _set_tables(self, levels: list[dict], discounts: np.ndarray, W: int,
                    vocabulary: Vocabulary | None) -> None:
        """Install the count tables and precompute, per order, ``gamma`` (the weight
        ``D N1+(h.) / a(h.)`` of the lower order, per context) and ``dprob`` (the discounted
        term ``max(a(hw) - D, 0) / a(h.)``, per n-gram); both prediction paths use exactly
        these numbers, so they agree to the last bit."""
        self._levels = levels
        self.discounts_ = np.asarray(discounts, dtype=np.float64)
        self._n_symbols = W
        self.vocabulary = vocabulary
        self._ptr, self._sym, self._gamma, self._dprob = [], [], [], []
        for lev, D in zip(levels, self.discounts_, strict=True):
            ctx_of = lev["ngram"] // W
            n_ctx = len(lev["ctx"])
            n1p = np.bincount(ctx_of, minlength=n_ctx).astype(np.float64)
            total = np.bincount(ctx_of, weights=lev["count"].astype(np.float64),
                                minlength=n_ctx)
            ptr = np.zeros(n_ctx + 1, dtype=np.int64)
            np.cumsum(n1p.astype(np.int64), out=ptr[1:])
            self._ptr.append(ptr)
            self._sym.append(lev["ngram"] % W)
            self._gamma.append(D * n1p / total)
            self._dprob.append(np.maximum(lev["count"] - D, 0.0) / total[ctx_of])
        self._ctx = self._trim([self._bos])

    # ------------------------------------------------------------------ fitted state
    @property
    def order_(self) -> int:
        """The fitted n-gram order."""
        return len(self._levels)

    @property
    def n_symbols(self) -> int:
        """The alphabet size; :class:`~hiddenstate.errors.NotFittedError` before fit."""
        if not hasattr(self, "_levels"):
            raise NotFittedError(
                f"This {type(self).__name__} has no counts yet; call fit (or load) first")
        return self._n_symbols

    @property
    def _bos(self) -> int:
        return self._n_symbols

    def _check_is_fitted(self) -> None:
        self.n_symbols  # noqa: B018 (raises NotFittedError)

    def _trim(self, ctx: list[int]) -> list[int]:
        keep = self.order_ - 1
        return ctx[-keep:] if keep else []

    # ------------------------------------------------------------------ prediction
    def _distribution(self, ctx: list[int]) -> np.ndarray:
        W = self._n_symbols
        p = np.full(W, 1.0 / W)
        cid = 0
        base = W + 1
        for j in range(len(ctx) + 1):
            if j:
                if ctx[-j] == MISSING:
                    break  # a hole: as an unseen context (the longest observed suffix)
                keys = self._levels[j]["ctx"]
                key = cid * base + ctx[-j]
                i = int(np.searchsorted(keys, key))
                if i == len(keys) or keys[i] != key:
                    break  # unseen context: every higher order passes this one through
                cid = i
            lo, hi = self._ptr[j][cid], self._ptr[j][cid + 1]
            p *= self._gamma[j][cid]
            p[self._sym[j][lo:hi]] += self._dprob[j][lo:hi]
        return p

    def reset(self) -> np.ndarray:
        """Start a sequence from the context ``(BOS)``.

        Returns
        -------
        ndarray of shape (n_symbols,)
            The distribution of its first symbol.

        Raises
        ------
        hiddenstate.errors.NotFittedError
            Before :meth:`fit` or :meth:`load`.
        """
        self._check_is_fitted()
        self._ctx = self._trim([self._bos])
        return self._distribution(self._ctx)

    def step(self, y: int) -> np.ndarray:
        """Consume one symbol and predict the next.

        Only the last ``order - 1`` symbols are kept, so the cost does not grow with the
        sequence. After a hole the prediction backs off to the context after it (see the
        module docstring).

        Parameters
        ----------
        y : int
            The symbol, or :data:`~.base.MISSING` (``-1``) for a hole.

        Returns
        -------
        ndarray of shape (n_symbols,)
            The distribution of the next symbol.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``y`` is not a symbol of the source or ``-1``.
        """
        y = check_symbol(y, self.n_symbols, allow_missing=True)
        self._ctx = self._trim(self._ctx + [y])
        return self._distribution(self._ctx)

    def snapshot(self) -> dict[str, np.ndarray]:
        """Return the position in the current sequence.

        Returns
        -------
        dict of str to ndarray
            ``{"context": ids}``: the last (up to ``order - 1``) symbols, oldest first; the
            id ``n_symbols`` stands for the beginning-of-sequence marker, ``-1`` for a
            missing symbol.
        """
        self._check_is_fitted()
        return {"context": np.array(self._ctx, dtype=np.int64)}

    def restore(self, snapshot: dict[str, np.ndarray]) -> None:
        """Return to a position saved by :meth:`snapshot`.

        Parameters
        ----------
        snapshot : dict of str to ndarray
            ``{"context": ids}`` from :meth:`snapshot`.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``snapshot`` is not a context of this source.
        """
        self._check_is_fitted()
        if not isinstance(snapshot, dict) or "context" not in snapshot:
            raise InvalidInputError(
                "snapshot: expected the dict returned by snapshot() (with key 'context')")
        ctx = np.asarray(snapshot["context"])
        keep, bos = self.order_ - 1, self._bos
        ok = ctx.ndim == 1 and ctx.dtype.kind in "iu" and len(ctx) <= keep
        if ok and len(ctx):
            ok = bool(np.all((ctx >= MISSING) & (ctx < self._n_symbols))
                      if ctx[0] != bos else np.all((ctx[1:] >= MISSING) & (ctx[1:] < bos)))
        if ok and keep:
            ok = len(ctx) == keep or (len(ctx) > 0 and ctx[0] == bos)
        if not ok:
            raise InvalidInputError(
                f"snapshot: 'context' is not a context of this {self.order_}-gram source over "
                f"{self._n_symbols} symbols; pass a snapshot taken from it")
        self._ctx = [int(v) for v in ctx]

    def log_probs(self, y: np.ndarray) -> np.ndarray:
        r"""Score every symbol of one sequence, vectorised over the tokens.

        Per order one binary search for the contexts and one for the n-grams, so only the
        observed symbol's probability is computed. Equal to the :meth:`reset` /
        :meth:`step` loop (same floating-point operations); leaves the source where that
        loop does (after ``y[:-1]``). A missing symbol scores 0.

        Parameters
        ----------
        y : array-like of int, shape (T,)
            The sequence.

        Returns
        -------
        ndarray of shape (T,)
            :math:`\log p(y_t \mid y_{<t})`.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a symbol is out of range.
        """
        self._check_is_fitted()
        if np.asarray(y).size == 0:
            self.reset()
            return np.empty(0)
        y = check_symbols(y, None, "y", allow_missing=True)
        _check_range(y, self._n_symbols, "y", "encode it with the training vocabulary")
        out = self._scores([self._bos], y)
        self._ctx = self._trim([self._bos] + [int(v) for v in y[:-1]])
        return out

    def log_probs_from(self, y: np.ndarray, start: dict | None = None
                       ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Score symbols continuing from a saved position, vectorised as log_probs.

        See :meth:`Source.log_probs_from`.

        Parameters
        ----------
        y : array-like of int, shape (T,)
            The next symbols of the sequence.
        start : dict or None, default=None
            A position returned by an earlier call; None: a new sequence.

        Returns
        -------
        log_probs : ndarray of shape (T,)
            The log-probabilities.
        position : dict of str to ndarray
            The context after the last symbol and ``"next"``, the next symbol's
            distribution.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a symbol is out of range or ``start`` is not a position of this source.
        """
        self._check_is_fitted()
        if start is None:
            ctx = self._trim([self._bos])
        else:
            self.restore({k: v for k, v in start.items() if k != "next"})
            ctx = list(self._ctx)
        y = np.asarray(y)
        if y.size:
            y = check_symbols(y, None, "y", allow_missing=True)
            _check_range(y, self._n_symbols, "y", "encode it with the training vocabulary")
            out = self._scores(ctx, y)
            ctx = self._trim(ctx + [int(v) for v in y])
        else:
            out = np.empty(0)
        self._ctx = ctx
        return out, {**self.snapshot(), "next": self._distribution(ctx)}

    def _scores(self, ctx0: list[int], y: np.ndarray) -> np.ndarray:
        """log p(y_t | context) for every t, the context of ``y[0]`` being ``ctx0`` (the
        kept context: up to ``order - 1`` ids, possibly starting with the BOS marker); a
        hole (``-1``) in the context ends it as an unseen context does, a missing ``y_t``
        scores 0."""
        T, W, base = len(y), self._n_symbols, self._n_symbols + 1
        m = len(ctx0)
        padded = np.concatenate((np.asarray(ctx0, dtype=np.int64), y))  # y[t] at t + m
        holes = bool(len(padded)) and int(padded.min()) < 0
        t_idx = np.arange(T, dtype=np.int64)
        p = np.full(T, 1.0 / W)
        cid = np.zeros(T, dtype=np.int64)
        alive = np.ones(T, dtype=bool)
        for j in range(self.order_):
            if j:
                alive &= t_idx >= j - m  # a context of length j needs j earlier positions
                idx = np.flatnonzero(alive)
                keys = self._levels[j]["ctx"]
                sym = padded[idx + m - j]
                key = cid[idx] * base + sym
                pos = np.searchsorted(keys, key)
                hit = keys[np.minimum(pos, len(keys) - 1)] == key
                if holes:
                    hit &= sym != MISSING
                alive[idx[~hit]] = False
                cid[idx[hit]] = pos[hit]
            idx = np.flatnonzero(alive)
            if not len(idx):
                break
            c = cid[idx]
            ngrams = self._levels[j]["ngram"]
            ng = c * W + y[idx]
            k = np.minimum(np.searchsorted(ngrams, ng), len(ngrams) - 1)
            d = np.where(ngrams[k] == ng, self._dprob[j][k], 0.0)
            p[idx] = self._gamma[j][c] * p[idx] + d
        if holes:
            p[y == MISSING] = 1.0  # no emission term
        return np.log(p)

    def describe(self) -> str:
        if not hasattr(self, "_levels"):
            return f"{self.order}-gram interpolated Kneser-Ney (unfitted)"
        return f"{self.order_}-gram interpolated Kneser-Ney (W={self._n_symbols})"

    # ------------------------------------------------------------------ persistence
    def _meta(self) -> dict:
        return {
            "class": type(self).__name__,
            "params": {k: to_json(v) for k, v in self.get_params().items()},
            "n_symbols": int(self._n_symbols),
            "vocabulary": None if self.vocabulary is None else self.vocabulary.to_dict(),
        }

    @staticmethod
    def _meta_digest(meta: dict) -> str:
        """The checksum of ``model.json`` that format version 2 files carry (version 3
        files are sealed by :mod:`hiddenstate._bundle` itself)."""
        return hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()

    def save(self, path: str | os.PathLike) -> None:
        """Write the source to a directory, atomically.

        ``model.json`` + ``arrays.<token>.npz``, format ``"hiddenstate-source"``; no pickle
        (see :func:`hiddenstate._bundle.write_bundle`).

        Parameters
        ----------
        path : str or os.PathLike
            The directory.

        Raises
        ------
        hiddenstate.errors.NotFittedError
            Before :meth:`fit`.

        See Also
        --------
        hiddenstate.sources.load_source : Read a saved source of any class.
        """
        self._check_is_fitted()
        meta = self._meta()
        arrays = {"discounts": self.discounts_}
        for m, lev in enumerate(self._levels, start=1):
            arrays[f"ctx{m}"] = lev["ctx"]
            arrays[f"ngram{m}"] = lev["ngram"]
            arrays[f"count{m}"] = lev["count"]
        write_bundle(path, SOURCE_FORMAT, meta, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> KneserNeySource:
        """Read a source written by :meth:`save`.

        Parameters
        ----------
        path : str or os.PathLike
            The directory.

        Returns
        -------
        KneserNeySource
            The source, as saved.

        Raises
        ------
        hiddenstate.errors.ModelFileError
            If the directory is missing, modified, corrupted or inconsistent.
        """
        meta, arrays = read_bundle(path, SOURCE_FORMAT, what="source")
        where = f"{os.fspath(path)}"
        if meta.get("class") != cls.__name__:
            raise ModelFileError(f"{where}: holds a {meta.get('class')!r}, not a {cls.__name__}")
        mine = {k: meta.get(k) for k in ("class", "params", "n_symbols", "vocabulary")}
        if meta["version"] < 3 and meta.get("meta_sha256") != cls._meta_digest(mine):
            raise ModelFileError(
                f"{where}: model.json does not match its checksum; the file was modified or "
                "corrupted (refit and save again)")
        with reading(where, "invalid source"):
            params = {k: from_json(v) for k, v in dict(meta["params"]).items()}
            model = cls(**params)
            order, discount = model._check_hyper()
            W = _check_n_symbols(meta["n_symbols"])
            vocab = meta["vocabulary"]
            vocab = None if vocab is None else Vocabulary.from_dict(vocab, source=where)
            levels = _levels_from_arrays(arrays, order, W)
            discounts = np.asarray(arrays["discounts"], dtype=np.float64)
            if discounts.shape != (order,) or not np.all((discounts > 0) & (discounts < 1)):
                raise InvalidInputError("discounts: not one number in (0, 1) per order")
            expected = (np.full(order, discount) if discount is not None else
                        np.array([estimate_discount(lev["count"]) for lev in levels]))
            if not np.array_equal(discounts, expected):
                raise InvalidInputError("discounts: do not match the counts and parameters")
        if vocab is not None and len(vocab) != W:
            raise ModelFileError(f"{where}: vocabulary size {len(vocab)} != n_symbols {W}")
        model._set_tables(levels, discounts, W, vocab)
        return model


def _levels_from_arrays(arrays: dict, order: int, W: int) -> list[dict]:
    """The count tables of a saved source, checked for the invariants :func:`_count`
    guarantees (sorted unique keys, every context with at least one n-gram, every suffix
    present one order down, positive counts)."""
    if len(arrays) != 3 * order + 1:  # before building anything of the order's size
        raise InvalidInputError(
            f"arrays: a {order}-gram source has {3 * order + 1} arrays, not {len(arrays)}")
    names = {"discounts"} | {f"{a}{m}" for m in range(1, order + 1)
                             for a in ("ctx", "ngram", "count")}
    if set(arrays) != names:
        raise InvalidInputError(f"arrays: expected {sorted(names)}, got {sorted(arrays)}")
    levels = []
    base = W + 1
    for m in range(1, order + 1):
        ctx, ng, cnt = arrays[f"ctx{m}"], arrays[f"ngram{m}"], arrays[f"count{m}"]
        if any(a.dtype != np.int64 or a.ndim != 1 for a in (ctx, ng, cnt)):
            raise InvalidInputError(f"order {m}: count tables must be 1-D int64")
        if len(ctx) == 0 or len(ng) != len(cnt) or np.any(cnt < 1) \
                or np.any(np.diff(ctx) <= 0) or np.any(np.diff(ng) <= 0) or ng[0] < 0:
            raise InvalidInputError(f"order {m}: count tables are not sorted positive counts")
        ctx_of = ng // W
        if m == 1 and not np.array_equal(ctx, [0]):
            raise InvalidInputError("order 1: the only context is the empty one")
        if not np.array_equal(np.unique(ctx_of), np.arange(len(ctx))):
            raise InvalidInputError(f"order {m}: every context needs at least one n-gram")
        if m > 1:
            parent = ctx // base
            n_parent = len(levels[-1]["ctx"])
            if ctx[0] < 0 or np.any(parent >= n_parent):
                raise InvalidInputError(f"order {m}: context keys out of range")
            # BOS (= W) may only be the oldest symbol of a context: no suffix may hold it
            if m > 2 and np.any(levels[-1]["ctx"][parent] % base == W):
                raise InvalidInputError(f"order {m}: misplaced beginning-of-sequence marker")
        levels.append({"ctx": ctx, "ngram": ng, "count": cnt})
    return levels

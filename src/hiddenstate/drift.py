r"""Drifting teachers: sources of categorical HMM sequences whose parameters change over
time, for measuring how streaming learners track a moving target.

:class:`JumpingTeacher`
    A piecewise-constant teacher: a new teacher every ``every`` sequences (abrupt drift).
:class:`RandomWalkTeacher`
    A teacher whose rows take a small Gaussian step in softmax (log-probability) space
    before every sequence (gradual drift).
:func:`sample_sequences`
    ``n`` independent sequences of length ``T`` from one fixed categorical HMM, vectorised
    over the sequences (:meth:`hiddenstate.HMM.sample` draws one sequence per call).

Both teachers share one interface: :meth:`~JumpingTeacher.sample` returns ``(X,
lengths)`` for the next ``n`` sequences of length ``T`` (``X`` an ``(n * T, 1)`` column of
symbols, as :meth:`hiddenstate.HMM.partial_fit` takes it), optionally with the teacher of
every sequence; :meth:`~JumpingTeacher.chunks` yields such blocks one after the other;
:attr:`~JumpingTeacher.current` is the teacher that emitted the most recent sequence (an
:class:`~hiddenstate.HMM` with its parameters set, usable by
:func:`hiddenstate.metrics.kl_divergence` and :func:`hiddenstate.metrics.divergence_rate`).

**Time convention.** Sequences are numbered :math:`i = 0, 1, 2, \dots` over the whole
stream (all calls). :math:`\theta^{(i)}` is the teacher of sequence :math:`i`;
``n_seen`` sequences have been emitted; ``current`` is :math:`\theta^{(n_\text{seen}-1)}`
(the initial teacher :math:`\theta^{(0)}` before any sequence, for a jumping teacher, and
:math:`\theta^{(-1)}`, the teacher as given, for a random walk; see each class).

**Randomness.** One :class:`numpy.random.Generator` (from ``random_state``: a seed, a
Generator, which is used as is and advanced, or None) drives everything: new teachers,
random-walk steps and the sequences, in the order of the calls. The same seed and the same
calls (the same ``n`` and ``T``) give the same output; cutting a stream into different
chunks gives a different, equally distributed, stream.

Sampling draws, for each block of sequences, one uniform number per sequence for the first
state, then for each position one per sequence for the symbol and (from the second
position) one per sequence for the next state, and inverts the cumulative distribution of
that sequence's teacher row: memory :math:`O(n\,(T + K (K + W)))` per call, so pass a few
thousand sequences at a time for large models.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ._validation import check_memory, check_positive_int, make_rng
from .errors import InvalidInputError
from .metrics import categorical_params
from .models.hmm import HMM

__all__ = [
    "JumpingTeacher",
    "RandomWalkTeacher",
    "TeacherPath",
    "sample_sequences",
]

Params = tuple[np.ndarray, np.ndarray, np.ndarray]


# -- teachers as parameter tuples ------------------------------------------------------------------
def _as_params(teacher, name: str) -> Params:
    """``(startprob, transmat, emissionprob)`` of a categorical HMM or of a 3-tuple,
    validated (:func:`hiddenstate.metrics.categorical_params`) and copied."""
    return tuple(np.array(a, dtype=np.float64) for a in categorical_params(teacher, name))


def _as_hmm(params: Params) -> HMM:
    """A categorical :class:`~hiddenstate.HMM` whose parameters are (copies of) ``params``
    (assigning a learned array stores a copy)."""
    startprob, transmat, emissionprob = params
    K, W = emissionprob.shape
    model = HMM(K, emission="categorical", n_features=W, init_params="")
    model.startprob_, model.transmat_, model.emissionprob_ = startprob, transmat, emissionprob
    return model


@dataclass(frozen=True)
class TeacherPath:
    """The teacher of each sequence of a block.

    Sequence ``i`` of the block was emitted by ``(startprob[index[i]], transmat[index[i]],
    emissionprob[index[i]])``. Distinct teachers are stored once (a jumping teacher's block
    holds a few), so ``path[i]`` is the ``(startprob, transmat, emissionprob)`` tuple of
    sequence ``i`` (views, do not modify) and ``len(path)`` the number of sequences.
    Returned by ``sample(..., return_teachers=True)`` of the drifting teachers.

    Parameters
    ----------
    startprob : ndarray of shape (E, K)
        The initial distributions of the ``E`` distinct teachers.
    transmat : ndarray of shape (E, K, K)
        Their transition matrices.
    emissionprob : ndarray of shape (E, K, W)
        Their emission matrices.
    index : ndarray of shape (n,), dtype int64
        The teacher of each sequence, an index into the first axis of the three arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.drift import JumpingTeacher
    >>> a = (np.full(2, 0.5), np.array([[0.9, 0.1], [0.2, 0.8]]), np.full((2, 3), 1 / 3))
    >>> b = (a[0], a[1][::-1], a[2])
    >>> X, lengths, path = JumpingTeacher([a, b], every=2).sample(3, T=5, return_teachers=True)
    >>> len(path), path.index, path.transmat.shape
    (3, array([0, 0, 1]), (2, 2, 2))
    >>> path[2][1]                       # the transition matrix of sequence 2: teacher b
    array([[0.2, 0.8],
           [0.9, 0.1]])
    """

    startprob: np.ndarray       # (E, K)
    transmat: np.ndarray        # (E, K, K)
    emissionprob: np.ndarray    # (E, K, W)
    index: np.ndarray           # (n,) int64, into the first axis of the three arrays

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i: int) -> Params:
        e = self.index[i]
        return self.startprob[e], self.transmat[e], self.emissionprob[e]


# -- sampling -----------------------------------------------------------------------------------
def _draw(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One categorical draw per row of ``p`` (N, J) by inverting the row's cumulative sum
    (normalised so that its last entry is exactly 1: an entry of probability 0 is never
    drawn, trailing ones included)."""
    u = rng.random(len(p))[:, None]
    cdf = np.cumsum(p, axis=1)
    cdf = cdf / cdf[:, -1:]
    return np.minimum((u > cdf).sum(axis=1), p.shape[1] - 1)


def _sample_block(path: TeacherPath, T: int, rng: np.random.Generator) -> np.ndarray:
    """One length-``T`` sequence per entry of ``path`` (each from its own teacher);
    ``(n, T)`` int64 symbols."""
    n = len(path)
    which = path.index
    z = _draw(path.startprob[which], rng)
    y = np.empty((n, T), dtype=np.int64)
    for t in range(T):
        if t:
            z = _draw(path.transmat[which, z], rng)
        y[:, t] = _draw(path.emissionprob[which, z], rng)
    return y


def _check_block_memory(n: int, T: int, K: int, W: int, walk: bool = False) -> None:
    """Refuse a block of ``n`` sequences of length ``T`` that cannot fit in memory: the
    ``(n, T)`` symbols, the per-step ``(n, max(K, W))`` draws and, for a random walk, the
    ``n`` teachers' logits with their steps and softmax (``(n, K + K**2 + K W)`` several
    times)."""
    per_sequence = 8.0 * 4 * max(K, W) + (8.0 * 5 * (K + K * K + K * W) if walk else 0.0)
    check_memory({"n": n * per_sequence, "T": 8.0 * n * T},
                 f"sampling {n} sequences of length {T} ({K} states, {W} symbols)",
                 {"n": "sample fewer sequences per call (see chunks)",
                  "T": "sample shorter sequences"})


def _as_stream(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, T = y.shape
    return y.reshape(n * T, 1), np.full(n, T, dtype=np.int64)


def sample_sequences(teacher, n: int, T: int, random_state=None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Sample ``n`` independent sequences of length ``T`` from one categorical HMM.

    Vectorised over the sequences (:meth:`hiddenstate.HMM.sample` draws one sequence per
    call): one uniform number per sequence for the first state, then per position one for
    the symbol and (from the second position) one for the next state, each inverting the
    cumulative distribution of the row.

    Parameters
    ----------
    teacher : HMM or tuple of ndarray
        A categorical :class:`~hiddenstate.HMM` with parameters (fitted or set by hand),
        or a ``(startprob, transmat, emissionprob)`` tuple.
    n : int
        The number of sequences (>= 1).
    T : int
        Their length (>= 1).
    random_state : int, numpy.random.Generator or None, default=None
        A seed, a Generator (used as is and advanced) or None (fresh entropy).

    Returns
    -------
    X : ndarray of shape (n * T, 1), dtype int64
        The sequences one after the other, a column of symbols.
    lengths : ndarray of shape (n,), dtype int64
        ``n`` times ``T``.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``n`` or ``T`` is not a positive integer, or ``teacher`` is not a categorical
        HMM with valid parameters.
    hiddenstate.errors.InsufficientMemoryError
        If the block of sequences would not fit in memory (checked before allocating).

    See Also
    --------
    JumpingTeacher, RandomWalkTeacher : Teachers whose parameters change over time.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.drift import sample_sequences
    >>> teacher = (np.full(2, 0.5), np.array([[0.9, 0.1], [0.2, 0.8]]),
    ...            np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]]))
    >>> X, lengths = sample_sequences(teacher, n=3, T=4, random_state=0)
    >>> X.shape, lengths
    ((12, 1), array([4, 4, 4]))
    """
    n = check_positive_int(n, "n")
    T = check_positive_int(T, "T")
    startprob, transmat, emissionprob = _as_params(teacher, "teacher")
    _check_block_memory(n, T, *emissionprob.shape)
    path = TeacherPath(startprob[None], transmat[None], emissionprob[None],
                       np.zeros(n, dtype=np.int64))
    return _as_stream(_sample_block(path, T, make_rng(random_state)))


# -- drifting teachers --------------------------------------------------------------------------
class _DriftingTeacher:
    """Shared interface: ``sample``, ``chunks``, ``current``, ``params``, ``n_seen``."""

    n_seen: int
    _rng: np.random.Generator

    def _advance(self, n: int) -> TeacherPath:
        """The teachers of the next ``n`` sequences (drawing what they need); moves the
        state ``n`` sequences on."""
        raise NotImplementedError

    @property
    def params(self) -> Params:
        """``(startprob, transmat, emissionprob)`` of :attr:`current`, as copies."""
        raise NotImplementedError

    @property
    def current(self) -> HMM:
        """The teacher of the most recent sequence, as a categorical HMM.

        A new :class:`~hiddenstate.HMM` on every access, its parameters set (changing it
        does not change the stream); usable by :func:`hiddenstate.metrics.kl_divergence`
        and :func:`hiddenstate.metrics.divergence_rate`.
        """
        return _as_hmm(self.params)

    @property
    def n_states(self) -> int:
        """The number of hidden states of the teachers."""
        return self.params[0].size

    @property
    def n_symbols(self) -> int:
        """The number of symbols of the teachers."""
        return self.params[2].shape[1]

    def sample(self, n: int, T: int, return_teachers: bool = False):
        """Sample the next ``n`` sequences of length ``T`` of the stream.

        Afterwards :attr:`current` is the teacher of the block's last sequence.

        Parameters
        ----------
        n : int
            The number of sequences (>= 1).
        T : int
            Their length (>= 1).
        return_teachers : bool, default=False
            Also return the teacher of every sequence.

        Returns
        -------
        X : ndarray of shape (n * T, 1), dtype int64
            The sequences one after the other, a column of symbols.
        lengths : ndarray of shape (n,), dtype int64
            ``n`` times ``T``.
        path : TeacherPath
            Only with ``return_teachers=True``: ``path[i]`` emitted sequence ``i`` of the
            block.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``n`` or ``T`` is not a positive integer, ``return_teachers`` not a bool, or
            a jumping teacher given as a list runs out of teachers.
        hiddenstate.errors.InsufficientMemoryError
            If the block would not fit in memory (checked before allocating).
        """
        n = check_positive_int(n, "n")
        T = check_positive_int(T, "T")
        if not isinstance(return_teachers, (bool, np.bool_)):
            raise InvalidInputError(
                f"return_teachers: expected True or False, got {return_teachers!r}")
        _check_block_memory(n, T, self.n_states, self.n_symbols,
                            walk=isinstance(self, RandomWalkTeacher))
        path = self._advance(n)
        X, lengths = _as_stream(_sample_block(path, T, self._rng))
        return (X, lengths, path) if return_teachers else (X, lengths)

    def chunks(self, n: int, T: int, n_chunks: int | None = None
               ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield blocks of the stream, one :meth:`sample` call after the other.

        Read :attr:`current` between blocks for the teacher of the latest sequence.

        Parameters
        ----------
        n : int
            The number of sequences per block (>= 1).
        T : int
            Their length (>= 1).
        n_chunks : int or None, default=None
            The number of blocks; None: forever.

        Yields
        ------
        X : ndarray of shape (n * T, 1), dtype int64
            The block's sequences one after the other.
        lengths : ndarray of shape (n,), dtype int64
            ``n`` times ``T``.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``n_chunks`` is not a positive integer or None (``n`` and ``T`` are checked
            by :meth:`sample`).
        """
        if n_chunks is not None:
            n_chunks = check_positive_int(n_chunks, "n_chunks")
        count = 0
        while n_chunks is None or count < n_chunks:
            yield self.sample(n, T)
            count += 1


class JumpingTeacher(_DriftingTeacher):
    r"""A teacher that is replaced by a new one every ``every`` sequences (abrupt drift).

    Sequence :math:`i` (numbered from 0 over the whole stream) is emitted by teacher
    :math:`\theta^{(i)} = \theta_{\lfloor i / N \rfloor}`, :math:`N` = ``every``: the
    teacher changes exactly between sequences :math:`kN - 1` and :math:`kN`,
    :math:`k = 1, 2, \dots`, and at no other time. ``current`` is the teacher of the most
    recent sequence, :math:`\theta_{\lfloor (n_\text{seen} - 1)/N \rfloor}` (:math:`\theta_0`
    before any), and :attr:`epoch` its index.

    Parameters
    ----------
    teachers : callable or sequence
        Where the successive teachers come from; each is a categorical
        :class:`~hiddenstate.HMM` with parameters or a ``(startprob, transmat,
        emissionprob)`` tuple, all with the same numbers of states and symbols.

        - a callable ``teachers(rng) -> teacher``: :math:`\theta_0` is drawn when the object
          is built, :math:`\theta_k` when sequence :math:`kN` is first sampled (before
          that call's sequences), each from the object's generator;
        - a sequence of teachers, used in order; sampling past the last one's epoch is an
          error.
    every : int
        :math:`N`, the number of sequences per teacher (>= 1).
    random_state : int, numpy.random.Generator or None, default=None
        A seed, a Generator (used as is and advanced) or None (fresh entropy).

    Attributes
    ----------
    n_seen : int
        The number of sequences emitted so far, over all calls.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``every`` is not a positive integer, ``teachers`` is neither a callable nor a
        non-empty list, or the teachers differ in their numbers of states or symbols.

    See Also
    --------
    RandomWalkTeacher : Gradual drift.
    sample_sequences : Sequences from one fixed teacher.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.drift import JumpingTeacher
    >>> def make(rng):
    ...     return (np.full(2, 0.5), rng.dirichlet(np.ones(2), 2), rng.dirichlet(np.ones(3), 2))
    >>> source = JumpingTeacher(make, every=100, random_state=0)
    >>> X, lengths = source.sample(250, T=20)    # teachers 0, 1 and the first half of 2
    >>> source.epoch, source.n_seen
    (2, 250)
    """

    def __init__(self, teachers: Callable[[np.random.Generator], object] | Sequence,
                 every: int, random_state=None):
        self.every = check_positive_int(every, "every")
        self._rng = make_rng(random_state)
        if callable(teachers):
            self._make = teachers
            self._teachers: list[Params] = []
        else:
            if isinstance(teachers, (str, bytes)) or not isinstance(teachers, Sequence):
                raise InvalidInputError(
                    "teachers: expected a callable rng -> teacher or a list of teachers "
                    "(categorical HMMs or (startprob, transmat, emissionprob) tuples); for a "
                    f"single teacher pass [teacher], got {type(teachers).__name__}")
            if len(teachers) == 0:
                raise InvalidInputError("teachers: empty; pass at least one teacher")
            self._make = None
            self._teachers = [_as_params(t, f"teachers[{i}]") for i, t in enumerate(teachers)]
            self._check_shapes(0)
        self.n_seen = 0
        if self._make is not None:
            self._new_teacher()

    def _check_shapes(self, first: int) -> None:
        K, W = self._teachers[0][2].shape
        for i in range(first, len(self._teachers)):
            shape = self._teachers[i][2].shape
            if shape != (K, W):
                name = "teachers" if self._make is not None else f"teachers[{i}]"
                raise InvalidInputError(
                    f"{name}: teacher {i} has (n_states, n_symbols) = {shape} but teacher 0 "
                    f"has {(K, W)}; all teachers must share them")

    def _new_teacher(self) -> None:
        k = len(self._teachers)
        self._teachers.append(_as_params(self._make(self._rng), f"teachers(rng) [teacher {k}]"))
        self._check_shapes(k)

    @property
    def epoch(self) -> int:
        """The index of the current teacher, 0 before any sequence.

        That is :math:`\\lfloor (n_\\text{seen} - 1)/N \\rfloor`, :math:`N` = ``every``.
        """
        return max(self.n_seen - 1, 0) // self.every

    @property
    def params(self) -> Params:
        """``(startprob, transmat, emissionprob)`` of :attr:`current`, as copies."""
        return tuple(p.copy() for p in self._teachers[self.epoch])

    def _advance(self, n: int) -> TeacherPath:
        epochs = (self.n_seen + np.arange(n, dtype=np.int64)) // self.every
        first, last = int(epochs[0]), int(epochs[-1])
        if self._make is not None:
            while len(self._teachers) <= last:
                self._new_teacher()
        elif last >= len(self._teachers):
            raise InvalidInputError(
                f"n: sequences {self.n_seen} .. {self.n_seen + n - 1} reach teacher {last}, "
                f"but only {len(self._teachers)} teachers were given (every={self.every}); "
                "pass more teachers or a callable that draws them")
        block = self._teachers[first:last + 1]
        path = TeacherPath(np.stack([p[0] for p in block]), np.stack([p[1] for p in block]),
                           np.stack([p[2] for p in block]), epochs - first)
        self.n_seen += n
        return path


def _log(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(p)


def _softmax(a: np.ndarray) -> np.ndarray:
    """Row-wise softmax over the last axis; entries at ``-inf`` give exactly 0."""
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class RandomWalkTeacher(_DriftingTeacher):
    r"""A teacher whose rows take a random-walk step before every sequence (gradual drift).

    The step is Gaussian, in softmax (log-probability) space. Every row :math:`\theta_r`
    (the initial distribution, each transition row, each emission row) is kept as logits
    :math:`a_r` with :math:`\theta_r = \mathrm{softmax}(a_r)`, starting from
    :math:`a_r^{(-1)} = \ln \theta_r` of the given teacher. Before sequence :math:`i = 0, 1,
    \dots` every entry moves independently:

    .. math::
        a_{rj}^{(i)} = a_{rj}^{(i-1)} + \sigma\, \xi_{rj}^{(i)}, \qquad
        \xi_{rj}^{(i)} \sim \mathcal N(0, 1), \qquad
        \theta_{rj}^{(i)} = \frac{e^{a_{rj}^{(i)}}}{\sum_k e^{a_{rk}^{(i)}}},

    :math:`\sigma` = ``step``. The rows stay stochastic, every entry that was positive stays
    strictly positive (unless the walk drives two logits of a row more than about 700
    apart, where ``exp`` underflows), and an entry that was 0 (:math:`a = -\infty`) stays
    exactly 0. The
    logits are defined up to a constant per row; the identifiable change is that of the
    centred log-probabilities :math:`c_{rj} = \ln\theta_{rj} - \frac1{n_r}\sum_k
    \ln\theta_{rk}` over the :math:`n_r` positive entries of the row, whose one-step change
    :math:`\sigma(\xi_{rj} - \bar\xi_r)` has :math:`E\,\|\Delta c_r\|^2 = \sigma^2 (n_r -
    1)` (after :math:`s` steps, :math:`s\,\sigma^2 (n_r - 1)`).

    ``current`` is the teacher of the most recent sequence, :math:`\theta^{(n_\text{seen} -
    1)}` (the teacher as given before any sequence).

    Parameters
    ----------
    teacher : HMM or tuple of ndarray
        The starting teacher: a categorical :class:`~hiddenstate.HMM` with parameters or a
        ``(startprob, transmat, emissionprob)`` tuple.
    step : float
        :math:`\sigma` (a finite number >= 0; 0 gives a fixed teacher).
    random_state : int, numpy.random.Generator or None, default=None
        A seed, a Generator (used as is and advanced) or None (fresh entropy). Each
        :meth:`sample` call draws the steps of its ``n`` sequences (``(n, K)`` for the
        initial distribution, then ``(n, K, K)``, then ``(n, K, W)``), then the sequences.

    Attributes
    ----------
    n_seen : int
        The number of sequences emitted so far, over all calls.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``step`` is not a finite number >= 0 or ``teacher`` is not a categorical HMM
        with valid parameters.

    See Also
    --------
    JumpingTeacher : Abrupt drift.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.drift import RandomWalkTeacher
    >>> start = (np.full(2, 0.5), np.array([[0.9, 0.1], [0.2, 0.8]]),
    ...          np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]]))
    >>> source = RandomWalkTeacher(start, step=0.01, random_state=0)
    >>> X, lengths, path = source.sample(1000, T=50, return_teachers=True)
    >>> bool(np.allclose(path[999][1], source.params[1]))    # the last sequence's teacher
    True
    """

    def __init__(self, teacher, step: float, random_state=None):
        if isinstance(step, bool) or not isinstance(step, (int, float, np.integer, np.floating)) \
                or not math.isfinite(step) or step < 0:
            raise InvalidInputError(f"step: expected a finite number >= 0, got {step!r}")
        self.step = float(step)
        self._rng = make_rng(random_state)
        self._logits = [_log(p) for p in _as_params(teacher, "teacher")]
        self.n_seen = 0

    @property
    def params(self) -> Params:
        """``(startprob, transmat, emissionprob)`` of :attr:`current`, as new arrays."""
        return tuple(_softmax(a) for a in self._logits)

    def _advance(self, n: int) -> TeacherPath:
        walks = [lg[None] + self.step * np.cumsum(self._rng.standard_normal((n, *lg.shape)),
                                                  axis=0)
                 for lg in self._logits]
        self._logits = [w[-1].copy() for w in walks]
        self.n_seen += n
        return TeacherPath(*(_softmax(w) for w in walks), np.arange(n, dtype=np.int64))

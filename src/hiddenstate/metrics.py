r"""Model-comparison and evaluation metrics: KL divergence and divergence rate between HMMs,
perplexity, and scores for decoded state paths.

Distances between models
------------------------
:func:`kl_divergence`
    The exact Kullback-Leibler divergence between the distributions that two categorical
    HMMs put on the :math:`W^T` sequences of length ``T``, by enumerating them all and scoring
    them with the library's forward pass. This is the generalisation error of the learning
    curves of Alamino & Caticha (2007), who compare a student HMM to its teacher on short
    sequences.
:func:`divergence_rate`, :func:`symmetric_divergence_rate`
    The Juang-Rabiner (1985) divergence rate, the per-step KL divergence in the limit of
    long sequences, estimated by sampling from the first model with a stated convergence rule
    and a standard error. Works for every emission family.

Parse trees
-----------
:func:`tree_scores`
    LT (labelled tree exact match), BT (unlabelled tree match) and 0-CB (sentences whose
    predicted tree crosses no bracket of the gold tree) as Sato & Kubota define them after
    Goodman (1996), and labelled bracket precision / recall / F1 (PARSEVAL).

Evaluating a model on data
--------------------------
:func:`perplexity`
    :math:`\exp(-\log p(X) / N)`, ``N`` the number of observations.
:func:`tagging_accuracy`, :func:`relabel`, :func:`variation_of_information`
    Agreement between true and decoded state (tag) sequences whose labels need not match:
    best one-to-one relabelling (Hungarian algorithm), many-to-one relabelling, and the
    variation of information of the two partitions (Meila 2007).

References
----------
- B.-H. Juang and L. R. Rabiner, "A probabilistic distance measure for hidden Markov
  models", AT&T Technical Journal 64(2):391-408, 1985.
- R. C. Alamino and N. Caticha, "Online learning in discrete hidden Markov models",
  Bayesian Inference and Maximum Entropy Methods in Science and Engineering (MaxEnt 2006),
  AIP Conference Proceedings, 2007.
- M. Meila, "Comparing clusterings - an information based distance", Journal of
  Multivariate Analysis 98(5):873-895, 2007.
- H. W. Kuhn, "The Hungarian method for the assignment problem", Naval Research Logistics
  Quarterly 2:83-97, 1955.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from . import inference
from ._validation import check_choice, check_positive_int, check_stochastic, make_rng
from .errors import ConvergenceWarning, InvalidInputError, NumericalError
from .inference import EmissionTable, Sequences
from .models.hmm import HMM
from .models.hsmm import HSMM

__all__ = [
    "DivergenceRate",
    "divergence_rate",
    "kl_divergence",
    "kl_divergence_per_step",
    "perplexity",
    "TreeScores",
    "relabel",
    "symmetric_divergence_rate",
    "tagging_accuracy",
    "tree_scores",
    "variation_of_information",
]

#: default limit on the number of sequences :func:`kl_divergence` enumerates
MAX_SEQUENCES = 2**20
#: observations scored per call of the forward pass by :func:`kl_divergence`
_BATCH_ROWS = 2**22


# -- exact KL divergence between categorical HMMs ------------------------------------------------
def categorical_params(model, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(startprob, transmat, emissionprob)`` of a categorical HMM (parameters fitted or
    set by hand) or of a 3-tuple, validated (errors name ``name``)."""
    if isinstance(model, (tuple, list)):
        if len(model) != 3:
            raise InvalidInputError(
                f"{name}: expected an HMM or a (startprob, transmat, emissionprob) tuple, got "
                f"a sequence of length {len(model)}")
        startprob, transmat, emissionprob = model
    else:
        if isinstance(model, HSMM):
            raise InvalidInputError(
                f"{name}: an HSMM's states last their own durations, not the geometric ones "
                "of a (startprob, transmat, emissionprob) chain; the exact KL divergence and "
                "drifting teachers take HMMs (divergence_rate takes any model)")
        if isinstance(model, HMM) and model.emission != "categorical":
            raise InvalidInputError(
                f"{name}: expected an HMM with categorical emissions (the exact KL "
                f"divergence and drifting teachers need them), got emission="
                f"{model.emission!r}; divergence_rate takes any family")
        missing = [a for a in ("startprob_", "transmat_", "emissionprob_")
                   if not hasattr(model, a)]
        if missing:
            raise InvalidInputError(
                f"{name}: has no {missing[0]}; pass a fitted categorical HMM (or one whose "
                "parameters were set by hand) or a (startprob, transmat, emissionprob) tuple")
        startprob, transmat, emissionprob = (model.startprob_, model.transmat_,
                                             model.emissionprob_)
    startprob = np.asarray(startprob, dtype=np.float64)
    if startprob.ndim != 1 or startprob.size == 0:
        raise InvalidInputError(
            f"{name}: startprob must be a non-empty 1-D vector, got shape {startprob.shape}")
    K = startprob.size
    emissionprob = np.asarray(emissionprob, dtype=np.float64)
    if emissionprob.ndim != 2 or emissionprob.shape[0] != K or emissionprob.shape[1] == 0:
        raise InvalidInputError(
            f"{name}: emissionprob must have shape (n_states={K}, n_symbols), got "
            f"{emissionprob.shape}")
    return (check_stochastic(startprob, (K,), f"{name}.startprob"),
            check_stochastic(transmat, (K, K), f"{name}.transmat"),
            check_stochastic(emissionprob, emissionprob.shape, f"{name}.emissionprob"))


def _all_sequences(W: int, T: int, first: int, stop: int) -> np.ndarray:
    """Sequences ``first .. stop-1`` of the lexicographic list of all ``W**T`` sequences of
    length ``T``, concatenated (``(stop - first) * T`` symbols)."""
    index = np.arange(first, stop, dtype=np.int64)
    place = W ** np.arange(T - 1, -1, -1, dtype=np.int64)
    return ((index[:, None] // place) % W).ravel()


def kl_divergence(p, q, T: int, max_sequences: int = MAX_SEQUENCES) -> float:
    r"""Compute the exact KL divergence between two categorical HMMs on length-``T`` sequences.

    .. math::
        D_T(p \,\|\, q) = \sum_{x \in \{0..W-1\}^T} p(x) \log \frac{p(x)}{q(x)}

    computed as the sum of the non-negative terms :math:`q(x) - p(x) + p(x)\log(p(x)/q(x))`
    (the same number, because both distributions sum to one over the :math:`W^T` sequences;
    each term is evaluated stably, so the result is never negative and is exactly 0 for
    ``q = p``). A sequence with :math:`p(x) = 0` contributes :math:`q(x)` (its
    :math:`p \log p/q` part is 0); a sequence with :math:`p(x) > 0 = q(x)` makes the
    divergence ``inf``.

    All :math:`W^T` sequences are enumerated in vectorised batches and each batch is scored
    by one call of the forward pass (:func:`hiddenstate.inference.log_likelihood`) per
    model, so the cost is :math:`O(W^T \, T \, K^2)`.

    Alamino & Caticha (2007) measure the learning curves of online HMM learners by this
    divergence between teacher and student (their teacher: 2 states, 3 symbols, ``T = 2``).

    Parameters
    ----------
    p, q : HMM or tuple of ndarray
        A categorical :class:`~hiddenstate.HMM` with parameters (fitted or set by hand),
        any object with ``startprob_``, ``transmat_`` and ``emissionprob_``, or a
        ``(startprob, transmat, emissionprob)`` tuple. The numbers of states may differ; the
        numbers of symbols must agree.
    T : int
        The sequence length (>= 1).
    max_sequences : int, default=2**20
        The most sequences enumerated: :math:`W^T` above it is refused.

    Returns
    -------
    float
        The divergence in nats, possibly ``inf``.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If a model is not a categorical HMM with valid parameters, the alphabets differ,
        ``T`` or ``max_sequences`` is not a positive integer, or :math:`W^T` exceeds
        ``max_sequences``.

    See Also
    --------
    kl_divergence_per_step : The same divided by ``T``.
    divergence_rate : The limit per step for long sequences, by sampling; any family.

    Examples
    --------
    >>> import numpy as np
    >>> p = (np.array([0.5, 0.5]), np.array([[0.9, 0.1], [0.2, 0.8]]),
    ...      np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]]))
    >>> q = (np.array([0.5, 0.5]), np.array([[0.8, 0.2], [0.3, 0.7]]),
    ...      np.array([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]]))
    >>> from hiddenstate.metrics import kl_divergence
    >>> round(kl_divergence(p, q, T=2), 4)
    0.0583
    >>> kl_divergence(p, p, T=5)
    0.0
    """
    T = check_positive_int(T, "T")
    max_sequences = check_positive_int(max_sequences, "max_sequences")
    pi_p, A_p, B_p = categorical_params(p, "p")
    pi_q, A_q, B_q = categorical_params(q, "q")
    W = B_p.shape[1]
    if B_q.shape[1] != W:
        raise InvalidInputError(
            f"q: has {B_q.shape[1]} symbols but p has {W}; both models must share one alphabet")
    n_total = W**T  # a Python int: no overflow
    if n_total > max_sequences:
        raise InvalidInputError(
            f"T: there are {W}**{T} = {n_total} sequences of length T={T}, more than "
            f"max_sequences={max_sequences}; use a smaller T, raise max_sequences, or "
            "estimate the per-step divergence by sampling with divergence_rate")
    batch = max(1, _BATCH_ROWS // T)
    terms = np.empty(n_total)
    for first in range(0, n_total, batch):
        stop = min(first + batch, n_total)
        X = _all_sequences(W, T, first, stop)
        seqs = Sequences.from_lengths(np.full(stop - first, T, dtype=np.int64))
        log_p = inference.log_likelihood(pi_p, A_p, EmissionTable.from_symbols(B_p, X), seqs)
        log_q = inference.log_likelihood(pi_q, A_q, EmissionTable.from_symbols(B_q, X), seqs)
        terms[first:stop] = _kl_terms(log_p, log_q)
    if np.isnan(terms).any():
        raise NumericalError("kl_divergence: a sequence log-likelihood was NaN")
    return float(np.sum(terms))


def _kl_terms(log_p: np.ndarray, log_q: np.ndarray) -> np.ndarray:
    r"""The non-negative terms :math:`q - p + p \log(p/q)` of each sequence.

    With :math:`d = \log q - \log p` the term is :math:`p\,(e^d - 1 - d)`, evaluated as
    ``p * (expm1(d) - d)`` for :math:`|d| \le 1` (no cancellation against ``q - p``) and as
    ``q - p - p d`` otherwise (no overflow of :math:`e^d`).
    """
    out = np.empty_like(log_p)
    p_zero = log_p == -np.inf
    q_zero = (log_q == -np.inf) & ~p_zero
    ok = ~(p_zero | q_zero)
    out[p_zero] = np.exp(log_q[p_zero])
    out[q_zero] = np.inf
    lp, lq = log_p[ok], log_q[ok]
    d = lq - lp
    pr, qr = np.exp(lp), np.exp(lq)
    near = np.abs(d) <= 1.0
    out[ok] = np.where(near, pr * (np.expm1(np.where(near, d, 0.0)) - d), qr - pr - pr * d)
    return out


def kl_divergence_per_step(p, q, T: int, max_sequences: int = MAX_SEQUENCES) -> float:
    r"""Compute the exact KL divergence per observation, :math:`D_T(p\,\|\,q) / T`.

    For ergodic models it tends to the divergence rate (:func:`divergence_rate`) as ``T``
    grows, with an :math:`O(1/T)` difference.

    Parameters
    ----------
    p, q : HMM or tuple of ndarray
        Categorical HMMs, as for :func:`kl_divergence`.
    T : int
        The sequence length (>= 1).
    max_sequences : int, default=2**20
        The most sequences enumerated: :math:`W^T` above it is refused.

    Returns
    -------
    float
        :math:`D_T(p\,\|\,q) / T` in nats per observation, possibly ``inf``.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        As :func:`kl_divergence`.

    See Also
    --------
    kl_divergence : The divergence on whole sequences.

    Examples
    --------
    >>> import numpy as np
    >>> p = (np.array([0.5, 0.5]), np.array([[0.9, 0.1], [0.2, 0.8]]),
    ...      np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]]))
    >>> q = (np.array([0.5, 0.5]), np.array([[0.8, 0.2], [0.3, 0.7]]),
    ...      np.array([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]]))
    >>> from hiddenstate.metrics import kl_divergence_per_step
    >>> round(kl_divergence_per_step(p, q, T=12), 4)    # towards the rate, about 0.038
    0.0359
    """
    return kl_divergence(p, q, T, max_sequences) / check_positive_int(T, "T")


# -- divergence rate by sampling ---------------------------------------------------------------
@dataclass(frozen=True)
class DivergenceRate:
    """An estimate of a divergence rate, in nats per observation.

    Returned by :func:`divergence_rate` and :func:`symmetric_divergence_rate`;
    ``float(result)`` is its value.

    Parameters
    ----------
    value : float
        The estimate.
    stderr : float
        Its standard error (from the independent replicates).
    length : int
        The sequence length of the final estimate.
    n_sequences : int
        The number of replicates per length.
    converged : bool
        Whether the convergence rule was met before ``max_length``.
    history : tuple of (int, float, float), default=()
        ``(length, value, stderr)`` at every length the rule tried, in order (the reported
        value is a further, independent estimate at ``length``).
    components : tuple of DivergenceRate, default=()
        For :func:`symmetric_divergence_rate`, the two one-sided estimates
        ``(D(a, b), D(b, a))``; empty otherwise.

    Examples
    --------
    >>> from hiddenstate.metrics import DivergenceRate
    >>> rate = DivergenceRate(0.04, 0.002, length=256, n_sequences=32, converged=True)
    >>> float(rate)
    0.04
    """

    value: float
    stderr: float
    length: int
    n_sequences: int
    converged: bool
    history: tuple[tuple[int, float, float], ...] = ()
    components: tuple[DivergenceRate, ...] = ()

    def __float__(self) -> float:
        return float(self.value)


def _as_model(model, name: str):
    """An estimator with ``sample`` and ``score_samples``; a 3-tuple becomes a categorical
    :class:`~hiddenstate.HMM`."""
    if isinstance(model, (tuple, list)):
        startprob, transmat, emissionprob = categorical_params(model, name)
        hmm = HMM(len(startprob), emission="categorical", init_params="")
        hmm.startprob_, hmm.transmat_, hmm.emissionprob_ = startprob, transmat, emissionprob
        return hmm
    if isinstance(model, HMM):
        model.check_is_fitted()
        return model
    if not (hasattr(model, "sample") and hasattr(model, "score_samples")):
        raise InvalidInputError(
            f"{name}: expected a hiddenstate.HMM (or an object with sample and "
            "score_samples) or a (startprob, transmat, emissionprob) tuple, got "
            f"{type(model).__name__}")
    return model


def _check_compatible(teacher, student) -> None:
    if isinstance(teacher, HMM) and isinstance(student, HMM):
        if teacher.emission != student.emission:
            raise InvalidInputError(
                f"student: has emission={student.emission!r} but the teacher has "
                f"{teacher.emission!r}; both models must describe the same observations")
        if teacher.n_features_ != student.n_features_:
            raise InvalidInputError(
                f"student: has n_features_={student.n_features_} but the teacher has "
                f"{teacher.n_features_}; both models must describe the same observations")


def _check_rate_args(length, n_sequences, rtol, atol, max_length) -> tuple[int, int, int]:
    length = check_positive_int(length, "length")
    n_sequences = check_positive_int(n_sequences, "n_sequences", minimum=2)
    max_length = check_positive_int(max_length, "max_length")
    if max_length < 2 * length:
        raise InvalidInputError(
            f"max_length: {max_length} is less than 2 * length = {2 * length}; the rule "
            "compares estimates at two lengths, so raise max_length or lower length")
    for value, what in ((rtol, "rtol"), (atol, "atol")):
        if not (isinstance(value, (int, float, np.floating)) and math.isfinite(value)
                and value >= 0):
            raise InvalidInputError(f"{what}: expected a finite number >= 0, got {value!r}")
    if rtol == 0 and atol == 0:
        raise InvalidInputError("rtol: rtol and atol are both 0; give at least one of them > 0")
    return length, n_sequences, max_length


def _one_level(teacher, student, T: int, n: int, rng) -> tuple[float, float]:
    """Mean and standard error of ``(log p0(Y) - log p(Y)) / T`` over ``n`` sequences."""
    parts = [teacher.sample(T, random_state=rng)[0] for _ in range(n)]
    X = np.concatenate(parts)
    lengths = np.full(n, T, dtype=np.int64)
    log_p0 = np.asarray(teacher.score_samples(X, lengths), dtype=np.float64)
    log_p = np.asarray(student.score_samples(X, lengths), dtype=np.float64)
    if np.isnan(log_p0).any() or np.isnan(log_p).any():
        raise NumericalError("divergence_rate: a sequence log-likelihood was NaN")
    if np.any(log_p0 == -np.inf):
        raise NumericalError(
            "divergence_rate: the teacher gave probability zero to its own sample")
    if np.any(log_p == -np.inf):
        return np.inf, 0.0
    d = (log_p0 - log_p) / T
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(n))


def divergence_rate(teacher, student, length: int = 128, n_sequences: int = 32,
                    rtol: float = 0.02, atol: float = 0.0, max_length: int = 2**15,
                    random_state=None) -> DivergenceRate:
    r"""Estimate the Juang-Rabiner divergence rate of ``student`` from ``teacher``.

    .. math::
        D(\theta_0, \theta) = \lim_{T\to\infty} \frac{1}{T}
            \left[\log P(Y_T \mid \theta_0) - \log P(Y_T \mid \theta)\right],
        \qquad Y_T \sim \theta_0,

    the per-step KL divergence between the processes (Juang & Rabiner 1985). It is
    :math:`\ge 0`, 0 for a model and itself, and not symmetric
    (see :func:`symmetric_divergence_rate`).

    **Estimator.** At length :math:`T`, ``n_sequences`` independent sequences
    :math:`Y^{(i)} \sim \theta_0` are drawn and
    :math:`d_i = [\log P(Y^{(i)}|\theta_0) - \log P(Y^{(i)}|\theta)]/T`;
    the estimate is :math:`m_T = \bar d` with standard error :math:`s_T = \mathrm{sd}(d)/\sqrt n`.
    :math:`E[m_T] = D_T/T`, the exact per-step divergence (:func:`kl_divergence_per_step`),
    which for ergodic models is :math:`D + c/T + o(1/T)`.

    **Convergence rule.** Lengths :math:`T_0 = ` ``length``, :math:`T_j = 2T_{j-1}`, up to
    ``max_length``, with fresh sequences at each length. Stop at the first :math:`j \ge 1`
    where, with :math:`\tau_j = ` ``rtol`` :math:`\cdot|m_{T_j}| +` ``atol``,

    1. :math:`s_{T_j} \le \tau_j` (the noise is small), and
    2. :math:`|m_{T_j} - m_{T_{j-1}}| \le \tau_j + 2\sqrt{s_{T_j}^2 + s_{T_{j-1}}^2}`
       (doubling the length no longer moves the estimate beyond its noise; since the bias is
       :math:`c/T`, the change :math:`\approx c/(2T_{j-1})` is the bias left at
       :math:`T_j`).

    The length :math:`T_j` is then final and ``converged=True``; if ``max_length`` is reached
    first, the last length is final, ``converged=False``, with a
    :class:`~hiddenstate.errors.ConvergenceWarning`. The reported ``value`` and ``stderr``
    come from a *fresh* set of ``n_sequences`` sequences at the final length: the rule
    stops when an estimate happens to look precise, which would bias the estimate it
    looked at (its standard error most), not an independent one. ``history`` holds the
    estimates the rule looked at. If the student gives probability zero to
    a sampled sequence, the rate is ``inf`` (returned at once, ``converged=True``).

    Parameters
    ----------
    teacher, student : HMM or tuple of ndarray
        Fitted :class:`~hiddenstate.HMM` objects (any emission family, the same
        observations) or objects with ``sample`` and ``score_sequences``, or a
        ``(startprob, transmat, emissionprob)`` tuple for a categorical HMM.
    length : int, default=128
        The first sequence length.
    n_sequences : int, default=32
        The number of independent sequences per length (>= 2).
    rtol : float, default=0.02
        The relative tolerance of the rule.
    atol : float, default=0.0
        The absolute tolerance of the rule, in nats per step (``rtol`` and ``atol`` not
        both 0).
    max_length : int, default=2**15
        The longest length tried (>= 2 * ``length``).
    random_state : int, numpy.random.Generator or None, default=None
        A seed, a Generator or None; the same seed gives the same result.

    Returns
    -------
    DivergenceRate
        The estimate (``float(result)`` is its value), its standard error, the final
        length and the rule's history.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If a model is neither a fitted model nor a valid tuple, the two describe different
        observations, or an option is out of range.
    hiddenstate.errors.NumericalError
        If a log-likelihood is NaN, or the teacher gives probability zero to its own
        sample.

    Warns
    -----
    hiddenstate.errors.ConvergenceWarning
        If the rule is not met by ``max_length``.

    See Also
    --------
    symmetric_divergence_rate : The mean of the two directions.
    kl_divergence_per_step : The exact value at one length, for small categorical models.

    Examples
    --------
    >>> import numpy as np
    >>> p = (np.array([0.5, 0.5]), np.array([[0.9, 0.1], [0.2, 0.8]]),
    ...      np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]]))
    >>> q = (np.array([0.5, 0.5]), np.array([[0.8, 0.2], [0.3, 0.7]]),
    ...      np.array([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]]))
    >>> from hiddenstate.metrics import divergence_rate
    >>> rate = divergence_rate(p, q, rtol=0.1, random_state=0)
    >>> round(rate.value, 3), rate.length, rate.converged
    (0.04, 256, True)
    """
    teacher = _as_model(teacher, "teacher")
    student = _as_model(student, "student")
    _check_compatible(teacher, student)
    length, n_sequences, max_length = _check_rate_args(length, n_sequences, rtol, atol,
                                                       max_length)
    rng = make_rng(random_state)
    history: list[tuple[int, float, float]] = []
    T = length
    converged = False
    while T <= max_length:
        m, s = _one_level(teacher, student, T, n_sequences, rng)
        history.append((T, m, s))
        if m == np.inf:
            return DivergenceRate(m, s, T, n_sequences, True, tuple(history))
        if len(history) >= 2:
            _, m_prev, s_prev = history[-2]
            tau = rtol * abs(m) + atol
            if s <= tau and abs(m - m_prev) <= tau + 2.0 * math.hypot(s, s_prev):
                converged = True
                break
        T *= 2
    T, m, s = history[-1]
    if not converged:
        warnings.warn(
            f"divergence_rate: the estimate did not meet rtol={rtol}, atol={atol} by "
            f"max_length={max_length} (value {m:.6g} +- {s:.6g} at length {T}); raise "
            "max_length or n_sequences, or loosen rtol/atol", ConvergenceWarning, stacklevel=2)
    # the rule stops when the estimate happens to look precise: report a fresh replicate
    # at the chosen length, whose value and standard error that choice does not bias
    m, s = _one_level(teacher, student, T, n_sequences, rng)
    return DivergenceRate(m, s, T, n_sequences, converged, tuple(history))


def symmetric_divergence_rate(a, b, length: int = 128, n_sequences: int = 32,
                              rtol: float = 0.02, atol: float = 0.0, max_length: int = 2**15,
                              random_state=None) -> DivergenceRate:
    r"""Estimate the symmetric divergence rate :math:`D_s(a, b) = [D(a, b) + D(b, a)] / 2`.

    After Juang & Rabiner (1985). Both one-sided rates are estimated by
    :func:`divergence_rate` with the same settings and one random stream (the first from
    sequences of ``a``, the second from sequences of ``b``); they are in
    ``result.components``. ``value`` is their mean, ``stderr``
    :math:`\sqrt{s_1^2 + s_2^2}/2`, ``length`` the longer of the two, ``converged`` both.

    Parameters
    ----------
    a, b : HMM or tuple of ndarray
        The two models, as ``teacher`` and ``student`` of :func:`divergence_rate`.
    length : int, default=128
        The first sequence length.
    n_sequences : int, default=32
        The number of independent sequences per length (>= 2).
    rtol : float, default=0.02
        The relative tolerance of the rule.
    atol : float, default=0.0
        The absolute tolerance of the rule, in nats per step.
    max_length : int, default=2**15
        The longest length tried (>= 2 * ``length``).
    random_state : int, numpy.random.Generator or None, default=None
        A seed, a Generator or None; the same seed gives the same result.

    Returns
    -------
    DivergenceRate
        The symmetric estimate, with the two one-sided ones in ``components``.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        As :func:`divergence_rate`.

    See Also
    --------
    divergence_rate : One direction.

    Examples
    --------
    >>> import numpy as np
    >>> p = (np.array([0.5, 0.5]), np.array([[0.9, 0.1], [0.2, 0.8]]),
    ...      np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]]))
    >>> q = (np.array([0.5, 0.5]), np.array([[0.8, 0.2], [0.3, 0.7]]),
    ...      np.array([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]]))
    >>> from hiddenstate.metrics import symmetric_divergence_rate
    >>> rate = symmetric_divergence_rate(p, q, rtol=0.1, random_state=0)
    >>> round(rate.value, 3), len(rate.components)
    (0.04, 2)
    """
    rng = make_rng(random_state)
    kwargs = dict(length=length, n_sequences=n_sequences, rtol=rtol, atol=atol,
                  max_length=max_length, random_state=rng)
    ab = divergence_rate(a, b, **kwargs)
    ba = divergence_rate(b, a, **kwargs)
    return DivergenceRate((ab.value + ba.value) / 2, math.hypot(ab.stderr, ba.stderr) / 2,
                          max(ab.length, ba.length), ab.n_sequences,
                          ab.converged and ba.converged, (), (ab, ba))


# -- evaluation on data ----------------------------------------------------------------------
def perplexity(model, X, lengths=None) -> float:
    r"""Compute the per-observation perplexity :math:`\exp(-\log p(X) / N)`.

    ``log p(X)`` is ``model.score(X, lengths)`` (the sum over the sequences) and ``N`` the
    number of observations (rows of ``X``). For categorical data it is the effective number
    of equally likely symbols the model hesitates between; for continuous emissions it is
    the exponential of the per-observation negative log density (not scale-free).

    Parameters
    ----------
    model : object
        A fitted model with a ``score(X, lengths)`` method (a :class:`~hiddenstate.HMM`, a
        :class:`~hiddenstate.PROPS`, ...).
    X : array-like of shape (N, n_features)
        The observations, the sequences one after the other.
    lengths : array-like of int or None, default=None
        The length of each sequence; None: one sequence.

    Returns
    -------
    float
        The perplexity (>= 1 for categorical data).

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``model`` has no ``score`` method or ``X`` is empty (and whatever
        ``model.score`` raises for bad data).

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> from hiddenstate.metrics import perplexity
    >>> model = hs.HMM(2, emission="categorical", init_params="")
    >>> model.startprob_ = np.array([0.5, 0.5])
    >>> model.transmat_ = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> model.emissionprob_ = np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]])
    >>> round(perplexity(model, np.array([[0], [1], [2], [2]])), 4)
    3.2939
    """
    if not callable(getattr(model, "score", None)):
        raise InvalidInputError(
            f"model: expected a fitted model with a score(X, lengths) method (a "
            f"hiddenstate.HMM or PROPS), got {type(model).__name__}")
    arr = np.asarray(X)
    if arr.ndim == 0 or len(arr) == 0:
        raise InvalidInputError("X: no observations; pass at least one")
    return float(np.exp(-model.score(X, lengths) / len(arr)))


def _labels(states, name: str) -> np.ndarray:
    arr = np.asarray(states)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise InvalidInputError(f"{name}: expected a 1-D array of labels, got shape {arr.shape}")
    if arr.size == 0:
        raise InvalidInputError(f"{name}: empty; pass at least one label")
    return arr


def _contingency(true_states, predicted_states):
    """Counts ``C[i, j]`` of (true label i, predicted label j), the two sorted label sets and
    the index of each predicted label in its set."""
    t = _labels(true_states, "true_states")
    p = _labels(predicted_states, "predicted_states")
    if len(t) != len(p):
        raise InvalidInputError(
            f"predicted_states: has {len(p)} labels but true_states has {len(t)}; pass one "
            "predicted label per observation")
    t_values, t_idx = np.unique(t, return_inverse=True)
    p_values, p_idx = np.unique(p, return_inverse=True)
    C = np.zeros((len(t_values), len(p_values)), dtype=np.int64)
    np.add.at(C, (t_idx.ravel(), p_idx.ravel()), 1)
    return C, t_values, p_values, p_idx.ravel()


_MAPPINGS = ("one-to-one", "many-to-one", "identity")


def _mapping(C: np.ndarray, mapping: str) -> tuple[np.ndarray, np.ndarray]:
    """For each predicted label (column of ``C``), the row of the true label it maps to
    (-1: unmatched) and a mask of the columns that are mapped (``mapping``: "one-to-one"
    or "many-to-one", checked by the caller)."""
    n_true, n_pred = C.shape
    target = np.full(n_pred, -1, dtype=np.int64)
    if mapping == "one-to-one":
        rows, cols = linear_sum_assignment(C, maximize=True)
        target[cols] = rows
    else:
        target[:] = np.argmax(C, axis=0)
    return target, target >= 0


def tagging_accuracy(true_states, predicted_states, mapping: str = "one-to-one") -> float:
    r"""Compute the fraction of observations whose relabelled predicted state is the true one.

    Hidden states are identified only up to a permutation, so the predicted labels are first
    mapped onto the true ones:

    - ``"one-to-one"``: the bijection (between the label sets, the larger one partly
      unmatched) that maximises the number of matches, found by the Hungarian algorithm
      (:func:`scipy.optimize.linear_sum_assignment` on the contingency table
      :math:`C_{ij} = \#\{t: \text{true}_t = i, \text{pred}_t = j\}`); accuracy
      :math:`\max_\sigma \sum_j C_{\sigma(j) j} / N`. Invariant under any relabelling of
      either sequence.
    - ``"many-to-one"``: each predicted label goes to the true label it co-occurs with most;
      accuracy :math:`\sum_j \max_i C_{ij} / N` (>= the one-to-one accuracy; it grows with
      the number of predicted states, so compare it only at equal K).
    - ``"identity"``: no relabelling (labels compared as they are).

    Labels may be any values ``numpy.unique`` can sort (ints, strings); ``-1`` (Viterbi's
    label for an impossible sequence) is just another label.

    Parameters
    ----------
    true_states : array-like of shape (N,)
        The true label of each observation (a column ``(N, 1)`` is accepted).
    predicted_states : array-like of shape (N,)
        The predicted label of each observation (decoded states, tags).
    mapping : {"one-to-one", "many-to-one", "identity"}, default="one-to-one"
        How predicted labels are mapped onto the true ones.

    Returns
    -------
    float
        The accuracy, in [0, 1].

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If the label arrays are empty, not 1-D, of different lengths, or ``mapping`` is
        unknown.

    See Also
    --------
    relabel : The predicted states in the true labels.
    variation_of_information : A distance between the labellings that needs no mapping.

    Examples
    --------
    >>> from hiddenstate.metrics import tagging_accuracy
    >>> true, decoded = [0, 0, 1, 1, 2], [1, 1, 0, 0, 0]
    >>> tagging_accuracy(true, decoded)                 # 1 -> 0, 0 -> 1: four of five
    0.8
    >>> tagging_accuracy(true, decoded, mapping="identity")
    0.0
    """
    check_choice(mapping, "mapping", _MAPPINGS)
    if mapping == "identity":
        t = _labels(true_states, "true_states")
        p = _labels(predicted_states, "predicted_states")
        if len(t) != len(p):
            raise InvalidInputError(
                f"predicted_states: has {len(p)} labels but true_states has {len(t)}; pass "
                "one predicted label per observation")
        return float(np.mean(t == p))
    C, _, _, _ = _contingency(true_states, predicted_states)
    target, mapped = _mapping(C, mapping)
    cols = np.flatnonzero(mapped)
    return float(C[target[cols], cols].sum() / C.sum())


def relabel(true_states, predicted_states, mapping: str = "one-to-one", fill=-1) -> np.ndarray:
    """Rewrite the predicted states in the true labels, by the mapping of tagging_accuracy.

    Predicted labels that the one-to-one mapping leaves unmatched (when there are more
    predicted than true labels) become ``fill``.

    Parameters
    ----------
    true_states : array-like of shape (N,)
        The true label of each observation.
    predicted_states : array-like of shape (N,)
        The predicted label of each observation.
    mapping : {"one-to-one", "many-to-one"}, default="one-to-one"
        The mapping of :func:`tagging_accuracy`.
    fill : scalar, default=-1
        The label of the predicted labels left unmatched (converted to the dtype of the
        true labels: ``"-1"`` for string labels).

    Returns
    -------
    ndarray of shape (N,)
        The predicted states in the true labels.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        As :func:`tagging_accuracy`.

    See Also
    --------
    tagging_accuracy : The accuracy after this relabelling.

    Examples
    --------
    >>> from hiddenstate.metrics import relabel
    >>> relabel([0, 0, 1, 1, 2], [1, 1, 0, 0, 0])
    array([0, 0, 1, 1, 1])
    >>> relabel(["N", "N", "V", "V"], [1, 1, 0, 2], fill="?")   # state 2 is left over
    array(['N', 'N', 'V', '?'], dtype='<U1')
    """
    check_choice(mapping, "mapping", _MAPPINGS[:2])
    C, t_values, _, p_idx = _contingency(true_states, predicted_states)
    target, mapped = _mapping(C, mapping)
    if mapped.all():
        return t_values[target][p_idx]
    values = np.full(len(target), fill, dtype=np.result_type(t_values, np.asarray(fill)))
    values[mapped] = t_values[target[mapped]]
    return values[p_idx]


def variation_of_information(true_states, predicted_states) -> float:
    r"""Compute the variation of information between two labellings (Meila 2007), in nats.

    .. math::
        VI = H(T \mid P) + H(P \mid T) = H(T) + H(P) - 2 I(T; P)

    with entropies of the empirical joint distribution :math:`C_{ij}/N`. It is a metric on
    partitions: 0 exactly when the labellings agree up to a relabelling, at most
    :math:`\log N`; no mapping between the label sets is needed.

    Parameters
    ----------
    true_states : array-like of shape (N,)
        The true label of each observation.
    predicted_states : array-like of shape (N,)
        The predicted label of each observation.

    Returns
    -------
    float
        The variation of information, in nats.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If the label arrays are empty, not 1-D or of different lengths.

    See Also
    --------
    tagging_accuracy : Agreement after the best mapping of the labels.

    Examples
    --------
    >>> from hiddenstate.metrics import variation_of_information
    >>> variation_of_information([0, 0, 1, 1], [1, 1, 0, 0]) == 0    # the same partition
    True
    >>> round(variation_of_information([0, 0, 1, 1], [0, 1, 0, 1]), 4)  # 2 log 2
    1.3863
    """
    C, _, _, _ = _contingency(true_states, predicted_states)
    n = C.sum()
    i, j = np.nonzero(C)
    c = C[i, j].astype(np.float64)
    # every term -c log(c / margin) is >= 0 because c <= margin
    h_t_given_p = -np.sum(c * np.log(c / C.sum(axis=0)[j]))
    h_p_given_t = -np.sum(c * np.log(c / C.sum(axis=1)[i]))
    return float((h_t_given_p + h_p_given_t) / n)


# -- parse trees ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class TreeScores:
    """Corpus-level parse scores, fractions in [0, 1], returned by :func:`tree_scores`.

    Parameters
    ----------
    labelled_tree : float
        LT: the fraction of sentences whose predicted tree equals the gold one.
    bracketed_tree : float
        BT: the fraction whose predicted tree has the gold shape (labels removed).
    zero_crossing : float
        0-CB: the fraction whose predicted tree crosses no bracket of the gold one.
    precision : float
        Labelled bracket precision (PARSEVAL, summed over the corpus).
    recall : float
        Labelled bracket recall.
    f1 : float
        Their harmonic mean.
    n_sentences : int
        The number of sentences compared.

    Examples
    --------
    >>> from hiddenstate.grammar import parse_brackets
    >>> from hiddenstate.metrics import tree_scores
    >>> gold = parse_brackets("(S (NP she) (VP (V eats) (NP fish)))")
    >>> tree_scores(gold, gold).f1
    1.0
    """

    labelled_tree: float     # LT
    bracketed_tree: float    # BT
    zero_crossing: float     # 0-CB
    precision: float
    recall: float
    f1: float
    n_sentences: int


def _brackets(tree) -> list[tuple[str, int, int]]:
    """(label, start, end) of every constituent that is not a part-of-speech node."""
    return [(node.label, i, j) for node, i, j in tree.nodes() if not node.is_preterminal()]


def _crosses(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[0] < a[1] < b[1] or b[0] < a[0] < b[1] < a[1]


def tree_scores(gold, predicted) -> TreeScores:
    r"""Compare predicted parse trees with gold ones.

    The trees are :class:`hiddenstate.grammar.Tree` objects of the same sentences in the
    same order; a predicted ``None`` is a sentence left unparsed and counts as wrong
    everywhere. With :math:`G_i, P_i` the gold and predicted trees of sentence :math:`i`
    (Sato & Kubota, "Viterbi training in PRISM", sec. 4.1, after Goodman 1996):

    - LT = #{i : P_i = G_i} / n (labels and shape);
    - BT = #{i : unlabelled(P_i) = unlabelled(G_i)} / n (shape only: every label, part of
      speech included, removed);
    - 0-CB = #{i : no bracket of P_i crosses a bracket of G_i} / n, brackets ``(s, e)``
      and ``(s', e')`` crossing when :math:`s < s' < e < e'` or :math:`s' < s < e' < e`;
    - precision / recall / F1 of labelled brackets ``(label, start, end)`` (multisets, the
      part-of-speech nodes left out, summed over the corpus: PARSEVAL / evalb's micro
      average).

    Parameters
    ----------
    gold : iterable of Tree
        The gold tree of each sentence.
    predicted : iterable of Tree or None
        The predicted tree of each sentence, None where it was left unparsed.

    Returns
    -------
    TreeScores
        LT, BT, 0-CB, precision, recall and F1 over the corpus.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If the lists differ in length, ``gold`` is empty, an entry is not a tree, or a
        predicted tree has another number of leaves than its gold tree.

    Examples
    --------
    >>> from hiddenstate.grammar import parse_brackets
    >>> from hiddenstate.metrics import tree_scores
    >>> gold = parse_brackets("(S (NP she) (VP (V eats) (NP fish)))")
    >>> scores = tree_scores(gold * 2, [gold[0], None])     # the second is unparsed
    >>> scores.labelled_tree, scores.precision, scores.recall
    (0.5, 1.0, 0.5)
    """
    gold, predicted = list(gold), list(predicted)
    if len(gold) != len(predicted):
        raise InvalidInputError(
            f"predicted: {len(predicted)} trees for {len(gold)} gold trees; pass one "
            "prediction (or None) per gold tree")
    if not gold:
        raise InvalidInputError("gold: empty; pass at least one tree")
    from collections import Counter

    from .grammar import Tree

    for name, trees in (("gold", gold), ("predicted", predicted)):
        bad = next((t for t in trees if not (isinstance(t, Tree)
                                             or (t is None and name == "predicted"))), 0)
        if bad != 0:
            raise InvalidInputError(
                f"{name}: expected a hiddenstate.grammar.Tree per sentence"
                + (" (or None)" if name == "predicted" else "") + f", got {bad!r:.60}")

    lt = bt = cb = 0
    matched = n_gold = n_pred = 0
    for s, (g, p) in enumerate(zip(gold, predicted, strict=True)):
        gb = _brackets(g)
        n_gold += len(gb)
        if p is None:
            continue
        if len(p.leaves()) != len(g.leaves()):
            raise InvalidInputError(
                f"predicted: tree {s} has {len(p.leaves())} leaves, its gold tree "
                f"{len(g.leaves())}; compare parses of the same sentence")
        pb = _brackets(p)
        n_pred += len(pb)
        matched += sum((Counter(gb) & Counter(pb)).values())
        lt += p == g
        bt += p.unlabelled() == g.unlabelled()
        spans = {(i, j) for _, i, j in gb}
        cb += not any(_crosses((i, j), q) for _, i, j in pb for q in spans)
    n = len(gold)
    precision = matched / n_pred if n_pred else 0.0
    recall = matched / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return TreeScores(lt / n, bt / n, cb / n, precision, recall, f1, n)

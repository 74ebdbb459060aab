r"""Per-sequence online learners for HMMs with categorical emissions (one or several
features per step), with or without partial state labels.

Alamino & Caticha, "Online learning in discrete hidden Markov models" (MaxEnt 2006, AIP
Conf. Proc. 872, 2007; arXiv:0708.2377) and Baldi & Chauvin, "Smooth on-line learning
algorithms for hidden Markov models" (Neural Computation 6, 1994). Each learner sees one
whole sequence :math:`y = y_1 \dots y_T` at a time, updates, and never sees it again.

Sources: the full text of Alamino & Caticha was not at hand when this module was written
(only its abstract and introduction). Two forms below are therefore our choices, stated as
such: BWO's update is the convex step toward the one-sequence Baum-Welch estimate (so that
:math:`\eta = 1` is exactly one EM step), and MPA's second moment is the total variance of
each row. BOnA's projection (KL, i.e. matching :math:`\langle\ln\theta\rangle`) and
Baldi-Chauvin's softmax gradient are fixed by their definitions.

Notation. :math:`\theta_r` is any categorical *row*: the initial distribution :math:`\pi`,
a transition row :math:`A_i` or an emission row :math:`B_i`. A hidden path :math:`q` uses
entry :math:`j` of row :math:`r` :math:`c_{rj}(q)` times (:math:`c_\pi(q)` is the indicator
of :math:`q_1`, :math:`c_{A_i j} = \#\{t : q_t = i, q_{t+1} = j\}`,
:math:`c_{B_i k} = \#\{t : q_t = i, y_t = k\}`); :math:`c_{r0} = \sum_j c_{rj}`.
:math:`n_{rj} = \sum_q P(q \mid y, \theta)\, c_{rj}(q)` are the expected counts that
:func:`hiddenstate.inference.forward_backward` returns, :math:`n_{r\cdot} = \sum_j n_{rj}`.

**Baum-Welch online** (``BaumWelchOnline``, ``name = "bwo"``), for every row:

.. math::  \theta_r \leftarrow (1 - \eta)\, \theta_r + \eta\, \hat\theta_r, \qquad
           \hat\theta_{rj} = n_{rj} / n_{r\cdot},

:math:`\hat\theta` being the Baum-Welch (EM) re-estimate from this one sequence
(:func:`~hiddenstate.families.estimate_rows`; a row with :math:`n_{r\cdot} = 0` keeps its
value, so it does not move). With :math:`\eta = 1` an update is one EM step from the
sequence. A constant :math:`\eta` is an exponential forgetting of old sequences with memory
about :math:`1/\eta`: it tracks a drifting teacher.

**Baldi-Chauvin** (``BaldiChauvin``, ``name = "baldi-chauvin"``; Baldi & Chauvin 1994,
their on-line rule for transitions and emissions, applied to :math:`\pi` as well): softmax
parameters
:math:`\theta_{rj} = e^{\lambda w_{rj}} / \sum_k e^{\lambda w_{rk}}` and

.. math::  \Delta w_{rj} = \eta\,(n_{rj} - n_{r\cdot}\, \theta_{rj})
           = \frac{\eta}{\lambda}\, \frac{\partial \ln P(y \mid \theta(w))}{\partial w_{rj}},

a stochastic gradient step on the log-likelihood of the sequence. Entries that start at
zero have :math:`w = -\infty` and stay zero (structural zeros).

**Bayesian online algorithm** (``BayesianOnline``, ``name = "bona"``) and **mean posterior
approximation** (``MeanPosterior``, ``name = "mpa"``) (Alamino & Caticha). The prior is a
product of Dirichlets, :math:`\prod_r \mathrm{Dir}(\theta_r \mid u_r)`. After a sequence the
exact posterior is a mixture over the :math:`K^T` hidden paths:

.. math::  p(\theta \mid y) = \sum_q \omega_q \prod_r \mathrm{Dir}(\theta_r \mid u_r + c_r(q)),
           \qquad \omega_q \propto \prod_r \frac{B(u_r + c_r(q))}{B(u_r)},

with :math:`B(a) = \prod_j \Gamma(a_j) / \Gamma(\sum_j a_j)`: :math:`\omega_q` is the
Dirichlet-multinomial evidence of the path and the sequence under the current prior
(:func:`mixture_posterior` enumerates the paths). It is projected back onto a product of
Dirichlets :math:`\prod_r \mathrm{Dir}(\theta_r \mid u'_r)`, row by row:

- BOnA minimises :math:`\mathrm{KL}(p(\theta \mid y) \,\|\, \prod_r \mathrm{Dir}(u'_r))`,
  which matches :math:`\langle \ln \theta \rangle`:

  .. math:: \psi(u'_{rj}) - \psi(u'_{r0}) = \langle \ln \theta_{rj} \rangle
            = \sum_q \omega_q \left[\psi(u_{rj} + c_{rj}(q)) - \psi(u_{r0} + c_{r0}(q))\right],

  solved by Newton's method with the diagonal-plus-rank-one Hessian (Minka 2000,
  "Estimating a Dirichlet distribution"; :func:`solve_mean_log`), started from the MPA
  solution.
- MPA matches the posterior mean exactly and, as its one second moment per row (our
  choice, see Sources), the total variance :math:`V_r = \sum_j \mathrm{Var}(\theta_{rj})`
  (equivalently :math:`\langle \sum_j \theta_{rj}^2 \rangle`), which is symmetric in the
  entries:

  .. math:: m_{rj} = \langle \theta_{rj} \rangle = \sum_q \omega_q
            \frac{u_{rj} + c_{rj}(q)}{u_{r0} + c_{r0}(q)}, \qquad
            u'_{r} = s_r\, m_r, \qquad s_r = \frac{1 - \sum_j m_{rj}^2}{V_r} - 1,

  since a Dirichlet with mean :math:`m` and precision :math:`s` has
  :math:`V = (1 - \sum_j m_j^2)/(s + 1)`. :math:`V_r` is computed by the law of total
  variance (within-path plus between-path parts), without cancellation.

When one path carries all the weight both projections are exact (:math:`u' = u + c(q)`,
Bayes' rule for a Dirichlet). The parameters reported are the posterior mean
:math:`u_{rj} / u_{r0}`. Drift: ``forgetting`` :math:`\phi \in (0, 1]` shrinks the
counts gathered so far toward the initial prior :math:`\alpha` before each update,
:math:`u \leftarrow \alpha + \phi\, (u - \alpha)` (memory about :math:`1/(1 - \phi)`
sequences; :math:`\phi = 1`, the default, is the exact online Bayesian update).

**Several features per step** (:class:`~hiddenstate.families.multicategorical.
MultiCategoricalEmissions`, ``emissionprob`` ``(F, K, W)``): every feature's emission rows
are rows :math:`B^{(f)}_i` like any other (the counts :math:`c_{B^{(f)}_i k}` of a path are
the steps in state :math:`i` whose feature :math:`f` is :math:`k`; the likelihood is the
product), so every rule above applies row by row; the padding past a feature's alphabet
is a structural zero (BOnA and MPA leave it out of their rows).

**Partial state labels** (``states``, ``-1`` unknown): BWO and Baldi-Chauvin take
:math:`n_{rj}` from the forward-backward with the emission table clamped at the labelled
steps (:func:`hiddenstate.inference.clamp_states`, as the batch modes), i.e. the expected
counts given the sequence and its labels; BOnA and MPA enumerate only the paths that agree
with the labels (:math:`K^U` for :math:`U` unlabelled steps), the exact posterior
:math:`p(\theta \mid y, z_L)`.

Every learner is deterministic and keeps its whole state in a flat dict of arrays and
scalars (see :mod:`.base`), so a checkpoint resumes bit-identically. Sequences are always
consumed whole: ``continues=True`` is refused.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma, gammaln, zeta

from ... import inference
from ..._validation import check_lengths, check_states, check_stochastic
from ...errors import InvalidInputError, NumericalError, ZeroProbabilityError
from ...families.dirichlet import estimate_rows
from ..problem import kbest_weights
from .base import (
    check_count,
    check_layout,
    check_nonneg,
    check_probabilities,
    grown_rows,
    template,
)

__all__ = [
    "BaldiChauvin",
    "BaumWelchOnline",
    "BayesianOnline",
    "MeanPosterior",
    "PER_SEQUENCE_LEARNERS",
    "mixture_posterior",
    "solve_mean_log",
]

_BLOCKS = ("startprob", "transmat", "emissionprob")
#: entries of the dense (paths x parameters) count table built at a time
_CHUNK_ENTRIES = 1 << 20


# -- shared plumbing ------------------------------------------------------------------------------
def _refuse_continues(continues: bool, name: str) -> None:
    if continues:
        raise InvalidInputError(
            f"continues: learn={name!r} learns from whole sequences and cannot continue the "
            "previous call's last sequence; pass each sequence whole in one call (or use "
            "learn='online-em', which learns observation by observation)")


def _check_family(family, name: str) -> None:
    if family.alphabets is None:
        raise InvalidInputError(
            f"emission: learn={name!r} is for categorical emissions (one or several features "
            f"per step), got {type(family).__name__}; use learn='online-em' for other "
            "emission families")


def _check_theta(theta: dict, family) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    K = family.n_states
    startprob = check_stochastic(theta["startprob"], (K,), "startprob_")
    transmat = check_stochastic(theta["transmat"], (K, K), "transmat_")
    # (K, W), or (F, K, W) with zeros past each alphabet
    emis = family.check_params(theta["emission"])["emissionprob"]
    return startprob.copy(), transmat.copy(), emis.copy()


def _one_feature(rows: np.ndarray) -> np.ndarray:
    """The ``(K, W)`` emission block of a state that can grow its alphabet."""
    if rows.ndim != 2:
        raise InvalidInputError(
            "n_features: only a stream of one categorical feature can grow its alphabet")
    return rows


def _theta(startprob, transmat, emissionprob) -> dict:
    return {"startprob": startprob, "transmat": transmat,
            "emission": {"emissionprob": emissionprob}}


def _sequences(X, lengths, family, states=None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Symbols as int64 (checked against the alphabet; ``-1`` marks a missing one, which
    every learner here leaves out of its emission terms; ``(n, F)`` for several features),
    the sequence boundaries and the partial state labels (``-1``: unknown) or None."""
    X = family.validate_symbols(X)
    lengths = check_lengths(lengths, len(X))
    bounds = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=bounds[1:])
    if states is not None:
        states = check_states(states, len(X), family.n_states)
    return X, bounds, states


def _labels(states: np.ndarray | None, lo: int, hi: int) -> np.ndarray | None:
    """The labels of one sequence, or None where it has none."""
    if states is None:
        return None
    labels = states[lo:hi]
    return labels if np.any(labels >= 0) else None


def _copy_state(state: dict) -> dict:
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in state.items()}


def _check_common(learner, state: dict, theta: dict, family, prefix: str,
                  neg_inf: tuple[str, ...] = ()) -> dict:
    """Keys, dtypes and shapes against :meth:`start`'s state, and ``n_sequences``."""
    learner._check()
    _check_family(family, learner.name)
    state = check_layout(state, template(learner, theta, family, prefix), prefix,
                         learner.name, neg_inf)
    check_count(state, "n_sequences", prefix, what="sequences seen")
    return state


def _impossible(s: int, name: str, hint: str, labelled: bool = False) -> ZeroProbabilityError:
    if labelled:
        return ZeroProbabilityError(
            f"states: sequence {s} of this call has probability zero given its state labels "
            f"under the current parameters of learn={name!r} (a labelled state that cannot "
            "emit its observation, or two consecutive labels joined by a zero transition); "
            "check the labels; the state passed in is unchanged")
    return ZeroProbabilityError(
        f"X: sequence {s} of this call has probability zero under the current parameters of "
        f"learn={name!r}; {hint}")


class _ExpectedCounts:
    """Forward-backward of one sequence at a time (one :class:`inference.Sequences` per
    length, reused). With state ``labels`` (``-1``: unknown) the emission table is clamped
    at the labelled steps (:func:`inference.clamp_states`, as in the batch modes), so the
    expected counts are those of the paths that agree with the labels."""

    def __init__(self):
        self._layouts: dict[int, inference.Sequences] = {}

    def __call__(self, family, startprob, transmat, emissionprob, x, labels=None):
        T = len(x)
        seqs = self._layouts.get(T)
        if seqs is None:
            seqs = self._layouts[T] = inference.Sequences.from_lengths(np.array([T]))
        params = {"emissionprob": emissionprob}
        table, fold = family.table(params, x), None
        if labels is not None:
            table, fold = inference.clamp_states(
                table, labels, lambda rows: family.log_likelihood(params, x[rows]))
        post = inference.forward_backward(startprob, transmat, table, seqs)
        emis = family.statistics(x, inference.fold_rows(post.post, fold))["counts"]
        return float(post.loglik[0]), post.start, post.trans, emis


# -- Baum-Welch online ----------------------------------------------------------------------------
class BaumWelchOnline:
    r"""Baum-Welch online (BWO), a convex step toward the one-sequence EM estimate.

    After each sequence :math:`y`, every row moves
    :math:`\theta \leftarrow (1-\eta)\theta + \eta\,\hat\theta_{BW}(y)` (Alamino &
    Caticha; see the module docstring, :mod:`hiddenstate.learn.online.per_sequence`).
    ``learn="bwo"``; categorical emissions.

    Parameters
    ----------
    eta : float, default=0.005
        The learning rate, in (0, 1]; constant, so old sequences are forgotten
        geometrically (memory about 1/eta sequences). Default 0.005, chosen on the panel of
        ``experiments/defaults_panel.py``: one pass over 3,000 PTB sentences (K = 16) gave a
        held-out log-likelihood of -6.71 nats per token with 0.005 and -7.58 with 0.01;
        with 0.05 (the previous default) the pass stopped at sentence 2,144 with a
        ``ZeroProbabilityError`` (that sentence had probability zero under the running
        parameters).

    See Also
    --------
    OnlineEM : One observation at a time.

    Notes
    -----
    State: ``startprob``, ``transmat``, ``emissionprob`` (the current parameters) and
    ``n_sequences``.

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> from hiddenstate.drift import sample_sequences
    >>> teacher = (np.array([0.5, 0.5]), np.array([[0.9, 0.1], [0.2, 0.8]]),
    ...            np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]]))
    >>> X, lengths = sample_sequences(teacher, n=50, T=10, random_state=0)
    >>> model = hs.HMM(2, emission="categorical", learn="bwo",
    ...                learner_options={"eta": 0.05}, random_state=0)
    >>> model.partial_fit(X, lengths).learner_state_["n_sequences"]
    50
    """

    name = "bwo"

    def __init__(self, eta: float = 0.005):
        self.eta = eta

    def _check(self) -> float:
        eta = self.eta
        if not (isinstance(eta, (int, float, np.floating)) and 0.0 < eta <= 1.0):
            raise InvalidInputError(f"eta: expected a learning rate in (0, 1], got {eta!r}")
        return float(eta)

    def start(self, theta: dict, family, rng: np.random.Generator | None = None) -> dict:
        """Build the initial state: the parameters themselves.

        Parameters
        ----------
        theta : dict
            Initial parameters: ``{"startprob": (K,), "transmat": (K, K), "emission":
            {family keys...}}``.
        family : EmissionFamily
            The emission family (:mod:`hiddenstate.families`).
        rng : numpy.random.Generator or None, default=None
            Unused: the learner is deterministic.

        Returns
        -------
        dict
            The state.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a hyper-parameter is invalid, the family is not categorical, or ``theta``
            does not hold valid parameters.
        """
        self._check()
        _check_family(family, self.name)
        startprob, transmat, emis = _check_theta(theta, family)
        return {"startprob": startprob, "transmat": transmat, "emissionprob": emis,
                "n_sequences": 0}

    def grow(self, state: dict, n_symbols: int) -> dict:
        """Return the state over a larger alphabet.

        Every new symbol gets ``1/n_symbols`` of each emission row, the others are scaled
        by ``W/n_symbols`` (:func:`~hiddenstate.learn.online.base.grown_rows`).

        Parameters
        ----------
        state : dict
            The state of a stream of one categorical feature (left unchanged).
        n_symbols : int
            The new alphabet size.

        Returns
        -------
        dict
            The grown state.
        """
        return {**state, "emissionprob": grown_rows(_one_feature(state["emissionprob"]),
                                                    n_symbols)}

    def update(self, state: dict, X, lengths, family, continues: bool = False,
               states=None) -> dict:
        """Consume the sequences ``X`` in order, one update per sequence.

        Parameters
        ----------
        state : dict
            The state to continue from (left unchanged).
        X : ndarray of shape (n_samples, n_features)
            The sequences, concatenated, validated by the family.
        lengths : array-like of int or None
            The length of each sequence; None: one sequence.
        family : EmissionFamily
            The emission family.
        continues : bool, default=False
            Whether the first sequence continues the one the previous call ended in:
            refused (sequences are consumed whole).
        states : array-like of int or None, default=None
            Partial state labels (``-1``: unknown) that clamp each sequence's
            forward-backward.

        Returns
        -------
        dict
            The new state (``state`` itself is left unchanged).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``continues`` is True, the family is not categorical, the lengths or labels
            do not match ``X``, or a hyper-parameter is invalid.
        hiddenstate.errors.ZeroProbabilityError
            If a sequence has probability zero under the running parameters.
        """
        _refuse_continues(continues, self.name)
        _check_family(family, self.name)
        eta = self._check()
        X, bounds, states = _sequences(X, lengths, family, states)
        state = _copy_state(state)
        counts = _ExpectedCounts()
        for s in range(len(bounds) - 1):
            lo, hi = bounds[s], bounds[s + 1]
            self._step(state, X[lo:hi], s, counts, family, eta, _labels(states, lo, hi))
        return state

    def _step(self, state, x, s, counts, family, eta, labels=None):
        """One sequence, in place on ``state`` (a private copy)."""
        loglik, start, trans, emis = counts(family, state["startprob"], state["transmat"],
                                            state["emissionprob"], x, labels)
        if not np.isfinite(loglik):
            raise _impossible(s, self.name, "an emission or transition probability is exactly "
                              "zero (eta = 1 sets unseen entries to zero; use eta < 1)",
                              labels is not None)
        for key, n in zip(_BLOCKS, (start, trans, emis), strict=True):
            old = state[key]
            target, _ = estimate_rows(n, old, 1.0)
            state[key] = (1.0 - eta) * old + eta * target
        state["n_sequences"] = int(state["n_sequences"]) + 1

    def params(self, state: dict, family) -> dict:
        """Return the current parameters.

        Parameters
        ----------
        state : dict
            The state.
        family : EmissionFamily
            The emission family.

        Returns
        -------
        dict
            ``theta``: ``{"startprob", "transmat", "emission"}``.
        """
        return _theta(state["startprob"].copy(), state["transmat"].copy(),
                      state["emissionprob"].copy())

    def check_state(self, state: dict, theta: dict, family, prefix: str = "") -> None:
        """Check a state that did not come from :meth:`update`.

        The keys, dtypes and shapes of :meth:`start`'s, ``n_sequences`` in range, the
        parameters distributions.

        Parameters
        ----------
        state : dict
            The state (a checkpoint, a dict set by hand).
        theta : dict
            Valid parameters of the shapes the state must have.
        family : EmissionFamily
            The emission family.
        prefix : str, default=""
            Prepended to the key in the error message.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the state fails a check; the message names ``prefix + key``.
        """
        state = _check_common(self, state, theta, family, prefix)
        check_probabilities(state, _BLOCKS, prefix)


# -- Baldi-Chauvin --------------------------------------------------------------------------------
def _softmax_rows(w: np.ndarray, lam: float) -> np.ndarray:
    z = lam * w
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


class BaldiChauvin:
    r"""Baldi-Chauvin: a stochastic gradient step on softmax weights after each sequence.

    Softmax weights :math:`w`, :math:`\Delta w_{rj} = \eta(n_{rj} -
    n_{r\cdot}\theta_{rj})` (Baldi & Chauvin 1994; see the module docstring,
    :mod:`hiddenstate.learn.online.per_sequence`). ``learn="baldi-chauvin"``; categorical
    emissions.

    Parameters
    ----------
    eta : float, default=0.2
        The learning rate (> 0); constant, so the learner tracks drift.
    lam : float, default=1.0
        The softmax gain :math:`\lambda` (> 0).

    See Also
    --------
    BaumWelchOnline : A convex step toward the one-sequence EM estimate.

    Notes
    -----
    State: ``w_startprob``, ``w_transmat``, ``w_emissionprob`` (``ln(theta) / lam`` at the
    start; ``-inf`` for structural zeros) and ``n_sequences``.

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> from hiddenstate.drift import sample_sequences
    >>> teacher = (np.array([0.5, 0.5]), np.array([[0.9, 0.1], [0.2, 0.8]]),
    ...            np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]]))
    >>> X, lengths = sample_sequences(teacher, n=50, T=10, random_state=0)
    >>> model = hs.HMM(2, emission="categorical", learn="baldi-chauvin", random_state=0)
    >>> sorted(model.partial_fit(X, lengths).learner_state_)
    ['n_sequences', 'w_emissionprob', 'w_startprob', 'w_transmat']
    """

    name = "baldi-chauvin"

    def __init__(self, eta: float = 0.2, lam: float = 1.0):
        self.eta = eta
        self.lam = lam

    def _check(self) -> tuple[float, float]:
        for arg in ("eta", "lam"):
            v = getattr(self, arg)
            if not (isinstance(v, (int, float, np.floating)) and np.isfinite(v) and v > 0):
                raise InvalidInputError(f"{arg}: expected a positive number, got {v!r}")
        return float(self.eta), float(self.lam)

    def start(self, theta: dict, family, rng: np.random.Generator | None = None) -> dict:
        """Build the initial state: the weights ``ln(theta) / lam``.

        Parameters
        ----------
        theta : dict
            Initial parameters: ``{"startprob": (K,), "transmat": (K, K), "emission":
            {family keys...}}``.
        family : EmissionFamily
            The emission family (:mod:`hiddenstate.families`).
        rng : numpy.random.Generator or None, default=None
            Unused: the learner is deterministic.

        Returns
        -------
        dict
            The state.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a hyper-parameter is invalid, the family is not categorical, or ``theta``
            does not hold valid parameters.
        """
        _, lam = self._check()
        _check_family(family, self.name)
        state = {}
        for key, p in zip(_BLOCKS, _check_theta(theta, family), strict=True):
            with np.errstate(divide="ignore"):
                state["w_" + key] = np.log(p) / lam
        state["n_sequences"] = 0
        return state

    def grow(self, state: dict, n_symbols: int) -> dict:
        """Return the state over a larger alphabet.

        Every new symbol's weight is the log-mean-exp of its row's (divided by ``lam``),
        which gives it ``1/n_symbols`` of the row and scales the others by
        ``W/n_symbols``, as :func:`~hiddenstate.learn.online.base.grown_rows`.

        Parameters
        ----------
        state : dict
            The state of a stream of one categorical feature (left unchanged).
        n_symbols : int
            The new alphabet size.

        Returns
        -------
        dict
            The grown state.
        """
        _, lam = self._check()
        w = _one_feature(state["w_emissionprob"])
        K, W = w.shape
        top = np.max(lam * w, axis=1, keepdims=True)
        mean = (top + np.log(np.mean(np.exp(lam * w - top), axis=1, keepdims=True))) / lam
        return {**state, "w_emissionprob": np.hstack([w, np.repeat(mean, n_symbols - W,
                                                                    axis=1)])}

    def update(self, state: dict, X, lengths, family, continues: bool = False,
               states=None) -> dict:
        """Consume the sequences ``X`` in order, one update per sequence.

        Parameters
        ----------
        state : dict
            The state to continue from (left unchanged).
        X : ndarray of shape (n_samples, n_features)
            The sequences, concatenated, validated by the family.
        lengths : array-like of int or None
            The length of each sequence; None: one sequence.
        family : EmissionFamily
            The emission family.
        continues : bool, default=False
            Whether the first sequence continues the one the previous call ended in:
            refused (sequences are consumed whole).
        states : array-like of int or None, default=None
            Partial state labels (``-1``: unknown) that clamp each sequence's
            forward-backward.

        Returns
        -------
        dict
            The new state (``state`` itself is left unchanged).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``continues`` is True, the family is not categorical, the lengths or labels
            do not match ``X``, or a hyper-parameter is invalid.
        hiddenstate.errors.ZeroProbabilityError
            If a sequence has probability zero under the running parameters.
        """
        _refuse_continues(continues, self.name)
        _check_family(family, self.name)
        eta, lam = self._check()
        X, bounds, states = _sequences(X, lengths, family, states)
        state = _copy_state(state)
        counts = _ExpectedCounts()
        for s in range(len(bounds) - 1):
            lo, hi = bounds[s], bounds[s + 1]
            self._step(state, X[lo:hi], s, counts, family, eta, lam,
                       _labels(states, lo, hi))
        return state

    def _step(self, state, x, s, counts, family, eta, lam, labels=None):
        """One sequence, in place on ``state`` (a private copy)."""
        theta = [_softmax_rows(state["w_" + key], lam) for key in _BLOCKS]
        loglik, start, trans, emis = counts(family, *theta, x, labels)
        if not np.isfinite(loglik):
            raise _impossible(s, self.name, "the sequence needs an entry that started at "
                              "exactly zero (a structural zero)", labels is not None)
        for key, p, n in zip(_BLOCKS, theta, (start, trans, emis), strict=True):
            w = state["w_" + key]
            step = eta * (n - n.sum(axis=-1, keepdims=True) * p)
            state["w_" + key] = np.where(np.isneginf(w), w, w + step)
        state["n_sequences"] = int(state["n_sequences"]) + 1

    def params(self, state: dict, family) -> dict:
        """Return the current parameters.

        Parameters
        ----------
        state : dict
            The state.
        family : EmissionFamily
            The emission family.

        Returns
        -------
        dict
            ``theta``: ``{"startprob", "transmat", "emission"}`` (the softmax of the weights).
        """
        lam = float(self.lam)
        return _theta(*(_softmax_rows(state["w_" + key], lam) for key in _BLOCKS))

    def check_state(self, state: dict, theta: dict, family, prefix: str = "") -> None:
        """Check a state that did not come from :meth:`update`.

        The keys, dtypes and shapes of :meth:`start`'s, ``n_sequences`` in range, weights
        finite or ``-inf`` (structural zeros) with ``lam * w`` finite and at least one
        finite weight per row.

        Parameters
        ----------
        state : dict
            The state (a checkpoint, a dict set by hand).
        theta : dict
            Valid parameters of the shapes the state must have.
        family : EmissionFamily
            The emission family.
        prefix : str, default=""
            Prepended to the key in the error message.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the state fails a check; the message names ``prefix + key``.
        """
        keys = tuple("w_" + key for key in _BLOCKS)
        state = _check_common(self, state, theta, family, prefix, neg_inf=keys)
        _, lam = self._check()
        for key in keys:
            w = state[key]
            finite = np.isfinite(w)
            with np.errstate(over="ignore"):
                scaled = lam * np.where(finite, w, 0.0)
            if not np.all(finite.any(axis=-1)) or not np.all(np.isfinite(scaled)):
                raise InvalidInputError(
                    f"{prefix}{key}: every row needs a finite weight and lam * w must be "
                    "finite; the state was modified or corrupted")


# -- the exact mixture posterior of the Bayesian learners -----------------------------------------
class _Layout:
    """All rows of (pi, A, B) laid end to end in one flat vector.

    Entry order: pi (K), then A row by row (K x K), then B row by row (K x W), or with
    several features (``alphabets`` of length F) the K rows of each feature in turn, each
    row as long as its feature's alphabet (the padding of the ``(F, K, W)`` array is left
    out). ``starts`` are the first entries of the rows, ``row`` the row of every entry.
    """

    def __init__(self, K: int, alphabets: int | tuple[int, ...], multi: bool = False):
        if isinstance(alphabets, (int, np.integer)):
            alphabets = (int(alphabets),)
        self.K, self.alphabets, self.multi = K, tuple(alphabets), multi
        self.W = max(self.alphabets)
        sizes = np.array([K] * (1 + K) + [W for W in self.alphabets for _ in range(K)])
        self.D = int(sizes.sum())
        self.starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        self.row = np.repeat(np.arange(len(self.starts)), sizes)
        widths = np.array(self.alphabets)
        self.emis_off = K + K * K + K * np.concatenate(([0], np.cumsum(widths)[:-1]))

    @classmethod
    def of(cls, family) -> _Layout:
        return cls(family.n_states, family.alphabets, multi=family.feature_axis)

    def flat(self, startprob, transmat, emissionprob) -> np.ndarray:
        if self.multi:
            emis = [emissionprob[f, :, :W].ravel() for f, W in enumerate(self.alphabets)]
        else:
            emis = [emissionprob.ravel()]
        return np.concatenate([startprob.ravel(), transmat.ravel(), *emis])

    def split(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        K, W = self.K, self.W
        pi, A = v[:K].copy(), v[K:K + K * K].reshape(K, K).copy()
        if not self.multi:
            return pi, A, v[K + K * K:].reshape(K, W).copy()
        B = np.zeros((len(self.alphabets), K, W))
        for f, Wf in enumerate(self.alphabets):
            B[f, :, :Wf] = v[self.emis_off[f]:self.emis_off[f] + K * Wf].reshape(K, Wf)
        return pi, A, B

    def row_sums(self, a: np.ndarray) -> np.ndarray:
        """Sum within each row along the last axis."""
        return np.add.reduceat(a, self.starts, axis=-1)

    def path_counts(self, paths: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``(P, D)`` counts :math:`c(q)` of every path (rows of ``paths``) for symbols ``x``
        (``(T,)``, or ``(T, F)`` with several features: one emission event per feature).

        A missing symbol (``-1``) has no emission event: its emission probability is summed
        over the alphabet (it is 1 for every path), so the path weights and moments are
        those of the observed symbols alone."""
        K, D = self.K, self.D
        P, T = paths.shape
        cols = x.reshape(T, -1)
        events = [paths[:, :1], K + paths[:, :-1] * K + paths[:, 1:]]
        for f, W in enumerate(self.alphabets):
            seen = cols[:, f] >= 0
            events.append(self.emis_off[f] + paths[:, seen] * W + cols[None, seen, f])
        flat = (np.arange(P, dtype=np.int64)[:, None] * D + np.concatenate(events, axis=1))
        return np.bincount(flat.ravel(), minlength=P * D).reshape(P, D).astype(np.float64)


def _all_paths(K: int, T: int, lo: int, hi: int) -> np.ndarray:
    """Paths ``lo .. hi - 1`` of the ``K**T`` hidden paths (lexicographic, first step most
    significant), as a ``(hi - lo, T)`` array."""
    idx = np.arange(lo, hi, dtype=np.int64)
    out = np.empty((hi - lo, T), dtype=np.int64)
    for t in range(T - 1, -1, -1):
        out[:, t] = idx % K
        idx //= K
    return out


def mixture_posterior(u: np.ndarray, layout: _Layout, x: np.ndarray, max_paths: int,
                      moments: tuple[str, ...], labels: np.ndarray | None = None) -> dict:
    r"""Moments of the exact posterior after one sequence ``x`` under the prior
    :math:`\prod_r \mathrm{Dir}(u_r)` (``u`` flat in ``layout``'s order).

    Enumerates the ``K**T`` paths in chunks; with partial state ``labels`` (``-1``:
    unknown) only the ``K**U`` paths that agree with them (``U`` unlabelled steps): the
    posterior given the sequence and its labels,
    :math:`p(\theta \mid y, z_L) \propto \sum_{q:\, q_L = z_L} p(\theta)\,
    p(y, q \mid \theta)`. Returns ``log_evidence`` (log p(x) under the prior predictive;
    with labels log p(x, z_L)) and, as asked by ``moments``:

    - ``"mean_log"``: :math:`\langle \ln\theta_{rj}\rangle` (``-inf`` where ``u == 0``),
    - ``"mean"``: :math:`\langle\theta_{rj}\rangle`,
    - ``"total_var"``: :math:`\sum_j \mathrm{Var}(\theta_{rj})` per row,
    - ``"mean_counts"``: :math:`\sum_q \omega_q c(q)` (the expected counts).

    Entries with ``u == 0`` are structural zeros: a path that uses one has weight zero.
    Raises ``ZeroProbabilityError`` (a ``ValueError``) if every path has weight zero.
    """
    K, T = layout.K, len(x)
    free = np.arange(T) if labels is None else np.flatnonzero(labels < 0)
    U = len(free)
    P = K ** U
    if P > max_paths:
        raise InvalidInputError(
            f"X: a sequence of length {T} with {U} unlabelled steps has {K}**{U} = {P} hidden "
            f"paths, more than max_paths={max_paths} that learn='bona' / 'mpa' enumerate; "
            "cut the sequences shorter, raise max_paths, label more steps, or use a learner "
            "that needs no enumeration: learn='online-em', 'bwo' or 'baldi-chauvin'")
    support = u > 0
    us = np.where(support, u, 1.0)
    u0 = layout.row_sums(u)
    step = max(1, _CHUNK_ENTRIES // layout.D)
    bounds = list(range(0, P, step)) + [P]
    cache = {}

    def paths(lo, hi):
        if labels is None:
            return _all_paths(K, T, lo, hi)
        out = np.empty((hi - lo, T), dtype=np.int64)
        out[:, free] = _all_paths(K, U, lo, hi)
        out[:, labels >= 0] = labels[labels >= 0]
        return out

    def counts(lo, hi):
        if (lo, hi) in cache:
            return cache[(lo, hi)]
        c = layout.path_counts(paths(lo, hi), x)
        if len(bounds) == 2:
            cache[(lo, hi)] = c
        return c

    # pass 1: log weight of every path
    logw = np.empty(P)
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        c = counts(lo, hi)
        c0 = layout.row_sums(c)
        with np.errstate(invalid="ignore"):
            term = gammaln(us + c) - gammaln(us)
        term = np.where(support, term, np.where(c > 0, -np.inf, 0.0))
        logw[lo:hi] = term.sum(axis=1) - (gammaln(u0 + c0) - gammaln(u0)).sum(axis=1)
    if not np.isfinite(logw.max()):
        raise ZeroProbabilityError("every hidden path of the sequence uses a structural zero")
    w, log_evidence = kbest_weights(logw[None])
    w = w[0]
    out = {"log_evidence": float(log_evidence[0])}
    want_mean = "mean" in moments or "total_var" in moments
    mean_log = mean_counts = mean = mean_sq = within = 0.0
    # pass 2: weighted moments
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        c = counts(lo, hi)
        wc = w[lo:hi]
        a = us + c
        a0 = u0 + layout.row_sums(c)  # (paths, rows)
        if "mean_log" in moments:
            mean_log = mean_log + wc @ (digamma(a) - digamma(a0)[:, layout.row])
        if "mean_counts" in moments:
            mean_counts = mean_counts + wc @ c
        if want_mean:
            mu = np.where(support, a / a0[:, layout.row], 0.0)
            mean = mean + wc @ mu
            sq = layout.row_sums(mu * mu)
            mean_sq = mean_sq + wc @ sq
            # each path's Dirichlet: sum_j Var = (1 - sum_j mu_j^2) / (a0 + 1)
            within = within + wc @ ((1.0 - sq) / (a0 + 1.0))
    if "mean_log" in moments:
        out["mean_log"] = np.where(support, mean_log, -np.inf)
    if "mean_counts" in moments:
        out["mean_counts"] = mean_counts
    if "mean" in moments:
        out["mean"] = mean
    if "total_var" in moments:
        # law of total variance: within-path part + between-path part sum_j <mu_j^2> - m_j^2
        between = mean_sq - layout.row_sums(mean * mean)
        out["total_var"] = within + np.maximum(between, 0.0)
    return out


# -- projections ----------------------------------------------------------------------------------
def _match_mean_variance(mean: np.ndarray, total_var: np.ndarray, layout: _Layout,
                         support: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """MPA: the Dirichlet rows with mean ``mean`` and total variance ``total_var``.

    A row with fewer than two free entries is deterministic; it gets ``fallback``.
    """
    n_free = layout.row_sums(support.astype(np.float64))
    spread = 1.0 - layout.row_sums(mean * mean)
    ok = (n_free >= 2) & (total_var > 0) & (spread > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(ok, spread / np.where(ok, total_var, 1.0) - 1.0, 0.0)
    if np.any(ok & ~(s > 0)):
        raise NumericalError("mpa: the posterior's variance gave a non-positive Dirichlet "
                             "precision; this should not happen, please report it")
    return np.where(ok[layout.row], s[layout.row] * mean, fallback)


def solve_mean_log(mean_log: np.ndarray, starts: np.ndarray, init: np.ndarray,
                   tol: float = 1e-13, max_iter: int = 100) -> np.ndarray:
    r"""Dirichlet rows :math:`u` with :math:`\psi(u_j) - \psi(\sum_k u_k) = ` ``mean_log``.

    Rows lie end to end in the flat arrays (row ``r`` starts at ``starts[r]``; every row at
    least two entries; ``init > 0``). Newton's method on the concave
    :math:`f(u) = \ln\Gamma(u_0) - \sum_j \ln\Gamma(u_j) + \sum_j u_j m_j` (Minka 2000,
    "Estimating a Dirichlet distribution": the Hessian
    :math:`\psi'(u_0)\,\mathbf{1}\mathbf{1}^\top - \mathrm{diag}(\psi'(u_j))` is inverted in
    O(J) by Sherman-Morrison), with step halving to keep :math:`u > 0` and :math:`f`
    increasing. Stops when every residual is below ``tol`` (relative to
    :math:`\max(1, |m_j|)`); raises ``NumericalError`` if it cannot get below 1e-10.
    """
    m = np.asarray(mean_log, dtype=np.float64)
    u = np.asarray(init, dtype=np.float64).copy()
    starts = np.asarray(starts, dtype=np.int64)
    row = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(m))))
    scale = np.maximum(1.0, np.abs(m))

    def value_grad(u):
        u0 = np.add.reduceat(u, starts)
        g = digamma(u0)[row] - digamma(u) + m
        f = gammaln(u0) - np.add.reduceat(gammaln(u) - u * m, starts)
        return f, g, u0

    f, g, u0 = value_grad(u)
    for _ in range(max_iter):
        if np.all(np.abs(g) <= tol * scale):
            break
        q = zeta(2.0, u)  # trigamma, without polygamma's Python wrapper
        z = zeta(2.0, u0)
        b = z * np.add.reduceat(g / q, starts) / (1.0 - z * np.add.reduceat(1.0 / q, starts))
        d = (g + b[row]) / q
        if np.all(np.abs(d) <= 4 * np.finfo(float).eps * u):
            break  # converged to rounding
        # largest step that keeps every entry positive (with a margin), at most 1
        with np.errstate(divide="ignore"):
            limit = np.where(d < 0, -u / d, np.inf)
        t = np.minimum(1.0, 0.9 * np.minimum.reduceat(limit, starts))
        res = np.maximum.reduceat(np.abs(g) / scale, starts)
        for _ in range(60):
            cand = u + t[row] * d
            fc, gc, u0c = value_grad(cand)
            # a step is kept if it raises f or lowers the residual (near the optimum f is
            # flat to rounding and only the residual tells progress)
            worse = (fc < f) & (np.maximum.reduceat(np.abs(gc) / scale, starts) >= res)
            if not np.any(worse):
                break
            t = np.where(worse, 0.5 * t, t)
        u, f, g, u0 = cand, fc, gc, u0c
    if not np.all(np.abs(g) <= 1e-10 * scale):
        raise NumericalError(
            f"bona: the digamma system did not converge (largest residual "
            f"{float(np.max(np.abs(g))):.3g}); please report it")
    return u


class _DirichletOnline:
    """Shared by BOnA and MPA: the Dirichlet state, forgetting and the path enumeration."""

    name = ""

    def __init__(self, prior_count=None, forgetting: float = 1.0, max_paths: int = 10**5):
        self.prior_count = prior_count
        self.forgetting = forgetting
        self.max_paths = max_paths

    def _check(self) -> tuple[float, int]:
        phi = self.forgetting
        if not (isinstance(phi, (int, float, np.floating)) and 0.0 < phi <= 1.0):
            raise InvalidInputError(f"forgetting: expected a factor in (0, 1], got {phi!r}")
        mp = self.max_paths
        if not (isinstance(mp, (int, np.integer)) and not isinstance(mp, bool) and mp >= 1):
            raise InvalidInputError(f"max_paths: expected a positive integer, got {mp!r}")
        pc = self.prior_count
        if pc is not None and not (isinstance(pc, (int, float, np.floating))
                                   and np.isfinite(pc) and pc > 0):
            raise InvalidInputError(
                f"prior_count: expected a positive number (pseudo-counts per row) or None, "
                f"got {pc!r}")
        return float(phi), int(mp)

    def start(self, theta: dict, family, rng: np.random.Generator | None = None) -> dict:
        """Build the initial state: Dirichlet rows centred on ``theta``.

        Prior rows :math:`u_r = n_r \\theta_r` with ``n_r = prior_count`` pseudo-counts
        per row (None: the row's length, so a uniform row gives the flat
        Dirichlet(1, ..., 1); with several features, its feature's alphabet). Zero entries
        are structural zeros.

        Parameters
        ----------
        theta : dict
            Initial parameters: ``{"startprob": (K,), "transmat": (K, K), "emission":
            {family keys...}}``.
        family : EmissionFamily
            The emission family (:mod:`hiddenstate.families`).
        rng : numpy.random.Generator or None, default=None
            Unused: the learner is deterministic.

        Returns
        -------
        dict
            The state.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a hyper-parameter is invalid, the family is not categorical, or ``theta``
            does not hold valid parameters.
        """
        self._check()
        _check_family(family, self.name)
        state = {}
        for key, p in zip(_BLOCKS, _check_theta(theta, family), strict=True):
            n = p.shape[-1] if self.prior_count is None else float(self.prior_count)
            if self.prior_count is None and key == "emissionprob":  # each row's length
                n = family.from_feature_rows([np.full((family.n_states, W), float(W))
                                              for W in family.alphabets])
            state["u_" + key] = n * p
            state["prior_" + key] = n * p
        state["n_sequences"] = 0
        return state

    def grow(self, state: dict, n_symbols: int) -> dict:
        """Return the state over a larger alphabet.

        Every new symbol of a row gets the mean pseudo-count of the row's prior (1 for the
        default flat start), as prior and as posterior (it has no data), so the known
        symbols keep their counts.

        Parameters
        ----------
        state : dict
            The state of a stream of one categorical feature (left unchanged).
        n_symbols : int
            The new alphabet size.

        Returns
        -------
        dict
            The grown state.
        """
        prior = _one_feature(state["prior_emissionprob"])
        K, W = prior.shape
        extra = np.repeat(prior.mean(axis=1, keepdims=True), n_symbols - W, axis=1)
        return {**state, "prior_emissionprob": np.hstack([prior, extra]),
                "u_emissionprob": np.hstack([state["u_emissionprob"], extra])}

    def _project(self, post: dict, u: np.ndarray, layout: _Layout) -> np.ndarray:
        raise NotImplementedError

    _moments: tuple[str, ...] = ()

    def update(self, state: dict, X, lengths, family, continues: bool = False,
               states=None) -> dict:
        """Consume the sequences ``X`` in order, one update per sequence.

        Parameters
        ----------
        state : dict
            The state to continue from (left unchanged).
        X : ndarray of shape (n_samples, n_features)
            The sequences, concatenated, validated by the family.
        lengths : array-like of int or None
            The length of each sequence; None: one sequence.
        family : EmissionFamily
            The emission family.
        continues : bool, default=False
            Whether the first sequence continues the one the previous call ended in:
            refused (sequences are consumed whole).
        states : array-like of int or None, default=None
            Partial state labels (``-1``: unknown): each mixture posterior sums over the
            paths that agree with them.

        Returns
        -------
        dict
            The new state (``state`` itself is left unchanged).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``continues`` is True, the family is not categorical, the lengths or labels
            do not match ``X``, a hyper-parameter is invalid, or a sequence has more hidden
            paths than ``max_paths`` (checked before learning anything).
        hiddenstate.errors.ZeroProbabilityError
            If a sequence has probability zero under the running parameters.
        """
        _refuse_continues(continues, self.name)
        _check_family(family, self.name)
        phi, max_paths = self._check()
        X, bounds, states = _sequences(X, lengths, family, states)
        K = family.n_states
        free = np.ones(len(X), dtype=np.int64) if states is None else (states < 0).astype(
            np.int64)
        longest = int(np.max(np.add.reduceat(free, bounds[:-1])))
        if K ** longest > max_paths:  # refuse before learning anything
            raise InvalidInputError(
                f"X: a sequence with {longest} unlabelled steps has {K}**{longest} = "
                f"{K ** longest} hidden paths, more than max_paths={max_paths} that "
                f"learn={self.name!r} enumerates; cut the sequences shorter, raise max_paths, "
                "or use a learner that needs no enumeration: learn='online-em', 'bwo' or "
                "'baldi-chauvin'")
        layout = _Layout.of(family)
        u = layout.flat(*(state["u_" + key] for key in _BLOCKS))
        prior = layout.flat(*(state["prior_" + key] for key in _BLOCKS))
        n_seen = int(state["n_sequences"])
        for s in range(len(bounds) - 1):
            lo, hi = bounds[s], bounds[s + 1]
            x, labels = X[lo:hi], _labels(states, lo, hi)
            if phi != 1.0:
                u = prior + phi * (u - prior)
            try:
                post = mixture_posterior(u, layout, x, max_paths, self._moments, labels)
            except ZeroProbabilityError:
                raise _impossible(s, self.name, "it needs an entry that started at exactly "
                                  "zero (a structural zero)", labels is not None) from None
            u = self._project(post, u, layout)
            n_seen += 1
        out = dict(zip(("u_" + key for key in _BLOCKS), layout.split(u), strict=True))
        out.update({"prior_" + key: state["prior_" + key].copy() for key in _BLOCKS})
        out["n_sequences"] = n_seen
        return out

    def check_state(self, state: dict, theta: dict, family, prefix: str = "") -> None:
        """Check a state that did not come from :meth:`update`.

        The keys, dtypes and shapes of :meth:`start`'s, ``n_sequences`` in range, Dirichlet
        parameters ``u_*`` and ``prior_*`` finite and non-negative with positive row sums,
        and zero in the same places (structural zeros stay zero).

        Parameters
        ----------
        state : dict
            The state (a checkpoint, a dict set by hand).
        theta : dict
            Valid parameters of the shapes the state must have.
        family : EmissionFamily
            The emission family.
        prefix : str, default=""
            Prepended to the key in the error message.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the state fails a check; the message names ``prefix + key``.
        """
        state = _check_common(self, state, theta, family, prefix)
        for key in _BLOCKS:
            u, prior = "u_" + key, "prior_" + key
            check_nonneg(state, (u, prior), prefix)
            if not np.array_equal(state[u] > 0, state[prior] > 0) \
                    or not np.all(state[prior].sum(axis=-1) > 0):
                raise InvalidInputError(
                    f"{prefix}{u}: must be positive exactly where {prior} is (with at least "
                    "one positive entry per row); the state was modified or corrupted")

    def params(self, state: dict, family) -> dict:
        """Return the posterior mean of the parameters.

        Parameters
        ----------
        state : dict
            The state.
        family : EmissionFamily
            The emission family.

        Returns
        -------
        dict
            ``theta``: ``{"startprob", "transmat", "emission"}`` (the posterior mean).
        """
        return _theta(*(state["u_" + key] / state["u_" + key].sum(axis=-1, keepdims=True)
                        for key in _BLOCKS))


def _mpa_rows(post: dict, u: np.ndarray, layout: _Layout) -> np.ndarray:
    support = u > 0
    return _match_mean_variance(post["mean"], post["total_var"], layout, support,
                                u + post["mean_counts"])


class MeanPosterior(_DirichletOnline):
    r"""Mean posterior approximation (MPA): the exact posterior, projected by its moments.

    The exact mixture posterior after each sequence is projected onto Dirichlet rows with
    the same mean and the same total variance :math:`\sum_j \mathrm{Var}(\theta_{rj})`
    (Alamino & Caticha; the second moment is our choice, see the module docstring,
    :mod:`hiddenstate.learn.online.per_sequence`). ``learn="mpa"``; categorical emissions.

    Parameters
    ----------
    prior_count : float or None, default=None
        The pseudo-counts per row of the initial Dirichlet centred on the initial
        parameters (None: the row's length, i.e. Dirichlet(1, ..., 1) for a uniform row).
    forgetting : float, default=1.0
        A factor in (0, 1] applied to the gathered counts before each update (1: exact
        online Bayes; < 1 tracks drift with memory about 1 / (1 - forgetting)).
    max_paths : int, default=100000
        The longest enumeration allowed: a sequence of length T with K states has K**T
        hidden paths.

    See Also
    --------
    BayesianOnline : The KL projection of the same posterior.

    Notes
    -----
    State: ``u_startprob``, ``u_transmat``, ``u_emissionprob`` (Dirichlet parameters),
    ``prior_*`` (the initial ones, the target of forgetting) and ``n_sequences``.

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> from hiddenstate.drift import sample_sequences
    >>> teacher = (np.array([0.5, 0.5]), np.array([[0.9, 0.1], [0.2, 0.8]]),
    ...            np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]]))
    >>> X, lengths = sample_sequences(teacher, n=20, T=6, random_state=0)
    >>> model = hs.HMM(2, emission="categorical", learn="mpa", random_state=0)
    >>> model.partial_fit(X, lengths).learner_state_["n_sequences"]
    20
    """

    name = "mpa"
    _moments = ("mean", "total_var", "mean_counts")

    def _project(self, post, u, layout):
        return _mpa_rows(post, u, layout)


class BayesianOnline(_DirichletOnline):
    r"""Bayesian online algorithm (BOnA): the exact posterior, projected by KL divergence.

    The exact mixture posterior after each sequence is projected onto Dirichlet rows by
    minimising KL(posterior || projection), i.e. matching :math:`\langle \ln\theta
    \rangle` by solving the digamma system with Newton's method (Minka 2000), started
    from the MPA solution (Alamino & Caticha; see the module docstring,
    :mod:`hiddenstate.learn.online.per_sequence`). ``learn="bona"``; categorical emissions.

    Parameters
    ----------
    prior_count : float or None, default=None
        The pseudo-counts per row of the initial Dirichlet centred on the initial
        parameters (None: the row's length, i.e. Dirichlet(1, ..., 1) for a uniform row).
    forgetting : float, default=1.0
        A factor in (0, 1] applied to the gathered counts before each update (1: exact
        online Bayes; < 1 tracks drift with memory about 1 / (1 - forgetting)).
    max_paths : int, default=100000
        The longest enumeration allowed: a sequence of length T with K states has K**T
        hidden paths.

    See Also
    --------
    MeanPosterior : The moment projection of the same posterior.

    Notes
    -----
    The same state as :class:`MeanPosterior`.

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> from hiddenstate.drift import sample_sequences
    >>> teacher = (np.array([0.5, 0.5]), np.array([[0.9, 0.1], [0.2, 0.8]]),
    ...            np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]]))
    >>> X, lengths = sample_sequences(teacher, n=20, T=6, random_state=0)
    >>> model = hs.HMM(2, emission="categorical", learn="bona", random_state=0)
    >>> model.partial_fit(X, lengths).learner_state_["n_sequences"]
    20
    """

    name = "bona"
    _moments = ("mean_log", "mean", "total_var", "mean_counts")

    def _project(self, post, u, layout):
        init = _mpa_rows(post, u, layout)  # matches mean and spread: a close start
        support = u > 0
        n_free = layout.row_sums(support.astype(np.float64))
        solve_rows = n_free >= 2
        sel = support & solve_rows[layout.row]
        out = init.copy()
        if np.any(sel):
            # rows restricted to their support, end to end
            row_of = layout.row[sel]
            starts = np.flatnonzero(np.r_[True, row_of[1:] != row_of[:-1]])
            out[sel] = solve_mean_log(post["mean_log"][sel], starts, init[sel])
        return out


#: the learners of this module by their ``learn=`` name
PER_SEQUENCE_LEARNERS = {cls.name: cls for cls in (BaumWelchOnline, BaldiChauvin, BayesianOnline,
                                                   MeanPosterior)}

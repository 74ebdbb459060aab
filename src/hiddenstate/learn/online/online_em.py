r"""Online EM for HMMs, one observation at a time (Cappé 2011, "Online EM algorithm for
hidden Markov models", JCGS 20(3); as written out in PROPS, Wojnowicz & Zhao, sec. IV).

The recursions are in :mod:`hiddenstate.kernels.online_em`; this module fixes the
conventions, the priors and the state.

**Time indices.** Observations are numbered :math:`t = 1, 2, \dots` across the whole
stream (all calls to :meth:`OnlineEM.update`, all sequences); the state's ``t`` is the
number consumed so far. Observation :math:`t` is processed with the parameters
:math:`\theta_{t-1}` left by the previous step (:math:`\theta_0` = the ``theta`` given to
:meth:`OnlineEM.start`):

1. the filter :math:`\phi_t(k) \propto \sum_{k'} \phi_{t-1}(k')\,\tau_{t-1}(k', k)\,
   b_{t-1,k}(y_t)` is computed from the previous filter :math:`\phi_{t-1}`, and the
   retrospective kernel :math:`r_t(k' \mid k) \propto \phi_{t-1}(k')\,\tau_{t-1}(k', k)`
   uses that same :math:`\phi_{t-1}`;
2. the step size :math:`\gamma_t = \text{step\_scale}\cdot t^{-\text{step\_exponent}}` is
   applied *at* observation :math:`t`: every auxiliary becomes
   :math:`\rho_t = (1-\gamma_t)\,\rho_{t-1} r_t + \gamma_t\,\text{new}_t`, so the first
   observation gets weight :math:`\gamma_1` (1 by default) and the statistics are the
   weighted averages :math:`\sum_{s \le t} \gamma_s \prod_{s < u \le t} (1-\gamma_u)\,
   (\cdot)_s` (they sum to one when :math:`\gamma_1 = 1`: they are per-observation
   averages, not counts);
3. :math:`S_t = \sum_k \rho_t(\cdot, k)\,\phi_t(k)`, and if :math:`t \ge \max(\text{warmup},
   1)` the M-step sets :math:`\theta_t = \bar\theta(S_t)`, else :math:`\theta_t =
   \theta_{t-1}` (the statistics accumulate from the first observation on; the first
   M-step follows observation ``max(warmup, 1)``).

``step_exponent`` in (0.5, 1] is Cappé's setting (default 0.6); ``step_exponent = 0``
gives the constant step :math:`\gamma = \text{step\_scale} < 1`, which forgets the past
geometrically (memory about :math:`1/\gamma` observations) and tracks a drifting source.

**Sequences.** At the first observation of a new sequence the filter restarts from the
current ``startprob`` (:math:`\phi_t \propto \pi_{t-1} \circ b_{t-1}(y_t)`); the
statistics carry over. The new sequence is independent of the old one, so its
retrospective kernel is :math:`r_t(k' \mid k) = \phi_{t-1}(k')` (the last filter of the
previous sequence) and it contributes no transition term: the recursions stay the same
at a boundary. ``continues=True`` makes the first sequence of a call continue the one the
previous call ended in (a stream cut anywhere resumes exactly).

**Initial distribution.** Kept fixed by default. With ``learn_startprob=True`` its
statistic is the (step-size weighted) frequency of each state at sequence starts,
:math:`\rho^\pi_t(i, k) = (1-\gamma_t)(\rho^\pi_{t-1} r_t)(i, k) + \gamma_t\,
[\text{start}_t]\,\delta(i, k)`, and the M-step is its Dirichlet MAP row. (Within one long
sequence this statistic only decays, so the estimate drifts to the prior's mode: learn it
from many sequences.)

**M-step and priors.** Every categorical block (transitions, the initial distribution,
categorical emissions) is a Dirichlet MAP row, exactly the rule of
:class:`~hiddenstate.families.DirichletRows` (:func:`~hiddenstate.families.estimate_rows`:
:math:`\hat\theta_j \propto \max(S_j + \alpha_j - 1, 0)` on the support of the
starting parameters, a row with no mass keeps its value). The pseudo-counts
:math:`\alpha - 1` are on the scale of the statistics, i.e. *fractions of one
observation*. No epsilon is added anywhere: empty statistics (a symbol not yet seen, a
transition not yet used) are handled by the prior. **Default prior**: each row gets a
total pseudo-count of :data:`PRIOR_MASS` = 1e-6 spread evenly over its entries,
:math:`\alpha = 1 + 10^{-6}/n` (:math:`n` = K for transition rows and the initial
distribution, W for emission rows): small enough not to bias any estimate that has data,
positive so that no probability becomes an exact zero by underflow and a symbol unseen
before an M-step stays possible. Categorical emissions need :math:`\alpha > 1` (the
lazy normaliser is linear in the statistics, and with :math:`\alpha = 1` every symbol not
seen before the first M-step would become impossible forever); they use the learner's
``emissionprob_prior``, not the family's (whose default is the flat :math:`\alpha = 1`).
Gaussian and Poisson emissions use ``family.mstep`` with the family's own conjugate prior
(the family object's prior; ``hs.HMM(learn="online-em")`` builds the family with
the MAP defaults of ``docs/learning-modes.md``, e.g. ``covars_prior=0.01``; a state without
mass keeps its values).

**Missing entries and Gaussian mixtures: the complete data.** Cappé's recursion needs,
at each step, the new term :math:`E[s(Y_t, X_t) \mid Z_t = k, y_t; \theta_{t-1}]` of
state ``k``'s statistics, where :math:`X_t` is whatever else is hidden at step ``t``
besides the state. A categorical symbol, a Poisson count or a complete Gaussian row hides
nothing: the term is :math:`s(y_t)`. A Gaussian row with missing dimensions :math:`m`
hides :math:`x_m`: the term holds :math:`E[x \mid x_o, z = k]` and :math:`E[x x^\top
\mid x_o, z = k]` under :math:`\theta_{t-1}` (the batch E-step's conditional moments,
:meth:`~hiddenstate.families.GaussianEmissions.statistics`), while the emission term is
the marginal density of the observed dimensions; a row with nothing observed has neither.
A Gaussian-mixture state (``emission="gmm"``) hides the component :math:`c`: state
``k``'s statistic vector is one Gaussian vector per component, and the new term is its
expectation under the responsibilities :math:`p(c \mid z = k, y_t; \theta_{t-1})` (with
the conditional moments above when entries are missing); the component totals are the
weights' counts, and the M-step is the mixture family's (weights, means, covariances,
with its prior). This is online EM on the equivalent HMM over the K*M (state,
component) pairs with transitions tied across components: the retrospective kernel of a
pair depends only on its state, so the auxiliaries over pairs fold into the per-state
ones kept here. The categorical path (lazy, per symbol) is unchanged.

**Gaussian statistics about reference points.** Running averages of raw moments
:math:`x` and :math:`x x^\top` lose every digit of a variance that is small next to the
squared mean (data near 1e8 with unit spread). State ``i`` accumulates instead the
statistics of :math:`x - a_i` (``frame[i]``; the family's ``shift``): all reference points
start at the stream's first observation, and after an M-step a state whose mean has moved
more than one standard deviation from its reference point gets the mean as its new one,
its auxiliary re-expressed exactly (a linear map, see ``_follow_means``); a mixture keeps
one reference point per component (``frame`` (K, M, D)). Fits are then
shift-invariant up to the rounding of the data themselves.

**Polyak-Ruppert averaging** (``averaging=True``): the reported parameters are the
arithmetic means of the iterates :math:`\theta_t`, :math:`t \ge \max(\text{average\_start},
\text{warmup}, 1)`; the recursions themselves always run on the current iterate. For
categorical emissions the average is kept lazily too (see the kernel).

**Categorical emissions are lazy**: a step needs only the observed symbol's probability
:math:`b_{t-1,k}(y_t) = (S_{t-1}(k, y_t) + \alpha_{k y_t} - 1) / (N_{t-1}(k) +
\sum_w (\alpha_{kw} - 1))` with :math:`N = \sum_w S(\cdot, w)` (the MAP row above,
one entry of it), so the per-step cost does not depend on the alphabet
size W (amortised :math:`O(K^4 + K^3 \log B + W K^3 / B)` with the window ``block`` B,
default the power of two at or above W, between 1024 and 65536); the emission matrix is
materialised only by :meth:`OnlineEM.params`.

**Several categorical features** (:class:`~hiddenstate.families.multicategorical.
MultiCategoricalEmissions`): :math:`b_k(y_t) = \prod_f b^{(f)}_k(y_{tf})`, each factor the
lazy MAP entry above from its own feature's statistics and prior
(:math:`\alpha = 1 + 10^{-6}/W_f` by default). The state lays the features' symbols side
by side (``emission0``, ``E``, ``touch``, ``avg_acc``: ``sum W_f`` columns/blocks) and keeps
``G``, ``tree_Q`` and ``avg_U`` per feature (a leading axis F); one feature keeps the
single-feature layout. A missing entry (``-1``) of one feature has no factor.

**Partial state labels** (``states``): at a labelled step the emission of every other
state is 0 (:func:`hiddenstate.inference.clamp_log_likelihood`, the batch modes' clamp), in
the filter and so in the retrospective kernel and every statistic (Gaussian and Poisson:
their log-likelihood rows clamped; categorical: in the kernel).

**State.** A flat dict of NumPy arrays and Python scalars (the step counter ``t``, the
filter ``phi``, the auxiliaries, the window and its tree, the averages, the Gaussian
reference points ``frame``): saving and loading
it and continuing gives bit-identical parameters, wherever the stream was cut.
:meth:`OnlineEM.update` returns a new state and leaves its argument unchanged.
"""

from __future__ import annotations

import numpy as np

from ..._validation import broadcast_param, check_lengths, check_states, check_stochastic
from ...errors import InvalidInputError, ZeroProbabilityError
from ...families.dirichlet import DirichletRows
from ...families.gaussian import GaussianEmissions, full_covars
from ...inference import clamp_log_likelihood
from ...kernels.online_em import (
    DIAG,
    FULL,
    MAX_WINDOW,
    POISSON,
    SCALE_FLOOR,
    categorical_statistics,
    flush_window,
    online_em_categorical,
    online_em_dense,
)
from .base import (
    check_count,
    check_layout,
    check_nonneg,
    check_probabilities,
    check_sums,
    grown_rows,
    template,
)

__all__ = ["PRIOR_MASS", "OnlineEM"]

#: total pseudo-count per Dirichlet row of the default priors (in observations)
PRIOR_MASS = 1e-6
_TREE_ENTRIES = 1 << 21  # the default window's tree holds at most this many numbers (16 MB)


def _default_window(K: int, W: int) -> int:
    """The power of two at or above W, at least 1024, at most 65536 and at most
    ``_TREE_ENTRIES / (2 K^2)`` (and at least 16)."""
    B = 1 << max(W - 1, 1).bit_length()
    B = min(max(B, 1024), 1 << 16)
    while B > 16 and 2 * B * K * K > _TREE_ENTRIES:
        B >>= 1
    return B


def _is_number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


class OnlineEM:
    r"""Online EM (Cappé 2011) for HMMs, one observation at a time.

    For categorical (one or several features per step), Gaussian, Gaussian-mixture,
    Poisson or multinomial emissions (multinomial rows use the learner's
    ``emissionprob_prior``, as categorical ones), with missing entries (partly missing
    Gaussian, mixture and Poisson rows included); partial state labels clamp the filter.
    The module docstring (:mod:`hiddenstate.learn.online.online_em`) states the recursions,
    the time indices, the priors and the state.

    Parameters
    ----------
    step_scale : float, default=1.0
        The step size is :math:`\gamma_t` = ``step_scale * t**(-step_exponent)``;
        ``step_scale`` in (0, 1] (< 1 for a constant step).
    step_exponent : float, default=0.6
        In [0, 1]; Cappé's setting is (0.5, 1]; 0 gives the constant step
        ``step_scale``, which forgets the past geometrically and tracks drift.
    warmup : int, default=20
        Observations before the first M-step (>= 0; the first M-step follows
        observation ``max(warmup, 1)``).
    averaging : bool, default=False
        Report Polyak-Ruppert averages of the iterates from observation
        ``average_start`` on.
    average_start : int or None, default=None
        The first averaged observation; None: ``warmup``.
    learn_startprob : bool, default=False
        Learn the initial distribution from the sequence starts (else it stays fixed).
    startprob_prior, transmat_prior, emissionprob_prior : float or array-like or None, default=None
        Dirichlet :math:`\alpha` (scalar or broadcastable array); None:
        :math:`1 + 10^{-6}/n` per entry (see the module docstring).
        ``emissionprob_prior`` (categorical and multinomial only) must be > 1.
    block : int or None, default=None
        The window length B of the lazy categorical scheme (a power of two >= 2); None:
        the power of two at or above W, clipped to [1024, 65536] (and smaller for large K,
        so that the tree stays under 16 MB).

    See Also
    --------
    BaumWelchOnline, BaldiChauvin, BayesianOnline, MeanPosterior : Per-sequence learners.

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> from hiddenstate.drift import sample_sequences
    >>> teacher = (np.array([0.5, 0.5]), np.array([[0.9, 0.1], [0.2, 0.8]]),
    ...            np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]]))
    >>> X, lengths = sample_sequences(teacher, n=200, T=10, random_state=0)
    >>> model = hs.HMM(2, emission="categorical", learn="online-em", random_state=0)
    >>> model = model.partial_fit(X, lengths)        # each observation seen once
    >>> np.sort(np.diag(model.transmat_)).round(1)   # the teacher's 0.8 and 0.9
    array([0.8, 0.9])
    """

    name = "online-em"

    def __init__(self, step_scale: float = 1.0, step_exponent: float = 0.6, warmup: int = 20,
                 averaging: bool = False, average_start: int | None = None,
                 learn_startprob: bool = False, startprob_prior=None, transmat_prior=None,
                 emissionprob_prior=None, block: int | None = None):
        self.step_scale = step_scale
        self.step_exponent = step_exponent
        self.warmup = warmup
        self.averaging = averaging
        self.average_start = average_start
        self.learn_startprob = learn_startprob
        self.startprob_prior = startprob_prior
        self.transmat_prior = transmat_prior
        self.emissionprob_prior = emissionprob_prior
        self.block = block

    # -- hyper-parameters ----------------------------------------------------------------------
    def _check(self) -> None:
        s, e = self.step_scale, self.step_exponent
        if not (_is_number(s) and 0.0 < s <= 1.0):
            raise InvalidInputError(f"step_scale: expected a number in (0, 1], got {s!r}")
        if not (_is_number(e) and 0.0 <= e <= 1.0):
            raise InvalidInputError(
                f"step_exponent: expected a number in [0, 1] (Cappé: (0.5, 1]; 0 for a constant "
                f"step), got {e!r}")
        if not s * 2.0 ** (-e) < 1.0:  # gamma_t < 1 from t = 2 on
            raise InvalidInputError(
                "step_scale: the step size must be < 1 from the second observation on (a "
                "step of 1 forgets everything before it); with a constant step "
                "(step_exponent=0) pass e.g. step_scale=0.01")
        for name in ("warmup", "average_start"):
            value = getattr(self, name)
            if value is None and name == "average_start":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not (
                    0 <= value <= np.iinfo(np.int64).max):
                raise InvalidInputError(
                    f"{name}: expected an integer between 0 and 2**63 - 1, got {value!r}")
        for name in ("averaging", "learn_startprob"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise InvalidInputError(
                    f"{name}: expected True or False, got {getattr(self, name)!r}")
        B = self.block
        if B is not None and (isinstance(B, bool) or not isinstance(B, (int, np.integer))
                              or B < 2 or B > MAX_WINDOW or B & (B - 1)):
            raise InvalidInputError(
                f"block: expected a power of two between 2 and {MAX_WINDOW}, got {B!r}")

    def _avg_start(self) -> int:
        """First averaged observation in the kernels' convention (-1: no averaging)."""
        if not self.averaging:
            return -1
        return int(self.warmup if self.average_start is None else self.average_start)

    def _alpha(self, name: str, value, shape: tuple[int, ...], n: int) -> np.ndarray:
        if value is None:
            return np.full(shape, 1.0 + PRIOR_MASS / n)
        alpha = broadcast_param(name, value, shape)
        if not np.all(np.isfinite(alpha)) or np.any(alpha <= 0):
            raise InvalidInputError(f"{name}: Dirichlet parameters must be finite and > 0")
        return alpha

    def _priors(self, K: int) -> tuple[np.ndarray, np.ndarray]:
        """``alpha - 1`` of the transition rows and the initial distribution."""
        ta = self._alpha("transmat_prior", self.transmat_prior, (K, K), K) - 1.0
        sa = self._alpha("startprob_prior", self.startprob_prior, (K,), K) - 1.0
        return np.ascontiguousarray(ta), np.ascontiguousarray(sa)

    def _emission_prior(self, emission0: np.ndarray, alphabets: tuple[int, ...] | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
        """Categorical ``alpha`` (K, W) and ``alpha - 1`` on the support of the initial
        emission matrix (the support never changes: structural zeros stay zero). Several
        features (``alphabets``): their rows side by side, ``(K, sum W_f)``; the option is
        then a scalar or broadcastable to the family's ``(F, K, max W_f)``, its default
        :math:`1 + 10^{-6}/W_f` per feature."""
        K, W = emission0.shape
        if alphabets is None or len(alphabets) == 1:
            alpha = self._alpha("emissionprob_prior", self.emissionprob_prior, (K, W), W)
        else:
            alpha = np.concatenate([
                self._alpha("emissionprob_prior", self.emissionprob_prior,
                            (len(alphabets), K, max(alphabets)), Wf)[f, :, :Wf]
                for f, Wf in enumerate(alphabets)], axis=1)
        if np.any(alpha[emission0 > 0] <= 1.0):
            raise InvalidInputError(
                "emissionprob_prior: learn='online-em' needs a Dirichlet alpha > 1 for "
                "categorical emissions (alpha = 1 would make every symbol not seen before the "
                "first M-step impossible forever); pass e.g. emissionprob_prior=1 + 1e-6 / "
                "n_features, or leave it None")
        return alpha, np.ascontiguousarray(np.where(emission0 > 0, alpha - 1.0, 0.0))

    # -- protocol -----------------------------------------------------------------------------
    def start(self, theta: dict, family, rng: np.random.Generator | None = None) -> dict:
        """Build the initial state from initial parameters.

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
            The state at ``t = 0`` (see the module docstring).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a hyper-parameter or a prior is invalid, or ``theta`` does not hold valid
            parameters.
        """
        self._check()
        K = family.n_states
        startprob = check_stochastic(theta["startprob"], (K,), "startprob_").copy()
        transmat = check_stochastic(theta["transmat"], (K, K), "transmat_").copy()
        self._priors(K)
        state = {
            "learner": self.name,
            "t": 0,
            "n_avg": 0,
            "startprob": startprob,
            "transmat": transmat,
            "phi": startprob.copy(),
            "rho_trans": np.zeros((K, K, K)),
            "rho_start": np.zeros((K, K)),
            "avg_startprob": np.zeros(K),
            "avg_transmat": np.zeros((K, K)),
        }
        avg = self.averaging
        inner, Ks = family.learned_part()
        alphabets = inner.alphabets
        if alphabets is not None:  # the features' rows side by side
            B0 = inner.check_params(theta["emission"])["emissionprob"]
            emission0 = np.concatenate(inner.feature_rows(B0), axis=1)
            W = emission0.shape[1]
            # source rows: placeholders (their emission probabilities come with the data)
            emission0 = np.vstack([np.full((Ks, W), 1.0 / W), emission0])
            self._emission_prior(emission0, alphabets)
            B = self.block
            if B is None:
                B = _default_window(K, W)
            F = len(alphabets)
            # one feature keeps the arrays it always had
            per_feature = (F,) if inner.feature_axis else ()
            state.update({
                "emission0": emission0,
                "G": np.zeros((*per_feature, K, K)),
                "E": np.zeros((W, K, K)),
                "touch": np.zeros(W, dtype=np.int64),
                "window": 0,
                "decay": 1.0,
                "tree_P": np.zeros((2 * B, K, K)),
                "tree_Q": np.zeros((*per_feature, 2 * B if avg else 0, K, K)),
                "avg_acc": np.zeros((W if avg else 0, K)),
                "avg_U": np.zeros((*per_feature, K)),
            })
            return state
        layout = _layout(family)
        params = family.check_params(theta["emission"])
        state["rho_emission"] = np.zeros((K, layout.P, K))
        if layout.kind != POISSON:  # reference points of the Gaussian statistics, set by
            # the stream's first observation; one per component of a mixture
            state["frame"] = np.zeros((K, layout.D) if layout.M is None
                                      else (K, layout.M, layout.D))
        for key, value in params.items():
            state["emission." + key] = np.array(value, dtype=np.float64)
            state["avg.emission." + key] = np.zeros_like(value, dtype=np.float64)
        return state

    def update(self, state: dict, X: np.ndarray, lengths: np.ndarray | None, family,
               continues: bool = False, log_pred: np.ndarray | None = None,
               states=None) -> dict:
        r"""Consume the sequences ``X`` in order, one observation at a time.

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
            Whether the first sequence continues the one the previous call ended in.
        log_pred : ndarray of shape (n_samples,) or None, default=None
            Receives the prequential log-probability
            :math:`\log p(y_t \mid y_{<t}, \theta_{t-1})` of every observation: predicted
            with the parameters learned from the stream before it (a learning curve for
            free; at a labelled step :math:`\log p(y_t, z_t = s_t \mid y_{<t},
            \theta_{t-1})`).
        states : array-like of int or None, default=None
            Partial state labels (``-1``: unknown); at a labelled step every other state's
            emission probability is 0 (the clamp of
            :func:`hiddenstate.inference.clamp_states`), in the filter and therefore in the
            retrospective kernel and every statistic.

        Returns
        -------
        dict
            The new state (``state`` itself is left unchanged).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``continues`` is True before any observation, the lengths or labels do not
            match ``X``, or a hyper-parameter is invalid.
        hiddenstate.errors.ZeroProbabilityError
            If an observation has probability zero under the running parameters.
        """
        self._check()
        state = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in state.items()}
        X = np.asarray(X)
        lengths = check_lengths(lengths, len(X))
        if states is not None:
            states = check_states(states, len(X), family.n_states)
        starts = np.zeros(len(X), dtype=np.bool_)
        starts[np.concatenate(([0], np.cumsum(lengths)[:-1]))] = True
        if continues:
            if state["t"] == 0:
                raise InvalidInputError(
                    "continues: there is no previous sequence to continue (no observation "
                    "seen yet); pass continues=False")
            starts[0] = False
        K = family.n_states
        trans_a, start_a = self._priors(K)
        if log_pred is None:
            log_pred = np.empty(len(X))
        if family.learned_part()[0].alphabets is not None:
            self._update_categorical(state, X, starts, family, trans_a, start_a, log_pred,
                                     states)
        else:
            self._update_dense(state, X, starts, family, trans_a, start_a, log_pred, states)
        return state

    def grow(self, state: dict, n_symbols: int) -> dict:
        """Return the state of the same stream over a larger alphabet.

        One categorical feature. The lazy statistics of a symbol never seen are exactly zero
        whatever the alphabet (``E``, ``touch``, ``avg_acc`` get zero rows), so after the
        warm-up the stream goes on exactly as one over ``n_symbols`` symbols from the start
        would, but for the default prior's pseudo-count :math:`10^{-6}/W` per entry, which
        is now over the larger alphabet; the initial emission matrix (used during the
        warm-up, and for the support) gets the new symbols as
        :func:`~hiddenstate.learn.online.base.grown_rows` does.

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

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the stream is not over one categorical feature, or ``emissionprob_prior`` is
            given per symbol.
        """
        if "emission0" not in state or state["G"].ndim != 2:
            raise InvalidInputError(
                "n_features: only a stream of one categorical feature can grow its alphabet")
        W = state["emission0"].shape[1]
        if np.ndim(self.emissionprob_prior) > 0 and np.shape(self.emissionprob_prior)[-1] > 1:
            raise InvalidInputError(
                "emissionprob_prior: given per symbol, it cannot follow a growing alphabet; "
                "pass a scalar, or n_features for the whole stream")
        new = n_symbols - W
        K = state["E"].shape[1]
        out = dict(state)
        out["emission0"] = grown_rows(state["emission0"], n_symbols)
        out["E"] = np.concatenate([state["E"], np.zeros((new, K, K))])
        out["touch"] = np.concatenate([state["touch"], np.zeros(new, dtype=np.int64)])
        out["avg_acc"] = np.concatenate([state["avg_acc"],
                                         np.zeros((new if len(state["avg_acc"]) else 0, K))])
        B = len(state["tree_P"]) // 2
        B_new = B if self.block is not None else _default_window(K, n_symbols)
        if B_new != B:  # the default window follows W: bring every block up to date, then
            # start an empty window of the new length
            flush_window(out["E"], out["touch"], state["tree_P"].copy(),
                         state["tree_Q"][None].copy(), out["avg_acc"],
                         np.array([0, n_symbols], dtype=np.int64), int(state["window"]),
                         float(state["decay"]), bool(self.averaging))
            out.update(window=0, decay=1.0, tree_P=np.zeros((2 * B_new, K, K)),
                       tree_Q=np.zeros((2 * B_new if self.averaging else 0, K, K)))
        return out

    def params(self, state: dict, family) -> dict:
        """Return the current parameters, materialised from the state.

        Polyak-Ruppert averages when ``averaging`` and at least one iterate was averaged;
        categorical emission matrices are built from the lazy statistics here.

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
        n_avg = state["n_avg"]
        averaged = self.averaging and n_avg > 0
        if averaged:
            startprob = (state["avg_startprob"] / n_avg if self.learn_startprob
                         else state["startprob"].copy())
            transmat = state["avg_transmat"] / n_avg
        else:
            startprob, transmat = state["startprob"].copy(), state["transmat"].copy()
        inner, Ks = family.learned_part()
        alphabets = inner.alphabets
        if alphabets is not None:
            rows = self._categorical_emission(state, averaged, alphabets)[Ks:]
            emission = {"emissionprob": inner.from_feature_rows(
                [rows[:, lo:hi] for lo, hi in _blocks(alphabets)])}
        else:
            prefix = "avg.emission." if averaged else "emission."
            emission = {key[len(prefix):]: (value / n_avg if averaged else value.copy())
                        for key, value in state.items() if key.startswith(prefix)}
        return {"startprob": startprob, "transmat": transmat, "emission": emission}

    def check_state(self, state: dict, theta: dict, family, prefix: str = "") -> None:
        """Check a state that did not come from :meth:`update`, before the kernels use it.

        The keys, dtypes and shapes of :meth:`start`'s state for ``theta`` (valid
        parameters) and ``family``; counters in range (``t``, ``n_avg <= t``, zero without
        averaging); the parameters, the filter and ``emission0`` are distributions;
        statistics and sums are finite and non-negative, averaged sums add up to ``n_avg``
        per row; for categorical emissions the window position ``window < B``, every
        ``touch <= window`` and the decay in ``[SCALE_FLOOR, 1]`` (1 at the window's
        start); for Gaussian/Poisson the emission parameters (and their averages) are
        valid parameters of the family.

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
        self._check()
        state = check_layout(state, template(self, theta, family, prefix), prefix, self.name)
        t = check_count(state, "t", prefix, what="observations seen")
        n_avg = check_count(state, "n_avg", prefix, high=t if self.averaging else 0,
                            what="averaged iterates; 0 without averaging")
        check_probabilities(state, ("startprob", "transmat"), prefix)
        check_probabilities(state, ("phi",), prefix, atol=1e-6)
        check_nonneg(state, ("rho_trans", "rho_start"), prefix)
        for key in ("avg_startprob", "avg_transmat"):
            check_sums(state, key, n_avg, prefix, "a sum of n_avg distributions")
        if "emission0" in state:
            alphabets = family.learned_part()[0].alphabets
            for lo, hi in _blocks(alphabets):
                check_stochastic(state["emission0"][:, lo:hi], (len(state["phi"]), hi - lo),
                                 prefix + "emission0")
            check_nonneg(state, ("G", "E", "tree_P", "tree_Q", "avg_acc", "avg_U"), prefix)
            window = check_count(state, "window", prefix, high=len(state["tree_P"]) // 2 - 1,
                                 what="position in the window of the lazy scheme")
            touch = state["touch"]
            if len(touch) and (touch.min() < 0 or touch.max() > window):
                raise InvalidInputError(
                    f"{prefix}touch: window positions must lie in 0 .. window={window}; the "
                    "state was modified or corrupted")
            decay = state["decay"]
            if not SCALE_FLOOR <= decay <= 1.0 or (window == 0 and decay != 1.0):
                raise InvalidInputError(
                    f"{prefix}decay: {decay!r} is not a decay factor of the window (in "
                    f"[{SCALE_FLOOR}, 1], and 1 when window = 0); the state was modified or "
                    "corrupted")
            emis_A = _feature_sums(self._emission_prior(state["emission0"], alphabets)[1],
                                   alphabets)
            _check_lazy_sums(state, self.averaging, emis_A, alphabets, prefix)
            return
        if np.any(state["rho_emission"][:, 0, :] < 0):
            raise InvalidInputError(
                f"{prefix}rho_emission: the posterior-weight statistics must be "
                "non-negative; the state was modified or corrupted")
        keys = [k[len("emission."):] for k in state if k.startswith("emission.")]
        for prefix_key, scale in (("emission.", 1), ("avg.emission.", n_avg)):
            values = {key: state[prefix_key + key] for key in keys}
            if prefix_key == "avg.emission." and n_avg == 0:
                if any(np.any(v != 0) for v in values.values()):
                    raise InvalidInputError(
                        f"{prefix}avg.emission.*: must be zero before any averaged iterate "
                        "(n_avg = 0)")
                continue
            try:
                family.check_params({key: v / scale for key, v in values.items()})
            except InvalidInputError as exc:
                raise InvalidInputError(
                    f"{prefix}{prefix_key}*: not valid emission parameters"
                    f"{' once divided by n_avg' if scale != 1 else ''} ({exc})") from None

    # -- categorical ----------------------------------------------------------------------------
    def _update_categorical(self, state, X, starts, family, trans_a, start_a,
                            log_pred, states=None) -> None:
        emission0 = state["emission0"]
        inner = family.learned_part()[0]
        alphabets = inner.alphabets
        log_f, y = family.split(X)
        src_b = np.exp(log_f)   # the source states' emission probabilities (PROPS)
        y = inner.stream_symbols(y)
        labels = (np.full(len(y), -1, dtype=np.int64) if states is None else states)
        _, emis_a = self._emission_prior(emission0, alphabets)
        emis_A = _feature_sums(emis_a, alphabets)
        bounds = np.array([lo for lo, _ in _blocks(alphabets)] + [emission0.shape[1]],
                          dtype=np.int64)
        G, TQ, U = ((state["G"], state["tree_Q"], state["avg_U"]) if inner.feature_axis else
                    (state["G"][None], state["tree_Q"][None], state["avg_U"][None]))
        counters = np.array([state["t"], state["window"], state["n_avg"]], dtype=np.int64)
        scale = np.array([state["decay"]])
        status = online_em_categorical(
            y, np.ascontiguousarray(src_b), labels, starts, float(self.step_scale),
            float(self.step_exponent), int(self.warmup), self._avg_start(),
            bool(self.learn_startprob), trans_a, start_a, emis_a, emis_A, bounds,
            emission0, state["startprob"], state["transmat"], state["phi"],
            state["rho_trans"], state["rho_start"], G, state["E"], state["touch"],
            state["tree_P"], TQ, state["avg_acc"], U,
            state["avg_transmat"], state["avg_startprob"], counters, scale, log_pred)
        if status >= 0:
            raise _impossible(status, int(counters[0]), labels[status] >= 0)
        state["t"], state["window"], state["n_avg"] = (int(v) for v in counters)
        state["decay"] = float(scale[0])

    def _categorical_emission(self, state, averaged: bool, alphabets) -> np.ndarray:
        """The emission rows ``(K, sum W_f)`` (every feature's rows side by side)."""
        emission0 = state["emission0"]
        t = state["t"]
        if not averaged and t < max(int(self.warmup), 1):
            return emission0.copy()
        alpha, emis_a = self._emission_prior(emission0, alphabets)
        S, acc_now = _statistics(state, state["phi"], averaged, alphabets)
        out = np.empty_like(emission0)
        for f, (lo, hi) in enumerate(_blocks(alphabets)):
            if averaged:
                U = state["avg_U"] if state["avg_U"].ndim == 1 else state["avg_U"][f]
                out[:, lo:hi] = (acc_now[lo:hi].T + emis_a[:, lo:hi] * U[:, None]) / \
                    state["n_avg"]
            else:
                out[:, lo:hi] = DirichletRows("emissionprob", "e", alpha[:, lo:hi]).mstep(
                    emission0[:, lo:hi], S[:, lo:hi], "e")[0]
        return out

    # -- Gaussian, Poisson ----------------------------------------------------------------------
    def _update_dense(self, state, X, starts, family, trans_a, start_a, log_pred,
                      states=None) -> None:
        layout = _layout(family)
        inner, Ks = family.learned_part()
        X = np.ascontiguousarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != Ks + family.n_features:
            raise InvalidInputError(
                f"X: expected shape (n, {family.n_features}), got {X.shape}")
        keys = [k[len("emission."):] for k in state if k.startswith("emission.")]
        em = {key: state["emission." + key] for key in keys}
        K = family.n_states
        Sg = np.empty((K, layout.P))
        counters = np.array([state["t"], state["n_avg"]], dtype=np.int64)
        self._dense_loop(state, X, np.ascontiguousarray(X[:, Ks:]), starts, family, layout, em,
                         keys, Sg, counters, trans_a, start_a, log_pred, states)

    def _dense_loop(self, state, X, Xi, starts, family, layout, em, keys, Sg, counters,
                    trans_a, start_a, log_pred, states=None) -> None:
        which = "".join(family.letters)
        inner, Ks = family.learned_part()
        # the learner's Dirichlet prior for emission rows (alpha > 1: a category not seen
        # before the first M-step stays possible), the family's own prior otherwise
        stepper = family.streaming_mstep_family(
            em, lambda emissionprob: self._emission_prior(emissionprob)[0])
        first_m = max(int(self.warmup), 1)
        avg_start = self._avg_start()
        first_avg = max(avg_start, first_m)
        frame = (np.zeros((family.n_states, layout.D)) if layout.kind == POISSON
                 else state["frame"])  # Poisson statistics need no reference point
        seen = ~np.isnan(Xi).all(axis=1)
        if layout.kind != POISSON and not state["rho_emission"][Ks:].any() and seen.any():
            # near the data, wherever the initial means are (a missing entry: the mean)
            x = Xi[np.flatnonzero(seen)[0]]
            frame[Ks:] = np.where(np.isnan(x), em["means"], x)
        # rows whose statistics the kernel cannot form from the row alone: a mixture's
        # (an expectation over the component), a partly missing Gaussian or Poisson row's
        if layout.M is not None:
            expected = seen
        else:
            expected = seen & np.isnan(Xi).any(axis=1)
        K = family.n_states
        row_stats = np.zeros((0, K, layout.P))
        # a mixture's statistics all come in row_stats: the kernel reads no reference point
        kernel_frame = frame if layout.M is None else np.zeros((K, layout.D))
        n, N = 0, len(X)
        while n < N:
            t = int(counters[0])
            chunk = min(N - n, first_m - t) if t < first_m else 1
            # one row at a time: each row's numbers never depend on how the stream was cut
            if layout.M is None:
                loglik = np.vstack([family.log_likelihood(em, X[i:i + 1])
                                    for i in range(n, n + chunk)])
                if expected[n:n + chunk].any():
                    row_stats = np.zeros((chunk, K, layout.P))
                    for i in np.flatnonzero(expected[n:n + chunk]):
                        row = Xi[n + i:n + i + 1]
                        row_stats[i, Ks:] = (
                            _expected_counts(em["lambdas"], row) if layout.kind == POISSON
                            else _expected_statistics(inner, em, row, frame[Ks:],
                                                      layout.kind))[0]
            else:
                loglik, row_stats = self._mixture_rows(family, em, X[n:n + chunk],
                                                       frame[Ks:], layout)
            if states is not None:  # clamped: log p(x | z = k) [k = s_t]
                loglik = clamp_log_likelihood(loglik, states[n:n + chunk])
            status = online_em_dense(
                loglik, Xi[n:n + chunk], layout.kind, kernel_frame, expected[n:n + chunk],
                row_stats, starts[n:n + chunk],
                float(self.step_scale), float(self.step_exponent), int(self.warmup),
                avg_start, bool(self.learn_startprob), trans_a, start_a, state["startprob"],
                state["transmat"], state["phi"], state["rho_trans"], state["rho_start"],
                state["rho_emission"], Sg, state["avg_transmat"], state["avg_startprob"],
                counters, log_pred[n:n + chunk])
            if status >= 0:
                raise _impossible(n + status, t + status + 1,
                                  states is not None and states[n + status] >= 0)
            t = int(counters[0])
            if t >= first_m:
                em = {key: np.asarray(value, dtype=np.float64) for key, value in
                      stepper.mstep(em, layout.stats(Sg[Ks:], frame[Ks:]), which)[0].items()}
                if layout.M is not None:  # each component of each state
                    flat = inner._flat
                    _follow_means(state["rho_emission"][Ks:].reshape(-1, layout.P_g, K),
                                  frame[Ks:].reshape(-1, layout.D), inner._flat_params(em),
                                  flat, layout)
                elif layout.kind != POISSON:
                    _follow_means(state["rho_emission"][Ks:], frame[Ks:], em, inner, layout)
            if avg_start >= 0 and t >= first_avg:
                for key in keys:
                    state["avg.emission." + key] += em[key]
            n += chunk
        for key in keys:
            state["emission." + key] = em[key]
        state["t"], state["n_avg"] = int(counters[0]), int(counters[1])


    @staticmethod
    def _mixture_rows(family, em: dict, X: np.ndarray, frame: np.ndarray,
                      layout: _Layout) -> tuple[np.ndarray, np.ndarray]:
        r"""Gaussian-mixture rows, one at a time: the emission log-likelihoods ``(n, K)``
        and each state's expected statistic vector ``(n, K, M P_g)``, component ``c``'s
        block :math:`r_{tkc}\, E[s_{kc}(x_t) \mid x_{t,o}, z_t = k, c]` with the
        responsibilities :math:`r_{tkc} = p(c \mid z_t = k, y_t)` under the step's
        parameters (Cappé's online EM with the component in the complete data: its
        conditional expectation given the state is the new term of the state's
        auxiliary)."""
        inner, Ks = family.learned_part()
        K, D = family.n_states, layout.D
        flat_params = inner._flat_params(em)
        loglik = np.empty((len(X), K))
        out = np.zeros((len(X), K, layout.P))
        for n in range(len(X)):
            row = X[n:n + 1]
            if Ks:
                log_f, row = family.split(row)
                loglik[n, :Ks] = log_f[0]
            ll, resp = inner.responsibilities(em, row)
            loglik[n, Ks:] = ll[0]
            stats = _expected_statistics(inner._flat, flat_params, row,
                                         frame.reshape(-1, D), layout.kind)[0]
            out[n, Ks:] = (resp[0].reshape(-1, 1) * stats).reshape(K - Ks, layout.P)
        return loglik, out


def _expected_statistics(gauss: GaussianEmissions, params: dict, X: np.ndarray,
                         frame: np.ndarray, kind: int) -> np.ndarray:
    r"""``(N, K, P)``: each row's statistic vector for each state ``k`` of the Gaussian
    family ``gauss``, about the reference point ``frame[k]``, in expectation over its
    missing dimensions given its observed ones and :math:`z = k` under ``params``:
    with :math:`e = E[x \mid x_o, z=k] - a_k` and :math:`C = \mathrm{Cov}[x \mid x_o,
    z=k]` (the family's conditional moments, Ghahramani & Jordan 1994, the batch E-step's),
    :math:`(1, e, e^2 + \mathrm{diag}\, C)` (``DIAG``) or :math:`(1, e,
    \mathrm{vec}(e e^\top + C))` (``FULL``). A complete row gives exactly the kernel's
    :math:`(1, x - a_k, \dots)`; a row with nothing observed, zeros."""
    N, D = X.shape
    K = len(frame)
    miss = np.isnan(X)
    e = X[:, None, :] - frame[None]
    cov = np.zeros((N, K, D, D))
    for rows, _, filled, C in gauss._conditionals(params, X, miss):
        e[rows] = filled.transpose(1, 0, 2) - frame[None]
        cov[rows] = C[None]
    if kind == DIAG:
        second = e * e + np.diagonal(cov, axis1=2, axis2=3)
    else:
        second = (np.einsum("nki,nkj->nkij", e, e) + cov).reshape(N, K, D * D)
    out = np.concatenate([np.ones((N, K, 1)), e, second], axis=2)
    out[miss.all(axis=1)] = 0.0
    return out


def _expected_counts(lambdas: np.ndarray, X: np.ndarray) -> np.ndarray:
    r"""``(N, K, 1 + D)``: each row's Poisson statistic vector :math:`(1, E[x \mid x_o, z=k])`
    for each state ``k``. The counts are independent given the state, so a missing count's
    conditional expectation is the state's rate :math:`\lambda_{kd}` (Cappé's online EM with
    the missing counts in the complete data); a complete row gives the kernel's
    :math:`(1, x)`, a row with nothing observed zeros."""
    miss = np.isnan(X)
    e = np.where(miss[:, None, :], lambdas[None], X[:, None, :])
    out = np.concatenate([np.ones((*e.shape[:2], 1)), e], axis=2)
    out[miss.all(axis=1)] = 0.0
    return out


def _statistics(state: dict, phi: np.ndarray, averaged: bool, alphabets
                ) -> tuple[np.ndarray, np.ndarray]:
    """The lazy categorical scheme materialised along ``phi``: ``S[i, w] = c (E_w phi)[i]``
    (the emission statistics when ``phi`` is the filter) and, when ``averaged``, the
    averaging sums ``acc_now (W, K)`` (every feature's symbols side by side)."""
    K, W = state["emission0"].shape
    S = np.empty((K, W))
    acc_now = np.empty((W, K)) if averaged else np.empty((0, K))
    TQ = state["tree_Q"] if state["tree_Q"].ndim == 4 else state["tree_Q"][None]
    bounds = np.array([lo for lo, _ in _blocks(alphabets)] + [W], dtype=np.int64)
    categorical_statistics(state["E"], state["touch"], state["tree_P"], TQ,
                           state["avg_acc"], bounds, phi, float(state["decay"]),
                           int(state["window"]), averaged, S, acc_now)
    return S, acc_now


def _check_lazy_sums(state: dict, averaged: bool, emis_A: np.ndarray, alphabets,
                     prefix: str) -> None:
    r"""The invariants that tie the lazy categorical scheme together (exact up to rounding),
    per feature: :math:`G = \sum_w E_w` (probed along the filter and the uniform vector:
    the normaliser :math:`N = G\phi` of every emission row is the sum of its statistics)
    and, with averaging, :math:`\sum_w \text{acc}(w, i) + A_i U_i = n_\text{avg}` (every
    averaged emission row sums to one)."""
    K = len(state["phi"])
    G = state["G"].reshape(-1, K, K)
    U = state["avg_U"].reshape(-1, K)
    for phi in (state["phi"], np.full(K, 1.0 / K)):
        S, acc_now = _statistics(state, phi, averaged, alphabets)
        for f, (lo, hi) in enumerate(_blocks(alphabets)):
            N = G[f] @ phi
            if not np.allclose(S[:, lo:hi].sum(axis=1), N, rtol=1e-6,
                               atol=1e-12 * max(N.max(), 1e-300)):
                raise InvalidInputError(
                    f"{prefix}G: does not match the emission statistics E (G must be the sum "
                    "of the E blocks); the state was modified or corrupted")
    if averaged:
        for f, (lo, hi) in enumerate(_blocks(alphabets)):
            total = acc_now[lo:hi].sum(axis=0) + emis_A[f] * U[f]
            if not np.allclose(total, state["n_avg"], rtol=1e-6, atol=0.0):
                raise InvalidInputError(
                    f"{prefix}avg_acc: the averaging sums do not add up to n_avg per state "
                    "(with avg_U); the state was modified or corrupted")


def _blocks(alphabets) -> list[tuple[int, int]]:
    """Columns ``(lo, hi)`` of each feature's symbols in the side-by-side layout."""
    ends = np.cumsum(alphabets)
    return [(int(e - W), int(e)) for e, W in zip(ends, alphabets, strict=True)]


def _feature_sums(emis_a: np.ndarray, alphabets) -> np.ndarray:
    """Row sums ``(F, K)`` of each feature's block."""
    return np.stack([emis_a[:, lo:hi].sum(axis=1) for lo, hi in _blocks(alphabets)])


def _follow_means(rho_g: np.ndarray, frame: np.ndarray, em: dict, family,
                  layout: _Layout) -> None:
    r"""Move the reference point :math:`a_i` of each state whose mean has left it by more
    than one standard deviation in some dimension to that mean, re-expressing its
    auxiliary exactly (in place): with :math:`c = a_{\text{old}} - a_{\text{new}}`,
    :math:`x - a_{\text{new}} = (x - a_{\text{old}}) + c`, so the rows of ``rho_g[i]``
    become :math:`s_1 + c\,s_0` and :math:`s_2 + 2c\,s_1 + c^2 s_0` (diagonal) or
    :math:`S + c\,s_1^\top + s_1 c^\top + c c^\top s_0` (full). The second moments
    then stay centred to within a few variances, whatever the offset of the data or the
    distance the means travel (a start far from the data, a drifting source)."""
    D = layout.D
    means = em["means"]
    var = np.diagonal(full_covars(em["covars"], family.covariance_type, len(means), D),
                      axis1=1, axis2=2)
    c = frame - means
    for i in np.flatnonzero(np.any(c * c > var, axis=1)):
        s0, s1 = rho_g[i, 0], rho_g[i, 1:1 + D]
        ci = c[i][:, None]
        if layout.kind == DIAG:
            rho_g[i, 1 + D:] += 2.0 * ci * s1 + ci * ci * s0
        else:
            S = rho_g[i, 1 + D:].reshape(D, D, -1)
            S += (c[i][:, None, None] * s1[None] + s1[:, None] * c[i][None, :, None]
                  + np.multiply.outer(np.outer(c[i], c[i]), s0))
        s1 += ci * s0
        frame[i] = means[i]


def _impossible(index: int, t: int, labelled: bool = False) -> ZeroProbabilityError:
    if labelled:
        return ZeroProbabilityError(
            f"states: observation {index} of this call (observation {t} of the stream) has "
            "probability zero given its state label under the current parameters of "
            "learn='online-em' (a labelled state that cannot emit its observation, or a "
            "label joined to the previous step by a zero transition); check the labels; the "
            "state passed in is unchanged")
    return ZeroProbabilityError(
        f"X: observation {index} of this call (observation {t} of the stream) has probability "
        "zero under the current parameters of learn='online-em' (a symbol outside every "
        "state's support, a structural zero, or a count with a zero Poisson rate); the state "
        "passed in is unchanged")


class _Layout:
    """The statistic vector s(x) of a dense family and its split into ``family.statistics``
    keys: Poisson (1, x); Gaussian diag/spherical (1, x - a, (x - a)**2); full/tied
    (1, x - a, vec((x - a)(x - a)^T)), about each state's reference point ``a`` (the
    state's ``frame``, see :func:`~hiddenstate.kernels.online_em.online_em_dense`). A
    Gaussian mixture of ``M`` components (``M`` None otherwise) concatenates one Gaussian
    vector of length ``P_g`` per component, each about the component's own reference
    point (tied: full vectors); its statistics are those of the K*M components."""

    def __init__(self, family):
        self.D = D = family.n_features
        kind, self.M = family.statistic_vector()
        self.kind = _KINDS[kind]
        self.P_g = {POISSON: 1 + D, DIAG: 1 + 2 * D, FULL: 1 + D + D * D}[self.kind]
        self.P = self.P_g * (self.M or 1)

    def stats(self, S: np.ndarray, frame: np.ndarray) -> dict:
        D = self.D
        if self.M is not None:  # the K*M components, as GMMEmissions.mstep takes them
            S, frame = S.reshape(-1, self.P_g), frame.reshape(-1, D)
        out = {"post": S[:, 0].copy(), "obs": S[:, 1:1 + D].copy()}
        if self.kind != POISSON:
            out["shift"] = frame.copy()
        if self.kind == DIAG:
            out["obs**2"] = S[:, 1 + D:].copy()
        elif self.kind == FULL:
            out["obs*obs.T"] = S[:, 1 + D:].reshape(-1, D, D).copy()
        return out


#: the kernel's code of each kind of statistic vector (see ``statistic_vector``)
_KINDS = {"counts": POISSON, "diag": DIAG, "full": FULL}


def _layout(family) -> _Layout:
    """The statistic vector of the learned states' family (after any source states)."""
    family = family.learned_part()[0]
    if family.statistic_vector() is not None:
        return _Layout(family)
    raise InvalidInputError(
        f"emission: learn='online-em' takes categorical, Gaussian, Gaussian-mixture, "
        f"Poisson and multinomial emissions, got {type(family).__name__}; fit it with "
        f"learn='em', 'map', 'vb', 'vt' or 'kvt'")

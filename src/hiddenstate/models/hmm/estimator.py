"""The hidden Markov model estimator (scikit-learn conventions, hmmlearn attribute names)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator

from .. import inference
from .._validation import (
    broadcast_param,
    check_choice,
    check_lengths,
    check_memory,
    check_number,
    check_positive_int,
    check_random_state,
    check_states,
    check_stochastic,
    make_rng,
)
from ..errors import (
    InvalidInputError,
    NotFittedError,
    ZeroProbabilityError,
)
from ..families import (
    COVARIANCE_TYPES,
    FAMILIES,
    CategoricalEmissions,
    DirichletRows,
    GaussianEmissions,
    PoissonEmissions,
)
from ..families.blackbox import BlackBoxEmissions
from ..families.dirichlet import SparseDirichletRows
from ..families.gaussian import full_covars
from ..families.multicategorical import MultiCategoricalEmissions, check_feature_symbols
from ..families.multinomial import check_n_trials
from ..inference import Sequences, Transitions
from ..kernels import path_counts
from ..learn import MODES, ConvergenceMonitor
from ..learn import fit as fit_mode
from ..learn.online import ONLINE_MODES, StateRecord, make_learner
from . import _learned
from ._learned import LearnedArray

_ALL_LETTERS = "stemclw"

#: priors that make every mode's M-step the maximum-likelihood one
_FLAT_PRIORS = {
    "startprob_prior": 1.0, "transmat_prior": 1.0, "emissionprob_prior": 1.0,
    "means_prior": 0.0, "means_weight": 0.0, "covars_prior": 0.0, "covars_weight": 1.0,
    "lambdas_prior": 0.0, "lambdas_weight": 0.0, "weights_prior": 1.0,
}
#: defaults of learn="map" / "vt" / "kvt" (hmmlearn's defaults)
_MAP_PRIORS = {**_FLAT_PRIORS, "covars_prior": 1e-2}
#: mode-specific defaults that differ from _MAP_PRIORS. Variational Bayes needs proper
#: priors: sparse Dirichlet rows, 0.01 for the start and transition rows and 1/W for the
#: emission rows (None here, filled in by ``_family``; chosen on the panel of
#: experiments/defaults_panel.py: Dirichlet(1) rows left 2 of 17 states in use on POS
#: induction, and 0.01 beat hmmlearn's 1/K on held-out Gaussian returns), one
#: pseudo-observation at the data mean (set in fit), a
#: Wishart/Gamma with n_features degrees of freedom around 1e-3 * identity (hmmlearn's
#: VariationalGaussianHMM defaults), and an exponential prior on Poisson rates with the data
#: mean as its mean.
_DEFAULT_PRIORS: dict[str, dict] = {
    "vb": {"startprob_prior": 0.01, "transmat_prior": 0.01, "emissionprob_prior": None,
           "means_weight": 1.0, "covars_prior": 1e-3, "covars_weight": None,
           "lambdas_prior": 0.0, "lambdas_weight": None},
}
_FAMILY_PRIORS = {
    "categorical": ("emissionprob_prior",),
    "gaussian": ("means_prior", "means_weight", "covars_prior", "covars_weight"),
    "poisson": ("lambdas_prior", "lambdas_weight"),
    "gmm": ("weights_prior", "means_prior", "means_weight", "covars_prior", "covars_weight"),
    "multinomial": ("emissionprob_prior",),
}
#: families with Gaussian components (covariance_type, min_covar and the Gaussian priors)
_GAUSSIAN = ("gaussian", "gmm")
_POSTERIOR_SUFFIX = "_posterior_"
#: copies of the parameters a batch fit holds at its peak (measured; see _check_fit_memory)
_PARAM_COPIES = 1
#: the largest rate numpy's Poisson sampler accepts (a bit below 2**63)
_MAX_POISSON_RATE = 9.2e18
_STATE_PREFIX = "learner_state_."


#: allowed transitions per K**2 below which a structured model runs the sparse kernels
#: (benchmarks/bench_structured.py: the dense lockstep kernels win above about this)
SPARSE_DENSITY = 0.25
TOPOLOGIES = ("full", "left-right", "banded")


@dataclass
class _Chain:
    """The Markov chain as inference sees it: ``startprob`` and either a dense ``transmat``
    or, for a structured model, its allowed ``transitions`` with one value per entry
    (``values``; ``transmat`` may also be set). Chooses the sparse kernels
    (:mod:`hiddenstate.kernels.sparse`) when few transitions are allowed."""

    startprob: np.ndarray
    transmat: np.ndarray | None
    transitions: Transitions | None = None
    values: np.ndarray | None = None

    @property
    def sparse(self) -> bool:
        K = len(self.startprob)
        return self.transitions is not None and self.transitions.nnz <= SPARSE_DENSITY * K * K

    def successors(self):
        """What :func:`inference.state_supports` follows."""
        if self.transitions is None:
            return self.transmat
        return self.transitions.successors(self.values)

    def dense(self) -> np.ndarray:
        return self.transmat if self.transmat is not None else self.transitions.dense(
            self.values)

    def log_likelihood(self, table, seqs):
        if self.sparse:
            return inference.sparse_log_likelihood(self.startprob, self.transitions,
                                                   self.values, table, seqs)
        return inference.log_likelihood(self.startprob, self.dense(), table, seqs)

    def forward_backward(self, table, seqs):
        """Posteriors; ``trans`` per allowed entry for a structured model."""
        if self.sparse:
            return inference.sparse_forward_backward(self.startprob, self.transitions,
                                                     self.values, table, seqs)
        post = inference.forward_backward(self.startprob, self.dense(), table, seqs)
        if self.transitions is not None:
            post.trans = self.transitions.gather(post.trans)
        return post

    def viterbi(self, table, seqs):
        if self.sparse:
            return inference.sparse_viterbi(self.startprob, self.transitions, self.values,
                                            table, seqs)
        return inference.viterbi(self.startprob, self.dense(), table, seqs)


class _HMMProblem:
    """The HMM as the generic learner sees it: blocks ``startprob``, ``transmat``,
    ``emission`` and the two inference routines (see :mod:`hiddenstate.learn.batch`)."""

    def __init__(self, family, X, seqs: Sequences, startprob_prior, transmat_prior,
                 states: np.ndarray | None = None, transitions: Transitions | None = None):
        self.family = family
        self.X = X
        self.seqs = seqs
        self.states = states  # partial state labels (-1: unknown), or None
        # a structured model's transmat block holds its allowed entries only
        self.transitions = transitions
        trans_block = (DirichletRows("transmat", "t", transmat_prior) if transitions is None
                       else SparseDirichletRows("transmat", "t", transmat_prior, transitions))
        self.blocks = {"startprob": DirichletRows("startprob", "s", startprob_prior),
                       "transmat": trans_block,
                       "emission": family}
        self.letters = {"startprob": "s", "transmat": "t",
                        "emission": "".join(family.letters)}
        n = len(X) / family.n_states
        self.n_virtual = {"startprob": len(seqs.lengths), "transmat": n, "emission": n}

    def _chain(self, views) -> _Chain:
        if self.transitions is None:
            return _Chain(views["startprob"], views["transmat"])
        return _Chain(views["startprob"], None, self.transitions, views["transmat"])

    def _table(self, views) -> tuple[inference.EmissionTable, np.ndarray | None]:
        """The emission table, clamped at the labelled steps (and the clamped table's
        ``fold``, see :func:`inference.clamp_states`)."""
        table = inference.emission_table(self.family, views["emission"], self.X,
                                         views["startprob"], self._chain(views).successors(),
                                         self.seqs)
        if self.states is None:
            return table, None
        return inference.clamp_states(
            table, self.states,
            lambda rows: self.family.log_likelihood(views["emission"], self.X[rows]))

    def _stats(self, start, trans, post, views, fold):
        post = inference.fold_rows(post, fold)
        return {"startprob": start, "transmat": trans,
                "emission": self.family.statistics_at(views["emission"], self.X, post)}

    def expected_counts(self, views):
        table, fold = self._table(views)
        post = self._chain(views).forward_backward(table, self.seqs)
        _check_possible(post.loglik, labelled=self.states is not None)
        return float(post.loglik.sum()), self._stats(post.start, post.trans, post.post, views,
                                                     fold)

    def path_counts(self, views, k):
        table, fold = self._table(views)
        chain = self._chain(views)
        if k == 1:
            logp, states = chain.viterbi(table, self.seqs)
            _check_possible(logp, labelled=self.states is not None)
            paths, weights, value = states[None], np.ones((len(logp), 1)), float(logp.sum())
        else:
            logp, paths = inference.kbest(views["startprob"], chain.dense(), table,
                                          self.seqs, k)
            _check_possible(logp[:, 0], labelled=self.states is not None)
            top = logp[:, :1]
            with np.errstate(invalid="ignore"):
                w = np.exp(logp - top)
            weights = np.where(np.isfinite(logp), w, 0.0)
            mass = weights.sum(axis=1, keepdims=True)
            weights /= mass
            value = float(np.sum(top[:, 0] + np.log(mass[:, 0])))
        K = self.family.n_states
        rows = table.idx if table.by_idx else np.arange(len(self.X), dtype=np.int64)
        post = np.zeros((table.emis.shape[0] if table.by_idx else len(self.X), K))
        if self.transitions is None:
            start, trans = np.zeros(K), np.zeros((K, K))
            path_counts(paths, weights, rows, self.seqs.bounds, start, trans, post)
        else:
            start, trans = self._structured_path_counts(paths, weights, rows, post)
        return value, self._stats(start, trans, post, views, fold), paths

    def _structured_path_counts(self, paths, weights, rows, post):
        """:func:`~hiddenstate.kernels.path_counts` with the transition counts per allowed
        entry (``(nnz,)``): no ``(K, K)`` array."""
        K = self.family.n_states
        bounds = self.seqs.bounds
        seq_of = np.repeat(np.arange(len(self.seqs.lengths)), self.seqs.lengths)
        start, trans = np.zeros(K), np.zeros(self.transitions.nnz)
        inner = np.ones(len(rows), dtype=bool)
        inner[bounds[:-1]] = False
        t = np.flatnonzero(inner)
        for r in range(paths.shape[0]):
            w = weights[seq_of, r]
            ok = paths[r] >= 0
            np.add.at(start, paths[r][bounds[:-1]][ok[bounds[:-1]]],
                      w[bounds[:-1]][ok[bounds[:-1]]])
            tt = t[ok[t]]
            np.add.at(trans, self.transitions.position(paths[r][tt - 1], paths[r][tt]), w[tt])
            np.add.at(post, (rows[ok], paths[r][ok]), w[ok])
        return start, trans


def _check_possible(loglik: np.ndarray, fitting: bool = True, labelled: bool = False) -> None:
    """A :class:`ZeroProbabilityError` naming the first sequence whose log-likelihood is
    ``-inf`` (``fitting``: while learning; otherwise for a method whose states or
    posteriors do not exist for such a sequence; ``labelled``: with state labels)."""
    bad = np.flatnonzero(~np.isfinite(loglik))
    if not len(bad):
        return
    if labelled:
        raise ZeroProbabilityError(
            f"states: sequence {bad[0]} has probability zero given its state labels under "
            "the current parameters (a labelled state that cannot emit its observation, or "
            "two consecutive labels joined by a zero transition); check the labels, or "
            "start from parameters that allow them (init_params)")
    if fitting:
        raise ZeroProbabilityError(
            f"X: sequence {bad[0]} has probability zero under the current parameters "
            "(an observation no reachable state can emit); check the data or use "
            "init_params to start from parameters that allow it")
    raise ZeroProbabilityError(
        f"X: sequence {bad[0]} has probability zero under the model (an observation that no "
        "reachable state can emit), so it has no state path or posterior; score_sequences "
        "gives -inf for it. Check the data, or the parameters (zeros in startprob_, "
        "transmat_ or the emission parameters)")


#: cap on the initial self-transition weight (a start that is nearly absorbing slows EM)
MAX_PERSISTENCE = 0.9
#: the streaming learners' initial self-transition weight (they see no data before starting)
STREAM_PERSISTENCE = 0.5


def _observations(X: np.ndarray, family) -> tuple[np.ndarray, bool]:
    """The observations the emission family models (a PROPS family's inner ones) and
    whether they are symbols."""
    if isinstance(family, BlackBoxEmissions):
        X, family = family.split(X)[1], family.inner
    return X, isinstance(family, CategoricalEmissions)


def _autocorrelation(X: np.ndarray, symbols: bool, bounds: np.ndarray, lag: int) -> float:
    """Lag-``lag`` autocorrelation pooled over the sequences (pairs never cross a boundary)
    and, for vectors, over the standardised features; for symbols that of their one-hot
    indicators, (P(x_{t+lag} = x_t) - sum_w f_w^2) / (1 - sum_w f_w^2). NaN if undefined."""
    n = len(X)
    ends = np.repeat(bounds[1:], np.diff(bounds))
    i = np.flatnonzero(np.arange(n) + lag < ends)
    if symbols:  # pairs with a missing symbol (-1) are left out
        x = np.asarray(X).reshape(-1)
        i = i[(x[i] >= 0) & (x[i + lag] >= 0)]
        if len(i) == 0:
            return float("nan")
        f = np.bincount(x[x >= 0]) / np.count_nonzero(x >= 0)
        f2 = float(f @ f)
        return (float(np.mean(x[i] == x[i + lag])) - f2) / (1.0 - f2) if f2 < 1 else np.nan
    if len(i) == 0:
        return float("nan")
    Z = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
    miss = np.isnan(Z)
    if miss.any():  # a missing entry counts as the mean (it adds nothing)
        if miss.all(axis=0).any():
            return float("nan")
        Z = np.where(miss, np.nanmean(Z, axis=0), Z)
    sd = Z.std(axis=0)
    Z = (Z[:, sd > 0] - Z[:, sd > 0].mean(axis=0)) / sd[sd > 0]
    if Z.shape[1] == 0:
        return float("nan")
    return float(np.mean(Z[i] * Z[i + lag]))


def persistence(X: np.ndarray, symbols: bool, bounds: np.ndarray) -> float:
    r"""Moment estimate of how persistent the hidden chain is, in [0, ``MAX_PERSISTENCE``]:
    the ratio :math:`\hat\rho_2 / \hat\rho_1` of the lag-2 and lag-1 autocorrelations of
    the observations (:func:`_autocorrelation`).

    For observations that are a noisy readout of a Markov chain with one non-trivial
    eigenvalue :math:`\lambda` (any 2-state chain; :math:`\lambda I + (1 - \lambda)/K`),
    :math:`\rho_k = R\,\lambda^k` (R < 1: the readout's reliability), so the ratio
    estimates :math:`\lambda` free of R (as for an AR(1) signal plus noise; for other chains
    it is a weighted blend of their eigenvalues). The
    initial transition matrix :math:`\lambda I + (1 - \lambda)/K` has exactly that
    eigenvalue. 0 (flat) unless :math:`\hat\rho_1` exceeds its white-noise band
    :math:`2/\sqrt{n}` and :math:`\hat\rho_2 > 0`: on text, where consecutive words
    rarely repeat, :math:`\hat\rho_1 < 0` and the start is flat.
    """
    r1 = _autocorrelation(X, symbols, bounds, 1)
    r2 = _autocorrelation(X, symbols, bounds, 2)
    if not (r1 > 2.0 / np.sqrt(len(X)) and r2 > 0):   # NaN compares False
        return 0.0
    return float(min(r2 / r1, MAX_PERSISTENCE))


def _prior_array(name: str, value, shape: tuple[int, ...], combine=()) -> np.ndarray:
    """A prior as finite float64 numbers whose shape broadcasts to ``shape``, also when
    combined with arrays of the shapes ``combine`` (what the M-step adds it to), without
    changing it; errors name the prior. Returned as given, not broadcast (a (K, K) copy of
    a scalar prior would cost memory for nothing)."""
    arr = broadcast_param(name, value, None)
    try:
        ok = np.broadcast_shapes(arr.shape, shape, *combine) == shape
    except ValueError:
        ok = False
    if not ok:
        raise InvalidInputError(
            f"{name}: has shape {arr.shape}, which does not broadcast to the parameter's "
            f"shape {shape}; pass a number or an array of shape {shape}")
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{name}: must be finite, got {value!r:.60}")
    return arr


def _scalar_prior(name: str, value, learn: str, minimum: float | None) -> float:
    arr = broadcast_param(name, value, None)
    if arr.size != 1:
        raise InvalidInputError(
            f"{name}: learn={learn!r} takes a single number, got an array of shape "
            f"{arr.shape} (per-state values are for learn='vb')")
    return check_number(float(arr.reshape(())), name, minimum=minimum)


def _spherical_prior(value, n_states: int):
    """A per-state ``(K,)`` spherical ``covars_prior`` as a ``(K, 1)`` column, the form
    every code path broadcasts against ``(K, D)`` correctly; anything else as given."""
    arr = np.asarray(value) if not isinstance(value, (int, float)) else None
    if arr is not None and arr.ndim == 1 and arr.shape[0] == n_states and n_states > 1:
        return arr.reshape(n_states, 1)
    return value


def _table_build_copies(family) -> int:
    """``(N, K)`` arrays alive at once while ``family.table`` builds a dense table
    (measured: one for diagonal/spherical Gaussians, whose kernel scales in place; two for
    full/tied; four for Poisson; the source columns of PROPS add a log-likelihood and a
    shifted copy)."""
    from ..families import BlackBoxEmissions, GaussianEmissions, GMMEmissions

    if isinstance(family, BlackBoxEmissions):
        return 2 + _table_build_copies(family.inner)
    if isinstance(family, GMMEmissions):  # (N, K, M) component tables, then the sum
        return 3 * family.n_mix + 1
    if isinstance(family, GaussianEmissions):
        return 1 if family.covariance_type in ("diag", "spherical") else 2
    return 4


def _check_poisson_rates(lambdas: np.ndarray) -> None:
    """NumPy draws Poisson counts for rates up to about 9.2e18 (int64)."""
    if lambdas.size and lambdas.max() > _MAX_POISSON_RATE:
        raise InvalidInputError(
            f"lambdas_: a rate of {lambdas.max():g} is too large to draw counts from (the "
            f"largest is {_MAX_POISSON_RATE:g})")


def _labelled_start(family, X: np.ndarray, states: np.ndarray, emis: dict,
                    init_params: str) -> dict:
    r"""Initial emission parameters moved to the labelled steps: for each state, the mean
    of the labelled observations with the initial value as one more pseudo-observation,
    :math:`(\sum_{t: s_t = k} v_t + p_k)/(n_k + 1)` per entry, for the categorical rows
    (:math:`v_t` one-hot), the Gaussian means and the Poisson rates that ``init_params``
    initialises (a missing entry counts for nothing; Gaussian covariances keep their
    data-wide start). Without it a few labels cannot pull EM out of the local optimum the
    random start falls into: the labels would then sit in states that explain the rest of
    the data the other way round."""
    lab = np.flatnonzero(states >= 0)
    if not len(lab):
        return emis
    K = family.n_states

    def moved(p0: np.ndarray, V: np.ndarray) -> np.ndarray:
        seen = ~np.isnan(V)
        S, n = np.zeros((K, V.shape[1])), np.zeros((K, V.shape[1]))
        np.add.at(S, states[lab], np.where(seen, V, 0.0))
        np.add.at(n, states[lab], seen.astype(np.float64))
        return (S + p0) / (n + 1.0)

    emis = dict(emis)
    Xl = X[lab]
    if isinstance(family, MultiCategoricalEmissions) and "e" in init_params:
        B = emis["emissionprob"].copy()
        for f, W in enumerate(family.alphabets):
            V = np.where(Xl[:, f:f + 1] < 0, np.nan, Xl[:, f:f + 1] == np.arange(W))
            B[f, :, :W] = moved(B[f, :, :W], V)
        emis["emissionprob"] = B
    elif isinstance(family, CategoricalEmissions) and "e" in init_params:
        W = family.n_features
        V = np.where(Xl[:, None] < 0, np.nan, Xl[:, None] == np.arange(W))
        emis["emissionprob"] = moved(emis["emissionprob"], V)
    elif isinstance(family, GaussianEmissions) and "m" in init_params:
        emis["means"] = moved(emis["means"], Xl)
    elif isinstance(family, PoissonEmissions) and "l" in init_params:
        emis["lambdas"] = moved(emis["lambdas"], Xl)
    return emis


def _as_n_features(value):
    """``n_features`` as given: None, an int, or (several categorical features) a tuple."""
    if value is None or isinstance(value, (int, np.integer)):
        return value
    return tuple(int(w) for w in value)


def _check_n_features(value, emission) -> None:
    """None, a positive int, or for categorical emissions a sequence of positive ints (the
    alphabet of each of several features)."""
    if value is None:
        return
    if isinstance(value, (list, tuple, np.ndarray)) and emission == "categorical":
        if len(value) < 2:
            raise InvalidInputError(
                "n_features: a sequence gives the alphabet size of each of several "
                f"categorical features (at least 2), got {value!r:.60}; pass an int for one")
        for w in value:
            check_positive_int(w, "n_features")
        return
    check_positive_int(value, "n_features")


def _check_structure(transmat: np.ndarray, transitions: Transitions | None,
                     name: str = "transmat_") -> np.ndarray | None:
    """The allowed entries of a (valid, row-stochastic) ``transmat``, after checking that it
    puts no probability elsewhere; None for an unstructured model."""
    if transitions is None:
        return None
    values = transitions.gather(transmat)
    outside = 1.0 - transitions.row_sums(values)
    bad = np.flatnonzero(outside > 1e-8)
    if len(bad):
        raise InvalidInputError(
            f"{name}: row {bad[0]} puts probability {outside[bad[0]]:.3g} on transitions "
            "that topology / transmat_mask do not allow; set those entries to 0")
    return values


def _column_means(X: np.ndarray) -> np.ndarray:
    """Mean of each column over its observed (not NaN) entries; 0 for a column with none."""
    seen = ~np.isnan(X)
    return np.where(seen, X, 0.0).sum(axis=0) / np.maximum(seen.sum(axis=0), 1)


def _smallest(arr: np.ndarray) -> str:
    return f"{float(arr.min()):g}" if arr.size else "an empty array"


class HMM(BaseEstimator):
    r"""Hidden Markov model with categorical, Gaussian, Poisson, Gaussian-mixture or
    multinomial emissions.

    .. math::
        p(x_{0:T}, z_{0:T}) = \pi_{z_0} \prod_{t\ge1} A_{z_{t-1} z_t}
                              \prod_t p(x_t \mid z_t)

    Parameters
    ----------
    n_states : number of hidden states K.
    emission : ``"categorical"`` (integer symbols), ``"gaussian"``, ``"poisson"``, ``"gmm"``
        (a mixture of ``n_mix`` Gaussians per state) or ``"multinomial"`` (count vectors;
        see ``docs/families.md``).
    n_features : number of symbols (categorical) or features; inferred from the data if None.
        Several categorical features per step (``X`` of shape ``(n, F)``, F > 1): a product
        of per-feature categoricals; ``n_features`` is then the alphabet size of each
        feature (a sequence of F ints), and ``emissionprob_`` has shape ``(F, K, W)`` with
        ``W`` the largest alphabet (zeros past a feature's own).
    covariance_type : ``"spherical"``, ``"diag"``, ``"full"`` or ``"tied"`` (Gaussian and
        gmm; gmm's "tied" shares one matrix among a state's components).
    n_mix : number of mixture components per state (``emission="gmm"``).
    n_trials : trials per row (``emission="multinomial"``): None (each row's total) or an
        int every row's total must equal (needed by ``sample``).
    n_iter, tol : EM stops after ``n_iter`` iterations or when the log-likelihood improves by
        less than ``tol`` (``tol=-inf`` runs all iterations).
    n_init : random restarts; the run with the highest final log-likelihood is kept.
    init_params : letters of the parameters initialised by ``fit`` (``s`` startprob, ``t``
        transmat, ``e`` emissionprob, ``m`` means, ``c`` covars, ``l`` lambdas, ``w``
        mixture weights); parameters
        whose letter is absent must be set by the user before ``fit`` and are kept as set.
    params : letters of the parameters updated by EM.
    min_covar : floor on variances (and covariance eigenvalues), applied with a warning.
    random_state : seed, numpy Generator or None.
    verbose : print the objective per iteration to stderr.
    learn : the learning mode (see :mod:`hiddenstate.learn.batch`): ``"em"`` (maximum
        likelihood), ``"map"`` (posterior mode under the priors below), ``"vb"`` (mean-field
        variational Bayes; posterior hyper-parameters in ``*_posterior_``), ``"vt"``
        (Viterbi training: hard EM on the best path) or ``"kvt"`` (the ``k_best`` best paths).
        Streaming learners (each observation or sequence seen once; ``fit`` is one pass and
        :meth:`partial_fit` continues the stream): ``"online-em"`` (Cappé 2011),
        ``"bwo"`` (Baum-Welch online), ``"baldi-chauvin"``, ``"bona"`` (Bayesian online)
        and ``"mpa"`` (mean posterior approximation); see :mod:`hiddenstate.learn.online`.
    k_best : number of paths for ``learn="kvt"``.
    learner_options : keyword arguments of the streaming learner (e.g.
        ``{"step_exponent": 0.7}`` for online EM, ``{"eta": 0.1}`` for BWO).
    startprob_prior, transmat_prior, emissionprob_prior : Dirichlet concentrations.
    means_prior, means_weight, covars_prior, covars_weight : Gaussian priors (hmmlearn's
        names and meaning: prior mean and its weight, covariance scale and its weight).
    lambdas_prior, lambdas_weight : Gamma prior on Poisson rates (shape - 1 and rate).
    topology : ``"full"`` (every transition allowed), ``"left-right"`` (state ``i`` moves to
        ``j >= i`` only; with ``bandwidth``, ``i <= j <= i + bandwidth``) or ``"banded"``
        (``|i - j| <= bandwidth``).
    bandwidth : see ``topology`` (needed by ``"banded"``).
    transmat_mask : boolean ``(K, K)``, the transitions allowed (combined with
        ``topology``). The other entries of ``transmat_`` are zero and stay exactly zero
        in every mode; with few allowed transitions (at most a quarter of ``K**2``) the
        sparse kernels run, at a cost proportional to their number.
    weights_prior : Dirichlet concentration of the mixture weights (gmm); the gmm
        components take the Gaussian priors above, per component.
        Priors are used by every mode but ``"em"``; ``None`` takes the mode's default
        (see ``docs/learning-modes.md``).

    Attributes
    ----------
    startprob_ (K,), transmat_ (K, K), emissionprob_ (K, W), means_ (K, D),
    covars_ (hmmlearn's getter: (K, D, D) whatever the type; set it in the type's own shape),
    lambdas_ (K, D), weights_ (K, M) (gmm, whose ``means_`` are (K, M, D) and ``covars_``
    hmmlearn's GMMHMM shapes), n_features_, monitor_ (``history``, ``converged``).
    stream_log_prob_ (``learn="online-em"``): the prequential log-probability
    log p(x_t | x_<t, θ_{t-1}) of each observation of the last ``fit``/``partial_fit``
    call, predicted before the parameters learned from it (a running learning curve). It
    uses the running iterate θ_{t-1}, also with Polyak-Ruppert averaging (whose averaged
    parameters are what the attributes report).
    """

    def __init__(self, n_states: int = 2, emission: str = "categorical",
                 n_features: int | None = None, covariance_type: str = "diag",
                 n_iter: int = 100, tol: float = 1e-4, n_init: int = 1,
                 init_params: str = _ALL_LETTERS, params: str = _ALL_LETTERS,
                 min_covar: float = 1e-3, random_state=None, verbose: bool = False,
                 learn: str = "em", k_best: int = 1, startprob_prior=None,
                 transmat_prior=None, emissionprob_prior=None, means_prior=None,
                 means_weight=None, covars_prior=None, covars_weight=None,
                 lambdas_prior=None, lambdas_weight=None, learner_options: dict | None = None,
                 n_mix: int = 1, n_trials=None, weights_prior=None, topology: str = "full",
                 bandwidth: int | None = None, transmat_mask=None):
        self.n_states = n_states
        self.emission = emission
        self.n_features = n_features
        self.covariance_type = covariance_type
        self.n_iter = n_iter
        self.tol = tol
        self.n_init = n_init
        self.init_params = init_params
        self.params = params
        self.min_covar = min_covar
        self.random_state = random_state
        self.verbose = verbose
        self.learn = learn
        self.k_best = k_best
        self.startprob_prior = startprob_prior
        self.transmat_prior = transmat_prior
        self.emissionprob_prior = emissionprob_prior
        self.means_prior = means_prior
        self.means_weight = means_weight
        self.covars_prior = covars_prior
        self.covars_weight = covars_weight
        self.lambdas_prior = lambdas_prior
        self.lambdas_weight = lambdas_weight
        self.learner_options = learner_options
        self.n_mix = n_mix
        self.n_trials = n_trials
        self.weights_prior = weights_prior
        self.topology = topology
        self.bandwidth = bandwidth
        self.transmat_mask = transmat_mask

    # -- configuration --------------------------------------------------------------------------
    def _prior(self, name: str):
        """The prior hyper-parameter ``name`` in force for the learning mode."""
        value = getattr(self, name)
        if self.learn == "em":
            return _FLAT_PRIORS[name]
        if value is not None:
            return value
        mode_defaults = _DEFAULT_PRIORS.get(self.learn, {})
        return mode_defaults[name] if name in mode_defaults else _MAP_PRIORS[name]

    def _family_kwargs(self) -> dict:
        """Extra constructor arguments of the emission family (its priors included)."""
        names = _FAMILY_PRIORS[self.emission]
        kwargs = {name: self._prior(name) for name in names}
        if self.emission in _GAUSSIAN:
            kwargs.update(covariance_type=self.covariance_type, min_covar=self.min_covar)
        if self.emission == "gmm":
            kwargs["n_mix"] = self.n_mix
        if self.emission == "multinomial":
            kwargs["n_trials"] = self.n_trials
        return kwargs

    def _startprob_prior(self):
        return self._prior("startprob_prior")

    def _transmat_prior(self):
        return self._prior("transmat_prior")

    def _check_hyper(self) -> None:
        check_positive_int(self.n_states, "n_states")
        check_positive_int(self.n_iter, "n_iter")
        check_positive_int(self.n_init, "n_init")
        check_choice(self.emission, "emission", FAMILIES)
        if self.emission in _GAUSSIAN:
            check_choice(self.covariance_type, "covariance_type", COVARIANCE_TYPES)
        _check_n_features(self.n_features, self.emission)
        if self.emission == "gmm":
            check_positive_int(self.n_mix, "n_mix")
        if self.emission == "multinomial":
            check_n_trials(self.n_trials)
        for name in ("init_params", "params"):
            letters = getattr(self, name)
            if not isinstance(letters, str) or set(letters) - set(_ALL_LETTERS):
                raise InvalidInputError(
                    f"{name}: expected a string of letters from {_ALL_LETTERS!r}, got {letters!r}")
        check_number(self.tol, "tol", finite=False)
        check_number(self.min_covar, "min_covar", minimum=0.0)
        check_random_state(self.random_state)
        check_choice(self.learn, "learn", MODES + ONLINE_MODES)
        if not isinstance(self.verbose, (bool, int, np.bool_, np.integer)):
            raise InvalidInputError(f"verbose: expected True or False, got {self.verbose!r:.40}")
        if self.learn in ONLINE_MODES and self.n_init != 1:
            raise InvalidInputError(
                f"n_init: streaming learners see the data once; use n_init=1 with "
                f"learn={self.learn!r}")
        if self.learner_options is not None and not isinstance(self.learner_options, dict):
            raise InvalidInputError(
                f"learner_options: expected a dict of the learner's keyword arguments, got "
                f"{type(self.learner_options).__name__}")
        if self.learner_options and self.learn not in ONLINE_MODES:
            raise InvalidInputError(
                f"learner_options: only streaming learners {ONLINE_MODES} take options; "
                f"learn={self.learn!r} is configured by the estimator's own arguments")
        if self.learner_options:
            make_learner(self.learn, self.learner_options)  # an unknown option is an error
        if self.learn in ONLINE_MODES:
            given = [n for n in ("startprob_prior", "transmat_prior", "emissionprob_prior")
                     if getattr(self, n, None) is not None]
            if given:
                raise InvalidInputError(
                    f"{given[0]}: the streaming learners do not use the estimator's Dirichlet "
                    "priors; learn='online-em' takes them in learner_options (e.g. "
                    f"learner_options={{{given[0]!r}: ...}}), the others have none")
        check_positive_int(self.k_best, "k_best")
        self._transitions()  # checks topology, bandwidth and transmat_mask
        if self.learn == "em":
            given = [n for n in _FLAT_PRIORS if getattr(self, n, None) is not None]
            if given:
                raise InvalidInputError(
                    f"{given[0]}: priors are not used by learn='em' (maximum likelihood); "
                    "use learn='map', 'vb', 'vt' or 'kvt', or drop the prior")

    def _transitions(self) -> Transitions | None:
        """The allowed transitions of a structured model (``topology``, ``bandwidth``,
        ``transmat_mask``), or None when every transition is allowed."""
        K = check_positive_int(self.n_states, "n_states")
        # subclasses with their own constructor (PROPS, the hmmlearn classes): unstructured
        topology = check_choice(getattr(self, "topology", "full"), "topology", TOPOLOGIES)
        bw = getattr(self, "bandwidth", None)
        mask = getattr(self, "transmat_mask", None)
        if bw is not None:
            check_positive_int(bw, "bandwidth", minimum=0)
        if topology == "banded" and bw is None:
            raise InvalidInputError(
                "bandwidth: topology='banded' needs bandwidth (state i moves to the states "
                "i - bandwidth .. i + bandwidth); pass e.g. bandwidth=1")
        if topology == "full" and bw is not None:
            raise InvalidInputError(
                "bandwidth: only used with topology='banded' or 'left-right'")
        if topology == "full":
            transitions = None
        elif topology == "banded":
            transitions = Transitions.band(K, bw, bw)
        else:
            transitions = Transitions.band(K, 0, K - 1 if bw is None else bw)
        if mask is None:
            return transitions
        mask = np.asarray(mask)
        if mask.shape != (K, K) or mask.dtype != np.bool_:
            raise InvalidInputError(
                f"transmat_mask: expected a boolean array of shape {(K, K)}, got "
                f"{mask.dtype} {mask.shape}")
        if transitions is not None:
            mask = mask & transitions.mask()
        empty = np.flatnonzero(~mask.any(axis=1))
        if len(empty):
            raise InvalidInputError(
                f"transmat_mask: state {empty[0]} has no allowed transition (with "
                f"topology={topology!r}); every row needs at least one True entry")
        return Transitions.from_mask(mask)

    def _chain(self, startprob, transmat) -> _Chain:
        """The chain of the model's parameters (structured: its allowed entries)."""
        transitions = self._transitions()
        if transitions is None:
            return _Chain(startprob, transmat)
        return _Chain(startprob, transmat, transitions, transitions.gather(transmat))

    def _check_priors(self, n_features: int, n_emission_states: int) -> None:
        """The priors in force for the mode: numbers of the right shape and range.

        Dirichlet concentrations (``startprob_prior`` (K,), ``transmat_prior`` (K, K),
        ``emissionprob_prior`` (K, W); a scalar or any broadcastable array) must be >= 1 for
        ``"map"``, ``"vt"`` and ``"kvt"`` (below 1 the posterior density is unbounded at
        the boundary of the simplex: there is no mode, the objective would be +inf) and
        > 0 for ``"vb"``. For the point-estimate modes (and the streaming learners, whose
        Gaussian/Poisson M-step uses them) ``means_prior`` broadcasts to (K, D);
        ``means_weight`` and ``covars_weight`` are single numbers, ``means_weight >= 0``;
        ``covars_prior`` is >= 0 and broadcasts to (K,) or (K, D) (spherical), (K, D)
        (diag), (K, D, D) (full) or (D, D) (tied), symmetric positive semi-definite for
        full/tied; ``lambdas_prior`` and ``lambdas_weight`` are >= 0 and broadcast to
        (K, D). Variational Bayes checks its Gaussian/Poisson priors itself (they must be
        proper; see ``docs/learning-modes.md``).
        """
        if self.learn == "em":
            return
        K, Ke, D = self.n_states, n_emission_states, n_features
        vb = self.learn == "vb"
        if self.learn not in ONLINE_MODES:
            shapes = {"startprob_prior": (K,), "transmat_prior": (K, K),
                      "emissionprob_prior": ((len(D), Ke, max(D)) if isinstance(D, tuple)
                                             else (Ke, D))}
            if self.emission == "gmm":
                shapes["weights_prior"] = (Ke, self.n_mix)
            names = [n for n in shapes if n in ("startprob_prior", "transmat_prior")
                     or n in _FAMILY_PRIORS[self.emission]]
            for name in names:
                value = self._prior(name)
                if value is None and name == "emissionprob_prior":   # VB's default: 1/W
                    value = 1.0 / (max(D) if isinstance(D, tuple) else D)
                alpha = _prior_array(name, value, shapes[name])
                if vb and not np.all(alpha > 0):
                    raise InvalidInputError(
                        f"{name}: learn='vb' needs a proper Dirichlet prior, every "
                        f"concentration > 0 (got {_smallest(alpha)}); pass e.g. {name}=1.0")
                if not vb and not np.all(alpha >= 1):
                    raise InvalidInputError(
                        f"{name}: learn={self.learn!r} needs Dirichlet concentrations >= 1 "
                        f"(got {_smallest(alpha)}): below 1 the posterior density is "
                        "unbounded at the edge of the simplex and has no mode. Use >= 1, or "
                        "learn='vb' for a sparse prior (0 < alpha < 1)")
        if vb:
            return
        if self.emission == "gmm":
            self._family(D, None, Ke).check_point_priors(self.learn)
        elif self.emission == "gaussian":
            ct = self.covariance_type
            _prior_array("means_prior", self._prior("means_prior"), (Ke, D))
            _scalar_prior("means_weight", self._prior("means_weight"), self.learn, 0.0)
            _scalar_prior("covars_weight", self._prior("covars_weight"), self.learn, None)
            shape = {"spherical": (Ke, D), "diag": (Ke, D), "full": (Ke, D, D),
                     "tied": (D, D)}[ct]
            cp = _spherical_prior(self._prior("covars_prior"), Ke) if ct == "spherical" \
                else self._prior("covars_prior")
            psi = _prior_array("covars_prior", cp, shape)
            if ct in ("spherical", "diag"):
                bad = not np.all(psi >= 0)
            else:
                mats = np.broadcast_to(psi, shape).reshape(-1, D, D)
                bad = not (np.allclose(mats, mats.transpose(0, 2, 1))
                           and np.linalg.eigvalsh(mats).min() >= -1e-12 * max(
                               1.0, float(np.abs(mats).max())))
            if bad:
                kind = ("non-negative" if ct in ("spherical", "diag")
                        else "symmetric positive semi-definite")
                raise InvalidInputError(
                    f"covars_prior: must be {kind} for covariance_type={ct!r} (it is added "
                    "to the scatter of every state's covariance estimate); pass e.g. "
                    "covars_prior=1e-2")
        elif self.emission == "poisson":
            for name, combine in (("lambdas_prior", ()), ("lambdas_weight", ((Ke, 1),))):
                value = _prior_array(name, self._prior(name), (Ke, D), combine)
                if not np.all(value >= 0):
                    raise InvalidInputError(
                        f"{name}: learn={self.learn!r} needs {name} >= 0 (got "
                        f"{_smallest(value)}); a negative value can make the estimated rate "
                        "negative. Pass e.g. 0.0")

    def _family(self, n_features: int, X: np.ndarray | None = None,
                n_states: int | None = None):
        """The emission family (of ``n_states`` states, default all); with data, VB's
        data-dependent prior defaults are filled in (Gaussian ``means_prior``: the data mean,
        ``covars_weight``: ``n_features``; Poisson ``lambdas_weight``: one over the data
        mean)."""
        Ke = self.n_states if n_states is None else n_states
        if X is not None:  # fitting: the priors must be usable
            self._check_priors(n_features, Ke)
        kwargs = self._family_kwargs()
        if self.emission == "gaussian" and self.covariance_type == "spherical":
            kwargs["covars_prior"] = _spherical_prior(kwargs["covars_prior"], Ke)
        if self.learn == "vb" and self.emission in _GAUSSIAN:
            if self.means_prior is None and X is not None:
                kwargs["means_prior"] = _column_means(X)
            if self.covars_weight is None:
                kwargs["covars_weight"] = float(n_features)
        if isinstance(n_features, tuple):  # several categorical features
            prior = kwargs.get("emissionprob_prior")
            if prior is None:   # VB's default: 1/W of each feature's alphabet
                prior = 1.0 / np.array(n_features, dtype=np.float64)[:, None, None]
            return MultiCategoricalEmissions(Ke, n_features, emissionprob_prior=prior)
        if kwargs.get("emissionprob_prior", 1.0) is None:     # VB's default: 1/W
            kwargs["emissionprob_prior"] = 1.0 / n_features
        if self.learn == "vb" and self.emission == "poisson" and self.lambdas_weight is None:
            mean = _column_means(X) if X is not None else np.ones(n_features)
            kwargs["lambdas_weight"] = 1.0 / np.where(mean > 0, mean, 1.0)
        return FAMILIES[self.emission](Ke, n_features, **kwargs)

    # -- learned parameters --------------------------------------------------------------------
    # Assigning one stores a float64 copy; reading one gives a read-only view; the
    # parameters are validated at their first use after any assignment (see _learned).
    startprob_ = LearnedArray()
    transmat_ = LearnedArray()
    emissionprob_ = LearnedArray()
    means_ = LearnedArray()
    _covars_ = LearnedArray("covars_")  # covars_ in the covariance type's own shape
    lambdas_ = LearnedArray()
    weights_ = LearnedArray()

    @property
    def covars_(self) -> np.ndarray:
        """Covariances as ``(K, D, D)`` matrices (hmmlearn's getter; read-only); for
        ``emission="gmm"`` in the stored shape (hmmlearn's GMMHMM ``covars_``)."""
        if not _learned.has(self, "_covars_"):
            raise AttributeError("covars_")
        stored = _learned.raw(self, "_covars_")
        if self.emission == "gmm":
            out = stored.view()
            out.flags.writeable = False
            return out
        K = self.n_states
        D = _learned.raw(self, "means_").shape[-1] if _learned.has(self, "means_") \
            else stored.shape[-1]
        try:
            out = full_covars(stored, self.covariance_type, K, D)
        except (ValueError, IndexError, KeyError, TypeError) as exc:
            raise InvalidInputError(
                f"covars_: shape {stored.shape} does not fit covariance_type="
                f"{self.covariance_type!r} with {K} states and {D} features ({exc})") from exc
        if out is stored:
            out = out.view()
        out.flags.writeable = False
        return out

    @covars_.setter
    def covars_(self, value) -> None:
        self._covars_ = value

    @property
    def n_features_(self) -> int:
        """Number of symbols (categorical) or features: set by ``fit``, or (parameters set
        by hand) the ``n_features`` argument, or the number of columns of
        ``emissionprob_`` / ``means_`` / ``lambdas_``."""
        stored = self.__dict__.get("_fitted_n_features")
        if stored is not None:
            return stored
        if self.n_features is not None:
            return _as_n_features(self.n_features)
        inferred = self._inferred_n_features()
        if inferred is None:
            raise AttributeError("n_features_")
        return inferred

    @n_features_.setter
    def n_features_(self, value) -> None:
        self.__dict__["_fitted_n_features"] = value
        _learned.invalidate(self)

    def _inferred_n_features(self) -> int | None:
        """Columns of the first 2-D emission parameter (``covars_`` aside; a mixture's
        ``means_`` (K, M, D)), if any."""
        for attr in self._emission_attrs_of_family():
            if attr not in ("_covars_", "weights_") and _learned.has(self, attr):
                arr = _learned.raw(self, attr)
                if arr.ndim == 3 and attr == "emissionprob_":  # several features
                    return (arr.shape[2],) * arr.shape[0]
                if arr.ndim == (3 if self.emission == "gmm" else 2):
                    return arr.shape[-1]
        return None

    def _emission_keys(self) -> dict[str, str]:
        return FAMILIES[self.emission].letters

    def _emission_attrs_of_family(self) -> list[str]:
        return ["_covars_" if key == "covars" else key + "_"
                for key in self._emission_keys().values()]

    def _get_emission_params(self) -> dict:
        """The emission parameters (the stored arrays; do not modify them)."""
        return {key: _learned.raw(self, "_covars_" if key == "covars" else key + "_")
                for key in self._emission_keys().values()}

    def _params(self) -> tuple[np.ndarray, np.ndarray, dict]:
        """``(startprob, transmat, emission parameters)``, validated (once per change; see
        :func:`~hiddenstate.models._learned.checked`): the stored arrays, which the
        model's computations read and never modify."""
        self._check_is_fitted()
        return (_learned.raw(self, "startprob_"), _learned.raw(self, "transmat_"),
                self._get_emission_params())

    def _set_params_(self, startprob, transmat, emission_params: dict) -> None:
        self.startprob_ = startprob
        self.transmat_ = transmat
        for key, value in emission_params.items():
            setattr(self, "_covars_" if key == "covars" else key + "_", value)

    def _check_is_fitted(self) -> None:
        """Raise :class:`NotFittedError` unless every parameter is set, then validate them
        (at their first use after a change; an invalid parameter raises
        :class:`InvalidInputError` naming it)."""
        needed = ["startprob_", "transmat_"]
        if isinstance(self.emission, str) and self.emission in FAMILIES:
            needed += self._emission_attrs_of_family()
        missing = [a for a in needed if not _learned.has(self, a)]
        if missing:
            name = "covars_" if missing[0] == "_covars_" else missing[0]
            if len(missing) == len(needed):
                raise NotFittedError(
                    f"This {type(self).__name__} has no learned parameters yet; call fit "
                    f"first, or set {', '.join(n.lstrip('_') for n in needed)} by hand")
            raise NotFittedError(
                f"{name}: not set; set it (or call fit) before using {type(self).__name__}")
        _learned.checked(self)

    def _validation_key(self) -> tuple:
        """What the parameters are validated against: the number of states, the emission
        family and its shape arguments (checked here, as they are cheap)."""
        K = check_positive_int(self.n_states, "n_states")
        check_choice(self.emission, "emission", FAMILIES)
        ct = None
        if self.emission in _GAUSSIAN:
            ct = check_choice(self.covariance_type, "covariance_type", COVARIANCE_TYPES)
        _check_n_features(self.n_features, self.emission)
        if self.emission == "gmm":
            ct = (ct, check_positive_int(self.n_mix, "n_mix"))
        if self.emission == "multinomial":
            ct = check_n_trials(self.n_trials)
            ct = ct if ct is None or np.ndim(ct) == 0 else tuple(ct.tolist())
        try:
            W = self.n_features_
        except AttributeError:
            attr = next((a for a in self._emission_attrs_of_family() if a != "_covars_"), "")
            shape = _learned.raw(self, attr).shape if _learned.has(self, attr) else None
            raise InvalidInputError(
                f"{attr}: expected shape (n_states, n_features), got {shape}; or pass "
                "n_features") from None
        W = (tuple(check_positive_int(w, "n_features_") for w in W) if isinstance(W, tuple)
             else check_positive_int(W, "n_features_"))
        return K, self.emission, ct, W

    def _check_learned(self) -> None:
        """Validate the learned parameters against the hyper-parameters: shapes for
        ``n_states`` states and ``n_features_`` features, probabilities that are
        finite, non-negative and sum to one, the emission family's own checks (positive
        variances, symmetric positive-definite covariances, non-negative rates). Used at
        the first use of changed parameters and when loading a saved model."""
        K = check_positive_int(self.n_states, "n_states")
        check_stochastic(_learned.raw(self, "startprob_"), (K,), "startprob_")
        transmat = check_stochastic(_learned.raw(self, "transmat_"), (K, K), "transmat_")
        _check_structure(transmat, self._transitions())
        self._fitted_family().check_params(self._get_emission_params())

    # -- data -----------------------------------------------------------------------------------
    def _known_n_features(self) -> int | None:
        """``n_features`` if known before seeing the data (given, or from a set
        ``emissionprob_`` that ``fit`` keeps)."""
        if self.n_features is None and "e" not in self.init_params \
                and hasattr(self, "emissionprob_"):
            shape = np.asarray(self.emissionprob_).shape
            return (shape[2],) * shape[0] if len(shape) == 3 else shape[1]
        return _as_n_features(self.n_features)

    def _infer_n_features(self, X: np.ndarray) -> int | tuple[int, ...]:
        if self.emission == "categorical" and X.ndim == 2:  # several features
            return MultiCategoricalEmissions(self.n_states, (1,) * X.shape[1]
                                             ).infer_n_features(X)
        return FAMILIES[self.emission](self.n_states, 1,
                                       **self._family_kwargs()).infer_n_features(X)

    def _which(self) -> str:
        """Letters of the parameters the batch modes learn."""
        return self.params

    def _validate(self, X, lengths, n_features: int | None, stream: bool = False,
                  continues: bool = False):
        """Validated observations and their layout. ``stream``/``continues``: the data feed a
        streaming learner (and continue its last sequence)."""
        if self.emission == "categorical" and (
                isinstance(n_features, tuple) or (len(np.shape(X)) == 2
                                                  and np.shape(X)[1] > 1)):
            Xv = check_feature_symbols(X, n_features)   # several categorical features
            seqs = Sequences.from_lengths(check_lengths(lengths, len(Xv)))
            return Xv, seqs
        family_cls = FAMILIES[self.emission]
        family = family_cls(self.n_states, n_features or 1, **self._family_kwargs())
        Xv = family.validate_X(X, n_features)
        seqs = Sequences.from_lengths(check_lengths(lengths, len(Xv)))
        return Xv, seqs

    def _fitted_family(self):
        return self._family(self.n_features_)

    # -- fitting --------------------------------------------------------------------------------
    def _initial_params(self, X, family, rng: np.random.Generator, seqs: Sequences,
                        values: bool = False):
        """Initial ``(startprob, transmat, emission)``; a structured model's ``transmat``
        is restricted to the allowed transitions (rows renormalised), and with ``values``
        returned as its allowed entries only (no ``(K, K)`` array)."""
        K = self.n_states
        transitions = self._transitions()
        init = self.init_params
        if "s" in init:
            startprob = np.full(K, 1.0 / K)
        else:
            startprob = self._user_param("startprob_", "s")
        if "t" in init:
            # lambda I + (1 - lambda) / K: the symmetric chain whose state autocorrelation
            # decays like the data's (flat on text, sticky on persistent series); chosen on
            # the panel of experiments/defaults_panel.py (see docs/hmm.md). Streaming
            # learners start from a fixed lambda, so that a stream fed in one call or many
            # starts alike.
            s = (STREAM_PERSISTENCE if self.learn in ONLINE_MODES
                 else persistence(*_observations(X, family), seqs.bounds))
            if transitions is None:
                transmat = s * np.eye(K) + (1.0 - s) / K
            else:
                v = (s * (transitions.rows == transitions.indices) + (1.0 - s) / K)
                transmat = v / transitions.row_sums(v)[transitions.rows]
        else:
            transmat = self._user_param("transmat_", "t")
            transmat = check_stochastic(transmat, (K, K), "transmat_")
            if transitions is not None:
                transmat = _check_structure(transmat, transitions)
        startprob = check_stochastic(startprob, (K,), "startprob_")
        if transitions is not None and not values:
            transmat = transitions.dense(transmat)
        # data-driven initialisation (k-means for Gaussians) only when something needs it
        drawn = family.initialize(X, rng) if set(init) & set(family.letters) else {}
        emis = {}
        for letter, key in family.letters.items():
            if letter in init:
                emis[key] = drawn[key]
            else:
                attr = "_covars_" if key == "covars" else key + "_"
                emis[key] = self._user_param(attr, letter)
        return startprob, transmat, family.check_params(emis)

    def _user_param(self, attr: str, letter: str):
        if not _learned.has(self, attr):
            name = attr.strip("_") + "_"
            raise InvalidInputError(
                f"init_params: {letter!r} is not in init_params={self.init_params!r}, so "
                f"{name} must be set before fit; set it or add {letter!r} to init_params")
        return _learned.raw(self, attr).copy()  # the learners may update it in place

    def _problem(self, family, X, seqs, states=None) -> _HMMProblem:
        return _HMMProblem(family, X, seqs, self._startprob_prior(), self._transmat_prior(),
                           states, self._transitions())

    def _monitor(self) -> ConvergenceMonitor:
        tol = -np.inf if self.learn in ("vt", "kvt") else self.tol  # VT stops on paths
        return ConvergenceMonitor(tol, self.n_iter, self.verbose)

    def fit(self, X, lengths=None, callback: Callable[[int, float], None] | None = None,
            states=None):
        """Learn the parameters with the mode chosen by ``learn`` from one or more sequences.

        ``X`` holds the sequences concatenated (categorical: integer symbols, shape
        ``(n,)`` or ``(n, 1)``; Gaussian/Poisson: ``(n, n_features)``); ``lengths`` gives
        each sequence's length (default: one sequence). ``callback(iteration, objective)``
        is called after every iteration. With ``n_init > 1`` the run with the highest final
        objective of the mode is kept.

        ``states``: known hidden states, ``(n,)`` integers with ``-1`` where the state is
        unknown. Each labelled step's posterior is clamped to its label (its emission row
        is masked to the label, :func:`inference.clamp_states`), in the E-step of every
        mode: semi-supervised learning; with every step labelled, one iteration gives the
        supervised estimates (counts, plus the priors of the mode). The streaming learners
        clamp the same way (online EM's filter, each sequence's forward-backward for BWO and
        Baldi-Chauvin, the paths that BOnA and MPA enumerate).
        """
        self._check_hyper()
        n_features = self._known_n_features()
        streaming = self.learn in ONLINE_MODES
        X, seqs = self._validate(X, lengths, n_features, stream=streaming)
        if states is not None:
            states = check_states(states, len(X), self.n_states)
        if n_features is None:
            n_features = self._infer_n_features(X)
        family = self._family(n_features, X)
        self._check_fit_memory(X, seqs, family)
        rng = make_rng(self.random_state)
        if streaming:
            if hasattr(self, "learner_state_"):
                delattr(self, "learner_state_")
            return self._stream(X, seqs, family, rng, n_features, continues=False,
                                states=states)
        return self._fit_batch(self._problem(family, X, seqs, states), family, n_features, X,
                               seqs, rng, callback, states)

    def _fit_batch(self, problem, family, n_features: int, X, seqs: Sequences | None, rng,
                   callback, states=None) -> HMM:
        """The ``n_init`` restarts of the batch mode on ``problem``, each started by
        :meth:`_initial_params` from ``X``/``seqs`` (the data, or the sample of it that
        :func:`hiddenstate.distributed.fit` gathers; None when nothing is initialised from
        data) and, with partial state labels ``states``, emission parameters from the
        labelled steps; keeps the run with the highest final objective."""
        best = None
        for _ in range(self.n_init):
            startprob, transmat, emis = self._initial_params(X, family, rng, seqs,
                                                             values=True)
            if states is not None:
                emis = _labelled_start(family, X, states, emis, self.init_params)
            theta = {"startprob": startprob, "transmat": transmat, "emission": emis}
            result = fit_mode(problem, self.learn, theta, self._monitor(), self._which(),
                              self.k_best, callback)
            if best is None or result.monitor.history[-1] > best.monitor.history[-1]:
                best = result
        self.monitor_ = best.monitor
        self.n_features_ = n_features
        transmat = best.params["transmat"]
        transitions = self._transitions()
        if transitions is not None:  # the allowed entries only: back to K x K
            transmat = transitions.dense(transmat)
        self._set_params_(best.params["startprob"], transmat, best.params["emission"])
        self._set_posterior_(best.posterior)
        return self

    def _check_fit_memory(self, X, seqs: Sequences, family, started: bool = False) -> None:
        """Refuse a fit that would not fit in memory (checked before anything is allocated):
        the E-step of the mode (forward-backward, Viterbi or k-best paths; the streaming
        learners: forward-backward of the longest sequence, or online EM's own state with
        its ``K**3`` transition statistics) plus ``_PARAM_COPIES`` copies of the
        parameters (initialisation, current and new values, M-step temporaries)."""
        K, W = self.n_states, family.n_features
        if isinstance(family, MultiCategoricalEmissions):  # F rows of W per state
            W = family.n_columns * W
        by_symbol = isinstance(family, CategoricalEmissions)
        params = _PARAM_COPIES * 8.0 * (K * K + K * W * (W if self.emission == "gaussian"
                                                         and self.covariance_type == "full"
                                                         else 1))
        fixed = {"n_states": 0.0 if started else params}  # a started stream holds them
        if self.learn == "online-em":
            n_mix = self.n_mix if self.emission == "gmm" else 1  # a vector per component
            by_symbol = by_symbol or isinstance(family, MultiCategoricalEmissions)
            fixed["n_states"] += 0.0 if started else 8.0 * K**3 + (8.0 * W * K * K if by_symbol else
                                                8.0 * K * K * n_mix * (1 + W + W * W))
            op, layout = "log_likelihood", seqs
        elif self.learn in ONLINE_MODES:
            op, layout = "forward_backward", Sequences.from_lengths(np.array([seqs.max_len]))
        else:
            op = {"vt": "viterbi", "kvt": "kbest"}.get(self.learn, "forward_backward")
            layout = seqs
            if op != "forward_backward":  # the path counts' posteriors
                fixed["X"] = 8.0 * K * (W if by_symbol else len(X))
        fixes = {"n_states": "online EM keeps K**3 transition statistics: use fewer states "
                             "or a per-sequence learner ('bwo', 'baldi-chauvin', 'bona')"} \
            if self.learn == "online-em" else None
        self._check_memory(op, X, layout, family, self.k_best, fixed,
                           f"fit (learn={self.learn!r}) on {len(X)} observations with "
                           f"{K} states", fixes)

    # -- streaming ------------------------------------------------------------------------------
    def _learner(self):
        return make_learner(self.learn, self.learner_options or {})

    def _stream(self, X, seqs, family, rng, n_features, continues: bool, states=None):
        """Feed sequences to the streaming learner (starting it if needed); ``states``:
        partial state labels (validated)."""
        learner = self._learner()
        state = getattr(self, "learner_state_", None)
        if state is None:
            if continues:
                raise InvalidInputError(
                    "continues: there is no stream to continue yet; call partial_fit without "
                    "continues=True first")
            startprob, transmat, emis = self._initial_params(X, family, rng, seqs)
            if states is not None:  # as batch: the labels pin which state is which
                emis = _labelled_start(family, X, states, emis, self.init_params)
            state = learner.start({"startprob": startprob, "transmat": transmat,
                                   "emission": emis}, family, rng)
            self.monitor_ = ConvergenceMonitor(self.tol, self.n_iter, self.verbose)
            self.n_features_ = n_features
        if self.learn == "online-em":
            log_pred = np.empty(len(X))
            state = learner.update(state, X, seqs.lengths, family, continues=continues,
                                   log_pred=log_pred, states=states)
            self.stream_log_prob_ = log_pred
        else:
            state = learner.update(state, X, seqs.lengths, family, continues=continues,
                                   states=states)
        theta = learner.params(state, family)
        self.learner_state_ = state
        self._checked_state = StateRecord(state)
        self._set_params_(theta["startprob"], theta["transmat"], theta["emission"])
        return self

    def partial_fit(self, X, lengths=None, continues: bool = False, states=None):
        """Continue the stream with the sequences ``X`` (streaming learners only).

        Each sequence restarts the filter from ``startprob_``; learned statistics carry
        over. ``continues=True`` makes the first sequence the continuation of the one the
        previous call ended in (online EM). The first call initialises the learner from
        ``init_params`` and its data. Results are identical whether a stream is fed in one
        call or many, and across :meth:`save` / :func:`hiddenstate.load`. ``states``:
        partial state labels of ``X`` (``-1``: unknown), clamped as in :meth:`fit`.
        """
        self._check_hyper()
        if self.learn not in ONLINE_MODES:
            raise InvalidInputError(
                f"learn: partial_fit needs a streaming learner {ONLINE_MODES}, not "
                f"{self.learn!r}; use fit for batch learning")
        if hasattr(self, "learner_state_"):
            record = getattr(self, "_checked_state", None)
            if record is None or not record.matches(self.learner_state_):
                self._check_is_fitted()  # a state set or edited by hand: check it first
                self._check_loaded()
            X, seqs = self._validate(X, lengths, self.n_features_, stream=True,
                                     continues=continues)
            if states is not None:
                states = check_states(states, len(X), self.n_states)
            family = self._family(self.n_features_, X)
            self._check_fit_memory(X, seqs, family, started=True)
            return self._stream(X, seqs, family, None, self.n_features_, continues, states)
        n_features = self._known_n_features()
        X, seqs = self._validate(X, lengths, n_features, stream=True, continues=continues)
        if states is not None:
            states = check_states(states, len(X), self.n_states)
        if n_features is None:
            n_features = self._infer_n_features(X)
        family = self._family(n_features, X)
        self._check_fit_memory(X, seqs, family)
        return self._stream(X, seqs, family, make_rng(self.random_state), n_features,
                            continues, states)

    def _set_posterior_(self, posterior: dict | None) -> None:
        """VB posterior hyper-parameters as ``<name>_posterior_`` attributes."""
        for attr in self._posterior_attrs():
            delattr(self, attr)
        if posterior is None:
            return
        for name, value in posterior.items():
            items = value.items() if isinstance(value, dict) else [(name, value)]
            for key, arr in items:
                setattr(self, key + _POSTERIOR_SUFFIX, np.asarray(arr, dtype=np.float64))

    def _posterior_attrs(self) -> list[str]:
        return sorted(a for a in vars(self) if a.endswith(_POSTERIOR_SUFFIX))

    # -- inference ------------------------------------------------------------------------------
    def _prepare(self, X, lengths, op: str, chain: bool = False):
        """Validated parameters, the layout of ``X`` and its emission table, after checking
        that the inference function ``op`` (see :func:`inference.memory_estimate`) fits in
        memory: ``(startprob, transmat, seqs, table)``; with ``chain``, the
        :class:`_Chain` in place of ``(startprob, transmat)``."""
        startprob, transmat, emis = self._params()
        X, seqs = self._validate(X, lengths, self.n_features_)
        family = self._fitted_family()
        self._check_memory(op, X, seqs, family)
        c = self._chain(startprob, transmat)
        table = inference.emission_table(family, emis, X, startprob, c.successors(), seqs)
        return (c, seqs, table) if chain else (startprob, transmat, seqs, table)

    def _check_memory(self, op: str, X, seqs: Sequences, family, k: int = 1,
                      fixed: dict | None = None, what: str | None = None,
                      fixes: dict | None = None) -> None:
        """Refuse (:class:`~hiddenstate.errors.InsufficientMemoryError`) inference ``op`` on
        ``X`` when it would not fit in the available memory: the allocations of the
        inference function (:func:`inference.memory_estimate`; ``"posteriors"``: forward-
        backward keeping every row's posteriors), the emission table and ``fixed`` (more
        shares by argument)."""
        K = self.n_states
        by_symbol = isinstance(family, CategoricalEmissions)
        rows = family.n_features if by_symbol else len(X)
        transitions = self._transitions()
        nnz = None
        if transitions is not None and transitions.nnz <= SPARSE_DENSITY * K * K:
            nnz = transitions.nnz
        if op == "posteriors":
            parts = inference.memory_estimate("forward_backward", K, seqs, rows, False,
                                              n_transitions=nnz)
        else:
            parts = inference.memory_estimate(op, K, seqs, rows, by_symbol, k, nnz)
        if by_symbol:
            parts["n_states"] += rows * K * 8.0
        else:  # the (N, K) table, and the temporaries that build it before inference runs
            table = rows * K * 8.0
            build = _table_build_copies(family) * table
            parts["X"] += table + max(0.0, build - table - sum(parts.values()))
        for key, value in (fixed or {}).items():
            parts[key] = parts.get(key, 0.0) + value
        what = what or f"{op} of {len(X)} observations with {K} states"
        check_memory(parts, f"{type(self).__name__}: {what}", fixes)

    def score_sequences(self, X, lengths=None) -> np.ndarray:
        """Log-likelihood log p(x) of each sequence, shape ``(n_sequences,)`` (``-inf`` for
        a sequence that has probability zero)."""
        chain, seqs, table = self._prepare(X, lengths, "log_likelihood", chain=True)
        return chain.log_likelihood(table, seqs)

    def score(self, X, lengths=None) -> float:
        """Log-likelihood log p(X) of the sequences (summed; ``-inf`` if one of them has
        probability zero)."""
        return float(self.score_sequences(X, lengths).sum())

    def score_samples(self, X, lengths=None):
        """Log-likelihood and state posteriors p(z_t | x) ``(n, K)``. A sequence of
        probability zero has no posteriors: :class:`ZeroProbabilityError`."""
        chain, seqs, table = self._prepare(X, lengths, "posteriors", chain=True)
        if table.by_idx:  # per-observation posteriors, not sums per symbol
            table = inference.EmissionTable(table.emis, table.idx, table.log_offset, False)
        post = chain.forward_backward(table, seqs)
        _check_possible(post.loglik, fitting=False)
        return float(post.loglik.sum()), post.post

    def filter_proba(self, X, lengths=None) -> np.ndarray:
        """Filtered state posteriors p(z_t | x_{0:t}) ``(n, K)``: what the model believes at
        each step having seen only the past and present (:class:`ZeroProbabilityError` for
        a sequence of probability zero)."""
        startprob, transmat, seqs, table = self._prepare(X, lengths, "filter")
        filtered, log_pred = inference.filter_states(startprob, transmat, table, seqs)
        _check_possible(seqs.per_sequence_sum(log_pred), fitting=False)
        return filtered

    def score_tokens(self, X, lengths=None) -> np.ndarray:
        """Predictive log-probability log p(x_t | x_{0:t-1}) of every observation ``(n,)``
        (a sequence's entries sum to its log-likelihood; in a sequence of probability zero
        they are ``-inf`` from the first impossible observation on)."""
        startprob, transmat, seqs, table = self._prepare(X, lengths, "filter")
        return inference.filter_states(startprob, transmat, table, seqs)[1]

    def predict_proba(self, X, lengths=None) -> np.ndarray:
        """State posteriors p(z_t | x_{0:T}) ``(n, K)``."""
        return self.score_samples(X, lengths)[1]

    def impute(self, X, lengths=None) -> np.ndarray:
        r"""``X`` with its missing entries filled in from the posterior predictive given all
        the observed data: Gaussian and Poisson, the mean
        :math:`\sum_k p(z_t = k \mid X)\, E[x_{t,m} \mid x_{t,o}, z_t = k]` (Gaussian:
        given the row's observed dimensions :math:`o`); categorical, the most probable
        symbol :math:`\arg\max_w \sum_k p(z_t = k \mid X) B_{kw}`. Missing entries are
        NaN (Gaussian, Poisson), ``-1`` (categorical) or masked (``numpy.ma``); observed
        entries are returned unchanged."""
        emis = self._params()[2]
        Xv = self._validate(X, lengths, self.n_features_)[0]
        post = self.score_samples(Xv, lengths)[1]
        out = self._fitted_family().impute(emis, Xv, post)
        return out.reshape(np.shape(X)) if self.emission == "categorical" else out

    def decode(self, X, lengths=None, algorithm: str = "viterbi"):
        """Most likely states: ``"viterbi"`` (best joint path; returns log p(X, z*)) or
        ``"map"`` (per-step posterior argmax; returns log p(X)). A sequence of probability
        zero has no most likely path: :class:`ZeroProbabilityError`."""
        if algorithm == "viterbi":
            chain, seqs, table = self._prepare(X, lengths, "viterbi", chain=True)
            logprob, states = chain.viterbi(table, seqs)
            _check_possible(logprob, fitting=False)
            return float(logprob.sum()), states
        if algorithm == "map":
            logprob, post = self.score_samples(X, lengths)
            return logprob, post.argmax(axis=1)
        raise InvalidInputError(
            f"algorithm: {algorithm!r} is not 'viterbi' or 'map'")

    def predict(self, X, lengths=None, algorithm: str = "viterbi") -> np.ndarray:
        """Most likely state of every observation (see :meth:`decode`)."""
        return self.decode(X, lengths, algorithm)[1]

    def sample_posterior(self, X, lengths=None, random_state=None) -> np.ndarray:
        """One draw of the hidden path from p(z | x) (forward filtering, backward sampling;
        :class:`ZeroProbabilityError` for a sequence of probability zero)."""
        rng = make_rng(self.random_state if random_state is None else random_state)
        startprob, transmat, seqs, table = self._prepare(X, lengths, "sample_posterior")
        states = inference.sample_posterior(startprob, transmat, table, seqs, rng)
        impossible = np.add.reduceat((states < 0).astype(np.int64), seqs.bounds[:-1]) > 0
        _check_possible(np.where(impossible, -np.inf, 0.0), fitting=False)
        return states

    def sample(self, n_samples: int = 1, random_state=None):
        """Draw one sequence: returns ``(X, states)``."""
        startprob, transmat, emis = self._params()
        n = check_positive_int(n_samples, "n_samples")
        rng = make_rng(self.random_state if random_state is None else random_state)
        family = self._fitted_family()
        check_memory({"n_samples": self._sample_bytes(n, family)}, f"sample(n_samples={n})")
        if self.emission == "poisson":
            _check_poisson_rates(emis["lambdas"])
        states = inference.sample_chain(startprob, transmat, n, rng)
        X = family.sample(emis, states, rng)
        return X, states

    def _sample_bytes(self, n: int, family) -> float:
        """Bytes :meth:`sample` allocates for ``n`` observations: the path, its uniforms
        and the emission draws (categorical: an ``(n, W)`` comparison; Gaussian: the
        ``(n, D, D)`` Cholesky factors of the drawn states)."""
        D = self.n_features_
        D = len(D) * max(D) if isinstance(D, tuple) else D
        per = {"categorical": 9.0 * D + 24, "gaussian": 8.0 * (D * D + 3 * D) + 16,
               "poisson": 24.0 * D + 16, "gmm": 8.0 * (D * D + 3 * D + self.n_mix) + 24,
               "multinomial": 24.0 * D + 16}[self.emission]
        return n * per

    def n_parameters(self) -> int:
        """Number of free parameters (for AIC/BIC)."""
        self._check_is_fitted()
        K = self.n_states
        return (K - 1) + K * (K - 1) + self._fitted_family().n_free_parameters()

    def bic(self, X, lengths=None) -> float:
        self._check_is_fitted()
        n = len(self._validate(X, lengths, self.n_features_)[0])
        return -2 * self.score(X, lengths) + self.n_parameters() * np.log(n)

    def aic(self, X, lengths=None) -> float:
        return -2 * self.score(X, lengths) + 2 * self.n_parameters()

    # -- persistence ----------------------------------------------------------------------------
    def learned_arrays(self) -> dict[str, np.ndarray]:
        """Learned parameters by attribute name (what :meth:`save` writes)."""
        self._check_is_fitted()
        out = {"startprob_": self.startprob_, "transmat_": self.transmat_}
        for key in self._emission_keys().values():
            attr = "_covars_" if key == "covars" else key + "_"
            out[attr] = getattr(self, attr)
        for attr in self._posterior_attrs():
            out[attr] = getattr(self, attr)
        for key, value in getattr(self, "learner_state_", {}).items():
            if isinstance(value, np.ndarray):
                out[_STATE_PREFIX + key] = value
        return out

    def learned_scalars(self) -> dict:
        """Scalar entries of a streaming learner's state (what :meth:`save` writes as JSON)."""
        return {_STATE_PREFIX + k: v for k, v in getattr(self, "learner_state_", {}).items()
                if not isinstance(v, np.ndarray)}

    def set_learned(self, arrays: dict, scalars: dict) -> None:
        """Restore what :meth:`learned_arrays` and :meth:`learned_scalars` returned."""
        missing = sorted(n for n in self.learned_attribute_names(arrays)
                         if n not in arrays and not n.endswith(_POSTERIOR_SUFFIX))
        if missing:
            raise InvalidInputError(f"{missing[0]}: missing from the saved arrays")
        state = {}
        for key, value in {**arrays, **scalars}.items():
            if key.startswith(_STATE_PREFIX):
                state[key[len(_STATE_PREFIX):]] = value
            elif key in self.learned_attribute_names(arrays):
                setattr(self, key, value)
            else:
                raise InvalidInputError(f"{key}: not a learned attribute of {type(self).__name__}")
        if state:
            self.learner_state_ = state

    def learned_attribute_names(self, arrays: dict) -> set[str]:
        """Names a saved model may set: parameters and VB posteriors."""
        names = {"startprob_", "transmat_"}
        names |= {"_covars_" if k == "covars" else k + "_" for k in self._emission_keys().values()}
        names |= {a for a in arrays if a.endswith(_POSTERIOR_SUFFIX) and a.isidentifier()}
        return names

    def _check_loaded(self) -> None:
        """Validate what a saved model (or a hand-set learner state) brings besides the
        parameters: :meth:`_check_learned`, finite VB posteriors and the streaming
        learner's state (recorded, so that ``partial_fit`` does not check it again)."""
        self._check_learned()
        for attr in self._posterior_attrs():
            value = getattr(self, attr)
            if not (isinstance(value, np.ndarray) and value.dtype == np.float64
                    and np.all(np.isfinite(value))):
                raise InvalidInputError(f"{attr}: VB posterior parameters must be finite floats")
        if hasattr(self, "learner_state_"):
            self._check_learner_state(self.learner_state_)
            self._checked_state = StateRecord(self.learner_state_)

    def _check_learner_state(self, state) -> None:
        """Validate a streaming learner's state against the learner, its options and the
        parameters (see the learners' ``check_state``)."""
        if self.learn not in ONLINE_MODES:
            raise InvalidInputError(
                f"learner_state_: a streaming learner's state, but learn={self.learn!r} is "
                "not a streaming learner; delete learner_state_ or restore learn")
        theta = {"startprob": self.startprob_, "transmat": self.transmat_,
                 "emission": self._get_emission_params()}
        self._learner().check_state(state, theta, self._fitted_family(), "learner_state_.")

    def save(self, path) -> None:
        """Save to a directory ``path`` (``model.json`` + ``arrays.<token>.npz``; no pickle),
        atomically: ``path`` then holds the previous model or this one (see
        :mod:`hiddenstate.io`)."""
        from ..io import save

        save(self, path)

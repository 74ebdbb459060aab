"""The seam between models and emission distributions (hmmlearn's template methods, made
explicit: ``_compute_log_likelihood`` / ``_accumulate_sufficient_statistics`` /
``_do_mstep``)."""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod

import numpy as np

from ..errors import InvalidInputError
from ..inference import EmissionTable

#: posterior mass below which a state counts as unvisited by the M-step (it keeps its
#: parameters). Any larger mass is a sum of normal floating-point posteriors that carries
#: full relative precision, so its weighted means are exact to rounding however small it is
#: (freezing a state at, say, 1e-10 would stop EM from moving a state that starts far from
#: the data, as hmmlearn does); below it the sums are made of subnormal numbers.
DEAD_MASS = 1e-290


class EmissionFamily(ABC):
    """One emission distribution per hidden state.

    A family holds its configuration (number of states and features, covariance type...),
    never learned values: parameters travel as a ``dict`` of arrays whose keys are the
    estimator's attribute names without the trailing underscore.
    """

    #: hmmlearn's ``params`` / ``init_params`` letters this family owns, letter -> key
    letters: dict[str, str] = {}

    def __init__(self, n_states: int, n_features: int):
        self.n_states = n_states
        self.n_features = n_features

    @abstractmethod
    def validate_X(self, X, fitted_n_features: int | None) -> np.ndarray:
        """Check and convert observations (raises InvalidInputError)."""

    @abstractmethod
    def infer_n_features(self, X: np.ndarray) -> int:
        """Number of features (symbols for categorical) implied by validated data."""

    @abstractmethod
    def log_likelihood(self, params: dict, X: np.ndarray) -> np.ndarray:
        """``(N, K)`` table of log p(x_t | z_t = k)."""

    def table(self, params: dict, X: np.ndarray,
              occupied: np.ndarray | None = None) -> EmissionTable:
        """Emission probabilities in the kernels' form (dense, scaled per row by default).

        ``occupied`` (bool ``(K,)``, see :func:`hiddenstate.inference.emission_table`):
        the states the chain can be in; the others get probability 0 and do not take part
        in the row scaling (see :meth:`EmissionTable.from_log_likelihood`)."""
        return EmissionTable.from_log_likelihood(self.log_likelihood(params, X), occupied)

    @abstractmethod
    def statistics(self, X: np.ndarray, post: np.ndarray) -> dict:
        """Sufficient statistics from the E-step's posteriors (per row or per table row)."""

    @abstractmethod
    def merge_statistics(self, a: dict, b: dict) -> dict:
        """The statistics of two disjoint sets of observations combined: what
        :meth:`statistics` returns for their union, to rounding (the reduce step of an
        E-step run over partitions; see :func:`hiddenstate.learn.merge_statistics`). Every
        family writes its own: a plain sum is right only for statistics that are sums over
        observations with the same keys in every part (not for statistics taken about a
        per-part reference point, nor for keys present only where entries are missing)."""

    def statistics_at(self, params: dict, X: np.ndarray, post: np.ndarray) -> dict:
        """:meth:`statistics` for a family whose statistics also depend on the parameters
        of the E-step (a mixture's component responsibilities); the others ignore
        ``params``."""
        return self.statistics(X, post)

    @abstractmethod
    def mstep(self, params: dict, stats: dict, which: str) -> tuple[dict, list[int]]:
        """Updated parameters for the keys whose letter is in ``which``.

        Returns the new parameters and the states whose estimate was degenerate (no
        posterior mass, or a covariance floored) and kept or repaired.
        """

    @abstractmethod
    def log_prior(self, params: dict) -> float:
        """log p(params) under the family's prior (0 for a flat prior): the MAP and VT
        objectives add it to the data term."""

    # -- variational Bayes: q(params) in the conjugate family -----------------------------------
    # A family without a conjugate variational treatment keeps these defaults, which refuse.
    def _no_vb(self):
        raise InvalidInputError(
            f"learn: 'vb' is not available for {type(self).__name__}; use 'em', 'map', 'vt' "
            "or 'kvt'")

    def vb_init(self, params: dict, n_virtual: float) -> dict:
        """Posterior hyper-parameters centred on ``params``, as if each state had been
        estimated from ``n_virtual`` observations."""
        self._no_vb()

    def vb_update(self, q: dict, stats: dict, which: str) -> dict:
        """Prior hyper-parameters plus the statistics (blocks whose letter is not in
        ``which`` keep ``q``)."""
        self._no_vb()

    def vb_expected(self, q: dict) -> dict:
        """What the E-step uses under q: ``table(vb_expected(q), X)`` must give
        exp E_q[log p(x_t | z_t = k)]."""
        self._no_vb()

    def vb_kl(self, q: dict) -> float:
        """KL(q || prior), summed over states."""
        self._no_vb()

    def vb_mean(self, q: dict) -> dict:
        """Point estimate reported as the learned parameters (the posterior mean)."""
        self._no_vb()

    @abstractmethod
    def initialize(self, X: np.ndarray, rng: np.random.Generator) -> dict:
        """Data-driven random initial parameters for every key."""

    @abstractmethod
    def check_params(self, params: dict) -> dict:
        """Validate user-set parameters (shapes, ranges); return them as float64 arrays."""

    @abstractmethod
    def sample(self, params: dict, states: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One observation per entry of ``states``."""

    def n_free_parameters(self) -> int:
        """Number of free parameters (for AIC/BIC)."""
        raise NotImplementedError

    # -- what the HMM estimator asks of a family (defaults for an ordinary family) ------------
    #: the emission table has one row per symbol (:meth:`EmissionTable.from_symbols
    #: <hiddenstate.inference.EmissionTable.from_symbols>`), not one per observation
    table_by_symbol: bool = False

    @property
    def parameter_columns(self) -> int:
        """Columns of the emission parameter per state as stored (the memory checks count
        ``n_states x parameter_columns`` numbers)."""
        return self.n_features

    def table_build_copies(self) -> int:
        """``(N, K)`` arrays alive at once while :meth:`table` builds a dense table
        (measured; the memory checks count them)."""
        return 4

    def learned_part(self) -> tuple[EmissionFamily, int]:
        """``(family, n_fixed)``: the family of the states whose emissions are learned and
        the number of fixed states before them (the source states of
        :class:`~.blackbox.BlackBoxEmissions`); ``(self, 0)`` for an ordinary family."""
        return self, 0

    def split(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(log f (N, n_fixed), observations of the learned states)`` of the rows ``X``:
        the fixed states' log-likelihood columns that travel with the data and what the
        learned family reads; ``((N, 0), X)`` for an ordinary family."""
        return np.empty((len(X), 0)), X

    def autocorrelation_data(self, X: np.ndarray) -> tuple[np.ndarray, bool]:
        """The observations whose autocorrelation measures how persistent the hidden chain
        is (:func:`hiddenstate.models.hmm.init.persistence`), and whether they are symbols
        (compared by equality) rather than numbers (standardised per column)."""
        return X, False

    def labelled_start(self, params: dict, X: np.ndarray, states: np.ndarray,
                       init_params: str) -> dict:
        r"""Initial parameters moved to labelled steps (``X``: their observations,
        ``states``: their labels, all >= 0): for each state, the mean of its labelled
        observations with the initial value as one more pseudo-observation,
        :math:`(\sum_{t: s_t = k} v_t + p_k)/(n_k + 1)` (see :func:`labelled_mean`), for
        the parameters whose letter is in ``init_params`` and that are such a mean
        (categorical rows, Gaussian means, Poisson rates); the others, and families without
        such a parameter, are kept. Without it a few labels cannot pull EM out of the local
        optimum a random start falls into."""
        return params

    # -- what online EM asks of a family of numbers ------------------------------------------
    def statistic_vector(self) -> tuple[str, int | None] | None:
        """How online EM (:mod:`hiddenstate.learn.online.online_em`) accumulates this
        family's statistics, one vector per state: ``(kind, n_mix)`` with ``kind``
        ``"counts"`` (1, x), ``"diag"`` (1, x - a, (x - a)**2) or ``"full"``
        (1, x - a, vec((x - a)(x - a)^T)) about a reference point a, and ``n_mix`` the
        number of mixture components, each with its own vector (None: no mixture). None
        when online EM has no such form for the family (symbols take the lazy path, see
        :attr:`alphabets`)."""
        return None

    def streaming_mstep_family(self, params: dict, emissionprob_prior) -> EmissionFamily:
        """The family whose :meth:`mstep` online EM runs on its running statistics: this
        one (its own conjugate prior), or for categorical emission rows a copy whose
        Dirichlet prior is the learner's ``emissionprob_prior(params["emissionprob"])``
        (alpha > 1: a category not seen before the first M-step stays possible)."""
        return self

    # -- families of symbols: what the streaming learners ask ---------------------------------
    #: the alphabet of each categorical feature of a family of symbols, whose emission rows
    #: the streaming learners update per symbol; None for a family of other observations
    alphabets: tuple[int, ...] | None = None
    #: the emission rows of a family of symbols have a leading axis of features
    #: ``(F, K, W)`` (several features), which the learners' per-feature state keeps too
    feature_axis: bool = False

    def _not_symbols(self):
        raise InvalidInputError(
            f"emission: {type(self).__name__} does not emit symbols; the per-symbol "
            "streaming learners take categorical emissions")

    def feature_rows(self, emissionprob: np.ndarray) -> list[np.ndarray]:
        """Each feature's emission rows ``(K, W_f)`` (a family of symbols)."""
        self._not_symbols()

    def from_feature_rows(self, rows: list[np.ndarray]) -> np.ndarray:
        """The emission parameter (a new array) from each feature's rows: the inverse of
        :meth:`feature_rows`."""
        self._not_symbols()

    def validate_symbols(self, X) -> np.ndarray:
        """The symbols of ``X`` checked against :attr:`alphabets` (``-1``: missing), as
        int64 in the layout :meth:`log_likelihood` reads."""
        self._not_symbols()

    def stream_symbols(self, X: np.ndarray) -> np.ndarray:
        """``(N, F)`` int64: each row's symbol of every feature as a column of the
        features' alphabets laid side by side (feature ``f`` starts at
        ``sum(alphabets[:f])``), ``-1`` where missing: what online EM's lazy categorical
        kernel reads. Symbols outside the alphabets raise :class:`InvalidInputError`."""
        self._not_symbols()


def labelled_mean(p0: np.ndarray, V: np.ndarray, states: np.ndarray) -> np.ndarray:
    r""":math:`(\sum_{t: s_t = k} v_t + p_k)/(n_k + 1)` per state ``k`` and column, over the
    rows of ``V`` (one per labelled step, ``states`` their labels; a NaN entry counts for
    nothing): the initial value ``p0`` (K, C) moved toward the mean of the labelled values
    (:meth:`EmissionFamily.labelled_start`)."""
    seen = ~np.isnan(V)
    S, n = np.zeros(p0.shape), np.zeros(p0.shape)
    np.add.at(S, states, np.where(seen, V, 0.0))
    np.add.at(n, states, seen.astype(np.float64))
    return (S + p0) / (n + 1.0)


def fill_missing(X: np.ndarray) -> np.ndarray:
    """``X`` with each missing entry (NaN) replaced by its column's mean over the observed
    entries, for initialisations (k-means) that need complete rows; ``X`` itself when
    nothing is missing. A column with no observed entry is an error."""
    miss = np.isnan(X)
    if not miss.any():
        return X
    empty = miss.all(axis=0)
    if empty.any():
        raise InvalidInputError(
            f"X: column {int(np.flatnonzero(empty)[0])} has no observed value (all NaN); "
            "drop it or pass initial parameters with init_params")
    return np.where(miss, np.nanmean(X, axis=0), X)


def reference_point(X: np.ndarray) -> np.ndarray:
    """A point amid the rows of ``X`` (``(D,)``): the column medians of evenly spaced rows
    (fewer than 2048). A data value itself (or the mean of two), so that the reference of
    ``X + c`` is that of ``X`` plus ``c`` up to rounding; robust to outlying rows; cheap (the
    median of every row of 10^5 x 5 data costs 8 ms)."""
    return np.median(X[::max(1, len(X) // 1024)], axis=0)


def kmeans(X: np.ndarray, n_clusters: int, rng: np.random.Generator):
    """k-means (scikit-learn, one k-means++ start seeded from ``rng``) on ``X`` taken
    relative to :func:`reference_point`, so that the clustering of ``X + c`` is that of
    ``X`` up to the rounding of ``X + c`` itself. Returns ``(centres, labels)`` in the frame
    of ``X``. Fewer distinct points than clusters is allowed (some clusters repeat a
    point)."""
    from sklearn.cluster import KMeans

    ref = reference_point(X)
    with np.errstate(over="ignore", invalid="ignore"):
        centred = X - ref
    if not np.all(np.isfinite(centred)):
        raise InvalidInputError(
            "X: the values are too far apart for float64 (their differences overflow); "
            "rescale the data, e.g. divide it by its largest absolute value")
    km = KMeans(n_clusters=n_clusters, n_init=1, random_state=int(rng.integers(2**31 - 1)))
    with warnings.catch_warnings():  # fewer distinct points than clusters is fine here
        warnings.simplefilter("ignore")
        km.fit(centred)
    return km.cluster_centers_ + ref, km.labels_

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

    def merge_statistics(self, a: dict, b: dict) -> dict:
        """Statistics of two disjoint data sets combined (sums, for statistics that are
        plain sums over observations; see :func:`hiddenstate.learn.merge_statistics`)."""
        return {key: a[key] + b[key] for key in a}
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

r"""Naive Bayes with a hidden cluster per class (NBH), a scikit-learn classifier.

NBH (Sato 2011; "Viterbi training in PRISM", section 5, eq. 7-8) models the attributes of
each class as a mixture of ``n_clusters`` naive Bayes components:

.. math:: p(c, a) = \pi_c \sum_h \rho_{c h} \prod_j \theta^{(j)}_{c h a_j},
          \qquad \hat c(a) = \arg\max_c p(c, a).

``n_clusters=1`` is plain naive Bayes. Every parameter is a categorical switch with a
Dirichlet prior, so every learning mode of :mod:`hiddenstate.learn.batch` applies
(``learn=`` ``"em"``, ``"map"``, ``"vb"``, ``"vt"``, ``"kvt"``); the problem handed to the
learner is in :mod:`hiddenstate.models.nbh_problem`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Hashable

import numpy as np

from .._deprecation import keyword_only_after_first, renamed_method
from .._sklearn_base import BaseEstimator, ClassifierMixin
from .._validation import (
    check_memory,
    check_number,
    check_positive_int,
    check_stochastic,
    make_rng,
)
from ..errors import InvalidInputError, NotFittedError
from ..learn import MODES, ConvergenceMonitor, check_possible, fit_restarts
from ..learn.gibbs_fit import (
    PosteriorSampling,
    check_learner_options,
    clear_gibbs,
    fit_gibbs,
    posterior_predictive,
)
from ..treenet.passes import categorical
from . import _learned
from .nbh_problem import NBHProblem, log_joint, logsumexp_rows, one_hot

#: the learned parameters (set by fit, a load, or by hand)
_PARAMS = ("class_prior_", "cluster_prior_", "feature_prob_")

#: values of ``X`` read as missing besides ``None`` and NaN (a hyper-parameter can add more)
DEFAULT_MISSING = ("?",)


class UnknownCategoryWarning(UserWarning):
    """An attribute value at predict time that the training data never showed (treated as
    missing: its attribute is summed out)."""


class ContinuousAttributeWarning(UserWarning):
    """A training attribute of strings that all read as numbers, some with a fractional
    part ("5.1", "3.5"): probably a continuous attribute read as text, whose every distinct
    value becomes its own category."""


#: pandas' missing-value scalars (recognised by type name; pandas is not a dependency)
_NA_TYPES = ("NAType", "NaTType")


def _is_missing(value, markers) -> bool:
    if value is None or type(value).__name__ in _NA_TYPES:
        return True
    if isinstance(value, (float, np.floating)):
        return bool(np.isnan(value))
    if isinstance(value, (str, np.str_)):
        return value in markers
    return False


def _sorted(values: set) -> list:
    try:
        return sorted(values)
    except TypeError:  # mixed types (numbers and strings): a stable order by type, then repr
        return sorted(values, key=lambda v: (type(v).__name__, repr(v)))


def _plain(value):
    """NumPy scalars as Python values (JSON-able categories, equal hashes)."""
    return value.item() if isinstance(value, np.generic) else value


def _as_table(X, name: str = "X") -> np.ndarray:
    """``X`` as a 2-D object array (lists, NumPy arrays, pandas frames)."""
    try:
        arr = np.asarray(X, dtype=object)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name}: cannot be read as a table of values ({exc})") from exc
    if arr.ndim != 2:
        raise InvalidInputError(
            f"{name}: expected a 2-D table (n_samples, n_attributes), got shape {arr.shape}; "
            "one attribute is X.reshape(-1, 1)")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InvalidInputError(f"{name}: empty table of shape {arr.shape}")
    return arr


def _real(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_))


def _as_number(value: str) -> float | None:
    """The finite number a string spells, or None."""
    try:
        x = float(value)
    except ValueError:
        return None
    return x if np.isfinite(x) else None


def _check_categorical(values: set, j: int, markers) -> bool:
    r"""Refuse an attribute that is not categorical: a number that is infinite or complex,
    or a column of numbers some of which have a fractional part (continuous data, whose
    every distinct value would become its own category). Returns whether the column is
    strings that all read as numbers, some fractional (warned about by the caller).

    The rule was chosen on the ten UCI sets of ``/work/shared/data/uci``: as read there
    (categorical columns as text, continuous ones as floats) and with every column that
    parses as numbers read as numbers, it fires on every continuous column of iris and
    glass and on no categorical column of any set. Counting distinct values was rejected:
    identifier columns (zoo's animal names, glass's sample ids) are categorical with one
    value per row, while iris's continuous columns have only 15-29% distinct values, and
    dermatology's integer ages (60 values in 366 rows) are a legitimate, if fine,
    categorical coding."""
    present = [v for v in values if not _is_missing(v, markers)]
    for v in present:
        if isinstance(v, (complex, np.complexfloating)):
            raise InvalidInputError(
                f"X: attribute {j} has the complex value {v!r}; attributes are strings or "
                "real numbers")
        if isinstance(v, (float, np.floating)) and not np.isfinite(v):
            raise InvalidInputError(
                f"X: attribute {j} has the value {v!r}; NaN or None marks a missing value, "
                "infinities are not categories")
    if present and all(_real(v) for v in present):
        fractional = [v for v in present if isinstance(v, (float, np.floating))
                      and v != round(v)]
        if fractional:
            raise InvalidInputError(
                f"X: attribute {j} holds continuous numbers ({len(present)} distinct values, "
                f"e.g. {_plain(fractional[0])!r}), and NaiveBayesHidden would treat each "
                "distinct value as its own category; discretise it first (e.g. "
                "sklearn.preprocessing.KBinsDiscretizer(encode='ordinal')), or pass "
                "category codes as integers or strings")
    if not present or not all(isinstance(v, (str, np.str_)) for v in present):
        return False
    numbers = [_as_number(v) for v in present]
    return all(x is not None for x in numbers) and any(x != round(x) for x in numbers)


def _distinct(column: np.ndarray, j: int) -> set:
    """The distinct values of one attribute column (an unhashable one is a named error)."""
    try:
        return set(column.tolist())
    except TypeError:
        for i, v in enumerate(column):
            if not isinstance(v, Hashable):
                raise InvalidInputError(
                    f"X: value at row {i}, column {j} ({type(v).__name__}) is not hashable; "
                    "attributes must be strings or numbers") from None
        raise


class NaiveBayesHidden(PosteriorSampling, ClassifierMixin, BaseEstimator):
    r"""Naive Bayes with ``n_clusters`` hidden clusters per class (NBH; the paper's section 5).

    Each class is a mixture of ``n_clusters`` naive Bayes components over categorical
    attributes; ``n_clusters=1`` is plain naive Bayes. The defaults (``learn="map"``,
    pseudo-count 1, 15 clusters per class, one start) are the fixed setting with the best
    mean rank and mean accuracy over the ten UCI sets of the paper's Table 4
    (``experiments/results/prism_nbh.md``, "One setting for every data set").

    Attributes are categorical: a column of numbers some of which are fractional
    (continuous data) is refused with an error naming the fix (discretise it, e.g. with
    ``sklearn.preprocessing.KBinsDiscretizer``); see ``docs/nbh.md`` for the rule and why.
    Missing values (``None``, NaN, pandas' NA or a string in ``missing_values``) are summed
    out exactly, in training and prediction. A value at predict time that training never
    showed is treated as missing, with an :class:`UnknownCategoryWarning`. A test sample that
    every class gives probability zero (possible with ``learn="em"``, whose estimates can be
    zero) scores ``-inf`` in :meth:`score_samples` and has no class posterior:
    ``predict``/``predict_proba`` raise :class:`~hiddenstate.errors.ZeroProbabilityError`
    naming it (the estimator contract's zero-probability rule).

    Parameters
    ----------
    n_clusters : int, default=15
        Hidden clusters per class (1: naive Bayes).
    learn : {"map", "em", "vb", "vt", "kvt", "gibbs"}, default="map"
        ``"em"`` (maximum likelihood), ``"map"`` (Dirichlet pseudo-counts), ``"vb"``
        (variational Bayes; the point parameters are the posterior means), ``"vt"``
        (Viterbi training: hard cluster of each sample; stops when the clusters stop
        changing), ``"kvt"`` (the ``k_best`` best clusters of each sample) or ``"gibbs"``
        (posterior draws, ``posterior_samples_``: ``class_prior_``, ``cluster_prior_``,
        ``feature_prob_[j]``; see ``docs/gibbs.md``).
    prior : float or None, default=None
        The Dirichlet concentration :math:`\alpha` of every row (class prior, cluster prior
        per class, attribute distribution per class and cluster). MAP and VT estimate
        :math:`\theta \propto n + \alpha - 1`, i.e. pseudo-counts :math:`\alpha - 1` (Laplace
        smoothing: ``prior=2``); VB uses :math:`\mathrm{Dir}(\alpha)` as is (sparse for
        :math:`\alpha < 1`; so does Gibbs sampling). None: 2 for MAP/VT/kVT, 1 for VB and
        Gibbs; EM takes no prior.
    n_init : int, default=1
        Random restarts; the run with the highest final objective is kept.
    n_iter : int, default=100
        The most iterations of each restart.
    tol : float, default=1e-4
        The gain in the objective per training sample below which EM, MAP and VB stop
        (``tol=-inf``: never); VT and k-best VT ignore ``tol`` and stop when the clusters
        repeat or the objective stops rising (see ``docs/learning-modes.md``).
    k_best : int, default=2
        Clusters per sample for ``learn="kvt"``.
    missing_values : tuple of str, default=("?",)
        Strings read as a missing value, besides ``None`` and NaN.
    random_state : int, numpy.random.Generator or None, default=None
        The seed of the random starts (and of :meth:`sample`).
    verbose : bool, default=False
        Print the objective per iteration.
    learner_options : dict or None, default=None
        The options of ``learn="gibbs"`` (``n_samples``, ``burn_in``, ``thin``,
        ``n_chains``, ``n_jobs``, ``check_convergence``; see ``docs/gibbs.md``).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels, sorted.
    categories_ : list of ndarray
        Per attribute, the values seen in training, sorted.
    class_prior_ : ndarray of shape (n_classes,)
        :math:`\pi`.
    cluster_prior_ : ndarray of shape (n_classes, n_clusters)
        :math:`\rho` (rows sum to one).
    feature_prob_ : list of ndarray of shape (n_classes, n_clusters, n_values)
        Per attribute, :math:`\theta^{(j)}`.
    monitor_ : hiddenstate.learn.ConvergenceMonitor
        The objective of the mode per iteration (:data:`hiddenstate.learn.OBJECTIVES`).

    Examples
    --------
    >>> import hiddenstate as hs
    >>> X = [["sun", "hot"], ["sun", "mild"], ["rain", "mild"], ["rain", "cool"],
    ...      ["sun", "hot"], ["rain", "cool"], ["sun", "mild"], ["rain", "mild"]]
    >>> y = ["play", "play", "stay", "stay", "play", "stay", "play", "stay"]
    >>> model = hs.NaiveBayesHidden(n_clusters=2, random_state=0).fit(X, y)
    >>> model.classes_, model.cluster_prior_.shape
    (array(['play', 'stay'], dtype='<U4'), (2, 2))
    >>> model.predict([["sun", "cool"], ["rain", "hot"], [None, "mild"]])
    array(['play', 'stay', 'play'], dtype='<U4')
    """

    @keyword_only_after_first
    def __init__(self, n_clusters: int = 15, learn: str = "map", prior: float | None = None,
                 n_init: int = 1, n_iter: int = 100, tol: float = 1e-4, k_best: int = 2,
                 missing_values=DEFAULT_MISSING, random_state=None, verbose: bool = False,
                 learner_options: dict | None = None):
        self.n_clusters = n_clusters
        self.learn = learn
        self.prior = prior
        self.n_init = n_init
        self.n_iter = n_iter
        self.tol = tol
        self.k_best = k_best
        self.missing_values = missing_values
        self.random_state = random_state
        self.verbose = verbose
        self.learner_options = learner_options

    # -- configuration --------------------------------------------------------------------------
    def _check_hyper(self) -> float:
        """Validate the hyper-parameters; return the Dirichlet concentration in use."""
        check_positive_int(self.n_clusters, "n_clusters")
        check_positive_int(self.n_init, "n_init")
        check_positive_int(self.n_iter, "n_iter")
        check_positive_int(self.k_best, "k_best")
        if self.learn not in MODES:
            raise InvalidInputError(f"learn: {self.learn!r} is not one of {MODES}")
        if not (isinstance(self.tol, float) and self.tol == -np.inf):  # -inf: every iteration
            check_number(self.tol, "tol", minimum=0)
        markers = self.missing_values
        if isinstance(markers, str) or not isinstance(markers, (list, tuple)) \
                or not all(isinstance(m, str) for m in markers):
            raise InvalidInputError(
                f"missing_values: expected a list of strings (e.g. ['?']), got {markers!r}")
        if not isinstance(self.verbose, (bool, np.bool_)):
            raise InvalidInputError(f"verbose: expected True or False, got {self.verbose!r}")
        check_learner_options(self)
        p = self.prior
        if p is None:
            return 1.0 if self.learn in ("em", "vb", "gibbs") else 2.0
        if self.learn == "em":
            raise InvalidInputError(
                "prior: not used by learn='em' (maximum likelihood); use 'map', 'vb' or "
                "'vt', or drop the prior")
        try:
            p = check_number(p, "prior", minimum=0, strict=True)
        except InvalidInputError:
            raise InvalidInputError(
                f"prior: expected a Dirichlet concentration > 0, got {p!r:.60}") from None
        if self.learn not in ("vb", "gibbs") and p < 1:
            raise InvalidInputError(
                f"prior: the MAP estimate needs a concentration >= 1 (pseudo-counts "
                f"prior - 1 >= 0), got {p!r}; use learn='vb' for sparse priors")
        return float(p)

    # -- data -----------------------------------------------------------------------------------
    def _encode(self, X, categories: list | None = None) -> tuple[np.ndarray, list]:
        """Attribute value indices ``(n, d)``, ``-1`` for missing (and for values not in
        ``categories``), and the categories: those given (predicting) or, with
        ``categories=None`` (fitting), the values of ``X``, checked to be categorical."""
        arr = _as_table(X)
        markers = tuple(self.missing_values)
        distinct = [_distinct(arr[:, j], j) for j in range(arr.shape[1])]
        if categories is None:
            texts = [j for j, values in enumerate(distinct)
                     if _check_categorical(values, j, markers)]
            if texts:
                warnings.warn(
                    f"X: attribute(s) {texts} are strings that all read as numbers, some "
                    "fractional (e.g. a continuous attribute read as text); each distinct "
                    "value is its own category. Convert them to numbers and discretise them "
                    "(sklearn.preprocessing.KBinsDiscretizer), or ignore this warning if they "
                    "are labels", ContinuousAttributeWarning, stacklevel=3)
            categories = [
                np.asarray(_sorted({_plain(v) for v in values if not _is_missing(v, markers)}),
                           dtype=object) for values in distinct]
            empty = [j for j, c in enumerate(categories) if not len(c)]
            if empty:
                raise InvalidInputError(
                    f"X: attribute {empty[0]} has no value in any training row (all missing); "
                    "drop that column")
        elif arr.shape[1] != len(categories):
            raise InvalidInputError(
                f"X: has {arr.shape[1]} attributes, but the model was fitted on "
                f"{len(categories)}")
        codes = np.empty(arr.shape, dtype=np.int64)
        unseen, first = 0, None
        for j, (cats, values) in enumerate(zip(categories, distinct, strict=True)):
            index = {v: i for i, v in enumerate(np.asarray(cats, dtype=object).tolist())}
            # one lookup per distinct value; the column is then mapped through a dict (a
            # NaN object is found again by identity)
            lookup = {v: -1 if _is_missing(v, markers) else index.get(_plain(v), -2)
                      for v in values}
            codes[:, j] = np.fromiter(map(lookup.__getitem__, arr[:, j]), dtype=np.int64,
                                      count=len(arr))
            new = codes[:, j] == -2
            if new.any():
                unseen += int(new.sum())
                if first is None:
                    first = (j, arr[np.flatnonzero(new)[0], j])
                codes[new, j] = -1
        if unseen:
            j, v = first
            warnings.warn(
                f"X: {unseen} value(s) never seen in training (first: {v!r} in attribute "
                f"{j}) are treated as missing", UnknownCategoryWarning, stacklevel=3)
        return codes, categories

    def _n_values(self) -> list[int]:
        return [len(c) for c in self.categories_]

    # -- parameters -----------------------------------------------------------------------------
    def _check_is_fitted(self) -> None:
        for name in ("classes_", "categories_", "class_prior_", "cluster_prior_",
                     "feature_prob_"):
            if not hasattr(self, name):
                raise NotFittedError(
                    f"This {type(self).__name__} has no parameters yet; call fit first")

    def _check_labels(self) -> None:
        """``classes_`` and ``categories_`` (learned or hand-set): distinct labels, one
        array of distinct, present values per attribute."""
        classes = self.classes_
        if not isinstance(classes, np.ndarray) or classes.ndim != 1 or not len(classes):
            raise InvalidInputError(
                "classes_: expected a non-empty 1-D array of class labels (np.unique(y))")
        try:
            if len(set(classes.tolist())) != len(classes):
                raise InvalidInputError("classes_: labels repeat; each class once")
        except TypeError:
            raise InvalidInputError("classes_: labels must be hashable") from None
        cats = self.categories_
        if not isinstance(cats, (list, tuple)) or not cats:
            raise InvalidInputError(
                "categories_: expected a list with one array of values per attribute")
        for j, c in enumerate(cats):
            values = np.asarray(c, dtype=object)
            if values.ndim != 1 or not len(values):
                raise InvalidInputError(
                    f"categories_[{j}]: expected a non-empty 1-D array of values")
            try:
                plain = {_plain(v) for v in values.tolist()}
            except TypeError:
                raise InvalidInputError(f"categories_[{j}]: values must be hashable") from None
            if len(plain) != len(values):
                raise InvalidInputError(f"categories_[{j}]: values repeat; each value once")
            if any(_is_missing(v, tuple(self.missing_values)) for v in plain):
                raise InvalidInputError(
                    f"categories_[{j}]: holds a missing-value marker (None, NaN or one of "
                    "missing_values); missing values are not categories")

    def _params(self) -> dict:
        """The learned (or hand-set) parameters, checked against the classes, clusters and
        categories, as the problem's blocks."""
        self._check_is_fitted()
        self._check_labels()
        C, K = len(self.classes_), self.n_clusters
        params = {"class": check_stochastic(self.class_prior_, (C,), "class_prior_"),
                  "cluster": check_stochastic(self.cluster_prior_, (C, K), "cluster_prior_")}
        probs = self.feature_prob_
        if not isinstance(probs, (list, tuple)) or len(probs) != len(self.categories_):
            raise InvalidInputError(
                f"feature_prob_: expected a list of {len(self.categories_)} arrays (one per "
                "attribute)")
        for j, v in enumerate(self._n_values()):
            params[f"attr:{j}"] = check_stochastic(probs[j], (C, K, v), f"feature_prob_[{j}]")
        return params

    def _set_params(self, params: dict) -> None:
        self.class_prior_ = params["class"]
        self.cluster_prior_ = params["cluster"]
        self.feature_prob_ = [params[f"attr:{j}"] for j in range(len(self.categories_))]
        _learned.mark_own(self, _PARAMS)

    def _check_memory(self, n: int, d: int, what: str, n_classes: int = 1,
                      n_values: list[int] | None = None) -> None:
        """Refuse, before allocating, a call whose arrays would not fit: the codes and the
        sparse one-hot attributes (two copies while fitting: ``X``) and, once the classes
        and values are known, the ``(n, C, K)`` log-joints, the cluster weights and the
        parameters with their statistics (``n_clusters``)."""
        CK = max(n_classes, 1) * self.n_clusters
        width = 0 if n_values is None else sum(n_values)
        joint = 8.0 * n * (3 * CK + 3 * self.n_clusters)  # charged to the larger factor
        check_memory({"X": 8.0 * n * 6 * d + (joint if n >= CK else 0.0),
                      "n_clusters": 32.0 * CK * width + (joint if n < CK else 0.0)}, what, {
            "X": "pass fewer rows per call",
            "n_clusters": "use fewer clusters (n_clusters)"})

    def _initial(self, problem: NBHProblem, prior: float,
                 rng: np.random.Generator) -> dict:
        """Random soft clusters (each sample's cluster weights ~ Dirichlet(1)) turned into
        parameters by the mode's own estimate: counts + prior - 1 (EM: the MLE, whose zeros
        are zeros of every later MLE too; MAP/VT with a prior > 1: no zeros) or, for VB,
        the posterior mean (counts + prior)."""
        resp = rng.dirichlet(np.ones(problem.K), size=len(problem.y))
        shift = {"em": 0.0, "vb": prior, "gibbs": prior}.get(self.learn, prior - 1.0)
        return {name: _normalise(np.maximum(s + shift, 0.0))
                for name, s in problem.stats(resp).items()}

    # -- fitting --------------------------------------------------------------------------------
    def fit(self, X, y, callback: Callable[[int, float], None] | None = None):
        """Learn the parameters with the mode chosen by ``learn`` (``n_init`` restarts).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_attributes)
            Categorical values (strings or numbers; continuous attributes must be binned
            first), missing ones as ``None``, NaN or a string in ``missing_values``; a list
            of rows, a NumPy array or a pandas DataFrame.
        y : array-like of shape (n_samples,)
            The class labels (none missing).
        callback : callable or None, default=None
            ``callback(iteration, objective)``, called after every iteration.

        Returns
        -------
        NaiveBayesHidden
            The model itself, fitted.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a hyper-parameter, ``X``, ``y`` or ``callback`` is invalid (a continuous
            attribute, labels that do not match the rows, missing labels).
        hiddenstate.errors.InsufficientMemoryError
            If the fit would not fit in memory (raised before anything is allocated).

        Examples
        --------
        >>> import hiddenstate as hs
        >>> X = [["sun", "hot"], ["sun", "mild"], ["rain", "mild"], ["rain", "cool"],
        ...      ["sun", "hot"], ["rain", "cool"], ["sun", "mild"], ["rain", "mild"]]
        >>> y = ["play", "play", "stay", "stay", "play", "stay", "play", "stay"]
        >>> model = hs.NaiveBayesHidden(n_clusters=2, random_state=0).fit(X, y)
        >>> model.monitor_.converged, [f.shape for f in model.feature_prob_]
        (True, [(2, 2, 2), (2, 2, 3)])
        """
        prior = self._check_hyper()
        if callback is not None and not callable(callback):
            raise InvalidInputError(
                f"callback: expected a function callback(iteration, objective), got "
                f"{type(callback).__name__}")
        arr = _as_table(X)
        self._check_memory(*arr.shape, "fit")
        try:
            y_arr = np.asarray(y)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"y: cannot be read as class labels ({exc})") from None
        if y_arr.ndim != 1 or len(y_arr) != len(arr):
            raise InvalidInputError(
                f"y: expected {len(arr)} class labels (one per row of X), got shape "
                f"{y_arr.shape}")
        if any(_is_missing(v, ()) for v in y_arr.tolist()):
            raise InvalidInputError("y: class labels must not be missing (None or NaN)")
        try:
            classes, y_idx = np.unique(y_arr, return_inverse=True)
        except TypeError as exc:
            raise InvalidInputError(f"y: labels cannot be sorted ({exc}); use one type") from exc
        codes, categories = self._encode(arr)
        n_values = [len(c) for c in categories]
        self._check_memory(*arr.shape, "fit", len(classes), n_values)
        problem = NBHProblem(codes, y_idx.ravel(), len(classes), self.n_clusters, n_values,
                             prior)
        _learned.warn_replaced(
            self, _PARAMS, None, "NaiveBayesHidden learns from random clusters and cannot "
            "start from given parameters: predict with your values without fitting, or "
            "delete them to silence this")
        rng = make_rng(self.random_state)
        clear_gibbs(self)
        self.classes_, self.categories_ = classes, categories
        self.n_features_in_ = self.n_features_ = len(categories)
        if self.learn == "gibbs":
            names = {"class": "class_prior_", "cluster": "cluster_prior_"}
            result = fit_gibbs(self, problem, lambda _: self._initial(problem, prior, rng),
                               "cha", rng, lambda d: {names.get(k, f"feature_prob_[{k[5:]}]"): v
                                                      for k, v in d.items()}, callback)
            self._set_params(result.mean)
            return self
        best = fit_restarts(problem, self.learn, lambda _: self._initial(problem, prior, rng),
                            n_init=self.n_init, n_iter=self.n_iter, tol=self.tol, which="cha",
                            k_best=self.k_best, verbose=bool(self.verbose), callback=callback)
        self.monitor_ = best.monitor
        self._set_params(best.params)
        return self

    def _gibbs_assign(self, draw: dict) -> None:
        """Set the parameters to one draw of ``posterior_samples_``."""
        self.class_prior_ = draw["class_prior_"]
        self.cluster_prior_ = draw["cluster_prior_"]
        self.feature_prob_ = [draw[f"feature_prob_[{j}]"]
                              for j in range(len(self.categories_))]

    # -- inference ------------------------------------------------------------------------------
    def _log_joint(self, X) -> np.ndarray:
        """log p(c, h, a) ``(n, C, K)`` of new data."""
        self._check_hyper()
        params = self._params()
        arr = _as_table(X)
        self._check_memory(*arr.shape, "prediction", len(self.classes_), self._n_values())
        codes, _ = self._encode(arr, self.categories_)
        return log_joint(params, one_hot(codes, self._n_values()), self._n_values())

    def predict_log_proba(self, X) -> np.ndarray:
        """Return the log class posterior log p(c | a) of each sample (eq. 8 before the argmax).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_attributes)
            Categorical values; missing ones and values unseen in training are summed out.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            The log-posteriors, columns in the order of ``classes_``.

        Raises
        ------
        hiddenstate.errors.ZeroProbabilityError
            If a sample has probability zero under every class (possible with
            ``learn='em'``, whose estimates can be zero): it has no class posterior.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> X = [["sun", "hot"], ["sun", "mild"], ["rain", "mild"], ["rain", "cool"],
        ...      ["sun", "hot"], ["rain", "cool"], ["sun", "mild"], ["rain", "mild"]]
        >>> y = ["play", "play", "stay", "stay", "play", "stay", "play", "stay"]
        >>> model = hs.NaiveBayesHidden(n_clusters=2, random_state=0).fit(X, y)
        >>> model.predict_log_proba([["sun", "cool"]]).round(3)
        array([[-0.512, -0.915]])
        """
        per_class = logsumexp_rows(self._log_joint(X))
        evidence = logsumexp_rows(per_class)
        check_possible(evidence, "sample", "values never seen together with any class "
                       "under learn='em'", "Use learn='map' (pseudo-counts) to avoid zeros",
                       use="class posterior", given="under every class")
        return per_class - evidence[:, None]

    def predict_proba(self, X) -> np.ndarray:
        """Return the class posterior p(c | a) of each sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_attributes)
            Categorical values; missing ones and values unseen in training are summed out.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            The posteriors, columns in the order of ``classes_``.

        Raises
        ------
        hiddenstate.errors.ZeroProbabilityError
            If a sample has probability zero under every class (:meth:`predict_log_proba`).

        Examples
        --------
        >>> import hiddenstate as hs
        >>> X = [["sun", "hot"], ["sun", "mild"], ["rain", "mild"], ["rain", "cool"],
        ...      ["sun", "hot"], ["rain", "cool"], ["sun", "mild"], ["rain", "mild"]]
        >>> y = ["play", "play", "stay", "stay", "play", "stay", "play", "stay"]
        >>> model = hs.NaiveBayesHidden(n_clusters=2, random_state=0).fit(X, y)
        >>> model.predict_proba([["sun", "cool"], ["rain", "hot"]]).round(3)
        array([[0.599, 0.401],
               [0.4  , 0.6  ]])
        """
        return np.exp(self.predict_log_proba(X))

    def predict(self, X) -> np.ndarray:
        """Return the most probable class of each sample (eq. 8).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_attributes)
            Categorical values; missing ones and values unseen in training are summed out.

        Returns
        -------
        ndarray of shape (n_samples,)
            The class labels.

        Raises
        ------
        hiddenstate.errors.ZeroProbabilityError
            If a sample has probability zero under every class (:meth:`predict_log_proba`).

        Examples
        --------
        >>> import hiddenstate as hs
        >>> X = [["sun", "hot"], ["sun", "mild"], ["rain", "mild"], ["rain", "cool"],
        ...      ["sun", "hot"], ["rain", "cool"], ["sun", "mild"], ["rain", "mild"]]
        >>> y = ["play", "play", "stay", "stay", "play", "stay", "play", "stay"]
        >>> model = hs.NaiveBayesHidden(n_clusters=2, random_state=0).fit(X, y)
        >>> model.predict([["rain", "hot"], ["sun", None]])
        array(['stay', 'play'], dtype='<U4')
        """
        best = np.argmax(self.predict_log_proba(X), axis=1)
        return self.classes_[best]

    def predict_cluster_proba(self, X, y=None) -> np.ndarray:
        """Return the cluster posterior p(h | c, a) of each sample at its class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_attributes)
            Categorical values; missing ones and values unseen in training are summed out.
        y : array-like of shape (n_samples,) or None, default=None
            The classes to condition on; None: the predicted ones.

        Returns
        -------
        ndarray of shape (n_samples, n_clusters)
            The posteriors (rows sum to one).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a label of ``y`` is not one of ``classes_``.
        hiddenstate.errors.ZeroProbabilityError
            If a sample has probability zero at its class (possible with ``learn='em'``): it
            has no cluster posterior.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> X = [["sun", "hot"], ["sun", "mild"], ["rain", "mild"], ["rain", "cool"],
        ...      ["sun", "hot"], ["rain", "cool"], ["sun", "mild"], ["rain", "mild"]]
        >>> y = ["play", "play", "stay", "stay", "play", "stay", "play", "stay"]
        >>> model = hs.NaiveBayesHidden(n_clusters=2, random_state=0).fit(X, y)
        >>> model.predict_cluster_proba([["sun", "cool"]], y=["stay"]).sum(axis=1)
        array([1.])
        """
        lj = self._log_joint(X)
        c = self._class_index(y, len(lj)) if y is not None else \
            np.argmax(logsumexp_rows(lj), axis=1)
        at = lj[np.arange(len(lj)), c]
        norm = logsumexp_rows(at)
        dead = c[~np.isfinite(norm)]
        given = (f"at class {_plain(self.classes_[dead[0]])!r}" if len(set(dead.tolist())) == 1
                 else "at their classes")
        check_possible(norm, "sample", "a value never seen with the class under learn='em'",
                       "Use learn='map' (pseudo-counts) to avoid zeros",
                       use="cluster posterior", given=given)
        return np.exp(at - norm[:, None])

    def _class_index(self, y, n: int) -> np.ndarray:
        try:
            y_arr = np.asarray(y)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"y: cannot be read as class labels ({exc})") from None
        if y_arr.shape != (n,):
            raise InvalidInputError(f"y: expected {n} class labels, got shape {y_arr.shape}")
        index = {c: i for i, c in enumerate(_plain(c) for c in self.classes_.tolist())}
        out = np.empty(n, dtype=np.int64)
        for i, label in enumerate(y_arr.tolist()):
            try:
                out[i] = index[_plain(label)]
            except (KeyError, TypeError):
                raise InvalidInputError(
                    f"y: label {_plain(label)!r} is not one of the classes "
                    f"{self.classes_.tolist()}") from None
        return out

    @posterior_predictive
    def score_samples(self, X, y=None) -> np.ndarray:
        """Return the log-evidence of each sample: log p(a), or log p(c, a) at labels ``y``.

        The sum over clusters (and over classes without ``y``); missing attributes are
        summed out.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_attributes)
            Categorical values.
        y : array-like of shape (n_samples,) or None, default=None
            The class labels; None: summed over the classes.

        Returns
        -------
        ndarray of shape (n_samples,)
            One log-likelihood per sample (``-inf`` for a sample of probability zero).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a label of ``y`` is not one of ``classes_``.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> X = [["sun", "hot"], ["sun", "mild"], ["rain", "mild"], ["rain", "cool"],
        ...      ["sun", "hot"], ["rain", "cool"], ["sun", "mild"], ["rain", "mild"]]
        >>> y = ["play", "play", "stay", "stay", "play", "stay", "play", "stay"]
        >>> model = hs.NaiveBayesHidden(n_clusters=2, random_state=0).fit(X, y)
        >>> import numpy as np
        >>> joint = np.array([model.score_samples([["sun", "cool"]], y=[c])[0]
        ...                   for c in model.classes_])
        >>> bool(np.isclose(np.logaddexp.reduce(joint), model.score_samples([["sun", "cool"]])[0]))
        True
        """
        lj = logsumexp_rows(self._log_joint(X))
        if y is None:
            return logsumexp_rows(lj)
        return lj[np.arange(len(lj)), self._class_index(y, len(lj))]

    def score(self, X, y=None) -> float:
        """Return the total log-likelihood: the sum of :meth:`score_samples`.

        As every hiddenstate estimator's ``score``. Accuracy, the meaning scikit-learn's
        classifiers give ``score``, is ``sklearn.metrics.accuracy_score(y, model.predict(X))``,
        or ``cross_val_score(model, X, y, scoring="accuracy")``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_attributes)
            Categorical values.
        y : array-like of shape (n_samples,) or None, default=None
            The class labels: log p(c, a); None: log p(a).

        Returns
        -------
        float
            The log-likelihood.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> X = [["sun", "hot"], ["sun", "mild"], ["rain", "mild"], ["rain", "cool"],
        ...      ["sun", "hot"], ["rain", "cool"], ["sun", "mild"], ["rain", "mild"]]
        >>> y = ["play", "play", "stay", "stay", "play", "stay", "play", "stay"]
        >>> model = hs.NaiveBayesHidden(n_clusters=2, random_state=0).fit(X, y)
        >>> bool(model.score(X, y) < model.score(X) < 0)
        True
        """
        return float(np.sum(self.score_samples(X, y)))

    log_likelihood = renamed_method("log_likelihood", "score")

    def sample(self, n_samples: int = 1, random_state=None):
        r"""Draw ``n_samples`` labelled samples from the model.

        The class :math:`c \sim \pi`, its cluster :math:`h \sim \rho_c`, each attribute
        :math:`a_j \sim \theta^{(j)}_{c h}`.

        Parameters
        ----------
        n_samples : int, default=1
            The number of samples.
        random_state : int, numpy.random.Generator or None, default=None
            The seed; None: the estimator's ``random_state``.

        Returns
        -------
        X : ndarray of object of shape (n_samples, n_attributes)
            The category values.
        y : ndarray of shape (n_samples,)
            The class labels.
        clusters : ndarray of int of shape (n_samples,)
            The hidden cluster of each sample.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``n_samples`` is not a positive integer.
        hiddenstate.errors.InsufficientMemoryError
            If the samples would not fit in memory (raised before drawing).

        Examples
        --------
        >>> import hiddenstate as hs
        >>> X = [["sun", "hot"], ["sun", "mild"], ["rain", "mild"], ["rain", "cool"],
        ...      ["sun", "hot"], ["rain", "cool"], ["sun", "mild"], ["rain", "mild"]]
        >>> y = ["play", "play", "stay", "stay", "play", "stay", "play", "stay"]
        >>> model = hs.NaiveBayesHidden(n_clusters=2, random_state=0).fit(X, y)
        >>> Xs, ys, clusters = model.sample(3, random_state=0)
        >>> Xs.shape, ys.shape, clusters.shape
        ((3, 2), (3,), (3,))
        >>> set(Xs[:, 0]) <= {"rain", "sun"}
        True
        """
        n = check_positive_int(n_samples, "n_samples")
        self._check_hyper()
        params = self._params()
        d = len(self.categories_)
        check_memory({"n_samples": 8.0 * n * (d + 3 + max(self._n_values()))},
                     f"sample(n_samples={n})", {"n_samples": "draw fewer samples per call"})
        rng = make_rng(self.random_state if random_state is None else random_state)
        c = categorical(np.broadcast_to(params["class"], (n, len(self.classes_))), rng)
        h = categorical(params["cluster"][c], rng)
        X = np.empty((n, d), dtype=object)
        for j, values in enumerate(self.categories_):
            X[:, j] = np.asarray(values, dtype=object)[categorical(params[f"attr:{j}"][c, h],
                                                                   rng)]
        return X, self.classes_[c], h

    # -- persistence ----------------------------------------------------------------------------
    def learned_arrays(self) -> dict[str, np.ndarray]:
        """Return the arrays :meth:`save` writes.

        The labels and categories go to the JSON part (:meth:`learned_scalars`).

        Returns
        -------
        dict of str to ndarray
            ``class_prior_``, ``cluster_prior_`` and ``feature_prob_:<j>`` per attribute.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> X = [["sun", "hot"], ["sun", "mild"], ["rain", "mild"], ["rain", "cool"],
        ...      ["sun", "hot"], ["rain", "cool"], ["sun", "mild"], ["rain", "mild"]]
        >>> y = ["play", "play", "stay", "stay", "play", "stay", "play", "stay"]
        >>> model = hs.NaiveBayesHidden(n_clusters=2, random_state=0).fit(X, y)
        >>> sorted(model.learned_arrays())
        ['class_prior_', 'cluster_prior_', 'feature_prob_:0', 'feature_prob_:1']
        """
        params = self._params()
        out = {"class_prior_": params["class"], "cluster_prior_": params["cluster"]}
        out.update({f"feature_prob_:{j}": params[f"attr:{j}"]
                    for j in range(len(self.categories_))})
        return out

    def learned_scalars(self) -> dict:
        """Return the labels and categories :meth:`save` writes as JSON.

        Returns
        -------
        dict
            ``classes_`` (a list of labels) and ``categories_`` (a list of value lists).

        Examples
        --------
        >>> import hiddenstate as hs
        >>> X = [["sun", "hot"], ["sun", "mild"], ["rain", "mild"], ["rain", "cool"],
        ...      ["sun", "hot"], ["rain", "cool"], ["sun", "mild"], ["rain", "mild"]]
        >>> y = ["play", "play", "stay", "stay", "play", "stay", "play", "stay"]
        >>> model = hs.NaiveBayesHidden(n_clusters=2, random_state=0).fit(X, y)
        >>> model.learned_scalars()
        {'classes_': ['play', 'stay'], 'categories_': [['rain', 'sun'], ['cool', 'hot', 'mild']]}
        """
        return {"classes_": [_plain(c) for c in self.classes_.tolist()],
                "categories_": [[_plain(v) for v in c.tolist()] for c in self.categories_]}

    def set_learned(self, arrays: dict, scalars: dict) -> None:
        """Restore what :meth:`learned_arrays` and :meth:`learned_scalars` returned.

        Parameters
        ----------
        arrays : dict of str to ndarray
            The arrays, by name.
        scalars : dict
            ``classes_`` and ``categories_``.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a name is not a learned array or scalar of NaiveBayesHidden, or the labels
            repeat.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> X = [["sun", "hot"], ["sun", "mild"], ["rain", "mild"], ["rain", "cool"],
        ...      ["sun", "hot"], ["rain", "cool"], ["sun", "mild"], ["rain", "mild"]]
        >>> y = ["play", "play", "stay", "stay", "play", "stay", "play", "stay"]
        >>> model = hs.NaiveBayesHidden(n_clusters=2, random_state=0).fit(X, y)
        >>> copy = hs.NaiveBayesHidden(n_clusters=2)
        >>> copy.set_learned(model.learned_arrays(), model.learned_scalars())
        >>> bool((copy.predict(X) == model.predict(X)).all())
        True
        """
        if set(scalars) != {"classes_", "categories_"}:
            raise InvalidInputError("scalars: expected classes_ and categories_")
        classes, cats = scalars["classes_"], scalars["categories_"]
        if not isinstance(classes, list) or not classes or not isinstance(cats, list) \
                or not all(isinstance(c, list) for c in cats):
            raise InvalidInputError("classes_, categories_: expected lists of labels/values")
        self.classes_ = np.asarray(classes)
        if len(set(classes)) != len(classes):
            raise InvalidInputError("classes_: labels repeat")
        self.categories_ = [np.asarray(c, dtype=object) for c in cats]
        self.n_features_in_ = len(cats)
        d = len(cats)
        want = {"class_prior_", "cluster_prior_", *(f"feature_prob_:{j}" for j in range(d))}
        if set(arrays) != want:
            odd = sorted(set(arrays) ^ want)
            raise InvalidInputError(f"{odd[0]}: not (or missing) a learned array of "
                                    f"{type(self).__name__}")
        self.class_prior_ = arrays["class_prior_"]
        self.cluster_prior_ = arrays["cluster_prior_"]
        self.feature_prob_ = [arrays[f"feature_prob_:{j}"] for j in range(d)]
        _learned.mark_own(self, _PARAMS)  # a fit's values

    @classmethod
    def from_saved_params(cls, params: dict, part=None) -> NaiveBayesHidden:
        """Return the estimator from saved hyper-parameters.

        JSON has no tuples: ``missing_values`` comes back as the tuple it was.

        Parameters
        ----------
        params : dict
            The hyper-parameters (``get_params()``, read back from JSON).
        part : callable or None, default=None
            ``part(name)``: the directory of a sub-bundle; unused (a NaiveBayesHidden has
            none), there for the signature :func:`hiddenstate.load` calls.

        Returns
        -------
        NaiveBayesHidden
            An unfitted estimator.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> hs.NaiveBayesHidden.from_saved_params({"n_clusters": 3,
        ...                                        "missing_values": ["?"]}).missing_values
        ('?',)
        """
        params = dict(params)
        if isinstance(params.get("missing_values"), list):
            params["missing_values"] = tuple(params["missing_values"])
        return cls(**params)

    def _check_learned(self) -> None:
        self._check_hyper()
        self._params()

    def save(self, path) -> None:
        """Save the model to the directory ``path``.

        ``model.json`` with the hyper-parameters, labels and categories + ``arrays.npz`` (no
        pickle); read it back with :func:`hiddenstate.load`.

        Parameters
        ----------
        path : str or os.PathLike
            The directory.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the parameters (learned or set by hand) are invalid.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> X = [["sun", "hot"], ["sun", "mild"], ["rain", "mild"], ["rain", "cool"],
        ...      ["sun", "hot"], ["rain", "cool"], ["sun", "mild"], ["rain", "mild"]]
        >>> y = ["play", "play", "stay", "stay", "play", "stay", "play", "stay"]
        >>> model = hs.NaiveBayesHidden(n_clusters=2, random_state=0).fit(X, y)
        >>> model.save("nbh-model")
        >>> bool((hs.load("nbh-model").predict(X) == model.predict(X)).all())
        True
        """
        from ._saving import save

        self._check_hyper()
        self._params()
        self.n_features_ = len(self.categories_)
        if not hasattr(self, "monitor_"):
            self.monitor_ = ConvergenceMonitor(self.tol, self.n_iter, False)
        save(self, path)


def _normalise(counts: np.ndarray) -> np.ndarray:
    """Rows (last axis) normalised; a row with no mass uniform."""
    sums = counts.sum(axis=-1, keepdims=True)
    return np.where(sums > 0, counts / np.where(sums > 0, sums, 1.0), 1.0 / counts.shape[-1])

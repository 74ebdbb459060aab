r"""Mixed emissions: each observation has several columns, each group of columns with its own
family (Gaussian columns beside categorical and Poisson ones), independent given the state.

.. math::
    p(x_t \mid z_t = k) = \prod_g p_g(x_{t, C_g} \mid z_t = k)

over the column groups :math:`C_g` (``HMM(emission={"gaussian": [0, 1], "categorical": [2],
"poisson": [3]})``). The log-likelihood table is the sum of the groups' tables; the
statistics, M-steps (EM, MAP), priors and variational posteriors are the groups' own,
side by side, because the groups share nothing but the state. Each group is an existing
family: :class:`~.gaussian.GaussianEmissions` over its columns (``covariance_type``
applies to them), :class:`~.categorical.CategoricalEmissions` for one categorical column
or :class:`~.multicategorical.MultiCategoricalEmissions` for several,
:class:`~.poisson.PoissonEmissions`; their parameters keep their names (``means_``,
``covars_``, ``emissionprob_``, ``lambdas_``).

Observations are one float array ``(n_samples, n_columns)``: NaN marks a missing entry in
any column (also ``-1`` in a categorical column), handled by each group as it handles its
own missing entries; categorical columns hold symbols ``0 .. W-1``, Poisson columns
non-negative counts. The number of features is one entry per column (a categorical
column's alphabet, 1 for the others).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_real_X
from ..errors import InvalidInputError
from .base import EmissionFamily

#: the families a mixed model can combine, in this order of their groups
KINDS = ("gaussian", "categorical", "poisson")
#: each kind's parameter letters (hmmlearn's) and variational posterior keys
LETTERS = {"gaussian": {"m": "means", "c": "covars"}, "categorical": {"e": "emissionprob"},
           "poisson": {"l": "lambdas"}}
VB_KEYS = {"gaussian": ("means", "beta", "dof", "scale"), "categorical": ("emissionprob",),
           "poisson": ("lambdas_shape", "lambdas_rate")}


def is_mixed(emission) -> bool:
    """Whether ``emission`` is a mixed spelling (a dict of families to columns)."""
    return isinstance(emission, dict)


def check_spec(emission) -> dict[str, tuple[int, ...]]:
    """Check a mixed spelling and return it as ``{kind: columns}`` in :data:`KINDS` order.

    Parameters
    ----------
    emission : dict
        Family name -> the columns of ``X`` it emits (a list of ints); every column of
        ``0 .. n_columns - 1`` belongs to exactly one family.

    Returns
    -------
    dict of str to tuple of int
        The groups.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If a family is not one of :data:`KINDS`, a column list is empty or not ints, or
        the columns are not ``0 .. n_columns - 1`` each once.

    Examples
    --------
    >>> from hiddenstate.families.mixed import check_spec
    >>> check_spec({"poisson": [2], "gaussian": [0, 1]})
    {'gaussian': (0, 1), 'poisson': (2,)}
    """
    if not isinstance(emission, dict) or not emission:
        raise InvalidInputError(
            f"emission: a mixed model takes a dict of families to columns, e.g. "
            f"{{'gaussian': [0, 1], 'categorical': [2]}}, got {emission!r:.60}")
    bad = [k for k in emission if k not in KINDS]
    if bad:
        raise InvalidInputError(
            f"emission: {bad[0]!r} cannot be mixed; a mixed model combines {KINDS}")
    out = {}
    for kind in KINDS:
        if kind not in emission:
            continue
        cols = emission[kind]
        cols = [cols] if isinstance(cols, (int, np.integer)) else cols
        ok = isinstance(cols, (list, tuple, np.ndarray)) and len(cols) > 0 and all(
            isinstance(c, (int, np.integer)) and not isinstance(c, bool) and c >= 0
            for c in cols)
        if not ok:
            raise InvalidInputError(
                f"emission[{kind!r}]: expected a non-empty list of column indices (ints >= "
                f"0), got {emission[kind]!r:.60}")
        out[kind] = tuple(int(c) for c in cols)
    every = sorted(c for cols in out.values() for c in cols)
    if every != list(range(len(every))):
        raise InvalidInputError(
            f"emission: the columns {every} must be 0 .. {len(every) - 1}, each in one "
            "family")
    return out


def n_columns(spec: dict) -> int:
    """The number of columns of a checked spelling."""
    return sum(len(cols) for cols in spec.values())


class MixedEmissions(EmissionFamily):
    r"""Emissions of several column groups, each with its own family, independent given the state.

    The families of the groups are built by the estimator (``hs.HMM(emission={...})``,
    with the priors in force for each); see :mod:`hiddenstate.families.mixed` for the
    model and the data layout.

    Parameters
    ----------
    n_states : int
        The number of hidden states K.
    spec : dict of str to tuple of int
        The groups (:func:`check_spec`).
    groups : dict of str to EmissionFamily
        The family of each group, over its own columns.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families import CategoricalEmissions, GaussianEmissions
    >>> from hiddenstate.families.mixed import MixedEmissions
    >>> family = MixedEmissions(2, {"gaussian": (0,), "categorical": (1,)},
    ...                         {"gaussian": GaussianEmissions(2, 1),
    ...                          "categorical": CategoricalEmissions(2, 3)})
    >>> X = family.validate_X(np.array([[0.1, 2.0], [np.nan, 0.0]]), None)
    >>> params = {"means": np.array([[0.0], [3.0]]), "covars": np.ones((2, 1)),
    ...           "emissionprob": np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])}
    >>> family.log_likelihood(params, X).round(3)       # sum of the groups' terms
    array([[-1.617, -8.427],
           [-1.609, -0.511]])
    """

    def __init__(self, n_states: int, spec: dict, groups: dict):
        self.spec = dict(spec)
        self.groups = dict(groups)
        self.n_cols = n_columns(spec)
        super().__init__(n_states, self.n_cols)
        self.letters = {letter: key for kind in self.groups
                        for letter, key in LETTERS[kind].items()}
        self._cache = None

    # -- the columns of each group -------------------------------------------------------------
    def _keys(self, kind: str) -> tuple[str, ...]:
        return tuple(LETTERS[kind].values())

    def _params(self, params: dict, kind: str) -> dict:
        return {k: v for k, v in params.items() if k in self._keys(kind) or k not in
                self.letters.values()}

    def group_data(self, X: np.ndarray) -> dict:
        """Return each group's columns as its family reads them.

        Categorical: int64 symbols (``-1`` missing), ``(n,)`` for one column, ``(n, F)``
        for several; the others: float columns (NaN missing). Kept for the last ``X``
        (EM reads the same array every iteration).

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_columns)
            The validated observations.

        Returns
        -------
        dict of str to ndarray
            Each group's data.
        """
        if self._cache is not None and self._cache[0] is X:
            return self._cache[1]
        out = {}
        for kind, cols in self.spec.items():
            part = X[:, list(cols)]
            if kind == "categorical":
                part = np.where(np.isnan(part), -1, part).astype(np.int64)
                part = np.ascontiguousarray(part[:, 0] if len(cols) == 1 else part)
            else:
                part = np.ascontiguousarray(part, dtype=np.float64)
            out[kind] = part
        self._cache = (X, out)
        return out

    def validate_X(self, X, fitted_n_features):
        """Check an ``(n_samples, n_columns)`` array: reals, NaN missing; each group's columns
        checked by its family (symbols within the alphabets, counts >= 0).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_columns)
            The observations.
        fitted_n_features : tuple of int or None
            The per-column number of features of a fitted model.

        Returns
        -------
        ndarray of shape (n_samples, n_columns), dtype float64
            The observations (a categorical ``-1`` becomes NaN).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``X`` has another number of columns, or a column is not valid data of its
            family (the message names the column).
        """
        arr = np.asarray(X)
        if arr.ndim != 2 or arr.shape[1] != self.n_cols:
            raise InvalidInputError(
                f"X: a mixed model of {self.n_cols} columns takes an array of shape "
                f"(n_samples, {self.n_cols}), got shape {arr.shape}")
        Xf = check_real_X(arr, self.n_cols, allow_missing=True)
        if "categorical" in self.spec:
            cols = list(self.spec["categorical"])
            Xf = Xf.copy()
            part = Xf[:, cols]
            Xf[:, cols] = np.where(part == -1, np.nan, part)
        for kind, cols in self.spec.items():
            for c in cols:
                col = Xf[:, c]
                seen = col[~np.isnan(col)]
                if kind == "gaussian":
                    continue
                if np.any(seen < 0) or np.any(seen != np.round(seen)):
                    what = "symbols 0 .. W-1" if kind == "categorical" else "counts >= 0"
                    raise InvalidInputError(
                        f"X[:, {c}]: a {kind} column holds {what} (NaN: missing)")
                if kind == "categorical" and fitted_n_features is not None and len(seen) \
                        and seen.max() >= fitted_n_features[c]:
                    raise InvalidInputError(
                        f"X[:, {c}]: symbol {int(seen.max())} is outside the column's "
                        f"alphabet of {fitted_n_features[c]} symbols")
        return Xf

    def infer_n_features(self, X):
        out = [1] * self.n_cols
        for c in self.spec.get("categorical", ()):
            col = X[:, c]
            seen = col[~np.isnan(col)]
            out[c] = int(seen.max()) + 1 if len(seen) else 1
        return tuple(out)

    # -- the groups side by side --------------------------------------------------------------
    def log_likelihood(self, params, X):
        parts = self.group_data(X)
        out = np.zeros((len(X), self.n_states))
        for kind, family in self.groups.items():
            out += family.log_likelihood(self._params(params, kind), parts[kind])
        return out

    def _posteriors(self, family, data, post):
        """``post`` as ``family.statistics`` reads it: summed by symbol for a family whose
        table is by symbol (the missing symbols' row last)."""
        if not family.table_by_symbol:
            return post
        out = np.zeros((family.n_features + 1, post.shape[1]))
        np.add.at(out, np.where(data < 0, family.n_features, data), post)
        return out

    def statistics(self, X, post):
        parts = self.group_data(X)
        return {kind: family.statistics(parts[kind],
                                        self._posteriors(family, parts[kind], post))
                for kind, family in self.groups.items()}

    def statistics_at(self, params, X, post):
        parts = self.group_data(X)
        return {kind: family.statistics_at(self._params(params, kind), parts[kind],
                                           self._posteriors(family, parts[kind], post))
                for kind, family in self.groups.items()}

    def merge_statistics(self, a, b):
        """Combine the statistics of two disjoint data sets, group by group.

        Parameters
        ----------
        a, b : dict
            The statistics of two disjoint sets of observations (one entry per group).

        Returns
        -------
        dict
            Each group's own merge.
        """
        return {kind: family.merge_statistics(a[kind], b[kind])
                for kind, family in self.groups.items()}

    def mstep(self, params, stats, which):
        out, dead = {}, set()
        for kind, family in self.groups.items():
            new, bad = family.mstep(self._own(params, kind), stats[kind], which)
            out.update(new)
            dead |= set(bad)
        return out, sorted(dead)

    def _own(self, params: dict, kind: str) -> dict:
        return {k: params[k] for k in self._keys(kind)}

    def log_prior(self, params):
        return float(sum(family.log_prior(self._own(params, kind))
                         for kind, family in self.groups.items()))

    def vb_init(self, params, n_virtual):
        out = {}
        for kind, family in self.groups.items():
            out.update(family.vb_init(self._own(params, kind), n_virtual))
        return out

    def _q(self, q: dict, kind: str) -> dict:
        return {k: q[k] for k in VB_KEYS[kind] if k in q}

    def vb_update(self, q, stats, which):
        out = {}
        for kind, family in self.groups.items():
            new = family.vb_update(self._q(q, kind), stats[kind], which)
            out.update({k: new[k] for k in VB_KEYS[kind] if k in new})
        return out

    def vb_expected(self, q):
        out = {}
        for kind, family in self.groups.items():
            out.update(family.vb_expected(self._q(q, kind)))
        return out

    def vb_kl(self, q):
        return float(sum(family.vb_kl(self._q(q, kind)) for kind, family in self.groups.items()))

    def vb_mean(self, q):
        out = {}
        for kind, family in self.groups.items():
            out.update(family.vb_mean(self._q(q, kind)))
        return out

    def initialize(self, X, rng):
        parts = self.group_data(X)
        out = {}
        for kind, family in self.groups.items():
            out.update(family.initialize(parts[kind], rng))
        return out

    def check_params(self, params):
        out = {}
        for kind, family in self.groups.items():
            out.update(family.check_params(self._own(params, kind)))
        return out

    def sample(self, params, states, rng):
        out = np.empty((len(states), self.n_cols))
        for kind, family in self.groups.items():
            drawn = np.asarray(family.sample(self._own(params, kind), states, rng))
            out[:, list(self.spec[kind])] = drawn.reshape(len(states), -1)
        return out

    def n_free_parameters(self):
        return int(sum(family.n_free_parameters() for family in self.groups.values()))

    @property
    def parameter_columns(self) -> int:
        """The groups' parameter columns, summed (the memory checks)."""
        return int(sum(family.parameter_columns for family in self.groups.values()))

    def autocorrelation_data(self, X):
        """Return the non-categorical columns (standardised by the caller), else the symbols.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_columns)
            The validated observations.

        Returns
        -------
        data : ndarray
            The observations to correlate.
        symbols : bool
            Whether they are symbols.
        """
        numeric = [c for kind, cols in self.spec.items() if kind != "categorical"
                   for c in cols]
        if numeric:
            return X[:, numeric], False
        return self.groups["categorical"].autocorrelation_data(
            self.group_data(X)["categorical"])

    def labelled_start(self, params, X, states, init_params):
        parts = self.group_data(X)
        out = dict(params)
        for kind, family in self.groups.items():
            out.update(family.labelled_start(self._own(params, kind), parts[kind], states,
                                             init_params))
        return out

    def impute(self, params, X, post):
        """Fill each missing entry as its group's family does (posterior predictive).

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters.
        X : ndarray of shape (n_samples, n_columns)
            The observations (NaN: missing).
        post : ndarray of shape (n_samples, n_states)
            The state posteriors.

        Returns
        -------
        ndarray
            ``X`` with its missing entries filled in (a copy).
        """
        parts = self.group_data(X)
        out = X.copy()
        for kind, family in self.groups.items():
            filled = family.impute(self._own(params, kind), parts[kind], post)
            out[:, list(self.spec[kind])] = np.asarray(filled).reshape(len(X), -1)
        return out

    def permute_states(self, values, perm):
        """Reorder the states of every group's parameters (or VB posteriors).

        Parameters
        ----------
        values : dict of str to ndarray
            Parameters or variational posteriors of the groups, by key.
        perm : ndarray of int
            State ``j`` of the result is state ``perm[j]``.

        Returns
        -------
        dict of str to ndarray
            The reordered arrays.
        """
        out = {}
        for kind, family in self.groups.items():
            mine = {k: v for k, v in values.items()
                    if k in self._keys(kind) or k in VB_KEYS[kind]}
            out.update(family.permute_states(mine, perm))
        return out

    # -- fixed entries: each group's own ---------------------------------------------------------
    @property
    def fixable(self) -> tuple[str, ...]:
        """The keys the groups fix."""
        return tuple(k for family in self.groups.values() for k in family.fixable)

    def fix(self, fixed):
        """Fix entries of the groups' parameters (each key goes to its group).

        Parameters
        ----------
        fixed : dict of str to array-like
            Parameter key -> fixed values (NaN: free).
        """
        super().fix({})  # the keys are checked below, group by group
        bad = sorted(set(fixed) - set(self.fixable))
        if bad:
            raise InvalidInputError(
                f"fixed: {bad[0]!r} is not a parameter of this mixed model (its parameters: "
                f"{', '.join(self.fixable)})")
        for kind, family in self.groups.items():
            mine = {k: v for k, v in fixed.items() if k in self._keys(kind)}
            if mine:
                family.fix(mine)
        self.fixed = {k: v for family in self.groups.values() for k, v in family.fixed.items()}

    def impose_fixed(self, params):
        out = dict(params)
        for kind, family in self.groups.items():
            out.update(family.impose_fixed(self._own(params, kind)))
        return out


def group_n_features(spec: dict, n_features) -> dict:
    """Each group's number of features from the per-column tuple (None or a placeholder
    int: alphabets of 1, before the data are seen)."""
    per = (n_features if isinstance(n_features, tuple)
           else (1,) * n_columns(spec))
    out = {}
    for kind, cols in spec.items():
        if kind == "categorical":
            alphabets = tuple(max(int(per[c]), 1) for c in cols)
            out[kind] = alphabets[0] if len(cols) == 1 else alphabets
        else:
            out[kind] = len(cols)
    return out


__all__ = ["KINDS", "MixedEmissions", "check_spec", "group_n_features", "is_mixed",
           "n_columns"]

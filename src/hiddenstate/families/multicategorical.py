r"""Several categorical features per time step: a product of per-feature categoricals, each
with its own alphabet (naive Bayes within a state; hmmlearn issues #375, #400, #559).

.. math::
    p(x_t \mid z_t = k) = \prod_f B^{(f)}_{k, x_{tf}},

so the log-likelihood table is a sum over features and each feature's rows are an ordinary
:class:`~.dirichlet.DirichletRows` block fitted from its own counts
:math:`\sum_t \gamma_{tk}[x_{tf} = w]`. A missing entry (``-1``) has no factor. The rows of
every feature are stored together as ``emissionprob`` of shape ``(F, K, W)`` with ``W``
the largest alphabet; a feature with fewer symbols has zeros past its alphabet
(structural zeros: no mode puts mass there).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from .._validation import check_symbols
from ..errors import InvalidInputError
from .base import EmissionFamily, labelled_mean
from .categorical import MAX_INFERRED_SYMBOLS
from .dirichlet import DirichletRows


class MultiCategoricalEmissions(EmissionFamily):
    """``emissionprob`` ``(F, K, W)``: p(x_f = w | z = k) for each of the ``F`` features;
    ``alphabets`` the number of symbols of each feature (``n_features`` is the largest)."""

    letters = {"e": "emissionprob"}

    def __init__(self, n_states: int, alphabets, emissionprob_prior=1.0):
        self.alphabets = tuple(int(w) for w in alphabets)
        super().__init__(n_states, max(self.alphabets))
        self.emissionprob_prior = emissionprob_prior

    # built when first used (after the estimator's memory check), not in the constructor
    @cached_property
    def support(self) -> np.ndarray:
        """Bool ``(F, K, W)``: the entries inside each feature's alphabet."""
        F, K, W = self.n_columns, self.n_states, self.n_features
        inside = np.arange(W)[None, None, :] < np.array(self.alphabets)[:, None, None]
        return np.broadcast_to(inside, (F, K, W))

    def _rows(self, outside: float) -> DirichletRows:
        F, K, W = self.n_columns, self.n_states, self.n_features
        prior = np.broadcast_to(np.asarray(self.emissionprob_prior, dtype=np.float64),
                                (F, K, W))
        fixed = self.fixed.get("emissionprob")
        return DirichletRows("emissionprob", "e",
                             np.where(self.support, prior, outside).reshape(F * K, W),
                             None if fixed is None else fixed.reshape(F * K, W))

    fixable = ("emissionprob",)

    def check_fixed(self, key, value):
        """Fixed entries of ``emissionprob`` ``(F, K, W)``: none past a feature's alphabet.

        Parameters
        ----------
        key : str
            ``"emissionprob"``.
        value : array-like
            The fixed values (NaN: free).

        Returns
        -------
        ndarray or None
            The fixed values; None when nothing is fixed.
        """
        from .fixed import as_fixed, check_fixed_rows

        arr = as_fixed(value, (self.n_columns, self.n_states, self.n_features), key)
        if arr is None:
            return None
        if np.any(~np.isnan(arr) & ~self.support & (arr != 0)):
            raise InvalidInputError(
                "fixed['emissionprob']: fixes a probability past a feature's alphabet; "
                "leave those entries NaN")
        return check_fixed_rows(arr, key)

    def permute_states(self, values, perm):
        """Reorder the states: axis 1 of ``emissionprob`` ``(F, K, W)`` (a VB posterior's
        ``(F * K, W)`` rows too).

        Parameters
        ----------
        values : dict of str to ndarray
            ``{"emissionprob": ...}``.
        perm : ndarray of int
            State ``j`` of the result is state ``perm[j]``.

        Returns
        -------
        dict of str to ndarray
            The reordered rows.
        """
        B = np.asarray(values["emissionprob"])
        shaped = B.reshape(self.n_columns, self.n_states, -1)
        return {"emissionprob": shaped[:, perm].reshape(B.shape)}

    def fix(self, fixed):
        """Fix entries of ``emissionprob`` ``(F, K, W)`` (NaN: free); see
        :meth:`hiddenstate.families.EmissionFamily.fix`."""
        super().fix(fixed)
        for name in ("rows", "vb_rows"):   # built again with the fixed entries
            self.__dict__.pop(name, None)

    @cached_property
    def rows(self) -> DirichletRows:
        """The point estimates' rows: a flat 1 outside a feature's alphabet (no term in the
        log prior; the entries there start at 0 and stay 0)."""
        return self._rows(1.0)

    @cached_property
    def vb_rows(self) -> DirichletRows:
        """Variational Bayes' rows: prior 0 outside a feature's alphabet (q stays 0)."""
        return self._rows(0.0)

    @property
    def n_columns(self) -> int:
        return len(self.alphabets)

    def _flat(self, a: np.ndarray) -> np.ndarray:
        return np.asarray(a).reshape(-1, self.n_features)

    def _shaped(self, a: np.ndarray) -> np.ndarray:
        return a.reshape(self.n_columns, self.n_states, self.n_features)

    def validate_X(self, X, fitted_n_features):
        return check_feature_symbols(X, fitted_n_features)

    def infer_n_features(self, X):
        out = tuple(max(int(col.max()) + 1, 1) for col in X.T)
        for f, W in enumerate(out):
            if W > MAX_INFERRED_SYMBOLS:
                raise InvalidInputError(
                    f"X[:, {f}]: the largest symbol, {W - 1}, implies an alphabet of {W} "
                    "symbols; relabel each column to 0..W-1 (np.unique(col, "
                    "return_inverse=True)) or pass n_features explicitly")
        return out

    def log_likelihood(self, params, X):
        """:math:`\\sum_f \\log B^{(f)}_{k, x_{tf}}` over the observed features."""
        B = params["emissionprob"]
        out = np.zeros((len(X), self.n_states))
        with np.errstate(divide="ignore"):
            for f in range(self.n_columns):
                seen = X[:, f] >= 0
                out[seen] += np.log(B[f].T[X[seen, f]])
        return out

    def statistics(self, X, post):
        counts = np.zeros((self.n_columns, self.n_features, self.n_states))
        for f in range(self.n_columns):
            seen = X[:, f] >= 0
            np.add.at(counts[f], X[seen, f], post[seen])
        return {"counts": counts.transpose(0, 2, 1)}

    def merge_statistics(self, a, b):
        """Counts of two disjoint data sets: their sum."""
        return {"counts": a["counts"] + b["counts"]}

    def mstep(self, params, stats, which):
        B, dead = self.rows.mstep(self._flat(params["emissionprob"]), self._flat(stats["counts"]),
                                  which)
        return {"emissionprob": self._shaped(B)}, sorted({d % self.n_states for d in dead})

    def log_prior(self, params):
        return self.rows.log_prior(self._flat(params["emissionprob"]))

    def vb_init(self, params, n_virtual):
        return {"emissionprob": self.vb_rows.vb_init(self._flat(params["emissionprob"]),
                                                     n_virtual)}

    def vb_update(self, q, stats, which):
        return {"emissionprob": self.vb_rows.vb_update(q["emissionprob"],
                                                       self._flat(stats["counts"]), which)}

    def vb_expected(self, q):
        return {"emissionprob": self._shaped(self.vb_rows.vb_expected(q["emissionprob"]))}

    def vb_kl(self, q):
        return self.vb_rows.vb_kl(q["emissionprob"])

    def vb_mean(self, q):
        return {"emissionprob": self._shaped(self.vb_rows.vb_mean(q["emissionprob"]))}

    def state_axes(self):
        """``emissionprob`` ``(F, K, W)``: the states on axis 1."""
        return {"emissionprob": 1}

    def sample_posterior(self, params, stats, which, rng):
        """Draw every feature's rows from their Dirichlet posterior (prior 0 outside a
        feature's alphabet, as in variational Bayes: those entries stay 0)."""
        draw = self.vb_rows.sample_posterior(self._flat(params["emissionprob"]),
                                             self._flat(stats["counts"]), which, rng)
        return {"emissionprob": self._shaped(np.asarray(draw))}

    def initialize(self, X, rng):
        B = np.zeros((self.n_columns, self.n_states, self.n_features))
        for f, W in enumerate(self.alphabets):
            B[f, :, :W] = rng.dirichlet(np.ones(W), size=self.n_states)
        return {"emissionprob": B}

    def check_params(self, params):
        F, K, W = self.n_columns, self.n_states, self.n_features
        B = np.asarray(params["emissionprob"], dtype=np.float64)
        if B.shape != (F, K, W):
            raise InvalidInputError(
                f"emissionprob_: {F} categorical features need shape (n_columns, n_states, "
                f"largest alphabet) = {(F, K, W)}, got {B.shape}")
        if not np.all(np.isfinite(B)) or np.any(B < 0):
            raise InvalidInputError("emissionprob_: probabilities must be finite and >= 0")
        if np.any(B[~self.support] != 0):
            f = int(np.argwhere((B != 0) & ~self.support)[0, 0])
            raise InvalidInputError(
                f"emissionprob_: feature {f} has {self.alphabets[f]} symbols but puts "
                "probability past them; set those entries to 0")
        sums = B.sum(axis=2)
        if not np.allclose(sums, 1.0, atol=1e-8):
            f, k = np.argwhere(~np.isclose(sums, 1.0, atol=1e-8))[0]
            raise InvalidInputError(
                f"emissionprob_: row [{f}, {k}] sums to {sums[f, k]:.6g}, not 1")
        return {"emissionprob": B}

    # -- a family of symbols ----------------------------------------------------------------
    feature_axis = True

    @property
    def parameter_columns(self) -> int:
        """F rows of the largest alphabet per state."""
        return self.n_columns * self.n_features

    def labelled_start(self, params, X, states, init_params):
        """Each feature's rows moved to its one-hot labelled symbols (a missing one counts
        for nothing), when ``"e"`` is initialised."""
        if "e" not in init_params:
            return params
        B = params["emissionprob"].copy()
        for f, W in enumerate(self.alphabets):
            V = np.where(X[:, f:f + 1] < 0, np.nan, X[:, f:f + 1] == np.arange(W))
            B[f, :, :W] = labelled_mean(B[f, :, :W], V, states)
        return {**params, "emissionprob": B}

    def feature_rows(self, emissionprob):
        return [emissionprob[f, :, :W] for f, W in enumerate(self.alphabets)]

    def from_feature_rows(self, rows):
        out = np.zeros((self.n_columns, self.n_states, self.n_features))
        for f, (W, r) in enumerate(zip(self.alphabets, rows, strict=True)):
            out[f, :, :W] = r
        return out

    def validate_symbols(self, X):
        """``(N, F)`` symbols (one feature: an ``(N, 1)`` column)."""
        if self.n_columns > 1:
            return check_feature_symbols(X, self.alphabets)
        return check_symbols(X, self.n_features, allow_missing=True)[:, None]

    def stream_symbols(self, X):
        y = np.asarray(X)
        alphabets = self.alphabets
        high = np.array(alphabets) - 1
        if y.ndim != 2 or y.shape[1] != len(alphabets) or y.dtype.kind not in "iu" or (
                len(y) and (y.min() < -1 or np.any(y.max(axis=0) > high))):
            raise InvalidInputError(
                f"X: expected integer symbols of {len(alphabets)} features, shape (n, "
                f"{len(alphabets)}), column f in -1 .. W_f - 1 (alphabets {alphabets}; "
                f"-1: missing), got shape {y.shape}")
        offsets = np.concatenate(([0], np.cumsum(alphabets)[:-1])).astype(np.int64)
        return np.ascontiguousarray(np.where(y >= 0, y + offsets, -1), dtype=np.int64)

    def impute(self, params, X, post):
        """Each missing entry (``-1``) replaced by its feature's most probable symbol under
        the posterior predictive :math:`\\sum_k \\gamma_{tk} B^{(f)}_{k\\cdot}`."""
        out = X.copy()
        for f in range(self.n_columns):
            rows = np.flatnonzero(X[:, f] < 0)
            out[rows, f] = np.argmax(post[rows] @ params["emissionprob"][f], axis=1)
        return out

    def sample(self, params, states, rng):
        out = np.empty((len(states), self.n_columns), dtype=np.int64)
        for f in range(self.n_columns):
            cdf = np.cumsum(params["emissionprob"][f], axis=1)
            u = rng.random(len(states)) * cdf[states, -1]
            out[:, f] = np.minimum((u[:, None] >= cdf[states]).sum(axis=1),
                                   self.alphabets[f] - 1)
        return out

    def n_free_parameters(self):
        return self.n_states * sum(W - 1 for W in self.alphabets)


def check_feature_symbols(X, alphabets, name: str = "X") -> np.ndarray:
    """``(n, F)`` integer symbols, column ``f`` in ``[0, alphabets[f])`` (``-1``: missing;
    a masked array's masked entries too), as int64."""
    if np.ma.isMaskedArray(X):
        X = np.ma.filled(X, -1)
    arr = np.asarray(X)
    if arr.ndim != 2 or arr.shape[1] < 2:
        raise InvalidInputError(
            f"{name}: several categorical features need a 2-D array (n_samples, n_columns) "
            f"with at least 2 columns, got shape {arr.shape}")
    if alphabets is not None and len(alphabets) != arr.shape[1]:
        raise InvalidInputError(
            f"{name}: has {arr.shape[1]} columns but the model has {len(alphabets)} "
            "categorical features; pass data with the same columns as used in fit")
    cols = [check_symbols(arr[:, f], None if alphabets is None else alphabets[f],
                          f"{name}[:, {f}]", allow_missing=True)
            for f in range(arr.shape[1])]
    return np.ascontiguousarray(np.stack(cols, axis=1))

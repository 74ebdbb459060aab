"""The rows a :class:`~.estimator.RegressionHMM` models, laid out for its families.

Each modelled row is ``[y_t | u_t | y_{t-1} ... y_{t-p} | 1]``: the observation, then its
design (the inputs, the ``p = n_lags`` previous observations of the same sequence, most recent
first, and the intercept). The first ``n_lags`` rows of each sequence have no full lag
vector: the model conditions on them (they are read as lags, never modelled; the hidden
chain starts at row ``n_lags``), as statsmodels' ``MarkovRegression`` on lagged regressors and
the conditional likelihood of Hamilton (1994, ch. 22) do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InvalidInputError
from ...inference import Sequences


class Rows(np.ndarray):
    """Modelled rows already laid out (what :meth:`RegressionHMM.validate_data
    <hiddenstate.models.regression.RegressionHMM.validate_data>` returns): validating them
    again returns them unchanged, as validating an HMM's validated data does (the
    distributed fit validates each partition twice)."""


@dataclass(frozen=True)
class Design:
    """The modelled rows of some data and where they came from.

    Parameters
    ----------
    Z : ndarray of shape (n, width)
        Rows ``[y | inputs | lags | 1]`` (``y``: D numbers; a category for logistic
        emissions).
    seqs : hiddenstate.inference.Sequences
        The layout of the modelled rows (each sequence ``n_lags`` shorter).
    rows : ndarray of int64 of shape (n,)
        The row of the data each modelled row is.
    U : ndarray of shape (n, M_t)
        The transition inputs of each modelled row (what input-driven transitions read).
    bounds : ndarray of int64
        The sequences' offsets in the data.
    n_inputs : int
        M, the columns of ``inputs``.
    """

    Z: np.ndarray
    seqs: Sequences
    rows: np.ndarray
    U: np.ndarray
    bounds: np.ndarray
    n_inputs: int

    @property
    def n_samples(self) -> int:
        """The rows of the data (modelled or conditioned on)."""
        return int(self.bounds[-1])

    def scatter(self, values: np.ndarray, fill) -> np.ndarray:
        """Per-row results of the modelled rows laid out as the data's rows.

        Parameters
        ----------
        values : ndarray of shape (n, ...)
            One entry per modelled row.
        fill : scalar
            The entry of the rows the model conditions on.

        Returns
        -------
        ndarray of shape (n_samples, ...)
            The results.
        """
        out = np.full((self.n_samples, *values.shape[1:]), fill, dtype=values.dtype)
        out[self.rows] = values
        return out


def check_inputs(inputs, n_samples: int, n_inputs: int | None) -> np.ndarray:
    """Inputs as a finite ``(n_samples, M)`` float64 array (a 1-D array is one input);
    None is ``(n_samples, 0)``. ``n_inputs``: the number the model was fitted with (None:
    any)."""
    if inputs is None:
        if n_inputs:
            raise InvalidInputError(
                f"inputs: the model regresses on {n_inputs} input(s); pass inputs= with one "
                "row per observation")
        return np.empty((n_samples, 0))
    if isinstance(inputs, (str, bytes)):
        raise InvalidInputError(f"inputs: expected numbers, got a {type(inputs).__name__}")
    try:
        U = np.asarray(inputs, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"inputs: cannot be read as numbers ({exc}); pass a numeric array") from exc
    if U.ndim == 1:
        U = U[:, None]
    if U.ndim != 2:
        raise InvalidInputError(
            f"inputs: expected a 2-D array (n_samples, n_inputs), got shape {U.shape}")
    if len(U) != n_samples:
        raise InvalidInputError(
            f"inputs: has {len(U)} rows but X has {n_samples}; pass one row of inputs per "
            "observation")
    bad = ~np.isfinite(U)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise InvalidInputError(
            f"inputs: {U[r, c]} at row {r}, column {c}; inputs must be observed and finite at "
            "every step (missing inputs cannot be integrated out): fill them in, or drop "
            "those rows and split the sequence there (lengths)")
    if n_inputs is not None and U.shape[1] != n_inputs:
        if n_inputs == 0:
            raise InvalidInputError(
                f"inputs: the model was fitted without inputs, got {U.shape[1]} column(s); "
                "drop inputs=")
        raise InvalidInputError(
            f"inputs: has {U.shape[1]} column(s) but the model expects {n_inputs}")
    return np.ascontiguousarray(U)


def build(y: np.ndarray, lengths: np.ndarray, U: np.ndarray, n_lags: int,
          fit_intercept: bool, emission_columns: np.ndarray,
          transition_columns: np.ndarray) -> Design:
    """Lay out the modelled rows of validated observations ``y`` (``(N, D)`` numbers or
    ``(N,)`` categories), their ``lengths`` (each > ``n_lags``) and inputs ``U``, of which
    the emissions read ``emission_columns`` and the transitions ``transition_columns``."""
    bounds = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=bounds[1:])
    short = np.flatnonzero(lengths <= n_lags)
    if len(short):
        s = int(short[0])
        raise InvalidInputError(
            f"lengths: sequence {s} has {lengths[s]} observation(s), but n_lags={n_lags} "
            f"needs at least {n_lags + 1} (the first {n_lags} of each sequence are its lags); "
            "drop or join the short sequences")
    if n_lags:
        keep = np.ones(len(y), dtype=bool)
        for lag in range(n_lags):
            keep[bounds[:-1] + lag] = False
        rows = np.flatnonzero(keep)
    else:
        rows = np.arange(len(y), dtype=np.int64)
    Y = y.reshape(len(y), -1).astype(np.float64)
    Ur = U[rows]
    parts = [Y[rows], Ur[:, emission_columns]] + [Y[rows - lag]
                                                  for lag in range(1, n_lags + 1)]
    if fit_intercept:
        parts.append(np.ones((len(rows), 1)))
    Z = np.ascontiguousarray(np.hstack(parts))
    seqs = Sequences.from_lengths(np.asarray(lengths, dtype=np.int64) - n_lags)
    return Design(Z, seqs, rows, np.ascontiguousarray(Ur[:, transition_columns]), bounds,
                  U.shape[1])

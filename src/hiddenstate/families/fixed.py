r"""Parameters with some entries fixed (``HMM(fixed=...)``): the constrained M-steps.

A fixed-values array has the shape of its parameter, NaN for a free entry and the fixed
value elsewhere.

**Categorical rows** (initial distribution, transition rows, emission rows) with fixed
entries :math:`F` (fixed mass :math:`m = \sum_{w \in F}\theta_w \le 1`): the M-step
maximises :math:`\sum_w (n_w + \alpha_w - 1)\log\theta_w` over the free entries subject to
:math:`\sum_{w \notin F}\theta_w = 1 - m` (Lagrange):

.. math::
    \hat\theta_w = (1 - m)\,\frac{\max(n_w + \alpha_w - 1, 0)}
                             {\sum_{v \notin F}\max(n_v + \alpha_v - 1, 0)},
    \qquad w \notin F,

so the rows stay normalised. The prior is a Dirichlet(:math:`\alpha_{\bar F}`) on the
renormalised free part :math:`\phi = \theta_{\bar F}/(1 - m)` (its log density is the
MAP objective's prior term; flat for :math:`\alpha = 1`). Variational Bayes keeps
:math:`q(\phi) = \mathrm{Dir}(\alpha_{\bar F} + n_{\bar F})`: the E-step uses
:math:`\tilde\theta_w = (1 - m)\exp(\psi(\hat\alpha_w) - \psi(\sum_{v\notin F}\hat\alpha_v))`
for a free entry and the fixed value for a fixed one; the bound subtracts
:math:`\mathrm{KL}(q(\phi)\,\|\,p(\phi))`. A row whose every entry is fixed has no free part.

Entries of other parameters (Gaussian means and covariances, Poisson rates) are fixed by
the families themselves (see their ``mstep``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma, gammaln

from ..errors import InvalidInputError


def as_fixed(value, shape: tuple[int, ...], name: str) -> np.ndarray | None:
    """``value`` as a float64 array of ``shape`` (NaN: free; every other entry finite);
    None when every entry is free. Errors name ``fixed['name']``."""
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"fixed[{name!r}]: expected an array of numbers (NaN: free), got "
            f"{value!r:.60} ({exc})") from exc
    if arr.shape != shape:
        raise InvalidInputError(
            f"fixed[{name!r}]: has shape {arr.shape}; the parameter {name}_ has shape "
            f"{shape} (NaN for the entries that are learned)")
    if np.any(np.isinf(arr)):
        raise InvalidInputError(f"fixed[{name!r}]: values must be finite (NaN: free)")
    return None if np.all(np.isnan(arr)) else arr


def check_fixed_rows(fixed: np.ndarray, name: str) -> np.ndarray:
    """Fixed entries of categorical rows: probabilities in [0, 1], each row's fixed mass at
    most 1, a row fixed whole summing to 1."""
    free = np.isnan(fixed)
    vals = np.where(free, 0.0, fixed)
    if np.any(vals < 0) or np.any(vals > 1):
        raise InvalidInputError(f"fixed[{name!r}]: probabilities must lie in [0, 1]")
    mass = vals.sum(axis=-1)
    over = np.argwhere(mass > 1.0 + 1e-10)
    if len(over):
        raise InvalidInputError(
            f"fixed[{name!r}]: row {tuple(over[0].tolist())} fixes a mass of "
            f"{mass[tuple(over[0])]:.6g} > 1; a row's fixed entries may sum to at most 1")
    whole = ~free.any(axis=-1)
    short = np.argwhere(whole & ~np.isclose(mass, 1.0, rtol=0, atol=1e-8))
    if len(short):
        raise InvalidInputError(
            f"fixed[{name!r}]: row {tuple(short[0].tolist())} is fixed whole but sums to "
            f"{mass[tuple(short[0])]:.6g}, not 1")
    return fixed


def impose(values: np.ndarray, fixed: np.ndarray | None) -> np.ndarray:
    """Return ``values`` with the fixed entries set (``fixed``: NaN where free).

    Parameters
    ----------
    values : ndarray
        The parameter.
    fixed : ndarray or None
        The fixed values, shaped like ``values``; None: nothing fixed.

    Returns
    -------
    ndarray
        A new array (``values`` itself when nothing is fixed).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families.fixed import impose
    >>> impose(np.array([1.0, 2.0, 3.0]), np.array([np.nan, 5.0, np.nan]))
    array([1., 5., 3.])
    """
    if fixed is None:
        return values
    return np.where(np.isnan(fixed), values, fixed)


def impose_rows(rows: np.ndarray, fixed: np.ndarray | None) -> np.ndarray:
    """Return categorical rows that honour ``fixed``: the free entries scaled to the mass left.

    Each row's free entries keep their proportions and sum to one minus the row's fixed
    mass; a row whose free entries are all 0 spreads that mass evenly over its free entries
    that may be non-zero (those not at a structural zero of ``rows``, else all of them).

    Parameters
    ----------
    rows : ndarray
        Categorical rows (rows along the last axis), e.g. a starting point.
    fixed : ndarray or None
        The fixed values (NaN: free), shaped like ``rows``.

    Returns
    -------
    ndarray
        The rows.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families.fixed import impose_rows
    >>> impose_rows(np.array([[0.5, 0.25, 0.25]]), np.array([[0.5, np.nan, np.nan]]))
    array([[0.5 , 0.25, 0.25]])
    >>> impose_rows(np.array([[0.2, 0.4, 0.4]]), np.array([[np.nan, 0.9, np.nan]]))
    array([[0.05, 0.9 , 0.05]])
    """
    if fixed is None:
        return rows
    free = np.isnan(fixed)
    rest = 1.0 - np.sum(np.where(free, 0.0, fixed), axis=-1, keepdims=True)
    part = np.where(free, rows, 0.0)
    total = part.sum(axis=-1, keepdims=True)
    even = np.where(free & (rows > 0), 1.0, 0.0)
    even = np.where(even.sum(axis=-1, keepdims=True) > 0, even, free.astype(np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = np.where(total > 0, part / total, even / even.sum(axis=-1, keepdims=True))
    return np.where(free, np.maximum(rest, 0.0) * np.nan_to_num(spread), fixed)


def _split(fixed: np.ndarray):
    free = np.isnan(fixed)
    mass = np.sum(np.where(free, 0.0, fixed), axis=-1, keepdims=True)
    return free, np.maximum(1.0 - mass, 0.0)


def mstep_rows(theta: np.ndarray, counts: np.ndarray, alpha: np.ndarray,
               fixed: np.ndarray) -> tuple[np.ndarray, list[int]]:
    r"""The constrained MAP (MLE for :math:`\alpha = 1`) estimate of categorical rows.

    See the module docstring; structural zeros of ``theta`` stay zero; a row whose free
    entries get no mass keeps its free entries (its index is returned).

    Parameters
    ----------
    theta : ndarray
        The current rows (rows along the last axis).
    counts : ndarray
        Expected counts, shaped like ``theta``.
    alpha : ndarray
        The Dirichlet concentrations, shaped like ``theta``.
    fixed : ndarray
        The fixed values (NaN: free), shaped like ``theta``.

    Returns
    -------
    rows : ndarray
        The estimate.
    kept : list of int
        The (flat) indices of rows whose free part kept its value.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families.fixed import mstep_rows
    >>> rows, kept = mstep_rows(np.full((1, 3), 1 / 3), np.array([[6.0, 3.0, 1.0]]),
    ...                         np.ones((1, 3)), np.array([[np.nan, 0.3, np.nan]]))
    >>> rows.round(4), kept
    (array([[0.6 , 0.3 , 0.1 ]]), [])
    """
    free, rest = _split(fixed)
    est = np.where(free & (theta != 0), np.maximum(counts + alpha - 1.0, 0.0), 0.0)
    total = est.sum(axis=-1, keepdims=True)
    live = (total > 0) | (rest <= 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = np.where(total > 0, est / total, 0.0) * rest
    out = np.where(free, np.where(live, scaled, theta), fixed)
    return out, np.flatnonzero(~live.reshape(-1)).tolist()


def log_prior_rows(theta: np.ndarray, alpha: np.ndarray, fixed: np.ndarray) -> float:
    r"""The Dirichlet log density of the renormalised free part of each row.

    :math:`\sum_{w \notin F}(\alpha_w - 1)\log\phi_w - \log B(\alpha_{\bar F})` with
    :math:`\phi = \theta_{\bar F}/(1 - m)`, over each row's support; 0 for a flat prior.

    Parameters
    ----------
    theta : ndarray
        The rows.
    alpha : ndarray
        The Dirichlet concentrations, shaped like ``theta``.
    fixed : ndarray
        The fixed values (NaN: free).

    Returns
    -------
    float
        The log density summed over the rows.
    """
    free, rest = _split(fixed)
    if np.all(np.where(free, alpha, 1.0) == 1.0):
        return 0.0
    s = free & ((theta > 0) | (alpha != 1.0)) & (rest > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = np.where(s, theta / np.where(rest > 0, rest, 1.0), 1.0)
        logs = np.where(s, (alpha - 1.0) * np.log(phi), 0.0)
        norm = (np.sum(np.where(s, gammaln(np.where(s, alpha, 1.0)), 0.0), axis=-1)
                - gammaln(np.sum(np.where(s, alpha, 0.0), axis=-1)))
    norm = np.where(s.any(axis=-1), norm, 0.0)
    return float(np.sum(logs) - np.sum(norm))


def vb_posterior_rows(q: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    """The Dirichlet parameters of the free parts: ``q`` with 0 at the fixed entries.

    Parameters
    ----------
    q : ndarray
        Dirichlet parameters (prior plus counts), shaped like the rows.
    fixed : ndarray
        The fixed values (NaN: free).

    Returns
    -------
    ndarray
        ``q`` at the free entries, 0 elsewhere.
    """
    return np.where(np.isnan(fixed), q, 0.0)


def vb_expected_rows(q: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    r""":math:`(1 - m)\exp(\psi(\hat\alpha_w) - \psi(\sum\hat\alpha))` for the free entries,
    the fixed value for the others (0 where ``q`` is 0).

    Parameters
    ----------
    q : ndarray
        The free parts' Dirichlet parameters (0 at the fixed entries).
    fixed : ndarray
        The fixed values (NaN: free).

    Returns
    -------
    ndarray
        The sub-normalised rows the E-step uses.
    """
    free, rest = _split(fixed)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = rest * np.exp(digamma(q) - digamma(q.sum(axis=-1, keepdims=True)))
    return np.where(free, np.where(q > 0, out, 0.0), fixed)


def vb_kl_rows(q: np.ndarray, alpha: np.ndarray, fixed: np.ndarray) -> float:
    """KL(Dir(q) || Dir(alpha)) of the free parts, summed over the rows that have one.

    Parameters
    ----------
    q : ndarray
        The free parts' Dirichlet parameters (0 at the fixed entries).
    alpha : ndarray
        The prior concentrations, shaped like ``q``.
    fixed : ndarray
        The fixed values (NaN: free).

    Returns
    -------
    float
        The divergence.
    """
    s = np.isnan(fixed) & (q > 0)
    a_hat, a = np.where(s, q, 1.0), np.where(s, alpha, 1.0)
    a0 = np.sum(np.where(s, q, 0.0), axis=-1)
    b0 = np.sum(np.where(s, alpha, 0.0), axis=-1)
    has = s.any(axis=-1)
    a0s, b0s = np.where(has, a0, 1.0), np.where(has, b0, 1.0)
    per_entry = np.where(s, -gammaln(a_hat) + gammaln(a)
                         + (a_hat - a) * (digamma(a_hat) - digamma(a0s)[..., None]), 0.0)
    rows = np.where(has, gammaln(a0s) - gammaln(b0s), 0.0) + np.sum(per_entry, axis=-1)
    return float(np.sum(rows))


def vb_mean_rows(q: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    r"""The posterior mean rows: :math:`(1 - m)\hat\alpha/\sum\hat\alpha` and the fixed values.

    Parameters
    ----------
    q : ndarray
        The free parts' Dirichlet parameters (0 at the fixed entries).
    fixed : ndarray
        The fixed values (NaN: free).

    Returns
    -------
    ndarray
        The rows.
    """
    free, rest = _split(fixed)
    total = q.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(total > 0, q / total, 0.0) * rest
    return np.where(free, mean, fixed)

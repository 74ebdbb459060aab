r"""Categorical rows under independent Dirichlet priors: the conjugate block behind the
initial distribution, every transition row and categorical emissions.

For a row with expected counts :math:`n` and prior :math:`\mathrm{Dir}(\alpha)`:

- MLE (``alpha = 1``) and MAP: :math:`\hat\theta_w \propto \max(n_w + \alpha_w - 1, 0)`
  (hmmlearn's convention); structural zeros of the current row stay zero.
- log prior density: :math:`\sum_w (\alpha_w - 1)\log\theta_w - \log B(\alpha)` over the
  row's support.
- Variational Bayes (MacKay 1997; Beal 2003, ch. 3): :math:`q(\theta) = \mathrm{Dir}(\hat\alpha)`
  with :math:`\hat\alpha = \alpha + n`; inference uses the sub-normalised
  :math:`\tilde\theta_w = \exp(\psi(\hat\alpha_w) - \psi(\sum_v \hat\alpha_v))`; the bound
  subtracts :math:`\mathrm{KL}(\mathrm{Dir}(\hat\alpha)\,\|\,\mathrm{Dir}(\alpha))`.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma, gammaln

from ..errors import InvalidInputError
from . import fixed as fixed_rows
from .posterior_draws import TINY, dirichlet_rows, log_gamma_draws


def estimate_rows(counts: np.ndarray, current: np.ndarray, prior=1.0) -> tuple[np.ndarray, list]:
    r"""Estimate categorical rows: the MAP estimate, the MLE for ``prior == 1``.

    :math:`\hat\theta_w \propto \max(n_w + \alpha_w - 1, 0)` along the last axis
    (hmmlearn's convention); structural zeros of the current rows stay zero. A row with no
    mass at all (a state never visited) keeps its current value; its index is returned so
    the caller can warn.

    Parameters
    ----------
    counts : ndarray
        Expected counts, rows along the last axis (any number of axes).
    current : ndarray
        The current rows, of the shape of ``counts``.
    prior : float or array-like, default=1.0
        The Dirichlet :math:`\alpha`, a scalar or broadcastable to ``counts``.

    Returns
    -------
    rows : ndarray
        The estimated rows, each summing to one.
    kept : list of int
        The (flat) indices of the rows without mass, which kept their current value.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families import estimate_rows
    >>> counts = np.array([[3.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    >>> current = np.array([[0.2, 0.3, 0.5], [0.5, 0.0, 0.5]])
    >>> estimate_rows(counts, current)                  # row 1 saw nothing: kept
    (array([[0.75, 0.25, 0.  ],
           [0.5 , 0.  , 0.5 ]]), [1])
    >>> estimate_rows(counts[:1], current[:1], prior=2.0)[0].round(3)
    array([[0.571, 0.286, 0.143]])
    """
    shift = prior - 1.0 if isinstance(prior, float) else np.asarray(prior, np.float64) - 1.0
    est = counts + shift
    np.maximum(est, 0.0, out=est)
    np.putmask(est, current == 0, 0.0)
    est = est.reshape(-1, est.shape[-1])  # rows along the last axis, any number of axes
    sums = np.add.reduce(est, axis=1)
    live = sums > 0
    if live.all():  # the usual case, in fewer steps (the same numbers)
        return np.divide(est, sums[:, None], out=est).reshape(current.shape), []
    cur = np.reshape(current, est.shape)
    out = np.empty_like(est)
    out[live] = est[live] / sums[live, None]
    out[~live] = cur[~live]
    return out.reshape(current.shape), np.flatnonzero(~live).tolist()


def _support(theta: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    return (theta > 0) | (alpha != 1.0)


class DirichletRows:
    r"""A block of categorical rows (a vector, or a matrix of rows) with a Dirichlet prior.

    The conjugate block behind the initial distribution, every transition row and
    categorical emissions; the module docstring (:mod:`hiddenstate.families.dirichlet`)
    gives the MAP estimate, the log prior and the variational updates.

    Parameters
    ----------
    key : str
        The parameter's name (``"startprob"``, ``"transmat"``, ``"emissionprob"``).
    letter : str
        Its hmmlearn flag (``"s"``, ``"t"``, ``"e"``).
    prior : float or array-like, default=1.0
        The Dirichlet :math:`\alpha`, a scalar or an array broadcastable to the rows.
    fixed : ndarray or None, default=None
        Fixed entries (NaN: free), shaped like the rows: every mode keeps them and
        estimates the free entries of each row under the constraint that it sums to one
        (:mod:`hiddenstate.families.fixed`).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families import DirichletRows
    >>> rows = DirichletRows("transmat", "t", prior=2.0)
    >>> theta = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> rows.mstep(theta, np.array([[8.0, 2.0], [1.0, 3.0]]), which="t")[0].round(3)
    array([[0.75 , 0.25 ],
           [0.333, 0.667]])
    """

    def __init__(self, key: str, letter: str, prior=1.0, fixed: np.ndarray | None = None):
        self.key = key
        self.letter = letter
        self.prior = prior
        self.fixed = fixed

    def _alpha(self, like: np.ndarray) -> np.ndarray:
        return np.broadcast_to(np.asarray(self.prior, dtype=np.float64), like.shape)

    def merge_statistics(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Combine the counts of two disjoint data sets: their sum.

        Parameters
        ----------
        a, b : ndarray
            The counts.

        Returns
        -------
        ndarray
            ``a + b``.
        """
        return a + b

    # -- point estimates ------------------------------------------------------------------------
    def mstep(self, theta, counts, which):
        """Estimate the rows from counts (:func:`estimate_rows` under the prior).

        Parameters
        ----------
        theta : ndarray
            The current rows.
        counts : ndarray
            The expected counts.
        which : str
            The hmmlearn letters to update; without this block's letter the rows are kept.

        Returns
        -------
        rows : ndarray
            The new rows.
        kept : list of int
            The rows without mass, which kept their value.
        """
        if self.letter not in which:
            return theta, []
        if self.fixed is not None:
            return fixed_rows.mstep_rows(theta, counts, self._alpha(theta), self.fixed)
        return estimate_rows(counts, theta, self.prior)

    def log_prior(self, theta) -> float:
        r"""Compute the Dirichlet log density of the rows.

        :math:`\sum_w (\alpha_w - 1)\log\theta_w - \log B(\alpha)` over each row's
        support; 0 for the flat prior (a constant, left out).

        Parameters
        ----------
        theta : ndarray
            The rows.

        Returns
        -------
        float
            The log density summed over the rows.
        """
        theta = np.asarray(theta, dtype=np.float64)
        alpha = self._alpha(theta)
        if self.fixed is not None:
            return fixed_rows.log_prior_rows(theta, alpha, self.fixed)
        if np.all(alpha == 1.0):
            return 0.0  # flat prior: a constant, left out
        s = _support(theta, alpha)  # every row at once (rows along the last axis)
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.where(s, (alpha - 1.0) * np.log(np.where(s, theta, 1.0)), 0.0)
            norm = (np.sum(np.where(s, gammaln(np.where(s, alpha, 1.0)), 0.0), axis=-1)
                    - gammaln(np.sum(np.where(s, alpha, 0.0), axis=-1)))
        return float(np.sum(logs) - np.sum(norm))

    # -- variational Bayes ----------------------------------------------------------------------
    def vb_init(self, theta, n_virtual: float) -> np.ndarray:
        r"""Build the variational posterior centred on ``theta``.

        As if estimated from ``n_virtual`` observations per row: :math:`\alpha + n\,\theta`.

        Parameters
        ----------
        theta : ndarray
            The rows.
        n_virtual : float
            The number of pseudo-observations per state.

        Returns
        -------
        ndarray
            The posterior's Dirichlet parameters, shaped like ``theta``.
        """
        q = self._alpha(theta) + n_virtual * np.asarray(theta)
        return q if self.fixed is None else fixed_rows.vb_posterior_rows(q, self.fixed)

    def vb_update(self, q, counts, which):
        r"""Update the variational posterior: :math:`\hat\alpha = \alpha + n`.

        Parameters
        ----------
        q : ndarray
            The posterior's Dirichlet parameters.
        counts : ndarray
            The expected counts.
        which : str
            The hmmlearn letters to update; without this block's letter ``q`` is kept.

        Returns
        -------
        ndarray
            The new Dirichlet parameters.
        """
        if self.letter not in which:
            return q
        q = self._alpha(q) + counts
        return q if self.fixed is None else fixed_rows.vb_posterior_rows(q, self.fixed)

    def vb_expected(self, q) -> np.ndarray:
        r"""Return :math:`\exp E_q[\log\theta]`, what the E-step uses.

        :math:`\tilde\theta_w = \exp(\psi(\hat\alpha_w) - \psi(\sum_v \hat\alpha_v))`: the rows
        sum to less than one.

        Parameters
        ----------
        q : ndarray
            The posterior's Dirichlet parameters.

        Returns
        -------
        ndarray
            The sub-normalised rows (0 where ``q`` is 0).
        """
        if self.fixed is not None:
            return fixed_rows.vb_expected_rows(q, self.fixed)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.exp(digamma(q) - digamma(q.sum(axis=-1, keepdims=True)))
        return np.where(q > 0, out, 0.0)

    def vb_kl(self, q) -> float:
        """Compute KL(Dir(q) || Dir(prior)), summed over the rows.

        Entries with q = 0 are excluded; every row at once (rows along the last axis).

        Parameters
        ----------
        q : ndarray
            The posterior's Dirichlet parameters.

        Returns
        -------
        float
            The divergence.
        """
        q = np.asarray(q, dtype=np.float64)
        alpha = self._alpha(q)
        if self.fixed is not None:
            return fixed_rows.vb_kl_rows(q, alpha, self.fixed)
        s = q > 0
        a_hat = np.where(s, q, 1.0)  # placeholders outside the support, masked below
        a = np.where(s, alpha, 1.0)
        a0 = np.sum(np.where(s, q, 0.0), axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            per_entry = np.where(s, -gammaln(a_hat) + gammaln(a)
                                 + (a_hat - a) * (digamma(a_hat) - digamma(a0)[..., None]), 0.0)
            rows = (gammaln(a0) - gammaln(np.sum(np.where(s, alpha, 0.0), axis=-1))
                    + np.sum(per_entry, axis=-1))
        return float(np.sum(rows))

    def vb_mean(self, q) -> np.ndarray:
        r"""Return the posterior mean rows :math:`\hat\alpha / \sum \hat\alpha`.

        Parameters
        ----------
        q : ndarray
            The posterior's Dirichlet parameters.

        Returns
        -------
        ndarray
            The rows.
        """
        if self.fixed is not None:
            return fixed_rows.vb_mean_rows(q, self.fixed)
        sums = q.sum(axis=-1, keepdims=True)
        return q / sums

    # -- Gibbs sampling -------------------------------------------------------------------------
    def _posterior_alpha(self, theta, counts) -> np.ndarray:
        """:math:`\alpha + n` on the support of ``theta`` (its zeros are structural), 0
        elsewhere; a proper prior is needed wherever the support has no count."""
        theta = np.asarray(theta, dtype=np.float64)
        alpha = np.where(theta > 0, self._alpha(theta) + counts, 0.0)
        if np.any((theta > 0) & ~(alpha > 0)):
            raise InvalidInputError(
                f"{self.key}: learn='gibbs' needs Dirichlet concentrations > 0 (a proper "
                f"prior) wherever the parameter may be non-zero; got {self.prior!r:.60}")
        return alpha

    def sample_posterior(self, theta, counts, which, rng):
        r"""Draw the rows from their Dirichlet posterior :math:`\mathrm{Dir}(\alpha + n)`.

        Zeros of ``theta`` are structural and stay zero (as in :meth:`mstep`); see
        :func:`~.posterior_draws.dirichlet_rows`. With fixed entries, the free part of each
        row renormalised, :math:`\phi = \theta_{\bar F}/(1 - m)`, is drawn from
        :math:`\mathrm{Dir}(\alpha_{\bar F} + n_{\bar F})` (the prior of
        :mod:`hiddenstate.families.fixed`) and the fixed entries are kept.

        Parameters
        ----------
        theta : ndarray
            The current rows.
        counts : ndarray
            The counts of one draw of the hidden structure.
        which : str
            The hmmlearn letters to draw; without this block's letter the rows are kept.
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        ndarray
            The drawn rows.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the prior is not proper where a row may be non-zero.

        Examples
        --------
        >>> import numpy as np
        >>> from hiddenstate.families import DirichletRows
        >>> rows = DirichletRows("transmat", "t", prior=1.0)
        >>> draw = rows.sample_posterior(np.array([[0.5, 0.5], [1.0, 0.0]]),
        ...                              np.array([[3.0, 1.0], [2.0, 0.0]]), "t",
        ...                              np.random.default_rng(0))
        >>> draw.sum(axis=1), draw[1]
        (array([1., 1.]), array([1., 0.]))
        """
        if self.letter not in which:
            return theta
        if self.fixed is None:
            return dirichlet_rows(self._posterior_alpha(theta, counts), rng)
        # fixed entries (hiddenstate.families.fixed): the free part of each row, phi =
        # theta_free / (1 - m), is Dir(alpha_free + n_free); a row fixed whole is kept
        theta = np.asarray(theta, dtype=np.float64)
        free = np.isnan(self.fixed)
        alpha = np.where(free, self._posterior_alpha(theta, counts), 0.0)
        mass = np.where(free, 0.0, self.fixed).sum(axis=-1, keepdims=True)
        live = alpha.sum(axis=-1, keepdims=True) > 0
        phi = dirichlet_rows(np.where(live, alpha, 1.0), rng)
        return np.where(free, np.where(live, (1.0 - mass) * phi, theta), self.fixed)


class SparseDirichletRows(DirichletRows):
    """:class:`DirichletRows` for a transition matrix stored as its allowed entries
    (:class:`~hiddenstate.inference.Transitions`; parameters, counts and ``q`` are
    ``(nnz,)`` vectors): the same MAP / VB updates row by row (``vb_init`` and ``vb_update``
    are the dense ones, entry by entry), never touching the entries
    that are not allowed, so they stay exactly zero in every mode. ``prior``: a scalar or a
    ``(K, K)`` array (its allowed entries are used)."""

    def __init__(self, key: str, letter: str, prior, transitions,
                 fixed: np.ndarray | None = None):
        super().__init__(key, letter, prior)
        self.transitions = transitions
        # fixed entries (a (K, K) array, NaN: free): every method then works on the dense
        # rows (the allowed entries are gathered back), with 1 as the prior elsewhere
        self.dense_fixed = fixed

    def _dense_rows(self) -> DirichletRows:
        prior = np.broadcast_to(np.asarray(self.prior, dtype=np.float64),
                                (self.transitions.n_states,) * 2)
        return DirichletRows(self.key, self.letter,
                             np.where(self.transitions.mask(), prior, 1.0), self.dense_fixed)

    def _via_dense(self, method: str, *arrays, **kw):
        rows = self._dense_rows()
        out = getattr(rows, method)(*(self.transitions.dense(a) for a in arrays), **kw)
        if isinstance(out, tuple):
            return (self.transitions.gather(out[0]),) + out[1:]
        return self.transitions.gather(out) if isinstance(out, np.ndarray) else out

    def _alpha(self, like: np.ndarray) -> np.ndarray:
        prior = np.asarray(self.prior, dtype=np.float64)
        if prior.ndim == 0:
            return np.broadcast_to(prior, like.shape)
        full = np.broadcast_to(prior, (self.transitions.n_states,) * 2)
        return self.transitions.gather(full)

    def _per_entry(self, per_row: np.ndarray) -> np.ndarray:
        return per_row[self.transitions.rows]

    def mstep(self, theta, counts, which):
        if self.letter not in which:
            return theta, []
        if self.dense_fixed is not None:
            return self._via_dense("mstep", theta, counts, which=which)
        est = np.maximum(counts + self._alpha(theta) - 1.0, 0.0)
        est = np.where(theta == 0, 0.0, est)   # structural zeros stay zero
        sums = self.transitions.row_sums(est)
        live = sums > 0
        out = np.where(self._per_entry(live), est / self._per_entry(np.where(live, sums, 1.0)),
                       theta)
        return out, np.flatnonzero(~live).tolist()

    def log_prior(self, theta) -> float:
        if self.dense_fixed is not None:
            return self._via_dense("log_prior", theta)
        alpha = self._alpha(theta)
        if np.all(alpha == 1.0):
            return 0.0
        s = (theta > 0) | (alpha != 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(s, (alpha - 1.0) * np.log(np.where(s, theta, 1.0)), 0.0)
        a = np.where(s, alpha, 0.0)
        norm = (self.transitions.row_sums(np.where(s, gammaln(np.where(s, alpha, 1.0)), 0.0))
                - gammaln(self.transitions.row_sums(a)))
        return float(terms.sum() - norm.sum())

    def vb_init(self, theta, n_virtual: float) -> np.ndarray:
        if self.dense_fixed is not None:
            return self._via_dense("vb_init", theta, n_virtual=n_virtual)
        return super().vb_init(theta, n_virtual)

    def vb_update(self, q, counts, which):
        if self.dense_fixed is not None and self.letter in which:
            return self._via_dense("vb_update", q, counts, which=which)
        return super().vb_update(q, counts, which)

    def vb_expected(self, q) -> np.ndarray:
        if self.dense_fixed is not None:
            return self._via_dense("vb_expected", q)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.exp(digamma(q) - self._per_entry(digamma(self.transitions.row_sums(q))))
        return np.where(q > 0, out, 0.0)

    def vb_kl(self, q) -> float:
        if self.dense_fixed is not None:
            return self._via_dense("vb_kl", q)
        alpha = self._alpha(q)
        s = q > 0
        a_hat, a = np.where(s, q, 1.0), np.where(s, alpha, 1.0)
        row = self.transitions.row_sums
        a0, b0 = row(np.where(s, q, 0.0)), row(np.where(s, alpha, 0.0))
        terms = np.where(s, -gammaln(a_hat) + gammaln(a)
                         + (a_hat - a) * (digamma(a_hat) - self._per_entry(digamma(a0))), 0.0)
        return float(terms.sum() + np.sum(gammaln(a0) - gammaln(b0)))

    def vb_mean(self, q) -> np.ndarray:
        if self.dense_fixed is not None:
            return self._via_dense("vb_mean", q)
        return q / self._per_entry(self.transitions.row_sums(q))

    def sample_posterior(self, theta, counts, which, rng):
        if self.letter not in which:
            return theta
        if self.dense_fixed is not None:
            return self._via_dense("sample_posterior", theta, counts, which=which, rng=rng)
        alpha = self._posterior_alpha(theta, counts)
        logg = log_gamma_draws(alpha, rng)
        rows = self.transitions.rows
        top = np.full(self.transitions.n_states, -np.inf)
        np.maximum.at(top, rows, logg)
        w = np.exp(logg - top[rows])
        out = w / self._per_entry(self.transitions.row_sums(w))
        return np.where(alpha > 0, np.maximum(out, TINY), 0.0)


class DirichletEmissionRows:
    """The M-step, prior and VB methods of an emission family whose parameter is
    ``emissionprob`` (K, W), one :class:`DirichletRows` row per state (``self.rows``),
    estimated from the statistic ``stats[self.counts_key]`` (K, W): the categorical
    (``"counts"``) and multinomial (``"obs"``) families."""

    counts_key = "counts"
    fixable = ("emissionprob",)

    def check_fixed(self, key, value):
        from .fixed import as_fixed, check_fixed_rows

        arr = as_fixed(value, (self.n_states, self.n_features), key)
        if arr is None:
            return None
        return check_fixed_rows(arr, key)

    def fix(self, fixed):
        """Fix entries of ``emissionprob``; the rows renormalise the free entries.

        See :meth:`hiddenstate.families.EmissionFamily.fix` and
        :mod:`hiddenstate.families.fixed`.

        Parameters
        ----------
        fixed : dict of str to array-like
            ``{"emissionprob": (K, W) array}``, NaN for the free entries.
        """
        super().fix(fixed)
        self.rows = DirichletRows(self.rows.key, self.rows.letter, self.rows.prior,
                                  self.fixed.get("emissionprob"))

    def merge_statistics(self, a, b):
        """Combine the posterior-weighted counts (and masses) of two disjoint data sets.

        Parameters
        ----------
        a, b : dict
            The statistics of two disjoint sets of observations.

        Returns
        -------
        dict
            The sums, key by key.
        """
        return {key: a[key] + b[key] for key in a}

    def mstep(self, params, stats, which):
        B, dead = self.rows.mstep(params["emissionprob"], stats[self.counts_key], which)
        return {"emissionprob": B}, dead

    def log_prior(self, params):
        return self.rows.log_prior(params["emissionprob"])

    def vb_init(self, params, n_virtual):
        """Build the variational posterior centred on ``params``.

        With ``n_virtual`` pseudo-counts per state (see :meth:`DirichletRows.vb_init`).

        Parameters
        ----------
        params : dict of str to ndarray
            The emission parameters, keyed by the estimator's attribute names without the
            trailing underscore (``"emissionprob"``, ``"means"``, ``"covars"``, ...).
        n_virtual : float
            The number of pseudo-observations per state.

        Returns
        -------
        dict
            The variational posterior's hyper-parameters.
        """
        return {"emissionprob": self.rows.vb_init(params["emissionprob"], n_virtual)}

    def vb_update(self, q, stats, which):
        return {"emissionprob": self.rows.vb_update(q["emissionprob"], stats[self.counts_key],
                                                    which)}

    def vb_expected(self, q):
        return {"emissionprob": self.rows.vb_expected(q["emissionprob"])}

    def vb_kl(self, q):
        return self.rows.vb_kl(q["emissionprob"])

    def vb_mean(self, q):
        return {"emissionprob": self.rows.vb_mean(q["emissionprob"])}

    def sample_posterior(self, params, stats, which, rng):
        """Draw ``emissionprob`` from its Dirichlet posterior.

        Each state's row from :math:`\\mathrm{Dir}(\\alpha + n_k)` (see
        :meth:`DirichletRows.sample_posterior`).

        Parameters
        ----------
        params : dict of str to ndarray
            ``emissionprob`` (kept when ``"e"`` is not in ``which``).
        stats : dict
            The statistics of one draw of the hidden states.
        which : str
            The hmmlearn letters to draw.
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        dict
            ``emissionprob``.
        """
        return {"emissionprob": self.rows.sample_posterior(
            params["emissionprob"], stats[self.counts_key], which, rng)}

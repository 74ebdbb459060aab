r"""The sticky HDP prior on an HMM's transition matrix, in its weak-limit approximation
(Fox, Sudderth, Jordan & Willsky 2011, "A sticky HDP-HMM with application to speaker
diarization", Ann. Appl. Stat. 5(2A); sec. 3 and the appendix), as a parameter block for
Gibbs sampling (:class:`StickyHDPTransitions`).

With truncation :math:`L` (the HMM's ``n_states``):

.. math::
    \beta \sim \mathrm{Dir}(\gamma/L, \dots, \gamma/L), \qquad
    \pi_j \mid \beta \sim \mathrm{Dir}(\alpha\beta + \kappa e_j), \quad j = 1..L,

so every row shares the global state weights :math:`\beta` (few states are used when
:math:`\gamma` is small) and :math:`\kappa` adds mass to self-transitions (stickiness).
The concentrations are sampled under :math:`\alpha + \kappa \sim \mathrm{Gamma}(a, b)`,
:math:`\rho = \kappa/(\alpha + \kappa) \sim \mathrm{Beta}(c, d)` and
:math:`\gamma \sim \mathrm{Gamma}(a_\gamma, b_\gamma)` (shape, rate), or held at given values.

**One draw given the transition counts** :math:`n_{jk}` of the sampled paths
(:meth:`StickyHDPTransitions.sample_posterior`; a partially collapsed Gibbs step, van Dyk
& Park 2008: :math:`\pi` is integrated out of steps 1-4 and drawn last, :math:`\beta` out
of step 3):

1. table counts :math:`m_{jk} \sim \mathrm{CRT}(n_{jk}, \alpha\beta_k + \kappa\delta_{jk})`
   (a sum of Bernoullis :math:`(\alpha\beta_k + \kappa\delta_{jk})/(i + \alpha\beta_k +
   \kappa\delta_{jk})`, :math:`i = 0..n_{jk}-1`), override counts :math:`w_j \sim
   \mathrm{Binomial}(m_{jj}, \rho/(\rho + (1-\rho)\beta_j))` and :math:`\bar m_{jk} =
   m_{jk} - w_j\delta_{jk}` (Fox et al., appendix, eqs. for :math:`m`, :math:`w`);
2. :math:`\alpha + \kappa` by the auxiliary variables of Escobar & West (1995) per row
   (:math:`r_j \sim \mathrm{Beta}(\alpha + \kappa + 1, n_{j\cdot})`, :math:`s_j \sim
   \mathrm{Bernoulli}(n_{j\cdot}/(n_{j\cdot} + \alpha + \kappa))`, then
   :math:`\mathrm{Gamma}(a + m_{\cdot\cdot} - \sum s_j, b - \sum \log r_j)`), and
   :math:`\rho \sim \mathrm{Beta}(c + \sum_j w_j, d + m_{\cdot\cdot} - \sum_j w_j)`;
3. :math:`\gamma` given :math:`\bar m` with :math:`\beta` integrated out: top-level table
   counts :math:`t_k \sim \mathrm{CRT}(\bar m_{\cdot k}, \gamma/L)`, :math:`\eta \sim
   \mathrm{Beta}(\gamma + 1, \bar m_{\cdot\cdot})` and the two-component Gamma mixture of
   Escobar & West with :math:`t_{\cdot}` tables: exact for the finite Dirichlet, where
   Fox et al. use the number of used states of the infinite limit;
4. :math:`\beta \sim \mathrm{Dir}(\gamma/L + \bar m_{\cdot k})`;
5. :math:`\pi_j \sim \mathrm{Dir}(\alpha\beta + \kappa e_j + n_{j\cdot})`.

The block's parameters are a dict: ``transmat`` (L, L), ``beta`` (L,), ``alpha``,
``kappa``, ``gamma``; its statistics ``{"trans": n, "start": start counts}``, from which
it also reports the number of states the paths use (``n_states_used``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from ..errors import InvalidInputError, NumericalError
from .posterior_draws import dirichlet_rows, gamma_rates, log_gamma_draws

#: the concentrations' hyper-priors and fixed values (``learner_options`` of a sticky
#: HDP-HMM): Gamma(shape, rate) on alpha + kappa and on gamma, Beta on rho = kappa / (alpha +
#: kappa); None: sampled. Fox et al. (2011), sec. 7, use Gamma(1, 0.01) on both
#: concentrations and Beta(10, 1) on rho; with the weak limit's finite truncation a vague
#: prior on gamma (mean 100) keeps the global weights near uniform and the sampler opens
#: states for a few observations, so gamma's default is Gamma(1, 1)
#: (experiments/gibbs_number_of_states.py). ``min_share``: the share of the observations a
#: state must hold in a draw to count as used (``n_states_used``; any visit counts in
#: ``n_states_visited``).
HDP_OPTIONS = {"alpha": None, "kappa": None, "gamma": None,
               "alpha_kappa_prior": (1.0, 0.01), "rho_prior": (10.0, 1.0),
               "gamma_prior": (1.0, 1.0), "min_share": 0.01}


def crt(n: np.ndarray, conc: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    r"""Chinese-restaurant-table counts: for each entry, the number of tables among ``n``
    customers at concentration ``conc``, :math:`\sum_{i<n}\mathrm{Bernoulli}(c/(i + c))`.

    Parameters
    ----------
    n : ndarray of int
        Customers (>= 0).
    conc : ndarray
        Concentrations (> 0 where ``n > 0``), broadcastable to ``n``.
    rng : numpy.random.Generator
        The generator.

    Returns
    -------
    ndarray of int64
        The table counts (0 where ``n`` is 0; at least 1 elsewhere).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families.hdp import crt
    >>> draws = crt(np.full(20000, 10), np.full(20000, 1.0), np.random.default_rng(0))
    >>> round(float(draws.mean()), 2)   # E = sum_{i<10} 1/(i+1) = 2.93
    2.93
    """
    if np.any(np.asarray(n, dtype=np.float64) > LARGE_CRT):
        n = np.asarray(n, dtype=np.float64)
        conc = np.broadcast_to(np.asarray(conc, dtype=np.float64), n.shape)
        small = n <= LARGE_CRT
        out = np.zeros(n.shape, dtype=np.int64)
        out[small] = crt(n[small], conc[small], rng)
        for idx in zip(*np.nonzero(~small), strict=True):
            out[idx] = _crt_large(float(n[idx]), float(conc[idx]), rng)
        return out
    n = np.asarray(n, dtype=np.int64)
    conc = np.broadcast_to(np.asarray(conc, dtype=np.float64), n.shape)
    out = np.zeros(n.shape, dtype=np.int64)
    flat_n, flat_c, flat_out = n.ravel(), conc.ravel(), out.reshape(-1)
    live = np.flatnonzero(flat_n > 0)
    if not len(live):
        return out
    counts = flat_n[live]
    owner = np.repeat(np.arange(len(live)), counts)
    i = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    c = flat_c[live][owner]
    hits = rng.random(len(owner)) < c / (i + c)
    flat_out[live] = np.bincount(owner, weights=hits, minlength=len(live)).astype(np.int64)
    return out


#: the count above which :func:`crt` jumps from one new table to the next instead of
#: drawing a Bernoulli per customer
LARGE_CRT = 10**6


def _crt_large(n: float, c: float, rng: np.random.Generator) -> int:
    r"""CRT(n, c) for a large ``n`` (up to 1e300), by jumping from one new table to the
    next: no new table among customers :math:`i..k-1` has probability
    :math:`\prod_{t=i}^{k-1} t/(t+c) = B(k, c)/B(i, c)`, so the next table is at the
    smallest :math:`k \ge i` with :math:`\log B(k + 1, c) < \log B(i, c) + \log U`
    (bisection on :math:`k`, geometric where the range is wide; beyond 2**53 customers the
    positions are floats, where two tables at one position have probability below
    1e-15). Its cost grows with the number of tables, about :math:`c \log n`."""
    from scipy.special import betaln

    count, i = 1, 1.0                       # customer 0 opens the first table
    last = n - 1.0
    while i <= last:
        target = float(betaln(i, c)) + np.log(1.0 - rng.random())
        if betaln(last + 1.0, c) >= target:  # no table among customers i..n-1
            break
        lo, hi = i, last                     # f(lo) may hold; f(hi) < target holds
        if betaln(lo + 1.0, c) < target:
            hi = lo
        while hi - lo > 1.0 and hi > lo * (1.0 + 1e-15):
            mid = np.floor(np.exp(0.5 * (np.log(lo) + np.log(hi))) if hi > 4.0 * lo
                           else lo + 0.5 * (hi - lo))
            mid = min(max(mid, lo + 1.0), hi - 1.0) if hi - lo >= 2.0 else hi
            if betaln(mid + 1.0, c) < target:
                hi = mid
            else:
                lo = mid
        count += 1
        i = hi + 1.0
    return count


def _gammaln(a):
    """log Gamma(a), also for subnormal a (where scipy returns inf; log Gamma(a) = -log a -
    0.577 a + O(a^2) there, so -log a is exact to rounding)."""
    a = np.asarray(a, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(a < 1e-300, -np.log(a), gammaln(np.maximum(a, 1e-300)))


def _gamma(shape: float, rate: float, rng) -> float:
    return float(gamma_rates(np.array(shape), np.array(rate), rng))


def sample_gamma(col: np.ndarray, gamma: float, prior: tuple, rng) -> float:
    r"""Step 3 of the module docstring: :math:`\gamma` given the column totals ``col`` of
    the table counts, :math:`\beta \sim \mathrm{Dir}(\gamma/L + \text{col})` integrated
    out (top-level tables, then the two-component Gamma mixture of Escobar & West 1995)
    under its Gamma (shape, rate) ``prior``."""
    L = len(col)
    a, b = prior
    M = int(col.sum())
    if M == 0:
        return _gamma(a, b, rng)
    t = int(crt(col, gamma / L, rng).sum())
    eta = rng.beta(gamma + 1.0, M)
    rate = b - np.log(eta)
    odds = (a + t - 1.0) / (M * rate)
    shape = a + t if rng.random() < odds / (1.0 + odds) else a + t - 1.0
    return _gamma(shape, rate, rng) if shape > 0 else _gamma(a + t, rate, rng)


def states_used(visits: np.ndarray, min_share: float) -> dict:
    """``n_states_visited`` (states with a visit) and ``n_states_used`` (those holding at
    least ``min_share`` of the visits) of one draw."""
    share = visits / max(float(visits.sum()), 1.0)
    return {"n_states_used": int(np.count_nonzero((visits > 0) & (share >= min_share))),
            "n_states_visited": int(np.count_nonzero(visits > 0))}


class StickyHDPTransitions:
    r"""The transition block of a sticky HDP-HMM (weak limit), for ``learn="gibbs"``.

    See the module docstring (:mod:`hiddenstate.families.hdp`) for the prior and the draw.

    Parameters
    ----------
    n_states : int
        The truncation :math:`L`.
    letter : str, default="t"
        The hmmlearn letter of the block.
    alpha, kappa, gamma : float or None, default=None
        Fixed concentrations (None: sampled); ``alpha`` and ``kappa`` are both fixed or both
        sampled.
    alpha_kappa_prior : tuple of float, default=(1.0, 0.01)
        Gamma (shape, rate) of :math:`\alpha + \kappa`.
    rho_prior : tuple of float, default=(10.0, 1.0)
        Beta of :math:`\rho = \kappa/(\alpha + \kappa)`.
    gamma_prior : tuple of float, default=(1.0, 1.0)
        Gamma (shape, rate) of :math:`\gamma`.
    min_share : float, default=0.01
        The share of the observations a state must hold in a draw to count as used
        (:meth:`sample_summary`).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families.hdp import StickyHDPTransitions
    >>> block = StickyHDPTransitions(4, alpha=1.0, kappa=5.0, gamma=1.0)
    >>> rng = np.random.default_rng(0)
    >>> params = block.initial(np.full((4, 4), 0.25))
    >>> counts = {"trans": np.diag([50.0, 30.0, 0.0, 0.0]), "start": np.array([1.0, 0, 0, 0])}
    >>> draw = block.sample_posterior(params, counts, "t", rng)
    >>> draw["transmat"].sum(axis=1).round(6), block.sample_summary(draw, counts)
    (array([1., 1., 1., 1.]), {'n_states_used': 2, 'n_states_visited': 2})
    """

    def __init__(self, n_states: int, letter: str = "t", alpha=None, kappa=None, gamma=None,
                 alpha_kappa_prior=(1.0, 0.01), rho_prior=(10.0, 1.0),
                 gamma_prior=(1.0, 1.0), min_share: float = 0.01):
        self.n_states = n_states
        self.min_share = float(min_share)
        self.letter = letter
        self.alpha, self.kappa, self.gamma = alpha, kappa, gamma
        self.alpha_kappa_prior = tuple(float(v) for v in alpha_kappa_prior)
        self.rho_prior = tuple(float(v) for v in rho_prior)
        self.gamma_prior = tuple(float(v) for v in gamma_prior)

    @staticmethod
    def check_options(options: dict) -> None:
        """Validate the HDP entries of ``learner_options`` (errors name the option)."""
        for name in ("alpha", "kappa", "gamma"):
            v = options.get(name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))
                                  or not v >= 0 or not np.isfinite(v)):
                raise InvalidInputError(
                    f"{name}: expected a concentration >= 0 or None (sampled), got {v!r:.40}")
        if (options.get("alpha") is None) != (options.get("kappa") is None):
            raise InvalidInputError(
                "kappa: alpha and kappa are sampled together (as alpha + kappa and rho = "
                "kappa / (alpha + kappa)); give both or neither")
        if options.get("alpha") is not None and options["alpha"] + options["kappa"] <= 0:
            raise InvalidInputError("alpha: alpha + kappa must be > 0")
        if options.get("gamma") is not None and options["gamma"] <= 0:
            raise InvalidInputError("gamma: expected a concentration > 0")
        share = options.get("min_share")
        if isinstance(share, bool) or not isinstance(share, (int, float)) \
                or not 0 <= share < 1:
            raise InvalidInputError(
                f"min_share: expected a share of the observations in [0, 1), got {share!r:.40}")
        for name in ("alpha_kappa_prior", "alpha_prior", "rho_prior", "gamma_prior"):
            if name not in options:
                continue
            v = options[name]
            try:
                a, b = (float(x) for x in v)
            except (TypeError, ValueError):
                raise InvalidInputError(
                    f"{name}: expected a pair of positive numbers, got {v!r:.40}") from None
            if not (a > 0 and b > 0 and np.isfinite(a) and np.isfinite(b)):
                raise InvalidInputError(
                    f"{name}: expected a pair of positive numbers (a proper prior), got "
                    f"{v!r:.40}")

    def initial(self, transmat: np.ndarray) -> dict:
        """The block's starting parameters around ``transmat``: uniform :math:`\\beta` and
        the concentrations at their fixed values or hyper-prior means.

        Parameters
        ----------
        transmat : ndarray of shape (L, L)
            The starting transition matrix.

        Returns
        -------
        dict
            ``transmat``, ``beta``, ``alpha``, ``kappa``, ``gamma``.
        """
        L = self.n_states
        if self.alpha is None:
            a, b = self.alpha_kappa_prior
            c, d = self.rho_prior
            total, rho = a / b, c / (c + d)
            alpha, kappa = (1 - rho) * total, rho * total
        else:
            alpha, kappa = float(self.alpha), float(self.kappa)
        gamma = (self.gamma_prior[0] / self.gamma_prior[1] if self.gamma is None
                 else float(self.gamma))
        return {"transmat": np.asarray(transmat, dtype=np.float64), "beta": np.full(L, 1 / L),
                "alpha": np.float64(alpha), "kappa": np.float64(kappa),
                "gamma": np.float64(gamma)}

    # -- what the generic learner asks of a block -----------------------------------------------
    def merge_statistics(self, a: dict, b: dict) -> dict:
        """Counts of two disjoint data sets: their sums."""
        return {key: a[key] + b[key] for key in a}

    def _row_alpha(self, params) -> np.ndarray:
        L = self.n_states
        return params["alpha"] * params["beta"][None, :] + params["kappa"] * np.eye(L)

    def log_prior(self, params) -> float:
        r""":math:`\log p(\pi \mid \beta, \alpha, \kappa) + \log p(\beta \mid \gamma)` plus
        the hyper-priors of the sampled concentrations (normalised densities)."""
        L = self.n_states
        pi, beta = params["transmat"], params["beta"]
        A = self._row_alpha(params)
        with np.errstate(divide="ignore"):
            total = float(np.sum(_gammaln(A.sum(axis=1)) - _gammaln(A).sum(axis=1)
                                 + ((A - 1) * np.log(pi)).sum(axis=1)))
            g = float(params["gamma"])
            total += float(_gammaln(g) - L * _gammaln(g / L)
                           + ((g / L - 1) * np.log(beta)).sum())
        if self.alpha is None:
            a, b = self.alpha_kappa_prior
            c, d = self.rho_prior
            s = float(params["alpha"] + params["kappa"])
            rho = float(params["kappa"]) / s
            total += (a - 1) * np.log(s) - b * s + (c - 1) * np.log(rho) \
                + (d - 1) * np.log1p(-rho)
        if self.gamma is None:
            a, b = self.gamma_prior
            total += (a - 1) * np.log(g) - b * g
        return total

    def sample_posterior(self, params, stats, which, rng):
        """One draw of the transition matrix, the global weights and the concentrations
        given the transition counts (steps 1-5 of the module docstring).

        Parameters
        ----------
        params : dict
            ``transmat``, ``beta``, ``alpha``, ``kappa``, ``gamma``.
        stats : dict
            ``trans`` (L, L) transition counts and ``start`` (L,) start counts of one draw
            of the paths.
        which : str
            The hmmlearn letters to draw; without this block's letter ``params`` is kept.
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        dict
            The drawn parameters.
        """
        if self.letter not in which:
            return params
        L = self.n_states
        n = np.rint(stats["trans"]).astype(np.int64)
        alpha, kappa = float(params["alpha"]), float(params["kappa"])
        gamma, beta = float(params["gamma"]), params["beta"]
        # 1. table counts and overrides
        m = crt(n, self._row_alpha(params), rng)
        rho = kappa / (alpha + kappa) if alpha + kappa > 0 else 0.0
        diag = np.diagonal(m)
        p_override = rho / (rho + (1.0 - rho) * beta) if rho > 0 else np.zeros(L)
        w = rng.binomial(diag, np.clip(p_override, 0.0, 1.0))
        mbar = m.copy()
        mbar[np.diag_indices(L)] -= w
        # 2. alpha + kappa and rho
        if self.alpha is None:
            a, b = self.alpha_kappa_prior
            c, d = self.rho_prior
            rows = n.sum(axis=1)
            live = rows > 0
            s = alpha + kappa
            r = rng.beta(s + 1.0, rows[live])
            flips = rng.random(int(live.sum())) < rows[live] / (rows[live] + s)
            s = _gamma(a + m.sum() - flips.sum(), b - np.log(r).sum(), rng)
            rho = rng.beta(c + w.sum(), d + m.sum() - w.sum())
            alpha, kappa = (1.0 - rho) * s, rho * s
        # 3. gamma, with beta integrated out
        col = mbar.sum(axis=0)
        if self.gamma is None:
            gamma = sample_gamma(col, gamma, self.gamma_prior, rng)
        # 4. beta and 5. the rows
        beta = dirichlet_rows(gamma / L + col, rng)
        new = {"beta": beta, "alpha": np.float64(alpha), "kappa": np.float64(kappa),
               "gamma": np.float64(gamma)}
        rows_alpha = alpha * beta[None, :] + kappa * np.eye(L) + stats["trans"]
        new["transmat"] = dirichlet_rows(rows_alpha, rng)
        return new

    def sample_summary(self, params, stats) -> dict:
        """The number of states the drawn paths visit (``n_states_visited``) and of those
        holding at least ``min_share`` of the observations (``n_states_used``): with a
        finite truncation the sampler keeps opening states for an observation or two, which
        it leaves again at the next sweeps; they are how it explores, not states of its
        explanation of the data."""
        return states_used(stats["trans"].sum(axis=0) + stats["start"], self.min_share)


#: the options of an HDP-HSMM (``hs.HSMM(transmat_prior="hdp")``'s ``learner_options``):
#: those of the sticky HDP without its stickiness (a segment's state never follows itself,
#: so there is no kappa); ``alpha_prior`` is the Gamma (shape, rate) of alpha. gamma's
#: hyper-prior is Gamma(2, 0.5) (mean 4), not the sticky HDP-HMM's Gamma(1, 1): its density
#: vanishes at 0, because at gamma below about 0.01 the global weights of unused states
#: underflow and the completion of a row's normaliser (``1 / (1 - beta_j)`` counts)
#: overflows (a NumericalError names gamma); on one-regime Gaussian data (300 to 600
#: steps, truncation 6) Gamma(1, 1) stopped 4 of 7 runs, Gamma(2, 0.5) none of 8
HDP_HSMM_OPTIONS = {"alpha": None, "gamma": None, "alpha_prior": (1.0, 0.01),
                    "gamma_prior": (2.0, 0.5), "min_share": 0.01}


class HDPSegmentTransitions:
    r"""The transition block of an HDP-HSMM (Johnson & Willsky 2013, "Bayesian
    nonparametric hidden semi-Markov models", JMLR 14), weak limit, for ``learn="gibbs"``.

    With truncation :math:`L`, :math:`\beta \sim \mathrm{Dir}(\gamma/L, \dots)` and rows
    :math:`\pi_j \mid \beta \sim \mathrm{Dir}(\alpha\beta)` as in
    :class:`StickyHDPTransitions` with :math:`\kappa = 0`; the chain between segments moves
    by the rows without their diagonal, renormalised, :math:`\bar\pi_{jk} = \pi_{jk}/(1 -
    \pi_{jj})`, whose law is :math:`\bar\pi_j \mid \beta \sim \mathrm{Dir}(\alpha
    \beta_{-j})` (a Dirichlet with one entry removed, renormalised). The block holds
    :math:`\bar\pi` (``transmat``, zero diagonal) and never represents :math:`\pi_{jj}`.

    **One draw given the moves** :math:`n_{jk}` (:math:`k \ne j`) between segments, with
    :math:`\bar\pi` integrated out of steps 1-4 and drawn last (a partially collapsed
    Gibbs step, as the sticky block's). The marginal likelihood of row :math:`j` is
    :math:`\frac{\Gamma(\alpha(1-\beta_j))}{\Gamma(\alpha(1-\beta_j) + n_{j\cdot})}
    \prod_{k\ne j}\frac{\Gamma(\alpha\beta_k + n_{jk})}{\Gamma(\alpha\beta_k)}`:

    1. table counts :math:`m_{jk} \sim \mathrm{CRT}(n_{jk}, \alpha\beta_k)` (the product
       over :math:`k` becomes :math:`\prod (\alpha\beta_k)^{m_{jk}}`), and for each row
       with moves :math:`r_j \sim \mathrm{Beta}(\alpha(1 - \beta_j), n_{j\cdot})` (the
       normaliser becomes :math:`r_j^{\alpha(1-\beta_j)}`, Escobar & West 1995), drawn in
       logs;
    2. :math:`r_j^{-\alpha\beta_j} = e^{\alpha\beta_j \ell_j}`, :math:`\ell_j = -\log r_j`,
       is expanded as a Poisson series: :math:`t_j \sim \mathrm{Poisson}(\alpha\beta_j
       \ell_j)`, after which :math:`\beta` sees the counts :math:`m_{\cdot k} + t_k`;
    3. :math:`\alpha \sim \mathrm{Gamma}(a + m_{\cdot\cdot} + t_\cdot, b + \sum_j \ell_j)`
       (exact: :math:`\alpha` enters as :math:`\alpha^{m + t} r^{\alpha}`);
    4. :math:`\gamma` with :math:`\beta` integrated out (:func:`sample_gamma`, the sticky
       block's step 3), then :math:`\beta \sim \mathrm{Dir}(\gamma/L + m_{\cdot k} + t_k)`;
    5. :math:`\bar\pi_j \sim \mathrm{Dir}(\alpha\beta_{-j} + n_{j,-j})`.

    This replaces the completion of :math:`\pi_{jj}` by its self-transitions
    (:math:`s_j \sim \mathrm{NegBinomial}(n_{j\cdot}, 1 - \pi_{jj})`, Johnson & Willsky,
    sec. 4.2), which is exact too but not in floating point: with :math:`\alpha(1 -
    \beta_j)` of 0.01, :math:`1 - \pi_{jj}` is often below 1e-50 and :math:`s_j` above
    1e50. Here every count is of the order of :math:`1/(1 - \beta_j)`.

    **Limitation (mixing).** That count, :math:`t_j`, feeds :math:`\beta_j` back: once a
    state's global weight nears 1, :math:`\log(1 - \beta_j)` moves as a random walk with
    little drift (the exact posterior puts almost no mass there, but the chain leaves
    slowly), and a chain that reaches the float64 floor stops with a
    :class:`~hiddenstate.errors.NumericalError`. It happened in 1 of 6 runs of 900 sweeps
    on sampled data (``tests/test_gibbs_hsmm.py``, marked); J&W's completion has
    :math:`\log s_j` tables instead and would not feed back so, at the cost of table
    counts of 1e50 customers.

    Parameters
    ----------
    n_states : int
        The truncation :math:`L`.
    letter : str, default="t"
        The hmmlearn letter of the block.
    alpha, gamma : float or None, default=None
        Fixed concentrations (None: sampled).
    alpha_prior : tuple of float, default=(1.0, 0.01)
        Gamma (shape, rate) of :math:`\alpha`.
    gamma_prior : tuple of float, default=(2.0, 0.5)
        Gamma (shape, rate) of :math:`\gamma` (see :data:`HDP_HSMM_OPTIONS`).
    min_share : float, default=0.01
        The share of the observations a state must hold in a draw to count as used
        (:meth:`sample_summary`: the statistics carry ``visits``, the time steps of each
        state).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.families.hdp import HDPSegmentTransitions
    >>> block = HDPSegmentTransitions(3, alpha=2.0, gamma=1.0)
    >>> params = block.initial(np.array([[0.0, 0.5, 0.5], [0.5, 0.0, 0.5], [0.5, 0.5, 0.0]]))
    >>> stats = {"trans": np.array([[0.0, 4, 0], [3, 0, 0], [0, 0, 0]]),
    ...          "start": np.array([1.0, 0, 0]), "visits": np.array([40.0, 30, 0])}
    >>> draw = block.sample_posterior(params, stats, "t", np.random.default_rng(0))
    >>> draw["transmat"].sum(axis=1), np.diag(draw["transmat"])
    (array([1., 1., 1.]), array([0., 0., 0.]))
    >>> block.sample_summary(draw, stats)
    {'n_states_used': 2, 'n_states_visited': 2}
    """

    def __init__(self, n_states: int, letter: str = "t", alpha=None, gamma=None,
                 alpha_prior=(1.0, 0.01), gamma_prior=(2.0, 0.5), min_share: float = 0.01):
        self.n_states = n_states
        self.letter = letter
        self.alpha, self.gamma = alpha, gamma
        self.alpha_prior = tuple(float(v) for v in alpha_prior)
        self.gamma_prior = tuple(float(v) for v in gamma_prior)
        self.min_share = float(min_share)

    @staticmethod
    def check_options(options: dict) -> None:
        """Validate the entries of ``learner_options`` (:data:`HDP_HSMM_OPTIONS`; errors
        name the option): those of :meth:`StickyHDPTransitions.check_options`."""
        StickyHDPTransitions.check_options(
            {"alpha": options["alpha"], "gamma": options["gamma"],
             "kappa": None if options["alpha"] is None else 0.0,
             "alpha_prior": options["alpha_prior"], "gamma_prior": options["gamma_prior"],
             "min_share": options["min_share"]})

    def initial(self, transmat: np.ndarray) -> dict:
        """The starting parameters: ``transmat`` (the transitions between segments, zero
        diagonal), uniform :math:`\\beta`, the concentrations at their fixed values or
        hyper-prior means (``kappa`` is 0).

        Parameters
        ----------
        transmat : ndarray of shape (L, L)
            Transitions between segments.

        Returns
        -------
        dict
            ``transmat``, ``beta``, ``alpha``, ``kappa``, ``gamma``.
        """
        L = self.n_states
        alpha = (self.alpha_prior[0] / self.alpha_prior[1] if self.alpha is None
                 else float(self.alpha))
        gamma = (self.gamma_prior[0] / self.gamma_prior[1] if self.gamma is None
                 else float(self.gamma))
        return {"transmat": np.asarray(transmat, dtype=np.float64),
                "beta": np.full(L, 1 / L), "alpha": np.float64(alpha),
                "kappa": np.float64(0.0), "gamma": np.float64(gamma)}

    def merge_statistics(self, a: dict, b: dict) -> dict:
        """Counts of two disjoint data sets: their sums."""
        return {key: a[key] + b[key] for key in a}

    def _row_alpha(self, alpha: float, beta: np.ndarray) -> np.ndarray:
        return alpha * beta[None, :] * (1.0 - np.eye(self.n_states))

    def log_prior(self, params) -> float:
        r""":math:`\sum_j \log \mathrm{Dir}(\bar\pi_j; \alpha\beta_{-j}) + \log
        \mathrm{Dir}(\beta; \gamma/L)` plus the hyper-priors of the sampled concentrations
        (normalised densities)."""
        L = self.n_states
        pi, beta = params["transmat"], params["beta"]
        alpha, g = float(params["alpha"]), float(params["gamma"])
        A = self._row_alpha(alpha, beta)
        off = A > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(off, (A - 1.0) * np.log(np.where(off, pi, 1.0))
                             - _gammaln(np.where(off, A, 1.0)), 0.0)
            total = float(np.sum(_gammaln(A.sum(axis=1))) + terms.sum())
            total += float(_gammaln(g) - L * _gammaln(g / L)
                           + ((g / L - 1) * np.log(beta)).sum())
        if self.alpha is None:
            a, b = self.alpha_prior
            total += (a - 1) * np.log(alpha) - b * alpha
        if self.gamma is None:
            a, b = self.gamma_prior
            total += (a - 1) * np.log(g) - b * g
        return total

    def sample_posterior(self, params, stats, which, rng):
        """One draw given the moves between segments (steps 1-5 of the class docstring).

        Parameters
        ----------
        params : dict
            ``transmat`` (zero diagonal), ``beta``, ``alpha``, ``kappa``, ``gamma``.
        stats : dict
            ``trans`` (L, L) moves between segments, ``start`` (L,) and ``visits`` (L,).
        which : str
            The hmmlearn letters to draw; without this block's letter ``params`` is kept.
        rng : numpy.random.Generator
            The random generator.

        Returns
        -------
        dict
            The drawn parameters.
        """
        if self.letter not in which:
            return params
        L = self.n_states
        n = np.rint(stats["trans"]).astype(np.int64)
        alpha, gamma, beta = float(params["alpha"]), float(params["gamma"]), params["beta"]
        # 1. tables of the moves and the rows' normalisers (log r by log-Gamma draws: the
        # first shape alpha (1 - beta_j) may be 1e-3 and r below the smallest float)
        m = crt(n, self._row_alpha(alpha, beta), rng)
        rows = n.sum(axis=1)
        live = rows > 0
        ell = np.zeros(L)
        if live.any():
            rest = beta.sum() - beta        # 1 - beta_j without cancellation
            log_a = log_gamma_draws(alpha * rest[live], rng)
            log_b = log_gamma_draws(rows[live].astype(np.float64), rng)
            ell[live] = np.logaddexp(log_a, log_b) - log_a
        # 2. the Poisson completion of exp(alpha beta_j ell_j); above 1e15 a Poisson count
        # is its mean plus a normal deviate (a distance below 1e-7 from the Poisson law)
        rate = alpha * beta * ell
        if not np.all(rate < 1e300):
            raise NumericalError(
                "transmat: an HDP-HSMM draw put a state's global weight beta_j so close to 1 "
                "that the completion of its row's normaliser overflows (gamma, the global "
                f"concentration, is {gamma:.3g}; the chain drifted into a corner it leaves "
                "slowly, see hiddenstate.families.hdp.HDPSegmentTransitions); run another "
                "random_state, fewer sweeps, or fix gamma larger (learner_options "
                "'gamma' or 'gamma_prior')")
        big = rate > 1e15
        t = rng.poisson(np.where(big, 0.0, rate)).astype(np.float64)
        t[big] = np.rint(rate[big] + np.sqrt(rate[big]) * rng.standard_normal(int(big.sum())))
        col = m.sum(axis=0) + t
        # 3. alpha
        if self.alpha is None:
            a, b = self.alpha_prior
            alpha = _gamma(a + m.sum() + t.sum(), b + ell.sum(), rng)
        # 4. gamma (beta integrated out), then beta
        if self.gamma is None:
            gamma = sample_gamma(col, gamma, self.gamma_prior, rng)
        beta = dirichlet_rows(gamma / L + col, rng)
        # 5. the rows
        pi = dirichlet_rows(self._row_alpha(alpha, beta) + n * (1 - np.eye(L)), rng)
        return {"transmat": pi, "beta": beta, "alpha": np.float64(alpha),
                "kappa": np.float64(0.0), "gamma": np.float64(gamma)}

    def sample_summary(self, params, stats) -> dict:
        """The states the segmentations visit, and those holding ``min_share`` of the
        observations (``visits``: time steps, not segments)."""
        return states_used(np.asarray(stats["visits"], dtype=np.float64), self.min_share)

r"""Blocked Gibbs sampling (``learn="gibbs"``), written once for every model.

A model hands the sampler the same :class:`~hiddenstate.learn.problem.Problem` it hands the
batch modes, with one more routine and one more method per block:

- ``problem.sample_counts(views, rng) -> (log p(X, z | θ), statistics per block, z)``: one
  exact draw of the hidden structure :math:`z \sim p(z \mid X, \theta)` (forward-filtering
  backward-sampling for an HMM, inside sampling for a grammar or a program, the downward
  pass of a tree network, a categorical draw per sample for NaiveBayesHidden) and the hard
  counts along it;
- ``block.sample_posterior(params, stats, which, rng)``: one draw of the block from its
  conjugate posterior given those counts (Dirichlet, Normal-Wishart / Normal-Gamma, Gamma;
  :mod:`hiddenstate.families.posterior_draws`). A block whose letter is not in ``which``
  keeps its value; a learned block without a conjugate posterior refuses.

One *sweep* draws :math:`z \sim p(z \mid X, \theta)` then :math:`\theta \sim p(\theta \mid X,
z)`, block by block (the blocks are independent given :math:`z`, so this is the exact
conditional of :math:`\theta`). The pair :math:`(\theta, z)` seen at the start of a sweep is
recorded with its log joint :math:`\log p(X, z, \theta) = \log p(X, z \mid \theta) + \log
p(\theta)` (the blocks' ``log_prior``, which may leave out constants). The first
``burn_in`` sweeps of every chain are dropped, then every ``thin``-th is kept.

**Chains.** ``n_chains`` chains, each from its own starting point (``start(c)``, called in
chain order) and its own generator (``rng.spawn``), so the draws do not depend on the
number of threads (``n_jobs``) that run them.

**Label switching** (:func:`relabel_draws`). The posterior of a model with exchangeable
states (an HMM's states, a tree network's states of a hidden variable, NaiveBayesHidden's
clusters within a class) is symmetric under permutations of them, so a chain may visit
every relabelling. Before any summary, every kept draw is relabelled to a reference: the
draw of highest log joint first, then (repeatedly, until no permutation changes, at most
:data:`MAX_ALIGN_ROUNDS` rounds) the posterior mean of the relabelled draws. The
permutation of each draw minimises (Hungarian algorithm,
:func:`scipy.optimize.linear_sum_assignment`) the squared distance between its states'
parameters and the reference's. Each parameter array is centred and scaled robustly over
all draws and states (median and median absolute deviation, then arcsinh, so that a spare
state's outlying draw does not decide), and from the second round each feature of a
reference state is divided by its variance over the relabelled draws (a Mahalanobis
distance with a diagonal covariance: a feature that varies from draw to draw as much as
between states does not decide). An array indexed by the state on two axes (a transition
matrix) enters through its diagonal and its stationary distribution, which tells the
states a chain uses from the spare ones of a sticky HDP-HMM (whose parameters are draws
from the prior). A Problem declares how its states act on its parameters with
``state_groups`` (a list of :class:`StateGroup`); a Problem without it has nothing to
align (a grammar's nonterminals and a program's outcomes are named).

**Point estimates.** The posterior mean of the aligned draws (every Dirichlet row, rate,
mean and covariance averaged; the result is a valid parameter) and the draw of highest log
joint (:attr:`GibbsResult.best`). The models set their usual fitted attributes to the
posterior mean, as variational Bayes sets them to its posterior mean.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidInputError, NumericalError

#: the mode name
GIBBS = "gibbs"
#: the sampler's options and their defaults (``learner_options`` of every model)
DEFAULT_OPTIONS = {"n_samples": 1000, "burn_in": 500, "thin": 1, "n_chains": 4,
                   "n_jobs": 1}
#: the most relabelling rounds of :func:`relabel_draws`
MAX_ALIGN_ROUNDS = 10

__all__ = ["DEFAULT_OPTIONS", "GIBBS", "GibbsResult", "StateGroup", "relabel_draws",
           "check_options", "flatten", "sample"]


def _int_option(options: dict, name: str, minimum: int) -> int:
    value = options[name]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InvalidInputError(
            f"{name}: expected an integer >= {minimum}, got {value!r:.40}; set it with "
            f"learner_options={{{name!r}: ...}}")
    return int(value)


def check_options(options: dict | None, extra: dict | None = None) -> dict:
    """Validate the sampler's options and fill in the defaults.

    Parameters
    ----------
    options : dict or None
        ``n_samples`` (sweeps per chain, burn-in included), ``burn_in`` (sweeps dropped at
        the start of each chain, fewer than ``n_samples``), ``thin`` (keep every
        ``thin``-th sweep after the burn-in), ``n_chains`` and ``n_jobs`` (threads running
        the chains; the draws do not depend on it); a model may accept more (``extra``).
    extra : dict or None, default=None
        The model's own options and their defaults (e.g. the sticky HDP's concentrations).

    Returns
    -------
    dict
        Every option, defaults filled in.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If an option is unknown or out of range; the message names it.

    Examples
    --------
    >>> from hiddenstate.learn.gibbs import check_options
    >>> check_options({"n_samples": 200, "burn_in": 50})["n_chains"]
    4
    >>> check_options({"n_samples": 10, "burn_in": 10})
    Traceback (most recent call last):
    ...
    hiddenstate.errors.InvalidInputError: burn_in: 10 sweeps ...
    """
    defaults = {**DEFAULT_OPTIONS, **(extra or {})}
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise InvalidInputError(
            f"learner_options: expected a dict of the sampler's options, got "
            f"{type(options).__name__}")
    unknown = sorted(set(options) - set(defaults), key=str)
    if unknown:
        raise InvalidInputError(
            f"learner_options: {unknown[0]!r} is not an option of learn='gibbs'; the options "
            f"are {sorted(defaults)}")
    out = {**defaults, **options}
    n = _int_option(out, "n_samples", 1)
    burn = _int_option(out, "burn_in", 0)
    _int_option(out, "thin", 1)
    _int_option(out, "n_chains", 1)
    _int_option(out, "n_jobs", 1)
    if burn >= n:
        raise InvalidInputError(
            f"burn_in: {burn} sweeps dropped of n_samples={n} leaves no draw; use burn_in < "
            "n_samples (e.g. learner_options={'n_samples': 1000, 'burn_in': 500})")
    return out


@dataclass
class StateGroup:
    """States that a Problem's parameters treat alike (their labels are exchangeable).

    Parameters
    ----------
    size : int
        The number of states in the group.
    members : list of tuple
        ``(path, index, axes, offset)`` per parameter array the states index: ``path`` the
        block name, or ``"block.key"`` inside a block whose parameters are a dict; ``index``
        a tuple selecting the sub-array first (``()``: the whole array); ``axes`` the axes
        of that sub-array indexed by the state (two for a transition matrix); ``offset`` the
        position of the group's first state on those axes. A fifth entry, ``layout``, says
        that the array is stored as the allowed entries of a ``(K, K)`` matrix (an object
        with ``dense(values)`` and ``gather(matrix)``, e.g.
        :class:`~hiddenstate.inference.Transitions`): the states act on the dense matrix,
        whose pattern every permutation of the group must keep (an HSMM's zero diagonal).

    Examples
    --------
    The states of a 3-state HMM with categorical emissions:

    >>> from hiddenstate.learn.gibbs import StateGroup
    >>> group = StateGroup(3, [("startprob", (), (0,), 0), ("transmat", (), (0, 1), 0),
    ...                        ("emission.emissionprob", (), (0,), 0)])
    >>> group.size
    3
    """

    size: int
    members: list = field(default_factory=list)


def flatten(params: dict, prefix: str = "") -> dict:
    """Return the parameters as a flat dict, ``"block.key"`` for a block whose parameters
    are a dict.

    Parameters
    ----------
    params : dict
        Parameters per block.
    prefix : str, default=""
        Prepended to every name.

    Returns
    -------
    dict of str to ndarray
        The arrays by name.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.learn.gibbs import flatten
    >>> sorted(flatten({"transmat": np.eye(2), "emission": {"means": np.zeros((2, 1))}}))
    ['emission.means', 'transmat']
    """
    out = {}
    for name, value in params.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{name}."))
        else:
            out[prefix + name] = np.asarray(value)
    return out


def _get(params: dict, path: str):
    block, _, key = path.partition(".")
    return params[block][key] if key else params[block]


def _set(params: dict, path: str, value) -> None:
    block, _, key = path.partition(".")
    if key:
        params[block] = {**params[block], key: value}
    else:
        params[block] = value


@dataclass
class GibbsResult:
    """The draws of :func:`sample`.

    Parameters
    ----------
    draws : list of list of dict
        ``draws[c][d]``: the parameters per block of the ``d``-th kept draw of chain ``c``,
        relabelled (see :func:`relabel_draws`).
    log_joint : ndarray of shape (n_chains, n_draws)
        :math:`\\log p(X, z, \\theta)` of every kept draw (up to the prior's constant).
    log_lik : ndarray of shape (n_chains, n_draws)
        :math:`\\log p(X, z \\mid \\theta)` of every kept draw.
    traces : ndarray of shape (n_chains, n_samples)
        The log joint of every sweep, burn-in included.
    extras : dict of str to ndarray
        Quantities the blocks report per kept draw (``block.sample_summary``), e.g. the
        number of states in use, each ``(n_chains, n_draws)``.
    permutations : list of ndarray
        Per state group, ``(n_chains, n_draws, size)``: draw ``(c, d)``'s state
        ``permutations[g][c, d, j]`` became state ``j``.
    best : dict
        The draw of highest log joint (relabelled; its labels are the reference's).
    best_index : tuple of int
        Its ``(chain, draw)``.
    mean : dict
        The posterior mean of the relabelled draws, per block.

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> from hiddenstate.learn import gibbs
    >>> model = hs.HMM(n_states=2, learn="gibbs", transmat_prior=1.0, startprob_prior=1.0,
    ...                emissionprob_prior=1.0)
    >>> X, seqs = model.validate_data(np.array([0, 0, 1, 0, 2, 2, 1, 2, 0, 0, 1, 2, 2, 2]),
    ...                               [6, 8], 3)
    >>> problem = model.problem(model.emission_family(3, X), X, seqs)
    >>> start = {"startprob": np.array([0.5, 0.5]),
    ...          "transmat": np.array([[0.8, 0.2], [0.3, 0.7]]),
    ...          "emission": {"emissionprob": np.array([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]])}}
    >>> result = gibbs.sample(problem, lambda c: start, which="ste", n_samples=50,
    ...                       burn_in=10, n_chains=2, rng=np.random.default_rng(0))
    >>> result.log_joint.shape, result.mean["transmat"].sum(axis=1).round(6)
    ((2, 40), array([1., 1.]))
    """

    draws: list
    log_joint: np.ndarray
    log_lik: np.ndarray
    traces: np.ndarray
    extras: dict
    permutations: list
    best: dict
    best_index: tuple
    mean: dict

    @property
    def n_chains(self) -> int:
        """The number of chains."""
        return len(self.draws)

    @property
    def n_draws(self) -> int:
        """The kept draws per chain."""
        return len(self.draws[0])

    def arrays(self) -> dict:
        """Return every parameter's draws, ``(n_chains, n_draws, *shape)``, by flat name
        (:func:`flatten`).

        Returns
        -------
        dict of str to ndarray
            The stacked draws.
        """
        names = flatten(self.draws[0][0])
        return {name: np.stack([np.stack([flatten(d)[name] for d in chain])
                                for chain in self.draws]) for name in names}


def _learned(problem, name: str, which: str) -> bool:
    return any(letter in which for letter in problem.letters[name])


def _check_problem(problem, which: str) -> None:
    if not callable(getattr(problem, "sample_counts", None)):
        raise InvalidInputError(
            f"learn: 'gibbs' draws the hidden structure given the parameters, and "
            f"{type(problem).__name__} cannot; use 'em', 'map', 'vb' or 'vt'")
    for name, block in problem.blocks.items():
        if _learned(problem, name, which) and not callable(
                getattr(block, "sample_posterior", None)):
            raise InvalidInputError(
                f"learn: 'gibbs' draws every learned parameter block from its conjugate "
                f"posterior, and block {name!r} ({type(block).__name__}) has none; use 'em', "
                "'map', 'vb' or 'vt'")


def _run_chain(problem, theta: dict, which: str, n_samples: int, burn_in: int, thin: int,
               rng: np.random.Generator, callback) -> tuple:
    blocks = problem.blocks
    kept, log_joint, log_lik, trace, extras = [], [], [], [], []
    for it in range(n_samples):
        loglik, stats, _ = problem.sample_counts(theta, rng)
        value = loglik + sum(block.log_prior(theta[name]) for name, block in blocks.items())
        if not np.isfinite(value):
            raise NumericalError(
                f"log p(X, z, theta) is {value} at sweep {it + 1}; check the data for "
                "extreme values, or the priors")
        trace.append(value)
        if it >= burn_in and (it - burn_in) % thin == 0:
            kept.append(theta)
            log_joint.append(value)
            log_lik.append(loglik)
            summary = {}
            for name, block in blocks.items():
                report = getattr(block, "sample_summary", None)
                if report is not None:
                    summary.update(report(theta[name], stats[name]))
            extras.append(summary)
        theta = {name: block.sample_posterior(theta[name], stats[name], which, rng)
                 for name, block in blocks.items()}
        if callback is not None:
            callback(it + 1, value)
    return kept, log_joint, log_lik, trace, extras


def sample(problem, start: Callable[[int], dict], *, which: str, n_samples: int = 1000,
           burn_in: int = 500, thin: int = 1, n_chains: int = 4, n_jobs: int = 1,
           rng: np.random.Generator, callback: Callable[[int, float], None] | None = None
           ) -> GibbsResult:
    """Run ``n_chains`` blocked Gibbs samplers on ``problem`` and relabel their draws.

    See the module docstring for the sweep, the chains, the relabelling and the estimates.

    Parameters
    ----------
    problem : Problem
        The model's blocks and inference routines, with ``sample_counts`` and every learned
        block's ``sample_posterior``.
    start : callable
        ``start(c)``: the starting parameters of chain ``c`` (called once per chain, in
        order, before any chain runs).
    which : str
        The letters of the learned blocks.
    n_samples : int, default=1000
        Sweeps per chain, burn-in included.
    burn_in : int, default=500
        Sweeps dropped at the start of every chain.
    thin : int, default=1
        Keep every ``thin``-th sweep after the burn-in.
    n_chains : int, default=4
        The number of chains.
    n_jobs : int, default=1
        Threads running the chains (the draws do not depend on it).
    rng : numpy.random.Generator
        The generator the chains' generators are spawned from.
    callback : callable or None, default=None
        ``callback(sweep, log_joint)`` after every sweep of every chain (``sweep`` starts
        again at 1 with each chain; with ``n_jobs > 1`` the chains' calls interleave).

    Returns
    -------
    GibbsResult
        The relabelled draws, their log joints and the estimates.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If the problem cannot draw its hidden structure, a learned block has no conjugate
        posterior, or an option is out of range.
    hiddenstate.errors.NumericalError
        If a log joint is not finite.

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> from hiddenstate.learn import gibbs
    >>> model = hs.HMM(n_states=2, learn="gibbs", transmat_prior=1.0, startprob_prior=1.0,
    ...                emissionprob_prior=1.0)
    >>> X, seqs = model.validate_data(np.array([0, 0, 1, 0, 2, 2, 1, 2, 0, 0, 1, 2, 2, 2]),
    ...                               [6, 8], 3)
    >>> problem = model.problem(model.emission_family(3, X), X, seqs)
    >>> start = {"startprob": np.array([0.5, 0.5]),
    ...          "transmat": np.array([[0.8, 0.2], [0.3, 0.7]]),
    ...          "emission": {"emissionprob": np.array([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]])}}
    >>> result = gibbs.sample(problem, lambda c: start, which="ste", n_samples=30,
    ...                       burn_in=10, thin=2, n_chains=3, rng=np.random.default_rng(0))
    >>> result.n_chains, result.n_draws, result.traces.shape
    (3, 10, (3, 30))
    """
    check_options({"n_samples": n_samples, "burn_in": burn_in, "thin": thin,
                   "n_chains": n_chains, "n_jobs": n_jobs})
    _check_problem(problem, which)
    starts = [start(c) for c in range(n_chains)]
    rngs = rng.spawn(n_chains)

    def run(c):
        return _run_chain(problem, starts[c], which, n_samples, burn_in, thin, rngs[c],
                          callback)

    if n_jobs > 1 and n_chains > 1:
        with ThreadPoolExecutor(max_workers=min(n_jobs, n_chains)) as pool:
            runs = list(pool.map(run, range(n_chains)))
    else:
        runs = [run(c) for c in range(n_chains)]
    draws = [r[0] for r in runs]
    log_joint = np.array([r[1] for r in runs], dtype=np.float64)
    log_lik = np.array([r[2] for r in runs], dtype=np.float64)
    traces = np.array([r[3] for r in runs], dtype=np.float64)
    names = sorted(runs[0][4][0]) if runs[0][4] else []
    extras = {name: np.array([[e[name] for e in r[4]] for r in runs]) for name in names}
    c, d = np.unravel_index(int(np.argmax(log_joint)), log_joint.shape)
    groups = list(getattr(problem, "state_groups", None) or [])
    draws, perms = relabel_draws(draws, groups, (int(c), int(d)))
    return GibbsResult(draws, log_joint, log_lik, traces, extras, perms, draws[c][d],
                       (int(c), int(d)), _mean(draws))


def _mean(draws: list) -> dict:
    """The average of every parameter over all draws, in the blocks' structure."""
    flat = [flatten(d) for chain in draws for d in chain]
    mean = {name: np.mean([f[name] for f in flat], axis=0) for name in flat[0]}
    out: dict = {}
    for name, value in draws[0][0].items():
        if isinstance(value, dict):
            out[name] = {key: mean[f"{name}.{key}"] for key in value}
        else:
            out[name] = mean[name]
    return out


def _features(stack: np.ndarray, index: tuple, axes: tuple, offset: int,
              size: int) -> np.ndarray:
    """The group's per-state features of one member over all draws (``stack``: the member
    array of every draw on axis 0): ``(n_draws, size, f)``, the state on axis 1 (two
    state axes: the diagonal)."""
    sub = stack[(slice(None), *index)] if index else stack
    states = offset + np.arange(size)
    if len(axes) == 2:
        a, b = axes[0] + 1, axes[1] + 1
        both = np.take(np.take(sub, states, axis=a), states, axis=b)
        diag = np.moveaxis(np.diagonal(both, 0, a, b), -1, 1).reshape(len(stack), size, -1)
        if both.ndim != 3:
            return diag
        return np.concatenate([diag, _stationary(both)[:, :, None]], axis=2)
    a = axes[0] + 1
    return np.moveaxis(np.take(sub, states, axis=a), a, 1).reshape(len(stack), size, -1)


def _robust_scale(f: np.ndarray) -> np.ndarray:
    """Features ``(n, size, F)`` centred on their median over draws and states, scaled by
    the median absolute deviation, then through arcsinh: the spare states of a sticky
    HDP-HMM draw their parameters from a heavy-tailed prior (a mean 300 standard deviations
    out), and such an outlier must not decide the labels of the other states (squared
    distances grow with it without bound)."""
    centre = np.median(f, axis=(0, 1), keepdims=True)
    mad = np.median(np.abs(f - centre), axis=(0, 1), keepdims=True)
    spread = np.where(mad > 0, 1.4826 * mad, np.maximum(f.std(axis=(0, 1), keepdims=True),
                                                        1e-300))
    return np.arcsinh((f - centre) / spread)


def _stationary(A: np.ndarray, n_iter: int = 200) -> np.ndarray:
    """The stationary distribution of every row-stochastic ``A`` ``(n, K, K)`` (restricted
    to the group's states, renormalised), by power iteration from the uniform distribution
    averaged over its last half (a periodic chain's iterates cycle)."""
    rows = A / np.maximum(A.sum(axis=2, keepdims=True), 1e-300)
    p = np.full(A.shape[:2], 1.0 / A.shape[1])
    total = np.zeros_like(p)
    for it in range(n_iter):
        p = np.einsum("nk,nkj->nj", p, rows)
        if it >= n_iter // 2:
            total += p
    return total / total.sum(axis=1, keepdims=True)


def _member(member: tuple) -> tuple:
    """A state group's member as ``(path, index, axes, offset, layout)`` (layout None: the
    array as stored)."""
    return (*member, None) if len(member) == 4 else tuple(member)


def _dense(layout, value) -> np.ndarray:
    """The member's array, the dense matrix of a member stored by its allowed entries."""
    value = np.asarray(value, dtype=np.float64)
    return value if layout is None else np.asarray(layout.dense(value), dtype=np.float64)


def _permute(arr: np.ndarray, index: tuple, axes: tuple, offset: int,
             perm: np.ndarray) -> np.ndarray:
    """``arr`` with the group's states reordered: new state ``offset + j`` is old state
    ``offset + perm[j]`` on every axis in ``axes``."""
    out = np.array(arr, dtype=np.float64, copy=True)
    sub = out[index] if index else out
    full = np.arange(sub.shape[axes[0]])
    full[offset:offset + len(perm)] = offset + perm
    new = sub
    for ax in axes:
        new = np.take(new, full, axis=ax)
    if index:
        out[index] = new
        return out
    return new


def relabel_draws(draws: list, groups: list, reference: tuple) -> tuple[list, list]:
    """Relabel every draw's exchangeable states to agree with a reference.

    On the draws' parameters, for any model whose Problem declares ``state_groups`` (no
    inference per draw); :func:`hiddenstate.align_states` aligns one fitted HMM with a
    reference model or labels through their posteriors on data (the same ``perm``
    convention).

    The rule of the module docstring: first the draw ``reference`` (chain, draw), then the
    posterior mean of the relabelled draws, until no permutation changes (at most
    :data:`MAX_ALIGN_ROUNDS` rounds); each draw's permutation minimises the squared
    standardised distance of its states' parameters to the reference's
    (:func:`scipy.optimize.linear_sum_assignment`).

    Parameters
    ----------
    draws : list of list of dict
        ``draws[c][d]``: parameters per block.
    groups : list of StateGroup
        The exchangeable states (empty: nothing to relabel).
    reference : tuple of int
        The ``(chain, draw)`` of the first reference.

    Returns
    -------
    draws : list of list of dict
        The relabelled draws (new dicts; the inputs are not changed).
    permutations : list of ndarray
        Per group, ``(n_chains, n_draws, size)``: the old state of each new state.

    Examples
    --------
    Two draws of a two-state chain, the second with its labels swapped:

    >>> import numpy as np
    >>> from hiddenstate.learn.gibbs import StateGroup, relabel_draws
    >>> a = {"startprob": np.array([0.9, 0.1]), "transmat": np.array([[0.8, 0.2], [0.4, 0.6]])}
    >>> b = {"startprob": np.array([0.12, 0.88]),
    ...      "transmat": np.array([[0.65, 0.35], [0.25, 0.75]])}
    >>> group = StateGroup(2, [("startprob", (), (0,), 0), ("transmat", (), (0, 1), 0)])
    >>> out, perms = relabel_draws([[a, b]], [group], (0, 0))
    >>> perms[0][0].tolist(), out[0][1]["startprob"].tolist()
    ([[0, 1], [1, 0]], [0.88, 0.12])
    """
    from scipy.optimize import linear_sum_assignment

    n_chains, n_draws = len(draws), len(draws[0])
    perms = [np.tile(np.arange(g.size), (n_chains, n_draws, 1)) for g in groups]
    if not groups:
        return draws, perms
    flat = [d for chain in draws for d in chain]
    c0, d0 = reference
    for gi, g in enumerate(groups):
        parts = []
        for path, index, axes, offset, layout in map(_member, g.members):
            f = _features(np.stack([_dense(layout, _get(d, path)) for d in flat]), index,
                          axes, offset, g.size)
            parts.append(_robust_scale(f))
        feats = np.concatenate(parts, axis=2)           # (n, size, F)
        ref = feats[c0 * n_draws + d0]
        inv_var = np.ones_like(ref)   # first round: the standardised squared distance
        current = np.tile(np.arange(g.size), (len(flat), 1))
        rows_n = np.arange(len(flat))[:, None]
        for _ in range(MAX_ALIGN_ROUNDS):
            # sum_f (x_if - m_jf)^2 / v_jf for every draw, its state i, reference state j
            cost = ((feats ** 2) @ inv_var.T - 2.0 * feats @ (ref * inv_var).T
                    + (ref ** 2 * inv_var).sum(axis=1)[None, None, :])
            new = np.empty_like(current)
            for n in range(len(flat)):
                rows, cols = linear_sum_assignment(cost[n])
                new[n, cols] = rows
            changed = not np.array_equal(new, current)
            current = new
            aligned = feats[rows_n, current]
            ref = aligned.mean(axis=0)
            # later rounds: each reference state's own posterior spread per feature (floored
            # at a thousandth of the feature's overall spread, 1 after standardising)
            inv_var = 1.0 / np.maximum(aligned.var(axis=0), 1e-6)
            if not changed:
                break
        perms[gi] = current.reshape(n_chains, n_draws, g.size)
    out = []
    for c in range(n_chains):
        chain = []
        for d in range(n_draws):
            params = dict(draws[c][d])
            for gi, g in enumerate(groups):
                perm = perms[gi][c, d]
                if np.array_equal(perm, np.arange(g.size)):
                    continue
                for path, index, axes, offset, layout in map(_member, g.members):
                    moved = _permute(_dense(layout, _get(params, path)), index, axes,
                                     offset, perm)
                    _set(params, path, moved if layout is None else layout.gather(moved))
            chain.append(params)
        out.append(chain)
    return out, perms

r"""Tree and DAG networks of discrete hidden variables above observed parts (Funk 2015).

Every variable has its own number of states; every arrow ``parent -> child`` carries a
weight matrix :math:`P(\text{child}_j \mid \text{parent}_i)`; each root has a prior. A child
with several parents draws from the normalised product of what each parent implies (eq. 8).
In a tree (every variable at most one parent) inference is exact: log-evidence, posterior
marginals, posterior samples and max-product decoding. In a DAG the upward pass is Funk's
optimistic tree pass and the answers come from downward samples (see ``docs/treenet.md``
for what is exact and the measured error on small DAGs).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

from .._deprecation import keyword_only_after_first
from .._sklearn_base import BaseEstimator
from .._validation import (
    check_choice,
    check_memory,
    check_number,
    check_positive_int,
    check_stochastic,
    make_rng,
)
from ..errors import InvalidInputError, NotFittedError
from ..families import DirichletRows
from ..learn import ConvergenceMonitor, fit_restarts
from ..learn.gibbs_fit import (
    PosteriorSampling,
    check_learner_options,
    clear_gibbs,
    fit_gibbs,
    posterior_predictive,
)
from ..treenet import funk, passes
from ..treenet.checks import (
    CHUNK,
    check_consistent,
    check_patterns,
    check_possible,
    check_products,
    check_rows,
    check_step,
    check_stream,
    check_work,
)
from ..treenet.structure import Structure, build
from . import _learned

#: batch learning modes available for trees (through :mod:`hiddenstate.learn.batch`)
TREE_MODES = ("em", "map", "vb", "vt", "gibbs")
LEARN_MODES = (*TREE_MODES, "stochastic-em")
CORRECTIONS = ("none", "reject", "importance")


class _TreeProblem:
    """A tree network as :func:`hiddenstate.learn.fit` sees it: one Dirichlet block per
    root prior and per arrow (every row of an arrow is a categorical switch)."""

    def __init__(self, s: Structure, evidence: list, n: int, prior):
        self.s, self.evidence, self.n = s, evidence, n
        self.n_observations = n  # patterns
        self.blocks, self.letters, self.n_virtual = {}, {}, {}
        for r in s.roots:
            key = "prior:" + s.names[r]
            self.blocks[key] = DirichletRows(key, "w", prior)
            self.letters[key], self.n_virtual[key] = "w", float(n)
        for e in range(len(s.edges)):
            key = "weight:" + s.edge_name(e)
            self.blocks[key] = DirichletRows(key, "w", prior)
            self.letters[key] = "w"
            self.n_virtual[key] = n / s.sizes[s.edges[e][0]]

    def unpack(self, views: dict) -> tuple[list, dict]:
        s = self.s
        rows = [views["weight:" + s.edge_name(e)] for e in range(len(s.edges))]
        prior = {r: views["prior:" + s.names[r]] for r in s.roots}
        return rows, prior

    def pack(self, rows: list, prior: dict) -> dict:
        out = {"prior:" + self.s.names[r]: prior[r] for r in self.s.roots}
        out.update({"weight:" + self.s.edge_name(e): w for e, w in enumerate(rows)})
        return out

    def expected_counts(self, views):
        s = self.s
        rows, prior = self.unpack(views)
        total = 0.0
        counts = [np.zeros_like(w) for w in rows]
        roots = {r: np.zeros(s.sizes[r]) for r in s.roots}
        for sl, m, ev in _chunks(self.evidence, self.n):
            upw = passes.upward(s, rows, ev, m)
            ll = passes.log_evidence(s, prior, upw)
            check_possible(ll, index=np.arange(sl.start, sl.stop))
            total += float(ll.sum())
            post = passes.marginals(s, rows, prior, upw)
            for e, c in enumerate(passes.edge_counts(s, rows, upw, post)):
                counts[e] += c
            for r in s.roots:
                roots[r] += post[r].sum(axis=0)
        return total, self.pack(counts, roots)

    def sample_counts(self, views, rng):
        r"""Gibbs sampling: every pattern's variables drawn from their posterior by the
        downward pass (eq. 5, 7; a missing observed symbol is drawn too), :math:`\sum
        \log p(z, X)` and the counts along the draws."""
        s = self.s
        rows, prior = self.unpack(views)
        total = 0.0
        counts = [np.zeros_like(w) for w in rows]
        roots = {r: np.zeros(s.sizes[r]) for r in s.roots}
        draws = []
        for sl, m, ev in _chunks(self.evidence, self.n):
            upw = passes.upward(s, rows, ev, m)
            check_possible(passes.log_evidence(s, prior, upw),
                           index=np.arange(sl.start, sl.stop))
            z = passes.sample_down(s, rows, prior, upw.up, ev, m, rng)
            total += float(z.log_p.sum())
            for e, (p, c) in enumerate(s.edges):
                np.add.at(counts[e], (z.z[:, p], z.z[:, c]), 1.0)
            for r in s.roots:
                roots[r] += np.bincount(z.z[:, r], minlength=s.sizes[r])
            draws.append(z.z)
        return total, self.pack(counts, roots), np.concatenate(draws)

    @property
    def state_groups(self) -> list:
        """The states of every hidden variable are exchangeable: one group per hidden
        variable, acting on its root prior, the rows of its arrows out and the columns of
        its arrow in."""
        from ..learn.gibbs import StateGroup

        s = self.s
        groups = []
        for v in s.hidden:
            if s.sizes[v] < 2:
                continue
            members = []
            if not s.parents[v]:
                members.append(("prior:" + s.names[v], (), (0,), 0))
            for e, (p, c) in enumerate(s.edges):
                if c == v:
                    members.append(("weight:" + s.edge_name(e), (), (1,), 0))
                elif p == v:
                    members.append(("weight:" + s.edge_name(e), (), (0,), 0))
            groups.append(StateGroup(s.sizes[v], members))
        return groups

    def path_counts(self, views, k):
        s = self.s
        rows, prior = self.unpack(views)
        total = 0.0
        counts = [np.zeros_like(w) for w in rows]
        roots = {r: np.zeros(s.sizes[r]) for r in s.roots}
        paths = []
        for sl, m, ev in _chunks(self.evidence, self.n):
            value, z = passes.max_product(s, rows, prior, ev, m)
            check_possible(value, index=np.arange(sl.start, sl.stop))
            total += float(value.sum())
            for e, (p, c) in enumerate(s.edges):
                known = z[:, c] >= 0  # a missing observed symbol adds no count
                np.add.at(counts[e], (z[known, p], z[known, c]), 1.0)
            for r in s.roots:
                roots[r] += np.bincount(z[:, r], minlength=s.sizes[r])
            paths.append(z)
        return total, self.pack(counts, roots), np.concatenate(paths)


def _chunks(evidence: list, n: int):
    """``(slice, its length, the evidence of those patterns)`` in chunks of CHUNK."""
    for start in range(0, n, CHUNK):
        sl = slice(start, min(n, start + CHUNK))
        yield sl, sl.stop - start, [None if ev is None else ev[sl] for ev in evidence]


class TreeNet(PosteriorSampling, BaseEstimator):
    r"""A tree or DAG network of discrete variables (Funk 2015), a scikit-learn estimator.

    Hidden variables with ``n_states`` states, observed leaves with ``observed`` symbols and
    the arrows ``edges``; every arrow carries a table (a single-parent child) or a positive
    factor (a child of several parents: eq. 8). See :mod:`hiddenstate.treenet` and
    ``docs/treenet.md``.

    Parameters
    ----------
    n_states : dict or None, default=None
        ``{hidden variable: number of states}``.
    edges : sequence of tuple of str, default=()
        The arrows ``(parent, child)``; a child with several parents draws from the
        normalised product of its parents' rows (eq. 8).
    observed : dict or None, default=None
        ``{observed leaf: number of symbols}``, the columns of ``X`` in this order. Observed
        variables are leaves with at least one parent. Soft evidence
        :math:`P(X_v \mid v)` on hidden variables is passed per call as ``likelihoods``.
    learn : {"em", "map", "vb", "vt", "gibbs", "stochastic-em"}, default="em"
        The batch modes of :mod:`hiddenstate.learn.batch` (trees only; every arrow row a
        Dirichlet switch), Gibbs sampling (trees only; ``posterior_samples_``:
        ``"weights_['A->B']"``, ``"priors_['Z']"``; see ``docs/gibbs.md``) or
        ``"stochastic-em"`` (Funk's rule on mini-batches; trees and DAGs).
    n_iter : int, default=100
        The iterations (batch modes) or epochs (stochastic EM, which runs them all).
    tol : float, default=1e-4
        A batch mode (not VT) stops when its objective gains less than ``tol`` nats per
        pattern (row of ``X``; ``-inf``: never).
    prior : float or None, default=None
        The Dirichlet concentration of every row (``"map"``, ``"vb"``, ``"vt"``,
        ``"gibbs"``; None: 1).
    learning_rate : float, default=1.0
        Stochastic EM's step on the log weights (per pattern, averaged over the mini-batch).
    batch_size : int, default=100
        Stochastic EM's mini-batch size.
    soft_normalization : bool, default=False
        Stochastic EM predicts a multi-parent child by the unnormalised product of its
        parents' rows (Funk's soft constraint towards sums of one).
    balance : float, default=0.0
        Stochastic EM's state-usage option (0: off; see :mod:`hiddenstate.treenet.funk`).
    n_samples : int, default=100
        DAG only: the downward samples per pattern of ``score``, ``predict_proba`` and
        ``decode`` (importance sampling with the downward pass as proposal).
    correction : {"importance", "reject", "none"}, default="importance"
        DAG only: how ``predict_proba`` uses its samples: weight each sample by
        :math:`p(z, X) / q(z)`, drop the samples inconsistent with the evidence, or use the
        plain downward samples.
    warm_start : bool, default=False
        ``fit`` starts from the current ``weights_`` / ``priors_`` (hand-set or learned)
        instead of a random initialisation.
    random_state : int, numpy.random.Generator or None, default=None
        The seed of the initialisation and the samplers.
    verbose : bool, default=False
        Print the objective of every iteration to stderr.
    learner_options : dict or None, default=None
        The options of ``learn="gibbs"`` (``n_samples``, ``burn_in``, ``thin``,
        ``n_chains``, ``n_jobs``, ``check_convergence``).

    Attributes
    ----------
    weights_ : dict of str to ndarray
        ``{"parent->child": (N_parent, N_child) array}``: conditional tables (rows sum to
        one) for single-parent children, positive factors for multi-parent ones.
    priors_ : dict of str to ndarray
        ``{root: (N_root,) array}``.
    monitor_ : hiddenstate.learn.ConvergenceMonitor
        The objective per iteration (batch modes: the mode's; stochastic EM: per epoch, the
        summed log importance weight of the training samples, which is the log-evidence of
        each mini-batch before its step for a tree; samples inconsistent with the evidence,
        possible in a DAG, are left out of the sum).
    inconsistent_ : float
        Stochastic EM: the fraction of the last epoch's samples that were inconsistent with
        the evidence (0 in a tree).
    n_features_ : int
        The number of observed columns.

    See Also
    --------
    hiddenstate.treenet.layered : The structure of a layered network.

    Notes
    -----
    **Eq. 8 needs a positive denominator.** A child with several parents draws from
    :math:`P(D_k \mid B_i, C_j) = P(D_k|B_i)P(D_k|C_j) / \sum_m P(D_m|B_i)P(D_m|C_j)`,
    which is 0/0 when the parents' rows share no child state. Such factors are refused
    wherever parameters are used (``score``, ``predict_proba``, ``decode``, ``sample``,
    ``sample_posterior``, ``fit`` with ``warm_start``, ``save``) with an error naming the
    arrows and the parent states. Defining the case instead was rejected: a uniform (or any
    other) fallback row is a distribution Funk's model does not contain, and declaring the
    combination impossible makes the joint sum to less than one, so ``sample`` would need
    rejection and ``score`` a global normaliser that no pass computes. Stochastic EM's
    multiplicative updates keep positive factors positive, so learned parameters never
    trip the check.

    **Answers that do not exist raise.** A pattern of probability zero (an observed symbol
    or soft evidence that no state allows) has log-evidence -inf in ``score_samples`` and
    no posterior, state or sample: ``predict_proba``, ``decode``, ``sample_posterior`` and
    learning raise :class:`~hiddenstate.errors.ZeroProbabilityError` naming it, as
    :class:`~hiddenstate.HMM` does. This is exact in a DAG too: the optimistic upward pass
    keeps every state of every consistent joint assignment positive, so it gives -inf
    only to impossible patterns. A DAG pattern of positive probability none of whose
    ``n_samples`` downward samples is consistent with its evidence has no estimate: an
    :class:`~hiddenstate.errors.InvalidInputError` naming ``n_samples`` (or
    ``max_tries``) and how many patterns.

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> model = hs.TreeNet(n_states={"Z": 2}, edges=[("Z", "A"), ("Z", "B")],
    ...                    observed={"A": 3, "B": 3}, random_state=0)
    >>> model.priors_ = {"Z": np.array([0.6, 0.4])}
    >>> model.weights_ = {"Z->A": np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]),
    ...                   "Z->B": np.array([[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]])}
    >>> model.predict_proba([[0, 0], [2, 2]])["Z"].round(2)
    array([[0.99, 0.01],
           [0.03, 0.97]])
    """

    @keyword_only_after_first
    def __init__(self, n_states: dict | None = None, edges=(), observed: dict | None = None,
                 learn: str = "em", n_iter: int = 100, tol: float = 1e-4, prior=None,
                 learning_rate: float = 1.0, batch_size: int = 100,
                 soft_normalization: bool = False, balance: float = 0.0,
                 n_samples: int = 100, correction: str = "importance",
                 warm_start: bool = False, random_state=None, verbose: bool = False,
                 learner_options: dict | None = None):
        self.n_states = n_states
        self.edges = edges
        self.observed = observed
        self.learn = learn
        self.n_iter = n_iter
        self.tol = tol
        self.prior = prior
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.soft_normalization = soft_normalization
        self.balance = balance
        self.n_samples = n_samples
        self.correction = correction
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose
        self.learner_options = learner_options

    # -- configuration --------------------------------------------------------------------------
    def _structure(self) -> Structure:
        """The checked graph, rebuilt only when ``n_states``, ``edges`` or ``observed``
        change."""
        key = repr((self.n_states, self.edges, self.observed))
        cached = self.__dict__.get("_structure_cache")
        if cached is None or cached[0] != key:
            s = build({} if self.n_states is None else self.n_states, self.edges,
                      self.observed)
            self._structure_cache = cached = (key, s)
        return cached[1]

    def _check_hyper(self) -> Structure:
        s = self._structure()
        check_positive_int(self.n_iter, "n_iter")
        check_positive_int(self.batch_size, "batch_size")
        check_positive_int(self.n_samples, "n_samples")
        check_choice(self.learn, "learn", LEARN_MODES)
        check_choice(self.correction, "correction", CORRECTIONS)
        check_number(self.tol, "tol", finite=False)
        check_number(self.learning_rate, "learning_rate", minimum=0, strict=True)
        check_number(self.balance, "balance", minimum=0)
        if self.prior is not None:
            if self.learn in ("em", "stochastic-em"):
                raise InvalidInputError(
                    f"prior: not used by learn={self.learn!r}; use 'map', 'vb', 'vt' or "
                    "'gibbs', or drop the prior")
            try:
                p = check_number(self.prior, "prior", minimum=0, strict=True)
            except InvalidInputError:
                raise InvalidInputError(
                    f"prior: expected a Dirichlet concentration > 0, got {self.prior!r:.60}"
                ) from None
            if self.learn in ("map", "vt") and p < 1:
                raise InvalidInputError(
                    f"prior: the MAP estimate needs a concentration >= 1, got {p!r}; use "
                    "learn='vb' for sparse priors")
        check_learner_options(self)
        for name in ("soft_normalization", "warm_start", "verbose"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise InvalidInputError(
                    f"{name}: expected True or False, got {getattr(self, name)!r:.40}")
        return s

    def _rng(self, random_state=None) -> np.random.Generator:
        return make_rng(self.random_state if random_state is None else random_state)

    # -- parameters -----------------------------------------------------------------------------
    def _check_is_fitted(self) -> None:
        if not hasattr(self, "weights_") or not hasattr(self, "priors_"):
            raise NotFittedError(
                f"This {type(self).__name__} has no parameters yet; call fit or set weights_ "
                "and priors_")

    def _params(self, s: Structure) -> tuple[list, dict]:
        """``weights_`` and ``priors_`` checked against the structure (hand-set parameters
        are validated where they are used), as lists/dicts by variable index."""
        self._check_is_fitted()
        if not isinstance(self.weights_, dict) or not isinstance(self.priors_, dict):
            raise InvalidInputError(
                "weights_, priors_: expected dicts {'parent->child': matrix} and "
                "{root: vector}")
        want = {s.edge_name(e) for e in range(len(s.edges))}
        extra = sorted(set(self.weights_) - want, key=repr)
        if extra:
            raise InvalidInputError(f"weights_: {extra[0]!r} is not an arrow of edges")
        roots = {s.names[r] for r in s.roots}
        extra = sorted(set(self.priors_) - roots, key=repr)
        if extra:
            raise InvalidInputError(f"priors_: {extra[0]!r} is not a root variable")
        weights = []
        for e, (p, c) in enumerate(s.edges):
            name = s.edge_name(e)
            if name not in self.weights_:
                raise InvalidInputError(f"weights_: missing the matrix of arrow {name!r}")
            shape = (s.sizes[p], s.sizes[c])
            if len(s.parents[c]) == 1:
                w = check_stochastic(self.weights_[name], shape, f"weights_[{name!r}]")
            else:
                w = check_rows(self.weights_[name], shape, f"weights_[{name!r}]",
                               "every parent state must allow some child state")
            weights.append(w)
        prior = {}
        for r in s.roots:
            if s.names[r] not in self.priors_:
                raise InvalidInputError(f"priors_: missing the prior of root {s.names[r]!r}")
            prior[r] = check_stochastic(self.priors_[s.names[r]], (s.sizes[r],),
                                        f"priors_[{s.names[r]!r}]")
        check_products(s, weights)
        return weights, prior

    def _set_params(self, s: Structure, weights: list, prior: dict) -> None:
        self.weights_ = {s.edge_name(e): np.asarray(w, dtype=np.float64)
                         for e, w in enumerate(weights)}
        self.priors_ = {s.names[r]: np.asarray(prior[r], dtype=np.float64) for r in s.roots}
        _learned.mark_own(self, ["weights_", "priors_"])

    def _gibbs_assign(self, draw: dict) -> None:
        """Set ``weights_`` and ``priors_`` to one draw of ``posterior_samples_``."""
        s = self._structure()
        self.weights_ = {s.edge_name(e): draw[f"weights_[{s.edge_name(e)!r}]"]
                         for e in range(len(s.edges))}
        self.priors_ = {s.names[r]: draw[f"priors_[{s.names[r]!r}]"] for r in s.roots}

    def _initial(self, s: Structure, rng: np.random.Generator) -> tuple[list, dict]:
        """Batch modes: Dirichlet(1) rows, uniform priors. Stochastic EM: near-uniform log
        weights (noise 0.01; Funk starts from zeros and lets sampling break the symmetry),
        scaled under ``soft_normalization`` so that a product of uniform rows sums to one."""
        if self.warm_start and hasattr(self, "weights_"):
            return self._params(s)
        _learned.warn_replaced(self, ["weights_", "priors_"], "warm_start",
                               "fit starts from a random initialisation: pass "
                               "warm_start=True to start from the values you set")
        prior = {r: np.full(s.sizes[r], 1.0 / s.sizes[r]) for r in s.roots}
        weights = []
        for p, c in s.edges:
            shape = (s.sizes[p], s.sizes[c])
            if self.learn == "stochastic-em":
                w = np.exp(0.01 * rng.standard_normal(shape))
                w /= w.sum(axis=1, keepdims=True)
                k = len(s.parents[c])
                if k > 1 and self.soft_normalization:
                    w *= s.sizes[c] ** ((k - 1) / k)
            else:
                w = rng.dirichlet(np.ones(s.sizes[c]), size=s.sizes[p])
            weights.append(w)
        return weights, prior

    # -- data -----------------------------------------------------------------------------------
    def _evidence(self, s: Structure, X, likelihoods, what: str = "this call",
                  per_pattern: float = 0.0, samples: int = 0) -> tuple[list, int]:
        """Per-variable likelihood arrays: one-hot rows for observed symbols (ones for a
        missing one, ``-1``), the user's ``likelihoods`` for hidden variables. The memory
        the call ``what`` needs (see :func:`~hiddenstate.treenet.checks.check_work`) is
        checked before anything is allocated."""
        n = None
        evidence: list = [None] * s.n_vars
        n_obs = len(s.observed)
        if X is None:
            if n_obs:
                raise InvalidInputError(
                    f"X: the network has {n_obs} observed variables; pass their symbols")
        else:
            X = check_patterns(X, [s.sizes[v] for v in s.observed],
                               [s.names[v] for v in s.observed])
            n = len(X)
            check_work(s, n, what, per_pattern, samples)
            for col, v in enumerate(s.observed):
                x = X[:, col]
                ev = np.zeros((n, s.sizes[v]))
                known = x >= 0
                ev[np.flatnonzero(known), x[known]] = 1.0
                ev[~known] = 1.0
                evidence[v] = ev
        if likelihoods is not None:
            if not isinstance(likelihoods, dict):
                raise InvalidInputError(
                    "likelihoods: expected a dict {hidden variable: (n_patterns, n_states) "
                    "array of P(evidence | state)}")
            index = {s.names[v]: v for v in s.hidden}
            for name, lik in likelihoods.items():
                if name not in index:
                    raise InvalidInputError(
                        f"likelihoods: {name!r} is not a hidden variable (observed ones take "
                        "symbols in X)")
                v = index[name]
                arr = check_rows(lik, (n, s.sizes[v]), f"likelihoods[{name!r}]",
                                 "no state explains that evidence")
                if n is None:
                    check_work(s, len(arr), what, per_pattern, samples)
                n = len(arr)
                evidence[v] = arr
        if n is None:
            raise InvalidInputError("X: no data; pass observed symbols or likelihoods")
        return evidence, n

    # -- fitting --------------------------------------------------------------------------------
    def fit(self, X, likelihoods: dict | None = None,
            callback: Callable[[int, float], None] | None = None):
        r"""Learn the weights with the mode ``learn`` chooses.

        A pattern of probability zero under the initial parameters (possible with hand-set zeros
        and ``warm_start``, or impossible soft evidence) is an error naming it.

        Parameters
        ----------
        X : array-like of int of shape (n_patterns, n_observed)
            The observed symbols, one column per observed variable in the order of
            ``observed``; ``-1`` for a missing one.
        likelihoods : dict or None, default=None
            Soft evidence :math:`P(X_v \mid v)` on hidden variables: ``{hidden variable:
            (n_patterns, n_states) array}``.
        callback : callable or None, default=None
            ``callback(iteration, objective)``, called after every iteration or epoch (for
            example a :class:`hiddenstate.progress.FitProgress`).

        Returns
        -------
        TreeNet
            The model itself, fitted.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a hyper-parameter or the data are invalid (a batch mode on a DAG included).
        ZeroProbabilityError
            If a pattern has probability zero under the initial parameters.

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> model = hs.TreeNet(n_states={"Z": 2}, edges=[("Z", "A"), ("Z", "B")],
        ...                    observed={"A": 3, "B": 3}, random_state=0)
        >>> model.priors_ = {"Z": np.array([0.6, 0.4])}
        >>> model.weights_ = {"Z->A": np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]),
        ...                   "Z->B": np.array([[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]])}
        >>> X, Z = model.sample(500, random_state=1)
        >>> fitted = hs.TreeNet(n_states={"Z": 2}, edges=[("Z", "A"), ("Z", "B")],
        ...                     observed={"A": 3, "B": 3}, random_state=0).fit(X)
        >>> fitted.monitor_.converged
        True
        >>> fitted.weights_["Z->A"].round(1)
        array([[0.7, 0.2, 0.1],
               [0. , 0.3, 0.7]])
        """
        s = self._check_hyper()
        if callback is not None and not callable(callback):
            raise InvalidInputError(
                f"callback: expected a function callback(iteration, objective), got "
                f"{type(callback).__name__}")
        if self.learn in TREE_MODES and not s.is_tree:
            v = next(v for v in range(s.n_vars) if len(s.parents[v]) > 1)
            raise InvalidInputError(
                f"learn: {self.learn!r} is exact only for trees, but {s.names[v]!r} has "
                f"{len(s.parents[v])} parents; use learn='stochastic-em' for a DAG")
        evidence, n = self._evidence(s, X, likelihoods, "fit")
        rng = self._rng()
        weights, prior = self._initial(s, rng)
        self.n_features_ = len(s.observed)
        if self.learn == "stochastic-em":
            self.monitor_ = ConvergenceMonitor(self.tol, self.n_iter, self.verbose)
            self.usage_ = {s.names[v]: np.full(s.sizes[v], 1.0 / s.sizes[v]) for v in s.hidden}
            self.n_batches_ = 0
            self._set_params(s, weights, prior)
            for epoch in range(self.n_iter):
                value = self._epoch(s, evidence, n, rng)
                self._record(epoch + 1, value, callback)
            return self
        problem = _TreeProblem(s, evidence, n, 1.0 if self.prior is None else self.prior)
        clear_gibbs(self)
        if self.learn == "gibbs":
            names = {"prior:" + s.names[r]: f"priors_[{s.names[r]!r}]" for r in s.roots}
            names.update({"weight:" + s.edge_name(e): f"weights_[{s.edge_name(e)!r}]"
                          for e in range(len(s.edges))})
            result = fit_gibbs(self, problem, lambda _: problem.pack(weights, prior), "w", rng,
                               lambda d: {names[k]: v for k, v in d.items()}, callback)
            rows, prior = problem.unpack(result.mean)
            self._set_params(s, rows, prior)
            return self
        result = fit_restarts(problem, self.learn, lambda _: problem.pack(weights, prior),
                              n_iter=self.n_iter, tol=self.tol, which="w", verbose=self.verbose,
                              callback=callback)
        rows, prior = problem.unpack(result.params)
        self.monitor_ = result.monitor
        self._set_params(s, rows, prior)
        return self

    def _record(self, iteration: int, value: float, callback) -> None:
        self.monitor_.history.append(float(value))
        if self.verbose:
            print(f"{iteration:>6} {value:>20.10f}", file=sys.stderr)
        if callback is not None:
            callback(iteration, float(value))

    def _epoch(self, s: Structure, evidence: list, n: int, rng) -> float:
        """One pass of stochastic EM over the patterns in a random order. The estimator
        changes only when the whole pass succeeded."""
        weights, prior = self._params(s)
        usage = check_stream(s, getattr(self, "usage_", None), self.n_batches_)
        batches = int(self.n_batches_)
        order = rng.permutation(n)
        total, bad = 0.0, 0
        for start in range(0, n, self.batch_size):
            idx = order[start:start + self.batch_size]
            ev = [None if e is None else e[idx] for e in evidence]
            weights, prior, usage, log_w, log_ev = funk.step(
                s, weights, prior, ev, len(idx), rng, self.learning_rate,
                bool(self.soft_normalization), float(self.balance), usage)
            check_possible(log_ev, index=idx)
            batches += 1
            check_step(s, weights, prior, self.learning_rate, batches)
            ok = np.isfinite(log_w)
            total += float(np.sum(log_w[ok]))
            bad += int(len(ok) - ok.sum())
        self.inconsistent_ = bad / n
        self.n_batches_ = batches
        self._set_params(s, weights, prior)
        self.usage_ = {s.names[v]: usage[v] for v in s.hidden}
        return total

    def partial_fit(self, X, likelihoods: dict | None = None):
        r"""Run one pass of stochastic EM over ``X``, continuing from the current parameters.

        In mini-batches, ``learn="stochastic-em"`` only; the first call initialises the
        parameters. A call that fails (bad data, a pattern of probability zero) leaves the model
        as it was.

        Parameters
        ----------
        X : array-like of int of shape (n_patterns, n_observed)
            The observed symbols, one column per observed variable in the order of
            ``observed``; ``-1`` for a missing one.
        likelihoods : dict or None, default=None
            Soft evidence :math:`P(X_v \mid v)` on hidden variables: ``{hidden variable:
            (n_patterns, n_states) array}``.

        Returns
        -------
        TreeNet
            The model itself, updated.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``learn`` is not ``"stochastic-em"`` or the data are invalid.
        ZeroProbabilityError
            If a pattern has probability zero under the current parameters.

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> model = hs.TreeNet(n_states={"Z": 2}, edges=[("Z", "A"), ("Z", "B")],
        ...                    observed={"A": 3, "B": 3}, random_state=0)
        >>> model.priors_ = {"Z": np.array([0.6, 0.4])}
        >>> model.weights_ = {"Z->A": np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]),
        ...                   "Z->B": np.array([[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]])}
        >>> X, Z = model.sample(500, random_state=1)
        >>> online = hs.TreeNet(n_states={"Z": 2}, edges=[("Z", "A"), ("Z", "B")],
        ...                     observed={"A": 3, "B": 3}, learn="stochastic-em", random_state=0)
        >>> online = online.partial_fit(X[:200]).partial_fit(X[200:])
        >>> online.n_batches_, len(online.monitor_.history)
        (5, 2)
        """
        s = self._check_hyper()
        if self.learn != "stochastic-em":
            raise InvalidInputError(
                f"learn: partial_fit needs learn='stochastic-em', not {self.learn!r}; use fit "
                "for batch learning")
        evidence, n = self._evidence(s, X, likelihoods, "partial_fit")
        if not hasattr(self, "n_batches_"):
            rng = self._rng()
            weights, prior = self._initial(s, rng)
            self._set_params(s, weights, prior)
            self.usage_ = {s.names[v]: np.full(s.sizes[v], 1.0 / s.sizes[v]) for v in s.hidden}
            self.n_batches_ = 0
            self.n_features_ = len(s.observed)
            self.monitor_ = ConvergenceMonitor(self.tol, self.n_iter, self.verbose)
        check_stream(s, getattr(self, "usage_", None), self.n_batches_)
        # a stream's randomness depends only on the seed and the batches already seen, so a
        # saved and reloaded model continues it exactly
        seed = self.random_state if isinstance(self.random_state, (int, np.integer)) else None
        rng = np.random.default_rng(None if seed is None else [int(seed), int(self.n_batches_)])
        value = self._epoch(s, evidence, n, rng)
        self._record(len(self.monitor_.history) + 1, value, None)
        return self

    # -- inference ------------------------------------------------------------------------------
    def _prepare(self, X, likelihoods, what: str, per_pattern: float = 0.0,
                 samples: int = 0):
        s = self._check_hyper()
        weights, prior = self._params(s)
        evidence, n = self._evidence(s, X, likelihoods, what, per_pattern, samples)
        return s, weights, passes.normalise_rows(weights), prior, evidence, n

    def _draws(self, s, rows, prior, evidence, n, rng, k: int):
        """``k`` downward samples of every pattern: ``(z (k, n, n_vars), log p(z, X) (k, n),
        log weights (k, n), the upward pass's log-evidence (n,))`` (the last is -inf
        exactly for the patterns of probability zero, in a DAG too). One upward pass per
        chunk of patterns; the samples of a chunk are drawn together, ``k`` copies of each
        pattern stacked."""
        z = np.empty((k, n, s.n_vars), dtype=np.int64)
        log_p, log_w, log_ev = np.empty((k, n)), np.empty((k, n)), np.empty(n)
        per = max(1, CHUNK // k)
        for start in range(0, n, per):
            sl = slice(start, min(n, start + per))
            m = sl.stop - start
            ev = [None if e is None else e[sl] for e in evidence]
            upw = passes.upward(s, rows, ev, m)
            log_ev[sl] = passes.log_evidence(s, prior, upw)
            tile = [None if e is None else np.tile(e, (k, 1)) for e in ev]
            d = passes.sample_down(s, rows, prior, [np.tile(u, (k, 1)) for u in upw.up], tile,
                                   k * m, rng)
            z[:, sl] = d.z.reshape(k, m, s.n_vars)
            log_p[:, sl] = d.log_p.reshape(k, m)
            log_w[:, sl] = d.log_weight.reshape(k, m)
        return z, log_p, log_w, log_ev

    @posterior_predictive
    def score_samples(self, X, likelihoods: dict | None = None,
                      random_state=None) -> np.ndarray:
        r"""Compute :math:`\log P(X)` of each pattern.

        Exact for a tree; for a DAG the importance-sampling estimate
        :math:`\log \frac1S \sum_s p(z_s, X)/q(z_s)` with ``n_samples`` downward samples
        (consistent; a lower bound in expectation).

        Parameters
        ----------
        X : array-like of int of shape (n_patterns, n_observed)
            The observed symbols, one column per observed variable in the order of
            ``observed``; ``-1`` for a missing one.
        likelihoods : dict or None, default=None
            Soft evidence :math:`P(X_v \mid v)` on hidden variables: ``{hidden variable:
            (n_patterns, n_states) array}``.
        random_state : int, numpy.random.Generator or None, default=None
            The seed of a DAG's samples; None: the estimator's ``random_state``.

        Returns
        -------
        ndarray of shape (n_patterns,)
            The log-evidence of each pattern (``-inf`` for a pattern of probability zero).

        Raises
        ------
        NotFittedError
            Before ``fit`` (or before the parameters are set by hand).
        hiddenstate.errors.InvalidInputError
            If the data or a parameter set by hand are invalid, or (a DAG) no sample of a pattern
            is consistent with its evidence (the message names ``n_samples``).

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> model = hs.TreeNet(n_states={"Z": 2}, edges=[("Z", "A"), ("Z", "B")],
        ...                    observed={"A": 3, "B": 3}, random_state=0)
        >>> model.priors_ = {"Z": np.array([0.6, 0.4])}
        >>> model.weights_ = {"Z->A": np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]),
        ...                   "Z->B": np.array([[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]])}
        >>> model.score_samples([[0, 0], [2, 2]]).round(3)
        array([-1.079, -1.619])
        >>> model.score_samples([[0, 0]], likelihoods={"Z": np.array([[1.0, 0.0]])}).round(3)
        array([-1.091])
        """
        s = self._check_hyper()
        k = 0 if s.is_tree else self.n_samples
        s, _, rows, prior, evidence, n = self._prepare(X, likelihoods, "score_samples", 8.0, k)
        if s.is_tree:
            out = np.empty(n)
            for sl, m, ev in _chunks(evidence, n):
                out[sl] = passes.log_evidence(s, prior, passes.upward(s, rows, ev, m))
            return out
        _, _, log_w, log_ev = self._draws(s, rows, prior, evidence, n,
                                          self._rng(random_state), k)
        top = log_w.max(axis=0)
        possible = np.isfinite(log_ev)
        check_consistent(np.isfinite(top) | ~possible, k, "estimate of log P(X)")
        safe = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore"):
            return safe + np.log(np.mean(np.exp(log_w - safe), axis=0))

    def score(self, X, likelihoods: dict | None = None) -> float:
        r"""Compute :math:`\log P(X)` summed over the patterns (see :meth:`score_samples`).

        Parameters
        ----------
        X : array-like of int of shape (n_patterns, n_observed)
            The observed symbols, one column per observed variable in the order of
            ``observed``; ``-1`` for a missing one.
        likelihoods : dict or None, default=None
            Soft evidence :math:`P(X_v \mid v)` on hidden variables: ``{hidden variable:
            (n_patterns, n_states) array}``.

        Returns
        -------
        float
            The summed log-evidence.

        Raises
        ------
        NotFittedError
            Before ``fit`` (or before the parameters are set by hand).
        hiddenstate.errors.InvalidInputError
            If the data or a parameter set by hand are invalid, or (a DAG) no sample of a pattern
            is consistent with its evidence (the message names ``n_samples``).

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> model = hs.TreeNet(n_states={"Z": 2}, edges=[("Z", "A"), ("Z", "B")],
        ...                    observed={"A": 3, "B": 3}, random_state=0)
        >>> model.priors_ = {"Z": np.array([0.6, 0.4])}
        >>> model.weights_ = {"Z->A": np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]),
        ...                   "Z->B": np.array([[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]])}
        >>> round(model.score([[0, 0], [2, 2]]), 3)
        -2.698
        """
        return float(self.score_samples(X, likelihoods).sum())

    def predict_proba(self, X, likelihoods: dict | None = None,
                      random_state=None) -> dict:
        r"""Compute the posterior marginals of the hidden variables.

        Exact for a tree (eq. 3); for a DAG, averages of ``n_samples`` downward samples under
        ``correction``.

        Parameters
        ----------
        X : array-like of int of shape (n_patterns, n_observed)
            The observed symbols, one column per observed variable in the order of
            ``observed``; ``-1`` for a missing one.
        likelihoods : dict or None, default=None
            Soft evidence :math:`P(X_v \mid v)` on hidden variables: ``{hidden variable:
            (n_patterns, n_states) array}``.
        random_state : int, numpy.random.Generator or None, default=None
            The seed of a DAG's samples; None: the estimator's ``random_state``.

        Returns
        -------
        dict of str to ndarray
            ``{hidden variable: (n_patterns, n_states) array}``.

        Raises
        ------
        ZeroProbabilityError
            If a pattern has probability zero under the model.
        NotFittedError
            Before ``fit`` (or before the parameters are set by hand).
        hiddenstate.errors.InvalidInputError
            If the data or a parameter set by hand are invalid, or (a DAG) no sample of a pattern
            is consistent with its evidence (the message names ``n_samples``).

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> model = hs.TreeNet(n_states={"Z": 2}, edges=[("Z", "A"), ("Z", "B")],
        ...                    observed={"A": 3, "B": 3}, random_state=0)
        >>> model.priors_ = {"Z": np.array([0.6, 0.4])}
        >>> model.weights_ = {"Z->A": np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]),
        ...                   "Z->B": np.array([[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]])}
        >>> model.predict_proba([[0, 0], [2, 2]])["Z"].round(2)
        array([[0.99, 0.01],
               [0.03, 0.97]])
        """
        s = self._check_hyper()
        k = 0 if s.is_tree else self.n_samples
        width = 8.0 * sum(s.sizes[v] for v in s.hidden)
        s, _, rows, prior, evidence, n = self._prepare(X, likelihoods, "predict_proba",
                                                       width, k)
        if s.is_tree:
            out = {s.names[v]: np.empty((n, s.sizes[v])) for v in s.hidden}
            ll = np.empty(n)
            for sl, m, ev in _chunks(evidence, n):
                upw = passes.upward(s, rows, ev, m)
                ll[sl] = passes.log_evidence(s, prior, upw)
                post = passes.marginals(s, rows, prior, upw)
                for v in s.hidden:
                    out[s.names[v]][sl] = post[v]
            check_possible(ll, "posterior")
            return out
        z, _, log_w, log_ev = self._draws(s, rows, prior, evidence, n,
                                          self._rng(random_state), k)
        check_possible(log_ev, "posterior")
        if self.correction == "importance":
            top = log_w.max(axis=0)
            w = np.exp(log_w - np.where(np.isfinite(top), top, 0.0))
        elif self.correction == "reject":
            w = np.isfinite(log_w).astype(np.float64)
        else:
            w = np.ones_like(log_w)
        total = w.sum(axis=0)
        check_consistent(total > 0, k, f"posterior under correction={self.correction!r}")
        out = {}
        rows_n = np.arange(n)
        for v in s.hidden:
            acc = np.zeros((n, s.sizes[v]))
            for zs, ws in zip(z, w, strict=True):
                np.add.at(acc, (rows_n, zs[:, v]), ws)
            out[s.names[v]] = acc / total[:, None]
        return out

    def sample_posterior(self, X, likelihoods: dict | None = None, correction: str = "none",
                         max_tries: int = 100, random_state=None,
                         return_log_weights: bool = False):
        r"""Draw one posterior sample of the hidden variables per pattern.

        Downward sampling (eq. 5/7; exact for a tree). For a DAG, ``correction="none"`` returns
        the downward samples as drawn (some may be inconsistent with the evidence: log weight
        ``-inf``), ``"reject"`` redraws the inconsistent ones (up to ``max_tries`` rounds) and
        ``"importance"`` picks one of ``n_samples`` proposals with probability proportional to
        its importance weight (sampling-importance-resampling).

        Parameters
        ----------
        X : array-like of int of shape (n_patterns, n_observed)
            The observed symbols, one column per observed variable in the order of
            ``observed``; ``-1`` for a missing one.
        likelihoods : dict or None, default=None
            Soft evidence :math:`P(X_v \mid v)` on hidden variables: ``{hidden variable:
            (n_patterns, n_states) array}``.
        correction : {"none", "reject", "importance"}, default="none"
            How a DAG's samples are corrected (a tree's are exact).
        max_tries : int, default=100
            The rounds of ``correction="reject"``.
        random_state : int, numpy.random.Generator or None, default=None
            The seed of a DAG's samples; None: the estimator's ``random_state``.
        return_log_weights : bool, default=False
            Also return :math:`\log p(z, X)/q(z)` of each returned sample.

        Returns
        -------
        states : ndarray of int of shape (n_patterns, n_hidden)
            The hidden states, in the order of ``n_states``.
        log_weights : ndarray of shape (n_patterns,)
            Only with ``return_log_weights``.

        Raises
        ------
        ZeroProbabilityError
            If a pattern has probability zero under the model.
        NotFittedError
            Before ``fit`` (or before the parameters are set by hand).
        hiddenstate.errors.InvalidInputError
            If the data or a parameter set by hand are invalid, or (a DAG) no sample of a pattern
            is consistent with its evidence (the message names ``n_samples``).

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> model = hs.TreeNet(n_states={"Z": 2}, edges=[("Z", "A"), ("Z", "B")],
        ...                    observed={"A": 3, "B": 3}, random_state=0)
        >>> model.priors_ = {"Z": np.array([0.6, 0.4])}
        >>> model.weights_ = {"Z->A": np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]),
        ...                   "Z->B": np.array([[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]])}
        >>> model.sample_posterior([[0, 0], [2, 2]], random_state=0)
        array([[0],
               [1]])
        """
        check_choice(correction, "correction", CORRECTIONS)
        check_positive_int(max_tries, "max_tries")
        s = self._check_hyper()
        k = self.n_samples if correction == "importance" else 1
        s, _, rows, prior, evidence, n = self._prepare(X, likelihoods, "sample_posterior",
                                                       8.0 * s.n_vars + 8, k)
        rng = self._rng(random_state)
        if correction == "importance":
            zs, _, lw, log_ev = self._draws(s, rows, prior, evidence, n, rng, k)
            check_possible(log_ev, "posterior sample")
            top = lw.max(axis=0)
            check_consistent(np.isfinite(top), k, "posterior sample")
            pick = passes.categorical(np.exp(lw - top).T, rng)
            z = zs[pick, np.arange(n)]
            log_w = lw[pick, np.arange(n)]
        else:
            z = np.empty((n, s.n_vars), dtype=np.int64)
            log_w, log_ev = np.empty(n), np.empty(n)
            for sl, m, ev in _chunks(evidence, n):
                upw = passes.upward(s, rows, ev, m)
                log_ev[sl] = passes.log_evidence(s, prior, upw)
                draw = passes.sample_down(s, rows, prior, upw.up, ev, m, rng)
                zc, lwc = draw.z, draw.log_weight
                if correction == "reject":
                    for _ in range(max_tries - 1):
                        bad = np.flatnonzero(~np.isfinite(lwc) & np.isfinite(log_ev[sl]))
                        if not len(bad):
                            break
                        again = passes.sample_down(
                            s, rows, prior, [u[bad] for u in upw.up],
                            [None if e is None else e[bad] for e in ev], len(bad), rng)
                        zc[bad], lwc[bad] = again.z, again.log_weight
                z[sl], log_w[sl] = zc, lwc
            check_possible(log_ev, "posterior sample")
            if correction == "reject":
                check_consistent(np.isfinite(log_w), max_tries, "posterior sample",
                                 "max_tries")
        states = z[:, list(s.hidden)]
        return (states, log_w) if return_log_weights else states

    def decode(self, X, likelihoods: dict | None = None, random_state=None):
        r"""Find the most probable joint state of the hidden variables.

        Exact max-product for a tree; for a DAG the best of ``n_samples`` posterior samples (a
        lower bound on the maximum).

        Parameters
        ----------
        X : array-like of int of shape (n_patterns, n_observed)
            The observed symbols, one column per observed variable in the order of
            ``observed``; ``-1`` for a missing one.
        likelihoods : dict or None, default=None
            Soft evidence :math:`P(X_v \mid v)` on hidden variables: ``{hidden variable:
            (n_patterns, n_states) array}``.
        random_state : int, numpy.random.Generator or None, default=None
            The seed of a DAG's samples; None: the estimator's ``random_state``.

        Returns
        -------
        log_prob : ndarray of shape (n_patterns,)
            :math:`\log p(X, z^*)` of each pattern.
        states : ndarray of int of shape (n_patterns, n_hidden)
            :math:`z^*`, in the order of ``n_states``.

        Raises
        ------
        ZeroProbabilityError
            If a pattern has probability zero under the model.
        NotFittedError
            Before ``fit`` (or before the parameters are set by hand).
        hiddenstate.errors.InvalidInputError
            If the data or a parameter set by hand are invalid, or (a DAG) no sample of a pattern
            is consistent with its evidence (the message names ``n_samples``).

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> model = hs.TreeNet(n_states={"Z": 2}, edges=[("Z", "A"), ("Z", "B")],
        ...                    observed={"A": 3, "B": 3}, random_state=0)
        >>> model.priors_ = {"Z": np.array([0.6, 0.4])}
        >>> model.weights_ = {"Z->A": np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]),
        ...                   "Z->B": np.array([[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]])}
        >>> log_prob, states = model.decode([[0, 0], [2, 2]])
        >>> log_prob.round(3), states.ravel()
        (array([-1.091, -1.65 ]), array([0, 1]))
        """
        s = self._check_hyper()
        k = 0 if s.is_tree else self.n_samples
        s, _, rows, prior, evidence, n = self._prepare(X, likelihoods, "decode",
                                                       8.0 * s.n_vars + 8, k)
        if s.is_tree:
            values, zs = [], []
            for _, m, ev in _chunks(evidence, n):
                value, z = passes.max_product(s, rows, prior, ev, m)
                values.append(value)
                zs.append(z)
            value, z = np.concatenate(values), np.concatenate(zs)
            check_possible(value, "most probable state")
        else:
            zs, lp, _, log_ev = self._draws(s, rows, prior, evidence, n,
                                            self._rng(random_state), k)
            check_possible(log_ev, "most probable state")
            best = lp.argmax(axis=0)
            value = lp[best, np.arange(n)]
            check_consistent(np.isfinite(value), k, "most probable state")
            z = zs[best, np.arange(n)]
        return value, z[:, list(s.hidden)]

    def sample(self, n_samples: int = 1, random_state=None):
        """Generate ``n_samples`` patterns from the model.

        Parameters
        ----------
        n_samples : int, default=1
            The number of patterns.
        random_state : int, numpy.random.Generator or None, default=None
            The seed; None: the estimator's ``random_state``.

        Returns
        -------
        X : ndarray of int of shape (n_samples, n_observed)
            The observed symbols.
        states : ndarray of int of shape (n_samples, n_hidden)
            The hidden states.

        Raises
        ------
        NotFittedError
            Before ``fit`` (or before the parameters are set by hand).
        hiddenstate.errors.InsufficientMemoryError
            If the sample would not fit in memory (raised before anything is allocated).

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> model = hs.TreeNet(n_states={"Z": 2}, edges=[("Z", "A"), ("Z", "B")],
        ...                    observed={"A": 3, "B": 3}, random_state=0)
        >>> model.priors_ = {"Z": np.array([0.6, 0.4])}
        >>> model.weights_ = {"Z->A": np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]),
        ...                   "Z->B": np.array([[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]])}
        >>> X, states = model.sample(4, random_state=1)
        >>> X.shape, states.shape
        ((4, 2), (4, 1))
        """
        n = check_positive_int(n_samples, "n_samples")
        s = self._check_hyper()
        weights, prior = self._params(s)
        check_memory({"n_samples": 8.0 * n * (3 * s.n_vars + 3 + 2 * max(s.sizes))},
                     "sample", {"n_samples": "draw fewer patterns per call"})
        rows = passes.normalise_rows(weights)
        draw = passes.sample_down(s, rows, prior, None, [None] * s.n_vars, n,
                                  self._rng(random_state))
        return draw.z[:, list(s.observed)], draw.z[:, list(s.hidden)]

    # -- persistence ----------------------------------------------------------------------------
    def learned_arrays(self) -> dict[str, np.ndarray]:
        """Return the parameters by name: what :meth:`save` writes.

        Returns
        -------
        dict of str to ndarray
            ``weights_:<parent>-><child>``, ``priors_:<root>`` and, for stochastic EM,
            ``usage_:<variable>``.

        Raises
        ------
        NotFittedError
            Before ``fit`` (or before the parameters are set by hand).
        """
        self._check_is_fitted()
        out = {"weights_:" + k: np.asarray(v, dtype=np.float64) for k, v in self.weights_.items()}
        out.update({"priors_:" + k: np.asarray(v, dtype=np.float64)
                    for k, v in self.priors_.items()})
        out.update({"usage_:" + k: np.asarray(v, dtype=np.float64)
                    for k, v in getattr(self, "usage_", {}).items()})
        return out

    def learned_scalars(self) -> dict:
        """Return the scalars :meth:`save` writes as JSON.

        Returns
        -------
        dict
            ``{"n_batches_": int}`` after stochastic EM, else empty.
        """
        return {"n_batches_": int(self.n_batches_)} if hasattr(self, "n_batches_") else {}

    def set_learned(self, arrays: dict, scalars: dict) -> None:
        """Restore what :meth:`learned_arrays` and :meth:`learned_scalars` returned.

        Parameters
        ----------
        arrays : dict of str to ndarray
            The arrays, by name.
        scalars : dict
            The scalars, by name.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a name is not a learned array or scalar of TreeNet.
        """
        groups: dict = {"weights_": {}, "priors_": {}, "usage_": {}}
        for key, value in arrays.items():
            head, _, name = key.partition(":")
            if head not in groups or not name:
                raise InvalidInputError(f"{key}: not a learned array of {type(self).__name__}")
            groups[head][name] = value
        self.weights_, self.priors_ = groups["weights_"], groups["priors_"]
        _learned.mark_own(self, ["weights_", "priors_"])  # a fit's values
        if groups["usage_"]:
            self.usage_ = groups["usage_"]
        for key, value in scalars.items():
            if key != "n_batches_" or isinstance(value, bool) or not isinstance(value, int) \
                    or value < 0:
                raise InvalidInputError(f"{key}: not a learned scalar of TreeNet ({value!r})")
            self.n_batches_ = value

    def _check_learned(self) -> None:
        """Validate loaded parameters against the (validated) structure."""
        s = self._check_hyper()
        self._params(s)
        if hasattr(self, "usage_"):
            check_stream(s, self.usage_, getattr(self, "n_batches_", 0))

    def save(self, path) -> None:
        """Save the model to the directory ``path``.

        ``model.json`` with the structure + ``arrays.npz`` (no pickle); read it back with
        :func:`hiddenstate.load`. Hand-set parameters can be saved without ``fit``; they are
        validated first.

        Parameters
        ----------
        path : str or os.PathLike
            The directory.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a hyper-parameter or a parameter set by hand is invalid.

        Examples
        --------
        >>> import numpy as np
        >>> import hiddenstate as hs
        >>> model = hs.TreeNet(n_states={"Z": 2}, edges=[("Z", "A"), ("Z", "B")],
        ...                    observed={"A": 3, "B": 3}, random_state=0)
        >>> model.priors_ = {"Z": np.array([0.6, 0.4])}
        >>> model.weights_ = {"Z->A": np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]),
        ...                   "Z->B": np.array([[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]])}
        >>> model.save("tree-model")
        >>> round(hs.load("tree-model").score([[0, 0]]), 3)
        -1.079
        """
        from ._saving import save

        s = self._check_hyper()
        self._params(s)
        self.n_features_ = len(s.observed)
        if not hasattr(self, "monitor_"):
            self.monitor_ = ConvergenceMonitor(self.tol, self.n_iter, self.verbose)
        save(self, path)


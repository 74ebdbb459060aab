r"""The estimator of a program's switch probabilities: :class:`ProgramModel`.

``ProgramModel(program, learn="em" | "map" | "vb" | "vt" | "kvt")`` learns every switch
that is not ``fixed`` from observed goals with the generic batch learner
(:func:`hiddenstate.learn.fit`), the same code that learns an HMM; ``anneal=`` adds
deterministic annealing to EM and MAP. Before ``fit`` the model uses the probabilities
declared in the program (uniform where none were given), so a hand-set program can be
scored, decoded and sampled at once.

**What EM computes.** The inside pass sums the probabilities of a goal's explanations. When
the explanations are exclusive (at most one is true in any run of the program, PRISM's
exclusiveness condition; HMMs, PCFGs and Bayesian networks written generatively satisfy it)
that sum is P(G) and EM maximises the likelihood. When they are not (the path program of
``docs/programs.md``), the sum over-counts the overlaps: it is an upper bound of P(G), can
exceed one, and EM maximises that sum, not the likelihood. Viterbi training only ever uses
the probability of one explanation, so it is exact for any program (Sato & Kubota, sec. 6).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence

import numpy as np

from .._deprecation import keyword_only_after_first, renamed_method
from .._sklearn_base import BaseEstimator
from .._validation import check_memory, check_positive_int, check_random_state, make_rng
from ..errors import HiddenStateError, InvalidInputError, ProgramError
from ..learn import MODES, fit_restarts
from ..learn.gibbs_fit import (
    PosteriorSampling,
    check_learner_options,
    clear_gibbs,
    fit_gibbs,
    posterior_predictive,
)
from .graph import Explanation
from .problem import LEARNED, ProgramProblem, check_possible
from .program import Goal, Msw, Program, as_goals
from .saving import save as save_model
from .tabling import explain

INITS = ("random", "declared", "uniform")


#: the most stages an annealing schedule may have (each runs EM to convergence)
MAX_STAGES = 1000
#: the least memory one run of :meth:`ProgramModel.sample` keeps: the result list's
#: reference and the smallest Python object a sampler returns (the memory estimate)
SAMPLE_RUN_BYTES = 64.0


def geometric_schedule(beta0: float = 0.1, rate: float = 1.5) -> list[float]:
    """Return PRISM's DAEM schedule: beta0, beta0 * rate, ... up to 1.

    PRISM's ``itemp_init`` and ``itemp_rate``; at most :data:`MAX_STAGES` stages. Pass it
    as ``ProgramModel(anneal=...)``.

    Parameters
    ----------
    beta0 : float, default=0.1
        The first inverse temperature, in (0, 1].
    rate : float, default=1.5
        The factor between stages, > 1.

    Returns
    -------
    list of float
        The inverse temperatures, the last 1.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``beta0`` or ``rate`` is out of range, or the schedule has more than
        :data:`MAX_STAGES` stages.

    Examples
    --------
    >>> from hiddenstate.programs import geometric_schedule
    >>> geometric_schedule(0.25, 2.0)
    [0.25, 0.5, 1.0]
    """
    if isinstance(beta0, bool) or not (isinstance(beta0, (int, float)) and 0 < beta0 <= 1):
        raise InvalidInputError(f"beta0: expected a number in (0, 1], got {beta0!r}")
    if isinstance(rate, bool) or not (isinstance(rate, (int, float)) and rate > 1):
        raise InvalidInputError(f"rate: expected a number > 1, got {rate!r}")
    stages = 1 + np.ceil(-np.log(beta0) / np.log(rate))
    if not stages <= MAX_STAGES:
        raise InvalidInputError(
            f"rate: going from beta0={beta0!r} to 1 by a factor {rate!r} takes {stages:.3g} "
            f"stages, more than {MAX_STAGES} (each runs EM to convergence); use a larger "
            "rate or beta0")
    out = [float(beta0)]
    while out[-1] < 1.0:
        out.append(min(1.0, out[-1] * rate))
    return out


class ProgramModel(PosteriorSampling, BaseEstimator):
    r"""Learn the switch probabilities of a :class:`~hiddenstate.programs.Program`.

    Parameters
    ----------
    program : hiddenstate.programs.Program
        The program (switches and tabled goals).
    learn : {"em", "map", "vb", "vt", "kvt", "gibbs"}, default="em"
        ``"gibbs"`` draws from the posterior under the declared priors (``posterior_samples_``
        by ``"probs_[<switch>]"``; exact when the explanations are exclusive, see
        ``docs/gibbs.md``); ``"em"`` (maximum likelihood; declared priors are not used), ``"map"``
        (posterior mode under the switches' Dirichlet priors), ``"vb"`` (variational Bayes;
        Dirichlet posteriors in ``posterior_``), ``"vt"`` (Viterbi training: MAP M-step on
        the counts of the most probable explanation of each goal, stops when those stop
        changing) or ``"kvt"`` (the ``k_best`` most probable explanations, weighted by their
        normalised probabilities). See ``docs/learning-modes.md``.
    n_iter : int, default=100
        The most iterations of each restart.
    tol : float, default=1e-4
        The objective gain per observed goal below which EM/MAP/VB stop (``-inf``: never;
        VT and k-best VT stop on their explanations).
    n_init : int, default=1
        Random restarts (``init="random"``); the run with the best final objective of
        the mode is kept.
    init : {"random", "declared", "uniform"}, default="random"
        ``"random"`` (each learned switch drawn from a flat Dirichlet), ``"declared"``
        (the model's current probabilities: ``probs_`` where set by hand, loaded or left by
        a previous fit, else those declared in the program, uniform where none) or
        ``"uniform"``.
    k_best : int, default=1
        Number of explanations for ``learn="kvt"``.
    anneal : sequence of float or None, default=None
        Deterministic annealing for ``"em"``/``"map"``: increasing inverse
        temperatures in (0, 1] (1 is appended if missing; see :func:`geometric_schedule`).
        EM runs to convergence at each; ``monitor_`` is the last (beta = 1) stage and
        ``anneal_history_`` the objectives of every stage. None: no annealing.
    random_state : int, numpy.random.Generator or None, default=None
        The seed of the random starts (and of the sampling methods).
    verbose : bool, default=False
        Print the objective per iteration to stderr.
    learner_options : dict or None, default=None
        The options of ``learn="gibbs"`` (``n_samples``, ``burn_in``, ``thin``,
        ``n_chains``, ``n_jobs``, ``check_convergence``; see ``docs/gibbs.md``).

    Attributes
    ----------
    probs_ : dict
        Switch name -> probabilities (in the declared order of its outcomes).
    posterior_ : dict
        (``learn="vb"``) switch name -> Dirichlet concentrations.
    monitor_ : hiddenstate.learn.ConvergenceMonitor
        ``history`` (the mode's objective per iteration) and ``converged``.
    anneal_history_ : list of (float, list of float)
        ``(beta, history)`` per annealing stage.

    Examples
    --------
    Two coins, one chosen at random and tossed twice:

    >>> import hiddenstate as hs
    >>> from hiddenstate.programs import Program, msw
    >>> prog = Program("coins")
    >>> prog.switch("coin", ["a", "b"])
    'coin'
    >>> toss = prog.switch_family("toss", ["h", "t"], keys=["a", "b"])
    >>> @prog.goal
    ... def two(x, y):
    ...     return [[msw("coin", c), msw(toss(c), x), msw(toss(c), y)] for c in "ab"]
    >>> data = [two("h", "h")] * 4 + [two("t", "t")] * 3 + [two("h", "t")]
    >>> model = hs.ProgramModel(prog, random_state=0).fit(data)
    >>> model.probs_[toss("a")].round(3), model.probs_[toss("b")].round(3)
    (array([0.98, 0.02]), array([0.122, 0.878]))
    """

    @keyword_only_after_first
    def __init__(self, program: Program, learn: str = "em", n_iter: int = 100,
                 tol: float = 1e-4, n_init: int = 1, init: str = "random", k_best: int = 1,
                 anneal: Sequence[float] | None = None, random_state=None,
                 verbose: bool = False, learner_options: dict | None = None):
        self.program = program
        self.learn = learn
        self.n_iter = n_iter
        self.tol = tol
        self.n_init = n_init
        self.init = init
        self.k_best = k_best
        self.anneal = anneal
        self.random_state = random_state
        self.verbose = verbose
        self.learner_options = learner_options

    # -- checks --------------------------------------------------------------------------------
    def _check_program(self) -> Program:
        if not isinstance(self.program, Program):
            raise InvalidInputError(
                f"program: expected a hiddenstate.programs.Program, got "
                f"{type(self.program).__name__}")
        return self.program

    def _check_hyper(self) -> None:
        self._check_program()
        if self.learn not in MODES:
            raise InvalidInputError(f"learn: {self.learn!r} is not one of {MODES}")
        check_positive_int(self.n_iter, "n_iter")
        check_positive_int(self.n_init, "n_init")
        check_positive_int(self.k_best, "k_best")
        if isinstance(self.tol, bool) or not isinstance(self.tol, (int, float)) \
                or np.isnan(self.tol):
            raise InvalidInputError(f"tol: expected a number, got {self.tol!r}")
        check_random_state(self.random_state)
        if self.init not in INITS:
            raise InvalidInputError(f"init: {self.init!r} is not one of {INITS}")
        if self.init != "random" and self.n_init != 1:
            raise InvalidInputError(
                f"n_init: restarts need random starting points; use init='random' or "
                f"n_init=1 with init={self.init!r}")
        check_learner_options(self)
        self._schedule()

    def _schedule(self) -> list[float]:
        if self.anneal is None:
            return [1.0]
        if self.learn not in ("em", "map"):
            raise InvalidInputError(
                f"anneal: deterministic annealing tempers the E-step of 'em' and 'map', not "
                f"learn={self.learn!r}; drop anneal or use learn='em'/'map'")
        try:
            betas = [float(b) for b in self.anneal]
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"anneal: expected a sequence of inverse temperatures, got {self.anneal!r}") \
                from exc
        if len(betas) > MAX_STAGES:
            raise InvalidInputError(
                f"anneal: {len(betas)} stages, more than {MAX_STAGES} (each runs EM to "
                "convergence); use fewer inverse temperatures")
        if not betas or any(not (0 < b <= 1) for b in betas) \
                or any(b1 <= b0 for b0, b1 in zip(betas, betas[1:], strict=False)):
            raise InvalidInputError(
                f"anneal: expected strictly increasing values in (0, 1], got {self.anneal!r} "
                "(e.g. hiddenstate.programs.geometric_schedule(0.1, 1.5))")
        return betas if betas[-1] == 1.0 else betas + [1.0]

    def _check_goals(self, goals, name: str = "goals") -> list[Goal]:
        self._check_program()
        if name == "goal" and type(goals) is not Goal:
            raise InvalidInputError(
                f"goal: expected one goal of program {self.program.name!r}, got "
                f"{goals!r:.80}" + ("; call this method once per goal"
                                    if isinstance(goals, (list, tuple)) else ""))
        goals = as_goals(goals, name)
        for g in goals:
            if type(g) is not Goal or g[0].program is not self.program:
                raise InvalidInputError(
                    f"{name}: {g!r:.80} is not a goal of this model's program "
                    f"{self.program.name!r}; build goals by calling its @goal functions")
        return goals

    def _check_priors(self, problem: ProgramProblem) -> None:
        """The declared Dirichlet concentrations of the switches this fit learns: >= 1 for
        the point estimates ``"map"``, ``"vt"``, ``"kvt"`` (below 1 the posterior density
        is unbounded at the edge of the simplex: no mode), as ``hs.HMM`` requires."""
        if self.learn not in ("map", "vt", "kvt"):
            return
        table = self.program.switches
        for name, sids in problem.sids.items():
            if problem.letters[name] != LEARNED:
                continue
            for sid in sids:
                alpha = table.specs[sid].prior
                if np.any(alpha < 1):
                    raise InvalidInputError(
                        f"prior: switch {table.names[sid]!r} declares Dirichlet "
                        f"concentrations {alpha.tolist()} and learn={self.learn!r} needs them "
                        ">= 1: below 1 the posterior density is unbounded at the edge of the "
                        "simplex and has no mode. Declare prior >= 1, or use learn='vb' for a "
                        "sparse prior")

    # -- parameters ----------------------------------------------------------------------------
    def _theta(self) -> np.ndarray:
        """Flat probabilities of every switch instance: ``probs_`` where set, else the
        program's declared values (validated)."""
        table = self.program.switches
        probs = getattr(self, "probs_", {})
        if not isinstance(probs, dict):
            raise InvalidInputError(
                "probs_: expected a dict switch name -> probabilities; set it with "
                "set_probs or fit")
        for name in probs:
            if name not in table.ids:
                try:
                    table.instance_id(name)  # a switch of an open family not used yet
                except HiddenStateError:
                    raise InvalidInputError(
                        f"probs_: {name!r} is not a switch of program {self.program.name!r}; "
                        "set probabilities of declared switches only (set_probs checks the "
                        "name)") from None
        theta = np.empty(table.n_params)
        for sid in range(len(table.names)):
            theta[table.offsets[sid]:table.offsets[sid + 1]] = self._switch_probs(sid, probs)
        return theta

    def _switch_probs(self, sid: int, probs: dict | None = None) -> np.ndarray:
        table = self.program.switches
        name = table.names[sid]
        p = (getattr(self, "probs_", {}) if probs is None else probs).get(name)
        if p is None:
            return table.declared_probs(sid)
        return table.specs[sid].check_probs(p, f"probs_[{name!r}]")

    def set_probs(self, switch, probs) -> None:
        """Set the probabilities of one switch by hand (validated; used at once).

        Parameters
        ----------
        switch : hashable
            A switch name (or an instance of a switch family).
        probs : array-like of shape (n_outcomes,)
            A probability vector over its outcomes, in their declared order.

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If ``switch`` is not a switch of the program, or ``probs`` is not a
            probability vector of its length.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> from hiddenstate.programs import Program, msw
        >>> prog = Program("coins")
        >>> prog.switch("coin", ["a", "b"])
        'coin'
        >>> toss = prog.switch_family("toss", ["h", "t"], keys=["a", "b"])
        >>> @prog.goal
        ... def two(x, y):
        ...     return [[msw("coin", c), msw(toss(c), x), msw(toss(c), y)] for c in "ab"]
        >>> data = [two("h", "h")] * 4 + [two("t", "t")] * 3 + [two("h", "t")]
        >>> model = hs.ProgramModel(prog, random_state=0).fit(data)
        >>> model.set_probs("coin", [0.5, 0.5])
        >>> model.probs_["coin"]
        array([0.5, 0.5])
        """
        table = self._check_program().switches
        sid = table.instance_id(switch)
        if not hasattr(self, "probs_"):
            self.probs_ = {}
        self.probs_[table.names[sid]] = table.specs[sid].check_probs(
            probs, f"probs of switch {switch!r}")

    def _log_theta(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self._theta())

    def _graph(self, goals: list[Goal]):
        key = tuple(goals)
        cached = getattr(self, "_graph_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        graph = explain(self.program, goals)
        self._graph_cache = (key, graph)
        return graph

    def _start(self, problem: ProgramProblem, theta: np.ndarray, rng) -> dict:
        views = problem.views(theta)
        if self.init == "declared":
            return views
        for name, block in problem.blocks.items():
            if block.letter != LEARNED:
                continue
            shape = views[name].shape
            if self.init == "uniform":
                views[name] = np.full(shape, 1.0 / shape[1])
            else:
                g = rng.gamma(1.0, size=shape)
                views[name] = g / g.sum(axis=1, keepdims=True)
        return views

    # -- fitting -------------------------------------------------------------------------------
    def fit(self, goals, callback: Callable[[int, float], None] | None = None):
        """Learn the switch probabilities from observed goals.

        Parameters
        ----------
        goals : list of hiddenstate.programs.Goal
            The observed goals (a goal repeated counts repeatedly).
        callback : callable or None, default=None
            ``callback(iteration, objective)`` is called after every iteration.

        Returns
        -------
        ProgramModel
            The fitted model (``probs_``, ``monitor_``, ``posterior_``).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If a hyper-parameter, a goal or a declared prior is invalid.
        hiddenstate.errors.ProgramError
            If a goal has no explanation.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> from hiddenstate.programs import Program, msw
        >>> prog = Program("coins")
        >>> prog.switch("coin", ["a", "b"])
        'coin'
        >>> toss = prog.switch_family("toss", ["h", "t"], keys=["a", "b"])
        >>> @prog.goal
        ... def two(x, y):
        ...     return [[msw("coin", c), msw(toss(c), x), msw(toss(c), y)] for c in "ab"]
        >>> data = [two("h", "h")] * 4 + [two("t", "t")] * 3 + [two("h", "t")]
        >>> model = hs.ProgramModel(prog, random_state=0).fit(data)
        >>> model.monitor_.converged
        True
        """

        self._check_hyper()
        goals = self._check_goals(goals)
        graph = self._graph(goals)
        theta = self._theta()
        problem = ProgramProblem(graph, self.program.switches, theta, self.learn == "em")
        self._check_priors(problem)
        problem.check_explainable()
        rng = make_rng(self.random_state)
        clear_gibbs(self)
        table = self.program.switches
        if self.learn == "gibbs":
            keys = {sid: f"probs_[{table.names[sid]!r}]" for name, sids in problem.sids.items()
                    if problem.letters[name] == LEARNED for sid in sids}

            def to_attrs(draw):
                flat = problem.flat(draw)
                return {key: flat[table.offsets[sid]:table.offsets[sid + 1]]
                        for sid, key in keys.items()}

            result = fit_gibbs(self, problem, lambda _: self._start(problem, theta, rng),
                               LEARNED, rng, to_attrs, callback)
            flat = problem.flat(result.mean)
            self.probs_ = {name: flat[table.offsets[s]:table.offsets[s + 1]].copy()
                           for s, name in enumerate(table.names)}
            self.posterior_ = {}
            self.anneal_history_ = None
            return self
        result = fit_restarts(problem, self.learn, lambda _: self._start(problem, theta, rng),
                              n_init=self.n_init, n_iter=self.n_iter, tol=self.tol,
                              which=LEARNED, k_best=self.k_best, verbose=self.verbose,
                              callback=callback,
                              anneal=None if self.anneal is None else self._schedule())
        flat = problem.flat(result.params)
        self.probs_ = {name: flat[table.offsets[s]:table.offsets[s + 1]].copy()
                       for s, name in enumerate(table.names)}
        self.posterior_ = problem.switch_posteriors(result.posterior, table)
        self.monitor_ = result.monitor
        self.anneal_history_ = result.stages
        return self

    def _gibbs_assign(self, draw: dict) -> None:
        """Set the learned switches' probabilities to one draw of ``posterior_samples_``."""
        table = self.program.switches
        probs = dict(getattr(self, "probs_", {}))
        for name in table.names:
            key = f"probs_[{name!r}]"
            if key in draw:
                probs[name] = draw[key]
        self.probs_ = probs

    # -- inference -----------------------------------------------------------------------------
    @posterior_predictive
    def score_samples(self, goals) -> np.ndarray:
        """Return the log of the sum of the probabilities of each goal's explanations.

        After ``learn="gibbs"``: the posterior predictive, the log of the average over the
        draws (see :mod:`hiddenstate.learn.gibbs_fit`).

        Parameters
        ----------
        goals : list of hiddenstate.programs.Goal
            The goals.

        Returns
        -------
        ndarray of shape (n_goals,)
            The log-probabilities: log P(G) when the explanations are exclusive (see the
            module docstring); ``-inf`` for a goal of probability zero.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> from hiddenstate.programs import Program, msw
        >>> prog = Program("coins")
        >>> prog.switch("coin", ["a", "b"])
        'coin'
        >>> toss = prog.switch_family("toss", ["h", "t"], keys=["a", "b"])
        >>> @prog.goal
        ... def two(x, y):
        ...     return [[msw("coin", c), msw(toss(c), x), msw(toss(c), y)] for c in "ab"]
        >>> data = [two("h", "h")] * 4 + [two("t", "t")] * 3 + [two("h", "t")]
        >>> model = hs.ProgramModel(prog, random_state=0).fit(data)
        >>> model.score_samples([two("h", "h"), two("t", "h")]).round(4)
        array([-0.6932, -2.7722])
        """
        goals = self._check_goals(goals)
        graph = self._graph(goals)
        ins, _ = graph.inside(self._log_theta()[:graph.n_params])
        return ins[graph.roots]

    log_prob = renamed_method("log_prob", "score_samples")

    def score(self, goals) -> float:
        """Return the sum of :meth:`score_samples` over the goals.

        Parameters
        ----------
        goals : list of hiddenstate.programs.Goal
            The goals.

        Returns
        -------
        float
            The total log-likelihood.
        """
        return float(self.score_samples(goals).sum())

    def _expected(self, goals):
        goals = self._check_goals(goals)
        graph = self._graph(goals)
        ins, uses, counts = graph.expected(self._log_theta()[:graph.n_params])
        check_possible(graph, ins[graph.roots], "posterior (expected counts and uses)")
        return graph, ins, uses, counts

    def expected_counts(self, goals) -> dict:
        """Return the expected number of draws of every switch outcome, given the goals.

        Parameters
        ----------
        goals : list of hiddenstate.programs.Goal
            The goals.

        Returns
        -------
        dict
            Switch name -> counts (in the order of its outcomes), for every switch the
            goals use.

        Raises
        ------
        hiddenstate.errors.ZeroProbabilityError
            If a goal has probability zero.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> from hiddenstate.programs import Program, msw
        >>> prog = Program("coins")
        >>> prog.switch("coin", ["a", "b"])
        'coin'
        >>> toss = prog.switch_family("toss", ["h", "t"], keys=["a", "b"])
        >>> @prog.goal
        ... def two(x, y):
        ...     return [[msw("coin", c), msw(toss(c), x), msw(toss(c), y)] for c in "ab"]
        >>> data = [two("h", "h")] * 4 + [two("t", "t")] * 3 + [two("h", "t")]
        >>> model = hs.ProgramModel(prog, random_state=0).fit(data)
        >>> model.expected_counts([two("h", "h")])["coin"].round(4)
        array([0.9854, 0.0146])
        """
        graph, _, _, counts = self._expected(goals)
        table = self.program.switches
        used = graph.uses_switch
        out = {}
        for sid, name in enumerate(table.names):
            lo, hi = table.offsets[sid], table.offsets[sid + 1]
            if hi <= graph.n_params and used[lo:hi].any():
                out[name] = counts[lo:hi].copy()
        return out

    def goal_posteriors(self, goals) -> dict:
        """Return the expected number of uses of every tabled goal, given the goals.

        Parameters
        ----------
        goals : list of hiddenstate.programs.Goal
            The observed goals.

        Returns
        -------
        dict
            Goal -> expected number of uses in an explanation of the observed goals (for
            an HMM program, ``step(xs, t, s)`` gives the state posterior
            p(z_t = s | xs)).

        Raises
        ------
        hiddenstate.errors.ZeroProbabilityError
            If a goal has probability zero.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> from hiddenstate.programs import Program, msw
        >>> prog = Program("coins")
        >>> prog.switch("coin", ["a", "b"])
        'coin'
        >>> toss = prog.switch_family("toss", ["h", "t"], keys=["a", "b"])
        >>> @prog.goal
        ... def two(x, y):
        ...     return [[msw("coin", c), msw(toss(c), x), msw(toss(c), y)] for c in "ab"]
        >>> data = [two("h", "h")] * 4 + [two("t", "t")] * 3 + [two("h", "t")]
        >>> model = hs.ProgramModel(prog, random_state=0).fit(data)
        >>> model.goal_posteriors([two("h", "h")])
        {two('h', 'h'): 1.0}
        """
        graph, _, uses, _ = self._expected(goals)
        return dict(zip(graph.goals, uses.tolist(), strict=True))

    def outside(self, goal: Goal) -> dict:
        """Return the log outside probability of every goal in the graph of ``goal``.

        The outside probability of a sub-goal is :math:`\\log \\sum` over the
        explanations of ``goal`` with one marked occurrence of the sub-goal of the
        probability of everything outside that occurrence.

        Parameters
        ----------
        goal : hiddenstate.programs.Goal
            One goal.

        Returns
        -------
        dict
            Goal -> log outside probability (0 for ``goal`` itself).

        Raises
        ------
        hiddenstate.errors.ZeroProbabilityError
            If ``goal`` has probability zero.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> from hiddenstate.programs import Program, msw
        >>> prog = Program("coins")
        >>> prog.switch("coin", ["a", "b"])
        'coin'
        >>> toss = prog.switch_family("toss", ["h", "t"], keys=["a", "b"])
        >>> @prog.goal
        ... def two(x, y):
        ...     return [[msw("coin", c), msw(toss(c), x), msw(toss(c), y)] for c in "ab"]
        >>> data = [two("h", "h")] * 4 + [two("t", "t")] * 3 + [two("h", "t")]
        >>> model = hs.ProgramModel(prog, random_state=0).fit(data)
        >>> model.outside(two("h", "h"))
        {two('h', 'h'): 0.0}
        """
        graph, ins, uses, _ = self._expected(self._check_goals(goal, "goal"))
        logz = ins[graph.roots[0]]
        with np.errstate(divide="ignore"):
            out = np.log(uses) + logz - ins
        return dict(zip(graph.goals, out.tolist(), strict=True))

    def _param_msw(self) -> list:
        table = self.program.switches
        return [Msw((name, v)) for name, spec in zip(table.names, table.specs, strict=True)
                for v in spec.outcomes]

    def viterbi(self, goal: Goal) -> Explanation:
        """Return the most probable explanation of ``goal`` (max-product on its graph).

        Parameters
        ----------
        goal : hiddenstate.programs.Goal
            One goal.

        Returns
        -------
        hiddenstate.programs.Explanation
            The explanation: its switch outcomes and probability.

        Raises
        ------
        hiddenstate.errors.ZeroProbabilityError
            If ``goal`` has probability zero.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> from hiddenstate.programs import Program, msw
        >>> prog = Program("coins")
        >>> prog.switch("coin", ["a", "b"])
        'coin'
        >>> toss = prog.switch_family("toss", ["h", "t"], keys=["a", "b"])
        >>> @prog.goal
        ... def two(x, y):
        ...     return [[msw("coin", c), msw(toss(c), x), msw(toss(c), y)] for c in "ab"]
        >>> data = [two("h", "h")] * 4 + [two("t", "t")] * 3 + [two("h", "t")]
        >>> model = hs.ProgramModel(prog, random_state=0).fit(data)
        >>> model.viterbi(two("h", "h"))
        Explanation(p=0.492678, [msw('coin', 'a'), msw(('toss', 'a'), 'h'),
        msw(('toss', 'a'), 'h')])
        """
        goals = self._check_goals(goal, "goal")
        graph = self._graph(goals[:1])
        logtheta = self._log_theta()[:graph.n_params]
        vit, best = graph.viterbi(logtheta)
        root = int(graph.roots[0])
        check_possible(graph, vit[graph.roots], "most probable explanation", "goal")
        steps = graph.walk(root, 0, best[:, None], None)
        return graph.explanation(steps, self._param_msw(), logtheta)

    def kbest(self, goal: Goal, k: int) -> list[Explanation]:
        """Return the ``k`` most probable explanations of ``goal``, most probable first.

        Parameters
        ----------
        goal : hiddenstate.programs.Goal
            One goal.
        k : int
            The number of explanations (fewer if ``goal`` has fewer).

        Returns
        -------
        list of hiddenstate.programs.Explanation
            The explanations, most probable first.

        Raises
        ------
        hiddenstate.errors.ZeroProbabilityError
            If ``goal`` has probability zero.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> from hiddenstate.programs import Program, msw
        >>> prog = Program("coins")
        >>> prog.switch("coin", ["a", "b"])
        'coin'
        >>> toss = prog.switch_family("toss", ["h", "t"], keys=["a", "b"])
        >>> @prog.goal
        ... def two(x, y):
        ...     return [[msw("coin", c), msw(toss(c), x), msw(toss(c), y)] for c in "ab"]
        >>> data = [two("h", "h")] * 4 + [two("t", "t")] * 3 + [two("h", "t")]
        >>> model = hs.ProgramModel(prog, random_state=0).fit(data)
        >>> [round(e.prob, 4) for e in model.kbest(two("h", "h"), 3)]
        [0.4927, 0.0073]
        """
        k = check_positive_int(k, "k")
        goals = self._check_goals(goal, "goal")
        graph = self._graph(goals[:1])
        logtheta = self._log_theta()[:graph.n_params]
        score, alt, rank = graph.kbest(logtheta, k)
        root = int(graph.roots[0])
        check_possible(graph, score[graph.roots, 0], "explanation", "goal")
        param_msw = self._param_msw()
        return [graph.explanation(graph.walk(root, r, alt, rank), param_msw, logtheta)
                for r in range(k) if score[root, r] > -np.inf]

    def sample_explanations(self, goal: Goal, n_samples: int = 1,
                            random_state=None) -> list[Explanation]:
        """Draw explanations of ``goal`` from their posterior given it.

        Each explanation is drawn with probability proportional to its probability.

        Parameters
        ----------
        goal : hiddenstate.programs.Goal
            One goal.
        n_samples : int, default=1
            The number of explanations.
        random_state : int, numpy.random.Generator or None, default=None
            The seed (None: the estimator's ``random_state``).

        Returns
        -------
        list of hiddenstate.programs.Explanation
            ``n_samples`` explanations.

        Raises
        ------
        hiddenstate.errors.ZeroProbabilityError
            If ``goal`` has probability zero.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> from hiddenstate.programs import Program, msw
        >>> prog = Program("coins")
        >>> prog.switch("coin", ["a", "b"])
        'coin'
        >>> toss = prog.switch_family("toss", ["h", "t"], keys=["a", "b"])
        >>> @prog.goal
        ... def two(x, y):
        ...     return [[msw("coin", c), msw(toss(c), x), msw(toss(c), y)] for c in "ab"]
        >>> data = [two("h", "h")] * 4 + [two("t", "t")] * 3 + [two("h", "t")]
        >>> model = hs.ProgramModel(prog, random_state=0).fit(data)
        >>> [e.msws[0] for e in model.sample_explanations(two("h", "t"), 2, random_state=0)]
        [msw('coin', 'b'), msw('coin', 'b')]
        """

        n = check_positive_int(n_samples, "n_samples")
        goals = self._check_goals(goal, "goal")
        check_memory({"n_samples": 48.0 * n}, f"drawing {n} explanations")
        graph = self._graph(goals[:1])
        logtheta = self._log_theta()[:graph.n_params]
        ins, cond = graph.inside(logtheta)
        check_possible(graph, ins[graph.roots], "posterior sample of explanations", "goal")
        rng = make_rng(self.random_state if random_state is None else random_state)
        draws = graph.sample(cond, np.full(n, graph.roots[0]), rng)
        param_msw = self._param_msw()
        return [graph.explanation(steps, param_msw, logtheta) for steps in draws]

    def sample(self, n_samples: int = 1, random_state=None, *, args: Sequence = (),
               max_draws: int = 1_000_000) -> list:
        """Run the program's sampler ``n_samples`` times (sampling execution).

        Each run calls ``sampler(draw, *args)``, ``draw(switch)`` drawing an outcome with
        the current probabilities.

        A run that draws more than ``max_draws`` outcomes stops with a
        :class:`~hiddenstate.errors.ProgramError` naming ``max_draws`` (a sampler that
        never terminates, e.g. a recursive grammar whose derivations are infinite on
        average); any other exception of the sampler becomes a ProgramError naming it.
        ``n_samples`` runs whose results cannot fit in memory (at least
        :data:`SAMPLE_RUN_BYTES` each: the list's reference and the smallest result object)
        raise :class:`~hiddenstate.errors.InsufficientMemoryError` before the first run.

        Parameters
        ----------
        n_samples : int, default=1
            The number of runs.
        random_state : int, numpy.random.Generator or None, default=None
            The seed (None: the estimator's ``random_state``).
        args : tuple, default=()
            The sampler's arguments after ``draw``.
        max_draws : int, default=1_000_000
            The most outcomes one run may draw.

        Returns
        -------
        list
            The runs' results (typically observed goals).

        Raises
        ------
        hiddenstate.errors.InvalidInputError
            If the program has no sampler, or ``args`` is not a tuple.
        hiddenstate.errors.ProgramError
            If a run draws more than ``max_draws`` outcomes or the sampler raises.
        hiddenstate.errors.InsufficientMemoryError
            If the results would not fit in memory.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> from hiddenstate.programs import Program, msw
        >>> prog = Program("coins")
        >>> prog.switch("coin", ["a", "b"])
        'coin'
        >>> toss = prog.switch_family("toss", ["h", "t"], keys=["a", "b"])
        >>> @prog.goal
        ... def two(x, y):
        ...     return [[msw("coin", c), msw(toss(c), x), msw(toss(c), y)] for c in "ab"]
        >>> data = [two("h", "h")] * 4 + [two("t", "t")] * 3 + [two("h", "t")]
        >>> model = hs.ProgramModel(prog, random_state=0).fit(data)
        >>> @prog.sampler
        ... def toss_twice(draw):
        ...     c = draw("coin")
        ...     return two(draw(toss(c)), draw(toss(c)))
        >>> model.sample(3, random_state=0)
        [two('t', 'h'), two('h', 'h'), two('t', 't')]
        """

        n = check_positive_int(n_samples, "n_samples")
        max_draws = check_positive_int(max_draws, "max_draws")
        if not isinstance(args, (tuple, list)):
            raise InvalidInputError(
                f"args: expected a tuple of the sampler's arguments (e.g. args=(10,)), got "
                f"{type(args).__name__} {args!r:.40}")
        program = self._check_program()
        fn = program.sampler_fn
        if fn is None:
            raise InvalidInputError(
                f"program {program.name!r} has no sampler; register one with "
                "@program.sampler")
        check_memory({"n_samples": SAMPLE_RUN_BYTES * n}, f"sample(n_samples={n})",
                     {"n_samples": "run the sampler fewer times per call"})
        rng = make_rng(self.random_state if random_state is None else random_state)
        self._theta()  # every hand-set probability checked, not only those a run draws
        table = program.switches
        cache: dict = {}  # switch name -> (cumulative probabilities, total, outcomes)
        left = [0]
        uniform = rng.random

        def draw(switch):
            left[0] -= 1
            if left[0] < 0:
                raise ProgramError(
                    f"max_draws: one run of the sampler {fn.__name__!r} drew more than "
                    f"{max_draws} outcomes; a sampler whose runs never end (check its base "
                    "cases and the probabilities of its recursive choices) or a large run: "
                    "raise max_draws")
            try:
                cum, total, outcomes = cache[switch]
            except (KeyError, TypeError):  # first draw (or an unhashable name: refused)
                sid = table.instance_id(switch)
                cum = np.cumsum(self._switch_probs(sid)).tolist()
                cum, total, outcomes = cache[switch] = (cum, cum[-1], table.specs[sid].outcomes)
            return outcomes[min(bisect_right(cum, uniform() * total), len(cum) - 1)]

        out = []
        for _ in range(n):
            left[0] = max_draws
            try:
                out.append(fn(draw, *args))
            except HiddenStateError:
                raise
            except RecursionError as exc:
                raise ProgramError(
                    f"the sampler {fn.__name__!r} recursed deeper than Python allows ({exc}); "
                    "its runs may never end (check its base cases), or write it with a loop"
                ) from exc
            except Exception as exc:
                raise ProgramError(f"the sampler {fn.__name__!r} raised {exc!r}") from exc
        return out

    # -- persistence ---------------------------------------------------------------------------
    def save(self, path) -> None:
        """Save the switch probabilities (and VB posteriors) keyed by switch name and outcome.

        The hyper-parameters are saved with them; the program is code: it is not saved.
        Read back with ``hiddenstate.load(path, program=program)`` (see
        :mod:`hiddenstate.programs.saving`).

        Parameters
        ----------
        path : str or pathlib.Path
            The directory.

        Examples
        --------
        >>> import hiddenstate as hs
        >>> from hiddenstate.programs import Program, msw
        >>> prog = Program("coins")
        >>> prog.switch("coin", ["a", "b"])
        'coin'
        >>> toss = prog.switch_family("toss", ["h", "t"], keys=["a", "b"])
        >>> @prog.goal
        ... def two(x, y):
        ...     return [[msw("coin", c), msw(toss(c), x), msw(toss(c), y)] for c in "ab"]
        >>> data = [two("h", "h")] * 4 + [two("t", "t")] * 3 + [two("h", "t")]
        >>> model = hs.ProgramModel(prog, random_state=0).fit(data)
        >>> model.save("coins_model")
        >>> hs.load("coins_model", program=prog).probs_["coin"].round(3)
        array([0.513, 0.487])
        """
        save_model(self, path)

r"""Batch learning modes, written once for every model (PRISM's "one switch").

A model hands the learner a :class:`Problem`: its parameter blocks (conjugate families,
each with MLE/MAP, log prior and variational updates) and two inference routines that
return statistics per block — expected counts from sum-product dynamic programming, or
counts along the k best explanations from max-product. The learner never looks inside
either.

========  ===========================================  ====================================
mode      E-step                                       objective recorded per iteration
========  ===========================================  ====================================
``em``    expected counts at θ                          log p(X | θ)
``map``   expected counts at θ                          log p(X | θ) + log p(θ)
``vb``    expected counts at θ̃ = exp E_q[log θ]        ELBO = log Z̃ − KL(q(θ) ‖ p(θ))
``vt``    counts along the Viterbi path z*              log p(X, z* | θ) + log p(θ)
``kvt``   counts along the k best paths, weighted by    Σ_s log Σ_{r<k} p(x_s, z_r | θ)
          their normalised probabilities                + log p(θ)
========  ===========================================  ====================================

EM and MAP maximise with the blocks' M-steps (MAP: under the blocks' priors); VB replaces
q(θ) by prior plus statistics (MacKay 1997; Beal 2003, ch. 3); VT and k-best VT use the
MAP M-step on hard counts. Every objective is non-decreasing from one iteration to the next.

**The learning policy** (the same for every model; ``docs/learning-modes.md``):

- *Stop rule per mode* (:func:`fit`). EM, MAP and VB stop when an iteration gains less than
  ``tol`` per observation (the objective's gain divided by the Problem's
  ``n_observations``: time steps, words, items; ``tol=-inf``: never), or after ``n_iter``
  iterations (see :mod:`.monitor` for why per observation). VT and k-best VT ignore
  ``tol``: they stop when the explanations repeat (the M-step would return the same
  parameters: a fixed point, Viterbi training as in PRISM, Sato & Kameya) or when the
  objective no longer rises (explanations of equal probability can trade places through
  rounding forever), or after ``n_iter`` iterations.
- *Restarts and the best run* (:func:`fit_restarts`): ``n_init`` runs, each from its own
  starting point and, with deterministic annealing, a sequence of stages at increasing
  inverse temperatures; the run with the highest final objective of the mode is kept, the
  earliest among equal ones (a NaN objective never wins; it cannot occur, since a non-finite
  objective stops the fit with :class:`~hiddenstate.errors.NumericalError`).
- *Warnings*: collected over the whole call and issued once per cause
  (:mod:`.fit_warnings`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError, NumericalError
from .fit_warnings import FitWarnings
from .monitor import ConvergenceMonitor
from .problem import Block, Problem

MODES = ("em", "map", "vb", "vt", "kvt", "gibbs")
#: the modes :func:`fit` runs (``"gibbs"`` samples: :func:`hiddenstate.learn.gibbs.sample`)
OPTIMISING_MODES = MODES[:5]
#: modes whose E-step deterministic annealing can temper
ANNEALED_MODES = ("em", "map")
_STALL = 1e-12  # relative gain below which Viterbi training has stopped moving
#: the default ``tol`` of every model's batch modes: the smallest gain per observation (nats)
#: of an iteration that does not stop EM, MAP or VB (chosen on the real-data panel,
#: ``experiments/stopping_rule.py``)
TOL = 1e-4

#: what ``monitor_.history`` holds for each mode (for progress bars, reports and plots)
OBJECTIVES = {
    "em": "log-likelihood",
    "map": "log-likelihood + log prior",
    "vb": "evidence lower bound (ELBO)",
    "vt": "log p(X, z*) + log prior",
    "kvt": "log-mass of the k best paths + log prior",
    "gibbs": "log p(X, z, θ) of each sweep (chain 0)",
}

__all__ = ["MODES", "OBJECTIVES", "TOL", "Block", "Fitted", "Problem", "fit", "fit_restarts",
           "merge_statistics"]


def merge_statistics(blocks: dict, a: dict, b: dict) -> dict:
    """Combine the statistics per block of two disjoint sets of sequences.

    The reduce step of an E-step run over partitions of the data. Every block merges its own
    (``block.merge_statistics``: sums of counts, Gaussian sums moved between reference
    points, ...). ``merge(a, b)`` of partitions in a fixed order gives the same numbers for
    any placement of the work.

    Parameters
    ----------
    blocks : dict of str to Block
        The problem's parameter blocks (``problem.blocks``).
    a : dict
        The statistics per block of one set of sequences (``problem.expected_counts``).
    b : dict
        Those of another, disjoint set.

    Returns
    -------
    dict
        The statistics per block of both sets together.

    Examples
    --------
    Two copies of the same data give twice its expected transition counts:

    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> from hiddenstate import learn
    >>> model = hs.HMM(n_states=2)
    >>> X, seqs = model.validate_data(np.array([0, 0, 1, 0, 2, 2, 1, 2, 0, 0, 1, 2, 2, 2]),
    ...                               [6, 8], 3)
    >>> problem = model.problem(model.emission_family(3, X), X, seqs)
    >>> start = {"startprob": np.array([0.5, 0.5]),
    ...          "transmat": np.array([[0.8, 0.2], [0.3, 0.7]]),
    ...          "emission": {"emissionprob": np.array([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]])}}
    >>> loglik, stats = problem.expected_counts(start)
    >>> both = learn.merge_statistics(problem.blocks, stats, stats)
    >>> bool(np.allclose(both["transmat"], 2 * stats["transmat"]))
    True
    """
    return {name: block.merge_statistics(a[name], b[name]) for name, block in blocks.items()}


@dataclass
class Fitted:
    """The result of :func:`fit` (one run) or :func:`fit_restarts` (the best run).

    Parameters
    ----------
    params : dict
        The point parameters per block.
    posterior : dict or None
        The variational posteriors per learned block (``learn="vb"``); None otherwise.
    monitor : ConvergenceMonitor
        The monitor of the run (of its last stage with annealing).
    stages : list of tuple of (float, list of float) or None, default=None
        From :func:`fit_restarts`: ``(beta, history)`` of every stage of the best run (one
        stage, beta 1, without annealing).
    finals : list of float or None, default=None
        From :func:`fit_restarts`: the final objective of every restart, in order.

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> from hiddenstate import learn
    >>> model = hs.HMM(n_states=2)
    >>> X, seqs = model.validate_data(np.array([0, 0, 1, 0, 2, 2, 1, 2, 0, 0, 1, 2, 2, 2]),
    ...                               [6, 8], 3)
    >>> problem = model.problem(model.emission_family(3, X), X, seqs)
    >>> start = {"startprob": np.array([0.5, 0.5]),
    ...          "transmat": np.array([[0.8, 0.2], [0.3, 0.7]]),
    ...          "emission": {"emissionprob": np.array([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]])}}
    >>> result = learn.fit_restarts(problem, "em", lambda r: start, n_init=2, tol=1e-6,
    ...                             which="ste")
    >>> result.stages[0][0], len(result.finals), result.posterior is None
    (1.0, 2, True)
    """

    params: dict
    posterior: dict | None
    monitor: ConvergenceMonitor
    stages: list | None = None
    finals: list | None = None


def n_observations(problem: Problem) -> float:
    """The observations ``problem``'s objective sums over (its ``n_observations``), by which
    the stop rule divides an iteration's gain."""
    n = getattr(problem, "n_observations", None)
    if n is None:
        raise TypeError(
            f"{type(problem).__name__} has no n_observations: a Problem states how many "
            "observations its objective sums over (time steps, words, items), the unit of "
            "the stop rule's tol")
    return float(n)


def _check_objective(value: float, monitor) -> float:
    if not np.isfinite(value):
        raise NumericalError(
            f"objective is {value} at iteration {monitor.iter}; check the data for extreme "
            "values or use priors (learn='map') / min_covar")
    return value


def _learned(problem: Problem, name: str, which: str) -> bool:
    return any(letter in which for letter in problem.letters[name])


def check_mode(mode: str) -> str:
    if mode == "gibbs":
        raise InvalidInputError(
            "learn: 'gibbs' (Gibbs sampling) draws the posterior instead of iterating to an "
            "optimum, and this fit cannot: sampling needs exact draws of the hidden paths "
            "and a conjugate posterior for every learned parameter block, and runs in the "
            "fit of the models that have them (docs/gibbs.md lists them), not in "
            "hiddenstate.learn.fit_restarts or hiddenstate.distributed.fit. Use "
            "learn='vb' (a factorised posterior, where the priors are conjugate) or "
            "learn='map' (a point estimate under the priors)")
    if mode not in MODES:
        raise InvalidInputError(f"learn: {mode!r} is not one of {MODES}")
    return mode


def fit(problem: Problem, mode: str, params: dict, monitor, which: str, k_best: int = 1,
        callback: Callable[[int, float], None] | None = None,
        log: FitWarnings | None = None) -> Fitted:
    """Run one learning mode from ``params`` until the mode's stop rule says stop.

    EM, MAP and VB ask ``monitor.report`` (its ``tol``, per observation: a
    :class:`ConvergenceMonitor` gets ``problem.n_observations``); VT and k-best VT record the
    objective (``monitor.record``) and stop when their explanations repeat or the objective
    no longer rises (see :mod:`hiddenstate.learn.batch`).

    Parameters
    ----------
    problem : Problem
        The model's parameter blocks and inference routines.
    mode : {"em", "map", "vb", "vt", "kvt"}
        The learning mode (:data:`MODES`).
    params : dict
        The starting parameters per block.
    monitor : ConvergenceMonitor
        Its ``n_iter`` and ``tol``; it records the objective of every iteration
        (:data:`OBJECTIVES`).
    which : str
        The letters of the learned blocks (hmmlearn's ``params``: ``"ste"``).
    k_best : int, default=1
        The explanations per item of ``"kvt"``.
    callback : callable or None, default=None
        ``callback(iteration, objective)`` after every iteration.
    log : FitWarnings or None, default=None
        The warnings of the enclosing call (:func:`fit_restarts`); None: this call collects
        its own and warns once per cause at its end.

    Returns
    -------
    Fitted
        The learned parameters, the posteriors (VB) and ``monitor``.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``mode`` is not one of :data:`MODES`.
    hiddenstate.errors.NumericalError
        If the objective is not finite.

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> from hiddenstate import learn
    >>> model = hs.HMM(n_states=2)
    >>> X, seqs = model.validate_data(np.array([0, 0, 1, 0, 2, 2, 1, 2, 0, 0, 1, 2, 2, 2]),
    ...                               [6, 8], 3)
    >>> problem = model.problem(model.emission_family(3, X), X, seqs)
    >>> start = {"startprob": np.array([0.5, 0.5]),
    ...          "transmat": np.array([[0.8, 0.2], [0.3, 0.7]]),
    ...          "emission": {"emissionprob": np.array([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]])}}
    >>> result = learn.fit(problem, "em", start, learn.ConvergenceMonitor(1e-6, 200), "ste")
    >>> result.monitor.converged, round(result.monitor.history[-1], 4)
    (True, -12.8344)
    >>> result.params["transmat"].sum(axis=1)
    array([1., 1.])
    """
    check_mode(mode)
    own_log = log is None
    log = FitWarnings() if own_log else log
    if own_log:
        log.start_restart()
    if isinstance(monitor, ConvergenceMonitor):
        monitor.log = log
        monitor.n_observations = n_observations(problem)
    blocks = problem.blocks

    def mstep(theta, stats):
        new = {}
        for name, block in blocks.items():
            new[name], degenerate = block.mstep(theta[name], stats[name], which)
            log.degenerate(name, degenerate)
        return new

    def log_prior(theta):
        return sum(block.log_prior(theta[name]) for name, block in blocks.items())

    def report(value, record_only=False):
        value = _check_objective(value, monitor)
        stop = monitor.record(value) if record_only else monitor.report(value)
        if callback is not None:
            callback(monitor.iter, value)
        return stop

    try:
        if mode in ("em", "map"):
            for _ in range(monitor.n_iter):
                log.step()
                loglik, stats = problem.expected_counts(params)
                value = loglik + (log_prior(params) if mode == "map" else 0.0)
                params = mstep(params, stats)
                if report(value):
                    break
            return Fitted(params, None, monitor)

        if mode in ("vt", "kvt"):  # tol is not used: the explanations decide
            k = k_best if mode == "kvt" else 1
            previous = None
            for _ in range(monitor.n_iter):
                log.step()
                value, stats, paths = problem.path_counts(params, k)
                value += log_prior(params)
                # Stop when the explanations repeat (the M-step would return params
                # unchanged) or the objective no longer rises: paths of equal probability
                # can trade places through rounding forever (at the k-th place of a k-best
                # list, say).
                same = previous is not None and np.array_equal(paths, previous)
                stalled = bool(monitor.history) and \
                    value <= monitor.history[-1] + _STALL * abs(value)
                if same or stalled:
                    monitor.converged = True
                    report(value, record_only=True)
                    break
                params = mstep(params, stats)
                previous = paths
                if report(value, record_only=True):
                    break
            return Fitted(params, None, monitor)

        # variational Bayes: q(θ) for learned blocks, the point value for frozen ones
        set_start = getattr(problem, "set_start", None)
        if set_start is not None:
            set_start(params)
        learned = {name: _learned(problem, name, which) for name in blocks}
        q = {name: blocks[name].vb_init(params[name], problem.n_virtual[name])
             for name in blocks if learned[name]}
        for _ in range(monitor.n_iter):
            log.step()
            views = {name: blocks[name].vb_expected(q[name]) if learned[name]
                     else params[name] for name in blocks}
            log_z, stats = problem.expected_counts(views)
            value = log_z - sum(blocks[name].vb_kl(q[name]) for name in q)
            q = {name: blocks[name].vb_update(q[name], stats[name], which) for name in q}
            if report(value):
                break
        params = {name: blocks[name].vb_mean(q[name]) if learned[name] else params[name]
                  for name in blocks}
        return Fitted(params, q, monitor)
    finally:
        if isinstance(monitor, ConvergenceMonitor):
            monitor.log = None  # the fitted model's monitor_ keeps no collector
        if own_log:
            log.issue()


def _better(final: float, best: float | None) -> bool:
    """Whether a run ending at ``final`` replaces the best so far (ending at ``best``):
    strictly higher, or the best is NaN and this is not (the earliest run wins ties)."""
    if best is None:
        return True
    if np.isnan(final):
        return False
    return bool(np.isnan(best) or final > best)


def fit_restarts(problem: Problem, mode: str, start: Callable[[int], dict], *,
                 n_init: int = 1, n_iter: int = 100, tol: float = TOL, which: str,
                 k_best: int = 1, verbose: bool = False,
                 callback: Callable[[int, float], None] | None = None,
                 anneal: Sequence[float] | None = None) -> Fitted:
    """Run the one restart loop of every model and keep the best run.

    ``n_init`` runs of ``mode`` on ``problem``; the best is kept (highest final objective;
    the earliest among equals). Warnings of every run are collected and issued once per
    cause at the end, also when a run fails (:mod:`hiddenstate.learn.fit_warnings`).

    Parameters
    ----------
    problem : Problem
        The model's parameter blocks and inference routines.
    mode : {"em", "map", "vb", "vt", "kvt"}
        The learning mode (:data:`MODES`).
    start : callable
        ``start(r)``: the starting parameters of restart ``r`` (0, 1, ...; called once per
        restart, in order, just before it runs, so a model may draw them from its random
        generator).
    n_init : int, default=1
        The number of runs.
    n_iter : int, default=100
        The most iterations of each run (of each stage with annealing).
    tol : float, default=TOL
        The stop rule of EM, MAP and VB: a gain per observation below ``tol`` stops a run
        (``-inf``: never); VT and k-best VT ignore it (see :func:`fit`).
    which : str
        The letters of the learned blocks (hmmlearn's ``params``: ``"ste"``).
    k_best : int, default=1
        The explanations per item of ``"kvt"``.
    verbose : bool, default=False
        Print each iteration's objective (:class:`ConvergenceMonitor`).
    callback : callable or None, default=None
        ``callback(iteration, objective)`` after every iteration (``iteration`` starts again
        at 1 with each run and stage).
    anneal : sequence of float or None, default=None
        Deterministic annealing (Ueda & Nakano 1998; PRISM's DAEM) for ``"em"`` and
        ``"map"``: strictly increasing inverse temperatures in (0, 1] ending at 1. A run is
        then a sequence of stages, each run to convergence at its temperature from where the
        previous one ended (``problem.set_temperature(beta)`` tempers the E-step); the run's
        final objective is that of its last stage (beta = 1, the untempered objective).

    Returns
    -------
    Fitted
        The best run, with ``stages`` and ``finals``.

    Raises
    ------
    hiddenstate.errors.InvalidInputError
        If ``mode`` is not one of :data:`MODES`, or ``anneal`` is invalid or not possible
        for this mode or problem.

    Examples
    --------
    >>> import numpy as np
    >>> import hiddenstate as hs
    >>> from hiddenstate import learn
    >>> model = hs.HMM(n_states=2)
    >>> X, seqs = model.validate_data(np.array([0, 0, 1, 0, 2, 2, 1, 2, 0, 0, 1, 2, 2, 2]),
    ...                               [6, 8], 3)
    >>> problem = model.problem(model.emission_family(3, X), X, seqs)
    >>> rng = np.random.default_rng(0)
    >>> def start(r):
    ...     return {"startprob": np.array([0.5, 0.5]),
    ...             "transmat": rng.dirichlet([1.0, 1.0], size=2),
    ...             "emission": {"emissionprob": rng.dirichlet([1.0, 1.0, 1.0], size=2)}}
    >>> best = learn.fit_restarts(problem, "em", start, n_init=3, tol=1e-6, which="ste")
    >>> [beta for beta, history in best.stages], len(best.finals)
    ([1.0], 3)
    >>> best.monitor.history[-1] == max(best.finals)
    True
    """
    check_mode(mode)
    schedule = [1.0] if anneal is None else [float(b) for b in anneal]
    if anneal is not None:
        if mode not in ANNEALED_MODES:
            raise InvalidInputError(
                f"anneal: deterministic annealing tempers the E-step of 'em' and 'map', not "
                f"learn={mode!r}; drop anneal or use learn='em'/'map'")
        if not hasattr(problem, "set_temperature"):
            raise InvalidInputError(
                "anneal: this model's E-step cannot be tempered; drop anneal")
        if not schedule or schedule[-1] != 1.0 or any(
                not 0 < b <= 1 for b in schedule) or any(
                b1 <= b0 for b0, b1 in zip(schedule, schedule[1:], strict=False)):
            raise InvalidInputError(
                f"anneal: expected strictly increasing inverse temperatures in (0, 1] ending "
                f"at 1, got {list(anneal)!r}")
    log = FitWarnings()
    best, finals = None, []
    try:
        for r in range(n_init):
            log.start_restart()
            params = start(r)
            stages = []
            for beta in schedule:
                if anneal is not None:
                    problem.set_temperature(beta)
                result = fit(problem, mode, params, ConvergenceMonitor(tol, n_iter, verbose),
                             which, k_best, callback, log)
                params = result.params
                stages.append((beta, list(result.monitor.history)))
            finals.append(result.monitor.history[-1])
            if _better(finals[-1], None if best is None else best.monitor.history[-1]):
                result.stages = stages
                best = result
    finally:
        if anneal is not None:
            problem.set_temperature(1.0)
        log.issue()
    best.finals = finals
    return best

"""Learning a program's switches with the generic batch learner: an HMM written as a program
against hs.HMM from the same start (log-likelihood, posteriors, EM / MAP / VT
trajectories), monotone objectives for every mode, Viterbi training's stopping rule, k-best
counts against enumeration, deterministic annealing, the paper's path program (figures
5-6), save / load, and validation of what a user passes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from program_brute_force import derivations
from test_programs_engine import GRAMMAR

import hiddenstate as hs
from hiddenstate.errors import (
    InsufficientMemoryError,
    InvalidInputError,
    ModelFileError,
    ProgramError,
    ZeroProbabilityError,
)
from hiddenstate.learn import ConvergenceMonitor
from hiddenstate.learn import fit as fit_mode
from hiddenstate.persist import arrays_path
from hiddenstate.programs import Program, ProgramModel, explain, geometric_schedule, msw
from hiddenstate.programs.examples import hmm_program, path_program, pcfg_program
from hiddenstate.programs.problem import ProgramProblem

LENGTHS = [6, 1, 9, 4, 7]
K, W = 3, 4


def _hmm_data(seed=0):
    rng = np.random.default_rng(seed)
    pi = rng.dirichlet(np.ones(K))
    A = rng.dirichlet(np.ones(K), K)
    B = rng.dirichlet(np.ones(W), K)
    x = rng.integers(0, W, sum(LENGTHS))
    bounds = np.concatenate(([0], np.cumsum(LENGTHS)))
    seqs = [x[bounds[s]:bounds[s + 1]] for s in range(len(LENGTHS))]
    return pi, A, B, x, seqs


def _pair(pi, A, B, prior=1.0, **kw):
    """hs.HMM and the HMM program with the same parameters."""
    hmm = hs.HMM(K, init_params="", **kw)
    hmm.startprob_, hmm.transmat_, hmm.emissionprob_, hmm.n_features_ = \
        pi.copy(), A.copy(), B.copy(), W
    prog = hmm_program(K, W, prior=prior)
    learn = kw.get("learn", "em")
    model = ProgramModel(prog, init="declared", learn=learn, n_iter=kw.get("n_iter", 100),
                         tol=kw.get("tol", 1e-4))
    model.set_probs("init", pi)
    for s in range(K):
        model.set_probs(("tr", s), A[s])
        model.set_probs(("out", s), B[s])
    return hmm, model, prog


def _hmm_params(model):
    p = model.probs_
    return (p["init"], np.array([p[("tr", s)] for s in range(K)]),
            np.array([p[("out", s)] for s in range(K)]))


def test_an_hmm_program_scores_and_decodes_like_hs_hmm():
    pi, A, B, x, seqs = _hmm_data()
    hmm, model, prog = _pair(pi, A, B)
    goals = [prog.predicates["hmm"](s) for s in seqs]
    assert np.allclose(model.score_samples(goals), hmm.score_samples(x, LENGTHS),
                       rtol=0, atol=1e-10)
    post = model.goal_posteriors(goals)
    step = prog.predicates["step"]
    gamma = np.array([[post[step(g[1], t, s)] for s in range(K)]
                      for g in goals for t in range(len(g[1]))])
    assert np.allclose(gamma, hmm.predict_proba(x, LENGTHS), rtol=0, atol=1e-10)
    logp, states = hmm.decode(x, LENGTHS)
    best = [model.viterbi(g) for g in goals]
    assert sum(e.logprob for e in best) == pytest.approx(logp, abs=1e-10)
    assert [g[3] for e in best for g, _ in e.steps[1:]] == states.tolist()


@pytest.mark.parametrize("learn,prior,kw", [
    ("em", 1.0, {}),
    ("map", 1.5, {"startprob_prior": 1.5, "transmat_prior": 1.5, "emissionprob_prior": 1.5}),
    ("vt", 1.0, {}),
])
def test_an_hmm_program_learns_like_hs_hmm_step_for_step(learn, prior, kw):
    pi, A, B, x, seqs = _hmm_data(1)
    hmm, model, prog = _pair(pi, A, B, prior, learn=learn, n_iter=25, tol=-np.inf, **kw)
    hmm.fit(x, LENGTHS)
    model.fit([prog.predicates["hmm"](s) for s in seqs])
    assert len(model.monitor_.history) == len(hmm.monitor_.history)
    assert np.allclose(model.monitor_.history, hmm.monitor_.history, rtol=0, atol=1e-10)
    for got, want in zip(_hmm_params(model), (hmm.startprob_, hmm.transmat_, hmm.emissionprob_),
                         strict=True):
        assert np.allclose(got, want, rtol=0, atol=1e-10)
    if learn == "vt":
        assert model.monitor_.converged and len(model.monitor_.history) < 25


def test_em_is_maximum_likelihood_whatever_priors_the_switches_declare():
    rng = np.random.default_rng(0)
    goals = [hmm_program(2, 3).predicates["hmm"](rng.integers(0, 3, 20))]
    runs = {}
    for prior in (1.0, 3.0):
        prog = hmm_program(2, 3, prior=prior)
        for learn in ("em", "map"):
            model = ProgramModel(prog, learn=learn, n_iter=8, tol=-np.inf, random_state=4)
            runs[prior, learn] = model.fit([prog.predicates["hmm"](goals[0][1])]).monitor_
    assert runs[1.0, "em"].history == runs[3.0, "em"].history == runs[1.0, "map"].history
    assert runs[3.0, "map"].history != runs[3.0, "em"].history


def _fit_quietly(model, goals):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the objective must not go down
        return model.fit(goals)


@pytest.mark.parametrize("learn", ["em", "map", "vb", "vt", "kvt"])
@pytest.mark.parametrize("which", ["hmm", "pcfg", "path"])
def test_every_mode_objective_never_decreases(learn, which):
    rng = np.random.default_rng(5)
    if which == "path":  # explanations not exclusive: EM climbs the sum, VT is exact
        prog = path_program(prior=1.0 if learn == "em" else 1.5)
        goals = [prog.predicates["path"](*p) for p in PATH_DATA]
    elif which == "hmm":
        prog = hmm_program(3, 4, prior=1.5 if learn != "em" else 1.0)
        goals = [prog.predicates["hmm"](rng.integers(0, 4, n)) for n in (30, 12, 25)]
    else:
        prog = pcfg_program(GRAMMAR)
        if learn != "em":
            for spec in prog.switches.specs:
                spec.prior[:] = 1.2
        goals = [prog.predicates["sentence"](s) for s in
                 (list("ababa"), list("aaba"), list("ba"), list("abba"), list("aabaa"))]
    model = ProgramModel(prog, learn=learn, k_best=3, n_iter=40, tol=-np.inf,
                         random_state=3)
    h = np.array(_fit_quietly(model, goals).monitor_.history)
    assert np.all(np.diff(h) >= -1e-9 * np.abs(h[1:]))
    if learn in ("vt", "kvt"):
        assert model.monitor_.converged and len(h) < 40
    else:
        assert len(h) == 40 and h[-1] > h[0]


class _Recording:
    """A ProgramProblem that remembers the Viterbi explanations of every iteration."""

    def __init__(self, problem):
        self.problem = problem
        self.blocks, self.letters = problem.blocks, problem.letters
        self.n_virtual = problem.n_virtual
        self.n_observations = problem.n_observations
        self.seen = []

    def path_counts(self, views, k):
        value, stats, paths = self.problem.path_counts(views, k)
        self.seen.append(paths.copy())
        return value, stats, paths


def test_viterbi_training_stops_when_the_viterbi_explanations_stop_changing():
    rng = np.random.default_rng(2)
    prog = hmm_program(3, 5)
    goals = [prog.predicates["hmm"](rng.integers(0, 5, n)) for n in (40, 25, 33)]
    graph = explain(prog, goals)
    model = ProgramModel(prog)
    problem = ProgramProblem(graph, prog.switches, model._theta())
    start = problem.views(model._theta())
    for name in start:  # a random start
        g = rng.gamma(1.0, size=start[name].shape)
        start[name] = g / g.sum(axis=1, keepdims=True)
    rec = _Recording(problem)
    result = fit_mode(rec, "vt", start, ConvergenceMonitor(-np.inf, 100), "l")
    n = len(rec.seen)
    assert 2 < n < 100 and result.monitor.converged
    # it stopped at the first repeat of the explanations, not before and not after
    assert np.array_equal(rec.seen[-1], rec.seen[-2])
    assert not any(np.array_equal(rec.seen[i], rec.seen[i + 1]) for i in range(n - 2))
    # and what it returns is a fixed point: one more VT step changes nothing
    _, stats, _ = problem.path_counts(result.params, 1)
    for name, block in problem.blocks.items():
        again, _ = block.mstep(result.params[name], stats[name], "l")
        assert np.array_equal(again, result.params[name])


def test_kbest_viterbi_training_counts_the_k_best_explanations_by_their_weights():
    prog = pcfg_program(GRAMMAR)
    sentence = prog.predicates["sentence"]
    goals = [sentence(list("ababa")), sentence(list("aaba"))]
    model = ProgramModel(prog, random_state=0)
    rng = np.random.default_rng(8)
    for name in prog.switches.names:
        model.set_probs(name, rng.dirichlet(np.ones(3)))
    theta = model._theta()
    table = prog.switches
    problem = ProgramProblem(explain(prog, goals), table, theta)
    k = 4
    value, stats, _ = problem.path_counts(problem.views(theta), k)
    want = np.zeros(table.n_params)
    want_value = 0.0
    logtheta = np.log(theta)
    for goal in goals:
        ders = sorted(derivations(goal, lambda m: logtheta[table.param_index(*m)]),
                      key=lambda d: -d[0])[:k]
        lp = np.array([d[0] for d in ders])
        w = np.exp(lp - lp[0])
        want_value += lp[0] + np.log(w.sum())
        for weight, (_, _, msws) in zip(w / w.sum(), ders, strict=True):
            for m in msws:
                want[table.param_index(*m)] += weight
    assert value == pytest.approx(want_value, abs=1e-10)
    for name, idx in problem.index.items():
        assert np.allclose(stats[name], want[idx], rtol=0, atol=1e-10)


def test_deterministic_annealing_raises_each_stage_objective_and_ends_with_em():
    rng = np.random.default_rng(4)
    prog = hmm_program(3, 4)
    goals = [prog.predicates["hmm"](rng.integers(0, 4, n)) for n in (40, 30)]
    schedule = geometric_schedule(0.2, 2.0)
    assert schedule == [0.2, 0.4, 0.8, 1.0]
    model = ProgramModel(prog, anneal=schedule, n_iter=30, tol=-np.inf, random_state=1)
    _fit_quietly(model, goals)
    assert [b for b, _ in model.anneal_history_] == schedule
    for _, h in model.anneal_history_:
        assert len(h) == 30 and np.all(np.diff(h) >= -1e-9 * np.abs(np.array(h[1:])))
    assert model.monitor_.history == model.anneal_history_[-1][1]
    # the objective at beta = 1 is the log-likelihood of the learned model
    final = ProgramModel(prog, init="declared", n_iter=1)
    final.probs_ = model.probs_
    assert model.monitor_.history[-1] <= final.score(goals) + 1e-9
    # a schedule of just [1] is plain EM
    em = ProgramModel(prog, n_iter=10, tol=-np.inf, random_state=2).fit(goals)
    one = ProgramModel(prog, anneal=[1.0], n_iter=10, tol=-np.inf, random_state=2).fit(goals)
    assert one.monitor_.history == em.monitor_.history


def test_restarts_keep_the_run_with_the_best_objective():
    rng = np.random.default_rng(6)
    prog = hmm_program(3, 4)
    goals = [prog.predicates["hmm"](rng.integers(0, 4, 30))]
    best = ProgramModel(prog, n_iter=15, n_init=4, random_state=9).fit(goals)
    rs = np.random.default_rng(9)  # the same stream of starting points, one run at a time
    finals = [ProgramModel(prog, n_iter=15, random_state=rs).fit(goals).monitor_.history[-1]
              for _ in range(4)]
    assert len(set(np.round(finals, 6))) > 1  # the restarts do end in different places
    assert best.monitor_.history[-1] == pytest.approx(max(finals), abs=1e-12)


def test_clone_keeps_the_program():
    from sklearn.base import clone

    prog = hmm_program(2, 2)
    model = clone(ProgramModel(prog, learn="vt", random_state=0))
    assert model.program is prog and model.learn == "vt"
    assert model.fit([prog.predicates["hmm"]([0, 1, 1])]).monitor_.converged


def test_fixed_switches_keep_their_probabilities_and_vb_reports_posteriors():
    rng = np.random.default_rng(7)
    prog = hmm_program(2, 3)
    prog.switches.specs[0].fixed = True  # "init": fixed at its declared value
    prog.set_probs("init", [0.9, 0.1])
    goals = [prog.predicates["hmm"](rng.integers(0, 3, 20))]
    model = ProgramModel(prog, learn="vb", n_iter=20, random_state=0).fit(goals)
    assert np.array_equal(model.probs_["init"], [0.9, 0.1])
    assert "init" not in model.posterior_
    for s in range(2):
        q = model.posterior_[("tr", s)]
        assert np.all(q >= 1.0) and np.allclose(model.probs_[("tr", s)], q / q.sum())


# -- the path program of the paper's figures 5 and 6 -------------------------------------------
PATH_DATA = [(1, 4), (1, 3), (1, 6), (6, 5), (6, 5), (5, 4), (1, 5)]


def _route(e):
    return [m[0][1:] for m in e.msws]


def test_the_path_program_before_and_after_viterbi_training():
    prog = path_program(prior=2.0)  # PRISM pseudo-count 1, as in the paper's VT runs
    path = prog.predicates["path"]
    before = ProgramModel(prog)
    best = before.viterbi(path(1, 4))
    assert _route(best) == [(1, 2), (2, 3), (3, 4)]  # 1 -> 2 -> 3 -> 4
    assert best.prob == pytest.approx(0.432, abs=1e-12)  # 0.9 * 0.8 * 0.6, as in the paper
    # eight simple paths explain path(1, 4); they are not exclusive, so the inside sum
    # (1.0252) is not P(path(1, 4)), which is 0.53864 under ProbLog's semantics
    assert len(before.kbest(path(1, 4), 20)) == 8
    assert np.exp(before.score_samples([path(1, 4)])[0]) == pytest.approx(1.0252, abs=1e-12)
    model = ProgramModel(prog, learn="vt", init="declared").fit([path(*p) for p in PATH_DATA])
    assert model.monitor_.converged and len(model.monitor_.history) == 5
    after = model.viterbi(path(1, 4))
    assert _route(after) == [(1, 6), (6, 5), (5, 4)]  # 1 -> 6 -> 5 -> 4
    assert after.prob == pytest.approx(0.5, abs=1e-12)
    assert model.viterbi(path(1, 4)).prob > model.kbest(path(1, 4), 2)[1].prob


def test_viterbi_training_without_pseudo_counts_keeps_the_observed_viterbi_path():
    # with explanations made of "on" outcomes only, maximum-likelihood VT can only raise the
    # edges an observed goal's Viterbi path uses: path(1, 4) keeps 1 -> 2 -> 3 -> 4
    prog = path_program(prior=1.0)
    path = prog.predicates["path"]
    model = ProgramModel(prog, learn="vt", init="declared").fit([path(*p) for p in PATH_DATA])
    best = model.viterbi(path(1, 4))
    assert _route(best) == [(1, 2), (2, 3), (3, 4)] and best.prob == pytest.approx(1.0)


# -- save / load ---------------------------------------------------------------------------------
def test_save_and_load_round_trip_into_the_same_program(tmp_path):
    rng = np.random.default_rng(3)
    prog = hmm_program(2, 3)
    goals = [prog.predicates["hmm"](rng.integers(0, 3, 25))]
    model = ProgramModel(prog, learn="vb", n_iter=10, random_state=0).fit(goals)
    model.save(tmp_path / "m")
    again = hs.load(tmp_path / "m", program=hmm_program(2, 3))
    fresh_goals = [again.program.predicates["hmm"](goals[0][1])]
    assert again.score(fresh_goals) == model.score(goals)
    assert again.learn == "vb" and again.monitor_.history == model.monitor_.history
    for name, p in model.probs_.items():
        assert np.array_equal(again.probs_[name], p)
    for name, q in model.posterior_.items():
        assert np.array_equal(again.posterior_[name], q)
    # outcomes are matched by value: a program listing them in another order loads too
    shuffled = Program("hmm")
    shuffled.switch("init", [1, 0])
    shuffled.switch_family("tr", [1, 0], keys=[0, 1])
    shuffled.switch_family("out", [2, 0, 1], keys=[0, 1])
    other = hs.load(tmp_path / "m", program=shuffled)
    assert np.array_equal(other.probs_[("out", 1)], model.probs_[("out", 1)][[2, 0, 1]])


def test_loading_checks_the_file_and_the_program(tmp_path):
    prog = path_program()
    model = ProgramModel(prog, learn="vt", init="declared")
    model.fit([prog.predicates["path"](1, 4)])
    model.save(tmp_path / "m")
    with pytest.raises(ModelFileError, match="no switch"):
        hs.load(tmp_path / "m", program=hmm_program(2, 2))
    fewer = Program("path")
    fewer.switch_family("edge", ["on"])
    with pytest.raises(ModelFileError, match="outcomes"):
        hs.load(tmp_path / "m", program=fewer)
    npz = arrays_path(tmp_path / "m")
    arrays = dict(np.load(npz))
    arrays["probs"] = arrays["probs"] * 1.5
    np.savez(npz, **arrays)
    with pytest.raises(ModelFileError, match="manifest"):
        hs.load(tmp_path / "m", program=path_program())


# -- validation ----------------------------------------------------------------------------------
def test_declarations_are_validated():
    prog = Program()
    prog.switch("c", ["x", "y"])
    with pytest.raises(InvalidInputError, match="declared twice"):
        prog.switch("c", ["x"])
    with pytest.raises(InvalidInputError, match="sums to 1.2"):
        prog.switch("d", ["x", "y"], probs=[0.6, 0.6])
    with pytest.raises(InvalidInputError, match="finite"):
        prog.switch("e", ["x", "y"], probs=[np.nan, 1.0])
    with pytest.raises(InvalidInputError, match="repeated"):
        prog.switch("f", ["x", "x"])
    with pytest.raises(InvalidInputError, match="empty"):
        prog.switch("g", [])
    with pytest.raises(InvalidInputError, match="prior"):
        prog.switch("h", ["x", "y"], prior=0.0)
    with pytest.raises(InvalidInputError, match="fixed=True needs probs"):
        prog.switch("i", ["x", "y"], fixed=True)
    with pytest.raises(InvalidInputError, match="not hashable"):
        prog.switch("j", [["a"], ["b"]])
    fam = prog.switch_family("tr", [0, 1], keys=[0, 1])
    assert fam(1) == ("tr", 1) and prog.outcomes(("tr", 1)) == (0, 1)
    with pytest.raises(InvalidInputError, match="no key 2"):
        prog.set_probs(("tr", 2), [0.5, 0.5])
    with pytest.raises(InvalidInputError, match="shape"):
        prog.set_probs(("tr", 1), [1.0])


def test_programs_that_use_undeclared_switches_or_outcomes_name_the_goal():
    prog = Program()
    prog.switch("c", ["x", "y"])

    @prog.goal
    def bad_switch(n):
        return [[msw("nope", "x")]]

    @prog.goal
    def bad_outcome(n):
        return [[msw("c", "z")]]

    @prog.goal
    def bad_item(n):
        return [[msw("c", "x"), "text"]]

    @prog.goal
    def returns_none(n):
        return None

    @prog.goal
    def raises(n):
        return [[msw("c", "x")]][n]

    with pytest.raises(InvalidInputError, match=r"in goal bad_switch\(1\).*'nope' is not "
                                                r"declared"):
        explain(prog, [bad_switch(1)])
    with pytest.raises(InvalidInputError, match=r"in goal bad_outcome\(1\).*'z' is not an "
                                                r"outcome of switch 'c'"):
        explain(prog, [bad_outcome(1)])
    with pytest.raises(ProgramError, match=r"bad_item\(1\).*'text'"):
        explain(prog, [bad_item(1)])
    with pytest.raises(ProgramError, match=r"returns_none\(1\).*returned None"):
        explain(prog, [returns_none(1)])
    with pytest.raises(ProgramError, match=r"raises\(5\).*IndexError"):
        explain(prog, [raises(5)])
    other = Program("other")
    other.switch("c", ["x"])

    @other.goal
    def alien():
        return [[msw("c", "x")]]

    with pytest.raises(InvalidInputError, match="not a goal of this model's program"):
        ProgramModel(prog).fit([alien()])


def test_goals_of_probability_zero_are_named():
    prog = Program()
    prog.switch("c", ["x", "y"], probs=[1.0, 0.0])

    @prog.goal
    def needs_y(n):
        return [[msw("c", "y")]]

    @prog.goal
    def impossible(n):
        return [[never(n)]]

    @prog.goal
    def never(n):
        return []

    model = ProgramModel(prog, init="declared")
    # a goal without explanation scores -inf, as a PCFG sentence without a parse (was: an
    # error); methods that need an explanation, and fit, refuse it
    np.testing.assert_array_equal(model.score_samples([needs_y(1), impossible(3)]),
                                  [-np.inf, -np.inf])
    with pytest.raises(ZeroProbabilityError, match=r"goal impossible\(3\) has probability "
                                                   r"zero .*no most probable explanation"):
        model.viterbi(impossible(3))
    for init in ("declared", "random"):  # whatever the learned switches: refused up front
        with pytest.raises(ZeroProbabilityError, match=r"goal impossible\(3\) has probability "
                                                       r"zero whatever the probabilities of "
                                                       r"the learned switches"):
            ProgramModel(prog, init=init).fit([needs_y(1), impossible(3)])
    with pytest.raises(ZeroProbabilityError, match=r"needs_y\(2\) has probability zero"):
        model.viterbi(needs_y(2))
    with pytest.raises(ZeroProbabilityError, match=r"needs_y\(2\) has probability zero"):
        model.fit([needs_y(2)])
    assert model.score_samples([needs_y(2)])[0] == -np.inf  # scoring reports it, learning refuses
    # every method that needs a posterior or an explanation names the goals (the one
    # zero-probability rule, hiddenstate.learn.check_possible)
    goals = [needs_y(1), needs_y(2)]
    for call, match in (
            (lambda: model.goal_posteriors(goals), "goals: goals needs_y\\(1\\) and needs_y"
                                                   "\\(2\\) have probability zero"),
            (lambda: model.outside(needs_y(1)), "needs_y\\(1\\) has probability zero"),
            (lambda: model.kbest(needs_y(1), 2), "goal: goal needs_y\\(1\\) has .* no "
                                                 "explanation"),
            (lambda: model.fit(goals), "under the current switch probabilities")):
        with pytest.raises(ZeroProbabilityError, match=match):
            call()
    # y is learned: any positive probability explains the goals, so init="random" fits
    assert ProgramModel(prog, random_state=0).fit(goals).probs_["c"][1] > 0.99


@pytest.mark.parametrize("kw,match", [
    ({"learn": "nuts"}, "learn"),
    ({"n_iter": 0}, "n_iter"),
    ({"n_init": 2, "init": "declared"}, "n_init"),
    ({"init": "kmeans"}, "init"),
    ({"k_best": 0}, "k_best"),
    ({"tol": float("nan")}, "tol"),
    ({"anneal": [0.5, 0.2]}, "anneal"),
    ({"anneal": [0.0, 1.0]}, "anneal"),
    ({"anneal": [0.5], "learn": "vt"}, "anneal"),
])
def test_hyper_parameters_are_validated(kw, match):
    prog = hmm_program(2, 2)
    with pytest.raises(InvalidInputError, match=match):
        ProgramModel(prog, **kw).fit([prog.predicates["hmm"]([0, 1])])


@pytest.mark.parametrize("goals", [[], None, "abc", [[0, 1]], 3.5])
def test_goals_that_are_not_goals_are_refused(goals):
    prog = hmm_program(2, 2)
    with pytest.raises(InvalidInputError, match="goals"):
        ProgramModel(prog).fit(goals)


def test_hand_set_probabilities_are_validated_where_used():
    prog = hmm_program(2, 2)
    model = ProgramModel(prog)
    with pytest.raises(InvalidInputError, match="sums to"):
        model.set_probs("init", [0.5, 0.6])
    model.probs_ = {"init": np.array([np.nan, 1.0])}
    with pytest.raises(InvalidInputError, match=r"probs_\['init'\]"):
        model.score([prog.predicates["hmm"]([0, 1])])
    model.probs_ = {"inti": np.array([0.5, 0.5])}
    with pytest.raises(InvalidInputError, match="'inti' is not a switch"):
        model.score([prog.predicates["hmm"]([0, 1])])
    with pytest.raises(InsufficientMemoryError, match="k: keeping the 1000000000 best .* GiB"):
        ProgramModel(prog).kbest(prog.predicates["hmm"]([0, 1]), 10**9)
    with pytest.raises(InvalidInputError, match="no sampler"):
        ProgramModel(Program("bare")).sample(1)


def test_the_examples_in_docs_programs_print_what_they_say(capsys):
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "programs.md").read_text("utf-8")
    body = doc.split("## An HMM in a few lines", 1)[1]
    namespace: dict = {}
    for code in re.findall(r"```python\n(.*?)```", body, re.S):
        exec(compile(code, "docs/programs.md", "exec"), namespace)
    shown = re.findall(r"\nprints\n\n```\n(.*?)```", body, re.S)
    assert len(shown) == 3
    assert capsys.readouterr().out == "".join(shown)

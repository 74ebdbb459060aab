"""The explanation-graph engine of hiddenstate.programs against brute-force enumeration of
every derivation (tests/program_brute_force.py): inside, outside, expected counts, expected
goal uses, Viterbi and k-best explanations, posterior samples; sampling execution against
the inside probabilities; long chains; cyclic and non-terminating programs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from program_brute_force import derivations, summary
from scipy.stats import chisquare

import hiddenstate as hs
from hiddenstate.errors import ProgramError
from hiddenstate.programs import Program, ProgramModel, explain, msw
from hiddenstate.programs.examples import hmm_program, path_program, pcfg_program

#: an ambiguous grammar: alternatives with two child goals, sub-goals shared by many parses
GRAMMAR = {"S": [("S", "S"), ("A", "S"), ("a",)], "A": [("a",), ("b",), ("A", "A")]}


def repeats_program() -> Program:
    """Multiplicities: one outcome twice in an alternative, one child goal twice in an
    alternative, a goal that always holds ([[]]) and one that fails ([])."""
    prog = Program("repeats")
    prog.switch("c", ["h", "t"])
    prog.switch("d", [1, 2, 3])

    @prog.goal
    def top():
        return [[msw("c", "h"), msw("c", "h"), true()], [coin(), coin(), msw("d", 2)],
                [msw("d", 3), fail()], [die(), coin()]]

    @prog.goal
    def coin():
        return [[msw("c", "h")], [msw("c", "t"), true()]]

    @prog.goal
    def die():
        return [[msw("d", v), coin()] for v in (1, 2, 3)]

    @prog.goal
    def true():
        return [[]]

    @prog.goal
    def fail():
        return []

    return prog


def _randomised(prog: Program, seed: int) -> ProgramModel:
    rng = np.random.default_rng(seed)
    model = ProgramModel(prog)
    table = prog.switches
    for name, spec in zip(table.names, table.specs, strict=True):
        model.set_probs(name, rng.dirichlet(np.ones(len(spec.outcomes))))
    return model


def _cases():
    hmm = hmm_program(2, 3)
    pcfg = pcfg_program(GRAMMAR)
    path = path_program()
    reps = repeats_program()
    return [
        ("hmm", hmm, hmm.predicates["hmm"]([0, 2, 1, 1])),
        ("pcfg", pcfg, pcfg.predicates["sentence"](list("ababa"))),
        ("path", path, path.predicates["path"](1, 4)),
        ("repeats", reps, reps.predicates["top"]()),
    ]


CASES = _cases()


def _logp_of(model: ProgramModel):
    logtheta = model._log_theta()
    table = model.program.switches
    return lambda m: logtheta[table.param_index(m[0], m[1])]


@pytest.mark.parametrize("name,prog,goal", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("seed", [0, 1])
def test_sum_product_passes_equal_enumeration(name, prog, goal, seed):
    model = _randomised(prog, seed)
    ref = summary(goal, _logp_of(model))
    assert len(ref["derivations"]) > 3
    assert model.score_samples([goal])[0] == pytest.approx(ref["logz"], abs=1e-10)
    counts = model.expected_counts([goal])
    table = prog.switches
    for sw, got in counts.items():
        want = [ref["counts"].get(msw(sw, v), 0.0) for v in table.outcomes(sw)]
        assert np.allclose(got, want, rtol=0, atol=1e-10), sw
    assert {sw for sw, c in counts.items() if c.sum() > 1e-12} == \
        {m[0] for m in ref["counts"]}
    uses = model.goal_posteriors([goal])
    assert set(uses) == set(ref["uses"])
    for g, u in uses.items():
        assert u == pytest.approx(ref["uses"][g], abs=1e-10), g
    outside = model.outside(goal)
    for g, o in outside.items():
        assert o == pytest.approx(ref["outside"][g], abs=1e-10), g


@pytest.mark.parametrize("name,prog,goal", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("seed", [0, 1])
def test_viterbi_and_kbest_equal_enumeration(name, prog, goal, seed):
    model = _randomised(prog, seed)
    ders = sorted(derivations(goal, _logp_of(model)), key=lambda d: -d[0])
    by_steps = {d[1]: d for d in ders}
    assert len(by_steps) == len(ders)
    best = model.viterbi(goal)
    assert best.logprob == pytest.approx(ders[0][0], abs=1e-10)
    assert by_steps[best.steps][2] == best.msws
    for k in (1, 3, len(ders) + 2):
        got = model.kbest(goal, k)
        n = min(k, len(ders))
        assert len(got) == n
        assert np.allclose([e.logprob for e in got], [d[0] for d in ders[:n]],
                           rtol=0, atol=1e-10)
        # distinct derivations, each with its own outcomes and probability (the repeats
        # program has ties: two derivations with the same outcomes in another order)
        assert len({e.steps for e in got}) == n
        for e in got:
            assert by_steps[e.steps][2] == e.msws
            assert by_steps[e.steps][0] == pytest.approx(e.logprob, abs=1e-10)


@pytest.mark.parametrize("name,prog,goal", CASES, ids=[c[0] for c in CASES])
def test_posterior_samples_follow_the_distribution_over_explanations(name, prog, goal):
    model = _randomised(prog, 3)
    ders = derivations(goal, _logp_of(model))
    lps = np.array([d[0] for d in ders])
    p = np.exp(lps - lps.max())
    p /= p.sum()
    index = {d[1]: i for i, d in enumerate(ders)}
    n = 20000
    draws = model.sample_explanations(goal, n, random_state=11)
    observed = np.bincount([index[e.steps] for e in draws], minlength=len(ders))
    for e in draws[:50]:  # each draw carries its own probability
        assert e.logprob == pytest.approx(ders[index[e.steps]][0], abs=1e-12)
    # pool the rare explanations so every expected count is at least 5
    order = np.argsort(p)
    pooled_obs, pooled_exp, acc_o, acc_e = [], [], 0, 0.0
    for i in order:
        acc_o += observed[i]
        acc_e += n * p[i]
        if acc_e >= 5:
            pooled_obs.append(acc_o)
            pooled_exp.append(acc_e)
            acc_o, acc_e = 0, 0.0
    pooled_obs[-1] += acc_o
    pooled_exp[-1] += acc_e
    assert len(pooled_obs) >= 3
    assert chisquare(pooled_obs, pooled_exp).pvalue > 1e-3


def test_sampling_execution_draws_goals_with_their_inside_probabilities():
    prog = hmm_program(2, 2)
    model = _randomised(prog, 5)
    hmm = prog.predicates["hmm"]
    n = 20000
    drawn = model.sample(n, random_state=7, args=(3,))
    assert all(g[0] is hmm for g in drawn)
    seqs = [(a, b, c) for a in range(2) for b in range(2) for c in range(2)]
    p = np.exp(model.score_samples([hmm(s) for s in seqs]))
    assert p.sum() == pytest.approx(1.0, abs=1e-12)  # exclusive: the inside sum is P(x)
    index = {s: i for i, s in enumerate(seqs)}
    observed = np.bincount([index[tuple(g[1])] for g in drawn], minlength=8)
    assert chisquare(observed, n * p).pvalue > 1e-3


def test_a_shared_sub_goal_appears_once_in_the_graph():
    prog = pcfg_program(GRAMMAR)
    sentence = prog.predicates["sentence"]
    words = list("ababa")
    graph = explain(prog, [sentence(words), sentence(words), sentence(words[:3])])
    assert len(set(graph.goals)) == graph.n_nodes
    assert graph.roots[0] == graph.roots[1]
    # the two sentences share span(..., words) goals only when their words match; a goal
    # is explained once however many alternatives mention it
    n_spans = sum(1 for g in graph.goals if g[0].name == "span")
    assert n_spans == len({g for g in graph.goals if g[0].name == "span"})
    # the combined graph gives each goal the numbers of its own graph
    model = _randomised(prog, 0)
    lp_all = model.score_samples([sentence(words), sentence(words[:3])])
    assert lp_all[1] == pytest.approx(model.score_samples([sentence(words[:3])])[0], abs=1e-12)


def test_a_long_chain_does_not_underflow():
    K, W, T = 3, 4, 10_000
    rng = np.random.default_rng(4)
    pi, A, B = rng.dirichlet(np.ones(K)), rng.dirichlet(np.ones(K), K), \
        rng.dirichlet(np.ones(W), K)
    x = rng.integers(0, W, T)
    hmm = hs.HMM(K, init_params="")
    hmm.startprob_, hmm.transmat_, hmm.emissionprob_, hmm.n_features_ = pi, A, B, W
    prog = hmm_program(K, W)
    model = ProgramModel(prog)
    model.set_probs("init", pi)
    for s in range(K):
        model.set_probs(("tr", s), A[s])
        model.set_probs(("out", s), B[s])
    goal = prog.predicates["hmm"](x)
    lp = model.score_samples([goal])[0]
    assert np.isfinite(lp) and lp < -5000  # far below the smallest float64 (1e-308)
    assert lp == pytest.approx(hmm.score(x), rel=1e-12)
    post = model.goal_posteriors([goal])
    step = prog.predicates["step"]
    gamma = hmm.predict_proba(x)
    got = np.array([[post[step(goal[1], t, s)] for s in range(K)] for t in (0, T // 2, T - 1)])
    assert np.allclose(got, gamma[[0, T // 2, T - 1]], rtol=0, atol=1e-9)
    logp, states = hmm.decode(x)
    best = model.viterbi(goal)
    assert best.logprob == pytest.approx(logp, rel=1e-12)
    z = np.array([g[3] for g, _ in best.steps[1:]])  # the path (exact ties may differ)
    log_joint = np.log(pi[z[0]]) + np.log(A[z[:-1], z[1:]]).sum() + np.log(B[z, x]).sum()
    assert log_joint == pytest.approx(logp, rel=1e-12)


# -- programs that cannot be explained ----------------------------------------------------------
def test_a_cyclic_goal_is_an_error_naming_the_cycle():
    prog = Program("cyclic")
    prog.switch("c", ["x", "y"])

    @prog.goal
    def a(n):
        return [[msw("c", "x"), b(n)], [msw("c", "y")]]

    @prog.goal
    def b(n):
        return [[a(n)]]

    with pytest.raises(ProgramError, match=r"a\(1\) depends on itself \(a\(1\) -> b\(1\) -> "
                                           r"a\(1\)\)"):
        explain(prog, [a(1)])


def test_the_path_program_without_a_visited_set_is_cyclic():
    prog = Program("loops")
    prog.switch_family("edge", ["on", "off"], keys=[(1, 2), (2, 3)])

    @prog.goal
    def path(x, y):
        if x == y:
            return [[]]
        return [[msw(("edge", *e), "on"), path(z, y)]
                for e in [(1, 2), (2, 3)] if x in e for z in e if z != x]

    with pytest.raises(ProgramError, match="depends on itself.*visited"):
        explain(prog, [path(1, 3)])


def test_a_goal_that_never_reaches_a_base_case_hits_the_depth_limit():
    prog = Program("runaway", max_depth=500)
    prog.switch("c", ["x"])

    @prog.goal
    def count(n):
        return [[msw("c", "x"), count(n + 1)]]

    with pytest.raises(ProgramError, match="max_depth=500.*count"):
        explain(prog, [count(0)])


def test_a_goal_that_creates_goals_forever_hits_the_goal_limit():
    prog = Program("wide", max_goals=1000)
    prog.switch("c", ["x"])

    @prog.goal
    def fan(n):  # a generator of alternatives that never ends
        return ([msw("c", "x"), leaf(n, i)] for i in itertools.count())

    @prog.goal
    def leaf(n, i):
        return [[]]

    with pytest.raises(ProgramError, match="max_goals=1000"):
        explain(prog, [fan(0)])

    endless = Program("endless", max_alternatives=1000)
    endless.switch("c", ["x"])

    @endless.goal
    def flips():  # alternatives of switch outcomes only, forever
        return ([msw("c", "x")] for _ in itertools.count())

    with pytest.raises(ProgramError, match="max_alternatives=1000"):
        explain(endless, [flips()])


def test_a_long_chain_needs_no_python_recursion():
    prog = Program("chain")
    prog.switch("c", ["x", "y"], probs=[0.5, 0.5])

    @prog.goal
    def chain(n):
        return [[msw("c", "x")]] if n == 0 else [[msw("c", "x"), chain(n - 1)],
                                                  [msw("c", "y"), chain(n - 1)]]

    lp = ProgramModel(prog).score_samples([chain(50_000)])[0]
    assert lp == pytest.approx(np.log(0.5), abs=1e-9)  # each level sums to one

"""Programs at the edges (issue 21): every loop of the tabled search and of sampling
execution is bounded and names its limit, declarations and hand-set probabilities are
checked, goals of probability zero are named wherever an explanation or a posterior is
asked for, and any input either works (checked against enumeration or hs.HMM) or raises a
HiddenStateError. What tests/test_programs_engine.py and test_programs_learning.py cover
already (cycles, max_goals / max_depth / max_alternatives, duplicate and empty outcomes,
NaN and unnormalised declared probabilities, undeclared switches, goals of another program)
is not repeated here."""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hiddenstate as hs
from hiddenstate import _validation
from hiddenstate.errors import (
    HiddenStateError,
    InsufficientMemoryError,
    InvalidInputError,
    ProgramError,
    ZeroProbabilityError,
)
from hiddenstate.programs import Program, ProgramModel, explain, geometric_schedule, msw
from hiddenstate.programs.examples import hmm_program


def run_isolated(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (a hang fails the test instead of the suite)."""
    import hiddenstate

    src = str(Path(hiddenstate.__file__).resolve().parents[1])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env={"PYTHONPATH": src, "PATH": ""})


def coin_program(**kw) -> Program:
    prog = Program("coin", **kw)
    prog.switch("c", ["h", "t"], probs=[0.3, 0.7])

    @prog.goal
    def flips(n):  # n flips, the last one heads
        if n == 1:
            return [[msw("c", "h")]]
        return [[msw("c", "t"), flips(n - 1)]]

    return prog


# -- bounded loops -------------------------------------------------------------------------------
def test_an_alternative_that_never_ends_hits_max_items():
    prog = Program("endless", max_items=1000)
    prog.switch("c", ["x"])

    @prog.goal
    def forever():  # one alternative, a generator of outcomes without end
        return [(msw("c", "x") for _ in itertools.count())]

    with pytest.raises(ProgramError, match=r"max_items=1000 .*at forever\(\).*never ends"):
        explain(prog, [forever()])

    @prog.goal
    def long(n):  # a finite alternative as a generator is fine
        return [(msw("c", "x") for _ in range(n))]

    assert ProgramModel(prog).score_samples([long(500)])[0] == 0.0  # log 1^500
    with pytest.raises(ProgramError, match="max_items=1000"):
        explain(prog, [long(1001)])
    with pytest.raises(InvalidInputError, match="max_items"):
        Program(max_items=0)


def test_a_sampler_that_never_terminates_stops_at_max_draws():
    proc = run_isolated("""
        import hiddenstate as hs
        from hiddenstate.programs import Program, ProgramModel
        prog = Program("runaway")
        prog.switch("c", ["x", "y"])

        @prog.sampler
        def walk(draw):          # never returns
            while True:
                draw("c")

        try:
            ProgramModel(prog).sample(1, random_state=0)
        except hs.HiddenStateError as e:
            print(type(e).__name__, e)
    """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("ProgramError max_draws: one run of the sampler 'walk' drew "
                                  "more than 1000000 outcomes")


def test_a_sampler_that_recurses_or_fails_is_named():
    prog = Program("tree")
    prog.switch("split", [True, False], probs=[0.9, 0.1])  # 1.8 children on average

    @prog.sampler
    def grow(draw, depth=0):
        return [grow(draw, depth + 1), grow(draw, depth + 1)] if draw("split") else "leaf"

    with pytest.raises(ProgramError, match="max_draws: one run of the sampler 'grow' drew "
                                           "more than 500 outcomes"):
        ProgramModel(prog).sample(5, random_state=0, max_draws=500)
    with pytest.raises(ProgramError, match="'grow' recursed deeper than Python allows"):
        ProgramModel(prog).sample(5, random_state=0)

    @prog.sampler
    def broken(draw):
        return {"a": 1}[draw("split")]

    with pytest.raises(ProgramError, match=r"the sampler 'broken' raised KeyError\(True\)"):
        ProgramModel(prog).sample(1, random_state=0)

    @prog.sampler
    def undeclared(draw):
        return draw("nope")

    with pytest.raises(InvalidInputError, match="switch 'nope' is not declared"):
        ProgramModel(prog).sample(1, random_state=0)
    for kw, match in (({"max_draws": 0}, "max_draws"), ({"random_state": -2}, "random_state")):
        with pytest.raises(InvalidInputError, match=match):
            ProgramModel(prog).sample(1, **kw)


def test_a_bounded_sampler_draws_what_the_probabilities_say():
    prog = coin_program()

    @prog.sampler
    def until_heads(draw):
        n = 1
        while draw("c") == "t":
            n += 1
        return n

    runs = np.array(ProgramModel(prog).sample(4000, random_state=1, max_draws=1000))
    # geometric with p = 0.3: mean 1 / 0.3
    assert abs(runs.mean() - 1 / 0.3) < 4 * np.sqrt(0.7 / 0.3**2 / len(runs))


def test_an_annealing_schedule_is_bounded():
    proc = run_isolated("""
        from hiddenstate.programs import geometric_schedule
        import hiddenstate as hs
        try:
            geometric_schedule(1e-300, 1 + 1e-12)
        except hs.HiddenStateError as e:
            print(type(e).__name__, e)
    """, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("InvalidInputError rate: going from beta0=1e-300 to 1 by a "
                                  "factor 1.000000000001 takes 6.91e+14 stages")
    assert geometric_schedule(0.1, 1.5) == pytest.approx(
        [0.1, 0.15, 0.225, 0.3375, 0.50625, 0.759375, 1.0])
    for beta0, rate in ((0.0, 1.5), (True, 1.5), (0.1, 1.0), (0.1, float("nan"))):
        with pytest.raises(InvalidInputError, match="beta0|rate"):
            geometric_schedule(beta0, rate)
    prog = coin_program()
    with pytest.raises(InvalidInputError, match="anneal: 1001 stages"):
        ProgramModel(prog, anneal=np.linspace(0.001, 1, 1001)).fit(
            [prog.predicates["flips"](3)])


# -- the search and its input -------------------------------------------------------------------
def test_explain_names_what_is_not_a_program_or_goals():
    prog = coin_program()
    flips = prog.predicates["flips"]
    for program, goals, match in (("coin", [flips(2)], "program: expected a hiddenstate"),
                                  (prog, 5, "goals: expected a list of goals, got int"),
                                  (prog, [], "goals: empty"),
                                  (prog, ["flips(2)"], "'flips\\(2\\)' is not a goal")):
        with pytest.raises(HiddenStateError, match=match):
            explain(program, goals)
    graph = explain(prog, flips(3))  # one goal is a list of one
    assert graph.n_nodes == 3


def test_goals_with_unhashable_arguments_are_named():
    prog = Program("args")
    prog.switch("c", ["x"])

    @prog.goal
    def top(arg):
        return [[leaf(arg)]]

    @prog.goal
    def leaf(arg):
        return [[msw("c", "x")]]

    @prog.goal
    def wrap(n):
        return [[leaf({"n": n})]]

    @prog.goal
    def bad_msw():
        return [[msw(["c"], "x")]]

    assert ProgramModel(prog).score_samples([top([1, 2, 3])])[0] == 0.0  # lists are frozen
    for goal, match in ((top({"a": 1}), r"the observed goals: top\(\{'a': 1\}\) has an "
                                        "argument that is not hashable"),
                        (top([[1], [2]]), r"the observed goals: top\(\(\[1\], \[2\]\)\)"),
                        (wrap(3), r"goal wrap\(3\): leaf\(\{'n': 3\}\) has an argument"),
                        (bad_msw(), r"msw\(\['c'\], 'x'\) has an argument that is not "
                                    "hashable")):
        with pytest.raises(ProgramError, match=match):
            explain(prog, [goal])


def test_declarations_that_cannot_work_are_refused():
    prog = Program()
    for call, match in (
            (lambda: prog.switch("n", [float("nan"), 1.0]), "outcome nan is not equal to "
                                                            "itself"),
            (lambda: prog.switch("s", "ab"), "outcomes must be a list"),
            (lambda: prog.switch("d", ["x", "y"], probs={"x": 1.0}), "expected numbers"),
            (lambda: prog.switch("p", ["x", "y"], prior=[1.0, 2.0, 3.0]), "one number per "
                                                                          "outcome"),
            (lambda: prog.switch("q", ["x", "y"], prior=np.nan), "finite and > 0"),
            (lambda: prog.switch_family("f", [0, 1], keys=5), "keys must be a list"),
            (lambda: prog.switch_family("g", [0, 1], keys="ab"), "keys must be a list"),
            (lambda: prog.switch_family("h", [0, 1], keys=[0, 0]), "repeated"),
            (lambda: prog.switch_family("i", [0, 1], probs={0: [0.5, np.inf]}), "finite"),
            (lambda: prog.switch_family("j", [0, 1], keys=[0, 1], probs={0: [0.5, 0.5]},
                                        fixed=True), "no entry for key 1"),
            (lambda: prog.switch_family(3, [0, 1]), "expected a string"),
            (lambda: prog.switch(["x"], [0, 1]), "not hashable"),
            (lambda: prog.goal(3), "expected a function"),
            (lambda: prog.sampler(None), "expected a function"),
            (lambda: Program(max_goals=True), "max_goals"),
            (lambda: Program(max_depth=0), "max_depth")):
        with pytest.raises(InvalidInputError, match=match):
            call()
    assert prog.switches.names == []  # nothing half-declared


def test_set_probs_misuse_is_named_and_changes_nothing():
    prog = hmm_program(2, 3)
    model = ProgramModel(prog)
    before = model._theta().copy()
    for target in (prog, model):
        for switch, probs, match in ((["init"], [0.5, 0.5], "not hashable"),
                                     ("nope", [0.5, 0.5], "'nope' is not declared"),
                                     (("tr", 7), [0.5, 0.5], "has no key 7"),
                                     ("init", [0.5, np.nan], "finite"),
                                     ("init", [-0.5, 1.5], "non-negative"),
                                     ("init", [0.5, 0.6], "sums to 1.1"),
                                     ("init", [1.0], r"shape \(2,\)"),
                                     ("init", "ab", "expected numbers")):
            with pytest.raises(InvalidInputError, match=match):
                target.set_probs(switch, probs)
    np.testing.assert_array_equal(model._theta(), before)


def test_hand_set_probs_of_an_open_family_switch_are_used_before_it_is():
    prog = Program("open")
    coin = prog.switch_family("coin", ["h", "t"])  # keys created on first use

    @prog.goal
    def toss(k):
        return [[msw(coin(k), "h")]]

    model = ProgramModel(prog)
    model.probs_ = {coin(5): np.array([0.2, 0.8])}
    assert model.score_samples([toss(5)])[0] == pytest.approx(np.log(0.2), abs=1e-12)
    model.probs_ = {("cion", 5): np.array([0.2, 0.8])}
    with pytest.raises(InvalidInputError, match=r"probs_: \('cion', 5\) is not a switch"):
        model.score_samples([toss(5)])


def test_point_estimates_refuse_priors_below_one_like_the_hmm():
    prog = Program("sparse")
    prog.switch("c", ["x", "y", "z"], prior=0.5)
    prog.switch("d", ["x", "y"], prior=[1.0, 0.2], fixed=True, probs=[0.5, 0.5])

    @prog.goal
    def obs(v, w):
        return [[msw("c", v), msw("d", w)]]

    data = [obs("x", "x"), obs("x", "y"), obs("y", "x")]
    for learn in ("map", "vt", "kvt"):
        with pytest.raises(InvalidInputError, match=rf"prior: switch 'c' declares Dirichlet "
                                                    rf"concentrations \[0.5, 0.5, 0.5\] and "
                                                    rf"learn={learn!r} needs them >= 1"):
            ProgramModel(prog, learn=learn, init="uniform").fit(data)
    vb = ProgramModel(prog, learn="vb", init="uniform").fit(data)  # a proper sparse prior
    np.testing.assert_allclose(vb.posterior_["c"], [0.5 + 2, 0.5 + 1, 0.5], atol=1e-6)
    em = ProgramModel(prog, learn="em", init="uniform").fit(data)  # priors unused
    np.testing.assert_allclose(em.probs_["c"], [2 / 3, 1 / 3, 0.0], atol=1e-9)
    np.testing.assert_allclose(em.probs_["d"], [0.5, 0.5])  # fixed: its prior never matters


def test_methods_of_one_goal_refuse_a_list_of_goals():
    prog = coin_program()
    flips = prog.predicates["flips"]
    model = ProgramModel(prog)
    for method in (model.viterbi, model.outside, lambda g: model.kbest(g, 2),
                   lambda g: model.sample_explanations(g, 2)):
        with pytest.raises(InvalidInputError, match="goal: expected one goal.*once per goal"):
            method([flips(2), flips(3)])
        with pytest.raises(InvalidInputError, match="goal: expected one goal"):
            method("flips(2)")
    assert model.viterbi(flips(3)).logprob == pytest.approx(np.log(0.7**2 * 0.3))


def test_goals_of_probability_zero_are_named_by_every_method_that_explains_them():
    prog = coin_program()
    flips = prog.predicates["flips"]
    model = ProgramModel(prog, init="declared")
    model.set_probs("c", [1.0, 0.0])  # tails impossible: flips(3) has probability zero
    assert model.score_samples([flips(1), flips(3)]).tolist() == [0.0, -np.inf]
    for call in (lambda: model.viterbi(flips(3)), lambda: model.kbest(flips(3), 2),
                 lambda: model.sample_explanations(flips(3), 2),
                 lambda: model.expected_counts([flips(1), flips(3)]),
                 lambda: model.goal_posteriors([flips(3)]), lambda: model.outside(flips(3)),
                 lambda: model.fit([flips(1), flips(3)])):
        with pytest.raises(ZeroProbabilityError, match=r"goal flips\(3\) has probability zero"):
            call()


def test_memory_for_many_posterior_draws_is_checked_before_allocating(monkeypatch):
    monkeypatch.setattr(_validation, "available_memory", lambda: 100 * 2**20)
    prog = coin_program()
    with pytest.raises(InsufficientMemoryError, match="n_samples: drawing 100000000 "
                                                      "explanations"):
        ProgramModel(prog).sample_explanations(prog.predicates["flips"](2), 10**8)


def test_memory_for_many_sampler_runs_is_checked_before_the_first_run(monkeypatch):
    """``sample`` keeps one result per run: 10**8 runs need at least 6.4 GB; refused with
    100 MiB available before the sampler runs once (was: ran until memory ran out)."""
    monkeypatch.setattr(_validation, "available_memory", lambda: 100 * 2**20)
    prog = coin_program()
    runs = []

    @prog.sampler
    def counted(draw, n):
        runs.append(n)
        return prog.predicates["flips"](n)

    model = ProgramModel(prog)
    with pytest.raises(InsufficientMemoryError, match=r"n_samples: sample\(n_samples="
                                                      r"100000000\) needs about 5.96 GiB"):
        model.sample(10**8, args=(2,))
    assert runs == []
    assert len(model.sample(3, random_state=0, args=(2,))) == 3 and runs == [2, 2, 2]


@pytest.mark.parametrize("kw,match", [({"program": "coin"}, "program"),
                                      ({"random_state": -1}, "random_state"),
                                      ({"random_state": "seed"}, "random_state")])
def test_model_arguments_are_named_by_every_method(kw, match):
    prog = coin_program()
    model = ProgramModel(**{"program": prog, **kw})
    goal = prog.predicates["flips"](2)
    calls = [lambda: model.fit([goal])]
    if "program" in kw:
        calls += [lambda: model.score_samples([goal]), lambda: model.viterbi(goal),
                  lambda: model.sample(1), lambda: model.set_probs("c", [0.5, 0.5])]
    for call in calls:
        with pytest.raises(InvalidInputError, match=match):
            call()


# -- property test: works (like hs.HMM) or raises a HiddenStateError ----------------------------
_FLAWS = ("nan", "negative", "scale", "zero", "short", "string", "unknown-switch")
_K, _W = 2, 3


_valid = st.lists(st.lists(st.integers(0, _W - 1), min_size=1, max_size=6), min_size=1,
                  max_size=3)
_seqs = st.one_of(_valid, _valid, _valid, _valid,  # mostly well-formed: then it must work
                  st.lists(st.lists(st.integers(-1, _W), max_size=6), max_size=3))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          derandomize=True)
@given(seqs=_seqs,
       flaw=st.sampled_from([None] * 10 + list(_FLAWS)),
       method=st.sampled_from(["log_prob", "viterbi", "kbest", "fit", "sample_explanations",
                               "expected_counts", "sample"]),
       learn=st.sampled_from(["em", "map", "vb", "vt", "kvt"]), seed=st.integers(0, 3))
def test_an_hmm_program_works_like_hs_hmm_or_raises_a_hiddenstate_error(seqs, flaw, method,
                                                                       learn, seed):
    rng = np.random.default_rng(seed)
    pi, A, B = rng.dirichlet(np.ones(_K)), rng.dirichlet(np.ones(_K), _K), \
        rng.dirichlet(np.ones(_W), _K)
    prog = hmm_program(_K, _W)
    hmm_goal = prog.predicates["hmm"]
    model = ProgramModel(prog, learn=learn, init="declared", n_iter=3, k_best=2)
    probs = {"init": pi, **{("tr", s): A[s] for s in range(_K)},
             **{("out", s): B[s] for s in range(_K)}}
    if flaw is not None:
        bad = probs[("out", 1)].copy()
        if flaw in ("nan", "negative", "scale", "zero"):
            bad[0] = {"nan": np.nan, "negative": -0.1, "scale": bad[0] + 0.5, "zero": 0.0}[flaw]
        probs[("out", 1)] = {"short": bad[:-1], "string": "abc"}.get(flaw, bad)
        if flaw == "unknown-switch":
            probs[("emit", 1)] = bad
    model.probs_ = probs
    goals = [hmm_goal(x) for x in seqs]
    used = seqs[:1] if method in ("viterbi", "kbest", "sample_explanations") else seqs
    valid_data = bool(used) and all(x and min(x) >= 0 and max(x) < _W for x in used)
    usable = valid_data or method == "sample"  # sample() takes no goals
    must_work = flaw is None and usable
    may_work = must_work or (flaw == "zero" and usable)  # zero: ZeroProbabilityError or not
    try:
        result = {
            "log_prob": lambda: model.score_samples(goals),
            "viterbi": lambda: model.viterbi(goals[0] if goals else goals),
            "kbest": lambda: model.kbest(goals[0] if goals else goals, 3),
            "fit": lambda: model.fit(goals),
            "sample_explanations": lambda: model.sample_explanations(
                goals[0] if goals else goals, 2, random_state=seed),
            "expected_counts": lambda: model.expected_counts(goals),
            "sample": lambda: model.sample(2, random_state=seed, args=(len(seqs) + 1,)),
        }[method]()
    except HiddenStateError as exc:
        assert not must_work, f"a valid set-up was refused: {exc}"
        return
    assert may_work, f"{method} accepted the flaw {flaw!r} or the sequences {seqs!r}"
    if method == "log_prob" and flaw is None:
        ref = hs.HMM(_K, init_params="")
        ref.startprob_, ref.transmat_, ref.emissionprob_, ref.n_features_ = pi, A, B, _W
        want = [ref.score(np.array(x)) for x in seqs]
        np.testing.assert_allclose(result, want, rtol=1e-10, atol=1e-10)
    elif method == "viterbi":
        assert result.logprob <= model.score_samples([goals[0]])[0] + 1e-12
    elif method == "kbest":
        lps = [e.logprob for e in result]
        assert lps == sorted(lps, reverse=True) and len(result) == min(3, _K ** len(seqs[0]))
    elif method == "fit":
        h = np.asarray(model.monitor_.history)
        assert np.all(np.isfinite(h))
        assert np.all(np.diff(h) >= -1e-9 * np.maximum(1, np.abs(h[1:])))
    elif method == "sample_explanations":
        assert all(e.steps[0][0] == goals[0] for e in result)
    elif method == "expected_counts":
        # each step emits once: the emission counts add up to the number of steps
        total = sum(result[("out", s)].sum() for s in range(_K) if ("out", s) in result)
        assert total == pytest.approx(sum(len(x) for x in seqs), abs=1e-9)
    else:
        assert all(len(g.args[0]) == len(seqs) + 1 for g in result)

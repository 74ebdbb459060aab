"""The learning policy that lives in ``hiddenstate.learn`` and every model uses: the restart
loop and the best-run choice, the stop rule per mode, annealing stages, the k-best weights,
the zero-probability rule and the warnings of a fit (one per cause per call)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import hiddenstate as hs
from hiddenstate.errors import (
    ConvergenceWarning,
    DegenerateStateWarning,
    InvalidInputError,
    ZeroProbabilityError,
)
from hiddenstate.learn import ConvergenceMonitor, check_possible, fit, fit_restarts, kbest_weights
from hiddenstate.programs import ProgramModel
from hiddenstate.programs.examples import hmm_program


class _Block:
    """A parameter block whose M-step returns the statistics as the new value (and reports
    ``degenerate`` states at the iterations listed in it)."""

    def __init__(self, degenerate=None):
        self.degenerate = degenerate or {}
        self.calls = 0

    def mstep(self, params, stats, which):
        self.calls += 1
        return stats, self.degenerate.get(self.calls, [])

    def log_prior(self, params):
        return 0.0

    # variational Bayes: q is the point value itself, KL 0 (the objective is log Z)
    def vb_init(self, params, n_virtual):
        return params

    def vb_expected(self, q):
        return q

    def vb_update(self, q, stats, which):
        return stats

    def vb_kl(self, q):
        return 0.0

    def vb_mean(self, q):
        return q


class _Scripted:
    """A Problem whose objective (and Viterbi paths) follow a script, one entry per
    E-step; ``params`` is the iteration count."""

    def __init__(self, values, paths=None, degenerate=None):
        self.values, self.paths = list(values), paths
        self.blocks = {"b": _Block(degenerate)}
        self.letters = {"b": "x"}
        self.n_virtual = {"b": 1.0}
        self.n_observations = 1  # tol is an absolute gain here
        self.calls = 0
        self.betas = []

    def expected_counts(self, views):
        self.calls += 1
        return self.values[self.calls - 1], {"b": self.calls}

    def path_counts(self, views, k):
        value, stats = self.expected_counts(views)
        return value, stats, np.asarray(self.paths[self.calls - 1])

    def set_temperature(self, beta):
        self.betas.append(beta)


# -- stop rules -----------------------------------------------------------------------------------
@pytest.mark.parametrize("tol", [1e9, 1e-4, -np.inf])
def test_viterbi_training_ignores_tol_and_stops_when_the_paths_repeat(tol):
    values = [-10.0, -9.0, -8.5, -8.4, -8.3]
    paths = [[0, 1], [1, 1], [1, 0], [1, 0], [0, 0]]
    problem = _Scripted(values, paths)
    out = fit(problem, "vt", {"b": 0}, ConvergenceMonitor(tol, 50), "x")
    # the paths of E-step 4 repeat those of E-step 3: its objective is recorded, no M-step
    assert out.monitor.history == values[:4] and out.monitor.converged
    assert problem.blocks["b"].calls == 3 and out.params == {"b": 3}


def test_viterbi_training_stops_when_the_objective_stalls():
    problem = _Scripted([-10.0, -9.0, -9.0, -8.0], [[0], [1], [0], [1]])
    out = fit(problem, "kvt", {"b": 0}, ConvergenceMonitor(1e9, 50), "x", k_best=2)
    assert out.monitor.history == [-10.0, -9.0, -9.0] and out.monitor.converged


@pytest.mark.parametrize("mode", ["em", "map", "vb"])
def test_em_map_vb_stop_on_tol(mode):
    values = [-10.0, -9.0, -8.9, -8.85, -8.84]
    for tol, n in ((0.2, 3), (0.07, 4), (-np.inf, 5)):
        out = fit(_Scripted(values), mode, {"b": 0}, ConvergenceMonitor(tol, 5), "x")
        assert out.monitor.history == values[:n]
        assert out.monitor.converged == (tol > -np.inf)


# -- restarts and the best run --------------------------------------------------------------------
def test_restarts_keep_the_highest_final_objective_and_the_earliest_on_ties():
    finals = {0: -5.0, 1: -3.0, 2: -3.0, 3: -4.0}
    starts = []

    class P(_Scripted):
        def expected_counts(self, views):
            return finals[views["b"]], {"b": views["b"]}

    def start(r):
        starts.append(r)
        return {"b": r}

    out = fit_restarts(P([]), "em", start, n_init=4, n_iter=1, which="x")
    assert starts == [0, 1, 2, 3]          # once per restart, in order
    assert out.finals == [-5.0, -3.0, -3.0, -4.0]
    assert out.params == {"b": 1}          # restart 1: the highest; 2 ties and comes later
    assert out.stages == [(1.0, [-3.0])]


def test_annealing_is_a_sequence_of_stages_per_restart():
    problem = _Scripted([-3.0, -2.0] * 6)
    out = fit_restarts(problem, "em", lambda r: {"b": 0}, n_init=2, n_iter=2, tol=-np.inf,
                       which="x", anneal=[0.25, 0.5, 1.0])
    assert problem.betas == [0.25, 0.5, 1.0, 0.25, 0.5, 1.0, 1.0]  # reset to 1 at the end
    assert [beta for beta, _ in out.stages] == [0.25, 0.5, 1.0]
    assert all(h == [-3.0, -2.0] for _, h in out.stages)
    for mode in ("vt", "vb"):
        with pytest.raises(InvalidInputError, match="anneal: .*'em' and 'map'"):
            fit_restarts(problem, mode, lambda r: {"b": 0}, which="x", anneal=[0.5, 1.0])
    with pytest.raises(InvalidInputError, match="anneal: expected strictly increasing"):
        fit_restarts(problem, "em", lambda r: {"b": 0}, which="x", anneal=[0.5, 0.4, 1.0])


# -- every model uses the loop ---------------------------------------------------------------
def _pcfg():
    """Two hidden categories X, Y over the same words: EM has several local optima."""
    rules = {"S": [("X", "Y"), ("Y", "X")], "X": [("X", "Y"), ("a",), ("b",)],
             "Y": [("Y", "X"), ("a",), ("b",)]}
    rng = np.random.default_rng(0)
    sents = [list(rng.choice(["a", "b"], size=rng.integers(2, 6))) for _ in range(20)]
    return lambda callback=None, **kw: hs.PCFG(rules=rules, random_state=0, **kw).fit(
        sents, callback=callback)


def _hmm():
    X = np.random.default_rng(0).integers(0, 4, 300)
    return lambda callback=None, **kw: hs.HMM(3, random_state=0, **kw).fit(
        X, [100, 200], callback=callback)


def _nbh():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 300)
    X = rng.integers(0, 3, size=(300, 6))
    X[:, 0] = (X[:, 1] + y) % 3
    return lambda callback=None, **kw: hs.NaiveBayesHidden(
        n_clusters=4, random_state=0, **kw).fit(X, y, callback=callback)


def _treenet():
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.integers(0, 3, 200), rng.integers(0, 2, 200)])
    net = dict(n_states={"a": 3}, edges=[("a", "x0"), ("a", "x1")],
               observed={"x0": 3, "x1": 2})
    return lambda callback=None, **kw: hs.TreeNet(**net, random_state=0, **kw).fit(
        X, callback=callback)


def _program():
    rng = np.random.default_rng(4)
    prog = hmm_program(2, 3, prior=1.5)
    goals = [prog.predicates["hmm"](tuple(int(v) for v in rng.integers(0, 3, 6)))
             for _ in range(12)]
    return lambda callback=None, **kw: ProgramModel(prog, random_state=0, **kw).fit(
        goals, callback=callback)


MODELS = {"HMM": _hmm, "PCFG": _pcfg, "NaiveBayesHidden": _nbh, "TreeNet": _treenet,
          "ProgramModel": _program}


@pytest.mark.parametrize("name", list(MODELS))
def test_every_model_stops_viterbi_training_on_its_paths_not_on_tol(name):
    fit_model = MODELS[name]()
    loose = fit_model(learn="vt", tol=1e6, n_iter=50).monitor_
    tight = fit_model(learn="vt", tol=1e-12, n_iter=50).monitor_
    assert loose.history == tight.history and loose.converged
    assert len(loose.history) >= 2
    em = fit_model(learn="em", tol=1e6, n_iter=50).monitor_  # EM does stop on tol
    assert len(em.history) == 2


@pytest.mark.parametrize("name", [n for n in MODELS if n != "TreeNet"])
def test_every_model_keeps_the_best_of_its_restarts(name):
    """n_init=3 keeps the run (seen through the callback) whose final objective is the
    highest, the earliest among equal ones."""
    fit_model = MODELS[name]()
    runs = []

    def callback(iteration, value):
        if iteration == 1:
            runs.append([])
        runs[-1].append(value)

    best = fit_model(learn="em", n_init=3, n_iter=3, tol=-np.inf, callback=callback)
    assert len(runs) == 3
    finals = [r[-1] for r in runs]
    assert len(set(finals)) > 1  # the restarts differ: the choice is a real one
    assert best.monitor_.history == runs[int(np.argmax(finals))]


# -- k-best weights ------------------------------------------------------------------------------
def test_kbest_weights_against_the_definition():
    rng = np.random.default_rng(0)
    logp = np.sort(rng.normal(-700.0, 3.0, size=(4, 5)), axis=1)[:, ::-1].copy()
    logp[2, 3:] = -np.inf                       # an item with only 3 explanations
    w, log_mass = kbest_weights(logp)
    with np.errstate(divide="ignore"):
        p = np.exp(logp + 700.0)                # the same numbers, shifted into range
    np.testing.assert_allclose(w, p / p.sum(axis=1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(log_mass, np.log(p.sum(axis=1)) - 700.0, rtol=1e-14)
    assert np.all(w[2, 3:] == 0.0)


@pytest.mark.filterwarnings("ignore::hiddenstate.errors.DegenerateStateWarning")
def test_the_models_weigh_k_best_paths_alike():
    """k-best VT of an HMM with k = K on one-step sequences is EM: the K paths of a step are
    all its states, weighted by their posterior."""
    X = np.random.default_rng(1).integers(0, 3, 40)
    lengths = [1] * 40
    kvt = hs.HMM(3, learn="kvt", k_best=3, random_state=0, n_iter=1).fit(X, lengths)
    em = hs.HMM(3, learn="map", random_state=0, n_iter=1).fit(X, lengths)
    np.testing.assert_allclose(kvt.emissionprob_, em.emissionprob_, rtol=1e-12)
    np.testing.assert_allclose(kvt.monitor_.history, em.monitor_.history, rtol=1e-12)


# -- the zero-probability rule --------------------------------------------------------------
def test_zero_probability_names_a_few_items_then_a_count():
    ok = np.zeros(9)
    check_possible(ok, "sequence", "c", "f")
    cases = {(3,): "X: sequence 3 has", (1, 3): "X: sequences 1 and 3 have",
             (1, 3, 4): "X: sequences 1, 3 and 4 have",
             (1, 3, 4, 6, 8): r"X: sequences 1, 3, 4 \(and 2 more\) have"}
    for bad, match in cases.items():
        logp = ok.copy()
        logp[list(bad)] = -np.inf
        with pytest.raises(ZeroProbabilityError, match=match + r" probability zero under the "
                                                       r"current parameters \(c\); f$"):
            check_possible(logp, "sequence", "c", "f")
        with pytest.raises(ZeroProbabilityError, match=match + r" probability zero under the "
                                                       r"model \(c\), so (it has|they have) "
                                                       r"no posterior; score_samples gives "
                                                       r"-inf for (it|them)\. f$"):
            check_possible(logp, "sequence", "c", "f", use="posterior")
    with pytest.raises(ZeroProbabilityError, match="goals: goal g7 has"):
        check_possible(np.array([-np.inf]), "goal", "c", "f", argument="goals",
                       labels=lambda i: f"g{i + 7}")


def _zero_pcfg():
    m = hs.PCFG(rules={"S": [("A", "B")], "A": [("a",), ("b",)], "B": [("b",)]}, start="S")
    m.set_probs("A", [1.0, 0.0])            # "b b" has a parse, of probability zero
    return m


@pytest.mark.parametrize("method", ["parse", "predict_proba", "expected_counts",
                                    "parse_k_best", "sample_parses"])
def test_pcfg_follows_the_zero_probability_rule(method):
    m = _zero_pcfg()
    sents = [["a", "b"], ["b", "b"], ["b", "b"]]
    np.testing.assert_array_equal(m.score_samples(sents), [0.0, -np.inf, -np.inf])
    if method in ("parse_k_best", "sample_parses"):
        with pytest.raises(ZeroProbabilityError, match="sentence: sentence 0 has probability "
                                                       "zero under the model"):
            getattr(m, method)(["b", "b"])
    else:
        with pytest.raises(ZeroProbabilityError, match="sentences: sentences 1 and 2 have "
                                                       "probability zero under the model"):
            getattr(m, method)(sents)
    # learning from it: refused under the current probabilities (some values explain it)
    start = hs.PCFG(rules=m.rules, start=m.start, init="current")
    start.theta_ = m.theta_
    with pytest.raises(ZeroProbabilityError, match="sentences 1 and 2 have probability zero "
                                                   "under the current parameters"):
        start.fit(sents)


# -- warnings: one per cause per call -------------------------------------------------------------
def test_degenerate_states_warn_once_per_fit_naming_states_and_iterations():
    problem = _Scripted([-10.0 + i for i in range(6)],
                        degenerate={1: [3], 2: [3, 7], 4: [7], 5: [7]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit_restarts(problem, "em", lambda r: {"b": 0}, n_iter=6, tol=-np.inf, which="x")
    assert len(caught) == 1 and caught[0].category is DegenerateStateWarning
    assert str(caught[0].message).startswith(
        "b: states [3, 7] had no posterior mass or a variance at the floor (min_covar) in 4 "
        "of 6 iterations (iterations 1-2, 4-5)")
    assert caught[0].filename == __file__   # points at the caller, not inside the library


def test_a_falling_objective_warns_once_with_the_largest_drop():
    problem = _Scripted([-10.0, -11.0, -9.0, -9.5, -9.4])
    with pytest.warns(ConvergenceWarning) as caught:
        fit(problem, "em", {"b": 0}, ConvergenceMonitor(-np.inf, 5), "x")
    assert len(caught) == 1
    assert str(caught[0].message) == ("objective decreased in 2 of 5 iterations (iterations "
                                      "2, 4); the largest drop, at iteration 2: -10 -> -11")


def test_hmm_fit_with_degenerate_states_warns_once(monkeypatch):
    """Issue 21: one ``HMM.fit`` on integer data as Gaussian emitted one
    DegenerateStateWarning per iteration (36 here); now one, with the iterations counted
    the same way as the M-step reports them."""
    X = np.random.default_rng(0).integers(0, 3, size=(500, 1)).astype(float)
    from hiddenstate.families import gaussian

    seen = []
    mstep = gaussian.GaussianEmissions.mstep

    def spy(self, params, stats, which):
        out = mstep(self, params, stats, which)
        seen.append(bool(out[1]))
        return out

    monkeypatch.setattr(gaussian.GaussianEmissions, "mstep", spy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hs.HMM(6, emission="gaussian", random_state=0, n_iter=40, tol=-np.inf).fit(X)
    degenerate = [w for w in caught if w.category is DegenerateStateWarning]
    assert len(degenerate) == 1
    assert f"in {sum(seen)} of 40 iterations" in str(degenerate[0].message)
    assert sum(seen) > 1


@pytest.mark.parametrize("n_init", [1, 3])
def test_restarts_share_one_warning_per_cause(n_init):
    X = np.random.default_rng(0).integers(0, 3, size=(300, 1)).astype(float)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hs.HMM(5, emission="gaussian", random_state=0, n_iter=10, n_init=n_init).fit(X)
    causes = [(w.category, str(w.message).split(":")[0]) for w in caught]
    assert len(causes) == len(set(causes)) >= 1
    if n_init == 3:
        assert all("restart" in str(w.message) for w in caught)


def test_blocked_lm_names_training_sentences_of_probability_zero():
    """BlockedHMMLM's exact EM follows the zero-probability rule too (was: a NumericalError
    naming no sentence)."""
    torch = pytest.importorskip("torch")
    from hiddenstate.lm import EOS, BlockedHMMLM
    from hiddenstate.textio import Vocabulary

    voc = Vocabulary(["<unk>", EOS] + [f"w{i}" for i in range(6)])
    m = BlockedHMMLM(constraint="brown", dtype="float64", progress=False, learn="em",
                     n_epochs=2, states_per_cluster=2)
    m.initialize(voc, np.arange(8) % 4)
    with torch.no_grad():
        m.net_.emit_logits[4] = -float("inf")   # word id 4 cannot be emitted
    ids = np.array([2, 3, 1, 4, 5, 1, 2, 4, 1, 6, 1], dtype=np.int64)
    with pytest.raises(ZeroProbabilityError, match="X: training sentences 1 and 2 have "
                                                   "probability zero"):
        m.fit(ids, resume=True)

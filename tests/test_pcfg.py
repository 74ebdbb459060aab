"""PCFG: the CKY kernels against brute-force enumeration of every parse, against the same
grammar run as a program on the explanation-graph engine, the learning modes, treebank
transforms and the tree metrics."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import tamper

import hiddenstate as hs
from hiddenstate.errors import InvalidInputError, ZeroProbabilityError
from hiddenstate.grammar import (
    START,
    Grammar,
    Tree,
    binarize,
    from_cnf,
    normalise,
    read_trees,
    to_cnf,
)
from hiddenstate.metrics import tree_scores
from hiddenstate.programs import ProgramModel, grammar_program

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "ptb-sample-treebank"

# an ambiguous grammar (PP attachment, two start symbols, a word with two tags)
RULES = {
    "S": [("NP", "VP"), ("S", "PP")],
    "VP": [("V", "NP"), ("VP", "PP"), ("eats",)],
    "NP": [("NP", "PP"), ("D", "N"), ("she",), ("fish",)],
    "PP": [("P", "NP")],
    "V": [("eats",), ("fish",)],
    "P": [("with",)],
    "D": [("the",)],
    "N": [("fork",), ("fish",)],
}
START_SYMBOLS = ["S", "VP"]
SENTENCES = [
    "she eats fish with the fork".split(),
    "the fish eats the fork with fish".split(),
    "fish fish fish".split(),
    "eats fish with the fish".split(),
    "eats".split(),
]


def random_model(seed: int = 0, **kw) -> hs.PCFG:
    m = hs.PCFG(rules=RULES, start=START_SYMBOLS, **kw)
    g = m.grammar()
    rng = np.random.default_rng(seed)
    theta = np.concatenate([rng.dirichlet(np.ones(k)) for _, _, k in g.switches()])
    m.theta_ = theta
    return m


# -- brute force ----------------------------------------------------------------------------------
def all_parses(g: Grammar, theta: np.ndarray, words: list[str]):
    """Every derivation of ``words``: (log-probability, CNF tree, Counter of rule indices),
    by plain recursion over the rules (no chart)."""
    logt = np.log(theta)

    def spans(a, i, j):
        out = []
        lo = g.offsets[a]
        for q, rhs in enumerate(g.rules[a]):
            p = lo + q
            if len(rhs) == 1:
                if j == i + 1 and rhs[0] == words[i]:
                    out.append((logt[p], Tree(a, [words[i]]), Counter([p])))
            else:
                for k in range(i + 1, j):
                    for lp, lt, lc in spans(rhs[0], i, k):
                        for rp, rt, rc in spans(rhs[1], k, j):
                            out.append((logt[p] + lp + rp, Tree(a, [lt, rt]),
                                        lc + rc + Counter([p])))
        return out

    res = []
    for q, s in enumerate(g.start):
        for lp, t, c in spans(s, 0, len(words)):
            res.append((logt[q] + lp, t, c + Counter([q])))
    return res


def logsumexp(x):
    x = np.asarray(x)
    m = x.max()
    return m + np.log(np.exp(x - m).sum())


def test_inside_outside_counts_and_spans_equal_enumeration():
    m = random_model(1)
    g = m.grammar()
    theta = m.theta_
    scores = m.score_samples(SENTENCES)
    for s, words in enumerate(SENTENCES):
        parses = all_parses(g, theta, words)
        assert len(parses) >= 1
        lps = np.array([p[0] for p in parses])
        z = logsumexp(lps)
        assert scores[s] == pytest.approx(z, abs=1e-10)
        post = np.exp(lps - z)
        # expected rule counts
        want = np.zeros(g.n_params)
        for w, (_, _, c) in zip(post, parses, strict=True):
            for p, n in c.items():
                want[p] += w * n
        got = m.expected_counts([words])
        got_vec = np.array([got[(g.param_lhs[p], g.param_rhs[p])] for p in range(g.n_params)])
        np.testing.assert_allclose(got_vec, want, atol=1e-10, rtol=0)
        # span posteriors (outside x inside / Z)
        mu = m.predict_proba([words])[0]
        want_mu = np.zeros_like(mu)
        for w, (_, t, _) in zip(post, parses, strict=True):
            for node, i, j in t.nodes():
                want_mu[i, j, g.nt_index[node.label]] += w
        np.testing.assert_allclose(mu, want_mu, atol=1e-10, rtol=0)
    assert m.score(SENTENCES) == pytest.approx(scores.sum())


def check_best_parses(m, sentences, ranked, k: int = 7) -> None:
    """``m.parse`` and ``m.parse_k_best`` (CNF trees) against ``ranked(words)``: every
    (log-probability, tree) of the sentence by brute force, best first. Also used by
    test_plcg with its own enumeration of left-corner derivations."""
    trees, logp = m.parse(sentences, cnf=True, return_logprob=True)
    for s, words in enumerate(sentences):
        parses = ranked(words)
        assert logp[s] == pytest.approx(parses[0][0], abs=1e-10)
        assert trees[s] == parses[0][1]
        best = m.parse_k_best(words, k, cnf=True)
        assert len(best) == min(k, len(parses))
        np.testing.assert_allclose([b[0] for b in best], [p[0] for p in parses[:k]],
                                   atol=1e-10, rtol=0)
        assert [b[1] for b in best] == [p[1] for p in parses[:len(best)]]
        # every k-best tree really has the score reported
        for lp, t in best:
            match = [p[0] for p in parses if p[1] == t]
            assert match and lp == pytest.approx(match[0], abs=1e-10)


def test_viterbi_and_k_best_equal_enumeration():
    m = random_model(2)
    check_best_parses(m, SENTENCES, lambda words: sorted(
        all_parses(m.grammar(), m.theta_, words), key=lambda p: -p[0]))


def test_posterior_samples_follow_the_posterior():
    m = random_model(3)
    words = SENTENCES[1]
    parses = all_parses(m.grammar(), m.theta_, words)
    lps = np.array([p[0] for p in parses])
    post = np.exp(lps - logsumexp(lps))
    draws = m.sample_parses(words, 4000, random_state=0, cnf=True)
    freq = Counter(str(t) for t in draws)
    tv = 0.5 * sum(abs(freq[str(t)] / 4000 - w) for w, (_, t, _) in
                   zip(post, parses, strict=True))
    assert len(parses) >= 3 and tv < 0.03


def test_forward_samples_have_their_grammar_probability():
    m = random_model(4)
    samples = m.sample(300, random_state=0, cnf=True)
    # each sampled sentence is derivable, and its tree is one of its parses
    short = [(w, t) for w, t in samples if len(w) <= 6]
    assert len(short) >= 30
    for words, tree in short[:30]:
        assert tree in [p[1] for p in all_parses(m.grammar(), m.theta_, words)]
    # the start symbol frequencies match the start switch
    roots = Counter(t.label for _, t in samples)
    assert roots["S"] / 300 == pytest.approx(m.probs_[START][0], abs=0.09)


# -- the same grammar as a program ----------------------------------------------------------------
def test_kernels_equal_the_program_on_the_explanation_graph_engine():
    m = random_model(5)
    g = m.grammar()
    prog = grammar_program(g, m.theta_)
    sentence = prog.predicates["sentence"]
    goals = [sentence(tuple(w)) for w in SENTENCES]
    pm = ProgramModel(prog, init="declared")
    np.testing.assert_allclose(pm.score_samples(goals), m.score_samples(SENTENCES), atol=1e-10,
                               rtol=0)
    counts = pm.expected_counts(goals)
    mine = m.expected_counts(SENTENCES)
    for name, _lo, k in g.switches():
        outcomes = g.start if name == START else g.rules[name]
        for q in range(k):
            rhs = (outcomes[q],) if name == START else outcomes[q]
            assert counts.get(name, np.zeros(k))[q] == pytest.approx(mine[(name, rhs)],
                                                                      abs=1e-10)
    _, logp = m.parse(SENTENCES, return_logprob=True)
    for goal, lp in zip(goals, logp, strict=True):
        assert pm.viterbi(goal).logprob == pytest.approx(lp, abs=1e-10)
    # the same trajectories in every mode from the same start, Dirichlet(1.5) priors
    for mode in ("em", "map", "vb", "vt", "kvt"):
        mine = hs.PCFG(rules=RULES, start=START_SYMBOLS, learn=mode, init="current", n_iter=6,
                       tol=-np.inf, k_best=3, prior=None if mode == "em" else 1.5)
        mine.theta_ = m.theta_
        mine.fit(SENTENCES)
        theirs = ProgramModel(grammar_program(g, m.theta_, prior=1.5), learn=mode,
                              init="declared", n_iter=6, tol=-np.inf, k_best=3)
        theirs.fit([theirs.program.predicates["sentence"](tuple(w)) for w in SENTENCES])
        np.testing.assert_allclose(mine.monitor_.history, theirs.monitor_.history,
                                   atol=1e-10, rtol=0)
        flat = np.concatenate([theirs.probs_[name] for name, _, _ in g.switches()])
        np.testing.assert_allclose(mine.theta_, flat, atol=1e-10, rtol=0)


# -- learning -------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["em", "map", "vb", "vt", "kvt"])
def test_every_mode_objective_is_non_decreasing(mode):
    teacher = random_model(6)
    data = [w for w, _ in teacher.sample(60, random_state=1, max_words=12)]
    m = hs.PCFG(rules=RULES, start=START_SYMBOLS, learn=mode, n_iter=40, n_init=2,
                prior=None if mode == "em" else 1.5,
                k_best=3, random_state=0).fit(data)
    h = np.array(m.monitor_.history)
    assert len(h) >= 2
    assert np.all(np.diff(h) >= -1e-9 * np.abs(h[1:]))
    if mode in ("em", "map"):  # the learned grammar explains the data better than the start
        assert h[-1] > h[0]


def test_viterbi_training_stops_at_a_fixed_point_of_its_parses():
    teacher = random_model(6)
    data = [w for w, _ in teacher.sample(80, random_state=2, max_words=12)]
    m = hs.PCFG(rules=RULES, start=START_SYMBOLS, learn="vt", prior=2.0, n_iter=100,
                random_state=0).fit(data)
    assert m.monitor_.converged and len(m.monitor_.history) < 100
    # the learned probabilities are the MAP estimate from the counts of their own Viterbi
    # parses: one more iteration would change nothing
    g = m.grammar()
    trees = m.parse(data, cnf=True)
    counts = Counter()
    for t in trees:
        counts[(START, (t.label,))] += 1
        for node, _, _ in t.nodes():
            kids = node.children
            rhs = (kids[0],) if isinstance(kids[0], str) else (kids[0].label, kids[1].label)
            counts[(node.label, rhs)] += 1
    for name, lo, k in g.switches():
        outcomes = [(s,) for s in g.start] if name == START else g.rules[name]
        c = np.array([counts[(name, r)] for r in outcomes], dtype=float) + 1.0
        np.testing.assert_allclose(m.theta_[lo:lo + k], c / c.sum(), atol=1e-12)
    again = hs.PCFG(**{**m.get_params(), "init": "current", "n_init": 1})
    again.theta_ = m.theta_
    again.fit(data)
    assert len(again.monitor_.history) == 2  # the parses repeated at once
    np.testing.assert_allclose(again.theta_, m.theta_, atol=1e-12)


def test_supervised_estimate_is_relative_frequency_and_saves(tmp_path):
    trees = [Tree.fromstring(s) for s in (
        "(S (NP she) (VP (V eats) (NP fish)))",
        "(S (NP she) (VP (V eats) (NP (D the) (N fork))))",
        "(S (NP fish) (VP eats))")]
    m = hs.PCFG.from_treebank(trees)
    p = m.rule_probs()
    assert p[("NP", ("she",))] == pytest.approx(2 / 5)
    assert p[("VP", ("V", "NP"))] == pytest.approx(2 / 3)
    assert p[("S", ("NP", "VP"))] == 1.0
    assert m.parse(["she eats fish".split()])[0] == trees[0]
    m.save(tmp_path / "g")
    back = hs.load(tmp_path / "g")
    assert isinstance(back, hs.PCFG)
    np.testing.assert_array_equal(back.theta_, m.theta_)
    assert back.score(["she eats the fork".split()]) == m.score(["she eats the fork".split()])


def test_invalid_input_is_named():
    m = random_model(0)
    with pytest.raises(InvalidInputError, match="'dog'"):
        m.score(["she eats dog".split()])
    with pytest.raises(ZeroProbabilityError, match="sentence 1"):
        m.fit(["she eats fish".split(), "with with".split()])
    with pytest.raises(InvalidInputError, match="not in Chomsky normal form"):
        hs.PCFG(rules={"S": [("A", "B", "C")]}).score([["a"]])
    with pytest.raises(InvalidInputError, match="no rules"):
        hs.PCFG(rules={"S": [("A", "B")], "A": [("a",)]}).score([["a"]])
    with pytest.raises(InvalidInputError, match="empty"):
        m.parse([[]])
    with pytest.raises(InvalidInputError, match="theta_"):
        m.theta_ = np.full(m.grammar().n_params, 0.5)
        m.score([["fish"]])
    unk = hs.PCFG(rules={**RULES, "N": [("fork",), ("fish",), ("<unk>",)]},
                  start=START_SYMBOLS, unknown_word="<unk>")
    assert np.isfinite(unk.score(["she eats the dog".split()]))
    assert unk.parse(["she eats the dog".split()])[0].leaves()[-1] == "dog"


# -- treebank transforms --------------------------------------------------------------------------
def test_binarise_and_collapse_round_trip_on_a_hand_example():
    t = Tree.fromstring("( (S (NP-SBJ (DT the) (JJ big) (NN dog) (-NONE- *T*-1)) "
                        "(VP (VBZ barks)) (. .)))")
    n = normalise(t)
    assert str(n) == "(S (NP (DT the) (JJ big) (NN dog)) (VP (VBZ barks)) (. .))"
    c = to_cnf(n)
    assert str(c) == ("(S (NP (DT the) (NP|<JJ,NN> (JJ big) (NN dog))) "
                      "(S|<VP+VBZ,.> (VP+VBZ barks) (. .)))")
    assert str(binarize(n, markov=1)).count("|<JJ>") == 1
    assert from_cnf(c) == n
    assert from_cnf(to_cnf(n, markov=1)) == n
    assert str(normalise(t, terminals="tags")).startswith("(S (NP (DT DT) (JJ JJ)")


@pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data/ptb-sample-treebank is absent")
def test_treebank_round_trip_and_cnf():
    files = sorted((DATA / "combined").glob("wsj_00*.mrg"))[:20]
    trees = read_trees(files)
    assert len(trees) > 150
    for t in trees:
        n = normalise(t)
        for markov in (None, 1):
            c = to_cnf(n, markov)
            for node, _, _ in c.nodes():
                assert len(node.children) == 2 or node.is_preterminal()
            assert from_cnf(c) == n
            assert c.leaves() == n.leaves()


# -- metrics --------------------------------------------------------------------------------------
def test_tree_metrics_on_hand_checkable_trees():
    gold = Tree.fromstring("(S (NP (D the) (N dog)) (VP (V saw) (NP (D a) (N cat))))")
    same = Tree.fromstring("(S (NP (D the) (N dog)) (VP (V saw) (NP (D a) (N cat))))")
    relabelled = Tree.fromstring("(S (NP (D the) (N dog)) (VP (V saw) (PP (D a) (N cat))))")
    crossing = Tree.fromstring("(S (X (NP (D the) (N dog)) (V saw)) (NP (D a) (N cat)))")
    flat = Tree.fromstring("(S (D the) (N dog) (V saw) (D a) (N cat))")
    s = tree_scores([gold] * 5, [same, relabelled, crossing, flat, None])
    assert s.labelled_tree == pytest.approx(1 / 5)       # only `same`
    assert s.bracketed_tree == pytest.approx(2 / 5)      # same, relabelled
    assert s.zero_crossing == pytest.approx(3 / 5)       # same, relabelled, flat (X crosses VP)
    # gold brackets: S, NP, VP, NP (4 per tree, 20); predicted: 4 + 4 + 4 + 1 = 13
    # matched: 4 + 3 (S, NP, VP) + 3 (S, NP 0-2, NP 3-5) + 1 (S) = 11
    assert s.precision == pytest.approx(11 / 13)
    assert s.recall == pytest.approx(11 / 20)
    assert s.f1 == pytest.approx(2 * (11 / 13) * (11 / 20) / (11 / 13 + 11 / 20))
    with pytest.raises(InvalidInputError, match="leaves"):
        tree_scores([gold], [Tree.fromstring("(S (N dog))")])


def test_k_best_on_many_parses_is_sorted_and_distinct():
    # all binary bracketings of 6 words under S -> S S | a: Catalan(5) = 42 parses
    m = hs.PCFG(rules={"S": [("S", "S"), ("a",)]}, start="S")
    m.set_probs("S", [0.4, 0.6])
    best = m.parse_k_best(["a"] * 6, 50)
    assert len(best) == 42
    assert len({str(t) for _, t in best}) == 42
    lp = 5 * np.log(0.4) + 6 * np.log(0.6)
    np.testing.assert_allclose([b[0] for b in best], lp, atol=1e-12)
    assert m.score([["a"] * 6]) == pytest.approx(np.log(42) + lp, abs=1e-12)
    # a long sentence does not underflow
    assert np.isfinite(m.score([["a"] * 300]))


def test_a_nonterminal_1e400_below_its_cell_neighbour_keeps_its_precision():
    # cell (0, 3) holds P (probability 1) and T (1e-400); only T leads to the root
    m = hs.PCFG(rules={"S": [("T", "B")], "T": [("U", "A"), ("t",)], "U": [("A", "A"), ("u",)],
                       "P": [("A", "D")], "D": [("A", "A")], "A": [("a",)], "B": [("b",)]},
                start="S")
    m.set_probs("T", [1e-200, 1 - 1e-200])
    m.set_probs("U", [1e-200, 1 - 1e-200])
    words = ["a", "a", "a", "b"]
    assert m.score([words]) == pytest.approx(2 * np.log(1e-200), abs=1e-9)
    counts = m.expected_counts([words])
    assert counts[("T", ("U", "A"))] == pytest.approx(1.0, abs=1e-12)
    assert counts[("A", ("a",))] == pytest.approx(3.0, abs=1e-12)
    assert m.predict_proba([words])[0][0, 3, m.grammar().nt_index["T"]] == pytest.approx(1.0)


def test_a_tampered_saved_grammar_is_refused(tmp_path):
    import json

    m = random_model(8)
    m.save(tmp_path / "g")
    doc = json.loads((tmp_path / "g" / "model.json").read_text())
    # two rules swapped by hand: the same grammar text, another model (theta_ is in rule
    # order); the seal of model.json refuses it (issue 21: it used to load silently)
    swapped = json.loads(json.dumps(doc))
    rules = swapped["params"]["rules"]
    i = next(k for k in range(len(rules) - 1) if rules[k][0] == rules[k + 1][0])
    rules[i], rules[i + 1] = rules[i + 1], rules[i]
    (tmp_path / "g" / "model.json").write_text(json.dumps(swapped))
    with pytest.raises(hs.ModelFileError, match="model.json was modified"):
        hs.load(tmp_path / "g")
    # a tamperer who reseals the file meets the content checks
    rules = doc["params"]["rules"]
    rules.append(["S", ["NP", "VP", "PP"]])  # not CNF
    tamper.write(tmp_path / "g", doc, manifest=False)
    with pytest.raises(hs.ModelFileError, match="Chomsky normal form"):
        hs.load(tmp_path / "g")
    rules[-1] = ["S", ["she"]]  # valid rule, but theta_ no longer fits the grammar
    tamper.write(tmp_path / "g", doc, manifest=False)
    with pytest.raises(hs.ModelFileError, match="theta_"):
        hs.load(tmp_path / "g")


# -- why a sentence has probability zero (issue 27) ---------------------------------------------
SMALL = {"S": [("NP", "VP")], "NP": [("she",), ("fish",)], "VP": [("V", "NP"), ("eats",)],
         "V": [("eats",)]}


def test_zero_probability_names_the_missing_rule_and_points_to_markov():
    m = hs.PCFG(SMALL)
    with pytest.raises(ZeroProbabilityError) as err:
        m.parse([["she", "fish"]])
    message = str(err.value)
    assert ("word 1 'she' derives NP and word 2 'fish' derives NP, but the grammar has no "
            "rule S -> NP NP") in message
    assert "markov=1 or 2" in message and "learn='map'" not in message
    with pytest.raises(ZeroProbabilityError, match="whatever the rule probabilities.*no "
                                                   "rule S -> NP NP.*markov=1 or 2"):
        m.fit([["she", "eats"], ["she", "fish"]])


def test_zero_probability_names_the_rules_of_probability_zero_and_points_to_smoothing():
    m = hs.PCFG(SMALL)
    m.set_probs("VP", [0.0, 1.0])
    with pytest.raises(ZeroProbabilityError) as err:
        m.parse([["she", "eats", "fish"]])
    message = str(err.value)
    assert "the rules it needs have probability zero: VP -> V NP" in message
    assert "learn='map' with prior > 1" in message and "markov" not in message
    m.set_probs("NP", [1.0, 0.0])
    with pytest.raises(ZeroProbabilityError, match="every rule that emits word 3 'fish' has "
                                                   "probability zero"):
        m.predict_proba([["she", "eats", "fish"]])


def test_the_explanation_agrees_with_the_inside_probabilities():
    """explain_zero's recogniser says "derivable" exactly when the inside pass gives a
    finite log-probability: every sentence of up to 4 words over the vocabulary, with
    random rule probabilities, some of them zero."""
    import itertools

    from hiddenstate.grammar.diagnose import explain_zero

    rng = np.random.default_rng(3)
    m = hs.PCFG(RULES)
    g = m.grammar()
    for trial in range(3):
        theta = rng.random(g.n_params) * (rng.random(g.n_params) > 0.25 * trial)
        for _, lo, k in g.switches():
            theta[lo:lo + k] = (theta[lo:lo + k] / theta[lo:lo + k].sum()
                                if theta[lo:lo + k].sum() > 0 else 1.0 / k)
        m.theta_ = theta
        for n in range(1, 5):
            for words in itertools.product(g.words, repeat=n):
                logp = m.score_samples([list(words)])[0]
                ids = [g.word_index[w] for w in words]
                clause, cause = explain_zero(g, theta, ids, list(words))
                assert (clause == "") == np.isfinite(logp), (words, clause)
                assert cause in (("",) if np.isfinite(logp) else ("zero", "missing"))


@pytest.mark.skipif(not DATA.is_dir(), reason="the Penn Treebank sample (../shared/data) is "
                    "not here")
def test_a_treebank_grammar_explains_a_held_out_sentence_without_a_parse():
    trees = read_trees(sorted(DATA.glob("combined/*.mrg")))
    m = hs.PCFG.from_treebank(trees[:1500], terminals="tags")
    test = [t.leaves() for t in (normalise(x, terminals="tags") for x in trees[3500:])
            if t is not None and len(t.leaves()) <= 20]
    bad = [s for s, lp in zip(test, m.score_samples(test), strict=True) if lp == -np.inf]
    assert bad
    with pytest.raises(ZeroProbabilityError, match=r"no rule sequence derives (it|them) .*"
                                                   r"derive.*markov=1 or 2") as err:
        m.parse(bad)
    assert "spans" in str(err.value) or "no rule " in str(err.value)

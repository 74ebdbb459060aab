"""PLCG: the compiled graph and the model against brute-force enumeration of every
left-corner derivation, against the same grammar run as a program on the explanation-graph
engine (graph, numbers, learning trajectories, sampler), against the PCFG with the same
rules (the same trees), and the estimator contract."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from test_pcfg import RULES, START_SYMBOLS, check_best_parses
from test_pcfg import SENTENCES as PCFG_SENTENCES

import hiddenstate as hs
from hiddenstate.errors import InvalidInputError, ZeroProbabilityError
from hiddenstate.grammar import START, Grammar, Tree, normalise, read_trees, to_cnf
from hiddenstate.grammar.left_corner import LeftCorner
from hiddenstate.kernels.left_corner import GRAPH, INSIDE, VITERBI, build_graph, chart
from hiddenstate.programs import ExplanationGraph, ProgramModel, explain

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "ptb-sample-treebank"

# test_pcfg's grammar: ambiguous, left-recursive (S, VP, NP), two start symbols, words with
# two tags; one longer sentence
SENTENCES = [*PCFG_SENTENCES[:5], "she eats fish with the fork with the fish".split()]


def random_model(seed: int = 0, rules=RULES, start=START_SYMBOLS, **kw) -> hs.PLCG:
    m = hs.PLCG(rules=rules, start=start, **kw)
    rng = np.random.default_rng(seed)
    m.theta_ = np.concatenate([rng.dirichlet(np.ones(k)) for _, _, k in
                               m.left_corner().spans()])
    return m


# -- brute force: the left-corner process, by plain recursion ------------------------------------
def lc_derivations(model: hs.PLCG, words: list[str]):
    """Every left-corner derivation of ``words``: (log-probability, list of (switch,
    outcome) in derivation order, CNF tree). Written from the definition (shift, project,
    attach), without tables, charts or the model's own derivation code."""
    lc = model.left_corner()
    outcomes, theta, n = lc.outcomes, model.theta_, len(words)

    def logp(switch, outcome):
        return float(np.log(theta[lc.offsets[switch] + outcomes[switch].index(outcome)]))

    def goal(g, i):
        """(end, ops, tree) for every derivation of goal g from words[i]."""
        if i >= n or words[i] not in outcomes.get(("first", g), []):
            return
        for k, ops, t in climb(g, (words[i],), words[i], i + 1):
            yield k, [(("first", g), words[i]), *ops], t

    def climb(g, corner, node, j):
        """A completed ``corner`` (word or nonterminal) ending at j: finish goal g."""
        left_rec = ("attach", g) in outcomes
        for a, rhs in outcomes.get(("lc", g, corner), []):
            rule = [(("lc", g, corner), (a, rhs))]
            if len(rhs) == 1:
                rest = [(j, [], Tree(a, [node]))]
            else:
                rest = [(m, ops, Tree(a, [node, t])) for m, ops, t in goal(rhs[1], j)]
            for m, ops, t in rest:
                if a == g:
                    yield m, rule + ([(("attach", g), "attach")] if left_rec else []) + ops, t
                    if left_rec:
                        for k, more, t2 in climb(g, g, t, m):
                            yield k, rule + [(("attach", g), "project")] + ops + more, t2
                else:
                    for k, more, t2 in climb(g, a, t, m):
                        yield k, rule + ops + more, t2

    out = []
    for r in lc.grammar.start:
        for k, ops, t in goal(r, 0):
            if k == n:
                ops = [(START, r), *ops]
                out.append((sum(logp(s, o) for s, o in ops), ops, t))
    return out


def cnf_trees(g: Grammar, words: list[str], a: str, i: int, j: int):
    """Every CNF tree of ``g`` with root ``a`` over words[i:j]."""
    for rhs in g.rules[a]:
        if len(rhs) == 1:
            if j == i + 1 and rhs[0] == words[i]:
                yield Tree(a, [words[i]])
        else:
            for k in range(i + 1, j):
                for left in cnf_trees(g, words, rhs[0], i, k):
                    for right in cnf_trees(g, words, rhs[1], k, j):
                        yield Tree(a, [left, right])


def logsumexp(x) -> float:
    x = np.asarray(x, dtype=float)
    m = x.max()
    return float(m + np.log(np.exp(x - m).sum()))


# -- against enumeration ---------------------------------------------------------------------------
def test_probabilities_and_expected_counts_equal_enumeration():
    m = random_model(1)
    lc = m.left_corner()
    scores = m.score_samples(SENTENCES)
    for s, words in enumerate(SENTENCES):
        ders = lc_derivations(m, words)
        assert len(ders) >= 1
        lps = np.array([d[0] for d in ders])
        z = logsumexp(lps)
        assert scores[s] == pytest.approx(z, abs=1e-10)
        want: Counter = Counter()
        for w, (_, ops, _) in zip(np.exp(lps - z), ders, strict=True):
            for op in ops:
                want[op] += w
        got = m.expected_counts([words])
        assert set(got) == {(lc.param_switch[p], lc.param_outcome[p])
                            for p in range(lc.n_params)}
        for key, value in got.items():
            assert value == pytest.approx(want.get(key, 0.0), abs=1e-10)
    assert m.score(SENTENCES) == pytest.approx(scores.sum())
    assert isinstance(m.score(SENTENCES), float)


def test_viterbi_and_k_best_equal_enumeration():
    m = random_model(2)
    check_best_parses(m, SENTENCES, lambda words: [
        (lp, t) for lp, _, t in sorted(lc_derivations(m, words), key=lambda d: -d[0])])


def test_derivation_and_build_invert_each_other():
    m = random_model(3)
    lc = m.left_corner()
    for words in SENTENCES:
        for lp, ops, tree in lc_derivations(m, words):
            params = lc.derivation(tree)
            assert params == [lc.index[op] for op in ops]
            assert lc.tree(params) == tree
            assert float(np.log(m.theta_[params]).sum()) == pytest.approx(lp, abs=1e-12)
    with pytest.raises(InvalidInputError, match="not a tree of this grammar"):
        lc.derivation(Tree("S", [Tree("NP", ["fork"]), Tree("VP", ["eats"])]))
    with pytest.raises(InvalidInputError, match="start symbol"):
        lc.derivation(Tree("NP", ["she"]))


def test_posterior_samples_follow_the_posterior():
    m = random_model(4)
    words = SENTENCES[5]
    ders = lc_derivations(m, words)
    lps = np.array([d[0] for d in ders])
    post = np.exp(lps - logsumexp(lps))
    draws = m.sample_parses(words, 4000, random_state=0, cnf=True)
    freq = Counter(str(t) for t in draws)
    tv = 0.5 * sum(abs(freq[str(d[2])] / 4000 - w) for w, d in zip(post, ders, strict=True))
    assert len(ders) >= 5 and tv < 0.03
    assert sum(freq.values()) == 4000 and set(freq) <= {str(d[2]) for d in ders}


def test_forward_samples_have_their_probability():
    m = random_model(5)
    lc = m.left_corner()
    n = 6000
    samples = m.sample(n, random_state=0, cnf=True)
    freq = Counter(str(t) for _, t in samples)
    trees = {str(t): t for _, t in samples}
    checked = 0
    for key, c in freq.most_common(12):
        p = float(np.exp(np.log(m.theta_[lc.derivation(trees[key])]).sum()))
        assert abs(c / n - p) < 4.5 * np.sqrt(p * (1 - p) / n) + 1e-3
        checked += 1
    assert checked == 12
    # every sampled sentence is a sentence of the model, its tree one of its parses
    for words, tree in samples[:30]:
        if len(words) <= 8:
            assert tree in [d[2] for d in lc_derivations(m, words)]


def test_probabilities_sum_to_one_over_a_finite_language():
    rules = {"S": [("A", "B"), ("C", "B")], "A": [("a",), ("D", "E")], "C": [("a",)],
             "B": [("b",), ("E", "E")], "D": [("d",)], "E": [("e",), ("d",)]}
    m = random_model(6, rules=rules, start="S")
    alphabet = ["a", "b", "d", "e"]
    total = 0.0
    for n in range(1, 5):
        sents = [list(s) for s in itertools.product(alphabet, repeat=n)]
        total += np.exp(m.score_samples(sents)).sum()
    assert total == pytest.approx(1.0, abs=1e-12)


# -- the same trees as the PCFG ----------------------------------------------------------------
def test_same_trees_as_the_pcfg_with_the_same_rules():
    m = random_model(7)
    g = m.grammar()
    pcfg = hs.PCFG(rules=RULES, start=START_SYMBOLS)
    for words in SENTENCES:
        plcg_trees = [d[2] for d in lc_derivations(m, words)]
        pcfg_trees = [t for r in g.start for t in cnf_trees(g, words, r, 0, len(words))]
        assert len(plcg_trees) == len(set(map(str, plcg_trees)))   # one derivation per tree
        assert sorted(map(str, plcg_trees)) == sorted(map(str, pcfg_trees))
        # and the two models' k-best lists (all parses) hold the same trees
        a = {str(t) for _, t in m.parse_k_best(words, 500, cnf=True)}
        b = {str(t) for _, t in pcfg.parse_k_best(words, 500, cnf=True)}
        assert a == b == set(map(str, pcfg_trees))


# -- against the program on the explanation-graph engine -----------------------------------------
def _goals(prog, sentences):
    return [prog.predicates["sentence"](tuple(w)) for w in sentences]


def test_compiled_graph_equals_the_tabled_program():
    m = random_model(8)
    lc = m.left_corner()
    prog = m.to_program()
    tabled = explain(prog, _goals(prog, SENTENCES))
    g = m.grammar()
    words = np.array([g.word_index[w] for s in SENTENCES for w in s])
    offsets = np.cumsum([0] + [len(s) for s in SENTENCES])
    node_ptr, item_ptr, items, roots = build_graph(words, offsets, *lc.kernel_args())
    # the same graph: goals, alternatives and items (the tabled search shares nothing
    # between these distinct sentences), and the same numbers on it
    assert (len(node_ptr) - 1, len(item_ptr) - 1, len(items)) == \
        (tabled.n_nodes, tabled.n_alts, len(tabled.items))
    pm = ProgramModel(prog, init="declared")
    np.testing.assert_allclose(pm.score_samples(_goals(prog, SENTENCES)),
                               m.score_samples(SENTENCES), atol=1e-12, rtol=0)
    counts = pm.expected_counts(_goals(prog, SENTENCES))
    mine = m.expected_counts(SENTENCES)
    for name, c in counts.items():
        for q, v in enumerate(lc.outcomes[name]):
            assert c[q] == pytest.approx(mine[name, v], abs=1e-10)
    _, logp = m.parse(SENTENCES, return_logprob=True)
    for goal, lp, words in zip(_goals(prog, SENTENCES), logp, SENTENCES, strict=True):
        ex = pm.viterbi(goal)
        assert ex.logprob == pytest.approx(lp, abs=1e-12)
        assert lc.tree([lc.index[x.switch, x.outcome] for x in ex.msws]) == \
            m.parse([words], cnf=True)[0]


def test_every_mode_follows_the_program_engine():
    m = random_model(9)
    for mode in ("em", "map", "vb", "vt", "kvt"):
        mine = hs.PLCG(rules=RULES, start=START_SYMBOLS, learn=mode, init="current", n_iter=6,
                       tol=-np.inf, k_best=3, prior=None if mode == "em" else 1.5)
        mine.theta_ = m.theta_
        mine.fit(SENTENCES)
        theirs = ProgramModel(m.to_program(prior=1.5), learn=mode, init="declared", n_iter=6,
                              tol=-np.inf, k_best=3)
        theirs.fit(_goals(theirs.program, SENTENCES))
        np.testing.assert_allclose(mine.monitor_.history, theirs.monitor_.history, atol=1e-9,
                                   rtol=0)
        for name, p in theirs.probs_.items():
            np.testing.assert_allclose(mine.probs_[name], p, atol=1e-10, rtol=0)


def test_program_sampler_draws_what_the_model_draws():
    m = random_model(10)
    pm = ProgramModel(m.to_program(), init="declared")
    goals = pm.sample(40, random_state=3)
    mine = m.sample(40, random_state=3)
    assert [list(goal[1]) for goal in goals] == [w for w, _ in mine]
    with pytest.raises(InvalidInputError, match="max_words"):
        pm.sample(200, random_state=0, args=(2,))


# -- the chart's values against the passes on its graph ------------------------------------------
def _graph_of(lc, words, offsets, prune=True):
    if prune:
        arrays = build_graph(words, offsets, *lc.kernel_args())
    else:
        arrays = chart(GRAPH, np.empty(0), words, offsets, *lc.kernel_args())[:4]
    node_ptr, item_ptr, items, roots = arrays
    return ExplanationGraph(node_ptr, item_ptr, items, np.zeros(len(item_ptr) - 1, np.int32),
                            [None] * (len(node_ptr) - 1), roots, lc.n_params)


def check_chart_against_graph(lc, words, offsets, logtheta):
    """The value modes of the chart against the inside and Viterbi passes on the graph the
    tabled program search finds (build_graph, tested against it above), and the unpruned
    graph against the pruned one."""
    g = _graph_of(lc, words, offsets)
    ins, _ = g.inside(logtheta)
    vit, best = g.viterbi(logtheta)
    *_, score, _, _ = chart(INSIDE, logtheta, words, offsets, *lc.kernel_args())
    # the same terms, each cell's summed in another order: equal to rounding
    np.testing.assert_allclose(score, ins[g.roots], rtol=1e-13, atol=0)
    assert np.array_equal(np.isinf(score), np.isinf(ins[g.roots]))
    # the same maxima, and the same derivation (the first in the graph's order on ties)
    *_, vscore, ptr, deriv = chart(VITERBI, logtheta, words, offsets, *lc.kernel_args())
    np.testing.assert_array_equal(vscore, vit[g.roots])
    for s, root in enumerate(g.roots):
        mine = deriv[ptr[s]:ptr[s + 1]].tolist()
        if vscore[s] == -np.inf:
            assert mine == []
            continue
        assert mine == PLCG_params(g, g.walk(int(root), 0, best[:, None], None))
    # every goal of the chart, or those the sentences use: the same numbers at the roots,
    # the same expected counts
    full = _graph_of(lc, words, offsets, prune=False)
    assert full.n_nodes >= g.n_nodes
    a, b = full.expected(logtheta), g.expected(logtheta)
    np.testing.assert_array_equal(a[0][full.roots], b[0][g.roots])
    np.testing.assert_array_equal(a[2], b[2])
    return g


PLCG_params = hs.PLCG._params


def _encoded(m, sentences):
    g = m.grammar()
    words = np.array([g.word_index[w] for s in sentences for w in s])
    return words, np.cumsum([0] + [len(s) for s in sentences])


@pytest.mark.parametrize("theta", ["random", "zeros", "uniform"])
def test_chart_values_equal_the_passes_on_the_graph(theta):
    # random probabilities; some outcomes of probability zero (the chart then leaves out
    # the cells of probability zero); uniform ones (ties between parses everywhere)
    m = random_model(15)
    lc = m.left_corner()
    if theta == "zeros":   # a completed NP never projects under goal NP, nor under S
        m.set_probs(("attach", "NP"), [1.0, 0.0])
        m.set_probs(("lc", "S", "NP"), [1.0, 0.0])
    elif theta == "uniform":
        m.theta_ = lc.uniform()
    sentences = [*SENTENCES, ["with", "she"], "fish eats fish with the fork".split()]
    with np.errstate(divide="ignore"):
        logtheta = np.log(m.theta_)
    g = check_chart_against_graph(lc, *_encoded(m, sentences), logtheta)
    ins = g.inside(logtheta)[0][g.roots]
    bad = len(SENTENCES)
    assert ins[bad] == -np.inf and np.isfinite(ins[:bad]).all()
    if theta == "uniform":   # the best parse ties with others: the graph's first is taken
        ties = [sum(d[0] == max(e[0] for e in ders) for d in ders)
                for ders in (lc_derivations(m, w) for w in SENTENCES)]
        assert max(ties) > 1
    # and the model's own methods
    trees, logp = m.parse(sentences, cnf=True, return_logprob=True, errors="none")
    assert trees[bad] is None and logp[bad] == -np.inf
    np.testing.assert_allclose(m.score_samples(sentences), ins, rtol=1e-13, atol=0)


# -- learning -------------------------------------------------------------------------------------
def test_learning_modes_on_generated_sentences():
    truth = random_model(11)
    data = [w for w, _ in truth.sample(150, random_state=0, max_words=12)]
    scores = {}
    for mode in ("em", "map", "vb", "vt", "kvt"):
        m = hs.PLCG(rules=RULES, start=START_SYMBOLS, learn=mode, n_init=2, n_iter=300,
                    prior=None if mode == "em" else 1.5, random_state=0).fit(data)
        h = np.asarray(m.monitor_.history)
        assert np.all(np.diff(h) >= -1e-8 * np.abs(h[1:]))     # every objective rises
        assert m.monitor_.converged
        scores[mode] = m.score(data)
    # maximum likelihood beats the true parameters on its own data, and every mode is close
    assert scores["em"] >= truth.score(data) - 1e-6
    assert all(scores[m] > scores["em"] - 0.05 * abs(scores["em"]) for m in scores)


def test_supervised_counts_are_the_derivations_relative_frequencies():
    trees = [t for words in SENTENCES[:4] for t in
             [sorted(lc_derivations(random_model(12), words), key=lambda d: -d[0])[0][2]]]
    m = hs.PLCG(rules=RULES, start=START_SYMBOLS)
    lc = m.left_corner()
    counts: Counter = Counter()
    for t, words in zip(trees, SENTENCES[:4], strict=True):
        ops = [d[1] for d in lc_derivations(random_model(12), words) if d[2] == t]
        assert len(ops) == 1
        counts.update(ops[0])
    np.testing.assert_array_equal(m.tree_counts(trees),
                                  [counts[lc.param_switch[p], lc.param_outcome[p]]
                                   for p in range(lc.n_params)])
    theta = m.counts_to_theta(m.tree_counts(trees))
    for name, lo, k in lc.spans():
        c = np.array([counts[name, v] for v in lc.outcomes[name]])
        np.testing.assert_allclose(theta[lo:lo + k], c / c.sum() if c.sum() else 1 / k)


def test_from_treebank_and_unknown_words():
    raw = ["( (S (NP-SBJ (DT The) (NN dog)) (VP (VBD saw) (NP (DT a) (NN cat))) (. .)) )",
           "( (S (NP-SBJ (PRP It)) (VP (VBD ran) (-NONE- *-1)) (. .)) )",
           "( (S (NP-SBJ (DT The) (NN cat)) (VP (VBD ran)) (. .)) )"]
    trees = [Tree.fromstring(t) for t in raw]
    m = hs.PLCG.from_treebank(trees, min_count=2)
    assert m.unknown_word == "<unk>"
    gold = [normalise(t) for t in trees]
    parses = m.parse([t.leaves() for t in gold])
    assert [p.leaves() for p in parses] == [t.leaves() for t in gold]   # own words back
    assert m.parse([["The", "zebra", "ran", "."]])[0].leaves() == ["The", "zebra", "ran", "."]
    plain = hs.PLCG.from_treebank(trees)
    assert plain.parse([t.leaves() for t in gold]) == gold   # each tree is its only parse
    with pytest.raises(InvalidInputError, match="zebra"):
        plain.score([["The", "zebra", "ran", "."]])


# -- the estimator contract ------------------------------------------------------------------------
def test_not_fitted_then_usable_once_set_by_hand():
    m = hs.PLCG(rules=RULES, start=START_SYMBOLS)
    for call in (lambda: m.score(SENTENCES), lambda: m.parse(SENTENCES),
                 lambda: m.sample(1), lambda: m.probs_, lambda: m.save("/nonexistent/x")):
        with pytest.raises(hs.NotFittedError):
            call()
    m.set_probs(("attach", "S"), [0.9, 0.1])
    assert np.isfinite(m.score(SENTENCES))
    assert m.probs_["attach", "S"].tolist() == [0.9, 0.1]
    assert m.probs_["first", "PP"].tolist() == [1.0]


def test_bad_input_raises_named_errors():
    m = random_model(13)
    with pytest.raises(InvalidInputError, match="switch"):
        m.set_probs(("lc", "S", "VP"), [1.0])
    with pytest.raises(InvalidInputError, match=r"probs of \('attach', 'S'\)"):
        m.set_probs(("attach", "S"), [0.5, 0.6])
    with pytest.raises(InvalidInputError, match="sentence 0 is empty"):
        m.score([[]])
    with pytest.raises(InvalidInputError, match="string"):
        m.fit("she eats")
    with pytest.raises(InvalidInputError, match="learn"):
        hs.PLCG(rules=RULES, start=START_SYMBOLS, learn="nuts").fit(SENTENCES)
    wrong = hs.PLCG(rules=RULES, start=START_SYMBOLS)
    wrong.theta_ = np.full(3, 1 / 3)
    with pytest.raises(InvalidInputError, match="theta_"):
        wrong.score(SENTENCES)
    wrong.theta_ = np.ones(m.left_corner().n_params)
    with pytest.raises(InvalidInputError, match="theta_"):
        wrong.score(SENTENCES)
    # a sentence no derivation reaches: an error at fit, None / -inf when parsing
    bad = ["with", "she"]
    with pytest.raises(ZeroProbabilityError, match="sentence 1"):
        hs.PLCG(rules=RULES, start=START_SYMBOLS).fit([SENTENCES[0], bad])
    trees, lp = m.parse([bad, SENTENCES[2]], errors="none", return_logprob=True)
    assert trees[0] is None and lp[0] == -np.inf and trees[1] is not None
    assert m.score_samples([bad])[0] == -np.inf
    with pytest.raises(ZeroProbabilityError):
        m.parse([bad])
    # probability zero under the current probabilities (EM can leave zeros)
    zero = random_model(13)
    zero.set_probs(("first", "VP"), [1.0, 0.0])
    with pytest.raises(ZeroProbabilityError):
        zero.expected_counts([["fish", "fish"]])


def test_a_nonterminal_that_derives_no_word():
    rules = {"S": [("A", "B"), ("a",)], "A": [("a",)], "B": [("B", "B")]}
    m = hs.PLCG(rules=rules, start="S")
    assert ("first", "B") not in m.left_corner().outcomes   # no word begins a B
    m.theta_ = m.left_corner().uniform()
    p = hs.PCFG(rules=rules, start="S")
    np.testing.assert_allclose(m.score_samples([["a"], ["a", "a"]]),
                               p.score_samples([["a"], ["a", "a"]]))
    assert m.score_samples([["a", "a"]])[0] == -np.inf
    with pytest.raises(InvalidInputError, match="'B', which derives no word"):
        m.sample(20, random_state=0)


def test_clone_save_and_load(tmp_path):
    m = random_model(14, learn="vb", prior=2.0, n_iter=5, random_state=0).fit(SENTENCES)
    c = clone(m)
    assert c.get_params() == m.get_params() and "theta_" not in c.__dict__
    m.save(tmp_path / "plcg")
    back = hs.load(tmp_path / "plcg")
    assert isinstance(back, hs.PLCG)
    np.testing.assert_array_equal(back.score_samples(SENTENCES), m.score_samples(SENTENCES))
    assert back.monitor_.history == m.monitor_.history
    assert set(m.posterior_) and all(np.all(q > 0) for q in m.posterior_.values())
    # the same random_state gives the same draw
    assert m.sample(5, random_state=1) == m.sample(5, random_state=1)
    assert m.sample_parses(SENTENCES[0], 5, random_state=np.random.default_rng(2)) == \
        m.sample_parses(SENTENCES[0], 5, random_state=np.random.default_rng(2))


# -- the Penn Treebank sample ----------------------------------------------------------------------
def _treebank(max_length: int):
    files = sorted(DATA.glob("combined/*.mrg"))
    gold = []
    for t in read_trees(files):
        n = normalise(t, terminals="tags")
        if n is not None and len(n.leaves()) <= max_length:
            gold.append(to_cnf(n, 0))
    return gold


@pytest.mark.skipif(not DATA.is_dir(), reason="needs ../shared/data/ptb-sample-treebank "
                    "(the Penn Treebank sample; not shipped)")
def test_treebank_plcg_has_the_pcfg_parses():
    gold = _treebank(10)
    g, _ = Grammar.from_trees(gold)
    lc = LeftCorner(g)
    for t in gold:  # every gold tree has its left-corner derivation, and back
        assert lc.tree(lc.derivation(t)) == t
    sents = [t.leaves() for t in gold]
    words = np.array([g.word_index[w] for s in sents for w in s])
    offsets = np.cumsum([0] + [len(s) for s in sents])
    node_ptr, item_ptr, items, roots = build_graph(words, offsets, *lc.kernel_args())
    graph = ExplanationGraph(node_ptr, item_ptr, items, np.zeros(len(item_ptr) - 1, np.int32),
                             [None] * (len(node_ptr) - 1), roots, lc.n_params)
    # every derivation weighing 1, the inside pass counts them
    n_plcg = graph.inside(np.zeros(lc.n_params))[0][roots]
    pcfg = hs.PCFG(rules=g.rule_list(), start=list(g.start))
    n_pcfg, _ = pcfg._inside_outside(g, np.ones(g.n_params), *pcfg._encode(g, sents)[:2], False)
    np.testing.assert_allclose(n_plcg, n_pcfg, rtol=0, atol=1e-9)
    assert np.exp(n_pcfg).mean() > 20
    # the chart's values against the passes on the graph, with the supervised estimate
    # (many outcomes of probability zero) and a smoothed one (none)
    m = hs.PLCG(rules=g.rule_list(), start=list(g.start))
    counts = m.tree_counts(gold)
    few = slice(0, offsets[80])
    for theta in (m.counts_to_theta(counts), m.counts_to_theta(counts + 0.5)):
        with np.errstate(divide="ignore"):
            check_chart_against_graph(lc, words[few], offsets[:81], np.log(theta))


# -- the documentation ----------------------------------------------------------------------------
def test_docs_example_prints_what_the_page_says():
    import contextlib
    import io
    import re

    doc = Path(__file__).resolve().parents[1] / "docs" / "plcg.md"
    text = doc.read_text()
    code = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    shown = re.findall(r"prints\n\n```\n(.*?)```", text, re.S)[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(doc), "exec"), {})
    number = r"-?\d+\.\d+(?:e-?\d+)?"
    got, want = out.getvalue().split("\n"), shown.split("\n")
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert re.sub(number, "#", g) == re.sub(number, "#", w), (g, w)
        np.testing.assert_allclose([float(x) for x in re.findall(number, g)],
                                   [float(x) for x in re.findall(number, w)], rtol=1e-9)

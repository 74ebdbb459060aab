"""NaiveBayesHidden (NBH, "Viterbi training in PRISM" section 5): brute-force enumeration
over the hidden cluster, exact marginalisation of missing values, closed-form naive Bayes,
learning modes, scikit-learn conventions and persistence."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import accuracy_score

import hiddenstate as hs
from hiddenstate.errors import InvalidInputError, NotFittedError, ZeroProbabilityError
from hiddenstate.learn import ConvergenceMonitor
from hiddenstate.learn import fit as fit_mode
from hiddenstate.models.nbh import UnknownCategoryWarning
from hiddenstate.models.nbh_problem import NBHProblem

TIGHT = 1e-10


def _random_model(rng, n_values=(2, 3, 4), classes=("no", "yes"), K=3):
    """A hand-set NBH with random strictly positive parameters."""
    m = hs.NaiveBayesHidden(n_clusters=K)
    C = len(classes)
    m.classes_ = np.asarray(classes)
    m.categories_ = [np.asarray([f"v{j}{i}" for i in range(v)], dtype=object)
                     for j, v in enumerate(n_values)]
    m.class_prior_ = rng.dirichlet(np.ones(C))
    m.cluster_prior_ = rng.dirichlet(np.ones(K), size=C)
    m.feature_prob_ = [rng.dirichlet(np.ones(v), size=(C, K)) for v in n_values]
    return m


def _table(rng, m, n, p_missing=0.25):
    X = np.empty((n, len(m.categories_)), dtype=object)
    for j, cats in enumerate(m.categories_):
        X[:, j] = rng.choice(cats, size=n)
    X[rng.random(X.shape) < p_missing] = "?"
    return X


def _brute_joint(m, x, c):
    """log p(c, a) by explicit enumeration of the cluster and a product over attributes."""
    total = 0.0
    for h in range(m.n_clusters):
        p = m.class_prior_[c] * m.cluster_prior_[c, h]
        for j, v in enumerate(x):
            if v == "?":
                continue  # summing a missing attribute over its values gives 1
            p *= m.feature_prob_[j][c, h, list(m.categories_[j]).index(v)]
        total += p
    return np.log(total)


def _brute_cluster_joint(m, x, c, h):
    p = m.class_prior_[c] * m.cluster_prior_[c, h]
    for j, v in enumerate(x):
        if v != "?":
            p *= m.feature_prob_[j][c, h, list(m.categories_[j]).index(v)]
    return p


def test_posteriors_and_evidence_equal_enumeration():
    rng = np.random.default_rng(0)
    m = _random_model(rng)
    X = _table(rng, m, 12)
    C = len(m.classes_)
    joint = np.array([[_brute_joint(m, x, c) for c in range(C)] for x in X])
    evidence = np.log(np.exp(joint).sum(axis=1))
    np.testing.assert_allclose(m.score_samples(X), evidence, rtol=0, atol=TIGHT)
    y = m.classes_[rng.integers(0, C, len(X))]
    at = joint[np.arange(len(X)), np.searchsorted(m.classes_, y)]
    np.testing.assert_allclose(m.score_samples(X, y), at, rtol=0, atol=TIGHT)
    np.testing.assert_allclose(m.score(X), evidence.sum(), rtol=0, atol=TIGHT)
    post = np.exp(joint - evidence[:, None])
    np.testing.assert_allclose(m.predict_proba(X), post, rtol=0, atol=TIGHT)
    assert np.array_equal(m.predict(X), m.classes_[post.argmax(axis=1)])
    np.testing.assert_allclose(m.score(X, y), at.sum(), rtol=0, atol=TIGHT)  # log p(c, a)
    assert accuracy_score(y, m.predict(X)) == np.mean(m.predict(X) == y)
    c_idx = np.searchsorted(m.classes_, y)
    clusters = np.array([[_brute_cluster_joint(m, x, c, h) for h in range(m.n_clusters)]
                         for x, c in zip(X, c_idx, strict=True)])
    np.testing.assert_allclose(m.predict_cluster_proba(X, y),
                               clusters / clusters.sum(axis=1, keepdims=True), atol=TIGHT)


def _problem_from(m, X, y, prior=1.0):
    codes = np.array([[-1 if v == "?" else list(m.categories_[j]).index(v)
                       for j, v in enumerate(x)] for x in X])
    return NBHProblem(codes, np.searchsorted(m.classes_, y), len(m.classes_), m.n_clusters,
                      [len(c) for c in m.categories_], prior)


def _params(m):
    out = {"class": m.class_prior_, "cluster": m.cluster_prior_}
    out.update({f"attr:{j}": p for j, p in enumerate(m.feature_prob_)})
    return out


def _brute_counts(m, X, y, weights):
    """Counts per block from cluster weights of each sample, by loops."""
    C, K = len(m.classes_), m.n_clusters
    counts = {"class": np.zeros(C), "cluster": np.zeros((C, K))}
    counts.update({f"attr:{j}": np.zeros((C, K, len(c))) for j, c in enumerate(m.categories_)})
    for i, (x, label) in enumerate(zip(X, y, strict=True)):
        c = list(m.classes_).index(label)
        counts["class"][c] += 1
        for h in range(K):
            counts["cluster"][c, h] += weights[i][h]
            for j, v in enumerate(x):
                if v != "?":
                    counts[f"attr:{j}"][c, h, list(m.categories_[j]).index(v)] += weights[i][h]
    return counts


def test_expected_and_path_counts_equal_enumeration():
    rng = np.random.default_rng(1)
    m = _random_model(rng, K=4)
    X = _table(rng, m, 10)
    y = m.classes_[rng.integers(0, 2, len(X))]
    problem = _problem_from(m, X, y)
    c_idx = np.searchsorted(m.classes_, y)
    p = np.array([[_brute_cluster_joint(m, x, c, h) for h in range(m.n_clusters)]
                  for x, c in zip(X, c_idx, strict=True)])
    ll, stats = problem.expected_counts(_params(m))
    assert abs(ll - np.log(p.sum(axis=1)).sum()) < TIGHT
    want = _brute_counts(m, X, y, p / p.sum(axis=1, keepdims=True))
    for name in want:
        np.testing.assert_allclose(stats[name], want[name], rtol=0, atol=TIGHT)
    for k in (1, 2, 4):
        value, stats, paths = problem.path_counts(_params(m), k)
        best = [sorted(range(m.n_clusters), key=lambda h, r=r: -r[h])[:k] for r in p]
        assert np.array_equal(paths, np.array(best))
        assert abs(value - sum(np.log(r[b].sum()) for r, b in zip(p, best, strict=True))) < TIGHT
        w = np.zeros_like(p)
        for i, b in enumerate(best):
            w[i, b] = p[i, b] / p[i, b].sum()
        want = _brute_counts(m, X, y, w)
        for name in want:
            np.testing.assert_allclose(stats[name], want[name], rtol=0, atol=TIGHT)


def test_missing_attribute_equals_model_without_it():
    rng = np.random.default_rng(2)
    m = _random_model(rng, n_values=(3, 2, 4, 3))
    X = _table(rng, m, 8, p_missing=0.0)
    X[:, 2] = "?"
    X[0, 2] = np.nan
    X[1, 2] = None
    reduced = _random_model(rng, n_values=(3, 2, 3))
    reduced.class_prior_, reduced.cluster_prior_ = m.class_prior_, m.cluster_prior_
    reduced.feature_prob_ = [m.feature_prob_[j] for j in (0, 1, 3)]
    reduced.categories_ = [m.categories_[j] for j in (0, 1, 3)]
    X_red = X[:, [0, 1, 3]]
    np.testing.assert_allclose(m.score_samples(X), reduced.score_samples(X_red), atol=TIGHT)
    np.testing.assert_allclose(m.predict_proba(X), reduced.predict_proba(X_red), atol=TIGHT)
    # an unseen value is treated as missing, with a warning
    X_new = X.copy()
    X_new[:, 2] = "never-seen"
    with pytest.warns(UnknownCategoryWarning, match="treated as missing"):
        np.testing.assert_allclose(m.score_samples(X_new), m.score_samples(X), atol=TIGHT)


def _synthetic(seed=3, n=300):
    """Two classes, each a mixture of two naive Bayes components, with missing values."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    h = rng.integers(0, 2, n)
    X = np.empty((n, 5), dtype=object)
    for j in range(5):
        p = np.where((y + h + j) % 2 == 0, 0.85, 0.15)
        X[:, j] = np.where(rng.random(n) < p, "a", np.where(rng.random(n) < 0.5, "b", "c"))
    X[rng.random(X.shape) < 0.1] = None
    return X, np.where(y == 1, "pos", "neg")


@pytest.mark.parametrize("mode,prior", [("em", None), ("map", 2.0), ("map", 1.1),
                                        ("vb", 0.1), ("vb", 1.0), ("vt", 2.0), ("kvt", 1.1)])
def test_objective_never_decreases(mode, prior):
    X, y = _synthetic()
    m = hs.NaiveBayesHidden(n_clusters=3, learn=mode, prior=prior, n_init=1, n_iter=60,
                            random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the monitor warns if the objective goes down
        m.fit(X, y)
    h = np.asarray(m.monitor_.history)
    assert len(h) >= 2
    assert np.all(np.diff(h) >= -1e-9 * np.abs(h[1:]))


def test_vt_stops_when_viterbi_clusters_stop_changing():
    """Hard EM written out by hand (argmax cluster, Laplace-smoothed counts) from the same
    start: the same parameters after the same number of iterations."""
    X, y = _synthetic(seed=4, n=200)
    m = hs.NaiveBayesHidden(n_clusters=3).fit(X, y)  # for the encoding
    problem = _problem_from(m, np.where(X == None, "?", X), y, prior=2.0)  # noqa: E711
    rng = np.random.default_rng(5)
    start = _random_model(rng, n_values=[len(c) for c in m.categories_],
                          classes=tuple(m.classes_), K=3)
    start.categories_ = m.categories_
    result = fit_mode(problem, "vt", _params(start), ConvergenceMonitor(-np.inf, 100), "cha")
    theta, previous, iterations = _params(start), None, 0
    Xq = np.where(X == None, "?", X)  # noqa: E711
    while True:
        iterations += 1
        z = np.array([np.argmax([_brute_cluster_joint(start, x, c, h) for h in range(3)])
                      for x, c in zip(Xq, np.searchsorted(m.classes_, y), strict=True)])
        if previous is not None and np.array_equal(z, previous):
            break
        counts = _brute_counts(start, Xq, y, np.eye(3)[z])
        theta = {k: (v + 1.0) / (v + 1.0).sum(axis=-1, keepdims=True) for k, v in counts.items()}
        start.class_prior_, start.cluster_prior_ = theta["class"], theta["cluster"]
        start.feature_prob_ = [theta[f"attr:{j}"] for j in range(5)]
        previous = z
    assert result.monitor.converged
    assert len(result.monitor.history) == iterations
    for name in theta:
        np.testing.assert_allclose(result.params[name], theta[name], rtol=0, atol=TIGHT)


def test_one_cluster_map_is_closed_form_laplace_naive_bayes():
    X, y = _synthetic(seed=6, n=120)
    m = hs.NaiveBayesHidden(n_clusters=1, learn="map", prior=2.0, n_init=1).fit(X, y)
    classes = np.unique(y)
    n_c = np.array([np.sum(y == c) for c in classes])
    np.testing.assert_allclose(m.class_prior_, (n_c + 1) / (n_c.sum() + 2), atol=TIGHT)
    assert np.all(m.cluster_prior_ == 1.0)
    for j, cats in enumerate(m.categories_):
        for ci, c in enumerate(classes):
            col = X[y == c, j]
            counts = np.array([np.sum(col == v) for v in cats], dtype=float)
            np.testing.assert_allclose(m.feature_prob_[j][ci, 0],
                                       (counts + 1) / (counts.sum() + len(cats)), atol=TIGHT)
    assert m.monitor_.converged and len(m.monitor_.history) <= 3


def test_clone_get_params_and_save_load_round_trip(tmp_path):
    X, y = _synthetic(seed=7, n=150)
    X[:, 4] = np.where(X[:, 4] == "a", 1, np.where(X[:, 4] == "b", 2.5, X[:, 4]))  # numbers
    m = hs.NaiveBayesHidden(n_clusters=2, learn="vb", prior=0.5, random_state=3)
    c = clone(m)
    assert c.get_params() == m.get_params()
    with pytest.raises(NotFittedError, match="call fit"):
        c.predict(X)
    m.fit(X, y)
    again = clone(m).set_params(random_state=3).fit(X, y)
    np.testing.assert_array_equal(again.predict_proba(X), m.predict_proba(X))
    m.save(tmp_path / "nbh")
    loaded = hs.load(tmp_path / "nbh")
    assert isinstance(loaded, hs.NaiveBayesHidden)
    assert loaded.get_params() == m.get_params()
    np.testing.assert_array_equal(loaded.predict_proba(X), m.predict_proba(X))
    # mixed types: ordered by type name, then value; the types survive the JSON round trip
    assert loaded.categories_[4].tolist() == m.categories_[4].tolist() == [2.5, 1, "c"]
    assert list(loaded.classes_) == list(m.classes_)
    assert loaded.monitor_.history == m.monitor_.history


def test_em_zero_probability_has_no_class_posterior():
    """The estimator contract's zero-probability rule (was: the class prior as the
    posterior, with a warning): -inf to score, an error naming the sample to predict."""
    X = np.array([["a", "x"], ["a", "y"], ["b", "x"], ["b", "y"]], dtype=object)
    y = np.array([0, 0, 1, 1])
    m = hs.NaiveBayesHidden(n_clusters=1, learn="em", n_init=1).fit(X, y)
    # "a" only with class 0, "b" only with class 1: ("a", "x") -> class 0 with certainty
    np.testing.assert_allclose(m.predict_proba([["a", "x"]]), [[1.0, 0.0]], atol=TIGHT)
    m.feature_prob_ = [np.array([[[1.0, 0.0]], [[1.0, 0.0]]]), m.feature_prob_[1]]
    for method in (m.predict_proba, m.predict_log_proba, m.predict):
        with pytest.raises(ZeroProbabilityError, match=r"X: sample 1 has probability zero "
                                                       r"under every class .*no class poster"):
            method([["a", "x"], ["b", "x"]])
    # p(a, x) = sum_c 0.5 * 1 * 0.5 (both classes now emit "a" only); p(b, x) = 0
    np.testing.assert_array_equal(m.score_samples([["a", "x"], ["b", "x"]]),
                                  [np.log(2 * 0.5 * 1.0 * 0.5), -np.inf])
    problem = _problem_from(m, X, y)  # the training data under the zeroed parameters
    with pytest.raises(ZeroProbabilityError, match="training samples 2 and 3 have probability "
                                                   "zero"):
        problem.expected_counts(_params(m))


@pytest.mark.parametrize("kwargs,match", [
    ({"learn": "nuts"}, "learn: 'nuts' is not one of"),
    ({"learn": "em", "prior": 2.0}, "prior: not used by learn='em'"),
    ({"learn": "map", "prior": 0.5}, "use learn='vb' for sparse priors"),
    ({"learn": "vb", "prior": -1.0}, "prior: expected a Dirichlet concentration > 0"),
    ({"n_clusters": 0}, "n_clusters: expected an integer >= 1"),
    ({"n_init": 1.5}, "n_init: expected an integer >= 1"),
    ({"tol": -1}, "tol: expected a finite number >= 0"),
    ({"missing_values": "?"}, "missing_values: expected a list of strings"),
])
def test_bad_hyper_parameters_are_named(kwargs, match):
    X, y = _synthetic(n=20)
    with pytest.raises(InvalidInputError, match=match):
        hs.NaiveBayesHidden(**kwargs).fit(X, y)


def test_bad_data_and_parameters_are_named():
    X, y = _synthetic(n=30)
    with pytest.raises(InvalidInputError, match="X: expected a 2-D table"):
        hs.NaiveBayesHidden().fit(X[:, 0], y)
    with pytest.raises(InvalidInputError, match="y: expected 30 class labels"):
        hs.NaiveBayesHidden().fit(X, y[:-1])
    with pytest.raises(InvalidInputError, match="y: class labels must not be missing"):
        hs.NaiveBayesHidden().fit(X, np.where(np.arange(30) == 3, None, y))
    with pytest.raises(InvalidInputError, match="not hashable"):
        hs.NaiveBayesHidden().fit([[{"a": 1}], [{"b": 2}]], [0, 1])
    m = hs.NaiveBayesHidden(n_iter=5).fit(X, y)
    with pytest.raises(InvalidInputError, match="X: has 4 attributes, but the model was fitted "
                                                "on 5"):
        m.predict(X[:, :4])
    bad = [p.copy() for p in m.feature_prob_]
    bad[1][0, 0] = bad[1][0, 0] * 2
    m.feature_prob_ = bad
    with pytest.raises(InvalidInputError, match=r"feature_prob_\[1\]: row \(0, 0\) sums to"):
        m.predict(X)
    with pytest.raises(InvalidInputError, match="label 'maybe' is not one of the classes"):
        hs.NaiveBayesHidden(n_iter=5).fit(X, y).score_samples(X[:2], ["pos", "maybe"])


def test_enumeration_over_all_cluster_assignments_gives_the_likelihood():
    """The log-likelihood the learner records is the log of the sum over every joint
    cluster assignment of the training set (3 samples, 3 clusters: 27 assignments)."""
    rng = np.random.default_rng(8)
    m = _random_model(rng, n_values=(2, 3), K=3)
    X = _table(rng, m, 3, p_missing=0.2)
    y = m.classes_[[0, 1, 1]]
    c = np.searchsorted(m.classes_, y)
    total = sum(np.prod([_brute_cluster_joint(m, X[i], c[i], z[i]) for i in range(3)])
                for z in itertools.product(range(3), repeat=3))
    ll, _ = _problem_from(m, X, y).expected_counts(_params(m))
    assert abs(ll - np.log(total)) < TIGHT


def test_kvt_with_every_cluster_follows_map():
    """k-best VT with k = n_clusters weights every cluster by its posterior: the MAP E-step,
    so the same trajectory of objectives and parameters from the same start."""
    X, y = _synthetic(seed=9, n=150)
    runs = {}
    for mode in ("map", "kvt"):
        m = hs.NaiveBayesHidden(n_clusters=3, learn=mode, prior=1.5, k_best=3, n_init=1,
                                n_iter=8, tol=0.0, random_state=4).fit(X, y)
        runs[mode] = m
    h_map, h_kvt = runs["map"].monitor_.history, runs["kvt"].monitor_.history
    n = min(len(h_map), len(h_kvt))
    assert n >= 5
    np.testing.assert_allclose(h_kvt[:n], h_map[:n], rtol=1e-12)
    if len(h_map) == len(h_kvt):
        for a, b in zip(runs["map"].feature_prob_, runs["kvt"].feature_prob_, strict=True):
            np.testing.assert_allclose(a, b, atol=TIGHT)


def test_vt_ignores_tol_and_stops_when_the_clusters_repeat():
    """Viterbi training stops when the Viterbi clusters repeat, whatever ``tol`` says (was:
    ``tol=10`` stopped it after 5 iterations while the objective still gained 3.6, and
    ``tol=-inf`` was refused). At the stop the parameters are a fixed point: the hard
    counts of their own Viterbi clusters, smoothed, give them back."""
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 300)
    X = rng.integers(0, 3, size=(300, 6))
    X[:, 0] = (X[:, 1] + y) % 3
    runs = {tol: hs.NaiveBayesHidden(n_clusters=5, learn="vt", tol=tol, random_state=2,
                                     n_iter=200).fit(X, y) for tol in (10, 1e-4, -np.inf)}
    histories = [m.monitor_.history for m in runs.values()]
    assert len(histories[0]) == 8 and histories[0] == histories[1] == histories[2]
    assert histories[0][-1] - histories[0][-2] > 8  # the last step still gains 8.8 > tol
    m = runs[10]
    assert m.monitor_.converged
    problem = _problem_from(m, X, y, prior=2.0)
    params = _params(m)
    _, stats, _ = problem.path_counts(params, 1)
    for name, block in problem.blocks.items():
        again, _ = block.mstep(params[name], stats[name], "cha")
        np.testing.assert_allclose(again, params[name], rtol=0, atol=1e-14)


def test_sample_draws_class_cluster_and_attributes_from_the_model():
    """Frequencies of the sampled (class, cluster, attributes) against the model's joint
    probabilities by enumeration (every cell within 5 standard errors), and the same draw
    for the same random_state."""
    rng = np.random.default_rng(21)
    m = _random_model(rng, n_values=(2, 3), K=2)
    n = 40_000
    X, y, h = m.sample(n, random_state=3)
    assert X.shape == (n, 2) and X.dtype == object and y.shape == h.shape == (n,)
    counts = {}
    for row in zip(y.tolist(), h.tolist(), *X.T.tolist(), strict=True):
        counts[row] = counts.get(row, 0) + 1
    for c, label in enumerate(m.classes_):
        for k in range(m.n_clusters):
            for a in itertools.product(*(cats.tolist() for cats in m.categories_)):
                p = _brute_cluster_joint(m, a, c, k)
                got = counts.get((label, k, *a), 0) / n
                assert abs(got - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1e-12, (label, k, a)
    again = m.sample(n, random_state=3)
    assert np.array_equal(again[0], X) and np.array_equal(again[1], y)
    with pytest.raises(InvalidInputError, match="n_samples"):
        m.sample(0)

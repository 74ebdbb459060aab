"""TreeNet at the edges (issue 21): a variable with hundreds of children, evidence of
probability zero, eq. 8 with a zero denominator, DAG patterns without a consistent sample,
and hostile input at every public entry point. Answers are checked against enumeration
(a root above its children: log P(X) = logsumexp_r log pi_r + sum_i log W_i[r, x_i])."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.special import logsumexp
from test_treenet import DAG, TREE, _exact, _random_params

import hiddenstate as hs
from hiddenstate import _validation
from hiddenstate.errors import (
    DegenerateStateWarning,
    HiddenStateError,
    InsufficientMemoryError,
    InvalidInputError,
    NumericalError,
    ZeroProbabilityError,
)
from hiddenstate.models.examples import multiplexer
from hiddenstate.treenet.checks import check_products


# -- a variable with many children ---------------------------------------------------------------
def _star(n_children=200, n_symbols=50, K=2, seed=None):
    """A root ``r`` with ``n_children`` observed children; uniform 0.02 rows (the issue's
    reproduction) or, with a seed, random rows."""
    net = hs.TreeNet(n_states={"r": K}, edges=[("r", f"x{i}") for i in range(n_children)],
                     observed={f"x{i}": n_symbols for i in range(n_children)})
    if seed is None:
        net.priors_ = {"r": np.full(K, 1.0 / K)}
        net.weights_ = {f"r->x{i}": np.full((K, n_symbols), 1.0 / n_symbols)
                        for i in range(n_children)}
    else:
        rng = np.random.default_rng(seed)
        net.priors_ = {"r": rng.dirichlet(np.ones(K))}
        net.weights_ = {f"r->x{i}": rng.dirichlet(np.ones(n_symbols), size=K)
                        for i in range(n_children)}
    return net


def _star_joint(net, X):
    """log p(r, x) of every pattern and root state, (n, K), by the product over children."""
    K = len(net.priors_["r"])
    out = np.tile(np.log(net.priors_["r"]), (len(X), 1))
    for i in range(X.shape[1]):
        out += np.log(net.weights_[f"r->x{i}"][:, X[:, i]]).T
    assert out.shape == (len(X), K)
    return out


def test_many_children_uniform_rows_are_exact():
    """The issue's reproduction: 200 children of 50 symbols, all weights 0.02: log P(X) is
    200 log 0.02 = -782.4 for every pattern (was -inf), the posterior of r is the prior
    (was [0, 0]) and fit on random data works (was ZeroProbabilityError)."""
    net = _star()
    X = np.random.default_rng(0).integers(0, 50, size=(3, 200))
    np.testing.assert_allclose(net.score_samples(X), 200 * np.log(0.02), rtol=1e-13)
    assert 200 * np.log(0.02) == pytest.approx(-782.4, abs=0.05)
    np.testing.assert_allclose(net.predict_proba(X)["r"], 0.5, atol=1e-13)
    fitted = hs.TreeNet(**{k: getattr(net, k) for k in ("n_states", "edges", "observed")},
                        n_iter=3, random_state=0).fit(X)
    assert np.all(np.isfinite(fitted.monitor_.history))


@pytest.mark.parametrize("K", [2, 5])
def test_many_children_random_rows_against_enumeration(K):
    net = _star(K=K, seed=K)
    X = np.random.default_rng(1).integers(0, 50, size=(6, 200))
    joint = _star_joint(net, X)
    logz = logsumexp(joint, axis=1)
    assert np.all(logz < -700)  # far below what an unscaled product of messages can hold
    np.testing.assert_allclose(net.score_samples(X), logz, rtol=1e-12)
    np.testing.assert_allclose(net.predict_proba(X)["r"], np.exp(joint - logz[:, None]),
                               atol=1e-12)
    value, z = net.decode(X)
    np.testing.assert_allclose(value, joint.max(axis=1), rtol=1e-12)
    np.testing.assert_array_equal(z[:, 0], joint.argmax(axis=1))
    # one EM iteration from these parameters: the closed-form update from exact posteriors
    post = np.exp(joint - logz[:, None])
    em = hs.TreeNet(**{k: getattr(net, k) for k in ("n_states", "edges", "observed")},
                    n_iter=1, warm_start=True)
    em.weights_, em.priors_ = dict(net.weights_), dict(net.priors_)
    em.fit(X)
    assert em.monitor_.history[0] == pytest.approx(logz.sum(), rel=1e-12)
    np.testing.assert_allclose(em.priors_["r"], post.mean(axis=0), atol=1e-12)
    for i in (0, 77, 199):
        counts = post.T @ np.eye(50)[X[:, i]]
        np.testing.assert_allclose(em.weights_[f"r->x{i}"],
                                   counts / counts.sum(axis=1, keepdims=True), atol=1e-12)


def test_many_children_stochastic_em_learns():
    net = _star(K=2, seed=3)
    X, _ = net.sample(300, random_state=0)
    learner = hs.TreeNet(**{k: getattr(net, k) for k in ("n_states", "edges", "observed")},
                         learn="stochastic-em", n_iter=3, random_state=0).fit(X)
    h = learner.monitor_.history
    assert np.all(np.isfinite(h)) and h[-1] > h[0]


def test_huge_soft_evidence_keeps_the_exact_scale():
    """Likelihoods near the float64 maximum: the upward normalisation does not overflow,
    and log P(X) includes their scale exactly."""
    net = _random_params(hs.TreeNet(**TREE), 0)
    X = np.array([[0, 1, 1, 2], [2, 3, 0, 0]])
    lik = np.random.default_rng(0).random((2, 3)) + 0.5
    ll = net.score_samples(X, {"c": lik})
    big = net.score_samples(X, {"c": lik * 1e308})
    np.testing.assert_allclose(big, ll + np.log(1e308), rtol=1e-13)
    for i, x in enumerate(X):
        assert ll[i] == pytest.approx(_exact(net, x, {"c": lik[i]})[0], abs=1e-10)
    np.testing.assert_allclose(net.predict_proba(X, {"c": lik * 1e308})["a"],
                               net.predict_proba(X, {"c": lik})["a"], atol=1e-13)


def test_multi_parent_factor_scale_cancels():
    """Eq. 8 divides a row's scale out: factors near the float64 maximum (whose row sum
    overflows) or subnormal give the same answers as the same factors at scale one."""
    X = np.array([[0, 1, 1], [2, 2, 0]])
    ref = _random_params(hs.TreeNet(**DAG, n_samples=50), 4)
    want = ref.score_samples(X, random_state=0)
    post = ref.predict_proba(X, random_state=0)["a"]
    for scale in (1.7e308, 1e-310):
        net = _random_params(hs.TreeNet(**DAG, n_samples=50), 4)
        net.weights_["a->c"] = net.weights_["a->c"] / net.weights_["a->c"].max() * scale
        np.testing.assert_allclose(net.score_samples(X, random_state=0), want, rtol=1e-12)
        np.testing.assert_allclose(net.predict_proba(X, random_state=0)["a"], post,
                                   atol=1e-12)


# -- subnormal and huge evidence and factors, against enumeration --------------------------------
# (weights_["a->c"] of TREE, soft evidence on c, X): the first is the case the property test
# below found (a message of subnormal entries under a posterior of normal ones: post / msg
# overflowed); the others put the mass where only subnormal or huge values reach it.
_EXTREME = {
    "found": ([[0, 1, 0]] * 3, [[0.3, 1e-310, 1e-310]], [[0, 0, 0, 0]]),
    "huge-on-excluded-state": ([[0, 1, 0]] * 3, [[1e300, 1e-310, 1e-310]], [[0, 0, 0, 0]]),
    "all-subnormal": ([[0, 1, 0], [0, 0.5, 0.5], [1, 0, 0]], [[1e-310, 1e-310, 1e-310]],
                      [[2, 3, 1, 2]]),
    "huge-times-subnormal-factor": ([[1, 1e-310, 0], [1, 1e-310, 0], [0, 0, 1]],
                                    [[1e-310, 1e300, 0]], [[0, 1, 1, 2]]),
    "em-row-from-tiny-counts": ([[0.875, 0.125, 0], [1, 7e-300, 0], [1, 0, 0]],
                                [[0, 1e-200, 7], [0, 1e-200, 1]],
                                [[1, 1, 1, -1], [1, -1, 0, -1]]),
    "underflowing-message-entry": ([[1, 1.43e-201, 0], [1.43e-201, 1, 0], [1e-310, 1, 0]],
                                   [[1e-200, 0.3, 0], [0, 1e-200, 7]],
                                   [[2, -1, 1, 1], [1, 1, 1, -1]]),
}


@pytest.mark.parametrize("case", list(_EXTREME))
def test_extreme_evidence_and_factors_against_enumeration(case):
    """Every entry point of a tree with subnormal and huge (1e300) soft evidence and a
    hand-set factor with subnormal entries gives the numbers of enumeration in log space
    (test_treenet._exact: sums of logs, logaddexp): log P(X), every posterior marginal, the
    most probable state, the importance weight of posterior samples (P(X) in a tree) and
    one EM step (the expected counts normalised, whose rows may hold counts near 1e-299),
    with no floating-point warning."""
    w, lik, X = (np.array(a) for a in _EXTREME[case])
    net = _random_params(hs.TreeNet(**TREE), 0)
    net.weights_["a->c"] = w
    exact = [_exact(net, x, {"c": lik[i]}) for i, x in enumerate(X)]
    logz = np.array([e[0] for e in exact])
    assert np.all(np.isfinite(logz))
    names = list(net.n_states)
    counts = np.zeros((3, 3))  # expected counts of a -> c
    for _, _, _, _, states, post in exact:
        np.add.at(counts, (states[:, names.index("a")], states[:, names.index("c")]), post)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", DegenerateStateWarning)  # rows of no posterior mass
        ll = net.score_samples(X, {"c": lik})
        marg = net.predict_proba(X, {"c": lik})
        value, z = net.decode(X, {"c": lik})
        _, log_w = net.sample_posterior(X, {"c": lik}, random_state=0, return_log_weights=True)
        em = hs.TreeNet(**TREE, n_iter=1, tol=-np.inf, warm_start=True)
        em.weights_, em.priors_ = dict(net.weights_), dict(net.priors_)
        em.fit(X, {"c": lik})
    np.testing.assert_allclose(ll, logz, rtol=1e-12)
    np.testing.assert_allclose(log_w, logz, rtol=1e-12)
    for i, (_, post, best, best_lp, _, _) in enumerate(exact):
        for v in names:
            np.testing.assert_allclose(marg[v][i], post[v], rtol=0, atol=1e-12, err_msg=v)
        assert value[i] == pytest.approx(best_lp, rel=1e-12)
        np.testing.assert_array_equal(z[i], best)
    assert em.monitor_.history[0] == pytest.approx(logz.sum(), rel=1e-12)
    seen = counts.sum(axis=1) > 0
    np.testing.assert_allclose(em.weights_["a->c"][seen],
                               counts[seen] / counts[seen].sum(axis=1, keepdims=True), atol=1e-12)
    np.testing.assert_allclose(em.priors_["a"],
                               np.mean([e[1]["a"] for e in exact], axis=0), atol=1e-12)


# -- evidence of probability zero ----------------------------------------------------------------
def _zero_column():
    net = hs.TreeNet(n_states={"b": 2}, edges=[("b", "x0")], observed={"x0": 3})
    net.priors_ = {"b": np.array([0.5, 0.5])}
    net.weights_ = {"b->x0": np.array([[0.5, 0.5, 0.0], [0.2, 0.8, 0.0]])}
    return net


def _warm(net, learn, **kw):
    """A learner of ``learn`` starting from ``net``'s parameters."""
    out = hs.TreeNet(**{k: getattr(net, k) for k in ("n_states", "edges", "observed")},
                     learn=learn, warm_start=True, random_state=0, **kw)
    out.weights_ = {k: v.copy() for k, v in net.weights_.items()}
    out.priors_ = {k: v.copy() for k, v in net.priors_.items()}
    return out


METHODS = {"predict_proba": "no posterior", "decode": "no most probable state",
           "sample_posterior": "no posterior sample"}


@pytest.mark.parametrize("method", list(METHODS))
def test_zero_probability_symbol_raises_naming_the_pattern(method):
    net = _zero_column()
    X = np.array([[0], [2], [1], [2]])
    with pytest.raises(ZeroProbabilityError, match=rf"X: patterns 1 and 3 have .*"
                                                   rf"{METHODS[method]}"):
        getattr(net, method)(X)
    ll = net.score_samples(X)  # the log-evidence exists: -inf
    assert ll[1] == ll[3] == -np.inf
    assert ll[0] == pytest.approx(np.log(0.5 * 0.5 + 0.5 * 0.2), rel=1e-14)
    np.testing.assert_allclose(net.predict_proba(X[[0, 2]])["b"],
                               [[0.5 / 0.7, 0.2 / 0.7], [0.5 / 1.3, 0.8 / 1.3]], atol=1e-14)


@pytest.mark.parametrize("method", list(METHODS))
def test_impossible_soft_evidence_raises(method):
    """x0 = 2 is only emitted by b = 0; soft evidence rules b = 0 out."""
    net = hs.TreeNet(n_states={"a": 2, "b": 2}, edges=[("a", "b"), ("b", "x0")],
                     observed={"x0": 3})
    net.priors_ = {"a": np.array([0.3, 0.7])}
    net.weights_ = {"a->b": np.array([[0.6, 0.4], [0.1, 0.9]]),
                    "b->x0": np.array([[0.2, 0.3, 0.5], [0.5, 0.5, 0.0]])}
    X = np.array([[2], [1]])
    lik = {"b": np.array([[0.0, 1.0], [0.0, 1.0]])}
    with pytest.raises(ZeroProbabilityError, match="X: pattern 0 has probability zero"):
        getattr(net, method)(X, lik)
    assert net.score_samples(X, lik)[0] == -np.inf
    for learn in ("em", "stochastic-em"):  # was: stochastic EM learnt nothing, silently
        with pytest.raises(ZeroProbabilityError, match="X: pattern 0"):
            _warm(net, learn).fit(X, lik)


@pytest.mark.parametrize("method", list(METHODS))
def test_impossible_evidence_in_a_dag_raises(method):
    """In a DAG the upward pass is optimistic, but a pattern it gives probability zero is
    impossible (every consistent joint state keeps a positive upward value), so this is
    exact too."""
    net = _random_params(hs.TreeNet(**DAG), 2)
    w = net.weights_["c->x0"].copy()
    w[:, 1] = 0.0
    net.weights_["c->x0"] = w / w.sum(axis=1, keepdims=True)
    X = np.array([[0, 1, 1], [1, 2, 0], [2, 0, 1]])
    with pytest.raises(ZeroProbabilityError, match="X: pattern 1 has probability zero"):
        getattr(net, method)(X, random_state=0)
    ll = net.score_samples(X, random_state=0)
    assert ll[1] == -np.inf and np.all(np.isfinite(ll[[0, 2]]))
    with pytest.raises(ZeroProbabilityError, match="X: pattern 1"):
        _warm(net, "stochastic-em", batch_size=2).fit(X)


def test_partial_fit_on_an_impossible_pattern_leaves_the_model_unchanged():
    net = _zero_column()
    stream = _warm(net, "stochastic-em", batch_size=1)
    stream.partial_fit(np.array([[0], [1]]))
    before = ({k: v.copy() for k, v in stream.weights_.items()}, stream.n_batches_,
              len(stream.monitor_.history))
    with pytest.raises(ZeroProbabilityError, match="X: pattern 2"):
        stream.partial_fit(np.array([[0], [1], [2]]))
    assert stream.n_batches_ == before[1] and len(stream.monitor_.history) == before[2]
    for k, v in before[0].items():
        np.testing.assert_array_equal(stream.weights_[k], v)


# -- eq. 8 with a zero denominator ---------------------------------------------------------------
def _zero_denominator():
    net = hs.TreeNet(n_states={"b": 2, "c": 2, "d": 2},
                     edges=[("b", "d"), ("c", "d"), ("d", "x")], observed={"x": 2})
    net.priors_ = {"b": np.array([0.5, 0.5]), "c": np.array([0.5, 0.5])}
    net.weights_ = {"b->d": np.array([[1.0, 0.0], [0.5, 0.5]]),
                    "c->d": np.array([[0.0, 1.0], [0.5, 0.5]]), "d->x": np.eye(2)}
    return net


@pytest.mark.parametrize("call", ["decode", "sample", "score_samples", "predict_proba",
                                  "sample_posterior", "fit", "save"])
def test_eq8_zero_denominator_is_refused_everywhere(call, tmp_path):
    """(b0, c0) leaves no state of d: P(d | b0, c0) is 0/0. Was: decode NaN, sample()
    drew (b0, c0) 25% of the time while score gave it probability zero."""
    net = _zero_denominator()
    X = np.array([[0], [1]])
    args = {"sample": (5,), "save": (tmp_path / "m",)}.get(call, (X,))
    if call == "fit":
        net = _warm(net, "stochastic-em")
    with pytest.raises(InvalidInputError, match=r"eq\. 8 is undefined for 'd' when b=0, c=0: "
                                                r"row 0 of weights_\['b->d'\] and row 0 of "
                                                r"weights_\['c->d'\]"):
        getattr(net, call)(*args)


def _brute_undefined(weights):
    """Whether some combination of parent rows has no column where all are positive."""
    for rows in itertools.product(*[range(len(w)) for w in weights]):
        if not np.any(np.all([w[r] > 0 for w, r in zip(weights, rows, strict=True)],
                             axis=0)):
            return True
    return False


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 4).flatmap(lambda k: st.lists(
    hnp.arrays(np.int8, st.tuples(st.integers(1, 3), st.just(4)), elements=st.integers(0, 1)),
    min_size=k, max_size=k)))
def test_eq8_check_agrees_with_enumeration(masks):
    """The check refuses exactly the factors for which some combination of parent states
    has a zero denominator (enumerated), for 2-4 parents with random zero patterns."""
    names = [f"p{i}" for i in range(len(masks))]
    net = hs.TreeNet(n_states={**{p: len(m) for p, m in zip(names, masks, strict=True)},
                               "d": 4}, edges=[(p, "d") for p in names] + [("d", "x")],
                     observed={"x": 2})
    s = net._structure()
    weights = [None] * len(s.edges)
    factors = [m.astype(float) for m in masks]
    for p, f in zip(names, factors, strict=True):
        f[f.sum(axis=1) == 0, 0] = 1.0  # no all-zero row (checked separately)
        weights[s.edge_index[(s.names.index(p), s.names.index("d"))]] = f
    weights[s.edge_index[(s.names.index("d"), s.names.index("x"))]] = np.full((4, 2), 0.5)
    try:
        check_products(s, weights)
        refused = False
    except InvalidInputError:
        refused = True
    assert refused == _brute_undefined(factors)


def test_structural_zeros_that_define_every_combination_are_accepted():
    """Funk's multiplexer has zeros in both factors into D, but every (B, C) leaves one
    state: accepted, and generation agrees with the enumerated joint (D = A)."""
    net = multiplexer()
    X, z = net.sample(2000, random_state=0)
    np.testing.assert_array_equal(z[:, 0], z[:, 3])


# -- DAG patterns without a consistent sample ----------------------------------------------------
def _mux(n_samples):
    net = multiplexer()
    net.n_samples = n_samples
    X = np.zeros((40, 1), dtype=np.int64)
    return net, X, {"D": np.tile([0.0, 1.0, 1.0, 0.0], (40, 1))}


@pytest.mark.parametrize("correction", ["importance", "reject"])
def test_dag_predict_proba_without_consistent_samples_names_n_samples(correction):
    """Was: all-zero rows (18 of 40 at n_samples=1)."""
    net, X, lik = _mux(1)
    net.correction = correction
    with pytest.raises(InvalidInputError, match=r"n_samples: none of the 1 downward sample\(s\)"
                                                r" of \d+ of 40 patterns"):
        net.predict_proba(X, lik, random_state=0)
    net.n_samples = 400
    post = net.predict_proba(X, lik, random_state=0)["A"]
    np.testing.assert_allclose(post.sum(axis=1), 1.0)
    np.testing.assert_allclose(post.mean(axis=0), [0, 0.5, 0.5, 0], atol=0.03)


def test_dag_score_decode_and_sampling_without_consistent_samples():
    net, X, lik = _mux(1)
    for call in (net.score_samples, net.decode):
        with pytest.raises(InvalidInputError, match="n_samples: none of the 1"):
            call(X, lik, random_state=0)
    with pytest.raises(InvalidInputError, match="n_samples: none of the 1"):
        net.sample_posterior(X, lik, correction="importance", random_state=0)
    with pytest.raises(InvalidInputError, match=r"max_tries: after 1 rounds, \d+ of 40"):
        net.sample_posterior(X, lik, correction="reject", max_tries=1, random_state=0)
    # Funk's plain samples are returned as drawn, the inconsistent ones flagged
    z, lw = net.sample_posterior(X, lik, random_state=0, return_log_weights=True)
    assert np.any(np.isneginf(lw)) and np.all(np.isfinite(lw) | np.isneginf(lw))
    z = net.sample_posterior(X, lik, correction="reject", random_state=0)
    assert set(np.unique(z[:, 0])) <= {1, 2}
    net.n_samples = 200
    ll = net.score_samples(X, lik, random_state=0)  # exact: log 0.5 (A in {1, 2})
    assert np.all(np.abs(ll - np.log(0.5)) < 0.35) and abs(ll.mean() - np.log(0.5)) < 0.05
    value, z = net.decode(X, lik, random_state=0)
    assert np.all(np.isin(z[:, 0], [1, 2])) and np.allclose(value, np.log(0.25))


# -- hostile input -------------------------------------------------------------------------------
def test_hostile_hyper_parameters_are_named():
    X = np.array([[0, 1, 1, 2]])
    cases = [({"verbose": "yes"}, "verbose: expected True or False"),
             ({"warm_start": "no"}, "warm_start: expected True or False"),
             ({"learn": np.array(["em"])}, "learn: "),
             ({"correction": ["none"]}, "correction: "),
             ({"tol": float("nan")}, "tol: expected a number"),
             ({"n_samples": 0}, "n_samples: expected an integer >= 1"),
             ({"learn": "stochastic-em", "learning_rate": -1.0}, "learning_rate"),
             ({"learn": "stochastic-em", "learning_rate": 10**400},
              "learning_rate: expected a finite number"),  # was: OverflowError
             ({"learn": "map", "prior": 10**400}, "prior: expected a Dirichlet"),
             ({"learn": "stochastic-em", "balance": float("inf")}, "balance"),
             ({"random_state": "seed"}, "random_state"),
             ({"n_states": {"a\n": 2}, "edges": [("a\n", "x0")]}, "variable name")]
    for kwargs, match in cases:
        with pytest.raises(InvalidInputError, match=match):
            hs.TreeNet(**{**TREE, **kwargs}).fit(X)
    with pytest.raises(InvalidInputError, match="callback: expected a function"):
        hs.TreeNet(**TREE).fit(X, callback=3)


def test_learning_rate_out_of_range_is_named_and_leaves_the_model():
    X = np.array([[0, 1, 1, 2], [2, 3, 0, 0]] * 5)
    with pytest.raises(NumericalError, match=r"learning_rate: .*learning_rate=10000\) drove "
                                             r"weights_\["):
        hs.TreeNet(**TREE, learn="stochastic-em", learning_rate=1e4, random_state=0).fit(X)
    stream = hs.TreeNet(**TREE, learn="stochastic-em", random_state=0).partial_fit(X)
    before = {k: v.copy() for k, v in stream.weights_.items()}
    stream.learning_rate = 1e4
    with pytest.raises(NumericalError, match="learning_rate"):
        stream.partial_fit(X)
    for k, v in before.items():
        np.testing.assert_array_equal(stream.weights_[k], v)
    assert stream.n_batches_ == 1


def test_hostile_data_is_named():
    net = _random_params(hs.TreeNet(**TREE), 0)
    X = np.array([[0, 1, 1, 2], [2, 3, 0, 0]])
    big = np.array([[2**64 - 1, 0, 0, 0]], dtype=np.uint64)  # was: read as -1 (missing)
    cases = [([[0, 1, 1, 2], [0, 1]], "X: cannot be read as a table"),
             (big, r"X: column 0 \('x0'\) has symbol 1.845e\+19"),
             (np.array([[1e300, 0, 0, 0]]), "symbol 1e\\+300"),
             (X.astype(complex), "dtype complex128"),
             (X.astype(bool), "dtype bool"),
             (np.array([[np.nan, 0, 0, 0]]), "use -1, not NaN")]
    for data, match in cases:
        for call in (net.score, net.predict_proba, net.decode, net.sample_posterior,
                     hs.TreeNet(**TREE).fit):
            with pytest.raises(InvalidInputError, match=match):
                call(data)
    for lik, match in [({"c": np.ones((2, 3)) * 1j}, "complex"),
                       ({"c": np.array([["a"] * 3] * 2)}, "expected numbers"),
                       ({"c": [[1, 1, 1], [1, 1]]}, "cannot be read"),
                       ({"c": np.full((2, 3), np.inf)}, "finite")]:
        with pytest.raises(InvalidInputError, match=match):
            net.predict_proba(X, lik)


def test_hand_set_stream_state_is_checked():
    X = np.array([[0, 1, 1, 2], [2, 3, 0, 0]])
    for attr, value, match in [("usage_", {"a": "x"}, "usage_: expected a dict"),
                               ("usage_", None, "usage_: expected a dict"),
                               ("n_batches_", "x", "n_batches_: expected an integer"),
                               ("n_batches_", -1, "n_batches_: expected an integer")]:
        stream = hs.TreeNet(**TREE, learn="stochastic-em", random_state=0).partial_fit(X)
        setattr(stream, attr, value)
        with pytest.raises(InvalidInputError, match=match):
            stream.partial_fit(X)
    stream = hs.TreeNet(**TREE, learn="stochastic-em", random_state=0).partial_fit(X)
    stream.usage_ = {**stream.usage_, "a": np.array([0.5, 0.5, 0.0])}
    with pytest.raises(InvalidInputError, match=r"usage_\['a'\]: expected positive"):
        stream.partial_fit(X)
    net = _random_params(hs.TreeNet(**TREE), 0)
    net.weights_ = {**net.weights_, 3: np.ones(2), (1, 2): np.ones(2)}
    with pytest.raises(InvalidInputError, match="is not an arrow of edges"):
        net.score(X)


def test_memory_is_checked_before_allocating(monkeypatch):
    monkeypatch.setattr(_validation, "available_memory", lambda: 2**27)
    with pytest.raises(InsufficientMemoryError, match="n_states: fit needs about"):
        hs.TreeNet(n_states={"a": 10**6}, edges=[("a", "x")], observed={"x": 10**6}).fit(
            np.zeros((2, 1), dtype=np.int64))
    wide = hs.TreeNet(n_states={"a": 2}, edges=[("a", "x")], observed={"x": 400})
    wide.priors_, wide.weights_ = {"a": np.array([0.5, 0.5])}, {"a->x": np.full((2, 400),
                                                                                1 / 400)}
    with pytest.raises(InsufficientMemoryError, match="X: score_samples needs about .*split X"):
        wide.score(np.zeros((100_000, 1), dtype=np.int64))
    with pytest.raises(InsufficientMemoryError, match="n_samples: sample needs"):
        wide.sample(10**9)
    dag = _random_params(hs.TreeNet(**DAG, n_samples=10**6), 0)
    with pytest.raises(InsufficientMemoryError, match="n_samples: predict_proba needs"):
        dag.predict_proba(np.zeros((100, 3), dtype=np.int64))
    assert np.isfinite(wide.score(np.zeros((10, 1), dtype=np.int64)))  # what fits is not refused


_VALUES = st.sampled_from([0.0, 1e-310, 1e-200, 0.3, 1.0, 7.0, 1e300])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), tree=st.booleans(), normalise=st.booleans(),
       soft=st.booleans(), n=st.integers(1, 6))
def test_every_entry_point_works_or_raises_hiddenstate_error(data, tree, normalise, soft, n):
    """Any symbols (missing and out of range included), soft evidence with zeros and
    extreme values, and a hand-set factor into c with zeros and extreme values: every
    method either answers with numbers that make sense (posteriors summing to one, no NaN,
    states in range, learned tables finite) or raises a HiddenStateError."""
    spec = TREE if tree else DAG
    width = len(spec["observed"])
    X = data.draw(hnp.arrays(np.int64, (n, width), elements=st.integers(-1, 3)), label="X")
    w = data.draw(hnp.arrays(np.float64, (3, 3), elements=_VALUES), label="w")
    if normalise and np.all(w.sum(axis=1) > 0):
        w = w / w.max(axis=1, keepdims=True)
        w = w / w.sum(axis=1, keepdims=True)
    lik = data.draw(hnp.arrays(np.float64, (n, 3), elements=_VALUES), label="lik")
    net = _random_params(hs.TreeNet(**spec, n_samples=20), 0)
    net.weights_["a->c"] = w
    likelihoods = {"c": lik} if soft else None
    calls = {
        "score_samples": lambda: net.score_samples(X, likelihoods, random_state=0),
        "predict_proba": lambda: net.predict_proba(X, likelihoods, random_state=0),
        "decode": lambda: net.decode(X, likelihoods, random_state=0),
        "sample_posterior": lambda: net.sample_posterior(X, likelihoods, random_state=0),
        "fit": lambda: hs.TreeNet(**spec, n_iter=2, random_state=0,
                                  learn="em" if tree else "stochastic-em").fit(X, likelihoods),
    }
    for name, call in calls.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)
                warnings.simplefilter("ignore", DegenerateStateWarning)
                out = call()
        except HiddenStateError:
            continue
        if name == "score_samples":
            assert not np.any(np.isnan(out)) and not np.any(out == np.inf)
        elif name == "predict_proba":
            for v, p in out.items():
                np.testing.assert_allclose(p.sum(axis=1), 1.0, err_msg=v)
        elif name == "decode":
            assert np.all(np.isfinite(out[0]))
            assert np.all((out[1] >= 0) & (out[1] < 3))
        elif name == "sample_posterior":
            assert np.all((out >= 0) & (out < 3))
        else:
            for v in out.weights_.values():
                assert np.all(np.isfinite(v))

"""TreeNet (Funk's tree and DAG networks) against enumeration of every joint hidden state,
against hs.HMM on a chain-shaped tree, and Funk's stochastic-EM rule against finite
differences (eq. 19-20)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import tamper
from scipy.stats import chisquare

import hiddenstate as hs
from hiddenstate.errors import InvalidInputError, ModelFileError, NotFittedError
from hiddenstate.models.examples import multiplexer
from hiddenstate.treenet import funk, passes

TREE = {
    "n_states": {"a": 3, "b": 2, "c": 3, "d": 2},
    "edges": [("a", "b"), ("a", "c"), ("c", "d"), ("b", "x0"), ("b", "x1"), ("c", "x2"),
              ("d", "x3")],
    "observed": {"x0": 3, "x1": 4, "x2": 2, "x3": 3},
}
# a DAG: c has parents a and b, x1 has parents c and b
DAG = {
    "n_states": {"a": 3, "b": 2, "c": 3},
    "edges": [("a", "c"), ("b", "c"), ("c", "x0"), ("c", "x1"), ("b", "x1"), ("a", "x2")],
    "observed": {"x0": 3, "x1": 3, "x2": 2},
}


def _random_params(net, seed, conc=1.0):
    rng = np.random.default_rng(seed)
    s = net._structure()
    weights = {}
    for e, (p, c) in enumerate(s.edges):
        w = rng.dirichlet(np.full(s.sizes[c], conc), size=s.sizes[p])
        weights[s.edge_name(e)] = w
    priors = {s.names[r]: rng.dirichlet(np.full(s.sizes[r], conc)) for r in s.roots}
    net.weights_, net.priors_ = weights, priors
    return net


def _enumerate(net, x, lik=None):
    """(joint hidden states in n_states order, log p(z, x)) by brute force for one pattern:
    each child's table is the normalised product of its parents' rows (eq. 8)."""
    names = list(net.n_states)
    obs = list(net.observed)
    parents = {v: [p for p, c in net.edges if c == v] for v in names + obs}
    states = np.array(list(itertools.product(*[range(net.n_states[v]) for v in names])))
    out = np.zeros(len(states))
    with np.errstate(divide="ignore"):  # log(0) = -inf for impossible states
        for row, z in enumerate(states):
            val = dict(zip(names, z, strict=True))
            val.update({o: x[i] for i, o in enumerate(obs)})
            lp = 0.0
            for v in names + obs:
                if val[v] < 0:
                    continue  # missing symbol: summed out (its table sums to one)
                if not parents[v]:
                    lp += np.log(net.priors_[v][val[v]])
                    continue
                f = np.prod([net.weights_[f"{p}->{v}"][val[p]] for p in parents[v]], axis=0)
                lp += np.log(f[val[v]] / f.sum())
            for v, L in (lik or {}).items():
                lp += np.log(L[val[v]])
            out[row] = lp
    return states, out


def _exact(net, x, lik=None):
    states, lp = _enumerate(net, x, lik)
    logz = np.logaddexp.reduce(lp)
    w = np.exp(lp - logz)
    marg = {}
    for j, v in enumerate(net.n_states):
        marg[v] = np.bincount(states[:, j], weights=w, minlength=net.n_states[v])
    best = int(np.argmax(lp))
    return logz, marg, states[best], lp[best], states, w


def _data(seed, n=6):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, k, n) for k in TREE["observed"].values()])
    X[1, 2] = -1  # a missing symbol
    return X


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tree_equals_enumeration(seed):
    net = _random_params(hs.TreeNet(**TREE), seed)
    X = _data(seed)
    lik = {"c": np.random.default_rng(seed + 10).random((len(X), 3))}
    ll = net.score_samples(X, lik)
    post = net.predict_proba(X, lik)
    value, z = net.decode(X, lik)
    for i, x in enumerate(X):
        logz, marg, best, best_lp, _, _ = _exact(net, x, {"c": lik["c"][i]})
        assert ll[i] == pytest.approx(logz, abs=1e-10)
        for v in net.n_states:
            np.testing.assert_allclose(post[v][i], marg[v], atol=1e-10)
        assert value[i] == pytest.approx(best_lp, abs=1e-10)
        np.testing.assert_array_equal(z[i], best)
    assert net.score(X, lik) == pytest.approx(ll.sum(), abs=1e-10)


def test_tree_importance_weights_are_the_evidence():
    """In a tree every downward sample's weight p(z, X)/q(z) is exactly P(X) (eq. 5 is
    exact), so the DAG machinery reduces to the exact answer."""
    net = _random_params(hs.TreeNet(**TREE), 3)
    X = _data(3)
    _, log_w = net.sample_posterior(np.repeat(X, 50, axis=0), random_state=0,
                                    return_log_weights=True)
    np.testing.assert_allclose(log_w, np.repeat(net.score_samples(X), 50), atol=1e-10)


def test_posterior_samples_match_exact_posterior():
    """10^5 downward samples of one pattern against the enumerated joint posterior."""
    net = _random_params(hs.TreeNet(**TREE), 4, conc=2.0)
    x = np.array([1, 3, 0, 2])
    _, _, _, _, states, w = _exact(net, x)
    n = 100_000
    z = net.sample_posterior(np.tile(x, (n, 1)), random_state=123)
    sizes = list(net.n_states.values())
    code = np.ravel_multi_index(z.T, sizes)
    ref = np.ravel_multi_index(states.T, sizes)
    observed = np.bincount(code, minlength=int(np.prod(sizes)))[ref]
    expected = n * w
    big = expected >= 5
    obs, exp = observed[big], expected[big]
    if not big.all():  # pool the small cells
        obs, exp = np.append(obs, observed[~big].sum()), np.append(exp, expected[~big].sum())
    assert observed.sum() == n
    assert chisquare(obs, exp).pvalue > 1e-3


def test_generated_patterns_follow_the_model():
    net = _random_params(hs.TreeNet(**TREE), 5, conc=2.0)
    n = 50_000
    X, _ = net.sample(n, random_state=7)
    keys, counts = np.unique(X, axis=0, return_counts=True)
    expected = n * np.exp(net.score_samples(keys))
    assert np.exp(net.score_samples(keys)).sum() == pytest.approx(1.0, abs=1e-12)  # all seen
    assert chisquare(counts, expected).pvalue > 1e-3


def _chain(T, seed, K=3, W=4):
    rng = np.random.default_rng(seed)
    pi, A = rng.dirichlet(np.ones(K)), rng.dirichlet(np.ones(K), size=K)
    B = rng.dirichlet(np.ones(W), size=K)
    names = [f"z{t}" for t in range(T)]
    edges = [(names[t], names[t + 1]) for t in range(T - 1)]
    edges += [(names[t], f"x{t}") for t in range(T)]
    net = hs.TreeNet(n_states=dict.fromkeys(names, K), edges=edges,
                     observed={f"x{t}": W for t in range(T)})
    net.priors_ = {"z0": pi}
    net.weights_ = {f"z{t}->z{t + 1}": A for t in range(T - 1)}
    net.weights_.update({f"z{t}->x{t}": B for t in range(T)})
    hmm = hs.HMM(K, init_params="")
    hmm.startprob_, hmm.transmat_, hmm.emissionprob_ = pi, A, B
    hmm.n_features_ = W
    return net, hmm, rng


def test_chain_shaped_tree_is_an_hmm():
    """An HMM written as a chain-shaped tree: log-likelihood, posteriors and Viterbi equal
    hs.HMM's, and the log-evidence stays exact 400 levels deep."""
    T = 400
    net, hmm, rng = _chain(T, 0)
    X = rng.integers(0, 4, size=(3, T))
    ll = net.score_samples(X)
    value, z = net.decode(X)
    post = net.predict_proba(X)
    s = net._structure()
    weights, prior = net._params(s)
    rows = passes.normalise_rows(weights)

    def evidence(i):
        return net._evidence(s, X[i:i + 1], None)[0]

    for i in range(3):
        assert ll[i] == pytest.approx(hmm.score(X[i][:, None]), rel=1e-12)
        assert ll[i] < -300  # far below the float64 range of unscaled products per level
        logp, path = hmm.decode(X[i][:, None])
        assert value[i] == pytest.approx(logp, rel=1e-12)
        # near-tied paths may be ordered differently; the HMM's path is as good as ours
        full = np.zeros((1, 2 * T), dtype=np.int64)
        full[0, list(s.hidden)], full[0, list(s.observed)] = path, X[i]
        assert passes.log_joint(s, rows, prior, evidence(i), full)[0] == pytest.approx(
            value[i], rel=1e-12)
        assert np.mean(z[i] == path) > 0.95
        gamma = hmm.predict_proba(X[i][:, None])
        np.testing.assert_allclose(np.stack([post[f"z{t}"][i] for t in range(T)]), gamma,
                                   atol=1e-10)


@pytest.mark.parametrize("learn", ["em", "map", "vb"])
def test_em_never_lowers_the_objective(learn):
    rng = np.random.default_rng(9)
    X = np.column_stack([rng.integers(0, k, 300) for k in TREE["observed"].values()])
    net = hs.TreeNet(**TREE, learn=learn, n_iter=40, tol=-np.inf, random_state=1,
                     prior=None if learn == "em" else 1.5)
    net.fit(X)
    h = np.array(net.monitor_.history)
    assert len(h) == 40
    assert np.all(np.diff(h) >= -1e-9 * np.abs(h[1:]))
    assert h[-1] > h[0] + 1.0
    if learn == "em":  # the objective is the exact log-evidence of the entering parameters
        before = hs.TreeNet(**TREE, learn="em", n_iter=1, random_state=1).fit(X)
        assert h[1] == pytest.approx(before.score(X), rel=1e-12)


def test_viterbi_training_stops_when_paths_repeat():
    rng = np.random.default_rng(2)
    X = np.column_stack([rng.integers(0, k, 200) for k in TREE["observed"].values()])
    net = hs.TreeNet(**TREE, learn="vt", prior=1.1, n_iter=200, random_state=0).fit(X)
    h = np.array(net.monitor_.history)
    assert net.monitor_.converged and len(h) < 200
    assert np.all(np.diff(h) >= -1e-9 * np.abs(h[1:]))
    value, _ = net.decode(X)
    assert np.isfinite(value).all()


def _draw_for(net, x, z_hidden):
    """The downward pass's conditionals for given hidden states (no randomness)."""
    s = net._structure()
    weights, prior = net._params(s)
    rows = passes.normalise_rows(weights)
    evidence, n = net._evidence(s, np.atleast_2d(x), None)
    upw = passes.upward(s, rows, evidence, n)
    z = np.zeros((1, s.n_vars), dtype=np.int64)
    z[0, list(s.hidden)] = z_hidden
    z[0, list(s.observed)] = x
    draw = passes.sample_down(s, rows, prior, upw.up, evidence, 1, None, keep=True, fixed=z)
    return s, weights, prior, draw


def test_funk_update_is_the_gradient_of_log_p_child_given_parents():
    """Eq. 19-20: for a child with two parents, the update of each parent's log weight row
    equals the gradient of sum_k post_k log P(c_k | a_i, b_j) (normalised product)."""
    net = _random_params(hs.TreeNet(**DAG), 0)
    x = np.array([2, 1, 0])
    s, weights, prior, draw = _draw_for(net, x, [1, 0, 2])
    g_w, _ = funk.gradients(s, weights, prior, draw, soft_normalization=False)
    c = s.names.index("c")
    post = draw.cond[c][0]

    def objective(logs):
        lc = logs["a->c"][1] + logs["b->c"][0]
        lc = lc - np.logaddexp.reduce(lc)
        return float(post @ lc)

    logs = {k: np.log(v) for k, v in net.weights_.items()}
    h = 1e-6
    for name, row in (("a->c", 1), ("b->c", 0)):
        e = s.edge_index[(s.names.index(name[0]), c)]
        fd = np.zeros(3)
        for k in range(3):
            up = {n: v.copy() for n, v in logs.items()}
            dn = {n: v.copy() for n, v in logs.items()}
            up[name][row, k] += h
            dn[name][row, k] -= h
            fd[k] = (objective(up) - objective(dn)) / (2 * h)
        np.testing.assert_allclose(g_w[e][row], fd, atol=1e-8)
        other = np.delete(g_w[e], row, axis=0)
        assert np.all(other == 0)  # only the sampled parent state's row moves


def test_funk_update_expectation_is_the_gradient_of_the_evidence_in_a_tree():
    """In a tree, averaging Funk's update over exact posterior samples gives the gradient
    of log P(X) with respect to the log weights (softmax rows), by finite differences."""
    net = _random_params(hs.TreeNet(**TREE), 6)
    x = np.array([0, 2, 1, 1])
    _, _, _, _, states, w = _exact(net, x)
    s = net._structure()
    expect = None
    for zh, wz in zip(states, w, strict=True):
        _, weights, prior, draw = _draw_for(net, x, zh)
        g_w, g_p = funk.gradients(s, weights, prior, draw, soft_normalization=False)
        g = [wz * g for g in g_w] + [wz * g_p[r] for r in s.roots]
        expect = g if expect is None else [a + b for a, b in zip(expect, g, strict=True)]

    def loglik(net_):
        return float(net_.score_samples(x[None])[0])

    h = 1e-6
    for e in range(len(s.edges)):
        name = s.edge_name(e)
        fd = np.zeros_like(net.weights_[name])
        for i, k in np.ndindex(fd.shape):
            vals = []
            for sign in (1, -1):
                lw = np.log(net.weights_[name]).copy()
                lw[i, k] += sign * h
                row = np.exp(lw[i] - np.logaddexp.reduce(lw[i]))
                trial = hs.TreeNet(**TREE)
                trial.priors_ = net.priors_
                trial.weights_ = {**net.weights_, name: np.vstack(
                    [row if r == i else net.weights_[name][r] for r in range(fd.shape[0])])}
                vals.append(loglik(trial))
            fd[i, k] = (vals[0] - vals[1]) / (2 * h)
        np.testing.assert_allclose(expect[e], fd, atol=1e-7)


def test_stochastic_em_learns_and_streams_resume_exactly(tmp_path):
    """Stochastic EM raises the log-evidence of a tree; partial_fit after save/load gives
    the same parameters as an uninterrupted stream."""
    teacher = _random_params(hs.TreeNet(**TREE), 8, conc=0.3)
    X, _ = teacher.sample(2000, random_state=1)
    net = hs.TreeNet(**TREE, learn="stochastic-em", n_iter=15, learning_rate=1.0,
                     batch_size=50, random_state=0).fit(X)
    start = hs.TreeNet(**TREE, learn="stochastic-em", n_iter=1, random_state=0)
    start.partial_fit(X[:0 + 1])
    assert net.score(X) > start.score(X) + 100
    # the per-epoch objective of a tree without `balance` is the exact log-evidence
    assert net.monitor_.history[-1] > net.monitor_.history[0]
    a = hs.TreeNet(**TREE, learn="stochastic-em", random_state=3, balance=0.5)
    a.partial_fit(X[:500]).partial_fit(X[500:1000])
    b = hs.TreeNet(**TREE, learn="stochastic-em", random_state=3, balance=0.5)
    b.partial_fit(X[:500])
    b.save(tmp_path / "m")
    b = hs.load(tmp_path / "m")
    b.partial_fit(X[500:1000])
    for k in a.weights_:
        np.testing.assert_array_equal(a.weights_[k], b.weights_[k])
    assert a.monitor_.history == b.monitor_.history


def test_save_load_round_trip_and_tampering(tmp_path):
    net = _random_params(hs.TreeNet(**DAG, learn="stochastic-em", random_state=0), 1)
    net.save(tmp_path / "dag")  # hand-set parameters, no fit
    back = hs.load(tmp_path / "dag")
    assert back.get_params() == {**net.get_params(), "edges": [list(e) for e in DAG["edges"]]}
    X = np.array([[0, 1, 1], [2, 2, 0]])
    np.testing.assert_array_equal(back.score_samples(X, random_state=1),
                                  net.score_samples(X, random_state=1))
    meta = json.loads((tmp_path / "dag" / "model.json").read_text())
    meta["params"]["edges"].append(["c", "a"])  # a cycle
    (tmp_path / "dag" / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelFileError, match="model.json was modified"):
        hs.load(tmp_path / "dag")
    tamper.write(tmp_path / "dag", meta, manifest=False)  # resealed: the content check
    with pytest.raises(ModelFileError, match="cycle"):
        hs.load(tmp_path / "dag")
    net.weights_["a->c"] = -net.weights_["a->c"]
    with pytest.raises(InvalidInputError, match="a->c"):
        net.save(tmp_path / "bad")
    assert not (tmp_path / "bad").exists()


def test_multiplexer_tree_pass_and_rejection():
    """Funk's eq. 9-15: A is split into bits B, C and multiplexed back into D. With
    P(X|D) = [0,1,1,0] the tree pass is optimistic about A (uniform), plain downward
    samples can be inconsistent, and rejection sampling gives the exact posterior."""
    net = multiplexer()
    X = np.zeros((20_000, 1), dtype=np.int64)
    lik = {"D": np.tile([0.0, 1.0, 1.0, 0.0], (20_000, 1))}
    z, log_w = net.sample_posterior(X, lik, random_state=0, return_log_weights=True)
    bad = ~np.isfinite(log_w)
    assert 0.4 < bad.mean() < 0.6  # A in {0, 3} half the time: B, C cannot make D = 1, 2
    zr = net.sample_posterior(X, lik, correction="reject", random_state=0)
    a = zr[:, 0]
    assert set(np.unique(a)) == {1, 2}
    assert abs(np.mean(a == 1) - 0.5) < 0.02
    exact = _exact(net, np.array([0]), {"D": lik["D"][0]})[1]["A"]
    np.testing.assert_allclose(exact, [0, 0.5, 0.5, 0])
    approx = net.predict_proba(X[:200], {"D": lik["D"][:200]}, random_state=0)["A"]
    np.testing.assert_allclose(approx.mean(axis=0), exact, atol=0.05)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dag_importance_sampling_against_enumeration(seed):
    """On a small DAG the importance-weighted marginals and log-evidence approach the
    enumerated ones; plain downward samples (Funk's optimistic pass) do not."""
    net = _random_params(hs.TreeNet(**DAG, n_samples=4000), seed, conc=0.5)
    x = np.array([[1, 2, 0]])
    logz, marg, *_ = _exact(net, x[0])
    assert net.score_samples(x, random_state=seed)[0] == pytest.approx(logz, abs=0.03)
    post = net.predict_proba(x, random_state=seed)
    err = max(np.abs(post[v][0] - marg[v]).max() for v in marg)
    assert err < 0.03


def test_hostile_inputs():
    good = hs.TreeNet(**TREE)
    X = _data(0)
    cases = [
        (dict(TREE, edges=[*TREE["edges"], ("d", "a")]), "cycle"),
        (dict(TREE, edges=[*TREE["edges"], ("zz", "a")]), "not declared"),
        (dict(TREE, edges=[*TREE["edges"], ("x0", "a")]), "leaves"),
        (dict(TREE, edges=[*TREE["edges"], ("a", "b")]), "twice"),
        (dict(TREE, n_states={**TREE["n_states"], "a": 0}), "positive integer"),
        (dict(TREE, n_states={**TREE["n_states"], "a b": 2}), "variable name"),
        (dict(TREE, observed={**TREE["observed"], "x9": 2}), "no parent"),
        (dict(TREE, observed={**TREE["observed"], "a": 2}), "unique"),
        (dict(DAG, learn="em"), "stochastic-em"),
        (dict(TREE, prior=1.5), "prior"),
        (dict(TREE, learn="map", prior=-1.0), "prior"),
        (dict(TREE, learn="stochastic-em", learning_rate=float("nan")), "learning_rate"),
        (dict(TREE, learn="bogus"), "learn"),
        (dict(TREE, batch_size=0), "batch_size"),
        (dict(TREE, correction="maybe"), "correction"),
    ]
    for kwargs, match in cases:
        with pytest.raises(InvalidInputError, match=match):
            hs.TreeNet(**kwargs).fit(X)
    with pytest.raises(NotFittedError):
        good.score(X)
    net = _random_params(hs.TreeNet(**TREE), 0)
    bad_X = [(X[:, :3], "shape"), (np.where(X == 1, 7, X), "symbol 7"),
             (X.astype(float) + 0.5, "whole numbers"), (X.astype(str), "integers"),
             (np.where(X == 1, -2, X), "symbol -2"), (X[:0], "no patterns")]
    for data, match in bad_X:
        with pytest.raises(InvalidInputError, match=match):
            net.score(data)
    for lik, match in [({"zz": np.ones((6, 3))}, "not a hidden"),
                       ({"c": np.ones((5, 3))}, "shape"),
                       ({"c": -np.ones((6, 3))}, "non-negative"),
                       ({"c": np.zeros((6, 3))}, "all zero"),
                       ({"c": np.full((6, 3), np.nan)}, "finite")]:
        with pytest.raises(InvalidInputError, match=match):
            net.predict_proba(X, lik)
    net.weights_ = {**net.weights_, "a->b": np.full((3, 2), 0.7)}
    with pytest.raises(InvalidInputError, match="a->b"):
        net.score(X)
    net = _random_params(hs.TreeNet(**TREE), 0)
    net.weights_ = {k: v for k, v in net.weights_.items() if k != "c->d"}
    with pytest.raises(InvalidInputError, match="missing"):
        net.decode(X)
    dag = _random_params(hs.TreeNet(**DAG), 0)
    dag.weights_["a->c"] = np.zeros((3, 3))
    with pytest.raises(InvalidInputError, match="all zero"):
        dag.sample(3)
    with pytest.raises(InvalidInputError, match="partial_fit"):
        _random_params(hs.TreeNet(**TREE), 0).partial_fit(X)
    with pytest.raises(hs.errors.ZeroProbabilityError):
        impossible = _random_params(hs.TreeNet(**TREE, warm_start=True, n_iter=2), 0)
        impossible.weights_["d->x3"] = np.tile([1.0, 0.0, 0.0], (2, 1))
        impossible.fit(np.tile([0, 0, 0, 2], (3, 1)))


def test_layered_structures():
    full = hs.treenet.layered([(2, 3), (3, 4)], n_observed=4, n_symbols=5)
    assert len(full["edges"]) == 2 * 3 + 3 * 4
    s = hs.TreeNet(**full)._structure()
    assert not s.is_tree and len(s.roots) == 2
    tree = hs.treenet.layered([(2, 3), (4, 4)], n_observed=8, n_symbols=5, fan_in=1)
    s = hs.TreeNet(**tree)._structure()
    assert s.is_tree and all(len(p) == 1 for v, p in enumerate(s.parents) if v not in s.roots)
    # every lower variable hangs under one of the layer above, spread evenly
    assert sorted(p for p, c in tree["edges"] if c.startswith("h1_")) == \
        ["h0_0", "h0_0", "h0_1", "h0_1"]


def test_dag_stochastic_em_with_both_options_raises_the_evidence():
    """Funk's soft normalisation and the state-usage option on a DAG: the estimated
    log-evidence of the training data rises, and the parameters stay valid."""
    teacher = _random_params(hs.TreeNet(**DAG), 11, conc=0.3)
    X, _ = teacher.sample(1500, random_state=0)
    net = hs.TreeNet(**DAG, learn="stochastic-em", soft_normalization=True, balance=1.0,
                     n_iter=8, random_state=0, n_samples=50)
    start = hs.TreeNet(**DAG, learn="stochastic-em", soft_normalization=True, n_iter=1,
                       learning_rate=1e-9, random_state=0, n_samples=50).fit(X)
    net.fit(X)
    assert net.score(X) > start.score(X) + 0.1 * len(X)
    net._params(net._structure())  # validates every table
    for v, u in net.usage_.items():
        assert u.sum() == pytest.approx(1.0) and np.all(u > 0), v


def test_soft_normalization_error_is_clipped():
    """Funk's soft rule predicts the unnormalised product; where that product is far above
    one the error is clipped to [-1, 1] (the normalised rule's range), elsewhere it is
    posterior minus product."""
    net = _random_params(hs.TreeNet(**DAG), 0)
    net.weights_["a->c"] = net.weights_["a->c"] * 50.0  # products far above one
    x = np.array([2, 1, 0])
    s, weights, prior, draw = _draw_for(net, x, [1, 0, 2])
    c = s.names.index("c")
    g_w, _ = funk.gradients(s, weights, prior, draw, soft_normalization=True)
    e = s.edge_index[(s.names.index("a"), c)]
    pred = net.weights_["a->c"][1] * net.weights_["b->c"][0]
    np.testing.assert_allclose(g_w[e][1], np.clip(draw.cond[c][0] - pred, -1, 1))
    assert np.any(draw.cond[c][0] - pred < -1)  # the clip was needed
    x_row = s.names.index("x2")
    e_x = s.edge_index[(s.names.index("a"), x_row)]
    np.testing.assert_allclose(g_w[e_x][1], draw.cond[x_row][0] - net.weights_["a->x2"][1])

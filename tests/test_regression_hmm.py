"""RegressionHMM: regression emissions (linear, AR, logistic) and input-driven transitions.

Every number is checked against something that could disagree: enumeration of the state
paths on tiny models (likelihood, posteriors, decoding, with per-step transition matrices
and the rows an AR model conditions on), closed forms (weighted least squares, ridge, the
MNIW posterior), recovery of the parameters that generated the data, the generalised-EM
guarantee (the objective never decreases), the statistics of split data merged, and the
distributed fit equal to the local one.
"""

from __future__ import annotations

import numpy as np
import pytest
from brute_force import all_paths
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

import hiddenstate as hs
from hiddenstate.errors import InvalidInputError
from hiddenstate.inference import Sequences
from hiddenstate.learn import merge_statistics


# -- models used below --------------------------------------------------------------------
def _linear(K=2, D=1, M=1, n_lags=0, transitions="fixed", seed=0, **kw):
    rng = np.random.default_rng(seed)
    m = hs.RegressionHMM(K, n_lags=n_lags, transitions=transitions, **kw)
    m.startprob_ = rng.dirichlet(np.ones(K))
    m.transmat_ = 0.6 * np.eye(K) + 0.4 * rng.dirichlet(np.ones(K), size=K)
    m.coef_ = rng.normal(scale=0.5, size=(K, D, M + n_lags * D))
    m.intercept_ = rng.normal(scale=2.0, size=(K, D))
    A = rng.normal(size=(K, D, D))
    m.covars_ = np.einsum("kij,klj->kil", A, A) + 0.5 * np.eye(D)
    if transitions == "softmax":
        tc = rng.normal(size=(K, K, M))
        tc[np.arange(K), np.arange(K)] = 0.0
        m.transition_coef_ = tc
    return m


def _logistic(K=2, C=3, M=2, transitions="fixed", seed=0):
    rng = np.random.default_rng(seed)
    m = hs.RegressionHMM(K, emission="logistic", transitions=transitions)
    m.startprob_ = rng.dirichlet(np.ones(K))
    m.transmat_ = 0.6 * np.eye(K) + 0.4 * rng.dirichlet(np.ones(K), size=K)
    coef = rng.normal(scale=1.5, size=(K, C, M))
    coef[:, 0] = 0.0
    intercept = rng.normal(size=(K, C))
    intercept[:, 0] = 0.0
    m.coef_, m.intercept_ = coef, intercept
    if transitions == "softmax":
        tc = rng.normal(size=(K, K, M))
        tc[np.arange(K), np.arange(K)] = 0.0
        m.transition_coef_ = tc
    return m


# -- brute force --------------------------------------------------------------------------
def _emission_logs(m, x, u, t):
    """log p(x_t | z = k, design) by hand (scipy), for every state."""
    K, p = m.n_states, m.n_lags
    ue = u[t, m._columns("emission", u.shape[1])]
    out = np.empty(K)
    for k in range(K):
        if m.emission == "linear":
            lags = np.concatenate([x[t - lag] for lag in range(1, p + 1)]) if p else []
            phi = np.concatenate([ue, lags])
            mean = m.coef_[k] @ phi + m.intercept_[k]
            out[k] = multivariate_normal(mean, m.covars_[k]).logpdf(x[t])
        else:
            logits = m.coef_[k] @ ue + m.intercept_[k]
            out[k] = logits[int(x[t])] - logsumexp(logits)
    return out


def _transition(m, u, t):
    """The matrix of the move into row t, by hand."""
    if m.transitions == "fixed":
        return m.transmat_
    logits = np.log(m.transmat_) + m.transition_coef_ @ u[t, m._columns("transition",
                                                                         u.shape[1])]
    return np.exp(logits - logsumexp(logits, axis=1, keepdims=True))


def _enumerate(m, x, u):
    """log p(x), the state posteriors and the Viterbi path of one sequence (rows before
    n_lags: conditioned on, no state)."""
    p = m.n_lags
    T = len(x) - p
    K = m.n_states
    log_e = np.array([_emission_logs(m, x, u, t) for t in range(p, len(x))])
    paths = all_paths(K, T)
    lp = np.log(m.startprob_)[paths[:, 0]] + log_e[0, paths[:, 0]]
    for s in range(1, T):
        A = _transition(m, u, p + s)
        lp = lp + np.log(A)[paths[:, s - 1], paths[:, s]] + log_e[s, paths[:, s]]
    ll = logsumexp(lp)
    w = np.exp(lp - ll)
    gamma = np.zeros((T, K))
    for s in range(T):
        np.add.at(gamma[s], paths[:, s], w)
    return ll, gamma, paths[np.argmax(lp)], lp.max()


def _split_inputs():
    """Emissions read input 0 and 2, transitions input 1."""
    m = _linear(K=2, D=1, M=2, n_lags=1, transitions="softmax", seed=3)
    m.set_params(emission_inputs=[0, 2], transition_inputs=[1])
    rng = np.random.default_rng(4)
    m.coef_ = rng.normal(size=(2, 1, 3))
    m.transition_coef_ = np.array([[[0.0], [2.0]], [[-1.0], [0.0]]])
    return m


CASES = {
    "linear": lambda: _linear(D=2, M=1),
    "ar2": lambda: _linear(D=1, M=0, n_lags=2),
    "ar1-inputs-softmax": lambda: _linear(K=3, D=2, M=2, n_lags=1, transitions="softmax"),
    "logistic": lambda: _logistic(C=3),
    "logistic-softmax": lambda: _logistic(C=2, transitions="softmax"),
    "split-inputs": _split_inputs,
}


def _data(m, lengths, seed=5):
    rng = np.random.default_rng(seed)
    M = m.n_inputs_
    xs, us = [], []
    for n in lengths:
        u = rng.normal(size=(n, M))
        x, _ = m.sample(n, random_state=int(rng.integers(1 << 30)), inputs=u if M else None,
                        history=rng.normal(size=(m.n_lags, m.n_features_)) if m.n_lags
                        else None)
        xs.append(x)
        us.append(u)
    return np.concatenate(xs), np.concatenate(us), list(lengths)


@pytest.mark.parametrize("name", list(CASES))
def test_scores_posteriors_and_paths_equal_enumeration(name):
    m = CASES[name]()
    X, U, lengths = _data(m, [5, 6, 4])
    kw = {"inputs": U} if m.n_inputs_ else {}
    scores = m.score_samples(X, lengths, **kw)
    post = m.predict_proba(X, lengths, **kw)
    logp, path = m.decode(X, lengths, **kw)
    filtered = m.filter_proba(X, lengths, **kw)
    bounds = np.r_[0, np.cumsum(lengths)]
    best = 0.0
    for s, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        x = X[a:b] if m.emission == "linear" else X[a:b, 0]
        ll, gamma, vit, top = _enumerate(m, x, U[a:b])
        np.testing.assert_allclose(scores[s], ll, rtol=1e-10)
        np.testing.assert_allclose(post[a + m.n_lags:b], gamma, atol=1e-10)
        assert np.all(np.isnan(post[a:a + m.n_lags]))
        np.testing.assert_array_equal(path[a + m.n_lags:b], vit)
        assert np.all(path[a:a + m.n_lags] == -1)
        np.testing.assert_allclose(filtered[b - 1], gamma[-1], atol=1e-10)  # last: smoothed
        best += top
    np.testing.assert_allclose(logp, best, rtol=1e-10)


# -- closed forms -------------------------------------------------------------------------
def _one_state(**kw):
    rng = np.random.default_rng(3)
    u = rng.normal(size=(200, 2))
    y = u @ np.array([[1.0, -2.0], [0.5, 0.3]]).T + np.array([3.0, -1.0]) \
        + rng.normal(scale=0.3, size=(200, 2))
    return hs.RegressionHMM(1, n_iter=1, tol=-np.inf, random_state=0, **kw).fit(
        y, inputs=u), y, u


def test_em_with_one_state_is_least_squares_and_the_residual_covariance():
    m, y, u = _one_state()
    design = np.column_stack([u, np.ones(len(u))])
    W, *_ = np.linalg.lstsq(design, y, rcond=None)
    np.testing.assert_allclose(m.coef_[0], W[:2].T, rtol=1e-10)
    np.testing.assert_allclose(m.intercept_[0], W[2], rtol=1e-10)
    resid = y - design @ W
    np.testing.assert_allclose(m.covars_[0], resid.T @ resid / len(y), rtol=1e-10)


def test_map_with_one_state_is_the_mode_of_the_mniw_posterior():
    kappa, psi, nu = 5.0, 0.7, 4.0
    m, y, u = _one_state(learn="map", coef_weight=kappa, coef_prior=0.2, covars_prior=psi,
                         covars_weight=nu)
    D = 2
    design = np.column_stack([u, np.ones(len(u))])
    M0 = np.column_stack([np.full((D, 2), 0.2), y.mean(axis=0)])   # intercept: data mean
    L0 = kappa * np.eye(3)
    Ln = L0 + design.T @ design
    Mn = (M0 @ L0 + y.T @ design) @ np.linalg.inv(Ln)
    scatter = (psi * np.eye(D) + y.T @ y + M0 @ L0 @ M0.T - Mn @ Ln @ Mn.T)
    cov = scatter / (len(y) + nu - D - 1 + 3)
    np.testing.assert_allclose(m.coef_[0], Mn[:, :2], rtol=1e-9)
    np.testing.assert_allclose(m.intercept_[0], Mn[:, 2], rtol=1e-9)
    np.testing.assert_allclose(m.covars_[0], cov, rtol=1e-9)


def test_a_series_far_from_the_origin_is_fitted_as_the_same_series_near_it():
    """Statistics about the column means: an AR(1) of a level of 1e7 with unit moves
    gives the coefficients and variance of the same series near 0 (the raw moments
    would have lost ~14 of 16 digits)."""
    near = _linear(K=2, D=1, M=0, n_lags=1, seed=1)
    near.coef_ = np.array([[[0.5]], [[-0.3]]])
    X, _ = near.sample(800, random_state=0)
    a = hs.RegressionHMM(2, n_lags=1, random_state=0, tol=-np.inf, n_iter=30).fit(X)
    b = hs.RegressionHMM(2, n_lags=1, random_state=0, tol=-np.inf, n_iter=30).fit(X + 1e7)
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-6)
    np.testing.assert_allclose(b.covars_, a.covars_, rtol=1e-6)
    # the intercept absorbs the shift: c' = c + 1e7 (1 - phi)
    np.testing.assert_allclose(b.intercept_, a.intercept_ + 1e7 * (1 - a.coef_[..., 0]),
                               rtol=1e-9)


# -- learning -----------------------------------------------------------------------------
@pytest.mark.parametrize("learn", ["em", "map"])
@pytest.mark.parametrize("name", ["logistic-softmax", "ar1-inputs-softmax", "logistic"])
def test_generalised_em_never_decreases_its_objective(name, learn):
    teacher = CASES[name]()
    X, U, lengths = _data(teacher, [150, 100])
    m = hs.RegressionHMM(teacher.n_states, emission=teacher.emission, n_lags=teacher.n_lags,
                         transitions=teacher.transitions, learn=learn, n_iter=25,
                         tol=-np.inf, random_state=1)
    m.fit(X, lengths, inputs=U)
    h = np.array(m.monitor_.history)
    assert len(h) == 25
    assert np.all(np.diff(h) >= -1e-10 * np.abs(h[1:])), np.diff(h).min()
    if learn == "em":  # recorded: log p(X) at the last iteration's start; fitted: after it
        assert m.score(X, lengths, inputs=U) >= h[-1] - 1e-10 * abs(h[-1])


def _recovered(teacher, T, **fit):
    X, U, lengths = _data(teacher, [T], seed=11)
    m = hs.RegressionHMM(teacher.n_states, emission=teacher.emission, n_lags=teacher.n_lags,
                         transitions=teacher.transitions, random_state=0, n_init=3,
                         **fit).fit(X, lengths, inputs=U if U.shape[1] else None)
    # align the states by their intercepts (distinct in the teachers below)
    order = np.argsort(m.intercept_[:, -1])
    ref = np.argsort(teacher.intercept_[:, -1])
    perm = np.empty_like(order)
    perm[ref] = order
    return m, perm


def test_linear_regression_and_ar_parameters_are_recovered():
    t = _linear(K=2, D=2, M=1, n_lags=1, seed=4)
    t.intercept_ = np.array([[-3.0, 0.0], [3.0, 1.0]])
    t.coef_ = np.array([[[0.8, 0.5, 0.0], [-0.4, 0.0, 0.3]], [[-1.0, -0.5, 0.2], [0.6, 0.1, 0.0]]])
    t.transmat_ = np.array([[0.95, 0.05], [0.05, 0.95]])
    m, perm = _recovered(t, 4000)
    np.testing.assert_allclose(m.coef_[perm], t.coef_, atol=0.06)
    np.testing.assert_allclose(m.intercept_[perm], t.intercept_, atol=0.25)
    np.testing.assert_allclose(m.covars_[perm], t.covars_, rtol=0.12, atol=0.05)
    np.testing.assert_allclose(m.transmat_[np.ix_(perm, perm)], t.transmat_, atol=0.02)


def test_glm_hmm_with_input_driven_transitions_is_recovered():
    t = _logistic(K=2, C=2, M=2, transitions="softmax", seed=2)
    t.coef_ = np.array([[[0, 0], [3.0, 0.0]], [[0, 0], [0.0, -3.0]]])
    t.intercept_ = np.array([[0.0, -1.0], [0.0, 1.0]])
    t.transmat_ = np.array([[0.9, 0.1], [0.1, 0.9]])
    t.transition_coef_ = np.array([[[0, 0], [1.5, 0]], [[0, -1.5], [0, 0]]], float)
    m, perm = _recovered(t, 6000)
    np.testing.assert_allclose(m.coef_[perm], t.coef_, rtol=0.15, atol=0.1)
    np.testing.assert_allclose(m.transition_coef_[np.ix_(perm, perm)], t.transition_coef_,
                               rtol=0.15, atol=0.2)   # ~3 standard errors
    np.testing.assert_allclose(m.transmat_[np.ix_(perm, perm)], t.transmat_, atol=0.04)


def test_categorical_glm_hmm_is_recovered_with_map():
    t = _logistic(K=2, C=3, M=1, seed=6)
    t.intercept_ = np.array([[0.0, -2.0, 1.0], [0.0, 2.0, -1.0]])
    t.coef_ = np.array([[[0.0], [2.0], [-1.0]], [[0.0], [-2.0], [1.0]]])
    t.transmat_ = np.array([[0.95, 0.05], [0.05, 0.95]])
    m, perm = _recovered(t, 5000, learn="map")
    np.testing.assert_allclose(m.coef_[perm], t.coef_, atol=0.3)
    np.testing.assert_allclose(m.intercept_[perm], t.intercept_, atol=0.3)


def test_vb_of_an_ar_hmm_raises_its_bound_and_agrees_with_map_on_much_data():
    t = _linear(K=2, D=1, M=0, n_lags=2, seed=7)
    t.intercept_ = np.array([[-2.0], [2.0]])
    t.transmat_ = np.array([[0.97, 0.03], [0.03, 0.97]])
    X, _, _ = _data(t, [3000], seed=1)
    vb = hs.RegressionHMM(2, n_lags=2, learn="vb", random_state=0, n_iter=60,
                          tol=-np.inf).fit(X)
    h = np.array(vb.monitor_.history)
    assert np.all(np.diff(h) >= -1e-9 * np.abs(h[1:]))
    mp = hs.RegressionHMM(2, n_lags=2, learn="map", random_state=0).fit(X)
    order = np.argsort(vb.intercept_[:, 0])
    other = np.argsort(mp.intercept_[:, 0])
    np.testing.assert_allclose(vb.coef_[order], mp.coef_[other], atol=0.01)
    np.testing.assert_allclose(vb.covars_[order], mp.covars_[other], rtol=0.01)
    np.testing.assert_allclose(vb.coef_[order], t.coef_, atol=0.06)   # the AR(2) teacher
    np.testing.assert_allclose(vb.intercept_[order], t.intercept_, atol=0.15)
    assert {"coef_posterior_", "precision_posterior_", "scale_posterior_",
            "dof_posterior_"} <= set(vars(vb))


# -- missing values and bad inputs --------------------------------------------------------
def test_a_missing_row_has_no_emission_term():
    m = _linear(D=2, M=1)
    X, U, lengths = _data(m, [6])
    Xm = X.copy()
    Xm[3] = np.nan
    ll, gamma, _, _ = _enumerate_missing(m, Xm, U)
    np.testing.assert_allclose(m.score(Xm, inputs=U), ll, rtol=1e-10)
    np.testing.assert_allclose(m.predict_proba(Xm, inputs=U), gamma, atol=1e-10)
    # EM with missing rows is EM on the observed ones: it never decreases the observed-data
    # log-likelihood, and it recovers what the full data give
    X, U, lengths = _data(m, [400, 300], seed=6)
    Xm = X.copy()
    Xm[np.random.default_rng(7).random(len(X)) < 0.1] = np.nan
    kw = {"random_state": 0, "n_iter": 40, "tol": -np.inf}
    full = hs.RegressionHMM(2, **kw).fit(X, lengths, inputs=U)
    holes = hs.RegressionHMM(2, **kw).fit(Xm, lengths, inputs=U)
    assert np.all(np.diff(holes.monitor_.history) >= -1e-9 * abs(holes.monitor_.history[-1]))
    order_f, order_h = np.argsort(full.intercept_[:, 0]), np.argsort(holes.intercept_[:, 0])
    np.testing.assert_allclose(holes.coef_[order_h], full.coef_[order_f], atol=0.1)


def _enumerate_missing(m, X, U):
    keep = ~np.isnan(X[:, 0])
    K, T = m.n_states, len(X)
    log_e = np.zeros((T, K))
    log_e[keep] = np.array([_emission_logs(m, X, U, t) for t in np.flatnonzero(keep)])
    paths = all_paths(K, T)
    lp = np.log(m.startprob_)[paths[:, 0]] + log_e[0, paths[:, 0]]
    for s in range(1, T):
        lp = lp + np.log(m.transmat_)[paths[:, s - 1], paths[:, s]] + log_e[s, paths[:, s]]
    ll = logsumexp(lp)
    gamma = np.zeros((T, K))
    for s in range(T):
        np.add.at(gamma[s], paths[:, s], np.exp(lp - ll))
    return ll, gamma, None, None


@pytest.mark.parametrize(("make", "X", "kw", "match"), [
    (lambda: _linear(D=2, M=1), np.array([[1.0, np.nan], [0.0, 1.0]]),
     {"inputs": np.zeros((2, 1))}, "partly missing"),
    (lambda: _linear(D=1, M=0, n_lags=1), np.array([[1.0], [np.nan], [0.0]]), {}, "n_lags"),
    (lambda: _linear(D=1, M=1), np.zeros((3, 1)), {"inputs": [[0.0], [np.nan], [1.0]]},
     "inputs: nan at row 1"),
    (lambda: _linear(D=1, M=1), np.zeros((3, 1)), {}, "inputs: the model regresses"),
    (lambda: _linear(D=1, M=0, n_lags=1), np.zeros((3, 1)), {"inputs": np.zeros((3, 1))},
     "fitted without inputs"),
    (lambda: _linear(D=1, M=1), np.zeros((3, 1)), {"inputs": np.zeros((2, 1))}, "2 rows"),
    (lambda: _linear(D=1, M=0, n_lags=2), np.zeros((5, 1)), {"lengths": [3, 2]},
     "sequence 1 has 2"),
    (lambda: _logistic(C=2, M=2), np.array([0, 1, 2]), {"inputs": np.zeros((3, 2))},
     "out of range"),
])
def test_bad_data_and_inputs_are_refused_naming_the_argument(make, X, kw, match):
    m = make()
    lengths = kw.pop("lengths", None)
    with pytest.raises(InvalidInputError, match=match):
        m.score(X, lengths, **kw)


@pytest.mark.parametrize(("hyper", "match"), [
    ({"emission": "logistic", "learn": "vb"}, "learn: 'vb'"),
    ({"transitions": "softmax", "learn": "vb"}, "learn: 'vb'"),
    ({"transitions": "softmax", "learn": "kvt"}, "learn: 'kvt'"),
    ({"emission": "logistic", "n_lags": 1}, "n_lags"),
    ({"learn": "online-em"}, "learn"),
    ({"coef_weight": 1.0}, "coef_weight: priors are not used"),
    ({"emission": "logistic", "learn": "map", "covars_prior": 1.0}, "covars_prior"),
    ({"learn": "map", "coef_weight": -1.0}, "coef_weight: must be non-negative"),
    ({"transitions": "softmax"}, "inputs: transitions='softmax'"),
])
def test_impossible_combinations_are_refused_at_fit(hyper, match):
    with pytest.raises(InvalidInputError, match=match):
        hs.RegressionHMM(2, **hyper).fit(np.zeros((10, 1)) + np.arange(10)[:, None] % 2)


@pytest.mark.parametrize(("hyper", "blocks", "instead"), [
    ({}, ["linear-regression emissions have a conjugate prior", "no posterior draw"],
     "use learn='vb'"),
    ({"emission": "logistic"}, ["logistic-regression emissions", "no conjugate prior"],
     "use learn='map'"),
    ({"transitions": "softmax"}, ["softmax transitions", "no conjugate prior"],
     "use learn='map'"),
    ({"emission": "logistic", "transitions": "softmax"},
     ["logistic-regression emissions", "softmax transitions"], "use learn='map'"),
])
def test_gibbs_is_refused_naming_the_block_without_a_conjugate_draw(hyper, blocks, instead):
    """Before any data are read (the message names learn, the blocks and what to use)."""
    with pytest.raises(InvalidInputError) as err:
        hs.RegressionHMM(2, learn="gibbs", **hyper).fit(np.zeros((10, 1)))
    text = str(err.value)
    assert text.startswith("learn: 'gibbs'")
    for words in (*blocks, instead):
        assert words in text


# -- statistics merge; distributed --------------------------------------------------------
@pytest.mark.parametrize("name", ["linear", "ar1-inputs-softmax", "logistic-softmax"])
def test_statistics_of_split_data_merge_into_those_of_the_whole(name):
    m = CASES[name]()
    X, U, lengths = _data(m, [20, 30, 25, 15])
    d = m._design(X, lengths, U if m.n_inputs_ else None, m.n_features_, m.n_inputs_)
    family = m.emission_family(m.n_features_, d.Z, n_inputs=d.n_inputs)
    views = m._params()

    def stats(parts):
        rows = np.concatenate([np.arange(d.seqs.bounds[s], d.seqs.bounds[s + 1])
                               for s in parts])
        seqs = Sequences.from_lengths(d.seqs.lengths[parts])
        problem = m.problem(family, d.Z[rows], seqs, U=d.U[rows])
        return problem, problem.expected_counts(views)

    whole_problem, (ll, whole) = stats(np.arange(4))
    _, (ll_a, a) = stats(np.array([0, 2]))
    _, (ll_b, b) = stats(np.array([1, 3]))
    merged = merge_statistics(whole_problem.blocks, a, b)
    np.testing.assert_allclose(ll_a + ll_b, ll, rtol=1e-12)
    _assert_same_stats(merged, whole, whole_problem)


def _assert_same_stats(merged, whole, problem):
    """Sums equal to 1e-12; row statistics equal as multisets (the order of the rows)."""
    for name in whole:
        a, b = merged[name], whole[name]
        if not isinstance(b, dict):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
            continue
        for key in b:
            if key in ("post", "phi", "r") and np.ndim(b[key]) == 2:
                key_a = np.lexsort(np.asarray(a[key]).T)
                key_b = np.lexsort(np.asarray(b[key]).T)
                np.testing.assert_allclose(np.asarray(a[key])[key_a],
                                           np.asarray(b[key])[key_b], rtol=1e-12, atol=1e-13)
            else:
                np.testing.assert_allclose(a[key], b[key], rtol=1e-12, atol=1e-10)


def test_distributed_fit_of_an_ar_hmm_equals_the_local_fit():
    hsd = pytest.importorskip("hiddenstate.distributed")
    pytest.importorskip("distributed")
    t = _linear(K=2, D=1, M=0, n_lags=2, seed=8)
    X, _, lengths = _data(t, [120, 80, 100, 90])
    local = hs.RegressionHMM(2, n_lags=2, random_state=0, n_iter=15, tol=-np.inf).fit(
        X, lengths)
    with hsd.local_client(1, processes=False) as client:
        remote = hsd.fit(hs.RegressionHMM(2, n_lags=2, random_state=0, n_iter=15,
                                          tol=-np.inf), X, client, lengths=lengths,
                         n_partitions=2)
    for attr in ("startprob_", "transmat_", "coef_", "intercept_", "covars_"):
        np.testing.assert_allclose(getattr(remote, attr), getattr(local, attr), rtol=1e-12,
                                   atol=1e-13, err_msg=attr)
    np.testing.assert_allclose(remote.monitor_.history, local.monitor_.history, rtol=1e-12)


def test_distributed_fit_refuses_a_model_that_needs_inputs_and_sample_weights():
    hsd = pytest.importorskip("hiddenstate.distributed")
    pytest.importorskip("distributed")
    X = np.random.default_rng(0).normal(size=(40, 1))
    with hsd.local_client(1, processes=False) as client:
        with pytest.raises(InvalidInputError, match="inputs"):
            hsd.fit(hs.RegressionHMM(2, transitions="softmax"), X, client, lengths=[20, 20])
        with pytest.raises(InvalidInputError, match="sample_weight"):
            hsd.fit(hs.RegressionHMM(2), X, client, lengths=[20, 20],
                    sample_weight=[1.0, 2.0])


# -- sampling -----------------------------------------------------------------------------
def test_sample_follows_the_input_driven_chain_and_the_history():
    m = _linear(K=2, D=1, M=1, n_lags=1, transitions="softmax", seed=9)
    m.transition_coef_ = np.array([[[0.0], [50.0]], [[-50.0], [0.0]]])   # input decides
    m.covars_ = np.full((2, 1, 1), 1e-12)
    u = np.array([[1.0], [1.0], [-1.0], [1.0], [-1.0]])
    X, z = m.sample(5, random_state=0, inputs=u, history=[[2.0]])
    np.testing.assert_array_equal(z[1:], [1, 0, 1, 0])
    lag = 2.0
    for t in range(5):   # noiseless: each draw is its state's regression on its lag
        k = z[t]
        np.testing.assert_allclose(X[t, 0], m.coef_[k, 0] @ [u[t, 0], lag]
                                   + m.intercept_[k, 0], atol=1e-4)
        lag = X[t, 0]


def test_fit_warns_before_replacing_parameters_set_by_hand():
    """As the HMM (issue 30, item 5): a hand-set value that init_params replaces warns,
    naming it and the init_params that keeps it; the fit's own values refit silently."""
    import warnings

    from hiddenstate.errors import ParameterOverwriteWarning

    t = _linear(D=1, M=0, n_lags=1)
    X, _, _ = _data(t, [200])
    m = hs.RegressionHMM(2, n_lags=1, n_iter=3, random_state=0)
    m.transmat_ = [[0.5, 0.5], [0.5, 0.5]]
    with pytest.warns(ParameterOverwriteWarning, match="init_params='src'"):
        m.fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ParameterOverwriteWarning)
        m.fit(X)                          # its own values: silent
        kept = hs.RegressionHMM(2, n_lags=1, n_iter=3, random_state=0, init_params="src",
                                params="src")
        kept.transmat_ = [[0.5, 0.5], [0.5, 0.5]]
        kept.fit(X)
    np.testing.assert_array_equal(kept.transmat_, [[0.5, 0.5], [0.5, 0.5]])


@pytest.mark.parametrize("name", ["ar1-inputs-softmax", "logistic-softmax", "ar2"])
def test_a_fit_is_the_same_on_one_and_on_two_threads(name, monkeypatch):
    """Every kernel call parallel (the thresholds at 0), as tests/test_threads.py does for
    the HMM: the time-varying chain and the regression table give the same numbers."""
    from hiddenstate import threads

    monkeypatch.setattr(threads, "PARALLEL_SECONDS", 0.0)
    monkeypatch.setattr(threads, "BUSY_PARALLEL_SECONDS", 0.0)
    monkeypatch.setattr(threads, "_default", 2)
    teacher = CASES[name]()
    X, U, lengths = _data(teacher, list(np.random.default_rng(1).integers(40, 300, 20)))
    kw = {"inputs": U} if teacher.n_inputs_ else {}
    fits = []
    for n_threads in (1, 2):
        with threads.limit(n_threads):
            m = hs.RegressionHMM(2, emission=teacher.emission, n_lags=teacher.n_lags,
                                 transitions=teacher.transitions, n_iter=6, tol=-np.inf,
                                 random_state=0).fit(X, lengths, **kw)
            fits.append((m.monitor_.history, m.coef_, m.score_samples(X, lengths, **kw),
                         m.predict(X, lengths, **kw), m.filter_proba(X, lengths, **kw)))
    for a, b in zip(*fits, strict=True):
        np.testing.assert_array_equal(a, b)

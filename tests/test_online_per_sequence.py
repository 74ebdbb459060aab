"""Per-sequence online learners (BWO, Baldi-Chauvin, BOnA, MPA): each update against an
independent computation (one EM step of the batch estimator, finite differences of the
log-likelihood, brute-force Dirichlet integrals over every hidden path), learning a teacher,
bit-identical checkpoints, and the refusals."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from scipy.special import digamma, gammaln

from hiddenstate import HMM, inference
from hiddenstate.errors import InvalidInputError
from hiddenstate.families import CategoricalEmissions, PoissonEmissions
from hiddenstate.learn.online.per_sequence import (
    PER_SEQUENCE_LEARNERS,
    BaldiChauvin,
    BaumWelchOnline,
    BayesianOnline,
    MeanPosterior,
    _Layout,
    mixture_posterior,
    solve_mean_log,
)
from hiddenstate.metrics import kl_divergence

LEARNERS = {
    "bwo": lambda: BaumWelchOnline(eta=0.01),
    "baldi-chauvin": lambda: BaldiChauvin(eta=0.05),
    "bona": lambda: BayesianOnline(),
    "mpa": lambda: MeanPosterior(),
}


def _random_theta(rng, K, W, conc=1.0):
    return {"startprob": rng.dirichlet(np.full(K, conc)),
            "transmat": rng.dirichlet(np.full(K, conc), size=K),
            "emission": {"emissionprob": rng.dirichlet(np.full(W, conc), size=K)}}


def _sample(theta, n, T, rng):
    """``n`` sequences of length ``T`` from the HMM ``theta``, as an (n, T) array."""
    A, B = theta["transmat"], theta["emission"]["emissionprob"]
    z = rng.choice(len(theta["startprob"]), size=n, p=theta["startprob"])
    y = np.empty((n, T), dtype=np.int64)
    for t in range(T):
        if t:
            z = (rng.random(n)[:, None] > np.cumsum(A[z], axis=1)).sum(axis=1)
        y[:, t] = (rng.random(n)[:, None] > np.cumsum(B[z], axis=1)).sum(axis=1)
    return np.minimum(y, B.shape[1] - 1)


def _kl(p, q, T):
    """Exact KL(p || q) between the distributions over the sequences of length T."""
    def as_tuple(th):
        return th["startprob"], th["transmat"], th["emission"]["emissionprob"]

    return kl_divergence(as_tuple(p), as_tuple(q), T)


# -- Baum-Welch online -------------------------------------------------------------------------
@pytest.mark.parametrize("eta", [1.0, 0.3])
def test_bwo_is_a_step_toward_one_em_step(eta):
    rng = np.random.default_rng(0)
    K, W = 3, 4
    theta = _random_theta(rng, K, W)
    x = rng.integers(0, W, size=7)
    fam = CategoricalEmissions(K, W)
    learner = BaumWelchOnline(eta=eta)
    state = learner.update(learner.start(theta, fam, rng), x, np.array([7]), fam)
    got = learner.params(state, fam)
    # one EM iteration of the batch estimator on the same sequence
    hmm = HMM(n_states=K, n_features=W, learn="em", n_iter=1, tol=-np.inf, init_params="")
    hmm.startprob_ = theta["startprob"]
    hmm.transmat_ = theta["transmat"]
    hmm.emissionprob_ = theta["emission"]["emissionprob"]
    hmm.fit(x[:, None])
    for name, old, em in [("startprob", theta["startprob"], hmm.startprob_),
                          ("transmat", theta["transmat"], hmm.transmat_),
                          ("emissionprob", theta["emission"]["emissionprob"], hmm.emissionprob_)]:
        new = got["emission"][name] if name == "emissionprob" else got[name]
        np.testing.assert_allclose(new, (1 - eta) * old + eta * em, rtol=1e-12, atol=1e-15)


# -- Baldi-Chauvin -----------------------------------------------------------------------------
def test_baldi_chauvin_is_a_gradient_step_of_the_log_likelihood():
    rng = np.random.default_rng(1)
    K, W, T = 2, 3, 5
    eta, lam = 0.3, 1.7
    theta = _random_theta(rng, K, W)
    x = rng.integers(0, W, size=T)
    fam = CategoricalEmissions(K, W)
    learner = BaldiChauvin(eta=eta, lam=lam)
    state = learner.start(theta, fam, rng)
    new = learner.update(state, x, np.array([T]), fam)
    seqs = inference.Sequences.from_lengths(np.array([T]))

    def loglik(st):
        th = learner.params(st, fam)
        return inference.log_likelihood(th["startprob"], th["transmat"],
                                        fam.table(th["emission"], x), seqs)[0]

    h = 1e-6
    for key in ("w_startprob", "w_transmat", "w_emissionprob"):
        grad = np.empty_like(state[key])
        for idx in np.ndindex(state[key].shape):
            plus, minus = dict(state), dict(state)
            plus[key] = state[key].copy()
            minus[key] = state[key].copy()
            plus[key][idx] += h
            minus[key][idx] -= h
            grad[idx] = (loglik(plus) - loglik(minus)) / (2 * h)
        np.testing.assert_allclose((new[key] - state[key]) / (eta / lam), grad,
                                   rtol=1e-6, atol=1e-8)


# -- the exact mixture posterior (BOnA, MPA) ----------------------------------------------------
def _brute_force_moments(u_pi, u_A, u_B, x):
    """Posterior moments of every parameter by Dirichlet integrals, path by path.

    G(n) = sum_q prod_r B(u_r + c_r(q) + n_r) / B(u_r) = E_prior[theta^n P(x | theta)];
    <theta_rj> = G(e_rj)/G(0), <theta_rj^2> = G(2 e_rj)/G(0), <ln theta_rj> by a central
    difference of ln G(eps e_rj) in eps (no digamma function involved).
    """
    K, W = u_B.shape
    T = len(x)

    def log_beta(a):
        return np.sum(gammaln(a)) - gammaln(np.sum(a))

    rows = [u_pi] + list(u_A) + list(u_B)
    paths = list(itertools.product(range(K), repeat=T))
    path_counts = []
    for q in paths:
        c = [np.zeros(K)] + [np.zeros(K) for _ in range(K)] + [np.zeros(W) for _ in range(K)]
        c[0][q[0]] += 1
        for t in range(1, T):
            c[1 + q[t - 1]][q[t]] += 1
        for t in range(T):
            c[1 + K + q[t]][x[t]] += 1
        path_counts.append(c)

    def log_G(r=None, j=None, e=0.0):
        terms = []
        for c in path_counts:
            s = 0.0
            for i, (u, ci) in enumerate(zip(rows, c, strict=True)):
                n = ci.copy()
                if i == r:
                    n[j] += e
                s += log_beta(u + n) - log_beta(u)
            terms.append(s)
        terms = np.array(terms)
        top = terms.max()
        return top + np.log(np.sum(np.exp(terms - top)))

    g0 = log_G()
    out = {"mean": [], "sq": [], "mean_log": []}
    eps = 1e-5
    for r, u in enumerate(rows):
        for j in range(len(u)):
            out["mean"].append(np.exp(log_G(r, j, 1.0) - g0))
            out["sq"].append(np.exp(log_G(r, j, 2.0) - g0))
            out["mean_log"].append((log_G(r, j, eps) - log_G(r, j, -eps)) / (2 * eps))
    return {k: np.array(v) for k, v in out.items()}


def _tiny_case(seed=2, K=2, W=3, T=3):
    rng = np.random.default_rng(seed)
    u_pi = rng.uniform(0.5, 3, K)
    u_A = rng.uniform(0.5, 3, (K, K))
    u_B = rng.uniform(0.5, 3, (K, W))
    x = rng.integers(0, W, size=T)
    return u_pi, u_A, u_B, x


def test_mixture_posterior_moments_match_brute_force():
    u_pi, u_A, u_B, x = _tiny_case()
    K, W = u_B.shape
    layout = _Layout(K, W)
    u = layout.flat(u_pi, u_A, u_B)
    post = mixture_posterior(u, layout, x, 10**5, ("mean_log", "mean", "total_var"))
    brute = _brute_force_moments(u_pi, u_A, u_B, x)
    np.testing.assert_allclose(post["mean"], brute["mean"], rtol=1e-12)
    np.testing.assert_allclose(post["mean_log"], brute["mean_log"], rtol=1e-7, atol=1e-8)
    var = layout.row_sums(brute["sq"] - brute["mean"] ** 2)
    np.testing.assert_allclose(post["total_var"], var, rtol=1e-10)
    # the evidence: p(x) under the prior predictive, a sum over paths of Beta-function ratios
    assert post["log_evidence"] < 0


def test_mixture_posterior_against_monte_carlo():
    """A fully independent check: prior draws importance-weighted by P(x | theta), summed
    over the K**T paths directly (loose tolerance: Monte Carlo)."""
    u_pi, u_A, u_B, x = _tiny_case(seed=3, T=2)
    K, W = u_B.shape
    rng = np.random.default_rng(4)
    n = 200_000
    pis = rng.dirichlet(u_pi, size=n)
    As = np.stack([rng.dirichlet(u_A[i], size=n) for i in range(K)], axis=1)
    Bs = np.stack([rng.dirichlet(u_B[i], size=n) for i in range(K)], axis=1)
    lik = np.zeros(n)
    for q1, q2 in itertools.product(range(K), repeat=2):
        lik += pis[:, q1] * Bs[:, q1, x[0]] * As[:, q1, q2] * Bs[:, q2, x[1]]
    w = lik / lik.sum()
    layout = _Layout(K, W)
    post = mixture_posterior(layout.flat(u_pi, u_A, u_B), layout, x, 10**5, ("mean",))
    mc = layout.flat(w @ pis, np.einsum("s,sij->ij", w, As), np.einsum("s,sij->ij", w, Bs))
    np.testing.assert_allclose(post["mean"], mc, atol=0.005)


def test_bona_projection_solves_the_digamma_system():
    u_pi, u_A, u_B, x = _tiny_case(seed=5, T=4)
    K, W = u_B.shape
    fam = CategoricalEmissions(K, W)
    learner = BayesianOnline()
    state = {"u_startprob": u_pi, "u_transmat": u_A, "u_emissionprob": u_B,
             "prior_startprob": u_pi, "prior_transmat": u_A, "prior_emissionprob": u_B,
             "n_sequences": 0}
    new = learner.update(state, x, np.array([len(x)]), fam)
    layout = _Layout(K, W)
    target = mixture_posterior(layout.flat(u_pi, u_A, u_B), layout, x, 10**5,
                               ("mean_log",))["mean_log"]
    u = layout.flat(new["u_startprob"], new["u_transmat"], new["u_emissionprob"])
    residual = digamma(u) - digamma(layout.row_sums(u))[layout.row] - target
    assert np.max(np.abs(residual)) < 1e-10
    brute = _brute_force_moments(u_pi, u_A, u_B, x)["mean_log"]
    np.testing.assert_allclose(target, brute, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("scale", [0.02, 1.0, 300.0, 1e5])
def test_solve_mean_log_recovers_dirichlets(scale):
    rng = np.random.default_rng(int(scale * 7) % 1000)
    sizes = [2, 3, 7]
    u_true = np.concatenate([scale * rng.uniform(0.2, 5, n) for n in sizes])
    starts = np.cumsum([0] + sizes[:-1])
    row = np.repeat(np.arange(3), sizes)
    m = digamma(u_true) - digamma(np.add.reduceat(u_true, starts))[row]
    u = solve_mean_log(m, starts, np.ones_like(u_true))
    residual = digamma(u) - digamma(np.add.reduceat(u, starts))[row] - m
    assert np.max(np.abs(residual)) < 1e-10
    np.testing.assert_allclose(u, u_true, rtol=1e-6)


def test_mpa_matches_the_mixture_mean_and_variance():
    u_pi, u_A, u_B, x = _tiny_case(seed=6, T=3)
    K, W = u_B.shape
    fam = CategoricalEmissions(K, W)
    learner = MeanPosterior()
    state = {"u_startprob": u_pi, "u_transmat": u_A, "u_emissionprob": u_B,
             "prior_startprob": u_pi, "prior_transmat": u_A, "prior_emissionprob": u_B,
             "n_sequences": 0}
    new = learner.update(state, x, np.array([len(x)]), fam)
    layout = _Layout(K, W)
    u = layout.flat(new["u_startprob"], new["u_transmat"], new["u_emissionprob"])
    u0 = layout.row_sums(u)
    mean = u / u0[layout.row]
    brute = _brute_force_moments(u_pi, u_A, u_B, x)
    np.testing.assert_allclose(mean, brute["mean"], rtol=1e-13)
    dir_var = layout.row_sums(mean * (1 - mean)) / (u0 + 1)
    np.testing.assert_allclose(dir_var, layout.row_sums(brute["sq"] - brute["mean"] ** 2),
                               rtol=1e-10)
    theta = learner.params(new, fam)
    np.testing.assert_allclose(theta["emission"]["emissionprob"],
                               brute["mean"][K + K * K:].reshape(K, W), rtol=1e-13)


@pytest.mark.parametrize("cls", [BayesianOnline, MeanPosterior])
@pytest.mark.parametrize("forgetting", [1.0, 0.9])
def test_bayesian_update_is_exact_when_the_path_is_known(cls, forgetting):
    """Emissions with structural zeros that reveal the state: one path has all the weight and
    both projections must give Bayes' rule, u + c (after forgetting)."""
    K, W = 2, 4
    B = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.25, 0.75]])
    theta = {"startprob": np.array([0.3, 0.7]), "transmat": np.array([[0.6, 0.4], [0.2, 0.8]]),
             "emission": {"emissionprob": B}}
    fam = CategoricalEmissions(K, W)
    learner = cls(prior_count=5.0, forgetting=forgetting)
    state = learner.start(theta, fam, np.random.default_rng(0))
    state = learner.update(state, np.array([0, 1, 3]), np.array([3]), fam)  # path 0 0 1
    before = {k: v.copy() for k, v in state.items() if k.startswith("u_")}
    new = learner.update(state, np.array([2, 0, 3]), np.array([3]), fam)  # path 1 0 1
    c_pi = np.array([0.0, 1.0])
    c_A = np.array([[0.0, 1.0], [1.0, 0.0]])
    c_B = np.array([[1.0, 0, 0, 0], [0, 0, 1.0, 1.0]])
    for key, c in [("startprob", c_pi), ("transmat", c_A), ("emissionprob", c_B)]:
        prior = state["prior_" + key]
        expect = prior + forgetting * (before["u_" + key] - prior) + c
        np.testing.assert_allclose(new["u_" + key], expect, rtol=1e-9)
    assert np.all(new["u_emissionprob"][B == 0] == 0)  # structural zeros stay zero


# -- learning a teacher and resuming ------------------------------------------------------------
@pytest.mark.parametrize("name", list(LEARNERS))
def test_learns_a_random_teacher(name):
    """n = 2 states, m = 3 symbols, T = 2: the KL divergence to the teacher (over the nine
    sequences) falls by at least a factor 10 over 3000 sequences."""
    K, W, T, n = 2, 3, 2, 3000
    rng = np.random.default_rng(11)
    teacher = _random_theta(rng, K, W)
    data = _sample(teacher, n, T, rng)
    student = _random_theta(np.random.default_rng(12), K, W)
    fam = CategoricalEmissions(K, W)
    learner = LEARNERS[name]()
    state = learner.start(student, fam, rng)
    kl0 = _kl(teacher, learner.params(state, fam), T)
    state = learner.update(state, data.ravel(), np.full(n, T), fam)
    kl1 = _kl(teacher, learner.params(state, fam), T)
    assert state["n_sequences"] == n
    assert kl1 < kl0 / 10, (kl0, kl1)


def _save(state, path):
    arrays = {k: v for k, v in state.items() if isinstance(v, np.ndarray)}
    scalars = {k: v for k, v in state.items() if not isinstance(v, np.ndarray)}
    np.savez(path / "state.npz", **arrays)
    (path / "state.json").write_text(json.dumps(scalars))


def _load(path):
    with np.load(path / "state.npz") as f:
        state = {k: f[k] for k in f.files}
    state.update(json.loads((path / "state.json").read_text()))
    return state


@pytest.mark.parametrize("name", list(LEARNERS))
def test_checkpoint_resumes_bit_identically(name, tmp_path):
    K, W, T, n = 2, 3, 3, 400
    rng = np.random.default_rng(21)
    teacher = _random_theta(rng, K, W)
    data = _sample(teacher, n, T, rng)
    student = _random_theta(np.random.default_rng(22), K, W, conc=5.0)
    fam = CategoricalEmissions(K, W)
    learner = LEARNERS[name]()
    lengths = np.full(n, T)
    straight = learner.update(learner.start(student, fam, rng), data.ravel(), lengths, fam)
    half = n // 2
    first = learner.update(learner.start(student, fam, rng), data[:half].ravel(),
                           lengths[:half], fam)
    _save(first, tmp_path)
    resumed = learner.update(_load(tmp_path), data[half:].ravel(), lengths[half:], fam)
    assert set(resumed) == set(straight)
    for key in straight:
        if isinstance(straight[key], np.ndarray):
            assert np.array_equal(resumed[key], straight[key]), key
        else:
            assert resumed[key] == straight[key], key


# -- refusals ------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [BayesianOnline, MeanPosterior])
def test_too_many_paths_is_refused(cls):
    K, W = 2, 3
    fam = CategoricalEmissions(K, W)
    rng = np.random.default_rng(0)
    learner = cls(max_paths=100)
    state = learner.start(_random_theta(rng, K, W), fam, rng)
    ok = learner.update(state, rng.integers(0, W, 6), np.array([6]), fam)  # 64 paths
    assert ok["n_sequences"] == 1
    with pytest.raises(InvalidInputError) as err:
        learner.update(state, rng.integers(0, W, 9), np.array([2, 7]), fam)  # 128 paths
    msg = str(err.value)
    for needle in ("max_paths=100", "2**7 = 128", "online-em", "bwo", "baldi-chauvin"):
        assert needle in msg


@pytest.mark.parametrize("name", list(LEARNERS))
def test_continues_and_other_families_are_refused(name):
    K, W = 2, 3
    fam = CategoricalEmissions(K, W)
    rng = np.random.default_rng(0)
    learner = LEARNERS[name]()
    assert learner.name == name
    state = learner.start(_random_theta(rng, K, W), fam, rng)
    with pytest.raises(InvalidInputError, match="continues"):
        learner.update(state, np.array([0, 1]), np.array([2]), fam, continues=True)
    with pytest.raises(InvalidInputError, match="categorical"):
        learner.update(state, np.array([0, 1]), np.array([2]), PoissonEmissions(K, 1))
    with pytest.raises(InvalidInputError, match="out of range"):
        learner.update(state, np.array([0, 3]), np.array([2]), fam)
    assert PER_SEQUENCE_LEARNERS[name] is type(learner)


@pytest.mark.parametrize("learner, arg", [(BaumWelchOnline(eta=1.5), "eta"),
                                          (BaldiChauvin(lam=0.0), "lam"),
                                          (BayesianOnline(forgetting=0.0), "forgetting"),
                                          (MeanPosterior(prior_count=-1), "prior_count")])
def test_bad_hyper_parameters_are_named(learner, arg):
    rng = np.random.default_rng(0)
    fam = CategoricalEmissions(2, 3)
    with pytest.raises(InvalidInputError, match=arg):
        learner.start(_random_theta(rng, 2, 3), fam, rng)

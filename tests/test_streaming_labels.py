"""Partial state labels and several categorical features per step in the streaming learners
(online EM, BWO, Baldi-Chauvin, BOnA, MPA), against enumeration of the state paths on tiny
models (K = 2-3, T <= 5), a direct (non-lazy) transcription of online EM, and the
single-feature learners (one feature)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from brute_force import dataset_posteriors
from scipy.special import digamma, gammaln
from scipy.stats import norm
from test_partial_labels import _clamped

import hiddenstate as hs
from hiddenstate.errors import InvalidInputError, ZeroProbabilityError
from hiddenstate.families import CategoricalEmissions, GaussianEmissions, estimate_rows
from hiddenstate.families.multicategorical import MultiCategoricalEmissions
from hiddenstate.learn.online import (
    BaldiChauvin,
    BaumWelchOnline,
    BayesianOnline,
    MeanPosterior,
    OnlineEM,
)
from hiddenstate.learn.online.online_em import PRIOR_MASS
from hiddenstate.learn.online.per_sequence import _Layout, mixture_posterior

K = 3
ALPHABETS = (3, 2)
# two sequences (5 and 4 steps); a missing entry of feature 1 and one of feature 0
X2 = np.array([[0, 1], [2, 0], [1, -1], [0, 0], [2, 1],
               [1, 1], [-1, 0], [0, 1], [2, 0]])
LENGTHS = [5, 4]
LABELS = np.array([-1, 2, -1, 0, -1, 1, -1, -1, 2])


def _theta(seed: int, alphabets=ALPHABETS) -> dict:
    rng = np.random.default_rng(seed)
    B = np.zeros((len(alphabets), K, max(alphabets)))
    for f, W in enumerate(alphabets):
        B[f, :, :W] = rng.dirichlet(np.ones(W), size=K)
    return {"startprob": rng.dirichlet(np.ones(K)), "transmat": rng.dirichlet(np.ones(K), K),
            "emission": {"emissionprob": B}}


def _log_e(B: np.ndarray, X: np.ndarray) -> np.ndarray:
    """log p(x_t | z_t = k): the sum over the observed features (product likelihood)."""
    out = np.zeros((len(X), K))
    for f in range(X.shape[1]):
        seen = X[:, f] >= 0
        out[seen] += np.log(B[f][:, X[seen, f]].T)
    return out




def _multi(theta):
    return MultiCategoricalEmissions(K, ALPHABETS), theta


def _single(theta, f=0):
    """Feature ``f`` alone as a plain categorical model."""
    W = ALPHABETS[f]
    th = {**theta, "emission": {"emissionprob": theta["emission"]["emissionprob"][f, :, :W]}}
    return CategoricalEmissions(K, W), th


# -- online EM -----------------------------------------------------------------------------------
@pytest.mark.parametrize("features", ["one", "two"])
def test_online_em_filter_with_labels_is_the_clamped_enumeration(features):
    """Before the first M-step the parameters are fixed: the prequential log-probabilities
    of a sequence add up to log p(x, z_L) (enumeration over the paths that agree with the
    labels) and the filter at its end is the clamped posterior of its last step."""
    theta = _theta(0)
    if features == "one":
        fam, th = _single(theta)
        X = X2[:, 0].copy()
        log_e = np.log(th["emission"]["emissionprob"][:, np.maximum(X, 0)].T)
        log_e[X < 0] = 0.0
    else:
        fam, th = _multi(theta)
        X = X2
        log_e = _log_e(theta["emission"]["emissionprob"], X)
    learner = OnlineEM(warmup=100)
    log_pred = np.empty(len(X))
    state = learner.update(learner.start(th, fam), X, LENGTHS, fam, log_pred=log_pred,
                           states=LABELS)
    ref = dataset_posteriors(th["startprob"], th["transmat"], _clamped(log_e, LABELS), LENGTHS)
    got = np.add.reduceat(log_pred, [0, 5])
    np.testing.assert_allclose(got, ref["loglik"], rtol=1e-12)
    np.testing.assert_allclose(state["phi"], ref["gamma"][-1], rtol=1e-12, atol=1e-15)
    assert state["phi"][LABELS[-1]] == 1.0
    # without labels the same sums are the unclamped likelihoods: the labels did something
    free = learner.update(learner.start(th, fam), X, LENGTHS, fam, log_pred=log_pred)
    unclamped = dataset_posteriors(th["startprob"], th["transmat"], log_e, LENGTHS)
    np.testing.assert_allclose(np.add.reduceat(log_pred, [0, 5]), unclamped["loglik"],
                               rtol=1e-12)
    assert np.all(unclamped["loglik"] > ref["loglik"] + 0.1)
    assert not np.allclose(free["phi"], state["phi"])


def test_online_em_gaussian_filter_with_labels_is_the_clamped_enumeration():
    rng = np.random.default_rng(3)
    means, sd = np.array([[-1.0], [0.5], [2.0]]), np.array([1.0, 0.7, 1.5])
    fam = GaussianEmissions(K, 1, covariance_type="diag")
    X = rng.normal(0.5, 1.5, size=(9, 1))
    theta = {"startprob": np.array([0.5, 0.3, 0.2]),
             "transmat": rng.dirichlet(np.ones(K), K),
             "emission": {"means": means, "covars": sd[:, None] ** 2}}
    log_e = norm(means[:, 0], sd).logpdf(X)
    learner = OnlineEM(warmup=100)
    log_pred = np.empty(len(X))
    state = learner.update(learner.start(theta, fam), X, LENGTHS, fam, log_pred=log_pred,
                           states=LABELS)
    ref = dataset_posteriors(theta["startprob"], theta["transmat"], _clamped(log_e, LABELS),
                             LENGTHS)
    np.testing.assert_allclose(np.add.reduceat(log_pred, [0, 5]), ref["loglik"], rtol=1e-12)
    np.testing.assert_allclose(state["phi"], ref["gamma"][-1], rtol=1e-12, atol=1e-15)


def direct_online_em(theta, X, lengths, labels, alphabets, *, warmup, block_avg_start=None,
                     step_exponent=0.6):
    """Cappé's recursions written out with full auxiliaries (one ``(K, W_f, K)`` emission
    auxiliary per feature), the emission of every non-label state set to zero by hand at
    the labelled steps; the M-step after every observation t >= max(warmup, 1) with
    :func:`estimate_rows` and the learner's default priors; Polyak-Ruppert averages of the
    iterates from ``block_avg_start`` on."""
    pi = theta["startprob"].copy()
    A = theta["transmat"].copy()
    B = [theta["emission"]["emissionprob"][f, :, :W].copy() for f, W in enumerate(alphabets)]
    at = 1 + PRIOR_MASS / K
    starts = np.zeros(len(X), dtype=bool)
    starts[np.concatenate(([0], np.cumsum(lengths)[:-1]))] = True
    phi = pi.copy()
    rho_q = np.zeros((K, K, K))
    rho_g = [np.zeros((K, W, K)) for W in alphabets]
    sums, n_avg, log_pred = None, 0, []
    for n in range(len(X)):
        t = n + 1
        b = np.ones(K)
        for f in range(len(alphabets)):
            if X[n, f] >= 0:
                b = b * B[f][:, X[n, f]]
        if labels[n] >= 0:  # by hand: the other states cannot emit
            b = np.where(np.arange(K) == labels[n], b, 0.0)
        if starts[n]:
            pred, R = pi.copy(), np.repeat(phi[:, None], K, axis=1)
        else:
            pred = phi @ A
            R = phi[:, None] * A / pred[None, :]
        phin = pred * b
        log_pred.append(np.log(phin.sum()))
        phin /= phin.sum()
        gam = float(t) ** (-step_exponent)
        rho_q = (1 - gam) * np.einsum("ijm,mk->ijk", rho_q, R)
        if not starts[n]:
            for j in range(K):
                rho_q[:, j, j] += gam * R[:, j]
        for f in range(len(alphabets)):
            rho_g[f] = (1 - gam) * np.einsum("iwm,mk->iwk", rho_g[f], R)
            if X[n, f] >= 0:
                for k in range(K):
                    rho_g[f][k, X[n, f], k] += gam
        if t >= max(warmup, 1):
            A = estimate_rows(rho_q @ phin, A, at)[0]
            B = [estimate_rows(rho_g[f] @ phin, B[f], 1 + PRIOR_MASS / W)[0]
                 for f, W in enumerate(alphabets)]
        if block_avg_start is not None and t >= max(block_avg_start, warmup, 1):
            it = [A, *B]
            sums = [s + v for s, v in zip(sums, it, strict=True)] if sums else [
                v.copy() for v in it]
            n_avg += 1
        phi = phin
    out = {"transmat": A, "emission": B, "phi": phi, "log_pred": np.array(log_pred)}
    if sums:
        out["avg"] = {"transmat": sums[0] / n_avg, "emission": [s / n_avg for s in sums[1:]]}
    return out


def _stream(seed, n_seq=12, T=25):
    """A longer labelled stream with missing entries, from a random 3-state teacher."""
    rng = np.random.default_rng(seed)
    teacher = hs.HMM(K, init_params="")
    th = _theta(seed + 100)
    teacher.startprob_, teacher.transmat_ = th["startprob"], th["transmat"]
    teacher.emissionprob_ = th["emission"]["emissionprob"]
    teacher.n_features_ = ALPHABETS
    X, z = teacher.sample(n_seq * T, random_state=seed)
    X[rng.random(X.shape) < 0.1] = -1
    labels = np.where(rng.random(len(z)) < 0.2, z, -1)
    return X, np.full(n_seq, T), labels


@pytest.mark.parametrize("averaging", [False, True])
def test_online_em_two_features_with_labels_matches_the_direct_transcription(averaging):
    """The lazy kernel (window of 8 steps: many flushes; per-feature normalisers and
    averaging trees) against the direct transcription, with labels and missing entries,
    fed in three calls (one cut inside a sequence)."""
    X, lengths, labels = _stream(1)
    theta = _theta(2)
    fam = MultiCategoricalEmissions(K, ALPHABETS)
    learner = OnlineEM(warmup=5, block=8, averaging=averaging)
    state = learner.start(theta, fam)
    log_pred = np.empty(len(X))
    cuts = [(0, 100, [25] * 4), (100, 160, [25, 25, 10]), (160, 300, [15] + [25] * 5)]
    for i, (lo, hi, lens) in enumerate(cuts):
        state = learner.update(state, X[lo:hi], lens, fam, continues=i == 2,
                               log_pred=log_pred[lo:hi], states=labels[lo:hi])
    ref = direct_online_em(theta, X, lengths, labels, ALPHABETS, warmup=5,
                           block_avg_start=5 if averaging else None)
    np.testing.assert_allclose(log_pred, ref["log_pred"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(state["phi"], ref["phi"], atol=1e-9)
    got = learner.params(state, fam)
    want = ref["avg"] if averaging else ref
    np.testing.assert_allclose(got["transmat"], want["transmat"], atol=1e-9)
    for f, W in enumerate(ALPHABETS):
        np.testing.assert_allclose(got["emission"]["emissionprob"][f, :, :W],
                                   want["emission"][f], rtol=1e-9, atol=1e-12)
        assert np.all(got["emission"]["emissionprob"][f, :, W:] == 0.0)
    np.testing.assert_allclose(got["emission"]["emissionprob"].sum(axis=2), 1.0, atol=1e-12)


# -- one feature: the multi-feature learners are the single-feature ones -----------------------
LEARNERS = {
    "online-em": lambda: OnlineEM(warmup=3, block=4, averaging=True),
    "bwo": lambda: BaumWelchOnline(eta=0.3),
    "baldi-chauvin": lambda: BaldiChauvin(eta=0.3, lam=1.3),
    "bona": lambda: BayesianOnline(),
    "mpa": lambda: MeanPosterior(),
}


@pytest.mark.parametrize("name", list(LEARNERS))
def test_one_feature_equals_the_single_feature_learner(name):
    """MultiCategoricalEmissions with F = 1 against CategoricalEmissions on the same
    symbols and labels: bit-identical for online EM, BOnA and MPA (the same arithmetic);
    BWO and Baldi-Chauvin run forward-backward on a per-row table instead of the per-symbol
    one, so they agree to rounding."""
    rng = np.random.default_rng(7)
    W = 3
    theta = _theta(8, (W,))
    x = rng.integers(0, W, size=20)
    x[[3, 11]] = -1
    labels = np.where(rng.random(20) < 0.3, rng.integers(0, K, 20), -1)
    lengths = [5, 5, 4, 5, 1]
    multi, single = MultiCategoricalEmissions(K, (W,)), CategoricalEmissions(K, W)
    th1 = {**theta, "emission": {"emissionprob": theta["emission"]["emissionprob"][0]}}
    learner = LEARNERS[name]()
    a = learner.params(learner.update(learner.start(theta, multi), x[:, None], lengths, multi,
                                      states=labels), multi)
    b = learner.params(learner.update(learner.start(th1, single), x, lengths, single,
                                      states=labels), single)
    exact = name in ("online-em", "bona", "mpa")
    for key in ("startprob", "transmat"):
        if exact:
            assert np.array_equal(a[key], b[key]), key
        else:
            np.testing.assert_allclose(a[key], b[key], rtol=1e-13, atol=1e-15)
    if exact:
        assert np.array_equal(a["emission"]["emissionprob"][0], b["emission"]["emissionprob"])
    else:
        np.testing.assert_allclose(a["emission"]["emissionprob"][0],
                                   b["emission"]["emissionprob"], rtol=1e-13, atol=1e-15)
    assert not np.allclose(b["transmat"], theta["transmat"])  # it learned something


# -- BWO and Baldi-Chauvin: one update from the clamped enumeration ------------------------------
def _one_sequence():
    return X2[:5], LABELS[:5]


def _expected_counts(theta, X, labels):
    """Start, transition and per-feature emission counts of one sequence by enumeration
    over the paths that agree with the labels."""
    B = theta["emission"]["emissionprob"]
    log_e = _clamped(_log_e(B, X), labels)
    ref = dataset_posteriors(theta["startprob"], theta["transmat"], log_e, [len(X)])
    emis = np.zeros_like(B)
    for f in range(X.shape[1]):
        for t in np.flatnonzero(X[:, f] >= 0):
            emis[f, :, X[t, f]] += ref["gamma"][t]
    return ref["start"], ref["trans"], emis


def test_bwo_one_update_with_labels_and_two_features_matches_enumeration():
    theta = _theta(4)
    fam = MultiCategoricalEmissions(K, ALPHABETS)
    X, labels = _one_sequence()
    eta = 0.4
    learner = BaumWelchOnline(eta=eta)
    got = learner.params(learner.update(learner.start(theta, fam), X, [5], fam,
                                        states=labels), fam)
    start, trans, emis = _expected_counts(theta, X, labels)
    for key, n, old in (("startprob", start, theta["startprob"]),
                        ("transmat", trans, theta["transmat"]),
                        ("emissionprob", emis, theta["emission"]["emissionprob"])):
        new = got["emission"][key] if key == "emissionprob" else got[key]
        want = (1 - eta) * old + eta * estimate_rows(n, old, 1.0)[0]
        np.testing.assert_allclose(new, want, rtol=1e-12, atol=1e-15)
    # the labels matter: the unclamped counts give another update
    free = learner.params(learner.update(learner.start(theta, fam), X, [5], fam), fam)
    assert not np.allclose(free["transmat"], got["transmat"], atol=1e-3)


def test_baldi_chauvin_one_update_with_labels_and_two_features_matches_enumeration():
    theta = _theta(5)
    fam = MultiCategoricalEmissions(K, ALPHABETS)
    X, labels = _one_sequence()
    eta, lam = 0.3, 1.7
    learner = BaldiChauvin(eta=eta, lam=lam)
    state = learner.start(theta, fam)
    new = learner.update(state, X, [5], fam, states=labels)
    start, trans, emis = _expected_counts(theta, X, labels)
    for key, n, p in (("startprob", start, theta["startprob"]),
                      ("transmat", trans, theta["transmat"]),
                      ("emissionprob", emis, theta["emission"]["emissionprob"])):
        w = state["w_" + key]
        want = np.where(np.isneginf(w), w, w + eta * (n - n.sum(axis=-1, keepdims=True) * p))
        np.testing.assert_allclose(new["w_" + key], want, rtol=1e-12, atol=1e-14)
    # padding past feature 1's two symbols stays a structural zero
    assert np.all(np.isneginf(new["w_emissionprob"][1, :, 2]))
    assert np.all(learner.params(new, fam)["emission"]["emissionprob"][1, :, 2] == 0.0)


# -- BOnA and MPA: the mixture over the label-consistent paths -----------------------------------
def _enumerated_mixture(u_pi, u_A, u_B, X, labels):
    """Weights and Dirichlet parameters of the exact posterior, path by path, over the
    paths that agree with ``labels``; rows: pi, A rows, then each feature's B rows."""
    F = X.shape[1]
    rows = [u_pi, *u_A] + [u_B[f][k] for f in range(F) for k in range(K)]
    logw, params = [], []
    for q in itertools.product(range(K), repeat=len(X)):
        if any(lab >= 0 and q[t] != lab for t, lab in enumerate(labels)):
            continue
        c = [np.zeros_like(r) for r in rows]
        c[0][q[0]] += 1
        for t in range(1, len(X)):
            c[1 + q[t - 1]][q[t]] += 1
        for f in range(F):
            for t in range(len(X)):
                if X[t, f] >= 0:
                    c[1 + K + f * K + q[t]][X[t, f]] += 1
        lw = sum(np.sum(gammaln(u + n)) - gammaln(np.sum(u + n))
                 - np.sum(gammaln(u)) + gammaln(np.sum(u)) for u, n in zip(rows, c, strict=True))
        logw.append(lw)
        params.append([u + n for u, n in zip(rows, c, strict=True)])
    logw = np.array(logw)
    top = logw.max()
    w = np.exp(logw - top)
    evidence = top + np.log(w.sum())
    return w / w.sum(), params, evidence


def _mixture_moments(w, params):
    """Posterior mean, <ln theta>, and total variance of each row."""
    n_rows = len(params[0])
    mean = [sum(wq * a / a.sum() for wq, a in zip(w, (p[r] for p in params), strict=True))
            for r in range(n_rows)]
    mean_log = [sum(wq * (digamma(a) - digamma(a.sum()))
                    for wq, a in zip(w, (p[r] for p in params), strict=True))
                for r in range(n_rows)]
    second = [sum(wq * a * (a + 1) / (a.sum() * (a.sum() + 1))
                  for wq, a in zip(w, (p[r] for p in params), strict=True))
              for r in range(n_rows)]
    total_var = np.array([np.sum(s - m * m) for s, m in zip(second, mean, strict=True)])
    return mean, mean_log, total_var


def _dirichlet_case(seed):
    rng = np.random.default_rng(seed)
    u_pi = rng.uniform(0.5, 3, K)
    u_A = rng.uniform(0.5, 3, (K, K))
    u_B = [rng.uniform(0.5, 3, (K, W)) for W in ALPHABETS]
    return u_pi, u_A, u_B


def test_mixture_posterior_with_labels_and_two_features_matches_enumeration():
    u_pi, u_A, u_B = _dirichlet_case(11)
    X, labels = _one_sequence()
    layout = _Layout(K, ALPHABETS, multi=True)
    Bpad = np.zeros((2, K, 3))
    for f, W in enumerate(ALPHABETS):
        Bpad[f, :, :W] = u_B[f]
    u = layout.flat(u_pi, u_A, Bpad)
    got = mixture_posterior(u, layout, X, 30, ("mean", "mean_log", "total_var"), labels)
    w, params, evidence = _enumerated_mixture(u_pi, u_A, u_B, X, labels)
    assert len(w) == K ** 3  # only the paths through the labels: 27 of 243
    mean, mean_log, total_var = _mixture_moments(w, params)
    assert got["log_evidence"] == pytest.approx(evidence, rel=1e-12)
    np.testing.assert_allclose(got["mean"], np.concatenate(mean), rtol=1e-12)
    np.testing.assert_allclose(got["mean_log"], np.concatenate(mean_log), rtol=1e-11)
    np.testing.assert_allclose(got["total_var"], total_var, rtol=1e-10)
    with pytest.raises(InvalidInputError, match="max_paths"):  # unlabelled: 243 paths
        mixture_posterior(u, layout, X, 30, ("mean",))


@pytest.mark.parametrize("cls", [MeanPosterior, BayesianOnline])
def test_bona_and_mpa_update_with_labels_and_two_features_matches_enumeration(cls):
    """One update from a prior centred on theta: MPA's rows have the enumerated mixture's
    mean and total variance, BOnA's its <ln theta>."""
    theta = _theta(6)
    fam = MultiCategoricalEmissions(K, ALPHABETS)
    X, labels = _one_sequence()
    learner = cls(prior_count=2.0, max_paths=30)
    state = learner.start(theta, fam)
    new = learner.update(state, X, [5], fam, states=labels)
    u_B = [state["u_emissionprob"][f, :, :W] for f, W in enumerate(ALPHABETS)]
    w, params, _ = _enumerated_mixture(state["u_startprob"], state["u_transmat"], u_B, X,
                                       labels)
    mean, mean_log, total_var = _mixture_moments(w, params)
    rows = [new["u_startprob"], *new["u_transmat"]] + [
        new["u_emissionprob"][f, k, :W] for f, W in enumerate(ALPHABETS) for k in range(K)]
    for r, u in enumerate(rows):
        if cls is MeanPosterior:
            np.testing.assert_allclose(u / u.sum(), mean[r], rtol=1e-11)
            s = u.sum()
            var = (1 - np.sum((u / s) ** 2)) / (s + 1)
            assert var == pytest.approx(total_var[r], rel=1e-9)
        else:
            np.testing.assert_allclose(digamma(u) - digamma(u.sum()), mean_log[r], rtol=1e-9,
                                       atol=1e-10)
    assert np.all(new["u_emissionprob"][1, :, 2] == 0.0)  # padding stays out
    # the default prior of a uniform row is Dirichlet(1, ..., 1) on its own alphabet
    flat = {**theta, "emission": {"emissionprob": np.array(
        [np.full((K, 3), 1 / 3), np.pad(np.full((K, 2), 0.5), ((0, 0), (0, 1)))])}}
    u = cls().start(flat, fam)["u_emissionprob"]
    assert np.allclose(u[0], 1.0) and np.allclose(u[1, :, :2], 1.0) and np.all(u[1, :, 2] == 0)
    with pytest.raises(InvalidInputError, match="max_paths"):  # without labels: 243 paths
        learner.update(state, X, [5], fam)


# -- the HMM: labels in fit and partial_fit, errors, checkpoints -------------------------------
OPTIONS = {"online-em": {"warmup": 3, "block": 4, "averaging": True}, "bwo": {"eta": 0.2},
           "baldi-chauvin": {"eta": 0.2}, "bona": {"max_paths": 3**5},
           "mpa": {"max_paths": 3**5}}


def _model(learn, **kw):
    return hs.HMM(K, learn=learn, random_state=0, learner_options=OPTIONS[learn], **kw)


@pytest.mark.parametrize("learn", list(OPTIONS))
def test_fit_with_labels_equals_the_learner_with_labels(learn):
    """fit(X, lengths, states=...) from parameters set by hand feeds the labels to the
    learner: the same parameters as the learner's own update with them, different ones
    from an unlabelled fit, and the same again when fed in two partial_fit calls."""
    X, lengths, labels = _stream(4, n_seq=6, T=5)
    theta = _theta(12)

    def model():
        m = _model(learn, init_params="", n_features=ALPHABETS)
        m.startprob_, m.transmat_ = theta["startprob"], theta["transmat"]
        m.emissionprob_ = theta["emission"]["emissionprob"]
        return m

    m = model().fit(X, lengths, states=labels)
    fam = MultiCategoricalEmissions(K, ALPHABETS)
    learner = m.make_learner()
    want = learner.params(learner.update(learner.start(theta, fam), X, lengths, fam,
                                         states=labels), fam)
    # (to rounding: the model renormalises the rows it is given)
    np.testing.assert_allclose(m.transmat_, want["transmat"], rtol=1e-13)
    np.testing.assert_allclose(m.emissionprob_, want["emission"]["emissionprob"], rtol=1e-13,
                               atol=1e-16)
    free = model().fit(X, lengths)
    assert not np.allclose(free.transmat_, m.transmat_, atol=1e-4)
    part = model()
    part.partial_fit(X[:15], lengths[:3], states=labels[:15])
    part.partial_fit(X[15:], lengths[3:], states=labels[15:])
    np.testing.assert_array_equal(part.transmat_, m.transmat_)
    np.testing.assert_array_equal(part.emissionprob_, m.emissionprob_)


@pytest.mark.parametrize("learn", list(OPTIONS))
def test_an_impossible_label_raises_zero_probability_as_batch(learn):
    """State 0 cannot emit symbol 0 of feature 0: labelling such a step 0 makes the
    sequence impossible, for the streaming learners as for batch EM."""
    theta = _theta(9)
    B = theta["emission"]["emissionprob"]
    B[0, 0] = [0.0, 0.5, 0.5]
    labels = np.full(5, -1)
    labels[3] = 0  # X2[3] = [0, 0]
    m = _model(learn, init_params="")
    m.startprob_, m.transmat_, m.emissionprob_ = theta["startprob"], theta["transmat"], B
    with pytest.raises(ZeroProbabilityError, match="^states: "):
        m.fit(X2[:5], [5], states=labels)
    batch = hs.HMM(K, init_params="", n_iter=1)
    batch.startprob_, batch.transmat_, batch.emissionprob_ = m.startprob_, m.transmat_, B
    with pytest.raises(ZeroProbabilityError, match="^states: "):
        batch.fit(X2[:5], [5], states=labels)
    labels[3] = 1  # a possible label: fine
    m.fit(X2[:5], [5], states=labels)


@pytest.mark.parametrize("learn", ["online-em", "bona"])
def test_bad_labels_name_the_argument(learn):
    m = _model(learn)
    with pytest.raises(InvalidInputError, match="^states: .*shape"):
        m.fit(X2, LENGTHS, states=LABELS[:-1])
    with pytest.raises(InvalidInputError, match="^states: .*0 .. 2"):
        m.fit(X2, LENGTHS, states=np.where(LABELS == 2, 3, LABELS))
    m.partial_fit(X2, LENGTHS, states=LABELS)
    with pytest.raises(InvalidInputError, match="^states: .*shape"):
        m.partial_fit(X2, LENGTHS, states=LABELS[:4])
    with pytest.raises(InvalidInputError, match="^states: .*0 .. 2"):
        m.partial_fit(X2, LENGTHS, states=LABELS - 2)
    with pytest.raises(InvalidInputError, match="^states: "):  # the learner itself, too
        m.make_learner().update(m.learner_state_, X2, LENGTHS,
                                m.emission_family(m.n_features_), states=LABELS[:3])


@pytest.mark.parametrize("learn", list(OPTIONS))
def test_multi_feature_checkpoint_resumes_bit_identically(learn, tmp_path):
    """save -> load (hiddenstate.load) -> partial_fit equals the uninterrupted stream, the
    learner's state included (online EM resumes inside a sequence)."""
    X, lengths, labels = _stream(5, n_seq=8, T=5)
    cut = 17 if learn == "online-em" else 15
    first = _model(learn).partial_fit(X[:cut], [5, 5, 5, 2][:3 + (cut == 17)],
                                      states=labels[:cut])
    first.save(tmp_path / "m")
    # the uninterrupted stream (the start looks at the first call's labels: the same cut)
    straight = _model(learn).partial_fit(X[:cut], [5, 5, 5, 2][:3 + (cut == 17)],
                                         states=labels[:cut])
    loaded = hs.load(tmp_path / "m")
    assert loaded.n_features_ == ALPHABETS
    for key, value in first.learner_state_.items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(loaded.learner_state_[key], value), key
        else:
            assert loaded.learner_state_[key] == value, key
    for m in (loaded, straight):
        if learn == "online-em":
            m.partial_fit(X[17:], [3, 5, 5, 5, 5], continues=True, states=labels[17:])
        else:
            m.partial_fit(X[15:], lengths[3:], states=labels[15:])
    np.testing.assert_array_equal(loaded.transmat_, straight.transmat_)
    np.testing.assert_array_equal(loaded.emissionprob_, straight.emissionprob_)
    for key, value in straight.learner_state_.items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(loaded.learner_state_[key], value), key


def test_a_tampered_multi_feature_state_is_refused(tmp_path):
    """The loader checks the per-feature normalisers of online EM's lazy scheme."""
    X, lengths, labels = _stream(6, n_seq=4, T=5)
    m = _model("online-em").fit(X, lengths, states=labels)
    state = dict(m.learner_state_)
    G = state["G"].copy()
    G[1] *= 1.5
    state["G"] = G
    m.learner_state_ = state
    with pytest.raises(InvalidInputError, match="learner_state_.G"):
        m.partial_fit(X[:5], [5])

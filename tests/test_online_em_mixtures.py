"""Online EM (Cappé 2011) with partly missing Gaussian rows and with Gaussian-mixture
emissions, against brute force on tiny models: the statistics of a stream under fixed
parameters by enumeration of every (state, component) path with the textbook conditional
Gaussian moments; every step (M-step after each row) against a direct transcription of
online EM on the equivalent HMM over the K*M (state, component) pairs with tied
transitions; n_mix=1 against the Gaussian learner; recovery of a GMM-HMM from a long
stream."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import multivariate_normal

import hiddenstate as hs
from hiddenstate.families import GaussianEmissions
from hiddenstate.families.gaussian import full_covars
from hiddenstate.families.gmm import GMMEmissions
from hiddenstate.learn.online.online_em import PRIOR_MASS, OnlineEM

COVARIANCE_TYPES = ["diag", "spherical", "full", "tied"]


# -- the model as (state, component) pairs --------------------------------------------------------
def _components(family, em):
    """``(weights (K, M), means (K, M, D), covs (K, M, D, D))`` of a Gaussian or GMM family."""
    K, D = family.n_states, family.n_features
    if isinstance(family, GMMEmissions):
        M = family.n_mix
        ct = family.covariance_type
        if ct == "tied":
            covs = np.repeat(em["covars"][:, None], M, axis=1)
        else:
            covs = full_covars(em["covars"].reshape(K * M, *em["covars"].shape[2:]), ct,
                               K * M, D).reshape(K, M, D, D)
        return em["weights"], em["means"], covs
    covs = full_covars(em["covars"], family.covariance_type, K, D)
    return np.ones((K, 1)), em["means"][:, None], covs[:, None]


def _conditional(x, mean, cov):
    """``(log N(x_o | mean_o, cov_oo), E[x | x_o], E[x x^T | x_o])`` (0, mean, cov + mean
    mean^T when nothing is observed), by the textbook formulas."""
    o = ~np.isnan(x)
    m = ~o
    if not o.any():
        return 0.0, mean.copy(), cov + np.outer(mean, mean)
    filled, C = x.copy(), np.zeros((len(x), len(x)))
    inv = np.linalg.inv(cov[np.ix_(o, o)])
    filled[m] = mean[m] + cov[np.ix_(m, o)] @ inv @ (x[o] - mean[o])
    C[np.ix_(m, m)] = cov[np.ix_(m, m)] - cov[np.ix_(m, o)] @ inv @ cov[np.ix_(o, m)]
    logp = multivariate_normal(mean[o], cov[np.ix_(o, o)]).logpdf(x[o])
    return logp, filled, C + np.outer(filled, filled)


def _pair_terms(family, em, x):
    """Per (state, component) of one row: log(w N(x_o)), E[x | x_o, pair], E[xx^T | ...]; a
    row with nothing observed has no emission term (and no statistic)."""
    w, mu, cov = _components(family, em)
    K, M = w.shape
    D = mu.shape[2]
    logb, e1, e2 = np.empty((K, M)), np.empty((K, M, D)), np.empty((K, M, D, D))
    for k, c in itertools.product(range(K), range(M)):
        lp, e1[k, c], e2[k, c] = _conditional(x, mu[k, c], cov[k, c])
        logb[k, c] = np.log(w[k, c]) + lp
    return logb, e1, e2


def _mstep(family, em, counts, s1, s2):
    """The family's M-step from raw per-component statistics (about the origin)."""
    K, M = counts.shape
    D = s1.shape[2]
    stats = {"post": counts.reshape(K * M), "obs": s1.reshape(K * M, D),
             "shift": np.zeros((K * M, D))}
    if family.covariance_type in ("diag", "spherical"):
        stats["obs**2"] = np.diagonal(s2, axis1=2, axis2=3).reshape(K * M, D)
    else:
        stats["obs*obs.T"] = s2.reshape(K * M, D, D)
    if not isinstance(family, GMMEmissions):
        stats = {key: value[:K] for key, value in stats.items()}
    return family.mstep(em, stats, "".join(family.letters))[0]


def _map_rows(S, alpha_minus_1):
    p = np.maximum(S + alpha_minus_1, 0.0)
    return p / p.sum(axis=1, keepdims=True)


def enumerate_stream(theta, family, X, w, prior=PRIOR_MASS):
    """One M-step from the statistics :math:`\\sum_s w_s E[s(x_s, z_s, c_s) \\mid y_{1:T}]`
    of one sequence under fixed parameters, by enumeration of every (state, component)
    path, the missing dimensions by their conditional moments given the pair. Online EM's
    first M-step after the last row has :math:`w_s = \\gamma_s \\prod_{s<u\\le T}
    (1-\\gamma_u)`; batch EM's, :math:`w_s = 1` (and no transition prior)."""
    pi, A, em = theta["startprob"], theta["transmat"], theta["emission"]
    T = len(X)
    terms = [_pair_terms(family, em, x) for x in X]
    K, M = terms[0][0].shape
    D = X.shape[1]
    pairs = list(itertools.product(range(K), range(M)))
    logps, paths = [], []
    for path in itertools.product(pairs, repeat=T):
        lp = np.log(pi[path[0][0]]) + terms[0][0][path[0]]
        for s in range(1, T):
            lp += np.log(A[path[s - 1][0], path[s][0]]) + terms[s][0][path[s]]
        logps.append(lp)
        paths.append(path)
    logps = np.array(logps)
    post = np.exp(logps - logps.max())
    post /= post.sum()
    counts, s1, s2 = np.zeros((K, M)), np.zeros((K, M, D)), np.zeros((K, M, D, D))
    trans = np.zeros((K, K))
    for p, path in zip(post, paths, strict=True):
        for s, (k, c) in enumerate(path):
            if not np.isnan(X[s]).all():
                counts[k, c] += p * w[s]
                s1[k, c] += p * w[s] * terms[s][1][k, c]
                s2[k, c] += p * w[s] * terms[s][2][k, c]
            if s:
                trans[path[s - 1][0], k] += p * w[s]
    new_A = _map_rows(trans, np.full((K, K), prior / K))
    return {"transmat": new_A, "emission": _mstep(family, em, counts, s1, s2),
            "post": post, "paths": paths, "terms": terms}


def direct_pairs(theta, family, X, *, step_exponent=0.6, warmup=1, states=None):
    """Cappé's online EM transcribed on the equivalent HMM over the K*M (state, component)
    pairs (start pi_k w_kc, transitions tau_kk' w_k'c': tied across components), every
    auxiliary over the pairs: the transition statistic of states (i, j), the emission
    statistics (1, E[x], E[xx^T]) of each pair given the row's observed part. M-step after
    every row t >= warmup: transitions as Dirichlet MAP rows, the emission by the family's
    M-step. ``states[t] >= 0``: a label, every pair of another state has emission 0 there.
    Returns the parameters and the prequential log-probabilities."""
    D = X.shape[1]

    def terms(em, x):
        logb, e1, e2 = _pair_terms(family, em, x)
        M = e1.shape[1]
        # the pair's emission density (its weight is in the start and transition terms)
        logb = logb.reshape(-1) - np.log(_components(family, em)[0].reshape(-1))
        stat = np.concatenate([np.ones((logb.size, 1)), e1.reshape(-1, D),
                               e2.reshape(-1, D * D)], axis=1)
        return logb, stat, M

    def mstep(em, Sg, K, M):
        return _mstep(family, em, Sg[:, 0].reshape(K, M), Sg[:, 1:1 + D].reshape(K, M, D),
                      Sg[:, 1 + D:].reshape(K, M, D, D))

    return direct_online_em(theta, X, terms, lambda em: _components(family, em)[0], mstep,
                            step_exponent=step_exponent, warmup=warmup, states=states)


def direct_online_em(theta, X, terms, weights, mstep, *, step_exponent=0.6, warmup=1,
                     states=None):
    """The recursions of :func:`direct_pairs` for any emission: ``terms(em, x)`` gives each
    pair's log emission density, its statistic vector and M; ``weights(em)`` the (K, M)
    component weights; ``mstep(em, Sg, K, M)`` the new emission parameters."""
    pi, A = theta["startprob"].copy(), theta["transmat"].copy()
    em = {key: np.array(value, dtype=float) for key, value in theta["emission"].items()}
    K = len(pi)
    phi = rho_q = rho_g = None
    log_pred = []
    for n, x in enumerate(X):
        t = n + 1
        wts = weights(em).reshape(-1)
        logb, stat, M = terms(em, x)
        KM = K * M
        state_of = np.repeat(np.arange(K), M)
        if rho_q is None:
            rho_q, rho_g = np.zeros((K, K, KM)), np.zeros((KM, stat.shape[1], KM))
        if states is not None and states[n] >= 0:
            logb[state_of != states[n]] = -np.inf
        top = logb.max()
        b = np.exp(logb - top)
        tau = np.repeat(np.repeat(A, M, axis=0), M, axis=1) * wts[None, :]
        if phi is None:  # the sequence starts
            pred = np.repeat(pi, M) * wts
            R = None
        else:
            pred = phi @ tau
            R = phi[:, None] * tau / pred[None, :]
        phin = pred * b
        log_pred.append(np.log(phin.sum()) + top)
        phin /= phin.sum()
        gam = float(t) ** (-step_exponent)
        if R is not None:
            rho_q = (1 - gam) * np.einsum("ijm,mk->ijk", rho_q, R)
            rho_g = (1 - gam) * np.einsum("ipm,mk->ipk", rho_g, R)
            for q in range(KM):  # the transition (i -> state of q), i summed over components
                rho_q[:, state_of[q], q] += gam * np.bincount(state_of, R[:, q], minlength=K)
        else:
            rho_q *= 1 - gam
            rho_g *= 1 - gam
        if not np.isnan(x).all():
            for q in range(KM):
                rho_g[q, :, q] += gam * stat[q]
        if t >= max(warmup, 1):
            A = _map_rows(rho_q @ phin, np.full((K, K), PRIOR_MASS / K))
            em = mstep(em, rho_g @ phin, K, M)
        phi = phin
    return {"transmat": A, "emission": em, "log_pred": np.array(log_pred)}


# -- tiny models ----------------------------------------------------------------------------------
def _model(ct, M, rng, D=2):
    """A K=2 model: a Gaussian family (M None) or a GMM with M components, with small
    conjugate priors so that every M-step is well defined."""
    K = 2
    kw = dict(covariance_type=ct, min_covar=1e-6, means_weight=0.1, means_prior=0.5,
              covars_prior=0.3, covars_weight=2.0 + (D if ct in ("full", "tied") else 0))
    shape = (K,) if M is None else (K, M)
    means = rng.normal(0.0, 1.5, (*shape, D))
    if ct == "spherical":
        covars = rng.uniform(0.5, 1.5, shape)
    elif ct == "diag":
        covars = rng.uniform(0.5, 1.5, (*shape, D))
    else:
        cov_shape = {("full", True): (K, D, D), ("tied", True): (D, D),
                     ("full", False): (K, M, D, D), ("tied", False): (K, D, D)}[ct, M is None]
        B = rng.normal(size=(*cov_shape[:-2], D, D))
        covars = B @ np.swapaxes(B, -1, -2) + 0.5 * np.eye(D)
    emission = {"means": means, "covars": covars}
    if M is None:
        family = GaussianEmissions(K, D, **kw)
    else:
        family = GMMEmissions(K, D, n_mix=M, **kw)
        emission["weights"] = rng.dirichlet(np.full(M, 3.0), K) if M > 1 else np.ones((K, 1))
    theta = {"startprob": np.array([0.6, 0.4]), "transmat": np.array([[0.8, 0.2], [0.3, 0.7]]),
             "emission": family.check_params(emission)}
    return family, theta


def _rows(rng, T, D, missing=True):
    X = rng.normal(0.0, 1.5, (T, D))
    if missing:
        X[1, 0] = np.nan           # partly missing
        X[2] = np.nan              # nothing observed
        X[3, 1:] = np.nan
    return X


def _assert_params(got, want, rtol=1e-9, atol=1e-10):
    np.testing.assert_allclose(got["transmat"], want["transmat"], rtol=rtol, atol=atol)
    for key, value in want["emission"].items():
        np.testing.assert_allclose(got["emission"][key], value, rtol=rtol, atol=atol,
                                   err_msg=key)


# -- 1. partly missing Gaussian rows --------------------------------------------------------------
@pytest.mark.parametrize("ct", COVARIANCE_TYPES)
@pytest.mark.parametrize("M", [None, 2])
def test_one_step_equals_enumeration(ct, M):
    """The first M-step of a stream with partly and wholly missing rows (warmup = T: the
    statistics are those of fixed parameters) equals brute-force enumeration."""
    rng = np.random.default_rng(COVARIANCE_TYPES.index(ct) + 10 * (M or 0))
    D = 3 if M is None else 2
    family, theta = _model(ct, M, rng, D=D)
    T = 5 if M is None else 4
    X = _rows(rng, T, D)
    learner = OnlineEM(warmup=T)
    state = learner.update(learner.start(theta, family), X, None, family)
    gammas = np.arange(1, T + 1, dtype=float) ** -0.6
    w = np.array([gammas[s] * np.prod(1 - gammas[s + 1:]) for s in range(T)])
    _assert_params(learner.params(state, family), enumerate_stream(theta, family, X, w))


@pytest.mark.parametrize("ct", COVARIANCE_TYPES)
@pytest.mark.parametrize("M", [None, 2])
def test_every_step_equals_online_em_over_pairs(ct, M):
    """M-steps after every row, a stream cut in two: the learner equals online EM written
    out on the (state, component) pairs, parameters and prequential log-probabilities."""
    rng = np.random.default_rng(7 + COVARIANCE_TYPES.index(ct) + 10 * (M or 0))
    family, theta = _model(ct, M, rng)
    X = _rows(rng, 24, 2)
    X[10:14, 0] = np.nan
    X[17, 1] = np.nan
    learner = OnlineEM(warmup=1)
    log_pred = np.empty(len(X))
    state = learner.start(theta, family)
    state = learner.update(state, X[:9], None, family, log_pred=log_pred[:9])
    state = learner.update(state, X[9:], None, family, continues=True, log_pred=log_pred[9:])
    ref = direct_pairs(theta, family, X)
    np.testing.assert_allclose(log_pred, ref["log_pred"], rtol=1e-9, atol=1e-12)
    _assert_params(learner.params(state, family), ref, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("M", [None, 2])
def test_labels_clamp_mixture_and_missing_rows(M):
    """Partial state labels clamp the step (every pair of another state has emission 0),
    for mixtures and partly missing rows alike: against the transcription over pairs."""
    rng = np.random.default_rng(17 + (M or 0))
    family, theta = _model("full", M, rng)
    X = _rows(rng, 16, 2)
    X[9, 1] = np.nan
    labels = np.full(len(X), -1)
    labels[[1, 4, 5, 9, 12]] = [0, 1, 1, 0, 1]
    learner = OnlineEM(warmup=1)
    log_pred = np.empty(len(X))
    state = learner.update(learner.start(theta, family), X, None, family, log_pred=log_pred,
                           states=labels)
    ref = direct_pairs(theta, family, X, states=labels)
    np.testing.assert_allclose(log_pred, ref["log_pred"], rtol=1e-9, atol=1e-12)
    _assert_params(learner.params(state, family), ref, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("ct", COVARIANCE_TYPES)
def test_complete_rows_unchanged_and_missing_rows_add_nothing(ct):
    """A complete row's expected statistic vector is bit for bit the kernel's own (complete
    rows still take the kernel's path, so a stream without missing entries is learned as
    before), and a row with nothing observed adds no emission term: log p = 0, and the
    emission statistics only decay, by 1 - gamma_t."""
    from hiddenstate.kernels.online_em import _dense_statistic
    from hiddenstate.learn.online import online_em as mod

    rng = np.random.default_rng(3)
    family, theta = _model(ct, None, rng)
    layout = mod._Layout(family)
    X = _rows(rng, 40, 2, missing=False) + 1e6
    frame = 1e6 + rng.normal(size=(2, 2))
    mine = mod._expected_statistics(family, theta["emission"], X[:5], frame, layout.kind)
    for n, k in itertools.product(range(5), range(2)):
        stat = np.empty(layout.P)
        _dense_statistic(layout.kind, X[n], frame[k], stat)
        np.testing.assert_array_equal(mine[n, k], stat)

    learner = OnlineEM(warmup=50)
    log_pred = np.empty(43)
    state = learner.update(learner.start(theta, family), X, None, family)
    after = learner.update(state, np.full((3, 2), np.nan), None, family, continues=True,
                           log_pred=log_pred[40:])
    np.testing.assert_allclose(log_pred[40:], 0.0, atol=1e-12)
    decay = np.prod(1 - np.arange(41, 44, dtype=float) ** -0.6)
    mass = [(s["rho_emission"][:, 0] @ s["phi"]).sum() for s in (state, after)]
    np.testing.assert_allclose(mass[1], decay * mass[0], rtol=1e-12)


@pytest.mark.parametrize("ct", ["diag", "full"])
def test_partly_missing_stream_through_the_estimator(ct):
    """hs.HMM(learn='online-em') takes partly missing Gaussian rows (30% of the entries),
    continues across calls bit for bit, and its Polyak-Ruppert average lands near batch EM
    on the same data: within 0.1 of batch EM's means (unit-variance data, 1500 rows; the
    raw iterate of step t**-0.6 remembers about 1500**0.6 = 80 rows, a standard error of
    about 0.15, so the average is compared; it measured 0.06)."""
    rng = np.random.default_rng(11)
    n = 1500
    z = (np.cumsum(rng.random(n) < 0.05) % 2).astype(int)
    X = rng.normal(0.0, 1.0, (n, 2)) + 3.0 * z[:, None]
    X[rng.random(X.shape) < 0.3] = np.nan

    def learner():
        m = hs.HMM(2, emission="gaussian", covariance_type=ct, learn="online-em",
                   init_params="", random_state=0, learner_options={"averaging": True})
        m.startprob_, m.transmat_ = [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]]
        m.means_ = [[0.5, 0.5], [2.5, 2.5]]
        m.covars_ = np.ones((2, 2)) if ct == "diag" else np.tile(np.eye(2), (2, 1, 1))
        return m

    m = learner().fit(X)
    two = learner().partial_fit(X[:700]).partial_fit(X[700:], continues=True)
    np.testing.assert_array_equal(two.means_, m.means_)
    np.testing.assert_array_equal(two.covars_, m.covars_)
    batch = hs.HMM(2, emission="gaussian", covariance_type=ct, random_state=0,
                   n_iter=50).fit(X)
    order = np.argsort(m.means_[:, 0]), np.argsort(batch.means_[:, 0])
    np.testing.assert_allclose(m.means_[order[0]], batch.means_[order[1]], atol=0.1)


# -- 2. Gaussian-mixture emissions ----------------------------------------------------------------
@pytest.mark.parametrize("ct", COVARIANCE_TYPES)
def test_one_component_is_the_gaussian_learner(ct):
    """n_mix = 1 (weights 1, responsibilities exactly 1) gives bit for bit the Gaussian
    learner's stream, missing entries included (tied: one full matrix per state, i.e. the
    Gaussian learner with full covariances)."""
    rng = np.random.default_rng(21)
    family, theta = _model(ct, 1, rng)
    g_ct = "full" if ct == "tied" else ct
    kw = {key: getattr(family, key) for key in ("min_covar", "means_weight", "means_prior",
                                                "covars_prior", "covars_weight")}
    gauss = GaussianEmissions(2, 2, covariance_type=g_ct, **kw)
    em = theta["emission"]
    covars = em["covars"] if ct == "tied" else em["covars"][:, 0]
    g_theta = {**theta, "emission": {"means": em["means"][:, 0], "covars": covars}}
    X = _rows(rng, 60, 2)
    X[30:40, 1] = np.nan
    learner = OnlineEM(warmup=5, averaging=True)
    a = learner.update(learner.start(theta, family), X, [25, 35], family)
    b = learner.update(learner.start(g_theta, gauss), X, [25, 35], gauss)
    np.testing.assert_array_equal(a["transmat"], b["transmat"])
    np.testing.assert_array_equal(a["emission.means"][:, 0], b["emission.means"])
    np.testing.assert_array_equal(a["emission.covars"] if ct == "tied" else
                                  a["emission.covars"][:, 0], b["emission.covars"])
    np.testing.assert_array_equal(a["emission.weights"], 1.0)


def test_batch_em_and_impute_with_missing_entries_match_enumeration():
    """The GMM family now takes missing entries in every mode: one batch EM step (w_s = 1,
    no prior) and the posterior predictive imputation equal brute-force enumeration."""
    rng = np.random.default_rng(4)
    family, theta = _model("full", 2, rng)
    X = _rows(rng, 4, 2)
    m = hs.HMM(2, emission="gmm", n_mix=2, covariance_type="full", init_params="", n_iter=1,
               tol=-np.inf, min_covar=1e-6)
    m.startprob_, m.transmat_ = theta["startprob"], theta["transmat"]
    em = theta["emission"]
    m.weights_, m.means_, m.covars_ = em["weights"], em["means"], em["covars"]
    flat = GMMEmissions(2, 2, n_mix=2, covariance_type="full", min_covar=1e-6)
    ref = enumerate_stream(theta, flat, X, np.ones(len(X)), prior=0.0)
    # imputation: sum over paths of p(path | y) E[x_t | x_o, pair_t]
    expect = np.zeros_like(X)
    for p, path in zip(ref["post"], ref["paths"], strict=True):
        for t, pair in enumerate(path):
            expect[t] += p * ref["terms"][t][1][pair]
    np.testing.assert_allclose(m.impute(X), np.where(np.isnan(X), expect, X), rtol=1e-10)
    m.fit(X)
    np.testing.assert_allclose(m.transmat_, ref["transmat"], rtol=1e-10)
    for key in ("weights", "means", "covars"):
        np.testing.assert_allclose(getattr(m, key + "_"), ref["emission"][key], rtol=1e-9,
                                   err_msg=key)


def test_gmm_stream_resumes_bit_for_bit_after_save(tmp_path):
    """A GMM online-EM model saved mid-sequence and loaded continues exactly."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(120, 2)) + np.repeat([[0.0, 0.0], [3.0, 3.0]], 60, axis=0)
    X[rng.random(X.shape) < 0.2] = np.nan

    def model():
        return hs.HMM(2, emission="gmm", n_mix=2, covariance_type="full",
                      learn="online-em", random_state=0,
                      learner_options={"averaging": True, "warmup": 10})

    whole = model().partial_fit(X[:50]).partial_fit(X[50:], continues=True)
    first = model().partial_fit(X[:50])  # the start comes from the first call's data
    first.save(tmp_path / "gmm")
    resumed = hs.load(tmp_path / "gmm").partial_fit(X[50:], continues=True)
    for key in ("transmat_", "weights_", "means_", "covars_"):
        np.testing.assert_array_equal(getattr(resumed, key), getattr(whole, key))
    assert resumed.learner_state_["frame"].shape == (2, 2, 2)


@pytest.mark.slow
def test_long_stream_recovers_a_gmm_hmm():
    """3000 rows of a 2-state, 2-component GMM-HMM with 20% of the entries missing, one
    pass from a start perturbed by N(0, 0.7^2) on the means: the Polyak-Ruppert average
    (from row 750) lands on batch EM's estimate on the same data (the MLE) within about
    three of the MLE's standard errors: a component mean rests on about 3000 * 0.5 * 0.3
    = 450 rows of variance <= 1 (s.e. <= 0.05; tolerance 0.15), a variance likewise (s.e.
    <= 0.07; 0.2), a weight on 1500 rows (s.e. 0.013; 0.04), a transition probability
    about 0.005 (0.02). warmup=100: the first M-step rests on 100 rows, not 20, so that
    no component starts starved."""
    true = hs.HMM(2, emission="gmm", n_mix=2, covariance_type="diag", init_params="")
    true.startprob_ = [0.5, 0.5]
    true.transmat_ = [[0.95, 0.05], [0.1, 0.9]]
    true.weights_ = [[0.3, 0.7], [0.6, 0.4]]
    true.means_ = [[[0, 0], [4, 0]], [[0, 5], [5, 5]]]
    true.covars_ = [[[1, 0.5], [0.5, 1]], [[0.7, 0.7], [1, 0.3]]]
    X, _ = true.sample(3000, random_state=1)
    rng = np.random.default_rng(2)
    X[rng.random(X.shape) < 0.2] = np.nan
    start = np.asarray(true.means_) + rng.normal(0, 0.7, (2, 2, 2))

    def model(**kw):
        m = hs.HMM(2, emission="gmm", n_mix=2, covariance_type="diag", init_params="", **kw)
        m.startprob_, m.transmat_ = [0.5, 0.5], [[0.8, 0.2], [0.2, 0.8]]
        m.weights_, m.means_, m.covars_ = np.full((2, 2), 0.5), start, np.ones((2, 2, 2))
        return m

    online = model(learn="online-em", learner_options={
        "averaging": True, "average_start": 750, "warmup": 100}).fit(X)
    batch = model(n_iter=200, tol=1e-8).fit(X)
    np.testing.assert_allclose(online.transmat_, batch.transmat_, atol=0.02)
    np.testing.assert_allclose(online.weights_, batch.weights_, atol=0.04)
    np.testing.assert_allclose(online.means_, batch.means_, atol=0.15)
    np.testing.assert_allclose(online.covars_, batch.covars_, atol=0.2)
    np.testing.assert_allclose(batch.means_, true.means_, atol=0.2)  # and the MLE is near


def _regimes(rng, n_blocks=10, T=60):
    """Two regimes, each a two-component mixture in 2-D (docs/families.md's example)."""
    z = np.repeat(np.tile([0, 1], n_blocks // 2), T)
    centres = np.array([[[0, 0], [3, 3]], [[0, 6], [6, 0]]], dtype=float)
    c = rng.integers(0, 2, size=len(z))
    return centres[z, c] + rng.normal(0, 0.7, size=(len(z), 2)), z


@pytest.mark.parametrize("ct", ["diag", "full"])
@pytest.mark.parametrize("learn", ["map", "vb", "vt"])
def test_gmm_batch_modes_with_missing_entries(ct, learn):
    """Every batch mode fits a GMM-HMM with 30% of the entries missing: the objective never
    decreases (VB: up to 1e-9 relative, see test_vb_families) and nothing becomes NaN."""
    rng = np.random.default_rng(0)
    X, _ = _regimes(rng, n_blocks=4)
    X[rng.random(X.shape) < 0.3] = np.nan
    m = hs.HMM(2, emission="gmm", n_mix=2, covariance_type=ct, learn=learn, n_iter=8,
               random_state=0).fit(X)
    h = np.asarray(m.monitor_.history)
    assert np.all(np.diff(h) >= -1e-9 * np.abs(h[1:])), np.diff(h)
    assert np.isfinite(m.score(X)) and np.all(np.isfinite(m.covars_))


def test_gmm_em_with_missing_entries_keeps_a_good_fit():
    """Batch EM on the data with 30% of the entries missing, started from the fit to the
    complete data, stays there (decodes 99% of the states) and raises the likelihood of the
    observed entries."""
    rng = np.random.default_rng(0)
    X, z = _regimes(rng)
    Xm = X.copy()
    Xm[rng.random(X.shape) < 0.3] = np.nan
    good = hs.HMM(2, emission="gmm", n_mix=2, covariance_type="full", random_state=0).fit(X)
    m = hs.HMM(2, emission="gmm", n_mix=2, covariance_type="full", init_params="", n_iter=20)
    m.startprob_, m.transmat_ = good.startprob_, good.transmat_
    m.weights_, m.means_, m.covars_ = good.weights_, good.means_, good.covars_
    before = m.score(Xm)
    m.fit(Xm)
    assert m.score(Xm) > before
    agree = np.mean(m.predict(Xm) == z)
    assert max(agree, 1 - agree) > 0.99


# -- partly missing Poisson rows ------------------------------------------------------------------
def direct_poisson(theta, family, X, *, step_exponent=0.6, warmup=1):
    """:func:`direct_online_em` for a Poisson HMM: a row's emission is the product over its
    observed counts; its statistic for state k is (1, x) with each missing count replaced by
    the state's rate (its conditional expectation under the step's parameters)."""
    from scipy.stats import poisson

    def terms(em, x):
        lam, seen = em["lambdas"], ~np.isnan(x)
        logb = np.array([poisson.logpmf(x[seen], lam[k, seen]).sum() for k in range(len(lam))])
        stat = np.concatenate([np.ones((len(lam), 1)), np.where(seen, x, lam)], axis=1)
        return logb, stat, 1

    def mstep(em, Sg, K, M):
        return family.mstep(em, {"post": Sg[:, 0], "obs": Sg[:, 1:]}, "l")[0]

    return direct_online_em(theta, X, terms, lambda em: np.ones((len(em["lambdas"]), 1)),
                            mstep, step_exponent=step_exponent, warmup=warmup)


def test_partly_missing_poisson_rows_equal_the_transcription():
    """Online EM on Poisson rows with missing counts (partly and wholly missing rows, a
    stream cut in two) equals the direct transcription, parameters and prequential
    log-probabilities."""
    from hiddenstate.families import PoissonEmissions
    rng = np.random.default_rng(41)
    K, D = 2, 3
    family = PoissonEmissions(K, D)
    theta = {"startprob": np.array([0.6, 0.4]), "transmat": np.array([[0.8, 0.2], [0.3, 0.7]]),
             "emission": family.check_params({"lambdas": rng.uniform(0.5, 6.0, (K, D))})}
    X = rng.poisson(3.0, (30, D)).astype(float)
    X[rng.random((30, D)) < 0.3] = np.nan
    X[5] = np.nan
    assert np.any(np.isnan(X).any(axis=1) & ~np.isnan(X).all(axis=1))
    learner = OnlineEM(warmup=1)
    log_pred = np.empty(len(X))
    state = learner.start(theta, family)
    state = learner.update(state, X[:11], None, family, log_pred=log_pred[:11])
    state = learner.update(state, X[11:], None, family, continues=True,
                           log_pred=log_pred[11:])
    ref = direct_poisson(theta, family, X)
    np.testing.assert_allclose(log_pred, ref["log_pred"], rtol=1e-9, atol=1e-12)
    _assert_params(learner.params(state, family), ref, rtol=1e-8, atol=1e-9)
    # without missing counts the expected-statistics path is not taken: the kernel's rows
    Xc = rng.poisson(3.0, (12, D)).astype(float)
    full = learner.update(learner.start(theta, family), Xc, None, family)
    _assert_params(learner.params(full, family), direct_poisson(theta, family, Xc))


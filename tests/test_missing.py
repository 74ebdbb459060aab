"""Missing observations against brute-force enumeration on tiny models: NaN rows and
partially missing vectors (Gaussian diag/full, Poisson), missing symbols (-1, masked
arrays); likelihoods, posteriors, Viterbi, one EM step, imputation."""

import numpy as np
import pytest
from brute_force import dataset_posteriors
from scipy.special import gammaln
from scipy.stats import multivariate_normal

import hiddenstate as hs
from hiddenstate.errors import InvalidInputError

LENGTHS = [4, 3]
START = np.array([0.6, 0.4])
TRANS = np.array([[0.7, 0.3], [0.2, 0.8]])


def _gaussian_model(ct):
    rng = np.random.default_rng(1)
    means = np.array([[0.0, 1.0, -1.0], [2.0, -0.5, 0.5]])
    if ct == "full":
        A = rng.standard_normal((2, 3, 3))
        covars = A @ A.transpose(0, 2, 1) + 0.5 * np.eye(3)
    else:
        covars = rng.uniform(0.5, 2.0, (2, 3))
    m = hs.HMM(2, emission="gaussian", covariance_type=ct, init_params="", n_iter=1,
               tol=-np.inf)
    m.startprob_, m.transmat_, m.means_, m.covars_ = START, TRANS, means, covars
    return m, means, m.covars_.copy()


def _gaussian_data():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((7, 3)) + 0.5
    X[1, 0] = np.nan            # partially missing rows
    X[2, [1, 2]] = np.nan
    X[4] = np.nan               # a fully missing row
    X[6, 2] = np.nan
    return X


def _gaussian_log_e(X, means, covs):
    """Marginal log-density of the observed dimensions of each row (0 if none)."""
    out = np.zeros((len(X), 2))
    for t, x in enumerate(X):
        o = ~np.isnan(x)
        if o.any():
            for k in range(2):
                out[t, k] = multivariate_normal(means[k, o], covs[k][np.ix_(o, o)]).logpdf(x[o])
    return out


def _conditional(x, mean, cov):
    """E[x | x_o] and Cov[x | x_o] of a Gaussian, by the textbook formulas."""
    o = ~np.isnan(x)
    m = ~o
    filled, C = x.copy(), np.zeros((len(x), len(x)))
    inv = np.linalg.inv(cov[np.ix_(o, o)])
    filled[m] = mean[m] + cov[np.ix_(m, o)] @ inv @ (x[o] - mean[o])
    C[np.ix_(m, m)] = cov[np.ix_(m, m)] - cov[np.ix_(m, o)] @ inv @ cov[np.ix_(o, m)]
    return filled, C


@pytest.mark.parametrize("ct", ["diag", "full"])
def test_gaussian_missing_matches_enumeration(ct):
    m, means, covs = _gaussian_model(ct)
    X = _gaussian_data()
    ref = dataset_posteriors(START, TRANS, _gaussian_log_e(X, means, covs), LENGTHS)
    np.testing.assert_allclose(m.score_samples(X, LENGTHS), ref["loglik"], rtol=1e-12)
    np.testing.assert_allclose(m.predict_proba(X, LENGTHS), ref["gamma"], atol=1e-12)
    logp, states = m.decode(X, LENGTHS)
    np.testing.assert_array_equal(states, ref["viterbi_path"])
    np.testing.assert_allclose(logp, ref["viterbi_logprob"].sum(), rtol=1e-12)
    # a sequence of missing rows only has no emission term: log p = 0
    assert m.score(np.full((3, 3), np.nan)) == 0.0

    # imputation: the posterior predictive mean of each missing entry
    imputed = m.impute(X, LENGTHS)
    for t, x in enumerate(X):
        expect = sum(ref["gamma"][t, k] * (_conditional(x, means[k], covs[k])[0]
                                           if not np.isnan(x).all() else means[k])
                     for k in range(2))
        np.testing.assert_allclose(imputed[t], np.where(np.isnan(x), expect, x), rtol=1e-12)

    # one EM step: missing dimensions replaced by their conditional expectations
    g = ref["gamma"]
    new_means, new_covs = np.zeros((2, 3)), np.zeros((2, 3, 3))
    seen = ~np.isnan(X).all(axis=1)
    for k in range(2):
        cond = [_conditional(x, means[k], covs[k]) for x in X[seen]]
        w = g[seen, k]
        new_means[k] = sum(wi * f for wi, (f, _) in zip(w, cond, strict=True)) / w.sum()
        new_covs[k] = sum(wi * (np.outer(f - new_means[k], f - new_means[k]) + C)
                          for wi, (f, C) in zip(w, cond, strict=True)) / w.sum()
    m.fit(X, LENGTHS)
    np.testing.assert_allclose(m.startprob_, ref["start"] / 2, rtol=1e-12)
    np.testing.assert_allclose(m.transmat_, ref["trans"] / ref["trans"].sum(1, keepdims=True),
                               rtol=1e-12)
    np.testing.assert_allclose(m.means_, new_means, rtol=1e-10)
    expect = new_covs if ct == "full" else np.stack([np.diag(np.diag(c)) for c in new_covs])
    np.testing.assert_allclose(m.covars_, expect, rtol=1e-10)


def test_categorical_missing_symbols_match_enumeration():
    B = np.array([[0.5, 0.3, 0.2], [0.1, 0.3, 0.6]])
    X = np.array([0, -1, 2, 1, -1, -1, 2])
    log_e = np.where((X >= 0)[:, None], np.log(B.T[np.maximum(X, 0)]), 0.0)
    ref = dataset_posteriors(START, TRANS, log_e, LENGTHS)
    m = hs.HMM(2, init_params="", n_iter=1, tol=-np.inf)
    m.startprob_, m.transmat_, m.emissionprob_ = START, TRANS, B
    np.testing.assert_allclose(m.score_samples(X[:, None], LENGTHS), ref["loglik"],
                               rtol=1e-12)
    np.testing.assert_allclose(m.predict_proba(X, LENGTHS), ref["gamma"], atol=1e-12)
    np.testing.assert_array_equal(m.predict(X, LENGTHS), ref["viterbi_path"])
    # a masked array marks the same entries as missing
    masked = np.ma.masked_array(np.where(X < 0, 1, X), mask=X < 0)
    np.testing.assert_allclose(m.score_samples(masked, LENGTHS), ref["loglik"], rtol=1e-12)
    # imputation: most probable symbol under the posterior predictive
    expect = np.where(X < 0, np.argmax(ref["gamma"] @ B, axis=1), X)
    np.testing.assert_array_equal(m.impute(X, LENGTHS), expect)
    # one EM step: emission counts over the observed steps only
    counts = np.zeros((2, 3))
    for t in np.flatnonzero(X >= 0):
        counts[:, X[t]] += ref["gamma"][t]
    m.fit(X[:, None], LENGTHS)
    np.testing.assert_allclose(m.emissionprob_, counts / counts.sum(1, keepdims=True),
                               rtol=1e-12)
    np.testing.assert_allclose(m.transmat_, ref["trans"] / ref["trans"].sum(1, keepdims=True),
                               rtol=1e-12)


def test_poisson_missing_counts_match_enumeration():
    lam = np.array([[1.0, 4.0], [6.0, 0.5]])
    X = np.array([[0, 3], [np.nan, 1], [7, np.nan], [np.nan, np.nan], [2, 2], [5, np.nan],
                  [1, 0]])
    o = ~np.isnan(X)
    Xz = np.where(o, X, 0)
    log_e = np.stack([(o * (Xz * np.log(lam[k]) - lam[k] - gammaln(Xz + 1))).sum(1)
                      for k in range(2)], axis=1)
    ref = dataset_posteriors(START, TRANS, log_e, LENGTHS)
    m = hs.HMM(2, emission="poisson", init_params="", n_iter=1, tol=-np.inf)
    m.startprob_, m.transmat_, m.lambdas_ = START, TRANS, lam
    np.testing.assert_allclose(m.score_samples(X, LENGTHS), ref["loglik"], rtol=1e-12)
    np.testing.assert_allclose(m.predict_proba(X, LENGTHS), ref["gamma"], atol=1e-12)
    np.testing.assert_array_equal(m.predict(X, LENGTHS), ref["viterbi_path"])
    np.testing.assert_allclose(m.impute(X, LENGTHS),
                               np.where(o, X, ref["gamma"] @ lam), rtol=1e-12)
    g = ref["gamma"]
    m.fit(X, LENGTHS)
    np.testing.assert_allclose(m.lambdas_, (g.T @ Xz) / (g.T @ o), rtol=1e-12)


@pytest.mark.parametrize("learn", ["map", "vb", "vt"])
@pytest.mark.parametrize("emission", ["gaussian", "poisson", "categorical"])
def test_every_batch_mode_learns_with_missing_entries(emission, learn):
    """The objective never decreases and the model scores the data it was fitted on; the
    missing entries never enter as values (NaN would poison every parameter)."""
    rng = np.random.default_rng(3)
    z = np.repeat([0, 1, 0, 1], 50)
    if emission == "categorical":
        X = np.where(z == 0, rng.integers(0, 2, 200), rng.integers(2, 4, 200))[:, None]
        X[rng.random(200) < 0.2] = -1
    else:
        X = rng.poisson(np.where(z[:, None] == 0, 2.0, 9.0), (200, 2)).astype(float)
        X[rng.random((200, 2)) < 0.2] = np.nan
        X[10] = np.nan
    kw = {"covariance_type": "full"} if emission == "gaussian" else {}
    m = hs.HMM(2, emission=emission, learn=learn, n_iter=15, random_state=0, **kw).fit(X)
    h = np.array(m.monitor_.history)
    assert np.all(np.diff(h) >= -1e-9 * np.abs(h[1:]))
    assert np.isfinite(m.score(X))
    assert (np.mean(m.predict(X) == z) > 0.9) or (np.mean(m.predict(X) != z) > 0.9)


def test_streaming_learners_and_props_with_missing_symbols():
    X = np.array([0, 1, -1, 2, 1, -1, 0, 2, 2, 1])
    for learn in ("bwo", "baldi-chauvin"):
        m = hs.HMM(2, learn=learn, random_state=0).fit(X[:, None], [5, 5])
        full = hs.HMM(2, learn=learn, random_state=0).fit(np.where(X < 0, 0, X)[:, None], [5, 5])
        assert not np.allclose(m.emissionprob_, full.emissionprob_)  # -1 is not symbol 0
        assert np.isfinite(m.score(X[:, None], [5, 5]))


def test_missing_markers_still_validated():
    with pytest.raises(InvalidInputError, match="negative"):
        hs.HMM(2).fit(np.array([[0], [1], [-2]]))
    with pytest.raises(InvalidInputError, match="inf"):
        hs.HMM(2, emission="gaussian").fit(np.array([[0.0, np.inf], [1.0, 2.0]]))
    with pytest.raises(InvalidInputError, match="no observed value"):
        hs.HMM(2, emission="gaussian").fit(np.array([[0.0, np.nan], [1.0, np.nan]]))
    m, _, _ = _gaussian_model("diag")
    m.means_ = np.array([[0.0, np.nan, 1.0], [1.0, 1.0, 1.0]])   # hand-set: NaN refused
    with pytest.raises(InvalidInputError, match="means_"):
        m.score(_gaussian_data())


@pytest.mark.parametrize("emission", ["categorical", "gaussian", "poisson"])
def test_online_em_with_missing_observations(emission):
    """A missing step predicts with probability 1 (log 0), adds no emission statistic, and
    the stream gives the same parameters fed in one call or two; on a long stream with 20%
    missing, online EM lands near batch EM on the same data."""
    rng = np.random.default_rng(5)
    n = 1500
    z = (np.cumsum(rng.random(n) < 0.05) % 2).astype(int)[:, None]
    if emission == "categorical":
        X = np.where(z == 0, rng.integers(0, 2, (n, 1)), rng.integers(1, 4, (n, 1)))
        X[rng.random(n) < 0.2] = -1
        miss = X[:, 0] < 0
    else:
        X = (rng.poisson(np.where(z == 0, 2.0, 8.0)).astype(float)
             if emission == "poisson" else rng.normal(3.0 * z, 1.0))
        miss = rng.random(n) < 0.2
        X[miss] = np.nan
    start = {"categorical": {"emissionprob_": [[0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4]]},
             "gaussian": {"means_": [[0.5], [2.5]], "covars_": [[1.0], [1.0]]},
             "poisson": {"lambdas_": [[3.0], [6.0]]}}[emission]

    def learner():
        m = hs.HMM(2, emission=emission, learn="online-em", init_params="", random_state=0)
        m.startprob_, m.transmat_ = [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]]
        for attr, value in start.items():
            setattr(m, attr, value)
        return m

    m = learner().fit(X)
    np.testing.assert_allclose(m.stream_log_prob_[miss], 0.0, atol=1e-12)
    assert np.all(m.stream_log_prob_[~miss] < 0.0)
    two = learner().partial_fit(X[:700]).partial_fit(X[700:], continues=True)
    np.testing.assert_array_equal(two.transmat_, m.transmat_)
    batch = hs.HMM(2, emission=emission, random_state=0, n_iter=50).fit(X)
    key = {"categorical": "emissionprob_", "gaussian": "means_", "poisson": "lambdas_"}[emission]
    a, b = getattr(m, key), getattr(batch, key)
    perm = np.argsort(a[:, -1]), np.argsort(b[:, -1])
    np.testing.assert_allclose(a[perm[0]], b[perm[1]], atol=0.15 * np.abs(b).max())


def test_bona_and_mpa_sum_a_missing_symbol_out():
    """The exact posterior after a sequence with a missing symbol is the mixture, over the
    symbol's values w, of the posteriors with w filled in, weighted by their evidence: its
    log-evidence is their logsumexp and its posterior mean their weighted mean."""
    from hiddenstate.learn.online.per_sequence import _Layout, mixture_posterior

    rng = np.random.default_rng(5)
    K, W = 2, 3
    layout = _Layout(K, W)
    u = rng.uniform(0.5, 2.0, size=layout.D)
    x = np.array([0, -1, 2, 1])
    got = mixture_posterior(u, layout, x, 10**4, ("mean",))
    filled = [mixture_posterior(u, layout, np.where(x < 0, w, x), 10**4, ("mean",))
              for w in range(W)]
    logs = np.array([f["log_evidence"] for f in filled])
    top = logs.max()
    assert np.isclose(got["log_evidence"], top + np.log(np.exp(logs - top).sum()), rtol=1e-12)
    weights = np.exp(logs - got["log_evidence"])
    mean = sum(wt * f["mean"] for wt, f in zip(weights, filled, strict=True))
    np.testing.assert_allclose(got["mean"], mean, rtol=1e-12)
    for learn in ("bona", "mpa"):   # and the learners take it (the missing step is not 0)
        m = hs.HMM(2, learn=learn, random_state=0).fit(x[:, None])
        zero = hs.HMM(2, learn=learn, random_state=0).fit(np.where(x < 0, 0, x)[:, None])
        assert not np.allclose(m.emissionprob_, zero.emissionprob_)


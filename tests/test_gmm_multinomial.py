"""Gaussian-mixture and multinomial emissions: against brute force on tiny models, against
hmmlearn 0.3.3 on the same data and initialisation, MAP/VB objectives, save/load."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest
from brute_force import sequence_posteriors
from scipy.special import gammaln, logsumexp
from scipy.stats import multivariate_normal

import hiddenstate as hs
from hiddenstate.compat import hmmlearn as compat
from hiddenstate.errors import InvalidInputError

COV_TYPES = ["spherical", "diag", "full", "tied"]
K, M, D, T = 2, 2, 2, 5


def _gmm_params(ct: str, rng: np.random.Generator) -> dict:
    weights = rng.dirichlet(np.ones(M), size=K)
    means = rng.normal(0.0, 2.0, size=(K, M, D))
    if ct == "spherical":
        covars = rng.uniform(0.5, 2.0, size=(K, M))
    elif ct == "diag":
        covars = rng.uniform(0.5, 2.0, size=(K, M, D))
    elif ct == "full":
        A = rng.normal(size=(K, M, D, D))
        covars = A @ np.swapaxes(A, -1, -2) + 0.5 * np.eye(D)
    else:
        A = rng.normal(size=(K, D, D))
        covars = A @ np.swapaxes(A, -1, -2) + 0.5 * np.eye(D)
    return {"weights": weights, "means": means, "covars": covars}


def _component_cov(ct: str, covars: np.ndarray, k: int, c: int) -> np.ndarray:
    if ct == "spherical":
        return covars[k, c] * np.eye(D)
    if ct == "diag":
        return np.diag(covars[k, c])
    if ct == "full":
        return covars[k, c]
    return covars[k]


def _gmm_model(ct: str, seed: int = 0, **kw) -> tuple[hs.HMM, np.ndarray, dict]:
    rng = np.random.default_rng(seed)
    p = _gmm_params(ct, rng)
    m = hs.HMM(n_states=K, emission="gmm", n_mix=M, covariance_type=ct, min_covar=1e-12,
               **kw)
    m.startprob_ = rng.dirichlet(np.ones(K))
    m.transmat_ = rng.dirichlet(np.ones(K), size=K)
    m.weights_, m.means_, m.covars_ = p["weights"], p["means"], p["covars"]
    X = rng.normal(0.0, 2.0, size=(T, D))
    return m, X, p


def _brute_gmm(ct: str, m: hs.HMM, X: np.ndarray, p: dict):
    """Component log densities by scipy, the state posteriors by enumeration of paths."""
    comp = np.empty((len(X), K, M))
    for k in range(K):
        for c in range(M):
            comp[:, k, c] = np.log(p["weights"][k, c]) + multivariate_normal(
                p["means"][k, c], _component_cov(ct, p["covars"], k, c)).logpdf(X)
    log_e = logsumexp(comp, axis=2)
    bf = sequence_posteriors(np.asarray(m.startprob_), np.asarray(m.transmat_), log_e)
    resp = np.exp(comp - log_e[:, :, None])
    return bf, bf["gamma"][:, :, None] * resp


@pytest.mark.parametrize("ct", COV_TYPES)
def test_gmm_inference_matches_brute_force(ct):
    m, X, p = _gmm_model(ct)
    bf, _ = _brute_gmm(ct, m, X, p)
    assert m.score(X) == pytest.approx(bf["loglik"], rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(m.predict_proba(X), bf["gamma"], atol=1e-12)
    logp, path = m.decode(X)
    np.testing.assert_array_equal(path, bf["viterbi_path"])
    assert logp == pytest.approx(bf["viterbi_logprob"], rel=1e-12)


@pytest.mark.parametrize("ct", COV_TYPES)
def test_gmm_one_em_step_matches_brute_force(ct):
    """The M-step from enumerated posteriors: (state, component) responsibilities
    gamma_tk r_tkc, covariances about the *new* means."""
    m, X, p = _gmm_model(ct, n_iter=1, init_params="", tol=-np.inf)
    bf, g = _brute_gmm(ct, m, X, p)
    m.fit(X)
    n = g.sum(axis=0)                                        # (K, M)
    np.testing.assert_allclose(m.startprob_, bf["gamma"][0], atol=1e-12)
    np.testing.assert_allclose(m.transmat_, bf["trans"] / bf["trans"].sum(1, keepdims=True),
                               atol=1e-12)
    np.testing.assert_allclose(m.weights_, n / n.sum(axis=1, keepdims=True), atol=1e-12)
    mu = np.einsum("tkc,td->kcd", g, X) / n[:, :, None]
    np.testing.assert_allclose(m.means_, mu, atol=1e-11)
    diff = X[:, None, None, :] - mu[None]                     # (T, K, M, D)
    scatter = np.einsum("tkc,tkcd,tkce->kcde", g, diff, diff)  # (K, M, D, D)
    full = scatter / n[:, :, None, None]
    want = {"full": full,
            "diag": np.diagonal(full, axis1=2, axis2=3),
            "spherical": np.diagonal(full, axis1=2, axis2=3).mean(axis=2),
            "tied": scatter.sum(axis=1) / n.sum(axis=1)[:, None, None]}[ct]
    np.testing.assert_allclose(m.covars_, want, atol=1e-11)


def _mult_model(seed: int = 0, n_trials: int = 4, W: int = 3, **kw):
    rng = np.random.default_rng(seed)
    m = hs.HMM(n_states=K, emission="multinomial", n_trials=n_trials, **kw)
    m.startprob_ = rng.dirichlet(np.ones(K))
    m.transmat_ = rng.dirichlet(np.ones(K), size=K)
    m.emissionprob_ = rng.dirichlet(np.ones(W), size=K)
    X = rng.multinomial(n_trials, np.ones(W) / W, size=T)
    return m, X


def _brute_mult(m, X):
    B = np.asarray(m.emissionprob_)
    log_e = np.array([[gammaln(x.sum() + 1) - gammaln(x + 1).sum() + x @ np.log(B[k])
                       for k in range(K)] for x in X])
    return sequence_posteriors(np.asarray(m.startprob_), np.asarray(m.transmat_), log_e)


def test_multinomial_inference_and_em_step_match_brute_force():
    m, X = _mult_model(n_iter=1, init_params="", tol=-np.inf)
    bf = _brute_mult(m, X)
    assert m.score(X) == pytest.approx(bf["loglik"], rel=1e-12)
    np.testing.assert_allclose(m.predict_proba(X), bf["gamma"], atol=1e-12)
    logp, path = m.decode(X)
    np.testing.assert_array_equal(path, bf["viterbi_path"])
    assert logp == pytest.approx(bf["viterbi_logprob"], rel=1e-12)
    m.fit(X)
    counts = bf["gamma"].T @ X
    np.testing.assert_allclose(m.emissionprob_, counts / counts.sum(1, keepdims=True),
                               atol=1e-12)
    np.testing.assert_allclose(m.transmat_, bf["trans"] / bf["trans"].sum(1, keepdims=True),
                               atol=1e-12)


def test_multinomial_one_trial_is_categorical():
    """One trial per row: the multinomial HMM is the categorical HMM of the one-hot rows
    (EM from the same start gives the same parameters, batch and online)."""
    rng = np.random.default_rng(3)
    sym = rng.integers(0, 4, size=300)
    onehot = np.eye(4, dtype=np.int64)[sym]
    start = {"startprob_": [0.6, 0.4], "transmat_": [[0.8, 0.2], [0.3, 0.7]],
             "emissionprob_": rng.dirichlet(np.ones(4), size=2)}
    for learn in ("em", "online-em"):
        out = []
        for emission, X in (("categorical", sym), ("multinomial", onehot)):
            m = hs.HMM(n_states=2, emission=emission, n_iter=5, tol=-np.inf, init_params="",
                       learn=learn, n_features=4)
            for key, value in start.items():
                setattr(m, key, value)
            m.fit(X)
            out.append(m)
        for key in start:
            np.testing.assert_allclose(getattr(out[0], key), getattr(out[1], key),
                                       atol=1e-9, err_msg=f"{learn} {key}")


# -- hmmlearn 0.3.3 on the same data and initialisation ----------------------------------------
@pytest.fixture
def hmmlearn_hmm():
    hmm = pytest.importorskip("hmmlearn.hmm")
    logging.getLogger("hmmlearn").setLevel(logging.ERROR)
    return hmm


def _gmm_data():
    rng = np.random.RandomState(0)
    return np.vstack([rng.normal(0, 1, (60, 2)), rng.normal(4, 1, (60, 2)),
                      rng.normal([0, 5], 1, (60, 2))])


@pytest.mark.parametrize("ct", COV_TYPES)
def test_gmmhmm_one_step_matches_hmmlearn(ct, hmmlearn_hmm):
    """Same random_state -> hmmlearn's initialisation; one EM step agrees to 1e-8. The
    covariances agree when the means are not learned: hmmlearn sums the scatter about the
    previous means, which is not the M-step (test above: ours is)."""
    X = _gmm_data()
    for params, keys in (("stmcw", ["startprob_", "transmat_", "weights_", "means_"]),
                         ("stcw", ["startprob_", "transmat_", "weights_", "covars_"])):
        ours = compat.GMMHMM(3, n_mix=2, covariance_type=ct, random_state=1, n_iter=1,
                             params=params)
        ref = hmmlearn_hmm.GMMHMM(3, n_mix=2, covariance_type=ct, random_state=1, n_iter=1,
                                  params=params)
        ours.fit(X, [100, 80])
        ref.fit(X, [100, 80])
        for key in keys:
            np.testing.assert_allclose(getattr(ours, key), getattr(ref, key), rtol=0,
                                       atol=1e-8, err_msg=f"{ct} {params} {key}")
    assert ours.score(X, [100, 80]) == pytest.approx(ref.score(X, [100, 80]), rel=1e-10)


def test_multinomialhmm_matches_hmmlearn(hmmlearn_hmm):
    rng = np.random.RandomState(2)
    X = np.vstack([rng.multinomial(6, [0.6, 0.2, 0.1, 0.1], 80),
                   rng.multinomial(6, [0.1, 0.1, 0.3, 0.5], 80)])
    ours = compat.MultinomialHMM(2, n_trials=6, random_state=4, n_iter=3, tol=-np.inf)
    ref = hmmlearn_hmm.MultinomialHMM(2, n_trials=6, random_state=4, n_iter=3, tol=-np.inf)
    ours.fit(X)
    ref.fit(X)
    for key in ("startprob_", "transmat_", "emissionprob_"):
        np.testing.assert_allclose(getattr(ours, key), getattr(ref, key), rtol=0, atol=1e-8)
    assert ours.score(X) == pytest.approx(ref.score(X), rel=1e-10)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-8)


# -- MAP / VB objectives, streaming, save/load, validation --------------------------------------
@pytest.mark.parametrize("learn", ["map", "vb"])
@pytest.mark.parametrize("ct", COV_TYPES)
def test_gmm_map_vb_objective_non_decreasing(ct, learn):
    X = _gmm_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = hs.HMM(n_states=3, emission="gmm", n_mix=2, covariance_type=ct, learn=learn,
                   n_iter=15, tol=-np.inf, random_state=0).fit(X, [90, 90])
    h = np.array(m.monitor_.history)
    assert len(h) == 15
    assert np.diff(h).min() >= -1e-9 * np.abs(h).max()
    assert h[-1] - h[0] > 1.0  # it learned something


def test_gmm_kvt_with_one_path_is_vt():
    X = _gmm_data()
    fits = [hs.HMM(n_states=2, emission="gmm", n_mix=2, covariance_type="diag", learn=learn,
                   k_best=1, n_iter=10, random_state=0).fit(X, [90, 90])
            for learn in ("vt", "kvt")]
    for key in ("weights_", "means_", "covars_", "transmat_"):
        np.testing.assert_array_equal(getattr(fits[0], key), getattr(fits[1], key))
    assert fits[0].monitor_.history == fits[1].monitor_.history
    assert fits[0].monitor_.history[-1] > fits[0].monitor_.history[0]


@pytest.mark.parametrize("learn", ["map", "vb", "vt", "online-em"])
def test_multinomial_modes(learn):
    rng = np.random.default_rng(1)
    z = np.repeat(np.tile([0, 1], 10), 20)
    P = np.array([[0.6, 0.2, 0.1, 0.1], [0.1, 0.1, 0.3, 0.5]])
    X = np.array([rng.multinomial(5, P[k]) for k in z])
    m = hs.HMM(n_states=2, emission="multinomial", n_trials=5, learn=learn, n_iter=30,
               random_state=0, emissionprob_prior=None if learn == "online-em" else 2.0)
    m.fit(X)
    order = np.argsort(m.emissionprob_[:, 0])[::-1]
    np.testing.assert_allclose(m.emissionprob_[order], P, atol=0.06)
    if learn in ("map", "vb"):
        assert np.diff(m.monitor_.history).min() >= -1e-9 * abs(m.monitor_.history[-1])


@pytest.mark.parametrize("emission", ["gmm", "multinomial"])
def test_save_load_round_trip(emission, tmp_path):
    if emission == "gmm":
        X, kw = _gmm_data(), {"n_mix": 2, "covariance_type": "full", "learn": "vb"}
    else:
        X = np.random.default_rng(0).multinomial(5, [0.2, 0.3, 0.5], size=100)
        kw = {"n_trials": 5}
    m = hs.HMM(n_states=2, emission=emission, n_iter=5, random_state=0, **kw).fit(X)
    m.save(tmp_path / "m")
    back = hs.load(tmp_path / "m")
    assert type(back) is hs.HMM and back.emission == emission
    assert back.score(X) == m.score(X)
    for attr, value in m.learned_arrays().items():
        np.testing.assert_array_equal(back.learned_arrays()[attr], value)
    np.testing.assert_array_equal(back.sample(20, random_state=3)[0],
                                  m.sample(20, random_state=3)[0])


def test_compat_save_loads_as_hmm(tmp_path):
    X = _gmm_data()
    ours = compat.GMMHMM(2, n_mix=2, covariance_type="tied", random_state=0, n_iter=3).fit(X)
    ours.save(tmp_path / "g")
    assert hs.load(tmp_path / "g").score(X) == pytest.approx(ours.score(X), rel=1e-12)


def test_hand_set_parameters_are_validated():
    m, X, _ = _gmm_model("diag")
    m.covars_ = -np.ones((K, M, D))
    with pytest.raises(InvalidInputError, match="covars_"):
        m.score(X)
    m.covars_ = np.ones((K, M))
    with pytest.raises(InvalidInputError, match=r"covars_.*\(2, 2, 2\)"):
        m.score(X)
    m.covars_ = np.ones((K, M, D))
    m.weights_ = [[0.5, 0.6], [0.5, 0.5]]
    with pytest.raises(InvalidInputError, match="weights_"):
        m.score(X)
    m.weights_ = [[0.5, 0.5], [0.5, 0.5]]
    m.means_ = np.zeros((K, M + 1, D))
    with pytest.raises(InvalidInputError, match="means_"):
        m.score(X)
    f, Xm = _mult_model()
    with pytest.raises(InvalidInputError, match="n_trials"):
        f.score(Xm * 2)
    f.emissionprob_ = [[0.5, 0.5, 0.1], [0.2, 0.3, 0.5]]
    with pytest.raises(InvalidInputError, match="emissionprob_"):
        f.score(Xm)
    with pytest.raises(InvalidInputError, match="n_mix"):
        hs.HMM(emission="gmm", n_mix=0).fit(_gmm_data())


def test_sampling_moments():
    """A one-state model's draws have the mixture's mean and covariance (GMM) and the
    multinomial's totals and means."""
    m = hs.HMM(n_states=1, emission="gmm", n_mix=2, covariance_type="full")
    m.startprob_, m.transmat_ = [1.0], [[1.0]]
    w = np.array([[0.3, 0.7]])
    mu = np.array([[[0.0, 0.0], [3.0, -1.0]]])
    cov = np.array([[[[1.0, 0.3], [0.3, 0.5]], [[0.4, 0.0], [0.0, 2.0]]]])
    m.weights_, m.means_, m.covars_ = w, mu, cov
    X = m.sample(40000, random_state=0)[0]
    mean = w[0] @ mu[0]
    second = sum(w[0, c] * (cov[0, c] + np.outer(mu[0, c], mu[0, c])) for c in range(2))
    np.testing.assert_allclose(X.mean(axis=0), mean, atol=0.03)
    np.testing.assert_allclose(np.cov(X.T), second - np.outer(mean, mean), atol=0.06)
    f, _ = _mult_model(n_trials=7)
    f.startprob_, f.transmat_ = [1.0, 0.0], [[1.0, 0.0], [0.0, 1.0]]
    C = f.sample(20000, random_state=0)[0]
    assert np.all(C.sum(axis=1) == 7)
    np.testing.assert_allclose(C.mean(axis=0), 7 * np.asarray(f.emissionprob_)[0], atol=0.05)


@pytest.mark.parametrize("ct", ["diag", "full"])
def test_gmm_statistics_are_shift_invariant(ct):
    """Centred statistics (the Gaussian family's): the fit of X + 1e8 is the fit of X
    shifted, from the same start (raw second moments would cancel every digit of a unit
    variance next to 1e16)."""
    X = _gmm_data()
    shift = 1e8
    fits = []
    for c in (0.0, shift):
        rng = np.random.default_rng(5)
        m = hs.HMM(n_states=2, emission="gmm", n_mix=2, covariance_type=ct, n_iter=4,
                   tol=-np.inf, init_params="")
        m.startprob_, m.transmat_ = [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]]
        m.weights_ = [[0.5, 0.5], [0.5, 0.5]]
        m.means_ = X[rng.choice(len(X), size=4, replace=False)].reshape(2, 2, 2) + c
        m.covars_ = (np.ones((2, 2, 2)) if ct == "diag"
                     else np.tile(np.eye(2), (2, 2, 1, 1)))
        fits.append(m.fit(X + c, [90, 90]))
    np.testing.assert_allclose(fits[1].means_ - shift, fits[0].means_, atol=1e-6)
    np.testing.assert_allclose(fits[1].covars_, fits[0].covars_, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(fits[1].weights_, fits[0].weights_, atol=1e-7)

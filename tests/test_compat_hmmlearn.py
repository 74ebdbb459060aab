"""``hiddenstate.compat.hmmlearn`` (and the native ``hiddenstate.HMM``) against hmmlearn
0.3.3 itself, from the same initial parameters.

Each differential test sets the same ``startprob_``, ``transmat_`` and emission parameters
on both models, fits with ``init_params=""``, ``tol=-inf`` and ``N_ITER`` iterations, and
compares the log-likelihood history, the final parameters, ``score`` (training and held-out
data), the ``predict_proba`` posteriors and the Viterbi path and log-probability, to a
relative tolerance of 1e-8 (an absolute floor of 1e-12 applies to probabilities that are
essentially zero, whose relative error is meaningless).
"""

from __future__ import annotations

import logging
import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

hl = pytest.importorskip("hmmlearn.hmm")

import hiddenstate as hs  # noqa: E402
from hiddenstate.compat import hmmlearn as hmm  # noqa: E402
from hiddenstate.errors import HiddenStateError  # noqa: E402

N_ITER = 8
RTOL = 1e-8
ATOL_PROB = 1e-12
COV_TYPES = ("spherical", "diag", "full", "tied")
LENGTHS = [150, 90, 1, 110]


# -- data and starting points --------------------------------------------------------------
def _chain(rng, K):
    startprob = rng.dirichlet(np.full(K, 2.0))
    transmat = rng.dirichlet(np.full(K, 2.0), size=K) + 2.0 * np.eye(K)
    return startprob, transmat / transmat.sum(axis=1, keepdims=True)


def _states(rng, startprob, transmat, lengths):
    z = []
    for n in lengths:
        s = rng.choice(len(startprob), p=startprob)
        for _ in range(n):
            z.append(s)
            s = rng.choice(len(startprob), p=transmat[s])
    return np.array(z)


def _spd(rng, D, scale=1.0):
    A = rng.standard_normal((D, D))
    return scale * (A @ A.T / D + 0.5 * np.eye(D))


def _covars(rng, ct, K, D, scale=1.0):
    if ct == "spherical":
        return scale * rng.uniform(0.5, 1.5, K)
    if ct == "diag":
        return scale * rng.uniform(0.5, 1.5, (K, D))
    if ct == "full":
        return np.stack([_spd(rng, D, scale) for _ in range(K)])
    return _spd(rng, D, scale)


def gaussian_problem(ct, seed=0, K=3, D=2):
    """Data from one Gaussian HMM and a perturbed starting point."""
    rng = np.random.default_rng(seed)
    startprob, transmat = _chain(rng, K)
    means = rng.uniform(-4, 4, (K, D))
    z = _states(rng, startprob, transmat, LENGTHS + [60])
    true_cov = _covars(rng, ct, K, D)
    full = (np.eye(D) * true_cov[:, None, None] if ct == "spherical"
            else np.stack([np.diag(c) for c in true_cov]) if ct == "diag"
            else np.broadcast_to(true_cov, (K, D, D)) if ct == "tied" else true_cov)
    X = np.stack([rng.multivariate_normal(means[k], full[k]) for k in z])
    X_train, X_test = X[:sum(LENGTHS)], X[sum(LENGTHS):]
    start = {
        "startprob_": rng.dirichlet(np.full(K, 3.0)),
        "transmat_": _chain(rng, K)[1],
        "means_": means + rng.normal(0, 0.7, means.shape),
        "covars_": _covars(rng, ct, K, D, scale=1.5),
    }
    return X_train, X_test, start


def categorical_problem(seed=1, K=3, W=5):
    rng = np.random.default_rng(seed)
    startprob, transmat = _chain(rng, K)
    B = rng.dirichlet(np.full(W, 0.5), size=K)
    z = _states(rng, startprob, transmat, LENGTHS + [60])
    X = np.array([[rng.choice(W, p=B[k])] for k in z])
    start = {"startprob_": rng.dirichlet(np.full(K, 3.0)), "transmat_": _chain(rng, K)[1],
             "emissionprob_": rng.dirichlet(np.full(W, 3.0), size=K)}
    return X[:sum(LENGTHS)], X[sum(LENGTHS):], start


def poisson_problem(seed=2, K=3, D=3):
    rng = np.random.default_rng(seed)
    startprob, transmat = _chain(rng, K)
    lam = rng.uniform(0.5, 12.0, (K, D))
    z = _states(rng, startprob, transmat, LENGTHS + [60])
    X = rng.poisson(lam[z])
    start = {"startprob_": rng.dirichlet(np.full(K, 3.0)), "transmat_": _chain(rng, K)[1],
             "lambdas_": lam * rng.uniform(0.6, 1.4, lam.shape)}
    return X[:sum(LENGTHS)], X[sum(LENGTHS):], start


# -- comparison helpers --------------------------------------------------------------------
def _set(model, start):
    for name, value in start.items():
        setattr(model, name, np.array(value, copy=True))
    return model


def _stored_covars(model, ct):
    """Covariances in the type's own shape (hmmlearn stores fitted spherical ones as
    (K, D) with equal columns; hiddenstate as (K,))."""
    c = np.asarray(model._covars_)
    if ct == "spherical" and c.ndim == 2:
        assert_allclose(c, c[:, :1] * np.ones_like(c), rtol=1e-15)
        return c[:, 0]
    return c


def _learned(model, kind, ct=None):
    out = {"startprob_": model.startprob_, "transmat_": model.transmat_}
    if kind == "categorical":
        out["emissionprob_"] = model.emissionprob_
    elif kind == "gaussian":
        out["means_"] = model.means_
        out["covars"] = _stored_covars(model, ct)
    else:
        out["lambdas_"] = model.lambdas_
    return out


def assert_same_fit(ours, theirs, X, X_test, kind, ct=None, pure_em=True):
    """Fit both (already configured) models on X with LENGTHS and compare everything.
    Under pure EM the log-likelihood must also increase (MAP EM increases the log
    posterior instead, which is not what the monitor records)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", hs.errors.DegenerateStateWarning)
        ours.fit(X, LENGTHS)
    theirs.fit(X, LENGTHS)
    h_ours = np.asarray(ours.monitor_.history)
    h_theirs = np.asarray(theirs.monitor_.history)
    assert len(h_ours) == len(h_theirs) == N_ITER
    assert_allclose(h_ours, h_theirs, rtol=RTOL, atol=0)
    if pure_em:
        assert np.all(np.diff(h_ours) > 0)
    ref = _learned(theirs, kind, ct)
    for name, value in _learned(ours, kind, ct).items():
        atol = ATOL_PROB if name in ("startprob_", "transmat_", "emissionprob_") else 0
        assert_allclose(value, ref[name], rtol=RTOL, atol=atol, err_msg=name)
    for data, lengths in ((X, LENGTHS), (X_test, None)):
        assert_allclose(ours.score(data, lengths), theirs.score(data, lengths),
                        rtol=RTOL, atol=0)
        assert_allclose(ours.predict_proba(data, lengths), theirs.predict_proba(data, lengths),
                        rtol=RTOL, atol=ATOL_PROB)
        lp_theirs, post_theirs = theirs.score_samples(data, lengths)
        if type(ours).__module__ == hmm.__name__:  # the compat layer: hmmlearn's meaning
            lp_ours, post_ours = ours.score_samples(data, lengths)
            assert_allclose(lp_ours, lp_theirs, rtol=RTOL, atol=0)
            assert_allclose(post_ours, post_theirs, rtol=RTOL, atol=ATOL_PROB)
        else:  # hs.HMM: log p(x) of each sequence, which hmmlearn's score gives one by one
            bounds = np.cumsum([0, *(lengths or [len(data)])])
            each = [theirs.score(data[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]
            assert_allclose(ours.score_samples(data, lengths), each, rtol=RTOL, atol=0)
        lp_ours, path_ours = ours.decode(data, lengths, algorithm="viterbi")
        lp_theirs, path_theirs = theirs.decode(data, lengths, algorithm="viterbi")
        assert_allclose(lp_ours, lp_theirs, rtol=RTOL, atol=0)
        assert_array_equal(path_ours, path_theirs)


PURE_EM = {"covars_prior": 0.0}  # with hmmlearn's other defaults: maximum likelihood
PRIORS = {"startprob_prior": 2.0, "transmat_prior": 1.5, "means_prior": 0.5,
          "means_weight": 2.0, "covars_prior": 0.3}


# -- compat classes against hmmlearn -----------------------------------------------------
@pytest.mark.parametrize("ct", COV_TYPES)
@pytest.mark.parametrize("priors", ["hmmlearn-defaults", "pure-em", "all-priors"])
def test_gaussian_matches_hmmlearn(ct, priors):
    X, X_test, start = gaussian_problem(ct)
    D = X.shape[1]
    kwargs = {"hmmlearn-defaults": {}, "pure-em": PURE_EM,
              "all-priors": dict(PRIORS, covars_weight=3.0 + (D if ct in ("full", "tied")
                                                              else 0))}[priors]
    common = dict(n_components=3, covariance_type=ct, init_params="", tol=-np.inf,
                  n_iter=N_ITER, **kwargs)
    ours = _set(hmm.GaussianHMM(**common), start)
    theirs = _set(hl.GaussianHMM(**common), start)
    assert_same_fit(ours, theirs, X, X_test, "gaussian", ct, pure_em=priors == "pure-em")
    assert ours.n_features == theirs.n_features == D


@pytest.mark.parametrize("priors", [{}, {"startprob_prior": 3.0, "transmat_prior": 2.0,
                                         "emissionprob_prior": 1.5}])
def test_categorical_matches_hmmlearn(priors):
    X, X_test, start = categorical_problem()
    common = dict(n_components=3, init_params="", tol=-np.inf, n_iter=N_ITER, **priors)
    ours = _set(hmm.CategoricalHMM(**common), start)
    theirs = _set(hl.CategoricalHMM(**common), start)
    assert_same_fit(ours, theirs, X, X_test, "categorical", pure_em=not priors)
    assert ours.n_features == theirs.n_features == 5


def test_poisson_matches_hmmlearn():
    X, X_test, start = poisson_problem()
    common = dict(n_components=3, init_params="", tol=-np.inf, n_iter=N_ITER)
    ours = _set(hmm.PoissonHMM(**common), start)
    theirs = _set(hl.PoissonHMM(**common), start)
    assert_same_fit(ours, theirs, X, X_test, "poisson")


def test_poisson_gamma_prior_is_the_conjugate_update():
    """With a Gamma(a, b) prior the rate update is (a + sum_t g_tk x_t) / (b + sum_t g_tk);
    hmmlearn 0.3.3 uses the total posterior mass N of all states instead of state k's
    (documented difference). Both are checked against the E-step's statistics."""
    X, _, start = poisson_problem()
    a, b = 2.0, 0.5
    common = dict(n_components=3, init_params="", params="l", n_iter=1,
                  lambdas_prior=a, lambdas_weight=b)
    ours = _set(hmm.PoissonHMM(**common), start).fit(X, LENGTHS)
    theirs = _set(hl.PoissonHMM(**common), start).fit(X, LENGTHS)
    gamma = _set(hmm.PoissonHMM(3), start).predict_proba(X, LENGTHS)
    n_k = gamma.sum(axis=0)
    S = gamma.T @ X
    assert_allclose(ours.lambdas_, (a + S) / (b + n_k[:, None]), rtol=1e-10)
    N = n_k.sum()
    assert_allclose(theirs.lambdas_, (a + N * S / n_k[:, None]) / (b + N), rtol=1e-10)


# -- the native estimator against hmmlearn (pure EM) ---------------------------------------
def _native(kind, start, ct=None):
    kw = {"covariance_type": ct} if kind == "gaussian" else {}
    m = hs.HMM(3, emission=kind, init_params="", tol=-np.inf, n_iter=N_ITER, **kw)
    return _set(m, start)


@pytest.mark.parametrize("kind,ct", [("categorical", None), ("poisson", None)]
                         + [("gaussian", ct) for ct in COV_TYPES])
def test_native_hmm_matches_hmmlearn_pure_em(kind, ct):
    if kind == "gaussian":
        X, X_test, start = gaussian_problem(ct, seed=5)
        theirs = hl.GaussianHMM(3, ct, init_params="", tol=-np.inf, n_iter=N_ITER, **PURE_EM)
    elif kind == "categorical":
        X, X_test, start = categorical_problem(seed=6)
        theirs = hl.CategoricalHMM(3, init_params="", tol=-np.inf, n_iter=N_ITER)
    else:
        X, X_test, start = poisson_problem(seed=7)
        theirs = hl.PoissonHMM(3, init_params="", tol=-np.inf, n_iter=N_ITER)
    ours = _native(kind, start, ct)
    _set(theirs, start)
    assert_same_fit(ours, theirs, X, X_test, kind, ct)


# -- hmmlearn's initialisation, sampling and API --------------------------------------------
@pytest.mark.parametrize("cls", ["CategoricalHMM", "GaussianHMM", "PoissonHMM"])
def test_constructor_matches_hmmlearn(cls):
    ours, theirs = getattr(hmm, cls)(), getattr(hl, cls)()
    assert ours.get_params() == theirs.get_params()
    assert type(ours.monitor_).__name__ == "ConvergenceMonitor"
    assert (ours.monitor_.tol, ours.monitor_.n_iter) == (theirs.monitor_.tol,
                                                         theirs.monitor_.n_iter)


@pytest.mark.parametrize("make", [
    lambda m: (m.CategoricalHMM(3, random_state=4, n_iter=5), categorical_problem()[0]),
    lambda m: (m.PoissonHMM(3, random_state=4, n_iter=5), poisson_problem()[0]),
    lambda m: (m.GaussianHMM(3, "full", random_state=4, n_iter=5),
               gaussian_problem("full")[0]),
])
def test_same_seed_same_model_and_samples(make):
    """hmmlearn's random initialisation is reproduced draw for draw: a fit from scratch
    with the same random_state ends at the same parameters, and sampling with the same
    seed gives the same observations and states."""
    ours, X = make(hmm)
    theirs, _ = make(hl)
    ours.fit(X, LENGTHS)
    theirs.fit(X, LENGTHS)
    assert_allclose(ours.monitor_.history, theirs.monitor_.history, rtol=RTOL)
    assert_allclose(ours.transmat_, theirs.transmat_, rtol=RTOL, atol=ATOL_PROB)
    X1, z1 = ours.sample(50, random_state=11)
    X2, z2 = theirs.sample(50, random_state=11)
    assert_array_equal(z1, z2)
    assert_allclose(X1, X2, rtol=1e-8)
    assert X1.dtype.kind == X2.dtype.kind
    X3, z3 = ours.sample(10, random_state=3, currstate=2)
    assert z3[0] == 2 and X3.shape[0] == 10


def test_init_params_semantics(caplog):
    X, _, start = gaussian_problem("diag")
    # letter in init_params + attribute set: overwritten, with hmmlearn's logged warning
    m = hmm.GaussianHMM(3, n_iter=1)
    m.startprob_ = start["startprob_"]
    with caplog.at_level(logging.WARNING):
        m.fit(X, LENGTHS)
    assert any("will be overwritten" in r.getMessage() for r in caplog.records)
    assert not np.allclose(m.startprob_, start["startprob_"])
    # letter absent but attribute missing: initialised anyway (no error)
    m = hmm.GaussianHMM(3, init_params="", n_iter=1, random_state=0).fit(X, LENGTHS)
    assert m.means_.shape == (3, 2) and m.covars_.shape == (3, 2, 2)
    # letter absent and attribute set: kept as set
    m = _set(hmm.GaussianHMM(3, init_params="st", params="st", n_iter=1), start)
    del m.startprob_, m.transmat_
    m.fit(X, LENGTHS)
    assert_allclose(m.means_, start["means_"])


def test_monitor_converged_and_decode_map():
    X, _, start = categorical_problem()
    capped = _set(hmm.CategoricalHMM(3, init_params="", n_iter=3, tol=-np.inf), start)
    capped.fit(X, LENGTHS)
    # stopped by n_iter: hmmlearn says converged, hiddenstate does not
    assert capped.monitor_.iter == capped.monitor_.n_iter == 3
    assert not capped.monitor_.converged
    done = _set(hmm.CategoricalHMM(3, init_params="", n_iter=500, tol=1e-3), start)
    done.fit(X, LENGTHS)
    assert done.monitor_.converged and done.monitor_.iter < 500
    theirs = _set(hl.CategoricalHMM(3, init_params="", n_iter=500, tol=1e-3), start)
    theirs.fit(X, LENGTHS)
    assert done.monitor_.iter == theirs.monitor_.iter
    lp, path = done.decode(X, LENGTHS, algorithm="map")
    lp_ref, path_ref = theirs.decode(X, LENGTHS, algorithm="map")
    assert_allclose(lp, lp_ref, rtol=RTOL)
    assert_array_equal(path, path_ref)
    assert_array_equal(done.predict(X, LENGTHS), theirs.predict(X, LENGTHS))
    assert_allclose(done.get_stationary_distribution(), theirs.get_stationary_distribution(),
                    rtol=1e-10)
    assert_allclose(done.aic(X, LENGTHS), theirs.aic(X, LENGTHS), rtol=RTOL)
    assert_allclose(done.bic(X, LENGTHS), theirs.bic(X, LENGTHS), rtol=RTOL)


@pytest.mark.parametrize("ct", COV_TYPES)
def test_covars_getter_and_setter(ct):
    _, _, start = gaussian_problem(ct)
    m = _set(hmm.GaussianHMM(3, ct), start)
    ref = _set(hl.GaussianHMM(3, ct), start)
    ref.n_features = m.n_features = 2
    assert m.covars_.shape == (3, 2, 2)
    assert_allclose(m.covars_, ref.covars_)
    bad = np.array(start["covars_"], copy=True)
    bad[..., 0] = -1.0
    for model in (m, ref):
        with pytest.raises(ValueError):
            model.covars_ = bad
    with pytest.raises(HiddenStateError):
        m.covars_ = bad


def test_errors_are_valueerrors_and_hiddenstate_errors():
    m = hmm.CategoricalHMM(2)
    with pytest.raises(hmm.NotFittedError):
        m.score([[0], [1]])
    from sklearn.exceptions import NotFittedError as SkNotFitted

    with pytest.raises(SkNotFitted):
        m.predict([[0], [1]])
    with pytest.raises(ValueError, match="integers"):
        m.fit(np.array([[0.5], [1.0]]))
    m.startprob_ = [0.5, 0.6]
    m.transmat_ = [[1, 0], [0, 1]]
    m.emissionprob_ = [[0.5, 0.5], [0.5, 0.5]]
    with pytest.raises(HiddenStateError, match="startprob_"):
        m.score([[0], [1]])
    with pytest.raises(ValueError, match="params"):
        hmm.GaussianHMM(2, params="stmcx").fit(np.zeros((10, 1)))


def test_save_load_and_pickle(tmp_path):
    X, X_test, start = gaussian_problem("full")
    m = _set(hmm.GaussianHMM(3, "full", init_params="", n_iter=3), start).fit(X, LENGTHS)
    m.save(tmp_path / "model")
    loaded = hs.load(tmp_path / "model")
    assert isinstance(loaded, hs.HMM)
    assert_allclose(loaded.score(X_test), m.score(X_test), rtol=1e-12)
    assert_array_equal(loaded.predict(X_test), m.predict(X_test))
    again = pickle.loads(pickle.dumps(m))
    assert_allclose(again.score(X_test), m.score(X_test), rtol=1e-12)


def test_multinomial_hmm_names_its_own_family_for_real_values():
    """Issue 21: MultinomialHMM.fit(floats) said "Poisson emissions"; it names multinomial."""
    from hiddenstate.compat.hmmlearn import MultinomialHMM

    X = np.random.default_rng(0).random((10, 3))
    with pytest.raises(hs.errors.InvalidInputError,
                       match="X: multinomial emissions need non-negative integer counts, got 0.63"):
        MultinomialHMM(n_components=2, random_state=0).fit(X)


# -- hmmlearn threads (issue 30, item 7) -----------------------------------------------------------
def test_a_list_of_sequences_of_different_lengths_is_refused_with_the_fix():
    """hmmlearn #381: CategoricalHMM(2).fit([[0,0,1,1,1,0],[1,1,0,1],[0,1,0,0,1]]) raised a
    raw NumPy error (hmmlearn too); the message now says how to pass the sequences."""
    seqs = [[0, 0, 1, 1, 1, 0], [1, 1, 0, 1], [0, 1, 0, 0, 1]]
    with pytest.raises(hs.errors.InvalidInputError,
                       match=r"3 sequences of different lengths \(6, 4, 5\).*lengths"):
        hmm.CategoricalHMM(2).fit(seqs)
    X = np.concatenate([np.asarray(s).reshape(len(s), -1) for s in seqs])
    model = hmm.CategoricalHMM(2, random_state=0).fit(X, [len(s) for s in seqs])
    assert model.emissionprob_.shape == (2, 2)


def test_one_row_of_many_symbols_is_refused_with_the_fix():
    """hmmlearn #455: fit([V]) with V of 24 symbols raised TypeError (object of type 'int'
    has no len()); it is one row of 24 columns, refused naming the column form."""
    V = list(range(24))
    with pytest.raises(hs.errors.InvalidInputError,
                       match=r"one symbol per row.*\(1, 24\).*reshape\(-1, 1\)"):
        hmm.CategoricalHMM(2).fit([V])
    model = hmm.CategoricalHMM(2, random_state=0).fit(np.asarray(V).reshape(-1, 1))
    assert model.n_features == 24


@pytest.mark.parametrize("cls", [hmm.GaussianHMM, hmm.GMMHMM, hmm.PoissonHMM])
def test_nan_is_refused_before_kmeans_and_the_native_estimator_takes_it(cls):
    """hmmlearn #327: GaussianHMM.fit with NaN crashed inside scikit-learn's KMeans. The
    hmmlearn classes refuse it naming hs.HMM, which fits it (NaN: a missing entry)."""
    X = np.random.default_rng(0).poisson(3.0, size=(60, 1)).astype(float)
    X[[3, 17]] = np.nan
    with pytest.raises(hs.errors.InvalidInputError, match=r"NaN.*hs\.HMM"):
        cls(2, random_state=0).fit(X)
    emission = cls(2).emission
    native = hs.HMM(2, emission=emission, n_iter=20, random_state=0).fit(X)
    assert np.isfinite(native.score(X))

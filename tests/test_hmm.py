"""Estimator-level tests of hiddenstate.HMM: EM behaviour, recovery, errors, persistence."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import tamper
from sklearn.base import clone

import hiddenstate as hs
from hiddenstate.errors import (
    DegenerateStateWarning,
    InvalidInputError,
    ModelFileError,
    NotFittedError,
    ZeroProbabilityError,
)
from hiddenstate.persist import arrays_path


def _gaussian_data(rng, n=600, lengths=(200, 250, 150)):
    m = hs.HMM(3, emission="gaussian", covariance_type="full", init_params="")
    m.startprob_ = np.array([0.6, 0.3, 0.1])
    m.transmat_ = np.array([[0.9, 0.05, 0.05], [0.1, 0.8, 0.1], [0.05, 0.15, 0.8]])
    m.means_ = np.array([[0.0, 0.0], [4.0, 1.0], [-3.0, 3.0]])
    m.covars_ = np.array([np.eye(2), [[1.0, 0.5], [0.5, 1.0]], 0.5 * np.eye(2)])
    m.n_features_ = 2
    X, Z = m.sample(n, random_state=rng)
    return m, X, Z, list(lengths)


@pytest.mark.parametrize("emission,ct", [
    ("categorical", None), ("poisson", None), ("gaussian", "spherical"),
    ("gaussian", "diag"), ("gaussian", "full"), ("gaussian", "tied")])
def test_em_never_decreases(emission, ct):
    rng = np.random.default_rng(3)
    if emission == "categorical":
        X = rng.integers(0, 6, size=(500, 1))
    elif emission == "poisson":
        X = rng.poisson(rng.choice([1.0, 6.0], size=(500, 1)), size=(500, 2))
    else:
        X = _gaussian_data(rng, 500, (200, 300))[1]
    kw = {"covariance_type": ct} if ct else {}
    m = hs.HMM(4, emission=emission, n_iter=40, tol=-np.inf, random_state=1, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateStateWarning)
        m.fit(X, [200, 300])
    h = np.array(m.monitor_.history)
    assert len(h) == 40  # tol=-inf runs every iteration
    rel = np.diff(h) / np.abs(h[1:])
    assert rel.min() > -1e-9
    assert h[-1] > h[0]


def test_gaussian_recovery_and_decoding():
    rng = np.random.default_rng(0)
    true, X, Z, L = _gaussian_data(rng, 3000, (1000, 1000, 1000))
    m = hs.HMM(3, emission="gaussian", covariance_type="full", n_init=3, random_state=0)
    m.fit(X, L)
    order = np.argsort(m.means_[:, 0])
    true_order = np.argsort(true.means_[:, 0])
    assert np.allclose(m.means_[order], true.means_[true_order], atol=0.15)
    assert np.allclose(m.transmat_[np.ix_(order, order)],
                       true.transmat_[np.ix_(true_order, true_order)], atol=0.05)
    # decoded states agree with the truth up to the label permutation
    perm = np.empty(3, dtype=int)
    perm[order] = true_order
    acc = np.mean(perm[m.predict(X, L)] == Z)
    assert acc > 0.95
    # the fitted model explains the data at least as well as the truth (it is the MLE)
    assert m.score(X, L) >= true.score(X, L) - 1e-6


def test_categorical_identical_emissions_score_exactly_long_sequence():
    """With identical emission rows the hidden chain is irrelevant: log p(x) = sum log b(x_t).
    A 10^6-step sequence must give exactly that (no underflow)."""
    rng = np.random.default_rng(5)
    b = rng.dirichlet(np.ones(7))
    m = hs.HMM(3, init_params="")
    m.startprob_ = rng.dirichlet(np.ones(3))
    m.transmat_ = rng.dirichlet(np.ones(3), size=3)
    m.emissionprob_ = np.tile(b, (3, 1))
    m.n_features_ = 7
    x = rng.integers(0, 7, size=10**6)
    expected = np.log(b)[x].sum()
    got = m.score(x)
    assert np.isfinite(got)
    assert abs(got - expected) <= 1e-10 * abs(expected)
    lp, states = m.decode(x[:1000])
    assert np.isfinite(lp)


def test_sampling_matches_parameters():
    rng = np.random.default_rng(11)
    m = hs.HMM(2, init_params="")
    m.startprob_ = np.array([1.0, 0.0])
    m.transmat_ = np.array([[0.7, 0.3], [0.2, 0.8]])
    m.emissionprob_ = np.array([[0.5, 0.5, 0.0], [0.0, 0.1, 0.9]])
    m.n_features_ = 3
    n = 200_000
    X, Z = m.sample(n, random_state=rng)
    assert Z[0] == 0
    counts = np.zeros((2, 2))
    np.add.at(counts, (Z[:-1], Z[1:]), 1)
    est = counts / counts.sum(1, keepdims=True)
    # binomial standard error at n_i ~ 1e5 is ~1.5e-3: 5 sigma
    assert np.allclose(est, m.transmat_, atol=8e-3)
    emis = np.array([np.bincount(X[Z == k, 0], minlength=3) / np.sum(Z == k) for k in (0, 1)])
    assert np.allclose(emis, m.emissionprob_, atol=8e-3)


def test_init_params_keeps_user_values_and_params_freezes():
    rng = np.random.default_rng(2)
    X = rng.integers(0, 4, size=(300, 1))
    m = hs.HMM(2, init_params="e", params="e", n_iter=5, random_state=0)
    m.startprob_ = np.array([0.25, 0.75])
    m.transmat_ = np.array([[0.9, 0.1], [0.3, 0.7]])
    m.fit(X)
    assert np.array_equal(m.startprob_, [0.25, 0.75])
    assert np.array_equal(m.transmat_, [[0.9, 0.1], [0.3, 0.7]])
    with pytest.raises(InvalidInputError, match="transmat_"):
        hs.HMM(2, init_params="se").fit(X)


def test_n_init_reproducible_and_keeps_best():
    rng = np.random.default_rng(4)
    X = rng.integers(0, 5, size=(400, 1))
    a = hs.HMM(3, n_init=4, n_iter=30, random_state=7).fit(X)
    b = hs.HMM(3, n_init=4, n_iter=30, random_state=7).fit(X)
    assert np.array_equal(a.transmat_, b.transmat_)
    singles = []
    gen = np.random.default_rng(7)
    for _ in range(4):  # the same stream of initialisations, one at a time
        s = hs.HMM(3, n_init=1, n_iter=30, random_state=gen).fit(X)
        singles.append(s.monitor_.history[-1])
    assert a.monitor_.history[-1] == pytest.approx(max(singles), rel=1e-12)


def test_clone_and_params():
    m = hs.HMM(4, emission="gaussian", covariance_type="tied", n_iter=7, random_state=3)
    c = clone(m)
    assert c.get_params() == m.get_params()
    assert not hasattr(c, "transmat_")


def test_dead_state_is_kept_with_warning_no_nan():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 1))
    m = hs.HMM(2, emission="gaussian", init_params="", n_iter=3)
    m.startprob_ = np.array([1.0, 0.0])
    m.transmat_ = np.array([[1.0, 0.0], [0.5, 0.5]])
    m.means_ = np.array([[0.0], [50.0]])
    m.covars_ = np.array([[1.0], [1.0]])
    with pytest.warns(DegenerateStateWarning, match=r"\[1\]"):
        m.fit(X)
    assert np.all(np.isfinite(m.means_)) and np.all(np.isfinite(m._covars_))
    assert m.means_[1, 0] == 50.0


def test_singular_covariance_floored_with_warning():
    X = np.vstack([np.zeros((100, 2)), np.ones((100, 2))])
    m = hs.HMM(2, emission="gaussian", covariance_type="full", random_state=0, n_iter=5)
    with pytest.warns(DegenerateStateWarning, match="min_covar"):
        m.fit(X)
    assert np.all(np.isfinite(m.covars_))
    assert np.linalg.eigvalsh(m.covars_).min() >= m.min_covar * (1 - 1e-9)
    assert np.isfinite(m.score(X))


@pytest.mark.parametrize("X,lengths,kw,match", [
    (np.array([[0], [1], [-2]]), None, {}, "negative"),  # -1 marks a missing symbol
    (np.array([[0.5], [1.0]]), None, {}, "whole numbers"),
    (np.array([["a"], ["b"]]), None, {}, "integers"),
    (np.array([[0], [1], [2]]), [2, 2], {}, "sums to 4"),
    (np.array([[0], [1], [2]]), [3, 0], {}, "empty sequences"),
    (np.zeros((0, 1), dtype=int), None, {}, "no samples"),
    (np.array([[0.0, np.inf]]), None, {"emission": "gaussian"}, "inf"),  # NaN: missing
    (np.ones((3, 2, 2)), None, {"emission": "gaussian"}, "2-D"),
    (np.array([[1.5]]), None, {"emission": "poisson"}, "integer counts"),
])
def test_bad_input_names_argument(X, lengths, kw, match):
    with pytest.raises(InvalidInputError, match=match):
        hs.HMM(2, **kw).fit(X, lengths)


@pytest.mark.parametrize("kw,match", [
    ({"n_states": 0}, "n_states"), ({"emission": "beta"}, "emission"),
    ({"emission": "gaussian", "covariance_type": "round"}, "covariance_type"),
    ({"init_params": "xyz"}, "init_params"), ({"n_iter": 0}, "n_iter")])
def test_bad_hyper_parameters(kw, match):
    with pytest.raises(InvalidInputError, match=match):
        hs.HMM(**kw).fit(np.array([[0], [1]]))


def test_bad_user_parameters_and_unfitted():
    m = hs.HMM(2, init_params="e")
    m.startprob_ = np.array([0.5, 0.6])
    m.transmat_ = np.eye(2)
    with pytest.raises(InvalidInputError, match="startprob_.*sums to"):
        m.fit(np.array([[0], [1]]))
    with pytest.raises(NotFittedError):
        hs.HMM(2).score(np.array([[0]]))
    fitted = hs.HMM(2, random_state=0, n_iter=2).fit(np.array([[0], [1], [2]]))
    with pytest.raises(InvalidInputError, match="out of range"):
        fitted.score(np.array([[5]]))


def test_impossible_sequence_is_an_error_not_nan():
    m = hs.HMM(2, init_params="", n_iter=2)
    m.startprob_ = np.array([1.0, 0.0])
    m.transmat_ = np.array([[1.0, 0.0], [0.0, 1.0]])
    m.emissionprob_ = np.array([[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(ZeroProbabilityError, match="sequence 0"):
        m.fit(np.array([[0], [1]]))


@pytest.mark.parametrize("emission,ct", [("categorical", None), ("gaussian", "full"),
                                         ("gaussian", "spherical"), ("poisson", None)])
def test_save_load_round_trip(tmp_path, emission, ct):
    rng = np.random.default_rng(9)
    X = (rng.integers(0, 5, size=(200, 1)) if emission == "categorical"
         else rng.poisson(3, size=(200, 2)) if emission == "poisson"
         else rng.normal(size=(200, 2)))
    kw = {"covariance_type": ct} if ct else {}
    m = hs.HMM(2, emission=emission, n_iter=5, tol=-np.inf, random_state=0, **kw).fit(X)
    m.save(tmp_path / "m")
    r = hs.load(tmp_path / "m")
    assert r.get_params() == m.get_params()
    assert r.score(X) == m.score(X)
    assert r.monitor_.history == m.monitor_.history
    assert np.array_equal(r.predict(X), m.predict(X))


def test_load_rejects_tampering(tmp_path):
    X = np.array([[0], [1], [2], [1]])
    m = hs.HMM(2, n_iter=3, random_state=0).fit(X)
    m.save(tmp_path / "m")
    # changed array contents: checksum mismatch
    npz = arrays_path(tmp_path / "m")
    arrs = dict(np.load(npz))
    arrs["transmat_"] = arrs["transmat_"][::-1].copy()
    np.savez(npz, **arrs)
    with pytest.raises(ModelFileError, match="checksum"):
        hs.load(tmp_path / "m")
    # an object array (pickle) in the archive is refused, never unpickled
    m.save(tmp_path / "p")
    np.savez(arrays_path(tmp_path / "p"), transmat_=np.array([object()], dtype=object))
    with pytest.raises(ModelFileError):
        hs.load(tmp_path / "p")
    # unknown class, bad version, bad JSON, bad hyper-parameters
    for edit, match in [(lambda d: d.update({"class": "os.system"}), "unknown model class"),
                        (lambda d: d.update({"version": 99}), "version"),
                        (lambda d: d["params"].update({"n_states": -1}), "n_states")]:
        m.save(tmp_path / "j")
        tamper.edit_json(tmp_path / "j", edit)  # resealed: the content check is tested
        with pytest.raises(ModelFileError, match=match):
            hs.load(tmp_path / "j")
    # a plausible hand edit (another tol) is refused by the seal of model.json
    m.save(tmp_path / "j")
    meta = json.loads((tmp_path / "j" / "model.json").read_text())
    meta["params"]["tol"] = 0.5
    (tmp_path / "j" / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelFileError, match="model.json was modified"):
        hs.load(tmp_path / "j")
    (tmp_path / "j" / "model.json").write_text("{not json")
    with pytest.raises(ModelFileError, match="JSON"):
        hs.load(tmp_path / "j")
    with pytest.raises(ModelFileError, match="not a saved model"):
        hs.load(tmp_path / "nowhere")


def test_map_decoding_and_posteriors_consistent():
    rng = np.random.default_rng(12)
    X = rng.integers(0, 4, size=(120, 1))
    m = hs.HMM(3, n_iter=10, random_state=0).fit(X, [60, 60])
    post = m.predict_proba(X, [60, 60])
    lp = m.score(X, [60, 60])
    assert np.allclose(post.sum(1), 1.0, atol=1e-12)
    assert lp == m.score_samples(X, [60, 60]).sum()
    lp_map, states = m.decode(X, [60, 60], algorithm="map")
    assert np.array_equal(states, post.argmax(1))
    lp_vit, vstates = m.decode(X, [60, 60])
    assert lp_vit <= lp  # log p(x, z*) <= log p(x)


def test_save_load_array_priors_and_dtypes(tmp_path):
    X = np.random.default_rng(2).integers(0, 3, size=(150, 1))
    prior = np.array([[2.0, 1.0], [1.0, 3.0]])
    m = hs.HMM(2, learn="map", transmat_prior=prior, n_iter=5, random_state=0).fit(X)
    m.save(tmp_path / "m")
    r = hs.load(tmp_path / "m")
    assert np.array_equal(r.transmat_prior, prior) and r.transmat_prior.dtype == prior.dtype
    assert np.array_equal(r.transmat_, m.transmat_)


# -- default initialisation ----------------------------------------------------------------------
def _brute_autocorrelation(X, lengths, lag, symbols):
    """Pooled lag autocorrelation by explicit loops over the pairs inside each sequence."""
    seqs = np.split(np.asarray(X), np.cumsum(lengths)[:-1])
    pairs = [(s[t], s[t + lag]) for s in seqs for t in range(len(s) - lag)]
    if symbols:
        x = np.asarray(X).ravel()
        f2 = sum((np.sum(x == w) / len(x)) ** 2 for w in np.unique(x))
        same = np.mean([a.item() == b.item() for a, b in pairs])
        return (same - f2) / (1 - f2)
    Z = (np.asarray(X) - np.mean(X, axis=0)) / np.std(X, axis=0)
    zs = np.split(Z, np.cumsum(lengths)[:-1])
    prods = [np.mean(z[t] * z[t + lag]) for z in zs for t in range(len(z) - lag)]
    return float(np.mean(prods))


def test_autocorrelation_pools_pairs_within_sequences_only():
    from hiddenstate.models.hmm.init import _autocorrelation

    rng = np.random.default_rng(3)
    lengths = [5, 1, 7, 2]
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    x = rng.integers(0, 3, size=(15, 1))
    y = rng.normal(size=(15, 2)) * [1.0, 10.0]
    for lag in (1, 2):
        assert np.isclose(_autocorrelation(x, True, bounds, lag),
                          _brute_autocorrelation(x, lengths, lag, True))
        assert np.isclose(_autocorrelation(y, False, bounds, lag),
                          _brute_autocorrelation(y, lengths, lag, False))


def test_default_transition_start_matches_the_data_persistence():
    """The start is lambda I + (1 - lambda) / K with lambda = rho_2 / rho_1: close to the
    teacher's second eigenvalue on a sticky HMM, 0 (flat) on data without persistence."""
    from hiddenstate.models.hmm import persistence

    teacher = hs.HMM(2, init_params="")
    teacher.startprob_ = np.array([0.5, 0.5])
    teacher.transmat_ = np.array([[0.95, 0.05], [0.1, 0.9]])   # eigenvalue 0.85
    teacher.emissionprob_ = np.array([[0.7, 0.2, 0.1], [0.05, 0.15, 0.8]])
    teacher.n_features_ = 3
    X, _ = teacher.sample(50_000, random_state=0)
    lam = persistence(X, True, np.array([0, len(X)]))
    assert abs(lam - 0.85) < 0.03
    start = hs.HMM(3, params="", n_iter=1, random_state=0).fit(X)   # nothing updated
    assert np.allclose(start.transmat_, lam * np.eye(3) + (1 - lam) / 3)
    assert np.allclose(start.startprob_, 1 / 3)
    rng = np.random.default_rng(0)
    assert persistence(rng.permutation(X), True, np.array([0, len(X)])) == 0.0
    alternating = np.tile([0, 1], 500)[:, None]                   # rho_1 = -1
    assert persistence(alternating, True, np.array([0, 1000])) == 0.0
    flat = hs.HMM(4, params="", n_iter=1, random_state=0).fit(alternating)
    assert np.allclose(flat.transmat_, 0.25)
    # Gaussian readout of a persistent chain: the same estimate, whatever the noise scale
    g = hs.HMM(2, emission="gaussian", init_params="")
    g.startprob_, g.transmat_ = teacher.startprob_, teacher.transmat_
    g.means_, g.covars_ = np.array([[0.0], [1.0]]), np.full((2, 1), 0.25)
    g.n_features_ = 1
    Y, _ = g.sample(50_000, random_state=1)
    assert abs(persistence(Y, False, np.array([0, len(Y)])) - 0.85) < 0.03
    assert persistence(Y * 1000.0, False, np.array([0, len(Y)])) == \
        pytest.approx(persistence(Y, False, np.array([0, len(Y)])))


def test_streaming_learners_start_from_a_fixed_persistence():
    from hiddenstate.models.hmm import STREAM_PERSISTENCE

    X = np.random.default_rng(0).integers(0, 3, size=(200, 1))
    m = hs.HMM(3, learn="online-em", random_state=0,
               learner_options={"warmup": 10**6}).fit(X)   # no M-step yet: the start
    s = STREAM_PERSISTENCE
    assert np.allclose(m.transmat_, s * np.eye(3) + (1 - s) / 3)


def test_positional_arguments_are_read_by_meaning_in_the_error():
    """Issue 27: HMM(3, "gaussian", "full") said only "n_features: expected an integer >= 1,
    got 'full'". It warns that the arguments after n_states go by keyword (naming what each
    value was read as) and the error names the parameter the value belongs to."""
    X = np.zeros((10, 1))
    with pytest.warns(FutureWarning, match="emission='gaussian', n_features='full'"):
        m = hs.HMM(3, "gaussian", "full")
    with pytest.raises(InvalidInputError, match=r"^n_features: .* got 'full', which is a "
                                                r"value of covariance_type: pass "
                                                r"covariance_type='full'"):
        m.fit(X)
    with pytest.raises(InvalidInputError, match=r"which is a value of emission: pass "
                                                r"emission='poisson'"):
        hs.HMM(3, n_features="poisson").fit(X)
    assert hs.HMM(3, emission="gaussian", covariance_type="full").fit(
        np.random.default_rng(0).normal(size=(30, 1))).covars_.shape == (3, 1, 1)


def test_stationary_distribution_solves_pi_a_equals_pi():
    """HMM.get_stationary_distribution (issue 30, item 7): pi A = pi on random chains
    (against the power method), 0 on transient states, and refused with two closed
    classes."""
    rng = np.random.default_rng(0)
    model = hs.HMM(5, n_features=2)
    model.startprob_ = np.full(5, 0.2)
    model.emissionprob_ = np.full((5, 2), 0.5)
    for _ in range(5):
        A = rng.dirichlet(np.ones(5), size=5)
        model.transmat_ = A
        pi = model.get_stationary_distribution()
        power = np.linalg.matrix_power(A, 2000)[0]
        np.testing.assert_allclose(pi, power, rtol=1e-10)
    model = hs.HMM(3, n_features=2)
    model.startprob_ = [1.0, 0.0, 0.0]
    model.emissionprob_ = np.full((3, 2), 0.5)
    model.transmat_ = [[0.5, 0.5, 0.0], [0.0, 0.9, 0.1], [0.0, 0.2, 0.8]]
    np.testing.assert_allclose(model.get_stationary_distribution(), [0.0, 2 / 3, 1 / 3],
                               rtol=1e-14, atol=1e-16)
    model.transmat_ = [[0.5, 0.25, 0.25], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    with pytest.raises(InvalidInputError, match="2 closed classes"):
        model.get_stationary_distribution()

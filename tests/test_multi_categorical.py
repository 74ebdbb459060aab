"""Several categorical features per step (``X`` of shape ``(n, F)``): a product of
per-feature categoricals, each with its own alphabet, against enumeration."""

import numpy as np
import pytest
from brute_force import dataset_posteriors

import hiddenstate as hs
from hiddenstate.errors import InvalidInputError

LENGTHS = [4, 3]
START = np.array([0.6, 0.4])
TRANS = np.array([[0.7, 0.3], [0.2, 0.8]])
# feature 0: 3 symbols, feature 1: 2 symbols (zeros past its alphabet)
B = np.array([[[0.5, 0.3, 0.2], [0.1, 0.3, 0.6]],
              [[0.9, 0.1, 0.0], [0.25, 0.75, 0.0]]])
X = np.array([[0, 1], [2, 0], [1, -1], [2, 1], [0, 0], [-1, 1], [1, 1]])


def _model(**kw):
    m = hs.HMM(2, n_features=[3, 2], init_params="", n_iter=1, tol=-np.inf, **kw)
    m.startprob_, m.transmat_, m.emissionprob_ = START, TRANS, B
    return m


def _log_e():
    out = np.zeros((len(X), 2))
    for f in range(2):
        seen = X[:, f] >= 0
        out[seen] += np.log(B[f].T[X[seen, f]])
    return out


def test_multi_feature_matches_enumeration():
    ref = dataset_posteriors(START, TRANS, _log_e(), LENGTHS)
    m = _model()
    np.testing.assert_allclose(m.score_samples(X, LENGTHS), ref["loglik"], rtol=1e-12)
    np.testing.assert_allclose(m.predict_proba(X, LENGTHS), ref["gamma"], atol=1e-12)
    np.testing.assert_array_equal(m.predict(X, LENGTHS), ref["viterbi_path"])
    imputed = m.impute(X, LENGTHS)
    g = ref["gamma"]
    assert imputed[2, 1] == np.argmax(g[2] @ B[1]) and imputed[5, 0] == np.argmax(g[5] @ B[0])
    m.fit(X, LENGTHS)
    for f in range(2):
        counts = np.zeros((2, 3))
        for t in np.flatnonzero(X[:, f] >= 0):
            counts[:, X[t, f]] += g[t]
        np.testing.assert_allclose(m.emissionprob_[f], counts / counts.sum(1, keepdims=True),
                                   rtol=1e-12)
    np.testing.assert_allclose(m.transmat_, ref["trans"] / ref["trans"].sum(1, keepdims=True),
                               rtol=1e-12)


@pytest.mark.parametrize("learn", ["em", "map", "vb", "vt", "kvt"])
def test_every_batch_mode_keeps_each_feature_in_its_alphabet(learn, tmp_path):
    rng = np.random.default_rng(0)
    z = np.repeat([0, 1, 0, 1], 40)
    data = np.stack([np.where(z == 0, rng.integers(0, 2, 160), rng.integers(2, 5, 160)),
                     rng.integers(0, 2, 160), np.where(z == 0, 0, rng.integers(0, 3, 160))], 1)
    prior = {"emissionprob_prior": 2.0} if learn in ("map", "vt", "kvt") else {}
    m = hs.HMM(2, learn=learn, n_iter=8, random_state=0, **prior).fit(data, [80, 80])
    assert m.n_features_ == (5, 2, 3)
    assert m.emissionprob_.shape == (3, 2, 5)
    assert np.all(m.emissionprob_[1, :, 2:] == 0) and np.all(m.emissionprob_[2, :, 3:] == 0)
    np.testing.assert_allclose(m.emissionprob_.sum(2), 1.0)
    agree = np.mean(m.predict(data, [80, 80]) == z)
    assert max(agree, 1 - agree) > 0.9
    m.save(tmp_path / "m")
    loaded = hs.load(tmp_path / "m")
    assert loaded.n_features_ == (5, 2, 3)
    assert loaded.score(data, [80, 80]) == m.score(data, [80, 80])


def test_multi_feature_inputs_validated():
    m = _model()
    with pytest.raises(InvalidInputError, match="3 columns but the model has 2"):
        m.score(np.zeros((4, 3), dtype=int))
    with pytest.raises(InvalidInputError, match=r"X\[:, 1\].*out of range"):
        m.score(np.array([[0, 2]]))
    bad = B.copy()
    bad[1, 0] = [0.5, 0.25, 0.25]                # mass past feature 1's two symbols
    m.emissionprob_ = bad
    with pytest.raises(InvalidInputError, match="feature 1 has 2 symbols"):
        m.score(X)
    with pytest.raises(InvalidInputError, match="n_features"):
        hs.HMM(2, n_features=[3]).fit(X)

"""Mixed emissions (``HMM(emission={"gaussian": [...], "categorical": [...], "poisson":
[...]})``; hiddenstate.families.mixed): the log-likelihood and one EM step against
enumeration of every state path with each column's density written out (missing entries
included), parameter recovery from sampled data in every batch mode, the distributed fit,
fixed entries, save/load and the refusals."""

import numpy as np
import pytest
from brute_force import path_log_joint
from scipy.special import gammaln, logsumexp

import hiddenstate as hs
from hiddenstate.errors import InvalidInputError

SPEC = {"gaussian": [0, 2], "categorical": [1], "poisson": [3]}
nan = np.nan


def _model(**kw):
    m = hs.HMM(2, emission=SPEC, n_features=[1, 3, 1, 1], **kw)
    m.startprob_ = [0.6, 0.4]
    m.transmat_ = [[0.8, 0.2], [0.3, 0.7]]
    m.means_ = [[0.0, 1.0], [2.0, -1.0]]
    m.covars_ = [[1.0, 0.5], [2.0, 1.0]]
    m.emissionprob_ = [[0.5, 0.3, 0.2], [0.1, 0.3, 0.6]]
    m.lambdas_ = [[1.0], [4.0]]
    return m


def _column_logs(m, x):
    """log p(x | state) of one row, column by column (a NaN column: no term)."""
    out = np.zeros(2)
    for k in range(2):
        for j, c in enumerate((0, 2)):
            if not np.isnan(x[c]):
                v = m.covars_[k, j, j]
                out[k] += -0.5 * (np.log(2 * np.pi * v) + (x[c] - m.means_[k, j]) ** 2 / v)
        if not np.isnan(x[1]):
            out[k] += np.log(m.emissionprob_[k, int(x[1])])
        if not np.isnan(x[3]):
            lam = m.lambdas_[k, 0]
            out[k] += x[3] * np.log(lam) - lam - gammaln(x[3] + 1)
    return out


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=9), rng.integers(0, 3, 9), rng.normal(size=9),
                         rng.poisson(2.0, 9)]).astype(float)
    X[1, 0] = X[4, 1] = X[4, 3] = X[6, 2] = nan
    X[7] = nan                      # nothing observed at this step
    return X, [5, 4]


def test_log_likelihood_and_one_em_step_against_enumeration():
    X, lengths = _data()
    m = _model()
    log_e = np.array([_column_logs(m, x) for x in X])
    bounds = np.cumsum([0] + lengths)
    total, gam = 0.0, []
    start, trans = np.zeros(2), np.zeros((2, 2))
    for s in range(2):
        paths, lp = path_log_joint(m.startprob_, m.transmat_, log_e[bounds[s]:bounds[s + 1]])
        ll = logsumexp(lp)
        total += ll
        p = np.exp(lp - ll)
        g = np.zeros((lengths[s], 2))
        for t in range(lengths[s]):
            np.add.at(g[t], paths[:, t], p)
        for t in range(1, lengths[s]):
            np.add.at(trans, (paths[:, t - 1], paths[:, t]), p)
        start += g[0]
        gam.append(g)
    gam = np.concatenate(gam)
    assert m.score(X, lengths) == pytest.approx(total, rel=1e-13)
    np.testing.assert_allclose(m.predict_proba(X, lengths), gam, rtol=1e-12, atol=1e-15)

    fit = _model(init_params="", n_iter=1, tol=-np.inf, min_covar=0.0).fit(X, lengths)
    assert fit.monitor_.history[0] == pytest.approx(total, rel=1e-13)
    np.testing.assert_allclose(fit.transmat_, trans / trans.sum(1, keepdims=True), rtol=1e-12)
    # Gaussian columns: a missing entry of a row with another Gaussian column observed is
    # a latent variable (its conditional mean and variance under the E-step's parameters);
    # a row with no Gaussian column observed is left out
    rows = ~np.isnan(X[:, [0, 2]]).all(axis=1)
    w = gam[rows]
    for j, c in enumerate((0, 2)):
        x = X[rows, c, None]
        filled = np.where(np.isnan(x), m.means_[:, j], x)
        extra = np.where(np.isnan(x), m.covars_[:, j, j], 0.0)
        mean = (w * filled).sum(0) / w.sum(0)
        var = (w * ((filled - mean) ** 2 + extra)).sum(0) / w.sum(0)
        np.testing.assert_allclose(fit.means_[:, j], mean, rtol=1e-12)
        np.testing.assert_allclose(fit.covars_[:, j, j], var, rtol=1e-10)
    seen = ~np.isnan(X[:, 1])
    counts = np.zeros((2, 3))
    for t in np.flatnonzero(seen):
        counts[:, int(X[t, 1])] += gam[t]
    np.testing.assert_allclose(fit.emissionprob_, counts / counts.sum(1, keepdims=True),
                               rtol=1e-12)
    seen = ~np.isnan(X[:, 3])
    rate = (gam[seen] * X[seen, 3, None]).sum(0) / gam[seen].sum(0)
    np.testing.assert_allclose(fit.lambdas_[:, 0], rate, rtol=1e-12)


@pytest.mark.parametrize("learn", ["em", "map", "vb", "vt", "kvt"])
def test_parameters_are_recovered_from_sampled_data(learn):
    teacher = _model()
    teacher.transmat_ = [[0.95, 0.05], [0.1, 0.9]]
    X, Z = teacher.sample(4000, random_state=1)
    X[np.random.default_rng(2).random(X.shape) < 0.1] = nan    # 10% missing entries
    m = hs.HMM(2, emission=SPEC, learn=learn, k_best=2, n_iter=200, tol=1e-6,
               random_state=0).fit(X)
    order = np.argsort(m.means_[:, 0])  # teacher: state 0 has the smaller first mean
    assert np.mean(order[m.predict(X)] == Z) > 0.97
    np.testing.assert_allclose(m.means_[order], teacher.means_, atol=0.1)
    np.testing.assert_allclose(m.covars_[order], teacher.covars_, atol=0.15)
    np.testing.assert_allclose(m.emissionprob_[order], teacher.emissionprob_, atol=0.05)
    np.testing.assert_allclose(m.lambdas_[order], teacher.lambdas_, rtol=0.08)
    np.testing.assert_allclose(m.transmat_[np.ix_(order, order)], teacher.transmat_, atol=0.03)


def test_several_categorical_columns_and_sampling_layout():
    spec = {"categorical": [0, 2], "gaussian": [1]}
    m = hs.HMM(2, emission=spec, n_features=[3, 1, 4])
    m.startprob_, m.transmat_ = [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]]
    B = np.zeros((2, 2, 4))
    B[0, :, :3] = [[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]]
    B[1] = [[0.7, 0.1, 0.1, 0.1], [0.1, 0.1, 0.1, 0.7]]
    m.emissionprob_, m.means_, m.covars_ = B, [[0.0], [3.0]], [[1.0], [1.0]]
    X, Z = m.sample(2000, random_state=0)
    assert set(np.unique(X[:, 0])) <= {0, 1, 2} and set(np.unique(X[:, 2])) <= {0, 1, 2, 3}
    fit = hs.HMM(2, emission=spec, n_iter=100, random_state=0).fit(X)
    assert fit.emissionprob_.shape == (2, 2, 4) and fit.n_features_ == (3, 1, 4)
    assert max(np.mean(fit.predict(X) == Z), np.mean(fit.predict(X) != Z)) > 0.97


def test_save_load_and_fixed_entries(tmp_path):
    X, _ = _model().sample(300, random_state=3)
    m = hs.HMM(2, emission=SPEC, n_iter=20, random_state=0,
               fixed={"lambdas": [[1.0], [nan]], "emissionprob": [[nan, nan, 0.2],
                                                                  [nan] * 3]}).fit(X)
    assert m.lambdas_[0, 0] == 1.0 and m.emissionprob_[0, 2] == 0.2
    m.save(tmp_path / "m")
    loaded = hs.load(tmp_path / "m")
    assert loaded.emission == m.emission and loaded.n_features_ == m.n_features_
    np.testing.assert_array_equal(loaded.score_samples(X), m.score_samples(X))


def test_distributed_fit_equals_the_local_fit():
    pytest.importorskip("distributed")
    from hiddenstate import distributed as hsd

    X, _ = _model().sample(400, random_state=4)
    X[::7, 1] = nan
    lengths = [100, 150, 150]
    kw = dict(emission=SPEC, n_iter=10, tol=-np.inf, random_state=0)
    local = hs.HMM(2, **kw).fit(X, lengths)
    with hsd.local_client(1, processes=False) as client:
        dist = hsd.fit(hs.HMM(2, **kw), X, client, lengths=lengths, n_partitions=3)
    np.testing.assert_allclose(dist.monitor_.history, local.monitor_.history, rtol=1e-12)
    np.testing.assert_allclose(dist.lambdas_, local.lambdas_, rtol=1e-12)


@pytest.mark.parametrize("kwargs, X, match", [
    ({"emission": {"gmm": [0]}}, np.zeros((4, 1)), "cannot be mixed"),
    ({"emission": {"gaussian": [0], "poisson": [2]}}, np.zeros((4, 3)), "0 .. 1"),
    ({"emission": {"gaussian": [0], "poisson": []}}, np.zeros((4, 1)), "non-empty"),
    ({"emission": SPEC, "learn": "online-em"}, np.zeros((4, 4)), "streaming"),
    ({"emission": SPEC, "n_features": [1, 3]}, np.zeros((4, 4)), "one entry per column"),
    ({"emission": SPEC}, np.zeros((4, 3)), "shape"),
    ({"emission": SPEC}, np.array([[0.0, 1.5, 0.0, 1.0]] * 4), r"X\[:, 1\]"),
    ({"emission": SPEC}, np.array([[0.0, 1.0, 0.0, -1.0]] * 4), r"X\[:, 3\]"),
])
def test_invalid_mixed_models_and_data_are_refused(kwargs, X, match):
    with pytest.raises(InvalidInputError, match=match):
        hs.HMM(2, n_iter=2, **kwargs).fit(X)

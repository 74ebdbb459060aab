"""Sample weights (``fit(..., sample_weight=)``; hiddenstate.models.hmm.weights).

Integer sequence weights are repeated sequences, exactly (every batch mode, dense, structured
and segmented chains, the distributed fit); an observation weight of 0 is a missing
observation; an observation weight w raises the step's emission term to w (integer w: w
copies of the observation emitted from the same state), checked against enumeration of
every state path on a tiny model."""

import numpy as np
import pytest
from brute_force import path_log_joint
from scipy.special import logsumexp

import hiddenstate as hs
from hiddenstate.errors import InvalidInputError

MODES = ["em", "map", "vb", "vt", "kvt"]


def _start(model, emission):
    model.startprob_ = [0.6, 0.4]
    model.transmat_ = [[0.8, 0.2], [0.3, 0.7]]
    if emission == "categorical":
        model.emissionprob_ = [[0.5, 0.3, 0.2], [0.1, 0.3, 0.6]]
    else:
        model.means_ = [[0.0], [2.0]]
        model.covars_ = [[1.0], [1.5]]
    return model


def _data(emission, lengths, seed):
    rng = np.random.default_rng(seed)
    N = sum(lengths)
    if emission == "categorical":
        return rng.integers(0, 3, N)
    return rng.normal(size=(N, 1)) + 2.0 * rng.integers(0, 2, (N, 1))


def _repeat(X, lengths, counts):
    bounds = np.cumsum([0] + list(lengths))
    parts = [X[bounds[i]:bounds[i + 1]] for i in range(len(lengths))]
    Xr = np.concatenate([p for p, c in zip(parts, counts, strict=True) for _ in range(c)])
    Lr = [n for n, c in zip(lengths, counts, strict=True) for _ in range(c)]
    return Xr, Lr


def _fit(X, lengths, emission, learn, **kw):
    options = {"n_iter": 12, **kw.pop("model", {})}
    model = _start(hs.HMM(2, emission=emission, init_params="", tol=-np.inf, learn=learn,
                          k_best=2, **options), emission)
    return model.fit(X, lengths, **kw)


@pytest.mark.parametrize("emission", ["categorical", "gaussian"])
@pytest.mark.parametrize("learn", MODES)
def test_integer_sequence_weights_are_repeated_sequences(emission, learn):
    lengths, counts = [5, 7, 3], [2, 1, 3]
    X = _data(emission, lengths, 0)
    a = _fit(X, lengths, emission, learn, sample_weight=counts)
    b = _fit(*_repeat(X, lengths, counts), emission, learn)
    np.testing.assert_allclose(a.monitor_.history, b.monitor_.history, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.transmat_, b.transmat_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.startprob_, b.startprob_, rtol=0, atol=1e-12)
    for key, value in b.emission_params().items():
        np.testing.assert_allclose(a.emission_params()[key], value, rtol=0, atol=1e-12)


@pytest.mark.parametrize("learn", ["em", "vb", "vt"])
def test_sequence_weights_on_a_structured_chain(learn):
    """The sparse kernels (few allowed transitions) weigh their sequences too."""
    K = 6
    model_kw = {"topology": "left-right", "bandwidth": 1}
    lengths, counts = [8, 6, 9], [1, 3, 2]
    X = np.random.default_rng(3).integers(0, 3, sum(lengths))

    def make():
        m = hs.HMM(K, n_iter=10, tol=-np.inf, learn=learn, init_params="", **model_kw)
        m.startprob_ = np.full(K, 1 / K)
        T = np.eye(K) * 0.7 + np.eye(K, k=1) * 0.3
        T[-1, -1] = 1.0
        m.transmat_ = T
        m.emissionprob_ = np.random.default_rng(4).dirichlet(np.ones(3), size=K)
        return m

    a = make().fit(X, lengths, sample_weight=counts)
    b = make().fit(*_repeat(X, lengths, counts))
    np.testing.assert_allclose(a.monitor_.history, b.monitor_.history, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.transmat_, b.transmat_, rtol=0, atol=1e-12)
    w = np.ones(len(X))                   # observation weights: 0 is missing here too
    w[[2, 9, 15]] = 0.0
    Xm = X.copy()
    Xm[[2, 9, 15]] = -1
    c = make().fit(X, lengths, sample_weight=w)
    d = make().fit(Xm, lengths)
    np.testing.assert_allclose(c.monitor_.history, d.monitor_.history, rtol=0, atol=1e-12)
    np.testing.assert_allclose(c.emissionprob_, d.emissionprob_, rtol=0, atol=1e-12)


def test_sequence_weights_on_a_segmented_sequence():
    """A sequence longer than one lane runs in segments; its weight multiplies all of them."""
    rng = np.random.default_rng(5)
    lengths = [20000, 50]
    X = rng.integers(0, 3, sum(lengths))
    a = _fit(X, lengths, "categorical", "em", sample_weight=[2.0, 1.0],
             model={"n_iter": 3})
    b = _fit(*_repeat(X, lengths, [2, 1]), "categorical", "em", model={"n_iter": 3})
    np.testing.assert_allclose(a.monitor_.history, b.monitor_.history, rtol=1e-12)
    np.testing.assert_allclose(a.transmat_, b.transmat_, rtol=0, atol=1e-12)


@pytest.mark.parametrize("emission", ["categorical", "gaussian"])
@pytest.mark.parametrize("learn", MODES)
def test_observation_weight_zero_is_a_missing_observation(emission, learn):
    lengths = [5, 7, 3]
    X = _data(emission, lengths, 1)
    w = np.ones(len(X))
    gone = [1, 6, 12]
    w[gone] = 0.0
    Xm = X.copy()
    Xm[gone] = -1 if emission == "categorical" else np.nan
    a = _fit(X, lengths, emission, learn, sample_weight=w)
    b = _fit(Xm, lengths, emission, learn)
    np.testing.assert_allclose(a.monitor_.history, b.monitor_.history, rtol=0, atol=1e-12)
    for key, value in b.emission_params().items():
        np.testing.assert_allclose(a.emission_params()[key], value, rtol=0, atol=1e-12)


def test_observation_weights_with_state_labels_are_missing_observations():
    lengths = [6, 6]
    X = _data("categorical", lengths, 2)
    states = np.full(len(X), -1)
    states[[0, 4, 8]] = [1, 0, 1]
    w = np.ones(len(X))
    w[[4, 5]] = 0.0
    Xm = X.copy()
    Xm[[4, 5]] = -1
    a = _fit(X, lengths, "categorical", "em", sample_weight=w, states=states)
    b = _fit(Xm, lengths, "categorical", "em", states=states)
    np.testing.assert_allclose(a.monitor_.history, b.monitor_.history, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.emissionprob_, b.emissionprob_, rtol=0, atol=1e-12)


def _brute_em_step(startprob, transmat, log_e_copies, lengths, v):
    """One EM iteration by enumeration, each step's emission term the sum of its copies'
    (``log_e_copies[t]``: a list of (K,) log-probabilities, one per copy) and every copy
    counted in the emission statistics. Returns (objective, start, trans, per-copy gammas)."""
    bounds = np.cumsum([0] + list(lengths))
    K = len(startprob)
    total, start, trans = 0.0, np.zeros(K), np.zeros((K, K))
    gam = []
    for s in range(len(lengths)):
        rows = range(bounds[s], bounds[s + 1])
        log_e = np.array([np.sum(log_e_copies[t], axis=0) for t in rows])
        paths, lp = path_log_joint(startprob, transmat, log_e)
        ll = logsumexp(lp)
        p = np.exp(lp - ll)
        total += v[s] * ll
        g = np.zeros((len(rows), K))
        for t in range(len(rows)):
            np.add.at(g[t], paths[:, t], p)
        start += v[s] * g[0]
        for t in range(1, len(rows)):
            np.add.at(trans, (paths[:, t - 1], paths[:, t]), v[s] * p)
        gam.append(v[s] * g)
    return total, start, trans, np.concatenate(gam)


@pytest.mark.parametrize("weights", ["integer", "real"])
def test_observation_weights_against_enumeration_categorical(weights):
    """Integer weights: w copies of the symbol at its step (enumerated literally); real
    weights: the emission term to the power w. One EM step against brute force."""
    rng = np.random.default_rng(7)
    lengths, v = [4, 3], np.array([1.0, 2.0])
    X = rng.integers(0, 3, 7)
    w = (rng.integers(0, 4, 7) if weights == "integer" else rng.uniform(0, 3, 7)).astype(float)
    model = _fit(X, lengths, "categorical", "em",
                 sample_weight={"sequence": v, "observation": w}, model={"n_iter": 1})
    B = np.array([[0.5, 0.3, 0.2], [0.1, 0.3, 0.6]])
    pi, A = np.array([0.6, 0.4]), np.array([[0.8, 0.2], [0.3, 0.7]])
    if weights == "integer":  # literally w_t copies of x_t at step t
        copies = [[np.log(B[:, X[t]])] * int(w[t]) or [np.zeros(2)] for t in range(7)]
        counts = np.zeros((2, 3))
        total, start, trans, gam = _brute_em_step(pi, A, copies, lengths, v)
        for t in range(7):
            counts[:, X[t]] += int(w[t]) * gam[t]
    else:
        copies = [[w[t] * np.log(B[:, X[t]])] for t in range(7)]
        total, start, trans, gam = _brute_em_step(pi, A, copies, lengths, v)
        counts = np.zeros((2, 3))
        for t in range(7):
            counts[:, X[t]] += w[t] * gam[t]
    assert model.monitor_.history[0] == pytest.approx(total, rel=1e-13)
    np.testing.assert_allclose(model.startprob_, start / start.sum(), rtol=1e-12)
    np.testing.assert_allclose(model.transmat_, trans / trans.sum(1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(model.emissionprob_, counts / counts.sum(1, keepdims=True),
                               rtol=1e-12)


def test_observation_weights_against_enumeration_gaussian():
    rng = np.random.default_rng(8)
    lengths, v = [4, 3], np.array([0.5, 2.0])
    X = rng.normal(size=(7, 1)) * 2
    w = rng.integers(0, 4, 7).astype(float)
    model = _fit(X, lengths, "gaussian", "em",
                 sample_weight={"sequence": v, "observation": w},
                 model={"n_iter": 1, "min_covar": 0.0})
    mu, var = np.array([0.0, 2.0]), np.array([1.0, 1.5])
    pi, A = np.array([0.6, 0.4]), np.array([[0.8, 0.2], [0.3, 0.7]])
    one = [-0.5 * (np.log(2 * np.pi * var) + (X[t, 0] - mu) ** 2 / var) for t in range(7)]
    copies = [[one[t]] * int(w[t]) or [np.zeros(2)] for t in range(7)]
    total, start, trans, gam = _brute_em_step(pi, A, copies, lengths, v)
    weight = w[:, None] * gam                      # every copy counts
    n = weight.sum(0)
    mean = (weight * X).sum(0) / n
    cov = (weight * (X - mean) ** 2).sum(0) / n
    assert model.monitor_.history[0] == pytest.approx(total, rel=1e-13)
    np.testing.assert_allclose(model.means_[:, 0], mean, rtol=1e-12)
    np.testing.assert_allclose(model.covars_[:, 0, 0], cov, rtol=1e-10)
    np.testing.assert_allclose(model.transmat_, trans / trans.sum(1, keepdims=True), rtol=1e-12)


@pytest.mark.parametrize("learn", ["em", "map", "vb"])
def test_weighted_objective_never_decreases(learn):
    rng = np.random.default_rng(9)
    lengths = [30, 40, 25]
    X = rng.normal(size=(95, 2)) + 3 * rng.integers(0, 2, (95, 1))
    model = hs.HMM(3, emission="gaussian", n_iter=40, tol=-np.inf, learn=learn,
                   random_state=0).fit(X, lengths, sample_weight={
                       "sequence": rng.uniform(0.2, 3, 3), "observation": rng.uniform(0, 2, 95)})
    history = np.array(model.monitor_.history)
    assert np.all(np.diff(history) >= -1e-9 * np.abs(history[1:]))


def test_distributed_weighted_fit_equals_the_local_fit():
    pytest.importorskip("distributed")
    from hiddenstate import distributed as hsd

    rng = np.random.default_rng(10)
    lengths = [5, 7, 3, 6, 4]
    N = sum(lengths)
    X = rng.normal(size=(N, 1)) + 2.0 * rng.integers(0, 2, (N, 1))
    sw = {"sequence": rng.uniform(0, 2, 5), "observation": rng.uniform(0, 2, N)}
    with hsd.local_client(1, processes=False) as client:
        for learn in ("em", "vb", "vt"):
            kw = dict(emission="gaussian", n_iter=8, tol=-np.inf, learn=learn, random_state=0)
            local = hs.HMM(2, **kw).fit(X, lengths, sample_weight=sw)
            dist = hsd.fit(hs.HMM(2, **kw), X, client, lengths=lengths, n_partitions=3,
                           sample_weight=sw)
            np.testing.assert_allclose(dist.monitor_.history, local.monitor_.history,
                                       rtol=1e-12)
            np.testing.assert_allclose(dist.means_, local.means_, rtol=0, atol=1e-12)


@pytest.mark.parametrize("sample_weight, match", [
    ([1.0, 2.0], "expected one per sequence"),
    ([1.0, -1.0, 2.0], "finite and >= 0"),
    ([0.0, 0.0, 0.0], "every weight is 0"),
    ({"sequences": [1, 1, 1]}, "unknown key"),
    (np.ones((3, 1)), "1-D array"),
])
def test_invalid_weights_are_refused(sample_weight, match):
    with pytest.raises(InvalidInputError, match=match):
        hs.HMM(2).fit(np.array([0, 1, 2, 0, 1, 2, 1]), [2, 3, 2], sample_weight=sample_weight)


def test_ambiguous_weights_and_streaming_are_refused():
    X = np.array([0, 1, 2])
    with pytest.raises(InvalidInputError, match="ambiguous"):
        hs.HMM(2).fit(X, [1, 1, 1], sample_weight=[1.0, 2.0, 1.0])
    model = hs.HMM(2, n_iter=2).fit(X, [1, 1, 1], sample_weight={"sequence": [1.0, 2.0, 1.0]})
    assert len(model.monitor_.history) == 2
    with pytest.raises(InvalidInputError, match="streaming learner"):
        hs.HMM(2, learn="online-em").fit(X, sample_weight=[1.0, 2.0, 1.0])

"""Partial state labels (``fit(X, lengths, states=...)``, -1 unknown): the E-step of every
mode is clamped at the labelled steps (against enumeration over the paths that agree with
the labels); with every step labelled, one iteration is supervised counting."""

import numpy as np
import pytest
from brute_force import dataset_posteriors
from scipy.stats import norm

import hiddenstate as hs
from hiddenstate.errors import InvalidInputError

LENGTHS = [4, 3]
START = np.array([0.5, 0.3, 0.2])
TRANS = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]])
B = np.array([[0.5, 0.3, 0.2], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3]])
X_SYM = np.array([0, 2, 1, 1, 2, 0, 2])
LABELS = np.array([-1, 1, -1, -1, 2, -1, 0])


def _clamped(log_e, labels):
    """Log emission table with the non-label states of every labelled step at -inf."""
    out = log_e.copy()
    for t in np.flatnonzero(labels >= 0):
        keep = out[t, labels[t]]
        out[t] = -np.inf
        out[t, labels[t]] = keep
    return out


def _categorical():
    m = hs.HMM(3, init_params="", n_iter=1, tol=-np.inf)
    m.startprob_, m.transmat_, m.emissionprob_ = START, TRANS, B
    return m


def test_one_em_step_with_partial_labels_matches_enumeration():
    ref = dataset_posteriors(START, TRANS, _clamped(np.log(B.T[X_SYM]), LABELS), LENGTHS)
    m = _categorical().fit(X_SYM[:, None], LENGTHS, states=LABELS)
    assert m.monitor_.history[0] == pytest.approx(ref["loglik"].sum(), rel=1e-12)
    counts = np.zeros((3, 3))
    for t, x in enumerate(X_SYM):
        counts[:, x] += ref["gamma"][t]
    np.testing.assert_allclose(m.startprob_, ref["start"] / 2, rtol=1e-12)
    np.testing.assert_allclose(m.transmat_, ref["trans"] / ref["trans"].sum(1, keepdims=True),
                               rtol=1e-12)
    np.testing.assert_allclose(m.emissionprob_, counts / counts.sum(1, keepdims=True),
                               rtol=1e-12)


def test_viterbi_training_with_partial_labels_matches_enumeration():
    ref = dataset_posteriors(START, TRANS, _clamped(np.log(B.T[X_SYM]), LABELS), LENGTHS)
    m = _categorical().set_params(learn="vt")
    m.fit(X_SYM[:, None], LENGTHS, states=LABELS)
    assert m.monitor_.history[0] == pytest.approx(ref["viterbi_logprob"].sum(), rel=1e-12)
    path = ref["viterbi_path"]
    assert np.all(path[LABELS >= 0] == LABELS[LABELS >= 0])
    counts = np.zeros((3, 3))
    np.add.at(counts, (path, X_SYM), 1.0)
    rows = counts.sum(1) > 0
    np.testing.assert_allclose(m.emissionprob_[rows],
                               counts[rows] / counts[rows].sum(1, keepdims=True), rtol=1e-12)


def test_gaussian_partial_labels_match_enumeration():
    means, sd = np.array([[-1.0], [0.5], [2.0]]), np.array([[1.0], [0.7], [1.5]])
    X = np.array([[0.1], [1.9], [-0.8], [0.4], [2.5], [-1.2], [0.0]])
    log_e = norm(means[:, 0], sd[:, 0]).logpdf(X)
    ref = dataset_posteriors(START, TRANS, _clamped(log_e, LABELS), LENGTHS)
    m = hs.HMM(3, emission="gaussian", init_params="", n_iter=1, tol=-np.inf)
    m.startprob_, m.transmat_, m.means_, m.covars_ = START, TRANS, means, sd**2
    m.fit(X, LENGTHS, states=LABELS)
    g = ref["gamma"]
    np.testing.assert_allclose(m.means_[:, 0], g.T @ X[:, 0] / g.sum(0), rtol=1e-12)
    np.testing.assert_allclose(m.transmat_, ref["trans"] / ref["trans"].sum(1, keepdims=True),
                               rtol=1e-12)


@pytest.mark.parametrize("emission", ["categorical", "gaussian"])
def test_fully_labelled_em_equals_supervised_counting(emission):
    rng = np.random.default_rng(0)
    lengths = [30, 20, 25]
    z = rng.integers(0, 3, sum(lengths))
    if emission == "categorical":
        X = rng.integers(0, 4, len(z))[:, None]
    else:
        X = rng.standard_normal((len(z), 2)) + z[:, None]
    bounds = np.cumsum([0] + lengths)
    first = z[bounds[:-1]]
    pairs = np.concatenate([np.stack([z[a:b - 1], z[a + 1:b]], 1)
                            for a, b in zip(bounds[:-1], bounds[1:], strict=True)])
    start = np.bincount(first, minlength=3) / len(lengths)
    trans = np.zeros((3, 3))
    np.add.at(trans, (pairs[:, 0], pairs[:, 1]), 1.0)
    trans /= trans.sum(1, keepdims=True)
    m = hs.HMM(3, emission=emission, n_iter=3, tol=-np.inf, random_state=0)
    m.fit(X, lengths, states=z)
    np.testing.assert_array_equal(m.startprob_, start)
    np.testing.assert_allclose(m.transmat_, trans, rtol=1e-15, atol=0)
    if emission == "categorical":
        counts = np.zeros((3, 4))
        np.add.at(counts, (z, X[:, 0]), 1.0)
        np.testing.assert_allclose(m.emissionprob_, counts / counts.sum(1, keepdims=True),
                                   rtol=1e-15, atol=0)
    else:
        means = np.stack([X[z == k].mean(0) for k in range(3)])
        var = np.stack([X[z == k].var(0) for k in range(3)])
        np.testing.assert_allclose(m.means_, means, rtol=1e-13)
        np.testing.assert_allclose(np.diagonal(m.covars_, axis1=1, axis2=2), var, rtol=1e-12)
    # the MAP / VT modes give the same counts (flat priors for MAP: pseudo-count 1)
    vt = hs.HMM(3, emission=emission, learn="vt", n_iter=3, random_state=0,
                covars_prior=0.0 if emission == "gaussian" else None)
    vt.fit(X, lengths, states=z)
    np.testing.assert_allclose(vt.transmat_, trans, rtol=1e-15, atol=0)


def test_labels_validated():
    m = _categorical()
    with pytest.raises(InvalidInputError, match="states"):
        m.fit(X_SYM[:, None], LENGTHS, states=np.array([0, 1, 2]))
    with pytest.raises(InvalidInputError, match="states"):
        m.fit(X_SYM[:, None], LENGTHS, states=np.array([0, 1, 2, 3, 0, 0, 0]))
    with pytest.raises(InvalidInputError, match="states"):  # the streaming learners too
        hs.HMM(3, learn="bwo").fit(X_SYM[:, None], LENGTHS, states=LABELS + 1)


def test_a_few_labels_pin_the_states():
    """1% of the steps labelled: the emission parameters start from the labelled steps, so
    EM ends with the states the labels name (from a random start alone, half of these
    seeds end with the two states swapped: accuracy 0.003)."""
    true = hs.HMM(2, emission="gaussian", covariance_type="full", init_params="")
    true.startprob_ = [0.5, 0.5]
    true.transmat_ = [[0.95, 0.05], [0.05, 0.95]]
    true.means_ = [[0.0, 0.0], [3.0, 3.0]]
    true.covars_ = [[[1.0, 0.8], [0.8, 1.0]], [[1.0, -0.5], [-0.5, 1.0]]]
    X, z = true.sample(2000, random_state=0)
    for seed in (0, 2, 4):
        rng = np.random.default_rng(100 + seed)
        labels = np.where(rng.random(len(z)) < 0.01, z, -1)
        semi = hs.HMM(2, emission="gaussian", covariance_type="full", random_state=seed,
                      n_iter=30)
        semi.fit(X, states=labels)
        assert np.mean(semi.predict(X) == z) > 0.99

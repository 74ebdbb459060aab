"""The explicit-duration hidden semi-Markov model (:class:`hiddenstate.HSMM`).

Every number is checked against an independent one: brute-force enumeration of the
segmentations of short sequences (``segment_brute_force.py``) for the likelihood, the
posteriors, the filter, segment starts, expected durations and transitions, the Viterbi and
k-best segmentations and posterior samples; :class:`hiddenstate.HMM` for geometric durations
(the EM history, scores and posteriors to 1e-12); the segment recursion against the HMM over
the phases of negative-binomial and geometric durations; the parameters an HSMM was sampled
from; and each bad input's error, or the right answer.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from segment_brute_force import enumerate_hsmm

import hiddenstate as hs
from hiddenstate import inference, segments
from hiddenstate.errors import InvalidInputError, NotFittedError, ZeroProbabilityError
from hiddenstate.families import (
    GeometricDurations,
    NegativeBinomialDurations,
    NonparametricDurations,
    PoissonDurations,
)
from hiddenstate.models.hsmm import HSMMProblem

RTOL = 1e-12


def _chain_params(rng, K, D, zero_first=False):
    pi = rng.dirichlet(np.ones(K))
    A = np.array([np.insert(row, i, 0.0) for i, row in
                  enumerate(rng.dirichlet(np.ones(K - 1), size=K))])
    f = rng.dirichlet(np.ones(D), size=K)
    if zero_first:
        f[0, 0] = 0.0
        f[0] /= f[0].sum()
    return pi, A, f


def _nonparametric(pi, A, f, B, **kw) -> hs.HSMM:
    K, D = f.shape
    m = hs.HSMM(K, duration="nonparametric", max_duration=D, n_features=B.shape[1], **kw)
    m.startprob_, m.transmat_, m.durations_, m.emissionprob_ = pi, A, f, B
    return m


def _survival(f):
    return np.cumsum(f[:, ::-1], axis=1)[:, ::-1]


# -- the recursion against enumeration ----------------------------------------------------------
@pytest.mark.parametrize(("K", "D", "T", "block"), [(2, 3, 6, 2), (3, 4, 7, 3), (2, 10, 13, 4),
                                                    (3, 9, 10, 1), (2, 20, 12, 100)])
def test_segment_recursion_equals_enumeration(K, D, T, block, monkeypatch):
    """Likelihood, posteriors, segment starts, expected durations (complete and censored),
    transitions and first states of the forward-backward over (state, age), with blocks of
    ``block`` steps recomputed from checkpoints; and a survival function with mass beyond D
    (a family cut at ``max_duration``)."""
    monkeypatch.setattr(segments, "block_length", lambda *_: block)
    rng = np.random.default_rng(K * 100 + D + T)
    pi, A, f = _chain_params(rng, K, D, zero_first=True)
    S = _survival(f)
    S[:, 1:] *= 1.3  # mass beyond D in the last segment's survival
    B = rng.random((T, K)) ** 3
    want = enumerate_hsmm(pi, A, f, S, B)
    chain = segments.SegmentChain.from_pmf(pi, A, f, S)
    table = inference.EmissionTable.from_log_likelihood(np.log(B))
    seqs = inference.Sequences.from_lengths([T])
    got = segments.posteriors(chain, table, seqs, starts=True)
    assert got.loglik[0] == pytest.approx(want["loglik"], rel=RTOL)
    for name in ("post", "starts", "complete", "censored", "trans", "start"):
        np.testing.assert_allclose(getattr(got, name), want[name], rtol=0, atol=1e-13,
                                   err_msg=name)
    assert segments.log_likelihood(chain, table, seqs)[0] == pytest.approx(want["loglik"],
                                                                           rel=RTOL)
    filt, log_pred = segments.filter_states(chain, table, seqs)
    np.testing.assert_allclose(filt, want["filter"], rtol=0, atol=1e-13)
    assert log_pred.sum() == pytest.approx(want["loglik"], rel=RTOL)


@pytest.mark.parametrize("k", [1, 2, 5])
def test_k_best_segmentations_equal_the_enumerated_best(k):
    rng = np.random.default_rng(7)
    K, D, T = 3, 4, 8
    pi, A, f = _chain_params(rng, K, D)
    B = rng.random((T, K)) ** 2
    want = enumerate_hsmm(pi, A, f, _survival(f), B)["paths"][:k]
    chain = segments.SegmentChain.from_pmf(pi, A, f, _survival(f))
    table = inference.EmissionTable.from_log_likelihood(np.log(B))
    logprob, paths = segments.best_paths(chain, table, inference.Sequences.from_lengths([T]), k)
    np.testing.assert_allclose(logprob[0], [lp for lp, _ in want], rtol=1e-13)
    for r, (_, z) in enumerate(want):
        np.testing.assert_array_equal(paths[r], z)


def test_more_paths_than_exist_are_minus_infinity_and_minus_one():
    """A sequence of 2 steps with 2 states and durations 1..2 has 4 segmentations."""
    pi, A = np.array([0.5, 0.5]), np.array([[0.0, 1.0], [1.0, 0.0]])
    f = np.array([[0.5, 0.5], [0.5, 0.5]])
    chain = segments.SegmentChain.from_pmf(pi, A, f, _survival(f))
    table = inference.EmissionTable.from_log_likelihood(np.zeros((2, 2)))
    logprob, paths = segments.best_paths(chain, table, inference.Sequences.from_lengths([2]), 6)
    assert np.all(np.isfinite(logprob[0, :4])) and np.all(np.isneginf(logprob[0, 4:]))
    assert np.all(paths[4:] == -1)
    assert np.exp(logprob[0, :4]).sum() == pytest.approx(1.0, rel=1e-14)


def test_posterior_samples_follow_the_enumerated_posterior():
    """Frequencies of 20000 draws (blocks of 2 steps recomputed) against the exact
    posterior of each segmentation: within 5 standard errors."""
    rng = np.random.default_rng(3)
    K, D, T, n = 3, 4, 7, 20000
    pi, A, f = _chain_params(rng, K, D)
    B = rng.random((T, K))
    want = enumerate_hsmm(pi, A, f, _survival(f), B)
    m = _nonparametric(pi, A, f, np.eye(K) * 0.5 + 0.5 / K)
    X = np.tile(np.arange(T) % K, n)
    table = inference.EmissionTable.from_log_likelihood(np.tile(np.log(B), (n, 1)))
    chain = segments.SegmentChain.from_pmf(pi, A, f, _survival(f))
    draws = segments.sample_posterior(chain, table,
                                      inference.Sequences.from_lengths(np.full(n, T)),
                                      np.random.default_rng(0)).reshape(n, T)
    assert X.shape == (n * T,) and m.n_states == K
    codes = draws @ (K ** np.arange(T))
    for logp, z in want["paths"][:6]:
        p = np.exp(logp - want["loglik"])
        freq = np.mean(codes == z @ (K ** np.arange(T)))
        assert abs(freq - p) < 5 * np.sqrt(p * (1 - p) / n)


def test_the_estimator_answers_every_query_as_enumeration():
    """score, predict_proba, filter_proba, score_tokens, segment_proba, duration_counts,
    decode and best_segmentations of a categorical HSMM set by hand, on two sequences."""
    rng = np.random.default_rng(11)
    K, D, W = 3, 4, 4
    pi, A, f = _chain_params(rng, K, D)
    E = rng.dirichlet(np.ones(W), size=K)
    m = _nonparametric(pi, A, f, E)
    X = rng.integers(0, W, size=13)
    lengths = [6, 7]
    want = [enumerate_hsmm(pi, A, f, _survival(f), E[:, x].T) for x in (X[:6], X[6:])]
    np.testing.assert_allclose(m.score_samples(X, lengths), [w["loglik"] for w in want],
                               rtol=RTOL)
    for name, got in (("post", m.predict_proba(X, lengths)),
                      ("filter", m.filter_proba(X, lengths)),
                      ("starts", m.segment_proba(X, lengths))):
        np.testing.assert_allclose(got, np.vstack([w[name] for w in want]), rtol=0,
                                   atol=1e-13, err_msg=name)
    complete, censored = m.duration_counts(X, lengths)
    np.testing.assert_allclose(complete, want[0]["complete"] + want[1]["complete"], atol=1e-13)
    np.testing.assert_allclose(censored, want[0]["censored"] + want[1]["censored"], atol=1e-13)
    tokens = m.score_tokens(X, lengths)
    assert tokens[:6].sum() == pytest.approx(want[0]["loglik"], rel=RTOL)
    logp, states = m.decode(X, lengths)
    assert logp == pytest.approx(want[0]["paths"][0][0] + want[1]["paths"][0][0], rel=RTOL)
    np.testing.assert_array_equal(states, np.concatenate([w["paths"][0][1] for w in want]))
    logprob, paths = m.best_segmentations(X, lengths, k=3)
    for s, w in enumerate(want):
        np.testing.assert_allclose(logprob[s], [lp for lp, _ in w["paths"][:3]], rtol=1e-13)
    np.testing.assert_array_equal(paths[2, 6:], want[1]["paths"][2][1])


# -- geometric durations are the HMM ------------------------------------------------------------
def _hmm_data(emission="gaussian", seed=1):
    teacher = hs.HMM(3, emission=emission, init_params="")
    teacher.startprob_ = [0.5, 0.3, 0.2]
    teacher.transmat_ = [[0.9, 0.05, 0.05], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]]
    if emission == "gaussian":
        teacher.means_ = [[0.0], [2.0], [4.0]]
        teacher.covars_ = [[1.0], [1.0], [1.0]]
    else:
        teacher.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6]]
    X, _ = teacher.sample(300, random_state=seed)
    return X, [100, 120, 80]


@pytest.mark.parametrize("engine", ["segments", "phases"])
@pytest.mark.parametrize("emission", ["gaussian", "categorical"])
def test_geometric_durations_reproduce_the_hmm(engine, emission):
    """The same EM iterations as hs.HMM from the same start (the HMM's transmat_ is
    diag(1 - p) + diag(p) A), then the same scores, posteriors and Viterbi path."""
    X, lengths = _hmm_data(emission)
    kw = {"n_iter": 12, "tol": -np.inf, "random_state": 0}
    if emission == "categorical":
        X = X.copy()
        X[[5, 50, 200]] = -1   # missing symbols
    hmm = hs.HMM(3, emission=emission, **kw).fit(X, lengths)
    m = hs.HSMM(3, duration="geometric", emission=emission, engine=engine, **kw).fit(X, lengths)
    np.testing.assert_allclose(m.monitor_.history, hmm.monitor_.history, rtol=RTOL, atol=0)
    p = m.duration_probs_
    np.testing.assert_allclose(np.diag(1 - p) + p[:, None] * m.transmat_, hmm.transmat_,
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(m.score_samples(X, lengths), hmm.score_samples(X, lengths),
                               rtol=RTOL)
    np.testing.assert_allclose(m.predict_proba(X, lengths), hmm.predict_proba(X, lengths),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(m.filter_proba(X, lengths), hmm.filter_proba(X, lengths),
                               rtol=0, atol=1e-12)
    np.testing.assert_array_equal(m.predict(X, lengths), hmm.predict(X, lengths))
    assert m.decode(X, lengths)[0] == pytest.approx(hmm.decode(X, lengths)[0], rel=RTOL)


def test_geometric_durations_reproduce_the_hmm_with_labels():
    X, lengths = _hmm_data()
    states = np.full(len(X), -1)
    states[::7] = (np.arange(len(X))[::7] // 40) % 3
    kw = {"n_iter": 8, "tol": -np.inf, "random_state": 0, "emission": "gaussian"}
    hmm = hs.HMM(3, **kw).fit(X, lengths, states=states)
    m = hs.HSMM(3, duration="geometric", **kw).fit(X, lengths, states=states)
    np.testing.assert_allclose(m.monitor_.history, hmm.monitor_.history, rtol=RTOL, atol=0)


def test_a_long_sequence_neither_underflows_nor_drifts():
    """10^5 steps (blocks recomputed from checkpoints): geometric durations whose mass
    beyond max_duration = 200 is below 1e-19 give the HMM's log-likelihood (about -2e5)
    to 1e-12, and posteriors that sum to one."""
    teacher = hs.HMM(3, emission="gaussian", init_params="")
    teacher.startprob_ = [1.0, 0.0, 0.0]
    teacher.transmat_ = [[0.8, 0.1, 0.1], [0.05, 0.75, 0.2], [0.15, 0.15, 0.7]]
    teacher.means_, teacher.covars_ = [[0.0], [3.0], [6.0]], [[1.0], [2.0], [1.0]]
    X, _ = teacher.sample(100_000, random_state=0)
    m = hs.HSMM(3, duration="geometric", emission="gaussian", max_duration=200,
                engine="segments")
    m.startprob_, m.means_, m.covars_ = teacher.startprob_, teacher.means_, [[1.0], [2.0],
                                                                             [1.0]]
    A = teacher.transmat_ - np.diag(np.diag(teacher.transmat_))
    m.transmat_ = A / A.sum(axis=1, keepdims=True)
    m.duration_probs_ = 1 - np.diag(teacher.transmat_)
    assert m.score(X) == pytest.approx(teacher.score(X), rel=RTOL)
    post = m.predict_proba(X)
    np.testing.assert_allclose(post.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(post, teacher.predict_proba(X), rtol=0, atol=1e-10)


def test_a_long_sequence_with_max_duration_at_its_length_is_the_hmm():
    teacher = hs.HMM(2, emission="gaussian", init_params="")
    teacher.startprob_, teacher.transmat_ = [0.5, 0.5], [[0.99, 0.01], [0.02, 0.98]]
    teacher.means_, teacher.covars_ = [[0.0], [2.0]], [[1.0], [1.0]]
    X, _ = teacher.sample(3000, random_state=2)
    m = hs.HSMM(2, duration="geometric", emission="gaussian", max_duration=3000,
                engine="segments")
    m.startprob_, m.transmat_ = teacher.startprob_, [[0.0, 1.0], [1.0, 0.0]]
    m.means_, m.covars_ = teacher.means_, [[1.0], [1.0]]
    m.duration_probs_ = [0.01, 0.02]
    assert m.score(X) == pytest.approx(teacher.score(X), rel=RTOL)
    np.testing.assert_allclose(m.predict_proba(X), teacher.predict_proba(X), atol=1e-12)


# -- phases against segments --------------------------------------------------------------------
def _nb_model(engine, **kw):
    m = hs.HSMM(2, duration="negative-binomial", emission="gaussian", max_duration=60,
                engine=engine, **kw)
    m.startprob_, m.transmat_ = [0.6, 0.4], [[0.0, 1.0], [1.0, 0.0]]
    m.means_, m.covars_ = [[0.0], [1.5]], [[1.0], [0.5]]
    m.duration_shapes_, m.duration_probs_ = [3.0, 1.0], [0.4, 0.2]
    return m


def test_negative_binomial_phases_equal_the_segment_recursion():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(150, 1)) + np.repeat([0.0, 1.5, 0.0, 1.5, 0.0], 30)[:, None]
    lengths = [60, 50, 40]
    seg, ph = _nb_model("segments"), _nb_model("phases")
    np.testing.assert_allclose(ph.score_samples(X, lengths), seg.score_samples(X, lengths),
                               rtol=RTOL)
    for query in ("predict_proba", "filter_proba", "score_tokens"):
        np.testing.assert_allclose(getattr(ph, query)(X, lengths),
                                   getattr(seg, query)(X, lengths), rtol=0, atol=1e-12,
                                   err_msg=query)


def test_phase_samples_and_segment_samples_have_the_same_law():
    """Marginal P(z_t = k | x) estimated from 4000 draws of each engine: both within 5
    standard errors of the exact posterior."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(20, 1)) + np.repeat([0.0, 1.5], 10)[:, None]
    seg, ph = _nb_model("segments"), _nb_model("phases")
    exact = seg.predict_proba(X)[:, 0]
    n = 4000
    for m in (seg, ph):
        draws = m.sample_posterior(np.tile(X, (n, 1)), [20] * n, random_state=1)
        freq = (draws.reshape(n, 20) == 0).mean(axis=0)
        assert np.all(np.abs(freq - exact) <= 5 * np.sqrt(exact * (1 - exact) / n) + 1e-9)


def test_geometric_learning_by_phases_equals_learning_by_segments():
    X, lengths = _hmm_data()
    kw = {"n_iter": 10, "tol": -np.inf, "random_state": 0, "emission": "gaussian",
          "duration": "geometric"}
    for learn in ("em", "map", "vb", "vt"):
        a = hs.HSMM(3, engine="segments", learn=learn, **kw).fit(X, lengths)
        b = hs.HSMM(3, engine="phases", learn=learn, **kw).fit(X, lengths)
        np.testing.assert_allclose(a.monitor_.history, b.monitor_.history, rtol=RTOL,
                                   err_msg=learn)


def test_phases_refuse_what_they_cannot_do_naming_engine():
    m = _nb_model("phases")
    X = np.zeros((70, 1))
    with pytest.raises(InvalidInputError, match="engine.*max_duration"):
        m.score(X)                 # longer than max_duration: the phases would not truncate
    with pytest.raises(InvalidInputError, match="engine.*best segmentation"):
        m.decode(X[:10])
    with pytest.raises(InvalidInputError, match="engine"):
        hs.HSMM(2, duration="poisson", max_duration=5, engine="phases").fit(X[:10])


# -- learning -----------------------------------------------------------------------------------
def _teacher(duration: str) -> hs.HSMM:
    m = hs.HSMM(3, duration=duration, emission="gaussian", max_duration=40)
    m.startprob_ = [0.4, 0.3, 0.3]
    m.transmat_ = [[0.0, 0.7, 0.3], [0.5, 0.0, 0.5], [0.6, 0.4, 0.0]]
    m.means_, m.covars_ = [[-3.0], [0.0], [3.0]], [[1.0], [1.0], [1.0]]
    if duration == "poisson":
        m.duration_rates_ = [10.0, 4.0, 15.0]
    elif duration == "negative-binomial":
        m.duration_shapes_, m.duration_probs_ = [5.0, 2.0, 8.0], [0.4, 0.4, 0.5]
    else:
        f = np.zeros((3, 40))
        f[0, [4, 9, 14]] = [0.2, 0.5, 0.3]   # durations 5, 10, 15
        f[1, 2:6] = 0.25
        f[2, 19] = 1.0
        m.durations_ = f
    return m


@pytest.mark.parametrize("duration", ["poisson", "negative-binomial", "nonparametric"])
def test_parameters_are_recovered_from_sampled_data(duration):
    teacher = _teacher(duration)
    xs = [teacher.sample(400, random_state=i) for i in range(10)]
    X = np.concatenate([x for x, _ in xs])
    lengths = [400] * 10
    m = hs.HSMM(3, duration=duration, emission="gaussian", max_duration=40, n_init=2,
                random_state=0, tol=1e-6).fit(X, lengths)
    order = np.argsort(m.means_[:, 0])
    np.testing.assert_allclose(m.means_[order, 0], [-3.0, 0.0, 3.0], atol=0.1)
    np.testing.assert_allclose(m.mean_durations()[order], teacher.mean_durations(), rtol=0.08)
    np.testing.assert_allclose(m.transmat_[np.ix_(order, order)], teacher.transmat_, atol=0.12)
    if duration == "nonparametric":
        np.testing.assert_allclose(m.duration_pmf()[order], teacher.durations_, atol=0.08)
    assert m.score(X, lengths) >= teacher.score(X, lengths) - 1.0


@pytest.mark.parametrize("duration", ["nonparametric", "poisson", "geometric",
                                      "negative-binomial"])
@pytest.mark.parametrize("learn", ["em", "map", "vb", "vt", "kvt"])
def test_every_mode_never_decreases_its_objective(duration, learn):
    if learn == "vb" and duration == "negative-binomial":
        pytest.skip("no VB for negative-binomial durations (tested below)")
    teacher = _teacher("poisson")
    X, _ = teacher.sample(300, random_state=4)
    m = hs.HSMM(3, duration=duration, emission="gaussian", max_duration=30, learn=learn,
                k_best=3, n_iter=15, tol=-np.inf, random_state=1).fit(X, [150, 150])
    h = np.array(m.monitor_.history)
    assert np.all(np.diff(h) >= -1e-9 * np.abs(h[1:])), h


def test_fully_labelled_data_give_the_counted_durations():
    """Every step labelled: the E-step's duration statistics are the runs' lengths (the
    last run of each sequence censored)."""
    teacher = _teacher("nonparametric")
    X, z = teacher.sample(200, random_state=0)
    m = hs.HSMM(3, emission="gaussian", max_duration=40)
    family = m.emission_family(1, X)
    seqs = inference.Sequences.from_lengths([120, 80])
    dfam = NonparametricDurations(3, 40)
    problem = HSMMProblem(family, dfam, X, seqs, 1.0, 1.0, states=z)
    views = {"startprob": np.full(3, 1 / 3),
             "transmat": problem.transitions.gather(np.full((3, 3), 0.5) - 0.5 * np.eye(3)),
             "emission": {"means": teacher.means_, "covars": np.ones((3, 1))},
             "durations": {"durations": np.full((3, 40), 1 / 40)}}
    _, stats = problem.expected_counts(views)
    complete, censored = np.zeros((3, 40)), np.zeros((3, 40))
    for lo, hi in ((0, 120), (120, 200)):
        runs = np.flatnonzero(np.diff(np.concatenate(([-1], z[lo:hi], [-1]))) != 0)
        for a, b in zip(runs[:-1], runs[1:], strict=True):
            (censored if b == hi - lo else complete)[z[lo + a], b - a - 1] += 1
    np.testing.assert_allclose(stats["durations"]["complete"], complete, atol=1e-12)
    np.testing.assert_allclose(stats["durations"]["censored"], censored, atol=1e-12)


def test_restarts_keep_the_best_run():
    """The first of 3 restarts is the single run with the same seed; the best of the 3 ends
    at least as high."""
    teacher = _teacher("poisson")
    X, _ = teacher.sample(300, random_state=2)
    kw = {"duration": "poisson", "emission": "gaussian", "max_duration": 30, "n_iter": 10,
          "tol": -np.inf, "random_state": 0}
    one = hs.HSMM(3, n_init=1, **kw).fit(X)
    three = hs.HSMM(3, n_init=3, **kw).fit(X)
    assert three.monitor_.history[-1] >= one.monitor_.history[-1]


@pytest.mark.parametrize("duration", ["nonparametric", "poisson", "negative-binomial",
                                      "geometric"])
def test_save_and_load_give_the_same_scores(duration, tmp_path):
    teacher = _teacher("poisson")
    X, _ = teacher.sample(200, random_state=3)
    m = hs.HSMM(3, duration=duration, emission="gaussian", n_iter=3, random_state=0).fit(X)
    m.save(tmp_path / "m")
    back = hs.load(tmp_path / "m")
    assert type(back) is hs.HSMM and back.max_duration_ == m.max_duration_ == 200
    assert back.score_samples(X).tobytes() == m.score_samples(X).tobytes()


# -- bad input ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("kw", "name"), [
    ({"n_states": 1}, "n_states"), ({"max_duration": 0}, "max_duration"),
    ({"max_duration": 2.5}, "max_duration"), ({"duration": "weibull"}, "duration"),
    ({"learn": "online-em"}, "learn"), ({"engine": "fast"}, "engine"),
    ({"duration": "negative-binomial", "learn": "vb"}, "learn"),
    ({"duration": "geometric", "learn": "map", "duration_weight": 1.0}, "duration_weight"),
    ({"duration_prior": 2.0}, "duration_prior"),
    ({"learn": "map", "duration_prior": 0.5}, "duration_prior"),
    ({"init_params": "stex"}, "init_params")])
def test_invalid_hyperparameters_are_refused_naming_them(kw, name):
    kw = {"n_states": 2, **kw}
    with pytest.raises(InvalidInputError, match=name):
        hs.HSMM(**kw).fit(np.array([0, 1, 1, 0, 1]))


@pytest.mark.parametrize(("attr", "value", "match"), [
    ("durations_", [[0.5, 0.5, 0.1], [0.2, 0.3, 0.5]], "durations_.*sum"),
    ("durations_", [[0.5, 0.5], [0.2, 0.8]], "durations_.*max_duration"),
    ("durations_", [[1.5, -0.5, 0.0], [0.2, 0.3, 0.5]], "durations_"),
    ("transmat_", [[0.5, 0.5], [1.0, 0.0]], "transmat_.*diagonal")])
def test_invalid_parameters_set_by_hand_are_refused_naming_them(attr, value, match):
    m = _nonparametric([0.5, 0.5], [[0.0, 1.0], [1.0, 0.0]],
                       np.array([[0.2, 0.3, 0.5], [0.2, 0.3, 0.5]]), np.eye(2))
    setattr(m, attr, value)
    with pytest.raises(InvalidInputError, match=match):
        m.score([0, 1, 1])


def test_negative_binomial_shapes_must_be_whole():
    m = _nb_model("auto")
    m.duration_shapes_ = [2.5, 1.0]
    with pytest.raises(InvalidInputError, match="duration_shapes_"):
        m.score(np.zeros((5, 1)))


def test_a_sequence_shorter_than_the_shortest_duration_has_its_right_likelihood():
    """Durations of 3 and 4 steps only: a sequence of 2 steps is one censored segment,
    p(x) = sum_j pi_j prod_t p(x_t | j)."""
    f = np.array([[0.0, 0.0, 0.5, 0.5], [0.0, 0.0, 0.5, 0.5]])
    E = np.array([[0.9, 0.1], [0.3, 0.7]])
    m = _nonparametric([0.4, 0.6], [[0.0, 1.0], [1.0, 0.0]], f, E)
    want = 0.4 * 0.9 * 0.1 + 0.6 * 0.3 * 0.7
    assert m.score([0, 1]) == pytest.approx(np.log(want), rel=RTOL)
    want5 = enumerate_hsmm([0.4, 0.6], m.transmat_, f, _survival(f),
                           E[:, [0, 1, 1, 0, 0]].T)["loglik"]
    assert m.score([0, 1, 1, 0, 0]) == pytest.approx(want5, rel=RTOL)


def test_durations_of_probability_zero_make_a_sequence_impossible_under_its_labels():
    """Durations of exactly 3 steps: labels that force a segment of 2 are impossible (the
    error names states and max_duration); unlabelled, the sequence is possible."""
    f = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    E = np.array([[0.5, 0.5], [0.5, 0.5]])
    m = _nonparametric([0.5, 0.5], [[0.0, 1.0], [1.0, 0.0]], f, E, init_params="",
                       n_iter=2)
    X = np.array([0, 1, 0, 1, 0, 1, 1])
    assert np.isfinite(m.score(X))
    with pytest.raises(ZeroProbabilityError, match="states.*max_duration"):
        m.fit(X, states=[0, 0, 1, -1, -1, -1, -1])


def test_a_labelled_run_longer_than_max_duration_is_refused_naming_it():
    m = hs.HSMM(2, max_duration=3, n_iter=2, random_state=0)
    X = np.array([0, 0, 0, 0, 0, 1, 1])
    with pytest.raises(ZeroProbabilityError, match="max_duration"):
        m.fit(X, states=[0, 0, 0, 0, 0, -1, -1])
    m.fit(X, states=[0, 0, 0, -1, -1, -1, -1])   # a run of 3 is possible
    assert m.durations_.shape == (2, 3)


def test_an_impossible_observation_scores_minus_infinity_and_posteriors_refuse():
    m = _nonparametric([0.5, 0.5], [[0.0, 1.0], [1.0, 0.0]],
                       np.array([[0.5, 0.5], [0.5, 0.5]]),
                       np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]]))
    X, lengths = np.array([0, 1, 1, 2, 0]), [3, 2]
    np.testing.assert_array_equal(np.isneginf(m.score_samples(X, lengths)), [False, True])
    for call in (m.predict_proba, m.decode, m.filter_proba, m.sample_posterior,
                 m.segment_proba):
        with pytest.raises(ZeroProbabilityError, match="sequence 1"):
            call(X, lengths)


def test_not_fitted_and_parameters_set_by_hand():
    m = hs.HSMM(2, duration="poisson", max_duration=5, n_features=2)
    with pytest.raises(NotFittedError):
        m.score([0, 1])
    m.startprob_, m.transmat_ = [0.5, 0.5], [[0.0, 1.0], [1.0, 0.0]]
    m.emissionprob_ = [[0.9, 0.1], [0.1, 0.9]]
    with pytest.raises(NotFittedError, match="duration_rates_"):
        m.score([0, 1])
    m.duration_rates_ = [1.0, 2.0]
    assert np.isfinite(m.score([0, 1, 1]))
    assert m.n_parameters() == 1 + 0 + 2 + 2


# -- the families ---------------------------------------------------------------------------------
@pytest.mark.parametrize("family", [
    NonparametricDurations(2, 30), GeometricDurations(2, 30), PoissonDurations(2, 30),
    NegativeBinomialDurations(2, 30)])
def test_family_survival_is_the_tail_sum_of_its_pmf(family):
    params = family.initialize(np.array([0.5, 0.8]))
    if isinstance(family, NegativeBinomialDurations):
        params["duration_shapes"] = np.array([3.0, 1.0])
    big = family if isinstance(family, NonparametricDurations) else type(family)(2, 3000)
    f, S = big.pmf(params), big.survival(params)
    np.testing.assert_allclose(S[:, :30], np.cumsum(f[:, ::-1], axis=1)[:, ::-1][:, :30],
                               atol=1e-12)
    np.testing.assert_allclose(family.mean(params), f @ np.arange(1, f.shape[1] + 1),
                               rtol=1e-9)


def test_censored_imputation_is_a_generalised_em_step():
    """The nonparametric, Poisson and negative-binomial M-steps never lower the expected
    complete-data log-likelihood Q = sum eta log f + c log S."""
    rng = np.random.default_rng(0)
    for family, params in (
            (NonparametricDurations(1, 20), {"durations": rng.dirichlet(np.ones(20))[None]}),
            (PoissonDurations(1, 20), {"duration_rates": np.array([3.0])}),
            (NegativeBinomialDurations(1, 20), {"duration_shapes": np.array([2.0]),
                                               "duration_probs": np.array([0.3])})):
        complete = rng.random((1, 20)) * 5
        censored = rng.random((1, 20)) * 3

        def q(p, family=family, complete=complete, censored=censored):
            with np.errstate(divide="ignore"):
                return float(np.sum(complete * np.log(family.pmf(p)))
                             + np.sum(censored * np.log(family.survival(p))))

        stats = family.statistics(complete, censored)
        for _ in range(5):
            new, _ = family.mstep(params, stats, "d")
            assert q(new) >= q(params) - 1e-9, type(family).__name__
            params = new


def test_the_exact_kl_divergence_refuses_an_hsmm_and_the_rate_takes_it():
    """An HSMM's transmat_ is not an HMM's: the exact KL divergence (a Markov chain's)
    refuses it; the divergence rate (by sampling) takes it, 0 against itself."""
    from hiddenstate import metrics

    m = _nonparametric([0.5, 0.5], [[0.0, 1.0], [1.0, 0.0]],
                       np.array([[0.2, 0.3, 0.5], [0.5, 0.3, 0.2]]),
                       np.array([[0.8, 0.2], [0.3, 0.7]]))
    with pytest.raises(InvalidInputError, match="HSMM"):
        metrics.kl_divergence(m, m, 5)
    rate = metrics.divergence_rate(m, m, length=50, n_sequences=20, random_state=0)
    assert abs(float(rate)) < 1e-12


def test_the_command_line_fits_an_hsmm_that_score_reads(tmp_path, capsys):
    """``hiddenstate fit --duration poisson --max-duration 12`` writes an HSMM; ``score``
    reads it and prints its log-likelihood."""
    from hiddenstate import cli

    teacher = _teacher("poisson")
    X, _ = teacher.sample(300, random_state=5)
    data = tmp_path / "x.npy"
    np.save(data, X)
    out = tmp_path / "m"
    assert cli.main(["fit", str(data), "--out", str(out), "--emission", "gaussian",
                     "--n-states", "3", "--duration", "poisson", "--max-duration", "12",
                     "--random-state", "0", "--n-iter", "5"]) == 0
    model = hs.load(out)
    assert type(model) is hs.HSMM and model.max_duration_ == 12
    capsys.readouterr()
    assert cli.main(["score", str(data), "--model", str(out), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["total"] == pytest.approx(model.score(X), rel=1e-12)
    assert cli.main(["fit", str(data), "--out", str(tmp_path / "n"), "--max-duration",
                     "5"]) != 0
    assert "--max-duration" in capsys.readouterr().err


def test_sample_counts_gives_the_log_joint_of_the_drawn_segmentation():
    """What a Gibbs sweep calls: the drawn segmentation's log p(X, z | theta) equals the
    enumerated one, and its counts are the segmentation's."""
    rng = np.random.default_rng(2)
    K, D, T = 2, 4, 7
    pi, A, f = _chain_params(rng, K, D)
    E = rng.dirichlet(np.ones(3), size=K)
    X = rng.integers(0, 3, size=T)
    want = {tuple(z): lp for lp, z in enumerate_hsmm(pi, A, f, _survival(f),
                                                      E[:, X].T)["paths"]}
    m = _nonparametric(pi, A, f, E)
    family = m.emission_family(3, X)
    problem = HSMMProblem(family, NonparametricDurations(K, D), X,
                          inference.Sequences.from_lengths([T]), 1.0, 1.0)
    views = {"startprob": pi, "transmat": problem.transitions.gather(A),
             "emission": {"emissionprob": E}, "durations": {"durations": f}}
    for seed in range(5):
        log_joint, stats, z = problem.sample_counts(views, np.random.default_rng(seed))
        assert log_joint == pytest.approx(want[tuple(z)], rel=1e-12)
        n_segments = 1 + np.count_nonzero(np.diff(z))
        assert stats["durations"]["complete"].sum() + stats["durations"]["censored"].sum() \
            == n_segments


@pytest.mark.parametrize("family", [NonparametricDurations(1, 6), GeometricDurations(1, 6),
                                    PoissonDurations(1, 6)])
def test_conjugate_draws_have_the_posterior_mean(family):
    """4000 draws given complete segments: their mean is the conjugate posterior's
    (Dirichlet(1 + n), Beta(1 + ends, 1 + stays), Gamma(1 + sum(d - 1), n)) within 4
    standard errors."""
    rng = np.random.default_rng(0)
    complete = np.array([[0.0, 3.0, 5.0, 1.0, 0.0, 2.0]])
    stats = family.statistics(complete, np.zeros((1, 6)))
    params = family.initialize(np.array([0.6]))
    key = family.keys[0]
    draws = np.array([family.sample_posterior(params, stats, "d", rng)[key][0]
                      for _ in range(4000)])
    d = np.arange(6)
    want = {NonparametricDurations: (1 + complete[0]) / (6 + complete.sum()),
            GeometricDurations: np.array([(1 + 11) / (2 + 11 + complete[0] @ d)]),
            PoissonDurations: np.array([(1 + complete[0] @ d) / 11])}[type(family)]
    se = draws.std(axis=0) / np.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - want) <= 4 * se + 1e-12)


def test_censored_segments_are_completed_from_the_tail_of_the_pmf():
    """Data augmentation of a Gibbs sweep: a segment censored at 3 steps gets a duration
    d >= 3 with probability f(d) / S(3)."""
    family = NonparametricDurations(1, 5)
    f = np.array([[0.1, 0.2, 0.3, 0.25, 0.15]])
    censored = np.array([[0.0, 0.0, 20000.0, 0.0, 0.0]])
    got = family._augment({"durations": f}, censored, np.random.default_rng(1))[0]
    want = np.array([0, 0, 0.3, 0.25, 0.15]) / 0.7 * 20000
    assert np.all(np.abs(got - want) <= 4 * np.sqrt(want * (1 - want / 20000)) + 1e-9)


def test_the_e_step_memory_of_a_long_sequence_is_far_below_t_k_d():
    """The estimate the memory check uses, at T = 10^6, K = 10, D = 500: under 200 MiB for
    the recursion (one float per (t, k, d) would be 38 GiB); doubling D adds less than
    doubling T (the registers are K D, the per-row arrays T K)."""
    seqs = inference.Sequences.from_lengths([10**6])
    est = sum(segments.memory_estimate("posteriors", 10, 500, seqs).values())
    assert est < 200 * 2**20
    more_d = sum(segments.memory_estimate("posteriors", 10, 1000, seqs).values())
    more_t = sum(segments.memory_estimate(
        "posteriors", 10, 500, inference.Sequences.from_lengths([2 * 10**6])).values())
    assert more_d - est < more_t - est


@pytest.mark.parametrize("learn", ["em", "vb"])
def test_permuting_the_states_moves_every_parameter_and_keeps_the_scores(learn):
    teacher = _teacher("poisson")
    X, _ = teacher.sample(200, random_state=7)
    m = hs.HSMM(3, duration="poisson", emission="gaussian", max_duration=30, learn=learn,
                n_iter=3, random_state=0).fit(X)
    before, states = m.score_samples(X), m.predict(X)
    rates, perm = m.duration_rates_.copy(), np.array([2, 0, 1])
    posterior = {a: getattr(m, a).copy() for a in m._posterior_attrs()}
    m.permute_states(perm)
    np.testing.assert_allclose(m.score_samples(X), before, rtol=1e-12)
    np.testing.assert_array_equal(m.duration_rates_, rates[perm])
    np.testing.assert_array_equal(perm[m.predict(X)], states)
    if learn == "vb":
        np.testing.assert_array_equal(m.duration_rates_shape_posterior_,
                                      posterior["duration_rates_shape_posterior_"][perm])


def test_sample_weights_are_refused_naming_them():
    with pytest.raises(InvalidInputError, match="sample_weight"):
        hs.HSMM(2).fit(np.array([0, 1, 1, 0]), sample_weight=[2.0])


@pytest.mark.parametrize("learn", ["em", "kvt"])
def test_a_fit_is_the_same_on_one_and_on_two_threads(learn, monkeypatch):
    """Every segment kernel call parallel (thresholds 0): 1 and 2 threads learn, score,
    decode and sample the same numbers, bit for bit (chunks own their accumulators)."""
    from hiddenstate import threads

    monkeypatch.setattr(threads, "PARALLEL_SECONDS", 0.0)
    monkeypatch.setattr(threads, "BUSY_PARALLEL_SECONDS", 0.0)
    monkeypatch.setattr(threads, "_default", 2)
    teacher = _teacher("poisson")
    rng = np.random.default_rng(8)
    lengths = rng.integers(30, 120, 24)
    X = np.concatenate([teacher.sample(int(n), random_state=i)[0]
                        for i, n in enumerate(lengths)])
    fits = []
    for n_threads in (1, 2):
        with threads.limit(n_threads):
            m = hs.HSMM(3, duration="nonparametric", emission="gaussian", max_duration=30,
                        learn=learn, k_best=2, n_iter=4, tol=-np.inf, random_state=0)
            m.fit(X, lengths)
            fits.append((m.monitor_.history, m.durations_, m.score_samples(X, lengths),
                         m.predict(X, lengths), m.sample_posterior(X, lengths, random_state=1),
                         m.filter_proba(X, lengths)))
    for a, b in zip(*fits, strict=True):
        np.testing.assert_array_equal(a, b)

"""PROPS: source states with black-box emissions f_k(y_t | y_<t), perturbation states learned.

Checked against enumeration of all paths with the source probabilities written out by hand
(alignment included), against the direct transcription of online EM, parameter recovery
on synthetic PROPS data, resumable streams."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from brute_force import dataset_posteriors
from test_online_em import direct_online_em

from hiddenstate import PROPS
from hiddenstate.errors import InvalidInputError
from hiddenstate.learn.online.online_em import PRIOR_MASS
from hiddenstate.persist import arrays_path
from hiddenstate.sources import CallableSource, DensitySource, Source

W = 4


def shift_source(W: int = W, sharp: float = 0.7, first: int = 0):
    """f(y_t | y_<t): mass ``sharp`` on (y_{t-1} + 1) mod W (on ``first`` at t = 0), the rest
    spread evenly; reading the history one step off changes every probability."""
    def f(history):
        p = np.full(W, (1 - sharp) / (W - 1))
        p[(history[-1] + 1) % W if len(history) else first] = sharp
        return p
    return f


def two_back_source(W: int = W):
    """Depends on y_{t-2}: likely the same symbol as two steps back."""
    def f(history):
        p = np.full(W, 0.1 / (W - 1))
        p[history[-2] if len(history) >= 2 else W - 1] = 0.9
        return p
    return f


def source_table(fns, y, lengths):
    """log f_k(y_t | y_<t) by calling each function on the explicit history (holes, -1,
    kept in it); 0 at a missing step."""
    out = np.zeros((len(y), len(fns)))
    start = 0
    for n in lengths:
        seq = y[start:start + n]
        for t in range(n):
            if seq[t] >= 0:
                out[start + t] = [np.log(fn(seq[:t])[seq[t]]) for fn in fns]
        start += n
    return out


def direct_reference(fns, y, lengths, pi, A, B, **kw):
    """:func:`direct_online_em` on a PROPS model with the sources ``fns`` (their columns
    first, flat emissions there), perturbation rows ``B`` and the learner's default
    priors."""
    K, W_ = len(pi), B.shape[1]
    theta = {"startprob": pi, "transmat": A,
             "emission": {"emissionprob": np.vstack([np.full((len(fns), W_), 1 / W_), B])}}
    return direct_online_em(theta, y, lengths, emission="categorical",
                            alpha_t=np.full((K, K), 1 + PRIOR_MASS / K),
                            alpha_e=np.full((K, W_), 1 + PRIOR_MASS / W_),
                            source_b=np.exp(source_table(fns, y, lengths)), **kw)


def fitted(sources, Kp, rng, supports_missing: bool = False, **kw):
    """A PROPS model with random parameters set by hand (no fit)."""
    m = PROPS([CallableSource(f, W, supports_missing=supports_missing) for f in sources],
              n_perturbation_states=Kp,
              init_params="", **kw)
    K = len(sources) + Kp
    m.startprob_ = rng.dirichlet(np.ones(K))
    m.transmat_ = rng.dirichlet(np.ones(K), size=K)
    m.emissionprob_ = rng.dirichlet(np.ones(W), size=Kp)
    m.n_features_ = W
    return m


def full_log_e(m, fns, y, lengths):
    return np.hstack([source_table(fns, y, lengths), np.log(m.emissionprob_.T[y])])


@pytest.mark.parametrize("Kp", [1, 2])
def test_inference_against_enumeration(Kp):
    rng = np.random.default_rng(Kp)
    fns = [shift_source(), two_back_source()]
    m = fitted(fns, Kp, rng)
    lengths = np.array([5, 1, 4])
    y = rng.integers(0, W, lengths.sum())
    log_e = full_log_e(m, fns, y, lengths)
    ref = dataset_posteriors(m.startprob_, m.transmat_, log_e, lengths)
    assert np.allclose(m.score_samples(y, lengths), ref["loglik"], rtol=1e-12, atol=0)
    assert np.allclose(m.predict_proba(y, lengths), ref["gamma"], rtol=0, atol=1e-12)
    logp, path = m.decode(y, lengths)
    assert np.array_equal(path, ref["viterbi_path"])
    assert np.isclose(logp, ref["viterbi_logprob"].sum(), rtol=1e-12)
    # filtered posteriors and predictive probabilities from prefix enumerations
    scores = m.token_scores(y, lengths)
    start = 0
    for n in lengths:
        for t in range(n):
            pre = dataset_posteriors(m.startprob_, m.transmat_, log_e[start:start + t + 1],
                                     [t + 1])
            filt = pre["per_sequence"][0]["gamma"][-1]
            assert np.allclose(scores.filtered[start + t], filt, atol=1e-12)
            prev = 0.0 if t == 0 else dataset_posteriors(
                m.startprob_, m.transmat_, log_e[start:start + t], [t])["loglik"][0]
            assert np.isclose(scores.log_prob[start + t], pre["loglik"][0] - prev, rtol=1e-11)
            p = filt[2:].sum()
            assert np.isclose(scores.membership_log_odds[start + t], np.log(p / (1 - p)),
                              rtol=1e-9)
        start += n
    assert np.array_equal(m.membership_log_odds(y, lengths), scores.membership_log_odds)
    assert np.array_equal(m.filter_proba(y, lengths), scores.filtered)
    assert np.array_equal(m.score_tokens(y, lengths), scores.log_prob)
    assert np.allclose(scores.smoothed, ref["gamma"], atol=1e-12)
    assert np.array_equal(scores.viterbi, ref["viterbi_path"])
    assert np.allclose(scores.source_log_prob, log_e[:, :2], rtol=1e-14)


def test_source_alignment_catches_an_off_by_one():
    """The probability used for y_t conditions on y_<t: the first symbol is scored by
    reset(), y_t by the distribution returned after consuming y_{t-1}."""
    fn = shift_source(sharp=0.9, first=2)
    y = np.array([2, 3, 0, 0, 1, 2])  # mostly follows the shift rule
    m = fitted([fn], 1, np.random.default_rng(0))
    got = m.token_scores(y).source_log_prob[:, 0]
    right = [np.log(fn(y[:t])[y[t]]) for t in range(len(y))]
    late = [np.log(fn(y[:t + 1])[y[t]]) for t in range(len(y))]  # includes y_t itself
    early = [np.log(fn(y[:max(t - 1, 0)])[y[t]]) for t in range(len(y))]  # misses y_{t-1}
    assert np.allclose(got, right, rtol=1e-15)
    assert not np.allclose(got, late) and not np.allclose(got, early)
    # the same through a Source subclass with its own state (reset/step, no history)
    m2 = PROPS([_ShiftState()], n_perturbation_states=1, init_params="")
    for a in ("startprob_", "transmat_", "emissionprob_", "n_features_"):
        setattr(m2, a, getattr(m, a))
    assert np.allclose(m2.token_scores(y).source_log_prob[:, 0], right, rtol=1e-15)


class _ShiftState(Source):
    """shift_source(sharp=0.9, first=2) as a stateful source (keeps only the last symbol)."""

    n_symbols = W

    def _dist(self, last):
        p = np.full(W, 0.1 / (W - 1))
        p[2 if last < 0 else (last + 1) % W] = 0.9
        return p

    def reset(self):
        self.last = -1
        return self._dist(-1)

    def step(self, y):
        self.last = int(y)
        return self._dist(self.last)

    def snapshot(self):
        return {"last": np.array([self.last])}

    def restore(self, snap):
        self.last = int(snap["last"][0])


def test_online_em_matches_the_direct_transcription():
    rng = np.random.default_rng(7)
    fns = [shift_source(), two_back_source()]
    lengths = np.array([60, 1, 39, 100])
    y = rng.integers(0, W, lengths.sum())
    Kp = 2
    K = 2 + Kp
    pi = np.full(K, 1 / K)
    A = rng.dirichlet(np.ones(K), K)
    B = rng.dirichlet(np.ones(W), Kp)
    opts = {"step_exponent": 0.7, "warmup": 5}
    m = PROPS([CallableSource(f, W) for f in fns], n_perturbation_states=Kp, init_params="",
              learner_options=opts)
    m.startprob_, m.transmat_, m.emissionprob_ = pi, A, B
    m.fit(y, lengths)
    ref = direct_reference(fns, y, lengths, pi, A, B, step_exponent=0.7, warmup=5)
    assert np.allclose(m.transmat_, ref["transmat"], rtol=1e-9, atol=1e-12)
    assert np.allclose(m.emissionprob_, ref["emission"]["emissionprob"][2:], rtol=1e-9,
                       atol=1e-12)
    assert np.array_equal(m.startprob_, pi)  # learn_startprob=False keeps it
    # the prequential predictive probabilities, each before learning from its symbol
    assert np.allclose(m.stream_log_prob_, ref["log_pred"], rtol=1e-9)


def test_stream_cut_anywhere_resumes_bit_identically():
    rng = np.random.default_rng(3)
    fns = [shift_source()]
    y = rng.integers(0, W, 300)
    lengths = np.array([120, 180])

    def new():
        return PROPS([CallableSource(f, W) for f in fns], n_perturbation_states=2, random_state=5,
                     learner_options={"warmup": 10})

    whole = new().fit(y, lengths)
    cut = new()
    cut.partial_fit(y[:50], [50])
    before = cut.transmat_.copy()
    cut.score_tokens(y[200:230])  # scoring in the middle of a stream changes nothing
    assert np.array_equal(cut.transmat_, before)
    cut.partial_fit(y[50:120], [70], continues=True)   # ends the first sequence
    cut.partial_fit(y[120:200], [80])                  # a new sequence, cut again
    cut.partial_fit(y[200:], [100], continues=True)
    for a in ("startprob_", "transmat_", "emissionprob_"):
        assert np.array_equal(getattr(whole, a), getattr(cut, a)), a
    # continues=True differs from restarting the source (the test can fail)
    restart = new()
    restart.partial_fit(y[:50], [50])
    restart.partial_fit(y[50:120], [70])
    restart.partial_fit(y[120:], [180])
    assert not np.array_equal(whole.transmat_, restart.transmat_)


class LastSymbolSource(Source):
    """A stateful source whose prediction depends on the last symbol only: row ``last`` of
    ``table`` (row -1, the last row, at a sequence start)."""

    def __init__(self, table):
        self.table = np.asarray(table, dtype=float)
        self.n_symbols = self.table.shape[1]

    def reset(self):
        self.last = -1
        return self.table[-1]

    def step(self, y):
        self.last = int(y)
        return self.table[self.last]

    def snapshot(self):
        return {"last": np.array([self.last])}

    def restore(self, snap):
        self.last = int(snap["last"][0])


def _sample_teacher(rng, T):
    """Two sources over W=6 (one favours low symbols after low ones, the other repeats), two
    perturbation states with their own rows; sticky transitions."""
    Wt = 6
    low = np.array([[4, 3, 2, 1, 1, 1]] * 3 + [[1] * 6] * 4, float)
    low /= low.sum(axis=1, keepdims=True)
    repeat = np.full((7, 6), 0.04)
    repeat[np.arange(6), np.arange(6)] = 0.8
    repeat[6, 5] = 0.8
    sources = [LastSymbolSource(low), LastSymbolSource(repeat)]
    teacher = PROPS(sources, n_perturbation_states=2, init_params="")
    teacher.startprob_ = np.full(4, 0.25)
    teacher.transmat_ = np.array([[0.9, 0.04, 0.03, 0.03], [0.03, 0.9, 0.04, 0.03],
                                  [0.03, 0.03, 0.9, 0.04], [0.04, 0.03, 0.03, 0.9]])
    teacher.emissionprob_ = np.array([[0.05, 0.05, 0.6, 0.05, 0.2, 0.05],
                                      [0.02, 0.3, 0.02, 0.6, 0.02, 0.04]])
    teacher.n_features_ = Wt
    y, z = teacher.sample(T, random_state=rng)
    return teacher, sources, y[:, 0], z


@pytest.mark.parametrize("learn", ["online-em", "em"])
def test_parameter_recovery_two_sources_two_perturbation_states(learn):
    rng = np.random.default_rng(11)
    teacher, sources, y, _ = _sample_teacher(rng, 40000)
    # EM from the default (moment-matched, lambda = 0.76 here) start recovers the teacher
    # from 7 of 8 seeds (0-7; seed 0 ends in a local optimum 2,554 nats below the others,
    # the old sticky random start from 8 of 8): two restarts keep the better likelihood
    student = PROPS(sources, n_perturbation_states=2, learn=learn, random_state=0, n_iter=200,
                    tol=1e-6,
                    n_init=2 if learn == "em" else 1,
                    learner_options={"step_exponent": 0.6} if learn == "online-em" else None)
    student.fit(y)
    # perturbation states may come out in either order; source states are pinned
    order = np.argsort(student.emissionprob_[:, 2])[::-1]
    perm = np.concatenate([[0, 1], 2 + order])
    A = student.transmat_[np.ix_(perm, perm)]
    B = student.emissionprob_[order]
    # one pass of online EM (step t**-0.6) ends about 0.04 away; EM on all the data 0.01
    tol = 0.05 if learn == "online-em" else 0.02
    assert np.abs(A - teacher.transmat_).max() < tol, A.round(3)
    assert np.abs(B - teacher.emissionprob_).max() < tol, B.round(3)
    # and the fitted model explains held-out data almost as well as the teacher
    y_test = teacher.sample(5000, random_state=np.random.default_rng(12))[0]
    gap = (teacher.score(y_test) - student.score(y_test)) / len(y_test)
    assert -0.005 < gap < 0.01  # nats per symbol; the teacher is not always best on a sample


def test_batch_modes_never_decrease_their_objective():
    rng = np.random.default_rng(2)
    _, sources, y, _ = _sample_teacher(rng, 3000)
    for learn in ("em", "map", "vb"):
        m = PROPS(sources, n_perturbation_states=2, learn=learn, random_state=1, n_iter=15,
                  tol=-np.inf)
        m.fit(y, [1000, 2000])
        h = np.array(m.monitor_.history)
        assert np.all(np.diff(h) >= -1e-9 * np.abs(h[1:])), (learn, h)


def test_one_em_iteration_equals_enumerated_expected_counts():
    rng = np.random.default_rng(4)
    fns = [shift_source()]
    m = fitted(fns, 1, rng, learn="em", n_iter=1)
    A0, B0 = m.transmat_.copy(), m.emissionprob_.copy()
    lengths = np.array([5, 4])
    y = rng.integers(0, W, 9)
    m.fit(y, lengths)
    m0 = fitted(fns, 1, np.random.default_rng(4))
    log_e = full_log_e(m0, fns, y, lengths)
    ref = dataset_posteriors(m0.startprob_, A0, log_e, lengths, symbols=y, n_symbols=W)
    assert np.allclose(m.transmat_, ref["trans"] / ref["trans"].sum(1, keepdims=True),
                       rtol=1e-10)
    counts = ref["emission"][:, 1]
    assert np.allclose(m.emissionprob_[0], counts / counts.sum(), rtol=1e-10)
    assert np.array_equal(m.startprob_, m0.startprob_)  # not learned by default
    assert not np.allclose(B0, m.emissionprob_)


def test_sample_follows_the_sources():
    """With one source state and no perturbation state, samples are the source's own: the
    shift rule holds with the source's frequency."""
    m = PROPS([CallableSource(shift_source(sharp=0.8), W)], n_perturbation_states=0, init_params="")
    m.startprob_, m.transmat_, m.emissionprob_, m.n_features_ = (
        np.ones(1), np.ones((1, 1)), np.empty((0, W)), W)
    y = m.sample(20000, random_state=0)[0][:, 0]
    hits = np.mean(y[1:] == (y[:-1] + 1) % W)
    assert abs(hits - 0.8) < 4 * np.sqrt(0.8 * 0.2 / len(y))


@pytest.mark.parametrize("kwargs, match", [
    ({"sources": []}, "sources"),
    ({"sources": ["not a source"]}, "sources"),
    ({"sources": [CallableSource(shift_source(), 4), CallableSource(shift_source(5), 5)]},
     "alphabets"),
    ({"learn": "bwo"}, "learn"),
    ({"emission": "gaussian"}, "emission"),
    ({"n_perturbation_states": -1}, "n_perturbation_states"),
    ({"n_features": 7}, "n_features"),
])
def test_bad_hyper_parameters_name_the_argument(kwargs, match):
    base = {"sources": [CallableSource(shift_source(), W)]}
    with pytest.raises(InvalidInputError, match=match):
        PROPS(**{**base, **kwargs}).fit(np.arange(8) % W)


def test_bad_data_and_bad_sources():
    m = PROPS([CallableSource(shift_source(), W)], n_perturbation_states=1)
    with pytest.raises(InvalidInputError, match="X"):
        m.fit(np.array([0, 1, 9]))
    bad = PROPS([CallableSource(lambda h: np.ones(W), W, name="unnormalised")],
                n_perturbation_states=1)
    with pytest.raises(InvalidInputError, match="unnormalised"):
        bad.fit(np.arange(8) % W)
    with pytest.raises(InvalidInputError, match="continues"):
        PROPS([CallableSource(shift_source(), W)],
              n_perturbation_states=1).partial_fit(np.arange(4), continues=True)


def test_clone_and_params():
    from sklearn.base import clone

    src = CallableSource(shift_source(), W)
    m = PROPS([src], n_perturbation_states=2, learn="em")
    c = clone(m)
    assert c.n_states == 3 and c.learn == "em" and len(c.sources) == 1
    assert set(itertools.chain(m.get_params())) >= {"sources", "n_perturbation_states"}


def test_save_load_with_a_kneser_ney_source_and_resume(tmp_path):
    from hiddenstate import load
    from hiddenstate.errors import ModelFileError
    from hiddenstate.sources import KneserNeySource

    rng = np.random.default_rng(8)
    train = rng.integers(0, W, 400)
    src = KneserNeySource(order=2).fit(train, n_symbols=W)
    y = rng.integers(0, W, 300)
    whole = PROPS([src], n_perturbation_states=1, random_state=3).fit(y, [100, 200])
    cut = PROPS([src], n_perturbation_states=1, random_state=3)
    cut.partial_fit(y[:150], [100, 50])
    cut.save(tmp_path / "m")
    back = load(tmp_path / "m")
    assert isinstance(back, PROPS) and isinstance(back.sources[0], KneserNeySource)
    back.partial_fit(y[150:], [150], continues=True)
    for a in ("startprob_", "transmat_", "emissionprob_"):
        assert np.array_equal(getattr(whole, a), getattr(back, a)), a
    assert np.array_equal(whole.token_scores(y).log_prob, back.token_scores(y).log_prob)
    # a source's file is checked like the model's
    (source_dir,) = (tmp_path / "m").glob("source-0.*")
    arrays = arrays_path(source_dir)
    arrays.write_bytes(arrays.read_bytes()[:-20] + b"\0" * 20)
    with pytest.raises(ModelFileError):
        load(tmp_path / "m")
    # a callable source cannot be saved, and says so
    with pytest.raises(ModelFileError, match="cannot be saved"):
        PROPS([CallableSource(shift_source(), W)],
              n_perturbation_states=1).fit(y).save(tmp_path / "c")


# -- Gaussian and Poisson perturbation states with density sources --------------------------------
class _Normal:
    """N(mean, I) with logpdf and sample (a predictive distribution of a DensitySource)."""

    def __init__(self, mean):
        self.mean = mean

    def logpdf(self, x):
        d = np.asarray(x) - self.mean
        return float(-0.5 * d @ d - 0.5 * len(d) * np.log(2 * np.pi))

    def sample(self, rng):
        return self.mean + rng.normal(size=len(self.mean))


class AR1Source(DensitySource):
    """x_t ~ N(rho x_{t-1}, I), x_0 ~ N(0, I): a black box that needs the history."""

    def __init__(self, rho=0.8, D=2):
        self.rho, self.n_features = rho, D

    def reset(self):
        self.last = np.zeros(self.n_features)
        return self.predictive()

    def step(self, x):
        self.last = np.asarray(x, dtype=float).copy()
        return self.predictive()

    def predictive(self):
        return _Normal(self.rho * self.last)

    def snapshot(self):
        return {"last": self.last.copy()}

    def restore(self, snap):
        self.last = np.asarray(snap["last"], dtype=float).copy()


def _ar1_table(y, lengths, rho):
    out, start = np.empty(len(y)), 0
    for n in lengths:
        prev = np.zeros(y.shape[1])
        for t in range(n):
            out[start + t] = _Normal(rho * prev).logpdf(y[start + t])
            prev = y[start + t]
        start += n
    return out


def _gaussian_props(rng, source=None, **kw):
    """A PROPS model with one 2-D density source (default ``AR1Source(0.8)``) and two
    Gaussian perturbation states, parameters set by hand."""
    m = PROPS([AR1Source(0.8) if source is None else source], n_perturbation_states=2,
              emission="gaussian",
              covariance_type="diag", init_params="", **kw)
    m.startprob_ = rng.dirichlet(np.ones(3))
    m.transmat_ = rng.dirichlet(np.ones(3) * 3, size=3)
    m.means_ = np.array([[3.0, -3.0], [-3.0, 3.0]])
    m.covars_ = np.array([[1.0, 0.5], [0.7, 1.5]])
    m.n_features_ = 2
    return m


def test_gaussian_perturbation_states_against_enumeration():
    from scipy import stats as st

    rng = np.random.default_rng(21)
    m = _gaussian_props(rng)
    lengths = np.array([4, 2])
    y = rng.normal(size=(6, 2)) * 2
    src = _ar1_table(y, lengths, 0.8)
    pert = np.stack([st.norm(m.means_[k], np.sqrt(np.diag(m.covars_[k]))).logpdf(y).sum(1)
                     for k in range(2)], axis=1)
    log_e = np.column_stack([src, pert])
    ref = dataset_posteriors(m.startprob_, m.transmat_, log_e, lengths)
    assert np.allclose(m.score_samples(y, lengths), ref["loglik"], rtol=1e-12)
    assert np.allclose(m.predict_proba(y, lengths), ref["gamma"], atol=1e-12)
    assert np.array_equal(m.decode(y, lengths)[1], ref["viterbi_path"])
    assert np.allclose(m.token_scores(y, lengths).source_log_prob[:, 0], src, rtol=1e-14)


def test_gaussian_online_em_matches_the_direct_transcription():
    from hiddenstate.families import GaussianEmissions

    rng = np.random.default_rng(22)
    teacher = _gaussian_props(rng)
    y, _ = teacher.sample(600, random_state=np.random.default_rng(23))
    lengths = [250, 350]
    m = _gaussian_props(np.random.default_rng(22), learner_options={"warmup": 10})
    theta = {"startprob": m.startprob_.copy(), "transmat": m.transmat_.copy(),
             "emission": {"means": m.means_.copy() + 0.5,
                          "covars": np.array([[1.0, 0.5], [0.7, 1.5]])}}
    m.means_ = theta["emission"]["means"].copy()
    m.partial_fit(y[:300], [250, 50])
    m.partial_fit(y[300:], [300], continues=True)
    # the perturbation states' family, with its priors
    fam = m.emission_family(m.n_features_).inner
    assert isinstance(fam, GaussianEmissions) and fam.n_states == 2
    ref = direct_online_em(theta, y, lengths, emission="dense", family=fam, warmup=10,
                           alpha_t=np.full((3, 3), 1 + PRIOR_MASS / 3),
                           source_ll=_ar1_table(y, lengths, 0.8)[:, None])
    assert np.allclose(m.transmat_, ref["transmat"], rtol=1e-9, atol=1e-12)
    assert np.allclose(m.means_, ref["emission"]["means"], rtol=1e-9)
    assert np.allclose(m._covars_, ref["emission"]["covars"], rtol=1e-9)
    assert np.allclose(np.concatenate([m.stream_log_prob_]), ref["log_pred"][300:], rtol=1e-9)


def test_gaussian_props_recovers_its_teacher_by_em():
    rng = np.random.default_rng(24)
    teacher = _gaussian_props(rng)
    teacher.transmat_ = np.array([[0.9, 0.05, 0.05], [0.1, 0.85, 0.05], [0.1, 0.05, 0.85]])
    y, z = teacher.sample(6000, random_state=np.random.default_rng(25))
    student = PROPS([AR1Source(0.8)], n_perturbation_states=2, emission="gaussian", learn="em",
                    random_state=0,
                    n_iter=100, tol=1e-8)
    student.fit(y)
    order = np.argsort(student.means_[:, 0])[::-1]
    assert np.abs(student.means_[order] - teacher.means_).max() < 0.1
    perm = np.concatenate([[0], 1 + order])
    assert np.abs(student.transmat_[np.ix_(perm, perm)] - teacher.transmat_).max() < 0.03
    # the source state is pinned: the AR(1) stretches are found (state 0 decoded)
    assert np.mean(student.predict(y)[z == 0] == 0) > 0.9


def test_density_sources_need_a_dense_family():
    with pytest.raises(InvalidInputError, match="sources: entry 0 is a AR1Source"):
        PROPS([AR1Source()], n_perturbation_states=1).fit(np.zeros((5, 2)))
    with pytest.raises(InvalidInputError, match="n_features"):
        PROPS([AR1Source(D=2)], n_perturbation_states=1, emission="gaussian",
              n_features=3).fit(np.zeros((5, 2)))
    with pytest.raises(InvalidInputError, match="X"):
        PROPS([AR1Source(D=2)], n_perturbation_states=1, emission="gaussian").fit(np.zeros((5, 3)))

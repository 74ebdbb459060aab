"""Numerics that survive real data (issue 9, items 4 and 5): data far from the origin, tiny
and huge scales, large counts, nearly constant features, states with one observation or
none, huge alphabets.

Shift invariance: the data ``X + c`` are ``X`` rounded to the spacing of floats near ``c``,
an error of up to ``|c| * eps / 2`` per entry; relative to the data's spread ``s`` that is
``r = |c| * eps / s``. A fit is a smooth function of its data near a well-separated optimum,
so ``fit(X + c)`` must agree with ``fit(X)`` (means shifted by ``c``) to a modest multiple of
``r``: ``SHIFT_TOL * r`` below, about 1e-8 at c = 1e6 and 1e-2 at c = 1e12 (raw moments,
which lose ``(c / s)**2 * eps``, were off by 100% from c = 1e8 on).
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest
from brute_force import log_space_sequence, sequence_posteriors
from scipy import stats

from hiddenstate import HMM, inference
from hiddenstate.compat.hmmlearn import PoissonHMM as CompatPoissonHMM
from hiddenstate.errors import (
    ConvergenceWarning,
    DegenerateStateWarning,
    NumericalError,
)
from hiddenstate.families import GaussianEmissions
from hiddenstate.kernels.online_em import DIAG, FULL, _dense_statistic
from hiddenstate.learn.online.online_em import _follow_means, _Layout

EPS = np.finfo(np.float64).eps
OFFSETS = (1e6, 1e8, 1e10, 1e12)
COVARIANCE_TYPES = ("diag", "full", "spherical", "tied")
SHIFT_TOL = 100.0  # multiples of |c| eps / spread (see the module docstring)
#: online EM with full covariances moves by up to ~500 |c| eps / spread when it is fed
#: (X + c) - c, the data X + c holds, shifted back exactly: no offset in the arithmetic at
#: all, only the rounding of the data (diagonal: ~5). Its offset error is of the same size.
ONLINE_SHIFT_TOL = 2000.0

MEANS = np.array([[0.0, 0.0], [6.0, 2.0], [-4.0, 8.0]])
TRANSMAT = np.array([[0.9, 0.05, 0.05], [0.05, 0.9, 0.05], [0.05, 0.05, 0.9]])


def sticky_gaussian(rng, n):
    """``n`` observations of a sticky 3-state chain with well-separated Gaussian states."""
    z = [0]
    for _ in range(n - 1):
        z.append(rng.choice(3, p=TRANSMAT[z[-1]]))
    chol = np.array([[1.0, 0.0], [0.4, 0.8]])
    return MEANS[z] + rng.standard_normal((n, 2)) @ chol.T


def unit_covars(ct, K=3, D=2):
    return {"diag": np.ones((K, D)), "spherical": np.ones(K),
            "full": np.tile(np.eye(D), (K, 1, 1)), "tied": np.eye(D)}[ct]


def gaussian_model(ct, learn, c, **kw):
    """A Gaussian HMM from fixed starting parameters, means shifted by ``c``."""
    m = HMM(3, emission="gaussian", covariance_type=ct, learn=learn, init_params="",
            **kw)
    m.startprob_ = np.full(3, 1 / 3)
    m.transmat_ = np.full((3, 3), 0.1) + 0.7 * np.eye(3)
    m.means_ = MEANS + 0.5 + c
    m.covars_ = unit_covars(ct)
    return m


def fit_quietly(model, X):
    """Fit with every warning an error: a decreasing objective or a floored state fails."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        warnings.simplefilter("error", DegenerateStateWarning)
        return model.fit(X)


def assert_shifted(got, want, c, tol, n):
    """``got`` was fitted to ``X + c``, ``want`` to ``X``; ``tol`` is relative to the data's
    spread (means, covariances) or per observation (log-likelihood, ``n`` observations)."""
    np.testing.assert_allclose(got.means_ - c, want.means_, rtol=0, atol=tol * 3)
    np.testing.assert_allclose(got.covars_, want.covars_, rtol=tol, atol=tol * 9)
    np.testing.assert_allclose(got.transmat_, want.transmat_, rtol=0, atol=tol)


# -- item 1: Gaussian batch learning is shift-invariant ---------------------------------------
MODES = {"em": {}, "map": {"means_weight": 1.0, "covars_prior": 0.1},
         "vb": {"covars_prior": 0.1}}


@pytest.fixture(scope="module")
def batch_data():
    return sticky_gaussian(np.random.default_rng(11), 300)


@pytest.mark.parametrize("learn", sorted(MODES))
@pytest.mark.parametrize("ct", COVARIANCE_TYPES)
def test_batch_fit_is_shift_invariant(batch_data, ct, learn):
    """fit(X + c) from means + c equals fit(X) up to the rounding of X + c, for every
    covariance type and learning mode, and its objective never decreases (raw second
    moments: -inf, LinAlgError or ZeroProbabilityError from c = 1e8 on)."""
    X = batch_data
    spread = X.std()

    def fit(c):
        kw = dict(MODES[learn])
        if learn == "map":
            kw["means_prior"] = X.mean(axis=0) + c
        return fit_quietly(gaussian_model(ct, learn, c, n_iter=15, tol=-np.inf, **kw), X + c)

    ref = fit(0.0)
    for c in OFFSETS:
        got = fit(c)
        tol = SHIFT_TOL * c * EPS / spread
        assert_shifted(got, ref, c, tol, len(X))
        h = np.array(got.monitor_.history)
        np.testing.assert_allclose(h, ref.monitor_.history, rtol=0, atol=tol * len(X))
        assert np.all(np.diff(h) >= -1e-12 * np.abs(h[1:])), (c, np.diff(h).min())


@pytest.mark.parametrize("c", OFFSETS)
def test_kmeans_initialisation_is_shift_invariant(batch_data, c):
    """The data-driven start (k-means, data covariance) of X + c is that of X, shifted."""
    X = batch_data
    tol = SHIFT_TOL * c * EPS / X.std()
    a = HMM(3, emission="gaussian", covariance_type="full", n_iter=10, random_state=4).fit(X)
    b = HMM(3, emission="gaussian", covariance_type="full", n_iter=10,
            random_state=4).fit(X + c)
    assert_shifted(b, a, c, tol, len(X))


def test_loglik_table_is_accurate_far_from_the_origin(batch_data):
    """The emission log-likelihood of X + c under means + c is that of X (the differences
    x - mu are taken before squaring), diagonal kernel and Cholesky path alike."""
    X = batch_data[:50]
    for ct in ("diag", "full"):
        fam = GaussianEmissions(3, 2, ct)
        params = {"means": MEANS, "covars": unit_covars(ct) * 0.3}
        want = fam.log_likelihood(params, X)
        for c in OFFSETS:
            shifted = {"means": MEANS + c, "covars": params["covars"]}
            Xc = X + c
            # compare on the data that X + c really holds (X rounded near c), shifted back
            exact = fam.log_likelihood(params, Xc - c)
            got = fam.log_likelihood(shifted, Xc)
            np.testing.assert_allclose(got, exact, rtol=0, atol=1e-9 * np.abs(exact).max())
            assert np.abs(got - want).max() < SHIFT_TOL * c * EPS / 0.3 * np.abs(X).max()


def test_statistics_far_from_the_reference_point():
    """A state far from the column median (a separation of 1e7 standard deviations) gets its
    statistics summed about its own mean: the variance is exact, not cancelled away."""
    rng = np.random.default_rng(3)
    X = np.concatenate([rng.standard_normal((200, 1)), 1e7 + rng.standard_normal((50, 1))])
    post = np.zeros((250, 2))
    post[:200, 0] = post[200:, 1] = 1.0
    fam = GaussianEmissions(2, 1, "diag", min_covar=1e-12)
    new = fam.mstep({"means": np.zeros((2, 1)), "covars": np.ones((2, 1))},
                    fam.statistics(X, post), "mc")[0]
    np.testing.assert_allclose(new["covars"][:, 0], [X[:200].var(), X[200:].var()], rtol=1e-9)


# -- item 1: online EM ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def stream_data():
    return sticky_gaussian(np.random.default_rng(12), 1500)


@pytest.mark.parametrize("ct", COVARIANCE_TYPES)
def test_online_em_is_shift_invariant(stream_data, ct):
    """Online EM's running statistics are kept about a reference point near each state's
    mean: the stream of X + c gives the parameters and the prequential log-probabilities of
    the stream of X (raw running moments: variances off by 100% from c = 1e8 on)."""
    X = stream_data
    spread = X.std()

    def fit(c):
        m = HMM(3, emission="gaussian", covariance_type=ct, learn="online-em",
                init_params="st", covars_prior=0.0, random_state=1)
        m.means_ = MEANS + 0.1 + c
        m.covars_ = unit_covars(ct)
        return m.fit(X + c)

    ref = fit(0.0)
    for c in OFFSETS:
        got = fit(c)
        tol = ONLINE_SHIFT_TOL * c * EPS / spread
        assert_shifted(got, ref, c, tol, len(X))
        np.testing.assert_allclose(got.stream_log_prob_, ref.stream_log_prob_, rtol=0,
                                   atol=tol)


def test_online_em_far_start_is_exact():
    """One state, data at 1e8 with unit spread, the initial mean at 0: online EM's
    statistics are step-size weighted averages (weight of observation t:
    gamma_t prod_{s>t} (1 - gamma_s)), so its mean and variance must equal the weighted mean
    and variance of the data, computed here about the data."""
    rng = np.random.default_rng(5)
    x = 1e8 + rng.standard_normal(400)
    m = HMM(1, emission="gaussian", learn="online-em", init_params="st", covars_prior=0.0)
    m.means_, m.covars_ = np.zeros((1, 1)), np.ones((1, 1))
    m.fit(x[:, None])
    t = np.arange(1, len(x) + 1)
    gam = t ** -0.6
    w = gam * np.concatenate([np.cumprod((1 - gam)[::-1])[::-1][1:], [1.0]])
    mean = np.sum(w * x) / w.sum()
    var = np.sum(w * (x - mean) ** 2) / w.sum()
    np.testing.assert_allclose(m.means_[0, 0] - 1e8, mean - 1e8, rtol=0, atol=1e-7)
    np.testing.assert_allclose(m.covars_[0, 0, 0], var, rtol=1e-7)


@pytest.mark.parametrize("ct", ["diag", "full"])
def test_moving_the_reference_point_is_exact(ct):
    """Re-expressing online EM's auxiliaries about new reference points equals accumulating
    them about those points from the start."""
    rng = np.random.default_rng(6)
    K, D, N = 3, 2, 40
    fam = GaussianEmissions(K, D, ct)
    layout = _Layout(fam)
    kind = DIAG if ct == "diag" else FULL
    X = 5 + rng.standard_normal((N, D))
    weights = rng.random((N, K))

    def accumulate(frame):
        rho = np.zeros((K, layout.P, K))
        s = np.empty(layout.P)
        for i in range(K):
            for n in range(N):
                _dense_statistic(kind, X[n], frame[i], s)
                rho[i] += np.outer(s, weights[n])
        return rho

    frame = rng.standard_normal((K, D))
    rho = accumulate(frame)
    means = 5 + rng.standard_normal((K, D))
    covars = np.full((K, D), 0.01) if ct == "diag" else np.tile(0.01 * np.eye(D), (K, 1, 1))
    _follow_means(rho, frame, {"means": means, "covars": covars}, fam, layout)
    np.testing.assert_array_equal(frame, means)
    np.testing.assert_allclose(rho, accumulate(means), rtol=1e-12, atol=1e-12)


# -- item 2: Poisson with large counts -----------------------------------------------------------
RATES = np.array([[1.0, 2.0], [1.5, 0.7], [3.0, 3.0]])


def poisson_data(scale, n=400, seed=0):
    rng = np.random.default_rng(seed)
    z = [0]
    for _ in range(n - 1):
        z.append(rng.choice(3, p=TRANSMAT[z[-1]]))
    return rng.poisson(scale * RATES[z]).astype(np.float64)


@pytest.mark.parametrize("scale", [1e3, 1e5])
def test_poisson_large_counts_match_hmmlearn(scale):
    """From the same start, in which state 2 sits 22 Poisson standard deviations past the
    rates of state 1 (its posterior mass e^-300 or less: tiny, not zero), EM reaches hmmlearn
    0.3.3's log-likelihood and rates, state 2 included, and so does the compat PoissonHMM:
    it is not frozen as "dead" (a mass threshold of 1e-10 kept it where it started)."""
    hmmlearn_hmm = pytest.importorskip("hmmlearn.hmm")
    logging.getLogger("hmmlearn").setLevel(logging.ERROR)
    X = poisson_data(scale)
    R = scale * RATES
    lam0 = np.array([0.5 * (R[0] + R[1]), R[2], R[2] + 22 * np.sqrt(R[2])])
    start = (np.full(3, 1 / 3), np.full((3, 3), 0.1) + 0.7 * np.eye(3), lam0)
    ours = HMM(3, emission="poisson", n_iter=30, tol=-np.inf, init_params="")
    compat = CompatPoissonHMM(3, n_iter=30, tol=-np.inf, init_params="")
    theirs = hmmlearn_hmm.PoissonHMM(3, n_iter=30, tol=-np.inf, init_params="")
    for m in (ours, compat, theirs):
        m.startprob_, m.transmat_, m.lambdas_ = (a.copy() for a in start)
    mass = _with_features(ours, 2).predict_proba(X).sum(axis=0)
    assert 0 < mass[2] < 1e-100
    fit_quietly(ours, X)
    fit_quietly(compat, X)
    theirs.fit(X)
    for m in (ours, compat):
        np.testing.assert_allclose(m.monitor_.history[-1], theirs.monitor_.history[-1],
                                   rtol=1e-8)
        np.testing.assert_allclose(m.lambdas_, theirs.lambdas_, rtol=1e-6)
    assert np.all(np.abs(ours.lambdas_[2] - lam0[2]) > 10 * np.sqrt(lam0[2]))


def _with_features(model, n_features):
    """A model whose parameters were set by hand, usable for scoring."""
    model.n_features_ = n_features
    return model


@pytest.mark.parametrize("scale", [1e3, 1e4])
def test_poisson_default_initialisation_finds_every_state(scale):
    """The default start (k-means on sqrt(counts)) puts every state where some data are: EM
    recovers a 4-state teacher with rates ~scale (rates drawn around the overall mean left
    states without mass: log-likelihoods 10x to 80x lower, or ZeroProbabilityError)."""
    rng = np.random.default_rng(1)
    rates = scale * rng.uniform(0.5, 3, size=(4, 3))
    A = np.full((4, 4), 0.05) + 0.8 * np.eye(4)
    z = [0]
    for _ in range(599):
        z.append(rng.choice(4, p=A[z[-1]]))
    X = rng.poisson(rates[z]).astype(np.float64)
    teacher = _with_features(HMM(4, emission="poisson", init_params=""), 3)
    teacher.startprob_, teacher.transmat_, teacher.lambdas_ = np.full(4, 0.25), A, rates
    for seed in range(3):
        m = fit_quietly(HMM(4, emission="poisson", n_iter=100, random_state=seed), X)
        assert m.score(X) > teacher.score(X) - 20
        err = np.abs(m.lambdas_[:, None, :] / rates[None] - 1).max(axis=2).min(axis=0)
        assert np.all(err < 0.05), err


@pytest.mark.parametrize("scale", [1.0, 1e3, 1e5])
def test_poisson_large_counts_against_brute_force(scale):
    """Log-likelihood and posteriors on a tiny model with large counts equal enumeration
    over every path, log-likelihood differences of thousands of nats included."""
    rng = np.random.default_rng(2)
    lam = scale * np.array([[1.0, 2.0], [1.3, 1.7]])
    z = np.array([0, 0, 1, 0, 1, 1])
    X = rng.poisson(lam[z]).astype(np.float64)
    m = _with_features(HMM(2, emission="poisson", init_params=""), 2)
    m.startprob_, m.transmat_, m.lambdas_ = np.array([0.6, 0.4]), np.array(
        [[0.7, 0.3], [0.2, 0.8]]), lam
    log_e = stats.poisson(lam[None]).logpmf(X[:, None, :]).sum(axis=2)
    want = sequence_posteriors(m.startprob_, m.transmat_, log_e)
    # each log-pmf is a difference of terms ~ x log(lambda), rounded to eps times that
    atol = 64 * EPS * np.sum(X * np.log(lam).max(axis=0))
    np.testing.assert_allclose(m.score(X), want["loglik"], rtol=0, atol=atol)
    np.testing.assert_allclose(m.predict_proba(X), want["gamma"], rtol=1e-8, atol=1e-300)
    logprob, path = m.decode(X)
    np.testing.assert_array_equal(path, want["viterbi_path"])
    np.testing.assert_allclose(logprob, want["viterbi_logprob"], rtol=0, atol=atol)


def test_a_tiny_scale_does_not_underflow_the_likelihood():
    """700 observations that each halve the forward pass's running product of scales (to
    0.5**700 = 2e-211, above the point where it is folded into the log), then one that the
    filter finds 1e-134 times less likely than its best state explains it: the product
    underflowed to 0 (ZeroProbabilityError in EM from starts where hmmlearn converged).
    Against the textbook log-space recursions."""
    X = np.concatenate([np.tile([100.0, 1000.0], 350), [10000.0]])[:, None]
    m = _with_features(HMM(3, emission="poisson", init_params=""), 1)
    m.startprob_ = np.array([0.5, 0.5, 0.0])
    m.transmat_ = np.array([[0.5, 0.5 - 1e-134, 1e-134], [0.5, 0.5 - 1e-134, 1e-134],
                            [0.0, 0.0, 1.0]])
    m.lambdas_ = np.array([[100.0], [1000.0], [10000.0]])
    log_e = stats.poisson(m.lambdas_[None, :, 0]).logpmf(X)
    want = log_space_sequence(m.startprob_, m.transmat_, log_e)
    atol = 64 * EPS * np.sum(X * np.log(1e4))
    np.testing.assert_allclose(m.score(X), want["loglik"], rtol=0, atol=atol)
    np.testing.assert_allclose(m.predict_proba(X), want["gamma"], rtol=1e-8, atol=1e-300)


@pytest.mark.parametrize("emission", ["poisson", "diag", "full"])
def test_a_state_the_chain_cannot_enter_does_not_set_the_scale(emission):
    """State 1 can never be entered (startprob and every transition into it are 0) and
    explains every observation thousands of nats better than state 0: the table must not
    scale rows by it (state 0's probabilities underflowed to 0: ZeroProbabilityError on
    a sequence of probability e^-1800 > 0). EM produces such states when a state's
    posterior underflows."""
    m = HMM(2, emission="poisson" if emission == "poisson" else "gaussian",
            covariance_type="full" if emission == "full" else "diag", init_params="")
    m.startprob_ = np.array([1.0, 0.0])
    m.transmat_ = np.array([[1.0, 0.0], [0.5, 0.5]])
    if emission == "poisson":
        X = np.full((4, 1), 3000.0)
        m.lambdas_ = np.array([[1000.0], [3000.0]])
        log_e0 = stats.poisson(1000.0).logpmf(X[:, 0])
    else:
        X = np.full((4, 1), 30.0)
        m.means_ = np.array([[0.0], [30.0]])
        m.covars_ = np.ones((2, 1)) if emission == "diag" else np.ones((2, 1, 1))
        log_e0 = stats.norm(0.0, 1.0).logpdf(X[:, 0])
    m.n_features_ = 1
    assert log_e0.sum() < -1500
    np.testing.assert_allclose(m.score(X), log_e0.sum(), rtol=1e-12)
    logprob, path = m.decode(X)
    np.testing.assert_allclose(logprob, log_e0.sum(), rtol=1e-12)
    np.testing.assert_array_equal(path, 0)
    np.testing.assert_array_equal(m.predict_proba(X)[:, 0], 1.0)


def test_online_em_unreachable_state_does_not_set_the_scale():
    """Online EM: state 1 cannot be entered and beats state 0 by ~1800 nats on every
    count: each observation's predictive probability is state 0's (was a
    ZeroProbabilityError)."""
    X = np.full((5, 1), 3000.0)
    m = HMM(2, emission="poisson", learn="online-em", init_params="")
    m.startprob_, m.transmat_ = np.array([1.0, 0.0]), np.array([[1.0, 0.0], [0.5, 0.5]])
    m.lambdas_ = np.array([[1000.0], [3000.0]])
    m.fit(X)  # 5 observations, all before the first M-step (warmup 20)
    np.testing.assert_allclose(m.stream_log_prob_, stats.poisson(1000.0).logpmf(X[:, 0]),
                               rtol=1e-12)


def test_left_to_right_model_started_mid_way():
    """startprob puts all mass on state 0 of a left-to-right model, and the sequence starts
    with an observation that state 1 explains ~36000 nats better: at position 0 only state 0
    is possible, so its probability e^-36147 must set the row's scale (the row max, state 1,
    left it at exactly 0: a log-likelihood of -inf). Against the log-space recursions."""
    X = np.array([[10000.0], [10000.0], [9000.0]])
    m = _with_features(HMM(2, emission="poisson", init_params=""), 1)
    m.startprob_, m.transmat_ = np.array([1.0, 0.0]), np.array([[0.5, 0.5], [0.0, 1.0]])
    m.lambdas_ = np.array([[100.0], [10000.0]])
    log_e = stats.poisson(m.lambdas_[None, :, 0]).logpmf(X)
    want = log_space_sequence(m.startprob_, m.transmat_, log_e)
    assert want["loglik"] < -30000
    np.testing.assert_allclose(m.score(X), want["loglik"], rtol=1e-12)
    np.testing.assert_allclose(m.predict_proba(X), want["gamma"], rtol=1e-9, atol=1e-300)
    logprob, path = m.decode(X)
    np.testing.assert_allclose(logprob, want["viterbi_logprob"], rtol=1e-12)
    np.testing.assert_array_equal(path, want["viterbi_path"])


def test_state_supports():
    """The states possible at each position: reachability from startprob in exactly t
    steps, eventually periodic."""
    A = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0],
                  [0.0, 0.3, 0.7, 0.0]])
    masks, s, p = inference.state_supports([1, 0, 0, 0], A, 100)
    np.testing.assert_array_equal(masks, [[1, 0, 0, 0], [1, 1, 0, 0]])
    assert (s, p) == (1, 1)
    masks, s, p = inference.state_supports([0, 0, 1, 0], A, 100)  # 2 -> 3 -> {1, 2} -> ...
    np.testing.assert_array_equal(masks, [[0, 0, 1, 0], [0, 0, 0, 1], [0, 1, 1, 0],
                                          [0, 1, 0, 1]])
    assert (s, p) == (2, 2)
    assert len(inference.state_supports([0, 0, 1, 0], A, 2)[0]) == 2


# -- item 3: scales, constant features, single observations, zeros, huge alphabets --------------
@pytest.mark.parametrize("scale", [1e-8, 1e8])
@pytest.mark.parametrize("ct", COVARIANCE_TYPES)
def test_gaussian_fit_is_scale_equivariant(batch_data, ct, scale):
    """fit(s X) with min_covar s**2 m from the scaled start is fit(X) scaled: means s mu,
    covariances s**2 Sigma, log-likelihood L - N D log s."""
    X = batch_data
    a = fit_quietly(gaussian_model(ct, "em", 0.0, n_iter=10, tol=-np.inf), X)
    b = gaussian_model(ct, "em", 0.0, n_iter=10, tol=-np.inf, min_covar=1e-3 * scale**2)
    b.means_ = b.means_ * scale
    b.covars_ = unit_covars(ct) * scale**2
    fit_quietly(b, X * scale)
    np.testing.assert_allclose(b.means_, a.means_ * scale, rtol=1e-9, atol=1e-12 * scale)
    np.testing.assert_allclose(b.covars_, a.covars_ * scale**2, rtol=1e-9,
                               atol=1e-12 * scale**2)
    np.testing.assert_allclose(b.monitor_.history,
                               np.array(a.monitor_.history) - X.size * np.log(scale),
                               rtol=1e-11)


def test_tiny_scale_with_default_floor_warns_and_floors(batch_data):
    """Data * 1e-8 with the default min_covar = 1e-3: every variance is at the floor, which
    the DegenerateStateWarning says; nothing is NaN."""
    X = batch_data * 1e-8
    m = gaussian_model("diag", "em", 0.0, n_iter=5)
    m.means_ = m.means_ * 1e-8
    with pytest.warns(DegenerateStateWarning, match="min_covar"):
        m.fit(X)
    np.testing.assert_array_equal(m._covars_, 1e-3)
    assert np.isfinite(m.score(X))


@pytest.mark.parametrize("ct", COVARIANCE_TYPES)
@pytest.mark.parametrize("offset", [0.0, 1e6])
def test_constant_feature_sits_at_the_floor(batch_data, ct, offset):
    """A feature that is constant (near 1e6 too) has its mean exactly there and its variance
    at min_covar (spherical: the mean only); for diagonal covariances the other features
    are fitted exactly as without it, and each observation gains the constant
    -0.5 log(2 pi min_covar)."""
    X = batch_data
    value = 7.3 + offset
    Z = np.column_stack([X, np.full(len(X), value)])
    m = HMM(3, emission="gaussian", covariance_type=ct, init_params="", n_iter=10,
            tol=-np.inf)
    m.startprob_, m.transmat_ = np.full(3, 1 / 3), np.full((3, 3), 0.1) + 0.7 * np.eye(3)
    m.means_ = np.column_stack([MEANS + 0.5, np.full(3, value)])
    m.covars_ = unit_covars(ct, D=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateStateWarning)  # the floor, as documented
        m.fit(Z)
    np.testing.assert_array_equal(m.means_[:, 2], value)
    if ct != "spherical":  # (one variance per state, shared with the other features)
        np.testing.assert_allclose(m.covars_[:, 2, 2], 1e-3, rtol=1e-9)
    if ct == "diag":
        ref = fit_quietly(gaussian_model("diag", "em", 0.0, n_iter=10, tol=-np.inf), X)
        np.testing.assert_allclose(m.means_[:, :2], ref.means_, rtol=1e-12)
        np.testing.assert_allclose(m._covars_[:, :2], ref._covars_, rtol=1e-12)
        gain = -0.5 * np.log(2 * np.pi * 1e-3) * len(X)
        np.testing.assert_allclose(m.monitor_.history[1:],
                                   np.array(ref.monitor_.history[1:]) + gain, rtol=1e-12)


@pytest.mark.parametrize("ct", COVARIANCE_TYPES)
def test_one_observation_per_state(ct):
    """Three observations, three states: each mean is its observation, each variance the
    floor (with the warning)."""
    X = MEANS * 10.0
    m = gaussian_model(ct, "em", 0.0, n_iter=5)
    m.means_ = X + 0.5
    with pytest.warns(DegenerateStateWarning):
        m.fit(X)
    np.testing.assert_allclose(m.means_, X, rtol=1e-12)
    np.testing.assert_allclose(np.diagonal(m.covars_, axis1=1, axis2=2), 1e-3, rtol=1e-6)
    assert np.isfinite(m.score(X))


def test_collinear_features_at_a_huge_scale_raise_a_clear_error(batch_data):
    """Full covariances of data whose features are collinear, at 1e8: the covariance cannot
    be positive definite to working precision (eigenvalues 1e-3 and 1e17); a NumericalError
    names the data and the fixes (was an InvalidInputError blaming covars_, which the user
    never set, or a LinAlgError)."""
    X = batch_data[:, 0]
    Z = np.column_stack([X, 2 * X, batch_data[:, 1]]) * 1e8
    for learn in ("em", "vb"):
        with pytest.raises(NumericalError, match="collinear"):
            HMM(3, emission="gaussian", covariance_type="full", learn=learn,
                random_state=0).fit(Z)


def test_poisson_feature_of_zeros():
    """A feature that is 0 everywhere gets rates 0 and changes nothing else: the other
    rates and the log-likelihood are those of the fit without it."""
    X = poisson_data(10.0, n=200)
    Z = np.column_stack([X, np.zeros(len(X))])
    start = (np.full(3, 1 / 3), np.full((3, 3), 0.1) + 0.7 * np.eye(3), 10.0 * RATES * 1.1)
    a = HMM(3, emission="poisson", init_params="", n_iter=20, tol=-np.inf)
    b = HMM(3, emission="poisson", init_params="", n_iter=20, tol=-np.inf)
    a.startprob_, a.transmat_, a.lambdas_ = start
    b.startprob_, b.transmat_ = start[:2]
    b.lambdas_ = np.column_stack([start[2], np.ones(3)])
    fit_quietly(a, X)
    fit_quietly(b, Z)
    np.testing.assert_array_equal(b.lambdas_[:, 2], 0.0)
    np.testing.assert_allclose(b.lambdas_[:, :2], a.lambdas_, rtol=1e-10)
    np.testing.assert_allclose(b.monitor_.history[1:], a.monitor_.history[1:], rtol=1e-12)


def test_categorical_huge_alphabet():
    """2**20 symbols of which 30 occur: EM on the huge alphabet (unused symbols start at
    probability 0) equals EM on the 30 symbols relabelled 0..29."""
    rng = np.random.default_rng(7)
    W, used = 2**20, 30
    codes = np.sort(rng.choice(W, size=used, replace=False))
    compact = rng.integers(0, used, 3000)
    B = rng.dirichlet(np.ones(used), size=3)
    start = (np.full(3, 1 / 3), np.full((3, 3), 0.1) + 0.7 * np.eye(3))
    small = HMM(3, emission="categorical", n_features=used, init_params="", n_iter=10,
                tol=-np.inf)
    big = HMM(3, emission="categorical", n_features=W, init_params="", n_iter=10,
              tol=-np.inf)
    for m in (small, big):
        m.startprob_, m.transmat_ = start
    small.emissionprob_ = B
    wide = np.zeros((3, W))
    wide[:, codes] = B
    big.emissionprob_ = wide
    fit_quietly(small, compact[:, None])
    fit_quietly(big, codes[compact][:, None])
    np.testing.assert_allclose(big.emissionprob_[:, codes], small.emissionprob_, rtol=1e-12)
    np.testing.assert_allclose(big.monitor_.history, small.monitor_.history, rtol=1e-12)

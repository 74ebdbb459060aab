"""Online EM (Cappé 2011): the lazy categorical kernel and the dense-family kernel against
a direct, non-lazy NumPy transcription of the recursions; convergence to a teacher;
bit-identical resumption; no underflow over 10**6 steps."""

from __future__ import annotations

import io
import itertools
import json

import numpy as np
import pytest

from hiddenstate.errors import InvalidInputError, ZeroProbabilityError
from hiddenstate.families import (
    CategoricalEmissions,
    GaussianEmissions,
    PoissonEmissions,
    estimate_rows,
)
from hiddenstate.kernels.online_em import dirichlet_map
from hiddenstate.learn.online.online_em import PRIOR_MASS, OnlineEM


# -- the direct transcription ---------------------------------------------------------------------
def direct_online_em(theta, X, lengths, *, emission, step_scale=1.0, step_exponent=0.6,
                     warmup=20, learn_startprob=False, average_start=None, alpha_t=None,
                     alpha_s=None, alpha_e=None, family=None, source_b=None,
                     source_ll=None):
    """Cappé's recursions written out with full auxiliaries: ``rho_g`` is (K, W, K) for
    categorical emissions (statistic = one-hot of the symbol) or (K, P, K) for a dense family
    (statistic vector s(x)); the M-step runs after every observation t >= max(warmup, 1),
    with :func:`estimate_rows` for every categorical block and ``family.mstep`` otherwise.
    ``average_start``: Polyak-Ruppert averages of the iterates from there on. ``source_b``
    ``(N, K_s)``: the emission probabilities of the first K_s states, given (PROPS);
    ``source_ll`` the same as log-densities for a dense family (whose states follow). A
    missing observation (symbol -1, a row of NaN) has emission probability 1 in the
    learned states and no statistic (``source_b``/``source_ll`` must say 1/0 there too)."""
    pi = np.array(theta["startprob"], dtype=float)
    A = np.array(theta["transmat"], dtype=float)
    K = len(pi)
    em = {k: np.array(v, dtype=float) for k, v in theta["emission"].items()}
    if emission == "categorical":
        W = em["emissionprob"].shape[1]
        X = np.asarray(X).reshape(-1)
        stat = np.eye(W)[np.maximum(X, 0)] * (X >= 0)[:, None]
        P = W
    else:
        X = np.asarray(X, dtype=float)
        D = X.shape[1]
        if isinstance(family, PoissonEmissions):
            stat = np.hstack([np.ones((len(X), 1)), X])
        elif family.covariance_type in ("diag", "spherical"):
            stat = np.hstack([np.ones((len(X), 1)), X, X * X])
        else:
            stat = np.hstack([np.ones((len(X), 1)), X, np.einsum("ni,nj->nij", X, X).reshape(
                len(X), D * D)])
        P = stat.shape[1]
        stat[np.isnan(X).all(axis=1)] = 0.0
    starts = np.zeros(len(stat), dtype=bool)
    starts[np.concatenate(([0], np.cumsum(lengths)[:-1]))] = True
    phi = pi.copy()
    log_pred = []
    rho_q = np.zeros((K, K, K))
    rho_g = np.zeros((K, P, K))
    rho_p = np.zeros((K, K))
    first_m = max(warmup, 1)
    sums, n_avg = None, 0
    for n in range(len(stat)):
        t = n + 1
        if emission == "categorical":
            b = em["emissionprob"][:, X[n]].copy() if X[n] >= 0 else np.ones(K)
            if source_b is not None:
                b[:source_b.shape[1]] = source_b[n]
        else:
            ll = family.log_likelihood(em, X[n:n + 1])[0]
            if source_ll is not None:
                ll = np.concatenate([source_ll[n], ll])
            b = np.exp(ll - ll.max())
            top = ll.max()
        if starts[n]:
            pred = pi.copy()
            R = np.repeat(phi[:, None], K, axis=1)
        else:
            pred = phi @ A
            R = phi[:, None] * A / pred[None, :]
        phin = pred * b
        log_pred.append(np.log(phin.sum()) + (top if emission != "categorical" else 0.0))
        phin /= phin.sum()
        gam = step_scale * float(t) ** (-step_exponent)
        rho_q = (1 - gam) * np.einsum("ijm,mk->ijk", rho_q, R)
        if not starts[n]:
            for j in range(K):
                rho_q[:, j, j] += gam * R[:, j]
        rho_g = (1 - gam) * np.einsum("ipm,mk->ipk", rho_g, R)
        for k in range(K):
            rho_g[k, :, k] += gam * stat[n]
        rho_p = (1 - gam) * rho_p @ R
        if starts[n]:
            rho_p += gam * np.eye(K)
        if t >= first_m:
            A = estimate_rows(rho_q @ phin, A, alpha_t)[0]
            if learn_startprob:
                pi = estimate_rows(rho_p @ phin, pi, alpha_s)[0]
            Sg = rho_g @ phin
            if emission == "categorical":
                em = {"emissionprob": estimate_rows(Sg, em["emissionprob"], alpha_e)[0]}
            else:
                D = family.n_features
                if source_ll is not None:
                    Sg = Sg[source_ll.shape[1]:]
                stats = {"post": Sg[:, 0], "obs": Sg[:, 1:1 + D]}
                if isinstance(family, PoissonEmissions):
                    pass
                else:  # raw moments: statistics about the origin
                    stats["shift"] = np.zeros((len(Sg), D))
                    if family.covariance_type in ("diag", "spherical"):
                        stats["obs**2"] = Sg[:, 1 + D:]
                    else:
                        stats["obs*obs.T"] = Sg[:, 1 + D:].reshape(len(Sg), D, D)
                em = family.mstep(em, stats, "".join(family.letters))[0]
        if average_start is not None and t >= max(average_start, first_m):
            it = [pi, A] + [em[k] for k in sorted(em)]
            sums = [s + v for s, v in zip(sums, it, strict=True)] if sums else [
                v.copy() for v in it]
            n_avg += 1
        phi = phin
    out = {"startprob": pi, "transmat": A, "emission": em, "phi": phi,
           "log_pred": np.array(log_pred)}
    if sums:
        avg = [s / n_avg for s in sums]
        out["avg"] = {"startprob": avg[0], "transmat": avg[1],
                      "emission": dict(zip(sorted(em), avg[2:], strict=True))}
    return out


# -- helpers --------------------------------------------------------------------------------------
def random_hmm(rng, K, W, zeros=False):
    theta = {"startprob": rng.dirichlet(np.ones(K)), "transmat": rng.dirichlet(np.ones(K), K),
             "emission": {"emissionprob": rng.dirichlet(np.ones(W), K)}}
    if zeros:  # structural zeros in the emission matrix (every symbol stays possible)
        B = theta["emission"]["emissionprob"]
        B[0, : W // 2] = 0.0
        B /= B.sum(axis=1, keepdims=True)
    return theta


def sample_categorical(rng, theta, lengths):
    pi, A, B = theta["startprob"], theta["transmat"], theta["emission"]["emissionprob"]
    K, W = B.shape
    cA, cB = np.cumsum(A, axis=1), np.cumsum(B, axis=1)
    out = []
    for T in lengths:
        z = rng.choice(K, p=pi)
        for _ in range(T):
            out.append(min(int(np.searchsorted(cB[z], rng.random(), side="right")), W - 1))
            z = min(int(np.searchsorted(cA[z], rng.random(), side="right")), K - 1)
    return np.array(out, dtype=np.int64)


def default_alphas(K, W):
    return 1 + PRIOR_MASS / K, 1 + PRIOR_MASS / K, 1 + PRIOR_MASS / W


def roundtrip(state):
    """Save as JSON + npz and load back (what a checkpoint does)."""
    arrays = {k: v for k, v in state.items() if isinstance(v, np.ndarray)}
    scalars = {k: v for k, v in state.items() if not isinstance(v, np.ndarray)}
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    buf.seek(0)
    loaded = dict(np.load(buf))
    loaded.update(json.loads(json.dumps(scalars)))
    return loaded


def assert_states_equal(a, b):
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], np.ndarray):
            assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k
        else:
            assert a[k] == b[k], k


def best_permutation(B_true, B_est):
    K = len(B_true)
    return min(itertools.permutations(range(K)),
               key=lambda p: np.abs(B_true - B_est[list(p)]).sum())


# -- the Dirichlet rule --------------------------------------------------------------------------
def test_dirichlet_map_matches_estimate_rows():
    rng = np.random.default_rng(0)
    for K in (2, 3, 5):
        counts = rng.random((K, K)) * (rng.random((K, K)) < 0.7)
        current = rng.dirichlet(np.ones(K), K)
        current[0, 1] = 0.0
        current[0] /= current[0].sum()
        for alpha in (1.0, 1.5, 0.7, rng.uniform(0.5, 2, (K, K))):
            want = estimate_rows(counts, current, alpha)[0]
            got = current.copy()
            dirichlet_map(counts, np.broadcast_to(np.asarray(alpha) - 1.0, (K, K)).copy(), got)
            np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)
    dead = np.zeros((2, 2))
    cur = np.array([[0.3, 0.7], [0.5, 0.5]])
    dirichlet_map(dead, np.zeros((2, 2)), cur)  # no mass: rows kept
    assert np.array_equal(cur, [[0.3, 0.7], [0.5, 0.5]])


# -- lazy categorical kernel == direct transcription ---------------------------------------------
CASES = [  # K, W, block, step_scale, step_exponent, warmup, averaging, learn_startprob, zeros
    (2, 7, 2, 1.0, 0.6, 20, False, False, False),
    (3, 40, 16, 1.0, 0.6, 5, True, True, False),
    (3, 200, 64, 0.8, 0.75, 0, True, False, True),
    (4, 30, 8, 1.0, 0.6, 20, True, True, True),
    (5, 13, 4, 1.0, 1.0, 3, False, True, False),
    (3, 25, 1024, 0.9, 0.0, 10, True, False, False),  # constant step: flushes on decay
]


@pytest.mark.parametrize("case", CASES)
def test_lazy_categorical_matches_direct(case):
    K, W, B, scale, expo, warmup, avg, learn_start, zeros = case
    rng = np.random.default_rng(K * 1000 + W)
    teacher = random_hmm(rng, K, W, zeros=zeros)
    lengths = rng.integers(1, 400, size=8)
    y = sample_categorical(rng, teacher, lengths)
    theta = random_hmm(rng, K, W, zeros=zeros)
    learner = OnlineEM(step_scale=scale, step_exponent=expo, warmup=warmup, averaging=avg,
                       learn_startprob=learn_start, block=B)
    fam = CategoricalEmissions(K, W)
    log_pred = np.empty(len(y))
    state = learner.update(learner.start(theta, fam), y, lengths, fam, log_pred=log_pred)
    at, as_, ae = default_alphas(K, W)
    ref = direct_online_em(theta, y, lengths, emission="categorical", step_scale=scale,
                           step_exponent=expo, warmup=warmup, learn_startprob=learn_start,
                           average_start=warmup if avg else None, alpha_t=at, alpha_s=as_,
                           alpha_e=ae)
    np.testing.assert_allclose(log_pred, ref["log_pred"], rtol=1e-9)
    if avg:
        got = learner.params(state, fam)
        want = ref["avg"]
        np.testing.assert_allclose(got["transmat"], want["transmat"], rtol=0, atol=1e-9)
        np.testing.assert_allclose(got["emission"]["emissionprob"],
                                   want["emission"]["emissionprob"], rtol=1e-9, atol=1e-12)
        if learn_start:
            np.testing.assert_allclose(got["startprob"], want["startprob"], atol=1e-9)
        learner.averaging = False  # the current iterate as well
    got = learner.params(state, fam)
    np.testing.assert_allclose(state["phi"], ref["phi"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(got["transmat"], ref["transmat"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(got["startprob"], ref["startprob"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(got["emission"]["emissionprob"],
                               ref["emission"]["emissionprob"], rtol=1e-9, atol=1e-12)
    if zeros:  # structural zeros stay zero
        assert np.all(got["emission"]["emissionprob"][0, : W // 2] == 0.0)
    assert state["t"] == len(y)
    if expo == 0:  # the decay factor forced flushes long before the window was full
        assert state["window"] <= 200 < B


def test_lazy_categorical_between_calls_and_before_warmup():
    """Parameters read at many points of the stream (inside windows, before the first
    M-step) agree with the direct transcription of the same prefix."""
    K, W = 3, 11
    rng = np.random.default_rng(5)
    teacher = random_hmm(rng, K, W)
    y = sample_categorical(rng, teacher, [600])
    theta = random_hmm(rng, K, W)
    learner = OnlineEM(warmup=15, block=8)
    fam = CategoricalEmissions(K, W)
    state = learner.start(theta, fam)
    at, as_, ae = default_alphas(K, W)
    done = 0
    for cut in (7, 15, 16, 50, 123, 600):
        state = learner.update(state, y[done:cut], None, fam, continues=done > 0)
        done = cut
        ref = direct_online_em(theta, y[:cut], [cut], emission="categorical", warmup=15,
                               alpha_t=at, alpha_s=as_, alpha_e=ae)
        got = learner.params(state, fam)
        np.testing.assert_allclose(got["emission"]["emissionprob"],
                                   ref["emission"]["emissionprob"], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(got["transmat"], ref["transmat"], atol=1e-9)


# -- dense families == direct transcription ------------------------------------------------------
def _dense_case(kind, rng):
    K, D, N = 3, 2, 700
    z = rng.integers(0, K, N)
    if kind == "poisson":
        fam = PoissonEmissions(K, D)
        rates = np.array([[1.0, 8.0], [5.0, 2.0], [12.0, 12.0]])
        X = rng.poisson(rates[z]).astype(float)
        emis = {"lambdas": rates * rng.uniform(0.6, 1.4, rates.shape)}
    else:
        fam = GaussianEmissions(K, D, covariance_type=kind, means_weight=0.01,
                                covars_prior=0.01, covars_weight=2.0)
        means = np.array([[0.0, 0.0], [3.0, 1.0], [-2.0, 4.0]])
        X = means[z] + rng.standard_normal((N, D))
        init_means = means + 0.5 * rng.standard_normal(means.shape)
        covars = {"diag": np.ones((K, D)), "spherical": np.ones(K),
                  "full": np.tile(np.eye(D), (K, 1, 1)), "tied": np.eye(D)}[kind]
        emis = {"means": init_means, "covars": covars}
    theta = {"startprob": np.full(K, 1 / K), "transmat": rng.dirichlet(np.ones(K) * 3, K),
             "emission": emis}
    return fam, theta, X


@pytest.mark.parametrize("kind", ["poisson", "diag", "spherical", "full", "tied"])
def test_dense_matches_direct(kind):
    rng = np.random.default_rng(len(kind))
    fam, theta, X = _dense_case(kind, rng)
    K = fam.n_states
    lengths = [250, 1, 449]
    learner = OnlineEM(warmup=10, averaging=True, learn_startprob=True)
    state = learner.start(theta, fam)
    log_pred = np.empty(len(X))
    state = learner.update(state, X[:300], [250, 1, 49], fam, log_pred=log_pred[:300])
    state = learner.update(state, X[300:], [400], fam, continues=True,
                           log_pred=log_pred[300:])
    at = as_ = 1 + PRIOR_MASS / K
    ref = direct_online_em(theta, X, lengths, emission="dense", family=fam, warmup=10,
                           learn_startprob=True, average_start=10, alpha_t=at, alpha_s=as_)
    np.testing.assert_allclose(log_pred, ref["log_pred"], rtol=1e-9)
    for averaged in (True, False):
        learner.averaging = averaged
        got = learner.params(state, fam)
        want = ref["avg"] if averaged else ref
        for key in ("startprob", "transmat"):
            np.testing.assert_allclose(got[key], want[key], rtol=0, atol=1e-9)
        for key, value in want["emission"].items():
            np.testing.assert_allclose(got["emission"][key], value, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(state["phi"], ref["phi"], atol=1e-9)


# -- convergence to a teacher -------------------------------------------------------------------
def test_converges_to_a_well_separated_teacher():
    K, W = 3, 6
    B_true = np.full((K, W), 0.04)
    for k in range(K):
        B_true[k, 2 * k: 2 * k + 2] = 0.42
    A_true = np.full((K, K), 0.05) + np.eye(K) * 0.85
    teacher = {"startprob": np.full(K, 1 / K), "transmat": A_true,
               "emission": {"emissionprob": B_true}}
    rng = np.random.default_rng(11)
    lengths = np.full(200, 1000)
    y = sample_categorical(rng, teacher, lengths)
    # random emissions, mildly sticky transitions (11 of 12 seeds converge from this kind
    # of start; from near-uniform emissions online and batch EM alike can stall)
    init = {"startprob": np.full(K, 1 / K), "transmat": np.full((K, K), 0.2) + 0.4 * np.eye(K),
            "emission": {"emissionprob": np.random.default_rng(0).dirichlet(np.ones(W), K)}}
    fam = CategoricalEmissions(K, W)
    # the iterate's noise is that of its effective window ~ 1/gamma_t = t**0.6 ~ 1500
    # observations (about 0.02 here); the Polyak-Ruppert average is much closer
    for averaging, tol in ((False, 0.04), (True, 0.01)):
        learner = OnlineEM(averaging=averaging, average_start=50_000)
        state = learner.update(learner.start(init, fam), y, lengths, fam)
        got = learner.params(state, fam)
        perm = list(best_permutation(B_true, got["emission"]["emissionprob"]))
        B_err = np.abs(got["emission"]["emissionprob"][perm] - B_true).max()
        A_err = np.abs(got["transmat"][np.ix_(perm, perm)] - A_true).max()
        assert B_err < tol, (averaging, B_err)
        assert A_err < tol, (averaging, A_err)


def test_constant_step_tracks_a_switch():
    """With a constant step the learner forgets: after the teacher's emissions are swapped
    it follows the new teacher."""
    K, W = 2, 4
    B1 = np.array([[0.45, 0.45, 0.05, 0.05], [0.05, 0.05, 0.45, 0.45]])
    B2 = np.array([[0.7, 0.1, 0.1, 0.1], [0.1, 0.1, 0.1, 0.7]])
    A = np.array([[0.95, 0.05], [0.05, 0.95]])
    rng = np.random.default_rng(3)
    t1 = {"startprob": np.full(K, 0.5), "transmat": A, "emission": {"emissionprob": B1}}
    t2 = {"startprob": np.full(K, 0.5), "transmat": A, "emission": {"emissionprob": B2}}
    y1 = sample_categorical(rng, t1, [30_000])
    y2 = sample_categorical(rng, t2, [30_000])
    fam = CategoricalEmissions(K, W)
    init = {"startprob": np.full(K, 0.5), "transmat": np.array([[0.8, 0.2], [0.2, 0.8]]),
            "emission": {"emissionprob": np.array([[0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4]])}}
    learner = OnlineEM(step_exponent=0.0, step_scale=0.002)  # memory ~ 500 observations
    state = learner.update(learner.start(init, fam), y1, None, fam)
    got1 = learner.params(state, fam)["emission"]["emissionprob"]
    state = learner.update(state, y2, None, fam, continues=True)
    got2 = learner.params(state, fam)["emission"]["emissionprob"]

    def err(got, want):
        return np.abs(got[list(best_permutation(want, got))] - want).max()

    assert err(got1, B1) < 0.08 and err(got2, B2) < 0.08  # noise of ~500 observations
    assert err(got2, B1) > 0.3  # the old teacher is forgotten


# -- resumption ---------------------------------------------------------------------------------
@pytest.mark.parametrize("averaging", [False, True])
def test_resume_is_bit_identical_categorical(averaging):
    K, W = 3, 50
    rng = np.random.default_rng(21)
    teacher = random_hmm(rng, K, W)
    lengths = np.array([700, 333, 900, 67])
    y = sample_categorical(rng, teacher, lengths)
    theta = random_hmm(rng, K, W)
    fam = CategoricalEmissions(K, W)
    learner = OnlineEM(averaging=averaging, learn_startprob=True, block=64, warmup=30)
    whole = learner.update(learner.start(theta, fam), y, lengths, fam)
    # cut mid-sequence (continues=True), before the first M-step, at a boundary, mid-window
    pieces = [(0, 25, [25], False), (25, 500, [475], True), (500, 1033, [200, 333], True),
              (1033, 1500, [467], False), (1500, 2000, [433, 67], True)]
    state = roundtrip(learner.start(theta, fam))
    for lo, hi, lens, cont in pieces:
        assert sum(lens) == hi - lo
        state = roundtrip(learner.update(state, y[lo:hi], lens, fam, continues=cont))
    assert_states_equal(state, whole)
    a, b = learner.params(state, fam), learner.params(whole, fam)
    assert np.array_equal(a["emission"]["emissionprob"], b["emission"]["emissionprob"])
    assert np.array_equal(a["transmat"], b["transmat"])


def test_resume_is_bit_identical_gaussian():
    rng = np.random.default_rng(4)
    fam, theta, X = _dense_case("diag", rng)
    learner = OnlineEM(warmup=8, averaging=True)
    whole = learner.update(learner.start(theta, fam), X, [300, 400], fam)
    state = learner.start(theta, fam)
    for lo, hi, lens, cont in [(0, 5, [5], False), (5, 300, [295], True), (300, 301, [1], False),
                               (301, 700, [399], True)]:
        state = roundtrip(learner.update(state, X[lo:hi], lens, fam, continues=cont))
    assert_states_equal(state, whole)


def test_update_leaves_its_argument_unchanged():
    K, W = 2, 5
    rng = np.random.default_rng(0)
    theta = random_hmm(rng, K, W)
    fam = CategoricalEmissions(K, W)
    learner = OnlineEM(warmup=2, block=4)
    state = learner.start(theta, fam)
    before = roundtrip(state)
    learner.update(state, np.array([0, 1, 2, 3, 4, 0, 1]), None, fam)
    assert_states_equal(state, before)


# -- long streams -------------------------------------------------------------------------------
@pytest.mark.parametrize("expo,scale", [(0.6, 1.0), (0.0, 0.5)])
def test_no_underflow_over_a_million_steps(expo, scale):
    K, W = 4, 300
    rng = np.random.default_rng(8)
    teacher = random_hmm(rng, K, W)
    # Zipf-like symbols: some symbols are very rare, others are never seen
    probs = 1.0 / np.arange(1, W + 1) ** 1.3
    y = rng.choice(W - 20, size=1_000_000, p=probs[:W - 20] / probs[:W - 20].sum())
    fam = CategoricalEmissions(K, W)
    learner = OnlineEM(step_exponent=expo, step_scale=scale, averaging=True,
                       learn_startprob=True)
    lengths = np.full(100, 10_000)
    state = learner.update(learner.start(teacher, fam), y, lengths, fam)
    for key, value in state.items():
        if isinstance(value, np.ndarray):
            assert np.all(np.isfinite(value)), key
    assert 0.0 < state["decay"] <= 1.0
    assert abs(state["phi"].sum() - 1) < 1e-12
    for averaged in (True, False):
        learner.averaging = averaged
        p = learner.params(state, fam)
        B = p["emission"]["emissionprob"]
        assert np.all(np.isfinite(B)) and np.all(B > 0)  # the prior keeps unseen symbols
        np.testing.assert_allclose(B.sum(axis=1), 1.0, atol=1e-12)
        np.testing.assert_allclose(p["transmat"].sum(axis=1), 1.0, atol=1e-12)
        assert np.all(p["transmat"] > 0)


# -- errors --------------------------------------------------------------------------------------
def test_errors_are_clear():
    K, W = 2, 3
    rng = np.random.default_rng(0)
    theta = random_hmm(rng, K, W)
    fam = CategoricalEmissions(K, W)
    with pytest.raises(InvalidInputError, match="step_scale"):
        OnlineEM(step_exponent=0.0).start(theta, fam)
    with pytest.raises(InvalidInputError, match="step_exponent"):
        OnlineEM(step_exponent=1.5).start(theta, fam)
    with pytest.raises(InvalidInputError, match="emissionprob_prior"):
        OnlineEM(emissionprob_prior=1.0).start(theta, fam)
    with pytest.raises(InvalidInputError, match="block"):
        OnlineEM(block=12).start(theta, fam)
    learner = OnlineEM()
    state = learner.start(theta, fam)
    with pytest.raises(InvalidInputError, match="continues"):
        learner.update(state, np.array([0, 1]), None, fam, continues=True)
    with pytest.raises(InvalidInputError, match="symbols"):
        learner.update(state, np.array([0, 3]), None, fam)
    theta["emission"]["emissionprob"] = np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]])
    state = learner.start(theta, fam)
    with pytest.raises(ZeroProbabilityError, match="observation 2 of this call"):
        learner.update(state, np.array([0, 1, 2]), None, fam)

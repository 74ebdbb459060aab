"""Partly fixed parameters (``HMM(fixed=...)``; hiddenstate.families.fixed,
hiddenstate.models.hmm.fixed): the constrained M-steps against numerical constrained
maximisation, a fitted model against brute-force maximisation of the exact likelihood,
every mode keeping the fixed entries, save/load, and the refusals."""

import numpy as np
import pytest
from brute_force import path_log_joint
from scipy.optimize import minimize
from scipy.special import logsumexp, softmax

import hiddenstate as hs
from hiddenstate.errors import InvalidInputError
from hiddenstate.families.fixed import mstep_rows

nan = np.nan


@pytest.mark.parametrize("alpha", [1.0, 2.5])
def test_constrained_row_mstep_is_the_constrained_maximiser(alpha):
    """max sum_w (n_w + alpha - 1) log theta_w over the free entries, their sum 1 - m."""
    rng = np.random.default_rng(0)
    counts = rng.uniform(0, 10, (3, 4))
    fixed = np.array([[nan, 0.3, nan, nan], [0.1, nan, 0.2, nan], [nan, nan, nan, 0.05]])
    rows, kept = mstep_rows(np.full((3, 4), 0.25), counts, np.full((3, 4), alpha), fixed)
    assert kept == []
    for r in range(3):
        free = np.isnan(fixed[r])
        rest = 1 - np.nansum(fixed[r])
        a = counts[r, free] + alpha - 1

        def neg(z, a=a, rest=rest):
            return -np.sum(a * np.log(rest * softmax(z)))

        best = minimize(neg, np.zeros(free.sum()), method="BFGS", options={"gtol": 1e-12})
        np.testing.assert_allclose(rows[r, free], rest * softmax(best.x), atol=1e-7)
        np.testing.assert_array_equal(rows[r, ~free], fixed[r, ~free])
        assert rows[r].sum() == pytest.approx(1.0, abs=1e-14)


def _loglik(pi, A, B, X, lengths):
    bounds = np.cumsum([0] + lengths)
    total = 0.0
    for s in range(len(lengths)):
        x = X[bounds[s]:bounds[s + 1]]
        _, lp = path_log_joint(pi, A, np.log(B.T[x]))
        total += logsumexp(lp)
    return total


def test_fitted_model_is_a_constrained_maximum_of_the_exact_likelihood():
    """EM with transmat[0, 1] fixed at 0.3 converges to a point that no direction keeping
    the constraint improves (the exact likelihood by enumeration of every path)."""
    rng = np.random.default_rng(1)
    lengths = [5, 4, 5]
    X = rng.integers(0, 3, sum(lengths))
    model = hs.HMM(2, n_iter=3000, tol=-np.inf, random_state=0,
                   fixed={"transmat": [[nan, 0.3], [nan, nan]]}).fit(X, lengths)
    assert model.transmat_[0, 1] == 0.3 and model.transmat_[0, 0] == pytest.approx(0.7)
    ours = _loglik(model.startprob_, model.transmat_, model.emissionprob_, X, lengths)
    assert model.monitor_.history[-1] == pytest.approx(ours, abs=1e-9)

    def unpack(z):  # free: startprob (2), row 1 of transmat (2), emission rows (2 x 3)
        A = np.array([[0.7, 0.3], softmax(z[2:4])])
        return softmax(z[:2]), A, np.stack([softmax(z[4:7]), softmax(z[7:10])])

    def neg(z):
        return -_loglik(*unpack(z), X, lengths)

    with np.errstate(divide="ignore"):
        z0 = np.concatenate([np.log(model.startprob_), np.log(model.transmat_[1]),
                             np.log(model.emissionprob_).ravel()])
    z0 = np.maximum(z0, -40.0)
    local = minimize(neg, z0, method="BFGS")
    assert -local.fun <= ours + 1e-7            # no constrained ascent from EM's point


def test_gaussian_covariance_is_estimated_about_the_fixed_mean():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 1))
    model = hs.HMM(1, emission="gaussian", n_iter=1, tol=-np.inf, min_covar=0.0,
                   fixed={"means": [[0.5]]}).fit(X)
    assert model.means_[0, 0] == 0.5
    assert model.covars_[0, 0, 0] == pytest.approx(np.mean((X - 0.5) ** 2), rel=1e-12)


@pytest.mark.parametrize("learn", ["em", "map", "vb", "vt", "kvt"])
def test_every_mode_keeps_the_fixed_entries(learn):
    rng = np.random.default_rng(3)
    X = rng.integers(0, 3, 300)
    fixed = {"startprob": [0.5, nan, nan],
             "transmat": [[nan, 0.3, nan], [nan, nan, nan], [0.1, 0.2, 0.7]],
             "emissionprob": [[nan, nan, 0.05], [nan, nan, nan], [nan, nan, nan]]}
    model = hs.HMM(3, n_iter=30, tol=-np.inf, learn=learn, k_best=2, random_state=0,
                   fixed=fixed).fit(X, [150, 150])
    for key, value in fixed.items():
        got = getattr(model, key + "_")
        value = np.asarray(value)
        np.testing.assert_array_equal(got[~np.isnan(value)], value[~np.isnan(value)])
        np.testing.assert_allclose(got.sum(axis=-1), 1.0, atol=1e-12)
    if learn in ("em", "map", "vb"):
        assert np.all(np.diff(model.monitor_.history) >= -1e-9)


def test_fixed_entries_of_a_structured_chain():
    """A left-right model (sparse kernels): one allowed transition fixed."""
    K = 8
    rng = np.random.default_rng(4)
    X = rng.integers(0, 4, 400)
    fixed = np.full((K, K), nan)
    fixed[2, 3] = 0.25
    model = hs.HMM(K, topology="left-right", bandwidth=1, n_iter=20, tol=-np.inf,
                   random_state=0, fixed={"transmat": fixed}).fit(X, [100] * 4)
    assert model.transmat_[2, 3] == 0.25 and model.transmat_[2, 2] == pytest.approx(0.75)
    assert np.all(np.diff(model.monitor_.history) >= -1e-9)
    fixed[2, 5] = 0.1
    with pytest.raises(InvalidInputError, match="do not allow"):
        hs.HMM(K, topology="left-right", bandwidth=1, fixed={"transmat": fixed}).fit(X)


def test_fixed_poisson_rates_and_vb():
    rng = np.random.default_rng(5)
    X = np.vstack([rng.poisson([2, 8], (100, 2)), rng.poisson([9, 1], (100, 2))]).astype(float)
    for learn in ("em", "map", "vb"):
        model = hs.HMM(2, emission="poisson", n_iter=40, tol=-np.inf, learn=learn,
                       random_state=0, fixed={"lambdas": [[nan, 5.0], [nan, nan]]}).fit(X)
        assert model.lambdas_[0, 1] == 5.0
        assert np.all(np.diff(model.monitor_.history) >= -1e-9)


def test_save_and_load_keep_the_fixed_values(tmp_path):
    X = np.random.default_rng(6).integers(0, 3, 100)
    fixed = {"transmat": np.array([[nan, 0.3], [nan, nan]])}
    model = hs.HMM(2, n_iter=5, tol=-np.inf, random_state=0, fixed=fixed).fit(X)
    model.save(tmp_path / "m")
    loaded = hs.load(tmp_path / "m")
    np.testing.assert_array_equal(np.asarray(loaded.fixed["transmat"]), fixed["transmat"])
    again = loaded.fit(X)
    np.testing.assert_array_equal(again.transmat_, model.transmat_)


@pytest.mark.parametrize("kwargs, match", [
    ({"fixed": {"transmat": [[nan, 1.3], [nan, nan]]}}, r"\[0, 1\]"),
    ({"fixed": {"transmat": [[0.5, 0.6], [nan, nan]]}}, "at most 1"),
    ({"fixed": {"transmat": [[0.5, 0.4], [nan, nan]]}}, "fixed whole"),
    ({"fixed": {"transmat": [nan, nan]}}, "has shape"),
    ({"fixed": {"weights": [[1.0]]}}, "cannot be fixed"),
    ({"fixed": [1, 2]}, "expected a dict"),
    ({"fixed": {"transmat": [[nan, 0.3], [nan, nan]]}, "learn": "online-em"}, "streaming"),
    ({"fixed": {"means": [[0.0], [nan]]}, "emission": "gaussian", "learn": "vb"},
     "does not fix Gaussian"),
    ({"fixed": {"means": [[0.0, nan], [nan, nan]]}, "emission": "gaussian",
      "covariance_type": "full"}, "whole mean"),
])
def test_invalid_fixed_values_are_refused(kwargs, match):
    X = np.random.default_rng(7).normal(size=(50, 2 if "covariance_type" in kwargs else 1))
    if kwargs.get("emission") != "gaussian":
        X = np.random.default_rng(7).integers(0, 3, 50)
    with pytest.raises(InvalidInputError, match=match):
        hs.HMM(2, n_iter=2, **kwargs).fit(X)

"""RegressionHMM.forecast and sample_forecast against enumeration of the future state paths:
given a path, an AR model's future observations are jointly Gaussian (a linear recursion of
the lag vector's mean and covariance), so the predictive distribution of each step is a
mixture over the K**h paths whose mean and covariance are exact."""

from __future__ import annotations

import numpy as np
import pytest
from brute_force import all_paths
from scipy.special import logsumexp

import hiddenstate as hs


def _model(K=2, D=2, M=1, n_lags=2, transitions="fixed", emission="linear", seed=0):
    rng = np.random.default_rng(seed)
    m = hs.RegressionHMM(K, emission=emission, n_lags=n_lags, transitions=transitions)
    m.startprob_ = rng.dirichlet(np.ones(K))
    m.transmat_ = 0.5 * np.eye(K) + 0.5 * rng.dirichlet(np.ones(K), size=K)
    if emission == "linear":
        m.coef_ = rng.normal(scale=0.4, size=(K, D, M + n_lags * D))
        m.intercept_ = rng.normal(scale=2.0, size=(K, D))
        A = rng.normal(size=(K, D, D))
        m.covars_ = np.einsum("kij,klj->kil", A, A) + 0.3 * np.eye(D)
    else:
        coef = rng.normal(size=(K, D, M))
        coef[:, 0] = 0
        intercept = rng.normal(size=(K, D))
        intercept[:, 0] = 0
        m.coef_, m.intercept_ = coef, intercept
    if transitions == "softmax":
        m.transition_coef_ = rng.normal(size=(K, K, M)) * (1 - np.eye(K))[..., None]
    return m


def _future_matrices(m, Uf):
    if m.transitions == "fixed":
        return [m.transmat_] * len(Uf)
    out = []
    for u in Uf:
        logits = np.log(m.transmat_) + m.transition_coef_ @ u
        out.append(np.exp(logits - logsumexp(logits, axis=1, keepdims=True)))
    return out


def _brute(m, alpha, history, Uf):
    """Per-step state marginals, and the mixture mean and covariance of each step (linear)
    or the category probabilities (logistic), by enumerating the future paths.
    ``history``: the last n_lags observations, oldest first."""
    K, h = m.n_states, len(Uf)
    A = _future_matrices(m, Uf)
    paths = all_paths(K, h)
    prob = np.zeros(len(paths))
    for z0 in range(K):
        p = np.full(len(paths), alpha[z0])
        prev = np.full(len(paths), z0)
        for j in range(h):
            p = p * A[j][prev, paths[:, j]]
            prev = paths[:, j]
        prob += p
    state = np.array([[prob[paths[:, j] == k].sum() for k in range(K)] for j in range(h)])
    if m.emission == "logistic":
        proba = []
        for j in range(h):
            logits = m.coef_ @ Uf[j] + m.intercept_
            pk = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
            proba.append(state[j] @ pk)
        return state, np.array(proba)
    D, p, M = m.n_features_, m.n_lags, m.n_inputs_
    means = np.zeros((h, D))
    second = np.zeros((h, D, D))
    for path, w in zip(paths, prob, strict=True):
        mu_s = history[::-1].reshape(-1).astype(float)          # lag 1 first
        cov_s = np.zeros((p * D, p * D))
        for j in range(h):
            k = path[j]
            W = m.coef_[k]
            B = W[:, M:]
            c = W[:, :M] @ Uf[j] + m.intercept_[k]
            my = B @ mu_s + c
            cy = B @ cov_s @ B.T + m.covars_[k]
            means[j] += w * my
            second[j] += w * (cy + np.outer(my, my))
            if not p:
                continue
            cross = B @ cov_s                                    # cov(y, s)
            mu_s = np.concatenate([my, mu_s[:-D]])
            top = np.hstack([cy, cross[:, :-D]])
            bottom = np.hstack([cross[:, :-D].T, cov_s[:-D, :-D]])
            cov_s = np.vstack([top, bottom])
    cov = second - np.einsum("hd,he->hde", means, means)
    return state, means, cov


@pytest.mark.parametrize(("n_lags", "transitions", "M"), [(0, "fixed", 2), (2, "fixed", 1),
                                                          (1, "softmax", 1), (3, "fixed", 0)])
def test_gaussian_forecast_equals_the_mixture_over_future_paths(n_lags, transitions, M):
    m = _model(K=2, D=2, M=M, n_lags=n_lags, transitions=transitions)
    rng = np.random.default_rng(1)
    n = 12
    U = rng.normal(size=(n, M))
    X, _ = m.sample(n, random_state=2, inputs=U if M else None,
                    history=rng.normal(size=(n_lags, 2)) if n_lags else None)
    h = 4
    Uf = rng.normal(size=(h, M))
    f = m.forecast(X, steps=h, inputs=U if M else None, future_inputs=Uf if M else None)
    alpha = m.filter_proba(X, inputs=U if M else None)[-1]
    state, mean, cov = _brute(m, alpha, X[n - n_lags:], Uf)
    np.testing.assert_allclose(f.state_proba[0], state, atol=1e-12)
    np.testing.assert_allclose(f.mean[0], mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(f.covariance[0], cov, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(f.std()[0], np.sqrt(np.diagonal(cov, axis1=1, axis2=2)))


def test_logistic_forecast_gives_the_category_probabilities_of_the_future_states():
    m = _model(K=3, D=3, M=2, n_lags=0, transitions="softmax", emission="logistic")
    rng = np.random.default_rng(3)
    U = rng.normal(size=(10, 2))
    X, _ = m.sample(10, random_state=4, inputs=U)
    Uf = rng.normal(size=(3, 2))
    f = m.forecast(X, steps=3, inputs=U, future_inputs=Uf)
    state, proba = _brute(m, m.filter_proba(X, inputs=U)[-1], None, Uf)
    np.testing.assert_allclose(f.state_proba[0], state, atol=1e-12)
    np.testing.assert_allclose(f.proba[0], proba, atol=1e-12)
    np.testing.assert_allclose(f.proba.sum(axis=2), 1.0, atol=1e-12)


def test_forecasts_of_several_sequences_start_from_each_ones_end():
    m = _model(K=2, D=1, M=0, n_lags=1)
    X, _ = m.sample(30, random_state=0)
    both = m.forecast(X, [12, 18], steps=2)
    first = m.forecast(X[:12], steps=2)
    second = m.forecast(X[12:], steps=2)
    np.testing.assert_allclose(both.mean, np.concatenate([first.mean, second.mean]),
                               rtol=1e-12)
    np.testing.assert_allclose(both.covariance,
                               np.concatenate([first.covariance, second.covariance]),
                               rtol=1e-12)


def test_scenarios_have_the_forecasts_moments():
    m = _model(K=2, D=1, M=1, n_lags=2, transitions="softmax", seed=5)
    rng = np.random.default_rng(6)
    U = rng.normal(size=(20, 1))
    X, _ = m.sample(20, random_state=7, inputs=U)
    Uf = rng.normal(size=(3, 1))
    n = 20000
    f = m.forecast(X, steps=3, inputs=U, future_inputs=Uf)
    Y, Z = m.sample_forecast(X, steps=3, n_scenarios=n, random_state=8, inputs=U,
                             future_inputs=Uf)
    assert Y.shape == (1, n, 3, 1) and Z.shape == (1, n, 3)
    sd = f.std()[0, :, 0]
    assert np.all(np.abs(Y[0, :, :, 0].mean(axis=0) - f.mean[0, :, 0]) < 5 * sd / np.sqrt(n))
    np.testing.assert_allclose(Y[0, :, :, 0].var(axis=0), sd**2, rtol=0.05)
    freq = np.stack([(Z[0] == k).mean(axis=0) for k in range(2)], axis=1)
    assert np.all(np.abs(freq - f.state_proba[0]) < 5 * np.sqrt(0.25 / n))


def test_a_forecast_needs_the_future_inputs_of_a_model_with_inputs():
    m = _model(K=2, D=1, M=1, n_lags=0)
    U = np.zeros((5, 1))
    X, _ = m.sample(5, random_state=0, inputs=U)
    with pytest.raises(hs.InvalidInputError, match="inputs"):
        m.forecast(X, steps=2, inputs=U)
    with pytest.raises(hs.InvalidInputError, match="2 rows"):
        m.forecast(X, steps=3, inputs=U, future_inputs=np.zeros((2, 1)))

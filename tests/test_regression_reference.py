r"""RegressionHMM against statsmodels' MarkovRegression and dynamax 1.0.3 on the same data and
starting parameters (reference libraries: skipped where not installed; they live in the
benchmark environment, see benchmarks/README.md).

Where the references maximise the same likelihood the converged log-likelihoods agree to
1e-6 relative:

- statsmodels ``MarkovRegression`` with ``switching_variance=True`` (switching linear
  regression), the AR(2)-HMM as ``MarkovRegression`` on the lagged values (both condition
  on the first two observations), and the time-varying transition probabilities
  (``exog_tvtp``, a logistic regression of the next regime on the inputs: our softmax
  transitions, reparametrised). statsmodels does not learn the initial regime
  distribution: ``initialize_known(pi)`` fixes it, and its filter (which lays the regimes
  out as pairs) applies the transition matrix twice before the first observation, so
  :math:`p(S_0) = \pi A^2` (checked below by the likelihood at the same parameters). Our
  equivalent is a fixed ``startprob_`` (``params`` without ``s``) and two missing rows
  (NaN, which have no emission term) before the data;
- dynamax ``LinearRegressionHMM`` (exact ML M-step; the transition and initial components
  given ML updates, as ``benchmarks/_dynamax_ref.py`` does), also for the AR(2)-HMM with our
  lag vectors as its inputs.

Where they do not: statsmodels' ``MarkovAutoregression`` is Hamilton's switching-*mean* AR,
:math:`y_t - \\mu_{s_t} = \\sum_i \\phi_{i,s_t}(y_{t-i} - \\mu_{s_{t-i}})`, whose mean
depends on the last ``p + 1`` regimes: another model (its likelihood is not ours). dynamax's
``LinearAutoregressiveHMM`` pads the first lags with zeros instead of conditioning on them.
dynamax's ``LogisticRegressionHMM`` takes 50 Adam steps per M-step (not an exact M-step):
there the likelihood and posteriors at the same parameters are compared, and our exact
M-step must reach a likelihood at least as high from the same start.
"""

from __future__ import annotations

import numpy as np
import pytest

import hiddenstate as hs

pytestmark = pytest.mark.slow


def _regimes(T, rng, stay=0.95):
    z = np.zeros(T, dtype=int)
    for t in range(1, T):
        z[t] = z[t - 1] if rng.random() < stay else 1 - z[t - 1]
    return z


def _ours(start, **hyper):
    """A model at the starting parameters ``start`` (startprob fixed: letters ``trc``)."""
    hyper.setdefault("params", "trc")
    m = hs.RegressionHMM(2, init_params="", tol=1e-12, n_iter=5000, **hyper)
    for name, value in start.items():
        setattr(m, name, value)
    return m


# -- statsmodels --------------------------------------------------------------------------
def _presample(y, u):
    """Two missing rows before the data: statsmodels' known initial distribution is that
    of the regime two steps before the first observation (module docstring); their inputs
    are the first row's (statsmodels moves the regimes of those steps with the first
    transition matrix)."""
    Y = np.r_[np.full((2, 1), np.nan), y.reshape(len(y), -1)]
    if u is None:
        return Y, None
    u = u.reshape(len(u), -1)
    return Y, np.r_[u[:1], u[:1], u]


def test_switching_regression_converges_to_statsmodels_markov_regression():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(0)
    T = 600
    u = rng.normal(size=T)
    z = _regimes(T, rng)
    y = np.where(z == 0, 1.0 + 2 * u, -1.0 - u) + rng.normal(scale=np.where(z == 0, 0.5, 1.0))
    pi = np.array([0.5, 0.5])
    start = {"startprob_": pi, "transmat_": [[0.9, 0.1], [0.2, 0.8]],
             "coef_": [[[1.0]], [[-0.5]]], "intercept_": [[0.5], [-0.5]],
             "covars_": [[[1.0]], [[2.0]]]}
    Y, V = _presample(y, u)
    mod = sm.tsa.MarkovRegression(y, k_regimes=2, exog=u, switching_variance=True)
    mod.initialize_known(pi)
    # p[0->0], p[1->0], const[0], const[1], x1[0], x1[1], sigma2[0], sigma2[1]
    sp = np.array([0.9, 0.2, 0.5, -0.5, 1.0, -0.5, 1.0, 2.0])
    np.testing.assert_allclose(_ours(start).score(Y, inputs=V), mod.loglike(sp), rtol=1e-12)
    ours = _ours(start).fit(Y, inputs=V)
    res = mod.fit(start_params=sp, em_iter=50, search_reps=0, maxiter=500, disp=False)
    assert ours.monitor_.converged
    np.testing.assert_allclose(ours.score(Y, inputs=V), res.llf, rtol=1e-6)
    np.testing.assert_allclose(ours.transmat_[:, 0], res.params[:2], atol=1e-3)
    np.testing.assert_allclose(ours.coef_.ravel(), res.params[4:6], atol=1e-3)


def test_ar2_hmm_converges_to_markov_regression_on_the_lags():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(1)
    T = 800
    z = _regimes(T, rng, 0.97)
    y = np.zeros(T)
    for t in range(2, T):
        if z[t] == 0:
            y[t] = 0.5 + 0.6 * y[t - 1] - 0.2 * y[t - 2] + 0.5 * rng.normal()
        else:
            y[t] = -1.0 - 0.4 * y[t - 1] + 0.3 * y[t - 2] + rng.normal()
    pi = np.array([0.6, 0.4])
    start = {"startprob_": pi, "transmat_": [[0.9, 0.1], [0.1, 0.9]],
             "coef_": [[[0.3, 0.0]], [[-0.3, 0.0]]], "intercept_": [[0.0], [-0.5]],
             "covars_": [[[0.5]], [[1.5]]]}
    lags = np.column_stack([y[1:-1], y[:-2]])
    # the AR(2)-HMM is the switching regression of y[2:] on its lags: the same fit
    ar = _ours(start, n_lags=2, params="strc").fit(y[:, None])
    reg = _ours(start, params="strc").fit(y[2:, None], inputs=lags)
    for attr in ("startprob_", "transmat_", "coef_", "intercept_", "covars_"):
        np.testing.assert_allclose(getattr(ar, attr), getattr(reg, attr), rtol=1e-12,
                                   atol=1e-14)
    Y, V = _presample(y[2:], lags)
    mod = sm.tsa.MarkovRegression(y[2:], k_regimes=2, exog=lags, switching_variance=True)
    mod.initialize_known(pi)
    sp = np.array([0.9, 0.1, 0.0, -0.5, 0.3, -0.3, 0.0, 0.0, 0.5, 1.5])
    ours = _ours(start).fit(Y, inputs=V)
    res = mod.fit(start_params=sp, em_iter=50, search_reps=0, maxiter=500, disp=False)
    np.testing.assert_allclose(ours.score(Y, inputs=V), res.llf, rtol=1e-6)
    np.testing.assert_allclose(ours.coef_[:, 0, :].ravel(order="F"), res.params[4:8],
                               atol=2e-3)


def test_input_driven_transitions_converge_to_statsmodels_tvtp():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(2)
    T = 1500
    u = rng.normal(size=T)
    z = np.zeros(T, dtype=int)
    for t in range(1, T):   # the input of step t drives the move into it
        p_stay = 1 / (1 + np.exp(-(2.0 + 1.5 * u[t] * (1 if z[t - 1] == 0 else -1))))
        z[t] = z[t - 1] if rng.random() < p_stay else 1 - z[t - 1]
    y = np.where(z == 0, 1.0, -1.0) + rng.normal(scale=0.8, size=T)
    pi = np.array([0.5, 0.5])
    start = {"startprob_": pi, "transmat_": [[0.85, 0.15], [0.15, 0.85]],
             "transition_coef_": [[[0.0], [0.0]], [[0.0], [0.0]]],
             "coef_": np.zeros((2, 1, 0)), "intercept_": [[0.5], [-0.5]],
             "covars_": [[[1.0]], [[1.0]]]}
    Y, V = _presample(y, u)
    v = np.column_stack([np.ones(T), u])
    mod = sm.tsa.MarkovRegression(y, k_regimes=2, exog_tvtp=v, switching_variance=True)
    mod.initialize_known(pi)
    # p[0->0].tvtp0, p[1->0].tvtp0, p[0->0].tvtp1, p[1->0].tvtp1, const[0], const[1], s2[0, 1]
    sp = np.array([np.log(0.85 / 0.15), np.log(0.15 / 0.85), 0.0, 0.0, 0.5, -0.5, 1.0, 1.0])
    # the same likelihood at the same parameters (the input of step t drives the move into t)
    np.testing.assert_allclose(_ours(start, transitions="softmax", emission_inputs=[]).score(
        Y, inputs=V), mod.loglike(sp), rtol=1e-12)
    ours = _ours(start, transitions="softmax", emission_inputs=[]).fit(Y, inputs=V)
    res = mod.fit(start_params=sp, maxiter=2000, disp=False)
    np.testing.assert_allclose(ours.score(Y, inputs=V), res.llf, rtol=1e-6)
    # reparametrised: log-odds of regime 0 from 0 = log(A00 / A01) - w01 u; from 1 = ... + w10 u
    A, w = ours.transmat_, ours.transition_coef_[..., 0]
    np.testing.assert_allclose([np.log(A[0, 0] / A[0, 1]), np.log(A[1, 0] / A[1, 1]),
                                -w[0, 1], w[1, 0]], res.params[:4], atol=5e-3)


# -- dynamax ------------------------------------------------------------------------------
def _dynamax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return pytest.importorskip("dynamax.hidden_markov_model")


def _ml_rows(model):
    """dynamax's initial and transition components with the ML M-step (as
    benchmarks/_dynamax_ref.py: the Dirichlet(1) mode is NaN at zero counts)."""
    from dynamax.hidden_markov_model.models.initial import StandardHMMInitialState
    from dynamax.hidden_markov_model.models.transitions import StandardHMMTransitions

    class MLInitial(StandardHMMInitialState):
        def m_step(self, params, props, batch_stats, m_step_state):
            counts = batch_stats.sum(axis=0)
            return params._replace(probs=counts / counts.sum()), m_step_state

    class MLTransitions(StandardHMMTransitions):
        def m_step(self, params, props, batch_stats, m_step_state):
            counts = batch_stats.sum(axis=0)
            return params._replace(
                transition_matrix=counts / counts.sum(axis=1, keepdims=True)), m_step_state

    model.initial_component = MLInitial(model.num_states, initial_probs_concentration=1.0)
    model.transition_component = MLTransitions(model.num_states, concentration=1.0)
    return model


@pytest.mark.parametrize("n_lags", [0, 2])
def test_linear_regression_and_ar2_hmm_converge_to_dynamax(n_lags):
    dhmm = _dynamax()
    import jax.numpy as jnp

    rng = np.random.default_rng(3)
    S, T, K, D, M = 5, 300, 2, 2, 1
    truth = hs.RegressionHMM(K, n_lags=n_lags)
    truth.startprob_, truth.transmat_ = [0.5, 0.5], [[0.95, 0.05], [0.05, 0.95]]
    truth.coef_ = rng.normal(scale=0.3, size=(K, D, M + n_lags * D))
    truth.intercept_ = np.array([[-2.0, 0.0], [2.0, 1.0]])
    truth.covars_ = np.array([np.eye(D) * 0.5, np.eye(D)])
    U = rng.normal(size=(S * T, M))
    X = np.concatenate([truth.sample(T, random_state=s, inputs=U[s * T:(s + 1) * T])[0]
                        for s in range(S)])
    start = {"startprob_": np.array([0.6, 0.4]), "transmat_": np.array([[0.8, 0.2],
                                                                       [0.3, 0.7]]),
             "coef_": np.zeros((K, D, M + n_lags * D)),
             "intercept_": np.array([[-1.0, 0.0], [1.0, 0.0]]),
             "covars_": np.array([np.eye(D), np.eye(D)])}
    ours = hs.RegressionHMM(K, n_lags=n_lags, init_params="", tol=-np.inf, n_iter=300)
    for name, value in start.items():
        setattr(ours, name, value)
    ours.fit(X, [T] * S, inputs=U)
    d = ours._design(X, [T] * S, U, D, M)   # our rows: y and the design (inputs, lags)
    P = d.Z.shape[1] - D - 1
    Y = jnp.asarray(d.Z[:, :D].reshape(S, T - n_lags, D))
    inputs = jnp.asarray(d.Z[:, D:D + P].reshape(S, T - n_lags, P))
    model = _ml_rows(dhmm.LinearRegressionHMM(K, P, D))
    params, props = model.initialize(
        initial_probs=jnp.asarray(start["startprob_"]),
        transition_matrix=jnp.asarray(start["transmat_"]),
        emission_weights=jnp.asarray(start["coef_"]),
        emission_biases=jnp.asarray(start["intercept_"]),
        emission_covariances=jnp.asarray(start["covars_"]))
    fitted, _ = model.fit_em(params, props, Y, inputs=inputs, num_iters=300, verbose=False)
    theirs = sum(float(model.marginal_log_prob(fitted, Y[s], inputs[s])) for s in range(S))
    np.testing.assert_allclose(ours.score(X, [T] * S, inputs=U), theirs, rtol=1e-6)
    np.testing.assert_allclose(ours.intercept_, np.asarray(fitted.emissions.biases),
                               atol=1e-5)


def test_logistic_regression_hmm_scores_as_dynamax_and_fits_at_least_as_well():
    dhmm = _dynamax()
    import jax.numpy as jnp

    rng = np.random.default_rng(4)
    S, T, K, M = 4, 250, 2, 2
    truth = hs.RegressionHMM(K, emission="logistic")
    truth.startprob_, truth.transmat_ = [0.5, 0.5], [[0.95, 0.05], [0.05, 0.95]]
    truth.coef_ = np.array([[[0, 0], [2.0, -1.0]], [[0, 0], [-1.5, 0.5]]])
    truth.intercept_ = np.array([[0, 1.0], [0, -1.0]])
    U = rng.normal(size=(S * T, M))
    X = np.concatenate([truth.sample(T, random_state=s, inputs=U[s * T:(s + 1) * T])[0]
                        for s in range(S)])
    start = {"startprob_": np.array([0.5, 0.5]),
             "transmat_": np.array([[0.9, 0.1], [0.1, 0.9]]),
             "coef_": np.array([[[0, 0], [0.5, 0.0]], [[0, 0], [-0.5, 0.0]]]),
             "intercept_": np.array([[0, 0.5], [0, -0.5]])}
    model = _ml_rows(dhmm.LogisticRegressionHMM(K, M))
    params, props = model.initialize(
        initial_probs=jnp.asarray(start["startprob_"]),
        transition_matrix=jnp.asarray(start["transmat_"]),
        emission_weights=jnp.asarray(start["coef_"][:, 1]),
        emission_biases=jnp.asarray(start["intercept_"][:, 1]))
    Y = jnp.asarray(X[:, 0].reshape(S, T).astype(float))
    inputs = jnp.asarray(U.reshape(S, T, M))
    at = hs.RegressionHMM(K, emission="logistic", init_params="")
    for name, value in start.items():
        setattr(at, name, value)
    per_seq = at.score_samples(X, [T] * S, inputs=U)
    for s in range(S):
        np.testing.assert_allclose(per_seq[s], float(model.marginal_log_prob(
            params, Y[s], inputs[s])), rtol=1e-10)
    post = model.smoother(params, Y[0], inputs[0]).smoothed_probs
    np.testing.assert_allclose(at.predict_proba(X[:T], inputs=U[:T]), np.asarray(post),
                               atol=1e-10)
    fitted, _ = model.fit_em(params, props, Y, inputs=inputs, num_iters=100, verbose=False)
    theirs = sum(float(model.marginal_log_prob(fitted, Y[s], inputs[s])) for s in range(S))
    ours = at.set_params(n_iter=100, tol=-np.inf).fit(X, [T] * S, inputs=U)
    assert ours.score(X, [T] * S, inputs=U) >= theirs - 1e-9 * abs(theirs)

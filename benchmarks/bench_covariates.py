"""RegressionHMM EM against dynamax and statsmodels, and against a Gaussian HMM iteration.

    PYTHONPATH=src /work/venv-bench/bin/python benchmarks/bench_covariates.py
    PYTHONPATH=src /work/venv-bench/bin/python benchmarks/bench_covariates.py --quick

(dynamax, jax and statsmodels live in the benchmark environment, not in hiddenstate's
dependencies; a missing one prints "-".)

Workloads (the targets of issue 30): K = 4 states, 100 sequences x 1,000 steps,

- (a) AR(2)-HMM of a scalar series, ``RegressionHMM(4, n_lags=2)``;
- (b) linear-regression HMM of a scalar on 2 inputs, ``RegressionHMM(4)`` with ``inputs=``.

Every library runs EM from the same starting parameters, all iterations (``tol=-inf``):

- hiddenstate: ``fit`` with ``init_params=""``; the best single iteration (E-step and
  M-step, between two of ``fit``'s callbacks; the line under the table gives the whole call,
  validation included, divided by its iterations);
- dynamax 1.0.3: ``LinearRegressionHMM`` on our design rows (for (a) the two lags as its
  inputs: the same likelihood, conditioning on the first two observations; dynamax's own
  ``LinearAutoregressiveHMM`` pads them with zeros), initial and transition components with
  the ML M-step (``benchmarks/_dynamax_ref.py``), ``fit_em`` compiled ahead of time, its
  whole ``lax.scan`` divided by its iterations;
- statsmodels: ``MarkovRegression(switching_variance=True)`` on the lags or inputs; it has
  no multiple sequences, so it runs the 100,000 rows as one series (the same work per
  iteration); timed: one ``_em_iteration`` (its EM step: Hamilton filter, Kim smoother,
  weighted least squares);
- the Gaussian HMM of the same size: ``hs.HMM(4, emission="gaussian")`` on the same
  observations, timed as ours (the "each iteration within 2x" target), with
  ``covariance_type="diag"`` (its numba emission kernel; for one feature the same model as
  ``"full"``) and ``"full"``.

Timings are the best of ``--repeats`` after a warm-up (a busy neighbour only adds time);
the table gives seconds per iteration and the ratios, and the lines under it the final
log-likelihoods of hiddenstate and dynamax (the same EM: equal to about 1e-9).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from _common import best_time, cpu_name  # noqa: F401  (best_time: statsmodels)

import hiddenstate as hs


def teacher(kind: str, K: int) -> hs.RegressionHMM:
    """The model that draws the data: well separated regimes."""
    rng = np.random.default_rng(1)
    m = hs.RegressionHMM(K, n_lags=2 if kind == "ar2" else 0)
    m.startprob_ = np.full(K, 1.0 / K)
    m.transmat_ = 0.9 * np.eye(K) + 0.1 / K
    Q = 2
    if kind == "ar2":
        m.coef_ = np.stack([[[0.6, -0.2]], [[-0.3, 0.1]], [[0.2, 0.5]], [[0.0, -0.4]]])[:K]
    else:
        m.coef_ = rng.normal(size=(K, 1, Q))
    m.intercept_ = np.linspace(-3, 3, K)[:, None]
    m.covars_ = np.linspace(0.5, 1.5, K)[:, None, None]
    return m


def data(kind: str, K: int, S: int, T: int):
    rng = np.random.default_rng(2)
    t = teacher(kind, K)
    U = rng.normal(size=(S * T, 2)) if kind == "linreg" else None
    X = np.concatenate([t.sample(T, random_state=s, inputs=None if U is None
                                 else U[s * T:(s + 1) * T])[0] for s in range(S)])
    return X, U


def start(kind: str, K: int) -> dict:
    """The starting parameters every library gets: the teacher's, moved."""
    t = teacher(kind, K)
    return {"startprob_": np.full(K, 1.0 / K), "transmat_": 0.7 * np.eye(K) + 0.3 / K,
            "coef_": 0.5 * t.coef_, "intercept_": 0.8 * t.intercept_,
            "covars_": 2.0 * t.covars_}


def per_iteration(make, fit, repeats):
    """(best single iteration over ``repeats`` fits after a warm-up, best whole fit divided
    by its iterations, the last model)."""
    fit(make(), None)   # warm-up
    step, whole, m = np.inf, np.inf, None
    for _ in range(repeats):
        stamps: list[float] = []
        m = make()
        t0 = time.perf_counter()
        fit(m, lambda i, v, stamps=stamps: stamps.append(time.perf_counter()))
        whole = min(whole, (time.perf_counter() - t0) / m.n_iter)
        step = min(step, float(np.min(np.diff(stamps))))
    return step, whole, m


def ours(kind, X, U, lengths, K, n_iter, repeats):
    def make():
        m = hs.RegressionHMM(K, n_lags=2 if kind == "ar2" else 0, init_params="",
                             tol=-np.inf, n_iter=n_iter)
        for name, value in start(kind, K).items():
            setattr(m, name, value)
        return m

    return per_iteration(make, lambda m, cb: m.fit(X, lengths, inputs=U, callback=cb),
                         repeats)


def gaussian(X, lengths, K, n_iter, repeats, covariance_type):
    def make():
        m = hs.HMM(K, emission="gaussian", covariance_type=covariance_type, init_params="",
                   tol=-np.inf, n_iter=n_iter)
        m.startprob_, m.transmat_ = np.full(K, 1.0 / K), 0.7 * np.eye(K) + 0.3 / K
        m.means_ = np.linspace(-3, 3, K)[:, None]
        m.covars_ = np.ones((K, 1, 1)) if covariance_type == "full" else np.ones((K, 1))
        return m

    return per_iteration(make, lambda m, cb: m.fit(X, lengths, callback=cb), repeats)


def design(m, X, U, lengths):
    """Our modelled rows: y (N', 1) and the regressors without the intercept (N', P)."""
    d = m._design(X, lengths, U, 1, 0 if U is None else U.shape[1])
    return d.Z[:, :1], d.Z[:, 1:-1], d.seqs.lengths


def dynamax(kind, X, U, lengths, K, n_iter, repeats, m):
    try:
        import _dynamax_ref as ref
    except ImportError:
        return None
    if ref.load() is None:
        return None
    import jax.numpy as jnp
    from dynamax.hidden_markov_model import LinearRegressionHMM

    y, phi, lens = design(m, X, U, lengths)
    S, T = len(lens), int(lens[0])
    Y = jnp.asarray(y.reshape(S, T, 1))
    inputs = jnp.asarray(phi.reshape(S, T, -1))
    s = start(kind, K)
    model = ref._with_ml_dirichlet_rows(LinearRegressionHMM(K, phi.shape[1], 1))
    params, props = model.initialize(
        initial_probs=jnp.asarray(s["startprob_"]), transition_matrix=jnp.asarray(
            s["transmat_"]), emission_weights=jnp.asarray(s["coef_"]),
        emission_biases=jnp.asarray(s["intercept_"]),
        emission_covariances=jnp.asarray(s["covars_"]))

    def fit(p, y, u):
        return model.fit_em(p, props, y, inputs=u, num_iters=n_iter, verbose=False)[0]

    best, _, fitted = ref.time_compiled(fit, (params, Y, inputs), repeats)
    loglik = sum(float(model.marginal_log_prob(fitted, Y[i], inputs[i])) for i in range(S))
    return best / n_iter, loglik


def statsmodels(kind, X, U, lengths, K, repeats, m):
    try:
        import statsmodels.api as sm
    except ImportError:
        return None
    y, phi, _ = design(m, X, U, lengths)
    mod = sm.tsa.MarkovRegression(y[:, 0], k_regimes=K, exog=phi, switching_variance=True)
    s = start(kind, K)
    A = s["transmat_"]
    # p[i->j] for j < K - 1 (column-major in j, i), constants, coefficients, variances
    params = np.concatenate([A[:, :-1].T.ravel(), s["intercept_"][:, 0],
                             s["coef_"][:, 0, :].T.ravel(), s["covars_"].ravel()])
    best, _ = best_time(lambda: mod._em_iteration(params), repeats)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n-iter", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="20 x 1000, 5 iterations")
    args = ap.parse_args()
    K, S, T = 4, 100, 1000
    n_iter = args.n_iter
    if args.quick:
        S, n_iter = 20, 5
    lengths = [T] * S
    print(f"# RegressionHMM EM, K={K}, {S} x {T}; {cpu_name()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}; best of {args.repeats}, {n_iter} "
          f"iterations; {time.strftime('%Y-%m-%d %H:%M')}\n")
    print("| workload | hiddenstate s/iter | dynamax s/iter | vs dynamax | statsmodels s/iter "
          "| vs statsmodels | Gaussian HMM diag / full s/iter | / Gaussian diag |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    notes = []
    for kind, label in (("ar2", "(a) AR(2)-HMM"), ("linreg", "(b) linear regression, 2 inputs")):
        X, U = data(kind, K, S, T)
        ours_t, ours_whole, m = ours(kind, X, U, lengths, K, n_iter, args.repeats)
        dyn = dynamax(kind, X, U, lengths, K, n_iter, args.repeats, m)
        smt = statsmodels(kind, X, U, lengths, K, args.repeats, m)
        gauss_t, gauss_whole, _ = gaussian(X, lengths, K, n_iter, args.repeats, "diag")
        full_t, _, _ = gaussian(X, lengths, K, n_iter, args.repeats, "full")

        def cell(v, fmt="{:.4f}"):
            return "-" if v is None else fmt.format(v)

        print(f"| {label} | {ours_t:.4f} | {cell(None if dyn is None else dyn[0])} | "
              f"{cell(None if dyn is None else dyn[0] / ours_t, '{:.1f}x')} | {cell(smt)} | "
              f"{cell(None if smt is None else smt / ours_t, '{:.1f}x')} | {gauss_t:.4f} / "
              f"{full_t:.4f} | {ours_t / gauss_t:.2f} |")
        ll = m.score(X, lengths, inputs=U)
        notes.append(f"{label}: whole fit / iterations: hiddenstate {ours_whole:.4f} s "
                     f"(vs dynamax {'-' if dyn is None else f'{dyn[0] / ours_whole:.1f}x'}), "
                     f"Gaussian HMM (diag) {gauss_whole:.4f} s")
        notes.append(f"{label}: log p(X) after {n_iter} iterations: hiddenstate {ll:.9f}"
                     + ("" if dyn is None else f", dynamax {dyn[1]:.9f} (relative difference "
                        f"{abs(ll - dyn[1]) / abs(ll):.1e})"))
    print()
    for line in notes:
        print(line)


if __name__ == "__main__":
    main()

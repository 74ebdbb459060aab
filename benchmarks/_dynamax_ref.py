"""dynamax (JAX, CPU) as a third column of ``bench_vs_hmmlearn.py`` (not part of the library).

dynamax and jax are not dependencies of hiddenstate: :func:`load` returns None when they are
not importable and the benchmark prints "-". Install them into a private environment:

    python3.11 -m venv /work/venv-bench13
    /work/venv-bench13/bin/pip install "jax[cpu]" dynamax==1.0.3 -e ".[dev]"

How dynamax is run, so that it computes what hiddenstate and hmmlearn compute:

- float64 (``jax_enable_x64``), so its log-likelihoods can be compared digit by digit;
- the same data and the same starting parameters; sequences of equal length as one
  ``(batch, T, ...)`` array (dynamax ``vmap``s the E-step over the batch);
- maximum-likelihood M-steps. dynamax's M-step is the *mode* of a conjugate posterior, which
  is the ML update for a Dirichlet concentration of exactly 1 and for a normal-inverse-gamma
  prior with mean concentration 0, shape -3/2 and scale 0 (its variance mode is
  ``scale_n / (shape_n + 3/2)`` = the weighted scatter over the weight), which the emission
  components use. The initial-state and transition components get the ML normalisation of
  the expected counts instead of ``Dirichlet(1 + counts).mode()``: that mode is NaN for a
  whole row as soon as one concentration is <= 1, i.e. where an expected count is exactly 0
  (the banded model's structural zeros) or below ~1e-16, where ``1 + count`` rounds to 1
  (workload (b) with 10 sequences: a transition probability reaches 1e-15 after 8
  iterations and every parameter is NaN after 9); small counts also lose their relative
  precision in ``(1 + count) - 1``. The E-step, where the time goes, is dynamax's own;
- every call jit-compiled ahead of time (``jax.jit(f).lower(*args).compile()``: the compile
  time is reported separately), one untimed warm-up call, then the best of ``repeats``
  calls, each ended by ``block_until_ready``. ``fit_em`` runs all its iterations in one
  ``lax.scan``, so its time per iteration is the whole fit divided by ``num_iters``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np


def load() -> str | None:
    """Enable float64 in JAX and return "dynamax <v>, jax <v>", or None if not importable."""
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        import dynamax
    except ImportError:
        return None
    version = getattr(dynamax, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version

        version = dist_version("dynamax")
    return f"dynamax {version}, jax {jax.__version__} ({jax.default_backend()})"


def time_compiled(fn: Callable, args: tuple, repeats: int) -> tuple[float, float, object]:
    """(best time of ``repeats`` calls of the compiled ``fn(*args)`` after a warm-up call,
    seconds to trace and compile it, the last call's result)."""
    import jax

    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(compiled(*args))  # warm-up
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t0)
    return min(times), compile_s, out


def _batch(X: np.ndarray, lengths) -> np.ndarray:
    """Concatenated sequences of equal length -> (batch, T, D)."""
    lengths = np.asarray(lengths)
    if np.any(lengths != lengths[0]):
        raise ValueError("dynamax batches need sequences of equal length")
    X = np.asarray(X)
    return X.reshape(len(lengths), int(lengths[0]), -1)


def _with_ml_dirichlet_rows(model):
    """Give ``model`` dynamax's standard initial and transition components with the ML
    M-step (expected counts normalised) instead of the Dirichlet mode (see the module
    docstring); returns ``model``."""
    from dynamax.hidden_markov_model.models.initial import StandardHMMInitialState
    from dynamax.hidden_markov_model.models.transitions import StandardHMMTransitions

    class MLInitial(StandardHMMInitialState):
        def m_step(self, params, props, batch_stats, m_step_state):
            counts = batch_stats.sum(axis=0)
            return params._replace(probs=counts / counts.sum()), m_step_state

    class MLTransitions(StandardHMMTransitions):
        def m_step(self, params, props, batch_stats, m_step_state):
            counts = batch_stats.sum(axis=0)
            rows = counts / counts.sum(axis=1, keepdims=True)
            return params._replace(transition_matrix=rows), m_step_state

    model.initial_component = MLInitial(model.num_states, initial_probs_concentration=1.0)
    model.transition_component = MLTransitions(model.num_states, concentration=1.0)
    return model


def categorical_model(init):
    """A dynamax CategoricalHMM at ``init = (start, trans, emis)`` with ML M-steps."""
    import jax.numpy as jnp
    from dynamax.hidden_markov_model import CategoricalHMM

    start, trans, emis = init
    K, W = emis.shape
    model = CategoricalHMM(K, 1, W, initial_probs_concentration=1.0,
                           transition_matrix_concentration=1.0,
                           emission_prior_concentration=1.0)
    _with_ml_dirichlet_rows(model)
    params, props = model.initialize(initial_probs=jnp.asarray(start),
                                     transition_matrix=jnp.asarray(trans),
                                     emission_probs=jnp.asarray(emis)[:, None, :])
    return model, params, props


def gaussian_diag_model(init):
    """A dynamax DiagonalGaussianHMM at ``init = (start, trans, means, variances)``, ML."""
    import jax.numpy as jnp
    from dynamax.hidden_markov_model import DiagonalGaussianHMM

    start, trans, means, covars = init
    K, D = means.shape
    model = DiagonalGaussianHMM(K, D, initial_probs_concentration=1.0,
                                transition_matrix_concentration=1.0,
                                emission_prior_mean_concentration=0.0,
                                emission_prior_concentration=-1.5, emission_prior_scale=0.0)
    _with_ml_dirichlet_rows(model)
    params, props = model.initialize(initial_probs=jnp.asarray(start),
                                     transition_matrix=jnp.asarray(trans),
                                     emission_means=jnp.asarray(means),
                                     emission_scale_diags=jnp.sqrt(jnp.asarray(covars)))
    return model, params, props


def gmm_diag_model(init):
    """A dynamax DiagonalGaussianMixtureHMM at ``init = (start, trans, weights, means,
    variances)`` (means and variances (K, M, D)), ML."""
    import jax.numpy as jnp
    from dynamax.hidden_markov_model import DiagonalGaussianMixtureHMM

    start, trans, weights, means, covars = init
    K, M, D = means.shape
    model = DiagonalGaussianMixtureHMM(K, M, D, initial_probs_concentration=1.0,
                                       transition_matrix_concentration=1.0,
                                       emission_weights_concentration=1.0,
                                       emission_prior_mean_concentration=0.0,
                                       emission_prior_shape=-1.5, emission_prior_scale=0.0)
    _with_ml_dirichlet_rows(model)
    params, props = model.initialize(initial_probs=jnp.asarray(start),
                                     transition_matrix=jnp.asarray(trans),
                                     emission_weights=jnp.asarray(weights),
                                     emission_means=jnp.asarray(means),
                                     emission_scale_diags=jnp.sqrt(jnp.asarray(covars)))
    return model, params, props


def em(built, X, lengths, n_iter: int, repeats: int) -> tuple[float, float, float, float]:
    """EM with ``fit_em`` from the built model's parameters.

    Returns (best fit / n_iter, the same, compile seconds, log p(X) at the fitted
    parameters): the second entry mirrors the (best iteration, best fit / iterations) pair
    of the other libraries; in one ``lax.scan`` the two are the same measurement.
    """
    import jax
    import jax.numpy as jnp

    model, params, props = built
    Y = jnp.asarray(_batch(X, lengths))

    def fit(p, y):
        return model.fit_em(p, props, y, num_iters=n_iter, verbose=False)[0]

    best, compile_s, fitted = time_compiled(fit, (params, Y), repeats)
    loglik = float(jnp.sum(jax.vmap(lambda y: model.marginal_log_prob(fitted, y))(Y)))
    return best / n_iter, best / n_iter, compile_s, loglik


def viterbi(built, X, repeats: int) -> tuple[float, float, float]:
    """Most likely state path of one sequence: (best time, compile s, log p(x, z*))."""
    import jax.numpy as jnp

    model, params, _ = built
    Y = jnp.asarray(_batch(X, [len(X)])[0])
    best, compile_s, path = time_compiled(model.most_likely_states, (params, Y), repeats)
    return best, compile_s, _joint_loglik(params, np.asarray(X).ravel(), np.asarray(path))


def _joint_loglik(params, x, z) -> float:
    """log p(x, z) of a categorical HMM (to compare Viterbi scores)."""
    start = np.asarray(params.initial.probs)
    trans = np.asarray(params.transitions.transition_matrix)
    emis = np.asarray(params.emissions.probs)[:, 0, :]
    return float(np.log(start[z[0]]) + np.log(trans[z[:-1], z[1:]]).sum()
                 + np.log(emis[z, x]).sum())


def score(built, X, repeats: int) -> tuple[float, float, float]:
    """Marginal log-likelihood (forward filter) of one sequence: (best, compile s, value)."""
    import jax.numpy as jnp

    model, params, _ = built
    Y = jnp.asarray(_batch(X, [len(X)])[0])
    best, compile_s, value = time_compiled(model.marginal_log_prob, (params, Y), repeats)
    return best, compile_s, float(value)

"""Fuzzing hand-set parameters: every inference method either returns what enumeration of
all state paths gives, or raises the HiddenStateError that an independent check of the
parameters and the data predicts; never a crash.

Parameters of HMM (categorical, Gaussian with each covariance type, Poisson) and PROPS are
drawn valid and then corrupted (NaN, inf, a negative entry, unnormalised rows, a row or a
column too many or too few, flattened, scalars, strings, complex, booleans, integers,
object arrays, lists, zeros), including K = 2000 with a one-entry ``startprob_`` (which
used to crash ``decode``). The search runs in a subprocess so that a segfault fails the
test instead of killing pytest; it is derandomised (the same examples every run).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

_HERE = Path(__file__).resolve().parent
MAX_EXAMPLES = 150


def test_hand_set_parameters_fuzz_in_a_subprocess():
    import hiddenstate

    src = str(Path(hiddenstate.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, str(_HERE)])}
    proc = subprocess.run([sys.executable, __file__], capture_output=True, text=True,
                          timeout=900, env=env, cwd=_HERE)
    out = proc.stdout[-6000:] + proc.stderr[-6000:]
    assert proc.returncode == 0, f"the fuzz run failed or crashed (rc {proc.returncode}):\n{out}"
    counts = dict(line.split("=") for line in proc.stdout.split() if "=" in line)
    # the search reached every outcome: valid models, invalid ones, impossible data
    assert int(counts["valid"]) >= 20 and int(counts["invalid"]) >= 20, out
    assert int(counts["impossible"]) >= 3 and int(counts["refused"]) >= 5, out


# -- the search (run by the subprocess) ------------------------------------------------------------
KINDS = ("categorical", "spherical", "diag", "full", "tied", "poisson", "props")
CORRUPTIONS = ("ok", "ok", "ok", "ok", "ok", "nan", "inf", "negative", "scale", "drop",
               "extra", "column", "flat", "scalar", "list", "int", "bool", "str", "complex",
               "object", "zeros")
#: what the setter refuses outright (InvalidInputError on assignment)
REFUSED = ("bool", "str", "complex")
W_PROPS = 3


def _corrupt(arr: np.ndarray, how: str, rng: np.random.Generator):
    arr = np.array(arr, dtype=np.float64)
    if how == "ok":
        return arr
    flat = arr.reshape(-1).copy()
    i = int(rng.integers(max(flat.size, 1)))
    if how in ("nan", "inf", "negative") and flat.size:
        flat[i] = {"nan": np.nan, "inf": np.inf, "negative": -abs(flat[i]) - 0.25}[how]
        return flat.reshape(arr.shape)
    if how == "scale":
        return arr * 1.4
    if how == "drop":
        return arr[:-1]
    if how == "extra":
        return np.concatenate([arr, arr[:1]]) if arr.ndim else np.array([arr, arr])
    if how == "column":
        return np.concatenate([arr, np.zeros(arr.shape[:-1] + (1,))], axis=-1) if arr.ndim \
            else arr
    if how == "flat":
        return arr.reshape(-1)
    if how == "scalar":
        return np.float64(flat[0]) if flat.size else np.float64(0.5)
    if how == "list":
        return arr.tolist()
    if how == "int":
        return arr.astype(np.int64)
    if how == "bool":
        return arr > 0.5
    if how == "str":
        return arr.astype(str)
    if how == "complex":
        return arr + 0j
    if how == "object":
        return arr.astype(object)
    if how == "zeros":
        return np.zeros_like(arr)
    return arr


def _stochastic(rng, shape, zeros: bool) -> np.ndarray:
    p = rng.dirichlet(np.ones(shape[-1]), size=shape[:-1]) if len(shape) > 1 else \
        rng.dirichlet(np.ones(shape[0]))
    if zeros and shape[-1] > 1:  # structural zeros: some sequences become impossible
        mask = rng.random(p.shape) < 0.4
        if len(shape) > 1 and rng.random() < 0.5:
            mask[..., int(rng.integers(1, shape[-1]))] = True  # a column never reached
        mask[..., 0] = False
        p = np.where(mask, 0.0, p)
        p = p / p.sum(axis=-1, keepdims=True)
    return p


def _spd(rng, D) -> np.ndarray:
    a = rng.normal(size=(D, D))
    return a @ a.T + 0.5 * np.eye(D)


def make_case(seed: int, kind: str, K: int, W: int, D: int, corruptions: dict,
              lengths: list[int]) -> dict:
    """Valid parameters from ``seed``, then each one corrupted as ``corruptions`` says."""
    rng = np.random.default_rng(seed)
    zeros = bool(rng.random() < 0.5)
    Ke = K - 1 if kind == "props" else K
    params = {"startprob_": _stochastic(rng, (K,), zeros),
              "transmat_": _stochastic(rng, (K, K), zeros)}
    if kind in ("categorical", "props"):
        params["emissionprob_"] = _stochastic(rng, (Ke, W_PROPS if kind == "props" else W),
                                              zeros)
    elif kind == "poisson":
        lam = rng.gamma(2.0, 1.5, size=(K, D))
        zero = rng.random((K, D)) < (0.3 if zeros else 0)
        if zeros and rng.random() < 0.5:
            zero[:, int(rng.integers(D))] = True  # a feature whose counts must all be 0
        params["lambdas_"] = np.where(zero, 0.0, lam)
    else:
        params["means_"] = rng.normal(size=(K, D)) * 2
        params["covars_"] = {"spherical": rng.uniform(0.3, 2.0, size=K),
                             "diag": rng.uniform(0.3, 2.0, size=(K, D)),
                             "full": np.array([_spd(rng, D) for _ in range(K)]),
                             "tied": _spd(rng, D)}[kind]
    params = {name: _corrupt(value, corruptions.get(name, "ok"), rng)
              for name, value in params.items()}
    n = sum(lengths)
    if kind in ("categorical", "props"):
        X = rng.integers(0, W_PROPS if kind == "props" else W, size=n)
    elif kind == "poisson":
        X = rng.poisson(2.0, size=(n, D)).astype(np.float64)
    else:
        X = rng.integers(-4, 5, size=(n, D)) / 2.0
    return {"kind": kind, "K": K, "params": params, "X": X, "lengths": lengths}


# -- an independent oracle: is a parameter valid, is the data valid, what is log p(x_t | z_t)?
def _as_array(value):
    if isinstance(value, (list, float, np.floating)) or (
            isinstance(value, np.ndarray) and value.dtype == object):
        return np.asarray(value, dtype=np.float64)
    return value


def _ok_stochastic(a, shape) -> bool:
    return (a.shape == shape and bool(np.all(np.isfinite(a))) and bool(np.all(a >= 0))
            and bool(np.allclose(a.sum(axis=-1), 1.0, rtol=0, atol=1e-8)))


def _ok_spd(c) -> bool:
    return bool(np.all(np.isfinite(c)) and np.allclose(c, c.T)
                and np.linalg.eigvalsh(c).min() > 0)


def oracle(case: dict) -> tuple[str, int | None]:
    """``("refused", None)``, ``("invalid", None)`` or ``("valid", n_features)``."""
    kind, K, params = case["kind"], case["K"], case["params"]
    for value in params.values():
        arr = np.asarray(value) if not isinstance(value, list) else np.asarray(value, float)
        if arr.dtype.kind in "bUc":
            return "refused", None
    p = {name: _as_array(v) for name, v in params.items()}
    if not (_ok_stochastic(p["startprob_"], (K,)) and _ok_stochastic(p["transmat_"], (K, K))):
        return "invalid", None
    if kind == "props":
        return ("valid", W_PROPS) if _ok_stochastic(p["emissionprob_"], (K - 1, W_PROPS)) \
            else ("invalid", None)
    if kind == "categorical":
        B = p["emissionprob_"]
        if B.ndim != 2 or not _ok_stochastic(B, (K, B.shape[1])) or B.shape[1] == 0:
            return "invalid", None
        return "valid", B.shape[1]
    if kind == "poisson":
        lam = p["lambdas_"]
        ok = lam.ndim == 2 and lam.shape[0] == K and lam.shape[1] > 0 and bool(
            np.all(np.isfinite(lam)) and np.all(lam >= 0))
        return ("valid", lam.shape[1]) if ok else ("invalid", None)
    means, cov = p["means_"], p["covars_"]
    if means.ndim != 2 or means.shape[0] != K or means.shape[1] == 0 \
            or not np.all(np.isfinite(means)):
        return "invalid", None
    D = means.shape[1]
    if kind in ("spherical", "diag"):
        shape = (K,) if kind == "spherical" else (K, D)
        ok = cov.shape == shape and bool(np.all(np.isfinite(cov)) and np.all(cov > 0))
    elif kind == "full":
        ok = cov.shape == (K, D, D) and all(_ok_spd(c) for c in cov)
    else:
        ok = cov.shape == (D, D) and _ok_spd(cov)
    return ("valid", D) if ok else ("invalid", None)


def source_probs(history) -> np.ndarray:
    """The PROPS source: likes the symbol after the last one, never emits symbol 2 after a
    2 (so some sequences are impossible in the source state)."""
    p = np.array([0.2, 0.3, 0.5])
    if len(history):
        p = np.roll(p, int(history[-1]) + 1)
        if history[-1] == 2:
            p = np.array([0.5, 0.5, 0.0])
    return p


def log_emissions(case: dict, W_or_D: int) -> np.ndarray:
    """``(N, K)`` log p(x_t | z_t = k) written out from the definitions."""
    from scipy import stats

    kind, K, X = case["kind"], case["K"], case["X"]
    p = {name: _as_array(v) for name, v in case["params"].items()}
    with np.errstate(divide="ignore"):
        if kind == "categorical":
            return np.log(p["emissionprob_"]).T[X]
        if kind == "props":
            out = np.empty((len(X), K))
            start = 0
            for n in case["lengths"]:
                seq = X[start:start + n]
                for t in range(n):
                    out[start + t, 0] = np.log(source_probs(seq[:t])[seq[t]])
                start += n
            out[:, 1:] = np.log(p["emissionprob_"]).T[X]
            return out
        if kind == "poisson":
            return np.stack([stats.poisson.logpmf(X, lam).sum(axis=1)
                             for lam in p["lambdas_"]], axis=1)
    D = W_or_D
    cov = p["covars_"]
    covs = {"spherical": lambda k: cov[k] * np.eye(D), "diag": lambda k: np.diag(cov[k]),
            "full": lambda k: cov[k], "tied": lambda k: cov}[kind]
    return np.stack([stats.multivariate_normal.logpdf(X, p["means_"][k], covs(k))
                     .reshape(len(X)) for k in range(K)], axis=1)


def n_free(kind: str, K: int, F: int) -> int:
    emis = {"categorical": K * (F - 1), "props": (K - 1) * (F - 1), "poisson": K * F,
            "spherical": K * F + K, "diag": 2 * K * F, "full": K * F + K * F * (F + 1) // 2,
            "tied": K * F + F * (F + 1) // 2}[kind]
    return (0 if kind == "props" else K - 1) + K * (K - 1) + emis


# -- running one case ---------------------------------------------------------------------------
def build(case: dict):
    import hiddenstate as hs
    from hiddenstate.errors import InvalidInputError
    from hiddenstate.sources import CallableSource

    kind, K = case["kind"], case["K"]
    if kind == "props":
        model = hs.PROPS([CallableSource(source_probs, W_PROPS)], n_perturbation_states=K - 1)
    elif kind in ("categorical", "poisson"):
        model = hs.HMM(K, emission=kind)
    else:
        model = hs.HMM(K, emission="gaussian", covariance_type=kind)
    refused = False
    for name, value in case["params"].items():
        try:
            setattr(model, name, value)
        except InvalidInputError:
            refused = True
    return model, refused


METHODS = ("score", "score_samples", "predict_proba", "decode", "predict",
           "decode_map", "filter_proba", "score_tokens", "sample_posterior", "bic", "aic",
           "sample", "n_parameters", "token_scores", "membership_log_odds")


def run_method(model, name, X, lengths):
    if name == "decode_map":
        return model.decode(X, lengths, algorithm="map")
    if name == "sample_posterior":
        return model.sample_posterior(X, lengths, random_state=0)
    if name == "sample":
        return model.sample(4, random_state=0)
    if name == "n_parameters":
        return model.n_parameters()
    return getattr(model, name)(X, lengths)


def check_case(case: dict) -> str:
    """Run every method; assert the outcome the oracle predicts. Returns the case's class."""
    from brute_force import dataset_posteriors

    from hiddenstate.errors import (
        HiddenStateError,
        InvalidInputError,
        NotFittedError,
        ZeroProbabilityError,
    )

    kind, K, X, lengths = case["kind"], case["K"], case["X"], case["lengths"]
    model, refused = build(case)
    verdict, F = oracle(case)
    assert refused == (verdict == "refused"), (verdict, refused)
    data_ok = verdict == "valid" and (
        X.max() < F if kind in ("categorical", "props") else X.shape[1] == F)
    methods = [m for m in METHODS if kind == "props" or m not in ("token_scores",
                                                                  "membership_log_odds")]
    outcomes = {}
    for name in methods:
        try:
            outcomes[name] = run_method(model, name, X, lengths)
        except HiddenStateError as exc:
            outcomes[name] = exc
    if verdict != "valid":
        want = NotFittedError if verdict == "refused" else InvalidInputError
        for name, out in outcomes.items():
            assert isinstance(out, want), (name, verdict, out)
        return verdict
    for name in ("sample", "n_parameters"):
        assert not isinstance(outcomes[name], HiddenStateError), (name, outcomes[name])
    assert outcomes["n_parameters"] == n_free(kind, K, F)
    Xs, states = outcomes["sample"]
    assert len(Xs) == 4 and states.shape == (4,) and states.min() >= 0 and states.max() < K
    P = {n: _as_array(v) for n, v in case["params"].items()}
    assert P["startprob_"][states[0]] > 0
    assert np.all(P["transmat_"][states[:-1], states[1:]] > 0)
    if not data_ok:
        for name, out in outcomes.items():
            if name not in ("sample", "n_parameters"):
                assert isinstance(out, InvalidInputError) and "X" in str(out), (name, out)
        return "valid"
    log_e = log_emissions(case, F)
    ref = dataset_posteriors(P["startprob_"], P["transmat_"], log_e, lengths)
    loglik = ref["loglik"]
    impossible = np.flatnonzero(loglik == -np.inf)
    n = len(X)
    np.testing.assert_allclose(outcomes["score_samples"], loglik, rtol=1e-9, atol=1e-9)
    if len(impossible):
        assert outcomes["score"] == -np.inf
    else:
        assert abs(outcomes["score"] - loglik.sum()) <= 1e-9 * max(1.0, abs(loglik.sum()))
    tokens = outcomes["score_tokens"]
    assert tokens.shape == (n,) and not np.any(np.isnan(tokens))
    bounds = np.cumsum([0] + list(lengths))
    spans = list(zip(bounds[:-1], bounds[1:], strict=True))
    np.testing.assert_allclose([tokens[a:b].sum() for a, b in spans], loglik, rtol=1e-9,
                               atol=1e-9)
    posterior_methods = ("predict_proba", "decode", "predict", "decode_map",
                         "filter_proba", "sample_posterior", "token_scores",
                         "membership_log_odds")
    if len(impossible):
        for name in posterior_methods:
            if name in outcomes:
                out = outcomes[name]
                assert isinstance(out, ZeroProbabilityError), (name, out)
                assert f"sequence {impossible[0]} " in str(out), (name, str(out))
        assert outcomes["bic"] == np.inf and outcomes["aic"] == np.inf
        return "impossible"
    np.testing.assert_allclose(outcomes["predict_proba"], ref["gamma"], atol=1e-9)
    logp, path = outcomes["decode"]
    tol = 1e-9 * max(1.0, abs(logp))
    assert abs(logp - ref["viterbi_logprob"].sum()) < tol
    assert path.shape == (n,) and path.min() >= 0 and path.max() < K
    with np.errstate(divide="ignore"):
        joint = sum(float(np.log(P["startprob_"][path[a]]) + log_e[a, path[a]]
                          + np.sum(np.log(P["transmat_"][path[a:b - 1], path[a + 1:b]]))
                          + np.sum(log_e[np.arange(a + 1, b), path[a + 1:b]]))
                    for a, b in spans)
    assert abs(joint - logp) < tol  # the returned path attains the optimum
    np.testing.assert_array_equal(outcomes["predict"], path)
    np.testing.assert_array_equal(outcomes["decode_map"][1], ref["gamma"].argmax(axis=1))
    filt = outcomes["filter_proba"]
    for a, b in spans:
        for t in range(a, b):  # p(z_t | x_a..t): the last row of the prefix's posteriors
            prefix = dataset_posteriors(P["startprob_"], P["transmat_"], log_e[a:t + 1],
                                        [t + 1 - a])
            np.testing.assert_allclose(filt[t], prefix["gamma"][-1], atol=1e-9)
    drawn = outcomes["sample_posterior"]
    assert np.all(ref["gamma"][np.arange(n), drawn] > 0)
    bic = -2 * loglik.sum() + n_free(kind, K, F) * np.log(n)
    assert abs(outcomes["bic"] - bic) < 1e-9 * max(1.0, abs(bic))
    if kind == "props":
        ts = outcomes["token_scores"]
        np.testing.assert_allclose(ts.smoothed, ref["gamma"], atol=1e-9)
        np.testing.assert_array_equal(ts.viterbi, path)
    return "valid"


K2000 = {"kind": "categorical", "K": 2000,
         "params": {"startprob_": np.ones(1), "transmat_": np.full((2000, 2000), 1 / 2000),
                    "emissionprob_": np.full((2000, 3), 1 / 3)},
         "X": np.array([0, 1, 2]), "lengths": [3]}


def main() -> None:
    from hypothesis import HealthCheck, example, given, settings
    from hypothesis import strategies as st

    counts = {"valid": 0, "invalid": 0, "impossible": 0, "refused": 0}

    @st.composite
    def cases(draw):
        kind = draw(st.sampled_from(KINDS))
        K = draw(st.integers(2 if kind == "props" else 1, 3))
        lengths = draw(st.lists(st.integers(1, 3), min_size=1, max_size=2))
        names = ["startprob_", "transmat_"] + {
            "categorical": ["emissionprob_"], "props": ["emissionprob_"],
            "poisson": ["lambdas_"]}.get(kind, ["means_", "covars_"])
        corrupt = draw(st.booleans())  # half the examples are valid models
        corruptions = {name: draw(st.sampled_from(CORRUPTIONS)) if corrupt else "ok"
                       for name in names}
        return make_case(draw(st.integers(0, 2**32 - 1)), kind, K, draw(st.integers(1, 3)),
                         draw(st.integers(1, 2)), corruptions, lengths)

    @settings(max_examples=MAX_EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case=cases())
    @example(case=K2000)
    def fuzz(case):
        counts[check_case(case)] += 1

    fuzz()
    print(" ".join(f"{k}={v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()

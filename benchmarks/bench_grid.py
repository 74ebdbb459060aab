"""hiddenstate, hmmlearn, dynamax and pomegranate over a grid of sizes, idle and busy.

    PYTHONPATH=src /work/venv-bench/bin/python benchmarks/bench_grid.py          # idle
    PYTHONPATH=src /work/venv-bench/bin/python benchmarks/bench_grid.py --busy 2 # 2 burners
    PYTHONPATH=src /work/venv-bench/bin/python benchmarks/bench_grid.py --quick  # smoke run

Tasks: categorical EM (W = 20 symbols) and diagonal-Gaussian EM (D = 3), time per
iteration; Viterbi decoding and scoring (the forward pass) of a categorical HMM. Grid: T =
100 .. 10^6 observations, K = 2 .. 100 states (``--T``, ``--K``). EM runs on sequences of
``min(T, 1000)`` observations (one sequence up to T = 1,000, then T / 1,000 of them);
Viterbi and score on one sequence of T observations. Every library starts from the same
parameters (random rows, a sticky transition matrix) on the same data (sampled from another
random HMM of the same size), in float64, with its default threads:

- **hiddenstate**: ``HMM(init_params="", tol=-inf)``;
- **hmmlearn** 0.3.3: ``CategoricalHMM`` / ``GaussianHMM(covariance_type="diag",
  covars_prior=0)``, ``implementation="scaling"`` (its fastest);
- **dynamax** 1.0.3 (JAX on CPU, float64): ``fit_em``, ``most_likely_states``,
  ``marginal_log_prob`` (``_dynamax_ref.py``: maximum-likelihood M-steps; every call
  compiled ahead of time, the compile time left out);
- **pomegranate** 1.1.2 (torch on CPU, float64): ``DenseHMM`` with end probabilities 1
  (``ends=1``: no end state), ``fit`` with ``tol=-inf``, ``viterbi``, ``log_probability``;
  Gaussian variances floored at 1e-3 (``min_cov``, hmmlearn's and hiddenstate's default).

Timing: EM per iteration is the difference between a fit of ``1 + m`` iterations and one of
1, divided by ``m`` (steady state: validation and set-up cancel), for dynamax the whole
``fit_em`` over its iterations (one ``lax.scan``); Viterbi and score one call (a call
under 50 ms: the mean over a batch of up to 200 calls lasting about 50 ms). The libraries
run in turns, ``--repeats`` rounds (1 round where a call takes more than 2 s), and each
keeps its minimum: a busy neighbour only ever adds time. A library is not run where its
previous cell (the next smaller T, same K and task) predicts more than ``--budget`` seconds
per call (time x 10 for each step of T), or where it would hold more than 2 GB of (T, K, K)
pairwise marginals (dynamax and pomegranate EM): those cells print "skip" and are listed.

``--busy N`` starts N processes that each keep a core busy for the whole run (the busy
condition of issue 28; ``--busy 0``: idle). The load average is printed at the start and
after every task. The table gives hiddenstate's time and each library's time over it
(> 1: hiddenstate is faster); ``--png`` writes the figure of the docs' performance page and
``--json`` the numbers.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
import warnings

import numpy as np
from _common import cpu_name

warnings.filterwarnings("ignore")
logging.getLogger("hmmlearn").setLevel(logging.ERROR)

W, D = 20, 3
LIBS = ("hiddenstate", "hmmlearn", "dynamax", "pomegranate")
TASKS = ("categorical EM", "Gaussian EM", "Viterbi", "score")
BURN = "import time\nend = time.time() + 86400\nwhile time.time() < end:\n    pass\n"


def stochastic(rng, shape, sticky=0.0):
    p = rng.random(shape) + 0.2
    p /= p.sum(axis=-1, keepdims=True)
    if sticky:
        p = sticky * np.eye(shape[0]) + (1 - sticky) * p
    return p


def problem(task: str, K: int, T: int, seed: int = 0):
    """(X, lengths, start parameters) of one grid cell."""
    from hiddenstate import inference

    rng = np.random.default_rng(seed + 1000 * K + T)
    lengths = [T] if T <= 1000 or task in ("Viterbi", "score") else [1000] * (T // 1000)
    states = inference.sample_chain(stochastic(rng, K), stochastic(rng, (K, K), 0.8),
                                    int(sum(lengths)), rng)
    init = {"startprob": stochastic(rng, K), "transmat": stochastic(rng, (K, K), 0.5)}
    if task == "Gaussian EM":
        means = rng.normal(scale=3.0, size=(K, D))
        X = means[states] + rng.normal(size=(len(states), D))
        init["means"] = rng.normal(scale=3.0, size=(K, D))
        init["covars"] = np.ones((K, D))
    else:
        cum = np.cumsum(stochastic(rng, (K, W)), axis=1)[states]
        X = (rng.random(len(states))[:, None] > cum).sum(axis=1)[:, None]
        init["emissionprob"] = stochastic(rng, (K, W))
    return X, lengths, init


# -- the libraries: each returns a callable that runs ``n`` EM iterations (EM) or one call ----
def hiddenstate_calls(task, K, X, lengths, init):
    import hiddenstate as hs

    gaussian = task == "Gaussian EM"

    def model(n_iter):
        m = hs.HMM(n_states=K, emission="gaussian" if gaussian else "categorical",
                   n_features=D if gaussian else W, init_params="", n_iter=n_iter,
                   tol=-np.inf)
        for key, value in init.items():
            setattr(m, key + "_", value)
        return m

    if task.endswith("EM"):
        return lambda n: model(n).fit(X, lengths)
    fitted = model(1)
    if task == "Viterbi":
        return lambda: fitted.decode(X, lengths)[0]
    return lambda: fitted.score(X, lengths)


def hmmlearn_calls(task, K, X, lengths, init):
    from hmmlearn import hmm

    def model(n_iter):
        if task == "Gaussian EM":
            m = hmm.GaussianHMM(n_components=K, covariance_type="diag", init_params="",
                                n_iter=n_iter, tol=-np.inf, implementation="scaling",
                                covars_prior=0.0)
            m.means_, m.covars_ = init["means"], init["covars"]
        else:
            m = hmm.CategoricalHMM(n_components=K, n_features=W, init_params="",
                                   n_iter=n_iter, tol=-np.inf, implementation="scaling")
            m.emissionprob_ = init["emissionprob"]
        m.startprob_, m.transmat_ = init["startprob"], init["transmat"]
        return m

    if task.endswith("EM"):
        return lambda n: model(n).fit(X, lengths)
    fitted = model(1)
    if task == "Viterbi":
        return lambda: fitted.decode(X, lengths, algorithm="viterbi")[0]
    return lambda: fitted.score(X, lengths)


def dynamax_calls(task, K, X, lengths, init):
    import _dynamax_ref as ref

    if task == "Gaussian EM":
        built = ref.gaussian_diag_model((init["startprob"], init["transmat"], init["means"],
                                         init["covars"]))
    else:
        built = ref.categorical_model((init["startprob"], init["transmat"],
                                       init["emissionprob"]))
    return built


def pomegranate_calls(task, K, X, lengths, init):
    import torch
    from pomegranate.distributions import Categorical, Normal
    from pomegranate.hmm import DenseHMM

    torch.set_default_dtype(torch.float64)  # its internal buffers too

    def model(n_iter):
        if task == "Gaussian EM":
            dists = [Normal(torch.tensor(init["means"][k]), torch.tensor(init["covars"][k]),
                            covariance_type="diag", min_cov=1e-3) for k in range(K)]
        else:
            dists = [Categorical(torch.tensor(init["emissionprob"][k:k + 1])) for k in range(K)]
        m = DenseHMM(dists, edges=torch.tensor(init["transmat"]),
                     starts=torch.tensor(init["startprob"]),
                     ends=torch.ones(K, dtype=torch.float64), max_iter=n_iter, tol=0.0,
                     verbose=False)
        m.tol = -np.inf  # every iteration (its constructor refuses a negative tol)
        return m

    L = lengths[0]
    Y = torch.tensor(X.reshape(len(lengths), L, -1))
    if task.endswith("EM"):
        return lambda n: model(n).fit(Y)
    fitted = model(1)
    if task == "Viterbi":
        return lambda: fitted.viterbi(Y)
    return lambda: fitted.log_probability(Y)


# -- timing -------------------------------------------------------------------------------
def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


class Cell:
    """The interleaved measurement of one grid cell: each library's callable, its warm-up,
    its best time over the rounds."""

    def __init__(self, task, K, T, args, budget, previous):
        self.task, self.K, self.T, self.args = task, K, T, args
        self.X, self.lengths, self.init = problem(task, K, T, args.seed)
        self.best = {}
        self.skipped = {}
        self.calls = {}
        em = task.endswith("EM")
        for lib in LIBS:
            if lib not in args.libs:
                continue
            guess = previous.get(lib)
            if guess is not None and guess * 10 ** np.log10(T / previous["T"]) > budget:
                self.skipped[lib] = "time"
                continue
            if guess is None and previous.get(lib + ":skipped"):
                self.skipped[lib] = previous[lib + ":skipped"]
                continue
            if em and lib in ("dynamax", "pomegranate") and T * K * K * 8 > 2e9:
                self.skipped[lib] = "memory"
                continue
            try:
                self.calls[lib] = self._prepare(lib)
            except ImportError:
                self.skipped[lib] = "not installed"

    def _prepare(self, lib):
        task, K, X, lengths, init = self.task, self.K, self.X, self.lengths, self.init
        if lib == "dynamax":
            import _dynamax_ref as ref

            if ref.load() is None:
                raise ImportError("dynamax")
            built = dynamax_calls(task, K, X, lengths, init)
            return ("dynamax", built)
        make = {"hiddenstate": hiddenstate_calls, "hmmlearn": hmmlearn_calls,
                "pomegranate": pomegranate_calls}[lib]
        return ("plain", make(task, K, X, lengths, init))

    def measure(self):
        em = self.task.endswith("EM")
        single = {}
        for lib, (kind, call) in list(self.calls.items()):  # warm-up (compiles), one call
            try:
                if kind == "dynamax":
                    single[lib] = self._dynamax(call, warm=True)
                elif em:
                    call(1)
                    single[lib] = max(_time(lambda c=call: c(2)) - _time(lambda c=call: c(1)),
                                      1e-6)
                else:
                    call()
                    single[lib] = _time(call)
            except Exception as exc:  # noqa: BLE001 - a library's own failure: reported
                self.skipped[lib] = f"error: {type(exc).__name__}"
                del self.calls[lib]
        m = {lib: max(1, min(20, int(0.3 / t))) for lib, t in single.items()}
        # a call below 50 ms is timed as a batch of calls (timeit's rule): one call of
        # ~100 µs timed alone is mostly noise (page faults, the garbage collector)
        reps = {lib: max(1, min(200, int(0.05 / t))) for lib, t in single.items()}
        rounds = 1 if max(single.values(), default=0) > 2.0 else self.args.repeats
        fits = {}  # EM: the best fit of 1 and of 1 + m iterations, kept apart
        for _ in range(rounds):
            for lib, (kind, call) in list(self.calls.items()):
                try:
                    if kind == "dynamax":
                        t = self._dynamax(call)
                    elif em:
                        a, b = fits.get(lib, (np.inf, np.inf))
                        b = min(b, _time(lambda c=call, k=m[lib]: c(1 + k)))
                        a = min(a, _time(lambda c=call: c(1)))
                        fits[lib] = (a, b)
                        t = (b - a) / m[lib]
                    else:
                        t = _time(lambda c=call, r=reps[lib]: [c() for _ in range(r)])
                        t /= reps[lib]
                except Exception as exc:  # noqa: BLE001
                    self.skipped[lib] = f"error: {type(exc).__name__}"
                    del self.calls[lib]
                    self.best.pop(lib, None)
                    continue
                self.best[lib] = min(self.best.get(lib, np.inf), max(t, 1e-9)) if not em \
                    or kind == "dynamax" else max(t, 1e-9)
        return self

    def _dynamax(self, built, warm=False):
        import _dynamax_ref as ref

        X, lengths = self.X, self.lengths
        if self.task.endswith("EM"):
            n = 5
            if warm or not hasattr(self, "_dx_fit"):
                import jax
                import jax.numpy as jnp

                model, params, props = built
                Y = jnp.asarray(ref._batch(X, lengths))

                def fit(p, y):
                    return model.fit_em(p, props, y, num_iters=n, verbose=False)[0]

                compiled = jax.jit(fit).lower(params, Y).compile()
                jax.block_until_ready(compiled(params, Y))
                self._dx_fit = (compiled, params, Y)
            compiled, params, Y = self._dx_fit
            import jax
            t0 = time.perf_counter()
            jax.block_until_ready(compiled(params, Y))
            return (time.perf_counter() - t0) / n
        if warm or not hasattr(self, "_dx_call"):
            import jax
            import jax.numpy as jnp

            model, params, _ = built
            Y = jnp.asarray(ref._batch(X, [len(X)])[0])
            fn = model.most_likely_states if self.task == "Viterbi" else model.marginal_log_prob
            compiled = jax.jit(fn).lower(params, Y).compile()
            jax.block_until_ready(compiled(params, Y))
            self._dx_call = (compiled, params, Y)
        compiled, params, Y = self._dx_call
        import jax
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(params, Y))
        return time.perf_counter() - t0


def run(args) -> list[dict]:
    results = []
    for task in args.tasks:
        for K in args.K:
            previous = {"T": None}
            for T in args.T:
                cell = Cell(task, K, T, args, args.budget, previous).measure()
                row = {"task": task, "K": K, "T": T, "best": cell.best,
                       "skipped": cell.skipped}
                results.append(row)
                print(_row(row), flush=True)
                previous = {"T": T, **cell.best,
                            **{lib + ":skipped": why for lib, why in cell.skipped.items()}}
        print(f"<!-- load average after {task}: {_load()} -->", flush=True)
    return results


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _fmt(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} µs"


def _row(row) -> str:
    best, skipped = row["best"], row["skipped"]
    hs_t = best.get("hiddenstate")
    cells = [row["task"], str(row["K"]), f"{row['T']:,}",
             _fmt(hs_t) if hs_t else "-"]
    for lib in LIBS[1:]:
        if lib in best and hs_t:
            cells.append(f"{best[lib] / hs_t:.1f}x")
        elif lib in skipped:
            cells.append(f"skip ({skipped[lib]})")
        else:
            cells.append("-")
    return "| " + " | ".join(cells) + " |"


def header() -> str:
    return ("| task | K | T | hiddenstate | hmmlearn / hs | dynamax / hs | pomegranate / hs |\n"
            "|---|---:|---:|---:|---:|---:|---:|")


def plot(results: list[dict], path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(TASKS), figsize=(4.2 * len(TASKS), 3.8), sharey=True)
    colors = {"hmmlearn": "tab:blue", "dynamax": "tab:green", "pomegranate": "tab:red"}
    markers = dict(zip(sorted({r["K"] for r in results}), "os^Dv", strict=False))
    for ax, task in zip(np.atleast_1d(axes), TASKS, strict=True):
        for lib in LIBS[1:]:
            for K, marker in markers.items():
                rows = [r for r in results if r["task"] == task and r["K"] == K
                        and lib in r["best"] and "hiddenstate" in r["best"]]
                if not rows:
                    continue
                T = [r["T"] for r in rows]
                ratio = [r["best"][lib] / r["best"]["hiddenstate"] for r in rows]
                ax.plot(T, ratio, marker=marker, color=colors[lib], lw=1,
                        label=f"{lib}, K={K}")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.axhline(3.0, color="k", lw=0.5, ls=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(task)
        ax.set_xlabel("T (observations)")
    np.atleast_1d(axes)[0].set_ylabel("their time / hiddenstate's")
    handles, labels = np.atleast_1d(axes)[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=6, fontsize=7, frameon=False)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, 0.12, 1, 0.95))
    fig.savefig(path, dpi=110)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--busy", type=int, default=0,
                    help="processes that keep a core busy each during the run")
    ap.add_argument("--T", type=int, nargs="*", default=[100, 1000, 10**4, 10**5, 10**6])
    ap.add_argument("--K", type=int, nargs="*", default=[2, 10, 100])
    ap.add_argument("--tasks", nargs="*", default=list(TASKS), choices=TASKS)
    ap.add_argument("--libs", nargs="*", default=list(LIBS), choices=LIBS)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget", type=float, default=30.0,
                    help="seconds a single call may be predicted to take (else: skip)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="T up to 10^4, K 2 and 10")
    ap.add_argument("--png", default=None, help="write the figure there")
    ap.add_argument("--json", default=None, help="write the numbers there")
    args = ap.parse_args(argv)
    if args.quick:
        args.T = [t for t in args.T if t <= 10**4]
        args.K = [k for k in args.K if k <= 10]
        args.repeats = min(args.repeats, 2)
    import hiddenstate
    from hiddenstate import threads

    versions = [f"hiddenstate {hiddenstate.__version__} ({threads.get_num_threads()} threads)"]
    for name in ("hmmlearn", "dynamax", "pomegranate", "jax", "torch", "numba", "numpy"):
        try:
            module = __import__(name)
            versions.append(f"{name} {getattr(module, '__version__', '?')}")
        except ImportError:
            versions.append(f"{name} -")
    procs = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(args.busy)]
    try:
        time.sleep(1.0 if procs else 0.0)
        print(f"# {cpu_name()}, {os.cpu_count()} CPUs; {', '.join(versions)}")
        start_load = _load()
        print(f"# {args.busy} busy background processes; load average at start: {start_load}")
        print(f"# best of {args.repeats} interleaved rounds; EM: time per iteration\n")
        print(header())
        results = run(args)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    skipped = [f"{r['task']} K={r['K']} T={r['T']:,}: {lib} ({why})"
               for r in results for lib, why in r["skipped"].items()]
    if skipped:
        print("\nskipped: " + "; ".join(skipped))
    slow = [r for r in results if "hmmlearn" in r["best"] and "hiddenstate" in r["best"]
            and r["best"]["hmmlearn"] < r["best"]["hiddenstate"]]
    print(f"\ncells where hmmlearn is faster: {len(slow)} of "
          f"{sum('hmmlearn' in r['best'] for r in results)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"busy": args.busy, "versions": versions, "results": results}, f,
                      indent=1)
    if args.png:
        plot(results, args.png, f"{cpu_name()}, {args.busy} busy processes, load average "
                                f"{start_load} at the start; {', '.join(versions[:4])}")


if __name__ == "__main__":
    main()

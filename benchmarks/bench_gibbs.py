"""learn="gibbs": one sweep against one EM iteration, effective samples per second, and
NumPyro's NUTS on the same HMM with its hidden states summed out.

    .venv/bin/python benchmarks/bench_gibbs.py                     # ~15 minutes, shared box
    .venv/bin/python benchmarks/bench_gibbs.py --quick             # smaller, no NUTS
    .venv/bin/python benchmarks/bench_gibbs.py --ref-python /work/venv-bench/bin/python

**Sweep vs EM iteration** (target: a sweep costs at most 1.5x an iteration). Workload (a) of
``bench_learn_modes.py`` (categorical HMM, K = 10, W = 50, 200 sequences x 1000) and a
Gaussian one (K = 8, diagonal covariances, D = 4, 200 x 1000, drawn from a random sticky
HMM), and an HSMM (K = 5, Poisson durations, ``max_duration`` 50, Gaussian emissions, 20 x
1000, drawn from a teacher with mean durations 6..21). From the same parameters:
``--n-iter`` EM iterations (``learn.fit``, ``tol=-inf``)
and as many Gibbs sweeps (``learn.gibbs``'s chain loop: FFBS, counts, the log joint, one
conjugate draw per block; no relabelling, which runs once after the chains). Median of
``--repeats`` runs, interleaved; with one numba thread and with all of them (on a shared
machine the parallel kernels wait for each other when a neighbour takes a core).

**Effective samples per second.** A small HMM both samplers can run to convergence:
categorical, K = 3, W = 4, 20 sequences x 50 symbols from a sticky teacher, Dirichlet(1)
priors on the start, every transition row and every emission row. hs: 4 chains x
(``--burn-in`` + ``--draws``) sweeps; NumPyro: 4 chains of NUTS (``--burn-in`` warm-up
steps, ``--draws`` samples), the model written here with the states summed out by the
forward algorithm (``jax.lax.scan`` in log space, ``numpyro.factor``) and the same
Dirichlet priors, run in ``--ref-python`` (a venv with numpyro and jax; the library does
not depend on them). For both, the draws of the transition matrix are relabelled by the
same rule (:func:`hiddenstate.learn.gibbs.relabel_draws`), the bulk ESS of every entry is
ArviZ's, and ESS/s divides the smallest and the median ESS by the sampling wall time (NUTS:
after compilation, which is reported apart). Both posterior means of the transition
matrix are printed, to show it is the same posterior.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import numba
import numpy as np
from _common import cpu_name

import hiddenstate as hs
from hiddenstate import inference, learn
from hiddenstate.learn import gibbs
from hiddenstate.learn.gibbs import StateGroup, relabel_draws

TARGET = 1.5
#: the small workload's emission rows (they tell its three states apart)
EMISSIONS = np.array([[0.7, 0.1, 0.1, 0.1], [0.1, 0.7, 0.1, 0.1], [0.1, 0.1, 0.4, 0.4]])
REPO = Path(__file__).resolve().parent.parent


def random_stochastic(rng, shape, sticky=0.0):
    p = rng.random(shape) + 0.2
    p = p / p.sum(axis=-1, keepdims=True)
    if sticky:
        p = (1 - sticky) * p + sticky * np.eye(shape[0])
    return p


def categorical_workload(seed=2024, K=10, W=50, n_seq=200, seq_len=1000):
    """Workload (a) of bench_learn_modes.py / bench_vs_hmmlearn.py."""
    rng = np.random.default_rng(seed)
    lengths = np.full(n_seq, seq_len)
    start, trans, emis = (random_stochastic(rng, K), random_stochastic(rng, (K, K)),
                          random_stochastic(rng, (K, W)))
    states = inference.sample_chain(start, trans, int(lengths.sum()), rng)
    cum = np.cumsum(emis, axis=1)[states]
    X = (rng.random(len(states))[:, None] > cum).sum(axis=1)
    init = {"startprob": random_stochastic(rng, K), "transmat": random_stochastic(rng, (K, K)),
            "emission": {"emissionprob": random_stochastic(rng, (K, W))}}
    return X[:, None], lengths, W, init


def gaussian_workload(seed=7, K=8, D=4, n_seq=200, seq_len=1000):
    rng = np.random.default_rng(seed)
    lengths = np.full(n_seq, seq_len)
    trans = random_stochastic(rng, (K, K), sticky=0.8)
    states = inference.sample_chain(np.full(K, 1 / K), trans, int(lengths.sum()), rng)
    means = rng.normal(0, 3, (K, D))
    X = means[states] + rng.normal(size=(len(states), D))
    init = {"startprob": np.full(K, 1 / K), "transmat": random_stochastic(rng, (K, K)),
            "emission": {"means": means + rng.normal(size=(K, D)), "covars": np.ones((K, D))}}
    return X, lengths, D, init


def build(X, lengths, n_features, emission, K, mode):
    kw = {} if mode == "em" else {"startprob_prior": 1.0, "transmat_prior": 1.0}
    if mode == "gibbs" and emission == "categorical":
        kw["emissionprob_prior"] = 1.0
    model = hs.HMM(n_states=K, emission=emission, covariance_type="diag", learn=mode, **kw)
    Xv, seqs = model.validate_data(X, lengths, n_features)
    return model.problem(model.emission_family(n_features, Xv), Xv, seqs)


def hsmm_workload(seed=5, K=5, D=50, n_seq=20, seq_len=1000):
    """An HSMM with Poisson durations (means 6..21) and unit Gaussian noise around means 2
    apart; the starting point: the teacher's parameters, the durations' rates halved."""
    teacher = hs.HSMM(K, duration="poisson", max_duration=D, emission="gaussian",
                      n_features=1)
    A = np.full((K, K), 1 / (K - 1))
    np.fill_diagonal(A, 0.0)
    teacher.startprob_, teacher.transmat_ = np.full(K, 1 / K), A
    teacher.duration_rates_ = np.linspace(5, 20, K)
    teacher.means_, teacher.covars_ = 2.0 * np.arange(K)[:, None], np.ones((K, 1))
    X = np.concatenate([teacher.sample(seq_len, random_state=seed + i)[0]
                        for i in range(n_seq)])
    mask = ~np.eye(K, dtype=bool)
    init = {"startprob": np.full(K, 1 / K), "transmat": A[mask],
            "emission": {"means": 2.0 * np.arange(K)[:, None], "covars": np.ones((K, 1))},
            "durations": {"duration_rates": np.linspace(5, 20, K) / 2}}
    return X, [seq_len] * n_seq, 1, init


def build_hsmm(X, lengths, mode, K, D=50):
    kw = {} if mode == "em" else {"startprob_prior": 1.0, "transmat_prior": 1.0}
    model = hs.HSMM(K, duration="poisson", max_duration=D, emission="gaussian", learn=mode,
                    **kw)
    Xv, seqs = model.validate_data(X, lengths, 1)
    return model.problem(model.emission_family(1, Xv), Xv, seqs)


def time_sweeps(workload, emission, n_iter, repeats):
    X, lengths, n_features, init = workload
    K = len(init["startprob"])
    which = "ste" if emission == "categorical" else "stmc"
    if emission == "hsmm":
        which = "stmcd"
        em_problem = build_hsmm(X, lengths, "em", K)
        gb_problem = build_hsmm(X, lengths, "gibbs", K)
    else:
        em_problem = build(X, lengths, n_features, emission, K, "em")
        gb_problem = build(X, lengths, n_features, emission, K, "gibbs")

    def em():
        learn.fit(em_problem, "em", init, learn.ConvergenceMonitor(-np.inf, n_iter), which)

    def sweeps():
        gibbs._run_chain(gb_problem, init, which, n_iter, 0, 1, np.random.default_rng(0), None)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        em()
        sweeps()  # compile
        t_em, t_gb = [], []
        for _ in range(repeats):
            for fn, out in ((em, t_em), (sweeps, t_gb)):
                t0 = time.perf_counter()
                fn()
                out.append((time.perf_counter() - t0) / n_iter)
    return float(np.median(t_em)), float(np.median(t_gb))


# -- ESS per second: hs against NumPyro NUTS ------------------------------------------------------
def small_workload(seed=11, K=3, W=4, n_seq=20, seq_len=50):
    rng = np.random.default_rng(seed)
    trans = np.full((K, K), 0.1 / (K - 1))
    np.fill_diagonal(trans, 0.9)
    emis = EMISSIONS
    lengths = np.full(n_seq, seq_len)
    states = np.concatenate([inference.sample_chain(np.full(K, 1 / K), trans, seq_len, rng)
                             for _ in range(n_seq)])
    cum = np.cumsum(emis, axis=1)[states]
    X = (rng.random(len(states))[:, None] > cum).sum(axis=1)
    return X, lengths, K, W, trans


def transmat_group(K):
    return StateGroup(K, [("startprob", (), (0,), 0), ("transmat", (), (0, 1), 0),
                          ("emissionprob", (), (0,), 0)])


def ess_summary(transmat, startprob, emissionprob, seconds):
    """Relabel the draws (C, D, ...), then ArviZ's bulk ESS of every transmat entry."""
    from hiddenstate.learn.diagnostics import require_arviz

    az = require_arviz()
    C, D = transmat.shape[:2]
    draws = [[{"startprob": startprob[c, d], "transmat": transmat[c, d],
               "emissionprob": emissionprob[c, d]} for d in range(D)] for c in range(C)]
    aligned, _ = relabel_draws(draws, [transmat_group(transmat.shape[2])], (0, 0))
    A = np.array([[d["transmat"] for d in chain] for chain in aligned])
    B = np.array([[d["emissionprob"] for d in chain] for chain in aligned])
    ess = np.asarray(az.ess(az.convert_to_dataset({"A": A}), method="bulk")["A"]).ravel()
    return {"mean": A.mean(axis=(0, 1)), "emission_mean": B.mean(axis=(0, 1)),
            "ess_min": float(ess.min()),
            "ess_median": float(np.median(ess)), "seconds": seconds,
            "rhat_max": float(np.asarray(az.rhat(az.convert_to_dataset({"A": A}))["A"]).max())}


def teacher_order(emission_mean: np.ndarray, teacher: np.ndarray) -> np.ndarray:
    """The permutation of the states that best matches the teacher's emission rows
    (Hungarian algorithm on their squared distance)."""
    from scipy.optimize import linear_sum_assignment

    cost = ((emission_mean[:, None, :] - teacher[None, :, :]) ** 2).sum(axis=2)
    rows, cols = linear_sum_assignment(cost)
    perm = np.empty(len(teacher), dtype=np.int64)
    perm[cols] = rows
    return perm


def run_hs(X, lengths, K, W, burn_in, draws):
    model = hs.HMM(n_states=K, learn="gibbs", startprob_prior=1.0, transmat_prior=1.0,
                   emissionprob_prior=1.0, random_state=0,
                   learner_options={"n_samples": burn_in + draws, "burn_in": burn_in,
                                    "n_chains": 4, "check_convergence": False})
    hs.HMM(n_states=K, learn="gibbs", startprob_prior=1.0, transmat_prior=1.0,
           emissionprob_prior=1.0, learner_options={"n_samples": 3, "burn_in": 1,
                                                    "n_chains": 1,
                                                    "check_convergence": False}).fit(X, lengths)
    t0 = time.perf_counter()
    model.fit(X, lengths)
    seconds = time.perf_counter() - t0
    s = model.posterior_samples_
    return ess_summary(s["transmat_"], s["startprob_"], s["emissionprob_"], seconds)


NUTS = r'''
import json, sys, time
import numpy as np
import jax, jax.numpy as jnp
import numpyro, numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS
jax.config.update("jax_enable_x64", True)
numpyro.set_host_device_count(1)
spec = json.load(open(sys.argv[1]))
X = np.array(spec["X"]); lengths = spec["lengths"]; K, W = spec["K"], spec["W"]
seqs = jnp.array(X.reshape(len(lengths), lengths[0]))

def model(seqs):
    start = numpyro.sample("startprob", dist.Dirichlet(jnp.ones(K)))
    trans = numpyro.sample("transmat", dist.Dirichlet(jnp.ones((K, K))).to_event(1))
    emis = numpyro.sample("emissionprob", dist.Dirichlet(jnp.ones((K, W))).to_event(1))
    log_t, log_e = jnp.log(trans), jnp.log(emis)

    def step(alpha, x):   # the forward algorithm in log space: the states summed out
        alpha = jax.nn.logsumexp(alpha[:, :, None] + log_t[None], axis=1) + log_e[:, x].T
        return alpha, None

    alpha0 = jnp.log(start)[None, :] + log_e[:, seqs[:, 0]].T
    alpha, _ = jax.lax.scan(step, alpha0, seqs[:, 1:].T)
    numpyro.factor("loglik", jax.nn.logsumexp(alpha, axis=1).sum())

out = {}
kernel = NUTS(model)
mcmc = MCMC(kernel, num_warmup=spec["burn_in"], num_samples=spec["draws"], num_chains=4,
            chain_method="sequential", progress_bar=False)
t0 = time.perf_counter()
mcmc.warmup(jax.random.PRNGKey(0), seqs, extra_fields=())   # compiles, then warms up
t1 = time.perf_counter()
mcmc.run(jax.random.PRNGKey(1), seqs)
t2 = time.perf_counter()
s = mcmc.get_samples(group_by_chain=True)
np.savez(sys.argv[2], **{k: np.asarray(v) for k, v in s.items()})
json.dump({"warmup_seconds": t1 - t0, "sample_seconds": t2 - t1,
           "jax": jax.__version__, "numpyro": numpyro.__version__}, open(sys.argv[3], "w"))
'''


def run_nuts(ref_python, X, lengths, K, W, burn_in, draws):
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.json"
        spec.write_text(json.dumps({"X": X.tolist(), "lengths": lengths.tolist(), "K": K,
                                    "W": W, "burn_in": burn_in, "draws": draws}))
        script = Path(tmp) / "nuts.py"
        script.write_text(NUTS)
        out_npz, out_json = Path(tmp) / "draws.npz", Path(tmp) / "times.json"
        subprocess.run([ref_python, str(script), str(spec), str(out_npz), str(out_json)],
                       check=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
        s = dict(np.load(out_npz))
        times = json.loads(out_json.read_text())
    summary = ess_summary(s["transmat"], s["startprob"], s["emissionprob"],
                          times["sample_seconds"])
    summary["warmup_seconds"] = times["warmup_seconds"]
    summary["versions"] = f"numpyro {times['numpyro']}, jax {times['jax']}"
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n-iter", type=int, default=10)
    parser.add_argument("--burn-in", type=int, default=500)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--ref-python", default="/work/venv-bench/bin/python")
    args = parser.parse_args()
    if args.quick:
        args.repeats, args.n_iter, args.burn_in, args.draws = 3, 5, 200, 400
    print(f"# learn='gibbs': sweeps, effective samples per second, NUTS\n\n{cpu_name()}, "
          f"{os.cpu_count()} CPUs, numba {numba.__version__} with "
          f"{numba.config.NUMBA_NUM_THREADS} threads; load average before the run "
          f"{os.getloadavg()[0]:.1f}.\n")
    print(f"## One sweep vs one EM iteration (median of {args.repeats}, {args.n_iter} "
          "iterations each)\n")
    print(f"| workload | numba threads | EM ms / iteration | Gibbs ms / sweep | ratio | "
          f"target <= {TARGET}x |")
    print("|---|---|---|---|---|---|")
    workloads = (("categorical K=10, W=50, 200 x 1000", categorical_workload(), "categorical"),
                 ("Gaussian diag K=8, D=4, 200 x 1000", gaussian_workload(), "gaussian"),
                 ("HSMM Poisson durations K=5, max_duration 50, Gaussian, 20 x 1000",
                  hsmm_workload(), "hsmm"))
    for threads in sorted({1, numba.config.NUMBA_NUM_THREADS}):
        numba.set_num_threads(threads)
        for label, workload, emission in workloads:
            em, gb = time_sweeps(workload, emission, args.n_iter, args.repeats)
            ratio = gb / em
            print(f"| {label} | {threads} | {1e3 * em:.1f} | {1e3 * gb:.1f} | {ratio:.2f} | "
                  f"{'met' if ratio <= TARGET else 'MISSED'} |", flush=True)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    X, lengths, K, W, trans = small_workload()
    print(f"\n## Effective samples per second (K={K}, W={W}, {len(lengths)} x {lengths[0]}; "
          f"4 chains x {args.burn_in} + {args.draws})\n")
    rows = [("hs learn='gibbs'", run_hs(X[:, None], lengths, K, W, args.burn_in,
                                        args.draws))]
    if not args.quick and Path(args.ref_python).exists():
        rows.append(("NumPyro NUTS (states summed out)",
                     run_nuts(args.ref_python, X, lengths, K, W, args.burn_in, args.draws)))
    print("| sampler | sampling s | min ESS | median ESS | min ESS/s | median ESS/s | "
          "max R-hat |")
    print("|---|---|---|---|---|---|---|")
    for label, r in rows:
        print(f"| {label} | {r['seconds']:.1f} | {r['ess_min']:.0f} | {r['ess_median']:.0f} "
              f"| {r['ess_min'] / r['seconds']:.1f} | {r['ess_median'] / r['seconds']:.1f} | "
              f"{r['rhat_max']:.3f} |")
    for label, r in rows:
        extra = (f" (warm-up with compilation {r['warmup_seconds']:.1f} s; {r['versions']})"
                 if "warmup_seconds" in r else "")
        # each sampler's labels are its own first draw's: shown in the teacher's order
        p = teacher_order(r["emission_mean"], EMISSIONS)
        print(f"\n{label}{extra}: posterior mean transition matrix (states in the teacher's "
              "order)\n")
        print("```\n" + np.array2string(r["mean"][np.ix_(p, p)], precision=3) + "\n```")
    print("\nteacher transition matrix:\n\n```\n" + np.array2string(trans, precision=3)
          + "\n```")
    print(f"\nload average after the run {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

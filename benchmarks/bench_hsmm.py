"""Explicit-duration HSMMs: the numba segment recursion against a vectorised NumPy
implementation of the same recursion; negative-binomial durations run as an HMM over their
phases against hs.HMM with as many states; the memory of the E-step at T = 10^6, K = 10,
D = 500; and ssm's HSMM (Linderman et al., PyPI 0.0.1) where an interpreter with it is given.

    .venv/bin/python benchmarks/bench_hsmm.py                       # about five minutes
    .venv/bin/python benchmarks/bench_hsmm.py --memory-steps 0      # skip the 10^6 steps
    .venv/bin/python benchmarks/bench_hsmm.py --ssm-python /path/to/python-with-ssm

1. **One EM iteration**, K = 10 states, D = 100, 100 sequences x 1,000 one-dimensional
   Gaussian observations, nonparametric durations: hiddenstate (``learn.fit`` with
   ``n_iter=1`` on the model's Problem: E-step and M-step) against the NumPy reference
   below (the same forward-backward over (state, age), vectorised over sequences, states
   and ages, one time step per Python iteration; the same M-step). Both compute the same
   numbers (the log-likelihoods are printed).
2. **Phases**: negative-binomial durations with shapes r = (2, 3, 4, 2, 3) (M = 14
   phases), 200 sequences x 500 steps: the HSMM's E-step by ``engine="phases"`` against
   the E-step of ``hs.HMM(14)``, and against ``engine="segments"``.
3. **Memory**: peak resident memory of a subprocess that runs the E-step (posteriors and
   expected counts) of one Gaussian sequence of T steps, K = 10, D = 500; the estimate of
   ``hiddenstate.segments.memory_estimate`` next to it.

Timings are the best of ``--repeats`` runs after a warm-up, interleaved; the load average
is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
from _common import best_time, cpu_name

import hiddenstate as hs
from hiddenstate import inference, learn, segments
from hiddenstate.learn import ConvergenceMonitor


# -- the NumPy reference of the segment recursion -----------------------------------------------
def numpy_estep(pi, A, rho, haz, E, offsets, batch=20):
    """The forward-backward over (state, age) of :mod:`hiddenstate.kernels.semimarkov`,
    vectorised over sequences (all of length T), states and ages. ``E`` (S, T, K): emission
    probabilities scaled per row, ``offsets`` (S, T) their log scales; ``rho``, ``haz``
    (K, D). Returns (loglik per sequence, start, trans, post (S, T, K), complete, censored)."""
    S_, T, K = E.shape
    D = rho.shape[1]
    loglik = np.zeros(S_)
    start_c, trans = np.zeros(K), np.zeros((K, K))
    complete, censored = np.zeros((K, D)), np.zeros((K, D))
    post = np.zeros((S_, T, K))
    for b0 in range(0, S_, batch):
        e = E[b0:b0 + batch]
        B = len(e)
        alpha = np.empty((T, B, K, D))
        n = np.empty((T, B))
        u = np.zeros((B, K, D))
        start = np.broadcast_to(pi, (B, K))
        for t in range(T):
            new = np.empty((B, K, D))
            new[:, :, 0] = start * rho[:, 0]
            new[:, :, 1:] = u[:, :, :-1] * rho[:, 1:]
            new *= e[:, t, :, None]
            n[t] = new.sum(axis=(1, 2))
            new /= n[t][:, None, None]
            alpha[t] = u = new
            start = (new * haz).sum(axis=2) @ A
        loglik[b0:b0 + B] = np.log(n).sum(axis=0) + offsets[b0:b0 + B].sum(axis=1)
        beta = np.ones((B, K, D))
        censored += alpha[T - 1].sum(axis=0)
        post[b0:b0 + B, T - 1] = alpha[T - 1].sum(axis=2)
        for t in range(T - 2, -1, -1):
            c = e[:, t + 1] / n[t + 1][:, None]                       # (B, K)
            w = rho[:, 0] * c * beta[:, :, 0]                          # entering k at t+1
            bend = w @ A.T                                             # (B, K)
            nxt = np.zeros((B, K, D))
            nxt[:, :, :-1] = rho[:, 1:] * beta[:, :, 1:]
            beta = haz * bend[:, :, None] + nxt * c[:, :, None]
            a = alpha[t]
            ah = a * haz
            complete += (ah * bend[:, :, None]).sum(axis=0)
            trans += np.einsum("bi,ij,bj->ij", ah.sum(axis=2), A, w)
            post[b0:b0 + B, t] = (a * beta).sum(axis=2)
        start_c += post[b0:b0 + B, 0].sum(axis=0)
    return loglik, start_c, trans, post, complete, censored


def load() -> str:
    try:
        return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        return "load average unknown"


# -- 1. one EM iteration ------------------------------------------------------------------------
def em_iteration(args) -> list[str]:
    K, D, S_, T = 10, 100, args.n_seq, args.length
    rng = np.random.default_rng(0)
    means = np.linspace(-4.5, 4.5, K)[:, None]
    X = means[rng.integers(0, K, size=S_ * T)] + rng.normal(size=(S_ * T, 1))
    lengths = np.full(S_, T)
    model = hs.HSMM(K, duration="nonparametric", emission="gaussian", max_duration=D)
    Xv, seqs = model.validate_data(X, lengths, None)
    family = model.emission_family(1, Xv)
    model.__dict__["_fit_max_duration"] = D
    problem = model.problem(family, Xv, seqs)
    dfam = problem.blocks["durations"]
    A = np.full((K, K), 1.0 / (K - 1)) - np.eye(K) / (K - 1)
    params = {"startprob": np.full(K, 1.0 / K), "transmat": problem.transitions.gather(A),
              "emission": {"means": means.copy(), "covars": np.full((K, 1), 1.5)},
              "durations": dfam.initialize(np.full(K, 0.9))}

    def ours():
        return learn.fit(problem, "em", params, ConvergenceMonitor(-np.inf, 1), "stemcd")

    table = inference.EmissionTable.from_log_likelihood(
        family.log_likelihood(params["emission"], Xv))
    rho, haz = dfam.chain_factors(params["durations"])
    E = table.emis.reshape(S_, T, K)
    off = table.log_offset.reshape(S_, T)

    def reference():
        loglik, start, trans, post, complete, censored = numpy_estep(
            params["startprob"], A, rho, haz, E, off)
        stats = {"startprob": start, "transmat": problem.transitions.gather(trans),
                 "emission": family.statistics(Xv, post.reshape(-1, K)),
                 "durations": dfam.statistics(complete, censored)}
        new = {name: block.mstep(params[name], stats[name], "stemcd")[0]
               for name, block in problem.blocks.items()}
        return float(loglik.sum()), new

    t_ours, fitted = best_time(ours, args.repeats)
    t_ref, (ref_ll, ref_new) = best_time(reference, max(1, args.repeats // 2))
    ll = fitted.monitor.history[0]
    same = np.allclose(ref_new["durations"]["durations"], fitted.params["durations"]["durations"],
                       rtol=1e-9, atol=1e-12)
    return [
        f"## One EM iteration: K = {K}, D = {D}, {S_} x {T} Gaussian observations",
        "",
        "| implementation | seconds | ratio |",
        "|---|---:|---:|",
        f"| hiddenstate (numba segment recursion) | {t_ours:.3f} | 1.0 |",
        f"| NumPy reference (same recursion, vectorised) | {t_ref:.3f} | "
        f"{t_ref / t_ours:.1f} |",
        "",
        f"log-likelihood: hiddenstate {ll:.6f}, NumPy {ref_ll:.6f}; same new durations: "
        f"{same}; {load()}",
        ""]


# -- 2. phases --------------------------------------------------------------------------------
def phases(args) -> list[str]:
    shapes = np.array([2, 3, 4, 2, 3])
    K, M = len(shapes), int(shapes.sum())
    S_, T = 200, 500
    m = hs.HSMM(K, duration="negative-binomial", emission="gaussian", max_duration=T,
                engine="phases")
    m.startprob_ = np.full(K, 1.0 / K)
    A = np.full((K, K), 1.0 / (K - 1)) - np.eye(K) / (K - 1)
    m.transmat_ = A
    m.means_ = np.linspace(-3, 3, K)[:, None]
    m.covars_ = np.ones((K, 1))
    m.duration_shapes_ = shapes.astype(float)
    m.duration_probs_ = np.array([0.2, 0.3, 0.25, 0.1, 0.3])
    X = np.concatenate([m.sample(T, random_state=i)[0] for i in range(S_)])
    lengths = np.full(S_, T)
    ph = m.predict_proba
    seg = hs.HSMM(**{**m.get_params(), "engine": "segments"})
    for name, value in m.learned_arrays().items():
        setattr(seg, name, value)
    expanded = segments.expand_phases(m.startprob_, m.transmat_, shapes, m.duration_probs_)
    hmm = hs.HMM(M, emission="gaussian")
    hmm.startprob_, hmm.transmat_ = expanded.startprob, expanded.transmat
    hmm.means_, hmm.covars_ = m.means_[expanded.owner], m.covars_[expanded.owner, 0]
    t_ph, p1 = best_time(lambda: ph(X, lengths), args.repeats)
    t_hmm, p2 = best_time(lambda: hmm.predict_proba(X, lengths), args.repeats)
    t_seg, p3 = best_time(lambda: seg.predict_proba(X, lengths), args.repeats)
    err = float(np.abs(p1 - p3).max())
    return [
        f"## Negative-binomial durations as an HMM over their phases: K = {K}, M = {M} phases,"
        f" {S_} x {T} steps (posteriors)",
        "",
        "| run | seconds | ratio to hs.HMM(M) |",
        "|---|---:|---:|",
        f"| hs.HMM with M = {M} states | {t_hmm:.3f} | 1.0 |",
        f"| HSMM, engine='phases' | {t_ph:.3f} | {t_ph / t_hmm:.2f} |",
        f"| HSMM, engine='segments' (D = {T}) | {t_seg:.3f} | {t_seg / t_hmm:.2f} |",
        "",
        f"phases vs segments: largest posterior difference {err:.1e}; HMM posteriors summed "
        f"by state match: {np.allclose(expanded.states(p2), p1)}; "
        f"{load()}",
        ""]


# -- 3. memory ------------------------------------------------------------------------------------
_MEMORY = textwrap.dedent("""
    import json, sys
    import numpy as np
    import hiddenstate as hs
    from hiddenstate import inference, segments
    T, K, D = int(sys.argv[1]), 10, 500
    rng = np.random.default_rng(0)
    m = hs.HSMM(K, duration="poisson", emission="gaussian", max_duration=D)
    m.startprob_ = np.full(K, 1.0 / K)
    m.transmat_ = np.full((K, K), 1.0 / (K - 1)) - np.eye(K) / (K - 1)
    m.means_ = np.linspace(-4.5, 4.5, K)[:, None]
    m.covars_ = np.ones((K, 1))
    m.duration_rates_ = np.linspace(20, 200, K)
    X = m.means_[rng.integers(0, K, size=T)] + rng.normal(size=(T, 1))
    small = np.ascontiguousarray(X[:2000])
    m.predict_proba(small)                       # compile
    import re
    def status(key):
        text = open("/proc/self/status").read()
        return int(re.search(key + r":\\s+(\\d+)", text).group(1)) * 1024
    before = status("VmHWM")                     # the peak so far: imports, compilation
    base = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")                             # reset the peak to the current size
    t0 = __import__("time").perf_counter()
    post = m.predict_proba(X)
    secs = __import__("time").perf_counter() - t0
    peak = status("VmHWM")
    seqs = inference.Sequences.from_lengths([T])
    est = sum(segments.memory_estimate("posteriors", K, D, seqs).values()) + 2 * T * K * 8
    print(json.dumps({"peak": peak, "base": base, "before": before, "estimate": est,
                      "seconds": secs,
                      "sum": float(post.sum())}))
""")


def memory(args) -> list[str]:
    T = args.memory_steps
    out = subprocess.run([sys.executable, "-c", _MEMORY, str(T)], capture_output=True,
                         text=True, check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    naive = 8.0 * T * 10 * 500
    return [
        f"## Memory: one sequence of T = {T} steps, K = 10, D = 500 (predict_proba)",
        "",
        "| quantity | MiB |",
        "|---|---:|",
        f"| resident memory before the call (interpreter, numba, data) | "
        f"{r['base'] / 2**20:.0f} |",
        f"| peak resident memory during the call (VmHWM reset before it) | "
        f"{r['peak'] / 2**20:.0f} |",
        f"| the call's share: that peak minus the memory before | "
        f"{(r['peak'] - r['base']) / 2**20:.0f} |",
        f"| (peak before the call: imports, compilation) | {r['before'] / 2**20:.0f} |",
        f"| estimate (segments.memory_estimate + table + posteriors) | "
        f"{r['estimate'] / 2**20:.0f} |",
        f"| one float64 per (t, k, d), for comparison | {naive / 2**20:.0f} |",
        "",
        f"{r['seconds']:.1f} s; posteriors sum to {r['sum']:.1f} (= T); {load()}",
        ""]


# -- 4. ssm ---------------------------------------------------------------------------------
_SSM = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import ssm
    from ssm.primitives import hmm_normalizer
    d = json.load(open(sys.argv[1]))
    K = len(d["pi"])
    X = np.array(d["X"])[:, None]
    T = len(X)
    hsmm = ssm.HSMM(K, 1, observations="gaussian", transitions="nb")
    tr = hsmm.transitions
    # ssm's p is the probability of going on (heads), hiddenstate's of ending; set directly:
    # the params setter asserts rs.shape == (K) (an int), which fails for every rs
    tr.Ps, tr.rs, tr.ps = np.array(d["A"]), np.array(d["r"], dtype=int), 1.0 - np.array(d["p"])
    tr._transition_matrix = None
    hsmm.observations.mus = np.array(d["mu"])[:, None]
    hsmm.observations._sqrt_Sigmas = np.array(d["sd"])[:, None, None]
    hsmm.init_state_distn.log_pi0 = np.log(np.array(d["pi"]))
    m = tr.state_map
    inp, mask = np.zeros((T, 0)), np.ones((T, 1), dtype=bool)
    log_Ps = tr.log_transition_matrices(X, inp, mask, None)
    log_likes = hsmm.observations.log_likelihoods(X, inp, mask, None)
    first = np.concatenate(([0], np.cumsum(tr.rs)[:-1]))
    log_pi = np.full(len(m), -np.inf)
    log_pi[first] = np.log(np.array(d["pi"]))
    def run():
        return hmm_normalizer(log_pi, log_Ps, log_likes[:, m])
    ll = run()
    t0 = time.perf_counter(); run(); t = time.perf_counter() - t0
    print(json.dumps({"loglik": float(ll), "seconds": t,
                      "ssm_loglik": float(hsmm.log_likelihood(X))}))
""")


def ssm_compare(args) -> list[str]:
    if not args.ssm_python:
        return ["## ssm (Linderman et al.)", "",
                "not run: pass --ssm-python (ssm 0.0.1 from PyPI builds on Python 3.11 with "
                "`pip install --no-build-isolation ssm` but imports `autograd.scipy.misc`, "
                "which autograd >= 1.3 removed; pyhsmm 0.1.7 does not build: its setup.py "
                "downloads Eigen, and its dependency pybasicbayes 0.2.2 fails with "
                "`AttributeError: 'dict' object has no attribute '__NUMPY_SETUP__'`)", ""]
    shapes, p = np.array([2, 3, 1]), np.array([0.3, 0.2, 0.4])
    K = len(shapes)
    m = hs.HSMM(K, duration="negative-binomial", emission="gaussian", max_duration=2000)
    m.startprob_ = np.array([0.5, 0.3, 0.2])
    m.transmat_ = np.array([[0.0, 0.6, 0.4], [0.3, 0.0, 0.7], [0.5, 0.5, 0.0]])
    m.means_, m.covars_ = np.array([[-1.0], [0.5], [2.0]]), np.array([[1.0], [0.5], [2.0]])
    m.duration_shapes_, m.duration_probs_ = shapes.astype(float), p
    X, _ = m.sample(2000, random_state=0)
    path = "/tmp/hiddenstate_bench_hsmm_ssm.json"
    with open(path, "w") as f:
        json.dump({"pi": m.startprob_.tolist(), "A": m.transmat_.tolist(),
                   "r": shapes.tolist(), "p": p.tolist(), "mu": m.means_[:, 0].tolist(),
                   "sd": np.sqrt(m.covars_[:, 0, 0]).tolist(), "X": X[:, 0].tolist()}, f)
    out = subprocess.run([args.ssm_python, "-c", _SSM, path], capture_output=True, text=True)
    if out.returncode:
        return ["## ssm", "", f"failed: {out.stderr.strip().splitlines()[-1]}", ""]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    seg = hs.HSMM(**{**m.get_params(), "engine": "segments"})
    for name, value in m.learned_arrays().items():
        setattr(seg, name, value)
    ours, t = seg.score(X), best_time(lambda: seg.score(X), args.repeats)[0]
    auto, t_auto = m.score(X), best_time(lambda: m.score(X), args.repeats)[0]
    return [f"## ssm 0.0.1 (negative-binomial durations, K = {K}, r = {shapes.tolist()}, "
            "T = 2000): log-likelihood of the same parameters", "",
            "| implementation | log-likelihood | seconds |", "|---|---:|---:|",
            f"| hiddenstate, segment recursion (D = T) | {ours:.8f} | {t:.4f} |",
            f"| hiddenstate, engine='auto' (the phases here) | {auto:.8f} | {t_auto:.4f} |",
            f"| ssm: its phase HMM (transitions.transition_matrix) and hmm_normalizer, "
            f"started in each state's first phase | {r['loglik']:.8f} | {r['seconds']:.4f} |",
            f"| ssm.HSMM.log_likelihood (starts every phase of a state with pi_k, so its "
            f"initial vector sums to {float(m.startprob_ @ shapes):.1f}) | "
            f"{r['ssm_loglik']:.8f} | |",
            "", f"difference (first two rows): {abs(ours - r['loglik']):.1e}; {load()}", ""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-seq", type=int, default=100)
    ap.add_argument("--length", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--memory-steps", type=int, default=10**6)
    ap.add_argument("--ssm-python", default=None)
    args = ap.parse_args()
    lines = [f"# HSMM benchmarks ({cpu_name()}, {os.cpu_count()} CPUs)", ""]
    lines += em_iteration(args)
    lines += phases(args)
    if args.memory_steps:
        lines += memory(args)
    lines += ssm_compare(args)
    print("\n".join(lines))


if __name__ == "__main__":
    t0 = time.time()
    main()
    print(f"total {time.time() - t0:.0f} s")

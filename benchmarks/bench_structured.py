"""Banded HMMs: the sparse kernels (cost per step proportional to the allowed transitions)
against the dense lockstep kernels on the same structured model, and a banded model with
K = 10^4 states that only the sparse kernels can run.

    .venv/bin/python benchmarks/bench_structured.py              # about two minutes
    .venv/bin/python benchmarks/bench_structured.py --big 0      # skip K = 10^4

Workload: a 1-D Gaussian HMM whose hidden level moves at most ``bandwidth`` = 3 states per
step (``topology="banded"``), state k emitting N(k, 1.5^2); ``--n-seq`` sequences of
``--length`` steps of a random walk on the levels. Both paths start from the same
parameters (``init_params="st"``: the chain's start, means and variances set by hand) and
run ``--n-iter`` EM iterations with ``tol=-inf``; the dense path is the same model with
``hiddenstate.models.hmm.chain.SPARSE_DENSITY = 0`` (structured, so zeros stay zero, but run by
the dense kernels). Timings are the best of ``--repeats`` runs after a warm-up; the final
log-likelihoods are printed to show that both paths compute the same model.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _common import best_time, cpu_name

import hiddenstate as hs
from hiddenstate.errors import DegenerateStateWarning
from hiddenstate.models.hmm import chain as hmm_chain

BANDWIDTH = 3


def data(K: int, n_seq: int, length: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    steps = rng.integers(-BANDWIDTH, BANDWIDTH + 1, (n_seq, length))
    steps[:, 0] = rng.integers(0, K, n_seq)
    z = np.empty_like(steps)
    z[:, 0] = steps[:, 0]
    for t in range(1, length):
        z[:, t] = np.clip(z[:, t - 1] + steps[:, t], 0, K - 1)
    return (z + 1.5 * rng.standard_normal(z.shape)).reshape(-1, 1)


def model(K: int, n_iter: int) -> hs.HMM:
    m = hs.HMM(K, emission="gaussian", topology="banded", bandwidth=BANDWIDTH,
               init_params="st", n_iter=n_iter, tol=-np.inf, random_state=0)
    m.means_ = np.arange(K, dtype=float)[:, None]
    m.covars_ = np.full((K, 1), 1.5**2)
    return m


def run(K: int, X, lengths, n_iter: int, sparse: bool, repeats: int):
    """(seconds per EM iteration, seconds per score, final log-likelihood)."""
    saved = hmm_chain.SPARSE_DENSITY
    hmm_chain.SPARSE_DENSITY = saved if sparse else 0.0
    try:
        t_fit, m = best_time(lambda: model(K, n_iter).fit(X, lengths), repeats)
        t_score, ll = best_time(lambda: m.score(X, lengths), repeats)
    finally:
        hmm_chain.SPARSE_DENSITY = saved
    return t_fit / n_iter, t_score, ll


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 400, 1000])
    ap.add_argument("--big", type=int, default=10_000, help="K run by the sparse path only")
    ap.add_argument("--n-seq", type=int, default=4)
    ap.add_argument("--length", type=int, default=500)
    ap.add_argument("--n-iter", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    # the walks visit a fraction of the levels: the others keep their parameters (warned)
    warnings.simplefilter("ignore", DegenerateStateWarning)
    lengths = [args.length] * args.n_seq
    print(f"banded Gaussian HMM, bandwidth {BANDWIDTH}, {args.n_seq} x {args.length} steps, "
          f"{args.n_iter} EM iterations; {cpu_name()}\n")
    print("| K | allowed transitions | dense s/iter | sparse s/iter | speed-up | dense score s "
          "| sparse score s | speed-up | log-likelihoods agree |")
    print("|---|---|---|---|---|---|---|---|---|")
    for K in args.sizes:
        X = data(K, args.n_seq, args.length)
        nnz = model(K, 1)._transitions().nnz
        d_fit, d_score, d_ll = run(K, X, lengths, args.n_iter, False, args.repeats)
        s_fit, s_score, s_ll = run(K, X, lengths, args.n_iter, True, args.repeats)
        agree = abs(d_ll - s_ll) <= 1e-9 * abs(d_ll)
        print(f"| {K} | {nnz} | {d_fit:.3f} | {s_fit:.4f} | {d_fit / s_fit:.1f}x | "
              f"{d_score:.3f} | {s_score:.4f} | {d_score / s_score:.1f}x | {agree} |")
    if args.big:
        K = args.big
        X = data(K, args.n_seq, args.length)
        t0 = time.perf_counter()
        m = model(K, args.n_iter).fit(X, lengths)
        t_fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        ll = m.score(X, lengths)
        t_score = time.perf_counter() - t0
        print(f"\nK = {K} (sparse kernels only; a dense step would cost K^2 = {K * K:.0e}): "
              f"fit ({args.n_iter} EM iterations, first call, everything included) "
              f"{t_fit:.1f} s, score {t_score:.2f} s, log-likelihood {ll:.1f}")


if __name__ == "__main__":
    main()

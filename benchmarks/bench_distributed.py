"""Categorical EM on a Dask LocalCluster vs the local fit: time per iteration and overhead.

    .venv/bin/python benchmarks/bench_distributed.py               # about 4 minutes on 2 cores
    .venv/bin/python benchmarks/bench_distributed.py --n-seq 2000  # 10x the data

Workload (issues 14, 21): categorical HMM, K = 10, 50 symbols, 200 sequences x 1,000
symbols (sampled from a random HMM, seed 0), EM from the same random start, ``--n-iter``
iterations with ``tol=-inf``. Configurations:

- local: ``HMM.fit`` in this process (the kernels on every core);
- 1 worker: ``hiddenstate.distributed.fit`` on a LocalCluster of one worker process (one
  partition; the kernels on one thread: the worker's nanny sets ``OMP_NUM_THREADS=1``,
  which ``hiddenstate.threads`` follows): the price of going through Dask;
- 2 workers: two worker processes, one kernel thread each, two partitions.

The machine this runs on is shared, so the local and the distributed fits are
**interleaved**: each of ``--rounds`` rounds times one local fit and then one distributed
fit (the cluster stays up; one untimed fit first warms up imports and compiled kernels).
Per fit the median time per iteration (from iteration 2: no set-up) is taken; the table
gives, over the rounds, the median of those and the median of the per-round ratios
distributed / local. The final log-likelihoods show that the fits agree (1e-12).
Target: 1 worker < 1.5x local.

The script then measures the pieces of a cost model for many machines (see
``docs/distributed.md``): the E-step time per observation of one partition, the merge of
two partitions' statistics, the bytes of the statistics, and Dask's own cost per
iteration on tiny data (one worker round trip; per further partition).
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _common import cpu_name  # noqa: E402

import hiddenstate as hs  # noqa: E402
from hiddenstate import distributed as hsd  # noqa: E402
from hiddenstate.learn import merge_statistics  # noqa: E402

K, W = 10, 50
TARGET = 1.5


def make_data(n_seq: int, T: int):
    rng = np.random.default_rng(0)
    gen = hs.HMM(K, emission="categorical", init_params="")
    gen.startprob_ = rng.dirichlet(np.ones(K))
    gen.transmat_ = rng.dirichlet(np.ones(K), size=K)
    gen.emissionprob_ = rng.dirichlet(np.ones(W), size=K)
    X, _ = gen.sample(n_seq * T, random_state=1)
    return X, np.full(n_seq, T)


def kernel_threads() -> int:
    """The threads a kernel call may use (run in each worker)."""
    from hiddenstate import threads

    return threads.get_num_threads()


def model(n_iter: int) -> hs.HMM:
    """EM from a fixed random start (``init_params=""``), ``tol=-inf``."""
    rng = np.random.default_rng(2)
    m = hs.HMM(K, emission="categorical", n_features=W, init_params="", n_iter=n_iter, tol=-np.inf)
    m.startprob_ = rng.dirichlet(np.ones(K))
    m.transmat_ = rng.dirichlet(np.ones(K), size=K)
    m.emissionprob_ = rng.dirichlet(np.ones(W), size=K)
    return m


class Clock:
    """A fit callback that records the time of every iteration."""

    def __init__(self):
        self.stamps = []

    def __call__(self, iteration, objective):
        self.stamps.append(time.perf_counter())

    def per_iteration(self) -> list[float]:
        return list(np.diff(self.stamps))  # from iteration 2 on: no set-up


def timed(fit, n_iter: int) -> tuple[float, float]:
    """(median seconds per iteration, final log-likelihood) of one fit."""
    clock = Clock()
    m = fit(model(n_iter), clock)
    return statistics.median(clock.per_iteration()), m.monitor_.history[-1]


def interleaved(local, dist, n_iter: int, rounds: int) -> dict:
    """``rounds`` rounds of (local fit, distributed fit) after one untimed fit of each."""
    local(model(2), Clock())
    dist(model(2), Clock())
    out = {"local": [], "dist": [], "ratio": [], "ll": []}
    for _ in range(rounds):
        t_local, ll_local = timed(local, n_iter)
        t_dist, ll_dist = timed(dist, n_iter)
        out["local"].append(t_local)
        out["dist"].append(t_dist)
        out["ratio"].append(t_dist / t_local)
        out["ll"] += [ll_local, ll_dist]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-seq", type=int, default=200)
    ap.add_argument("--length", type=int, default=1000)
    ap.add_argument("--n-iter", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    X, lengths = make_data(args.n_seq, args.length)
    print(f"# distributed EM: K={K}, W={W}, {args.n_seq} sequences x {args.length}, "
          f"{args.n_iter} iterations, {args.rounds} interleaved rounds")
    print(f"# {cpu_name()}, {os.cpu_count()} cores, kernel threads here "
          f"{hs.threads.get_num_threads()}, "
          f"load average {os.getloadavg()[0]:.1f} at the start\n")

    def local(m, cb):
        return m.fit(X, lengths, callback=cb)

    rows, lls = [], []
    cores = os.cpu_count() or 1
    tiny_X, tiny_lengths = make_data(16, 100)
    tiny = {}
    for n_workers, threads in ((1, cores), (2, max(1, cores // 2))):
        # in this process's environment, which the worker processes inherit: a
        # LocalCluster's env= comes too late (the workers have read their thread count by
        # then, and their nannies set OMP_NUM_THREADS=1), and the nannies, which run in
        # this process, keep a NUMBA_NUM_THREADS set here by an earlier pre-spawn-environ
        os.environ["NUMBA_NUM_THREADS"] = str(threads)
        with hsd.local_client(n_workers) as client:
            used = sorted(set(client.run(kernel_threads).values()))
            res = interleaved(local, lambda m, cb, c=client, n=n_workers: hsd.fit(
                m, X, c, lengths=lengths, n_partitions=n, callback=cb), args.n_iter,
                args.rounds)
            rows.append((f"{n_workers} worker{'s' * (n_workers > 1)} "
                         f"({'/'.join(map(str, used))} kernel thread"
                         f"{'s' * (max(used) > 1)} each)", res))
            lls += res["ll"]
            if n_workers == 1:  # Dask's own cost: tiny data, 1 or 16 partitions
                for p in (1, 16):
                    tiny[p] = interleaved(
                        lambda m, cb: m.fit(tiny_X, tiny_lengths, callback=cb),
                        lambda m, cb, c=client, p=p: hsd.fit(
                            m, tiny_X, c, lengths=tiny_lengths, n_partitions=p,
                            callback=cb), 8, args.rounds)
    med = statistics.median
    print("| configuration | local s/iter | distributed s/iter | distributed / local "
          "(median of rounds) | per-round ratios |")
    print("|---|---:|---:|---:|---|")
    for name, res in rows:
        ratios = ", ".join(f"{r:.2f}" for r in res["ratio"])
        print(f"| {name} | {med(res['local']):.4f} | {med(res['dist']):.4f} | "
              f"{med(res['ratio']):.2f}x | {ratios} |")
    ratio = med(rows[0][1]["ratio"])
    print(f"\n1 worker / local = {ratio:.2f}x (target < {TARGET}x): "
          f"{'met' if ratio < TARGET else 'NOT met'}; load average now "
          f"{os.getloadavg()[0]:.1f}")
    agree = max(abs(ll - lls[0]) / abs(lls[0]) for ll in lls)
    print(f"final log-likelihood {lls[0]:.10f}; largest relative difference between the "
          f"fits: {agree:.1e}")

    # -- pieces of the cost model ------------------------------------------------------------
    m = model(1)
    family = m.emission_family(W)
    Xv, seqs = m.validate_data(X, lengths, W)
    problem = m.problem(family, Xv, seqs)
    views = {"startprob": m.startprob_.copy(), "transmat": m.transmat_.copy(),
             "emission": {"emissionprob": m.emissionprob_.copy()}}
    problem.expected_counts(views)
    t_e = min(_timeit(lambda: problem.expected_counts(views)) for _ in range(3))
    _, stats = problem.expected_counts(views)
    t_merge = min(_timeit(lambda: merge_statistics(problem.blocks, stats, stats))
                  for _ in range(20))
    n_bytes = len(pickle.dumps(stats))
    fixed = med(np.subtract(tiny[1]["dist"], tiny[1]["local"]))
    per_partition = (med(tiny[16]["dist"]) - med(tiny[1]["dist"])) / 15
    print("\n| cost-model piece | measured |")
    print("|---|---:|")
    print(f"| E-step per observation (this process, {hs.threads.get_num_threads()} threads) | "
          f"{t_e / len(X) * 1e9:.1f} ns |")
    print(f"| merge of two partitions' statistics | {t_merge * 1e6:.1f} us |")
    print(f"| statistics of one partition (pickled) | {n_bytes} bytes |")
    print(f"| Dask cost per iteration, 1 partition (tiny data, 1 worker) | "
          f"{fixed * 1e3:.1f} ms |")
    print(f"| Dask cost per iteration and further partition (same worker) | "
          f"{per_partition * 1e3:.2f} ms |")


def _timeit(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()

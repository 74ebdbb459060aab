"""When does a second thread pay? One thread against two for each parallel kernel.

For each kernel of the inference layer (forward-backward, the forward pass of scoring,
Viterbi, the diagonal-Gaussian emission table) and a ladder of work sizes, the time of a call
on one thread (``threads.limit(1)``) and on two (``threads.PARALLEL_SECONDS = 0``: every
call with at least 2 chunks uses the pool), interleaved, best of ``--repeats``. It prints
the single-thread time next to the kernel's own estimate (what :func:`hiddenstate.threads.run`
compares with ``PARALLEL_SECONDS``; the ratio calibrates the kernels' nanosecond constants)
and the speed-up of two threads, then the break-even: the smallest single-thread time from
which two threads were faster at every larger size.

``--busy N`` starts N processes that keep a core busy each (the condition of issue 28: a
neighbour's job on a 2-core machine), ``--busy 0`` runs without them; the default runs both.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_threads.py            # ~3 minutes
    PYTHONPATH=src .venv/bin/python benchmarks/bench_threads.py --busy 2 --repeats 20
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from contextlib import contextmanager

import numpy as np
from _common import cpu_name

from hiddenstate import inference, threads
from hiddenstate.families import GaussianEmissions
from hiddenstate.kernels.emissions import _ENTRY_NS
from hiddenstate.kernels.forward_backward import (
    FORWARD_BACKWARD_NS,
    FORWARD_NS,
    recursion_seconds,
)
from hiddenstate.kernels.viterbi import VITERBI_NS

BURN = "import time\nend = time.time() + {s}\nwhile time.time() < end:\n    pass\n"


@contextmanager
def burners(n: int, seconds: float = 3600.0):
    """``n`` processes that each keep a core busy until the block ends."""
    procs = [subprocess.Popen([sys.executable, "-c", BURN.format(s=seconds)])
             for _ in range(n)]
    try:
        time.sleep(0.5 if n else 0.0)
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def cases(K: int, sizes):
    """(name, n_rows, estimate, call) for each kernel and size: sequences of 1,000 rows
    (one lane each: 8 per block), so the plans have up to 32 chunks."""
    rng = np.random.default_rng(0)
    startprob = np.full(K, 1.0 / K)
    transmat = rng.dirichlet(np.ones(K), size=K)
    fam = GaussianEmissions(K, 3)
    params = {"means": rng.normal(size=(K, 3)), "covars": np.ones((K, 3))}
    for n in sizes:
        lengths = np.full(max(1, n // 1000), min(n, 1000))
        seqs = inference.Sequences.from_lengths(lengths)
        N = seqs.n_samples
        X = rng.normal(size=(N, 3))
        table = fam.table(params, X)
        plan = seqs.short_lanes
        yield ("forward-backward", N,
               recursion_seconds(plan.first, plan.end, K, FORWARD_BACKWARD_NS),
               lambda t=table, s=seqs: inference.forward_backward(startprob, transmat, t, s))
        yield ("forward (score)", N, recursion_seconds(plan.first, plan.end, K, FORWARD_NS),
               lambda t=table, s=seqs: inference.log_likelihood(startprob, transmat, t, s))
        yield ("viterbi", N, recursion_seconds(plan.first, plan.end, K, VITERBI_NS),
               lambda t=table, s=seqs: inference.viterbi(startprob, transmat, t, s))
        yield ("gaussian table (D=3)", N, N * K * 3 * _ENTRY_NS * 1e-9,
               lambda x=X: fam.table(params, x))


def dispatch_cost(repeats: int = 2000) -> tuple[float, float]:
    """(best seconds of a call of empty chunks on 1 thread, on 2): what a helper costs."""
    from numba import njit

    from hiddenstate.kernels.chunks import claim

    @njit(nogil=True)
    def empty(n, ticket):
        while claim(ticket) < n:
            pass

    ticket = np.zeros(1, np.int64)
    empty(32, ticket)
    best = []
    for n_threads in (1, 2):
        with threads.limit(n_threads):
            t_best = np.inf
            for _ in range(repeats):
                t0 = time.perf_counter()
                threads.run(empty, 32, 1.0, 32)
                t_best = min(t_best, time.perf_counter() - t0)
        best.append(t_best)
    return best[0], best[1]


def timed(call, n_threads: int, repeats: int) -> float:
    best = np.inf
    saved = threads.PARALLEL_SECONDS
    threads.PARALLEL_SECONDS = 0.0 if n_threads > 1 else saved
    try:
        with threads.limit(n_threads):
            for _ in range(repeats):
                t0 = time.perf_counter()
                call()
                best = min(best, time.perf_counter() - t0)
    finally:
        threads.PARALLEL_SECONDS = saved
    return best


def run(K: int, sizes, repeats: int, busy: int) -> list[tuple]:
    rows = []
    with burners(busy):
        load = os.getloadavg()[0]
        for name, N, estimate, call in cases(K, sizes):
            call()  # compile, warm caches
            one, two = np.inf, np.inf
            for _ in range(repeats):  # interleaved: a neighbour's burst hits both
                one = min(one, timed(call, 1, 1))
                two = min(two, timed(call, 2, 1))
            rows.append((busy, load, name, K, N, estimate, one, two))
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--busy", type=int, nargs="*", default=[0, 2],
                    help="background processes that burn a core each (default: 0 and 2)")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--K", type=int, nargs="*", default=[4, 16])
    ap.add_argument("--sizes", type=int, nargs="*",
                    default=[1000, 8000, 16000, 32000, 64000, 128000, 256000])
    args = ap.parse_args(argv)
    print(f"# {cpu_name()}, {os.cpu_count()} CPUs, hiddenstate threads "
          f"{threads.get_num_threads()}, PARALLEL_SECONDS {threads.PARALLEL_SECONDS * 1e6:.0f} us; "
          f"best of {args.repeats}, 1 and 2 threads interleaved\n")
    print("| busy | load | kernel | K | rows | estimate us | 1 thread us | est / measured "
          "| 2 threads us | speed-up |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    allrows = []
    for busy in args.busy:
        with burners(busy):
            one, two = dispatch_cost()
        print(f"<!-- busy {busy}: a call of 32 empty chunks, best of 2000: 1 thread "
              f"{one * 1e6:.1f} us, 2 threads {two * 1e6:.1f} us (a helper costs "
              f"{(two - one) * 1e6:.1f} us) -->")
    for busy in args.busy:
        for K in args.K:
            for r in run(K, args.sizes, args.repeats, busy):
                busy_, load, name, K_, N, est, one, two = r
                print(f"| {busy_} | {load:.1f} | {name} | {K_} | {N:,} | {est * 1e6:,.0f} | "
                      f"{one * 1e6:,.0f} | {est / one:.2f} | {two * 1e6:,.0f} | "
                      f"{one / two:.2f} |", flush=True)
                allrows.append(r)
    print("\nbreak-even (smallest 1-thread time from which 2 threads won at every larger "
          "size):")
    for busy in args.busy:
        for K in args.K:
            for name in dict.fromkeys(r[2] for r in allrows):
                sel = [r for r in allrows if r[0] == busy and r[3] == K and r[2] == name]
                sel.sort(key=lambda r: r[4])
                even = None
                for i in range(len(sel)):
                    if all(r[6] > r[7] for r in sel[i:]):
                        even = sel[i][6]
                        break
                where = "never" if even is None else f"{even * 1e6:,.0f} us"
                print(f"  busy {busy}, K={K}, {name}: {where}")


if __name__ == "__main__":
    main()

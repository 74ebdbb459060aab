"""Time per iteration of every batch learning mode on the foundation workload (a).

    .venv/bin/python benchmarks/bench_learn_modes.py               # 5 repeats (about a minute)
    .venv/bin/python benchmarks/bench_learn_modes.py --repeats 9 --n-iter 30

Workload (a) of ``bench_vs_hmmlearn.py``: categorical HMM, K = 10, 50 symbols, 200
sequences x 1000, symbols sampled from a random HMM (same generator and seed, so the same
data), every mode started from the same random parameters (``init_params=""``) and run
with ``tol=-inf`` for ``--n-iter`` iterations. Modes: EM, MAP (Dirichlet 1.1 priors on
every row), VB (Dirichlet 1), VT and k-best VT (k = 2, 4; same priors as MAP).

VT and k-best VT stop by themselves when the best paths stop changing, whatever ``tol``
is, so time per iteration is always total fit time / ``len(monitor_.history)`` (the
number of E-steps the fit ran). Every kernel is compiled by one untimed fit per mode
first; each figure is the median of ``--repeats`` timed fits, the modes interleaved so
that a slow spell of the machine does not land on one mode only.

Target (learning-modes issue): a VT or VB iteration costs at most 1.3x an EM iteration.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings

import numba
import numpy as np

TARGET = 1.3
PRIOR = 1.1
MODES = [  # label, learn, k_best, priors
    ("EM", "em", 1, False),
    ("MAP", "map", 1, True),
    ("VB", "vb", 1, False),
    ("VT", "vt", 1, True),
    ("k-best VT, k=2", "kvt", 2, True),
    ("k-best VT, k=4", "kvt", 4, True),
]
TARGETED = {"VB", "VT"}


def random_stochastic(rng, shape):
    p = rng.random(shape) + 0.2
    return p / p.sum(axis=-1, keepdims=True)


def workload_a(seed=2024, K=10, W=50, n_seq=200, seq_len=1000):
    """Workload (a) exactly as ``bench_vs_hmmlearn.categorical_problem`` draws it."""
    from hiddenstate import inference

    rng = np.random.default_rng(seed)
    lengths = np.full(n_seq, seq_len)
    start, trans, emis = (random_stochastic(rng, K), random_stochastic(rng, (K, K)),
                          random_stochastic(rng, (K, W)))
    states = inference.sample_chain(start, trans, int(lengths.sum()), rng)
    cum = np.cumsum(emis, axis=1)[states]
    X = (rng.random(len(states))[:, None] > cum).sum(axis=1)
    init = (random_stochastic(rng, K), random_stochastic(rng, (K, K)),
            random_stochastic(rng, (K, W)))
    return X[:, None], lengths, init


def make(init, learn, k_best, prior, n_iter):
    from hiddenstate import HMM

    kwargs = {}
    if prior:
        kwargs = dict(startprob_prior=PRIOR, transmat_prior=PRIOR, emissionprob_prior=PRIOR)
    m = HMM(len(init[0]), emission="categorical", n_features=init[2].shape[1], learn=learn,
            k_best=k_best, n_iter=n_iter, tol=-np.inf, init_params="", params="ste", **kwargs)
    m.startprob_, m.transmat_, m.emissionprob_ = (a.copy() for a in init)
    return m


def run(repeats, n_iter):
    X, lengths, init = workload_a()
    times = {label: [] for label, *_ in MODES}
    iters = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate-state chatter of hard counts
        for _, learn, k, prior in MODES:  # warm-up: compile every kernel
            make(init, learn, k, prior, 2).fit(X, lengths)
        for _ in range(repeats):
            for label, learn, k, prior in MODES:
                m = make(init, learn, k, prior, n_iter)
                t0 = time.perf_counter()
                m.fit(X, lengths)
                dt = time.perf_counter() - t0
                n = len(m.monitor_.history)
                times[label].append(dt / n)
                iters[label] = (n, m.monitor_.converged, m.monitor_.history[-1])
    return {label: float(np.median(t)) for label, t in times.items()}, iters


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n-iter", type=int, default=20)
    args = parser.parse_args()
    print(f"# Learning modes, time per iteration (workload (a))\n\n"
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, numba "
          f"{numba.__version__} with {numba.config.NUMBA_NUM_THREADS} threads; categorical "
          f"K=10, W=50, 200 x 1000; up to {args.n_iter} iterations from the same "
          f"parameters; median of {args.repeats} fits.\n")
    t0 = time.perf_counter()
    per_iter, iters = run(args.repeats, args.n_iter)
    print(f"numba threading layer: {numba.threading_layer()}; OMP_WAIT_POLICY="
          f"{os.environ.get('OMP_WAIT_POLICY', '(unset)')}\n")
    em = per_iter["EM"]
    print("| mode | iterations run | stopped on unchanged paths | ms / iteration "
          f"| ratio to EM | target <= {TARGET}x |")
    print("|---|---|---|---|---|---|")
    for label, *_ in MODES:
        n, conv, _ = iters[label]
        ratio = per_iter[label] / em
        stopped = ("yes" if conv else "no") if label.startswith(("VT", "k-best")) else "-"
        target = ("met" if ratio <= TARGET else "MISSED") if label in TARGETED else "-"
        print(f"| {label} | {n} | {stopped} | {1e3 * per_iter[label]:.1f} | {ratio:.2f}x "
              f"| {target} |")
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()

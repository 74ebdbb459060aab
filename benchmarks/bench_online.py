"""Online EM throughput (observations per second), K=3 categorical, one core.

hiddenstate's lazy numba kernel (``learn='online-em'``) against a straightforward NumPy
transcription of the same recursions (Cappé 2011: full K x W x K emission auxiliary,
M-step after every observation), at W = 100 and W = 13,711 symbols, in one run; prints one
markdown table. Targets: >= 1,000,000 obs/s at W=100 and >= 200,000 obs/s at W=13,711.

    .venv/bin/python benchmarks/bench_online.py                # ~1 minute
    .venv/bin/python benchmarks/bench_online.py --repeats 5

Data: a sticky 3-state HMM whose emission rows are Zipf(1) over a per-state permutation of
the alphabet (word-like: a few frequent symbols, a long tail of rare ones), sequences of
1,000 observations. Both implementations start from the same random parameters and use the
learner's defaults (step 1 * t**-0.6, 20 warm-up observations, the default priors); their
parameters after the NumPy run's prefix are compared to show that they compute the same
thing. Each entry is the best of ``--repeats`` timed runs (after an untimed run that
compiles or loads the kernel): on a shared machine the best run is the one least disturbed
by other processes.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numba  # noqa: E402
import numpy as np  # noqa: E402
from _common import cpu_name  # noqa: E402

from hiddenstate import threads  # noqa: E402
from hiddenstate.families import CategoricalEmissions, estimate_rows  # noqa: E402
from hiddenstate.learn.online.online_em import PRIOR_MASS, OnlineEM  # noqa: E402

K = 3
TARGETS = {100: 1_000_000, 13_711: 200_000}


def make_data(rng, W: int, N: int, seq_len: int = 1000):
    zipf = 1.0 / np.arange(1, W + 1)
    B = np.stack([zipf[rng.permutation(W)] for _ in range(K)])
    B /= B.sum(axis=1, keepdims=True)
    # sticky chain: stay with probability 0.9, else move to one of the other states
    move = rng.random(N) < 0.1
    z = np.cumsum(move * rng.integers(1, K, N)) % K
    y = np.empty(N, dtype=np.int64)
    u = rng.random(N)
    for k in range(K):
        sel = z == k
        y[sel] = np.minimum(np.searchsorted(np.cumsum(B[k]), u[sel], side="right"), W - 1)
    lengths = np.full(N // seq_len, seq_len)
    init = {"startprob": np.full(K, 1.0 / K),
            "transmat": np.full((K, K), 0.2) + 0.4 * np.eye(K),
            "emission": {"emissionprob": rng.dirichlet(np.ones(W), K)}}
    return y, lengths, init


def numpy_online_em(theta, y, lengths, warmup=20, step_scale=1.0, step_exponent=0.6):
    """Cappé's recursions in plain NumPy: every auxiliary in full, the M-step after every
    observation (estimate_rows, the learner's default priors)."""
    pi = theta["startprob"].copy()
    A = theta["transmat"].copy()
    B = theta["emission"]["emissionprob"].copy()
    W = B.shape[1]
    alpha_t, alpha_e = 1.0 + PRIOR_MASS / K, 1.0 + PRIOR_MASS / W
    starts = np.zeros(len(y), dtype=bool)
    starts[np.concatenate(([0], np.cumsum(lengths)[:-1]))] = True
    phi = pi.copy()
    rho_q = np.zeros((K * K, K))  # rows (i, j)
    rho_g = np.zeros((K * W, K))  # rows (i, w)
    rows_i = np.arange(K)
    q_rows = (rows_i[:, None] * K + rows_i[None, :]).ravel()  # row (i, j) of rho_q ...
    q_cols = np.tile(rows_i, K)  # ... and its column j
    first_m = max(warmup, 1)
    for n, w in enumerate(y):
        t = n + 1
        b = B[:, w]
        if starts[n]:
            pred = pi
            R = np.repeat(phi[:, None], K, axis=1)
        else:
            pred = phi @ A
            R = phi[:, None] * A / pred
        phin = pred * b
        phin /= phin.sum()
        gam = step_scale * t ** (-step_exponent)
        rho_q = (1.0 - gam) * (rho_q @ R)
        if not starts[n]:
            rho_q[q_rows, q_cols] += gam * R.ravel()  # rho_q[(i, j), j] += gam R[i, j]
        rho_g = (1.0 - gam) * (rho_g @ R)
        rho_g[rows_i * W + w, rows_i] += gam
        if t >= first_m:
            A = estimate_rows((rho_q @ phin).reshape(K, K), A, alpha_t)[0]
            B = estimate_rows((rho_g @ phin).reshape(K, W), B, alpha_e)[0]
        phi = phin
    return A, B


def bench_numba(y, lengths, init, W, repeats):
    fam = CategoricalEmissions(K, W)
    learner = OnlineEM()
    learner.update(learner.start(init, fam), y[:5000], [5000], fam)  # compile / load
    times = []
    for _ in range(repeats):
        state = learner.start(init, fam)
        t0 = time.perf_counter()
        state = learner.update(state, y, lengths, fam)
        times.append(time.perf_counter() - t0)
    return len(y) / min(times), learner, fam


def bench_numpy(y, lengths, init, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = numpy_online_em(init, y, lengths)
        times.append(time.perf_counter() - t0)
    return len(y) / min(times), out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-numba", type=int, default=2_000_000)
    args = parser.parse_args()
    threads.set_num_threads(1)
    rng = np.random.default_rng(0)
    rows = []
    for W, n_numpy in ((100, 20_000), (13_711, 1_000)):
        y, lengths, init = make_data(rng, W, args.n_numba)
        fast, learner, fam = bench_numba(y, lengths, init, W, args.repeats)
        # the NumPy run's prefix (whole sequences of 1000)
        prefix, plens = y[:n_numpy], lengths[: n_numpy // 1000]
        slow, (A_np, B_np) = bench_numpy(prefix, plens, init, max(1, args.repeats // 2))
        p = learner.params(learner.update(learner.start(init, fam), prefix, plens, fam), fam)
        diff = max(np.abs(p["transmat"] - A_np).max(),
                   np.abs(p["emission"]["emissionprob"] - B_np).max())
        rows.append((W, fast, slow, diff))
    print(f"\n{cpu_name()} ({os.cpu_count()} cores), numba {numba.__version__} "
          f"({threads.get_num_threads()} thread), numpy {np.__version__}; best of "
          f"{args.repeats} runs, {args.n_numba:,} observations per numba run\n")
    print("| W | hiddenstate online EM (obs/s) | NumPy transcription (obs/s) | ratio "
          "| target (obs/s) | met | max abs diff of parameters |")
    print("|---:|---:|---:|---:|---:|:---:|---:|")
    for W, fast, slow, diff in rows:
        target = TARGETS[W]
        print(f"| {W:,} | {fast:,.0f} | {slow:,.0f} | {fast / slow:,.0f}x | {target:,} | "
              f"{'yes' if fast >= target else 'NO'} | {diff:.1e} |")


if __name__ == "__main__":
    main()

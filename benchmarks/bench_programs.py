"""What the generic program path costs: an HMM written as a program against hs.HMM, and
the explanation graph of a 40-word sentence under a PCFG program.

    .venv/bin/python benchmarks/bench_programs.py                       # a few minutes
    .venv/bin/python benchmarks/bench_programs.py --lengths 10000 --repeats 2

(1) Categorical HMM, K = 10, W = 50, one sequence of T symbols drawn from a random HMM,
EM from the same random parameters for ``--n-iter`` iterations (``tol=-inf``): the time per
EM iteration of hs.HMM and of ``ProgramModel(hmm_program(K, W))`` (its explanation graph
built once, before timing; the build time is printed separately), best of ``--repeats``
fits after an untimed warm-up. The two final log-likelihoods are printed to show they
agree.

(2) A dense random PCFG in Chomsky normal form (``--nonterminals`` nonterminals, each with
``--binary`` binary rules and a lexical rule for every word of a 20-word vocabulary, so every
span of the sentence is derivable by every nonterminal: the worst case for the graph's
size), one sentence of ``--words`` random words: the time to build and compile its
explanation graph, its size, and one inside-outside pass (an EM E-step) and one Viterbi
pass.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numba
import numpy as np
from _common import best_time, cpu_name

K, W = 10, 50


def random_rows(rng, shape):
    p = rng.random(shape) + 0.2
    return p / p.sum(axis=-1, keepdims=True)


def hmm_case(T, n_iter, repeats, seed=7):
    import hiddenstate as hs
    from hiddenstate import inference
    from hiddenstate.programs import ProgramModel, explain
    from hiddenstate.programs.examples import hmm_program

    rng = np.random.default_rng(seed)
    truth = (random_rows(rng, K), random_rows(rng, (K, K)), random_rows(rng, (K, W)))
    states = inference.sample_chain(truth[0], truth[1], T, rng)
    x = (rng.random(T)[:, None] > np.cumsum(truth[2], axis=1)[states]).sum(axis=1)
    start = (random_rows(rng, K), random_rows(rng, (K, K)), random_rows(rng, (K, W)))

    def hmm_fit():
        m = hs.HMM(K, n_features=W, init_params="", n_iter=n_iter, tol=-np.inf)
        m.startprob_, m.transmat_, m.emissionprob_ = (a.copy() for a in start)
        return m.fit(x)

    prog = hmm_program(K, W)
    goal = prog.predicates["hmm"](x)
    t0 = time.perf_counter()
    graph = explain(prog, [goal])
    build = time.perf_counter() - t0
    model = ProgramModel(prog, init="declared", n_iter=n_iter, tol=-np.inf)
    model._graph_cache = ((goal,), graph)  # the graph built above, reused by every fit

    def program_fit():
        model.probs_ = {"init": start[0]}
        for s in range(K):
            model.probs_[("tr", s)] = start[1][s]
            model.probs_[("out", s)] = start[2][s]
        return model.fit([goal])

    t_hmm, m_hmm = best_time(hmm_fit, repeats)
    t_prog, m_prog = best_time(program_fit, repeats)
    return {"T": T, "build": build, "nodes": graph.n_nodes, "alts": graph.n_alts,
            "hmm": t_hmm / n_iter, "prog": t_prog / n_iter,
            "ll": (m_hmm.monitor_.history[-1], m_prog.monitor_.history[-1])}


def pcfg_case(n_words, n_nonterminals, n_binary, repeats, seed=3):
    from hiddenstate.programs import ProgramModel, explain
    from hiddenstate.programs.examples import pcfg_program

    rng = np.random.default_rng(seed)
    nts = [f"N{i}" for i in range(n_nonterminals)]
    words = [f"w{i}" for i in range(20)]
    rules = {}
    for a in nts:
        pairs = {(nts[rng.integers(n_nonterminals)], nts[rng.integers(n_nonterminals)])
                 for _ in range(4 * n_binary)}
        rules[a] = sorted(pairs)[:n_binary] + [(w,) for w in words]
    rules = {"S": rules.pop("N0"), **rules}
    rules = {a: [tuple("S" if s == "N0" else s for s in r) for r in rhs]
             for a, rhs in rules.items()}
    prog = pcfg_program(rules)
    sentence = prog.predicates["sentence"]([words[i] for i in rng.integers(0, 20, n_words)])
    t0 = time.perf_counter()
    graph = explain(prog, [sentence])
    build = time.perf_counter() - t0
    model = ProgramModel(prog)
    model._graph_cache = ((sentence,), graph)
    logtheta = model._log_theta()[:graph.n_params]
    t_e, _ = best_time(lambda: graph.expected(logtheta), repeats)
    t_v, _ = best_time(lambda: graph.viterbi(logtheta), repeats)
    return {"build": build, "nodes": graph.n_nodes, "alts": graph.n_alts,
            "items": int(graph.item_ptr[-1]), "estep": t_e, "viterbi": t_v,
            "logp": float(model.score_samples([sentence])[0])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    parser.add_argument("--n-iter", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--words", type=int, default=40)
    parser.add_argument("--nonterminals", type=int, default=10)
    parser.add_argument("--binary", type=int, default=6)
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# The program engine against hs.HMM\n\n{cpu_name()} ({platform.machine()}), "
          f"{os.cpu_count()} CPUs, numba {numba.__version__} with "
          f"{numba.config.NUMBA_NUM_THREADS} threads; load average {load:.2f} at the start; "
          f"best of {args.repeats} after a warm-up.\n")
    print(f"## (1) EM on one sequence, categorical HMM K={K}, W={W}, {args.n_iter} iterations\n")
    print("| T | graph build (s) | goals | alternatives | hs.HMM ms / iter | program ms / iter "
          "| ratio | final log-lik (HMM, program) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    for T in args.lengths:
        r = hmm_case(T, args.n_iter, args.repeats)
        print(f"| {T:,} | {r['build']:.1f} | {r['nodes']:,} | {r['alts']:,} | "
              f"{1e3 * r['hmm']:.2f} | {1e3 * r['prog']:.1f} | {r['prog'] / r['hmm']:.0f}x | "
              f"{r['ll'][0]:.6f}, {r['ll'][1]:.6f} |", flush=True)
    r = pcfg_case(args.words, args.nonterminals, args.binary, args.repeats)
    print(f"\n## (2) PCFG: one sentence of {args.words} words, {args.nonterminals} "
          f"nonterminals x ({args.binary} binary + 20 lexical rules)\n")
    print("| graph build (s) | goals | alternatives | items | inside-outside (ms) "
          "| Viterbi (ms) | log p |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {r['build']:.2f} | {r['nodes']:,} | {r['alts']:,} | {r['items']:,} | "
          f"{1e3 * r['estep']:.1f} | {1e3 * r['viterbi']:.1f} | {r['logp']:.4f} |")


if __name__ == "__main__":
    main()

"""PLCG against the PCFG with the same rules, same run: the compiled left-corner chart
against tabled search of the same program, and parse / score / EM against CKY.

    .venv/bin/python benchmarks/bench_plcg.py            # ~3 minutes on a shared 2-core box
    .venv/bin/python benchmarks/bench_plcg.py --quick

Process CPU time, one thread, best of ``--repeats``, the PLCG and the PCFG timed in turn
(paired, so the ratios hold on a busy machine); the load average is printed with them.

1. The grammar of ``experiments/prism_plcg.py``: the CNF rules (Markov order 0) of the
   Penn Treebank sample's trees with at most ``--max-length`` part-of-speech tags;
   sentences: their tag sequences.

   - graph: :func:`hiddenstate.programs.explain` of
     :func:`~hiddenstate.programs.left_corner.left_corner_program` (tabled search in
     Python) on the first ``--small`` sentences, against
     :func:`hiddenstate.kernels.left_corner.build_graph` on the same ones (checked to be the
     same graph), then on every sentence;
   - E-step: one inside-outside pass on the built graph (an EM iteration of the PLCG once
     its graph is built) against ``hs.PCFG``'s CKY inside-outside on the same sentences.

2. The full grammar: ``PLCG.from_treebank`` / ``PCFG.from_treebank`` of every tree of the
   sample (tags, Markov order 0: 3,104 rules; 8,677 PLCG switches), ``--n-sentences``
   sentences of 10-20 tags. ``parse``, ``score``, ``expected_counts``, and ``fit`` with one
   EM iteration (``n_iter=1``, ``init="current"``): the PLCG's first fit builds the graph
   of the sentences, a refit on them reuses it (the PCFG has nothing to reuse). With the
   supervised probabilities (``from_treebank``: the relative frequencies, a third of the
   PLCG's outcomes at zero, whose cells the chart leaves out) and with the counts plus one
   (no zeros: every cell of the chart). The PCFG keeps its supervised estimate (every rule
   of the grammar is used, none at zero).
"""

from __future__ import annotations

import argparse
import glob
import os
import time
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _common import cpu_name  # noqa: E402

import hiddenstate as hs  # noqa: E402
from hiddenstate.grammar import Grammar, normalise, read_trees, to_cnf  # noqa: E402
from hiddenstate.kernels.left_corner import build_graph  # noqa: E402
from hiddenstate.programs import explain  # noqa: E402
from hiddenstate.programs.left_corner import left_corner_program  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data"


def cpu_time(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def paired(fns: dict, repeats: int) -> dict:
    """Best process time of each function, the functions called in turn ``repeats`` times
    after one warm-up call each."""
    for fn in fns.values():
        fn()
    best = {name: np.inf for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            best[name] = min(best[name], cpu_time(fn))
    return best


def load_average() -> str:
    return "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())


def small_grammar(args, files) -> None:
    gold = [n for n in (normalise(t, terminals="tags") for t in read_trees(files))
            if n is not None and len(n.leaves()) <= args.max_length]
    cnf = [to_cnf(t, 0) for t in gold]
    g, counts = Grammar.from_trees(cnf)
    sents = [t.leaves() for t in gold]
    plcg = hs.PLCG(rules=g.rule_list(), start=list(g.start))
    pcfg = hs.PCFG(rules=g.rule_list(), start=list(g.start))
    pcfg.theta_ = np.concatenate([counts[name] / counts[name].sum() for name, _, _ in
                                  g.switches()])
    lc = plcg.left_corner()
    plcg.theta_ = plcg.counts_to_theta(plcg.tree_counts(cnf) + 1)
    words, offsets, _ = plcg._encode(g, sents)
    small_w, small_o = words[:offsets[args.small]], offsets[:args.small + 1]
    prog = left_corner_program(lc, plcg.theta_)
    goals = [prog.predicates["sentence"](tuple(s)) for s in sents[:args.small]]
    tabled = cpu_time(lambda: explain(prog, goals))
    ref = explain(prog, goals)
    mine = build_graph(small_w, small_o, *lc.kernel_args())
    assert (ref.n_nodes, ref.n_alts, len(ref.items)) == \
        (len(mine[0]) - 1, len(mine[1]) - 1, len(mine[2])), "not the same graph"
    graph = plcg._graph(lc, words, offsets)
    logtheta = np.log(plcg.theta_)
    pw, po, _ = pcfg._encode(pcfg.grammar(), sents)
    t = paired({"built": lambda: build_graph(small_w, small_o, *lc.kernel_args()),
                "every": lambda: build_graph(words, offsets, *lc.kernel_args()),
                "e_plcg": lambda: graph.expected(logtheta),
                "e_pcfg": lambda: pcfg._inside_outside(pcfg.grammar(), pcfg.theta_, pw, po,
                                                       True)}, args.repeats)
    n = len(sents)
    print(f"## 1. The grammar of the sentences of at most {args.max_length} tags "
          f"({load_average()})\n")
    print(f"{n} sentences (mean {np.mean([len(s) for s in sents]):.1f} tags); grammar "
          f"{len(g.nonterminals)} nonterminals, {g.n_rules} rules; PLCG {lc.n_params} switch "
          f"outcomes; graph of every sentence: {graph.n_nodes} goals, {graph.n_alts} "
          "alternatives\n")
    print("| task | PLCG | reference | sentences/s (PLCG) | reference / PLCG |")
    print("|---|---|---|---|---|")
    print(f"| graph of {args.small} sentences: build_graph vs tabled search | "
          f"{t['built']:.4f} s | {tabled:.2f} s | {args.small / t['built']:.0f} | "
          f"{tabled / t['built']:.0f}x |")
    print(f"| graph of all {n} sentences (build_graph) | {t['every']:.3f} s | - | "
          f"{n / t['every']:.0f} | - |")
    print(f"| E-step on the built graph vs PCFG CKY inside-outside | {t['e_plcg']:.4f} s | "
          f"{t['e_pcfg']:.4f} s | {n / t['e_plcg']:.0f} | {t['e_pcfg'] / t['e_plcg']:.1f}x |")
    print(f"| first EM iteration: graph + E-step vs CKY | {t['every'] + t['e_plcg']:.4f} s | "
          f"{t['e_pcfg']:.4f} s | - | {t['e_pcfg'] / (t['every'] + t['e_plcg']):.2f}x |")
    print()


def full_grammar(args, files) -> None:
    trees = list(read_trees(files))
    plcg = hs.PLCG.from_treebank(trees, terminals="tags", markov=0)
    pcfg = hs.PCFG.from_treebank(trees, terminals="tags", markov=0)
    lc = plcg.left_corner()
    g = pcfg.grammar()
    tags = [n.leaves() for n in (normalise(t, terminals="tags") for t in trees)
            if n is not None]
    sents = [s for s in tags if 10 <= len(s) <= 20][:args.n_sentences]
    cnf, _ = hs.PCFG.treebank_trees(trees, terminals="tags", markov=0)
    supervised = plcg.theta_
    smoothed = plcg.counts_to_theta(plcg.tree_counts(cnf) + 1)
    pcfg_theta = pcfg.theta_.copy()   # every rule is used: no zeros
    print(f"## 2. The full grammar ({load_average()})\n")
    print(f"{len(trees)} trees, tags, Markov order 0: {len(g.nonterminals)} nonterminals, "
          f"{g.n_rules} rules; PLCG {len(lc.switches)} switches, {lc.n_params} outcomes "
          f"({np.mean(supervised == 0):.0%} of them at zero in the supervised estimate). "
          f"{len(sents)} sentences of 10-20 tags (mean {np.mean([len(s) for s in sents]):.1f})."
          "\n")
    print("| task | probabilities | PLCG | PCFG | PLCG / PCFG |")
    print("|---|---|---|---|---|")
    fit_kw = {"n_iter": 1, "tol": -np.inf, "init": "current"}
    plcg.set_params(**fit_kw)
    pcfg.set_params(**fit_kw)

    def first_fit():
        plcg.__dict__.pop("_fit_graph", None)
        plcg.fit(sents)

    rows = [("parse", lambda: plcg.parse(sents), lambda: pcfg.parse(sents)),
            ("score", lambda: plcg.score(sents), lambda: pcfg.score(sents)),
            ("expected_counts", lambda: plcg.expected_counts(sents),
             lambda: pcfg.expected_counts(sents)),
            ("fit, 1 EM iteration (graph built)", first_fit, lambda: pcfg.fit(sents)),
            ("refit, 1 EM iteration (graph reused)", lambda: plcg.fit(sents),
             lambda: pcfg.fit(sents))]
    for label, theta in (("supervised", supervised), ("counts + 1", smoothed)):
        for name, f_plcg, f_pcfg in rows:
            def run_plcg(f=f_plcg, theta=theta):
                plcg.theta_ = theta.copy()
                f()

            def run_pcfg(f=f_pcfg):
                pcfg.theta_ = pcfg_theta.copy()
                f()

            t = paired({"plcg": run_plcg, "pcfg": run_pcfg}, args.repeats)
            print(f"| {name} | {label} | {t['plcg']:.3f} s | {t['pcfg']:.3f} s | "
                  f"{t['plcg'] / t['pcfg']:.1f}x |")
    print(f"\n({load_average()} at the end)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-length", type=int, default=10)
    ap.add_argument("--small", type=int, default=20)
    ap.add_argument("--n-sentences", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--data-dir", type=Path, default=DATA)
    args = ap.parse_args(argv)
    if args.quick:
        args.small, args.repeats, args.n_sentences = 5, 1, 10
    files = sorted(glob.glob(str(args.data_dir / "ptb-sample-treebank" / "combined" / "*.mrg")))
    if not files:
        raise SystemExit(f"no treebank under {args.data_dir}; pass --data-dir")
    print(f"# PLCG against the PCFG with the same rules ({cpu_name()}, one thread, process "
          "CPU seconds, best of paired runs)\n")
    small_grammar(args, files)
    full_grammar(args, files)


if __name__ == "__main__":
    main()

"""PLCG: the compiled explanation-graph builder against tabled search of the same program,
and a PLCG's E-step against the PCFG's (CKY inside-outside) on the same grammar and
sentences, same run.

    .venv/bin/python benchmarks/bench_plcg.py            # ~1 minute on a shared 2-core box
    .venv/bin/python benchmarks/bench_plcg.py --quick

Grammar: the CNF rules of the Penn Treebank sample's trees with at most ``--max-length``
part-of-speech tags (Markov order 0, as ``experiments/prism_plcg.py``); sentences: their
tag sequences. Process CPU time, one thread, best of ``--repeats``:

- graph: :func:`hiddenstate.programs.explain` of
  :func:`~hiddenstate.programs.left_corner.left_corner_program` (tabled search in Python) on
  the first ``--small`` sentences, against :func:`hiddenstate.kernels.left_corner.build_graph`
  on the same ones (the graphs are checked to have the same goals, alternatives and items),
  then the builder on every sentence;
- E-step: one inside-outside pass on the built graph (a PLCG EM iteration) against
  ``hs.PCFG``'s CKY inside-outside on the same sentences (a PCFG EM iteration).
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


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-length", type=int, default=10)
    ap.add_argument("--small", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--data-dir", type=Path, default=DATA)
    args = ap.parse_args(argv)
    if args.quick:
        args.small, args.repeats = 5, 1
    files = sorted(glob.glob(str(args.data_dir / "ptb-sample-treebank" / "combined" / "*.mrg")))
    if not files:
        raise SystemExit(f"no treebank under {args.data_dir}; pass --data-dir")
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
    build_graph(small_w[:small_o[1]], small_o[:2], *lc.kernel_args())  # compile
    prog = left_corner_program(lc, plcg.theta_)
    goals = [prog.predicates["sentence"](tuple(s)) for s in sents[:args.small]]
    tabled = best_of(lambda: explain(prog, goals), 1)
    built = best_of(lambda: build_graph(small_w, small_o, *lc.kernel_args()), args.repeats)
    ref = explain(prog, goals)
    mine = build_graph(small_w, small_o, *lc.kernel_args())
    assert (ref.n_nodes, ref.n_alts, len(ref.items)) == \
        (len(mine[0]) - 1, len(mine[1]) - 1, len(mine[2])), "not the same graph"
    every = best_of(lambda: build_graph(words, offsets, *lc.kernel_args()), args.repeats)
    graph = plcg._graph(lc, words, offsets)
    logtheta = np.log(plcg.theta_)
    graph.expected(logtheta)
    e_plcg = best_of(lambda: graph.expected(logtheta), args.repeats)
    pw, po, _ = pcfg._encode(pcfg.grammar(), sents)
    pcfg._inside_outside(pcfg.grammar(), pcfg.theta_, pw, po, True)
    e_pcfg = best_of(lambda: pcfg._inside_outside(pcfg.grammar(), pcfg.theta_, pw, po, True),
                     args.repeats)
    n = len(sents)
    print(f"# PLCG graph building and E-step ({cpu_name()}, one thread, CPU seconds)\n")
    print(f"{n} sentences of at most {args.max_length} tags (mean "
          f"{np.mean([len(s) for s in sents]):.1f}); grammar {len(g.nonterminals)} "
          f"nonterminals, {g.n_rules} rules; PLCG {lc.n_params} switch outcomes; graph of "
          f"every sentence: {graph.n_nodes} goals, {graph.n_alts} alternatives\n")
    print("| task | hs | reference | sentences/s (hs) | ratio |")
    print("|---|---|---|---|---|")
    print(f"| graph of {args.small} sentences: build_graph vs tabled search | {built:.4f} s | "
          f"{tabled:.2f} s | {args.small / built:.0f} | {tabled / built:.0f}x |")
    print(f"| graph of all {n} sentences (build_graph) | {every:.3f} s | - | "
          f"{n / every:.0f} | - |")
    print(f"| E-step, all sentences: PLCG graph vs PCFG CKY inside-outside | {e_plcg:.4f} s | "
          f"{e_pcfg:.4f} s | {n / e_plcg:.0f} | {e_pcfg / e_plcg:.1f}x |")


if __name__ == "__main__":
    main()

"""PCFG inside-outside and CKY-Viterbi: hs.PCFG's kernels against NLTK's ViterbiParser,
torch-struct's SentCFG (CPU) and the explanation-graph engine, same grammar, same sentences,
same run.

    .venv/bin/python benchmarks/bench_pcfg.py               # ~5 minutes on a shared 2-core box
    .venv/bin/python benchmarks/bench_pcfg.py --quick
    .venv/bin/python benchmarks/bench_pcfg.py --ref-python /work/venv-pcfgref/bin/python

Grammar: the one of ``experiments/prism_pcfg.py`` (the CNF rules of the Penn Treebank
sample's trees with at most 12 part-of-speech tags, binarised with horizontal Markov order
0), its probabilities the relative frequencies of the rules in those trees. Sentences: tag
sequences of the treebank of 2 to ``--max-length`` (40) tags that the grammar derives,
drawn at random (seeded). Sentences per second, single thread (numba and torch limited to
one thread), best of ``--repeats``:

- inside-outside: log P(w) and the expected count of every rule (one EM E-step);
  torch-struct: ``SentCFG.partition`` and ``.marginals`` (autograd, which is its
  inside-outside).
- CKY: the Viterbi parse; NLTK: ``ViterbiParser.parse`` (pure Python: on the shortest
  sentences only, the ratio taken on those same sentences); torch-struct: ``.argmax``.
- the explanation-graph engine (``Grammar.to_program`` + ``ProgramModel``): building the
  graphs (tabled search) and one inside-outside pass, on the sentences NLTK gets.

The references run in a subprocess of ``--ref-python`` (a venv with nltk, torch-struct and
torch; the library does not depend on them). Each reports its numbers for the same
sentences, and the log-probabilities are compared with ours to show it is the same task.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _common import best_time, cpu_name  # noqa: E402

import hiddenstate as hs  # noqa: E402
from hiddenstate.grammar import Grammar, normalise, read_trees, to_cnf  # noqa: E402
from hiddenstate.kernels import cky  # noqa: E402
from hiddenstate.programs import ProgramModel  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "ptb-sample-treebank"

REFERENCE = r'''
import json, sys, time
spec = json.load(open(sys.argv[1]))
out = {}
N, start, rules = spec["N"], spec["start"], spec["rules"]
sents, nltk_n, repeats = spec["sentences"], spec["nltk_n"], spec["repeats"]
try:
    import torch
    torch.set_num_threads(1)
    from torch_struct import SentCFG
    nt = {a: i for i, a in enumerate(spec["nonterminals"])}
    lex = {}
    R = torch.full((1, N, 2 * N, 2 * N), -1e9, dtype=torch.float64)
    for lhs, rhs, lp in rules:
        if len(rhs) == 2:
            b, c = nt[rhs[0]], nt[rhs[1]]
            for x in (b, N + b):
                for y in (c, N + c):
                    R[0, nt[lhs], x, y] = lp
        else:
            lex.setdefault(rhs[0], {})[nt[lhs]] = lp
    roots = torch.full((1, N), -1e9, dtype=torch.float64)
    for a, lp in start:
        roots[0, nt[a]] = lp
    def dist(batch):
        n = max(len(s) for s in batch)
        terms = torch.full((len(batch), n, N), -1e9, dtype=torch.float64)
        for b, s in enumerate(batch):
            for i, w in enumerate(s):
                for a, lp in lex.get(w, {}).items():
                    terms[b, i, a] = lp
        lengths = torch.tensor([len(s) for s in batch])
        pot = (terms.requires_grad_(), R.expand(len(batch), -1, -1, -1),
               roots.expand(len(batch), -1))
        return SentCFG(pot, lengths=lengths)
    B = spec["batch"]
    batches = [sents[i:i + B] for i in range(0, len(sents), B)]
    def timed(fn):
        fn()
        best = None
        for _ in range(repeats):
            t0 = time.perf_counter(); r = fn(); dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        return best, r
    def inside_outside():
        zs = []
        for b in batches:
            d = dist(b)
            zs.extend(d.partition.tolist())
            d.marginals
        return zs
    def viterbi():
        ms = []
        for b in batches:
            d = dist(b)
            ms.extend(d.max.tolist())
            d.argmax
        return ms
    t, zs = timed(inside_outside)
    out["torch_io"] = {"seconds": t, "logz": zs}
    t, ms = timed(viterbi)
    out["torch_cky"] = {"seconds": t, "logmax": ms}
    out["torch_version"] = torch.__version__
except Exception as exc:  # noqa: BLE001
    out["torch_error"] = f"{type(exc).__name__}: {exc}"
try:
    import math
    import nltk
    from nltk.grammar import PCFG, Nonterminal, ProbabilisticProduction
    prods = [ProbabilisticProduction(Nonterminal("<start>"), [Nonterminal(a)], prob=math.exp(lp))
             for a, lp in start]
    for lhs, rhs, lp in rules:
        r = [Nonterminal(x) for x in rhs] if len(rhs) == 2 else [rhs[0]]
        prods.append(ProbabilisticProduction(Nonterminal(lhs), r, prob=math.exp(lp)))
    g = PCFG(Nonterminal("<start>"), prods)
    parser = nltk.ViterbiParser(g)
    def run():
        res = []
        for s in sents[:nltk_n]:
            trees = list(parser.parse(s))
            res.append(math.log(trees[0].prob()) if trees else None)
        return res
    run_t0 = time.perf_counter(); lps = run(); t = time.perf_counter() - run_t0
    out["nltk"] = {"seconds": t, "logmax": lps, "version": nltk.__version__}
except Exception as exc:  # noqa: BLE001
    out["nltk_error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
'''


def grammar_and_sentences(max_length: int, n_sentences: int, seed: int):
    files = sorted(glob.glob(str(DATA / "combined" / "*.mrg")))
    if not files:
        sys.exit(f"bench_pcfg: no treebank at {DATA}; nothing to do")
    norm = [t for t in (normalise(t, terminals="tags") for t in read_trees(files))
            if t is not None]
    cnf = [to_cnf(t, 0) for t in norm if len(t.leaves()) <= 12]
    g, counts = Grammar.from_trees(cnf)
    theta = np.empty(g.n_params)
    for name, lo, k in g.switches():
        theta[lo:lo + k] = counts[name] / counts[name].sum()
    model = hs.PCFG(rules=g.rule_list(), start=list(g.start))
    model.theta_ = theta
    pool = [t.leaves() for t in norm if 2 <= len(t.leaves()) <= max_length
            and all(w in g.word_index for w in t.leaves())]
    rng = np.random.default_rng(seed)
    rng.shuffle(pool)
    ok = np.isfinite(model.score_samples(pool[:4 * n_sentences]))
    sents = [s for s, good in zip(pool[:4 * n_sentences], ok, strict=True) if good]
    return model, g, theta, sents[:n_sentences]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--max-length", type=int, default=40)
    ap.add_argument("--sentences", type=int, default=60)
    ap.add_argument("--nltk-sentences", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--ref-python", default="/work/venv-pcfgref/bin/python")
    args = ap.parse_args(argv)
    if args.quick:
        args.sentences, args.nltk_sentences, args.repeats, args.max_length = 12, 3, 1, 20
    model, g, theta, sents = grammar_and_sentences(args.max_length, args.sentences, 0)
    # NLTK gets the shortest sentences (it is pure Python)
    sents.sort(key=len, reverse=False)
    nltk_sents = sents[:args.nltk_sentences]
    lengths = [len(s) for s in sents]
    print(f"# bench_pcfg on {cpu_name()} (single thread)")
    print(f"grammar: {len(g.nonterminals)} nonterminals, {g.n_rules} rules, {len(g.words)} "
          f"terminals; {len(sents)} sentences of {min(lengths)}-{max(lengths)} words "
          f"(mean {np.mean(lengths):.1f}); NLTK and the program engine on the "
          f"{len(nltk_sents)} shortest ({', '.join(str(len(s)) for s in nltk_sents)} words)")
    words, offsets, _ = model._encode(g, sents)
    logtheta = np.log(theta)
    args_k = g.kernel_args()

    def io(w=words, o=offsets):
        ll = np.empty(len(o) - 1)
        c = np.zeros(g.n_params)
        cky.inside_outside(logtheta, *args_k, w, o, True, ll, c)
        return ll

    def vit(w=words, o=offsets):
        sc = np.empty(len(o) - 1)
        out = np.zeros((2 * len(w), 4), dtype=np.int64)
        cky.viterbi_parses(logtheta, *args_k, w, o, sc, out)
        return sc

    t_io, ll = best_time(io, args.repeats)
    t_vit, vs = best_time(vit, args.repeats)
    nw, no, _ = model._encode(g, nltk_sents)
    t_vit_small, vs_small = best_time(lambda: vit(nw, no), args.repeats)
    t_io_small, _ = best_time(lambda: io(nw, no), args.repeats)

    # the explanation-graph engine on the short sentences
    prog = g.to_program(theta)
    goals = [prog.predicates["sentence"](tuple(s)) for s in nltk_sents]
    pm = ProgramModel(prog, init="declared")
    t0 = time.perf_counter()
    lp_prog = pm.log_prob(goals)  # tabled search, graph compiled, one inside pass
    t_build = time.perf_counter() - t0
    t_prog, _ = best_time(lambda: pm.expected_counts(goals), args.repeats)  # graph cached
    assert np.allclose(lp_prog, io(nw, no), atol=1e-8), "program and kernels disagree"

    # references in a subprocess
    ref = {}
    if Path(args.ref_python).exists():
        spec = {"N": len(g.nonterminals), "nonterminals": g.nonterminals,
                "start": [[s, float(logtheta[q])] for q, s in enumerate(g.start)],
                "rules": [[g.param_lhs[p], list(g.param_rhs[p]), float(logtheta[p])]
                          for p in range(len(g.start), g.n_params)],
                "sentences": sents, "nltk_n": len(nltk_sents), "repeats": args.repeats,
                "batch": args.batch}
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump(spec, fh)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        proc = subprocess.run([args.ref_python, "-c", REFERENCE, fh.name], capture_output=True,
                              text=True, env=env, check=False)
        os.unlink(fh.name)
        if proc.returncode == 0:
            ref = json.loads(proc.stdout.strip().splitlines()[-1])
        else:
            ref = {"torch_error": proc.stderr[-300:], "nltk_error": proc.stderr[-300:]}
    else:
        ref = {"torch_error": f"no reference interpreter at {args.ref_python}",
               "nltk_error": f"no reference interpreter at {args.ref_python}"}

    n, m = len(sents), len(nltk_sents)
    rows = [("inside-outside", "hs.PCFG kernels", n, t_io, None),
            ("CKY Viterbi", "hs.PCFG kernels", n, t_vit, None)]
    if "torch_io" in ref:
        err = np.max(np.abs(np.array(ref["torch_io"]["logz"]) - ll))
        rows.append(("inside-outside", f"torch-struct SentCFG {ref['torch_version']} "
                     f"(|log Z diff| {err:.1e})", n, ref["torch_io"]["seconds"], t_io))
        err = np.max(np.abs(np.array(ref["torch_cky"]["logmax"]) - vs))
        rows.append(("CKY Viterbi", f"torch-struct SentCFG (|log max diff| {err:.1e})", n,
                     ref["torch_cky"]["seconds"], t_vit))
    else:
        rows.append(("both", f"torch-struct: NOT RUN ({ref.get('torch_error')})", n,
                     float("nan"), None))
    rows.append(("CKY Viterbi", "hs.PCFG kernels, shortest sentences", m, t_vit_small, None))
    if "nltk" in ref:
        lps = np.array([np.nan if v is None else v for v in ref["nltk"]["logmax"]])
        err = np.nanmax(np.abs(lps - vs_small))
        rows.append(("CKY Viterbi", f"NLTK ViterbiParser {ref['nltk']['version']} "
                     f"(|log max diff| {err:.1e})", m, ref["nltk"]["seconds"], t_vit_small))
    else:
        rows.append(("CKY Viterbi", f"NLTK: NOT RUN ({ref.get('nltk_error')})", m,
                     float("nan"), None))
    rows.append(("inside-outside", "hs.PCFG kernels, shortest sentences", m, t_io_small,
                 None))
    rows.append(("inside-outside", "explanation-graph engine, graph already built", m,
                 t_prog, t_io_small))
    rows.append(("inside", "explanation-graph engine, first call (tabled search, compile, "
                 "inside)", m, t_build, t_io_small))
    print()
    print("| task | implementation | sentences | seconds | sentences/s | hs.PCFG speed-up |")
    print("|---|---|---|---|---|---|")
    for task, impl, k, sec, ours in rows:
        rate = k / sec if sec == sec and sec > 0 else float("nan")
        ratio = f"{sec / ours:.1f}x" if ours else "-"
        print(f"| {task} | {impl} | {k} | {sec:.4f} | {rate:.1f} | {ratio} |")


if __name__ == "__main__":
    main()

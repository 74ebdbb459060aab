"""PCFG inside-outside and CKY-Viterbi: hs.PCFG's kernels against NLTK's ViterbiParser,
torch-struct's SentCFG (CPU) and the explanation-graph engine, same grammar, same sentences,
same run.

    .venv/bin/python benchmarks/bench_pcfg.py               # ~10 minutes on a shared 2-core box
    .venv/bin/python benchmarks/bench_pcfg.py --quick
    .venv/bin/python benchmarks/bench_pcfg.py --ref-python /work/venv-pcfgref/bin/python

Grammar: the one ``experiments/prism_pcfg.py --max-length 12`` builds (the CNF rules of the
Penn Treebank sample's trees with at most 12 part-of-speech tags, binarised with horizontal
Markov order 0: 135 nonterminals, 758 rules, close to the paper's ATR grammar), its
probabilities the relative frequencies of the rules in those trees. Sentences: tag
sequences of the treebank of 2 to ``--max-length`` (40) tags that the grammar derives,
drawn at random (seeded). Sentences per second, one thread, process CPU time (the machine
is shared), best of ``--repeats`` for hs.PCFG (the references run once: they are slow):

- inside-outside: log P(w) and the expected count of every rule (one EM E-step);
  torch-struct: ``SentCFG.partition`` then ``.marginals`` (autograd: its inside-outside),
  float64, one sentence at a time (its dense charts hold every rule combination: n^2 N^3).
- CKY: the Viterbi parse; NLTK: ``ViterbiParser.parse`` (every sentence); torch-struct:
  ``.max`` and ``.argmax``.
- torch-struct and the explanation-graph engine (``grammar_program`` +
  ``ProgramModel``: building the graphs by tabled search, then one inside-outside pass) run on
  ``--small`` other sentences of 8-10 words (longer ones exceed 10 GiB in torch-struct
  with this grammar); hs.PCFG is timed on the same ones for the ratio.

The references run in a subprocess of ``--ref-python`` (a venv with nltk, torch-struct and
torch; the library does not depend on them). Each reports its numbers for the same
sentences, and the log-probabilities are compared with ours to show it is the same task.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _common import cpu_name  # noqa: E402

import hiddenstate as hs  # noqa: E402
from hiddenstate.grammar import Grammar, normalise, read_trees, to_cnf  # noqa: E402
from hiddenstate.kernels import cky  # noqa: E402
from hiddenstate.programs import ProgramModel, grammar_program  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "ptb-sample-treebank"

REFERENCE = r'''
import json, sys, time
spec = json.load(open(sys.argv[1]))
out = {}
N, start, rules = spec["N"], spec["start"], spec["rules"]
sents, small = spec["sentences"][:spec["n_main"]], [spec["sentences"][i] for i in spec["small"]]
which = sys.argv[2]
try:
    if which != "torch":
        raise SystemExit
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
    batches = [[x] for x in small]  # one sentence at a time: dense charts are large
    def timed(fn):
        t0 = time.process_time(); r = fn(); return time.process_time() - t0, r
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
except SystemExit:
    pass
try:
    if which != "nltk":
        raise SystemExit
    import math
    import nltk
    from nltk.grammar import PCFG, Nonterminal, ProbabilisticProduction
    prods = [ProbabilisticProduction(Nonterminal("<start>"), [Nonterminal(a)], prob=math.exp(lp))
             for a, lp in start]
    for lhs, rhs, lp in rules:
        r = [Nonterminal(x) for x in rhs] if len(rhs) == 2 else [rhs[0]]
        prods.append(ProbabilisticProduction(Nonterminal(lhs), r, prob=math.exp(lp)))
    g = PCFG(Nonterminal("<start>"), prods)
    parser = nltk.ViterbiParser(g, max_time=None)
    def run():
        res = []
        for s in sents:
            trees = list(parser.parse(s))
            res.append(math.log(trees[0].prob()) if trees else None)
        return res
    run_t0 = time.process_time(); lps = run(); t = time.process_time() - run_t0
    out["nltk"] = {"seconds": t, "logmax": lps, "version": nltk.__version__}
except Exception as exc:  # noqa: BLE001
    out["nltk_error"] = f"{type(exc).__name__}: {exc}"
except SystemExit:
    pass
print(json.dumps(out))
'''


def grammar_and_sentences(max_length: int, seed: int):
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
    ok = np.isfinite(model.score_samples(pool))
    sents = [s for s, good in zip(pool, ok, strict=True) if good]
    return model, g, theta, sents


def _limit_memory() -> None:
    """The references may use at most 10 GiB of address space (torch-struct's dense charts
    grow as n^2 N^3 for N nonterminals; the machine is shared)."""
    resource.setrlimit(resource.RLIMIT_AS, (10 << 30, 10 << 30))


def cpu_time(fn, repeats: int):
    """(minimum process CPU seconds over ``repeats`` calls after one untimed warm-up, the
    last result): CPU time, not wall time, because the machine is shared."""
    fn()
    best, out = None, None
    for _ in range(repeats):
        t0 = time.process_time()
        out = fn()
        dt = time.process_time() - t0
        best = dt if best is None else min(best, dt)
    return best, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--max-length", type=int, default=40)
    ap.add_argument("--sentences", type=int, default=30)
    ap.add_argument("--small", type=int, default=3,
                    help="sentences of 8-10 words for torch-struct and the program engine")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ref-python", default="/work/venv-pcfgref/bin/python")
    args = ap.parse_args(argv)
    if args.quick:
        args.sentences, args.small, args.repeats, args.max_length = 8, 1, 1, 20
    model, g, theta, pool = grammar_and_sentences(args.max_length, 0)
    sents = pool[:args.sentences]
    small = [x for x in pool if 8 <= len(x) <= 10][:args.small]
    small_idx = list(range(len(sents), len(sents) + len(small)))
    lengths = [len(x) for x in sents]
    print(f"# bench_pcfg on {cpu_name()}: one thread, process CPU seconds")
    print(f"grammar: {len(g.nonterminals)} nonterminals, {g.n_rules} rules, {len(g.words)} "
          f"terminals; {len(sents)} sentences of {min(lengths)}-{max(lengths)} words "
          f"(mean {np.mean(lengths):.1f}); torch-struct and the program engine on a subset of "
          f"{len(small)} ({', '.join(str(len(x)) for x in small)} words)")
    words, offsets, _ = model._encode(g, sents)
    sw, so, _ = model._encode(g, small)
    logtheta = np.log(theta)
    kargs = g.kernel_args()

    def io(w, o):
        ll = np.empty(len(o) - 1)
        c = np.zeros(g.n_params)
        cky.inside_outside(logtheta, *kargs, w, o, True, ll, c)
        return ll

    def vit(w, o):
        sc = np.empty(len(o) - 1)
        out = np.zeros((2 * len(w), 4), dtype=np.int64)
        cky.viterbi_parses(logtheta, *kargs, w, o, sc, out)
        return sc

    t_io, ll = cpu_time(lambda: io(words, offsets), args.repeats)
    t_vit, vs = cpu_time(lambda: vit(words, offsets), args.repeats)
    t_io_s, ll_s = cpu_time(lambda: io(sw, so), args.repeats)
    t_vit_s, vs_s = cpu_time(lambda: vit(sw, so), args.repeats)

    # the explanation-graph engine on the subset
    prog = grammar_program(g, theta)
    goals = [prog.predicates["sentence"](tuple(x)) for x in small]
    pm = ProgramModel(prog, init="declared")
    t0 = time.process_time()
    lp_prog = pm.score_samples(goals)  # tabled search, graph compiled, one inside pass
    t_build = time.process_time() - t0
    t_prog, _ = cpu_time(lambda: pm.expected_counts(goals), args.repeats)  # graph cached
    prog_err = float(np.max(np.abs(lp_prog - ll_s)))

    # references in a subprocess
    ref: dict = {}
    if Path(args.ref_python).exists():
        spec = {"N": len(g.nonterminals), "nonterminals": g.nonterminals,
                "start": [[x, float(logtheta[q])] for q, x in enumerate(g.start)],
                "rules": [[g.param_lhs[p], list(g.param_rhs[p]), float(logtheta[p])]
                          for p in range(len(g.start), g.n_params)],
                "sentences": sents + small, "n_main": len(sents), "small": small_idx}
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump(spec, fh)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "PYTHONWARNINGS": "ignore"}
        for which in ("nltk", "torch"):  # separate processes: one failing spares the other
            proc = subprocess.run([args.ref_python, "-c", REFERENCE, fh.name, which],
                                  capture_output=True, text=True, env=env, check=False,
                                  preexec_fn=_limit_memory)
            if proc.returncode == 0:
                ref.update(json.loads(proc.stdout.strip().splitlines()[-1]))
            else:
                ref[f"{which}_error"] = (f"exit status {proc.returncode} "
                                         f"{proc.stderr.strip()[-200:]}")
        os.unlink(fh.name)
    else:
        ref = {"torch_error": f"no reference interpreter at {args.ref_python}",
               "nltk_error": f"no reference interpreter at {args.ref_python}"}

    n, m = len(sents), len(small)
    rows = [("inside-outside", "hs.PCFG kernels", n, t_io, None, ""),
            ("CKY Viterbi", "hs.PCFG kernels", n, t_vit, None, "")]
    if "nltk" in ref:
        lps = np.array([np.nan if v is None else v for v in ref["nltk"]["logmax"]])
        rows.append(("CKY Viterbi", f"NLTK ViterbiParser {ref['nltk']['version']}", n,
                     ref["nltk"]["seconds"], t_vit,
                     f"max log-prob diff {np.nanmax(np.abs(lps - vs)):.1e}"))
    else:
        rows.append(("CKY Viterbi", "NLTK ViterbiParser: NOT RUN", n, float("nan"), None,
                     str(ref.get("nltk_error"))[-120:].replace("\n", " ")))
    rows += [("inside-outside", "hs.PCFG kernels (subset)", m, t_io_s, None, ""),
             ("CKY Viterbi", "hs.PCFG kernels (subset)", m, t_vit_s, None, "")]
    if "torch_io" in ref:
        rows.append(("inside-outside", f"torch-struct SentCFG, torch {ref['torch_version']}",
                     m, ref["torch_io"]["seconds"], t_io_s, "log Z diff "
                     f"{np.max(np.abs(np.array(ref['torch_io']['logz']) - ll_s)):.1e}"))
        rows.append(("CKY Viterbi", "torch-struct SentCFG", m, ref["torch_cky"]["seconds"],
                     t_vit_s, "max log-prob diff "
                     f"{np.max(np.abs(np.array(ref['torch_cky']['logmax']) - vs_s)):.1e}"))
    else:
        rows.append(("both", "torch-struct SentCFG: NOT RUN", m, float("nan"), None,
                     str(ref.get("torch_error"))[-120:].replace("\n", " ")))
    rows += [("inside-outside", "explanation-graph engine, graph built", m, t_prog, t_io_s,
              f"log P diff {prog_err:.1e}"),
             ("inside", "explanation-graph engine, first call (tabled search + compile)", m,
              t_build, t_io_s, "")]
    print()
    print("| task | implementation | sentences | CPU s | sentences/s | hs.PCFG speed-up | "
          "same task? |")
    print("|---|---|---|---|---|---|---|")
    for task, impl, k, sec, ours, note in rows:
        rate = k / sec if sec == sec and sec > 0 else float("nan")
        ratio = f"{sec / ours:.0f}x" if ours else "-"
        print(f"| {task} | {impl} | {k} | {sec:.4g} | {rate:.3g} | {ratio} | {note} |")


if __name__ == "__main__":
    main()

"""Probabilistic left-corner grammars against PCFGs under VT, EM, MAP and VB (Sato & Kubota,
Table 3 beside Table 2) on the Penn Treebank sample, and why Viterbi training does not parse
best here (Table 2, one change at a time).

    .venv/bin/python experiments/prism_plcg.py              # Tables 2 and 3
    .venv/bin/python experiments/prism_plcg.py --quick      # smoke run (~1.5 minutes)
    .venv/bin/python experiments/prism_plcg.py --ablation   # Table 2, one change at a time
    .venv/bin/python experiments/prism_plcg.py --render     # the markdown from the raw results

The main run took 9.4 minutes of wall time (5.7 CPU minutes: under 3 minutes on 2 free
cores) with ``nice -n 10`` on 2 cores shared with other jobs (load average 5-6).

Writes ``experiments/results/prism_plcg.md`` and ``.png``, rendered from the raw results
``prism_plcg.json`` (main run) and ``prism_plcg_ablation.json`` (``--ablation``), so each
part can be rerun alone.

Set-up (that of ``experiments/prism_pcfg.py``): the sentences are the part-of-speech
sequences of the trees of ``../shared/data/ptb-sample-treebank`` with at most
``--max-length`` tags; the trees are normalised, unary chains collapsed and binarised
(horizontal Markov order ``--markov``); the grammar is the CNF rules of all of them, and the
PLCG uses the same rules (same trees, different probabilities; see ``docs/plcg.md``). Each
model and mode learns from the training sentences of a fold (``--folds``-fold
cross-validation over contiguous sections), with ``--restarts`` random restarts (every
switch drawn from a symmetric Dirichlet of concentration ``--init-concentration``) keeping
the one with the best final objective; pseudo-counts as in the paper (EM none, MAP and VT
Dirichlet 2, VB 1); EM, MAP and VB stop when the objective gains less than 1e-4, VT when its
Viterbi parses repeat. Each test sentence is parsed by its Viterbi derivation and compared
with its gold tree (LT, BT, 0-CB: :func:`hiddenstate.metrics.tree_scores`). Supervised: the
counts of the training trees' rules (PCFG) or left-corner operations (PLCG), plus one.
Folds run in ``--jobs`` processes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from prism_pcfg import PAPER_T2, _counts_in, add_arguments, load

import hiddenstate as hs
from hiddenstate.grammar import Grammar, to_cnf
from hiddenstate.metrics import tree_scores

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "experiments" / "results"
MODES = ("vt", "em", "map", "vb")
PRIOR = {"vt": 2.0, "em": 1.0, "map": 2.0, "vb": 1.0}
MODELS = ("PCFG", "PLCG")
PAPER_T3 = {  # LT, BT, 0-CB (%), PLCG on ATR
    "vt": (76.26, 78.86, 87.45), "em": (71.81, 75.17, 86.49),
    "map": (71.17, 74.28, 86.03), "vb": (71.15, 74.28, 86.04)}
PAPER_SD = {"PCFG": {"vt": (0.87, 0.84, 0.92), "em": (0.88, 1.01, 0.89),
                     "map": (1.13, 1.20, 0.84), "vb": (1.10, 1.13, 0.87)},
            "PLCG": {"vt": (0.96, 0.70, 1.00), "em": (0.91, 1.15, 0.97),
                     "map": (0.93, 1.12, 0.67), "vb": (0.90, 1.00, 0.71)}}
METRICS = (("LT", "labelled_tree"), ("BT", "bracketed_tree"), ("0-CB", "zero_crossing"),
           ("F1", "f1"))

# -- the data, loaded once per process -------------------------------------------------------------
_DATA: dict = {}


def corpus(max_length: int, markov: int, data_dir: str):
    """(gold trees, CNF trees, grammar), cached per process."""
    key = (max_length, markov, data_dir)
    if key not in _DATA:
        gold = load(max_length, Path(data_dir))
        cnf = [to_cnf(t, None if markov < 0 else markov) for t in gold]
        g, _ = Grammar.from_trees(cnf)
        _DATA[key] = (gold, cnf, g)
    return _DATA[key]


def split(n: int, folds: int, f: int):
    fold_of = np.minimum(np.arange(n) * folds // n, folds - 1)
    return np.flatnonzero(fold_of != f), np.flatnonzero(fold_of == f)


def _scores(gold, parses) -> dict:
    s = tree_scores(gold, parses)
    out = {label: getattr(s, attr) for label, attr in METRICS}
    out["unparsed"] = sum(p is None for p in parses) / len(parses)
    return out


def run_cell(task: dict) -> dict:
    """One (model, mode, fold) with its restarts: every restart's objective, iterations,
    CPU seconds and held-out scores; ``best`` is the restart kept (best objective)."""
    gold, cnf, g = corpus(task["max_length"], task["markov"], task["data_dir"])
    train, test = split(len(gold), task["folds"], task["fold"])
    sents = [t.leaves() for t in gold]
    tr = [sents[i] for i in train]
    te, te_gold = [sents[i] for i in test], [gold[i] for i in test]
    cls = getattr(hs, task["model"])
    rules, start = g.rule_list(), list(g.start)
    if task["mode"] == "supervised":
        m = cls(rules=rules, start=start)
        if task["model"] == "PCFG":
            counts = _counts_in(g, [cnf[i] for i in train])
            m.theta_ = np.concatenate([(counts[lo:lo + k] + 1) / (counts[lo:lo + k] + 1).sum()
                                       for _, lo, k in g.switches()])
        else:
            m.theta_ = m.counts_to_theta(m.tree_counts([cnf[i] for i in train]) + 1.0)
        return {**task, "restarts": [{"objective": 0.0, "iterations": 0, "seconds": 0.0,
                                      **_scores(te_gold, m.parse(te, errors="none"))}],
                "best": 0}
    out = []
    for r in range(task["restarts"]):
        m = cls(rules=rules, start=start, learn=task["mode"], prior=task["prior"],
                # task["tol"] is absolute (PRISM's epsilon); the library's tol is per word
                n_iter=task["n_iter"], tol=task["tol"] / sum(map(len, tr)), init=task["init"],
                init_concentration=task["concentration"],
                random_state=1000 * task["fold"] + r + task["seed"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.process_time()
            m.fit(tr)
            seconds = time.process_time() - t0
        row = {"objective": m.monitor_.history[-1], "iterations": len(m.monitor_.history),
               "seconds": seconds, **_scores(te_gold, m.parse(te, errors="none"))}
        if task["diagnose"] and task["mode"] == "vt":
            row["fixed_point"] = _fixed_point(m, tr)
        out.append((row, m))
    best = int(np.argmax([row["objective"] for row, _ in out]))
    if task["diagnose"] and task["mode"] == "vt":
        out[best][0].update(ties_train=_ties(out[best][1], tr), ties_test=_ties(out[best][1], te))
    return {**task, "restarts": [row for row, _ in out], "best": best}


def _fixed_point(m, train) -> bool:
    """Does one more VT step from where VT stopped leave every probability unchanged?"""
    again = type(m)(**{**m.get_params(), "init": "current", "n_iter": 1, "n_init": 1})
    again.theta_ = m.theta_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again.fit(train)
    return bool(np.allclose(again.theta_, m.theta_, rtol=0, atol=1e-12))


def _ties(m, sents) -> float:
    """Fraction of sentences whose two best parses have the same probability."""
    n = 0
    for s in sents:
        best = m.parse_k_best(s, 2)
        n += len(best) == 2 and abs(best[0][0] - best[1][0]) <= 1e-9 * abs(best[0][0])
    return n / len(sents)


def tasks_for(args, models, modes, folds, vt_only: bool = False, **overrides) -> list[dict]:
    """The cells to run: the settings of ``args``, then ``overrides`` (for VT alone if
    ``vt_only``)."""
    out = []
    for model in models:
        for mode in modes:
            for f in folds:
                t = {"max_length": args.max_length, "markov": args.markov,
                     "folds": args.folds, "restarts": args.restarts,
                     "concentration": args.init_concentration, "init": "random",
                     "n_iter": 1000, "tol": 1e-4, "seed": 0, "model": model, "mode": mode,
                     "fold": f, "prior": PRIOR.get(mode, 1.0), "diagnose": False,
                     "data_dir": str(args.data_dir)}
                if not vt_only or mode == "vt":
                    t.update(overrides)
                out.append(t)
    return out


def run_all(tasks: list[dict], jobs: int) -> list[dict]:
    if jobs == 1:
        return [run_cell(t) for t in tasks]
    # the slowest cells first, so that the two processes finish together
    order = sorted(range(len(tasks)), key=lambda i: -_cost(tasks[i]))
    with ProcessPoolExecutor(jobs) as ex:
        done = list(ex.map(run_cell, [tasks[i] for i in order]))
    out: list = [None] * len(tasks)
    for i, res in zip(order, done, strict=True):
        out[i] = res
    return out


def _cost(task) -> float:
    per = {"em": 3.0, "map": 2.0, "vb": 3.0, "vt": 1.0, "supervised": 0.1}[task["mode"]]
    return per * task["restarts"] * (1.0 if task["model"] == "PCFG" else 0.5)


# -- the ablation: Table 2, one change at a time ------------------------------------------------
def ablation_variants(args) -> list[tuple[str, str, dict]]:
    """(name, what changes, overrides) — each changes one thing of the baseline, which is
    the main run's PCFG set-up (the library's Dirichlet(1) starts); cheapest and most
    telling first (the results are saved after each)."""
    return [
        ("baseline", f"as Table 2 above: <= {args.max_length} tags, Markov order "
         f"{args.markov}, Dirichlet({args.init_concentration:g}) starts, {args.restarts} "
         "restarts, VT prior 2", {}),
        ("init: Dirichlet(10)", "the paper's 'random but almost uniform' starts (every "
         "probability within about 30% of uniform; the previous default here)",
         {"concentration": 10.0}),
        ("prior: VT 1.0", "VT without pseudo-counts (hard EM)",
         {"prior": 1.0, "vt_only": True}),
        ("prior: VT 1.1", "VT with pseudo-count 0.1", {"prior": 1.1, "vt_only": True}),
        ("prior: VT 5", "VT with pseudo-count 4", {"prior": 5.0, "vt_only": True}),
        ("init: uniform", "one uniform start (ties among best parses broken by rule order)",
         {"init": "uniform", "restarts": 1}),
        ("init: Dirichlet(0.3)", "sparse random starts", {"concentration": 0.3}),
        ("restarts: 16", "2x more restarts, best objective kept", {"restarts": 16}),
        ("stopping: tol 1e-6", "MAP and VB run 100x closer to convergence (VT: the "
         "baseline's, it stops when its parses repeat)", {"tol": 1e-6, "not_vt": True}),
        ("grammar: Markov 1", "binarisation keeps the next sibling's label", {"markov": 1}),
        ("corpus: <= 12 tags", "more and longer sentences", {"max_length": 12}),
    ]


# -- reporting ----------------------------------------------------------------------------------
def _table(results: list[dict]) -> dict:
    """(model, mode) -> {metric: (mean, sd) over folds of the kept restart, iterations,
    seconds, all-restart LT mean, corr(objective, LT) over restarts}."""
    cells: dict = {}
    for r in results:
        cells.setdefault((r["model"], r["mode"]), []).append(r)
    out = {}
    for key, rs in cells.items():
        kept = [r["restarts"][r["best"]] for r in rs]
        row = {}
        for label, _ in (*METRICS, ("unparsed", None)):
            v = 100 * np.array([k[label] for k in kept])
            row[label] = (v.mean(), v.std(ddof=1) if len(v) > 1 else 0.0)
        every = [x for r in rs for x in r["restarts"]]
        row["iterations"] = np.mean([x["iterations"] for x in every])
        row["seconds"] = np.mean([x["seconds"] for x in every])
        row["LT_all"] = 100 * np.mean([x["LT"] for x in every])
        corr = [np.corrcoef([x["objective"] for x in r["restarts"]],
                            [x["LT"] for x in r["restarts"]])[0, 1]
                for r in rs if len(r["restarts"]) > 2
                and np.std([x["LT"] for x in r["restarts"]]) > 0]
        row["corr"] = float(np.mean(corr)) if corr else float("nan")
        if any("fixed_point" in x for x in every):
            row["fixed_point"] = 100 * np.mean([x["fixed_point"] for x in every])
            for k in ("ties_train", "ties_test"):  # the kept restarts
                row[k] = 100 * np.mean([x[k] for x in kept])
        out[key] = row
    return out


def _paired(results, model: str, a: str, b: str, label: str) -> np.ndarray:
    """Per fold, ``label`` of mode ``a``'s kept restart minus mode ``b``'s."""
    kept = {(r["mode"], r["fold"]): r["restarts"][r["best"]][label] for r in results
            if r["model"] == model}
    folds = sorted(f for m, f in kept if m == a)
    return np.array([kept[a, f] - kept[b, f] for f in folds])


def _fmt(cell) -> str:
    return f"{cell[0]:.1f} ({cell[1]:.1f})"


def render(main: dict | None, ablation: dict | None) -> str:
    lines = ["# PLCG vs PCFG under VT, EM, MAP, VB (Sato & Kubota, Tables 2-3)", ""]
    if main is not None:
        a = main["args"]
        t = _table(main["results"])
        lines += [
            f"Command: `python experiments/prism_plcg.py{' --quick' if a['quick'] else ''}` "
            f"(--max-length {a['max_length']} --markov {a['markov']} --folds {a['folds']} "
            f"--restarts {a['restarts']} --init-concentration {a['init_concentration']} "
            f"--jobs {a['jobs']}); wall time {main['wall'] / 60:.1f} min, "
            f"CPU time {main['cpu'] / 60:.1f} min (2 CPU cores shared with other jobs).",
            "",
            "## Data",
            "",
            f"- {main['n_sentences']} sentences (part-of-speech sequences, at most "
            f"{a['max_length']} tags, mean length {main['mean_length']:.1f}); "
            f"{a['folds']}-fold CV over contiguous sections, {a['restarts']} restarts per "
            "model, mode and fold (paper: ATR corpus, 10,995 sentences, 8 folds, 50 "
            "restarts).",
            f"- The same CNF grammar for both models: {main['grammar']['nonterminals']} "
            f"nonterminals, {main['grammar']['rules']} rules, {main['grammar']['words']} "
            f"terminals (paper: 861 rules). PCFG parameters: {main['grammar']['pcfg_params']};"
            f" PLCG parameters (shift, projection, attach): {main['grammar']['plcg_params']} "
            f"in {main['grammar']['plcg_switches']} switches.",
            "",
            "## Tables 2 and 3: parsing the held-out fold (%, mean (sd) over folds)",
            "",
            "| metric | model | VT | EM | MAP | VB | supervised | paper VT / EM / MAP / VB |",
            "|---|---|---|---|---|---|---|---|"]
        for label, _ in METRICS:
            for model in MODELS:
                paper = PAPER_T2 if model == "PCFG" else PAPER_T3
                pi = {"LT": 0, "BT": 1, "0-CB": 2}.get(label)
                ref = (" / ".join(f"{paper[m][pi]:.2f}" for m in MODES)
                       if pi is not None else "-")
                if pi is not None and model == "PCFG":
                    ref += f" (sup. {PAPER_T2['supervised'][pi]:.2f})"
                lines.append(f"| {label} | {model} | "
                             + " | ".join(_fmt(t[model, m][label]) for m in MODES)
                             + f" | {_fmt(t[model, 'supervised'][label])} | {ref} |")
        lines.append("| unparsed test sentences | " + " | ".join(
            ["PCFG / PLCG", *[f"{t['PCFG', m]['unparsed'][0]:.1f} / "
                              f"{t['PLCG', m]['unparsed'][0]:.1f}" for m in MODES],
             "0 / 0", "-"]) + " |")
        lines += ["", "| model | mode | iterations (mean over restarts) | CPU s per restart | "
                  "LT of the kept restart | LT mean over all restarts | corr(objective, LT) "
                  "over restarts |", "|---|---|---|---|---|---|---|"]
        for model in MODELS:
            for m in MODES:
                c = t[model, m]
                lines.append(f"| {model} | {m.upper()} | {c['iterations']:.1f} | "
                             f"{c['seconds']:.2f} | {c['LT'][0]:.1f} | {c['LT_all']:.1f} | "
                             f"{c['corr']:.2f} |")
        lines += ["", "Paired over folds (the same test sentences), LT and BT of VT minus those of "
                  "each other mode: mean (sd), and the folds where VT is ahead:", ""]
        for model in MODELS:
            for label in ("LT", "BT"):
                cells = []
                for other in ("em", "map", "vb"):
                    d = _paired(main["results"], model, "vt", other, label)
                    cells.append(f"{other.upper()} {100 * d.mean():+.1f} "
                                 f"({100 * d.std(ddof=1):.1f}; {np.sum(d > 0)}/{len(d)})")
                lines.append(f"- {model}, {label}: " + ", ".join(cells))
        lines += ["", *_claims(t), "", *_against_paper(main, t), ""]
    if ablation is not None:
        lines += _render_ablation(ablation)
    return "\n".join(lines) + "\n"


def _claims(t) -> list[str]:
    def best(model, label):
        return max(MODES, key=lambda m: t[model, m][label][0])

    out = ["## The paper's claims", ""]
    for model, table in (("PCFG", "Table 2"), ("PLCG", "Table 3")):
        for label in ("LT", "BT", "0-CB"):
            b = best(model, label)
            holds = b == "vt"
            if model == "PCFG" and label == "0-CB":  # the paper: VT is *not* best on 0-CB
                out.append(f"- {table}, {label}: VT is not best (paper: VB 87.08 best): "
                           f"{'HOLDS' if not holds else 'DOES NOT HOLD'} (best "
                           f"{b.upper()} {t[model, b][label][0]:.1f}, VT "
                           f"{t[model, 'vt'][label][0]:.1f}).")
                continue
            out.append(f"- {table}, {label}: VT is best of the four: "
                       f"{'HOLDS' if holds else 'DOES NOT HOLD'} (best {b.upper()} "
                       f"{t[model, b][label][0]:.1f}, VT {t[model, 'vt'][label][0]:.1f}).")
    plcg_better = t["PLCG", "vt"]["LT"][0] > t["PCFG", "vt"]["LT"][0]
    out.append(f"- PLCG parses better than the PCFG under VT (paper: LT 76.26 vs 74.69): "
               f"{'HOLDS' if plcg_better else 'DOES NOT HOLD'} ({t['PLCG', 'vt']['LT'][0]:.1f}"
               f" vs {t['PCFG', 'vt']['LT'][0]:.1f}).")
    return out


def _against_paper(main: dict, t) -> list[str]:
    """Which numbers can be compared with the paper's, and why the others cannot."""
    gr, n = main["grammar"], main["n_sentences"]
    n_train = n - n // main["args"]["folds"]
    sup = {m: t[m, "supervised"]["LT"][0] for m in MODELS}
    use = _usage(main["args"])
    vt_best = all(max(MODES, key=lambda m, lab=lab: t["PCFG", m][lab][0]) == "vt"
                  for lab in ("LT", "BT"))
    return [
        "## Which numbers match the paper, and why the others do not", "",
        "- **Levels: LT and BT do not match; 0-CB roughly does.** Every LT and BT cell is "
        "30-50 points below the paper's, while 0-CB (no bracket crossing a gold one) is within "
        "about 6 points of the paper's except under EM. The "
        f"supervised estimate (the training trees' own counts) reaches only LT "
        f"{sup['PCFG']:.1f} (PCFG) and {sup['PLCG']:.1f} (PLCG) here against the paper's "
        "79.06: the grammar, not the learning, caps the levels. It is read from the "
        "treebank's trees and binarised with Markov order 0 (`NP -> DT NP|<>`), so it "
        "over-generates (see the parse counts in prism_pcfg.md), and LT counts a sentence "
        "only when its whole tree is right. The paper's ATR grammar was written by hand for "
        "its corpus. Only the order of the modes can be compared.",
        ("- **Table 2 (PCFG), order of the modes: matches.** VT parses best on LT and BT, "
         "EM worst, and VT is not best on 0-CB, as in the paper (see the claims above); but "
         "the paired per-fold differences show VT's lead over MAP and VB is within the "
         "fold-to-fold noise here (and it turns into a deficit with 16 restarts: see the "
         "ablation), where the paper reports it as significant over 50 restarts and 10,995 "
         "sentences." if vt_best else
         "- **Table 2 (PCFG), order of the modes: does not match** (see the claims above "
         "and the ablation below)."),
        f"- **Table 3 (PLCG): does not match.** The PLCG has {gr['plcg_params']} parameters "
        f"against the PCFG's {gr['pcfg_params']} for about {n_train} training sentences (the "
        "paper: 10,995 sentences). Its supervised estimate already parses worse than the "
        f"PCFG's ({sup['PLCG']:.1f} vs {sup['PCFG']:.1f} LT): the left-corner conditioning "
        "does not pay for its parameters on this little data. VT suffers most: it counts one "
        "derivation per sentence, so a switch that no Viterbi derivation uses keeps its "
        "pseudo-counts alone, and its restarts scatter widely (see the LT of all restarts); "
        "MAP and VB spread expected counts over every derivation. Even the gold trees of all "
        f"{n} sentences use only {use['PLCG'][1]} of the PLCG's {use['PLCG'][0]} outcomes of "
        f"switches with a choice (the PCFG: {use['PCFG'][1]} of {use['PCFG'][0]}), and "
        f"they make {use['PLCG'][2]:.0f} choices, against which the pseudo-count 1 of MAP "
        f"and VT adds {use['PLCG'][0]} (PCFG: {use['PCFG'][2]:.0f} and {use['PCFG'][0]}). "
        "The paper's claim that the PLCG beats the PCFG under VT needs more data than the "
        "treebank sample holds.",
        "- **EM leaves test sentences without a parse** (a rule no training sentence used gets "
        "probability zero; counted wrong on every metric); the paper does not say how it "
        "handled these, and its corpus is 30 times larger, so they are rarer there.",
    ]


def _usage(a: dict) -> dict:
    """model -> (outcomes of switches with a choice, those the gold trees of every sentence
    use, the number of such choices the trees make)."""
    _, cnf, g = corpus(a["max_length"], a["markov"], a["data_dir"])
    plcg = hs.PLCG(rules=g.rule_list(), start=list(g.start))
    counts = {"PCFG": (_counts_in(g, cnf), g.switches()),
              "PLCG": (plcg.tree_counts(cnf), plcg.left_corner().spans())}
    out = {}
    for model, (c, spans) in counts.items():
        spans = [(lo, k) for _, lo, k in spans if k > 1]
        out[model] = (sum(k for _, k in spans), int(sum((c[lo:lo + k] > 0).sum()
                                                        for lo, k in spans)),
                      float(sum(c[lo:lo + k].sum() for lo, k in spans)))
    return out


def _render_ablation(ab: dict) -> list[str]:
    a = ab["args"]
    lines = ["## Why VT does not parse best here (Table 2, one change at a time)", "",
             f"Command: `python experiments/prism_plcg.py --ablation` ({a['folds']} folds, "
             f"{a['restarts']} restarts unless the row says otherwise; PCFG); wall time "
             f"{ab['wall'] / 60:.1f} min, CPU time {ab['cpu'] / 60:.1f} min. Each row changes "
             "one thing of the baseline; LT of the kept restart (mean over folds, %).", "",
             "| change | what | VT LT | VT BT | VT 0-CB | MAP LT | VB LT | VT - max(MAP, VB) | "
             "VT LT, mean of all restarts | corr(VT objective, LT) | supervised LT |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, what, results in ab["variants"]:
        t = _table(results)
        vt, mp, vb = t["PCFG", "vt"], t["PCFG", "map"], t["PCFG", "vb"]
        lines.append(
            f"| {name} | {what} | {vt['LT'][0]:.1f} | {vt['BT'][0]:.1f} | {vt['0-CB'][0]:.1f} "
            f"| {mp['LT'][0]:.1f} | {vb['LT'][0]:.1f} | "
            f"{vt['LT'][0] - max(mp['LT'][0], vb['LT'][0]):+.1f} | {vt['LT_all']:.1f} | "
            f"{vt['corr']:.2f} | {t['PCFG', 'supervised']['LT'][0]:.1f} |")
    tables = {name: _table(results) for name, _, results in ab["variants"]}
    b = tables["baseline"]
    lines += ["", "One line per change (LT, % of held-out sentences; the difference from the "
              "baseline in parentheses):", ""]
    for name, _, _ in ab["variants"][1:]:
        t = tables[name]
        lt = {m: t["PCFG", m]["LT"][0] for m in ("vt", "map", "vb")}
        d = {m: lt[m] - b["PCFG", m]["LT"][0] for m in lt}
        best = max(lt, key=lt.get)
        lines.append(f"- {name}: VT {lt['vt']:.1f} ({d['vt']:+.1f}), MAP {lt['map']:.1f} "
                     f"({d['map']:+.1f}), VB {lt['vb']:.1f} ({d['vb']:+.1f}); "
                     + ("VT parses best." if best == "vt" else
                        f"{best.upper()} parses best, VT {lt['vt'] - lt[best]:+.1f}."))
    base = b["PCFG", "vt"]
    if "fixed_point" in base:
        lines += ["", f"Baseline VT runs: {base['fixed_point']:.0f}% end at a fixed point "
                  "(one more VT step leaves every probability unchanged: the stopping rule "
                  "did not cut them short); with the kept restarts, the best parse is tied "
                  f"in {base['ties_train']:.1f}% of training and {base['ties_test']:.1f}% of "
                  "test sentences."]
    lines += ["", *_findings(tables)]
    return lines


def _findings(tables: dict) -> list[str]:
    """What the ablation shows, read off its tables (only the variants that were run)."""
    tables_what = {"grammar: Markov 1": "binarisation keeps the next sibling's label",
                   "corpus: <= 12 tags": "more and longer sentences"}
    def lt(name, mode="vt", key="LT"):
        v = tables[name]["PCFG", mode][key]
        return v[0] if isinstance(v, tuple | list) else v

    out = ["### What the ablation shows", ""]
    starts = [n for n in ("init: uniform", "init: Dirichlet(0.3)", "baseline",
                          "init: Dirichlet(10)") if n in tables]
    if len(starts) > 1:
        span = {m: (min(lt(n, m) for n in starts), max(lt(n, m) for n in starts))
                for m in ("vt", "map", "vb")}
        out.append(
            "- **The random starts decide VT's rank.** VT's LT by start: " + ", ".join(
                f"{n.removeprefix('init: ').replace('baseline', 'Dirichlet(1)')} "
                f"{lt(n):.1f}" for n in starts)
            + f"; MAP moves only between {span['map'][0]:.1f} and {span['map'][1]:.1f}, VB "
            f"between {span['vb'][0]:.1f} and {span['vb'][1]:.1f}. Our reading: VT counts one "
            "parse per sentence from its first iteration on, chosen under the starting "
            "probabilities, so it stays near where it started (it converges in about 10 "
            "iterations); MAP and VB spread their counts over every parse and depend far "
            "less on the start. The "
            "paper's 'almost uniform' starts (Dirichlet(10)) and a single uniform start put "
            "VT clearly behind; the library's Dirichlet(1) puts it level with MAP and VB "
            "(within the spread over folds; see the restarts below). Dirichlet(1) was not "
            "tuned on this table (it is the library's default for every model), but it is "
            "also the best of the starts tried for VT.")
    b = tables["baseline"]["PCFG", "vt"]
    more = "restarts: 16" in tables
    out.append(
        f"- **Restarts matter for VT, not for MAP and VB.** One random VT restart parses "
        f"{b['LT_all']:.1f}% LT on average, the restart with the best objective "
        f"{b['LT'][0]:.1f}% (correlation of objective and LT over restarts "
        f"{b['corr']:.2f}; MAP {tables['baseline']['PCFG', 'map']['corr']:.2f}, VB "
        f"{tables['baseline']['PCFG', 'vb']['corr']:.2f})"
        + (f"; with 16 restarts VT parses {lt('restarts: 16'):.1f}%, MAP "
           f"{lt('restarts: 16', 'map'):.1f}%, VB {lt('restarts: 16', 'vb'):.1f}%: past 8 "
           "restarts the best objective no longer finds better VT parsers, and which of VT, "
           "MAP and VB is ahead changes with the number of restarts, so on this grammar "
           "and corpus the three parse equally well within the noise."
           if more else ".") + " The paper kept the best of 50.")
    priors = [n for n in ("prior: VT 1.0", "prior: VT 1.1", "baseline", "prior: VT 5")
              if n in tables]
    if len(priors) > 1:
        out.append(
            "- **VT's pseudo-count: the paper's (1, concentration 2) is the best tried.** "
            "VT's LT by concentration: " + ", ".join(
                f"{n.removeprefix('prior: VT ').replace('baseline', '2')} {lt(n):.1f}"
                for n in priors)
            + ". Without pseudo-counts (hard EM) a rule that no Viterbi parse of the "
            "training sentences uses gets probability zero and never comes back.")
    if "fixed_point" in b:
        out.append(
            f"- **Neither VT's stopping rule nor ties.** {b['fixed_point']:.0f}% of the VT runs "
            "end at a fixed point (one more step changes no probability), and the best parse "
            f"is tied in {b['ties_train']:.1f}% of training and {b['ties_test']:.1f}% of test "
            "sentences only"
            + (f". The other modes' stopping rule does move the ranking: run to tol 1e-6, MAP "
               f"parses {lt('stopping: tol 1e-6', 'map'):.1f}% and VB "
               f"{lt('stopping: tol 1e-6', 'vb'):.1f}% (at 1e-4: {lt('baseline', 'map'):.1f}"
               f"% and {lt('baseline', 'vb'):.1f}%): fitting the training sentences more "
               "closely parses held-out ones no better."
               if "stopping: tol 1e-6" in tables else "."))
    for name in ("grammar: Markov 1", "corpus: <= 12 tags"):
        if name not in tables:
            continue
        gain = {m: lt(name, m) - lt("baseline", m) for m in ("vt", "map", "vb", "supervised")}
        out.append(
            f"- **{name}** ({tables_what.get(name, '')}): VT {lt(name):.1f}, MAP "
            f"{lt(name, 'map'):.1f}, VB {lt(name, 'vb'):.1f}, supervised "
            f"{lt(name, 'supervised'):.1f} (from the baseline: VT {gain['vt']:+.1f}, MAP "
            f"{gain['map']:+.1f}, VB {gain['vb']:+.1f}, supervised {gain['supervised']:+.1f}).")
    if "grammar: Markov 1" in tables:
        best_m1 = max(lt("grammar: Markov 1", m) for m in ("map", "vb"))
        out.append(
            "- **The grammar sets the level.** Keeping one sibling label in the binarisation "
            "lifts every mode and the supervised bound "
            f"to {lt('grammar: Markov 1', 'supervised'):.1f}% (paper: 79.06%), closer to the "
            "paper's levels than any change of learning; VT gains the least and falls "
            f"{best_m1 - lt('grammar: Markov 1'):.1f} points behind the best mode.")
    return out


def plot(main: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = _table(main["results"])
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), sharey=True)
    for ax, model in zip(axes, MODELS, strict=True):
        paper = PAPER_T2 if model == "PCFG" else PAPER_T3
        x = np.arange(3)
        for i, m in enumerate((*MODES, "supervised")):
            ax.bar(x + i * 0.15, [t[model, m][lab][0] for lab in ("LT", "BT", "0-CB")], 0.15,
                   yerr=[t[model, m][lab][1] for lab in ("LT", "BT", "0-CB")],
                   label=m.upper() if m != "supervised" else "supervised")
        for i, m in enumerate(MODES):
            ax.scatter(x + i * 0.15, paper[m], marker="_", s=200, color="black",
                       label="paper" if i == 0 else None)
        ax.set_xticks(x + 0.3, ["LT", "BT", "0-CB"])
        ax.set_title(f"{model} ({'Table 2' if model == 'PCFG' else 'Table 3'})")
        ax.set_ylabel("% of held-out sentences")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap)
    ap.add_argument("--ablation", action="store_true",
                    help="run the Table 2 ablation instead of Tables 2-3")
    ap.add_argument("--only", default=None,
                    help="with --ablation: run only these variants (names separated by "
                    "';'), adding them to the saved ablation (which must hold the baseline)")
    ap.add_argument("--render", action="store_true",
                    help="only rewrite the markdown from the saved raw results")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    args = ap.parse_args(argv)
    if args.quick:
        args.restarts, args.folds = 2, 2
    OUT.mkdir(parents=True, exist_ok=True)
    stem = "prism_plcg_quick" if args.quick else "prism_plcg"
    t0, c0 = time.perf_counter(), _cpu()
    gold, _, g = corpus(args.max_length, args.markov, str(args.data_dir))
    folds = range(args.folds)
    if args.render:
        pass
    elif args.ablation:
        variants, todo, before = [], ablation_variants(args), (0.0, 0.0)
        if args.only:
            saved = _read(OUT / f"{stem}_ablation.json")
            names = [n.strip() for n in args.only.split(";")]
            unknown = set(names) - {n for n, _, _ in todo}
            if saved is None or unknown:
                sys.exit(f"--only: unknown variants {sorted(unknown)} or no saved ablation")
            variants = [v for v in saved["variants"] if v[0] not in names]
            before = (saved["wall"], saved["cpu"])  # the time of the runs that made them
            todo = [v for v in todo if v[0] in names]
        for name, what, over in todo:
            if over.get("vt_only"):  # the other modes' cells are the baseline's
                tasks = tasks_for(args, ["PCFG"], ("vt",), folds, **over)
                results = run_all(tasks, args.jobs) + [
                    r for r in _baseline(variants) if r["mode"] != "vt"]
            elif over.pop("not_vt", False):  # VT's cells (and the supervised) are the baseline's
                tasks = tasks_for(args, ["PCFG"], ("map", "vb"), folds, **over)
                results = run_all(tasks, args.jobs) + [
                    r for r in _baseline(variants) if r["mode"] in ("vt", "supervised")]
            else:
                tasks = tasks_for(args, ["PCFG"], ("vt", "map", "vb"), folds, **over)
                if name == "baseline":
                    for t in tasks:
                        t["diagnose"] = True
                tasks += tasks_for(args, ["PCFG"], ("supervised",), folds,
                                   **{k: v for k, v in over.items()
                                      if k in ("markov", "max_length")})
                results = run_all(tasks, args.jobs)
            variants.append((name, what, results))
            order = [n for n, _, _ in ablation_variants(args)]
            variants.sort(key=lambda v: order.index(v[0]))
            print(f"{name}: done", flush=True)
            ab = {"args": _jsonable(vars(args)), "variants": variants,
                  "wall": before[0] + time.perf_counter() - t0,
                  "cpu": before[1] + _cpu() - c0}
            (OUT / f"{stem}_ablation.json").write_text(json.dumps(ab, default=float))
    else:
        tasks = tasks_for(args, MODELS, (*MODES, "supervised"), folds)
        results = run_all(tasks, args.jobs)
        plcg = hs.PLCG(rules=g.rule_list(), start=list(g.start)).left_corner()
        main_res = {"args": _jsonable(vars(args)), "results": results,
                    "wall": time.perf_counter() - t0, "cpu": _cpu() - c0,
                    "n_sentences": len(gold),
                    "mean_length": float(np.mean([len(t.leaves()) for t in gold])),
                    "grammar": {"nonterminals": len(g.nonterminals), "rules": g.n_rules,
                                "words": len(g.words), "pcfg_params": g.n_params,
                                "plcg_params": plcg.n_params,
                                "plcg_switches": len(plcg.switches)}}
        (OUT / f"{stem}.json").write_text(json.dumps(main_res, default=float))
        plot(main_res, OUT / f"{stem}.png")
    main_res = _read(OUT / f"{stem}.json")
    ab = _read(OUT / f"{stem}_ablation.json")
    text = render(main_res, ab)
    (OUT / f"{stem}.md").write_text(text)
    print(text)


def _baseline(variants) -> list[dict]:
    return next(results for name, _, results in variants if name == "baseline")


def _cpu() -> float:
    """CPU seconds of this process and its finished children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _jsonable(args: dict) -> dict:
    return {k: str(v) if isinstance(v, Path) else v for k, v in args.items()}


def _read(path: Path):
    return json.loads(path.read_text()) if path.is_file() else None


if __name__ == "__main__":
    sys.exit(main())

"""The stopping rule of EM, MAP and VB on real data: an absolute gain (``tol=1e-4`` nats per
iteration, the rule before this change; hmmlearn's ``1e-2``) against a gain per observation
(``tol`` nats per observation per iteration, the rule now) and a gain relative to the
objective.

    NUMBA_NUM_THREADS=1 .venv/bin/python experiments/stopping_rule.py            # full
    NUMBA_NUM_THREADS=1 .venv/bin/python experiments/stopping_rule.py --quick    # smoke run

Writes ``experiments/results/stopping_rule.md``, ``stopping_rule.png`` and
``stopping_rule.json`` (``--quick``: ``experiments/out/stopping_rule_quick.*``).

Every rule is a function of one run's history (an iteration's gain ``d``, the objective
``L``, the observations ``N``): *absolute* ``d < tol``; *per observation* ``d / N < tol``;
*relative* ``d < tol * |L|``. So each task is run once per seed, one EM iteration per
``fit`` call (``n_iter=1``, then ``init_params=""`` / ``init="current"``: EM is
deterministic, so this is the trajectory of one long fit), up to a cap; where a rule first
stops, the model of that iteration is scored (the parameters a fit stopped by that rule
returns). Where a rule never stops before the cap, the row says "cap" (a real fit reports
``converged=False`` there). A final check fits every HMM task once more with the library's
defaults (``tol`` not given) and the cap as ``n_iter``, and compares its iterations and
objective with the emulated row of the default rule.

Tasks (``../shared/data``; the text tasks as in ``experiments/defaults_panel.py``):

- **pos45**: unsupervised tagging of the Penn Treebank sample (94,084 tokens, K = 45),
  many-to-one and one-to-one accuracy of the Viterbi path against the gold tags;
- **lm32**: PTB text, 3,000 training sentences (~66k tokens), K = 32, held-out
  log-likelihood per token on 1,000 validation sentences;
- **series** (``series/``): Old Faithful (duration, waiting; K = 2 full Gaussians), Dow Jones
  monthly log returns x 100 (K = 2), Arctic sea-ice extent daily changes (K = 3); the Google
  returns/range of the defaults panel (K = 3 diagonal, held-out log-likelihood); PTB
  sentence lengths (K = 3 Poisson, held-out log-likelihood);
- **pcfg**: inside-outside EM of the tag grammar of ``experiments/prism_pcfg.py`` (sentences
  of at most 10 tags, 7 of 8 folds for training, the 8th parsed: labelled bracket F1);
- **uci** (``uci/``): ``NaiveBayesHidden`` (its default ``learn="map"``, 4 clusters per
  class) on nursery, mushroom,
  kr-vs-kp, car and votes, 2/3 training, 1/3 test accuracy. NBH has no warm start, so its
  rules are real fits (the absolute rule as ``tol = abs_tol / N``, exact); the relative rule
  is not run there.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import prism_pcfg  # noqa: E402
import uci_data  # noqa: E402
from _common import DEFAULT_DATA_DIR, REPO, markdown_table  # noqa: E402
from defaults_panel import gauss_task, lm_task, poisson_task, pos_tasks  # noqa: E402

import hiddenstate as hs  # noqa: E402
from hiddenstate.learn import TOL  # noqa: E402
from hiddenstate.metrics import tagging_accuracy, tree_scores  # noqa: E402

#: (label, kind, tol): kind "abs" (gain), "obs" (gain per observation), "rel" (gain / |L|)
RULES = [("absolute 1e-2 (hmmlearn)", "abs", 1e-2), ("absolute 1e-4 (before)", "abs", 1e-4),
         ("relative 1e-6", "rel", 1e-6), ("relative 1e-7", "rel", 1e-7),
         ("per obs 1e-3", "obs", 1e-3), ("per obs 1e-4", "obs", 1e-4),
         ("per obs 1e-5", "obs", 1e-5), ("per obs 1e-6", "obs", 1e-6)]
DEFAULT_RULE = f"per obs {TOL:.0e}".replace("e-0", "e-")


def stops(kind: str, tol: float, gain: float, value: float, n: int) -> bool:
    if kind == "abs":
        return gain < tol
    if kind == "obs":
        return gain / n < tol
    return gain < tol * abs(value)


@dataclass
class Stepper:
    """One long fit, one iteration at a time: ``step()`` runs an iteration and returns the
    objective at the parameters entering it."""
    model: object
    fit_args: tuple
    first: bool = True

    def step(self) -> float:
        seen = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.model.fit(*self.fit_args, callback=lambda i, v: seen.append(v))
        if self.first:
            self.model.set_params(**({"init": "current"} if isinstance(self.model, hs.PCFG)
                                     else {"init_params": ""}))
            self.first = False
        return seen[0]


def trajectory(stepper: Stepper, n: int, cap: int, score) -> dict:
    """Run to ``cap`` iterations; every rule's stop: iterations, objective per observation,
    the score there, and whether it stopped before the cap."""
    history, out, t0 = [], {}, time.perf_counter()
    for it in range(1, cap + 1):
        history.append(stepper.step())
        if it > 1:
            gain = history[-1] - history[-2]
            fired = [label for label, kind, tol in RULES
                     if label not in out and stops(kind, tol, gain, history[-1], n)]
            if fired:
                s = score(stepper.model)
                for label in fired:
                    out[label] = {"iters": it, "per_obs": history[-1] / n, "score": s,
                                  "converged": True}
    s = score(stepper.model)
    for label, _, _ in RULES:
        out.setdefault(label, {"iters": cap, "per_obs": history[-1] / n, "score": s,
                               "converged": False})
    return {"rules": out, "history": history, "n": n, "cap": cap,
            "final_per_obs": history[-1] / n, "seconds": time.perf_counter() - t0}


# -- tasks -----------------------------------------------------------------------------------
def hmm_tasks(data_dir: Path, quick: bool) -> list[dict]:
    """name, model factory, fit data, N, score(model) -> dict, score names."""
    out = []
    pos45 = pos_tasks(data_dir, quick)[0]

    def pos_score(m, t=pos45):
        z = m.predict(t.X, t.lengths)
        return {"m2o": tagging_accuracy(t.tags, z, "many-to-one"),
                "o2o": tagging_accuracy(t.tags, z, "one-to-one")}

    out.append(dict(name="pos45", what=pos45.what.split(", EM")[0], X=pos45.X,
                    lengths=pos45.lengths, score=pos_score, cap=60 if quick else 500,
                    seeds=1, make=lambda s, t=pos45: hs.HMM(
                        t.K, n_features=t.n_features, n_iter=1, tol=-np.inf, random_state=s)))
    lm = lm_task(data_dir, quick)

    def heldout(t):
        return lambda m: {"heldout": m.score(t.X_eval, t.lengths_eval) / len(t.X_eval)}

    out.append(dict(name="lm32", what=lm.what.split(", EM")[0], X=lm.X, lengths=lm.lengths,
                    score=heldout(lm), cap=60 if quick else 500, seeds=1 if quick else 2,
                    make=lambda s, t=lm: hs.HMM(t.K, n_features=t.n_features, n_iter=1,
                                                tol=-np.inf, random_state=s)))
    series = data_dir / "series"
    geyser = np.loadtxt(series / "geyser.csv", delimiter=",", skiprows=1, usecols=(0, 1))
    dow = np.loadtxt(series / "dowjones.csv", delimiter=",", skiprows=1, usecols=1)
    ice = np.loadtxt(series / "seaice.csv", delimiter=",", skiprows=1, usecols=1)
    gauss = [("geyser", geyser, 2, "full", "Old Faithful (duration, waiting), 272 eruptions"),
             ("dowjones", 100 * np.diff(np.log(dow))[:, None], 2, "diag",
              "Dow Jones monthly log returns x 100, 648 months"),
             ("seaice", np.diff(ice)[:, None], 3, "diag",
              f"Arctic sea-ice extent changes, {len(ice) - 1} steps")]
    for name, Y, K, cov, what in gauss:
        out.append(dict(name=name, what=f"{what}, K = {K} {cov} Gaussian", X=Y,
                        lengths=[len(Y)], score=lambda m: {}, cap=300 if quick else 1000,
                        seeds=2 if quick else 5,
                        make=lambda s, K=K, cov=cov: hs.HMM(
                            K, emission="gaussian", covariance_type=cov, n_iter=1,
                            tol=-np.inf, random_state=s)))
    for t in (gauss_task(quick), poisson_task(data_dir, quick)):
        out.append(dict(name=t.name, what=t.what, X=t.X, lengths=t.lengths,
                        score=heldout(t), cap=300 if quick else 1000, seeds=2 if quick else 5,
                        make=lambda s, t=t: hs.HMM(
                            t.K, emission=t.emission, n_iter=1, tol=-np.inf,
                            random_state=s)))
    return out


def pcfg_task(data_dir: Path, quick: bool) -> dict:
    gold = prism_pcfg.load(8 if quick else 10, data_dir)
    cnf = [prism_pcfg.to_cnf(t, 0) for t in gold]
    g, _ = prism_pcfg.Grammar.from_trees(cnf)
    sents = [t.leaves() for t in gold]
    n = len(gold)
    test = np.arange(n * 7 // 8, n)
    train = [sents[i] for i in range(n * 7 // 8)]
    te_sents, te_gold = [sents[i] for i in test], [gold[i] for i in test]

    def score(m):
        return {"F1": tree_scores(te_gold, m.parse(te_sents, errors="none")).f1}

    return dict(name="pcfg", what=f"PCFG EM, {len(train)} tag sentences (<= "
                f"{8 if quick else 10} tags), {g.n_rules} rules", X=train, lengths=None,
                score=score, cap=200 if quick else 1000, seeds=1 if quick else 2,
                n=sum(len(s) for s in train),
                make=lambda s: hs.PCFG(rules=g.rule_list(), start=list(g.start), learn="em",
                                       n_iter=1, tol=-np.inf, random_state=s))


def uci_runs(data_dir: Path, quick: bool) -> list[dict]:
    from sklearn.model_selection import train_test_split

    rows = []
    names = ["car", "votes"] if quick else ["nursery", "mushroom", "kr-vs-kp", "car", "votes"]
    for name in names:
        d = uci_data.load(name, data_dir / "uci")
        for seed in range(2 if quick else 3):
            tr, te = train_test_split(np.arange(len(d.y)), test_size=1 / 3, random_state=seed,
                                      stratify=d.y)
            n = len(tr)
            for label, kind, tol in RULES:
                if kind == "rel":
                    continue
                m = hs.NaiveBayesHidden(n_clusters=4, n_iter=1000,
                                        tol=tol / n if kind == "abs" else tol,
                                        random_state=seed)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    m.fit(d.X[tr], d.y[tr])
                rows.append({"set": name, "seed": seed, "rule": label, "n": n,
                             "iters": len(m.monitor_.history),
                             "converged": bool(m.monitor_.converged),
                             "per_obs": m.monitor_.history[-1] / n,
                             "acc": float(np.mean(m.predict(d.X[te]) == d.y[te]))})
            print(f"uci {name} seed {seed} done", flush=True)
    return rows


def check_default(task: dict, seed: int, emulated: dict) -> dict:
    """A real fit with the library's default ``tol`` against the emulated default rule."""
    m = task["make"](seed)
    m.set_params(n_iter=task["cap"])
    params = m.get_params()
    params.pop("tol")
    m = type(m)(**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.fit(*([task["X"]] if task["lengths"] is None else [task["X"], task["lengths"]]))
    row = emulated["rules"][DEFAULT_RULE]
    return {"task": task["name"], "seed": seed, "iters": len(m.monitor_.history),
            "converged": bool(m.monitor_.converged),
            "per_obs": m.monitor_.history[-1] / emulated["n"],
            "emulated_iters": row["iters"], "emulated_per_obs": row["per_obs"]}


# -- report ----------------------------------------------------------------------------------
def summary_rows(runs: list[dict]) -> list[list]:
    """Per task and rule, means over the seeds: iterations, stopped before the cap, the
    objective per observation below the cap's, and the scores."""
    rows = []
    for run in runs:
        results = run["results"]
        keys = sorted(results[0]["rules"][RULES[0][0]]["score"])
        for label, _, _ in RULES:
            r = [res["rules"][label] for res in results]
            gap = np.mean([res["final_per_obs"] - x["per_obs"] for res, x in
                           zip(results, r, strict=True)])
            scores = ", ".join(f"{k} {np.mean([x['score'][k] for x in r]):.4f}" for k in keys)
            rows.append([run["name"], label, f"{np.mean([x['iters'] for x in r]):.0f}",
                         f"{sum(x['converged'] for x in r)}/{len(r)}",
                         f"{np.mean([x['per_obs'] for x in r]):.5f}", f"{gap:.2e}",
                         scores or "-"])
    return rows


def uci_table(rows: list[dict]) -> list[list]:
    out = []
    for name in dict.fromkeys(r["set"] for r in rows):
        for label, kind, _ in RULES:
            if kind == "rel":
                continue
            r = [x for x in rows if x["set"] == name and x["rule"] == label]
            out.append([name, label, f"{np.mean([x['iters'] for x in r]):.0f}",
                        f"{sum(x['converged'] for x in r)}/{len(r)}",
                        f"{np.mean([x['per_obs'] for x in r]):.5f}",
                        f"{100 * np.mean([x['acc'] for x in r]):.2f}"])
    return out


def plot(runs: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for run in runs:
        res = run["results"][0]
        gain = np.diff(res["history"]) / res["n"]
        ax.plot(np.arange(2, len(res["history"]) + 1), np.maximum(gain, 1e-12),
                label=run["name"], lw=1)
    for tol, style in ((1e-3, ":"), (1e-4, "--"), (1e-5, ":"), (1e-6, ":")):
        ax.axhline(tol, color="k", ls=style, lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("EM iteration")
    ax.set_ylabel("gain per observation (nats)")
    ax.set_title(f"Gain per observation per iteration (first seed); dashed: tol = {TOL:g}")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--skip", nargs="*", default=[], help="task names to leave out")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    tasks = [t for t in hmm_tasks(args.data_dir, args.quick) if t["name"] not in args.skip]
    if "pcfg" not in args.skip:
        tasks.append(pcfg_task(args.data_dir, args.quick))
    runs, checks = [], []
    for task in tasks:
        n = task.get("n", len(task["X"]))
        results = []
        for seed in range(task["seeds"]):
            fit_args = (task["X"],) if task["lengths"] is None else (task["X"],
                                                                    task["lengths"])
            res = trajectory(Stepper(task["make"](seed), fit_args), n, task["cap"],
                             task["score"])
            results.append(res)
            print(f"{task['name']} seed {seed}: {res['seconds']:.0f} s, "
                  + ", ".join(f"{k}: {v['iters']}" for k, v in res["rules"].items()),
                  flush=True)
            if seed == 0 and task["name"] not in ("pos45", "lm32"):
                checks.append(check_default(task, seed, res))
        runs.append({"name": task["name"], "what": task["what"], "n": n, "cap": task["cap"],
                     "results": results})
    uci = [] if "uci" in args.skip else uci_runs(args.data_dir, args.quick)
    wall = time.perf_counter() - t_start

    out_dir = REPO / "experiments" / ("out" if args.quick else "results")
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / ("stopping_rule_quick" if args.quick else "stopping_rule")
    plot(runs, stem.with_suffix(".png"))
    kept = [{**r, "results": [{k: v for k, v in res.items() if k != "history"}
                              for res in r["results"]]} for r in runs]
    with open(stem.with_suffix(".json"), "w") as f:  # without the histories (the plot's)
        json.dump({"runs": kept, "uci": uci, "checks": checks}, f)
    load = os.getloadavg()
    lines = [
        "# The stopping rule of EM on real data: absolute, relative, per observation", "",
        f"Command: `NUMBA_NUM_THREADS=1 python experiments/stopping_rule.py"
        f"{' --quick' if args.quick else ''}`; {wall / 60:.1f} min on 2 shared cores "
        f"(load average at the end {load[0]:.1f}). The library's default now: "
        f"`{DEFAULT_RULE}` (`hiddenstate.learn.TOL`).", "",
        "Each row: where a rule first stops one EM run (the same trajectory for every rule; "
        "the model of that iteration is scored). `iters`: iterations (E-steps) of the fit, "
        "the cap where it never stopped; `stopped`: runs that stopped before the cap (a fit "
        "reports `converged=True`) of all seeds; `objective/obs`: log-likelihood per "
        "observation at the stop; `left`: what the run still gained from there to the cap, "
        "per observation; scores: `m2o`/`o2o` many-to-one / one-to-one tagging accuracy, "
        "`heldout` held-out log-likelihood per observation, `F1` labelled bracket F1 of the "
        "held-out parses (means over the seeds).", "",
        "## Tasks", ""]
    lines += [f"- **{r['name']}**: {r['what']}; N = {r['n']} observations, cap {r['cap']} "
              f"iterations, {len(r['results'])} seed(s)" for r in runs]
    lines += ["", "## HMM and PCFG", "",
              markdown_table(["task", "rule", "iters", "stopped", "objective/obs", "left",
                              "scores"], summary_rows(runs))]
    if uci:
        lines += ["", "## NaiveBayesHidden on UCI sets (MAP, 4 clusters per class; real fits "
                  "per rule, cap 1000)", "",
                  markdown_table(["set", "rule", "iters", "stopped", "objective/obs",
                                  "test accuracy %"], uci_table(uci))]
    if checks:
        lines += ["", "## Real fits with the library's default `tol`", "",
                  "The same task and seed fitted once with `tol` left at its default and "
                  "`n_iter` = the cap, against the emulated row above:", "",
                  markdown_table(["task", "seed", "iters", "converged", "objective/obs",
                                  "emulated iters", "emulated objective/obs"],
                                 [[c["task"], c["seed"], c["iters"], c["converged"],
                                   f"{c['per_obs']:.6f}", c["emulated_iters"],
                                   f"{c['emulated_per_obs']:.6f}"] for c in checks])]
    lines += ["", f"![gain per observation]({stem.name}.png)", ""]
    stem.with_suffix(".md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()

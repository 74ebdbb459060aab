"""Funk's seven-letter-word experiment (Funk 2015, "Self-supervised learning in Bayesian
trees (and maybe DAGs)"): does a network of discrete variables learn to factor the
capitalisation rule out of the letters?

Data: the seven-letter words of ``<data-dir>/words/seven-letter-words.txt`` lower-cased
and de-duplicated (11,768 words). Each word is written with one of five capitalisation
rules drawn at random: ``lower`` (example), ``Capitalised`` (Example), ``UPPER`` (EXAMPLE),
and two more defined here: ``iNVERTED`` (first letter lower, the rest upper: eXAMPLE) and
``AlTeRnAtInG`` (letters 1, 3, 5, 7 upper: ExAmPlE). Letters are unlabelled tokens: the 52
symbols (a-z, A-Z; the list has no apostrophes) are shuffled ids, so nothing tells the
model that ``a`` and ``A`` are related. 1,000 words are held out (each with a random rule);
every training word appears ``--copies`` times, each with a random rule.

Models (held-out log-likelihood per word, nats):

- per-position unigram (add-0.5 smoothing);
- ``hs.HMM`` (categorical, EM) with about as many parameters as the tree, and with about as
  many as the DAG;
- a tree trained by EM (exact): a 20-state root above seven 20-state variables, one per
  letter;
- the same tree trained by Funk's stochastic EM;
- Funk's network: two hidden layers of ten 20-state variables, every variable a child of
  every variable of the layer above and every letter a child of every variable of the
  lower layer (a DAG: letters have ten parents, eq. 8), trained by stochastic EM with
  Funk's soft normalisation, with and without the state-usage option (``balance``), over
  several seeds. Its log-likelihood is the importance-sampling estimate of
  ``TreeNet.score`` (a stochastic lower bound in expectation).

Factoring: for every top-level variable, the mutual information between the rule and the
variable's posterior on the held-out words, as a fraction of H(rule) = log 5; a variable
"carries the rule" when that fraction is at least 0.5 (and "cleanly" at 0.9).

    NUMBA_NUM_THREADS=1 python experiments/treenet_words.py   # 31 min (2 workers, busy machine)
    python experiments/treenet_words.py --quick           # ~2 min

Writes ``experiments/out/treenet_words/treenet_words.md`` and ``.png``.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_DATA_DIR, REPO, markdown_table  # noqa: E402

import hiddenstate as hs  # noqa: E402
from hiddenstate.treenet import layered  # noqa: E402

RULES = ["lower", "Capitalised", "UPPER", "iNVERTED", "AlTeRnAtInG"]
ALPHABET = [chr(97 + i) for i in range(26)] + [chr(65 + i) for i in range(26)]
THRESHOLDS = (0.5, 0.9)


def apply_rule(word: str, rule: int) -> str:
    if rule == 0:
        return word
    if rule == 1:
        return word.capitalize()
    if rule == 2:
        return word.upper()
    if rule == 3:
        return word[0] + word[1:].upper()
    return "".join(c.upper() if i % 2 == 0 else c for i, c in enumerate(word))


class Data:
    def __init__(self, path: Path, copies: int, n_test: int, limit: int | None, seed: int = 0):
        if not path.is_file():
            raise SystemExit(f"word list not found: {path}; pass --data-dir (default "
                             f"{DEFAULT_DATA_DIR})")
        words = sorted({w.strip().lower() for w in path.read_text().split() if w.strip()})
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(words))
        if limit:
            order = order[:limit]
        self.n_words = len(words)
        perm = rng.permutation(len(ALPHABET))
        self.code = {c: int(perm[i]) for i, c in enumerate(ALPHABET)}
        self.letter = {v: k for k, v in self.code.items()}
        test = [words[i] for i in order[:n_test]]
        train = [words[i] for i in order[n_test:] for _ in range(copies)]
        self.rule_train = rng.integers(0, len(RULES), len(train))
        self.rule_test = rng.integers(0, len(RULES), len(test))
        self.X_train = self.encode(train, self.rule_train)
        self.X_test = self.encode(test, self.rule_test)
        self.n_train_words = len(order) - n_test

    def encode(self, words, rules) -> np.ndarray:
        return np.array([[self.code[c] for c in apply_rule(w, r)]
                         for w, r in zip(words, rules, strict=True)], dtype=np.int64)

    def decode(self, X) -> list[str]:
        return ["".join(self.letter[int(s)] for s in row) for row in X]


# -- models ------------------------------------------------------------------------------------
def tree_spec() -> dict:
    letters = {f"m{i}": 20 for i in range(7)}
    return {"n_states": {"r": 20, **letters},
            "edges": [("r", m) for m in letters] + [(f"m{i}", f"x{i}") for i in range(7)],
            "observed": {f"x{i}": 52 for i in range(7)}}


def dag_spec() -> dict:
    return layered([(10, 20), (10, 20)], n_observed=7, n_symbols=52)


def n_params(spec: dict) -> int:
    sizes = {**spec["n_states"], **spec["observed"]}
    roots = [v for v in spec["n_states"] if not any(c == v for _, c in spec["edges"])]
    return sum(sizes[r] - 1 for r in roots) + sum(sizes[p] * (sizes[c] - 1)
                                                   for p, c in spec["edges"])


def hmm_states_for(params: int, W: int = 52) -> int:
    """K with K - 1 + K (K - 1) + K (W - 1) closest to ``params``."""
    return int(min(range(2, 2000), key=lambda K: abs(K - 1 + K * (K - 1) + K * (W - 1) - params)))


def unigram(data: Data) -> float:
    total = 0.0
    for j in range(7):
        c = np.bincount(data.X_train[:, j], minlength=52) + 0.5
        total += np.log(c / c.sum())[data.X_test[:, j]].sum()
    return total / len(data.X_test)


def fit_hmm(data: Data, K: int, n_iter: int, seed: int):
    n = len(data.X_train)
    # an absolute gain of 1e-3 nats over the n * 7 letters (the library's tol is per letter)
    model = hs.HMM(K, n_features=52, n_iter=n_iter, tol=1e-3 / (7 * n), random_state=seed)
    t0 = time.perf_counter()
    model.fit(data.X_train.reshape(-1, 1), [7] * n)
    wall = time.perf_counter() - t0
    ll = model.score(data.X_test.reshape(-1, 1), [7] * len(data.X_test)) / len(data.X_test)
    return model, ll, wall


def curve_callback(store: list, n: int):
    def cb(_iteration, value):
        store.append(value / n)
    return cb


def mutual_information(post: np.ndarray, rules: np.ndarray, n_rules: int) -> float:
    """I(rule; v) in nats from posteriors ``(n, N_v)`` of words with known rules."""
    joint = np.zeros((n_rules, post.shape[1]))
    for r in range(n_rules):
        joint[r] = post[rules == r].sum(axis=0)
    joint /= joint.sum()
    pr, pv = joint.sum(axis=1, keepdims=True), joint.sum(axis=0, keepdims=True)
    nz = joint > 0
    return float(np.sum(joint[nz] * np.log(joint[nz] / (pr @ pv)[nz])))


def factoring(net, data: Data, top: list[str], seed: int) -> dict[str, float]:
    """MI(rule; v) / H(rule) of every variable in ``top`` on the held-out words."""
    post = net.predict_proba(data.X_test, random_state=seed)
    h = np.log(len(RULES))
    return {v: mutual_information(post[v], data.rule_test, len(RULES)) / h for v in top}


def run_treenet(spec, data, seed, n_iter, samples, **kw):
    net = hs.TreeNet(**spec, n_iter=n_iter, random_state=seed, n_samples=samples, **kw)
    store: list = []
    t0 = time.perf_counter()
    net.fit(data.X_train, callback=curve_callback(store, len(data.X_train)))
    wall = time.perf_counter() - t0
    ll = net.score_samples(data.X_test, random_state=seed).mean()
    return net, float(ll), wall, store


def run_job(job: dict, cfg: dict, data_path: str) -> dict:
    """One fit (a worker process): the data are rebuilt from the same seed in each."""
    data = Data(Path(data_path), cfg["copies"], cfg["n_test"], cfg["limit"])
    kind, seed = job["kind"], job.get("seed", 0)
    out = dict(job)
    if kind == "hmm":
        _, ll, wall = fit_hmm(data, job["K"], job["n_iter"], seed)
        out.update(ll=ll, wall=wall)
        return out
    spec = tree_spec() if kind.startswith("tree") else dag_spec()
    net, ll, wall, curve = run_treenet(spec, data, seed, job["n_iter"], cfg["samples"],
                                       **job["options"])
    top = ["r"] if kind.startswith("tree") else [v for v in spec["n_states"]
                                                  if v.startswith("h0_")]
    out.update(ll=ll, wall=wall, curve=curve, mi=factoring(net, data, top, seed),
               consistent=rule_consistent(net, data, 2000, seed + 1),
               generated=generated(net, data, 48, 1) if seed == 0 else None)
    return out


# -- report ------------------------------------------------------------------------------------
def rule_consistent(net, data: Data, n: int, seed: int) -> float:
    """Fraction of ``n`` generated words whose upper/lower-case pattern is one of the five
    rules (a network that factors the rule out keeps one rule per word)."""
    X, _ = net.sample(n, random_state=seed)
    patterns = {tuple(c.isupper() for c in apply_rule("example", r)) for r in range(len(RULES))}
    return float(np.mean([tuple(c.isupper() for c in w) in patterns for w in data.decode(X)]))


def generated(net, data: Data, n: int, seed: int) -> tuple[str, str]:
    X, _ = net.sample(n, random_state=seed)
    words = data.decode(X)
    return " ".join(words), " ".join(w.lower() for w in words)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small smoke run (~2 minutes)")
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--out", type=Path, default=REPO / "experiments" / "out" / "treenet_words")
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--workers", type=int, default=2, help="fits run in parallel")
    args = ap.parse_args(argv)
    q = args.quick
    cfg = {
        "copies": 2, "n_test": 300 if q else 1000, "limit": 2300 if q else None,
        "seeds": args.seeds or (1 if q else 3), "epochs": 3 if q else 10,
        "tree_iter": 10 if q else 50, "tree_sem_epochs": 3 if q else 10,
        "hmm_iter": 5 if q else 50, "hmm_big_iter": 2 if q else 6,
        "samples": 20 if q else 100,
        "learning_rate": 1.0, "batch_size": 100, "balance": 1.0,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    data = Data(args.data_dir / "words" / "seven-letter-words.txt", cfg["copies"],
                cfg["n_test"], cfg["limit"])
    t_start = time.perf_counter()
    rows, curves, notes = [], {}, []

    def log(msg):
        print(f"[{time.perf_counter() - t_start:7.1f}s] {msg}", flush=True)

    rows.append(["per-position unigram", "-", 7 * 51, f"{unigram(data):.3f}", "-", "-", "-"])
    log(f"unigram {rows[-1][3]}")
    tree, dag = tree_spec(), dag_spec()
    sem = {"learn": "stochastic-em", "learning_rate": cfg["learning_rate"],
           "batch_size": cfg["batch_size"]}
    jobs = [{"kind": "hmm", "label": "tree", "K": hmm_states_for(n_params(tree)),
             "n_iter": cfg["hmm_iter"]},
            {"kind": "hmm", "label": "DAG", "K": hmm_states_for(n_params(dag)),
             "n_iter": cfg["hmm_big_iter"]}]
    # MAP-EM with Dirichlet(1.1) rows: plain EM gives zero probability to a letter a state
    # never emitted in training, and a held-out word with it scores -inf
    jobs += [{"kind": "tree", "seed": s, "n_iter": cfg["tree_iter"],
              "options": {"learn": "map", "prior": 1.1}} for s in range(cfg["seeds"])]
    jobs += [{"kind": "tree-sem", "seed": 0, "n_iter": cfg["tree_sem_epochs"],
              "options": sem}]
    for balance in (0.0, cfg["balance"]):
        jobs += [{"kind": "dag", "seed": s, "balance": balance, "n_iter": cfg["epochs"],
                  "options": {**sem, "soft_normalization": True, "balance": balance}}
                 for s in range(cfg["seeds"])]
    path = str(args.data_dir / "words" / "seven-letter-words.txt")
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = [pool.submit(run_job, job, cfg, path) for job in jobs]
        results = []
        for f in futures:
            results.append(f.result())
            r = results[-1]
            log(f"{r['kind']} seed {r.get('seed', 0)}"
                + (f" balance {r['balance']:g}" if "balance" in r else "")
                + f": held-out {r['ll']:.3f} ({r['wall']:.0f} s)"
                + (f"; MI {max(r['mi'].values()):.2f}" if "mi" in r else ""))

    fact_rows, mi_table, samples_text = [], {}, {}
    for r in results:
        seed = r.get("seed", 0)
        if r["kind"] == "hmm":
            K = r["K"]
            rows.append([f"HMM, K={K} (parameters of the {r['label']})",
                         f"EM, <= {r['n_iter']} iterations", K - 1 + K * (K - 1) + K * 51,
                         f"{r['ll']:.3f}", f"{r['wall']:.0f}", "-", "-"])
            continue
        if r["kind"] == "tree":
            family, learning = "tree EM", "EM (MAP, prior 1.1)"
        elif r["kind"] == "tree-sem":
            family, learning = "tree stochastic EM", "stochastic EM"
        else:
            bal = r["balance"]
            family = "DAG stochastic EM" + (f", balance={bal:g}" if bal else "")
            learning = "stochastic EM" + (f", balance {bal:g}" if bal else "")
        spec = dag if r["kind"] == "dag" else tree
        f = r["mi"]
        best = max(f, key=f.get)
        second = sorted(f.values())[-2] if len(f) > 1 else float("nan")
        label = "DAG 2 x 10 x 20" if r["kind"] == "dag" else "tree (root 20 -> 7 x 20)"
        rows.append([f"{label}, seed {seed}", learning, n_params(spec), f"{r['ll']:.3f}",
                     f"{r['wall']:.0f}", f"{f[best]:.2f} ({best})", f"{r['consistent']:.2f}"])
        fact_rows.append([family, seed, best, f"{f[best]:.2f}"
                          + (f" (next {second:.2f})" if len(f) > 1 else "")])
        curves[f"{family} seed {seed}"] = r["curve"]
        if r["kind"] == "dag":
            mi_table[(family, seed)] = f
        if r.get("generated"):
            samples_text[family] = r["generated"]
    dag_top = [v for v in dag["n_states"] if v.startswith("h0_")]

    # -- write ---------------------------------------------------------------------------------
    md = [f"# Funk's seven-letter words with TreeNet{' (quick)' if q else ''}", "",
          f"{data.n_words} distinct lower-cased words; {data.n_train_words} training words x "
          f"{cfg['copies']} random capitalisations = {len(data.X_train)} patterns; "
          f"{len(data.X_test)} held-out words. Rules: {', '.join(RULES)}. 52 symbols as "
          "shuffled ids. Stochastic EM: learning rate "
          f"{cfg['learning_rate']}, mini-batches of {cfg['batch_size']}, {cfg['epochs']} "
          f"epochs (DAG), soft normalisation on; balance = {cfg['balance']:g} where noted. "
          f"TreeNet log-likelihoods of the DAG: importance sampling with {cfg['samples']} "
          "samples per word (a stochastic lower bound in expectation); of trees: exact.", "",
          "## Held-out log-likelihood per word (nats; higher is better)", "",
          markdown_table(["model", "learning", "free parameters", "held-out log-lik / word",
                          "fit seconds", "MI(rule; best top variable) / H(rule)",
                          "generated words following one rule"], rows), "",
          "## Does one variable carry the capitalisation rule?", "",
          "MI between the rule and a top-level variable's posterior on the held-out words, "
          "as a fraction of H(rule) = log 5 (1: the variable determines the rule).", "",
          markdown_table(["network", "seed", "best variable", "MI / H(rule)"], fact_rows), ""]
    for name in sorted({k[0] for k in mi_table}):
        vals = [max(mi_table[(name, s)].values()) for s in range(cfg["seeds"])]
        for th in THRESHOLDS:
            md.append(f"- {name}: one top-level variable carries >= {th:g} of H(rule) in "
                      f"{sum(v >= th for v in vals)} of {len(vals)} seeds.")
    md += ["", "## Generated words (seed 0; as generated, then lower-cased as Funk shows them)",
           ""]
    for name, (raw, low) in samples_text.items():
        md += [f"**{name}**", "", "```", raw, "", low, "```", ""]
    md += [*notes, f"Total time {time.perf_counter() - t_start:.0f} s."]
    (args.out / "treenet_words.md").write_text("\n".join(md) + "\n")
    plot(args.out / "treenet_words.png", curves, mi_table, dag_top)
    log(f"wrote {args.out / 'treenet_words.md'}")


def plot(path: Path, curves: dict, mi_table: dict, top: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for name, c in curves.items():
        axes[0].plot(np.arange(1, len(c) + 1), c, label=name, lw=1)
    axes[0].set_xlabel("iteration (EM) / epoch (stochastic EM)")
    axes[0].set_ylabel("training objective per pattern")
    axes[0].set_title("learning curves (DAG: single-sample log weight)")
    axes[0].legend(fontsize=6)
    width = 0.8 / max(1, len(mi_table))
    for k, ((name, seed), f) in enumerate(sorted(mi_table.items())):
        axes[1].bar(np.arange(len(top)) + k * width, [f[v] for v in top], width,
                    label=f"{name} s{seed}")
    axes[1].set_xticks(np.arange(len(top)) + 0.4, top, rotation=45, fontsize=7)
    axes[1].set_ylabel("MI(rule; variable) / H(rule)")
    axes[1].set_title("who carries the capitalisation rule (held-out words)")
    axes[1].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()

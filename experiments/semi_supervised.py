"""Partial state labels and missing observations (issue 13): what they buy.

    .venv/bin/python experiments/semi_supervised.py            # about two minutes on 2 CPUs
    .venv/bin/python experiments/semi_supervised.py --quick    # smoke run
    .venv/bin/python experiments/semi_supervised.py --data-dir /path/to/data

Writes ``experiments/out/semi_supervised.md`` and ``experiments/out/semi_supervised.png``.

(i) Part-of-speech tagging on the Penn Treebank sample
(``<data-dir>/ptb-sample-treebank/combined/wsj_*.mrg``): a categorical HMM with one state
per coarse tag (17 UPOS classes), words as symbols (the most frequent ``--vocab`` words
of the training sentences, the others one unknown-word symbol), trained by EM with
``fit(X, lengths, states=labels)`` where a fraction f of the training tokens (0, 1%, 10%,
100%, drawn at random) carry their tag and the others ``-1``. Reported: tagging accuracy
of the Viterbi path on held-out sentences, read directly (state k = tag k, which the labels
pin) and, for comparison with unsupervised learning, after the best one-to-one relabelling
(Hungarian). With f = 100% one EM iteration is supervised counting.

(ii) Missing observations: a 3-state Gaussian HMM with full 3-D covariances; a fraction
of the training entries (0 to 70%) deleted at random (NaN). Three ways to learn from them:
the library's (missing dimensions marginalised, conditional expectations in the E-step),
filling each missing entry with its column mean first, and dropping every row with a
missing entry. Reported: held-out log-likelihood per observation on complete test data
(the true model's for reference) and the error of the imputed entries (``model.impute``
against column means).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DEFAULT_DATA_DIR,
    REPO,
    load_treebank,
    markdown_table,
    path_accuracy,
    upos,
)

import hiddenstate as hs  # noqa: E402
from hiddenstate.errors import DegenerateStateWarning  # noqa: E402

FRACTIONS = (0.0, 0.01, 0.1, 1.0)
MISSING = (0.0, 0.1, 0.3, 0.5, 0.7)


def tagging(data_dir: Path, vocab: int, n_iter: int, seeds: list[int], quick: bool):
    sents = load_treebank(data_dir)
    if quick:
        sents = sents[:800]
    split = int(0.8 * len(sents))
    tags = sorted({upos(w, t) for s in sents for w, t in s})
    tag_id = {t: i for i, t in enumerate(tags)}
    counts: dict[str, int] = {}
    for s in sents[:split]:
        for w, _ in s:
            counts[w.lower()] = counts.get(w.lower(), 0) + 1
    words = sorted(counts, key=lambda w: -counts[w])[:vocab - 1]
    word_id = {w: i for i, w in enumerate(words)}

    def encode(part):
        X = np.array([word_id.get(w.lower(), vocab - 1) for s in part for w, _ in s])
        z = np.array([tag_id[upos(w, t)] for s in part for w, t in s])
        return X[:, None], z, [len(s) for s in part]

    Xtr, ztr, ltr = encode(sents[:split])
    Xte, zte, lte = encode(sents[split:])
    K = len(tags)
    rows = []
    for f in FRACTIONS:
        direct, mapped = [], []
        for seed in seeds:
            rng = np.random.default_rng(seed)
            labels = np.where(rng.random(len(ztr)) < f, ztr, -1)
            m = hs.HMM(K, n_features=vocab, n_iter=n_iter, tol=1e-3,
                       random_state=seed)
            m.fit(Xtr, ltr, states=labels if f > 0 else None)
            pred = m.predict(Xte, lte)
            direct.append(float(np.mean(pred == zte)))
            mapped.append(path_accuracy(zte, pred, K))
        rows.append((f, np.mean(direct), np.mean(mapped), len(ztr), len(zte)))
    return rows, K


def gaussian_truth() -> hs.HMM:
    m = hs.HMM(3, emission="gaussian", covariance_type="full", init_params="")
    m.startprob_ = [1 / 3] * 3
    m.transmat_ = [[0.9, 0.05, 0.05], [0.05, 0.9, 0.05], [0.05, 0.05, 0.9]]
    m.means_ = [[0.0, 0.0, 0.0], [2.0, 2.0, -1.0], [-2.0, 1.0, 2.0]]
    m.covars_ = [np.array([[1.0, 0.7, 0.3], [0.7, 1.0, 0.5], [0.3, 0.5, 1.0]]),
                 np.array([[1.0, -0.6, 0.0], [-0.6, 1.0, 0.4], [0.0, 0.4, 1.0]]),
                 np.eye(3) * 0.8]
    return m


def missing(n: int, seeds: list[int]):
    truth = gaussian_truth()
    rows = []
    for frac in MISSING:
        res = {"lib": [], "mean": [], "drop": [], "imp_lib": [], "imp_mean": []}
        for seed in seeds:
            X, _ = truth.sample(n, random_state=seed)
            Xte, _ = truth.sample(n, random_state=1000 + seed)
            rng = np.random.default_rng(seed)
            Xm = X.copy()
            Xm[rng.random(X.shape) < frac] = np.nan
            miss = np.isnan(Xm)
            col = np.nanmean(Xm, axis=0)
            kw = dict(emission="gaussian", covariance_type="full", n_init=2, random_state=seed)
            lib = hs.HMM(3, **kw).fit(Xm)
            res["lib"].append(lib.score(Xte) / n)
            res["mean"].append(hs.HMM(3, **kw).fit(np.where(miss, col, Xm)).score(Xte) / n)
            keep = ~miss.any(axis=1)
            res["drop"].append(hs.HMM(3, **kw).fit(Xm[keep]).score(Xte) / n
                               if keep.sum() > 30 else np.nan)
            if miss.any():
                res["imp_lib"].append(float(np.sqrt(np.mean(
                    (lib.impute(Xm)[miss] - X[miss]) ** 2))))
                res["imp_mean"].append(float(np.sqrt(np.mean(
                    (np.broadcast_to(col, X.shape)[miss] - X[miss]) ** 2))))
        rows.append((frac, *(float(np.mean(res[k])) if res[k] else np.nan
                             for k in ("lib", "mean", "drop", "imp_lib", "imp_mean"))))
    ref = float(np.mean([truth.score(truth.sample(n, random_state=1000 + s)[0]) / n
                         for s in seeds]))
    return rows, ref


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, default=REPO / "experiments" / "out")
    args = ap.parse_args()
    warnings.simplefilter("ignore", DegenerateStateWarning)
    seeds = [0] if args.quick else [0, 1, 2]
    tag_rows, K = tagging(args.data_dir, 2000 if args.quick else 5000,
                          15 if args.quick else 40, seeds, args.quick)
    miss_rows, ref = missing(500 if args.quick else 1500, seeds)

    args.out.mkdir(parents=True, exist_ok=True)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    fr = [r[0] for r in tag_rows]
    xs = np.arange(len(fr))
    ax[0].plot(xs, [r[1] for r in tag_rows], "o-", label="state k = tag k (labels pin it)")
    ax[0].plot(xs, [r[2] for r in tag_rows], "s--", label="best one-to-one relabelling")
    ax[0].set_xticks(xs, [f"{100 * f:g}%" for f in fr])
    ax[0].set_xlabel("labelled training tokens")
    ax[0].set_ylabel("held-out tagging accuracy")
    ax[0].set_title(f"PTB sample, {K} UPOS tags")
    ax[0].legend()
    mf = [r[0] for r in miss_rows]
    for i, label in ((1, "marginalise (library)"), (2, "column-mean fill"),
                     (3, "drop incomplete rows")):
        ax[1].plot(mf, [r[i] for r in miss_rows], "o-", label=label)
    ax[1].axhline(ref, color="k", ls=":", label="true model")
    ax[1].set_xlabel("fraction of training entries missing")
    ax[1].set_ylabel("held-out log-likelihood per observation")
    ax[1].set_title("3-state Gaussian HMM, full covariances, D = 3")
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(args.out / "semi_supervised.png", dpi=110)

    md = ["# Partial labels and missing observations", "",
          "## (i) Tagging accuracy vs fraction of labelled tokens (PTB sample)", "",
          f"EM with `fit(X, lengths, states=labels)`, K = {K} states (UPOS tags), "
          f"{len(seeds)} seed(s); {tag_rows[0][3]} training and {tag_rows[0][4]} held-out "
          "tokens.", "",
          markdown_table(["labelled", "accuracy (state = tag)", "accuracy (best relabelling)"],
                         [[f"{100 * r[0]:g}%", r[1], r[2]] for r in tag_rows]), "",
          "## (ii) Held-out log-likelihood vs fraction of missing entries", "",
          f"True model: {ref:.4f} nats per observation.", "",
          markdown_table(["missing", "marginalise", "column-mean fill", "drop rows",
                          "impute RMSE (library)", "column-mean RMSE"],
                         [[f"{100 * r[0]:g}%", *r[1:]] for r in miss_rows]), "",
          "![plot](semi_supervised.png)", ""]
    (args.out / "semi_supervised.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()

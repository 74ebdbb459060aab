"""How a black-box source should predict past a missing word (PROPS with missing data).

    .venv/bin/python experiments/props_missing_sources.py            # ~5-20 min (idle-busy)
    .venv/bin/python experiments/props_missing_sources.py --quick    # smoke run, ~3 min

Writes ``experiments/out/props_missing_sources.md`` (the table below and the verdict) and
``experiments/out/props_missing_sources.png`` (mean log-probability of the first three
observed words after a hole, per rule and source).

Not from the PROPS paper (which has no missing data): it measures the choice the library
makes when the history a source reads has a hole (``docs/props.md``, "Missing
observations"). Data: the bundled WikiText-2 extract (``src/hiddenstate/data``), its lines
split 90/10 into training and held-out text; a 3-gram Kneser-Ney source and a small LSTM
(the pipeline's: 64-dim embeddings, 128 hidden
units, 5 epochs, seeded) are trained on the 90%. In held-out lines, one
word at a time is removed (positions drawn at random, at least 3 words from either end of
its line) and the source predicts the next three words from the history with that hole,
by each rule:

- ``library``: what ``step(MISSING)`` does (Kneser-Ney: back off to the context after the
  hole; LSTM: feed the expected embedding under its own prediction);
- ``skip``: go on as if the word had never been there (the LSTM is not stepped; for
  Kneser-Ney, the context closes over the gap);
- ``reset``: start a new sequence after the hole;
- ``<unk>``: feed the unknown-word id in its place;
- ``argmax``: feed the source's most probable word in its place;
- ``oracle``: feed the true word (what the complete data would give; an upper reference).

The exact prediction of the next word, sum_w f(w | h) f(y | h, w), would run the source once
per word of the vocabulary; ``exact >=`` is its partial sum over the 100 most probable w, a
lower bound on it, for the first word after the hole.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, markdown_table  # noqa: E402

from hiddenstate.personalize import build_vocabulary, read_tokens  # noqa: E402
from hiddenstate.sources import MISSING, KneserNeySource  # noqa: E402

OUT = REPO / "experiments" / "out"
DATA = REPO / "src" / "hiddenstate" / "data" / "wikitext2_train_head.txt"
RULES = ("library", "skip", "reset", "<unk>", "argmax", "oracle")
AHEAD = 3     # observed words scored after each hole
TOP = 100     # words summed in the lower bound of the exact prediction


def _score_after(src, p, ahead):
    """log p of the words ``ahead`` from the distribution ``p``, stepping the source."""
    out = []
    for i, w in enumerate(ahead):
        out.append(np.log(p[w]))
        if i + 1 < len(ahead):
            p = src.step(int(w))
    return out


def evaluate(src, lines, holes, unk):
    """Per rule, the log-probabilities of the AHEAD words after each hole (holes, AHEAD),
    and the lower bound of the exact prediction of the first one."""
    scores = {r: [] for r in RULES}
    bound = []
    for li, t in holes:
        y = lines[li]
        _, pos = src.log_probs_from(y[:t])          # the position before the hole
        ahead = y[t + 1:t + 1 + AHEAD]
        nxt = pos["next"]
        for rule in RULES:
            src.restore({k: v for k, v in pos.items() if k != "next"})
            if rule == "library":
                p = src.step(MISSING)
            elif rule == "skip":
                p = nxt
            elif rule == "reset":
                p = src.reset()
            else:
                fill = {"<unk>": unk, "argmax": int(np.argmax(nxt)), "oracle": int(y[t])}[rule]
                p = src.step(fill)
            scores[rule].append(_score_after(src, p, ahead))
        total = 0.0
        for w in np.argsort(nxt)[::-1][:TOP]:
            src.restore({k: v for k, v in pos.items() if k != "next"})
            total += nxt[w] * src.step(int(w))[ahead[0]]
        bound.append(np.log(total))
    return {r: np.array(v) for r, v in scores.items()}, np.array(bound)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer holes, one LSTM epoch")
    ap.add_argument("--holes", type=int, default=300)
    args = ap.parse_args()
    n_holes = 40 if args.quick else args.holes
    t0 = time.perf_counter()
    lines = read_tokens(DATA, option="--reference")
    cut = int(0.9 * len(lines))
    vocab = build_vocabulary(lines[:cut], 10000)
    enc = [vocab.encode(s) for s in lines]
    train = np.concatenate(enc[:cut])
    lengths = [len(s) for s in enc[:cut]]
    held = [s for s in enc[cut:] if len(s) >= 2 * AHEAD + 4]
    rng = np.random.default_rng(0)
    holes = []
    for _ in range(n_holes):
        li = int(rng.integers(len(held)))
        holes.append((li, int(rng.integers(3, len(held[li]) - AHEAD - 1))))
    sources = {"3-gram Kneser-Ney": KneserNeySource(order=3).fit(train, lengths,
                                                                  vocabulary=vocab)}
    try:
        from hiddenstate.sources import LSTMSource

        # the pipeline's LSTM (``--source lstm``: 64-dim embeddings, 128 hidden units,
        # 5 epochs), seeded
        sources["LSTM"] = LSTMSource(embedding_dim=64, hidden_dim=128, epochs=1 if args.quick
                                     else 5, random_state=0).fit(train, lengths,
                                                                 vocabulary=vocab)
    except ImportError:
        print("torch is not installed: the LSTM rows are left out", file=sys.stderr)
    results = {name: evaluate(src, held, holes, vocab.unk_id) for name, src in sources.items()}

    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, (scores, bound) in results.items():
        for rule in RULES:
            s = scores[rule]
            rows.append([name, rule, f"{s[:, 0].mean():.3f}", f"{s.mean():.3f}",
                         f"{bound.mean():.3f}" if rule == "library" else ""])
    table = markdown_table(["source", "rule", "mean log p, 1st word after the hole",
                            f"mean log p, {AHEAD} words after", "exact >= (1st word)"], rows)
    verdict = []
    for name, (scores, _) in results.items():
        means = {r: scores[r].mean() for r in RULES if r != "oracle"}
        best = max(means, key=means.get)
        verdict.append(f"- {name}: the best rule without the true word is `{best}` "
                       f"({means[best]:.3f}); the library's rule gives "
                       f"{means['library']:.3f}, the true word {scores['oracle'].mean():.3f}.")
    md = (f"# Predicting past a missing word\n\n{len(holes)} holes in held-out WikiText-2 "
          f"lines; seconds: {time.perf_counter() - t0:.0f}. See the script's docstring for "
          f"the rules. Not a paper reproduction (PROPS has no missing data).\n\n{table}\n\n"
          + "\n".join(verdict) + "\n")
    (OUT / "props_missing_sources.md").write_text(md, encoding="utf-8")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 3.4),
                                 squeeze=False)
        for ax, (name, (scores, _)) in zip(axes[0], results.items(), strict=True):
            ax.bar(RULES, [scores[r].mean() for r in RULES],
                   color=["C0" if r == "library" else "C7" for r in RULES])
            ax.set_title(name)
            ax.set_ylabel(f"mean log p of the {AHEAD} words after a hole")
            ax.tick_params(axis="x", rotation=30)
        fig.tight_layout()
        fig.savefig(OUT / "props_missing_sources.png", dpi=110)
    except ImportError:
        pass
    print(md)


if __name__ == "__main__":
    main()

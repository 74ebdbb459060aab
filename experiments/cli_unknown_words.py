"""Which ``--min-count`` should ``hiddenstate fit`` use on text by default?

    .venv/bin/python experiments/cli_unknown_words.py [--data-dir DIR] [--seeds 5]

Writes ``experiments/results/cli_unknown_words.md``.

The command line maps every word of the training text seen fewer than ``--min-count`` times
to ``<unk>``, and every word of new text outside the vocabulary to ``<unk>`` too, so
``<unk>`` is what the model knows about words it has not seen. With ``--min-count 1`` no
training word is ``<unk>``, its emission probability is 0, and new text with one new word
has probability zero. The question is how much of the training text to give to ``<unk>``.

Held-out text (table 1), on three corpora read as ``hiddenstate fit`` reads text (words as
written, no lower-casing), the first 80% of the sentences (lines) for training, the rest
held out: the Penn Treebank sample (3,914 parsed WSJ sentences), the bundled sailing
logbook (3,743 words: a user's own text) and the bundled WikiText-2 extract (61k words; it
already writes ``<unk>`` for rare words, which stays ``<unk>``). For each ``min_count``: the
vocabulary size, the share of ``<unk>`` in training (the probability mass the model can
give to unseen words) and held out, the share of held-out sentences of probability zero,
and the held-out log-likelihood per token of a 10-state HMM (EM, 50 iterations; mean over
the seeds) over the sentences of positive probability. Log-likelihoods of different
vocabularies are not comparable as such (a larger ``<unk>`` class is easier to predict);
the "charged" column puts them on the same footing by charging each held-out ``<unk>``
token the log of the number of word types ``<unk>`` stands for (the training types below
``min_count`` plus the new held-out types: a uniform spread of ``<unk>``'s mass over them),
which penalises throwing words away.

Tagging (table 2): what a user of ``hiddenstate decode`` sees: the many-to-one accuracy of
the Viterbi states of the whole treebank sample against its 17 UPOS classes (17 states,
100 EM iterations; the defaults panel's pos17 task), when the words below ``min_count`` are
one symbol.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_DATA_DIR, REPO, load_treebank, markdown_table, upos  # noqa: E402

import hiddenstate as hs  # noqa: E402
from hiddenstate.demo import data_path  # noqa: E402
from hiddenstate.metrics import tagging_accuracy  # noqa: E402
from hiddenstate.textio import Vocabulary, encode_sequences, read_text_sequences  # noqa: E402

MIN_COUNTS = (1, 2, 3, 5)


def heldout_rows(name: str, sents: list[list[str]], seeds: int) -> list[list]:
    cut = int(0.8 * len(sents))
    train, test = sents[:cut], sents[cut:]
    counts = Counter(w for s in train for w in s)
    new_types = len({w for s in test for w in s} - set(counts))
    rows = []
    for min_count in MIN_COUNTS:
        vocab = Vocabulary.build(train, min_count=min_count)
        Xt, Lt = encode_sequences(train, vocab)
        Xh, Lh = encode_sequences(test, vocab)
        unk_types = sum(1 for w, c in counts.items() if c < min_count and w != "<unk>")
        charge = math.log(max(1, unk_types + new_types))
        lls, fair, zero = [], [], []
        for seed in range(seeds):
            model = hs.HMM(n_states=10, emission="categorical", n_features=len(vocab),
                           n_iter=50, tol=-math.inf, random_state=seed).fit(Xt, Lt)
            per_seq = np.asarray(model.score_sequences(Xh, Lh))
            finite = np.isfinite(per_seq)
            zero.append(1 - np.mean(finite))
            n = int(Lh[finite].sum())
            if n == 0:  # every held-out sentence has probability zero
                lls.append(math.nan)
                fair.append(math.nan)
                continue
            lls.append(float(per_seq[finite].sum()) / n)
            unk_in_finite = int(np.sum((Xh[:, 0] == 0) & np.repeat(finite, Lh)))
            fair.append(lls[-1] - charge * unk_in_finite / n)
        rows.append([name, min_count, len(vocab), f"{np.mean(Xt[:, 0] == 0):.1%}",
                     f"{np.mean(Xh[:, 0] == 0):.1%}", f"{np.mean(zero):.1%}",
                     f"{np.mean(lls):.3f}", f"{np.mean(fair):.3f} ± {np.std(fair):.3f}"])
    return rows


def tagging_rows(tagged, seeds: int) -> list[list]:
    sents = [[w for w, _ in s] for s in tagged]
    tags = np.unique([upos(w, t) for s in tagged for w, t in s], return_inverse=True)[1]
    rows = []
    for min_count in MIN_COUNTS:
        vocab = Vocabulary.build(sents, min_count=min_count)
        X, lengths = encode_sequences(sents, vocab)
        m2o = []
        for seed in range(seeds):
            model = hs.HMM(n_states=17, emission="categorical", n_features=len(vocab),
                           n_iter=100, tol=-math.inf, random_state=seed).fit(X, lengths)
            m2o.append(tagging_accuracy(tags, model.decode(X, lengths)[1], "many-to-one"))
        rows.append([min_count, len(vocab), f"{np.mean(X[:, 0] == 0):.1%}",
                     f"{np.mean(m2o):.3f} ± {np.std(m2o):.3f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    tagged = load_treebank(args.data_dir)
    corpora = {"PTB sample": [[w for w, _ in s] for s in tagged],
               "sailing logbook": read_text_sequences(data_path("sailing_logbook.txt")),
               "WikiText-2 extract": read_text_sequences(data_path("wikitext2_train_head.txt"))}
    held = [row for name, sents in corpora.items()
            for row in heldout_rows(name, sents, args.seeds)]
    table1 = markdown_table(
        ["corpus", "min_count", "vocabulary", "<unk> in training", "<unk> held out",
         "held-out sentences p = 0", "held-out log-lik/token (p > 0)",
         "charged log-lik/token (mean ± sd)"], held)
    table2 = markdown_table(["min_count", "vocabulary", "<unk> share",
                             f"pos17 many-to-one (mean ± sd, {args.seeds} seeds)"],
                            tagging_rows(tagged, args.seeds))
    text = ("# Default `--min-count` of `hiddenstate fit` on text\n\n"
            f"`experiments/cli_unknown_words.py`, {args.seeds} seeds. 10-state HMMs, EM, 50 "
            "iterations, 80% of the lines for training, the rest held out:\n\n"
            + table1 + "\n\nUnsupervised tagging of the whole PTB sample (17 states, EM, "
            "100 iterations, many-to-one accuracy against the 17 UPOS classes):\n\n"
            + table2 + "\n")
    out = REPO / "experiments" / "results" / "cli_unknown_words.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()

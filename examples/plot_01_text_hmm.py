"""
An HMM on real text
===================

A 12-state categorical HMM learned by EM on 1,500 sentences of the bundled WikiText-2
extract (``src/hiddenstate/data/wikitext2_train_head.txt``, CC BY-SA 3.0; see that
folder's README). Without any tags, the states pick up word classes: determiners,
prepositions, punctuation, nouns, verbs. The same fit on the command line is
``hiddenstate fit corpus.txt --n-states 12 --max-vocab 500 --out model --report report``.
"""

import matplotlib.pyplot as plt
import numpy as np

import hiddenstate as hs
from hiddenstate.demo import corpus_sentences
from hiddenstate.report import top_symbols
from hiddenstate.textio import Vocabulary, encode_sequences

sentences = corpus_sentences(1500)
vocab = Vocabulary.build(sentences, max_size=500)  # 499 words + <unk>
X, lengths = encode_sequences(sentences, vocab)
print(f"{len(sentences)} sentences, {len(X)} tokens, {len(vocab)} symbols")

model = hs.HMM(12, emission="categorical", n_iter=60, tol=1e-2, random_state=0)
model.fit(X, lengths)
print(f"{len(model.monitor_.history)} EM iterations, "
      f"log-likelihood per token {model.monitor_.history[-1] / len(X):.3f}")

# %%
# The most probable words of each state. ``<unk>`` (words outside the 499 most frequent)
# is itself a frequent symbol, so some states are mostly "a rare word here".
for k, words in enumerate(top_symbols(model.emissionprob_, vocab, n=8)):
    print(f"state {k:2d}: " + " ".join(w for w, _ in words))

# %%
# The log-likelihood per EM iteration and the transition matrix.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
ax1.plot(np.arange(1, len(model.monitor_.history) + 1),
         np.asarray(model.monitor_.history) / len(X), marker=".")
ax1.set_xlabel("EM iteration")
ax1.set_ylabel("log-likelihood per token")
im = ax2.imshow(model.transmat_, cmap="viridis", vmin=0)
ax2.set_xlabel("next state")
ax2.set_ylabel("state")
ax2.set_title("transmat_")
fig.colorbar(im, ax=ax2)
fig.tight_layout()

# %%
# Viterbi states of a sentence.
x, _ = encode_sequences([sentences[3]], vocab)
_, states = model.decode(x)
print(" ".join(f"{w}/{s}" for w, s in zip(sentences[3], states, strict=True)))

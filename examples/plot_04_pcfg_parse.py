"""
Parsing with a PCFG
===================

A probabilistic context-free grammar in Chomsky normal form (``hs.PCFG``) with the
classic prepositional-phrase ambiguity: in "she eats fish with a fork", the fork goes
either with the eating or with the fish. The grammar's probabilities decide; the inside
probability sums over both parses, and the posterior of every constituent says how
sure the grammar is of it. Then the probabilities are learned back from sampled sentences
alone with EM and with Viterbi training (see :doc:`/pcfg`).
"""

import matplotlib.pyplot as plt
import numpy as np

import hiddenstate as hs
from hiddenstate.grammar import Tree

rules = {
    "S": [("NP", "VP")],
    "VP": [("V", "NP"), ("VP", "PP")],
    "NP": [("NP", "PP"), ("D", "N"), ("she",), ("fish",)],
    "PP": [("P", "NP")],
    "V": [("eats",)], "P": [("with",)], "D": [("a",)], "N": [("fork",)],
}
g = hs.PCFG(rules=rules, start="S")
g.set_probs("VP", [0.7, 0.3])
g.set_probs("NP", [0.2, 0.3, 0.3, 0.2])
sentence = "she eats fish with a fork".split()
print(f"log P(sentence) = {g.score([sentence]):.4f}")
parses = g.parse_k_best(sentence, 2)
for logp, tree in parses:
    print(f"{logp:.4f} {tree}")


def draw(ax, tree, title):
    """Draw a tree: leaves evenly spaced, each node above the middle of its children."""
    leaves = []

    def place(node, depth):
        if not isinstance(node, Tree):
            leaves.append(node)
            return len(leaves) - 1.0, 6.7  # the stem reaches down to the word row
        kids = [place(c, depth + 1) for c in node.children]
        x = float(np.mean([k[0] for k in kids]))
        for kx, kd in kids:
            ax.plot([x, kx], [-depth, -kd], color="0.6", lw=1, zorder=1)
        ax.text(x, -depth, node.label, ha="center", va="center", zorder=2,
                bbox={"boxstyle": "round", "fc": "#dbe9f6", "ec": "0.5"})
        return x, depth

    place(tree, 0)
    for i, w in enumerate(leaves):
        ax.text(i, -7, w, ha="center", va="center", style="italic")
    ax.set_title(title)
    ax.set_xlim(-0.7, len(leaves) - 0.3)
    ax.set_ylim(-7.6, 0.6)
    ax.axis("off")


fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
for ax, (logp, tree), name in zip(axes, parses, ("best parse", "second parse"), strict=True):
    draw(ax, tree, f"{name}: P = {np.exp(logp):.4f}")
fig.tight_layout()

# %%
# Posterior of a constituent: P(VP spans "eats fish" | sentence).
mu = g.predict_proba([sentence])[0]
print("P(VP over 'eats fish' | sentence) =",
      round(float(mu[1, 3, g.grammar().nt_index["VP"]]), 4))

# %%
# Learning the probabilities from 200 sampled sentences (no trees): EM and MAP get close
# to the generating 0.7 (VP -> V NP) and 0.2 (NP -> NP PP); Viterbi training counts only
# the best parse of each sentence and learns a grammar biased towards it.
data = [w for w, _ in g.sample(200, random_state=0)]
for mode in ("em", "map", "vt"):
    prior = None if mode == "em" else 2.0  # maximum likelihood takes no prior
    m = hs.PCFG(rules=rules, start="S", learn=mode, prior=prior, n_init=3,
                random_state=0).fit(data)
    print(f"{mode}: P(VP -> V NP) = {m.probs_['VP'][0]:.3f}, "
          f"P(NP -> NP PP) = {m.probs_['NP'][0]:.3f}")

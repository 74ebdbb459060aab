"""
PROPS: personalising a black-box language model
================================================

PROPS (Wojnowicz & Zhao) pins a pre-trained black box to a *source state* of an HMM and
learns *perturbation states* from one user's stream by online EM. Here the black box is an
interpolated Kneser-Ney 3-gram trained on the bundled WikiText-2 extract; the user is the
bundled sailing logbook (original text written for the demo). PROPS is personalised on the
logbook's first 2,000 words and scored on the remaining 1,743, against the black box alone
and a streaming HMM learned from the same 2,000 words. This is what ``make demo`` runs
(``hiddenstate personalize`` on the command line; see :doc:`/props`).
"""

import tempfile

import matplotlib.pyplot as plt
import numpy as np

from hiddenstate.demo import corpus_path, target_path
from hiddenstate.personalize import format_summary_table, personalize

out = tempfile.mkdtemp()
result = personalize(corpus_path(), target_path(), out, words=2000, seed=0, report=False,
                     progress=None)
print(format_summary_table(result.summary))

# %%
# Learning curves: the running mean of the prequential log-probability over the
# personalisation stream (each word predicted before the model learns from it).
fig, ax = plt.subplots(figsize=(8, 4))
for name, curve in result.curves.items():
    n = np.arange(1, len(curve) + 1)
    ax.plot(n, np.cumsum(curve) / n, label=name)
ax.set_xlabel("words seen")
ax.set_ylabel("running mean log p(word | past)")
ax.legend()
fig.tight_layout()

# %%
# On the evaluation words, the membership log-odds say whether each word looks like "the
# user" (> 0) or "the reference corpus" (< 0).
scores = result.scores
words = result.evaluation.words
print("share of evaluation words attributed to the user:",
      round(float(np.mean(scores.membership_log_odds > 0)), 3))
fig, ax = plt.subplots(figsize=(9, 3))
ax.plot(np.clip(scores.membership_log_odds[:300], -20, 20), lw=0.8)
ax.axhline(0, color="0.5", lw=0.8)
ax.set_xlabel("evaluation word")
ax.set_ylabel("membership log-odds")
fig.tight_layout()
print(" ".join(words[:40]))

"""
How long the solar cycle's phases last: a hidden semi-Markov model of sunspots
==============================================================================

The yearly mean sunspot number, 1700-2008 (NOAA, public domain, bundled as
``src/hiddenstate/data/sunspots.csv``: see that folder's README). The 11-year solar cycle
alternates years of high and of low activity, each lasting about five or six years. An
HMM cannot say that: the time it spends in a state is geometric, most likely one year. An
:class:`~hiddenstate.HSMM` learns how long each phase lasts. Both models are fitted to
the square root of the counts from 1700 to 1900 and scored on 1901-2008.
"""

from importlib.resources import files

import matplotlib.pyplot as plt
import numpy as np

import hiddenstate as hs

data = np.loadtxt(files("hiddenstate.data").joinpath("sunspots.csv"), delimiter=",",
                  skiprows=1)
years, x = data[:, 0].astype(int), np.sqrt(data[:, 1:2])
train, test = x[years <= 1900], x[years > 1900]
print(f"{len(train)} training years, {len(test)} held-out years")

hmm = hs.HMM(2, emission="gaussian", n_init=5, random_state=0).fit(train)
models = {"HMM (geometric durations)": hmm}
for duration in ("nonparametric", "negative-binomial"):
    models[f"HSMM ({duration} durations)"] = hs.HSMM(
        2, duration=duration, emission="gaussian", max_duration=20, n_init=5,
        random_state=0).fit(train)
print(f"{'model':34s} {'train':>8s} {'held out':>9s}  parameters")
for name, model in models.items():
    print(f"{name:34s} {model.score(train):8.1f} {model.score(test):9.1f}  "
          f"{model.n_parameters()}")

# %%
# The learned durations of the high and the low phase, against the geometric durations the
# HMM's self-transitions imply, :math:`(1 - a_{kk}) a_{kk}^{d-1}`.
hsmm = models["HSMM (nonparametric durations)"]
d = np.arange(1, hsmm.max_duration_ + 1)
fig, axes = plt.subplots(1, 2, figsize=(10, 3.5), sharey=True)
for ax, phase in zip(axes, ("high", "low"), strict=True):
    k = int(np.argmax(hsmm.means_[:, 0]) if phase == "high" else np.argmin(hsmm.means_[:, 0]))
    h = int(np.argmax(hmm.means_[:, 0]) if phase == "high" else np.argmin(hmm.means_[:, 0]))
    a = hmm.transmat_[h, h]
    ax.bar(d, hsmm.duration_pmf()[k], color="C0", alpha=0.7, label="HSMM, learned")
    ax.plot(d, (1 - a) * a ** (d - 1), "o-", color="C3", label="HMM, implied geometric")
    ax.set_title(f"{phase} activity: mean {hsmm.mean_durations()[k]:.1f} years "
                 f"(HMM {1 / (1 - a):.1f})")
    ax.set_xlabel("duration (years)")
axes[0].set_ylabel("probability")
axes[0].legend()
fig.tight_layout()

# %%
# The most probable segmentation of the whole series under the HSMM fitted to 1700-1900:
# each phase of the cycle is one segment.
_, states = hsmm.decode(x)
high = int(np.argmax(hsmm.means_[:, 0]))
fig, ax = plt.subplots(figsize=(10, 3))
ax.plot(years, data[:, 1], color="0.3", lw=1)
ax.fill_between(years, 0, data[:, 1].max(), where=states == high, step="mid", color="C1",
                alpha=0.25, label="high-activity segment (Viterbi)")
ax.axvline(1900.5, color="k", ls="--", lw=1)
ax.set_xlabel("year")
ax.set_ylabel("sunspot number")
ax.legend(loc="upper left")
fig.tight_layout()
segments = np.flatnonzero(np.diff(states)) + 1
print("segments per century, 1901-2000:",
      int(np.sum((years[segments] > 1900) & (years[segments] <= 2000))))

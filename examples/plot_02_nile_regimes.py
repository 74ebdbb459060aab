"""
Regime switching on the Nile's annual flow
==========================================

The annual flow of the Nile at Aswan, 1871-1970 (10^8 m^3; Cobb 1978, public domain,
bundled as ``src/hiddenstate/data/nile.csv``: see that folder's README). The flow drops
around 1898, the classic change-point of this series (construction of the first Aswan
dam began in 1898). A 2-state Gaussian HMM finds the two regimes without being told where the
change is, and its posterior says how sure it is of each year.
"""

from importlib.resources import files

import matplotlib.pyplot as plt
import numpy as np

import hiddenstate as hs

data = np.loadtxt(files("hiddenstate.data").joinpath("nile.csv"), delimiter=",",
                  skiprows=1)
years, flow = data[:, 0].astype(int), data[:, 1:2]
print(f"{len(flow)} years, {years[0]}-{years[-1]}, mean flow {flow.mean():.0f}")

model = hs.HMM(2, emission="gaussian", covariance_type="diag", n_init=5, random_state=0)
model.fit(flow)
order = np.argsort(-model.means_[:, 0])  # state 0 of the plot: the high-flow regime
means = model.means_[order, 0]
sds = np.sqrt(model.covars_[order, 0, 0])
print("regime means:", means.round(0), " standard deviations:", sds.round(0))
print("transition matrix (high, low):")
print(model.transmat_[np.ix_(order, order)].round(3))

# %%
# The most probable path (Viterbi) and the posterior probability of the high-flow regime.
_, states = model.decode(flow)
high = order[0]
change = years[np.flatnonzero(states != high)[0]]
print("first year of the low-flow regime (Viterbi):", change)
posterior_high = model.predict_proba(flow)[:, high]

fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 5.5), sharex=True,
                               gridspec_kw={"height_ratios": [2, 1]})
ax1.plot(years, flow[:, 0], color="0.3", marker=".", lw=1, label="annual flow")
ax1.plot(years, model.means_[states, 0], color="C3", lw=2, label="mean of the Viterbi state")
ax1.set_ylabel("flow (10^8 m^3)")
ax1.legend(loc="upper right")
ax2.fill_between(years, posterior_high, step="mid", alpha=0.6)
ax2.set_ylim(0, 1)
ax2.set_ylabel("P(high regime | data)")
ax2.set_xlabel("year")
fig.tight_layout()

# %%
# BIC prefers two regimes to one or three.
for k in (1, 2, 3):
    m = hs.HMM(k, emission="gaussian", n_init=5, random_state=0).fit(flow)
    print(f"{k} state(s): BIC {m.bic(flow):.1f}")

"""
How many regimes, and how sure? Gibbs sampling on the Nile
==========================================================

The annual flow of the Nile at Aswan, 1871-1970 (bundled with the package; see
``plot_02_nile_regimes.py``). A sticky HDP-HMM (``learn="gibbs"``,
``transmat_prior="sticky-hdp"``) may use up to 6 regimes; Gibbs sampling draws the
parameters *and* the number of regimes in use from their posterior. The draws give what a
point estimate cannot: the posterior probability of each number of regimes, credible
intervals for each regime's mean flow, and, for every year, the probability of the
low-flow regime averaged over the posterior's uncertainty in the parameters.
"""

from importlib.resources import files

import matplotlib.pyplot as plt
import numpy as np

import hiddenstate as hs

data = np.loadtxt(files("hiddenstate.data").joinpath("nile.csv"), delimiter=",",
                  skiprows=1)
years, flow = data[:, 0].astype(int), data[:, 1:2]
scale, centre = flow.std(), flow.mean()
z = (flow - centre) / scale          # the Gaussian prior's defaults are in the data's units

model = hs.HMM(n_states=6, emission="gaussian", learn="gibbs", transmat_prior="sticky-hdp",
               random_state=0,
               learner_options={"n_samples": 1500, "burn_in": 500, "n_chains": 4})
model.fit(z)
p = model.n_states_posterior()
print("posterior of the number of regimes:",
      {k: round(float(v), 2) for k, v in enumerate(p) if v > 0.005})

# %%
# Each draw's states are relabelled to agree with the others (``docs/gibbs.md``), so a
# regime keeps its label across draws. For 200 draws, the posterior p(z_t | flow,
# theta_s) of every year; averaged over the draws they say which regimes hold the years
# (the others are the truncation's spare states, drawn from the prior) and, per year, how
# sure the model is of each, the parameters' uncertainty included. (The concentrations of
# the HDP prior mix the slowest: the warning above names them.)
draws = model.posterior_samples_
n_chains, n_draws = draws["means_"].shape[:2]
rng = np.random.default_rng(0)
picks = rng.choice(n_chains * n_draws, 200, replace=False)
one = hs.HMM(n_states=6, emission="gaussian")
one.n_features_ = 1
post = []
for i in picks:
    c, d = divmod(int(i), n_draws)
    one.startprob_, one.transmat_ = draws["startprob_"][c, d], draws["transmat_"][c, d]
    one.means_, one.covars_ = draws["means_"][c, d], draws["covars_"][c, d]
    post.append(one.predict_proba(z))
post = np.array(post)                                    # (draws, years, states)
occupancy = post.mean(axis=(0, 1))
main = np.argsort(-occupancy)[:2]
means = draws["means_"][..., 0].reshape(-1, 6) * scale + centre
for k in main:
    lo, mid, hi = np.percentile(means[:, k], [5, 50, 95])
    print(f"regime {k}: mean flow {mid:.0f} (90% interval {lo:.0f}-{hi:.0f}), "
          f"{occupancy[k]:.0%} of the years")

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.2))
ax1.bar(np.arange(len(p)), p)
ax1.set_xlabel("regimes in use")
ax1.set_ylabel("posterior probability")
for k in main:
    ax2.hist(means[:, k], bins=40, alpha=0.6, label=f"regime {k}")
ax2.set_xlabel("mean flow (10^8 m^3)")
ax2.set_ylabel("draws")
ax2.legend()
fig.tight_layout()

# %%
# The probability of the low-flow regime in every year: the posterior mean over the draws
# and the band that holds 90% of them. The change around 1898 is certain; a few years
# next to it are not.
low = main[np.argmin(np.median(means[:, main], axis=0))]
probs = post[:, :, low]
lo, hi = np.percentile(probs, [5, 95], axis=0)
first = years[np.argmax(probs.mean(axis=0) > 0.5)]
print("first year more likely low than not:", first)

fig, ax = plt.subplots(figsize=(9, 3))
ax.fill_between(years, lo, hi, alpha=0.3, step="mid", label="90% of the draws")
ax.plot(years, probs.mean(axis=0), drawstyle="steps-mid", label="posterior mean")
ax.set_ylabel("P(low-flow regime)")
ax.set_xlabel("year")
ax.legend(loc="lower right")
fig.tight_layout()

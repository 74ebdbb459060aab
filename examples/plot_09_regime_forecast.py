"""
A regime-switching forecast of the S&P 500
==========================================

Monthly closes of the S&P 500 index, January 1990 to June 2022 (Yahoo Finance; the sample
data that ships with matplotlib, ``matplotlib.cbook.get_sample_data("Stocks.csv")``).
Monthly log returns switch between a calm regime (small spread, positive drift) and a
turbulent one (about twice the spread), the classic finding of Hamilton (1989). A
:class:`~hiddenstate.RegressionHMM` with one or two regimes, with or without an AR(1) term
(``n_lags=1``), is compared by BIC; the chosen model forecasts the next twelve months from
the regime the data end in: the exact mean and spread of each month's return
(:meth:`~hiddenstate.RegressionHMM.forecast`), and, by simulation
(:meth:`~hiddenstate.RegressionHMM.sample_forecast`), a fan of the index level.
"""

import csv

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import cbook

import hiddenstate as hs

with cbook.get_sample_data("Stocks.csv") as fh:
    lines = (line.decode() if isinstance(line, bytes) else line for line in fh)
    rows = [r for r in csv.reader(lines) if r and not r[0].startswith("#")]
column = rows[0].index("^GSPC")
dates = np.array([r[0] for r in rows[1:] if r[column]], dtype="datetime64[D]")
close = np.array([float(r[column]) for r in rows[1:] if r[column]])
returns = 100 * np.diff(np.log(close))[:, None]   # % per month
print(f"{len(returns)} monthly returns, {dates[1]} to {dates[-1]}; "
      f"mean {returns.mean():.2f}%, sd {returns.std():.2f}%")

# %%
# One or two regimes, with or without an AR(1) term: BIC (lower is better) prefers two
# regimes; the lag adds little.
models = {}
for k in (1, 2):
    for lags in (0, 1):
        m = hs.RegressionHMM(k, n_lags=lags, n_init=10, random_state=0).fit(returns)
        models[k, lags] = m
        print(f"{k} regime(s), n_lags={lags}: BIC {m.bic(returns):.1f}")
model = min(models.values(), key=lambda m: m.bic(returns))
calm = int(np.argmin(model.covars_[:, 0, 0]))
print(f"chosen: {model.n_states} regimes, n_lags={model.n_lags}")
print("monthly drift (%):", model.intercept_[:, 0].round(2),
      " sd (%):", np.sqrt(model.covars_[:, 0, 0]).round(2),
      " P(stay):", np.diag(model.transmat_).round(3))

# %%
# The forecast: where the data end, the turbulent regime is the likely one, and each
# month's predictive distribution is a mixture of the two regimes' Gaussians. Its spread
# narrows as the calm regime becomes more likely again. The scenarios (one draw of the
# regimes and returns each) give the fan of the index level.
steps = 12
fc = model.forecast(returns, steps=steps)
p_calm = fc.state_proba[0, :, calm]
print("P(calm) over the next 12 months:", p_calm.round(2))
print("mean return (%):", fc.mean[0, :, 0].round(2))
print("sd (%):", fc.std()[0, :, 0].round(2))
paths, _ = model.sample_forecast(returns, steps=steps, n_scenarios=2000, random_state=1)
level = close[-1] * np.exp(np.cumsum(paths[0, :, :, 0], axis=1) / 100)
months = dates[-1] + np.arange(1, steps + 1) * np.timedelta64(30, "D")

post_calm = model.predict_proba(returns)[:, calm]
fig, axes = plt.subplots(3, 1, figsize=(9, 8), gridspec_kw={"height_ratios": [2, 1, 2]})
axes[0].plot(dates, close, color="0.3", lw=1)
axes[0].set_yscale("log")
axes[0].set_ylabel("S&P 500")
axes[1].fill_between(dates[1:], np.nan_to_num(post_calm), step="mid", alpha=0.6)
axes[1].set_ylim(0, 1)
axes[1].set_ylabel("P(calm | data)")
recent = dates >= dates[-1] - np.timedelta64(5 * 365, "D")
axes[2].plot(dates[recent], close[recent], color="0.3", lw=1, label="history")
for lo, hi, alpha in ((5, 95, 0.2), (25, 75, 0.35)):
    axes[2].fill_between(months, np.percentile(level, lo, axis=0),
                         np.percentile(level, hi, axis=0), color="C0", alpha=alpha,
                         label=f"{hi - lo}% of 2,000 scenarios")
axes[2].plot(months, np.median(level, axis=0), color="C0", label="median scenario")
axes[2].set_ylabel("S&P 500 (forecast)")
axes[2].legend(loc="upper left")
fig.tight_layout()

# %%
# The exact moments and the scenarios agree: the scenarios' monthly returns have the
# forecast's mean and spread (up to their sampling error).
print("scenario mean (%):", paths[0, :, :, 0].mean(axis=0).round(2)[:4], "...")
print("scenario sd (%):  ", paths[0, :, :, 0].std(axis=0).round(2)[:4], "...")

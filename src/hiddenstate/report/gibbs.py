"""The report's section for a model fitted by ``learn="gibbs"``: ArviZ's trace and rank plots
of the transition matrix's diagonal (every chain), the log joint per sweep, the
convergence diagnostics of the worst parameters, and the posterior of the number of states
of a sticky HDP-HMM. Needs ArviZ (the ``gibbs`` extra) besides matplotlib; without it the
section says so."""

from __future__ import annotations

import html
import warnings
from pathlib import Path

import numpy as np

#: the files the section may write
GIBBS_FILES = frozenset({"gibbs_trace.png", "gibbs_rank.png", "n_states.png"})
#: the diagonal entries shown (the first ones)
MAX_SHOWN = 6


def gibbs_section(model, out: Path, img, table) -> str:
    """The HTML of the section (``img(path, alt)`` and ``table(header, rows)`` are the
    report's helpers)."""
    from ..errors import MissingDependencyError
    from ..learn.diagnostics import convergence, require_arviz

    samples = model.posterior_samples_
    n_chains, n_draws = model.sample_log_joint_.shape
    opts = model.learner_options or {}
    head = ("<section id=\"gibbs\"><h2>Posterior draws (Gibbs sampling)</h2>"
            f"<p>{n_chains} chains of {n_draws} kept draws (burn-in "
            f"{html.escape(str(opts.get('burn_in', 500)))}, thinning "
            f"{html.escape(str(opts.get('thin', 1)))}); the fitted parameters above are the "
            "posterior mean of the relabelled draws, and the scores are posterior "
            "predictive.</p>")
    try:
        az = require_arviz()
    except MissingDependencyError as exc:
        return head + f"<p>{html.escape(str(exc))}</p></section>"
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    K = samples["transmat_"].shape[-1]
    shown = list(range(min(K, MAX_SHOWN)))
    diag = {f"transmat_[{k}, {k}]": samples["transmat_"][:, :, k, k] for k in shown}
    idata = az.from_dict(posterior=diag, sample_stats={"lp": model.sample_log_joint_})
    parts = [head]
    with warnings.catch_warnings():   # ArviZ's own use of deprecated matplotlib API
        warnings.simplefilter("ignore", DeprecationWarning)
        axes = az.plot_trace(idata, compact=False, figsize=(10, 1.8 * len(shown)))
    fig = np.asarray(axes).ravel()[0].figure
    fig.tight_layout()
    fig.savefig(out / "gibbs_trace.png", dpi=90)
    plt.close(fig)
    parts.append(img(out / "gibbs_trace.png", "trace of the self-transition probabilities "
                                               "(each chain a colour)"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        axes = az.plot_rank(idata, figsize=(10, 2.2 * ((len(shown) + 2) // 3)))
    fig = np.asarray(axes).ravel()[0].figure
    fig.tight_layout()
    fig.savefig(out / "gibbs_rank.png", dpi=90)
    plt.close(fig)
    parts.append(img(out / "gibbs_rank.png", "rank plots: flat histograms when the chains "
                                              "agree"))
    report = model.__dict__.get("convergence_") or convergence(samples)
    order = np.argsort(-np.nan_to_num(report["r_hat"], nan=0.0))[:8]
    rows = [[html.escape(report["names"][i]), f"{report['r_hat'][i]:.3f}",
             f"{report['ess_bulk'][i]:.0f}", f"{report['ess_tail'][i]:.0f}"] for i in order]
    verdict = ("the chains agree (every R-hat <= 1.01, every ESS >= 100 per chain)"
               if report["ok"] else "the chains have NOT converged: run longer chains")
    parts.append(f"<p>Diagnostics (ArviZ): {verdict}. The parameters of largest R-hat:</p>"
                 + table(["parameter", "R-hat", "bulk ESS", "tail ESS"], rows))
    used = (model.__dict__.get("sample_stats_") or {}).get("n_states_used")
    if used is not None:
        p = model.n_states_posterior()
        fig, ax = plt.subplots(figsize=(6, 2.5))
        ax.bar(np.arange(len(p)), p, color="C0")
        ax.set_xlabel("states in use")
        ax.set_ylabel("posterior probability")
        fig.tight_layout()
        fig.savefig(out / "n_states.png", dpi=90)
        plt.close(fig)
        parts.append(img(out / "n_states.png", "posterior of the number of states in use "
                                                "(sticky HDP-HMM)"))
    return "".join(parts) + "</section>"

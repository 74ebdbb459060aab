r"""Convergence diagnostics of Gibbs sampling through ArviZ (the ``gibbs`` extra:
``pip install 'hiddenstate[gibbs]'``), imported only when asked for.

- :func:`inference_data`: the draws as an :class:`arviz.InferenceData` (``posterior``
  group: one variable per parameter array, dimensions ``(chain, draw, <name>_dim_0, ...)``;
  ``sample_stats``: ``lp``, the log joint :math:`\log p(X, z, \theta)` of every draw, and
  what the blocks report, e.g. the number of states in use).
- :func:`convergence`: rank-normalised split :math:`\hat R` and bulk/tail effective
  sample sizes per scalar parameter (Vehtari, Gelman, Simpson, Carpenter & Bürkner 2021,
  as :func:`arviz.summary` computes them) and the verdict: every :math:`\hat R \le`
  :data:`RHAT_MAX` and every bulk and tail ESS :math:`\ge` :data:`ESS_PER_CHAIN` per chain
  (the thresholds of that paper). :func:`warn_convergence` turns a failing verdict into one
  :class:`~hiddenstate.errors.ConvergenceWarning` naming the worst parameters.

Run on the relabelled draws (:func:`hiddenstate.learn.gibbs.relabel_draws`): before
relabelling, a chain that swaps two states would show an :math:`\hat R` that says nothing
about convergence.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import ConvergenceWarning, MissingDependencyError

#: the largest acceptable rank-normalised split R-hat (Vehtari et al. 2021)
RHAT_MAX = 1.01
#: the smallest acceptable bulk and tail effective sample size per chain
ESS_PER_CHAIN = 100


def require_arviz():
    """Import ArviZ (its import-time FutureWarning silenced), or raise a clear error.

    Returns
    -------
    module
        :mod:`arviz`.

    Raises
    ------
    hiddenstate.errors.MissingDependencyError
        If ArviZ is not installed.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            import arviz
    except ImportError as exc:
        raise MissingDependencyError(
            "arviz: the diagnostics of learn='gibbs' (R-hat, effective sample sizes, "
            "InferenceData) need ArviZ; pip install 'hiddenstate[gibbs]'") from exc
    return arviz


def inference_data(samples: dict, log_joint: np.ndarray | None = None,
                   stats: dict | None = None):
    """Return the draws as an ArviZ ``InferenceData``.

    Parameters
    ----------
    samples : dict of str to ndarray
        Per parameter, its draws ``(n_chains, n_draws, *shape)``.
    log_joint : ndarray of shape (n_chains, n_draws) or None, default=None
        The log joint of every draw (``sample_stats.lp``).
    stats : dict of str to ndarray or None, default=None
        More per-draw quantities ``(n_chains, n_draws)`` for ``sample_stats``.

    Returns
    -------
    arviz.InferenceData
        ``posterior`` (and ``sample_stats``).

    Raises
    ------
    hiddenstate.errors.MissingDependencyError
        If ArviZ is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.learn.diagnostics import inference_data
    >>> rng = np.random.default_rng(0)
    >>> idata = inference_data({"rate": rng.gamma(2.0, size=(2, 50))},
    ...                        log_joint=rng.normal(size=(2, 50)))
    >>> idata.posterior["rate"].shape, float(idata.sample_stats["lp"].mean()) < 1
    ((2, 50), True)
    """
    az = require_arviz()
    sample_stats = dict(stats or {})
    if log_joint is not None:
        sample_stats["lp"] = np.asarray(log_joint)
    return az.from_dict(posterior={k: np.asarray(v) for k, v in samples.items()},
                        sample_stats=sample_stats or None)


def convergence(samples: dict) -> dict:
    """Return R-hat and the bulk and tail effective sample sizes of every scalar parameter.

    Parameters
    ----------
    samples : dict of str to ndarray
        Per parameter, its (relabelled) draws ``(n_chains, n_draws, *shape)``. A parameter
        constant over every draw (a structural zero, a fixed value) is left out.

    Returns
    -------
    dict
        ``names`` (``"transmat_[0, 1]"``...), ``r_hat``, ``ess_bulk``, ``ess_tail``
        (arrays aligned with ``names``; R-hat is NaN with one chain), ``n_chains``,
        ``n_draws`` and ``ok``: whether every R-hat is at most :data:`RHAT_MAX` and every
        ESS at least :data:`ESS_PER_CHAIN` per chain.

    Raises
    ------
    hiddenstate.errors.MissingDependencyError
        If ArviZ is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.learn.diagnostics import convergence
    >>> rng = np.random.default_rng(0)
    >>> good = convergence({"x": rng.normal(size=(4, 500))})
    >>> good["ok"], bool(good["r_hat"][0] < 1.01)
    (True, True)
    >>> stuck = convergence({"x": rng.normal(size=(4, 500)) + np.arange(4)[:, None]})
    >>> stuck["ok"], bool(stuck["r_hat"][0] > 1.5)
    (False, True)
    """
    az = require_arviz()
    samples = {k: np.asarray(v, dtype=np.float64) for k, v in samples.items()}
    first = next(iter(samples.values()))
    n_chains, n_draws = first.shape[:2]
    ds = az.convert_to_dataset(samples)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        per = {"r_hat": az.rhat(ds) if n_chains > 1 else None,
               "bulk": az.ess(ds, method="bulk"), "tail": az.ess(ds, method="tail")}
    names, rhat, bulk, tail = [], [], [], []
    for name, value in samples.items():
        flat = value.reshape(n_chains, n_draws, -1)
        shape = value.shape[2:]
        spread = np.ptp(flat, axis=(0, 1))
        live = spread > 1e-12 * np.maximum(1.0, np.abs(flat).max(axis=(0, 1)))
        for j in np.flatnonzero(live):  # constant: a structural zero or a fixed value
            idx = np.unravel_index(j, shape) if shape else ()
            names.append(f"{name}[{', '.join(map(str, idx))}]" if shape else name)
        rhat.extend(np.asarray(per["r_hat"][name]).reshape(-1)[live] if n_chains > 1
                    else np.full(int(live.sum()), np.nan))
        bulk.extend(np.asarray(per["bulk"][name]).reshape(-1)[live])
        tail.extend(np.asarray(per["tail"][name]).reshape(-1)[live])
    rhat, bulk, tail = np.array(rhat), np.array(bulk), np.array(tail)
    ok = bool((n_chains < 2 or not len(rhat) or np.nanmax(rhat) <= RHAT_MAX)
              and (not len(bulk) or min(bulk.min(), tail.min())
                   >= ESS_PER_CHAIN * n_chains))
    return {"names": names, "r_hat": rhat, "ess_bulk": bulk, "ess_tail": tail,
            "n_chains": n_chains, "n_draws": n_draws, "ok": ok}


def warn_convergence(report: dict, stacklevel: int = 2) -> None:
    """Issue one :class:`~hiddenstate.errors.ConvergenceWarning` when :func:`convergence`
    says the chains have not converged, naming the worst parameters.

    Parameters
    ----------
    report : dict
        What :func:`convergence` returned.
    stacklevel : int, default=2
        The warning's stack level.
    """
    if report["ok"]:
        return
    parts = []
    rhat, names = report["r_hat"], report["names"]
    n_chains = report["n_chains"]
    if n_chains > 1 and len(rhat) and np.nanmax(rhat) > RHAT_MAX:
        worst = np.argsort(-np.nan_to_num(rhat, nan=-np.inf))[:3]
        bad = int(np.sum(rhat > RHAT_MAX))
        parts.append(f"R-hat above {RHAT_MAX} for {bad} of {len(rhat)} parameters ("
                     + ", ".join(f"{names[i]} {rhat[i]:.3g}" for i in worst) + ")")
    ess = np.minimum(report["ess_bulk"], report["ess_tail"])
    need = ESS_PER_CHAIN * n_chains
    if len(ess) and ess.min() < need:
        worst = np.argsort(ess)[:3]
        parts.append(f"effective sample size below {need} ({ESS_PER_CHAIN} per chain) for "
                     f"{int(np.sum(ess < need))} parameters ("
                     + ", ".join(f"{names[i]} {ess[i]:.0f}" for i in worst) + ")")
    warnings.warn(
        "learn='gibbs': the chains have not converged: " + "; ".join(parts) + ". Run longer "
        "chains (learner_options n_samples, burn_in) or more of them (n_chains); "
        "to_inference_data() gives the draws to ArviZ for trace and rank plots",
        ConvergenceWarning, stacklevel=stacklevel)

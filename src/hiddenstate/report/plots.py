"""PNG plots for the HTML report.

Figures are built with :class:`matplotlib.figure.Figure` on an explicit Agg canvas, never
through ``pyplot``, so writing a report changes no global matplotlib state (a user's
interactive backend is left alone).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path: Path) -> Path:
    fig.savefig(path, format="png", dpi=100)
    return path


def loglik_figure(history, n_observations: int | None = None,
                  objective: str = "log-likelihood"):
    """The learning objective per iteration: every iteration, plain tick labels (no offset
    such as "-1.1144e2"), the per-observation value on a second axis when known, and, when
    the first iterations' jump dwarfs the rest, a second panel with each iteration's
    distance to the final value on a log scale, where the late progress shows."""
    from matplotlib.ticker import MaxNLocator, ScalarFormatter

    h = np.asarray(history, dtype=float)
    it = np.arange(1, len(h) + 1)
    gap = np.abs(h[-1] - h[:-1]) if len(h) > 1 else np.zeros(0)
    tail = h[min(2, len(h) - 1):]
    zoom = (len(h) > 3 and np.all(np.isfinite(h)) and np.any(gap > 0)
            and np.ptp(tail) < 0.1 * np.ptp(h))
    fig = _figure(9.6 if zoom else 6.4, 3.6)
    ax = fig.add_subplot(1, 2, 1) if zoom else fig.add_subplot()
    ax.plot(it, h, marker="o" if len(h) <= 40 else None, markersize=3, color="#1f77b4")
    ax.set_xlabel("iteration")
    ax.set_ylabel(objective)
    ax.set_title(f"Training objective: {objective}")
    ax.grid(True, alpha=0.3)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(0.5, len(h) + 0.5)
    plain = ScalarFormatter(useOffset=False)
    plain.set_scientific(False)
    ax.yaxis.set_major_formatter(plain)
    if n_observations:
        sec = ax.secondary_yaxis("right", functions=(lambda y: y / n_observations,
                                                     lambda y: y * n_observations))
        sec.set_ylabel("per observation")
        per = ScalarFormatter(useOffset=False)
        per.set_scientific(False)
        sec.yaxis.set_major_formatter(per)
    if zoom:
        ax2 = fig.add_subplot(1, 2, 2)
        keep = gap > 0
        ax2.semilogy(it[:-1][keep], gap[keep], marker="o" if len(h) <= 40 else None,
                     markersize=3, color="#1f77b4")
        ax2.set_xlabel("iteration")
        ax2.set_ylabel(f"final {objective} minus this one")
        ax2.set_title("Distance to the final value")
        ax2.grid(True, alpha=0.3, which="both")
        ax2.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax2.set_xlim(0.5, len(h) + 0.5)
    return fig


def plot_loglik(history, path: Path, n_observations: int | None = None,
                objective: str = "log-likelihood") -> Path:
    """Write :func:`loglik_figure` as a PNG."""
    return _save(loglik_figure(history, n_observations, objective), path)


def _state_ticks(ax, K: int, axis: str = "both", labelsize: float | None = None) -> None:
    """Tick every state up to 30 states, every 5th beyond (readable at 45+ states)."""
    step = 1 if K <= 30 else 5
    ticks = list(range(0, K, step))
    if axis in ("x", "both"):
        ax.set_xticks(ticks)
    if axis in ("y", "both"):
        ax.set_yticks(ticks)
    if labelsize is not None:
        ax.tick_params(labelsize=labelsize)


def plot_transmat(transmat, path: Path) -> Path:
    """Heat map of the transition matrix, annotated when small."""
    A = np.asarray(transmat, dtype=float)
    K = A.shape[0]
    size = min(8.0, 2.5 + 0.42 * K)
    fig = _figure(size + 1.0, size)
    ax = fig.add_subplot()
    im = ax.imshow(A, cmap="viridis", vmin=0.0, vmax=max(1e-12, float(A.max())))
    ax.set_xlabel("to state")
    ax.set_ylabel("from state")
    ax.set_title("Transition matrix P(next | current)")
    _state_ticks(ax, K, labelsize=8 if K > 12 else 10)
    if K <= 14:
        cut = 0.6 * A.max()
        for i in range(K):
            for j in range(K):
                ax.text(j, i, f"{A[i, j]:.2f}", ha="center", va="center",
                        fontsize=7 if K > 8 else 9,
                        color="black" if A[i, j] > cut else "white")
    fig.colorbar(im, ax=ax, shrink=0.8)
    return _save(fig, path)


def plot_top_symbols(top: list[list[tuple[str, float]]], path: Path,
                     max_bar_states: int = 16) -> Path:
    """The most probable symbols of every state.

    ``top[k]`` is a list of ``(symbol, probability)`` pairs, most probable first. Up to
    ``max_bar_states`` states: a grid of bar charts, one per state. Beyond: one row per
    state, its symbols as cells shaded by probability (the probability under each), so
    every state stays on one readable chart (45 states: about 12 inches tall).
    """
    K = len(top)
    if K > max_bar_states:
        return _top_symbols_table(top, path)
    ncols = min(4, K)
    nrows = int(np.ceil(K / ncols))
    n_bars = max(len(t) for t in top)
    fig = _figure(3.1 * ncols, 0.24 * n_bars * nrows + 0.75 * nrows + 0.4)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    colors = _state_colors(K)
    for k in range(nrows * ncols):
        ax = axes[k // ncols][k % ncols]
        if k >= K:
            ax.axis("off")
            continue
        words = [w for w, _ in top[k]][::-1]
        probs = [p for _, p in top[k]][::-1]
        ax.barh(range(len(words)), probs, color=colors[k], height=0.75)
        ax.set_yticks(range(len(words)))
        ax.set_yticklabels(words, fontsize=8)
        ax.set_title(f"state {k}", fontsize=10)
        ax.tick_params(axis="x", labelsize=7)
        ax.set_xlim(0, max(probs) * 1.1 if probs and max(probs) > 0 else 1)
    fig.suptitle("Most probable symbols per state")
    return _save(fig, path)


def _top_symbols_table(top: list[list[tuple[str, float]]], path: Path) -> Path:
    """One row per state: its most probable symbols left to right, each cell shaded by
    the symbol's probability (a shared scale) with the word and the probability in it."""
    from matplotlib import colormaps
    from matplotlib.colors import Normalize

    K, n = len(top), max(len(t) for t in top)
    P = np.zeros((K, n))
    for k, row in enumerate(top):
        P[k, :len(row)] = [p for _, p in row]
    fig = _figure(1.05 * n + 1.6, 0.26 * K + 1.0)
    ax = fig.add_subplot()
    norm = Normalize(0.0, max(float(P.max()), 1e-12))
    cmap = colormaps["Blues"]
    ax.imshow(P, cmap=cmap, norm=norm, aspect="auto")
    for k, row in enumerate(top):
        for j, (w, p) in enumerate(row):
            dark = norm(p) > 0.6
            label = w if len(w) <= 12 else w[:11] + "\u2026"
            ax.text(j, k, f"{label} {p:.2f}", ha="center", va="center", fontsize=6.5,
                    color="white" if dark else "black")
    ax.set_yticks(range(K))
    ax.set_yticklabels([f"state {k}" for k in range(K)], fontsize=7)
    ax.set_xticks(range(n))
    ax.set_xticklabels([f"#{j + 1}" for j in range(n)], fontsize=7)
    ax.xaxis.tick_top()
    colors = _state_colors(K)
    for k, label in enumerate(ax.get_yticklabels()):
        label.set_bbox({"facecolor": colors[k], "alpha": 0.35, "pad": 1, "linewidth": 0})
    ax.set_title(f"Most probable symbols of each of the {K} states (shade: probability)",
                 fontsize=10)
    return _save(fig, path)


def plot_state_matrix(values, path: Path, title: str, feature_label: str = "feature",
                      cmap: str = "coolwarm", center: bool = True) -> Path:
    """Heat map of a per-state parameter (rows: states; columns: features)."""
    M = np.atleast_2d(np.asarray(values, dtype=float))
    K, D = M.shape
    fig = _figure(min(10.0, 2.8 + 0.6 * D), min(8.0, 1.6 + 0.4 * K))
    ax = fig.add_subplot()
    if center:
        lim = float(np.max(np.abs(M))) or 1.0
        im = ax.imshow(M, cmap=cmap, vmin=-lim, vmax=lim, aspect="auto")
    else:
        im = ax.imshow(M, cmap=cmap, aspect="auto")
    ax.set_xlabel(feature_label)
    ax.set_ylabel("state")
    ax.set_title(title)
    _state_ticks(ax, K, "y")
    if D <= 30:
        ax.set_xticks(range(D))
    if K * D <= 150:
        norm = im.norm
        for i in range(K):
            for j in range(D):
                # white text on the saturated ends of the colour map, black in between
                v = float(norm(M[i, j]))
                dark = (abs(v - 0.5) > 0.3) if center else (v < 0.55)
                ax.text(j, i, f"{M[i, j]:.3g}", ha="center", va="center", fontsize=8,
                        color="white" if dark else "black")
    fig.colorbar(im, ax=ax, shrink=0.8)
    return _save(fig, path)


def plot_occupancy(occupancy, path: Path) -> Path:
    """Bar chart of the expected share of time spent in each state."""
    occ = np.asarray(occupancy, dtype=float)
    K = len(occ)
    fig = _figure(min(10.0, 2.5 + 0.35 * K), 3.0)
    ax = fig.add_subplot()
    ax.bar(range(K), occ, color=_state_colors(K))
    ax.set_xlabel("state")
    ax.set_ylabel("share of observations")
    ax.set_title("State occupancy (posterior)")
    _state_ticks(ax, K, "x")
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, path)


def plot_states_over_time(series: list[dict], path: Path, n_states: int,
                          feature_names: list[str] | None = None,
                          index_name: str | None = None, max_features: int = 4) -> Path:
    """Write :func:`states_figure` as a PNG."""
    return _save(states_figure(series, n_states, feature_names, index_name, max_features),
                 path)


def states_figure(series: list[dict], n_states: int, feature_names: list[str] | None = None,
                  index_name: str | None = None, max_features: int = 4):
    """The series coloured by decoded state, with posterior bands, one block per sequence.

    Each entry of ``series`` is a sequence: ``x`` (the index: dates, numbers, or None for
    the step), ``X`` (T, D) observations (NaN: missing), ``states`` (T,) the Viterbi path,
    ``posterior`` (T, K) the state posteriors, ``mean`` and ``sd`` (T, D) the posterior
    predictive mean and standard deviation (the states' means and variances averaged
    under the posterior). Per sequence: one panel per feature (the first ``max_features``)
    with the series coloured by its Viterbi state and the band mean ± 2 sd, then the
    posteriors stacked (the share of each state at each step).
    """
    from matplotlib import dates as mdates
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Patch

    colors = _state_colors(n_states)
    D = series[0]["X"].shape[1]
    shown = min(D, max_features)
    names = list(feature_names) if feature_names else [f"feature {j}" for j in range(D)]
    rows_per = shown + 1
    ratios = ([2.2] * shown + [1.0]) * len(series)
    fig = _figure(11.0, 1.9 * shown * len(series) + 1.1 * len(series) + 0.8)
    axes = fig.subplots(rows_per * len(series), 1, squeeze=False,
                        gridspec_kw={"height_ratios": ratios})[:, 0]
    for s_i, seq in enumerate(series):
        x = seq["x"]
        T = len(seq["states"])
        is_date = x is not None and np.asarray(x).dtype.kind == "M"
        if x is None:
            xs = np.arange(T, dtype=float)
        elif is_date:
            xs = mdates.date2num(np.asarray(x))
        else:
            xs = np.asarray(x, dtype=float)
        z = np.asarray(seq["states"])
        block = axes[s_i * rows_per:(s_i + 1) * rows_per]
        for j in range(shown):
            ax = block[j]
            y = seq["X"][:, j]
            m, sd = seq["mean"][:, j], seq["sd"][:, j]
            ax.fill_between(xs, m - 2 * sd, m + 2 * sd, color="0.55", alpha=0.25, lw=0,
                            label="posterior mean ± 2 sd")
            ax.plot(xs, m, color="0.35", lw=0.8, label="posterior mean")
            pts = np.column_stack([xs, y])
            segs = np.stack([pts[:-1], pts[1:]], axis=1)
            lc = LineCollection(segs, colors=[colors[int(k)] for k in z[:-1]], linewidths=1.4)
            ax.add_collection(lc)
            if T <= 400:
                ax.scatter(xs, y, c=[colors[int(k)] for k in z], s=9, zorder=3, lw=0)
            finite = y[np.isfinite(y)]
            lo = np.nanmin(np.concatenate([finite, m - 2 * sd])) if finite.size else -1
            hi = np.nanmax(np.concatenate([finite, m + 2 * sd])) if finite.size else 1
            pad = 0.05 * (hi - lo or 1.0)
            ax.set_ylim(lo - pad, hi + pad)
            ax.set_xlim(xs[0], xs[-1] if T > 1 else xs[0] + 1)
            ax.set_ylabel(names[j], fontsize=9)
            ax.grid(True, alpha=0.25)
            ax.tick_params(labelbottom=False, labelsize=8)
            if j == 0:
                title = f"sequence {seq['number']}" if len(series) > 1 or seq["number"] else ""
                ax.set_title((title + ": " if title else "") + "series coloured by its "
                             "Viterbi state; band: posterior predictive mean ± 2 sd",
                             fontsize=9, loc="left")
        ax = block[shown]
        ax.stackplot(xs, np.asarray(seq["posterior"]).T, colors=colors, lw=0)
        ax.set_ylim(0, 1)
        ax.set_xlim(xs[0], xs[-1] if T > 1 else xs[0] + 1)
        ax.set_ylabel("P(state)", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.set_xlabel(index_name if x is not None and index_name else "step", fontsize=9)
        if is_date:
            for a in block:
                a.xaxis_date()
    band = axes[0].get_legend_handles_labels()[0]  # above the panels: no data hidden
    states = ([Patch(color=colors[k], label=f"state {k}") for k in range(n_states)]
              if n_states <= 20 else [])
    fig.legend(handles=band + states, loc="outside upper center",
               ncol=min(len(band) + len(states), 8), fontsize=8)
    if D > shown:
        fig.suptitle(f"the first {shown} of {D} features", fontsize=8, x=0.99, ha="right")
    return fig


def _state_colors(K: int) -> list:
    from matplotlib import colormaps

    if K > 20:  # tab20 would repeat: distinct hues along a perceptual rainbow instead
        cmap = colormaps["turbo"]
        return [cmap(0.05 + 0.9 * k / (K - 1)) for k in range(K)]
    cmap = colormaps["tab10" if K <= 10 else "tab20"]
    return [cmap(k % cmap.N) for k in range(K)]


def state_colors_hex(K: int) -> list[str]:
    """One light background colour per state, as ``#rrggbb`` (for HTML)."""
    out = []
    for r, g, b, _ in _state_colors(K):
        # Blend with white so black text stays readable.
        r, g, b = (0.55 * r + 0.45, 0.55 * g + 0.45, 0.55 * b + 0.45)
        out.append(f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}")
    return out

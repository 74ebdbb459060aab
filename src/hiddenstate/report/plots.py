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
    if K <= 30:
        ax.set_xticks(range(K))
        ax.set_yticks(range(K))
        ax.tick_params(labelsize=8 if K > 12 else 10)
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
                     max_states: int = 16) -> Path:
    """Grid of bar charts: the most probable symbols of each state.

    ``top[k]`` is a list of ``(symbol, probability)`` pairs, most probable first.
    """
    K = min(len(top), max_states)
    ncols = min(4, K)
    nrows = int(np.ceil(K / ncols))
    n_bars = max(len(t) for t in top[:K])
    fig = _figure(3.1 * ncols, 0.24 * n_bars * nrows + 0.75 * nrows + 0.4)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    colors = _state_colors(len(top))
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
    title = "Most probable symbols per state"
    if len(top) > K:
        title += f" (first {K} of {len(top)} states)"
    fig.suptitle(title)
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
    if K <= 30:
        ax.set_yticks(range(K))
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
    if K <= 30:
        ax.set_xticks(range(K))
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, path)


def _state_colors(K: int) -> list:
    from matplotlib import colormaps

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

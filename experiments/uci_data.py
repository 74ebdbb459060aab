"""Readers for the ten UCI classification data sets in ``../shared/data/uci`` (see its
README): attributes as strings (``'?'`` missing), the class label, and which columns are
continuous (binned per training fold by :func:`quantile_bins`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: name -> (folder, file, class column, dropped columns (identifiers), continuous columns)
#: column indices refer to the raw comma-separated fields
SETS = {
    "nursery": ("nursery", "nursery.data", -1, (), ()),
    "mushroom": ("mushroom", "agaricus-lepiota.data", 0, (), ()),
    "kr-vs-kp": ("kr-vs-kp", "kr-vs-kp.data", -1, (), ()),
    "car": ("car", "car.data", -1, (), ()),
    "votes": ("votes", "house-votes-84.data", 0, (), ()),
    "dermatology": ("dermatology", "dermatology.data", -1, (), (33,)),  # age
    "glass": ("glass", "glass.data", -1, (0,), tuple(range(1, 10))),  # 0: sample id
    "iris": ("iris", "iris.data", -1, (), (0, 1, 2, 3)),
    "breast-cancer": ("breast-cancer", "breast-cancer.data", 0, (), ()),
    "zoo": ("zoo", "zoo.data", -1, (0,), ()),  # 0: animal name (unique per row)
}


@dataclass
class Dataset:
    name: str
    X: np.ndarray            # (n, d) object: strings, '?' missing; continuous as floats/NaN
    y: np.ndarray            # (n,) str
    continuous: list[int]    # columns of X to bin per fold


def load(name: str, root: Path) -> Dataset:
    folder, file, target, drop, cont = SETS[name]
    path = root / folder / file
    rows = [line.strip().split(",") for line in path.read_text().splitlines() if line.strip()]
    width = len(rows[0])
    target %= width
    keep = [c for c in range(width) if c != target and c not in drop]
    X = np.array([[r[c] for c in keep] for r in rows], dtype=object)
    continuous = [keep.index(c) for c in cont]
    for j in continuous:
        X[:, j] = [np.nan if v == "?" else float(v) for v in X[:, j]]
    return Dataset(name, X, np.array([r[target] for r in rows]), continuous)


def quantile_bins(train: np.ndarray, test: np.ndarray, columns: list[int],
                  n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Equal-frequency bins of the continuous ``columns``, edges from the training rows only
    (missing stays missing); other columns unchanged."""
    train, test = train.copy(), test.copy()
    for j in columns:
        x = train[:, j].astype(np.float64)
        edges = np.unique(np.nanquantile(x, np.linspace(0, 1, n_bins + 1)[1:-1]))
        for arr in (train, test):
            v = arr[:, j].astype(np.float64)
            binned = np.searchsorted(edges, v, side="right").astype(object)
            binned[np.isnan(v)] = "?"
            arr[:, j] = binned
    return train, test


def _entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log2(p)).sum())


def mdl_cuts(x: np.ndarray, y: np.ndarray) -> list[float]:
    """Cut points of Fayyad & Irani's (1993) recursive minimum-description-length
    discretisation (the supervised one Weka applies before naive Bayes): split at the
    boundary of least class entropy while the information gain pays for the split's MDL
    cost."""
    ok = ~np.isnan(x)
    x, y = x[ok], y[ok]
    order = np.argsort(x, kind="stable")
    x, y = x[order], np.unique(y, return_inverse=True)[1][order]
    n_classes = int(y.max()) + 1 if len(y) else 0
    cuts: list[float] = []

    def split(lo: int, hi: int) -> None:
        xs, ys = x[lo:hi], y[lo:hi]
        n = hi - lo
        if n < 2:
            return
        onehot = np.zeros((n, n_classes))
        onehot[np.arange(n), ys] = 1
        left = np.cumsum(onehot, axis=0)[:-1]
        total = left[-1] + onehot[-1]
        right = total - left
        valid = np.flatnonzero(xs[1:] != xs[:-1])  # cut between distinct values only
        if not len(valid):
            return
        sizes = np.arange(1, n)

        def ent(c):
            with np.errstate(divide="ignore", invalid="ignore"):
                p = c / c.sum(axis=1, keepdims=True)
                return -np.nansum(np.where(p > 0, p * np.log2(p), 0.0), axis=1)

        e = (sizes * ent(left) + (n - sizes) * ent(right)) / n
        b = valid[np.argmin(e[valid])]
        e_s = _entropy(total)
        gain = e_s - e[b]
        k = np.count_nonzero(total)
        k1, k2 = np.count_nonzero(left[b]), np.count_nonzero(right[b])
        delta = np.log2(3**k - 2) - (k * e_s - k1 * _entropy(left[b]) - k2 * _entropy(right[b]))
        if gain <= (np.log2(n - 1) + delta) / n:
            return
        cuts.append(float((xs[b] + xs[b + 1]) / 2))
        split(lo, lo + b + 1)
        split(lo + b + 1, hi)

    split(0, len(x))
    return sorted(cuts)


def mdl_bins(train: np.ndarray, test: np.ndarray, y_train: np.ndarray,
             columns: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Supervised (Fayyad-Irani MDL) bins of the continuous ``columns``, cut points from the
    training rows only; a column with no cut becomes one value (missing stays missing)."""
    train, test = train.copy(), test.copy()
    for j in columns:
        edges = np.asarray(mdl_cuts(train[:, j].astype(np.float64), y_train))
        for arr in (train, test):
            v = arr[:, j].astype(np.float64)
            binned = np.searchsorted(edges, v, side="right").astype(object)
            binned[np.isnan(v)] = "?"
            arr[:, j] = binned
    return train, test

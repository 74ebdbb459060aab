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

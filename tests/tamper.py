"""Tampering with saved bundles the way a determined editor would: change ``model.json``
and/or the arrays, then recompute the manifest's checksums and the seal of ``model.json``
(format version 3) so that the file passes the integrity checks and the content checks
behind them are what a test exercises."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from hiddenstate._bundle import META_MEMBER, meta_digest


def arrays_path(path: Path) -> Path:
    """The bundle's archive, found on disk (``model.json`` itself may be the tampered
    part)."""
    found = sorted(path.glob("arrays.*.npz")) or [path / "arrays.npz"]
    assert len(found) == 1, found
    return found[0]


def read(path) -> tuple[dict, dict[str, np.ndarray]]:
    """``(model.json as a dict, the arrays without the seal)`` of the bundle at ``path``."""
    path = Path(path)
    return json.loads((path / "model.json").read_text()), read_arrays(path)


def read_arrays(path) -> dict[str, np.ndarray]:
    """The arrays of the bundle at ``path``, without the seal."""
    with np.load(arrays_path(Path(path))) as f:
        return {k: f[k] for k in f.files if k != META_MEMBER}


def write(path, doc: dict, arrays: dict | None = None, manifest: bool = True) -> None:
    """Write ``doc`` (and ``arrays``, default: the bundle's own) back to the bundle at
    ``path``, with a manifest matching the arrays (unless ``manifest=False``: ``doc``'s own
    manifest is kept) and a seal matching ``doc`` when the version is 3 or more."""
    path = Path(path)
    npz = arrays_path(path)
    if arrays is None:
        arrays = read_arrays(path)
    if manifest:
        doc["arrays"] = {
            k: {"shape": list(v.shape), "dtype": v.dtype.str,
                "sha256": hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()}
            for k, v in arrays.items()}
    sealed = dict(arrays)
    if isinstance(doc.get("version"), int) and doc["version"] >= 3:
        sealed[META_MEMBER] = meta_digest(doc)
    np.savez(npz, **sealed)
    (path / "model.json").write_text(json.dumps(doc))


def edit_json(path, edit) -> None:
    """Apply ``edit(doc)`` to ``model.json`` and reseal it (the arrays are kept)."""
    doc, arrays = read(path)
    edit(doc)
    write(path, doc, arrays, manifest=False)

"""Safe persistence: a model is a directory with ``model.json`` (format, version, class,
hyper-parameters, array manifest with SHA-256 digests) and ``arrays.npz`` (loaded with
``allow_pickle=False``). Loading never runs code from the file: the class comes from a fixed
registry, hyper-parameters are checked like constructor arguments, arrays are checked
against the manifest and then validated like user-set parameters.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import zipfile
from pathlib import Path

import numpy as np

from .errors import HiddenStateError, ModelFileError

FORMAT = "hiddenstate-model"
VERSION = 1
_JSON = "model.json"
#: array dtypes a saved model may hold (little-endian float64, int64, bool)
_DTYPES = ("<f8", "<i8", "|b1")
_NPZ = "arrays.npz"


def _registry() -> dict:
    from .models import HMM, PROPS, TreeNet

    return {"HMM": HMM, "PROPS": PROPS, "TreeNet": TreeNet}


def _digest(arr: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()


def to_json(value):
    """JSON form of a hyper-parameter: numbers (inf/nan tagged), strings, None, lists of
    numbers, arrays (tagged with their dtype) and dicts of these."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return {"float": repr(v)} if not math.isfinite(v) else v
    if isinstance(value, (str, int)) or value is None:
        return value
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return {"array": [to_json(v) for v in value.ravel().tolist()],
                "shape": list(value.shape), "dtype": value.dtype.str}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: to_json(v) for k, v in value.items()}}
    raise ModelFileError(
        f"cannot save hyper-parameter value {value!r} of type {type(value).__name__}; "
        "use numbers, strings, None, numeric arrays or dicts of these")


def from_json(value):
    if isinstance(value, list):
        return [from_json(v) for v in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"float"}:
        return float(value["float"])
    if set(value) == {"dict"}:
        return {k: from_json(v) for k, v in dict(value["dict"]).items()}
    if set(value) == {"array", "shape", "dtype"}:
        dtype = np.dtype(str(value["dtype"]))
        if dtype.kind not in "biuf":
            raise ModelFileError(f"array hyper-parameter of dtype {dtype} is not allowed")
        return np.array([from_json(v) for v in value["array"]], dtype=dtype).reshape(
            [int(n) for n in value["shape"]])
    raise ModelFileError(f"unrecognised JSON value {value!r}")


def write_bundle(path, fmt: str, meta: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write ``meta`` (JSON-able, see :func:`to_json`) and ``arrays`` to the directory
    ``path``: ``model.json`` gets ``format``, ``version``, ``meta`` and a manifest of the
    arrays (shape, dtype, SHA-256); both files are written aside and then swapped in, so a
    crash never leaves half a file."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    bad = [k for k, v in arrays.items() if v.dtype.str not in _DTYPES]
    if bad:
        raise ModelFileError(f"cannot save array {bad[0]} of dtype {arrays[bad[0]].dtype}")
    doc = {
        "format": fmt,
        "version": VERSION,
        **meta,
        "arrays": {k: {"shape": list(v.shape), "dtype": v.dtype.str, "sha256": _digest(v)}
                   for k, v in arrays.items()},
    }
    tmp_npz = path / (_NPZ + ".tmp")
    with open(tmp_npz, "wb") as fh:
        np.savez(fh, **arrays)
    tmp_json = path / (_JSON + ".tmp")
    tmp_json.write_text(json.dumps(doc, indent=1))
    os.replace(tmp_npz, path / _NPZ)
    os.replace(tmp_json, path / _JSON)


def read_bundle(path, fmt: str, what: str = "model") -> tuple[dict, dict[str, np.ndarray]]:
    """Read what :func:`write_bundle` wrote: ``(meta, arrays)``, the arrays checked against
    the manifest (names, shapes, dtypes, SHA-256). ``meta`` is the raw JSON (decode values
    with :func:`from_json`)."""
    path = Path(path)
    if not (path / _JSON).is_file() or not (path / _NPZ).is_file():
        raise ModelFileError(
            f"path: {path} is not a saved {what} (expected {_JSON} and {_NPZ} inside it)")
    try:
        meta = json.loads((path / _JSON).read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"{path / _JSON}: not valid JSON ({exc})") from exc
    if not isinstance(meta, dict) or meta.get("format") != fmt:
        raise ModelFileError(f"{path / _JSON}: not a hiddenstate {what} file")
    if meta.get("version") != VERSION:
        raise ModelFileError(
            f"{path / _JSON}: format version {meta.get('version')!r} is not supported by this "
            f"hiddenstate (reads version {VERSION}); upgrade hiddenstate")
    manifest = meta.get("arrays")
    if not isinstance(manifest, dict):
        raise ModelFileError(f"{path / _JSON}: malformed (no array manifest)")
    try:
        with np.load(path / _NPZ, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ModelFileError(f"{path / _NPZ}: unreadable or not a plain array archive ({exc})") \
            from exc
    if set(arrays) != set(manifest):
        raise ModelFileError(
            f"{path}: arrays {sorted(arrays)} do not match the manifest {sorted(manifest)}")
    for name, arr in arrays.items():
        entry = manifest[name]
        if not isinstance(entry, dict) or arr.dtype.str not in _DTYPES \
                or arr.dtype.str != entry.get("dtype") or list(arr.shape) != entry.get("shape") \
                or _digest(arr) != entry.get("sha256"):
            raise ModelFileError(
                f"{path}: array {name} does not match its manifest (shape, dtype or checksum); "
                "the file was modified or corrupted")
    return meta, arrays


def save(model, path) -> None:
    """Write ``model`` to the directory ``path`` (created if needed). A model with
    ``saved_params(path)`` (PROPS: its sources go to sub-directories) chooses the
    hyper-parameters written; ``from_saved_params(params, path)`` reads them back."""
    Path(path).mkdir(parents=True, exist_ok=True)
    params = (model.saved_params(Path(path)) if hasattr(model, "saved_params")
              else model.get_params(deep=False))
    if not isinstance(params.get("random_state"), (int, type(None))):
        params["random_state"] = None
    meta = {
        "class": type(model).__name__,
        "params": {k: to_json(v) for k, v in params.items()},
        "n_features_": int(model.n_features_),
        "monitor": {"history": [to_json(v) for v in model.monitor_.history],
                    "converged": bool(model.monitor_.converged)},
        "scalars": {k: to_json(v) for k, v in model.learned_scalars().items()},
    }
    write_bundle(path, FORMAT, meta, model.learned_arrays())


def load(path):
    """Load a model saved by :func:`save` (or ``model.save``)."""
    from .learn import ConvergenceMonitor

    path = Path(path)
    meta, arrays = read_bundle(path, FORMAT)
    cls = _registry().get(meta.get("class"))
    if cls is None:
        raise ModelFileError(f"{path / _JSON}: unknown model class {meta.get('class')!r}")
    try:
        params = {k: from_json(v) for k, v in dict(meta["params"]).items()}
        model = (cls.from_saved_params(params, path) if hasattr(cls, "from_saved_params")
                 else cls(**params))
        model._check_hyper()
        n_features = int(meta["n_features_"])
        history = [float(from_json(v)) for v in meta["monitor"]["history"]]
        converged = bool(meta["monitor"]["converged"])
        scalars = {k: from_json(v) for k, v in dict(meta.get("scalars", {})).items()}
    except HiddenStateError as exc:
        raise ModelFileError(f"{path / _JSON}: invalid hyper-parameters ({exc})") from exc
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{path / _JSON}: malformed ({exc!r})") from exc
    model.n_features_ = n_features
    model.monitor_ = ConvergenceMonitor(model.tol, model.n_iter, False, history, converged)
    try:
        model.set_learned(arrays, scalars)
        model._check_learned()
    except HiddenStateError as exc:
        raise ModelFileError(f"{path}: invalid parameters ({exc})") from exc
    return model

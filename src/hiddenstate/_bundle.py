"""The saved-file format: safe, crash-safe bundles of JSON and arrays.

This module knows the format and nothing of the estimators (it imports only
:mod:`hiddenstate.errors`): each estimator's own module writes its bundle with
:func:`write_bundle` and reads it back with :func:`read_bundle`, and
:func:`hiddenstate.load` (:mod:`hiddenstate.persist`) finds, from ``model.json``'s
``format`` and ``class`` (:func:`peek`), which of them reads a directory.

A saved model (or source) is a directory:

- ``model.json``: format, version, class, hyper-parameters, the name of the array archive
  (``arrays_file``), the sub-bundles (``parts``: a PROPS model's sources) and a manifest
  of the arrays (shape, dtype, SHA-256 of each);
- ``arrays.<token>.npz``: the arrays, uncompressed ``.npy`` members;
- ``<part>.<token>/``: each sub-bundle, itself such a directory.

**Loading never runs code from the file** and never reads more than the files hold: the
class comes from a fixed registry, ``model.json`` is size- and depth-limited, every archive
member is checked against the manifest (stored uncompressed, declared size, ``.npy`` header
dtype and shape) *before* it is read, arrays are read with pickling off and compared with
their SHA-256, hyper-parameters are checked like constructor arguments and arrays like
user-set parameters (a streaming learner's state included). Every failure is a
:class:`~hiddenstate.errors.ModelFileError` naming the file and the entry.

**Saving is atomic.** The new archive and sub-bundles are written under fresh names (the
token is random), flushed to disk (``fsync``, files and directory), and only then is
``model.json`` replaced by an atomic rename: that rename is the single switch from the old
version to the new one. The old version's files are removed after it, and leftovers of an
interrupted save (names with a token that ``model.json`` does not reference) at the next
save. A crash, an exception or a full disk at any moment therefore leaves the previous
checkpoint or the new one, never a mix of the two and never neither. One writer at a time
per directory; other files in the directory (``cli.json``, ``vocabulary.json``...) are left
alone.

**``model.json`` is sealed too** (format version 3): the archive holds, besides the arrays
of the manifest, the SHA-256 of ``model.json``'s content (:func:`meta_digest`, member
``__meta_sha256__``), so a hand edit of the hyper-parameters, the rules of a grammar or the
outcomes of a switch is refused like an edit of an array, not read as another model.

Format versions 1 (``arrays.npz`` and, for PROPS, ``source-<k>/``) and 2 (no seal) are
still read.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from .errors import HiddenStateError, ModelFileError

VERSION = 3
#: format versions this hiddenstate reads
READS = (1, 2, 3)
#: the archive member that seals ``model.json`` (format version 3)
META_MEMBER = "__meta_sha256__"
_JSON = "model.json"
#: array dtypes a saved model may hold (little-endian float64, int64, bool)
_DTYPES = ("<f8", "<i8", "|b1")
_NPZ_V1 = "arrays.npz"
#: largest ``model.json`` read (hyper-parameters, vocabulary, manifest)
MAX_JSON_BYTES = 64 << 20
#: deepest nesting of lists/dicts accepted in ``model.json``
MAX_JSON_DEPTH = 32
#: largest ``.npy`` header of an archive member
_MAX_NPY_HEADER = 10000
_TOKEN = r"[0-9a-f]{16}"
_PART_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
_ARRAYS_FILE = re.compile(rf"arrays\.{_TOKEN}\.npz")
#: names a save owns and may delete once model.json no longer references them
_LEFTOVER = re.compile(
    rf"arrays\.{_TOKEN}\.npz|{re.escape(_JSON)}\.{_TOKEN}\.tmp|[A-Za-z][A-Za-z0-9_-]*\.{_TOKEN}"
    r"|arrays\.npz\.tmp|model\.json\.tmp")
_V1_PART = re.compile(r"source-[0-9]{1,6}")


def meta_digest(doc: dict) -> np.ndarray:
    """The seal of a ``model.json`` document: the SHA-256 of its canonical JSON (sorted keys,
    no spaces), as 4 int64 words (the archive holds float64, int64 and bool only)."""
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return np.frombuffer(hashlib.sha256(text.encode("utf-8")).digest(), dtype="<i8").copy()


def _digest(arr: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()


# -- JSON values -----------------------------------------------------------------------------------
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


def is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def from_json(value):
    """Inverse of :func:`to_json`; a malformed value raises :class:`ModelFileError`."""
    if isinstance(value, list):
        return [from_json(v) for v in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"float"} and isinstance(value["float"], str):
        try:
            return float(value["float"])
        except ValueError:
            raise ModelFileError(f"unrecognised number {value['float']!r}") from None
    if set(value) == {"dict"} and isinstance(value["dict"], dict):
        return {k: from_json(v) for k, v in value["dict"].items()}
    if set(value) == {"array", "shape", "dtype"}:
        return _array_from_json(value)
    raise ModelFileError(f"unrecognised JSON value {short_repr(value)}")


def _array_from_json(value: dict) -> np.ndarray:
    items, shape, dtype = value["array"], value["shape"], value["dtype"]
    if not isinstance(items, list) or not isinstance(shape, list) \
            or not all(is_int(n) and n >= 0 for n in shape) or not isinstance(dtype, str):
        raise ModelFileError(f"malformed array hyper-parameter {short_repr(value)}")
    if math.prod(shape) != len(items):
        raise ModelFileError(
            f"array hyper-parameter of shape {shape} holds {len(items)} values")
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise ModelFileError(f"array hyper-parameter of dtype {dtype!r} is not allowed") from None
    if dt.kind not in "biuf" or dt.itemsize > 8:
        raise ModelFileError(f"array hyper-parameter of dtype {dt} is not allowed")
    values = [from_json(v) for v in items]
    if not all(isinstance(v, (int, float)) for v in values):
        raise ModelFileError("array hyper-parameter with non-numeric entries")
    try:
        return np.array(values, dtype=dt).reshape(shape)
    except (OverflowError, ValueError) as exc:
        raise ModelFileError(f"array hyper-parameter does not fit dtype {dt} ({exc})") from None


def short_repr(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


@contextmanager
def reading(where, invalid: str = "invalid content") -> Iterator[None]:
    """Translate what can go wrong while interpreting a loaded file's content into a
    :class:`ModelFileError` naming ``where``: a ``HiddenStateError`` raised by a constructor
    or check becomes "``where``: ``invalid`` (...)", a missing key or a value of the wrong
    type "``where``: malformed (...)"; a ``ModelFileError`` passes unchanged."""
    try:
        yield
    except ModelFileError:
        raise
    except HiddenStateError as exc:
        raise ModelFileError(f"{where}: {invalid} ({exc})") from exc
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise ModelFileError(f"{where}: malformed ({short_repr(exc)})") from exc


def _depth(doc) -> int:
    """Nesting depth of lists/dicts (iterative: a deep document cannot exhaust the stack)."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, d)
        if deepest > MAX_JSON_DEPTH:
            return deepest
        stack.extend((c, d + 1) for c in children)
    return deepest


def read_json(path: Path, what: str):
    """``path`` parsed as JSON, at most :data:`MAX_JSON_BYTES` and :data:`MAX_JSON_DEPTH`
    deep; anything else raises :class:`ModelFileError`."""
    try:
        with open(path, "rb") as fh:  # (a read buffer of the file's size, at most the bound)
            raw = fh.read(min(os.fstat(fh.fileno()).st_size, MAX_JSON_BYTES) + 1)
    except OSError as exc:
        raise ModelFileError(f"{path}: cannot read the saved {what} ({exc})") from exc
    if len(raw) > MAX_JSON_BYTES:
        raise ModelFileError(f"{path}: larger than {MAX_JSON_BYTES >> 20} MiB; not a saved "
                             f"{what} (or a tampered one)")
    try:
        doc = json.loads(raw.decode("utf-8-sig"))  # an editor's byte-order mark is harmless
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ModelFileError(f"{path}: not valid UTF-8 JSON ({short_repr(exc)})") from None
    if _depth(doc) > MAX_JSON_DEPTH:
        raise ModelFileError(f"{path}: nested more than {MAX_JSON_DEPTH} levels deep")
    return doc


# -- writing ---------------------------------------------------------------------------------------
def _fsync_dir(path: Path) -> None:
    """Make the directory's entries (creations, renames) durable (POSIX; elsewhere a no-op)."""
    if os.name != "posix":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:  # file systems that cannot sync a directory
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def _write_new(path: Path, write: Callable) -> None:
    """Create ``path`` (it must not exist), fill it with ``write(fh)`` and fsync it."""
    with open(path, "xb") as fh:
        write(fh)
        fh.flush()
        os.fsync(fh.fileno())


def _remove(path: Path) -> None:
    """Best-effort removal of a file or a directory tree."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()
    except OSError:
        pass


def _referenced(path: Path) -> set[str]:
    """Entries of ``path`` that its current ``model.json`` uses (empty if none or unreadable):
    removed once a new version is in place."""
    try:
        doc = read_json(path / _JSON, "model")
    except ModelFileError:
        return set()
    if not isinstance(doc, dict):
        return set()
    if doc.get("version") == 1:
        names = {_NPZ_V1}
        params = doc.get("params")
        sources = params.get("sources") if isinstance(params, dict) else None
        if isinstance(sources, list):  # version 1 PROPS: sources in source-<k>/
            names |= {s for s in sources if isinstance(s, str) and _V1_PART.fullmatch(s)}
        return names
    names = set()
    if isinstance(doc.get("arrays_file"), str) and _ARRAYS_FILE.fullmatch(doc["arrays_file"]):
        names.add(doc["arrays_file"])
    if isinstance(doc.get("parts"), dict):
        names |= {d for d in doc["parts"].values()
                  if isinstance(d, str) and _LEFTOVER.fullmatch(d)}
    return names


def _cleanup(path: Path, keep: set[str], previous: set[str]) -> None:
    """Remove the previous version's files and leftovers of interrupted saves (best effort:
    what cannot be removed now is removed by the next save)."""
    try:
        entries = os.listdir(path)
    except OSError:
        return
    for name in entries:
        if name not in keep and (name in previous or _LEFTOVER.fullmatch(name)):
            _remove(path / name)


def write_bundle(path, fmt: str, meta: dict, arrays: dict[str, np.ndarray],
                 parts: dict[str, Callable[[Path], None]] | None = None) -> None:
    """Write ``meta`` (JSON-able, see :func:`to_json`), ``arrays`` and the sub-bundles
    ``parts`` (name -> ``writer(directory)``, e.g. a source's ``save``) to the directory
    ``path``, atomically (see the module docstring): afterwards ``path`` holds either its
    previous bundle, untouched, or the new one complete."""
    path = Path(path)
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    if META_MEMBER in arrays:
        raise ModelFileError(f"cannot save an array named {META_MEMBER} (reserved)")
    bad = [k for k, v in arrays.items() if v.dtype.str not in _DTYPES]
    if bad:
        raise ModelFileError(f"cannot save array {bad[0]} of dtype {arrays[bad[0]].dtype}")
    parts = dict(parts or {})
    for name in parts:
        if not _PART_NAME.fullmatch(name):
            raise ModelFileError(f"cannot save a part named {name!r}")
    token = secrets.token_hex(8)
    npz_name = f"arrays.{token}.npz"
    part_dirs = {name: f"{name}.{token}" for name in parts}
    doc = {
        "format": fmt,
        "version": VERSION,
        **meta,
        "arrays_file": npz_name,
        "parts": part_dirs,
        "arrays": {k: {"shape": list(v.shape), "dtype": v.dtype.str, "sha256": _digest(v)}
                   for k, v in arrays.items()},
    }
    text = json.dumps(doc, indent=1).encode("utf-8")
    new_dir = not path.is_dir()
    path.mkdir(parents=True, exist_ok=True)
    if new_dir:
        _fsync_dir(path.parent)
    previous = _referenced(path)
    tmp = path / f"{_JSON}.{token}.tmp"
    created = [path / npz_name, *(path / d for d in part_dirs.values()), tmp]
    committed = False
    try:
        sealed = {**arrays, META_MEMBER: meta_digest(doc)}
        _write_new(path / npz_name, lambda fh: np.savez(fh, **sealed))
        for name, writer in parts.items():
            writer(path / part_dirs[name])
        _fsync_dir(path)  # the new files' entries are on disk before the switch
        _write_new(tmp, lambda fh: fh.write(text))
        os.replace(tmp, path / _JSON)  # the switch
        committed = True
        _fsync_dir(path)
    except BaseException:
        if not committed:
            for p in created:
                _remove(p)
        raise
    _cleanup(path, {npz_name, *part_dirs.values()}, previous)


# -- reading ---------------------------------------------------------------------------------------
def read_meta(path, fmt: str, what: str = "model") -> dict:
    """``model.json`` of a bundle, its format and version checked."""
    path = Path(path)
    if not (path / _JSON).is_file():
        raise ModelFileError(
            f"path: {path} is not a saved {what} (expected {_JSON} inside it)")
    meta = read_json(path / _JSON, what)
    if not isinstance(meta, dict) or meta.get("format") != fmt:
        raise ModelFileError(f"{path / _JSON}: not a hiddenstate {what} file")
    version = meta.get("version")
    if not is_int(version) or version not in READS:
        raise ModelFileError(
            f"{path / _JSON}: format version {version!r} is not supported by this "
            f"hiddenstate (reads versions {', '.join(map(str, READS))}); upgrade hiddenstate")
    return meta


def _arrays_file(path: Path, meta: dict) -> Path:
    if meta["version"] == 1:
        return path / _NPZ_V1
    name = meta.get("arrays_file")
    if not isinstance(name, str) or not _ARRAYS_FILE.fullmatch(name):
        raise ModelFileError(f"{path / _JSON}: arrays_file: malformed ({short_repr(name)})")
    return path / name


def arrays_path(path) -> Path:
    """The array archive of the saved bundle at ``path`` (``arrays.<token>.npz``, or
    ``arrays.npz`` in format version 1): for tools and tests that inspect a saved file."""
    path = Path(path)
    meta = read_json(path / _JSON, "model")
    if not isinstance(meta, dict) or not is_int(meta.get("version")) \
            or meta["version"] not in READS:
        raise ModelFileError(f"{path / _JSON}: not a saved hiddenstate bundle")
    return _arrays_file(path, meta)


def part_path(path, meta: dict, name: str) -> Path:
    """Directory of the sub-bundle ``name`` of the bundle at ``path`` (``meta`` from
    :func:`read_meta`)."""
    path = Path(path)
    if not isinstance(name, str) or not _PART_NAME.fullmatch(name):
        raise ModelFileError(f"{path / _JSON}: malformed part name {short_repr(name)}")
    if meta["version"] == 1:
        return path / name
    parts = meta.get("parts")
    entry = parts.get(name) if isinstance(parts, dict) else None
    if not isinstance(entry, str) or not re.fullmatch(rf"{re.escape(name)}\.{_TOKEN}", entry):
        raise ModelFileError(f"{path / _JSON}: parts: no valid entry for {name!r}")
    return path / entry


def _check_manifest(manifest, where: Path) -> dict[str, tuple[list, np.dtype, str, int]]:
    """``name -> (shape, dtype, sha256, nbytes)`` from a manifest, every field checked."""
    if not isinstance(manifest, dict):
        raise ModelFileError(f"{where}: malformed (no array manifest)")
    out = {}
    for name, entry in manifest.items():
        if not isinstance(entry, dict) or set(entry) != {"shape", "dtype", "sha256"}:
            raise ModelFileError(f"{where}: arrays.{name}: malformed manifest entry")
        shape, dtype, digest = entry["shape"], entry["dtype"], entry["sha256"]
        if not isinstance(shape, list) or len(shape) > 32 \
                or not all(is_int(n) and n >= 0 for n in shape):
            raise ModelFileError(
                f"{where}: arrays.{name}: malformed shape {short_repr(shape)}")
        if dtype not in _DTYPES:
            raise ModelFileError(
                f"{where}: arrays.{name}: dtype {short_repr(dtype)} is not allowed")
        if not isinstance(digest, str) or not re.fullmatch("[0-9a-f]{64}", digest):
            raise ModelFileError(f"{where}: arrays.{name}: malformed sha256")
        dt = np.dtype(dtype)
        out[name] = (shape, dt, digest, math.prod(shape) * dt.itemsize)
    return out


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, shape: list, dtype: np.dtype,
                 nbytes: int, where: str) -> np.ndarray:
    """One ``.npy`` member, its size and header checked against the manifest before a byte
    of data is read (and a byte allocated)."""
    if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size:
        raise ModelFileError(f"{where}: is compressed (hiddenstate stores arrays uncompressed)")
    if not nbytes <= info.file_size <= nbytes + _MAX_NPY_HEADER + 16:
        raise ModelFileError(
            f"{where}: holds {info.file_size} bytes, not an array of shape {shape} and dtype "
            f"{dtype}")
    with zf.open(info) as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            hdr = np.lib.format.read_array_header_1_0(fh, max_header_size=_MAX_NPY_HEADER)
        elif version == (2, 0):
            hdr = np.lib.format.read_array_header_2_0(fh, max_header_size=_MAX_NPY_HEADER)
        else:
            raise ModelFileError(f"{where}: unsupported .npy version {version}")
        hshape, fortran, hdtype = hdr
        if hdtype != dtype or list(hshape) != shape:
            raise ModelFileError(
                f"{where}: its header (shape {hshape}, dtype {hdtype}) does not match the "
                f"manifest (shape {tuple(shape)}, dtype {dtype})")
        if info.file_size - fh.tell() != nbytes:
            raise ModelFileError(f"{where}: size does not match shape {tuple(shape)}")
        flat = np.empty(nbytes // dtype.itemsize if dtype.itemsize else 0, dtype=dtype)
        buf = memoryview(flat.view(np.uint8))
        got = 0
        while got < nbytes:
            n = fh.readinto(buf[got:])
            if not n:
                raise ModelFileError(f"{where}: truncated")
            got += n
        if fh.read(1):  # also makes zipfile check the CRC
            raise ModelFileError(f"{where}: longer than its header says")
    return flat.reshape(shape, order="F" if fortran else "C")


def _read_arrays(npz: Path, manifest: dict, where: Path,
                 seal: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The arrays of the manifest, each checked against it; with ``seal`` (format version
    3) the archive's ``META_MEMBER`` must equal it (``model.json`` unchanged)."""
    entries = _check_manifest(manifest, where)
    if seal is not None:
        if META_MEMBER in entries:
            raise ModelFileError(f"{where}: arrays.{META_MEMBER}: reserved name")
        entries[META_MEMBER] = ([4], np.dtype("<i8"), _digest(seal), 32)
    try:
        size = npz.stat().st_size
        with zipfile.ZipFile(npz) as zf:
            members = {}
            for info in zf.infolist():
                key = info.filename[:-4] if info.filename.endswith(".npy") else None
                if key is None or key in members:
                    raise ModelFileError(f"{npz}: unexpected member {short_repr(info.filename)}")
                members[key] = info
            if set(members) != set(entries):
                odd = sorted(set(members) ^ set(entries))
                raise ModelFileError(
                    f"{npz}: arrays {sorted(members)} do not match the manifest "
                    f"{sorted(entries)} (first difference: {odd[0]!r})")
            if sum(e[3] for e in entries.values()) > size:
                raise ModelFileError(f"{npz}: the manifest declares more data than the file "
                                     "holds")
            arrays = {}
            for key, (shape, dtype, digest, nbytes) in entries.items():
                arr = _read_member(zf, members[key], shape, dtype, nbytes, f"{npz}: {key}")
                if key == META_MEMBER and _digest(arr) != digest:
                    raise ModelFileError(
                        f"{where}: does not match the seal in {npz.name}; model.json was "
                        "modified or corrupted (save the model again)")
                if _digest(arr) != digest:
                    raise ModelFileError(
                        f"{npz}: {key}: does not match the checksum in the manifest; the file "
                        "was modified or corrupted")
                if key != META_MEMBER:
                    arrays[key] = arr
    except ModelFileError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zipfile.LargeZipFile,
            NotImplementedError, RuntimeError) as exc:
        raise ModelFileError(f"{npz}: unreadable or not a plain array archive "
                             f"({short_repr(exc)})") from exc
    return arrays


def read_bundle(path, fmt: str, what: str = "model") -> tuple[dict, dict[str, np.ndarray]]:
    """Read what :func:`write_bundle` wrote: ``(meta, arrays)``, the arrays checked against
    the manifest (names, shapes, dtypes, sizes, SHA-256). ``meta`` is the raw JSON (decode
    values with :func:`from_json`; find sub-bundles with :func:`part_path`)."""
    path = Path(path)
    meta = read_meta(path, fmt, what)
    npz = _arrays_file(path, meta)
    if not npz.is_file():
        raise ModelFileError(f"path: {path} is not a saved {what} ({npz.name} is missing)")
    seal = meta_digest(meta) if meta["version"] >= 3 else None
    return meta, _read_arrays(npz, meta.get("arrays"), path / _JSON, seal)


def peek(path, what: str = "model") -> tuple:
    """``(format, class)`` of the bundle at ``path`` as written in its ``model.json`` (read
    size- and depth-limited; no array is read; either may be None or of any JSON type in a
    tampered file): how :func:`hiddenstate.load` picks the reader."""
    path = Path(path)
    if not (path / _JSON).is_file():
        raise ModelFileError(
            f"path: {path} is not a saved {what} (expected {_JSON} inside it)")
    meta = read_json(path / _JSON, what)
    if not isinstance(meta, dict):
        raise ModelFileError(f"{path / _JSON}: not a hiddenstate {what} file")
    return meta.get("format"), meta.get("class")

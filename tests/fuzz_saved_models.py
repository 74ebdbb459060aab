"""Worker of the saved-model fuzz test (``test_tampered_files.py``), run in a subprocess so
that a segfault fails the test instead of killing pytest.

Saves valid models (HMM categorical/Gaussian/Poisson, with and without a streaming
learner's state, HSMMs, an AR RegressionHMM, a Gibbs-fitted HMM with its draws, PROPS with
a Kneser-Ney source), then, for each hypothesis example, copies
one, tampers with it (bytes flipped or cut in either file, JSON values replaced -- types,
huge numbers, NaN, nesting, missing and extra keys --, arrays replaced by others of other
shapes, dtypes and values with the manifest's digests fixed up so the checksum passes, a
source's metadata digest fixed up too) and uses it: ``load``, ``score``, and
``partial_fit(continues=True)`` for a stream. Each step must either work, giving valid
numbers (no NaN; parameters and state that pass the checks again), or raise a
``HiddenStateError``. Anything else is reported with the case (the case is written to the
log before it runs, so a crash names it).

Usage: ``python fuzz_saved_models.py N_EXAMPLES SEED WORKDIR LOG``.
"""

from __future__ import annotations

import copy
import json
import shutil
import sys
import traceback
import warnings
from pathlib import Path

import numpy as np
import tamper
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

import hiddenstate as hs
import hiddenstate._bundle as hio
from hiddenstate.errors import HiddenStateError
from hiddenstate.sources import KneserNeySource

W = 5
_STREAMING = ("online-em", "bwo", "baldi-chauvin", "bona", "mpa")


def base_models(root: Path) -> list[tuple[str, Path, np.ndarray, list | None, bool]]:
    """``(name, directory, data, lengths, continues)`` of each valid saved model."""
    rng = np.random.default_rng(0)
    sym = rng.integers(0, W, size=(60, 1))
    gauss = rng.normal(size=(60, 2))
    counts = rng.poisson(2.0, size=(60, 2))
    models = [
        ("cat-em", hs.HMM(2, n_iter=3, random_state=0).fit(sym), sym, None, False),
        ("gauss-full-map", hs.HMM(2, emission="gaussian", covariance_type="full",
                                  learn="map", n_iter=3, random_state=0).fit(gauss),
         gauss, None, False),
        ("poisson-vb", hs.HMM(2, emission="poisson", learn="vb", n_iter=3,
                              random_state=0).fit(counts), counts, None, False),
        ("cat-oem", hs.HMM(2, learn="online-em", random_state=0,
                           learner_options={"block": 8, "warmup": 4}).partial_fit(sym[:37]),
         sym, None, True),
        ("cat-oem-avg", hs.HMM(3, learn="online-em", random_state=0,
                               learner_options={"block": 8, "warmup": 4, "averaging": True,
                                                "learn_startprob": True}
                               ).partial_fit(sym[:45], [20, 25]), sym, None, True),
        ("gauss-oem", hs.HMM(2, emission="gaussian", learn="online-em", random_state=0,
                             learner_options={"warmup": 4, "averaging": True}
                             ).partial_fit(gauss[:30]), gauss, None, True),
        ("poisson-oem", hs.HMM(2, emission="poisson", learn="online-em", random_state=0,
                               learner_options={"warmup": 4}).partial_fit(counts[:30]),
         counts, None, True),
    ]
    for mode in ("bwo", "baldi-chauvin", "bona", "mpa"):
        m = hs.HMM(2, learn=mode, random_state=0).partial_fit(sym[:20], [4] * 5)
        models.append((f"cat-{mode}", m, sym[:12], [4] * 3, False))
    models += [
        ("hsmm-cat", hs.HSMM(2, n_features=W, max_duration=6, n_iter=3,
                             random_state=0).fit(sym), sym, None, False),
        ("hsmm-poisson-gauss", hs.HSMM(2, emission="gaussian", duration="poisson",
                                       max_duration=8, n_iter=3, random_state=0).fit(gauss),
         gauss, None, False),
        ("ar-hmm", hs.RegressionHMM(2, n_lags=1, n_iter=3, random_state=0).fit(gauss), gauss,
         None, False),
        ("cat-gibbs", hs.HMM(2, n_features=W, learn="gibbs", random_state=0,
                             learner_options={"n_samples": 6, "burn_in": 2, "n_chains": 2,
                                              "check_convergence": False}).fit(sym),
         sym, None, False),
    ]
    src = KneserNeySource(order=3).fit(rng.integers(0, W, 300), n_symbols=W)
    props = hs.PROPS([src], n_perturbation_states=1, random_state=0, learner_options={"block": 8,
                     "warmup": 3})
    models.append(("props-kn", props.partial_fit(sym[:33, 0]), sym[:, 0], None, True))
    out = []
    for name, model, X, lengths, continues in models:
        model.save(root / name)
        out.append((name, root / name, X, lengths, continues))
    return out


# -- tampering -------------------------------------------------------------------------------------
ODD_VALUES = [None, True, False, 0, 1, -1, 2, 3, 2**31, 10**12, 2**63, -(10**12), 0.5, -0.5,
              1e300, {"float": "nan"}, {"float": "inf"}, {"float": "-inf"}, "", "x", "em",
              [], [1, 2], {}, {"dict": {}}, {"dict": {"eta": 2}},
              {"array": [1.0], "shape": [10**9], "dtype": "<f8"},
              {"array": [1.0, 2.0], "shape": [2], "dtype": "|O"},
              {"array": [[1.0]], "shape": [1], "dtype": "<f8"},
              json.loads("[" * 40 + "]" * 40)]


def _paths(node, prefix=()):
    """Every (path, value) of a JSON document."""
    yield prefix, node
    items = (node.items() if isinstance(node, dict)
             else enumerate(node) if isinstance(node, list) else ())
    for key, child in items:
        yield from _paths(child, (*prefix, key))


def _set(doc, path, value):
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def _bundles(path: Path) -> list[Path]:
    """The bundle and its sub-bundles."""
    return [path, *sorted(p for p in path.iterdir() if p.is_dir())]


def edit_json(data, bundle: Path) -> str:
    path = bundle / "model.json"
    doc = json.loads(path.read_text())
    nodes = list(_paths(doc))[1:]
    where, old = data.draw(st.sampled_from(nodes), label="json node")
    op = data.draw(st.sampled_from(["replace", "delete", "extra", "number"]), label="op")
    if op == "replace":
        value = copy.deepcopy(data.draw(st.sampled_from(ODD_VALUES), label="value"))
        _set(doc, where, value)
    elif op == "delete" and isinstance(where[-1], str):
        parent = doc
        for key in where[:-1]:
            parent = parent[key]
        del parent[where[-1]]
    elif op == "extra":
        target = old if isinstance(old, dict) else doc
        target[data.draw(st.sampled_from(["x", "learner_state_.x", "t", "arrays"]))] = 1
    elif isinstance(old, (int, float)) and not isinstance(old, bool):
        value = old + data.draw(st.sampled_from([-2, -1, 1, 2, 0.5, 10**6]), label="delta")
        _set(doc, where, value)
    if data.draw(st.booleans(), label="reseal"):  # a consistent tamperer: content checks
        try:
            tamper.write(bundle, doc, manifest=False)
        except (TypeError, ValueError):  # a doc the seal cannot be computed for
            path.write_text(json.dumps(doc))
    else:
        path.write_text(json.dumps(doc))
    return f"json {op} {bundle.name}:{'/'.join(map(str, where))}"


def _new_array(data, a: np.ndarray) -> np.ndarray:
    op = data.draw(st.sampled_from(["slice", "ravel", "transpose", "newaxis", "empty",
                                    "scalar", "astype", "poke", "poke", "poke", "fill",
                                    "random", "nudge", "nudge", "shuffle"]),
                   label="array op")
    if op == "slice" and a.ndim and len(a):
        return a[:data.draw(st.integers(0, len(a) - 1), label="cut")]
    if op == "ravel":
        return a.ravel()
    if op == "transpose":
        return np.ascontiguousarray(a.T)
    if op == "newaxis":
        return a[None]
    if op == "empty":
        return np.empty((0,) + a.shape[1:], dtype=a.dtype)
    if op == "scalar":
        return np.asarray(a.ravel()[0] if a.size else 0, dtype=a.dtype)
    if op == "astype":
        return a.astype(data.draw(st.sampled_from([np.float64, np.int64, np.bool_])))
    values = {"f": [np.nan, np.inf, -np.inf, -1.0, 0.0, 1.0, 2.0, 1e300, -1e300, 1e-300],
              "i": [-1, 0, 1, 2, 7, 10**9, 2**62, -(2**62)], "b": [True, False]}[a.dtype.kind]
    b = a.copy()
    if op == "nudge" and a.dtype.kind in "fi":  # small changes: often still (nearly) valid
        delta = data.draw(st.sampled_from([1e-12, 1e-9, 1e-3, 1]), label="delta")
        return b + (delta if a.dtype.kind == "f" else int(delta))
    if op == "shuffle" and b.size:
        return np.random.default_rng(data.draw(st.integers(0, 99))).permutation(b.ravel()
                                                                                ).reshape(b.shape)
    if op == "poke" and b.size:
        flat = b.reshape(-1)
        for _ in range(data.draw(st.integers(1, 3), label="pokes")):
            flat[data.draw(st.integers(0, b.size - 1), label="index")] = \
                data.draw(st.sampled_from(values), label="poke")
        return b
    if op == "fill":
        b[...] = data.draw(st.sampled_from(values), label="fill")
        return b
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="rng"))
    if a.dtype.kind == "f":
        return rng.normal(size=a.shape) * data.draw(st.sampled_from([1e-3, 1.0, 1e3]))
    if a.dtype.kind == "i":
        return rng.integers(-3, 50, size=a.shape)
    return rng.random(a.shape) < 0.5


def edit_arrays(data, bundle: Path) -> str:
    """Replace, drop or add an array, with the manifest fixed up (checksums pass)."""
    doc, arrays = tamper.read(bundle)
    state = sorted(k for k in arrays if k.startswith("learner_state_."))
    key = data.draw(st.sampled_from(state) if state and data.draw(st.booleans())
                    else st.sampled_from(sorted(arrays)), label="array")
    op = data.draw(st.sampled_from(["change"] * 8 + ["drop", "add"]), label="arrays op")
    if op == "drop":
        del arrays[key]
    elif op == "add":
        arrays[key + data.draw(st.sampled_from(["x", "_posterior_", ".x"]))] = arrays[key]
    else:
        arrays[key] = _new_array(data, arrays[key])
    arrays = {k: v for k, v in arrays.items() if v.dtype.str in ("<f8", "<i8", "|b1")}
    tamper.write(bundle, doc, arrays)
    return f"arrays {op} {bundle.name}:{key}"


def edit_bytes(data, bundle: Path) -> str:
    target = data.draw(st.sampled_from([bundle / "model.json", hio.arrays_path(bundle)]),
                       label="file")
    raw = bytearray(target.read_bytes())
    op = data.draw(st.sampled_from(["flip", "truncate", "append", "zero"]), label="bytes op")
    if op == "flip":
        for _ in range(data.draw(st.integers(1, 8), label="flips")):
            i = data.draw(st.integers(0, len(raw) - 1), label="at")
            raw[i] ^= data.draw(st.integers(1, 255), label="mask")
    elif op == "truncate":
        raw = raw[:data.draw(st.integers(0, len(raw) - 1), label="length")]
    elif op == "append":
        raw += bytes(data.draw(st.binary(min_size=1, max_size=64), label="tail"))
    else:
        i = data.draw(st.integers(0, len(raw) - 1), label="from")
        n = data.draw(st.integers(1, 64), label="n")
        raw[i:i + n] = bytes(len(raw[i:i + n]))
    target.write_bytes(bytes(raw))
    return f"bytes {op} {target.parent.name}/{target.name}"


# -- using the tampered model ----------------------------------------------------------------------
def _valid(model) -> None:
    """Parameters (and state) pass the load-time checks again; numbers are not NaN."""
    model._check_learned()
    for value in model.learned_arrays().values():
        if value.dtype.kind == "f" and np.isnan(value).any():
            raise AssertionError("NaN in the learned arrays")


def exercise(path: Path, X, lengths, continues: bool) -> str:
    try:
        model = hs.load(path)
    except HiddenStateError:
        return "refused at load"
    _valid(model)
    try:
        score = model.score(X, lengths)
    except HiddenStateError:
        return "refused at score"
    if np.isnan(score):
        raise AssertionError("score is NaN")
    if model.learn not in _STREAMING:
        return "scored"
    more = X[:9] if lengths is None else X[:8]
    more_lengths = None if lengths is None else [4, 4]
    try:
        model.partial_fit(more, more_lengths, continues=continues)
    except HiddenStateError:
        return "refused at partial_fit"
    _valid(model)
    return "resumed"


def main(n_examples: int, the_seed: int, root: Path, log: Path) -> None:
    warnings.simplefilter("ignore")
    bases = base_models(root / "bases")
    outcomes: dict[str, int] = {}
    counter = [0]

    @seed(the_seed)
    @settings(max_examples=n_examples, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(st.data())
    def case(data):
        name, base, X, lengths, continues = data.draw(st.sampled_from(bases), label="model")
        counter[0] += 1
        work = root / f"case-{counter[0] % 2}"
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(base, work)
        steps = []
        for _ in range(data.draw(st.sampled_from([1, 1, 1, 2, 3]), label="edits")):
            bundle = data.draw(st.sampled_from(_bundles(work)), label="bundle")
            edit = data.draw(st.sampled_from([edit_json] * 3 + [edit_arrays] * 6
                                             + [edit_bytes]), label="edit")
            try:
                steps.append(edit(data, bundle))
            except Exception:  # noqa: BLE001 (the tampering tool, not the library)
                steps.append(f"{edit.__name__} skipped (earlier edit broke the file)")
        with open(log, "a") as fh:
            fh.write(f"{counter[0]} {name}: {'; '.join(steps)}\n")
        try:
            outcome = exercise(work, X, lengths, continues)
        except Exception:  # a raw exception, or an error from a model that loaded
            with open(log, "a") as fh:
                fh.write("RAW EXCEPTION:\n" + traceback.format_exc())
            raise
        outcomes[outcome] = outcomes.get(outcome, 0) + 1

    case()
    print(json.dumps({"examples": counter[0], "outcomes": outcomes}))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))

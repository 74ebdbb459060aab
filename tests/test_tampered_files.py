"""Tampered, corrupted and oversized files: :func:`hiddenstate.load` (and a state set by
hand before ``partial_fit``) either gives a working model or raises a ``HiddenStateError``
naming the file and the entry -- never a segfault, a raw exception, or an allocation sized
by the file's claims rather than its contents."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tracemalloc
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import tamper

import hiddenstate as hs
import hiddenstate._bundle as hio
from hiddenstate.errors import HiddenStateError, InvalidInputError, ModelFileError
from hiddenstate.sources import KneserNeySource

W = 4
_P = "learner_state_."


# -- models with a streaming state -----------------------------------------------------------------
def _symbols(n, seed=0):
    return np.random.default_rng(seed).integers(0, W, size=(n, 1))


def build(kind: str):
    """A model of ``kind`` partway through a stream, and data to continue it with."""
    if kind.startswith("oem-cat"):
        opts = {"block": 16, "warmup": 5, "averaging": kind.endswith("avg")}
        m = hs.HMM(2, learn="online-em", random_state=0, learner_options=opts)
        return m.partial_fit(_symbols(53)), _symbols(20, 1)
    if kind in ("oem-gauss", "oem-poisson"):
        rng = np.random.default_rng(0)
        X = rng.normal(size=(60, 2)) if kind == "oem-gauss" else rng.poisson(3, (60, 2))
        family = "gaussian" if kind == "oem-gauss" else "poisson"
        m = hs.HMM(2, emission=family, learn="online-em", random_state=0,
                   learner_options={"warmup": 5, "averaging": True})
        return m.partial_fit(X[:40]), X[40:]
    if kind in ("bwo", "baldi-chauvin", "bona", "mpa"):
        m = hs.HMM(2, learn=kind, random_state=0)
        return m.partial_fit(_symbols(40), [4] * 10), _symbols(8, 1)
    assert kind == "props"
    src = KneserNeySource(order=3).fit(_symbols(300, 2)[:, 0], n_symbols=W)
    m = hs.PROPS([src], n_perturbation_states=1, random_state=0, learner_options={"block": 16,
                 "warmup": 3})
    return m.partial_fit(_symbols(37)), _symbols(15, 1)


def rewrite(path: Path, edit) -> None:
    """Apply ``edit(doc, arrays)`` to a saved model and write it back with a manifest and a
    seal that match (so the integrity checks pass and the content is what is tested)."""
    doc, arrays = tamper.read(path)
    edit(doc, arrays)
    tamper.write(path, doc, arrays)


def arr(key, fn):
    """Edit of the learner-state array ``key``: ``arrays[key] = fn(arrays[key])``."""
    def edit(doc, arrays):
        arrays[_P + key] = fn(arrays[_P + key].copy())
    return edit


def scalar(key, value):
    def edit(doc, arrays):
        doc["scalars"][_P + key] = value
    return edit


def drop(key):
    def edit(doc, arrays):
        arrays.pop(_P + key, None)
        doc["scalars"].pop(_P + key, None)
    return edit


def setitem(a, index, value):
    a[index] = value
    return a


CASES = [
    # the four of the issue: segfault, heap corruption, numba TypingError, KeyError
    ("oem-cat", scalar("window", 10**12), "window"),
    ("oem-cat", arr("transmat", lambda a: np.full((5, 5), 0.2)), "transmat"),
    ("oem-cat", arr("E", lambda a: a[:2]), "E"),
    ("oem-cat", drop("t"), "t"),
    # ring-buffer indices, counters, factors
    ("oem-cat", arr("touch", lambda a: setitem(a, 0, -1)), "touch"),
    ("oem-cat", arr("touch", lambda a: setitem(a, 1, 10**9)), "touch"),
    ("oem-cat", scalar("window", -1), "window"),
    ("oem-cat", scalar("window", "3"), "window"),
    ("oem-cat", scalar("decay", 0.0), "decay"),
    ("oem-cat", scalar("decay", 2.0), "decay"),
    ("oem-cat", scalar("decay", {"float": "nan"}), "decay"),
    ("oem-cat", scalar("t", -1), "t"),
    ("oem-cat", scalar("t", 2**63 - 1), "t"),
    ("oem-cat", scalar("t", True), "t"),
    ("oem-cat", scalar("t", 7.5), "t"),
    ("oem-cat", scalar("n_avg", 3), "n_avg"),
    ("oem-cat", scalar("learner", "bwo"), "learner"),
    ("oem-cat", scalar("extra", 1), "extra"),
    # arrays: types, shapes, values
    ("oem-cat", arr("E", lambda a: a.astype(np.int64)), "E"),
    ("oem-cat", arr("tree_P", lambda a: a[:8]), "tree_P"),
    ("oem-cat", arr("rho_trans", lambda a: setitem(a, (0, 0, 0), np.nan)), "rho_trans"),
    ("oem-cat", arr("G", lambda a: -a), "G"),
    ("oem-cat", arr("phi", lambda a: a + 1.0), "phi"),
    ("oem-cat", arr("emission0", lambda a: a * 2), "emission0"),
    ("oem-cat-avg", scalar("n_avg", 10**6), "n_avg"),
    ("oem-cat-avg", arr("avg_transmat", lambda a: a * 2), "avg_transmat"),
    ("oem-cat-avg", arr("avg_U", lambda a: a - 1e3), "avg_U"),
    ("oem-gauss", arr("emission.covars", lambda a: -a), "emission."),
    ("oem-gauss", arr("avg.emission.means", lambda a: setitem(a, 0, np.inf)),
     "avg.emission.means"),
    ("oem-gauss", arr("rho_emission", lambda a: -a), "rho_emission"),
    ("oem-poisson", arr("emission.lambdas", lambda a: -a), "emission."),
    ("bwo", arr("emissionprob", lambda a: a * 3), "emissionprob"),
    ("bwo", scalar("n_sequences", -5), "n_sequences"),
    ("baldi-chauvin", arr("w_transmat", lambda a: setitem(a, (0, 0), np.inf)), "w_transmat"),
    ("baldi-chauvin", arr("w_startprob", lambda a: np.full_like(a, -np.inf)), "w_startprob"),
    ("bona", arr("u_transmat", lambda a: setitem(a, (0, 1), 0.0)), "u_transmat"),
    ("mpa", arr("prior_emissionprob", lambda a: -a), "prior_emissionprob"),
    ("mpa", arr("u_startprob", lambda a: a[:1]), "u_startprob"),
    # PROPS: the sources' positions in the stream
    ("props", arr("source.0.context", lambda a: a + 100), "source.0."),
    ("props", arr("source.0.next", lambda a: a[:2]), "source.0.next"),
    ("props", arr("source.0.next", lambda a: a * 0.5), "source.0.next"),
    ("props", drop("source.0.next"), "source.0"),
    ("props", arr("source.0.context", lambda a: a.astype(np.float64)), "source.0."),
    ("props", scalar("source.3.context", 1), "source.3.context"),
    ("props", arr("E", lambda a: a[:1]), "E"),
]


@pytest.mark.parametrize("kind,edit,key", CASES,
                         ids=[f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(CASES)])
def test_a_tampered_learner_state_is_refused_naming_the_key(kind, edit, key, tmp_path):
    model, more = build(kind)
    model.save(tmp_path / "m")
    rewrite(tmp_path / "m", edit)
    with pytest.raises(ModelFileError, match=re.escape(_P + key)):
        hs.load(tmp_path / "m")


@pytest.mark.parametrize("kind,edit,key", CASES[:12] + CASES[-7:],
                         ids=[f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(CASES[:12] + CASES[-7:])])
def test_a_state_set_by_hand_is_checked_before_partial_fit(kind, edit, key, tmp_path):
    """The same tampering on a state assigned to the model (or edited in it) raises before
    the kernels see it; the model is left as it was."""
    model, more = build(kind)
    model.save(tmp_path / "m")
    rewrite(tmp_path / "m", edit)
    doc = json.loads((tmp_path / "m" / "model.json").read_text())
    with np.load(hio.arrays_path(tmp_path / "m")) as f:
        state = {k[len(_P):]: f[k] for k in f.files if k.startswith(_P)}
    state.update({k[len(_P):]: hio.from_json(v) for k, v in doc["scalars"].items()})
    before = model.transmat_.copy()
    model.learner_state_ = state
    continues = kind not in ("bwo", "baldi-chauvin", "bona", "mpa")
    with pytest.raises(InvalidInputError, match=re.escape(_P + key)):
        model.partial_fit(more, continues=continues)
    assert np.array_equal(model.transmat_, before)


def test_vb_posteriors_are_checked(tmp_path):
    m = hs.HMM(2, emission="poisson", learn="vb", n_iter=2, random_state=0)
    m.fit(np.random.default_rng(0).poisson(2, (40, 2)))
    m.save(tmp_path / "m")
    rewrite(tmp_path / "m", lambda doc, arrays: arrays["lambdas_shape_posterior_"].fill(np.nan))
    with pytest.raises(ModelFileError, match="lambdas_shape_posterior_"):
        hs.load(tmp_path / "m")


def test_a_state_with_odd_keys_or_of_another_type_is_refused():
    for kind, more, continues in [("props", None, True), ("oem-cat", None, True),
                                  ("bwo", None, False)]:
        model, more = build(kind)
        for state in ({**model.learner_state_, 3: 1}, [1, 2], None):
            model.learner_state_ = state
            with pytest.raises(InvalidInputError, match="learner_state_"):
                model.partial_fit(more, continues=continues)


def test_an_entry_replaced_in_place_is_checked_too():
    model, more = build("oem-cat")
    model.learner_state_["window"] = 10**12
    with pytest.raises(InvalidInputError, match=r"learner_state_\.window"):
        model.partial_fit(more, continues=True)
    model, more = build("oem-cat")
    model.learner_state_["touch"] = np.full(W, 10**9)
    with pytest.raises(InvalidInputError, match=r"learner_state_\.touch"):
        model.partial_fit(more, continues=True)


@pytest.mark.parametrize("kind", ["oem-cat-avg", "oem-gauss", "oem-poisson", "bwo",
                                  "baldi-chauvin", "bona", "mpa", "props"])
def test_a_valid_state_set_by_hand_resumes_exactly(kind, tmp_path):
    """The checks accept every state a learner reaches: a state copied into a fresh model
    continues exactly like the original."""
    model, more = build(kind)
    model.save(tmp_path / "m")
    twin = hs.load(tmp_path / "m")
    twin.learner_state_ = {k: (v.copy() if isinstance(v, np.ndarray) else v)
                           for k, v in twin.learner_state_.items()}
    continues = kind not in ("bwo", "baldi-chauvin", "bona", "mpa")
    model.partial_fit(more, continues=continues)
    twin.partial_fit(more, continues=continues)
    for attr in ("startprob_", "transmat_"):
        assert np.array_equal(getattr(model, attr), getattr(twin, attr)), attr


def test_a_state_without_a_streaming_learner_or_with_unknown_options(tmp_path):
    model, _ = build("oem-cat")
    model.save(tmp_path / "m")
    rewrite(tmp_path / "m", lambda doc, arrays: doc["params"].update(learn="map",
                                                                      learner_options=None))
    with pytest.raises(ModelFileError, match="learner_state_: a streaming learner's state"):
        hs.load(tmp_path / "m")
    model.save(tmp_path / "o")
    rewrite(tmp_path / "o", lambda doc, arrays: doc["params"].update(
        learner_options={"dict": {"bogus": 1}}))
    with pytest.raises(ModelFileError, match="learner_options: 'bogus'"):
        hs.load(tmp_path / "o")
    with pytest.raises(InvalidInputError, match="learner_options: 'bogus'"):
        hs.HMM(2, learn="bwo", learner_options={"bogus": 1}).fit(_symbols(20))


# -- bounded reads ---------------------------------------------------------------------------------
def _hmm(tmp_path: Path) -> Path:
    m = hs.HMM(2, n_iter=2, random_state=0).fit(_symbols(50))
    m.save(tmp_path / "m")
    return tmp_path / "m"


def test_a_compressed_member_is_refused_before_it_is_decompressed(tmp_path):
    """A zip bomb: 64 MiB of zeros deflated to a few kB, declared in the manifest. It is
    refused from the zip directory alone: loading allocates almost nothing."""
    path = _hmm(tmp_path)
    npz = hio.arrays_path(path)
    doc = json.loads((path / "model.json").read_text())
    with np.load(npz) as f:
        arrays = {k: f[k] for k in f.files}
    with zipfile.ZipFile(npz, "w") as zf:
        for k, v in arrays.items():
            zf.writestr(k + ".npy", _npy_bytes(v))
        info = zipfile.ZipInfo("bomb.npy")
        info.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(info, "w", force_zip64=True) as fh:
            np.lib.format.write_array_header_1_0(
                fh, {"descr": "<f8", "fortran_order": False, "shape": (8388608,)})
            chunk = bytes(1 << 20)
            for _ in range(64):
                fh.write(chunk)
    doc["arrays"]["bomb"] = {"shape": [8388608], "dtype": "<f8", "sha256": "0" * 64}
    (path / "model.json").write_text(json.dumps(doc))
    assert npz.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(ModelFileError, match=r"declares more data|compressed"):
            hs.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20
    # the same member under a small manifest entry: refused for being compressed
    doc["arrays"]["bomb"]["shape"] = [1]
    (path / "model.json").write_text(json.dumps(doc))
    with pytest.raises(ModelFileError, match="compressed"):
        hs.load(path)


def _npy_bytes(a: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.lib.format.write_array(buf, a, allow_pickle=False)
    return buf.getvalue()


def test_members_are_checked_against_the_manifest_before_reading(tmp_path):
    path = _hmm(tmp_path)
    npz = hio.arrays_path(path)
    doc = json.loads((path / "model.json").read_text())
    with np.load(npz) as f:
        arrays = {k: f[k] for k in f.files}

    def write(members, manifest_edit=None):
        with zipfile.ZipFile(npz, "w") as zf:
            for k, data, method in members:
                zf.writestr(zipfile.ZipInfo(k), data, compress_type=method)
        d = json.loads(json.dumps(doc))
        if manifest_edit:
            manifest_edit(d["arrays"])
        (path / "model.json").write_text(json.dumps(d))

    stored = [(k + ".npy", _npy_bytes(v), zipfile.ZIP_STORED) for k, v in arrays.items()]
    write(stored)
    assert hs.load(path).n_states == 2  # the rewritten archive itself is fine
    cases = [
        # a header that disagrees with the manifest (a bigger array than declared)
        ([*stored[1:], ("startprob_.npy", _npy_bytes(np.ones(3) / 3), 0)], None,
         "startprob_: holds|startprob_: its header"),
        # a manifest that claims far more than the archive holds
        (stored, lambda a: a["transmat_"].update(shape=[10**6, 10**6]), "declares more data"),
        # a compressed member
        ([*stored[1:], (stored[0][0], stored[0][1], zipfile.ZIP_DEFLATED)], None, "compressed"),
        # a member the manifest does not list, a listed one missing, a duplicate, an odd name
        ([*stored, ("x.npy", _npy_bytes(np.ones(1)), 0)], None, "do not match the manifest"),
        (stored[1:], None, "do not match the manifest"),
        ([*stored, stored[0]], None, "unexpected member"),
        ([*stored, ("../evil", b"", 0)], None, "unexpected member"),
        # a malformed manifest entry
        (stored, lambda a: a["transmat_"].update(shape=[-1, 2]), "malformed shape"),
        (stored, lambda a: a["transmat_"].update(dtype="|O"), "not allowed"),
        (stored, lambda a: a["transmat_"].update(sha256=5), "malformed sha256"),
    ]
    for members, manifest_edit, match in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zipfile warns about the duplicate name
            write(members, manifest_edit)
        with pytest.raises(ModelFileError, match=match):
            hs.load(path)
    # a truncated or bit-flipped archive
    write(stored)
    data = npz.read_bytes()
    npz.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError):
        hs.load(path)
    flipped = bytearray(data)
    flipped[len(data) // 3] ^= 0xFF
    npz.write_bytes(bytes(flipped))
    with pytest.raises(ModelFileError):
        hs.load(path)


def test_json_is_bounded_in_size_depth_and_array_claims(tmp_path, monkeypatch):
    path = _hmm(tmp_path)
    text = (path / "model.json").read_text()
    doc = json.loads(text)
    edits = [
        (lambda d: d["params"].update(
            transmat_prior={"array": [1.0], "shape": [10**12], "dtype": "<f8"}), "holds"),
        (lambda d: d["params"].update(
            transmat_prior={"array": [1.0], "shape": [1], "dtype": "|O"}), "not allowed"),
        (lambda d: d["params"].update(tol={"float": 3}), "unrecognised"),
        (lambda d: d.update(n_features_=10**30), "emissionprob_: expected shape"),
        (lambda d: d.update(n_features_=2.0), "n_features_"),
        (lambda d: d.update(version=True), "version"),
        (lambda d: d.update(arrays_file="../../etc/passwd"), "arrays_file"),
        (lambda d: d.update(**{"class": ["HMM"]}), "unknown model class"),
        (lambda d: d["monitor"].update(converged="yes"), "converged"),
        (lambda d: d.pop("params"), "malformed"),
    ]
    for edit, match in edits:
        d = json.loads(text)
        edit(d)
        tamper.write(path, d, manifest=False)  # resealed: the content checks are tested
        with pytest.raises(ModelFileError, match=match):
            hs.load(path)
    d = json.loads(text)
    d["params"]["tol"] = 0.5  # a valid value, but not the saved one: the seal refuses it
    (path / "model.json").write_text(json.dumps(d))
    with pytest.raises(ModelFileError, match="model.json was modified"):
        hs.load(path)
    for depth in (100, 100000):  # too deep for the limit, too deep for the parser
        nested = text.replace('"tol": 0.0001', '"tol": ' + "[" * depth + "]" * depth)
        (path / "model.json").write_text(nested)
        with pytest.raises(ModelFileError, match="nested|not valid UTF-8 JSON"):
            hs.load(path)
    tamper.write(path, doc, manifest=False)
    monkeypatch.setattr(hio, "MAX_JSON_BYTES", 100)
    with pytest.raises(ModelFileError, match="larger than"):
        hs.load(path)


def test_kneser_ney_sizes_are_checked_before_anything_is_built(tmp_path):
    src = KneserNeySource(order=3).fit(_symbols(200)[:, 0], n_symbols=W)
    src.save(tmp_path / "kn")
    path = tmp_path / "kn" / "model.json"
    doc = json.loads(path.read_text())

    def with_meta(**changes):
        d = json.loads(json.dumps(doc))
        d.update(changes)
        tamper.write(path.parent, d, manifest=False)  # a consistent tamperer

    for changes, match in [({"params": {**doc["params"], "order": 10**9}}, "arrays"),
                           ({"n_symbols": 10**12}, "n_symbols"),
                           ({"n_symbols": 2}, "n_symbols|range|invalid")]:
        with_meta(**changes)
        with pytest.raises(ModelFileError, match=match):
            KneserNeySource.load(tmp_path / "kn")


def test_lstm_sizes_are_checked_against_the_tensors_before_the_network_is_built(tmp_path):
    pytest.importorskip("torch")
    import torch

    from hiddenstate.sources.lstm import LSTMSource, _make_net, _tensor_shapes

    for n, e, h, layers in [(5, 3, 4, 1), (7, 2, 6, 3)]:
        net = _make_net(torch, n, e, h, layers)
        assert {k: tuple(v.shape) for k, v in net.state_dict().items()} == \
            _tensor_shapes(n, e, h, layers)
    src = LSTMSource(embedding_dim=3, hidden_dim=4, epochs=0, random_state=0)
    src.fit(_symbols(60)[:, 0])
    src.save(tmp_path / "l")
    path = tmp_path / "l" / "model.json"
    doc = json.loads(path.read_text())
    # hidden_dim = 10**6 would allocate 4e12 floats before the old check; num_layers = 10**8
    # would build 10**8 layers
    for key, value in [("hidden_dim", 10**6), ("num_layers", 10**8),
                       ("embedding_dim", 10**7)]:
        d = json.loads(json.dumps(doc))
        d["params"][key] = value
        tamper.write(path.parent, d, manifest=False)
        with pytest.raises(ModelFileError, match="tensor"):
            LSTMSource.load(tmp_path / "l")
    d = json.loads(json.dumps(doc))
    d["params"]["device"] = "cuda:7" if not torch.cuda.is_available() else "cuda:99"
    tamper.write(path.parent, d, manifest=False)
    with pytest.raises(HiddenStateError):
        LSTMSource.load(tmp_path / "l")


# -- fuzz ------------------------------------------------------------------------------------------
def run_fuzz(n_examples: int, the_seed: int, tmp_path: Path) -> dict:
    """Run the fuzz worker (``fuzz_saved_models.py``) in a subprocess: a segfault or a raw
    exception fails the test with the case that caused it."""
    log = tmp_path / "cases.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(hs.__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("fuzz_saved_models.py")),
         str(n_examples), str(the_seed), str(tmp_path), str(log)],
        capture_output=True, text=True, env=env, timeout=1800)
    cases = log.read_text().splitlines() if log.exists() else []
    assert proc.returncode == 0, (
        f"the fuzz worker failed (exit status {proc.returncode}); last case: "
        f"{cases[-1] if cases else '(none)'}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_fuzzed_files_load_and_work_or_are_refused(tmp_path):
    """~300 tampered copies of valid saved models (every family, every streaming learner,
    PROPS with a Kneser-Ney source): each loads, scores and resumes with valid numbers, or
    is refused with a HiddenStateError; the worker never dies."""
    summary = run_fuzz(300, 1, tmp_path)
    outcomes = summary["outcomes"]
    assert sum(outcomes.values()) == 300
    # both ends are reached: files refused, and tampered files that still load and resume
    assert outcomes.get("refused at load", 0) > 100
    assert outcomes.get("resumed", 0) > 10 and outcomes.get("scored", 0) > 5


@pytest.mark.slow
def test_fuzzed_files_many(tmp_path):
    summary = run_fuzz(5000, 2, tmp_path)
    assert sum(summary["outcomes"].values()) == 5000


@pytest.mark.parametrize("edit", ["drop", "unnormalised"])
def test_a_gibbs_models_draws_are_checked_at_load(tmp_path, edit):
    """A Gibbs-fitted model's saved draws are parameters too: a file (checksums fixed up)
    whose draws lack ``startprob_`` or hold a transition row that does not sum to one is
    refused at load, naming ``posterior_samples_``, not when it scores (a KeyError before)."""
    X = np.random.default_rng(0).integers(0, 3, size=(40, 1))
    model = hs.HMM(2, n_features=3, learn="gibbs", random_state=0,
                   learner_options={"n_samples": 4, "burn_in": 1, "n_chains": 2,
                                    "check_convergence": False}).fit(X)
    model.save(tmp_path / "m")
    doc, arrays = tamper.read(tmp_path / "m")
    if edit == "drop":
        del arrays["posterior_samples_.startprob_"]
    else:
        arrays["posterior_samples_.transmat_"][1, 2, 0] *= 0.5
    tamper.write(tmp_path / "m", doc, arrays)
    with pytest.raises(hs.ModelFileError, match="posterior_samples_"):
        hs.load(tmp_path / "m")


def test_a_gibbs_programs_draws_are_checked_at_load(tmp_path):
    """The same for a ProgramModel: a negative probability in one saved draw is refused at
    load (it was refused only when the model scored)."""
    from hiddenstate.programs import Program, msw

    prog = Program("coins")
    prog.switch("coin", ["a", "b"])
    toss = prog.switch_family("toss", ["h", "t"], keys=["a", "b"])

    @prog.goal
    def two(x, y):
        return [[msw("coin", c), msw(toss(c), x), msw(toss(c), y)] for c in "ab"]

    model = hs.ProgramModel(prog, learn="gibbs", random_state=0,
                            learner_options={"n_samples": 4, "burn_in": 1, "n_chains": 2,
                                             "check_convergence": False})
    model.fit([two("h", "h"), two("t", "t"), two("h", "t")]).save(tmp_path / "m")
    doc, arrays = tamper.read(tmp_path / "m")
    arrays["posterior_samples_.probs_['coin']"][1, 2, 0] = -0.5
    tamper.write(tmp_path / "m", doc, arrays)
    with pytest.raises(hs.ModelFileError, match="posterior_samples_"):
        hs.load(tmp_path / "m", program=prog)

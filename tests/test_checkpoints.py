"""Crash-safe checkpoints: a save is atomic (the directory holds the previous checkpoint or
the new one, whatever fails or is killed in between), leftovers of interrupted saves are
cleaned up, and directories of format version 1 are still read."""

from __future__ import annotations

import builtins
import errno
import json
import os
import re
import signal
import time
from pathlib import Path

import numpy as np
import pytest
import tamper

import hiddenstate as hs
import hiddenstate._bundle as hio
from hiddenstate.errors import ModelFileError
from hiddenstate.sources import KneserNeySource

W = 6


# -- the versions saved ----------------------------------------------------------------------------
def stream_version(i: int) -> hs.HMM:
    """Version ``i`` of a streaming checkpoint: online EM after ``40 + 7 i`` symbols, cut
    mid-sequence (its state, including the lazy window, changes with i)."""
    X = np.random.default_rng(1).integers(0, W, size=(40 + 7 * i, 1))
    return hs.HMM(2, learn="online-em", random_state=i,
                  learner_options={"warmup": 5, "block": 16}).partial_fit(X)


def props_version(i: int) -> hs.PROPS:
    """Version ``i`` of a PROPS checkpoint: a Kneser-Ney source of order 2 + i % 2 fitted on
    data that depends on i, and a stream cut mid-sequence (source positions saved)."""
    rng = np.random.default_rng(100 + i)
    src = KneserNeySource(order=2 + i % 2).fit(rng.integers(0, W, 200), n_symbols=W)
    model = hs.PROPS([src], n_perturbation_states=1, random_state=i, learner_options={"warmup": 3,
                     "block": 16})
    return model.partial_fit(rng.integers(0, W, 30 + i))


def same(a, b) -> bool:
    """The two models hold the same learned numbers (and sources)."""
    if type(a) is not type(b) or a.random_state != b.random_state:
        return False
    la, lb = a.learned_arrays(), b.learned_arrays()
    if la.keys() != lb.keys() or a.learned_scalars() != b.learned_scalars():
        return False
    if not all(la[k].dtype == lb[k].dtype and np.array_equal(la[k], lb[k]) for k in la):
        return False
    if isinstance(a, hs.PROPS):
        y = np.arange(W).repeat(3)
        return all(sa.describe() == sb.describe()
                   and np.array_equal(sa.log_probs(y), sb.log_probs(y))
                   for sa, sb in zip(a.sources, b.sources, strict=True))
    return True


def entries(path: Path) -> list[str]:
    """What the directory holds, tokens masked."""
    return sorted(re.sub(r"\.[0-9a-f]{16}(?=\.|$)", ".<token>", n) for n in os.listdir(path))


EXPECTED = {"stream": ["arrays.<token>.npz", "model.json"],
            "props": ["arrays.<token>.npz", "model.json", "source-0.<token>"]}
VERSIONS = {"stream": stream_version, "props": props_version}


# -- failure injection -----------------------------------------------------------------------------
class _Writer:
    """A file being written, whose writing (its first ``write``: a failure leaves a partial
    file) and closing are filesystem operations that may fail."""

    def __init__(self, fh, injector):
        self._fh, self._inj, self._written = fh, injector, False

    def write(self, data):
        if not self._written:
            self._written = True
            self._inj.tick("write")
        return self._fh.write(data)

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()
        if exc[0] is None:
            self._inj.tick("close")


class Injector:
    """Counts the filesystem operations of a save (creating, writing, syncing, renaming,
    removing files and directories) and makes operation ``fail_at`` raise ``OSError``."""

    OPS = ("replace", "rename", "fsync", "open", "mkdir", "unlink", "rmdir", "listdir")

    def __init__(self, fail_at: int = 0):
        self.fail_at, self.n, self.failed, self.committed = fail_at, 0, None, False

    def tick(self, what: str) -> None:
        self.n += 1
        if self.n == self.fail_at:
            self.failed = what
            raise OSError(errno.EIO, f"injected failure of operation {self.n} ({what})")

    def install(self, monkeypatch, root: Path) -> None:
        for op in self.OPS:
            real = getattr(os, op)

            def wrapped(*args, _real=real, _op=op, **kwargs):
                self.tick(_op)
                if _op == "fsync":  # ordering is what is tested here, not the disk: skip it
                    return None
                out = _real(*args, **kwargs)
                if _op == "replace" and Path(args[1]) == root / "model.json":
                    self.committed = True
                return out

            monkeypatch.setattr(os, op, wrapped)

        def opener(file, mode="r", *args, **kwargs):
            fh = builtins.open(file, mode, *args, **kwargs)
            if any(c in mode for c in "wxa"):
                self.tick("open")
                return _Writer(fh, self)
            return fh

        monkeypatch.setattr(hio, "open", opener, raising=False)


@pytest.mark.parametrize("kind", ["stream", "props"])
def test_a_failure_at_any_filesystem_operation_keeps_a_whole_checkpoint(kind, tmp_path,
                                                                       monkeypatch):
    """Operation n of a save fails, for every n: the directory then loads as the previous
    checkpoint (or as the new one if the failure came after the switch), and the next save
    leaves no leftovers."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)  # the disk is not what is tested
    version = VERSIONS[kind]
    old, new, later = version(0), version(1), version(2)
    path = tmp_path / "ckpt"
    old.save(path)
    with monkeypatch.context() as m:  # how many operations a save does
        count = Injector()
        count.install(m, path)
        new.save(path)
    n_ops = count.n
    assert n_ops > 10
    outcomes = set()
    for n in range(1, n_ops + 2):
        old.save(path)
        inj = Injector(fail_at=n)
        with monkeypatch.context() as m:
            inj.install(m, path)
            try:
                new.save(path)
            except OSError as exc:
                assert "injected" in str(exc)
        back = hs.load(path)
        if inj.committed:
            assert same(back, new), (n, inj.failed)
        else:
            assert inj.failed is not None or n > inj.n
            assert same(back, old), (n, inj.failed)
        outcomes.add((inj.failed is not None, inj.committed))
        later.save(path)
        assert entries(path) == EXPECTED[kind], (n, inj.failed, os.listdir(path))
        assert same(hs.load(path), later)
    # failures before the switch (old kept), after it (new kept), and none at all
    assert outcomes == {(True, False), (True, True), (False, True)}


def test_a_failed_save_of_a_new_directory_leaves_nothing_loadable_half_written(tmp_path,
                                                                             monkeypatch):
    inj = Injector(fail_at=5)
    with monkeypatch.context() as m:
        inj.install(m, tmp_path / "new")
        with pytest.raises(OSError, match="injected"):
            stream_version(0).save(tmp_path / "new")
    with pytest.raises(ModelFileError, match="not a saved model"):
        hs.load(tmp_path / "new")


# -- kill -9 ---------------------------------------------------------------------------------------
def _save_forever(models: list, path: Path, ready: int) -> None:
    """The child: save the versions in turn, forever (it is killed)."""
    try:
        models[0].save(path)
        os.write(ready, b"r")
        i = 0
        while True:
            i += 1
            models[i % len(models)].save(path)
    finally:
        os._exit(1)


def kill_during_saves(kind: str, tmp_path: Path, n_kills: int, seed: int) -> tuple[int, int]:
    """Fork a process that saves three versions in turn to one directory and kill -9 it at
    a random moment (uniform over the next ~10 saves), ``n_kills`` times; the directory is
    kept from one kill to the next, and each kill uses other versions than the one before.
    Returns (checkpoints left, checkpoints that load and equal a version that was being
    saved)."""
    rng = np.random.default_rng(seed)
    path = tmp_path / f"kill-{kind}"
    models = [VERSIONS[kind](i) for i in range(6)]
    good = 0
    for k in range(n_kills):
        batch = models[3 * (k % 2):3 * (k % 2) + 3]
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            _save_forever(batch, path, write)
        os.close(write)
        try:
            assert os.read(read, 1) == b"r"
            time.sleep(float(rng.uniform(0.0, 0.25)))
        finally:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read)
        try:
            back = hs.load(path)
        except ModelFileError:
            continue
        good += any(same(back, m) for m in batch)
    return n_kills, good


needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")


@needs_fork
@pytest.mark.parametrize("kind", ["stream", "props"])
def test_kill_9_during_saves_always_leaves_a_saved_version(kind, tmp_path):
    n, good = kill_during_saves(kind, tmp_path, n_kills=8, seed=1)
    assert good == n
    # the next save cleans up whatever the killed ones left behind
    VERSIONS[kind](9).save(tmp_path / f"kill-{kind}")
    assert entries(tmp_path / f"kill-{kind}") == EXPECTED[kind]


@needs_fork
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["stream", "props"])
def test_kill_9_during_saves_many_times(kind, tmp_path):
    n, good = kill_during_saves(kind, tmp_path, n_kills=150, seed=2)
    assert good == n


# -- format version 1 ------------------------------------------------------------------------------
def write_v1(path: Path, fmt: str, doc: dict, arrays: dict) -> None:
    """A bundle as hiddenstate wrote it before version 2: ``model.json`` + ``arrays.npz``."""
    path.mkdir(parents=True)
    np.savez(path / "arrays.npz", **arrays)
    doc = {**{k: v for k, v in doc.items() if k not in ("arrays_file", "parts")},
           "format": fmt, "version": 1}
    (path / "model.json").write_text(json.dumps(doc))


def to_v1(src: Path, dst: Path) -> None:
    """Rewrite the version 2 bundle ``src`` (and its parts) in the version 1 layout."""
    doc, arrays = tamper.read(src)
    if doc["class"] == "KneserNeySource":  # version 1 and 2 sources carried their own digest
        mine = {k: doc.get(k) for k in ("class", "params", "n_symbols", "vocabulary")}
        doc["meta_sha256"] = KneserNeySource._meta_digest(mine)
    write_v1(dst, doc["format"], doc, arrays)
    for name, sub in doc["parts"].items():
        to_v1(src / sub, dst / name)


@pytest.mark.parametrize("kind", ["stream", "props"])
def test_version_1_directories_load_and_are_replaced_cleanly(kind, tmp_path):
    model = VERSIONS[kind](1)
    model.save(tmp_path / "v2")
    to_v1(tmp_path / "v2", tmp_path / "v1")
    assert "arrays.npz" in os.listdir(tmp_path / "v1")
    back = hs.load(tmp_path / "v1")
    assert same(back, model)
    # saving over a version 1 directory switches it to version 2 and removes the old files
    (tmp_path / "v1" / "notes.txt").write_text("mine")
    VERSIONS[kind](2).save(tmp_path / "v1")
    assert entries(tmp_path / "v1") == sorted(EXPECTED[kind] + ["notes.txt"])
    assert same(hs.load(tmp_path / "v1"), VERSIONS[kind](2))
    assert json.loads((tmp_path / "v1" / "model.json").read_text())["version"] == hio.VERSION


def test_the_resumed_stream_after_a_checkpoint_is_bit_identical(tmp_path):
    """A checkpoint written under the new layout resumes exactly (mid-sequence, PROPS)."""
    rng = np.random.default_rng(5)
    src = KneserNeySource(order=3).fit(rng.integers(0, W, 300), n_symbols=W)
    y = rng.integers(0, W, 200)
    whole = hs.PROPS([src], n_perturbation_states=2, random_state=0,
                     learner_options={"block": 16}).partial_fit(y)
    part = hs.PROPS([src], n_perturbation_states=2, random_state=0, learner_options={"block": 16})
    part.partial_fit(y[:77])
    part.save(tmp_path / "p")
    back = hs.load(tmp_path / "p").partial_fit(y[77:], continues=True)
    for attr in ("startprob_", "transmat_", "emissionprob_"):
        assert np.array_equal(getattr(back, attr), getattr(whole, attr)), attr

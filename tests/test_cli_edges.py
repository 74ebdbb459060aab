"""Trust at the edges of the command line (issue 21).

Output folders are written whole or not at all and never replaced by surprise; the advice
of every error works for the kind of folder it is about; words not seen in training get a
finite score by default; integer data are symbols; warnings come one line per cause; and
every subcommand but ``lm`` answers hostile input with one line on stderr, a non-zero
status and no traceback."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import NEW, TRAIN, one_error_line, run, scores, write_corpus

import hiddenstate as hs
from hiddenstate import cli, textio
from hiddenstate.textio import Vocabulary


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path)


def digest(folder: Path) -> dict[str, str]:
    """SHA-256 of every file under ``folder`` by relative path (folders as entries too)."""
    out = {}
    for p in sorted(Path(folder).rglob("*")):
        rel = str(p.relative_to(folder))
        out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


def leftovers(folder: Path) -> list[str]:
    return [n for n in os.listdir(Path(folder).parent) if n.startswith(f".{Path(folder).name}.hs-")]


@pytest.fixture
def new_text(tmp_path):
    p = tmp_path / "new.txt"
    p.write_text("\n".join(NEW) + "\n", encoding="utf-8")
    return p


def _personalize(out: Path, *extra) -> int:
    from hiddenstate import demo

    argv = ["personalize", "--reference", demo.corpus_path(), "--target", demo.target_path(),
            "--words", 300, "--eval-words", 200, "--vocab-size", 500, "--out", out,
            "--no-progress", *extra]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return cli.main([str(a) for a in argv])


@pytest.fixture(scope="module")
def pers_master(tmp_path_factory):
    """A `hiddenstate personalize` output folder (with its report when matplotlib is there),
    copied by :func:`pers` for each test that needs one."""
    out = tmp_path_factory.mktemp("pers") / "pers"
    report = [] if _has_matplotlib() else ["--no-report"]
    assert _personalize(out, *report) == 0
    return out


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture
def pers(pers_master, tmp_path):
    dest = tmp_path / "pers"
    shutil.copytree(pers_master, dest)
    return dest


# --------------------------------------------------------------------------- folders replaced


def test_fit_out_refuses_an_existing_model_folder_unless_overwrite(tmp_path, corpus, capsys):
    """`fit --out` used to overwrite any existing model folder without a word."""
    m = tmp_path / "m"
    argv = ["fit", corpus, "--n-states", 2, "--n-iter", 10, "--out", m]
    rc, _, err = run([*argv, "--random-state", 0], capsys)
    assert rc == 0, err
    before = digest(m)
    rc, out, err = run([*argv, "--random-state", 1], capsys)
    line = one_error_line(err, "fit")
    assert rc == 2 and out == "" and "--out:" in line and "pass --overwrite to replace it" in line
    assert digest(m) == before
    rc, _, err = run([*argv, "--random-state", 1, "--overwrite"], capsys)
    assert rc == 0, err
    X, lengths, vocab = textio.read_text(corpus, min_count=cli.DEFAULT_MIN_COUNT)
    ref = hs.HMM(n_states=2, n_features=len(vocab), n_iter=10, random_state=1).fit(X, lengths)
    assert np.array_equal(hs.load(m).transmat_, ref.transmat_) and digest(m) != before
    assert leftovers(m) == []
    # report --out and personalize --out follow the same rule
    r = tmp_path / "r"
    pytest.importorskip("matplotlib")
    assert run(["report", corpus, "-m", m, "--out", r], capsys)[0] == 0
    before = digest(r)
    rc, _, err = run(["report", corpus, "-m", m, "--out", r], capsys)
    assert rc == 2 and "pass --overwrite" in one_error_line(err, "report") and digest(r) == before
    assert run(["report", corpus, "-m", m, "--out", r, "--overwrite"], capsys)[0] == 0


def test_a_props_folder_is_never_replaced_and_the_advice_works(tmp_path, pers, corpus, capsys):
    """`score x.txt -m pers/props` advised `hiddenstate fit ... --out pers/props`, which
    replaced the PROPS model."""
    props = pers / "props"
    before, model = digest(pers), hs.load(props)
    rc, out, err = run(["score", corpus, "-m", props], capsys)
    line = one_error_line(err, "score")
    assert rc == 2 and out == "" and "holds a PROPS model" in line and "hiddenstate.load" in line
    advice = re.search(r"`(hiddenstate fit [^`]*)`", line).group(1)
    assert advice == "hiddenstate fit DATA --out NEW_FOLDER"
    for target, needle in ((props, "holds a PROPS model"), (pers, "holds 'evaluation.txt'")):
        for extra in ([], ["--overwrite"]):
            rc, _, err = run(["fit", corpus, "--out", target, *extra], capsys)
            assert rc == 2 and needle in one_error_line(err, "fit")
    assert digest(pers) == before
    again = hs.load(props)
    assert type(again).__name__ == "PROPS"
    assert np.array_equal(again.transmat_, model.transmat_)
    # the advice, run as written, works
    new = tmp_path / "fresh"
    argv = shlex.split(advice.replace("DATA", str(corpus)).replace("NEW_FOLDER", str(new)))
    assert run(argv[1:], capsys)[0] == 0
    assert run(["score", corpus, "-m", new], capsys)[0] == 0
    # the root of a personalize run is named as such
    rc, _, err = run(["decode", corpus, "-m", pers], capsys)
    assert rc == 2 and "is the output of `hiddenstate personalize`" in one_error_line(err, "decode")


def _folder(kind: str, tmp_path: Path, corpus: Path, capsys) -> Path:
    d = tmp_path / kind
    if kind == "empty":
        d.mkdir()
    elif kind == "saved-hmm":  # written by model.save alone
        X, lengths, vocab = textio.read_text(corpus, min_count=cli.DEFAULT_MIN_COUNT)
        hs.HMM(n_states=2, n_features=len(vocab), n_iter=3, random_state=0).fit(
            X, lengths).save(d)
    elif kind == "tampered-cli-json":
        assert run(["fit", corpus, "--out", d, "--n-iter", 3, "--random-state", 0],
                   capsys)[0] == 0
        doc = json.loads((d / "cli.json").read_text(encoding="utf-8"))
        (d / "cli.json").write_text(json.dumps({**doc, "emission": "gaussian"}))
    return d


@pytest.mark.parametrize("kind", ["missing", "empty", "saved-hmm", "tampered-cli-json"])
def test_the_advice_for_each_kind_of_model_folder_runs_as_written(tmp_path, corpus, kind,
                                                                   capsys):
    d = _folder(kind, tmp_path, corpus, capsys)
    rc, _, err = run(["score", corpus, "-m", d], capsys)
    line = one_error_line(err, "score")
    assert rc == 2
    advice = re.findall(r"`(hiddenstate fit [^`]*)`", line)
    assert len(advice) == 1, line
    new = tmp_path / "fresh"
    argv = shlex.split(advice[0].replace("DATA", str(corpus)).replace("NEW_FOLDER", str(new)))
    rc, _, err = run([*argv[1:], "--n-iter", 3], capsys)
    assert rc == 0, err
    target = Path(argv[argv.index("--out") + 1])
    rc, out, err = run(["score", corpus, "-m", target], capsys)
    assert rc == 0 and len(scores(out)) == len(TRAIN), err


def test_a_file_given_as_a_folder_is_named(tmp_path, corpus, capsys):
    f = tmp_path / "afile"
    f.write_text("x")
    rc, _, err = run(["score", corpus, "-m", f], capsys)
    assert rc == 2 and "afile: is a file, not a model folder" in one_error_line(err, "score")
    for argv, needle in (
            (["fit", corpus, "--out", f], "--out: " + str(f) + " is a file, not a folder"),
            (["fit", corpus, "--out", f / "sub"], f"--out: {f} is a file, so"),
            (["report", corpus, "-m", f, "--out", tmp_path / "r"], "is a file, not a model"),
            (["fit", corpus, "--out", tmp_path / "m", "--report", f],
             "--report: " + str(f) + " is a file")):
        rc, out, err = run(argv, capsys)
        assert rc == 2 and out == "" and needle in one_error_line(err, argv[0])
    assert f.read_text() == "x" and not (tmp_path / "m").exists()


def test_unwritable_places_are_one_clean_line(tmp_path, corpus, capsys, monkeypatch):
    """`fit --out` in a read-only folder gave a raw `[Errno 13] ...`."""
    real_mkdir = os.mkdir

    def no_permission(path, *a, **kw):
        if ".hs-new-" in str(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_mkdir(path, *a, **kw)

    monkeypatch.setattr(os, "mkdir", no_permission)
    rc, out, err = run(["fit", corpus, "--out", tmp_path / "m"], capsys)
    line = one_error_line(err, "fit")
    assert rc == 2 and f"--out: cannot write in {tmp_path} (Permission denied)" in line
    assert not (tmp_path / "m").exists()


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="file permissions do not bind root (or non-POSIX systems)")
def test_read_only_folders_for_real(tmp_path, corpus, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    assert run(["fit", corpus, "--out", ro / "m", "--n-iter", 2], capsys)[0] == 0
    ro.chmod(0o555)
    (ro / "m").chmod(0o555)
    try:
        for argv in (["fit", corpus, "--out", ro / "m2"],
                     ["fit", corpus, "--out", ro / "m", "--overwrite"]):
            rc, _, err = run(argv, capsys)
            assert rc == 2 and "--out:" in one_error_line(err, "fit")
    finally:
        ro.chmod(0o755)
        (ro / "m").chmod(0o755)


def test_a_full_disk_leaves_the_old_model(tmp_path, corpus, capsys, monkeypatch):
    m = tmp_path / "m"
    assert run(["fit", corpus, "--out", m, "--n-iter", 3, "--random-state", 0], capsys)[0] == 0
    before = digest(m)
    from hiddenstate import _bundle

    def full(path, write):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(_bundle, "_write_new", full)
    rc, _, err = run(["fit", corpus, "--out", m, "--overwrite", "--n-iter", 3], capsys)
    line = one_error_line(err, "fit")
    assert rc == 1 and f"--out: writing {m} failed (No space left on device); {m} is " \
        "unchanged" in line
    assert digest(m) == before and leftovers(m) == []


# --------------------------------------------------------------------------- Ctrl-C


def test_ctrl_c_during_personalize_leaves_the_old_folder_whole(tmp_path, pers, capsys,
                                                               monkeypatch):
    """Ctrl-C during `personalize` into an existing folder left summary.json and
    index.html of the old run beside props/ and hmm/ of the new one."""
    from hiddenstate import personalize as pipeline

    before = digest(pers)

    def interrupted(self, path):
        raise KeyboardInterrupt

    with monkeypatch.context() as mp:  # after source/, props/, hmm/ are written
        mp.setattr(pipeline.Stream, "write", interrupted)
        assert _personalize(pers, "--overwrite", "--seed", 1) == 130
    assert digest(pers) == before and leftovers(pers) == []
    assert _personalize(pers, "--overwrite", "--seed", 1, "--no-report") == 0
    after = digest(pers)
    assert "index.html" not in after  # the whole folder is the new run's
    assert json.loads((pers / "summary.json").read_text())["settings"]["seed"] == 1
    assert after["props/model.json"] != before["props/model.json"]
    # into a new folder: nothing at all
    with monkeypatch.context() as mp:
        mp.setattr(pipeline.Stream, "write", interrupted)
        assert _personalize(tmp_path / "new") == 130
    assert not (tmp_path / "new").exists() and leftovers(tmp_path / "new") == []


def test_ctrl_c_while_a_report_is_written_leaves_no_half_report(tmp_path, corpus, capsys,
                                                               monkeypatch):
    """Ctrl-C while a report was written left PNGs without index.html."""
    pytest.importorskip("matplotlib")
    from hiddenstate.report import plots

    m, r = tmp_path / "m", tmp_path / "r"
    assert run(["fit", corpus, "--out", m, "--n-iter", 3, "--report", r], capsys)[0] == 0
    before_m, before_r = digest(m), digest(r)

    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(plots, "plot_occupancy", interrupted)  # after three PNGs
    for argv in (["report", corpus, "-m", m, "--out", r, "--overwrite"],
                 ["report", corpus, "-m", m, "--out", tmp_path / "r2"],
                 ["fit", corpus, "--out", m, "--overwrite", "--report", r],
                 ["fit", corpus, "--out", tmp_path / "m3", "--report", tmp_path / "r3"]):
        rc, out, err = run(argv, capsys)
        assert rc == 130 and out == "" and err.strip().endswith("interrupted")
    assert digest(m) == before_m and digest(r) == before_r
    for p in (tmp_path / "r2", tmp_path / "m3", tmp_path / "r3"):
        assert not p.exists() and leftovers(p) == []


@pytest.mark.parametrize("exchange", [True, False])
def test_the_switch_is_old_or_new_never_a_mix(tmp_path, monkeypatch, exchange):
    """The folder switch itself, with the atomic exchange and with the two-rename
    fallback; a failing second rename puts the old folder back."""
    from hiddenstate import _outdir

    if not exchange:
        monkeypatch.setattr(_outdir, "_exchange", lambda a, b: False)
    target = tmp_path / "out"
    target.mkdir()
    (target / "a.txt").write_text("old")

    def staged():
        return _outdir.stage(target, option="--out", writes=lambda n: n.endswith(".txt"),
                             what="text files", overwrite=True)

    with staged() as st:
        (st.path / "b.txt").write_text("new")
        assert digest(target) == {"a.txt": hashlib.sha256(b"old").hexdigest()}
        st.commit()
    assert sorted(os.listdir(target)) == ["b.txt"] and leftovers(target) == []
    if not exchange:
        real_rename = os.rename
        calls = []

        def second_fails(a, b):
            calls.append((a, b))
            if len(calls) == 2:
                raise OSError(errno.EIO, "Input/output error", str(b))
            return real_rename(a, b)

        with staged() as st:
            (st.path / "c.txt").write_text("newer")
            monkeypatch.setattr(os, "rename", second_fails)
            with pytest.raises(_outdir.OutputError, match="is unchanged"):
                st.commit()
            monkeypatch.setattr(os, "rename", real_rename)
        assert sorted(os.listdir(target)) == ["b.txt"] and leftovers(target) == []


# --------------------------------------------------------------------------- unknown words


def test_words_unseen_in_training_get_a_finite_score_by_default(tmp_path, corpus, new_text,
                                                                capsys):
    """Unseen words gave -inf (score) and exit 2 (decode) by default."""
    m = tmp_path / "m"
    rc, _, err = run(["fit", corpus, "--n-states", 3, "--n-iter", 20, "--random-state", 1,
                      "--out", m], capsys)
    assert rc == 0 and err == ""
    vocab = Vocabulary.build([s.split() for s in TRAIN], min_count=cli.DEFAULT_MIN_COUNT)
    assert Vocabulary.load(m / "vocabulary.json") == vocab
    X, lengths = textio.encode_sequences([s.split() for s in NEW], vocab)
    assert np.sum(X == vocab.unk_id) == 3  # café, zürich and "met" (seen once)
    Xt, Lt = textio.encode_sequences([s.split() for s in TRAIN], vocab)
    ref = hs.HMM(n_states=3, n_features=len(vocab), n_iter=20, random_state=1).fit(Xt, Lt)
    rc, out, err = run(["score", new_text, "-m", m], capsys)
    want = [float(v) for v in ref.score_samples(X, lengths)]
    assert rc == 0 and err == "" and scores(out) == want and all(map(math.isfinite, want))
    rc, out, err = run(["decode", new_text, "-m", m], capsys)
    _, states = ref.decode(X, lengths)
    assert rc == 0 and [int(k) for k in out.split()] == states.tolist()


def test_unseen_words_score_finitely_whatever_the_counts(tmp_path, corpus, new_text, capsys):
    # --min-count 1 and a corpus whose every word is frequent: nothing became <unk>, so the
    # fit reserves V / (N + V) for it; with the default --min-count on the plain corpus the
    # rare words stand for the unseen ones and nothing is reserved
    m = tmp_path / "m"
    often = tmp_path / "often.txt"
    often.write_text("\n".join(TRAIN * cli.DEFAULT_MIN_COUNT) + "\n", encoding="utf-8")
    for text, extra, reserved in ((corpus, ["--min-count", 1], True), (often, [], True),
                                  (corpus, [], False)):
        rc, out, err = run(["fit", text, "--n-states", 2, "--n-iter", 10, "--random-state", 0,
                            "--out", m, "--overwrite", *extra], capsys)
        assert rc == 0 and err == ""
        _, meta, vocab = cli.load_model_dir(m)
        assert (meta["unseen_probability"] > 0) == reserved
        assert ("unseen words:" in out) == reserved
        rc, out, err = run(["score", new_text, "-m", m], capsys)
        assert rc == 0 and err == "" and all(map(math.isfinite, scores(out)))


def test_an_integer_npy_is_fitted_as_symbols(tmp_path, capsys):
    """An integer .npy was fitted with Gaussian emissions (a density on the symbols)."""
    X = np.random.default_rng(0).integers(0, 4, size=300)
    np.save(tmp_path / "x.npy", X)
    rc, out, err = run(["fit", tmp_path / "x.npy", "--n-states", 3, "--n-iter", 20,
                        "--random-state", 0, "--out", tmp_path / "m"], capsys)
    assert rc == 0, err
    assert "3-state categorical HMM" in out and "--emission poisson for counts" in out
    ref = hs.HMM(n_states=3, n_iter=20, random_state=0).fit(X[:, None])  # the Python default
    model = hs.load(tmp_path / "m")
    assert model.emission == ref.emission == "categorical"
    assert model.score(X[:, None]) == ref.score(X[:, None])
    assert f"log-likelihood: {ref.score(X[:, None]):.6f}" in out
    # floats stay Gaussian; several integer columns are refused, naming --emission
    np.save(tmp_path / "f.npy", X.astype(float) + 0.5)
    assert run(["fit", tmp_path / "f.npy", "--n-iter", 3, "--out", tmp_path / "g"],
               capsys)[0] == 0
    assert hs.load(tmp_path / "g").emission == "gaussian"
    np.save(tmp_path / "two.npy", np.stack([X, X], axis=1))
    rc, _, err = run(["fit", tmp_path / "two.npy", "--out", tmp_path / "t"], capsys)
    assert rc == 2 and "--emission poisson" in one_error_line(err, "fit")


def test_warnings_come_one_line_per_cause(tmp_path, capsys):
    """A Gaussian fit of 6 states on 4 values leaves states without mass at many
    iterations: the library issues one warning per cause for the whole fit (naming the
    iterations; ``hiddenstate.learn.FitWarnings``), and the command line prints exactly
    those, one line each."""
    X = np.random.default_rng(0).integers(0, 4, size=(500, 1)).astype(float)
    np.save(tmp_path / "x.npy", X)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hs.HMM(n_states=6, emission="gaussian", random_state=0).fit(X)
    causes = {(w.category.__name__, w.filename, w.lineno) for w in caught}
    assert len(caught) == len(causes) >= 1  # one per cause already
    assert all(re.search(r"in \d+ of \d+ iterations", str(w.message)) for w in caught)
    rc, _, err = run(["fit", tmp_path / "x.npy", "--n-states", 6, "--random-state", 0,
                      "--out", tmp_path / "m"], capsys)
    lines = err.strip().splitlines()
    assert rc == 0 and len(lines) == len(causes), err
    assert all(line.startswith("hiddenstate fit: warning: ") for line in lines)
    named = sorted(re.search(r"\((\w+Warning)", line).group(1) for line in lines)
    assert named == sorted(c[0] for c in causes)


def test_repeated_warnings_of_one_cause_print_one_line(capsys):
    """Warnings the library does not collect itself (several calls in one command): one
    line per class and line of code, the last message and the count."""
    from hiddenstate.cli import _print_warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(3):
            warnings.warn(f"first cause {i}", UserWarning, stacklevel=1)
        warnings.warn("second cause", FutureWarning, stacklevel=1)
    _print_warnings("fit", caught)
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == ["hiddenstate fit: warning: first cause 2 (UserWarning; 3 times, the last "
                     "shown)", "hiddenstate fit: warning: second cause (FutureWarning)"]


# --------------------------------------------------------------------------- hostile input


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A folder of bad files and two small models (text, integer npy)."""
    d = tmp_path_factory.mktemp("hostile")
    (d / "text.txt").write_text("\n".join(TRAIN) + "\n", encoding="utf-8")
    (d / "folder.txt").mkdir()
    (d / "emptydir").mkdir()
    (d / "foreign").mkdir()
    (d / "foreign" / "notes.txt").write_text("mine")
    (d / "afile").write_text("x")
    (d / "empty.txt").write_bytes(b"")
    (d / "empty.csv").write_bytes(b"# nothing\n")
    np.save(d / "empty.npy", np.zeros(0))
    (d / "garbage.txt").write_bytes(bytes(range(128, 256)) * 3)
    (d / "garbage.npy").write_bytes(b"\x01\x02 not numpy at all" * 10)
    with open(d / "truncated.npy", "wb") as fh:
        np.lib.format.write_array_header_1_0(
            fh, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)})
        fh.write(b"\0" * 64)
    np.save(d / "object.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    np.savez(d / "archive.npz", a=np.zeros(3))
    shutil.copy(d / "archive.npz", d / "archive.npy")
    np.save(d / "nan.npy", np.array([1.0, np.nan, 2.0]))
    (d / "inf.csv").write_text("1\ninf\n")
    (d / "latin.txt").write_bytes("le café de zürich\n".encode("latin-1"))
    (d / "utf16le.txt").write_bytes("the cat sat\n".encode("utf-16-le"))
    ints = np.random.default_rng(0).integers(0, 3, size=40)
    np.save(d / "ints.npy", ints)
    np.save(d / "ints2.npy", np.stack([ints, ints], axis=1))
    np.save(d / "big-symbol.npy", np.array([0, 1, 9]))
    (d / "neg.txt").write_text("41 -1\n")
    (d / "short.txt").write_text("10 10\n")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(["fit", str(d / "text.txt"), "--out", str(d / "tm"), "--n-iter", "3",
                         "--random-state", "0"]) == 0
        assert cli.main(["fit", str(d / "ints.npy"), "--out", str(d / "im"), "--n-iter", "3",
                         "--random-state", "0"]) == 0
    for name in ("tampered-json", "tampered-npz"):
        shutil.copytree(d / "tm", d / name)
    doc = json.loads((d / "tampered-json" / "model.json").read_text())
    doc["params"]["n_states"] = 7
    (d / "tampered-json" / "model.json").write_text(json.dumps(doc))
    npz = next((d / "tampered-npz").glob("arrays.*.npz"))
    with zipfile.ZipFile(npz) as zf:  # the last byte of the emission matrix's data
        info = zf.getinfo("emissionprob_.npy")
    end = info.header_offset + 30 + len(info.filename) + len(info.extra) + info.file_size
    raw = bytearray(npz.read_bytes())
    raw[end - 1] ^= 0xFF
    npz.write_bytes(bytes(raw))
    return d


def _ref() -> str:
    from hiddenstate import demo

    return str(demo.corpus_path())


def _tgt() -> str:
    from hiddenstate import demo

    return str(demo.target_path())


PERS = "personalize --reference {ref} --target {tgt} --words 300 --no-report --out {d}/o"
BAD = [
    # fit: files
    ("fit {d}/missing.txt --out {d}/o", "missing.txt: file not found"),
    ("fit {d}/folder.txt --out {d}/o", "folder.txt: is a folder, not a file"),
    ("fit {d}/folder.txt --format npy --out {d}/o", "folder.txt: is a folder, not a file"),
    ("fit {d}/empty.txt --out {d}/o", "empty.txt: empty (no tokens)"),
    ("fit {d}/empty.csv --out {d}/o", "empty.csv: empty (no numeric rows)"),
    ("fit {d}/empty.npy --out {d}/o", "empty.npy: empty (0 rows)"),
    ("fit {d}/garbage.txt --out {d}/o", "garbage.txt: not utf-8 text (line 1, byte 0x80)"),
    ("fit {d}/garbage.npy --out {d}/o", "garbage.npy: not a .npy file"),
    ("fit {d}/truncated.npy --out {d}/o", "truncated.npy: truncated: its header says shape"),
    ("fit {d}/object.npy --out {d}/o", "needs pickle, which hiddenstate never runs"),
    ("fit {d}/archive.npy --out {d}/o", "archive.npy: is a .npz archive"),
    ("fit {d}/nan.npy --out {d}/o", "nan.npy: contains NaN or inf (first in row 1)"),
    ("fit {d}/inf.csv --out {d}/o", "inf.csv, line 2, column 1: infinite value"),
    ("fit {d}/latin.txt --out {d}/o", "--encoding latin-1"),
    ("fit {d}/utf16le.txt --out {d}/o", "--encoding utf-16-le"),
    ("fit {d}/ints.npy --lengths {d}/folder.txt --out {d}/o", "is a folder, not a lengths"),
    ("fit {d}/ints.npy --lengths {d}/missing.txt --out {d}/o", "lengths file not found"),
    ("fit {d}/ints.npy --lengths {d}/neg.txt --out {d}/o", "neg.txt: length 1 is -1"),
    ("fit {d}/ints.npy --lengths {d}/short.txt --out {d}/o", "lengths add up to 20 but"),
    ("fit {d}/ints2.npy --out {d}/o", "2 columns of integers; pass --emission poisson"),
    # fit: the output
    ("fit {d}/text.txt --out {d}/afile", "--out: {d}/afile is a file, not a folder"),
    ("fit {d}/text.txt --out {d}/afile/m", "--out: {d}/afile is a file, so"),
    ("fit {d}/text.txt --out {d}/foreign --overwrite", "holds 'notes.txt', which is not"),
    ("fit {d}/text.txt --out {d}/tm", "--out: {d}/tm already holds a model"),
    ("fit {d}/text.txt --out {d}/o --report {d}/o/r", "pass two separate folders"),
    # fit: options
    ("fit {d}/text.txt --out {d}/o --n-states -1", "argument --n-states: expected an integer"),
    ("fit {d}/text.txt --out {d}/o --n-states 0", "argument --n-states: expected an integer"),
    ("fit {d}/text.txt --out {d}/o --n-iter 0", "argument --n-iter"),
    ("fit {d}/text.txt --out {d}/o --n-init -2", "argument --n-init"),
    ("fit {d}/text.txt --out {d}/o --tol nan", "argument --tol: expected a number, got nan"),
    ("fit {d}/text.txt --out {d}/o --random-state -1", "argument --random-state"),
    ("fit {d}/text.txt --out {d}/o --max-vocab 1", "argument --max-vocab"),
    ("fit {d}/text.txt --out {d}/o --min-count 0", "argument --min-count"),
    ("fit {d}/text.txt --out {d}/o --min-count two", "argument --min-count"),
    ("fit {d}/text.txt --out {d}/o --encoding klingon", "unknown text encoding 'klingon'"),
    ("fit {d}/text.txt --out {d}/o --transmat-prior nan", "argument --transmat-prior"),
    ("fit {d}/text.txt --out {d}/o --learn map --transmat-prior inf", "must be finite"),
    ("fit {d}/text.txt --out {d}/o --n-states 1000000", "n_states: "),
    ("fit {d}/text.txt --out {d}/o --n-mix 0", "argument --n-mix"),
    ("fit {d}/text.txt --out {d}/o --k-best 0", "argument --k-best"),
    ("fit {d}/text.txt --out {d}/o --format bogus", "argument --format: invalid choice"),
    ("fit {d}/ints.npy --out {d}/o --min-count 2", "--max-vocab/--min-count: only apply"),
    ("fit {d}/text.txt", "the following arguments are required: --out"),
    # score / decode
    ("score {d}/text.txt -m {d}/missing", "missing: model directory not found"),
    ("score {d}/text.txt -m {d}/afile", "afile: is a file, not a model folder"),
    ("score {d}/text.txt -m {d}/emptydir", "emptydir: is empty"),
    ("score {d}/text.txt -m {d}/foreign", "foreign: holds no model"),
    ("score {d}/text.txt -m {d}/tampered-json", "tampered-json/model.json: "),
    ("decode {d}/text.txt -m {d}/tampered-npz", "tampered-npz/arrays."),
    ("decode {d}/garbage.txt -m {d}/tm", "not utf-8 text"),
    ("decode {d}/folder.txt -m {d}/tm", "is a folder, not a file"),
    ("score {d}/empty.txt -m {d}/tm", "empty (no tokens)"),
    ("decode {d}/big-symbol.npy -m {d}/im", "big-symbol.npy: X:"),
    ("score {d}/text.txt -m {d}/im", "reads numbers"),
    ("decode {d}/text.txt -m {d}/tm --algorithm bogus", "argument --algorithm"),
    # sample
    ("sample -m {d}/tm -n 0", "argument --n-samples/-n: expected an integer >= 1"),
    ("sample -m {d}/tm -n -3", "argument --n-samples/-n"),
    ("sample -m {d}/tm --n-sequences 0", "argument --n-sequences"),
    ("sample -m {d}/tm -n 10000000000000", "n_samples: "),
    ("sample -m {d}/tm --n-sequences 10000000000000 --random-state 1", "--n-sequences: "),
    ("sample -m {d}/tm --random-state -1", "argument --random-state"),
    ("sample -m {d}/tampered-npz", "tampered-npz/arrays."),
    # report
    ("report {d}/text.txt -m {d}/tm --out {d}/afile", "--out: {d}/afile is a file"),
    ("report {d}/text.txt -m {d}/tm --out {d}/foreign --overwrite", "holds 'notes.txt'"),
    ("report {d}/text.txt -m {d}/tm --out {d}/tm/r", "--out: {d}/tm/r is --model or inside"),
    ("report {d}/text.txt -m {d}/missing --out {d}/o", "model directory not found"),
    # personalize
    (PERS.replace("{tgt}", "{d}/missing.txt"), "--target: {d}/missing.txt: file not found"),
    (PERS.replace("{tgt}", "{d}/garbage.txt"), "--target: {d}/garbage.txt: not utf-8"),
    (PERS.replace("{tgt}", "{d}/empty.txt"), "--target: {d}/empty.txt: empty"),
    (PERS.replace("{ref}", "{d}/folder.txt"), "--reference: {d}/folder.txt: is a folder"),
    (PERS.replace("300", "0"), "argument --words"),
    (PERS.replace("300", "100000000"), "--words: the target has only"),
    (PERS + " --vocab-size 1", "argument --vocab-size"),
    (PERS + " --seed -1", "argument --seed"),
    (PERS + " --order 0", "argument --order"),
    (PERS.replace("{d}/o", "{d}/afile"), "--out: {d}/afile is a file"),
    (PERS.replace("{d}/o", "{d}/foreign") + " --overwrite", "holds 'notes.txt'"),
    (PERS.replace("{d}/o", "{d}/tm") + " --overwrite", "holds 'arrays."),
    (PERS.replace("--reference {ref} ", "") + " --load-source {d}/emptydir",
     "--load-source: "),
]


@pytest.mark.parametrize("template, needle", BAD, ids=[b[0][:60] for b in BAD])
def test_hostile_input_is_one_line_and_a_nonzero_status(hostile, capsys, template, needle):
    d = hostile
    fill = {"d": d, "ref": _ref(), "tgt": _tgt()}
    argv = shlex.split(template.format(**fill))
    before = sorted(os.listdir(d))
    rc, out, err = run(argv, capsys)
    line = one_error_line(err, argv[0])
    assert rc == 2 and out == ""
    assert needle.format(**fill) in line
    assert sorted(os.listdir(d)) == before  # nothing written, no leftovers


def test_huge_inputs_are_refused_before_they_are_read(tmp_path, capsys):
    """A 64 GiB text file (sparse: no disk used) and a 64 GiB .npy are refused before a
    byte is read, by the memory check (this machine has less than 64 GiB x 16 free)."""
    big = tmp_path / "big.txt"
    with open(big, "wb") as fh:
        fh.truncate(64 << 30)
    rc, _, err = run(["fit", big, "--out", tmp_path / "m"], capsys)
    line = one_error_line(err, "fit")
    assert rc == 2 and "big.txt: reading 65,536 MiB of text" in line and "split it" in line
    npy = tmp_path / "big.npy"
    with open(npy, "wb") as fh:
        np.lib.format.write_array_header_1_0(
            fh, {"descr": "<f8", "fortran_order": False, "shape": (8 << 30,)})
        fh.truncate(fh.tell() + (64 << 30))
    rc, _, err = run(["fit", npy, "--out", tmp_path / "m"], capsys)
    line = one_error_line(err, "fit")
    assert rc == 2 and "big.npy: reading the data" in line and "memory" in line
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("encoding, expected", [
    ("utf-16", "utf-16"), ("utf-16-le", "utf-16-le"), ("utf-16-be", "utf-16-be"),
    ("cp1252", "cp1252"), ("latin-1", "latin-1")])
def test_the_encoding_advice_reads_the_words_right(tmp_path, corpus, capsys, encoding,
                                                   expected):
    words = "the “café” sat … on the mat" if encoding == "cp1252" else "the café sat on zürich"
    path = tmp_path / "x.txt"
    path.write_bytes((words + "\n").encode(encoding))
    rc, _, err = run(["fit", path, "--out", tmp_path / "m"], capsys)
    line = one_error_line(err, "fit")
    advised = re.search(r"--encoding ([a-z0-9-]+)", line).group(1)
    assert rc == 2 and advised == expected
    assert textio.read_text_sequences(path, advised) == [words.split()]


@pytest.mark.parametrize("command", ["score", "decode"])
def test_a_closed_pipe_ends_score_and_decode_quietly(tmp_path, command):
    """`hiddenstate decode big.txt -m M | head -1`: status 141, nothing on stderr."""
    text = tmp_path / "t.txt"
    text.write_text("\n".join(TRAIN * 3000) + "\n", encoding="utf-8")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(["fit", str(text), "--out", str(tmp_path / "m"), "--n-iter", "2"]) == 0
    proc = subprocess.Popen([sys.executable, "-m", "hiddenstate", command, str(text), "-m",
                             str(tmp_path / "m")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == ""


def test_every_report_file_is_declared(tmp_path, corpus, capsys):
    """The files the reports write are the ones an existing report folder may hold (what
    --overwrite may replace)."""
    pytest.importorskip("matplotlib")
    from hiddenstate.report import REPORT_FILES

    rng = np.random.default_rng(0)
    np.save(tmp_path / "g.npy", rng.normal(size=(60, 2)))
    np.save(tmp_path / "p.npy", rng.poisson(3.0, size=(60, 2)))
    runs = [(corpus, []), (tmp_path / "g.npy", []),
            (tmp_path / "p.npy", ["--emission", "poisson"]),
            (tmp_path / "p.npy", ["--emission", "multinomial"])]
    seen = set()
    for i, (data, extra) in enumerate(runs):
        rc, _, err = run(["fit", data, "--out", tmp_path / f"m{i}", "--n-iter", 2,
                          "--report", tmp_path / f"r{i}", *extra], capsys)
        assert rc == 0, err
        seen |= set(os.listdir(tmp_path / f"r{i}"))
    assert seen <= REPORT_FILES and len(seen) >= 7

"""Can the command line be trusted? Every subcommand against the library on the same data,
and against hostile input: encodings, byte-order marks, line ends, binary files, wrong
formats, unknown words, data of probability zero, model directories without or with a
tampered ``cli.json`` / ``vocabulary.json``."""

from __future__ import annotations

import io
import json
import math
import re
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import NEW, TRAIN, one_error_line, run, scores, write_corpus

import hiddenstate as hs
from hiddenstate import cli, textio
from hiddenstate.errors import InvalidInputError
from hiddenstate.textio import Vocabulary

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path)


@pytest.fixture
def model_dir(tmp_path, corpus, capsys):
    """A text model with an unknown-word policy (--min-count 2: rare words are <unk>)."""
    out = tmp_path / "m"
    rc, _, err = run(["fit", corpus, "--n-states", 3, "--out", out, "--random-state", 1,
                      "--n-iter", 20, "--min-count", 2], capsys)
    assert rc == 0, err
    return out


def library(corpus, model_dir):
    """The model as the library has it, and the vocabulary the library builds."""
    X, lengths, vocab = textio.read_text(corpus, min_count=2)
    ref = hs.HMM(n_states=3, emission="categorical", n_features=len(vocab), n_iter=20,
                 random_state=1).fit(X, lengths)
    return ref, vocab


# --------------------------------------------------------------------------- the README


def test_readme_command_lines_run_as_written(tmp_path, monkeypatch, capsys):
    """The four lines of the README's "Command line" section, literally."""
    pytest.importorskip("matplotlib")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Command line\s+```bash\n(.*?)```", readme, re.S).group(1)
    lines = [line for line in block.splitlines() if line.strip()]
    assert len(lines) == 4 and all(line.startswith("hiddenstate ") for line in lines)
    monkeypatch.chdir(tmp_path)
    Path("corpus.txt").write_text("\n".join(TRAIN * 3) + "\n", encoding="utf-8")
    outputs = []
    for line in lines:
        rc, out, err = run(shlex.split(line)[1:], capsys)
        assert rc == 0, f"{line}: {err}"
        outputs.append(out)
    model = hs.load("model")
    X, lengths, _ = textio.read_text("corpus.txt", Vocabulary.load("model/vocabulary.json"))
    assert sum(scores(outputs[1])) == pytest.approx(model.score(X, lengths), abs=1e-9)
    _, states = model.decode(X, lengths)
    decoded = [int(k) for line in outputs[2].splitlines() for k in line.split()]
    assert decoded == states.tolist()
    assert len(outputs[3].split()) == 20 and Path("report/index.html").is_file()


# --------------------------------------------------------------------------- against the library


def test_every_subcommand_matches_the_library(tmp_path, corpus, model_dir, capsys):
    ref, vocab = library(corpus, model_dir)
    model = hs.load(model_dir)
    np.testing.assert_array_equal(model.transmat_, ref.transmat_)
    np.testing.assert_array_equal(model.emissionprob_, ref.emissionprob_)
    new = tmp_path / "new.txt"
    new.write_text("\n".join(NEW) + "\n", encoding="utf-8")
    X, lengths = textio.encode_sequences([s.split() for s in NEW], vocab)
    assert np.sum(X == vocab.unk_id) == 3  # café, zürich and "met" (seen once): <unk>

    rc, out, err = run(["score", new, "--model", model_dir], capsys)
    assert rc == 0 and err == ""
    assert scores(out) == [float(v) for v in ref.score_samples(X, lengths)]

    for algorithm in ("viterbi", "map"):
        rc, out, _ = run(["decode", new, "-m", model_dir, "--algorithm", algorithm], capsys)
        assert rc == 0
        _, states = ref.decode(X, lengths, algorithm=algorithm)
        assert [int(k) for k in out.split()] == states.tolist()

    rc, out, _ = run(["sample", "-m", model_dir, "-n", 12, "--random-state", 5], capsys)
    Xs, _ = ref.sample(12, random_state=5)
    assert out.split() == vocab.decode(Xs[:, 0])

    pytest.importorskip("matplotlib")
    rc, out, err = run(["report", new, "-m", model_dir, "--out", tmp_path / "rep"], capsys)
    assert rc == 0, err
    html = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    ll = ref.score(X, lengths)
    assert f"<td>final log-likelihood</td><td>{ll:.10g}</td>" in html


def test_personalize_command_matches_the_library(tmp_path, capsys):
    from hiddenstate import demo
    from hiddenstate.personalize import personalize

    ref, tgt = demo.corpus_path(), demo.target_path()
    kw = dict(words=300, eval_words=200, vocab_size=500)
    lib = personalize(ref, tgt, tmp_path / "lib", **kw)
    rc, out, err = run(["personalize", "--reference", ref, "--target", tgt, "--words", 300,
                        "--eval-words", 200, "--vocab-size", 500, "--out", tmp_path / "cli",
                        "--no-report", "--no-progress"], capsys)
    assert rc == 0, err
    summary = json.loads((tmp_path / "cli" / "summary.json").read_text(encoding="utf-8"))
    assert summary["models"] == json.loads(json.dumps(lib.summary["models"]))
    assert f"{lib.summary['models']['props']['evaluation']['perplexity']:.1f}" in out


# --------------------------------------------------------------------------- text input


def test_bom_crlf_blank_lines_and_a_long_line_read_like_plain_text(tmp_path, model_dir, capsys):
    plain = tmp_path / "plain.txt"
    plain.write_text("\n".join(NEW) + "\n", encoding="utf-8")
    rc, want, _ = run(["score", plain, "-m", model_dir], capsys)
    assert rc == 0
    variants = {
        "bom.txt": b"\xef\xbb\xbf" + "\n".join(NEW).encode() + b"\n",
        "crlf.txt": "\r\n".join(NEW).encode() + b"\r\n",
        "cr.txt": "\r".join(NEW).encode(),
        "blank.txt": ("\n\n  \n" + "\n\n".join(NEW) + "\n\n").encode(),
        "bom16.txt": "\n".join(NEW).encode("utf-16"),
    }
    for name, data in variants.items():
        (tmp_path / name).write_bytes(data)
        extra = ["--encoding", "utf-16"] if "16" in name else []
        rc, got, err = run(["score", tmp_path / name, "-m", model_dir, *extra], capsys)
        assert rc == 0 and got == want, (name, err)
    # the first token of a file with a byte-order mark is the word, not "\ufeffthe"
    X, _, _ = textio.read_text(tmp_path / "bom.txt", hs_vocab(model_dir))
    assert X[0, 0] == hs_vocab(model_dir).id_of("the") != 0
    # a form feed is whitespace inside a line, not a line break
    (tmp_path / "ff.txt").write_text("the cat\x0csat .\n", encoding="utf-8")
    assert textio.read_text_sequences(tmp_path / "ff.txt") == [["the", "cat", "sat", "."]]
    # one very long line: one sequence, scored like the library
    long = tmp_path / "long.txt"
    words = (TRAIN[0] + " ") * 20000
    long.write_text(words + "\n", encoding="utf-8")
    rc, out, _ = run(["score", long, "-m", model_dir, "--json"], capsys)
    vocab = hs_vocab(model_dir)
    X, lengths = textio.encode_sequences([words.split()], vocab)
    res = json.loads(out)
    assert rc == 0 and res["n_observations"] == 140000 and res["n_sequences"] == 1
    assert res["total"] == pytest.approx(hs.load(model_dir).score(X, lengths), rel=1e-12)


def test_stdin_is_read_as_bytes_with_the_same_rules(model_dir, monkeypatch, capsys):
    plain = "\n".join(NEW) + "\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(plain.encode())))
    rc, want, _ = run(["score", "-", "-m", model_dir], capsys)
    data = b"\xef\xbb\xbf" + plain.replace("\n", "\r\n").encode("latin-1")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    rc2, got, err = run(["score", "-", "-m", model_dir, "--encoding", "latin-1"], capsys)
    # latin-1 decodes the UTF-8 byte-order mark as three characters, not as a mark
    assert rc == 0 and rc2 == 0 and got != want
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xef\xbb\xbf" +
                                                                   plain.encode())))
    rc2, got, err = run(["score", "-", "-m", model_dir], capsys)
    assert rc2 == 0 and got == want
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(plain.encode("latin-1"))))
    rc2, _, err = run(["score", "-", "-m", model_dir], capsys)
    assert rc2 == 2 and "<stdin>: not utf-8 text (line 1, byte 0xe9)" in err


def test_json_files_edited_with_a_byte_order_mark_still_load(model_dir, corpus, capsys):
    for name in ("cli.json", "vocabulary.json"):
        path = model_dir / name
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    rc, out, err = run(["score", corpus, "-m", model_dir], capsys)
    assert rc == 0 and err == "" and len(scores(out)) == len(TRAIN)


def hs_vocab(model_dir) -> Vocabulary:
    return Vocabulary.load(Path(model_dir) / "vocabulary.json")


def test_other_encodings_are_named_not_garbled(tmp_path, model_dir, capsys):
    latin = tmp_path / "latin.txt"
    latin.write_bytes("\n".join(NEW).encode("latin-1"))
    for command in (["score"], ["decode"]):
        rc, _, err = run([*command, latin, "-m", model_dir], capsys)
        line = one_error_line(err, command[0])
        assert rc == 2 and "latin.txt: not utf-8 text (line 1, byte 0xe9)" in line
        assert "--encoding" in line
    rc, out, _ = run(["score", latin, "-m", model_dir, "--encoding", "latin-1"], capsys)
    utf8 = tmp_path / "utf8.txt"
    utf8.write_text("\n".join(NEW), encoding="utf-8")
    assert rc == 0 and out == run(["score", utf8, "-m", model_dir], capsys)[1]
    rc, _, err = run(["score", latin, "-m", model_dir, "--encoding", "klingon"], capsys)
    assert rc == 2 and "unknown text encoding 'klingon'" in err
    # fit and personalize read with --encoding too
    rc, _, err = run(["fit", latin, "--out", tmp_path / "f"], capsys)
    assert rc == 2 and "--encoding" in one_error_line(err, "fit")
    rc, _, err = run(["fit", latin, "--out", tmp_path / "f", "--encoding", "latin-1",
                      "--n-iter", 2, "--min-count", 1], capsys)
    assert rc == 0, err
    assert "café" in hs_vocab(tmp_path / "f").tokens


@pytest.mark.parametrize("content, needle", [
    (b"", "empty (no tokens)"),
    (b"\n \n\t\n", "empty (no tokens)"),
    (b"\x00\x01\x02binary\x00", "NUL character"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not utf-8 text"),
    (b"\x93NUMPY\x01\x00v\x00{'descr': '<f8'}", "--format npy"),
])
@pytest.mark.parametrize("command", ["fit", "score", "decode", "report"])
def test_empty_and_binary_files_exit_2(tmp_path, model_dir, capsys, content, needle, command):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(content)
    argv = ([command, bad, "--out", tmp_path / "o"] if command == "fit"
            else [command, bad, "-m", model_dir])
    if command == "report":
        argv += ["--out", tmp_path / "r"]
    rc, out, err = run(argv, capsys)
    assert rc == 2 and out == ""
    assert needle in one_error_line(err, command)


def test_personalize_hostile_texts(tmp_path, capsys):
    from hiddenstate import demo

    ref = demo.corpus_path()
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    latin = tmp_path / "latin.txt"
    latin.write_bytes(("café au lait " * 200).encode("latin-1"))
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"\x00" * 100)
    for target, needle in ((empty, "--target: " + str(empty) + ": empty"),
                           (latin, "--target: " + str(latin) + ": not utf-8 text"),
                           (binary, "NUL character")):
        rc, _, err = run(["personalize", "--reference", ref, "--target", target, "--out",
                          tmp_path / "o", "--words", 100, "--no-report"], capsys)
        assert rc == 2 and needle in one_error_line(err, "personalize")
    rc, _, err = run(["personalize", "--reference", ref, "--target", latin, "--out",
                      tmp_path / "o", "--words", 300, "--no-report", "--encoding", "latin-1",
                      "--vocab-size", 300], capsys)
    assert rc == 0, err
    words = (tmp_path / "o" / "personalisation.txt").read_text(encoding="utf-8").split()
    assert words[:2] == ["café", "au"]


# --------------------------------------------------------------------------- formats


def test_wrong_formats_are_refused_both_ways(tmp_path, model_dir, capsys):
    csv = tmp_path / "x.csv"
    csv.write_text("0\n1\n2\n")
    for argv in (["score", csv], ["decode", csv], ["score", tmp_path / "t.txt", "--format",
                                                   "csv"]):
        (tmp_path / "t.txt").write_text("the cat\n")
        rc, _, err = run([*argv, "-m", model_dir], capsys)
        line = one_error_line(err, argv[0])
        assert rc == 2 and "reads text" in line and "cli.json" in line
    np.save(tmp_path / "g.npy", np.random.default_rng(0).normal(size=(40, 2)))
    rc, _, err = run(["fit", tmp_path / "g.npy", "--out", tmp_path / "g", "--n-iter", 3,
                      "--random-state", 0], capsys)
    assert rc == 0, err
    for argv in (["score", tmp_path / "t.txt"], ["decode", tmp_path / "t.txt"],
                 ["score", csv, "--format", "text"]):
        rc, _, err = run([*argv, "-m", tmp_path / "g"], capsys)
        line = one_error_line(err, argv[0])
        assert rc == 2 and "is text" in line and "reads numbers" in line
    # CSV and npy are both numbers: a model fitted on .npy scores the same data as CSV
    X = np.load(tmp_path / "g.npy")
    (tmp_path / "g.csv").write_text("".join(f"{a!r},{b!r}\n" for a, b in X.tolist()))
    rc, out, _ = run(["score", tmp_path / "g.csv", "-m", tmp_path / "g", "--json"], capsys)
    assert rc == 0 and json.loads(out)["total"] == hs.load(tmp_path / "g").score(X)


# --------------------------------------------------------------------------- unknown words, p = 0


def test_unknown_words_with_min_count_1_are_shown_and_scored(tmp_path, corpus, capsys):
    """--min-count 1: no training word is <unk>, so <unk> gets the Witten-Bell share in
    every state: new text scores finitely, decode and report work, and the new words are
    shown as written, marked."""
    rc, out, err = run(["fit", corpus, "--n-states", 2, "--out", tmp_path / "m",
                        "--random-state", 0, "--n-iter", 5, "--min-count", 1], capsys)
    assert rc == 0 and err == ""
    _, meta, vocab = cli.load_model_dir(tmp_path / "m")
    n_types, n_tokens = len(vocab) - 1, sum(len(t.split()) for t in TRAIN)
    assert meta["unseen_probability"] == pytest.approx(n_types / (n_tokens + n_types))
    new = tmp_path / "new.txt"
    new.write_text("the cat sat .\n" + NEW[0] + "\n", encoding="utf-8")
    rc, out, err = run(["score", new, "-m", tmp_path / "m"], capsys)
    assert rc == 0 and err == "" and all(map(math.isfinite, scores(out)))
    rc, out, err = run(["decode", new, "-m", tmp_path / "m", "--tokens"], capsys)
    assert rc == 0 and err == ""
    words = [t.rsplit("/", 1)[0] for t in out.splitlines()[1].split()]
    assert words == ["the", "*café", "sat", "on", "the", "mat", "."]
    rc, out, err = run(["decode", new, "-m", tmp_path / "m", "--json"], capsys)
    res = json.loads(out)
    assert res["tokens"][1] == NEW[0].split() and res["oov"] == [[], [1]]
    rc, _, err = run(["report", new, "-m", tmp_path / "m", "--out", tmp_path / "r"], capsys)
    assert rc == 0, err
    html = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    assert 'class="tok oov"' in html and ">café<sub>" in html
    assert "outside the vocabulary, read as &lt;unk&gt;" in html


def test_zero_probability_numeric_model_decode_exits_2(tmp_path, capsys):
    """A hand-set categorical model in which symbol 2 can never follow state 0's run: the
    CLI used to print "-1 -1" with exit 0."""
    m = hs.HMM(n_states=2, emission="categorical", n_features=3, n_iter=1,
               random_state=0).fit(np.array([[0], [1], [2]]))
    m.startprob_ = np.array([1.0, 0.0])
    m.transmat_ = np.array([[1.0, 0.0], [0.0, 1.0]])
    m.emissionprob_ = np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    cli.save_model_dir(m, tmp_path / "m", "npy")
    np.save(tmp_path / "ok.npy", np.array([0, 1, 1, 0]))
    np.save(tmp_path / "bad.npy", np.array([0, 2]))
    rc, out, _ = run(["decode", tmp_path / "ok.npy", "-m", tmp_path / "m"], capsys)
    assert rc == 0 and out.split() == ["0", "0", "0", "0"]
    for algorithm in ("viterbi", "map"):
        rc, out, err = run(["decode", tmp_path / "bad.npy", "-m", tmp_path / "m",
                            "--algorithm", algorithm], capsys)
        assert rc == 2 and out == "" and "probability zero: 0" in one_error_line(err, "decode")
    rc, out, err = run(["score", tmp_path / "bad.npy", "-m", tmp_path / "m", "--json"], capsys)
    assert rc == 0 and json.loads(out)["total"] is None and "probability zero" in err


def test_write_report_refuses_zero_probability_data(tmp_path):
    pytest.importorskip("matplotlib")
    from hiddenstate.errors import ZeroProbabilityError
    from hiddenstate.report import write_report

    m = hs.HMM(n_states=1, emission="categorical", n_features=2, n_iter=1).fit([[0], [1]])
    m.startprob_, m.transmat_ = np.array([1.0]), np.array([[1.0]])
    m.emissionprob_ = np.array([[1.0, 0.0]])
    with pytest.raises(ZeroProbabilityError, match=r"X: sequence 1 has probability zero"):
        write_report(m, tmp_path / "r", X=np.array([[0], [0], [1]]), lengths=[2, 1])


# --------------------------------------------------------------------------- model directories


def test_directory_saved_by_model_save_needs_cli_json(tmp_path, corpus, capsys):
    X, lengths, vocab = textio.read_text(corpus, min_count=2)
    model = hs.HMM(n_states=2, emission="categorical", n_features=len(vocab), n_iter=5,
                   random_state=0).fit(X, lengths)
    model.save(tmp_path / "m")
    for argv in (["score", corpus], ["decode", corpus], ["sample"],
                 ["report", corpus, "--out", tmp_path / "r"]):
        rc, out, err = run([*argv, "-m", tmp_path / "m"], capsys)
        line = one_error_line(err, argv[0])
        assert rc == 2 and out == "" and f"{tmp_path / 'm'}: cli.json is missing" in line
        assert "save_model_dir" in line
    # the fix the message names works, and gives the library's numbers
    cli.save_model_dir(model, tmp_path / "m", "text", vocab)
    rc, out, _ = run(["score", corpus, "-m", tmp_path / "m"], capsys)
    assert rc == 0 and scores(out) == [float(v) for v in model.score_samples(X, lengths)]
    with pytest.raises(InvalidInputError, match="vocabulary: a text model needs"):
        cli.save_model_dir(model, tmp_path / "x", "text")
    with pytest.raises(InvalidInputError, match="vocabulary: 2 words"):
        cli.save_model_dir(model, tmp_path / "x", "text", Vocabulary(["<unk>", "a"]))


def _edit_json(path: Path, **changes) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc.update(changes)
    path.write_text(json.dumps(doc), encoding="utf-8")


@pytest.mark.parametrize("changes, needle", [
    ({"input_format": "csv"}, "input_format 'csv' with vocabulary 'vocabulary.json'"),
    ({"vocabulary": None}, "input_format 'text' with vocabulary None"),
    ({"vocabulary": "../../etc/passwd"}, "with vocabulary '../../etc/passwd'"),
    ({"input_format": "pickle"}, "input_format 'pickle' is not one of"),
    ({"version": 99}, "version 99 is not supported"),
    ({"format": "other"}, "not a hiddenstate CLI metadata file"),
    ({"emission": "gaussian"}, "emission is 'gaussian' but model.json has 'categorical'"),
    ({"n_features": 3}, "n_features is 3 but model.json has"),
    ({"vocabulary_sha256": "0" * 64}, "vocabulary.json: does not match the checksum"),
])
def test_tampered_cli_json_exits_2(model_dir, corpus, capsys, changes, needle):
    _edit_json(model_dir / "cli.json", **changes)
    for argv in (["score", corpus], ["sample"]):
        rc, out, err = run([*argv, "-m", model_dir], capsys)
        assert rc == 2 and out == "" and needle in one_error_line(err, argv[0])


def test_tampered_vocabulary_json_exits_2(model_dir, corpus, capsys):
    path = model_dir / "vocabulary.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["tokens"][1], doc["tokens"][2] = doc["tokens"][2], doc["tokens"][1]  # same size
    path.write_text(json.dumps(doc), encoding="utf-8")
    rc, _, err = run(["score", corpus, "-m", model_dir], capsys)
    assert rc == 2 and "vocabulary.json: does not match the checksum in cli.json" in \
        one_error_line(err, "score")
    path.write_text("{not json")
    rc, _, err = run(["decode", corpus, "-m", model_dir], capsys)
    assert rc == 2 and "not valid UTF-8 JSON" in one_error_line(err, "decode")
    path.unlink()
    rc, _, err = run(["sample", "-m", model_dir], capsys)
    assert rc == 2 and "vocabulary file not found" in one_error_line(err, "sample")
    (model_dir / "cli.json").write_text("[]")
    rc, _, err = run(["sample", "-m", model_dir], capsys)
    assert rc == 2 and "not a hiddenstate CLI metadata file" in one_error_line(err, "sample")


def test_old_positional_model_argument_is_a_usage_error(model_dir, corpus, capsys):
    rc, _, err = run(["score", model_dir, corpus], capsys)
    assert rc == 2 and "--model" in err


def test_version_1_cli_json_is_still_read_with_its_structural_checks(model_dir, corpus, capsys):
    """cli.json as fit wrote it before the checksums: still usable; its format/vocabulary
    consistency is still checked."""
    rc, want, _ = run(["score", corpus, "-m", model_dir], capsys)
    doc = json.loads((model_dir / "cli.json").read_text(encoding="utf-8"))
    for key in ("emission", "n_features", "vocabulary_sha256"):
        del doc[key]
    (model_dir / "cli.json").write_text(json.dumps({**doc, "version": 1}), encoding="utf-8")
    rc, got, err = run(["score", corpus, "-m", model_dir], capsys)
    assert rc == 0 and got == want, err
    _edit_json(model_dir / "cli.json", input_format="npy")
    rc, _, err = run(["score", corpus, "-m", model_dir], capsys)
    assert rc == 2 and "input_format 'npy' with vocabulary" in one_error_line(err, "score")

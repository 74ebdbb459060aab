"""The command line (hiddenstate.cli), the HTML report and the demo."""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hiddenstate
from hiddenstate import HMM, cli, textio
from hiddenstate.progress import FitProgress
from hiddenstate.textio import Vocabulary

SENTENCES = [
    "the cat sat on the mat .",
    "the dog sat on the log .",
    "a cat and a dog met on a mat .",
    "the <b>bold</b> cat & dog sat .",  # HTML-special characters must be escaped in reports
    "a dog sat .",
    "the cat saw the dog on the log .",
    "a zebra sat .",
    "the mat and the log .",
]


def run(argv, capsys):
    rc = cli.main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.fixture
def text_file(tmp_path):
    p = tmp_path / "corpus.txt"
    p.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    return p


@pytest.fixture
def text_model(tmp_path, text_file, capsys):
    out = tmp_path / "model"
    rc, _, err = run(["fit", text_file, "--n-states", 3, "--out", out, "--random-state", 7,
                      "--n-iter", 30, "--min-count", 2], capsys)
    assert rc == 0, err
    return out


def _api_text_model(path, **kw):
    X, lengths, vocab = textio.read_text(path, min_count=2)
    model = HMM(n_states=3, emission="categorical", n_features=len(vocab), n_iter=30,
                random_state=7, **kw).fit(X, lengths)
    return model, X, lengths, vocab


# --------------------------------------------------------------------------- fit / score


def test_fit_writes_model_vocabulary_and_summary(tmp_path, text_file, capsys):
    out = tmp_path / "m"
    rc, stdout, err = run(["fit", text_file, "--n-states", 3, "--out", out,
                           "--random-state", 7, "--n-iter", 30, "--min-count", 2], capsys)
    assert rc == 0, err
    assert (out / "vocabulary.json").is_file() and (out / "cli.json").is_file()
    meta = json.loads((out / "cli.json").read_text())
    assert meta["input_format"] == "text" and meta["n_sequences"] == len(SENTENCES)
    vocab = Vocabulary.load(out / "vocabulary.json")
    assert vocab == textio.read_text(text_file, min_count=2)[2]
    model = hiddenstate.load(out)
    assert model.n_features_ == len(vocab)
    api, X, lengths, _ = _api_text_model(text_file)
    np.testing.assert_allclose(model.transmat_, api.transmat_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(model.emissionprob_, api.emissionprob_, rtol=0, atol=1e-12)
    ll = api.score(X, lengths)
    assert f"log-likelihood: {ll:.6f}" in stdout
    assert f"perplexity: {math.exp(-ll / len(X)):.3f}" in stdout
    assert "3-state categorical HMM on 8 sequences" in stdout


def test_score_matches_python_api(text_model, text_file, capsys):
    api, X, lengths, _ = _api_text_model(text_file)
    rc, stdout, err = run(["score", text_file, "-m", text_model], capsys)
    assert rc == 0, err
    lines = stdout.splitlines()
    assert lines[0] == "sequence\tlength\tlog_likelihood"
    rows = [ln.split("\t") for ln in lines[1:1 + len(SENTENCES)]]
    per_seq = [api.score(x) for x in textio.split_sequences(X, lengths)]
    assert [int(r[1]) for r in rows] == lengths.tolist()
    np.testing.assert_allclose([float(r[2]) for r in rows], per_seq, rtol=1e-12)
    total = lines[1 + len(SENTENCES)].split("\t")
    assert total[0] == "total" and int(total[1]) == len(X)
    assert float(total[2]) == pytest.approx(api.score(X, lengths), rel=1e-12)
    assert sum(per_seq) == pytest.approx(float(total[2]), rel=1e-9)

    rc, stdout, _ = run(["score", text_file, "-m", text_model, "--json"], capsys)
    res = json.loads(stdout)
    assert res["total"] == pytest.approx(api.score(X, lengths), rel=1e-12)
    assert res["perplexity"] == pytest.approx(math.exp(-res["total"] / len(X)))
    assert [s["length"] for s in res["sequences"]] == lengths.tolist()


def test_score_maps_unknown_words_to_unk(text_model, tmp_path, capsys):
    new = tmp_path / "new.txt"
    new.write_text("the giraffe sat on the sofa .\n")
    model, _, vocab = cli.load_model_dir(text_model)
    ids = vocab.encode("the <unk> sat on the <unk> .".split())
    rc, stdout, err = run(["score", new, "-m", text_model, "--json"], capsys)
    assert rc == 0, err
    assert json.loads(stdout)["total"] == pytest.approx(model.score(ids[:, None]), rel=1e-12)


def test_unseen_words_get_the_witten_bell_share_when_no_training_word_is_rare(tmp_path,
                                                                              capsys):
    # Every word seen 4 times (>= the default --min-count): no training word is <unk>. The
    # fit gives <unk> V / (N + V) = 2 / (8 + 2) = 0.2 in every state, the rest scaled by 0.8.
    train = tmp_path / "train.txt"
    train.write_text("a b a b\nb a b a\n")
    rc, out, err = run(["fit", train, "--n-states", 2, "--out", tmp_path / "m",
                        "--random-state", 0, "--n-iter", 5], capsys)
    assert rc == 0 and err == ""
    assert "unseen words: probability 0.2 for <unk> in every state" in out
    assert "(Witten-Bell: 2 types, 8 tokens)" in out
    model, meta, vocab = cli.load_model_dir(tmp_path / "m")
    assert meta["unseen_probability"] == 0.2
    X, lengths, _ = textio.read_data(train, vocabulary=vocab)
    ref = HMM(**model.get_params()).fit(X, lengths)  # the same fit in Python
    B = 0.8 * ref.emissionprob_
    B[:, 0] += 0.2
    np.testing.assert_allclose(model.emissionprob_, B, rtol=1e-12, atol=1e-15)
    new = tmp_path / "new.txt"
    new.write_text("a b\nb zzz\n")
    rc, stdout, err = run(["score", new, "-m", tmp_path / "m", "--json"], capsys)
    assert rc == 0 and err == ""
    ref.emissionprob_ = B
    Xn = vocab.encode("a b b zzz".split())[:, None]
    want = ref.score_samples(Xn, [2, 2])
    got = [s["log_likelihood"] for s in json.loads(stdout)["sequences"]]
    assert np.isfinite(got).all() and got == pytest.approx(want, rel=1e-12)
    rc, stdout, err = run(["decode", new, "-m", tmp_path / "m", "--tokens"], capsys)
    _, states = ref.decode(Xn, [2, 2])
    assert rc == 0 and stdout.splitlines()[1] == f"b/{states[2]} *zzz/{states[3]}"


def test_zero_probability_is_reported_not_hidden(tmp_path, capsys):
    # a model saved from Python whose <unk> has probability zero in every state (fitted
    # without the reservation): unseen words give -inf, said on stderr with the fix
    vocab = Vocabulary.build([["a", "b", "a", "b"], ["b", "a"]])
    X = vocab.encode("a b a b b a".split())[:, None]
    m = HMM(2, n_features=len(vocab), n_iter=5, random_state=0).fit(X, [4, 2])
    assert np.all(m.emissionprob_[:, 0] == 0)
    cli.save_model_dir(m, tmp_path / "m", "text", vocab)
    new = tmp_path / "new.txt"
    new.write_text("a b\na zzz b\n")
    rc, stdout, err = run(["score", new, "-m", tmp_path / "m", "--json"], capsys)
    assert rc == 0
    res = json.loads(stdout)  # strict JSON: -inf is written as null
    assert res["total"] is None and res["sequences"][1]["log_likelihood"] is None
    assert res["sequences"][0]["log_likelihood"] < 0
    assert "1 sequence(s) have probability zero: 1" in err
    assert "refit it with `hiddenstate fit`, which reserves probability for unseen words" in err


def test_decode_matches_model_decode(text_model, text_file, capsys):
    model, _, vocab = cli.load_model_dir(text_model)
    X, lengths, _ = textio.read_text(text_file, vocab)
    for algorithm in ("viterbi", "map"):
        _, states = model.decode(X, lengths, algorithm=algorithm)
        rc, stdout, err = run(["decode", text_file, "-m", text_model,
                               "--algorithm", algorithm],
                              capsys)
        assert rc == 0, err
        got = [[int(s) for s in line.split()] for line in stdout.splitlines()]
        assert got == [s.tolist() for s in textio.split_sequences(states, lengths)]
    rc, stdout, _ = run(["decode", text_file, "-m", text_model, "--tokens"], capsys)
    first = stdout.splitlines()[0].split()
    _, states = model.decode(X, lengths)
    assert first == [f"{w}/{k}" for w, k in zip(SENTENCES[0].split(), states[:7], strict=True)]
    rc, stdout, _ = run(["decode", text_file, "-m", text_model, "--json"], capsys)
    res = json.loads(stdout)
    assert res["log_probability"] == pytest.approx(model.decode(X, lengths)[0], rel=1e-12)
    assert sum(len(s) for s in res["states"]) == len(X)


def test_sample_prints_words_from_model_sample(text_model, capsys):
    model, _, vocab = cli.load_model_dir(text_model)
    rc, stdout, err = run(["sample", "-m", text_model, "-n", 9, "--random-state", 3], capsys)
    assert rc == 0, err
    Xs, states = model.sample(9, random_state=3)
    assert stdout.split() == vocab.decode(np.asarray(Xs).ravel())
    rc, stdout, _ = run(["sample", "-m", text_model, "-n", 9, "--random-state", 3, "--states"],
                        capsys)
    assert [p.rsplit("/", 1)[1] for p in stdout.split()] == [str(int(k)) for k in states]
    rc, stdout, _ = run(["sample", "-m", text_model, "-n", 4, "--n-sequences", 3,
                         "--random-state", 3], capsys)
    lines = stdout.splitlines()
    assert len(lines) == 3 and all(len(ln.split()) == 4 for ln in lines)


# --------------------------------------------------------------------------- numeric input


def _gaussian_data(seed=0):
    rng = np.random.default_rng(seed)
    seqs = []
    for n in (40, 25, 35):
        z = (np.arange(n) // 8) % 2
        seqs.append(np.column_stack([rng.normal(3.0 * z, 0.5), rng.normal(-z, 0.3)]))
    return seqs


def _prices_csv(path, n=60, seed=3):
    """A CSV of dates, a volume column and a price column with empty and NA cells, and the
    price column as the file says it (NaN where missing)."""
    rng = np.random.default_rng(seed)
    z = (np.arange(n) // 15) % 2
    price = np.round(rng.normal(10 + 5 * z, 1.0), 3)
    volume = np.round(rng.normal(100, 5, n), 3)
    cells = [f"{v:.3f}" for v in price]
    cells[4], cells[20] = "", "NA"
    price[[4, 20]] = np.nan
    dates = np.datetime64("2020-01-01") + np.arange(n)
    rows = [f"{d},{v:.3f},{c}" for d, v, c in zip(dates, volume, cells, strict=True)]
    path.write_text("Date,Volume,Price\n" + "\n".join(rows) + "\n")
    return price[:, None]


def test_csv_dates_missing_cells_and_columns_match_api(tmp_path, capsys):
    """`fit prices.csv --columns Price`: the date column is the index, the empty and NA
    cells are missing values; the model, the scores and the decoded states equal the
    Python API's on the same numbers, and score/decode/sample reuse the column choice."""
    csv = tmp_path / "prices.csv"
    X = _prices_csv(csv)
    m = tmp_path / "m"
    rc, out, err = run(["fit", csv, "--columns", "Price", "--n-states", 2, "--n-iter", 20,
                        "--tol=-inf", "--random-state", 0, "--out", m], capsys)
    assert rc == 0, err
    model, meta, _ = cli.load_model_dir(m)
    assert meta["columns"] == ["Price"] and meta["column_names"] == ["Price"]
    assert meta["index_column"] is None  # found by itself: the column of dates
    ref = HMM(**model.get_params()).fit(X)
    np.testing.assert_allclose(model.means_, ref.means_, rtol=1e-10)
    rc, out, err = run(["score", csv, "-m", m, "--json"], capsys)
    assert rc == 0 and json.loads(out)["total"] == pytest.approx(ref.score(X), rel=1e-12)
    rc, out, err = run(["decode", csv, "-m", m, "--json"], capsys)
    res = json.loads(out)
    assert res["states"][0] == ref.decode(X)[1].tolist()
    assert res["index_name"] == "Date" and res["index"][0][:2] == ["2020-01-01", "2020-01-02"]
    rc, out, err = run(["sample", "-m", m, "-n", 5, "--random-state", 1], capsys)
    assert rc == 0 and out.splitlines()[0] == "Price" and len(out.splitlines()) == 6
    drawn = tmp_path / "drawn.csv"
    drawn.write_text(out)
    rc, out, err = run(["score", drawn, "-m", m], capsys)  # the header names the column
    assert rc == 0, err
    # another column on the command line overrides the fit's choice
    rc, out, err = run(["score", csv, "-m", m, "--columns", "Volume", "--json"], capsys)
    volume = np.loadtxt(csv, delimiter=",", skiprows=1, usecols=1)[:, None]
    assert rc == 0 and json.loads(out)["total"] == pytest.approx(model.score(volume),
                                                                 rel=1e-12)
    rc, _, err = run(["score", csv, "-m", m, "--columns", "Prise"], capsys)
    assert rc == 2 and "--columns: no column 'Prise'" in err and "'Price'" in err


def test_csv_missing_cell_is_a_missing_symbol_for_categorical(tmp_path, capsys):
    csv = tmp_path / "symbols.csv"
    symbols = [0, 1, 1, -1, 2, 0, 2, 2, -1, 1, 0, 0]
    # one column: an empty cell would be a blank line, which ends a sequence; NA is missing
    csv.write_text("s\n" + "\n".join("NA" if v < 0 else str(v) for v in symbols) + "\n")
    rc, _, err = run(["fit", csv, "--emission", "categorical", "--n-states", 2, "--n-iter", 10,
                      "--tol=-inf", "--random-state", 0, "--out", tmp_path / "m"], capsys)
    assert rc == 0, err
    model, _, _ = cli.load_model_dir(tmp_path / "m")
    X = np.array(symbols)[:, None]
    ref = HMM(**model.get_params()).fit(X)
    np.testing.assert_allclose(model.emissionprob_, ref.emissionprob_, rtol=1e-10)
    rc, out, _ = run(["score", csv, "-m", tmp_path / "m", "--json"], capsys)
    assert json.loads(out)["total"] == pytest.approx(ref.score(X), rel=1e-12)


def test_csv_gaussian_fit_score_decode_match_api(tmp_path, capsys):
    seqs = _gaussian_data()
    csv = tmp_path / "g.csv"
    csv.write_text("a,b\n" + "\n\n".join(
        "\n".join(",".join(repr(float(v)) for v in row) for row in s) for s in seqs) + "\n")
    X, lengths = textio.read_csv(csv)
    np.testing.assert_array_equal(X, np.concatenate(seqs))
    out = tmp_path / "gm"
    rc, stdout, err = run(["fit", csv, "--n-states", 2, "--out", out, "--random-state", 1,
                           "--n-iter", 20], capsys)
    assert rc == 0, err
    assert "2-state gaussian HMM on 3 sequences (100 observations)" in stdout
    api = HMM(n_states=2, emission="gaussian", n_iter=20, random_state=1).fit(X, lengths)
    rc, stdout, _ = run(["score", csv, "-m", out, "--json"], capsys)
    assert json.loads(stdout)["total"] == pytest.approx(api.score(X, lengths), rel=1e-12)
    rc, stdout, _ = run(["decode", csv, "-m", out], capsys)
    _, states = api.decode(X, lengths)
    assert " ".join(stdout.split()) == " ".join(str(int(s)) for s in states)
    # sampled CSV (blank lines between sequences, states as comments) reads back
    rc, stdout, _ = run(["sample", "-m", out, "-n", 5, "--n-sequences", 2, "--random-state", 0,
                         "--states"], capsys)
    back = tmp_path / "s.csv"
    back.write_text(stdout)
    Xb, lb = textio.read_csv(back)
    assert Xb.shape == (10, 2) and lb.tolist() == [5, 5]


def test_npy_categorical_with_lengths(tmp_path, capsys):
    rng = np.random.default_rng(5)
    X = rng.integers(0, 4, size=60)
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "len.npy", np.array([20, 30, 10]))
    out = tmp_path / "cm"
    rc, _, err = run(["fit", tmp_path / "x.npy", "--lengths", tmp_path / "len.npy",
                      "--emission", "categorical", "--n-states", 2, "--out", out,
                      "--random-state", 0, "--n-iter", 10], capsys)
    assert rc == 0, err
    api = HMM(n_states=2, emission="categorical", n_iter=10, random_state=0)
    api.fit(X[:, None], [20, 30, 10])
    rc, stdout, _ = run(["score", tmp_path / "x.npy", "-m", out,
                         "--lengths", tmp_path / "len.npy",
                         "--json"], capsys)
    res = json.loads(stdout)
    assert [s["length"] for s in res["sequences"]] == [20, 30, 10]
    assert res["total"] == pytest.approx(api.score(X[:, None], [20, 30, 10]), rel=1e-12)


@pytest.mark.parametrize("learn, extra", [("map", ["--transmat-prior", "2.0"]),
                                          ("vb", ["--transmat-prior", "0.5"]),
                                          ("vt", []), ("kvt", ["--k-best", "3"])])
def test_learning_mode_flags_match_api(tmp_path, capsys, learn, extra):
    rng = np.random.default_rng(6)
    X = rng.integers(0, 4, size=80)
    np.save(tmp_path / "x.npy", X)
    out = tmp_path / learn
    rc, _, err = run(["fit", tmp_path / "x.npy", "--emission", "categorical", "--n-states", 3,
                      "--out", out, "--random-state", 1, "--n-iter", 15, "--learn", learn,
                      *extra], capsys)
    assert rc == 0, err
    kw = {"transmat_prior": float(extra[1])} if "--transmat-prior" in extra else {}
    api = HMM(n_states=3, n_iter=15, random_state=1, learn=learn,
              k_best=3 if learn == "kvt" else 1, **kw).fit(X[:, None])
    saved = hiddenstate.load(out)
    assert saved.learn == learn
    assert saved.monitor_.history == api.monitor_.history
    assert np.array_equal(saved.transmat_, api.transmat_)


@pytest.mark.parametrize("emission, extra", [("gmm", ["--n-mix", "2"]),
                                             ("multinomial", ["--n-trials", "6"])])
def test_gmm_and_multinomial_fits_match_api_and_report(tmp_path, capsys, emission, extra):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(8)
    z = (np.arange(120) // 15) % 2
    if emission == "gmm":
        X = rng.normal(3.0 * z[:, None], 1.0, size=(120, 2))
        kw = {"n_mix": 2}
    else:
        X = np.stack([rng.multinomial(6, [0.7, 0.2, 0.1] if k else [0.1, 0.3, 0.6])
                      for k in z]).astype(float)
        kw = {"n_trials": 6}
    np.save(tmp_path / "x.npy", X)
    rc, out, err = run(["fit", tmp_path / "x.npy", "--emission", emission, "--n-states", 2,
                        "--out", tmp_path / "m", "--random-state", 2, "--n-iter", 10,
                        "--report", tmp_path / "r", *extra], capsys)
    assert rc == 0, err
    api = HMM(n_states=2, emission=emission, n_iter=10, random_state=2, **kw).fit(X)
    saved = hiddenstate.load(tmp_path / "m")
    assert saved.monitor_.history == api.monitor_.history
    assert np.array_equal(saved.transmat_, api.transmat_)
    page = (tmp_path / "r" / "index.html").read_text()
    title = "Mixture means per state" if emission == "gmm" else "Category probabilities"
    assert title in page
    rc, _, err = run(["fit", tmp_path / "x.npy", "--emission", "gaussian", "--out",
                      tmp_path / "g", *extra], capsys)
    assert rc == 2 and extra[0] + ": only applies" in err


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("argv, needle", [
    (["fit", "{tmp}/missing.txt", "--out", "{tmp}/m"], "missing.txt: file not found"),
    (["fit", "{tmp}/ragged.csv", "--out", "{tmp}/m"], "ragged.csv, line 2: has 3 columns"),
    (["fit", "{tmp}/words.csv", "--out", "{tmp}/m"], "words.csv, line 2, column 1: 'x'"),
    (["fit", "{tmp}/data.dat", "--out", "{tmp}/m"], "pass --format text|csv|npy"),
    (["fit", "{tmp}/ok.csv", "--out", "{tmp}/m", "--max-vocab", "5"], "--max-vocab"),
    (["fit", "{tmp}/ok.txt", "--out", "{tmp}/m", "--emission", "gaussian"], "--emission"),
    (["fit", "{tmp}/ok.txt", "--out", "{tmp}/m", "--n-states", "0"], "--n-states"),
    (["fit", "{tmp}/ok.txt", "--out", "{tmp}/m", "--tol", "abc"], "--tol"),
    (["score", "{tmp}/ok.txt", "-m", "{tmp}/nomodel"], "nomodel: model directory not found"),
    (["decode", "{tmp}/ok.txt"], "required"),
])
def test_bad_input_exits_2_with_one_clean_line(tmp_path, capsys, argv, needle):
    (tmp_path / "ragged.csv").write_text("1,2\n3,4,5\n")
    (tmp_path / "words.csv").write_text("1\nx\n")
    (tmp_path / "data.dat").write_text("1\n")
    (tmp_path / "ok.csv").write_text("1\n2\n3\n")
    (tmp_path / "ok.txt").write_text("a b c\n")
    rc, stdout, err = run([a.format(tmp=tmp_path) for a in argv], capsys)
    assert rc == 2
    assert needle in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1  # one line, no usage dump


def test_numeric_model_rejects_text_and_text_model_rejects_csv(text_model, tmp_path, capsys):
    csv = tmp_path / "x.csv"
    csv.write_text("1\n2\n")
    rc, _, err = run(["score", csv, "-m", text_model, "--format", "csv"], capsys)
    assert rc == 2 and "reads text" in err and "cli.json" in err
    np.save(tmp_path / "g.npy", np.random.default_rng(0).normal(size=(30, 1)))
    rc, _, err = run(["fit", tmp_path / "g.npy", "--out", tmp_path / "g", "--n-iter", 3,
                      "--random-state", 0], capsys)
    assert rc == 0, err
    rc, _, err = run(["score", tmp_path / "x.txt", "-m", tmp_path / "g"], capsys)
    assert rc == 2 and "x.txt: is text" in err and "reads numbers" in err
    wide = tmp_path / "wide.csv"
    wide.write_text("1,2\n3,4\n")
    rc, _, err = run(["decode", wide, "-m", tmp_path / "g"], capsys)
    assert rc == 2 and "wide.csv: X:" in err and "features" in err
    np.save(tmp_path / "two.npy", np.zeros((4, 2), dtype=np.int64))
    rc, _, err = run(["fit", tmp_path / "two.npy", "--emission", "categorical",
                      "--out", tmp_path / "c"], capsys)
    assert rc == 2 and "two.npy: categorical emissions need one column" in err


def test_vocabulary_mismatch_is_detected(text_model, capsys):
    Vocabulary(["a", "b"]).save(text_model / "vocabulary.json")
    rc, _, err = run(["score", text_model / "vocabulary.json", "-m", text_model], capsys)
    assert rc == 2 and "mixes files from different fits" in err


def test_module_entry_point_exit_code_and_stderr(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "hiddenstate", "score", str(tmp_path / "x.txt"),
                           "--model", str(tmp_path / "nope")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith("hiddenstate score: error: ")
    assert "nope: model directory not found" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


# --------------------------------------------------------------------------- progress bar


def test_progress_bar_draws_iterations_and_restarts():
    buf = io.StringIO()
    bar = FitProgress(n_iter=4, n_init=2, stream=buf, min_interval=0.0)
    for it, ll in [(1, -10.0), (2, -9.0), (3, -8.5), (1, -12.0), (2, -11.0)]:
        bar(it, ll)
    bar.close()
    text = buf.getvalue()
    first, second = text.split("fit init 2/2", 1)
    assert "fit init 1/2" in first and "3/4" in first and "4/4" not in first
    assert "log-lik=-8.5" in first and "delta=+0.5" in first
    assert "2/4" in second and "log-lik=-11" in second and "delta=+1" in second
    assert "-12" not in second.split("delta")[-1]  # the delta restarts with the restart
    quiet = io.StringIO()
    off = FitProgress(n_iter=4, stream=quiet, enabled=False)
    off(1, -1.0)
    off.close()
    assert quiet.getvalue() == ""


def test_fit_progress_flag_writes_bar_to_stderr(tmp_path, text_file, capsys):
    rc, _, err = run(["fit", text_file, "--out", tmp_path / "m", "--n-iter", 5, "--tol=-inf",
                      "--random-state", 0, "--progress"], capsys)
    assert rc == 0
    assert "fit: 100%" in err and "5/5" in err and "log-lik=" in err


# --------------------------------------------------------------------------- report


def test_text_report_sections_and_escaping(tmp_path, text_file, capsys):
    rep = tmp_path / "report"
    rc, stdout, err = run(["fit", text_file, "--n-states", 3, "--out", tmp_path / "m",
                           "--random-state", 7, "--n-iter", 30, "--report", rep,
                           "--min-count", 1], capsys)  # keep the word "<b>bold</b>"
    assert rc == 0, err
    assert f"report written to {rep / 'index.html'}" in stdout
    html = (rep / "index.html").read_text(encoding="utf-8")
    for section in ('id="summary"', 'id="loglik"', 'id="transitions"', 'id="emissions"',
                    'id="occupancy"', 'id="examples"'):
        assert section in html
    assert "Top words per state" in html and "per-token perplexity" in html
    for png in ("loglik.png", "transmat.png", "top_symbols.png", "occupancy.png"):
        assert (rep / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert html.count('src="data:image/png;base64,') == 4
    # the corpus token "<b>bold</b>" and "&" must appear escaped, never as markup
    assert "<b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    assert " & " not in html
    # the reported perplexity is the model's
    model = hiddenstate.load(tmp_path / "m")
    X, lengths, _ = textio.read_text(text_file, Vocabulary.load(tmp_path / "m/vocabulary.json"))
    ppl = math.exp(-model.score(X, lengths) / len(X))
    assert f"<td>per-token perplexity</td><td>{ppl:.6g}</td>" in html
    assert f"<td>observations</td><td>{len(X):,}</td>" in html


def test_gaussian_report_via_report_command(tmp_path, capsys):
    np.save(tmp_path / "g.npy", np.concatenate(_gaussian_data()))
    rc, _, err = run(["fit", tmp_path / "g.npy", "--n-states", 2, "--out", tmp_path / "m",
                      "--n-iter", 10, "--random-state", 0], capsys)
    assert rc == 0, err
    rc, stdout, err = run(["report", tmp_path / "g.npy", "-m", tmp_path / "m", "--out",
                           tmp_path / "rep"], capsys)
    assert rc == 0, err
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "Means per state" in html and (tmp_path / "rep" / "means.png").is_file()
    assert 'id="examples"' not in html and "perplexity" not in html
    model = hiddenstate.load(tmp_path / "m")
    assert f"{model.means_[0, 0]:.4g} &plusmn;" in html


# --------------------------------------------------------------------------- demo


def test_bundled_corpus(tmp_path, capsys):
    from hiddenstate import demo

    path = demo.corpus_path()
    first = path.read_text(encoding="utf-8").splitlines()
    assert len(first) == 1157 and first[1] == " = Valkyria Chronicles III = "
    sents = demo.corpus_sentences(50)
    assert len(sents) == 50 and all(4 <= len(s) <= 40 for s in sents)
    assert all(s[-1] in (".", "?", "!") for s in sents)


def test_a_closed_pipe_ends_quietly(tmp_path):
    """`hiddenstate sample ... | head -1`: the reader leaves; no error message, status 141."""
    model = HMM(n_states=2, emission="categorical", n_iter=2, random_state=0)
    model.fit(np.random.default_rng(0).integers(0, 3, size=(50, 1)))
    cli.save_model_dir(model, tmp_path / "m", "npy", None, source="x", n_sequences=1,
                       n_observations=50, fit_seconds=0.0)
    proc = subprocess.Popen([sys.executable, "-m", "hiddenstate", "sample", "--model",
                             str(tmp_path / "m"), "-n", "20", "--n-sequences", "200000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == ""


SERIES = Path(__file__).resolve().parents[2] / "shared" / "data" / "series"


@pytest.mark.skipif(not SERIES.is_dir(), reason="needs ../shared/data/series (not in a clone)")
def test_the_real_series_of_the_docs(tmp_path, capsys):
    """The command lines of docs/cli.md on the real series: Dow Jones (a date column, found
    by itself), Old Faithful (a label column named, two data columns chosen) and the sea-ice
    extent (13,175 dates); the numbers read are the file's, checked with the csv module."""
    import csv as csvmod

    dow = SERIES / "dowjones.csv"
    rc, out, err = run(["fit", dow, "--n-states", 3, "--random-state", 0, "--n-iter", 5,
                        "--out", tmp_path / "dow", "--report", tmp_path / "dow-report"],
                       capsys)
    assert rc == 0, err
    rows = list(csvmod.reader(dow.open()))[1:]
    data = textio.read_table(dow)
    np.testing.assert_array_equal(data.X[:, 0], [float(r[1]) for r in rows])
    assert data.index_name == "Date" and str(data.index[-1])[:10] == rows[-1][0]
    assert "timeline" in (tmp_path / "dow-report" / "index.html").read_text()
    geyser = SERIES / "geyser.csv"
    rc, out, err = run(["fit", geyser, "--columns", "duration,waiting", "--index-column",
                        "kind", "--n-states", 2, "--random-state", 0, "--n-iter", 5,
                        "--out", tmp_path / "geyser"], capsys)
    assert rc == 0, err
    rc, out, err = run(["decode", geyser, "-m", tmp_path / "geyser", "--json"], capsys)
    res = json.loads(out)
    assert res["index_name"] == "kind" and res["index"][0][:2] == ["long", "short"]
    rc, _, err = run(["fit", geyser, "--out", tmp_path / "g2"], capsys)
    assert rc == 2 and "'kind'): 'long' is not a number" in err and "--columns" in err
    ice = textio.read_table(SERIES / "seaice.csv")
    assert ice.X.shape == (13175, 1) and ice.index_name == "Date"

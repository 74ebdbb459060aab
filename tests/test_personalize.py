"""The personalisation pipeline (hiddenstate.personalize), its report, the ``personalize``
command and the demo.

The numbers the pipeline reports are recomputed here independently: the word split from
the raw target text, the models reloaded from disk, the black box stepped word by word with
``reset``/``step`` (not its batched ``log_probs``), PROPS refitted in one ``fit`` call (the
pipeline feeds it in chunks).
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

import hiddenstate
from hiddenstate import cli, demo
from hiddenstate.models import PROPS
from hiddenstate.personalize import (
    EVAL_WORDS_CAP,
    format_summary_table,
    personalize,
    split_target,
)
from hiddenstate.sources import load_source

#: a phrase of reference words in an order the reference never shows
PHRASE = "tower army the river game seven park".split()
N_WORDS, N_EVAL = 1200, 600


def _body_lines() -> list[str]:
    lines = demo.corpus_path().read_text(encoding="utf-8").splitlines()
    return [s.strip() for s in lines if s.strip() and not s.strip().startswith("=")]


def _target_lines() -> list[str]:
    """Held-out WikiText paragraphs (reference-like) with the phrase in every line."""
    held = _body_lines()[300:]
    return [" ".join(held[i].split()[:25] + PHRASE + held[i + 100].split()[:10])
            for i in range(60)]


@pytest.fixture(scope="module")
def texts(tmp_path_factory):
    d = tmp_path_factory.mktemp("texts")
    ref, tgt = d / "reference.txt", d / "target.txt"
    # blank lines between paragraphs, as in WikiText: they are skipped
    ref.write_text("\n\n".join(_body_lines()[:150]) + "\n", encoding="utf-8")
    tgt.write_text("\n".join(_target_lines()) + "\n\n", encoding="utf-8")
    return ref, tgt


@pytest.fixture(scope="module")
def run(texts, tmp_path_factory):
    ref, tgt = texts
    out = tmp_path_factory.mktemp("run")
    result = personalize(ref, tgt, out, words=N_WORDS, eval_words=N_EVAL, vocab_size=3000,
                         seed=0)
    assert result.index is None and not (out / "index.html").exists()  # the pipeline alone
    assert cli.write_personalize_report(result) == out / "index.html" == result.index
    return result, out


def _independent_split(path, n_first: int, n_next: int):
    """The personalisation and evaluation sequences, recomputed from the raw file."""
    seqs = [line.lower().split() for line in path.read_text(encoding="utf-8").splitlines()]
    seqs = [s for s in seqs if s]
    flat = [(i, w) for i, s in enumerate(seqs) for w in s]

    def regroup(items):
        out, last = [], None
        for i, w in items:
            if i != last:
                out.append([])
                last = i
            out[-1].append(w)
        return out

    return regroup(flat[:n_first]), regroup(flat[n_first:n_first + n_next])


def _encode(seqs, vocabulary):
    X = vocabulary.encode(w for s in seqs for w in s)
    return X, np.array([len(s) for s in seqs])


def _stepped_log_probs(src, X, lengths) -> np.ndarray:
    out, a = [], 0
    for n in lengths:
        p = src.reset()
        for t, w in enumerate(X[a:a + n]):
            out.append(math.log(p[w]))
            if t + 1 < n:
                p = src.step(int(w))
        a += n
    return np.array(out)


# --------------------------------------------------------------------------- the split


def test_split_target_cuts_lines_and_caps():
    seqs = [["a", "b", "c"], ["d", "e"], ["f", "g", "h", "i"]]
    first, second = split_target(seqs, 4)
    assert first == [["a", "b", "c"], ["d"]]
    assert second == [["e"], ["f", "g", "h", "i"]]
    first, second = split_target(seqs, 2, 2)
    assert first == [["a", "b"]] and second == [["c"], ["d"]]
    assert split_target(seqs, 3, 100)[1] == [["d", "e"], ["f", "g", "h", "i"]]
    assert EVAL_WORDS_CAP == 20000
    with pytest.raises(hiddenstate.InvalidInputError, match="--words: the target has only 9"):
        split_target(seqs, 9)
    with pytest.raises(hiddenstate.InvalidInputError, match="--eval-words"):
        split_target(seqs, 2, 0)


# --------------------------------------------------------------------------- the pipeline


def test_summary_agrees_with_the_saved_models(run, texts):
    result, out = run
    _, tgt = texts
    s = json.loads((out / "summary.json").read_text())
    assert s["n_personalisation_words"] == N_WORDS and s["n_evaluation_words"] == N_EVAL
    src = load_source(out / "source")
    vocab = src.vocabulary
    assert vocab == hiddenstate.textio.Vocabulary.load(out / "vocabulary.json")
    pers, ev = _independent_split(tgt, N_WORDS, N_EVAL)
    assert (out / "evaluation.txt").read_text().split("\n")[:-1] == [" ".join(x) for x in ev]
    Xp, lp_ = _encode(pers, vocab)
    Xe, le = _encode(ev, vocab)

    props = hiddenstate.load(out / "props")
    hmm = hiddenstate.load(out / "hmm")
    models = s["models"]
    # evaluation: frozen models reloaded from disk
    for key, lp in (("props", props.score_tokens(Xe, le)), ("hmm", hmm.score_tokens(Xe, le)),
                    ("black_box", _stepped_log_probs(src, Xe, le))):
        q = models[key]["evaluation"]
        assert q["perplexity"] == pytest.approx(math.exp(-lp.mean()), rel=1e-10), key
        assert q["mean_prob"] == pytest.approx(np.exp(lp).mean(), rel=1e-10), key
    # personalisation: black box stepped; PROPS and HMM refitted in one call (prequential)
    bb = _stepped_log_probs(src, Xp, lp_)
    assert models["black_box"]["personalisation"]["perplexity"] == pytest.approx(
        math.exp(-bb.mean()), rel=1e-10)
    fresh = PROPS([src], n_perturbation_states=2, learn="online-em", random_state=0).fit(Xp, lp_)
    assert models["props"]["personalisation"]["mean_log_prob"] == pytest.approx(
        fresh.stream_log_prob_.mean(), rel=1e-10)
    np.testing.assert_allclose(fresh.transmat_, props.transmat_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(models["props"]["transmat"], props.transmat_, rtol=0, atol=0)
    fresh_hmm = hiddenstate.HMM(3, n_features=len(vocab), learn="online-em",
                                random_state=0).fit(Xp, lp_)
    assert models["hmm"]["personalisation"]["perplexity"] == pytest.approx(
        math.exp(-fresh_hmm.stream_log_prob_.mean()), rel=1e-10)
    # the <unk> shares; the evaluation tokens the HMM never saw while learning
    assert s["vocabulary"]["evaluation_unk_share"] == pytest.approx(np.mean(Xe == 0))
    assert models["hmm"]["unseen_share"] == pytest.approx(np.mean(~np.isin(Xe, Xp)))
    assert s["vocabulary"]["size"] == len(vocab) <= 3000


def test_props_beats_the_black_box_and_flags_the_phrase(run):
    result, _ = run
    models = result.summary["models"]
    ppl = {k: models[k]["evaluation"]["perplexity"] for k in models}
    # the phrase is unpredictable for the source: personalisation must pay off clearly
    assert ppl["props"] < 0.6 * ppl["black_box"]
    assert ppl["props"] < ppl["hmm"]
    assert models["props"]["personalisation"]["perplexity"] < \
        models["black_box"]["personalisation"]["perplexity"]
    # membership log-odds: the phrase is user-specific, the WikiText words are not
    words = result.evaluation.words
    mask = np.zeros(len(words), dtype=bool)
    for i in range(len(words) - len(PHRASE) + 1):
        if words[i:i + len(PHRASE)] == PHRASE:
            mask[i:i + len(PHRASE)] = True
    assert mask.sum() >= 5 * len(PHRASE)
    odds = result.scores.membership_log_odds
    assert np.median(odds[mask]) > 0 > np.median(odds[~mask])
    assert np.mean(np.clip(odds[mask], -50, 50)) > np.mean(np.clip(odds[~mask], -50, 50)) + 5
    # the same numbers as PROPS.token_scores
    ev = result.evaluation
    ts = result.props.token_scores(ev.X, ev.lengths)
    np.testing.assert_array_equal(ts.membership_log_odds, odds)
    np.testing.assert_allclose(ts.log_prob, result.scores.props_log_prob, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ts.source_log_prob[:, 0], result.scores.source_log_prob,
                               rtol=0, atol=1e-12)
    # the phrase's words dominate a perturbation state
    tops = [{w for w, _ in row[:10]} for row in models["props"]["top_symbols"]]
    assert any(len(t & set(PHRASE)) >= 4 for t in tops)


def test_report_sections_and_numbers(run):
    result, out = run
    html = (out / "index.html").read_text(encoding="utf-8")
    for sid in ("summary", "curves", "transitions", "perturbation", "words"):
        assert f'id="{sid}"' in html
    assert (out / "learning_curves.png").stat().st_size > 1000
    assert (out / "props_transmat.png").stat().st_size > 1000
    ev = result.summary["models"]["props"]["evaluation"]
    assert f"<td>{ev['mean_prob']:.4f}</td><td>{ev['perplexity']:.1f}</td>" in html
    # three coloured panels of the first 400 evaluation words, each with a hover number
    assert html.count('<div class="words">') == 3
    spans = re.findall(r'<span class="w( unk)?" style="background:#[0-9a-f]{6}" title="', html)
    assert len(spans) == 3 * 400
    d = result.scores.props_log_prob[0] - result.scores.hmm_log_prob[0]
    assert f"log P(PROPS) − log P(HMM) = {d:+.3g}" in html
    assert "&lt;unk&gt;" in html and "not in the reference vocabulary" in html
    share = result.summary["models"]["hmm"]["unseen_share"]
    assert f"{share:.1%} of the evaluation words never occur there" in html


def test_a_baseline_worse_than_uniform_is_explained(run):
    """Issue 27: the streaming HMM's perplexity above the vocabulary size (47,086 on
    10,000 words) came with no word of why. The table adds the note only then; the report
    always says how many evaluation words the HMM never saw."""
    result, _ = run
    s = json.loads(json.dumps(result.summary))
    W = s["vocabulary"]["size"]
    assert s["models"]["hmm"]["evaluation"]["perplexity"] < W  # this run: no note
    assert "worse than a uniform guess" not in format_summary_table(s)
    s["models"]["hmm"]["evaluation"]["perplexity"] = 4.7 * W
    table = format_summary_table(s)
    assert f"above the vocabulary size ({W:,}), worse than a uniform guess" in \
        " ".join(table.split())
    del s["models"]["hmm"]["unseen_share"]  # a summary.json written before the note
    assert "uniform" not in format_summary_table(s)


# --------------------------------------------------------------------------- the command


def _cli(argv, capsys):
    rc = cli.main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_cli_writes_everything_and_reloads(texts, tmp_path, capsys):
    ref, tgt = texts
    out = tmp_path / "p"
    rc, stdout, err = _cli(["personalize", "--reference", ref, "--target", tgt, "--words",
                            800, "--eval-words", 300, "--vocab-size", 2000, "--out", out,
                            "--no-progress"], capsys)
    assert rc == 0, err
    for name in ("index.html", "summary.json", "vocabulary.json", "personalisation.txt",
                 "evaluation.txt"):
        assert (out / name).is_file(), name
    for name in ("props", "hmm", "source"):
        assert (out / name / "model.json").is_file(), name
    s = json.loads((out / "summary.json").read_text())
    assert s["settings"]["vocab_size"] == 2000 and s["vocabulary"]["size"] == 2000
    props = hiddenstate.load(out / "props")
    ev = [line.split() for line in (out / "evaluation.txt").read_text().splitlines()]
    X, lengths = _encode(ev, props.sources[0].vocabulary)
    ppl = math.exp(-props.score_tokens(X, lengths).mean())
    assert ppl == pytest.approx(s["models"]["props"]["evaluation"]["perplexity"], rel=1e-12)
    assert f"{ppl:.1f}" in stdout and "report written to" in stdout

    # --load-source reuses the saved source: the same numbers
    out2 = tmp_path / "q"
    rc, _, err = _cli(["personalize", "--load-source", out / "source", "--target", tgt,
                       "--words", 800, "--eval-words", 300, "--out", out2, "--no-report"],
                      capsys)
    assert rc == 0, err
    s2 = json.loads((out2 / "summary.json").read_text())
    assert s2["models"] == s["models"] and not (out2 / "index.html").exists()
    assert s2["vocabulary"]["built_from"] == "the loaded source"


def test_the_pipeline_writes_no_report_and_old_report_arguments_say_so(texts, tmp_path):
    """``report`` / ``n_report_words`` moved to the report writer: ``report=True`` is an
    error saying what to call; ``report=False`` and ``n_report_words`` warn (one release)."""
    ref, tgt = texts
    with pytest.raises(hiddenstate.errors.InvalidInputError,
                       match="^report: .*write_personalize_report"):
        personalize(ref, tgt, tmp_path / "x", report=True)
    for kw in ({"report": False}, {"n_report_words": 10}):
        with pytest.warns(FutureWarning, match="deprecated and ignored"), \
                pytest.raises(hiddenstate.errors.InvalidInputError, match="^--target"):
            personalize(ref, None, tmp_path / "x", **kw)
    assert not (tmp_path / "x").exists()


def test_progress_bars_per_stage(texts, tmp_path, capsys):
    ref, tgt = texts
    calls = []
    personalize(ref, tgt, tmp_path / "a", words=500, eval_words=100, vocab_size=1000,
                progress=lambda *a: calls.append(a))
    for stage in ("props", "hmm"):
        done = [c[1] for c in calls if c[0] == stage]
        assert done[0] == 0 and done[-1] == 500 and done == sorted(done) and len(done) > 10
        assert all(c[2] == 500 for c in calls if c[0] == stage)
    rc, _, err = _cli(["personalize", "--reference", ref, "--target", tgt, "--words", 500,
                       "--eval-words", 100, "--out", tmp_path / "b", "--no-report",
                       "--progress"], capsys)
    assert rc == 0, err
    for stage in ("props", "hmm"):   # one tqdm bar per stage, run to its end
        assert re.search(stage + r" *: 100%[^\r\n]*500/500[^\r\n]*mean log p=-", err), err


@pytest.mark.parametrize("args, option", [
    (["--target", "{missing}"], "--target"),
    (["--reference", "{empty}"], "--reference"),
    (["--target", "{empty}"], "--target"),
    (["--words", "100000"], "--words"),
    (["--words", "0"], "--words"),
    (["--eval-words", "-3"], "--eval-words"),
    (["--source", "bert"], "--source"),
    (["--load-source", "{missing}"], "--load-source"),
    (["--load-source", "{tmp}"], "--load-source"),
    (["--vocab-size", "1"], "--vocab-size"),
])
def test_cli_bad_options_name_the_option(texts, tmp_path, capsys, args, option):
    ref, tgt = texts
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    subs = {"{missing}": str(tmp_path / "nope.txt"), "{empty}": str(empty),
            "{tmp}": str(tmp_path)}
    base = {"--reference": str(ref), "--target": str(tgt), "--out": str(tmp_path / "o")}
    extra = [subs.get(a, a) for a in args]
    if extra[0] in base:
        base[extra[0]] = extra[1]
        extra = []
    if "--load-source" in extra:
        del base["--reference"]
    argv = ["personalize", *[x for kv in base.items() for x in kv], *extra, "--no-progress"]
    rc, _, err = _cli(argv, capsys)
    assert rc == 2
    last = err.strip().splitlines()[-1]  # argparse prints its usage first
    assert last.startswith("hiddenstate personalize: error: ") and option in last, err
    assert "Traceback" not in err


def test_cli_lstm_without_torch_says_how_to_fix(texts, tmp_path, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    ref, tgt = texts
    rc, _, err = _cli(["personalize", "--reference", ref, "--target", tgt, "--source", "lstm",
                       "--out", tmp_path / "o"], capsys)
    assert rc == 2
    assert "--source lstm" in err and "pip install 'hiddenstate[torch]'" in err
    assert not (tmp_path / "o").exists()


def test_lstm_source_runs_through_the_pipeline(texts, tmp_path):
    pytest.importorskip("torch")
    ref, tgt = texts
    small = tmp_path / "ref.txt"
    small.write_text("\n".join(ref.read_text().split("\n\n")[:20]) + "\n")
    result = personalize(small, tgt, tmp_path / "o", words=300, eval_words=100,
                         source="lstm", vocab_size=500,
                         source_options={"epochs": 1, "hidden_dim": 16, "embedding_dim": 16})
    s = result.summary
    assert s["source"]["kind"] == "lstm"
    src = load_source(tmp_path / "o" / "source")
    ev = result.evaluation
    bb = _stepped_log_probs(src, ev.X, ev.lengths)
    assert s["models"]["black_box"]["evaluation"]["perplexity"] == pytest.approx(
        math.exp(-bb.mean()), rel=1e-6)  # float32 network: batched vs stepped to ~1e-7


# --------------------------------------------------------------------------- the demo


def test_demo_personalises_the_bundled_logbook(tmp_path, capsys):
    target = demo.target_path()
    lines = target.read_text(encoding="utf-8").splitlines()
    assert 2500 < sum(len(s.split()) for s in lines) < 5000
    rc = demo.main(["--out", str(tmp_path / "d"), "--no-progress"])
    stdout = capsys.readouterr().out
    assert rc == 0
    assert (tmp_path / "d" / "index.html").is_file()
    s = json.loads((tmp_path / "d" / "summary.json").read_text())
    ppl = {k: v["evaluation"]["perplexity"] for k, v in s["models"].items()}
    assert ppl["props"] < 0.7 * ppl["black_box"] and ppl["props"] < ppl["hmm"]
    assert s["n_personalisation_words"] == 2000
    assert s["n_evaluation_words"] == sum(len(x.split()) for x in lines) - 2000
    assert f"{ppl['props']:>14.1f}" in stdout and "PROPS" in stdout


# --------------------------------------------------------------------------- the docs


def run_props_doc_example(heading: str, prints: str, capsys) -> None:
    """Run the first Python block of ``heading``'s section of docs/props.md and check that
    it prints the block shown after the text ``prints``."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "props.md").read_text("utf-8")
    section = doc.split(heading, 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    shown = section.split(prints, 1)[1].split("```\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/props.md", "exec"), {})
    assert capsys.readouterr().out == shown


def test_the_python_example_in_docs_props_prints_what_it_says(capsys):
    run_props_doc_example("## A small example in Python", "prints (", capsys)

"""BlockedHMMLM meets docs/estimator-contract.md, and hostile input at every public entry
point of hiddenstate.lm and the `hiddenstate lm` commands gets a one-line error that names
the argument and the fix (issues 20 and 21). Skipped without torch."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from lm_common import stream, vocab  # noqa: E402
from sklearn.base import clone  # noqa: E402

import hiddenstate as hs  # noqa: E402
from hiddenstate import _validation  # noqa: E402
from hiddenstate._bundle import read_bundle, write_bundle  # noqa: E402
from hiddenstate.errors import (  # noqa: E402
    HiddenStateError,
    InsufficientMemoryError,
    InvalidInputError,
    ModelFileError,
    NotFittedError,
)
from hiddenstate.lm import (  # noqa: E402
    BlockedHMMLM,
    load_checkpoint,
    read_lm_file,
)
from hiddenstate.lm.exact import SentenceLayout  # noqa: E402
from hiddenstate.lm.model import LM_FORMAT  # noqa: E402
from hiddenstate.textio import Vocabulary  # noqa: E402

_vocab = vocab
_stream = stream


def _fitted(**kw) -> tuple[BlockedHMMLM, np.ndarray]:
    rng = np.random.default_rng(0)
    ids = _stream(rng, 12, 20)
    m = BlockedHMMLM(states_per_cluster=3, dtype="float64", progress=False, batch_size=2,
                     bptt=6, **kw)
    m.fit(ids, vocabulary=_vocab(12), word_cluster=np.arange(12) % 4, max_steps=2)
    return m, ids


# ---------------------------------------------------------------- the estimator contract
def test_constructor_stores_arguments_and_clone_round_trips():
    m = BlockedHMMLM(states_per_cluster=-3, learn="nonsense", device="banana")  # not checked
    assert m.states_per_cluster == -3 and m.learn == "nonsense"
    params = m.get_params()
    c = clone(m)
    assert c.get_params() == params and c is not m
    c.set_params(states_per_cluster=4, learn="em", device="cpu")
    assert (c.states_per_cluster, c.learn) == (4, "em")
    assert BlockedHMMLM(**c.get_params()).get_params() == c.get_params()
    with pytest.raises(InvalidInputError, match="learn"):  # validated at fit
        m.fit(np.array([2, 1]), vocabulary=_vocab(4), word_cluster=np.zeros(4, np.int64))


def test_methods_before_fit_raise_not_fitted(tmp_path):
    m = BlockedHMMLM()
    for call in (lambda: m.score([2, 1]), lambda: m.score_samples([2, 1]),
                 lambda: m.perplexity([2, 1]), lambda: m.sample(3),
                 lambda: m.state_usage([2, 1]), lambda: m.save(tmp_path / "m"),
                 lambda: m.n_states_):
        with pytest.raises(NotFittedError):
            call()


def test_score_is_the_float_sum_of_per_sentence_score_samples():
    m, ids = _fitted()
    ids = np.concatenate([ids, [4, 5]])  # a last sentence without <eos>
    per = m.score_samples(ids)
    layout = SentenceLayout.from_ids(ids, 1)
    assert per.shape == (layout.n_sentences,) and per.dtype == np.float64
    for s in (0, 3, layout.n_sentences - 1):  # each sentence scored alone
        alone = ids[layout.bounds[s]:layout.bounds[s + 1]]
        assert per[s] == pytest.approx(m.score(alone), abs=1e-10)
    total = m.score(ids)
    assert isinstance(total, float) and total == pytest.approx(per.sum(), abs=1e-9)


def test_sample_is_reproducible_and_the_old_call_still_works():
    m, _ = _fitted()
    a = m.sample(30, random_state=4)
    assert len(a) == 30 and a == m.sample(30, random_state=np.random.default_rng(4))
    assert a != m.sample(30, random_state=5)
    with pytest.warns(FutureWarning, match="random_state"):
        assert m.sample(30, seed=4) == a
    with pytest.warns(FutureWarning, match="n_samples"):
        assert m.sample(n_tokens=30, random_state=4) == a
    assert len(m.sample()) == 1


def test_old_learn_spelling_and_em_prior_warn_and_mean_the_same():
    rng = np.random.default_rng(1)
    ids = _stream(rng, 12, 15)
    kw = dict(states_per_cluster=3, dtype="float64", progress=False, batch_size=2, bptt=5)
    fit = dict(vocabulary=_vocab(12), word_cluster=np.arange(12) % 4, max_steps=3)
    new = BlockedHMMLM(learn="stepwise-em", prior=1.2, **kw).fit(ids, **fit)
    with pytest.warns(FutureWarning) as rec:
        old = BlockedHMMLM(learn="stepwise_em", em_prior=0.2, **kw).fit(ids, **fit)
    assert {"learn='stepwise_em' is deprecated", "em_prior is deprecated"} <= {
        str(w.message).split(";")[0].split(" (")[0] for w in rec}
    for name, p in new.net_.state_dict().items():
        np.testing.assert_allclose(old.net_.state_dict()[name].numpy(), p.numpy(), atol=1e-12)
    with pytest.raises(InvalidInputError, match="prior"):
        BlockedHMMLM(learn="em", prior=0.5).fit(ids, **fit)
    with pytest.raises(InvalidInputError, match="em_prior"), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        BlockedHMMLM(learn="em", prior=1.5, em_prior=0.5).fit(ids, **fit)


def test_a_model_file_of_the_last_release_loads_with_the_new_names(tmp_path):
    m, ids = _fitted(learn="stepwise-em", prior=1.05)
    m.save(tmp_path / "m")
    meta, arrays = read_bundle(tmp_path / "m", LM_FORMAT, "model")
    meta["params"].pop("prior")
    meta["params"].update(em_prior=0.05, learn="stepwise_em")
    write_bundle(tmp_path / "old", LM_FORMAT, meta, arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # loading an old file does not warn
        old = hs.load(tmp_path / "old")
    assert (old.learn, old.prior, old.em_prior) == ("stepwise-em", pytest.approx(1.05), None)
    assert old.score(ids) == m.score(ids)


# ---------------------------------------------------------------- hostile input, Python
@pytest.mark.parametrize("X", [np.zeros((2, 3), np.int64), np.array([1.5, np.nan]),
                               np.array(["a", "b"]), np.array([], np.int64), None,
                               np.array([True, False]), np.array([2, 99]), np.array([-1, 1]),
                               [[1, 2], [3]]])
def test_bad_token_ids_are_refused_at_every_entry_point(X):
    m, _ = _fitted()
    calls = [m.score, m.score_samples, m.perplexity, m.state_usage,
             lambda x: m.fit(x, resume=True, max_steps=1)]
    if X is not None:  # valid=None means no validation text
        calls.append(lambda x: m.fit(np.array([2, 1]), x, resume=True, max_steps=1))
    for call in calls:
        with pytest.raises(InvalidInputError, match="X|valid"):
            call(X)


def test_ids_of_another_vocabulary_are_refused(tmp_path):
    """Validation ids read with their own vocabulary (issue 21: perplexity 702 and no
    error) are refused, naming the difference and the fix."""
    (tmp_path / "tr.txt").write_text("a b c\nb c a\nc a b d\n")
    (tmp_path / "va.txt").write_text("b c e\n")
    train, vocab = read_lm_file(tmp_path / "tr.txt")
    other, _ = read_lm_file(tmp_path / "va.txt")  # a vocabulary of its own
    m = BlockedHMMLM(states_per_cluster=2, progress=False)
    with pytest.raises(InvalidInputError, match=r"valid: encoded with another vocabulary.*"
                                                r"'e'.*read_lm_file\(path, model.vocabulary_\)"):
        m.fit(train, other, vocabulary=vocab, word_cluster=np.zeros(len(vocab), np.int64))
    ok, _ = read_lm_file(tmp_path / "va.txt", vocab)
    m.fit(train, ok, vocabulary=vocab, word_cluster=np.zeros(len(vocab), np.int64))
    assert m.history_[-1]["valid_ppl"] > 1
    with pytest.raises(InvalidInputError, match="X: encoded with another vocabulary"):
        m.score(other)
    assert m.score(ok[:2]) == m.score(np.asarray(ok)[:2])  # slices keep their vocabulary


@pytest.mark.parametrize("kw,name", [
    (dict(device="banana"), "device"), (dict(progress="sometimes"), "progress"),
    (dict(batch_size=0), "batch_size"), (dict(prior=float("nan"), learn="em"), "prior"),
    (dict(lr=float("inf")), "lr"), (dict(random_state=-1), "random_state"),
    (dict(bptt=2.5), "bptt"), (dict(learn=None), "learn"),
])
def test_bad_hyper_parameters_set_by_hand_are_refused_at_fit(kw, name):
    m, ids = _fitted()
    m.set_params(**kw)
    with pytest.raises(InvalidInputError, match=name):
        m.fit(ids, resume=True, max_steps=1)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_cuda_is_one_clear_error():
    with pytest.raises(InvalidInputError, match="device: 'cuda'.*no CUDA GPU.*device='cpu'"):
        BlockedHMMLM(device="cuda").initialize(_vocab(4), np.zeros(4, np.int64))


def test_bad_word_clusters_and_vocabularies_are_refused():
    v = _vocab(6)
    for wc in (np.array([0, 1, np.nan, 0, 1, 0]), np.zeros(5, np.int64), None,
               np.array([0, -1, 0, 0, 0, 0])):
        with pytest.raises(InvalidInputError, match="word_cluster"):
            BlockedHMMLM(states_per_cluster=2).initialize(v, wc)
    for bad in (["<eos>", "a"], Vocabulary(["<unk>", "a"]), None):
        with pytest.raises(InvalidInputError, match="vocabulary"):
            BlockedHMMLM(states_per_cluster=2).fit(np.array([1]), vocabulary=bad,
                                                   word_cluster=np.zeros(2, np.int64))


def test_huge_models_batches_and_samples_are_refused_before_allocating(monkeypatch):
    with pytest.raises(InsufficientMemoryError, match="states_per_cluster"):
        BlockedHMMLM(states_per_cluster=10**6).initialize(_vocab(6), np.arange(6) % 3)
    with pytest.raises(InsufficientMemoryError, match="states_per_cluster"):
        BlockedHMMLM(states_per_cluster=10**6, parameterization="neural",
                     state_dropout=10**6).initialize(_vocab(6), np.arange(6) % 3)
    m, ids = _fitted()
    m.set_params(batch_size=10**9, bptt=10**6)
    with pytest.raises(InsufficientMemoryError, match="batch_size"):
        m.fit(ids, resume=True, max_steps=1)
    monkeypatch.setattr(_validation, "available_memory", lambda: 10**6)
    monkeypatch.setattr(_validation, "_ALWAYS_FITS", 0)  # check this small size too
    with pytest.raises(InsufficientMemoryError, match="n_samples"):
        m.sample(10**5)
    for bad in (0, -2, 2.5, True, "3"):
        with pytest.raises(InvalidInputError, match="n_samples"):
            m.sample(bad)
    with pytest.raises(InvalidInputError, match="random_state"):
        m.sample(3, random_state=-1)
    for bad in (0, 1.5, True):
        with pytest.raises(InvalidInputError, match="max_steps"):
            m.fit(ids, resume=True, max_steps=bad)


def _tamper(tmp_path, edit) -> None:
    meta, arrays = read_bundle(tmp_path / "ckpt", LM_FORMAT, "checkpoint")
    edit(meta, arrays)
    write_bundle(tmp_path / "bad", LM_FORMAT, meta, arrays)


@pytest.mark.parametrize("edit,match", [
    (lambda m, a: m["train_state"].update(epoch=-1), "counters"),
    (lambda m, a: m["train_state"].update(lr="fast"), "counters"),
    (lambda m, a: m["train_state"].update(oops=1), "unknown training state"),
    (lambda m, a: a.update(carry=np.full((2, 3), np.nan)), "carried distribution"),
    (lambda m, a: a.update(carry=np.ones((2, 7))), "carried distribution"),
    (lambda m, a: a.update(rng=a["rng"][:10]), "malformed training state"),
    (lambda m, a: a.update({"acc.trans": -a["acc.trans"] - 1}), "running counts"),
    (lambda m, a: m.update(history="lots"), "history"),
    (lambda m, a: m["params"].update(states_per_cluster="x"), "states_per_cluster"),
])
def test_tampered_checkpoints_are_refused(tmp_path, edit, match):
    rng = np.random.default_rng(3)
    ids = _stream(rng, 12, 20)
    BlockedHMMLM(states_per_cluster=3, learn="stepwise-em", progress=False, batch_size=2,
                 bptt=6).fit(ids, vocabulary=_vocab(12), word_cluster=np.arange(12) % 4,
                             max_steps=2, checkpoint=tmp_path / "ckpt")
    load_checkpoint(tmp_path / "ckpt")  # the untouched one loads
    _tamper(tmp_path, edit)
    with pytest.raises(ModelFileError, match=match):
        load_checkpoint(tmp_path / "bad")


# ---------------------------------------------------------------- the command line
@dataclass
class _Run:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    """``cli(args)``: ``hiddenstate lm ARGS`` in ``tmp_path`` (in this process; stderr is
    captured, so it is not a terminal, as in a log)."""
    from hiddenstate.cli import main
    monkeypatch.chdir(tmp_path)

    def run(args) -> _Run:
        capsys.readouterr()
        code = main(["lm", *map(str, args)])
        out = capsys.readouterr()
        return _Run(code, out.out, out.err)
    return run


def _texts(tmp_path):
    rng = np.random.default_rng(11)
    words = [f"w{i}" for i in range(10)]
    lines = [" ".join(rng.choice(words, size=rng.integers(2, 6))) for _ in range(40)]
    (tmp_path / "tr.txt").write_text("\n".join(lines[:32]) + "\n")
    (tmp_path / "va.txt").write_text("\n".join(lines[32:]) + "\n")
    (tmp_path / "other.txt").write_text("\n".join(lines[:32]).replace("w3", "zz") + "\n")
    (tmp_path / "paths").write_text("".join(f"{i % 3:02b}\tw{i}\t1\n" for i in range(10)))
    return ["train", "--train", "tr.txt", "--valid", "va.txt", "--paths", "paths",
            "--states-per-cluster", "2", "--batch-size", "2", "--bptt", "8"]


def _one_line_error(r: _Run, *needles: str) -> None:
    assert r.returncode == 2, r.stderr
    err = r.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for n in needles:
        assert n in err, err


def test_cli_resume_refuses_another_vocabulary_and_honours_epochs(tmp_path, cli):
    base = _texts(tmp_path)
    assert cli([*base, "--out", "m", "--epochs", "1"]).returncode == 0
    r = cli([*base[:2], "other.txt", *base[3:], "--out", "m", "--resume"])
    _one_line_error(r, "--train", "other.txt", "'zz'", "without --resume")
    r = cli([*base, "--out", "m", "--resume", "--epochs", "3"])
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["epoch"] == 3
    assert len(hs.load(tmp_path / "m").history_) == 3
    _one_line_error(cli([*base, "--out", "m", "--resume", "--epochs", "2"]),
                    "--epochs", "3 epochs already")


def test_cli_device_errors_are_one_line(tmp_path, cli):
    base = _texts(tmp_path)
    _one_line_error(cli([*base, "--out", "m", "--device", "banana"]),
                    "device", "'banana'")
    if not torch.cuda.is_available():
        _one_line_error(cli([*base, "--out", "m", "--device", "cuda"]),
                        "no CUDA GPU")


def test_cli_reads_utf16_with_encoding_and_says_so_without(tmp_path, cli):
    base = _texts(tmp_path)
    text = (tmp_path / "tr.txt").read_text()
    (tmp_path / "tr16.txt").write_text(text, encoding="utf-16")
    args = ["train", "--train", "tr16.txt", *base[5:], "--out", "m"]
    _one_line_error(cli(args), "--encoding", "utf-16")
    assert cli([*args, "--encoding", "utf-16"]).returncode == 0
    m = hs.load(tmp_path / "m")
    assert m.vocabulary_.tokens == read_lm_file(tmp_path / "tr.txt")[1].tokens
    (tmp_path / "va16.txt").write_text((tmp_path / "va.txt").read_text(), encoding="utf-16")
    r = cli(["eval", "m", "va16.txt", "--encoding", "utf-16"])
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["perplexity"] == pytest.approx(
        m.perplexity(read_lm_file(tmp_path / "va.txt", m.vocabulary_)[0]))
    _one_line_error(cli(["eval", "m", "va16.txt"]), "--encoding")


def test_cli_train_into_a_log_prints_lines_not_a_progress_bar(tmp_path, cli):
    base = _texts(tmp_path)
    r = cli([*base, "--out", "m", "--epochs", "3"])  # stderr is a pipe
    assert r.returncode == 0, r.stderr
    lines = [s for s in r.stderr.splitlines() if s.strip()]
    assert "\r" not in r.stderr and len(lines) == 3, r.stderr
    assert all(s.startswith("lm: epoch") and "valid ppl" in s for s in lines)


def test_cli_tampered_model_is_one_line_error(tmp_path, cli):
    base = _texts(tmp_path)
    assert cli([*base, "--out", "m"]).returncode == 0
    meta, arrays = read_bundle(tmp_path / "m", LM_FORMAT, "model")
    arrays["param.trans_logits"] = arrays["param.trans_logits"][:-1]
    write_bundle(tmp_path / "bad", LM_FORMAT, meta, arrays)
    _one_line_error(cli(["eval", "bad", "va.txt"]), "trans_logits")
    _one_line_error(cli(["sample", "nowhere"]), "nowhere")


def test_every_error_here_is_a_hiddenstate_error():
    assert issubclass(InsufficientMemoryError, HiddenStateError)
    assert issubclass(ModelFileError, HiddenStateError)


def test_cli_names_the_flags_random_without_states_and_resume_without_checkpoint(tmp_path,
                                                                                  cli):
    base = _texts(tmp_path)
    _one_line_error(cli(["train", "--train", "tr.txt", "--out", "r", "--constraint", "random"]),
                    "--states", "--constraint random")
    assert not (tmp_path / "r").exists()
    _one_line_error(cli([*base, "--out", "fresh", "--resume"]),
                    "--resume", "fresh/checkpoint", "drop --resume")
    assert cli([*base, "--out", "fresh"]).returncode == 0  # what the message advises


def test_cli_baseline_is_the_kneser_ney_perplexity_of_each_sentence(tmp_path, cli):
    from hiddenstate.sources import KneserNeySource
    _texts(tmp_path)
    r = cli(["baseline", "va.txt", "--train", "tr.txt", "--order", "3"])
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    # rebuilt by hand: the training vocabulary, one <eos> after every line, each sentence
    # scored from the start of a sequence
    _, vocab = read_lm_file(tmp_path / "tr.txt")
    lines = [ln.split() + ["<eos>"] for ln in (tmp_path / "tr.txt").read_text().splitlines()]
    kn = KneserNeySource(order=3).fit(vocab.encode(t for ln in lines for t in ln),
                                      [len(ln) for ln in lines], n_symbols=len(vocab))
    valid = [ln.split() + ["<eos>"] for ln in (tmp_path / "va.txt").read_text().splitlines()]
    total = sum(float(kn.log_probs(vocab.encode(ln)).sum()) for ln in valid)
    n = sum(len(ln) for ln in valid)
    assert got["tokens"] == n
    assert got["log_likelihood"] == pytest.approx(total, rel=1e-12)
    assert got["perplexity"] == pytest.approx(np.exp(-total / n), rel=1e-12)

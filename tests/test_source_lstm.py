"""LSTMSource: the LSTM language model as a PROPS source (needs the torch extra)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tamper  # noqa: E402

from hiddenstate._bundle import arrays_path, write_bundle  # noqa: E402
from hiddenstate.errors import (  # noqa: E402
    HiddenStateError,
    InvalidInputError,
    ModelFileError,
    NotFittedError,
)
from hiddenstate.sources import Source  # noqa: E402
from hiddenstate.sources.lstm import LSTMSource, MissingDependencyError  # noqa: E402
from hiddenstate.textio import Vocabulary  # noqa: E402

torch.set_num_threads(1)

SMALL = dict(embedding_dim=8, hidden_dim=16, batch_size=8, bptt=16)


@pytest.fixture(scope="module")
def cyclic():
    """Sequences 0 1 2 3 4 0 1 ... of lengths 9 .. 30, all starting at 0."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(9, 31, size=16)
    X = np.concatenate([np.arange(n) % 5 for n in lengths])
    return X, lengths


@pytest.fixture(scope="module")
def trained(cyclic):
    X, lengths = cyclic
    return LSTMSource(epochs=30, lr=1e-2, random_state=0, **SMALL).fit(X, lengths)


@pytest.fixture(scope="module")
def random_model():
    """A briefly trained 2-layer model on random data (non-trivial distributions)."""
    rng = np.random.default_rng(1)
    X = rng.integers(0, 40, size=600)
    return LSTMSource(n_symbols=40, embedding_dim=8, hidden_dim=12, num_layers=2,
                      dropout=0.2, epochs=1, batch_size=4, bptt=8,
                      random_state=3).fit(X, [300, 200, 100])


def loop_log_probs(src, y):
    """The protocol's default: reset/step."""
    return Source.log_probs(src, y)


# --------------------------------------------------------------------------- learning


def test_learns_cyclic_pattern_and_first_symbol(trained):
    p0 = trained.reset()
    assert p0.dtype == np.float64 and p0.shape == (5,)
    assert abs(p0.sum() - 1) < 1e-6
    assert int(np.argmax(p0)) == 0  # every training sequence starts with 0
    y = np.arange(40) % 5
    probs = np.exp(trained.log_probs(y))
    assert np.all(probs[2:] > 0.95), probs.round(3)
    # and step by step: every distribution is normalised and predicts the cycle
    p = trained.reset()
    for t in range(12):
        p = trained.step(t % 5)
        assert abs(p.sum() - 1) < 1e-6
        assert p[(t + 1) % 5] > 0.95


def test_learns_one_long_sequence_cut_into_lanes():
    # lengths=None: one sequence of 600 tokens, cut into pieces so that 8 lanes are busy
    X = np.arange(600) % 4
    src = LSTMSource(epochs=12, lr=1e-2, **SMALL).fit(X)
    assert len(src._pieces(np.array([600]), 600)) == 8
    probs = np.exp(src.log_probs(X[:50]))
    assert np.all(probs[3:] > 0.95), probs.round(3)


def test_training_loss_decreases_and_callback(cyclic):
    X, lengths = cyclic
    seen = []
    src = LSTMSource(epochs=6, lr=1e-2, **SMALL).fit(
        X, lengths, callback=lambda e, loss: seen.append((e, loss)))
    losses = src.training_loss_
    assert len(losses) == 6 and seen == list(enumerate(losses, start=1))
    assert all(b < a for a, b in zip(losses, losses[1:], strict=False)), losses
    assert losses[0] < np.log(5) + 0.1  # the first epoch starts near the uniform loss


def test_same_seed_same_weights_and_global_rng_untouched(cyclic):
    X, lengths = cyclic
    before = torch.get_rng_state()
    a = LSTMSource(epochs=2, dropout=0.3, random_state=7, **SMALL).fit(X, lengths)
    assert torch.equal(torch.get_rng_state(), before)
    b = LSTMSource(epochs=2, dropout=0.3, random_state=7, **SMALL).fit(X, lengths)
    c = LSTMSource(epochs=2, dropout=0.3, random_state=8, **SMALL).fit(X, lengths)
    sa, sb, sc = (m._net.state_dict() for m in (a, b, c))
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert a.training_loss_ == b.training_loss_
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)


def test_training_recurrence_matches_nn_lstm(random_model):
    """The written-out training recurrence (with lane resets) equals torch's nn.LSTM."""
    src = random_model
    net = src._net
    rng = np.random.default_rng(2)
    inp = torch.from_numpy(rng.integers(0, 41, size=(3, 10)))
    resets = torch.zeros(3, 10, dtype=torch.bool)
    resets[1, 4] = True
    L, H = src.num_layers, src.hidden_dim
    state = [(torch.randn(3, H), torch.randn(3, H)) for _ in range(L)]
    assert not net.training
    with torch.no_grad():
        top, _ = src._train_forward(inp, resets, state)
        logits = net.decoder(top)
        h0 = torch.stack([h for h, _ in state])
        c0 = torch.stack([c for _, c in state])
        ref, _ = net.lstm(net.embedding(inp), (h0, c0))
        ref = net.decoder(ref)
        # lane 1 restarts from the zero state at step 4
        z = torch.zeros(L, 1, H)
        tail, _ = net.lstm(net.embedding(inp[1:2, 4:]), (z, z))
        ref[1, 4:] = net.decoder(tail[0])
    np.testing.assert_allclose(logits.numpy(), ref.numpy(), atol=1e-5)


# --------------------------------------------------------------------------- protocol


def test_batched_log_probs_match_step_loop_across_chunks(random_model):
    src = random_model
    y = np.random.default_rng(4).integers(0, 40, size=300)
    ref = loop_log_probs(src, y)
    ref_state = src.snapshot()
    src.chunk_size = 64  # 300 tokens: five chunks, the state carried across
    try:
        got = src.log_probs(y)
    finally:
        del src.chunk_size
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)
    assert np.all(got < 0) and got.dtype == np.float64
    # it leaves the source where the loop leaves it
    for k, v in src.snapshot().items():
        np.testing.assert_allclose(v, ref_state[k], atol=1e-5)
    np.testing.assert_allclose(src.log_probs(y), got, atol=1e-5)  # default chunk size
    assert src.log_probs(np.array([], dtype=np.int64)).shape == (0,)


def test_log_probs_from_matches_default_and_continues(random_model):
    src = random_model
    y = np.random.default_rng(5).integers(0, 40, size=90)
    ref, ref_pos = Source.log_probs_from(src, y)
    src.chunk_size = 32
    try:
        got, pos = src.log_probs_from(y)
        np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)
        np.testing.assert_allclose(pos["next"], ref_pos["next"], atol=1e-6)
        assert abs(pos["next"].sum() - 1) < 1e-12
        # a sequence cut in three pieces scores as the whole
        a, pa = src.log_probs_from(y[:25])
        b, pb = src.log_probs_from(y[25:70], pa)
        e, pe = src.log_probs_from(np.array([], dtype=np.int64), pb)
        c, _ = src.log_probs_from(y[70:], pe)
    finally:
        del src.chunk_size
    np.testing.assert_allclose(np.concatenate([a, b, e, c]), ref, atol=1e-5, rtol=0)
    with pytest.raises(InvalidInputError, match="start"):
        src.log_probs_from(y, {"h": pa["h"], "c": pa["c"]})


def test_snapshot_restore_mid_sequence(random_model):
    src = random_model
    y = np.random.default_rng(6).integers(0, 40, size=30)
    src.reset()
    for w in y[:12]:
        src.step(int(w))
    snap = src.snapshot()
    assert set(snap) == {"h", "c"}
    assert all(v.dtype == np.float64 and v.shape == (2, 12) for v in snap.values())
    first = [src.step(int(w)) for w in y[12:]]
    src.reset()
    src.step(3)  # wander off elsewhere
    src.restore(snap)
    second = [src.step(int(w)) for w in y[12:]]
    assert all(np.array_equal(p, q) for p, q in zip(first, second, strict=True))


def test_reset_forgets_the_previous_sequence(random_model):
    src = random_model
    p0 = src.reset()
    p1 = src.step(5)
    for w in range(20):
        src.step(w)
    assert np.array_equal(src.reset(), p0)
    assert np.array_equal(src.step(5), p1)


def test_inference_has_no_dropout(random_model):
    src = random_model  # dropout=0.2: inference must still be deterministic
    assert np.array_equal(src.reset(), src.reset())
    y = np.arange(20)
    assert np.array_equal(src.log_probs(y), src.log_probs(y))


# --------------------------------------------------------------------------- persistence


def test_save_load_round_trip_is_exact(random_model, tmp_path):
    src = random_model
    src.vocabulary = Vocabulary(["<unk>"] + [f"w{i}" for i in range(1, 40)])
    try:
        src.save(tmp_path / "m")
    finally:
        src.vocabulary = None
    doc = json.loads((tmp_path / "m" / "model.json").read_text())
    assert doc["format"] == "hiddenstate-source" and doc["class"] == "LSTMSource"
    back = LSTMSource.load(tmp_path / "m")
    assert back.vocabulary.tokens[1] == "w1" and back.n_symbols == 40
    assert back.training_loss_ == src.training_loss_
    assert back.get_params() == src.get_params()
    assert back.describe() == src.describe() == "LSTM language model (2x12, W=40)"
    assert np.array_equal(back.reset(), src.reset())
    for w in (3, 0, 39, 7):
        assert np.array_equal(back.step(w), src.step(w))
    y = np.arange(40)
    assert np.array_equal(back.log_probs(y), src.log_probs(y))


def test_tampered_or_inconsistent_files_are_rejected(trained, tmp_path):
    trained.save(tmp_path / "m")
    npz = arrays_path(tmp_path / "m")
    with np.load(npz) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["decoder.bias"] = arrays["decoder.bias"] + 1.0
    np.savez(npz, **arrays)
    with pytest.raises(ModelFileError, match="manifest"):
        LSTMSource.load(tmp_path / "m")

    # a consistent manifest but tensors that do not fit the hyper-parameters
    trained.save(tmp_path / "w")
    doc = json.loads((tmp_path / "w" / "model.json").read_text())
    meta = {k: doc[k] for k in ("class", "params", "n_symbols", "vocabulary", "training_loss")}
    arrays = tamper.read_arrays(tmp_path / "w")
    bad = dict(arrays, **{"decoder.bias": np.zeros(3)})
    write_bundle(tmp_path / "w", "hiddenstate-source", meta, bad)
    with pytest.raises(ModelFileError, match="decoder.bias"):
        LSTMSource.load(tmp_path / "w")
    write_bundle(tmp_path / "w", "hiddenstate-source", dict(meta, **{"class": "Other"}), arrays)
    with pytest.raises(ModelFileError, match="Other"):
        LSTMSource.load(tmp_path / "w")
    write_bundle(tmp_path / "w", "hiddenstate-source",
                 dict(meta, params={**meta["params"], "hidden_dim": -1}), arrays)
    with pytest.raises(ModelFileError, match="hidden_dim"):
        LSTMSource.load(tmp_path / "w")
    with pytest.raises(ModelFileError):
        LSTMSource.load(tmp_path / "missing")


# --------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize("kwargs, name", [
    ({"n_symbols": 0}, "n_symbols"),
    ({"hidden_dim": 0}, "hidden_dim"),
    ({"embedding_dim": 2.5}, "embedding_dim"),
    ({"num_layers": True}, "num_layers"),
    ({"dropout": 1.0}, "dropout"),
    ({"epochs": -1}, "epochs"),
    ({"batch_size": 0}, "batch_size"),
    ({"bptt": 0}, "bptt"),
    ({"lr": 0.0}, "lr"),
    ({"lr": float("nan")}, "lr"),
    ({"clip": -1.0}, "clip"),
    ({"random_state": "x"}, "random_state"),
    ({"device": "nonsense"}, "device"),
])
def test_bad_hyper_parameters_name_the_argument(kwargs, name):
    with pytest.raises(InvalidInputError, match=name):
        LSTMSource(**kwargs)


def test_bad_data_names_the_argument(trained):
    src = LSTMSource(n_symbols=4, epochs=0)
    with pytest.raises(InvalidInputError, match="X"):
        src.fit([0, 1, 5])
    with pytest.raises(InvalidInputError, match="X"):
        src.fit([0, -1, 2])
    with pytest.raises(InvalidInputError, match="X"):
        src.fit([0.5, 1.0])
    with pytest.raises(InvalidInputError, match="lengths"):
        src.fit([0, 1, 2], lengths=[2, 2])
    with pytest.raises(InvalidInputError, match="vocabulary"):
        src.fit([0, 1, 2], vocabulary=["a", "b"])
    with pytest.raises(InvalidInputError, match="n_symbols"):
        src.fit([0, 1, 2], vocabulary=Vocabulary(["<unk>", "a", "b"]))
    with pytest.raises(InvalidInputError, match="callback"):
        src.fit([0, 1, 2], callback=3)
    with pytest.raises(NotFittedError):
        src.reset()
    with pytest.raises(InvalidInputError, match="y"):
        trained.step(5)
    with pytest.raises(InvalidInputError, match="y"):
        trained.step(1.0)
    with pytest.raises(InvalidInputError, match="y"):
        trained.log_probs([0, 9])
    with pytest.raises(InvalidInputError, match="snapshot"):
        trained.restore({"h": np.zeros((1, 3)), "c": np.zeros((1, 3))})


def test_vocabulary_sets_the_alphabet():
    v = Vocabulary(["<unk>", "a", "b", "c"])
    src = LSTMSource(epochs=1, **SMALL).fit([1, 2, 3, 1, 0], vocabulary=v)
    assert src.n_symbols == 4 and src.vocabulary is v
    assert src.reset().shape == (4,)


def test_without_torch_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'hiddenstate\[torch\]'") \
            as err:
        LSTMSource()
    assert isinstance(err.value, HiddenStateError)


def test_package_imports_without_torch():
    # a finder that refuses torch (sys.modules["torch"] = None would confuse scipy)
    code = ("import sys, importlib.abc\n"
            "class NoTorch(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        if name.split('.')[0] == 'torch':\n"
            "            raise ImportError('torch is blocked')\n"
            "sys.meta_path.insert(0, NoTorch())\n"
            "import hiddenstate, hiddenstate.sources as s\n"
            "assert s.LSTMSource.__name__ == 'LSTMSource'\n"
            "try:\n    s.LSTMSource()\nexcept s.MissingDependencyError as e:\n    print(e)\n"
            "assert 'torch' not in sys.modules\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "hiddenstate[torch]" in out.stdout

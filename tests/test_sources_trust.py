"""Sources under a hostile eye: devices that are not there, alphabets from huge, negative or
fractional ids, memory estimated before allocating, callables and plain protocol objects
that return garbage, and PROPS with a plain object as its source (the same numbers as the
same model behind CallableSource)."""

from __future__ import annotations

import resource

import numpy as np
import pytest
from test_props import AR1Source, shift_source

import hiddenstate as hs
from hiddenstate import _validation
from hiddenstate.errors import InsufficientMemoryError, InvalidInputError, ModelFileError
from hiddenstate.sources import CallableSource, KneserNeySource, Source, base
from hiddenstate.textio import Vocabulary

W = 4


# --------------------------------------------------------------------------- alphabets


@pytest.mark.parametrize("X, kwargs, needle", [
    ([], {}, "X: no samples"),
    ([0, -1, 2], {}, "X: symbol -1 is negative"),
    ([0, 0.5], {}, "X: symbols must be whole numbers"),
    ([0, np.nan], {}, "X: contains NaN"),
    (["a", "b"], {}, "X: symbols must be integers"),
    ([10**7], {}, "X: the largest symbol is 10000000 but only 1 distinct"),
    ([0, 2**62], {}, "only 2 distinct symbols occur"),
    ([0, 1, 5], {"n_symbols": 3}, "X: symbol 5 is out of range for n_symbols=3"),
    ([0, 1], {"n_symbols": 0}, "n_symbols: expected an integer >= 1"),
    ([0, 1], {"n_symbols": 2.0}, "n_symbols: expected an integer"),
    ([0, 1], {"n_symbols": 10**15}, "n_symbols: a next-symbol distribution over"),
    ([0, 1], {"vocabulary": ["<unk>", "a"]}, "vocabulary: expected a hiddenstate"),
    ([0, 1], {"n_symbols": 3, "vocabulary": Vocabulary(["<unk>", "a"])}, "differs from the"),
])
def test_kneser_ney_fit_refuses_bad_alphabets(X, kwargs, needle):
    too_large = "distribution over" in needle  # the memory check: InsufficientMemoryError
    with pytest.raises(InsufficientMemoryError if too_large else InvalidInputError,
                       match=needle.replace("(", r"\(")):
        KneserNeySource(order=2).fit(np.array(X), **kwargs)


def test_sparse_ids_need_an_explicit_alphabet_but_small_ones_do_not():
    # below SPARSE_MIN an inferred alphabet is never refused (tests use ids such as [0, 3])
    src = KneserNeySource(order=2).fit([0, 3, base.SPARSE_MIN - 1])
    assert src.n_symbols == base.SPARSE_MIN
    with pytest.raises(InvalidInputError, match="mostly unused ids"):
        KneserNeySource(order=2).fit([0, 3, base.SPARSE_MIN])
    # half used is enough; and an explicit n_symbols means it
    y = np.arange(0, 2 * base.SPARSE_MIN, 2)  # ids 0, 2, 4, ...: half of max + 1 (rounded)
    assert KneserNeySource(order=2).fit(np.append(y, 1)).n_symbols == y[-1] + 1
    big = KneserNeySource(order=2).fit([0, 5000], n_symbols=5001)
    p = big.reset()
    assert p.shape == (5001,) and abs(p.sum() - 1) < 1e-12


@pytest.mark.parametrize("kwargs", [{"order": 0}, {"order": 2.5}, {"discount": 1.0},
                                    {"discount": float("nan")}])
def test_kneser_ney_bad_hyper_parameters(kwargs):
    with pytest.raises(InvalidInputError, match=next(iter(kwargs))):
        KneserNeySource(**kwargs).fit([0, 1, 0])


def test_memory_is_checked_before_allocating(monkeypatch):
    """The check uses the device's available memory; with 1 MiB "available", a 100,000-word
    n-gram source (2.4 MB per prediction) is refused, a 1,000-word one is not."""
    monkeypatch.setattr(_validation, "available_memory", lambda device="cpu": 2**20)
    monkeypatch.setattr(_validation, "_ALWAYS_FITS", 0)  # check these small sizes too
    with pytest.raises(InsufficientMemoryError, match=r"n_symbols: .* 100,000 symbols needs "
                                                      r"about 2\.29 MiB .* only 1 MiB"):
        KneserNeySource().fit([0, 1], n_symbols=100_000)
    assert KneserNeySource().fit([0, 1], n_symbols=1000).n_symbols == 1000
    voc = Vocabulary(["<unk>"] + [f"w{i}" for i in range(99_999)])
    with pytest.raises(InsufficientMemoryError, match="vocabulary: a next-symbol distribution"):
        KneserNeySource().fit([0, 1], vocabulary=voc)


# --------------------------------------------------------------------------- LSTM


def test_lstm_device_must_exist():
    torch = pytest.importorskip("torch")
    from hiddenstate.sources.lstm import LSTMSource

    with pytest.raises(InvalidInputError, match="device: 'gpu0' is not a torch device"):
        LSTMSource(device="gpu0")
    with pytest.raises(InvalidInputError, match="device: 'meta'"):
        LSTMSource(device="meta")
    with pytest.raises(InvalidInputError, match="device: expected a string"):
        LSTMSource(device=0)
    if not torch.cuda.is_available():
        with pytest.raises(InvalidInputError, match=r"device: 'cuda' is not available here.*"
                                                    r"device='cpu'"):
            LSTMSource(device="cuda")
    else:  # pragma: no cover (a machine with a GPU)
        n = torch.cuda.device_count()
        with pytest.raises(InvalidInputError, match=f"device: 'cuda:{n}' is not available"):
            LSTMSource(device=f"cuda:{n}")


def test_lstm_one_huge_id_is_refused_without_allocating():
    """It used to take max(X) + 1 = 10**7 + 1 symbols and allocate about 24 GB."""
    pytest.importorskip("torch")
    from hiddenstate.sources.lstm import LSTMSource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(InvalidInputError, match="X: the largest symbol is 10000000 but only 1 "
                                                "distinct symbols occur"):
        LSTMSource(epochs=1).fit(np.array([10**7]))
    with pytest.raises(InsufficientMemoryError, match=r"n_symbols: training the LSTM over "
                                                      r"10,000,000,000 symbols needs about"):
        LSTMSource(epochs=1, n_symbols=10**10).fit(np.array([0, 1]))
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 200 * 1024


def test_lstm_memory_estimate_counts_the_real_network():
    """The estimate's parameter count is the network's: 4 copies (weights, gradients, two
    Adam moments) of float32 parameters plus three float32 logit blocks."""
    pytest.importorskip("torch")
    from hiddenstate.sources.lstm import LSTMSource

    src = LSTMSource(embedding_dim=5, hidden_dim=7, num_layers=2, epochs=0).fit([0, 1, 2, 9])
    n_params = sum(p.numel() for p in src._net.parameters())
    W = src.n_symbols
    assert src._training_bytes(W) == 4.0 * (4 * n_params + 3 * max(64 * W, 1 << 22))


@pytest.mark.parametrize("X, needle", [([], "X: no samples"), ([0, -2], "negative"),
                                       ([0.5], "whole numbers")])
def test_lstm_fit_bad_symbols(X, needle):
    pytest.importorskip("torch")
    from hiddenstate.sources.lstm import LSTMSource

    with pytest.raises(InvalidInputError, match=needle):
        LSTMSource(epochs=0).fit(np.array(X))


# --------------------------------------------------------------------------- callables


def returning(value):
    return CallableSource(lambda history: value, W, name="bad")


@pytest.mark.parametrize("value, needle", [
    (np.array([0.5, 0.5, np.nan, 0.0]), "negative or non-finite"),
    (np.array([0.5, 0.7, -0.2, 0.0]), "negative or non-finite"),
    (np.array([0.5, 0.5, 0.5, 0.5]), "sums to 2.0, not 1"),
    (np.array([0.5, 0.5]), r"shape \(4,\), got \(2,\)"),
    (np.full((4, 1), 0.25), r"shape \(4,\), got \(4, 1\)"),
    (None, r"shape \(4,\), got \(\)"),
    (["a", "b", "c", "d"], "returned list, not an array of 4 probabilities"),
    ({"p": 1}, "not an array of 4 probabilities"),
])
def test_callable_returning_garbage_is_named(value, needle):
    with pytest.raises(InvalidInputError, match="source 'bad': .*" + needle):
        returning(value).reset()
    with pytest.raises(InvalidInputError, match="source 'bad'"):
        hs.PROPS([returning(value)], n_perturbation_states=1).fit(np.arange(6) % W)


def test_callable_source_arguments_and_positions():
    src = CallableSource(shift_source(), W)
    src.reset()
    for y in (W, -2, 1.0, True, "1"):
        with pytest.raises(InvalidInputError, match="y: expected a symbol id in 0 .. 3"):
            src.step(y)
    with pytest.raises(InvalidInputError, match="^y: .*does not declare .*supports_missing"):
        src.step(-1)   # the missing marker, which this function was not declared to take
    assert src.snapshot()["history"].tolist() == []  # nothing was consumed
    src.step(2)
    snap = src.snapshot()
    np.testing.assert_array_equal(src.step(np.int64(0)), shift_source()(np.array([2, 0])))
    src.restore(snap)
    assert src.snapshot()["history"].tolist() == [2]
    for bad in ({"history": [0, 9]}, {"history": [0.5]}, {}, [1]):
        with pytest.raises(InvalidInputError, match="snapshot"):
            src.restore(bad)
    with pytest.raises(InvalidInputError, match="n_symbols"):
        CallableSource(shift_source(), 0)
    with pytest.raises(InvalidInputError, match="vocabulary: expected None or a"):
        CallableSource(shift_source(), W, vocabulary=Vocabulary(["<unk>", "a"]))
    with pytest.raises(InvalidInputError, match="name"):
        CallableSource(shift_source(), W, name=3)


class NaNStep(Source):
    """A Source subclass using the default loops, whose step returns NaN."""

    n_symbols = W

    def reset(self):
        return np.full(W, 1 / W)

    def step(self, y):
        return np.full(W, np.nan)

    def snapshot(self):
        return {}

    def restore(self, snapshot):
        pass


def test_default_loops_check_what_a_subclass_returns():
    with pytest.raises(InvalidInputError, match="source NaNStep: the predictive distribution "
                                                "has negative or non-finite entries"):
        NaNStep().log_probs(np.array([0, 1, 2]))
    with pytest.raises(InvalidInputError, match="source NaNStep"):
        hs.PROPS([NaNStep()], n_perturbation_states=1).fit(np.arange(8) % W)


# --------------------------------------------------------------------------- plain objects in PROPS


class Plain:
    """The shift source as a plain object: reset/step/n_symbols, nothing inherited."""

    n_symbols = W

    def __init__(self, snapshots: bool = False):
        if snapshots:
            self.snapshot = lambda: {"history": np.array(self.history, dtype=np.int64)}
            self.restore = lambda d: setattr(self, "history", [int(v) for v in d["history"]])

    def reset(self):
        self.history = []
        return shift_source()(np.array([], dtype=np.int64))

    def step(self, y):
        self.history.append(y)
        return shift_source()(np.array(self.history))


def test_plain_object_gives_the_numbers_of_the_callable_source():
    y = np.random.default_rng(0).integers(0, W, 400)
    lengths = [150, 250]
    for learn in ("online-em", "em"):
        a = hs.PROPS([Plain()], n_perturbation_states=2, learn=learn, n_iter=5,
                     random_state=3).fit(y, lengths)
        b = hs.PROPS([CallableSource(shift_source(), W)], n_perturbation_states=2, learn=learn,
                     n_iter=5,
                     random_state=3).fit(y, lengths)
        np.testing.assert_array_equal(a.transmat_, b.transmat_)
        np.testing.assert_array_equal(a.emissionprob_, b.emissionprob_)
        assert a.score(y, lengths) == b.score(y, lengths)
    sa, sb = a.token_scores(y[:50]), b.token_scores(y[:50])
    np.testing.assert_array_equal(sa.source_log_prob, sb.source_log_prob)
    np.testing.assert_array_equal(sa.filtered, sb.filtered)
    for ra, rb in zip(a.sample(30, random_state=1), b.sample(30, random_state=1), strict=True):
        np.testing.assert_array_equal(ra, rb)
    assert isinstance(a.sources[0], Plain)  # the parameter is kept as given


def test_plain_object_continues_a_stream_only_with_snapshot_and_restore():
    y = np.random.default_rng(1).integers(0, W, 300)
    whole = hs.PROPS([Plain(snapshots=True)], n_perturbation_states=1, random_state=0).fit(y)
    cut = hs.PROPS([Plain(snapshots=True)], n_perturbation_states=1, random_state=0)
    cut.partial_fit(y[:120])
    cut.partial_fit(y[120:], continues=True)
    np.testing.assert_array_equal(whole.transmat_, cut.transmat_)
    np.testing.assert_array_equal(whole.emissionprob_, cut.emissionprob_)
    bare = hs.PROPS([Plain()], n_perturbation_states=1, random_state=0)
    bare.partial_fit(y[:120])
    bare.partial_fit(y[120:200])  # a new sequence needs no snapshot
    with pytest.raises(InvalidInputError, match=r"sources: entry 0: a Plain has no "
                                                r"snapshot\(\)/restore\(\).*continues=False"):
        bare.partial_fit(y[200:], continues=True)


def test_plain_dense_object_matches_the_density_source_subclass():
    class PlainAR1:
        def __init__(self):
            self._inner = AR1Source()
            self.n_features = self._inner.n_features
            self.reset, self.step = self._inner.reset, self._inner.step
            self.predictive = self._inner.predictive

    X = np.random.default_rng(2).normal(size=(200, 2))
    a = hs.PROPS([PlainAR1()], n_perturbation_states=1, emission="gaussian", random_state=0).fit(X)
    b = hs.PROPS([AR1Source()], n_perturbation_states=1, emission="gaussian", random_state=0).fit(X)
    np.testing.assert_array_equal(a.means_, b.means_)
    np.testing.assert_array_equal(a.transmat_, b.transmat_)
    with pytest.raises(InvalidInputError, match=r"continues=True"):
        a.partial_fit(X[:5], continues=True)


class Returns(Plain):
    def __init__(self, value):
        self.value = value

    def reset(self):
        return self.value


@pytest.mark.parametrize("obj, needle", [
    (object(), r"sources: entry 0 \(object\) is not a source: it lacks reset\(\), step\(\)"),
    (type("NoSize", (), {"reset": lambda s: 0, "step": lambda s, y: 0})(),
     r"\(NoSize\) is not a source: it lacks an integer n_symbols >= 1"),
    (Returns(np.array([0.25] * 3)), r"sources: entry 0: expected a predictive distribution "
                                    r"of shape \(4,\)"),
    (Returns(np.array([0.5, 0.5, 0.5, -0.5])), "negative or non-finite"),
    (Returns(np.array([0.1, 0.1, 0.1, 0.1])), "sums to 0.4"),
    (Returns(np.array([np.inf, 0, 0, 0])), "negative or non-finite"),
    (AR1Source(), "is a AR1Source, but emission='categorical' needs a source that predicts "
                  "symbols"),
])
def test_plain_objects_are_checked_at_the_boundary(obj, needle):
    with pytest.raises(InvalidInputError, match=needle):
        hs.PROPS([obj], n_perturbation_states=1).fit(np.arange(8) % W)


def test_saving_names_the_sources_that_can_be_saved(tmp_path):
    y = np.arange(40) % W
    for src in (Plain(), CallableSource(shift_source(), W)):
        m = hs.PROPS([src], n_perturbation_states=1, random_state=0).fit(y)
        with pytest.raises(ModelFileError, match=r"sources: entry 0 \(\w+\) cannot be saved: "
                                                 r"a PROPS model is saved only with "
                                                 "KneserNeySource and LSTMSource"):
            m.save(tmp_path / type(src).__name__)
        assert not (tmp_path / type(src).__name__ / "source-0").exists()

    class MyKN(KneserNeySource):  # a subclass would load back as a plain KneserNeySource
        pass

    kn = MyKN(order=2).fit(y)
    with pytest.raises(ModelFileError, match=r"\(MyKN\) cannot be saved"):
        hs.PROPS([kn], n_perturbation_states=1, random_state=0).fit(y).save(tmp_path / "kn")

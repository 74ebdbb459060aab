"""KneserNeySource: against a brute-force dict implementation of interpolated Kneser-Ney,
a hand-worked example, the reset/step vs log_probs paths, snapshots, persistence, errors."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest

from hiddenstate.errors import InvalidInputError, ModelFileError, NotFittedError
from hiddenstate.persist import arrays_path
from hiddenstate.sources import KneserNeySource, Source, sequence_log_probs
from hiddenstate.sources.kneser_ney import estimate_discount
from hiddenstate.textio import Vocabulary

# --------------------------------------------------------------------------- reference

BOS = "<s>"


class BruteKN:
    """Interpolated Kneser-Ney straight from the formula, with Python dicts of tuples:

    p_m(w | h) = max(a(hw) - D_m, 0) / a(h.) + D_m N1+(h.) / a(h.) * p_{m-1}(w | h'),
    p_0(w) = 1 / W; an unseen context (a(h.) = 0) gives p_m(w | h) = p_{m-1}(w | h').
    a = raw count at the top order or for n-grams starting with BOS, else the number of
    distinct symbols seen just before the n-gram. Contexts never reach back past BOS.
    """

    def __init__(self, seqs, order, W, discount=None):
        self.order, self.W = order, W
        raw = Counter()  # every n-gram of length 1..order ending at a real token
        for s in seqs:
            padded = [BOS] + [int(v) for v in s]
            for end in range(1, len(padded)):
                for m in range(1, order + 1):
                    if end - m + 1 >= 0:
                        raw[tuple(padded[end - m + 1:end + 1])] += 1
        self.a = {}
        for g, c in raw.items():
            if len(g) == order or g[0] == BOS:
                self.a[g] = c
            else:
                self.a[g] = len({h[0] for h in raw if len(h) == len(g) + 1 and h[1:] == g})
        self.D = {}
        for m in range(1, order + 1):
            if discount is not None:
                self.D[m] = discount
                continue
            counts = [c for g, c in self.a.items() if len(g) == m]
            n1, n2 = counts.count(1), counts.count(2)
            self.D[m] = 0.5 if n1 + 2 * n2 == 0 else min(max(n1 / (n1 + 2 * n2), 0.05), 0.95)

    def prob(self, w, h):
        """p(w | h) with h a tuple (oldest first) of at most order - 1 tokens."""
        lower = 1.0 / self.W if len(h) == 0 else self.prob(w, h[1:])
        m = len(h) + 1
        followers = {g[-1]: c for g, c in self.a.items() if len(g) == m and g[:-1] == h}
        total = sum(followers.values())
        if total == 0:
            return lower
        D = self.D[m]
        return (max(followers.get(w, 0) - D, 0) / total
                + D * len(followers) / total * lower)

    def context(self, history):
        """The context after the given history (BOS then the last symbols)."""
        h = (BOS,) + tuple(int(v) for v in history)
        return h[max(0, len(h) - (self.order - 1)):] if self.order > 1 else ()

    def distribution(self, history):
        h = self.context(history)
        return np.array([self.prob(w, h) for w in range(self.W)])


def _corpus(seed, W_used, lengths):
    rng = np.random.default_rng(seed)
    # skewed symbols so contexts repeat (counts of 1, 2 and more at every order)
    p = 1.0 / np.arange(1, W_used + 1)
    X = rng.choice(W_used, size=sum(lengths), p=p / p.sum())
    return X, np.asarray(lengths)


def _split(X, lengths):
    return np.split(X, np.cumsum(lengths)[:-1])


def _walk(src, y):
    """Distributions of the reset/step loop along y: [f(y_1), f(y_2 | y_1), ...,
    f(. | y_1..y_T)]."""
    out = [src.reset()]
    for v in y:
        out.append(src.step(int(v)))
    return out


# --------------------------------------------------------------------------- correctness


@pytest.mark.parametrize("order", [1, 2, 3, 4])
@pytest.mark.parametrize("discount", [None, 0.7])
def test_every_distribution_matches_brute_force(order, discount):
    W = 6  # symbol 5 never occurs in training
    X, lengths = _corpus(order, 5, [17, 1, 9, 2, 25, 6])
    src = KneserNeySource(order=order, discount=discount).fit(X, lengths, n_symbols=W)
    ref = BruteKN(_split(X, lengths), order, W, discount)
    assert np.allclose(src.discounts_, [ref.D[m] for m in range(1, order + 1)],
                       rtol=0, atol=1e-15)
    rng = np.random.default_rng(100 + order)
    # every context seen in training (walk every training sequence) plus unseen ones
    # (random walks, with the never-seen symbol 5)
    walks = _split(X, lengths) + [rng.integers(0, W, size=12) for _ in range(6)]
    n_checked = 0
    for y in walks:
        for t, p in enumerate(_walk(src, y)):
            expected = ref.distribution(y[:t])
            assert np.max(np.abs(p - expected)) < 1e-12, (order, list(y[:t]))
            assert abs(p.sum() - 1.0) < 1e-12 and np.all(p > 0)
            n_checked += 1
    assert n_checked > 100


def test_hand_computed_example():
    # Corpus "a b a b" (a=0, b=1) as one sequence, W = 3 (c=2 never seen), bigram model.
    # Padded: <s> a b a b.  Bigram raw counts: (<s>,a)=1, (a,b)=2, (b,a)=1.
    # Unigram continuation counts: a is preceded by {<s>, b} -> 2, b by {a} -> 1.
    # Discounts: bigram counts {1, 2, 1}: n1=2, n2=1 -> D2 = 2/(2+2) = 1/2;
    #            unigram counts {2, 1}:   n1=1, n2=1 -> D1 = 1/(1+2) = 1/3.
    # Unigram: a(.)=3, N1+=2, weight of uniform = (1/3)*2/3 = 2/9:
    #   p1(a) = (2-1/3)/3 + 2/9 * 1/3 = 5/9 + 2/27 = 17/27
    #   p1(b) = (1-1/3)/3 + 2/27      = 2/9 + 2/27 =  8/27
    #   p1(c) =                          2/27
    # Context <s>: count (<s>,a)=1 (starts with <s>: raw count), N1+=1, weight 1/2:
    #   p(a|<s>) = 1/2 + 1/2*17/27 = 22/27, p(b|<s>) = 4/27, p(c|<s>) = 1/27
    # Context a: (a,b)=2, N1+=1, weight (1/2)*1/2 = 1/4:
    #   p(b|a) = 3/4 + 1/4*8/27 = 89/108, p(a|a) = 17/108, p(c|a) = 2/108
    # Context b: (b,a)=1, weight 1/2: p(a|b) = 22/27, p(b|b) = 4/27, p(c|b) = 1/27
    src = KneserNeySource(order=2).fit([0, 1, 0, 1], n_symbols=3)
    np.testing.assert_allclose(src.discounts_, [1 / 3, 1 / 2], rtol=0, atol=1e-15)
    at_start = src.reset()
    after_a = src.step(0)
    after_b = src.step(1)
    np.testing.assert_allclose(at_start, [22 / 27, 4 / 27, 1 / 27], rtol=0, atol=1e-15)
    np.testing.assert_allclose(after_a, [17 / 108, 89 / 108, 2 / 108], rtol=0, atol=1e-15)
    np.testing.assert_allclose(after_b, [22 / 27, 4 / 27, 1 / 27], rtol=0, atol=1e-15)
    expected = np.log([22 / 27, 89 / 108, 22 / 27, 89 / 108])
    np.testing.assert_allclose(src.log_probs([0, 1, 0, 1]), expected, rtol=0, atol=1e-14)
    # Unigram model: the raw counts (2, 2) are the top order; n1 = 0, n2 = 2 -> D = 0,
    # clipped to 0.05: p(a) = (2 - 0.05)/4 + (0.05 * 2/4) * 1/3 = 117/240 + 2/240 = 119/240,
    # p(c) = 2/240.
    uni = KneserNeySource(order=1).fit([0, 1, 0, 1], n_symbols=3)
    np.testing.assert_allclose(uni.discounts_, [0.05], rtol=0, atol=0)
    np.testing.assert_allclose(uni.reset(), [119 / 240, 119 / 240, 2 / 240], rtol=0,
                               atol=1e-15)


@pytest.mark.parametrize("order", [1, 2, 3, 5])
def test_log_probs_equals_step_loop(order):
    X, lengths = _corpus(7, 50, [300, 40, 1, 200])
    src = KneserNeySource(order=order).fit(X, lengths, n_symbols=60)
    rng = np.random.default_rng(3)
    for y in [X[:300], X[300:301], rng.integers(0, 60, size=150), np.array([59, 59, 0])]:
        loop = np.log([p[v] for p, v in zip(_walk(src, y), y, strict=False)])
        fast = src.log_probs(y)
        assert fast.shape == (len(y),)
        assert np.max(np.abs(fast - loop)) < 1e-12
        # the base-class loop gives the same numbers and leaves the source in the same place
        base = Source.log_probs(src, y)
        assert np.max(np.abs(fast - base)) < 1e-12
        after_base = src.snapshot()["context"]
        src.log_probs(y)
        np.testing.assert_array_equal(src.snapshot()["context"], after_base)
    lp = sequence_log_probs(src, X, lengths)
    assert np.all(np.isfinite(lp)) and np.all(lp < 0)
    assert src.log_probs(np.array([], dtype=np.int64)).shape == (0,)


def test_snapshot_restore_mid_sequence():
    X, lengths = _corpus(11, 20, [400])
    src = KneserNeySource(order=3).fit(X, n_symbols=20)
    y = X[:60]
    full = _walk(src, y)
    src.reset()
    for v in y[:25]:
        src.step(int(v))
    snap = src.snapshot()
    assert set(snap) == {"context"} and snap["context"].dtype == np.int64
    assert len(snap["context"]) == 2  # only order - 1 symbols are kept
    for v in y[25:40]:  # wander off, then come back
        src.step(int(v))
    src.reset()
    src.restore(snap)
    for t in range(25, 60):
        np.testing.assert_array_equal(src.step(int(y[t])), full[t + 1])
    # at the very start the context is the beginning-of-sequence marker alone
    src.reset()
    start = src.snapshot()
    src.step(3)
    src.restore(start)
    np.testing.assert_array_equal(src.step(int(y[0])), full[1])


def test_zipfian_distributions_normalised_and_positive():
    rng = np.random.default_rng(5)
    W = 300
    p = 1.0 / np.arange(1, W + 1) ** 1.1
    X = rng.choice(W, size=5000, p=p / p.sum())
    src = KneserNeySource(order=3).fit(X, n_symbols=W + 20)
    assert src.n_symbols == W + 20
    for q in _walk(src, np.concatenate([X[:100], rng.integers(0, W + 20, size=50)])):
        assert abs(q.sum() - 1.0) < 1e-12 and q.min() > 0


# --------------------------------------------------------------------------- fitting options


def test_n_symbols_defaults_and_vocabulary():
    src = KneserNeySource(order=2).fit(np.array([[0], [3], [1]]))
    assert src.n_symbols == 4 and src.vocabulary is None
    vocab = Vocabulary.build([["x", "y", "y", "z"]])
    src = KneserNeySource(order=2).fit([1, 2, 1], vocabulary=vocab)
    assert src.n_symbols == len(vocab) == 4 and src.vocabulary == vocab
    assert src.describe() == "2-gram interpolated Kneser-Ney (W=4)"
    assert KneserNeySource(order=4).describe().endswith("(unfitted)")


def test_estimate_discount_degenerate_counts():
    assert estimate_discount(np.array([5, 7])) == 0.5  # no n1, n2: undefined -> 0.5
    assert estimate_discount(np.array([1, 1, 3])) == 0.95  # n2 = 0: 1 -> clipped
    assert estimate_discount(np.array([2, 2, 4])) == 0.05  # n1 = 0: 0 -> clipped
    assert estimate_discount(np.array([1, 1, 2])) == 0.5
    assert estimate_discount(np.array([], dtype=np.int64)) == 0.5


def test_fixed_discount_keeps_every_order_and_is_saved(tmp_path):
    src = KneserNeySource(order=3, discount=0.25).fit([0, 1, 2, 0, 1])
    np.testing.assert_array_equal(src.discounts_, [0.25, 0.25, 0.25])
    src.save(tmp_path / "kn")
    again = KneserNeySource.load(tmp_path / "kn")
    assert again.get_params() == {"order": 3, "discount": 0.25}


# --------------------------------------------------------------------------- persistence


def _fitted():
    X, lengths = _corpus(21, 30, [120, 80])
    vocab = Vocabulary([f"w{i}" for i in range(30)])  # "<unk>" is prepended: 31 tokens
    return KneserNeySource(order=3).fit(X, lengths, vocabulary=vocab), X


def test_save_load_round_trip(tmp_path):
    src, X = _fitted()
    src.save(tmp_path / "kn")
    meta = json.loads((tmp_path / "kn" / "model.json").read_text())
    assert meta["format"] == "hiddenstate-source" and meta["class"] == "KneserNeySource"
    assert meta["params"] == {"order": 3, "discount": None} and meta["n_symbols"] == 31
    again = KneserNeySource.load(tmp_path / "kn")
    assert again.vocabulary == src.vocabulary and again.n_symbols == 31
    np.testing.assert_array_equal(again.discounts_, src.discounts_)
    y = np.concatenate([X[:50], [30, 0, 30]])
    for p, q in zip(_walk(src, y), _walk(again, y), strict=True):
        np.testing.assert_array_equal(p, q)
    np.testing.assert_array_equal(src.log_probs(y), again.log_probs(y))


def test_tampered_npz_is_rejected(tmp_path):
    src, _ = _fitted()
    src.save(tmp_path / "kn")
    path = arrays_path(tmp_path / "kn")
    with np.load(path) as npz:
        arrays = {k: npz[k].copy() for k in npz.files}
    arrays["count3"][0] += 1
    np.savez(path, **arrays)
    with pytest.raises(ModelFileError, match="checksum"):
        KneserNeySource.load(tmp_path / "kn")
    path.write_bytes(b"not a zip file")
    with pytest.raises(ModelFileError):
        KneserNeySource.load(tmp_path / "kn")


@pytest.mark.parametrize("edit", ["order", "n_symbols", "token", "manifest", "garbage", "class"])
def test_tampered_json_is_rejected(tmp_path, edit):
    src, _ = _fitted()
    src.save(tmp_path / "kn")
    path = tmp_path / "kn" / "model.json"
    meta = json.loads(path.read_text())
    if edit == "order":
        meta["params"]["order"] = 2
    elif edit == "n_symbols":
        meta["n_symbols"] = 40
    elif edit == "token":
        meta["vocabulary"]["tokens"][3] = "changed"
    elif edit == "manifest":
        meta["arrays"]["ngram2"]["sha256"] = "0" * 64
    elif edit == "class":
        meta["class"] = "HMM"
    path.write_text("{ not json" if edit == "garbage" else json.dumps(meta))
    with pytest.raises(ModelFileError):
        KneserNeySource.load(tmp_path / "kn")


def test_load_missing_directory(tmp_path):
    with pytest.raises(ModelFileError, match="path"):
        KneserNeySource.load(tmp_path / "nothing")


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("kwargs, name", [
    ({"order": 0}, "order"), ({"order": 2.5}, "order"), ({"order": True}, "order"),
    ({"discount": 0.0}, "discount"), ({"discount": 1.0}, "discount"),
    ({"discount": -0.2}, "discount"), ({"discount": float("nan")}, "discount"),
    ({"discount": "0.5"}, "discount"),
])
def test_bad_hyper_parameters_name_the_argument(kwargs, name):
    with pytest.raises(InvalidInputError, match=f"^{name}:"):
        KneserNeySource(**kwargs).fit([0, 1, 0])


@pytest.mark.parametrize("args, kwargs, name", [
    (([0, 5, 1],), {"n_symbols": 5}, "X"),
    (([0, -1, 1],), {}, "X"),
    (([0.5, 1],), {}, "X"),
    (([[0, 1], [1, 0]],), {}, "X"),
    (([],), {}, "X"),
    (([0, 1, 0], [2, 2]), {}, "lengths"),
    (([0, 1, 0], [3, 0]), {}, "lengths"),
    (([0, 1, 0],), {"n_symbols": 0}, "n_symbols"),
    (([0, 1, 0],), {"vocabulary": ["a", "b"]}, "vocabulary"),
    (([0, 1, 0],), {"vocabulary": Vocabulary(["a"]), "n_symbols": 5}, "n_symbols"),
    (([0, 1, 2],), {"vocabulary": Vocabulary(["a"])}, "X"),
])
def test_bad_fit_input_names_the_argument(args, kwargs, name):
    with pytest.raises(InvalidInputError, match=f"^{name}:"):
        KneserNeySource(order=2).fit(*args, **kwargs)


def test_bad_symbols_and_snapshots_name_the_argument():
    src = KneserNeySource(order=3).fit([0, 1, 2, 1, 0], n_symbols=4)
    src.reset()
    for bad in (4, -2, 1.0, "a", True):   # -1 is the missing marker (test_props_missing)
        with pytest.raises(InvalidInputError, match="^y:"):
            src.step(bad)
    with pytest.raises(InvalidInputError, match="^y:"):
        src.log_probs([0, 4])
    for bad in ({}, {"context": np.array([0, 1, 2])}, {"context": np.array([5, 1])},
                {"context": np.array([1])}, {"context": np.array([0, 4])},
                {"context": np.array([0.0, 1.0])}, [0, 1]):
        with pytest.raises(InvalidInputError, match="^snapshot:"):
            src.restore(bad)
    src.restore({"context": np.array([4, 1])})  # BOS (= n_symbols) then a symbol: fine
    src.restore({"context": np.array([4])})
    src.restore({"context": np.array([3, 1])})
    src.restore({"context": np.array([-1, 1])})  # a hole (missing symbol) in the context
    src.restore({"context": np.array([4, -1])})
    with pytest.raises(InvalidInputError, match="^snapshot:"):
        src.restore({"context": np.array([-2, 1])})


def test_unfitted_source_raises():
    src = KneserNeySource()
    for call in (src.reset, src.snapshot, lambda: src.step(0), lambda: src.log_probs([0]),
                 lambda: src.save("unused"), lambda: src.n_symbols):
        with pytest.raises(NotFittedError, match="fit"):
            call()


def test_registered_and_cost_bounded():
    import hiddenstate.sources as sources

    assert "KneserNeySource" in sources.__all__ and sources.KneserNeySource is KneserNeySource
    src = KneserNeySource(order=4).fit(np.arange(20) % 7)
    src.reset()
    for v in np.arange(500) % 7:
        src.step(int(v))
    assert len(src.snapshot()["context"]) == 3  # the state never grows with the history
    assert math.isclose(float(src.reset().sum()), 1.0, abs_tol=1e-12)


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_log_probs_from_matches_the_step_loop(order):
    """The vectorised continuation equals the base class's reset/step loop, for a sequence
    cut anywhere (inside the first order - 1 symbols too)."""
    rng = np.random.default_rng(order)
    W = 7
    src = KneserNeySource(order=order).fit(rng.integers(0, W, 300), [100, 200], n_symbols=W)
    y = rng.integers(0, W, 40)
    whole, end = src.log_probs_from(y)
    assert np.array_equal(whole, src.log_probs(y))
    ref, ref_end = Source.log_probs_from(src, y)
    np.testing.assert_allclose(whole, ref, rtol=1e-13)
    np.testing.assert_allclose(end["next"], ref_end["next"], rtol=1e-13)
    for cut in (0, 1, 2, 5, 40):
        a, mid = src.log_probs_from(y[:cut])
        b, end2 = src.log_probs_from(y[cut:], mid)
        np.testing.assert_allclose(np.concatenate([a, b]), ref, rtol=1e-13)
        np.testing.assert_array_equal(end2["context"], end["context"])

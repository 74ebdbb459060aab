"""The exact whole-sentence E-step of hiddenstate.lm (kernels/blocked.py, lm/exact.py)
against the dense numba kernels and the batched torch recursion. Skipped without torch."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from lm_common import stream, vocab  # noqa: E402

from hiddenstate import inference  # noqa: E402
from hiddenstate.errors import InsufficientMemoryError, ZeroProbabilityError  # noqa: E402
from hiddenstate.lm import (  # noqa: E402
    BlockedHMMLM,
    ConstraintSet,
    blocked_log_likelihood,
    expected_counts,
)
from hiddenstate.lm.exact import (  # noqa: E402
    SentenceLayout,
    dropout_counts,
    exact_counts,
    exact_log_likelihood,
    n_accumulators,
)
from hiddenstate.lm.model import expected_log_likelihood  # noqa: E402

#: the neural parameterisation trained by batch EM (a generalised M-step)
NEURAL_EM = dict(parameterization="neural", hidden_size=8, em_m_steps=3)


_vocab = vocab


def _stream(rng, n_words: int, n_sent: int, max_len: int = 9) -> np.ndarray:
    return stream(rng, n_words, n_sent, max_len)


def _model(rng, constraint="brown", n_words=20, **kw) -> BlockedHMMLM:
    m = BlockedHMMLM(constraint=constraint, dtype="float64", progress=False, **kw)
    m.initialize(_vocab(n_words), np.arange(n_words) % 8 if constraint == "brown" else None)
    return m


def _probs(m: BlockedHMMLM):
    cs = m.constraints_
    with torch.no_grad():
        ls, lt, le = (t.numpy() for t in m.net_(cs.all_states()))
    return np.exp(ls), np.exp(lt), np.exp(le)


def _assert_m_step_of(m: BlockedHMMLM, ref: BlockedHMMLM, start, trans, emit,
                      atol: float) -> None:
    """``m``'s parameters are ``ref``'s after the M-step of these counts."""
    if ref._state is None:  # the neural M-step's optimiser
        ref._state = ref._new_state()
    ref._m_step({k: torch.as_tensor(v) for k, v in
                 {"start": start, "trans": trans, "emit": emit}.items()})
    for name, p in ref.net_.state_dict().items():
        np.testing.assert_allclose(m.net_.state_dict()[name].numpy(), p.numpy(), atol=atol,
                                   rtol=0, err_msg=name)


def _case(seed: int, k: int, n_sent: int):
    """``(constraints, ids, (start, trans, emit), layout)`` of a random model and text."""
    rng = np.random.default_rng(seed)
    m = _model(rng, states_per_cluster=k)
    ids = _stream(rng, 20, n_sent)
    return m.constraints_, ids, _probs(m), SentenceLayout.from_ids(ids, 1)


def _dense_posteriors(m: BlockedHMMLM, ids: np.ndarray):
    """The dense numba forward-backward on the same HMM with masked emissions."""
    cs = m.constraints_
    start, trans, emit = _probs(m)
    B = np.zeros((cs.n_states, cs.n_words))
    for w in range(cs.n_words):
        B[cs.word_states[w], w] = emit[w]
    layout = SentenceLayout.from_ids(ids, 1)
    seqs = inference.Sequences.from_lengths(np.diff(layout.bounds))
    return inference.forward_backward(start, trans, inference.EmissionTable.from_symbols(B, ids),
                                      seqs)


@pytest.mark.parametrize("constraint,kw", [
    ("brown", dict(states_per_cluster=8)),                  # K = 64, blocks of 8
    ("random", dict(n_states=16, states_per_cluster=5)),    # overlapping random sets
    ("dense", dict(n_states=24, states_per_cluster=24)),    # one set of all states
])
def test_counts_equal_dense_numba_kernels(constraint, kw):
    rng = np.random.default_rng(0)
    m = _model(rng, constraint, **kw)
    cs = m.constraints_
    ids = _stream(rng, 20, 12)
    ids = np.concatenate([ids, [3, 4, 5]])  # a last sentence without <eos>
    start, trans, emit = _probs(m)
    layout = SentenceLayout.from_ids(ids, 1)
    ll, s, t, e = exact_counts(layout, cs.word_states, start, trans, emit)
    post = _dense_posteriors(m, ids)
    assert ll == pytest.approx(post.loglik.sum(), abs=1e-10, rel=0)
    np.testing.assert_allclose(exact_log_likelihood(layout, cs.word_states, start, trans, emit),
                               post.loglik, atol=1e-10, rtol=0)
    np.testing.assert_allclose(s, post.start, atol=1e-10, rtol=0)
    np.testing.assert_allclose(t, post.trans, atol=1e-10, rtol=0)
    np.testing.assert_allclose(e, np.take_along_axis(post.post, cs.word_states, axis=1),
                               atol=1e-10, rtol=0)
    assert s.sum() == pytest.approx(layout.n_sentences, abs=1e-10)  # one start per sentence
    assert t.sum() == pytest.approx(len(ids) - layout.n_sentences, abs=1e-9)


def test_counts_equal_torch_expected_counts():
    cs, ids, (start, trans, emit), layout = _case(1, 8, 10)
    ll, s, t, e = exact_counts(layout, cs.word_states, start, trans, emit)
    ls, lt, le = (torch.log(torch.as_tensor(a)) for a in (start, trans, emit))
    x = torch.as_tensor(ids)[None]
    reset = torch.zeros_like(x, dtype=torch.bool)
    reset[0, 1:] = x[0, :-1] == 1
    tll, _, gs, gt, ge = expected_counts(ls, lt, le[x], torch.as_tensor(cs.word_states)[x],
                                         reset=reset)
    te = np.zeros_like(e)
    np.add.at(te, ids, ge[0].numpy())
    assert ll == pytest.approx(float(tll.sum()), abs=1e-10, rel=0)
    np.testing.assert_allclose(s, gs.numpy(), atol=1e-10, rtol=0)
    np.testing.assert_allclose(t, gt.numpy(), atol=1e-10, rtol=0)
    np.testing.assert_allclose(e, te, atol=1e-10, rtol=0)


def test_long_sentence_does_not_underflow_and_chunks_do_not_change_counts():
    rng = np.random.default_rng(2)
    m = _model(rng, states_per_cluster=4)
    cs = m.constraints_
    long = rng.integers(2, 20, size=3000)  # p(x) ~ exp(-9000): no product would survive
    ids = np.concatenate([_stream(rng, 20, 30), long, [1], _stream(rng, 20, 30)])
    start, trans, emit = _probs(m)
    layout = SentenceLayout.from_ids(ids, 1)
    one = exact_counts(layout, cs.word_states, start, trans, emit, max_accumulator_bytes=1)
    many = exact_counts(layout, cs.word_states, start, trans, emit)
    post = _dense_posteriors(m, ids)
    assert np.isfinite(one[0]) and one[0] < -5000
    assert one[0] == pytest.approx(post.loglik.sum(), abs=1e-8, rel=0)
    np.testing.assert_allclose(one[2], post.trans, atol=1e-9, rtol=0)
    for a, b in zip(one[1:], many[1:], strict=True):
        np.testing.assert_allclose(a, b, atol=1e-9, rtol=0)


def test_impossible_sentence_is_minus_inf_and_counts_nothing():
    rng = np.random.default_rng(3)
    m = _model(rng, states_per_cluster=4)
    cs = m.constraints_
    start, trans, emit = _probs(m)
    emit[5] = 0.0  # word 5 can no longer be emitted
    ids = np.array([2, 3, 1, 4, 5, 6, 1, 7, 1])
    layout = SentenceLayout.from_ids(ids, 1)
    ll = exact_log_likelihood(layout, cs.word_states, start, trans, emit)
    assert np.isfinite(ll[[0, 2]]).all() and ll[1] == -np.inf
    total, s, t, e = exact_counts(layout, cs.word_states, start, trans, emit)
    _, s2, t2, e2 = exact_counts(SentenceLayout.from_ids(np.array([2, 3, 1, 7, 1]), 1),
                                 cs.word_states, start, trans, emit)
    assert total == -np.inf
    np.testing.assert_array_equal(s, s2)
    np.testing.assert_array_equal(t, t2)
    np.testing.assert_array_equal(e, e2)


def test_accumulators_respect_the_memory_cap():
    assert n_accumulators(16512, 10**5) == 1  # 2.2 GB: one under the 3 GB cap
    assert n_accumulators(16512, 10**5, max_accumulator_bytes=5 * 10**9) == 2
    assert n_accumulators(4128, 10**5) == 4
    assert n_accumulators(16512, 10**5, max_accumulator_bytes=1) == 1
    assert n_accumulators(64, 3) == 3


def test_refuses_what_does_not_fit_in_ram(monkeypatch):
    from hiddenstate import _validation
    monkeypatch.setattr(_validation, "available_memory", lambda: 10**6)
    monkeypatch.setattr(_validation, "_ALWAYS_FITS", 0)  # check these small sizes too
    cs = ConstraintSet.from_clusters(np.arange(4) % 2, 300)  # K = 600: 2.9 MB per accumulator
    K = cs.n_states
    with pytest.raises(InsufficientMemoryError, match="states_per_cluster"):
        BlockedHMMLM(states_per_cluster=300).initialize(_vocab(4), np.arange(4) % 2)
    with pytest.raises(InsufficientMemoryError, match="n_states"):
        exact_counts(SentenceLayout.from_ids(np.array([2, 3, 1]), 1), cs.word_states,
                     np.full(K, 1 / K), np.full((K, K), 1 / K), np.full((4, 300), 0.5))


def test_cpu_batch_em_iteration_is_the_m_step_of_exact_torch_counts():
    rng = np.random.default_rng(4)
    ids = _stream(rng, 20, 15)
    kw = dict(states_per_cluster=4, learn="em", prior=1 + 0.05, n_epochs=1)
    m = _model(rng, **kw)
    ref = _model(rng, **kw)
    ref.net_.load_state_dict(m.net_.state_dict())
    m.fit(ids, resume=True)  # one exact EM iteration (numba E-step)
    cs = ref.constraints_
    with torch.no_grad():  # the torch E-step over one stream holding all of X: no truncation
        ls, lt, le = ref.net_(cs.all_states())
    x = torch.as_tensor(ids)[None]
    reset = torch.zeros_like(x, dtype=torch.bool)
    reset[0, 1:] = x[0, :-1] == 1
    _, _, gs, gt, ge = expected_counts(ls, lt, le[x], torch.as_tensor(cs.word_states)[x],
                                       reset=reset)
    emit = torch.zeros(cs.n_words, cs.k, dtype=torch.float64)
    emit.index_put_((x[0],), ge[0], accumulate=True)
    _assert_m_step_of(m, ref, gs, gt, emit, atol=1e-10)
    assert m.history_[-1]["epoch"] == 1 and m.history_[-1]["tokens_per_s"] > 0


def test_early_stopping_keeps_the_best_parameters():
    rng = np.random.default_rng(5)
    train, valid = _stream(rng, 20, 6), _stream(rng, 20, 6)  # tiny: EM overfits
    m = _model(rng, states_per_cluster=4, learn="em", prior=1 + 1e-3, n_epochs=60)
    m.fit(train, valid, resume=True)
    ppl = [h["valid_ppl"] for h in m.history_]
    assert m.history_[-1].get("undone") and len(ppl) < 60  # it stopped at a rise
    assert ppl[-1] > ppl[-2] and all(b <= a for a, b in zip(ppl[:-1], ppl[1:-1], strict=False))
    assert m.perplexity(valid) == pytest.approx(ppl[-2], rel=1e-12)  # the best is kept


@pytest.mark.parametrize("extra,stops", [
    ({}, False),
    (dict(state_dropout=2, dropout_masks=3, em_patience=2), True),
    (dict(state_dropout=2, dropout_masks=3, em_patience=2, **NEURAL_EM), False),  # AdamW
])
def test_exact_em_checkpoint_resumes_bit_identically(tmp_path, extra, stops):
    from hiddenstate.lm import load_checkpoint
    rng = np.random.default_rng(6)
    ids = _stream(rng, 20, 40)
    valid = ids[:60]  # part of the training text: EM keeps improving it
    kw = dict(states_per_cluster=4, learn="em", prior=1 + 0.01, n_epochs=4, progress=False,
              dtype="float64", **extra)
    wc = np.arange(20) % 5
    straight = BlockedHMMLM(**kw).fit(ids, valid, vocabulary=_vocab(20), word_cluster=wc)
    a = BlockedHMMLM(**kw).fit(ids, valid, vocabulary=_vocab(20), word_cluster=wc,
                               max_steps=2, checkpoint=tmp_path / "ckpt")
    b = load_checkpoint(tmp_path / "ckpt")
    a.fit(ids, valid, resume=True)
    b.fit(ids, valid, resume=True)
    assert len(straight.history_) == 4 and len(b.history_) == 4
    # without dropout EM keeps improving; with it, iteration 1 stays the best and the
    # fourth stops the run and restores it: the best copy crossed the checkpoint (the
    # neural model keeps improving: its optimiser state crossed it)
    assert straight._state["stopped"] == b._state["stopped"] == stops
    assert [h["valid_ppl"] for h in b.history_] == [h["valid_ppl"] for h in straight.history_]
    for name, p in straight.net_.state_dict().items():
        assert torch.equal(p, a.net_.state_dict()[name]), name
        assert torch.equal(p, b.net_.state_dict()[name]), name


def test_state_usage_equals_dense_posterior_mass():
    rng = np.random.default_rng(7)
    m = _model(rng, states_per_cluster=4)
    ids = _stream(rng, 20, 10)
    post = _dense_posteriors(m, ids)
    np.testing.assert_allclose(m.state_usage(ids), post.post.sum(axis=0), atol=1e-10, rtol=0)


@pytest.mark.parametrize("numba_estep", [True, False])
def test_state_usage_refuses_a_sentence_of_probability_zero(monkeypatch, numba_estep):
    """Maximum likelihood (prior 1) gives a word never seen in training probability zero:
    score_samples gives -inf for its sentence, and state_usage, which needs the posterior,
    raises naming it (it returned numbers before), on the numba and the torch path."""
    from hiddenstate.textio import Vocabulary

    ids = np.array([2, 3, 1, 3, 2, 1, 2, 4, 1] * 5)
    m = BlockedHMMLM(states_per_cluster=2, learn="em", prior=1.0, n_epochs=5,
                     progress=False, dtype="float64", random_state=0)
    m.fit(ids, vocabulary=Vocabulary(["<unk>", "<eos>", "a", "b", "c", "d"]),
          word_cluster=np.arange(6) % 2)
    if not numba_estep:
        _torch_estep(monkeypatch)
    text = np.array([2, 3, 1, 2, 1, 5, 2, 1])       # sentence 2 holds "d", never seen
    logp = m.score_samples(text)
    assert np.isfinite(logp[:2]).all() and logp[2] == -np.inf
    with pytest.raises(ZeroProbabilityError, match=r"^X: sentence 2 has probability zero .* "
                                                   r"no state posterior"):
        m.state_usage(text)
    assert m.state_usage(text[:5]).sum() == pytest.approx(5.0)


@pytest.mark.parametrize("constraint,kw", [("brown", dict(states_per_cluster=4)),
                                           ("random", dict(n_states=16, states_per_cluster=5))])
def test_reused_buffers_give_the_counts_of_fresh_ones(constraint, kw):
    rng = np.random.default_rng(8)
    m = _model(rng, constraint, **kw)
    cs = m.constraints_
    ids = _stream(rng, 20, 12)
    layout = SentenceLayout.from_ids(ids, 1)
    start, trans, emit = _probs(m)
    trans2 = trans ** 2
    trans2 /= trans2.sum(axis=1, keepdims=True)
    work = {}
    exact_counts(layout, cs.word_states, start, trans, emit, work=work)  # fills the buffers
    reused = exact_counts(layout, cs.word_states, start, trans2, emit, work=work)
    fresh = exact_counts(layout, cs.word_states, start, trans2, emit)
    for a, b in zip(reused, fresh, strict=True):
        np.testing.assert_array_equal(a, b)
    assert exact_log_likelihood(layout, cs.word_states, start, trans2, emit, work=work) \
        .sum() == pytest.approx(fresh[0], abs=1e-12)


def _enumerated_counts(start, trans, B, sentence):
    """``(log p, start, trans, state posteriors (T, K))`` of a dense HMM by enumerating
    every state path."""
    K, T = len(start), len(sentence)
    s, t, g = np.zeros(K), np.zeros((K, K)), np.zeros((T, K))
    total = 0.0
    for path in itertools.product(range(K), repeat=T):
        p = start[path[0]] * B[path[0], sentence[0]]
        for i in range(1, T):
            p *= trans[path[i - 1], path[i]] * B[path[i], sentence[i]]
        total += p
        s[path[0]] += p
        for i in range(1, T):
            t[path[i - 1], path[i]] += p
        g[np.arange(T), path] += p
    return np.log(total), s / total, t / total, g / total


def test_dropout_counts_equal_enumeration_over_each_masks_dropped_model():
    rng = np.random.default_rng(11)
    V, C, k, kp = 8, 2, 3, 2
    m = BlockedHMMLM(states_per_cluster=k, dtype="float64", progress=False)
    wc = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    m.initialize(_vocab(V), wc)
    cs = m.constraints_
    start, trans, emit = _probs(m)
    ids = np.array([2, 3, 1, 4, 5, 6, 1, 7, 2, 1, 3, 3, 4, 1, 5, 1, 6, 7, 2, 4, 1])
    layout = SentenceLayout.from_ids(ids, 1)
    keeps = np.sort(np.stack([rng.permutation(k)[:kp] for _ in range(3 * C)]), axis=1)
    keeps = keeps.reshape(3, C, kp)
    ll, s, t, e = dropout_counts(layout, wc, k, start, trans, emit, keeps)
    groups = layout.chunks(3)
    assert len(groups) == 4  # three masks used
    ref_ll, ref_s, ref_t, ref_e = 0.0, np.zeros(C * k), np.zeros((C * k, C * k)), \
        np.zeros((V, k))
    for g in range(3):
        kept = (np.arange(C)[:, None] * k + keeps[g]).ravel()
        st = start[kept] / start[kept].sum()  # eq. (5): renormalised over the kept states
        tr = trans[np.ix_(kept, kept)]
        tr = tr / tr.sum(axis=1, keepdims=True)
        B = np.zeros((len(kept), V))  # emissions unchanged, each state over its words
        for w in range(V):
            for j in range(k):
                z = cs.word_states[w, j]
                if z in kept:
                    B[list(kept).index(z), w] = emit[w, j]
        for sent in range(groups[g], groups[g + 1]):
            x = ids[layout.bounds[sent]:layout.bounds[sent + 1]]
            lp, s1, t1, g1 = _enumerated_counts(st, tr, B, x)
            ref_ll += lp
            ref_s[kept] += s1
            ref_t[np.ix_(kept, kept)] += t1
            for i, w in enumerate(x):
                for j in range(k):
                    z = cs.word_states[w, j]
                    if z in kept:
                        ref_e[w, j] += g1[i, list(kept).index(z)]
    assert ll == pytest.approx(ref_ll, abs=1e-12, rel=0)
    np.testing.assert_allclose(s, ref_s, atol=1e-12, rtol=0)
    np.testing.assert_allclose(t, ref_t, atol=1e-12, rtol=0)
    np.testing.assert_allclose(e, ref_e, atol=1e-12, rtol=0)
    dropped = np.ones(C * k, bool)
    dropped[(np.arange(C)[:, None] * k + keeps[0]).ravel()] = False
    assert t.sum() == pytest.approx(len(ids) - layout.n_sentences, abs=1e-10)
    assert np.any(t[dropped] == 0.0)  # a dropped state gets nothing from its group


def test_dropout_counts_keeping_every_state_are_the_exact_counts():
    cs, ids, (start, trans, emit), layout = _case(12, 4, 30)
    keeps = np.tile(np.arange(4), (1, cs.n_clusters, 1))
    work = {}
    for _ in range(2):  # the second call reuses (and must clear) the buffers
        got = dropout_counts(layout, cs.word_cluster, 4, start, trans, emit, keeps, work=work)
        want = exact_counts(layout, cs.word_states, start, trans, emit)
        assert got[0] == pytest.approx(want[0], abs=1e-10, rel=0)  # renormalised rows
        for a, b in zip(got[1:], want[1:], strict=True):              # sum to 1 +- 1 ulp
            np.testing.assert_allclose(a, b, atol=1e-12, rtol=0)


def test_reordered_layout_holds_the_same_sentences_in_the_new_order():
    ids = np.array([2, 3, 1, 4, 1, 5, 6, 7, 1])
    layout = SentenceLayout.from_ids(ids, 1)
    r = layout.reordered(np.array([2, 0, 1]))
    np.testing.assert_array_equal(r.x, [5, 6, 7, 1, 2, 3, 1, 4, 1])
    np.testing.assert_array_equal(r.bounds, [0, 4, 7, 9])
    p = r.part(1, 3)
    np.testing.assert_array_equal(p.x, [2, 3, 1, 4, 1])
    np.testing.assert_array_equal(p.bounds, [0, 3, 5])


@pytest.mark.parametrize("extra", [{}, NEURAL_EM])
def test_cpu_em_with_dropout_is_the_m_step_of_its_drawn_masks(extra):
    rng = np.random.default_rng(13)
    ids = _stream(rng, 20, 25)
    kw = dict(states_per_cluster=4, learn="em", prior=1 + 0.05, n_epochs=1, state_dropout=2,
              dropout_masks=3, **extra)
    m = _model(rng, **kw)
    ref = _model(rng, **kw)
    ref.net_.load_state_dict(m.net_.state_dict())
    m.fit(ids, resume=True)
    cs = ref.constraints_
    gen = torch.Generator().manual_seed(1)  # generator_ = random_state + 1
    order = torch.randperm(SentenceLayout.from_ids(ids, 1).n_sentences, generator=gen).numpy()
    keeps = np.stack([cs.dropout(2, gen).kept.numpy().reshape(cs.n_clusters, 2)
                      - np.arange(cs.n_clusters)[:, None] * 4 for _ in range(3)])
    layout = SentenceLayout.from_ids(ids, 1).reordered(order)
    _, s, t, e = dropout_counts(layout, cs.word_cluster, 4, *_probs(ref), keeps)
    _assert_m_step_of(m, ref, s, t, e, atol=1e-12)


def test_neural_m_step_gradient_is_the_log_evidence_gradient():
    """Fisher's identity: at the E-step's parameters the gradient of the neural M-step's
    objective (the counts' expected complete-data log-likelihood) equals the gradient of
    log p(X), here by autograd through the batched torch forward."""
    rng = np.random.default_rng(15)
    ids = _stream(rng, 20, 10)
    m = _model(rng, states_per_cluster=4, **NEURAL_EM)
    cs = m.constraints_
    _, s, t, e = exact_counts(SentenceLayout.from_ids(ids, 1), cs.word_states, *_probs(m))
    d = cs.all_states()
    q = expected_log_likelihood(m.net_, [torch.as_tensor(c) for c in (s, t, e)], d)
    grad_q = torch.autograd.grad(q, list(m.net_.parameters()))
    ls, lt, le = m.net_(d)
    x = torch.as_tensor(ids)[None]
    reset = torch.zeros_like(x, dtype=torch.bool)
    reset[0, 1:] = x[0, :-1] == 1
    ll, _ = blocked_log_likelihood(ls, lt, le[x], torch.as_tensor(cs.word_states)[x],
                                   reset=reset)
    grad_ll = torch.autograd.grad(ll.sum(), list(m.net_.parameters()))
    assert max(float(g.abs().max()) for g in grad_ll) > 1e-3  # not a trivial zero
    for (name, _), a, b in zip(m.net_.named_parameters(), grad_q, grad_ll, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-8, rtol=0, err_msg=name)


def _torch_estep(monkeypatch) -> None:
    """Run the device E-step and scoring (the two-pass torch recursion) on this CPU."""
    monkeypatch.setattr(BlockedHMMLM, "_numba_estep", property(lambda self: False))


@pytest.mark.parametrize("extra", [dict(state_dropout=3, dropout_masks=3), {},
                                   dict(state_dropout=2, dropout_masks=4, **NEURAL_EM)])
def test_device_estep_counts_what_the_numba_kernels_count(monkeypatch, extra):
    """The E-step a GPU runs (torch, streams read 3 tokens at a time, the backward pass
    carried across windows; here on CPU in float64) gives the numba kernels' exact
    whole-sentence counts, with the same masks and sentence shuffle (1e-10)."""
    rng = np.random.default_rng(14)
    ids = np.concatenate([_stream(rng, 20, 30), [5, 6]])  # a last sentence without <eos>
    m = _model(rng, states_per_cluster=4, learn="em", batch_size=3, bptt=3, **extra)
    layout = SentenceLayout.from_ids(ids, 1)
    rng_state = m.generator_.get_state()
    ll, counts = m._em_counts(layout, {})  # numba, on CPU
    m.generator_.set_state(rng_state)
    _torch_estep(monkeypatch)
    tll, tcounts = m._em_counts(layout, {})
    assert tll == pytest.approx(ll, abs=1e-10, rel=0)
    for key in ("start", "trans", "emit"):
        np.testing.assert_allclose(tcounts[key].numpy(), counts[key].numpy(), atol=1e-10,
                                   rtol=0, err_msg=key)
    assert float(tcounts["emit"].sum()) == pytest.approx(len(ids), abs=1e-9)


def test_device_scoring_and_state_usage_equal_the_numba_kernels(monkeypatch):
    rng = np.random.default_rng(18)
    ids = np.concatenate([_stream(rng, 20, 25), [7, 8, 9]])
    m = _model(rng, states_per_cluster=8, batch_size=2, bptt=4)
    per, usage = m.score_samples(ids), m.state_usage(ids)
    assert len(per) == SentenceLayout.from_ids(ids, 1).n_sentences
    _torch_estep(monkeypatch)
    np.testing.assert_allclose(m.score_samples(ids), per, atol=1e-10, rtol=0)
    np.testing.assert_allclose(m.state_usage(ids), usage, atol=1e-10, rtol=0)
    assert m.score(ids) == pytest.approx(per.sum(), abs=1e-9)


def test_device_em_fit_equals_cpu_em_fit(monkeypatch):
    """Two iterations of batch EM with state dropout through the device path (E-step,
    counts kept on the device, M-step there) equal the CPU run (1e-10)."""
    rng = np.random.default_rng(19)
    ids, valid = _stream(rng, 20, 30), _stream(rng, 20, 5)
    kw = dict(states_per_cluster=4, learn="em", state_dropout=3, dropout_masks=2,
              n_epochs=2, batch_size=4, bptt=5, em_patience=5)
    cpu = _model(rng, **kw)
    dev = _model(rng, **kw)
    dev.net_.load_state_dict(cpu.net_.state_dict())
    cpu.fit(ids, valid, resume=True)
    _torch_estep(monkeypatch)
    dev.fit(ids, valid, resume=True)
    for name, p in cpu.net_.state_dict().items():
        np.testing.assert_allclose(dev.net_.state_dict()[name].numpy(), p.numpy(), atol=1e-10,
                                   rtol=0, err_msg=name)
    assert [h["valid_ppl"] for h in dev.history_] == pytest.approx(
        [h["valid_ppl"] for h in cpu.history_], rel=1e-12)


def test_em_patience_restores_the_best_and_marks_what_came_after():
    rng = np.random.default_rng(5)
    train, valid = _stream(rng, 20, 6), _stream(rng, 20, 6)  # tiny: EM overfits
    m = _model(rng, states_per_cluster=4, learn="em", prior=1 + 1e-3, n_epochs=60,
               em_patience=2)
    m.fit(train, valid, resume=True)
    ppl = [h["valid_ppl"] for h in m.history_]
    best = int(np.argmin(ppl))
    assert len(ppl) == best + 4 < 60  # stopped after three iterations without a new best
    assert [bool(h.get("undone")) for h in m.history_[best:]] == [False, True, True, True]
    assert m.perplexity(valid) == pytest.approx(ppl[best], rel=1e-12)


def test_checkpoint_with_a_tampered_best_copy_is_refused(tmp_path):
    from hiddenstate._bundle import read_bundle, write_bundle
    from hiddenstate.errors import ModelFileError
    from hiddenstate.lm import load_checkpoint
    from hiddenstate.lm.model import LM_FORMAT
    rng = np.random.default_rng(15)
    ids = _stream(rng, 20, 20)
    BlockedHMMLM(states_per_cluster=4, learn="em", state_dropout=3, em_patience=2,
                 n_epochs=3, progress=False).fit(
        ids, ids[:40], vocabulary=_vocab(20), word_cluster=np.arange(20) % 5, max_steps=1,
        checkpoint=tmp_path / "ckpt")
    meta, arrays = read_bundle(tmp_path / "ckpt", LM_FORMAT, "checkpoint")
    good = arrays["best.trans_logits"]
    assert load_checkpoint(tmp_path / "ckpt")._state["best_params"]["trans_logits"].shape \
        == good.shape
    for bad in (good[:-1], np.full_like(good, np.nan)):
        write_bundle(tmp_path / "bad", LM_FORMAT, meta, {**arrays, "best.trans_logits": bad})
        with pytest.raises(ModelFileError, match="best parameters"):
            load_checkpoint(tmp_path / "bad")


def test_checkpoint_with_tampered_optimiser_moments_is_refused(tmp_path):
    """The neural model's batch EM checkpoints AdamW's moments: mis-shaped or non-finite
    ones are refused at load, not left to fail (or poison the parameters) later."""
    from hiddenstate._bundle import read_bundle, write_bundle
    from hiddenstate.errors import ModelFileError
    from hiddenstate.lm import load_checkpoint
    from hiddenstate.lm.model import LM_FORMAT
    rng = np.random.default_rng(17)
    ids = _stream(rng, 20, 20)
    BlockedHMMLM(states_per_cluster=4, learn="em", n_epochs=3, progress=False,
                 **NEURAL_EM).fit(ids, vocabulary=_vocab(20), word_cluster=np.arange(20) % 5,
                                  max_steps=1, checkpoint=tmp_path / "ckpt")
    meta, arrays = read_bundle(tmp_path / "ckpt", LM_FORMAT, "checkpoint")
    good = arrays["opt.0.exp_avg"]
    load_checkpoint(tmp_path / "ckpt")  # the untouched one loads
    for key, bad in (("opt.0.exp_avg", good[:-1]),
                     ("opt.0.exp_avg_sq", np.full_like(good, np.inf))):
        write_bundle(tmp_path / "bad", LM_FORMAT, meta, {**arrays, key: bad})
        with pytest.raises(ModelFileError, match="optimiser moments"):
            load_checkpoint(tmp_path / "bad")

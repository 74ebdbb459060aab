"""hiddenstate.lm: blocked HMM language models (Chiu & Rush). Skipped without torch."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from lm_common import stream, vocab  # noqa: E402

import hiddenstate as hs  # noqa: E402
from hiddenstate import inference  # noqa: E402
from hiddenstate.errors import InvalidInputError  # noqa: E402
from hiddenstate.lm import (  # noqa: E402
    EOS,
    BlockedHMMLM,
    BrownClusters,
    ConstraintSet,
    average_mutual_information,
    blocked_log_likelihood,
    brown_clusters,
    load_checkpoint,
    read_brown_paths,
    write_brown_paths,
)
from hiddenstate.lm.forward import BlockedForward  # noqa: E402
from hiddenstate.textio import Vocabulary  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


_vocab = vocab
_stream = stream


def _tiny_model(rng, n_words=20, n_clusters=8, k=8, **kw) -> tuple[BlockedHMMLM, np.ndarray]:
    wc = np.arange(n_words) % n_clusters
    m = BlockedHMMLM(states_per_cluster=k, dtype="float64", progress=False, **kw)
    m.initialize(_vocab(n_words), wc)
    return m, wc


def _dense_params(m: BlockedHMMLM):
    """start (K,), trans (K, K), emission (K, V) with zeros outside each word's states."""
    cs = m.constraints_
    with torch.no_grad():
        ls, lt, le = (t.numpy() for t in m.net_(cs.all_states()))
    B = np.zeros((cs.n_states, cs.n_words))
    for w in range(cs.n_words):
        B[cs.word_states[w], w] = np.exp(le[w])
    return np.exp(ls), np.exp(lt), B


def _sentences(ids: np.ndarray) -> list[np.ndarray]:
    cut = np.flatnonzero(ids == 1) + 1
    return [s for s in np.split(ids, cut) if len(s)]


def _logsumexp_forward(start, trans, B, x) -> float:
    """Obviously correct dense forward in log space."""
    with np.errstate(divide="ignore"):
        la, lT, lB = np.log(start) + np.log(B[:, x[0]]), np.log(trans), np.log(B)
    for t in range(1, len(x)):
        m = la.max()
        la = np.log(np.exp(la - m) @ np.exp(lT)) + m + lB[:, x[t]]
    m = la.max()
    return float(np.log(np.exp(la - m).sum()) + m)


def test_import_hiddenstate_does_not_import_torch():
    code = "import sys, hiddenstate; assert 'torch' not in sys.modules, 'torch imported'"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("bptt,batch_size", [(64, 1), (3, 2)])
def test_blocked_equals_dense_and_numba_kernels(bptt, batch_size):
    rng = np.random.default_rng(0)
    m, _ = _tiny_model(rng, bptt=bptt, batch_size=batch_size)  # K = 64
    assert m.n_states_ == 64
    ids = _stream(rng, 20, 9)
    blocked = m._score_torch(ids)  # streams, carried state across windows, padding
    assert m.score(ids) == pytest.approx(blocked, abs=1e-10, rel=0)  # the CPU numba path
    start, trans, B = _dense_params(m)
    sents = _sentences(ids)
    dense = sum(_logsumexp_forward(start, trans, B, s) for s in sents)
    seqs = inference.Sequences.from_lengths(np.array([len(s) for s in sents]))
    table = inference.EmissionTable.from_symbols(B, np.concatenate(sents))
    kernel = inference.log_likelihood(start, trans, table, seqs).sum()
    assert blocked == pytest.approx(dense, abs=1e-10, rel=0)
    assert dense == pytest.approx(kernel, abs=1e-10, rel=0)


def test_random_constraints_equal_dense_forward():
    rng = np.random.default_rng(1)
    m = BlockedHMMLM(constraint="random", n_states=12, states_per_cluster=3, dtype="float64",
                     progress=False, bptt=4, batch_size=2)
    m.initialize(_vocab(10))
    ids = _stream(rng, 10, 5)
    start, trans, B = _dense_params(m)
    dense = sum(_logsumexp_forward(start, trans, B, s) for s in _sentences(ids))
    assert m._score_torch(ids) == pytest.approx(dense, abs=1e-10, rel=0)
    assert m.score(ids) == pytest.approx(dense, abs=1e-10, rel=0)


def test_gradient_equals_kernel_posterior_marginals():
    rng = np.random.default_rng(2)
    m, _ = _tiny_model(rng)
    cs = m.constraints_
    ids = _stream(rng, 20, 6)
    start, trans, B = _dense_params(m)
    with torch.no_grad():
        ls, lt, le = m.net_(cs.all_states())
    ls, lt, le = (t.clone().requires_grad_(True) for t in (ls, lt, le))
    x = torch.as_tensor(ids)[None]
    states = torch.as_tensor(cs.word_states)[x]
    reset = torch.zeros_like(x, dtype=torch.bool)
    reset[0, 1:] = x[0, :-1] == 1
    ll, _ = blocked_log_likelihood(ls, lt, le[x], states, reset=reset)
    ll.sum().backward()
    sents = _sentences(ids)
    seqs = inference.Sequences.from_lengths(np.array([len(s) for s in sents]))
    post = inference.forward_backward(start, trans,
                                      inference.EmissionTable.from_symbols(B, ids), seqs)
    np.testing.assert_allclose(lt.grad.numpy(), post.trans, atol=1e-8, rtol=0)
    np.testing.assert_allclose(ls.grad.numpy(), post.start, atol=1e-8, rtol=0)
    emit = np.take_along_axis(post.post, cs.word_states, axis=1)  # (V, k)
    np.testing.assert_allclose(le.grad.numpy(), emit, atol=1e-8, rtol=0)
    assert ll.item() == pytest.approx(post.loglik.sum(), abs=1e-10)


def test_custom_backward_passes_gradcheck_with_carry_and_padding():
    g = torch.Generator().manual_seed(3)
    K, B, T, k = 6, 2, 4, 3
    ls = torch.log_softmax(torch.randn(K, generator=g, dtype=torch.float64), 0)
    lt = torch.log_softmax(torch.randn(K, K, generator=g, dtype=torch.float64), 1)
    le = torch.randn(B, T, k, generator=g, dtype=torch.float64)
    states = torch.stack([torch.randperm(K, generator=g)[:k] for _ in range(B * T)])
    states = states.reshape(B, T, k)
    prev = torch.stack([torch.randperm(K, generator=g)[:k] for _ in range(B)])
    pa = torch.softmax(torch.randn(B, k, generator=g, dtype=torch.float64), 1)
    reset = torch.tensor([[False, False, True, False], [True, False, False, False]])
    valid = torch.tensor([[True] * 4, [True, True, False, False]])

    def f(a, b, c):
        return BlockedForward.apply(a, b, c, states, prev, pa, reset, valid)[0]

    assert torch.autograd.gradcheck(f, (ls.requires_grad_(), lt.requires_grad_(),
                                        le.requires_grad_()))


def test_state_dropout_renormalises_exactly_brute_force():
    V, C, k, keep = 5, 2, 3, 2
    wc = np.array([0, 1, 0, 1, 0])
    m = BlockedHMMLM(states_per_cluster=k, state_dropout=keep, dtype="float64",
                     progress=False)
    m.initialize(_vocab(V), wc)
    cs = m.constraints_
    d = cs.dropout(keep, torch.Generator().manual_seed(5))
    kept = d.kept.numpy()
    assert len(kept) == C * keep and all(
        np.sum((kept >= c * k) & (kept < (c + 1) * k)) == keep for c in range(C))
    net = m.net_
    with torch.no_grad():
        ls, lt, le = net(d)
        full_start = net.start_logits.numpy()
        full_trans = net.trans_logits.numpy()
        emit_logits = net.emit_logits.numpy().copy()
    x = np.array([2, 3, 4, 1])
    ll, _ = blocked_log_likelihood(ls, lt, le[torch.as_tensor(x)][None],
                                   d.word_states[torch.as_tensor(x)][None])
    # brute force over all paths of the full model with eq. (5)'s masked distributions
    b = np.zeros(C * k, bool)
    b[kept] = True
    p0 = np.where(b, np.exp(full_start), 0)
    p0 /= p0.sum()
    A = np.where(b[:, None] & b[None, :], np.exp(full_trans), 0)
    A /= np.where(b[:, None], A.sum(1, keepdims=True), 1)

    def emit(z, w):  # p(w | z): words of z's cluster, per-state softmax of the logit table
        j, c = z % k, z // k
        if wc[w] != c:
            return 0.0
        words = np.flatnonzero(wc == c)
        return np.exp(emit_logits[w, j]) / np.exp(emit_logits[words, j]).sum()

    total = 0.0
    for path in itertools.product(range(C * k), repeat=len(x)):
        p = p0[path[0]] * emit(path[0], x[0])
        for t in range(1, len(x)):
            p *= A[path[t - 1], path[t]] * emit(path[t], x[t])
        total += p
    assert ll.item() == pytest.approx(np.log(total), abs=1e-12)
    assert np.exp(ls.numpy()).sum() == pytest.approx(1.0, abs=1e-14)
    np.testing.assert_allclose(np.exp(lt.numpy()).sum(1), 1.0, atol=1e-14)


def test_read_brown_paths_round_trips(tmp_path):
    bc = BrownClusters(["the", "a", "dog", "cat", "<unk>"], ["0", "0", "10", "10", "11"],
                       [50, 40, 3, 2, 7])
    write_brown_paths(bc, tmp_path / "paths")
    back = read_brown_paths(tmp_path / "paths")
    assert sorted(zip(back.words, back.paths, back.counts, strict=True)) == sorted(
        zip(bc.words, bc.paths, bc.counts, strict=True))
    vocab = Vocabulary(["<unk>", EOS, "the", "a", "dog", "cat"])
    wc = back.word_cluster(vocab)
    assert wc[2] == wc[3] and wc[4] == wc[5] and wc[2] != wc[4] and wc[0] not in (wc[2], wc[4])
    assert wc[1] == 3  # <eos> is not in the file: a cluster of its own
    (tmp_path / "bad").write_text("01x\tw\t3\n")
    with pytest.raises(InvalidInputError, match="line 1"):
        read_brown_paths(tmp_path / "bad")


@pytest.mark.skipif(not (DATA / "brown-clusters" / "lm-128" / "paths").is_file(),
                    reason="shared/data/brown-clusters is absent")
def test_read_brown_paths_on_hmm_lm_file(tmp_path):
    bc = read_brown_paths(DATA / "brown-clusters" / "lm-128" / "paths")
    assert len(bc.words) == 9999 and bc.n_clusters == 128 and sum(bc.counts) == 887521
    write_brown_paths(bc, tmp_path / "paths")
    back = read_brown_paths(tmp_path / "paths")
    assert dict(zip(back.words, back.paths, strict=True)) == dict(
        zip(bc.words, bc.paths, strict=True))


def test_exchange_clustering_finds_best_partition_brute_force():
    # class bigram source: words 0-2 (class A) are followed by words 3-5 (class B) and back
    rng = np.random.default_rng(6)
    ids = np.empty(3000, np.int64)
    ids[0::2] = rng.integers(0, 3, 1500)
    ids[1::2] = rng.integers(3, 6, 1500)
    ids[rng.random(3000) < 0.1] = rng.integers(0, 6, 1)  # noise
    ours = brown_clusters(ids, 2)
    best = max(average_mutual_information(ids, np.array(p))
               for p in itertools.product([0, 1], repeat=6) if len(set(p)) == 2)
    assert average_mutual_information(ids, ours) == pytest.approx(best, abs=1e-12)


def _objective(m: BlockedHMMLM, ids) -> float:
    """log p(X) + log Dirichlet(prior) prior: what MAP-EM must not decrease."""
    with torch.no_grad():
        ls, lt, le = m.net_(m.constraints_.all_states())
    a = m.prior - 1
    return m.score(ids) + a * float(ls.sum() + lt.sum() + le.sum())


def test_em_objective_never_decreases():
    rng = np.random.default_rng(7)
    ids = _stream(rng, 12, 6)
    m = BlockedHMMLM(states_per_cluster=3, learn="em", prior=1 + 0.1, dtype="float64",
                     batch_size=1, bptt=len(ids), progress=False)
    m.initialize(_vocab(12), np.arange(12) % 3)
    vals = [_objective(m, ids)]
    for _ in range(6):
        m.fit(ids, resume=True)  # one more EM iteration (epoch) per call
        m.n_epochs += 1
        vals.append(_objective(m, ids))
    assert all(b >= a - 1e-9 for a, b in zip(vals, vals[1:], strict=False)), vals
    assert vals[-1] > vals[0] + 1.0


def test_checkpoint_resumes_bit_identically(tmp_path):
    rng = np.random.default_rng(8)
    ids = _stream(rng, 20, 30)
    kw = dict(states_per_cluster=4, state_dropout=2, batch_size=3, bptt=5, dtype="float64",
              progress=False, n_epochs=3)
    wc = np.arange(20) % 5
    straight = BlockedHMMLM(**kw).fit(ids, vocabulary=_vocab(20), word_cluster=wc,
                                      max_steps=9)
    a = BlockedHMMLM(**kw).fit(ids, vocabulary=_vocab(20), word_cluster=wc, max_steps=4)
    a.save_checkpoint(tmp_path / "ckpt")
    b = load_checkpoint(tmp_path / "ckpt")
    a.fit(ids, resume=True, max_steps=5)
    b.fit(ids, resume=True, max_steps=5)
    for name, p in straight.net_.state_dict().items():
        assert torch.equal(p, a.net_.state_dict()[name])
        assert torch.equal(p, b.net_.state_dict()[name])
    b.save(tmp_path / "model")
    assert hs.load(tmp_path / "model").score(ids) == b.score(ids)


def test_neural_parameterisation_matches_dense_forward():
    rng = np.random.default_rng(9)
    m, _ = _tiny_model(rng, n_words=12, n_clusters=4, k=4, parameterization="neural",
                       hidden_size=8, tie_embeddings=True)
    ids = _stream(rng, 12, 4)
    start, trans, B = _dense_params(m)
    np.testing.assert_allclose(B.sum(axis=1), 1.0, atol=1e-12)
    dense = sum(_logsumexp_forward(start, trans, B, s) for s in _sentences(ids))
    assert m.score(ids) == pytest.approx(dense, abs=1e-10, rel=0)


@pytest.mark.parametrize("kw,name", [
    ({"learn": "stepwise-em", "parameterization": "neural"}, "learn"),
    ({"learn": "em", "em_m_steps": 0}, "em_m_steps"),
    ({"state_dropout": 9, "states_per_cluster": 4}, "state_dropout"),
    ({"constraint": "random", "n_states": 8, "state_dropout": 2}, "state_dropout"),
    ({"lr": -1.0}, "lr"),
    ({"dtype": "float16"}, "dtype"),
])
def test_bad_hyper_parameters_name_the_argument(kw, name):
    with pytest.raises(InvalidInputError, match=name):
        BlockedHMMLM(**kw).initialize(_vocab(6), np.zeros(6, np.int64))


def test_out_of_vocabulary_ids_are_refused():
    m, _ = _tiny_model(np.random.default_rng(0), n_words=6, n_clusters=2, k=2)
    with pytest.raises(InvalidInputError, match="X"):
        m.score(np.array([1, 7, 1]))


def test_constraint_set_dropout_keeps_k_per_cluster():
    cs = ConstraintSet.from_clusters(np.array([0, 1, 1, 2]), 4)
    d = cs.dropout(2, torch.Generator().manual_seed(0))
    assert d.word_states.shape == (4, 2)
    assert torch.equal(d.kept[d.word_states[1]], d.kept[d.word_states[2]])
    assert torch.all(d.kept[d.word_states] // 4 == torch.tensor([0, 1, 1, 2])[:, None])


def test_cli_train_eval_sample_round_trip(tmp_path, capsys):
    import json

    from hiddenstate.cli import main
    rng = np.random.default_rng(10)
    words = [f"w{i}" for i in range(12)]
    lines = [" ".join(rng.choice(words, size=rng.integers(2, 6))) for _ in range(60)]
    (tmp_path / "tr.txt").write_text("\n".join(lines[:50]) + "\n")
    (tmp_path / "va.txt").write_text("\n".join(lines[50:]) + "\n")
    assert main(["lm", "clusters", str(tmp_path / "tr.txt"), "--clusters", "3",
                 "--out", str(tmp_path / "paths")]) == 0
    assert read_brown_paths(tmp_path / "paths").n_clusters == 3
    assert main(["lm", "train", "--train", str(tmp_path / "tr.txt"), "--valid",
                 str(tmp_path / "va.txt"), "--paths", str(tmp_path / "paths"),
                 "--states-per-cluster", "2", "--dropout", "1", "--batch-size", "2",
                 "--bptt", "8", "--out", str(tmp_path / "m"), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["lm", "eval", str(tmp_path / "m"), str(tmp_path / "va.txt")]) == 0
    rep = json.loads(capsys.readouterr().out)
    from hiddenstate.lm import read_lm_file
    m = hs.load(tmp_path / "m")
    ids, _ = read_lm_file(tmp_path / "va.txt", m.vocabulary_)
    assert rep["tokens"] == len(ids) and rep["perplexity"] == pytest.approx(m.perplexity(ids))
    assert main(["lm", "sample", str(tmp_path / "m"), "--tokens", "20"]) == 0
    assert set(capsys.readouterr().out.split()) <= set(words) | {"<unk>"}
    pytest.importorskip("matplotlib")
    assert main(["lm", "report", str(tmp_path / "m"), str(tmp_path / "va.txt"), "--out",
                 str(tmp_path / "rep")]) == 0
    rep = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert rep["perplexity"] == pytest.approx(m.perplexity(ids))
    usage = m.state_usage(ids)
    assert usage.sum() == pytest.approx(len(ids))  # one unit of posterior mass per token
    assert len(rep["states_used_per_cluster"]) == m.constraints_.n_clusters
    assert (tmp_path / "rep" / "curve.png").stat().st_size > 0
    assert main(["lm", "train", "--train", str(tmp_path / "tr.txt"), "--out",
                 str(tmp_path / "m2"), "--dropout", "9", "--states-per-cluster", "2",
                 "--paths", str(tmp_path / "paths"), "--no-progress"]) == 2
    assert main(["lm", "train", "--train", str(tmp_path / "tr.txt"), "--valid",
                 str(tmp_path / "va.txt"), "--paths", str(tmp_path / "paths"),
                 "--states-per-cluster", "4", "--learn", "em", "--dropout", "2",
                 "--dropout-masks", "3", "--prior", "1.05", "--em-patience", "1",
                 "--epochs", "3", "--out", str(tmp_path / "m3"), "--no-progress"]) == 0
    em = hs.load(tmp_path / "m3")
    assert (em.learn, em.state_dropout, em.dropout_masks, em.prior, em.em_patience) == \
        ("em", 2, 3, 1.05, 1)
    assert len(em.history_) == 3 and all(h["valid_ppl"] > 1 for h in em.history_)
    assert main(["lm", "train", "--train", str(tmp_path / "tr.txt"), "--paths",
                 str(tmp_path / "paths"), "--states-per-cluster", "4", "--learn", "em",
                 "--parameterization", "neural", "--hidden", "8", "--em-m-steps", "2",
                 "--out", str(tmp_path / "m4"), "--no-progress"]) == 0
    nem = hs.load(tmp_path / "m4")
    assert (nem.learn, nem.parameterization, nem.em_m_steps) == ("em", "neural", 2)


@pytest.mark.skipif(not (DATA / "ptb" / "ptb.train.txt").is_file(),
                    reason="shared/data/ptb is absent")
def test_ptb_token_counts_match_the_published_ones():
    from hiddenstate.lm import load_corpus
    c = load_corpus("ptb", DATA)
    assert len(c["vocabulary"]) == 10000
    assert (len(c["train"]), len(c["valid"]), len(c["test"])) == (929589, 73760, 82430)
    assert int((c["train"] == c["vocabulary"].id_of(EOS)).sum()) == 42068


def test_sentence_streams_cut_at_sentence_starts():
    from hiddenstate.lm import sentence_streams
    ids = np.array([3, 4, 1, 5, 1, 6, 7, 8, 1, 9, 1])
    tokens, valid = sentence_streams(ids, 1, 3)
    assert np.array_equal(tokens[valid], ids)  # row-major: the streams in order
    for row, ok in zip(tokens, valid, strict=True):
        assert row[ok][-1] == 1  # every stream ends a sentence, so the next starts one

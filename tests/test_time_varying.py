"""The time-varying chain kernels (:mod:`hiddenstate.kernels.time_varying` through
:mod:`hiddenstate.time_varying`) against enumeration of every state path, and against the
fixed-matrix kernels of :mod:`hiddenstate.inference` when every matrix is the same."""

from __future__ import annotations

import numpy as np
import pytest
from brute_force import all_paths

from hiddenstate import inference, time_varying
from hiddenstate.inference import EmissionTable, Sequences


def _logsumexp(x):
    m = np.max(x)
    return -np.inf if m == -np.inf else float(m + np.log(np.exp(x - m).sum()))


def _brute(startprob, A, log_e, design):
    """Everything for one sequence with per-step matrices ``A[t]`` (into step t)."""
    T, K = log_e.shape
    paths = all_paths(K, T)
    with np.errstate(divide="ignore"):
        lp = np.log(startprob)[paths[:, 0]] + log_e[0, paths[:, 0]]
        for t in range(1, T):
            lp = lp + np.log(A[t])[paths[:, t - 1], paths[:, t]] + log_e[t, paths[:, t]]
    ll = _logsumexp(lp)
    w = np.exp(lp - ll) if ll > -np.inf else np.zeros(len(lp))
    gamma = np.zeros((T, K))
    xi = np.zeros((K, K, design.shape[1]))
    for t in range(T):
        np.add.at(gamma[t], paths[:, t], w)
        if t:
            for p in range(design.shape[1]):
                np.add.at(xi[..., p], (paths[:, t - 1], paths[:, t]), w * design[t, p])
    best = int(np.argmax(lp))
    filtered = np.zeros((T, K))
    for t in range(T):   # p(z_t | x_{<=t}): sum over paths of the prefix joint
        with np.errstate(divide="ignore"):
            pre = np.log(startprob)[paths[:, 0]] + log_e[0, paths[:, 0]]
            for u in range(1, t + 1):
                pre = pre + np.log(A[u])[paths[:, u - 1], paths[:, u]] + log_e[u, paths[:, u]]
        # every prefix is counted K**(T-1-t) times alike: normalising removes it
        m = np.exp(pre - _logsumexp(pre))
        np.add.at(filtered[t], paths[:, t], m)
    return {"loglik": ll, "gamma": gamma, "xi": xi, "path": paths[best], "best": lp[best],
            "filtered": filtered, "paths": paths, "w": w}


def _problem(seed, lengths, K=3, P=2, zeros=False):
    rng = np.random.default_rng(seed)
    seqs = Sequences.from_lengths(lengths)
    N = seqs.n_samples
    startprob = rng.dirichlet(np.ones(K))
    transmats = rng.dirichlet(np.ones(K), size=(N, K))
    if zeros:  # a structural zero and a state that cannot start
        transmats[:, 0, 2] = 0.0
        transmats /= transmats.sum(axis=2, keepdims=True)
        startprob[1] = 0.0
        startprob /= startprob.sum()
    log_e = rng.normal(scale=2.0, size=(N, K)) - 300.0   # far from 1: the offsets matter
    design = np.column_stack([rng.normal(size=(N, P - 1)), np.ones(N)])
    return startprob, transmats, log_e, design, seqs


@pytest.mark.parametrize("zeros", [False, True])
def test_forward_backward_filter_and_viterbi_equal_enumeration(zeros):
    startprob, A, log_e, design, seqs = _problem(0, [4, 1, 5, 3], zeros=zeros)
    table = EmissionTable.from_log_likelihood(log_e)
    tidx = np.arange(seqs.n_samples)
    post = time_varying.forward_backward(startprob, A, tidx, table, seqs, design)
    filtered, log_pred = time_varying.filter_states(startprob, A, tidx, table, seqs)
    logp, states = time_varying.viterbi(startprob, A, tidx, table, seqs)
    loglik = time_varying.log_likelihood(startprob, A, tidx, table, seqs)
    xi = np.zeros_like(post.xi_design)
    start = np.zeros(len(startprob))
    for s, (a, b) in enumerate(zip(seqs.bounds[:-1], seqs.bounds[1:], strict=True)):
        ref = _brute(startprob, A[a:b], log_e[a:b], design[a:b])
        np.testing.assert_allclose(post.loglik[s], ref["loglik"], rtol=1e-12)
        np.testing.assert_allclose(loglik[s], ref["loglik"], rtol=1e-12)
        np.testing.assert_allclose(log_pred[a:b].sum(), ref["loglik"], rtol=1e-12)
        np.testing.assert_allclose(post.post[a:b], ref["gamma"], atol=1e-12)
        np.testing.assert_allclose(filtered[a:b], ref["filtered"], atol=1e-12)
        np.testing.assert_allclose(logp[s], ref["best"], rtol=1e-12)
        np.testing.assert_array_equal(states[a:b], ref["path"])
        xi += ref["xi"]
        start += ref["gamma"][0]
    np.testing.assert_allclose(post.xi_design, xi, atol=1e-12)
    np.testing.assert_allclose(post.trans, xi[..., -1], atol=1e-12)
    np.testing.assert_allclose(post.start, start, atol=1e-12)


def test_an_impossible_sequence_scores_minus_infinity_and_adds_nothing():
    startprob, A, log_e, design, seqs = _problem(1, [3, 3])
    log_e[4] = -np.inf   # the second sequence cannot emit its middle row
    table = EmissionTable.from_log_likelihood(log_e)
    tidx = np.arange(6)
    post = time_varying.forward_backward(startprob, A, tidx, table, seqs, design)
    assert np.isfinite(post.loglik[0]) and post.loglik[1] == -np.inf
    assert np.all(post.post[3:] == 0)
    logp, states = time_varying.viterbi(startprob, A, tidx, table, seqs)
    assert logp[1] == -np.inf and np.all(states[3:] == -1)
    draws = time_varying.sample_posterior(startprob, A, tidx, table, seqs,
                                          np.random.default_rng(0))
    assert np.all(draws[3:] == -1) and np.all(draws[:3] >= 0)


def test_one_fixed_matrix_gives_the_fixed_chain_kernels_numbers():
    rng = np.random.default_rng(2)
    K = 4
    seqs = Sequences.from_lengths([50, 7, 300])
    startprob = rng.dirichlet(np.ones(K))
    transmat = rng.dirichlet(np.ones(K), size=K)
    table = EmissionTable.from_log_likelihood(rng.normal(size=(seqs.n_samples, K)))
    tidx = np.zeros(seqs.n_samples, dtype=np.int64)
    ours = time_varying.forward_backward(startprob, transmat[None], tidx, table, seqs)
    ref = inference.forward_backward(startprob, transmat, table, seqs)
    np.testing.assert_allclose(ours.loglik, ref.loglik, rtol=1e-12)
    np.testing.assert_allclose(ours.trans, ref.trans, rtol=1e-10)
    np.testing.assert_allclose(ours.post, ref.post, atol=1e-12)
    vit = time_varying.viterbi(startprob, transmat[None], tidx, table, seqs)
    ref_vit = inference.viterbi(startprob, transmat, table, seqs)
    np.testing.assert_array_equal(vit[1], ref_vit[1])
    np.testing.assert_allclose(vit[0], ref_vit[0], rtol=1e-12)
    filt = time_varying.filter_states(startprob, transmat[None], tidx, table, seqs)
    ref_filt = inference.filter_states(startprob, transmat, table, seqs)
    np.testing.assert_allclose(filt[0], ref_filt[0], atol=1e-12)
    np.testing.assert_allclose(filt[1], ref_filt[1], rtol=1e-12)


def test_posterior_sampling_draws_paths_with_their_posterior_probability():
    startprob, A, log_e, design, _ = _problem(3, [3], K=2)
    ref = _brute(startprob, A, log_e, design)
    n = 20000
    big = Sequences.from_lengths([3] * n)
    draws = time_varying.sample_posterior(startprob, np.tile(A, (n, 1, 1)),
                                          np.arange(3 * n), EmissionTable.from_log_likelihood(
                                              np.tile(log_e, (n, 1))), big,
                                          np.random.default_rng(4)).reshape(n, 3)
    code = draws @ (2 ** np.arange(3)[::-1])
    freq = np.bincount(code, minlength=8) / n
    sd = np.sqrt(ref["w"] * (1 - ref["w"]) / n)
    assert np.all(np.abs(freq - ref["w"]) <= 5 * sd + 1e-12)


def test_sample_chain_follows_each_steps_matrix():
    flip = np.array([[0.0, 1.0], [1.0, 0.0]])
    stay = np.eye(2)
    tidx = np.array([0, 1, 1, 0, 0, 1])
    got = time_varying.sample_chain(np.array([0.0, 1.0]), np.array([flip, stay]), tidx,
                                    np.random.default_rng(0))
    np.testing.assert_array_equal(got, [1, 1, 1, 0, 1, 1])

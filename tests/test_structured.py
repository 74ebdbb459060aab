"""Structured transitions (``topology``, ``bandwidth``, ``transmat_mask``): the sparse
kernels against the dense ones, a masked model against enumeration, and zeros that stay
exactly zero in every learning mode."""

import warnings

import numpy as np
import pytest
from brute_force import dataset_posteriors

import hiddenstate as hs
from hiddenstate import inference
from hiddenstate.errors import DegenerateStateWarning, InvalidInputError
from hiddenstate.inference import EmissionTable, Sequences, Transitions
from hiddenstate.learn.online import ONLINE_MODES


def _random_chain(rng, transitions):
    K = transitions.n_states
    A = rng.random((K, K)) * transitions.mask()
    return rng.dirichlet(np.ones(K)), A / A.sum(1, keepdims=True)


@pytest.mark.parametrize("by_idx", [True, False])
def test_sparse_kernels_match_dense_kernels(by_idx):
    rng = np.random.default_rng(0)
    tr = Transitions.band(9, 1, 2)
    pi, A = _random_chain(rng, tr)
    B = rng.dirichlet(np.ones(5), size=9)
    seqs = Sequences.from_lengths(np.array([30, 1, 17, 40, 2]))
    X = rng.integers(0, 5, seqs.n_samples)
    table = (EmissionTable.from_symbols(B, X) if by_idx
             else EmissionTable.from_log_likelihood(np.log(B.T[X]) - 3.0))
    values = tr.gather(A)
    dense = inference.forward_backward(pi, A, table, seqs)
    sparse = inference.sparse_forward_backward(pi, tr, values, table, seqs)
    np.testing.assert_allclose(sparse.loglik, dense.loglik, rtol=1e-13)
    np.testing.assert_allclose(tr.dense(sparse.trans), dense.trans, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(sparse.start, dense.start, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(sparse.post, dense.post, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(inference.sparse_log_likelihood(pi, tr, values, table, seqs),
                               inference.log_likelihood(pi, A, table, seqs), rtol=1e-13)
    lp_d, path_d = inference.viterbi(pi, A, table, seqs)
    lp_s, path_s = inference.sparse_viterbi(pi, tr, values, table, seqs)
    np.testing.assert_allclose(lp_s, lp_d, rtol=1e-13)
    np.testing.assert_array_equal(path_s, path_d)


def _masked_model(K, **kw):
    rng = np.random.default_rng(1)
    m = hs.HMM(K, init_params="", n_iter=1, tol=-np.inf, **kw)
    tr = m._transitions()
    pi, A = _random_chain(rng, tr)
    m.startprob_, m.transmat_ = pi, A
    m.emissionprob_ = rng.dirichlet(np.ones(3), size=K)
    return m


@pytest.mark.parametrize("kw", [
    {"topology": "left-right", "bandwidth": 1},                     # K=8: sparse kernels
    {"transmat_mask": np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]], bool)},  # dense kernels
])
def test_structured_model_matches_enumeration(kw):
    K = 8 if "topology" in kw else 3
    m = _masked_model(K, **kw)
    assert m._chain(m.startprob_, m.transmat_).sparse == ("topology" in kw)
    X = np.array([0, 2, 1, 1, 2, 0, 2, 1])
    lengths = [4, 4]
    A, B = m.transmat_.copy(), m.emissionprob_.copy()
    ref = dataset_posteriors(m.startprob_, A, np.log(B.T[X]), lengths)
    np.testing.assert_allclose(m.score_samples(X, lengths), ref["loglik"], rtol=1e-12)
    np.testing.assert_allclose(m.predict_proba(X, lengths), ref["gamma"], atol=1e-12)
    np.testing.assert_array_equal(m.predict(X, lengths), ref["viterbi_path"])
    m.fit(X[:, None], lengths)
    rows = ref["trans"].sum(1) > 0
    expect = ref["trans"][rows] / ref["trans"][rows].sum(1, keepdims=True)
    np.testing.assert_allclose(m.transmat_[rows], expect, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("learn", ["em", "map", "vb", "vt", "kvt", *ONLINE_MODES])
@pytest.mark.parametrize("kw", [
    {"topology": "banded", "bandwidth": 1},
    {"topology": "left-right"},
    {"transmat_mask": ~np.eye(4, k=2, dtype=bool) & ~np.eye(4, k=-1, dtype=bool)},
])
def test_masked_zeros_stay_exactly_zero(learn, kw):
    rng = np.random.default_rng(2)
    X = rng.integers(0, 3, (60, 1))
    lengths = [4] * 15 if learn in ("bona", "mpa") else [20] * 3
    prior = {"transmat_prior": 3.0} if learn in ("map", "vt", "kvt") else {}
    m = hs.HMM(4, learn=learn, n_iter=4, random_state=0, k_best=2, **prior, **kw)
    if learn in ("bona", "mpa"):
        m.set_params(learner_options={"max_paths": 10**6})
    m.fit(X, lengths)
    allowed = m._transitions().mask()
    assert np.all(m.transmat_[~allowed] == 0.0)
    np.testing.assert_allclose(m.transmat_.sum(1), 1.0)


def test_structured_arguments_validated():
    X = np.array([[0], [1], [2]])
    with pytest.raises(InvalidInputError, match="bandwidth"):
        hs.HMM(3, topology="banded").fit(X)
    with pytest.raises(InvalidInputError, match="topology"):
        hs.HMM(3, topology="ring").fit(X)
    with pytest.raises(InvalidInputError, match="transmat_mask"):
        hs.HMM(3, transmat_mask=np.ones((2, 2), bool)).fit(X)
    with pytest.raises(InvalidInputError, match="transmat_mask: state 1"):
        hs.HMM(3, transmat_mask=np.array([[1, 1, 1], [0, 0, 0], [1, 1, 1]], bool)).fit(X)
    m = _masked_model(3, topology="left-right")
    m.transmat_ = np.full((3, 3), 1 / 3)            # hand-set, mass where not allowed
    with pytest.raises(InvalidInputError, match="transmat_: row 1"):
        m.score(X)


@pytest.mark.parametrize("learn", ["em", "vt", "kvt"])
def test_structured_fit_equals_dense_fit_from_the_same_zeros(learn):
    """A left-right model (sparse kernels, transitions stored by allowed entry) learns what
    an unstructured model started from the same transition matrix learns (dense kernels;
    its zeros stay zero because no path uses them), iteration for iteration."""
    rng = np.random.default_rng(3)
    X = rng.integers(0, 3, (90, 1))
    structured = _masked_model(8, topology="left-right", bandwidth=1)
    plain = hs.HMM(8, init_params="", tol=-np.inf)
    plain.startprob_, plain.transmat_ = structured.startprob_, structured.transmat_
    plain.emissionprob_ = structured.emissionprob_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateStateWarning)  # states the paths skip
        for m in (structured, plain):
            m.set_params(learn=learn, n_iter=5, k_best=3)
            m.fit(X, [30, 30, 30])
    assert structured._chain(structured.startprob_, structured.transmat_).sparse
    np.testing.assert_allclose(structured.transmat_, plain.transmat_, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(structured.emissionprob_, plain.emissionprob_, rtol=1e-9)
    np.testing.assert_allclose(structured.monitor_.history, plain.monitor_.history,
                               rtol=1e-11)

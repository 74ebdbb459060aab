"""PROPS with missing observations (issue 13, item 2).

A missing step (symbol -1 or masked; a row of NaN) has no emission term in any state, and
every source gets the hole in its history. Checked against enumeration of every state path
with those terms dropped (likelihood, posteriors, Viterbi, one EM iteration), against the
direct transcription of online EM, Kneser-Ney's back-off past a hole against the brute-force
KN probability of the shortened context, the LSTM's expected-embedding step against the
network run by hand, a saved stream cut right after a hole, and the errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from brute_force import dataset_posteriors
from scipy import stats as st
from test_online_em import direct_online_em
from test_props import _gaussian_props, _Normal, direct_reference, source_table
from test_props import fitted as props_fitted
from test_source_kneser_ney import BruteKN

from hiddenstate import PROPS
from hiddenstate.errors import InvalidInputError
from hiddenstate.learn.online.online_em import PRIOR_MASS
from hiddenstate.sources import MISSING, CallableSource, DensitySource, KneserNeySource, Source

W = 4


def shift_or_hole(sharp: float = 0.7):
    """Mass ``sharp`` on (y_{t-1} + 1) mod W (on 0 at t = 0); right after a hole (-1) an
    uneven fixed distribution: reading the hole as a symbol (p[-1]) would differ."""
    def f(history):
        if len(history) and history[-1] == MISSING:
            return np.arange(1.0, W + 1) / (W * (W + 1) / 2)
        p = np.full(W, (1 - sharp) / (W - 1))
        p[(history[-1] + 1) % W if len(history) else 0] = sharp
        return p
    return f


def two_back_or_hole():
    """Likely y_{t-2}; where y_{t-2} is missing or absent, likely the last symbol."""
    def f(history):
        p = np.full(W, 0.1 / (W - 1))
        p[history[-2] if len(history) >= 2 and history[-2] != MISSING else W - 1] = 0.9
        return p
    return f


def log_emissions(m, fns, y, lengths):
    """The full (N, K) table with the missing steps' terms dropped (0 in every state)."""
    pert = np.log(m.emissionprob_.T[np.maximum(y, 0)]) * (y >= 0)[:, None]
    return np.hstack([source_table(fns, y, lengths), pert])


def fitted(fns, Kp, rng, **kw):
    """test_props' hand-set PROPS model, its sources declaring missing-value support."""
    return props_fitted(fns, Kp, rng, supports_missing=True, **kw)


def with_holes(rng, n, share=0.3):
    y = rng.integers(0, W, n)
    y[rng.random(n) < share] = MISSING
    return y


def path_log_prob(pi, A, log_e, path, lengths):
    """log p(x, z) of the path ``z`` over concatenated sequences."""
    total, start = 0.0, 0
    for n in lengths:
        z = path[start:start + n]
        total += np.log(pi[z[0]]) + np.log(A[z[:-1], z[1:]]).sum() \
            + log_e[start + np.arange(n), z].sum()
        start += n
    return total


@pytest.mark.parametrize("Kp", [1, 2])
def test_inference_with_missing_steps_against_enumeration(Kp):
    rng = np.random.default_rng(30 + Kp)
    fns = [shift_or_hole(), two_back_or_hole()]
    m = fitted(fns, Kp, rng)
    lengths = np.array([6, 1, 4])
    y = np.array([2, -1, 3, -1, -1, 0, -1, 1, -1, 2, 3])  # holes at starts, ends, in a row
    log_e = log_emissions(m, fns, y, lengths)
    ref = dataset_posteriors(m.startprob_, m.transmat_, log_e, lengths)
    # (a sequence that is one hole has log-likelihood 0, up to rounding)
    assert np.allclose(m.score_samples(y, lengths), ref["loglik"], rtol=1e-12, atol=1e-15)
    assert np.allclose(m.predict_proba(y, lengths), ref["gamma"], rtol=0, atol=1e-12)
    logp, path = m.decode(y, lengths)
    # a best path (holes make exact ties possible: any of them), with the best log-probability
    assert np.isclose(logp, ref["viterbi_logprob"].sum(), rtol=1e-12)
    assert np.isclose(path_log_prob(m.startprob_, m.transmat_, log_e, path, lengths), logp,
                      rtol=1e-12)
    scores = m.token_scores(y, lengths)
    assert np.allclose(scores.source_log_prob, log_e[:, :2], rtol=1e-14, atol=0)
    assert np.allclose(scores.log_prob[y < 0], 0.0, rtol=0, atol=1e-15)  # predicted surely
    start = 0
    for n in lengths:  # filtered posteriors from prefix enumerations
        for t in range(n):
            pre = dataset_posteriors(m.startprob_, m.transmat_, log_e[start:start + t + 1],
                                     [t + 1])
            assert np.allclose(scores.filtered[start + t], pre["per_sequence"][0]["gamma"][-1],
                               atol=1e-12)
        start += n
    # a masked array is the same data
    masked = np.ma.masked_array(np.where(y < 0, 1, y), mask=y < 0)
    assert np.array_equal(m.score_samples(masked, lengths), m.score_samples(y, lengths))
    # the hole is in the history: the source columns differ from reading it as a symbol
    filled = np.where(y < 0, 0, y)
    assert not np.allclose(source_table(fns, y, lengths)[y >= 0],
                           source_table(fns, filled, lengths)[y >= 0])


def test_impute_is_the_enumerated_posterior_predictive():
    """p(y_t = w, X_obs) by enumeration with step t's terms set to each candidate w (the
    sources predicting from the history before t, holes kept; later steps unchanged)."""
    rng = np.random.default_rng(37)
    fns = [shift_or_hole(), two_back_or_hole()]
    m = fitted(fns, 2, rng)
    lengths = np.array([7, 3])
    y = np.array([1, -1, 2, -1, -1, 3, 0, -1, 2, -1])
    log_e = log_emissions(m, fns, y, lengths)
    want = y.copy()
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    for t in np.flatnonzero(y < 0):
        s = np.searchsorted(bounds, t, side="right") - 1
        a, b = bounds[s], bounds[s + 1]
        joint = []
        for w in range(W):
            le = log_e[a:b].copy()
            le[t - a] = [np.log(fn(y[a:t])[w]) for fn in fns] + list(
                np.log(m.emissionprob_[:, w]))
            joint.append(dataset_posteriors(m.startprob_, m.transmat_, le, [b - a])["loglik"])
        want[t] = int(np.argmax(joint))
    assert np.array_equal(m.impute(y, lengths), want)
    masked = np.ma.masked_array(np.where(y < 0, 0, y), mask=y < 0)
    assert np.array_equal(m.impute(masked, lengths), want)
    assert len(set(want[y < 0])) > 1    # not one constant fill


def test_impute_missing_rows_with_the_predictive_mean():
    rng = np.random.default_rng(38)
    m = _gaussian(rng)
    lengths = np.array([5, 3])
    X = rng.normal(size=(8, 2)) * 2
    X[[2, 3, 6]] = np.nan
    seen = ~np.isnan(X[:, 0])
    gamma = m.predict_proba(X, lengths)
    src_mean = np.array([0.8 * X[1], np.zeros(2), 0.8 * X[5]])   # after x_1, a hole, x_5
    want = X.copy()
    for i, t in enumerate([2, 3, 6]):
        want[t] = gamma[t, 0] * src_mean[i] + gamma[t, 1:] @ m.means_
    got = m.impute(X, lengths)
    assert np.allclose(got, want, rtol=1e-12)
    assert np.array_equal(got[seen], X[seen])


@pytest.mark.parametrize("learn", ["em", "map"])
def test_one_em_iteration_with_missing_steps_equals_enumerated_counts(learn):
    rng = np.random.default_rng(33)
    fns = [shift_or_hole()]
    priors = {} if learn == "em" else {"transmat_prior": 2.0, "emissionprob_prior": 1.5}
    m = fitted(fns, 2, rng, learn=learn, n_iter=1, learn_startprob=True, **priors)
    A0, B0, pi0 = m.transmat_.copy(), m.emissionprob_.copy(), m.startprob_.copy()
    lengths = np.array([5, 4])
    y = np.array([1, -1, 2, 3, -1, -1, 0, 1, 2])
    m.fit(y, lengths)
    log_e = log_emissions(fitted(fns, 2, np.random.default_rng(33)), fns, y, lengths)
    ref = dataset_posteriors(pi0, A0, log_e, lengths)
    extra = 0.0 if learn == "em" else 1.0   # Dirichlet(alpha) MAP: counts + alpha - 1
    trans = ref["trans"] + extra
    assert np.allclose(m.transmat_, trans / trans.sum(1, keepdims=True), rtol=1e-10)
    assert np.allclose(m.startprob_, ref["start"] / ref["start"].sum(), rtol=1e-10)
    # emission counts over the observed steps only
    counts = np.zeros((2, W))
    for t in np.flatnonzero(y >= 0):
        counts[:, y[t]] += ref["gamma"][t, 1:]
    counts += 0.0 if learn == "em" else 0.5
    assert np.allclose(m.emissionprob_, counts / counts.sum(1, keepdims=True), rtol=1e-10)
    assert not np.allclose(B0, m.emissionprob_)


def test_online_em_with_missing_steps_matches_the_direct_transcription():
    rng = np.random.default_rng(34)
    fns = [shift_or_hole(), two_back_or_hole()]
    lengths = np.array([60, 1, 39, 100])
    y = with_holes(rng, lengths.sum())
    y[0] = MISSING                          # the very first step of the stream
    K = 4
    pi, A = np.full(K, 1 / K), rng.dirichlet(np.ones(K), K)
    B = rng.dirichlet(np.ones(W), 2)
    m = PROPS([CallableSource(f, W, supports_missing=True) for f in fns], n_perturbation_states=2,
              init_params="",
              learner_options={"step_exponent": 0.7, "warmup": 5})
    m.startprob_, m.transmat_, m.emissionprob_ = pi, A, B
    m.partial_fit(y[:80], [60, 1, 19])
    m.partial_fit(y[80:], [20, 100], continues=True)
    ref = direct_reference(fns, y, lengths, pi, A, B, step_exponent=0.7, warmup=5)
    assert np.allclose(m.transmat_, ref["transmat"], rtol=1e-9, atol=1e-12)
    assert np.allclose(m.emissionprob_, ref["emission"]["emissionprob"][2:], rtol=1e-9,
                       atol=1e-12)
    assert np.allclose(m.stream_log_prob_, ref["log_pred"][80:], rtol=1e-9, atol=1e-12)
    assert np.allclose(m.stream_log_prob_[y[80:] < 0], 0.0, rtol=0, atol=1e-15)


# -- real-valued observations: rows of NaN ---------------------------------------------------------
class AR1OrHole(DensitySource):
    """x_t ~ N(0.8 x_{t-1}, I); after a missing row (NaN) N(0, I) again."""

    supports_missing = True
    n_features = 2

    def reset(self):
        self.last = np.zeros(2)
        return self.predictive()

    def step(self, x):
        x = np.asarray(x, dtype=float)
        self.last = np.zeros(2) if np.isnan(x).all() else x.copy()
        return self.predictive()

    def predictive(self):
        return _Normal(0.8 * self.last)

    def snapshot(self):
        return {"last": self.last.copy()}

    def restore(self, snap):
        self.last = np.asarray(snap["last"], dtype=float).copy()


def _ar1_hole_table(X, lengths):
    out, start = np.zeros(len(X)), 0
    for n in lengths:
        prev = np.zeros(2)
        for t in range(n):
            x = X[start + t]
            if np.isnan(x).all():
                prev = np.zeros(2)
                continue
            out[start + t] = _Normal(0.8 * prev).logpdf(x)
            prev = x
        start += n
    return out


def _gaussian(rng, **kw):
    return _gaussian_props(rng, AR1OrHole(), **kw)


def test_gaussian_missing_rows_against_enumeration_and_one_em_step():
    rng = np.random.default_rng(35)
    m = _gaussian(rng, learn="em", n_iter=1)
    pi, A0 = m.startprob_.copy(), m.transmat_.copy()
    lengths = np.array([5, 3])
    X = rng.normal(size=(8, 2)) * 2
    X[[1, 2, 5, 7]] = np.nan
    seen = ~np.isnan(X[:, 0])
    pert = np.stack([st.norm(m.means_[k], np.sqrt(m._covars_[k])).logpdf(X).sum(1)
                     for k in range(2)], axis=1)
    log_e = np.column_stack([_ar1_hole_table(X, lengths), np.where(seen[:, None], pert, 0)])
    ref = dataset_posteriors(pi, A0, log_e, lengths)
    assert np.allclose(m.score_samples(X, lengths), ref["loglik"], rtol=1e-12)
    assert np.allclose(m.predict_proba(X, lengths), ref["gamma"], atol=1e-12)
    logp, path = m.decode(X, lengths)
    assert np.isclose(logp, ref["viterbi_logprob"].sum(), rtol=1e-12)
    assert np.isclose(path_log_prob(pi, A0, log_e, path, lengths), logp, rtol=1e-12)
    m.fit(X, lengths)
    g = ref["gamma"][seen, 1:]
    assert np.allclose(m.means_, g.T @ X[seen] / g.sum(0)[:, None], rtol=1e-10)
    assert np.allclose(m.transmat_, ref["trans"] / ref["trans"].sum(1, keepdims=True),
                       rtol=1e-10)


def test_gaussian_online_em_with_missing_rows_matches_the_direct_transcription():
    rng = np.random.default_rng(36)
    teacher = _gaussian(rng)
    teacher.sources = [AR1OrHole()]
    X, _ = teacher.sample(400, random_state=np.random.default_rng(37))
    X[np.random.default_rng(38).random(400) < 0.25] = np.nan
    lengths = [150, 250]
    m = _gaussian(np.random.default_rng(36), learner_options={"warmup": 10})
    theta = {"startprob": m.startprob_.copy(), "transmat": m.transmat_.copy(),
             "emission": {"means": m.means_.copy(), "covars": m._covars_.copy()}}
    m.fit(X, lengths)
    fam = m.emission_family(m.n_features_).inner
    ref = direct_online_em(theta, X, lengths, emission="dense", family=fam, warmup=10,
                           alpha_t=np.full((3, 3), 1 + PRIOR_MASS / 3),
                           source_ll=_ar1_hole_table(X, lengths)[:, None])
    assert np.allclose(m.transmat_, ref["transmat"], rtol=1e-9, atol=1e-12)
    assert np.allclose(m.means_, ref["emission"]["means"], rtol=1e-9)
    assert np.allclose(m.stream_log_prob_, ref["log_pred"], rtol=1e-9, atol=1e-12)


# -- Kneser-Ney: back-off past a hole --------------------------------------------------------------
@pytest.mark.parametrize("order", [2, 3, 4])
def test_kneser_ney_backs_off_to_the_observed_suffix(order):
    rng = np.random.default_rng(40 + order)
    Wk = 6
    lengths = [30, 25, 40]
    train = rng.integers(0, Wk, sum(lengths))
    src = KneserNeySource(order=order).fit(train, lengths, n_symbols=Wk)
    starts = np.cumsum([0] + lengths[:-1])
    brute = BruteKN([train[s:s + n] for s, n in zip(starts, lengths, strict=True)], order, Wk)
    y = np.array([-1, 2, 3, 1, -1, 4, 0, -1, -1, 5, 2, 2, 1, -1])
    want = np.zeros(len(y))
    for t in np.flatnonzero(y >= 0):
        hole = max([-1] + [i for i in range(t) if y[i] < 0])
        if hole < 0:   # no hole before t: the usual context (BOS, then the history)
            h = brute.context(y[:t])
        else:          # the longest observed suffix: the symbols after the last hole
            h = tuple(int(v) for v in y[hole + 1:t])[max(0, t - hole - 1 - (order - 1)):]
        want[t] = np.log(brute.prob(int(y[t]), h))
    assert np.allclose(src.log_probs(y), want, rtol=1e-12, atol=0)      # vectorised
    assert np.allclose(Source.log_probs(src, y), want, rtol=1e-12, atol=0)   # reset/step
    # continuing from a position cut right after a hole gives the same numbers
    a, pos = src.log_probs_from(y[:5])
    assert pos["context"][-1] == MISSING
    b, _ = src.log_probs_from(y[5:], pos)
    assert np.allclose(np.concatenate([a, b]), want, rtol=1e-12, atol=0)
    # and a hole is not read as a symbol or as a sequence start
    for fill in (0, 5):
        assert not np.allclose(src.log_probs(np.where(y < 0, fill, y))[y >= 0], want[y >= 0])


def test_save_load_resume_after_a_hole_is_bit_identical(tmp_path):
    from hiddenstate import load

    rng = np.random.default_rng(9)
    src = KneserNeySource(order=3).fit(rng.integers(0, W, 400), n_symbols=W)
    y = with_holes(rng, 300)
    y[149] = MISSING                        # the cut falls right after a hole
    whole = PROPS([src], n_perturbation_states=2, random_state=3).fit(y, [100, 200])
    cut = PROPS([src], n_perturbation_states=2, random_state=3)
    cut.partial_fit(y[:150], [100, 50])
    assert cut.learner_state_["source.0.context"][-1] == MISSING
    cut.save(tmp_path / "m")
    back = load(tmp_path / "m")
    back.partial_fit(y[150:], [150], continues=True)
    for a in ("startprob_", "transmat_", "emissionprob_"):
        assert np.array_equal(getattr(whole, a), getattr(back, a)), a
    assert np.array_equal(whole.token_scores(y).log_prob, back.token_scores(y).log_prob)
    # the batch modes save and load the same way
    em = PROPS([src], n_perturbation_states=2, learn="em", n_iter=5, random_state=0).fit(y, [100,
                                                                                         200])
    em.save(tmp_path / "em")
    assert np.array_equal(load(tmp_path / "em").score_tokens(y), em.score_tokens(y))


def test_vt_decodes_missing_steps_and_counts_only_observed_symbols():
    rng = np.random.default_rng(12)
    m = fitted([shift_or_hole()], 1, rng, learn="vt", n_iter=1)
    A0, B0, pi0 = m.transmat_.copy(), m.emissionprob_.copy(), m.startprob_.copy()
    y = with_holes(rng, 8)
    log_e = log_emissions(fitted([shift_or_hole()], 1, np.random.default_rng(12)),
                          [shift_or_hole()], y, [8])
    path = dataset_posteriors(pi0, A0, log_e, [8])["viterbi_path"]
    m.fit(y)
    assert np.any((path == 1) & (y < 0))   # holes decoded in the perturbation state...
    counts = np.bincount(y[(path == 1) & (y >= 0)], minlength=W).astype(float)
    assert np.allclose(m.emissionprob_[0], counts / counts.sum(), rtol=1e-12)  # ...not counted
    assert not np.allclose(m.emissionprob_[0], B0[0])


def test_batch_objectives_never_decrease_with_missing_steps():
    """EM, MAP and VB with holes: each iteration's objective (log-likelihood, log-posterior,
    ELBO) at least the last; k-best VT with k = 1 is VT."""
    rng = np.random.default_rng(14)
    y = with_holes(rng, 600, share=0.25)
    lengths = [200, 400]

    def model(**kw):
        return PROPS([CallableSource(shift_or_hole(), W, supports_missing=True),
                      CallableSource(two_back_or_hole(), W, supports_missing=True)],
                     n_perturbation_states=2, random_state=1, n_iter=15, tol=-np.inf, **kw)

    for learn in ("em", "map", "vb"):
        h = np.array(model(learn=learn).fit(y, lengths).monitor_.history)
        assert len(h) == 15 and np.all(np.diff(h) >= -1e-9 * np.abs(h[1:])), (learn, h)
    vt, kvt = model(learn="vt").fit(y, lengths), model(learn="kvt", k_best=1).fit(y, lengths)
    assert np.array_equal(vt.transmat_, kvt.transmat_)
    assert np.array_equal(vt.emissionprob_, kvt.emissionprob_)


# -- errors ----------------------------------------------------------------------------------------
class Plain:
    """A plain object following the protocol, with no declaration about missing history."""

    n_symbols = W

    def reset(self):
        return np.full(W, 1 / W)

    def step(self, y):
        return np.full(W, 1 / W)


def test_sources_that_do_not_declare_missing_support_are_refused():
    y = np.array([0, 1, -1, 2])
    for src, name in ((CallableSource(shift_or_hole(), W), "CallableSource"),
                      (Plain(), "Plain")):
        with pytest.raises(InvalidInputError,
                           match=f"^sources: entry 0 \\({name}\\) does not declare .* X has 1 "
                                 "missing observation; .*supports_missing = True"):
            PROPS([src], n_perturbation_states=1).fit(y)
        PROPS([src], n_perturbation_states=1).fit(y[y >= 0])             # complete data is fine
    declared = Plain()
    declared.supports_missing = True
    assert np.isfinite(PROPS([declared], n_perturbation_states=1, random_state=0).fit(y).score(y))
    with pytest.raises(InvalidInputError, match="^supports_missing"):
        CallableSource(shift_or_hole(), W, supports_missing="yes")


def test_density_errors_partly_missing_rows_and_undeclared_sources():
    from test_props import AR1Source

    X = np.random.default_rng(0).normal(size=(6, 2))
    X[2, 0] = np.nan
    with pytest.raises(InvalidInputError, match="^X: row 2 is partly missing"):
        PROPS([AR1OrHole()], n_perturbation_states=1, emission="gaussian").fit(X)
    X[2] = np.nan
    with pytest.raises(InvalidInputError, match="^sources: entry 0 \\(AR1Source\\) does not "
                                                "declare .* X has 1 missing"):
        PROPS([AR1Source()], n_perturbation_states=1, emission="gaussian").fit(X)
    assert np.isfinite(PROPS([AR1OrHole()], n_perturbation_states=1, emission="gaussian",
                             random_state=0)
                       .fit(X).score(X))


# -- the LSTM source: the expected embedding -------------------------------------------------------
@pytest.fixture(scope="module")
def lstm():
    pytest.importorskip("torch")
    from hiddenstate.sources import LSTMSource

    rng = np.random.default_rng(1)
    X = rng.integers(0, 12, size=400)
    # its random initial weights (epochs=0): what is checked does not depend on training
    return LSTMSource(n_symbols=12, embedding_dim=6, hidden_dim=8, num_layers=2, epochs=0,
                      batch_size=4, bptt=8, random_state=3).fit(X, [200, 200])


def test_lstm_feeds_the_expected_embedding_at_a_hole(lstm):
    import torch

    net = lstm._net
    y = [3, 7, 1]
    p = lstm.reset()
    for v in y:
        p = lstm.step(v)
    h0, c0 = (torch.from_numpy(lstm.snapshot()[k].astype(np.float32))[:, None] for k in "hc")
    got = lstm.step(MISSING)
    with torch.no_grad():   # by hand with nn.LSTM: input sum_w p_w E_w, then the decoder
        x = torch.from_numpy(p.astype(np.float32)) @ net.embedding.weight[:12]
        out, _ = net.lstm(x[None, None], (h0, c0))
        logits = net.decoder(out[0, -1]).double()
    want = torch.softmax(logits, 0).numpy()
    assert np.allclose(got, want, rtol=1e-5, atol=1e-7)
    assert np.abs(got - p).max() > 1e-5           # it is a step, not a skip


def test_lstm_batched_scores_with_holes_match_the_step_loop(lstm, monkeypatch):
    monkeypatch.setattr(lstm, "chunk_size", 3)    # holes on both sides of chunk boundaries
    y = np.array([-1, 4, 5, -1, -1, 2, 9, 11, 0, -1, 3, 3, 8, -1])
    loop = Source.log_probs(lstm, y)
    assert np.array_equal(loop[y < 0], np.zeros(5))
    assert np.allclose(lstm.log_probs(y), loop, rtol=0, atol=2e-6)
    a, pos = lstm.log_probs_from(y[:4])           # cut right after a hole
    b, _ = lstm.log_probs_from(y[4:], pos)
    assert np.allclose(np.concatenate([a, b]), loop, rtol=0, atol=2e-6)
    whole, _ = lstm.log_probs_from(y)
    assert np.allclose(whole, loop, rtol=0, atol=2e-6)


def test_the_missing_observations_example_in_docs_props_prints_what_it_says(capsys):
    from test_personalize import run_props_doc_example
    run_props_doc_example("## Missing observations", "\nprints\n", capsys)


# -- the personalisation pipeline ---------------------------------------------------------------
def test_personalize_with_a_missing_token(tmp_path):
    """Words marked ``___`` in the target are missing for every model: the pipeline's PROPS
    equals one fit on the stream with -1 there, the reported numbers are over the observed
    words, and the CLI option reaches it."""
    from hiddenstate import cli, load
    from hiddenstate.personalize import personalize, predictive_summary

    rng = np.random.default_rng(5)
    words = "the ship sailed to the port and the crew saw the coast".split()
    ref = tmp_path / "ref.txt"
    ref.write_text("\n".join(" ".join(rng.permutation(words)) for _ in range(40)) + "\n")
    lines = []
    for _ in range(30):
        line = list(rng.permutation(words))
        for i in np.flatnonzero(rng.random(len(line)) < 0.15):
            line[i] = "___"
        lines.append(" ".join(line))
    tgt = tmp_path / "target.txt"
    tgt.write_text("\n".join(lines) + "\n")
    pytest.importorskip("matplotlib")
    result = personalize(ref, tgt, tmp_path / "out", words=200, eval_words=100, seed=0,
                         missing_token="___")
    cli.write_personalize_report(result)
    pers, evs, s = result.personalisation, result.evaluation, result.summary
    lost = ~pers.observed
    assert lost.sum() == sum(w == "___" for w in pers.words) > 10
    assert s["n_personalisation_missing"] == lost.sum()
    assert s["n_evaluation_missing"] == sum(w == "___" for w in evs.words) > 0
    one = PROPS([result.source], n_perturbation_states=2, random_state=0).fit(pers.X, pers.lengths)
    assert np.array_equal(one.transmat_, result.props.transmat_)
    curve = result.curves["props"]
    assert np.allclose(curve[lost], 0.0, atol=1e-15)
    got = s["models"]["props"]["personalisation"]
    assert got["n_words"] == (~lost).sum()
    assert got["mean_log_prob"] == pytest.approx(curve[~lost].mean(), rel=1e-12)
    assert got["mean_log_prob"] < predictive_summary(curve)["mean_log_prob"]  # not flattered
    html = (tmp_path / "out" / "index.html").read_text()   # holes marked in 3 panels
    assert html.count("— missing (no emission term") == 3 * sum(w == "___" for w in evs.words)
    back = load(tmp_path / "out" / "props")
    ev = s["models"]["props"]["evaluation"]
    lp = back.score_tokens(evs.X, evs.lengths)
    assert ev["mean_log_prob"] == pytest.approx(lp[evs.observed].mean(), rel=1e-12)
    assert cli.main(["personalize", "--reference", str(ref), "--target", str(tgt), "--out",
                     str(tmp_path / "cli"), "--words", "200", "--eval-words", "100",
                     "--no-report", "--no-progress", "--missing-token", "___"]) == 0
    saved = json.loads((tmp_path / "cli" / "summary.json").read_text())
    assert saved["n_personalisation_missing"] == s["n_personalisation_missing"]
    assert saved["settings"]["missing_token"] == "___"
    with pytest.raises(InvalidInputError, match="^--missing-token"):
        personalize(ref, tgt, tmp_path / "bad", words=200, missing_token="a b")

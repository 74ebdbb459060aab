"""Hand-set parameters, impossible data, memory estimates and argument errors.

Hand-set parameters give hmmlearn's numbers without ``fit`` and without ``n_features_``;
invalid ones (in any inference method) raise an InvalidInputError naming them, once per
change of the parameters; sequences of probability zero raise ZeroProbabilityError naming
the sequence where a method returns states or posteriors; operations that cannot fit in
memory are refused before allocating; misuse of arguments raises HiddenStateError with the
argument's name."""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest
from brute_force import dataset_posteriors

import hiddenstate as hs
from hiddenstate import _validation, inference, metrics
from hiddenstate.compat import hmmlearn as compat
from hiddenstate.errors import (
    InsufficientMemoryError,
    InvalidInputError,
    NotFittedError,
    ZeroProbabilityError,
)
from hiddenstate.inference import Sequences
from hiddenstate.models.hmm import HMM
from hiddenstate.sources import CallableSource

RNG = np.random.default_rng(7)
PI = np.array([0.6, 0.3, 0.1])
A = np.array([[0.8, 0.15, 0.05], [0.1, 0.7, 0.2], [0.25, 0.25, 0.5]])
B = np.array([[0.7, 0.2, 0.1, 0.0], [0.1, 0.3, 0.3, 0.3], [0.05, 0.05, 0.1, 0.8]])
MEANS = np.array([[0.0, 0.0], [3.0, 1.0], [-2.0, 2.5]])
COVARS = {"spherical": np.array([1.0, 0.5, 2.0]),
          "diag": np.array([[1.0, 0.4], [0.6, 1.5], [2.0, 0.3]]),
          "full": np.array([np.eye(2), [[1.0, 0.5], [0.5, 1.0]], [[2.0, -0.3], [-0.3, 0.4]]]),
          "tied": np.array([[1.2, 0.3], [0.3, 0.8]])}
LAMBDAS = np.array([[1.0, 4.0], [6.0, 0.5], [12.0, 12.0]])

METHODS = ("score", "score_samples", "predict_proba", "decode",
           "filter_proba", "score_tokens", "sample_posterior", "predict", "bic", "aic")


def hand_set(emission="categorical", ct="diag", **kw) -> HMM:
    m = hs.HMM(3, emission=emission, covariance_type=ct, **kw)
    m.startprob_, m.transmat_ = PI, A
    if emission == "categorical":
        m.emissionprob_ = B
    elif emission == "gaussian":
        m.means_, m.covars_ = MEANS, COVARS[ct]
    else:
        m.lambdas_ = LAMBDAS
    return m


def data(emission, n=40, seed=0):
    rng = np.random.default_rng(seed)
    if emission == "categorical":
        return rng.integers(0, 4, size=(n, 1))
    if emission == "gaussian":
        return rng.normal(size=(n, 2)) * 2
    return rng.poisson(4.0, size=(n, 2))


def call(model, method, X, lengths=None):
    if method in ("sample_posterior",):
        return model.sample_posterior(X, lengths, random_state=0)
    return getattr(model, method)(X, lengths)


# -- hand-set parameters are usable, and give hmmlearn's numbers -----------------------------------
CASES = [("categorical", "diag"), ("poisson", "diag")] + [("gaussian", ct) for ct in COVARS]


@pytest.mark.parametrize("emission, ct", CASES)
def test_hand_set_parameters_give_hmmlearn_numbers_without_fit(emission, ct):
    from hmmlearn import hmm as ref_hmm

    m = hand_set(emission, ct)
    assert m.n_features_ == (4 if emission == "categorical" else 2)  # inferred
    if emission == "categorical":
        ref = ref_hmm.CategoricalHMM(3, n_features=4)
        ref.emissionprob_ = B
    elif emission == "gaussian":
        ref = ref_hmm.GaussianHMM(3, covariance_type=ct)
        ref.means_, ref.covars_ = MEANS, COVARS[ct]
    else:
        ref = ref_hmm.PoissonHMM(3)
        ref.lambdas_ = LAMBDAS
    ref.startprob_, ref.transmat_ = PI, A
    X, lengths = data(emission), [15, 25]
    assert m.score(X, lengths) == pytest.approx(ref.score(X, lengths), rel=1e-10)
    ref_ll, ref_post = ref.score_samples(X, lengths)  # hmmlearn's: log p(X), posteriors
    np.testing.assert_allclose(m.score_samples(X, lengths),
                               [ref.score(X[:15]), ref.score(X[15:])], rtol=1e-10)
    assert m.score(X, lengths) == pytest.approx(ref_ll, rel=1e-10)
    np.testing.assert_allclose(m.predict_proba(X, lengths), ref_post, atol=1e-10)
    logp, states = m.decode(X, lengths)
    ref_logp, ref_states = ref.decode(X, lengths)
    assert logp == pytest.approx(ref_logp, rel=1e-10)
    np.testing.assert_array_equal(states, ref_states)
    assert m.n_parameters() == sum(ref._get_n_fit_scalars_per_param().values())


def test_hand_set_parameters_match_brute_force_in_every_method():
    m = hand_set()
    X, lengths = data("categorical", 9), [4, 5]
    symbols = X[:, 0]
    ref = dataset_posteriors(PI, A, np.log(np.where(B > 0, B, 1e-300)).T[symbols] * (B > 0).T[
        symbols] + np.where((B > 0).T[symbols], 0, -np.inf), lengths)
    np.testing.assert_allclose(m.score_samples(X, lengths), ref["loglik"], rtol=1e-12)
    np.testing.assert_allclose(m.predict_proba(X, lengths), ref["gamma"], atol=1e-12)
    logp, states = m.decode(X, lengths)
    assert logp == pytest.approx(ref["viterbi_logprob"].sum(), rel=1e-12)
    # filtering: p(z_t | x_0..t) from the brute force of every prefix
    bounds = np.cumsum([0] + lengths)
    filt = m.filter_proba(X, lengths)
    tokens = m.score_tokens(X, lengths)
    for s in range(2):
        for t in range(lengths[s]):
            prefix = dataset_posteriors(PI, A, np.log(B.T[symbols[bounds[s]:bounds[s] + t + 1]]
                                                      + 1e-300), [t + 1])
            np.testing.assert_allclose(filt[bounds[s] + t], prefix["gamma"][-1], atol=1e-9)
        np.testing.assert_allclose(tokens[bounds[s]:bounds[s + 1]].sum(), ref["loglik"][s],
                                   rtol=1e-12)


# -- invalid hand-set parameters ------------------------------------------------------------------
def _bad(attr, value, emission="categorical", ct="diag"):
    return (attr, value, emission, ct)


BAD = [
    _bad("transmat_", A * np.array([[1.4], [1.0], [1.0]])),          # row sums to 1.4
    _bad("transmat_", np.where(np.eye(3) > 0, np.nan, A)),             # NaN
    _bad("transmat_", A + np.array([[0.2, -0.2, 0]] * 3)),             # negative entry
    _bad("transmat_", np.array([[0.5, 0.5, 0, 0]] * 3)),               # (3, 4)
    _bad("transmat_", A[:2]),                                          # (2, 3)
    _bad("startprob_", np.ones(1)),                                    # (1,)
    _bad("startprob_", PI[:, None]),                                   # (3, 1)
    _bad("emissionprob_", B[:2]),                                      # K mismatch
    _bad("emissionprob_", np.hstack([B, np.zeros((3, 1))]) * 1.0 + [[0, 0, 0, 0, 0.1]] * 3),
    _bad("emissionprob_", B.ravel()),                                  # 1-D
    _bad("lambdas_", -LAMBDAS, "poisson"),
    _bad("lambdas_", LAMBDAS[:, :1].ravel(), "poisson"),
    _bad("means_", np.full((3, 2), np.inf), "gaussian"),
    _bad("covars_", -COVARS["diag"], "gaussian", "diag"),
    _bad("covars_", COVARS["spherical"] * [1, 0, 1], "gaussian", "spherical"),
    _bad("covars_", np.array([[[1, 2], [2, 1]]] * 3), "gaussian", "full"),          # not PD
    _bad("covars_", np.array([[[1, 0.5], [0.2, 1]]] * 3), "gaussian", "full"),      # asym.
    _bad("covars_", np.array([[1, np.inf], [np.inf, 1]]), "gaussian", "tied"),
    _bad("covars_", np.eye(3), "gaussian", "tied"),                                  # D
]


@pytest.mark.parametrize("attr, value, emission, ct", BAD)
def test_invalid_hand_set_parameters_raise_in_every_method(attr, value, emission, ct):
    m = hand_set(emission, ct)
    setattr(m, attr, value)
    X = data(emission, 6)
    for method in METHODS:
        with pytest.raises(InvalidInputError, match=attr.lstrip("_")):
            call(m, method, X, [2, 4])
    for method in ("sample", "n_parameters"):
        with pytest.raises(InvalidInputError, match=attr.lstrip("_")):
            getattr(m, method)()


def test_k2000_with_a_startprob_of_one_entry_raises_instead_of_crashing():
    K = 2000
    m = hs.HMM(K)
    m.startprob_ = np.ones(1)
    m.transmat_ = np.full((K, K), 1.0 / K)
    m.emissionprob_ = np.full((K, 3), 1.0 / 3)
    with pytest.raises(InvalidInputError, match=r"startprob_: expected shape \(2000,\)"):
        m.decode(np.array([0, 1, 2]))
    m.transmat_ = np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]])
    m2 = hs.HMM(2)
    m2.startprob_, m2.transmat_ = [0.5, 0.5], [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]]
    m2.emissionprob_ = [[0.5, 0.5], [0.5, 0.5]]
    m2.n_features_ = 2
    with pytest.raises(InvalidInputError, match=r"transmat_: expected shape \(2, 2\)"):
        m2.decode(np.array([0, 1, 1]))


def test_parameters_are_read_only_and_reassignment_is_revalidated():
    m = hand_set()
    X = data("categorical", 10)
    good = m.score(X)
    with pytest.raises(ValueError, match="read-only"):
        m.transmat_[0, 0] = 5.0
    with pytest.raises(ValueError, match="read-only"):
        m.emissionprob_ /= 2
    assert m.score(X) == good  # nothing changed
    A2 = m.transmat_.copy()
    A2[0] = [0.2, 0.2, 0.2]
    m.transmat_ = A2
    with pytest.raises(InvalidInputError, match="transmat_: row 0 sums to 0.6"):
        m.score(X)
    A2[0] = [0.2, 0.4, 0.4]
    with pytest.raises(InvalidInputError):  # A2 was copied on assignment: edits are not seen
        m.score(X)
    m.transmat_ = A2
    assert np.isfinite(m.score(X)) and m.score(X) != good
    g = hand_set("gaussian", "diag")
    with pytest.raises(ValueError, match="read-only"):
        g.covars_[0, 0, 0] = 3.0  # the (K, D, D) view of diagonal covariances too
    # a hyper-parameter that shapes the parameters is part of what was validated
    m.set_params(n_states=4)
    with pytest.raises(InvalidInputError, match=r"startprob_: expected shape \(4,\)"):
        m.score(X)
    m.set_params(n_states=3, n_features=5)
    with pytest.raises(InvalidInputError, match=r"emissionprob_: expected shape \(3, 5\)"):
        m.score(X)


def test_validation_runs_once_per_change(monkeypatch):
    calls = []
    original = HMM._check_learned
    monkeypatch.setattr(HMM, "_check_learned", lambda self: (calls.append(1), original(self)))
    m = hand_set()
    X = data("categorical", 20)
    for method in ("score", "score", "predict_proba", "decode", "filter_proba", "score"):
        getattr(m, method)(X)
    m.sample(5, random_state=0)
    assert len(calls) == 1
    m.startprob_ = PI[::-1]
    m.score(X)
    m.score(X)
    assert len(calls) == 2
    m.n_features_ = 4
    m.score(X)
    assert len(calls) == 3


def test_unset_parameters_name_what_is_missing():
    m = hs.HMM(2)
    with pytest.raises(NotFittedError, match="startprob_, transmat_, emissionprob_"):
        m.score([0, 1])
    m.startprob_, m.transmat_ = [0.5, 0.5], np.eye(2)
    with pytest.raises(NotFittedError, match="emissionprob_: not set"):
        m.score([0, 1])
    g = hs.HMM(2, emission="gaussian")
    g.startprob_, g.transmat_, g.means_ = [0.5, 0.5], np.eye(2), np.zeros((2, 1))
    with pytest.raises(NotFittedError, match="covars_: not set"):
        g.decode(np.zeros((3, 1)))


@pytest.mark.parametrize("value, match", [
    ("abc", "expected numbers, got a str"), (np.eye(3) + 0j, "complex"),
    ([[0.5, 0.5], [1.0]], "cannot be read"), (np.array([["a", "b"]]), "dtype <U1"),
    (np.eye(3, dtype=object) * "x", "expected numbers")])
def test_non_numeric_parameters_are_refused_on_assignment(value, match):
    m = hs.HMM(3)
    with pytest.raises(InvalidInputError, match=match):
        m.transmat_ = value


def test_props_perturbation_parameters_are_validated():
    src = CallableSource(lambda h: np.full(3, 1 / 3), 3)
    m = hs.PROPS([src], n_perturbation_states=2)
    m.startprob_, m.transmat_ = np.full(3, 1 / 3), np.full((3, 3), 1 / 3)
    m.emissionprob_ = np.array([[1.0, 0, 0], [0.2, 0.3, 0.5]])
    y = np.array([0, 1, 2, 1])
    assert m.n_features_ == 3 and np.isfinite(m.score(y))
    m.emissionprob_ = np.full((3, 3), 1 / 3)  # one row per state: PROPS has 2 learned ones
    for method in ("score", "token_scores", "membership_log_odds", "decode"):
        with pytest.raises(InvalidInputError, match=r"emissionprob_: expected shape \(2, 3\)"):
            getattr(m, method)(y)
    m.emissionprob_ = np.array([[1.0, 0, 0], [0.2, 0.3, 0.5]])
    m.n_perturbation_states = 1  # K changes: every parameter is checked again
    with pytest.raises(InvalidInputError, match=r"startprob_: expected shape \(2,\)"):
        m.score(y)


# -- impossible data ------------------------------------------------------------------------------
def impossible_model():
    m = hs.HMM(2)
    m.startprob_, m.transmat_ = [0.5, 0.5], np.eye(2)
    m.emissionprob_ = [[1.0, 0.0], [1.0, 0.0]]
    return m


@pytest.mark.parametrize("method", ["predict_proba", "decode", "predict", "filter_proba",
                                    "sample_posterior"])
def test_impossible_sequences_raise_naming_the_sequence(method):
    m = impossible_model()
    X, lengths = np.array([0, 0, 0, 1, 1, 0]), [3, 3]
    with pytest.raises(ZeroProbabilityError, match="sequence 1 has probability zero"):
        call(m, method, X, lengths)
    if method == "decode":
        with pytest.raises(ZeroProbabilityError, match="sequence 1"):
            m.decode(X, lengths, algorithm="map")


def test_impossible_sequences_score_minus_inf_never_nan():
    m = impossible_model()
    X, lengths = np.array([0, 0, 0, 1, 1, 0]), [3, 3]
    np.testing.assert_array_equal(m.score_samples(X, lengths), [0.0, -np.inf])
    assert m.score(X, lengths) == -np.inf
    tokens = m.score_tokens(X, lengths)
    np.testing.assert_array_equal(tokens, [0, 0, 0, -np.inf, -np.inf, -np.inf])
    p = hs.HMM(2, emission="poisson")
    p.startprob_, p.transmat_, p.lambdas_ = [1.0, 0.0], np.eye(2), [[0.0], [3.0]]
    assert p.score(np.array([[0], [1]])) == -np.inf
    with pytest.raises(ZeroProbabilityError, match="sequence 0"):
        p.predict_proba(np.array([[0], [1]]))


def test_props_impossible_sequences_raise():
    src = CallableSource(lambda h: np.array([0.5, 0.5, 0.0]), 3)
    m = hs.PROPS([src], n_perturbation_states=1)
    m.startprob_, m.transmat_ = [0.5, 0.5], np.eye(2)
    m.emissionprob_ = [[1.0, 0.0, 0.0]]
    y = np.array([0, 2])  # symbol 2: impossible in both states
    assert m.score(y) == -np.inf
    for method in ("token_scores", "membership_log_odds", "predict_proba", "decode"):
        with pytest.raises(ZeroProbabilityError, match="sequence 0"):
            getattr(m, method)(y)


def test_compat_impossible_decode_raises():
    m = compat.CategoricalHMM(2)
    m.startprob_, m.transmat_ = np.array([0.5, 0.5]), np.eye(2)
    m.emissionprob_ = np.array([[1.0, 0.0], [1.0, 0.0]])
    assert m.score(np.array([[0], [1]])) == -np.inf
    with pytest.raises(ZeroProbabilityError):
        m.decode(np.array([[0], [1]]))


# -- memory ----------------------------------------------------------------------------------------
def test_memory_is_checked_before_allocating(monkeypatch):
    monkeypatch.setattr(_validation, "available_memory", lambda: 2**30)
    X = np.arange(200) % 5
    with pytest.raises(InsufficientMemoryError, match=r"n_states: .* needs about .* GiB .* "
                                                      r"only 1 GiB is available"):
        hs.HMM(n_states=10000).fit(X)
    with pytest.raises(InsufficientMemoryError, match="n_states: .*K\\*\\*3"):
        hs.HMM(n_states=600, learn="online-em").fit(X)
    m = hand_set("gaussian", "diag")
    long = np.zeros((20_000_000, 2))
    with pytest.raises(InsufficientMemoryError, match="X: .*split X and lengths"):
        m.predict_proba(long)
    with pytest.raises(InsufficientMemoryError, match="n_samples"):
        m.sample(10**12)
    with pytest.raises(InsufficientMemoryError, match="n_samples"):
        compat.CategoricalHMM(2, random_state=0).fit(np.array([[0], [1], [1]])).sample(10**12)
    with pytest.raises(InsufficientMemoryError, match="n_states"):
        compat.CategoricalHMM(10000).fit(X[:, None])
    from hiddenstate import drift

    with pytest.raises(InsufficientMemoryError, match="n: sampling 100000000 sequences"):
        drift.RandomWalkTeacher((PI, A, B), step=0.1).sample(10**8, 5)
    with pytest.raises(InsufficientMemoryError, match="T: sampling 10 sequences of length"):
        drift.sample_sequences((PI, A, B), 10, 10**9)
    assert isinstance(InsufficientMemoryError("x"), MemoryError)
    # what fits is not refused
    assert np.isfinite(m.score(data("gaussian", 1000)))
    assert np.isfinite(hs.HMM(50, n_iter=2, random_state=0).fit(X).score(X))


def test_no_memory_check_where_the_available_memory_is_unknown(monkeypatch):
    monkeypatch.setattr(_validation, "available_memory", lambda: None)
    _validation.check_memory({"n_states": 1e30}, "anything")  # no error
    monkeypatch.undo()
    available = _validation.available_memory()
    assert available is None or available > 0


@pytest.mark.parametrize("op, method", [("filter", "filter_proba"),
                                        ("viterbi", "decode"),
                                        ("forward_backward", "predict_proba")])
def test_memory_estimate_follows_numpy_allocations(op, method):
    """The Python-side (NumPy) allocations of a long Gaussian call, measured by tracemalloc,
    against the estimate (which also counts the kernels' own scratch, small here)."""
    m = hand_set("gaussian", "diag")
    X = data("gaussian", 200_000)
    lengths = [100_000, 50_000, 50_000]
    call(m, method, X[:100], [50, 50])  # compile, validate
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    call(m, method, X, lengths)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    seqs = Sequences.from_lengths(np.array(lengths))
    parts = inference.memory_estimate("forward_backward" if op == "forward_backward" else op,
                                      3, seqs, len(X), False)
    # + the (N, K) emission table and its row offsets, + the validated copy of X
    estimate = sum(parts.values()) + 3 * len(X) * 8 + len(X) * 8 + X.size * 8
    assert 0.75 * estimate <= peak <= 1.25 * estimate, (peak, estimate)


# -- priors, options and other arguments -----------------------------------------------------------
@pytest.mark.parametrize("kw, match", [
    ({"learn": "map", "transmat_prior": np.ones(3)}, r"transmat_prior: has shape \(3,\).*\(2, 2\)"),
    ({"learn": "vb", "startprob_prior": np.ones((2, 2))}, r"startprob_prior: has shape"),
    ({"learn": "vt", "emissionprob_prior": np.ones(5)}, r"emissionprob_prior: .*\(2, 3\)"),
    ({"learn": "map", "transmat_prior": 0.5}, r"transmat_prior: learn='map' needs .* >= 1"),
    ({"learn": "kvt", "startprob_prior": [1.0, 0.9]}, r"startprob_prior: learn='kvt'"),
    ({"learn": "vb", "transmat_prior": 0.0}, r"transmat_prior: learn='vb' needs .* > 0"),
    ({"learn": "map", "transmat_prior": np.nan}, r"transmat_prior: must be finite"),
    ({"learn": "map", "transmat_prior": "a"}, r"transmat_prior: expected a number"),
    ({"learn": "online-em", "transmat_prior": 2.0}, r"transmat_prior: .*learner_options"),
    ({"learn": "online-em", "learner_options": {"step_exponant": 0.7}},
     r"learner_options: 'step_exponant' is not an option .*step_exponent"),
    ({"random_state": -1}, r"random_state: a seed must be an integer >= 0"),
    ({"random_state": 2.5}, r"random_state: expected None, an int"),
    ({"tol": "a"}, r"tol: expected a number"),
    ({"tol": np.nan}, r"tol: expected a number"),
    ({"learn": np.array(["em"])}, r"learn: array"),
    ({"verbose": np.ones(2)}, r"verbose"),
])
def test_categorical_argument_errors_name_the_argument(kw, match):
    X = np.array([0, 1, 2, 1, 0, 2, 2, 1])
    with pytest.raises(InvalidInputError, match=match):
        hs.HMM(2, n_iter=2, **kw).fit(X)


@pytest.mark.parametrize("emission, ct, kw, match", [
    ("gaussian", "diag", {"learn": "map", "covars_prior": -1.0}, "covars_prior: must be non-neg"),
    ("gaussian", "full", {"learn": "map", "covars_prior": [[1.0, 2.0], [2.0, 1.0]]},
     "covars_prior: must be symmetric positive semi-definite"),
    ("gaussian", "tied", {"learn": "map", "covars_prior": np.ones((2, 2, 2))},
     r"covars_prior: has shape \(2, 2, 2\).*\(2, 2\)"),
    ("gaussian", "diag", {"learn": "map", "means_prior": np.ones(3)}, r"means_prior: .*\(2, 2\)"),
    ("gaussian", "diag", {"learn": "map", "means_weight": [1.0, 2.0]},
     "means_weight: learn='map' takes a single number"),
    ("gaussian", "diag", {"learn": "vt", "means_weight": -1.0}, "means_weight: expected .*>= 0"),
    ("gaussian", "diag", {"min_covar": -1.0}, "min_covar: expected a finite number >= 0"),
    ("gaussian", "diag", {"min_covar": "a"}, "min_covar: expected a finite number"),
    ("gaussian", "diag", {"covariance_type": ["diag"]}, "covariance_type"),
    ("poisson", "diag", {"learn": "map", "lambdas_prior": -0.5}, "lambdas_prior: .* >= 0"),
    ("poisson", "diag", {"learn": "map", "lambdas_weight": np.ones(3)},
     r"lambdas_weight: has shape \(3,\)"),
])
def test_dense_prior_errors_name_the_prior(emission, ct, kw, match):
    X = data(emission, 30)
    with pytest.raises(InvalidInputError, match=match):
        hs.HMM(2, **{"emission": emission, "covariance_type": ct, "n_iter": 2,
                     "random_state": 0, **kw}).fit(X)


def test_legal_priors_still_fit():
    X = data("categorical", 60)[:, 0]
    for learn, prior in (("map", 1.0), ("map", 2.5), ("vb", 0.5), ("vt", np.ones((2, 2)))):
        m = hs.HMM(2, learn=learn, transmat_prior=prior, n_iter=3, random_state=0).fit(X)
        assert np.isfinite(m.score(X))
    g = data("gaussian", 60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = hs.HMM(2, emission="gaussian", covariance_type="spherical", learn="map",
                   covars_prior=[0.1, 0.2], n_iter=3, random_state=0).fit(g)
    assert np.all(m._covars_ > 0)
    assert hs.HMM(2, tol=np.float32(1e-3), n_iter=2, random_state=np.int64(3)).fit(X)


@pytest.mark.parametrize("X, match", [
    (np.array([0, 2**63], dtype=np.uint64), "beyond the 64-bit range"),
    (np.array([0.0, 1e30]), "beyond the 64-bit range"),
    (np.array([0, 1 + 1j]), "complex values"),
    (np.array([True, False]), "boolean array"),
    (np.array(["a", "b"], dtype=object), "map tokens to integer ids"),
    (np.array([0, None], dtype=object), "got an object array holding NoneType"),
])
def test_symbol_errors(X, match):
    with pytest.raises(InvalidInputError, match=match):
        hs.HMM(2).fit(X)


def test_object_arrays_of_integers_are_symbols():
    X = np.array([0, 1, 2, 1, 0, 2], dtype=object)
    a = hs.HMM(2, n_iter=3, random_state=0).fit(X)
    b = hs.HMM(2, n_iter=3, random_state=0).fit(X.astype(np.int64))
    np.testing.assert_array_equal(a.emissionprob_, b.emissionprob_)


@pytest.mark.parametrize("X, match", [(np.array([[0.5, 1 + 2j]]), "complex values"),
                                      (np.ones((3, 2), dtype=bool), "boolean array")])
def test_real_data_errors(X, match):
    with pytest.raises(InvalidInputError, match=match):
        hs.HMM(2, emission="gaussian").fit(X)


@pytest.mark.parametrize("lengths, match", [
    ("33", "got a str"), ({3: 3}, "got a dict"), (6, "single value 6; pass a list"),
    ([[3, 3]], r"shape \(1, 2\)"), ([3.5, 2.5], "fractions"), ([True] * 6, "dtype bool"),
    (np.array([2**64 - 1, 7], dtype=np.uint64), "has length 18446744073709551615 but X has only 6"),
    ([1e30, 1.0], "but X has only 6"), ([3, None], "NoneType"),
    ([[1, 2], [3]], "expected a 1-D sequence of ints, got")])
def test_lengths_errors(lengths, match):
    with pytest.raises(InvalidInputError, match=match):
        hs.HMM(2).fit(np.arange(6) % 3, lengths)


@pytest.mark.parametrize("cls, kw, match", [
    (compat.CategoricalHMM, {"random_state": -1}, "random_state: expected None, an int in"),
    (compat.CategoricalHMM, {"algorithm": ["map"]}, "algorithm"),
    (compat.CategoricalHMM, {"n_features": 2.5}, "n_features: expected an integer"),
    (compat.CategoricalHMM, {"transmat_prior": np.ones(7)}, r"transmat_prior: has shape \(7,\)"),
    (compat.CategoricalHMM, {"startprob_prior": "a"}, "startprob_prior: expected a number"),
    (compat.GaussianHMM, {"min_covar": -1}, "min_covar"),
    (compat.GaussianHMM, {"covars_weight": [1, 2]}, r"covars_weight: has shape \(2,\)"),
    (compat.GaussianHMM, {"covariance_type": np.ones(2)}, "covariance_type"),
    (compat.PoissonHMM, {"lambdas_weight": np.ones(3)}, r"lambdas_weight: has shape \(3,\)"),
])
def test_compat_constructor_errors(cls, kw, match):
    X = {compat.CategoricalHMM: np.array([[0], [1], [1], [0]]),
         compat.GaussianHMM: data("gaussian", 20),
         compat.PoissonHMM: data("poisson", 20)}[cls]
    with pytest.raises(InvalidInputError, match=match):
        cls(2, **kw).fit(X)
    assert issubclass(InvalidInputError, ValueError)  # hmmlearn raises ValueError here


def test_compat_parameters_stay_writable_and_are_checked_per_call():
    m = compat.CategoricalHMM(2)
    m.startprob_, m.transmat_ = np.array([0.5, 0.5]), np.eye(2)
    m.emissionprob_ = np.array([[0.9, 0.1], [0.2, 0.8]])
    X = np.array([[0], [1], [1]])
    assert np.isfinite(m.score(X))
    m.transmat_[0, 0] = 5.0  # hmmlearn's arrays are plain arrays
    with pytest.raises(InvalidInputError, match="transmat_: row 0"):
        m.score(X)


def test_metrics_refuse_non_models():
    with pytest.raises(InvalidInputError, match="model: expected a fitted model"):
        metrics.perplexity("a", np.array([0, 1]))
    with pytest.raises(InvalidInputError, match="mapping: array"):
        metrics.tagging_accuracy([0, 1], [1, 0], np.array(["a", "b"]))
    with pytest.raises(InvalidInputError, match="mapping: 'identity' is not one of"):
        metrics.relabel([0, 1], [1, 0], "identity")
    rng_model = hand_set()
    assert metrics.perplexity(rng_model, data("categorical", 20)) > 1.0


def test_poisson_rates_too_large_to_sample():
    p = hand_set("poisson")
    p.lambdas_ = LAMBDAS * 1e300
    with pytest.raises(InvalidInputError, match="lambdas_: a rate of .* too large"):
        p.sample(3)


@pytest.mark.parametrize("kw, match", [({"emission": ["categorical"]}, "emission: "),
                                       ({"learn": np.array(["em", "map"])}, "learn: "),
                                       ({"n_features": np.ones(3)}, "n_features: ")])
def test_props_hyper_parameter_errors(kw, match):
    src = CallableSource(lambda h: np.full(3, 1 / 3), 3)
    with pytest.raises(InvalidInputError, match=match):
        hs.PROPS([src], n_perturbation_states=1, **kw).fit(np.array([0, 1, 2]))


def test_hand_set_model_saves_and_loads_and_unfitted_save_writes_nothing(tmp_path):
    m = HMM(3, emission="gaussian", covariance_type="full")
    m.startprob_, m.transmat_ = PI, A
    m.means_, m.covars_ = MEANS, COVARS["full"]
    X = RNG.normal(size=(20, 2))
    m.save(tmp_path / "hand")
    back = hs.load(tmp_path / "hand")
    assert back.score(X) == m.score(X)
    assert back.monitor_.history == [] and not back.monitor_.converged
    with pytest.raises(NotFittedError):
        HMM(3).save(tmp_path / "empty")
    bad = HMM(3, emission="categorical")
    bad.startprob_, bad.transmat_, bad.emissionprob_ = PI, A * 1.4, B
    with pytest.raises(InvalidInputError, match="transmat_"):
        bad.save(tmp_path / "bad")
    assert not (tmp_path / "empty").exists() and not (tmp_path / "bad").exists()

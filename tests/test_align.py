"""Aligning states (hiddenstate.align.align_states) and renumbering them
(HMM.permute_states): a permuted model of every family scores the same and decodes to the
permuted states, VB posteriors move with the parameters, the Hungarian assignment is the
best of all K! permutations, and a shuffled fit is put back in the teacher's order."""

import itertools

import numpy as np
import pytest

import hiddenstate as hs
from hiddenstate.errors import InvalidInputError

PERM = np.array([2, 0, 1])


def _fit(emission, seed=0, **kw):
    rng = np.random.default_rng(seed)
    n = 240
    z = np.repeat(rng.integers(0, 3, n // 20), 20)
    if emission == "categorical":
        X = (z + rng.integers(0, 2, n)) % 4
        if kw.get("n_features") is not None and isinstance(kw["n_features"], tuple):
            X = np.column_stack([X, (2 * z + rng.integers(0, 2, n)) % 5])
    elif emission in ("gaussian", "gmm"):
        X = rng.normal(size=(n, 2)) + 3.0 * z[:, None]
    elif emission == "poisson":
        X = rng.poisson(2.0 + 4.0 * z[:, None], size=(n, 2)).astype(float)
    elif emission == "multinomial":
        X = np.array([rng.multinomial(6, np.roll([0.6, 0.3, 0.1], k)) for k in z], float)
    else:  # mixed
        X = np.column_stack([rng.normal(size=n) + 3 * z, (z + rng.integers(0, 2, n)) % 4,
                             rng.poisson(1.0 + 3 * z)]).astype(float)
    return hs.HMM(3, emission=emission, n_iter=15, random_state=0, **kw).fit(X, [120, 120]), X


CASES = [("categorical", {}), ("categorical", {"n_features": (4, 5)}),
         ("gaussian", {"covariance_type": "full"}), ("gaussian", {"covariance_type": "tied"}),
         ("gaussian", {"covariance_type": "spherical"}), ("poisson", {}),
         ("gmm", {"n_mix": 2}), ("gmm", {"n_mix": 2, "covariance_type": "tied"}),
         ("multinomial", {}), ("gaussian", {"learn": "vb"}), ("categorical", {"learn": "vb"}),
         ({"gaussian": [0], "categorical": [1], "poisson": [2]}, {}),
         ({"gaussian": [0], "categorical": [1], "poisson": [2]}, {"learn": "vb"})]


@pytest.mark.parametrize("emission, kw", CASES, ids=lambda v: str(v)[:40])
def test_a_permuted_model_scores_the_same_and_decodes_to_the_permuted_states(emission, kw):
    model, X = _fit(emission, **kw)
    before = {a: np.array(v) for a, v in model.learned_arrays().items()}
    score, post, path = model.score_samples(X, [120, 120]), model.predict_proba(X, [120, 120]), \
        model.predict(X, [120, 120])
    model.permute_states(PERM)
    np.testing.assert_allclose(model.score_samples(X, [120, 120]), score, rtol=1e-12)
    np.testing.assert_allclose(model.predict_proba(X, [120, 120]), post[:, PERM], atol=1e-12)
    inverse = np.argsort(PERM)
    np.testing.assert_array_equal(model.predict(X, [120, 120]), inverse[path])
    np.testing.assert_array_equal(model.startprob_, before["startprob_"][PERM])
    np.testing.assert_array_equal(model.transmat_, before["transmat_"][np.ix_(PERM, PERM)])
    if "transmat_posterior_" in before:
        np.testing.assert_array_equal(model.transmat_posterior_,
                                      before["transmat_posterior_"][np.ix_(PERM, PERM)])
    model.permute_states(inverse)              # and back: every array as it was, bit for bit
    after = model.learned_arrays()
    assert after.keys() == before.keys()
    for a, v in before.items():
        np.testing.assert_array_equal(after[a], v, err_msg=a)


def test_hungarian_assignment_is_the_best_permutation():
    rng = np.random.default_rng(1)
    teacher = hs.HMM(4, n_features=5)
    teacher.startprob_ = np.full(4, 0.25)
    teacher.transmat_ = 0.7 * np.eye(4) + 0.075
    teacher.emissionprob_ = rng.dirichlet(np.ones(5) * 0.5, size=4)
    X, states = teacher.sample(400, random_state=2)
    model = hs.HMM(4, n_iter=30, random_state=5).fit(X)
    post = model.predict_proba(X)
    agreement = post.T @ np.eye(4)[states]
    best = max(itertools.permutations(range(4)),
               key=lambda p: sum(agreement[p[j], j] for j in range(4)))
    perm = hs.align_states(model, labels=states, X=X)
    assert sum(agreement[perm[j], j] for j in range(4)) == pytest.approx(
        sum(agreement[best[j], j] for j in range(4)), rel=1e-12)


@pytest.mark.parametrize("with_data", [True, False])
def test_a_shuffled_fit_is_put_back_in_the_teachers_order(with_data):
    teacher = hs.HMM(3, emission="gaussian", covariance_type="diag")
    teacher.startprob_ = np.full(3, 1 / 3)
    teacher.transmat_ = 0.9 * np.eye(3) + 0.1 / 3
    teacher.means_ = [[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]]
    teacher.covars_ = np.ones((3, 2))
    X, states = teacher.sample(1500, random_state=3)
    model = hs.HMM(3, emission="gaussian", n_iter=50, random_state=0).fit(X)
    model.permute_states(np.random.default_rng(4).permutation(3))
    perm = hs.align_states(model, teacher, X=X if with_data else None)
    model.permute_states(perm)
    np.testing.assert_allclose(model.means_, teacher.means_, atol=0.15)
    assert np.mean(model.predict(X) == states) > 0.99


def test_permutations_that_break_the_model_are_refused():
    model, X = _fit("categorical")
    for perm in ([0, 1], [0, 0, 1], [0.0, 1.0, 2.0]):
        with pytest.raises(InvalidInputError, match="perm"):
            model.permute_states(perm)
    banded = hs.HMM(3, topology="left-right", n_iter=3, random_state=0).fit(X)
    with pytest.raises(InvalidInputError, match="topology"):
        banded.permute_states([2, 1, 0])
    fixed = hs.HMM(3, n_iter=3, random_state=0,
                   fixed={"startprob": [0.5, np.nan, np.nan]}).fit(X)
    with pytest.raises(InvalidInputError, match="fixed"):
        fixed.permute_states(PERM)
    with pytest.raises(InvalidInputError, match="not both"):
        hs.align_states(model)
    with pytest.raises(InvalidInputError, match="states"):
        hs.align_states(model, hs.HMM(2, n_iter=2, random_state=0).fit(X))
    with pytest.raises(InvalidInputError, match="pass X"):
        hs.align_states(model, labels=[0, 1, 2])


def test_props_permutes_its_perturbation_states_only():
    from hiddenstate.sources import KneserNeySource

    X = np.random.default_rng(4).integers(0, 3, (40, 1))
    src = KneserNeySource(order=2).fit(X[:, 0], n_symbols=3)
    model = hs.PROPS(sources=[src], n_perturbation_states=2, random_state=0,
                     n_iter=5).fit(X, [20, 20])
    score, post = model.score_samples(X, [20, 20]), model.predict_proba(X, [20, 20])
    B = model.emissionprob_.copy()                 # the perturbation states' rows
    model.permute_states([0, 2, 1])
    np.testing.assert_allclose(model.score_samples(X, [20, 20]), score, rtol=1e-12)
    np.testing.assert_allclose(model.predict_proba(X, [20, 20]), post[:, [0, 2, 1]],
                               atol=1e-12)
    np.testing.assert_array_equal(model.emissionprob_, B[[1, 0]])
    with pytest.raises(InvalidInputError, match="source states"):
        model.permute_states([1, 0, 2])

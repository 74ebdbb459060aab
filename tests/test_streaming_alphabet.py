"""A categorical stream whose alphabet was inferred grows it when new symbols arrive (issue
27, item 9): every streaming learner, checked against the rule each one follows for a new
symbol, against a stream that had the larger alphabet from the start (online EM: the same
numbers up to the prior's share), across a save/load, and with the window of the lazy
scheme changing size on the way."""

from __future__ import annotations

import numpy as np
import pytest

import hiddenstate as hs
from hiddenstate.errors import InvalidInputError
from hiddenstate.families import CategoricalEmissions
from hiddenstate.learn.online import make_learner
from hiddenstate.learn.online.base import grown_rows
from hiddenstate.learn.online.online_em import _default_window

LEARNERS = ("online-em", "bwo", "baldi-chauvin", "bona", "mpa")


@pytest.mark.parametrize("learn", LEARNERS)
def test_the_issue_example_goes_on_with_a_new_symbol(learn):
    m = hs.HMM(2, learn=learn, random_state=0)
    m.partial_fit([[0], [1], [0]])
    m.partial_fit([[2]])  # stopped the stream before: "refit with n_features"
    assert m.n_features_ == 3 and m.emissionprob_.shape == (2, 3)
    np.testing.assert_allclose(m.emissionprob_.sum(axis=1), 1.0)
    assert np.isfinite(m.score([[0], [1], [2]]))


def _state_and_params(learn: str, W: int, rng):
    family = CategoricalEmissions(n_states=2, n_features=W)
    theta = {"startprob": np.array([0.6, 0.4]), "transmat": np.array([[0.7, 0.3],
                                                                     [0.2, 0.8]]),
             "emission": {"emissionprob": rng.dirichlet(np.ones(W), size=2)}}
    learner = make_learner(learn, {})
    state = learner.start(theta, family, rng)
    X = rng.integers(0, W, size=(60, 1))
    state = learner.update(state, X, np.full(10, 6), family)
    return learner, state, learner.params(state, family)


@pytest.mark.parametrize("learn", ("bwo", "baldi-chauvin"))
def test_probability_learners_give_a_new_symbol_a_flat_share(learn):
    """grown_rows: 1/W' to each new symbol, W/W' of the old row: as a flat row would."""
    learner, state, before = _state_and_params(learn, 4, np.random.default_rng(1))
    grown = learner.grow(state, 6)
    after = learner.params(grown, CategoricalEmissions(n_states=2, n_features=6))
    np.testing.assert_allclose(after["emission"]["emissionprob"],
                               grown_rows(before["emission"]["emissionprob"], 6),
                               rtol=1e-12)
    np.testing.assert_array_equal(after["transmat"], before["transmat"])


@pytest.mark.parametrize("learn", ("bona", "mpa"))
def test_dirichlet_learners_give_a_new_symbol_the_prior_pseudo_count(learn):
    learner, state, _ = _state_and_params(learn, 4, np.random.default_rng(2))
    grown = learner.grow(state, 6)
    prior, u = grown["prior_emissionprob"], grown["u_emissionprob"]
    np.testing.assert_array_equal(u[:, :4], state["u_emissionprob"])
    np.testing.assert_array_equal(prior[:, 4:], np.repeat(
        state["prior_emissionprob"].mean(axis=1, keepdims=True), 2, axis=1))
    np.testing.assert_array_equal(u[:, 4:], prior[:, 4:])  # no data for them


def _online_em_streams(W: int, W_new: int, T: int, seed: int, averaging: bool = False):
    """(grown, from the start): the same first chunk over W symbols and a second that
    brings symbols up to W_new - 1; the second stream has W_new symbols from the start,
    its initial emission rows the first's grown ones."""
    rng = np.random.default_rng(seed)
    first = rng.integers(0, W, size=(T, 1))
    second = rng.integers(0, W_new, size=(T, 1))
    second[T // 2, 0] = W_new - 1  # the largest symbol is there
    B0 = rng.dirichlet(np.ones(W), size=2)
    options = {"emissionprob_prior": 1 + 1e-12, "warmup": 10, "averaging": averaging}

    def model(n_features, rows):
        m = hs.HMM(2, n_features=n_features, learn="online-em", init_params="",
                   learner_options=options)
        m.startprob_, m.transmat_ = np.array([0.5, 0.5]), np.array([[0.9, 0.1], [0.2, 0.8]])
        m.emissionprob_ = rows
        return m

    grown = model(None, B0).partial_fit(first).partial_fit(second)
    whole = model(W_new, grown_rows(B0, W_new)).partial_fit(first).partial_fit(second)
    return grown, whole, first, second


@pytest.mark.parametrize("averaging", [False, True])
def test_online_em_grown_equals_the_larger_alphabet_from_the_start(averaging):
    """A symbol never seen has statistics exactly zero whatever the alphabet, so past the
    warm-up the grown stream is the stream over the larger alphabet (the filter, every
    statistic and the parameters), up to the prior's pseudo-count (1e-12 here)."""
    grown, whole, _, second = _online_em_streams(5, 8, 400, seed=3, averaging=averaging)
    assert grown.n_features_ == whole.n_features_ == 8
    np.testing.assert_allclose(grown.emissionprob_, whole.emissionprob_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(grown.transmat_, whole.transmat_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(grown.stream_log_prob_, whole.stream_log_prob_, rtol=0,
                               atol=1e-9)


def test_the_lazy_window_changes_length_and_the_state_survives_a_save(tmp_path):
    """1,000 -> 1,100 symbols: the default window of the lazy scheme goes from 1,024 to
    2,048 steps (a flush, then an empty window); the numbers still match the stream that
    had 1,100 symbols from the start, and a saved grown stream continues bit for bit."""
    assert _default_window(2, 1000) == 1024 and _default_window(2, 1100) == 2048
    grown, whole, _, _ = _online_em_streams(1000, 1100, 1500, seed=4)
    assert len(grown.learner_state_["tree_P"]) == 2 * 2048
    np.testing.assert_allclose(grown.emissionprob_, whole.emissionprob_, rtol=0, atol=1e-9)
    more = np.random.default_rng(5).integers(0, 1100, size=(300, 1))
    grown.save(tmp_path / "m")
    back = hs.load(tmp_path / "m")
    np.testing.assert_array_equal(back.partial_fit(more).emissionprob_,
                                  grown.partial_fit(more).emissionprob_)


def test_a_declared_alphabet_is_refused_with_the_fix_not_refit():
    m = hs.HMM(2, n_features=2, learn="online-em", random_state=0).partial_fit([[0], [1]])
    with pytest.raises(InvalidInputError) as err:
        m.partial_fit([[2]])
    message = str(err.value)
    assert message.startswith("X: symbol 2 is beyond the alphabet of n_features=2")
    assert "n_features=None to let the alphabet grow" in message and "refit" not in message


def test_a_failed_call_leaves_the_alphabet_as_it_was():
    m = hs.HMM(2, learn="online-em", random_state=0).partial_fit([[0], [1], [0]])
    state = {k: (v.copy() if isinstance(v, np.ndarray) else v)
             for k, v in m.learner_state_.items()}
    with pytest.raises(InvalidInputError, match="states"):
        m.partial_fit([[3], [1]], states=[5, 0])  # grown first, then refused: undone
    assert m.n_features_ == 2 and m.learner_state_["E"].shape[0] == 2
    for key, value in state.items():
        assert np.array_equal(m.learner_state_[key], value), key

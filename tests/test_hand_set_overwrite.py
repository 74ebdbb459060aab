"""Parameters set by hand are not thrown away in silence (issue 27, item 3; issue 30, item 5).

When a model's initialisation (``init_params`` of HMM and PROPS, ``init`` of the grammars,
``warm_start`` of TreeNet, every fit of NaiveBayesHidden) is about to replace a learned
attribute the user assigned since the last ``fit`` or load, ``fit`` issues a
``ParameterOverwriteWarning`` naming it and the argument that keeps it, as hmmlearn does.
Values left by a ``fit`` or a load are the model's own: refitting them is silent. With the
argument that keeps them, the fit starts from the values set (checked on the numbers)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import hiddenstate as hs
from hiddenstate.errors import ParameterOverwriteWarning
from hiddenstate.sources import CallableSource

RNG = np.random.default_rng(0)
XG = np.concatenate([RNG.normal(0, 1, 150), RNG.normal(4, 1, 150)])[:, None]
XC = RNG.integers(0, 3, size=(200, 1))
FLAT = np.array([[0.5, 0.5], [0.5, 0.5]])
RULES = {"S": [("NP", "VP")], "NP": [("she",), ("fish",)], "VP": [("V", "NP"), ("eats",)],
         "V": [("eats",)]}
SENTENCES = [["she", "eats", "fish"], ["fish", "eats"], ["she", "eats"]]
NBH_X = [["sun", "hot"], ["sun", "mild"], ["rain", "mild"], ["rain", "cool"],
         ["sun", "hot"], ["rain", "cool"], ["sun", "mild"], ["rain", "mild"]]
NBH_Y = ["play", "play", "stay", "stay", "play", "stay", "play", "stay"]


def _warnings(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught if w.category is ParameterOverwriteWarning]


def test_hmm_warns_naming_the_attribute_and_the_init_params_that_keeps_it():
    """The issue's example (issue 30's too: params="mc", transmat_ set by hand)."""
    m = hs.HMM(2, emission="gaussian", params="mc", random_state=0)
    m.transmat_ = FLAT
    (message,) = _warnings(lambda: m.fit(XG))
    assert message == ("init_params: fit replaces transmat_ set by hand; init_params="
                       "'stemclw' initialises 't': pass init_params='semclw' to start from "
                       "the values you set (or delete them to silence this)")
    assert not np.array_equal(m.transmat_, FLAT)  # replaced, as the warning said
    assert _warnings(lambda: m.fit(XG)) == []     # the fit's own values: silent
    # the suggested init_params keeps the values; params="mc" does not learn them
    kept = hs.HMM(2, emission="gaussian", params="mc", init_params="semclw", random_state=0)
    kept.transmat_ = FLAT
    assert _warnings(lambda: kept.fit(XG)) == []
    assert np.array_equal(kept.transmat_, FLAT)


def test_hmm_names_every_replaced_attribute_by_its_public_name():
    m = hs.HMM(2, emission="gaussian", covariance_type="diag", random_state=0).fit(XG)
    m.startprob_ = np.array([0.9, 0.1])
    m.covars_ = np.ones((2, 1))
    (message,) = _warnings(lambda: m.fit(XG))
    assert message.startswith("init_params: fit replaces startprob_, covars_ set by hand; ")
    assert "initialises 'sc': pass init_params='temlw'" in message


def test_a_loaded_model_refits_without_a_warning_and_a_restart_warns_once(tmp_path):
    m = hs.HMM(2, n_features=3, random_state=0).fit(XC)
    m.save(tmp_path / "m")
    back = hs.load(tmp_path / "m")
    assert _warnings(lambda: back.fit(XC)) == []
    back.emissionprob_ = np.full((2, 3), 1 / 3)
    assert len(_warnings(lambda: back.set_params(n_init=3).fit(XC))) == 1


def test_streaming_learners_warn_when_the_stream_starts():
    m = hs.HMM(2, n_features=3, learn="online-em", random_state=0)
    m.emissionprob_ = np.array([[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]])
    assert len(_warnings(lambda: m.partial_fit(XC[:50]))) == 1
    assert _warnings(lambda: m.partial_fit(XC[50:])) == []  # the stream goes on


def test_props_warns_for_its_perturbation_states():
    src = CallableSource(lambda history: np.full(3, 1 / 3), 3)
    m = hs.PROPS([src], n_perturbation_states=1, learn="em", n_iter=3, random_state=0)
    m.transmat_ = FLAT
    (message,) = _warnings(lambda: m.fit(XC))
    assert message.startswith("init_params: fit replaces transmat_ set by hand")


@pytest.mark.parametrize("cls", [hs.PCFG, hs.PLCG])
def test_grammars_warn_unless_init_is_current(cls):
    m = cls(RULES, random_state=0).fit(SENTENCES)
    assert _warnings(lambda: m.fit(SENTENCES)) == []
    theta = m.theta_.copy()
    m.theta_ = np.where(theta > 0, theta + 0.0, 0.0)  # the same values, a new array: silent
    assert _warnings(lambda: m.fit(SENTENCES)) == []
    hand = cls(RULES, random_state=0)
    hand.theta_ = theta  # another model's values: set by hand for this one
    (message,) = _warnings(lambda: hand.fit(SENTENCES))
    assert message == ("init: fit replaces theta_ set by hand; init='random' starts from "
                       "random rule probabilities: pass init='current' to start from the "
                       "values you set")
    current = cls(RULES, init="current", n_iter=1, learn="vt", random_state=0)
    current.theta_ = m.theta_
    assert _warnings(lambda: current.fit(SENTENCES)) == []


def test_treenet_warns_unless_warm_start():
    def make(**kw):
        return hs.TreeNet(n_states={"Z": 2}, edges=[("Z", "A"), ("Z", "B")],
                          observed={"A": 3, "B": 3}, n_iter=5, random_state=0, **kw)

    teacher = make()
    teacher.priors_ = {"Z": np.array([0.6, 0.4])}
    teacher.weights_ = {"Z->A": np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]),
                        "Z->B": np.array([[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]])}
    X, _ = teacher.sample(100, random_state=1)
    (message,) = _warnings(lambda: teacher.fit(X))
    assert message.startswith("warm_start: fit replaces weights_, priors_ set by hand; ")
    assert _warnings(lambda: teacher.fit(X)) == []
    warm = make(warm_start=True, learn="vt")
    warm.priors_, warm.weights_ = dict(teacher.priors_), dict(teacher.weights_)
    assert _warnings(lambda: warm.fit(X)) == []


def test_naive_bayes_hidden_warns_that_it_cannot_start_from_them():
    m = hs.NaiveBayesHidden(n_clusters=2, random_state=0).fit(NBH_X, NBH_Y)
    assert _warnings(lambda: m.fit(NBH_X, NBH_Y)) == []
    m.class_prior_ = np.array([0.3, 0.7])
    (message,) = _warnings(lambda: m.fit(NBH_X, NBH_Y))
    assert message.startswith("fit replaces class_prior_ set by hand; NaiveBayesHidden "
                              "learns from random clusters")

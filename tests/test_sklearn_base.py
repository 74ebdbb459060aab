"""hiddenstate's estimator base (``hiddenstate._sklearn_base``) against scikit-learn's.

The estimators no longer inherit from ``sklearn.base.BaseEstimator`` (importing it costs
most of a second, see ``docs/performance.md``). Each test builds a *twin* of an estimator: a
class of the same name and constructor that inherits from scikit-learn's ``BaseEstimator``
(and ``ClassifierMixin`` for the classifier), and checks that ours answers exactly as the
twin does: ``get_params``, ``set_params`` (nested too), ``repr`` (short, wrapped, cut),
scikit-learn's tags, ``is_classifier``, ``clone``; then that scikit-learn's own tools
(``cross_val_score``, ``GridSearchCV``, ``Pipeline``, its API checks) work on them.
"""

from __future__ import annotations

import numpy as np
import pytest
import sklearn
from sklearn import base as skbase
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.utils import estimator_checks, get_tags

import hiddenstate as hs
from hiddenstate import _sklearn_base
from hiddenstate.programs import ProgramModel
from hiddenstate.programs.examples import hmm_program
from hiddenstate.sources import KneserNeySource

try:  # the lm estimator needs the torch extra
    from hiddenstate.lm import BlockedHMMLM
except ImportError:
    BlockedHMMLM = None

ESTIMATORS = [hs.HMM, hs.NaiveBayesHidden, hs.PCFG, hs.TreeNet, hs.PROPS]
if BlockedHMMLM is not None:
    ESTIMATORS.append(BlockedHMMLM)

SKLEARN_16 = tuple(int(p) for p in sklearn.__version__.split(".")[:2]) >= (1, 6)


def twin(cls):
    """A class named like ``cls``, with its constructor, on scikit-learn's base classes."""
    bases = (skbase.BaseEstimator,)
    if issubclass(cls, _sklearn_base.ClassifierMixin):
        bases = (skbase.ClassifierMixin, *bases)
    return type(cls.__name__, bases, {"__init__": cls.__init__, "__module__": cls.__module__})


def pair(cls, *args, **kwargs):
    return cls(*args, **kwargs), twin(cls)(*args, **kwargs)


# settings that exercise defaults, strings, None, floats, NaN, dicts and lists, long reprs
CASES = [
    (hs.HMM, (), {}),
    (hs.HMM, (3,), {}),
    (hs.HMM, (4,), {"emission": "gaussian", "covariance_type": "full", "random_state": 0}),
    (hs.HMM, (8,), {"emission": "categorical", "n_iter": 250, "tol": 1e-6, "n_init": 5,
                    "learn": "map", "random_state": 12345, "init_params": "st",
                    "params": "ste", "topology": "left-right", "verbose": True,
                    "learner_options": {"step_exponent": 0.6, "burn_in": 10}}),
    (hs.HMM, (2,), {"tol": float("nan"), "startprob_prior": [1.0, 2.0]}),
    (hs.NaiveBayesHidden, (), {}),
    (hs.NaiveBayesHidden, (), {"n_clusters": 3, "learn": "vt", "prior": 2.0,
                               "random_state": 1}),
    (hs.PCFG, (), {"rules": [("S", "a", 1.0)], "start": "S", "learn": "vb", "n_init": 3}),
    (hs.TreeNet, (), {"n_states": {"h": 2, "x": 3}, "edges": [("h", "x")],
                      "observed": {"x": 0}, "learning_rate": 0.5, "random_state": 3}),
    (hs.PROPS, (), {"n_perturbation_states": 2, "learn": "online-em", "random_state": 0}),
]
if BlockedHMMLM is not None:
    CASES += [(BlockedHMMLM, (), {}),
              (BlockedHMMLM, (), {"states_per_cluster": 2, "dtype": "float64", "prior": 1.5,
                                  "progress": False})]


def _ids(case):
    cls, args, kwargs = case
    return f"{cls.__name__}{args}{sorted(kwargs)}"


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_get_params_and_repr_are_scikit_learns(case):
    cls, args, kwargs = case
    ours, theirs = pair(cls, *args, **kwargs)
    assert not isinstance(ours, skbase.BaseEstimator)
    assert ours.get_params(deep=False) == theirs.get_params(deep=False)
    assert ours.get_params(deep=True).keys() == theirs.get_params(deep=True).keys()
    assert repr(ours) == repr(theirs)
    for n_char_max in (40, 80, 150):
        assert ours.__repr__(N_CHAR_MAX=n_char_max) == theirs.__repr__(N_CHAR_MAX=n_char_max)


def test_long_reprs_wrap_like_scikit_learns():
    """Many changed parameters: wrapped under the opening parenthesis, the closing one
    counting against the last line; the cases above wrap too (checked by length here)."""
    kwargs = CASES[3][2]
    ours, theirs = pair(hs.HMM, 8, **kwargs)
    assert "\n" in repr(ours) and repr(ours) == repr(theirs)
    for width_probe in range(1, 40):  # parameter values of every length around the edge
        ours, theirs = pair(hs.HMM, 8, **{**kwargs, "init_params": "s" * width_probe})
        assert repr(ours) == repr(theirs), width_probe


def test_set_params_nested_and_invalid_like_scikit_learns():
    src = KneserNeySource(order=3)
    ours, theirs = pair(hs.HMM, 3, learner_options=None)
    # a parameter that is an estimator: nested names in get_params(deep=True)
    ours.learner_options = theirs.learner_options = src
    assert ours.get_params(deep=True) == theirs.get_params(deep=True)
    assert ours.get_params()["learner_options__order"] == 3
    assert ours.set_params(n_states=5, n_iter=7) is ours
    theirs.set_params(n_states=5, n_iter=7)
    assert ours.get_params(deep=False) == theirs.get_params(deep=False)
    with pytest.raises(ValueError, match="Invalid parameter 'nope' for estimator") as e1:
        ours.set_params(nope=1)
    with pytest.raises(ValueError) as e2:
        theirs.set_params(nope=1)
    assert str(e1.value).split(". Valid")[1] == str(e2.value).split(". Valid")[1]
    assert ours.set_params() is ours


@pytest.mark.skipif(not SKLEARN_16, reason="estimator tags are scikit-learn >= 1.6")
@pytest.mark.parametrize("cls", ESTIMATORS)
def test_tags_and_estimator_type_are_scikit_learns(cls):
    ours, theirs = pair(cls)
    assert get_tags(ours) == get_tags(theirs)
    assert skbase.is_classifier(ours) == skbase.is_classifier(theirs) \
        == (cls is hs.NaiveBayesHidden)
    assert skbase.is_regressor(ours) is skbase.is_regressor(theirs) is False


def test_clone_gives_an_unfitted_copy_with_equal_parameters():
    X = np.random.default_rng(0).integers(0, 3, size=(200, 1))
    model = hs.HMM(2, n_iter=5, learn="map", random_state=0,
                   startprob_prior=np.array([2.0, 3.0])).fit(X)
    copy = skbase.clone(model)
    assert type(copy) is hs.HMM
    assert copy.get_params().keys() == model.get_params().keys()
    assert repr(copy) == repr(model)
    assert copy.startprob_prior is not model.startprob_prior  # deep-copied, as sklearn does
    np.testing.assert_array_equal(copy.startprob_prior, model.startprob_prior)
    assert not hasattr(copy, "monitor_")
    program = ProgramModel(hmm_program(2, 3), learn="vt", random_state=0)
    assert skbase.clone(program).program is program.program  # a program is shared code


def _nbh_data(seed=0, n=240):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    X = np.column_stack([(y + rng.integers(0, 2, size=n)) % 3 for _ in range(4)])
    return X, y


def test_a_classifier_gets_stratified_folds_and_keeps_the_contracts_score():
    X, y = _nbh_data()
    model = hs.NaiveBayesHidden(random_state=0).fit(X, y)
    assert skbase.is_classifier(model)
    assert model.score(X, y) == pytest.approx(np.sum(model.score_samples(X, y)))
    got = cross_val_score(hs.NaiveBayesHidden(random_state=0), X, y, cv=3, scoring="accuracy")
    expected = []  # a classifier gets stratified folds
    for train, test in StratifiedKFold(3).split(X, y):
        fold = hs.NaiveBayesHidden(random_state=0).fit(X[train], y[train])
        expected.append(np.mean(fold.predict(X[test]) == y[test]))
    np.testing.assert_allclose(got, expected)


def test_grid_search_and_pipeline_drive_an_hmm():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, size=(600, 1))
    search = GridSearchCV(hs.HMM(n_iter=5, random_state=0), {"n_states": [2, 3]}, cv=3)
    search.fit(X)
    from sklearn.model_selection import KFold

    for i, k in enumerate((2, 3)):
        scores = [hs.HMM(k, n_iter=5, random_state=0).fit(X[tr]).score(X[te])
                  for tr, te in KFold(3).split(X)]
        assert search.cv_results_["mean_test_score"][i] == pytest.approx(np.mean(scores))
    pipe = Pipeline([("hmm", hs.HMM(2, n_iter=5, random_state=0))]).fit(X)
    alone = hs.HMM(2, n_iter=5, random_state=0).fit(X)
    assert pipe.score(X) == pytest.approx(alone.score(X))


CHECKS = ["check_parameters_default_constructible", "check_get_params_invariance",
          "check_set_params", "check_no_attributes_set_in_init", "check_estimator_repr",
          "check_do_not_raise_errors_in_init_or_set_params", "check_estimator_cloneable",
          "check_mixin_order"]


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("cls", ESTIMATORS)
def test_scikit_learns_api_checks_pass(check, cls):
    fn = getattr(estimator_checks, check, None)
    if fn is None:
        pytest.skip(f"scikit-learn {sklearn.__version__} has no {check}")
    fn(cls.__name__, cls())

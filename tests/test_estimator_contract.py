"""The estimator contract of ``docs/estimator-contract.md``: one test per clause, run over
every public estimator (in the spirit of scikit-learn's ``parametrize_with_checks``).

Every estimator is one row of :data:`CASES`: a constructor with tiny settings and a tiny
data set, plus what the clauses need to know about it (its learning modes, an invalid
hyper-parameter, bad inputs of each kind, parameters that give an item probability zero).
A new estimator joins the contract by adding one row. A clause that does not apply to an
estimator says why in the row (``pytest.skip`` with the reason); a clause an estimator
does not meet yet is an ``xfail`` whose reason names who fixes it.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

import hiddenstate as hs
from hiddenstate.errors import InvalidInputError, NotFittedError, ZeroProbabilityError
from hiddenstate.grammar import Tree
from hiddenstate.learn.online import ONLINE_MODES
from hiddenstate.programs import Explanation, Goal, ProgramModel
from hiddenstate.programs.examples import hmm_program
from hiddenstate.sources import KneserNeySource

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "docs" / "estimator-contract.md"
CHANGELOG = ROOT / "docs" / "changelog.md"


@dataclass
class Data:
    """The positional and keyword arguments that carry the items (``X``, ``lengths``,
    labels...) of a call; ``fit_kwargs`` are given to ``fit`` only."""
    args: tuple
    kwargs: dict = field(default_factory=dict)
    fit_kwargs: dict = field(default_factory=dict)
    n_items: int = 0


@dataclass
class Case:
    """One public estimator, as the contract test sees it."""
    name: str
    make: Callable[..., object]                 # make(**hyper) -> an unfitted estimator
    data: Callable[[object], Data]              # data(model): items built for that model
    modes: tuple[str, ...]                      # the learn= spellings it takes
    invalid: tuple[str, object]                 # a hyper-parameter value fit must refuse
    has_parameters_before_fit: bool = False     # uniform/declared probabilities at once
    sample_kwargs: dict = field(default_factory=dict)
    bad: dict = field(default_factory=dict)     # kind -> Data that fit/score_samples refuse
    no_bad: dict = field(default_factory=dict)  # kind -> why it is not bad input there
    zero: Callable | None = None                # () -> (model, Data, impossible items, calls)
    no_zero: str = ""                           # why no item can have probability zero
    prior: Callable | None = None               # (learn, concentration) -> estimator
    no_prior: str = ""
    params: Callable | None = None              # fitted model -> its learned arrays
    marks: tuple = ()
    clause_xfail: dict = field(default_factory=dict)  # clause -> who fixes it, and what


# -- the rows ---------------------------------------------------------------------------------
W = 3


def _symbols(seed: int, n: int = 40, width: int = W):
    rng = np.random.default_rng(seed)
    return rng.integers(0, width, size=(n, 1)), [n // 2, n - n // 2]


def _hmm_case(emission: str, X: np.ndarray, lengths: list, bad: dict, no_bad: dict,
              zero=None, no_zero: str = "", **hyper) -> Case:
    def make(**kw):
        return hs.HMM(**{"n_states": 2, "emission": emission, "n_iter": 3, "random_state": 0,
                         **hyper, **kw})

    def params(m):
        return {"startprob_": m.startprob_, "transmat_": m.transmat_,
                **{k: np.asarray(v) for k, v in m.emission_params().items()}}

    prior = None
    if emission == "categorical":
        def prior(learn, alpha):
            p = {} if learn == "em" else {"startprob_prior": alpha, "transmat_prior": alpha,
                                          "emissionprob_prior": alpha}
            return make(learn=learn, **p)
    mixed = isinstance(emission, dict)  # columns of several families: batch modes only
    return Case(
        "HMM-mixed" if mixed else f"HMM-{emission}", make,
        lambda m: Data((X, lengths), n_items=len(lengths)),
        ("em", "map", "vb", "vt", "kvt", "online-em", "bwo", "baldi-chauvin", "bona", "mpa")
        if emission == "categorical" else ("em", "map", "vb", "vt", "kvt") if mixed
        else ("em", "map", "vb", "vt", "kvt", "online-em"),
        ("n_states", 0), bad=bad, no_bad=no_bad, zero=zero, no_zero=no_zero, prior=prior,
        no_prior="" if prior else "its Dirichlet priors (startprob_prior, transmat_prior) "
        "are checked on the categorical row; the emission priors are not Dirichlet",
        params=params)


def _hmm_zero():
    """Symbol 2 has emission probability zero in every state."""
    m = hs.HMM(2, n_features=W)
    m.startprob_ = [0.5, 0.5]
    m.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
    m.emissionprob_ = [[0.5, 0.5, 0.0], [0.3, 0.7, 0.0]]
    X = np.array([[0], [1], [1], [0], [2], [1]])
    return m, Data((X, [3, 3]), n_items=2), [1], {
        "predict_proba": lambda m, d: m.predict_proba(*d.args),
        "decode": lambda m, d: m.decode(*d.args),
        "filter_proba": lambda m, d: m.filter_proba(*d.args),
        "sample_posterior": lambda m, d: m.sample_posterior(*d.args, random_state=0)}


def _poisson_zero():
    """Rate zero in every state: a count of 1 is impossible."""
    m = hs.HMM(2, emission="poisson")
    m.startprob_ = [0.5, 0.5]
    m.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
    m.lambdas_ = [[0.0], [0.0]]
    X = np.array([[0.0], [0.0], [0.0], [1.0]])
    return m, Data((X, [2, 2]), n_items=2), [1], {
        "predict_proba": lambda m, d: m.predict_proba(*d.args),
        "decode": lambda m, d: m.decode(*d.args)}


_MIXED = {"gaussian": [0, 1], "categorical": [2], "poisson": [3]}


def _mixed_zero():
    """Symbol 2 of the categorical column has probability zero in every state."""
    m = hs.HMM(2, emission=_MIXED, n_features=[1, 1, W, 1])
    m.startprob_ = [0.5, 0.5]
    m.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
    m.means_ = [[0.0, 0.0], [1.0, 1.0]]
    m.covars_ = [[1.0, 1.0], [1.0, 1.0]]
    m.emissionprob_ = [[0.5, 0.5, 0.0], [0.3, 0.7, 0.0]]
    m.lambdas_ = [[1.0], [3.0]]
    X = np.array([[0.1, 0.2, 0, 1], [0.3, 0.1, 1, 0], [1.0, 0.9, 1, 2], [0.2, 0.1, 2, 1]],
                 dtype=float)
    return m, Data((X, [2, 2]), n_items=2), [1], {
        "predict_proba": lambda m, d: m.predict_proba(*d.args),
        "decode": lambda m, d: m.decode(*d.args)}


_CAT_X, _ = _symbols(0)
_CAT_LEN = [5] * 8  # short: "bona" and "mpa" enumerate the paths of each sequence
_GAUSS_X = np.random.default_rng(1).normal(size=(40, 2))
_POIS_X = np.random.default_rng(2).poisson(3.0, size=(40, 2)).astype(float)
_MULT_X = np.random.default_rng(3).multinomial(5, [0.2, 0.3, 0.5], size=40).astype(float)
_MIXED_X = np.column_stack([_GAUSS_X, _CAT_X[:, 0], _POIS_X[:, 0]]).astype(float)
_SHAPE = np.zeros((4, 2, 2))
_LEN2 = [20, 20]

HMM_CASES = [
    _hmm_case("categorical", _CAT_X, _CAT_LEN,
              {"shape": Data((_SHAPE, None)), "non-finite": Data((np.array([0.0, np.nan]),
                                                                  None)),
               "range": Data((np.array([[0], [7]]), None)),
               "empty": Data((np.empty((0, 1), dtype=np.int64), None))},
              {}, zero=_hmm_zero, n_features=W),
    _hmm_case("gaussian", _GAUSS_X, _LEN2,
              {"shape": Data((_SHAPE, None)), "non-finite": Data((np.array([[0.0, np.inf]]),
                                                                  None)),
               "empty": Data((np.empty((0, 2)), None))},
              {"range": "every real vector is a Gaussian observation",
               "non-finite/NaN": "NaN marks a missing entry (docs/hmm.md)"},
              no_zero="a Gaussian density is positive everywhere"),
    _hmm_case("poisson", _POIS_X, _LEN2,
              {"shape": Data((_SHAPE, None)), "non-finite": Data((np.array([[1.0, np.inf]]),
                                                                  None)),
               "range": Data((np.array([[1.0, -2.0]]), None)),
               "empty": Data((np.empty((0, 2)), None))},
              {"non-finite/NaN": "NaN marks a missing count (docs/hmm.md)"},
              zero=_poisson_zero),
    _hmm_case("gmm", _GAUSS_X, _LEN2,
              {"shape": Data((_SHAPE, None)), "non-finite": Data((np.array([[0.0, np.inf]]),
                                                                  None)),
               "empty": Data((np.empty((0, 2)), None))},
              {"range": "every real vector is a Gaussian-mixture observation"},
              no_zero="a Gaussian-mixture density is positive everywhere", n_mix=2),
    _hmm_case("multinomial", _MULT_X, _LEN2,
              {"shape": Data((_SHAPE, None)), "non-finite": Data((np.array([[1.0, np.nan,
                                                                            4.0]]), None)),
               "range": Data((np.array([[1.0, -1.0, 5.0]]), None)),
               "empty": Data((np.empty((0, 3)), None))},
              {}, no_zero="checked for the categorical and Poisson rows (the same kernels)",
              n_trials=5),
    _hmm_case(_MIXED, _MIXED_X, _LEN2,
              {"shape": Data((_SHAPE, None)),
               "non-finite": Data((np.array([[0.0, np.inf, 1.0, 2.0]]), None)),
               "range": Data((np.array([[0.0, 0.0, 1.5, 2.0]]), None)),
               "empty": Data((np.empty((0, 4)), None))},
              {"non-finite/NaN": "NaN marks a missing entry in any column (docs/hmm.md)"},
              zero=_mixed_zero),
]


def _hsmm_case() -> Case:
    """A categorical HSMM with nonparametric durations (the durations' Dirichlet prior is
    a concentration like the others)."""
    def make(**kw):
        return hs.HSMM(**{"n_states": 2, "n_features": W, "n_iter": 3, "random_state": 0,
                          **kw})

    def zero():
        """Symbol 2 has emission probability zero in every state."""
        m = make(max_duration=3)
        m.startprob_ = [0.5, 0.5]
        m.transmat_ = [[0.0, 1.0], [1.0, 0.0]]
        m.durations_ = [[0.5, 0.3, 0.2], [0.2, 0.3, 0.5]]
        m.emissionprob_ = [[0.5, 0.5, 0.0], [0.3, 0.7, 0.0]]
        Xz = np.array([[0], [1], [1], [0], [2], [1]])
        return m, Data((Xz, [3, 3]), n_items=2), [1], {
            "predict_proba": lambda m, d: m.predict_proba(*d.args),
            "decode": lambda m, d: m.decode(*d.args),
            "filter_proba": lambda m, d: m.filter_proba(*d.args),
            "segment_proba": lambda m, d: m.segment_proba(*d.args),
            "best_segmentations": lambda m, d: m.best_segmentations(*d.args, k=2),
            "sample_posterior": lambda m, d: m.sample_posterior(*d.args, random_state=0)}

    def prior(learn, alpha):
        p = {} if learn == "em" else {"startprob_prior": alpha, "transmat_prior": alpha,
                                      "emissionprob_prior": alpha, "duration_prior": alpha}
        return make(learn=learn, **p)

    return Case(
        "HSMM", make, lambda m: Data((_CAT_X, _LEN2), n_items=2),
        ("em", "map", "vb", "vt", "kvt"), ("max_duration", 0), bad=HMM_CASES[0].bad,
        zero=zero, prior=prior,
        params=lambda m: {"startprob_": m.startprob_, "transmat_": m.transmat_,
                          "emissionprob_": m.emissionprob_, "durations_": m.durations_})


def _regression_case(name: str, hyper: dict, modes: tuple, X, U, lengths, bad: dict,
                     no_bad: dict, no_zero: str, no_prior: str = "") -> Case:
    """A RegressionHMM row: ``inputs`` travel in every call's keyword arguments (and
    ``sample``'s, with one row per step drawn)."""
    kw = {} if U is None else {"inputs": U}

    def make(**more):
        return hs.RegressionHMM(**{"n_states": 2, "n_iter": 3, "random_state": 0, **hyper,
                                   **more})

    def prior(learn, alpha):
        if learn == "em":
            return make(learn="em")
        flat = {"coef_weight": 0.0} | ({"covars_prior": 0.0} if hyper.get(
            "emission", "linear") == "linear" else {}) | (
            {"transition_coef_weight": 0.0} if hyper.get("transitions") == "softmax" else {})
        return make(learn=learn, startprob_prior=alpha, transmat_prior=alpha,
                    **(flat if learn == "map" else {}))

    return Case(
        f"RegressionHMM-{name}", make, lambda m: Data((X, lengths), kw, n_items=len(lengths)),
        modes, ("n_states", 0), bad=bad, no_bad=no_bad, no_zero=no_zero,
        prior=None if no_prior else prior, no_prior=no_prior,
        sample_kwargs={} if U is None else {"inputs": U[:3]},
        params=lambda m: {k: np.asarray(v) for k, v in m.learned_arrays().items()})


_REG_U = np.random.default_rng(9).normal(size=(40, 2))
_REG_BAD = {"shape": Data((_SHAPE, None)), "non-finite": Data((np.array([[0.0, np.inf]]),
                                                               None)),
            "empty": Data((np.empty((0, 2)), None))}
REGRESSION_CASES = [
    _regression_case("linear", {}, ("em", "map", "vb", "vt", "kvt"), _GAUSS_X, _REG_U, _LEN2,
                     _REG_BAD, {"range": "every real vector is a Gaussian observation"},
                     "a Gaussian density is positive everywhere"),
    _regression_case("ar", {"n_lags": 2}, ("em", "map", "vb", "vt", "kvt"), _GAUSS_X, None,
                     _LEN2, _REG_BAD, {"range": "every real vector is a Gaussian observation"},
                     "a Gaussian density is positive everywhere"),
    _regression_case("logistic-softmax", {"emission": "logistic", "transitions": "softmax"},
                     ("em", "map", "vt"), _CAT_X, _REG_U, _LEN2,
                     {"shape": Data((_SHAPE, None)),
                      "non-finite": Data((np.array([0.0, np.nan]), None)),
                      "range": Data((np.array([[0], [-2]]), None),
                                    {"inputs": np.zeros((2, 2))}),
                      "empty": Data((np.empty((0, 1), dtype=np.int64), None))},
                     {}, "softmax probabilities are positive everywhere",
                     no_prior="learn='vb' needs the conjugate linear emissions; the Dirichlet "
                              "priors are checked on the RegressionHMM-linear row"),
]


def _props_case() -> Case:
    X, lengths = _symbols(4)
    src = KneserNeySource(order=2).fit(X[:, 0], n_symbols=W)

    def make(**kw):
        return hs.PROPS(**{"sources": [src], "n_perturbation_states": 1, "random_state": 0,
                           "n_iter": 3, **kw})

    def zero():
        """The source state is never entered and the perturbation state cannot emit 2."""
        m = make(init_params="")
        m.startprob_ = [0.0, 1.0]
        m.transmat_ = [[0.0, 1.0], [0.0, 1.0]]
        m.emissionprob_ = [[0.5, 0.5, 0.0]]
        Xz = np.array([[0], [1], [1], [2]])
        return m, Data((Xz, [2, 2]), n_items=2), [1], {
            "predict_proba": lambda m, d: m.predict_proba(*d.args),
            "decode": lambda m, d: m.decode(*d.args),
            "token_scores": lambda m, d: m.token_scores(*d.args)}

    return Case(
        "PROPS", make, lambda m: Data((X, lengths), n_items=2),
        ("online-em", "em", "map", "vb", "vt", "kvt"), ("n_perturbation_states", -1),
        bad={"shape": Data((_SHAPE, None)),
             "non-finite": Data((np.array([0.0, np.nan]), None)),
             "range": Data((np.array([[0], [7]]), None)),
             "empty": Data((np.empty((0, 1), dtype=np.int64), None))},
        zero=zero, no_prior="its priors are the HMM's (checked on the HMM-categorical row)",
        params=HMM_CASES[0].params)


RULES = {"S": [("NP", "VP")], "VP": [("V", "NP"), ("eats",)], "NP": [("she",), ("fish",)],
         "V": [("eats",)]}
SENTENCES = ["she eats fish".split(), "fish eats".split(), "she eats she".split()]


def _grammar_case(cls, make_zero: Callable, more_calls: dict | None = None,
                  **case: object) -> Case:
    """A grammar row (PCFG, PLCG): the same rules, sentences and bad inputs;
    ``make_zero(model)`` sets probabilities under which "fish" cannot be derived (sentences
    0 and 1 impossible)."""
    def make(**kw):
        return cls(**{"rules": RULES, "start": "S", "n_iter": 4, "random_state": 0, **kw})

    def zero():
        m = make()
        make_zero(m)
        return m, Data((SENTENCES,), n_items=3), [0, 1], {
            "parse": lambda m, d: m.parse(*d.args), **(more_calls or {}),
            "expected_counts": lambda m, d: m.expected_counts(*d.args),
            "parse_k_best": lambda m, d: m.parse_k_best(d.args[0][1]),
            "sample_parses": lambda m, d: m.sample_parses(d.args[0][1], random_state=0)}

    def prior(learn, alpha):
        return make(learn=learn, **({} if learn == "em" else {"prior": alpha}))

    return Case(
        cls.__name__, make, lambda m: Data((SENTENCES,), n_items=3),
        ("em", "map", "vb", "vt", "kvt"), ("n_iter", 0),
        bad={"shape": Data(("she eats fish",)), "non-finite": Data(([[float("nan")]],)),
             "range": Data(([["she", "swims"]],)), "empty": Data(([],))},
        zero=zero, prior=prior, params=lambda m: {"theta_": m.theta_}, **case)


def _pcfg_case() -> Case:
    return _grammar_case(
        hs.PCFG, lambda m: m.set_probs("NP", [1.0, 0.0]),
        {"predict_proba": lambda m, d: m.predict_proba(*d.args)},
        has_parameters_before_fit=True)


def _plcg_case() -> Case:
    """The PLCG over the PCFG row's rules: no probabilities until fitted or set by hand."""
    def no_fish_first(m):
        for goal in ("S", "NP"):   # "fish" can no longer be the first word of a goal
            m.set_probs(("first", goal), [0.0, 1.0])

    return _grammar_case(hs.PLCG, no_fish_first)


def _treenet_case() -> Case:
    X = np.random.default_rng(5).integers(0, 3, size=(30, 2))
    structure = {"n_states": {"a": 2, "b": 2}, "edges": [("a", "b"), ("b", "x0"), ("a", "x1")],
                 "observed": {"x0": 3, "x1": 3}}

    def make(**kw):
        return hs.TreeNet(**{**structure, "n_iter": 3, "random_state": 0, **kw})

    def zero():
        m = make()
        m.priors_ = {"a": np.array([0.5, 0.5])}
        m.weights_ = {"a->b": np.array([[0.5, 0.5], [0.5, 0.5]]),
                      "b->x0": np.array([[0.5, 0.5, 0.0], [0.2, 0.8, 0.0]]),
                      "a->x1": np.array([[0.2, 0.3, 0.5], [0.3, 0.3, 0.4]])}
        Xz = np.array([[0, 1], [2, 1], [1, 0]])
        return m, Data((Xz,), n_items=3), [1], {
            "predict_proba": lambda m, d: m.predict_proba(*d.args),
            "decode": lambda m, d: m.decode(*d.args),
            "sample_posterior": lambda m, d: m.sample_posterior(*d.args, random_state=0)}

    def prior(learn, alpha):
        return make(learn=learn, **({} if learn == "em" else {"prior": alpha}))

    return Case(
        "TreeNet", make, lambda m: Data((X,), n_items=len(X)),
        ("em", "map", "vb", "vt", "stochastic-em"), ("n_iter", 0),
        bad={"shape": Data((np.zeros((4, 3), dtype=np.int64),)),
             "non-finite": Data((np.array([[0.0, np.nan]]),)),
             "range": Data((np.array([[0, 5]]),)),
             "empty": Data((np.empty((0, 2), dtype=np.int64),))},
        zero=zero, prior=prior,
        params=lambda m: {**m.weights_, **m.priors_})


def _nbh_case() -> Case:
    rng = np.random.default_rng(6)
    X = rng.choice(np.array(["p", "q", "r"], dtype=object), size=(30, 3))
    y = rng.choice(np.array(["no", "yes"]), size=30)

    def make(**kw):
        return hs.NaiveBayesHidden(**{"n_clusters": 2, "n_iter": 5, "random_state": 0, **kw})

    def zero():
        """Value "r" of attribute 0 has probability zero in every class and cluster."""
        m = make(learn="em").fit(X, y)
        m.feature_prob_ = [np.array([[[0.5, 0.5, 0.0]] * 2] * 2)] + list(m.feature_prob_[1:])
        Xz = np.array([["p", "q", "r"], ["r", "q", "p"]], dtype=object)
        return m, Data((Xz,), n_items=2), [1], {
            "predict_proba": lambda m, d: m.predict_proba(*d.args),
            "predict_cluster_proba": lambda m, d: m.predict_cluster_proba(*d.args)}

    def prior(learn, alpha):
        return make(learn=learn, **({} if learn == "em" else {"prior": alpha}))

    return Case(
        "NaiveBayesHidden", make, lambda m: Data((X, y), n_items=len(X)),
        ("em", "map", "vb", "vt", "kvt"), ("n_clusters", 0),
        bad={"shape": Data((np.zeros((2, 3, 2)), ["no", "yes"])),
             "empty": Data((np.empty((0, 3), dtype=object), []))},
        no_bad={"non-finite": "NaN marks a missing value (docs/nbh.md)",
                "range": "a value never seen in training is read as missing, with an "
                         "UnknownCategoryWarning (docs/nbh.md)"},
        zero=zero, prior=prior,
        params=lambda m: {"class": m.class_prior_, "cluster": m.cluster_prior_,
                          **{f"attr{j}": p for j, p in enumerate(m.feature_prob_)}})


def _program_case() -> Case:
    rng = np.random.default_rng(7)
    seqs = [tuple(rng.integers(0, 3, 6).tolist()) for _ in range(3)]

    def goals(model):  # built on the model's own program (a loaded model has its own)
        return [model.program.predicates["hmm"](s) for s in seqs]

    def make(program=None, **kw):
        return ProgramModel(**{"program": hmm_program(2, 3) if program is None else program,
                               "n_iter": 4, "random_state": 0, **kw})

    def zero():
        m = make()
        for s in (0, 1):
            m.set_probs(("out", s), [0.5, 0.5, 0.0])   # symbol 2 can no longer be emitted
        zg = [m.program.predicates["hmm"](s) for s in [(0, 1, 1), (0, 2, 1)]]
        return m, Data((zg,), n_items=2), [1], {
            "viterbi": lambda m, d: m.viterbi(d.args[0][1]),
            "kbest": lambda m, d: m.kbest(d.args[0][1], 2),
            "expected_counts": lambda m, d: m.expected_counts(*d.args),
            "goal_posteriors": lambda m, d: m.goal_posteriors(*d.args),
            "sample_explanations": lambda m, d: m.sample_explanations(d.args[0][1])}

    def prior(learn, alpha):
        return make(program=hmm_program(2, 3, **({} if alpha is None else {"prior": alpha})),
                    learn=learn)

    def other_goal(m):
        return Data(([hmm_program(2, 3).predicates["hmm"]((0, 1))],))

    return Case(
        "ProgramModel", make, lambda m: Data((goals(m),), n_items=3),
        ("em", "map", "vb", "vt", "kvt"), ("n_iter", -1), has_parameters_before_fit=True,
        sample_kwargs={"args": (4,)},
        bad={"shape": Data(("hmm(0, 1)",)), "range": other_goal, "empty": Data(([],))},
        no_bad={"non-finite": "goals are terms of the program, not numbers"},
        zero=zero, prior=prior, params=lambda m: dict(m.probs_))


def _lm_case() -> Case:
    def data(model):
        rng = np.random.default_rng(8)
        ids = []
        for _ in range(8):
            ids += list(rng.integers(2, 10, size=rng.integers(1, 4))) + [1]
        from hiddenstate.textio import Vocabulary
        vocab = Vocabulary(["<unk>", "<eos>"] + [f"w{i}" for i in range(8)])
        return Data((np.array(ids, dtype=np.int64),), n_items=8,
                    fit_kwargs={"vocabulary": vocab, "word_cluster": np.arange(10) % 3})

    def make(**kw):
        from hiddenstate.lm import BlockedHMMLM
        return BlockedHMMLM(**{"states_per_cluster": 2, "dtype": "float64", "progress": False,
                               "n_epochs": 1, "batch_size": 2, "bptt": 6, "random_state": 0,
                               **kw})

    return Case(
        "BlockedHMMLM", make, data, ("gradient", "em", "stepwise-em"), ("bptt", 0),
        bad={"shape": Data((np.zeros((3, 2), dtype=np.int64),)),
             "non-finite": Data((np.array([2.0, np.nan, 1.0]),)),
             "range": Data((np.array([2, 99, 1]),)),
             "empty": Data((np.empty(0, dtype=np.int64),))},
        no_zero="softmax parameters: every probability is positive",
        no_prior="'em' is MAP under prior (a concentration); there is no prior-free mode to "
                 "compare it with",
        marks=_lm_marks())


def _lm_marks() -> tuple:
    try:
        import torch  # noqa: F401
    except ImportError:
        return (pytest.mark.skip(reason="BlockedHMMLM needs torch (pip install "
                                        "'hiddenstate[lm]')"),)
    return ()


def _gibbs_case() -> Case:
    """The categorical HMM fitted by Gibbs sampling (short chains): the contract with
    posterior draws held, saved and used by ``score_samples`` (posterior predictive)."""
    base = HMM_CASES[0]
    options = {"n_samples": 12, "burn_in": 4, "n_chains": 2, "check_convergence": False}

    def make(**kw):
        kw = {"learn": "gibbs", **kw}
        if kw["learn"] == "gibbs":
            kw.setdefault("learner_options", options)
        return hs.HMM(**{"n_states": 2, "emission": "categorical", "random_state": 0,
                         "n_features": W, **kw})

    return dataclasses.replace(
        base, name="HMM-categorical-gibbs", make=make, modes=("gibbs",), zero=None,
        no_zero="checked on the HMM-categorical row (the same inference)", prior=None,
        no_prior="checked on the HMM-categorical row (the Dirichlet priors must be > 0, "
        "docs/gibbs.md)")


def _hsmm_gibbs_case() -> Case:
    """The HSMM row fitted by Gibbs sampling (short chains): its draws held, saved and used
    by ``score_samples`` (posterior predictive)."""
    base = _hsmm_case()
    options = {"n_samples": 12, "burn_in": 4, "n_chains": 2, "check_convergence": False}

    def make(**kw):
        kw = {"learn": "gibbs", **kw}
        if kw["learn"] == "gibbs":
            kw.setdefault("learner_options", options)
        return base.make(**kw)

    return dataclasses.replace(
        base, name="HSMM-gibbs", make=make, modes=("gibbs",), zero=None,
        no_zero="checked on the HSMM row (the same inference)", prior=None,
        no_prior="checked on the HSMM row (the Dirichlet priors must be > 0, "
        "docs/gibbs.md)")


CASES = [*HMM_CASES, _gibbs_case(), _hsmm_case(), _hsmm_gibbs_case(), *REGRESSION_CASES,
         _props_case(), _pcfg_case(), _plcg_case(), _treenet_case(), _nbh_case(),
         _program_case(), _lm_case()]


def cases(clause: str, where: Callable[[Case], bool] = lambda c: True):
    """The rows as parameters of the test of ``clause`` (a row of the contract's table)."""
    rows = [line.split("|")[1].strip().strip("`") for line in
            CONTRACT.read_text(encoding="utf-8").splitlines() if line.startswith("| ")]
    assert any(row.startswith(clause) for row in rows), clause
    return [pytest.param(c, id=c.name, marks=[*c.marks, *(
        [pytest.mark.xfail(reason=c.clause_xfail[clause], strict=False)]
        if clause in c.clause_xfail else [])]) for c in CASES if where(c)]


# -- helpers ----------------------------------------------------------------------------------
def fit(model, d: Data):
    return model.fit(*d.args, **d.kwargs, **d.fit_kwargs)


def fitted(case: Case, **hyper):
    model = case.make(**hyper)
    fit(model, case.data(model))
    return model


def score_samples(model, d: Data) -> np.ndarray:
    return model.score_samples(*d.args, **d.kwargs)


def same(a, b) -> bool:
    """Equal values, recursively (arrays bit for bit; trees, goals and explanations by
    their text)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.all(
            (a == b) | ((a != a) & (b != b))))
    if isinstance(a, (Tree, Goal, Explanation)):
        return type(a) is type(b) and str(a) == str(b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(
            same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def contract_modes() -> set[str]:
    """The ``learn=`` spellings the contract page lists."""
    row = next(line for line in CONTRACT.read_text(encoding="utf-8").splitlines()
               if line.startswith("| `learn=`"))
    return set(re.findall(r'"([a-z-]+)"', row))


# -- construction -----------------------------------------------------------------------------
@pytest.mark.parametrize("case", cases("construction"))
def test_init_stores_the_arguments_as_given_and_nothing_else(case):
    model = case.make()
    params = model.get_params(deep=False)
    public = {k for k in vars(model) if not k.startswith("_")}
    assert public == set(params)
    again = type(model)(**params)
    for name, value in params.items():
        assert getattr(again, name) is value, name


@pytest.mark.parametrize("case", cases("construction"))
def test_init_validates_nothing_and_fit_refuses_the_invalid_value_naming_it(case):
    name, value = case.invalid
    model = case.make(**{name: value})  # the constructor takes it
    assert model.get_params()[name] is value
    with pytest.raises(InvalidInputError, match=name):
        fit(model, case.data(model))


@pytest.mark.parametrize("case", cases("construction"))
def test_arguments_after_the_first_by_position_warn_naming_what_they_were_read_as(case):
    """The "renames" rule for arguments becoming keyword-only: for one release a positional
    call still works, with a FutureWarning naming the parameter each value went to (issue
    27: HMM(3, "gaussian", "full") read "full" as n_features with no word of it)."""
    model = case.make()
    cls = type(model)
    signature = inspect.signature(cls.__init__).parameters
    first, second = list(signature)[1:3]
    params = model.get_params(deep=False)
    if signature[second].kind is inspect.Parameter.KEYWORD_ONLY:
        # an estimator added keyword-only (RegressionHMM): no release took them by position
        with pytest.raises(TypeError):
            cls(params[first], params[second])
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        cls(params[first], **{second: params[second]})  # keywords after the first: silent
    with pytest.warns(FutureWarning, match=rf"^{cls.__name__}: arguments after {first} are "
                                           rf"keyword-only .* {second}="):
        again = cls(params[first], params[second])
    assert getattr(again, second) is params[second]


@pytest.mark.parametrize("case", cases("construction"))
def test_get_params_and_set_params_round_trip(case):
    model = case.make()
    params = model.get_params(deep=False)
    assert model.set_params(**params) is model
    assert model.get_params(deep=False) == params
    model.set_params(random_state=11)
    assert model.get_params()["random_state"] == 11 and model.random_state == 11


@pytest.mark.parametrize("case", cases("construction"))
def test_clone_gives_the_same_unfitted_estimator_which_fits_to_the_same_scores(case):
    model = fitted(case)
    copy = clone(model)
    assert type(copy) is type(model)
    assert copy.get_params(deep=False).keys() == model.get_params(deep=False).keys()
    assert not [k for k in vars(copy) if k.endswith("_") and not k.startswith("_")]
    d = case.data(model)
    fit(copy, d)
    assert same(score_samples(copy, d), score_samples(model, d))


# -- fit --------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", cases("fit"))
def test_fit_returns_self_and_learned_attributes_end_in_an_underscore(case):
    model = case.make()
    before = set(vars(model))
    d = case.data(model)
    assert fit(model, d) is model
    learned = {k for k in set(vars(model)) - before if not k.startswith("_")}
    assert learned and all(k.endswith("_") for k in learned), learned
    monitor = model.monitor_
    assert isinstance(monitor.iter, int) and monitor.iter == len(monitor.history)
    assert isinstance(monitor.converged, bool)
    if model.learn not in ONLINE_MODES:  # a streaming learner's one pass has no iterations
        assert monitor.iter >= 1


# -- not fitted -------------------------------------------------------------------------------
@pytest.mark.parametrize("case", cases("not fitted"))
def test_a_model_without_parameters_raises_not_fitted(case):
    model = case.make()
    d = case.data(model)
    if case.has_parameters_before_fit:  # usable at once, with its declared probabilities
        assert np.all(np.isfinite(score_samples(model, d)))
        return
    for call in (lambda: score_samples(model, d), lambda: model.score(*d.args, **d.kwargs),
                 lambda: model.sample(2, random_state=0, **case.sample_kwargs)):
        with pytest.raises(NotFittedError) as err:
            call()
        # scikit-learn's NotFittedError is both: code written for it catches either
        assert isinstance(err.value, ValueError) and isinstance(err.value, AttributeError)


# -- score and score_samples ------------------------------------------------------------------
@pytest.mark.parametrize("case", cases("score"))
def test_score_samples_gives_one_log_likelihood_per_item_and_score_their_sum(case):
    model = fitted(case)
    d = case.data(model)
    per_item = score_samples(model, d)
    assert isinstance(per_item, np.ndarray) and per_item.dtype == np.float64
    assert per_item.shape == (d.n_items,)
    assert np.all(np.isfinite(per_item)) and np.all(per_item <= 0)
    total = model.score(*d.args, **d.kwargs)
    assert type(total) is float
    assert total == float(per_item.sum())


ALIASES = {"score_sequences": "score_samples", "log_prob": "score_samples",
           "log_likelihood": "score"}


@pytest.mark.parametrize("case", cases("renames"))
def test_the_per_item_log_likelihood_has_one_name_the_old_ones_warn(case):
    model = fitted(case)
    d = case.data(model)
    for old, new in ALIASES.items():
        if not hasattr(model, old):
            continue
        with pytest.warns(FutureWarning, match=f"use {new}"):
            got = getattr(model, old)(*d.args, **d.kwargs)
        assert same(got, getattr(model, new)(*d.args, **d.kwargs))
        owner = next(c for c in type(model).__mro__ if old in vars(c)).__name__
        assert re.search(rf"`{owner}\.{old}[`(]", CHANGELOG.read_text(encoding="utf-8")), old


# -- sample -----------------------------------------------------------------------------------
@pytest.mark.parametrize("case", cases("sample"))
def test_sample_takes_n_samples_and_random_state_first_and_is_reproducible(case):
    model = fitted(case)
    params = list(inspect.signature(model.sample).parameters.values())
    assert [p.name for p in params[:2]] == ["n_samples", "random_state"]
    assert [p.default for p in params[:2]] == [1, None]
    assert all(p.kind == p.KEYWORD_ONLY or p.default is not p.empty for p in params[2:])
    kw = case.sample_kwargs
    a = model.sample(3, 5, **kw)
    assert same(a, model.sample(3, random_state=5, **kw))
    assert same(model.sample(3, np.random.default_rng(2), **kw),
                model.sample(3, np.random.default_rng(2), **kw))
    # random_state=None: the estimator's own random_state, as in hmmlearn and scikit-learn
    model.set_params(random_state=5)
    assert same(model.sample(3, **kw), a)


# -- save and load ----------------------------------------------------------------------------
@pytest.mark.parametrize("case", cases("save / load"))
def test_save_then_load_gives_the_same_score_samples_to_the_bit(case, tmp_path):
    model = fitted(case)
    params = repr(model.get_params(deep=False))
    model.save(tmp_path / "m")
    # saving changes nothing of the model (PCFG.save turned its rules dict into a list)
    assert repr(model.get_params(deep=False)) == params
    back = hs.load(tmp_path / "m")
    assert type(back) is type(model)
    before, after = score_samples(model, case.data(model)), score_samples(back, case.data(back))
    assert before.tobytes() == after.tobytes()
    assert not any((tmp_path / "m").rglob("*.pkl")) and not any((tmp_path / "m").rglob("*.pickle"))


# -- learn= -----------------------------------------------------------------------------------
@pytest.mark.parametrize("case", cases("learn="))
def test_learn_takes_the_contract_spellings_and_refuses_others_alike(case):
    assert set(case.modes) <= contract_modes(), set(case.modes) - contract_modes()
    for mode in case.modes:
        model = case.make(learn=mode)
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            fit(model, case.data(model))
        assert np.all(np.isfinite(score_samples(model, case.data(model)))), mode
    bad = ["EM", "expectation-maximisation"] + [
        m.replace("-", "_") for m in contract_modes() if "-" in m and m not in case.modes]
    for spelling in bad:
        model = case.make(learn=spelling)
        with pytest.raises(InvalidInputError, match="learn"):
            fit(model, case.data(model))


# -- prior ------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", cases("prior"))
def test_prior_is_a_dirichlet_concentration(case):
    """Concentration 1 is flat (MAP = maximum likelihood, from the same start); below 1 the
    MAP estimate does not exist and is refused naming the prior, while VB takes it."""
    if case.prior is None:
        pytest.skip(case.no_prior)
    em, flat = case.prior("em", None), case.prior("map", 1.0)
    fit(em, case.data(em))
    fit(flat, case.data(flat))
    a, b = case.params(em), case.params(flat)
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_allclose(np.asarray(b[k]), np.asarray(a[k]), rtol=0, atol=1e-10,
                                   err_msg=str(k))
    no_mode = case.prior("map", 0.5)
    with pytest.raises(InvalidInputError, match="prior"):
        fit(no_mode, case.data(no_mode))
    sparse = case.prior("vb", 0.5)
    fit(sparse, case.data(sparse))
    assert np.all(np.isfinite(score_samples(sparse, case.data(sparse))))


# -- errors -----------------------------------------------------------------------------------
KINDS = ("shape", "non-finite", "range", "empty")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", cases("errors"))
def test_the_same_bad_input_raises_invalid_input_everywhere(case, kind):
    if kind not in case.bad:
        pytest.skip(case.no_bad.get(kind, f"no {kind} input for {case.name}"))
    model = fitted(case)
    bad = case.bad[kind]
    bad = bad(model) if callable(bad) else bad
    with pytest.raises(InvalidInputError):
        score_samples(model, bad)
    fresh = case.make()
    with pytest.raises(InvalidInputError):
        fit(fresh, Data(bad.args, bad.kwargs, case.data(fresh).fit_kwargs))


@pytest.mark.parametrize("case", cases("errors"))
def test_a_damaged_file_raises_model_file_error(case, tmp_path):
    model = fitted(case)
    model.save(tmp_path / "m")
    (tmp_path / "m" / "model.json").write_text('{"format": "hiddenstate", "class": ',
                                               encoding="utf-8")
    with pytest.raises(hs.errors.ModelFileError):
        hs.load(tmp_path / "m")


@pytest.mark.parametrize("case", cases("errors"))
def test_a_draw_too_large_for_memory_is_refused_before_allocating(case):
    model = fitted(case)
    with pytest.raises(hs.errors.InsufficientMemoryError, match="n_samples"):
        model.sample(10**12, random_state=0, **case.sample_kwargs)


def _zero_calls():
    out = []
    for c in CASES:
        if c.zero is None:
            out.append(pytest.param(c, None, id=f"{c.name}-none", marks=pytest.mark.skip(
                reason=c.no_zero)))
            continue
        _, _, _, calls = c.zero()
        for call in calls:
            out.append(pytest.param(c, call, id=f"{c.name}-{call}", marks=list(c.marks)))
    return out


@pytest.mark.parametrize("case", cases("errors", where=lambda c: c.zero is not None))
def test_an_item_of_probability_zero_scores_minus_infinity(case):
    model, d, impossible, _ = case.zero()
    per_item = score_samples(model, d)
    assert np.all(np.isneginf(per_item[impossible]))
    assert np.all(np.isfinite(np.delete(per_item, impossible)))
    assert model.score(*d.args, **d.kwargs) == -np.inf


@pytest.mark.parametrize(("case", "call"), _zero_calls())
def test_a_posterior_of_an_item_of_probability_zero_raises_zero_probability(case, call):
    model, d, _, calls = case.zero()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback with a warning
        with pytest.raises(ZeroProbabilityError):
            calls[call](model, d)

"""The HMM's hyper-parameters: their checks (errors name the argument and the fix) and
the forms ``n_features`` takes."""

from __future__ import annotations

import numpy as np

from ..._validation import (
    check_choice,
    check_number,
    check_positive_int,
    check_random_state,
)
from ...errors import InvalidInputError
from ...families import COVARIANCE_TYPES, FAMILIES
from ...families.mixed import check_spec, is_mixed, n_columns
from ...families.multinomial import check_n_trials
from ...learn import MODES
from ...learn.online import ONLINE_MODES, make_learner
from .chain import transitions_of
from .fixed import check_fixed_argument
from .priors import FLAT_PRIORS, GAUSSIAN

#: hmmlearn's letters of every parameter (``init_params`` / ``params``)
ALL_LETTERS = "stemclw"


def check_hyperparameters(model) -> None:
    """Validate the HMM's hyper-parameters (errors name the argument and the fix)."""
    check_positive_int(model.n_states, "n_states")
    check_positive_int(model.n_iter, "n_iter")
    check_positive_int(model.n_init, "n_init")
    if is_mixed(model.emission):  # several column groups (families.mixed)
        check_mixed(model)
    else:
        check_choice(model.emission, "emission", FAMILIES)
    if model.emission in GAUSSIAN:
        check_choice(model.covariance_type, "covariance_type", COVARIANCE_TYPES)
    check_n_features(model.n_features, model.emission)
    if model.emission == "gmm":
        check_positive_int(model.n_mix, "n_mix")
    if model.emission == "multinomial":
        check_n_trials(model.n_trials)
    for name in ("init_params", "params"):
        letters = getattr(model, name)
        if not isinstance(letters, str) or set(letters) - set(ALL_LETTERS):
            raise InvalidInputError(
                f"{name}: expected a string of letters from {ALL_LETTERS!r}, got {letters!r}")
    check_number(model.tol, "tol", finite=False)
    check_number(model.min_covar, "min_covar", minimum=0.0)
    check_random_state(model.random_state)
    check_choice(model.learn, "learn", MODES + ONLINE_MODES)
    if not isinstance(model.verbose, (bool, int, np.bool_, np.integer)):
        raise InvalidInputError(f"verbose: expected True or False, got {model.verbose!r:.40}")
    if model.learn in ONLINE_MODES and model.n_init != 1:
        raise InvalidInputError(
            f"n_init: streaming learners see the data once; use n_init=1 with "
            f"learn={model.learn!r}")
    if model.learner_options is not None and not isinstance(model.learner_options, dict):
        raise InvalidInputError(
            f"learner_options: expected a dict of the learner's keyword arguments, got "
            f"{type(model.learner_options).__name__}")
    if model.learn == "gibbs":
        from .gibbs import check_gibbs_hyperparameters

        check_gibbs_hyperparameters(model)  # learner_options, n_init, the sticky HDP
    elif model.learner_options and model.learn not in ONLINE_MODES:
        raise InvalidInputError(
            f"learner_options: only streaming learners {ONLINE_MODES} and learn='gibbs' take "
            f"options; learn={model.learn!r} is configured by the estimator's own arguments")
    elif model.learner_options:
        make_learner(model.learn, model.learner_options)  # an unknown option is an error
    if isinstance(model.transmat_prior, str) and model.transmat_prior == "sticky-hdp" \
            and model.learn != "gibbs":
        raise InvalidInputError(
            f"transmat_prior: {model.transmat_prior!r} is a prior of learn='gibbs' "
            "('sticky-hdp'); pass a Dirichlet concentration (a number or an array) for "
            f"learn={model.learn!r}")
    if model.learn in ONLINE_MODES:
        given = [n for n in ("startprob_prior", "transmat_prior", "emissionprob_prior")
                 if getattr(model, n, None) is not None]
        if given:
            raise InvalidInputError(
                f"{given[0]}: the streaming learners do not use the estimator's Dirichlet "
                "priors; learn='online-em' takes them in learner_options (e.g. "
                f"learner_options={{{given[0]!r}: ...}}), the others have none")
    check_positive_int(model.k_best, "k_best")
    transitions_of(model)  # checks topology, bandwidth and transmat_mask
    check_fixed_argument(getattr(model, "fixed", None))
    if getattr(model, "fixed", None) and model.learn in ONLINE_MODES:
        raise InvalidInputError(
            f"fixed: the streaming learner {model.learn!r} does not keep fixed values; use a "
            "batch mode (learn='em', 'map', 'vb', 'vt' or 'kvt')")
    if model.learn == "em":
        given = [n for n in FLAT_PRIORS if getattr(model, n, None) is not None]
        if given:
            raise InvalidInputError(
                f"{given[0]}: priors are not used by learn='em' (maximum likelihood); "
                "use learn='map', 'vb', 'vt' or 'kvt', or drop the prior")


def check_mixed(model) -> dict:
    """A mixed model's groups (:func:`~hiddenstate.families.mixed.check_spec`), its
    ``covariance_type`` when it has Gaussian columns, and its learning mode (batch only)."""
    spec = check_spec(model.emission)
    if "gaussian" in spec:
        check_choice(model.covariance_type, "covariance_type", COVARIANCE_TYPES)
    if model.learn in ONLINE_MODES:
        raise InvalidInputError(
            f"learn: mixed emissions are learned by the batch modes {MODES}, not the "
            f"streaming learner {model.learn!r}")
    return spec


def as_n_features(value):
    """``n_features`` as given: None, an int, or (several categorical features) a tuple."""
    if value is None or isinstance(value, (int, np.integer)):
        return value
    return tuple(int(w) for w in value)


def check_n_features(value, emission) -> None:
    """None, a positive int, or for categorical emissions a sequence of positive ints (the
    alphabet of each of several features)."""
    if value is None:
        return
    if isinstance(value, str):  # HMM(3, "gaussian", "full"): read by meaning
        meant = ("covariance_type" if value in COVARIANCE_TYPES else
                 "emission" if value in FAMILIES else None)
        raise InvalidInputError(
            f"n_features: expected an integer >= 1, got {value!r}"
            + (f", which is a value of {meant}: pass {meant}={value!r} (the arguments after "
               "n_states go by keyword)" if meant else ""))
    if is_mixed(emission):
        C = n_columns(check_spec(emission))
        if not isinstance(value, (list, tuple, np.ndarray)) or len(value) != C:
            raise InvalidInputError(
                f"n_features: a mixed model of {C} columns takes one entry per column (a "
                f"categorical column's alphabet size, 1 for the others), got {value!r:.60}")
        for w in value:
            check_positive_int(w, "n_features")
        return
    if isinstance(value, (list, tuple, np.ndarray)) and emission == "categorical":
        if len(value) < 2:
            raise InvalidInputError(
                "n_features: a sequence gives the alphabet size of each of several "
                f"categorical features (at least 2), got {value!r:.60}; pass an int for one")
        for w in value:
            check_positive_int(w, "n_features")
        return
    check_positive_int(value, "n_features")

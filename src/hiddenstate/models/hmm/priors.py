"""The priors of the HMM's learning modes: their defaults per mode, the checks of the
priors in force (shapes, ranges; errors name the prior), and the emission family built
with them (variational Bayes' data-dependent defaults filled in)."""

from __future__ import annotations

import numpy as np

from ..._validation import broadcast_param, check_number
from ...errors import InvalidInputError
from ...families import FAMILIES
from ...families.mixed import MixedEmissions, check_spec, group_n_features, is_mixed
from ...families.multicategorical import MultiCategoricalEmissions
from ...learn.online import ONLINE_MODES
from .fixed import emission_fixed

#: priors that make every mode's M-step the maximum-likelihood one
FLAT_PRIORS = {
    "startprob_prior": 1.0, "transmat_prior": 1.0, "emissionprob_prior": 1.0,
    "means_prior": 0.0, "means_weight": 0.0, "covars_prior": 0.0, "covars_weight": 1.0,
    "lambdas_prior": 0.0, "lambdas_weight": 0.0, "weights_prior": 1.0,
}
#: defaults of learn="map" / "vt" / "kvt" (hmmlearn's defaults)
MAP_PRIORS = {**FLAT_PRIORS, "covars_prior": 1e-2}
#: mode-specific defaults that differ from MAP_PRIORS. Variational Bayes needs proper
#: priors: sparse Dirichlet rows, 0.01 for the start and transition rows and 1/W for the
#: emission rows (None here, filled in by ``build_family``; chosen on the panel of
#: experiments/defaults_panel.py: Dirichlet(1) rows left 2 of 17 states in use on POS
#: induction, and 0.01 beat hmmlearn's 1/K on held-out Gaussian returns), one
#: pseudo-observation at the data mean (set in fit), a
#: Wishart/Gamma with n_features degrees of freedom around 1e-3 * identity (hmmlearn's
#: VariationalGaussianHMM defaults), and an exponential prior on Poisson rates with the data
#: mean as its mean.
DEFAULT_PRIORS: dict[str, dict] = {
    "vb": {"startprob_prior": 0.01, "transmat_prior": 0.01, "emissionprob_prior": None,
           "means_weight": 1.0, "covars_prior": 1e-3, "covars_weight": None,
           "lambdas_prior": 0.0, "lambdas_weight": None},
}
#: Gibbs sampling needs proper priors too: VB's for the emission families, but flat
#: Dirichlet(1) rows (the uniform distribution on each row: with VB's sparse 0.01 a
#: two-state chain on 400 symbols mixed so slowly that four chains of 400 draws disagreed,
#: R-hat 1.2 against 1.05 with Dirichlet(1), docs/gibbs.md's example) and a tenth of a
#: pseudo-observation on the Gaussian means: a state without observations draws its mean
#: from the prior, and with VB's weight of one it lands within a standard deviation of the
#: data's mean, so a chain that merged two states seldom splits them again (sticky
#: HDP-HMM, 8 states: 7 found in one chain of two with weight 1, 8 in both with 0.1;
#: experiments/gibbs_number_of_states.py)
DEFAULT_PRIORS["gibbs"] = {**DEFAULT_PRIORS["vb"], "startprob_prior": 1.0,
                           "transmat_prior": 1.0, "emissionprob_prior": 1.0,
                           "means_weight": 0.1}
#: the modes whose priors must be proper (and get VB's data-dependent defaults)
PROPER_PRIOR_MODES = ("vb", "gibbs")
FAMILY_PRIORS = {
    "categorical": ("emissionprob_prior",),
    "gaussian": ("means_prior", "means_weight", "covars_prior", "covars_weight"),
    "poisson": ("lambdas_prior", "lambdas_weight"),
    "gmm": ("weights_prior", "means_prior", "means_weight", "covars_prior", "covars_weight"),
    "multinomial": ("emissionprob_prior",),
}
#: families with Gaussian components (covariance_type, min_covar and the Gaussian priors)
GAUSSIAN = ("gaussian", "gmm")


def prior_in_force(learn: str, name: str, value):
    """The prior hyper-parameter ``name`` (set to ``value``; None: the mode's default) in
    force for the learning mode ``learn``: flat for ``"em"``."""
    if learn == "em":
        return FLAT_PRIORS[name]
    if value is not None:
        return value
    mode_defaults = DEFAULT_PRIORS.get(learn, {})
    return mode_defaults[name] if name in mode_defaults else MAP_PRIORS[name]


def prior_array(name: str, value, shape: tuple[int, ...], combine=()) -> np.ndarray:
    """A prior as finite float64 numbers whose shape broadcasts to ``shape``, also when
    combined with arrays of the shapes ``combine`` (what the M-step adds it to), without
    changing it; errors name the prior. Returned as given, not broadcast (a (K, K) copy of
    a scalar prior would cost memory for nothing)."""
    arr = broadcast_param(name, value, None)
    try:
        ok = np.broadcast_shapes(arr.shape, shape, *combine) == shape
    except ValueError:
        ok = False
    if not ok:
        raise InvalidInputError(
            f"{name}: has shape {arr.shape}, which does not broadcast to the parameter's "
            f"shape {shape}; pass a number or an array of shape {shape}")
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{name}: must be finite, got {value!r:.60}")
    return arr


def scalar_prior(name: str, value, learn: str, minimum: float | None) -> float:
    arr = broadcast_param(name, value, None)
    if arr.size != 1:
        raise InvalidInputError(
            f"{name}: learn={learn!r} takes a single number, got an array of shape "
            f"{arr.shape} (per-state values are for learn='vb')")
    return check_number(float(arr.reshape(())), name, minimum=minimum)


def spherical_prior(value, n_states: int):
    """A per-state ``(K,)`` spherical ``covars_prior`` as a ``(K, 1)`` column, the form
    every code path broadcasts against ``(K, D)`` correctly; anything else as given."""
    arr = np.asarray(value) if not isinstance(value, (int, float)) else None
    if arr is not None and arr.ndim == 1 and arr.shape[0] == n_states and n_states > 1:
        return arr.reshape(n_states, 1)
    return value


def family_options(model) -> dict:
    """Extra constructor arguments of the model's emission family: its priors in force
    (``model.prior``), covariance type, ``n_mix``, ``n_trials``."""
    names = FAMILY_PRIORS[model.emission]
    kwargs = {name: model.prior(name) for name in names}
    if model.emission in GAUSSIAN:
        kwargs.update(covariance_type=model.covariance_type, min_covar=model.min_covar)
    if model.emission == "gmm":
        kwargs["n_mix"] = model.n_mix
    if model.emission == "multinomial":
        kwargs["n_trials"] = model.n_trials
    return kwargs


def check_priors(model, n_features, n_emission_states: int) -> None:
    """The priors in force for ``model``'s mode (``model.prior(name)``): numbers of the
    right shape and range.

    Dirichlet concentrations (``startprob_prior`` (K,), ``transmat_prior`` (K, K),
    ``emissionprob_prior`` (K, W); a scalar or any broadcastable array) must be >= 1 for
    ``"map"``, ``"vt"`` and ``"kvt"`` (below 1 the posterior density is unbounded at
    the boundary of the simplex: there is no mode, the objective would be +inf) and
    > 0 for ``"vb"``. For the point-estimate modes (and the streaming learners, whose
    Gaussian/Poisson M-step uses them) ``means_prior`` broadcasts to (K, D);
    ``means_weight`` and ``covars_weight`` are single numbers, ``means_weight >= 0``;
    ``covars_prior`` is >= 0 and broadcasts to (K,) or (K, D) (spherical), (K, D)
    (diag), (K, D, D) (full) or (D, D) (tied), symmetric positive semi-definite for
    full/tied; ``lambdas_prior`` and ``lambdas_weight`` are >= 0 and broadcast to
    (K, D). Variational Bayes checks its Gaussian/Poisson priors itself (they must be
    proper; see ``docs/learning-modes.md``).
    """
    if model.learn == "em":
        return
    K, Ke, D = model.n_states, n_emission_states, n_features
    vb = model.learn in PROPER_PRIOR_MODES
    if model.learn not in ONLINE_MODES:
        shapes = {"startprob_prior": (K,), "transmat_prior": (K, K),
                  "emissionprob_prior": ((len(D), Ke, max(D)) if isinstance(D, tuple)
                                         else (Ke, D))}
        if model.emission == "gmm":
            shapes["weights_prior"] = (Ke, model.n_mix)
        names = [n for n in shapes if n in ("startprob_prior", "transmat_prior")
                 or n in FAMILY_PRIORS[model.emission]]
        for name in names:
            value = model.prior(name)
            if name == "transmat_prior" and isinstance(value, str) and value == "sticky-hdp":
                continue  # "sticky-hdp": checked with its options (models.hmm.hdp)
            if value is None and name == "emissionprob_prior":   # VB's default: 1/W
                value = 1.0 / (max(D) if isinstance(D, tuple) else D)
            alpha = prior_array(name, value, shapes[name])
            if vb and not np.all(alpha > 0):
                raise InvalidInputError(
                    f"{name}: learn={model.learn!r} needs a proper Dirichlet prior, every "
                    f"concentration > 0 (got {_smallest(alpha)}); pass e.g. {name}=1.0")
            if not vb and not np.all(alpha >= 1):
                raise InvalidInputError(
                    f"{name}: learn={model.learn!r} needs Dirichlet concentrations >= 1 "
                    f"(got {_smallest(alpha)}): below 1 the posterior density is "
                    "unbounded at the edge of the simplex and has no mode. Use >= 1, or "
                    "learn='vb' for a sparse prior (0 < alpha < 1)")
    if vb:
        return
    if model.emission == "gmm":
        build_family(model, D, None, Ke).check_point_priors(model.learn)
    elif model.emission == "gaussian":
        ct = model.covariance_type
        prior_array("means_prior", model.prior("means_prior"), (Ke, D))
        scalar_prior("means_weight", model.prior("means_weight"), model.learn, 0.0)
        scalar_prior("covars_weight", model.prior("covars_weight"), model.learn, None)
        shape = {"spherical": (Ke, D), "diag": (Ke, D), "full": (Ke, D, D),
                 "tied": (D, D)}[ct]
        cp = spherical_prior(model.prior("covars_prior"), Ke) if ct == "spherical" \
            else model.prior("covars_prior")
        psi = prior_array("covars_prior", cp, shape)
        if ct in ("spherical", "diag"):
            bad = not np.all(psi >= 0)
        else:
            mats = np.broadcast_to(psi, shape).reshape(-1, D, D)
            bad = not (np.allclose(mats, mats.transpose(0, 2, 1))
                       and np.linalg.eigvalsh(mats).min() >= -1e-12 * max(
                           1.0, float(np.abs(mats).max())))
        if bad:
            kind = ("non-negative" if ct in ("spherical", "diag")
                    else "symmetric positive semi-definite")
            raise InvalidInputError(
                f"covars_prior: must be {kind} for covariance_type={ct!r} (it is added "
                "to the scatter of every state's covariance estimate); pass e.g. "
                "covars_prior=1e-2")
    elif model.emission == "poisson":
        for name, combine in (("lambdas_prior", ()), ("lambdas_weight", ((Ke, 1),))):
            value = prior_array(name, model.prior(name), (Ke, D), combine)
            if not np.all(value >= 0):
                raise InvalidInputError(
                    f"{name}: learn={model.learn!r} needs {name} >= 0 (got "
                    f"{_smallest(value)}); a negative value can make the estimated rate "
                    "negative. Pass e.g. 0.0")


def build_family(model, n_features, X: np.ndarray | None = None,
                 n_states: int | None = None):
    """The emission family of ``model`` (of ``n_states`` states, default all) with the
    priors in force; with data (fitting), the priors are checked and VB's
    data-dependent prior defaults are filled in (Gaussian ``means_prior``: the data mean,
    ``covars_weight``: ``n_features``; Poisson ``lambdas_weight``: one over the data
    mean)."""
    Ke = model.n_states if n_states is None else n_states
    if is_mixed(model.emission):
        return _fixed(model, mixed_family(model, n_features, X, n_states), X, n_states)
    if X is not None:  # fitting: the priors must be usable
        check_priors(model, n_features, Ke)
    kwargs = family_options(model)
    if model.emission == "gaussian" and model.covariance_type == "spherical":
        kwargs["covars_prior"] = spherical_prior(kwargs["covars_prior"], Ke)
    if model.learn in PROPER_PRIOR_MODES and model.emission in GAUSSIAN:
        if model.means_prior is None and X is not None:
            kwargs["means_prior"] = column_means(X)
        if model.covars_weight is None:
            kwargs["covars_weight"] = float(n_features)
    if isinstance(n_features, tuple):  # several categorical features
        prior = kwargs.get("emissionprob_prior")
        if prior is None:   # VB's default: 1/W of each feature's alphabet
            prior = 1.0 / np.array(n_features, dtype=np.float64)[:, None, None]
        family = MultiCategoricalEmissions(Ke, n_features, emissionprob_prior=prior)
        return _fixed(model, family, X, n_states)
    if kwargs.get("emissionprob_prior", 1.0) is None:     # VB's default: 1/W
        kwargs["emissionprob_prior"] = 1.0 / n_features
    if model.learn in PROPER_PRIOR_MODES and model.emission == "poisson" \
            and model.lambdas_weight is None:
        mean = column_means(X) if X is not None else np.ones(n_features)
        kwargs["lambdas_weight"] = 1.0 / np.where(mean > 0, mean, 1.0)
    return _fixed(model, FAMILIES[model.emission](Ke, n_features, **kwargs), X, n_states)


def _fixed(model, family, X, n_states):
    """``family`` with the model's fixed emission entries (``HMM(fixed=...)``) when it is
    built to fit (``X`` given) all the states (they act in the M-steps only)."""
    fixed = emission_fixed(model)
    if fixed and X is not None and n_states is None:
        family.fix(fixed)
    return family


class _Group:
    """A mixed model as one of its column groups sees it: ``emission`` the group's family,
    no fixed entries (the mixed family gives each group its own), everything else the
    model's (priors, ``learn``, ``covariance_type``...)."""

    fixed = None

    def __init__(self, model, kind: str):
        self._model = model
        self.emission = kind

    def __getattr__(self, name):
        return getattr(self._model, name)


def mixed_family(model, n_features, X: np.ndarray | None = None,
                 n_states: int | None = None) -> MixedEmissions:
    """The :class:`~hiddenstate.families.mixed.MixedEmissions` of ``model`` (emission a dict
    of families to columns): each group's family built as :func:`build_family` builds one
    (its priors in force and, with data, checked and VB's defaults from its columns)."""
    spec = check_spec(model.emission)
    Ke = model.n_states if n_states is None else n_states
    per = group_n_features(spec, n_features)
    parts = None if X is None else MixedEmissions(Ke, spec, {}).group_data(X)
    groups = {kind: build_family(_Group(model, kind), per[kind],
                                 None if parts is None else parts[kind], n_states)
              for kind in spec}
    return MixedEmissions(Ke, spec, groups)


def column_means(X: np.ndarray) -> np.ndarray:
    """Mean of each column over its observed (not NaN) entries; 0 for a column with none."""
    seen = ~np.isnan(X)
    return np.where(seen, X, 0.0).sum(axis=0) / np.maximum(seen.sum(axis=0), 1)


def _smallest(arr: np.ndarray) -> str:
    return f"{float(arr.min()):g}" if arr.size else "an empty array"

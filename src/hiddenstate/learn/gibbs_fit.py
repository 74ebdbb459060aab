r"""``learn="gibbs"`` in the estimators: what every model fitted by Gibbs sampling holds and
offers (:class:`PosteriorSampling`, a base of HMM, PROPS, PCFG, PLCG, NaiveBayesHidden,
TreeNet and ProgramModel), and the one fit routine they call (:func:`fit_gibbs`).

A model fitted with ``learn="gibbs"`` has

- its usual fitted attributes set to the **posterior mean** of the relabelled draws (as
  ``learn="vb"`` sets them to its posterior mean): every method that reads the parameters
  (``predict``, ``predict_proba``, ``sample``, decoding...) uses that point estimate;
- ``posterior_samples_``: the relabelled draws of every parameter, ``{name: (n_chains,
  n_draws, *shape)}`` with the names of the fitted attributes (the model documents them);
- ``sample_log_joint_``: :math:`\log p(X, z, \theta)` of every draw (up to the prior's
  constant), and ``best_sample_``: the draw of highest log joint (a mode-seeking estimate,
  by name like ``posterior_samples_``);
- ``sample_stats_``: per-draw quantities the model reports (the number of states in use of
  a sticky HDP-HMM);
- ``convergence_``: R-hat and effective sample sizes per parameter
  (:func:`hiddenstate.learn.diagnostics.convergence`; None without ArviZ);
- ``monitor_``: the log joint of every sweep of chain 0 (``converged``: the R-hat and ESS
  verdict).

**Scores are posterior predictive.** ``score_samples(X)[i]`` is
:math:`\log \frac1S \sum_s p(x_i \mid \theta_s)` over the ``S`` kept draws (computed by
log-sum-exp), the posterior predictive probability of each item on its own, and
``score(X)`` their sum (the log pointwise predictive density, "lppd", of Gelman, Hwang &
Vehtari 2014): a held-out score that averages over the posterior's uncertainty instead of
plugging in one estimate. It costs one pass over ``X`` per draw. Deleting
``posterior_samples_`` returns to the plug-in log-likelihood at the fitted attributes, as
does any other ``learn``.
"""

from __future__ import annotations

import contextlib
import functools
import warnings

import numpy as np

from ..errors import InvalidInputError, NotFittedError
from . import gibbs
from .monitor import ConvergenceMonitor

#: the estimators' options of ``learner_options`` on top of the sampler's
#: (:data:`hiddenstate.learn.gibbs.DEFAULT_OPTIONS`): ``check_convergence`` (compute R-hat
#: and ESS with ArviZ at the end of ``fit`` and warn)
COMMON_OPTIONS = {"check_convergence": True}
#: the attributes a Gibbs fit sets
GIBBS_ATTRIBUTES = ("posterior_samples_", "sample_log_joint_", "sample_stats_",
                    "convergence_")


def gibbs_options(model, extra: dict | None = None) -> dict:
    """The sampler's options of ``model.learner_options`` (validated, defaults filled in;
    errors name the option)."""
    return gibbs.check_options(getattr(model, "learner_options", None),
                               {**COMMON_OPTIONS, **(extra or {})})


def check_learner_options(model) -> None:
    """``learner_options`` (the options of ``learn="gibbs"``, the only batch mode of these
    models that takes any) and ``n_init`` under it (chains replace restarts); shared by the
    grammar, program, tree-network and NaiveBayesHidden estimators."""
    if model.learn == "gibbs":
        if getattr(model, "n_init", 1) != 1:
            raise InvalidInputError(
                "n_init: learn='gibbs' runs chains, not restarts; use n_init=1 and "
                "learner_options={'n_chains': ...}")
        gibbs_options(model)
    elif model.learner_options is not None:
        raise InvalidInputError(
            f"learner_options: only learn='gibbs' takes options (got learn={model.learn!r}); "
            "drop learner_options")


def fit_gibbs(model, problem, start, which: str, rng, to_attrs, callback=None,
              extra: dict | None = None) -> gibbs.GibbsResult:
    """Run :func:`hiddenstate.learn.gibbs.sample` for ``model`` and store its draws.

    ``to_attrs(params)`` turns one draw (parameters per block) into the model's attribute
    form ``{name: array}``; the caller assigns the posterior mean (``result.mean``) as its
    fitted parameters afterwards.

    Parameters
    ----------
    model : estimator
        The model (its ``learner_options`` and ``verbose``).
    problem : Problem
        The model on its data.
    start : callable
        ``start(c)``: chain ``c``'s starting parameters.
    which : str
        The learned blocks' letters.
    rng : numpy.random.Generator
        The model's generator (the chains' generators are spawned from it).
    to_attrs : callable
        One draw to the model's names.
    callback : callable or None, default=None
        ``callback(sweep, log_joint)``.
    extra : dict or None, default=None
        The model's own options with their defaults.

    Returns
    -------
    hiddenstate.learn.gibbs.GibbsResult
        The run.
    """
    opts = gibbs_options(model, extra)
    result = gibbs.sample(problem, start, which=which, n_samples=opts["n_samples"],
                          burn_in=opts["burn_in"], thin=opts["thin"],
                          n_chains=opts["n_chains"], n_jobs=opts["n_jobs"], rng=rng,
                          callback=callback)
    draws = [[to_attrs(d) for d in chain] for chain in result.draws]
    model.posterior_samples_ = {
        name: np.stack([np.stack([np.asarray(d[name], dtype=np.float64) for d in chain])
                        for chain in draws]) for name in draws[0][0]}
    model.sample_log_joint_ = result.log_joint
    model.sample_stats_ = dict(result.extras)
    monitor = ConvergenceMonitor(-np.inf, opts["n_samples"], bool(getattr(model, "verbose",
                                                                         False)))
    monitor.history = [float(v) for v in result.traces[0]]
    model.convergence_ = None
    if opts["check_convergence"]:
        model.convergence_ = check_convergence(model.posterior_samples_)
        monitor.converged = bool(model.convergence_ is not None
                                 and model.convergence_["ok"])
    model.monitor_ = monitor
    return result


def check_convergence(samples: dict) -> dict | None:
    """R-hat and ESS of the draws with a warning when they fail (None, with a warning,
    when ArviZ is missing)."""
    from ..errors import MissingDependencyError
    from . import diagnostics
    from .fit_warnings import user_stacklevel

    try:
        report = diagnostics.convergence(samples)
    except MissingDependencyError:
        from ..errors import ConvergenceWarning

        warnings.warn("learn='gibbs': R-hat and effective sample sizes were not computed "
                      "(ArviZ is not installed: pip install 'hiddenstate[gibbs]', or pass "
                      "learner_options={'check_convergence': False})", ConvergenceWarning,
                      stacklevel=user_stacklevel())
        return None
    diagnostics.warn_convergence(report, stacklevel=user_stacklevel() + 1)
    return report


def clear_gibbs(model) -> None:
    """Delete what a previous Gibbs fit stored."""
    for name in GIBBS_ATTRIBUTES:
        model.__dict__.pop(name, None)


#: key prefixes of the draws in a saved model's arrays
_SAVED = {"posterior_samples_": "posterior_samples_.", "sample_stats_": "sample_stats_."}


def saved_arrays(model) -> dict:
    """The arrays a saved model adds for its Gibbs draws (none after another mode):
    ``posterior_samples_.<name>``, ``sample_stats_.<name>`` and ``sample_log_joint_``, so
    that a loaded model scores (posterior predictive) as the saved one did."""
    samples = model.__dict__.get("posterior_samples_")
    if samples is None:
        return {}
    out = {"sample_log_joint_": np.asarray(model.sample_log_joint_, dtype=np.float64)}
    for attr, prefix in _SAVED.items():
        for name, value in (model.__dict__.get(attr) or {}).items():
            out[prefix + name] = np.asarray(value)
    return out


def restore_draws(model, arrays: dict) -> dict:
    """Set the draws :func:`saved_arrays` wrote on a loaded ``model``; return the other
    arrays. Raises :class:`~hiddenstate.errors.InvalidInputError` when they are
    inconsistent (shapes that do not share the chains and draws of ``sample_log_joint_``,
    values that are not finite)."""
    rest = {k: v for k, v in arrays.items()
            if k != "sample_log_joint_" and not any(k.startswith(p) for p in _SAVED.values())}
    if "sample_log_joint_" not in arrays:
        if len(rest) != len(arrays):
            raise InvalidInputError("posterior_samples_: saved without sample_log_joint_")
        return rest
    lj = np.asarray(arrays["sample_log_joint_"], dtype=np.float64)
    found = {attr: {k[len(p):]: np.asarray(v) for k, v in arrays.items() if k.startswith(p)}
             for attr, p in _SAVED.items()}
    if lj.ndim != 2 or not found["posterior_samples_"]:
        raise InvalidInputError("posterior_samples_: expected draws (n_chains, n_draws, ...) "
                                "and their sample_log_joint_ (n_chains, n_draws)")
    for attr, values in found.items():
        for name, value in values.items():
            if value.shape[:2] != lj.shape or not np.all(np.isfinite(value)):
                raise InvalidInputError(
                    f"{attr}[{name!r}]: expected finite draws of shape {lj.shape} + the "
                    f"parameter's, got {value.shape}")
    model.posterior_samples_ = {k: v.astype(np.float64) for k, v in
                                found["posterior_samples_"].items()}
    model.sample_stats_ = found["sample_stats_"]
    model.sample_log_joint_ = lj
    model.convergence_ = None
    return rest


def check_draws(model, check) -> None:
    """Check every draw of a loaded model's ``posterior_samples_`` as its parameters: set
    each in turn (``_gibbs_assign``) and run ``check`` (the model's own parameter checks),
    so that a file whose draws lack a parameter or hold an invalid one is refused at load
    rather than when it scores. The model's attributes are restored afterwards. Raises
    :class:`~hiddenstate.errors.InvalidInputError` naming ``posterior_samples_``."""
    samples = model.__dict__.get("posterior_samples_")
    if not samples:
        return
    with _restored(model):
        for draw in iter_draws(samples):
            try:
                model._gibbs_assign(draw)
            except KeyError as exc:
                raise InvalidInputError(
                    f"posterior_samples_: no draws of {exc.args[0]!r}, which the model's "
                    "parameters need") from None
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"posterior_samples_: {exc}") from None
            try:
                check()
            except InvalidInputError as exc:
                raise InvalidInputError(f"posterior_samples_: a draw is invalid ({exc})") \
                    from None


@contextlib.contextmanager
def _restored(model):
    """Put back every attribute of ``model`` on leaving (it is set to draw after draw)."""
    saved = dict(model.__dict__)
    try:
        yield
    finally:
        model.__dict__.clear()
        model.__dict__.update(saved)


def posterior_predictive(method):
    """Make a ``score_samples`` method posterior predictive after a Gibbs fit.

    With ``posterior_samples_`` present, the model's parameters are set to each draw in
    turn (``_gibbs_assign``), ``method`` scores the items under it, and the result is
    :math:`\\log \\frac1S \\sum_s p(x_i \\mid \\theta_s)` per item (log-sum-exp); the
    model's attributes are restored afterwards (so the model must not be used from another
    thread meanwhile). Without it, ``method`` as it is.
    """
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        samples = self.__dict__.get("posterior_samples_")
        if samples is None or getattr(self, "learn", None) != "gibbs":
            return method(self, *args, **kwargs)
        rows = []
        with _restored(self):
            for draw in iter_draws(samples):
                self._gibbs_assign(draw)
                rows.append(np.asarray(method(self, *args, **kwargs), dtype=np.float64))
        rows = np.stack(rows)
        top = rows.max(axis=0)
        safe = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore"):
            return safe + np.log(np.mean(np.exp(rows - safe), axis=0))

    return wrapper


def iter_draws(samples: dict):
    """Every draw of ``samples`` (``{name: (n_chains, n_draws, ...)}``) as ``{name:
    array}``, chain by chain."""
    first = next(iter(samples.values()))
    for c in range(first.shape[0]):
        for d in range(first.shape[1]):
            yield {name: value[c, d] for name, value in samples.items()}


class PosteriorSampling:
    """What a model fitted with ``learn="gibbs"`` offers (see the module docstring): the
    best draw, ArviZ's ``InferenceData`` and the convergence summary. A model provides
    ``_gibbs_assign(draw)``: set its parameters to one draw (by the names of
    ``posterior_samples_``)."""

    def _gibbs_samples(self) -> dict:
        samples = self.__dict__.get("posterior_samples_")
        if samples is None:
            raise NotFittedError(
                f"This {type(self).__name__} holds no posterior draws; fit it with "
                "learn='gibbs'")
        return samples

    @property
    def best_sample_(self) -> dict:
        """The draw of highest log joint, by the names of ``posterior_samples_``.

        The log joint is :math:`\\log p(X, z, \\theta)` (``sample_log_joint_``); the draw
        is relabelled like the others.
        """
        samples = self._gibbs_samples()
        c, d = np.unravel_index(int(np.argmax(self.sample_log_joint_)),
                                self.sample_log_joint_.shape)
        return {name: value[c, d].copy() for name, value in samples.items()}

    def to_inference_data(self):
        """Return the posterior draws as an ArviZ ``InferenceData``.

        ``posterior``: one variable per entry of ``posterior_samples_``; ``sample_stats``:
        ``lp`` (the log joint of every draw) and the entries of ``sample_stats_``. Plot them
        with ArviZ (``arviz.plot_trace``, ``arviz.plot_rank``) or summarise them
        (``arviz.summary``).

        Returns
        -------
        arviz.InferenceData
            The draws.

        Raises
        ------
        NotFittedError
            Unless the model was fitted with ``learn="gibbs"``.
        hiddenstate.errors.MissingDependencyError
            If ArviZ is not installed (``pip install 'hiddenstate[gibbs]'``).
        """
        from .diagnostics import inference_data

        samples = self._gibbs_samples()
        return inference_data(samples, self.sample_log_joint_,
                              self.__dict__.get("sample_stats_"))

"""Saving and restoring the estimators of :mod:`hiddenstate.models` (HMM, PROPS, PCFG, PLCG,
NaiveBayesHidden, TreeNet) in the bundle format of :mod:`hiddenstate._bundle`.

A model takes part through a small protocol: ``learned_arrays()`` / ``learned_scalars()``
(what is saved), ``set_learned(arrays, scalars)`` (what a load assigns), ``_check_hyper()``,
``_check_learned()`` (or ``_check_loaded()``), ``get_params`` and the constructor. A model
with sub-bundles (PROPS: its sources) adds ``saved_params(parts)`` and the class method
``from_saved_params(params, part)``.

``model.json`` holds the class name, the hyper-parameters, ``n_features_``, the convergence
monitor and the learned scalars; the arrays go in the checked archive. :func:`restore` is
given the class (by :func:`hiddenstate.load`, whose registry maps the saved class name to
it), so this module imports no estimator.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .._bundle import (
    from_json,
    is_int,
    part_path,
    read_bundle,
    reading,
    short_repr,
    to_json,
    write_bundle,
)
from ..errors import HiddenStateError, ModelFileError
from ..learn.gibbs_fit import check_draws, restore_draws, saved_arrays
from ..learn.monitor import ConvergenceMonitor

#: ``format`` of a saved model's ``model.json``
FORMAT = "hiddenstate-model"


def save(model, path) -> None:
    """Write ``model`` to the directory ``path`` (created if needed), atomically. A model
    with ``saved_params(parts)`` (PROPS) chooses the hyper-parameters written and adds the
    writers of its sub-bundles to ``parts``; ``from_saved_params(params, part)`` reads them
    back (``part(name)``: the sub-bundle's directory)."""
    arrays = model.learned_arrays()  # NotFittedError / InvalidInputError before any write
    arrays.update(saved_arrays(model))  # the draws of learn="gibbs"
    parts: dict[str, Callable[[Path], None]] = {}
    params = (model.saved_params(parts) if hasattr(model, "saved_params")
              else model.get_params(deep=False))
    if not isinstance(params.get("random_state"), (int, type(None))):
        params["random_state"] = None
    monitor = getattr(model, "monitor_", None)  # None: parameters set by hand, never fitted
    meta = {
        "class": type(model).__name__,
        "params": {k: to_json(v) for k, v in params.items()},
        "n_features_": (list(map(int, model.n_features_))
                        if isinstance(model.n_features_, tuple) else int(model.n_features_)),
        "monitor": {"history": [] if monitor is None else
                    [to_json(v) for v in monitor.history],
                    "converged": False if monitor is None else bool(monitor.converged)},
        "scalars": {k: to_json(v) for k, v in model.learned_scalars().items()},
    }
    write_bundle(path, FORMAT, meta, arrays, parts)


def restore(path, cls):
    """The model of class ``cls`` saved by :func:`save` in ``path``; a malformed, tampered
    or inconsistent directory raises :class:`~hiddenstate.errors.ModelFileError`."""
    path = Path(path)
    meta, arrays = read_bundle(path, FORMAT)
    where = path / "model.json"
    if meta.get("class") != cls.__name__:
        raise ModelFileError(f"{where}: holds a {short_repr(meta.get('class'))}, not a "
                             f"{cls.__name__}")
    with reading(where, "invalid hyper-parameters"):
        params = {k: from_json(v) for k, v in dict(meta["params"]).items()}
        model = (cls.from_saved_params(params, lambda name: part_path(path, meta, name))
                 if hasattr(cls, "from_saved_params") else cls(**params))
        model._check_hyper()
        n_features = meta["n_features_"]
        if isinstance(n_features, list) and n_features:  # several categorical features
            if not all(is_int(w) and w >= 1 for w in n_features):
                raise ModelFileError(f"{where}: n_features_: expected alphabet sizes >= 1, "
                                     f"got {short_repr(n_features)}")
            n_features = tuple(n_features)
        elif not is_int(n_features) or n_features < 1:
            raise ModelFileError(f"{where}: n_features_: expected an integer >= 1, got "
                                 f"{short_repr(n_features)}")
        history = [float(from_json(v)) for v in meta["monitor"]["history"]]
        converged = meta["monitor"]["converged"]
        if not isinstance(converged, bool):
            raise ModelFileError(f"{where}: monitor.converged: expected true or false")
        scalars = {k: from_json(v) for k, v in dict(meta.get("scalars", {})).items()}
    model.n_features_ = n_features
    try:
        model.monitor_ = ConvergenceMonitor(model.tol, model.n_iter, False, history, converged)
        model.set_learned(restore_draws(model, arrays), scalars)
        check = getattr(model, "_check_loaded", model._check_learned)
        check()
        check_draws(model, check)
    except HiddenStateError as exc:
        raise ModelFileError(f"{path}: invalid parameters ({exc})") from exc
    return model

"""Saving and loading a :class:`~hiddenstate.programs.ProgramModel`.

A program is Python code, so it is not saved: what is saved is the model's hyper-parameters
and its switch probabilities keyed by switch name and outcome (``model.json`` lists every
switch with its outcomes, ``arrays.npz`` holds the probabilities in that order; VB
posteriors likewise), through :func:`hiddenstate._bundle.write_bundle` (JSON + npz, SHA-256
manifest, no pickle). :func:`restore` reads them back *into a program*: the same program,
or any program that declares those switches with those outcomes (in any order); without
one, a built-in example program of the saved name is rebuilt from the saved switches
(:func:`~hiddenstate.programs.examples.builtin_program`). Switch names and outcomes must be
JSON values: strings, numbers, booleans, None and tuples of these (saved as lists and read
back as tuples). :func:`hiddenstate.load` calls :func:`restore`; this module imports no
estimator (the class is passed in).
"""

from __future__ import annotations

import numpy as np

from .._bundle import from_json, read_bundle, reading, to_json, write_bundle
from ..errors import HiddenStateError, InvalidInputError, ModelFileError
from ..learn.gibbs_fit import check_draws, restore_draws, saved_arrays
from ..learn.monitor import ConvergenceMonitor
from .examples import builtin_program

FORMAT = "hiddenstate-program-params"


def _json_name(value, what: str):
    if isinstance(value, tuple):
        return [_json_name(v, what) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    raise ModelFileError(
        f"cannot save {what} {value!r}: switch names and outcomes must be strings, numbers, "
        "booleans, None or tuples of these to be saved")


def _from_json_name(value):
    if isinstance(value, list):
        return tuple(_from_json_name(v) for v in value)
    return value


def _table_entries(probs: dict, table) -> tuple[list, np.ndarray]:
    entries, arrays = [], []
    for name, p in probs.items():
        outcomes = table.outcomes(name)
        entries.append([_json_name(name, "switch name"),
                        [_json_name(v, f"outcome of switch {name!r}") for v in outcomes]])
        arrays.append(np.asarray(p, dtype=np.float64))
    flat = np.concatenate(arrays) if arrays else np.zeros(0)
    return entries, flat


def save(model, path) -> None:
    """Write ``model`` (fitted, or with probabilities set) to the directory ``path``."""
    if not hasattr(model, "probs_"):
        raise ModelFileError(
            "model: nothing to save; fit it or set switch probabilities (set_probs) first")
    table = model.program.switches
    model._theta()  # validates probs_
    params = model.get_params(deep=False)
    params.pop("program")
    if not isinstance(params.get("random_state"), (int, type(None))):
        params["random_state"] = None
    if params.get("anneal") is not None:
        params["anneal"] = [float(b) for b in params["anneal"]]
    switches, flat = _table_entries(model.probs_, table)
    post_switches, post = _table_entries(getattr(model, "posterior_", {}), table)
    monitor = getattr(model, "monitor_", None)
    meta = {
        "class": type(model).__name__,
        "program": model.program.name,
        "params": {k: to_json(v) for k, v in params.items()},
        "switches": switches,
        "posterior_switches": post_switches,
        "monitor": None if monitor is None else {
            "history": [to_json(v) for v in monitor.history],
            "converged": bool(monitor.converged)},
    }
    write_bundle(path, FORMAT, meta, {"probs": flat, "posterior": post,
                                      **saved_arrays(model)})


def _read_entries(entries, flat: np.ndarray, program, what: str, check: bool) -> dict:
    table = program.switches
    out, pos = {}, 0
    for entry in entries:
        name = _from_json_name(entry[0])
        outcomes = [_from_json_name(v) for v in entry[1]]
        values = flat[pos:pos + len(outcomes)]
        pos += len(outcomes)
        try:
            sid = table.instance_id(name)
        except HiddenStateError as exc:
            raise ModelFileError(
                f"{what}: the program {program.name!r} has no switch {name!r} ({exc}); load "
                "into the program the model was saved from") from None
        spec = table.specs[sid]
        if len(values) != len(outcomes) or sorted(map(repr, outcomes)) != \
                sorted(map(repr, spec.outcomes)):
            raise ModelFileError(
                f"{what}: switch {name!r} has outcomes {list(spec.outcomes)!r} in the program "
                f"but {outcomes!r} in the file; load into the program the model was saved "
                "from")
        row = np.empty(len(outcomes))
        row[[spec.index[v] for v in outcomes]] = values
        out[table.names[sid]] = spec.check_probs(row, f"{what}: switch {name!r}") if check \
            else row
    if pos != len(flat):
        raise ModelFileError(f"{what}: {len(flat)} values for {pos} switch outcomes")
    return out


def restore(path, cls, program=None):
    """The model of class ``cls`` (:class:`~hiddenstate.programs.ProgramModel`) saved by
    :func:`save` in ``path``, its switches loaded into ``program``. Without ``program``, the
    built-in example program of the saved name is rebuilt from the saved switches (see
    :func:`~hiddenstate.programs.examples.builtin_program`); for any other program
    :class:`~hiddenstate.errors.InvalidInputError` names ``program`` and the fix."""
    meta, arrays = read_bundle(path, FORMAT, "program model")
    if meta.get("class") != "ProgramModel":
        raise ModelFileError(f"{path}: unknown class {meta.get('class')!r}")
    if program is None:
        name = meta.get("program")
        with reading(path):
            switches = [(_from_json_name(e[0]), [_from_json_name(v) for v in e[1]])
                        for e in meta["switches"]]
        program = builtin_program(name, switches)
        if program is None:
            raise InvalidInputError(
                f"program: {path} holds the switch probabilities of the program "
                f"{str(name)[:80]!r}, which is not one of the built-in example programs (a "
                "program is code, so it is not saved); pass the program it was saved from: "
                "hiddenstate.load(path, program=my_program)")
    with reading(path):
        params = {k: from_json(v) for k, v in dict(meta["params"]).items()}
        model = cls(program, **params)
        model._check_hyper()
        probs = _read_entries(meta["switches"], arrays["probs"], program, str(path), True)
        posterior = _read_entries(meta["posterior_switches"], arrays["posterior"], program,
                                  str(path), False)
        monitor = meta["monitor"]
    if any(np.any(~np.isfinite(q)) or np.any(q < 0) for q in posterior.values()):
        raise ModelFileError(f"{path}: posterior concentrations must be finite and >= 0")
    model.probs_ = probs
    model.posterior_ = posterior
    try:
        restore_draws(model, arrays)
        check_draws(model, model._theta)
    except HiddenStateError as exc:
        raise ModelFileError(f"{path}: invalid posterior draws ({exc})") from exc
    if monitor is not None:
        model.monitor_ = ConvergenceMonitor(
            model.tol, model.n_iter, False, [float(from_json(v)) for v in monitor["history"]],
            bool(monitor["converged"]))
    return model

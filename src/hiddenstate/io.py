"""Deprecated (removed after 0.2): what ``hiddenstate.io`` held now lives in three places.

- reading a saved estimator: :func:`hiddenstate.load` (:mod:`hiddenstate.persist`), for every
  estimator, not only the five of :mod:`hiddenstate.models`;
- writing one: ``model.save(path)`` (for the models, :func:`hiddenstate.models._saving.save`);
- the file format (JSON + npz bundles, manifest, checksums, atomic writes):
  :mod:`hiddenstate._bundle`, which imports no estimator; ``arrays_path`` is also
  :func:`hiddenstate.persist.arrays_path`.

Every name of the old module still works for one release and issues a ``FutureWarning``
that names its new place. (The split removed the import cycle between this module and the
models: see ``docs/architecture.md``.)
"""

from __future__ import annotations

import warnings

from . import _bundle, persist
from .models import _saving

#: old name -> (module that holds it now, the name to use in the warning)
_MOVED = {
    **{name: (_bundle, f"hiddenstate._bundle.{name}") for name in (
        "VERSION", "READS", "MAX_JSON_BYTES", "MAX_JSON_DEPTH", "to_json", "from_json",
        "reading", "read_json", "write_bundle", "read_meta", "part_path", "read_bundle")},
    "arrays_path": (persist, "hiddenstate.persist.arrays_path"),
    "FORMAT": (_saving, "hiddenstate.models._saving.FORMAT"),
}


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"hiddenstate.io.{old} is deprecated; use {new}", FutureWarning,
                  stacklevel=3)


def load(path):
    """Deprecated alias of :func:`hiddenstate.load`."""
    _deprecated("load", "hiddenstate.load")
    return persist.load(path)


def save(model, path) -> None:
    """Deprecated alias of ``model.save(path)``."""
    _deprecated("save", "model.save(path)")
    model.save(path)


def __getattr__(name: str):
    if name in _MOVED:
        module, new = _MOVED[name]
        _deprecated(name, new)
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

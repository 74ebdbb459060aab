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
    """Load a saved estimator (deprecated alias of :func:`hiddenstate.load`).

    Removed after 0.2; issues a ``FutureWarning``.

    Parameters
    ----------
    path : str or os.PathLike
        The directory written by the estimator's ``save``.

    Returns
    -------
    object
        The estimator.

    Raises
    ------
    hiddenstate.errors.ModelFileError
        If the directory does not hold a valid saved model.

    Examples
    --------
    >>> import warnings
    >>> import hiddenstate as hs
    >>> from hiddenstate import io
    >>> model = hs.HMM(n_states=2, n_features=3)
    >>> model.startprob_ = [0.6, 0.4]
    >>> model.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
    >>> model.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
    >>> model.save("my-model")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     restored = io.load("my-model")
    >>> type(restored).__name__, caught[0].category.__name__
    ('HMM', 'FutureWarning')
    """
    _deprecated("load", "hiddenstate.load")
    return persist.load(path)


def save(model, path) -> None:
    """Save an estimator (deprecated alias of ``model.save(path)``).

    Removed after 0.2; issues a ``FutureWarning``.

    Parameters
    ----------
    model : object
        A hiddenstate estimator.
    path : str or os.PathLike
        The directory to write.

    Examples
    --------
    >>> import warnings
    >>> import hiddenstate as hs
    >>> from hiddenstate import io
    >>> model = hs.HMM(n_states=2, n_features=3)
    >>> model.startprob_ = [0.6, 0.4]
    >>> model.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
    >>> model.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     io.save(model, "my-model")
    >>> type(hs.load("my-model")).__name__, caught[0].category.__name__
    ('HMM', 'FutureWarning')
    """
    _deprecated("save", "model.save(path)")
    model.save(path)


def __getattr__(name: str):
    if name in _MOVED:
        module, new = _MOVED[name]
        _deprecated(name, new)
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

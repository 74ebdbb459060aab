"""Black-box predictive sources for PROPS: the protocol (:class:`Source`), an adapter for a
plain callable, an interpolated Kneser-Ney n-gram model and (with the ``torch`` extra) an
LSTM language model (loaded on first use)."""

import sys
from pathlib import Path

from .._bundle import peek
from ..errors import ModelFileError
from .base import (
    MISSING,
    CallableSource,
    DensitySource,
    ProtocolDensitySource,
    ProtocolSource,
    Source,
    as_source,
    check_distribution,
    require_missing_support,
    sequence_log_probs,
)
from .kneser_ney import KneserNeySource

__all__ = ["MISSING", "CallableSource", "DensitySource", "KneserNeySource", "LSTMSource",
           "ProtocolDensitySource", "ProtocolSource", "Source", "as_source",
           "check_distribution", "is_savable", "load_source", "require_missing_support",
           "sequence_log_probs"]


def __getattr__(name: str):
    # the LSTM source is loaded on first use (it builds on the optional torch extra)
    if name in ("LSTMSource", "MissingDependencyError"):
        from . import lstm

        return getattr(lstm, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_savable(src) -> bool:
    """Tell whether :func:`load_source` reads back what ``src.save`` writes.

    Parameters
    ----------
    src : object
        A source.

    Returns
    -------
    bool
        True for exactly a :class:`KneserNeySource` or an :class:`LSTMSource` (not a
        subclass, whose behaviour a load would lose).

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.sources import CallableSource, KneserNeySource, is_savable
    >>> is_savable(KneserNeySource()), is_savable(CallableSource(np.ones, n_symbols=1))
    (True, False)
    """
    lstm = sys.modules.get(f"{__name__}.lstm")
    return type(src) is KneserNeySource or (lstm is not None and type(src) is lstm.LSTMSource)


def load_source(path) -> Source:
    """Load a source saved with its ``save(path)``.

    The class comes from a fixed list and the files are JSON + npz: loading runs no code
    from them. :func:`hiddenstate.load` reads a saved source too; this function differs in
    accepting *only* a source (a saved model is a
    :class:`~hiddenstate.errors.ModelFileError`), which is what PROPS needs for its
    sub-bundles and ``hiddenstate personalize --load-source`` for its argument.

    Parameters
    ----------
    path : str or os.PathLike
        The directory the source was saved to.

    Returns
    -------
    Source
        A :class:`KneserNeySource` or an :class:`LSTMSource`.

    Raises
    ------
    hiddenstate.errors.ModelFileError
        If the directory holds no saved source, another model, or a modified or corrupted
        one.
    hiddenstate.errors.MissingDependencyError
        If it holds an :class:`LSTMSource` and torch is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> from hiddenstate.sources import KneserNeySource, load_source
    >>> KneserNeySource(order=2).fit(np.array([0, 1, 2, 0, 1, 2])).save("bigram")
    >>> load_source("bigram").describe()
    '2-gram interpolated Kneser-Ney (W=3)'
    """
    _, name = peek(path, "source")  # the class's own load checks the format
    if name == "KneserNeySource":
        return KneserNeySource.load(path)
    if name == "LSTMSource":
        from .lstm import LSTMSource

        return LSTMSource.load(path)
    raise ModelFileError(f"{Path(path) / 'model.json'}: unknown source class "
                         f"{str(name)[:80]!r}")

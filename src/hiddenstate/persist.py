"""``hiddenstate.load(path)``: one function that restores every saved estimator.

Every estimator saves itself with ``model.save(path)`` as a bundle of the format of
:mod:`hiddenstate._bundle` (a directory: ``model.json`` + a checked ``.npz``, never pickle).
:func:`load` reads the ``format`` and ``class`` written in ``model.json`` and hands the
directory to the reader of that estimator, from a fixed registry (loading runs no code
from the file):

- ``hiddenstate-model``: ``HMM``, ``HSMM``, ``PROPS``, ``PCFG``, ``PLCG``, ``TreeNet``,
  ``NaiveBayesHidden``, ``RegressionHMM``,
  read by :func:`hiddenstate.models._saving.restore` (format versions 1 and 2; a PROPS
  model's sources come back with it);
- ``hiddenstate-program-params``: ``ProgramModel``, read by
  :func:`hiddenstate.programs.saving.restore`; a program is code and is not saved, so
  ``program=`` gives it (or a built-in example program of the saved name is rebuilt);
- ``hiddenstate-lm``: ``BlockedHMMLM``, read by :func:`hiddenstate.lm.model.restore` (needs
  torch, imported only for such a file); a checkpoint loads as its model without the
  training state (:func:`hiddenstate.lm.load_checkpoint` resumes training);
- ``hiddenstate-source``: ``KneserNeySource``, ``LSTMSource``, read by
  :func:`hiddenstate.sources.load_source`.

A directory written by ``hiddenstate fit`` holds a model bundle too (plus ``cli.json``);
:func:`load` returns its model (:func:`hiddenstate.cli.load_model_dir` also reads the
command line's files).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ._bundle import READS, VERSION, arrays_path, peek, short_repr
from .errors import InvalidInputError, MissingDependencyError, ModelFileError
from .models import HMM, HSMM, PCFG, PLCG, PROPS, NaiveBayesHidden, RegressionHMM, TreeNet
from .models._saving import FORMAT as MODEL_FORMAT
from .models._saving import restore as restore_model
from .programs import ProgramModel
from .programs.saving import FORMAT as PROGRAM_FORMAT
from .programs.saving import restore as restore_program
from .sources import load_source
from .sources.kneser_ney import SOURCE_FORMAT

__all__ = ["READS", "VERSION", "arrays_path", "load"]

#: ``format`` of a saved :class:`hiddenstate.lm.BlockedHMMLM` (``hiddenstate.lm.LM_FORMAT``;
#: written here so that reading it does not import torch)
LM_FORMAT = "hiddenstate-lm"

#: the estimators of the ``hiddenstate-model`` format, by the class name saved
MODELS = {cls.__name__: cls
          for cls in (HMM, HSMM, PROPS, PCFG, PLCG, TreeNet, NaiveBayesHidden, RegressionHMM)}


def _torch_installed() -> bool:
    return importlib.util.find_spec("torch") is not None


def _restore_lm(path: Path):
    if not _torch_installed():
        raise MissingDependencyError(
            f"path: {path} holds a BlockedHMMLM (hiddenstate.lm), which needs PyTorch; "
            "install the torch extra: pip install 'hiddenstate[torch]'")
    from .lm.model import restore

    return restore(path)


def load(path, *, program=None):
    """Load the estimator saved in the directory ``path`` by its ``save``.

    An ``HMM``, ``PROPS``, ``PCFG``, ``PLCG``, ``TreeNet``, ``NaiveBayesHidden``, ``ProgramModel``,
    ``BlockedHMMLM`` (torch needed) or a saved source (``KneserNeySource``, ``LSTMSource``):
    the reader is chosen by the ``format`` and ``class`` written in ``model.json``, from a
    fixed registry; nothing in the file is run. A directory written by ``hiddenstate fit``
    loads as its model.

    Parameters
    ----------
    path : str or os.PathLike
        The directory.
    program : hiddenstate.programs.Program or None, default=None
        For a saved :class:`~hiddenstate.programs.ProgramModel` only: the program whose
        switch probabilities were saved (any program declaring the same switches and
        outcomes). None: a built-in example program of the saved name (``"hmm"``,
        ``"pcfg"``, ``"path"``) is rebuilt from the saved switches
        (:func:`~hiddenstate.programs.examples.builtin_program`).

    Returns
    -------
    object
        The estimator (or source), as it was saved.

    Raises
    ------
    hiddenstate.errors.ModelFileError
        If the directory is malformed, tampered with or inconsistent, or holds a format this
        version does not read.
    hiddenstate.errors.InvalidInputError
        If ``program`` is given for another file than a saved ProgramModel, or is missing
        for a program that is not built in.
    hiddenstate.errors.MissingDependencyError
        If the file holds a ``BlockedHMMLM`` and torch is not installed.

    Examples
    --------
    >>> import hiddenstate as hs
    >>> model = hs.HMM(n_states=2, n_features=3)
    >>> model.startprob_ = [0.6, 0.4]
    >>> model.transmat_ = [[0.9, 0.1], [0.2, 0.8]]
    >>> model.emissionprob_ = [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]
    >>> model.save("my-model")
    >>> restored = hs.load("my-model")
    >>> type(restored).__name__, bool((restored.transmat_ == model.transmat_).all())
    ('HMM', True)
    >>> hs.load("no-such-dir")
    Traceback (most recent call last):
    ...
    hiddenstate.errors.ModelFileError: path: no-such-dir is not a saved model ...
    """
    path = Path(path)
    fmt, cls = peek(path)
    where = path / "model.json"
    if program is not None and fmt != PROGRAM_FORMAT:
        raise InvalidInputError(
            f"program: only a saved ProgramModel takes a program, but {path} holds a "
            f"{short_repr(cls)}; drop program=")
    if fmt == MODEL_FORMAT:
        model_cls = MODELS.get(cls) if isinstance(cls, str) else None
        if model_cls is None:
            raise ModelFileError(f"{where}: unknown model class {short_repr(cls)}")
        return restore_model(path, model_cls)
    if fmt == PROGRAM_FORMAT:
        return restore_program(path, ProgramModel, program)
    if fmt == LM_FORMAT:
        return _restore_lm(path)
    if fmt == SOURCE_FORMAT:
        return load_source(path)
    raise ModelFileError(f"{where}: not a hiddenstate model file (format "
                         f"{short_repr(fmt)}); save models with their save method")

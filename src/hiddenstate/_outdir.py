"""Output folders written whole or not at all (the command line's ``--out`` folders).

A command that writes a folder ``NAME`` builds it in a fresh sibling,
``.NAME.hs-new-<token>`` (same parent, so the same file system), and switches it in at the
very end (:meth:`Staged.commit`):

1. every file of the new folder is flushed to disk (``fsync``, files and directories);
2. an absent (or empty) ``NAME`` is replaced by one ``rename``; an existing one is swapped
   with the new folder by one atomic exchange (``renameat2(RENAME_EXCHANGE)`` on Linux),
   after which the old version, now under the sibling's name, is deleted. Where the exchange
   is not available (another system, a file system without it) the switch is two renames,
   ``NAME`` -> ``.NAME.hs-old-<token>`` then the new folder -> ``NAME``;
3. Ctrl-C (SIGINT) during the switch is held back until the switch is done.

Until the switch ``NAME`` is untouched; after it ``NAME`` is the new folder, complete. A
crash (power loss, ``kill -9``) leaves ``NAME`` as it was or as it is meant to be, plus at
most a leftover ``.NAME.hs-new-<token>`` or ``.NAME.hs-old-<token>`` beside it (removed by
the next write of ``NAME``); only with the two-rename fallback, a crash between the two
renames leaves ``NAME`` missing and its old version in ``.NAME.hs-old-<token>``.

What may be replaced is decided before any work (:func:`stage`): a folder that holds only
files the command writes (``writes``), and only with ``overwrite``; a folder holding
anything else is never replaced, since replacing a folder deletes what it held. One writer
at a time per folder.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import secrets
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import InvalidInputError

__all__ = ["OutputError", "Staged", "stage"]

_NEW, _OLD = "hs-new", "hs-old"


class OutputError(OSError):
    """Writing an output folder failed (a full disk, an I/O error); the folder is as it was.
    Its message names the option and the folder (no ``[Errno N]`` prefix)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else super().__str__()


def _strerror(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _leftover(name: str) -> re.Pattern:
    return re.compile(rf"\.{re.escape(name)}\.(?:{_NEW}|{_OLD})-[0-9a-f]{{16}}")


def _remove_tree(path: Path) -> None:
    """Best-effort removal (a leftover that cannot be removed now is removed next time)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except OSError:
            pass


def _fsync_path(path: Path, directory: bool) -> None:
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    try:
        os.fsync(fd)
    except OSError as exc:  # file systems that cannot sync a directory
        if not directory or exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    """Flush every file and directory under ``root`` (and ``root``) to disk (POSIX)."""
    if os.name != "posix":
        return
    for dirpath, _, files in os.walk(root):
        for name in files:
            _fsync_path(Path(dirpath) / name, directory=False)
        _fsync_path(Path(dirpath), directory=True)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap the directory entries ``a`` and ``b`` (Linux ``renameat2`` with
    ``RENAME_EXCHANGE``); False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


@contextmanager
def _sigint_held() -> Iterator[None]:
    """Hold Ctrl-C back while the block runs (main thread only); re-deliver it after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if got and callable(previous):
            previous(signal.SIGINT, None)


class Staged:
    """A folder being built at :attr:`path` that becomes :attr:`target` on :meth:`commit`
    (see the module docstring). As a context manager it discards the new folder unless it
    was committed, whatever ends the block (an error, Ctrl-C), and turns an
    operating-system error while writing into it into an :class:`OutputError` naming
    ``option``."""

    def __init__(self, target: Path, path: Path, option: str):
        self.target, self.path, self.option = target, path, option
        self.committed = False

    def __enter__(self) -> Staged:
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if not self.committed:
            self.discard()
        if isinstance(exc, OSError) and not isinstance(exc, OutputError) and \
                str(exc.filename or "").startswith(str(self.path)):
            raise OutputError(
                f"{self.option}: writing {self.target} failed ({_strerror(exc)}); "
                f"{self.target} is unchanged") from exc

    def discard(self) -> None:
        _remove_tree(self.path)

    def commit(self) -> Path:
        """Switch the new folder in; returns :attr:`target`."""
        target, parent = self.target, self.target.parent
        old = None
        try:
            _fsync_tree(self.path)
            with _sigint_held():
                if not os.path.lexists(target) or (target.is_dir() and not os.listdir(target)):
                    os.rename(self.path, target)  # POSIX: also replaces an empty directory
                elif _exchange(self.path, target):
                    old = self.path  # the exchange left the previous version here
                else:
                    old = parent / f".{target.name}.{_OLD}-{secrets.token_hex(8)}"
                    os.rename(target, old)
                    try:
                        os.rename(self.path, target)
                    except OSError:
                        os.rename(old, target)
                        old = None
                        raise
                self.committed = True
                if os.name == "posix":
                    _fsync_path(parent, directory=True)
        except OSError as exc:
            if self.committed:
                raise OutputError(f"{self.option}: {target} was written but could not be "
                                  f"flushed to disk ({_strerror(exc)})") from exc
            raise OutputError(
                f"{self.option}: could not put the new {target} in place "
                f"({_strerror(exc)}); {target} is unchanged") from exc
        if old is not None:
            _remove_tree(old)
        return target


def stage(target, *, option: str, writes: Callable[[str], bool], what: str,
          overwrite: bool, check: Callable[[Path], None] | None = None) -> Staged:
    """Check that ``target`` may be written and create the folder that will replace it.

    ``writes(name)``: whether the command writes an entry of that name (an existing folder
    holding anything else is refused, ``overwrite`` or not); ``what``: what such a folder
    holds, for the messages (e.g. "a model written by `hiddenstate fit`"); ``check(target)``
    (optional) raises when an existing folder, though made of such names, is not the
    command's (e.g. a PROPS model where ``fit`` writes HMMs). ``overwrite``: replace an
    existing non-empty folder (otherwise refused, naming ``--overwrite``). Every refusal
    is an :class:`~hiddenstate.errors.InvalidInputError` naming ``option`` and the fix,
    raised before any work.
    """
    given = Path(target)
    if os.path.islink(given):
        if not given.is_dir():
            raise InvalidInputError(
                f"{option}: {given} is a link to nothing or to a file; pass a folder path")
        given = Path(os.path.realpath(given))  # write where the link points; keep the link
    path = Path(os.path.abspath(given))
    if path.parent == path:
        raise InvalidInputError(f"{option}: {given} is the root folder; pass a new folder")
    cwd = Path(os.path.abspath(os.getcwd()))
    if path == cwd or path in cwd.parents:
        raise InvalidInputError(
            f"{option}: {given} is the current folder (or holds it) and would be replaced "
            "whole; pass a new folder, e.g. a subfolder")
    if os.path.lexists(path):
        if not path.is_dir():
            raise InvalidInputError(
                f"{option}: {given} is a file, not a folder; pass a folder path (it is "
                "created)")
        try:
            entries = sorted(os.listdir(path))
        except OSError as exc:
            raise InvalidInputError(
                f"{option}: cannot read the existing folder {given} ({_strerror(exc)}); "
                "pass a new folder") from None
        if entries:
            if check is not None:
                check(path)
            foreign = [e for e in entries if not writes(e)]
            if foreign:
                raise InvalidInputError(
                    f"{option}: {given} already exists and holds {foreign[0]!r}, which is "
                    f"not part of {what}; pass a new folder (an output folder is replaced "
                    "whole, so one holding other files is never used)")
            if not overwrite:
                raise InvalidInputError(
                    f"{option}: {given} already holds {what}; pass --overwrite to replace "
                    "it, or a new folder")
            if not os.access(path, os.W_OK | os.X_OK):
                raise InvalidInputError(
                    f"{option}: {given} is read-only; pass a new folder (or make it "
                    "writable)")
    parent = path.parent
    blocking = next((a for a in path.parents if os.path.lexists(a) and not a.is_dir()), None)
    if blocking is not None:
        raise InvalidInputError(
            f"{option}: {blocking} is a file, so {given} cannot be created inside it; pass "
            "a folder path")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInputError(
            f"{option}: cannot create {given} ({_strerror(exc)}: {exc.filename or parent}); "
            "pass a folder in a place you can write to") from None
    stale = _leftover(path.name)
    try:
        for name in os.listdir(parent):
            if stale.fullmatch(name):
                _remove_tree(parent / name)
    except OSError:
        pass
    new = parent / f".{path.name}.{_NEW}-{secrets.token_hex(8)}"
    try:
        os.mkdir(new)
    except OSError as exc:
        raise InvalidInputError(
            f"{option}: cannot write in {parent} ({_strerror(exc)}); pass a folder in a "
            "place you can write to") from None
    return Staged(path, new, option)

"""One line on the terminal when numba compiles a hiddenstate kernel.

The kernels are compiled on first use and cached on disk (``cache=True``): the first fit,
score or decode after an install (or after a kernel's source changed) waits for the
compiler, about 10 s for a first fit on two cores, later runs load the cache in
milliseconds. :data:`NOTICE` listens to numba's ``"numba:compile"`` event, which numba sends
only when a function is about to be compiled (not when it is loaded from the cache), and
writes :data:`MESSAGE` once per process, the first time a hiddenstate kernel is compiled,
so that a cold cache reads as work rather than as a frozen progress bar.

It writes to standard error when that is a terminal or a Jupyter kernel's stream, not into
pipes, files and captured output (logs and tests stay as they were).
``HIDDENSTATE_COMPILE_NOTICE=1`` writes it there too, ``=0`` never. ``python -m
hiddenstate.warmup`` compiles the common kernels ahead of time (``make install`` runs it).
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

from numba.core import event

MESSAGE = ("hiddenstate: compiling numba kernels, once (about 10 s; cached for later runs, "
           "`python -m hiddenstate.warmup` does it ahead) ...")


class CompileNotice(event.Listener):
    """Writes :data:`MESSAGE` to standard error before the first compilation of a function
    of a ``hiddenstate`` module in this process (see the module docstring for where)."""

    def __init__(self):
        self.shown = False   # the first compilation happened (written or not)
        self.silenced = 0    # > 0 inside silenced()

    def on_start(self, ev) -> None:
        if self.shown or self.silenced:
            return
        module = getattr(ev.data["dispatcher"].py_func, "__module__", None) or ""
        if not module.startswith("hiddenstate."):
            return
        self.shown = True
        stream = sys.stderr
        if stream is None or not _wanted(stream):
            return
        from tqdm import tqdm  # writes above a progress bar that is being drawn

        tqdm.write(MESSAGE, file=stream)
        stream.flush()

    def on_end(self, ev) -> None:
        pass


def _wanted(stream) -> bool:
    setting = os.environ.get("HIDDENSTATE_COMPILE_NOTICE", "").strip()
    if setting in ("0", "1"):
        return setting == "1"
    try:
        if stream.isatty():
            return True
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
    return type(stream).__module__.startswith("ipykernel")


#: the listener :func:`install` registers
NOTICE = CompileNotice()
_installed = False


def install() -> None:
    """Register :data:`NOTICE` for numba's compile events (once; called by
    :mod:`hiddenstate.kernels` on import)."""
    global _installed
    if not _installed:
        event.register("numba:compile", NOTICE)
        _installed = True


@contextmanager
def silenced():
    """No notice inside this block (for :mod:`hiddenstate.warmup`, which says what it
    compiles itself)."""
    NOTICE.silenced += 1
    try:
        yield
    finally:
        NOTICE.silenced -= 1

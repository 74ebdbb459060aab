"""Compile, once, the numba kernels a first fit, score and decode use: ``python -m
hiddenstate.warmup`` (``make install`` runs it after ``pip install``).

The kernels are compiled on first use and cached on disk by numba (``cache=True``); a cold
cache makes the first ``HMM(...).fit`` after an install wait about 10 s for the compiler.
This module runs small versions of the common calls through the public estimators, so that
exactly the signatures real calls use are compiled and cached: a categorical HMM (fit by EM
on several sequences, on one and on one longer than a lane, score, decode, posteriors,
sampling), Gaussian emissions
(diagonal and full covariances), Poisson emissions, the MAP, VB and Viterbi-training modes,
and the streaming online EM that ``hiddenstate personalize`` and the demo use. Other kernels
(PCFG, programs, tree networks, k-best paths, sparse chains, language models) compile on
their first use, and say so (:mod:`hiddenstate.kernels.compile_notice`).

Where the cache goes is numba's choice: the ``__pycache__`` folders next to the kernels'
sources when they are writable (an editable install, a virtual environment), otherwise the
user's cache folder (``~/.cache/numba``), or ``NUMBA_CACHE_DIR`` when that is set; run the
warm-up as the user who will fit, with the same ``NUMBA_CACHE_DIR``. The cache is tied to
the kernels' source files and the CPU: a kernel whose source changed is compiled again.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import numpy as np
from numba.core import event

from .kernels import compile_notice, forward_backward
from .models import HMM


def _categorical() -> None:
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, size=(300, 1))
    lengths = [120, 180]
    model = HMM(3, emission="categorical", n_iter=3, random_state=0).fit(X, lengths)
    model.score(X, lengths)
    model.decode(X, lengths)
    model.predict_proba(X, lengths)
    model.sample(20, random_state=0)
    HMM(2, emission="categorical", n_iter=2, random_state=0).fit(X[:100])


def _long_sequence() -> None:
    # longer than one lane (16,384 rows): split into segments with a backward pass of its own
    X = np.random.default_rng(0).integers(0, 4, size=(20_000, 1))
    model = HMM(2, emission="categorical", n_iter=1, random_state=0).fit(X)
    model.score(X)
    model.decode(X)


def _gaussian() -> None:
    X = np.random.default_rng(0).normal(size=(300, 2))
    for covariance_type in ("diag", "full"):
        model = HMM(3, emission="gaussian", covariance_type=covariance_type, n_iter=3,
                    random_state=0).fit(X, [120, 180])
        model.decode(X, [120, 180])


def _poisson() -> None:
    X = np.random.default_rng(0).poisson(3.0, size=(300, 1))
    HMM(3, emission="poisson", n_iter=3, random_state=0).fit(X, [120, 180])


def _learning_modes() -> None:
    X = np.random.default_rng(0).integers(0, 4, size=(300, 1))
    for learn in ("map", "vb", "vt"):
        HMM(3, emission="categorical", learn=learn, n_iter=3, random_state=0).fit(X, [120, 180])


def _streaming() -> None:
    X = np.random.default_rng(0).integers(0, 4, size=(300, 1))
    HMM(3, emission="categorical", learn="online-em", random_state=0).fit(X, [120, 180])


#: (what, function) in the order they run
STEPS: list[tuple[str, Callable[[], None]]] = [
    ("categorical HMM: fit, score, decode, predict_proba, sample", _categorical),
    ("one sequence of 20,000 observations: fit, score, decode", _long_sequence),
    ("Gaussian HMM (diag, full): fit, decode", _gaussian),
    ("Poisson HMM: fit", _poisson),
    ("learn='map', 'vb', 'vt'", _learning_modes),
    ("learn='online-em' (streaming, PROPS)", _streaming),
]


class _Counter(event.Listener):
    """Counts the hiddenstate functions numba compiles (cache misses)."""

    def __init__(self):
        self.count = 0

    def on_start(self, ev) -> None:
        module = getattr(ev.data["dispatcher"].py_func, "__module__", None) or ""
        self.count += module.startswith("hiddenstate.")

    def on_end(self, ev) -> None:
        pass


def warm_up(steps=None, out=sys.stderr) -> list[tuple[str, float, int]]:
    """Run ``steps`` (default :data:`STEPS`), writing a line per step to ``out`` (``None``:
    nothing); returns ``(what, seconds, functions compiled)`` per step. A step whose kernels
    are already cached takes well under a second and compiles nothing."""
    counter = _Counter()
    event.register("numba:compile", counter)
    rows = []
    try:
        with compile_notice.silenced():
            for what, step in STEPS if steps is None else steps:
                before, t0 = counter.count, time.perf_counter()
                step()
                rows.append((what, time.perf_counter() - t0, counter.count - before))
                if out is not None:
                    seconds, compiled = rows[-1][1:]
                    print(f"  {seconds:6.1f} s  {compiled:3d} compiled  {what}", file=out,
                          flush=True)
    finally:
        event.unregister("numba:compile", counter)
    return rows


def cache_dir() -> str:
    """Where numba caches the kernels for this process (see the module docstring)."""
    return str(forward_backward.stats.cache_path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hiddenstate.warmup",
        description="Compile and cache the numba kernels of a first fit, score and decode.")
    parser.parse_args(argv)
    print("hiddenstate: compiling the numba kernels of a first fit, score and decode (once, "
          f"about a minute on two cores) into {cache_dir()} ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    rows = warm_up()
    compiled = sum(r[2] for r in rows)
    print(f"hiddenstate: {compiled} functions compiled in {time.perf_counter() - t0:.1f} s"
          + (" (all were cached already)" if compiled == 0 else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

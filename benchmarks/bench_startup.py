"""Start-up times: ``import hiddenstate``, the first fit, the install-time warm-up, against
another revision (``main`` by default) in the same run.

    .venv/bin/python benchmarks/bench_startup.py                  # ~12 minutes on 2 busy cores
    .venv/bin/python benchmarks/bench_startup.py --baseline HEAD~3 --repeat 20
    .venv/bin/python benchmarks/bench_startup.py --no-cold        # no compiles (~5 minutes)

Every number is a fresh interpreter (``subprocess``) with this script's Python, so it
includes the interpreter's own start (~0.02 s CPU). The baseline is the revision's
``src/`` extracted with ``git archive`` into a temporary folder and put first on
``PYTHONPATH``; the dependencies are this environment's for both. Each tree gets its own
numba cache folder (``NUMBA_CACHE_DIR``), so "cold" means an empty cache, as after ``pip
install``, and nothing touches the cache of the working tree.

Rows (the median over ``--repeat`` runs and, in brackets, the minimum: on a shared machine
a neighbour only ever adds time, so the minimum is the steady number; CPU seconds are the
child's user + system time, less sensitive to a busy machine than wall time):

- ``import hiddenstate``, ``from hiddenstate import HMM``;
- ``import hiddenstate; hiddenstate.HMM(2).fit(X)`` with the kernels cached (``X``: 1000
  symbols of 5, one sequence); "first iteration" is the time from the interpreter's start
  to the end of the fit's first iteration (its ``callback``);
- the first fit after an install: the baseline with an empty cache (``make install`` did
  not warm it); this tree after ``python -m hiddenstate.warmup`` (what ``make install``
  now runs), whose time is the row "warm-up";
- this tree's first fit with an empty cache (a ``pip install`` without the warm-up: the
  compile it waits for, announced by one line on a terminal).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_name  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

FIT = """
import time
import numpy as np
import hiddenstate
X = np.random.default_rng(0).integers(0, 5, size=(1000, 1))
first = []
hiddenstate.HMM(2, random_state=0).fit(
    X, callback=lambda i, v: first.append(time.time()) if not first else None)
print("first-iteration", first[0])
"""


def run(code: str, src: Path, cache: Path, *args: str) -> tuple[float, float, str]:
    """(wall seconds, child CPU seconds, stdout) of ``python -c code`` (or ``python
    args...``) on ``src``'s hiddenstate with the numba cache ``cache``. A line
    ``first-iteration <epoch seconds>`` of the output is turned into seconds since the
    launch."""
    env = {**os.environ, "PYTHONPATH": str(src), "NUMBA_CACHE_DIR": str(cache),
           "HIDDENSTATE_COMPILE_NOTICE": "0"}
    cmd = [sys.executable, *args] if args else [sys.executable, "-c", code]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        launched, t0 = time.time(), time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=tempfile.gettempdir(), stdout=out,
                                stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read()
        if proc.returncode:
            raise SystemExit(f"{' '.join(cmd[:3])} failed on {src}:\n{err.read()[-3000:]}")
    lines = [f"first-iteration {float(line.split()[1]) - launched}"
             if line.startswith("first-iteration") else line for line in text.splitlines()]
    return wall, usage.ru_utime + usage.ru_stime, "\n".join(lines)


def repeated(code: str, src: Path, cache: Path, n: int) -> dict:
    walls, cpus, extra = [], [], []
    for _ in range(n):
        wall, cpu, out = run(code, src, cache)
        walls.append(wall)
        cpus.append(cpu)
        extra += [float(line.split()[1]) for line in out.splitlines()
                  if line.startswith("first-iteration")]
    return {"wall": walls, "cpu": cpus, "first": extra}


def fmt(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):6.2f} ({min(values):.2f})"


def extract(ref: str, into: Path) -> Path:
    """``ref``'s ``src/`` folder, extracted into ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    archive = into / "src.tar"
    with open(archive, "wb") as fh:
        subprocess.run(["git", "-C", str(ROOT), "archive", ref, "src"], stdout=fh, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="main", help="git revision to compare with")
    parser.add_argument("--repeat", type=int, default=10, help="runs per import/fit row")
    parser.add_argument("--no-cold", action="store_true",
                        help="skip the rows that compile (first fit after an install)")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    trees = {args.baseline: extract(args.baseline, tmp / "baseline"), "this tree": ROOT / "src"}
    caches = {name: tmp / f"cache-{i}" for i, name in enumerate(trees)}
    print(f"# start-up times: {sys.executable}, {cpu_name()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"# seconds: median (minimum) of {args.repeat} fresh interpreters; baseline "
          f"{args.baseline} = {trees[args.baseline]}\n")

    def row(label: str, results: dict, key: str = "wall") -> None:
        base, this = (results[name] for name in trees)
        ratio = (statistics.median(base[key]) / statistics.median(this[key])
                 if base[key] and this[key] else float("nan"))
        print(f"| {label:<46} | {fmt(base[key]):>14} | {fmt(this[key]):>14} | "
              f"{ratio:6.1f}x |", flush=True)

    print(f"| {'':<46} | {args.baseline:>14} | {'this tree':>14} |   ratio |")
    print(f"|{'-' * 48}|{'-' * 15}:|{'-' * 15}:|--------:|")
    for name, src in trees.items():  # byte-compile the sources, fill each tree's cache
        run(FIT, src, caches[name])
    for label, code in [("import hiddenstate", "import hiddenstate"),
                        ("from hiddenstate import HMM", "from hiddenstate import HMM")]:
        results = {name: repeated(code, src, caches[name], args.repeat)
                   for name, src in trees.items()}
        row(f"{label}: wall", results)
        row(f"{label}: CPU", results, "cpu")
    results = {name: repeated(FIT, src, caches[name], args.repeat)
               for name, src in trees.items()}
    row("import + HMM(2).fit(X), cached kernels: wall", results)
    row("  CPU", results, "cpu")
    row("  first iteration done", results, "first")
    if not args.no_cold:
        cold = {name: tmp / f"cold-{i}" for i, name in enumerate(trees)}
        warm_up = run("", trees["this tree"], cold["this tree"], "-m", "hiddenstate.warmup")
        after = {name: {"wall": [], "cpu": [], "first": []} for name in trees}
        for name, src in trees.items():
            wall, cpu, out = run(FIT, src, cold[name])
            after[name] = {"wall": [wall], "cpu": [cpu],
                           "first": [float(out.split()[-1])]}
        row("first fit after install: wall", after)
        row("  CPU", after, "cpu")
        row("  first iteration done", after, "first")
        print(f"| {'warm-up added to make install: wall, CPU':<46} | {'-':>14} | "
              f"{warm_up[0]:7.1f}, {warm_up[1]:.1f} |        |")
        wall, cpu, out = run(FIT, trees["this tree"], tmp / "cold-nowarmup")
        print(f"| {'empty cache (pip, no warm-up): wall, CPU':<46} | {'-':>14} | "
              f"{wall:7.1f}, {cpu:.1f} |        |")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

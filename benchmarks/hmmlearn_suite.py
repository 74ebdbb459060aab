"""Run hmmlearn's own test suite against ``hiddenstate.compat.hmmlearn``.

Copies the tests that ship with the installed hmmlearn (0.3.3) to a temporary directory,
rewrites them so that ``hmm.CategoricalHMM``, ``hmm.GaussianHMM``, ``hmm.PoissonHMM``,
``hmm.GMMHMM`` and ``hmm.MultinomialHMM`` (and ``from ..hmm import GMMHMM``) are
hiddenstate's compat classes (everything else -- the variational models, helpers -- stays
hmmlearn's), runs pytest and prints passed / failed / skipped counts per file with the
failures grouped by reason.

    .venv/bin/python benchmarks/hmmlearn_suite.py            # the default selection
    .venv/bin/python benchmarks/hmmlearn_suite.py --seed 3 --keep
    .venv/bin/python benchmarks/hmmlearn_suite.py --baseline  # same tests, hmmlearn's classes

Selection: the test files of these classes, plus the other test files whose tests build
one of them (the variational tests sample their data from, and compare against,
``hmm.CategoricalHMM`` / ``hmm.GaussianHMM``). Files that never touch the classes
(``test_base.py``: ``BaseHMM``, ``_hmmc`` and hmmlearn's own ``ConvergenceMonitor``; utils;
KL) are not run: they would only test hmmlearn. ``--files test_gmm_hmm_new.py ...`` runs a
subset.

The exit status is 0 when every failure is one of the known differences explained in
``KNOWN`` (hiddenstate's documented behaviour, not a bug), 1 when any other test fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

CLASSES = ("CategoricalHMM", "GaussianHMM", "PoissonHMM", "GMMHMM", "MultinomialHMM")
CORE_FILES = ("test_categorical_hmm.py", "test_gaussian_hmm.py", "test_poisson_hmm.py",
              "test_gmm_hmm.py", "test_gmm_hmm_multisequence.py", "test_gmm_hmm_new.py",
              "test_multinomial_hmm.py")
OTHER_FILES = ("test_variational_categorical.py", "test_variational_gaussian.py")

# Appended to the copied conftest.py: count, per test, how many instances of the three
# classes it built (recorded as a junit property), so that tests which never touch them
# (pure hmmlearn tests in the same files) are reported apart and not counted.
USAGE_CONFTEST = """

import functools as _functools

import pytest as _pytest

from {module} import (CategoricalHMM as _C, GaussianHMM as _G, GMMHMM as _M,
                      MultinomialHMM as _N, PoissonHMM as _P)

_BUILT = [0]


def _count_instances(cls):
    init = cls.__init__

    @_functools.wraps(init)
    def __init__(self, *args, **kwargs):
        _BUILT[0] += 1
        init(self, *args, **kwargs)
    cls.__init__ = __init__


for _cls in (_C, _G, _P, _M, _N):
    _count_instances(_cls)


@_pytest.fixture(autouse=True)
def _record_instances(record_property):
    before = _BUILT[0]
    yield
    record_property("instances", _BUILT[0] - before)
"""
ALIAS = "_hs_hmm"

# Why a known test fails: test-id fragment -> explanation.
KNOWN = {
    "test_underflow_from_scaling[scaling]": (
        "expects hmmlearn's implementation='scaling' forward pass to underflow on an "
        "outlier and raise; hiddenstate ignores `implementation` and its scaled kernels "
        "handle the outlier (the 'log' variant of the same test passes)"),
    "test_chunked[full]": (
        "fits 3 states x 2 components to data drawn from ONE 2-component mixture (a flat "
        "ridge of equally good parameters), 10 iterations, then asks the fits on one "
        "sequence and on 5 chunks to agree to 1e-3 in the covariances. Both fits are "
        "monotone and still climbing; hiddenstate's exact covariance M-step (about the new "
        "means; hmmlearn uses the previous means) takes another path along the ridge, on "
        "which the two fits differ by 1.8e-3 (hmmlearn: 0.9e-3); at 60 iterations "
        "hmmlearn's own pair differs by 1.7e-4, ours by 3.6e-3. A tolerance on a "
        "non-identifiable fit, not a bug"),
}


def hmmlearn_tests_dir() -> Path:
    spec = importlib.util.find_spec("hmmlearn")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("hmmlearn is not installed (pip install hmmlearn==0.3.3)")
    tests = Path(list(spec.submodule_search_locations)[0]) / "tests"
    if not tests.is_dir():
        sys.exit(f"{tests}: hmmlearn was installed without its tests")
    return tests


def rewrite(source: str, ours: bool) -> tuple[str, int]:
    """Point a test module at the compat classes; return the new source and how many
    references were redirected."""
    source = source.replace("from .. import hmm\n", "from hmmlearn import hmm\n")
    source = source.replace("from ..hmm import ", "from hmmlearn.hmm import ")
    if not ours:
        return source, 0
    pattern = re.compile(r"\bhmm\.(" + "|".join(CLASSES) + r")\b")
    source, n = pattern.subn(ALIAS + r".\1", source)
    direct = re.compile(r"^from hmmlearn\.hmm import (" + "|".join(CLASSES) + r")$", re.M)
    source, m = direct.subn(r"from hiddenstate.compat.hmmlearn import \1", source)
    n += m
    if n:
        source = f"from hiddenstate.compat import hmmlearn as {ALIAS}  # noqa\n" + source
    return source, n


def prepare(dest: Path, files: list[str], ours: bool) -> dict[str, int]:
    src = hmmlearn_tests_dir()
    pkg = dest / "hmmlearn_tests"
    pkg.mkdir(parents=True)
    shutil.copy(src / "__init__.py", pkg / "__init__.py")
    module = "hiddenstate.compat.hmmlearn" if ours else "hmmlearn.hmm"
    (pkg / "conftest.py").write_text(
        (src / "conftest.py").read_text() + USAGE_CONFTEST.format(module=module))
    counts = {}
    for name in files:
        text, n = rewrite((src / name).read_text(), ours)
        (pkg / name).write_text(text)
        counts[name] = n
    (dest / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    return counts


def run(dest: Path, files: list[str], seed: int, timeout: int) -> Path:
    report = dest / "report.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "--rootdir", str(dest),
           f"--junitxml={report}", "-o", "junit_family=xunit1",
           *[f"hmmlearn_tests/{name}" for name in files]]
    env = dict(os.environ, HMMLEARN_SEED=str(seed), PYTHONHASHSEED="0")
    print("running:", " ".join(cmd[2:]), f"(HMMLEARN_SEED={seed})", flush=True)
    out = None if os.environ.get("SUITE_VERBOSE") else subprocess.DEVNULL
    subprocess.run(cmd, cwd=dest, env=env, timeout=timeout, check=False, stdout=out)
    return report


def first_line(text: str) -> str:
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            return line[:200]
    return "(no message)"


def summarise(report: Path) -> int:
    tree = ET.parse(report)
    per_file: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    reasons: dict[str, list[str]] = defaultdict(list)
    skips: dict[str, list[str]] = defaultdict(list)
    untouched: dict[str, int] = defaultdict(int)
    for case in tree.iter("testcase"):
        file = Path(case.get("file") or "?").name
        test_id = f"{file[:-3]}::{case.get('classname', '').split('.')[-1]}::{case.get('name')}"
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        outcome, message = "passed", None
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed" if child.tag == "failure" else "error"
                message = first_line(child.get("message"))
            elif child.tag == "skipped":
                outcome, message = "skipped", first_line(child.get("message"))
        if props.get("instances", "0") == "0" and outcome != "error":
            untouched[file] += 1  # never built one of the classes: tests hmmlearn only
            continue
        per_file[file][outcome] += 1
        if outcome in ("failed", "error"):
            reasons[message].append(test_id)
        elif outcome == "skipped":
            skips[message].append(test_id)
    total: dict[str, int] = defaultdict(int)
    print("\ntests that build one of " + " / ".join(CLASSES) + ":")
    print(f"{'file':<36}{'passed':>8}{'failed':>8}{'error':>8}{'skipped':>8}"
          f"{'not using':>11}")
    for file in sorted(set(per_file) | set(untouched)):
        c = per_file[file]
        print(f"{file:<36}{c['passed']:>8}{c['failed']:>8}{c['error']:>8}{c['skipped']:>8}"
              f"{untouched[file]:>11}")
        for k, v in c.items():
            total[k] += v
    print(f"{'total':<36}{total['passed']:>8}{total['failed']:>8}{total['error']:>8}"
          f"{total['skipped']:>8}{sum(untouched.values()):>11}")
    print("('not using': tests in these files that never build one of these classes; "
          "they test hmmlearn alone and are not counted)")
    if reasons:
        print("\nfailures grouped by reason:")
        for reason, tests in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
            print(f"\n  [{len(tests)}] {reason}")
            for t in tests:
                print(f"      {t}")
                for frag, why in KNOWN.items():
                    if frag in t:
                        print(f"        why: {why}")
    if skips:
        print("\nskipped, grouped by reason:")
        for reason, tests in skips.items():
            print(f"  [{len(tests)}] {reason}")
    failed = [t for tests in reasons.values() for t in tests]
    unknown = [t for t in failed if not any(frag in t for frag in KNOWN)]
    print(f"\n{total['passed']} passed, {len(failed)} failed "
          f"({len(failed) - len(unknown)} known and explained above, {len(unknown)} not)")
    return len(unknown)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0, help="HMMLEARN_SEED for the tests' RNG")
    ap.add_argument("--files", nargs="*", help="test files to run (default: the selection)")
    ap.add_argument("--core", action="store_true",
                    help="only the classes' own test files")
    ap.add_argument("--baseline", action="store_true",
                    help="run the same tests on hmmlearn's own classes")
    ap.add_argument("--keep", action="store_true", help="keep (and print) the temp dir")
    ap.add_argument("--timeout", type=int, default=1800)
    args = ap.parse_args(argv)
    files = args.files or list(CORE_FILES if args.core else CORE_FILES + OTHER_FILES)
    dest = Path(tempfile.mkdtemp(prefix="hmmlearn-suite-"))
    try:
        counts = prepare(dest, files, ours=not args.baseline)
        if not args.baseline:
            for name, n in counts.items():
                print(f"{name}: {n} references to {'/'.join(CLASSES)} redirected to "
                      "hiddenstate.compat.hmmlearn")
        report = run(dest, files, args.seed, args.timeout)
        bad = summarise(report)
    finally:
        if args.keep:
            print(f"\nkept {dest}")
        else:
            shutil.rmtree(dest, ignore_errors=True)
    return 1 if bad else 0  # 0: every failure is a known, explained difference (KNOWN)


if __name__ == "__main__":
    sys.exit(main())

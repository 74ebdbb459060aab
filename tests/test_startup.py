"""A first run in seconds: what ``import hiddenstate`` loads, the public names it still
resolves, the one-line notice of a numba compile, and the install-time warm-up.

Times are measured by ``benchmarks/bench_startup.py``, not here; these tests check the
properties the times come from, each in a fresh interpreter (``sys.modules`` of this test
process is whatever the other tests imported).
"""

from __future__ import annotations

import ast
import json
import os
import pty
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import hiddenstate as hs
from hiddenstate import models
from hiddenstate.kernels import compile_notice

SRC = Path(hs.__file__).resolve().parent


def python(code: str, env: dict | None = None, timeout: float = 300) -> tuple[str, str]:
    """Run ``code`` in a fresh interpreter; its stdout and stderr."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout, proc.stderr


def on_terminal(code: str, env: dict, timeout: float = 300) -> tuple[str, str]:
    """Run ``code`` in a fresh interpreter whose standard error is a terminal (a pty)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave,
                            env={**os.environ, **env})
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    out = proc.stdout.read().decode()
    proc.stdout.close()
    assert proc.wait(timeout=timeout) == 0, b"".join(chunks).decode()[-3000:]
    return out, b"".join(chunks).decode().replace("\r\n", "\n")


LOADED = """
import sys
{statement}
print(json.dumps(sorted(m for m in sys.modules)))
"""


def modules_after(statement: str) -> set[str]:
    out, _ = python("import json\n" + LOADED.format(statement=statement))
    return set(json.loads(out.splitlines()[-1]))


def test_import_hiddenstate_loads_no_library_and_no_estimator():
    loaded = modules_after("import hiddenstate")
    heavy = {m for m in loaded if m.split(".")[0] in
             {"numpy", "numba", "scipy", "sklearn", "torch", "dask", "tqdm"}}
    assert heavy == set()
    assert {m for m in loaded if m.startswith("hiddenstate")} == {
        "hiddenstate", "hiddenstate._lazy", "hiddenstate._version", "hiddenstate.errors"}


def test_pandas_is_imported_by_csv_reading_only(tmp_path):
    """pandas parses CSV input (``textio.read_table``); nothing else pays its import: not
    ``import hiddenstate``, not the command line's parser, not text or ``.npy`` input."""
    (tmp_path / "a.txt").write_text("the cat sat\n")
    (tmp_path / "a.csv").write_text("x\n1.5\n")
    other = modules_after(f"""
from hiddenstate import cli, textio
import numpy as np
cli.build_parser()
textio.read_file({str(tmp_path / "a.txt")!r})
np.save({str(tmp_path / "a.npy")!r}, np.arange(3))
textio.read_file({str(tmp_path / "a.npy")!r})""")
    assert "pandas" not in other
    csv = modules_after(f"""
from hiddenstate import textio
textio.read_file({str(tmp_path / "a.csv")!r})""")
    assert "pandas" in csv


def test_an_hmm_needs_neither_scikit_learn_nor_the_other_estimators():
    loaded = modules_after("""
        from hiddenstate import HMM
        import numpy as np
        HMM(2, n_iter=3, random_state=0).fit(np.random.default_rng(0).integers(0, 3, (60, 1)))
    """.replace("\n        ", "\n"))
    assert "hiddenstate.models.hmm.estimator" in loaded
    for absent in ("sklearn", "scipy.stats", "torch", "hiddenstate.models.pcfg",
                   "hiddenstate.models.treenet", "hiddenstate.models.props",
                   "hiddenstate.models.nbh", "hiddenstate.grammar", "hiddenstate.programs",
                   "hiddenstate.sources", "hiddenstate.treenet"):
        assert absent not in loaded, absent


def _type_checking_names(path: Path) -> set[str]:
    """Names bound by the ``if TYPE_CHECKING:`` block and the top-level imports of a
    package ``__init__``: what a type checker sees without running ``__getattr__``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        body = node.body if isinstance(node, ast.If) else [node]
        for stmt in body:
            if isinstance(stmt, ast.ImportFrom) and stmt.module != "__future__" and stmt.level:
                names |= {a.asname or a.name for a in stmt.names}
    return names


@pytest.mark.parametrize("package", [hs, models], ids=["hiddenstate", "hiddenstate.models"])
def test_every_public_name_resolves_and_type_checkers_see_it(package):
    init = Path(package.__file__)
    assert set(package.__all__) <= _type_checking_names(init)
    for name in package.__all__:
        value = getattr(package, name)
        assert isinstance(value, str) or value.__name__ == name
    assert sorted(package.__all__) == dir(package)
    namespace: dict = {}
    exec(f"from {package.__name__} import *", namespace)
    assert set(package.__all__) <= set(namespace)
    with pytest.raises(AttributeError, match="has no attribute 'not_a_name'"):
        package.not_a_name  # noqa: B018
    with pytest.raises(AttributeError):
        package.__not_a_dunder__  # noqa: B018


RESOLVE_ALL = """
import importlib, json, sys
import hiddenstate, hiddenstate.models
before = sorted({m.split(".")[0] for m in sys.modules} & {"sklearn", "scipy", "torch"})
where = {}
for package in (hiddenstate, hiddenstate.models):
    for name in package.__all__:
        value = getattr(package, name)  # through __getattr__: nothing imported it yet
        if isinstance(value, str):
            where[package.__name__ + "." + name] = value
            continue
        home = importlib.import_module(value.__module__)
        assert getattr(home, value.__name__) is value, name
        where[package.__name__ + "." + name] = value.__module__ + "." + value.__qualname__
print(json.dumps({"before": before, "where": where}))
"""


def test_every_public_name_resolves_in_a_fresh_interpreter():
    """In a fresh interpreter (nothing imported by other tests), ``import hiddenstate``
    loads neither scikit-learn nor SciPy nor torch, and every name of ``__all__`` of
    ``hiddenstate`` and ``hiddenstate.models`` is the object its defining module holds."""
    out, _ = python(RESOLVE_ALL)
    got = json.loads(out.splitlines()[-1])
    assert got["before"] == []
    where = got["where"]
    assert len(where) == len(hs.__all__) + len(models.__all__)
    assert where["hiddenstate.HMM"] == "hiddenstate.models.hmm.estimator.HMM"
    assert where["hiddenstate.ProgramModel"] == "hiddenstate.programs.model.ProgramModel"
    assert where["hiddenstate.load"] == "hiddenstate.persist.load"
    assert where["hiddenstate.PCFG"] == where["hiddenstate.models.PCFG"]
    assert where["hiddenstate.models.TokenScores"].startswith("hiddenstate.")
    assert where["hiddenstate.__version__"] == hs.__version__


def test_subpackages_load_on_attribute_access_in_a_fresh_interpreter():
    out, _ = python("""
        import hiddenstate as hs
        print(hs.treenet.layered.__module__, hs.models.pcfg.PCFG.__name__, hs.HMM.__module__)
    """)
    assert out.split() == ["hiddenstate.treenet.structure", "PCFG",
                           "hiddenstate.models.hmm.estimator"]


# ----------------------------------------------------------------------- compile notice

KERNEL = """
import numpy as np
from hiddenstate.kernels.tables import shift_rows
x = np.zeros((3, 2))
shift_rows(x, np.ones(2, dtype=np.bool_), np.empty_like(x), np.empty(3))
shift_rows(x + 1, np.ones(2, dtype=np.bool_), np.empty_like(x), np.empty(3))
"""
USER_KERNEL = """
from numba import njit
njit(lambda a: a + 1)(1.0)
"""


def test_a_cold_kernel_says_so_once_on_a_terminal_and_a_cached_one_is_silent(tmp_path):
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache"), "HIDDENSTATE_COMPILE_NOTICE": ""}
    second = ("y = x.astype(np.float32)\n"  # a second signature: a second compilation
              "shift_rows(y, np.ones(2, dtype=np.bool_), y.copy(), np.empty(3, np.float32))")
    _, cold = on_terminal(KERNEL + second, env)
    assert cold.count(compile_notice.MESSAGE) == 1 and cold.strip() == compile_notice.MESSAGE
    _, warm = on_terminal(KERNEL + USER_KERNEL, env)  # cached, and a user's own function
    assert warm == ""
    _, other = on_terminal(USER_KERNEL, {**env, "NUMBA_CACHE_DIR": str(tmp_path / "other")})
    assert other == ""


def test_the_notice_stays_out_of_pipes_unless_asked_for(tmp_path):
    _, piped = python(KERNEL, {"NUMBA_CACHE_DIR": str(tmp_path / "a"),
                               "HIDDENSTATE_COMPILE_NOTICE": ""})
    assert piped == ""
    _, forced = python(KERNEL, {"NUMBA_CACHE_DIR": str(tmp_path / "b"),
                                "HIDDENSTATE_COMPILE_NOTICE": "1"})
    assert forced.strip() == compile_notice.MESSAGE
    _, off = on_terminal(KERNEL, {"NUMBA_CACHE_DIR": str(tmp_path / "c"),
                                  "HIDDENSTATE_COMPILE_NOTICE": "0"})
    assert off == ""


# ----------------------------------------------------------------------------- warm-up

FIRST_RUNS = """
import numpy as np
import hiddenstate as hs
from numba.core import event

compiled = []
class Listener(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Listener())

rng = np.random.default_rng(0)
X = rng.integers(0, 5, size=(1000, 1))           # the README's quick start
model = hs.HMM(n_states=3, emission="categorical", n_iter=200, random_state=0)
model.fit(X, [400, 600])
model.decode(X, [400, 600]); model.predict_proba(X, [400, 600]); model.score(X); model.sample(5)
hs.HMM(4, n_iter=5, random_state=1).fit(X.astype(np.int32))
hs.HMM(3, emission="gaussian", n_iter=5, random_state=0).fit(rng.normal(size=(500, 2)))
hs.HMM(3, emission="gaussian", covariance_type="tied", n_iter=5).fit(rng.normal(size=(500, 3)))
hs.HMM(2, emission="poisson", n_iter=5, random_state=0).fit(rng.poisson(2.0, size=(300, 2)))
hs.HMM(3, learn="vb", n_iter=5, random_state=0).fit(X)
hs.HMM(3, learn="online-em", random_state=0).fit(X, [500, 500])
hs.HMM(2, n_iter=2, random_state=0).fit(rng.integers(0, 3, size=(30000, 1)))
print(json.dumps(compiled))
"""


@pytest.mark.slow
def test_after_the_warm_up_first_fits_compile_nothing(tmp_path):
    """The warm-up compiles the signatures real calls use: first calls in a fresh
    interpreter, on the same cache, load every kernel from it (about 60 s: compiles)."""
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache"), "HIDDENSTATE_COMPILE_NOTICE": "1"}
    proc = subprocess.run([sys.executable, "-m", "hiddenstate.warmup"], capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert str(tmp_path / "cache") in proc.stderr and "compiled" in proc.stderr
    out, err = python("import json\n" + FIRST_RUNS, env, timeout=600)
    assert json.loads(out.splitlines()[-1]) == []
    assert compile_notice.MESSAGE not in err

"""Every code block of README.md and of the pages in docs/ runs, and prints what the page says.

The convention (documented in docs/doc-tests.md):

- A ```` ```python ```` block runs. The blocks of one page run in order, in one namespace
  and one scratch directory, as a reader who pastes them one after the other would.
- Its printed output is checked against the page: against the bare ```` ``` ```` (or
  ```` ```text ````) block that follows it when the text between the two is empty or
  starts with "prints" (every line equal after collapsing runs of spaces; ``...`` in the
  page matches anything), and against every ``print(...)  # value`` comment (``value``
  appears in what the block printed).
- Words after the language mark a block that does not run in the default suite, each
  reported as a skip with its reason: ``notest`` (a signature or a sketch),
  ``needs-data`` (reads ``../shared/data``, which a clone does not have; runs with
  ``-m slow`` where that folder exists, found from the scratch directory through a link),
  ``slow`` (runs with ``-m slow``), ``gpu`` (needs CUDA). Whether ``-m`` selects a block
  is evaluated as pytest evaluates it (``-m 'not slow'`` does not).
- A ```` ```bash ```` block's ``hiddenstate`` command lines must parse, whatever its
  markers: the command and every option they use exist (``hiddenstate.cli.build_parser``).
  A ``bash run`` block also runs, in order with the page's other ``run`` blocks, in the
  page's scratch directory, and its output is checked like a Python block's.

The markdown is read with markdown-it-py, the CommonMark parser the site's MyST uses, so
the tests see the blocks the site shows.

The docstrings of the modules whose API reference is finished (``NUMPYDOC_DONE`` in
``docs/_api.py``) are held to the same standard: every ``Examples`` section of a public name
the reference shows runs (``doctest``, ``...`` matches anything), and their docstrings
validate as numpydoc (the report of ``docs/_api.py``, which ``make docs`` also enforces).
"""

from __future__ import annotations

import contextlib
import doctest
import importlib.util
import io
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression  # what -m evaluates; pytest has no public API
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PAGES = [p for p in PAGES if not {"_build", "repo", "api", "auto_examples"} & set(p.parts)]
MARKERS = {
    "notest": "not a runnable example (a signature or a sketch)",
    "needs-data": "needs ../shared/data, which a clone does not have",
    "slow": "slow: runs with -m slow",
    "gpu": "needs a CUDA GPU",
}


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    flags: list[str]
    code: str
    expected: str | None = None  # the output block that follows, if any
    index: int = 0

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


@dataclass
class PageState:
    namespace: dict = field(default_factory=dict)
    done: set = field(default_factory=set)
    failed: str | None = None


def parse(page: Path) -> list[Block]:
    """The python and bash blocks of a page, each with the output block that follows it."""
    text = page.read_text()
    lines = text.splitlines()
    fences = [t for t in MarkdownIt("commonmark").parse(text) if t.type == "fence"]
    blocks: list[Block] = []
    for i, tok in enumerate(fences):
        words = tok.info.split()
        if not words or words[0] not in ("python", "bash"):
            continue
        block = Block(page, tok.map[0] + 1, words[0], words[1:], tok.content)
        unknown = set(block.flags) - set(MARKERS) - {"run"}
        assert not unknown, f"{block.id}: unknown marker(s) {sorted(unknown)}"
        if i + 1 < len(fences) and fences[i + 1].info.strip() in ("", "text"):
            between = " ".join(lines[tok.map[1]:fences[i + 1].map[0]]).strip()
            if between == "" or between.lower().startswith("prints"):
                block.expected = fences[i + 1].content
        block.index = len(blocks)
        blocks.append(block)
    return blocks


BLOCKS = [b for page in PAGES for b in parse(page)]
STATES: dict[Path, PageState] = {}


def _skip_reason(block: Block) -> str | None:
    if "notest" in block.flags:
        return MARKERS["notest"]
    if "gpu" in block.flags:
        torch = pytest.importorskip("torch")
        if not torch.cuda.is_available():
            return MARKERS["gpu"]
    if "needs-data" in block.flags and not SHARED.is_dir():
        return MARKERS["needs-data"]
    return None


def _normalise(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.strip("\n").splitlines()]


VALUE = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|True|False")


def _same(shown: str, printed: str) -> bool:
    """A value of a comment equals a printed one at the comment's precision."""
    if shown in ("True", "False") or printed in ("True", "False"):
        return shown == printed
    decimals = len(shown.split(".")[1].split("e")[0]) if "." in shown else 0
    return "e" not in shown and round(float(printed), decimals) == float(shown) or (
        shown == printed)


def check_output(block: Block, printed: str) -> None:
    """What the block printed is what the page shows."""
    if block.expected is not None:
        got, want = _normalise(printed), _normalise(block.expected)
        pattern = "\n".join(".*".join(map(re.escape, w.split("..."))) for w in want)
        assert re.fullmatch(pattern, "\n".join(got), re.S), (
            f"{block.id}: the page shows\n{block.expected}\nbut the block printed\n{printed}")
    printed_values = VALUE.findall(printed)
    for comment in re.findall(r"print\(.*\)[ \t]+#[ \t]*(.+)", block.code):
        if not re.match(r"[-\[(\d]|True|False", comment):
            continue  # a comment, not a value: "# falls towards 0"
        at = 0
        for v in VALUE.findall(comment):  # the comment's values, in order, in the output
            hits = [i for i in range(at, len(printed_values)) if _same(v, printed_values[i])]
            assert hits, (
                f"{block.id}: '# {comment}' does not match what the block printed:\n{printed}")
            at = hits[0] + 1


def _run_python(block: Block, state: PageState) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.code, f"{block.page}:{block.line}", "exec"), state.namespace)
    return out.getvalue()


def _run_bash(block: Block) -> str:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("MPLBACKEND", "Agg")
    done = subprocess.run(["bash", "-e", "-c", block.code], capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, f"{block.id}: exit {done.returncode}\n{done.stderr}"
    return done.stdout


def _runs(block: Block) -> bool:
    return block.lang == "python" or "run" in block.flags


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """The parent of the pages' scratch directories, where ``../shared`` is the project's
    ``../shared`` (a link), so ``../shared/data`` in a page's directory is the data folder."""
    root = tmp_path_factory.mktemp("docs")
    if SHARED.is_dir():
        (root / "shared").symlink_to(SHARED.parent, target_is_directory=True)
    return root


def _marks(block: Block) -> list:
    """The pytest marks of a block's test: ``slow`` for ``slow`` and ``needs-data``."""
    return [pytest.mark.slow] if {"slow", "needs-data"} & set(block.flags) else []


def selected_by_markexpr(markexpr: str, marks: list[pytest.Mark]) -> bool:
    """Whether ``pytest -m markexpr`` selects a test that carries ``marks`` (``Mark`` objects),
    evaluated as pytest's own ``-m`` does: ``"not slow"`` leaves a ``slow`` test out."""
    if not markexpr:
        return True

    def has(name: str, /, **kwargs) -> bool:
        return any(m.name == name and all(k in m.kwargs and m.kwargs[k] == v
                                          for k, v in kwargs.items()) for m in marks)

    return Expression.compile(markexpr).evaluate(has)


def _selected(block: Block, request) -> bool:
    """Whether this session's ``-m`` selects ``block``'s test: the marks of the running test
    with its own parameter's marks exchanged for ``block``'s."""
    own = request.node.callspec.marks
    marks = [m for m in request.node.iter_markers() if m not in own]
    return selected_by_markexpr(request.config.getoption("markexpr"),
                                marks + [m.mark for m in _marks(block)])


def _execute(block: Block, scratch: Path, request) -> None:
    """Run the page's earlier blocks (if this one was selected alone), then this one. An
    earlier ``slow`` or ``needs-data`` block runs only if ``-m`` selects its test (``-m slow``),
    whatever ``-k`` selected; the others always do."""
    state = STATES.setdefault(block.page, PageState(namespace={"__name__": "__main__"}))
    work = scratch / block.page.relative_to(ROOT).as_posix().replace("/", "_")
    work.mkdir(exist_ok=True)
    with contextlib.chdir(work):
        for earlier in BLOCKS:
            if earlier.page != block.page or earlier.index > block.index:
                continue
            if earlier.index in state.done or not _runs(earlier) or earlier.lang != block.lang:
                continue
            if _skip_reason(earlier) or _marks(earlier) and not _selected(earlier, request):
                continue
            if state.failed:
                pytest.fail(f"an earlier block of the page failed: {state.failed}")
            state.done.add(earlier.index)
            try:
                printed = (_run_python(earlier, state) if earlier.lang == "python"
                           else _run_bash(earlier))
            except BaseException:
                state.failed = earlier.id
                raise
            if earlier is block:
                check_output(block, printed)


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id, marks=_marks(b))
                                   for b in BLOCKS if _runs(b)])
def test_block_runs_and_prints_what_the_page_says(block, scratch, request):
    reason = _skip_reason(block)
    if reason:
        pytest.skip(f"{block.id}: {reason}")
    _execute(block, scratch, request)


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id)
                                   for b in BLOCKS if b.lang == "bash"])
def test_bash_block_commands_parse(block):
    """Every ``hiddenstate`` command line of a bash block parses, whether the block runs in
    this session or not (parsing is quick and needs no data)."""
    for argv in hiddenstate_commands(block.code):
        check_command_parses(block, argv)


def hiddenstate_commands(code: str) -> list[list[str]]:
    """The ``hiddenstate ...`` (or ``python -m hiddenstate ...``) command lines of a shell
    block, continuation lines joined, comments and redirections dropped."""
    commands = []
    joined = re.sub(r"\\\n\s*", " ", code)
    joined = re.sub(r"<<'?(\w+)'?\n.*?\n\1\n", "\n", joined, flags=re.S)  # heredocs
    for line in joined.splitlines():
        line = line.split(" #")[0].strip()
        for part in re.split(r"\s*(?:&&|\|\||;|\|)\s*", line):
            part = re.split(r"\s(?:\d?>|<)", part)[0].strip()  # redirections
            if not re.match(r"(hiddenstate|python -m hiddenstate)(?=\s|$)", part):
                continue
            words = shlex.split(part)
            if words[:3] == ["python", "-m", "hiddenstate"]:
                words = ["hiddenstate", *words[3:]]
            if "..." not in words:
                commands.append(words[1:])
    return commands


def check_command_parses(block: Block, argv: list[str]) -> None:
    from hiddenstate.cli import build_parser

    parser = build_parser()
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            parser.parse_args(argv)
        except SystemExit as stop:
            assert stop.code == 0, f"{block.id}: hiddenstate {' '.join(argv)}\n{err.getvalue()}"


def test_the_convention_finds_blocks_and_outputs():
    """The parser sees the blocks: every page with code has some, outputs are attached."""
    assert len(BLOCKS) > 60
    assert sum(b.expected is not None for b in BLOCKS) >= 15
    programs = [b for b in BLOCKS if b.page.name == "programs.md" and b.expected]
    assert any("inside sum" in b.expected for b in programs)


def test_a_wrong_output_fails():
    """The comparison can fail: a block whose page shows another number."""
    block = Block(ROOT / "README.md", 1, "python", [], "print(1.5)", expected="1.6\n")
    with pytest.raises(AssertionError):
        check_output(block, "1.5\n")
    check_output(Block(ROOT / "README.md", 1, "python", [], "", expected="took ...s\n"),
                 "took 0.8s\n")
    with pytest.raises(AssertionError):
        check_command_parses(block, ["fit", "x.txt", "--no-such-option"])


# --- links and file names -----------------------------------------------------------------

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_PATH = re.compile(
    r"`((?:\.\./)*(?:src|tests|benchmarks|experiments|docs|examples)/[\w./-]*\.\w+)`")
GENERATED = ("auto_examples/", "api/")  # pages `make docs` writes (docs/index.md links them)
OUTPUTS = ("experiments/out/", "benchmarks/out/")  # what scripts write, ignored by git
# pages another change in flight adds; remove an entry once the file is in the repository
PENDING: dict[str, str] = {}


def _tracked() -> set[str]:
    done = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        pytest.skip("not a git checkout: cannot tell the files a clone has")
    return set(done.stdout.splitlines())


def _missing(page: Path, target: str, tracked: set[str]) -> str | None:
    path = (page.parent / target.split("#")[0]).resolve()
    try:
        rel = path.relative_to(ROOT).as_posix()
    except ValueError:
        return None  # outside the repository (../shared/...): the page says so in words
    if rel in tracked or any(t.startswith(rel + "/") for t in tracked):
        return None
    return rel


def test_links_point_at_files_a_clone_has():
    """Every relative link of README.md and docs/ names a file that git tracks (so a clone
    has it), except the pages the site build generates."""
    tracked, missing = _tracked(), []
    for page in PAGES:
        for target in LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            if page.parent == ROOT / "docs" and target.startswith(GENERATED):
                continue
            rel = _missing(page, target, tracked)
            if rel and rel not in PENDING:
                missing.append(f"{page.relative_to(ROOT)}: {target}")
    assert not missing, missing


def test_repository_paths_named_in_pages_exist():
    """Every repository file a page names in backticks (`tests/test_x.py`,
    `experiments/results/x.md`) is in the repository; script outputs are named as such."""
    tracked, missing = _tracked(), []
    for page in PAGES:
        for name in set(CODE_PATH.findall(page.read_text())):
            rel = name.lstrip("./")
            if rel.startswith(OUTPUTS) or "*" in rel:
                continue
            hit = (rel in tracked or any(t.startswith(rel + "/") for t in tracked)
                   or any(t.endswith("/" + rel) for t in tracked))
            if not hit and rel not in PENDING:
                missing.append(f"{page.relative_to(ROOT)}: {name}")
    assert not missing, missing


def test_the_link_check_can_fail(tmp_path):
    """A link to a file git does not track is reported."""
    tracked = _tracked()
    assert _missing(ROOT / "README.md", "docs/no-such-page.md", tracked) == (
        "docs/no-such-page.md")
    assert _missing(ROOT / "README.md", "docs/hmm.md#data", tracked) is None
    assert _missing(ROOT / "docs" / "nbh.md", "../experiments/results/prism_nbh.md",
                    tracked) is None


# --- the examples and the form of the API reference's docstrings --------------------------

sys.path.insert(0, str(ROOT / "docs"))
import _api  # noqa: E402  (docs/_api.py: what the reference shows)

DOCTEST_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


# the finished modules this environment can run (hiddenstate.lm needs the torch extra, the
# examples of hiddenstate.distributed the dask extra)
_EXTRA = {"hiddenstate.lm": "torch", "hiddenstate.distributed": "distributed"}
DONE_HERE = [m for m in _api.NUMPYDOC_DONE
             if not any(m.startswith(mod) and importlib.util.find_spec(dist) is None
                        for mod, dist in _EXTRA.items())]


def _docstring_tests() -> list:
    """One doctest per docstring with an Examples section, over the public names (and their
    methods and properties) of the finished modules, as the API reference shows them."""
    finder = doctest.DocTestFinder(recurse=False)
    out = []
    for modname in DONE_HERE:
        for full, obj in _api.documented_names(modname):
            target = obj.fget if isinstance(obj, property) else getattr(obj, "__func__", obj)
            for test in finder.find(target, full, globs={}):
                if test.examples:
                    out.append(pytest.param(test, id=full))
    return out


@pytest.mark.parametrize("test", _docstring_tests())
def test_docstring_example_runs(test, tmp_path, monkeypatch):
    """The docstring's examples print what they show (in a scratch directory)."""
    monkeypatch.chdir(tmp_path)
    runner = doctest.DocTestRunner(optionflags=DOCTEST_FLAGS)
    report = io.StringIO()
    runner.run(test, out=report.write, clear_globs=True)
    assert runner.failures == 0, report.getvalue()


def test_finished_modules_validate_as_numpydoc():
    """Every public name and method of the finished modules meets numpydoc's checks
    (``_api.NUMPYDOC_CHECKS``; an Examples section for every public class and function)."""
    pytest.importorskip("numpydoc", reason="numpydoc comes with the docs extra (make docs)")
    report = _api.numpydoc_report(DONE_HERE)
    assert not report, "\n".join(f"{name}: {'; '.join(codes)}" for name, codes in report)


def _probe(x, n=1):
    """Add n to x; the Parameters and Returns sections are missing."""
    return x + n


def _probe_done(x: float, n: int = 1) -> float:
    """Add ``n`` to ``x``.

    Parameters
    ----------
    x : float
        The number.
    n : int, default=1
        What to add.

    Returns
    -------
    float
        ``x + n``.

    Examples
    --------
    >>> _probe_done(1.5)
    2.6
    """
    return x + n


def test_the_docstring_checks_can_fail(monkeypatch):
    """A docstring without its sections fails the report, and an example that prints
    something else than it shows fails the doctest."""
    import types

    probe = types.ModuleType("hs_docstring_probe")
    probe.__all__ = ["probe", "probe_done"]
    probe.probe, probe.probe_done = _probe, _probe_done
    for fn in (_probe, _probe_done):
        monkeypatch.setattr(fn, "__module__", probe.__name__)
        monkeypatch.setattr(fn, "__qualname__", fn.__name__.lstrip("_"))
        monkeypatch.setattr(fn, "__name__", fn.__name__.lstrip("_"))
    monkeypatch.setitem(sys.modules, probe.__name__, probe)
    if _api.importlib.util.find_spec("numpydoc") is not None:
        report = dict(_api.numpydoc_report([probe.__name__]))
        assert set(report) == {"hs_docstring_probe.probe"}
        assert {c.split()[0] for c in report["hs_docstring_probe.probe"]} >= {
            "PR01", "RT01", "EX01"}
    test = doctest.DocTestFinder().find(_probe_done, "probe_done",
                                        globs={"_probe_done": _probe_done})[0]
    runner = doctest.DocTestRunner(optionflags=DOCTEST_FLAGS)
    runner.run(test, out=lambda _: None)
    assert runner.failures == 1  # it prints 2.5, the docstring shows 2.6


# --- which blocks a selection runs ----------------------------------------------------------

def test_the_marker_expression_is_read_as_pytest_reads_it():
    """``-m 'not slow'`` (the default) leaves a slow block out, though its text says "slow";
    ``-m slow`` selects it and leaves the others out."""
    slow = [pytest.mark.slow.mark]
    assert not selected_by_markexpr("not slow", slow)
    assert selected_by_markexpr("not slow", [])
    assert selected_by_markexpr("slow", slow)
    assert not selected_by_markexpr("slow", [])
    assert selected_by_markexpr("", slow) and selected_by_markexpr("slow or not slow", [])


PROBE_PAGE = """\
```python
log("first")
```

```python slow
log("slow")
```

```python needs-data
log(open("../shared/data/probe.txt").read())
```

```python
log("last")
```
"""


def test_a_selection_runs_the_blocks_it_selects(tmp_path):
    """The harness itself (a copy, on a page of four blocks that log that they ran): the
    default selection runs the fast blocks and not the slow one before them; ``-m slow``
    runs the slow block, the data block (``../shared/data`` is found from the page's scratch
    directory) and the fast block before them; without the data folder the data block is
    skipped with its reason."""
    repo, data, ran = tmp_path / "project", tmp_path / "shared" / "data", tmp_path / "ran.txt"
    (repo / "tests").mkdir(parents=True)
    (repo / "docs").mkdir()
    data.mkdir(parents=True)
    (data / "probe.txt").write_text("data")
    (repo / "tests" / "test_docs.py").write_text(Path(__file__).read_text())
    (repo / "docs" / "_api.py").write_text("NUMPYDOC_DONE = []\n")
    (repo / "README.md").write_text(
        f"```python notest\n```\n\n```python\ndef log(word):\n"
        f"    open({str(ran)!r}, 'a').write(word + ' ')\n```\n\n{PROBE_PAGE}")
    (repo / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    slow: slow\n"
        "addopts = -m 'not slow' -p no:cacheprovider -p no:hypothesispytest\n")

    def run(*args: str) -> tuple[str, str]:
        ran.unlink(missing_ok=True)
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-k", "runs_and",
                               *args], cwd=repo, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return (ran.read_text() if ran.exists() else ""), done.stdout

    assert run()[0] == "first last "
    assert run("-m", "slow")[0] == "first slow data "
    data.rename(tmp_path / "away")
    logged, out = run("-m", "slow")
    assert logged == "first slow " and MARKERS["needs-data"] in out

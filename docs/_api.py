"""The API reference of the documentation site, generated from the public modules.

``write_api_pages`` (a Sphinx ``builder-inited`` hook) writes ``docs/api/`` (ignored by
git): one page per public module listing every name of its ``__all__`` (or, for a module
without one, the public names it defines) and one page per name, rendered by autodoc +
numpydoc from its docstring. ``python docs/_api.py --numpydoc-report`` lists the public names whose
docstrings do not validate as numpydoc (``numpydoc.validate``), for the docstring sweep.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (module, one-line summary); the order of the reference's table of contents
PUBLIC_MODULES = [
    ("hiddenstate", "the estimators, errors and ``load``"),
    ("hiddenstate.learn", "batch learning: one ``fit`` for every mode"),
    ("hiddenstate.learn.online", "streaming learners"),
    ("hiddenstate.families", "emission families"),
    ("hiddenstate.programs", "probabilistic programs (PRISM in Python)"),
    ("hiddenstate.sources", "black-box sources for PROPS"),
    ("hiddenstate.metrics", "divergences, perplexity, tagging and tree scores"),
    ("hiddenstate.drift", "drifting teachers for streaming experiments"),
    ("hiddenstate.textio", "reading text, CSV and ``.npy`` data"),
    ("hiddenstate.grammar", "treebanks and grammars for ``PCFG``"),
    ("hiddenstate.treenet", "structures of tree and DAG networks"),
    ("hiddenstate.distributed", "learning on a Dask cluster"),
    ("hiddenstate.lm", "HMM language models with many states (torch)"),
    ("hiddenstate.compat.hmmlearn", "drop-in hmmlearn 0.3.3 classes"),
    ("hiddenstate.personalize", "the PROPS personalisation pipeline"),
    ("hiddenstate.errors", "the exceptions raised at the public boundary"),
    ("hiddenstate.cli", "the command line"),
]


def public_names(modname: str) -> list[str]:
    """The names a module exports: its ``__all__``, else the public names it defines."""
    mod = importlib.import_module(modname)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n, obj in vars(mod).items()
                 if not n.startswith("_") and getattr(obj, "__module__", None) == modname
                 and (inspect.isclass(obj) or inspect.isfunction(obj))]
        if modname == "hiddenstate.cli":
            names = [n for n in names if n in ("main", "build_parser", "save_model_dir")]
    return [n for n in names if n != "__version__"]


def _title(text: str) -> str:
    return f"{text}\n{'=' * len(text)}\n"


def summary(obj) -> str:
    """The first sentence of ``obj``'s docstring, cut outside inline literals and math."""
    if not (inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj)):
        return ""  # a constant: its type's docstring is not about it
    doc = inspect.getdoc(obj) or ""
    para = " ".join(doc.split("\n\n")[0].split())
    if not para:
        return ""
    depth, i = False, 0
    while i < len(para):
        if para.startswith("``", i):
            depth = not depth
            i += 2
            continue
        if para[i] == "`":  # :math:`...`, :class:`...`
            j = para.find("`", i + 1)
            i = j + 1 if j > 0 else len(para)
            continue
        if not depth and para[i] == "." and (i + 1 == len(para) or para[i + 1] == " "):
            return para[: i + 1]
        i += 1
    return para if not depth else para + "``"


def _stub(fullname: str, obj) -> str:
    modname, name = fullname.rsplit(".", 1)
    head = [_title(fullname), f".. currentmodule:: {modname}\n"]
    if inspect.isclass(obj):
        head.append(f".. autoclass:: {name}\n   :members:\n   :show-inheritance:\n")
    elif callable(obj):
        head.append(f".. autofunction:: {name}\n")
    else:
        head.append(f".. autodata:: {name}\n   :no-value:\n")
        head.append(f"Value: ``{obj!r}``\n" if len(repr(obj)) < 200 else "")
    return "\n".join(head)


def write_api_pages(app=None) -> None:
    """Write ``docs/api/index.rst``, one page per public module with a table of its
    names, and one page per name (autodoc + numpydoc render its docstring)."""
    out = HERE / "api"
    (out / "generated").mkdir(parents=True, exist_ok=True)
    rows = []
    for modname, _ in PUBLIC_MODULES:
        mod = importlib.import_module(modname)
        names = public_names(modname)
        page = [_title(f"``{modname}``"), f".. automodule:: {modname}\n   :no-members:\n",
                f".. currentmodule:: {modname}\n",
                ".. list-table::\n   :widths: 30 70\n"]
        for n in names:
            obj = getattr(mod, n)
            _write_if_changed(out / "generated" / f"{modname}.{n}.rst",
                              _stub(f"{modname}.{n}", obj))
            page.append(f"   * - :obj:`{n}`\n     - {summary(obj) or ' '}")
        page.append("\n.. toctree::\n   :hidden:\n")
        page += [f"   generated/{modname}.{n}" for n in names]
        _write_if_changed(out / f"{modname}.rst", "\n".join(page) + "\n")
        rows.append(f"   {modname}")
    index = [_title("API reference"),
             "Every public name of hiddenstate, generated from its docstring. The estimators "
             "share one contract (:doc:`../estimator-contract`).\n",
             ".. toctree::\n   :maxdepth: 1\n"] + rows
    _write_if_changed(out / "index.rst", "\n".join(index) + "\n")


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


# repository files shown as pages of the site (copied to docs/repo/ at build time)
REPO_PAGES = ["experiments/README.md", "experiments/results/*.md", "experiments/results/*.png",
              "benchmarks/README.md"]
_LINK = re.compile(r"\]\(((?:\.\./)+[^)#\s]+)(#[^)\s]*)?\)")


def copy_repo_pages(app=None) -> None:
    """Copy the repository files the guides link to (results tables, READMEs) into
    ``docs/repo/``, so that a link that works on GitHub also works on the site."""
    root = HERE.parent
    for pattern in REPO_PAGES:
        for src in sorted(root.glob(pattern)):
            dst = HERE / "repo" / src.relative_to(root)
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.suffix == ".md":
                _write_if_changed(dst, "---\norphan: true\n---\n\n" + src.read_text())
            elif not dst.exists() or dst.read_bytes() != src.read_bytes():
                dst.write_bytes(src.read_bytes())


def repo_links(app, docname, source) -> None:
    """Point links to repository files outside ``docs/`` at their copies in
    ``docs/repo/`` (``copy_repo_pages``), and links to gallery scripts
    (``examples/plot_*.py``) at their gallery pages."""
    page = HERE / docname
    root = HERE.parent

    def swap(m):
        target = (page.parent / m.group(1)).resolve()
        try:
            rel = target.relative_to(root)
        except ValueError:
            return m.group(0)
        if rel.parts[0] == "docs" and not docname.startswith("repo/"):
            return m.group(0)
        if docname.startswith("repo/"):  # a copied page: its links are relative to root/rel
            target = (root / Path(docname).parent.relative_to("repo") / m.group(1)).resolve()
            rel = target.relative_to(root)
        if rel.parts[0] == "examples" and rel.suffix == ".py":  # a gallery script: its page
            link = Path(*[".."] * (len(Path(docname).parts) - 1), "auto_examples", rel.stem)
            return f"]({link.as_posix()}{m.group(2) or ''})"
        copy = HERE / "repo" / rel
        if copy.exists():
            link = Path(*[".."] * (len(Path(docname).parts) - 1), "repo", rel)
            return f"]({link.as_posix()}{m.group(2) or ''})"
        return m.group(0)

    source[0] = _LINK.sub(swap, source[0])


def optional_toctree_entries(app, docname, source) -> None:
    """``@optional NAME`` lines of the guides' toctree: ``NAME`` if ``docs/NAME.md`` exists, else
    nothing (pages another change adds appear once they are there)."""
    if docname != "guides":
        return
    source[0] = re.sub(
        r"^@optional (\S+)$",
        lambda m: m.group(1) if (HERE / f"{m.group(1)}.md").exists() else "",
        source[0], flags=re.M)


# --- numpydoc report -------------------------------------------------------------------

# the checks that say "this is not a numpydoc docstring" (numpydoc.validate's codes)
NOT_NUMPYDOC = {
    "GL08": "no docstring",
    "PR01": "parameters not documented",
    "PR02": "documents parameters it does not take",
    "RT01": "no Returns section",
    "SS06": "summary longer than one line",
}


def _members(fullname: str, obj) -> list[str]:
    out = [fullname]
    if inspect.isclass(obj):
        for name, member in vars(obj).items():
            if name.startswith("_"):
                continue
            if inspect.isfunction(member) or isinstance(member, property):
                out.append(f"{fullname}.{name}")
    return out


def numpydoc_report() -> list[tuple[str, list[str]]]:
    """(public name, unmet checks) for every public name and public method."""
    from numpydoc.validate import validate

    report = []
    for modname, _ in PUBLIC_MODULES:
        mod = importlib.import_module(modname)
        for name in public_names(modname):
            obj = getattr(mod, name)
            if not (inspect.isclass(obj) or callable(obj)):
                continue
            for full in _members(f"{modname}.{name}", obj):
                try:
                    result = validate(full)
                except Exception as exc:  # noqa: BLE001 - an object numpydoc cannot read
                    report.append((full, [f"not validated ({type(exc).__name__})"]))
                    continue
                codes = sorted({c for c, _ in result["errors"] if c in NOT_NUMPYDOC})
                if codes:
                    report.append((full, [f"{c} {NOT_NUMPYDOC[c]}" for c in codes]))
    return report


if __name__ == "__main__":
    if "--numpydoc-report" not in sys.argv:
        sys.exit("usage: python docs/_api.py --numpydoc-report")
    sys.path.insert(0, str(HERE.parent / "src"))
    rows = numpydoc_report()
    for full, codes in rows:
        print(f"{full}: {'; '.join(codes)}")
    print(f"{len(rows)} public names or methods are not numpydoc yet")

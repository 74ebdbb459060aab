"""The API reference of the documentation site, generated from the public modules.

``write_api_pages`` (a Sphinx ``builder-inited`` hook) writes ``docs/api/`` (ignored by
git): one page per public module listing every name of its ``__all__`` (or, for a module
without one, the public names it defines) and one page per name, rendered by autodoc +
numpydoc from its docstring. ``python docs/_api.py --numpydoc-report [MODULE ...]`` lists the
public names (and their methods) whose docstrings do not validate as numpydoc
(``numpydoc.validate``) under :data:`NUMPYDOC_CHECKS`.

The modules of :data:`NUMPYDOC_DONE` are held to it: ``docs/conf.py`` turns numpydoc's
validation on for them (``make docs`` fails on a regression), ``tests/test_docs.py`` asserts
that this report is empty for them and runs the examples of their docstrings.
"""

from __future__ import annotations

import functools
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
    ("hiddenstate.progress", "progress bars for fits"),
    ("hiddenstate.threads", "the threads of the compiled kernels"),
    ("hiddenstate.cli", "the command line"),
]


# the modules whose docstrings are numpydoc: validated by `make docs` (docs/conf.py) and by
# tests/test_docs.py, which also runs their examples. Add a module once its sweep is done;
# a public name of a module (``hiddenstate.HMM``) stands for itself and its members while
# the module's other names are still to do.
NUMPYDOC_DONE = (
    "hiddenstate",
    "hiddenstate.learn",
    "hiddenstate.distributed",
    "hiddenstate.cli",
    "hiddenstate.programs",
    "hiddenstate.learn.online",
    "hiddenstate.families",
    "hiddenstate.sources",
    "hiddenstate.metrics",
    "hiddenstate.drift",
    "hiddenstate.textio",
    "hiddenstate.grammar",
    "hiddenstate.treenet",
    "hiddenstate.compat.hmmlearn",
    "hiddenstate.errors",
    "hiddenstate.progress",
    "hiddenstate.lm",
    "hiddenstate.personalize",
    "hiddenstate.io",
    "hiddenstate.inference",
    "hiddenstate.threads",
)

# numpydoc.validate's checks those modules meet: all of them ("all"), except
#   SA01  a See Also section in every docstring: added where it helps, not forced;
#   ES01  an extended summary: a property or a short method is said in its summary;
#   EX01  an Examples section: required of every public class and function (below,
#         EXAMPLES_REQUIRED), not of every method and property.
NUMPYDOC_CHECKS = {"all", "SA01", "ES01", "EX01"}


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


@functools.cache
def _paged_classes() -> frozenset:
    """The classes that have a page of their own (public names of the public modules)."""
    out = set()
    for modname, _ in PUBLIC_MODULES:
        mod = importlib.import_module(modname)
        out.update(obj for n in public_names(modname)
                   if inspect.isclass(obj := getattr(mod, n)))
    return frozenset(out)


def _own_doc(member) -> str | None:
    fn = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
    return fn.__doc__


def class_members(cls) -> list[str]:
    """The public methods and properties shown on ``cls``'s page, in definition order.

    Those ``cls`` defines and those it inherits from a hiddenstate base without a page of
    its own (a private helper class such as the drifting teachers' common base); a method
    that only implements a documented method of a base with a page (no docstring of its
    own: an emission family's ``log_likelihood``) is documented on that base's page."""
    paged = _paged_classes()
    mro = cls.__mro__
    ours = [c for c in mro if c.__module__.startswith("hiddenstate")]
    first_paged = next((i for i, c in enumerate(ours) if c is not cls and c in paged),
                       len(ours))
    sources = [cls] + [c for c in ours[1:first_paged]]  # cls and its private bases
    elsewhere = ours[first_paged:]  # shown on the page of a paged base
    out: list[str] = []
    for source in sources:
        for name, member in vars(source).items():
            if name.startswith("_") or name in out:
                continue
            if not (inspect.isfunction(member) or isinstance(
                    member, (property, classmethod, staticmethod, functools.cached_property))):
                continue
            if not _own_doc(member) and any(
                    name in vars(c) and _own_doc(vars(c)[name]) for c in elsewhere):
                continue  # documented on the page of the base class it implements
            out.append(name)
    return out


#: how the docstring of a method for extenders begins: a hook a subclass overrides, or an
#: entry point that subclasses and the library's other layers call
FRAMEWORK_MARKS = ("**Hook.**", "**Entry point.**")


def is_framework(cls, name: str) -> bool:
    """Whether the member ``name`` of ``cls`` is for extenders (its docstring begins with
    one of :data:`FRAMEWORK_MARKS`): documented on the extension-points page, not on the
    class's page."""
    doc = inspect.getdoc(inspect.getattr_static(cls, name)) or ""
    return doc.startswith(FRAMEWORK_MARKS)


def user_members(cls) -> list[str]:
    """The members of :func:`class_members` a user calls (the class's page)."""
    return [m for m in class_members(cls) if not is_framework(cls, m)]


def framework_members(cls) -> list[str]:
    """The members of :func:`class_members` for extenders (the extension-points page)."""
    return [m for m in class_members(cls) if is_framework(cls, m)]


def alias_of(modname: str, name: str) -> str | None:
    """The full name under which an earlier public module of the reference already
    documents the class or function ``modname.name``, when ``modname`` is not where it is
    defined (``hiddenstate.programs.ProgramModel`` is ``hiddenstate.ProgramModel``): its page
    points there instead of documenting the object twice."""
    obj = getattr(importlib.import_module(modname), name)
    if not (inspect.isclass(obj) or inspect.isfunction(obj)) or obj.__module__ == modname:
        return None
    for earlier, _ in PUBLIC_MODULES:
        if earlier == modname:
            return None
        mod = importlib.import_module(earlier)
        if any(getattr(mod, n) is obj for n in public_names(earlier)):
            return f"{earlier}.{next(n for n in public_names(earlier) if getattr(mod, n) is obj)}"
    return None


def _stub(fullname: str, obj) -> str:
    modname, name = fullname.rsplit(".", 1)
    head = [_title(fullname), f".. currentmodule:: {modname}\n"]
    alias = alias_of(modname, name)
    if alias:
        role = "class" if inspect.isclass(obj) else "func"
        head.append(f"``{fullname}`` is :{role}:`{alias}`, documented there.\n")
    elif inspect.isclass(obj):
        members = ", ".join(user_members(obj) + _documented_attributes(obj))
        head.append(f".. autoclass:: {name}\n   :members: {members}\n   :show-inheritance:\n"
                    if members else f".. autoclass:: {name}\n   :show-inheritance:\n")
        if framework_members(obj):
            head.append(f"The extension points of ``{name}`` (methods a subclass overrides or "
                        "calls) are on :doc:`../hooks`.\n")
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
             "share one contract (:doc:`../estimator-contract`); the methods for extenders "
             "are on :doc:`hooks`.\n",
             ".. toctree::\n   :maxdepth: 1\n"] + rows + ["   hooks"]
    _write_if_changed(out / "index.rst", "\n".join(index) + "\n")
    _write_if_changed(out / "hooks.rst", hooks_page())


def hooks_page() -> str:
    """The extension-points page: for every public class with members for extenders
    (:func:`framework_members`), those members, rendered by autodoc from their
    docstrings (its page lists only what a user calls)."""
    parts = [_title("Extension points (for extenders)"),
             "The methods a subclass of an estimator overrides (**hooks**) or calls "
             "(**entry points**): how PROPS, the hmmlearn classes and "
             "``hiddenstate.distributed`` are built on the HMM. A user of the estimators "
             "needs none of them: their pages list the methods a user calls. The guide is "
             ":doc:`../extending`.\n"]
    seen = set()
    for modname, _ in PUBLIC_MODULES:
        mod = importlib.import_module(modname)
        for n in public_names(modname):
            obj = getattr(mod, n)
            if not inspect.isclass(obj) or obj in seen or alias_of(modname, n):
                continue
            seen.add(obj)
            hooks = framework_members(obj)
            if not hooks:
                continue
            head = f"``{modname}.{n}``"
            parts += [f"{head}\n{'-' * len(head)}\n", f".. currentmodule:: {modname}\n"]
            parts += [f".. automethod:: {n}.{m}\n" for m in hooks]
    return "\n".join(parts)


def _documented_attributes(cls) -> list[str]:
    """Class attributes with a ``#:`` comment (autodoc shows them) in ``cls`` or in the
    bases whose members its page shows."""
    from sphinx.pycode import ModuleAnalyzer

    out = []
    for source in cls.__mro__:
        if source is not cls and (not source.__module__.startswith("hiddenstate")
                                  or source in _paged_classes()):
            continue
        try:
            docs = ModuleAnalyzer.for_module(source.__module__).find_attr_docs()
        except Exception:  # noqa: BLE001 - no source to read: no attribute comments
            continue
        out += [attr for (qual, attr) in docs
                if qual == source.__qualname__ and not attr.startswith("_") and attr not in out]
    return out


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

def split_target(target: str) -> tuple[str, list[str]]:
    """``(module, public names)`` of an entry of :data:`NUMPYDOC_DONE`: a public module
    (all its public names) or one public name of a module (``hiddenstate.HMM``: that
    class and its members, while other names of the module are still to do)."""
    if target in dict(PUBLIC_MODULES) or "." not in target:
        return target, public_names(target)
    modname, name = target.rsplit(".", 1)
    obj = getattr(importlib.import_module(modname), name, None)
    if obj is None or inspect.ismodule(obj):  # a module (or a submodule not imported yet)
        return target, public_names(target)
    if name not in public_names(modname):
        raise ValueError(f"{target} is neither a public module nor a public name of one")
    return modname, [name]


def documented_names(target: str) -> list[tuple[str, object]]:
    """``(full name, object)`` of every public name of a module (or of the one public name
    ``target``, see :func:`split_target`) that the reference shows (classes and functions;
    constants are not validated) and of their methods and properties
    (:func:`class_members`)."""
    modname, names = split_target(target)
    mod = importlib.import_module(modname)
    out = []
    for name in names:
        obj = getattr(mod, name)
        if not (inspect.isclass(obj) or callable(obj)) or alias_of(modname, name):
            continue
        out.append((f"{modname}.{name}", obj))
        if inspect.isclass(obj):
            out += [(f"{modname}.{name}.{m}", inspect.getattr_static(obj, m))
                    for m in class_members(obj)]
    return out


def data_names(modules) -> list[str]:
    """The full names of the data the reference shows for ``modules``: constants of
    ``__all__`` and class attributes with a ``#:`` comment. numpydoc's validator cannot
    judge them (it reads a data object's docstring from the type of its value: the
    docstring of ``str`` for ``UNK``), so ``docs/conf.py`` leaves them out of the
    validation; their ``#:`` comments are plain text."""
    out = []
    for target in modules:
        modname, names = split_target(target)
        mod = importlib.import_module(modname)
        for name in names:
            obj = getattr(mod, name)
            if inspect.isclass(obj):
                out += [f"{modname}.{name}.{a}" for a in _documented_attributes(obj)]
            elif not callable(obj):
                out.append(f"{modname}.{name}")
    return out


def numpydoc_report(modules=None) -> list[tuple[str, list[str]]]:
    """``(name, unmet checks)`` for every public name and method of ``modules`` (default:
    every public module) whose docstring fails :data:`NUMPYDOC_CHECKS`; a public class or
    function without an Examples section fails ``EX01``."""
    from numpydoc.docscrape import get_doc_object
    from numpydoc.validate import Validator, get_validation_checks, validate

    checks = get_validation_checks(NUMPYDOC_CHECKS)
    report = []
    for target in modules or [m for m, _ in PUBLIC_MODULES]:
        modname = split_target(target)[0]
        for full, obj in documented_names(target):
            try:
                # by name, as numpydoc reads it; but a function that shares its name with a
                # submodule (hiddenstate.distributed.fit) would be read as that module: then
                # the function itself, as autodoc hands it to numpydoc in `make docs`
                named = Validator._load_obj(full)
                result = validate(get_doc_object(obj) if inspect.ismodule(named)
                                  and inspect.isfunction(obj) else full)
            except Exception as exc:  # noqa: BLE001 - an object numpydoc cannot read
                report.append((full, [f"not validated ({type(exc).__name__}: {exc})"]))
                continue
            errors = [(c, m) for c, m in result["errors"] if c in checks
                      or (c == "EX01" and full.count(".") == modname.count(".") + 1)]
            if errors:
                report.append((full, [f"{c} {m}" for c, m in errors]))
    return report


if __name__ == "__main__":
    if "--numpydoc-report" not in sys.argv:
        sys.exit("usage: python docs/_api.py --numpydoc-report [MODULE ...]")
    sys.path.insert(0, str(HERE.parent / "src"))
    chosen = [a for a in sys.argv[1:] if a != "--numpydoc-report"]
    rows = numpydoc_report(chosen or None)
    for full, codes in rows:
        print(f"{full}: {'; '.join(codes)}")
    print(f"{len(rows)} public names or methods are not numpydoc yet")

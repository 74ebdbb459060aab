"""Sphinx configuration of hiddenstate's documentation site (``make docs``).

Toolchain: Sphinx with the PyData theme, MyST for the markdown guides, numpydoc +
autosummary for the API reference and sphinx-gallery for the examples (the convention of
scikit-learn, hmmlearn, NumPy and SciPy). The API reference is generated at build time
from ``__all__`` of every public module (``docs/_api.py``), so a renamed or added public
name appears without editing this folder.
"""

import os
import re
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "src"))

import _api  # noqa: E402

import hiddenstate  # noqa: E402

project = "hiddenstate"
author = "the hiddenstate authors"
copyright = "the hiddenstate authors, BSD-3-Clause"
release = version = hiddenstate.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    # MathJax 3 served from the built site (_static/mathjax), not a CDN: equations render
    # offline and from a local copy of the site (docs/check_site.py checks it)
    "sphinx-mathjax-offline",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]


# --- MyST: the guides are plain markdown (GitHub renders them too) ---------------------
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 4  # [text](page.md#a-heading) links resolve as on GitHub
# "```python notest" etc.: the doc-test markers after the language (tests/test_docs.py)
highlight_language = "none"  # bare fences are printed output

# --- API reference ---------------------------------------------------------------------
autodoc_typehints = "none"  # numpydoc's Parameters section carries the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# numpydoc validates the docstrings of the modules whose sweep is done (_api.NUMPYDOC_DONE)
# against _api.NUMPYDOC_CHECKS (every check but SA01, ES01 and EX01; see there), so that a
# regression fails the build (-W); every other name is excluded until its module is done.
# `python docs/_api.py --numpydoc-report [MODULE ...]` lists what fails, module by module.
numpydoc_validation_checks = set(_api.NUMPYDOC_CHECKS)
# Data (constants, class attributes with a ``#:`` comment) are left out too: numpydoc reads
# their docstring from the type of their value (_api.data_names).
# a finished module: the names below it; a finished public name: itself and its members
_DONE = "|".join(rf"{re.escape(m)}\." if m in dict(_api.PUBLIC_MODULES)
                 else rf"{re.escape(m)}(?:\.|$)" for m in _api.NUMPYDOC_DONE)
numpydoc_validation_exclude = {rf"^(?!(?:{_DONE}))"} | {
    rf"^{re.escape(name)}$" for name in _api.data_names(_api.NUMPYDOC_DONE)}
numpydoc_xref_param_type = False

# --- Gallery ---------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "matplotlib_animations": False,
    "within_subsection_order": "FileNameSortKey",
    "show_memory": False,
    "min_reported_time": 1,
    "reset_modules": ("matplotlib",),
}

# --- HTML ------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"hiddenstate {release}"
html_static_path = ["_static"]
html_favicon = "_static/favicon.svg"
html_context = {"default_mode": "light"}
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False
html_copy_source = False

nitpicky = False
suppress_warnings = ["myst.header"]

# the examples plot without a display
os.environ.setdefault("MPLBACKEND", "Agg")
warnings.filterwarnings("ignore", message="Matplotlib is currently using agg")


# the API pages are written before Sphinx reads the sources
_api.write_api_pages()
_api.copy_repo_pages()


def _skip_member(app, what, name, obj, skip, options):
    # scikit-learn's metadata-routing setters (set_fit_request, ...) are generated on every
    # estimator class; their docstrings are scikit-learn's, not ours
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return skip


def setup(app):
    app.connect("source-read", _api.optional_toctree_entries)
    app.connect("source-read", _api.repo_links)
    app.connect("autodoc-skip-member", _skip_member)

# The README's two commands: `make demo` and `make test`; `make docs` builds the site.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DOCS_STAMP := $(VENV)/.docs-installed

.PHONY: demo test install lint bench clean docs docs-check docs-clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[all]'
	$(PY) -m hiddenstate.warmup
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) -m hiddenstate.demo --out demo-report
	@echo "PROPS personalisation report written to demo-report/index.html"

test: $(STAMP)
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks experiments

# The documentation site: docs/_build/html/index.html (warnings are errors). The gallery's
# outputs are cached in docs/auto_examples (an example reruns when it changes);
# `make docs-clean` removes everything the build writes.
$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[all,docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	rm -rf docs/_build docs/api docs/repo
	MPLBACKEND=Agg $(PY) -m sphinx -W --keep-going -b html docs docs/_build/html
	@echo "documentation written to docs/_build/html/index.html"

# Serves the built site on localhost and checks it in headless Chromium (Debian's
# chromium and chromium-driver packages): pages, console errors, links, search, images.
docs-check: $(DOCS_STAMP)
	$(PY) docs/check_site.py docs/_build/html

docs-clean:
	rm -rf docs/_build docs/api docs/repo docs/auto_examples docs/sg_execution_times.rst

bench: $(STAMP)
	$(PY) benchmarks/bench_vs_hmmlearn.py

clean: docs-clean
	rm -rf $(VENV) demo-report

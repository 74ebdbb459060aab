# The README's two commands: `make demo` and `make test`.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test install lint bench clean

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

bench: $(STAMP)
	$(PY) benchmarks/bench_vs_hmmlearn.py

clean:
	rm -rf $(VENV) demo-report

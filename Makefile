# One entry point for people and CI: `make demo` runs the main job, `make test` the checks
# (every test but those marked `slow`, on every core), `make test-all` the checks and the slow
# tests too (what CI runs), `make docs` the documentation site (into site/, which git ignores).
# Each creates the virtual environment first (.venv, from pyproject.toml) when it is missing,
# with only what it runs: the demo the command line and plots (extras cli, plots), the checks
# everything (extra dev: tests, oracles, Ray, docs, linters).

VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: setup demo test test-all lint typecheck unit slow docs bench

$(PY):
	python3 -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --editable '.[dev]'
	touch $(STAMP)

$(DEMO_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --editable '.[cli,plots]'
	touch $(DEMO_STAMP)

setup: $(STAMP)

demo: $(DEMO_STAMP)
	$(VENV)/bin/slidingpolicy demo

lint: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

typecheck: setup
	$(PY) -m mypy

# -n auto: one pytest worker a core (pytest-xdist); worksteal evens out the long tests.
PYTEST := $(PY) -m pytest -n auto --dist worksteal

unit: setup
	$(PYTEST) -m "not slow"

slow: setup
	$(PYTEST) -m slow

# --strict: a broken link or anchor, a page missing from the nav, or a docstring mkdocstrings
# cannot read fails the build (mkdocs.yml, `validation`).
docs: setup
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

test: lint typecheck unit docs

test-all: test slow

bench: setup
	$(PY) bench/decision.py
	$(PY) bench/engine.py
	$(PY) bench/router.py

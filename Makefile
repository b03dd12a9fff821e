# The README's commands. `make demo` and `make test` work on a fresh machine:
# they create the virtualenv and install the pinned dependencies themselves.
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: demo test test-fast test-backend test-official-data lint format lock clean bench

$(VENV)/.installed: requirements.lock pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.lock
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

# axe-core, pinned in package.json and package-lock.json, for the browser tests' accessibility checks
# (tests/browser/axe.py injects node_modules/axe-core/axe.min.js into the pages it checks; the site
# never serves it). npm ci installs exactly the lock; no install script runs.
node_modules/.installed: package.json package-lock.json
	npm ci --ignore-scripts --no-audit --no-fund
	touch $@

demo: $(VENV)/.installed
	$(PY) manage.py collectstatic --noinput -v 0
	$(PY) manage.py migrate --noinput
	$(PY) manage.py sync_plugins
	$(PY) manage.py import_dataset --available
	$(PY) manage.py demo --host $(HOST) --port $(PORT)

# Two pytest processes, each test file on one of them, for everything but the fault tests; then
# the fault tests alone, since they time real processes (a dead worker's recovery, a cancelled
# engine's stop) and must not compete with the other tests for the CPU.
# PYTEST_ARGS (empty by default) is added to every pytest line, e.g. `make test PYTEST_ARGS=-x`.
# Every run writes each test's durations to var/test-durations.txt (tests/conftest.py).
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?=
test: lint node_modules/.installed
	HF_HUB_OFFLINE=1 $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile -m "not faults" $(PYTEST_ARGS)
	HF_HUB_OFFLINE=1 $(PY) -m pytest -m faults $(PYTEST_ARGS)

# The loop while working: everything but the slow, fault and browser tests, without lint, in under
# 5 minutes on two cores. A test that makes it slower is marked slow (see var/test-durations.txt).
# The official files' tests (make test-official-data) are left out too: where the files are beside
# the checkout they train on real datasets and corpora for most of an hour; on a clone they skip.
test-fast: $(VENV)/.installed
	HF_HUB_OFFLINE=1 $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile \
	  -m "not slow and not faults and not browser and not official_data" $(PYTEST_ARGS)

# CI's second pass (.ci/run), on the embedded defaults: `make test`'s two runs narrowed to the tests
# marked backend (tests/conftest.py), those that can reach the database or the broker, less those
# marked once (the browser tests and heavy ones whose subject is not the database); no lint, which
# the first pass ran.
test-backend: $(VENV)/.installed node_modules/.installed
	HF_HUB_OFFLINE=1 $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile -m "backend and not faults and not once" $(PYTEST_ARGS)
	HF_HUB_OFFLINE=1 $(PY) -m pytest -m "backend and faults and not once" $(PYTEST_ARGS)

# Only the tests that read the official dataset files or papers (marker official_data), from
# BIOLM_DATA_DIR and BIOLM_PAPERS_DIR (default ../shared/data and ../shared/seeds): each passes, or
# skips naming the missing path. CI runs it with both pointing at empty folders, as on a fresh clone.
test-official-data: $(VENV)/.installed
	HF_HUB_OFFLINE=1 $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile -m official_data $(PYTEST_ARGS)

bench: $(VENV)/.installed
	$(PY) -m bench

lint: $(VENV)/.installed
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	PYTHONPATH=platform:. $(VENV)/bin/lint-imports

format: $(VENV)/.installed
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

lock: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -m pip freeze --exclude-editable | sed 's/^torch==\(.*\)+cpu$$/torch==\1/' > requirements.lock

clean:
	rm -rf $(VENV) node_modules var/biolm.sqlite3 var/celery-broker var/staticfiles

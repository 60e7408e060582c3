# Almanac: `make demo` and `make test` work from a fresh clone.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.almanac-installed
PYTEST_ARGS ?=
# pytest-xdist workers (one per core here; 0 runs in one process). A test file stays on one
# worker, so a module's model or server is loaded once.
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist loadfile

.PHONY: setup browser demo test test-fast lint format bench clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@# The CPU build of torch is on disk; install it first so nothing pulls a CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	@echo "installing Almanac and its packages; the first time this builds llama-cpp-python from source"
	@echo "(~4 min on 2 cores, pip shows 'Building wheel for llama-cpp-python'); pip caches the wheel,"
	@echo "so later clones reuse it"
	$(PY) -m pip install --progress-bar on -e '.[dev]'
	@touch $@

setup: $(STAMP)

# The browser tests drive Debian's Chromium (Playwright's own browser download is never used).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		echo "installing Debian's chromium for the browser tests"; \
		$(SUDO) apt-get install -y -q chromium >/dev/null 2>&1 || \
		{ $(SUDO) apt-get update -q >/dev/null && $(SUDO) apt-get install -y -q chromium >/dev/null; }; }

demo: setup
	$(PY) -m server.cli demo

test: setup browser
	$(PY) -m tests.support.postgres -- $(PY) -m pytest $(XDIST) $(PYTEST_ARGS)

# the same without the tests marked slow (real models, real server processes)
test-fast: setup browser
	$(PY) -m tests.support.postgres -- $(PY) -m pytest $(XDIST) -m "not slow" $(PYTEST_ARGS)

lint: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy ukf kb indices distill server

format: setup
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

bench: setup
	$(PY) -m bench.perf.store --n 100000

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .mypy_cache

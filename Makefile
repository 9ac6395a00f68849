# The two commands (see README): `make run` and `make test`. Everything else is a step they call.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SUPPORTED := import sys; sys.exit(sys.version_info < (3, 11))

# A .venv made by an unsupported (or missing) Python is removed here, before make looks at it, and made again.
ifneq ($(wildcard $(VENV)),)
ifneq ($(shell $(BIN)/python -c '$(SUPPORTED)' >/dev/null 2>&1 && echo ok),ok)
$(info $(VENV) was made by $(or $(shell $(BIN)/python --version 2>&1),a Python that no longer runs); locomo-kit needs Python 3.11 or newer: removing $(VENV) to make it again with $(PY))
$(shell rm -rf $(VENV))
endif
endif

.PHONY: setup data run test bench clean

$(STAMP): requirements.txt pyproject.toml
	@$(PY) -c '$(SUPPORTED)' || { echo "$(PY) is $$($(PY) --version 2>&1): locomo-kit needs Python 3.11 or newer (make PY=python3.11 ...)"; exit 1; }
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-compile --no-deps -e .
	@# pip compiles on one core (40 of its 63 s); on all cores, a file that does not compile is skipped, as pip does
	$(BIN)/python -m compileall -q -j0 $(VENV)/lib >/dev/null || true
	$(BIN)/python -m memworker.static_embed --install
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

setup: $(STAMP)

# the bm25 system's extra (docs/systems.md), for its contract tests; `--system bm25` installs it itself
EXTRAS := $(VENV)/.extras-bm25
$(EXTRAS): $(STAMP)
	$(BIN)/python -m pip install --quiet 'bm25s==0.3.16'
	touch $(EXTRAS)

data: setup
	$(BIN)/locomo-kit data fetch

run: data
	$(BIN)/locomo-kit run

# pytest's conftest.py removes API keys and sends every output to a temporary folder; --durations lists the
# slowest tests at the end (`pytest -m "not integration"` leaves out npm, peer environments, llama.cpp, Chromium).
# The tests run on TEST_WORKERS processes (pytest-xdist), a module's tests on one of them, in the order
# tests/conftest.py gives (the longest modules first); TEST_WORKERS=0 runs them in this one process. More workers
# than cores: many tests wait (on a server, a timeout, a download) while others compute.
TEST_WORKERS ?= 4
test: data $(EXTRAS)
	$(BIN)/ruff check .
	@# the tests start many Python processes: the kit compiled once here, not in each where PYTHONDONTWRITEBYTECODE is set
	$(BIN)/python -m compileall -q -j0 locomo_kit memworker tests benchmarks scripts >/dev/null
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --nbval --durations=25 tests notebooks

bench: data
	$(BIN)/python benchmarks/memworker_bench.py

clean:
	rm -rf $(VENV)

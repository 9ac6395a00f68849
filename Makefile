# The two commands (see README): `make run` and `make test`. Everything else is a step they call.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup data run test bench clean

$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-nodeps.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

setup: $(STAMP)

data: setup
	$(BIN)/locomo-kit data fetch

run: data
	$(BIN)/locomo-kit run

test: data
	$(BIN)/python -m pytest --nbval tests notebooks

bench: data
	$(BIN)/python benchmarks/memworker_bench.py

clean:
	rm -rf $(VENV)

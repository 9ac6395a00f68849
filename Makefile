# The two commands (see README): `make run` and `make test`. Everything else is a step they call.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup data run test clean

$(STAMP): requirements.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
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

clean:
	rm -rf $(VENV)

# Two entry points for a fresh machine with Python 3.11 and make:
#   make run    install, index a repository (this one, or REPO=path), print
#               status and an example recall, then serve LSP until Ctrl-C
#   make test   install with test extras and run the whole suite
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
REPO ?= .
QUERY ?= where is the index store opened
SOCKET ?= $(REPO)/.ctxls/daemon.sock

.PHONY: run test install install-test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)

install: $(BIN)/python
	$(BIN)/pip install --quiet -e .

install-test: $(BIN)/python
	$(BIN)/pip install --quiet -e ".[test]"

run: install
	$(BIN)/ctxls serve --root "$(REPO)" --example "$(QUERY)" --socket "$(SOCKET)"

test: install-test
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .ctxls

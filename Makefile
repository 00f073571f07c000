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
# The real-VS-Code test's cache (code-server, the CDP driver): git-ignored.
E2E ?= .e2e

.PHONY: run test install install-test e2e-deps bench benchmarks clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)

# Stamps: `make run` installs again only when pyproject.toml changed (the
# package itself is an editable install, so code edits need no reinstall).
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e ".[test]"
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

run: install
	$(BIN)/ctxls serve --root "$(REPO)" --example "$(QUERY)" --socket "$(SOCKET)"

# chromium and build headers (apt-get, as root only: README "Tests"),
# code-server and puppeteer-core (with the test extra's Node.js wheel) for
# tests/test_vscode_e2e.py; cached, so a re-run takes seconds.
e2e-deps: install-test
	tests/vscode/setup.sh "$(E2E)" "$(BIN)/rg" "$(BIN)/python"

test: install-test e2e-deps
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/python bench/run.py

# BENCHMARKS.md from the result files in bench/results/ (bench/report.py).
benchmarks: install
	$(BIN)/python -m ctxls.bench.report

clean:
	rm -rf $(VENV) .ctxls

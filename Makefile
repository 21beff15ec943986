# Two entry points that work on a fresh machine with only Python 3.11 and pip:
#   make demo   run the bundled example task end to end, offline, no API key
#   make test   lint, type-check and run the test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORE := $(VENV)/.core
STAMP := $(VENV)/.installed
# exact versions of the test environment (torch's CPU build); pyproject's extras stay ranges
CONSTRAINTS := -c constraints.txt
# MkDocs 1.x prints a banner about its future; the build is pinned below 2 (pyproject's docs extra)
export NO_MKDOCS_2_WARNING := 1
export DISABLE_MKDOCS_2_WARNING := true

.PHONY: demo test test-pythons lint typecheck docs pytest bench clean browser sandbox node

# The demo needs the core alone (no extra): a quick install on a fresh machine.
$(CORE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(CONSTRAINTS) -e .
	touch $(CORE)

# The tests need every extra; torch comes from /opt/wheels' CPU build where present (pinned by constraints.txt).
$(STAMP): $(CORE) constraints.txt
	$(BIN)/python -m pip install --quiet $(CONSTRAINTS) --find-links /opt/wheels -e '.[dev,docs,hf,optimize,metrics,semantic,ray,agents,lm-eval]'
	touch $(STAMP)

demo: $(CORE)
	$(BIN)/assay run examples/qa_tools/task.yaml --output runs/demo
	@latest=$$(ls -td runs/demo/*/ | head -1); \
	  $(BIN)/assay report "$$latest" --html "$${latest}report.html" --format json > /dev/null && \
	  echo "Browse it with: $(BIN)/assay view $$latest"

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

typecheck: $(STAMP)
	$(BIN)/mypy

# The docs site, its reference pages generated from the code; --strict fails on a broken link or a missing page.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict --quiet

# The HTML report is tested in Debian's Chromium (never a downloaded browser); installed when missing and root.
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian's chromium for the browser tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "note: /usr/bin/chromium is missing, so the browser tests will be skipped"; fi; \
	fi

# code_exec runs model-written code under Debian's bubblewrap (bwrap); installed when missing and root.
sandbox:
	@if ! command -v bwrap >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian's bubblewrap for code_exec's sandbox"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; \
	  else echo "note: bwrap is missing, so code_exec cannot run and its tests will be skipped"; fi; \
	fi

# promptfoo's javascript checks and transforms run on Node.js, and its is-sql on the npm package node-sql-parser
# (the version promptfoo 0.123.1 installs), put in build/node and found through NODE_PATH; Debian's nodejs/npm are
# installed when missing and root.
NODE_MODULES := build/node/node_modules
node:
	@if ! command -v node >/dev/null || ! command -v npm >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian's nodejs and npm for promptfoo's javascript checks"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; \
	  else echo "note: node/npm are missing, so javascript checks and their tests will be skipped"; fi; \
	fi
	@if command -v npm >/dev/null && [ ! -d $(NODE_MODULES)/node-sql-parser ]; then \
	  npm install --silent --no-audit --no-fund --prefix build/node node-sql-parser@5.4.0 >/dev/null; fi

pytest: $(STAMP) browser sandbox node
	NODE_PATH=$(CURDIR)/$(NODE_MODULES) $(BIN)/pytest -q

test: lint typecheck docs pytest

# The version-sensitive tests (the sandbox's Python, the wire codec, results fixtures' figures, JSON error wording)
# on every Python 3.12 and 3.13 on this machine (pyenv's or python3.X on PATH), each in build/pythons/3.X without
# the torch extras; with none, it says so and passes. `PYTHONS="3.13" make test-pythons` picks versions.
test-pythons: sandbox
	bash .ci/test-pythons

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build/site build/pythons

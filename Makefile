# Two entry points that work on a fresh machine with only Python 3.11 and pip:
#   make demo   run the bundled example task end to end, offline, no API key
#   make test   lint, type-check and run the test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORE := $(VENV)/.core
STAMP := $(VENV)/.installed
# MkDocs 1.x prints a banner about its future; the build is pinned below 2 (pyproject's docs extra)
export NO_MKDOCS_2_WARNING := 1
export DISABLE_MKDOCS_2_WARNING := true

.PHONY: demo test lint typecheck docs pytest bench clean browser sandbox

# The demo needs the core alone (no extra): a quick install on a fresh machine.
$(CORE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(CORE)

# The tests need every extra; torch comes from /opt/wheels' CPU build where present.
$(STAMP): $(CORE)
	$(BIN)/python -m pip install --quiet --find-links /opt/wheels -e '.[dev,docs,hf,optimize,metrics,semantic,ray,agents,lm-eval]'
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

pytest: $(STAMP) browser sandbox
	$(BIN)/pytest -q

test: lint typecheck docs pytest

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build/site

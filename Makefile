# figaroh — set-up, demo and tests.  `make demo` and `make test` are the Quick start.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
APT_PACKAGES := coinor-libipopt-dev liblapack-dev libblas-dev pkg-config

.PHONY: all install demo test lint bench clean system-deps

all: test

# cyipopt compiles against the system IPOPT: install it from apt only when missing.
system-deps:
	@if pkg-config --exists ipopt 2>/dev/null; then \
		echo "[figaroh] system IPOPT found"; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		echo "[figaroh] installing $(APT_PACKAGES) with apt-get"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PACKAGES); \
	else \
		echo "[figaroh] IPOPT is missing and this is not a root Debian/Ubuntu shell."; \
		echo "          Run: sudo apt-get install $(APT_PACKAGES)"; \
		exit 1; \
	fi

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory system-deps
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[all,dev]"
	@touch $(STAMP)

install: $(STAMP)

demo: install
	MPLBACKEND=Agg $(PY) examples/ur10/demo.py

test: install
	MPLBACKEND=Agg $(PY) -m pytest -q

lint: install
	$(VENV)/bin/ruff check src tests examples benchmarks
	$(VENV)/bin/ruff format --check src tests examples benchmarks
	$(VENV)/bin/mypy

bench: install
	$(PY) benchmarks/bench_regressor.py
	MPLBACKEND=Agg $(PY) benchmarks/bench_identification.py
	MPLBACKEND=Agg OPENBLAS_NUM_THREADS=1 $(PY) benchmarks/bench_tx40_identification.py
	$(PY) benchmarks/bench_qr.py
	$(PY) benchmarks/bench_physical_fit.py
	$(PY) benchmarks/bench_startup.py
	$(PY) benchmarks/bench_robot_load.py
	$(PY) benchmarks/bench_calibration.py
	$(PY) benchmarks/bench_lm.py
	MPLBACKEND=Agg $(PY) benchmarks/bench_save_results.py
	MPLBACKEND=Agg $(PY) benchmarks/bench_fleet.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache results

.PHONY: docs notebooks notebooks-outputs

# Documentation site into site/ (API pages generated from the docstrings, the notebooks
# executed and rendered with their outputs); fails on any warning.
docs: install
	$(VENV)/bin/mkdocs build --strict

# Execute the walkthrough notebooks of examples/notebooks/ and check their stored outputs.
notebooks: install
	$(PY) -m pytest -q tests/test_notebooks.py

# Re-execute the notebooks and store their outputs in place (commit the result).
notebooks-outputs: install
	$(PY) examples/notebooks/execute_notebooks.py --write

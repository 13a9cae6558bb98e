# initmem: two commands on a fresh machine -- `make demo` and `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
OUT    ?= runs/quick

.PHONY: install demo test test-fast lint typecheck docs bench calibrate clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

# The quick preset, sequentially: 4 seeds per cell first, then 8 and 12 only for pipelines still undecided
# (docs/sequential.md), so that a forgetting pipeline near its edge gets the seeds it needs on any machine.
demo: install
	$(VENV)/bin/initmem run --preset quick --until-decided --looks 4,8,12 --out $(OUT)

# ruff (style, unused arguments and noqa, complexity) and the layer contract (docs/architecture.md).
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

# pytest exits 5 when it collects no test; that is a failure, never a success.
# Two workers (pytest-xdist), one test file per worker at a time: a file's module fixtures are built once,
# and the long single-threaded tests (training, sampling) overlap instead of queueing.
TEST_WORKERS ?= 2
test: lint
	@rc=0; $(VENV)/bin/pytest -q --durations=15 -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; exit $$rc

test-fast: install
	$(VENV)/bin/pytest -q -m "not slow and not browser"

# The documentation site, offline, warnings as errors: open site/index.html. The API reference is generated from
# a plain install of the package into build/site (the editable install is an import hook static tools cannot read).
docs: install
	$(PY) -m pip install -q -e '.[dev,docs]'
	rm -rf build/site
	$(PY) -m pip install -q --no-deps --no-build-isolation --no-compile --target build/site .
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# The full calibration studies behind docs/memory-model.md (the tests keep smaller null and power controls).
calibrate: install
	$(PY) studies/calibration.py

# The speed benchmarks, small settings, one table (benchmarks/run_all.py; the statistical studies are in studies/).
bench: install
	$(PY) benchmarks/run_all.py

clean:
	rm -rf runs .pytest_cache .ruff_cache

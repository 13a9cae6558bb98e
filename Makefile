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

# The quick preset at delta = 2 points, sequentially: 4 seeds per cell first, then 8, 12 and 16 only for pipelines
# still undecided (docs/sequential.md), so that the headline does not hang on one machine's cube
# (docs/reading-the-demo.md says why 2 points).
demo: install
	$(VENV)/bin/initmem run --preset quick --until-decided --looks 4,8,12,16 --delta 2pt --out $(OUT)

# ruff (style, unused arguments and noqa, complexity) and the layer contract (docs/architecture.md).
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

# pytest exits 5 when it collects no test; that is a failure, never a success.
# Two workers (pytest-xdist), one test file per worker at a time: a file's module fixtures are built once,
# and the long single-threaded tests (training, sampling) overlap instead of queueing.
# Plugins load by name: pytest would otherwise load every installed package's plugin (hypothesis, zarr, anyio,
# platformdirs) and assertion-rewrite each module of those packages that a worker imports (230 modules;
# benchmarks/suite_timing.py --ab-autoload).
TEST_WORKERS ?= 2
PYTEST = PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 $(VENV)/bin/pytest -p xdist
test: lint
	@rc=0; $(PYTEST) -q --durations=15 -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; exit $$rc

# The quick check while editing: every test not marked slow (sampling, training, statistical rates, report
# rendering) or browser, on the same two workers.
test-fast: install
	@rc=0; $(PYTEST) -q -m "not slow and not browser" -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test-fast: pytest collected no tests" >&2; exit 1; fi; exit $$rc

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

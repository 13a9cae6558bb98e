# initmem: two commands on a fresh machine -- `make demo` and `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
OUT    ?= runs/quick

.PHONY: install demo test test-fast lint typecheck docs bench calibrate clean lock

# Installs from constraints.txt, the versions the suite passed with (pyproject.toml gives users' ranges).
$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip -c constraints.txt
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

# The editable install as a path that static tools read (mypy, pyright, an IDE): site-packages/initmem-src.pth names
# $(VENV)/src, where `initmem` is a link to this folder, so `import initmem` finds this folder by path. pip's
# editable install of a layout whose root is the package is an import hook that only the interpreter follows
# (mypy: "Cannot find implementation or library stub for module named 'initmem'"), and setuptools' compat mode
# would put this folder's modules (cli, stats, ...) at the top level rather than under initmem. The interpreter
# finds the path before the hook; pip still records the install (version, the `initmem` command).
LINKED := $(VENV)/.linked-stamp
$(LINKED): $(STAMP)
	mkdir -p $(VENV)/src
	ln -sfn "$(CURDIR)" $(VENV)/src/initmem
	echo "$(abspath $(VENV)/src)" > "$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/initmem-src.pth"
	@touch $(LINKED)

install: $(STAMP) $(LINKED)

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
# a plain install of the package into build/site: the package as it ships, without the tests, studies and the
# virtual environment that this folder also holds (and that mkdocstrings would otherwise walk).
docs: install
	$(PY) -m pip install -q -c constraints.txt -e '.[dev,docs]'
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

# constraints.txt anew from this venv, after an upgrade the whole suite passed with (`make test`, `make docs`).
lock: install
	{ sed -n '1,3p' constraints.txt; $(PY) -m pip freeze --all --exclude-editable | grep -v '^initmem'; } > constraints.new
	mv constraints.new constraints.txt

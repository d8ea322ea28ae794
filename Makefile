# Every target installs what it needs into .venv on a fresh clone; nothing else is assumed on the machine.
VENV ?= .venv
PYTHON := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# torch/torchvision wheels that lie on this disk (x86_64: 2.14.1/0.29.1; aarch64: 2.9.1/0.24.1).
TORCH_PINS := $(if $(filter aarch64,$(shell uname -m)),torch==2.9.1 torchvision==0.24.1,torch==2.14.1 torchvision==0.29.1)

.PHONY: install demo lint test test-readme test-fast fuzz bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install -q $(TORCH_PINS)
	$(PYTHON) -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/pillar run examples.yaml mnist-honest --force
	$(VENV)/bin/pillar run examples.yaml mnist-demo --force
	$(VENV)/bin/pillar run examples.yaml mnist-truth --force

# Two workers, a test file each at a time (a file's fixtures are built once), each with half the cores for BLAS and
# torch threads (left to their defaults, each library in each worker starts one thread a core: on 2 cores the gsd,
# api and engine tests took 121 s that way, 67 s with one thread a worker). The files go out in conftest.py's order
# (--no-loadscope-reorder): the files with slow tests first. The README's command block (a script of 20 pillar
# commands, about 3 minutes on one core) is its own target, test-readme, which CI runs after this one; beside the
# suite it lost a third of its speed to the other worker. make test: 7 min 11 s for 1,032 items on a clean clone,
# 2 cores (2026-12-02), over the 6-minute budget. Measured times and where they go: docs/benchmarks.md,
# "How long does `make test` take?". Three workers on 2 cores took as long and slowed the Ray tests under
# contention (33 s → 256 s).
TEST_THREADS := $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n > 3 ? n / 2 : 1 )))
THREAD_CAPS := OMP_NUM_THREADS=$(TEST_THREADS) MKL_NUM_THREADS=$(TEST_THREADS) OPENBLAS_NUM_THREADS=$(TEST_THREADS)
test: $(STAMP)
	$(THREAD_CAPS) $(PYTHON) -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=15 \
		-m "not command_block"

# The README's command block top to bottom in an empty folder, as a user runs it.
test-readme: $(STAMP)
	$(PYTHON) -m pytest -m command_block tests/test_readme.py

# ruff's formatter and linter (rule set in pyproject.toml) over the code, the tests and the benchmarks, and mypy over
# the domains pyproject.toml names (privacy, artifacts, methods): any finding fails.
lint: $(STAMP)
	$(VENV)/bin/ruff format --check pillar_cli tests benchmarks
	$(VENV)/bin/ruff check pillar_cli tests benchmarks
	$(VENV)/bin/mypy

test-fast: $(STAMP)
	$(PYTHON) -m pytest -m "not slow"

# The fuzz tests of the readers with 300 examples per case (the suite runs 15 and 150): about 22 min on 2 cores.
fuzz: $(STAMP)
	PILLAR_FUZZ_EXAMPLES=$${PILLAR_FUZZ_EXAMPLES:-300} $(PYTHON) -m pytest -p no:cacheprovider \
		tests/unit/artifacts/test_properties.py tests/cli/test_fuzz.py

bench: $(STAMP)
	$(PYTHON) benchmarks/bench_train.py

clean:
	rm -rf runs .pytest_cache

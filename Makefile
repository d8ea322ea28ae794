# Every target installs what it needs into .venv on a fresh clone; nothing else is assumed on the machine.
VENV ?= .venv
PYTHON := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# torch/torchvision wheels that lie on this disk (x86_64: 2.14.1/0.29.1; aarch64: 2.9.1/0.24.1).
TORCH_PINS := $(if $(filter aarch64,$(shell uname -m)),torch==2.9.1 torchvision==0.24.1,torch==2.14.1 torchvision==0.29.1)

.PHONY: install demo lint test test-fast fuzz bench clean

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
# (--no-loadscope-reorder): the README's command block first (about 2.5 minutes on one worker), then the files with
# slow tests. 10 min 5 s for 1,020 items on a clean clone, 2 quiet cores (2026-12-02, `CI=true bash .ci/run`:
# 1,012 passed, 8 CUDA skips; 5 min 12 s for 885 items on 2026-11-27); its --durations=15 output and where the
# time goes: docs/benchmarks.md, "How long does `make test` take?". Three workers on 2 cores took as long and slowed the Ray tests under contention (33 s → 256 s).
TEST_THREADS := $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n > 3 ? n / 2 : 1 )))
test: $(STAMP)
	OMP_NUM_THREADS=$(TEST_THREADS) MKL_NUM_THREADS=$(TEST_THREADS) OPENBLAS_NUM_THREADS=$(TEST_THREADS) \
		$(PYTHON) -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=15

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

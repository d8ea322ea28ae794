# Every target installs what it needs into .venv on a fresh clone; nothing else is assumed on the machine.
VENV ?= .venv
PYTHON := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# torch/torchvision wheels that lie on this disk (x86_64: 2.14.1/0.29.1; aarch64: 2.9.1/0.24.1).
TORCH_PINS := $(if $(filter aarch64,$(shell uname -m)),torch==2.9.1 torchvision==0.24.1,torch==2.14.1 torchvision==0.29.1)

.PHONY: install demo test test-fast fuzz bench clean

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
# api and engine tests took 121 s that way, 67 s with one thread a worker). 6 min 57 s for 881 items on 2 cores
# (2026-11-27, `CI=true pytest -n 2 --dist loadfile --durations=0`, nothing else running: 874 passed, 7 CUDA skips;
# the same machine gave 9 min 28 s for 856 items that morning, before the accounting kernels of
# benchmarks/bench_accounting.py; 12 min 25 s for 836 before each file was hashed once a process). Its longest test,
# about 2.5 minutes on one worker, runs the README's command block as a script (conftest.py starts it first); then
# the Ray Data pipeline (26 s), the packaged ImageNet features (20 s), the Ray actor killed mid-run (16 s) and
# torchrun shards (14 s). All test durations sum to 736 s: the README block 153 s, the embed-shards file 62 s, the
# accountant tests 32 s. It ends by naming its 15 slowest tests. Three workers on 2 cores took as long (552 s) and slowed the Ray
# tests under contention (33 s → 256 s).
TEST_THREADS := $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n > 3 ? n / 2 : 1 )))
test: $(STAMP)
	OMP_NUM_THREADS=$(TEST_THREADS) MKL_NUM_THREADS=$(TEST_THREADS) OPENBLAS_NUM_THREADS=$(TEST_THREADS) \
		$(PYTHON) -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=15

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

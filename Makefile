# The two commands of the README: `make demo` and `make test` (each does all set-up first).
PY ?= /usr/bin/python3
JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
CMAKE_FLAGS ?=

.PHONY: all setup build demo test test-cpp test-python test-asan test-install bench docs clean

all: build

setup:
	@bash scripts/setup.sh

$(BUILD)/Makefile: | setup
	cmake -S . -B $(BUILD) -DPython3_EXECUTABLE=$(PY) $(CMAKE_FLAGS)

build: setup $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

# The main job: train the default ConvNet on Fashion-MNIST (5 epochs) and write its reports.
demo: build
	./$(BUILD)/tools/retorch train --out-dir runs/demo

test-cpp: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-python: build
	PYTHONPATH=$(CURDIR)/python $(PY) -m pytest -q -p no:cacheprovider tests/python

$(ASAN_BUILD)/Makefile: | setup
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DRETORCH_SANITIZE=ON \
	  -DPython3_EXECUTABLE=$(PY) $(CMAKE_FLAGS)

# The C++ suite under AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan: setup $(ASAN_BUILD)/Makefile
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target retorch_tests
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS)

# `pip install .` from a clean copy of the source: builds the wheel (pyproject.toml), installs it
# into a temp dir and imports retorch from there alone.
test-install: setup
	PY=$(PY) JOBS=$(JOBS) bash tests/install_pip/run.sh

test: test-cpp test-python test-asan test-install

bench: build
	cmake --build $(BUILD) -j $(JOBS) --target bench_ops bench_overhead bench_jit bench_compile bench_quant
	./$(BUILD)/bench/bench_ops
	./$(BUILD)/bench/bench_overhead --benchmark_min_time=0.2
	./$(BUILD)/bench/bench_jit
	./$(BUILD)/bench/bench_compile
	./$(BUILD)/bench/bench_quant
	PYTHONPATH=$(CURDIR)/python $(PY) bench/bench_python.py
	PYTHONPATH=$(CURDIR)/python $(PY) bench/bench_op_sweep.py
	PYTHONPATH=$(CURDIR)/python $(PY) bench/bench_special.py
	PYTHONPATH=$(CURDIR)/python $(PY) bench/bench_nn.py
	PYTHONPATH=$(CURDIR)/python $(PY) bench/bench_devices.py
	PYTHONPATH=$(CURDIR)/python $(PY) bench/bench_cuda.py
	PYTHONPATH=$(CURDIR)/python:$(CURDIR)/.deps/python $(PY) bench/bench_llm_cuda.py --retorch $(BUILD)/tools/retorch
	PYTHONPATH=$(CURDIR)/python:$(CURDIR)/.deps/python $(PY) bench/bench_llm.py

# docs/ops.md, the operator coverage table, and docs/devices.md, the device compatibility matrix
# (tests fail when either is stale).
docs: build
	$(PY) tools/codegen/gen_docs.py
	./$(BUILD)/tools/retorch devices --matrix --markdown > docs/devices.md

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-wheel build-pip-test

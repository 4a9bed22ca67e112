# Shardscope: every entry point a person or CI needs.
#   make demo    install what is missing, build, train LeNet5 on real data, print next steps
#   make test    install what is missing, build, run the whole CTest suite
#   make build   configure and build only (Release, -O3 -march=native)
#   make bench   build and run the benchmark comparison against PyTorch
BUILD_DIR ?= build
BUILD_TYPE ?= Release
PORTABLE ?= OFF
JOBS ?= $(shell nproc)

.PHONY: deps build demo test bench clean

deps:
	@bash scripts/deps.sh

build: deps
	@[ -f $(BUILD_DIR)/build.ninja ] || cmake -S . -B $(BUILD_DIR) -G Ninja \
	  -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DSHARDSCOPE_PORTABLE=$(PORTABLE)
	cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	@bash scripts/demo.sh

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

bench: build
	@bash scripts/deps.sh --bench
	python3 benchmarks/compare_pytorch.py --shardscope $(BUILD_DIR)/bin/bench_train_step

clean:
	rm -rf $(BUILD_DIR)

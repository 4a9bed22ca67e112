# Shardscope: every entry point a person or CI needs.
#   make demo    build, then seed 003's FFN on 8 devices: searched plan, redistributions,
#                a recorded run, two PNGs and how to open the GUI (scripts/demo.sh)
#   make test    install what is missing, build, run the jobs in TEST_JOBS (default:
#                test-main, test-portable and test-asan, what CI runs); each prints its own ctest
#                summary, any failure fails it
#   make test-main      the main build's whole CTest suite only
#   make test-asan      engine and store unit tests plus an 8-device training, built by clang
#                       with ASan and UBSan in build-asan (no GUI, no MPI-labelled tests)
#   make test-portable  the kernel tests (label kernel) built without -march=native in
#                       build-portable
#   make build   configure and build only (Release, -O3 -march=native)
#   make bench   build and run the benchmark comparison against PyTorch
#   make install PREFIX=DIR  a portable build (build-install/) installed into DIR (docs/install.md)
BUILD_DIR ?= build
BUILD_TYPE ?= Release
PORTABLE ?= OFF
JOBS ?= $(shell nproc)
ASAN_DIR ?= build-asan
PORTABLE_DIR ?= build-portable
TEST_JOBS ?= test-main test-portable test-asan
# Every build goes through ccache when it is installed (CMakeLists.txt adds its base-dir keys).
LAUNCHER := $(if $(shell command -v ccache),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

.PHONY: deps build install demo test test-main test-asan test-portable bench clean

deps:
	@bash scripts/deps.sh

build: deps
	@[ -f $(BUILD_DIR)/build.ninja ] || cmake -S . -B $(BUILD_DIR) -G Ninja \
	  -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DSHARDSCOPE_PORTABLE=$(PORTABLE) $(LAUNCHER)
	cmake --build $(BUILD_DIR) -j $(JOBS)

INSTALL_DIR ?= build-install
PREFIX ?= /usr/local

install: deps
	@[ -f $(INSTALL_DIR)/build.ninja ] || cmake -S . -B $(INSTALL_DIR) -G Ninja \
	  -DCMAKE_BUILD_TYPE=Release -DSHARDSCOPE_PORTABLE=ON
	cmake --build $(INSTALL_DIR) -j $(JOBS)
	cmake --install $(INSTALL_DIR) --prefix $(PREFIX)

demo: build
	@bash scripts/demo.sh

# Every job runs even when an earlier one failed, so one CI run reports all of them.
test: deps
	@fail=""; \
	for job in $(TEST_JOBS); do \
	  $(MAKE) --no-print-directory $$job || fail="$$fail $$job"; \
	done; \
	if [ -n "$$fail" ]; then echo "make test: FAILED:$$fail"; exit 1; fi; \
	echo "make test: $(TEST_JOBS) passed"

test-main: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

test-asan: deps
	@[ -f $(ASAN_DIR)/build.ninja ] || cmake -S . -B $(ASAN_DIR) -G Ninja \
	  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ -DSHARDSCOPE_SANITIZE=ON \
	  -DSHARDSCOPE_BUILD_GUI=OFF $(LAUNCHER)
	cmake --build $(ASAN_DIR) -j $(JOBS) --target unit_tests shardscope
	# Tests that start mpirun are left out, as the MPI-labelled ones: Open MPI is built without
	# frame pointers, so LeakSanitizer could name its never-freed state only by slow full unwinding.
	cd $(ASAN_DIR) && OMPI_MCA_mca_base_component_disable_dlclose=1 \
	  ctest --output-on-failure -j $(JOBS) -L '^(unit|kernel|smoke)$$' \
	  -E '^Launch(Hosts)?\.|UnderMpirun$$|^PlanMemory\.ARecomputedPlan|^PlacedCheckpointCli\.|^TrainPipeline\.PrintsTheSingleDeviceLosses$$'

test-portable: deps
	@[ -f $(PORTABLE_DIR)/build.ninja ] || cmake -S . -B $(PORTABLE_DIR) -G Ninja \
	  -DCMAKE_BUILD_TYPE=Release -DSHARDSCOPE_PORTABLE=ON -DSHARDSCOPE_BUILD_GUI=OFF $(LAUNCHER)
	cmake --build $(PORTABLE_DIR) -j $(JOBS) --target kernel_tests
	cd $(PORTABLE_DIR) && ctest --output-on-failure -j $(JOBS) -L '^kernel$$'

bench: build
	@bash scripts/deps.sh --bench
	python3 benchmarks/compare_pytorch.py --shardscope $(BUILD_DIR)/bin/bench_train_step

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(PORTABLE_DIR) $(INSTALL_DIR)

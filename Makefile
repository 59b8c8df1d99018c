# Makefile: a thin front for CMake. `make demo` and `make test` set up a fresh Debian machine.
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# tests at once: one more than the cores, since every test spends part of its time starting
# processes and moving .npy files rather than computing
TEST_JOBS ?= $(shell echo $$(( $(JOBS) + 1 )))
CMAKE_FLAGS ?=

GPU_BUILD ?= build-gpu

.PHONY: all deps build test test-fast test-asan test-gpu test-racecheck demo bench clean format \
	gpu-bundle

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The whole suite, then the whole suite again under ASan+UBSan (built with clang, which also
# builds and runs the libFuzzer target of the compiler). The sanitizer pass starts from the
# kernel cache the plain pass filled: the objects are the same (the key is the program, the
# options and the code generator's source), and LLVM, which builds them, is not instrumented;
# tests/cli/codegen_all.sh runs fusec's code generator there over every program instead.
test: test-fast test-asan

test-fast: build
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS) -LE racecheck

test-asan: deps
	CC=clang cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DFUSEC_SANITIZE=ON -DFUSEC_FUZZ=ON $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	if [ -d $(BUILD)/test-cache ]; then mkdir -p $(ASAN_BUILD)/test-cache && \
		cp -R $(BUILD)/test-cache/. $(ASAN_BUILD)/test-cache/; fi
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(TEST_JOBS)

# The GPU suite alone (tests/gpu: every program on CUDA against the reference, plans, two
# streams, examples/embed, compute-sanitizer); each test is skipped where there is no GPU.
test-gpu: build
	cd $(BUILD) && ctest --output-on-failure -L gpu

# What the one-call GPU check runs, in gpu-bundle/ (git-ignored, a few MB): a build without LLVM
# and with xxHash linked in (a GPU machine has neither), checked to need nothing but glibc. On
# the GPU machine, from the checkout's root: bash scripts/gpu-check.sh gpu-bundle "$$OUT"
# (DEVELOPERS.md: the device tool's call).
# The CPU target's results that tests/cli_py/test_one_answer.py compares CUDA's with (the GPU
# machine has no CPU target) come from this build's: gpu-bundle/one_answer; so does the CUDA
# library built ahead of time that tests/gpu/aot.sh runs (writing one takes LLVM).
gpu-bundle: deps build
	cmake -S . -B $(GPU_BUILD) -DCMAKE_BUILD_TYPE=Release -DFUSEC_LLVM=OFF -DFUSEC_STATIC_XXHASH=ON $(CMAKE_FLAGS)
	cmake --build $(GPU_BUILD) -j $(JOBS) --target fusec fusec_shared embed test_api \
		test_gpu_runtime test_inplace test_strides test_dlpack test_grad_reductions test_nvrtc
	rm -rf $(GPU_BUILD)/one_answer $(GPU_BUILD)/aot
	FUSEC=$(BUILD)/fusec python3 tests/cli_py/test_one_answer.py --write $(GPU_BUILD)/one_answer
	mkdir -p $(GPU_BUILD)/aot
	$(BUILD)/fusec --emit=lib --target=cuda --arch=sm_90,compute_90 -o $(GPU_BUILD)/aot/kernels \
		examples/gelu.fuse examples/softmax.fuse examples/layernorm.fuse
	$(CC) -std=c11 -O2 -DKERNELS_CUDA examples/aot/main.c -I$(GPU_BUILD)/aot -L$(GPU_BUILD)/aot \
		-lkernels -lpthread -lm -ldl -o $(GPU_BUILD)/aot/aot_demo_cuda
	ONE_ANSWER=$(GPU_BUILD)/one_answer AOT_DEMO=$(GPU_BUILD)/aot/aot_demo_cuda \
		bash scripts/gpu-bundle.sh $(GPU_BUILD) gpu-bundle --check

# The CUDA kernels emulated under ThreadSanitizer, which reports races between a block's
# threads (tests/emu; minutes, so not part of `make test`).
test-racecheck: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L racecheck

demo: build
	@bash scripts/demo.sh $(BUILD)

# Fused against unfused and against what users use instead, on every device present; writes
# bench/out/ (results.json, PNG plots). BENCH_FLAGS=--quick for one size of each.
bench: build
	@python3 -c 'import matplotlib' 2>/dev/null || python3 -m pip install -q matplotlib 2>/dev/null || true
	python3 bench/run.py --fusec $(BUILD)/fusec $(BENCH_FLAGS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(GPU_BUILD) gpu-bundle

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

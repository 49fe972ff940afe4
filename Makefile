# ember: `make demo` runs the tour, `make test` runs every suite.
# Both install missing Debian packages first (as root) and build.
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)

.PHONY: all deps build demo test test-asan test-valgrind install clean bench bench-quick bench-build fuzz bench-dist bench-cuda bench-lapack

all: build

deps:
	@./tools/deps.sh

$(BUILD)/Makefile: CMakeLists.txt | deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

# Compiler output without the progress lines; a failed build fails here
# (so no spec ever runs against a stale ember/core.so).
build: deps $(BUILD)/Makefile
	@$(MAKE) --no-print-directory -C $(BUILD) -j$(JOBS) >$(BUILD)/build.log 2>&1; \
	  rc=$$?; grep -vE "^(\[|make\[)" $(BUILD)/build.log; exit $$rc
	@test -f $(BUILD)/ember/core.so

# The tour of the API, then the main job: a CNN trained on the digits data
# set (fetched once from Debian's python3-sklearn package into data/).
demo: build
	EMBER_BUILD=$(abspath $(BUILD)) ./bin/ember examples/tour.lua
	./tools/fetch_digits.sh
	EMBER_BUILD=$(abspath $(BUILD)) ./bin/ember examples/train_digits.lua

test: build
	@./tools/run-tests.sh $(BUILD)

# The whole suite (C tests and Lua specs) under AddressSanitizer +
# UndefinedBehaviorSanitizer with leak detection; any report fails it.
# luajit itself is not instrumented, so the runtimes are preloaded; so is
# ember/core.so, only so that it stays mapped after lua_close and leak
# reports show its function names (for the specs only). allocator_may_return_null lets
# T.empty(1e12) fail as it does without ASan (an out-of-memory error).
SAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tools/lsan.supp:print_suppressions=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
	  EMBER_LUA_PRELOAD="$(CURDIR)/$(ASAN_BUILD)/ember/core.so"
test-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DEMBER_SANITIZE=ON >/dev/null
	@$(MAKE) --no-print-directory -C $(ASAN_BUILD) -j$(JOBS) >$(ASAN_BUILD)/build.log 2>&1; \
	  rc=$$?; grep -vE "^(\[|make\[)" $(ASAN_BUILD)/build.log; exit $$rc
	@test -f $(ASAN_BUILD)/ember/core.so
	@$(SAN_ENV) ./tools/run-tests.sh $(ASAN_BUILD)

# make install [PREFIX=/usr/local] [DESTDIR=staging dir]: libember, headers,
# ember.pc, and ember/core.so + lua/ember/*.lua where Debian's LuaJIT looks.
# The Lua specs under valgrind memcheck: any error, or any byte definitely
# or indirectly lost, fails it (tools/valgrind.supp says why LuaJIT needs no
# suppressions). Not run in CI (slow); needs the valgrind package.
VALGRIND = valgrind -q --error-exitcode=99 --leak-check=full \
	--show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
	--keep-debuginfo=yes --suppressions=$(CURDIR)/tools/valgrind.supp
test-valgrind: build
	@./tools/deps.sh valgrind
	@EMBER_SKIP_C=1 EMBER_LUA_WRAP="$(VALGRIND)" ./tools/run-tests.sh $(BUILD)

PREFIX ?= /usr/local
install: build
	@cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	@DESTDIR="$(DESTDIR)" cmake --install $(BUILD) | grep -v "^-- Up-to-date" || true
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi

# make bench: ember against PyTorch, NumPy and a C reference (bench/README.md);
# writes bench/results.md. make bench-quick: small sizes, 1 repetition, to
# /tmp (proves the harness works; not a measurement). BENCH_ARGS passes
# options to bench/bench.py (e.g. BENCH_ARGS="--only mm_1024,stream_sum").
# Not part of CI: the peers need python3-torch.
RELEASE_BUILD ?= build-release
bench-build:
	@./tools/deps.sh python3-torch python3-numpy
	@cmake -S . -B $(RELEASE_BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@$(MAKE) --no-print-directory -C $(RELEASE_BUILD) -j$(JOBS) >$(RELEASE_BUILD)/build.log 2>&1; \
	  rc=$$?; grep -vE "^(\[|make\[)" $(RELEASE_BUILD)/build.log; exit $$rc
	@$(MAKE) --no-print-directory -C $(RELEASE_BUILD) bench_cref bench_floor >>$(RELEASE_BUILD)/build.log 2>&1 || \
	  { tail -20 $(RELEASE_BUILD)/build.log; exit 1; }
bench: bench-build
	/usr/bin/python3 bench/bench.py --build $(abspath $(RELEASE_BUILD)) --out bench/results.md $(BENCH_ARGS)
bench-quick: bench-build
	/usr/bin/python3 bench/bench.py --quick --build $(abspath $(RELEASE_BUILD)) --out /tmp/ember-bench-quick.md $(BENCH_ARGS)

# make bench-lapack: issue 19's LAPACK rows against the same routine called
# directly, in one process, alternating (bench/lapack_paired.lua for ember,
# bench/lapack_paired.py for PyTorch), at 1 and 2 threads; writes
# bench/results-lapack.md. Not part of CI.
bench-lapack: bench-build
	@{ echo "# LAPACK rows, paired in-process against the direct call ($$(date -u '+%Y-%m-%d %H:%M') UTC, $$(git rev-parse --short HEAD))"; \
	  for t in 1 2; do echo; echo "## $$t thread(s)"; echo; echo "ember (EMBER_BUILD=$(RELEASE_BUILD)):"; echo; \
	    OMP_NUM_THREADS=$$t OPENBLAS_NUM_THREADS=$$t EMBER_BUILD=$(RELEASE_BUILD) bin/ember bench/lapack_paired.lua $$t $(LAPACK_ROUNDS); \
	    echo; echo "PyTorch:"; echo; \
	    OMP_NUM_THREADS=$$t OPENBLAS_NUM_THREADS=$$t /usr/bin/python3 bench/lapack_paired.py $$t $(LAPACK_ROUNDS); \
	  done; } | tee bench/results-lapack.md
LAPACK_ROUNDS ?= 15

# make bench-cuda: the GPU rows (issues 15, 16) on a machine with a GPU:
# ember against PyTorch (the python3 on PATH, or EMBER_BENCH_PYTHON) and the
# CUDA runtime / cuBLAS called from C (bench/bench_cuda.py); writes
# bench/results-cuda.md. BENCH_ARGS="--dry-run" runs the harness on the
# CPU at small sizes (no GPU needed; not a measurement).
bench-cuda:
	@cmake -S . -B $(RELEASE_BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@$(MAKE) --no-print-directory -C $(RELEASE_BUILD) -j$(JOBS) >$(RELEASE_BUILD)/build.log 2>&1; \
	  rc=$$?; grep -vE "^(\[|make\[)" $(RELEASE_BUILD)/build.log; exit $$rc
	@$(MAKE) --no-print-directory -C $(RELEASE_BUILD) bench_cuda_ref >>$(RELEASE_BUILD)/build.log 2>&1 || \
	  echo "bench-cuda: no bench_cuda_ref (a build without CUDA): the C column stays empty"
	python3 bench/bench_cuda.py --build $(abspath $(RELEASE_BUILD)) $(BENCH_ARGS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(RELEASE_BUILD)

# libFuzzer targets (clang): each for FUZZ_SECONDS (tools/fuzz.sh).
FUZZ_SECONDS ?= 60
fuzz:
	@./tools/deps.sh clang libclang-rt-14-dev
	@FUZZ_SEED=$(FUZZ_SEED) FUZZ_RUNS=$(FUZZ_RUNS) ./tools/fuzz.sh $(FUZZ_SECONDS)

# The T.distributed rows (issue 17): all_reduce against a C MPI_Allreduce
# loop and the DDP step on 1 and 2 ranks, as a markdown table
# (bench/dist_bench.sh; needs Open MPI). Not part of CI.
bench-dist: bench-build
	@./bench/dist_bench.sh $(RELEASE_BUILD)

# Thin wrapper over CMake presets. `make demo` and `make test` are the README's
# quick start: both install what is missing first (scripts/install-deps.sh).
JOBS ?= $(shell nproc)
PRESET ?= release

.PHONY: all deps build demo test test-release test-asan test-fuzz fuzz bless format clean

all: build

deps:
	@bash scripts/install-deps.sh

# Configure once per preset (re-run automatically by the build when CMake files change).
build/%/build.ninja: | deps
	@cmake --preset $* >/dev/null

build: deps build/$(PRESET)/build.ninja
	@cmake --build --preset $(PRESET) -j $(JOBS)

# The main job end to end on a bundled example (see scripts/demo.sh).
demo: deps build/release/build.ninja
	@cmake --build --preset release -j $(JOBS) --target tapestry
	@bash scripts/demo.sh build/release/bin/tapestry

# Every test: the release suite, then the whole suite again under ASan + UBSan.
test: test-release test-asan

test-release: deps build/release/build.ninja
	@cmake --build --preset release -j $(JOBS)
	@ctest --preset release -j $(JOBS)

test-asan: deps build/asan/build.ninja
	@cmake --build --preset asan -j $(JOBS)
	@ctest --preset asan -j $(JOBS)

# The libFuzzer targets (the fuzz preset: clang, ASan + UBSan) built, then run
# once over their seed corpora and kept crashers, with no fuzzing time: keeps
# `make fuzz` building (clang rejects code gcc accepts). From scratch the build
# is about 9 CPU-minutes; the replay about 20 CPU-seconds.
test-fuzz: deps build/fuzz/build.ninja
	@cmake --build --preset fuzz -j $(JOBS)
	@ctest --preset fuzz -j $(JOBS)

# Every libFuzzer target for FUZZ_SECONDS each (clang, ASan + UBSan; scripts/fuzz.sh).
FUZZ_SECONDS ?= 60
fuzz: deps
	@bash scripts/fuzz.sh $(FUZZ_SECONDS)

# Rewrite the golden CLI expectations from the current binary (review the diff!).
bless: deps build/release/build.ninja
	@cmake --build --preset release -j $(JOBS) --target bless

format:
	@git ls-files '*.cpp' '*.hpp' '*.cu' | xargs clang-format -i

clean:
	rm -rf build

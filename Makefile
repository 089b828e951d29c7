# Thin wrapper over scripts/setup, CMake presets and CTest. Every target installs what is missing.
#   make demo    the main job on the built-in emulated cluster; PARTS="..." picks parts (scripts/demo:
#                env trainer pipeline ddp fsdp python-pipeline deepspeed, or all; default all but deepspeed)
#   make test    setup + configure + build + every CPU test (ctest)
#   make bench   release build + benchmarks (figures, never assertions)
#   make fuzz    libFuzzer targets (clang), FUZZ_SECONDS each
#   make docs    the documentation site (MkDocs, strict) into build-docs/
#   make docs-update  regenerate docs/'s generated regions from the built binary and package,
#                and its figures from real runs (scripts/docs/figures.py, about 10 minutes)
#   make wheel   the Python wheel into dist/: import hetrun, bin/hetrun and the rendezvous plugin,
#                built without isolation against .venv's torch (docs/how-to/install.md)
#   make image   the training image (docker/Dockerfile) with podman (or docker): localhost/
#                hetrun-trainer:dev, :dev-nonroot and the smoke stage (docs/how-to/training-images.md)
#   make build | format | install PREFIX=... | clean
SHELL := /bin/bash
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 60
PREFIX ?= /usr/local
# ccache (CMakeLists.txt uses it when installed) hashes paths relative to this clone and leaves the
# build directory out, so a clone in another folder (CI's) reuses what any clone compiled.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: setup build test demo bench fuzz format install clean asan docs docs-update wheel image

setup:
	@scripts/setup

build/CMakeCache.txt:
	cmake --preset debug

build: setup build/CMakeCache.txt
	cmake --build build -j $(JOBS)

test: build
	ctest --test-dir build --preset debug -j $(JOBS)

demo: build
	@DEMO_PARTS="$(PARTS)" scripts/demo build

build-release/CMakeCache.txt:
	cmake --preset release

bench: setup build-release/CMakeCache.txt
	cmake --build build-release -j $(JOBS)
	bench/run.sh build-release

asan: setup
	cmake --preset asan
	cmake --build build-asan -j $(JOBS)
	ctest --test-dir build-asan --preset asan -j $(JOBS)

fuzz: setup
	cmake --preset fuzz
	cmake --build build-fuzz -j $(JOBS) --target hetrun_fuzzers
	scripts/fuzz build-fuzz $(FUZZ_SECONDS)

docs: setup
	NO_MKDOCS_2_WARNING=1 .venv/bin/python -m mkdocs build --strict -d build-docs

docs-update: build
	.venv/bin/python scripts/docs/reference.py update build/bin/hetrun .venv/bin/python
	.venv/bin/python scripts/docs/figures.py update build build/figure-runs docs/assets/figures

image: setup
	scripts/image

format:
	git ls-files -co --exclude-standard -- '*.h' '*.cc' '*.cu' '*.cuh' | xargs clang-format -i

# build-python/ (pyproject.toml's build-dir) is the persistent tree scripts/setup's install uses.
wheel: setup
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) .venv/bin/python -m pip wheel --no-build-isolation --no-deps \
	  --disable-pip-version-check --wheel-dir dist .

install: setup build-release/CMakeCache.txt
	cmake --build build-release -j $(JOBS)
	cmake --install build-release --prefix $(PREFIX)

clean:
	rm -rf build build-release build-asan build-fuzz build-docs

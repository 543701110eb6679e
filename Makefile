# Thin wrapper over the CMake presets. `make run` and `make test` install what is missing first.
# Build trees go to $(BUILD)/<preset> -- the presets' own build/<preset> unless BUILD is given.
PKGS := g++ cmake make nlohmann-json3-dev libcli11-dev libboost-test-dev libhwy-dev \
        openmpi-bin libopenmpi-dev
FUZZ_PKGS := clang libclang-rt-14-dev
LINT_PKGS := clang-format clang-tidy
# What ../shared/peers/run_all.sh needs to build and run the peers meshrun is measured against,
# and matplotlib for bench/plot.py's pictures of the results.
PEER_PKGS := openmpi-bin libopenmpi-dev libgloo-dev hyperfine bc python3-numpy python3-matplotlib
JOBS ?= $(shell nproc)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
EXAMPLE := cases/dp-step/example1.json
BUILD ?= build
# Under ThreadSanitizer: the collective and mesh tests, the failure tests included.
TSAN_TESTS ?= ^(collectives|mesh|failure)
# `make fuzz`: seconds of fuzzing after the hostile inputs ran once each.
FUZZ_SECONDS ?= 60
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_LIMITS := -rss_limit_mb=4096 -malloc_limit_mb=4096

# What `make format` rewrites and `make lint` checks: every C++ file of the project.
FORMAT_FILES = $(shell find app lib tests bench -name '*.cpp' -o -name '*.hpp' | sort)

.PHONY: configure hosts-deps hosts-test mpi-gallery deps fuzz-deps lint-deps peer-deps format format-check lint build run test asan tsan fuzz bench bench-peers bench-mpi jax jax-check bench-jax clean

deps:
	@missing=""; for p in $(PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

fuzz-deps:
	@missing=""; for p in $(FUZZ_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

lint-deps:
	@missing=""; for p in $(LINT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

peer-deps:
	@missing=""; for p in $(PEER_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

# clang-format -i with .clang-format over every C++ file.
format: lint-deps
	clang-format -i $(FORMAT_FILES)

# Whether every C++ file is as clang-format leaves it (nothing is changed); seconds.
format-check: lint-deps
	clang-format --dry-run -Werror $(FORMAT_FILES)

# The formatting check, then clang-tidy with .clang-tidy over every source the release build
# compiles (the compile_commands.json of a tree configured like it; configuring is enough, nothing
# is built). Its own tree, without the tests' precompiled header: clang cannot read GCC's.
lint: format-check deps
	cmake --preset release -B $(BUILD)/lint -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON >/dev/null
	sed -n 's/^ *"file": "\(.*\)",*$$/\1/p' $(BUILD)/lint/compile_commands.json | sort -u | \
	  xargs -P $(JOBS) -n 4 clang-tidy -p $(BUILD)/lint --quiet

# Configures the release tree once; `build` then builds everything (the tests included), `run` only
# the meshrun binary it runs (the libraries and the app once: no tests, no meshrun-mpi), so that a
# first `make run` on a fresh machine prints its example in minutes (README).
configure: deps
	cmake --preset release -B $(BUILD)/release >/dev/null

build: configure
	cmake --build $(BUILD)/release -j $(JOBS)

run: configure
	cmake --build $(BUILD)/release -j $(JOBS) --target meshrun
	$(BUILD)/release/meshrun dp-step $(EXAMPLE)

test: build hosts-deps
	ctest --test-dir $(BUILD)/release --output-on-failure -j $(JOBS)

# What tests/hosts needs (iproute2, util-linux, nftables where the kernel has no netem): as root
# only, where the host tests can run at all.
hosts-deps:
	@if [ "$$(id -u)" = 0 ]; then bash -c '. tests/hosts/hosts.sh && hosts_deps'; fi

# Only the multi-host tests (network namespaces over TCP, docs/hosts.md); `make test` runs them
# too. Not root, or no `ip netns`: each says "skipped: <reason>".
hosts-test: build hosts-deps
	ctest --test-dir $(BUILD)/release --output-on-failure -L hosts

# Every submission of the gallery (cases/submissions/) under `mpirun -np $(GALLERY_RANKS)` against
# its committed verdict and the single-process run (tests/mpi/gallery_test.cpp; ctest runs a fixed
# subset of it, mpi_gallery_r2 and _r8). Minutes: one launch of mpirun per submission.
GALLERY_RANKS ?= 2
mpi-gallery: build
	MESHRUN_GALLERY=all MESHRUN_RANKS=$(GALLERY_RANKS) OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	  $(BUILD)/release/tests/mpi/mpi_gallery_test

# AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer included): the whole suite, which
# runs the binary on every case file.
asan: deps
	cmake --preset asan -B $(BUILD)/asan >/dev/null
	cmake --build $(BUILD)/asan -j $(JOBS)
	ctest --test-dir $(BUILD)/asan --output-on-failure -j $(JOBS)

# Builds only the test executables TSAN_TESTS selects (a test is named after its target, or
# <target>.<suite> when it is split, tests/CMakeLists.txt) and what they depend on, meshrun
# included.
tsan: deps
	cmake --preset tsan -B $(BUILD)/tsan >/dev/null
	cmake --build $(BUILD)/tsan -j $(JOBS) --target \
	  $$(ctest --test-dir $(BUILD)/tsan -N -R '$(TSAN_TESTS)' | sed -n 's/^ *Test *#[0-9]*: \([^.]*\).*/\1/p' | sort -u)
	ctest --test-dir $(BUILD)/tsan --output-on-failure -j $(JOBS) -R '$(TSAN_TESTS)'

# libFuzzer on the case reader and the program reader (clang, ASan + UBSan): first every hostile input of
# tests/fuzz/hostile_inputs.sh once (100,000-level nesting, a 50 MB case, million-digit numbers,
# NUL bytes, invalid UTF-8, program files of 10^6 objects and 2^25 + 1 values), then FUZZ_SECONDS
# of fuzzing from tests/fuzz/corpus and the hostile program files of cases/invalid-programs (each
# input read as a case and as a program, which the interpreter runs when it checks: issue #31).
# Bounded: FUZZ_SECONDS in all, 10 s per input; CI runs it with the default. New inputs go
# to $(FUZZ_DIR)/corpus, crashes to $(FUZZ_DIR)/crash-*; the seed corpus is left as it is.
fuzz: deps fuzz-deps
	cmake --preset fuzz -B $(FUZZ_DIR) >/dev/null
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target case_reader_fuzz
	sh tests/fuzz/hostile_inputs.sh $(FUZZ_DIR)/hostile
	$(FUZZ_DIR)/case_reader_fuzz $(FUZZ_LIMITS) -timeout=300 $(FUZZ_DIR)/hostile/*
	mkdir -p $(FUZZ_DIR)/corpus $(FUZZ_DIR)/programs
	cp cases/invalid-programs/*.json cases/invalid-programs/valid/*.json tests/cli/programs/*.json \
	  $(FUZZ_DIR)/programs/
	$(FUZZ_DIR)/case_reader_fuzz $(FUZZ_DIR)/corpus tests/fuzz/corpus $(FUZZ_DIR)/programs \
	  $(FUZZ_LIMITS) -timeout=10 \
	  -dict=tests/fuzz/case_reader.dict -max_len=16384 -max_total_time=$(FUZZ_SECONDS) \
	  -artifact_prefix=$(FUZZ_DIR)/ -print_final_stats=1

# meshrun's all-reduce table (4 B to 64 MiB per device, 8 devices); see bench/README.md.
bench: build
	$(BUILD)/release/meshrun bench allreduce

# The same table beside the peers (OpenMPI, thread baselines, the machine's limits) in one run.
bench-peers: build peer-deps
	MESHRUN=$(abspath $(BUILD)/release/meshrun) CORE=1 bash ../shared/peers/run_all.sh

# The MPI backend beside the single-process engine and raw OpenMPI (see bench/README.md):
# R = 1, R = 2 x 4 threads, R = 8 x 1 thread, MPI_Allreduce over 8 ranks; tables in
# $(BUILD)/release/bench-mpi.
bench-mpi: build
	bash bench/mpi/compare.sh $(BUILD)/release

# JAX beside meshrun (docs/jax.md): `make jax` builds the pinned virtual environment once (a stamp
# file; python3's venv module, Debian's python3-venv, installed when missing), `make jax-check`
# regenerates tests/jax/fixtures with live JAX into a temporary directory, fails if any element
# moved beyond 1e-5 (oracle.py same: XLA:CPU compiles for the host CPU, so last bits may differ),
# re-exports cases/programs and cases/submissions (python/export_builtin.py --check) and the
# programs of tests/jax/programs with their cases (make_cases.py --check) and the table of every
# primitive's dtype rules (tests/jax/dtype_rules.py --check, then meshrun on it), runs the exporter's
# self-test, grades the exported programs against live JAX's fixtures (and, through oracle.py
# compare --programs, over the whole sweep),
# and compares meshrun with JAX over the whole sweep (fails beyond 1e-5 on a well-conditioned
# element). `make bench-jax`: JAX as the performance peer (bench/README.md).
JAX_VENV := $(BUILD)/jax-venv
JAX_PY := $(JAX_VENV)/bin/python
jax: $(JAX_VENV)/.stamp
$(JAX_VENV)/.stamp: bench/jax/requirements.txt python/pyproject.toml
	@python3 -c 'import venv, ensurepip' 2>/dev/null || { echo "installing: python3-venv"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq python3-venv; }
	rm -rf $(JAX_VENV)
	python3 -m venv $(JAX_VENV)
	$(JAX_VENV)/bin/pip install -q --disable-pip-version-check -r bench/jax/requirements.txt
	$(JAX_PY) -c 'import jax; print("jax", jax.__version__)'
	$(JAX_VENV)/bin/pip install -q --disable-pip-version-check ./python
	touch $@

jax-check: jax build
	cd bench/jax && ../../$(JAX_PY) selftest.py
	rm -rf $(BUILD)/jax-check && mkdir -p $(BUILD)/jax-check
	cd bench/jax && ../../$(JAX_PY) oracle.py fixtures $(abspath $(BUILD)/jax-check)
	cd bench/jax && ../../$(JAX_PY) oracle.py same $(abspath tests/jax/fixtures) \
	  $(abspath $(BUILD)/jax-check/fixtures)
	$(BUILD)/release/meshrun check tests/jax/fixtures >$(BUILD)/jax-check/check.txt || \
	  { cat $(BUILD)/jax-check/check.txt; exit 1; }
	tail -n 1 $(BUILD)/jax-check/check.txt
	cd bench/jax && ../../$(JAX_PY) oracle.py compare $(abspath $(BUILD)/release/meshrun) \
	  $(abspath $(BUILD)/jax-check/fixtures) $(abspath $(BUILD)/jax-check/sweep)
	cd bench/jax && ../../$(JAX_PY) oracle.py compare $(abspath $(BUILD)/release/meshrun) \
	  $(abspath $(BUILD)/jax-check/fixtures) $(abspath $(BUILD)/jax-check/sweep) \
	  --programs $(abspath cases/programs)
	PYTHONPATH=python $(JAX_PY) -m unittest discover -s python/tests
	PYTHONPATH=python $(JAX_PY) python/export_builtin.py --check
	$(JAX_PY) tests/jax/programs/make_cases.py --check
	$(JAX_PY) tests/jax/corpus/make_corpus.py --check
	PYTHONPATH=python $(JAX_PY) tests/jax/dtype_rules.py --check
	$(BUILD)/release/tests/jax/jax_dtype_rules_cli_test
	cd bench/jax && ../../$(JAX_PY) gallery.py $(abspath $(BUILD)/release/meshrun)
	for p in dp-step tp-mlp mlp-train; do \
	  $(BUILD)/release/meshrun check --program cases/programs/$$p.json \
	    $(BUILD)/jax-check/fixtures/$$p >$(BUILD)/jax-check/run-$$p.txt || \
	    { cat $(BUILD)/jax-check/run-$$p.txt; exit 1; }; \
	  printf '%s (exported, interpreted): ' $$p; tail -n 1 $(BUILD)/jax-check/run-$$p.txt; \
	done

bench-jax: jax build
	cd bench/jax && ../../$(JAX_PY) peer.py $(abspath $(BUILD)/release/meshrun)
	cd bench/jax && ../../$(JAX_PY) warm.py $(abspath $(BUILD)/release/meshrun)

clean:
	rm -rf $(BUILD)

# Kiln: `make demo` and `make test` are the two commands (see README.md).
# Both install what is missing (LLVM 22 from Debian's packages), build, and run.

SHELL := /bin/bash
comma := ,
LLVM_PREFIX := /usr/lib/llvm-22
LLVM_BIN := $(LLVM_PREFIX)/bin
CARGO ?= cargo
# Tests use the dev profile (dependencies optimised, see Cargo.toml);
# the demo and the benchmarks use release builds.
DEBUG_BIN := $(CURDIR)/target/debug
RELEASE_BIN := $(CURDIR)/target/release

.PHONY: all deps deps-static deps-bench build build-release install test test-fmt test-clippy test-cargo test-lit fuzz-smoke fuzz demo bench accuracy clean quadrants test-quadrants quadrants-captured python-module python-wheel plots genesis genesis-check

all: build

# $(call apt-install,PACKAGES,WHAT,WHY): the shell text that installs
# PACKAGES (WHAT is missing, WHY it is needed) with apt-get as root, and
# otherwise prints the exact command and fails.
apt-install = \
  if [ "$$(id -u)" = 0 ]; then \
    echo "make: installing $(strip $(1)) ($(strip $(3)))"; \
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(1) >/dev/null || exit 1; \
  else \
    echo "make: $(strip $(2)) is missing; run as root:"; \
    echo "  apt-get update && apt-get install -y --no-install-recommends $(strip $(1))"; \
    exit 1; \
  fi

# Installs LLVM 22 (which brings lit, FileCheck and not) and Redis (the
# remote tier's tests start their own servers) when they are missing.
# As root it runs apt-get; otherwise it prints the exact command and fails.
deps:
	@if [ ! -x $(LLVM_BIN)/llvm-config ] || [ ! -x $(LLVM_BIN)/lit ] || [ ! -x $(LLVM_BIN)/FileCheck ]; then \
	  $(call apt-install,llvm-22-dev,LLVM 22,LLVM 22$(comma) lit$(comma) FileCheck); \
	fi
	@if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then \
	  $(call apt-install,redis-server redis-tools,Redis,the remote tier's tests); \
	fi
	@if ! command -v c++ >/dev/null; then \
	  $(call apt-install,g++,a C++ compiler,build.rs compiles the C++ shims against LLVM); \
	fi
	@command -v $(CARGO) >/dev/null || { echo "make: cargo is missing; install Rust (https://rustup.rs)"; exit 1; }
	@$(CARGO) clippy --version >/dev/null 2>&1 || { \
	  if command -v rustup >/dev/null; then echo "make: installing clippy"; rustup component add clippy; \
	  else echo "make: cargo clippy is missing; install it (rustup component add clippy)"; exit 1; fi; }
	@$(CARGO) fmt --version >/dev/null 2>&1 || { \
	  if command -v rustup >/dev/null; then echo "make: installing rustfmt"; rustup component add rustfmt; \
	  else echo "make: cargo fmt is missing; install it (rustup component add rustfmt)"; exit 1; fi; }

# Release builds link LLVM statically (build.rs), which also needs the
# static libraries' own dependencies, the development files of what
# `llvm-config --link-static --system-libs` names (all but zstd come with
# llvm-22-dev on Debian 12).
STATIC_DEPS := libzstd-dev zlib1g-dev libxml2-dev libz3-dev
deps-static: deps
	@missing=""; for p in $(STATIC_DEPS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  $(call apt-install,$$missing,a library the static LLVM link needs,for the static LLVM link); \
	fi

# The benchmarks time whole processes with hyperfine (Debian's package).
deps-bench: deps-static
	@if ! command -v hyperfine >/dev/null; then \
	  $(call apt-install,hyperfine,hyperfine,the benchmarks time whole processes with it); \
	fi

build: deps
	$(CARGO) build --bins

build-release: deps-static
	$(CARGO) build --release --bins

# The seven tools (a release build), their man pages and bash, zsh and fish
# completions under PREFIX (DESTDIR stages it); scripts/install.sh says
# where each goes.
PREFIX ?= /usr/local
install: build-release
	@bash scripts/install.sh $(RELEASE_BIN) $(PREFIX)

test: deps quadrants
	$(MAKE) --no-print-directory test-fmt
	$(MAKE) --no-print-directory test-clippy
	$(MAKE) --no-print-directory test-cargo
	$(MAKE) --no-print-directory fuzz-smoke
	$(MAKE) --no-print-directory test-lit
	$(MAKE) --no-print-directory test-quadrants

# The code is as rustfmt writes it (rustfmt.toml: the house style).
test-fmt:
	$(CARGO) fmt --all --check

# Every lint is an error, in every target (tests and examples too), in every
# crate of the workspace.
test-clippy:
	$(CARGO) clippy --all-targets -- -D warnings
	$(CARGO) clippy -p kiln-python -- -D warnings

# The tools and `import kiln` first: the tests run them (the README's
# bridge example replays through the module), and cargo builds a package's
# binaries only for that package's own tests (kiln-compile is
# kiln-codegen's, which has none). insta: a stale or missing snapshot fails
# (nothing is written). The doc tests are the compile_fail ones that show
# what the compiler refuses (src/ir/entities.rs: no entity minted or
# numbered outside ir).
test-cargo: quadrants
	$(CARGO) build --bins
	$(MAKE) --no-print-directory python-module
	INSTA_UPDATE=no INSTA_FORCE_PASS=0 $(CARGO) test --all-targets
	$(CARGO) test --doc

test-lit:
	$(CARGO) build --bins --examples
	KILN_BIN_DIR=$(DEBUG_BIN) $(LLVM_BIN)/lit -sv lit-tests

# Every kept fuzz input (fuzz/seeds, fuzz/regressions) and seeded mutations
# of each, through the fuzz targets' own checks (fuzz/checks.rs), as a plain
# cargo test: no fuzzing toolchain needed (docs/fuzzing.md says why).
fuzz-smoke:
	$(CARGO) test --test fuzz_corpus

# A real campaign: FUZZ_TARGET (parse, record, npy, config, import) for FUZZ_RUNS inputs with
# cargo-fuzz and libFuzzer on the stable toolchain (RUSTC_BOOTSTRAP=1 lets it
# take cargo-fuzz's -Z flags); installs cargo-fuzz when missing. Slow: run
# it by hand, niced, one target at a time.
FUZZ_TARGET ?= parse
FUZZ_RUNS ?= 1000000
fuzz:
	@command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked
	mkdir -p target/fuzz-corpus/$(FUZZ_TARGET)
	cd fuzz && RUSTC_BOOTSTRAP=1 nice -n 19 $(CARGO) fuzz run -O $(FUZZ_TARGET) \
	  ../target/fuzz-corpus/$(FUZZ_TARGET) seeds/$(FUZZ_TARGET) -- -runs=$(FUZZ_RUNS) -timeout=10 -rss_limit_mb=2048

# The Python half of the Quadrants bridge (docs/quadrants-ir.md): a virtual
# environment with Quadrants 1.3.3, numpy, pytest, ruff and mypy from PyPI, for
# tools/kiln_quadrants (the capture) and the corpus in testdata/quadrants.
# The stamp records what was installed, so a second run costs nothing; a
# venv whose python no longer starts or imports quadrants is made anew.
QD_VENV := $(CURDIR)/target/quadrants-venv
QD_PY := $(QD_VENV)/bin/python
QD_PKGS := quadrants==1.3.3 numpy pytest ruff==0.17.6 mypy==2.4.1 maturin==1.16.0
QD_STAMP := $(QD_VENV)/.kiln-stamp
PYTHON3 ?= python3
quadrants:
	@if [ -f $(QD_STAMP) ] && [ "$$(cat $(QD_STAMP))" = "$(QD_PKGS)" ] && \
	    $(QD_PY) -c 'import importlib.util as u, sys; sys.exit(not all(map(u.find_spec, ("quadrants", "numpy", "pytest", "mypy", "maturin"))))' \
	      >/dev/null 2>&1; then exit 0; fi; \
	echo "make: creating $(QD_VENV) ($(QD_PKGS))"; \
	rm -rf $(QD_VENV) && mkdir -p $(dir $(QD_VENV)) && \
	$(PYTHON3) -m venv $(QD_VENV) && \
	$(QD_PY) -m pip install -q --disable-pip-version-check $(QD_PKGS) && \
	$(QD_PY) -c 'import quadrants, numpy' && \
	echo "$(QD_PKGS)" > $(QD_STAMP)

# The Quadrants bridge's tests (part of `make test`): ruff and mypy on
# its code, then the capture on the corpus and `import kiln`, with the venv
# `make quadrants` makes. The tools are built as test-lit builds them (with
# the examples: the same features, so nothing is compiled again), and the
# Python module over the same library.
test-quadrants: quadrants
	$(CARGO) build --bins --examples
	$(MAKE) --no-print-directory python-module
	$(QD_VENV)/bin/ruff check --config tools/kiln_quadrants/ruff.toml tools/kiln_quadrants
	$(QD_VENV)/bin/mypy --config-file tools/kiln_quadrants/mypy.ini tools/kiln_quadrants
	KILN_BIN_DIR=$(DEBUG_BIN) $(QD_PY) -m pytest -q tools/kiln_quadrants/test_capture.py tools/kiln_quadrants/test_replay.py tools/kiln_quadrants/test_module.py

# `import kiln` (crates/kiln-python, docs/python.md): the extension module,
# built by maturin into the Quadrants venv as the tools are built (debug,
# after them: the library is not compiled again; a second run rebuilds
# nothing). `make test` tests it (tools/kiln_quadrants/test_module.py).
python-module: quadrants
	VIRTUAL_ENV=$(QD_VENV) $(QD_VENV)/bin/maturin develop -q -m crates/kiln-python/Cargo.toml

# The module as a wheel (target/wheels/), optimised. LLVM is linked as the
# shared libLLVM (a static link gives LLVM to Kiln's own binaries only),
# which the wheel names rather than bundles (no auditwheel repair): the
# machine that installs it needs LLVM 22, as docs/python.md says.
python-wheel: quadrants
	KILN_LLVM_LINK=dynamic $(QD_VENV)/bin/maturin build --release --auditwheel skip -m crates/kiln-python/Cargo.toml

# Genesis (the physics engine built on Quadrants 1.3.3) through the bridge
# (docs/quadrants-ir.md, "Genesis"): a venv of its own, not part of
# `make test` (torch from PyPI brings its CUDA libraries: several GB and a
# few minutes). GENESIS_TORCH_INDEX, when set, is a pip index to take torch
# from first (PyTorch's CPU wheel index keeps the venv small where it can be
# reached); PyPI otherwise. Made anew, like `make quadrants`, only when the
# stamp or an import says so; the `kiln` module is built into it by maturin.
GS_VENV := $(CURDIR)/target/genesis-venv
GS_PY := $(GS_VENV)/bin/python
GS_PKGS := genesis-world==1.4.5 quadrants==1.3.3 torch numpy pytest maturin==1.16.0
GS_STAMP := $(GS_VENV)/.kiln-stamp
GENESIS_TORCH_INDEX ?=
genesis:
	@if [ -f $(GS_STAMP) ] && [ "$$(cat $(GS_STAMP))" = "$(GS_PKGS)" ] && \
	    $(GS_PY) -c 'import importlib.util as u, sys; sys.exit(not all(map(u.find_spec, ("genesis", "quadrants", "torch", "numpy", "maturin"))))' \
	      >/dev/null 2>&1; then exit 0; fi; \
	echo "make: creating $(GS_VENV) ($(GS_PKGS)); a few minutes, several GB"; \
	rm -rf $(GS_VENV) && mkdir -p $(dir $(GS_VENV)) && \
	$(PYTHON3) -m venv $(GS_VENV) && \
	if [ -n "$(GENESIS_TORCH_INDEX)" ]; then \
	  $(GS_PY) -m pip install -q --disable-pip-version-check --timeout 20 --index-url $(GENESIS_TORCH_INDEX) torch || \
	  echo "make: torch from $(GENESIS_TORCH_INDEX) failed; taking it from PyPI"; \
	fi && \
	$(GS_PY) -m pip install -q --disable-pip-version-check $(GS_PKGS) && \
	$(GS_PY) -c 'import genesis, quadrants, torch, numpy' && \
	echo "$(GS_PKGS)" > $(GS_STAMP)
	VIRTUAL_ENV=$(GS_VENV) $(GS_VENV)/bin/maturin develop -q -m crates/kiln-python/Cargo.toml

# The Genesis scenes of testdata/genesis/ through the bridge, with the venv
# `make genesis` makes (minutes: Quadrants compiles every kernel cold under
# the capture). Each scene must run whole with no kernel that differs and
# at least 90% of its kernels agreeing (docs/quadrants.md, "Genesis").
genesis-check: genesis
	$(CARGO) build --bins
	@for scene in testdata/genesis/*.py; do \
	  echo "make: $$scene through the bridge"; \
	  KILN_BIN_DIR=$(DEBUG_BIN) KILN_QUADRANTS_PYTHON=$(GS_PY) tools/kiln-quadrants run $$scene > target/genesis-check.out; \
	  status=$$?; grep -v '^ok ' target/genesis-check.out | grep -v '^\[' ; \
	  summary=$$(grep -E '^[0-9]+ kernels: ' target/genesis-check.out); \
	  set -- $$(echo "$$summary" | sed -E 's/^([0-9]+) kernels: ([0-9]+) agree.* ([0-9]+) differ.*/\1 \2 \3/'); \
	  if [ $$status -gt 2 ] || [ $$status -eq 1 ] || [ -z "$$summary" ] || [ "$$3" != 0 ] || [ $$(( $$2 * 10 )) -lt $$(( $$1 * 9 )) ]; then \
	    echo "make: $$scene: status $$status, $${summary:-no summary}: wanted none differing and 90% agreeing"; exit 1; \
	  fi; \
	done

# Re-make the committed captures under testdata/quadrants/captured/.
quadrants-captured: quadrants
	nice -n 15 $(QD_PY) tools/kiln_quadrants/refresh_captured.py

# Each step says what it does and about how long it takes (figures from a
# fresh 2-core machine), shows a line a minute while it runs, and how long
# it took (scripts/step.sh).
demo:
	@bash scripts/step.sh "1/3 installing what is missing" "seconds; 1-3 minutes when LLVM 22 must be installed" -- \
	  $(MAKE) --no-print-directory deps-static
	@bash scripts/step.sh "2/3 building the release tools" "about 8 minutes on 2 cores the first time, seconds after" -- \
	  $(CARGO) build --release --bins
	@bash scripts/step.sh "3/3 the demo: one kernel through the cache" "about 10 seconds" -- \
	  bash scripts/demo.sh $(RELEASE_BIN)

bench: deps-bench
	@bash scripts/bench.sh

# The accuracy of compiled math over every f32 input, through the JIT,
# against f64: default mode's own functions (src/math.rs; also checked
# bit for bit against the interpreter) and --fast-math's (glibc's libmvec,
# vectorised). Markdown tables for docs/performance.md ("Default-mode
# math" and "Fast-math accuracy"). Slow (minutes per function);
# `make test` runs a sample of it (crates/kiln-jit/tests/math_accuracy.rs).
accuracy: deps-static
	$(CARGO) run --release -p kiln-jit --example accuracy -- --default
	$(CARGO) run --release -p kiln-jit --example accuracy

# The plots of docs/performance.md (docs/perf/*.svg), drawn by
# scripts/plots.py from the recorded results (docs/perf/results/*.csv),
# with a pinned matplotlib installed into the Quadrants venv when it is
# missing. Nothing is measured: add a benchmark's figures to the CSV files,
# run this, and commit the SVGs that change (the same results give the
# same bytes).
MATPLOTLIB_VERSION := 3.11.2
plots: quadrants
	@$(QD_PY) -c 'import matplotlib, sys; sys.exit(matplotlib.__version__ != "$(MATPLOTLIB_VERSION)")' >/dev/null 2>&1 || \
	  $(QD_PY) -m pip install -q --disable-pip-version-check matplotlib==$(MATPLOTLIB_VERSION)
	$(QD_PY) scripts/plots.py

clean:
	$(CARGO) clean

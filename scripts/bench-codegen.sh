#!/usr/bin/env bash
# Codegen and JIT benchmark: per-task compile and load times, parallel
# compile on 1 and 2 threads, and JIT saxpy against Rust (see
# crates/kiln-jit/examples/bench_codegen.rs). Release build; figures go to
# docs/performance.md, section "Codegen and JIT".
#
# Usage: scripts/bench-codegen.sh [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --example bench_codegen
exec target/release/examples/bench_codegen "${1:-20}"

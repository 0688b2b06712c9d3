#!/usr/bin/env bash
# Runs every benchmark in turn (`make bench`). Each script builds what it
# needs in release mode and prints its figures; docs/performance.md records
# them with the machine and the command. Benchmarks are not tests: nothing
# here fails on a slow figure.
set -euo pipefail
cd "$(dirname "$0")/.."
for b in bench-frontend bench-cache bench-codegen bench-percache bench-warm bench-orc-floor bench-remote; do
  if [ -f "scripts/$b.sh" ]; then
    echo "=== scripts/$b.sh"
    bash "scripts/$b.sh"
  fi
done

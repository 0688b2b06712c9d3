#!/usr/bin/env bash
# The per-task cache, end to end, on a shipped kernel (`make demo` runs it
# after `make build-release`): the tasks a kernel becomes, their keys, an
# interpreter run, a cold JIT run that compiles and stores every task (its
# quick tier, then its optimised one in the background), a warm run that
# compiles nothing, an edit of one loop that recompiles one
# task, a damaged record that is replaced, and the cache's own view.
#
# Usage: scripts/demo.sh BIN_DIR   (e.g. target/release)
set -euo pipefail

if [ $# -ne 1 ] || [ ! -x "$1/kiln-run" ]; then
  echo "usage: $0 BIN_DIR (a directory holding the built kiln-* tools, e.g. target/release)" >&2
  exit 2
fi
BIN=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KERNEL=$ROOT/testdata/ten_tasks.kir
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-demo.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
CACHE=$WORK/cache
# Nothing from the user's environment: a fresh cache, this host's CPU.
unset KILN_TARGET_CPU KILN_TARGET_FEATURES
export KILN_CACHE_DIR=$CACHE

# Bold headings on a terminal, plain ones in a log.
if [ -t 1 ]; then
  heading() { printf '\n\033[1m== %s ==\033[0m\n' "$*"; }
else
  heading() { printf '\n== %s ==\n' "$*"; }
fi
run() { printf '$ %s\n' "$*" | sed "s#$BIN/##g; s#$ROOT/##g; s#$WORK#\$WORK#g"; "$@"; }
# One JIT run of FILE: shows the command and its --stats (standard error),
# keeps the digests in $WORK/NAME.digests and compares them with REFERENCE.
jit_run() {
  local file=$1 name=$2 reference=$3
  printf '$ kiln-run --digest --stats %s\n' "$(basename "$file")"
  "$BIN/kiln-run" --digest --stats "$file" > "$WORK/$name.digests" 2> "$WORK/$name.stats"
  sed "s#$WORK#\$WORK#g" "$WORK/$name.stats"
  if cmp -s "$reference" "$WORK/$name.digests"; then
    echo "digests: identical to the interpreter's"
  else
    echo "digests: DIFFER from the interpreter's"
    exit 1
  fi
}

# Waits (up to a minute) for the background compile a run on the quick
# tier leaves (docs/runtime.md, "Tiers"), so each step starts from the
# cache the one before left.
background_done() {
  local waited=0
  while pgrep -f -- "--cache-dir=$CACHE" > /dev/null && [ "$waited" -lt 600 ]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  echo "(the optimised tier, compiled in the background, is in the cache)"
}

heading "1. The kernel: one serial prologue and nine loops (ten tasks after offload)"
printf '$ kiln-opt --passes=offload testdata/ten_tasks.kir | grep task\n'
"$BIN/kiln-opt" --passes=offload "$KERNEL" | grep -E '^\s*task ' | sed 's/{$//'

heading "2. Each task's key: its canonical text and the compile configuration"
run "$BIN/kiln-key" "$KERNEL"

heading "3. The reference interpreter: field digests"
printf '$ kiln-run --engine interp --digest testdata/ten_tasks.kir\n'
"$BIN/kiln-run" --engine interp --digest "$KERNEL" | tee "$WORK/interp.digests"

heading "4. Cold JIT run on an empty cache: every task compiled quickly (-O0), stored and run; its optimised tier (-O2) compiles in the background"
jit_run "$KERNEL" cold "$WORK/interp.digests"
background_done

heading "5. Warm run, a new process: every task's optimised tier loaded from the cache, nothing compiled"
jit_run "$KERNEL" warm "$WORK/interp.digests"

heading "6. Edit one loop (a constant of loop 7): one task recompiled, nine loaded"
sed 's/%k7 = const 1000.0 : f32/%k7 = const 999.0 : f32/' "$KERNEL" > "$WORK/edited.kir"
printf '$ sed s/1000.0/999.0/ testdata/ten_tasks.kir > edited.kir\n'
diff "$KERNEL" "$WORK/edited.kir" | sed 's/^/  /' || true
printf '$ kiln-key --diff testdata/ten_tasks.kir edited.kir\n'
"$BIN/kiln-key" --diff "$KERNEL" "$WORK/edited.kir" | grep -v -i unchanged || true
"$BIN/kiln-run" --engine interp --digest "$WORK/edited.kir" > "$WORK/edited.interp"
jit_run "$WORK/edited.kir" edited "$WORK/edited.interp"
background_done

heading "7. Damage one record on disk (a byte of its metadata overwritten): detected, replaced"
KEY=$("$BIN/kiln-key" "$KERNEL" | awk '$1 == "@ten_tasks.3" { print $2 }')
RECORD=$(find "$CACHE" -name "${KEY:2}.kobj" -print -quit)
printf '$ printf X | dd of=%s bs=1 seek=70 conv=notrunc\n' "${RECORD#$WORK/}"
printf 'X' | dd of="$RECORD" bs=1 seek=70 conv=notrunc status=none
run "$BIN/kiln-cache-inspect" verify || true
jit_run "$KERNEL" repaired "$WORK/interp.digests"

heading "8. The cache itself: totals, and every record verified"
run "$BIN/kiln-cache-inspect" stats | sed "s#$WORK#\$WORK#g"
run "$BIN/kiln-cache-inspect" verify

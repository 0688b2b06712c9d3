#!/usr/bin/env bash
# One step of `make demo` (or any long make target) that says what it is
# doing and about how long it takes, shows a line a minute while it runs
# (cargo prints nothing for minutes while it compiles one large crate), and
# says how long it took. The command's exit status is the step's.
#
# Usage: scripts/step.sh WHAT ABOUT -- COMMAND [ARG...]
#   WHAT   what the step does ("building the release tools")
#   ABOUT  how long it usually takes ("about 7 minutes the first time")
set -uo pipefail

if [ $# -lt 4 ] || [ "$3" != "--" ]; then
  echo "usage: $0 WHAT ABOUT -- COMMAND [ARG...]" >&2
  exit 2
fi
what=$1 about=$2
shift 3

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
printf '%s== %s (%s) ==%s\n' "$bold" "$what" "$about" "$plain"
start=$SECONDS

# The heartbeat: a line a minute, on standard error so it never mixes with
# a step's own output on standard output.
(
  minutes=0
  while sleep 60; do
    minutes=$((minutes + 1))
    printf '   ... still %s: %d min so far\n' "$what" "$minutes" >&2
  done
) &
ticker=$!
trap 'kill "$ticker" 2>/dev/null' EXIT INT TERM

"$@"
status=$?
kill "$ticker" 2>/dev/null
wait "$ticker" 2>/dev/null
took=$((SECONDS - start))
if [ "$status" -eq 0 ]; then
  printf '   %s: done in %dm%02ds\n' "$what" $((took / 60)) $((took % 60))
else
  printf '   %s: failed after %dm%02ds (exit %d)\n' "$what" $((took / 60)) $((took % 60)) "$status" >&2
fi
exit "$status"

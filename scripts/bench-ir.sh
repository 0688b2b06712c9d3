#!/usr/bin/env bash
# Issue 12's "behaviour unchanged, no speed lost", in one run: the front end
# (kiln-opt parse + verify + print of a 50 MB module, and LLVM 22's `opt -S`
# on an LLVM IR file of the same size), keying (bench-key over 1,000 tasks)
# and a warm `ten_tasks` kernel-ready (bench-percache), each measured for
# a build of an earlier commit ("before") and this tree ("after"),
# alternating the two in every round.
#
#   scripts/bench-ir.sh BEFORE_DIR [ROUNDS]     (default 5 rounds)
#
# BEFORE_DIR holds release builds of the earlier commit: kiln-opt,
# bench-key, bench-percache. This tree's are built
# here. Prints a markdown table: best wall and CPU of the front end, best
# keying MB/s, median warm kernel-ready; and the after/before ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE=${1:?usage: scripts/bench-ir.sh BEFORE_DIR [ROUNDS]}
ROUNDS=${2:-5}
OPT=/usr/lib/llvm-22/bin/opt
for b in kiln-opt bench-key bench-percache; do
  [ -x "$BEFORE/$b" ] || { echo "bench-ir: $BEFORE/$b is missing" >&2; exit 1; }
done
command -v hyperfine > /dev/null || { echo "bench-ir: hyperfine is missing (apt-get install hyperfine)" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bench-ir.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

nice -n 10 cargo build --release --quiet --bin kiln-opt --example gen-large --example gen-tasks
mkdir -p "$WORK/after"
cp target/release/kiln-opt target/release/examples/gen-large target/release/examples/gen-tasks "$WORK/after/"
nice -n 10 cargo build --release --quiet --example bench-key --example bench-percache
cp target/release/examples/bench-key target/release/examples/bench-percache "$WORK/after/"
AFTER=$WORK/after

"$AFTER/gen-large" --kir "$WORK/large.kir" --ll "$WORK/large.ll" --mb 50 > /dev/null
"$AFTER/gen-tasks" 1000 > "$WORK/tasks.kir"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# The front end: hyperfine alternates nothing, so run one round of each side
# per iteration and keep every figure.
: > "$WORK/fe.tsv"
for r in $(seq "$ROUNDS"); do
  for side in before after opt; do
    case $side in
      before) cmd="$BEFORE/kiln-opt $WORK/large.kir -o $WORK/out.kir" ;;
      after) cmd="$AFTER/kiln-opt $WORK/large.kir -o $WORK/out.kir" ;;
      opt) cmd="$OPT -S $WORK/large.ll -o $WORK/out.ll" ;;
    esac
    hyperfine -N -r 1 --export-json "$WORK/h.json" "$cmd" > /dev/null 2>&1
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print(sys.argv[2], r["times"][0], r["user"]+r["system"], sep="\t")' "$WORK/h.json" "$side" >> "$WORK/fe.tsv"
  done
  cmp -s "$WORK/large.kir" "$WORK/out.kir" || { echo "bench-ir: kiln-opt output differs from its canonical input" >&2; exit 1; }
done

# Keying: bench-key's best of 100 rounds, each side ROUNDS times.
: > "$WORK/key.tsv"
for r in $(seq "$ROUNDS"); do
  for side in before after; do
    bin=$BEFORE/bench-key; [ $side = after ] && bin=$AFTER/bench-key
    mbs=$("$bin" "$WORK/tasks.kir" 100 | sed -n 's/.*= \([0-9.]*\) MB\/s/\1/p')
    printf '%s\t%s\n' "$side" "$mbs" >> "$WORK/key.tsv"
  done
done

# Warm ten_tasks: one cold run fills a cache per side; then 3*ROUNDS warm
# processes per side, alternating.
unset KILN_TARGET_CPU KILN_TARGET_FEATURES
"$BEFORE/bench-percache" testdata/ten_tasks.kir --cache-dir "$WORK/c-before" > /dev/null
"$AFTER/bench-percache" testdata/ten_tasks.kir --cache-dir "$WORK/c-after" > /dev/null
: > "$WORK/warm.jsonl"
for r in $(seq $((3 * ROUNDS))); do
  for side in before after; do
    bin=$BEFORE/bench-percache; [ $side = after ] && bin=$AFTER/bench-percache
    printf '{"side": "%s", "r": %s}\n' "$side" "$("$bin" testdata/ten_tasks.kir --cache-dir "$WORK/c-$side")" >> "$WORK/warm.jsonl"
  done
done

python3 - "$WORK" "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(stat -c %s "$WORK/large.kir")" "$(stat -c %s "$WORK/large.ll")" <<'EOF'
import json, statistics, sys
work, lb, la, kb, lbytes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
fe = [l.split("\t") for l in open(f"{work}/fe.tsv").read().split("\n") if l]
def best(side, col):
    return min(float(r[col]) for r in fe if r[0] == side)
key = [l.split("\t") for l in open(f"{work}/key.tsv").read().split("\n") if l]
kbest = {s: max(float(r[1]) for r in key if r[0] == s) for s in ("before", "after")}
warm = [json.loads(l) for l in open(f"{work}/warm.jsonl")]
for w in warm:
    assert w["r"]["misses"] == 0, f"a warm run missed: {w}"
wmed = {s: statistics.median(w["r"]["ready_ms"] for w in warm if w["side"] == s) for s in ("before", "after")}
print(f"load average {lb} before, {la} after; front end: best of the rounds; module {kb/1e6:.1f} MB of KIR, {lbytes/1e6:.1f} MB of LLVM IR")
print()
print("| measurement | before | after | after / before |")
print("|---|---:|---:|---:|")
for label, col in (("front end, wall s", 1), ("front end, CPU s", 2)):
    b, a = best("before", col), best("after", col)
    print(f"| {label} | {b:.3f} | {a:.3f} | {a/b:.3f} |")
b, a = kb / 1e6 / best("before", 1), kb / 1e6 / best("after", 1)
print(f"| front end, MB/s (wall) | {b:.1f} | {a:.1f} | {a/b:.3f} |")
b, a = kb / 1e6 / best("before", 2), kb / 1e6 / best("after", 2)
print(f"| front end, MB per CPU-s | {b:.1f} | {a:.1f} | {a/b:.3f} |")
print(f"| keying, MB/s (best) | {kbest['before']:.0f} | {kbest['after']:.0f} | {kbest['after']/kbest['before']:.3f} |")
print(f"| warm ten_tasks kernel-ready, ms (median) | {wmed['before']:.2f} | {wmed['after']:.2f} | {wmed['after']/wmed['before']:.3f} |")
o_wall, o_cpu = best("opt", 1), best("opt", 2)
print()
print(f"opt -S: {o_wall:.3f} s wall, {o_cpu:.3f} CPU-s = {lbytes/1e6/o_wall:.1f} MB/s; "
      f"kiln-opt after / opt -S by wall: {(kb/best('after',1))/(lbytes/o_wall):.2f}x, by CPU: {(kb/best('after',2))/(lbytes/o_cpu):.2f}x; "
      f"before: {(kb/best('before',1))/(lbytes/o_wall):.2f}x by wall")
EOF

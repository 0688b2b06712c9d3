# Shared by the benchmarks that time a kernel per call (bench-steady.sh,
# bench-vectors.sh); sourced, not run.

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# per_call TRACE KERNEL: the median over its calls of KERNEL's time per
# call in a --time-trace file: from a call's first launch span's start to
# its last one's end (a call launches the same number of tasks each time),
# the first of 1 + CALLS calls left out (as C's untimed first call).
per_call() {
  python3 - "$1" "$2" "$((CALLS + 1))" <<'PY'
import json, statistics, sys
path, kernel, calls = sys.argv[1], sys.argv[2].lstrip("@") + ".", int(sys.argv[3])
d = json.load(open(path))
ev = d["traceEvents"] if isinstance(d, dict) else d
spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev
               if e.get("ph") == "X" and e["name"] == "launch" and e.get("args", {}).get("task", "").startswith(kernel))
per = len(spans) // calls
print(statistics.median((spans[(c + 1) * per - 1][1] - spans[c * per][0]) / 1000 for c in range(1, calls)))
PY
}

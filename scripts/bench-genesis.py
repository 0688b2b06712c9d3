"""Genesis scenes through `kiln-quadrants run`: what imports, agrees, differs, is refused, and what it costs.

Usage: KILN_BIN_DIR=DIR target/genesis-venv/bin/python scripts/bench-genesis.py [CSV]
(`make genesis` makes the venv; `make build` the tools in DIR.)

For each scene of testdata/genesis/ (Genesis's own default settings,
headless, CPU):
- the plain scene, cold (fresh Genesis and Quadrants caches) and warm (the
  same caches again): wall time; Quadrants' compile time is taken as the
  difference (what its offline cache saves);
- the scene through the bridge (`--keep`, default `--calls`, a fresh Kiln
  cache): wall time, the peak resident memory of the largest process, the
  bytes kept, and the summary: kernels that agree, differ, are not
  imported (grouped by the first line of why) or raised in Quadrants;
- Kiln compiling the imported kernels, each on its first call's values
  from the capture, through a fresh cache (cold) and then again in a new
  process through the same cache (warm): the statistics' key, compile and
  load milliseconds summed over the kernels.
Prints a table and the refusals, and writes the figures to CSV (default
docs/perf/results/genesis.csv).
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
BRIDGE = str(ROOT / "tools" / "kiln-quadrants")
SCENES = sorted((ROOT / "testdata" / "genesis").glob("*.py"))
SUMMARY_RE = re.compile(r"^(\d+) kernels: (\d+) agree(?:, \d+ checked by distribution)?, (\d+) differ, (\d+) not imported(?:, (\d+) raised)?",
                        re.M)


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    """Wall seconds, the peak resident memory of the largest process (KiB,
    GNU time's), and the output."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        start = time.perf_counter()
        r = subprocess.run(["/usr/bin/time", "-v", "-o", t.name, *cmd], env=env, capture_output=True, text=True, cwd=ROOT)
        wall = time.perf_counter() - start
        rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", t.read())
    return wall, int(rss.group(1)) if rss else 0, r.stdout + r.stderr


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def why(text: str) -> str:
    """A refusal's first error line without its place and names: the cause to group by."""
    line = next((ln for ln in text.splitlines() if "error:" in ln), text.strip().splitlines()[0] if text.strip() else "?")
    line = line.split("error:", 1)[-1].strip()
    line = re.sub(r" \((?:from|near) [^)]*\)", "", line)
    # The names of fields, arguments and values go; a statement's name
    # (`cannot import 'reinterpret_cast_bits'`) stays.
    line = re.sub(r"@\S+|^'[^']*'|\[[0-9, ]*\]|\$\d+", "X", line)
    return line


def refusals(out: str) -> Counter[str]:
    """Each cause of `SKIP ...: cannot be imported:`, counted."""
    causes: Counter[str] = Counter()
    lines = out.splitlines()
    for i, ln in enumerate(lines):
        if ln.startswith("SKIP ") and ln.endswith("cannot be imported:"):
            causes[why("\n".join(lines[i + 1:i + 3]))] += 1
    return causes


def compile_times(keep: Path, cache: Path) -> dict[str, float]:
    """Kiln's key, compile and load milliseconds for every imported kernel's
    first call kept in `keep`, through `cache` (run in a process of its own)."""
    code = f"""
import json, sys
sys.path.insert(0, {str(ROOT / 'tools')!r})
import kiln, numpy as np
from kiln_quadrants.pack import Reader
from kiln_quadrants.replay import NUMPY_DTYPES, kir_name
keep = {str(keep)!r}
manifest = json.load(open(keep + "/manifest.json"))
values = Reader((keep + "/capture", "values"), (keep, "kiln"))
seen, total = set(), dict(key_ms=0.0, compile_ms=0.0, load_ms=0.0, tasks=0, misses=0, hits=0)
for call in manifest["calls"]:
    if call["kir"] in seen:
        continue
    seen.add(call["kir"])
    m = kiln.Module(open(keep + "/" + call["kir"]).read(), call["kir"])
    fields = {{}}
    for f, v in call["values"].items():
        if "before" in v:
            a = values.load(v["before"])
            want = NUMPY_DTYPES.get(m.fields[f][0])
            fields[f] = a if want is None or a.dtype == want else a.astype(want)
        else:
            fields[f] = np.zeros(m.fields[f][1], dtype=NUMPY_DTYPES.get(m.fields[f][0], np.float64))
    args = {{}}
    for n, a in call["args"].items():
        if a["kind"] == "scalar":
            args[kir_name(n)] = a["value"]
        elif a["kind"] == "struct":
            args.update((kir_name(n) + "." + str(i), x) for i, x in enumerate(a["members"]))
    try:
        s = m.run(call["kernel"], args=args, fields=fields, cache_dir={str(cache)!r}, engine="jit", threads=2, denormals="flush")
    except Exception as e:
        print("skipped", call["kernel"], e, file=sys.stderr)
        continue
    for k in total:
        total[k] += s.get(k, 0) or 0
print(json.dumps(total))
"""
    r = subprocess.run([PY, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0:
        raise SystemExit(f"bench-genesis: compiling the kernels kept in {keep} failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def scene(path: Path, work: Path) -> dict[str, object]:
    caches = work / f"{path.stem}-caches"
    env = dict(os.environ, XDG_CACHE_HOME=str(caches), QD_OFFLINE_CACHE_FILE_PATH=str(caches / "qdcache"))
    cold, _, out = timed([PY, str(path)], env)
    warm, plain_rss, _ = timed([PY, str(path)], env)
    keep, kcache = work / f"{path.stem}-keep", work / f"{path.stem}-kiln-cache"
    benv = dict(env, KILN_QUADRANTS_PYTHON=PY)
    bridge, bridge_rss, report = timed([BRIDGE, "run", "--keep", str(keep), "--cache-dir", str(kcache), str(path)], benv)
    m = SUMMARY_RE.search(report)
    if m is None:
        raise SystemExit(f"bench-genesis: no summary from the bridge on {path.name}:\n{report[-3000:]}")
    fresh = work / f"{path.stem}-compile-cache"
    kiln_cold, kiln_warm = compile_times(keep, fresh), compile_times(keep, fresh)
    return {
        "scene": path.stem, "kernels": int(m[1]), "agree": int(m[2]), "differ": int(m[3]), "not_imported": int(m[4]),
        "raised": int(m[5] or 0), "plain_cold_s": round(cold, 2), "plain_warm_s": round(warm, 2),
        "quadrants_compile_s": round(cold - warm, 2), "bridge_s": round(bridge, 2), "bridge_over_cold": round(bridge / cold, 2),
        "kept_mb": round(du(keep) / 2**20, 1), "plain_peak_mb": round(plain_rss / 1024, 1), "bridge_peak_mb": round(bridge_rss / 1024, 1),
        "kiln_tasks": kiln_cold["tasks"],
        "kiln_cold_ms": round(kiln_cold["key_ms"] + kiln_cold["compile_ms"] + kiln_cold["load_ms"], 1),
        "kiln_warm_ms": round(kiln_warm["key_ms"] + kiln_warm["compile_ms"] + kiln_warm["load_ms"], 1),
        "kiln_warm_misses": kiln_warm["misses"],
        "refusals": "; ".join(f"{n}x {w}" for w, n in refusals(report).most_common()),
        "date": time.strftime("%Y-%m-%d"), "load": f"{os.getloadavg()[0]:.1f}",
        "command": "KILN_BIN_DIR=DIR target/genesis-venv/bin/python scripts/bench-genesis.py",
        "_report": report,
    }


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "perf" / "results" / "genesis.csv"
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-genesis.") as d:
        for path in SCENES:
            row = scene(path, Path(d))
            print(row.pop("_report"))
            rows.append(row)
            print({k: v for k, v in row.items() if k not in ("command", "date")}, flush=True)
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

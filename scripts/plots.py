#!/usr/bin/env python3
"""The plots of docs/performance.md, drawn from the recorded results
(`make plots`; the Makefile installs matplotlib into the Quadrants venv).

    scripts/plots.py [RESULTS_DIR [OUT_DIR]]   (default docs/perf/results, docs/perf)

Reads the CSV files of RESULTS_DIR (one row a figure measured by a
benchmark script, with its date, its section of docs/performance.md and
the command that measured it) and writes one SVG per plot to OUT_DIR:

  scaling-growth.svg        growth per doubling of the input, the largest
                            stages of each dimension (scaling-growth.csv)
  scaling-instructions.svg  the stages over 2.3x by the clock, counted in
                            instructions (scaling-instructions.csv)
  quadrants.svg             Kiln and Quadrants, each kernel's first call cold
                            and warm, and per call (quadrants-side-by-side.csv)
  steady-state.svg          Kiln against C and Quadrants per call (steady.csv)
  warm-start.svg            whole kiln-run processes: --version, warm, cold
                            (warm-start.csv)
  fleet.svg                 fleets of 8 cold processes, remote-warm, on two
                            file systems (fleet.csv)
  remote.svg                the remote tier's phases, and remote-warm on two
                            file systems (remote.csv)

Nothing is measured here: every number drawn is a row of a CSV file. The
output is deterministic (a fixed hash salt, no date), so re-running it
without a change to the results rewrites the same bytes.
"""

import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "perf" / "results"
OUT = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "docs" / "perf"

plt.rcParams.update(
    {
        "svg.hashsalt": "kiln-performance",
        "svg.fonttype": "none",
        "font.family": "DejaVu Sans",
        "font.size": 9,
        "axes.titlesize": 10,
        "figure.titlesize": 11,
        "axes.grid": True,
        "grid.color": "#dddddd",
        "grid.linewidth": 0.6,
        "axes.axisbelow": True,
        "legend.fontsize": 8,
        "legend.framealpha": 0.95,
    }
)

KILN, QUADRANTS, C = "#c0392b", "#2471a3", "#7d8c8d"
TARGET = "#b9770e"


def rows(name: str) -> list[dict[str, str]]:
    with open(RESULTS / name, newline="") as f:
        return list(csv.DictReader(f))


def save(fig, name: str) -> None:
    fig.savefig(OUT / name, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)
    print(f"plots: wrote {(OUT / name).relative_to(ROOT) if OUT.is_relative_to(ROOT) else OUT / name}")


def plain(x: float, _pos: int = 0) -> str:
    """A log axis's tick as a plain number: 0.01, 0.5, 3, 200."""
    return f"{x:g}"


def footnote(fig, text: str, y: float = -0.01) -> None:
    fig.text(0.0, y, text, ha="left", va="top", fontsize=7.5, color="#555555")


STAGE_STYLE = {
    "parse": ("o", "#1f77b4"),
    "verify": ("s", "#ff7f0e"),
    "offload": ("D", "#2ca02c"),
    "dce": ("v", "#d62728"),
    "split": ("^", "#9467bd"),
    "print": ("<", "#8c564b"),
    "key": ("P", "#e377c2"),
    "kiln-opt": ("X", "#7f7f7f"),
    "interpreter": ("*", "#bcbd22"),
    "JIT compile at -O0": ("h", "#17becf"),
    "JIT load": ("p", "#393b79"),
    "JIT warm run": ("d", "#000000"),
}

STAGE_LABEL = {
    "parse": "parse (kiln-opt's clock)",
    "verify": "verify (kiln-opt's clock)",
    "offload": "offload pass (kiln-opt's clock)",
    "dce": "dce pass (kiln-opt's clock)",
    "split": "split-tasks pass (kiln-opt's clock)",
    "print": "print (kiln-opt's clock)",
    "key": "kiln-key process (CPU)",
    "kiln-opt": "kiln-opt process (CPU)",
    "interpreter": "interpreter, kiln-run process (CPU)",
    "JIT compile at -O0": "JIT compile at -O0 (--stats)",
    "JIT load": "JIT load (--stats)",
    "JIT warm run": "JIT warm run, kiln-run process (CPU)",
}


def scaling_growth() -> None:
    data = [r for r in rows("scaling-growth.csv") if r["round"] == "fourth"]
    dims: list[str] = []
    for r in data:
        if r["dimension"] not in dims:
            dims.append(r["dimension"])
    fig, ax = plt.subplots(figsize=(8.6, 5.2))
    ax.axvspan(1.0, 2.3, color="#e8f6e8", zorder=0)
    seen = set()
    for y, dim in enumerate(dims):
        here = [r for r in data if r["dimension"] == dim]
        for k, r in enumerate(here):
            marker, colour = STAGE_STYLE[r["stage"]]
            label = STAGE_LABEL[r["stage"]] if r["stage"] not in seen else None
            seen.add(r["stage"])
            ax.plot(float(r["growth_per_doubling"]), y + (k - 1) * 0.18, marker=marker, color=colour, ms=7, ls="none", label=label)
    labels = []
    for d in dims:
        r = next(r for r in data if r["dimension"] == d)
        labels.append(f"{d} ({int(r['n_first']):,} … {int(r['n_last']):,})")
    ax.set_yticks(range(len(dims)), labels)
    ax.set_ylim(len(dims) - 0.5, -0.5)
    ax.set_xlim(1.5, 5.0)
    ax.set_xlabel("growth of the stage's time per doubling of n (geometric mean of t(2n)/t(n) over n … 8n)")
    ax.set_ylabel("input dimension (n … 8n)")
    r0 = data[0]
    ax.set_title(f"Cost per input doubling: the three stages that grew most in each dimension\nrelease build, {r0['date']}, load {r0['load']}: {r0['command']}")
    handles, names = ax.get_legend_handles_labels()
    order = sorted(range(len(names)), key=lambda i: list(STAGE_LABEL.values()).index(names[i]))
    handles, names = [handles[i] for i in order], [names[i] for i in order]
    for x, style, colour, text in (
        (2.0, "--", "#555555", "linear: 2× per doubling"),
        (2.3, ":", TARGET, "target: at most 2.3×"),
        (4.0, "-.", "#555555", "quadratic: 4× per doubling"),
    ):
        handles.append(ax.axvline(x, color=colour, ls=style, lw=1.5 if x == 2.3 else 1))
        names.append(text)
    ax.legend(handles, names, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="stage (how it is timed)", title_fontsize=8)
    footnote(
        fig,
        "Green: within the 2.3× target. launches runs n statements n times (n² work by construction: 3.03 per doubling of n is 1.74 per\n"
        "doubling of the work). The stages over 2.3× inside kiln-opt take a few to a few tens of milliseconds; counted in instructions each is\n"
        "linear (scaling-instructions.svg). Source: docs/perf/results/scaling-growth.csv (round = fourth).",
    )
    save(fig, "scaling-growth.svg")


def scaling_instructions() -> None:
    data = rows("scaling-instructions.csv")
    clock = {(r["stage"], r["dimension"]): float(r["growth_per_doubling"]) for r in rows("scaling-growth.csv") if r["round"] == "fifth"}
    series: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for r in data:
        series.setdefault((r["stage"], r["dimension"]), []).append((int(r["n"]), float(r["instructions_millions"])))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.8), gridspec_kw={"width_ratios": [1.1, 1], "wspace": 0.55})
    palette = plt.get_cmap("tab10").colors
    for k, ((stage, dim), pts) in enumerate(series.items()):
        n0 = pts[0][0]
        marker, colour = STAGE_STYLE[stage][0], palette[k % len(palette)]
        left.plot([n / n0 for n, _ in pts], [v for _, v in pts], marker=marker, color=colour, lw=1.2, label=f"{stage}, {dim} (n = {n0:,})")
    left.set_xscale("log", base=2)
    left.set_yscale("log")
    left.set_xticks([1, 2, 4, 8], ["n", "2n", "4n", "8n"])
    left.yaxis.set_major_formatter(FuncFormatter(plain))
    left.yaxis.set_minor_formatter(NullFormatter())
    left.set_xlabel("input size (log₂ scale)")
    left.set_ylabel("instructions executed in the stage, millions (log scale)")
    left.set_title("Instructions per stage: parallel lines, slope 1 = linear")
    left.set_ylim(7, 12000)
    left.legend(loc="upper left", fontsize=7, ncol=2)
    names = [f"{s}, {d}" for s, d in series]
    y = range(len(series))
    for i, ((stage, dim), pts) in enumerate(series.items()):
        work = (pts[-1][1] / pts[0][1]) ** (1 / 3)
        by_clock = clock[(stage, dim)]
        right.plot([work, by_clock], [i, i], color="#aaaaaa", lw=1.5, zorder=1)
        right.plot(work, i, "o", color=QUADRANTS, ms=7, label="in instructions (callgrind)" if i == 0 else None, zorder=2)
        right.plot(by_clock, i, "s", color=KILN, ms=7, label="by the clock (--time-passes)" if i == 0 else None, zorder=2)
    right.axvline(2.0, color="#555555", ls="--", lw=1)
    right.axvline(2.3, color=TARGET, ls=":", lw=1.5, label="target 2.3×")
    right.set_yticks(list(y), names)
    right.set_ylim(len(series) - 0.5, -0.5)
    right.set_xlim(1.8, 2.8)
    right.set_xlabel("growth per doubling; in instructions: (count at 8n / count at n)^(1/3)")
    right.set_title("The same stages, growth per doubling")
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, fontsize=7.5)
    r0 = data[0]
    fig.suptitle(f"The stages over 2.3× by the clock are linear in work (callgrind, release build, {r0['date']})", y=1.02)
    footnote(
        fig,
        "Clock figures: the fifth round's whole benchmark (REPEAT=3 SCALE=4 scripts/bench-scale.sh, load about 2). Instructions: valgrind's\n"
        "callgrind of release kiln-opt --passes=…, only the stage collected. Their time per instruction grows as their tables outgrow the caches.\n"
        "Source: docs/perf/results/scaling-instructions.csv and scaling-growth.csv (round = fifth).",
        y=-0.1,
    )
    save(fig, "scaling-instructions.svg")


def quadrants() -> None:
    data = rows("quadrants-side-by-side.csv")
    kernels: list[tuple[str, str]] = []
    for r in data:
        if (r["program"], r["kernel"]) not in kernels:
            kernels.append((r["program"], r["kernel"]))
    value = {(r["program"], r["kernel"], r["system"], r["case"]): float(r["value"]) for r in data}
    fig, axes = plt.subplots(1, 3, figsize=(11, 6.4), sharey=True)
    ticks = {"cold": [20, 30, 50, 80], "warm": [3, 5, 10, 20, 50], "per call": [0.005, 0.01, 0.02, 0.05, 0.1, 0.2]}
    titles = {
        "cold": "cold: first call, empty cache",
        "warm": "warm: first call, cache filled",
        "per call": "steady state: per call, once ready",
    }
    for ax, case in zip(axes, ("cold", "warm", "per call"), strict=True):
        for i, (p, k) in enumerate(kernels):
            q, kiln = value[(p, k, "Quadrants", case)], value[(p, k, "Kiln", case)]
            if kiln > 0:
                ax.plot([kiln, q], [i, i], color="#bbbbbb", lw=1.2, zorder=1)
                ax.plot(kiln, i, "o", color=KILN, ms=5.5, zorder=2, label="Kiln (whole kiln-run process)" if i == 0 else None)
            else:
                ax.annotate("Kiln ≈0", (q, i), xytext=(-38, -3), textcoords="offset points", fontsize=7, color=KILN)
            ax.plot(q, i, "s", color=QUADRANTS, ms=5, zorder=2, label="Quadrants 1.3.3 (in-process)" if i == 0 else None)
        ax.set_xscale("log")
        ax.set_xticks(ticks[case])
        ax.xaxis.set_major_formatter(FuncFormatter(plain))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(titles[case])
        ax.set_xlabel("ms (log scale)")
    axes[0].set_yticks(range(len(kernels)), [f"{p} / {k}" for p, k in kernels])
    axes[0].set_ylim(len(kernels) - 0.5, -0.5)
    axes[0].set_ylabel("program / kernel (testdata/quadrants/)")
    axes[0].legend(loc="lower left", fontsize=7)
    r0 = data[0]
    fig.suptitle(
        f"Kiln and Quadrants 1.3.3 side by side: 23 kernels, each kernel's first call and the steady state\n"
        f"{r0['date']}, load {r0['load']}, median of 5 processes: {r0['command']}",
        y=1.0,
    )
    footnote(
        fig,
        "Kiln's cold and warm figures are whole processes (start, parse, key, compile in a kiln-compile process or load, launch, exit); Quadrants'\n"
        "are its first call inside a process that has already spent about a second on `import quadrants` and qd.init, not counted. Per call: Kiln\n"
        "(t(1 + 50 calls) − t(1 call)) / 50; Quadrants the median of 5 calls. Source: docs/perf/results/quadrants-side-by-side.csv.",
    )
    save(fig, "quadrants.svg")


def steady_state() -> None:
    data = [r for r in rows("steady.csv") if r["unit"] == "ratio of ms per call"]
    fig, ax = plt.subplots(figsize=(8.6, 3.6))
    for i, r in enumerate(data):
        med, lo, hi = float(r["value"]), float(r["low"]), float(r["high"])
        op, tgt = r["target"].split()
        t = float(tgt)
        good = (0.2, t) if op == "<=" else (t, 20)
        ax.fill_betweenx([i - 0.38, i + 0.38], *good, color="#e8f6e8", zorder=0)
        ax.plot([t, t], [i - 0.38, i + 0.38], color=TARGET, lw=2, zorder=1)
        ax.annotate(f"target {'≤' if op == '<=' else '≥'} {tgt}", (t, i - 0.38), xytext=(3, 1), textcoords="offset points", fontsize=7, color=TARGET)
        colour = KILN if r["figure"].startswith("Kiln") else QUADRANTS
        ax.plot([lo, hi], [i, i], color=colour, lw=2, zorder=2)
        ax.plot(med, i, "o", color=colour, ms=8, zorder=3)
        ax.annotate(f"{med:g}  ({lo:g}–{hi:g})", (hi, i), xytext=(6, -3), textcoords="offset points", fontsize=7.5)
    ax.set_xscale("log")
    ax.set_xlim(0.3, 15)
    ax.xaxis.set_major_formatter(FuncFormatter(plain))
    ax.set_xticks([0.5, 1, 2, 5, 10])
    ax.set_yticks(range(len(data)), [r["figure"] for r in data])
    ax.set_ylim(len(data) - 0.5, -0.6)
    ax.axvline(1.0, color="#555555", lw=0.8)
    ax.set_xlabel("ratio of time per call (log scale): dot the median of 9 runs, bar their range")
    r0 = data[0]
    ax.set_title(
        "Steady state per call: Kiln against C (gcc -O3 -march=native) and Quadrants 1.3.3\n"
        f"eight-loop kernel over 1M f32 and saxpy over 16M f32, 2 threads, runs {r0['run']} ({r0['date']}, load {r0['load']})"
    )
    footnote(
        fig,
        "Green: the side of the target that meets it. Red, Kiln / C: below 1 Kiln is faster. Blue, Quadrants / Kiln: above 1 Kiln is faster.\n"
        f"Command: {r0['command']}. Source: docs/perf/results/steady.csv.",
    )
    save(fig, "steady-state.svg")


def warm_start() -> None:
    data = rows("warm-start.csv")
    groups = ["--version", "warm ten_tasks.kir (every task a hit)", "cold ten_tasks.kir (empty cache)"]
    builds = [b for b in dict.fromkeys(r["build"] for r in data) if not b.startswith("kiln-opt")]
    colours = {builds[0]: "#95a5a6", builds[1]: QUADRANTS, builds[2]: KILN}
    fig, ax = plt.subplots(figsize=(8.6, 4.2))
    width = 0.26
    for g, group in enumerate(groups):
        for b, build in enumerate(builds):
            r = next(r for r in data if r["build"] == build and r["command_measured"] == group)
            x = g + (b - 1) * width
            med, q1, q3, cpu = (float(r[k]) for k in ("wall_median_ms", "wall_q1_ms", "wall_q3_ms", "cpu_mean_ms"))
            ax.bar(x, med, width * 0.92, color=colours[build], label=build if g == 0 else None)
            ax.errorbar(x, med, yerr=[[med - q1], [q3 - med]], color="black", lw=1, capsize=2)
            ax.plot(x, cpu, "_", color="black", ms=14, mew=2, label="CPU, user + system (mean)" if g == 0 and b == 0 else None)
            ax.annotate(f"{med:g}", (x, q3), xytext=(0, 2), textcoords="offset points", ha="center", fontsize=7)
    floor = next(r for r in data if r["build"].startswith("kiln-opt"))
    ax.plot(
        [0.6, 1.4],
        [float(floor["wall_median_ms"])] * 2,
        color="#27ae60",
        lw=2,
        ls="--",
        label=f"kiln-opt on the same file, no LLVM: {floor['wall_median_ms']} ms",
    )
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(plain))
    ax.set_xticks(range(len(groups)), ["kiln-run --version", "warm: every task a hit", "cold: empty cache"])
    ax.set_ylabel("ms per process (log scale): wall median, bar q1–q3")
    r0 = data[0]
    ax.set_title(f"Warm start: whole kiln-run processes on testdata/ten_tasks.kir\n{r0['machine']}, {r0['date']}, load {r0['load']}")
    ax.legend(loc="upper left", fontsize=7)
    footnote(fig, f"hyperfine, 150 runs (--version, warm) and 10 (cold) per build. Command: {r0['command']}.\nSource: docs/perf/results/warm-start.csv.")
    save(fig, "warm-start.svg")


def fleet() -> None:
    data = rows("fleet.csv")
    ratios = [r for r in data if r["unit"] == "ratio"]
    figures = list(dict.fromkeys(r["figure"] for r in ratios))
    short = {
        figures[0]: "8 processes,\none cache:\nslowest / lone",
        figures[1]: "8 machines,\none Redis:\nslowest / lone",
        figures[2]: "remote-warm,\nempty cache /\nlocal-warm",
        figures[3]: "remote-warm, no\ncache dir yet /\nlocal-warm",
    }
    systems = list(dict.fromkeys(r["filesystem"] for r in ratios))
    colours = {s: (QUADRANTS if s.startswith("journalled") else KILN) for s in systems}
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.6), gridspec_kw={"width_ratios": [2.3, 1]})
    for f, figure in enumerate(figures):
        tgt = float(next(r for r in ratios if r["figure"] == figure)["target"].split()[1])
        left.plot([f - 0.4, f + 0.4], [tgt, tgt], color=TARGET, lw=2, label="target" if f == 0 else None)
        for s, system in enumerate(systems):
            pts = [float(r["value"]) for r in ratios if r["figure"] == figure and r["filesystem"] == system]
            xs = [f + (s - 0.5) * 0.36 + (k - (len(pts) - 1) / 2) * 0.04 for k in range(len(pts))]
            left.plot(xs, pts, "o" if s == 0 else "s", color=colours[system], ms=5.5, ls="none", label=f"{system}: one point a run" if f == 0 else None)
    left.set_xticks(range(len(figures)), [short[f] for f in figures])
    left.set_ylabel("ratio (median of the run's repetitions)")
    left.set_ylim(1.0, 5.0)
    left.set_xlim(-0.5, len(figures) - 0.5)
    left.legend(loc="upper left", fontsize=7.5)
    r0 = ratios[0]
    left.set_title(f"8 cold processes or machines, and remote-warm starts\n9 runs alternating two file systems, {r0['date']}, load {r0['load'].split()[0]}–7")
    compiles = [r for r in data if r["unit"] == "compiles"]
    with_sf = next(r for r in compiles if r["value"])
    without = next(r for r in compiles if not r["value"])
    right.bar(0, float(with_sf["value"]), 0.6, color=KILN, label="single-flight (every repetition)")
    lo, hi = float(without["low"]), float(without["high"])
    right.bar(1, hi - lo, 0.6, bottom=lo, color="#95a5a6", label="KILN_COMPILE_WAIT=1ms: no waiting (range)")
    right.axhline(10, color="#555555", ls="--", lw=1)
    right.axhline(12, color=TARGET, ls=":", lw=1.5, label="target: at most 12")
    right.text(0, float(with_sf["value"]) + 1, with_sf["value"], ha="center", fontsize=8)
    right.text(1, hi + 1, f"{lo:g}–{hi:g}", ha="center", fontsize=8)
    right.set_xticks([0, 1], ["with single-flight", "without waiting"])
    right.set_ylim(0, 55)
    right.set_ylabel("task compiles in a fleet of 8 (10 tasks)")
    right.set_title("Compiles of a fleet of 8\n(one cache, or one Redis)")
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), fontsize=7)
    footnote(
        fig,
        "testdata/ten_tasks.kir, release build of 6f017ab, whole kiln-run processes. The journalled ext4 is a loop-mounted image on the same disk;\n"
        "this disk is ext4 without a journal, where each new inode costs more the more was deleted nearby in the last minutes.\n"
        f"Command: {r0['command']}.\nSource: docs/perf/results/fleet.csv.",
        y=-0.1,
    )
    save(fig, "fleet.svg")


def remote() -> None:
    data = rows("remote.csv")
    tier = [r for r in data if r["benchmark"] == "bench-remote" and r["unit"] == "ms" and r["measured"].startswith("kernel requested")]
    phases = list(dict.fromkeys(r["case"] for r in tier))
    fig, (left, right) = plt.subplots(1, 2, figsize=(12.5, 4.4), gridspec_kw={"width_ratios": [1.1, 1.2]})
    for i, phase in enumerate(phases):
        wall = float(next(r["value"] for r in tier if r["case"] == phase and "wall" in r["measured"]))
        cpu = float(next(r["value"] for r in tier if r["case"] == phase and "CPU" in r["measured"]))
        left.barh(i - 0.18, wall, 0.34, color=KILN, label="wall" if i == 0 else None)
        left.barh(i + 0.18, cpu, 0.34, color="#e6b0aa", label="CPU, every thread" if i == 0 else None)
        left.annotate(f"{wall:g}", (wall, i - 0.18), xytext=(3, -3), textcoords="offset points", fontsize=7)
    left.set_xscale("log")
    left.xaxis.set_major_formatter(FuncFormatter(plain))
    left.set_yticks(range(len(phases)), phases)
    left.set_ylim(len(phases) - 0.5, -0.5)
    left.set_xlabel("ms from kernel requested to ready (log scale), median of 15 processes")
    t0 = tier[0]
    left.set_title(f"Remote tier on loopback, ten_tasks.kir ({t0['date']}, load {t0['load']})\n{t0['command']}")
    left.legend(loc="center right", fontsize=7)
    fs = [r for r in data if r["benchmark"] == "bench-remote-fs"]
    cases = list(dict.fromkeys(r["case"] for r in fs))
    columns = list(dict.fromkeys((r["filesystem"], r["run"]) for r in fs))
    width = 0.2
    for c, (system, run) in enumerate(columns):
        journalled = system.startswith("/mnt/j")
        colour = (QUADRANTS if journalled else KILN) if run == "1st" else ("#7fb3d5" if journalled else "#e6b0aa")
        for i, case in enumerate(cases):
            r = next(r for r in fs if r["case"] == case and r["filesystem"] == system and r["run"] == run)
            x, v = i + (c - 1.5) * width, float(r["value"])
            right.bar(x, v, width * 0.92, color=colour, label=f"{system}, {run} run" if i == 0 else None)
            right.text(x, v + 0.1, f"{r['ratio']}×", ha="center", va="bottom", fontsize=6, rotation=90)
    names = ["local-warm", "remote-warm,\nempty cache", "remote-warm,\nyoung cache", "young cache,\nread-only\n(no writes)"]
    right.set_xticks(range(len(cases)), names, fontsize=8)
    right.set_ylabel("ms per whole kiln-run process (median of 40)")
    right.set_ylim(0, 14)
    f0 = fs[0]
    right.set_title(f"Remote-warm on two file systems ({f0['date']}, load {f0['load']})\n{f0['command']}")
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=7)
    footnote(
        fig,
        "Left: crates/kiln-jit/examples/bench-percache.rs in fresh processes (the fetched records written after ready; 'at once' is the old way). Right: the local\n"
        "copies of the fetched records are what costs: read-only (no writes) is 1.0–1.15× local-warm on both; above each bar, its ratio to\n"
        "local-warm. Source: docs/perf/results/remote.csv.",
        y=-0.12,
    )
    save(fig, "remote.svg")


# The three designs of a fetched kernel's local copies (issue 44, item 13):
# the benchmark's name in remote.csv and how a row of that design is told.
REMOTE_FS_DESIGNS = [
    ("one file a record\n(2026-12-04)", "bench-remote-fs", lambda case: True),
    ("packs, sixteen counter\nfiles (12-05 morning)", "bench-remote-fs-packs", lambda case: case.endswith(", packs")),
    ("packs and the\nsizes file (12-05)", "bench-remote-fs-sizes", lambda case: case.endswith(", sizes file")),
]


def remote_fs() -> None:
    """Remote-warm / local-warm per run, on both file systems, for each design."""
    data = rows("remote.csv")
    systems = ["/work (ext4 without a journal)", "/mnt/j (journalled ext4, loop-mounted)"]
    fig, axes = plt.subplots(1, 2, figsize=(12.5, 4.2), sharey=True)
    for ax, system in zip(axes, systems):
        for d, (_, bench, ours) in enumerate(REMOTE_FS_DESIGNS):
            for k, (cache, colour) in enumerate([("empty", KILN), ("young", QUADRANTS)]):
                ratios = [
                    float(r["ratio"])
                    for r in data
                    if r["benchmark"] == bench and r["filesystem"] == system and ours(r["case"])
                    and r["case"].startswith(f"remote-warm, {cache}") and "read-only" not in r["case"]
                ]
                x = d + (k - 0.5) * 0.3
                ax.scatter([x] * len(ratios), ratios, color=colour, s=22, label=f"{cache} cache, each run" if d == 0 else None)
        ax.axhline(1.5, color=TARGET, linestyle="--", linewidth=1, label="target: 1.5× local-warm")
        ax.set_xticks(range(len(REMOTE_FS_DESIGNS)), [name for name, _, _ in REMOTE_FS_DESIGNS], fontsize=8)
        ax.set_title(system)
        ax.set_ylim(0.9, 3.1)
    axes[0].set_ylabel("remote-warm / local-warm, whole kiln-run process")
    axes[0].legend(loc="upper right", fontsize=7)
    footnote(
        fig,
        "Each point one run of scripts/bench-remote-fs.sh (median of 40-60 interleaved rounds, ten_tasks.kir, release, loads 0.3-7.7). A fetched kernel's local\n"
        "copies made 38 inodes into an empty cache, then 27 with packs, then 11 with one sizes file (docs/performance.md, 'Remote-warm on two file systems').\n"
        "Source: docs/perf/results/remote.csv.",
        y=-0.06,
    )
    save(fig, "remote-fs.svg")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for plot in (scaling_growth, scaling_instructions, quadrants, steady_state, warm_start, fleet, remote, remote_fs):
        plot()


if __name__ == "__main__":
    main()

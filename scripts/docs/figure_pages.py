"""The drawings of scripts/docs/figures.py: each reads the files of one real run (RUNS/...) and
writes NAME.svg and NAME-dark.svg into the assets folder (svg_chart.py: themes, primitives)."""

from __future__ import annotations

import datetime
import json
import pathlib
import re
from typing import Dict, List

import svg_chart as sc
from svg_chart import SERIES, Axes, Canvas, legend, nice_ticks

WINDOW = re.compile(r"window\s+(\d+)\s+shares \[([^\]]*)\].*?efficiency (\S+)")
PIPE_WINDOW = re.compile(
    r"^window (\d+)\s+split ([\d,]+)\s+stage ms ([\d.,]+)\s+step ms ([\d.]+)\s*(.*)$")
STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z \[hetrun node 0\] (.*)$")
RANK_NAMES = ["rank 0 H100", "rank 1 H100", "rank 2 H100", "rank 3 H100", "rank 4 A100",
              "rank 5 A100"]


def machine_line(runs: pathlib.Path, phases) -> str:
    info = json.loads((runs / "machine.json").read_text())
    loads = [info["load"][p] for p in phases if p in info.get("load", {})]
    load = f", load {min(loads):g}-{max(loads):g}" if loads else ""
    return f"{info['date']}, {info['cores']} CPU cores{load}"


def write(assets: pathlib.Path, name: str, draw) -> None:
    for theme in sc.THEMES:
        canvas = draw(theme)
        suffix = "" if theme is sc.LIGHT else "-dark"
        (assets / f"{name}{suffix}.svg").write_text(canvas.svg())


def balancing_windows(path: pathlib.Path):
    rows = []
    for line in path.read_text().splitlines():
        m = WINDOW.search(line)
        if m:
            eff = None if m.group(3) == "-" else float(m.group(3))
            rows.append((int(m.group(1)), [int(x) for x in m.group(2).split(",")], eff))
    if not rows:
        raise SystemExit(f"figures: no window lines in {path}")
    return rows


def draw_balancing(runs: pathlib.Path, engine: str, title: str,
                   emulation: str = "A100 compute x3.17"):
    tuned = balancing_windows(runs / f"{engine}-tuned.log")
    uniform = balancing_windows(runs / f"{engine}-uniform.log")
    note = machine_line(runs, [f"{engine}-tuned", f"{engine}-uniform"])

    def draw(theme):
        c = Canvas(900, 560, theme, f"{title}: efficiency and shares per window")
        c.text(70, 24, f"{title}: tuned against uniform", size=15, weight="bold")
        c.text(70, 42, f"emulated 4 H100 + 2 A100 ({emulation}); {note}", size=11,
               color=theme.muted)
        last = max(w for w, _, _ in tuned + uniform)
        top = Axes(c, 70, 60, 800, 170, (1, last), (0, 1.05))
        wticks = list(range(1, last + 1)) if last <= 16 else nice_ticks(1, last, 8)
        top.frame("window", "efficiency", wticks, nice_ticks(0, 1.0, 4))
        for rows, color, dash in ((tuned, SERIES[0], None), (uniform, SERIES[1], "5,4")):
            top.series([w for w, _, e in rows], [e for _, _, e in rows], color, dash=dash,
                       dots=True)
        legend(c, 80, 292, [("tuned", SERIES[0]), ("uniform", SERIES[1])],
                  dash_of={"uniform": "5,4"})
        shares = [s for _, s, _ in tuned]
        hi = max(max(s) for s in shares)
        low = Axes(c, 70, 320, 800, 170, (1, last), (0, hi * 1.1))
        low.frame("window", "samples per step (tuned)", wticks,
                  nice_ticks(0, hi * 1.05, 4))
        for r in range(len(shares[0])):
            low.series([w for w, _, _ in tuned], [s[r] for s in shares],
                       SERIES[0] if r < 4 else SERIES[3], dash=None if r % 2 == 0 else "3,3")
        legend(c, 80, 548, [("H100 ranks", SERIES[0]), ("A100 ranks", SERIES[3])])
        return c
    return draw


def one_f_one_b(stage_ms: List[float], micro: int):
    """Blocks (stage, kind, micro-batch, start, end) of a 1F1B schedule whose forward and
    backward of a micro-batch take 1/3 and 2/3 of the stage's measured time per micro-batch."""
    stages = len(stage_ms)
    fwd = [t / 3 for t in stage_ms]
    bwd = [2 * t / 3 for t in stage_ms]
    order = []
    for s in range(stages):
        warm = min(stages - s - 1, micro)
        ops = [("F", i) for i in range(warm)]
        f, b = warm, 0
        while b < micro:
            if f < micro:
                ops.append(("F", f))
                f += 1
            ops.append(("B", b))
            b += 1
        order.append(ops)
    done: Dict[tuple, float] = {}
    free = [0.0] * stages
    pos = [0] * stages
    blocks = []
    while any(pos[s] < len(order[s]) for s in range(stages)):
        for s in range(stages):
            while pos[s] < len(order[s]):
                kind, i = order[s][pos[s]]
                dep = (s - 1, "F", i) if kind == "F" else (s + 1, "B", i)
                if kind == "B" and s == stages - 1:
                    dep = (s, "F", i)
                if (kind == "F" and s == 0) or dep in done:
                    start = max(free[s], done.get(dep, 0.0))
                    end = start + (fwd[s] if kind == "F" else bwd[s])
                    done[(s, kind, i)] = end
                    free[s] = end
                    blocks.append((s, kind, i, start, end))
                    pos[s] += 1
                else:
                    break
    return blocks


def pipeline_windows(path: pathlib.Path):
    rows = []
    for line in path.read_text().splitlines():
        m = PIPE_WINDOW.match(line.strip())
        if m:
            rows.append({"index": int(m.group(1)), "split": [int(x) for x in m.group(2).split(",")],
                         "stage_ms": [float(x) for x in m.group(3).split(",")],
                         "step_ms": float(m.group(4)), "event": m.group(5)})
    if not rows:
        raise SystemExit(f"figures: no pipeline window lines in {path}")
    return rows


def draw_pipeline(runs: pathlib.Path):
    rows = pipeline_windows(runs / "pipeline.log")
    before, after = rows[0], rows[-1]
    micro = 8
    note = machine_line(runs, ["pipeline"])
    sched = [(w, one_f_one_b(w["stage_ms"], micro)) for w in (before, after)]
    span = max(b[4] for _, blocks in sched for b in blocks)

    def draw(theme):
        c = Canvas(900, 420, theme, "Pipeline split before and after the live moves, with 1F1B")
        c.text(70, 24, "A100 stage + H100 stage: the split before and after hetrun moved layers",
               size=15, weight="bold")
        c.text(70, 42, f"scripts/demo_pipeline (34 layers, 8 micro-batches); {note}", size=11,
               color=theme.muted)
        y = 70
        for label, (w, blocks) in zip(("before", "after"), sched):
            split = w["split"]  # layers per stage
            bounds = [sum(split[:s]) for s in range(len(split) + 1)]
            total = bounds[-1]
            c.text(70, y + 14, f"{label} (window {w['index']}): layers", size=12)
            for s in range(len(split)):
                x0 = 230 + 640 * bounds[s] / total
                x1 = 230 + 640 * bounds[s + 1] / total
                c.rect(x0, y, x1 - x0 - 2, 20, SERIES[3] if s == 0 else SERIES[0], opacity=0.85)
                c.text((x0 + x1) / 2, y + 14, f"{bounds[s + 1] - bounds[s]}", size=11,
                       anchor="middle", color="#ffffff", weight="bold")
            ty = y + 34
            for s in range(len(split)):
                c.text(222, ty + s * 22 + 14, f"stage {s} ({'A100' if s == 0 else 'H100'})",
                       size=11, anchor="end", color=theme.muted)
            for s, kind, i, start, end in blocks:
                x0 = 230 + 640 * start / span
                x1 = 230 + 640 * end / span
                color = SERIES[3] if s == 0 else SERIES[0]
                c.rect(x0, ty + s * 22, x1 - x0 - 0.6, 18, color,
                       opacity=0.55 if kind == "F" else 0.95,
                       tip=f"stage {s} {kind}{i} {start:.0f}-{end:.0f} ms")
            c.text(870, ty + 2 * 22 + 12, f"step {w['step_ms']:.0f} ms measured", size=11,
                   anchor="end", color=theme.muted)
            y += 150
        c.text(230, y - 10, f"time, 0-{span:.0f} ms on one scale; light blocks forward, dark "
               "backward", size=11, color=theme.muted)
        c.text(230, y + 6, "(1/3 and 2/3 of each stage's measured time per micro-batch, in "
               "1F1B order)", size=11, color=theme.muted)
        return c
    return draw


def draw_fail_slow(runs: pathlib.Path):
    per_rank = {}
    for path in sorted((runs / "fail-slow").glob("rank_*.json")):
        per_rank[int(path.stem.split("_")[1])] = json.loads(path.read_text())["reports"]
    reports = per_rank[0]
    flagged = {}
    for rank, rows in per_rank.items():
        for r in rows:
            for slow in r["fail_slow"] or []:
                flagged.setdefault(slow, r["window"])
    note = machine_line(runs, ["fail-slow"])
    names = ["rank 0 H100", "rank 1 H100 (2x slower from step 40)", "rank 2 H100", "rank 3 A100"]

    def draw(theme):
        c = Canvas(900, 360, theme, "Fail-slow detection: each rank against its peers, per window")
        c.text(70, 24, "Fail-slow: a rank's time against its peers' median, per window",
               size=15, weight="bold")
        c.text(70, 42, f"3 emulated H100 + 1 A100 (x3), rank 1 slowed 2x from step 40; {note}",
               size=11, color=theme.muted)
        windows = [r["window"] for r in reports]
        ratios = [r["ratio"] for r in reports]
        flat = [x for rr in ratios if rr for x in rr if x is not None]
        hi = max(2.2, max(flat) * 1.05)
        lo = min(0.8, min(flat) * 0.95)
        ax = Axes(c, 70, 60, 800, 220, (min(windows), max(windows)), (lo, hi))
        ax.frame("window", "slowdown ratio", nice_ticks(min(windows), max(windows), 8),
                 nice_ticks(lo, hi, 5))
        ax.canvas.line(ax.x0, ax.py(1.15), ax.x0 + ax.w, ax.py(1.15), SERIES[7], dash="6,4")
        c.text(ax.x0 + ax.w - 4, ax.py(1.15) - 5, "threshold 1.15 (3 windows in a row)", size=11,
               anchor="end", color=theme.muted)
        for rank in range(len(names)):
            ys = [(rr[rank] if rr and rank < len(rr) else None) for rr in ratios]
            ax.series(windows, ys, SERIES[[0, 3, 2, 4][rank]], dots=True)
        for rank, w in flagged.items():
            ax.canvas.line(ax.px(w), ax.y0, ax.px(w), ax.y0 + ax.h, SERIES[3], width=1.5, z=2)
            c.text(ax.px(w) + 4, ax.y0 + 12, f"rank {rank} fail-slow (window {w})", size=11,
                   color=SERIES[3])
        legend(c, 80, 342, [(n, SERIES[[0, 3, 2, 4][i]]) for i, n in enumerate(names)],
               per_row=4)
        return c
    return draw


def draw_memory(runs: pathlib.Path):
    gpus = (runs / "memory-gpus.txt").read_text().strip().split(",")
    log = (runs / "memory.log").read_text()
    m = re.search(r"memory ceiling (\d+) MiB = .*? reserve (\d+) MiB", log)
    if not m:
        raise SystemExit("figures: no memory ceiling line in memory.log")
    ceiling, reserve = int(m.group(1)), int(m.group(2))
    cards = [(g.split(":")[0], int(g.split(":")[2])) for g in gpus]

    def draw(theme):
        c = Canvas(900, 380, theme, "The job-wide memory ceiling across a mixed node")
        c.text(70, 24, "One memory ceiling for the whole job: the smallest usable memory "
               "minus the reserve", size=15, weight="bold")
        c.text(70, 42, "hetrun run --dry-run on a declared node (usable MiB as CUDA reports them)",
               size=11, color=theme.muted)
        hi = max(u for _, u in cards) * 1.1
        ax = Axes(c, 90, 60, 780, 230, (0, len(cards)), (0, hi))
        ax.frame("", "MiB", [], nice_ticks(0, hi, 5))
        for i, (name, usable) in enumerate(cards):
            x = ax.px(i) + 14
            w = ax.px(1) - ax.px(0) - 28
            c.rect(x, ax.py(usable), w, ax.py(ceiling) - ax.py(usable), SERIES[7], opacity=0.35,
                   tip=f"{usable - ceiling} MiB above the ceiling")
            c.rect(x, ax.py(ceiling), w, ax.py(0) - ax.py(ceiling), SERIES[0], opacity=0.9,
                   tip=f"{ceiling} MiB usable by the job")
            c.text(x + w / 2, ax.py(usable) - 6, f"{usable}", size=11, anchor="middle")
            c.text(x + w / 2, ax.y0 + ax.h + 16, f"GPU {i}", size=11, anchor="middle",
                   color=theme.muted)
            c.text(x + w / 2, ax.y0 + ax.h + 30, name, size=10, anchor="middle",
                   color=theme.muted)
        c.line(ax.x0, ax.py(ceiling), ax.x0 + ax.w, ax.py(ceiling), SERIES[3], width=2, z=3)
        c.text(ax.x0 + 8, ax.py(ceiling) - 8, f"job-wide ceiling {ceiling} MiB = smallest usable "
               f"{min(u for _, u in cards)} - reserve {reserve}", size=12, color=SERIES[3],
               weight="bold", z=4)
        legend(c, 100, 362, [("usable under the ceiling", SERIES[0]),
                             ("left unused (the job-wide rule)", SERIES[7])], per_row=2)
        return c
    return draw


PHASES = [  # (label, start pattern, end pattern)
    ("kernel-image check", r"starting \d+ worker", r"kernel images run on every GPU"),
    ("memory ceiling", r"kernel images run on every GPU", r"memory ceiling"),
    ("collective check (store, probes)", r"collective check: \d+ probe", r"collective check passed"),
    ("workers (training)", r"collective check passed", r"every worker succeeded"),
]


def draw_process(runs: pathlib.Path):
    stamps = []
    for line in (runs / "process.log").read_text().splitlines():
        m = STAMP.match(line)
        if m:
            t = datetime.datetime.fromisoformat(m.group(1))
            stamps.append((t, m.group(2)))
    if not stamps:
        raise SystemExit("figures: no timestamped lines in process.log")
    t0 = stamps[0][0]

    def at(pattern, after=0.0):
        for t, text in stamps:
            s = (t - t0).total_seconds()
            if s >= after and re.search(pattern, text):
                return s
        raise SystemExit(f"figures: no line matching {pattern!r} in process.log")
    spans = []
    for label, start, end in PHASES:
        s = at(start)
        spans.append((label, s, at(end, s)))
    starts = [(t - t0).total_seconds() for t, text in stamps if "started rank" in text]
    exits = [(t - t0).total_seconds() for t, text in stamps if "exited with code" in text]
    total = max(e for _, _, e in spans)
    note = machine_line(runs, ["process"])

    def draw(theme):
        c = Canvas(900, 300, theme, "What hetrun run does, in order, on one node")
        c.text(70, 24, "hetrun run, phase by phase (one node, 2 workers, from its log)", size=15,
               weight="bold")
        c.text(70, 42, f"--scan, --check-collectives, the C++ example trainer; {note}", size=11,
               color=theme.muted)
        ax = Axes(c, 260, 60, 610, 34 * len(spans), (0, total * 1.02), (0, len(spans)))
        ax.frame("seconds since hetrun started", "", nice_ticks(0, total, 6), [])
        for i, (label, s, e) in enumerate(spans):
            y = ax.y0 + i * 34 + 6
            c.text(250, y + 15, label, size=12, anchor="end")
            c.rect(ax.px(s), y, max(ax.px(e) - ax.px(s), 2), 22, SERIES[i % len(SERIES)],
                   opacity=0.9, tip=f"{label}: {s:.2f}-{e:.2f} s")
            inside = ax.px(e) > ax.x0 + ax.w - 60  # no room to its right: inside the bar
            c.text(ax.px(e) - 6 if inside else ax.px(e) + 6, y + 15, f"{e - s:.2f} s", size=11,
                   anchor="end" if inside else "start",
                   color="#ffffff" if inside else theme.muted, z=4)
        for s in starts:
            c.line(ax.px(s), ax.y0, ax.px(s), ax.y0 + ax.h, SERIES[2], dash="2,3", z=2)
        for s in exits:
            c.line(ax.px(s), ax.y0, ax.px(s), ax.y0 + ax.h, SERIES[7], dash="2,3", z=2)
        legend(c, 270, 60 + 34 * len(spans) + 58, [("a worker process starts", SERIES[2]),
                                                     ("a worker process exits", SERIES[7])],
               dash_of={"a worker process starts": "2,3", "a worker process exits": "2,3"},
               per_row=2)
        return c
    return draw


FIGURES = {
    "balance-ddp": lambda runs: draw_balancing(runs, "ddp", "Python DDP (train_ddp.py)"),
    "balance-fsdp": lambda runs: draw_balancing(runs, "fsdp", "FSDP2 (train_fsdp.py)"),
    "balance-deepspeed": lambda runs: draw_balancing(
        runs, "deepspeed", "DeepSpeed ZeRO-3 (train_deepspeed.py)",
        "A100 time per sample x3.17"),
    "pipeline-split": draw_pipeline,
    "fail-slow": draw_fail_slow,
    "memory-ceiling": draw_memory,
    "process-model": draw_process,
}


def draw_all(runs: pathlib.Path, assets: pathlib.Path) -> None:
    assets.mkdir(parents=True, exist_ok=True)
    for name, make in FIGURES.items():
        write(assets, name, make(runs))
        print(f"figures: {assets / name}.svg (and -dark)")

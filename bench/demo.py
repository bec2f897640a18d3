"""``usenet-indexer demo`` end to end — sample news server → prefetcher → spool → stream → edge workers →
batches → catalog — against ``bench/index.py``'s indexing rate measured in the same run.

The figure: headers indexed per second per worker process, from the moment the planner planned the
groups' ranges (the first thing the news server is asked for) to the moment the last range was done
(its last batch in the catalog), divided by the ``bench/index.py`` rate of one process (CPU time, the
same indexer on the same kind of postings). Target: at least 0.7.

Where the rest goes is measured from /proc over the same window: CPU seconds of the workers (and of
them, what indexing alone would have cost at the baseline rate), of the demo's own process (the
coordinator: HTTP, prefetcher, stream, batch store, probe; and the and the sample server's process, which serves its
stored blocks as they are), of every other process on the machine (other sessions share these
cores), and the cores' idle time.

    uv run python bench/demo.py            # the demo's sample (~300,000 articles), 1 and 2 workers
    uv run python bench/demo.py --quick    # half of it, 2 workers

The last line printed is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import os
import re
import select
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import index as index_bench
from _common import emit

TICK = os.sysconf("SC_CLK_TCK")


def is_sample_server(pid: int) -> bool:
    try:
        return b"sample-server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of one process (its threads, not its children)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                found.append(int(entry.name))
    return found


def machine_ticks() -> tuple[float, float]:
    """(busy, idle) CPU seconds of the whole machine since boot, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values[:8]) - idle) / TICK, idle / TICK


@dataclass
class Sample:
    at: float
    demo: float
    workers: dict[int, float]
    server: float
    busy: float
    idle: float


@dataclass
class Run:
    workers: int
    samples: list[Sample] = field(default_factory=list)
    output: list[str] = field(default_factory=list)
    seconds: float = 0.0


def run_demo(workers: int, scale: float, folder: Path, batch: int | None = None) -> Run:
    command = [
        sys.executable,
        "-m",
        "usenet_indexer",
        "--data-dir",
        str(folder),
        "demo",
        "--port=0",
        f"--workers={workers}",
        f"--scale={scale}",
        "--exit-when-done",
        "--view=plain",
        *([f"--batch-articles={batch}"] if batch else []),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("USENET_INDEXER_")}
    began = time.monotonic()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    result = Run(workers)
    seen: dict[int, float] = {}
    server_pid: int | None = None
    server = 0.0
    while True:
        ready, _, _ = select.select([process.stdout], [], [], 0.2)
        if ready:
            line = process.stdout.readline()
            if not line:
                break
            result.output.append(line.rstrip())
        own = cpu_seconds(process.pid)
        if own is None:
            continue
        for child in children(process.pid):
            if server_pid is None and is_sample_server(child):
                server_pid = child
            value = cpu_seconds(child)
            if value is None:
                continue
            if child == server_pid:
                server = value
            else:
                seen[child] = value
        busy, idle = machine_ticks()
        result.samples.append(Sample(time.time(), own, dict(seen), server, busy, idle))
    process.wait()
    process.stdout.close()
    result.seconds = time.monotonic() - began
    if process.returncode != 0:
        raise SystemExit("demo failed:\n" + "\n".join(result.output[-30:]))
    return result


def at(samples: list[Sample], when: float) -> Sample:
    """The sample nearest ``when``."""
    return min(samples, key=lambda s: abs(s.at - when))


def window(folder: Path) -> tuple[float, float, float, int, int]:
    """(planned, last range done, last probe done, headers, ranges) from the demo's store."""
    db = sqlite3.connect(folder / "demo" / "usenet-indexer.db")
    try:
        planned, done, ranges = db.execute(
            "SELECT min(created_at), max(done_at), count(*) FROM ranges"
        ).fetchone()
        (headers,) = db.execute("SELECT sum(headers) FROM batch_log").fetchone()
        (probed,) = db.execute("SELECT max(updated_at) FROM probe_queue").fetchone()
    finally:
        db.close()
    return float(planned), float(done), float(probed or done), int(headers), int(ranges)


def measure(workers: int, scale: float, baseline: float, batch: int | None = None) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="uibench-demo") as tmp:
        folder = Path(tmp)
        run = run_demo(workers, scale, folder, batch)
        start, end, probed, headers, ranges = window(folder)
    a, b = at(run.samples, start), at(run.samples, end)
    span = end - start
    worker_cpu = sum(b.workers.get(pid, 0.0) - a.workers.get(pid, 0.0) for pid in b.workers)
    demo_cpu = b.demo - a.demo
    server_cpu = b.server - a.server
    machine_busy, machine_idle = b.busy - a.busy, b.idle - a.idle
    others = max(0.0, machine_busy - worker_cpu - demo_cpu - server_cpu)
    rate = headers / span
    per_worker = rate / workers
    indexing_cpu = headers / baseline
    generated = next((ln for ln in run.output if ln.startswith("sample news server")), "")
    articles = (
        int(re.sub(r"[^\d]", "", generated.split(":")[2].split("articles")[0])) if generated else headers
    )
    cores = os.cpu_count() or 1
    print(f"\n-- demo with {workers} worker{'s' * (workers > 1)}: {articles:,} articles, {ranges} ranges")
    print(
        f"planned → last range done: {span:.2f} s, {headers:,} headers: {rate:,.0f} headers/s, "
        f"{per_worker:,.0f} per worker = {per_worker / baseline:.2f} × bench/index.py"
    )
    print(f"CPU in that window ({cores} cores × {span:.2f} s = {cores * span:.1f} core-seconds):")
    print(
        f"  workers:          {worker_cpu:6.2f} s  (indexing alone at the baseline rate: {indexing_cpu:.2f} s; "
        f"the rest is streaming, inflating, encoding and posting batches)"
    )
    print(
        f"  coordinator:      {demo_cpu:6.2f} s  (the demo's process: prefetch, stream, batch store, probe, HTTP)"
    )
    print(f"  sample server:    {server_cpu:6.2f} s  (overview as stored; PAR2 bodies for the probe)")
    print(f"  other processes:  {others:6.2f} s  (other sessions on this machine)")
    print(f"  idle:             {machine_idle:6.2f} s")
    print(
        f"after it: probes named the last obfuscated release {max(0.0, probed - end):.1f} s later; "
        f"the whole command took {run.seconds:.1f} s (generating the sample, starting up, printing)"
    )
    return {
        "articles": articles,
        "headers": headers,
        "window_s": round(span, 3),
        "headers_per_s": round(rate),
        "headers_per_s_per_worker": round(per_worker),
        "ratio_per_worker": round(per_worker / baseline, 3),
        "worker_cpu_s": round(worker_cpu, 2),
        "worker_index_cpu_s": round(indexing_cpu, 2),
        "coordinator_cpu_s": round(demo_cpu, 2),
        "sample_server_cpu_s": round(server_cpu, 2),
        "other_processes_cpu_s": round(others, 2),
        "idle_s": round(machine_idle, 2),
        "command_s": round(run.seconds, 1),
    }


def baseline_rate(lines: int) -> float:
    """bench/index.py's figure: indexing realistic chunks, CPU time, best of 3."""
    first, last, chunks = index_bench.make_chunks(lines, 10_000)
    times = []
    for _ in range(3):
        seconds, (headers, _) = index_bench.timed(index_bench.index, first, last, chunks, 500_000)
        assert headers == lines
        times.append(seconds)
    return lines / min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="half the sample, 2 workers")
    parser.add_argument("--scale", type=float, default=None, help="sample size relative to the demo's")
    parser.add_argument("--workers", type=int, nargs="*", default=None, help="worker counts to run")
    parser.add_argument("--batch-articles", type=int, default=None, help="the demo's --batch-articles")
    args = parser.parse_args()
    scale = args.scale or (0.5 if args.quick else 1.0)
    counts = args.workers or ([2] if args.quick else [1, 2])
    baseline = baseline_rate(150_000 if args.quick else 300_000)
    print(f"bench/index.py baseline (same run): {baseline:,.0f} lines/s per process (CPU time, best of 3)")
    result: dict[str, object] = {"baseline_lines_per_s": round(baseline), "scale": scale, "quick": args.quick}
    for workers in counts:
        figures = measure(workers, scale, baseline, args.batch_articles)
        result[f"workers_{workers}"] = figures
        result[f"ratio_per_worker_{workers}"] = figures["ratio_per_worker"]
    emit(result)


if __name__ == "__main__":
    main()

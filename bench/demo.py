"""``usenet-indexer demo`` end to end — sample news server → prefetcher → spool → stream → edge workers →
batches → catalog — against ``bench/index.py``'s indexing rate measured in the same run.

The figure (target: at least 0.7): headers indexed per second per worker process, from the first
lease a worker took to the moment the last range was done (its last batch in the catalog), divided by
the baseline, ``bench/index.py``'s rate of one process indexing the same kind of postings (CPU time).
The window from the planner's first plan (the first thing asked of the news server, while the worker
processes are still starting) is printed too, and the whole command's time.

Where the rest goes is measured from /proc over the window: CPU seconds of the workers (and of them,
what indexing alone costs at the baseline rate), of the demo's process (the coordinator: HTTP,
prefetcher, stream, batch store, probe), of the sample server's process, of every other process on the
machine (other sessions share these cores), and idle time. From the CPU figures, the rate per worker
if each process had a core of its own and never waited ("CPU-bound") separates what the code costs from
what waiting and the neighbours cost.

    uv run python bench/demo.py            # the demo's sample (~300,000 articles), 1 and 2 workers
    uv run python bench/demo.py --quick    # half of it, 2 workers

The last line printed is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import os
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
from _common import CORES, children, cpu_seconds, emit, machine_ticks


def is_sample_server(pid: int) -> bool:
    try:
        return b"sample-server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@dataclass
class Sample:
    at: float
    coordinator: float
    workers: dict[int, float]
    server: float
    busy: float
    idle: float


@dataclass
class Run:
    samples: list[Sample] = field(default_factory=list)
    output: list[str] = field(default_factory=list)
    seconds: float = 0.0


def run_demo(workers: int, scale: float, folder: Path, batch: int | None) -> Run:
    """The demo as a user runs it (plain view, ``--exit-when-done``), its processes sampled every 0.2 s."""
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
        "--live-seconds=0",  # everything posted at once: the rate is the pipeline's, not the posting's
        *([f"--batch-articles={batch}"] if batch else []),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("USENET_INDEXER_")}
    began = time.monotonic()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    run = Run()
    workers_seen: dict[int, float] = {}
    server_pid: int | None = None
    server = 0.0
    while True:
        ready, _, _ = select.select([process.stdout], [], [], 0.2)
        if ready:
            line = process.stdout.readline()
            if not line:
                break
            run.output.append(line.rstrip())
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
                workers_seen[child] = value
        busy, idle = machine_ticks()
        run.samples.append(Sample(time.time(), own, dict(workers_seen), server, busy, idle))
    process.wait()
    process.stdout.close()
    run.seconds = time.monotonic() - began
    if process.returncode != 0:
        raise SystemExit("demo failed:\n" + "\n".join(run.output[-30:]))
    return run


def nearest(samples: list[Sample], when: float) -> Sample:
    return min(samples, key=lambda s: abs(s.at - when))


@dataclass(frozen=True)
class Store:
    planned: float  # the first range planned (the planner has read the news server)
    leased: float  # the first lease a worker took
    done: float  # the last range done
    probed: float  # the last probe answered
    headers: int
    ranges: int
    batches: int


def read_store(folder: Path) -> Store:
    db = sqlite3.connect(folder / "demo" / "usenet-indexer.db")
    try:
        planned, done, ranges = db.execute(
            "SELECT min(created_at), max(done_at), count(*) FROM ranges"
        ).fetchone()
        (leased,) = db.execute("SELECT min(granted_at) FROM lease_log").fetchone()
        headers, batches = db.execute("SELECT sum(headers), count(*) FROM batch_log").fetchone()
        (probed,) = db.execute("SELECT max(updated_at) FROM probe_queue").fetchone()
    finally:
        db.close()
    return Store(planned, leased, done, probed or done, int(headers), int(ranges), int(batches))


def measure(workers: int, scale: float, baseline: float, batch: int | None) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="uibench-demo") as tmp:
        run = run_demo(workers, scale, Path(tmp), batch)
        store = read_store(Path(tmp))
    a, b = nearest(run.samples, store.leased), nearest(run.samples, store.done)
    span = store.done - store.leased
    headers = store.headers
    worker_cpu = sum(b.workers.get(pid, 0.0) - a.workers.get(pid, 0.0) for pid in b.workers)
    coordinator_cpu = b.coordinator - a.coordinator
    server_cpu = b.server - a.server
    ours = worker_cpu + coordinator_cpu + server_cpu
    others = max(0.0, (b.busy - a.busy) - ours)
    idle = b.idle - a.idle
    per_worker = headers / span / workers
    from_plan = headers / (store.done - store.planned) / workers
    index_cpu = headers / baseline
    # If each process had a core of its own and nothing waited: the slowest of the workers (each
    # indexing 1/workers of the headers), the coordinator, the sample server, and all of them on
    # this machine's cores.
    capacity = min(
        headers / worker_cpu,
        headers / max(coordinator_cpu, 1e-9) / workers,
        headers / max(server_cpu, 1e-9) / workers,
        CORES * headers / ours / workers,
    )
    us = 1e6 / headers
    print(
        f"\n-- demo, {workers} worker{'s' * (workers > 1)}: {headers:,} headers in {store.ranges} ranges, "
        f"{store.batches} batches"
    )
    print(
        f"first lease → last range done: {span:.2f} s: {headers / span:,.0f} headers/s, {per_worker:,.0f} "
        f"per worker = {per_worker / baseline:.2f} × bench/index.py"
    )
    print(
        f"planned → last range done:     {store.done - store.planned:.2f} s: {from_plan:,.0f} per worker "
        f"= {from_plan / baseline:.2f} × (the workers' start-up included)"
    )
    print(f"CPU over the first window ({CORES} cores × {span:.2f} s = {CORES * span:.1f} core-seconds):")
    print(
        f"  workers         {worker_cpu:6.2f} s  {worker_cpu * us:5.2f} µs/header "
        f"(indexing alone: {index_cpu:.2f} s, {index_cpu * us:.2f} µs; rest: stream, inflate, encode, post)"
    )
    print(
        f"  coordinator     {coordinator_cpu:6.2f} s  {coordinator_cpu * us:5.2f} µs/header "
        "(prefetch, stream, batch store, probe, HTTP, view)"
    )
    print(
        f"  sample server   {server_cpu:6.2f} s  {server_cpu * us:5.2f} µs/header (overview as stored, PAR2)"
    )
    print(f"  other processes {others:6.2f} s  (other sessions on this machine)")
    print(f"  idle            {idle:6.2f} s")
    print(
        f"CPU-bound (a core each, no waiting): {capacity:,.0f} per worker = {capacity / baseline:.2f} × "
        "bench/index.py"
    )
    print(
        f"after the last range: the last probe {max(0.0, store.probed - store.done):.1f} s later; the whole "
        f"command {run.seconds:.1f} s (generating the sample, starting, printing)"
    )
    return {
        "headers": headers,
        "window_s": round(span, 3),
        "headers_per_s_per_worker": round(per_worker),
        "ratio_per_worker": round(per_worker / baseline, 3),
        "ratio_per_worker_from_plan": round(from_plan / baseline, 3),
        "ratio_per_worker_cpu_bound": round(capacity / baseline, 3),
        "worker_us_per_header": round(worker_cpu * us, 2),
        "index_us_per_header": round(index_cpu * us, 2),
        "coordinator_us_per_header": round(coordinator_cpu * us, 2),
        "sample_server_us_per_header": round(server_cpu * us, 2),
        "other_processes_cpu_s": round(others, 2),
        "idle_s": round(idle, 2),
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
        result[f"ratio_per_worker_cpu_bound_{workers}"] = figures["ratio_per_worker_cpu_bound"]
    emit(result)


if __name__ == "__main__":
    main()

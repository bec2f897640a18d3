"""Lease engine throughput: lease → heartbeat × k → batch → finish cycles by concurrent workers.

Prints operations/s and the lease call's p50/p99 for 1, 8 and 32 workers on PostgreSQL and SQLite,
the lease call's p50 with 1,000,000 planned ranges against its p50 with 10,000 (the pick must
not scan planned ranges), and PostgreSQL's CPU per call (its backend's, from /proc, one worker alone):
a heartbeat, and a lease with ten batches and a finish. Workers are threads of one process here, as
in the coordinator, whose node API serves each call from a thread pool.

Targets (PostgreSQL, 32 workers, 2 cores): >= 2,000 operations/s, lease p99 < 25 ms; p50 ratio
1M vs 10k <= 1.5.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import cpu_seconds, emit, percentile, postgres_database, sqlite_database
from usenet_indexer.coordinator.wiring import Services, open_services
from usenet_indexer.settings import Settings

HEARTBEATS = 3
RANGE = 1000
GROUPS = 64


def open_bench(url: str, workers: int) -> Services:
    settings = Settings(
        database_url=url,
        data_dir=Path("/tmp/uibench-data"),
        lease_ttl_seconds=300,
        range_articles=RANGE,
        chunk_articles=RANGE,
        era_articles=RANGE * 1000,
        tail_min_articles=1,
    )
    return open_services(settings, migrate=False, max_connections=workers + 4)


def plan(services: Services, ranges: int) -> None:
    """``ranges`` planned ranges spread over GROUPS groups, inserted in bulk."""
    per_group = max(1, ranges // GROUPS)
    with services.db.transaction() as tx:
        for g in range(GROUPS):
            tx.run(
                "group_insert",
                {
                    "name": f"alt.binaries.bench{g}",
                    "backfill_articles": None,
                    "backfill_days": None,
                    "backfill_since": None,
                    "capture": False,
                },
            )
        if tx.dialect == "postgresql":
            tx.sql(
                "INSERT INTO ranges (group_id, start_id, end_id, next_id, priority, created_at) "
                "SELECT g.id, s * %(r)s, s * %(r)s + %(r)s - 1, s * %(r)s, s / 1000, 0 "
                "FROM groups g, generate_series(1, %(n)s) s",
                {"r": RANGE, "n": per_group},
            )
            tx.sql("ANALYZE ranges")
        else:
            tx.sql(
                "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < :n) "
                "INSERT INTO ranges (group_id, start_id, end_id, next_id, priority, created_at) "
                "SELECT g.id, i * :r, i * :r + :r - 1, i * :r, i / 1000, 0 FROM groups g, s",
                {"r": RANGE, "n": per_group},
            )
            tx.sql("ANALYZE")


def cycles(url: str, workers: int, seconds: float, processes: int) -> tuple[float, list[float]]:
    """``workers`` cycling for ``seconds`` in ``processes`` processes (threads in each); operations/s
    and every lease call's latency (s)."""
    context = multiprocessing.get_context("spawn")
    start_line = context.Barrier(processes + 1)
    stop = context.Event()
    results = context.Queue()
    shares = [workers // processes + (1 if i < workers % processes else 0) for i in range(processes)]
    children = [
        context.Process(target=cycle_process, args=(url, share, i, start_line, stop, results))
        for i, share in enumerate(shares)
    ]
    for child in children:
        child.start()
    start_line.wait()
    began = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    gathered = [results.get(timeout=120) for _ in children]
    elapsed = time.perf_counter() - began
    for child in children:
        child.join()
    errors = [error for _, _, error in gathered if error]
    if errors:
        raise RuntimeError(errors[0])
    return sum(ops for ops, _, _ in gathered) / elapsed, [t for _, times, _ in gathered for t in times]


def cycle_process(url: str, workers: int, index: int, start_line: Any, stop: Any, results: Any) -> None:
    services = open_bench(url, workers)
    nodes = [services.nodes.add(f"bench-{index}-{i}-{time.monotonic_ns()}")[0] for i in range(workers)]
    ops = [0] * workers
    lease_times: list[list[float]] = [[] for _ in range(workers)]
    errors: list[str] = []
    ready = threading.Barrier(workers + 1)

    def work(slot: int) -> None:
        node = nodes[slot]
        ranges = services.ranges
        ready.wait()
        try:
            while not stop.is_set():
                began = time.perf_counter()
                lease = ranges.lease(node)
                lease_times[slot].append(time.perf_counter() - began)
                ops[slot] += 1
                if lease is None:
                    time.sleep(0.001)
                    continue
                for _ in range(HEARTBEATS):
                    ranges.heartbeat(lease.range_id, node, lease.epoch)
                ranges.commit_batch(lease.range_id, node, lease.epoch, lease.next, lease.end, 10)
                ranges.finish(lease.range_id, node, lease.epoch)
                ops[slot] += HEARTBEATS + 2
        except BaseException as error:
            errors.append(f"{type(error).__name__}: {error}")

    threads = [threading.Thread(target=work, args=(slot,), daemon=True) for slot in range(workers)]
    for thread in threads:
        thread.start()
    ready.wait()
    start_line.wait()
    stop.wait()
    for thread in threads:
        thread.join()
    services.close()
    results.put((sum(ops), [t for times in lease_times for t in times], errors[0] if errors else ""))


def lease_p50(url: str, ranges: int, samples: int) -> float:
    services = open_bench(url, 1)
    try:
        plan(services, ranges)
        _, times = cycles_count(services, samples)
        return percentile(times, 50)
    finally:
        services.close()


def cycles_count(services: Services, count: int) -> tuple[int, list[float]]:
    node = services.nodes.add(f"p50-{time.monotonic_ns()}")[0]
    times: list[float] = []
    for _ in range(count):
        began = time.perf_counter()
        lease = services.ranges.lease(node)
        times.append(time.perf_counter() - began)
        assert lease is not None
        services.ranges.commit_batch(lease.range_id, node, lease.epoch, lease.next, lease.end, 1)
        services.ranges.finish(lease.range_id, node, lease.epoch)
    return count, times


def backend_cpu(url: str, heartbeats: int, cycles_run: int) -> tuple[float, float]:
    """PostgreSQL's CPU (ms, its backend's, from /proc) per heartbeat and per cycle of a lease, ten
    batches and a finish, one worker alone on one connection."""
    # One era for all its ranges: at the full size (150 cycles) an era boundary (10,000,000 by default)
    # cut a range of one article, and its ten batches had a step of 0.
    settings = Settings(
        database_url=url,
        data_dir=Path("/tmp/uibench-data"),
        lease_ttl_seconds=300,
        range_articles=100_000,
        era_articles=1_000_000_000,
    )
    services = open_services(settings, migrate=False, max_connections=1)
    try:
        services.groups.add("alt.binaries.cpu")
        services.groups.plan("alt.binaries.cpu", 1, 100_000 * (cycles_run + 2))
        node = services.nodes.add("cpu")[0]
        with services.db.transaction() as tx:
            pid = int(tx.sql("SELECT pg_backend_pid() AS pid")[0]["pid"])
        lease = services.ranges.lease(node)
        assert lease is not None
        for _ in range(200):  # plans cached, the connection warm
            services.ranges.heartbeat(lease.range_id, node, lease.epoch)
        before = cpu_seconds(pid)
        for _ in range(heartbeats):
            services.ranges.heartbeat(lease.range_id, node, lease.epoch)
        after = cpu_seconds(pid)
        assert before is not None and after is not None
        per_heartbeat = (after - before) / heartbeats
        before = cpu_seconds(pid)
        for _ in range(cycles_run):
            lease = services.ranges.lease(node)
            assert lease is not None
            step = (lease.end - lease.start + 1) // 10
            for at in range(lease.next, lease.end + 1, step):
                services.ranges.commit_batch(
                    lease.range_id, node, lease.epoch, at, min(lease.end, at + step - 1), 0
                )
            services.ranges.finish(lease.range_id, node, lease.epoch)
        after = cpu_seconds(pid)
        assert before is not None and after is not None
        return per_heartbeat * 1000, (after - before) / cycles_run * 1000
    finally:
        services.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (seconds, not minutes)")
    args = parser.parse_args()
    seconds = 3.0 if args.quick else 10.0
    big = 100_000 if args.quick else 1_000_000
    samples = 200 if args.quick else 1000
    result: dict[str, float] = {}
    print(f"{'store':10} {'workers':>7} {'ops/s':>9} {'lease p50':>10} {'lease p99':>10}")
    for dialect, database in (("pg", postgres_database), ("sqlite", sqlite_database)):
        for workers in (1, 8, 32):
            with database() as url:
                services = open_bench(url, workers)
                try:
                    plan(services, 20_000)
                finally:
                    services.close()
                # PostgreSQL: one process per 8 workers, as edge workers are separate processes and a
                # busy coordinator runs several; SQLite serializes its writers anyway: one process.
                processes = max(1, workers // 8) if dialect == "pg" else 1
                rate, times = cycles(url, workers, seconds, processes)
            p50, p99 = percentile(times, 50) * 1000, percentile(times, 99) * 1000
            print(f"{dialect:10} {workers:>7} {rate:>9.0f} {p50:>8.2f}ms {p99:>8.2f}ms", flush=True)
            result[f"{dialect}_ops_per_s_{workers}"] = round(rate, 1)
            result[f"{dialect}_lease_p50_ms_{workers}"] = round(p50, 3)
            result[f"{dialect}_lease_p99_ms_{workers}"] = round(p99, 3)
    with postgres_database() as url:
        small = lease_p50(url, 10_000, samples)
    with postgres_database() as url:
        large = lease_p50(url, big, samples)
    ratio = large / small
    print(
        f"pg lease p50: {small * 1000:.2f} ms with 10,000 planned ranges, "
        f"{large * 1000:.2f} ms with {big:,} (ratio {ratio:.2f})"
    )
    result["pg_lease_p50_ms_10k"] = round(small * 1000, 3)
    result[f"pg_lease_p50_ms_{'1m' if big == 1_000_000 else '100k'}"] = round(large * 1000, 3)
    result["pg_lease_p50_ratio_1m_vs_10k"] = round(ratio, 3)
    result["planned_ranges_large"] = big
    with postgres_database() as url:
        heartbeat_ms, cycle_ms = backend_cpu(url, 2_000 if args.quick else 10_000, 30 if args.quick else 150)
    print(
        f"pg backend CPU: {heartbeat_ms:.3f} ms a heartbeat, {cycle_ms:.2f} ms a lease + 10 batches + finish"
    )
    result["pg_cpu_ms_heartbeat"] = round(heartbeat_ms, 4)
    result["pg_cpu_ms_cycle"] = round(cycle_ms, 3)
    emit(result)


if __name__ == "__main__":
    main()

"""Soak: many simulated edge workers speaking the real node API over HTTP to one coordinator on
PostgreSQL, with random stalls past the TTL, kills and restarts; at the end every range is finished,
the lease audit is clean, the coordinator's memory flat, and the p99 of node API calls printed.

A simulated worker does what an edge worker does on the wire — lease, stream the frames, post batches
(real batch bodies, without fragments: indexing is not what is measured here), heartbeat, finish —
without indexing. Workers run as threads in a few processes.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT), str(ROOT.parent)]

from tests.e2e.processes import Coordinator, free_port, settings_env

from _common import emit, percentile, postgres_database
from usenet_indexer.articles import chunk_spans
from usenet_indexer.coordinator.wiring import open_services
from usenet_indexer.edge.client import ApiError, NodeClient
from usenet_indexer.indexing import Batch
from usenet_indexer.leases.audit import audit
from usenet_indexer.leases.errors import LeaseLost
from usenet_indexer.settings import Settings
from usenet_indexer.wire.batch import encode_batch
from usenet_indexer.wire.chunks import deflate_plain
from usenet_indexer.wire.frames import FrameDecoder, FrameType

TTL = 3.0
RANGE_ARTICLES = 4_000
SIZES = {
    "lease_ttl_seconds": TTL,
    "range_articles": RANGE_ARTICLES,
    "chunk_articles": 1_000,
    "era_articles": 1_000_000,
    "stream_keepalive_seconds": 0.5,
}
CHUNK = deflate_plain(b"")  # the stream carries a chunk per span; its content is not indexed here


def simulated_worker(url: str, token: str, seed: int, stop: Any, results: Any) -> None:
    rng = random.Random(seed)
    latencies: list[float] = []
    counts = {"ranges": 0, "stalls": 0, "kills": 0, "lost": 0, "errors": 0}
    errors: list[str] = []
    client = NodeClient(url, token, timeout=60)

    def timed(call: Any, *args: Any) -> Any:
        began = time.perf_counter()
        try:
            return call(*args)
        finally:
            latencies.append(time.perf_counter() - began)

    while not stop.is_set():
        try:
            lease = timed(client.lease)
            if lease is None:
                time.sleep(0.2)
                continue
            decoder = FrameDecoder()
            position = lease.next
            fate = rng.random()
            abandoned = False
            for piece in client.stream(lease.range_id, lease.epoch):
                for frame in decoder.feed(piece):
                    if frame.type is not FrameType.CHUNK:
                        continue
                    if fate < 0.03:  # killed: silent for good, its range taken over after the TTL
                        counts["kills"] += 1
                        abandoned = True
                        break
                    if fate < 0.06:  # stalls past the TTL, then tries to go on: fenced
                        counts["stalls"] += 1
                        time.sleep(TTL * 1.5)
                        fate = 1.0
                    batch = Batch(
                        frame.first if position < frame.first else position,
                        frame.last,
                        0,
                        {},
                        0,
                        0,
                        0,
                        (),
                        (),
                    )
                    body = encode_batch(batch, lease.range_id, lease.epoch)
                    timed(client.batch, lease.range_id, lease.epoch, body)
                    position = frame.last + 1
                    if rng.random() < 0.3:
                        timed(client.call, lease.range_id, lease.epoch, "heartbeat")
                if abandoned:
                    break
            if abandoned:
                client.close()
                client = NodeClient(url, token, timeout=60)  # the restarted worker
                continue
            timed(client.call, lease.range_id, lease.epoch, "finish")
            counts["ranges"] += 1
        except LeaseLost:
            counts["lost"] += 1
        except (ApiError, OSError, ValueError) as error:
            counts["errors"] += 1
            errors.append(f"{type(error).__name__}: {error}")
    client.close()
    results.put((latencies, counts, errors[:5]))


def worker_process(url: str, tokens: list[str], seeds: list[int], stop: Any, results: Any) -> None:
    threads = [
        threading.Thread(target=simulated_worker, args=(url, token, seed, stop, results), daemon=True)
        for token, seed in zip(tokens, seeds, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the short version CI runs")
    parser.add_argument("--workers", type=int)
    parser.add_argument("--seconds", type=float)
    args = parser.parse_args()
    workers = args.workers or (16 if args.quick else 64)
    seconds = args.seconds or (45.0 if args.quick else 600.0)
    processes = max(1, workers // 16)
    ranges_per_group = 40 if args.quick else 400
    groups = 16
    with tempfile.TemporaryDirectory(prefix="uibench-soak") as folder, postgres_database() as url:
        data = Path(folder)
        services = open_services(Settings(database_url=url, data_dir=data, **SIZES), migrate=False)  # type: ignore[arg-type]
        services.rules.ensure_default()
        for g in range(groups):
            name = f"alt.binaries.soak{g}"
            services.groups.add(name)
            services.groups.plan(name, 1, ranges_per_group * RANGE_ARTICLES)
        with services.db.transaction() as tx:
            ranges = tx.sql("SELECT id, start_id, end_id FROM ranges")
        for r in ranges:
            for span in chunk_spans(int(r["start_id"]), int(r["end_id"]), SIZES["chunk_articles"]):  # type: ignore[arg-type]
                services.spool.write(int(r["id"]), span, CHUNK)
        tokens = [services.nodes.add(f"soak-{i}")[1] for i in range(workers)]
        coordinator = Coordinator(settings_env(url, data, **SIZES), free_port(), data / "coordinator.log")
        coordinator.start()
        assert coordinator.process is not None
        context = multiprocessing.get_context("spawn")
        stop = context.Event()
        results = context.Queue()
        share = (workers + processes - 1) // processes
        children = [
            context.Process(
                target=worker_process,
                args=(
                    coordinator.url,
                    tokens[i : i + share],
                    list(range(i, min(i + share, workers))),
                    stop,
                    results,
                ),
            )
            for i in range(0, workers, share)
        ]
        began = time.monotonic()
        for child in children:
            child.start()
        rss: list[tuple[float, int]] = []
        total = len(ranges)
        done = 0
        while time.monotonic() - began < seconds:
            time.sleep(1.0)
            rss.append((time.monotonic() - began, rss_kb(coordinator.process.pid)))
            with services.db.transaction(write=False) as tx:
                done = int(tx.sql("SELECT count(*) AS n FROM ranges WHERE status = 'done'")[0]["n"])
            if done == total:
                break
        # Let what is in flight finish (abandoned ranges are finished or taken over after the TTL).
        deadline = time.monotonic() + max(60.0, TTL * 10)
        while done < total and time.monotonic() < deadline:
            time.sleep(1.0)
            with services.db.transaction(write=False) as tx:
                done = int(tx.sql("SELECT count(*) AS n FROM ranges WHERE status = 'done'")[0]["n"])
        stop.set()
        gathered = [results.get(timeout=120) for _ in range(workers)]
        for child in children:
            child.join(60)
        coordinator.stop()
        report = audit(services.db, ttl=TTL, max_per_group=2)
        services.close()
    latencies = [t for lat, _, _ in gathered for t in lat]
    counts = {
        key: sum(c[key] for _, c, _ in gathered) for key in ("ranges", "stalls", "kills", "lost", "errors")
    }
    samples = [kb for at, kb in rss if at >= min(15.0, seconds / 3)]  # after warm-up
    growth = 100.0 * (samples[-1] - samples[0]) / samples[0] if len(samples) > 1 else 0.0
    result = {
        "workers": workers,
        "seconds": round(time.monotonic() - began, 1),
        "ranges": total,
        "ranges_done": done,
        "errors": counts["errors"] + (0 if done == total else 1),
        "error_samples": [e for _, _, errs in gathered for e in errs][:5],
        "stalls": counts["stalls"],
        "kills": counts["kills"],
        "lost_leases": counts["lost"],
        "audit_ok": report.ok,
        "audit_problems": report.problems[:5],
        "rss_mb_start": round(samples[0] / 1024, 1) if samples else None,
        "rss_mb_end": round(samples[-1] / 1024, 1) if samples else None,
        "rss_growth_pct": round(growth, 1),
        "calls": len(latencies),
        "p50_ms": round(percentile(latencies, 50) * 1000, 2),
        "p99_ms": round(percentile(latencies, 99) * 1000, 2),
    }
    print(
        json.dumps(
            {k: v for k, v in result.items() if k not in ("error_samples", "audit_problems")}, indent=1
        )
    )
    emit(result)


if __name__ == "__main__":
    main()

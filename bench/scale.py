"""Scale: many simulated edge workers (asyncio, real HTTP, one or two processes) against one
coordinator on PostgreSQL, each heartbeating every 10 s and posting a small batch every ~20 s.

Targets (2 cores, the load generator beside the coordinator): >= 50 batches/s and >= 100 heartbeats/s
with p99 < 50 ms for every node API call. Prints the figures per call and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT), str(ROOT.parent)]

import httpx
from tests.e2e.processes import Coordinator, free_port, settings_env

from _common import emit, percentile, postgres_database
from usenet_indexer.coordinator.wiring import open_services
from usenet_indexer.indexing import Batch
from usenet_indexer.settings import Settings
from usenet_indexer.wire.batch import encode_batch

SIZES = {
    "lease_ttl_seconds": 60.0,
    "range_articles": 1_000_000,
    "chunk_articles": 1_000_000,
    "era_articles": 1_000_000_000,
}
HEARTBEAT_SECONDS = 10.0
BATCH_SECONDS = 15.0  # 1,000 workers offer ~67 batches/s: the target (>= 50) with a margin, not exactly it
BATCH_ARTICLES = 1_000


async def worker(
    client: httpx.AsyncClient,
    token: str,
    until: float,
    warm: float,
    timings: dict[str, list[float]],
    rng: random.Random,
) -> None:
    headers = {"Authorization": f"Bearer {token}"}

    async def call(kind: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        began = time.monotonic()
        response = await client.request(method, f"/api/v1/node/{path}", headers=headers, **kwargs)
        if began >= warm:
            timings.setdefault(kind, []).append(time.monotonic() - began)
        if response.status_code >= 400:
            timings.setdefault("errors", []).append(float(response.status_code))
        return response

    await asyncio.sleep(rng.uniform(0, 5))
    leased = await call("lease", "POST", "lease")
    if leased.status_code == 204:  # nothing to lease (all taken, or the group caps reached): no error
        timings.setdefault("no_lease", []).append(0.0)
        return
    if leased.status_code != 200:
        timings.setdefault("errors", []).append(float(leased.status_code))
        return
    lease = leased.json()["range"]
    rid, epoch, position = lease["id"], lease["epoch"], lease["next"]
    next_beat = time.monotonic() + rng.uniform(0, HEARTBEAT_SECONDS)
    next_batch = time.monotonic() + rng.uniform(0, BATCH_SECONDS)
    while time.monotonic() < until:
        now = time.monotonic()
        if now >= next_beat:
            await call("heartbeat", "POST", f"ranges/{rid}/heartbeat", params={"epoch": epoch})
            next_beat += HEARTBEAT_SECONDS
        if now >= next_batch:
            batch = Batch(position, position + BATCH_ARTICLES - 1, 0, {}, 0, 0, 0, (), ())
            body = encode_batch(batch, rid, epoch)
            response = await call(
                "batch", "POST", f"ranges/{rid}/batches", params={"epoch": epoch}, content=body
            )
            if response.status_code == 200:
                position += BATCH_ARTICLES
            next_batch += BATCH_SECONDS
        await asyncio.sleep(max(0.01, min(next_beat, next_batch) - time.monotonic()))


def load_process(url: str, tokens: list[str], seconds: float, warmup: float, seed: int, results: Any) -> None:
    async def run() -> dict[str, list[float]]:
        timings: dict[str, list[float]] = {}

        async def guarded(coroutine: Any) -> None:
            try:
                await coroutine
            except Exception:  # a worker's failure is counted, not a crash of the load generator
                timings.setdefault("errors", []).append(0.0)

        limits = httpx.Limits(max_connections=len(tokens), max_keepalive_connections=len(tokens))
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:
            start = time.monotonic()
            rng = random.Random(seed)
            await asyncio.gather(
                *(
                    worker(
                        client, token, start + seconds, start + warmup, timings, random.Random(rng.random())
                    )
                    for token in tokens
                )
            )
        return timings

    results.put(asyncio.run(run()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workers", type=int)
    parser.add_argument("--seconds", type=float)
    args = parser.parse_args()
    workers = args.workers or (200 if args.quick else 1_000)
    seconds = args.seconds or (40.0 if args.quick else 90.0)
    warmup = 15.0 if args.quick else 25.0
    processes = 1 if workers <= 500 else 2
    with tempfile.TemporaryDirectory(prefix="uibench-scale") as folder, postgres_database() as url:
        data = Path(folder)
        services = open_services(Settings(database_url=url, data_dir=data, **SIZES), migrate=False)  # type: ignore[arg-type]
        services.rules.ensure_default()
        for g in range((workers + 1) // 2):  # two live leases per group at most
            name = f"alt.binaries.scale{g}"
            services.groups.add(name)
            services.groups.plan(name, 1, 1_999_999)  # two ranges of a million articles
        tokens = [services.nodes.add(f"scale-{i}")[1] for i in range(workers)]
        services.close()
        coordinator = Coordinator(settings_env(url, data, **SIZES), free_port(), data / "coordinator.log")
        coordinator.start()
        try:
            context = multiprocessing.get_context("spawn")
            results = context.Queue()
            share = (workers + processes - 1) // processes
            children = [
                context.Process(
                    target=load_process,
                    args=(coordinator.url, tokens[i : i + share], seconds, warmup, i, results),
                )
                for i in range(0, workers, share)
            ]
            for child in children:
                child.start()
            gathered = [results.get(timeout=seconds + 300) for _ in children]
            for child in children:
                child.join()
        finally:
            coordinator.stop()
    timings: dict[str, list[float]] = {}
    for part in gathered:
        for kind, values in part.items():
            timings.setdefault(kind, []).extend(values)
    measured = seconds - warmup
    calls = [t for kind, values in timings.items() if kind not in ("errors", "no_lease") for t in values]
    result: dict[str, Any] = {
        "workers": workers,
        "seconds_measured": measured,
        "batches_per_s": round(len(timings.get("batch", [])) / measured, 1),
        "heartbeats_per_s": round(len(timings.get("heartbeat", [])) / measured, 1),
        "errors": len(timings.get("errors", [])),
        "workers_without_lease": len(timings.get("no_lease", [])),
        # By HTTP status; 0 is a failure without a response (a connection error in the load generator).
        "error_statuses": {str(int(k)): v for k, v in sorted(Counter(timings.get("errors", [])).items())},
        "p50_ms": round(percentile(calls, 50) * 1000, 2),
        "p99_ms": round(percentile(calls, 99) * 1000, 2),
    }
    for kind in ("batch", "heartbeat"):
        values = timings.get(kind, [])
        result[f"{kind}_p99_ms"] = round(percentile(values, 99) * 1000, 2)
        print(
            f"{kind:10} {len(values) / measured:8.1f}/s  p50 {percentile(values, 50) * 1000:7.2f} ms  "
            f"p99 {percentile(values, 99) * 1000:7.2f} ms"
        )
    print(
        f"{workers} workers, {result['errors']} errors {result['error_statuses']}; "
        f"every call p99 {result['p99_ms']} ms"
    )
    emit(result)


if __name__ == "__main__":
    main()

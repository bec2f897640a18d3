"""Streams that wait for chunks hold no thread: 500 of them open, the API still answers (issue 15.3).

45 streams of one node token, waiting for chunks the prefetcher had not spooled, held all 40 threads of
the server: `/healthz` timed out at 30 s and a heartbeat took 20 s.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

from tests.support.live import live_coordinator
from tests.support.store import services_for
from usenet_indexer.leases.ranges import RangeLease

STREAMS = 500
API = "/api/v1/node"


@pytest.mark.slow
def test_500_waiting_streams_leave_the_api_responsive(database_url: str, tmp_path: Path) -> None:
    services = services_for(
        database_url,
        tmp_path,
        stream_max_per_node=STREAMS + 10,
        range_articles=1_000,
        stream_keepalive_seconds=60.0,
    )
    try:
        node, token = services.nodes.add("edge-many")
        for g in range(STREAMS // 2):  # two live leases per group at most
            name = f"alt.binaries.streams{g}"
            services.groups.add(name)
            services.groups.plan(name, 1, 1_999)
        leases = [services.ranges.lease(node) for _ in range(STREAMS)]
        held = [lease for lease in leases if lease is not None]
        assert len(held) == len(leases)
        headers = {"Authorization": f"Bearer {token}"}
        with live_coordinator(services) as url:
            latencies = asyncio.run(measure(url, headers, held))
        print(f"with {STREAMS} streams waiting: healthz {latencies[0]:.3f} s, heartbeat {latencies[1]:.3f} s")
        assert latencies[0] < 1.0
        assert latencies[1] < 1.0
    finally:
        services.close()


async def measure(url: str, headers: dict[str, str], leases: list[RangeLease]) -> tuple[float, float]:
    limits = httpx.Limits(max_connections=STREAMS + 20, max_keepalive_connections=20)
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=30.0) as client:
        opened = asyncio.Event()
        started = 0
        stop = asyncio.Event()

        async def hold(lease: RangeLease) -> None:
            nonlocal started
            params = {"epoch": lease.epoch}
            async with client.stream(
                "GET", f"{API}/ranges/{lease.range_id}/stream", params=params
            ) as response:
                assert response.status_code == 200
                async for _ in response.aiter_raw():
                    started += 1
                    if started == STREAMS:
                        opened.set()
                    break  # the stream header: the server is waiting for the first chunk now
                await stop.wait()

        tasks = [asyncio.create_task(hold(lease)) for lease in leases]
        await asyncio.wait_for(opened.wait(), 120)
        await asyncio.sleep(1.0)  # the streams have settled into waiting
        healthz = heartbeat = 0.0
        first = leases[0]
        for _ in range(5):  # the slowest of five of each
            began = time.monotonic()
            assert (await client.get("/healthz")).status_code == 200
            healthz = max(healthz, time.monotonic() - began)
            began = time.monotonic()
            beat = await client.post(
                f"{API}/ranges/{first.range_id}/heartbeat",
                params={"epoch": first.epoch},
            )
            heartbeat = max(heartbeat, time.monotonic() - began)
            assert beat.status_code == 200
            await asyncio.sleep(0.1)
        stop.set()
        await asyncio.gather(*tasks)
        return healthz, heartbeat


def test_a_node_past_its_stream_cap_is_refused(database_url: str, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from usenet_indexer.coordinator.http.app import create_app

    services = services_for(database_url, tmp_path, stream_max_per_node=1, stream_chunk_wait_seconds=1.0)
    try:
        node, token = services.nodes.add("edge-capped")
        services.groups.add("alt.binaries.capped")
        services.groups.plan("alt.binaries.capped", 1, 1_999)
        first, second = services.ranges.lease(node), services.ranges.lease(node)
        assert first is not None and second is not None
        headers = {"Authorization": f"Bearer {token}"}
        with TestClient(create_app(services)) as client:
            params = {"epoch": first.epoch}
            with client.stream(
                "GET", f"{API}/ranges/{first.range_id}/stream", params=params, headers=headers
            ):
                refused = client.get(
                    f"{API}/ranges/{second.range_id}/stream", params={"epoch": second.epoch}, headers=headers
                )
                assert refused.status_code == 429
                assert "stream_max_per_node" in refused.json()["detail"]
            # The first one's end gave its slot back.
            again = client.get(
                f"{API}/ranges/{second.range_id}/stream", params={"epoch": second.epoch}, headers=headers
            )
            assert again.status_code == 200
    finally:
        services.close()

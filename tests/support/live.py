"""A coordinator served for real (uvicorn on a loopback port) inside the test process."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from usenet_indexer.coordinator.http.app import create_app
from usenet_indexer.coordinator.http.network import PromptServer, http_config
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.edge.client import NodeClient
from usenet_indexer.edge.worker import EdgeWorker


@contextmanager
def served(server: PromptServer, scheme: str = "http") -> Iterator[tuple[threading.Thread, str]]:
    """``server`` running on a thread of its own: the thread and its URL; stopped when done."""
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield thread, f"{scheme}://127.0.0.1:{port}"
    finally:
        server.stop()
        thread.join(10)


@contextmanager
def live_coordinator(services: Services) -> Iterator[str]:
    # The configuration `serve` runs with (limits, header deadline, TLS when the settings give it).
    server = PromptServer(http_config(create_app(services), services.settings, port=0))
    scheme = "https" if services.settings.tls_certfile is not None else "http"
    with served(server, scheme) as (_, url):
        yield url


def run_edge_workers(
    services: Services,
    *,
    workers: int = 2,
    batch_articles: int,
    max_ranges: int = 100,
    idle_seconds: float = 0.1,
    first_ranges: int = 0,
    timeout: float = 120.0,
    node_prefix: str = "edge",
) -> None:
    """``workers`` edge workers (a node each) against a live coordinator of ``services``, each on a
    thread until it has read ``max_ranges`` ranges or found nothing to lease. ``first_ranges``: each
    worker first reads that many alone, in turn, so that every worker indexes something whatever the
    scheduler does."""
    tokens = [services.nodes.add(f"{node_prefix}-{i}")[1] for i in range(workers)]
    with live_coordinator(services) as url:
        running = [
            EdgeWorker(NodeClient(url, token), batch_articles=batch_articles, idle_seconds=idle_seconds)
            for token in tokens
        ]
        for worker in running if first_ranges else ():
            worker.run(max_ranges=first_ranges)
        threads = [threading.Thread(target=w.run, kwargs={"max_ranges": max_ranges}) for w in running]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout)
        for worker in running:
            worker.close()
            worker.client.close()

"""A coordinator served for real (uvicorn on a loopback port) inside the test process."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from usenet_indexer.coordinator.http import http_config
from usenet_indexer.coordinator.server import create_app
from usenet_indexer.coordinator.services import Services


@contextmanager
def live_coordinator(services: Services) -> Iterator[str]:
    # The configuration `serve` runs with (limits, header deadline, TLS when the settings give it).
    server = uvicorn.Server(http_config(create_app(services), services.settings, port=0))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test coordinator did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    scheme = "https" if services.settings.tls_certfile is not None else "http"
    try:
        yield f"{scheme}://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)

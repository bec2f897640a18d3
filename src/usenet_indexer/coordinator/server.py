"""The coordinator's HTTP server (uvicorn, serving the app of coordinator/http/app.py) and the background
loops that run beside it."""

from __future__ import annotations

import asyncio

import uvicorn

from usenet_indexer.coordinator.http.app import create_app
from usenet_indexer.coordinator.http.network import http_config
from usenet_indexer.coordinator.loops.background import background_loops
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db.database import redacted
from usenet_indexer.runtime import tune_gc, tune_malloc


def run_server(services: Services) -> None:
    settings = services.settings
    server = uvicorn.Server(http_config(create_app(services), settings))
    loops = background_loops(services)

    async def serve() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started and not task.done():
            await asyncio.sleep(0.05)
        if server.started:
            host, port = server.servers[0].sockets[0].getsockname()[:2]
            database = redacted(settings.database_url)
            scheme = "https" if settings.tls_certfile is not None else "http"
            print(f"coordinator listening on {scheme}://{host}:{port}/ (database {database})", flush=True)
            loops.start()
        await task

    tune_gc()
    tune_malloc()
    try:
        asyncio.run(serve())
    finally:
        loops.stop()

"""The coordinator's HTTP server (uvicorn) and the background loops that run beside it."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from fastapi import Depends, FastAPI, Request, Response
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from usenet_indexer.coordinator.http import RequestLimits, http_config
from usenet_indexer.coordinator.loops.background import background_loops
from usenet_indexer.coordinator.metrics import Metrics
from usenet_indexer.coordinator.newznab import newznab_router
from usenet_indexer.coordinator.node_api import install_error_handlers, node_router
from usenet_indexer.coordinator.web import operator_only, web_router
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.runtime import tune_gc


def create_app(services: Services) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield

    # The API's own docs and schema are routes of ours below, for the operator only.
    app = FastAPI(
        title="usenet-indexer coordinator",
        version="1",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.services = services
    app.add_middleware(RequestLimits, settings=services.settings)
    metrics = Metrics(services)
    app.state.metrics = metrics
    install_error_handlers(app, metrics)
    app.include_router(node_router(services, metrics))
    app.include_router(newznab_router(services))
    app.include_router(web_router(services))

    @app.middleware("http")
    async def time_node_api(request: Request, call_next: Any) -> Any:
        began = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        if route is not None and request.url.path.startswith("/api/v1/node/"):
            metrics.api_seconds.labels(route=getattr(route, "path", "?")).observe(time.perf_counter() - began)
        return response

    operator = [Depends(operator_only)]

    @app.get("/openapi.json", include_in_schema=False, dependencies=operator)
    def openapi() -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False, dependencies=operator)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title=app.title)

    @app.get("/metrics", dependencies=operator)
    def prometheus() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:  # on the event loop: answered however busy the threads are
        return {"status": "ok"}

    @app.get("/api/v1/status", dependencies=operator)
    def status() -> dict[str, object]:
        """Groups with their ranges by status (what `groups list` prints)."""
        return {
            "groups": [
                {
                    "name": g.name,
                    "enabled": g.enabled,
                    "low": g.low_water,
                    "high": g.high_water,
                    "ranges": g.ranges,
                    "articles": g.articles,
                    "error": g.error,
                }
                for g in services.groups.summaries()
            ]
        }

    return app


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
    try:
        asyncio.run(serve())
    finally:
        loops.stop()


def redacted(url: str) -> str:
    """A database URL fit for a log line: the password replaced."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))
    return url

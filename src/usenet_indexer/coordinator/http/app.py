"""The coordinator's FastAPI app: the node API, the newznab API, the web UI and its admin, and the
operator's pages, each a router of module-level routes that reach the app's parts through FastAPI
dependencies (state.py); those parts are made here, once per app, and kept on ``app.state``."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request, Response
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from usenet_indexer.coordinator.http import admin, newznab, node_api, web
from usenet_indexer.coordinator.http.access import operator_only
from usenet_indexer.coordinator.http.lockout import LoginLockout
from usenet_indexer.coordinator.http.metrics import Metrics
from usenet_indexer.coordinator.http.network import RequestLimits
from usenet_indexer.coordinator.http.node_api import install_error_handlers
from usenet_indexer.coordinator.http.pages import install_page_handlers
from usenet_indexer.coordinator.http.state import Meter, Ops
from usenet_indexer.coordinator.http.streams import StreamSlots
from usenet_indexer.coordinator.registries.operations import Operations
from usenet_indexer.coordinator.wiring import Services

# The operator's pages: how the coordinator runs (this machine, or the admin logged in).
operator = APIRouter(dependencies=[Depends(operator_only)])


@operator.get("/openapi.json", include_in_schema=False)
def openapi(request: Request) -> JSONResponse:
    return JSONResponse(request.app.openapi())


@operator.get("/docs", include_in_schema=False)
def docs(request: Request) -> HTMLResponse:
    return get_swagger_ui_html(openapi_url="/openapi.json", title=request.app.title)


@operator.get("/metrics")
def prometheus(metrics: Meter) -> Response:
    return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)


@operator.get("/api/v1/status")
def status(ops: Ops) -> dict[str, object]:
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
            for g in ops.list_groups()
        ]
    }


open_pages = APIRouter()


@open_pages.get("/healthz")
async def healthz() -> dict[str, str]:  # on the event loop: answered however busy the threads are
    return {"status": "ok"}


def create_app(services: Services) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield

    # The API's own docs and schema are routes of ours (operator), for the operator only.
    app = FastAPI(
        title="usenet-indexer coordinator",
        version="1",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.services = services
    app.state.operations = Operations.of(services)
    app.state.streams = StreamSlots(services.settings.stream_max_per_node)
    app.state.login_lockout = LoginLockout()
    app.add_middleware(RequestLimits, settings=services.settings)
    metrics = Metrics(services)
    app.state.metrics = metrics
    install_error_handlers(app, metrics)
    install_page_handlers(app)
    app.include_router(node_api.router)
    app.include_router(newznab.router)
    app.include_router(web.router)
    app.include_router(admin.router)

    @app.middleware("http")
    async def time_node_api(request: Request, call_next: Any) -> Any:
        began = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        if route is not None and request.url.path.startswith("/api/v1/node/"):
            metrics.api_seconds.labels(route=getattr(route, "path", "?")).observe(time.perf_counter() - began)
        return response

    app.include_router(operator)
    app.include_router(open_pages)
    return app

"""The coordinator's HTTP server (uvicorn) and the background loops that run beside it."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import uvicorn
from fastapi import Depends, FastAPI, Request, Response
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from usenet_indexer.catalog.grouping import Grouper
from usenet_indexer.catalog.probe import Prober
from usenet_indexer.coordinator.cleanup import SpoolCleanup
from usenet_indexer.coordinator.corpus_fill import CorpusFill
from usenet_indexer.coordinator.http.metrics import Metrics
from usenet_indexer.coordinator.http.network import RequestLimits, http_config
from usenet_indexer.coordinator.http.newznab import newznab_router
from usenet_indexer.coordinator.http.node_api import install_error_handlers, node_router
from usenet_indexer.coordinator.http.web import operator_only, web_router
from usenet_indexer.coordinator.loops import LoopRunner, holder_name
from usenet_indexer.coordinator.news import NewsService
from usenet_indexer.coordinator.planner import Planner
from usenet_indexer.coordinator.prefetcher import Prefetcher
from usenet_indexer.coordinator.services import Services
from usenet_indexer.db.database import Fence
from usenet_indexer.leases.ownership import OwnershipLeases
from usenet_indexer.logs import get_logger
from usenet_indexer.runtime import tune_gc

log = get_logger(__name__)


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


def background_loops(services: Services, news: NewsService | None = None) -> LoopRunner:
    """The coordinator's loops; with a news server configured (or ``news`` given) also the planner,
    the prefetcher, the corpus fill and the probe (unless ``probe_bodies`` is off), which share one
    connection pool (coordinator/news.py)."""
    settings = services.settings
    ttl = settings.lease_ttl_seconds
    ownership = OwnershipLeases(
        services.db,
        holder_name(),
        ttl_seconds=settings.ownership_ttl_seconds,
        renew_seconds=settings.ownership_renew_seconds,
    )
    runner = LoopRunner(ownership)
    cleanup = SpoolCleanup(
        services, abandoned_fence=runner.fence("finish-abandoned"), sweep_fence=runner.fence("spool-cleanup")
    )
    runner.add("finish-abandoned", min(30.0, ttl / 2), cleanup.finish_abandoned)
    runner.add("spool-cleanup", settings.cleanup_period_seconds, cleanup.sweep)
    grouper = Grouper(services.db, fence=runner.fence("grouping"), full=services.space.full)
    runner.add("grouping", settings.grouping_period_seconds, grouper.work)
    servers = settings.news_servers()
    if news is None and servers:
        news = NewsService(servers)
    if news is not None:
        prefetcher = Prefetcher(services, news, fence=runner.fence("prefetcher"))
        planner = Planner(services, news, fence=runner.fence("planner"))
        corpus_fill = CorpusFill(services, news, fence=runner.fence("corpus-fill"))
        runner.add("planner", settings.planner_period_seconds, planner.work)
        runner.add("prefetcher", settings.prefetch_idle_seconds, prefetcher.work)
        runner.add("corpus-fill", settings.corpus_fill_period_seconds, corpus_fill.work)
        if settings.probe_bodies:
            probe = probe_work(services, news, runner.fence("probe"))
            runner.add("probe", settings.probe_period_seconds, probe)
        runner.on_stop(prefetcher.close)
        runner.on_stop(news.close)
    return runner


PROBE_ROUND_SECONDS = 20.0


def probe_work(services: Services, news: NewsService, fence: Fence | None = None) -> Callable[[], bool]:
    """The catalog's Prober (PAR2 bodies of obfuscated releases) as a loop's work, on the shared pool;
    True when it took a full batch (more may be queued)."""
    prober = Prober(services.db, news.body, fence=fence)
    bound = min(PROBE_ROUND_SECONDS, services.settings.ownership_ttl_seconds / 2)

    def work() -> bool:
        try:
            # Bounded, so that a stop is heard between rounds; probes cut off here are queued again
            # (Prober.run_once), a cut-off counting as an attempt.
            results = asyncio.run(asyncio.wait_for(prober.run_once(), bound))
        except TimeoutError:
            log.warning("probe.round_late", action=f"cut off after {bound:.0f} s")
            return False
        return len(results) >= prober.batch

    return work


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

"""The coordinator's HTTP server (uvicorn, serving the app of coordinator/http/app.py) and the background
loops that run beside it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import uvicorn

from usenet_indexer.catalog.grouping import Grouper
from usenet_indexer.catalog.probe import Prober
from usenet_indexer.coordinator.cleanup import SpoolCleanup
from usenet_indexer.coordinator.corpus_fill import CorpusFill
from usenet_indexer.coordinator.http.app import create_app
from usenet_indexer.coordinator.http.network import http_config
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

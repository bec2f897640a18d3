"""Which loops a coordinator runs, how often, and on which news servers: each under its ownership lease
(runner.py), the ones that read news sharing one connection pool (news.py). ``serve`` and ``run`` both
start these."""

from __future__ import annotations

from usenet_indexer.catalog.grouping import Grouper
from usenet_indexer.coordinator.loops.cleanup import SpoolCleanup
from usenet_indexer.coordinator.loops.corpus_fill import CorpusFill
from usenet_indexer.coordinator.loops.news import NewsService
from usenet_indexer.coordinator.loops.planner import Planner
from usenet_indexer.coordinator.loops.prefetcher import Prefetcher
from usenet_indexer.coordinator.loops.probe import probe_work
from usenet_indexer.coordinator.loops.runner import LoopRunner, holder_name
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.leases.ownership import OwnershipLeases


def background_loops(services: Services, news: NewsService | None = None) -> LoopRunner:
    """The coordinator's loops; with a news server configured (or ``news`` given) also the planner,
    the prefetcher, the corpus fill and the probe (unless ``probe_bodies`` is off), which share one
    connection pool (coordinator/loops/news.py)."""
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
        planner = Planner(
            services, news, fence=runner.fence("planner"), planned=lambda: runner.wake("prefetcher")
        )
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

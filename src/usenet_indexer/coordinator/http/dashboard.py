"""What the web UI's dashboard shows: the progress model (coordinator/progress.py, which `run`'s
terminal view reads too) and, in the same transaction, each group's headers/s over the last hour
(coordinator/http/charts.py), the leases, the failed ranges; and the spool's size."""

from __future__ import annotations

from dataclasses import dataclass, field

from usenet_indexer.coordinator.http.charts import (
    CHART_WINDOW_SECONDS,
    RateSeries,
    Work,
    rate_chart_svg,
    rate_series,
)
from usenet_indexer.coordinator.progress import Lane, Probes, Worker, read_progress, read_workers
from usenet_indexer.coordinator.registries.groups import GroupSummary
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db import Row

# Headers/s is averaged over the batches of this window: a worker posts a batch every few seconds to
# a few minutes (500,000 articles by default), so a shorter window shows zeros between posts.
RATE_WINDOW_SECONDS = 300.0


@dataclass(frozen=True, slots=True)
class GroupProgress:
    summary: GroupSummary
    tail: Lane
    history: Lane
    rate: RateSeries

    @property
    def chart(self) -> str:
        """The SVG of :attr:`rate`, escaped throughout: the template writes it out as it is."""
        return rate_chart_svg(self.summary.name, self.rate)


@dataclass
class Dashboard:
    now: float
    groups: list[GroupProgress]
    statuses: dict[str, int]
    workers: list[Worker]
    leases: list[Row]
    failed: list[Row]
    releases: int
    releases_complete: int
    catalog_bytes: int
    newest_release: float | None
    spool_bytes: int
    headers_per_second: float = 0.0
    live_workers: int = 0
    probes: Probes = field(default_factory=Probes)
    rate_window: float = RATE_WINDOW_SECONDS
    errors: list[str] = field(default_factory=list)


def workers(services: Services) -> list[Worker]:
    """The nodes as the dashboard shows them (the admin's nodes page: without the rest of it)."""
    with services.db.transaction(write=False) as tx:
        return read_workers(tx, ttl=services.settings.lease_ttl_seconds, window=RATE_WINDOW_SECONDS)


def dashboard(services: Services) -> Dashboard:
    summaries = services.groups.summaries()
    with services.db.transaction(write=False) as tx:
        progress = read_progress(
            tx, summaries, ttl=services.settings.lease_ttl_seconds, window=RATE_WINDOW_SECONDS
        )
        now = progress.now
        work = tx.run("dashboard_group_work", {"since": now - CHART_WINDOW_SECONDS})
        leases = tx.run("dashboard_leases")
        failed = tx.run("dashboard_failed")
    by_group: dict[int, list[Work]] = {}
    for b in work:
        began = b["began_at"]
        by_group.setdefault(int(b["group_id"]), []).append(
            Work(int(b["headers"]), float(b["stored_at"]), None if began is None else float(began))
        )
    try:
        spool = services.spool.size()
    except OSError:
        spool = 0
    found = progress.workers
    return Dashboard(
        now=now,
        groups=[
            GroupProgress(
                g,
                progress.lane(g.id, "tail"),
                progress.lane(g.id, "history"),
                rate_series(by_group.get(g.id, ()), now),
            )
            for g in summaries
        ],
        statuses=progress.statuses,
        workers=found,
        leases=leases,
        failed=failed,
        releases=progress.catalog.releases,
        releases_complete=progress.catalog.complete,
        catalog_bytes=progress.catalog.bytes,
        newest_release=progress.catalog.newest,
        spool_bytes=spool,
        headers_per_second=sum(w.headers_per_second for w in found),
        live_workers=sum(1 for w in found if w.live),
        probes=progress.probes,
    )

"""What the web UI's dashboard shows, read from the store in one transaction: each group's tail and
history progress and headers/s over the last hour (coordinator/http/charts.py), ranges by status, live
workers and their headers/s, leases, failed ranges, the catalog's size and the spool's."""

from __future__ import annotations

from dataclasses import dataclass, field

from usenet_indexer.coordinator.http.charts import (
    CHART_WINDOW_SECONDS,
    RateSeries,
    Work,
    rate_chart_svg,
    rate_series,
)
from usenet_indexer.coordinator.registries.groups import GroupSummary
from usenet_indexer.coordinator.services import Services
from usenet_indexer.db import Row

# Headers/s is averaged over the batches of this window: a worker posts a batch every few seconds to
# a few minutes (500,000 articles by default), so a shorter window shows zeros between posts.
RATE_WINDOW_SECONDS = 300.0


@dataclass(frozen=True, slots=True)
class LaneProgress:
    ranges: int = 0
    articles: int = 0
    read: int = 0

    @property
    def percent(self) -> float:
        return 100.0 * self.read / self.articles if self.articles else 0.0


@dataclass(frozen=True, slots=True)
class GroupProgress:
    summary: GroupSummary
    tail: LaneProgress
    history: LaneProgress
    rate: RateSeries

    @property
    def chart(self) -> str:
        """The SVG of :attr:`rate`, escaped throughout: the template writes it out as it is."""
        return rate_chart_svg(self.summary.name, self.rate)


@dataclass(frozen=True, slots=True)
class Worker:
    id: int
    name: str
    enabled: bool
    last_seen_at: float | None
    live_leases: int
    headers_per_second: float

    @property
    def live(self) -> bool:
        return self.live_leases > 0


@dataclass
class Probes:
    """Releases named from their bodies (issue 16), and what naming them cost; and the password probes
    of releases named by their subjects (one article each)."""

    named: int = 0
    pending: int = 0  # queued or being probed
    failed: int = 0
    articles: int = 0  # bodies fetched, by every probe
    bytes: int = 0
    joined: int = 0  # releases joined from loose files (catalog/grouping.py)
    passwords: int = 0  # password probes done
    password_articles: int = 0  # bodies they fetched (in ``articles`` too)

    @property
    def articles_per_named(self) -> float:
        return (self.articles - self.password_articles) / self.named if self.named else 0.0


def probes_of(rows: list[Row], joined: Row | None) -> Probes:
    out = Probes(joined=int(joined["releases"]) if joined else 0)
    for r in rows:
        status, n = str(r["status"]), int(r["n"])
        out.password_articles += int(r["password_articles"])
        if status == "done":
            out.named += n - int(r["passwords"])
            out.passwords += int(r["passwords"])
        elif status == "failed":
            out.failed += n
        else:
            out.pending += n
        out.articles += int(r["articles"])
        out.bytes += int(r["bytes"])
    return out


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


def dashboard(services: Services) -> Dashboard:
    ttl = services.settings.lease_ttl_seconds
    summaries = services.groups.summaries()
    with services.db.transaction(write=False) as tx:
        clock = tx.one("database_now")
        assert clock is not None
        now = float(clock["now"])
        lanes = tx.run("dashboard_lanes")
        work = tx.run("dashboard_group_work", {"since": now - CHART_WINDOW_SECONDS})
        workers = tx.run("dashboard_workers", {"ttl": ttl, "window": RATE_WINDOW_SECONDS})
        leases = tx.run("dashboard_leases")
        failed = tx.run("dashboard_failed")
        catalog = tx.one("dashboard_catalog")
        probes = probes_of(tx.run("metrics_probes"), tx.one("metrics_joined"))
    assert catalog is not None
    by_group: dict[int, list[Work]] = {}
    for b in work:
        began = b["began_at"]
        by_group.setdefault(int(b["group_id"]), []).append(
            Work(int(b["headers"]), float(b["stored_at"]), None if began is None else float(began))
        )
    progress: dict[tuple[int, str], LaneProgress] = {
        (int(r["group_id"]), str(r["lane"])): LaneProgress(
            int(r["ranges"]), int(r["articles"]), int(r["read"])
        )
        for r in lanes
    }
    statuses: dict[str, int] = {"planned": 0, "leased": 0, "done": 0, "failed": 0}
    for g in summaries:
        for status, n in g.ranges.items():
            statuses[status] = statuses.get(status, 0) + n
    found = [
        Worker(
            id=int(w["id"]),
            name=str(w["name"]),
            enabled=bool(w["enabled"]),
            last_seen_at=w["last_seen_at"],
            live_leases=int(w["live_leases"]),
            headers_per_second=int(w["recent_headers"]) / RATE_WINDOW_SECONDS,
        )
        for w in workers
    ]
    try:
        spool = services.spool.size()
    except OSError:
        spool = 0
    return Dashboard(
        now=now,
        groups=[
            GroupProgress(
                g,
                progress.get((g.id, "tail"), LaneProgress()),
                progress.get((g.id, "history"), LaneProgress()),
                rate_series(by_group.get(g.id, ()), now),
            )
            for g in summaries
        ],
        statuses=statuses,
        workers=found,
        leases=leases,
        failed=failed,
        releases=int(catalog["releases"]),
        releases_complete=int(catalog["complete"]),
        catalog_bytes=int(catalog["bytes"]),
        newest_release=catalog["newest"],
        spool_bytes=spool,
        headers_per_second=sum(w.headers_per_second for w in found),
        live_workers=sum(1 for w in found if w.live),
        probes=probes,
    )

"""Indexing progress as the store holds it, read in one transaction: each group's tail and history
(articles planned and read), the nodes with their live leases and the headers their batches stored in
a window, the catalog's totals, the probes. One model, two renderings: the web dashboard
(coordinator/http/dashboard.py adds its chart, leases and failed ranges) and `run`'s terminal view
(local/progress.py adds rates and when it is done). Neither reads progress its own way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from usenet_indexer.coordinator.registries.groups import GroupSummary
from usenet_indexer.db import Row, Tx

LANES = ("tail", "history")
PENDING = ("queued", "working")


@dataclass(frozen=True, slots=True)
class Lane:
    """A group's tail or history: ranges, articles planned (``articles``) and read; ``rate``, articles
    read per second, when the reader works one out (local/progress.py)."""

    ranges: int = 0
    articles: int = 0
    read: int = 0
    rate: float = 0.0

    @property
    def fraction(self) -> float:
        return self.read / self.articles if self.articles else 0.0

    @property
    def percent(self) -> float:
        return 100.0 * self.fraction


@dataclass(frozen=True, slots=True)
class Worker:
    """A node: its live leases (heard from within the lease TTL), and the headers its batches stored
    in the last ``window`` seconds."""

    id: int
    name: str
    enabled: bool
    last_seen_at: float | None
    live_leases: int
    headers: int
    window: float

    @property
    def live(self) -> bool:
        return self.live_leases > 0

    @property
    def headers_per_second(self) -> float:
        return self.headers / self.window


@dataclass
class Probes:
    """Releases named from their bodies (issue 16), and what naming them cost; and the password probes
    of releases named by their subjects (one article each)."""

    named: int = 0
    pending: int = 0  # queued or being probed, password probes too
    failed: int = 0
    articles: int = 0  # bodies fetched, by every probe
    bytes: int = 0
    joined: int = 0  # releases joined from loose files (catalog/grouping.py)
    passwords: int = 0  # password probes done
    password_articles: int = 0  # bodies they fetched (in ``articles`` too)
    names: dict[str, int] = field(default_factory=dict)  # the probes that name releases, by status
    passwords_pending: int = 0  # password probes queued or being probed

    @property
    def articles_per_named(self) -> float:
        return (self.articles - self.password_articles) / self.named if self.named else 0.0


def probes_of(rows: list[Row], joined: Row | None) -> Probes:
    """``metrics_probes`` and ``metrics_joined`` as :class:`Probes`."""
    out = Probes(joined=int(joined["releases"]) if joined else 0)
    for r in rows:
        status, n, passwords = str(r["status"]), int(r["n"]), int(r["passwords"])
        out.password_articles += int(r["password_articles"])
        out.names[status] = n - passwords
        if status == "done":
            out.named += n - passwords
            out.passwords += passwords
        elif status == "failed":
            out.failed += n
        else:
            out.pending += n
        if status in PENDING:
            out.passwords_pending += passwords
        out.articles += int(r["articles"])
        out.bytes += int(r["bytes"])
    return out


def probes_counted(rows: list[Row]) -> Probes:
    """``dashboard_probes`` (counts by status and priority only) as :class:`Probes`: a quarter of the
    cost of ``metrics_probes``, which sums what every probe fetched."""
    out = Probes()
    for r in rows:
        status, n, password = str(r["status"]), int(r["n"]), int(r["priority"]) != 0
        if not password:
            out.names[status] = out.names.get(status, 0) + n
        if status == "done":
            out.passwords += n if password else 0
            out.named += 0 if password else n
        elif status == "failed":
            out.failed += n
        else:
            out.pending += n
            out.passwords_pending += n if password and status in PENDING else 0
    return out


@dataclass(frozen=True, slots=True)
class Catalog:
    releases: int
    complete: int
    bytes: int
    newest: float | None  # the newest release's post date


def catalog_of(row: Row) -> Catalog:
    """``dashboard_catalog`` (a scan of every release: local/progress.py reads it less often)."""
    return Catalog(int(row["releases"]), int(row["complete"]), int(row["bytes"]), row["newest"])


@dataclass(frozen=True, slots=True)
class Progress:
    now: float  # the store's clock
    groups: list[GroupSummary]
    lanes: dict[tuple[int, str], Lane]
    workers: list[Worker]
    catalog: Catalog
    probes: Probes
    releases_by_group: dict[int, int]  # new releases found in each group's batches (when asked for)

    def lane(self, group_id: int, name: str) -> Lane:
        return self.lanes.get((group_id, name), Lane())

    @property
    def statuses(self) -> dict[str, int]:
        """Ranges by status, over every group."""
        statuses: dict[str, int] = {"planned": 0, "leased": 0, "done": 0, "failed": 0}
        for g in self.groups:
            for status, n in g.ranges.items():
                statuses[status] = statuses.get(status, 0) + n
        return statuses

    @property
    def idle(self) -> bool:
        """No range planned or leased in any group."""
        return all(g.ranges.get("planned", 0) + g.ranges.get("leased", 0) == 0 for g in self.groups)


def read_workers(tx: Tx, *, ttl: float, window: float) -> list[Worker]:
    """Every node with its live leases and the headers its batches stored in the last ``window`` s."""
    return [
        Worker(
            id=int(w["id"]),
            name=str(w["name"]),
            enabled=bool(w["enabled"]),
            last_seen_at=w["last_seen_at"],
            live_leases=int(w["live_leases"]),
            headers=int(w["recent_headers"]),
            window=window,
        )
        for w in tx.run("dashboard_workers", {"ttl": ttl, "window": window})
    ]


def read_progress(
    tx: Tx,
    groups: list[GroupSummary],
    *,
    ttl: float,
    window: float,
    catalog: Row | None = None,
    releases_by_group: bool = False,
    costs: bool = True,
) -> Progress:
    """The progress of ``groups`` (``Groups.summaries()``) in ``tx``: workers' headers over ``window``
    seconds; the catalog's totals read now unless given (``catalog``, read earlier); the releases each
    group found only when asked (``releases_by_group``: `run`'s view shows them, the dashboard not);
    the probes with what they fetched and the releases joined from loose files unless not (``costs``:
    the dashboard's card shows them; `run`'s view, reading once a second, only counts probes)."""
    clock = tx.one("database_now")
    assert clock is not None
    lanes = {
        (int(r["group_id"]), str(r["lane"])): Lane(int(r["ranges"]), int(r["articles"]), int(r["read"]))
        for r in tx.run("dashboard_lanes")
    }
    workers = read_workers(tx, ttl=ttl, window=window)
    if catalog is None:
        catalog = tx.one("dashboard_catalog")
        assert catalog is not None
    found: dict[int, int] = {}
    if releases_by_group:
        found = {int(r["group_id"]): int(r["releases"]) for r in tx.run("dashboard_group_releases")}
    return Progress(
        now=float(clock["now"]),
        groups=groups,
        lanes=lanes,
        workers=workers,
        catalog=catalog_of(catalog),
        probes=probes_of(tx.run("metrics_probes"), tx.one("metrics_joined"))
        if costs
        else probes_counted(tx.run("dashboard_probes")),
        releases_by_group=found,
    )

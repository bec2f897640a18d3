"""What ``run`` shows and when it is done: the progress model the web dashboard reads too
(coordinator/progress.py), and rates worked out from how it changes.

The store only learns of progress when a batch is stored (every ``--batch-articles`` articles per
worker), so rates are averaged over a sliding window (``RATE_WINDOW_SECONDS``) of snapshots: a
shorter one would show bursts and zeros between batches.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from usenet_indexer.catalog.grouping import Grouper
from usenet_indexer.coordinator.progress import Lane, read_progress
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db import Row, Tx

__all__ = ["GroupProgress", "Lane", "ProgressReader", "Snapshot", "WorkerProgress"]

RATE_WINDOW_SECONDS = 10.0
# Headers are summed over every batch a node ever posted (the dashboard's query with this window).
_ALL_TIME = 1e12
# The catalog's totals (releases, complete) scan every release: 12 ms of a core at 8,500 releases (a
# run of 1,000,000 headers), more as the catalog grows, where the view reads once a second (issue 17:
# 0.2 core-s of such a run). Read again at most every CATALOG_SECONDS, and at most a twentieth of the
# time (a catalog whose scan takes 0.5 s is read every 10 s).
CATALOG_SECONDS = 5.0
CATALOG_SHARE = 20


@dataclass(frozen=True, slots=True)
class GroupProgress:
    id: int
    name: str
    enabled: bool
    low: int | None
    high: int | None
    error: str | None
    statuses: dict[str, int]
    tail: Lane
    history: Lane
    releases: int  # found in this group's batches (new releases)

    @property
    def planned(self) -> bool:
        return self.high is not None

    @property
    def pending_ranges(self) -> int:
        return self.statuses.get("planned", 0) + self.statuses.get("leased", 0)

    @property
    def failed_ranges(self) -> int:
        return self.statuses.get("failed", 0)


@dataclass(frozen=True, slots=True)
class WorkerProgress:
    name: str
    live_leases: int
    headers: int  # every header its batches stored
    rate: float  # headers per second over the window
    last_seen_at: float | None


@dataclass(frozen=True, slots=True)
class Snapshot:
    at: float  # time.monotonic() when read
    groups: list[GroupProgress]
    workers: list[WorkerProgress]
    releases: int
    complete: int
    probes: dict[str, int] = field(default_factory=dict)  # the probes that name releases, by status
    # Releases named by their subjects whose first archive article is still to be read for its password.
    # Not waited for by `run --exit-when-done`: the catalog is searchable without them, and waiting for
    # one article body each made bench/e2e.py's 200,000-header run take 42.6 s instead of 4.5 (session
    # 8). The probe loop reads them while the coordinator runs; what is left, the next run or serve.
    passwords_pending: int = 0
    average_rate: float = 0.0  # articles/s from the first batch this run saw to the last
    grouping_pending: int = 0  # loose files whose bursts are final but not joined yet

    @property
    def read(self) -> int:
        return sum(g.tail.read + g.history.read for g in self.groups)

    @property
    def rate(self) -> float:
        return sum(g.tail.rate + g.history.rate for g in self.groups)

    @property
    def probes_pending(self) -> int:
        return self.probes.get("queued", 0) + self.probes.get("working", 0)

    @property
    def read_through(self) -> bool:
        """Every enabled group read from the news server at least once (or failing there) and every
        range of it done or failed."""
        enabled = [g for g in self.groups if g.enabled]
        return bool(enabled) and all((g.planned or g.error) and g.pending_ranges == 0 for g in enabled)

    @property
    def done(self) -> bool:
        """Read through, no loose file waiting to be joined into its release, and no obfuscated
        release still waiting for its probe."""
        return self.read_through and self.probes_pending == 0 and self.grouping_pending == 0


class _Rates:
    """Per-key rates over a sliding window of (time, value) samples."""

    def __init__(self, window: float) -> None:
        self.window = window
        self.samples: deque[tuple[float, dict[object, float]]] = deque()

    def add(self, at: float, values: dict[object, float]) -> Callable[[object], float]:
        self.samples.append((at, values))
        while len(self.samples) > 2 and at - self.samples[1][0] >= self.window:
            self.samples.popleft()
        then, old = self.samples[0]
        span = at - then

        def rate(key: object) -> float:
            # A key the oldest sample lacks started from nothing since (a group planned meanwhile).
            if span <= 0:
                return 0.0
            return max(0.0, (values.get(key, 0.0) - old.get(key, 0.0)) / span)

        return rate


class ProgressReader:
    """Reads a :class:`Snapshot`; keep one reader for a run (it remembers earlier snapshots for rates).
    ``nodes``: only these workers (``run``'s own), default every node."""

    def __init__(
        self, services: Services, nodes: set[str] | None = None, window: float = RATE_WINDOW_SECONDS
    ) -> None:
        self.services = services
        self.nodes = nodes
        self._lanes = _Rates(window)
        self._workers = _Rates(window)
        self._began: tuple[float, float] | None = None  # (time, articles read) before the first change
        self._changed: tuple[float, float] | None = None  # the last change
        self._catalog: tuple[float, Row] | None = None  # (read again after, the totals)

    def _totals(self, tx: Tx, fresh: bool) -> Row:
        now = time.monotonic()
        if fresh or self._catalog is None or now >= self._catalog[0]:
            began = time.thread_time()
            row = tx.one("dashboard_catalog")
            assert row is not None
            spent = time.thread_time() - began
            self._catalog = (time.monotonic() + max(CATALOG_SECONDS, CATALOG_SHARE * spent), row)
        return self._catalog[1]

    def read(self, *, fresh: bool = False) -> Snapshot:
        """The progress now; the catalog's totals as read up to CATALOG_SECONDS ago unless ``fresh``."""
        services = self.services
        summaries = services.groups.summaries()
        with services.db.transaction(write=False) as tx:
            progress = read_progress(
                tx,
                summaries,
                ttl=services.settings.lease_ttl_seconds,
                window=_ALL_TIME,
                catalog=self._totals(tx, fresh),
                releases_by_group=True,
                costs=False,
            )
        probes, passwords = dict(progress.probes.names), progress.probes.passwords_pending
        if not services.settings.probe_bodies:
            probes, passwords = {}, 0  # no probe loop runs: nothing queued is waited for
        # Read only once nothing else is left: the grouping loop joins what is final within a pass.
        grouping = Grouper(services.db).pending() if progress.idle else 0
        at = time.monotonic()
        lane_rate = self._lanes.add(at, {key: float(lane.read) for key, lane in progress.lanes.items()})
        chosen = [w for w in progress.workers if self.nodes is None or w.name in self.nodes]
        worker_rate = self._workers.add(at, {w.name: float(w.headers) for w in chosen})

        def lane(group_id: int, name: str) -> Lane:
            found = progress.lane(group_id, name)
            if not found.ranges:
                return found
            return Lane(found.ranges, found.articles, found.read, lane_rate((group_id, name)))

        read = float(sum(lane.read for lane in progress.lanes.values()))
        if self._began is None or (self._changed is None and read == self._began[1]):
            self._began = (at, read)
        elif self._changed is None or read != self._changed[1]:
            self._changed = (at, read)
        average = 0.0
        if self._changed is not None and self._changed[0] > self._began[0]:
            average = (self._changed[1] - self._began[1]) / (self._changed[0] - self._began[0])
        return Snapshot(
            at=at,
            groups=[
                GroupProgress(
                    id=g.id,
                    name=g.name,
                    enabled=g.enabled,
                    low=g.low_water,
                    high=g.high_water,
                    error=g.error,
                    statuses=dict(g.ranges),
                    tail=lane(g.id, "tail"),
                    history=lane(g.id, "history"),
                    releases=progress.releases_by_group.get(g.id, 0),
                )
                for g in summaries
            ],
            workers=[
                WorkerProgress(
                    name=w.name,
                    live_leases=w.live_leases,
                    headers=w.headers,
                    rate=worker_rate(w.name),
                    last_seen_at=w.last_seen_at,
                )
                for w in chosen
            ],
            releases=progress.catalog.releases,
            complete=progress.catalog.complete,
            probes=probes,
            passwords_pending=passwords,
            average_rate=average,
            grouping_pending=grouping,
        )

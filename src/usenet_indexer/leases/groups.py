"""Group leases (seed 002, "window indexing"): a worker holds one group's lane and takes its ranges in
article order, carrying a window of releases still open across range boundaries.

A lane is ``history`` (priority >= 0) or ``tail`` (priority < 0); each has its own holder, window and
snapshot. Ranges in a held lane are not handed to plain range leases. The window's snapshot is recorded
here (article N, size, where it lies) under the group lease's epoch; writing the bytes is storage's job.

Every write of a holder locks the lane's row, checks it, and writes conditionally on holder, epoch and
the TTL at its own clock, refusing when no row comes back: a snapshot checked with a plain read and
written by an unchecked UPDATE answered 200 for a holder that had just lost the lane, and its window's
open releases were lost (issue 14). A range granted through a lane carries the lane's epoch
(``ranges.lane_epoch``): its batches are stored only while that lane is still held (leases/ranges.py).
Claims and ends are logged (``lane_log``), snapshots too (``snapshot_log``), for the audit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from usenet_indexer.db import Database, Row, Tx
from usenet_indexer.leases.claims import granted_lane, granted_range, may_grant
from usenet_indexer.leases.errors import LeaseLost
from usenet_indexer.leases.explain import explain_lane
from usenet_indexer.leases.ranges import LANES, Lane, RangeLease, RangeLeases, grant, range_lease


class BadLane(ValueError):
    def __init__(self, lane: str) -> None:
        super().__init__(f"lane: {' or '.join(LANES)}, not {lane!r}")


def check_lane(lane: str) -> Lane:
    if lane == "history":
        return "history"
    if lane == "tail":
        return "tail"
    raise BadLane(lane)


@dataclass(frozen=True, slots=True)
class GroupLease:
    group_id: int
    group: str
    lane: Lane
    epoch: int
    snapshot_next: int | None
    snapshot_size: int | None
    replayed: bool = False  # answered again to a retry under the same claim tag (leases/claims.py)


@dataclass(frozen=True, slots=True)
class Snapshot:
    next: int
    size: int
    location: str


class GroupLeases:
    def __init__(self, db: Database, ranges: RangeLeases) -> None:
        self.db = db
        self.ranges = ranges
        self.ttl = ranges.ttl

    def lease(self, node_id: int, lane: str, claim: str | None = None) -> GroupLease | None:
        """A group with ranges left in ``lane`` and no live holder of it, claimed by compare-and-set.
        ``claim``: the tag the worker asked under (leases/claims.py); a retry under it is answered with
        the lane it was granted, while that is live."""
        lane = check_lane(lane)
        params = {
            "lane": lane,
            "history": lane == "history",
            "ttl": self.ttl,
            "node_id": node_id,
            "claim": claim,
        }

        def take(tx: Tx) -> GroupLease | None:
            if not may_grant(tx, node_id, claim):
                return None
            replay = granted_lane(tx, node_id, claim, lane, self.ttl)
            if replay is not None:
                return GroupLease(
                    group_id=int(replay["group_id"]),
                    group=str(replay["name"]),
                    lane=lane,
                    epoch=int(replay["epoch"]),
                    snapshot_next=_int(replay["snapshot_next"]),
                    snapshot_size=_int(replay["snapshot_size"]),
                    replayed=True,
                )
            for candidate in tx.run("group_lane_candidates", params):
                key = {**params, "group_id": candidate["group_id"]}
                # The group row serializes lane claims with range grants (see lease_take), which
                # check for a held lane after taking the same lock.
                tx.execute("group_for_update", key)
                tx.execute("group_lane_ensure", key)
                before = tx.one("group_lane_for_update", key)
                assert before is not None
                claimed = tx.one("group_lane_claim", {**key, "prev_epoch": before["epoch"]})
                if claimed is None:
                    continue  # held live after all (the candidates were read before the locks)
                if before["node_id"] is not None:
                    end_lane(
                        tx, key, int(before["epoch"]), float(before["heartbeat_at"]) + self.ttl, "expired"
                    )
                tx.execute(
                    "lane_log_grant",
                    {
                        **key,
                        "epoch": claimed["epoch"],
                        "granted_at": claimed["leased_at"],
                        "took_over": before["node_id"] is not None,
                    },
                )
                tx.execute("node_seen", key)
                return GroupLease(
                    group_id=int(candidate["group_id"]),
                    group=str(candidate["name"]),
                    lane=lane,
                    epoch=int(claimed["epoch"]),
                    snapshot_next=_int(claimed["snapshot_next"]),
                    snapshot_size=_int(claimed["snapshot_size"]),
                )
            return None

        return self.db.retrying(take)

    def held(self, tx: Tx, group_id: int, node_id: int, lane: Lane, epoch: int, *, lock: bool = True) -> Row:
        """The lane's row if ``node_id`` holds it at ``epoch`` (locked, unless ``lock=False`` for a
        read); else LeaseLost with the reason."""
        key = {"group_id": group_id, "lane": lane}
        row = tx.one("group_lane_for_update" if lock else "group_lane_get", key)
        reason = explain_lane(row, group_id, lane, node_id, epoch, self.ttl)
        if reason is not None:
            raise LeaseLost(reason)
        assert row is not None
        return row

    def _refused(self, tx: Tx, group_id: int, node_id: int, lane: Lane, epoch: int) -> LeaseLost:
        """A holder's write refused although its check passed a moment before: the lease lapsed."""
        row = tx.one("group_lane_get", {"group_id": group_id, "lane": lane})
        reason = explain_lane(row, group_id, lane, node_id, epoch, self.ttl)
        return LeaseLost(reason or f"group {group_id}'s {lane} lane: the write was refused")

    def next(
        self, group_id: int, node_id: int, lane: str, epoch: int, claim: str | None = None
    ) -> RangeLease | None:
        """The lane's next range in article order, leased to the lane's holder (None: nothing left now).
        ``claim``: the tag the worker asked under (leases/claims.py); a retry under it, the lane still
        held, is answered with the range it was granted, while that is live."""
        lane = check_lane(lane)
        key = {
            "group_id": group_id,
            "lane": lane,
            "history": lane == "history",
            "node_id": node_id,
            "epoch": epoch,
            "ttl": self.ttl,
        }

        def take(tx: Tx) -> RangeLease | None:
            if not may_grant(tx, node_id, claim):
                return None
            tx.execute("group_for_update", key)
            self.held(tx, group_id, node_id, lane, epoch)
            if tx.one("group_lane_heartbeat", key) is None:
                raise self._refused(tx, group_id, node_id, lane, epoch)
            replay = granted_range(tx, node_id, claim, self.ttl, group_id=group_id, lane_epoch=epoch)
            if replay is not None:
                return range_lease(replay)  # the lane still held: its retry answered as it was
            pick = tx.one("group_lane_next_range", key)
            if pick is None or pick["live"]:
                # Nothing left, or the next range in order is held by someone else (a plain range
                # lease from before the lane was claimed, a dead holder not yet past its TTL): wait.
                return None
            if tx.one("range_try_lock", {"range_id": pick["range_id"]}) is None:
                return None  # a write for it is in flight (its lapsed holder's last batch): wait
            live = tx.one("group_live_leases", {**key, "except_range": pick["range_id"]})
            assert live is not None
            if int(live["n"]) >= self.ranges.max_per_group:
                return None
            lease = grant(tx, pick, node_id, self.ttl, lane_epoch=epoch, claim=claim)
            if lease is None:
                return None  # changed since the pick: the worker asks again
            if tx.one("group_lane_current", {**key, "range_id": lease.range_id}) is None:
                raise self._refused(tx, group_id, node_id, lane, epoch)
            return lease

        return self.db.retrying(take)

    def of_node(self, node_id: int) -> list[tuple[int, str, int]]:
        """The node's live lane leases, as (group, lane, epoch)."""
        with self.db.transaction(write=False) as tx:
            rows = tx.run("node_lane_leases", {"node_id": node_id, "ttl": self.ttl})
        return [(int(r["group_id"]), str(r["lane"]), int(r["epoch"])) for r in rows]

    def held_lane(self, group_id: int, node_id: int, lane: str, epoch: int) -> str:
        """The group's name if ``node_id`` holds its ``lane`` at ``epoch``; else LeaseLost."""
        with self.db.transaction(write=False) as tx:
            return str(self.held(tx, group_id, node_id, check_lane(lane), epoch, lock=False)["name"])

    def heartbeat(self, group_id: int, node_id: int, lane: str, epoch: int) -> None:
        lane = check_lane(lane)
        key = {"group_id": group_id, "lane": lane, "node_id": node_id, "epoch": epoch, "ttl": self.ttl}
        with self.db.transaction() as tx:
            self.held(tx, group_id, node_id, lane, epoch)
            if tx.one("group_lane_heartbeat", key) is None:
                raise self._refused(tx, group_id, node_id, lane, epoch)

    def release(
        self,
        group_id: int,
        node_id: int,
        lane: str,
        epoch: int,
        *,
        reclaim: bool = False,
        claim: str | None = None,
    ) -> None:
        """The holder gives its lane up (``reclaim``: its supervisor, after the holder died; issue 17;
        ``claim``: only if granted under that tag, leases/claims.py)."""
        lane = check_lane(lane)
        key = {
            "group_id": group_id,
            "lane": lane,
            "node_id": node_id,
            "epoch": epoch,
            "ttl": self.ttl,
            "claim": claim,
        }
        with self.db.transaction() as tx:
            self.held(tx, group_id, node_id, lane, epoch)
            released = tx.one("group_lane_release", key)
            if released is None:
                raise self._refused(tx, group_id, node_id, lane, epoch)
            end_lane(tx, key, epoch, float(released["now"]), "reclaimed" if reclaim else "released")

    def record_snapshot(
        self, group_id: int, node_id: int, lane: str, epoch: int, *, next: int, size: int, location: str
    ) -> None:
        """The window's state standing at article ``next``, written by the holder at ``epoch``."""
        lane = check_lane(lane)
        if next <= 0 or size < 0:
            raise ValueError(f"a snapshot stands at an article > 0 with a size >= 0, not {next} and {size}")
        with self.db.transaction() as tx:
            row = self.held(tx, group_id, node_id, lane, epoch)
            self._record_snapshot(tx, row, node_id, lane, epoch, next, size, location)

    def snapshot(
        self, group_id: int, node_id: int, lane: str, epoch: int, at: int | None = None
    ) -> Snapshot | None:
        """The lane's last snapshot for its current holder, or with ``at`` the one standing at that
        article (the last or the one before: a holder may have died between a snapshot's PUT and the
        batch that moves its range's resume point)."""
        lane = check_lane(lane)
        with self.db.transaction(write=False) as tx:
            row = self.held(tx, group_id, node_id, lane, epoch, lock=False)
        for prefix in ("snapshot", "previous"):
            next_article = row[f"{prefix}_next"]
            if next_article is not None and (at is None or int(next_article) == at):
                return Snapshot(int(next_article), int(row[f"{prefix}_size"]), str(row[f"{prefix}_location"]))
            if at is None:
                return None
        return None

    def flush(
        self,
        group_id: int,
        node_id: int,
        lane: str,
        epoch: int,
        *,
        next: int,
        size: int,
        location: str,
        store: Callable[[Tx, Row], object],
    ) -> None:
        """The lane's open releases stored (``store``) and its empty window recorded, in one transaction."""
        lane = check_lane(lane)
        with self.db.transaction() as tx:
            tx.execute("group_for_update", {"group_id": group_id})
            row = self.held(tx, group_id, node_id, lane, epoch)
            store(tx, row)
            self._record_snapshot(tx, row, node_id, lane, epoch, next, size, location)

    def _record_snapshot(
        self, tx: Tx, held: Row, node_id: int, lane: str, epoch: int, next: int, size: int, location: str
    ) -> None:
        """The lane's snapshot moved to ``next`` (its last kept as the previous), conditional on the
        holder still holding the lane at this statement's clock, and logged for the audit."""
        group_id = int(held["group_id"])
        params = {"group_id": group_id, "lane": lane, "node_id": node_id, "epoch": epoch, "ttl": self.ttl}
        recorded = tx.one("group_lane_snapshot", {**params, "next": next, "size": size, "location": location})
        if recorded is None:
            raise self._refused(tx, group_id, node_id, check_lane(lane), epoch)
        tx.execute(
            "snapshot_log_insert",
            {
                **params,
                "next": next,
                "size": size,
                "location": location,
                "recorded_at": recorded["snapshot_at"],
                "lease_expires_at": float(held["heartbeat_at"]) + self.ttl,
            },
        )

    def kept_locations(self, group_id: int, lane: str) -> set[str]:
        """The snapshots the lane still points to (the rest may be pruned)."""
        with self.db.transaction(write=False) as tx:
            row = tx.one("group_lane_get", {"group_id": group_id, "lane": lane})
        if row is None:
            return set()
        return {str(row[k]) for k in ("snapshot_location", "previous_location") if row[k] is not None}


def _int(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]


def end_lane(tx: Tx, key: Mapping[str, object], epoch: int, ended_at: float, reason: str) -> None:
    tx.execute(
        "lane_log_end",
        {
            "group_id": key["group_id"],
            "lane": key["lane"],
            "epoch": epoch,
            "ended_at": ended_at,
            "reason": reason,
        },
    )

"""Range leases: which worker indexes which article numbers, and the batches that move resume points.

The rules, each from seed 000 unless said otherwise:

- The next range: one with spooled chunks first, then any planned one; by priority, then id. A worker
  never waits for the prefetcher to choose its range: refused leases left workers idle for 30 s, so
  fewer ranges were leased and fewer prefetched.
- A leased range silent for the TTL is taken over and resumes at ``next_id``.
- At most ``max_per_group`` live leases per group: a group's batches wait for each other, and eight
  workers on one group's ranges only queued, holding the node API for minutes.
- With the catalog at its space cap, only ranges with priority < 0 (the tail, stored ranges).
- Every grant bumps the range's **epoch** (the fencing token); every later call names range and epoch.
  A lease whose holder stayed silent past the TTL is lost even before anyone takes it over: otherwise a
  holder waking from a stall would make a third live lease in a group that granted a second meanwhile.
- All lease arithmetic uses the database's clock.
- A request under a claim tag that already has a live grant of this node (a retry whose first answer
  was lost) is answered with that grant, not a second one (issue 17, leases/claims.py).

Writes under a lease, and why each is shaped as it is (issue 14, each race reproduced on PostgreSQL by
stopping one operation between two statements: tests/integration/leases/test_interleavings.py):

- **Every write a lease allows is conditional, in its own statement, on everything it was decided
  on** (node, epoch, status, the TTL at that statement's clock), and its caller checks that a row came
  back. A batch read its range, waited on its group's merge lock while its lease lapsed, and was stored
  anyway, reviving the lease beside a grant that had counted it dead: three live leases in a group of
  two. A lane's grant wrote ``WHERE id`` alone over a retire that committed after its pick.
- **On PostgreSQL a write locks its range's row before it checks the TTL.** One UPDATE judges its
  conditions before waiting for a row another transaction only locked, and goes on with them after.
- **A grant counts a lapsed lease as live while another transaction holds its row** (a write in
  flight checked its TTL before committing): ``group_live_leases``. A grant never waits on a range's
  row while holding its group's; a finish takes them the other way round.

PostgreSQL grants in one statement (``lease_take``, a function: see migration 0002 for why), SQLite
under BEGIN IMMEDIATE, which serializes every write: there a transaction's checks and writes see one
state. A grant, a lane claim and a lane's next range each lock the group's row first and count its
live leases after the lock, which is what keeps the cap exact.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from usenet_indexer.db import Database, Row, Tx
from usenet_indexer.db.database import Fence, retry_conflicts
from usenet_indexer.leases.claims import granted_range, may_grant
from usenet_indexer.leases.errors import LeaseLost, RangeError, StaleBatch
from usenet_indexer.leases.explain import explain_lane, explain_range

Lane = Literal["history", "tail"]
LANES: tuple[Lane, ...] = ("history", "tail")


def lane_of(priority: int) -> Lane:
    """Negative priorities are the tail (and stored ranges); history ranges count eras from 0."""
    return "tail" if priority < 0 else "history"


@dataclass(frozen=True, slots=True)
class RangeLease:
    range_id: int
    group_id: int
    group: str
    start: int
    end: int
    next: int
    epoch: int
    priority: int
    rule_version: int
    took_over: bool
    # The grant a retry of the same request (same claim tag) already got, answered again (claims.py).
    replayed: bool = False

    @property
    def lane(self) -> Lane:
        return lane_of(self.priority)


@dataclass(frozen=True, slots=True)
class FinishedRange:
    range_id: int
    group_id: int
    headers: int
    lane: Lane


@dataclass(frozen=True, slots=True)
class CorruptOutcome:
    """What a corrupt report did: the caller drops ``chunk_from``'s chunk from the spool (and corpus)."""

    range_id: int
    group_id: int
    chunk_from: int
    failed: bool
    capture: bool
    reason: str


@dataclass(frozen=True, slots=True)
class BatchReceipt:
    range_id: int
    epoch: int
    from_id: int
    to_id: int
    next_id: int
    result: Mapping[str, Any]
    replayed: bool


# Called inside the batch transaction, with the range's row (and its group's name), to store the
# batch's content (the catalog merge); what it returns is kept in the batch log and handed back, also
# to a retry of the same batch.
BatchStore = Callable[[Tx, Row], Mapping[str, Any]]


class RangeLeases:
    def __init__(
        self,
        db: Database,
        *,
        ttl_seconds: float,
        max_per_group: int = 2,
        history_allowed: Callable[[], bool] = lambda: True,
    ) -> None:
        if ttl_seconds <= 0:
            raise ValueError(f"lease TTL must be positive, not {ttl_seconds}")
        self.db = db
        self.ttl = float(ttl_seconds)
        self.max_per_group = max_per_group
        self.history_allowed = history_allowed

    # -- granting -------------------------------------------------------------------------------

    def lease(self, node_id: int, claim: str | None = None) -> RangeLease | None:
        """The next range for ``node_id``. ``claim``: the tag the worker asked under, recorded with the
        grant; none is made under a revoked tag, and a retry under it is answered with the range it was
        granted, while that is live (leases/claims.py)."""
        params = {
            "node_id": node_id,
            "claim": claim,
            "ttl": self.ttl,
            "max_per_group": self.max_per_group,
            "history_allowed": bool(self.history_allowed()),
        }
        if self.db.dialect == "postgresql":
            # Not durable (PostgreSQL, migration 0017): a grant lost in a crash would have its epoch
            # issued again, and its holder's writes at it accepted, but the next bump of the range's
            # epoch skips one epoch for each server run since its last (ranges_epoch_unique.v1.sql),
            # so no epoch is issued twice; what the holder wrote under it was lost with it (later in
            # the same WAL; its first batch, durable, flushes the grant). A takeover and the first
            # grant after a crash are made durable inside the function. The grant's wait for the WAL
            # flush was most of a lease's latency (docs/PERFORMANCE.md, sessions 10 and 11). A server
            # crashed with grants unflushed: tests/integration/leases/test_lost_take.py.
            rows = retry_conflicts(lambda: self.db.once("lease_take", params, durable=False))
            return range_lease(rows[0]) if rows else None

        def take(tx: Tx) -> RangeLease | None:
            if not may_grant(tx, node_id, claim):
                return None
            replay = granted_range(tx, node_id, claim, self.ttl)
            if replay is not None:
                return range_lease(replay)
            pick = tx.one("lease_pick", params)
            if pick is None:
                return None
            # Under BEGIN IMMEDIATE the pick still holds.
            return grant(tx, pick, node_id, self.ttl, claim=claim)

        return self.db.retrying(take)

    # -- calls that name range and epoch ------------------------------------------------------------

    def held(self, tx: Tx, range_id: int, node_id: int, epoch: int) -> Row:
        """The range row, locked, if ``node_id`` holds it at ``epoch``; else LeaseLost with the reason."""
        row = tx.one("range_for_update", {"range_id": range_id})
        reason = explain_range(row, range_id, node_id, epoch, self.ttl)
        if reason is not None:
            raise LeaseLost(reason)
        assert row is not None
        return row

    def check(self, range_id: int, node_id: int, epoch: int) -> Row:
        """The range (with its group's name) if ``node_id`` holds it at ``epoch``; else LeaseLost."""
        with self.db.transaction(write=False) as tx:
            row = tx.one("range_with_group", {"range_id": range_id})
        reason = explain_range(row, range_id, node_id, epoch, self.ttl)
        if reason is not None:
            raise LeaseLost(reason)
        assert row is not None
        return row

    def of_node(self, node_id: int) -> list[tuple[int, int]]:
        """The node's live range leases, as (range, epoch)."""
        with self.db.transaction(write=False) as tx:
            rows = tx.run("node_range_leases", {"node_id": node_id, "ttl": self.ttl})
        return [(int(r["id"]), int(r["epoch"])) for r in rows]

    def heartbeat(self, range_id: int, node_id: int, epoch: int) -> None:
        params = {"range_id": range_id, "node_id": node_id, "epoch": epoch, "ttl": self.ttl}
        # Not durable: a heartbeat lost in a crash only brings a takeover a little closer.
        if retry_conflicts(lambda: self.db.once("range_heartbeat", params, durable=False)):
            if self.db.dialect == "sqlite":  # PostgreSQL's range_heartbeat does this too, in one statement
                with self.db.transaction() as tx:
                    tx.execute("node_seen", params)
            return
        with self.db.transaction(write=False) as tx:
            reason = explain_range(tx.one("range_get", params), range_id, node_id, epoch, self.ttl)
        raise LeaseLost(reason or f"range {range_id}: heartbeat refused")

    def finish(self, range_id: int, node_id: int, epoch: int) -> FinishedRange:
        """The worker read the range to its end: done (refused while ``next_id <= end_id``)."""
        params = {"range_id": range_id, "node_id": node_id, "epoch": epoch, "ttl": self.ttl}

        def follow_ups(tx: Tx, done: Row) -> None:
            end_lease(tx, range_id, epoch, float(done["done_at"]), "finished")
            count_headers(tx, done)

        # Not durable (PostgreSQL): a finish lost in a crash leaves a range read to its end and leased,
        # which finish_abandoned finishes (and counts) once its lease lapses; the batches it finishes
        # were durable. One WAL flush less per range: on a disk whose flush takes 4 ms, commits queued
        # behind flushes were most of a lease's p99 (bench/leases.py, issue 17). A server crashed with
        # the finish unflushed: tests/integration/leases/test_lost_finish.py.
        done = self._one_step("range_finish", params, follow_ups, durable=False)
        if done is not None:
            return FinishedRange(
                range_id, int(done["group_id"]), int(done["headers"]), lane_of(int(done["priority"]))
            )
        row, reason = self._why_not(params)
        if reason is not None:
            raise LeaseLost(reason)
        raise RangeError(
            f"range {range_id} is at {row['next_id']}, not past its end {row['end_id']}: "
            "post the batches up to the end first"
        )

    def release(
        self, range_id: int, node_id: int, epoch: int, *, reclaim: bool = False, claim: str | None = None
    ) -> str:
        """A stopping worker gives its range back; the next one resumes at its last stored batch.
        ``reclaim``: given back by the supervisor of a worker that died (issue 17), logged as such.
        ``claim``: only if the lease was granted under that tag (a grant the worker never read, its
        tag revoked by the supervisor: leases/claims.py).

        A range read to its end is finished instead: planned past its end, nothing would lease or
        finish it again (a worker killed between its last batch and its finish, given back on its
        behalf). The release refuses it in its own statement, and the finish after it is conditional
        on the same lease: a resume point only grows, so no batch in between can make either wrong.
        Returns ``released`` or ``finished``."""
        reason = "reclaimed" if reclaim else "released"
        params = {
            "range_id": range_id,
            "node_id": node_id,
            "epoch": epoch,
            "ttl": self.ttl,
            "reason": reason,
            "claim": claim,
        }

        def follow_ups(tx: Tx, released: Row) -> None:
            end_lease(tx, range_id, epoch, float(released["now"]), reason)

        if self._one_step("range_give_back", params, follow_ups) is not None:
            return "released"
        row, why = self._why_not(params)
        if why is not None:
            raise LeaseLost(why)
        if claim is not None and row["claim"] != claim:
            raise LeaseLost(f"range {range_id}: epoch {epoch} was not granted under this claim tag")
        if int(row["next_id"]) > int(row["end_id"]):
            self.finish(range_id, node_id, epoch)
            return "finished"
        raise LeaseLost(f"range {range_id}: release refused")

    def _one_step(
        self,
        name: str,
        params: dict[str, Any],
        follow_ups: Callable[[Tx, Row], None],
        *,
        durable: bool = True,
    ) -> Row | None:
        """A lifecycle step as one conditional statement: PostgreSQL's version does its follow-ups
        (lease log, counts) in the same statement and one round trip; on SQLite they run after it in
        the same transaction. None: the statement's conditions did not hold."""
        if self.db.dialect == "postgresql":
            rows = retry_conflicts(lambda: self.db.once(name, params, durable=durable))
            return rows[0] if rows else None

        def step(tx: Tx) -> Row | None:
            row = tx.one(name, params)
            if row is not None:
                follow_ups(tx, row)
            return row

        return self.db.retrying(step)

    def _why_not(self, params: dict[str, Any]) -> tuple[Row, str | None]:
        with self.db.transaction(write=False) as tx:
            row = tx.one("range_get", params)
        reason = explain_range(row, params["range_id"], params["node_id"], params["epoch"], self.ttl)
        if row is None:
            raise LeaseLost(reason or f"unknown range {params['range_id']}")
        return row, reason

    def corrupt(
        self, range_id: int, node_id: int, epoch: int, chunk_from: int, crc: int | None = None
    ) -> CorruptOutcome:
        """A chunk that does not inflate. First report: fetch it plain next time and replan the range.
        A report after a plain copy was fetched: not the server's compression; the range fails.

        A report while no plain copy has been fetched yet replans again: the compressed copy may have
        been in flight, or the prefetcher's targets not refreshed yet, and spooled again (range
        161820, seed 000). ``crc``, the CRC-32 of the copy the worker read: a report fails the range
        only when it names the plain copy. The prefetcher may store the plain copy between a worker's
        stream of the compressed one and its report, and a good range failed (issue 14, from reading).
        """
        params = {"range_id": range_id, "node_id": node_id, "epoch": epoch, "ttl": self.ttl}
        with self.db.transaction() as tx:
            row = self.held(tx, range_id, node_id, epoch)
            if not int(row["start_id"]) <= chunk_from <= int(row["end_id"]):
                raise RangeError(
                    f"chunk {chunk_from} is outside range {range_id} ({row['start_id']}–{row['end_id']})"
                )
            key = {"range_id": range_id, "chunk_from": chunk_from}
            before = tx.one("plain_chunk_get", key)
            tx.execute("plain_chunk_report", key)
            capture = bool(row["capture"])
            if capture:
                # Not complete in the corpus any more: the corpus fill fetches the chunk again.
                tx.execute("range_uncapture", key)
            plain_read = crc is None or (before is not None and before["plain_crc"] == crc)
            if before is not None and before["fetched_plain_at"] is not None and plain_read:
                reason = f"chunk {chunk_from} doesn't inflate, also fetched plain"
                failed = tx.one("range_fail", {**params, "error": reason})
                if failed is None:
                    raise LeaseLost(self._lapsed(tx, params))
                end_lease(tx, range_id, epoch, float(failed["now"]), "failed")
                return CorruptOutcome(range_id, int(row["group_id"]), chunk_from, True, capture, reason)
            replanned = tx.one("range_replan", params)
            if replanned is None:
                raise LeaseLost(self._lapsed(tx, params))
            end_lease(tx, range_id, epoch, float(replanned["now"]), "corrupt")
            reason = f"chunk {chunk_from} doesn't inflate: replanned, to be fetched plain"
            return CorruptOutcome(range_id, int(row["group_id"]), chunk_from, False, capture, reason)

    def _lapsed(self, tx: Tx, params: Mapping[str, Any]) -> str:
        """Why a write the holder was allowed a moment ago was refused: its lease lapsed meanwhile."""
        range_id, node_id, epoch = params["range_id"], params["node_id"], params["epoch"]
        reason = explain_range(tx.one("range_get", params), range_id, node_id, epoch, self.ttl)
        return reason or f"range {range_id}: the write was refused"

    def mark_fetched_plain(self, range_id: int, chunk_from: int, crc: int | None = None) -> None:
        """The prefetcher spooled a plain copy of a chunk reported corrupt (``crc``: its CRC-32)."""
        with self.db.transaction() as tx:
            tx.execute(
                "plain_chunk_fetched", {"range_id": range_id, "chunk_from": chunk_from, "plain_crc": crc}
            )

    def plain_chunks(self, range_id: int) -> list[int]:
        """Chunks of the range to fetch plain (reported corrupt)."""
        with self.db.transaction(write=False) as tx:
            return [int(r["chunk_from"]) for r in tx.run("plain_chunks_of", {"range_id": range_id})]

    def finish_abandoned(self, fence: Fence | None = None) -> list[FinishedRange]:
        """Ranges read to their end whose worker went quiet before finishing them: done.

        The lease query skips a range past its end, so one whose finish never came stayed leased for
        good (a gap range, during a lock pile-up; seed 000). Its batches are all stored.
        """
        with self.db.transaction(write=False) as tx:
            abandoned = tx.run("ranges_abandoned", {"ttl": self.ttl})

        # One range per transaction, each taking its group's row and then its range's, as a finish
        # does: in one transaction, the group locked for the first range's counts while the next
        # range waited on a worker's finish, which waited on the group (a deadlock the explorer found).
        def finish_one(tx: Tx, row: Row) -> FinishedRange | None:
            params = {"range_id": row["id"], "epoch": row["epoch"], "ttl": self.ttl}
            tx.execute("group_for_update", {"group_id": row["group_id"]})  # the group's row first
            if not tx.run("range_finish_abandoned", params):
                return None
            ended = float(row["heartbeat_at"]) + self.ttl
            end_lease(tx, int(row["id"]), int(row["epoch"]), ended, "abandoned")
            return count_headers(tx, row)

        done = []
        for row in abandoned:
            finished = self.db.retrying(functools.partial(finish_one, row=row), fence=fence)
            if finished is not None:
                done.append(finished)
        return done

    # -- batches --------------------------------------------------------------------------------

    def commit_batch(
        self,
        range_id: int,
        node_id: int,
        epoch: int,
        from_id: int,
        to_id: int,
        headers: int,
        store: BatchStore | None = None,
    ) -> BatchReceipt:
        """Store a batch covering ``[from_id, to_id]`` and move ``next_id`` past it, in one transaction.

        Only under the current lease and only at the resume point. A retry of the last stored batch
        (same range, epoch, from, to: its first reply may have been lost) gets the stored result and
        stores nothing twice.
        """
        if from_id < 0 or to_id < from_id:
            raise RangeError(f"a batch covers from <= to, not {from_id}–{to_id}")
        if not 0 <= headers <= to_id - from_id + 1:
            raise RangeError(f"a batch of {to_id - from_id + 1} articles cannot hold {headers} headers")
        params = {"range_id": range_id, "node_id": node_id, "epoch": epoch, "ttl": self.ttl}
        with self.db.transaction() as tx:
            try:
                row = self.held(tx, range_id, node_id, epoch)
            except LeaseLost as lost:
                raise StaleBatch(lost.reason) from None
            next_id = int(row["next_id"])
            if from_id != next_id:
                last = tx.one(
                    "batch_log_last",
                    {"range_id": range_id, "epoch": epoch, "from_id": from_id, "to_id": to_id},
                )
                if last is not None and to_id + 1 == next_id:
                    return BatchReceipt(
                        range_id, epoch, from_id, to_id, next_id, json.loads(last["result"]), True
                    )
                raise StaleBatch(
                    f"batch {from_id}–{to_id} does not start at range {range_id}'s resume point {next_id}"
                )
            if to_id > int(row["end_id"]):
                raise RangeError(f"batch {from_id}–{to_id} runs past range {range_id}'s end {row['end_id']}")
            if row["lane_epoch"] is not None:
                self._lane_still_held(tx, row, node_id)
            result = dict(store(tx, row)) if store is not None else {}
            advanced = tx.one(
                "range_advance",
                {**params, "from_id": from_id, "next_id": to_id + 1, "headers": headers},
            )
            if advanced is None:
                # Held when read, lapsed by the time of the write (it waited on the group's merge lock).
                raise StaleBatch(self._lapsed(tx, params))
            tx.execute(
                "batch_log_insert",
                {
                    "range_id": range_id,
                    "epoch": epoch,
                    "node_id": node_id,
                    "from_id": from_id,
                    "to_id": to_id,
                    "headers": headers,
                    "result": json.dumps(result, separators=(",", ":")),
                    "stored_at": advanced["stored_at"],
                    # The row is locked (or, on SQLite, the store): this is the expiry the write found.
                    "lease_expires_at": float(row["heartbeat_at"]) + self.ttl,
                },
            )
            return BatchReceipt(range_id, epoch, from_id, to_id, to_id + 1, result, False)

    def _lane_still_held(self, tx: Tx, row: Row, node_id: int) -> None:
        """A range granted through a group lane takes batches only while its holder holds that lane at
        the epoch it was granted under: the lane's next holder resumes from the lane's last snapshot,
        and a batch from a holder that lost the lane would move the resume point past a window nobody
        has (issue 14: the releases open in it were lost). The lane row stays share-locked until the
        batch commits, so no claim lands in between."""
        lane = lane_of(int(row["priority"]))
        group_id = int(row["group_id"])
        held = tx.one("group_lane_for_share", {"group_id": group_id, "lane": lane})
        reason = explain_lane(held, group_id, lane, node_id, int(row["lane_epoch"]), self.ttl)
        if reason is not None:
            raise StaleBatch(
                f"range {row['id']} was granted through a lane this node no longer holds: {reason}"
            )


def grant(
    tx: Tx,
    pick: Row,
    node_id: int,
    ttl: float,
    lane_epoch: int | None = None,
    *,
    claim: str | None = None,
) -> RangeLease | None:
    """Lease the picked range to ``node_id`` (SQLite and group lanes; PostgreSQL's lease_take does
    the same in one statement): bump its epoch, the node's last seen, the lease log. None: the range
    changed since it was picked (the grant is conditional on what the pick saw)."""
    granted = tx.one(
        "lease_grant",
        {
            "range_id": pick["range_id"],
            "node_id": node_id,
            "lane_epoch": lane_epoch,
            "claim": claim,
            "prev_epoch": pick["prev_epoch"],
            "prev_status": pick["prev_status"],
            "ttl": ttl,
        },
    )
    if granted is None:
        return None
    group = tx.one("group_name", {"group_id": granted["group_id"]})
    assert group is not None
    tx.execute("node_seen", {"node_id": node_id})
    took_over = pick["prev_status"] == "leased"
    if took_over:
        end_lease(
            tx,
            int(granted["range_id"]),
            int(pick["prev_epoch"]),
            float(pick["prev_heartbeat"]) + ttl,
            "expired",
        )
    tx.execute(
        "lease_log_grant",
        {
            "range_id": granted["range_id"],
            "group_id": granted["group_id"],
            "epoch": granted["epoch"],
            "node_id": node_id,
            "granted_at": granted["granted_at"],
            "took_over": took_over,
            "lane_epoch": lane_epoch,
            "claim": claim,
        },
    )
    return range_lease({**granted, "group_name": group["name"], "took_over": took_over})


def end_lease(tx: Tx, range_id: int, epoch: int, ended_at: float, reason: str) -> None:
    tx.execute(
        "lease_log_end", {"range_id": range_id, "epoch": epoch, "ended_at": ended_at, "reason": reason}
    )


def count_headers(tx: Tx, row: Row) -> FinishedRange:
    """Add a finished range's headers to its group's and lane's counts."""
    lane = lane_of(int(row["priority"]))
    headers = int(row["headers"])
    counted = {"group_id": row["group_id"], "lane": lane, "headers": headers}
    tx.execute(f"group_count_headers_{lane}", counted)
    tx.execute("group_lane_count_headers", counted)
    return FinishedRange(int(row["id"]), int(row["group_id"]), headers, lane)


def range_lease(row: Mapping[str, Any]) -> RangeLease:
    """A grant's row as a lease (a replayed one too)."""
    return RangeLease(
        range_id=int(row["range_id"]),
        group_id=int(row["group_id"]),
        group=str(row["group_name"]),
        start=int(row["start_id"]),
        end=int(row["end_id"]),
        next=int(row["next_id"]),
        epoch=int(row["epoch"]),
        priority=int(row["priority"]),
        rule_version=int(row["rule_version"] or 0),
        took_over=bool(row["took_over"]),
        replayed=bool(row.get("replayed", False)),
    )

"""The lease audit: proves from the store's own records that the lease rules held during a run.

1. No range was ever held live by two holders: a takeover came only after the previous holder's
   silence reached the TTL, any other new grant only after the previous lease ended.
2. Every article number of a range up to its resume point is covered by exactly one stored batch,
   and a finished range is covered to its end.
3. No group ever had more than ``max_per_group`` live leases.
4. No stale write was accepted: every stored batch lies inside the live interval of its lease.

A lease is live from its grant until it ended (finished, released, failed) or its holder's last
heartbeat plus the TTL (a lease silent that long is lost: see leases/ranges.py).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field

from usenet_indexer.db import Database, Row

# Clocks in the store have microsecond resolution; equal instants are not overlaps.
EPSILON = 1e-6


@dataclass
class AuditReport:
    leases: int = 0
    batches: int = 0
    ranges: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def audit(db: Database, *, ttl: float, max_per_group: int) -> AuditReport:
    with db.transaction(write=False) as tx:
        leases = tx.run("audit_leases")
        batches = tx.run("audit_batches")
        ranges = tx.run("audit_ranges")
    report = AuditReport(leases=len(leases), batches=len(batches), ranges=len(ranges))
    problem = report.problems.append

    # Each lease's live interval.
    intervals: dict[tuple[int, int], tuple[float, float]] = {}
    by_range: dict[int, list[Row]] = defaultdict(list)
    for lease in leases:
        start = float(lease["granted_at"])
        if lease["ended_at"] is not None:
            end = float(lease["ended_at"])
        elif int(lease["epoch"]) == int(lease["range_epoch"]) and lease["range_status"] == "leased":
            end = float(lease["range_heartbeat"]) + ttl
        else:
            problem(f"range {lease['range_id']} epoch {lease['epoch']}: lease never ended, yet superseded")
            end = start
        intervals[(int(lease["range_id"]), int(lease["epoch"]))] = (start, end)
        by_range[int(lease["range_id"])].append(lease)

    # 1. One live holder at a time, per range.
    for range_id, grants in by_range.items():
        for previous, current in itertools.pairwise(grants):
            _, prev_end = intervals[(range_id, int(previous["epoch"]))]
            granted = float(current["granted_at"])
            if granted + EPSILON < prev_end:
                problem(
                    f"range {range_id}: epoch {current['epoch']} granted at {granted:.3f} while epoch "
                    f"{previous['epoch']} was live until {prev_end:.3f}"
                )

    # 3. The group cap, at every grant.
    by_group: dict[int, list[tuple[float, float, int, int]]] = defaultdict(list)
    for lease in leases:
        start, end = intervals[(int(lease["range_id"]), int(lease["epoch"]))]
        by_group[int(lease["group_id"])].append((start, end, int(lease["range_id"]), int(lease["epoch"])))
    for group_id, spans in by_group.items():
        for start, _, range_id, epoch in spans:
            live = sum(
                1
                for s, e, r, ep in spans
                if (r, ep) != (range_id, epoch) and s <= start + EPSILON and e > start + EPSILON
            )
            if live >= max_per_group:
                problem(
                    f"group {group_id}: range {range_id} epoch {epoch} granted with {live} other live leases"
                )

    # 2. and 4. Batches: contiguous, each once, each within its lease's live interval.
    batches_of: dict[int, list[Row]] = defaultdict(list)
    for batch in batches:
        batches_of[int(batch["range_id"])].append(batch)
        key = (int(batch["range_id"]), int(batch["epoch"]))
        stored = float(batch["stored_at"])
        if key not in intervals:
            problem(f"range {key[0]}: batch stored under epoch {key[1]}, which was never granted")
            continue
        start, end = intervals[key]
        if not start - EPSILON <= stored <= end + EPSILON:
            problem(
                f"range {key[0]}: batch {batch['from_id']}–{batch['to_id']} of epoch {key[1]} stored at "
                f"{stored:.3f}, outside its lease {start:.3f}–{end:.3f}"
            )
    for row in ranges:
        range_id = int(row["id"])
        expected = int(row["start_id"])
        for batch in batches_of.get(range_id, []):
            if int(batch["from_id"]) != expected:
                problem(f"range {range_id}: batch from {batch['from_id']} where {expected} was expected")
            expected = int(batch["to_id"]) + 1
        if expected != int(row["next_id"]):
            problem(f"range {range_id}: batches cover up to {expected - 1}, resume point is {row['next_id']}")
        if row["status"] == "done" and int(row["next_id"]) != int(row["end_id"]) + 1:
            problem(f"range {range_id} is done at {row['next_id']}, short of its end {row['end_id']}")
    return report

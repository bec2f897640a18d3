"""The lease audit: proves from the store's own records that the lease rules held during a run.

1. No range was ever held live by two holders: a takeover came only after the previous holder's
   silence reached the TTL, any other new grant only after the previous lease ended.
2. Every article number of a range up to its resume point is covered by exactly one stored batch,
   and a finished range is covered to its end.
3. No group ever had more than ``max_per_group`` live leases.
4. No stale write was accepted: every stored batch lies inside the live interval of its lease, and
   within the expiry its own write found (last heartbeat + TTL, recorded with it): a write from a
   holder whose lease had lapsed at the write's own clock is caught even when nobody took over.
5. Every article of a group's planned span lies in exactly one range: its ranges tile the span from
   ``history_low`` to ``tail_next - 1`` without a gap or an overlap.
6. One holder at a time per group lane, and every snapshot recorded within its holder's live lease.
7. A lane's snapshot chain has no hole: every batch of a range granted through a lane was preceded by
   that lane holder's snapshot standing at the batch's end + 1, which the lane's next holder resumes
   from (leases/groups.py, edge/lanes.py).
8. No grant under a claim tag after its node revoked it (leases/claims.py): a dead worker's request
   still in flight was granted before the revoke, where the supervisor finds it, or not at all.
9. No two live grants under one claim tag of a node at once: a retried lease request is answered with
   the grant its first try made (leases/claims.py), not granted a second lease.

A lease is live from its grant until it ended (finished, released, failed) or its holder's last
heartbeat plus the TTL (a lease silent that long is lost: see leases/ranges.py). Rows written before
the records existed (migration 0007) are skipped by the checks that need them.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field

from usenet_indexer.db import Database, Row
from usenet_indexer.leases.ranges import lane_of

# Clocks in the store have microsecond resolution; equal instants are not overlaps.
EPSILON = 1e-6


@dataclass
class AuditReport:
    leases: int = 0
    batches: int = 0
    ranges: int = 0
    lanes: int = 0
    snapshots: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def audit(db: Database, *, ttl: float, max_per_group: int) -> AuditReport:
    with db.transaction(write=False) as tx:
        leases = tx.run("audit_leases")
        batches = tx.run("audit_batches")
        ranges = tx.run("audit_ranges")
        groups = tx.run("audit_groups")
        lanes = tx.run("audit_lanes")
        snapshots = tx.run("audit_snapshots")
        claims = tx.run("audit_claims")
    report = AuditReport(
        leases=len(leases),
        batches=len(batches),
        ranges=len(ranges),
        lanes=len(lanes),
        snapshots=len(snapshots),
    )
    intervals = _range_leases(leases, ttl, report.problems)
    _one_holder_per_range(leases, intervals, report.problems)
    _group_cap(leases, intervals, max_per_group, report.problems)
    _batches(batches, ranges, intervals, report.problems)
    _tiling(groups, ranges, report.problems)
    lane_intervals = _lanes(lanes, ttl, report.problems)
    _snapshots(snapshots, batches, lane_intervals, report.problems)
    _claims(claims, report.problems)
    _one_grant_per_claim(leases, intervals, lanes, lane_intervals, report.problems)
    return report


def _one_grant_per_claim(
    leases: list[Row],
    intervals: dict[tuple[int, int], tuple[float, float]],
    lanes: list[Row],
    lane_intervals: dict[tuple[int, str, int], tuple[float, float]],
    problems: list[str],
) -> None:
    by_claim: dict[tuple[int, str], list[tuple[float, float, str]]] = defaultdict(list)
    for lease in leases:
        if lease["claim"] is not None:
            start, end = intervals[(int(lease["range_id"]), int(lease["epoch"]))]
            what = f"range {lease['range_id']} epoch {lease['epoch']}"
            by_claim[(int(lease["node_id"]), str(lease["claim"]))].append((start, end, what))
    for lane in lanes:
        if lane["claim"] is not None:
            key = (int(lane["group_id"]), str(lane["lane"]), int(lane["epoch"]))
            start, end = lane_intervals[key]
            what = f"group {key[0]} {key[1]} lane epoch {key[2]}"
            by_claim[(int(lane["node_id"]), str(lane["claim"]))].append((start, end, what))
    for (node_id, claim), spans in by_claim.items():
        spans.sort()
        live_until, holder = spans[0][1], spans[0][2]  # the grant live longest so far
        for start, end, current in spans[1:]:
            if start + EPSILON < live_until:
                problems.append(
                    f"node {node_id} claim {claim}: {current} granted at {start:.3f} while {holder}, "
                    f"granted under the same tag, was live until {live_until:.3f}"
                )
            if end > live_until:
                live_until, holder = end, current


def _claims(grants: list[Row], problems: list[str]) -> None:
    for grant in grants:
        if float(grant["granted_at"]) > float(grant["revoked_at"]) + EPSILON:
            problems.append(
                f"{grant['kind']} {grant['what']} epoch {grant['epoch']} granted to node {grant['node_id']} "
                f"at {float(grant['granted_at']):.3f} under claim {grant['claim']}, revoked at "
                f"{float(grant['revoked_at']):.3f}"
            )


def _range_leases(
    leases: list[Row], ttl: float, problems: list[str]
) -> dict[tuple[int, int], tuple[float, float]]:
    """Each range lease's live interval."""
    intervals: dict[tuple[int, int], tuple[float, float]] = {}
    for lease in leases:
        start = float(lease["granted_at"])
        if lease["ended_at"] is not None:
            end = float(lease["ended_at"])
        elif int(lease["epoch"]) == int(lease["range_epoch"]) and lease["range_status"] == "leased":
            end = float(lease["range_heartbeat"]) + ttl
        else:
            problems.append(
                f"range {lease['range_id']} epoch {lease['epoch']}: lease never ended, yet superseded"
            )
            end = start
        intervals[(int(lease["range_id"]), int(lease["epoch"]))] = (start, end)
    return intervals


def _one_holder_per_range(
    leases: list[Row], intervals: dict[tuple[int, int], tuple[float, float]], problems: list[str]
) -> None:
    by_range: dict[int, list[Row]] = defaultdict(list)
    for lease in leases:
        by_range[int(lease["range_id"])].append(lease)
    for range_id, grants in by_range.items():
        for previous, current in itertools.pairwise(grants):
            _, prev_end = intervals[(range_id, int(previous["epoch"]))]
            granted = float(current["granted_at"])
            if granted + EPSILON < prev_end:
                problems.append(
                    f"range {range_id}: epoch {current['epoch']} granted at {granted:.3f} while epoch "
                    f"{previous['epoch']} was live until {prev_end:.3f}"
                )


def _group_cap(
    leases: list[Row],
    intervals: dict[tuple[int, int], tuple[float, float]],
    max_per_group: int,
    problems: list[str],
) -> None:
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
                problems.append(
                    f"group {group_id}: range {range_id} epoch {epoch} granted with {live} other live leases"
                )


def _batches(
    batches: list[Row],
    ranges: list[Row],
    intervals: dict[tuple[int, int], tuple[float, float]],
    problems: list[str],
) -> None:
    """Contiguous, each once, each within its lease's live interval and the expiry its write found."""
    batches_of: dict[int, list[Row]] = defaultdict(list)
    for batch in batches:
        batches_of[int(batch["range_id"])].append(batch)
        key = (int(batch["range_id"]), int(batch["epoch"]))
        stored = float(batch["stored_at"])
        span = f"batch {batch['from_id']}–{batch['to_id']} of epoch {key[1]}"
        if batch["lease_expires_at"] is not None and stored > float(batch["lease_expires_at"]) + EPSILON:
            problems.append(
                f"range {key[0]}: {span} stored at {stored:.3f}, after its lease had lapsed "
                f"at {float(batch['lease_expires_at']):.3f}"
            )
        if key not in intervals:
            problems.append(f"range {key[0]}: batch stored under epoch {key[1]}, which was never granted")
            continue
        start, end = intervals[key]
        if not start - EPSILON <= stored <= end + EPSILON:
            problems.append(
                f"range {key[0]}: {span} stored at {stored:.3f}, outside its lease {start:.3f}–{end:.3f}"
            )
    for row in ranges:
        range_id = int(row["id"])
        expected = int(row["start_id"])
        for batch in batches_of.get(range_id, []):
            if int(batch["from_id"]) != expected:
                problems.append(
                    f"range {range_id}: batch from {batch['from_id']} where {expected} was expected"
                )
            expected = int(batch["to_id"]) + 1
        if expected != int(row["next_id"]):
            problems.append(
                f"range {range_id}: batches cover up to {expected - 1}, resume point is {row['next_id']}"
            )
        if row["status"] == "done" and int(row["next_id"]) != int(row["end_id"]) + 1:
            problems.append(f"range {range_id} is done at {row['next_id']}, short of its end {row['end_id']}")


def _tiling(groups: list[Row], ranges: list[Row], problems: list[str]) -> None:
    """Each group's ranges, in article order, tile its planned span exactly."""
    by_group: dict[int, list[Row]] = defaultdict(list)
    for row in ranges:
        by_group[int(row["group_id"])].append(row)
    for group in groups:
        own = by_group.get(int(group["id"]), [])
        if group["tail_next"] is None:
            if own:
                problems.append(f"group {group['name']}: {len(own)} ranges, but nothing planned")
            continue
        expected, last = int(group["history_low"]), int(group["tail_next"]) - 1
        for row in own:  # ordered by start
            start, end = int(row["start_id"]), int(row["end_id"])
            if start != expected:
                what = "a gap" if start > expected else "an overlap"
                problems.append(
                    f"group {group['name']}: {what} before range {row['id']} ({start}–{end}); "
                    f"{expected} was the next article to plan"
                )
            expected = max(expected, end + 1)
        if expected - 1 != last:
            problems.append(
                f"group {group['name']}: its ranges end at {expected - 1}, its planned span at {last}"
            )


def _lanes(
    lanes: list[Row], ttl: float, problems: list[str]
) -> dict[tuple[int, str, int], tuple[float, float]]:
    """Each lane lease's live interval; one holder at a time per lane."""
    intervals: dict[tuple[int, str, int], tuple[float, float]] = {}
    by_lane: dict[tuple[int, str], list[tuple[float, float, int]]] = defaultdict(list)
    for lane in lanes:
        key = (int(lane["group_id"]), str(lane["lane"]), int(lane["epoch"]))
        start = float(lane["granted_at"])
        if lane["ended_at"] is not None:
            end = float(lane["ended_at"])
        elif int(lane["epoch"]) == int(lane["lane_epoch"]) and lane["lane_node"] is not None:
            end = float(lane["lane_heartbeat"]) + ttl
        else:
            problems.append(f"group {key[0]} {key[1]} lane epoch {key[2]}: never ended, yet superseded")
            end = start
        intervals[key] = (start, end)
        by_lane[key[:2]].append((start, end, key[2]))
    for (group_id, lane_name), spans in by_lane.items():
        for (_, prev_end, prev_epoch), (start, _, epoch) in itertools.pairwise(
            sorted(spans, key=lambda s: s[2])
        ):
            if start + EPSILON < prev_end:
                problems.append(
                    f"group {group_id} {lane_name} lane: epoch {epoch} claimed at {start:.3f} while epoch "
                    f"{prev_epoch} was live until {prev_end:.3f}"
                )
    return intervals


def _snapshots(
    snapshots: list[Row],
    batches: list[Row],
    lane_intervals: dict[tuple[int, str, int], tuple[float, float]],
    problems: list[str],
) -> None:
    """Snapshots within their lane leases; every lane batch preceded by its holder's snapshot."""
    recorded: dict[tuple[int, str, int, int], float] = {}
    # The first epoch logged per lane: a lane claimed before its claims were logged (migration 0007)
    # has snapshots under epochs no log names.
    first_logged: dict[tuple[int, str], int] = {}
    for group_id, lane_name, epoch in lane_intervals:
        first_logged[(group_id, lane_name)] = min(epoch, first_logged.get((group_id, lane_name), epoch))
    for snapshot in snapshots:
        key = (int(snapshot["group_id"]), str(snapshot["lane"]), int(snapshot["epoch"]))
        at = float(snapshot["recorded_at"])
        where = f"group {key[0]} {key[1]} lane epoch {key[2]}: snapshot at {snapshot['next']}"
        if at > float(snapshot["lease_expires_at"]) + EPSILON:
            problems.append(f"{where} recorded at {at:.3f}, after the lane had lapsed")
        interval = lane_intervals.get(key)
        if interval is None:
            if key[2] >= first_logged.get(key[:2], key[2] + 1):
                problems.append(f"{where} recorded under an epoch never claimed")
        elif not interval[0] - EPSILON <= at <= interval[1] + EPSILON:
            problems.append(
                f"{where} recorded at {at:.3f}, outside the lane's lease {interval[0]:.3f}–{interval[1]:.3f}"
            )
        chained = (*key, int(snapshot["next"]))
        recorded[chained] = min(recorded.get(chained, at), at)
    for batch in batches:
        if batch["lane_epoch"] is None:
            continue
        lane = lane_of(int(batch["priority"]))
        chain = (int(batch["group_id"]), lane, int(batch["lane_epoch"]), int(batch["to_id"]) + 1)
        before = recorded.get(chain)
        if before is None or before > float(batch["stored_at"]) + EPSILON:
            problems.append(
                f"range {batch['range_id']}: batch {batch['from_id']}–{batch['to_id']} of a {lane} lane "
                f"(epoch {batch['lane_epoch']}) stored with no snapshot of that holder standing at "
                f"{batch['to_id'] + 1} before it: the lane's next holder would resume with an empty window"
            )

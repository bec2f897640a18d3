"""Group-lane workers (``usenet-indexer edge --lane history|tail``; seed 002, "window indexing").

A lane worker holds one group's lane, takes its ranges in article order and keeps a window of the
releases still open across range boundaries, posting a release once it is complete (or past the
window's horizon) instead of re-posting its fragments at every batch.

Order at a range's end, which is what makes a takeover exact:
1. the window absorbs the range's one batch; its snapshot, standing at the range's end + 1, is PUT;
2. the batch (the releases done) is posted, moving the range's resume point;
3. the range is finished.
A holder that dies between 1 and 2 leaves the range's resume point at its start and a snapshot ahead
of it; the coordinator keeps the snapshot before too, and the next holder asks for the one standing
at its range's resume point. One batch per range (no batch in between) keeps resume points and
snapshots on the same boundaries.

A lane with nothing left to index is given up after its window is flushed (every open release posted
through the coordinator, and an empty window recorded), so no release waits in a snapshot nobody reads.
"""

from __future__ import annotations

import random
import threading
import time

from usenet_indexer.edge.client import ApiError, Lease, NodeClient
from usenet_indexer.edge.worker import CorruptChunk, EdgeWorker
from usenet_indexer.indexing import Batch, RangeIndexer
from usenet_indexer.indexing.window import Window, WindowError
from usenet_indexer.leases.errors import LeaseLost
from usenet_indexer.logs import get_logger
from usenet_indexer.wire.batch import encode_batch

log = get_logger(__name__)

LANE_HEARTBEAT_SECONDS = 10.0
WHOLE_RANGE = 2**62


class LaneHeartbeat:
    """Keeps the lane lease alive while its holder works through a range."""

    def __init__(self, client: NodeClient, group_id: int, lane: str, epoch: int, every: float) -> None:
        self.lost: LeaseLost | None = None
        self._stop = threading.Event()

        def beat() -> None:
            while not self._stop.wait(every):
                try:
                    client.group_call(group_id, lane, epoch, "heartbeat")
                except LeaseLost as lost:
                    self.lost = lost
                    return
                except (ApiError, OSError) as error:
                    log.warning("lane.heartbeat_failed", group=group_id, error=str(error))

        self._thread = threading.Thread(target=beat, name=f"lane-{group_id}-{lane}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def run_lanes(worker: EdgeWorker, lane: str, max_ranges: int | None = None) -> int:
    """The lane loop: hold a lane, work its ranges in order, give it up when nothing is left."""
    client = worker.client
    ranges = 0
    while not worker.stop.is_set() and (max_ranges is None or ranges < max_ranges):
        try:
            held = client.lease_group(lane)
        except (ApiError, OSError) as error:
            log.warning("lane.lease_failed", error=str(error))
            held = None
        if held is None:
            if max_ranges is not None:
                break
            worker.stop.wait(worker.idle_seconds * random.uniform(0.5, 1.0))
            continue
        group_id, group, epoch = (
            int(held["group"]["id"]),
            str(held["group"]["name"]),
            int(held["group"]["epoch"]),
        )
        log.info("lane.held", group=group, lane=lane, epoch=epoch)
        # A quarter of the lane's TTL (the coordinator says it), at most LANE_HEARTBEAT_SECONDS.
        ttl = float(held["group"].get("ttl", 4 * LANE_HEARTBEAT_SECONDS))
        heartbeat = LaneHeartbeat(client, group_id, lane, epoch, min(LANE_HEARTBEAT_SECONDS, ttl / 4))
        window: Window | None = None
        exhausted = False
        try:
            while not worker.stop.is_set() and (max_ranges is None or ranges < max_ranges):
                if heartbeat.lost is not None:
                    raise heartbeat.lost
                lease = client.next_range(group_id, lane, epoch)
                if lease is None:
                    exhausted = True
                    break
                ranges += 1
                if window is None or window.position != lease.next:
                    window = restore_window(client, group_id, group, lane, epoch, lease)
                window = run_lane_range(worker, lease, window, group_id, lane, epoch)
            if exhausted and window is not None:
                flush(client, group_id, lane, epoch, window)
            client.group_call(group_id, lane, epoch, "release")
            log.info("lane.released", group=group, lane=lane)
        except LeaseLost as lost:
            log.warning("lane.lost", group=group, lane=lane, reason=lost.reason)
            client.forget_lane(group_id, lane, epoch)
        finally:
            heartbeat.stop()
    return ranges


def restore_window(
    client: NodeClient, group_id: int, group: str, lane: str, epoch: int, lease: Lease
) -> Window:
    """The window standing at the range's resume point: from the lane's snapshot there, or empty (the
    lane's first range, or ranges before it indexed by plain range leases, which post everything)."""
    snapshot = client.get_snapshot(group_id, lane, epoch, at=lease.next)
    if snapshot is None:
        log.info("lane.window_new", group=group, lane=lane, at=lease.next)
        return Window(group, position=lease.next)
    try:
        window = Window.restore(snapshot[1])
    except WindowError as error:
        log.error("lane.snapshot_unreadable", group=group, lane=lane, error=str(error))
        return Window(group, position=lease.next)
    log.info(
        "lane.window_restored", group=group, lane=lane, at=window.position, open=len(window.open_releases)
    )
    return window


def run_lane_range(
    worker: EdgeWorker, lease: Lease, window: Window, group_id: int, lane: str, epoch: int
) -> Window | None:
    """One range of the lane; the window after it, or None when it must be fetched again."""
    client = worker.client
    began = time.monotonic()
    batches: list[Batch] = []
    try:
        indexer = RangeIndexer(
            lease.group, lease.start, lease.end, lease.next, worker.rules(lease.rule_version)
        )
        reached_end = worker._index(
            lease, indexer, batches.append, batch_articles=WHOLE_RANGE, emit_partial=False
        )
        if not reached_end:
            client.call(lease.range_id, lease.epoch, "release")
            return window  # nothing absorbed: the window still stands at the range's resume point
        (batch,) = batches
        done = window.absorb(batch)
        client.put_snapshot(group_id, lane, epoch, window.position, window.snapshot())
        result = client.batch(lease.range_id, lease.epoch, encode_batch(done, lease.range_id, lease.epoch))
        client.call(lease.range_id, lease.epoch, "finish")
        log.info(
            "lane.range_done",
            range=lease.range_id,
            headers=batch.headers,
            posted=len(done.fragments),
            open=len(window.open_releases),
            seconds=round(time.monotonic() - began, 1),
            stored=result.get("releases"),
        )
        return window
    except LeaseLost as lost:
        log.warning("range.lease_lost", range=lease.range_id, reason=lost.reason)
        client.forget(lease)
    except CorruptChunk as corrupt:
        log.warning("range.corrupt_chunk", range=lease.range_id, chunk=corrupt.first)
        try:
            client.corrupt(lease.range_id, lease.epoch, corrupt.first, corrupt.crc)
        except (LeaseLost, ApiError) as error:
            log.warning("range.corrupt_report_failed", range=lease.range_id, error=str(error))
    except Exception as error:
        log.error("range.failed", range=lease.range_id, error=f"{type(error).__name__}: {error}")
        try:
            client.call(lease.range_id, lease.epoch, "release")
        except (LeaseLost, ApiError, OSError) as release_error:
            log.warning("range.release_failed", range=lease.range_id, error=str(release_error))
    return None  # the window may be ahead of what was stored: fetch the snapshot again


def flush(client: NodeClient, group_id: int, lane: str, epoch: int, window: Window) -> None:
    """Post every release still open and record an empty window at the same article."""
    open_releases = window.flush()
    if not open_releases:
        return
    at = window.position
    batch = Batch(
        from_id=at - 1,
        to_id=at - 1,
        headers=0,
        malformed={},
        gaps=0,
        undated=0,
        unmatched=0,
        fragments=open_releases,
        candidates=(),
    )
    client.flush_lane(group_id, lane, epoch, at, encode_batch(batch, 0, epoch))
    log.info("lane.flushed", group=group_id, lane=lane, releases=len(open_releases), at=at)

"""A worker killed with SIGKILL mid-range under a supervisor (issue 17): ``run --exit-when-done`` and
``edge --processes 2``, on SQLite and on PostgreSQL. Its leases are given back at once by its
supervisor — the lease TTL is 600 s here, so a test that waited for it would time out — the range is
leased again and resumed from its resume point, and every article is indexed exactly once: the lease
audit, and the catalog and header counts against a run (or a posting) never interrupted.

Under ``edge --processes`` the children share one node token: only the dead child's leases may be
given back, never its sibling's.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import time
from pathlib import Path

import pytest

from tests.e2e.processes import (
    Coordinator,
    Worker,
    child,
    environment,
    free_port,
    reaped,
    settings_env,
    supervised_by,
    wait_for,
)
from tests.e2e.test_run import add_groups, catalog_and_audit, finish, start_run
from tests.support.generated import expected_catalog, posting, spool_held, spool_posting, stored_catalog
from tests.support.store import query
from usenet_indexer.coordinator.wiring import open_services
from usenet_indexer.db import Database, connect
from usenet_indexer.leases.audit import audit
from usenet_indexer.newsservers.fake_server import Script
from usenet_indexer.newsservers.sample_server import SampleFeed, SampleServer, sample_groups
from usenet_indexer.settings import Settings

pytestmark = pytest.mark.slow

TTL = 600.0  # far longer than the test: recovery must not wait for it
PROMPT_SECONDS = 5.0  # a dead worker's leases are given back within this (measured: well under 1 s)
STORES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def held_by(pid: int) -> set[tuple[int, int]]:
    """The (range, epoch) pairs a supervised worker's held-leases file names (edge/held.py)."""
    path = environment(pid).get("EDGE_HELD_FILE")
    if not path:
        return set()
    try:
        body = json.loads(Path(path).read_bytes())
    except (OSError, ValueError):
        return set()
    return {(int(r), int(e)) for r, e in body["ranges"]}


def kill_asking(db: Database, supervisor: int, slot: int, timeout: float = 60) -> tuple[str, bool]:
    """SIGKILL the supervisor's ``slot`` child the moment its file names a claim tag (a lease request
    sent, its answer not read), then wait until nothing is left leased under that tag: the grant, if
    it landed, given back by the supervisor (never after the TTL). The tag, and whether a grant
    landed under it."""
    deadline = time.monotonic() + timeout
    pid = child(supervisor, slot)
    path = environment(pid).get("EDGE_HELD_FILE") if pid is not None else None
    assert pid is not None and path, "no worker in the slot"
    claims: list[str] = []
    while not claims:  # read often: a request is answered in milliseconds
        assert time.monotonic() < deadline, "the worker never asked for a lease"
        with contextlib.suppress(OSError, ValueError):
            claims = json.loads(Path(path).read_bytes()).get("claims", [])
    # A few milliseconds for the request to reach the coordinator (killed at once, it never did);
    # the answer may have been read meanwhile: then its lease is in the file, given back as such.
    time.sleep(random.uniform(0.002, 0.008))
    os.kill(pid, signal.SIGKILL)
    killed_at = time.monotonic()
    (claim,) = claims
    rows: list[dict[str, object]] = []
    while time.monotonic() - killed_at < PROMPT_SECONDS:
        rows = query(db, "SELECT id, epoch, status FROM ranges WHERE claim = :c", {"c": claim})
        if all(r["status"] != "leased" for r in rows):
            break
        time.sleep(0.02)
    assert all(r["status"] != "leased" for r in rows), f"a grant under {claim} still held: {rows}"
    for r in rows:  # granted after all: given back, not expired
        assert lease_end(db, int(str(r["id"])), int(str(r["epoch"]))) == "reclaimed"
    return claim, bool(rows)


def lease_end(db: Database, range_id: int, epoch: int) -> str | None:
    rows = query(
        db,
        "SELECT end_reason FROM lease_log WHERE range_id = :r AND epoch = :e AND ended_at IS NOT NULL",
        {"r": range_id, "e": epoch},
    )
    return str(rows[0]["end_reason"]) if rows else None


def mid_range(db: Database, pairs: set[tuple[int, int]]) -> tuple[int, int] | None:
    """One of ``pairs`` still leased at that epoch with a batch stored and articles left."""
    for range_id, epoch in sorted(pairs):
        rows = query(
            db,
            "SELECT 1 FROM ranges WHERE id = :r AND epoch = :e AND status = 'leased' "
            "AND next_id > start_id AND next_id <= end_id",
            {"r": range_id, "e": epoch},
        )
        if rows:
            return range_id, epoch
    return None


def resumed_at(db: Database, range_id: int, epoch: int) -> tuple[int, int]:
    """Where the killed lease's batches left the range, and where the next epoch's first batch began."""
    left = query(
        db,
        "SELECT max(to_id) AS to_id FROM batch_log WHERE range_id = :r AND epoch = :e",
        {"r": range_id, "e": epoch},
    )[0]["to_id"]
    began = query(
        db,
        "SELECT min(from_id) AS from_id FROM batch_log WHERE range_id = :r AND epoch > :e",
        {"r": range_id, "e": epoch},
    )[0]["from_id"]
    return int(left) + 1, int(began)


def kill_mid_range(db: Database, supervisor: int, slot: int, timeout: float = 90) -> tuple[int, int, float]:
    """SIGKILL the supervisor's ``slot`` child while it holds a range in its middle; the lease killed
    and how long its give-back took (seconds from the kill to the lease log's end).

    A kill can land just after the child sent its range's last batch: the coordinator then finishes
    the lease (seen in CI on PostgreSQL), and there is nothing to give back. That kill did not test
    recovery, so the restarted child is killed in turn until one lands in mid-range."""
    deadline = time.monotonic() + timeout
    while True:
        while True:
            assert time.monotonic() < deadline, "the worker never held a range in its middle"
            pid = child(supervisor, slot)
            target = mid_range(db, held_by(pid)) if pid is not None else None
            if pid is not None and target is not None:
                break
            time.sleep(0.02)
        killed_at = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        while (end := lease_end(db, *target)) is None:
            assert time.monotonic() - killed_at < PROMPT_SECONDS, f"lease {target} not given back"
            time.sleep(0.02)
        took = time.monotonic() - killed_at

        def restarted(killed: int = pid) -> bool:  # at once: a new child in the slot
            return child(supervisor, slot) not in (None, killed)

        wait_for(restarted, PROMPT_SECONDS, "the worker's restart")
        if end == "finished":
            continue
        assert end == "reclaimed"
        return target[0], target[1], took


def same_as_uninterrupted(
    recovered: str, reference: str, data_dir: Path, news_port: int, headers: object
) -> None:
    """An uninterrupted ``run`` of the feed into ``reference``: the recovered catalog equals its catalog
    (both audits clean) and the ranges counted the same ``headers``."""
    log = data_dir.parent / "reference.log"
    with reaped(start_run(reference, data_dir, news_port, log, "--exit-when-done")) as run:
        finish(run, log, 240)
    resumed, expected = catalog_and_audit(recovered, ttl=TTL), catalog_and_audit(reference)
    assert len(resumed) == len(expected) > 100
    assert resumed == expected
    db = connect(reference)
    try:
        assert query(db, "SELECT sum(headers) AS n FROM ranges")[0]["n"] == headers
    finally:
        db.close()


@pytest.fixture(scope="module")
def feed() -> SampleFeed:
    return SampleFeed(sample_groups(0.15), block_articles=2_000)


@pytest.mark.parametrize("store", STORES)
def test_a_worker_killed_under_run_is_recovered_in_seconds(
    store: str, request: pytest.FixtureRequest, tmp_path: Path, feed: SampleFeed
) -> None:
    if store == "sqlite":
        urls = [f"sqlite:///{tmp_path / name}.db" for name in ("killed", "reference")]
    else:
        template = request.getfixturevalue("pg_template")
        contexts = [template.database(), template.database()]
        urls = [context.__enter__() for context in contexts]
        request.addfinalizer(lambda: [context.__exit__(None, None, None) for context in contexts])
    killed, reference = urls
    for url, folder in ((killed, "a"), (reference, "b")):
        add_groups(url, tmp_path / folder, feed)

    # Overview replies a little late: the workers wait in mid-range for chunks, where the kill finds one.
    with SampleServer(feed, script=Script(reply_delay=0.25)) as slow:
        log = tmp_path / "killed.log"
        started = start_run(killed, tmp_path / "a", slow.port, log, "--exit-when-done", lease_ttl_seconds=TTL)
        db = connect(killed)
        try:
            with reaped(started) as run:
                range_id, epoch, took = kill_mid_range(db, run.pid, slot=1)
                finish(run, log, 240)
            left, began = resumed_at(db, range_id, epoch)
            ends = {str(r["end_reason"]) for r in query(db, "SELECT DISTINCT end_reason FROM lease_log")}
            headers = query(db, "SELECT sum(headers) AS n FROM ranges")[0]["n"]
        finally:
            db.close()
    assert took < PROMPT_SECONDS
    assert began == left, "the range was not resumed at its resume point"
    assert "expired" not in ends  # nothing waited out the TTL
    output = log.read_text()
    assert "all caught up" in output
    assert "edge.leases_given_back" in output

    with SampleServer(feed) as fast:
        same_as_uninterrupted(killed, reference, tmp_path / "b", fast.port, headers)


def test_a_run_killed_outright_is_resumed_at_once_by_the_next(tmp_path: Path, feed: SampleFeed) -> None:
    """``run`` SIGKILLed mid-range (the OOM killer, a power cut): its workers die with it and its loops
    stop unreleased. The next ``run`` gives its worker slots' leases back at once (their tokens are
    replaced: nobody can use them) and takes the loops over from the dead process at once, where it
    waited out both TTLs: a 12 s job took 126 s (issue 17). The TTLs here are 600 s: waiting for either
    fails the test."""
    killed, reference = (f"sqlite:///{tmp_path / name}.db" for name in ("killed", "reference"))
    for url, folder in ((killed, "a"), (reference, "b")):
        add_groups(url, tmp_path / folder, feed)
    ttls = {"lease_ttl_seconds": TTL, "ownership_ttl_seconds": TTL}
    with SampleServer(feed, script=Script(reply_delay=0.25)) as slow:
        log = tmp_path / "killed.log"
        db = connect(killed)
        try:
            with reaped(start_run(killed, tmp_path / "a", slow.port, log, **ttls)) as first:
                # Killed mid-probe too: its probes stayed "working" ten minutes (catalog/probe.py).
                wait_for(
                    lambda: bool(
                        query(db, "SELECT 1 FROM ranges WHERE status = 'leased' AND next_id > start_id")
                        and query(db, "SELECT 1 FROM probe_queue WHERE status = 'working'")
                    ),
                    90,
                    "a range leased with a batch stored, and a probe working",
                )
                first.kill()
                first.wait(10)
            wait_for(lambda: not supervised_by(first.pid), 30, "the killed run's workers to exit")
            leased = query(db, "SELECT id, epoch FROM ranges WHERE status = 'leased'")
            dead = {(int(r["id"]), int(r["epoch"])) for r in leased}
        finally:
            db.close()
    assert dead

    with SampleServer(feed) as fast:
        log = tmp_path / "resumed.log"
        with reaped(start_run(killed, tmp_path / "a", fast.port, log, "--exit-when-done", **ttls)) as second:
            finish(second, log, 240)
        output = log.read_text()
        assert "run.earlier_leases_given_back" in output
        db = connect(killed)
        try:
            # Given back; or finished, when the dead worker had stored its range's last batch.
            assert {lease_end(db, *lease) for lease in dead} <= {"reclaimed", "finished"}
            ends = {str(r["end_reason"]) for r in query(db, "SELECT DISTINCT end_reason FROM lease_log")}
            headers = query(db, "SELECT sum(headers) AS n FROM ranges")[0]["n"]
        finally:
            db.close()
        assert "expired" not in ends
        same_as_uninterrupted(killed, reference, tmp_path / "b", fast.port, headers)


GROUP = "alt.binaries.recovery"
SIZES = {
    "lease_ttl_seconds": TTL,
    "range_articles": 2_000,
    "chunk_articles": 250,
    "era_articles": 1_000_000,
    "stream_keepalive_seconds": 0.5,
}


def test_a_child_killed_under_edge_processes_gives_back_only_its_own_leases(
    database_url: str, tmp_path: Path
) -> None:
    settings = Settings(database_url=database_url, data_dir=tmp_path / "data", **SIZES)  # type: ignore[arg-type]
    services = open_services(settings, migrate=False)
    services.rules.ensure_default()
    generated = posting(GROUP, releases=400, seed=17)
    # Every range's last chunk held back (a prefetcher running late): both children wait in mid-range.
    held = spool_posting(services, GROUP, generated, hold_back_last=True)
    token = services.nodes.add("edge-shared")[1]
    total = int(query(services.db, "SELECT count(*) AS n FROM ranges")[0]["n"])
    env = settings_env(database_url, tmp_path / "data", **SIZES)
    coordinator = Coordinator(env, free_port(), tmp_path / "coordinator.log")
    coordinator.start()
    edge = Worker(
        env,
        coordinator.url,
        token,
        tmp_path / "edge.log",
        "--processes",
        "2",
        "--batch-articles",
        "250",
        "--idle-seconds",
        "0.3",
    )
    try:

        def both_mid_range() -> bool:
            pids = [child(edge.process.pid, slot) for slot in (1, 2)]
            return all(p is not None and mid_range(services.db, held_by(p)) for p in pids)

        wait_for(both_mid_range, 60, "both children to hold a range in its middle")
        sibling_pid = child(edge.process.pid, 2)
        assert sibling_pid is not None
        sibling = mid_range(services.db, held_by(sibling_pid))
        assert sibling is not None
        range_id, epoch, took = kill_mid_range(services.db, edge.process.pid, slot=1)
        # The sibling (same node, same token) keeps its lease.
        row = query(services.db, "SELECT status, epoch FROM ranges WHERE id = :r", {"r": sibling[0]})[0]
        assert (row["status"], int(row["epoch"])) == ("leased", sibling[1])
        assert lease_end(services.db, *sibling) is None
        # The released range is leased again (by the restarted child) without a takeover.
        wait_for(
            lambda: bool(
                query(
                    services.db,
                    "SELECT 1 FROM lease_log WHERE range_id = :r AND epoch > :e AND NOT took_over",
                    {"r": range_id, "e": epoch},
                )
            ),
            PROMPT_SECONDS * 2,
            "the released range to be leased again",
        )
        spool_held(services, held)
        # Killed again while asking for its next lease: a grant it never read is given back by its
        # tag (or never made), not held for the TTL beside the sibling's leases on the same node.
        _, landed = kill_asking(services.db, edge.process.pid, slot=1)
        print(f"killed while asking: a grant landed under its tag: {landed}")
        wait_for(
            lambda: (
                int(query(services.db, "SELECT count(*) AS n FROM ranges WHERE status = 'done'")[0]["n"])
                == total
            ),
            120,
            "every range to finish",
        )
        assert edge.stop() == 0, edge.output()[-3000:]
    finally:
        if edge.process.poll() is None:
            edge.stop()
        coordinator.stop()
    try:
        assert took < PROMPT_SECONDS
        left, began = resumed_at(services.db, range_id, epoch)
        assert began == left
        ends = {str(r["end_reason"]) for r in query(services.db, "SELECT DISTINCT end_reason FROM lease_log")}
        assert "reclaimed" in ends and "expired" not in ends
        assert audit(services.db, ttl=TTL, max_per_group=2).problems == []
        assert stored_catalog(services.db) == expected_catalog(GROUP, generated)
        headers = query(services.db, "SELECT sum(headers) AS n FROM ranges")[0]["n"]
        assert headers == len(generated.articles)
    finally:
        services.close()
    assert "edge.leases_given_back" in edge.output()


def lanes_held_by(pid: int) -> set[tuple[int, str, int]]:
    """The (group, lane, epoch) a supervised worker's held-leases file names."""
    path = environment(pid).get("EDGE_HELD_FILE")
    try:
        body = json.loads(Path(path).read_bytes()) if path else {"lanes": []}
    except (OSError, ValueError):
        return set()
    return {(int(g), str(lane), int(e)) for g, lane, e in body["lanes"]}


def test_a_lane_holder_killed_under_edge_processes_hands_its_lane_over_at_once(
    database_url: str, tmp_path: Path
) -> None:
    """``edge --processes 2 --lane history``: the holder of the group's lane is killed while it waits in
    a range; its range and its lane are given back at once, and the next holder (the sibling, or the
    restarted child) resumes from the window's snapshot."""
    sizes = {**SIZES, "chunk_articles": 500}
    settings = Settings(database_url=database_url, data_dir=tmp_path / "data", **sizes)  # type: ignore[arg-type]
    services = open_services(settings, migrate=False)
    services.rules.ensure_default()
    group = "alt.binaries.recovery.lane"
    generated = posting(group, releases=200, seed=9)
    held = spool_posting(services, group, generated, hold_back_last=True)
    # The lane's first ranges spooled whole: the holder gets through them (snapshots PUT) and waits in
    # its third. History ranges are planned downwards: the oldest have the highest ids.
    spool_held(services, {r: held.pop(r) for r in sorted(held)[-2:]})
    token = services.nodes.add("edge-lanes")[1]
    total = int(query(services.db, "SELECT count(*) AS n FROM ranges")[0]["n"])
    env = settings_env(database_url, tmp_path / "data", **sizes)
    coordinator = Coordinator(env, free_port(), tmp_path / "coordinator.log")
    coordinator.start()
    args = ("--processes", "2", "--lane", "history", "--idle-seconds", "0.3")
    edge = Worker(env, coordinator.url, token, tmp_path / "edge.log", *args)

    def done() -> int:
        return int(query(services.db, "SELECT count(*) AS n FROM ranges WHERE status = 'done'")[0]["n"])

    def holder() -> tuple[int, tuple[int, str, int], tuple[int, int]] | None:
        """The pid of the lane's holder, its lane, and the range it waits in."""
        for slot in (1, 2):
            pid = child(edge.process.pid, slot)
            if pid is None:
                continue
            lanes, ranges = lanes_held_by(pid), held_by(pid)
            waiting = [
                r
                for r in ranges
                if query(
                    services.db,
                    "SELECT 1 FROM ranges WHERE id = :r AND epoch = :e AND status = 'leased'",
                    {"r": r[0], "e": r[1]},
                )
            ]
            if lanes and waiting:
                return pid, next(iter(lanes)), waiting[0]
        return None

    try:
        wait_for(lambda: done() >= 2 and holder() is not None, 60, "the lane's holder waiting in a range")
        found = holder()
        assert found is not None
        pid, (group_id, lane, lane_epoch), (range_id, epoch) = found
        killed_at = time.monotonic()
        os.kill(pid, signal.SIGKILL)

        def lane_end() -> str | None:
            rows = query(
                services.db,
                "SELECT end_reason FROM lane_log WHERE group_id = :g AND lane = :l AND epoch = :e "
                "AND ended_at IS NOT NULL",
                {"g": group_id, "l": lane, "e": lane_epoch},
            )
            return str(rows[0]["end_reason"]) if rows else None

        wait_for(lambda: lane_end() is not None, PROMPT_SECONDS, "the lane to be given back")
        took = time.monotonic() - killed_at
        assert (lane_end(), lease_end(services.db, range_id, epoch)) == ("reclaimed", "reclaimed")
        wait_for(
            lambda: bool(
                query(
                    services.db,
                    "SELECT 1 FROM lane_log "
                    "WHERE group_id = :g AND lane = :l AND epoch > :e AND NOT took_over",
                    {"g": group_id, "l": lane, "e": lane_epoch},
                )
            ),
            PROMPT_SECONDS * 2,
            "the lane to be held again",
        )
        spool_held(services, held)
        wait_for(lambda: done() == total, 120, "every range to finish")
        # The last holder finds nothing left and flushes its window (the releases still open).
        wait_for(lambda: "lane.flushed" in edge.output(), 30, "the lane's window to be flushed")
        assert edge.stop() == 0, edge.output()[-3000:]
    finally:
        if edge.process.poll() is None:
            edge.stop()
        coordinator.stop()
    try:
        assert took < PROMPT_SECONDS
        assert audit(services.db, ttl=TTL, max_per_group=2).problems == []
        assert stored_catalog(services.db) == expected_catalog(group, generated)
    finally:
        services.close()
    output = edge.output()
    assert "lane.window_restored" in output and "edge.leases_given_back" in output

"""Loose files joined in the catalog (issue 16), on both stores: per-file random releases indexed by two
edge workers through the node API over several ranges, one release straddling a range boundary, joined
by the grouping loop into one release each once their stretch is indexed; a member indexed again
merges into its release instead of coming back."""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.generated import spool_posting
from tests.support.live import live_coordinator, run_edge_workers
from tests.support.obfuscated import RandomPosting, plan_random, post_random
from tests.support.store import query, services_for
from usenet_indexer.catalog.batch_store import store_batch
from usenet_indexer.catalog.grouping import Grouper
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db import Database, Fenced
from usenet_indexer.edge.client import NodeClient
from usenet_indexer.edge.lanes import restore_window, run_lane_range, run_lanes
from usenet_indexer.edge.worker import EdgeWorker
from usenet_indexer.indexing import RangeIndexer, default_rules, unpack_segments
from usenet_indexer.indexing.grouping import GAP_ARTICLES, GAP_SECONDS, PROPAGATION_SECONDS
from usenet_indexer.indexing.sample import chunk_text, overview_line
from usenet_indexer.leases.audit import audit
from usenet_indexer.leases.ownership import OwnershipFence, OwnershipLeases

GROUP = "alt.binaries.random.names"
RANGE = 1_500


def found(db: Database) -> list[frozenset[str]]:
    with db.transaction(write=False) as tx:
        rows = tx.sql("SELECT segments FROM releases")
    out = [
        frozenset(m for f in unpack_segments(bytes(r["segments"])) for m in f.message_id_list()) for r in rows
    ]
    return sorted(out, key=sorted)


def index_with_workers(services: Services, run: str) -> set[int]:
    """Every planned range indexed by two workers (one range each first, then both at once); the
    nodes that stored batches."""
    prefix = f"edge-{run}"
    run_edge_workers(
        services, batch_articles=400, idle_seconds=0.05, first_ranges=1, timeout=180, node_prefix=prefix
    )
    return {int(r["node_id"]) for r in query(services.db, "SELECT DISTINCT node_id FROM batch_log")}


def test_per_file_random_releases_over_ranges_and_workers_end_as_one_release_each(
    database_url: str, tmp_path: Path
) -> None:
    services = services_for(database_url, tmp_path, range_articles=RANGE, chunk_articles=500)
    services.rules.ensure_default()
    try:
        rng = random.Random(11)
        # Posted a few minutes ago: at the group's end, nothing says yet that no file will follow.
        posting = post_random(
            plan_random(rng, 40, max_parts=25), rng, group=GROUP, first=1, start_time=int(time.time()) - 600
        )
        last_posted = posting.posting.last
        # A release straddles a range boundary (the test means nothing otherwise).
        spans: dict[int, list[int]] = {}
        for a in posting.posting.articles:
            spans.setdefault(a.release, []).append(a.number)
        straddling = [
            r
            for r, n in spans.items()
            if min(n) // RANGE != max(n) // RANGE and not posting.releases[r].named
        ]
        assert straddling

        # Only the posting is planned: the bursts at its end are not final (the group goes on).
        spool_posting(services, GROUP, posting.posting)
        nodes = index_with_workers(services, "a")
        assert len(nodes) == 2
        grouper = Grouper(services.db)
        # Every burst lies within GAP_ARTICLES of the posting's end: none is final yet, each file is
        # still a release of its own.
        assert grouper.run_once().joined == 0
        assert len(found(services.db)) == sum(len(r.files) if not r.named else 1 for r in posting.releases)

        # The group goes on: GAP_ARTICLES more articles (none of them these posters') are indexed.
        posting.posting.last = last_posted + GAP_ARTICLES + 1
        services.groups.plan(GROUP, 1, posting.posting.last)
        spool_rest(services, posting)
        index_with_workers(services, "b")
        second = grouper.run_once()
        assert second.joined > 0
        assert found(services.db) == posting.expected()
        assert grouper.run_once().joined == 0  # nothing left to join, nothing read again

        with services.db.transaction(write=False) as tx:
            rows = tx.sql(
                "SELECT key, file_total, files_seen, complete, segments FROM releases WHERE files_seen > 1"
            )
            aliases = tx.sql("SELECT member_key, release_key FROM release_aliases")
            probes = tx.sql("SELECT release_key, par2_message_id, priority FROM probe_queue")
        joined = {r["key"] for r in rows if r["key"] in {a["release_key"] for a in aliases}}
        assert len(joined) == sum(1 for r in posting.releases if not r.named)
        for row in rows:
            if row["key"] in joined:
                files = unpack_segments(bytes(row["segments"]))
                numbered_0 = any(f.index == 0 for f in files)  # an NFO posted as [0/N]
                assert int(row["files_seen"]) == int(row["file_total"]) + numbered_0 == len(files)
                assert bool(row["complete"])
        # Queued to be named from their bodies; the named releases (their .rar files) for a password.
        assert {p["release_key"] for p in probes if int(p["priority"]) == 0} == joined
        assert not joined & {p["release_key"] for p in probes if int(p["priority"]) == 1}

        # A guid handed out before the join (a feed read meanwhile) finds the joined release.
        member = str(aliases[0]["member_key"])
        hit = services.search.get(member)
        assert hit is not None and hit.guid == aliases[0]["release_key"]

        # A range indexed again (reindex, a corrupt chunk fetched again): its members' fragments merge
        # into the joined releases; none comes back.
        reindex(services, posting, 1, RANGE)
        assert found(services.db) == posting.expected()
        for row in rows:
            stored = query(services.db, "SELECT key FROM releases WHERE key = :k", {"k": row["key"]})
            assert stored

        report = audit(services.db, ttl=services.settings.lease_ttl_seconds, max_per_group=2)
        assert report.problems == []
    finally:
        services.close()


def spool_rest(services: Services, posting: RandomPosting) -> None:
    """Spool the ranges planned since (no articles in them: other posts, deleted or not ours)."""
    from usenet_indexer.articles import chunk_spans
    from usenet_indexer.wire.chunks import deflate_plain

    ranges = query(services.db, "SELECT id, start_id, end_id FROM ranges WHERE status = 'planned'")
    for r in ranges:
        spans = chunk_spans(int(r["start_id"]), int(r["end_id"]), services.settings.chunk_articles)
        for span in spans:
            services.spool.write(int(r["id"]), span, deflate_plain(b""))
        query(
            services.db,
            "UPDATE ranges SET spooled_chunks = :n WHERE id = :id",
            {"n": len(spans), "id": r["id"]},
        )


def reindex(services: Services, posting: RandomPosting, start: int, end: int) -> None:
    lines = {a.number: overview_line(a) for a in posting.posting.articles}
    indexer = RangeIndexer(GROUP, start, end, start, default_rules())
    indexer.add_text(chunk_text([lines[n] for n in range(start, end + 1) if n in lines]), end + 1)
    indexer.finish()
    batch = indexer.take()
    with services.db.transaction() as tx:
        group_id = int(tx.run("group_by_name", {"name": GROUP})[0]["id"])
        store_batch(tx, group_id, GROUP, batch)


def test_a_burst_at_the_groups_end_is_final_once_it_is_old_enough(database_url: str, tmp_path: Path) -> None:
    """Planned up to the group's high watermark and indexed, a burst at the end is joined without
    GAP_ARTICLES more articles once its dates are older than GAP_SECONDS + PROPAGATION_SECONDS; the
    joined release's key is its smallest message-id's, as indexing/grouping.py makes it."""
    services = services_for(database_url, tmp_path)
    try:
        rng = random.Random(5)
        posted = int(time.time()) - 300
        posting = post_random(
            plan_random(rng, 3, posters=("solo@example.com",)), rng, group=GROUP, first=1, start_time=posted
        )
        end = posting.posting.last
        services.groups.add(GROUP)
        reindex(services, posting, 1, end)
        # Every article is stored but no range says so: nothing is final, nothing is joined.
        assert Grouper(services.db).run_once().joined == 0
        services.groups.plan(GROUP, 1, end)  # the high watermark: the posting's last article
        query(services.db, "UPDATE ranges SET status = 'done', next_id = end_id + 1")
        assert Grouper(services.db).run_once().joined == 0  # minutes old: a file may still follow
        latest = max(a.date for a in posting.posting.articles)
        assert Grouper(services.db).pending() == 0
        services.db.move_clock(latest - time.time() + GAP_SECONDS + PROPAGATION_SECONDS + 5)
        loose = sum(len(r.files) for r in posting.releases if not r.named)
        assert Grouper(services.db).pending() == loose  # what `run` waits for before it is done
        done = Grouper(services.db).run_once()
        assert done.joined == sum(1 for r in posting.releases if not r.named)
        assert Grouper(services.db).pending() == 0
        assert found(services.db) == posting.expected()
        with services.db.transaction(write=False) as tx:
            rows = tx.sql(
                "SELECT r.key, r.segments FROM releases r JOIN release_aliases a ON a.release_key = r.key"
            )
        for row in rows:
            files = unpack_segments(bytes(row["segments"]))
            smallest = min(m for f in files for m in f.message_id_list())
            assert row["key"] == group_key_of(smallest)
    finally:
        services.close()


def group_key_of(message_id: str) -> str:
    """indexing/grouping.group_key restated: BLAKE2b-128 of "joined", NUL, the smallest message-id."""
    return hashlib.blake2b(("joined\0" + message_id).encode(), digest_size=16).hexdigest()


def test_a_grouper_that_lost_its_loop_writes_nothing(database_url: str, tmp_path: Path) -> None:
    """Grouping writes under the loop's fence: a coordinator whose lease was taken over joins nothing."""
    services = services_for(database_url, tmp_path)
    try:
        rng = random.Random(9)
        posting = post_random(plan_random(rng, 3, posters=("solo@example.com",)), rng, group=GROUP, first=1)
        end = posting.posting.last + GAP_ARTICLES + 1
        services.groups.add(GROUP)
        reindex(services, posting, 1, end)
        services.groups.plan(GROUP, 1, end)
        query(services.db, "UPDATE ranges SET status = 'done', next_id = end_id + 1")
        first = OwnershipLeases(services.db, "coordinator-1", ttl_seconds=30.0, renew_seconds=10.0)
        second = OwnershipLeases(services.db, "coordinator-2", ttl_seconds=30.0, renew_seconds=10.0)
        assert first.acquire("grouping").ok
        stale = Grouper(services.db, fence=OwnershipFence(first, "grouping"))
        services.db.move_clock(31.0)
        assert second.acquire("grouping").ok
        before = found(services.db)
        with pytest.raises(Fenced):
            stale.run_once()
        assert found(services.db) == before
        assert query(services.db, "SELECT count(*) AS n FROM release_aliases") == [{"n": 0}]
        done = Grouper(services.db, fence=OwnershipFence(second, "grouping")).run_once()
        assert done.joined == sum(1 for r in posting.releases if not r.named)
        assert found(services.db) == posting.expected()
    finally:
        services.close()


def test_loose_files_read_through_a_lane_are_joined_once_flushed(database_url: str, tmp_path: Path) -> None:
    """Read through a group lane, loose files stay in the lane's window (never complete on their own)
    until its horizon or its flush, then reach the catalog and are joined. (That a burst split by the
    horizon is not final while the window holds the rest of it is Settled's unit test: the horizon is
    two million articles.)"""
    services = services_for(database_url, tmp_path, range_articles=100, chunk_articles=50)
    services.rules.ensure_default()
    try:
        rng = random.Random(21)
        posting = post_random(plan_random(rng, 12, max_parts=12), rng, group=GROUP, first=1)
        spool_posting(services, GROUP, posting.posting)  # planned to the high watermark; old dates
        with live_coordinator(services) as url:
            first = EdgeWorker(NodeClient(url, services.nodes.add("lane-a")[1]), idle_seconds=0.05)
            held = first.client.lease_group("history")
            assert held is not None
            group_id, epoch = held["group"]["id"], held["group"]["epoch"]
            lease = first.client.next_range(group_id, "history", epoch)
            assert lease is not None
            restored = restore_window(first.client, group_id, GROUP, "history", epoch, lease)
            window = run_lane_range(first, lease, restored, group_id, "history", epoch)
            assert window is not None and window.open_releases  # loose files held open
            assert Grouper(services.db).run_once().joined == 0
            # The window holds every loose file (only complete named releases were posted).
            assert query(services.db, "SELECT count(*) AS n FROM releases WHERE obfuscated") == [{"n": 0}]
            first.close()
            first.client.close()
            services.db.move_clock(services.settings.lease_ttl_seconds + 1)  # the holder goes silent
            second = EdgeWorker(NodeClient(url, services.nodes.add("lane-b")[1]), idle_seconds=0.05)
            assert run_lanes(second, "history", max_ranges=100) >= 1  # to the end, then flushed
            second.close()
            second.client.close()
        done = Grouper(services.db).run_once()
        assert done.joined == sum(1 for r in posting.releases if not r.named)
        assert found(services.db) == posting.expected()
    finally:
        services.close()


def test_a_cross_posted_burst_waits_for_every_group_it_was_posted_to(
    database_url: str, tmp_path: Path
) -> None:
    """Loose files cross-posted to GROUP and a later group, indexed from the later group's range: stored
    under GROUP's name (the first of their groups) with the later group's article numbers. GROUP's own
    ranges are read to its high watermark and the posting is old, so GROUP alone calls the burst final;
    the later group's range holding the rest of its files is unread, and joining now split the release
    (a `run` killed and run again ended with another catalog than an uninterrupted one: issue 17)."""
    other = GROUP + ".zz"  # sorts after GROUP: the releases are stored under GROUP's name
    services = services_for(database_url, tmp_path)
    try:
        rng = random.Random(21)
        posting = post_random(
            plan_random(rng, 4, posters=("solo@example.com",)),
            rng,
            group=other,
            first=1,
            start_time=int(time.time()) - 3 * 86_400,
        )
        articles = [replace(a, groups=(GROUP, other)) for a in posting.posting.articles]
        lines = {a.number: overview_line(a, numbers=(a.number + 50_000, a.number)) for a in articles}
        end = posting.posting.last
        half = end // 2
        services.groups.add(GROUP)
        other_id = services.groups.add(other)
        services.groups.plan(GROUP, 1, 10)  # GROUP read to its high watermark, long ago
        services.groups.plan(other, 1, end + GAP_ARTICLES + 1)
        read = "UPDATE ranges SET status = 'done', next_id = end_id + 1 WHERE group_id <> :g"
        query(services.db, read, {"g": other_id})

        def index(start: int, stop: int) -> None:
            indexer = RangeIndexer(other, start, stop, start, default_rules())
            indexer.add_text(chunk_text([lines[n] for n in range(start, stop + 1) if n in lines]), stop + 1)
            indexer.finish()
            with services.db.transaction() as tx:
                store_batch(tx, other_id, other, indexer.take())

        index(1, half)  # the first half stored; the rest of the other group's range still to read
        stored_to = {"n": half + 1, "g": other_id}
        query(
            services.db,
            "UPDATE ranges SET status = 'done', next_id = end_id + 1 WHERE group_id = :g AND end_id < :n",
            stored_to,
        )
        query(
            services.db,
            "UPDATE ranges SET next_id = :n WHERE group_id = :g AND start_id <= :n AND end_id >= :n",
            stored_to,
        )
        stored = query(services.db, "SELECT DISTINCT group_name FROM releases")
        assert stored == [{"group_name": GROUP}]
        assert Grouper(services.db).pending() == 0
        assert Grouper(services.db).run_once().joined == 0
        index(half + 1, end + GAP_ARTICLES + 1)
        query(services.db, "UPDATE ranges SET status = 'done', next_id = end_id + 1")
        done = Grouper(services.db).run_once()
        assert done.joined == sum(1 for r in posting.releases if not r.named)
        assert found(services.db) == posting.expected()
    finally:
        services.close()

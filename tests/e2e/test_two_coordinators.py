"""Beyond one machine (issue 7, part 3): two coordinator processes on one PostgreSQL and one object
store (moto's S3 server), each with a data directory of its own, with edge workers against both.

A scripted news server serves a generated posting, so every loop has real work: the planner plans the
group from GROUP, the prefetcher fetches its overview into the spool in object storage (paced by a
small spool cap, so that it works through the whole run), workers stream it from whichever coordinator
they talk to. The test shows that

1. each background loop runs on exactly one coordinator: every loop's lease has one holder, each loop
   was acquired once, and only the prefetcher's holder logged prefetch rounds;
2. when the prefetcher's holder is killed (SIGKILL) the other takes its loops over after the ownership
   TTL — each loop it did not hold is acquired exactly once more, by the survivor — and goes on
   fetching chunks while the killed one is down; the killed one, restarted, takes nothing back;
3. every article is indexed exactly once: the lease audit is clean and the catalog equals a single
   uninterrupted run's (tests/support/generated.py).
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.processes import Coordinator, Worker, free_port, settings_env, wait_for
from tests.support.fake_nntp import FakeNNTPServer, Script, serving_in_thread
from tests.support.generated import expected_catalog, posting, stored_catalog
from tests.support.s3 import MotoServer
from tests.support.store import query
from usenet_indexer.articles import chunk_spans
from usenet_indexer.coordinator.wiring import open_services
from usenet_indexer.indexing.sample import overview_line
from usenet_indexer.leases.audit import audit
from usenet_indexer.leases.ownership import Ownership, all_ownerships
from usenet_indexer.settings import Settings
from usenet_indexer.storage.s3 import S3BlobStore

GROUP = "alt.binaries.two.coordinators"
LOOPS = {"planner", "prefetcher", "corpus-fill", "probe", "finish-abandoned", "spool-cleanup", "grouping"}
TTL = 3.0  # range leases
OWNERSHIP_TTL = 6.0  # the loops' ownership leases: renewed every 2 s, taken over after 6 s
SIZES: dict[str, Any] = {
    "lease_ttl_seconds": TTL,
    "max_leases_per_group": 4,  # one group, four workers: all of them busy
    "range_articles": 2_000,
    "chunk_articles": 250,
    "era_articles": 1_000_000,
    "stream_keepalive_seconds": 0.5,
    "ownership_ttl_seconds": OWNERSHIP_TTL,
    "ownership_renew_seconds": 2.0,
    # Every loop's work well inside the ownership TTL (renewals happen between works).
    "prefetch_round_seconds": 0.5,
    "prefetch_idle_seconds": 0.2,
    "planner_period_seconds": 2.0,
    "cleanup_period_seconds": 2.0,
    "corpus_fill_period_seconds": 5.0,
    "probe_period_seconds": 5.0,
    # A few chunks (~9 KB each) ahead of the workers: the prefetcher works all through the run.
    "spool_cap_bytes": 60_000,
    "nntp_connections": 2,
    "nntp_timeout": 5.0,
}


def events(log: Path, name: str) -> list[dict[str, Any]]:
    """The JSON log lines of event ``name`` (other output, e.g. uvicorn's, skipped)."""
    found = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("event") == name:
            found.append(record)
    return found


def stamp(record: dict[str, Any]) -> float:
    return datetime.fromisoformat(str(record["timestamp"]).replace("Z", "+00:00")).timestamp()


def pid_of(holder: str | None) -> int | None:
    """Holder names are ``host:pid:random`` (coordinator/loops/runner.py)."""
    return None if holder is None else int(holder.split(":")[1])


@pytest.mark.postgres
@pytest.mark.slow
def test_two_coordinators_share_the_loops_and_one_takes_over_when_the_other_is_killed(
    pg_url: str, tmp_path: Path, moto_server: MotoServer
) -> None:
    generated = posting(GROUP, releases=300, seed=23)
    news = FakeNNTPServer(Script(reply_delay=0.02))
    news.add_group(GROUP, [overview_line(a) for a in generated.articles])
    storage = moto_server.settings(moto_server.new_bucket(), "indexer")

    with serving_in_thread(news):
        common = {**SIZES, **storage, "nntp_host": "127.0.0.1", "nntp_port": news.port}
        settings = Settings(database_url=pg_url, data_dir=tmp_path / "observer", **common)
        services = open_services(settings, migrate=False)
        assert isinstance(services.blobs, S3BlobStore)
        services.rules.ensure_default()
        services.groups.add(GROUP)  # the whole group: the planner plans it from GROUP
        tokens = [services.nodes.add(f"edge-{i}")[1] for i in range(4)]
        coordinators = {
            name: Coordinator(
                settings_env(pg_url, tmp_path / f"data-{name}", **common),
                free_port(),
                tmp_path / f"coordinator-{name}.log",
            )
            for name in ("a", "b")
        }
        workers: list[Worker] = []

        def count(sql: str) -> int:
            return int(query(services.db, sql)[0]["n"])

        def fetched() -> int:
            return count("SELECT count(*) AS n FROM fetched_chunks")

        def leases() -> dict[str, Ownership]:
            return {o.name: o for o, _ in all_ownerships(services.db)}

        def live_leases() -> dict[str, Ownership]:
            return {o.name: o for o, now in all_ownerships(services.db) if (o.expires_at or 0) > now}

        try:
            # 1. Both coordinators start at once and share the loops between them; two workers each.
            for coordinator in coordinators.values():
                coordinator.launch()
            for coordinator in coordinators.values():
                coordinator.wait_ready()
            pids = {name: c.process.pid for name, c in coordinators.items()}  # type: ignore[union-attr]
            args = ("--batch-articles", "500", "--idle-seconds", "0.3")
            for i, token in enumerate(tokens):
                url = coordinators["ab"[i % 2]].url
                workers.append(Worker(coordinators["a"].env, url, token, tmp_path / f"worker-{i}.log", *args))

            wait_for(lambda: set(live_leases()) == LOOPS, 30, "every loop to be held")
            total_chunks = 0

            def planned() -> bool:
                nonlocal total_chunks
                rows = query(services.db, "SELECT start_id, end_id FROM ranges")
                total_chunks = sum(
                    len(chunk_spans(int(r["start_id"]), int(r["end_id"]), settings.chunk_articles))
                    for r in rows
                )
                return total_chunks > 0

            wait_for(planned, 30, "the planner to plan the group")
            wait_for(lambda: fetched() >= total_chunks // 4, 120, "a quarter of the chunks to be fetched")

            # Each loop has one holder, one of the two coordinators, and was acquired exactly once.
            before = leases()
            holders = {name: pid_of(lease.holder) for name, lease in before.items()}
            assert set(holders.values()) <= set(pids.values()), (holders, pids)
            assert {lease.epoch for lease in before.values()} == {1}
            acquired = {
                name: [r["loop"] for r in events(c.log, "loop.acquired")] for name, c in coordinators.items()
            }
            assert sorted(acquired["a"] + acquired["b"]) == sorted(LOOPS)
            for name in ("a", "b"):
                assert {holders[loop] for loop in acquired[name]} <= {pids[name]}
            victim = next(name for name, pid in pids.items() if pid == holders["prefetcher"])
            survivor = "b" if victim == "a" else "a"
            # Only the prefetcher's holder fetched: the other's prefetcher never ran a round.
            assert events(coordinators[victim].log, "prefetch.round")
            assert events(coordinators[survivor].log, "prefetch.round") == []
            # The chunks are in the object store, not under either coordinator's data directory.
            assert services.spool.ranges()

            # 2. The prefetcher's holder killed mid-run.
            chunks_at_kill = fetched()
            assert chunks_at_kill < total_chunks, "the run ended before the kill: make the prefetch slower"
            killed_at = time.time()
            coordinators[victim].kill()
            survivor_pid = pids[survivor]
            wait_for(
                lambda: (
                    {pid_of(o.holder) for o in live_leases().values()} == {survivor_pid}
                    and set(live_leases()) == LOOPS
                ),
                30,
                "the survivor to hold every loop",
            )
            taken_over_at = time.time()
            # The survivor's prefetcher does the work now, the killed one's workers' ranges included.
            wait_for(lambda: fetched() >= chunks_at_kill + 10, 60, "the survivor's prefetcher to fetch")
            # A round is logged when it ends: its tenth chunk can be in before it does (it failed so
            # with a 12-chunk first round under load), so wait for the line rather than assert it now.
            wait_for(
                lambda: bool(events(coordinators[survivor].log, "prefetch.round")),
                30,
                "the survivor's prefetcher to log its round",
            )

            # 3. The killed coordinator back (systemd would restart it): it takes no loop back.
            coordinators[victim].log = tmp_path / f"coordinator-{victim}-restarted.log"
            coordinators[victim].start()
            restarted_pid = coordinators[victim].process.pid  # type: ignore[union-attr]
            unfinished = "SELECT count(*) AS n FROM ranges WHERE status <> 'done'"
            wait_for(lambda: count(unfinished) == 0, 300, "every range to be indexed")
            after = leases()
            wait_for(lambda: services.spool.ranges() == [], 30, "the spool in object storage to be emptied")
            assert all(w.process.poll() is None for w in workers), "a worker died"
            assert [w.stop() for w in workers] == [0, 0, 0, 0]
        finally:
            for worker in workers:
                if worker.process.poll() is None:
                    worker.stop()
            for coordinator in coordinators.values():
                coordinator.stop()

    # Every loop ended with the survivor; the victim's loops changed hands exactly once (epoch 2), the
    # survivor's never (epoch 1), and the restarted coordinator holds nothing.
    assert {name: pid_of(o.holder) for name, o in after.items()} == dict.fromkeys(LOOPS, survivor_pid)
    victims_loops = {loop for loop, pid in holders.items() if pid == pids[victim]}
    assert "prefetcher" in victims_loops
    assert {name: o.epoch for name, o in after.items()} == {
        loop: 2 if loop in victims_loops else 1 for loop in LOOPS
    }
    later = events(coordinators[survivor].log, "loop.acquired")[len(acquired[survivor]) :]
    assert sorted(r["loop"] for r in later) == sorted(victims_loops)
    # Taken over only after the killed holder's lease had run out: never two holders at once.
    assert all(killed_at < stamp(r) <= taken_over_at + 1 for r in later)
    restarted_log = tmp_path / f"coordinator-{victim}-restarted.log"
    assert events(restarted_log, "loop.acquired") == []
    assert restarted_pid not in {pid_of(o.holder) for o in after.values()}
    for log in (*[c.log for c in coordinators.values()], tmp_path / f"coordinator-{victim}.log"):
        assert events(log, "loop.lost") == []  # nobody had to fence itself: no lease was ever shared
        text = log.read_text(errors="replace")
        assert storage["s3_secret_access_key"] not in text
    assert not any((tmp_path / f"data-{name}" / "blobs").exists() for name in ("a", "b"))

    # Every article exactly once: the audit, and the catalog of a single uninterrupted run.
    try:
        report = audit(services.db, ttl=TTL, max_per_group=4)
        assert report.problems == []
        assert count("SELECT count(*) AS n FROM fetched_chunks") == total_chunks  # one row per chunk
        assert stored_catalog(services.db) == expected_catalog(GROUP, generated)
    finally:
        services.close()

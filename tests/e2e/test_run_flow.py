"""``usenet-indexer run`` gives every worker work from the start (issue 17), against INN2.

A group of 60,000 articles, ``run --exit-when-done`` with two workers, as a user starts it. Before: the
group was one range of 59,999 articles and one of a single article (ranges aligned to the default
1,000,000), and one worker indexed it all.

What the store recorded afterwards shows the flow, whatever the machine's speed:

- the plan: at least four ranges per worker, of even size (``planning.cut``), and the lease log:
  every worker was granted ranges;
- with a spool that holds almost nothing (``spool_cap_bytes`` 0: a leased range gets only the few
  chunks next to its resume point), the batch and fetch logs: a batch of each range was stored before
  the last chunk of that range was fetched. A worker indexes from the first chunks the prefetcher has
  spooled and its batches move the resume point the prefetcher follows; a worker that needed a whole
  range before it began would wait here forever;
- the audit: every lease rule held, every article indexed once.

On loopback INN2 serves these small articles faster than two workers index them, so at the default
spool the whole group is fetched in a fraction of a second: whether a batch comes before a range's last
chunk is then a race, which is why the second run holds the spool to what the workers have read.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.processes import settings_env
from tests.support import inn2 as support
from tests.support.store import query
from usenet_indexer.articles import chunk_spans
from usenet_indexer.coordinator.loops.prefetcher import LEASED_AHEAD_OVER_CAP
from usenet_indexer.db import connect
from usenet_indexer.leases.audit import audit
from usenet_indexer.local.run import RANGES_PER_WORKER, worker_name

pytestmark = [pytest.mark.slow, pytest.mark.inn2]  # the group fixture posts to INN2

ARTICLES = 60_000
WORKERS = 2


@pytest.fixture(scope="module")
def group() -> str:
    support.ensure_inn2()
    name = support.new_group()
    files = 20  # releases of 20 one-part files
    posted = support.post_articles(
        name,
        (
            support.yenc_article(i % files + 1, collection=f"flow.release.{i // files}", parts=files)
            for i in range(ARTICLES)
        ),
    )
    assert posted == ARTICLES
    return name


def run_to_the_end(
    database_url: str, data_dir: Path, group: str, batch_articles: int, **settings: object
) -> dict[str, list[dict[str, Any]]]:
    """``groups add`` and ``run --exit-when-done``; then what the store recorded, the audit passed."""
    env = settings_env(database_url, data_dir, prefetch_idle_seconds=0.2, nntp_connections=2, **settings)
    usenet_indexer = [sys.executable, "-m", "usenet_indexer"]
    subprocess.run([*usenet_indexer, "groups", "add", group, "--all-history"], env=env, check=True)
    log = data_dir.parent / "run.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [
                *usenet_indexer,
                "run",
                f"--nntp-host={support.HOST}",
                f"--nntp-port={support.PLAIN_PORT}",
                "--port=0",
                f"--workers={WORKERS}",
                f"--batch-articles={batch_articles}",
                "--view=plain",
                "--exit-when-done",
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            code = process.wait(300)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
            raise AssertionError(f"run did not end within 300 s:\n{log.read_text()[-4000:]}") from None
    assert code == 0, log.read_text()[-4000:]
    db = connect(database_url)
    try:
        report = audit(db, ttl=120.0, max_per_group=2)
        assert report.ok, report.problems
        recorded = {
            "ranges": query(db, "SELECT id, start_id, end_id, status FROM ranges ORDER BY start_id"),
            "grants": query(
                db,
                "SELECT l.range_id, l.granted_at, n.name FROM lease_log l JOIN nodes n ON n.id = l.node_id",
            ),
            "batches": query(db, "SELECT range_id, headers, stored_at FROM batch_log"),
            "fetched": query(db, "SELECT range_id, chunk_from, fetched_at FROM fetched_chunks"),
        }
    finally:
        db.close()
    assert {r["status"] for r in recorded["ranges"]} == {"done"}
    assert sum(int(b["headers"]) for b in recorded["batches"]) == ARTICLES  # each article once
    return recorded


def test_the_plan_is_cut_for_the_workers_and_every_worker_gets_ranges(
    group: str, database_url: str, tmp_path: Path
) -> None:
    chunk = 2_000
    recorded = run_to_the_end(database_url, tmp_path / "data", group, 500_000, chunk_articles=chunk)
    ranges = recorded["ranges"]
    chunks = [len(chunk_spans(int(r["start_id"]), int(r["end_id"]), chunk)) for r in ranges]
    assert len(ranges) >= RANGES_PER_WORKER * WORKERS, chunks
    assert max(chunks) - min(chunks) <= 1, chunks  # none a chunk longer than another
    granted = {str(g["name"]) for g in recorded["grants"]}
    assert granted == {worker_name(slot) for slot in range(1, WORKERS + 1)}


def test_a_worker_indexes_a_range_from_its_first_chunks(
    group: str, database_url: str, tmp_path: Path
) -> None:
    chunk = 1_000  # 60 chunks: ranges of 7 or 8, more than the prefetcher fetches ahead of a worker
    recorded = run_to_the_end(
        database_url, tmp_path / "data", group, chunk, chunk_articles=chunk, spool_cap_bytes=0
    )
    ranges = recorded["ranges"]
    assert min(len(chunk_spans(int(r["start_id"]), int(r["end_id"]), chunk)) for r in ranges) > (
        LEASED_AHEAD_OVER_CAP
    )
    for r in ranges:
        first_batch = min(float(b["stored_at"]) for b in recorded["batches"] if b["range_id"] == r["id"])
        last_chunk = max(float(f["fetched_at"]) for f in recorded["fetched"] if f["range_id"] == r["id"])
        assert first_batch < last_chunk, (r, first_batch, last_chunk)
    assert {str(g["name"]) for g in recorded["grants"]} == {
        worker_name(slot) for slot in range(1, WORKERS + 1)
    }

"""Loose runs and files let go (issue 16), on both stores: a burst of runs wholly below the server's low
watermark is deleted by retention, one waiting on history more than a window's horizon below the high
watermark by the space cap; recent bursts are kept, and a burst that reaches past either bound keeps
every run and is joined whole once its stretch is indexed. Loose files let go by the cap are settled
alone and stay in the catalog."""

from __future__ import annotations

import random
import time
from pathlib import Path

from tests.support.obfuscated import plan_random, post_random
from tests.support.store import query, services_for
from usenet_indexer.catalog.batch_store import lock_merges, store_batch, store_runs
from usenet_indexer.catalog.grouping import Grouper
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db import Database
from usenet_indexer.indexing import RangeIndexer, default_rules, unpack_segments
from usenet_indexer.indexing.grouping import is_loose
from usenet_indexer.indexing.runs import LooseArticle, fold
from usenet_indexer.indexing.sample import chunk_text, overview_line
from usenet_indexer.indexing.window import DEFAULT_HORIZON

GROUP = "alt.binaries.loose.runs"
LOW = 1_000_000
HIGH = 5_000_000
AT_CAP = HIGH - DEFAULT_HORIZON  # below it, at the cap, a burst that is not final goes
PART = 400_000  # bytes: a yEnc part


def burst(poster: str, numbers: range, start: int) -> list[LooseArticle]:
    """One poster's loose articles, a second apart per thousand numbers (one burst: gaps well inside
    GAP_ARTICLES and GAP_SECONDS)."""
    return [
        LooseArticle(
            number=n,
            size=PART,
            poster=poster,
            date=start + (n - numbers.start) // 1000,
            message_id=f"{poster.split('@')[0]}.{n}@loose.example",
            subject=f"{n:x}{poster}",
            groups=(GROUP,),
        )
        for n in numbers
    ]


def runs_by_poster(db: Database) -> dict[str, set[str]]:
    """The message-ids ``loose_runs`` holds, by poster."""
    out: dict[str, set[str]] = {}
    for row in query(db, "SELECT poster, segments FROM loose_runs"):
        mids = {m for f in unpack_segments(bytes(row["segments"])) for m in f.message_id_list()}
        out.setdefault(str(row["poster"]), set()).update(mids)
    return out


def released(db: Database) -> list[set[str]]:
    rows = query(db, "SELECT segments FROM releases")
    return [{m for f in unpack_segments(bytes(r["segments"])) for m in f.message_id_list()} for r in rows]


def test_old_runs_go_by_retention_and_the_space_cap_and_bursts_reaching_past_stay_whole(
    database_url: str, tmp_path: Path
) -> None:
    services = services_for(
        database_url,
        tmp_path,
        range_articles=1_000_000,
        chunk_articles=20_000,
        era_articles=10_000_000,
        catalog_cap_bytes=1,  # always at the cap: what the cap lets go is tested with full=space.full
    )
    try:
        start = int(time.time()) - 86_400
        posted = {
            "expired@x": burst("expired@x", range(LOW - 40_000, LOW - 39_990), start),
            # 8,000 articles apart over blocks of 1,000: runs of one burst, across the low watermark
            "across.low@x": burst("across.low@x", range(LOW - 5_000, LOW + 3_001, 1_000), start),
            "stale@x": burst("stale@x", range(AT_CAP - 500_000, AT_CAP - 499_990), start),
            "across.cap@x": burst("across.cap@x", range(AT_CAP - 6_000, AT_CAP + 2_001, 1_000), start),
            "recent@x": burst("recent@x", range(HIGH - 100_000, HIGH - 99_990), start),
        }
        services.groups.add(GROUP)
        services.groups.plan(GROUP, LOW, HIGH)  # the watermarks; every range planned, none read
        with services.db.transaction() as tx:
            group_id = int(tx.run("group_by_name", {"name": GROUP})[0]["id"])
            lock_merges(tx, group_id, {GROUP})
            store_runs(tx, GROUP, fold(GROUP, [a for articles in posted.values() for a in articles]))
        mids = {p: {a.message_id for a in articles} for p, articles in posted.items()}
        assert len(query(services.db, "SELECT key FROM loose_runs")) > len(posted)  # bursts of several runs

        # Nothing is final (no range read): retention alone lets the expired go.
        done = Grouper(services.db).run_once()
        assert done.expired == 1 and done.bursts == 0
        assert runs_by_poster(services.db) == {p: m for p, m in mids.items() if p != "expired@x"}

        # At the cap: the bursts wholly below its bound go too (across.low@x: one run an article); one
        # reaching past it stays whole.
        assert services.space.full()
        done = Grouper(services.db, full=services.space.full).run_once()
        assert done.expired == 1 + len(posted["across.low@x"]) and done.bursts == 0
        kept = {p: m for p, m in mids.items() if p in ("across.cap@x", "recent@x")}
        assert runs_by_poster(services.db) == kept

        # Once indexed, each burst kept is joined whole: one release of every article it had.
        query(services.db, "UPDATE ranges SET status = 'done', next_id = end_id + 1")
        done = Grouper(services.db, full=services.space.full).run_once()
        assert done.bursts == len(kept) and done.expired == 0
        assert sorted(released(services.db), key=sorted) == sorted(kept.values(), key=sorted)
        assert query(services.db, "SELECT count(*) AS n FROM loose_runs") == [{"n": 0}]
    finally:
        services.close()


def store_loose_files(services: Services, first: int, poster: str, seed: int) -> set[str]:
    """Per-file random releases of one poster posted from article ``first`` and stored (loose files
    of the catalog, their bursts not final: no range is read); their keys."""
    rng = random.Random(seed)
    posting = post_random(plan_random(rng, 2, posters=(poster,)), rng, group=GROUP, first=first)
    lines = [overview_line(a) for a in posting.posting.articles]
    last = posting.posting.last
    indexer = RangeIndexer(GROUP, first, last, first, default_rules())
    indexer.add_text(chunk_text(lines), last + 1)
    indexer.finish()
    batch = indexer.take()
    with services.db.transaction() as tx:
        store_batch(tx, int(tx.run("group_by_name", {"name": GROUP})[0]["id"]), GROUP, batch)
    return {f.key for f in batch.fragments if is_loose(f)}


def test_loose_files_waiting_on_history_at_the_cap_are_settled_alone_and_kept(
    database_url: str, tmp_path: Path
) -> None:
    services = services_for(
        database_url, tmp_path, range_articles=1_000_000, chunk_articles=20_000, catalog_cap_bytes=1
    )
    services.rules.ensure_default()
    try:
        services.groups.add(GROUP)
        services.groups.plan(GROUP, LOW, HIGH)
        stale = store_loose_files(services, AT_CAP - 500_000, "stale@example.com", 1)
        recent = store_loose_files(services, HIGH - 100_000, "recent@example.com", 2)
        assert stale and recent

        def settled() -> set[str]:
            return {str(r["key"]) for r in query(services.db, "SELECT key FROM releases WHERE loose_settled")}

        before = query(services.db, "SELECT count(*) AS n FROM releases")
        assert Grouper(services.db).run_once().expired == 0 and settled() == set()  # below the cap
        done = Grouper(services.db, full=services.space.full).run_once()
        assert done.expired == len(stale) and done.joined == 0
        assert settled() == stale  # the recent ones still wait for their bursts
        assert query(services.db, "SELECT count(*) AS n FROM releases") == before  # none removed
    finally:
        services.close()

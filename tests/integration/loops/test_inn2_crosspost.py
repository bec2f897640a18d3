"""Issue 16 against INN2: one set of articles cross-posted to two groups (``Newsgroups: a,b``; INN2
numbers each copy in its group and writes an Xref naming both), the second group holding other posts
first so that the numbers differ. Planned, prefetched and indexed by two edge workers, one range per
group: one release listing both groups, every article once, one search hit, and an NZB whose files
carry the subjects as posted (tags before the counter, a size after it) and list both groups."""

from __future__ import annotations

import html
import re
from dataclasses import replace
from pathlib import Path

from tests.support import inn2 as support
from tests.support.live import run_edge_workers
from tests.support.loops import news_service, prefetch_all
from tests.support.store import query, services_for
from usenet_indexer.catalog.nzbs import nzb_bytes
from usenet_indexer.catalog.search import SearchQuery
from usenet_indexer.coordinator.loops.planner import Planner
from usenet_indexer.coordinator.loops.prefetcher import Prefetcher
from usenet_indexer.indexing import unpack_segments

FILES = 12


def test_a_cross_post_is_one_release_listing_both_groups(
    database_url: str, tmp_path: Path, inn2: None
) -> None:
    services = services_for(database_url, tmp_path)
    services.rules.ensure_default()
    first, second = sorted((support.new_group(), support.new_group()))
    collection = f"Cross.Posted.{first[-12:]}.1080p.WEB.h264-GRP"
    filler = [support.yenc_article(i, collection=f"filler.{i}", parts=1) for i in range(1, 8)]
    crossed = [
        replace(
            article,
            subject=f"[PRiVATE]-[WtFnZb]-[{collection}]-{article.subject} {1000 + i}",
        )
        for i, article in enumerate(
            (support.yenc_article(i, collection=collection, parts=FILES) for i in range(1, FILES + 1)), 1
        )
    ]
    try:
        assert support.post_articles(second, filler) == len(filler)  # the second group's numbers run ahead
        assert support.post_articles(f"{first},{second}", crossed) == len(crossed)
        for group in (first, second):
            services.groups.add(group)
        news = news_service(support.HOST, support.PLAIN_PORT, timeout=30.0)
        prefetcher = Prefetcher(services, news)
        try:
            assert {r.outcome for r in Planner(services, news).plan_all()} == {"planned"}
            prefetch_all(prefetcher)
        finally:
            prefetcher.close()
            news.close()

        run_edge_workers(services, batch_articles=5, max_ranges=4)

        assert query(services.db, "SELECT DISTINCT status FROM ranges") == [{"status": "done"}]
        ends = query(
            services.db,
            "SELECT g.name, MAX(r.end_id) AS e FROM ranges r JOIN groups g ON g.id = r.group_id "
            "GROUP BY g.name ORDER BY g.name",
        )
        # The same articles under other numbers in each group (INN2 numbers each copy in its group)
        assert [int(r["e"]) for r in ends] == [FILES, len(filler) + FILES]
        rows = query(services.db, "SELECT key, name, groups FROM releases WHERE name = :n", {"n": collection})
        assert len(rows) == 1, rows  # one release, not one per group
        assert rows[0]["groups"] == f"{first} {second}"
        row = services.search.segments_row(str(rows[0]["key"]))
        assert row is not None
        ids = [mid for f in unpack_segments(bytes(row["segments"])) for mid in f.message_id_list()]
        assert sorted(ids) == sorted(a.message_id.strip("<>") for a in crossed)  # every article once

        hits = services.search.search(SearchQuery(text=collection)).hits
        assert [h.guid for h in hits] == [rows[0]["key"]]
        assert hits[0].groups == (first, second)

        nzb = nzb_bytes(row).decode()
        subjects = sorted(html.unescape(s) for s in re.findall(r'<file [^>]*subject="([^"]*)"', nzb))
        assert subjects == sorted(a.subject for a in crossed)  # as posted (each a single part)
        for listed in re.findall(r"<groups>(.*?)</groups>", nzb, re.S):
            assert re.findall(r"<group>([^<]+)</group>", listed) == [first, second]
    finally:
        services.close()

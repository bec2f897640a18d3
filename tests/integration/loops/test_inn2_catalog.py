"""End to end against INN2: yEnc posts → planner → prefetcher (plain and COMPRESS DEFLATE) → the node
API's stream → edge workers → the batch store. The catalog holds every posted article exactly once;
cancelled ones are gaps, not errors; the spool is empty at the end and the lease audit finds nothing."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.support import inn2 as support
from tests.support.live import run_edge_workers
from tests.support.loops import news_service, prefetch_all
from tests.support.store import query, services_for
from usenet_indexer.coordinator.loops.planner import Planner
from usenet_indexer.coordinator.loops.prefetcher import Prefetcher
from usenet_indexer.indexing import unpack_segments
from usenet_indexer.leases.audit import audit

RELEASES, FILES = 30, 40  # 1,200 articles: two ranges of 1,000, chunks of 100


def catalog_message_ids(services: object) -> Counter[str]:
    with services.db.transaction(write=False) as tx:  # type: ignore[attr-defined]
        rows = tx.sql("SELECT segments FROM releases")
    ids: Counter[str] = Counter()
    for row in rows:
        for file in unpack_segments(bytes(row["segments"])):
            ids.update(file.message_id_list())
    return ids


@pytest.mark.parametrize("compression", ["none", "auto"])  # auto: INN2's COMPRESS DEFLATE
def test_every_posted_article_ends_in_the_catalog_exactly_once(
    database_url: str, tmp_path: Path, inn2: None, compression: str
) -> None:
    services = services_for(database_url, tmp_path)
    services.rules.ensure_default()
    group = support.new_group()
    articles = [
        support.yenc_article(i, collection=f"loops.e2e.{compression}.release{r:02d}", parts=FILES)
        for r in range(RELEASES)
        for i in range(1, FILES + 1)
    ]
    try:
        assert support.post_articles(group, articles) == len(articles)
        cancelled = [articles[5], articles[6], articles[777]]
        for article in cancelled:
            result = subprocess.run(
                [support.CTLINND, "-t", "30", "cancel", article.message_id], capture_output=True, check=False
            )
            assert result.returncode == 0
        services.groups.add(group)
        news = news_service(support.HOST, support.PLAIN_PORT, compression=compression, timeout=30.0)
        prefetcher = Prefetcher(services, news)
        try:
            assert Planner(services, news).plan_all()[0].outcome == "planned"
            prefetch_all(prefetcher)
        finally:
            prefetcher.close()
            news.close()

        run_edge_workers(services, batch_articles=300, max_ranges=10)

        assert query(services.db, "SELECT DISTINCT status FROM ranges") == [{"status": "done"}]
        assert services.spool.ranges() == []
        posted = {a.message_id.strip("<>") for a in articles} - {a.message_id.strip("<>") for a in cancelled}
        in_catalog = catalog_message_ids(services)
        assert set(in_catalog) == posted
        assert set(in_catalog.values()) == {1}  # every article exactly once
        assert sum(int(r["gaps"]) for r in query(services.db, "SELECT gaps FROM ranges")) == len(cancelled)
        report = audit(services.db, ttl=services.settings.lease_ttl_seconds, max_per_group=2)
        assert report.problems == []
    finally:
        services.close()

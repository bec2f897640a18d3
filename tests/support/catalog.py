"""A catalog filled from a generated posting through the real indexer and batch store (no workers):
for tests of what reads the catalog (search, the newznab API, the web UI)."""

from __future__ import annotations

from tests.support.generated import posting
from usenet_indexer.catalog.batch_store import store_batch
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.indexing import RangeIndexer
from usenet_indexer.indexing.rules import default_rules
from usenet_indexer.indexing.sample import Posting, chunk_text, overview_line


def fill_catalog(services: Services, group: str, releases: int, seed: int = 7) -> Posting:
    generated = posting(group, releases=releases, seed=seed)
    group_id = services.groups.add(group)
    indexer = RangeIndexer(group, generated.first, generated.last, generated.first, default_rules())
    indexer.add_text(chunk_text([overview_line(a) for a in generated.articles]), generated.last + 1)
    indexer.finish()
    batch = indexer.take()
    with services.db.transaction() as tx:
        store_batch(tx, group_id, group, batch)
    return generated

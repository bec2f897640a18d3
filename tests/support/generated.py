"""Generated postings in the spool, and the catalog they must end in: for end-to-end tests."""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from tests.support.store import query
from usenet_indexer.articles import chunk_spans
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db import Database
from usenet_indexer.indexing import RangeIndexer, merge_all, totals
from usenet_indexer.indexing.rules import RuleSet, default_rules
from usenet_indexer.indexing.sample import Posting, chunk_text, overview_line, plan, post
from usenet_indexer.wire.chunks import deflate_plain


def posting(group: str, releases: int, seed: int = 7, first: int = 1) -> Posting:
    rng = random.Random(seed)
    return post(plan(rng, releases, group), rng, first=first)


def spool_posting(
    services: Services, group: str, posting: Posting, *, capture: bool = False, hold_back_last: bool = False
) -> dict[int, tuple[object, bytes]]:
    """Add the group, plan its ranges over the posting and spool every chunk of every range — but
    the last chunk of each range when ``hold_back_last`` (returned, for ``spool_held``: a prefetcher
    running late)."""
    services.groups.add(group, capture=capture)
    services.groups.plan(group, posting.first, posting.last)
    lines = {a.number: overview_line(a) for a in posting.articles}
    ranges = query(
        services.db,
        "SELECT r.id, r.start_id, r.end_id FROM ranges r JOIN groups g ON g.id = r.group_id "
        "WHERE g.name = :g",
        {"g": group},
    )
    held: dict[int, tuple[object, bytes]] = {}
    for r in ranges:
        spans = chunk_spans(int(r["start_id"]), int(r["end_id"]), services.settings.chunk_articles)
        for span in spans:
            text = chunk_text([lines[n] for n in range(span.first, span.last + 1) if n in lines])
            if hold_back_last and span is spans[-1]:
                held[int(r["id"])] = (span, deflate_plain(text))
                continue
            services.spool.write(int(r["id"]), span, deflate_plain(text))
        query(
            services.db,
            "UPDATE ranges SET spooled_chunks = :n WHERE id = :id",
            {"n": len(spans), "id": r["id"]},
        )
    return held


def spool_held(services: Services, held: dict[int, tuple[object, bytes]]) -> None:
    for range_id, (span, data) in held.items():
        services.spool.write(range_id, span, data)  # type: ignore[arg-type]


def expected_catalog(group: str, posting: Posting, rules: RuleSet | None = None) -> dict[str, dict[str, Any]]:
    """The catalog a single uninterrupted run over the whole posting produces."""
    lines = [overview_line(a) for a in posting.articles]
    return overview_catalog(group, posting.first, posting.last, chunk_text(lines), rules)


def overview_catalog(
    group: str, first: int, last: int, overview: bytes, rules: RuleSet | None = None
) -> dict[str, dict[str, Any]]:
    """The catalog one uninterrupted run over ``overview`` (articles ``first``..``last``) produces."""
    indexer = RangeIndexer(group, first, last, first, rules or default_rules())
    indexer.add_text(overview, last + 1)
    indexer.finish()
    releases = merge_all(indexer.take().fragments)
    return {
        key: summary(r.name, totals(r).parts_seen, totals(r).size, r.files) for key, r in releases.items()
    }


def summary(name: str, parts: int, size: int, files: Iterable[Any]) -> dict[str, Any]:
    return {
        "name": name,
        "parts": parts,
        "size": size,
        "files": sorted((f.name, tuple(sorted(f.message_id_list()))) for f in files),
    }


def stored_catalog(db: Database) -> dict[str, dict[str, Any]]:
    from usenet_indexer.indexing import unpack_segments

    with db.transaction(write=False) as tx:
        rows = tx.sql("SELECT key, name, parts_seen, size, segments FROM releases")
    return {
        r["key"]: summary(
            r["name"], int(r["parts_seen"]), int(r["size"]), unpack_segments(bytes(r["segments"]))
        )
        for r in rows
    }

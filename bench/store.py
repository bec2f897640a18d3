"""Batch-store merge on PostgreSQL: releases/s and segments/s, with fragments merging into releases
already stored, against a floor measured in the same run (inserting the same number of rows with
blobs of the same size, nothing else).

Generated postings (indexing/sample.py) are indexed into batches of ``--batch`` articles, so most
releases arrive as several fragments: the first insert, the rest merge (read the row, unpack the
segment blob, merge, pack, update).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from tests.support.store import insert_group

from _common import emit, postgres_database
from usenet_indexer.catalog.batch_store import store_batch
from usenet_indexer.db import connect
from usenet_indexer.indexing import Batch, RangeIndexer, pack_segments
from usenet_indexer.indexing.rules import default_rules
from usenet_indexer.indexing.sample import chunks, plan, post

GROUP = "alt.binaries.bench"


def batches(releases: int, batch_articles: int) -> list[Batch]:
    rng = random.Random(5)
    posting = post(plan(rng, releases, GROUP), rng, first=1)
    indexer = RangeIndexer(GROUP, posting.first, posting.last, posting.first, default_rules())
    out = []
    for _first, last, text in chunks(posting, batch_articles):
        indexer.add_text(text, last + 1)
        if last == posting.last:
            indexer.finish()
        out.append(indexer.take())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--batch", type=int, default=2_000, help="articles per batch")
    args = parser.parse_args()
    releases = 600 if args.quick else 4_000
    # Batches much smaller than a release's span: most releases arrive as several fragments.
    prepared = batches(releases, args.batch)
    fragments = sum(len(b.fragments) for b in prepared)
    segments = sum(f.segment_count for b in prepared for f in b.fragments)
    with postgres_database() as url:
        db = connect(url)
        with db.transaction() as tx:
            insert_group(tx, GROUP)
        began = time.perf_counter()
        merged = 0
        for batch in prepared:
            with db.transaction() as tx:
                merged += int(store_batch(tx, 1, GROUP, batch)["merged"])
        store_seconds = time.perf_counter() - began
        stored = db.once("database_now")  # a round trip to settle
        del stored
        # The floor: as many rows, with blobs of the same sizes, inserted in the same batches.
        blobs = [pack_segments(f.files) for b in prepared for f in b.fragments]
        began = time.perf_counter()
        with db.transaction() as tx:
            tx.sql("CREATE TABLE floor (id bigserial primary key, key text unique, data bytea)")
        at = 0
        for batch in prepared:
            rows = [{"k": f"k{at + i}", "d": blobs[at + i]} for i in range(len(batch.fragments))]
            at += len(rows)
            with db.transaction() as tx:
                tx._cursor.executemany("INSERT INTO floor (key, data) VALUES (%(k)s, %(d)s)", rows)
        floor_seconds = time.perf_counter() - began
        db.close()
    result = {
        "batches": len(prepared),
        "fragments": fragments,
        "merged_fragments": merged,
        "segments": segments,
        "releases_per_s": round(fragments / store_seconds, 1),
        "segments_per_s": round(segments / store_seconds, 1),
        "floor_rows_per_s": round(fragments / floor_seconds, 1),
        "ratio_to_floor": round(floor_seconds / store_seconds, 3),
    }
    print(
        f"{len(prepared)} batches, {fragments:,} release fragments ({merged:,} merged into stored releases), "
        f"{segments:,} segments"
    )
    print(
        f"batch store: {result['releases_per_s']:,.0f} releases/s, {result['segments_per_s']:,.0f} segments/s"
    )
    print(
        f"floor (plain inserts of as many rows): {result['floor_rows_per_s']:,.0f} rows/s; "
        f"ratio {result['ratio_to_floor']}"
    )
    emit(result)


if __name__ == "__main__":
    main()

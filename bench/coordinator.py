"""The coordinator's own work per header (issue 17), in this process, step by step: what the batch route
does with a batch (``decode_batch``, ``check_authority``, ``store_batch`` on SQLite with its commit) and
what the prefetcher does with a chunk that came plain (pack at ``spool_deflate_level``, write it to a
spool on disk). CPU time of this thread, per header, on indexing/sample.py's postings indexed into
batches of the size ``run`` posts (500,000 articles): no news server, no HTTP, no workers, so the
figures hold still where bench/e2e.py's swing with the machine's load.

Where the rest of a ``run``'s coordinator goes (the NNTP client, HTTP, start-up) is bench/e2e.py's
whole-process figure minus these.

    uv run python bench/coordinator.py            # 1,000,000 headers
    uv run python bench/coordinator.py --quick    # 200,000
    uv run python bench/coordinator.py --quick --store postgresql   # the store on PostgreSQL (127.0.0.1)

On PostgreSQL the store's figure is this process's CPU only (the server's is not counted): what the
coordinator itself spends to send the rows.

The last line printed is one JSON object with the figures (µs a header; releases and batches too,
since most of the batch route's cost is per release).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from tests.support.store import insert_group

from _common import emit, postgres_database, sqlite_database
from usenet_indexer import runtime
from usenet_indexer.articles import ChunkSpan
from usenet_indexer.catalog.batch_store import store_batch
from usenet_indexer.db import connect
from usenet_indexer.edge.main import DEFAULT_BATCH_ARTICLES
from usenet_indexer.indexing import RangeIndexer
from usenet_indexer.indexing.rules import default_rules
from usenet_indexer.indexing.sample import Posting, chunks, plan, post
from usenet_indexer.runtime import tune_gc
from usenet_indexer.settings import Settings
from usenet_indexer.storage.blobs import LocalBlobStore
from usenet_indexer.storage.spool import Spool
from usenet_indexer.wire.batch import check_authority, decode_batch, encode_batch
from usenet_indexer.wire.chunks import deflate_plain

GROUP = "alt.binaries.bench.coordinator"
STORES = {"sqlite": "SQLite", "postgresql": "PostgreSQL, this process's CPU"}


def postings(n: int) -> Posting:
    """``n`` articles of the sample's releases (obfuscated sets left out, as bench/e2e.py does)."""
    rng = random.Random(17)
    releases = []
    total = 0
    while total < n:
        for release in plan(rng, 100, GROUP):
            if release.scheme == "named":
                releases.append(release)
                total += sum(f.parts_total for f in release.files)
    posting = post(releases, rng, first=1, duplicate=0.0, cancelled=0.0)
    posting.articles = posting.articles[:n]
    posting.last = posting.articles[-1].number
    return posting


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200,000 headers (default 1,000,000)")
    parser.add_argument("--batch", type=int, default=DEFAULT_BATCH_ARTICLES, help="articles per batch")
    parser.add_argument(
        "--store", choices=("sqlite", "postgresql"), default="sqlite", help="the catalog's database"
    )
    args = parser.parse_args()
    n = 200_000 if args.quick else 1_000_000
    settings = Settings()
    posting = postings(n)
    indexer = RangeIndexer(GROUP, 1, posting.last, 1, default_rules())
    bodies = []
    for _first, last, text in chunks(posting, args.batch):
        indexer.add_text(text, last + 1)
        if last == posting.last:
            indexer.finish()
        bodies.append(encode_batch(indexer.take(), 1, 1))
    plain = [(first, last, text) for first, last, text in chunks(posting, settings.chunk_articles)]
    tune_gc()  # as the coordinator runs (runtime.py)
    # Also malloc's thresholds, as `run` and `serve` set them (not there on code from before: an A/B).
    malloc_tuned = getattr(runtime, "tune_malloc", lambda: False)()

    decode = check = store = 0.0
    releases = 0
    with (sqlite_database if args.store == "sqlite" else postgres_database)() as url:
        db = connect(url)
        with db.transaction() as tx:
            insert_group(tx, GROUP)
        for body in bodies:
            began = time.thread_time()
            wire = decode_batch(body)
            decoded = time.thread_time()
            checked = check_authority(wire.batch, group=GROUP, low=1, high=posting.last)
            done = time.thread_time()
            # Without the workers' categories on code from before issue 17 (an A/B from a checkout).
            given = (wire.categories,) if hasattr(wire, "categories") else ()
            with db.transaction() as tx:
                store_batch(tx, 1, GROUP, checked, wire.blobs, *given)
            decode += decoded - began
            check += done - decoded
            store += time.thread_time() - done
            releases += len(checked.fragments)
        db.close()

    with tempfile.TemporaryDirectory(prefix="uibench") as folder:
        spool = Spool(LocalBlobStore(Path(folder)))
        began = time.thread_time()
        packed = [
            (first, last, deflate_plain(text, settings.spool_deflate_level)) for first, last, text in plain
        ]
        deflated = time.thread_time()
        for first, last, data in packed:
            spool.write(1, ChunkSpan(first, last), data)
        written = time.thread_time()

    per = {
        "decode": decode,
        "check": check,
        "store": store,
        "pack": deflated - began,
        "write": written - deflated,
    }
    us = {name: seconds / n * 1e6 for name, seconds in per.items()}
    batch_route = us["decode"] + us["check"] + us["store"]
    spool_write = us["pack"] + us["write"]
    print(
        f"{n:,} headers, {len(bodies)} batches of up to {args.batch:,}, {releases:,} releases "
        f"({n / releases:.0f} headers a release)"
    )
    print(
        f"batch route {batch_route:.3f} µs a header: decode {us['decode']:.3f}, check {us['check']:.3f}, "
        f"store {us['store']:.3f} ({STORES[args.store]}, with its commit); "
        f"{batch_route * n / releases:.1f} µs a release"
    )
    print(
        f"spool write {spool_write:.3f} µs a header: pack {us['pack']:.3f} (level "
        f"{settings.spool_deflate_level}), write {us['write']:.3f} ({len(plain)} chunks, fsync'd)"
    )
    print(f"malloc thresholds {'set' if malloc_tuned else 'left at their defaults'} (runtime.tune_malloc)")
    emit(
        {
            "bench": "coordinator",
            "n": n,
            "store": args.store,
            "batches": len(bodies),
            "releases": releases,
            "us_per_header_batch_route": round(batch_route, 3),
            "us_per_header_decode": round(us["decode"], 3),
            "us_per_header_check": round(us["check"], 3),
            "us_per_header_store": round(us["store"], 3),
            "us_per_release_batch_route": round(batch_route * n / releases, 1),
            "us_per_header_spool_write": round(spool_write, 3),
            "us_per_header_pack": round(us["pack"], 3),
            "us_per_header_write": round(us["write"], 3),
            "malloc_tuned": malloc_tuned,
        }
    )


if __name__ == "__main__":
    main()

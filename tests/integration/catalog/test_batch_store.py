"""The batch store with posted blobs: a new release keeps the worker's segment blob byte for byte, a
release that arrives in several batches is merged (and packed again), and either way the catalog
equals one uninterrupted run's."""

from __future__ import annotations

from dataclasses import replace

from tests.support.generated import expected_catalog, posting, summary
from tests.support.store import insert_group
from tests.unit.indexing.test_wire_batch import assemble, split
from usenet_indexer.catalog.batch_store import store_batch
from usenet_indexer.db import Database
from usenet_indexer.indexing import RangeIndexer, categorize, unpack_segments
from usenet_indexer.indexing.rules import default_rules
from usenet_indexer.indexing.sample import Posting, chunk_text, overview_line
from usenet_indexer.wire.batch import decode_batch, encode_batch

GROUP = "alt.binaries.store"


def posted_batches(batch_articles: int) -> tuple[list[bytes], Posting]:
    generated = posting(GROUP, releases=40, seed=12)
    indexer = RangeIndexer(GROUP, generated.first, generated.last, generated.first, default_rules())
    lines = {a.number: overview_line(a) for a in generated.articles}
    bodies = []
    for first in range(generated.first, generated.last + 1, batch_articles):
        last = min(first + batch_articles - 1, generated.last)
        indexer.add_text(chunk_text([lines[n] for n in range(first, last + 1) if n in lines]), last + 1)
        if last == generated.last:
            indexer.finish()
        bodies.append(encode_batch(indexer.take(), 1, 1))
    return bodies, generated


def catalog(db: Database) -> dict[str, dict[str, object]]:
    with db.transaction(write=False) as tx:
        rows = tx.sql("SELECT key, name, segments FROM releases")
    out = {}
    for row in rows:
        files = unpack_segments(bytes(row["segments"]))
        parts = sum(len(f.parts) for f in files)
        size = sum(f.size for f in files)
        out[row["key"]] = summary(row["name"], parts, size, files)
    return out


def store(db: Database, body: bytes) -> None:
    wire = decode_batch(body)
    with db.transaction() as tx:
        group_id = int(tx.run("group_by_name", {"name": GROUP})[0]["id"])
        store_batch(tx, group_id, GROUP, wire.batch, wire.blobs, wire.categories)


def add_group(db: Database) -> None:
    with db.transaction() as tx:
        insert_group(tx, GROUP)


def test_a_new_release_keeps_the_posted_blob(db: Database) -> None:
    bodies, generated = posted_batches(batch_articles=10**9)  # one batch: every release is new
    add_group(db)
    store(db, bodies[0])
    wire = decode_batch(bodies[0])
    posted = {f.key: blob for f, blob in zip(wire.batch.fragments, wire.blobs, strict=True)}
    with db.transaction(write=False) as tx:
        stored = {r["key"]: bytes(r["segments"]) for r in tx.sql("SELECT key, segments FROM releases")}
    assert stored == posted
    assert catalog(db) == expected_catalog(GROUP, generated)


CATEGORY_COLUMNS = "key, name, segments, category, season, episode, episode_last, year, resolution"


def categories(db: Database) -> dict[str, tuple[object, ...]]:
    """Each release's category columns, and the category the coordinator finds for it from its row."""
    with db.transaction(write=False) as tx:
        rows = tx.sql(f"SELECT {CATEGORY_COLUMNS} FROM releases")
    out: dict[str, tuple[object, ...]] = {}
    for row in rows:
        found = categorize(row["name"], [f.name for f in unpack_segments(bytes(row["segments"]))])
        stored = tuple(
            row[c] for c in ("category", "season", "episode", "episode_last", "year", "resolution")
        )
        out[row["key"]] = (
            stored,
            (found.id, found.season, found.episode, found.episode_last, found.year, found.resolution),
        )
    return out


def test_a_new_release_is_stored_in_the_category_its_worker_found(db: Database) -> None:
    """Issue 17: the coordinator takes the category from the batch (wire/batch.py), in one batch or
    merged over many (then it categorizes the merged release itself): the same as it would find."""
    for batch_articles in (10**9, 97):
        bodies, _ = posted_batches(batch_articles)
        with db.transaction() as tx:
            tx.sql("DELETE FROM releases")
            tx.sql("DELETE FROM groups")
        add_group(db)
        for body in bodies:
            store(db, body)
        both = categories(db)
        assert both and all(stored == found for stored, found in both.values())
    # and it is the worker's: a category the coordinator would not find is stored as sent
    head, blobs = split(posted_batches(10**9)[0][0])
    for fragment in head["batch"]["fragments"]:
        fragment["category"] = [7020, None, None, None, 1999, None]
    with db.transaction() as tx:
        tx.sql("DELETE FROM releases")
    store(db, assemble(head, blobs))
    assert {stored for stored, _ in categories(db).values()} == {(7020, None, None, None, 1999, None)}


ROW_COLUMNS = (
    "key, name, search_name, poster, group_name, groups, file_total, files_seen, files_expected, "
    "parts_seen, parts_expected, completion, complete, size, first_article, last_article, first_date, "
    "last_date, obfuscated, request_id, category, season, episode, episode_last, year, resolution, segments"
)
PROBE_COLUMNS = "release_key, par2_message_id, nfo_message_id, archive_message_id, priority, status"


def test_the_fast_path_stores_what_the_pure_path_stores(db: Database) -> None:
    """Issue 17: a new release is stored from its blob's summary (merge.posted_files), its files never
    built; a release merged with a stored one is built then. Row for row, column for column, the
    catalog is the one the pure-Python path (every file built and summed in Python) stores."""
    import pytest

    from usenet_indexer import accelerator
    from usenet_indexer.indexing.fragment import PackedFiles

    if accelerator.speedups is None:
        pytest.skip(f"the C accelerator is not built: {accelerator.REASON}")
    add_group(db)
    for batch_articles in (10**9, 97):  # every release new; most arriving in pieces
        bodies, _ = posted_batches(batch_articles)
        stored: dict[str, dict[str, object]] = {}
        for path in ("fast", "pure"):
            with db.transaction() as tx:
                tx.sql("DELETE FROM releases")
                tx.sql("DELETE FROM probe_queue")
            with pytest.MonkeyPatch().context() as patch:
                if path == "pure":
                    patch.setattr(accelerator, "speedups", None)
                for body in bodies:
                    wire = decode_batch(body)
                    with db.transaction() as tx:
                        new = {f.key for f in wire.batch.fragments} - {
                            str(r["key"]) for r in tx.sql("SELECT key FROM releases")
                        }
                        group_id = int(tx.run("group_by_name", {"name": GROUP})[0]["id"])
                        store_batch(tx, group_id, GROUP, wire.batch, wire.blobs, wire.categories)
                    if path == "fast":
                        built = [
                            f.key
                            for f in wire.batch.fragments
                            if f.key in new and (not isinstance(f.files, PackedFiles) or f.files._files)
                        ]
                        assert built == []
            with db.transaction(write=False) as tx:
                rows = tx.sql(f"SELECT {ROW_COLUMNS} FROM releases")
                queued = tx.sql(f"SELECT {PROBE_COLUMNS} FROM probe_queue ORDER BY release_key")
            stored[path] = {
                "rows": {str(r["key"]): {**r, "segments": bytes(r["segments"])} for r in rows},
                "probes": [dict(q) for q in queued],
            }
        assert stored["fast"] == stored["pure"]
        assert len(stored["fast"]["rows"]) > 10  # type: ignore[arg-type]


def test_every_release_a_batch_inserts_is_found_by_its_name(db: Database) -> None:
    """SQLite indexes new releases for full-text search after inserting them (migration 0012), not by
    a trigger per row: each is found by the words of its name, once."""
    from usenet_indexer.catalog.search import Search, SearchQuery

    bodies, _ = posted_batches(batch_articles=97)
    add_group(db)
    for body in bodies:
        store(db, body)
    with db.transaction(write=False) as tx:
        rows = tx.sql("SELECT id, name FROM releases WHERE name <> ''")
    assert len(rows) > 10
    search = Search(db)
    for row in rows:
        hits = [h.guid for h in search.search(SearchQuery(text=str(row["name"]), limit=100)).hits]
        assert len(hits) == len(set(hits)) >= 1, row["name"]


def test_releases_over_many_batches_merge_to_one_runs_catalog(db: Database) -> None:
    bodies, generated = posted_batches(batch_articles=97)  # most releases arrive in pieces
    assert len(bodies) > 10
    add_group(db)
    for body in bodies:
        store(db, body)
    assert catalog(db) == expected_catalog(GROUP, generated)
    with db.transaction(write=False) as tx:
        rows = tx.sql("SELECT parts_seen, segments FROM releases")
    for row in rows:  # the row's figures agree with its (re-packed) blob
        files = unpack_segments(bytes(row["segments"]))
        assert int(row["parts_seen"]) == sum(len(f.parts) for f in files)


def test_a_cross_post_from_two_groups_and_two_workers_is_one_release(db: Database) -> None:
    """Issue 16: two ranges of two groups carry the same cross-posted articles (other numbers, the
    same message-ids, an Xref naming both), each indexed by a worker of its own and checked against
    its own lease: one release per set of articles, listing both groups, every segment once, one
    search hit, and an NZB whose files list both groups."""
    import html
    import re

    from tests.support.crosspost import cross_post
    from usenet_indexer.catalog.nzbs import nzb_bytes
    from usenet_indexer.catalog.search import Search, SearchQuery
    from usenet_indexer.coordinator.http.newznab import release_item
    from usenet_indexer.wire.batch import check_authority

    groups = ("alt.binaries.cross.a", "alt.binaries.cross.b")
    post = cross_post(groups)
    ids = {}
    with db.transaction() as tx:
        for group in groups:
            ids[group] = insert_group(tx, group)
    # The second group's worker posts first, in smaller batches: the order must not matter.
    for group, size in ((groups[1], 41), (groups[0], 10**9)):
        low, high = post.span(group)
        for batch in post.index(group, batch_articles=size):
            wire = decode_batch(encode_batch(batch, 1, 1))
            checked = check_authority(wire.batch, group=group, low=low, high=high)
            with db.transaction() as tx:
                store_batch(tx, ids[group], group, checked, wire.blobs)

    with db.transaction(write=False) as tx:
        rows = tx.sql("SELECT key, name, groups, group_name, segments FROM releases")
    by_name: dict[str, int] = {}
    seen: list[str] = []
    for row in rows:
        by_name[row["name"]] = by_name.get(row["name"], 0) + 1
        assert row["groups"] == " ".join(groups)
        seen += [mid for f in unpack_segments(bytes(row["segments"])) for mid in f.message_id_list()]
    assert set(by_name.values()) == {1}  # a release per set of articles, not one per group
    assert sorted(seen) == sorted(a.message_id for a in post.articles)  # every segment once

    search = Search(db)
    name = sorted(by_name)[0]
    page = search.search(SearchQuery(text=name))
    assert [hit.name for hit in page.hits].count(name) == 1
    hit = next(h for h in page.hits if h.name == name)
    assert hit.groups == groups
    for group in groups:  # found from either group
        assert [h.guid for h in search.search(SearchQuery(text=name, group=group)).hits].count(hit.guid) == 1
    attrs = release_item("http://indexer.test/", hit, "k", extended=True)
    assert ("group", ",".join(groups)) in attrs.attrs
    with_segments = search.segments_row(hit.guid)
    assert with_segments is not None
    nzb = nzb_bytes(with_segments).decode()
    for listed in re.findall(r"<groups>(.*?)</groups>", nzb, re.S):
        assert re.findall(r"<group>([^<]+)</group>", listed) == list(groups)
    # Every file's subject as posted, at part 1 (issue 16)
    subjects = [html.unescape(s) for s in re.findall(r'<file [^>]*subject="([^"]*)"', nzb)]
    assert subjects
    assert set(subjects) <= post.first_subjects()


def test_releases_stored_before_issue_16_still_serve_nzbs_and_merge(db: Database) -> None:
    """A catalog written before issue 16 holds version 1 segment blobs (no subjects): its NZBs are
    written with subjects rebuilt from the names, and a fragment merged into such a release is stored
    in version 2, the new files with their subjects."""
    import html
    import re
    import struct
    from dataclasses import replace

    from usenet_indexer.catalog.nzbs import nzb_bytes
    from usenet_indexer.compression import zlib_compress

    bodies, _ = posted_batches(batch_articles=10**9)
    add_group(db)
    wire = decode_batch(bodies[0])
    release = max(wire.batch.fragments, key=lambda f: len(f.files))
    files = release.files
    v1 = [b"UIS1", struct.pack("<I", len(files))]
    for f in files:
        name = f.name.encode()
        v1 += [struct.pack("<HqqI", len(name), f.index, f.parts_total, len(f.parts)), name]
        v1 += [f.parts.tobytes(), f.sizes.tobytes(), f.articles.tobytes()]
        v1 += [struct.pack("<I", len(f.message_ids)), f.message_ids]
    head = replace(wire.batch, fragments=(release,), candidates=())
    with db.transaction() as tx:
        group_id = int(tx.run("group_by_name", {"name": GROUP})[0]["id"])
        store_batch(tx, group_id, GROUP, head, [zlib_compress(b"".join(v1), 1)])
        row = tx.one("release_segments_by_key", {"key": release.key})
    assert row is not None
    assert all(f.subject == "" for f in unpack_segments(bytes(row["segments"])))
    nzb = nzb_bytes(row).decode()
    subjects = [html.unescape(s) for s in re.findall(r'<file [^>]*subject="([^"]*)"', nzb)]
    assert len(subjects) == len(files)
    assert all(f' - "{f.name}" yEnc (1/' in " ".join(subjects) for f in files)
    # A later fragment of it, with subjects: merged and stored in version 2.
    with db.transaction() as tx:
        store_batch(tx, group_id, GROUP, replace(head, fragments=(release,)))
        row = tx.one("release_segments_by_key", {"key": release.key})
    assert row is not None
    merged = unpack_segments(bytes(row["segments"]))
    assert [f.subject for f in merged] == [f.subject for f in files]
    assert all(f.subject for f in merged)


def test_two_groups_batches_of_a_new_cross_post_never_both_insert_it(db: Database) -> None:
    """Issue 16: a cross-post's first batches from two groups, stored at once (on PostgreSQL each group's
    batches had a lock of their own, and both would insert the release: a unique violation). The
    second waits for the first, then merges into what it stored."""
    import threading
    import time

    from tests.support.crosspost import cross_post

    groups = ("alt.binaries.race.a", "alt.binaries.race.b")
    post = cross_post(groups)
    ids = {}
    with db.transaction() as tx:
        for group in groups:
            ids[group] = insert_group(tx, group)
    batches = {group: post.index(group)[0] for group in groups}
    stored, release = threading.Event(), threading.Event()
    outcome: list[object] = []

    def store_in(group: str, hold: bool) -> None:
        try:
            with db.transaction() as tx:
                store_batch(tx, ids[group], group, batches[group])
                if hold:
                    stored.set()
                    assert release.wait(30)
            outcome.append(group)
        except Exception as error:  # what the second got is the result
            outcome.append(error)
            stored.set()

    first = threading.Thread(target=store_in, args=(groups[0], True))
    first.start()
    assert stored.wait(30)
    second = threading.Thread(target=store_in, args=(groups[1], False))
    second.start()
    time.sleep(0.5)
    assert second.is_alive()  # waiting for the first's transaction
    release.set()
    first.join(30)
    second.join(30)
    assert outcome == list(groups)
    with db.transaction(write=False) as tx:
        rows = tx.sql("SELECT name, groups, segments FROM releases")
    assert len({row["name"] for row in rows}) == len(rows)
    assert {row["groups"] for row in rows} == {" ".join(groups)}
    ids_stored = [
        mid for row in rows for f in unpack_segments(bytes(row["segments"])) for mid in f.message_id_list()
    ]
    assert sorted(ids_stored) == sorted(a.message_id for a in post.articles)


def test_a_candidate_of_a_joined_key_is_queued_under_its_release(db: Database) -> None:
    """A probe candidate whose key was joined into another release (catalog/grouping.py) is queued
    under that release's key, whether a fragment of the batch has its key (looked up once for both,
    i17-store) or none does (looked up on its own)."""
    wire = decode_batch(posted_batches(batch_articles=10**9)[0][0])
    candidate = wire.batch.candidates[0]
    foreign = replace(candidate, key="a-key-no-fragment-has")
    batch = replace(wire.batch, candidates=(*wire.batch.candidates, foreign))
    assert foreign.key not in {f.key for f in batch.fragments}
    add_group(db)
    with db.transaction() as tx:
        for member, release in ((candidate.key, "joined-release"), (foreign.key, "another-release")):
            tx.execute("release_alias_insert", {"member_key": member, "release_key": release})
    with db.transaction() as tx:
        group_id = int(tx.run("group_by_name", {"name": GROUP})[0]["id"])
        store_batch(tx, group_id, GROUP, batch, wire.blobs, wire.categories)
    with db.transaction(write=False) as tx:
        queued = {str(row["release_key"]) for row in tx.sql("SELECT release_key FROM probe_queue")}
        stored = {str(row["key"]) for row in tx.sql("SELECT key FROM releases")}
    assert {"joined-release", "another-release"} <= queued
    assert candidate.key not in queued and foreign.key not in queued
    assert "joined-release" in stored and candidate.key not in stored
    others = {c.key for c in wire.batch.candidates[1:]} - {candidate.key}
    assert others <= queued

"""The batch store: a batch's release fragments merged into the catalog by key, inside the batch's
transaction (leases/ranges.py commit_batch), so that the releases and the range's resume point move
together or not at all.

Each release is one row, its files and segments one compressed blob (indexing/merge.py): a fragment
is merged with what is stored (parts deduplicated by file and part number), and the totals, name and
category are computed again. A group's batches merge one at a time (``batch_lock_group``), and so do
batches of groups that share a release: a cross-post is one release (issue 16), so a batch also locks
the stripe of every group its fragments name (``batch_lock_stripe``, in order), and two groups'
batches never both insert a release that was not stored yet. Stripes, not a lock per group name: a
batch takes at most ``LOCK_STRIPES`` locks however many groups a worker's fragments list (PostgreSQL's
lock table is shared and small).

Two things the catalog learnt after the fragment's key was made are applied here, in the batch's
transaction (issue 16): a key joined into another release (``release_aliases``: loose files joined by
catalog/grouping.py) is merged under the release's key, so a member indexed again never comes back;
and files the probe renamed (``releases.file_names``) are renamed in the fragment first, so that its
files meet theirs.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from usenet_indexer.db import Row, Tx
from usenet_indexer.indexing import (
    Batch,
    Category,
    ReleaseFragment,
    categorize,
    merge,
    pack_segments,
    totals,
    unpack_segments,
)
from usenet_indexer.indexing.bodies import with_members
from usenet_indexer.indexing.naming import normalise

KEYS_PER_QUERY = 5_000
LOCK_STRIPES = 64


def lock_stripes(groups: Iterable[str]) -> list[int]:
    """The merge-lock stripes of ``groups``, in the order they are taken: the same on every process
    (crc32, not hash(), which Python seeds per process)."""
    return sorted({zlib.crc32(g.encode("utf-8", "surrogateescape")) % LOCK_STRIPES for g in groups})


def search_name(name: str) -> str:
    """What full-text search indexes: the name with dots, dashes and underscores as spaces."""
    return normalise(name)


def stored_fragment(row: Row) -> ReleaseFragment:
    """The release as stored, in the fragment form merging works on."""
    return ReleaseFragment(
        key=row["key"],
        name=row["name"],
        poster=row["poster"],
        groups=tuple(row["groups"].split()),
        file_total=int(row["file_total"]),
        first_article=int(row["first_article"]),
        first_date=row["first_date"],
        last_article=int(row["last_article"]),
        last_date=row["last_date"],
        obfuscated=bool(row["obfuscated"]),
        request_id=row["request_id"],
        files=unpack_segments(bytes(row["segments"])),
    )


def release_row(
    release: ReleaseFragment, group: str, blob: bytes | None = None, category: Category | None = None
) -> dict[str, Any]:
    """The catalog row of ``release``; ``blob``, when given, is its files already packed (a worker's
    blob, checked on arrival: wire/batch.py), stored as is; ``category``, when given, the one the
    worker found for it (wire/batch.py says why it may)."""
    t = totals(release)
    if category is None:
        category = categorize(release.name, [f.name for f in release.files])
    return {
        "key": release.key,
        "name": release.name,
        "search_name": search_name(release.name),
        "poster": release.poster,
        "group_name": release.groups[0] if release.groups else group,
        "groups": " ".join(release.groups) if release.groups else group,
        "file_total": release.file_total,
        "files_seen": t.files_seen,
        "files_expected": t.files_expected,
        "parts_seen": t.parts_seen,
        "parts_expected": t.parts_expected,
        "completion": t.completion,
        "complete": t.complete,
        "size": t.size,
        "first_article": release.first_article,
        "last_article": release.last_article,
        "first_date": release.first_date,
        "last_date": release.last_date,
        "obfuscated": release.obfuscated,
        "request_id": release.request_id,
        "category": category.id,
        "season": category.season,
        "episode": category.episode,
        "episode_last": category.episode_last,
        "year": category.year,
        "resolution": category.resolution,
        # Level 1: four times the speed of the default for 5% more bytes (message-ids barely compress),
        # and packing was a quarter of the batch store's time.
        "segments": pack_segments(release.files, level=1) if blob is None else blob,
    }


def insert_releases(tx: Tx, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert catalog rows (``release_row``), and index them for full-text search: on SQLite in one
    statement after them (migration 0012: a trigger per row was half of the insert's cost); on
    PostgreSQL the vector is a generated column. Every insert of releases goes through here."""
    if not rows:
        return
    mark = tx.one("releases_search_mark")
    tx.executemany("release_insert", rows)
    tx.execute("releases_search_index", {"after": int(mark["id"]) if mark is not None else 0})


def _aliases(tx: Tx, keys: Sequence[str]) -> dict[str, str]:
    """The keys among ``keys`` joined into another release, and that release's key."""
    out: dict[str, str] = {}
    ordered = sorted(set(keys))
    for at in range(0, len(ordered), KEYS_PER_QUERY):
        chunk = ordered[at : at + KEYS_PER_QUERY]
        for row in tx.run("release_aliases_by_keys", {"keys": tx.array(chunk)}):
            out[str(row["member_key"])] = str(row["release_key"])
    return out


# A fragment as the worker posted it: its segment blob, and the category it found (None: none sent).
Posted = tuple[bytes, Category | None]


def _aliased(
    fragments: dict[str, ReleaseFragment], packed: dict[str, Posted], aliases: Mapping[str, str]
) -> tuple[dict[str, ReleaseFragment], dict[str, Posted]]:
    """``fragments`` with every key in ``aliases`` replaced by its release's (merged where several
    meet)."""
    if not aliases:
        return fragments, packed
    out: dict[str, ReleaseFragment] = {}
    blobs: dict[str, Posted] = {}
    for key, fragment in fragments.items():
        target = aliases.get(key, key)
        moved = fragment if target == key else replace(fragment, key=target)
        held = out.get(target)
        out[target] = moved if held is None else merge(held, moved)
        if held is None and target == key and key in packed:
            blobs[key] = packed[key]
        else:
            blobs.pop(target, None)  # merged or moved: packed again from the merged files
    return out, blobs


def lock_merges(tx: Tx, group_id: int, groups: Iterable[str]) -> None:
    """The merge locks of a write to a group's releases, in the one order every writer takes them
    (never a deadlock): the group's, then the stripes of every group the releases may be in
    (a batch, the grouping loop and the probe's rename)."""
    tx.execute("batch_lock_group", {"group_id": group_id})
    for stripe in lock_stripes(groups):
        tx.execute("batch_lock_stripe", {"stripe": stripe})


def renamed(fragment: ReleaseFragment, file_names: str | None) -> ReleaseFragment:
    """``fragment`` with its files renamed as the probe renamed the stored release's (``file_names``:
    JSON, posted name → real name)."""
    if not file_names:
        return fragment
    # The members of an obfuscated set the probe renamed by their suffixes: one stored after the probe
    # is renamed as the probe would have renamed it (test_run: the catalog of a run interrupted and
    # resumed differed from an uninterrupted one's by when the probe ran).
    names = with_members(json.loads(file_names), (f.name for f in fragment.files))
    if not any(f.name in names for f in fragment.files):
        return fragment
    files = sorted(
        (replace(f, name=names.get(f.name, f.name)) for f in fragment.files),
        key=lambda f: (f.name, f.parts_total),
    )
    return replace(fragment, files=tuple(files))


def run_row(run: ReleaseFragment, group: str) -> dict[str, Any]:
    """The ``loose_runs`` row of ``run`` (indexing/runs.py), stored under the indexing group."""
    return {
        "key": run.key,
        "group_name": group,
        "groups": " ".join(run.groups) if run.groups else group,
        "poster": run.poster,
        "first_article": run.first_article,
        "last_article": run.last_article,
        "first_date": run.first_date,
        "last_date": run.last_date,
        "articles": len(run.files),
        "max_size": max((f.size for f in run.files), default=0),
        "segments": pack_segments(run.files, level=1),
    }


def stored_run(row: Row) -> ReleaseFragment:
    """A ``loose_runs`` row in the fragment form merging works on."""
    return ReleaseFragment(
        key=str(row["key"]),
        name="",
        poster=str(row["poster"]),
        groups=tuple(str(row["groups"]).split()),
        file_total=0,
        first_article=int(row["first_article"]),
        first_date=row["first_date"],
        last_article=int(row["last_article"]),
        last_date=row["last_date"],
        obfuscated=True,
        request_id=None,
        files=unpack_segments(bytes(row["segments"])),
    )


def store_runs(tx: Tx, group: str, runs: Sequence[ReleaseFragment]) -> int:
    """A batch's runs merged into ``loose_runs`` by key (the batch's merge locks held); a run already
    joined into a release (its key an alias) is dropped: its burst was final when it was joined, so
    this is the same articles indexed again."""
    by_key: dict[str, ReleaseFragment] = {}
    for run in runs:
        held = by_key.get(run.key)
        by_key[run.key] = run if held is None else merge(held, run)
    joined = _aliases(tx, list(by_key))
    keys = sorted(set(by_key) - joined.keys())
    existing: dict[str, ReleaseFragment] = {}
    for at in range(0, len(keys), KEYS_PER_QUERY):
        for row in tx.run("runs_by_keys", {"keys": tx.array(keys[at : at + KEYS_PER_QUERY])}):
            existing[str(row["key"])] = stored_run(row)
    inserts = [run_row(by_key[k], group) for k in keys if k not in existing]
    updates = [run_row(merge(existing[k], by_key[k]), group) for k in keys if k in existing]
    tx.executemany("run_insert", inserts)
    tx.executemany("run_update", updates)
    return len(keys)


def store_batch(
    tx: Tx,
    group_id: int,
    group: str,
    batch: Batch,
    blobs: Sequence[bytes] = (),
    categories: Sequence[Category | None] = (),
) -> Mapping[str, Any]:
    """Merge ``batch`` into the catalog in ``tx``; what the worker is told it stored. ``blobs``, when
    given, are the fragments' segment blobs as posted, ``categories`` the categories the worker found
    for them: a new release is stored with its own blob, and in its category."""
    lock_merges(tx, group_id, {group, *(g for fragment in batch.fragments for g in fragment.groups)})
    fragments: dict[str, ReleaseFragment] = {}
    packed: dict[str, Posted] = {}
    for index, fragment in enumerate(batch.fragments):  # a batch holds each key once, but be sure
        held = fragments.get(fragment.key)
        fragments[fragment.key] = fragment if held is None else merge(held, fragment)
        if held is None and index < len(blobs):
            packed[fragment.key] = (blobs[index], categories[index] if index < len(categories) else None)
        else:
            packed.pop(fragment.key, None)
    looked = set(fragments)
    aliases = _aliases(tx, list(looked))
    fragments, packed = _aliased(fragments, packed, aliases)
    existing: dict[str, Row] = {}
    keys = sorted(fragments)  # sorted: row locks always taken in one order, never a deadlock
    for at in range(0, len(keys), KEYS_PER_QUERY):
        chunk = keys[at : at + KEYS_PER_QUERY]
        for row in tx.run("releases_by_keys", {"keys": tx.array(chunk)}):
            existing[row["key"]] = row
    inserts: list[dict[str, Any]] = []
    updates: list[dict[str, Any]] = []
    merged_segments = 0
    for key in keys:
        fragment = fragments[key]
        stored = existing.get(key)
        if stored is None:
            blob, category = packed.get(key, (None, None))
            inserts.append(release_row(fragment, group, blob, category))
        else:
            merged_segments += fragment.segment_count
            merged = merge(stored_fragment(stored), renamed(fragment, stored["file_names"]))
            updates.append({**release_row(merged, group), "id": stored["id"]})
    insert_releases(tx, inserts)
    tx.executemany("release_update", updates)
    # A candidate's key is its fragment's, looked up above (nothing in this transaction writes an
    # alias): a second query for the same keys, after the inserts, cost a round trip on PostgreSQL.
    others = [c.key for c in batch.candidates if c.key not in looked]
    moved = {**aliases, **_aliases(tx, others)} if others else aliases
    tx.executemany(
        "probe_enqueue",
        [
            {
                "key": moved.get(c.key, c.key),
                "par2_message_id": c.par2_message_id,
                "nfo_message_id": c.nfo_message_id,
                "archive_message_id": c.archive_message_id,
                # Password probes after the ones that name releases (migration 0014).
                "priority": 0 if c.archive_message_id is None else 1,
            }
            for c in batch.candidates
        ],
    )
    stored_runs = store_runs(tx, group, batch.runs) if batch.runs else 0
    return {
        "releases": len(fragments),
        "runs": stored_runs,
        "new": len(inserts),
        "merged": len(updates),
        "candidates": len(batch.candidates),
        "headers": batch.headers,
        # A new release's segments are its row's parts: counted once, by release_row.
        "segments": sum(row["parts_seen"] for row in inserts) + merged_segments,
    }

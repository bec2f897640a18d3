"""The batch a worker posts (version 3): a compressed JSON head, then one segment blob per release.

Body, little-endian::

    b"UIB3"  u32 head_length  head                  head: zlib'd JSON (below)
    then, once per fragment of the head, in order, then once per run:
             u32 blob_length  blob                  blob: that fragment's files and segments, in the
                                                    catalog's segment blob format (indexing/merge.py)

    head = {"range_id": int, "epoch": int,
            "batch": {"from_id", "to_id", "headers", "malformed": {reason: count}, "gaps", "undated",
                      "unmatched", "fragments": [fragment without "files"], "candidates": [...],
                      "runs": [run without "files"]}}

Version 3 added ``runs`` (issue 16: binary-sized articles no subject rule reads, indexing/runs.py).
A version 2 body is refused with a message saying to upgrade the worker: its batches would drop
those articles for good.

    A fragment may carry ``"category": [id, season, episode, episode_last, year, resolution]``, the
    worker's ``categorize`` of the release as the coordinator names it (``clean_name(collection)``) and
    its files (issue 17); a coordinator computes it itself for a fragment without one. A coordinator
    from before it refuses the field (unknown field): upgrade coordinators before workers.

Why blobs: version 1 was one gzip'd JSON document. Decoding and validating it, then packing every
release's blob again for the catalog, cost the coordinator ~6.5 µs a header against 2.5 µs to index
it (bench/stream.py: the end-to-end path at 0.3 x the indexer alone). Now the worker packs each
release once, the coordinator inflates and checks the blob (C-level calls per column), and a release
it has not stored yet - most of them - is stored with the worker's blob byte for byte (its files
checked and summed in one C pass, never built: merge.posted_files, issue 17), and in the
category the worker found for it: categorizing was the largest part of the coordinator's Python work per
release (0.17 of its 2.7-3.5 core-µs a header in a 1M-header ``run``, issue 17). A release merged with
one stored already is categorized again by the coordinator from the merged files, as before.

Decoding refuses, with a BatchError saying what and where: a body over the compressed cap; a head and
blobs that together inflate past the inflated cap (checked while inflating, so a zlib bomb costs at
most the cap); a bad magic, a truncated or garbage body, bytes after the last blob; a head that is not
JSON, unknown or missing fields, numbers that are negative, above 2**63-1 or not integers, a ``to_id``
before ``from_id``; a blob that is not a segment blob or whose columns disagree (fragment.check_file).

**What a body may cost is bounded by its own size**, before any JSON is parsed (issue 15: a head of
``{"fragments":[[],[],…]}``, 73 KB compressed and 75 MB inflated, raised the coordinator's memory by
1.95 GB before it was refused; a body nesting ``[`` 200,000 deep was a 500):

- everything a body inflates to is at most ``INFLATE_RATIO`` times the body (and the inflated cap);
  the head alone at most ``INFLATE_RATIO`` times its compressed bytes. Real heads inflate ~4.7 times,
  real segment blobs ~3.4 times (indexing/sample.py's releases);
- the head holds at most one JSON container (``[`` or ``{``, counted in strings too) per
  ``BYTES_PER_CONTAINER`` bytes: a real head has one per ~146;
- nesting too deep for the parser is refused, not a crash.

Parsing what passes costs at most ~12 bytes of Python objects per inflated head byte, so a body costs
the coordinator at most a few hundred times its size (tests/unit/hostile/test_hostile_bodies.py
measures it with tracemalloc).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from usenet_indexer.compression import InflateError, inflate_whole, zlib_compress
from usenet_indexer.indexing.categories import NAMES, Category, category_fields
from usenet_indexer.indexing.fragment import (
    MAX_INT,
    Batch,
    FileFragment,
    FormatError,
    PackedFiles,
    ReleaseFragment,
    batch_from_dict,
    batch_to_dict,
    candidate_to_dict,
    fragment_to_dict,
    summarize,
)
from usenet_indexer.indexing.indexer import release_key
from usenet_indexer.indexing.merge import (
    SegmentBlobError,
    checked_segments,
    column_range,
    pack_segments,
    posted_files,
)
from usenet_indexer.indexing.naming import clean_name, looks_obfuscated
from usenet_indexer.indexing.runs import check_run

WIRE_VERSION = 3
MAGIC = b"UIB3"
OLD_MAGICS = {b"UIB2": 2}
BATCH_MEDIA_TYPE = "application/vnd.usenet-indexer.batch"
MAX_COMPRESSED = 64 * 1024 * 1024
MAX_INFLATED = 768 * 1024 * 1024  # a 1,000,000-header batch inflates to ~80 MB
BLOB_LEVEL = 1  # the catalog stores these blobs as they come: level 1 is what it packs at itself
INFLATE_RATIO = 16  # what a body (and its head alone) may inflate to, times its own size
INFLATE_SLACK = 64 * 1024  # … plus this, for small bodies
BYTES_PER_CONTAINER = 48  # the densest head of JSON containers taken (a real one: ~146 bytes each)

_LENGTH = struct.Struct("<I")


class BatchError(ValueError):
    """A posted batch that is refused; the message says why."""


@dataclass(frozen=True, slots=True)
class WireBatch:
    range_id: int
    epoch: int
    batch: Batch
    blobs: tuple[bytes, ...]  # batch.fragments[i]'s segment blob, as posted: the catalog may keep it
    # batch.fragments[i]'s category as the worker found it (None: it sent none), kept with its blob
    categories: tuple[Category | None, ...] = ()


def encode_batch(batch: Batch, range_id: int, epoch: int) -> bytes:
    """The body to POST for ``batch`` of range ``range_id`` under lease epoch ``epoch``."""
    for name, value in (("range_id", range_id), ("epoch", epoch)):
        if not 0 <= value <= MAX_INT:
            raise BatchError(f"{name} {value} is out of range [0, {MAX_INT}]")
    head = batch_to_dict(replace(batch, fragments=(), candidates=(), runs=()))
    head["fragments"] = [
        {**fragment_to_dict(f, files=False), "category": category_list(f)} for f in batch.fragments
    ]
    head["candidates"] = [candidate_to_dict(c) for c in batch.candidates]
    head["runs"] = [fragment_to_dict(r, files=False) for r in batch.runs]
    text = json.dumps(
        {"range_id": range_id, "epoch": epoch, "batch": head}, separators=(",", ":"), ensure_ascii=False
    )
    packed_head = zlib_compress(text.encode(), 1)
    out = [MAGIC, _LENGTH.pack(len(packed_head)), packed_head]
    for fragment in (*batch.fragments, *batch.runs):
        blob = pack_segments(fragment.files, level=BLOB_LEVEL)
        out += (_LENGTH.pack(len(blob)), blob)
    return b"".join(out)


def category_list(fragment: ReleaseFragment) -> list[int | str | None]:
    """The head's ``category`` of ``fragment``: what the coordinator would find for it, named as the
    coordinator names it (check_authority)."""
    cid, _, season, episode, year, resolution, episode_last = category_fields(
        clean_name(fragment.collection), [f.name for f in fragment.files]
    )
    return [cid, season, episode, episode_last, year, resolution]


MAX_RESOLUTION = 16  # "2160p", "1080i", "4K": a resolution is a short tag
MAX_NUMBER = 2**31 - 1  # the catalog's season, episode and year columns are INTEGER


def category_from_list(obj: Any, where: str) -> Category:
    """A head's ``category``; BatchError when it is not one the coordinator could have found (an id
    of the newznab tree, numbers that fit the catalog's columns, a short resolution)."""
    if not isinstance(obj, list) or len(obj) != 6:
        raise BatchError(f"{where}: expected [id, season, episode, episode_last, year, resolution]")
    cid, season, episode, episode_last, year, resolution = obj
    if isinstance(cid, bool) or not isinstance(cid, int) or cid not in NAMES:
        raise BatchError(f"{where}: {cid!r} is not a category id")
    for name, value in (
        ("season", season),
        ("episode", episode),
        ("episode_last", episode_last),
        ("year", year),
    ):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_NUMBER
        ):
            raise BatchError(f"{where}: {name} {value!r} is not an integer in [0, {MAX_NUMBER}]")
    if resolution is not None and (
        not isinstance(resolution, str) or not 0 < len(resolution) <= MAX_RESOLUTION
    ):
        raise BatchError(f"{where}: resolution {str(resolution)[:32]!r} is not a short tag")
    return Category(cid, None, season, episode, year, resolution, episode_last)


def decode_batch(
    data: bytes, max_compressed: int = MAX_COMPRESSED, max_inflated: int = MAX_INFLATED
) -> WireBatch:
    """The batch in a posted body; BatchError when it is refused."""
    if len(data) > max_compressed:
        raise BatchError(
            f"batch body of {len(data)} bytes is over the {max_compressed}-byte cap: post smaller batches "
            "(fewer articles per batch)"
        )
    view = memoryview(data)
    old = OLD_MAGICS.get(bytes(view[:4]))
    if old is not None:
        raise BatchError(
            f"batch body is wire version {old}; this coordinator reads version {WIRE_VERSION} (batches "
            "carry loose articles since): upgrade the worker"
        )
    if bytes(view[:4]) != MAGIC:
        raise BatchError(
            f"batch body does not start with {MAGIC!r} (version {WIRE_VERSION}): the worker and the "
            "coordinator run different releases, or this is not a batch; upgrade the older one"
        )
    budget = _Budget(min(max_inflated, INFLATE_RATIO * len(data) + INFLATE_SLACK))
    head_bytes, at = _field(view, 4, "head")
    head_cap = min(budget.left, INFLATE_RATIO * len(head_bytes) + INFLATE_SLACK)
    document = _head(budget.inflate(head_bytes, "head", head_cap))
    head = document["batch"] if isinstance(document["batch"], dict) else {}
    listed = head.get("fragments")
    categories: list[Category | None] = []
    for index in range(len(listed) if isinstance(listed, list) else 0):
        fragment = listed[index] if isinstance(listed, list) else None
        given = fragment.pop("category", None) if isinstance(fragment, dict) else None
        where = f"batch.fragments[{index}].category"
        categories.append(None if given is None else category_from_list(given, where))
    blobs: list[bytes] = []
    files: dict[str, list[Sequence[FileFragment]]] = {"fragments": [], "runs": []}
    for what in ("fragments", "runs"):
        listed = head.get(what)
        # A release's files are checked and summed without being built (posted_files): most are
        # stored as posted. A run's are checked one by one (check_run), so built at once.
        check = posted_files if what == "fragments" else checked_segments
        for index in range(len(listed) if isinstance(listed, list) else 0):
            name = f"{what[:-1]} {index}'s segment blob"
            blob, at = _field(view, at, name)
            data = budget.inflate(blob, name)
            try:
                files[what].append(check(data))
            except SegmentBlobError as error:
                raise BatchError(f"batch.{what}[{index}].files: {error}") from None
            if what == "fragments":
                blobs.append(blob)
    if at != len(view):
        raise BatchError(f"batch body has {len(view) - at} bytes after its last segment blob")
    try:
        batch = batch_from_dict(document["batch"], files=files["fragments"], run_files=files["runs"])
    except FormatError as error:
        raise BatchError(str(error)) from None
    return WireBatch(
        range_id=document["range_id"],
        epoch=document["epoch"],
        batch=batch,
        blobs=tuple(blobs),
        categories=tuple(categories),
    )


def check_authority(batch: Batch, *, group: str, low: int, high: int) -> Batch:
    """``batch`` as the coordinator takes it from a node whose lease covers articles ``low``–``high`` of
    ``group``; BatchError when it reaches beyond that (issue 15: a node posted a fragment under the key
    of a popular release, with another poster and files pointing at its own message-ids, and the
    release then listed them).

    - Every release's key is made here, from its poster, collection and file total, and must be the one
      the fragment names: a node cannot write into a release other nodes built, except with articles of
      its own lease that read as that release. The key holds no group (a cross-post is one release, issue
      16), and a fragment lists the lease's group among its groups.
    - Every segment, and each release's first and last article, lies within ``low``–``high``.
    - Names are made here from the collection, as the indexer makes them.
    - A new release's category is the worker's (``WireBatch.categories``, checked to be a category the
      coordinator could have found: decode_batch), not made again here (issue 17). It is a heuristic of
      the name and the file names, both of which the node chooses for the articles of its own lease, so
      a node that may post a release at all can steer its category either way; what it must not do —
      name another release's key, or claim articles outside its lease — is still checked here. A
      release merged with one stored already is categorized by the coordinator from the merged files.
    - Every run (loose articles, indexing/runs.py) has the key of its poster, this lease's group and
      its block of article numbers, and each of its files is one article named by its message-id
      (``runs.check_run``); its name is empty (the grouping loop and the probe name what it joins).
    - A probe candidate of a release in the batch names message-ids of that release's own segments (a
      probe fetches them, and renames the release from what they hold). A lane's candidates may name a
      release its window still holds open: the probe checks those against the stored release
      (catalog/probe.py).
    """
    checked = []
    by_key: dict[str, ReleaseFragment] = {}
    for index, fragment in enumerate(batch.fragments):
        where = f"batch.fragments[{index}]"
        key = release_key(fragment.poster, fragment.collection, fragment.file_total)
        if fragment.key != key:
            raise BatchError(
                f"{where}: key {fragment.key[:64]!r} is not the key of its poster, collection and file total "
                f"({key}); the coordinator makes release keys itself"
            )
        if group not in fragment.groups:
            raise BatchError(
                f"{where}: groups {list(fragment.groups)[:8]} do not hold this lease's group {group}"
            )
        articles = summarize(fragment.files).articles  # all files' at once: a posted blob's, unbuilt
        if articles is not None and not low <= articles[0] <= articles[1] <= high:
            for position, file in enumerate(fragment.files):  # which file: said in the refusal
                if not file.articles:
                    continue
                first, last = column_range(file.articles)
                if not low <= first <= last <= high:
                    raise BatchError(
                        f"{where}.files[{position}]: articles {first}-{last} are outside this lease's "
                        f"articles {low}-{high}"
                    )
        if not low <= fragment.first_article <= fragment.last_article <= high:
            raise BatchError(
                f"{where}: articles {fragment.first_article}-{fragment.last_article} are outside this "
                f"lease's articles {low}-{high}"
            )
        name = clean_name(fragment.collection)
        if name == fragment.name and fragment.obfuscated == looks_obfuscated(name):
            checked.append(fragment)  # named as the coordinator names it: the worker's, as is
        else:
            checked.append(_named(fragment, name))
        by_key[key] = fragment
    for index, candidate in enumerate(batch.candidates):
        held = by_key.get(candidate.key)
        if held is None:
            continue  # checked when probed, against the release as stored
        for mid in (
            candidate.par2_message_id or None,
            candidate.nfo_message_id,
            candidate.archive_message_id,
        ):
            if mid is not None and not _is_segment(held, mid):
                raise BatchError(
                    f"batch.candidates[{index}]: message-id {mid[:100]!r} is not a segment of its release"
                )
    runs = []
    for index, run in enumerate(batch.runs):
        where = f"batch.runs[{index}]"
        why = check_run(run, group)
        if why is not None:
            raise BatchError(f"{where}: {why}; the coordinator makes run keys itself")
        if group not in run.groups:
            raise BatchError(f"{where}: groups {list(run.groups)[:8]} do not hold this lease's group {group}")
        if not low <= run.first_article <= run.last_article <= high:
            raise BatchError(
                f"{where}: articles {run.first_article}-{run.last_article} are outside this lease's "
                f"articles {low}-{high}"
            )
        runs.append(replace(run, name="", obfuscated=True, collection=""))
    return replace(batch, fragments=tuple(checked), runs=tuple(runs))


def _named(fragment: ReleaseFragment, name: str) -> ReleaseFragment:
    """``fragment`` under the name the coordinator made: one construction, where dataclasses.replace
    cost a quarter of check_authority per release."""
    return ReleaseFragment(
        key=fragment.key,
        name=name,
        poster=fragment.poster,
        groups=fragment.groups,
        file_total=fragment.file_total,
        first_article=fragment.first_article,
        first_date=fragment.first_date,
        last_article=fragment.last_article,
        last_date=fragment.last_date,
        obfuscated=looks_obfuscated(name),
        request_id=fragment.request_id,
        files=fragment.files,
        collection=fragment.collection,
    )


def _is_segment(fragment: ReleaseFragment, mid: str) -> bool:
    """Whether ``mid`` is one of the message-ids of ``fragment``'s segments: a search of each file's
    joined ids, not a set of all of them (which decoded and split every id of every release with a
    candidate, per file)."""
    try:
        needle = mid.encode()
    except UnicodeEncodeError:  # a lone surrogate: no segment's id (they are UTF-8)
        return False
    if not needle or b"\n" in needle:
        return False
    if isinstance(fragment.files, PackedFiles):  # the same search in C, without building the files
        return fragment.files.has_message_id(needle)
    for file in fragment.files:
        ids = file.message_ids
        at = ids.find(needle)
        while at >= 0:
            end = at + len(needle)
            if (at == 0 or ids[at - 1] == 0x0A) and (end == len(ids) or ids[end] == 0x0A):
                return True
            at = ids.find(needle, at + 1)
    return False


def _field(view: memoryview, at: int, what: str) -> tuple[bytes, int]:
    """The length-prefixed bytes at ``at``, and where the next field starts."""
    if at + _LENGTH.size > len(view):
        raise BatchError(f"batch body is truncated before the {what}")
    (length,) = _LENGTH.unpack_from(view, at)
    at += _LENGTH.size
    if at + length > len(view):
        raise BatchError(f"batch body is truncated in the {what} ({length} bytes announced)")
    return bytes(view[at : at + length]), at + length


@dataclass
class _Budget:
    """What is left of the inflated cap, across the head and every blob of one body."""

    left: int

    def inflate(self, data: bytes, what: str, cap: int | None = None) -> bytes:
        try:
            out = inflate_whole(data, self.left if cap is None else min(cap, self.left))
        except InflateError as error:
            raise BatchError(
                f"batch {what} {error} (a body inflates to {INFLATE_RATIO} times its size at most)"
            ) from None
        self.left -= len(out)
        return out


def _refuse_constant(name: str) -> Any:
    raise BatchError(f"batch JSON holds {name}, which is not a number")


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise BatchError(f"batch JSON repeats the field {key!r}")
        out[key] = value
    return out


def _head(text: bytes) -> dict[str, Any]:
    containers = text.count(b"[") + text.count(b"{")
    if containers > len(text) // BYTES_PER_CONTAINER + 256:
        raise BatchError(
            f"batch head holds {containers} JSON arrays and objects in {len(text)} bytes: more than one in "
            f"{BYTES_PER_CONTAINER} bytes is not a batch"
        )
    try:
        document = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_no_repeats)
    except RecursionError:
        raise BatchError("batch head nests JSON deeper than a batch ever does") from None
    except (ValueError, UnicodeDecodeError) as error:
        if isinstance(error, BatchError):
            raise
        raise BatchError(f"batch head is not JSON: {error}") from None
    if not isinstance(document, dict):
        raise BatchError("batch head must be a JSON object")
    expected = {"range_id", "epoch", "batch"}
    unknown = set(document) - expected
    if unknown:
        raise BatchError(f"batch has unknown field(s) {', '.join(sorted(unknown))}")
    missing = expected - set(document)
    if missing:
        raise BatchError(f"batch lacks field(s) {', '.join(sorted(missing))}")
    for name in ("range_id", "epoch"):
        value = document[name]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT:
            raise BatchError(f"{name} {value!r} is not an integer in [0, {MAX_INT}]")
    return document

"""Merging release fragments, release totals, and the compact segment blob the catalog keeps.

``merge`` is commutative and associative (tests/unit/indexing check it with hypothesis), so fragments
of a release merged in any order and grouping give the same release: the coordinator may store batches
of different ranges in whatever order their workers post them. Every choice between two fragments'
values is therefore a total order, never "the first one": the lowest article wins a part seen twice,
the smallest name wins between spellings, the dates of the lowest and highest article are kept.

The catalog stores a release as one row plus ONE segment blob (``pack_segments``), never a row per
part: the part tables of older indexers reached tens of millions of rows.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from usenet_indexer import accelerator
from usenet_indexer.compression import InflateError, inflate_whole, zlib_compress
from usenet_indexer.indexing.fragment import (
    MAX_MESSAGE_ID,
    MAX_TEXT,
    FileFragment,
    FileSummary,
    FormatError,
    PackedFiles,
    ReleaseFragment,
    check_file,
    column_range,
    int_array,
    summarize,
)
from usenet_indexer.indexing.naming import looks_obfuscated


class MergeError(ValueError):
    """Fragments that cannot be merged (different keys): a caller's bug."""


class SegmentBlobError(ValueError):
    """A segment blob that cannot be read: truncated, not ours, or corrupt."""


def merge(a: ReleaseFragment, b: ReleaseFragment) -> ReleaseFragment:
    """One fragment holding both; ``merge(a, b) == merge(b, a)``."""
    if a.key != b.key:
        raise MergeError(f"cannot merge fragments of different releases ({a.key} and {b.key})")
    files = {(f.name, f.parts_total): f for f in a.files}
    for f in b.files:
        ident = (f.name, f.parts_total)
        mine = files.get(ident)
        files[ident] = f if mine is None else merge_files(mine, f)
    first_article, first_date = min(
        (a.first_article, _date_order(a.first_date)), (b.first_article, _date_order(b.first_date))
    )
    last_article, last_date = max(
        (a.last_article, -_date_order(a.last_date)), (b.last_article, -_date_order(b.last_date))
    )
    name = min(a.name, b.name)
    requests = [r for r in (a.request_id, b.request_id) if r is not None]
    return ReleaseFragment(
        key=a.key,
        name=name,
        poster=min(a.poster, b.poster),
        groups=tuple(sorted(set(a.groups) | set(b.groups))),
        file_total=max(a.file_total, b.file_total),
        first_article=first_article,
        first_date=_date_back(first_date),
        last_article=last_article,
        last_date=_date_back(-last_date),
        obfuscated=looks_obfuscated(name),
        request_id=min(requests) if requests else None,
        files=tuple(files[ident] for ident in sorted(files)),
        collection=a.collection or b.collection,  # the catalog's own rows keep none
    )


# Dates are compared with None after every real date (a known date wins a tie on the article number).
_NO_DATE = 2**62


def _date_order(date: int | None) -> int:
    return _NO_DATE if date is None else date


def _date_back(value: int) -> int | None:
    return None if value == _NO_DATE else value


def merge_files(x: FileFragment, y: FileFragment) -> FileFragment:
    """The segments of both; a part in both keeps the segment with the lowest (article, size, id), so
    the same article seen in two groups (a cross-post: other numbers, one message-id) is one segment.
    The subject is the smallest known one (each is the posted subject at part 1: they differ only
    where a poster's tags did)."""
    index = min((i for i in (x.index, y.index) if i), default=0)
    subject = min(x.subject, y.subject) if x.subject and y.subject else x.subject or y.subject
    if x.parts and y.parts and x.parts[-1] < y.parts[0]:
        return _concat(x, y, index, subject)
    if x.parts and y.parts and y.parts[-1] < x.parts[0]:
        return _concat(y, x, index, subject)
    best: dict[int, tuple[int, int, str]] = {}
    for f in (x, y):
        for part, size, mid, article in f.segments():
            candidate = (article, size, mid)
            held = best.get(part)
            if held is None or candidate < held:
                best[part] = candidate
    parts = sorted(best)
    chosen = [best[p] for p in parts]
    return FileFragment(
        name=x.name,
        index=index,
        parts_total=x.parts_total,
        parts=int_array(parts),
        sizes=int_array(c[1] for c in chosen),
        articles=int_array(c[0] for c in chosen),
        message_ids="\n".join(c[2] for c in chosen).encode(),
        subject=subject,
    )


def _concat(low: FileFragment, high: FileFragment, index: int, subject: str) -> FileFragment:
    return FileFragment(
        name=low.name,
        index=index,
        parts_total=low.parts_total,
        parts=low.parts + high.parts,
        sizes=low.sizes + high.sizes,
        articles=low.articles + high.articles,
        message_ids=low.message_ids + b"\n" + high.message_ids,
        subject=subject,
    )


def merge_all(fragments: Iterable[ReleaseFragment]) -> dict[str, ReleaseFragment]:
    """Fragments merged by key: the catalog's releases, as a dict."""
    out: dict[str, ReleaseFragment] = {}
    for fragment in fragments:
        held = out.get(fragment.key)
        out[fragment.key] = fragment if held is None else merge(held, fragment)
    return out


@dataclass(frozen=True, slots=True)
class ReleaseTotals:
    """What the catalog shows of a release's completeness and size."""

    files_seen: int
    files_expected: int
    parts_seen: int
    parts_expected: int
    completion: float  # percent, 0-100
    size: int  # bytes of the segments seen
    first_date: int | None
    last_date: int | None
    complete: bool


def totals(release: ReleaseFragment) -> ReleaseTotals:
    """Files and parts seen against expected, completion and size.

    Files not seen yet are expected to have as many parts as the seen files have on average, so a
    release missing a whole file is not reported complete. A file total of 0 (the subjects carried no
    file counter) means the files seen are all there is to expect.
    """
    # One pass over the files (the batch store computes this for every release it stores: four
    # generator passes were most of its Python per release), or none: a posted blob's summary.
    summary = summarize(release.files)
    files_seen, parts_seen, size = summary.files, summary.parts_seen, summary.size
    files_expected = max(release.file_total, files_seen)
    known = parts_expected = summary.parts_known
    if files_expected > files_seen and files_seen:
        parts_expected += round(known / files_seen) * (files_expected - files_seen)
    completion = 100.0 * parts_seen / parts_expected if parts_expected else 0.0
    return ReleaseTotals(
        files_seen=files_seen,
        files_expected=files_expected,
        parts_seen=parts_seen,
        parts_expected=parts_expected,
        completion=min(100.0, round(completion, 2)),
        size=size,
        first_date=release.first_date,
        last_date=release.last_date,
        complete=files_seen == files_expected and parts_seen == parts_expected and parts_expected > 0,
    )


def is_complete(release: ReleaseFragment) -> bool:
    """Every expected file with every part (a file total of 0 counts the files seen as all)."""
    if release.file_total and len(release.files) < release.file_total:
        return False
    return bool(release.files) and all(f.parts_total and len(f.parts) == f.parts_total for f in release.files)


# ---- the segment blob ------------------------------------------------------------------------------
#
# zlib( "UIS2" u32:file_count, then per file:
#        u16:name_length i64:index i64:parts_total u32:n u16:subject_length name(utf-8) subject(utf-8)
#        n x i64 parts, n x i64 sizes, n x i64 articles, u32:ids_length ids("\n"-joined, utf-8) )
# Little-endian. Columns of int64 compress well (zlib squeezes the high zero bytes), and packing is a
# few C-level calls per file, so a release of 50,000 parts packs in milliseconds.
#
# Version 1 ("UIS1", before issue 16) has no subject_length and no subject: the catalogs and windows
# written before hold it, and old workers post it, so it is read still (a subject of ""); it is
# never written.

_MAGIC = b"UIS2"
_MAGIC_V1 = b"UIS1"
_HEAD = struct.Struct("<4sI")
_FILE = struct.Struct("<HqqIH")
_FILE_V1 = struct.Struct("<HqqI")
_IDS = struct.Struct("<I")
MAX_BLOB_INFLATED = 512 * 1024 * 1024


def _le(column: Sequence[int]) -> bytes:
    values = int_array(column)
    if sys.byteorder == "big":
        values.byteswap()
    return values.tobytes()


def pack_segments(files: Sequence[FileFragment], level: int = 4) -> bytes:
    """A release's files and segments as one compressed blob (a zlib stream).

    Packing is a third of the batch store's work per release (bench/demo.py): libdeflate at level 4
    writes blobs as small as zlib's level 6 in a third of the time (0.48 against 1.45 µs per segment,
    measured on the sample's releases)."""
    return zlib_compress(segment_blob(files), level)


def segment_blob(files: Sequence[FileFragment]) -> bytes:
    """The blob's bytes before compression. The C accelerator lays them out in one pass where it is
    built (on little-endian hosts, the blob's byte order); a column that is not an int64 array (a
    list) takes the Python path, which converts it."""
    native = accelerator.speedups
    if native is not None and sys.byteorder == "little":
        try:
            return native.segment_blob(files)
        except TypeError:
            pass
    out = [_HEAD.pack(_MAGIC, len(files))]
    for f in files:
        name = f.name.encode()
        subject = f.subject.encode()
        for what, text in (("file name", name), ("subject", subject)):
            if len(text) > 0xFFFF:
                raise ValueError(f"{what} of {len(text)} bytes cannot be packed (limit 65535)")
        n = len(f.parts)
        out.append(_FILE.pack(len(name), f.index, f.parts_total, n, len(subject)))
        out.append(name)
        out.append(subject)
        out.append(_le(f.parts))
        out.append(_le(f.sizes))
        out.append(_le(f.articles))
        out.append(_IDS.pack(len(f.message_ids)))
        out.append(f.message_ids)
    return b"".join(out)


def unpack_segments(blob: bytes, max_inflated: int = MAX_BLOB_INFLATED) -> tuple[FileFragment, ...]:
    """The files of a blob made by ``pack_segments``; SegmentBlobError when it is not one."""
    return parse_segments(inflate_segments(blob, max_inflated))


def inflate_segments(blob: bytes, max_inflated: int = MAX_BLOB_INFLATED) -> bytes:
    """A segment blob inflated, refused past ``max_inflated`` bytes (checked while inflating: a
    blob from another machine may be a zlib bomb), truncated, or followed by other bytes."""
    try:
        return inflate_whole(blob, max_inflated)
    except InflateError as error:
        raise SegmentBlobError(f"segment blob {error}") from None


def checked_segments(data: bytes) -> tuple[FileFragment, ...]:
    """The files of an inflated blob from another machine, each one checked (fragment.check_file);
    SegmentBlobError when the blob or a file is not sound.

    The C accelerator parses and checks in one pass when it is built (on little-endian hosts, the
    blob's byte order): in Python this was most of the coordinator's work on a batch (bench/stream.py)."""
    native = accelerator.speedups
    if native is not None and sys.byteorder == "little":
        try:
            return tuple(native.segment_files(data, MAX_TEXT, MAX_MESSAGE_ID, FileFragment))
        except ValueError as error:
            raise SegmentBlobError(f"segment blob: {error}") from None
    try:
        return tuple(check_file(f, f"file {i}") for i, f in enumerate(parse_segments(data)))
    except FormatError as error:
        raise SegmentBlobError(f"segment blob: {error}") from None


def posted_files(data: bytes) -> Sequence[FileFragment]:
    """The files of an inflated blob from another machine, checked as ``checked_segments`` checks them
    (the same refusals), but where the C accelerator is built, not built: a PackedFiles of the blob and
    its summary, its files made on first use. A batch's new releases are stored without them (issue 17:
    building each file's objects was a third of the coordinator's decode)."""
    native = accelerator.speedups
    if native is not None and sys.byteorder == "little":
        try:
            summary = FileSummary(*native.segment_summary(data, MAX_TEXT, MAX_MESSAGE_ID))
        except ValueError as error:
            raise SegmentBlobError(f"segment blob: {error}") from None
        return PackedFiles(data, summary, native)
    return checked_segments(data)


def parse_segments(data: bytes) -> tuple[FileFragment, ...]:
    """The files of an inflated segment blob (``inflate_segments``)."""
    view = memoryview(data)
    try:
        magic, count = _HEAD.unpack_from(view, 0)
        if magic not in (_MAGIC, _MAGIC_V1):
            raise SegmentBlobError(f"not a segment blob (magic {bytes(magic)!r})")
        v1 = magic == _MAGIC_V1
        at = _HEAD.size
        files = []
        for _ in range(count):
            if v1:
                name_length, index, parts_total, n = _FILE_V1.unpack_from(view, at)
                subject_length = 0
                at += _FILE_V1.size
            else:
                name_length, index, parts_total, n, subject_length = _FILE.unpack_from(view, at)
                at += _FILE.size
            raw_name = bytes(view[at : at + name_length])
            at += name_length
            raw_subject = bytes(view[at : at + subject_length])
            at += subject_length
            if len(raw_name) != name_length or len(raw_subject) != subject_length:
                raise SegmentBlobError("segment blob is truncated")
            name, subject = raw_name.decode(), raw_subject.decode()
            columns = []
            for _column in range(3):
                raw = view[at : at + 8 * n]
                if len(raw) != 8 * n:
                    raise SegmentBlobError("segment blob is truncated")
                column = int_array()
                column.frombytes(raw)
                if sys.byteorder == "big":
                    column.byteswap()
                columns.append(column)
                at += 8 * n
            (ids_length,) = _IDS.unpack_from(view, at)
            at += _IDS.size
            ids = bytes(view[at : at + ids_length])
            if len(ids) != ids_length:
                raise SegmentBlobError("segment blob is truncated")
            at += ids_length
            if (ids.count(b"\n") + 1 if ids else 0) != n:
                raise SegmentBlobError(f"segment blob: file {name!r} has {n} parts but other message-ids")
            files.append(
                FileFragment(name, index, parts_total, columns[0], columns[1], columns[2], ids, subject)
            )
    except (struct.error, UnicodeDecodeError) as error:
        raise SegmentBlobError(f"segment blob is truncated or corrupt: {error}") from None
    if at != len(data):
        raise SegmentBlobError(f"segment blob has {len(data) - at} bytes after its last file")
    return tuple(files)


__all__ = [
    "MergeError",
    "ReleaseTotals",
    "SegmentBlobError",
    "checked_segments",
    "column_range",
    "inflate_segments",
    "is_complete",
    "merge",
    "merge_all",
    "merge_files",
    "pack_segments",
    "parse_segments",
    "posted_files",
    "totals",
    "unpack_segments",
]

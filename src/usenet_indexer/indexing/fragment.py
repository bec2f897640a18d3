"""What indexing produces: release fragments, probe candidates and batches, and their plain-dict form.

A file's segments are kept as columns (int64 arrays and one newline-joined bytes of message-ids), not one
object per part: a 1,000,000-header batch holds ~110 MB (bench/index.py), where a tuple per segment
would cost ~250 bytes each, and moving a file's segments to JSON or to the catalog's blob is a handful
of C-level calls instead of a loop.

The dict form (``*_to_dict`` / ``*_from_dict``) is what the batch wire format and the window snapshot
carry. Decoding is strict: unknown or missing fields, wrong types and numbers out of range raise
``FormatError`` naming the field, because a batch comes from another machine.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, overload

from usenet_indexer import accelerator

if TYPE_CHECKING:
    from usenet_indexer.accelerator import Speedups

MAX_INT = 2**63 - 1
MAX_TEXT = 8 * 1024  # names, posters, keys
MAX_MESSAGE_ID = 1024
MAX_KEY = 128  # a release's key
MAX_REQUEST_ID = 64


class FormatError(ValueError):
    """A dict that is not a valid fragment or batch; the message names the field."""


class FileSegment(NamedTuple):
    part: int
    size: int
    message_id: str
    article: int


def int_array(values: Any = ()) -> array[int]:
    return array("q", values)


@dataclass(frozen=True, slots=True)
class FileFragment:
    """The segments of one file seen so far: parallel columns sorted by part number, one per part."""

    name: str
    index: int  # file i of n; 0 when unknown
    parts_total: int  # yEnc part total; 0 when unknown
    parts: array[int]
    sizes: array[int]
    articles: array[int]
    message_ids: bytes  # b"\n".join of the message-ids, without angle brackets
    # The subject the file was posted under, its part counter at part 1: what an NZB's <file subject>
    # shows (issue 16: it was rebuilt from the parsed name). "" where unknown: releases stored before.
    subject: str = ""

    @property
    def size(self) -> int:
        return sum(self.sizes)

    def message_id_list(self) -> list[str]:
        return self.message_ids.decode().split("\n") if self.message_ids else []

    def segments(self) -> Iterator[FileSegment]:
        ids = self.message_id_list()
        for part, size, mid, article in zip(self.parts, self.sizes, ids, self.articles, strict=True):
            yield FileSegment(part, size, mid, article)


@dataclass(frozen=True, slots=True)
class ReleaseFragment:
    """Part of a release, as seen in one batch (or merged from many: the same shape serves both)."""

    key: str  # stable across batches, ranges and workers; see indexer.release_key
    name: str  # cleaned release name
    poster: str
    groups: tuple[str, ...]  # sorted
    file_total: int  # 0 when unknown
    first_article: int
    first_date: int | None  # Date of the lowest-numbered article
    last_article: int
    last_date: int | None  # Date of the highest-numbered article
    obfuscated: bool
    request_id: str | None
    # Sorted by (name, parts_total). A tuple, or a batch's checked segment blob whose files are built
    # on first use (PackedFiles: a release new to the catalog never needs them, issue 17).
    files: Sequence[FileFragment]
    # The release's name as posted (rules.SubjectMatch.collection): with the poster and the file total
    # it is what the key is made of (no group: a cross-post is one release, issue 16), and the name is
    # made from it, so the coordinator can make both itself instead of taking a worker's word for them
    # (wire/batch.py). "" where unknown (a release
    # as the catalog stores it).
    collection: str = ""

    @property
    def segment_count(self) -> int:
        if isinstance(self.files, PackedFiles):
            return self.files.summary.parts_seen
        return sum(len(f.parts) for f in self.files)


class FileSummary(NamedTuple):
    """What the coordinator reads of a release's files when it stores a release new to the catalog:
    the totals' inputs and what its checks need. Made from the files (``summarize``) or, without
    building them, from their checked segment blob (``PackedFiles``, the C accelerator's
    segment_summary: issue 17, building each file's objects was ~2.6 µs a file of the batch route)."""

    files: int
    parts_seen: int
    parts_known: int  # each file's parts_total, or its parts seen where that is 0
    size: int  # bytes of the segments seen
    articles: tuple[int, int] | None  # the lowest and highest article of every segment; None: none
    in_order: bool  # sorted by (name, parts_total) and without repeats


def summarize(files: Sequence[FileFragment]) -> FileSummary:
    """``files``' summary: a PackedFiles' own, or one pass over the files (the C pass's twin)."""
    if isinstance(files, PackedFiles):
        return files.summary
    parts_seen = known = size = 0
    low = high = -1
    in_order = True
    previous: tuple[str, int] | None = None
    for f in files:
        n = len(f.parts)
        parts_seen += n
        known += f.parts_total or n
        size += sum(f.sizes)
        if n:
            first, last = column_range(f.articles)
            low = first if high < 0 else min(low, first)
            high = max(high, last)
        ident = (f.name, f.parts_total)
        in_order = in_order and (previous is None or previous < ident)
        previous = ident
    return FileSummary(len(files), parts_seen, known, size, None if high < 0 else (low, high), in_order)


def column_range(column: array[int]) -> tuple[int, int]:
    """The smallest and largest value of a non-empty column: one C pass where the accelerator is built
    (min() and max() make an int of every value; for a batch's articles that was half of
    check_authority, issue 17)."""
    native = accelerator.speedups
    if native is not None and isinstance(column, array) and column.typecode == "q":
        return native.column_range(column)
    return min(column), max(column)


class PackedFiles(Sequence[FileFragment]):
    """A release's files as a worker posted them: their segment blob, inflated and checked in one C
    pass (merge.posted_files), and its summary; the files themselves are built on first use (a merge
    with a stored release, a rename, an old worker's batch without categories). A release new to the
    catalog is stored from the summary and the blob as posted, its files never built (issue 17)."""

    __slots__ = ("_data", "_files", "_native", "summary")

    def __init__(self, data: bytes, summary: FileSummary, native: Speedups) -> None:
        self._data = data
        self._native = native  # the accelerator that checked ``data`` (tests switch the module's off)
        self._files: tuple[FileFragment, ...] | None = None
        self.summary = summary

    def unpacked(self) -> tuple[FileFragment, ...]:
        if self._files is None:
            built = self._native.segment_files(self._data, MAX_TEXT, MAX_MESSAGE_ID, FileFragment)
            self._files = tuple(built)
        return self._files

    def has_message_id(self, message_id: bytes) -> bool:
        """Whether ``message_id`` (not empty, no LF) is a whole message-id of one of the files."""
        return self._native.segment_has_id(self._data, message_id)

    def __len__(self) -> int:
        return self.summary.files

    @overload
    def __getitem__(self, index: int) -> FileFragment: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[FileFragment, ...]: ...
    def __getitem__(self, index: int | slice) -> FileFragment | tuple[FileFragment, ...]:
        return self.unpacked()[index]

    def __iter__(self) -> Iterator[FileFragment]:
        return iter(self.unpacked())

    def __eq__(self, other: object) -> bool:
        # Equal to the same files however held: a fragment decoded from a batch equals the one encoded.
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return self.unpacked() == tuple(other)

    __hash__ = None  # type: ignore[assignment]  # as a tuple of FileFragments (their arrays): none

    def __repr__(self) -> str:
        return f"PackedFiles({self.unpacked()!r})"


@dataclass(frozen=True, slots=True)
class ProbeCandidate:
    """An obfuscated release and the articles whose bodies can name it; or (``archive_message_id``) a
    release its subjects name, whose first archive volume's first article says if it is passworded."""

    key: str
    name: str
    par2_message_id: (
        str  # first segment of the PAR2 index file (or of the smallest volume); "" for a password probe
    )
    nfo_message_id: str | None
    archive_message_id: str | None = None  # a password probe's: the first archive volume's first segment


@dataclass(frozen=True, slots=True)
class Batch:
    """What a worker posts for articles ``[from_id, to_id]`` of a range."""

    from_id: int
    to_id: int
    headers: int  # overview lines read
    malformed: Mapping[str, int]  # skipped lines by reason (overview.REASON_*)
    gaps: int  # article numbers the server returned no line for
    undated: int  # dates read (each file's first and last article) that could not be parsed
    unmatched: int  # well-formed lines whose subject no rule reads (text posts, spam)
    fragments: tuple[ReleaseFragment, ...]
    candidates: tuple[ProbeCandidate, ...]
    # Binary-sized articles no rule reads, folded by poster and block of article numbers (runs.py):
    # what ties them into releases is found by the coordinator (issue 16: fully random subjects).
    runs: tuple[ReleaseFragment, ...] = ()


# ---- the dict form ------------------------------------------------------------------------------------


def file_to_dict(f: FileFragment) -> dict[str, Any]:
    return {
        "name": f.name,
        "index": f.index,
        "parts_total": f.parts_total,
        "parts": f.parts.tolist(),
        "sizes": f.sizes.tolist(),
        "articles": f.articles.tolist(),
        "message_ids": f.message_ids.decode(),
        "subject": f.subject,
    }


def fragment_to_dict(r: ReleaseFragment, *, files: bool = True) -> dict[str, Any]:
    """The fragment as JSON's objects; without its ``files`` key where ``files`` is False (a batch's
    head, whose files travel as segment blobs: no copy of the fragment without them is made)."""
    out = {
        "key": r.key,
        "name": r.name,
        "poster": r.poster,
        "groups": list(r.groups),
        "file_total": r.file_total,
        "first_article": r.first_article,
        "first_date": r.first_date,
        "last_article": r.last_article,
        "last_date": r.last_date,
        "obfuscated": r.obfuscated,
        "request_id": r.request_id,
    }
    if files:
        out["files"] = [file_to_dict(f) for f in r.files]
    out["collection"] = r.collection
    return out


def candidate_to_dict(c: ProbeCandidate) -> dict[str, Any]:
    return {
        "key": c.key,
        "name": c.name,
        "par2_message_id": c.par2_message_id,
        "nfo_message_id": c.nfo_message_id,
        # Only where there is one: a coordinator from before password probes reads the rest.
        **({"archive_message_id": c.archive_message_id} if c.archive_message_id is not None else {}),
    }


def batch_to_dict(b: Batch) -> dict[str, Any]:
    return {
        "from_id": b.from_id,
        "to_id": b.to_id,
        "headers": b.headers,
        "malformed": dict(b.malformed),
        "gaps": b.gaps,
        "undated": b.undated,
        "unmatched": b.unmatched,
        "fragments": [fragment_to_dict(r) for r in b.fragments],
        "candidates": [candidate_to_dict(c) for c in b.candidates],
        "runs": [fragment_to_dict(r) for r in b.runs],
    }


def _fields(
    obj: Any, where: str, required: frozenset[str], optional: frozenset[str] = frozenset()
) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise FormatError(f"{where}: expected an object, got {type(obj).__name__}")
    if obj.keys() == required:  # the usual case, in one comparison
        return obj
    keys = set(obj)
    unknown = keys - required - optional
    if unknown:
        raise FormatError(f"{where}: unknown field(s) {', '.join(sorted(map(str, unknown)))}")
    missing = required - keys
    if missing:
        raise FormatError(f"{where}: missing field(s) {', '.join(sorted(missing))}")
    return obj


def _int(obj: Any, where: str, low: int = 0, high: int = MAX_INT) -> int:
    if isinstance(obj, bool) or not isinstance(obj, int):
        raise FormatError(f"{where}: expected an integer, got {type(obj).__name__}")
    if not low <= obj <= high:
        raise FormatError(f"{where}: {obj} is out of range [{low}, {high}]")
    return obj


def _opt_int(obj: Any, where: str) -> int | None:
    return None if obj is None else _int(obj, where)


def _str(obj: Any, where: str, limit: int = MAX_TEXT, empty: bool = True) -> str:
    if not isinstance(obj, str):
        raise FormatError(f"{where}: expected a string, got {type(obj).__name__}")
    if len(obj) > limit:
        raise FormatError(f"{where}: {len(obj)} characters is more than {limit}")
    if not empty and not obj:
        raise FormatError(f"{where}: must not be empty")
    return obj


def _list(obj: Any, where: str) -> list[Any]:
    if not isinstance(obj, list):
        raise FormatError(f"{where}: expected a list, got {type(obj).__name__}")
    return obj


def _column(obj: Any, where: str) -> array[int]:
    values = _list(obj, where)
    try:
        column = int_array(values)
    except (TypeError, OverflowError):
        raise FormatError(f"{where}: expected integers in [0, {MAX_INT}]") from None
    if bool in set(map(type, values)):
        raise FormatError(f"{where}: expected integers, not booleans")
    if column and min(column) < 0:
        raise FormatError(f"{where}: {min(column)} is out of range [0, {MAX_INT}]")
    return column


_FILE_FIELDS = frozenset({"name", "index", "parts_total", "parts", "sizes", "articles", "message_ids"})
_FILE_OPTIONAL = frozenset({"subject"})  # snapshots written before issue 16 have none
_FRAGMENT_FIELDS = frozenset(
    {
        "key",
        "name",
        "poster",
        "groups",
        "file_total",
        "first_article",
        "first_date",
        "last_article",
        "last_date",
        "obfuscated",
        "request_id",
        "files",
        "collection",
    }
)
_FRAGMENT_WITHOUT_FILES = _FRAGMENT_FIELDS - {"files"}
_CANDIDATE_FIELDS = frozenset({"key", "name", "par2_message_id", "nfo_message_id"})
_CANDIDATE_OPTIONAL = frozenset({"archive_message_id"})  # password probes (issue 16)
_BATCH_FIELDS = frozenset(
    {"from_id", "to_id", "headers", "malformed", "gaps", "undated", "unmatched", "fragments", "candidates"}
)
_BATCH_OPTIONAL = frozenset({"runs"})  # the dict form of batches from before runs (issue 16) has none


def file_from_dict(obj: Any, where: str = "file") -> FileFragment:
    d = _fields(obj, where, _FILE_FIELDS, _FILE_OPTIONAL)
    parts = _column(d["parts"], f"{where}.parts")
    ids = _str(d["message_ids"], f"{where}.message_ids", limit=MAX_MESSAGE_ID * max(1, len(parts)))
    return check_file(
        FileFragment(
            name=_str(d["name"], f"{where}.name", empty=False),
            index=_int(d["index"], f"{where}.index"),
            parts_total=_int(d["parts_total"], f"{where}.parts_total"),
            parts=parts,
            sizes=_column(d["sizes"], f"{where}.sizes"),
            articles=_column(d["articles"], f"{where}.articles"),
            message_ids=ids.encode(),
            subject=_str(d.get("subject", ""), f"{where}.subject"),
        ),
        where,
    )


def check_file(f: FileFragment, where: str = "file") -> FileFragment:
    """``f`` when its columns agree (one size, article and message-id per part, part numbers from 1 and
    strictly ascending, nothing negative, names, subjects and ids within their limits); FormatError
    otherwise.

    Shared by the dict form and the binary batch (wire/batch.py), whose columns arrive as raw arrays:
    every check is a C-level call over a column, never a Python loop over the parts."""
    n = len(f.parts)
    if len(f.sizes) != n or len(f.articles) != n:
        raise FormatError(
            f"{where}: parts, sizes and articles differ in length ({n}, {len(f.sizes)}, {len(f.articles)})"
        )
    if not f.name or len(f.name) > MAX_TEXT:
        raise FormatError(f"{where}.name: must be 1 to {MAX_TEXT} characters")
    if len(f.subject) > MAX_TEXT:
        raise FormatError(f"{where}.subject: must be at most {MAX_TEXT} characters")
    for name, value in (("index", f.index), ("parts_total", f.parts_total)):
        if not 0 <= value <= MAX_INT:
            raise FormatError(f"{where}.{name}: {value} is out of range [0, {MAX_INT}]")
    if n:
        for name, column in (("sizes", f.sizes), ("articles", f.articles)):
            if min(column) < 0:
                raise FormatError(f"{where}.{name}: {min(column)} is out of range [0, {MAX_INT}]")
        if f.parts[0] < 1 or not _strictly_ascending(f.parts):
            raise FormatError(f"{where}.parts: part numbers must be >= 1 and strictly ascending")
    ids = f.message_ids
    if len(ids) > MAX_MESSAGE_ID * max(1, n):
        raise FormatError(f"{where}.message_ids: {len(ids)} bytes is more than {MAX_MESSAGE_ID} a part")
    id_count = ids.count(b"\n") + 1 if ids else 0
    if id_count != n:
        raise FormatError(f"{where}.message_ids: {id_count} message-ids for {n} parts")
    if n and b"\n\n" in b"\n" + ids + b"\n":
        raise FormatError(f"{where}.message_ids: an empty message-id")
    try:
        ids.decode()
    except UnicodeDecodeError:
        raise FormatError(f"{where}.message_ids: not UTF-8") from None
    return f


def _strictly_ascending(column: array[int]) -> bool:
    # Sorted and without repeats, in C: timsort on a sorted run is one linear pass.
    values = column.tolist()
    return values == sorted(values) and len(set(values)) == len(values)


def fragment_from_dict(
    obj: Any, where: str = "fragment", files: Sequence[FileFragment] | None = None
) -> ReleaseFragment:
    """The fragment in ``obj``; with ``files``, ``obj`` is the fragment without its ``files`` field
    (the binary batch carries them apart) and ``files``, already checked, are its files."""
    d = _fields(obj, where, _FRAGMENT_FIELDS if files is None else _FRAGMENT_WITHOUT_FILES)
    listed = d["groups"]
    # The usual case checked without a message made per group (the coordinator reads a fragment per
    # release of every batch); anything else goes the long way, which says what is wrong.
    if type(listed) is list and all(type(g) is str and 0 < len(g) <= MAX_TEXT for g in listed):
        groups = tuple(listed)
    else:
        groups = tuple(
            _str(g, f"{where}.groups[{i}]", empty=False)
            for i, g in enumerate(_list(listed, f"{where}.groups"))
        )
    if list(groups) != sorted(set(groups)):
        raise FormatError(f"{where}.groups: must be sorted and without repeats")
    if files is None:
        files = tuple(
            file_from_dict(f, f"{where}.files[{i}]")
            for i, f in enumerate(_list(d["files"], f"{where}.files"))
        )
    if not summarize(files).in_order:
        raise FormatError(f"{where}.files: must be sorted by (name, parts_total) and without repeats")
    key, name, poster, collection = d["key"], d["name"], d["poster"], d["collection"]
    file_total, first_article, last_article = d["file_total"], d["first_article"], d["last_article"]
    first_date, last_date, obfuscated = d["first_date"], d["last_date"], d["obfuscated"]
    request = d["request_id"]
    # The usual case in one test, without a message made per field (issue 17: the coordinator reads a
    # fragment per release of every batch); anything else goes the long way below, which says what is
    # wrong. Stricter than the long way (type() is, not isinstance), never looser.
    if not (
        type(key) is str
        and 0 < len(key) <= MAX_KEY
        and type(name) is str
        and len(name) <= MAX_TEXT
        and type(poster) is str
        and len(poster) <= MAX_TEXT
        and type(collection) is str
        and len(collection) <= MAX_TEXT
        and type(file_total) is int
        and 0 <= file_total <= MAX_INT
        and type(first_article) is int
        and type(last_article) is int
        and 0 <= first_article <= last_article <= MAX_INT
        and (first_date is None or (type(first_date) is int and 0 <= first_date <= MAX_INT))
        and (last_date is None or (type(last_date) is int and 0 <= last_date <= MAX_INT))
        and type(obfuscated) is bool
        and (request is None or (type(request) is str and len(request) <= MAX_REQUEST_ID))
    ):
        first_article = _int(first_article, f"{where}.first_article")
        last_article = _int(last_article, f"{where}.last_article")
        if last_article < first_article:
            raise FormatError(f"{where}: last_article {last_article} is before first_article {first_article}")
        if not isinstance(obfuscated, bool):
            raise FormatError(f"{where}.obfuscated: expected true or false")
        key = _str(key, f"{where}.key", limit=MAX_KEY, empty=False)
        name = _str(name, f"{where}.name")
        poster = _str(poster, f"{where}.poster")
        file_total = _int(file_total, f"{where}.file_total")
        first_date = _opt_int(first_date, f"{where}.first_date")
        last_date = _opt_int(last_date, f"{where}.last_date")
        request = None if request is None else _str(request, f"{where}.request_id", limit=MAX_REQUEST_ID)
        collection = _str(collection, f"{where}.collection")
    return ReleaseFragment(
        key=key,
        name=name,
        poster=poster,
        groups=groups,
        file_total=file_total,
        first_article=first_article,
        first_date=first_date,
        last_article=last_article,
        last_date=last_date,
        obfuscated=obfuscated,
        request_id=request,
        files=files,
        collection=collection,
    )


def candidate_from_dict(obj: Any, where: str = "candidate") -> ProbeCandidate:
    d = _fields(obj, where, _CANDIDATE_FIELDS, _CANDIDATE_OPTIONAL)
    nfo, archive = d["nfo_message_id"], d.get("archive_message_id")
    return ProbeCandidate(
        key=_str(d["key"], f"{where}.key", limit=MAX_KEY, empty=False),
        name=_str(d["name"], f"{where}.name"),
        # A password probe names its archive's article instead of a PAR2's.
        par2_message_id=_str(
            d["par2_message_id"], f"{where}.par2_message_id", MAX_MESSAGE_ID, empty=archive is not None
        ),
        nfo_message_id=None
        if nfo is None
        else _str(nfo, f"{where}.nfo_message_id", MAX_MESSAGE_ID, empty=False),
        archive_message_id=None
        if archive is None
        else _str(archive, f"{where}.archive_message_id", MAX_MESSAGE_ID, empty=False),
    )


def batch_from_dict(
    obj: Any,
    where: str = "batch",
    files: Sequence[Sequence[FileFragment]] | None = None,
    run_files: Sequence[Sequence[FileFragment]] | None = None,
) -> Batch:
    """The batch in ``obj``; with ``files``, its fragments come without their ``files`` field and
    ``files[i]`` are fragment i's (see fragment_from_dict), and ``run_files[i]`` run i's."""
    d = _fields(obj, where, _BATCH_FIELDS, _BATCH_OPTIONAL)
    listed = _list(d["fragments"], f"{where}.fragments")
    if files is not None and len(files) != len(listed):
        raise FormatError(f"{where}.fragments: {len(listed)} fragments for {len(files)} segment blobs")
    runs = _list(d.get("runs", []), f"{where}.runs")
    if files is not None and len(run_files or ()) != len(runs):
        raise FormatError(f"{where}.runs: {len(runs)} runs for {len(run_files or ())} segment blobs")
    from_id = _int(d["from_id"], f"{where}.from_id")
    to_id = _int(d["to_id"], f"{where}.to_id")
    if to_id < from_id:
        raise FormatError(f"{where}: to_id {to_id} is before from_id {from_id}")
    malformed_obj = d["malformed"]
    if not isinstance(malformed_obj, dict):
        raise FormatError(f"{where}.malformed: expected an object of counts")
    malformed = {
        _str(k, f"{where}.malformed key", limit=64, empty=False): _int(v, f"{where}.malformed.{k}")
        for k, v in malformed_obj.items()
    }
    return Batch(
        from_id=from_id,
        to_id=to_id,
        headers=_int(d["headers"], f"{where}.headers"),
        malformed=malformed,
        gaps=_int(d["gaps"], f"{where}.gaps"),
        undated=_int(d["undated"], f"{where}.undated"),
        unmatched=_int(d["unmatched"], f"{where}.unmatched"),
        fragments=tuple(
            fragment_from_dict(r, f"{where}.fragments[{i}]", None if files is None else files[i])
            for i, r in enumerate(listed)
        ),
        candidates=tuple(
            candidate_from_dict(c, f"{where}.candidates[{i}]")
            for i, c in enumerate(_list(d["candidates"], f"{where}.candidates"))
        ),
        runs=tuple(
            fragment_from_dict(r, f"{where}.runs[{i}]", None if run_files is None else run_files[i])
            for i, r in enumerate(runs)
        ),
    )


__all__ = [
    "Batch",
    "FileFragment",
    "FileSegment",
    "FileSummary",
    "FormatError",
    "PackedFiles",
    "ProbeCandidate",
    "ReleaseFragment",
    "batch_from_dict",
    "batch_to_dict",
    "candidate_from_dict",
    "candidate_to_dict",
    "check_file",
    "column_range",
    "file_from_dict",
    "file_to_dict",
    "fragment_from_dict",
    "fragment_to_dict",
    "int_array",
    "summarize",
]

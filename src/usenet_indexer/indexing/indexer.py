"""RangeIndexer: overview chunks of one leased range in, batches of release fragments out.

The edge worker drives it (seed 003): ``add_text(chunk, next_article)`` for each inflated chunk in
article order, ``finish()`` once the range's end is read, ``take()`` whenever it posts a batch. A batch
holds every release seen since the previous take as a fragment; the coordinator merges fragments by
their key, so a release spread over batches, ranges and workers ends up as one.

Speed. A chunk of 20,000 lines must be indexed in about the time it takes to inflate it and split its
fields (bench/index.py holds us to half that rate). So a chunk goes through one of two loops:

* the fast loop, for chunks that pass whole-chunk checks done in C (no NUL, valid UTF-8, no line longer
  than MAX_SUBJECT). Per line it splits the fields, cuts the subject at its last "(" (the yEnc part
  counter "(p/t)") and looks up the rest, with the poster, in a dict of files of this batch. Subjects
  differ between the parts of a file only in p, so the rules run once per file, not once per line.
* the careful loop, which checks every line (overview.line_fault / field_fault) and tracks duplicate
  numbers. The fast loop hands over to it at the first line it is not sure of, and a chunk that fails
  the whole-chunk checks goes to it from the start.

Both loops append the same segments to the same accumulators; per-segment checks that do not decide
which file a line belongs to (negative size, empty message-id, part 0 or above its total) are applied
once per file in ``take()``, for both. Tests compare the two loops line for line.

Native. When the optional C accelerator is built (usenet_indexer.accelerator), the fast loop runs
in C (``scan``: the fields are read in place, a new file's line still goes to Python, ``_line_file``,
which names the file and segment the C appends; an odd line still hands the rest of the chunk to the
careful loop) and so does the building of a valid file's
columns at take (``columns``). It gives the same batches as the Python (tests/unit/indexing compare
them); ``native=False`` or USENET_INDEXER_PURE=1 runs the Python.

Dates. Only the Date of each file's lowest- and highest-numbered article is parsed (at take): a release
records the dates of its first and last article, and parsing every line's date would cost a tenth of
the indexing rate for values that are thrown away.

Groups. A file's groups are read from the Xref of the first line of it in a batch: cross-posting is
per post, so every part carries the same groups. The release key does not hold the group (issue 16:
a cross-post was a release per group, and a result per group in every search): a cross-post indexed
from two groups, by two workers, gives fragments of one key, which the coordinator merges into one
release listing every group, each part once (merge keeps one segment per part: the same article's
message-id, whichever group's number came with it).

Loose lines. A well-formed line no rule reads is counted as ``unmatched``; one of at least
``runs.LOOSE_MIN_BYTES`` is kept too (``_loose_line``, on the path every such line takes: its subject is
read once, finds nothing, and never enters the fast loops' dicts), and ``take()`` folds them into runs
by poster and block of article numbers (runs.py; issue 16: fully random subjects, whose articles were
dropped here before).
"""

from __future__ import annotations

import hashlib
import re
import struct
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter, lt
from typing import NamedTuple

from usenet_indexer import accelerator
from usenet_indexer.indexing.archive_names import first_volume
from usenet_indexer.indexing.fragment import (
    MAX_MESSAGE_ID,
    MAX_TEXT,
    Batch,
    FileFragment,
    ProbeCandidate,
    ReleaseFragment,
    int_array,
)
from usenet_indexer.indexing.naming import FileKind, looks_obfuscated, normalise, normalise_poster
from usenet_indexer.indexing.overview import (
    DEFAULT_FORMAT,
    MAX_NUMBER,
    REASON_BAD_BYTES,
    REASON_BAD_PART,
    REASON_DUPLICATE,
    REASON_NO_MESSAGE_ID,
    OverviewFormat,
    chunk_is_clean,
    field_fault,
    line_fault,
    message_id,
    message_id_bytes,
    parse_date,
    read_number,
    split_lines,
    xref_groups,
)
from usenet_indexer.indexing.rules import RuleSet, SubjectMatch
from usenet_indexer.indexing.runs import LOOSE_MIN_BYTES, LooseArticle, fold

_TAB = b"\t"
_XREF_NUMBERS = re.compile(rb":[0-9]+")  # an Xref's article numbers (_groups)
_CACHE_LIMIT = 200_000  # subject readings kept across batches; cleared past this (spam floods)


class IndexerError(ValueError):
    """The indexer was driven against its contract (a caller's bug, not bad data)."""


def release_key(poster: str, collection: str, file_total: int) -> str:
    """The stable identity of a release: the same on every worker, batch, range and group (a cross-post
    is one release)."""
    text = "\0".join((normalise_poster(poster), normalise(collection), str(file_total)))
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


# NamedTuples rather than frozen dataclasses: one of each is made for every new file, and a frozen
# dataclass's __init__ costs about a microsecond per field.
class _ReleaseInfo(NamedTuple):
    key: str
    name: str
    poster: str
    file_total: int
    request_id: str | None
    collection: str = ""


class _FileInfo(NamedTuple):
    release: _ReleaseInfo
    name: str
    file_index: int
    parts_total: int
    kind: FileKind
    ident: tuple[str, str, int]  # (release key, file name, parts total)


# A segment as the loops store it: (part, size, article), native int64s. struct raises on a number
# beyond int64 before anything is appended, so a bad line never misaligns the triples after it.
_TRIPLE = struct.Struct("=3q")
_pack = _TRIPLE.pack


class _FileAcc:
    """The segments of one file in the current batch. Slots: this is the hot path.

    Two bytearrays hold a file's segments, not lists or arrays: a bytearray is not tracked by the
    garbage collector, and a batch holds tens of thousands of files, each object of which every full
    collection walks, and full collections come more often as the heap grows. With an array, two lists
    and two bound methods per file, a quarter of the native path's time went to collecting
    (bench/index.py, 1,000,000 lines).
    """

    __slots__ = (
        "first",
        "first_date",
        "groups",
        "info",
        "last",
        "last_date",
        "mids",
        "poster",
        "segs",
        "spart",
        "subject",
        "ts",
    )

    def __init__(
        self, info: _FileInfo, number: int, date: bytes, groups: tuple[str, ...], subject: bytes, spart: int
    ) -> None:
        self.info = info
        # What an NZB shows for the file: the subject of its first part. The subject of the file's first
        # line in the batch, its part counter set to 1 where that is the subject's last "(p/t)" (spart
        # 1); else the subject of the lowest part read (spart), which every loop reads in _slow_line.
        self.subject = subject
        self.spart = spart
        self.segs = bytearray()  # _TRIPLE after _TRIPLE
        # Raw Message-ID fields, each followed by b"\n": fields hold no newline, so nothing is lost,
        # and nothing is an object of its own.
        self.mids = bytearray()
        self.first = number
        self.first_date = date
        self.last = number
        self.last_date = date
        self.groups = groups
        self.ts = b""  # the part total (and what follows it) the fast loop matches, once keyed
        self.poster = b""

    def columns(self) -> array[int]:
        """The segments as one array of (part, size, article) triples."""
        segs = int_array()
        segs.frombytes(self.segs)
        return segs

    def message_id_fields(self) -> bytes:
        """Every raw Message-ID field, in arrival order, joined by newlines."""
        return bytes(self.mids[:-1])

    def release_columns(self) -> None:
        del self.segs[:]
        del self.mids[:]


@dataclass(slots=True)
class _Counts:
    headers: int = 0
    gaps: int = 0
    unmatched: int = 0
    malformed: Counter[str] = field(default_factory=Counter)


class RangeIndexer:
    """Indexes one range of one group, from its resume point; see the module's docstring."""

    def __init__(
        self,
        group: str,
        start: int,
        end: int,
        resume_at: int,
        rules: RuleSet,
        fmt: OverviewFormat = DEFAULT_FORMAT,
        *,
        native: bool | None = None,
    ) -> None:
        """``native``: use the C accelerator (True: required), the pure-Python loops (False), or the
        accelerator when it is built (None, the default); see usenet_indexer.accelerator. The batches are
        the same."""
        if not 0 <= start <= end <= MAX_NUMBER:
            raise IndexerError(f"range [{start}, {end}] is not a range of article numbers")
        if not start <= resume_at <= end + 1:
            raise IndexerError(f"resume point {resume_at} is outside range [{start}, {end}]")
        self.group = group
        self.start = start
        self.end = end
        self.rules = rules
        self.fmt = fmt
        self._next = resume_at
        self._batch_from = resume_at
        self._finished = False
        # Readings of subjects, kept across batches: (head, part total, poster) -> file, for subjects
        # whose last "(" opens the part counter; (subject, poster) -> (file, part) or None otherwise.
        self._by_counter: dict[tuple[bytes, bytes, bytes], _FileInfo] = {}
        self._by_subject: dict[tuple[bytes, bytes], tuple[_FileInfo, int] | None] = {}
        self._infos: dict[tuple[str, str, int], _FileInfo] = {}
        self._keys: dict[tuple[str, str, int], str] = {}
        self._releases: dict[_ReleaseInfo, _ReleaseInfo] = {}
        self._xrefs: dict[bytes, tuple[str, ...]] = {}
        self._xref_sets: dict[bytes, tuple[str, ...]] = {}  # by the Xref without its numbers
        self._dates: dict[bytes, int | None] = {}
        if native and accelerator.speedups is None:
            raise IndexerError(f"the native accelerator is not available: {accelerator.REASON}")
        self._speedups = None if native is False else accelerator.speedups
        self._fields = (fmt.need, fmt.subject, fmt.poster, fmt.date, fmt.message_id, fmt.size)
        if self._speedups is not None and fmt.need > self._speedups.MAX_FIELDS:
            self._speedups = None  # an overview of that many fields is read by the Python loop
        self._match = rules.matcher(group, native=self._speedups is not None)
        self._reset_batch()

    @property
    def native(self) -> bool:
        """Whether this indexer runs the C accelerator."""
        return self._speedups is not None

    # ---- the worker's interface ------------------------------------------------------------------

    @property
    def next_article(self) -> int:
        """The first article not yet read: the range's resume point once the next batch is stored."""
        return self._next

    @property
    def finished(self) -> bool:
        return self._finished

    def add_text(self, chunk: bytes, next_article: int) -> None:
        """Index an inflated chunk holding the overview of articles up to ``next_article - 1``."""
        if self._finished:
            raise IndexerError("add_text() after finish(): the range was already read to its end")
        if not self._next < next_article <= self.end + 1:
            raise IndexerError(
                f"a chunk must end after article {self._next - 1} and by the range's end {self.end}; "
                f"this one ends at {next_article - 1}"
            )
        lo, hi = self._next, next_article - 1
        if self._speedups is not None:
            # The fast loop in C; it stops where _fast would hand over (at 0 for a chunk that is not clean).
            at, count = self._speedups.scan(chunk, self._accs, self._line_file, lo, hi, self._fields)
            if at == count:
                self._counts.headers += count
                self._counts.gaps += (hi - lo + 1) - count
            else:
                self._hand_over(split_lines(chunk), at, lo, hi)
        else:
            lines = split_lines(chunk)
            if chunk_is_clean(chunk, lines):
                self._fast(lines, lo, hi)
            else:
                self._careful(lines, 0, lo, hi, set())
        self._next = next_article

    def finish(self) -> None:
        """The range is read to its end; the next take() is its last batch."""
        if self._next != self.end + 1:
            raise IndexerError(
                f"finish() before the range's end: read up to {self._next - 1}, the range ends at {self.end}"
            )
        self._finished = True

    def take(self) -> Batch:
        """The batch of everything read since the previous take (or the resume point)."""
        if self._next == self._batch_from:
            raise IndexerError(f"take() with nothing read since article {self._batch_from}")
        counts = self._counts
        malformed = counts.malformed
        undated = 0
        # A release's key -> its files' accumulators and their fragments, in one order.
        by_release: dict[str, tuple[list[_FileAcc], list[FileFragment]]] = {}
        for acc in self._files.values():
            info = acc.info
            built = self._file_fragment(acc, malformed)
            # Free the file's raw columns at once: peak memory is then one copy of the batch, not two
            # (a 1,000,000-header batch peaked at ~250 MB before, ~150 MB since).
            acc.release_columns()
            if built is not None:
                held = by_release.get(info.release.key)
                if held is None:
                    by_release[info.release.key] = ([acc], [built])
                else:
                    held[0].append(acc)
                    held[1].append(built)
        fragments: list[ReleaseFragment] = []
        candidates: list[ProbeCandidate] = []
        for key in sorted(by_release):
            accs, files = by_release[key]
            fragment, missing_dates = self._release_fragment(accs, files)
            undated += missing_dates
            fragments.append(fragment)
            kinds = [(acc.info.kind, built) for acc, built in zip(accs, files, strict=True)]
            if fragment.obfuscated:
                candidate = probe_candidate(fragment, kinds)
            else:
                candidate = password_candidate(fragment, kinds)
            if candidate is not None:
                candidates.append(candidate)
        batch = Batch(
            from_id=self._batch_from,
            to_id=self._next - 1,
            headers=counts.headers,
            malformed=dict(sorted(counts.malformed.items())),
            gaps=counts.gaps,
            undated=undated,
            unmatched=counts.unmatched,
            fragments=tuple(fragments),
            candidates=tuple(candidates),
            runs=fold(self.group, self._loose),
        )
        self._batch_from = self._next
        self._reset_batch()
        return batch

    # ---- reading chunks --------------------------------------------------------------------------

    def _reset_batch(self) -> None:
        # head (the subject up to its last "(") -> the file of this batch last read with it; the file
        # holds the part total and poster it was read with, compared on each line. Keyed on the head
        # alone: a tuple key per line cost more than these two comparisons, and a shared head (two
        # posters, one generic subject) only sends lines to _slow_line, which is always right.
        self._accs: dict[bytes, _FileAcc] = {}
        self._files: dict[tuple[str, str, int], _FileAcc] = {}
        self._loose: list[LooseArticle] = []  # binary-sized lines no rule reads (runs.py)
        self._counts = _Counts()
        for cache in (
            self._by_counter,
            self._by_subject,
            self._dates,
            self._releases,
            self._xrefs,
            self._xref_sets,
        ):
            if len(cache) > _CACHE_LIMIT:
                cache.clear()

    def _fast(self, lines: list[bytes], lo: int, hi: int) -> None:
        """The fast loop (see the module docstring). Hands over to _careful at the first odd line."""
        fmt = self.fmt
        need, i_subj, i_from, i_date, i_mid, i_size = (
            fmt.need,
            fmt.subject,
            fmt.poster,
            fmt.date,
            fmt.message_id,
            fmt.size,
        )
        accs_get = self._accs.get
        slow = self._slow_line
        prev = lo - 1
        line = b""
        handed_over = False
        try:
            for line in lines:
                f = line.split(_TAB)
                if len(f) < need:
                    handed_over = True
                    break
                num = int(f[0])
                if num <= prev or num > hi:
                    handed_over = True
                    break
                subject = f[i_subj]
                head, _, tail = subject.rpartition(b"(")
                ps, _, ts = tail.partition(b"/")
                acc = accs_get(head)
                if acc is None or acc.ts != ts or acc.poster != f[i_from]:
                    slow(f, num)
                else:
                    # A bad number raises before anything is appended.
                    acc.segs += _pack(int(ps), int(f[i_size]), num)
                    mids = acc.mids
                    mids += f[i_mid]
                    mids += b"\n"
                    acc.last = num
                    acc.last_date = f[i_date]
                prev = num
        except (ValueError, OverflowError, struct.error):
            handed_over = True
        if not handed_over:
            self._counts.headers += len(lines)
            self._counts.gaps += (hi - lo + 1) - len(lines)
            return
        self._hand_over(lines, _position(lines, line), lo, hi)

    def _hand_over(self, lines: list[bytes], at: int, lo: int, hi: int) -> None:
        """The careful loop from ``lines[at]``, after the fast loop read the lines before it."""
        # Lines before the odd one were in span, ascending and whole: each is one distinct article.
        seen = {int(earlier.split(_TAB, 1)[0]) for earlier in lines[:at]}
        self._counts.headers += at
        self._careful(lines, at, lo, hi, seen)

    def _careful(self, lines: list[bytes], at: int, lo: int, hi: int, seen: set[int]) -> None:
        """Every line from ``at`` checked; ``seen`` holds the in-span numbers read before ``at``."""
        counts = self._counts
        malformed = counts.malformed
        fmt = self.fmt
        numbered = len(seen)
        for index in range(at, len(lines)):
            line = lines[index]
            if not line.strip():
                continue
            fields = line.split(_TAB)
            number = read_number(fields[0])
            if number is not None and self.start <= number < lo:
                continue  # before the resume point: stored by an earlier batch
            counts.headers += 1
            if number is not None and lo <= number <= hi:
                if number in seen:
                    malformed[REASON_DUPLICATE] += 1
                    continue
                seen.add(number)
                numbered += 1
            reason = line_fault(line) or field_fault(fields, number, lo, hi, fmt)
            if reason is not None and reason not in _APPLIED_AT_TAKE:
                malformed[reason] += 1
                continue
            assert number is not None
            self._slow_line(fields, number)
        counts.gaps += (hi - lo + 1) - numbered

    def _slow_line(self, f: list[bytes], num: int) -> None:
        """A line whose file is not yet known in this batch, or that the fast loop did not take."""
        found = self._line_file(f, num)
        if found is None:
            return
        acc, part, size = found
        fmt = self.fmt
        acc.segs += _pack(part, size, num)  # each within int64: checked in _line_file
        mids = acc.mids
        mids += f[fmt.message_id]
        mids += b"\n"
        # Lines can reach here out of order (the careful loop): keep the dates of the extremes.
        if num >= acc.last:
            acc.last = num
            acc.last_date = f[fmt.date]
        if num < acc.first:
            acc.first = num
            acc.first_date = f[fmt.date]

    def _line_file(self, f: list[bytes], num: int) -> tuple[_FileAcc, int, int] | None:
        """_slow_line up to the segment: the line's file (made when new) with its part and size, or None
        for a line counted (malformed, unmatched) or kept as loose. The C scan calls this and appends
        the segment itself, after the file's segments it holds pending: it then need not write those
        out before every new file, nor forget its lookups (issue 17). Of the scan's state, only
        ``_accs[head]`` of the line's own head and that file's ``ts`` and ``poster`` change here."""
        fmt = self.fmt
        try:
            size = int(f[fmt.size])
        except ValueError:
            self._counts.malformed[REASON_BAD_BYTES] += 1
            return None
        if size > MAX_NUMBER or size < -MAX_NUMBER:
            self._counts.malformed[REASON_BAD_BYTES] += 1
            return None
        subject = f[fmt.subject]
        poster = f[fmt.poster]
        head, _, tail = subject.rpartition(b"(")
        ps, slash, ts = tail.partition(b"/")
        info: _FileInfo | None = None
        part = -1
        counter = False
        if slash:
            info = self._by_counter.get((head, ts, poster))
            if info is not None:
                try:
                    part = int(ps)
                    counter = True
                except ValueError:
                    info = None
        if info is None:
            key = (subject, poster)
            if key in self._by_subject:
                known = self._by_subject[key]
            else:
                known = self._read_subject(subject, poster, head, ps, ts)
            if known is None:
                self._counts.unmatched += 1
                if size >= LOOSE_MIN_BYTES:
                    self._loose_line(f, num, size)
                return None
            info, part = known
            counter = part < 0
            if counter:
                part = int(ps)
        if not -MAX_NUMBER <= part <= MAX_NUMBER:
            self._counts.malformed[REASON_BAD_PART] += 1
            return None
        acc = self._files.get(info.ident)
        if acc is None:
            groups = self._groups(f[fmt.xref] if fmt.xref is not None and fmt.xref < len(f) else b"")
            if counter and part != 1:
                # Zero-padded counters stay so: "(037/100)" was posted as "(001/100)" for part 1.
                one = b"1".rjust(len(ps), b"0") if ps[:1] == b"0" else b"1"
                subject = head + b"(" + one + b"/" + ts
            acc = _FileAcc(info, num, f[fmt.date], groups, subject, 1 if counter else part)
            self._files[info.ident] = acc
        elif not counter and part < acc.spart:
            # Lines of such subjects never take the fast loops: every loop sees each of them here.
            acc.subject = subject
            acc.spart = part
        if counter:
            acc.ts = ts
            acc.poster = poster
            self._accs[head] = acc
        return acc, part, size

    def _loose_line(self, f: list[bytes], num: int, size: int) -> None:
        """A binary-sized line no rule reads: kept for a run (runs.py), unless its message-id is bad."""
        fmt = self.fmt
        mid = message_id_bytes(f[fmt.message_id])
        if not mid or any(blank in mid for blank in _BLANKS) or len(mid) > MAX_MESSAGE_ID:
            self._counts.malformed[REASON_NO_MESSAGE_ID] += 1
            return
        groups = self._groups(f[fmt.xref] if fmt.xref is not None and fmt.xref < len(f) else b"")
        self._loose.append(
            LooseArticle(
                number=num,
                size=size,
                poster=f[fmt.poster].decode("utf-8", "replace"),
                date=self._date(f[fmt.date]),
                message_id=mid.decode("utf-8", "replace"),
                subject=f[fmt.subject].decode("utf-8", "replace")[:MAX_TEXT],
                groups=groups,
            )
        )

    def _groups(self, xref: bytes) -> tuple[str, ...]:
        """The indexing group and those of an Xref value, sorted."""
        # The Xrefs of one server's posts to the same groups differ only in the article numbers, and
        # for a post to one group only in the digits after the last ":". Everything before them decides
        # the groups (xref_groups reads each word up to its first ":"), so they are kept by that prefix:
        # xref_groups took a sixth of the time of reading a new file.
        text = xref.strip()
        cut = text.rfind(b":") + 1
        prefix = text[:cut] if cut >= 5 and text[cut:].isdigit() else None  # a number at the end
        if prefix is not None and (groups := self._xrefs.get(prefix)) is not None:
            return groups
        # A cross-post's prefix still holds the other groups' numbers (a third of the e2e corpus's
        # files missed it): kept by its text without any ":" number too. Dropping digits that follow a
        # ":" moves no word boundary and no word's first ":", so the words' groups stay the same; only
        # the "Xref:" of a full field is left as it is (its ":" is not inside a word).
        head = 5 if self.fmt.xref_full else 0
        key = text[:head] + _XREF_NUMBERS.sub(b":", text[head:])
        groups = self._xref_sets.get(key)
        if groups is None:
            groups = self._xref_sets[key] = tuple(
                sorted({self.group, *xref_groups(xref, self.fmt.xref_full)})
            )
        if prefix is not None:
            self._xrefs[prefix] = groups
        return groups

    def _read_subject(
        self, subject: bytes, poster: bytes, head: bytes, ps: bytes, ts: bytes
    ) -> tuple[_FileInfo, int] | None:
        """Run the rules on a subject; remember the reading (part -1: read the part from the counter)."""
        text = subject.decode("utf-8", "replace")
        m = self._match(text)
        if m is None:
            self._by_subject[(subject, poster)] = None
            return None
        info = self._info(m, poster.decode("utf-8", "replace"))
        # The reading holds for every part when the rule's part number is the text after the last "(":
        # subjects of one file differ only there, and the fast loop reads it without the rules.
        # (rfind's -1 with no "(" is rpartition's empty head: part_at 1 then, as it was.)
        if (
            m.part_at == (text.rfind("(") + 1 or 1)
            and ps.isdigit()
            and int(ps) == m.part
            and ts.startswith(str(m.part_total).encode())
        ):
            self._by_counter[(head, ts, poster)] = info
            return info, -1
        self._by_subject[(subject, poster)] = (info, m.part)
        return info, m.part

    def _info(self, m: SubjectMatch, poster: str) -> _FileInfo:
        # The files of a release share poster, collection and file total: hash them once per release.
        named = (poster, m.collection, m.file_total)
        key = self._keys.get(named)
        if key is None:
            if len(self._keys) > _CACHE_LIMIT:
                self._keys.clear()
            key = self._keys[named] = release_key(poster, m.collection, m.file_total)
        ident = (key, m.file_name, m.part_total)
        info = self._infos.get(ident)
        if info is None:
            # One _ReleaseInfo for the files that read alike, not one per file: fewer objects for the
            # garbage collector to walk (see _FileAcc).
            release = _ReleaseInfo(key, m.name, poster, m.file_total, m.request_id, m.collection)
            release = self._releases.setdefault(release, release)
            info = _FileInfo(release, m.file_name, m.file_index, m.part_total, m.kind, ident)
            if len(self._infos) > _CACHE_LIMIT:
                self._infos.clear()
            self._infos[ident] = info
        return info

    # ---- building fragments ----------------------------------------------------------------------

    def _file_fragment(self, acc: _FileAcc, malformed: Counter[str]) -> FileFragment | None:
        """A file's columns: checked, sorted by part, one segment per part (the lowest article wins).

        Everything here is done by C-level calls on whole columns (bytes.count on a column of ids took
        longer than the rest together, so it is avoided); only a file holding a bad value (a negative
        size, an empty message-id, a part out of its range) is walked segment by segment.
        """
        info = acc.info
        if self._speedups is not None:
            # What follows, for a file whose every segment is valid; None sends it through the Python.
            built = self._speedups.file_fragment(
                acc.segs, acc.mids, info.parts_total, info.name, info.file_index, acc.subject, FileFragment
            )
            if built is not None:
                return built
        return self._file_fragment_python(acc, malformed)

    def _file_fragment_python(self, acc: _FileAcc, malformed: Counter[str]) -> FileFragment | None:
        """_file_fragment in Python: any file the C does not build."""
        info = acc.info
        total = info.parts_total
        subject = acc.subject.decode("utf-8", "replace")
        raw_ids = acc.message_id_fields()
        segs = acc.columns()
        parts, sizes, articles = segs[0::3], segs[1::3], segs[2::3]
        n = len(parts)
        ids = raw_ids.replace(b"<", b"").replace(b">", b"")
        part_list = parts.tolist()
        valid = (
            min(sizes.tolist()) >= 0
            and min(part_list) >= 1
            and (total == 0 or max(part_list) <= total)
            and len(ids) > n  # cheap first: an empty id makes the test below necessary
            and ids[:1] != b"\n"
            and ids[-1:] != b"\n"
            and b"\n\n" not in ids
            and b" " not in ids
            and b"\r" not in ids
            and b"\x0b" not in ids
            and b"\x0c" not in ids  # the blanks of _BLANKS, spelled out: a generator here cost 1 µs a file
        )
        if valid:
            if all(map(lt, part_list, part_list[1:])):
                return FileFragment(info.name, info.file_index, total, parts, sizes, articles, ids, subject)
            return _in_part_order(info, part_list, sizes, articles, ids.split(b"\n"), subject)
        keep_parts: list[int] = []
        keep_sizes: list[int] = []
        keep_articles: list[int] = []
        keep_ids: list[bytes] = []
        for part, size, article, raw in zip(parts, sizes, articles, raw_ids.split(b"\n"), strict=True):
            mid = message_id_bytes(raw)
            if size < 0:
                malformed[REASON_BAD_BYTES] += 1
            elif not mid or any(blank in mid for blank in _BLANKS):
                malformed[REASON_NO_MESSAGE_ID] += 1
            elif part < 1 or (total and part > total):
                malformed[REASON_BAD_PART] += 1
            else:
                keep_parts.append(part)
                keep_sizes.append(size)
                keep_articles.append(article)
                keep_ids.append(mid)
        if not keep_parts:
            return None
        return _in_part_order(info, keep_parts, keep_sizes, keep_articles, keep_ids, subject)

    def _date(self, raw: bytes) -> int | None:
        if raw in self._dates:
            return self._dates[raw]
        # The C reads the usual form (False: the rest, for parse_date): two dates a release at take.
        native = False if self._speedups is None else self._speedups.parse_date(raw)
        value = parse_date(raw) if native is False else native
        self._dates[raw] = value
        return value

    def _release_fragment(
        self, accs: list[_FileAcc], files: list[FileFragment]
    ) -> tuple[ReleaseFragment, int]:
        """The fragment of one release's files (``files[i]`` built from ``accs[i]``), and how many of its
        two dates could not be read."""
        if len(accs) == 1:
            first_acc = last_acc = accs[0]
        else:
            first_acc = min(accs, key=_FIRST)
            last_acc = max(accs, key=_LAST)
            files = sorted(files, key=_FILE_ORDER)
        first_date = self._date(first_acc.first_date)
        last_date = self._date(last_acc.last_date)
        # The files of a release nearly always share one reading of it (_info keeps one _ReleaseInfo
        # for equal ones) and one tuple of groups (each sorted and distinct, _groups): then theirs are
        # the release's, found by list.count (identity first, in C) rather than min() and set() over
        # the files (issue 17: _release_fragment was ~28 µs a release at take, docs/PERFORMANCE.md
        # "Session 14").
        releases = [acc.info.release for acc in accs]
        head = releases[0]
        if releases.count(head) == len(releases):
            name, poster, request_id = head.name, head.poster, head.request_id
        else:
            name = min(r.name for r in releases)
            poster = min(r.poster for r in releases)
            requests = [r.request_id for r in releases if r.request_id is not None]
            request_id = min(requests) if requests else None
        listed = [acc.groups for acc in accs]
        groups = listed[0]
        if listed.count(groups) != len(listed):
            groups = tuple(sorted({g for gs in listed for g in gs}))
        fragment = ReleaseFragment(
            key=head.key,
            name=name,
            poster=poster,
            groups=groups,
            file_total=head.file_total,
            first_article=first_acc.first,
            first_date=first_date,
            last_article=last_acc.last,
            last_date=last_date,
            obfuscated=looks_obfuscated(name),
            request_id=request_id,
            files=tuple(files),
            collection=head.collection,
        )
        return fragment, (first_date is None) + (last_date is None)


_APPLIED_AT_TAKE = frozenset({REASON_BAD_BYTES, REASON_NO_MESSAGE_ID})
_BLANKS = (b" ", b"\r", b"\x0b", b"\x0c")  # a tab cannot be inside a field


def _file_order(f: FileFragment) -> tuple[str, int]:
    return (f.name, f.parts_total)


# _file_order and the accumulators' extremes as C-level keys (no Python call per file)
_FILE_ORDER = attrgetter("name", "parts_total")
_FIRST = attrgetter("first")
_LAST = attrgetter("last")


def _in_part_order(
    info: _FileInfo,
    parts: Sequence[int],
    sizes: Sequence[int],
    articles: Sequence[int],
    ids: Sequence[bytes],
    subject: str,
) -> FileFragment:
    """Columns sorted by (part, article), keeping the lowest article of a part posted twice."""
    if len(set(parts)) == len(parts):
        # No part twice: the part alone orders them (timsort is linear on the nearly sorted runs that
        # posting over many connections gives).
        order = sorted(range(len(parts)), key=parts.__getitem__)
    else:
        keys = list(zip(parts, articles, strict=True))
        order = sorted(range(len(keys)), key=keys.__getitem__)
        in_order = [keys[i][0] for i in order]
        # Built from the back, each part ends up with the index of its first (lowest) article.
        firsts = dict(zip(reversed(in_order), reversed(order), strict=True))
        order = sorted(firsts.values(), key=keys.__getitem__)
    if len(order) == 1:
        (k,) = order
        return FileFragment(
            info.name,
            info.file_index,
            info.parts_total,
            int_array([parts[k]]),
            int_array([sizes[k]]),
            int_array([articles[k]]),
            ids[k],
            subject,
        )
    pick = itemgetter(*order)
    return FileFragment(
        info.name,
        info.file_index,
        info.parts_total,
        int_array(pick(parts)),
        int_array(pick(sizes)),
        int_array(pick(articles)),
        b"\n".join(pick(ids)),
        subject,
    )


def _position(lines: list[bytes], line: bytes) -> int:
    """The index of ``line`` (the object) in ``lines``; equal lines before it do not count."""
    at = lines.index(line)
    if lines[at] is not line:
        at = next(i for i, candidate in enumerate(lines) if candidate is line)
    return at


def probe_candidate(
    fragment: ReleaseFragment, files: list[tuple[FileKind, FileFragment]]
) -> ProbeCandidate | None:
    """The article whose body names an obfuscated release: its PAR2 index file's first segment."""
    par2: FileFragment | None = None
    volume: FileFragment | None = None
    nfo: FileFragment | None = None
    for kind, f in sorted(files, key=lambda item: _file_order(item[1])):
        if not f.parts or f.parts[0] != 1:
            continue
        if kind is FileKind.PAR2 and par2 is None:
            par2 = f
        elif kind is FileKind.PAR2_VOLUME and volume is None:
            volume = f
        elif kind is FileKind.NFO and nfo is None:
            nfo = f
    source = par2 or volume
    if source is None:
        return None
    return ProbeCandidate(
        key=fragment.key,
        name=fragment.name,
        par2_message_id=source.message_id_list()[0],
        nfo_message_id=nfo.message_id_list()[0] if nfo is not None else None,
    )


_ARCHIVES = frozenset({FileKind.RAR, FileKind.SEVEN_ZIP, FileKind.SPLIT})


def first_volume_held(files: Sequence[FileFragment]) -> FileFragment | None:
    """The first volume of the main archive set among ``files`` (``archive_names.first_volume`` of their
    names), when its first article is held: the article that tells the ``password`` attribute. The
    worker's candidate and the probe's pick (catalog/probe.py) are this one choice."""
    first = first_volume([f.name for f in files])
    return next((f for f in files if f.name == first and f.parts and f.parts[0] == 1), None)


def password_candidate(
    fragment: ReleaseFragment, files: list[tuple[FileKind, FileFragment]]
) -> ProbeCandidate | None:
    """A release its subjects name, when this fragment holds the first article of its first archive
    volume (``archive_names.first_volume`` of the fragment's files): the probe reads that article's archive
    headers for the ``password`` attribute (Sonarr and Radarr skip passworded releases). Once per
    release, where that article is; obfuscated releases are probed for their names, and this with it."""
    if not any(kind in _ARCHIVES for kind, _ in files):
        return None  # most fragments: a cheap test before the names are read
    held = first_volume_held([f for _, f in files])
    if held is None:
        return None
    return ProbeCandidate(
        key=fragment.key,
        name=fragment.name,
        par2_message_id="",
        nfo_message_id=None,
        archive_message_id=held.message_id_list()[0],
    )


__all__ = [
    "IndexerError",
    "RangeIndexer",
    "first_volume_held",
    "message_id",
    "password_candidate",
    "probe_candidate",
    "release_key",
]

"""Overview lines (RFC 3977 OVER/XOVER) to segments, on whole inflated chunks.

A chunk is the overview of articles ``[first, last]`` as one ``bytes``: lines end in CRLF or LF, fields
are separated by TAB, field 0 is the article number and the rest follow the server's
``LIST OVERVIEW.FMT`` (RFC 3977 8.4: Subject, From, Date, Message-ID, References, :bytes, :lines, then
optional headers such as Xref:full).

Nothing here raises on data. A malformed line is counted under a reason (the ``REASON_*`` names) and
skipped; article numbers in ``[first, last]`` that no line carries are gaps. A line whose Date cannot be
parsed is kept with ``date=None`` and counted in ``undated``: the segment is still downloadable, and the
release's dates come from its other segments.

``parse_overview`` is the general reader (one ``Segment`` per line). The range indexer reads chunks
with its own fused loop for speed (see indexer.py) and uses this module's primitives (line_fault,
field_fault, read_number, message_id_bytes, xref_groups, parse_date) for every line that is not plainly
well formed, so the reasons are the same words with the same meaning in both.
"""

from __future__ import annotations

import calendar
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from email.utils import parsedate_tz
from typing import NamedTuple

# Reasons a line is skipped.
REASON_MISSING_FIELDS = "missing_fields"
REASON_BAD_NUMBER = "bad_number"  # article number not a non-negative integer < 2**63
REASON_BAD_BYTES = "bad_bytes"  # :bytes not a non-negative integer < 2**63
REASON_NUL = "nul_byte"
REASON_INVALID_UTF8 = "invalid_utf8"
REASON_LINE_TOO_LONG = "line_too_long"
REASON_SUBJECT_TOO_LONG = "subject_too_long"
REASON_NO_MESSAGE_ID = "no_message_id"
REASON_OUT_OF_SPAN = "out_of_span"  # a number outside the chunk's [first, last]
REASON_DUPLICATE = "duplicate_article"  # a number already seen in this chunk
REASON_BAD_PART = "bad_part"  # a part number of 0, or above the part total (read by the indexer)
REASONS = (
    REASON_MISSING_FIELDS,
    REASON_BAD_NUMBER,
    REASON_BAD_BYTES,
    REASON_NUL,
    REASON_INVALID_UTF8,
    REASON_LINE_TOO_LONG,
    REASON_SUBJECT_TOO_LONG,
    REASON_NO_MESSAGE_ID,
    REASON_OUT_OF_SPAN,
    REASON_DUPLICATE,
    REASON_BAD_PART,
)

MAX_LINE = 64 * 1024
MAX_SUBJECT = 8 * 1024
MAX_NUMBER = 2**63 - 1  # article numbers and sizes are stored as signed 64-bit integers

RFC3977_FORMAT = ("Subject:", "From:", "Date:", "Message-ID:", "References:", ":bytes", ":lines", "Xref:full")


@dataclass(frozen=True, slots=True)
class OverviewFormat:
    """Where each needed field sits in a line (0 is the article number), from LIST OVERVIEW.FMT."""

    subject: int
    poster: int
    date: int
    message_id: int
    size: int
    xref: int | None  # absent when the server does not send Xref
    xref_full: bool  # "Xref:full": the value starts with "Xref: "
    need: int  # fields a line must have

    @classmethod
    def from_fmt(cls, names: Sequence[str] = RFC3977_FORMAT) -> OverviewFormat:
        """Positions from the lines of a ``LIST OVERVIEW.FMT`` reply.

        RFC 2980 servers say "Bytes:"/"Lines:" where RFC 3977 ones say ":bytes"/":lines"; both are read.
        Raises ValueError when a needed field is missing: the server's overview cannot be indexed.
        """
        positions: dict[str, int] = {}
        xref_full = False
        for index, raw in enumerate(names, start=1):
            name = raw.strip().lower()
            full = name.endswith(":full")
            if full:
                name = name[: -len(":full")]
            key = name.strip(":")
            if key in positions:
                continue
            positions[key] = index
            if key == "xref":
                xref_full = full
        missing = [k for k in ("subject", "from", "date", "message-id", "bytes") if k not in positions]
        if missing:
            raise ValueError(
                f"LIST OVERVIEW.FMT lacks {', '.join(missing)}: this server's overview cannot be indexed "
                f"(its fields: {', '.join(names)})"
            )
        needed = (positions[k] for k in ("subject", "from", "date", "message-id", "bytes"))
        return cls(
            subject=positions["subject"],
            poster=positions["from"],
            date=positions["date"],
            message_id=positions["message-id"],
            size=positions["bytes"],
            xref=positions.get("xref"),
            xref_full=xref_full,
            need=max(needed) + 1,
        )


DEFAULT_FORMAT = OverviewFormat.from_fmt()


class Segment(NamedTuple):
    """One article of a multi-part post, as the overview describes it."""

    number: int
    subject: str
    poster: str
    date: int | None  # Unix seconds; None when the Date header could not be parsed
    message_id: str  # without angle brackets
    size: int
    groups: tuple[str, ...]  # from Xref; empty when the server sent none


@dataclass(frozen=True, slots=True)
class Overview:
    """What one chunk held."""

    segments: list[Segment]
    malformed: dict[str, int]
    gaps: int
    undated: int


def split_lines(data: bytes) -> list[bytes]:
    """A chunk's lines. CR is left on each line's last field, where int() and strip() ignore it."""
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    return lines


def chunk_is_clean(data: bytes, lines: list[bytes]) -> bool:
    """True when no line of the chunk can fail the byte-level checks, tested in C over the whole chunk.

    A line of at most MAX_SUBJECT bytes cannot hold a longer subject, nor exceed MAX_LINE.
    """
    if b"\0" in data:
        return False
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return False
    return len(data) <= MAX_SUBJECT or max(map(len, lines), default=0) <= MAX_SUBJECT


def line_fault(line: bytes) -> str | None:
    """The byte-level reason a line is unusable, or None."""
    if len(line) > MAX_LINE:
        return REASON_LINE_TOO_LONG
    if b"\0" in line:
        return REASON_NUL
    if not line.isascii():
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            return REASON_INVALID_UTF8
    return None


def read_number(raw: bytes) -> int | None:
    """A non-negative integer field, or None. int() is the fast path's parser too, so both accept alike."""
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if 0 <= value <= MAX_NUMBER else None


def message_id_bytes(raw: bytes) -> bytes:
    """A Message-ID field without angle brackets or surrounding blanks.

    Every "<" and ">" goes, not only the outer pair: RFC 5536 allows none inside, and removing all of
    them is one C call on a whole column of ids (indexer.take) where per-id stripping is a loop.
    """
    return raw.strip().replace(b"<", b"").replace(b">", b"")


def message_id(raw: bytes) -> str:
    """A Message-ID as text; see message_id_bytes."""
    return message_id_bytes(raw).decode("utf-8", "replace")


def xref_groups(raw: bytes, full: bool) -> tuple[str, ...]:
    """The group names of an Xref value ("[Xref: ]host group:number group:number ...")."""
    text = raw.strip()
    if full:
        if text[:5].lower() != b"xref:":
            return ()
        text = text[5:]
    words = text.split()[1:]  # the first word is the server's name
    groups = {word.partition(b":")[0] for word in words if b":" in word}
    groups.discard(b"")
    return tuple(sorted(g.decode("utf-8", "replace") for g in groups))


# Dates. Posters' clients write RFC 5322 dates, mostly "Sat, 30 Nov 2024 14:22:01 +0000"; the fast path
# handles that form, email.utils the obsolete ones (two-digit years, named zones, no seconds).
_MONTHS = {
    m.encode(): i
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1
    )
}
_DATE = re.compile(
    rb"\s*(?:[A-Za-z]{3},\s*)?(\d{1,2})\s+([A-Za-z]{3})\s+(\d{4})\s+(\d{2}):(\d{2})(?::(\d{2}))?\s+([+-])(\d{2})(\d{2})"
)
_MIN_DATE = 0  # 1970: Usenet dates before it are garbage
_MAX_DATE = 4_102_444_800  # 2100-01-01


def parse_date(raw: bytes) -> int | None:
    """Unix seconds of an RFC 5322 date, or None when it cannot be read or is absurd."""
    m = _DATE.match(raw)
    if m is not None:
        day, mon, year, hh, mm, ss, sign, zh, zm = m.groups()
        month = _MONTHS.get(mon.lower())
        if month is not None:
            offset = (int(zh) * 3600 + int(zm) * 60) * (1 if sign == b"+" else -1)
            return _unix(int(year), month, int(day), int(hh), int(mm), int(ss or 0), offset)
    try:
        parts = parsedate_tz(raw.decode("ascii", "replace"))
    except (ValueError, IndexError, TypeError, OverflowError):
        return None
    if parts is None:
        return None
    year, month, day, hh, mm, ss = parts[:6]
    return _unix(year, month, day, hh, mm, ss, parts[9] or 0)


def _unix(year: int, month: int, day: int, hh: int, mm: int, ss: int, offset: int) -> int | None:
    """Unix seconds of a valid date and time (timegm alone would take 31 February), else None."""
    if not (1970 <= year <= 2100 and 1 <= month <= 12 and hh < 24 and mm < 60 and ss <= 60):
        return None
    at = (year - 1970) * 12 + month - 1
    if not 1 <= day <= _MONTH_DAYS[at]:
        return None
    # calendar.timegm's arithmetic, from the month's first day
    value = (_MONTH_START[at] + day - 1) * 86400 + hh * 3600 + mm * 60 + ss - offset
    return value if _MIN_DATE <= value <= _MAX_DATE else None


_MONTH_LENGTH = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)  # in a common year


def _months() -> tuple[list[int], list[int]]:
    """Each month of 1970-2100 (index ``(year - 1970) * 12 + month - 1``): the days from 1970-01-01 to
    its first day, and its length. calendar.monthrange and timegm were ~0.6 µs of a date's ~3.3 µs,
    and the edge worker parses two a release (issue 17)."""
    starts: list[int] = []
    lengths: list[int] = []
    days = 0
    for year in range(1970, 2101):
        for month in range(1, 13):
            length = _MONTH_LENGTH[month] + (month == 2 and calendar.isleap(year))  # monthrange's
            starts.append(days)
            lengths.append(length)
            days += length
    return starts, lengths


_MONTH_START, _MONTH_DAYS = _months()


def parse_overview(data: bytes, first: int, last: int, fmt: OverviewFormat = DEFAULT_FORMAT) -> Overview:
    """Every well-formed line of a chunk covering articles ``[first, last]`` as a Segment."""
    malformed: Counter[str] = Counter()
    segments: list[Segment] = []
    numbered: set[int] = set()
    undated = 0
    for line in split_lines(data):
        if not line.strip():
            continue
        fields = line.split(b"\t")
        number = read_number(fields[0])
        if number is not None and first <= number <= last:
            if number in numbered:
                malformed[REASON_DUPLICATE] += 1
                continue
            numbered.add(number)  # a returned article, even if its line is unusable: not a gap
        reason = line_fault(line)
        if reason is None:
            reason = field_fault(fields, number, first, last, fmt)
        if reason is not None:
            malformed[reason] += 1
            continue
        assert number is not None  # field_fault checked it
        date = parse_date(fields[fmt.date])
        if date is None:
            undated += 1
        xref = fields[fmt.xref] if fmt.xref is not None and fmt.xref < len(fields) else b""
        segments.append(
            Segment(
                number=number,
                subject=fields[fmt.subject].decode(),
                poster=fields[fmt.poster].decode(),
                date=date,
                message_id=message_id(fields[fmt.message_id]),
                size=int(fields[fmt.size]),
                groups=xref_groups(xref, fmt.xref_full),
            )
        )
    gaps = (last - first + 1) - len(numbered) if last >= first else 0
    return Overview(segments=segments, malformed=dict(malformed), gaps=gaps, undated=undated)


def field_fault(
    fields: list[bytes], number: int | None, first: int, last: int, fmt: OverviewFormat
) -> str | None:
    """The field-level reason a split line is unusable, or None."""
    if len(fields) < fmt.need:
        return REASON_MISSING_FIELDS
    if number is None:
        return REASON_BAD_NUMBER
    if not first <= number <= last:
        return REASON_OUT_OF_SPAN
    if len(fields[fmt.subject]) > MAX_SUBJECT:
        return REASON_SUBJECT_TOO_LONG
    if read_number(fields[fmt.size]) is None:
        return REASON_BAD_BYTES
    mid = message_id_bytes(fields[fmt.message_id])
    if not mid or any(blank in mid for blank in (b" ", b"\r", b"\x0b", b"\x0c")):
        return REASON_NO_MESSAGE_ID
    return None


__all__ = [
    "DEFAULT_FORMAT",
    "MAX_LINE",
    "MAX_NUMBER",
    "MAX_SUBJECT",
    "REASONS",
    "RFC3977_FORMAT",
    "Overview",
    "OverviewFormat",
    "Segment",
    "chunk_is_clean",
    "field_fault",
    "line_fault",
    "message_id",
    "message_id_bytes",
    "parse_date",
    "parse_overview",
    "read_number",
    "split_lines",
    "xref_groups",
]

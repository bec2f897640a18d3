"""NZB 1.1 files: what a downloader needs to fetch a release (the newznab API's ``t=get``).

Format: the newzBin NZB 1.1 DTD (``-//newzBin//DTD NZB 1.1//EN``), namespace
``http://www.newzbin.com/DTD/2003/nzb``; UTF-8. The head carries the meta types the NZB 1.1 spec names:
``<meta type="title">`` and ``<meta type="category">``, and ``<meta type="password">`` when the
release's archive password is known (SABnzbd and NZBGet use it to unpack). It wrote ``type="name"``,
which no spec names (issue 18). Each file has its poster, date (unix seconds) and subject as
attributes, its groups, and its segments in number order, each with its article size in bytes and its
message-id without angle brackets.

**Text a poster controls** (poster, subject, names; message-ids and groups too, they come from the same
overview) may hold anything: control characters, bytes that were not UTF-8 (which the overview parser
keeps as lone surrogates, Python's ``surrogateescape``), ``]]>``, U+FFFE. XML 1.0 cannot carry every
code point, even as a character reference, so each one it cannot carry (C0 controls other than tab,
newline and carriage return; surrogates; U+FFFE and U+FFFF) becomes U+FFFD. Everything else survives
exactly: markup characters are escaped, and tab, newline and carriage return are written as character
references where a parser would otherwise normalize them (all three in attributes, carriage return in
text), so a parser reads back the very string that was written.

**File order.** SABnzbd and NZBGet both reorder a job's files after they load it, but differently, and
a downloader starts with the files in the order the NZB gives until it does:

- SABnzbd (``nzbstuff.nzf_cmp_name``, kept in its 2026 fix for consistent sorting, PR #3276): PAR2 index
  files first, "so we always have the md5 packs" (the 16 KiB hashes by which it renames obfuscated files
  as they arrive), then ``.rar`` before ``.r00``…, other files by name, PAR2 recovery volumes last.
- NZBGet (``QueueEditor::SortGroupFiles``, option ReorderFiles): PAR2 files after the others, ``.rar``
  before ``.r01``; within one PAR2 set by size, which puts the small index file before its volumes.
  With DirectRename it fetches the PAR2 index early anyway, for the same renaming.

Both agree on volumes last and ``.rar`` before ``.rNN``; the PAR2 index first is what SABnzbd asks for,
what NZBGet's direct rename wants early, and what helps a downloader that keeps the NZB's order. So
files are written as: PAR2 index files; then the others by their file counter ``[i/n]`` when the indexer
knows it (a poster numbers files in posting order), then by name in natural order (``part2`` before
``part10``) with ``name.rar`` before ``name.r00``; then PAR2 recovery volumes in natural order.
"""

from __future__ import annotations

import gzip as gzip_module
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["NZB_DOCTYPE", "NZB_NAMESPACE", "NzbFile", "NzbRelease", "NzbSegment", "order_files", "write_nzb"]

NZB_NAMESPACE = "http://www.newzbin.com/DTD/2003/nzb"
NZB_DOCTYPE = (
    '<!DOCTYPE nzb PUBLIC "-//newzBin//DTD NZB 1.1//EN" "http://www.newzbin.com/DTD/nzb/nzb-1.1.dtd">'
)


@dataclass(frozen=True, slots=True)
class NzbSegment:
    """One article of a file: ``number`` from 1, ``size`` its size in bytes (the NZB's ``bytes``)."""

    number: int
    size: int
    message_id: str  # with or without the angle brackets; written without


@dataclass(frozen=True, slots=True)
class NzbFile:
    poster: str
    date: int  # unix seconds of the first post
    subject: str
    groups: Sequence[str]
    segments: Sequence[NzbSegment]
    name: str | None = None  # the file name the indexer read from the subject, if any
    index: int | None = None  # the file counter i of "[i/n]", if the subject had one


@dataclass(frozen=True, slots=True)
class NzbRelease:
    name: str
    category: str
    files: Sequence[NzbFile]
    password: str | None = None


# Code points XML 1.0 can carry (the production Char): everything else is replaced.
_NOT_XML = "\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff"
_ATTR_SPECIAL = re.compile(f'[&<>"\t\n\r{_NOT_XML}]')
_TEXT_SPECIAL = re.compile(f"[&<>\r{_NOT_XML}]")
_ESCAPES = {
    "&": "&amp;",
    "<": "&lt;",
    # Escaped everywhere, not only in "]]>", which may not appear literally in text.
    ">": "&gt;",
    '"': "&quot;",
    # Written as references: a parser turns literal ones in attributes into spaces, and a literal
    # carriage return anywhere into a newline.
    "\t": "&#9;",
    "\n": "&#10;",
    "\r": "&#13;",
}


def _escape(match: re.Match[str]) -> str:
    return _ESCAPES.get(match.group(), "\ufffd")


def _attr(value: str) -> str:
    return _ATTR_SPECIAL.sub(_escape, value)


def _text(value: str) -> str:
    return _TEXT_SPECIAL.sub(_escape, value)


def _message_id(raw: str) -> str:
    message_id = raw.strip()
    if message_id.startswith("<") and message_id.endswith(">"):
        message_id = message_id[1:-1]
    return message_id


# -- file order -----------------------------------------------------------------------------------

_QUOTED = re.compile(r'"([^"]+)"')
# ".par2" not followed by more name: "x.par2", 'x.par2" yEnc', but not "x.par2.nfo".
_PAR2 = re.compile(r"\.par2(?![\w.])", re.IGNORECASE)
_PAR2_VOLUME = re.compile(r"\.vol\d+[+-]\d+\.par2(?![\w.])", re.IGNORECASE)
_RAR = re.compile(r"^(.*)\.r(ar|\d{2,3})$", re.IGNORECASE | re.DOTALL)
_DIGITS = re.compile(r"(\d+)")

_NaturalKey = tuple[str | int, ...]


def _file_name(file: NzbFile) -> str:
    if file.name:
        return file.name
    quoted = _QUOTED.search(file.subject)
    return quoted.group(1) if quoted else file.subject


def _natural(text: str) -> _NaturalKey:
    # re.split with a group alternates text and digits, text first: positions always compare like types.
    parts = _DIGITS.split(text.casefold())
    return tuple(int(part) if i % 2 else part for i, part in enumerate(parts))


def _name_key(name: str) -> tuple[_NaturalKey, int]:
    rar = _RAR.match(name)
    if rar:
        # "name.rar" is the first volume of the old naming, before "name.r00", "name.r01", ...
        suffix = rar.group(2)
        return _natural(rar.group(1)), -1 if suffix.lower() == "ar" else int(suffix)
    return _natural(name), -2


def _order_key(file: NzbFile) -> tuple[int, int, int, tuple[_NaturalKey, int]]:
    name = _file_name(file)
    if _PAR2_VOLUME.search(name):
        return 2, 0, 0, (_natural(name), 0)
    if _PAR2.search(name):
        return 0, 0, 0, (_natural(name), 0)
    if file.index is not None:
        return 1, 0, file.index, _name_key(name)
    return 1, 1, 0, _name_key(name)


def order_files(files: Iterable[NzbFile]) -> list[NzbFile]:
    """The files in the order written to the NZB (see the module's docstring for why)."""
    return sorted(files, key=_order_key)


# -- writing --------------------------------------------------------------------------------------


def _segments(file: NzbFile) -> list[NzbSegment]:
    """The file's segments by number, one per number (a part posted twice keeps its first listing)."""
    by_number: dict[int, NzbSegment] = {}
    for segment in file.segments:
        if segment.number < 1 or segment.size < 0:
            raise ValueError(
                f"segment {segment.number} ({segment.size} bytes) of {file.subject!r}: numbers start at 1, "
                "sizes are not negative"
            )
        if not _message_id(segment.message_id):
            raise ValueError(f"segment {segment.number} of {file.subject!r} has no message-id")
        by_number.setdefault(segment.number, segment)
    return [by_number[number] for number in sorted(by_number)]


def write_nzb(release: NzbRelease, *, gzip: bool = False) -> bytes:
    """The release as an NZB 1.1 document in UTF-8, gzip-compressed if ``gzip`` (deterministic: no
    timestamp in the gzip header, so the same release gives the same bytes).

    Files without segments are left out (a downloader can fetch nothing for them); a release left with
    no file is a ``ValueError``, as are segment numbers below 1, negative sizes and empty message-ids —
    those are the catalog's errors, not a poster's.
    """
    files = [(file, segments) for file in order_files(release.files) if (segments := _segments(file))]
    if not files:
        raise ValueError(f"release {release.name!r} has no file with segments: there is nothing to download")
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>\n',
        NZB_DOCTYPE,
        f'\n<nzb xmlns="{NZB_NAMESPACE}">\n <head>\n',
        f'  <meta type="title">{_text(release.name)}</meta>\n',
        f'  <meta type="category">{_text(release.category)}</meta>\n',
    ]
    if release.password:
        out.append(f'  <meta type="password">{_text(release.password)}</meta>\n')
    out.append(" </head>\n")
    for file, segments in files:
        out.append(
            f' <file poster="{_attr(file.poster)}" date="{int(file.date)}" subject="{_attr(file.subject)}">\n'
            "  <groups>\n"
        )
        out.extend(f"   <group>{_text(group)}</group>\n" for group in file.groups)
        out.append("  </groups>\n  <segments>\n")
        out.extend(
            f'   <segment bytes="{s.size}" number="{s.number}">{_text(_message_id(s.message_id))}</segment>\n'
            for s in segments
        )
        out.append("  </segments>\n </file>\n")
    out.append("</nzb>\n")
    document = "".join(out).encode("utf-8")
    return gzip_module.compress(document, compresslevel=6, mtime=0) if gzip else document

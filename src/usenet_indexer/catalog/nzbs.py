"""A catalog release as an NZB file: its segment blob read back into ``wire/nzb.py``'s model.

The blob keeps per file its name, file counter, part total, the subject it was posted under (its part
counter at part 1, as NZB files show a file: the subject of its first part; issue 16) and per part the
size and message-id. Releases stored before issue 16 have no subject (segment blob version 1): theirs is
written in the common posting form, ``name [i/n] - "file" yEnc (1/parts)``, from which downloaders
(SABnzbd, NZBGet) read the file's name between the quotes. The date is the release's first post.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import quote

from usenet_indexer.db import Row
from usenet_indexer.indexing import unpack_segments
from usenet_indexer.indexing.categories import NAMES
from usenet_indexer.wire.nzb import NzbFile, NzbRelease, NzbSegment, write_nzb

__all__ = ["ascii_file_name", "download_headers", "nzb_bytes", "nzb_file_name", "nzb_release"]


def _subject(release_name: str, name: str, index: int, file_total: int, parts_total: int) -> str:
    counter = f" [{index}/{file_total}]" if index and file_total else ""
    return f'{release_name}{counter} - "{name}" yEnc (1/{parts_total or 1})'


def nzb_release(row: Row) -> NzbRelease:
    """The release of a ``release_segments_by_key`` row, ready for ``write_nzb``."""
    files = unpack_segments(bytes(row["segments"]))
    groups = tuple(str(row["groups"]).split())
    date = int(row["first_date"] if row["first_date"] is not None else row["posted_at"])
    file_total = len(files)
    nzb_files = [
        NzbFile(
            poster=str(row["poster"]),
            date=date,
            subject=f.subject
            or _subject(str(row["name"]), f.name, f.index, max(file_total, f.index), f.parts_total),
            groups=groups,
            segments=[NzbSegment(s.part, s.size, s.message_id) for s in f.segments()],
            name=f.name,
            index=f.index or None,
        )
        for f in files
    ]
    # The catalog's ``password`` says whether the archive is passworded, not the password itself: the
    # NZB's password meta waits for a source of passwords.
    return NzbRelease(
        name=str(row["name"]),
        category=NAMES.get(int(row["category"]), str(row["category"])),
        files=nzb_files,
    )


def nzb_bytes(row: Row, *, gzip: bool = False) -> bytes:
    return write_nzb(nzb_release(row), gzip=gzip)


UNSAFE = frozenset('<>:"/\\|?*')  # what no file name may hold on one system or another


def nzb_file_name(name: str) -> str:
    """The release's download file name, any script kept (``filename*`` of Content-Disposition): only
    what a file name cannot hold is replaced."""
    safe = "".join("_" if c in UNSAFE or not c.isprintable() else c for c in name).strip(" .")
    return (safe[:200] or "release") + ".nzb"


def ascii_file_name(name: str) -> str:
    """The same in ASCII, for clients that read only ``filename=``: accents dropped, other letters
    replaced ("Фильм.2024" is "_____.2024")."""
    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    if len(plain) < len(name) // 2:  # most of it was not Latin: keep the places, not a shorter name
        plain = "".join(c if c.isascii() else "_" for c in name)
    safe = "".join(c if c.isalnum() or c in "._-()[] " else "_" for c in plain).strip(" .")
    return (safe[:200] or "release") + ".nzb"


def download_headers(name: str, category: str, details_url: str, *, suffix: str = "") -> dict[str, str]:
    """The headers of an NZB download (issue 18: a name in Cyrillic, or with ``"`` or ``;``, broke it).

    - ``Content-Disposition`` (RFC 6266): an ASCII ``filename`` first, for clients that read no more
      (NZBGet), then ``filename*`` with the name in UTF-8.
    - ``X-DNZB-Name``: SABnzbd's job name, which wins over the file name there, in ASCII (accents
      dropped, other letters replaced): SABnzbd reads header bytes as Latin-1 (Python's http.client),
      so UTF-8 would arrive as mojibake, and other clients (httpx, Starlette's) refuse what is not
      UTF-8. A header cannot carry the name whole; ``filename*`` does, for clients that read it.
    - ``X-DNZB-Category`` (NZBGet matches this spelling exactly) and ``X-DNZB-Details``.
    """
    plain = ascii_file_name(name) + suffix
    full = nzb_file_name(name) + suffix
    job = ascii_file_name(name).removesuffix(".nzb")
    return {
        "Content-Disposition": f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(full, safe='')}",
        "X-DNZB-Name": job,
        "X-DNZB-Category": category,
        "X-DNZB-Details": details_url,
    }

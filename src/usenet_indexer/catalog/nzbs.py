"""A catalog release as an NZB file: its segment blob read back into ``wire/nzb.py``'s model.

The blob keeps per file its name, file counter, part total and per part the size and message-id, not
the subjects the parts were posted under; each file's subject is written in the common posting form,
``name [i/n] - "file" yEnc (1/parts)``, from which downloaders (SABnzbd, NZBGet) read the file's name
between the quotes. The date is the release's first post.
"""

from __future__ import annotations

from usenet_indexer.db import Row
from usenet_indexer.indexing import unpack_segments
from usenet_indexer.indexing.categories import NAMES
from usenet_indexer.wire.nzb import NzbFile, NzbRelease, NzbSegment, write_nzb

__all__ = ["nzb_bytes", "nzb_file_name", "nzb_release"]


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
            subject=_subject(str(row["name"]), f.name, f.index, max(file_total, f.index), f.parts_total),
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


def nzb_file_name(name: str) -> str:
    """A safe download file name for the release (for Content-Disposition)."""
    safe = "".join(c if c.isalnum() or c in "._-()[] " else "_" for c in name).strip(" .")
    return (safe[:200] or "release") + ".nzb"

"""File names of posted members, release base names, obfuscation, and cleaned release names.

A release is posted as members (rar volumes, par2 index and recovery volumes, nfo, sfv, ...) that share
a base name. Stripping the member suffix gives that base name, so that ``x.vol03+04.par2`` joins
``x.part01.rar`` in release ``x`` instead of becoming a release of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum


class FileKind(StrEnum):
    """What a posted file is, judged from its name."""

    PAR2 = "par2"  # the PAR2 index file: small, names every file of the set
    PAR2_VOLUME = "par2_volume"  # .volNN+MM.par2 recovery volumes
    RAR = "rar"
    SEVEN_ZIP = "7z"
    ZIP = "zip"
    SPLIT = "split"  # .001, .002 ... (HJSplit and friends)
    NFO = "nfo"
    SFV = "sfv"
    NZB = "nzb"
    VIDEO = "video"
    AUDIO = "audio"
    BOOK = "book"
    IMAGE = "image"
    DISC = "disc"  # iso/img/bin
    PROGRAM = "program"
    OTHER = "other"


_EXTENSIONS: dict[str, FileKind] = {
    **dict.fromkeys(("rar",), FileKind.RAR),
    **dict.fromkeys(("7z",), FileKind.SEVEN_ZIP),
    **dict.fromkeys(("zip",), FileKind.ZIP),
    **dict.fromkeys(("nfo",), FileKind.NFO),
    **dict.fromkeys(("sfv",), FileKind.SFV),
    **dict.fromkeys(("nzb",), FileKind.NZB),
    **dict.fromkeys(
        ("mkv", "mp4", "m4v", "avi", "wmv", "mov", "mpg", "mpeg", "ts", "m2ts", "vob", "webm"), FileKind.VIDEO
    ),
    **dict.fromkeys(
        ("mp3", "flac", "m4a", "aac", "ogg", "opus", "wav", "ape", "wv", "m4b", "cue"), FileKind.AUDIO
    ),
    **dict.fromkeys(("epub", "mobi", "azw", "azw3", "pdf", "cbr", "cbz", "djvu", "lit"), FileKind.BOOK),
    **dict.fromkeys(("jpg", "jpeg", "png", "gif", "bmp", "webp"), FileKind.IMAGE),
    **dict.fromkeys(("iso", "img", "bin", "nrg", "mdf", "cso", "xci", "nsp", "wbfs", "pkg"), FileKind.DISC),
    **dict.fromkeys(("exe", "msi", "dmg", "apk", "deb", "rpm"), FileKind.PROGRAM),
}
_PAR2_VOLUME = re.compile(r"\.vol\d+[+-]\d+$", re.I)
_NUMBERED = re.compile(r"([rsz])\d{2,3}")
_TAIL = 48  # suffixes are short: looking at the name's end only keeps these regexes O(1) per name


# Obfuscated base names: long hex digests, or long unbroken alphanumeric runs that mix letters and digits
# (base32/base64-ish). A real title has word separators or no digits; "TheBigBangTheory" is not flagged.
_HEX = re.compile(r"[0-9a-fA-F]{16,}")
_RANDOM = re.compile(r"[A-Za-z0-9]{12,}")
_LOWER_RUNS = re.compile(r"[a-z]+")


# Kinds of files posted as members of a set, which their shared base name ties together: archives
# and their volumes, recovery and check files. They wrap content rather than being it.
SET_MEMBERS = frozenset(
    {
        FileKind.PAR2,
        FileKind.PAR2_VOLUME,
        FileKind.RAR,
        FileKind.SEVEN_ZIP,
        FileKind.ZIP,
        FileKind.SPLIT,
        FileKind.NFO,
        FileKind.SFV,
        FileKind.NZB,
    }
)


def file_kind(file_name: str) -> FileKind:
    """The kind of a posted file, from its name (extension lookups: this runs once per file posted)."""
    head, dot, ext = file_name[-_TAIL:].lower().rpartition(".")
    if not dot:
        return FileKind.OTHER
    kind = _EXTENSIONS.get(ext)
    if kind is not None:
        return kind
    if ext == "par2":
        return FileKind.PAR2_VOLUME if _PAR2_VOLUME.search(head) else FileKind.PAR2
    if len(ext) == 3 and ext.isdigit():
        return FileKind.SEVEN_ZIP if head.endswith(".7z") else FileKind.SPLIT
    numbered = _NUMBERED.fullmatch(ext)
    if numbered is not None:
        return FileKind.ZIP if numbered.group(1) == "z" else FileKind.RAR
    return FileKind.OTHER


# The kinds file_kind finds by more than the extension (a par2 index or volume, a numbered or split
# volume's family, no known extension), in the order the accelerator's subject tables index them
# (rules.py); every other kind is the extension's alone.
NOT_BY_EXTENSION = (
    FileKind.OTHER,
    FileKind.PAR2,
    FileKind.PAR2_VOLUME,
    FileKind.SEVEN_ZIP,
    FileKind.SPLIT,
    FileKind.ZIP,
    FileKind.RAR,
)
_BY_EXTENSION_ONLY = frozenset(FileKind) - frozenset(NOT_BY_EXTENSION)


def count_kinds(file_names: Iterable[str], kinds: frozenset[FileKind]) -> dict[FileKind, int]:
    """How many of ``file_names`` are of each of ``kinds`` (``file_kind``), for kinds file_kind names
    by the extension alone: each name's extension looked up, without a call per name nor the par2 and
    volume tests, which only tell kinds apart that are not counted (categorize, once a release at the
    worker's encode: file_kind was ~10 of its ~36 µs, issue 17, docs/PERFORMANCE.md "Session 14")."""
    if not kinds <= _BY_EXTENSION_ONLY:
        others = sorted(kinds - _BY_EXTENSION_ONLY)
        raise ValueError(f"count_kinds counts only kinds named by the extension alone, not {others}")
    counts: dict[FileKind, int] = {}
    for file_name in file_names:
        _, dot, ext = file_name[-_TAIL:].lower().rpartition(".")
        kind = _EXTENSIONS.get(ext) if dot else None
        if kind is not None and kind in kinds:
            counts[kind] = counts.get(kind, 0) + 1
    return counts


_MEMBER_EXTENSIONS = frozenset(
    (
        "par2",
        "rar",
        "7z",
        "zip",
        "nfo",
        "sfv",
        "nzb",
        "srr",
        "srt",
        "sub",
        "idx",
        "jpg",
        "jpeg",
        "png",
        "txt",
        "mkv",
        "mp4",
        "m4v",
        "avi",
        "wmv",
        "mov",
        "mpg",
        "mpeg",
        "ts",
        "m2ts",
        "webm",
        "mp3",
        "flac",
        "m4a",
        "epub",
        "mobi",
        "pdf",
        "cbr",
        "cbz",
        "iso",
        "img",
        "exe",
    )
)
_PART_VOLUME = re.compile(r"\.part\d+$", re.I)


def release_base(file_name: str) -> str:
    """The release base name of a member file: its name without the member suffix.

    "x.part01.rar", "x.r12", "x.vol07+08.par2", "x.7z.001", "x.001", "x.nfo" and "x.mkv" are all "x":
    a set's members (and a single-file post's one file) share their base name. Extension lookups, not
    one regex: this runs for every new file a worker sees.
    """
    name = file_name.strip()
    head, dot, ext = name.rpartition(".")
    if not dot or not head:
        return name
    ext = ext.lower()
    if ext == "par2":
        volume = _PAR2_VOLUME.search(head[-_TAIL:])
        return head[: len(head) - (len(volume.group()) if volume else 0)] or name
    if ext == "rar":
        volume = _PART_VOLUME.search(head[-_TAIL:])
        return head[: len(head) - (len(volume.group()) if volume else 0)] or name
    if len(ext) == 3 and ext.isdigit():
        return head[:-3] if head[-3:].lower() == ".7z" and len(head) > 3 else head
    if ext in _MEMBER_EXTENSIONS or _NUMBERED.fullmatch(ext):
        return head
    return name


def looks_obfuscated(name: str) -> bool:
    """True for names that are hashes or random strings rather than titles."""
    core = name.strip()
    if not core:
        return False
    if _HEX.fullmatch(core):
        return True
    if not _RANDOM.fullmatch(core):
        return False
    digits = sum(c.isdigit() for c in core)
    upper = sum(c.isupper() for c in core)
    lower = sum(c.islower() for c in core)
    # Mixed letters and digits, or mixed case with many "humps": random output, not a word.
    if digits >= 2 and (upper + lower) >= 2:
        return True
    # Letters only: CamelCase words have lower-case runs of several letters ("TheBigBangTheory"),
    # random mixed case has many runs of one ("XkQzLmPwRtYbNc").
    runs = _LOWER_RUNS.findall(core)
    single = sum(len(run) == 1 for run in runs)
    return len(core) >= 16 and upper >= 4 and len(runs) >= 4 and single * 2 >= len(runs)


_REQUEST_TAG = re.compile(r"^\s*\[\s*\d{3,}\s*\]\s*[-–]?\s*")
_BRACKET_TAGS = re.compile(r"\[\s*(?:full|repost|re-?up|#?[\w.]+@\w+|#a\.b\.[\w.]+)\s*\]", re.I)
_SPACES = re.compile(r"\s{2,}")
# Brackets are left alone: "[FLAC]" and "(2019)" end many real names.
_EDGE_JUNK = re.compile(r"^[\s\-–_:|\"']+|[\s\-–_:|\"']+$")


_EDGES = " \t-–_:|\"'"


def clean_name(collection: str) -> str:
    """A display name for a release: request tags and edge punctuation removed, whitespace collapsed."""
    if (
        "[" not in collection
        and "  " not in collection
        and collection[:1] not in _EDGES
        and collection[-1:] not in _EDGES
        and collection.isprintable()
    ):
        return collection  # nothing to clean: the common case, without a regex
    name = _REQUEST_TAG.sub("", collection)
    name = _BRACKET_TAGS.sub(" ", name)
    name = _EDGE_JUNK.sub("", name)
    name = _SPACES.sub(" ", name)
    return name.strip() or collection.strip()


_NORMAL = re.compile(r"[^0-9a-z]+")


def normalise(text: str) -> str:
    """Lower case, every run of non-alphanumerics one space: the form names are compared in."""
    return _NORMAL.sub(" ", text.casefold()).strip()


def normalise_poster(poster: str) -> str:
    """A poster as compared for keys: case and surrounding whitespace do not matter."""
    return " ".join(poster.casefold().split())


__all__ = [
    "NOT_BY_EXTENSION",
    "SET_MEMBERS",
    "FileKind",
    "clean_name",
    "count_kinds",
    "file_kind",
    "looks_obfuscated",
    "normalise",
    "normalise_poster",
    "release_base",
]

"""Newznab categories (the numbering Prowlarr uses) from a release's name and the kinds of its files.

parse-torrent-title (MIT) reads the scene-style name (season, episode, year, resolution, quality);
the file kinds (naming.file_kind) settle what the name leaves open: FLAC files are audio whatever the
name says, an epub is a book. Obfuscated names are Other until a probe gives the release its real name.
"""

from __future__ import annotations

import re
import warnings
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from usenet_indexer.indexing.naming import FileKind, file_kind, looks_obfuscated

with warnings.catch_warnings():
    # PTN's regex literals have invalid escapes: compiling it warns once, before its .pyc exists, which
    # pytest's filterwarnings=error turns into an import error on a fresh checkout.
    warnings.simplefilter("ignore")
    import PTN  # type: ignore[import-untyped]

CONSOLE = 1000
MOVIES, MOVIES_SD, MOVIES_HD, MOVIES_UHD, MOVIES_BLURAY, MOVIES_3D = 2000, 2030, 2040, 2045, 2050, 2060
AUDIO = 3000
PC = 4000
TV, TV_SD, TV_HD, TV_UHD = 5000, 5030, 5040, 5045
XXX = 6000
BOOKS = 7000
OTHER = 8000

NAMES = {
    CONSOLE: "Console",
    MOVIES: "Movies",
    MOVIES_SD: "Movies/SD",
    MOVIES_HD: "Movies/HD",
    MOVIES_UHD: "Movies/UHD",
    MOVIES_BLURAY: "Movies/BluRay",
    MOVIES_3D: "Movies/3D",
    AUDIO: "Audio",
    PC: "PC",
    TV: "TV",
    TV_SD: "TV/SD",
    TV_HD: "TV/HD",
    TV_UHD: "TV/UHD",
    XXX: "XXX",
    BOOKS: "Books",
    OTHER: "Other",
}


@dataclass(frozen=True, slots=True)
class Category:
    """A release's category and the attributes read on the way."""

    id: int
    title: str | None = None
    season: int | None = None
    episode: int | None = None
    year: int | None = None
    resolution: str | None = None

    @property
    def name(self) -> str:
        return NAMES[self.id]


_XXX = re.compile(r"(?i)\b(?:xxx|porn|nsfw|brazzers|onlyfans)\b")
_CONSOLE = re.compile(r"(?i)[._ -](?:nsw|switch|ps[345]|psv|xbox(?:one|360)?|wii ?u?|nds|3ds)(?:[._ -]|$)")
_PC = re.compile(
    r"(?i)(?:[._ -]v\d+(?:\.\d+)+|\b(?:x64|x86|win(?:dows)?|macos|linux|setup|keygen|portable)\b"
    r"|-(?:codex|skidrow|reloaded|plaza|fitgirl|razor1911|tenoke|rune|flt|empress)$)"
)
_BOOK = re.compile(r"(?i)\b(?:epub|mobi|azw3?|ebook|pdf|cbr|cbz|comics?)\b")
_AUDIO = re.compile(r"(?i)\b(?:flac|mp3|aac|ogg|opus|alac|lossless|\d{3}kbps|discography)\b")
_EPISODE = re.compile(r"(?i)\bS\d{1,3}(?:E\d{1,4})?\b|\b\d{1,2}x\d{2,3}\b")
_SD = re.compile(r"(?i)\b(?:480p|576p|sdtv|dvdrip|xvid|divx|pdtv|dsr|dvd(?:5|9|r)?)\b")
_UHD = re.compile(r"(?i)\b(?:2160p|4k|uhd)\b")
_HD = re.compile(r"(?i)\b(?:720p|1080[pi])\b")
_FULL_BLURAY = re.compile(r"(?i)\b(?:complete[._ -]?blu-?ray|bdmv|bd(?:25|50|66|100)|avc[._-]remux)\b")
_THREE_D = re.compile(r"(?i)\b(?:3d|h?sbs|h?ou|half[._ -]?(?:sbs|ou))\b")
_VIDEO_HINT = re.compile(
    r"(?i)\b(?:bluray|blu-ray|bdrip|brrip|web-?dl|webrip|hdtv|remux|x26[45]|h\.?26[45]|hevc)\b"
)


@lru_cache(maxsize=16_384)
def _parse_title(name: str) -> dict[str, Any]:
    """PTN's reading of a name, cached: it runs ~160 regexes (~3 ms), and the batch store asks again
    for every fragment of a release it merges (callers copy the dict before changing it)."""
    parsed: dict[str, Any] = PTN.parse(name)
    return parsed


def categorize(name: str, file_names: Iterable[str] = ()) -> Category:
    """The category of a release called ``name`` whose files are ``file_names``."""
    kinds = Counter(file_kind(f) for f in file_names)
    if looks_obfuscated(name.strip()):
        return Category(OTHER)
    info: dict[str, Any] = dict(_parse_title(name))
    title = info.get("title") if isinstance(info.get("title"), str) else None
    season = _int(info.get("season"))
    episode = _int(info.get("episode"))
    year = _int(info.get("year"))
    resolution = info.get("resolution") if isinstance(info.get("resolution"), str) else None

    def category(cid: int) -> Category:
        return Category(cid, title, season, episode, year, resolution)

    if _XXX.search(name):
        return category(XXX)
    content = {k: v for k, v in kinds.items() if k not in _PACKAGING}
    dominant = max(content, key=lambda k: (content[k], k.value)) if content else None
    if dominant is FileKind.AUDIO or (not content and _AUDIO.search(name) and not _EPISODE.search(name)):
        return category(AUDIO)
    if dominant is FileKind.BOOK or (not content and _BOOK.search(name)):
        return category(BOOKS)
    if _CONSOLE.search(name):
        return category(CONSOLE)
    is_tv = season is not None or (episode is not None and year is None) or _EPISODE.search(name) is not None
    if not is_tv and "month" in info and "day" in info and year is not None:
        is_tv = True  # daily shows: Show.2024.05.12
    if is_tv:
        if _UHD.search(name):
            return category(TV_UHD)
        if _HD.search(name):
            return category(TV_HD)
        if _SD.search(name):
            return category(TV_SD)
        return category(TV)
    if _PC.search(name) or dominant is FileKind.PROGRAM:
        return category(PC)
    is_movie = year is not None and (
        resolution is not None or _VIDEO_HINT.search(name) is not None or _SD.search(name) is not None
    )
    if is_movie or dominant is FileKind.VIDEO:
        if _THREE_D.search(name) or info.get("3d"):
            return category(MOVIES_3D)
        if _FULL_BLURAY.search(name):
            return category(MOVIES_BLURAY)
        if _UHD.search(name):
            return category(MOVIES_UHD)
        if _HD.search(name):
            return category(MOVIES_HD)
        if _SD.search(name):
            return category(MOVIES_SD)
        return category(MOVIES)
    return category(OTHER)


# Files that wrap content rather than being it: they say nothing about the category.
_PACKAGING = frozenset(
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
        FileKind.IMAGE,
        FileKind.OTHER,
    }
)


def _int(value: Any) -> int | None:
    if isinstance(value, list):
        value = value[0] if value else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


__all__ = [
    "AUDIO",
    "BOOKS",
    "CONSOLE",
    "MOVIES",
    "MOVIES_3D",
    "MOVIES_BLURAY",
    "MOVIES_HD",
    "MOVIES_SD",
    "MOVIES_UHD",
    "NAMES",
    "OTHER",
    "PC",
    "TV",
    "TV_HD",
    "TV_SD",
    "TV_UHD",
    "XXX",
    "Category",
    "categorize",
]

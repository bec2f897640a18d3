"""Newznab categories (the numbering Prowlarr uses) from a release's name and the kinds of its files.

A few regexes read the scene-style name (season, episode, year, resolution): parse-torrent-title did
this first, at ~3 ms a name, most of the batch store's time. The file kinds (naming.file_kind) settle
what the name leaves open: FLAC files are audio whatever the name says, an epub is a book. Obfuscated
names are Other until a probe gives the release its real name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from usenet_indexer.indexing.naming import SET_MEMBERS, FileKind, count_kinds, looks_obfuscated

CONSOLE = 1000
MOVIES, MOVIES_OTHER, MOVIES_SD, MOVIES_HD, MOVIES_UHD = 2000, 2020, 2030, 2040, 2045
MOVIES_BLURAY, MOVIES_3D, MOVIES_DVD = 2050, 2060, 2070
AUDIO, AUDIO_MP3, AUDIO_LOSSLESS = 3000, 3010, 3040
PC = 4000
TV, TV_SD, TV_HD, TV_UHD, TV_OTHER, TV_SPORT, TV_ANIME, TV_DOCUMENTARY = (
    5000,
    5030,
    5040,
    5045,
    5050,
    5060,
    5070,
    5080,
)
XXX = 6000
BOOKS, BOOKS_MAGS, BOOKS_EBOOK, BOOKS_COMICS = 7000, 7010, 7020, 7030
OTHER = 8000

# The standard newznab tree, as Prowlarr (NewznabStandardCategory) and Sonarr know it: caps lists all of
# it, whether or not a release here falls in every category.
NAMES = {
    1000: "Console",
    1010: "Console/NDS",
    1020: "Console/PSP",
    1030: "Console/Wii",
    1040: "Console/XBox",
    1050: "Console/XBox 360",
    1060: "Console/Wiiware",
    1070: "Console/XBox 360 DLC",
    1080: "Console/PS3",
    1090: "Console/Other",
    1110: "Console/3DS",
    1120: "Console/PS Vita",
    1130: "Console/WiiU",
    1140: "Console/XBox One",
    1180: "Console/PS4",
    2000: "Movies",
    2010: "Movies/Foreign",
    2020: "Movies/Other",
    2030: "Movies/SD",
    2040: "Movies/HD",
    2045: "Movies/UHD",
    2050: "Movies/BluRay",
    2060: "Movies/3D",
    2070: "Movies/DVD",
    2080: "Movies/WEB-DL",
    2090: "Movies/x265",
    3000: "Audio",
    3010: "Audio/MP3",
    3020: "Audio/Video",
    3030: "Audio/Audiobook",
    3040: "Audio/Lossless",
    3050: "Audio/Other",
    3060: "Audio/Foreign",
    4000: "PC",
    4010: "PC/0day",
    4020: "PC/ISO",
    4030: "PC/Mac",
    4040: "PC/Mobile-Other",
    4050: "PC/Games",
    4060: "PC/Mobile-iOS",
    4070: "PC/Mobile-Android",
    5000: "TV",
    5010: "TV/WEB-DL",
    5020: "TV/Foreign",
    5030: "TV/SD",
    5040: "TV/HD",
    5045: "TV/UHD",
    5050: "TV/Other",
    5060: "TV/Sport",
    5070: "TV/Anime",
    5080: "TV/Documentary",
    5090: "TV/x265",
    6000: "XXX",
    6010: "XXX/DVD",
    6020: "XXX/WMV",
    6030: "XXX/XviD",
    6040: "XXX/x264",
    6045: "XXX/UHD",
    6050: "XXX/Pack",
    6060: "XXX/ImageSet",
    6070: "XXX/Other",
    6080: "XXX/SD",
    6090: "XXX/WEB-DL",
    7000: "Books",
    7010: "Books/Mags",
    7020: "Books/EBook",
    7030: "Books/Comics",
    7040: "Books/Technical",
    7050: "Books/Other",
    7060: "Books/Foreign",
    8000: "Other",
    8010: "Other/Misc",
    8020: "Other/Hashed",
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
    episode_last: int | None = None  # a multi-episode name's last (S01E01E02: 2)

    @property
    def name(self) -> str:
        return NAMES[self.id]


class _Guarded:
    """A pattern, and lowercase substrings of which every match in an ASCII name holds at least one.

    Most names hold none of a pattern's words, and testing a few substrings of the lowercased name
    costs a tenth of a case-insensitive search over it (categorize was ~40 µs a release, the largest
    part of the edge worker's Python per release; issue 17). Only ASCII names are guarded: in them,
    ``(?i)`` folds exactly as ``str.lower`` does, where Unicode has more (``ſ`` is an ``s`` to ``re.I``).
    ``needles`` are "|"-separated; a word that is only part of a match stands for it ("liga" for
    "La Liga", "1080" for 1080p and 1080i). tests/unit/indexing/test_categories.py checks that every
    ASCII match holds a needle, and that categorize gives what the patterns alone give."""

    __slots__ = ("needles", "pattern")

    def __init__(self, pattern: str, needles: str) -> None:
        self.pattern = re.compile(pattern)
        self.needles = tuple(needles.split("|"))

    def search(self, name: str, low: str | None) -> re.Match[str] | None:
        """``pattern.search(name)``; ``low`` is ``name.lower()`` for an ASCII name, else None."""
        if low is not None:
            for needle in self.needles:
                if needle in low:
                    break
            else:
                return None
        return self.pattern.search(name)


_XXX = _Guarded(
    r"(?i)\b(?:xxx|porn|nsfw|brazzers|onlyfans)\b",
    "xxx|porn|nsfw|brazzers|onlyfans",
)
_CONSOLE = _Guarded(
    r"(?i)[._ -](?:nsw|switch|ps[345]|psv|xbox(?:one|360)?|wii ?u?|nds|3ds)(?:[._ -]|$)",
    "nsw|switch|ps3|ps4|ps5|psv|xbox|wii|nds|3ds",
)
_PC = _Guarded(
    r"(?i)(?:[._ -]v\d+(?:\.\d+)+|\b(?:x64|x86|win(?:dows)?|macos|linux|setup|keygen|portable)\b"
    r"|-(?:codex|skidrow|reloaded|plaza|fitgirl|razor1911|tenoke|rune|flt|empress)$)",
    # a version ("[._ -]v\d"): v after its separator
    ".v|_v| v|-v|x64|x86|win|macos|linux|setup|keygen|portable"
    "|-codex|-skidrow|-reloaded|-plaza|-fitgirl|-razor1911|-tenoke|-rune|-flt|-empress",
)
_BOOK = _Guarded(
    r"(?i)\b(?:epub|mobi|azw3?|ebook|pdf|cbr|cbz|comics?)\b",
    "epub|mobi|azw|ebook|pdf|cbr|cbz|comic",
)
_AUDIO = _Guarded(
    r"(?i)\b(?:flac|mp3|aac|ogg|opus|alac|lossless|\d{3}kbps|discography)\b",
    "flac|mp3|aac|ogg|opus|alac|lossless|kbps|discography",
)
_EPISODE = re.compile(r"(?i)\bS\d{1,3}(?:E\d{1,4})*\b|\b\d{1,2}x\d{2,3}\b")
# "[SubsPlease] Frieren - 05 (1080p) [ABCD1234]": a fansub group, the show, " - " and an episode number.
_ANIME = re.compile(r"^\[[^\]]{2,40}\][ ._]?\S.*?[ ._]-[ ._](?:S\d{1,2}E)?\d{1,4}(?:v\d)?(?:[ ._(\[]|$)")
_DOCUMENTARY = _Guarded(
    r"(?i)\b(?:documentary|docu(?:mentary|series)?|doku)\b",
    "docu|doku",
)
_SPORT = _Guarded(
    r"(?i)\b(?:NFL|NBA|NHL|MLB|UFC|WWE|MotoGP|F1|Formula[ ._]?1|UEFA|EPL|Premier[ ._]League|Bundesliga|"
    r"La[ ._]Liga|Serie[ ._]A|Super[ ._]Bowl|Wrestlemania)\b",
    "nfl|nba|nhl|mlb|ufc|wwe|motogp|f1|formula|uefa|epl|premier|bundesliga|liga|serie|bowl|wrestlemania",
)
_DVD_DISC = _Guarded(
    r"(?i)\b(?:dvd[59]|dvdr|dvd-?r|video_ts|pal|ntsc)\b",
    "dvd|video_ts|pal|ntsc",
)
_LOSSLESS = _Guarded(
    r"(?i)\b(?:flac|alac|lossless|wav|ape|24bit|16bit)\b",
    "flac|alac|lossless|wav|ape|24bit|16bit",
)
_COMICS = _Guarded(
    r"(?i)\b(?:cbr|cbz|comics?)\b",
    "cbr|cbz|comic",
)
_MAGS = _Guarded(
    r"(?i)\b(?:magazine|mag|issue[ ._]?\d+)\b",
    "mag|issue",
)
_SD = _Guarded(
    r"(?i)\b(?:480p|576p|sdtv|dvdrip|xvid|divx|pdtv|dsr|dvd(?:5|9|r)?)\b",
    "480p|576p|sdtv|dvd|xvid|divx|pdtv|dsr",
)
_UHD = _Guarded(
    r"(?i)\b(?:2160p|4k|uhd)\b",
    "2160p|4k|uhd",
)
_HD = _Guarded(
    r"(?i)\b(?:720p|1080[pi])\b",
    "720p|1080",
)
_FULL_BLURAY = _Guarded(
    r"(?i)\b(?:complete[._ -]?blu-?ray|bdmv|bd(?:25|50|66|100)|avc[._-]remux)\b",
    "complete|bd|remux",
)
_THREE_D = _Guarded(
    r"(?i)\b(?:3d|h?sbs|h?ou|half[._ -]?(?:sbs|ou))\b",
    "3d|sbs|ou",
)
_VIDEO_HINT = _Guarded(
    r"(?i)\b(?:bluray|blu-ray|bdrip|brrip|web-?dl|webrip|hdtv|remux|x26[45]|h\.?26[45]|hevc)\b",
    "blu|bdrip|brrip|web|hdtv|remux|x26|h26|h.26|hevc",
)


_BOUND_L, _BOUND_R = r"(?<![A-Za-z0-9])", r"(?![A-Za-z0-9])"
# S01E01, and multi-episode names: S01E01E02, S01E01-E02, S01E01-02 (the last episode in group 3).
_SEASON_EPISODE = re.compile(
    rf"(?i){_BOUND_L}S(\d{{1,3}})(?:[ ._-]?E(\d{{1,4}})(?:-?E\d{{1,4}}|-\d{{2,3}}(?![0-9]))*?"
    rf"(?:-?E?(\d{{1,4}}))?)?{_BOUND_R}"
)
_CROSS_EPISODE = re.compile(rf"(?i){_BOUND_L}(\d{{1,2}})x(\d{{2,3}}){_BOUND_R}")
_DOTS = re.compile(r"[._]+")
_YEAR = re.compile(r"(?<![0-9])((?:19|20)\d{2})(?![0-9])")
_DAILY = re.compile(r"(?<![0-9])(?:19|20)\d{2}[ ._-](?:0[1-9]|1[0-2])[ ._-](?:0[1-9]|[12]\d|3[01])(?![0-9])")
_RESOLUTION = re.compile(rf"(?i){_BOUND_L}(2160p|1080[pi]|720p|576p|480p|4k){_BOUND_R}")
_QUALITY = _Guarded(
    rf"(?i){_BOUND_L}(?:bluray|blu-ray|bdrip|brrip|web-?dl|webrip|web|hdtv|sdtv|dvdrip|dvd|remux|"
    rf"x26[45]|h\.?26[45]|hevc|xvid|divx|complete|proper|repack){_BOUND_R}",
    "blu|bdrip|brrip|web|hdtv|sdtv|dvd|remux|x26|h26|h.26|hevc|xvid|divx|complete|proper|repack",
)


@lru_cache(maxsize=16_384)
def _parse_title(name: str) -> dict[str, Any]:
    """What a release name says: title, season, episode, year, resolution, a daily date, 3D.

    The fields parse-torrent-title reads, with the few regexes the categories need: PTN runs ~160
    patterns per name (~3 ms), which made it most of the batch store's time. Cached, because the
    batch store asks again for every fragment of a release it merges (callers must not change the dict).
    """
    info: dict[str, Any] = {}
    low = name.lower() if name.isascii() else None
    cut = len(name)
    if m := _SEASON_EPISODE.search(name):
        info["season"] = int(m.group(1))
        if m.group(2):
            info["episode"] = int(m.group(2))
            if m.group(3) and int(m.group(3)) > info["episode"]:
                info["episode_last"] = int(m.group(3))
        cut = min(cut, m.start())
    elif m := _CROSS_EPISODE.search(name):
        info["season"], info["episode"] = int(m.group(1)), int(m.group(2))
        cut = min(cut, m.start())
    if m := _DAILY.search(name):
        info["month"] = info["day"] = True
        cut = min(cut, m.start())
    # The last year-like number, not at the very start ("2001.A.Space.Odyssey.1968": 1968).
    years = [m for m in _YEAR.finditer(name) if m.start() > 0]
    if years:
        info["year"] = int(years[-1].group(1))
        cut = min(cut, years[-1].start())
    if m := _RESOLUTION.search(name):
        info["resolution"] = m.group(1).upper() if m.group(1).lower() == "4k" else m.group(1).lower()
        cut = min(cut, m.start())
    if m := _QUALITY.search(name, low):
        cut = min(cut, m.start())
    if _THREE_D.search(name, low):
        info["3d"] = True
    title = _DOTS.sub(" ", name[:cut]).strip(" -([")
    if title:
        info["title"] = title
    return info


def categorize(name: str, file_names: Iterable[str] = ()) -> Category:
    """The category of a release called ``name`` whose files are ``file_names``."""
    return Category(*category_fields(name, file_names))


# A Category's fields, in its order: id, title, season, episode, year, resolution, episode_last.
CategoryFields = tuple[int, str | None, int | None, int | None, int | None, str | None, int | None]
_OTHER_FIELDS: CategoryFields = (OTHER, None, None, None, None, None, None)


def category_fields(name: str, file_names: Iterable[str] = ()) -> CategoryFields:
    """``categorize``'s answer as the tuple of its fields, without the Category: the worker's encode
    lists them in the batch's head, once a release (a frozen dataclass of seven fields cost ~2.5 µs of
    it; issue 17, docs/PERFORMANCE.md "Session 14")."""
    if looks_obfuscated(name.strip()):
        return _OTHER_FIELDS
    names = list(file_names)
    low = name.lower() if name.isascii() else None  # the guards' (_Guarded)
    # Read, not copied: the dict is _parse_title's cached one, and nothing here writes to it.
    info = _parse_title(name)
    title: str | None = info.get("title")
    season: int | None = info.get("season")
    episode: int | None = info.get("episode")
    episode_last: int | None = info.get("episode_last")
    year: int | None = info.get("year")
    resolution: str | None = info.get("resolution")
    if season is None and episode is None and "month" in info and year is not None:
        season = year  # a daily show: Sonarr searches its season as the year (season=2024)

    def category(cid: int) -> CategoryFields:
        return (cid, title, season, episode, year, resolution, episode_last)

    if _XXX.search(name, low):
        return category(XXX)
    # The content files' kinds counted here, after _XXX (which needs none): Counter's constructor, its
    # Mapping test and generator cost more than the counting (~4 µs a release at encode; issue 17).
    content = count_kinds(names, _CONTENT)
    dominant = max(content, key=lambda k: (content[k], k.value)) if content else None
    if dominant is FileKind.AUDIO or (not content and _AUDIO.search(name, low) and not _EPISODE.search(name)):
        return category(AUDIO_LOSSLESS if _LOSSLESS.search(name, low) else AUDIO_MP3)
    if dominant is FileKind.BOOK or (not content and _BOOK.search(name, low)):
        if _COMICS.search(name, low) or any(f.lower().endswith((".cbr", ".cbz")) for f in names):
            return category(BOOKS_COMICS)
        return category(BOOKS_MAGS if _MAGS.search(name, low) else BOOKS_EBOOK)
    if _CONSOLE.search(name, low):
        return category(CONSOLE)
    anime = _ANIME.search(name) is not None
    is_tv = (
        anime
        or season is not None
        or (episode is not None and year is None)
        or _EPISODE.search(name) is not None
    )
    if not is_tv and "month" in info and "day" in info and year is not None:
        is_tv = True  # daily shows: Show.2024.05.12
    if is_tv:
        return category(_tv(name, low, anime))
    if _PC.search(name, low) or dominant is FileKind.PROGRAM:
        return category(PC)
    is_movie = year is not None and (
        resolution is not None
        or _VIDEO_HINT.search(name, low) is not None
        or _SD.search(name, low) is not None
    )
    if is_movie or dominant is FileKind.VIDEO:
        return category(_movie(name, low, bool(info.get("3d"))))
    return category(OTHER)


def _tv(name: str, low: str | None, anime: bool) -> int:
    """A TV release's subcategory. Every one lands in one: Sonarr asks for 5030 and 5040 by default,
    and a name without a resolution tag ("Show.S01E01.HDTV.x264-GRP", "…WEB.h264-GRP", a daily
    "Show.2024.05.12…") was TV (5000) and never seen. Scene names carry no resolution when SD."""
    if anime:
        return TV_ANIME
    if _DOCUMENTARY.search(name, low):
        return TV_DOCUMENTARY
    if _SPORT.search(name, low):
        return TV_SPORT
    if _UHD.search(name, low):
        return TV_UHD
    if _HD.search(name, low):
        return TV_HD
    return TV_SD


def _movie(name: str, low: str | None, three_d: bool) -> int:
    """A movie's subcategory (Radarr asks for 2000 and 2010-2060 by default). ``three_d``: _THREE_D
    found in the name (_parse_title searched it already)."""
    if three_d:
        return MOVIES_3D
    if _FULL_BLURAY.search(name, low):
        return MOVIES_BLURAY
    if _UHD.search(name, low):
        return MOVIES_UHD
    if _HD.search(name, low):
        return MOVIES_HD
    if _DVD_DISC.search(name, low):
        return MOVIES_DVD
    if _SD.search(name, low):
        return MOVIES_SD
    return MOVIES_OTHER


# Files that wrap content rather than being it: they say nothing about the category.
_PACKAGING = SET_MEMBERS | {FileKind.IMAGE, FileKind.OTHER}
_CONTENT = frozenset(FileKind) - _PACKAGING


__all__ = [
    "AUDIO",
    "AUDIO_LOSSLESS",
    "AUDIO_MP3",
    "BOOKS",
    "BOOKS_COMICS",
    "BOOKS_EBOOK",
    "BOOKS_MAGS",
    "CONSOLE",
    "MOVIES",
    "MOVIES_3D",
    "MOVIES_BLURAY",
    "MOVIES_DVD",
    "MOVIES_HD",
    "MOVIES_OTHER",
    "MOVIES_SD",
    "MOVIES_UHD",
    "NAMES",
    "OTHER",
    "PC",
    "TV",
    "TV_ANIME",
    "TV_DOCUMENTARY",
    "TV_HD",
    "TV_OTHER",
    "TV_SD",
    "TV_SPORT",
    "TV_UHD",
    "XXX",
    "Category",
    "CategoryFields",
    "categorize",
    "category_fields",
]

"""Newznab categories (the numbering Prowlarr uses) from a release's name and the kinds of its files.

A few regexes read the scene-style name (season, episode, year, resolution): parse-torrent-title did
this first, at ~3 ms a name, most of the batch store's time. The file kinds (naming.file_kind) settle
what the name leaves open: FLAC files are audio whatever the name says, an epub is a book. Obfuscated
names are Other until a probe gives the release its real name.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from usenet_indexer.indexing.naming import SET_MEMBERS, FileKind, file_kind, looks_obfuscated

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


_XXX = re.compile(r"(?i)\b(?:xxx|porn|nsfw|brazzers|onlyfans)\b")
_CONSOLE = re.compile(r"(?i)[._ -](?:nsw|switch|ps[345]|psv|xbox(?:one|360)?|wii ?u?|nds|3ds)(?:[._ -]|$)")
_PC = re.compile(
    r"(?i)(?:[._ -]v\d+(?:\.\d+)+|\b(?:x64|x86|win(?:dows)?|macos|linux|setup|keygen|portable)\b"
    r"|-(?:codex|skidrow|reloaded|plaza|fitgirl|razor1911|tenoke|rune|flt|empress)$)"
)
_BOOK = re.compile(r"(?i)\b(?:epub|mobi|azw3?|ebook|pdf|cbr|cbz|comics?)\b")
_AUDIO = re.compile(r"(?i)\b(?:flac|mp3|aac|ogg|opus|alac|lossless|\d{3}kbps|discography)\b")
_EPISODE = re.compile(r"(?i)\bS\d{1,3}(?:E\d{1,4})*\b|\b\d{1,2}x\d{2,3}\b")
# "[SubsPlease] Frieren - 05 (1080p) [ABCD1234]": a fansub group, the show, " - " and an episode number.
_ANIME = re.compile(r"^\[[^\]]{2,40}\][ ._]?\S.*?[ ._]-[ ._](?:S\d{1,2}E)?\d{1,4}(?:v\d)?(?:[ ._(\[]|$)")
_DOCUMENTARY = re.compile(r"(?i)\b(?:documentary|docu(?:mentary|series)?|doku)\b")
_SPORT = re.compile(
    r"(?i)\b(?:NFL|NBA|NHL|MLB|UFC|WWE|MotoGP|F1|Formula[ ._]?1|UEFA|EPL|Premier[ ._]League|Bundesliga|"
    r"La[ ._]Liga|Serie[ ._]A|Super[ ._]Bowl|Wrestlemania)\b"
)
_DVD_DISC = re.compile(r"(?i)\b(?:dvd[59]|dvdr|dvd-?r|video_ts|pal|ntsc)\b")
_LOSSLESS = re.compile(r"(?i)\b(?:flac|alac|lossless|wav|ape|24bit|16bit)\b")
_COMICS = re.compile(r"(?i)\b(?:cbr|cbz|comics?)\b")
_MAGS = re.compile(r"(?i)\b(?:magazine|mag|issue[ ._]?\d+)\b")
_SD = re.compile(r"(?i)\b(?:480p|576p|sdtv|dvdrip|xvid|divx|pdtv|dsr|dvd(?:5|9|r)?)\b")
_UHD = re.compile(r"(?i)\b(?:2160p|4k|uhd)\b")
_HD = re.compile(r"(?i)\b(?:720p|1080[pi])\b")
_FULL_BLURAY = re.compile(r"(?i)\b(?:complete[._ -]?blu-?ray|bdmv|bd(?:25|50|66|100)|avc[._-]remux)\b")
_THREE_D = re.compile(r"(?i)\b(?:3d|h?sbs|h?ou|half[._ -]?(?:sbs|ou))\b")
_VIDEO_HINT = re.compile(
    r"(?i)\b(?:bluray|blu-ray|bdrip|brrip|web-?dl|webrip|hdtv|remux|x26[45]|h\.?26[45]|hevc)\b"
)


_BOUND_L, _BOUND_R = r"(?<![A-Za-z0-9])", r"(?![A-Za-z0-9])"
# S01E01, and multi-episode names: S01E01E02, S01E01-E02, S01E01-02 (the last episode in group 3).
_SEASON_EPISODE = re.compile(
    rf"(?i){_BOUND_L}S(\d{{1,3}})(?:[ ._-]?E(\d{{1,4}})(?:-?E\d{{1,4}}|-\d{{2,3}}(?![0-9]))*?"
    rf"(?:-?E?(\d{{1,4}}))?)?{_BOUND_R}"
)
_CROSS_EPISODE = re.compile(rf"(?i){_BOUND_L}(\d{{1,2}})x(\d{{2,3}}){_BOUND_R}")
_YEAR = re.compile(r"(?<![0-9])((?:19|20)\d{2})(?![0-9])")
_DAILY = re.compile(r"(?<![0-9])(?:19|20)\d{2}[ ._-](?:0[1-9]|1[0-2])[ ._-](?:0[1-9]|[12]\d|3[01])(?![0-9])")
_RESOLUTION = re.compile(rf"(?i){_BOUND_L}(2160p|1080[pi]|720p|576p|480p|4k){_BOUND_R}")
_QUALITY = re.compile(
    rf"(?i){_BOUND_L}(?:bluray|blu-ray|bdrip|brrip|web-?dl|webrip|web|hdtv|sdtv|dvdrip|dvd|remux|"
    rf"x26[45]|h\.?26[45]|hevc|xvid|divx|complete|proper|repack){_BOUND_R}"
)


@lru_cache(maxsize=16_384)
def _parse_title(name: str) -> dict[str, Any]:
    """What a release name says: title, season, episode, year, resolution, a daily date, 3D.

    The fields parse-torrent-title reads, with the few regexes the categories need: PTN runs ~160
    patterns per name (~3 ms), which made it most of the batch store's time. Cached, because the
    batch store asks again for every fragment of a release it merges (callers copy the dict).
    """
    info: dict[str, Any] = {}
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
    if m := _QUALITY.search(name):
        cut = min(cut, m.start())
    if _THREE_D.search(name):
        info["3d"] = True
    title = re.sub(r"[._]+", " ", name[:cut]).strip(" -([")
    if title:
        info["title"] = title
    return info


def categorize(name: str, file_names: Iterable[str] = ()) -> Category:
    """The category of a release called ``name`` whose files are ``file_names``."""
    names = list(file_names)
    kinds = Counter(file_kind(f) for f in names)
    if looks_obfuscated(name.strip()):
        return Category(OTHER)
    info: dict[str, Any] = dict(_parse_title(name))
    title = info.get("title") if isinstance(info.get("title"), str) else None
    season = _int(info.get("season"))
    episode = _int(info.get("episode"))
    episode_last = _int(info.get("episode_last"))
    year = _int(info.get("year"))
    resolution = info.get("resolution") if isinstance(info.get("resolution"), str) else None
    if season is None and episode is None and "month" in info and year is not None:
        season = year  # a daily show: Sonarr searches its season as the year (season=2024)

    def category(cid: int) -> Category:
        return Category(cid, title, season, episode, year, resolution, episode_last)

    if _XXX.search(name):
        return category(XXX)
    content = {k: v for k, v in kinds.items() if k not in _PACKAGING}
    dominant = max(content, key=lambda k: (content[k], k.value)) if content else None
    if dominant is FileKind.AUDIO or (not content and _AUDIO.search(name) and not _EPISODE.search(name)):
        return category(AUDIO_LOSSLESS if _LOSSLESS.search(name) else AUDIO_MP3)
    if dominant is FileKind.BOOK or (not content and _BOOK.search(name)):
        if _COMICS.search(name) or any(f.lower().endswith((".cbr", ".cbz")) for f in names):
            return category(BOOKS_COMICS)
        return category(BOOKS_MAGS if _MAGS.search(name) else BOOKS_EBOOK)
    if _CONSOLE.search(name):
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
        return category(_tv(name, anime))
    if _PC.search(name) or dominant is FileKind.PROGRAM:
        return category(PC)
    is_movie = year is not None and (
        resolution is not None or _VIDEO_HINT.search(name) is not None or _SD.search(name) is not None
    )
    if is_movie or dominant is FileKind.VIDEO:
        return category(_movie(name, bool(info.get("3d"))))
    return category(OTHER)


def _tv(name: str, anime: bool) -> int:
    """A TV release's subcategory. Every one lands in one: Sonarr asks for 5030 and 5040 by default,
    and a name without a resolution tag ("Show.S01E01.HDTV.x264-GRP", "…WEB.h264-GRP", a daily
    "Show.2024.05.12…") was TV (5000) and never seen. Scene names carry no resolution when SD."""
    if anime:
        return TV_ANIME
    if _DOCUMENTARY.search(name):
        return TV_DOCUMENTARY
    if _SPORT.search(name):
        return TV_SPORT
    if _UHD.search(name):
        return TV_UHD
    if _HD.search(name):
        return TV_HD
    return TV_SD


def _movie(name: str, three_d: bool) -> int:
    """A movie's subcategory (Radarr asks for 2000 and 2010-2060 by default)."""
    if _THREE_D.search(name) or three_d:
        return MOVIES_3D
    if _FULL_BLURAY.search(name):
        return MOVIES_BLURAY
    if _UHD.search(name):
        return MOVIES_UHD
    if _HD.search(name):
        return MOVIES_HD
    if _DVD_DISC.search(name):
        return MOVIES_DVD
    if _SD.search(name):
        return MOVIES_SD
    return MOVIES_OTHER


# Files that wrap content rather than being it: they say nothing about the category.
_PACKAGING = SET_MEMBERS | {FileKind.IMAGE, FileKind.OTHER}


def _int(value: Any) -> int | None:
    if isinstance(value, list):
        value = value[0] if value else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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
    "categorize",
]

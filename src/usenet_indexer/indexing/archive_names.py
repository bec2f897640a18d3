"""Which file of a release is the first volume of its main archive set, by the names alone (RAR, 7z):
the article the probe reads for a password (indexing/archives.py reads it). Pure.

Apart from archives.py, whose header readers (its dataclasses, lzma) an edge worker never runs: the
worker only names the volume, at take(), and importing the readers with it was ~2 ms of each worker's
start (issue 17, docs/PERFORMANCE.md "Session 13: i17-imports").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["first_volume"]

_RAR_PART = re.compile(r"(?P<base>.+)\.part(?P<number>\d{1,4})\.rar", re.I)
_RAR = re.compile(r"(?P<base>.+)\.rar", re.I)
_RAR_OLD_VOLUME = re.compile(r"(?P<base>.+)\.[rs]\d{2,3}", re.I)
_SEVEN_ZIP = re.compile(r"(?P<base>.+)\.7z", re.I)
_SEVEN_ZIP_PART = re.compile(r"(?P<base>.+)\.7z\.(?P<number>\d{3})", re.I)
# The ends the five above can have (the same flags, so the same letters and digits): a name without
# one is no volume. Most files of a release (par2, nfo, media) have none, and the five fullmatches,
# each backing its ".+" off over the whole name, were a third of the worker's password_candidate
# (take(): 25 -> 18 µs a release).
_VOLUME_END = re.compile(r"\.(?:rar|[rs]\d{2,3}|7z|7z\.\d{3})\Z", re.I)


# The five above in one, searched in a name's last 13 characters (".part" 4 digits ".rar" is the longest
# end): a name matches one of them exactly when its end matches this with a base before it (".+": not
# empty, no newline), and the leftmost match is the first pattern's of the five that matches (each end
# is one fixed form). The five fullmatches, each backing its ".+" off over the whole name, were ~14 µs
# of a release's ~30 µs password_candidate at take (issue 17, docs/PERFORMANCE.md "Session 14").
_VOLUME_TAIL = re.compile(
    r"\.(?:part(?P<part>\d{1,4})\.rar|(?P<rar>rar)|[rs]\d{2,3}|7z\.(?P<seven_part>\d{3})|(?P<seven>7z))\Z",
    re.I,
)
_TAIL = 13


def _volume_of(name: str) -> tuple[str, int, bool] | None:
    """(set key, family rank, is the set's first volume) for an archive volume's name, else None."""
    tail = name[-_TAIL:]
    match = _VOLUME_TAIL.search(tail)
    if match is None:
        return None
    cut = len(name) - len(tail) + match.start()
    if cut == 0 or "\n" in name:
        return _volume_by_patterns(name)  # no base before the end, or one ".+" does not match
    base = name[:cut].casefold()
    part, rar, seven_part, seven = match.groups()
    if part is not None:
        return base, 0, int(part) == 1
    if rar is not None:
        return base, 0, True  # x.rar: a single archive, or old-style before x.r00
    if seven_part is not None:
        return base, 1, int(seven_part) == 1
    if seven is not None:
        return base, 1, True
    return base, 0, False  # x.r00, x.s01: an old-style volume after x.rar


def _volume_by_patterns(name: str) -> tuple[str, int, bool] | None:
    """What _volume_of reads, from the five patterns one after the other (its reference; and its answer
    where its own test cannot settle a name)."""
    if _VOLUME_END.search(name) is None:
        return None
    if (match := _RAR_PART.fullmatch(name)) is not None:
        return match["base"].casefold(), 0, int(match["number"]) == 1
    if (match := _RAR.fullmatch(name)) is not None:
        return match["base"].casefold(), 0, True  # x.rar: a single archive, or old-style before x.r00
    if (match := _RAR_OLD_VOLUME.fullmatch(name)) is not None:
        return match["base"].casefold(), 0, False
    if (match := _SEVEN_ZIP_PART.fullmatch(name)) is not None:
        return match["base"].casefold(), 1, int(match["number"]) == 1
    if (match := _SEVEN_ZIP.fullmatch(name)) is not None:
        return match["base"].casefold(), 1, True
    return None


def first_volume(file_names: Sequence[str]) -> str | None:
    """The file whose first article to fetch: the first volume of the release's main archive set.

    ``x.part01.rar`` (``part1``, ``part001``) over the other ``x.partNN.rar``; ``x.rar`` over
    ``x.r00``...; ``x.7z`` or ``x.7z.001``; case does not matter; ZIP and everything else is ignored.
    Where a release holds several sets (a film's ``movie.partNN.rar`` and a small ``subs.rar``), the
    set with the most volumes wins, then RAR over 7z, then the name: a subtitle archive left plain must
    not speak for a passworded film. None when no set's first volume is among the names (a later
    volume would also show a password, but the answer must come from where the format puts it first).
    """
    sets: dict[tuple[str, int], int] = {}
    firsts: dict[tuple[str, int], str] = {}
    for name in file_names:
        volume = _volume_of(name.strip()[-255:])
        if volume is None:
            continue
        base, family, is_first = volume
        key = (base, family)
        sets[key] = sets.get(key, 0) + 1
        if is_first and (
            key not in firsts or (name.casefold(), name) < (firsts[key].casefold(), firsts[key])
        ):
            firsts[key] = name
    if not firsts:
        return None
    best = min(firsts, key=lambda key: (-sets[key], key[1], key[0], firsts[key]))
    return firsts[best]

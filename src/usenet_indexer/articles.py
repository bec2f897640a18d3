"""Newsgroup names and article-number arithmetic shared by planning, storage and the stream. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass

# RFC 3977 group names without wildmat characters: letters, digits, + - _ and dots. A name also
# becomes part of a storage key, so nothing else may pass.
GROUP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+_\-]*(\.[A-Za-z0-9+_\-]+)*$")


class GroupNameError(ValueError):
    pass


def check_group_name(name: str) -> str:
    if len(name) > 200 or not GROUP_NAME.match(name):
        raise GroupNameError(f"not a newsgroup name: {name!r} (letters, digits, + - _ and dots)")
    return name


def aligned(first: int, last: int, size: int) -> list[tuple[int, int]]:
    """``[first, last]`` cut at multiples of ``size``, in ascending order."""
    if size < 1:
        raise ValueError(f"a span size is >= 1, not {size}")
    spans: list[tuple[int, int]] = []
    start = first
    while start <= last:
        end = min(last, (start // size + 1) * size - 1)
        spans.append((start, end))
        start = end + 1
    return spans


@dataclass(frozen=True, slots=True, order=True)
class ChunkSpan:
    """One chunk of a range: the articles ``first``–``last`` fetched, stored and streamed together."""

    first: int
    last: int

    @property
    def name(self) -> str:
        return f"{self.first:012d}-{self.last:012d}"


def chunk_spans(start: int, end: int, chunk_articles: int, resume_at: int | None = None) -> list[ChunkSpan]:
    """A range's chunks, from the one holding ``resume_at`` (default: the range's start) to its end."""
    spans = [ChunkSpan(a, b) for a, b in aligned(start, end, chunk_articles)]
    if resume_at is None:
        return spans
    return [s for s in spans if s.last >= resume_at]

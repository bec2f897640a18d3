"""Article-number arithmetic shared by planning, the spool and the stream. Pure."""

from __future__ import annotations

from dataclasses import dataclass


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

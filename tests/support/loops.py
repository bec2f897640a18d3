"""Helpers for the news loops' tests: a news service over a server, reading back what was stored."""

from __future__ import annotations

from typing import Any

from tests.support.store import query
from usenet_indexer.articles import chunk_spans
from usenet_indexer.coordinator.http.node_api import read_chunk
from usenet_indexer.coordinator.loops.news import NewsService
from usenet_indexer.coordinator.loops.prefetcher import Prefetcher, RoundReport
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.nntp.pool import ServerSettings
from usenet_indexer.storage.corpus import CorpusRange
from usenet_indexer.wire.chunks import chunk_format, inflate_chunk


def news_service(host: str, port: int, **server: Any) -> NewsService:
    options: dict[str, Any] = {"timeout": 5.0, "connections": 4, **server}
    return NewsService(
        [ServerSettings(host=host, port=port, **options)], backoff_initial=0.01, backoff_max=0.05
    )


def prefetch_all(prefetcher: Prefetcher, rounds: int = 50) -> list[RoundReport]:
    """Rounds until one fetches nothing (run from a thread: it waits on the news service)."""
    reports = []
    for _ in range(rounds):
        report = prefetcher.news.run(prefetcher.round)
        reports.append(report)
        if report.fetched == 0:
            return reports
    raise AssertionError(f"still fetching after {rounds} rounds: {reports[-1]}")


def ranges_of(services: Services, group: str) -> list[dict[str, Any]]:
    return query(
        services.db,
        "SELECT r.* FROM ranges r JOIN groups g ON g.id = r.group_id WHERE g.name = :g ORDER BY r.start_id",
        {"g": group},
    )


def group_row(services: Services, group: str) -> dict[str, Any]:
    return query(services.db, "SELECT * FROM groups WHERE name = :g", {"g": group})[0]


def stored_chunks(services: Services, row: dict[str, Any], group: str) -> dict[int, bytes]:
    """The range's stored chunks (corpus first, as the stream reads them), by first article."""
    corpus = CorpusRange(group, int(row["start_id"]), int(row["end_id"])) if row["capture"] else None
    found = {}
    for span in chunk_spans(int(row["start_id"]), int(row["end_id"]), services.settings.chunk_articles):
        data = read_chunk(services, int(row["id"]), span, corpus)
        if data is not None:
            found[span.first] = data
    return found


def stored_lines(services: Services, group: str) -> list[bytes]:
    """Every overview line stored for the group's ranges, inflated, in chunk order (with repeats)."""
    lines: list[bytes] = []
    for row in ranges_of(services, group):
        for data in stored_chunks(services, row, group).values():
            lines.extend(line for line in inflate_chunk(data).split(b"\r\n") if line)
    return lines


def formats(services: Services, group: str) -> set[str]:
    return {
        chunk_format(data).name
        for row in ranges_of(services, group)
        for data in stored_chunks(services, row, group).values()
    }

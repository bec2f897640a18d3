"""The planner loop against the scripted server: watermarks to ranges, missing groups, resets, retention,
garbage, and a backfill target found by date."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from tests.support.fake_nntp import FakeNNTPServer, Script, fill_group
from tests.support.loops import group_row, news_service, ranges_of
from usenet_indexer.coordinator.loops.news import NewsService
from usenet_indexer.coordinator.loops.planner import Planner, first_on_or_after
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.leases.planning import TAIL_PRIORITY, Backfill
from usenet_indexer.newsservers.fake_server import overview_line

A, B, C = "alt.binaries.a", "alt.binaries.b", "alt.binaries.c"


@pytest.fixture
async def server() -> AsyncIterator[FakeNNTPServer]:
    async with FakeNNTPServer(Script(support_xzver=False, support_gzip=False)) as fake:
        yield fake


@pytest.fixture
async def news(server: FakeNNTPServer) -> AsyncIterator[NewsService]:
    service = news_service("127.0.0.1", server.port)
    yield service
    await asyncio.to_thread(service.close)


def covered(ranges: list[dict[str, object]]) -> list[int]:
    numbers: list[int] = []
    for r in ranges:
        numbers.extend(range(int(r["start_id"]), int(r["end_id"]) + 1))  # type: ignore[call-overload]
    return numbers


async def test_groups_planned_and_a_missing_group_marked_while_others_go_on(
    services: Services, server: FakeNNTPServer, news: NewsService
) -> None:
    fill_group(server, A, 1, 2500)
    fill_group(server, C, 1, 500)
    for name in (A, B, C):
        services.groups.add(name)
    outcomes = await asyncio.to_thread(Planner(services, news).plan_all)
    assert [(o.group, o.outcome) for o in outcomes] == [(A, "planned"), (B, "missing"), (C, "planned")]
    assert covered(ranges_of(services, A)) == list(range(1, 2501))  # each article once, no overlap
    assert covered(ranges_of(services, C)) == list(range(1, 501))
    assert ranges_of(services, B) == []
    error = group_row(services, B)["error"]
    assert f"no group {B}" in error and "groups disable" in error
    assert group_row(services, A)["error"] is None

    # The group appears on the server: the mark goes with the next plan.
    fill_group(server, B, 1, 50)
    await asyncio.to_thread(Planner(services, news).plan_all)
    assert group_row(services, B)["error"] is None
    assert covered(ranges_of(services, B)) == list(range(1, 51))


async def test_tail_follows_the_high_watermark_and_nothing_is_planned_twice(
    services: Services, server: FakeNNTPServer, news: NewsService
) -> None:
    fill_group(server, A, 1, 2500)
    services.groups.add(A)
    told: list[int] = []  # the prefetcher woken (loops/background.py): only when ranges were planned
    planner = Planner(services, news, planned=lambda: told.append(1))
    await asyncio.to_thread(planner.plan_all)
    again = await asyncio.to_thread(planner.plan_all)
    assert again[0].planned == 0
    assert len(told) == 1
    fill_group(server, A, 2501, 3200)
    grown = await asyncio.to_thread(planner.plan_all)
    assert grown[0].planned == 2  # 2501–2999 and 3000–3200 (bounds aligned to 1000)
    assert len(told) == 2
    ranges = ranges_of(services, A)
    assert covered(ranges) == list(range(1, 3201))
    assert [int(r["priority"]) for r in ranges if int(r["start_id"]) > 2500] == [TAIL_PRIORITY] * 2


async def test_watermark_reset_waits_without_replanning_and_resumes(
    services: Services, server: FakeNNTPServer, news: NewsService
) -> None:
    fill_group(server, A, 1, 2500)
    services.groups.add(A)
    planner = Planner(services, news)
    await asyncio.to_thread(planner.plan_all)
    before = ranges_of(services, A)

    # A backend behind the load balancer (or a renumbering): high drops far below what was planned.
    server.groups[A] = {}
    fill_group(server, A, 1, 120)
    outcome = (await asyncio.to_thread(planner.plan_all))[0]
    assert outcome.outcome == "reset"
    assert ranges_of(services, A) == before
    row = group_row(services, A)
    assert "watermark reset" in row["error"]
    assert (row["low_water"], row["high_water"]) == (1, 120)

    # The group passes what was planned again: the tail resumes from there, nothing twice.
    fill_group(server, A, 121, 2600)
    outcome = (await asyncio.to_thread(planner.plan_all))[0]
    assert outcome.outcome == "planned"
    assert covered(ranges_of(services, A)) == list(range(1, 2601))
    assert group_row(services, A)["error"] is None


async def test_a_shrinking_group_retires_ranges_past_retention(
    services: Services, server: FakeNNTPServer, news: NewsService
) -> None:
    fill_group(server, A, 1, 3500)
    services.groups.add(A)
    planner = Planner(services, news)
    await asyncio.to_thread(planner.plan_all)
    # Expiry: the low watermark rises to 2200. 1–999 and 1000–1999 are gone; 2000–2999 is half there.
    for number in range(1, 2200):
        del server.groups[A][number]
    outcome = (await asyncio.to_thread(planner.plan_all))[0]
    assert outcome.retired == 2
    by_start = {int(r["start_id"]): r for r in ranges_of(services, A)}
    for start in (1, 1000):
        assert by_start[start]["status"] == "failed"
        assert by_start[start]["error"].startswith("retired:")
    assert {by_start[s]["status"] for s in (2000, 3000)} == {"planned"}


async def test_garbage_from_the_server_is_retried(services: Services, server: FakeNNTPServer) -> None:
    fill_group(server, A, 1, 300)
    services.groups.add(A)
    server.script.garbage_replies = 1
    news = news_service("127.0.0.1", server.port)
    try:
        outcome = (await asyncio.to_thread(Planner(services, news).plan_all))[0]
    finally:
        await asyncio.to_thread(news.close)
    assert outcome.outcome == "planned"
    assert covered(ranges_of(services, A)) == list(range(1, 301))


async def test_a_server_that_keeps_sending_garbage_marks_the_group(
    services: Services, server: FakeNNTPServer
) -> None:
    fill_group(server, A, 1, 300)
    services.groups.add(A)
    server.script.garbage_replies = 1000
    news = news_service("127.0.0.1", server.port)
    try:
        outcome = (await asyncio.to_thread(Planner(services, news).plan_all))[0]
    finally:
        await asyncio.to_thread(news.close)
    assert outcome.outcome == "error"
    assert "reading the group failed" in group_row(services, A)["error"]
    assert ranges_of(services, A) == []


def dated_lines(group: str, first: int, last: int, start: datetime, step: timedelta) -> list[bytes]:
    return [
        overview_line(
            n,
            f"post {n} yEnc (1/1)",
            "poster@example.test",
            format_datetime(start + step * (n - first), usegmt=True),
            f"<d{n}@test>",
            1000,
            10,
            group,
        )
        for n in range(first, last + 1)
    ]


async def test_backfill_by_date_is_found_by_binary_search(
    services: Services, server: FakeNNTPServer, news: NewsService
) -> None:
    # 1 article a minute for 5000 minutes, with holes (1000–1499 never existed), ending now.
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    start = now - timedelta(minutes=5000)
    lines = dated_lines(A, 1, 5000, start, timedelta(minutes=1))
    lines = [line for line in lines if not 1000 <= int(line.split(b"\t")[0]) < 1500]
    server.add_group(A, lines)
    services.groups.add(A)
    services.groups.set_backfill(A, Backfill(days=2.0))  # 2880 minutes: articles from 5000 - 2880 = 2120 on
    planner = Planner(services, news, clock=now.timestamp)
    probes_before = sum(1 for c in server.commands if c.startswith("OVER"))
    await asyncio.to_thread(planner.plan_all)
    probes = sum(1 for c in server.commands if c.startswith("OVER")) - probes_before
    row = group_row(services, A)
    assert row["backfill_article"] == 2121  # article n was posted at start + (n-1) minutes
    assert covered(ranges_of(services, A)) == list(range(2121, 5001))
    assert probes <= 20  # log2(5000) ≈ 13

    # Kept: the next pass does not search again.
    await asyncio.to_thread(planner.plan_all)
    assert sum(1 for c in server.commands if c.startswith("OVER")) - probes_before == probes

    # A target further back plans more history, down to it. Article 1201 (posted then) is in the hole:
    # any number from 1000 (after the last older article) to 1500 (the first newer one) is a boundary.
    services.groups.set_backfill(A, Backfill(since=start + timedelta(minutes=1200)))
    await asyncio.to_thread(planner.plan_all)
    target = group_row(services, A)["backfill_article"]
    assert 1000 <= target <= 1500
    assert covered(ranges_of(services, A)) == list(range(target, 5001))


async def test_binary_search_over_dates() -> None:
    dates = {n: float(n // 10) for n in range(100, 1000) if n % 7}  # ten per "second", some missing

    async def probe(number: int) -> tuple[int, float] | None:
        for n in range(number, 1000):
            if n in dates:
                return n, dates[n]
        return None

    assert await first_on_or_after(probe, 100, 999, 50.0) == 500
    assert await first_on_or_after(probe, 100, 999, 0.0) == 100
    assert await first_on_or_after(probe, 100, 999, 1e9) == 1000
    # 700 is missing (700 % 7 == 0): the boundary is a number from which every article is newer.
    assert await first_on_or_after(probe, 100, 999, 70.0) in (700, 701)


async def test_a_group_whose_server_stalls_is_marked_and_the_others_go_on(
    services: Services, server: FakeNNTPServer
) -> None:
    fill_group(server, A, 1, 500)
    fill_group(server, C, 1, 500)
    services.groups.add(A)
    services.groups.add(C)
    services.groups.set_backfill(
        A, Backfill(days=1.0)
    )  # A needs OVER (the date search); the server stalls on it
    server.script.stall_mid_reply = 10_000
    news = news_service("127.0.0.1", server.port, timeout=0.3)
    try:
        outcomes = await asyncio.to_thread(Planner(services, news, call_timeout_seconds=1.0).plan_all)
    finally:
        await asyncio.to_thread(news.close)
    assert [(o.group, o.outcome) for o in outcomes] == [(A, "error"), (C, "planned")]
    assert group_row(services, A)["error"]
    assert covered(ranges_of(services, C)) == list(range(1, 501))


async def test_an_empty_group_plans_nothing_until_articles_come(
    services: Services, server: FakeNNTPServer, news: NewsService
) -> None:
    server.add_group(A)  # "211 0 1 0"
    services.groups.add(A)
    planner = Planner(services, news)
    outcome = (await asyncio.to_thread(planner.plan_all))[0]
    assert (outcome.outcome, outcome.planned) == ("planned", 0)
    assert ranges_of(services, A) == []
    fill_group(server, A, 1, 150)
    await asyncio.to_thread(planner.plan_all)
    assert covered(ranges_of(services, A)) == list(range(1, 151))

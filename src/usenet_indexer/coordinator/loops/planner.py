"""The planner loop: every enabled group's watermarks from the news server, turned into ranges.

For each enabled group, in turn (one group's trouble never stops the others):

1. ``GROUP`` → count, low and high watermarks. A group the server does not have (411) is marked with
   the reason (``groups.error``, shown by ``groups list`` and the status API) and skipped; so is any other
   failure, with its own reason. A later successful plan clears the mark.
2. The backfill target: ``--backfill-articles`` (the newest N), or a date (``--backfill-days``,
   ``--backfill-since``) turned into an article number by binary search over article dates, OVER of
   single articles (a few dozen round trips even for a group of billions). The number is kept
   (``groups.backfill_article``) and searched again only when the operator changes the target: a target
   that moves up with time changes nothing already planned, and planning never goes back up.
3. ``Groups.plan`` (leases/planning.py): the tail as the high watermark grows, history down to the
   target. Range bounds are aligned, so planning the same watermarks twice plans nothing new, and a
   range already planned is never planned again (``UNIQUE (group_id, start_id)``).
4. Retention: planned ranges wholly below the low watermark are retired.

Choices, and why:

- **A watermark reset** (the high watermark below what the tail already planned): nothing is planned and
  nothing is moved back; the watermarks are recorded, the group is marked with what happened, and the
  tail resumes once the high watermark passes what was planned. Usually such a high is a backend behind
  a provider's load balancer that is not up to date, and planning again from the lower number would
  index the same article numbers twice; a real renumbering needs the operator (re-add the group), and
  the mark says so. History is not extended either: a history target computed from a wrong high would
  plan ranges above the articles that exist.
- **A group that shrinks** (the low watermark rises: expiry, or takedowns) retires the ranges left below
  it; one whose high falls a little is the reset above.
- **Retired ranges are "failed"**, with the reason "retired: …", not "done": everywhere else "done" means
  "indexed to its end" (``finish`` refuses otherwise, the lease audit checks it), and a retired range was
  never indexed. Failed ranges are never leased or fetched. Ranges with chunks already spooled or stored
  in the corpus are kept: what was fetched can still be indexed (the rest counts as gaps).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Literal

from usenet_indexer.coordinator.loops.news import NewsService
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db import Row
from usenet_indexer.db.database import Fence
from usenet_indexer.logs import get_logger
from usenet_indexer.nntp.errors import NNTPError, NoSuchGroup
from usenet_indexer.nntp.pool import NNTPPool

log = get_logger(__name__)

DAY = 86400.0
MAX_PROBE_WINDOW = 10_000  # articles per OVER when a probe meets a run of missing articles


Outcome = Literal["planned", "reset", "missing", "error"]


@dataclass(frozen=True, slots=True)
class GroupOutcome:
    group: str
    outcome: Outcome
    low: int | None = None
    high: int | None = None
    planned: int = 0
    retired: int = 0
    reason: str | None = None


# -- dates --------------------------------------------------------------------------------------------


def overview_date(line: bytes) -> float | None:
    """The Date field (the fourth: number, subject, from, date, …; RFC 3977 8.4) in Unix seconds."""
    fields = line.split(b"\t", 4)
    if len(fields) < 4:
        return None
    try:
        parsed = parsedate_to_datetime(fields[3].decode("utf-8", "replace").strip())
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


Probe = Callable[[int], Awaitable[tuple[int, float] | None]]


async def first_on_or_after(probe: Probe, low: int, high: int, when: float) -> int:
    """The lowest article number from which every dated article is at or after ``when`` — the first
    one posted then, by binary search (``high + 1`` when none is).

    ``probe(n)`` gives the first article at or after ``n`` that has a readable date, or None when there
    is none up to ``high``. Posting dates are not strictly ordered by number (posters' clocks); the
    search finds one boundary between older and newer, which is what a backfill target needs.
    """
    lo, hi = low, high + 1
    while lo < hi:
        mid = (lo + hi) // 2
        found = await probe(mid)
        if found is None or found[1] >= when:
            hi = mid
        else:
            lo = found[0] + 1
    return lo


def date_probe(pool: NNTPPool, group: str, high: int) -> Probe:
    """A probe over OVER: one article first, then a widening window across a run of missing ones."""

    async def probe(number: int) -> tuple[int, float] | None:
        first, size = number, 1
        while first <= high:
            last = min(high, first + size - 1)
            chunk = await pool.over_chunk(group, first, last, compress=False)
            for line in bytes(chunk.data).split(b"\r\n"):
                number_field = line.split(b"\t", 1)[0]
                if not number_field.isdigit():
                    continue
                date = overview_date(line)
                if date is not None:
                    return int(number_field), date
            first = last + 1
            size = min(size * 16, MAX_PROBE_WINDOW)
        return None

    return probe


# -- the backfill target --------------------------------------------------------------------------------


def backfill_date(group: Row, now: float) -> float | None:
    """The date history goes back to, if the group has one."""
    if group["backfill_since"] is not None:
        return float(group["backfill_since"])
    if group["backfill_days"] is not None:
        return now - float(group["backfill_days"]) * DAY
    return None


# -- the loop --------------------------------------------------------------------------------------------


class Planner:
    def __init__(
        self,
        services: Services,
        news: NewsService,
        *,
        clock: Callable[[], float] = time.time,
        budget_seconds: float = 10.0,
        call_timeout_seconds: float = 15.0,
        fence: Fence | None = None,
        planned: Callable[[], object] | None = None,
    ) -> None:
        self.services = services
        self.news = news
        # Told when a group gained ranges: the prefetcher, idle for its period since it found none,
        # starts on them at once (a run's first second went by with nothing fetched, issue 17).
        self.planned = planned
        self.clock = clock
        # The planner loop's ownership fence: every write it makes checks it (coordinator/loops/runner.py).
        self.fence = fence
        self.budget_seconds = budget_seconds
        # Each call to the server is bounded (the pool retries a stalled one several times).
        self.call_timeout = call_timeout_seconds
        self._pass: set[str] = set()

    def work(self) -> bool:
        """The loop's work: groups not yet planned in this pass, for at most ``budget_seconds`` (so
        that a stop is heard between groups); True while the pass is unfinished."""
        started = time.monotonic()
        for group in self._groups():
            if group["name"] in self._pass:
                continue
            self.plan_one(group)
            self._pass.add(group["name"])
            if time.monotonic() - started > self.budget_seconds:
                return True
        self._pass.clear()
        return False

    def plan_all(self) -> list[GroupOutcome]:
        """Every enabled group, now."""
        return [self.plan_one(group) for group in self._groups()]

    def _groups(self) -> list[Row]:
        with self.services.db.transaction(write=False) as tx:
            return tx.run("planner_groups")

    def plan_one(self, group: Row) -> GroupOutcome:
        """``plan_group`` with every failure recorded on the group instead of raised."""
        try:
            return self.plan_group(group)
        except NoSuchGroup as error:
            reason = (
                f"the news server has no group {group['name']} ({error.code} {error.text}): check the "
                f"name, or stop planning it with `usenet-indexer groups disable {group['name']}`"
            )
            return self._failed(group, "missing", reason)
        except NNTPError as error:
            return self._failed(group, "error", f"reading the group failed: {type(error).__name__}: {error}")
        except TimeoutError:
            reason = f"the news server did not answer within {self.call_timeout:.0f} s; tried again next pass"
            return self._failed(group, "error", reason)
        except Exception as error:  # one group's trouble must not stop the others
            log.exception("planner.group_failed", group=group["name"])
            return self._failed(group, "error", f"planning failed: {type(error).__name__}: {error}")

    def _failed(self, group: Row, outcome: Outcome, reason: str) -> GroupOutcome:
        log.warning("planner.group", group=group["name"], outcome=outcome, reason=reason)
        with self.services.db.transaction(fence=self.fence) as tx:
            tx.execute("group_set_error", {"group_id": group["id"], "error": reason})
        return GroupOutcome(group["name"], outcome, reason=reason)

    def plan_group(self, group: Row) -> GroupOutcome:
        name = str(group["name"])
        info = self.news.run(lambda pool: pool.group(name), timeout=self.call_timeout)
        low, high = info.low, info.high
        target = self.backfill_article(group, low, high) if high >= max(low, 1) else None
        result = self.services.groups.plan(name, max(0, low), high, backfill_to=target, fence=self.fence)
        if result.reset is not None:
            log.warning("planner.watermark_reset", group=name, low=low, high=high, reason=result.reset)
            return GroupOutcome(name, "reset", low, high, reason=result.reset)
        planned = result.ranges
        with self.services.db.transaction(fence=self.fence) as tx:
            retired = tx.run(
                "ranges_retire",
                {
                    "group_id": group["id"],
                    "low": low,
                    "reason": f"retired: the server's low watermark rose to {low}, past this range: "
                    "its articles have expired",
                },
            )
        if planned or retired:
            log.info(
                "planner.planned", group=name, low=low, high=high, ranges=len(planned), retired=len(retired)
            )
        if planned and self.planned is not None:
            self.planned()
        return GroupOutcome(name, "planned", low, high, len(planned), len(retired))

    def backfill_article(self, group: Row, low: int, high: int) -> int | None:
        """The group's date target as an article number (searched once, then kept), or None."""
        when = backfill_date(group, self.clock())
        if when is None:
            return None
        if group["backfill_article"] is not None:
            return int(group["backfill_article"])
        if high < low:
            return None  # empty: nothing to search yet
        name = str(group["name"])
        started = time.monotonic()

        async def search(pool: NNTPPool) -> int:
            return await first_on_or_after(date_probe(pool, name, high), low, high, when)

        # A few dozen OVERs of one article each: seconds at most, unless the server stalls.
        article = self.news.run(search, timeout=4 * self.call_timeout)
        log.info(
            "planner.backfill_target",
            group=name,
            date=datetime.fromtimestamp(when, UTC).isoformat(),
            article=article,
            seconds=round(time.monotonic() - started, 2),
        )
        with self.services.db.transaction(fence=self.fence) as tx:
            tx.execute("group_set_backfill_article", {"group_id": group["id"], "article": article})
        return article

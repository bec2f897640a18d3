"""Planning ranges from a group's watermarks. Pure: the caller reads watermarks and stores the ranges.

- **Tail** ranges (priority ``TAIL_PRIORITY``, leased before any history) follow the high watermark as it
  grows; a stretch shorter than ``tail_min_articles`` waits for more, so a busy group is not cut into
  thousands of slivers.
- **History** ranges go down from where the tail began to the backfill target, one priority per era of
  ``era_articles`` article numbers, the oldest era first (seed 000: "by priority (oldest era first)").
- Range bounds are aligned to multiples of ``range_articles``, so planning is the same whenever it runs —
  except for a stretch that would make fewer than ``spread`` ranges: its chunks are shared evenly among
  ``spread`` ranges instead (``cut``), so that every worker gets one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from usenet_indexer.articles import aligned

TAIL_PRIORITY = -10
STORED_PRIORITY = -5  # ranges re-indexed from the corpus: ahead of history, behind the tail
# One plan may add at most this many ranges (1e11 articles at the default size; the biggest groups hold
# ~1e10). Watermarks typed wrong in the admin form, or sent by a hostile server ("211 1 1
# 4611686018427387904"), called for billions of ranges in one transaction and held the coordinator
# for hours (seen while writing the admin forms' fuzz test).
MAX_PLANNED_RANGES = 100_000


@dataclass(frozen=True, slots=True)
class PlannedRange:
    start: int
    end: int
    priority: int


@dataclass(frozen=True, slots=True)
class PlanCursor:
    """Where planning stands: the next article for the tail, the lowest article planned for history."""

    tail_next: int | None = None
    history_low: int | None = None


@dataclass(frozen=True, slots=True)
class PlanSizes:
    range_articles: int
    era_articles: int
    tail_min_articles: int
    chunk_articles: int = 1
    # A stretch is cut into at least this many ranges (of whole chunks) where range_articles would cut
    # it into fewer; 1: never. A group of 1,000,000 articles at the default 1,000,000 made one range of
    # 999,999 and one of a single article: one worker indexed the group while the other had nothing,
    # and nothing was stored until that range's first batch (issue 17).
    spread: int = 1

    def __post_init__(self) -> None:
        if min(self.range_articles, self.era_articles, self.tail_min_articles, self.chunk_articles) < 1:
            raise ValueError(f"plan sizes must be positive: {self}")
        if self.spread < 1:
            raise ValueError(f"a plan's spread is at least 1, not {self.spread}")
        if self.range_articles % self.chunk_articles:
            raise ValueError(
                f"range_articles ({self.range_articles}) must be a multiple of chunk_articles "
                f"({self.chunk_articles})"
            )


# A range cut for the workers holds two chunks at least: a range of one chunk has no middle (no batch
# stored while articles are left), which the recovery of a killed worker under `run` is tested on.
MIN_RANGE_CHUNKS = 2


def cut(first: int, last: int, sizes: PlanSizes) -> list[tuple[int, int]]:
    """``[first, last]`` as ranges, in ascending order: at multiples of ``range_articles``; when that
    makes fewer than ``spread`` ranges, its chunks shared evenly among ``spread`` of them (at most one
    per MIN_RANGE_CHUNKS chunks), each at most ``range_articles`` long and bounded where chunks are."""
    spans = aligned(first, last, sizes.range_articles)
    if len(spans) >= sizes.spread:
        return spans
    chunks = aligned(first, last, sizes.chunk_articles)
    count = min(sizes.spread, len(chunks) // MIN_RANGE_CHUNKS)
    if count <= len(spans):
        return spans
    return [
        (chunks[i * len(chunks) // count][0], chunks[(i + 1) * len(chunks) // count - 1][1])
        for i in range(count)
    ]


def history_priority(start: int, sizes: PlanSizes) -> int:
    return start // sizes.era_articles


def backfill_target(low: int, high: int, backfill_articles: int | None) -> int:
    """The lowest article history goes down to: all of the group, or the newest N articles."""
    if backfill_articles is None:
        return low
    return max(low, high - backfill_articles + 1)


def plan_ranges(
    cursor: PlanCursor,
    low: int,
    high: int,
    backfill_articles: int | None,
    sizes: PlanSizes,
    backfill_to: int | None = None,
) -> tuple[list[PlannedRange], PlanCursor]:
    """New ranges for watermarks ``low``–``high`` and the cursor after them.

    A group seen for the first time gets history ranges over what it holds (down to the backfill
    target) and a tail cursor past its high watermark; later calls add the tail as the group grows and
    more history when the backfill target moves down. An empty group (high < low) plans nothing yet.
    ``backfill_to`` is a lowest article number for history (the planner's date target); with
    ``backfill_articles`` too, the higher of the two wins.
    """
    if low < 0:
        raise ValueError(f"the low watermark is an article number >= 0, not {low}")
    planned: list[PlannedRange] = []
    tail_next, history_low = cursor.tail_next, cursor.history_low
    if tail_next is None:
        tail_next = max(low, high + 1)
        history_low = tail_next
    assert history_low is not None

    size = sizes.range_articles

    def check(first: int, last: int) -> None:
        count = len(planned) + last // size - first // size + 1  # aligned spans, counted not made
        if count > MAX_PLANNED_RANGES:
            raise ValueError(
                f"watermarks {low}-{high} call for {count:,} ranges of {size:,} articles, more than "
                f"{MAX_PLANNED_RANGES:,} at once: check the watermarks, or give the group a backfill "
                "limit (backfill articles) so history stops sooner"
            )

    if high >= tail_next and high - tail_next + 1 >= sizes.tail_min_articles:
        check(tail_next, high)
        for start, end in cut(tail_next, high, sizes):
            planned.append(PlannedRange(start, end, TAIL_PRIORITY))
        tail_next = high + 1

    target = backfill_target(low, min(high, tail_next - 1), backfill_articles)
    if backfill_to is not None:
        target = max(target, backfill_to)
    if high >= low and target < history_low:
        check(target, history_low - 1)
        for start, end in reversed(cut(target, history_low - 1, sizes)):
            planned.append(PlannedRange(start, end, history_priority(start, sizes)))
        history_low = target
    return planned, PlanCursor(tail_next, history_low)


# -- how far back history goes ------------------------------------------------------------------------


class BackfillError(ValueError):
    pass


# A provider keeps years of a busy group: "all of it" is weeks of work and a catalog of old posts, a
# choice to make on purpose (`--all-history`), never what a bare `groups add` means (issue 18).
DEFAULT_BACKFILL_DAYS = 7.0


@dataclass(frozen=True, slots=True)
class Backfill:
    """How far back a group's history goes: the newest ``articles``, the articles posted in the last
    ``days``, or those posted since ``since``; none of them: all of it."""

    articles: int | None = None
    days: float | None = None
    since: datetime | None = None

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.articles, self.days, self.since)) > 1:
            raise BackfillError("give one backfill target: a number of articles, of days, or a date")
        if self.articles is not None and self.articles < 0:
            raise BackfillError(f"the backfill is a count of articles >= 0, not {self.articles}")
        if self.days is not None and not self.days > 0:
            raise BackfillError(f"the backfill is a number of days > 0, not {self.days}")

    @classmethod
    def chosen(
        cls,
        articles: int | None = None,
        days: float | None = None,
        since: datetime | None = None,
        *,
        all_history: bool = False,
    ) -> Backfill:
        """The target a user asked for; asked for none, the last ``DEFAULT_BACKFILL_DAYS`` days."""
        target = cls(articles, days, since)
        if all_history:
            if not target.everything:
                raise BackfillError("all of the history, or a backfill target: not both")
            return target
        return target if not target.everything else cls(days=DEFAULT_BACKFILL_DAYS)

    @property
    def everything(self) -> bool:
        return self.articles is None and self.days is None and self.since is None

    @property
    def since_stamp(self) -> float | None:
        if self.since is None:
            return None
        return (self.since if self.since.tzinfo is not None else self.since.replace(tzinfo=UTC)).timestamp()

    def describe(self) -> str:
        if self.articles is not None:
            return f"the newest {self.articles:,} articles"
        if self.days is not None:
            return f"articles posted in the last {self.days:g} days"
        if self.since is not None:
            return f"articles posted since {self.since:%Y-%m-%d %H:%M}"
        return "all of the history the server keeps"


ALL_HISTORY = Backfill()

"""Newsgroups to index, and the ranges planned for them."""

from __future__ import annotations

from dataclasses import dataclass, field

from usenet_indexer.articles import GroupNameError, check_group_name
from usenet_indexer.db import Database, Row
from usenet_indexer.db.database import Fence
from usenet_indexer.leases.planning import (
    ALL_HISTORY,
    Backfill,
    PlanCursor,
    PlannedRange,
    PlanSizes,
    plan_ranges,
)


class GroupError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class GroupSummary:
    id: int
    name: str
    enabled: bool
    capture: bool
    backfill_articles: int | None
    low_water: int | None
    high_water: int | None
    error: str | None
    ranges: dict[str, int] = field(default_factory=dict)
    articles: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PlanResult:
    ranges: list[PlannedRange]
    reset: str | None = None  # why nothing was planned: the high watermark went back


class Groups:
    def __init__(self, db: Database, sizes: PlanSizes) -> None:
        self.db = db
        self.sizes = sizes

    def add(self, name: str, *, backfill: Backfill = ALL_HISTORY, capture: bool = False) -> int:
        """Add a group whose history goes back as far as ``backfill`` (the default here: all of it;
        the commands users type ask ``Backfill.chosen`` for theirs)."""
        try:
            check_group_name(name)
        except GroupNameError as error:
            raise GroupError(str(error)) from None
        with self.db.transaction() as tx:
            if tx.one("group_by_name", {"name": name}) is not None:
                raise GroupError(f"group {name} is already added")
            row = tx.one("group_insert", {"name": name, **_backfill_params(backfill), "capture": capture})
            assert row is not None
            return int(row["id"])

    def set_backfill(self, name: str, backfill: Backfill) -> None:
        """A new backfill target: the date's article is searched again at the next planning; ranges
        already planned stay."""
        with self.db.transaction() as tx:
            if tx.one("group_set_backfill", {"name": name, **_backfill_params(backfill)}) is None:
                raise GroupError(f"no group {name}: add it with `usenet-indexer groups add {name}`")

    def get(self, name: str) -> Row:
        with self.db.transaction(write=False) as tx:
            row = tx.one("group_by_name", {"name": name})
        if row is None:
            raise GroupError(f"no group {name}: add it with `usenet-indexer groups add {name}`")
        return row

    def set_enabled(self, name: str, enabled: bool) -> None:
        with self.db.transaction() as tx:
            if tx.one("group_set_enabled", {"name": name, "enabled": enabled}) is None:
                raise GroupError(f"no group {name}")

    def retry(self, range_id: int) -> bool:
        """Plan a failed range again from its resume point, its chunks' corrupt reports forgotten (the
        retry goes down the corrupt path from the start); False when it is not (or no longer) failed."""
        with self.db.transaction() as tx:
            row = tx.one("range_retry", {"range_id": range_id})
            if row is not None:
                tx.execute("range_retry_forget_chunks", {"range_id": range_id})
        return row is not None

    def summaries(self) -> list[GroupSummary]:
        with self.db.transaction(write=False) as tx:
            groups = tx.run("groups_all")
            counts = tx.run("group_range_counts")
        by_group: dict[int, tuple[dict[str, int], dict[str, int]]] = {}
        for row in counts:
            ranges, articles = by_group.setdefault(int(row["group_id"]), ({}, {}))
            ranges[row["status"]] = int(row["n"])
            articles[row["status"]] = int(row["articles"])
        out = []
        for g in groups:
            ranges, articles = by_group.get(int(g["id"]), ({}, {}))
            out.append(
                GroupSummary(
                    id=int(g["id"]),
                    name=g["name"],
                    enabled=bool(g["enabled"]),
                    capture=bool(g["capture"]),
                    backfill_articles=g["backfill_articles"],
                    low_water=g["low_water"],
                    high_water=g["high_water"],
                    error=g["error"],
                    ranges=ranges,
                    articles=articles,
                )
            )
        return out

    def plan(
        self,
        name: str,
        low: int,
        high: int,
        *,
        backfill_to: int | None = None,
        fence: Fence | None = None,
    ) -> PlanResult:
        """Record the group's watermarks and plan the ranges they call for (the planning primitive).
        ``backfill_to``: the lowest article for history (the planner's date target), if any.

        The group is read under the lock it is written under: two plans that read it first and
        locked it after both planned from one cursor, and the later one dropped ranges or moved the
        cursor back under ranges already planned (issue 14: articles never planned, or planned twice).
        """
        with self.db.transaction(fence=fence) as tx:
            group = tx.one("group_lock_by_name", {"name": name})
            if group is None:
                raise GroupError(f"no group {name}: add it with `usenet-indexer groups add {name}`")
            tail_next = group["tail_next"]
            if tail_next is not None and high < int(tail_next) - 1:
                # See planner.py ("a watermark reset") for why nothing is planned or moved back.
                reason = (
                    f"watermark reset: the server's high watermark {high} is below the "
                    f"{int(tail_next) - 1} already planned; waiting for the group to pass it (nothing is "
                    "planned twice). If the server renumbered the group, remove and re-add it"
                )
                tx.execute(
                    "group_set_watermarks",
                    {"group_id": group["id"], "low": low, "high": high, "error": reason},
                )
                return PlanResult([], reason)
            if high < max(low, 1):
                # Empty ("211 0 1 0", or "211 0 0 0" from some servers): nothing to plan, and article 0
                # does not exist. The watermarks are recorded (ranges below a risen low still retire).
                tx.execute(
                    "group_set_watermarks", {"group_id": group["id"], "low": low, "high": high, "error": None}
                )
                return PlanResult([])
            cursor = PlanCursor(tail_next, group["history_low"])
            planned, after = plan_ranges(
                cursor, low, high, group["backfill_articles"], self.sizes, backfill_to=backfill_to
            )
            tx.executemany(
                "range_insert",
                [
                    {
                        "group_id": group["id"],
                        "start": r.start,
                        "end": r.end,
                        "priority": r.priority,
                        "capture": bool(group["capture"]),
                    }
                    for r in planned
                ],
            )
            tx.execute(
                "group_set_plan",
                {
                    "group_id": group["id"],
                    "low": low,
                    "high": high,
                    "tail_next": after.tail_next,
                    "history_low": after.history_low,
                },
            )
        return PlanResult(planned)


def _backfill_params(backfill: Backfill) -> dict[str, object]:
    return {
        "backfill_articles": backfill.articles,
        "backfill_days": backfill.days,
        "backfill_since": backfill.since_stamp,
    }

"""``run``'s terminal view: a live table on a terminal (local/live.py), plain progress lines elsewhere.

Live: per group its tail and history (a bar, articles read of planned, articles/s), ranges left and
releases found; then each worker with its live leases and headers/s; then the totals. It is redrawn
in place about once a second; log warnings are printed above it (logs.py's echo), everything else
goes to the log file named in its header.

Plain (stdout is a pipe or a file): one line per group and one for the workers every
``--status-seconds``, and when something changes state (a group planned, a lane finished).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import IO, Protocol

from usenet_indexer.local.progress import GroupProgress, Snapshot

# No rich here: a `run` whose output is not a terminal (scripts, services, the benches) never imports it
# (80 ms of a core at every start, issue 17); the live view is local/live.py.


class View(Protocol):
    def start(self) -> None: ...

    def update(self, snapshot: Snapshot) -> None: ...

    def print(self, text: str) -> None:
        """A message that stays (above a live view)."""
        ...

    def stop(self) -> None: ...


def count(n: float) -> str:
    return f"{n:,.0f}"


def per_second(rate: float) -> str:
    if rate <= 0:
        return "–"
    if rate >= 10_000:
        return f"{rate / 1000:,.0f}k/s"
    return f"{rate:,.0f}/s"


def group_status(g: GroupProgress) -> tuple[str, str]:
    """A group's state as words, and the style the live view shows them in ("" for none)."""
    if not g.enabled:
        return "disabled", "dim"
    if g.error:
        return g.error[:60], "red"
    if not g.planned:
        return "asking the news server…", "yellow"
    failed = f", {g.failed_ranges} failed" if g.failed_ranges else ""
    if g.pending_ranges == 0:
        return "up to date" + failed, "green" if not failed else "yellow"
    leased = g.statuses.get("leased", 0)
    return f"{g.pending_ranges} ranges left ({leased} leased){failed}", ""


def state_key(g: GroupProgress) -> str:
    """A group's state, coarsely: the plain view prints when one changes."""
    if not g.enabled:
        return "disabled"
    if g.error:
        return "error"
    if not g.planned:
        return "unplanned"
    return "planned"  # working or caught up: that flips with every tail range of a growing group


def plain_lines(snapshot: Snapshot) -> list[str]:
    """The plain view's lines for one snapshot."""
    lines = []
    for g in snapshot.groups:
        lanes = " ".join(
            f"{name}={count(lane.read)}/{count(lane.articles)}({lane.fraction:.0%},{per_second(lane.rate)})"
            for name, lane in (("tail", g.tail), ("history", g.history))
            if lane.ranges
        )
        lines.append(
            f"group {g.name}: {lanes or 'nothing planned yet'} releases={count(g.releases)} "
            f"state={group_status(g)[0]}"
        )
    workers = ", ".join(f"{w.name} {per_second(w.rate)}" for w in snapshot.workers) or "none"
    lines.append(
        f"total: read={count(snapshot.read)} rate={per_second(snapshot.rate)} "
        f"releases={count(snapshot.releases)} complete={count(snapshot.complete)} "
        f"probes_pending={snapshot.probes_pending} passwords_pending={snapshot.passwords_pending} "
        f"workers: {workers}" + (" (all caught up)" if snapshot.done else "")
    )
    return lines


class PlainView:
    def __init__(self, out: IO[str], header: Sequence[str], every: float = 10.0) -> None:
        self.out = out
        self.header = list(header)
        self.every = every
        self._next = 0.0
        self._states: dict[str, str] = {}
        self._done = False

    def _write(self, lines: Sequence[str]) -> None:
        stamp = time.strftime("%H:%M:%S")
        for line in lines:
            self.out.write(f"{stamp} {line}\n")
        self.out.flush()

    def start(self) -> None:
        self._write(self.header)

    def update(self, snapshot: Snapshot) -> None:
        states = {g.name: state_key(g) for g in snapshot.groups}
        changed = states != self._states or snapshot.done != self._done
        if changed or time.monotonic() >= self._next:
            self._write(plain_lines(snapshot))
            self._next = time.monotonic() + self.every
        self._states, self._done = states, snapshot.done

    def print(self, text: str) -> None:
        self._write(text.splitlines())

    def stop(self) -> None:
        pass

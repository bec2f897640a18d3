"""``run``'s terminal view: a live table (rich) on a terminal, plain progress lines elsewhere.

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

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from usenet_indexer.local.progress import GroupProgress, Lane, Snapshot


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


def lane_cell(lane: Lane, width: int = 18) -> RenderableType:
    if lane.ranges == 0:
        return Text("–", style="dim")
    bar = ProgressBar(total=max(1, lane.articles), completed=lane.read, width=width)
    line = Text(f"{lane.fraction:4.0%} {count(lane.read)}/{count(lane.articles)}  {per_second(lane.rate)}")
    table = Table.grid(padding=(0, 1))
    table.add_row(bar, line)
    return table


def group_state(g: GroupProgress) -> Text:
    if not g.enabled:
        return Text("disabled", style="dim")
    if g.error:
        return Text(g.error[:60], style="red")
    if not g.planned:
        return Text("asking the news server…", style="yellow")
    failed = f", {g.failed_ranges} failed" if g.failed_ranges else ""
    if g.pending_ranges == 0:
        return Text("up to date" + failed, style="green" if not failed else "yellow")
    leased = g.statuses.get("leased", 0)
    return Text(f"{g.pending_ranges} ranges left ({leased} leased){failed}")


def state_key(g: GroupProgress) -> str:
    """A group's state, coarsely: the plain view prints when one changes."""
    if not g.enabled:
        return "disabled"
    if g.error:
        return "error"
    if not g.planned:
        return "unplanned"
    return "planned"  # working or caught up: that flips with every tail range of a growing group


def render(snapshot: Snapshot, header: Sequence[str]) -> RenderableType:
    """The live view of one snapshot (pure: tests render it to text)."""
    groups = Table(expand=False, title=None, header_style="bold", pad_edge=False)
    groups.add_column("group", no_wrap=True)
    groups.add_column("tail", no_wrap=True)
    groups.add_column("history", no_wrap=True)
    groups.add_column("releases", justify="right")
    groups.add_column("state", no_wrap=True)
    for g in snapshot.groups:
        groups.add_row(g.name, lane_cell(g.tail), lane_cell(g.history), count(g.releases), group_state(g))
    if not snapshot.groups:
        groups.add_row("no groups: add one with `usenet-indexer groups add NAME`", "", "", "", "")

    workers = Table(header_style="bold", pad_edge=False)
    workers.add_column("worker", no_wrap=True)
    workers.add_column("leases", justify="right")
    workers.add_column("headers/s", justify="right")
    workers.add_column("headers", justify="right")
    for w in snapshot.workers:
        workers.add_row(w.name, str(w.live_leases), per_second(w.rate), count(w.headers))

    probes = snapshot.probes_pending
    totals = Text(
        f"{count(snapshot.read)} articles read, {per_second(snapshot.rate)}; "
        f"{count(snapshot.releases)} releases ({count(snapshot.complete)} complete)"
        + (f"; {count(probes)} obfuscated releases to probe" if probes else "")
    )
    if snapshot.done:
        average = f" ({per_second(snapshot.average_rate)} on average)" if snapshot.average_rate else ""
        totals.append(f"  — all caught up{average}", style="bold green")
    return Group(*(Text(line) for line in header), groups, workers, totals)


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
            f"state={group_state(g).plain}"
        )
    workers = ", ".join(f"{w.name} {per_second(w.rate)}" for w in snapshot.workers) or "none"
    lines.append(
        f"total: read={count(snapshot.read)} rate={per_second(snapshot.rate)} "
        f"releases={count(snapshot.releases)} complete={count(snapshot.complete)} "
        f"probes_pending={snapshot.probes_pending} workers: {workers}"
        + (" (all caught up)" if snapshot.done else "")
    )
    return lines


class LiveView:
    def __init__(self, console: Console, header: Sequence[str]) -> None:
        self.console = console
        self.header = list(header)
        self.live = Live(console=console, auto_refresh=False, transient=False, redirect_stderr=True)
        self.last: Snapshot | None = None

    def start(self) -> None:
        self.live.start()

    def update(self, snapshot: Snapshot) -> None:
        self.last = snapshot
        self.live.update(render(snapshot, self.header), refresh=True)

    def print(self, text: str) -> None:
        self.live.console.print(text, highlight=False, soft_wrap=True)

    def stop(self) -> None:
        self.live.stop()


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

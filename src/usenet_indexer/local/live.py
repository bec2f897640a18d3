"""``run``'s live view (rich): per group its tail and history (a bar, articles read of planned,
articles/s), ranges left and releases found; then each worker with its live leases and headers/s; then
the totals. Redrawn in place about once a second (local/view.py says what else goes where)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from usenet_indexer.local.progress import GroupProgress, Lane, Snapshot
from usenet_indexer.local.view import count, group_status, per_second


def lane_cell(lane: Lane, width: int = 18) -> RenderableType:
    if lane.ranges == 0:
        return Text("–", style="dim")
    bar = ProgressBar(total=max(1, lane.articles), completed=lane.read, width=width)
    line = Text(f"{lane.fraction:4.0%} {count(lane.read)}/{count(lane.articles)}  {per_second(lane.rate)}")
    table = Table.grid(padding=(0, 1))
    table.add_row(bar, line)
    return table


def group_state(g: GroupProgress) -> Text:
    text, style = group_status(g)
    return Text(text, style=style)


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

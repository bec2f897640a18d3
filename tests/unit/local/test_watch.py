"""``run``'s watch loop (local/run.py ``watch``): how soon it sees the end, without a store."""

from __future__ import annotations

import threading
from typing import Any, cast

from usenet_indexer.local.progress import ProgressReader, Snapshot
from usenet_indexer.local.run import DONE_POLL_SECONDS, watch
from usenet_indexer.local.view import View


class Reader:
    """Done from the ``done_at``-th read on."""

    def __init__(self, done_at: int) -> None:
        self.reads = 0
        self.done_at = done_at

    def read(self) -> Snapshot:
        self.reads += 1
        return cast(Snapshot, self.reads)


class Recorded(threading.Event):
    """A stop that is never set and records how long each wait would have been."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        assert timeout is not None
        self.waits.append(timeout)
        return False


class Silent:
    def update(self, snapshot: Any) -> None:
        pass

    def print(self, text: str) -> None:
        pass

    def stop(self) -> None:
        pass


def test_until_done_the_end_is_looked_for_more_often_than_the_view_refreshes() -> None:
    reader, stop = Reader(done_at=4), Recorded()
    last = watch(
        cast(ProgressReader, reader),
        cast(View, Silent()),
        stop,
        until_done=True,
        refresh_seconds=1.0,
        done=lambda snapshot: cast(int, snapshot) >= reader.done_at,
    )
    assert cast(object, last) == 4 and reader.reads == 4
    assert stop.waits == [DONE_POLL_SECONDS] * 3 and DONE_POLL_SECONDS < 1.0


def test_without_until_done_it_refreshes_at_the_view_s_pace() -> None:
    reader, stop = Reader(done_at=1), Recorded()

    def stop_after_three(timeout: float | None = None) -> bool:
        Recorded.wait(stop, timeout)
        return len(stop.waits) == 3

    stop.wait = stop_after_three  # type: ignore[method-assign]
    watch(cast(ProgressReader, reader), cast(View, Silent()), stop, refresh_seconds=1.0)
    assert stop.waits == [1.0, 1.0, 1.0]


def test_once_every_range_is_read_the_grouping_and_probe_loops_are_woken_not_before() -> None:
    """`run` waited up to their periods (10 and 30 s) for the last loose files and probes; woken at
    each range's end instead, the probe loop read archives for password probes beside the indexing
    and a 1M run's coordinator spent twice its CPU."""
    from types import SimpleNamespace

    states = [
        SimpleNamespace(read_through=False, grouping_pending=2, probes_pending=5),
        SimpleNamespace(read_through=True, grouping_pending=1, probes_pending=3),
        SimpleNamespace(read_through=True, grouping_pending=0, probes_pending=1),  # within WAKE_SECONDS
        SimpleNamespace(read_through=True, grouping_pending=0, probes_pending=0),
    ]

    class States:
        reads = 0

        def read(self) -> object:
            self.reads += 1
            return states[self.reads - 1]

    woken: list[tuple[int, str]] = []
    reader = States()
    watch(
        cast(ProgressReader, reader),
        cast(View, Silent()),
        Recorded(),
        until_done=True,
        done=lambda snapshot: cast(Any, snapshot).probes_pending == 0,
        wake=lambda loop: woken.append((reader.reads, loop)),
    )
    assert woken == [(2, "grouping"), (2, "probe")]

"""Helpers around the scripted fake server (src/usenet_indexer/newsservers/fake_server.py) for tests."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator

from usenet_indexer.newsservers.fake_server import FakeNNTPServer, Script, overview_line

__all__ = ["FakeNNTPServer", "Script", "fill_group", "overview_lines", "serving_in_thread"]


def overview_lines(group: str, first: int, last: int) -> list[bytes]:
    """Overview lines for articles first..last, each distinct (subject and message-id carry the number)."""
    return [
        overview_line(
            n,
            f'[{n % 97}/97] - "release.{n // 97}.part{n % 97:03d}.rar" yEnc (1/1)',
            "poster@example.test",
            "Mon, 30 Nov 2026 12:00:00 GMT",
            f"<part{n}.fake@usenet-indexer.test>",
            4000 + n % 1000,
            31,
            group,
        )
        for n in range(first, last + 1)
    ]


def fill_group(server: FakeNNTPServer, group: str, first: int, last: int) -> list[bytes]:
    lines = overview_lines(group, first, last)
    server.add_group(group, lines)
    return lines


@contextlib.contextmanager
def serving_in_thread(server: FakeNNTPServer) -> Iterator[FakeNNTPServer]:
    """Run the server on an event loop of its own thread, for tests that are not async themselves
    (coordinator processes connect to ``server.port`` on 127.0.0.1)."""
    loop = asyncio.new_event_loop()
    started = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.start())
        started.set()
        loop.run_forever()

    thread = threading.Thread(target=run, name="fake-nntp", daemon=True)
    thread.start()
    assert started.wait(10), "the fake news server did not start"
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(15)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()

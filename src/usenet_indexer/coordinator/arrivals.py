"""Chunks arriving in the spool, told to the streams of this process that wait for them.

A stream waiting for its next chunk polls the spool (and the corpus), every 0.5 s at first and every
2 s after a while (``node_api.frames``), which keeps 500 waiting streams cheap. But a worker waiting on
a chunk the prefetcher of this very process had just stored then sat idle for up to those 2 s: in a
`run` of 200,000 articles a range of one chunk ended 3.3 s after its lease, its chunk recorded 1.6 s
after the lease (issue 17). So the prefetcher says when it has recorded a chunk, and the streams
waiting on that range wake at once. Polling stays:
another coordinator's prefetcher, or the corpus fill, store chunks this process is not told of.

The prefetcher runs on its own threads and event loop, a stream on the HTTP server's loop: waking
goes through ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Arrivals:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[int, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}

    @contextmanager
    def watch(self, range_id: int) -> Iterator[asyncio.Event]:
        """An event set when a chunk of ``range_id`` is stored while the block runs. Enter it before
        looking for the chunk, so that one stored between that look and the wait is not missed."""
        waiter = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._waiting.setdefault(range_id, set()).add(waiter)
        try:
            yield waiter[1]
        finally:
            with self._lock:
                waiters = self._waiting.get(range_id)
                if waiters is not None:
                    waiters.discard(waiter)
                    if not waiters:
                        del self._waiting[range_id]

    def stored(self, range_id: int) -> None:
        """A chunk of ``range_id`` is in the spool (or the corpus) and recorded: wake its streams."""
        with self._lock:
            waiters = list(self._waiting.get(range_id, ()))
        for loop, event in waiters:
            # A closed loop (its server stopped) has nobody waiting any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(event.set)

    def waiting(self) -> int:
        """Streams waiting now (for tests and metrics)."""
        with self._lock:
            return sum(len(waiters) for waiters in self._waiting.values())

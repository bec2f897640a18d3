"""The asyncio side of one connection: an ``asyncio.Protocol`` that queues what the socket read.

Streams (``asyncio.StreamReader``) copy every byte twice more on its way to the protocol core (into
their buffer, then out of it); at INN2's overview rates (200+ MB/s on one connection here) those
copies cost a fifth of the bench's throughput. This protocol hands the transport's ``bytes`` objects
over as they came, with read flow control so a slow consumer bounds memory.
"""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["ReadQueue"]

# Pause reading past this many bytes waiting for the consumer; resume below a quarter of it.
HIGH_WATER = 8 * 1024 * 1024


class ReadQueue(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None
        self.eof = False
        self.error: BaseException | None = None

    # -- asyncio.Protocol ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self._chunks.append(data)
        self._size += len(data)
        if self._size > HIGH_WATER and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # let the transport close itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = exc
        self._wake()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- for the client --------------------------------------------------------------------------

    def take(self) -> list[bytes]:
        """Everything read so far (possibly nothing)."""
        chunks = list(self._chunks)
        self._chunks.clear()
        self._size = 0
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return chunks

    async def wait(self) -> None:
        """Until there is data, or the connection ended."""
        if self._chunks or self.eof:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiter = waiter
        await waiter

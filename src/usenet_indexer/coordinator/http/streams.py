"""The node API's streams each node holds open, at most ``stream_max_per_node`` at once (issue 15)."""

from __future__ import annotations

import threading

from fastapi import HTTPException


class StreamSlot:
    """One open stream of a node; released once, whichever comes first (the body's end, or the
    response's background task when the body never started)."""

    def __init__(self, slots: StreamSlots, node_id: int) -> None:
        self._slots = slots
        self._node = node_id
        self._released = False

    def release(self) -> None:
        with self._slots.lock:
            if not self._released:
                self._released = True
                self._slots.open[self._node] -= 1


class StreamSlots:
    """The streams each node holds open, at most ``cap`` at once: 45 streams of one token held all 40
    of the server's threads while they waited for chunks, and `/healthz` timed out (issue 15). Waiting
    streams no longer hold a thread; the cap bounds what one token can hold open all the same."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.lock = threading.Lock()
        self.open: dict[int, int] = {}

    def take(self, node_id: int) -> StreamSlot:
        with self.lock:
            if self.open.get(node_id, 0) >= self.cap:
                raise HTTPException(
                    429,
                    f"this node has {self.cap} streams open already (stream_max_per_node): "
                    "finish or give back a range first",
                )
            self.open[node_id] = self.open.get(node_id, 0) + 1
        return StreamSlot(self, node_id)

"""What a lease holder is told when it no longer holds what it thinks it holds."""

from __future__ import annotations


class Fenced(Exception):
    """A transaction that began by checking its ownership lease found the lease no longer held: it
    wrote nothing, and the loop it belongs to must stop (coordinator/loops/runner.py). Here, not in the db
    package (which re-exports it): an edge worker imports this module for its errors, and importing
    the store (sqlite3, the SQL files) was ~25 ms of each worker's start."""


class LeaseLost(Exception):
    """The caller no longer holds the lease it named (HTTP 409). The reason says why; stop at once."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class StaleBatch(LeaseLost):
    """A batch that does not fit the range's resume point or its lease: nothing of it was stored."""


class RangeError(ValueError):
    """A request that names impossible numbers (a batch past the range's end, to < from): HTTP 400."""


class OwnershipLost(Fenced):
    """A loop's ownership lease is gone (taken over, expired, never renewed in time): the loop stops
    its work where it is, before writing anything more (self-fencing, seed 004)."""

"""The clock every lease is measured by: the database's, never a worker's.

PostgreSQL has one (``clock_timestamp()`` on the server). SQLite has none: the host is its clock, and
it used to be ``time.time``, the host's wall clock. A step of that clock moved every lease at once: a
step forward refused every live lease, a step back delayed every takeover by the step, and after a
+31 s step a second process claimed the planner's ownership lease while the first still worked
(issue 14). So on SQLite the lease clock is the kernel's boot clock (``CLOCK_BOOTTIME``: steady, never
stepped, shared by every process on the machine) plus an offset kept in the database file, fixed at
the first connection after each boot from the wall clock of that moment. Every process of one boot
reads the same clock, and a later step of the wall clock moves nothing; ``*_at`` columns stay close to
Unix time (they drift from it only by the wall clock's steps since boot).

``move`` (and a test's ``Database.move_clock``) shifts the clock in tests, so a lease expires without
sleeping out its TTL; on PostgreSQL the same shift is a session setting that ``{now}`` adds (queries.py).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

# The session setting a test's moved clock is passed in on PostgreSQL (seconds; unset in production).
CLOCK_OFFSET_SETTING = "usenet_indexer.clock_offset"
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def boot_clock() -> float:
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def boot_id() -> str | None:
    """This boot of the machine (Linux); None elsewhere, where the wall clock is all there is."""
    try:
        return BOOT_ID.read_text(encoding="ascii").strip() or None
    except OSError:
        return None


class LeaseClock:
    """``source() + offset``, plus what tests moved it by."""

    def __init__(self, offset: float, source: Callable[[], float] = boot_clock) -> None:
        self.offset = offset
        self.source = source
        self._moved = 0.0
        self._lock = threading.Lock()

    def now(self) -> float:
        return self.source() + self.offset + self._moved

    def move(self, seconds: float) -> None:
        with self._lock:
            self._moved += seconds


def anchored_clock(
    conn: sqlite3.Connection, *, boot: str | None = None, wall: Callable[[], float] = time.time
) -> LeaseClock:
    """The lease clock of the SQLite file ``conn`` opened: the boot clock with the offset recorded for
    this boot, recorded now from the wall clock if this is the boot's first connection."""
    boot = boot if boot is not None else boot_id()
    if boot is None:
        return LeaseClock(0.0, wall)
    conn.isolation_level = None
    conn.execute("BEGIN IMMEDIATE")
    try:
        try:
            row = conn.execute("SELECT boot_id, offset_seconds FROM lease_clock WHERE id = 1").fetchone()
        except sqlite3.OperationalError as error:
            if "no such table" not in str(error):
                raise
            # A file not migrated yet (only migrations run on it now): anchored in this process alone.
            conn.execute("ROLLBACK")
            return LeaseClock(wall() - boot_clock())
        if row is not None and row[0] == boot:
            offset = float(row[1])
        else:
            offset = wall() - boot_clock()
            conn.execute(
                "INSERT INTO lease_clock (id, boot_id, offset_seconds) VALUES (1, ?, ?) ON CONFLICT (id) "
                "DO UPDATE SET boot_id = excluded.boot_id, offset_seconds = excluded.offset_seconds",
                (boot, offset),
            )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return LeaseClock(offset)

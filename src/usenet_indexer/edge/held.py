"""What a supervised worker holds, in a file its supervisor reads once it dies (issue 17).

A worker killed outright (SIGKILL, the OOM killer, a crash in C) cannot give its leases back, and they
used to wait out the TTL: two ``kill -9`` of a worker during a one-million-header ``run`` made it take
150 s instead of 11. The supervisor sees the death at once, but cannot release "everything of this
node": under ``edge --processes N`` the children share one node token, and that would take live
siblings' leases. So each child records exactly which leases it holds — ``(range, epoch)`` and
``(group, lane, epoch)`` — in a small file of its own (``EDGE_HELD_FILE``), written before a lease is
used and rewritten when one ends, and the supervisor gives back exactly those through the node API
(edge/supervisor.py ``give_back``). Every release is conditional on node, epoch and status in one
statement: an entry that is stale (the lease ended, or was taken over) is refused and changes nothing.

The file is replaced whole (a temporary file renamed over it), so a reader sees one state or the
next, never half of one. It is not fsync'd: it must survive its writer's death, not the machine's (the
supervisor dies with the machine too). What it cannot cover: a lease the coordinator granted whose
answer the worker had not read yet when it died. That one still waits out the TTL.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from usenet_indexer.logs import get_logger

log = get_logger(__name__)

HELD_FILE_VARIABLE = "EDGE_HELD_FILE"
MAX_FILE_BYTES = 1 << 20  # a worker holds a handful of leases; anything bigger is not ours


@dataclass(frozen=True, slots=True)
class Held:
    """Leases one worker holds: ranges as (range, epoch), lanes as (group, lane, epoch)."""

    ranges: frozenset[tuple[int, int]] = frozenset()
    lanes: frozenset[tuple[int, str, int]] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.ranges or self.lanes)

    def encode(self) -> bytes:
        body = {
            "version": 1,
            "ranges": sorted([r, e] for r, e in self.ranges),
            "lanes": sorted([g, lane, e] for g, lane, e in self.lanes),
        }
        return json.dumps(body, separators=(",", ":")).encode()


class HeldFileError(ValueError):
    """A held-leases file that is not one this module wrote."""


def decode_held(data: bytes) -> Held:
    """The leases a file names; HeldFileError for anything else (pure: no I/O)."""
    if len(data) > MAX_FILE_BYTES:
        raise HeldFileError(f"{len(data)} bytes, over the {MAX_FILE_BYTES}-byte cap")
    try:
        body = json.loads(data)
    except (UnicodeDecodeError, ValueError) as error:
        raise HeldFileError(f"not JSON: {error}") from None
    if not isinstance(body, dict) or body.get("version") != 1:
        raise HeldFileError("not a version 1 held-leases object")
    ranges, lanes = body.get("ranges"), body.get("lanes")
    if not isinstance(ranges, list) or not isinstance(lanes, list):
        raise HeldFileError("ranges and lanes must be lists")
    held_ranges = set()
    for entry in ranges:
        if not (isinstance(entry, list) and len(entry) == 2 and all(_positive(v) for v in entry)):
            raise HeldFileError(f"a range is [id, epoch] with positive integers, not {entry!r}")
        held_ranges.add((int(entry[0]), int(entry[1])))
    held_lanes = set()
    for entry in lanes:
        if not (
            isinstance(entry, list)
            and len(entry) == 3
            and _positive(entry[0])
            and entry[1] in ("history", "tail")
            and _positive(entry[2])
        ):
            raise HeldFileError(f"a lane is [group, 'history' or 'tail', epoch], not {entry!r}")
        held_lanes.add((int(entry[0]), str(entry[1]), int(entry[2])))
    return Held(frozenset(held_ranges), frozenset(held_lanes))


def _positive(value: object) -> bool:
    return type(value) is int and 1 <= value <= 2**63 - 1


@dataclass
class HeldFile:
    """The worker's side: every lease it takes is added before it is used, every one that ends is
    removed. Thread-safe (poster and completion threads end ranges while the next one is leased)."""

    path: Path
    _ranges: set[tuple[int, int]] = field(default_factory=set)
    _lanes: set[tuple[int, str, int]] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._write()  # whatever a predecessor left there was given back by the supervisor

    @classmethod
    def from_environment(cls) -> HeldFile | None:
        path = os.environ.get(HELD_FILE_VARIABLE, "").strip()
        return cls(Path(path)) if path else None

    def hold_range(self, range_id: int, epoch: int) -> None:
        with self._lock:
            self._ranges.add((range_id, epoch))
            self._write()

    def drop_range(self, range_id: int, epoch: int) -> None:
        with self._lock:
            if (range_id, epoch) in self._ranges:
                self._ranges.discard((range_id, epoch))
                self._write()

    def hold_lane(self, group_id: int, lane: str, epoch: int) -> None:
        with self._lock:
            self._lanes.add((group_id, lane, epoch))
            self._write()

    def drop_lane(self, group_id: int, lane: str, epoch: int) -> None:
        with self._lock:
            if (group_id, lane, epoch) in self._lanes:
                self._lanes.discard((group_id, lane, epoch))
                self._write()

    def held(self) -> Held:
        with self._lock:
            return Held(frozenset(self._ranges), frozenset(self._lanes))

    def _write(self) -> None:
        data = Held(frozenset(self._ranges), frozenset(self._lanes)).encode()
        temporary = self.path.with_name(f".{self.path.name}.tmp")
        temporary.write_bytes(data)
        os.replace(temporary, self.path)


def read_held(path: Path) -> Held:
    """The supervisor's side: what a dead child's file names (nothing when there is no file; a file
    that does not parse is logged and read as nothing: its leases then lapse after the TTL)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Held()
    try:
        return decode_held(data)
    except HeldFileError as error:
        log.error("edge.held_file_unreadable", path=str(path), error=str(error))
        return Held()

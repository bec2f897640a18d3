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
supervisor dies with the machine too, and the next one reads a new directory); an fsync would cost
every lease request a flush (measured below in docs/RELIABILITY.md) for nothing.

A lease the coordinator granted whose answer the worker had not read yet when it died cannot be named
by (range, epoch) (the bench's first kill, 0.1 s after a grant, found one), so before each lease
request the worker writes a random **claim tag** here and sends it with the request; the grant records
it, and the tag is replaced by the lease in one write once the answer is read (or dropped: no grant,
or the request failed for good and the worker revoked the tag itself, edge/give_back.py; until then it
stays here). The supervisor of a worker that died revokes the tags its file names, and
gives back what was granted under them (leases/claims.py): under ``edge --processes`` too, where the
node is shared and such a grant used to wait out the TTL.
"""

from __future__ import annotations

import os
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path

from usenet_indexer.logs import get_logger
from usenet_indexer.wire.held import Held, HeldFileError, decode_held

log = get_logger(__name__)

HELD_FILE_VARIABLE = "EDGE_HELD_FILE"


def new_claim() -> str:
    """A claim tag for one lease request (and its retries): 128 random bits in hex."""
    return secrets.token_hex(16)


@dataclass
class HeldFile:
    """The worker's side: every lease it takes is added before it is used, every one that ends is
    removed. Thread-safe (poster and completion threads end ranges while the next one is leased)."""

    path: Path
    _ranges: set[tuple[int, int]] = field(default_factory=set)
    _lanes: set[tuple[int, str, int]] = field(default_factory=set)
    _claims: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._write()  # whatever a predecessor left there was given back by the supervisor

    @classmethod
    def from_environment(cls) -> HeldFile | None:
        path = os.environ.get(HELD_FILE_VARIABLE, "").strip()
        return cls(Path(path)) if path else None

    def claim(self) -> str:
        """A new claim tag, written here before the lease request that carries it is sent."""
        tag = new_claim()
        with self._lock:
            self._claims.add(tag)
            self._write()
        return tag

    def drop_claim(self, claim: str | None) -> None:
        """The request under ``claim`` was answered with no grant, or failed and its tag was revoked
        (what was granted under it given back)."""
        with self._lock:
            if claim in self._claims:
                self._claims.discard(claim)
                self._write()

    def hold_range(self, range_id: int, epoch: int, claim: str | None = None) -> None:
        """The range granted (under ``claim``, which it replaces in the same write)."""
        with self._lock:
            self._ranges.add((range_id, epoch))
            self._claims.discard(claim or "")
            self._write()

    def drop_range(self, range_id: int, epoch: int) -> None:
        with self._lock:
            if (range_id, epoch) in self._ranges:
                self._ranges.discard((range_id, epoch))
                self._write()

    def hold_lane(self, group_id: int, lane: str, epoch: int, claim: str | None = None) -> None:
        with self._lock:
            self._lanes.add((group_id, lane, epoch))
            self._claims.discard(claim or "")
            self._write()

    def drop_lane(self, group_id: int, lane: str, epoch: int) -> None:
        with self._lock:
            if (group_id, lane, epoch) in self._lanes:
                self._lanes.discard((group_id, lane, epoch))
                self._write()

    def _write(self) -> None:
        data = Held(frozenset(self._ranges), frozenset(self._lanes), frozenset(self._claims)).encode()
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

"""Ownership leases (seed 004): one holder per name, for the coordinator's background loops.

Several coordinators may run behind one load balancer; each loop (planner, prefetcher, …) runs only on
the holder of its lease. The invariants, none of which may be dropped:

1. **Single writer**: a claim is one compare-and-set (``UPDATE … WHERE free OR expired``), judged by
   whether a row came back, never by reading first and writing after.
2. **TTL at least 3 × the renew interval**, checked at construction: with less, one slow renewal (a
   network hiccup, a GC pause) makes the holder lose its own lease, or another think it dead.
3. **Fencing**: every operation names the epoch it was granted; a mismatch means someone else took
   over, and the caller must stop its loop (self-fencing) instead of writing on.

Listing expired leases is for inspection only: taking over happens through ``acquire`` alone (after the
TTL, or at once from a holder proven gone, by the same compare-and-set).

A loop's writes are fenced too (``OwnershipFence``): each write transaction starts by checking, in the
database, that this holder still holds the loop at its epoch, and keeps the lease's row share-locked
until it commits, so no claim lands between the check and the writes. A planner pass outlived its
30 s lease (15 s on a group, 60 s searching a backfill date), another coordinator claimed the loop,
and both planned the same group (issue 14).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from usenet_indexer.db import Database, Row, Tx
from usenet_indexer.leases.errors import OwnershipLost

DEFAULT_TTL_SECONDS = 30.0
DEFAULT_RENEW_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class Claim:
    ok: bool
    name: str
    epoch: int | None
    holder: str | None
    expires_at: float | None


@dataclass(frozen=True, slots=True)
class Ownership:
    name: str
    holder: str | None
    epoch: int
    expires_at: float | None
    renewed_at: float | None
    meta: dict[str, Any]


class OwnershipLeases:
    """The leases one process (``holder``) claims; ``clock`` (Unix seconds) replaces the database's
    clock in tests, so expiry is shown without sleeping the TTL out."""

    def __init__(
        self,
        db: Database,
        holder: str,
        *,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        renew_seconds: float = DEFAULT_RENEW_SECONDS,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if renew_seconds <= 0:
            raise ValueError(f"ownership lease renew interval must be positive, not {renew_seconds}")
        if ttl_seconds < 3 * renew_seconds:
            raise ValueError(
                f"ownership lease TTL ({ttl_seconds} s) must be at least 3 × the renew interval "
                f"({renew_seconds} s): with less, one slow renewal loses the lease or lets a live holder "
                "look dead"
            )
        if not holder:
            raise ValueError("an ownership lease needs a holder name")
        self.db = db
        self.holder = holder
        self.ttl = float(ttl_seconds)
        self.renew_interval = float(renew_seconds)
        self.clock = clock
        self._held: dict[str, int] = {}
        self._renewed: dict[str, float] = {}  # time.monotonic() of each lease's last claim or renewal

    def _now(self) -> float | None:
        return None if self.clock is None else float(self.clock())

    def holdings(self) -> Mapping[str, int]:
        """Names this process holds, with their epochs."""
        return dict(self._held)

    def epoch(self, name: str) -> int | None:
        return self._held.get(name)

    def acquire(
        self, name: str, meta: Mapping[str, Any] | None = None, *, gone: Callable[[str], bool] | None = None
    ) -> Claim:
        """Claim ``name`` if it is free or expired; ``ok=False`` means someone holds it: back off.

        ``gone(holder)`` may prove the live holder dead (its process no longer exists): the lease is
        then claimed at once instead of after its TTL, still by compare-and-set, on the holder and
        epoch just read. A coordinator killed outright left every loop to wait 30 s (issue 17)."""
        params = {
            "name": name,
            "holder": self.holder,
            "ttl": self.ttl,
            "now": self._now(),
            "meta": json.dumps(dict(meta or {}), sort_keys=True),
            "gone_holder": None,
            "gone_epoch": None,
        }

        def claimed(row: Row, started: float) -> Claim:
            self._held[name] = int(row["epoch"])
            self._renewed[name] = started
            return Claim(True, name, int(row["epoch"]), self.holder, float(row["expires_at"]))

        def claim(tx: Tx) -> Claim:
            tx.execute("ownership_ensure", params)
            started = time.monotonic()
            row = tx.one("ownership_claim", params)
            if row is not None:
                return claimed(row, started)
            current = tx.one("ownership_get", params)
            assert current is not None
            holder, epoch = current["holder"], int(current["epoch"])
            if holder is not None and holder != self.holder and gone is not None and gone(str(holder)):
                started = time.monotonic()
                taken = tx.one("ownership_claim", {**params, "gone_holder": holder, "gone_epoch": epoch})
                if taken is not None:
                    return claimed(taken, started)
                current = tx.one("ownership_get", params)  # claimed by another in between: who
                assert current is not None
            return Claim(False, name, int(current["epoch"]), current["holder"], _float(current["expires_at"]))

        return self.db.retrying(claim)

    def renew(self, name: str) -> bool:
        """Extend the lease; False means it is lost (taken over, released, expired): self-fence."""
        epoch = self._held.get(name)
        if epoch is None:
            return False
        params = {"name": name, "holder": self.holder, "epoch": epoch, "ttl": self.ttl, "now": self._now()}
        started = time.monotonic()  # the lease runs from before the renewal was sent, not after
        with self.db.transaction() as tx:
            ok = tx.one("ownership_renew", params) is not None
        if ok:
            self._renewed[name] = started
        else:
            self._held.pop(name, None)
        return ok

    def fresh(self, name: str) -> bool:
        """Held, and renewed (by this process's own clock) less than a TTL ago: past that, another
        coordinator may have claimed it, whatever this process last heard (self-fencing)."""
        renewed = self._renewed.get(name)
        return name in self._held and renewed is not None and time.monotonic() - renewed < self.ttl

    def renew_all(self) -> list[str]:
        """Renew every lease held; returns the names lost (stop their loops)."""
        return [name for name in list(self._held) if not self.renew(name)]

    def release(self, name: str) -> bool:
        epoch = self._held.get(name)
        if epoch is None:
            return False
        with self.db.transaction() as tx:
            ok = (
                tx.one("ownership_release", {"name": name, "holder": self.holder, "epoch": epoch}) is not None
            )
        self._held.pop(name, None)
        return ok

    def refresh(self, name: str) -> Ownership | None:
        """Read who really holds ``name`` and forget it here if that is no longer us at our epoch."""
        with self.db.transaction(write=False) as tx:
            row = tx.one("ownership_get", {"name": name})
        record = None if row is None else _ownership(row)
        if record is None or record.holder != self.holder or record.epoch != self._held.get(name):
            self._held.pop(name, None)
        return record

    def expired(self) -> list[Ownership]:
        """Leases past their expiry, anyone's (for inspection: taking over is ``acquire``'s alone)."""
        with self.db.transaction(write=False) as tx:
            return [_ownership(r) for r in tx.run("ownership_expired", {"now": self._now()})]

    def mine(self) -> list[Ownership]:
        """Leases recorded under this holder, live or not (reconciling after a restart)."""
        with self.db.transaction(write=False) as tx:
            return [_ownership(r) for r in tx.run("ownership_of_holder", {"holder": self.holder})]


class OwnershipFence:
    """The loop ``name``'s fence (a ``db.database.Fence``): its writes go through only while this
    process holds the loop."""

    def __init__(self, ownership: OwnershipLeases, name: str) -> None:
        self.ownership = ownership
        self.name = name

    def alive(self) -> bool:
        """Held and renewed within its TTL, as far as this process knows (no database call)."""
        return self.ownership.fresh(self.name)

    def check_alive(self) -> None:
        """OwnershipLost unless ``alive()``: before work that writes outside the database (spool
        files), which no transaction can fence."""
        if not self.alive():
            raise OwnershipLost(self._lost())

    def epoch(self) -> int | None:
        return self.ownership.epoch(self.name)

    def check(self, tx: Tx) -> None:
        """Checked in ``tx`` (and the lease's row share-locked until it ends); OwnershipLost when it is
        not held. On PostgreSQL the check is queued and fails the transaction at its next read or its
        commit (SQLSTATE UI001, raised as ``db.Fenced``), which saves a round trip per transaction."""
        self.check_alive()
        epoch = self.ownership.epoch(self.name)
        params = {
            "name": self.name,
            "holder": self.ownership.holder,
            "epoch": epoch,
            "now": self.ownership._now(),
        }
        if tx.dialect == "postgresql":
            tx.execute("ownership_hold", params)
        elif tx.one("ownership_hold", params) is None:
            raise OwnershipLost(self._lost())

    def _lost(self) -> str:
        return (
            f"loop {self.name}: this coordinator ({self.ownership.holder}) no longer holds its ownership "
            "lease; its work stops here"
        )


def all_ownerships(db: Database) -> list[tuple[Ownership, float]]:
    """Every ownership lease with the database's now (for the dashboard and tests)."""
    with db.transaction(write=False) as tx:
        return [(_ownership(r), float(r["now"])) for r in tx.run("ownership_all", {"now": None})]


def _ownership(row: Row) -> Ownership:
    return Ownership(
        name=str(row["name"]),
        holder=row["holder"],
        epoch=int(row["epoch"]),
        expires_at=_float(row["expires_at"]),
        renewed_at=_float(row["renewed_at"]),
        meta=json.loads(row["meta"] or "{}"),
    )


def _float(value: Any) -> float | None:
    return None if value is None else float(value)

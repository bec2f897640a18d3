"""One lease call from a process of its own, for tests that run it under a stepped host clock
(``faketime``): ``python -m tests.support.clock_step URL CALL ARGS…`` prints the outcome as JSON.

Calls: ``own NAME HOLDER TTL`` (claim an ownership lease), ``lease NODE TTL`` (a range lease),
``heartbeat RANGE NODE EPOCH TTL``.
"""

from __future__ import annotations

import json
import sys

from usenet_indexer.db import connect
from usenet_indexer.leases.errors import LeaseLost
from usenet_indexer.leases.ownership import OwnershipLeases
from usenet_indexer.leases.ranges import RangeLeases


def main(argv: list[str]) -> dict[str, object]:
    url, call, *args = argv
    db = connect(url)
    try:
        if call == "own":
            name, holder, ttl = args[0], args[1], float(args[2])
            claim = OwnershipLeases(db, holder, ttl_seconds=ttl, renew_seconds=ttl / 3).acquire(name)
            return {"ok": claim.ok, "holder": claim.holder}
        if call == "lease":
            lease = RangeLeases(db, ttl_seconds=float(args[1])).lease(int(args[0]))
            if lease is None:
                return {"range": None}
            return {"range": lease.range_id, "epoch": lease.epoch, "took_over": lease.took_over}
        if call == "heartbeat":
            range_id, node, epoch, ttl = int(args[0]), int(args[1]), int(args[2]), float(args[3])
            try:
                RangeLeases(db, ttl_seconds=ttl).heartbeat(range_id, node, epoch)
            except LeaseLost as lost:
                return {"ok": False, "reason": lost.reason}
            return {"ok": True}
        raise SystemExit(f"unknown call {call!r}")
    finally:
        db.close()


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))

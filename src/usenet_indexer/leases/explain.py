"""Why a caller does not hold the lease it names: the reasons a 409 carries. Pure.

Each function reads the row as the store has it (with the database's ``now``) and returns None when
the caller holds the lease, else a sentence for the worker's log. The store's writes decide; these
only say why a write was refused, so that a worker's log tells a takeover from an expiry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Row = Mapping[str, Any]


def explain_range(row: Row | None, range_id: int, node_id: int, epoch: int, ttl: float) -> str | None:
    """Why ``node_id`` at ``epoch`` does not hold ``range_id`` (None: it does)."""
    if row is None:
        return f"unknown range {range_id}"
    current = int(row["epoch"])
    if epoch != current or (row["node_id"] is not None and int(row["node_id"]) != node_id):
        if epoch > current:
            return f"range {range_id} has no lease epoch {epoch} (its epoch is {current})"
        return f"range {range_id} was taken over (epoch {current}; yours was {epoch})"
    status = row["status"]
    if status == "done":
        return f"range {range_id} is finished"
    if status == "planned":
        return f"range {range_id} was released"
    if status == "failed":
        return f"range {range_id} failed: {row['error']}"
    if row["node_id"] is None or int(row["node_id"]) != node_id:
        return f"range {range_id} is not leased to this node"
    silent = float(row["now"]) - float(row["heartbeat_at"])
    if silent > ttl:
        return f"range {range_id}'s lease expired: silent for {silent:.0f} s, longer than the {ttl:.0f} s TTL"
    return None


def explain_lane(
    row: Row | None, group_id: int, lane: str, node_id: int, epoch: int, ttl: float
) -> str | None:
    """Why ``node_id`` at ``epoch`` does not hold ``group_id``'s ``lane`` (None: it does)."""
    if row is None:
        return f"group {group_id} has no {lane} lane lease"
    name = row["name"]
    if int(row["epoch"]) != epoch or row["node_id"] is None or int(row["node_id"]) != node_id:
        if row["node_id"] is None and int(row["epoch"]) == epoch:
            return f"group {name}'s {lane} lane was released"
        return f"group {name}'s {lane} lane was taken over (epoch {row['epoch']}; yours was {epoch})"
    silent = float(row["now"]) - float(row["heartbeat_at"])
    if silent > ttl:
        return (
            f"group {name}'s {lane} lane lease expired: silent for {silent:.0f} s, "
            f"longer than the {ttl:.0f} s TTL"
        )
    return None

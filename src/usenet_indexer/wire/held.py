"""The held-leases format (issue 17): the leases one worker holds, as a supervised worker writes them
to its file (edge/held.py) and as the node API lists a node's (``GET leases``). Pure: no I/O.

    {"version": 1, "ranges": [[range, epoch], ...], "lanes": [[group, "history"|"tail", epoch], ...],
     "claims": ["<hex tag>", ...]}

``claims`` (optional: a file without it names none): the claim tags of lease requests the worker sent
and has not read the answer of yet (leases/claims.py), written before each request is sent.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

MAX_FILE_BYTES = 1 << 20  # a worker holds a handful of leases; anything bigger is not ours
# A claim tag: 128 random bits in hex as a worker makes them (edge/held.py); 16 to 64 hex digits accepted.
CLAIM_PATTERN = r"^[0-9a-f]{16,64}$"
CLAIM = re.compile(CLAIM_PATTERN)


@dataclass(frozen=True, slots=True)
class Held:
    """Leases one worker holds: ranges as (range, epoch), lanes as (group, lane, epoch); and the claim
    tags of the requests whose answers it has not read."""

    ranges: frozenset[tuple[int, int]] = frozenset()
    lanes: frozenset[tuple[int, str, int]] = frozenset()
    claims: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.ranges or self.lanes or self.claims)

    def __or__(self, other: Held) -> Held:
        return Held(self.ranges | other.ranges, self.lanes | other.lanes, self.claims | other.claims)

    def encode(self) -> bytes:
        body: dict[str, object] = {
            "version": 1,
            "ranges": sorted([r, e] for r, e in self.ranges),
            "lanes": sorted([g, lane, e] for g, lane, e in self.lanes),
        }
        if self.claims:
            body["claims"] = sorted(self.claims)
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
    claims = body.get("claims", [])
    if not isinstance(claims, list) or not all(isinstance(c, str) and CLAIM.fullmatch(c) for c in claims):
        raise HeldFileError("claims must be a list of 16 to 64 lowercase hex digits")
    return Held(frozenset(held_ranges), frozenset(held_lanes), frozenset(claims))


def _positive(value: object) -> bool:
    return type(value) is int and 1 <= value <= 2**63 - 1

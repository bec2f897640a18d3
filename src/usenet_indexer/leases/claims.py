"""Claim tags: the grants a dead worker never read, given back by its supervisor (issue 17).

A supervised worker records the leases it holds in a file its supervisor reads once it dies
(edge/held.py), but a grant whose answer it had not read yet is in no file. Under ``run`` each worker's
node is its own and the supervisor gives back every live lease of it; under ``edge --processes N``
the children share one node, and such a grant waited out the TTL (120 s by default) while its
siblings' leases had to stay. So before it asks for a lease (a range, a lane, a lane's next range)
the worker writes a random tag into its file, and sends it with the request; the grant records it
(``ranges.claim``, ``group_leases.claim``). The supervisor of a worker that died **revokes** the tags
its file names: from then on no grant is made under them, and what was granted under them is handed
back to it, to give back fenced by node, epoch and tag, as every give-back is.

The revoke and a grant under the same tag are one at a time: both take ``claim_lock`` (on PostgreSQL
a transaction-level advisory lock on the tag; on SQLite every write is serialized already) before
the grant reads the revoked tags or the revoke writes one. A grant in flight when its worker dies —
the case that matters: the worker asked, and was killed before the answer came — commits before the
revoke looks for what the tag holds, or sees the revoke and grants nothing. Reading first and
revoking after would miss a grant committed between the two (tests/integration/leases/
test_claim_interleavings.py drives each order).

**A lease request is idempotent under its tag** (migration 0019). A request whose grant committed but
whose answer was lost (a timeout, a connection reset after the commit) is retried by the worker
(edge/client.py) under the same tag, and is answered with the grant it already made — the same range
or lane at the same epoch, marked ``replayed`` — instead of a second one, which stayed leased to the
node until its TTL and counted against its group's cap of live leases meanwhile. Which grant answers
a request: for a range lease, the node's live range lease under the tag granted as a range lease (no
lane); for a lane lease, the node's live lease of that lane under the tag; for a lane's next range,
the node's live range under the tag granted through that lane at that epoch, once the lane is checked
and heartbeaten as for any next range (a lane lost since is refused, 409, as before). The answer is
read after the tag's lock and after the revoked check, and writes nothing: a retry that arrives while
its first try is still granting waits for that commit and finds the grant; a revoked tag is answered
with nothing, its grant given back by whoever revoked it. A lease that lapsed or ended is not an
answer: the retry is granted anew, as a request. A tag names one request: the worker makes a new one
for each and reuses it only for that request's retries (the audit, 9, reports two live grants under
one tag).

A worker whose request failed for good (every try failed, or the answer did not parse) revokes the
tag itself at the next moment the coordinator answers, before its next lease request, and gives back
what the revoke found, as a supervisor does (edge/give_back.py); until then the tag stays in its
held-leases file, for its supervisor if it dies meanwhile.

A worker that sends no tag (an older one) is granted as before, and its grants are never found here.
"""

from __future__ import annotations

from typing import Any

from usenet_indexer.db import Database, Row, Tx
from usenet_indexer.wire.held import CLAIM, Held

# A revoked tag is kept this long: a grant request of a dead worker is at the coordinator for seconds,
# not a day, and the table keeps one row per death.
KEEP_SECONDS = 86_400.0


class BadClaim(ValueError):
    def __init__(self, claim: str) -> None:
        super().__init__(f"a claim tag is 16 to 64 lowercase hex digits, not {claim[:80]!r}")


def check_claim(claim: str | None) -> str | None:
    if claim is not None and not CLAIM.fullmatch(claim):
        raise BadClaim(claim)
    return claim


def may_grant(tx: Tx, node_id: int, claim: str | None) -> bool:
    """Whether a grant may be made under ``claim`` in this transaction: False once it was revoked.
    Takes the tag's lock first (held to the transaction's end), so that a revoke waits for this grant
    to commit. PostgreSQL's ``lease_take`` does the same inside the function."""
    if claim is None:
        return True
    params = {"node_id": node_id, "claim": claim}
    tx.execute("claim_lock", params)
    return tx.one("claim_revoked", params) is None


def granted_range(
    tx: Tx,
    node_id: int,
    claim: str | None,
    ttl: float,
    *,
    group_id: int | None = None,
    lane_epoch: int | None = None,
) -> Row | None:
    """The node's live range lease granted under ``claim`` (a range lease; with ``lane_epoch``, the next
    range of ``group_id``'s lane held at that epoch), to answer a retry with; None without a tag. After
    ``may_grant``, whose lock makes a first try still granting commit before this reads."""
    if claim is None:
        return None
    params = {"node_id": node_id, "claim": claim, "ttl": ttl, "group_id": group_id, "lane_epoch": lane_epoch}
    return tx.one("claim_granted_range", params)


def granted_lane(tx: Tx, node_id: int, claim: str | None, lane: str, ttl: float) -> Row | None:
    """The node's live lease of ``lane`` granted under ``claim`` (see ``granted_range``)."""
    if claim is None:
        return None
    return tx.one("claim_granted_lane", {"node_id": node_id, "claim": claim, "lane": lane, "ttl": ttl})


class Claims:
    def __init__(self, db: Database, *, ttl_seconds: float) -> None:
        self.db = db
        self.ttl = float(ttl_seconds)

    def revoke(self, node_id: int, claim: str) -> Held:
        """No grant under ``claim`` from now on; the node's live leases granted under it (to give back,
        fenced by node, epoch and the tag). Revoking twice is harmless."""
        params: dict[str, Any] = {"node_id": node_id, "claim": check_claim(claim), "ttl": self.ttl}

        def revoke(tx: Tx) -> None:
            tx.execute("claim_lock", params)  # waits for a grant under the tag in flight to commit
            tx.execute("claim_revoke", params)
            tx.execute("claims_revoked_prune", {"keep": KEEP_SECONDS})

        self.db.retrying(revoke)
        # A transaction of its own, begun after the revoke committed: it sees every grant made
        # under the tag, and none can be made any more.
        with self.db.transaction(write=False) as tx:
            ranges = tx.run("node_claimed_ranges", params)
            lanes = tx.run("node_claimed_lanes", params)
        return Held(
            frozenset((int(r["id"]), int(r["epoch"])) for r in ranges),
            frozenset((int(r["group_id"]), str(r["lane"]), int(r["epoch"])) for r in lanes),
        )

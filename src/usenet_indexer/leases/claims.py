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

A worker that sends no tag (an older one) is granted as before, and its grants are never found here.
"""

from __future__ import annotations

from typing import Any

from usenet_indexer.db import Database, Tx
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

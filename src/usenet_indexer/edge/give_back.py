"""Giving leases back on a worker's behalf, fenced (issue 17): one way for both who do it.

- The supervisor of a worker that died (edge/supervisor.py) gives back what the worker's held-leases
  file names, and revokes the claim tags it names and gives back what was granted under them: grants
  whose answers the worker never read.
- A worker whose lease request failed for good (every try failed, or its answer was unreadable) does
  the same with that request's tag, at the next moment the coordinator answers (edge/client.py
  ``settle_claims``): a grant that committed and whose answer was lost used to wait out the TTL (120 s
  by default) while the worker was alive and well, holding one of its group's two live leases.

Every give-back names node, epoch and, for a grant found by its tag, the tag (leases/claims.py): one
the coordinator refuses (409: the lease ended or was taken over meanwhile) changes nothing; one that
fails (the coordinator away) leaves the lease to lapse after the TTL, as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from usenet_indexer.edge.errors import ApiError
from usenet_indexer.leases.errors import LeaseLost
from usenet_indexer.logs import get_logger
from usenet_indexer.wire.held import Held, HeldFileError

if TYPE_CHECKING:
    from usenet_indexer.edge.client import NodeClient

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class GivenBack:
    released: int = 0
    finished: int = 0
    lanes: int = 0
    refused: int = 0
    failed: int = 0

    def __add__(self, other: GivenBack) -> GivenBack:
        return GivenBack(
            self.released + other.released,
            self.finished + other.finished,
            self.lanes + other.lanes,
            self.refused + other.refused,
            self.failed + other.failed,
        )


def node_leases(client: NodeClient) -> Held:
    """The node's live leases as the coordinator has them (nothing when it cannot say)."""
    try:
        return client.node_leases()
    except (ApiError, OSError, HeldFileError) as error:
        log.warning("edge.node_leases_failed", error=str(error))
        return Held()


def revoked(client: NodeClient, claim: str, *, tries: int | None = None) -> Held | None:
    """``claim`` revoked, and the node's live leases granted under it; None when the coordinator could
    not be reached (the tag is still to be revoked). An answer that does not parse names nothing: it
    would not parse the next time either."""
    try:
        return client.revoke_claim(claim, tries=tries)
    except (ApiError, OSError) as error:
        log.warning("edge.claim_revoke_failed", claim=claim, error=str(error))
        return None
    except HeldFileError as error:
        log.warning("edge.claim_revoke_unreadable", claim=claim, error=str(error))
        return Held()


def give_back_claimed(
    client: NodeClient, claim: str, *, reclaim: bool, tries: int | None = None
) -> GivenBack | None:
    """Revoke ``claim`` and give back what was granted under it (``reclaim``: on a dead worker's
    behalf, logged as such); None when the revoke did not reach the coordinator."""
    found = revoked(client, claim, tries=tries)
    if found is None:
        return None
    return give_back(client, found, claim=claim, reclaim=reclaim)


def give_back(client: NodeClient, held: Held, *, claim: str | None = None, reclaim: bool = True) -> GivenBack:
    """Give back ``held``: its ranges first (a lane's next holder waits while the lane's range is
    held), then its lanes; with ``claim``, each only if granted under that tag. ``reclaim``: on behalf
    of a worker that died (logged as 'reclaimed'); else the worker's own (a grant it never read)."""
    released = finished = lanes = refused = failed = 0
    for range_id, epoch in sorted(held.ranges):
        try:
            outcome = client.call(range_id, epoch, "release", reclaim=reclaim, claim=claim).get(
                "outcome", "released"
            )
        except LeaseLost as lost:
            refused += 1
            log.info("edge.give_back_refused", range=range_id, epoch=epoch, reason=lost.reason)
            continue
        except (ApiError, OSError) as error:
            failed += 1
            log.warning("edge.give_back_failed", range=range_id, epoch=epoch, error=str(error))
            continue
        if outcome == "finished":
            finished += 1
        else:
            released += 1
    for group_id, lane, epoch in sorted(held.lanes):
        try:
            client.group_call(group_id, lane, epoch, "release", reclaim=reclaim, claim=claim)
            lanes += 1
        except LeaseLost as lost:
            refused += 1
            log.info("edge.give_back_refused", group=group_id, lane=lane, epoch=epoch, reason=lost.reason)
        except (ApiError, OSError) as error:
            failed += 1
            log.warning("edge.give_back_failed", group=group_id, lane=lane, epoch=epoch, error=str(error))
    return GivenBack(released, finished, lanes, refused, failed)

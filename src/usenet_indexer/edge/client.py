"""The coordinator's node API as the edge worker sees it: one wrapper for every call.

Network errors and 5xx are retried with exponential backoff (jittered, capped at 60 s, 8 tries): a
coordinator restarting must not cost a worker its range. 409 is a lost lease (LeaseLost), never
retried: the worker stops that range at once.

Under a supervisor the client records every lease it is granted in the worker's held-leases file
(edge/held.py) before handing it over, and removes it once it ended (finished, released, reported
corrupt, or refused as lost), so that the supervisor can give back exactly these if the worker dies.

Every lease request (a range, a lane, a lane's next range) carries a **claim tag**, new for each
request and the same for its retries (leases/claims.py), written to that file before it is sent when
there is one (a worker without a supervisor sends one too). A retry of a request whose grant committed
and whose answer was lost is answered with that grant, not a second one. A request that fails for good
leaves its tag to settle: before the next lease request (and when the worker stops) the client
revokes it and gives back what was granted under it (edge/give_back.py), in seconds where such a
grant used to wait out the TTL (issue 17); until then the tag stays in the file, for the supervisor.
"""

from __future__ import annotations

import random
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from usenet_indexer.edge.errors import ApiError, Refused, StreamBroken
from usenet_indexer.edge.give_back import GivenBack, give_back_claimed
from usenet_indexer.edge.held import HeldFile, new_claim
from usenet_indexer.leases.errors import LeaseLost
from usenet_indexer.logs import get_logger
from usenet_indexer.wire.batch import BATCH_MEDIA_TYPE
from usenet_indexer.wire.held import Held, decode_held

log = get_logger(__name__)

T = TypeVar("T")

RETRIES = 8
MAX_BACKOFF_SECONDS = 60.0
API = "/api/v1/node"


__all__ = ["ApiError", "Lease", "NodeClient", "Refused", "StreamBroken"]


@dataclass(frozen=True, slots=True)
class Lease:
    range_id: int
    group: str
    group_id: int
    start: int
    end: int
    next: int
    epoch: int
    lane: str
    rule_version: int

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Lease:
        r = body["range"]
        return cls(
            range_id=int(r["id"]),
            group=str(r["group"]),
            group_id=int(r["group_id"]),
            start=int(r["start"]),
            end=int(r["end"]),
            next=int(r["next"]),
            epoch=int(r["epoch"]),
            lane=str(r["lane"]),
            rule_version=int(body.get("rule_version", 0)),
        )


def backoff(attempt: int) -> float:
    """Seconds to wait before try ``attempt + 1``: 1, 2, 4, … capped, with full jitter on half."""
    ceiling = min(MAX_BACKOFF_SECONDS, 2.0**attempt)
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def tls_context(base_url: str, ca_file: str | None) -> ssl.SSLContext | bool:
    """What a client checks the coordinator's certificate against: ``ca_file``, or the system's CAs
    (True). A plain-HTTP coordinator gets a context with no CAs, never used (it would refuse every
    certificate): httpx loads the system's CAs for every client otherwise, 0.05 core-seconds at each
    worker's start (`run` on loopback)."""
    if ca_file:
        return ssl.create_default_context(cafile=ca_file)
    if base_url.lower().startswith("https:"):
        return True
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class NodeClient:
    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 120.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        ca_file: str | None = None,
        held: HeldFile | None = None,
        retries: int = RETRIES,
    ) -> None:
        """``ca_file``: the certificate (PEM) an https coordinator's is checked against, when it is not
        signed by a public CA (COORDINATOR_CA); without it, the system's CAs. ``held``: where a
        supervised worker records its leases (edge/held.py). ``retries``: tries per call."""
        if retries < 1:
            raise ValueError(f"retries must be at least 1, not {retries}")
        self.base_url = base_url.rstrip("/")
        self._sleep = sleep
        self.held = held
        self.retries = retries
        # Tags of lease requests that failed for good, oldest first: to revoke, and what was granted
        # under them to give back (settle_claims). Touched by the thread that asks for leases only.
        self.unsettled: list[str] = []
        self._http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {token}", "User-Agent": "usenet-indexer-edge/1"},
            timeout=httpx.Timeout(timeout, connect=10.0),
            transport=transport,
            verify=tls_context(self.base_url, ca_file),
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> NodeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the one wrapper --------------------------------------------------------------------------

    def request(self, method: str, path: str, *, tries: int | None = None, **kwargs: Any) -> httpx.Response:
        """``method path`` with retries (``tries``, else the client's); the response for < 400 and
        404; LeaseLost for 409."""
        tries = tries or self.retries
        for attempt in range(1, tries + 1):
            try:
                response = self._http.request(method, f"{API}/{path}", **kwargs)
            except httpx.TransportError as error:
                failure = f"{type(error).__name__}: {error}"
            else:
                if response.status_code == 409:
                    raise LeaseLost(_reason(response))
                if response.status_code < 400 or response.status_code == 404:
                    return response
                if response.status_code < 500:
                    raise Refused(
                        f"{method} {path}: HTTP {response.status_code}: {_reason(response)}",
                        status=response.status_code,
                        attempt=attempt,
                    )
                failure = f"HTTP {response.status_code}"
            if attempt == tries:
                raise ApiError(f"{method} {path}: gave up after {tries} tries ({failure})")
            wait = backoff(attempt)
            log.warning("coordinator.retry", call=f"{method} {path}", failure=failure, wait=round(wait, 1))
            self._sleep(wait)
        raise AssertionError("unreachable")

    # -- calls ------------------------------------------------------------------------------------

    def lease(self) -> Lease | None:
        return self._lease_range("lease", {})

    def _lease_range(self, path: str, params: dict[str, int | str]) -> Lease | None:
        """A range lease asked for under a claim tag (written ahead when supervised)."""
        got = self._claimed_request(path, params, lambda response: Lease.from_json(response.json()))
        if got is None:
            return None
        lease, claim = got
        if self.held is not None:
            self.held.hold_range(lease.range_id, lease.epoch, claim)
        return lease

    def _claimed_request(
        self, path: str, params: dict[str, int | str], read: Callable[[httpx.Response], T]
    ) -> tuple[T, str] | None:
        """``read`` of the answer to a lease request sent under a new claim tag (written ahead into the
        held file when supervised), and the tag; None when nothing was granted (204). Its retries
        carry the same tag, so one whose first answer was lost gets the grant the first try made. A
        request that fails for good, or whose answer does not read, leaves its tag to settle: the
        grant a try may have made is given back at the next settle, not left to its TTL. The tags of
        earlier failures are settled first, in one try (a coordinator still away: at the next)."""
        self.settle_claims(tries=1)
        claim = self.held.claim() if self.held is not None else new_claim()
        try:
            response = self.request("POST", path, params={**params, "claim": claim})
            if response.status_code == 204:
                self._unclaimed(claim)
                return None
            return read(response), claim
        except Refused as refused:
            if refused.attempt == 1:  # its only try refused: nothing granted (a disabled node's
                self._unclaimed(claim)  # tags would pile up in the file, one per request)
            else:
                self.unsettled.append(claim)
            raise
        except BaseException:
            self.unsettled.append(claim)
            raise

    def settle_claims(self, tries: int | None = None) -> GivenBack:
        """Revoke the tags of lease requests that failed for good, oldest first, and give back what was
        granted under them (edge/give_back.py, as a supervisor does for a dead worker, logged as
        released); each tag leaves the held file once revoked. Stops at the first revoke that does not
        reach the coordinator: the rest wait for the next call."""
        given = GivenBack()
        while self.unsettled:
            claim = self.unsettled[0]
            settled = give_back_claimed(self, claim, reclaim=False, tries=tries)
            if settled is None:
                break
            self.unsettled.pop(0)
            self._unclaimed(claim)
            given += settled
        if given != GivenBack():
            log.warning(
                "edge.claims_settled",
                ranges_released=given.released,
                ranges_finished=given.finished,
                lanes=given.lanes,
                refused=given.refused,
                failed=given.failed,
            )
        return given

    def _unclaimed(self, claim: str) -> None:
        if self.held is not None:
            self.held.drop_claim(claim)

    def revoke_claim(self, claim: str, *, tries: int | None = None) -> Held:
        """No grant under ``claim`` any more; what was granted under it (the node's live leases, to give
        back with the tag). Revoking twice is harmless."""
        return decode_held(self.request("POST", f"claims/{claim}/revoke", tries=tries).content)

    def node_leases(self) -> Held:
        """This node's live leases (the coordinator's view, in the held-leases format)."""
        return decode_held(self.request("GET", "leases").content)

    def rules(self, version: int) -> str:
        return self.request("GET", f"rules/{version}").text

    def stream(self, range_id: int, epoch: int) -> Iterator[bytes]:
        """The range's frames as raw bytes. Opening is retried; a stream cut after its first bytes is
        not (a new one would start over with its own header): the caller gives the range back."""
        for attempt in range(1, RETRIES + 1):
            started = False
            try:
                with self._http.stream(
                    "GET", f"{API}/ranges/{range_id}/stream", params={"epoch": epoch}, timeout=None
                ) as response:
                    if response.status_code == 409:
                        response.read()
                        raise LeaseLost(_reason(response))
                    if response.status_code >= 500:
                        failure = f"HTTP {response.status_code}"
                    elif response.status_code >= 400:
                        response.read()
                        raise ApiError(f"stream: HTTP {response.status_code}: {_reason(response)}")
                    else:
                        # No chunk size: httpx would hold pieces back until one fills (keepalives too).
                        for piece in response.iter_raw():
                            started = True
                            yield piece
                        return
            except httpx.TransportError as error:
                if started:
                    raise StreamBroken(f"range {range_id}: the stream broke: {error}") from error
                failure = f"{type(error).__name__}: {error}"
            if attempt == RETRIES:
                raise ApiError(f"stream: gave up after {RETRIES} tries ({failure})")
            wait = backoff(attempt)
            log.warning("coordinator.retry", call=f"stream {range_id}", failure=failure, wait=round(wait, 1))
            self._sleep(wait)

    def batch(self, range_id: int, epoch: int, body: bytes) -> dict[str, Any]:
        """Post a batch body (wire/batch.py); the stored result."""
        response = self.request(
            "POST",
            f"ranges/{range_id}/batches",
            params={"epoch": epoch},
            content=body,
            headers={"Content-Type": BATCH_MEDIA_TYPE},
        )
        result: dict[str, Any] = response.json()
        return result

    def call(
        self, range_id: int, epoch: int, action: str, *, reclaim: bool = False, claim: str | None = None
    ) -> dict[str, Any]:
        """heartbeat, finish or release (``reclaim``: on behalf of a worker that died; ``claim``: only a
        lease granted under that tag)."""
        params: dict[str, int | str] = _claimed({"epoch": epoch}, claim)
        if reclaim:
            params["reclaim"] = "true"
        try:
            result: dict[str, Any] = self.request("POST", f"ranges/{range_id}/{action}", params=params).json()
        except LeaseLost:
            self._ended(range_id, epoch)
            raise
        if action != "heartbeat":
            self._ended(range_id, epoch)
        return result

    def _ended(self, range_id: int, epoch: int) -> None:
        if self.held is not None:
            self.held.drop_range(range_id, epoch)

    def forget(self, lease: Lease) -> None:
        """The worker stops ``lease``'s range without giving it back (it was lost)."""
        self._ended(lease.range_id, lease.epoch)

    def corrupt(self, range_id: int, epoch: int, chunk_from: int, crc: int | None = None) -> dict[str, Any]:
        """Report a chunk that does not inflate; ``crc``: the CRC-32 of its bytes as streamed."""
        body: dict[str, int] = {"from": chunk_from} if crc is None else {"from": chunk_from, "crc": crc}
        try:
            response = self.request("POST", f"ranges/{range_id}/corrupt", params={"epoch": epoch}, json=body)
        except LeaseLost:
            self._ended(range_id, epoch)
            raise
        self._ended(range_id, epoch)  # replanned or failed: the lease has ended
        result: dict[str, Any] = response.json()
        return result

    # -- group lanes ------------------------------------------------------------------------------

    def lease_group(self, lane: str) -> dict[str, Any] | None:
        got = self._claimed_request("groups/lease", {"lane": lane}, _lane_grant)
        if got is None:
            return None
        (granted, group_id, epoch), claim = got
        if self.held is not None:
            self.held.hold_lane(group_id, lane, epoch, claim)
        return granted

    def next_range(self, group_id: int, lane: str, epoch: int) -> Lease | None:
        return self._lease_range(f"groups/{group_id}/next", {"lane": lane, "epoch": epoch})

    def group_call(
        self,
        group_id: int,
        lane: str,
        epoch: int,
        action: str,
        *,
        reclaim: bool = False,
        claim: str | None = None,
    ) -> None:
        """heartbeat or release of a lane (``reclaim``: on behalf of a worker that died; ``claim``: only
        a lane granted under that tag)."""
        params: dict[str, int | str] = _claimed({"lane": lane, "epoch": epoch}, claim)
        if reclaim:
            params["reclaim"] = "true"
        try:
            self.request("POST", f"groups/{group_id}/{action}", params=params)
        except LeaseLost:
            self.forget_lane(group_id, lane, epoch)
            raise
        if action != "heartbeat":
            self.forget_lane(group_id, lane, epoch)

    def forget_lane(self, group_id: int, lane: str, epoch: int) -> None:
        """The lane has ended (released, or lost)."""
        if self.held is not None:
            self.held.drop_lane(group_id, lane, epoch)

    def put_snapshot(self, group_id: int, lane: str, epoch: int, next_article: int, body: bytes) -> None:
        self.request(
            "PUT",
            f"groups/{group_id}/snapshot",
            params={"lane": lane, "epoch": epoch, "next": next_article},
            content=body,
            headers={"Content-Type": "application/octet-stream"},
        )

    def get_snapshot(
        self, group_id: int, lane: str, epoch: int, at: int | None = None
    ) -> tuple[int, bytes] | None:
        """The lane's snapshot (with ``at``: the one standing at that article), or None."""
        params: dict[str, int | str] = {"lane": lane, "epoch": epoch}
        if at is not None:
            params["next"] = at
        response = self.request("GET", f"groups/{group_id}/snapshot", params=params)
        if response.status_code == 404:
            return None
        return int(response.headers["X-Snapshot-Next"]), response.content

    def flush_lane(self, group_id: int, lane: str, epoch: int, at: int, body: bytes) -> None:
        """Post a lane's open releases (a batch body) and record an empty window at ``at``."""
        self.request(
            "POST",
            f"groups/{group_id}/flush",
            params={"lane": lane, "epoch": epoch, "next": at},
            content=body,
            headers={"Content-Type": BATCH_MEDIA_TYPE},
        )


def _lane_grant(response: httpx.Response) -> tuple[dict[str, Any], int, int]:
    """A lane's grant, its group id and epoch (read while the claim tag is still held)."""
    granted = dict(response.json())
    return granted, int(granted["group"]["id"]), int(granted["group"]["epoch"])


def _claimed(params: dict[str, int | str], claim: str | None) -> dict[str, int | str]:
    """``params`` with the claim tag of a give-back, when there is one."""
    return params if claim is None else {**params, "claim": claim}


def _reason(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or f"HTTP {response.status_code}"
    if isinstance(body, dict):
        return str(body.get("error") or body.get("detail") or body)
    return str(body)

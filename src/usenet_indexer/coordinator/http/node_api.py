"""The edge workers' API (seed 002): a lease, the range's chunks as one stream, results per batch, the
end of the range; group lanes with their window snapshots. Every call that acts on a lease names its
epoch; a lease lost (taken over, finished, released, expired) is 409 with the reason.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import AsyncIterator, Mapping
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Path, Query, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, Field
from starlette.background import BackgroundTask

from usenet_indexer.articles import ChunkSpan, chunk_spans
from usenet_indexer.catalog.batch_store import store_batch
from usenet_indexer.coordinator.http.metrics import Metrics
from usenet_indexer.coordinator.http.network import RequestRefused
from usenet_indexer.coordinator.http.state import Config, Meter, Streams, Svc, services_in
from usenet_indexer.coordinator.http.streams import StreamSlot
from usenet_indexer.coordinator.registries.nodes import NodeDisabled, Unauthorized
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db import Row, Tx
from usenet_indexer.indexing.window import Window
from usenet_indexer.leases.errors import LeaseLost, RangeError
from usenet_indexer.leases.groups import BadLane, check_lane
from usenet_indexer.leases.ranges import RangeLease
from usenet_indexer.logs import get_logger
from usenet_indexer.storage.blobs import BlobError, BlobTooLarge
from usenet_indexer.storage.corpus import CorpusRange
from usenet_indexer.wire.batch import BatchError, check_authority, decode_batch
from usenet_indexer.wire.frames import STREAM_HEADER, encode_end, encode_frame_parts, encode_keepalive
from usenet_indexer.wire.held import CLAIM_PATTERN, Held

log = get_logger(__name__)

MAX_ID = 2**63 - 1
Id = Annotated[int, Path(ge=1, le=MAX_ID)]
Epoch = Annotated[int, Query(ge=1, le=MAX_ID, description="The lease's epoch (fencing token)")]
LaneParam = Annotated[str, Query(description="history or tail")]
WindowAt = Annotated[int, Query(ge=1, le=MAX_ID, description="The article the window stands at")]
Reclaim = Annotated[
    bool,
    Query(description="Given back by the supervisor of a worker that died (logged as 'reclaimed')"),
]
Claim = Annotated[
    str | None,
    Query(
        pattern=CLAIM_PATTERN,
        description="A tag the worker wrote into its held-leases file before asking (leases/claims.py); "
        "optional: a worker that sends none is granted as before",
    ),
]
POLL_SECONDS = 0.5  # a waiting stream looks for its chunk this often at first …
POLL_MAX_SECONDS = 2.0  # … and less often the longer it waits (500 waiting streams: 250 looks a second)
# A snapshot body is handed to its blob writer in pieces this big, on a thread: an object store's
# writer uploads a multipart part inside write(), which must not stall the event loop.
SNAPSHOT_WRITE_BYTES = 1 << 20


class CorruptReport(BaseModel):
    model_config = {"extra": "forbid"}
    chunk_from: int = Field(alias="from", ge=0, le=MAX_ID)
    crc: int | None = Field(
        default=None, ge=0, le=2**32 - 1, description="CRC-32 of the chunk's bytes as the stream sent them"
    )


def lease_body(lease: RangeLease) -> dict[str, Any]:
    return {
        "range": {
            "id": lease.range_id,
            "group": lease.group,
            "group_id": lease.group_id,
            "start": lease.start,
            "end": lease.end,
            "next": lease.next,
            "epoch": lease.epoch,
            "lane": lease.lane,
            "took_over": lease.took_over,
        },
        "replayed": lease.replayed,
        "rule_version": lease.rule_version,
    }


def authenticated_node(request: Request) -> int:
    """The node whose bearer token the request carries: 401 without a valid one, 403 when disabled."""
    services = services_in(request)
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    try:
        if scheme.lower() != "bearer":
            raise Unauthorized("a node token is needed: `Authorization: Bearer uin_…`")
        return services.nodes.authenticate(token.strip())
    except Unauthorized as error:
        raise HTTPException(401, str(error), headers={"WWW-Authenticate": "Bearer"}) from None
    except NodeDisabled as error:
        raise HTTPException(403, str(error)) from None


Node = Annotated[int, Depends(authenticated_node)]


router = APIRouter(prefix="/api/v1/node", tags=["node"])


@router.post("/lease", responses={204: {"description": "No range to lease now"}})
def lease(node_id: Node, services: Svc, metrics: Meter, claim: Claim = None) -> Any:
    granted = services.ranges.lease(node_id, claim)
    if granted is None:
        return Response(status_code=204)
    if granted.replayed:  # a retry answered with its grant (leases/claims.py): no new lease
        log.info("lease.replayed", node=node_id, range=granted.range_id, epoch=granted.epoch)
        return lease_body(granted)
    metrics.leases.labels(took_over=str(granted.took_over).lower()).inc()
    log.info(
        "lease.granted",
        node=node_id,
        range=granted.range_id,
        epoch=granted.epoch,
        took_over=granted.took_over,
    )
    return lease_body(granted)


@router.get("/leases")
def leases(node_id: Node, services: Svc) -> Response:
    """The node's live leases, in the held-leases format (edge/held.py): for the supervisor of a
    worker that died, when the node was that worker's alone (issue 17)."""
    held = Held(frozenset(services.ranges.of_node(node_id)), frozenset(services.lanes.of_node(node_id)))
    return Response(held.encode(), media_type="application/json")


@router.post("/claims/{claim}/revoke")
def revoke_claim(
    claim: Annotated[str, Path(pattern=CLAIM_PATTERN)], node_id: Node, services: Svc
) -> Response:
    """No grant under ``claim`` from now on; the node's live leases granted under it, in the
    held-leases format: for the supervisor of a worker that died before reading a grant's answer,
    to give back with the tag (issue 17, leases/claims.py)."""
    held = services.claims.revoke(node_id, claim)
    return Response(held.encode(), media_type="application/json")


@router.get("/rules/{version}")
def rules(version: Annotated[int, Path(ge=0, le=2**31)], node_id: Node, services: Svc) -> Response:
    """The rule set a lease names (its ``rule_version``), as JSON (indexing/rules.py)."""
    try:
        rule_set = services.rules.get(version)
    except KeyError:
        return JSONResponse({"error": f"no rule set version {version}"}, status_code=404)
    return Response(rule_set.to_json(), media_type="application/json")


@router.post("/ranges/{range_id}/batches")
async def batch(
    range_id: Id,
    epoch: Epoch,
    request: Request,
    node_id: Node,
    services: Svc,
    settings: Config,
    metrics: Meter,
) -> dict[str, Any]:
    """A batch (wire/batch.py): stored with the range's new resume point, or 409 stale."""
    # The lease first, the body after: a node that holds nothing here gets a 409 before a byte of
    # its body is read, inflated or parsed (issue 15).
    held = await run(services.ranges.check, range_id, node_id, epoch)
    body = await read_body(request, settings.batch_max_bytes)
    wire = await run(decode_batch, body, settings.batch_max_bytes, settings.batch_max_inflated_bytes)
    if (wire.range_id, wire.epoch) != (range_id, epoch):
        raise HTTPException(
            400,
            f"the batch names range {wire.range_id} epoch {wire.epoch}, the URL {range_id} epoch {epoch}",
        )
    # What the batch may hold: its own articles; a lane's window carries releases open since the
    # lane's earlier ranges, so for a range granted through a lane, from the group's planned start.
    low = int(held["group_low"]) if held["lane_epoch"] is not None else wire.batch.from_id
    group = str(held["group_name"])
    b = await run(partial(check_authority, wire.batch, group=group, low=low, high=wire.batch.to_id))

    def store(tx: Tx, row: Row) -> Mapping[str, Any]:
        return store_batch(tx, int(row["group_id"]), str(row["group_name"]), b, wire.blobs, wire.categories)

    receipt = await run(
        services.ranges.commit_batch, range_id, node_id, epoch, b.from_id, b.to_id, b.headers, store
    )
    if receipt.replayed:
        metrics.batches_replayed.inc()
    else:
        metrics.batches.inc()
        metrics.headers.inc(b.headers)
        metrics.batch_bytes.inc(len(body))
        metrics.releases.inc(len(b.fragments))
    return {**receipt.result, "next": receipt.next_id, "replayed": receipt.replayed}


@router.post("/ranges/{range_id}/heartbeat")
def heartbeat(range_id: Id, epoch: Epoch, node_id: Node, services: Svc) -> dict[str, bool]:
    services.ranges.heartbeat(range_id, node_id, epoch)
    return {"ok": True}


@router.post("/ranges/{range_id}/finish")
def finish(range_id: Id, epoch: Epoch, node_id: Node, services: Svc) -> dict[str, Any]:
    done = services.ranges.finish(range_id, node_id, epoch)
    services.spool.remove(range_id)
    return {"ok": True, "headers": done.headers}


@router.post("/ranges/{range_id}/release")
def release(
    range_id: Id,
    epoch: Epoch,
    node_id: Node,
    services: Svc,
    reclaim: Reclaim = False,
    claim: Claim = None,
) -> dict[str, Any]:
    """Back to planned, or finished when read to its end (leases/ranges.py ``release``); with
    ``claim``, only a lease granted under that tag."""
    outcome = services.ranges.release(range_id, node_id, epoch, reclaim=reclaim, claim=claim)
    if outcome == "finished":
        services.spool.remove(range_id)
    return {"ok": True, "outcome": outcome}


@router.post("/ranges/{range_id}/corrupt")
def corrupt(
    range_id: Id, epoch: Epoch, report: CorruptReport, node_id: Node, services: Svc, settings: Config
) -> dict[str, Any]:
    row = services.ranges.check(range_id, node_id, epoch)
    outcome = services.ranges.corrupt(range_id, node_id, epoch, report.chunk_from, report.crc)
    for span in chunk_spans(int(row["start_id"]), int(row["end_id"]), settings.chunk_articles):
        if span.first == report.chunk_from:
            # Only the copy the worker read: a plain copy stored since then is good.
            if reported(services.spool.read(range_id, span), report.crc):
                services.spool.remove_chunk(range_id, span)
            where = CorpusRange(str(row["group_name"]), int(row["start_id"]), int(row["end_id"]))
            if outcome.capture and reported(services.corpus.read(where, span), report.crc):
                services.corpus.remove_chunk(where, span)
    log.warning("range.corrupt", range=range_id, chunk=report.chunk_from, failed=outcome.failed)
    return {"ok": True, "failed": outcome.failed, "reason": outcome.reason}


@router.get("/ranges/{range_id}/stream", response_class=StreamingResponse)
def stream(
    range_id: Id, epoch: Epoch, node_id: Node, services: Svc, settings: Config, streams: Streams
) -> StreamingResponse:
    row = services.ranges.check(range_id, node_id, epoch)
    start, end, resume = int(row["start_id"]), int(row["end_id"]), int(row["next_id"])
    spans = chunk_spans(start, end, settings.chunk_articles, resume)
    corpus = CorpusRange(str(row["group_name"]), start, end) if row["capture"] else None
    slot = streams.take(node_id)
    return StreamingResponse(
        frames(services, range_id, node_id, epoch, spans, corpus, slot),
        media_type="application/octet-stream",
        background=BackgroundTask(slot.release),  # also when the body never started
    )


# -- group lanes ----------------------------------------------------------------------------


@router.post("/groups/lease", responses={204: {"description": "No lane to lease now"}})
def lease_group(lane: LaneParam, node_id: Node, services: Svc, settings: Config, claim: Claim = None) -> Any:
    granted = services.lanes.lease(node_id, lane, claim)
    if granted is None:
        return Response(status_code=204)
    return {
        "group": {
            "id": granted.group_id,
            "name": granted.group,
            "lane": granted.lane,
            "epoch": granted.epoch,
            "ttl": settings.lease_ttl_seconds,
        },
        "snapshot": None
        if granted.snapshot_next is None
        else {"next": granted.snapshot_next, "size": granted.snapshot_size},
        "replayed": granted.replayed,
    }


@router.post("/groups/{group_id}/next", responses={204: {"description": "Nothing left in the lane now"}})
def next_range(
    group_id: Id, lane: LaneParam, epoch: Epoch, node_id: Node, services: Svc, claim: Claim = None
) -> Any:
    granted = services.lanes.next(group_id, node_id, lane, epoch, claim)
    if granted is None:
        return Response(status_code=204)
    return lease_body(granted)


@router.post("/groups/{group_id}/heartbeat")
def group_heartbeat(
    group_id: Id, lane: LaneParam, epoch: Epoch, node_id: Node, services: Svc
) -> dict[str, bool]:
    services.lanes.heartbeat(group_id, node_id, lane, epoch)
    return {"ok": True}


@router.post("/groups/{group_id}/release")
def release_group(
    group_id: Id,
    lane: LaneParam,
    epoch: Epoch,
    node_id: Node,
    services: Svc,
    reclaim: Reclaim = False,
    claim: Claim = None,
) -> dict[str, bool]:
    services.lanes.release(group_id, node_id, lane, epoch, reclaim=reclaim, claim=claim)
    return {"ok": True}


@router.put("/groups/{group_id}/snapshot")
async def put_snapshot(
    group_id: Id,
    lane: LaneParam,
    epoch: Epoch,
    request: Request,
    node_id: Node,
    next: WindowAt,
    services: Svc,
    settings: Config,
) -> dict[str, Any]:
    lane = check_lane(lane)
    await run(services.lanes.heartbeat, group_id, node_id, lane, epoch)
    # Streamed to storage as it arrives, then recorded under the lane's epoch: a holder that lost
    # the lane meanwhile writes a blob nobody points to, and the next PUT's prune removes it.
    location, writer = await run(services.snapshots.writer, group_id, lane, next, epoch)
    try:
        pending = bytearray()
        async for piece in request.stream():
            pending += piece
            if len(pending) >= SNAPSHOT_WRITE_BYTES:
                await run(writer.write, bytes(pending))
                pending.clear()
        if pending:
            await run(writer.write, bytes(pending))
    except BlobTooLarge as error:
        raise HTTPException(413, f"snapshot over the {settings.snapshot_max_bytes}-byte cap") from error
    except BaseException:
        await run(writer.abort)
        raise
    size = await run(writer.commit)
    await run(
        services.lanes.record_snapshot,
        group_id,
        node_id,
        lane,
        epoch,
        next=next,
        size=size,
        location=location,
    )
    kept = await run(services.lanes.kept_locations, group_id, lane)
    await run(services.snapshots.prune, group_id, lane, kept)
    return {"ok": True, "next": next, "size": size}


@router.post("/groups/{group_id}/flush")
async def flush_lane(
    group_id: Id,
    lane: LaneParam,
    epoch: Epoch,
    request: Request,
    node_id: Node,
    next: WindowAt,
    services: Svc,
    settings: Config,
) -> dict[str, Any]:
    """A lane given up: its open releases (a batch, range 0) stored and an empty window
    recorded at ``next``, in one transaction under the lane's epoch."""
    lane = check_lane(lane)
    held = await run(services.lanes.held_lane, group_id, node_id, lane, epoch)  # before the body
    body = await read_body(request, settings.batch_max_bytes)
    wire = await run(decode_batch, body, settings.batch_max_bytes, settings.batch_max_inflated_bytes)
    if (wire.range_id, wire.epoch) != (0, epoch):
        raise HTTPException(400, f"a flush names range 0 and the lane's epoch {epoch}")
    planned = await run(services.groups.get, held)
    flushed = await run(
        partial(
            check_authority,
            wire.batch,
            group=held,
            low=int(planned["history_low"] or 0),
            high=int(planned["tail_next"] or 1) - 1,
        )
    )
    empty = Window(held, position=next).snapshot()
    location, size = await run(services.snapshots.write, group_id, lane, next, epoch, [empty], "flushed")
    result: dict[str, Any] = {}

    def store(tx: Tx, row: Row) -> None:
        result.update(store_batch(tx, group_id, str(row["name"]), flushed, wire.blobs, wire.categories))

    await run(
        partial(
            services.lanes.flush,
            group_id,
            node_id,
            lane,
            epoch,
            next=next,
            size=size,
            location=location,
            store=store,
        )
    )
    kept = await run(services.lanes.kept_locations, group_id, lane)
    await run(services.snapshots.prune, group_id, lane, kept)
    return {"ok": True, **result}


@router.get("/groups/{group_id}/snapshot", response_class=StreamingResponse)
def get_snapshot(
    group_id: Id,
    lane: LaneParam,
    epoch: Epoch,
    node_id: Node,
    services: Svc,
    next: Annotated[
        int | None, Query(ge=1, le=MAX_ID, description="The one standing at this article")
    ] = None,
) -> Response:
    snapshot = services.lanes.snapshot(group_id, node_id, lane, epoch, at=next)
    opened = None if snapshot is None else services.snapshots.open(snapshot.location)
    if snapshot is None or opened is None:
        return JSONResponse({"error": "no snapshot"}, status_code=404)
    size, pieces = opened
    return StreamingResponse(
        pieces,
        media_type="application/octet-stream",
        headers={"Content-Length": str(size), "X-Snapshot-Next": str(snapshot.next)},
    )


async def frames(
    services: Services,
    range_id: int,
    node_id: int,
    epoch: int,
    spans: list[ChunkSpan],
    corpus: CorpusRange | None,
    slot: StreamSlot,
) -> AsyncIterator[bytes | memoryview]:
    """The range's chunks from its resume point, each from the corpus or the spool.

    Both are polled while waiting: the corpus fill may store a chunk in the corpus only, and a stream
    that looked at the corpus once, before that store, waited the whole hour on the spool (three
    groups, seed 002). While waiting, a keepalive frame (and a heartbeat) every so often: an HTTP client
    gives up on a quiet body. A stream that gives up ends without its END frame, which the worker's
    decoder reports. It waits on the event loop, not on a thread: each poll and heartbeat borrows one
    for a moment.
    """
    settings = services.settings
    try:
        yield STREAM_HEADER
        for span in spans:
            give_up = time.monotonic() + settings.stream_chunk_wait_seconds
            quiet_since = time.monotonic()
            poll = POLL_SECONDS
            while True:
                # Watched before the look, so that a chunk stored between the look and the wait wakes
                # it (arrivals.py: this process's prefetcher tells; other stores are polled for).
                with services.arrivals.watch(range_id) as arrived:
                    if (data := await run(read_chunk, services, range_id, span, corpus)) is not None:
                        break
                    if time.monotonic() > give_up:
                        log.error("stream.timeout", range=range_id, chunk=span.first)
                        return
                    if time.monotonic() - quiet_since >= settings.stream_keepalive_seconds:
                        quiet_since = time.monotonic()
                        yield encode_keepalive()
                        if not await run(keep_alive, services, range_id, node_id, epoch):
                            return
                    try:
                        await asyncio.wait_for(arrived.wait(), poll)
                    except TimeoutError:
                        poll = min(POLL_MAX_SECONDS, poll * 1.5)
            for part in encode_frame_parts(span.first, span.last, data):
                yield part
            # Streaming keeps the lease alive.
            if not await run(keep_alive, services, range_id, node_id, epoch):
                return
        yield encode_end()
    finally:
        slot.release()


def reported(copy: bytes | None, crc: int | None) -> bool:
    """Whether ``copy`` is the one a corrupt report names (any copy, for a report without a CRC)."""
    return copy is not None and (crc is None or zlib.crc32(copy) == crc)


def read_chunk(
    services: Services, range_id: int, span: ChunkSpan, corpus: CorpusRange | None
) -> bytes | None:
    try:
        if corpus is not None and (data := services.corpus.read(corpus, span)) is not None:
            return data
        return services.spool.read(range_id, span)
    except BlobError:
        return None


def keep_alive(services: Services, range_id: int, node_id: int, epoch: int) -> bool:
    try:
        services.ranges.heartbeat(range_id, node_id, epoch)
    except LeaseLost as lost:
        log.warning("stream.lease_lost", range=range_id, reason=lost.reason)
        return False
    return True


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The request body, refused with 413 past ``max_bytes`` without reading the rest."""
    pieces: list[bytes] = []
    size = 0
    async for piece in request.stream():
        size += len(piece)
        if size > max_bytes:
            raise RequestRefused(413, f"body over the {max_bytes}-byte cap: post smaller batches")
        pieces.append(piece)
    return b"".join(pieces)


async def run(function: Any, *args: Any, **kwargs: Any) -> Any:
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(function, *args, **kwargs)


def install_error_handlers(app: FastAPI, metrics: Metrics) -> None:
    """The lease engine's errors as HTTP: 409 lease lost, 400 impossible numbers or a bad lane."""

    @app.exception_handler(LeaseLost)
    async def lease_lost(request: Request, error: LeaseLost) -> JSONResponse:
        metrics.leases_lost.inc()
        return JSONResponse({"error": error.reason}, status_code=409)

    @app.exception_handler(RangeError)
    async def range_error(request: Request, error: RangeError) -> JSONResponse:
        return JSONResponse({"error": str(error)}, status_code=400)

    @app.exception_handler(BatchError)
    async def bad_batch(request: Request, error: BatchError) -> JSONResponse:
        return JSONResponse({"error": str(error)}, status_code=400)

    @app.exception_handler(BadLane)
    async def bad_lane(request: Request, error: BadLane) -> JSONResponse:
        return JSONResponse({"error": str(error)}, status_code=400)

    @app.exception_handler(BlobError)
    async def storage_failed(request: Request, error: BlobError) -> JSONResponse:
        # Object storage that did not answer: the worker retries 5xx, as it does a coordinator restart.
        log.error("storage.failed", path=request.url.path, error=str(error))
        return JSONResponse({"error": f"storage unavailable, retry: {error}"}, status_code=503)

"""The batch a worker posts: gzip'd JSON (level 1), validated and size-capped on arrival.

Document (version 1)::

    {"version": 1, "range_id": int, "epoch": int,
     "batch": {"from_id", "to_id", "headers", "malformed": {reason: count}, "gaps", "undated",
               "unmatched", "fragments": [...], "candidates": [...]}}

Fragments and candidates are indexing.fragment's dict form; a file's segments travel as columns
(``parts``, ``sizes``, ``articles`` lists and one newline-joined ``message_ids`` string), which is
both smaller and faster to write and read than one object per part.

Gzip level 1: measured on generated batches, level 1 compresses the JSON 3.1x and level 6 3.6x, for
a third of the CPU (the message-ids, random by design, are most of the bytes).

Decoding refuses, with a BatchError saying what and where: a body over the compressed cap, a body that
inflates past the inflated cap (checked while inflating, so a gzip bomb costs at most the cap), anything
that is not gzip or JSON, unknown or missing fields, numbers that are negative, above 2**63-1 or not
integers, and a ``to_id`` before ``from_id``.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, replace
from typing import Any

from usenet_indexer.indexing.fragment import (
    MAX_INT,
    Batch,
    FormatError,
    batch_from_dict,
    batch_to_dict,
    candidate_to_dict,
    fragment_to_dict,
)

WIRE_VERSION = 1
MAX_COMPRESSED = 64 * 1024 * 1024
MAX_INFLATED = 768 * 1024 * 1024  # a 1,000,000-header batch is ~110 MB of JSON


class BatchError(ValueError):
    """A posted batch that is refused; the message says why."""


@dataclass(frozen=True, slots=True)
class WireBatch:
    range_id: int
    epoch: int
    batch: Batch


def encode_batch(batch: Batch, range_id: int, epoch: int, level: int = 1) -> bytes:
    """The body to POST for ``batch`` of range ``range_id`` under lease epoch ``epoch``."""
    for name, value in (("range_id", range_id), ("epoch", epoch)):
        if not 0 <= value <= MAX_INT:
            raise BatchError(f"{name} {value} is out of range [0, {MAX_INT}]")
    # Written fragment by fragment into the compressor: the whole JSON text of a 1,000,000-header batch
    # (~110 MB, plus its ~300 MB of Python objects) never exists at once.
    head = batch_to_dict(replace(batch, fragments=(), candidates=()))
    del head["fragments"], head["candidates"]
    deflate = zlib.compressobj(level, zlib.DEFLATED, 31)  # gzip framing, mtime 0: same batch, same bytes
    out = [
        deflate.compress(
            (
                f'{{"version":{WIRE_VERSION},"range_id":{range_id},"epoch":{epoch},"batch":'
                + _dumps(head)[:-1]
                + ',"fragments":['
            ).encode()
        )
    ]
    for index, fragment in enumerate(batch.fragments):
        text = ("," if index else "") + _dumps(fragment_to_dict(fragment))
        out.append(deflate.compress(text.encode()))
    candidates = _dumps([candidate_to_dict(c) for c in batch.candidates])
    out.append(deflate.compress(f'],"candidates":{candidates}}}}}'.encode()))
    out.append(deflate.flush())
    return b"".join(out)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _refuse_constant(name: str) -> Any:
    raise BatchError(f"batch JSON holds {name}, which is not a number")


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise BatchError(f"batch JSON repeats the field {key!r}")
        out[key] = value
    return out


def decode_batch(
    data: bytes, max_compressed: int = MAX_COMPRESSED, max_inflated: int = MAX_INFLATED
) -> WireBatch:
    """The batch in a posted body; BatchError when it is refused."""
    if len(data) > max_compressed:
        raise BatchError(
            f"batch body of {len(data)} bytes is over the {max_compressed}-byte cap: post smaller batches "
            "(fewer articles per batch)"
        )
    inflater = zlib.decompressobj(wbits=31)  # gzip only
    try:
        text = inflater.decompress(data, max_inflated)
        if inflater.unconsumed_tail or (not inflater.eof and inflater.decompress(b"", 1)):
            raise BatchError(
                f"batch inflates past the {max_inflated}-byte cap; refused without reading it all"
            )
        if not inflater.eof:
            raise BatchError("batch body is a truncated gzip stream")
    except zlib.error as error:
        raise BatchError(f"batch body is not gzip: {error}") from None
    if inflater.unused_data:
        raise BatchError(f"batch body has {len(inflater.unused_data)} bytes after its gzip stream")
    try:
        document = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_no_repeats)
    except (ValueError, UnicodeDecodeError) as error:
        if isinstance(error, BatchError):
            raise
        raise BatchError(f"batch body is not JSON: {error}") from None
    if not isinstance(document, dict):
        raise BatchError("batch body must be a JSON object")
    expected = {"version", "range_id", "epoch", "batch"}
    unknown = set(document) - expected
    if unknown:
        raise BatchError(f"batch has unknown field(s) {', '.join(sorted(unknown))}")
    missing = expected - set(document)
    if missing:
        raise BatchError(f"batch lacks field(s) {', '.join(sorted(missing))}")
    if document["version"] != WIRE_VERSION:
        raise BatchError(
            f"batch version {document['version']!r} is not {WIRE_VERSION}: the worker and the coordinator "
            "run different releases; upgrade the older one"
        )
    ids = []
    for name in ("range_id", "epoch"):
        value = document[name]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT:
            raise BatchError(f"{name} {value!r} is not an integer in [0, {MAX_INT}]")
        ids.append(value)
    try:
        batch = batch_from_dict(document["batch"])
    except FormatError as error:
        raise BatchError(str(error)) from None
    return WireBatch(range_id=ids[0], epoch=ids[1], batch=batch)


__all__ = [
    "MAX_COMPRESSED",
    "MAX_INFLATED",
    "WIRE_VERSION",
    "BatchError",
    "WireBatch",
    "decode_batch",
    "encode_batch",
]

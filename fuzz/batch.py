"""Batch bodies a worker posts to the coordinator (wire/batch.py), through its public functions only:
``decode_batch`` may refuse with BatchError and nothing else, and a batch it accepts, encoded again with
``encode_batch``, decodes to the same batch. (Written against those two functions alone, so it holds
whatever the body's format; the gzip-aware mutator mutates what a gzip body holds when it is one.)

    scripts/uv.sh run python fuzz/batch.py -atheris_runs=100000
"""

from __future__ import annotations

import random
import struct
import zlib

import _harness
import atheris  # type: ignore[import-untyped]

with atheris.instrument_imports():
    from usenet_indexer.indexing.indexer import RangeIndexer
    from usenet_indexer.indexing.rules import default_rules
    from usenet_indexer.indexing.sample import chunk_text, overview_line, plan, post
    from usenet_indexer.wire.batch import MAGIC, BatchError, decode_batch, encode_batch

# Small caps, so the fuzzer meets them too.
MAX_COMPRESSED = 1 << 16
MAX_INFLATED = 1 << 20


def one(data: bytes) -> None:
    try:
        wire = decode_batch(data, max_compressed=MAX_COMPRESSED, max_inflated=MAX_INFLATED)
    except BatchError:
        return
    again = decode_batch(encode_batch(wire.batch, wire.range_id, wire.epoch))
    assert again == wire, "an accepted batch does not survive being encoded again"


def seeds() -> list[bytes]:
    rng = random.Random(3)
    posting = post(plan(rng, 4, "alt.binaries.fuzz", max_parts=8), rng, first=1)
    lines = [overview_line(a) for a in posting.articles]
    out = []
    for cut in (len(lines) // 2, len(lines)):
        indexer = RangeIndexer("alt.binaries.fuzz", 1, posting.last, 1, default_rules())
        indexer.add_text(chunk_text(lines[:cut]), posting.last + 1)
        indexer.finish()
        out.append(encode_batch(indexer.take(), range_id=7, epoch=3))
    empty = RangeIndexer("alt.binaries.fuzz", 1, 10, 1, default_rules())
    empty.add_text(b"", 11)
    empty.finish()
    out.append(encode_batch(empty.take(), range_id=0, epoch=0))
    # Heads that nest deep and dense (issue 15: 200,000 levels were a RecursionError, a head of empty
    # lists cost gigabytes): the mutator grows and splices them.
    for text in (
        b"[" * 5_000,
        b'{"range_id":1,"epoch":1,"batch":{"fragments":[' + b"[]," * 2_000 + b"[]]}}",
        b'{"range_id":1,"epoch":1,"batch":' + b'{"a":' * 500 + b"1" + b"}" * 501,
    ):
        head = zlib.compress(text, 9)
        out.append(MAGIC + struct.pack("<I", len(head)) + head)
    return out


if __name__ == "__main__":
    _harness.main(one, seeds(), mutator=_harness.gzip_aware_mutator)

"""Batch wire encoding: round trip, caps (a gzip bomb is refused early), strict fields and numbers."""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any

import pytest

from usenet_indexer.wire.batch import BatchError, decode_batch, encode_batch

from .drive import scenario, single_run

BATCH = single_run(scenario(4, releases=6))[0]


def doc() -> dict[str, Any]:
    return json.loads(gzip.decompress(encode_batch(BATCH, 12, 3)))


def body(d: Any) -> bytes:
    return gzip.compress(json.dumps(d).encode())


def test_round_trip() -> None:
    wire = decode_batch(encode_batch(BATCH, 12, 3))
    assert (wire.range_id, wire.epoch) == (12, 3)
    assert wire.batch == BATCH


def test_level_one_and_deterministic() -> None:
    assert encode_batch(BATCH, 1, 1) == encode_batch(BATCH, 1, 1)


def _set(d: dict[str, Any], path: str, value: Any) -> None:
    *head, last = path.split(".")
    node: Any = d
    for step in head:
        node = node[int(step)] if step.isdigit() else node[step]
    if last.isdigit():
        node[int(last)] = value
    else:
        node[last] = value


@pytest.mark.parametrize(
    ("path", "value", "match"),
    [
        ("surprise", 1, "unknown field"),
        ("batch.surprise", 1, "unknown field"),
        ("batch.fragments.0.surprise", 1, "unknown field"),
        ("batch.fragments.0.files.0.surprise", 1, "unknown field"),
        ("batch.from_id", -1, "out of range"),
        ("batch.to_id", 2**63, "out of range"),
        ("batch.headers", 1.5, "expected an integer"),
        ("batch.gaps", True, "expected an integer"),
        ("range_id", -4, "range_id"),
        ("epoch", 2**64, "epoch"),
        ("batch.to_id", 0, "before from_id"),
        ("batch.fragments.0.files.0.sizes.0", -1, "out of range"),
        ("batch.fragments.0.files.0.articles.0", 2**63, "expected integers"),
        ("batch.fragments.0.first_article", -2, "out of range"),
        ("version", 2, "version 2"),
        ("batch.fragments.0.key", "", "must not be empty"),
        ("batch.fragments.0.groups", ["b", "a"], "sorted"),
        ("batch.malformed", {"x": -1}, "out of range"),
    ],
)
def test_refused(path: str, value: Any, match: str) -> None:
    d = doc()
    _set(d, path, value)
    with pytest.raises(BatchError, match=match):
        decode_batch(body(d))


def test_missing_field() -> None:
    d = doc()
    del d["batch"]["gaps"]
    with pytest.raises(BatchError, match="missing field"):
        decode_batch(body(d))


def test_column_lengths_and_ids_must_agree() -> None:
    d = doc()
    d["batch"]["fragments"][0]["files"][0]["sizes"].append(1)
    with pytest.raises(BatchError, match="differ in length"):
        decode_batch(body(d))
    d = doc()
    d["batch"]["fragments"][0]["files"][0]["message_ids"] += "\nextra"
    with pytest.raises(BatchError, match="message-ids for"):
        decode_batch(body(d))


def test_compressed_cap() -> None:
    data = encode_batch(BATCH, 1, 1)
    with pytest.raises(BatchError, match=r"over the \d+-byte cap"):
        decode_batch(data, max_compressed=len(data) - 1)


def test_gzip_bomb_is_refused_at_the_cap() -> None:
    # 1 GiB of zeros in ~1 MB of gzip: refused after inflating at most the cap.
    inflater = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\0" * (1 << 20)
    bomb = b"".join(inflater.compress(block) for _ in range(1024)) + inflater.flush()
    assert len(bomb) < 2 << 20
    with pytest.raises(BatchError, match="inflates past the 1048576-byte cap"):
        decode_batch(bomb, max_inflated=1 << 20)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"plain text", "not gzip"),
        (gzip.compress(b"{not json"), "not JSON"),
        (gzip.compress(b"[1, 2]"), "JSON object"),
        (gzip.compress(b'{"a": NaN}'), "not a number"),
        (gzip.compress(b'{"a": 1, "a": 2}'), "repeats"),
        (gzip.compress(b"{}")[:-5], "truncated"),
        (gzip.compress(b"{}") + b"trailing", "after its gzip stream"),
    ],
)
def test_not_a_batch(data: bytes, match: str) -> None:
    with pytest.raises(BatchError, match=match):
        decode_batch(data)


def test_encode_refuses_bad_ids() -> None:
    with pytest.raises(BatchError):
        encode_batch(BATCH, -1, 0)

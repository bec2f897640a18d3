"""Batch wire encoding (version 3): round trip, the blobs the catalog keeps, caps (a zlib bomb in the
head or in a blob is refused early), strict fields, numbers and columns, and any cut of a body refused."""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import replace
from typing import Any

import pytest

from usenet_indexer import accelerator
from usenet_indexer.indexing import pack_segments
from usenet_indexer.indexing.fragment import FileFragment, int_array
from usenet_indexer.wire.batch import MAGIC, BatchError, decode_batch, encode_batch

from .drive import scenario, single_run

BATCH = single_run(scenario(4, releases=6))[0]


@pytest.fixture(autouse=True, params=["native", "pure"])
def blob_checks(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test on both paths of the blob checks: the C accelerator's and the pure-Python one."""
    if request.param == "pure":
        monkeypatch.setattr(accelerator, "speedups", None)
    elif accelerator.speedups is None:
        pytest.skip(f"the C accelerator is not built: {accelerator.REASON}")
    return str(request.param)


def split(data: bytes) -> tuple[dict[str, Any], list[bytes]]:
    """A body's head (as JSON) and its blobs."""
    assert data[:4] == MAGIC
    at = 4
    fields = []
    while at < len(data):
        (length,) = struct.unpack_from("<I", data, at)
        fields.append(data[at + 4 : at + 4 + length])
        at += 4 + length
    return json.loads(zlib.decompress(fields[0])), fields[1:]


def assemble(head: Any, blobs: list[bytes], raw_head: bytes | None = None) -> bytes:
    packed = zlib.compress(raw_head if raw_head is not None else json.dumps(head).encode())
    out = [MAGIC, struct.pack("<I", len(packed)), packed]
    for blob in blobs:
        out += [struct.pack("<I", len(blob)), blob]
    return b"".join(out)


def parts() -> tuple[dict[str, Any], list[bytes]]:
    return split(encode_batch(BATCH, 12, 3))


def test_round_trip() -> None:
    wire = decode_batch(encode_batch(BATCH, 12, 3))
    assert (wire.range_id, wire.epoch) == (12, 3)
    assert wire.batch == BATCH


def test_the_blobs_are_the_catalogs_segment_blobs() -> None:
    wire = decode_batch(encode_batch(BATCH, 12, 3))
    assert len(wire.blobs) == len(BATCH.fragments) > 0
    for blob, fragment in zip(wire.blobs, BATCH.fragments, strict=True):
        assert blob == pack_segments(fragment.files, level=1)


def test_each_fragment_carries_the_category_the_coordinator_would_find() -> None:
    """Issue 17: the worker categorizes, the coordinator stores a new release in that category; what it
    sends is what the coordinator finds for the release as it names it (check_authority)."""
    from usenet_indexer.indexing import categorize, clean_name

    wire = decode_batch(encode_batch(BATCH, 12, 3))
    assert len(wire.categories) == len(BATCH.fragments) > 0
    for category, fragment in zip(wire.categories, BATCH.fragments, strict=True):
        found = categorize(clean_name(fragment.collection), [f.name for f in fragment.files])
        assert category == replace(found, title=None)


def test_a_head_without_categories_is_read_and_left_to_the_coordinator() -> None:
    head, blobs = parts()
    for fragment in head["batch"]["fragments"]:
        del fragment["category"]
    wire = decode_batch(assemble(head, blobs))
    assert wire.batch == BATCH
    assert wire.categories == (None,) * len(BATCH.fragments)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ([9999, None, None, None, None, None], "not a category id"),
        ([True, None, None, None, None, None], "not a category id"),
        ("5040", "expected \\[id"),
        ([5040, None, None, None, None], "expected \\[id"),
        ([5040, -1, None, None, None, None], "season"),
        ([5040, 1, 2**31, None, None, None], "episode"),
        ([5040, 1, 2, 1.5, None, None], "episode_last"),
        ([2040, None, None, None, False, None], "year"),
        ([2040, None, None, None, 2020, "x" * 17], "resolution"),
        ([2040, None, None, None, 2020, ""], "resolution"),
        ([2040, None, None, None, 2020, 1080], "resolution"),
    ],
)
def test_refused_categories(value: Any, match: str) -> None:
    head, blobs = parts()
    head["batch"]["fragments"][0]["category"] = value
    with pytest.raises(BatchError, match=r"fragments\[0\]\.category: .*" + match):
        decode_batch(assemble(head, blobs))


def test_deterministic() -> None:
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
        ("batch.fragments.0.files", [], "unknown field"),
        ("batch.from_id", -1, "out of range"),
        ("batch.to_id", 2**63, "out of range"),
        ("batch.headers", 1.5, "expected an integer"),
        ("batch.gaps", True, "expected an integer"),
        ("range_id", -4, "range_id"),
        ("epoch", 2**64, "epoch"),
        ("batch.to_id", 0, "before from_id"),
        ("batch.fragments.0.first_article", -2, "out of range"),
        ("batch.fragments.0.key", "", "must not be empty"),
        ("batch.fragments.0.groups", ["b", "a"], "sorted"),
        ("batch.malformed", {"x": -1}, "out of range"),
    ],
)
def test_refused_head(path: str, value: Any, match: str) -> None:
    head, blobs = parts()
    _set(head, path, value)
    with pytest.raises(BatchError, match=match):
        decode_batch(assemble(head, blobs))


def test_missing_field() -> None:
    head, blobs = parts()
    del head["batch"]["gaps"]
    with pytest.raises(BatchError, match="missing field"):
        decode_batch(assemble(head, blobs))


FILES = BATCH.fragments[0].files
LONGEST = max(range(len(FILES)), key=lambda i: len(FILES[i].parts))


def _file(**change: Any) -> FileFragment:
    """The first fragment's file with the most parts, changed."""
    return replace(FILES[LONGEST], **change)


@pytest.mark.parametrize(
    ("file", "match"),
    [
        (_file(sizes=int_array([1] * 99)), "segment blob"),  # a column longer than the count says
        (_file(message_ids=_file().message_ids + b"\nextra"), "other message-ids"),
        (_file(message_ids=_file().message_ids.replace(b"\n", b"\n\n", 1)[:-1]), "empty message-id|other"),
        (_file(sizes=int_array([-1] * len(_file().parts))), "out of range"),
        (_file(parts=int_array(reversed(_file().parts))), "strictly ascending"),
        (_file(parts=int_array([0] * len(_file().parts))), "strictly ascending"),
        (_file(index=-3), "out of range"),
        (_file(name=""), "name"),
        (_file(message_ids=b"\xff" + _file().message_ids), "UTF-8"),
    ],
)
def test_refused_columns(file: FileFragment, match: str) -> None:
    head, blobs = parts()
    blobs[0] = pack_segments([file if i == LONGEST else f for i, f in enumerate(FILES)])
    with pytest.raises(BatchError, match=match):
        decode_batch(assemble(head, blobs))


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda blobs: blobs[:-1], "truncated before"),
        (lambda blobs: [*blobs, blobs[0]], "after its last segment blob"),
        (lambda blobs: [b"not zlib", *blobs[1:]], "does not inflate"),
        (lambda blobs: [zlib.compress(b"UIS9\0\0\0\0"), *blobs[1:]], "not a segment blob"),
        (lambda blobs: [blobs[0][:-3], *blobs[1:]], "truncated"),
        (lambda blobs: [blobs[0] + b"x", *blobs[1:]], "after its zlib stream"),
    ],
)
def test_refused_blobs(change: Any, match: str) -> None:
    head, blobs = parts()
    with pytest.raises(BatchError, match=match):
        decode_batch(assemble(head, change(blobs)))


@pytest.mark.slow
def test_every_cut_of_a_body_is_refused() -> None:
    data = encode_batch(BATCH, 1, 1)
    for end in range(len(data)):
        with pytest.raises(BatchError):
            decode_batch(data[:end])


def test_compressed_cap() -> None:
    data = encode_batch(BATCH, 1, 1)
    with pytest.raises(BatchError, match=r"over the \d+-byte cap"):
        decode_batch(data, max_compressed=len(data) - 1)


def _bomb() -> bytes:
    # 1 GiB of zeros in ~1 MB of zlib.
    deflate = zlib.compressobj(9)
    block = b"\0" * (1 << 20)
    return b"".join(deflate.compress(block) for _ in range(1024)) + deflate.flush()


@pytest.mark.slow
def test_a_zlib_bomb_in_the_head_is_refused_at_the_cap() -> None:
    bomb = _bomb()
    body = MAGIC + struct.pack("<I", len(bomb)) + bomb
    with pytest.raises(BatchError, match="inflates past the 1048576-byte cap"):
        decode_batch(body, max_inflated=1 << 20)


@pytest.mark.slow
def test_a_zlib_bomb_in_a_blob_is_refused_at_the_cap() -> None:
    head, blobs = parts()
    with pytest.raises(BatchError, match="inflates past"):
        decode_batch(assemble(head, [_bomb(), *blobs[1:]]), max_inflated=1 << 20)


def test_the_cap_counts_the_head_and_every_blob_together() -> None:
    data = encode_batch(BATCH, 1, 1)
    (head_length,) = struct.unpack_from("<I", data, 4)
    _head, blobs = split(data)
    inflated = len(zlib.decompress(data[8 : 8 + head_length])) + sum(len(zlib.decompress(b)) for b in blobs)
    decode_batch(data, max_inflated=inflated + 64)
    with pytest.raises(BatchError, match="inflates past"):
        decode_batch(data, max_inflated=inflated - 1)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"plain text", "does not start with"),
        (b"\x1f\x8b\x08\x00" + b"\0" * 20, "does not start with"),  # a version 1 (gzip) body
        (MAGIC + struct.pack("<I", 3) + b"abc", "does not inflate"),
        (assemble(None, [], b"{not json"), "not JSON"),
        (assemble(None, [], b"[1, 2]"), "JSON object"),
        (assemble(None, [], b'{"a": NaN}'), "not a number"),
        (assemble(None, [], b'{"a": 1, "a": 2}'), "repeats"),
        (MAGIC + struct.pack("<I", 99) + b"short", "truncated"),
    ],
)
def test_not_a_batch(data: bytes, match: str) -> None:
    with pytest.raises(BatchError, match=match):
        decode_batch(data)


def test_encode_refuses_bad_ids() -> None:
    with pytest.raises(BatchError):
        encode_batch(BATCH, -1, 0)


def test_the_checked_fragment_keeps_every_field_but_its_name() -> None:
    """check_authority builds the renamed fragment field by field (wire/batch.py ``_named``: replace()
    cost a quarter of it): a field it does not pass would fall back to its default unseen. Every field
    set away from its default, the result must be replace()'s; a new field fails the list below until
    ``_named`` passes it."""
    from dataclasses import fields

    from usenet_indexer.indexing.fragment import ReleaseFragment
    from usenet_indexer.indexing.naming import looks_obfuscated
    from usenet_indexer.wire.batch import _named

    assert [f.name for f in fields(ReleaseFragment)] == [
        "key", "name", "poster", "groups", "file_total", "first_article", "first_date", "last_article",
        "last_date", "obfuscated", "request_id", "files", "collection",
    ]  # fmt: skip
    fragment = ReleaseFragment(
        key="k", name="old", poster="p", groups=("a.b", "c.d"), file_total=3, first_article=5,
        first_date=100, last_article=9, last_date=200, obfuscated=True, request_id="42",
        files=(_file(),), collection="Posted Name",
    )  # fmt: skip
    assert _named(fragment, "New.Name") == replace(
        fragment, name="New.Name", obfuscated=looks_obfuscated("New.Name")
    )

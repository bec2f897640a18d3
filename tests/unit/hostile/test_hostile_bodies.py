"""Hostile bodies the coordinator reads from the network: window snapshots and batch bodies, fuzzed.
Each may only ever be refused with its own error, never crash the reader, and a gzip bomb stops at
the cap without being inflated whole."""

from __future__ import annotations

import contextlib
import gzip
import json
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.indexing.drive import scenario, single_run
from usenet_indexer.indexing.window import Window, WindowError
from usenet_indexer.wire.batch import MAGIC, BatchError, decode_batch, encode_batch

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_garbage_snapshots_are_refused_with_window_error(data: bytes) -> None:
    for candidate in (data, gzip.compress(data, mtime=0)):
        with contextlib.suppress(WindowError):
            Window.restore(candidate)


@pytest.mark.fuzz
@settings(max_examples=300, deadline=None)
@given(json_values)
def test_snapshots_of_any_json_are_refused_or_restored(value: object) -> None:
    with contextlib.suppress(WindowError):
        Window.restore(gzip.compress(json.dumps(value).encode(), mtime=0))


def _framed(head: bytes, *blobs: bytes) -> bytes:
    fields = [zlib.compress(head), *blobs]
    return MAGIC + b"".join(struct.pack("<I", len(f)) + f for f in fields)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_garbage_batch_bodies_are_refused_with_batch_error(data: bytes) -> None:
    for candidate in (data, gzip.compress(data, mtime=0), MAGIC + data, _framed(data), _framed(b"{}", data)):
        with pytest.raises(BatchError):
            decode_batch(candidate)


@pytest.mark.fuzz
@settings(max_examples=300, deadline=None)
@given(json_values)
def test_batch_bodies_of_any_json_are_refused(value: object) -> None:
    with pytest.raises(BatchError):
        decode_batch(_framed(json.dumps(value).encode()))


VALID = encode_batch(single_run(scenario(9, releases=4))[0], 5, 2)


@settings(max_examples=500, deadline=None)
@given(st.integers(0, len(VALID) - 1), st.integers(1, 255))
def test_a_batch_body_with_any_byte_changed_is_refused_or_read_whole(at: int, flip: int) -> None:
    # zlib's checksum guards the head and each blob; the frame lengths are only guarded by the structure
    # around them: either way a damaged body is refused with BatchError, or (a change that happens to
    # leave a valid batch) read as one — never another exception.
    damaged = bytearray(VALID)
    damaged[at] ^= flip
    with contextlib.suppress(BatchError):
        decode_batch(bytes(damaged))


@pytest.mark.slow
@pytest.mark.parametrize("reader", ["batch", "snapshot"])
def test_a_gzip_bomb_stops_at_the_cap(reader: str) -> None:
    bomb = gzip.compress(b"\0" * (200 << 20), compresslevel=9, mtime=0)  # 200 MB of zeros in ~200 KB
    # The readers inflate with a max_length and refuse when input is left over: "past the cap" is only
    # said after inflating no more than the cap.
    if reader == "batch":
        zbomb = zlib.compress(b"\0" * (200 << 20), 9)
        with pytest.raises(BatchError, match="cap"):
            decode_batch(MAGIC + struct.pack("<I", len(zbomb)) + zbomb, max_inflated=8 << 20)
    else:
        with pytest.raises(WindowError, match="inflates past"):
            Window.restore(bomb, max_inflated=8 << 20)


# -- what a hostile body may cost (issue 15) -------------------------------------------------------------

# The coordinator's memory for one body: at most this many times its size, plus a little.
MEMORY_PER_BODY_BYTE = 256
MEMORY_SLACK = 8 << 20


def _head_body(text: bytes, level: int = 9) -> bytes:
    head = zlib.compress(text, level)
    return MAGIC + struct.pack("<I", len(head)) + head


def _peak_while_refused(body: bytes) -> int:
    """Bytes allocated at the peak while ``decode_batch`` refuses ``body`` (tracemalloc)."""
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(BatchError):
            decode_batch(body)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


HOSTILE = {
    # 75 MB of empty lists in 73 KB: 1.95 GB of coordinator memory before it was refused.
    "empty lists": b'{"range_id":1,"epoch":1,"batch":{"fragments":[' + b"[]," * 25_000_000 + b"[]]}}",
    # 200,000 levels of nesting in a few hundred bytes: a RecursionError, answered 500.
    "deep nesting": b"[" * 200_000 + b"]" * 200_000,
    # Dense but shallow: a list per 12 bytes, as dense as the cap on inflating allows.
    "dense lists": b'{"range_id":1,"epoch":1,"batch":{"fragments":[' + b'["aaaaaaa"],' * 200_000 + b"[]]}}",
    # Strings: each small one a Python object of ~50 bytes.
    "many strings": b'{"range_id":1,"epoch":1,"batch":{"x":[' + b'"a",' * 2_000_000 + b'"a"]}}',
    # Random ones, which compress as little as a real head does: parsed whole, then refused.
    "random strings": b'{"range_id":1,"epoch":1,"batch":{"x":['
    + b",".join(b'"%06x"' % (n * 2_654_435_761 % 2**24) for n in range(300_000))
    + b"]}}",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_head_costs_at_most_a_small_multiple_of_its_body(name: str) -> None:
    body = _head_body(HOSTILE[name])
    peak = _peak_while_refused(body)
    assert peak <= MEMORY_PER_BODY_BYTE * len(body) + MEMORY_SLACK, (
        f"{name}: {peak:,} bytes for a body of {len(body):,}"
    )


def test_a_real_batch_is_well_inside_the_bounds() -> None:
    batch = single_run(scenario(3, releases=60))[0]
    assert decode_batch(encode_batch(batch, 5, 2)).batch == batch


def test_the_coordinator_makes_keys_and_names_and_checks_candidates() -> None:
    """Issue 15.2: what a batch may claim is checked against its own fields and its lease."""
    from dataclasses import replace

    from tests.unit.indexing.drive import GROUP
    from usenet_indexer.indexing import ProbeCandidate
    from usenet_indexer.wire.batch import check_authority

    batch = single_run(scenario(4, releases=6))[0]
    low, high = batch.from_id, batch.to_id
    assert check_authority(batch, group=GROUP, low=low, high=high) == batch  # the indexer's own: as is
    # Issue 16: the key holds no group (a cross-post is one release), but a fragment names its lease's.
    with pytest.raises(BatchError, match="do not hold this lease's group"):
        check_authority(batch, group="alt.binaries.elsewhere", low=low, high=high)
    forged = replace(batch, fragments=(replace(batch.fragments[0], key="0" * 32),), candidates=())
    with pytest.raises(BatchError, match="makes release keys itself"):
        check_authority(forged, group=GROUP, low=low, high=high)
    renamed = replace(batch, fragments=(replace(batch.fragments[0], name="Something.Else"),), candidates=())
    assert (
        check_authority(renamed, group=GROUP, low=low, high=high).fragments[0].name == batch.fragments[0].name
    )
    with pytest.raises(BatchError, match="outside this lease"):
        check_authority(batch, group=GROUP, low=low + 1, high=high)
    fragment = batch.fragments[0]
    own = fragment.files[0].message_id_list()[0]
    fine = ProbeCandidate(fragment.key, fragment.name, own, None)
    assert check_authority(replace(batch, candidates=(fine,)), group=GROUP, low=low, high=high)
    foreign = ProbeCandidate(fragment.key, fragment.name, "someone-else@post", None)
    with pytest.raises(BatchError, match=r"candidates\[0\]: message-id"):
        check_authority(replace(batch, candidates=(foreign,)), group=GROUP, low=low, high=high)
    # A release a lane's window still holds: checked when probed (tests/integration/catalog/test_probe.py).
    elsewhere = ProbeCandidate("0" * 32, fragment.name, own, None)
    assert check_authority(replace(batch, candidates=(elsewhere,)), group=GROUP, low=low, high=high)


def test_a_candidates_message_id_is_a_whole_segment_id_of_its_release() -> None:
    """The check searches each file's joined ids (issue 17): a part of an id, two ids with the newline
    between them, or a string that is no UTF-8 is not a segment; every real id is."""
    from dataclasses import replace

    from tests.unit.indexing.drive import GROUP
    from usenet_indexer.indexing import ProbeCandidate
    from usenet_indexer.wire.batch import check_authority

    batch = single_run(scenario(4, releases=6))[0]
    low, high = batch.from_id, batch.to_id
    fragment = next(f for f in batch.fragments if any(len(file.parts) > 1 for file in f.files))

    def check(mid: str) -> None:
        candidate = ProbeCandidate(fragment.key, fragment.name, mid, None)
        check_authority(replace(batch, candidates=(candidate,)), group=GROUP, low=low, high=high)

    ids = [mid for file in fragment.files for mid in file.message_id_list()]
    for mid in ids:
        check(mid)
    first, second = next(file.message_id_list()[:2] for file in fragment.files if len(file.parts) > 1)
    for wrong in (first[1:], first[:-1], f"{first}\n{second}", first + "\ud800", "\ud800"):
        with pytest.raises(BatchError, match=r"candidates\[0\]: message-id"):
            check(wrong)


def test_a_password_candidate_names_its_own_archive_article_and_travels_the_wire() -> None:
    """Issue 16: a password probe's candidate (no PAR2, an archive's article) survives the wire, and its
    article must be one of its release's segments; a PAR2 message-id left empty is refused without it."""
    from dataclasses import replace

    from tests.unit.indexing.drive import GROUP
    from usenet_indexer.indexing import ProbeCandidate
    from usenet_indexer.wire.batch import check_authority

    batch = single_run(scenario(4, releases=6))[0]
    low, high = batch.from_id, batch.to_id
    fragment = batch.fragments[0]
    own = fragment.files[0].message_id_list()[0]
    locked = ProbeCandidate(fragment.key, fragment.name, "", None, archive_message_id=own)
    sent = replace(batch, candidates=(locked,))
    assert decode_batch(encode_batch(sent, 1, 1)).batch.candidates == (locked,)
    assert check_authority(sent, group=GROUP, low=low, high=high).candidates == (locked,)
    foreign = replace(locked, archive_message_id="someone-else@post")
    with pytest.raises(BatchError, match=r"candidates\[0\]: message-id"):
        check_authority(replace(batch, candidates=(foreign,)), group=GROUP, low=low, high=high)
    with pytest.raises(BatchError, match="par2_message_id: must not be empty"):
        decode_batch(
            encode_batch(replace(batch, candidates=(replace(locked, archive_message_id=None),)), 1, 1)
        )

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

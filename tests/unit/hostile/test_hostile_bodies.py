"""Hostile bodies the coordinator reads from the network: window snapshots and batch bodies, fuzzed.
Each may only ever be refused with its own error, never crash the reader, and a gzip bomb stops at
the cap without being inflated whole."""

from __future__ import annotations

import contextlib
import gzip
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from usenet_indexer.indexing.window import Window, WindowError
from usenet_indexer.wire.batch import BatchError, decode_batch

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


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_garbage_batch_bodies_are_refused_with_batch_error(data: bytes) -> None:
    for candidate in (data, gzip.compress(data, mtime=0)):
        with pytest.raises(BatchError):
            decode_batch(candidate)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_batch_bodies_of_any_json_are_refused(value: object) -> None:
    with pytest.raises(BatchError):
        decode_batch(gzip.compress(json.dumps(value).encode(), mtime=0))


@pytest.mark.parametrize("reader", ["batch", "snapshot"])
def test_a_gzip_bomb_stops_at_the_cap(reader: str) -> None:
    bomb = gzip.compress(b"\0" * (200 << 20), compresslevel=9, mtime=0)  # 200 MB of zeros in ~200 KB
    # The readers inflate with a max_length and refuse when input is left over: "past the cap" is only
    # said after inflating no more than the cap.
    if reader == "batch":
        with pytest.raises(BatchError, match="cap"):
            decode_batch(bomb, max_inflated=8 << 20)
    else:
        with pytest.raises(WindowError, match="inflates past"):
            Window.restore(bomb, max_inflated=8 << 20)

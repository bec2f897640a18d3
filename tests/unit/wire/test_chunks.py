from __future__ import annotations

import contextlib
import gzip
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from usenet_indexer.wire.chunks import ChunkError, ChunkFormat, deflate_plain, inflate_chunk, pack_chunk


def raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush()


OVERVIEW = b"1\tsubject\tposter\tdate\t<id@x>\t\t100\t2\r\n" * 50


@pytest.mark.parametrize(
    ("fmt", "compress"),
    [
        (ChunkFormat.ZLIB, zlib.compress),
        (ChunkFormat.GZIP, gzip.compress),
        (ChunkFormat.RAW_DEFLATE, raw_deflate),
    ],
)
def test_every_format_inflates(fmt: ChunkFormat, compress) -> None:  # type: ignore[no-untyped-def]
    assert inflate_chunk(pack_chunk(fmt, compress(OVERVIEW))) == OVERVIEW


def test_plain_overview_is_deflated_here() -> None:
    assert inflate_chunk(deflate_plain(OVERVIEW)) == OVERVIEW


@given(st.binary(max_size=3000), st.integers(min_value=0, max_value=9))
def test_every_level_gives_a_zlib_chunk(data: bytes, level: int) -> None:
    # Levels 0 (stored), 1-3 (ISA-L) and 4-9 (libdeflate) all make the same kind of chunk.
    packed = deflate_plain(data, level)
    assert packed[:4] == b"UIC\x01"
    assert inflate_chunk(packed) == data == zlib.decompress(packed[4:])
    assert deflate_plain(bytearray(data), level) == packed


def test_level_zero_stores() -> None:
    # The prefetcher's tests fill a small spool cap with level 0: it must not compress.
    assert len(deflate_plain(OVERVIEW, 0)) > len(OVERVIEW)
    assert len(deflate_plain(OVERVIEW, 1)) < len(OVERVIEW) // 4


@pytest.mark.parametrize("cut", [5, 20, -1, -4])
def test_a_chunk_cut_short_is_refused(cut: int) -> None:
    data = deflate_plain(OVERVIEW)
    with pytest.raises(ChunkError):
        inflate_chunk(data[:cut])


def test_not_a_chunk_and_a_bomb_are_refused() -> None:
    with pytest.raises(ChunkError, match="no UIC header"):
        inflate_chunk(zlib.compress(OVERVIEW))
    with pytest.raises(ChunkError, match="unknown chunk format"):
        inflate_chunk(b"UIC\x09" + zlib.compress(OVERVIEW))
    with pytest.raises(ChunkError, match="past the 1000-byte cap"):
        inflate_chunk(deflate_plain(b"\0" * 10_000_000), max_size=1000)


@given(st.binary(max_size=300))
def test_garbage_never_raises_anything_but_chunk_error(data: bytes) -> None:
    for candidate in (data, b"UIC\x01" + data, b"UIC\x03" + data, b"UIC\x02" + data):
        with contextlib.suppress(ChunkError):
            inflate_chunk(candidate, max_size=10_000)

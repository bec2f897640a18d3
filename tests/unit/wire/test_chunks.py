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


def test_plain_overview_is_deflated_here_or_kept_plain() -> None:
    assert inflate_chunk(deflate_plain(OVERVIEW)) == OVERVIEW
    packed = deflate_plain(OVERVIEW, 0)
    assert packed == b"UIC\x04" + OVERVIEW + zlib.crc32(OVERVIEW).to_bytes(4, "big")
    assert inflate_chunk(packed) == OVERVIEW


@given(st.binary(max_size=3000), st.integers(min_value=1, max_value=9))
def test_every_level_gives_a_zlib_chunk(data: bytes, level: int) -> None:
    # Levels 1-3 (ISA-L) and 4-9 (libdeflate) make the same kind of chunk.
    packed = deflate_plain(data, level)
    assert packed[:4] == b"UIC\x01"
    assert inflate_chunk(packed) == data == zlib.decompress(packed[4:])
    assert deflate_plain(bytearray(data), level) == packed


@given(st.binary(max_size=3000))
def test_level_zero_keeps_it_plain(data: bytes) -> None:
    # The prefetcher's tests fill a small spool cap with level 0: it must not compress.
    packed = deflate_plain(data, 0)
    assert packed[:4] == b"UIC\x04" and len(packed) == len(data) + 8
    assert inflate_chunk(packed) == data
    assert deflate_plain(bytearray(data), 0) == packed
    assert len(deflate_plain(OVERVIEW, 1)) < len(OVERVIEW) // 4


@pytest.mark.parametrize("level", [0, 1])
@pytest.mark.parametrize("cut", [5, 20, -1, -4])
def test_a_chunk_cut_short_is_refused(cut: int, level: int) -> None:
    data = deflate_plain(OVERVIEW, level)
    with pytest.raises(ChunkError):
        inflate_chunk(data[:cut])


@pytest.mark.parametrize("at", [4, 100, -5, -1])
def test_a_plain_chunk_with_a_flipped_bit_is_refused(at: int) -> None:
    damaged = bytearray(deflate_plain(OVERVIEW, 0))
    damaged[at] ^= 0x10
    with pytest.raises(ChunkError, match="CRC-32"):
        inflate_chunk(bytes(damaged))


def test_not_a_chunk_and_a_bomb_are_refused() -> None:
    with pytest.raises(ChunkError, match="no UIC header"):
        inflate_chunk(zlib.compress(OVERVIEW))
    with pytest.raises(ChunkError, match="unknown chunk format"):
        inflate_chunk(b"UIC\x09" + zlib.compress(OVERVIEW))
    for level in (0, 1):
        with pytest.raises(ChunkError, match="past the 1000-byte cap"):
            inflate_chunk(deflate_plain(b"\0" * 10_000_000, level), max_size=1000)


@given(st.binary(max_size=300))
def test_garbage_never_raises_anything_but_chunk_error(data: bytes) -> None:
    for candidate in (data, *(b"UIC" + bytes([fmt]) + data for fmt in (1, 2, 3, 4))):
        with contextlib.suppress(ChunkError):
            inflate_chunk(candidate, max_size=10_000)

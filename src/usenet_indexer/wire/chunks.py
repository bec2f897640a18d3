"""A stored chunk: one span's overview, compressed, with a tag saying how.

The prefetcher keeps a compressed reply as the server sent it (XZVER is raw deflate, XFEATURE
COMPRESS GZIP a zlib or gzip stream) and deflates a plain one itself; a worker must know which it got.
Sniffing is not safe (raw deflate can begin like a zlib header), so the chunk says it::

    b"UIC" | u8 format (1 zlib, 2 gzip, 3 raw deflate) | compressed bytes

``inflate_chunk`` is where a damaged chunk is found: ChunkError sends it down the corrupt path.
"""

from __future__ import annotations

import enum

from usenet_indexer.compression import InflateError, inflate_whole, zlib_compress

MAGIC = b"UIC"
HEADER = len(MAGIC) + 1
DEFAULT_MAX_INFLATED = 512 << 20  # 20,000 overview lines are ~10 MB; far past that is not overview


class ChunkFormat(enum.IntEnum):
    ZLIB = 1
    GZIP = 2
    RAW_DEFLATE = 3


_WBITS = {ChunkFormat.ZLIB: 15, ChunkFormat.GZIP: 31, ChunkFormat.RAW_DEFLATE: -15}


class ChunkError(ValueError):
    """The chunk does not inflate: cut short, damaged, or not a chunk at all."""


def pack_chunk(fmt: ChunkFormat, compressed: bytes | bytearray) -> bytes:
    return MAGIC + bytes([fmt]) + compressed


def deflate_plain(overview: bytes | bytearray, level: int = 6) -> bytes:
    """A plain reply's overview, compressed here for the spool (a zlib stream either way).

    The prefetcher deflates every chunk that came plain (plain OVER, and COMPRESS DEFLATE, whose session
    stream cannot be cut into chunks) at ``spool_deflate_level`` (1): ~1.5 MB per 6,250 lines, 3 ms
    with libdeflate at level 1, 1.1 ms with ISA-L at level 1 for the same size (6 ms with zlib). With
    the news server on the same two cores that CPU is taken from the server (bench/fetch.py), so levels
    1-3 go to ISA-L; above them libdeflate (a smaller result, slower); 0 stores (no compression). All
    three release the GIL."""
    return pack_chunk(ChunkFormat.ZLIB, zlib_compress(overview, level))


def chunk_format(data: bytes) -> ChunkFormat:
    if len(data) < HEADER or data[: len(MAGIC)] != MAGIC:
        raise ChunkError("not a stored chunk (no UIC header)")
    try:
        return ChunkFormat(data[len(MAGIC)])
    except ValueError:
        raise ChunkError(f"unknown chunk format {data[len(MAGIC)]}") from None


def inflate_chunk(data: bytes | memoryview, max_size: int = DEFAULT_MAX_INFLATED) -> bytes:
    """The chunk's overview bytes; ChunkError when it is not whole and sound (cut short, past
    ``max_size``, or with bytes after its stream). ISA-L when installed: 2.4 times zlib's speed."""
    fmt = chunk_format(bytes(data[:HEADER]))
    try:
        return inflate_whole(memoryview(data)[HEADER:], max_size, _WBITS[fmt])
    except InflateError as error:
        raise ChunkError(f"chunk ({fmt.name.lower()}) {error}") from None

"""A stored chunk: one span's overview, compressed or plain, with a tag saying how.

The prefetcher keeps a compressed reply as the server sent it (XZVER is raw deflate, XFEATURE
COMPRESS GZIP a zlib or gzip stream) and deflates a plain one (``spool_deflate_level``, 1 by default)
or keeps it as it came (level 0); a worker must know which it got. Sniffing is not safe (raw deflate
can begin like a zlib header), so the chunk says it::

    b"UIC" | u8 format (1 zlib, 2 gzip, 3 raw deflate) | compressed bytes
    b"UIC" | u8 4 (plain) | overview bytes | u32 CRC-32 of them (big-endian)

``inflate_chunk`` is where a damaged chunk is found (a stream that does not inflate, a CRC that does
not match): ChunkError sends it down the corrupt path.

Why not plain by default (issue 17, measured on a 2-core VM): deflating a plain reply at ISA-L level 1
costs the prefetcher 0.36-0.63 µs a line and inflating it a worker 0.33-0.49; a plain chunk costs
0.18-0.33 and 0.24-0.30 (a CRC-32 each way, 0.03, and copies of 8 times the bytes, which are slow on
that machine), but writing it to the spool 0.1-0.17 µs a line more, and it crosses the stream 8 times
larger: no cheaper end to end there, and 30-60 MB more RSS for the coordinator at 1M headers.
"""

from __future__ import annotations

import enum

from usenet_indexer.compression import InflateError, crc32, inflate_whole, zlib_compress

MAGIC = b"UIC"
HEADER = len(MAGIC) + 1
DEFAULT_MAX_INFLATED = 512 << 20  # 20,000 overview lines are ~10 MB; far past that is not overview


class ChunkFormat(enum.IntEnum):
    ZLIB = 1
    GZIP = 2
    RAW_DEFLATE = 3
    PLAIN = 4


_WBITS = {ChunkFormat.ZLIB: 15, ChunkFormat.GZIP: 31, ChunkFormat.RAW_DEFLATE: -15}
_CRC = 4


class ChunkError(ValueError):
    """The chunk does not inflate: cut short, damaged, or not a chunk at all."""


def pack_chunk(fmt: ChunkFormat, compressed: bytes | bytearray) -> bytes:
    return MAGIC + bytes([fmt]) + compressed


def deflate_plain(overview: bytes | bytearray, level: int = 6) -> bytes:
    """A plain reply's overview as stored in the spool: a zlib stream at ``level`` (the prefetcher's
    ``spool_deflate_level``), or as it came at level 0 (with its CRC-32).

    Deflating costs the coordinator ~0.35 µs a line with ISA-L at level 1 (1.1 ms per 6,250 lines;
    libdeflate 3 ms, zlib 6 ms) and a worker ~0.39 to inflate, where a plain chunk costs a CRC-32
    each way; a deflated one is an eighth of the size (a spool on a slow disk, streams over a slow
    link). Levels 1-3 go to ISA-L, above them libdeflate (smaller, slower). All release the GIL."""
    if level <= 0:
        return b"".join((MAGIC, bytes([ChunkFormat.PLAIN]), overview, crc32(overview).to_bytes(_CRC, "big")))
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
    if fmt is ChunkFormat.PLAIN:
        view = memoryview(data)
        if len(view) < HEADER + _CRC:
            raise ChunkError("chunk (plain) is cut short: no CRC")
        overview = view[HEADER:-_CRC]
        if len(overview) > max_size:
            raise ChunkError(f"chunk (plain) of {len(overview)} bytes is past the {max_size}-byte cap")
        if crc32(overview) != int.from_bytes(view[-_CRC:], "big"):
            raise ChunkError("chunk (plain) does not match its CRC-32: damaged")
        return bytes(overview)
    try:
        return inflate_whole(memoryview(data)[HEADER:], max_size, _WBITS[fmt])
    except InflateError as error:
        raise ChunkError(f"chunk ({fmt.name.lower()}) {error}") from None

"""A stored chunk: one span's overview, compressed, with a tag saying how.

The prefetcher keeps a compressed reply as the server sent it (XZVER is raw deflate, XFEATURE
COMPRESS GZIP a zlib or gzip stream) and deflates a plain one itself; a worker must know which it got.
Sniffing is not safe (raw deflate can begin like a zlib header), so the chunk says it::

    b"UIC" | u8 format (1 zlib, 2 gzip, 3 raw deflate) | compressed bytes

``inflate_chunk`` is where a damaged chunk is found: ChunkError sends it down the corrupt path.
"""

from __future__ import annotations

import enum
import zlib

try:  # libdeflate (the MIT "deflate" package): the same zlib stream, ~2× faster and ~12% smaller
    import deflate as _libdeflate
except ImportError:  # pragma: no cover - an install without it falls back to the standard library
    _libdeflate = None  # type: ignore[assignment]
try:  # ISA-L (the PSF-licensed "isal" package): its levels 1-3 are ~2.7× faster than libdeflate's 1
    from isal import isal_zlib as _isal_zlib
except ImportError:  # pragma: no cover - an install without it uses libdeflate or the standard library
    _isal_zlib = None  # type: ignore[assignment]

MAGIC = b"UIC"
HEADER = len(MAGIC) + 1
_ISAL_MAX_LEVEL = 3  # ISA-L's levels are 0-3 (its 0 is a fast Huffman-only pass, not "stored")
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
    if level <= 0 or not overview:
        return pack_chunk(ChunkFormat.ZLIB, zlib.compress(overview, 0 if level <= 0 else level))
    if _isal_zlib is not None and level <= _ISAL_MAX_LEVEL:
        return pack_chunk(ChunkFormat.ZLIB, _isal_zlib.compress(overview, level))
    if _libdeflate is not None:
        return pack_chunk(ChunkFormat.ZLIB, _libdeflate.zlib_compress(overview, level))
    return pack_chunk(ChunkFormat.ZLIB, zlib.compress(overview, level))


def chunk_format(data: bytes) -> ChunkFormat:
    if len(data) < HEADER or data[: len(MAGIC)] != MAGIC:
        raise ChunkError("not a stored chunk (no UIC header)")
    try:
        return ChunkFormat(data[len(MAGIC)])
    except ValueError:
        raise ChunkError(f"unknown chunk format {data[len(MAGIC)]}") from None


def inflate_chunk(data: bytes | memoryview, max_size: int = DEFAULT_MAX_INFLATED) -> bytes:
    """The chunk's overview bytes; ChunkError when it is not whole and sound."""
    fmt = chunk_format(bytes(data[:HEADER]))
    inflater = zlib.decompressobj(_WBITS[fmt])
    try:
        out = inflater.decompress(memoryview(data)[HEADER:], max_size)
    except zlib.error as error:
        raise ChunkError(f"chunk does not inflate ({fmt.name.lower()}): {error}") from None
    if inflater.unconsumed_tail:
        raise ChunkError(f"chunk inflates to more than {max_size} bytes")
    if not inflater.eof:
        raise ChunkError(f"chunk is cut short ({fmt.name.lower()} stream has no end)")
    return out

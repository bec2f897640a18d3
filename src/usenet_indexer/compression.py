"""Deflate and inflate for every part (NNTP replies, spool chunks, batches, segment blobs): the fastest
library installed, one API.

- Inflating: ISA-L (the PSF-licensed "isal" package) when installed, else the standard library. A
  compressed NNTP session cost 0.48 µs per overview line to inflate with zlib, 0.30 with ISA-L
  (bench/fetch.py); a worker's chunk 0.87 against 0.36. Both raise their own error class: callers
  catch ``ERRORS``.
- Deflating (``zlib_compress``): ISA-L for levels 1-3 (its level 1: 2.7 to 3 times libdeflate's speed
  for about the same size), libdeflate (the MIT "deflate" package) above, zlib when neither is there;
  level 0 stores. All three release the GIL, so threads deflate beside the indexing.
- CRC-32 (``crc32``): ISA-L's when installed, the same values as ``zlib.crc32`` at about seven times its
  speed (0.04 against 0.28 µs per overview line of 295 bytes): the stream frames and plain spool
  chunks check every byte with it (issue 17).
"""

from __future__ import annotations

import zlib
from typing import Protocol, cast

__all__ = ["ERRORS", "InflateError", "Inflater", "crc32", "decompressobj", "inflate_whole", "zlib_compress"]


class Inflater(Protocol):
    """The part of ``zlib.decompressobj()`` that the readers use (ISA-L's has the same)."""

    @property
    def unused_data(self) -> bytes: ...

    @property
    def unconsumed_tail(self) -> bytes: ...

    @property
    def eof(self) -> bool: ...

    def decompress(self, data: bytes | bytearray | memoryview, max_length: int = 0, /) -> bytes: ...


try:
    from isal import isal_zlib as _isal_zlib
except ImportError:  # pragma: no cover - an install without isal inflates with zlib
    _isal_zlib = None  # type: ignore[assignment]
try:
    import deflate as _libdeflate
except ImportError:  # pragma: no cover - an install without it deflates with zlib
    _libdeflate = None  # type: ignore[assignment]

ISAL_MAX_LEVEL = 3  # ISA-L's levels are 0-3 (its 0 is a fast Huffman-only pass, not "stored")

# (isal's stub types its ``error`` as an instance; it is the class IsalError.)
ERRORS: tuple[type[Exception], ...] = (
    (zlib.error,) if _isal_zlib is None else (zlib.error, cast("type[Exception]", _isal_zlib.error))
)


def crc32(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """``zlib.crc32(data, value)``, with ISA-L when installed."""
    if _isal_zlib is not None:
        return _isal_zlib.crc32(data, value)
    return zlib.crc32(data, value)


def decompressobj(wbits: int) -> Inflater:
    """An inflater for ``wbits`` as zlib reads them (-15 raw, 15 zlib, 31 gzip, 47 either)."""
    if _isal_zlib is not None:
        return _isal_zlib.decompressobj(wbits)
    return zlib.decompressobj(wbits)


def zlib_compress(data: bytes | bytearray | memoryview, level: int) -> bytes:
    """``data`` as a zlib stream at ``level`` (0 stores; any inflater reads the result)."""
    if level <= 0 or not data:
        return zlib.compress(data, max(level, 0))
    if _isal_zlib is not None and level <= ISAL_MAX_LEVEL:
        return _isal_zlib.compress(data, level)
    if _libdeflate is not None:
        return bytes(_libdeflate.zlib_compress(data, level))
    return zlib.compress(data, level)


_KIND = {15: "zlib", 31: "gzip", -15: "deflate", 47: "zlib or gzip"}


class InflateError(ValueError):
    """Bytes from another machine that are not one whole stream within the cap; callers say whose."""


def inflate_whole(data: bytes | memoryview, max_inflated: int, wbits: int = 15) -> bytes:
    """``data`` inflated: exactly one whole stream, refused past ``max_inflated`` bytes (checked while
    inflating, so a bomb costs at most the cap), cut short, or followed by other bytes."""
    if wbits == 31 and bytes(data[:2]) != b"\x1f\x8b":
        # ISA-L reads a few bytes of garbage as the start of a gzip header and calls them truncated.
        raise InflateError("is not gzip (no gzip header)")
    inflater = decompressobj(wbits)
    try:
        out = inflater.decompress(data, max_inflated)
        if inflater.unconsumed_tail or (not inflater.eof and inflater.decompress(b"", 1)):
            raise InflateError(f"inflates past the {max_inflated}-byte cap; refused without reading it all")
    except ERRORS as error:
        raise InflateError(f"does not inflate: {error}") from None
    kind = _KIND.get(wbits, "compressed")
    if not inflater.eof:
        raise InflateError(f"is a truncated {kind} stream")
    if inflater.unused_data:
        raise InflateError(f"has {len(inflater.unused_data)} bytes after its {kind} stream")
    return out

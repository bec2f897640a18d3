"""The inflater of the protocol core: ISA-L's when installed, else the standard library's; one API.

Inflating is most of a compressed session's cost on our side (COMPRESS DEFLATE: 0.48 µs per overview
line with zlib, 0.30 with ISA-L, bench/fetch.py), and with the server on the same cores that CPU is
taken from the server. Both raise their own error class; callers catch ``ERRORS``.
"""

from __future__ import annotations

import zlib
from typing import Protocol, cast

__all__ = ["ERRORS", "Inflater", "decompressobj"]


class Inflater(Protocol):
    """The part of ``zlib.decompressobj()`` that the readers use (ISA-L's has the same)."""

    @property
    def unused_data(self) -> bytes: ...

    @property
    def unconsumed_tail(self) -> bytes: ...

    @property
    def eof(self) -> bool: ...

    def decompress(self, data: bytes, max_length: int = 0, /) -> bytes: ...


try:
    from isal import isal_zlib as _isal_zlib
except ImportError:  # pragma: no cover - an install without isal inflates with zlib
    _isal_zlib = None  # type: ignore[assignment]

# (isal's stub types its ``error`` as an instance; it is the class IsalError.)
ERRORS: tuple[type[Exception], ...] = (
    (zlib.error,) if _isal_zlib is None else (zlib.error, cast("type[Exception]", _isal_zlib.error))
)


def decompressobj(wbits: int) -> Inflater:
    """An inflater for ``wbits`` as zlib reads them (-15 raw, 15 zlib, 31 gzip, 47 either)."""
    if _isal_zlib is not None:
        return _isal_zlib.decompressobj(wbits)
    return zlib.decompressobj(wbits)

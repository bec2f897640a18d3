"""The events the protocol core hands out: frozen values, one per step of a reply.

A reply is one :class:`Response` (its status line), then for a multi-line reply any number of
:class:`Data` events and one :class:`EndOfData`. :data:`NEED_DATA` says "feed me more bytes";
:class:`ConnectionClosed` says the server closed the connection between replies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from usenet_indexer.nntp._commands import Command
from usenet_indexer.nntp.errors import error_for_reply

__all__ = ["NEED_DATA", "ConnectionClosed", "Data", "Encoding", "EndOfData", "Event", "NeedData", "Response"]

# How the bytes of a per-reply compressed body were encoded on the wire (after yEnc for XZVER):
# "zlib" (RFC 1950) or "gzip" (RFC 1952) for XFEATURE COMPRESS GZIP, "deflate" (raw, RFC 1951)
# for XZVER; "plain" when the reply was not compressed per reply (COMPRESS DEFLATE is per session:
# its replies are "plain" here, the stream was inflated before it was parsed).
Encoding = Literal["plain", "zlib", "gzip", "deflate"]


@dataclass(frozen=True, slots=True)
class Response:
    """A status line: the reply to ``command`` (``None`` for the greeting)."""

    code: int
    text: str
    multiline: bool
    command: Command | None = None

    @property
    def is_error(self) -> bool:
        return self.code >= 400

    def raise_for_error(self) -> None:
        """Raise the :mod:`~usenet_indexer.nntp.errors` class of this reply when it is an error."""
        if self.code >= 400:
            raise error_for_reply(self.code, self.text, str(self.command) if self.command else "greeting")


@dataclass(frozen=True, slots=True)
class Data:
    """A piece of a multi-line reply's body.

    ``data`` is plain text: dot-unstuffed, decompressed, CRLF line endings kept, the terminator
    removed; the pieces of a reply concatenate to its whole body. Pieces end at line boundaries
    except inside a line longer than the core's piece size.

    ``compressed`` is, for a reply compressed per reply (XFEATURE COMPRESS GZIP, XZVER), the
    compressed bytes this piece was inflated from, exactly as the server sent them (for XZVER:
    after yEnc decoding); concatenated they form one complete zlib/gzip/raw-deflate stream. Empty
    for an uncompressed reply.

    ``lines`` is the LF bytes in ``data`` when the reader counted them on its way (the C scan for
    dot lines counts them for free), else -1: the caller counts.

    A plain body gathered whole (``Command.whole``) comes as one Data whose ``data`` is the bytearray
    it was gathered in, handed over without a copy; every other piece is bytes.
    """

    data: bytes | bytearray
    compressed: bytes = b""
    lines: int = -1


@dataclass(frozen=True, slots=True)
class EndOfData:
    """The end of a multi-line reply; ``encoding`` names what ``Data.compressed`` held."""

    encoding: Encoding = "plain"


@dataclass(frozen=True, slots=True)
class ConnectionClosed:
    """The server closed the connection while no reply was outstanding."""


class NeedData:
    """The type of :data:`NEED_DATA`."""

    _instance: NeedData | None = None

    def __new__(cls) -> NeedData:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA = NeedData()

Event = Response | Data | EndOfData | ConnectionClosed

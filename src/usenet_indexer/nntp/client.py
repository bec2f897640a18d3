"""An asyncio NNTP client: one connection, driving the sans-I/O core over asyncio streams.

Connect with plain TCP, implicit TLS (NNTPS, port 563) or STARTTLS; certificates are verified
(``ssl.create_default_context``) unless the caller hands in its own context. Every read has a
timeout, so a reply that never ends raises :class:`NNTPTimeout` instead of hanging.

Overview comes two ways:
- :meth:`NNTPClient.over` streams plain overview lines (whole lines per piece), whatever the wire
  compression was;
- :meth:`NNTPClient.over_chunk` returns one :class:`OverviewChunk` for a range: the compressed bytes
  exactly as the server sent them when it compressed the reply (XFEATURE COMPRESS GZIP, XZVER), else
  the plain bytes, so the caller stores a compressed reply as is and deflates a plain one itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
import ssl
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from usenet_indexer.nntp import _commands as cmd
from usenet_indexer.nntp._commands import Command
from usenet_indexer.nntp._connection import NNTPConnection
from usenet_indexer.nntp._events import (
    ConnectionClosed,
    Data,
    Encoding,
    EndOfData,
    Event,
    NeedData,
    Response,
)
from usenet_indexer.nntp._readers import count_lines
from usenet_indexer.nntp._transport import ReadQueue
from usenet_indexer.nntp.errors import (
    CompressedReplyCorrupt,
    NNTPConnectionError,
    NNTPConnectionLost,
    NNTPError,
    NNTPProtocolError,
    NNTPReplyError,
    NNTPTimeout,
    NNTPTLSError,
)

__all__ = ["Compression", "GroupInfo", "NNTPClient", "OverviewChunk"]

# "auto", for one client: COMPRESS DEFLATE when advertised, else XFEATURE COMPRESS GZIP TERMINATOR when
# the server accepts it, else XZVER when it answers it, else plain OVER (XOVER when OVER is not
# advertised). The pool's "auto" gives each connection "auto" or "none", whichever it measured the
# faster for that server (nntp/choice.py).
Compression = Literal["auto", "deflate", "gzip", "gzip-terminator", "xzver", "none"]

_TCP_QUICKACK = getattr(socket, "TCP_QUICKACK", None)


class GroupInfo(NamedTuple):
    """GROUP's answer: the estimated article count and the low and high watermarks.

    (``articles``, not ``count``: a tuple already has a ``count`` method.)
    """

    articles: int
    low: int
    high: int


@dataclass(frozen=True, slots=True)
class OverviewChunk:
    """The overview of articles ``first``..``last`` as one blob.

    ``encoding`` "plain": ``data`` is the overview text (dot-unstuffed, CRLF lines). Otherwise ``data``
    is the compressed stream exactly as the server sent it: "zlib"/"gzip" (XFEATURE COMPRESS GZIP,
    inflate with wbits 15/31 or 47) or "deflate" (XZVER after yEnc decoding, raw: wbits -15). The
    client has already inflated it once to find its end and check it, so it is known to be whole.
    """

    first: int
    last: int
    encoding: Encoding
    data: bytes | bytearray  # a plain reply: the buffer it was gathered in (nntp/_readers.py)
    plain_size: int
    lines: int
    _plain: bytes | None = field(default=None, repr=False, compare=False)

    def plain(self) -> bytes:
        """The overview text, inflating ``data`` when it is compressed (as bytes: a copy of a gathered
        plain reply; the prefetcher deflates ``data`` itself)."""
        if self.encoding == "plain":
            return bytes(self.data)
        return inflate(self.encoding, self.data)

    def article_numbers(self) -> list[int]:
        """The article numbers present (the first field of each line), to record gaps."""
        return [int(line.split(b"\t", 1)[0]) for line in self.plain().split(b"\r\n") if line]


def inflate(encoding: Encoding, data: bytes | bytearray) -> bytes:
    """Decompress a chunk's ``data`` of the given encoding; raises CompressedReplyCorrupt/-Truncated."""
    wbits = {"zlib": zlib.MAX_WBITS | 32, "gzip": zlib.MAX_WBITS | 32, "deflate": -zlib.MAX_WBITS}.get(
        encoding
    )
    if wbits is None:
        return bytes(data)
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(data)
    except zlib.error as exc:
        raise CompressedReplyCorrupt(f"{encoding} data does not inflate: {exc}") from None
    if not inflater.eof:
        from usenet_indexer.nntp.errors import CompressedReplyTruncated

        raise CompressedReplyTruncated(f"{encoding} data ends before its compressed stream does")
    return out


class NNTPClient:
    """One NNTP connection. Use ``async with NNTPClient(...) as client:`` or ``connect()``/``close()``.

    Not safe for concurrent use by several tasks: one command at a time (the pool gives each task
    its own client).
    """

    def __init__(
        self,
        host: str,
        port: int = 119,
        *,
        ssl: bool = False,
        starttls: bool = False,
        ca_file: str | None = None,
        ssl_context: ssl.SSLContext | None = None,
        user: str | None = None,
        password: str | None = None,
        timeout: float = 30.0,
        connect_timeout: float | None = None,
        compression: Compression = "auto",
        cut_short_grace: float = 2.0,
    ) -> None:
        if ssl and starttls:
            raise ValueError("choose ssl (implicit TLS) or starttls, not both")
        if (user is None) != (password is None):
            raise ValueError("give both user and password, or neither")
        self.host = host
        self.port = port
        self.use_ssl = ssl
        self.use_starttls = starttls
        self.ca_file = ca_file
        self._ssl_context = ssl_context
        self.user = user
        self._password = password
        self.timeout = timeout
        self.connect_timeout = timeout if connect_timeout is None else connect_timeout
        self.compression: Compression = compression
        self.cut_short_grace = cut_short_grace
        self.capabilities: frozenset[str] = frozenset()
        self.current_group: str | None = None
        self.posting_allowed = False
        self._conn = NNTPConnection()
        self._transport: asyncio.Transport | None = None
        self._queue: ReadQueue | None = None
        self._eof_fed = False
        self._broken = False
        self._gzip_refused = False
        self._xzver_refused = False
        self._plain_only = False
        self.last_encoding: Encoding = "plain"  # of the last multi-line reply read

    # -- connection life -----------------------------------------------------------------------

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def connected(self) -> bool:
        return self._transport is not None and not self._broken

    @property
    def ready(self) -> bool:
        """Connected, healthy, and no reply outstanding: safe to hand to another task."""
        return self.connected and not self._conn.pending

    @property
    def session_compression(self) -> str:
        """What compresses this session's replies now: "deflate", "gzip", or "none"."""
        if self._conn.compress_deflate_active:
            return "deflate"
        return "gzip" if self._conn.gzip_active else "none"

    def _context(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            self._ssl_context = ssl.create_default_context(cafile=self.ca_file)
        return self._ssl_context

    async def __aenter__(self) -> NNTPClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> None:
        """Open the connection, read the greeting, set up TLS, log in, negotiate compression."""
        if self._transport is not None:
            raise RuntimeError(f"already connected to {self.where}")
        self._conn = NNTPConnection()
        self._broken = False
        self._eof_fed = False
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout):
                transport, self._queue = await loop.create_connection(
                    ReadQueue,
                    self.host,
                    self.port,
                    ssl=self._context() if self.use_ssl else None,
                    server_hostname=self.host if self.use_ssl else None,
                )
                assert isinstance(transport, asyncio.Transport)
                self._transport = transport
        except TimeoutError:
            raise NNTPTimeout(
                f"connecting to {self.where} took longer than {self.connect_timeout}s"
            ) from None
        except ssl.SSLCertVerificationError as exc:
            raise self._tls_error(exc) from None
        except ssl.SSLError as exc:
            raise NNTPTLSError(f"TLS with {self.where} failed: {exc}") from None
        except OSError as exc:
            raise NNTPConnectionError(f"cannot connect to {self.where}: {exc}") from None
        try:
            self._tune_socket()
            greeting = await self._response()
            greeting.raise_for_error()
            self.posting_allowed = greeting.code == 200
            if self.use_starttls:
                await self._starttls()
            await self._read_capabilities()
            if self.user is not None:
                await self._authenticate()
                await self._read_capabilities()
            if "READER" not in self.capabilities and "MODE-READER" in self.capabilities:
                await self.simple(cmd.mode_reader())
            if self.compression in ("auto", "deflate") and not self._plain_only:
                await self._compress_deflate()
        except BaseException:
            await self.abort()
            raise

    def _tls_error(self, exc: ssl.SSLCertVerificationError) -> NNTPTLSError:
        where = f"the CA file {self.ca_file}" if self.ca_file else "the system's trusted CAs"
        return NNTPTLSError(
            f"the TLS certificate of {self.where} is not trusted ({exc.verify_message}; checked against "
            f"{where}): give the server's CA as ca_file, or fix the server's certificate"
        )

    def _tune_socket(self) -> None:
        assert self._transport is not None
        sock = self._transport.get_extra_info("socket")
        if sock is None:
            return
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _quickack(self) -> None:
        # INN2 writes a reply's status line and its body separately; with delayed ACKs on our side
        # every small multi-line reply then waits ~40 ms for our ACK (Nagle on the server). Linux
        # leaves quick-ACK mode by itself, so it is set again before each reply is read.
        if _TCP_QUICKACK is None or self._transport is None:
            return
        sock = self._transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, _TCP_QUICKACK, 1)

    async def _starttls(self) -> None:
        response = await self.simple(cmd.starttls())
        if response.code != 382:
            raise NNTPProtocolError(f"STARTTLS answered {response.code} {response.text!r}, expected 382")
        assert self._transport is not None
        assert self._queue is not None
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout):
                transport = await loop.start_tls(
                    self._transport, self._queue, self._context(), server_hostname=self.host
                )
            if transport is None:  # pragma: no cover - only for a closed transport
                raise NNTPConnectionLost(f"{self.where} closed the connection during STARTTLS")
            self._transport = transport
            self._queue.transport = transport
        except TimeoutError:
            raise NNTPTimeout(
                f"the TLS handshake with {self.where} took longer than {self.connect_timeout}s"
            ) from None
        except ssl.SSLCertVerificationError as exc:
            raise self._tls_error(exc) from None
        except (ssl.SSLError, OSError) as exc:
            raise NNTPTLSError(f"TLS after STARTTLS with {self.where} failed: {exc}") from None

    async def _read_capabilities(self) -> None:
        try:
            lines = await self.multiline(cmd.capabilities())
        except NNTPReplyError:
            self.capabilities = frozenset()  # a pre-RFC 3977 server: no CAPABILITIES
            return
        caps: set[str] = set()
        for line in lines.decode("utf-8", "replace").split("\r\n"):
            words = line.strip().upper().split()
            if words:
                caps.add(words[0])
                caps.add(" ".join(words))
                caps.update(f"{words[0]} {word}" for word in words[1:])
        self.capabilities = frozenset(caps)

    async def _authenticate(self) -> None:
        assert self.user is not None
        assert self._password is not None
        response = await self.simple(cmd.authinfo_user(self.user))
        if response.code == 381:
            response = await self.simple(cmd.authinfo_pass(self._password))
        if response.code != 281:
            raise NNTPProtocolError(f"AUTHINFO answered {response.code} {response.text!r}, expected 281")

    async def _compress_deflate(self) -> None:
        if "COMPRESS DEFLATE" not in self.capabilities:
            return
        try:
            await self.simple(cmd.compress_deflate())
        except NNTPReplyError:
            return  # e.g. 403 "unable to activate compression": go on uncompressed

    async def close(self) -> None:
        """Send QUIT (if the connection is healthy) and close it."""
        if self._transport is None:
            return
        if not self._broken and not self._conn.pending:
            with contextlib.suppress(NNTPError, OSError):
                async with asyncio.timeout(min(self.timeout, 5.0)):
                    await self.simple(cmd.quit())
        await self.abort()

    async def abort(self) -> None:
        """Close the connection at once, without QUIT."""
        transport, self._transport = self._transport, None
        queue, self._queue = self._queue, None
        self._broken = True
        self.current_group = None
        if transport is None:
            return
        transport.close()
        if queue is not None:
            # Wait for connection_lost, so no transport outlives the client (ResourceWarning).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(2.0):
                    while not queue.eof:
                        await queue.wait()
                        queue.take()

    # -- the exchange --------------------------------------------------------------------------

    async def _send(self, command: Command) -> None:
        transport = self._transport
        if transport is None or self._broken or transport.is_closing():
            self._broken = True
            raise NNTPConnectionLost(f"not connected to {self.where} (send {command})")
        # Commands are a few dozen bytes and each reply is awaited: no drain() needed.
        transport.write(self._conn.send(command))
        self._quickack()

    async def _event(self) -> Event:
        conn = self._conn
        while True:
            try:
                event = conn.next_event()
            except NNTPError:
                self._broken = True
                raise
            if not isinstance(event, NeedData):
                return event
            queue = self._queue
            if queue is None:
                raise NNTPConnectionLost(f"not connected to {self.where}")
            chunks = queue.take()
            if chunks:
                for chunk in chunks:
                    conn.receive_data(chunk)
                continue
            if queue.eof:
                if self._eof_fed:  # pragma: no cover - the core raises or reports the close first
                    raise NNTPConnectionLost(f"{self.where} closed the connection")
                self._eof_fed = True
                conn.receive_data(b"")
                continue
            suspect = conn.suspect_cut_short
            wait = min(self.timeout, self.cut_short_grace) if suspect else self.timeout
            try:
                async with asyncio.timeout(wait):
                    await queue.wait()
            except TimeoutError:
                self._broken = True
                if suspect:
                    raise conn.declare_cut_short() from None
                raise NNTPTimeout(
                    f"{self.where} sent nothing for {wait}s while a reply was due; the connection is dropped"
                ) from None

    async def _response(self) -> Response:
        event = await self._event()
        if isinstance(event, ConnectionClosed):
            self._broken = True
            raise NNTPConnectionLost(f"{self.where} closed the connection")
        if not isinstance(event, Response):
            raise NNTPProtocolError(f"expected a status line from {self.where}, got {event!r}")
        return event

    async def simple(self, command: Command) -> Response:
        """Send a command with a single-line reply; raises the error class of an error reply."""
        await self._send(command)
        response = await self._response()
        if response.multiline:
            await self._drain_body()
        response.raise_for_error()
        return response

    async def _drain_body(self) -> None:
        while not isinstance(await self._event(), EndOfData):
            pass

    async def stream(self, command: Command) -> AsyncIterator[Data]:
        """Send a command with a multi-line reply and yield its body's Data events.

        Raises the error class of an error reply before yielding anything. Leaving the iteration
        early leaves the connection unusable (the rest of the reply is still coming): it is dropped.
        """
        await self._send(command)
        response = await self._response()
        response.raise_for_error()
        if not response.multiline:
            raise NNTPProtocolError(f"{command} answered {response.code} {response.text!r} without a body")
        finished = False
        try:
            while True:
                event = await self._event()
                if isinstance(event, EndOfData):
                    self.last_encoding = event.encoding
                    finished = True
                    return
                if isinstance(event, Data):
                    yield event
                else:  # pragma: no cover - the core only returns Data/EndOfData inside a body
                    raise NNTPProtocolError(f"unexpected {event!r} inside the reply to {command}")
        finally:
            if not finished:
                self._broken = True

    async def multiline(self, command: Command) -> bytes:
        """Send a command and return its whole (plain) body."""
        return b"".join([event.data async for event in self.stream(command)])

    # -- commands ------------------------------------------------------------------------------

    async def group(self, name: str) -> GroupInfo:
        """Select a group: (count, low, high). Raises NoSuchGroup when it does not exist."""
        response = await self.simple(cmd.group(name))
        parts = response.text.split()
        try:
            count, low, high = int(parts[0]), int(parts[1]), int(parts[2])
        except (IndexError, ValueError):
            raise NNTPProtocolError(f"cannot read GROUP's answer {response.code} {response.text!r}") from None
        self.current_group = name
        return GroupInfo(count, low, high)

    async def overview_fmt(self) -> list[str]:
        """LIST OVERVIEW.FMT: the names of the overview fields after the article number."""
        body = await self.multiline(cmd.list_overview_fmt())
        return [line.strip() for line in body.decode("utf-8", "replace").split("\r\n") if line.strip()]

    async def body(self, message_id: str) -> bytes:
        """BODY <message-id>: the article body (dot-unstuffed). Raises NoSuchArticle (430) when missing."""
        return await self.multiline(cmd.body(message_id))

    def _over_verb(self) -> Literal["OVER", "XOVER"]:
        return "XOVER" if self.capabilities and "OVER" not in self.capabilities else "OVER"

    async def _overview_command(self, first: int, last: int, compress: bool) -> Command:
        """The command for a range, negotiating per-reply compression the first time it is wanted."""
        if not compress or self.compression in ("none", "deflate") or self._conn.compress_deflate_active:
            return cmd.over(first, last, verb=self._over_verb())
        if self.compression in ("auto", "gzip", "gzip-terminator") and not self._gzip_refused:
            if not self._conn.gzip_active:
                terminator = self.compression != "gzip"
                try:
                    await self.simple(cmd.xfeature_compress_gzip(terminator=terminator))
                except NNTPReplyError:
                    self._gzip_refused = True
            if self._conn.gzip_active:
                return cmd.over(first, last, verb="XOVER")
        if self.compression in ("auto", "xzver") and not self._xzver_refused:
            return cmd.xzver(first, last)
        return cmd.over(first, last, verb=self._over_verb())

    async def _ensure_plain_session(self) -> None:
        # XFEATURE COMPRESS GZIP cannot be switched off: a plain fetch (the corrupt path's re-fetch)
        # needs a new connection on which it was never switched on.
        if self._conn.gzip_active:
            group = self.current_group
            await self.close()
            self._plain_only = True
            try:
                await self.connect()
            finally:
                self._plain_only = False
            if group is not None:
                await self.group(group)

    async def _overview_events(
        self, first: int, last: int, compress: bool, *, whole: bool = False
    ) -> AsyncIterator[Data]:
        if not compress:
            await self._ensure_plain_session()
        command = await self._overview_command(first, last, compress)
        if whole:
            command = dataclasses.replace(command, whole=True)
        try:
            async for event in self.stream(command):
                yield event
        except NNTPReplyError as error:
            # A server that does not know XZVER says 500 (INN: "500 What?") or 501/503: fall back.
            if command.verb != "XZVER" or error.code not in (500, 501, 503):
                raise
            self._xzver_refused = True
            command = dataclasses.replace(cmd.over(first, last, verb=self._over_verb()), whole=whole)
            async for event in self.stream(command):
                yield event

    async def over(self, first: int, last: int, *, compress: bool = True) -> AsyncIterator[bytes]:
        """Stream the overview of ``first``..``last`` as plain text, whole CRLF lines per piece.

        The group must be selected first (:meth:`group`). An empty range yields nothing (INN answers
        423 for a range with no articles; that is not an error here).
        """
        carry = b""
        try:
            async for event in self._overview_events(first, last, compress):
                piece = bytes(event.data)  # bytes already (no body is gathered here): not copied
                data = carry + piece if carry else piece
                cut = data.rfind(b"\n") + 1
                carry = data[cut:]
                if cut:
                    yield data[:cut]
        except NNTPReplyError as error:
            if error.code == 423:
                return
            raise
        if carry:
            yield carry

    async def over_chunk(self, first: int, last: int, *, compress: bool = True) -> OverviewChunk:
        """The overview of ``first``..``last`` as one :class:`OverviewChunk` (see there).

        ``compress=False`` asks for the range uncompressed on the wire (the re-fetch after a chunk
        would not inflate). A range with no articles gives an empty plain chunk.
        """
        plain: list[bytes | bytearray] = []
        compressed: list[bytes] = []
        plain_size = lines = 0
        try:
            async for event in self._overview_events(first, last, compress, whole=True):
                plain_size += len(event.data)
                lines += event.lines if event.lines >= 0 else count_lines(event.data)
                if event.compressed:
                    compressed.append(event.compressed)
                else:
                    plain.append(event.data)
        except NNTPReplyError as error:
            if error.code != 423:
                raise
            return OverviewChunk(first, last, "plain", b"", 0, 0)
        encoding = self.last_encoding
        if encoding == "plain":
            # A plain reply comes gathered, as one piece: kept as it is, not copied by a join.
            data = plain[0] if len(plain) == 1 else b"".join(plain)
            return OverviewChunk(first, last, "plain", data, plain_size, lines)
        return OverviewChunk(first, last, encoding, b"".join(compressed), plain_size, lines)

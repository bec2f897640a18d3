"""The sans-I/O NNTP client connection: bytes in, events out; commands in, bytes out.

In the manner of h11: ``receive_data(bytes)`` feeds what the socket read (``b""`` for end of file),
``next_event()`` returns the next :class:`Response`, :class:`Data`, :class:`EndOfData`,
:class:`ConnectionClosed` or :data:`NEED_DATA`, and ``send(command)`` returns the bytes to write.
No sockets, no clocks: the transport owns both.

Everything that changes how later bytes are read lives here, and only here:
- ``206`` after COMPRESS DEFLATE (RFC 8054): from the next byte on, both directions are one raw
  deflate stream each; what follows the 206 line in the buffer is already compressed.
- ``290`` after XFEATURE COMPRESS GZIP [TERMINATOR]: later overview replies (224 to OVER/XOVER)
  may carry a zlib/gzip body; it is recognised by its first byte, because providers differ on
  whether they mark the status line with ``[COMPRESS=GZIP]``.
- ``382`` after STARTTLS: the transport wraps the socket; nothing may be buffered at that point.
Replies are matched to commands in order, so commands may be pipelined, except the three above:
they change the byte stream under the commands that follow them.
"""

from __future__ import annotations

import zlib
from collections import deque

from usenet_indexer import compression as _inflate
from usenet_indexer.nntp._commands import Command
from usenet_indexer.nntp._events import (
    NEED_DATA,
    ConnectionClosed,
    Data,
    EndOfData,
    Event,
    NeedData,
    Response,
)
from usenet_indexer.nntp._readers import (
    INFLATE_STEP,
    BodyReader,
    GatheredBody,
    PlainBody,
    XzverBody,
    ZlibBody,
)
from usenet_indexer.nntp.errors import (
    CompressedReplyCorrupt,
    NNTPConnectionLost,
    NNTPError,
    NNTPProtocolError,
)

__all__ = ["NNTPConnection"]

# RFC 3977 says 512 octets; some servers send longer greetings. Past this, it is not a status line.
MAX_STATUS_LINE = 4096
# Keep at most this much inflated session data waiting in the buffer (bounded memory under COMPRESS).
_BUFFER_TARGET = 4 * 1024 * 1024
_STATE_CHANGERS = frozenset({"STARTTLS", "COMPRESS", "XFEATURE"})


class NNTPConnection:
    """One client connection's protocol state; see the module documentation."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._compressed_in = b""  # COMPRESS DEFLATE bytes not yet inflated into _buf
        self._inflater: _inflate.Inflater | None = None
        self._deflater: zlib._Compress | None = None
        # The server's deflate stream reached its end: what it held is read out, then the session fails.
        self._deflate_ended = False
        self._pending: deque[Command | None] = deque([None])  # None: the greeting
        self._body: BodyReader | None = None
        self._body_command: Command | None = None
        self._eof = False
        self._closed_reported = False
        self._error: NNTPError | None = None
        self._gzip: bool | None = None  # None: off; else: TERMINATOR negotiated
        self._skip_stray_dot = False
        self.tls_requested = False

    # -- state the transport may read -------------------------------------------------------------

    @property
    def compress_deflate_active(self) -> bool:
        return self._inflater is not None

    @property
    def gzip_active(self) -> bool:
        return self._gzip is not None

    @property
    def gzip_terminator(self) -> bool:
        return bool(self._gzip)

    @property
    def pending(self) -> int:
        """Replies still expected (including the one being read)."""
        return len(self._pending) + (1 if self._body is not None else 0)

    @property
    def in_body(self) -> bool:
        return self._body is not None

    @property
    def suspect_cut_short(self) -> bool:
        """True while a compressed reply looks terminated on the wire although its stream is not
        finished; if no more bytes come soon, call :meth:`declare_cut_short`."""
        return self._body is not None and self._body.suspect_cut_short and not self._buf

    def declare_cut_short(self) -> CompressedReplyCorrupt:
        from usenet_indexer.nntp.errors import CompressedReplyTruncated

        error = CompressedReplyTruncated(
            f"the compressed reply to {self._body_command} stopped before its compressed stream ended "
            "(it was followed by the '.' line): the server cut it short"
        )
        self._error = error
        return error

    # -- the two directions ------------------------------------------------------------------------

    def send(self, command: Command) -> bytes:
        """Queue ``command`` as awaiting its reply and return the bytes to write."""
        if self._error is not None:
            raise self._error
        if self._eof:
            raise NNTPConnectionLost(f"cannot send {command}: the server closed the connection")
        if command.verb in _STATE_CHANGERS and self.pending:
            raise ValueError(f"{command} changes the byte stream: send it only when no reply is outstanding")
        if any(c is not None and c.verb in _STATE_CHANGERS for c in self._pending):
            raise ValueError(f"cannot pipeline {command} behind a command that changes the byte stream")
        self._pending.append(command)
        data = command.wire()
        if self._deflater is not None:
            data = self._deflater.compress(data) + self._deflater.flush(zlib.Z_SYNC_FLUSH)
        return data

    def receive_data(self, data: bytes) -> None:
        """Feed bytes read from the socket; ``b""`` means the server closed the connection."""
        if not data:
            self._eof = True
            return
        if self._eof:
            raise ValueError("receive_data after end of file")
        if self._inflater is not None:
            self._compressed_in += data
        else:
            self._buf += data

    def next_event(self) -> Event | NeedData:
        """The next event, or NEED_DATA. Raises an NNTPError subclass for a broken stream."""
        if self._error is not None:
            raise self._error
        try:
            return self._next_event()
        except NNTPError as error:
            self._error = error
            raise

    # -- internals ---------------------------------------------------------------------------------

    def _inflate_more(self) -> None:
        inflater = self._inflater
        if self._deflate_ended:
            self._compressed_in = b""  # after the stream's end: nothing there can be read
            return
        if inflater is None or not self._compressed_in or len(self._buf) >= _BUFFER_TARGET:
            return
        try:
            self._buf += inflater.decompress(self._compressed_in, INFLATE_STEP)
        except _inflate.ERRORS as exc:
            raise NNTPProtocolError(
                f"the COMPRESS DEFLATE stream from the server is corrupt: {exc}"
            ) from None
        self._compressed_in = inflater.unconsumed_tail
        if inflater.eof:
            # Not raised here: the replies inflated with the stream's end would be lost with it, but
            # only when they came in the same read (fuzz/nntp_replies.py found events depending on
            # the split of the bytes). They are read out first; the session fails when they run out.
            self._deflate_ended = True
            self._compressed_in = b""

    def _out_of_data(self) -> None:
        if self._deflate_ended:
            raise NNTPProtocolError("the server ended its COMPRESS DEFLATE stream (RFC 8054 never ends it)")

    def _next_event(self) -> Event | NeedData:
        while True:
            self._inflate_more()
            if self._body is not None:
                event = self._body.next(self._buf)
                if event is not None:
                    if isinstance(event, EndOfData):
                        self._body = None
                        self._body_command = None
                    return event
                if self._compressed_in and len(self._buf) < _BUFFER_TARGET:
                    continue
                self._out_of_data()
                if self._eof:
                    raise NNTPConnectionLost(
                        f"the server closed the connection in the middle of the reply to {self._body_command}"
                    )
                return NEED_DATA
            newline = self._buf.find(b"\n")
            if newline < 0:
                if len(self._buf) > MAX_STATUS_LINE:
                    raise NNTPProtocolError(
                        f"no line end in the first {MAX_STATUS_LINE} bytes of a status line: "
                        f"{bytes(self._buf[:80])!r}…"
                    )
                if self._compressed_in:
                    continue
                self._out_of_data()
                if self._eof:
                    return self._end_of_file()
                return NEED_DATA
            line = bytes(self._buf[:newline]).rstrip(b"\r")
            del self._buf[: newline + 1]
            if self._skip_stray_dot and line == b".":
                self._skip_stray_dot = False
                continue
            self._skip_stray_dot = False
            return self._status(line)

    def _end_of_file(self) -> Event | NeedData:
        if self._buf:
            raise NNTPConnectionLost(
                f"the server closed the connection in the middle of a status line: {bytes(self._buf[:80])!r}"
            )
        if self._pending:
            command = self._pending[0]
            what = "the greeting" if command is None else f"a reply to {command}"
            raise NNTPConnectionLost(f"the server closed the connection before sending {what}")
        if self._closed_reported:
            return NEED_DATA
        self._closed_reported = True
        return ConnectionClosed()

    def _status(self, line: bytes) -> Response:
        if not self._pending:
            raise NNTPProtocolError(f"the server sent a line no command asked for: {line[:80]!r}")
        if len(line) < 3 or not line[:3].isdigit() or (len(line) > 3 and line[3:4] not in (b" ", b"\t")):
            raise NNTPProtocolError(f"not an NNTP status line: {line[:80]!r}")
        code = int(line[:3])
        if not 100 <= code <= 599:
            raise NNTPProtocolError(f"status code {code} is outside 100-599: {line[:80]!r}")
        text = line[4:].decode("utf-8", "replace").strip()
        command = self._pending.popleft()
        multiline = command is not None and code in command.multiline_codes
        if command is not None:
            self._after_status(command, code)
            if multiline:
                self._body = self._body_for(command, text)
                self._body_command = command
        return Response(code, text, multiline, command)

    def _after_status(self, command: Command, code: int) -> None:
        verb = command.verb
        if verb == "COMPRESS" and code == 206:
            # RFC 8054: everything after this line is deflate-compressed, in both directions.
            self._inflater = _inflate.decompressobj(-zlib.MAX_WBITS)
            self._deflater = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
            self._compressed_in, self._buf = bytes(self._buf), bytearray()
        elif verb == "XFEATURE" and code == 290 and "COMPRESS GZIP" in command.line.upper():
            self._gzip = command.line.upper().endswith("TERMINATOR")
        elif verb == "STARTTLS" and code == 382:
            if self._buf:
                raise NNTPProtocolError(
                    f"the server sent {len(self._buf)} bytes after 382 STARTTLS before the TLS handshake"
                )
            self.tls_requested = True

    def _body_for(self, command: Command, text: str) -> BodyReader:
        if command.body == "xzver":
            return XzverBody(str(command))
        if command.body == "overview" and self._gzip is not None:
            # A gzip-compressed overview body starts with a zlib (0x78) or gzip (0x1f) header byte;
            # a plain one with an article number or the "." line. Decided when the first byte is in.
            return _SniffingBody(
                str(command),
                terminator=self._gzip,
                marked="COMPRESS=GZIP" in text.upper(),
                on_plain_stream_end=self._expect_stray_dot,
                whole=command.whole,
            )
        return GatheredBody() if command.whole else PlainBody()

    def _expect_stray_dot(self) -> None:
        # Some servers follow a no-TERMINATOR stream with a "." line anyway; skip it if it comes.
        self._skip_stray_dot = True


class _SniffingBody(BodyReader):
    """Chooses between a zlib/gzip body and a plain one from the body's first byte."""

    def __init__(
        self,
        command: str,
        *,
        terminator: bool,
        marked: bool,
        on_plain_stream_end: object,
        whole: bool = False,
    ) -> None:
        self._command = command
        self._whole = whole
        self._terminator = terminator
        self._marked = marked
        self._inner: BodyReader | None = None
        self._on_end = on_plain_stream_end

    @property
    def suspect_cut_short(self) -> bool:
        return self._inner is not None and self._inner.suspect_cut_short

    def next(self, buf: bytearray) -> Data | EndOfData | None:
        if self._inner is None:
            if not buf:
                return None
            if self._marked or buf[0] in (0x78, 0x1F):
                self._inner = ZlibBody(terminator=self._terminator, command=self._command)
            else:
                self._inner = GatheredBody() if self._whole else PlainBody()
        event = self._inner.next(buf)
        if isinstance(event, EndOfData) and event.encoding != "plain" and not self._terminator:
            callback = self._on_end
            if callable(callback):
                callback()
        return event

"""Readers for the body of a multi-line reply: plain, per-reply zlib/gzip, and XZVER.

Each body reader consumes bytes from the front of the connection's buffer and returns the next
:class:`Data` or :class:`EndOfData`, or ``None`` when it needs more bytes. Invariants:

- A reader never takes bytes that belong to the next reply: bytes after the end of its body stay in
  the buffer (a compressed stream's trailing ``unused_data`` is put back at its front).
- A reader never holds a whole reply: it returns what it has decoded as soon as it has whole lines,
  and a line longer than ``PIECE`` bytes leaves in pieces. The one exception is GatheredBody, for a
  caller that asked for the whole body (``Command.whole``) and would hold all of it anyway.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable

from usenet_indexer import accelerator
from usenet_indexer import compression as _inflate
from usenet_indexer.nntp._events import Data, Encoding, EndOfData
from usenet_indexer.nntp.errors import (
    CompressedReplyCorrupt,
    CompressedReplyTruncated,
    NNTPProtocolError,
)
from usenet_indexer.nntp.yenc import YEncCRCError, YEncError, YEncStreamDecoder

__all__ = [
    "PIECE",
    "BodyReader",
    "DotReader",
    "GatheredBody",
    "PlainBody",
    "XzverBody",
    "ZlibBody",
    "count_lines",
    "line_scan",
    "scan_block",
]

# A line longer than this leaves the reader in pieces (a 1 MB overview line must pass through
# without the reader waiting for the whole of it).
PIECE = 256 * 1024
# At most this much decompressed output per step, so a small compressed input that inflates to
# gigabytes (a "zip bomb", or garbage) is handed out in bounded pieces.
INFLATE_STEP = 1024 * 1024

_DOT = 0x2E
_CR = 0x0D
_LF = 0x0A
# A line that starts with a dot. The regex engine scans for "\n" and then checks the next byte;
# bytes.find(b"\n.") skips only ~3 bytes per step over overview text full of dots (subjects,
# message-ids): 0.2 µs per overview line, a third of the plain reader's time; the regex takes 0.075.
_LINE_DOT = re.compile(rb"\n\.")


def _first_line_dot(data: bytes | bytearray | memoryview) -> int:
    found = _LINE_DOT.search(data)
    return -1 if found is None else found.start()


def _line_scan(data: bytes | bytearray | memoryview) -> tuple[int, int]:
    return (data.tobytes() if isinstance(data, memoryview) else data).count(b"\n"), _first_line_dot(data)


# (LF bytes in ``data``, where its first "\n." is or -1): one memchr per line in the C accelerator,
# where bytes.count and the regex took 0.25 µs an overview line between them (bench/fetch.py).
line_scan: Callable[[bytes | bytearray | memoryview], tuple[int, int]] = (
    accelerator.speedups.line_scan if accelerator.speedups is not None else _line_scan
)


def _scan_without_count(data: bytes | bytearray | memoryview) -> tuple[int, int]:
    return -1, _first_line_dot(data)


# (LF bytes or -1, first "\n."): the dot reader's scan of a block. The count comes with the C scan
# and saves the caller its own pass (~0.01 µs an overview line, measured in bench/fetch.py's client);
# the pure path does not count for it.
scan_block: Callable[[bytes | bytearray | memoryview], tuple[int, int]] = (
    line_scan if accelerator.speedups is not None else _scan_without_count
)


def count_lines(data: bytes | bytearray) -> int:
    """LF bytes in ``data``."""
    return line_scan(data)[0]


class DotReader:
    """Dot-unstuffing and terminator detection over a byte buffer (RFC 3977 3.1.1).

    ``read(buf)`` consumes from the front of ``buf`` and returns unstuffed bytes (possibly empty),
    or ``None`` when nothing can be decided without more bytes. ``done`` turns true once the
    terminating ``.`` line has been consumed. The terminator must be ``.`` CRLF (RFC 3977); other
    lines may end in a bare LF.
    """

    __slots__ = ("at_line_start", "done", "lines")

    def __init__(self) -> None:
        self.at_line_start = True
        self.done = False
        self.lines = -1  # LF bytes in what the last read returned, when known (else -1)

    def read(self, buf: bytearray) -> bytes | None:
        self.lines = -1
        size = len(buf)
        if size == 0 or self.done:
            return None
        if self.at_line_start and buf[0] == _DOT:
            # A "." at the start of a line is either the terminator or a stuffed dot.
            if size < 2:
                return None
            if buf[1] == _CR and size >= 3 and buf[2] == _LF:
                del buf[:3]
                self.done = True
                return b""
            if buf[1] == _CR and size < 3:
                return None
            del buf[0]
            size -= 1
            self.at_line_start = False
            if size == 0:
                return None
        last_lf = buf.rfind(b"\n")
        if last_lf < 0:
            if size < PIECE:
                return None
            piece = bytes(buf)
            buf.clear()
            self.at_line_start = False
            return piece
        if last_lf + 1 == size:
            block = bytes(buf)
            buf.clear()
        else:
            # Through a memoryview: one copy, where bytes(buf[:n]) makes two (a bytearray, then bytes).
            with memoryview(buf) as view:
                block = bytes(view[: last_lf + 1])
            del buf[: last_lf + 1]
        self.at_line_start = True
        # One scan for "\n." finds both the terminator and stuffed dots; overview lines start with
        # a digit, so the common case is one miss over the block and nothing else to do.
        lines, dot = scan_block(block)
        # Unstuffing drops dots, never LFs: the block's count holds for what it returns.
        self.lines = lines
        if dot < 0:
            return block
        end = block.find(b"\n.\r\n", dot)
        if end < 0:
            return block.replace(b"\n.", b"\n")
        # The terminator: what follows it belongs to the next reply; give it back.
        rest = block[end + 4 :]
        if rest:
            buf[0:0] = rest
        self.done = True
        # Every "." that starts a line inside the payload was stuffed (the first line's was removed
        # above): drop it.
        payload = block[: end + 1]
        if lines >= 0:
            # The block's LFs less the terminator's and those of the next reply's bytes.
            self.lines = lines - 1 - rest.count(b"\n")
        return payload.replace(b"\n.", b"\n") if dot < end else payload

    def flush(self, buf: bytearray) -> bytes:
        """The rest of ``buf`` as a last partial line (for a body whose end is not a dot line)."""
        if not buf:
            return b""
        if self.at_line_start and buf[0] == _DOT:
            del buf[0]
        piece = bytes(buf)
        buf.clear()
        self.at_line_start = piece.endswith(b"\n")
        return piece


class BodyReader:
    """One multi-line reply's body: ``next`` returns Data pieces, then one EndOfData, then None."""

    encoding: Encoding = "plain"

    def next(self, buf: bytearray) -> Data | EndOfData | None:
        raise NotImplementedError

    @property
    def suspect_cut_short(self) -> bool:
        """True when the body looks complete on the wire but its compressed stream is not."""
        return False


class PlainBody(BodyReader):
    def __init__(self) -> None:
        self._reader = DotReader()
        self._ended = False

    def next(self, buf: bytearray) -> Data | EndOfData | None:
        if self._reader.done:
            if self._ended:
                return None
            self._ended = True
            return EndOfData()
        payload = self._reader.read(buf)
        if payload is None:
            return None
        if self._reader.done and not payload:
            self._ended = True
            return EndOfData()
        return Data(payload, lines=self._reader.lines)


class GatheredBody(BodyReader):
    """A plain body gathered whole: one Data with all of it (a bytearray), then EndOfData.

    For a caller that wants the body in one piece (``Command.whole``: over_chunk). Through PlainBody
    each block was copied out of the connection's buffer into new bytes, and the caller joined the
    pieces: two copies of every byte and a new buffer of megabytes per reply, whose pages fault in
    afresh (a 20,000-line reply is 6 MB; issue 17). Here each block is copied once, from the
    connection's buffer onto the end of one growing buffer, and scanned for dot lines where it lies.
    The dot rules are DotReader's, block by block (whole lines, split at the buffer's last LF).
    """

    def __init__(self) -> None:
        self._out = bytearray()
        self._lines = 0
        self._at_line_start = True
        self._done = False
        self._ended = False

    def next(self, buf: bytearray) -> Data | EndOfData | None:
        if self._ended:
            return None
        if self._done:
            self._ended = True
            return EndOfData()
        size = len(buf)
        if size == 0:
            return None
        if self._at_line_start and buf[0] == _DOT:
            # A "." at the start of a line is either the terminator or a stuffed dot.
            if size < 2 or (buf[1] == _CR and size < 3):
                return None
            if buf[1] == _CR and buf[2] == _LF:
                del buf[:3]
                return self._finish()
            del buf[0]
            size -= 1
            self._at_line_start = False
            if size == 0:
                return None
        last_lf = buf.rfind(b"\n")
        if last_lf < 0:
            if size >= PIECE:  # a very long line: gather what came, the rest continues it
                self._out += buf
                buf.clear()
                self._at_line_start = False
            return None
        out = self._out
        start = len(out)
        with memoryview(buf) as view:
            out += view[: last_lf + 1]
        del buf[: last_lf + 1]
        self._at_line_start = True
        with memoryview(out) as whole, whole[start:] as block:
            lines, dot = scan_block(block)
        if lines < 0:
            lines = out.count(b"\n", start)
        if dot < 0:
            self._lines += lines
            return None
        end = out.find(b"\n.\r\n", start + dot)
        if end < 0:
            # Stuffed dots only; unstuffing drops dots, never LFs.
            out[start:] = out[start:].replace(b"\n.", b"\n")
            self._lines += lines
            return None
        # The terminator: what follows it belongs to the next reply; give it back.
        rest = out[end + 4 :]
        if rest:
            buf[0:0] = rest
        del out[end + 1 :]
        self._lines += lines - 1 - rest.count(b"\n")
        if start + dot < end:
            out[start:] = out[start:].replace(b"\n.", b"\n")
        return self._finish()

    def _finish(self) -> Data | EndOfData:
        self._done = True
        if not self._out:
            self._ended = True
            return EndOfData()
        return Data(self._out, lines=self._lines)


class _Inner:
    """The decompressed text of a compressed body: itself dot-terminated or not, possibly stuffed.

    Servers differ on whether the ``.`` line is inside the compressed data; both are accepted, and
    data after an inner terminator is an error rather than something silently dropped.
    """

    def __init__(self) -> None:
        self.buf = bytearray()
        self.reader = DotReader()

    @property
    def terminated(self) -> bool:
        return self.reader.done

    def feed(self, data: bytes, context: str) -> bytes:
        if not data:
            return b""
        if self.reader.done:
            raise CompressedReplyCorrupt(f"{context}: data after the terminator inside the compressed reply")
        self.buf += data
        out: list[bytes] = []
        while not self.reader.done:
            piece = self.reader.read(self.buf)
            if piece is None:
                break
            out.append(piece)
        if self.reader.done and self.buf:
            raise CompressedReplyCorrupt(f"{context}: data after the terminator inside the compressed reply")
        return b"".join(out)

    def flush(self) -> bytes:
        return b"" if self.reader.done else self.reader.flush(self.buf)


class ZlibBody(BodyReader):
    """XFEATURE COMPRESS GZIP: the body is one zlib (or gzip) stream.

    With TERMINATOR a ``.`` line follows the stream; without it the stream's end ends the reply. The
    end is found by inflating (``eof``), never by looking for ``.\\r\\n`` in compressed bytes, where it
    can occur by chance.
    """

    def __init__(self, *, terminator: bool, command: str) -> None:
        self._terminator = terminator
        self._command = command
        self._inflater = _inflate.decompressobj(zlib.MAX_WBITS | 32)  # zlib or gzip header, detected
        self._inner = _Inner()
        self._state = "stream"  # stream -> terminator -> done
        self._tail = b""
        self.encoding = "zlib"
        self._sniffed = False

    @property
    def suspect_cut_short(self) -> bool:
        # The stream is not finished but the last bytes received were ".\r\n": most likely the
        # server cut the compressed data short and terminated the reply. Only a pause can tell it
        # from a stream that happens to contain those bytes; the transport waits briefly, then asks.
        return self._state == "stream" and self._tail.endswith(b".\r\n")

    def next(self, buf: bytearray) -> Data | EndOfData | None:
        if self._state == "ended":
            return None
        if self._state == "done":
            self._state = "ended"
            return EndOfData(self.encoding)
        if self._state == "terminator":
            if not self._read_terminator(buf):
                return None
            self._state = "ended"
            return EndOfData(self.encoding)
        if not buf:
            return None
        if not self._sniffed:
            self.encoding = "gzip" if buf[0] == 0x1F else "zlib"
            self._sniffed = True
        raw = bytes(buf)
        buf.clear()
        try:
            out = self._inflater.decompress(raw, INFLATE_STEP)
        except _inflate.ERRORS as exc:
            raise CompressedReplyCorrupt(
                f"the compressed reply to {self._command} does not inflate: {exc}"
            ) from None
        left = self._inflater.unused_data if self._inflater.eof else self._inflater.unconsumed_tail
        used = raw[: len(raw) - len(left)]
        if left:
            buf[0:0] = left
        self._tail = (self._tail + used)[-3:]
        data = self._inner.feed(out, f"the reply to {self._command}")
        if self._inflater.eof:
            data += self._inner.flush()
            self._state = "terminator" if self._terminator and not self._inner.terminated else "done"
        return Data(data, used)

    def _read_terminator(self, buf: bytearray) -> bool:
        newline = buf.find(b"\n")
        if newline < 0:
            if len(buf) >= 3:
                got = bytes(buf[:40])
                raise NNTPProtocolError(
                    f"expected the '.' line after the compressed reply to {self._command}, got {got!r}"
                )
            return False
        line = bytes(buf[:newline]).rstrip(b"\r")
        if line != b".":
            raise NNTPProtocolError(
                f"expected the '.' line after the compressed reply to {self._command}, got {line[:40]!r}"
            )
        del buf[: newline + 1]
        return True


class XzverBody(BodyReader):
    """XZVER: a dot-terminated body of yEnc lines whose decoded bytes are one raw deflate stream."""

    encoding: Encoding = "deflate"

    def __init__(self, command: str) -> None:
        self._command = command
        self._outer = DotReader()
        self._yenc = YEncStreamDecoder()
        self._inflater = _inflate.decompressobj(-zlib.MAX_WBITS)
        self._inner = _Inner()
        self._complete = False
        self._ended = False

    def next(self, buf: bytearray) -> Data | EndOfData | None:
        if self._ended:
            return None
        if self._complete:
            self._ended = True
            return EndOfData("deflate")
        payload = self._outer.read(buf)
        if payload is None:
            return None
        context = f"the XZVER reply to {self._command}"
        try:
            raw = self._yenc.feed(payload)
            if self._outer.done:
                raw += self._yenc.finish()
        except YEncCRCError as exc:
            raise CompressedReplyCorrupt(f"{context}: {exc}") from None
        except YEncError as exc:
            if "cut short" in str(exc) or "size=" in str(exc):
                raise CompressedReplyTruncated(f"{context}: {exc}") from None
            raise CompressedReplyCorrupt(f"{context}: {exc}") from None
        try:
            out = self._inflater.decompress(raw)
        except _inflate.ERRORS as exc:
            raise CompressedReplyCorrupt(f"{context} does not inflate: {exc}") from None
        if self._inflater.unused_data:
            raise CompressedReplyCorrupt(f"{context}: bytes after the end of the deflate stream")
        data = self._inner.feed(out, context)
        if self._outer.done:
            if not self._inflater.eof:
                raise CompressedReplyTruncated(
                    f"{context} ended before its deflate stream did: the server cut it short"
                )
            data += self._inner.flush()
            self._complete = True
        return Data(data, raw)

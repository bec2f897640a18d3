"""yEnc (version 1.3) encoder and decoder: pure functions, no I/O.

yEnc adds 42 to every byte modulo 256 and escapes the few results that would break a news line
(NUL, LF, CR and the escape character ``=`` itself; TAB and SPACE at either end of a line and ``.``
at its start) as ``=`` followed by the byte plus 64. The hot paths use ``bytes.translate`` and
``bytes.replace``/``split`` so the per-byte work runs in C; Python loops only run per line (encoding)
or per escape (decoding, ~1-2 % of the bytes).

Used to decode BODY replies (PAR2 probing), XZVER replies (yEnc-wrapped raw deflate), and to encode
test articles.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

__all__ = [
    "YEncCRCError",
    "YEncDecoded",
    "YEncError",
    "YEncStreamDecoder",
    "decode",
    "decode_data",
    "encode",
    "encode_data",
]

_ENCODE = bytes((i + 42) % 256 for i in range(256))
_DECODE = bytes((i - 42) % 256 for i in range(256))
# After _DECODE, the escape leader "=" (0x3D) has become 0x13: it is the only source of 0x13 in a
# translated escaped stream, because a literal byte that would encode to "=" is always escaped.
_LEADER_AFTER_DECODE = (0x3D - 42) % 256
_LEADER = b"="
_KEYWORD = re.compile(rb"([a-z0-9]+)=")


class YEncError(ValueError):
    """The yEnc data is malformed (missing header or trailer, bad escape, size mismatch)."""


class YEncCRCError(YEncError):
    """The decoded data does not match the crc32/pcrc32 of the =yend line."""


def encode_data(data: bytes, line_length: int = 128) -> list[bytes]:
    """Encode ``data`` into yEnc lines (without line endings).

    Escapes NUL, LF, CR and ``=`` everywhere, TAB and SPACE at the start and the end of a line, and
    ``.`` at the start of a line (so the lines need no NNTP dot-stuffing). A line may be one
    character longer than ``line_length`` when an escape pair would otherwise be split.
    """
    if line_length < 2:
        raise ValueError(f"line_length must be at least 2, not {line_length}")
    text = (
        data.translate(_ENCODE)
        .replace(b"=", b"=}")
        .replace(b"\x00", b"=@")
        .replace(b"\n", b"=J")
        .replace(b"\r", b"=M")
    )
    lines: list[bytes] = []
    start, size = 0, len(text)
    while start < size:
        end = min(start + line_length, size)
        # "=" only ever leads an escape pair here: never end a line between the two.
        if text[end - 1 : end] == _LEADER:
            end += 1
        line = text[start:end]
        first = line[0]
        if first in (0x09, 0x20, 0x2E):
            line = b"=" + bytes(((first + 64) % 256,)) + line[1:]
        last = line[-1]
        if last in (0x09, 0x20) and not (len(line) >= 2 and line[-2:-1] == _LEADER):
            line = line[:-1] + b"=" + bytes(((last + 64) % 256,))
        lines.append(line)
        start = end
    return lines


def decode_data(text: bytes) -> bytes:
    """Decode yEnc data: the data lines joined, line endings already removed or not.

    Raises :class:`YEncError` for an escape character with nothing after it.
    """
    if b"\n" in text or b"\r" in text:
        text = text.replace(b"\r", b"").replace(b"\n", b"")
    translated = text.translate(_DECODE)
    if _LEADER_AFTER_DECODE not in translated:
        return translated
    parts = translated.split(bytes((_LEADER_AFTER_DECODE,)))
    out = [parts[0]]
    index, count = 1, len(parts)
    while index < count:
        part = parts[index]
        if part:
            out.append(bytes(((part[0] - 64) % 256,)))
            out.append(part[1:])
            index += 1
        elif index + 1 < count:
            # "==": encoders may escape any byte, and the escaped byte can itself be "=".
            out.append(bytes(((_LEADER_AFTER_DECODE - 64) % 256,)))
            out.append(parts[index + 1])
            index += 2
        else:
            raise YEncError("yEnc data ends with an escape character and nothing after it")
    return b"".join(out)


def _keywords(line: bytes) -> dict[str, bytes]:
    """The key=value pairs of an =ybegin/=ypart/=yend line; ``name`` runs to the end of the line."""
    values: dict[str, bytes] = {}
    name_at = line.find(b" name=")
    head = line if name_at < 0 else line[:name_at]
    if name_at >= 0:
        values["name"] = line[name_at + 6 :].rstrip(b"\r\n")
    for token in head.split()[1:]:
        match = _KEYWORD.match(token)
        if match:
            values[match.group(1).decode("ascii")] = token[match.end() :]
    return values


def _int(values: dict[str, bytes], key: str, line: bytes) -> int | None:
    raw = values.get(key)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise YEncError(f"yEnc {key}= is not a number in {line[:120]!r}") from None


def _crc(values: dict[str, bytes], key: str, line: bytes) -> int | None:
    raw = values.get(key)
    if raw is None:
        return None
    try:
        return int(raw, 16)
    except ValueError:
        raise YEncError(f"yEnc {key}= is not a hex crc32 in {line[:120]!r}") from None


@dataclass(frozen=True, slots=True)
class YEncDecoded:
    """One decoded yEnc part (or a whole single-part file)."""

    data: bytes
    name: str
    size: int  # the size of the whole file (=ybegin size=)
    part: int | None  # =ybegin part=, None for a single-part post
    total: int | None  # =ybegin total=
    begin: int | None  # =ypart begin= (1-based offset of this part in the file)
    end: int | None  # =ypart end=
    crc32: int  # the crc32 of ``data`` (checked against the trailer when it had one)


def encode(
    data: bytes,
    name: str,
    *,
    line_length: int = 128,
    part: int | None = None,
    total: int | None = None,
    begin: int | None = None,
    file_size: int | None = None,
    file_crc32: int | None = None,
) -> bytes:
    """A yEnc block with CRLF line endings: =ybegin, =ypart for a multi-part post, data, =yend.

    For a part, ``begin`` is the 1-based offset of ``data`` in the whole file of ``file_size``
    bytes; the trailer then carries ``pcrc32`` (and ``crc32`` when ``file_crc32`` is given).
    """
    if "\n" in name or "\r" in name:
        raise ValueError("a yEnc name cannot hold a line break")
    crc = zlib.crc32(data)
    size = len(data) if file_size is None else file_size
    head = [b"=ybegin"]
    if part is not None:
        head.append(b"part=%d" % part)
        if total is not None:
            head.append(b"total=%d" % total)
    head += [b"line=%d" % line_length, b"size=%d" % size, b"name=" + name.encode("utf-8")]
    out = [b" ".join(head)]
    if part is not None:
        first = 1 if begin is None else begin
        out.append(b"=ypart begin=%d end=%d" % (first, first + len(data) - 1))
    out += encode_data(data, line_length)
    if part is not None:
        trailer = b"=yend size=%d part=%d pcrc32=%08x" % (len(data), part, crc)
        if file_crc32 is not None:
            trailer += b" crc32=%08x" % file_crc32
    else:
        trailer = b"=yend size=%d crc32=%08x" % (len(data), crc)
    out.append(trailer)
    return b"\r\n".join(out) + b"\r\n"


def decode(text: bytes) -> YEncDecoded:
    """Decode the first yEnc block in ``text`` (an article body, dot-unstuffed), checking the trailer.

    Lines before =ybegin are ignored (a body may start with a text preamble). Raises
    :class:`YEncError` for a missing header or trailer or a size mismatch, and
    :class:`YEncCRCError` when the crc32 (or pcrc32 for a part) does not match.
    """
    decoder = YEncStreamDecoder()
    data = decoder.feed(text)
    data += decoder.finish()
    return YEncDecoded(
        data=data,
        name=decoder.name,
        size=decoder.size,
        part=decoder.part,
        total=decoder.total,
        begin=decoder.begin,
        end=decoder.end,
        crc32=decoder.crc32,
    )


class YEncStreamDecoder:
    """Decodes one yEnc block fed in pieces of any size; ``feed`` returns the bytes decoded so far.

    Holds at most one partial line between calls, so a block of any size streams through.
    ``finish()`` checks the trailer (size, crc32/pcrc32) and returns the last decoded bytes.
    """

    def __init__(self) -> None:
        self._pending = b""
        self._state = "header"  # header -> part? -> data -> done
        self.name = ""
        self.size = 0
        self.part: int | None = None
        self.total: int | None = None
        self.begin: int | None = None
        self.end: int | None = None
        self.crc32 = 0
        self.decoded_size = 0
        self._trailer: bytes | None = None

    def feed(self, data: bytes) -> bytes:
        text = self._pending + data if self._pending else data
        cut = text.rfind(b"\n") + 1
        self._pending = text[cut:]
        return self._lines(text[:cut]) if cut else b""

    def _lines(self, text: bytes, final: bool = False) -> bytes:
        out: list[bytes] = []
        position = 0
        size = len(text)
        while position < size:
            if self._state == "data":
                # Decode every line up to the trailer in one go. "=y" is never an escape pair (the
                # escaped bytes become "@JM}I`n"), so a line starting "=yend" is the trailer.
                if text.startswith(b"=yend", position):
                    trailer_at = position
                else:
                    found = text.find(b"\n=yend", position)
                    trailer_at = size if found < 0 else found + 1
                data_end = position + len(text[position:].rstrip(b"\r\n"))
                if trailer_at == size and not final and text.endswith(b"=", position, data_end):
                    # An escape at a line's end pairs with the next line's first byte (decode_data
                    # joins the lines): keep that line until the next one is in, or the decoded bytes
                    # would depend on where the reads were cut (found by fuzz/nntp_replies.py).
                    held = max(text.rfind(b"\n", position, data_end) + 1, position)
                    self._pending = text[held:] + self._pending
                    size = trailer_at = held
                    if held == position:
                        break
                chunk = decode_data(text[position:trailer_at])
                if chunk:
                    self.crc32 = zlib.crc32(chunk, self.crc32)
                    self.decoded_size += len(chunk)
                    out.append(chunk)
                position = trailer_at
                if position < size:
                    line_end = text.find(b"\n", position)
                    self._trailer = text[position:line_end].rstrip(b"\r")
                    self._state = "done"
                    position = line_end + 1
                continue
            line_end = text.find(b"\n", position)
            line = text[position:line_end].rstrip(b"\r")
            position = line_end + 1
            if self._state == "header":
                if line.startswith(b"=ybegin "):
                    values = _keywords(line)
                    self.name = values.get("name", b"").decode("utf-8", "replace")
                    size_value = _int(values, "size", line)
                    if size_value is None:
                        raise YEncError(f"yEnc header has no size=: {line[:120]!r}")
                    self.size = size_value
                    self.part = _int(values, "part", line)
                    self.total = _int(values, "total", line)
                    self._state = "part" if self.part is not None else "data"
            elif self._state == "part":
                if not line.startswith(b"=ypart "):
                    raise YEncError(f"yEnc part header missing after =ybegin part=: got {line[:120]!r}")
                values = _keywords(line)
                self.begin = _int(values, "begin", line)
                self.end = _int(values, "end", line)
                self._state = "data"
            # Lines after the trailer are ignored (signatures, a second block).
        return b"".join(out)

    def finish(self) -> bytes:
        """Decode what is left, then check the trailer; raises YEncError / YEncCRCError."""
        tail = self._lines(self._pending + b"\n", final=True) if self._pending else b""
        self._pending = b""
        if self._state == "header":
            raise YEncError("no =ybegin line: this is not yEnc data")
        if self._trailer is None:
            raise YEncError(
                f"yEnc data ends without an =yend line after {self.decoded_size} bytes: it was cut short"
            )
        values = _keywords(self._trailer)
        expected_size = _int(values, "size", self._trailer)
        if expected_size is not None and expected_size != self.decoded_size:
            raise YEncError(f"yEnc =yend says size={expected_size} but {self.decoded_size} bytes decoded")
        expected = _crc(values, "pcrc32" if self.part is not None else "crc32", self._trailer)
        if expected is None and self.part is None:
            expected = _crc(values, "pcrc32", self._trailer)
        if expected is not None and expected != self.crc32:
            raise YEncCRCError(f"yEnc crc32 mismatch: trailer says {expected:08x}, data is {self.crc32:08x}")
        return tail

"""Passworded archives: what the start of a release's first archive volume says. Pure: bytes in.

Sonarr and Radarr skip releases whose newznab ``password`` attribute says yes, so the probe fetches the
first article of the release's first volume (``archive_names.first_volume`` picks it from the file
names: one yEnc article, typically 250-800 KB of the volume's start, decoded) and
``read_archive_start`` reads the archive headers that lie within those bytes.

Formats (each recognised by its signature at offset 0; anything else, a ZIP or an SFX stub included,
gives None):

- **RAR 1.5-4.x** (``rar4``): the marker block ``Rar!\\x1a\\x07\\x00``, then blocks of
  ``HEAD_CRC u16, HEAD_TYPE u8, HEAD_FLAGS u16, HEAD_SIZE u16``; HEAD_CRC is the low 16 bits of the
  CRC32 of the header after the CRC field. The archive header (0x73) carries 0x0080 (headers
  encrypted: every later header is AES ciphertext), 0x0001 (a volume), 0x0010 (volumes named
  ``x.partN.rar``) and 0x0100 (the first volume; these two since RAR 3.0). A file header (0x74) and a
  service header (0x7a) are followed by PACK_SIZE bytes of data; file flag 0x0004 is "encrypted",
  0x0001 "continued from the previous volume", 0x0200 a Unicode name; other blocks with flag 0x8000
  are followed by ADD_SIZE bytes.
- **RAR5** (``rar5``): the signature ``Rar!\\x1a\\x07\\x01\\x00``, then headers of
  ``CRC32 u32, size vint, type vint, flags vint, [extra size vint], [data size vint], ...`` whose CRC32
  covers the size field and the header. Type 4 (archive encryption) means every later header is
  encrypted; a file header (type 2) is encrypted when its extra area holds a record of type 1; the
  main header (type 1) says "volume" (0x0001) and carries a volume number in every volume but the
  first (0x0002); header flag 0x0008 says a file continues from the previous volume.
- **7z** (``7z``): the 32-byte signature header points to the end header at the archive's end, past
  the packed streams. A volume bigger than one article has its end header beyond the bytes read here,
  so the answer is None. Where the whole end header is within ``data`` (small archives), it is read:
  an encoded (compressed) header whose coders include AES (method id 06F10701) means encrypted
  headers (``7z a -p -mhe=on``); otherwise the header is decompressed (LZMA, LZMA2 or stored) and a
  folder with an AES coder means encrypted files (``7z a -p``).

What ``encrypted`` means, so that no release is called passworded, or not, with false confidence:

- True: the headers are encrypted, or a file entry read (CRC verified) is encrypted.
- False: every header within ``data`` was read, none is encrypted, and at least one of them is a
  file entry with data (a directory or an empty file has nothing to encrypt, so its missing flag
  proves nothing). The headers past the end of ``data`` are unknown: an archive whose first files are
  plain and a later one encrypted reads False until that later header is within ``data`` (rar makes
  such archives: libarchive's test_read_format_rar4_encrypted.rar and ..._rar5_encrypted.rar hold a
  plain a.txt, then b.txt under a password). For 7z the end header lists everything, so False is the
  whole archive's answer.
- None: the bytes cannot tell: a header cut off by the end of ``data`` or failing its CRC, no file
  entry with data yet, a 7z end header beyond ``data``, a coder or a structure not read here.

Hostile input: any bytes give an ArchiveStart or None and never raise; the walk reads at most
``MAX_HEADERS`` headers and ``MAX_NAMES`` names, and inflates at most ``MAX_7Z_HEADER`` bytes of a 7z
header, with the LZMA dictionary capped by that size (a forged header asks for 4 GB).
"""

from __future__ import annotations

import lzma
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeAlias

__all__ = [
    "MAX_7Z_HEADER",
    "MAX_HEADERS",
    "MAX_NAMES",
    "RAR4_MARKER",
    "RAR5_SIGNATURE",
    "SEVEN_ZIP_SIGNATURE",
    "ArchiveKind",
    "ArchiveStart",
    "read_archive_start",
]

BytesLike: TypeAlias = bytes | bytearray | memoryview

RAR4_MARKER = b"Rar!\x1a\x07\x00"
RAR5_SIGNATURE = b"Rar!\x1a\x07\x01\x00"
SEVEN_ZIP_SIGNATURE = b"7z\xbc\xaf\x27\x1c"

MAX_HEADERS = 4096  # headers walked per input: a forged run of 7-byte blocks stops here
MAX_NAMES = 1000  # names kept; more entries are still read for their flags
MAX_7Z_HEADER = 1 << 20  # a 7z end header inflated beyond this is not read (None)
_RAR5_MAX_HEADER = 2 << 20  # RAR5's own limit on one header's size


class ArchiveKind(StrEnum):
    RAR4 = "rar4"  # RAR 1.5 to 4.x
    RAR5 = "rar5"
    SEVEN_ZIP = "7z"


@dataclass(frozen=True, slots=True)
class ArchiveStart:
    """What the start of an archive says (see the module's docstring for what each answer means)."""

    kind: ArchiveKind
    encrypted: bool | None  # a password is needed: True, False, or None when these bytes cannot tell
    headers_encrypted: bool  # the file names themselves are hidden (rar -hp, 7z -mhe=on)
    file_names: tuple[str, ...]  # of the file entries read, in archive order (directories included)
    volume: bool | None  # one volume of a multi-volume set; None where the format does not say (7z)
    first_volume: bool | None  # the set's first volume (True for a single archive); None: not said
    complete: bool  # the headers were read to the archive's end: file_names lists every entry
    detail: str  # why the answer is what it is, in a few words (for logs and tests)


class _Stop(Exception):
    """Internal: the input ends or breaks inside a structure (never leaves this module)."""


# --------------------------------------------------------------------------------------------- RAR


@dataclass(slots=True)
class _Walk:
    """What a RAR walk has seen so far."""

    names: list[str] = field(default_factory=list)
    encrypted_entry: bool = False
    plain_entries: int = 0  # file entries with data and no encryption flag
    volume: bool | None = None
    first_volume: bool | None = None

    def entry(self, name: str, *, encrypted: bool, has_data: bool, continued: bool) -> None:
        if len(self.names) < MAX_NAMES:
            self.names.append(name)
        if encrypted:
            self.encrypted_entry = True
        elif has_data:
            self.plain_entries += 1
        if continued:  # data from the previous volume: this is not the set's first
            self.first_volume = False

    def result(self, kind: ArchiveKind, ended: str | None, stopped: str | None) -> ArchiveStart:
        """``ended``: the walk read every header within the data (why it ended); ``stopped``: it could not."""
        if self.encrypted_entry:
            encrypted: bool | None = True
            detail = "an encrypted file entry"
        elif stopped is not None:
            encrypted, detail = None, stopped
        elif self.plain_entries == 0:
            encrypted, detail = None, "no file entry with data"
        else:
            encrypted, detail = False, f"no encrypted entry; {ended}"
        return ArchiveStart(
            kind=kind,
            encrypted=encrypted,
            headers_encrypted=False,
            file_names=tuple(self.names),
            volume=self.volume,
            first_volume=self.first_volume,
            complete=ended == _END,
            detail=detail,
        )


_END = "read to the end-of-archive header"
_AT_BOUNDARY = "the data ends after a header's data"
_IN_DATA = "the data ends inside a file's data"

_RAR4_BLOCK = struct.Struct("<HBHH")  # HEAD_CRC, HEAD_TYPE, HEAD_FLAGS, HEAD_SIZE
# PACK_SIZE, UNP_SIZE, HOST_OS, FILE_CRC, FTIME, UNP_VER, METHOD, NAME_SIZE, ATTR
_RAR4_FILE = struct.Struct("<IIBIIBBHI")
_RAR4_MAIN, _RAR4_FILE_HEAD, _RAR4_SERVICE, _RAR4_END = 0x73, 0x74, 0x7A, 0x7B
_RAR4_NO_CRC = frozenset((0x76, 0x79))  # old authenticity blocks: unrar does not check their CRC


def _walk_stop(
    walk: _Walk, kind: ArchiveKind, data: bytes, pos: int, headers: int, first: str
) -> ArchiveStart | None:
    """The answer when a RAR walk cannot read another header at ``pos``: the data ends there, or ended
    inside the last header's data, or the walk has read MAX_HEADERS; else None (read on)."""
    if pos == len(data):
        return walk.result(kind, _AT_BOUNDARY, f"the data ends before the {first}" if headers == 0 else None)
    if pos > len(data):
        return walk.result(kind, _IN_DATA, None)
    if headers >= MAX_HEADERS:
        return walk.result(kind, None, f"more than {MAX_HEADERS} headers")
    return None


def _read_rar4(data: bytes) -> ArchiveStart:
    walk = _Walk()
    kind = ArchiveKind.RAR4
    pos = len(RAR4_MARKER)
    headers = 0
    while True:
        if (stop := _walk_stop(walk, kind, data, pos, headers, "archive header")) is not None:
            return stop
        if pos + _RAR4_BLOCK.size > len(data):
            return walk.result(kind, None, "a header is cut off")
        crc, block, flags, size = _RAR4_BLOCK.unpack_from(data, pos)
        if size < _RAR4_BLOCK.size:
            return walk.result(kind, None, "a header with an impossible size")
        end = pos + size
        if end > len(data):
            return walk.result(kind, None, "a header is cut off")
        if block not in _RAR4_NO_CRC and zlib.crc32(data[pos + 2 : end]) & 0xFFFF != crc:
            return walk.result(kind, None, "a header fails its CRC")
        headers += 1
        if headers == 1:
            # The archive header comes first: without it this is no archive RAR wrote.
            if block != _RAR4_MAIN or size < 13:
                return walk.result(kind, None, "no archive header after the marker")
            walk.volume = bool(flags & 0x0001)
            if flags & 0x0100 or not flags & 0x0001:
                walk.first_volume = True
            elif flags & 0x0010:
                # New volume numbering (x.partN.rar) came with RAR 3.0, as did the first-volume flag:
                # an archive with the one and without the other is a later volume. RAR 2.x wrote
                # neither, so there only a file continued from the previous volume tells.
                walk.first_volume = False
            if flags & 0x0080:
                return ArchiveStart(
                    kind=kind,
                    encrypted=True,
                    headers_encrypted=True,
                    file_names=(),
                    volume=walk.volume,
                    first_volume=walk.first_volume,
                    complete=False,
                    detail="encrypted headers",
                )
            pos = end
            continue
        extra = 0
        if block in (_RAR4_FILE_HEAD, _RAR4_SERVICE):
            if size < _RAR4_BLOCK.size + _RAR4_FILE.size:
                return walk.result(kind, None, "a file header too short")
            pack_size, _, host, _, _, _, _, name_size, _ = _RAR4_FILE.unpack_from(data, pos + 7)
            at = pos + 7 + _RAR4_FILE.size
            if flags & 0x0100:  # LHD_LARGE: the high 32 bits of both sizes follow
                if at + 8 > end:
                    return walk.result(kind, None, "a file header too short")
                pack_size |= struct.unpack_from("<I", data, at)[0] << 32
                at += 8
            if at + name_size > end:
                return walk.result(kind, None, "a file name beyond its header")
            extra = pack_size
            if block == _RAR4_FILE_HEAD:
                directory = flags & 0x00E0 == 0x00E0
                name = _rar4_name(data[at : at + name_size], unicode=bool(flags & 0x0200))
                if host in (0, 2):  # MS-DOS, Windows: "dir\\file", as unrar and libarchive read it
                    name = name.replace("\\", "/")
                walk.entry(
                    name,
                    encrypted=bool(flags & 0x0004),
                    has_data=pack_size > 0 and not directory,
                    continued=bool(flags & 0x0001),
                )
        elif flags & 0x8000:
            if size < _RAR4_BLOCK.size + 4:
                return walk.result(kind, None, "a header too short for its ADD_SIZE")
            extra = struct.unpack_from("<I", data, pos + 7)[0]
        if block == _RAR4_END:
            return walk.result(kind, _END, None)
        pos = end + extra


def _rar4_name(raw: bytes, *, unicode: bool) -> str:
    """A RAR4 file name. Without the Unicode flag it is in the creator's code page (UTF-8 from RAR for
    Linux, the OEM page from RAR for Windows: cp437 is the guess). With it, either the whole field is
    UTF-8 (no NUL) or an OEM name, a NUL, and the Unicode name in RAR's own compact encoding."""
    if unicode and b"\0" in raw:
        oem, _, encoded = raw.partition(b"\0")
        decoded = _rar4_unicode_name(oem, encoded)
        if decoded:
            return decoded
        raw = oem
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp437")


def _rar4_unicode_name(oem: bytes, encoded: bytes) -> str:
    """unrar's EncodeFileName::Decode: UTF-16 units, each taken from the stream (one byte with a high
    byte, or two bytes) or copied from the OEM name (with a correction added), two bits of flags each."""
    units: list[int] = []
    limit = 2048  # unrar's own cap on a name's length (NM)
    if not encoded:
        return ""
    high = encoded[0]
    pos = 1
    flags = 0
    flag_bits = 0
    while pos < len(encoded) and len(units) < limit:
        if flag_bits == 0:
            flags = encoded[pos]
            pos += 1
            flag_bits = 8
        mode = flags >> 6
        if mode == 0:
            if pos >= len(encoded):
                break
            units.append(encoded[pos])
            pos += 1
        elif mode == 1:
            if pos >= len(encoded):
                break
            units.append(encoded[pos] + (high << 8))
            pos += 1
        elif mode == 2:
            if pos + 1 >= len(encoded):
                break
            units.append(encoded[pos] | (encoded[pos + 1] << 8))
            pos += 2
        else:
            if pos >= len(encoded):
                break
            length = encoded[pos]
            pos += 1
            if length & 0x80:
                if pos >= len(encoded):
                    break
                correction = encoded[pos]
                pos += 1
                for _ in range((length & 0x7F) + 2):
                    if len(units) >= min(limit, len(oem)):
                        break
                    units.append(((oem[len(units)] + correction) & 0xFF) + (high << 8))
            else:
                for _ in range(length + 2):
                    if len(units) >= min(limit, len(oem)):
                        break
                    units.append(oem[len(units)])
        flags = (flags << 2) & 0xFF
        flag_bits -= 2
    raw = b"".join(unit.to_bytes(2, "little") for unit in units)
    return raw.decode("utf-16-le", errors="replace")


class _Cursor:
    """Bounds-checked reads over one buffer: running past ``end`` raises _Stop."""

    __slots__ = ("data", "end", "pos")

    def __init__(self, data: bytes, pos: int, end: int) -> None:
        self.data = data
        self.pos = pos
        self.end = min(end, len(data))

    def take(self, count: int) -> bytes:
        if count < 0 or self.pos + count > self.end:
            raise _Stop
        out = self.data[self.pos : self.pos + count]
        self.pos += count
        return out

    def byte(self) -> int:
        if self.pos >= self.end:
            raise _Stop
        value = self.data[self.pos]
        self.pos += 1
        return value

    def u32(self) -> int:
        value: int = struct.unpack("<I", self.take(4))[0]
        return value

    def vint(self) -> int:
        """RAR5's variable-length integer: 7 bits a byte, low first, high bit set while more follow."""
        value = 0
        for shift in range(0, 70, 7):
            byte = self.byte()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
        raise _Stop  # more than 10 bytes: not a 64-bit number

    def number(self) -> int:
        """7z's NUMBER: the first byte's leading one bits count the little-endian bytes that follow."""
        first = self.byte()
        mask = 0x80
        value = 0
        for index in range(8):
            if not first & mask:
                return value | ((first & (mask - 1)) << (8 * index))
            value |= self.byte() << (8 * index)
            mask >>= 1
        return value


def _read_rar5(data: bytes) -> ArchiveStart:
    walk = _Walk()
    kind = ArchiveKind.RAR5
    pos = len(RAR5_SIGNATURE)
    headers = 0
    while True:
        if (stop := _walk_stop(walk, kind, data, pos, headers, "main header")) is not None:
            return stop
        try:
            cursor = _Cursor(data, pos, len(data))
            crc = cursor.u32()
            size_at = cursor.pos
            size = cursor.vint()
            if size == 0 or size > _RAR5_MAX_HEADER or cursor.pos - size_at > 3:
                return walk.result(kind, None, "a header with an impossible size")
            end = cursor.pos + size
            if end > len(data):
                raise _Stop
        except _Stop:
            return walk.result(kind, None, "a header is cut off")
        if zlib.crc32(data[size_at:end]) != crc:
            return walk.result(kind, None, "a header fails its CRC")
        headers += 1
        try:
            cursor.end = end
            block = cursor.vint()
            flags = cursor.vint()
            extra_size = cursor.vint() if flags & 0x0001 else 0
            data_size = cursor.vint() if flags & 0x0002 else 0
            if extra_size > end - cursor.pos:
                return walk.result(kind, None, "an extra area larger than its header")
            extra = _Cursor(data, end - extra_size, end)
            cursor.end = end - extra_size
            if block == 4:  # archive encryption: every header after this one is ciphertext
                return ArchiveStart(
                    kind=kind,
                    encrypted=True,
                    headers_encrypted=True,
                    file_names=tuple(walk.names),  # none in an archive rar wrote: this header comes first
                    volume=walk.volume,
                    first_volume=walk.first_volume,
                    complete=False,
                    detail="encrypted headers",
                )
            if block == 1:
                archive_flags = cursor.vint()
                walk.volume = bool(archive_flags & 0x0001)
                number = cursor.vint() if archive_flags & 0x0002 else 0
                if walk.first_volume is None:
                    walk.first_volume = number == 0
            elif block == 2:
                file_flags = cursor.vint()
                cursor.vint()  # unpacked size
                cursor.vint()  # attributes
                if file_flags & 0x0002:
                    cursor.take(4)  # mtime
                if file_flags & 0x0004:
                    cursor.take(4)  # data CRC32
                cursor.vint()  # compression information
                cursor.vint()  # host OS
                name = cursor.take(cursor.vint()).decode("utf-8", errors="replace")
                walk.entry(
                    name,
                    encrypted=_rar5_encryption_record(extra),
                    has_data=data_size > 0 and not file_flags & 0x0001,
                    continued=bool(flags & 0x0008),
                )
            elif block == 5:
                return walk.result(kind, _END, None)
        except _Stop:
            return walk.result(kind, None, "a header's fields overrun it")
        pos = end + data_size


def _rar5_encryption_record(extra: _Cursor) -> bool:
    """Whether a file header's extra area holds a file encryption record (type 1)."""
    while extra.pos < extra.end:
        size = extra.vint()
        record_end = extra.pos + size
        if size == 0 or record_end > extra.end:
            raise _Stop
        if extra.vint() == 1:
            return True
        extra.pos = record_end
    return False


# ---------------------------------------------------------------------------------------------- 7z

_7Z_START = struct.Struct("<6sBBIQQI")  # signature, major, minor, start header CRC, offset, size, CRC
_AES = b"\x06\xf1\x07\x01"
_COPY, _LZMA, _LZMA2 = b"\x00", b"\x03\x01\x01", b"\x21"
_K_END, _K_HEADER, _K_ARCHIVE_PROPERTIES, _K_ADDITIONAL_STREAMS, _K_MAIN_STREAMS = (
    0x00,
    0x01,
    0x02,
    0x03,
    0x04,
)
_K_FILES, _K_PACK_INFO, _K_UNPACK_INFO, _K_SUBSTREAMS, _K_SIZE, _K_CRC = 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A
_K_FOLDER, _K_UNPACK_SIZE, _K_NUM_UNPACK_STREAM, _K_NAME, _K_ENCODED_HEADER = 0x0B, 0x0C, 0x0D, 0x11, 0x17
_MAX_CODERS = 64  # 7-Zip's own limit per folder


@dataclass(slots=True)
class _Folder:
    coders: list[tuple[bytes, bytes]]  # (method id, properties)
    out_streams: int
    unpack_sizes: list[int] = field(default_factory=list)
    crc: int | None = None


@dataclass(slots=True)
class _Streams:
    pack_pos: int = 0
    pack_sizes: list[int] = field(default_factory=list)
    folders: list[_Folder] = field(default_factory=list)


def _seven_zip(
    encrypted: bool | None,
    detail: str,
    names: Sequence[str] = (),
    *,
    headers: bool = False,
    complete: bool = False,
) -> ArchiveStart:
    return ArchiveStart(
        kind=ArchiveKind.SEVEN_ZIP,
        encrypted=encrypted,
        headers_encrypted=headers,
        file_names=tuple(names[:MAX_NAMES]),
        volume=None,  # a split 7z is its bytes cut in pieces: nothing inside says so
        first_volume=True,  # only a set's first piece starts with the signature header
        complete=complete,
        detail=detail,
    )


def _read_7z(data: bytes) -> ArchiveStart:
    if len(data) < _7Z_START.size:
        return _seven_zip(None, "the signature header is cut off")
    _, _, _, start_crc, offset, size, header_crc = _7Z_START.unpack_from(data)
    if zlib.crc32(data[12:32]) != start_crc:
        return _seven_zip(None, "the signature header fails its CRC")
    if size == 0:
        return _seven_zip(None, "an empty archive")
    begin = _7Z_START.size + offset
    if begin + size > len(data):
        return _seven_zip(None, "the end header lies beyond the data")
    header = data[begin : begin + size]
    if zlib.crc32(header) != header_crc:
        return _seven_zip(None, "the end header fails its CRC")
    try:
        cursor = _Cursor(header, 0, len(header))
        first = cursor.byte()
        if first == _K_ENCODED_HEADER:
            streams = _streams_info(cursor)
            if any(method == _AES for folder in streams.folders for method, _ in folder.coders):
                return _seven_zip(True, "encrypted headers", headers=True)
            decoded = _unpack_header(data, streams)
            if decoded is None:
                return _seven_zip(None, "the end header is packed by a method not read here")
            cursor = _Cursor(decoded, 0, len(decoded))
            first = cursor.byte()
        if first != _K_HEADER:
            return _seven_zip(None, "no header in the end header")
        folders, names = _header(cursor)
    except _Stop:
        return _seven_zip(None, "the end header is malformed")
    if any(method == _AES for folder in folders for method, _ in folder.coders):
        return _seven_zip(True, "a folder with an AES coder", names, complete=True)
    if not folders:
        return _seven_zip(None, "no file with data", names, complete=True)
    return _seven_zip(False, "no AES coder in any folder", names, complete=True)


def _unpack_header(data: bytes, streams: _Streams) -> bytes | None:
    """The encoded header's one folder, unpacked, when its coder is one read here and sizes are sane."""
    if len(streams.folders) != 1 or len(streams.pack_sizes) != 1:
        return None
    folder = streams.folders[0]
    if len(folder.coders) != 1 or len(folder.unpack_sizes) != 1:
        return None
    method, properties = folder.coders[0]
    unpack_size = folder.unpack_sizes[0]
    start = _7Z_START.size + streams.pack_pos
    packed = data[start : start + streams.pack_sizes[0]]
    if unpack_size > MAX_7Z_HEADER or start + streams.pack_sizes[0] > len(data):
        return None
    # The dictionary needs to be no bigger than the output: capping it keeps a forged size from making
    # liblzma allocate gigabytes.
    dictionary = max(1 << 12, min(unpack_size, MAX_7Z_HEADER))
    try:
        if method == _COPY:
            out = packed[:unpack_size]
        elif method == _LZMA and len(properties) == 5:
            lclppb = properties[0]
            lc, lp, pb = lclppb % 9, (lclppb // 9) % 5, lclppb // 45
            filters = [{"id": lzma.FILTER_LZMA1, "dict_size": dictionary, "lc": lc, "lp": lp, "pb": pb}]
            out = lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=filters).decompress(packed, unpack_size)
        elif method == _LZMA2 and len(properties) == 1:
            filters = [{"id": lzma.FILTER_LZMA2, "dict_size": dictionary}]
            out = lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=filters).decompress(packed, unpack_size)
        else:
            return None
    except (lzma.LZMAError, ValueError, MemoryError):
        return None
    if len(out) != unpack_size or (folder.crc is not None and zlib.crc32(out) != folder.crc):
        return None
    return out


def _header(cursor: _Cursor) -> tuple[list[_Folder], list[str]]:
    """A decoded header (after its kHeader byte): every folder (main and additional streams) and the names."""
    folders: list[_Folder] = []
    names: list[str] = []
    kind = cursor.byte()
    if kind == _K_ARCHIVE_PROPERTIES:
        while cursor.byte() != _K_END:
            cursor.take(cursor.number())
        kind = cursor.byte()
    if kind == _K_ADDITIONAL_STREAMS:
        folders += _streams_info(cursor).folders
        kind = cursor.byte()
    if kind == _K_MAIN_STREAMS:
        folders += _streams_info(cursor).folders
        kind = cursor.byte()
    if kind == _K_FILES:
        names = _files_info(cursor)
        kind = cursor.byte()
    if kind != _K_END:
        raise _Stop
    return folders, names


def _streams_info(cursor: _Cursor) -> _Streams:
    streams = _Streams()
    kind = cursor.byte()
    if kind == _K_PACK_INFO:
        streams.pack_pos = cursor.number()
        count = cursor.number()
        if count > cursor.end - cursor.pos:  # each pack size takes a byte at least
            raise _Stop
        kind = cursor.byte()
        while kind != _K_END:
            if kind == _K_SIZE:
                streams.pack_sizes = [cursor.number() for _ in range(count)]
            elif kind == _K_CRC:
                _skip_digests(cursor, count)
            else:
                cursor.take(cursor.number())
            kind = cursor.byte()
        kind = cursor.byte()
    if kind == _K_UNPACK_INFO:
        streams.folders = _unpack_info(cursor)
        kind = cursor.byte()
    if kind == _K_SUBSTREAMS:
        _substreams_info(cursor, streams.folders)
        kind = cursor.byte()
    if kind != _K_END:
        raise _Stop
    return streams


def _unpack_info(cursor: _Cursor) -> list[_Folder]:
    if cursor.byte() != _K_FOLDER:
        raise _Stop
    count = cursor.number()
    if count > cursor.end - cursor.pos or cursor.byte() != 0:  # 0: folders inline (1: external, unused)
        raise _Stop
    folders = [_folder(cursor) for _ in range(count)]
    if cursor.byte() != _K_UNPACK_SIZE:
        raise _Stop
    for folder in folders:
        folder.unpack_sizes = [cursor.number() for _ in range(folder.out_streams)]
    kind = cursor.byte()
    if kind == _K_CRC:
        for folder, crc in zip(folders, _digests(cursor, len(folders)), strict=True):
            folder.crc = crc
        kind = cursor.byte()
    if kind != _K_END:
        raise _Stop
    return folders


def _folder(cursor: _Cursor) -> _Folder:
    count = cursor.number()
    if not 0 < count <= _MAX_CODERS:
        raise _Stop
    coders: list[tuple[bytes, bytes]] = []
    in_total = out_total = 0
    for _ in range(count):
        flags = cursor.byte()
        if flags & 0x80:  # alternative methods: never written
            raise _Stop
        method = cursor.take(flags & 0x0F)
        ins, outs = (cursor.number(), cursor.number()) if flags & 0x10 else (1, 1)
        if ins > _MAX_CODERS or outs > _MAX_CODERS:
            raise _Stop
        properties = cursor.take(cursor.number()) if flags & 0x20 else b""
        coders.append((method, properties))
        in_total += ins
        out_total += outs
    bind_pairs = out_total - 1
    if bind_pairs < 0 or bind_pairs > in_total:
        raise _Stop
    for _ in range(bind_pairs):
        cursor.number()
        cursor.number()
    packed = in_total - bind_pairs
    if packed > 1:
        for _ in range(packed):
            cursor.number()
    return _Folder(coders=coders, out_streams=out_total)


def _digests(cursor: _Cursor, count: int) -> list[int | None]:
    """CRCs of ``count`` streams (the caller's list of that length exists: count is bounded by it)."""
    if cursor.byte():
        defined = [True] * count
    else:
        bits = cursor.take((count + 7) // 8)
        defined = [bool(bits[i >> 3] & (0x80 >> (i & 7))) for i in range(count)]
    if 4 * sum(defined) > cursor.end - cursor.pos:
        raise _Stop
    return [cursor.u32() if present else None for present in defined]


def _skip_digests(cursor: _Cursor, count: int) -> None:
    """Digests only passed over: a forged count costs its bytes, never a list of that length."""
    if cursor.byte():
        cursor.take(4 * count)
    else:
        bits = cursor.take((count + 7) // 8)
        cursor.take(4 * int.from_bytes(bits, "big").bit_count())


def _substreams_info(cursor: _Cursor, folders: list[_Folder]) -> None:
    streams = [1] * len(folders)
    kind = cursor.byte()
    if kind == _K_NUM_UNPACK_STREAM:
        streams = [cursor.number() for _ in folders]
        if sum(streams) > cursor.end:  # each stream's size or CRC takes bytes: a forged count stops here
            raise _Stop
        kind = cursor.byte()
    if kind == _K_SIZE:
        for count in streams:
            for _ in range(count - 1):
                cursor.number()
        kind = cursor.byte()
    while kind != _K_END:
        if kind == _K_CRC:
            unknown = sum(
                count
                for count, folder in zip(streams, folders, strict=True)
                if not (count == 1 and folder.crc is not None)
            )
            _skip_digests(cursor, unknown)
        else:
            cursor.take(cursor.number())
        kind = cursor.byte()


def _files_info(cursor: _Cursor) -> list[str]:
    cursor.number()  # the number of files: the names say it again
    names: list[str] = []
    while True:
        kind = cursor.byte()
        if kind == _K_END:
            return names
        body = cursor.take(cursor.number())
        if kind == _K_NAME and body[:1] == b"\0":  # 0: names inline
            names = _utf16_names(body[1:])


def _utf16_names(raw: bytes) -> list[str]:
    """Names in UTF-16LE, each ending with a NUL unit (a NUL byte pair on a unit boundary)."""
    names: list[str] = []
    start = 0
    for at in range(0, len(raw) - 1, 2):
        if raw[at] == 0 and raw[at + 1] == 0:
            if len(names) < MAX_NAMES:
                names.append(raw[start:at].decode("utf-16-le", errors="replace"))
            start = at + 2
    return names


# --------------------------------------------------------------------------------------------- entry


def read_archive_start(data: BytesLike) -> ArchiveStart | None:
    """What the start of an archive volume says, or None when ``data`` is not RAR4, RAR5 or 7z.

    Never raises, whatever the bytes (see the module's docstring for the meaning of each answer).
    """
    raw = bytes(data)
    if raw.startswith(RAR5_SIGNATURE):
        return _read_rar5(raw)
    if raw.startswith(RAR4_MARKER):
        return _read_rar4(raw)
    if raw.startswith(SEVEN_ZIP_SIGNATURE):
        return _read_7z(raw)
    return None

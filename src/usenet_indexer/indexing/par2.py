"""Real file names from a PAR2 file: what the probe reads for releases posted under obfuscated names.

A release posted as ``a8f3c1….part01.rar`` still carries a PAR2 index whose File Description packets
name the files as they were before obfuscation (downloaders rename by them). The probe fetches the
index file's article, yEnc-decodes it, and hands the bytes here. Pure: bytes in, names out.

PAR2 (Parity Volume Set Specification 2.0) is a sequence of packets, each::

    magic            8 bytes   b"PAR2\\0PKT"
    length           u64 LE    of the whole packet, header included; a multiple of 4, at least 64
    packet MD5       16 bytes  MD5 of everything from the recovery set id to the packet's end
    recovery set id  16 bytes
    type             16 bytes  e.g. b"PAR 2.0\\0FileDesc"
    body             length - 64 bytes

The packets read here:

- **File Description** (``PAR 2.0\\0FileDesc``): file id (16), MD5 of the file (16), MD5 of its first
  16 KiB (16), length u64 LE, then the name, padded with NULs to a multiple of 4 (not necessarily
  NUL-terminated). The spec says ASCII; par2cmdline and MultiPar write UTF-8; QuickPar writes the
  Windows code page, so a name that is not UTF-8 is read as cp1252 (undefined bytes become U+FFFD).
- **Unicode Filename** (``PAR 2.0\\0UniFileN``, optional): file id, then the name in UTF-16LE. Written by
  QuickPar next to its code-page names; where present it wins, being the author's exact name.
- **Main** (``PAR 2.0\\0Main\\0\\0\\0\\0``): slice size and the ids of every file in the set, so a reader
  can tell when some descriptions are missing.
- **Creator** (``PAR 2.0\\0Creator\\0``): the program that made the set, ASCII.

Everything else (Input File Slice Checksums, Recovery Slices, vendor packets) is counted and skipped.

Robustness, because the input is whatever a poster sent: the reader scans for the magic rather than
trusting lengths, so leftover bytes around the packets (a sloppy yEnc decode, another file's tail) are
skipped; a packet whose MD5 does not match is skipped and counted (a damaged article must not yield a
wrong name); input that ends inside a packet is reported as truncated, with the packets before it kept.
It raises ``Par2Error`` only when not one packet could be read. Names are the poster's text: they may
hold ``/`` (par2cmdline writes subdirectories that way), ``..`` or control characters, so sanitize one
before using it as a path.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from typing import TypeAlias

__all__ = [
    "RECOVERY_HEADER",
    "Par2Error",
    "Par2File",
    "Par2Index",
    "RecoveryHead",
    "read_par2",
    "recovery_head",
]

BytesLike: TypeAlias = bytes | bytearray | memoryview

MAGIC = b"PAR2\0PKT"
_PAR1_MAGIC = b"PAR\0\0\0\0\0"
_HEADER = struct.Struct("<8sQ16s16s16s")
HEADER_SIZE = _HEADER.size  # 64

TYPE_MAIN = b"PAR 2.0\0Main\0\0\0\0"
TYPE_FILE_DESC = b"PAR 2.0\0FileDesc"
TYPE_UNICODE_NAME = b"PAR 2.0\0UniFileN"
TYPE_CREATOR = b"PAR 2.0\0Creator\0"
TYPE_RECOVERY_SLICE = b"PAR 2.0\0RecvSlic"
TYPE_SLICE_CHECKSUMS = b"PAR 2.0\0IFSC\0\0\0\0"

_FILE_DESC = struct.Struct("<16s16s16sQ")  # file id, MD5 of the file, MD5 of its first 16 KiB, length
_MAIN = struct.Struct("<QI")  # slice size, number of files in the recovery set
RECOVERY_HEADER = HEADER_SIZE + 4  # a Recovery Slice packet: the header, the exponent (u32 LE), the slice


class Par2Error(ValueError):
    """Not one PAR2 packet could be read from the input."""


@dataclass(frozen=True, slots=True)
class Par2File:
    """One file the PAR2 set describes."""

    name: str
    size: int
    hash_16k: bytes  # MD5 of the first 16 KiB: downloaders match obfuscated files to names by it
    hash_full: bytes  # MD5 of the whole file
    file_id: bytes
    recovery_set_id: bytes


@dataclass(frozen=True, slots=True)
class Par2Index:
    """What a PAR2 file says, and how much of it could be read."""

    files: tuple[Par2File, ...]  # in the order their descriptions appear
    recovery_set_ids: tuple[bytes, ...]
    slice_size: int | None  # from the Main packet, None without one
    creator: str | None
    packets: int  # packets read (MD5 verified)
    bad_packets: int  # skipped: MD5 mismatch, impossible length or a malformed body
    truncated: bool  # the input ended inside a packet
    missing_files: int  # files the Main packet lists without a readable description
    recovery_slices: int  # recovery slice packets (a volume file has them, an index file none)
    other_packets: int = 0  # valid packets of types not read here
    # An index read whole and clean (no recovery slice, nothing damaged or cut off): the bytes of its
    # packets but the Creator's, which par2cmdline repeats in each volume (indexing/volumes.py); else None.
    critical_bytes: int | None = None
    creator_bytes: int = 0  # the Creator packets' bytes


# A File Description as read: file id, MD5 of the file, MD5 of its first 16 KiB, length, raw name.
_Description: TypeAlias = tuple[bytes, bytes, bytes, int, bytes]
# Packets are keyed by (recovery set id, file id): two sets in one input may reuse a file id.
_Key: TypeAlias = tuple[bytes, bytes]


@dataclass(slots=True)
class _Reader:
    data: bytes
    view: memoryview
    descriptions: dict[_Key, _Description] = field(default_factory=dict)
    unicode_names: dict[_Key, str] = field(default_factory=dict)
    main_ids: dict[bytes, tuple[bytes, ...]] = field(default_factory=dict)
    set_ids: dict[bytes, None] = field(default_factory=dict)
    slice_size: int | None = None
    creator: str | None = None
    packets: int = 0
    bad: int = 0
    slices: int = 0
    other: int = 0
    truncated: bool = False
    lengths: dict[bytes, int] = field(default_factory=dict)  # bytes of the verified packets, by type

    def run(self) -> None:
        data, n = self.data, len(self.data)
        pos = data.find(MAGIC)
        while pos != -1:
            if n - pos < HEADER_SIZE:
                self.truncated = True
                break
            _magic, length, md5, set_id, kind = _HEADER.unpack_from(data, pos)
            if length < HEADER_SIZE or length % 4:
                self.bad += 1
                pos = data.find(MAGIC, pos + 8)
                continue
            if pos + length > n:
                # Cut off, or a damaged length: either way unreadable. Look for packets after it; only
                # if there are none is this where the input ended.
                pos = data.find(MAGIC, pos + 8)
                if pos == -1:
                    self.truncated = True
                else:
                    self.bad += 1
                continue
            if hashlib.md5(self.view[pos + 32 : pos + length]).digest() != md5:
                self.bad += 1
                pos = data.find(MAGIC, pos + 8)
                continue
            if self._packet(kind, set_id, self.view[pos + HEADER_SIZE : pos + length]):
                self.packets += 1
                self.set_ids.setdefault(set_id)
                self.lengths[kind] = self.lengths.get(kind, 0) + length
            else:
                self.bad += 1
            end = pos + length
            pos = data.find(MAGIC, end)
            # Cut off inside the next packet's magic: find() cannot see a partial magic.
            if pos == -1 and end < n and MAGIC.startswith(data[end:]):
                self.truncated = True

    def _packet(self, kind: bytes, set_id: bytes, body: memoryview) -> bool:
        """Read one verified packet's body; False if the body is malformed for its type."""
        if kind == TYPE_FILE_DESC:
            if body.nbytes < _FILE_DESC.size:
                return False
            file_id, hash_full, hash_16k, size = _FILE_DESC.unpack_from(body)
            raw = bytes(body[_FILE_DESC.size :]).split(b"\0", 1)[0]
            self.descriptions.setdefault((set_id, file_id), (file_id, hash_full, hash_16k, size, raw))
        elif kind == TYPE_UNICODE_NAME:
            if body.nbytes < 16:
                return False
            name = _utf16_name(bytes(body[16:]))
            if name:
                self.unicode_names.setdefault((set_id, bytes(body[:16])), name)
        elif kind == TYPE_MAIN:
            if body.nbytes < _MAIN.size or (body.nbytes - _MAIN.size) % 16:
                return False
            slice_size, _recoverable = _MAIN.unpack_from(body)
            ids = bytes(body[_MAIN.size :])
            self.main_ids.setdefault(set_id, tuple(ids[i : i + 16] for i in range(0, len(ids), 16)))
            if self.slice_size is None:
                self.slice_size = slice_size
        elif kind == TYPE_CREATOR:
            if self.creator is None:
                self.creator = bytes(body).rstrip(b"\0").decode("ascii", "replace")
        elif kind == TYPE_RECOVERY_SLICE:
            self.slices += 1
        else:
            self.other += 1
        return True

    def index(self) -> Par2Index:
        files = []
        for key, (file_id, hash_full, hash_16k, size, raw) in self.descriptions.items():
            name = self.unicode_names.get(key) or _decode_name(raw)
            files.append(Par2File(name, size, hash_16k, hash_full, file_id, key[0]))
        missing = sum(
            1 for set_id, ids in self.main_ids.items() for i in ids if (set_id, i) not in self.descriptions
        )
        clean = not (self.bad or self.truncated or self.slices or missing) and len(self.set_ids) == 1
        creator = self.lengths.get(TYPE_CREATOR, 0)
        return Par2Index(
            files=tuple(files),
            recovery_set_ids=tuple(self.set_ids),
            slice_size=self.slice_size,
            creator=self.creator,
            packets=self.packets,
            bad_packets=self.bad,
            truncated=self.truncated,
            missing_files=missing,
            recovery_slices=self.slices,
            other_packets=self.other,
            critical_bytes=sum(self.lengths.values()) - creator if clean else None,
            creator_bytes=creator,
        )


def _decode_name(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        # QuickPar and other Windows tools wrote the ANSI code page, cp1252 in the West.
        return raw.decode("cp1252", "replace")


def _utf16_name(raw: bytes) -> str:
    if len(raw) % 2:
        raw = raw[:-1]
    name = raw.decode("utf-16-le", "replace")
    return name.split("\0", 1)[0]


def read_par2(data: BytesLike) -> Par2Index:
    """The files a PAR2 file (index or volume) describes. Raises ``Par2Error`` only if no packet is
    readable at all; damaged, cut-off and unknown packets are skipped and counted."""
    raw = data if isinstance(data, bytes) else bytes(data)
    reader = _Reader(raw, memoryview(raw))
    reader.run()
    if reader.packets == 0:
        raise Par2Error(_nothing_readable(raw, reader))
    return reader.index()


@dataclass(frozen=True, slots=True)
class RecoveryHead:
    """What the start of a recovery volume says of its recovery slices (indexing/volumes.py names the
    volume by it)."""

    recovery_set_id: bytes
    slice_size: int  # from the Recovery Slice packets' length
    exponents: tuple[int, ...]  # of the Recovery Slice packets whose headers lie in the bytes read, in order
    whole: bool  # the bytes read were the whole file: ``exponents`` are all its slices


def recovery_head(data: BytesLike, *, whole: bool = False) -> RecoveryHead | None:
    """The Recovery Slice packets at the start of a PAR2 file (``data``: its first bytes, ``whole`` when
    they are all of it), packet after packet from offset 0 by their lengths. A packet cut off by the end
    of ``data`` counts by its header (a slice is often longer than an article; the yEnc CRC vouches for
    the article's bytes). None when the file does not start with PAR2 packets, a whole packet fails its
    MD5, the recovery packets disagree on their set or length, or none is within ``data``."""
    raw = data if isinstance(data, bytes) else bytes(data)
    view = memoryview(raw)
    n, pos = len(raw), 0
    exponents: list[int] = []
    shape: tuple[bytes, int] | None = None
    while pos + HEADER_SIZE <= n and raw.startswith(MAGIC, pos):
        _magic, length, md5, set_id, kind = _HEADER.unpack_from(raw, pos)
        if length < HEADER_SIZE or length % 4:
            return None
        cut = pos + length > n
        if not cut and hashlib.md5(view[pos + 32 : pos + length]).digest() != md5:
            return None
        if kind == TYPE_RECOVERY_SLICE:
            if pos + RECOVERY_HEADER > n or length < RECOVERY_HEADER:
                break
            if shape is not None and shape != (set_id, length):
                return None
            shape = (set_id, length)
            exponents.append(struct.unpack_from("<I", raw, pos + HEADER_SIZE)[0])
        if cut:
            break
        pos += length
    if shape is None:
        return None
    return RecoveryHead(shape[0], shape[1] - RECOVERY_HEADER, tuple(exponents), whole and pos == n)


def _nothing_readable(data: bytes, reader: _Reader) -> str:
    size = f"{len(data)} bytes"
    if not data:
        return "no PAR2 data: the input is empty"
    if data.startswith(_PAR1_MAGIC):
        return f"a PAR1 file ({size}), not PAR2: its names are not read"
    if data.lstrip().startswith(b"=ybegin"):
        return f"no PAR2 packet in {size}: the input is still yEnc-encoded (decode the article body first)"
    if reader.bad or reader.truncated:
        problems = []
        if reader.bad:
            problems.append(f"{reader.bad} damaged (MD5 mismatch or impossible length)")
        if reader.truncated:
            problems.append("one cut off at the end")
        return f"no readable PAR2 packet in {size}: {', '.join(problems)}"
    return f"no PAR2 packet in {size}: the magic {MAGIC!r} does not occur"

"""RAR4 and RAR5 archives built byte by byte, for the archive reader's tests (Debian ships no `rar`).

Stored method only (no compression), single or multi-volume. A member may be "encrypted-flagged":
its header says encrypted exactly as `rar -p` writes it (RAR4: flag 0x0004 with an 8-byte salt; RAR5:
a file encryption extra record with salt, IV and password check) and its data is random bytes padded
to the AES block, as ciphertext would be; and an archive may have its headers "encrypted" (RAR4: archive
flag 0x0080; RAR5: an archive encryption header) with random bytes where the ciphertext would be. No
real AES: the reader under test looks at flags only, and the real readers (bsdtar, 7zz) list these
archives and mark the entries encrypted (tests/unit/indexing/test_archives.py proves each form).

Layouts: RARFileFormat.txt of RAR 3.x (technote.txt) for RAR4, rarlab.com/technote.htm for RAR5.
"""

from __future__ import annotations

import random
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

RAR4_MARKER = b"Rar!\x1a\x07\x00"
RAR5_SIGNATURE = b"Rar!\x1a\x07\x01\x00"
DOS_TIME = (2024 - 1980) << 25 | 5 << 21 | 17 << 16 | 12 << 11 | 30 << 5  # 2024-05-17 12:30:00
UNIX_TIME = 1_715_949_000

NameForm = Literal["auto", "utf8", "encoded", "oem"]


@dataclass(frozen=True)
class Member:
    """One entry of an archive: a file (its content) or a directory."""

    name: str
    content: bytes = b""
    encrypted: bool = False
    directory: bool = False


def _packed(member: Member, rng: random.Random) -> bytes:
    if not member.encrypted or not member.content:
        return member.content
    # Ciphertext-like: AES-CBC pads the stored data to whole 16-byte blocks.
    return rng.randbytes(-(-len(member.content) // 16) * 16)


def _pieces(
    members: Sequence[Member], volume_size: int | None, rng: random.Random
) -> list[list[tuple[Member, bytes, bool, bool]]]:
    """Members cut into volumes of at most volume_size data bytes: (member, piece, split before, after)."""
    volumes: list[list[tuple[Member, bytes, bool, bool]]] = [[]]
    room = volume_size
    for member in members:
        packed = _packed(member, rng)
        start = 0
        while True:
            if room == 0 and packed:  # this volume is full: the member starts in the next one
                volumes.append([])
                room = volume_size
            take = len(packed) - start if room is None else min(room, len(packed) - start)
            piece = packed[start : start + take]
            more = start + take < len(packed)
            volumes[-1].append((member, piece, start > 0, more))
            start += take
            if room is not None:
                room -= take
            if not more:
                break
    return volumes


# -------------------------------------------------------------------------------------------- RAR4


def _rar4_block(block: int, flags: int, body: bytes) -> bytes:
    head = struct.pack("<BHH", block, flags, 7 + len(body)) + body
    return struct.pack("<H", zlib.crc32(head) & 0xFFFF) + head


def _oem(name: str) -> bytes:
    return name.encode("ascii", errors="replace")


def encode_rar4_name(name: str) -> bytes:
    """RAR's compact Unicode name (unrar's EncodeFileName): the OEM name, a NUL, then a high byte and
    UTF-16 units in four modes, two flag bits each: 0 a unit below 256, 1 a unit with the high byte,
    2 a whole unit, 3 a run copied from the OEM name. Every mode is used, so the reader meets them all."""
    oem = _oem(name)
    units = list(struct.unpack(f"<{len(name.encode('utf-16-le')) // 2}H", name.encode("utf-16-le")))
    highs = [unit >> 8 for unit in units if unit >= 256]
    high = max(set(highs), key=highs.count) if highs else 0
    ops: list[tuple[int, bytes]] = []
    at = 0
    while at < len(units):
        run = 0
        while (
            at + run < len(units) and at + run < len(oem) and units[at + run] == oem[at + run] and run < 129
        ):
            run += 1
        if run >= 2:
            ops.append((3, bytes([run - 2])))
            at += run
            continue
        unit = units[at]
        if unit < 256:
            ops.append((0, bytes([unit])))
        elif unit >> 8 == high:
            ops.append((1, bytes([unit & 0xFF])))
        else:
            ops.append((2, struct.pack("<H", unit)))
        at += 1
    out = bytearray([high])
    for start in range(0, len(ops), 4):
        group = ops[start : start + 4]
        flags = 0
        for index, (mode, _) in enumerate(group):
            flags |= mode << (6 - 2 * index)
        out.append(flags)
        for _, payload in group:
            out += payload
    return oem + b"\0" + bytes(out)


def _rar4_name(name: str, form: NameForm) -> tuple[bytes, int]:
    """The name field and the header flag it needs (0x0200: a Unicode name)."""
    if form == "auto":
        form = "oem" if name.isascii() else "encoded"
    if form == "oem":
        return _oem(name), 0
    if form == "utf8":
        return name.encode("utf-8"), 0x0200
    return encode_rar4_name(name), 0x0200


def rar4(
    members: Sequence[Member],
    *,
    encrypted_headers: bool = False,
    volume_size: int | None = None,
    names: NameForm = "auto",
    comment: str | None = None,
    seed: int = 1,
) -> list[bytes]:
    """The volumes of a RAR4 archive (one, unless volume_size cuts the data into several); a comment is
    a stored "CMT" service block (0x7a) after the archive header, as RAR 3.x writes one."""
    rng = random.Random(seed)
    volumes = _pieces(members, volume_size, rng)
    multi = len(volumes) > 1
    out = []
    for number, pieces in enumerate(volumes):
        main_flags = 0
        if multi:
            main_flags |= 0x0001 | 0x0010  # a volume, named x.partN.rar
            if number == 0:
                main_flags |= 0x0100
        if encrypted_headers:
            main_flags |= 0x0080 | 0x0200  # encrypted headers, and the encryption version byte follows
            body = struct.pack("<HIB", 0, 0, 29)
        else:
            body = struct.pack("<HI", 0, 0)
        parts = [RAR4_MARKER, _rar4_block(0x73, main_flags, body)]
        if encrypted_headers:
            # Each later header is an 8-byte salt and AES ciphertext in whole blocks; so is the data.
            size = sum(8 + 48 + len(piece) for _, piece, _, _ in pieces)
            parts.append(rng.randbytes(size - size % 16 + 16))
            out.append(b"".join(parts))
            continue
        if comment is not None and number == 0:
            text = comment.encode("utf-8")
            fields = struct.pack(
                "<IIBIIBBHI", len(text), len(text), 2, zlib.crc32(text), DOS_TIME, 29, 0x30, 3, 0
            )
            parts += [_rar4_block(0x7A, 0x8000, fields + b"CMT"), text]
        for member, piece, before, after in pieces:
            name, name_flags = _rar4_name(member.name, names)
            flags = 0x8000 | name_flags
            if before:
                flags |= 0x0001
            if after:
                flags |= 0x0002
            if member.directory:
                flags |= 0x00E0
            salt = b""
            if member.encrypted:
                flags |= 0x0004 | 0x0400
                salt = rng.randbytes(8)
            # A piece that continues in the next volume carries its own data's CRC (unrar checks it).
            crc = zlib.crc32(piece) if after else zlib.crc32(member.content)
            attributes = 0x10 if member.directory else 0x20
            fields = struct.pack(
                "<IIBIIBBHI",
                len(piece),
                len(member.content),
                2,  # host OS: Windows
                crc,
                DOS_TIME,
                29 if member.encrypted else 20,  # version needed: RAR 3 encryption, else 2.0
                0x30,  # stored
                len(name),
                attributes,
            )
            parts.append(_rar4_block(0x74, flags, fields + name + salt))
            parts.append(piece)
        parts.append(_rar4_block(0x7B, 0x4000 | (0x0001 if number < len(volumes) - 1 else 0), b""))
        out.append(b"".join(parts))
    return out


# -------------------------------------------------------------------------------------------- RAR5


def vint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _rar5_header(
    block: int, flags: int, body: bytes, *, extra: bytes = b"", data_size: int | None = None
) -> bytes:
    head = vint(block)
    if extra:
        flags |= 0x0001
    if data_size is not None:
        flags |= 0x0002
    head += vint(flags)
    if extra:
        head += vint(len(extra))
    if data_size is not None:
        head += vint(data_size)
    head += body + extra
    sized = vint(len(head)) + head
    return struct.pack("<I", zlib.crc32(sized)) + sized


def _rar5_record(kind: int, body: bytes) -> bytes:
    inner = vint(kind) + body
    return vint(len(inner)) + inner


def rar5(
    members: Sequence[Member],
    *,
    encrypted_headers: bool = False,
    volume_size: int | None = None,
    comment: str | None = None,
    seed: int = 1,
) -> list[bytes]:
    """The volumes of a RAR5 archive (one, unless volume_size cuts the data into several); a comment is
    a stored "CMT" service header (type 3) after the main header."""
    rng = random.Random(seed)
    volumes = _pieces(members, volume_size, rng)
    multi = len(volumes) > 1
    out = []
    for number, pieces in enumerate(volumes):
        parts = [RAR5_SIGNATURE]
        if encrypted_headers:
            # Version 0 (AES-256), flag 1 (password check present), KDF count 15, salt, check value.
            body = vint(0) + vint(0x0001) + bytes([15]) + rng.randbytes(16) + rng.randbytes(12)
            parts.append(_rar5_header(4, 0, body))
            # Each later header is a 16-byte IV and AES ciphertext in whole blocks; so is the data.
            size = sum(16 + 64 + len(piece) for _, piece, _, _ in pieces)
            parts.append(rng.randbytes(size - size % 16 + 16))
            out.append(b"".join(parts))
            continue
        archive_flags = 0
        main_body = b""
        if multi:
            archive_flags |= 0x0001
            if number > 0:
                archive_flags |= 0x0002
                main_body = vint(number)
        parts.append(_rar5_header(1, 0, vint(archive_flags) + main_body))
        if comment is not None and number == 0:
            text = comment.encode("utf-8")
            body = vint(0x0004) + vint(len(text)) + vint(0) + struct.pack("<I", zlib.crc32(text))
            body += vint(0) + vint(1) + vint(3) + b"CMT"
            parts += [_rar5_header(3, 0, body, data_size=len(text)), text]
        for member, piece, before, after in pieces:
            flags = (0x0008 if before else 0) | (0x0010 if after else 0)
            file_flags = 0x0002 | (0x0001 if member.directory else 0x0004)
            body = vint(file_flags) + vint(len(member.content))
            body += vint(0o40755 if member.directory else 0o100644)
            body += struct.pack("<I", UNIX_TIME)
            if not member.directory:
                body += struct.pack("<I", zlib.crc32(piece) if after else zlib.crc32(member.content))
            name = member.name.encode("utf-8")
            body += vint(0) + vint(1) + vint(len(name)) + name  # stored, host OS Unix
            extra = b""
            if member.encrypted:
                # Version 0, flag 1 (password check present), KDF count 15, salt, IV, check value.
                record = vint(0) + vint(0x0001) + bytes([15]) + rng.randbytes(16 + 16 + 12)
                extra = _rar5_record(1, record)
            # A data size even for a directory (0), as rar writes: libarchive refuses a file header without.
            parts.append(_rar5_header(2, flags, body, extra=extra, data_size=len(piece)))
            parts.append(piece)
        parts.append(_rar5_header(5, 0, vint(0x0001 if number < len(volumes) - 1 else 0)))
        out.append(b"".join(parts))
    return out

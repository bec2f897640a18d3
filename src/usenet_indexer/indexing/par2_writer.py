"""A PAR2 index file (no recovery data) for files given as bytes: what the sample news server posts as a
release's ``.par2``, so that the probe can name releases posted under obfuscated names. Pure.

The packet layout is the one ``indexing/par2.py`` documents (Parity Volume Set Specification 2.0). An
index file written here holds, in par2cmdline's order: the Main packet, then for each file its File
Description and its Input File Slice Checksums (IFSC), then a Creator packet. With the IFSC packets
``par2 verify`` accepts the set (tests/unit/indexing/test_par2_writer.py checks it against the real
tool); without recovery slices it can only verify, not repair.

Identifiers, as the spec defines them:

- a file's id is the MD5 of (MD5 of its first 16 KiB, its length as u64 LE, its name);
- the recovery set id is the MD5 of the Main packet's body;
- the Main packet lists the file ids sorted as 16-byte strings.

Slices are ``slice_size`` bytes (a multiple of 4); a file's last slice is checksummed as if padded
with zeros to the slice size.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from usenet_indexer.indexing.par2 import (
    HEADER_SIZE,
    MAGIC,
    RECOVERY_HEADER,
    TYPE_CREATOR,
    TYPE_FILE_DESC,
    TYPE_MAIN,
    TYPE_RECOVERY_SLICE,
    TYPE_SLICE_CHECKSUMS,
)

__all__ = ["Par2Input", "file_id", "index_size", "par2_index", "par2_volume", "volume_size"]

HASH_16K_BYTES = 16 * 1024
DEFAULT_CREATOR = "usenet-indexer sample server"


@dataclass(frozen=True, slots=True)
class Par2Input:
    """A file the index describes: its name (as downloaders should restore it) and its content."""

    name: str
    data: bytes


def file_id(name: bytes, size: int, hash_16k: bytes) -> bytes:
    return hashlib.md5(hash_16k + struct.pack("<Q", size) + name).digest()


def _padded(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 4)


def _packet(set_id: bytes, kind: bytes, body: bytes) -> bytes:
    assert len(kind) == 16 and len(body) % 4 == 0
    hashed = set_id + kind + body
    length = 8 + 8 + 16 + len(hashed)
    return MAGIC + struct.pack("<Q", length) + hashlib.md5(hashed).digest() + hashed


def index_size(
    files: Sequence[tuple[str, int]], slice_size: int = 4096, creator: str = DEFAULT_CREATOR
) -> int:
    """The length of :func:`par2_index`'s output for files of these (name, size), without their bytes."""
    header = 8 + 8 + 16 + 16 + 16  # magic, length, packet MD5, set id, type
    total = header + 12 + 16 * len(files) + header + len(_padded(creator.encode("ascii", "replace")))
    for name, size in files:
        total += header + 16 * 3 + 8 + len(_padded(name.encode("utf-8")))
        total += header + 16 + 20 * -(-size // slice_size)
    return total


def par2_index(files: Sequence[Par2Input], slice_size: int = 4096, creator: str = DEFAULT_CREATOR) -> bytes:
    """The bytes of a PAR2 index file describing ``files``."""
    if slice_size < 4 or slice_size % 4:
        raise ValueError(f"the slice size is a positive multiple of 4, not {slice_size}")
    if not files:
        raise ValueError("a PAR2 set describes at least one file")
    described: list[tuple[bytes, bytes, bytes]] = []  # file id, File Description body, IFSC body
    for f in files:
        name = f.name.encode("utf-8")
        hash_16k = hashlib.md5(f.data[:HASH_16K_BYTES]).digest()
        fid = file_id(name, len(f.data), hash_16k)
        description = (
            fid + hashlib.md5(f.data).digest() + hash_16k + struct.pack("<Q", len(f.data)) + _padded(name)
        )
        checksums = [fid]
        view = memoryview(f.data)
        for start in range(0, len(f.data), slice_size):
            piece = bytes(view[start : start + slice_size])
            piece += b"\0" * (slice_size - len(piece))
            checksums.append(hashlib.md5(piece).digest() + struct.pack("<I", zlib.crc32(piece)))
        described.append((fid, description, b"".join(checksums)))
    described.sort(key=lambda d: d[0])
    main = struct.pack("<QI", slice_size, len(described)) + b"".join(d[0] for d in described)
    set_id = hashlib.md5(main).digest()
    packets = [_packet(set_id, TYPE_MAIN, main)]
    for _, description, slice_checksums in described:
        packets.append(_packet(set_id, TYPE_FILE_DESC, description))
        packets.append(_packet(set_id, TYPE_SLICE_CHECKSUMS, slice_checksums))
    packets.append(_packet(set_id, TYPE_CREATOR, _padded(creator.encode("ascii", "replace"))))
    return b"".join(packets)


def _creator_bytes(creator: str) -> int:
    return HEADER_SIZE + len(_padded(creator.encode("ascii", "replace")))


def volume_size(index_bytes: int, slice_size: int, count: int, creator: str = DEFAULT_CREATOR) -> int:
    """The length of :func:`par2_volume`'s output for a set whose index is ``index_bytes`` long."""
    critical = index_bytes - _creator_bytes(creator)
    return count * (RECOVERY_HEADER + slice_size) + count.bit_length() * critical + _creator_bytes(creator)


def par2_volume(index: bytes, first: int, count: int, creator: str = DEFAULT_CREATOR) -> bytes:
    """A recovery volume of the set ``index`` (:func:`par2_index`'s bytes) laid out as par2cmdline lays
    one out (its size tells its slice count, indexing/volumes.py): ``count`` Recovery Slice packets of
    exponents ``first`` … ``first + count - 1``, the index's packets but the Creator repeated as many
    times as ``count`` has bits, each copy after a recovery packet, and the Creator last.

    The slices' bytes are not Reed-Solomon: they are SHAKE-128 of the set id and exponent (the sample has
    no repair to make; computing real ones in Python would cost seconds a volume). ``par2 verify``
    accepts them (it checks packets, not what a repair would give); a repair with them fails."""
    if count < 1:
        raise ValueError(f"a volume holds at least one recovery slice, not {count}")
    creator_packet = _creator_bytes(creator)
    critical, tail = index[:-creator_packet], index[-creator_packet:]
    if not tail.startswith(MAGIC) or tail[48:64] != TYPE_CREATOR:
        raise ValueError("the index does not end with this creator's packet")
    set_id = index[32:48]
    slice_size = struct.unpack_from("<Q", index, HEADER_SIZE)[0]
    copies = count.bit_length()
    packets = []
    for k in range(count):
        exponent = first + k
        data = hashlib.shake_128(set_id + struct.pack("<I", exponent)).digest(slice_size)
        packets.append(_packet(set_id, TYPE_RECOVERY_SLICE, struct.pack("<I", exponent) + data))
        if k < copies:
            packets.append(critical)
    packets.append(tail)
    return b"".join(packets)

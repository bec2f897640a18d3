"""The start of an archive volume, as the probe reads it (indexing/archives.py's read_archive_start).

Input: one byte of options, then the bytes. Options % 4 chooses what the bytes are: 0 the input as it
stands; 1, 2, 3 the bytes after a RAR4 marker, a RAR5 signature or a 7z signature header, with every
header CRC made right, so the fuzzer also reaches what lies behind the checks (flags, sizes, names,
the 7z end header, LZMA-packed headers). The other bits choose a cut. The reader must never raise; an
answer must agree with itself (encrypted headers: encrypted, no names); and the answer for a cut must
agree with the whole's: a RAR cut that finds an encrypted entry finds it in the whole too, and names a
prefix of the whole's names; a 7z cut that answers at all answers as the whole does.

    scripts/uv.sh run python fuzz/archives.py -atheris_runs=100000
"""

from __future__ import annotations

import struct
import zlib

import _harness
import atheris  # type: ignore[import-untyped]

with atheris.instrument_imports():
    from usenet_indexer.indexing.archives import (
        RAR4_MARKER,
        RAR5_SIGNATURE,
        SEVEN_ZIP_SIGNATURE,
        ArchiveKind,
        ArchiveStart,
        read_archive_start,
    )


def fix_rar4(data: bytearray) -> None:
    pos = len(RAR4_MARKER)
    for _ in range(10_000):
        if pos + 7 > len(data):
            return
        block, flags, size = struct.unpack_from("<BHH", data, pos + 2)
        if size < 7 or pos + size > len(data):
            return
        struct.pack_into("<H", data, pos, zlib.crc32(data[pos + 2 : pos + size]) & 0xFFFF)
        extra = 0
        if size >= 11 and (block in (0x74, 0x7A) or flags & 0x8000):  # PACK_SIZE or ADD_SIZE
            extra = struct.unpack_from("<I", data, pos + 7)[0]
        pos += size + extra


def _vint(data: bytearray, pos: int) -> tuple[int, int]:
    value = 0
    for shift in range(0, 70, 7):
        if pos >= len(data):
            return -1, pos
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
    return -1, pos


def fix_rar5(data: bytearray) -> None:
    pos = len(RAR5_SIGNATURE)
    for _ in range(10_000):
        size, at = _vint(data, pos + 4)
        end = at + size
        if size <= 0 or end > len(data):
            return
        struct.pack_into("<I", data, pos, zlib.crc32(data[pos + 4 : end]))
        _, at = _vint(data, at)  # type
        flags, at = _vint(data, at)
        data_size = 0
        if flags >= 0 and flags & 0x0001:
            _, at = _vint(data, at)
        if flags >= 0 and flags & 0x0002:
            data_size, at = _vint(data, at)
        pos = end + max(data_size, 0)


def fix_7z(data: bytearray) -> None:
    if len(data) < 32:
        return
    offset, size = struct.unpack_from("<QQ", data, 12)
    if 32 + offset + size <= len(data):
        struct.pack_into("<I", data, 28, zlib.crc32(data[32 + offset : 32 + offset + size]))
    struct.pack_into("<I", data, 8, zlib.crc32(data[12:32]))


def check(start: ArchiveStart | None) -> None:
    if start is None:
        return
    assert isinstance(start.kind, ArchiveKind)
    assert start.encrypted in (True, False, None)
    if start.headers_encrypted:
        assert start.encrypted is True and not start.complete
    assert all(isinstance(name, str) for name in start.file_names)


def one(data: bytes) -> None:
    if not data:
        return
    options, body = data[0], bytearray(data[1:])
    mode = options % 4
    if mode == 1:
        body[:0] = RAR4_MARKER
        fix_rar4(body)
    elif mode == 2:
        body[:0] = RAR5_SIGNATURE
        fix_rar5(body)
    elif mode == 3:
        body[:0] = SEVEN_ZIP_SIGNATURE
        fix_7z(body)
    whole = read_archive_start(bytes(body))
    check(whole)
    cut = len(body) * (options >> 2) // 64
    part = read_archive_start(bytes(body[:cut]))
    check(part)
    if part is None or whole is None:
        return
    assert part.kind == whole.kind
    if whole.kind == ArchiveKind.SEVEN_ZIP:
        assert part.encrypted is None or part == whole, "a 7z cut answers otherwise than the whole"
    else:
        assert part.encrypted is not True or whole.encrypted is True, "an encrypted entry lost in the whole"
        names = whole.file_names[: len(part.file_names)]
        assert names == part.file_names, "a cut's names are not the whole's"


def _rar4_block(block: int, flags: int, body: bytes) -> bytes:
    head = struct.pack("<BHH", block, flags, 7 + len(body)) + body
    return struct.pack("<H", zlib.crc32(head) & 0xFFFF) + head


def _rar5_header(block: int, flags: int, body: bytes) -> bytes:
    head = bytes([block, flags]) + body
    sized = bytes([len(head)]) + head
    return struct.pack("<I", zlib.crc32(sized)) + sized


def seeds() -> list[bytes]:
    main4 = _rar4_block(0x73, 0, bytes(6))
    file4 = struct.pack("<IIBIIBBHI", 3, 3, 2, zlib.crc32(b"abc"), 0, 20, 0x30, 5, 0x20)
    rar4 = (
        RAR4_MARKER
        + main4
        + _rar4_block(0x74, 0x8000, file4 + b"a.txt")
        + b"abc"
        + _rar4_block(0x74, 0x8004 | 0x0400, file4 + b"b.txt" + bytes(8))
        + b"abc"
        + _rar4_block(0x7B, 0x4000, b"")
    )
    rar4_hp = RAR4_MARKER + _rar4_block(0x73, 0x0080 | 0x0200, bytes(6) + b"\x1d") + bytes(64)
    file5 = bytes([0x04, 3, 0xA4, 0x83, 0x02]) + struct.pack("<I", zlib.crc32(b"abc")) + bytes([0, 1, 5])
    encryption = bytes([48, 1, 0, 1, 15]) + bytes(16 + 16 + 12)
    rar5 = (
        RAR5_SIGNATURE
        + _rar5_header(1, 0, b"\x00")
        + _rar5_header(2, 0x02, b"\x03" + file5 + b"a.txt")
        + b"abc"
        + _rar5_header(2, 0x03, bytes([len(encryption), 3]) + file5 + b"b.txt" + encryption)
        + b"abc"
        + _rar5_header(5, 0, b"\x00")
    )
    rar5_hp = RAR5_SIGNATURE + _rar5_header(4, 0, bytes([0, 1, 15]) + bytes(28)) + bytes(64)
    # Real 7z archives made by 7-Zip 26.02 (7zz a): headers stored, with -p, with -p -mhe=on, and one whose
    # header is LZMA-packed (kEncodedHeader).
    seven = [
        bytes.fromhex(
            "377abcaf271c0004ad317bed070000000000000052000000000000004b12483701000268690a000104060001090700070b"
            "010001212101000c0300080a017a7a6fed00000501190c000000000000000000000000110d0061002e00740078007400"
            "0000140a01001f2505838e81dd01150601002080a4810000"
        ),
        bytes.fromhex(
            "377abcaf271c0004fd2ab7811000000000000000620000000000000006b25dafd7d11201d5b2a8aa72424a3fec31b703"
            "0104060001091000070b0100022406f1070112530fe31c76175b4b0d73eb856b2591f6b8112121010001000c0703000"
            "80a017a7a6fed00000501190100110d0061002e007400780074000000140a01001f2505838e81dd01150601002080a4"
            "810000"
        ),
        bytes.fromhex(
            "377abcaf271c0004ff5f101980000000000000002e00000000000000634575d41fcccaab8440b16f314c778561ade3"
            "ffaee95baae29abd61f4ef6dc094b16da6b9259e75c2d3db0481390d7dc3f423ecac50ad054e63ff87bf0e4262e07948"
            "e95904a3d58f2372c72a60a57a69c158e48bf8b41078a433ed9cf04c8fc801b4b1624eb012d69a3d179bcafef831cd93"
            "650e48924ec766003428eb4e34ffd5424c17061001097000070b0100012406f1070112530f43fb86dee03e212d218a38"
            "351916298c0c620a01bb168cab0000"
        ),
        bytes.fromhex(
            "377abcaf271c0004a8b6100ba70000000000000022000000000000006b22229a010005313233343536000000813307ae"
            "0fce6f565efa0dfa2483dc177762f217a0cafb6eb415fe0ba46c249df9a1cf17e87031c47c9ab40dae440815f37bafbf"
            "66bd3c42b4d8d9a51cf72fa5d2c470c098560422596ca62c4a2fd9691d33581303d5332e064d2ba220b54661302f4361"
            "bb8898ffd562e03ef2de745161d3f09bd39abee3f77fd9713b62a34b5e7bd7dac9f811f2939ebb82a045bab8c1f41395"
            "45f88cb000000017060a0109809d00070b01000123030101055d001000000c82160a01c967bf5f0000"
        ),
    ]
    out = []
    for archive, mode, prefix in [
        (rar4, 1, RAR4_MARKER),
        (rar4_hp, 1, RAR4_MARKER),
        (rar5, 2, RAR5_SIGNATURE),
        (rar5_hp, 2, RAR5_SIGNATURE),
        *((s, 3, SEVEN_ZIP_SIGNATURE) for s in seven),
    ]:
        for cut in (0, 32, 63):
            out.append(bytes([mode | cut << 2]) + archive[len(prefix) :])
        out.append(bytes([63 << 2]) + archive)  # mode 0: as it stands
    return out


if __name__ == "__main__":
    _harness.main(one, seeds())

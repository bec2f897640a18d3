"""The archive reader (indexing/archives.py) against archives real readers accept.

RAR: Debian ships no `rar`, so tests/support/rar.py builds RAR4 and RAR5 archives byte by byte, and
each form is first proved valid by two independent readers: libarchive's ``bsdtar -tf`` (package
libarchive-tools) and The Unarchiver's ``lsar`` (package unar), whose ``-j`` listing says which entries
are encrypted and whose ``-t`` checks every stored file's CRC, across volumes. Debian's 7-Zip (package
7zip, ``7zz``) cannot be that reader: RAR support is non-free and its build has no RAR handler at all
(``7zz i`` lists no Rar format; ``7zz l x.rar``: "Cannot open the file as archive").

7z: real archives made by ``7zz a`` (plain, ``-p``, ``-p -mhe=on``, headers compressed or not, LZMA2,
one larger than an article, one split into ``.7z.NNN`` volumes), read back with ``7zz l -slt``.

The tools are installed by scripts/setup-system.sh; without them these tests fail, they do not skip.
"""

from __future__ import annotations

import json
import lzma
import random
import shutil
import struct
import subprocess
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.rar import Member, rar4, rar5, vint
from usenet_indexer.indexing import archive_names
from usenet_indexer.indexing.archive_names import first_volume
from usenet_indexer.indexing.archives import (
    MAX_HEADERS,
    RAR4_MARKER,
    RAR5_SIGNATURE,
    SEVEN_ZIP_SIGNATURE,
    ArchiveKind,
    ArchiveStart,
    read_archive_start,
)

ARTICLE = 800_000  # the most of a volume's start one yEnc article gives the probe


def tool(name: str, package: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"the {name} command is missing: install it with `apt-get install -y {package}`")
    return found


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=60, check=False)


# ------------------------------------------------------------------------------------ the RAR forms

TEXT = b"The quick brown fox jumps over the lazy dog.\n" * 40
PLAIN = (
    Member("readme.txt", TEXT),
    Member("Sample", directory=True),
    Member("Sample/ünï 日本 sample.mkv", random.Random(3).randbytes(5000)),
    Member("empty.nfo", b""),
    Member("emoji 🎬 clip.srt", b"1\n00:00:01,000 --> 00:00:02,000\nHi\n"),
)
ASCII = tuple(
    Member(m.name.encode("ascii", "replace").decode(), m.content, directory=m.directory) for m in PLAIN
)
ENCRYPTED = tuple(Member(m.name, m.content, encrypted=not m.directory, directory=m.directory) for m in PLAIN)


@dataclass(frozen=True)
class Form:
    """One archive as built, and what is true of it."""

    name: str
    kind: ArchiveKind
    volumes: list[bytes]
    members: tuple[Member, ...]
    encrypted: bool
    headers_encrypted: bool = False

    def __repr__(self) -> str:  # Hypothesis and pytest print this, not kilobytes of bytes
        return f"Form({self.name})"


FORMS = [
    Form("rar4-oem", ArchiveKind.RAR4, rar4(ASCII, names="oem"), ASCII, encrypted=False),
    Form("rar4-encoded", ArchiveKind.RAR4, rar4(PLAIN, names="encoded"), PLAIN, encrypted=False),
    Form(
        "rar4-utf8", ArchiveKind.RAR4, rar4(PLAIN, names="utf8", comment="a comment"), PLAIN, encrypted=False
    ),
    Form("rar4-encrypted", ArchiveKind.RAR4, rar4(ENCRYPTED), ENCRYPTED, encrypted=True),
    Form("rar4-encrypted-headers", ArchiveKind.RAR4, rar4(PLAIN, encrypted_headers=True), PLAIN, True, True),
    Form("rar5", ArchiveKind.RAR5, rar5(PLAIN, comment="a comment"), PLAIN, encrypted=False),
    Form("rar5-encrypted", ArchiveKind.RAR5, rar5(ENCRYPTED), ENCRYPTED, encrypted=True),
    Form("rar5-encrypted-headers", ArchiveKind.RAR5, rar5(PLAIN, encrypted_headers=True), PLAIN, True, True),
]
VOLUME_FORMS = [
    Form("rar4-volumes", ArchiveKind.RAR4, rar4(PLAIN, volume_size=2000), PLAIN, encrypted=False),
    Form("rar4-encrypted-volumes", ArchiveKind.RAR4, rar4(ENCRYPTED, volume_size=2000), ENCRYPTED, True),
    Form("rar5-volumes", ArchiveKind.RAR5, rar5(PLAIN, volume_size=2000), PLAIN, encrypted=False),
    Form("rar5-encrypted-volumes", ArchiveKind.RAR5, rar5(ENCRYPTED, volume_size=2000), ENCRYPTED, True),
]


def write_set(directory: Path, form: Form) -> list[Path]:
    """Each archive in a folder of its own: lsar takes neighbours named alike for volumes of one set."""
    folder = directory / form.name
    folder.mkdir()
    if len(form.volumes) == 1:
        names = ["archive.rar"]
    else:
        names = [f"archive.part{n}.rar" for n in range(1, len(form.volumes) + 1)]
    paths = [folder / name for name in names]
    for path, volume in zip(paths, form.volumes, strict=True):
        path.write_bytes(volume)
    return paths


def lsar_json(path: Path) -> dict[str, object]:
    result = run(tool("lsar", "unar"), "-j", path)
    assert result.returncode == 0, result.stdout + result.stderr
    listing: dict[str, object] = json.loads(result.stdout)
    assert listing.get("lsarError") is None, listing
    return listing


def lsar_entries(path: Path) -> list[tuple[str, bool, bool]]:
    """(name, encrypted, directory) of each entry, as lsar reads them."""
    contents = lsar_json(path)["lsarContents"]
    assert isinstance(contents, list)
    return [
        (str(e["XADFileName"]), bool(e.get("XADIsEncrypted")), bool(e.get("XADIsDirectory")))
        for e in contents
    ]


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.name)
def test_generated_rar_is_what_real_readers_read(form: Form, tmp_path: Path) -> None:
    [path] = write_set(tmp_path, form)
    start = read_archive_start(form.volumes[0])
    assert start is not None
    assert start.kind == form.kind
    assert start.encrypted is form.encrypted
    assert start.headers_encrypted is form.headers_encrypted
    bsdtar = run(tool("bsdtar", "libarchive-tools"), "-tf", path)
    if form.headers_encrypted:
        # Both readers see the headers are ciphertext and stop: libarchive says so, lsar wants a password.
        assert bsdtar.returncode != 0 and "ncryption" in bsdtar.stderr, bsdtar.stderr
        lsar = run(tool("lsar", "unar"), "-j", path)
        assert lsar.returncode != 0 and "requires a password" in lsar.stdout + lsar.stderr
        assert start.file_names == () and not start.complete
        return
    assert bsdtar.returncode == 0, bsdtar.stderr
    names = [m.name for m in form.members]
    assert bsdtar.stdout.splitlines() == names
    assert lsar_entries(path) == [(m.name, m.encrypted, m.directory) for m in form.members]
    assert list(start.file_names) == names
    assert start.complete and start.volume is False and start.first_volume is True
    if not form.encrypted:
        # lsar -t reads every file's data and checks its CRC: the layout is right to the last byte.
        test = run(tool("lsar", "unar"), "-t", path)
        assert test.returncode == 0 and f"{len(form.members)} passed, 0 failed" in test.stdout, test.stdout


@pytest.mark.parametrize("form", VOLUME_FORMS, ids=lambda f: f.name)
def test_generated_volumes_are_one_set_to_real_readers(form: Form, tmp_path: Path) -> None:
    paths = write_set(tmp_path, form)
    assert len(paths) >= 3
    listing = lsar_json(paths[0])
    properties = listing["lsarProperties"]
    assert isinstance(properties, dict) and len(properties["XADVolumes"]) == len(paths)
    assert lsar_entries(paths[0]) == [(m.name, m.encrypted, m.directory) for m in form.members]
    if not form.encrypted:
        test = run(tool("lsar", "unar"), "-t", paths[0])
        assert test.returncode == 0 and f"{len(form.members)} passed, 0 failed" in test.stdout, test.stdout
    starts = [read_archive_start(volume) for volume in form.volumes]
    assert all(s is not None and s.kind == form.kind and s.volume is True for s in starts)
    assert [s.first_volume for s in starts if s is not None] == [True] + [False] * (len(starts) - 1)
    assert all(s is not None and s.encrypted is form.encrypted for s in starts)
    bsdtar = run(tool("bsdtar", "libarchive-tools"), "-tf", paths[0])
    first = starts[0]
    assert first is not None and bsdtar.returncode == 0
    assert bsdtar.stdout.splitlines() == list(first.file_names)


# -------------------------------------------------------------------------------------------- 7z


@dataclass(frozen=True)
class SevenZip:
    name: str
    data: bytes
    encrypted: bool | None  # what the reader must say of the whole archive
    headers_encrypted: bool
    listed: tuple[tuple[str, bool], ...]  # (path, encrypted) of each entry, from 7zz l -slt

    def __repr__(self) -> str:
        return f"SevenZip({self.name}, {len(self.data)} bytes)"


SEVEN_ZIP_OPTIONS: dict[str, tuple[list[str], bool | None, bool]] = {
    "plain": ([], False, False),  # headers LZMA-compressed: the default
    "headers-stored": (["-mhc=off"], False, False),
    "lzma2": (["-m0=lzma2"], False, False),
    "password": (["-psecret"], True, False),
    "password-headers-stored": (["-psecret", "-mhc=off"], True, False),
    "password-encrypted-headers": (["-psecret", "-mhe=on"], True, True),
    "empty-files-only": ([], None, False),  # no data, nothing to encrypt: cannot tell
}


def seven_zip_listing(path: Path, password: bool) -> tuple[tuple[str, bool], ...]:
    args = ["l", "-slt", "-psecret" if password else "-p-", path]
    result = run(tool("7zz", "7zip"), *args)
    assert result.returncode == 0, result.stdout + result.stderr
    entries = result.stdout.split("----------\n", 1)[1].split("\n\n")
    out = []
    for entry in entries:
        fields = dict(line.split(" = ", 1) for line in entry.splitlines() if " = " in line)
        if "Path" in fields:
            out.append((fields["Path"], fields.get("Encrypted") == "+"))
    return tuple(out)


@pytest.fixture(scope="module")
def seven_zips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, SevenZip]:
    seven = tool("7zz", "7zip")
    root = tmp_path_factory.mktemp("7z")
    source = root / "in"
    (source / "Sample").mkdir(parents=True)
    (source / "readme.txt").write_bytes(TEXT)
    (source / "Sample" / "ünï 日本 sample.mkv").write_bytes(random.Random(3).randbytes(5000))
    (source / "empty.nfo").write_bytes(b"")
    made = {}
    for name, (options, encrypted, headers) in SEVEN_ZIP_OPTIONS.items():
        path = root / f"{name}.7z"
        members = ["empty.nfo"] if name == "empty-files-only" else ["readme.txt", "Sample", "empty.nfo"]
        result = subprocess.run(
            [seven, "a", "-bso0", *options, str(path), *members], cwd=source, capture_output=True, check=False
        )
        assert result.returncode == 0, result.stderr
        listed = () if headers else seven_zip_listing(path, "-psecret" in options)
        made[name] = SevenZip(name, path.read_bytes(), encrypted, headers, listed)
    return made


@pytest.mark.parametrize("name", SEVEN_ZIP_OPTIONS)
def test_real_7z_small_enough_to_read_whole(name: str, seven_zips: dict[str, SevenZip]) -> None:
    archive = seven_zips[name]
    assert len(archive.data) < ARTICLE  # the end header is within one article
    start = read_archive_start(archive.data)
    assert start is not None and start.kind == ArchiveKind.SEVEN_ZIP
    assert start.encrypted is archive.encrypted
    assert start.headers_encrypted is archive.headers_encrypted
    assert start.first_volume is True and start.volume is None
    if archive.headers_encrypted:
        assert start.file_names == () and not start.complete
        return
    assert start.complete
    # 7zz lists the same entries, and marks them encrypted exactly when the reader says so.
    assert sorted(start.file_names) == sorted(path for path, _ in archive.listed)
    assert any(encrypted for _, encrypted in archive.listed) is bool(archive.encrypted)


@pytest.mark.parametrize("password", [False, True])
def test_real_7z_larger_than_an_article_gives_none(password: bool, tmp_path: Path) -> None:
    """The end header lies after the packed streams: beyond the first article, so nothing is known."""
    seven = tool("7zz", "7zip")
    (tmp_path / "film.mkv").write_bytes(random.Random(5).randbytes(1_200_000))
    options = ["-psecret"] if password else []
    for archive, extra in (("film.7z", []), ("split.7z", ["-v500k"])):
        result = run(
            seven, "a", "-bso0", "-mx=0", *options, *extra, tmp_path / archive, tmp_path / "film.mkv"
        )
        assert result.returncode == 0, result.stderr
    whole = (tmp_path / "film.7z").read_bytes()
    assert len(whole) > ARTICLE
    start = read_archive_start(whole[:ARTICLE])
    assert start is not None and start.kind == ArchiveKind.SEVEN_ZIP
    assert start.encrypted is None and not start.complete
    assert start.detail == "the end header lies beyond the data"
    # The whole archive, end header included, does say (as the probe would if an article held it all).
    full = read_archive_start(whole)
    assert full is not None and full.encrypted is password and full.file_names == ("film.mkv",)
    parts = sorted(tmp_path.glob("split.7z.*"))
    assert [p.name for p in parts] == ["split.7z.001", "split.7z.002", "split.7z.003"]
    first = read_archive_start(parts[0].read_bytes()[:ARTICLE])
    assert first is not None and first.encrypted is None and first.first_volume is True
    # Later pieces are the archive's bytes cut in pieces: no signature, no archive.
    assert read_archive_start(parts[1].read_bytes()[:ARTICLE]) is None
    assert first_volume([p.name for p in reversed(parts)]) == "split.7z.001"


# ------------------------------------------------------------------------------------------- cuts


def all_cases(seven_zips: dict[str, SevenZip]) -> Iterator[tuple[str, bytes, bool | None, tuple[str, ...]]]:
    """(label, data, truth, every name) of each archive (each volume of a set)."""
    for form in FORMS + VOLUME_FORMS:
        for number, volume in enumerate(form.volumes):
            whole = read_archive_start(volume)
            assert whole is not None
            yield f"{form.name}#{number}", volume, form.encrypted, whole.file_names
    for archive in seven_zips.values():
        whole = read_archive_start(archive.data)
        assert whole is not None
        yield archive.name, archive.data, archive.encrypted, whole.file_names


@pytest.mark.slow
def test_every_cut_gives_the_truth_or_none(seven_zips: dict[str, SevenZip]) -> None:
    """The probe reads one article, which ends wherever it ends: every cut of the first 6 KB (all of
    most of these archives) says the truth or nothing, never the opposite, and names a prefix of the
    archive's names."""
    counts = {True: 0, False: 0, None: 0}
    for label, data, truth, names in all_cases(seven_zips):
        signatures = (SEVEN_ZIP_SIGNATURE, RAR5_SIGNATURE, RAR4_MARKER)
        signature = next(len(s) for s in signatures if data.startswith(s))
        for cut in range(min(len(data), 6000) + 1):
            start = read_archive_start(data[:cut])
            if cut < signature:
                assert start is None, (label, cut)
                continue
            assert start is not None, (label, cut)
            assert start.encrypted in (truth, None), (label, cut, start)
            assert start.file_names == names[: len(start.file_names)], (label, cut, start)
            assert not start.complete or cut == len(data), (label, cut, start)
            counts[start.encrypted] += 1
    # Most cuts of these small archives answer: the reader does not hide behind None.
    assert counts[True] > 10_000 and counts[False] > 10_000, counts


@pytest.mark.parametrize("make", [rar4, rar5], ids=["rar4", "rar5"])
def test_a_later_encrypted_file_is_seen_once_its_header_is(make: Callable[..., list[bytes]]) -> None:
    """rar can add a file under a password to a plain archive: until the encrypted entry's header is
    within the data the reader says False (every header it saw is plain), then True. The documented
    limit of reading one article."""
    [data] = make([Member("plain.txt", TEXT), Member("secret.txt", TEXT, encrypted=True)])
    secret_name = data.index(b"secret.txt")
    answers = set()
    for cut in range(secret_name - 60, secret_name):
        start = read_archive_start(data[:cut])
        assert start is not None
        answers.add(start.encrypted)
    assert answers == {False, None}
    whole = read_archive_start(data)
    assert whole is not None and whole.encrypted is True


# ------------------------------------------------------------------------------------ hostile input


def check(start: ArchiveStart | None) -> None:
    """What any answer must be, whatever the input."""
    if start is None:
        return
    assert isinstance(start.kind, ArchiveKind)
    assert start.encrypted in (True, False, None)
    if start.headers_encrypted:
        assert start.encrypted is True and not start.complete
    assert all(isinstance(name, str) for name in start.file_names)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from([b"", RAR4_MARKER, RAR5_SIGNATURE, SEVEN_ZIP_SIGNATURE]), st.binary(max_size=600))
def test_arbitrary_bytes_never_raise(prefix: bytes, tail: bytes) -> None:
    check(read_archive_start(prefix + tail))


def fix_7z_crcs(data: bytearray) -> None:
    """A mutated 7z with its two CRCs made right, so the fuzz reaches the end header's parser."""
    if len(data) < 32:
        return
    offset, size = struct.unpack_from("<QQ", data, 12)
    if 32 + offset + size <= len(data):
        struct.pack_into("<I", data, 28, zlib.crc32(data[32 + offset : 32 + offset + size]))
    struct.pack_into("<I", data, 8, zlib.crc32(data[12:32]))


@pytest.mark.fuzz
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.integers(min_value=0, max_value=10_000),
    st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), max_size=8),
    st.integers(min_value=0, max_value=3),
)
def test_mutated_real_archives_never_raise(
    seven_zips: dict[str, SevenZip], which: int, flips: list[tuple[int, int]], how: int
) -> None:
    cases = [volume for form in FORMS + VOLUME_FORMS for volume in form.volumes]
    cases += [archive.data for archive in seven_zips.values()]
    data = bytearray(cases[which % len(cases)])
    for at, value in flips:
        at %= len(data)
        if how == 1:
            del data[at]
        elif how == 2:
            data.insert(at, value)
        else:
            data[at] = value
    if how == 3:
        fix_7z_crcs(data)
    check(read_archive_start(bytes(data)))


names = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\0/\\"), min_size=1, max_size=30
)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(["rar4", "rar5"]),
    st.lists(st.tuples(names, st.integers(min_value=0, max_value=3000)), min_size=1, max_size=6),
    st.booleans(),
    st.one_of(st.none(), st.integers(min_value=300, max_value=4000)),
    st.integers(min_value=0),
)
def test_generated_sets_read_as_built(
    kind: str, files: list[tuple[str, int]], encrypted: bool, volume_size: int | None, cut_seed: int
) -> None:
    """Random sets (names in any script, sizes, volumes): each volume reads as it was built, and any
    cut of it says the truth or None."""
    members = [Member(name, bytes(size), encrypted=encrypted) for name, size in files]
    volumes = (
        rar4(members, volume_size=volume_size) if kind == "rar4" else rar5(members, volume_size=volume_size)
    )
    for number, volume in enumerate(volumes):
        start = read_archive_start(volume)
        assert start is not None and start.complete
        assert start.first_volume is (number == 0)
        assert start.volume is (len(volumes) > 1)
        if encrypted:
            assert start.encrypted is True  # every entry is flagged, even an empty one
        else:
            assert start.encrypted in (False, None)  # None: no data in this volume
        if number == 0 and files[0][1] > 0:
            assert start.encrypted is encrypted
        if number == 0:
            assert start.file_names[0] == files[0][0]
        cut = cut_seed % (len(volume) + 1)
        part = read_archive_start(volume[:cut])
        check(part)
        if part is not None:
            assert part.encrypted in (start.encrypted, None)
            assert part.file_names == start.file_names[: len(part.file_names)]


def test_work_is_bounded() -> None:
    """A run of tiny valid blocks stops at MAX_HEADERS; the answer then is None, and quickly."""
    block = struct.pack("<BHH", 0x75, 0, 7)
    block = struct.pack("<H", zlib.crc32(block) & 0xFFFF) + block
    main = struct.pack("<BHHHI", 0x73, 0, 13, 0, 0)
    data = RAR4_MARKER + struct.pack("<H", zlib.crc32(main) & 0xFFFF) + main + block * 200_000
    began = time.perf_counter()
    start = read_archive_start(data)
    assert time.perf_counter() - began < 2
    assert start is not None and start.encrypted is None and str(MAX_HEADERS) in start.detail


def seven_zip_encoded(
    method: bytes,
    properties: bytes,
    unpack_size: int,
    packed: bytes,
    before: bytes = b"",
    crc: int | None = None,
) -> bytes:
    """A 7z whose end header is an encoded header: one folder of one coder over ``packed``, which
    follows ``before`` (the archive's own packed streams, if any)."""

    def number(value: int) -> bytes:  # 7z NUMBER, always the 9-byte form: simple and valid
        return b"\xff" + struct.pack("<Q", value)

    coder = bytes([0x20 | len(method)]) + method + number(len(properties)) + properties
    digest = b"" if crc is None else b"\x0a\x01" + struct.pack("<I", crc)
    header = (
        b"\x17"  # kEncodedHeader
        + b"\x06" + number(len(before)) + number(1) + b"\x09" + number(len(packed)) + b"\x00"  # pack info
        + b"\x07\x0b" + number(1) + b"\x00" + number(1) + coder  # one folder, one coder
        + b"\x0c" + number(unpack_size) + digest + b"\x00"  # its unpacked size and CRC
        + b"\x00"
    )  # fmt: skip
    body = before + packed
    start = struct.pack("<QQI", len(body), len(header), zlib.crc32(header))
    return SEVEN_ZIP_SIGNATURE + b"\x00\x04" + struct.pack("<I", zlib.crc32(start)) + start + body + header


@pytest.mark.parametrize("name", ["headers-stored", "password-headers-stored"])
@pytest.mark.parametrize("method", ["copy", "lzma", "lzma2"])
def test_a_7z_header_packed_any_way_read_is_read_alike(
    name: str, method: str, seven_zips: dict[str, SevenZip]
) -> None:
    """7-Zip packs its header with LZMA; LZMA2 and stored headers are valid too: each reads as the
    plain header does, and a header whose CRC does not match is not read."""
    data = seven_zips[name].data
    offset, size = struct.unpack_from("<QQ", data, 12)
    before, header = data[32 : 32 + offset], data[32 + offset : 32 + offset + size]
    assert header[0] == 0x01  # kHeader: stored as it is
    if method == "copy":
        coder, properties, packed = b"\x00", b"", header
    elif method == "lzma":
        filters = [{"id": lzma.FILTER_LZMA1, "dict_size": 1 << 16, "lc": 3, "lp": 0, "pb": 2}]
        coder, properties = b"\x03\x01\x01", bytes([3 + 9 * (0 + 5 * 2)]) + struct.pack("<I", 1 << 16)
        packed = lzma.compress(header, format=lzma.FORMAT_RAW, filters=filters)
    else:
        filters = [{"id": lzma.FILTER_LZMA2, "dict_size": 1 << 16}]
        coder, properties = b"\x21", b"\x08"
        packed = lzma.compress(header, format=lzma.FORMAT_RAW, filters=filters)
    plain = read_archive_start(data)
    assert plain is not None and plain.file_names
    packed_start = read_archive_start(seven_zip_encoded(coder, properties, len(header), packed, before))
    assert packed_start == plain
    checked = read_archive_start(
        seven_zip_encoded(coder, properties, len(header), packed, before, crc=zlib.crc32(header))
    )
    assert checked == plain
    wrong = read_archive_start(
        seven_zip_encoded(coder, properties, len(header), packed, before, crc=zlib.crc32(header) ^ 1)
    )
    assert wrong is not None and wrong.encrypted is None and wrong.file_names == ()


def test_forged_7z_dictionary_and_sizes_are_capped() -> None:
    """A forged LZMA header asking for a 4 GB dictionary, or a header of 1 TB, costs nothing."""
    lzma_4gb = bytes([93]) + struct.pack("<I", 0xFFFFFFFF)
    began = time.perf_counter()
    for unpack_size in (100, 1 << 40):
        start = read_archive_start(seven_zip_encoded(b"\x03\x01\x01", lzma_4gb, unpack_size, b"\x00" * 64))
        assert start is not None and start.encrypted is None
    aes = read_archive_start(seven_zip_encoded(b"\x06\xf1\x07\x01", b"", 100, b"\x00" * 64))
    assert aes is not None and aes.encrypted is True and aes.headers_encrypted
    assert time.perf_counter() - began < 1


def seven_zip_plain(header: bytes, packed: bytes = b"") -> bytes:
    """A 7z whose end header is ``header`` as given (CRCs right), after ``packed``."""
    start = struct.pack("<QQI", len(packed), len(header), zlib.crc32(header))
    return SEVEN_ZIP_SIGNATURE + b"\x00\x04" + struct.pack("<I", zlib.crc32(start)) + start + packed + header


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from([b"\x03\x01\x01", b"\x21", b"\x00", b"\x04\x01\x08"]),
    st.binary(max_size=6),
    st.integers(min_value=0, max_value=1 << 21),
    st.binary(max_size=300),
)
def test_forged_encoded_7z_headers_never_raise(
    method: bytes, properties: bytes, size: int, packed: bytes
) -> None:
    """Any coder properties (LZMA's lc/lp/pb out of range, dictionary sizes), sizes and packed bytes."""
    check(read_archive_start(seven_zip_encoded(method, properties, size, packed)))


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=400), st.binary(max_size=100))
def test_forged_plain_7z_headers_never_raise(header: bytes, packed: bytes) -> None:
    """Past both CRCs, straight into the header parser: kHeader and whatever follows."""
    check(read_archive_start(seven_zip_plain(b"\x01" + header, packed)))
    check(read_archive_start(seven_zip_plain(b"\x17" + header, packed)))


def test_rar5_vint_and_sizes_are_checked() -> None:
    """A header claiming more than RAR5's 2 MB header limit is refused, not read."""
    body = vint(2) + vint(0)
    sized = vint(3 << 20) + body
    data = RAR5_SIGNATURE + struct.pack("<I", zlib.crc32(sized)) + sized
    start = read_archive_start(data)
    assert start is not None and start.encrypted is None


def test_an_encryption_header_after_entries_keeps_them() -> None:
    """Found by fuzz/archives.py: a RAR5 encryption header after a file entry (rar writes it first)
    dropped the names read before it, so a cut named a file the whole did not."""
    [plain] = rar5([Member("a.txt", b"abc")])
    end = len(plain) - 8  # without its end-of-archive header (CRC32, size 3, type 5, flags 0, 0)
    assert plain[end + 4 :] == b"\x03\x05\x00\x00"
    encryption = vint(4) + vint(0) + vint(0) + vint(0) + bytes([15]) + bytes(16)
    sized = vint(len(encryption)) + encryption
    data = plain[:end] + struct.pack("<I", zlib.crc32(sized)) + sized
    whole = read_archive_start(data)
    assert whole is not None and whole.encrypted is True and whole.headers_encrypted
    assert whole.file_names == ("a.txt",)
    part = read_archive_start(data[:-1])
    assert part is not None and part.file_names == ("a.txt",) and part.encrypted is None


def test_not_archives() -> None:
    for data in (b"", b"PK\x03\x04" + bytes(100), b"Rar!\x1a\x07", b"7z\xbc\xaf\x27", b"\x00" * 1000):
        assert read_archive_start(data) is None
    # Any bytes-like input reads the same.
    [volume] = rar5(PLAIN)
    assert read_archive_start(memoryview(volume)) == read_archive_start(bytearray(volume)) is not None


# -------------------------------------------------------------------------------------- choosing


@pytest.mark.parametrize(
    ("names", "chosen"),
    [
        (["x.part02.rar", "x.part01.rar", "x.part03.rar", "x.par2"], "x.part01.rar"),
        (["x.part2.rar", "x.part1.rar"], "x.part1.rar"),
        (["x.part002.rar", "x.part001.rar"], "x.part001.rar"),
        (["X.PART01.RAR", "X.PART02.RAR"], "X.PART01.RAR"),
        (["x.r00", "x.r01", "x.rar", "x.sfv"], "x.rar"),
        (["x.R00", "x.RAR"], "x.RAR"),
        (["x.7z.002", "x.7z.001"], "x.7z.001"),
        (["x.7z", "x.nfo"], "x.7z"),
        (["x.zip", "x.nfo", "x.mkv"], None),
        (["x.part02.rar", "x.part03.rar"], None),  # the first volume is not among them
        (["x.r00", "x.r01"], None),
        ([], None),
        # A small plain archive beside a film's set must not speak for the film.
        (["subs.rar", "movie.part01.rar", "movie.part02.rar", "movie.part03.rar"], "movie.part01.rar"),
        # RAR over 7z in a tie, then the name: the choice does not depend on the order given.
        (["b.7z", "a.rar"], "a.rar"),
        (["b.rar", "a.rar"], "a.rar"),
        (["Movie.2024.1080p.part1.rar", "Movie.2024.1080p.part10.rar"], "Movie.2024.1080p.part1.rar"),
        (["fe4cf18d550791a496480fbaf1c6aa3b", "812813ce"], None),
    ],
)
def test_first_volume(names: list[str], chosen: str | None) -> None:
    assert first_volume(names) == chosen
    assert first_volume(list(reversed(names))) == chosen


@given(st.lists(st.text(max_size=40), max_size=20))
def test_first_volume_is_one_of_the_names(names: list[str]) -> None:
    chosen = first_volume(names)
    assert chosen is None or chosen in names
    assert first_volume(list(reversed(names))) == chosen


# Names near the volumes' ends: the letters and digits that case-insensitive matching folds together
# ("ſ" is an "s" to re.I), Unicode digits, and the pieces of each suffix.
_VOLUME_PIECES = st.sampled_from(
    [
        ".",
        "part",
        "PART",
        "rar",
        "RaR",
        "r",
        "R",
        "s",
        "S",
        "\u017f",
        "7z",
        "7Z",
        "z",
        "0",
        "01",
        "001",
        "9",
        "\u0663",
        "x",
        " ",
        "-",
    ]
)


@settings(max_examples=2000, deadline=None)
@given(st.lists(_VOLUME_PIECES, min_size=1, max_size=8).map("".join))
def test_the_volume_end_test_never_drops_a_volume(name: str) -> None:
    """_volume_of tests a name's end before its five patterns: a name one of them matches has such an
    end (so the reading is the one the patterns alone give)."""
    names = archive_names
    patterns = (names._RAR_PART, names._RAR, names._RAR_OLD_VOLUME, names._SEVEN_ZIP_PART, names._SEVEN_ZIP)
    if any(p.fullmatch(name) for p in patterns):
        assert archive_names._VOLUME_END.search(name) is not None


_VOLUME_ENDS = st.sampled_from(
    [
        ".rar",
        ".RAR",
        ".part01.rar",
        ".part1.rar",
        ".part0001.rar",
        ".part00001.rar",
        ".PART02.RaR",
        ".r00",
        ".R01",
        ".s01",
        ".\u017f01",
        ".r000",
        ".r0000",
        ".7z",
        ".7Z",
        ".7z.001",
        ".7z.0001",
        ".7z.\u0663\u0663\u0661",
        ".part\u0661.rar",
        ".par2",
        ".vol00+01.par2",
        ".part01.rar.",
        "",
    ]
)


@settings(max_examples=3000, deadline=None)
@given(
    st.lists(
        st.sampled_from(["", "x", ".", "\n", "part", "7z", "0", "Movie.2024", " ", "\u017f"]), max_size=4
    ).map("".join),
    _VOLUME_ENDS,
    _VOLUME_ENDS,
)
def test_the_volume_tail_reads_as_the_five_patterns(base: str, end: str, after: str) -> None:
    """_volume_of reads a name's last 13 characters with one pattern; the five patterns, tried one
    after the other on the whole name, read every name alike (the base, its family, first or not)."""
    name = base + end + after
    assert archive_names._volume_of(name) == archive_names._volume_by_patterns(name)

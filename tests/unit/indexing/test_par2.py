"""The PAR2 reader against PAR2 files made by the real ``par2`` tool (par2cmdline).

Needs the ``par2`` command: ``apt-get install -y par2`` (Debian/Ubuntu package ``par2``, par2cmdline;
GPL, run as an external program only, never imported). Without it these tests fail, they do not skip:
the probe's names come from exactly this format, and a reader checked only against our own idea of
PAR2 would prove little.
"""

from __future__ import annotations

import hashlib
import shutil
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from usenet_indexer.indexing.par2 import Par2Error, Par2File, Par2Index, read_par2

# Names a poster uses: spaces (doubled and trailing), brackets, non-Latin scripts, an emoji, a
# subdirectory. Sizes below and above 16 KiB, so the 16 KiB hash is sometimes the whole file's.
FILES: dict[str, int] = {
    "My Movie (2024) [1080p].mkv": 150_000,
    "ünïcödé файл 日本語.nfo": 5_000,
    "two  spaces  and trailing .rar": 40_000,
    "emoji 🎬 clip.r00": 16_384,
    "sub dir/inner file.bin": 20_001,
}


class Par2Set:
    """Files and the PAR2 set par2 made of them. A plain class, not a dataclass: Hypothesis prints a
    failing example's arguments, dataclasses field by field, and hundreds of KB of bytes would bury it
    (its too-large-repr warning is an error here)."""

    def __init__(
        self, directory: Path, index: bytes, volumes: list[bytes], contents: dict[str, bytes]
    ) -> None:
        self.directory = directory
        self.index = index
        self.volumes = volumes
        self.contents = contents

    def __repr__(self) -> str:
        return f"Par2Set({self.directory}, index of {len(self.index)} bytes, {len(self.volumes)} volumes)"


def par2_command() -> str:
    found = shutil.which("par2")
    if found is None:
        pytest.fail("the par2 command (par2cmdline) is missing: install it with `apt-get install -y par2`")
    return found


def make_set(directory: Path, files: dict[str, int], name: str = "set") -> Par2Set:
    contents = {}
    for i, (file_name, size) in enumerate(files.items()):
        path = directory / file_name
        path.parent.mkdir(parents=True, exist_ok=True)
        # Deterministic, distinct content per file.
        content = hashlib.shake_256(f"{i}:{file_name}".encode()).digest(size)
        path.write_bytes(content)
        contents[file_name] = content
    subprocess.run(
        [par2_command(), "create", "-q", "-q", "-r10", "-n2", f"{name}.par2", "--", *files],
        cwd=directory,
        check=True,
        capture_output=True,
    )
    volumes = [p.read_bytes() for p in sorted(directory.glob(f"{name}.vol*.par2"))]
    return Par2Set(directory, (directory / f"{name}.par2").read_bytes(), volumes, contents)


@pytest.fixture(scope="session")
def par2_set(tmp_path_factory: pytest.TempPathFactory) -> Par2Set:
    return make_set(tmp_path_factory.mktemp("par2"), FILES)


def expected_files(made: Par2Set) -> dict[str, tuple[int, bytes, bytes]]:
    return {
        name: (len(content), hashlib.md5(content[:16384]).digest(), hashlib.md5(content).digest())
        for name, content in made.contents.items()
    }


def described(index: Par2Index) -> dict[str, tuple[int, bytes, bytes]]:
    return {f.name: (f.size, f.hash_16k, f.hash_full) for f in index.files}


def packet_bounds(data: bytes) -> Iterator[tuple[int, int, bytes]]:
    """(start, end, type) of each packet of a well-formed PAR2 file, by its length fields."""
    pos = 0
    while pos < len(data):
        length = struct.unpack_from("<Q", data, pos + 8)[0]
        yield pos, pos + length, data[pos + 48 : pos + 64]
        pos += length


def build_packet(kind: bytes, body: bytes, set_id: bytes = b"S" * 16) -> bytes:
    """A PAR2 packet with a correct MD5, for the packet types par2cmdline does not write."""
    body += b"\0" * (-len(body) % 4)
    length = 64 + len(body)
    md5 = hashlib.md5(set_id + kind + body).digest()
    return b"PAR2\0PKT" + struct.pack("<Q", length) + md5 + set_id + kind + body


def file_desc(file_id: bytes, name: bytes, size: int = 10, set_id: bytes = b"S" * 16) -> bytes:
    body = file_id + b"F" * 16 + b"H" * 16 + struct.pack("<Q", size) + name
    return build_packet(b"PAR 2.0\0FileDesc", body, set_id)


# -- the real tool's output --------------------------------------------------------------------


def test_the_index_names_every_file_with_its_size_and_hashes(par2_set: Par2Set) -> None:
    index = read_par2(par2_set.index)
    assert described(index) == expected_files(par2_set)
    assert (index.packets, index.bad_packets, index.truncated, index.missing_files) == (
        sum(1 for _ in packet_bounds(par2_set.index)),
        0,
        False,
        0,
    )
    assert index.recovery_slices == 0
    assert index.creator is not None
    assert index.creator.startswith("Created by par2cmdline")
    assert index.slice_size is not None
    assert index.slice_size > 0
    assert len(index.recovery_set_ids) == 1
    assert {f.recovery_set_id for f in index.files} == set(index.recovery_set_ids)


def test_every_volume_names_the_files_too(par2_set: Par2Set) -> None:
    assert par2_set.volumes, "par2 create -r10 -n2 made no volume files"
    for volume in par2_set.volumes:
        index = read_par2(volume)
        assert described(index) == expected_files(par2_set)
        assert index.recovery_slices > 0


def test_leftover_bytes_around_and_between_packets_are_skipped(par2_set: Par2Set) -> None:
    packets = [par2_set.index[a:b] for a, b, _ in packet_bounds(par2_set.index)]
    noisy = b"=yend size=0\r\n" + b"\r\n..junk..".join(packets) + b"\0\0\0trailing"
    index = read_par2(noisy)
    assert described(index) == expected_files(par2_set)
    assert index.bad_packets == 0


def test_a_damaged_description_is_skipped_and_counted(par2_set: Par2Set) -> None:
    data = bytearray(par2_set.index)
    _start, end, _ = next(
        (a, b, t) for a, b, t in packet_bounds(par2_set.index) if "日本語".encode() in par2_set.index[a:b]
    )
    data[end - 8] ^= 0x20  # inside the name: the MD5 no longer matches
    index = read_par2(bytes(data))
    expected = expected_files(par2_set)
    del expected["ünïcödé файл 日本語.nfo"]
    assert described(index) == expected
    assert (index.bad_packets, index.missing_files) == (1, 1)


def test_the_same_file_described_twice_is_listed_once(par2_set: Par2Set) -> None:
    index = read_par2(par2_set.index + par2_set.index)
    assert [f.name for f in index.files] == [f.name for f in read_par2(par2_set.index).files]


def test_two_recovery_sets_in_one_input_give_the_files_of_both(par2_set: Par2Set, tmp_path: Path) -> None:
    other = make_set(tmp_path, {"other release.mkv": 3_000}, name="other")
    index = read_par2(par2_set.index + other.index)
    assert described(index) == expected_files(par2_set) | expected_files(other)
    assert len(index.recovery_set_ids) == 2


def test_a_file_with_no_packets_at_all_fails_even_when_par2_made_it(tmp_path: Path) -> None:
    # An index file cut before its first packet ended: nothing readable, a clear error.
    made = make_set(tmp_path, {"a.bin": 100})
    with pytest.raises(Par2Error, match="one cut off at the end"):
        read_par2(made.index[: next(packet_bounds(made.index))[1] - 1])


@settings(max_examples=200, deadline=None)
@given(position=st.integers(0, 2**32))
def test_input_cut_anywhere_keeps_exactly_the_packets_before_the_cut(
    par2_set: Par2Set, position: int
) -> None:
    cut = position % (len(par2_set.index) + 1)
    complete = [(a, b, t) for a, b, t in packet_bounds(par2_set.index) if b <= cut]
    inside_a_packet = cut not in {b for _, b, _ in packet_bounds(par2_set.index)} | {0}
    if not complete:
        with pytest.raises(Par2Error):
            read_par2(par2_set.index[:cut])
        return
    index = read_par2(par2_set.index[:cut])
    assert index.packets == len(complete)
    assert index.truncated is inside_a_packet
    all_files = {f.name: f for f in read_par2(par2_set.index).files}
    whole = sum(1 for _, _, t in complete if t == b"PAR 2.0\0FileDesc")
    assert [f.name for f in index.files] == list(all_files)[:whole]
    assert all(all_files[f.name] == f for f in index.files)


@settings(max_examples=300, deadline=None)
@given(hits=st.lists(st.tuples(st.integers(0, 2**32), st.integers(0, 255)), min_size=1, max_size=6))
def test_damage_never_yields_a_wrong_name_or_another_exception(
    par2_set: Par2Set, hits: list[tuple[int, int]]
) -> None:
    damaged = bytearray(par2_set.index)
    for at, byte in hits:
        damaged[at % len(damaged)] = byte
    originals = set(read_par2(par2_set.index).files)
    try:
        index = read_par2(bytes(damaged))
    except Par2Error:
        return
    # The MD5 check lets through only packets exactly as par2 wrote them.
    assert set(index.files) <= originals


# -- packets par2cmdline does not write, and what is not PAR2 ----------------------------------


def test_a_unicode_filename_packet_wins_over_the_code_page_name() -> None:
    file_id = b"I" * 16
    data = file_desc(file_id, "Kl?ne.mkv".encode("cp1252")) + build_packet(
        b"PAR 2.0\0UniFileN", file_id + "Klöne ✓.mkv".encode("utf-16-le")
    )
    assert [f.name for f in read_par2(data).files] == ["Klöne ✓.mkv"]


def test_a_name_that_is_not_utf8_is_read_as_windows_1252() -> None:
    data = file_desc(b"I" * 16, "Café – Noël.avi".encode("cp1252"))
    assert [f.name for f in read_par2(data).files] == ["Café – Noël.avi"]


def test_a_description_too_short_for_its_fields_is_counted_bad() -> None:
    data = build_packet(b"PAR 2.0\0FileDesc", b"short") + file_desc(b"I" * 16, b"ok.bin")
    index = read_par2(data)
    assert ([f.name for f in index.files], index.bad_packets) == (["ok.bin"], 1)


def test_an_impossible_length_is_counted_bad_and_the_next_packet_read() -> None:
    good = file_desc(b"I" * 16, b"ok.bin")
    broken = b"PAR2\0PKT" + struct.pack("<Q", 66) + bytes(48)
    index = read_par2(broken + good)
    assert ([f.name for f in index.files], index.bad_packets, index.truncated) == (["ok.bin"], 1, False)


def test_unknown_packet_types_are_counted_and_skipped() -> None:
    data = build_packet(b"PAR 2.0\0Vendor\0\0", b"anything") + file_desc(b"I" * 16, b"ok.bin")
    index = read_par2(data)
    assert ([f.name for f in index.files], index.other_packets, index.bad_packets) == (["ok.bin"], 1, 0)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "the input is empty"),
        (b"=ybegin part=1 line=128 size=4000 name=x.par2\r\n...", "still yEnc-encoded"),
        (b"PAR\0\0\0\0\0" + bytes(100), "a PAR1 file"),
        (b"<html>not found</html>", "does not occur"),
    ],
)
def test_nothing_readable_is_a_clear_error(data: bytes, message: str) -> None:
    with pytest.raises(Par2Error, match=message):
        read_par2(data)


@settings(max_examples=500)
@given(garbage=st.binary(max_size=600), magic_at=st.lists(st.integers(0, 600), max_size=4))
def test_random_garbage_only_ever_raises_par2_error(garbage: bytes, magic_at: list[int]) -> None:
    # Sprinkle the magic in, so the packet header parser sees garbage too, not just the scanner.
    data = bytearray(garbage)
    for at in magic_at:
        data[at:at] = b"PAR2\0PKT"
    try:
        index = read_par2(bytes(data))
    except Par2Error:
        return
    assert all(isinstance(f, Par2File) for f in index.files)


def test_memoryview_and_bytearray_inputs_read_the_same(par2_set: Par2Set) -> None:
    expected = read_par2(par2_set.index)
    assert read_par2(bytearray(par2_set.index)) == expected
    assert read_par2(memoryview(par2_set.index)) == expected

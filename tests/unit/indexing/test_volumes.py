"""PAR2 recovery volumes named as par2cmdline names them, from their first article (issue 16,
indexing/volumes.py): checked against sets the real ``par2`` made, and against the sample's volumes
(par2_writer.par2_volume) through a burst's split (indexing/bursts.py) and the probe's naming of
per-file random names (indexing/bodies.py).

Needs the ``par2`` command (``apt-get install -y par2``); without it the tool's test fails.
"""

from __future__ import annotations

import hashlib
import random
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from usenet_indexer.indexing.bodies import HASH_BYTES, first_part, name_files
from usenet_indexer.indexing.bursts import Head, Piece, SplitFile, releases
from usenet_indexer.indexing.par2 import RecoveryHead, read_par2, recovery_head
from usenet_indexer.indexing.par2_writer import Par2Input, par2_index, par2_volume
from usenet_indexer.indexing.volumes import Volume, block_count, name_volumes, volume_names

ARTICLE = 700_000  # a first article's bytes, as posting tools cut them


@pytest.mark.parametrize(
    "options",
    [["-c15"], ["-c100"], ["-r10"], ["-c20", "-u", "-n4"], ["-c20", "-f5"], ["-c3", "-b3"]],
    ids=["c15", "c100", "r10", "uniform", "first5", "slices-longer-than-an-article"],
)
def test_par2cmdline_volumes_are_named_as_it_names_them(tmp_path: Path, options: list[str]) -> None:
    """Each volume's first article and size, and the index, give the name par2cmdline gave it; the last
    case's slices are longer than the article (its first packet is cut off there)."""
    par2 = shutil.which("par2")
    assert par2 is not None, "the par2 command is missing: apt-get install -y par2"
    rng = random.Random(5)
    (tmp_path / "a.bin").write_bytes(rng.randbytes(3_000_000))
    (tmp_path / "b.bin").write_bytes(rng.randbytes(1_234_567))
    subprocess.run([par2, "create", "-q", *options, "Set", "a.bin", "b.bin"], cwd=tmp_path, check=True)
    index = read_par2((tmp_path / "Set.par2").read_bytes())
    assert index.critical_bytes is not None
    volumes = {}
    for path in sorted(tmp_path.glob("Set.vol*.par2")):
        data = path.read_bytes()
        head = recovery_head(data[:ARTICLE])
        assert head is not None
        volumes[path.name] = Volume(head, len(data))
    assert len(volumes) >= 2
    named = name_volumes("Set", volumes, index)
    assert named == {name: name for name in volumes}


def _head(data: bytes) -> RecoveryHead:
    head = recovery_head(data)
    assert head is not None
    return head


def test_widths_follow_the_highest_end_and_the_largest_count() -> None:
    assert volume_names("x", [(0, 1), (1, 2), (3, 4)]) == ["x.vol0+1.par2", "x.vol1+2.par2", "x.vol3+4.par2"]
    assert volume_names("x", [(0, 8), (8, 2)]) == ["x.vol00+8.par2", "x.vol08+2.par2"]
    assert volume_names("x", [(63, 37)]) == ["x.vol063+37.par2"]


def sample_set(rng: random.Random, base: str) -> tuple[list[tuple[str, bytes]], bytes]:
    payload = [(f"{base}.part{i}.rar", rng.randbytes(20_000 + 7 * i)) for i in (1, 2, 3)]
    return payload, par2_index([Par2Input(n, d) for n, d in payload], slice_size=3_000)


def test_a_volume_whose_size_fits_no_par2cmdline_layout_leaves_the_set_unnamed() -> None:
    """Another tool's layout (here: padding after the packets) fits no count: no volume of the set is
    named, since the others' padding depends on it."""
    _, index = sample_set(random.Random(1), "Iron.Valley.2003.480p.BluRay.x264-GRP")
    read = read_par2(index)
    one, two = par2_volume(index, 0, 1), par2_volume(index, 1, 2)
    volumes = {
        "v1": Volume(_head(one[:1000]), len(one)),
        "v2": Volume(_head(two[:1000]), len(two)),
    }
    assert name_volumes("b", volumes, read) == {"v1": "b.vol0+1.par2", "v2": "b.vol1+2.par2"}
    assert block_count(Volume(_head(two[:1000]), len(two) + 4), read) is None
    volumes["v2"] = Volume(_head(two[:1000]), len(two) + 4)
    assert name_volumes("b", volumes, read) == {}


def test_a_damaged_packet_or_another_set_tells_nothing() -> None:
    _, index = sample_set(random.Random(2), "Paper.Moons.2011.720p.BluRay.x264-GRP")
    volume = par2_volume(index, 3, 4)
    head = recovery_head(volume, whole=True)
    assert head is not None and head.exponents == (3, 4, 5, 6) and head.whole
    damaged = bytearray(volume)
    damaged[100] ^= 1  # inside the first recovery packet, read whole
    assert recovery_head(bytes(damaged)) is None
    assert recovery_head(b"not a par2 file") is None
    _, other = sample_set(random.Random(3), "Seven.Bridges.2012.720p.BluRay.x264-GRP")
    stranger = par2_volume(other, 0, 1)
    assert name_volumes("b", {"v": Volume(_head(stranger[:900]), len(stranger))}, read_par2(index)) == {}


def test_a_bursts_volumes_are_named_by_their_slices() -> None:
    """A fully random release: index and two volumes split from a burst (one file an article here),
    the volumes named as par2cmdline would have named them."""
    rng = random.Random(7)
    base = "Glass.Garden.2016.1080p.BluRay.x264-GRP"
    payload, index = sample_set(rng, base)
    flat = [*payload, ("index", index), ("v1", par2_volume(index, 0, 1)), ("v2", par2_volume(index, 1, 2))]
    pieces = [Piece(100 + n, len(d) + 900, f"m{n}@t", f"s{n}") for n, (_, d) in enumerate(flat)]
    files = [SplitFile((n,), Head(f"r{n}", len(d), None, None, None, None)) for n, (_, d) in enumerate(flat)]
    parts = {n: first_part(f"m{n}@t", d[:1500], f"r{n}", len(d), None) for n, (_, d) in enumerate(flat)}
    for n, (_, d) in enumerate(flat[:3]):  # the payload's first 16 KiB: the PAR2 match
        parts[n] = first_part(f"m{n}@t", d[:HASH_BYTES], f"r{n}", len(d), None)
    parts[3] = first_part("m3@t", index, "r3", len(index), None)
    (found,) = releases(pieces, files, parts)
    assert sorted(f.name for f in found.files) == sorted(
        [*(n for n, _ in payload), f"{base}.par2", f"{base}.vol0+1.par2", f"{base}.vol1+2.par2"]
    )


def test_per_file_random_volumes_are_named_by_their_slices() -> None:
    """Per-file random names whose yEnc names are random too: the index names the payload, the slices
    the volumes."""
    rng = random.Random(8)
    base = "Northern.Lights.2010.720p.BluRay.x264-GRP"
    payload, index = sample_set(rng, base)
    flat = [*payload, ("i", index), ("v1", par2_volume(index, 0, 1)), ("v2", par2_volume(index, 1, 2))]
    random_names = [f"{rng.getrandbits(128):032x}" for _ in flat]
    parts = [
        first_part(posted, d[: max(HASH_BYTES, 1200)], posted, len(d), 1)
        for posted, (_, d) in zip(random_names, flat, strict=True)
    ]
    found = name_files(parts, read_par2(index))
    assert found.name == base
    assert [found.renames.get(p) for p in random_names] == [
        *(n for n, _ in payload),
        f"{base}.par2",
        f"{base}.vol0+1.par2",
        f"{base}.vol1+2.par2",
    ]


def test_the_recovery_exponent_is_read_from_a_cut_off_packet() -> None:
    _, index = sample_set(random.Random(9), "Field.Notes.S02E05.720p.WEB.h264-GRP")
    volume = par2_volume(index, 7, 8)
    head = recovery_head(volume[:70])
    assert head is not None and head.exponents == (7,) and head.slice_size == 3_000 and not head.whole
    assert recovery_head(volume[:67]) is None  # the exponent itself cut off
    assert struct.unpack_from("<I", volume, 64)[0] == 7
    assert hashlib.md5(volume[32:3068]).digest() == volume[16:32]


def test_a_volume_of_one_part_is_not_taken_for_the_missing_index() -> None:
    """The index never posted: a one-part volume is a volume (named by its slices), not ``<name>.par2``.
    Its packets name the release: its first article is the whole volume."""
    rng = random.Random(10)
    base = "Midnight.Signal.2014.720p.BluRay.x264-GRP"
    payload, index = sample_set(rng, base)
    flat = [*payload, ("v1", par2_volume(index, 0, 1))]
    pieces = [Piece(100 + n, len(d) + 900, f"m{n}@t", f"s{n}") for n, (_, d) in enumerate(flat)]
    files = [SplitFile((n,), Head(f"r{n}", len(d), None, None, None, None)) for n, (_, d) in enumerate(flat)]
    parts = {n: first_part(f"m{n}@t", d[:HASH_BYTES], f"r{n}", len(d), None) for n, (_, d) in enumerate(flat)}
    parts[3] = first_part("m3@t", flat[3][1], "r3", len(flat[3][1]), None)
    (found,) = releases(pieces, files, parts)
    assert sorted(f.name for f in found.files) == sorted([*(n for n, _ in payload), f"{base}.vol0+1.par2"])

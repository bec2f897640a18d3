"""The PAR2 index writer (what the sample news server posts) against our reader and the real ``par2``
tool: par2cmdline must verify the files against the index we wrote (so file ids, hashes, slice
checksums and packet MD5s are right), and the reader must name every file.

Needs the ``par2`` command (``apt-get install -y par2``); without it the tool's test fails.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from usenet_indexer.indexing.par2 import read_par2
from usenet_indexer.indexing.par2_writer import Par2Input, index_size, par2_index

FILES = {
    "Quiet.Harbor.2019.1080p.BluRay.x264-GRP.part01.rar": 50_000,
    "Quiet.Harbor.2019.1080p.BluRay.x264-GRP.part02.rar": 16_384,
    "Quiet.Harbor.2019.1080p.BluRay.x264-GRP.part03.rar": 777,
    "ünïcödé файл.nfo": 5,
}


def inputs() -> list[Par2Input]:
    rng = random.Random(3)
    return [Par2Input(name, rng.randbytes(size)) for name, size in FILES.items()]


def test_the_reader_names_every_file_with_size_and_hashes() -> None:
    import hashlib

    index = read_par2(par2_index(inputs(), slice_size=1024))
    assert index.bad_packets == 0 and not index.truncated and index.missing_files == 0
    assert index.slice_size == 1024
    assert index.creator == "usenet-indexer sample server"
    found = {f.name: f for f in index.files}
    assert set(found) == set(FILES)
    for f in inputs():
        assert found[f.name].size == len(f.data)
        assert found[f.name].hash_full == hashlib.md5(f.data).digest()
        assert found[f.name].hash_16k == hashlib.md5(f.data[:16384]).digest()
    assert len(index.recovery_set_ids) == 1


def test_the_same_files_give_the_same_bytes() -> None:
    assert par2_index(inputs()) == par2_index(inputs())


@pytest.mark.parametrize("slice_size", [0, 3, 1022])
def test_a_slice_size_that_is_not_a_multiple_of_4_is_refused(slice_size: int) -> None:
    with pytest.raises(ValueError, match="multiple of 4"):
        par2_index(inputs(), slice_size=slice_size)


def test_par2cmdline_verifies_the_files_against_it(tmp_path: Path) -> None:
    tool = shutil.which("par2")
    if tool is None:
        pytest.fail("the par2 command (par2cmdline) is missing: install it with `apt-get install -y par2`")
    for f in inputs():
        (tmp_path / f.name).write_bytes(f.data)
    (tmp_path / "set.par2").write_bytes(par2_index(inputs(), slice_size=1024))
    done = subprocess.run([tool, "verify", "set.par2"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "All files are correct" in done.stdout
    # A damaged file is found: the slice checksums are read, not just the names.
    damaged = tmp_path / next(iter(FILES))
    data = bytearray(damaged.read_bytes())
    data[20_000] ^= 0xFF
    damaged.write_bytes(bytes(data))
    done = subprocess.run([tool, "verify", "set.par2"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode != 0
    assert "damaged" in done.stdout.lower()


@pytest.mark.parametrize("slice_size", [4, 1024, 3000, 16_384])
def test_index_size_without_the_bytes_is_the_index_length(slice_size: int) -> None:
    # The sample server's truth() gives a PAR2 file's size without hashing a release's files.
    files = inputs()
    assert index_size([(f.name, len(f.data)) for f in files], slice_size) == len(
        par2_index(files, slice_size)
    )
    assert index_size([("empty", 0)], slice_size) == len(par2_index([Par2Input("empty", b"")], slice_size))

"""File kinds, base names, obfuscation and display names."""

from __future__ import annotations

import pytest

from usenet_indexer.indexing.naming import FileKind, clean_name, file_kind, looks_obfuscated, release_base


@pytest.mark.parametrize(
    ("name", "kind", "base"),
    [
        ("x.par2", FileKind.PAR2, "x"),
        ("x.vol07+08.par2", FileKind.PAR2_VOLUME, "x"),
        ("X.VOL00+01.PAR2", FileKind.PAR2_VOLUME, "X"),
        ("x.part07.rar", FileKind.RAR, "x"),
        ("x.r07", FileKind.RAR, "x"),
        ("x.rar", FileKind.RAR, "x"),
        ("x.7z.012", FileKind.SEVEN_ZIP, "x"),
        ("x.nfo", FileKind.NFO, "x"),
        ("x.sfv", FileKind.SFV, "x"),
        ("x.nzb", FileKind.NZB, "x"),
        ("x.001", FileKind.SPLIT, "x"),
        ("Movie.2019.mkv", FileKind.VIDEO, "Movie.2019"),
        ("01 - Song.flac", FileKind.AUDIO, "01 - Song"),
        ("Book.epub", FileKind.BOOK, "Book"),
        ("readme", FileKind.OTHER, "readme"),
    ],
)
def test_kinds_and_bases(name: str, kind: FileKind, base: str) -> None:
    assert file_kind(name) is kind
    assert release_base(name) == base


@pytest.mark.parametrize(
    "name",
    [
        "a8f3c9d2e1b04f6a9c7d",
        "0123456789ABCDEF0123",
        "Xk9Qz2Lm7Pw4Rt8Yb3Nc",
        "5TzP1dYqW8mK2vBn",
        "XkQzLmPwRtYbNcVa",
    ],
)
def test_obfuscated(name: str) -> None:
    assert looks_obfuscated(name)


@pytest.mark.parametrize(
    "name",
    [
        "Quiet.Harbor.2011.1080p.BluRay.x264-GRP",
        "TheBigBangTheory",
        "Artist - Album (2002) [FLAC]",
        "x264",
        "",
    ],
)
def test_not_obfuscated(name: str) -> None:
    assert not looks_obfuscated(name)


def test_clean_name() -> None:
    assert clean_name("[123456] Show.Name.S01E01") == "Show.Name.S01E01"
    assert clean_name(' - "Some Name" - ') == "Some Name"
    assert clean_name("Artist - Album (2002) [FLAC]") == "Artist - Album (2002) [FLAC]"
    assert clean_name("Name  [FULL]  thing") == "Name thing"

"""Newznab categories with Prowlarr's numbering, and the attributes read on the way."""

from __future__ import annotations

import pytest

from usenet_indexer.indexing.categories import categorize


@pytest.mark.parametrize(
    ("name", "files", "category"),
    [
        ("Quiet.Harbor.2011.480p.DVDRip.XviD-GRP", [], 2030),
        ("Quiet.Harbor.2011.1080p.BluRay.x264-GRP", [], 2040),
        ("Quiet.Harbor.2011.2160p.WEB-DL.x265-GRP", [], 2045),
        ("Quiet.Harbor.2011.COMPLETE.BLURAY-GRP", [], 2050),
        ("Quiet.Harbor.2011.1080p.3D.HSBS.BluRay.x264-GRP", [], 2060),
        ("Harbor.Watch.S04E13.SDTV.x264-GRP", [], 5030),
        ("Harbor.Watch.S04E13.720p.WEB.h264-GRP", [], 5040),
        ("Harbor.Watch.S04E13.2160p.WEB.h264-GRP", [], 5045),
        ("Harbor.Watch.2024.05.12.720p.HDTV.x264-GRP", [], 5040),
        ("Artist - Album (2002) [FLAC]", ["01 - a.flac"], 3040),
        ("Some Upload", ["01 - a.mp3", "02 - b.mp3", "x.par2"], 3010),
        ("Author - Title (2011) EPUB", ["Title.epub"], 7020),
        ("Author - Series 012 (2011)", ["Series 012.cbr"], 7030),
        # Every TV release in a subcategory Sonarr asks for (5030, 5040 by default; issue 18): a name
        # without a resolution tag is SD, as scene names are.
        ("Harbor.Watch.S01E01.HDTV.x264-GRP", [], 5030),
        ("Harbor.Watch.S01E01.WEB.h264-GRP", [], 5030),
        ("Harbor.Watch.2024.05.12.WEB.h264-GRP", [], 5030),
        ("Harbor.Watch.S01E01E02.1080p.WEB.h264-GRP", [], 5040),
        ("Harbor.Watch.S01E01-E02.720p.HDTV.x264-GRP", [], 5040),
        ("[SubsPlease] Harbor no Kaze - 05 (1080p) [ABCD1234]", [], 5070),
        ("Planet.Oceans.S01E02.Documentary.1080p.WEB.h264-GRP", [], 5080),
        ("NFL.2024.09.08.Harbor.vs.Watch.720p.WEB.h264-GRP", [], 5060),
        ("Harbor.Watch.S01E01-GRP", [], 5030),
        # Every movie in one too.
        ("Quiet.Harbor.2011.DVD9-GRP", [], 2070),
        ("Quiet.Harbor.2011.WEB.x264-GRP", [], 2020),
        ("Some.Software.v8.3-NTb", ["x.part01.rar"], 4000),
        ("Game.Name.NSW-VENOM", [], 1000),
        ("Some.XXX.Clip.1080p", [], 6000),
        ("a8f3c9d2e1b04f6a9c7d", ["a8f3c9d2e1b04f6a9c7d.part01.rar"], 8000),
        ("random words", [], 8000),
    ],
)
def test_categories(name: str, files: list[str], category: int) -> None:
    assert categorize(name, files).id == category


def test_attributes() -> None:
    c = categorize("Harbor.Watch.S04E13.720p.WEB.h264-GRP")
    assert (c.season, c.episode, c.resolution, c.title) == (4, 13, "720p", "Harbor Watch")
    assert c.name == "TV/HD"
    multi = categorize("Harbor.Watch.S01E01E02.1080p.WEB.h264-GRP")
    assert (multi.season, multi.episode, multi.title) == (1, 1, "Harbor Watch")
    m = categorize("Quiet.Harbor.2011.1080p.BluRay.x264-GRP")
    assert (m.year, m.resolution) == (2011, "1080p")

"""Newznab categories with Prowlarr's numbering, and the attributes read on the way."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from usenet_indexer.indexing import categories
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


# ---- the guards (categories._Guarded): the same categories as the patterns alone --------------------

GUARDED = {name: value for name, value in vars(categories).items() if isinstance(value, categories._Guarded)}
ASCII = st.characters(max_codepoint=127)


@contextmanager
def unguarded() -> Iterator[None]:
    """Every guard passes every name: categorize runs each pattern as it did before the guards."""
    kept = {name: guard.needles for name, guard in GUARDED.items()}
    try:
        for guard in GUARDED.values():
            guard.needles = ("",)
        categories._parse_title.cache_clear()
        yield
    finally:
        for name, guard in GUARDED.items():
            guard.needles = kept[name]
        categories._parse_title.cache_clear()


def test_the_guards_are_found() -> None:
    assert len(GUARDED) == 18  # a pattern guarded since is tested below too; this says the list is read


@pytest.mark.parametrize("name", sorted(GUARDED))
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_every_ascii_match_holds_a_needle(name: str, data: st.DataObject) -> None:
    """What the guard skips, the pattern would not have found: a needle left out (or misspelt) fails."""
    guard = GUARDED[name]
    text = data.draw(st.from_regex(guard.pattern, alphabet=ASCII))
    assert guard.pattern.search(text) is not None
    assert guard.search(text, text.lower()) is not None


# Pieces of release names: the patterns' words in both cases, the shapes the regexes read, Unicode that
# re.I folds into ASCII letters (ſ, K, İ), and noise.
WORDS = [
    "xxx",
    "porn",
    "NSW",
    "Switch",
    "PS4",
    "psv",
    "XboxOne",
    "Wii U",
    "3DS",
    "v1.2.3",
    "x64",
    "Windows",
    "macOS",
    "setup",
    "-CODEX",
    "-FitGirl",
    "EPUB",
    "azw3",
    "PDF",
    "CBR",
    "Comics",
    "FLAC",
    "mp3",
    "320kbps",
    "Discography",
    "S01E02",
    "s1e2e3",
    "S01E01-E02",
    "1x02",
    "Documentary",
    "Docuseries",
    "doku",
    "NFL",
    "F1",
    "Formula.1",
    "Premier League",
    "La.Liga",
    "Serie A",
    "Super_Bowl",
    "DVD9",
    "DVD-R",
    "video_ts",
    "PAL",
    "NTSC",
    "wav",
    "APE",
    "24bit",
    "Magazine",
    "Issue 12",
    "480p",
    "576p",
    "SDTV",
    "DVDRip",
    "XviD",
    "PDTV",
    "dsr",
    "2160p",
    "4K",
    "UHD",
    "720p",
    "1080i",
    "1080p",
    "Complete.BluRay",
    "BDMV",
    "BD50",
    "AVC.REMUX",
    "3D",
    "HSBS",
    "Half-OU",
    "ou",
    "BluRay",
    "Blu-ray",
    "WEB-DL",
    "WEBRip",
    "WEB",
    "HDTV",
    "x265",
    "H.264",
    "h264",
    "HEVC",
    "PROPER",
    "REPACK",
    "2011",
    "1999",
    "2024.05.12",
    "[SubsPlease]",
    "- 05",
    "(1080p)",
    "GRP",
    "Harbor",
    "Watch",
    "ſ",
    "K",
    "İ",
    "ı",
    "é",
]
SEPARATORS = st.sampled_from([".", " ", "_", "-", " - ", "", "[", "]", "(", ")"])
PIECES = st.one_of(
    st.sampled_from(WORDS),
    st.sampled_from(WORDS).map(str.upper),
    st.sampled_from(WORDS).map(str.lower),
    st.text(ASCII, max_size=6),
    st.text(max_size=3),
)
NAMES = st.lists(st.tuples(PIECES, SEPARATORS), max_size=12).map(lambda ps: "".join(a + b for a, b in ps))
FILE_NAMES = st.lists(
    st.sampled_from(
        ["a.flac", "b.mp3", "c.epub", "d.cbz", "e.mkv", "f.exe", "g.part01.rar", "h.par2", "i.nfo"]
    ),
    max_size=4,
)


@settings(max_examples=1500, deadline=None)
@given(NAMES, FILE_NAMES)
# Names that reach the patterns checked last (a book's magazine test, sport, documentary, 3D, DVD):
# random names seldom do.
@example("Harbor Monthly Issue 12 (2011)", ["c.epub"])
@example("Harbor.Weekly.Magazine.PDF", [])
@example("NFL.2024.09.08.Harbor.vs.Watch.720p.WEB.h264-GRP", [])
@example("Planet.Oceans.S01E02.Docuseries.2160p.WEB.h264-GRP", [])
@example("Quiet.Harbor.2011.1080p.Half-OU.BluRay.x264-GRP", [])
@example("Quiet.Harbor.2011.DVD-R.NTSC-GRP", [])
def test_guards_give_the_categories_of_the_patterns_alone(name: str, files: list[str]) -> None:
    categories._parse_title.cache_clear()
    guarded = categorize(name, files)
    with unguarded():
        assert categorize(name, files) == guarded

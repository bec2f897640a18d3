"""The NZB writer: valid against the NZB 1.1 DTD, whatever a poster sent, in the order downloaders want.

``nzb-1.1.dtd`` next to this file is the public NZB 1.1 DTD (newzBin, mirrored by the NZB spec site,
nzbspec.github.io), kept verbatim so documents are validated offline.
"""

from __future__ import annotations

import gzip
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from usenet_indexer.wire.nzb import NZB_NAMESPACE, NzbFile, NzbRelease, NzbSegment, order_files, write_nzb

DTD = etree.DTD(str(Path(__file__).with_name("nzb-1.1.dtd")))
NS = {"n": NZB_NAMESPACE}


def carried(text: str) -> str:
    """What XML 1.0 can carry of ``text``, written from the spec's Char production (independently of the
    writer's own table): anything else becomes U+FFFD."""
    return "".join(
        c
        if c in "\t\n\r"
        or 0x20 <= ord(c) <= 0xD7FF
        or 0xE000 <= ord(c) <= 0xFFFD
        or 0x10000 <= ord(c) <= 0x10FFFF
        else "\ufffd"
        for c in text
    )


def parse(document: bytes) -> etree._Element:
    # No DTD loading, no network, no entities: the document must stand on its own.
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    root = etree.fromstring(document, parser)
    assert DTD.validate(root), DTD.error_log.filter_from_errors()
    return root


def segment(number: int, size: int = 700_000, message_id: str | None = None) -> NzbSegment:
    return NzbSegment(number, size, message_id or f"<part{number}of9.abc@news.example>")


def file(name: str, index: int | None = None, *, subject: str | None = None, parts: int = 2) -> NzbFile:
    return NzbFile(
        poster="Poster <poster@example.com>",
        date=1_700_000_000,
        subject=subject if subject is not None else f'[{index or 1}/12] - "{name}" yEnc (1/{parts})',
        groups=["alt.binaries.test", "alt.binaries.misc"],
        segments=[segment(n) for n in range(1, parts + 1)],
        name=name if subject is None else None,
        index=index,
    )


def release(*files: NzbFile, password: str | None = None) -> NzbRelease:
    return NzbRelease("Some.Release.2024.1080p", "TV > HD", list(files), password)


def names_in(root: etree._Element) -> list[str]:
    subjects = [f.get("subject") for f in root.iterfind("n:file", NS)]
    return [s.split('"')[1] for s in subjects]


# -- the document ------------------------------------------------------------------------------


def test_a_release_is_a_valid_nzb_with_head_files_groups_and_segments() -> None:
    document = write_nzb(release(file("a.rar", 1), file("a.par2", 2), password="s3cret"))
    assert document.startswith(
        b'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE nzb PUBLIC "-//newzBin//DTD NZB 1.1//EN"'
    )
    root = parse(document)
    assert root.tag == f"{{{NZB_NAMESPACE}}}nzb"
    meta = {m.get("type"): m.text for m in root.iterfind("n:head/n:meta", NS)}
    assert meta == {"title": "Some.Release.2024.1080p", "category": "TV > HD", "password": "s3cret"}
    first = root.find("n:file", NS)
    assert first is not None
    assert (first.get("poster"), first.get("date"), first.get("subject")) == (
        "Poster <poster@example.com>",
        "1700000000",
        '[2/12] - "a.par2" yEnc (1/2)',
    )
    assert [g.text for g in first.iterfind("n:groups/n:group", NS)] == [
        "alt.binaries.test",
        "alt.binaries.misc",
    ]
    assert [
        (s.get("number"), s.get("bytes"), s.text) for s in first.iterfind("n:segments/n:segment", NS)
    ] == [
        ("1", "700000", "part1of9.abc@news.example"),
        ("2", "700000", "part2of9.abc@news.example"),
    ]


def test_the_password_meta_is_written_only_when_known() -> None:
    root = parse(write_nzb(release(file("a.rar"))))
    assert [m.get("type") for m in root.iterfind("n:head/n:meta", NS)] == ["title", "category"]


def test_segments_are_ordered_by_number_once_each_without_brackets() -> None:
    parts = [
        segment(3),
        segment(1, message_id=" <first@x> "),
        segment(2),
        segment(1, message_id="<repost@x>"),
    ]
    nzb_file = NzbFile("p", 1, "s", ["g"], parts)
    root = parse(write_nzb(release(nzb_file)))
    written = [(s.get("number"), s.text) for s in root.iterfind("n:file/n:segments/n:segment", NS)]
    assert written == [
        ("1", "first@x"),
        ("2", "part2of9.abc@news.example"),
        ("3", "part3of9.abc@news.example"),
    ]


def test_files_without_segments_are_left_out() -> None:
    empty = NzbFile("p", 1, '"gone.r05" yEnc', ["g"], [])
    root = parse(write_nzb(release(file("a.rar"), empty)))
    assert names_in(root) == ["a.rar"]


def test_gzip_on_request_and_the_same_bytes_every_time() -> None:
    r = release(file("a.rar"), file("a.par2"))
    packed = write_nzb(r, gzip=True)
    assert packed[:2] == b"\x1f\x8b"
    assert gzip.decompress(packed) == write_nzb(r)
    assert write_nzb(r, gzip=True) == packed


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (release(), "no file with segments"),
        (release(NzbFile("p", 1, "s", ["g"], [segment(0)])), "numbers start at 1"),
        (release(NzbFile("p", 1, "s", ["g"], [segment(1, size=-1)])), "sizes are not negative"),
        (release(NzbFile("p", 1, "s", ["g"], [NzbSegment(1, 5, " <> ")])), "has no message-id"),
    ],
)
def test_catalog_errors_are_refused(broken: NzbRelease, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        write_nzb(broken)


# -- whatever a poster sends -------------------------------------------------------------------

NASTY = [
    "]]>",
    "<![CDATA[x]]>",
    "\x00",
    "\x1b[31m",
    "\udc80\udcff",  # bytes that were not UTF-8, kept by surrogateescape
    "\ud83c",  # half a surrogate pair
    "\ufffe\uffff",
    "\r\n",
    "\r",
    "\t",
    "&amp;",
    "&#0;",
    "\"quoted\" 'single'",
    "<tag attr='x'>",
    "\x85\u2028",  # NEL and LINE SEPARATOR: legal XML characters, kept as they are
    "🎬",
    " ",
]


def test_every_nasty_string_is_carried_or_replaced() -> None:
    text = "".join(NASTY)
    nzb_file = NzbFile(text, 1, text, [text], [NzbSegment(1, 1, f"<{text}@x>")], name=text)
    root = parse(write_nzb(NzbRelease(text, text, [nzb_file], text)))
    want = carried(text)
    assert want.count("\ufffd") == 7
    element = root.find("n:file", NS)
    assert element is not None
    assert element.get("poster") == element.get("subject") == want
    assert [m.text for m in root.iterfind("n:head/n:meta", NS)] == [want, want, want]
    assert root.findtext("n:file/n:groups/n:group", namespaces=NS) == want
    assert root.findtext("n:file/n:segments/n:segment", namespaces=NS) == f"{want}@x"


poster_text = st.lists(
    st.one_of(st.text(st.characters(exclude_categories=[]), max_size=20), st.sampled_from(NASTY)), max_size=6
).map("".join)


@pytest.mark.fuzz
@settings(max_examples=300)
@given(poster=poster_text, subject=poster_text, name=poster_text, category=poster_text, group=poster_text)
def test_any_poster_text_gives_well_formed_xml_that_reads_back(
    poster: str, subject: str, name: str, category: str, group: str
) -> None:
    nzb_file = NzbFile(poster, 1_600_000_000, subject, [group], [NzbSegment(1, 10, "<id@x>")])
    document = write_nzb(NzbRelease(name, category, [nzb_file], password=subject or None))
    document.decode("utf-8")  # strict: nothing unencodable slipped through
    for root in (parse(document), ElementTree.fromstring(document)):  # libxml2 and expat agree
        element = root.find("n:file", NS)
        assert element is not None
        assert element.get("poster") == carried(poster)
        assert element.get("subject") == carried(subject)
        meta = [m.text or "" for m in root.iterfind("n:head/n:meta", NS)]
        assert meta == [carried(name), carried(category), *([carried(subject)] if subject else [])]
        assert (root.findtext("n:file/n:groups/n:group", namespaces=NS) or "") == carried(group)


# -- file order --------------------------------------------------------------------------------


def test_par2_index_first_then_the_rar_set_in_order_then_volumes_last() -> None:
    names = [
        "x.vol07+08.par2",
        "x.r01",
        "x.nfo",
        "x.rar",
        "x.vol00+01.par2",
        "x.r00",
        "x.par2",
        "x.vol01+02.par2",
        "x.r10",
        "x.r02",
        "x.vol15+16.par2",
        "x.sfv",
    ]
    written = names_in(parse(write_nzb(release(*(file(n) for n in names)))))
    assert written == [
        "x.par2",
        "x.rar",
        "x.r00",
        "x.r01",
        "x.r02",
        "x.r10",
        "x.nfo",
        "x.sfv",
        "x.vol00+01.par2",
        "x.vol01+02.par2",
        "x.vol07+08.par2",
        "x.vol15+16.par2",
    ]


def test_names_sort_naturally() -> None:
    names = ["a.part10.rar", "a.part2.rar", "a.part1.rar", "A.part3.rar"]
    assert [f.name for f in order_files(file(n) for n in names)] == [
        "a.part1.rar",
        "a.part2.rar",
        "A.part3.rar",
        "a.part10.rar",
    ]


def test_the_file_counter_orders_files_before_names_do() -> None:
    # Obfuscated names sort at random; the poster's [i/n] is the posting order.
    files = [file("zz9.bin", 1), file("aa1.bin", 3), file("mm5.bin", 2), file("b.nfo"), file("c.par2", 4)]
    assert [f.name for f in order_files(files)] == ["c.par2", "zz9.bin", "mm5.bin", "aa1.bin", "b.nfo"]


def test_without_a_parsed_name_the_quoted_name_in_the_subject_decides() -> None:
    files = [
        file("", subject='[2/3] - "movie.vol00+01.par2" yEnc (1/1)'),
        file("", subject='[3/3] - "movie.mkv" yEnc (1/9)'),
        file("", subject='[1/3] - "movie.par2" yEnc (1/1)'),
        file("", subject="movie.par2.nfo yEnc (1/1)"),
    ]
    assert [f.subject.split(" - ")[-1].split(" yEnc")[0] for f in order_files(files)] == [
        '"movie.par2"',
        '"movie.mkv"',
        "movie.par2.nfo",
        '"movie.vol00+01.par2"',
    ]


def test_files_keep_their_order_when_nothing_tells_them_apart() -> None:
    files = [file("same.bin", subject=f"same.bin take {i}") for i in range(5)]
    assert order_files(files) == files

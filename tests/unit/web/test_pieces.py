"""The pure pieces of search, the newznab API, NZBs and the admin password (no store, no server)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from usenet_indexer.catalog.nzbs import file_subject, nzb_file_name, nzb_release
from usenet_indexer.catalog.search import MAX_WORDS, category_ids, words
from usenet_indexer.coordinator.http.newznab import (
    NewznabError,
    Params,
    parse_categories,
    parse_imdb,
    search_query,
    xml_escape,
)
from usenet_indexer.indexing import FileFragment, pack_segments
from usenet_indexer.indexing.fragment import int_array
from usenet_indexer.passwords import hash_password, verify_password


def test_words_are_letters_and_digits_only() -> None:
    assert words("Show.Name.S01E02.1080p-GRP") == ["show", "name", "s01e02", "1080p", "grp"]
    assert words('" OR 1=1 -- ; DROP') == ["or", "1", "1", "drop"]
    assert words("NEAR(a* b)") == ["near", "a", "b"]
    assert words("") == []
    assert words(None) == []
    assert words("!!! ???") == []
    assert len(words(" ".join(["w"] * 100))) == MAX_WORDS


@given(st.text(max_size=200))
def test_words_never_carry_query_syntax(text: str) -> None:
    for word in words(text):
        assert word
        assert not set(word) & set("\"'*:^()-+ \\%_")
        assert len(word) <= 64


def test_parent_categories_stand_for_their_children() -> None:
    from usenet_indexer.indexing.categories import NAMES

    ids = category_ids((5000, 2040))
    assert 5000 in ids and 5040 in ids
    assert {c for c in NAMES if 5000 <= c < 6000} <= set(ids)
    assert 6000 not in ids and 4999 not in ids and 5999 not in ids  # only what the catalog can hold
    assert 2040 in ids and 2045 not in ids
    assert category_ids((5040, 5040)) == [5040]


def test_parameters() -> None:
    params = Params(
        [("LIMIT", "5"), ("limit", "7"), ("cat", "5000, 2040,"), ("season", "S03"), ("ep", "E04")]
    )
    assert params.integer("limit") == 5  # the first value of a name, names in any case
    assert params.integer("season", prefix="s") == 3
    assert parse_categories(params.text("cat")) == (5000, 2040)
    for bad in ("-1", "1.5", "١٢", "1e3", "99999999999999"):
        with pytest.raises(NewznabError) as raised:
            Params([("limit", bad)]).integer("limit")
        assert raised.value.code == 201
    assert parse_imdb("tt0111161") == "0111161"
    assert parse_imdb("111161") == "0111161"
    query = search_query("tvsearch", Params([("q", "Show"), ("season", "2024"), ("ep", "05/12")]))
    assert query.text == "Show 2024 05 12"
    assert query.season is None and query.episode is None
    assert search_query("search", Params([("limit", "100000")])).limit == 100


def test_error_descriptions_500_and_501_are_exact() -> None:
    assert NewznabError(500, "ignored").description == "Request limit reached"
    assert NewznabError(501).description == "Download limit reached"
    assert NewznabError(201, "cat").description == "Incorrect parameter (cat)"


def test_xml_escape_keeps_documents_well_formed() -> None:
    assert xml_escape('a<b>&"\x00\ud800\n') == "a&lt;b&gt;&amp;&quot;\ufffd\ufffd&#10;"


def test_nzb_release_from_a_segment_blob() -> None:
    files = (
        FileFragment(
            "x.part2.rar", 3, 2, int_array([1, 2]), int_array([700, 300]), int_array([5, 6]), b"c@x\nd@x"
        ),
        FileFragment("x.par2", 1, 1, int_array([1]), int_array([100]), int_array([1]), b"a@x"),
    )
    row = {
        "name": "X.2024.1080p",
        "poster": "p <p@x>",
        "groups": "alt.binaries.a alt.binaries.b",
        "category": 2040,
        "first_date": 1_700_000_000,
        "posted_at": 1.0,
        "segments": pack_segments(files),
    }
    release = nzb_release(row)
    assert release.category == "Movies/HD"
    by_name = {f.name: f for f in release.files}
    assert by_name["x.part2.rar"].subject == 'X.2024.1080p [3/3] - "x.part2.rar" yEnc (1/2)'
    assert [s.message_id for s in by_name["x.part2.rar"].segments] == ["c@x", "d@x"]
    assert by_name["x.par2"].groups == ("alt.binaries.a", "alt.binaries.b")
    assert by_name["x.par2"].date == 1_700_000_000
    assert nzb_file_name('a/b\\c:"d".e') == "a_b_c__d_.e.nzb"


def test_a_renamed_file_keeps_its_subject_but_for_the_quoted_name() -> None:
    # snapshot run, issue 16: the probe renamed a per-file random file, the NZB wrote the subject as
    # posted, and NZBGet saved the file under its random name.
    posted = '[1/6] - "fe4cf18d550791a496480fbaf1c6aa3b" yEnc (1/12)'
    assert file_subject(posted, "Movie.2024.part1.rar") == '[1/6] - "Movie.2024.part1.rar" yEnc (1/12)'
    assert file_subject(posted, "fe4cf18d550791a496480fbaf1c6aa3b") == posted  # not renamed
    wtf = '[PRiVATE]-[WtFnZb]-[x.part1.rar]-[1/8] - "" yEnc (1/100)'
    assert (
        file_subject(wtf, "x.part1.rar")
        == '[PRiVATE]-[WtFnZb]-[x.part1.rar]-[1/8] - "x.part1.rar" yEnc (1/100)'
    )
    assert file_subject("k3j2h4k5j yEnc (1/9)", "a.mkv") == 'k3j2h4k5j yEnc (1/9) "a.mkv"'
    assert file_subject(posted, 'odd"name.rar') == posted  # cannot be quoted: left as posted


@given(st.text(max_size=80), st.text(max_size=40).filter(lambda n: n and '"' not in n))
def test_a_downloader_reads_the_real_name_from_any_subject(posted: str, name: str) -> None:
    quoted = re.search(r'"([^"]*)"', file_subject(posted, name))  # how SABnzbd and NZBGet read it
    if quoted is None:  # left as posted: its words hold the name, as downloaders read them before
        assert file_subject(posted, name) == posted and name in posted
    else:
        assert quoted.group(1) == name


def test_admin_password_hash() -> None:
    stored = hash_password("s3cret")
    assert stored.startswith("scrypt$")
    assert verify_password("s3cret", stored)
    assert not verify_password("s3cret ", stored)
    for broken in ("", "scrypt$1$2", "md5$x$y$z$a$b", stored.replace("$", "$x", 1)):
        assert not verify_password("s3cret", broken)

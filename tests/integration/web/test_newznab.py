"""The newznab API over HTTP (in-process ASGI) on a catalog indexed from a generated posting: what
Sonarr and Prowlarr read, JSON equal to XML, stable paging, filters, NZBs, limits, and the spec's
error codes for every bad input (hypothesis over the parameters: never a 500)."""

from __future__ import annotations

import gzip
import json
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.indexing import unpack_segments

NS = {"newznab": "http://www.newznab.com/DTD/2010/feeds/attributes/"}
NZB_NS = {"nzb": "http://www.newzbin.com/DTD/2003/nzb"}
DTD = Path(__file__).parents[2] / "unit" / "wire" / "nzb-1.1.dtd"


def xml(response: Any) -> Any:
    assert response.status_code == 200, response.text
    return etree.fromstring(response.content)


def error_code(response: Any) -> str:
    root = xml(response)
    assert root.tag == "error", response.text
    assert root.get("description")
    return str(root.get("code"))


def items(root: Any) -> list[dict[str, Any]]:
    """Each item as a dict: its elements' text, the enclosure's attributes, the attrs as a list."""
    out = []
    for item in root.iter("item"):
        enclosure = item.find("enclosure")
        out.append(
            {
                "title": item.findtext("title"),
                "guid": item.findtext("guid"),
                "link": item.findtext("link"),
                "pubDate": item.findtext("pubDate"),
                "category": item.findtext("category"),
                "enclosure": dict(enclosure.attrib),
                "attrs": [(a.get("name"), a.get("value")) for a in item.findall("newznab:attr", NS)],
            }
        )
    return out


def json_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "title": i["title"],
            "guid": i["guid"],
            "link": i["link"],
            "pubDate": i["pubDate"],
            "category": i["category"],
            "enclosure": i["enclosure"]["@attributes"],
            "attrs": [(a["@attributes"]["name"], a["@attributes"]["value"]) for a in i["attr"]],
        }
        for i in body["channel"]["item"]
    ]


def attr(item: dict[str, Any], name: str) -> list[str]:
    return [v for n, v in item["attrs"] if n == name]


def response_numbers(root: Any) -> tuple[int, int]:
    response = root.find("channel/newznab:response", NS)
    return int(response.get("offset")), int(response.get("total"))


# -- caps -----------------------------------------------------------------------------------------


def test_caps_need_no_key_and_carry_limits_searching_and_categories(client: TestClient) -> None:
    for t in ("caps", "c"):
        root = xml(client.get("/api", params={"t": t}))
        assert root.tag == "caps"
        limits = root.find("limits")
        assert limits.get("max") == "100"
        assert limits.get("default") == "100"
        searching = {e.tag: e for e in root.find("searching")}
        assert searching["search"].get("available") == "yes"
        assert searching["search"].get("supportedParams") == "q"
        # Only what a search can match: no release carries an id yet (issue 18).
        assert searching["tv-search"].get("supportedParams") == "q,season,ep"
        assert searching["movie-search"].get("supportedParams") == "q"
        categories = {c.get("id"): [s.get("id") for s in c] for c in root.find("categories")}
        assert "5040" in categories["5000"]
        assert "2040" in categories["2000"]
    body = client.get("/api", params={"t": "caps", "o": "json"}).json()
    assert body["limits"]["@attributes"] == {"max": "100", "default": "100"}
    assert body["searching"]["tv-search"]["@attributes"]["supportedParams"] == "q,season,ep"
    # The whole standard tree, as Prowlarr and Sonarr know it.
    listed = {int(s["@attributes"]["id"]) for c in body["categories"]["category"] for s in c["subcat"]}
    assert {5030, 5040, 5045, 5050, 5060, 5070, 5080, 2030, 2040, 2070, 2080, 8010, 8020} <= listed


# -- search results -------------------------------------------------------------------------------


def test_search_items_carry_what_sonarr_and_prowlarr_read(
    filled: Services, client: TestClient, api_key: str
) -> None:
    root = xml(client.get("/api", params={"t": "search", "apikey": api_key, "extended": "1"}))
    assert root.tag == "rss"
    assert root.get("version") == "2.0"
    offset, total = response_numbers(root)
    found = items(root)
    assert offset == 0
    assert total == len(found) > 20
    for item in found:
        assert item["title"]
        parsedate_to_datetime(item["pubDate"])  # RFC 822
        assert item["enclosure"]["type"] == "application/x-nzb"
        assert int(item["enclosure"]["length"]) == int(attr(item, "size")[0]) > 0
        assert item["enclosure"]["url"] == item["link"]
        assert "t=get" in item["link"]
        assert api_key in item["link"]
        categories = attr(item, "category")
        assert categories
        assert all(c.isdigit() for c in categories)
        for name in ("files", "poster", "group", "grabs", "usenetdate"):
            assert attr(item, name), name
        assert not attr(item, "password")  # unknown: left out, not claimed "0" (issue 18)
    dates = [parsedate_to_datetime(i["pubDate"]) for i in found]
    assert dates == sorted(dates, reverse=True)  # newest first
    plain = items(xml(client.get("/api", params={"t": "search", "apikey": api_key})))
    assert not attr(plain[0], "poster")  # extended attrs only with extended=1
    assert attr(plain[0], "size")


def test_json_carries_the_same_content_as_xml(filled: Services, client: TestClient, api_key: str) -> None:
    for params in ({"t": "search"}, {"t": "tvsearch", "cat": "5000"}, {"t": "movie", "extended": "1"}):
        base = {**params, "apikey": api_key, "limit": "25"}
        from_xml = xml(client.get("/api", params=base))
        body = client.get("/api", params={**base, "o": "json"}).json()
        assert json_items(body) == items(from_xml)
        response = body["channel"]["response"]["@attributes"]
        assert (int(response["offset"]), int(response["total"])) == response_numbers(from_xml)


def test_paging_with_offset_and_limit_is_stable(filled: Services, client: TestClient, api_key: str) -> None:
    everything = items(xml(client.get("/api", params={"t": "search", "apikey": api_key, "limit": "100"})))
    paged: list[dict[str, Any]] = []
    for offset in range(0, len(everything) + 7, 7):
        root = xml(
            client.get("/api", params={"t": "s", "apikey": api_key, "limit": "7", "offset": str(offset)})
        )
        got_offset, total = response_numbers(root)
        assert (got_offset, total) == (offset, len(everything))
        paged += items(root)
    assert [i["guid"] for i in paged] == [i["guid"] for i in everything]
    again = items(
        xml(client.get("/api", params={"t": "search", "apikey": api_key, "limit": "7", "offset": "7"}))
    )
    assert again == everything[7:14]


def test_categories_filter_with_parents_including_children(
    filled: Services, client: TestClient, api_key: str
) -> None:
    def categories(cat: str) -> set[int]:
        found = items(xml(client.get("/api", params={"t": "search", "apikey": api_key, "cat": cat})))
        return {int(attr(i, "category")[-1]) for i in found}

    tv = categories("5000")
    assert tv
    assert all(5000 <= c <= 5999 for c in tv)
    assert len(tv) > 1  # the parent brought its children
    movies_hd = categories("2040")
    assert movies_hd == {2040}
    assert categories("5000,2040") == tv | movies_hd
    assert categories(" 5000 , ") == tv  # blanks and empty pieces are ignored
    assert categories("9999") == set()


def test_words_find_releases_and_punctuation_is_never_syntax(
    filled: Services, client: TestClient, api_key: str
) -> None:
    everything = items(xml(client.get("/api", params={"t": "search", "apikey": api_key})))
    target = next(i for i in everything if "." in i["title"] and not attr(i, "category")[-1].startswith("8"))
    words = target["title"].split(".")[:3]
    for q in (" ".join(words), ".".join(words), "-".join(words).upper()):
        found = items(xml(client.get("/api", params={"t": "search", "apikey": api_key, "q": q})))
        assert target["guid"] in [i["guid"] for i in found], q
        assert all(all(w.lower() in i["title"].lower() for w in words) for i in found)
    for q in ('" OR 1=1 --', "'; DROP TABLE releases; --", "NEAR(a b)", "a* AND b", "\\", "%_", "é"):
        root = xml(client.get("/api", params={"t": "search", "apikey": api_key, "q": q}))
        assert root.tag == "rss"
    assert len(items(xml(client.get("/api", params={"t": "search", "apikey": api_key})))) == len(everything)


def test_tvsearch_by_season_and_episode(filled: Services, client: TestClient, api_key: str) -> None:
    shows = items(xml(client.get("/api", params={"t": "tvsearch", "apikey": api_key, "extended": "1"})))
    with_episode = [i for i in shows if attr(i, "season") and attr(i, "episode")]
    assert with_episode
    pick = with_episode[0]
    season, episode = attr(pick, "season")[0], attr(pick, "episode")[0]
    for s, e in ((season, episode), (season.lstrip("S"), episode.lstrip("E"))):
        found = items(
            xml(
                client.get(
                    "/api", params={"t": "tv", "apikey": api_key, "season": s, "ep": e, "extended": "1"}
                )
            )
        )
        assert pick["guid"] in [i["guid"] for i in found]
        assert all(attr(i, "season") == [season] and attr(i, "episode") == [episode] for i in found)
    none = items(xml(client.get("/api", params={"t": "tvsearch", "apikey": api_key, "tvdbid": "12345"})))
    assert none == []  # nothing carries a tvdbid yet: Sonarr falls back to words


def test_maxage_and_sizes(filled: Services, client: TestClient, api_key: str) -> None:
    everything = items(xml(client.get("/api", params={"t": "search", "apikey": api_key})))
    # The generated posting is dated November 2023.
    assert items(xml(client.get("/api", params={"t": "search", "apikey": api_key, "maxage": "1"}))) == []
    old = items(xml(client.get("/api", params={"t": "search", "apikey": api_key, "maxage": "100000"})))
    assert len(old) == len(everything)
    sizes = sorted(int(attr(i, "size")[0]) for i in everything)
    middle = sizes[len(sizes) // 2]
    small = items(xml(client.get("/api", params={"t": "search", "apikey": api_key, "maxsize": str(middle)})))
    assert small
    assert all(int(attr(i, "size")[0]) <= middle for i in small)


# -- details and get ------------------------------------------------------------------------------


def test_details_and_get_write_the_release_as_a_valid_nzb(
    filled: Services, client: TestClient, api_key: str
) -> None:
    first = items(xml(client.get("/api", params={"t": "search", "apikey": api_key, "limit": "1"})))[0]
    guid = attr(first, "guid")[0]
    details = items(xml(client.get("/api", params={"t": "d", "apikey": api_key, "id": guid})))
    assert [i["guid"] for i in details] == [first["guid"]]
    assert attr(details[0], "poster")  # details are always extended
    response = client.get(first["link"].replace("http://testserver", ""))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-nzb")
    assert ".nzb" in response.headers["content-disposition"]
    dtd = etree.DTD(str(DTD))
    nzb = etree.fromstring(response.content, etree.XMLParser(load_dtd=False))
    assert dtd.validate(nzb), dtd.error_log
    row = filled.search.segments_row(guid)
    assert row is not None
    expected = sorted(s.message_id for f in unpack_segments(bytes(row["segments"])) for s in f.segments())
    written = sorted(s.text for s in nzb.iterfind(".//nzb:segment", NZB_NS))
    assert written == expected
    groups = {g.text for g in nzb.iterfind(".//nzb:group", NZB_NS)}
    assert groups == set(str(row["groups"]).split())
    assert nzb.findtext("nzb:head/nzb:meta[@type='title']", namespaces=NZB_NS) == first["title"]
    # gzip: as a .nzb.gz file on request, and on the wire for clients that accept it
    zipped = client.get("/api", params={"t": "get", "apikey": api_key, "id": guid, "gzip": "1"})
    assert zipped.headers["content-type"] == "application/gzip"
    assert gzip.decompress(zipped.content) == response.content
    wire = client.get(
        "/api", params={"t": "g", "apikey": api_key, "id": guid}, headers={"Accept-Encoding": "gzip"}
    )
    assert wire.headers["content-encoding"] == "gzip"
    assert wire.content == response.content  # the client inflated it
    after = items(xml(client.get("/api", params={"t": "details", "apikey": api_key, "id": guid})))
    assert attr(after[0], "grabs") == ["3"]


def test_missing_and_unknown_items(filled: Services, client: TestClient, api_key: str) -> None:
    for t in ("details", "get"):
        assert error_code(client.get("/api", params={"t": t, "apikey": api_key})) == "200"
        for guid in ("0" * 32, "nope", "../../etc/passwd", "A" * 5000):
            assert error_code(client.get("/api", params={"t": t, "apikey": api_key, "id": guid})) in (
                "300",
                "201",
            )


# -- keys, limits, errors -------------------------------------------------------------------------


def test_keys(services: Services, client: TestClient, api_key: str) -> None:
    assert error_code(client.get("/api", params={"t": "search"})) == "200"
    assert error_code(client.get("/api", params={"t": "search", "apikey": "0" * 32})) == "100"
    assert error_code(client.get("/api", params={"t": "search", "apikey": "not a key"})) == "100"
    assert xml(client.get("/api", params={"t": "search", "apikey": api_key.upper()})).tag == "rss"
    services.users.set_enabled("alice", False)
    assert error_code(client.get("/api", params={"t": "search", "apikey": api_key})) == "101"
    services.users.set_enabled("alice", True)
    assert xml(client.get("/api", params={"t": "search", "apikey": api_key})).tag == "rss"


def test_request_and_download_limits(filled: Services, client: TestClient) -> None:
    _, key = filled.users.add("bob", requests_per_day=3, downloads_per_day=1)
    first = items(xml(client.get("/api", params={"t": "search", "apikey": key, "limit": "1"})))[0]
    guid = attr(first, "guid")[0]
    assert client.get("/api", params={"t": "get", "apikey": key, "id": guid}).status_code == 200
    refused = xml(client.get("/api", params={"t": "get", "apikey": key, "id": guid}))
    assert (refused.get("code"), refused.get("description")) == ("501", "Download limit reached")
    limited = xml(client.get("/api", params={"t": "search", "apikey": key}))
    assert (limited.get("code"), limited.get("description")) == ("500", "Request limit reached")
    # Past the request limit, a download is refused too (issue 15: t=get was still served).
    past = xml(client.get("/api", params={"t": "get", "apikey": key, "id": guid}))
    assert (past.get("code"), past.get("description")) == ("500", "Request limit reached")
    bob = next(u for u in filled.users.all() if u.name == "bob")
    assert (bob.requests_today, bob.downloads_today) == (5, 1)
    assert filled.search.get(guid).grabs == 1  # type: ignore[union-attr]  # a refused download is no grab


def test_control_characters_and_many_parents_are_refused_or_bounded(
    filled: Services, client: TestClient
) -> None:
    """Issue 15.7: group=%00 was error 900 on PostgreSQL with a traceback logged each time; cat= naming
    64 parents stood for 64,000 category ids."""
    from usenet_indexer.catalog.search import category_ids

    _, key = filled.users.add("carol")
    nul = xml(client.get("/api", params={"t": "search", "apikey": key, "group": "\x00"}))
    assert nul.get("code") == "201"
    assert "control character" in (nul.get("description") or "")
    parents = ",".join(str(1000 * n) for n in range(1, 65))
    assert xml(client.get("/api", params={"t": "search", "apikey": key, "cat": parents})).tag == "rss"
    assert len(category_ids([1000 * n for n in range(1, 65)])) < 200


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({}, "200"),
        ({"t": ""}, "200"),
        ({"t": "register"}, "202"),
        ({"t": "search\x00"}, "202"),
        ({"t": "search", "limit": "-1"}, "201"),
        ({"t": "search", "limit": "ten"}, "201"),
        ({"t": "search", "limit": "1e3"}, "201"),
        ({"t": "search", "limit": "9" * 40}, "201"),
        ({"t": "search", "offset": "-5"}, "201"),
        ({"t": "search", "offset": "99999999"}, "201"),
        ({"t": "search", "cat": "tv"}, "201"),
        ({"t": "search", "cat": "5000,x"}, "201"),
        ({"t": "search", "cat": "-5000"}, "201"),
        ({"t": "search", "cat": ",".join(["5000"] * 100)}, "201"),
        ({"t": "search", "maxage": "old"}, "201"),
        ({"t": "tvsearch", "season": "one"}, "201"),
        ({"t": "tvsearch", "ep": "x/y"}, "201"),
        ({"t": "movie", "imdbid": "tt12ab"}, "201"),
        ({"t": "search", "o": "yaml"}, "201"),
        ({"t": "search", "q": "x" * 5000}, "201"),
    ],
)
def test_bad_parameters_get_the_spec_codes(
    services: Services, client: TestClient, api_key: str, params: dict[str, str], code: str
) -> None:
    assert error_code(client.get("/api", params={"apikey": api_key, **params})) == code


def test_huge_limit_is_clamped_to_the_max(filled: Services, client: TestClient, api_key: str) -> None:
    root = xml(client.get("/api", params={"t": "search", "apikey": api_key, "limit": "100000"}))
    assert len(items(root)) <= 100
    body = client.get("/api", params={"t": "search", "apikey": api_key, "o": "json", "limit": "-1"}).json()
    assert body["error"]["@attributes"]["code"] == "201"


KEYS = st.sampled_from(
    [
        "t",
        "apikey",
        "q",
        "cat",
        "limit",
        "offset",
        "maxage",
        "extended",
        "o",
        "id",
        "season",
        "ep",
        "tvdbid",
        "imdbid",
        "minsize",
        "maxsize",
        "group",
        "gzip",
        "del",
        "T",
        "LIMIT",
    ]
)
VALUES = st.one_of(
    st.text(max_size=40),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.sampled_from(
        [
            "search",
            "s",
            "tv",
            "movie",
            "m",
            "d",
            "g",
            "caps",
            "get",
            "details",
            "json",
            "xml",
            "5000",
            "5000,2000",
            "tt0111161",
            "S01",
            "E02",
            "05/12",
            "1",
            "0",
            "-1",
        ]
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(params=st.dictionaries(KEYS, VALUES, max_size=7), with_key=st.booleans())
def test_any_parameters_give_a_document_never_a_500(
    filled: Services, client: TestClient, api_key: str, params: dict[str, str], with_key: bool
) -> None:
    if with_key:
        params = {**params, "apikey": api_key}
    response = client.get("/api", params=params)
    assert response.status_code == 200
    if response.headers["content-type"].startswith("application/json"):
        json.loads(response.content)
    elif response.headers["content-type"].startswith(("application/x-nzb", "application/gzip")):
        assert response.content
    else:
        root = etree.fromstring(response.content)
        assert root.tag in ("rss", "caps", "error")
        if root.tag == "error":
            assert root.get("code") in {"100", "101", "200", "201", "202", "300", "500", "501"}


def test_ids_are_advertised_once_releases_carry_them_and_unknown_ids_match_nothing(
    filled: Services, client: TestClient, api_key: str
) -> None:
    from tests.support.store import query

    everything = items(xml(client.get("/api", params={"t": "tvsearch", "apikey": api_key})))
    assert everything
    for name in ("tvdbid", "tmdbid", "rid", "tvmazeid"):  # no release carries one: no results, not all
        found = items(xml(client.get("/api", params={"t": "tvsearch", "apikey": api_key, name: "121361"})))
        assert found == [], name
    query(
        filled.db,
        "UPDATE releases SET tvdbid = 121361 "
        "WHERE id = (SELECT MIN(id) FROM releases WHERE category >= 5000 AND category < 6000)",
    )
    filled.search._id_kinds = None  # the minute it keeps the answer for
    caps = xml(client.get("/api", params={"t": "caps"}))
    tv = next(e for e in caps.find("searching") if e.tag == "tv-search")
    assert tv.get("supportedParams") == "q,season,ep,tvdbid"
    found = items(xml(client.get("/api", params={"t": "tvsearch", "apikey": api_key, "tvdbid": "121361"})))
    assert len(found) == 1


def test_a_tv_search_without_categories_searches_tv_only(
    filled: Services, client: TestClient, api_key: str
) -> None:
    for function, low in (("tvsearch", 5000), ("movie", 2000)):
        found = items(xml(client.get("/api", params={"t": function, "apikey": api_key, "limit": "100"})))
        assert found, function
        for item in found:
            category = int(next(v for k, v in item["attrs"] if k == "category" and int(v) % 1000))
            assert low <= category < low + 1000, (function, category)


@pytest.mark.parametrize(
    "name",
    ["Фильм.2024.1080p.WEB.h264-GRP", 'Quote"d;Name (2024) [x]', "Café.Résumé.2024.720p.HDTV.x264-GRP"],
)
def test_any_name_downloads_with_rfc_6266_headers(
    services: Services, client: TestClient, api_key: str, name: str
) -> None:
    """Issue 18: a name in Cyrillic, or with " or ;, broke t=get."""
    from email.message import Message
    from urllib.parse import unquote

    from tests.support.catalog import fill_catalog
    from tests.support.store import query

    fill_catalog(services, "alt.binaries.names", releases=3)
    guid = query(services.db, "SELECT key FROM releases ORDER BY id LIMIT 1")[0]["key"]
    query(services.db, "UPDATE releases SET name = :n WHERE key = :k", {"n": name, "k": guid})
    response = client.get("/api", params={"t": "get", "apikey": api_key, "id": guid})
    assert response.status_code == 200, response.text
    disposition = response.headers["content-disposition"]
    assert disposition.isascii()
    # What SABnzbd does with the header (email.message: filename* decoded, RFC 2231/5987) ...
    parsed = Message()
    parsed["Content-Disposition"] = disposition
    plain = parsed.get_filename()
    assert plain is not None and plain.isascii() and plain.endswith(".nzb")
    star = disposition.split("filename*=UTF-8''", 1)[1]
    assert unquote(star) == name.replace('"', "_") + ".nzb"
    job = response.headers["x-dnzb-name"]
    assert job.isascii() and job == plain.removesuffix(".nzb")
    if name.startswith("Café"):
        assert job == "Cafe.Resume.2024.720p.HDTV.x264-GRP"  # accents dropped, not the letters
    assert response.headers["x-dnzb-category"]
    assert response.headers["x-dnzb-details"].endswith(f"releases/{guid}")


def test_a_user_with_limits_sees_them_in_every_feed(filled: Services, client: TestClient) -> None:
    """NZBHydra2 reads newznab:apilimits (apiCurrent, apiMax, grabCurrent, grabMax)."""
    _, limited = filled.users.add("dave", requests_per_day=50, downloads_per_day=5)
    root = xml(client.get("/api", params={"t": "search", "apikey": limited}))
    limits = root.find("channel/newznab:apilimits", NS)
    assert limits is not None
    assert dict(limits.attrib) == {"apiCurrent": "1", "apiMax": "50", "grabCurrent": "0", "grabMax": "5"}
    body = client.get("/api", params={"t": "search", "apikey": limited, "o": "json"}).json()
    assert body["channel"]["apilimits"]["@attributes"]["apiCurrent"] == "2"
    _, free = filled.users.add("erin")
    assert (
        xml(client.get("/api", params={"t": "search", "apikey": free})).find("channel/newznab:apilimits", NS)
        is None
    )


def test_a_feed_lists_a_release_again_when_it_completes(
    services: Services, client: TestClient, api_key: str
) -> None:
    """Issue 18: Sonarr syncs a feed down to the last item it saw; a big release that completed after
    smaller ones were listed sorted by its posting date below them, and was never seen."""
    from tests.support.generated import posting
    from usenet_indexer.catalog.batch_store import store_batch
    from usenet_indexer.indexing import RangeIndexer
    from usenet_indexer.indexing.rules import default_rules
    from usenet_indexer.indexing.sample import chunk_text, overview_line

    group = "alt.binaries.feed"
    generated = posting(group, releases=12, seed=4)
    group_id = services.groups.add(group)
    lines = [overview_line(a) for a in generated.articles]
    half = len(lines) // 2
    indexer = RangeIndexer(group, generated.first, generated.last, generated.first, default_rules())
    indexer.add_text(chunk_text(lines[:half]), generated.articles[half].number)
    with services.db.transaction() as tx:
        store_batch(tx, group_id, group, indexer.take())
    from tests.support.store import query

    incomplete = {r["key"] for r in query(services.db, "SELECT key FROM releases WHERE NOT complete")}
    assert incomplete, "the first half must leave releases open"
    services.db.move_clock(3600.0)  # an hour later, the rest is posted and indexed
    indexer.add_text(chunk_text(lines[half:]), generated.last + 1)
    indexer.finish()
    with services.db.transaction() as tx:
        store_batch(tx, group_id, group, indexer.take())
    completed = {r["key"] for r in query(services.db, "SELECT key FROM releases WHERE complete")} & incomplete
    assert completed
    feed = items(xml(client.get("/api", params={"t": "search", "apikey": api_key, "limit": "100"})))
    keys = [attr(i, "guid")[0] for i in feed]
    dates = [parsedate_to_datetime(i["pubDate"]) for i in feed]
    assert dates == sorted(dates, reverse=True)
    first_old = min(keys.index(k) for k in keys if k not in incomplete)
    assert all(keys.index(k) < first_old for k in completed), "completed late, listed on top"


def test_multi_episode_and_daily_season_searches(
    services: Services, client: TestClient, api_key: str
) -> None:
    from tests.support.store import query

    fill_catalog_named = [
        ("Harbor.Watch.S01E01E02.1080p.WEB.h264-GRP", 1, 1, 2),
        ("Harbor.Watch.2024.05.12.720p.HDTV.x264-GRP", 2024, None, None),
    ]
    from tests.support.catalog import fill_catalog

    fill_catalog(services, "alt.binaries.episodes", releases=2)
    rows = query(services.db, "SELECT key FROM releases ORDER BY id")
    from usenet_indexer.indexing.categories import categorize

    for row, (name, season, episode, last) in zip(rows, fill_catalog_named, strict=True):
        c = categorize(name)
        assert (c.season, c.episode, c.episode_last) == (season, episode, last)
        query(
            services.db,
            "UPDATE releases SET name = :n, category = :c, season = :s, episode = :e, episode_last = :l "
            "WHERE key = :k",
            {"n": name, "c": c.id, "s": c.season, "e": c.episode, "l": c.episode_last, "k": row["key"]},
        )

    def found(**params: str) -> list[str]:
        root = xml(client.get("/api", params={"t": "tvsearch", "apikey": api_key, **params}))
        return [i["title"] for i in items(root)]

    assert found(season="1", ep="2") == ["Harbor.Watch.S01E01E02.1080p.WEB.h264-GRP"]
    assert found(season="1", ep="1") == ["Harbor.Watch.S01E01E02.1080p.WEB.h264-GRP"]
    assert found(season="1", ep="3") == []
    assert found(season="2024") == ["Harbor.Watch.2024.05.12.720p.HDTV.x264-GRP"]


NAMES_IN_SCRIPTS = [
    "Фильм.Москва.2024.1080p.WEB.h264-GRP",  # Cyrillic
    "Ταινία.Αθήνα.2023.720p.BluRay.x264-GRP",  # Greek
    "映画.東京物語.1953.1080p.BluRay.x264-GRP",  # CJK
    "فيلم.القاهرة.2022.1080p.WEB-DL-GRP",  # Arabic, right to left
    "סרט.ירושלים.2021.720p.HDTV.x264-GRP",  # Hebrew
    "Ταινία & 映画 <mixed> \"quoted\"; 'single' 2024 🎬",  # markup characters, an emoji
]


def test_names_in_any_script_survive_t_get_into_an_independent_parser(
    services: Services, client: TestClient, api_key: str
) -> None:
    """Issue 18: NZBs of names in several scripts, fetched through t=get as SABnzbd and NZBGet fetch
    them and read back with `nzb` (an NZB parser written apart from ours): the title, each file and
    each segment as the catalog holds them."""
    from nzb import Nzb

    from tests.support.catalog import fill_catalog
    from tests.support.store import query
    from usenet_indexer.indexing import unpack_segments

    fill_catalog(services, "alt.binaries.scripts", releases=2 * len(NAMES_IN_SCRIPTS))
    keys = [r["key"] for r in query(services.db, "SELECT key FROM releases ORDER BY id")]
    assert len(keys) >= len(NAMES_IN_SCRIPTS)
    for name, guid in zip(NAMES_IN_SCRIPTS, keys, strict=False):
        query(services.db, "UPDATE releases SET name = :n WHERE key = :k", {"n": name, "k": guid})
        response = client.get("/api", params={"t": "get", "apikey": api_key, "id": guid})
        assert response.status_code == 200, response.text
        parsed = Nzb.from_str(response.content.decode("utf-8"))
        assert parsed.meta.title == name
        row = services.search.segments_row(guid)
        assert row is not None
        stored = unpack_segments(bytes(row["segments"]))
        assert len(parsed.files) == len(stored)
        assert parsed.size == sum(f.size for f in stored)
        want = {(s.part, s.size, s.message_id) for f in stored for s in f.segments()}
        got = {(s.number, s.size, s.message_id) for f in parsed.files for s in f.segments}
        assert got == want
        # Every group the release was posted to (the sample cross-posts some to alt.binaries.misc)
        assert set(parsed.groups) == set(str(row["groups"]).split()) >= {"alt.binaries.scripts"}

"""The newznab API at ``/api``: what Sonarr, Radarr, Prowlarr, NZBHydra2 and downloaders speak.

Functions (``t``, with the short aliases): ``caps`` (``c``), ``search`` (``s``), ``tvsearch`` (``tv``),
``movie`` (``m``), ``details`` (``d``), ``get`` (``g``). Results are RSS 2.0 with the newznab
namespace (``newznab:response`` offset and total, ``newznab:attr`` per item), or with ``o=json`` the
same content in the JSON shape newznab-lineage indexers (nZEDb, NNTmux) write: XML attributes under
``@attributes``.

Errors follow the spec: HTTP 200 with ``<error code="…" description="…"/>`` (100 bad key, 101 account
suspended, 200 missing parameter, 201 bad parameter, 202 no such function, 300 no such item, 500
request limit reached, 501 download limit reached, 900 unknown error). Parameters are read by hand,
never by FastAPI's validation: no input gives a 422 or a 500. Clients keep a key that no longer
works, so every answer an API client can get is one it parses.

Parameters beyond the spec's: ``minsize``/``maxsize`` (bytes) and ``group``, as nZEDb reads them;
``gzip=1`` on ``get`` for a gzip'd NZB file (clients that send ``Accept-Encoding: gzip`` get the NZB
compressed on the wire anyway).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from usenet_indexer.catalog.search import MAX_LIMIT, ReleaseHit, SearchPage, SearchQuery
from usenet_indexer.coordinator.http.state import Svc
from usenet_indexer.coordinator.registries.users import ApiUser, BadKey, LimitReached, Usage
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.indexing.categories import MOVIES, NAMES, TV
from usenet_indexer.indexing.merge import SegmentBlobError
from usenet_indexer.logs import get_logger

__all__ = ["DEFAULT_LIMIT", "MAX_OFFSET", "NewznabError", "router"]

log = get_logger(__name__)

DEFAULT_LIMIT = 100
MAX_OFFSET = 10_000  # deeper pages are a crawl, not a search: 201 (the catalog caps its count there too)
MAX_CATEGORIES = 64
MAX_PARAM_LENGTH = 1024
MAX_INT = 2**31 - 1
NEWZNAB_NS = "http://www.newznab.com/DTD/2010/feeds/attributes/"
XML_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'

FUNCTIONS = {
    "caps": "caps",
    "c": "caps",
    "search": "search",
    "s": "search",
    "tvsearch": "tvsearch",
    "tv": "tvsearch",
    "movie": "movie",
    "m": "movie",
    "details": "details",
    "d": "details",
    "get": "get",
    "g": "get",
}

DESCRIPTIONS = {
    100: "Incorrect user credentials",
    101: "Account suspended",
    200: "Missing parameter",
    201: "Incorrect parameter",
    202: "No such function",
    300: "No such item",
    500: "Request limit reached",
    501: "Download limit reached",
    900: "Unknown error",
}


class NewznabError(Exception):
    def __init__(self, code: int, detail: str | None = None) -> None:
        self.code = code
        base = DESCRIPTIONS[code]
        # 500 and 501 are matched on their exact text by some clients: no detail appended.
        self.description = f"{base} ({detail})" if detail and code not in (500, 501) else base
        super().__init__(self.description)


# -- output ---------------------------------------------------------------------------------------

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_escape(value: object) -> str:
    text = _NOT_XML.sub("\ufffd", str(value))
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("\t", "&#9;")
        .replace("\n", "&#10;")
        .replace("\r", "&#13;")
    )


def _element(tag: str, attrs: Mapping[str, object], text: str | None = None) -> str:
    attributes = "".join(f' {k}="{xml_escape(v)}"' for k, v in attrs.items())
    if text is None:
        return f"<{tag}{attributes}/>"
    return f"<{tag}{attributes}>{xml_escape(text)}</{tag}>"


def error_response(error: NewznabError, as_json: bool) -> Response:
    if as_json:
        body = {"error": {"@attributes": {"code": str(error.code), "description": error.description}}}
        return Response(json.dumps(body), media_type="application/json")
    xml = XML_HEAD + _element("error", {"code": error.code, "description": error.description}) + "\n"
    return Response(xml, media_type="application/xml; charset=utf-8")


@dataclass
class Item:
    title: str
    guid: str
    link: str
    comments: str
    pub_date: str
    category: str
    description: str
    enclosure: dict[str, str]
    attrs: list[tuple[str, str]] = field(default_factory=list)

    def xml(self) -> str:
        parts = [
            "<item>",
            _element("title", {}, self.title),
            _element("guid", {"isPermaLink": "true"}, self.guid),
            _element("link", {}, self.link),
            _element("comments", {}, self.comments),
            _element("pubDate", {}, self.pub_date),
            _element("category", {}, self.category),
            _element("description", {}, self.description),
            _element("enclosure", self.enclosure),
            *(_element("newznab:attr", {"name": n, "value": v}) for n, v in self.attrs),
            "</item>",
        ]
        return "\n".join(parts)

    def json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "guid": self.guid,
            "link": self.link,
            "comments": self.comments,
            "pubDate": self.pub_date,
            "category": self.category,
            "description": self.description,
            "enclosure": {"@attributes": self.enclosure},
            "attr": [{"@attributes": {"name": n, "value": v}} for n, v in self.attrs],
        }


def apilimits(usage: Usage | None) -> dict[str, str] | None:
    """``newznab:apilimits`` for a user with limits (NZBHydra2 reads apiCurrent, apiMax, grabCurrent,
    grabMax); None for one without."""
    if usage is None or not usage.limited:
        return None
    limits = {"apiCurrent": str(usage.requests), "grabCurrent": str(usage.downloads)}
    if usage.requests_max is not None:
        limits["apiMax"] = str(usage.requests_max)
    if usage.downloads_max is not None:
        limits["grabMax"] = str(usage.downloads_max)
    return limits


def feed_response(
    base: str, page: SearchPage, items: list[Item], as_json: bool, usage: Usage | None = None
) -> Response:
    title = "usenet-indexer"
    limits = apilimits(usage)
    if as_json:
        body = {
            "@attributes": {"version": "2.0"},
            "channel": {
                "title": title,
                "description": "usenet-indexer API results",
                "link": base,
                "language": "en-gb",
                "response": {"@attributes": {"offset": str(page.offset), "total": str(page.total)}},
                **({} if limits is None else {"apilimits": {"@attributes": limits}}),
                "item": [item.json() for item in items],
            },
        }
        return Response(json.dumps(body), media_type="application/json")
    out = [
        XML_HEAD,
        f'<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom" xmlns:newznab="{NEWZNAB_NS}">\n',
        "<channel>\n",
        _element("atom:link", {"href": f"{base}api", "rel": "self", "type": "application/rss+xml"}),
        "\n",
        _element("title", {}, title),
        "\n",
        _element("description", {}, "usenet-indexer API results"),
        "\n",
        _element("link", {}, base),
        "\n",
        _element("language", {}, "en-gb"),
        "\n",
        _element("newznab:response", {"offset": page.offset, "total": page.total}),
        "\n",
    ]
    if limits is not None:
        out += [_element("newznab:apilimits", limits), "\n"]
    for item in items:
        out.append(item.xml())
        out.append("\n")
    out.append("</channel>\n</rss>\n")
    return Response("".join(out), media_type="application/rss+xml; charset=utf-8")


def rfc822(seconds: float) -> str:
    return format_datetime(datetime.fromtimestamp(seconds, UTC))


def category_label(category: int) -> str:
    return NAMES.get(category, str(category)).replace("/", " > ")


def release_item(base: str, hit: ReleaseHit, api_key: str, extended: bool) -> Item:
    get_url = f"{base}api?{urlencode({'t': 'get', 'id': hit.guid, 'apikey': api_key})}"
    details = f"{base}releases/{hit.guid}"
    # pubDate: when the release was listed here, or listed again on becoming complete (newznab's
    # "adddate"; feeds without words are ordered by it); usenetdate: when it was posted.
    date = rfc822(hit.listed_at)
    attrs: list[tuple[str, str]] = []
    parent = hit.category // 1000 * 1000
    if parent != hit.category:
        attrs.append(("category", str(parent)))
    attrs.append(("category", str(hit.category)))
    attrs.append(("size", str(hit.size)))
    attrs.append(("guid", hit.guid))
    if extended:
        attrs += [
            ("files", str(hit.files)),
            ("poster", hit.poster),
            # Every group of a cross-post (one release, issue 16), comma-separated
            ("group", ",".join(hit.groups) if hit.groups else hit.group),
            ("grabs", str(hit.grabs)),
            ("usenetdate", rfc822(hit.first_date if hit.first_date is not None else hit.posted_at)),
            *([("password", "1" if hit.password else "0")] if hit.password is not None else []),
            ("completion", str(round(hit.completion))),
        ]
        if hit.season is not None:
            attrs.append(("season", f"S{hit.season:02d}"))
        if hit.episode is not None:
            attrs.append(("episode", f"E{hit.episode:02d}"))
        if hit.imdb:
            attrs.append(("imdb", hit.imdb))
        if hit.tvdbid is not None:
            attrs.append(("tvdbid", str(hit.tvdbid)))
        if hit.year is not None:
            attrs.append(("year", str(hit.year)))
        if hit.resolution:
            attrs.append(("resolution", hit.resolution))
    return Item(
        title=hit.name,
        guid=details,
        link=get_url,
        comments=f"{details}#comments",
        pub_date=date,
        category=category_label(hit.category),
        description=hit.name,
        enclosure={"url": get_url, "length": str(hit.size), "type": "application/x-nzb"},
        attrs=attrs,
    )


# -- caps -----------------------------------------------------------------------------------------


def caps_response(base: str, as_json: bool, ids: frozenset[str] = frozenset()) -> Response:
    """``ids``: the id parameters a search can match (``tvdbid``, ``imdbid``): only those the catalog
    holds any of are advertised (issue 18: advertised, they could never match, and Sonarr searched by
    them instead of by name)."""
    parents = sorted(c for c in NAMES if c % 1000 == 0)
    categories: list[dict[str, Any]] = [
        {
            "id": p,
            "name": NAMES[p],
            "subcats": [
                {"id": c, "name": NAMES[c].split("/", 1)[1]}
                for c in sorted(NAMES)
                if c // 1000 * 1000 == p != c
            ],
        }
        for p in parents
    ]
    searching = [
        ("search", "q"),
        ("tv-search", ",".join(["q", "season", "ep", *sorted(ids & {"tvdbid", "imdbid"})])),
        ("movie-search", ",".join(["q", *sorted(ids & {"imdbid"})])),
        ("audio-search", ""),
        ("book-search", ""),
    ]
    server = {
        "version": "1.0",
        "title": "usenet-indexer",
        "strapline": "A distributed Usenet binary indexer",
        "url": base,
    }
    limits = {"max": str(MAX_LIMIT), "default": str(DEFAULT_LIMIT)}
    if as_json:
        body = {
            "server": {"@attributes": server},
            "limits": {"@attributes": limits},
            "registration": {"@attributes": {"available": "no", "open": "no"}},
            "searching": {
                name: {"@attributes": {"available": "yes" if params else "no", "supportedParams": params}}
                for name, params in searching
            },
            "categories": {
                "category": [
                    {
                        "@attributes": {"id": str(c["id"]), "name": c["name"]},
                        "subcat": [
                            {"@attributes": {"id": str(s["id"]), "name": s["name"]}} for s in c["subcats"]
                        ],
                    }
                    for c in categories
                ]
            },
        }
        return Response(json.dumps(body), media_type="application/json")
    out = [XML_HEAD, "<caps>\n", _element("server", server), "\n", _element("limits", limits), "\n"]
    out += [_element("registration", {"available": "no", "open": "no"}), "\n<searching>\n"]
    for name, params in searching:
        out += [_element(name, {"available": "yes" if params else "no", "supportedParams": params}), "\n"]
    out.append("</searching>\n<categories>\n")
    for c in categories:
        out.append(f'<category id="{c["id"]}" name="{xml_escape(c["name"])}">\n')
        for s in c["subcats"]:
            out += [_element("subcat", {"id": s["id"], "name": s["name"]}), "\n"]
        out.append("</category>\n")
    out.append("</categories>\n</caps>\n")
    return Response("".join(out), media_type="application/xml; charset=utf-8")


# -- parameters -----------------------------------------------------------------------------------


class Params:
    """The request's parameters, first value of each, names in lower case."""

    def __init__(self, items: list[tuple[str, str]]) -> None:
        self.values: dict[str, str] = {}
        for key, value in items:
            self.values.setdefault(key.lower(), value)

    def text(self, name: str) -> str | None:
        value = self.values.get(name)
        if value is None or not value.strip():
            return None
        if len(value) > MAX_PARAM_LENGTH:
            raise NewznabError(201, name)
        if not value.isprintable():
            # A NUL reached PostgreSQL (which refuses it in text) as error 900, a traceback logged on
            # every request (issue 15); no parameter of the API holds control characters.
            raise NewznabError(201, f"{name} holds a control character")
        return value.strip()

    def integer(self, name: str, *, low: int = 0, high: int = MAX_INT, prefix: str = "") -> int | None:
        """A whole number in low..high (after an optional letter prefix, e.g. ``S01``); 201 otherwise."""
        value = self.text(name)
        if value is None:
            return None
        if prefix and value[:1].lower() == prefix:
            value = value[1:]
        if not value.isascii() or not value.isdigit() or len(value) > 12:
            if value.startswith("-") and value[1:].isdigit():
                raise NewznabError(201, f"{name} is negative")
            raise NewznabError(201, name)
        number = int(value)
        if not low <= number <= high:
            raise NewznabError(201, f"{name} outside {low}..{high}")
        return number

    def flag(self, name: str) -> bool:
        return (self.text(name) or "0").lower() in ("1", "true", "yes")


def parse_categories(value: str | None) -> tuple[int, ...]:
    if value is None:
        return ()
    found: list[int] = []
    for piece in value.split(","):
        piece = piece.strip()
        if not piece:
            continue
        if not piece.isascii() or not piece.isdigit() or len(piece) > 6:
            raise NewznabError(201, "cat")
        found.append(int(piece))
    if len(found) > MAX_CATEGORIES:
        raise NewznabError(201, f"cat names more than {MAX_CATEGORIES} categories")
    return tuple(found)


def parse_imdb(value: str | None) -> str | None:
    if value is None:
        return None
    digits = value[2:] if value.lower().startswith("tt") else value
    if not digits.isascii() or not digits.isdigit() or len(digits) > 10:
        raise NewznabError(201, "imdbid")
    # Stored as newznab writes the attr: seven digits at least, no "tt".
    return f"{int(digits):07d}"


# What a function searches when the request names no category.
DEFAULT_CATEGORIES = {"tvsearch": (TV,), "movie": (MOVIES,)}
# Ids no release here carries: a search by one matches nothing (it is not widened to every release).
UNSUPPORTED_IDS = ("tmdbid", "rid", "tvmazeid", "traktid", "doubanid")


def unanswerable(function: str, params: Params, ids: frozenset[str]) -> bool:
    """Whether the request names an id no release can match (none carries it): the answer is no
    results, not a search that leaves the id out."""
    if function not in ("tvsearch", "movie"):
        return False
    named = [name for name in (*UNSUPPORTED_IDS, "tvdbid", "imdbid") if params.text(name) is not None]
    return any(name not in ids for name in named)


def search_query(function: str, params: Params) -> SearchQuery:
    limit = params.integer("limit", high=10**9)
    offset = params.integer("offset", high=10**9)
    if offset is not None and offset > MAX_OFFSET:
        raise NewznabError(201, f"offset over {MAX_OFFSET}")
    max_age = params.integer("maxage", high=100_000)
    words = params.text("q")
    season: int | None = None
    episode: int | None = None
    tvdbid: int | None = None
    imdb: str | None = None
    if function == "tvsearch":
        season = params.integer("season", prefix="s", high=100_000)
        ep = params.text("ep")
        if ep is not None and "/" in ep:
            # A daily show: Sonarr sends season=2024&ep=05/12; the name holds "2024 05 12".
            month_day = ep.split("/")
            if len(month_day) != 2 or not all(p.isascii() and p.isdigit() and len(p) <= 2 for p in month_day):
                raise NewznabError(201, "ep")
            date = " ".join([str(season or ""), *(f"{int(p):02d}" for p in month_day)]).strip()
            words = f"{words or ''} {date}".strip()
            season = None
        else:
            episode = params.integer("ep", prefix="e", high=100_000)
        tvdbid = params.integer("tvdbid", high=10**12)
        imdb = parse_imdb(params.text("imdbid"))
    elif function == "movie":
        imdb = parse_imdb(params.text("imdbid"))
    categories = parse_categories(params.text("cat"))
    if not categories and function in DEFAULT_CATEGORIES:
        categories = DEFAULT_CATEGORIES[function]  # the spec's meaning: a TV search searches TV
    return SearchQuery(
        text=words,
        categories=categories,
        max_age_days=max_age,
        min_size=params.integer("minsize", high=2**62),
        max_size=params.integer("maxsize", high=2**62),
        group=params.text("group"),
        season=season,
        episode=episode,
        imdb=imdb,
        tvdbid=tvdbid,
        limit=DEFAULT_LIMIT if limit is None else min(limit, MAX_LIMIT),
        offset=offset or 0,
    )


# -- the route ------------------------------------------------------------------------------------


def base_url(services: Services, request: Request) -> str:
    configured = services.settings.public_url.strip()
    if configured:
        return configured.rstrip("/") + "/"
    return str(request.base_url)


class Api:
    def __init__(self, services: Services) -> None:
        self.services = services

    def user(self, params: Params) -> tuple[ApiUser, str]:
        key = params.text("apikey")
        if key is None:
            raise NewznabError(200, "apikey")
        try:
            user = self.services.users.authenticate(key.lower())
        except BadKey as error:
            raise NewznabError(101 if "disabled" in str(error) else 100) from None
        return user, key.lower()

    def handle(self, function: str, params: Params, base: str, accept_gzip: bool) -> Response:
        as_json = False
        output = (params.text("o") or "xml").lower()
        if output not in ("xml", "json"):
            raise NewznabError(201, "o")
        as_json = output == "json"
        if function == "caps":
            return caps_response(base, as_json, self.services.search.id_kinds())
        user, key = self.user(params)
        extended = params.flag("extended")
        try:
            # Every call counts as a request, a download too: past the limit, t=get was still served.
            usage = self.services.users.count_request(user)
        except LimitReached:
            raise NewznabError(500) from None
        if function == "get":
            return self.get(user, params, accept_gzip, base)
        if function == "details":
            guid = params.text("id") or params.text("guid")
            if guid is None:
                raise NewznabError(200, "id")
            hit = self.services.search.get(guid.lower())
            if hit is None:
                raise NewznabError(300)
            page = SearchPage(total=1, offset=0, hits=[hit])
            return feed_response(base, page, [release_item(base, hit, key, True)], as_json, usage)
        query = search_query(function, params)
        if unanswerable(function, params, self.services.search.id_kinds()):
            page = SearchPage(total=0, offset=query.offset)
        else:
            page = self.services.search.search(query)
        items = [release_item(base, hit, key, extended) for hit in page.hits]
        return feed_response(base, page, items, as_json, usage)

    def get(self, user: ApiUser, params: Params, accept_gzip: bool, base: str) -> Response:
        guid = params.text("id")
        if guid is None:
            raise NewznabError(200, "id")
        row = self.services.search.segments_row(guid.lower())
        if row is None:
            raise NewznabError(300)
        # Written first: a release that cannot be written (300) costs the user no download.
        response = nzb_response(row, gzip_file=params.flag("gzip"), accept_gzip=accept_gzip, base=base)
        try:
            self.services.users.count_download(user, int(row["id"]))
        except LimitReached:
            raise NewznabError(501) from None
        return response


def nzb_response(row: Mapping[str, Any], *, gzip_file: bool, accept_gzip: bool, base: str) -> Response:
    """The release's NZB as a download: a ``.nzb.gz`` file with ``gzip_file``, else the NZB, compressed
    on the wire when the client accepts gzip."""
    # At the first download, not at start-up: the NZB writer (wire/nzb.py) is ~4 ms of a core that a
    # coordinator serving only its workers never uses (session 14).
    from usenet_indexer.catalog.nzbs import download_headers, nzb_bytes

    try:
        data = nzb_bytes(dict(row), gzip=gzip_file or accept_gzip)
    except (SegmentBlobError, ValueError) as error:
        log.error("nzb.unwritable", release=row.get("key"), error=str(error))
        raise NewznabError(300, "the release has nothing to download") from None
    category = NAMES.get(int(row["category"]), "Other")
    details = f"{base}releases/{row['key']}"
    headers = download_headers(str(row["name"]), category, details, suffix=".gz" if gzip_file else "")
    if gzip_file:
        return Response(data, media_type="application/gzip", headers=headers)
    if accept_gzip:
        headers["Content-Encoding"] = "gzip"
        headers["Vary"] = "Accept-Encoding"
    return Response(data, media_type="application/x-nzb", headers=headers)


def accepts_gzip(request: Request) -> bool:
    for coding in request.headers.get("accept-encoding", "").split(","):
        name, _, quality = coding.strip().partition(";")
        if name.strip().lower() == "gzip":
            q = quality.strip().removeprefix("q=")
            try:
                return not q or (float(q) > 0 and not math.isnan(float(q)))
            except ValueError:
                return False
    return False


async def endpoint(request: Request, services: Svc) -> Response:
    params = Params(list(request.query_params.multi_items()))
    as_json = (params.values.get("o") or "").strip().lower() == "json"
    try:
        raw = (params.values.get("t") or "").strip()[:MAX_PARAM_LENGTH]
        if not raw:
            raise NewznabError(200, "t")
        function = FUNCTIONS.get(raw.lower())
        if function is None:  # an unknown function, control characters and all: 202
            raise NewznabError(202, raw[:40].encode("unicode_escape").decode("ascii"))
        call: Callable[[], Response] = lambda: Api(services).handle(  # noqa: E731
            function, params, base_url(services, request), accepts_gzip(request)
        )
        return await run_in_threadpool(call)
    except NewznabError as error:
        return error_response(error, as_json)
    except Exception:
        # Never a 500 to an API client: it would retry, or mark the indexer failed, on our bug.
        log.exception("newznab.error")
        return error_response(NewznabError(900), as_json)


router = APIRouter(tags=["newznab"])
# One route per method: FastAPI names an operation after its function, and two methods on one route
# would make a duplicate operation id in /openapi.json.
router.add_api_route("/api", endpoint, methods=["GET"], operation_id="newznab_get")
router.add_api_route("/api", endpoint, methods=["POST"], operation_id="newznab_post")

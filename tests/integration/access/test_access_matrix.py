"""Who may use what: every route of the coordinator against every kind of caller.

Callers: anonymous, a newznab API key, an edge node's token, a user signed in to the web UI, the admin
(logged in). The rules:
- the node API (/api/v1/node/…) takes node tokens only: 401 for anyone else;
- the newznab API (/api) takes API keys only: error 100 for a node token or none;
- admin pages take the admin's session only, not a user's (the login page itself is open);
- operator pages (metrics, status, the API's docs and schema) take a client on the coordinator's own
  machine or the admin's session: 403 for anyone else;
- the catalog (dashboard, release pages, their NZBs) takes a user's or the admin's session, and sends
  anyone else to sign in; with ``public_catalog = true`` it is open (issue 18);
- open pages (health, static files, signing in and out) are open.
Every route the app has must be in one of these classes, so a new route cannot slip through unclassified.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.support.store import services_for
from usenet_indexer.catalog.search import SearchQuery
from usenet_indexer.coordinator.http.app import create_app
from usenet_indexer.coordinator.wiring import Services

ADMIN_PASSWORD = "an admin password for the access tests"
OPEN = re.compile(r"^/(healthz|static/.*|login|logout)$")
CATALOG = re.compile(r"^/(|releases|releases/\{guid\}|releases/\{guid\}/nzb)$")
READER_PASSWORD = "a reader's password for the access tests"
OPERATOR = re.compile(r"^/(metrics|openapi\.json|docs|api/v1/status)$")
ADMIN = re.compile(r"^/admin(/.*)?$")
NODE = re.compile(r"^/api/v1/node/")
NEWZNAB = re.compile(r"^/api$")


def routes(app: FastAPI) -> list[tuple[str, str]]:
    """(method, path) of every route, through included routers."""
    found: list[tuple[str, str]] = []

    def walk(items: list[Any]) -> None:
        for route in items:
            inner = getattr(route, "original_router", None)
            if inner is not None:
                walk(inner.routes)
            elif hasattr(route, "path"):
                for method in sorted(getattr(route, "methods", None) or {"GET"}):
                    if method != "HEAD":
                        found.append((method, route.path))

    walk(list(app.routes))
    return sorted(set(found))


def concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "1", path)


@pytest.fixture
def services(database_url: str, tmp_path: Path) -> Iterator[Services]:
    built = services_for(database_url, tmp_path, admin_password=ADMIN_PASSWORD)
    built.rules.ensure_default()
    built.groups.add("alt.binaries.access")
    built.groups.plan("alt.binaries.access", 1, 999)
    yield built
    built.close()


@pytest.fixture
def app(services: Services) -> FastAPI:
    return create_app(services)


def signed_in(app: FastAPI, path: str, **fields: str) -> TestClient:
    client = TestClient(app)
    page = client.get(path)
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text[page.text.index(f'action="{path}"') :])
    assert csrf is not None
    signed = client.post(path, data={"csrf": csrf.group(1), **fields})
    assert signed.status_code == 200, signed.text
    return client


def admin_client(app: FastAPI) -> TestClient:
    return signed_in(app, "/admin/login", password=ADMIN_PASSWORD)


def reader_client(app: FastAPI, services: Services, name: str = "reader", **limits: int) -> TestClient:
    services.users.add(name, password=READER_PASSWORD, **limits)
    return signed_in(app, "/login", name=name, password=READER_PASSWORD)


def test_every_route_is_classified(app: FastAPI) -> None:
    unclassified = [
        (m, p)
        for m, p in routes(app)
        if not any(c.match(p) for c in (OPEN, CATALOG, OPERATOR, ADMIN, NODE, NEWZNAB))
    ]
    assert unclassified == []
    assert len([r for r in routes(app) if NODE.match(r[1])]) >= 14


def test_the_node_api_takes_node_tokens_only(app: FastAPI, services: Services) -> None:
    node_token = services.nodes.add("edge-access")[1]
    api_key = services.users.add("alice")[1]
    admin = admin_client(app)
    anonymous = TestClient(app)
    for method, path in routes(app):
        if not NODE.match(path):
            continue
        url = concrete(path)
        params: dict[str, str | int] = {"epoch": 1, "lane": "history", "next": 1}
        for client, headers, who in (
            (anonymous, {}, "anonymous"),
            (anonymous, {"Authorization": f"Bearer {api_key}"}, "an API key"),
            (anonymous, {"Authorization": "Bearer uin_forged"}, "a forged token"),
            (admin, {}, "the admin's session"),
        ):
            response = client.request(method, url, params=params, headers=headers)
            assert response.status_code == 401, f"{who} on {method} {path}: {response.status_code}"
        allowed = anonymous.request(
            method, url, params=params, headers={"Authorization": f"Bearer {node_token}"}
        )
        assert allowed.status_code not in (401, 403), f"a node token on {method} {path}: {allowed.text}"
        assert allowed.status_code < 500


def test_the_newznab_api_takes_api_keys_only(app: FastAPI, services: Services) -> None:
    node_token = services.nodes.add("edge-access")[1]
    api_key = services.users.add("alice")[1]
    client = TestClient(app)
    for key in (None, node_token, "0" * 32):
        params = {"t": "search", "q": "x"} | ({} if key is None else {"apikey": key})
        text = client.get("/api", params=params).text
        assert 'code="100"' in text or 'code="200"' in text, text
    assert "<rss" in client.get("/api", params={"t": "search", "q": "x", "apikey": api_key}).text


def test_admin_pages_take_the_admin_session_only(app: FastAPI, services: Services) -> None:
    node_token = services.nodes.add("edge-access")[1]
    api_key = services.users.add("alice")[1]
    anonymous = TestClient(app)
    reader = reader_client(app, services)
    admin = admin_client(app)
    for method, path in routes(app):
        if not ADMIN.match(path) or path == "/admin/login":
            continue
        url = concrete(path)
        for client, headers in (
            (anonymous, {}),
            (anonymous, {"Authorization": f"Bearer {node_token}"}),
            (anonymous, {"Authorization": f"Bearer {api_key}"}),
            (reader, {}),
        ):
            response = client.request(method, url, headers=headers, params={"apikey": api_key})
            # Refused outright, or sent (through any redirects) to the login page.
            refused = response.status_code in (401, 403) or response.url.path == "/admin/login"
            assert refused, f"{method} {path}: {response.status_code} at {response.url.path}"
        if method == "GET":
            assert admin.get(url).status_code < 400, f"the admin on {path}"
        else:
            # A logged-in admin's form without its CSRF token is refused.
            forged = admin.request(method, url, data={"action": "add", "name": "x"}, follow_redirects=False)
            assert forged.status_code in (400, 403), f"{method} {path} without CSRF: {forged.status_code}"


def test_secrets_are_stored_only_as_hashes(app: FastAPI, services: Services) -> None:
    from tests.support.store import query

    node_token = services.nodes.add("edge-access")[1]
    api_key = services.users.add("alice")[1]
    admin_client(app)
    dump = repr(
        [query(services.db, f"SELECT * FROM {table}") for table in ("nodes", "users", "web_sessions")]
    )
    for secret in (node_token, api_key, ADMIN_PASSWORD):
        assert secret not in dump


def test_operator_pages_take_this_machine_or_the_admin(app: FastAPI, services: Services) -> None:
    """Issue 15.6: /metrics, /api/v1/status, /docs and /openapi.json were open to the world."""
    node_token = services.nodes.add("edge-access")[1]
    api_key = services.users.add("alice")[1]
    elsewhere = TestClient(app, client=("203.0.113.7", 40000))
    local = TestClient(app, client=("127.0.0.1", 40000))
    admin = admin_client(app)
    paths = [path for method, path in routes(app) if OPERATOR.match(path)]
    assert sorted(paths) == ["/api/v1/status", "/docs", "/metrics", "/openapi.json"]
    for path in paths:
        for headers in (
            {},
            {"Authorization": f"Bearer {node_token}"},
            {"Authorization": f"Bearer {api_key}"},
        ):
            refused = elsewhere.get(path, headers=headers)
            assert refused.status_code == 403, f"{path}: {refused.status_code}"
        assert local.get(path).status_code == 200, path
        assert admin.get(path).status_code == 200, path


def catalog_urls(services: Services) -> list[str]:
    from tests.support.catalog import fill_catalog

    fill_catalog(services, "alt.binaries.catalog", releases=3)
    hit = services.search.search(SearchQuery(limit=1)).hits[0]
    return ["/", "/releases?q=x", f"/releases/{hit.guid}", f"/releases/{hit.guid}/nzb"]


def test_the_catalog_takes_a_signed_in_user_or_the_admin(app: FastAPI, services: Services) -> None:
    """Issue 18: the release pages and their NZBs were open to anyone who reached the coordinator."""
    urls = catalog_urls(services)
    assert {p for _, p in routes(app) if CATALOG.match(p)} == {
        "/",
        "/releases",
        "/releases/{guid}",
        "/releases/{guid}/nzb",
    }
    node_token = services.nodes.add("edge-access")[1]
    api_key = services.users.add("alice")[1]  # a key for the API, and no password
    anonymous = TestClient(app)
    reader = reader_client(app, services)
    admin = admin_client(app)
    for url in urls:
        for headers, params in (
            ({}, {}),
            ({"Authorization": f"Bearer {node_token}"}, {}),
            ({"Authorization": f"Bearer {api_key}"}, {"apikey": api_key}),
            ({"Cookie": "uix_session=forged"}, {}),
        ):
            response = anonymous.get(url, headers=headers, params=params, follow_redirects=False)
            assert response.status_code == 303, f"{url} with {headers or params}: {response.status_code}"
            assert response.headers["location"].startswith("/login?next=%2F")
        for who in (reader, admin):
            response = who.get(url, follow_redirects=False)
            assert response.status_code == 200, f"{url}: {response.status_code}"
    assert b"<segment " in reader.get(urls[-1]).content


def test_public_catalog_opens_it_on_purpose(database_url: str, tmp_path: Path) -> None:
    services = services_for(database_url, tmp_path, admin_password=ADMIN_PASSWORD, public_catalog=True)
    try:
        app = create_app(services)
        urls = catalog_urls(services)
        anonymous = TestClient(app)
        for url in urls:
            assert anonymous.get(url, follow_redirects=False).status_code == 200, url
        hit = services.search.search(SearchQuery(limit=1)).hits[0]
        assert hit.grabs == 1  # the anonymous download counted as a grab
        # Everything else keeps its rules.
        assert anonymous.get("/admin/users", follow_redirects=False).status_code == 303
        assert anonymous.get("/metrics", headers={"X-Forwarded-For": "203.0.113.9"}).status_code in (200, 403)
    finally:
        services.close()


def test_a_users_session_ends_with_the_user(app: FastAPI, services: Services) -> None:
    reader = reader_client(app, services)
    assert reader.get("/releases", follow_redirects=False).status_code == 200
    services.users.set_enabled("reader", False)
    assert reader.get("/releases", follow_redirects=False).status_code == 303
    services.users.set_enabled("reader", True)
    assert reader.get("/releases", follow_redirects=False).status_code == 200
    services.users.set_password("reader", "another password, as long as it must be")
    assert reader.get("/releases", follow_redirects=False).status_code == 303
    refused = TestClient(app)
    page = refused.get("/login")
    token = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert token is not None
    wrong = refused.post(
        "/login", data={"csrf": token.group(1), "name": "reader", "password": READER_PASSWORD}
    )
    assert wrong.status_code == 401 and "Wrong name or password" in wrong.text
    nobody = refused.post(
        "/login", data={"csrf": token.group(1), "name": "nobody", "password": READER_PASSWORD}
    )
    assert nobody.status_code == 401 and "Wrong name or password" in nobody.text


def test_a_users_daily_limits_hold_in_the_web_ui(app: FastAPI, services: Services) -> None:
    urls = catalog_urls(services)
    reader = reader_client(app, services, requests_per_day=5, downloads_per_day=1)
    # Signing in lands on /releases: request 1. The dashboard is not counted (it refreshes itself).
    for _ in range(3):
        assert reader.get("/").status_code == 200
    assert reader.get(urls[3]).status_code == 200  # request 2, download 1
    over = reader.get(urls[3])  # request 3, download 2: refused, and not counted as a grab
    assert over.status_code == 429 and "download limit of 1 per day reached" in over.text
    assert services.search.search(SearchQuery(limit=1)).hits[0].grabs == 1
    assert reader.get(urls[2]).status_code == 200  # request 4
    assert reader.get(urls[1]).status_code == 200  # request 5
    refused = reader.get(urls[1])
    assert refused.status_code == 429 and "request limit of 5 per day reached" in refused.text
    usage = next(u for u in services.users.all() if u.name == "reader")
    assert (usage.requests_today, usage.downloads_today) == (6, 1)


def test_after_signing_in_only_a_path_on_this_site(app: FastAPI, services: Services) -> None:
    services.users.add("reader", password=READER_PASSWORD)
    for target, lands in (
        ("/releases/abc?x=1", "/releases/abc?x=1"),
        ("//203.0.113.9/steal", "/releases"),
        ("https://203.0.113.9/", "/releases"),
        ("/\\203.0.113.9", "/releases"),
    ):
        client = TestClient(app)
        page = client.get("/login", params={"next": target})
        token = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert token is not None
        form = {"csrf": token.group(1), "name": "reader", "password": READER_PASSWORD, "next": target}
        signed = client.post("/login", data=form, follow_redirects=False)
        assert signed.status_code == 303 and signed.headers["location"] == lands, target

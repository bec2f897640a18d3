"""Who may use what: every route of the coordinator against every kind of caller.

Callers: anonymous, a newznab API key, an edge node's token, the admin (logged in). The rules:
- the node API (/api/v1/node/…) takes node tokens only: 401 for anyone else;
- the newznab API (/api) takes API keys only: error 100 for a node token or none;
- admin pages take the admin's session only (the login page itself is open);
- operator pages (metrics, status, the API's docs and schema) take a client on the coordinator's own
  machine or the admin's session: 403 for anyone else;
- public pages (dashboard, release browsing, health) are open.
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
from usenet_indexer.coordinator.server import create_app
from usenet_indexer.coordinator.services import Services

ADMIN_PASSWORD = "an admin password for the access tests"
PUBLIC = re.compile(r"^/(|healthz|releases|releases/\{guid\}|releases/\{guid\}/nzb|static/.*)$")
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


def admin_client(app: FastAPI) -> TestClient:
    client = TestClient(app)
    page = client.get("/admin/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert csrf is not None
    logged = client.post("/admin/login", data={"csrf": csrf.group(1), "password": ADMIN_PASSWORD})
    assert logged.status_code == 200
    return client


def test_every_route_is_classified(app: FastAPI) -> None:
    unclassified = [
        (m, p)
        for m, p in routes(app)
        if not (PUBLIC.match(p) or OPERATOR.match(p) or ADMIN.match(p) or NODE.match(p) or NEWZNAB.match(p))
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
        params = {"epoch": 1, "lane": "history", "next": 1}
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
    admin = admin_client(app)
    for method, path in routes(app):
        if not ADMIN.match(path) or path == "/admin/login":
            continue
        url = concrete(path)
        for headers in (
            {},
            {"Authorization": f"Bearer {node_token}"},
            {"Authorization": f"Bearer {api_key}"},
        ):
            response = anonymous.request(method, url, headers=headers, params={"apikey": api_key})
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

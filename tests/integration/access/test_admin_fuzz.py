"""Every admin form and page, fuzzed with a valid admin session and CSRF token (issue 8).

Each POST form gets arbitrary text, bytes, numbers, missing and repeated fields and fields it does not
know; each admin page arbitrary query parameters. Whatever comes: never a 5xx, never slow; a refusal
is a 4xx that says why and changes nothing stored; anything else is a success page or a redirect.
The routes and fields are read from the app and the templates, so a new form cannot escape the fuzzing.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.integration.access.test_access_matrix import ADMIN_PASSWORD, admin_client, routes
from tests.support.store import query, services_for
from usenet_indexer.coordinator.http.app import create_app
from usenet_indexer.coordinator.http.pages import TEMPLATES
from usenet_indexer.coordinator.wiring import Services

GROUP = "alt.binaries.fuzz"
# The POST forms and their fields (what the templates send); the test below keeps this list whole.
FORMS: dict[str, tuple[str, ...]] = {
    "/admin/groups": ("action", "name", "backfill", "backfill_unit", "low", "high"),
    "/admin/ranges/{range_id}/retry": ("back",),
    "/admin/nodes": ("action", "name"),
    "/admin/users": ("action", "name", "requests_per_day", "downloads_per_day"),
    "/admin/rules": ("action", "rules", "note", "subject", "group"),
    "/admin/logout": (),
}
PAGES = ("/admin", "/admin/groups", "/admin/nodes", "/admin/users", "/admin/rules", "/admin/login")
STATE_TABLES = ("groups", "ranges", "nodes", "users", "rule_sets", "web_sessions")
SLOW_SECONDS = 5.0

text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=40)
numbers = st.integers(-(2**70), 2**70).map(str)
known = st.sampled_from(
    [
        "",
        " ",
        "add",
        "enable",
        "disable",
        "plan",
        "test",
        "dashboard",
        GROUP,
        "edge-1",
        "alice",
        "0",
        "1",
        "999",
        "-1",
        "1e3",
        "0x10",
        "١٢",  # Arabic-Indic digits: str.isdigit() says yes, int() agrees, the form must too
        "9" * 40,
        str(2**62),
        str(2**63),
        "{",
        "[]",
        "null",
        '{"version": 1}',
        "\x00",
        "a" * 300,
    ]
)
values = st.one_of(known, text, numbers, st.binary(max_size=40))
# Most of the time a field gets a value of its own kind for its form, so the fuzzing reaches past the
# first checks (the action, the name) into what each form does.
NUMBER = st.integers(-1, 2**64).map(str)
OWN: dict[str, dict[str, st.SearchStrategy[str]]] = {
    "/admin/groups": {
        "action": st.sampled_from(["add", "enable", "disable", "plan"]),
        "name": st.sampled_from([GROUP, "alt.binaries.new"]),
        "backfill": NUMBER,
        "backfill_unit": st.sampled_from(["days", "articles", "all"]),
        "low": NUMBER,
        "high": NUMBER,
    },
    "/admin/ranges/{range_id}/retry": {"back": st.just("dashboard")},
    "/admin/nodes": {"action": st.sampled_from(["add", "enable", "disable"]), "name": st.just("edge-1")},
    "/admin/users": {
        "action": st.sampled_from(["add", "enable", "disable"]),
        "name": st.sampled_from(["alice", "bob"]),
        "requests_per_day": NUMBER,
        "downloads_per_day": NUMBER,
    },
    "/admin/rules": {"action": st.sampled_from(["add", "test"]), "group": st.just(GROUP)},
    "/admin/logout": {},
}
field_names = st.sampled_from(sorted({f for fields in FORMS.values() for f in fields} | {"csrf"})) | text


@pytest.fixture
def services(database_url: str, tmp_path: Path) -> Iterator[Services]:
    built = services_for(database_url, tmp_path, admin_password=ADMIN_PASSWORD)
    built.rules.ensure_default()
    built.groups.add(GROUP)
    built.groups.plan(GROUP, 1, 2999)
    query(built.db, "UPDATE ranges SET status = 'failed', error = 'boom' WHERE start_id = 1")
    built.nodes.add("edge-1")
    built.users.add("alice")
    yield built
    built.close()


@pytest.fixture
def app(services: Services) -> FastAPI:
    return create_app(services)


def state(services: Services) -> dict[str, list[dict[str, Any]]]:
    return {table: query(services.db, f"SELECT * FROM {table} ORDER BY 1") for table in STATE_TABLES}


def csrf_of(client: TestClient) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', client.get("/admin/groups").text)
    assert found is not None, "not logged in"
    return found.group(1)


def reason(response: Any) -> str:
    """Why a refused request was refused, as the page (or FastAPI's JSON) says it."""
    found = re.search(r'id="error">([^<]+)<', response.text) or re.search(r"<h1>([^<]+)</h1>", response.text)
    if found:
        return found.group(1).strip()
    if response.headers.get("content-type", "").startswith("application/json"):
        return str(response.json().get("detail", ""))
    return ""


def check(response: Any, took: float, before: object, after: object, what: str) -> None:
    assert response.status_code < 500, f"{what}: {response.status_code}\n{response.text[:2000]}"
    assert took < SLOW_SECONDS, f"{what}: took {took:.1f} s"
    if response.status_code >= 400:
        assert reason(response), f"{what}: refused ({response.status_code}) without a reason"
        assert after == before, f"{what}: refused ({response.status_code}) but the store changed"
    else:
        assert response.status_code in (200, 303), what
        assert 'id="error"' not in response.text, f"{what}: an error shown with {response.status_code}"


def test_every_admin_form_and_field_is_fuzzed(app: FastAPI) -> None:
    posted = {p for m, p in routes(app) if m == "POST" and p.startswith("/admin") and p != "/admin/login"}
    assert posted == set(FORMS)
    sent = set(
        re.findall(r'name="([a-z_]+)"', "".join(p.read_text() for p in TEMPLATES.glob("admin_*.html")))
    )
    assert sent - {"csrf"} <= {f for fields in FORMS.values() for f in fields}
    pages = {p for m, p in routes(app) if m == "GET" and p.startswith("/admin")}
    assert pages == set(PAGES)


@st.composite
def forms(draw: st.DrawFn) -> tuple[str, list[tuple[str, str | bytes]], str]:
    """(route, the form's fields in order, where the valid CSRF token goes)."""
    route = draw(st.sampled_from(sorted(FORMS)))
    fields: list[tuple[str, str | bytes]] = []
    for name in FORMS[route]:
        how = draw(st.sampled_from(["own"] * 6 + ["any", "missing", "repeated"]))
        if how == "own" and name in OWN[route]:
            fields.append((name, draw(OWN[route][name])))
        elif how != "missing":
            for value in draw(st.lists(values, min_size=1, max_size=3 if how == "repeated" else 1)):
                fields.append((name, value))
    fields.extend(draw(st.lists(st.tuples(field_names, values), max_size=3)))
    fields = draw(st.permutations(fields))
    # The valid token once, or with a stray one before or after it (the last of a repeated field wins).
    csrf = draw(st.sampled_from(["once", "stray-before", "stray-after"]))
    return route, fields, csrf


@pytest.mark.fuzz
@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(form=forms(), range_ref=st.one_of(st.sampled_from(["1", "2", "3", "0"]), text))
@example(  # planned billions of ranges for hours, before plan_ranges' cap
    form=("/admin/groups", [("action", "plan"), ("name", GROUP), ("low", "1"), ("high", str(2**62))], "once"),
    range_ref="1",
)
@example(  # a 500 on PostgreSQL (text refuses NUL), before the forms refused NUL
    form=("/admin/groups", [("action", "enable"), ("name", "alt.\x00binaries")], "once"), range_ref="1"
)
@example(  # refused with a 303 to the dashboard and no reason, before
    form=("/admin/ranges/{range_id}/retry", [("back", "dashboard")], "once"), range_ref="3"
)
def test_admin_forms_never_fail_and_refusals_change_nothing(
    app: FastAPI, services: Services, form: tuple[str, list[tuple[str, str | bytes]], str], range_ref: str
) -> None:
    route, fields, where = form
    client = getattr(app.state, "fuzz_client", None) or admin_client(app)
    app.state.fuzz_client = client
    token = csrf_of(client)
    stray = ("csrf", "forged-" + token)
    csrf = [("csrf", token)]
    if where == "stray-before":
        csrf = [stray, ("csrf", token)]
    elif where == "stray-after":
        csrf = [("csrf", token), stray]
    url = route.replace("{range_id}", quote(range_ref, safe=""))
    body = urlencode([*fields, *csrf])
    before = state(services)
    started = time.monotonic()
    response = client.post(
        url,
        content=body,
        headers={"content-type": "application/x-www-form-urlencoded"},
        follow_redirects=False,
    )
    took = time.monotonic() - started
    after = state(services)
    check(response, took, before, after, f"POST {url} {body[:300]!r}")
    if where == "stray-after":
        # The last of a repeated field is the one read: refused (or no such route, for a range
        # reference that is not a path segment).
        assert response.status_code in (403, 404)
    if route == "/admin/logout" and response.status_code == 303:
        app.state.fuzz_client = None  # logged out, as asked: log in again for the next example


@pytest.mark.fuzz
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(page=st.sampled_from(PAGES), params=st.lists(st.tuples(field_names, values), max_size=4))
def test_admin_pages_take_any_query_parameters(
    app: FastAPI, services: Services, page: str, params: list[tuple[str, str | bytes]]
) -> None:
    client = getattr(app.state, "fuzz_client", None) or admin_client(app)
    app.state.fuzz_client = client
    before = state(services)
    started = time.monotonic()
    response = client.get(page + "?" + urlencode(params), follow_redirects=False)
    took = time.monotonic() - started
    check(response, took, before, state(services), f"GET {page}?{urlencode(params)[:300]}")
    assert response.status_code == (303 if page == "/admin" else 200)


@pytest.mark.fuzz
@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(fields=st.lists(st.tuples(st.sampled_from(["csrf", "password"]) | text, values), max_size=4))
def test_the_login_form_never_fails(
    app: FastAPI, services: Services, fields: list[tuple[str, str | bytes]]
) -> None:
    client = TestClient(app)
    client.get("/admin/login")
    before = state(services)
    started = time.monotonic()
    response = client.post(
        "/admin/login",
        content=urlencode(fields),
        headers={"content-type": "application/x-www-form-urlencoded"},
        follow_redirects=False,
    )
    took = time.monotonic() - started
    check(response, took, before, state(services), f"POST /admin/login {urlencode(fields)[:300]!r}")
    assert response.status_code in (400, 401)

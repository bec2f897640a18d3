"""The users' sign-in form (/login, issue 18) under hypothesis: any fields, any values. It never fails
(no 5xx), a refusal says why, only the right name and password open a session, and where it sends the
browser afterwards is always a path on this site (never an open redirect)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.support.store import query, services_for
from usenet_indexer.coordinator.http.app import create_app
from usenet_indexer.coordinator.wiring import Services

NAME = "reader"
PASSWORD = "the reader's password, for the fuzzing"

text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=60)
names = st.one_of(st.just(NAME), st.just(NAME.upper()), st.just("nobody"), text)
passwords = st.one_of(st.just(PASSWORD), st.just(PASSWORD + " "), st.just(""), text, st.just("x" * 5000))
targets = st.one_of(
    st.sampled_from(
        ["", "/", "/releases?q=a", "//203.0.113.9/", "https://203.0.113.9/", "/\\x", "javascript:x"]
    ),
    text,
)


@pytest.fixture
def fuzzed(database_url: str, tmp_path: Path) -> Iterator[tuple[FastAPI, Services]]:
    services = services_for(database_url, tmp_path)
    services.users.add(NAME, password=PASSWORD)
    yield create_app(services), services
    services.close()


@pytest.mark.fuzz
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    address=st.integers(1, 254),
    name=names,
    password=passwords,
    target=targets,
    forged=st.booleans(),
    extra=st.lists(st.tuples(text, text), max_size=3),
)
@example(address=1, name=NAME, password=PASSWORD, target="//203.0.113.9/", forged=False, extra=[])
def test_the_sign_in_form_never_fails_and_never_leaves_the_site(
    fuzzed: tuple[FastAPI, Services],
    address: int,
    name: str,
    password: str,
    target: str,
    forged: bool,
    extra: list[tuple[str, str]],
) -> None:
    app, services = fuzzed
    # Clients from many addresses, so the lockout (five wrong passwords from one) leaves most of the
    # examples to reach the password check.
    client = TestClient(app, client=(f"198.51.100.{address}", 1))
    page = client.get("/login", params={"next": target})
    assert page.status_code == 200
    token = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert token is not None
    csrf = "forged" if forged else token.group(1)
    body = urlencode([("csrf", csrf), ("name", name), ("password", password), ("next", target), *extra])
    sessions_before = query(services.db, "SELECT count(*) AS n FROM web_sessions")[0]["n"]
    response = client.post(
        "/login",
        content=body,
        headers={"content-type": "application/x-www-form-urlencoded"},
        follow_redirects=False,
    )
    assert response.status_code < 500, response.text[:2000]
    sessions_after = query(services.db, "SELECT count(*) AS n FROM web_sessions")[0]["n"]
    if response.status_code == 303:
        location = response.headers["location"]
        assert location.startswith("/") and not location.startswith(("//", "/\\")), location
        assert not forged and name.strip() == NAME and password == PASSWORD
        assert sessions_after == sessions_before + 1
        query(services.db, "DELETE FROM web_sessions")
    else:
        assert response.status_code in (400, 401, 413, 429), response.status_code
        assert re.search(r'id="error">[^<]+<', response.text), response.text[:2000]
        assert sessions_after == sessions_before

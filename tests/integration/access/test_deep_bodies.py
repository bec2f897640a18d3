"""Nested and deep structures in every body the coordinator takes: never a 5xx (issue 15).

A 454-byte batch nesting ``[`` 200,000 deep answered 500 (RecursionError), as did the admin rules form
with 5,000 nested brackets. Here hypothesis sends every route that takes a body what nests: deep runs
of brackets and braces, JSON values nested as deep as it likes, inside a valid frame where the route
needs one (a batch's magic and head, a form's CSRF token), from callers that get past the route's
authentication (a node holding the range, the admin logged in).
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.store import services_for
from usenet_indexer.coordinator.http.app import create_app
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.wire.batch import MAGIC

ADMIN_PASSWORD = "an admin password for the deep bodies"
GROUP = "alt.binaries.deep"
API = "/api/v1/node"

openers = st.sampled_from(["[", "{", '{"a":', "[1,", '{"batch":', '{"fragments":['])
deep_text = st.builds(lambda opener, depth: opener * depth, openers, st.integers(1, 30_000))
json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=60,
).map(repr)
nested = deep_text | json_like


@pytest.fixture
def world(
    database_url: str, tmp_path: Path
) -> Iterator[tuple[Services, TestClient, TestClient, dict[str, Any]]]:
    services = services_for(database_url, tmp_path, admin_password=ADMIN_PASSWORD)
    services.rules.ensure_default()
    services.groups.add(GROUP)
    services.groups.plan(GROUP, 1, 1999)
    node, token = services.nodes.add("edge-deep")
    lease = services.ranges.lease(node)
    assert lease is not None
    app = create_app(services)
    edge = TestClient(app, headers={"Authorization": f"Bearer {token}"})
    admin = TestClient(app)
    page = admin.get("/admin/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert csrf is not None
    assert (
        admin.post("/admin/login", data={"csrf": csrf.group(1), "password": ADMIN_PASSWORD}).status_code
        == 200
    )
    form_csrf = re.search(r'name="csrf" value="([^"]+)"', admin.get("/admin/groups").text)
    assert form_csrf is not None
    yield services, edge, admin, {"lease": lease, "csrf": form_csrf.group(1)}
    services.close()


def framed(text: str) -> bytes:
    head = zlib.compress(text.encode(), 9)
    return MAGIC + struct.pack("<I", len(head)) + head


@pytest.mark.fuzz
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(body=nested)
def test_deep_bodies_never_5xx(
    world: tuple[Services, TestClient, TestClient, dict[str, Any]], body: str
) -> None:
    _, edge, admin, known = world
    lease = known["lease"]
    at = {"epoch": lease.epoch}
    answers = [
        edge.post(f"{API}/ranges/{lease.range_id}/batches", params=at, content=framed(body)),
        edge.post(f"{API}/ranges/{lease.range_id}/batches", params=at, content=body.encode()),
        edge.post(f"{API}/ranges/{lease.range_id}/corrupt", params=at, content=body.encode()),
        edge.post(
            f"{API}/groups/1/flush", params={"lane": "history", "epoch": 1, "next": 5}, content=framed(body)
        ),
        edge.put(f"{API}/groups/1/snapshot", params={"lane": "history", "epoch": 1, "next": 5}, content=body),
        admin.post("/admin/rules", data={"action": "add", "rules": body, "csrf": known["csrf"]}),
        admin.post(
            "/admin/rules", data={"action": "test", "subject": body, "group": GROUP, "csrf": known["csrf"]}
        ),
        admin.post("/admin/groups", data={"action": "add", "name": body[:300], "csrf": known["csrf"]}),
        admin.post(
            "/admin/login",
            content=body.encode(),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        ),
        edge.get("/api", params={"t": "search", "q": body[:1000], "cat": body[:100]}),
    ]
    for response in answers:
        assert response.status_code < 500, (
            response.request.method,
            response.request.url.path,
            response.text[:300],
        )

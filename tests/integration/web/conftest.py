from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.support.catalog import fill_catalog
from usenet_indexer.coordinator.http.app import create_app
from usenet_indexer.coordinator.wiring import Services

GROUP = "alt.binaries.generated"


@pytest.fixture
def filled(services: Services) -> Services:
    fill_catalog(services, GROUP, releases=60)
    return services


READER = "reader"
READER_PASSWORD = "a reader's password for the web tests"


def sign_in(client: TestClient, name: str, password: str) -> None:
    """Sign in at /login as a person does: the form's token, then name and password."""
    page = client.get("/login")
    form = page.text[page.text.index('action="/login"') :]  # not the header's sign-out form
    token = re.search(r'name="csrf" value="([^"]+)"', form)
    assert token is not None, page.text
    signed = client.post("/login", data={"csrf": token.group(1), "name": name, "password": password})
    assert signed.status_code == 200 and f'id="signed-in">{name}<' in signed.text, signed.text


@pytest.fixture
def anonymous(services: Services) -> Iterator[TestClient]:
    with TestClient(create_app(services)) as test_client:
        yield test_client


@pytest.fixture
def client(services: Services, anonymous: TestClient) -> TestClient:
    """A user signed in to the web UI (the catalog is private by default)."""
    services.users.add(READER, password=READER_PASSWORD)
    sign_in(anonymous, READER, READER_PASSWORD)
    return anonymous


@pytest.fixture
def api_key(services: Services) -> str:
    return services.users.add("alice")[1]

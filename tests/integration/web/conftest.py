from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.support.catalog import fill_catalog
from tests.support.store import services_for
from usenet_indexer.coordinator.server import create_app
from usenet_indexer.coordinator.services import Services

GROUP = "alt.binaries.generated"
ADMIN_PASSWORD = "correct horse battery staple"


@pytest.fixture
def services(database_url: str, tmp_path: Path) -> Iterator[Services]:
    built = services_for(database_url, tmp_path, admin_password=ADMIN_PASSWORD)
    built.rules.ensure_default()
    yield built
    built.close()


@pytest.fixture
def filled(services: Services) -> Services:
    fill_catalog(services, GROUP, releases=60)
    return services


@pytest.fixture
def client(services: Services) -> Iterator[TestClient]:
    with TestClient(create_app(services)) as test_client:
        yield test_client


@pytest.fixture
def api_key(services: Services) -> str:
    return services.users.add("alice")[1]

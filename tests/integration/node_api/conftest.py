from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.support.store import services_for
from usenet_indexer.coordinator.http.app import create_app
from usenet_indexer.coordinator.wiring import Services


@pytest.fixture
def services(database_url: str, tmp_path: Path) -> Iterator[Services]:
    built = services_for(database_url, tmp_path, stream_keepalive_seconds=0.2, stream_chunk_wait_seconds=2.0)
    yield built
    built.close()


@pytest.fixture
def client(services: Services) -> Iterator[TestClient]:
    with TestClient(create_app(services)) as test_client:
        yield test_client


@pytest.fixture
def token(services: Services) -> str:
    return services.nodes.add("edge-1")[1]


@pytest.fixture
def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}

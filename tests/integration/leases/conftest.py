from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.interleave import Interleaving
from tests.support.store import services_for
from usenet_indexer.coordinator.wiring import Services


@pytest.fixture
def services(database_url: str, tmp_path: Path) -> Iterator[Services]:
    built = services_for(database_url, tmp_path)
    yield built
    built.close()


@pytest.fixture
def node(services: Services) -> int:
    node_id, _ = services.nodes.add("worker-a")
    return node_id


@pytest.fixture
def other_node(services: Services) -> int:
    node_id, _ = services.nodes.add("worker-b")
    return node_id


@pytest.fixture
def script(services: Services) -> Iterator[Interleaving]:
    """Actors driven statement by statement (tests/support/interleave.py)."""
    interleaving = Interleaving(services.db)
    yield interleaving
    interleaving.close()

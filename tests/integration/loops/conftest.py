from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.store import services_for
from usenet_indexer.coordinator.wiring import Services


@pytest.fixture
def services(database_url: str, tmp_path: Path) -> Iterator[Services]:
    built = services_for(database_url, tmp_path, prefetch_round_seconds=10.0)
    yield built
    built.close()

"""Fixtures shared by the integration tests (a folder's own conftest overrides them where its
tests need other settings)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.store import ADMIN_PASSWORD, services_for
from usenet_indexer.coordinator.wiring import Services


@pytest.fixture
def services(database_url: str, tmp_path: Path) -> Iterator[Services]:
    """The coordinator's services with an admin password (``ADMIN_PASSWORD``) and the default rules."""
    built = services_for(database_url, tmp_path, admin_password=ADMIN_PASSWORD)
    built.rules.ensure_default()
    yield built
    built.close()

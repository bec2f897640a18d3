"""Fixtures for tests against INN2 on loopback.

``inn2`` runs scripts/inn2-setup.sh once per session (install if missing, configure, start). When INN2
cannot be set up the tests FAIL with the script's output: CI must prove this works, never skip it.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support import inn2 as support
from usenet_indexer.nntp.client import NNTPClient


@pytest.fixture
def inn2_group(inn2: None) -> str:
    """A new, empty group with a name no other test uses."""
    return support.new_group()


@pytest.fixture
def inn2_client(inn2: None) -> Callable[..., NNTPClient]:
    """A factory of clients for the plain reader port (keyword arguments go to NNTPClient)."""

    def make(**kwargs: object) -> NNTPClient:
        options: dict[str, object] = {"timeout": 30.0, **kwargs}
        return NNTPClient(support.HOST, support.PLAIN_PORT, **options)  # type: ignore[arg-type]

    return make

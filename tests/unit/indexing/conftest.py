"""``indexing_path``: runs a module's tests once on the C accelerator and once on the pure-Python path."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from usenet_indexer import accelerator

NATIVE = accelerator.speedups
needs_native = pytest.mark.skipif(NATIVE is None, reason=f"no C accelerator: {accelerator.REASON}")


@pytest.fixture(scope="module", params=["native", "pure"])
def indexing_path(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every RangeIndexer made while it is active runs on the path named by the parameter."""
    if request.param == "native" and NATIVE is None:
        pytest.skip(f"no C accelerator: {accelerator.REASON}")
    held = accelerator.speedups
    accelerator.speedups = NATIVE if request.param == "native" else None
    try:
        yield request.param
    finally:
        accelerator.speedups = held

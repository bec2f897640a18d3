"""The tiers' guard: a test that reaches a real part without its marker fails, naming the marker."""

from __future__ import annotations

import pytest

from tests.support import tiers


def test_reaching_a_real_part_unmarked_fails_the_test() -> None:
    with pytest.raises(tiers.UnmarkedRealPart, match=r"test_tiers\.py::.* is not marked `inn2`"):
        tiers.require("inn2")


def test_every_test_whose_fixtures_bring_up_a_real_part_carries_its_marker(
    request: pytest.FixtureRequest,
) -> None:
    """Over the tests of this run: in `make check` none of them, in `make test` every one is marked."""
    reaching = [
        (item, marker) for item in request.session.items for marker in tiers.markers_from_fixtures(item)
    ]
    assert all(item.get_closest_marker(marker) is not None for item, marker in reaching)
    if request.config.getoption("fast_tier"):
        assert reaching == []
    assert tiers.in_fast_tier(request.node)


def test_every_marker_is_declared(pytestconfig: pytest.Config) -> None:
    declared = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert {*tiers.REAL_PARTS, *tiers.SLOW_MARKERS, *tiers.REAL_PART_FIXTURES.values()} <= declared

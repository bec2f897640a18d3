"""The two tiers of the suite: `make check` runs the tests that need no real part, `make test` runs all.

A test needing a real part carries that part's marker; `make check` (pytest --fast-tier) deselects
those markers, and the slow ones. A marker comes from a fixture (tests/conftest.py marks every test
whose fixtures reach one of REAL_PART_FIXTURES or SLOW_FIXTURES) or is written by hand. The support
code that starts or reaches a real part calls ``require``, which fails the running test when its
marker is missing: a test cannot sit in the fast tier by mistake and reach INN2, and nothing is ever
dropped from `make test`, which deselects nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

# Marker -> what the test needs. `make check` (pytest --fast-tier) deselects each of these, and SLOW_MARKERS.
REAL_PARTS = {
    "inn2": "needs the INN2 news server on loopback (scripts/inn2-setup.sh)",
    "postgres": "needs the PostgreSQL server at 127.0.0.1:5432",
    "browser": "needs Debian's chromium (driven by playwright)",
    "nzbget": "needs the nzbget downloader",
}
# Tests that need no real part but take too long for the fast tier: end-to-end runs of the processes
# (`slow`), and property tests that search long (`fuzz`).
SLOW_MARKERS = {
    "slow": "takes more than a few seconds (processes, end-to-end runs)",
    "fuzz": "a property or fuzz search that runs long (hypothesis with many examples, schemathesis)",
}

# The fixtures that bring up a real part, and the marker each gives every test that uses it, directly or
# through another fixture.
REAL_PART_FIXTURES = {
    "pg_template": "postgres",
    "inn2": "inn2",
    "inn2_ready": "inn2",
    "nzbget": "nzbget",
    "page": "browser",
}
# Fixtures too slow for the fast tier, which mark their tests `slow` the same way.
SLOW_FIXTURES = {
    "par2_set": "par2cmdline makes a recovery set of several megabytes (test_par2.py)",
}


_running: pytest.Item | None = None


class UnmarkedRealPart(Exception):
    """A test reached a real part without the marker that keeps it out of `make check`."""


@contextmanager
def running(item: pytest.Item) -> Iterator[None]:
    """Remember ``item`` while it sets up, runs and tears down (tests/conftest.py wraps each test)."""
    global _running
    _running = item
    try:
        yield
    finally:
        _running = None


def require(part: str) -> None:
    """Fail the running test when it reaches ``part`` without its marker; outside pytest (benches), pass."""
    if _running is None or _running.get_closest_marker(part) is not None:
        return
    raise UnmarkedRealPart(
        f"{_running.nodeid} {REAL_PARTS[part]} but is not marked `{part}`: add @pytest.mark.{part} (or use "
        f"the fixture that brings it up: {fixtures_for(part)}), so that `make check` leaves it out"
    )


def markers_from_fixtures(item: pytest.Item) -> set[str]:
    """The tier markers ``item`` gets from the fixtures it uses, directly or through other fixtures."""
    fixtures = set(getattr(item, "fixturenames", ()))
    return {REAL_PART_FIXTURES[name] for name in fixtures & set(REAL_PART_FIXTURES)} | (
        {"slow"} if fixtures & set(SLOW_FIXTURES) else set()
    )


def in_fast_tier(item: pytest.Item) -> bool:
    return not any(item.get_closest_marker(marker) for marker in [*REAL_PARTS, *SLOW_MARKERS])


def fixtures_for(part: str) -> str:
    return ", ".join(name for name, marker in REAL_PART_FIXTURES.items() if marker == part) or "none"

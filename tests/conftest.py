"""Fixtures shared by every test: one parametrized store fixture runs a test on SQLite and PostgreSQL.

Also the suite's tiers (tests/support/tiers.py): the markers, the marks a test's fixtures give it, and
the running test remembered so that support code reaching a real part can check the test is marked.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests.support import inn2 as inn2_support
from tests.support import tiers
from tests.support.databases import PostgresTemplate, SqliteTemplate
from tests.support.s3 import MotoServer
from usenet_indexer.db import Database, connect


def pytest_configure(config: pytest.Config) -> None:
    for name, meaning in {**tiers.REAL_PARTS, **tiers.SLOW_MARKERS}.items():
        config.addinivalue_line("markers", f"{name}: {meaning}")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fast-tier",
        action="store_true",
        help="only the tests that need no real part and are not slow (make check; tests/support/tiers.py)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for marker in tiers.markers_from_fixtures(item):
            if item.get_closest_marker(marker) is None:
                item.add_marker(marker)
    if config.getoption("fast_tier"):
        kept = [item for item in items if tiers.in_fast_tier(item)]
        config.hook.pytest_deselected(items=[item for item in items if not tiers.in_fast_tier(item)])
        items[:] = kept


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    with tiers.running(item):
        return (yield)


@pytest.fixture(scope="session")
def inn2() -> None:
    """INN2 on loopback, set up once per session (scripts/inn2-setup.sh, idempotent); fails the test
    with the script's output when it cannot be."""
    inn2_support.ensure_inn2()


@pytest.fixture(scope="session")
def pg_template() -> Iterator[PostgresTemplate]:
    template = PostgresTemplate()
    yield template
    template.drop()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> SqliteTemplate:
    return SqliteTemplate(tmp_path_factory.mktemp("sqlite-template"))


@pytest.fixture
def pg_url(pg_template: PostgresTemplate) -> Iterator[str]:
    with pg_template.database() as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A migrated, empty store of each dialect."""
    if request.param == "sqlite":
        template: SqliteTemplate = request.getfixturevalue("sqlite_template")
        with template.database(tmp_path) as url:
            yield url
    else:
        yield request.getfixturevalue("pg_url")


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    database = connect(database_url)
    yield database
    database.close()


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    """moto's S3 server on 127.0.0.1 (a free port), one for the session; see tests/support/s3.py."""
    server = MotoServer(tmp_path_factory.mktemp("moto") / "moto.log")
    yield server
    server.stop()

"""Throw-away databases for tests: a migrated template per session, a fresh copy per test.

PostgreSQL is the real server at 127.0.0.1:5432 (trust auth) unless USENET_INDEXER_TEST_PG names
another admin URL; every test gets its own database, created from a migrated template and dropped after.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from tests.support import tiers
from usenet_indexer.db import upgrade

PG_ADMIN_URL = os.environ.get("USENET_INDEXER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


def pg_url(name: str) -> str:
    base, _, _ = PG_ADMIN_URL.rpartition("/")
    return f"{base}/{name}"


def _admin(sql: str) -> None:
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(sql)


class PostgresTemplate:
    def __init__(self) -> None:
        tiers.require("postgres")
        self.name = f"uitest_tmpl_{uuid.uuid4().hex[:10]}"
        _admin(f"CREATE DATABASE {self.name}")
        upgrade(pg_url(self.name))

    @contextmanager
    def database(self) -> Iterator[str]:
        tiers.require("postgres")
        name = f"uitest_{uuid.uuid4().hex[:12]}"
        _admin(f"CREATE DATABASE {name} TEMPLATE {self.name}")
        try:
            yield pg_url(name)
        finally:
            _admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def drop(self) -> None:
        _admin(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")


class SqliteTemplate:
    def __init__(self, folder: Path) -> None:
        self.path = folder / "template.db"
        upgrade(f"sqlite:///{self.path}")

    @contextmanager
    def database(self, folder: Path) -> Iterator[str]:
        path = folder / f"{uuid.uuid4().hex[:8]}.db"
        shutil.copyfile(self.path, path)
        yield f"sqlite:///{path}"

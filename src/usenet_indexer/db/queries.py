"""Named SQL blocks, one directory per dialect (the procrastinate habit: ``-- name: lease_take``).

``sql/common/*.sql`` holds statements both dialects run as written; ``sql/postgresql/`` and
``sql/sqlite/`` hold the ones whose semantics differ (SKIP LOCKED, the clock, upserts), and win over a
common block of the same name. Parameters are written ``:name`` everywhere and turned into psycopg's
``%(name)s`` here, so the files read the same in both dialects.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import Literal

Dialect = Literal["postgresql", "sqlite"]

# The database's clock in Unix seconds: every ``*_at`` column is one of these (see migration 0001).
# ``{now}`` in a query stands for it. It is the time of the call, not of the transaction's start
# (``now()``): a grant blocked behind a finish must not record a time before that finish, or the
# audit sees two live holders where there was one. SQLite's own clock ticks in milliseconds, in
# which a whole range is leased, batched and finished; ``unix_now()`` is the same host clock in
# microseconds, registered on every connection (SQLite has no server: the host is its clock, a steady
# one: db/clock.py).
# On PostgreSQL it is ``lease_now()`` (sql/postgresql/functions/lease_now.v1.sql), which the
# functions there call too: ``clock_timestamp()`` plus a test's moved clock (db/clock.py).
NOW: dict[str, str] = {
    "postgresql": "lease_now()",
    "sqlite": "unix_now()",
}

_BLOCK = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)
# ``:name`` but not the ``::type`` cast and not inside ``'...'`` literals (we never put colons there).
_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


def _blocks(text: str, source: str) -> dict[str, str]:
    found: dict[str, str] = {}
    parts = _BLOCK.split(text)
    if parts[0].strip() and not all(line.startswith("--") for line in parts[0].strip().splitlines()):
        raise ValueError(f"{source}: SQL before the first '-- name:' line")
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in found:
            raise ValueError(f"{source}: query {name!r} defined twice")
        found[name] = body.strip().rstrip(";")
    return found


def _read(folder: str) -> dict[str, str]:
    found: dict[str, str] = {}
    root = resources.files("usenet_indexer.db").joinpath("sql", folder)
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        # schema.sql is the dialect's whole schema (db/schema.py), not named queries.
        if entry.name.endswith(".sql") and entry.name != "schema.sql":
            for name, sql in _blocks(entry.read_text(encoding="utf-8"), f"{folder}/{entry.name}").items():
                if name in found:
                    raise ValueError(f"{folder}/{entry.name}: query {name!r} defined twice")
                found[name] = sql
    return found


@cache
def queries(dialect: Dialect) -> dict[str, str]:
    merged = {
        name: sql.replace("{now}", NOW[dialect])
        for name, sql in {**_read("common"), **_read(dialect)}.items()
    }
    if dialect == "postgresql":
        return {name: _PARAM.sub(r"%(\1)s", sql.replace("%", "%%")) for name, sql in merged.items()}
    return merged

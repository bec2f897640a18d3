"""A transaction's reads get their own rows, whatever was queued before them.

On PostgreSQL a transaction runs in a psycopg pipeline: ``execute`` only queues, and its result comes
back later. The server sends queued results unasked once they fill its 8 kB output buffer; psycopg
then hands each to the cursor that issued it, as that cursor's current result. Were the next read on
the same cursor, it would take an earlier UPDATE's result for its own (an empty list here): a
batch's UPDATE ... RETURNING came back empty that way about once in 20 ranges (bench/stream.py).
"""

from __future__ import annotations

import time

import pytest

from usenet_indexer.db import Database

QUEUED = 3000  # results of ~25 bytes each: several times the server's output buffer


def _group(db: Database) -> int:
    with db.transaction() as tx:
        row = tx.one(
            "group_insert",
            {
                "name": "a.b.c",
                "backfill_articles": None,
                "backfill_days": None,
                "backfill_since": None,
                "capture": False,
            },
        )
    assert row is not None
    return int(row["id"])


def test_a_read_after_many_queued_statements_gets_its_own_rows(db: Database) -> None:
    group_id = _group(db)
    with db.transaction() as tx:
        for at in range(QUEUED):
            tx.execute("group_set_error", {"group_id": group_id, "error": f"e{at}"})
        time.sleep(0.05)  # the results the server flushed unasked are in our socket by now
        rows = tx.run("group_by_name", {"name": "a.b.c"})
        assert [row["error"] for row in rows] == [f"e{QUEUED - 1}"]
        assert tx.run("group_by_name", {"name": "a.b.c"})[0]["id"] == group_id


def test_a_read_after_a_long_executemany_gets_its_own_rows(db: Database) -> None:
    group_id = _group(db)
    with db.transaction() as tx:
        tx.executemany("group_set_error", [{"group_id": group_id, "error": f"e{at}"} for at in range(QUEUED)])
        time.sleep(0.05)
        rows = tx.run("group_by_name", {"name": "a.b.c"})
        assert [row["error"] for row in rows] == [f"e{QUEUED - 1}"]


def test_an_error_in_a_queued_statement_still_fails_the_transaction(db: Database) -> None:
    group_id = _group(db)

    def duplicate_behind_an_update() -> None:
        with db.transaction() as tx:
            tx.execute("group_set_error", {"group_id": group_id, "error": "kept?"})
            tx.execute(
                "group_insert",
                {
                    "name": "a.b.c",
                    "backfill_articles": None,
                    "backfill_days": None,
                    "backfill_since": None,
                    "capture": False,
                },
            )
            tx.run("group_by_name", {"name": "a.b.c"})

    # Each driver's IntegrityError: a second group of the same name, wherever it was queued.
    with pytest.raises(Exception, match="(?i)unique"):
        duplicate_behind_an_update()
    with db.transaction(write=False) as tx:
        assert tx.run("group_by_name", {"name": "a.b.c"})[0]["error"] is None


# Keys as a batch's may not be, and the characters an array's text gives a meaning to.
AWKWARD_KEYS = ["plain", 'a "quoted" key', "back\\slash", "a,b", "{brace}", "NULL", "", " spaced ", "ünï"]


def test_a_list_parameter_finds_every_key_as_sent(db: Database) -> None:
    # PostgreSQL reads tx.array's list as an array's text (db/database.py array_literal, i17-store).
    with db.transaction() as tx:
        for at, key in enumerate(AWKWARD_KEYS):
            tx.execute("release_alias_insert", {"member_key": key, "release_key": f"r{at}"})
    with db.transaction() as tx:
        rows = tx.run("release_aliases_by_keys", {"keys": tx.array([*AWKWARD_KEYS, "absent", 'x"'])})
        assert {row["member_key"]: row["release_key"] for row in rows} == {
            key: f"r{at}" for at, key in enumerate(AWKWARD_KEYS)
        }
        assert tx.run("release_aliases_by_keys", {"keys": tx.array([])}) == []


def test_a_list_parameter_of_integers_reads_back_as_sent(db: Database) -> None:
    values = [0, -1, 2**31, 2**62]
    unnest = {
        "postgresql": "SELECT unnest(CAST(%(x)s AS bigint[])) AS v",
        "sqlite": "SELECT value AS v FROM json_each(:x)",
    }[db.dialect]
    with db.transaction(write=False) as tx:
        assert [row["v"] for row in tx.sql(unnest, {"x": tx.array(values)})] == values

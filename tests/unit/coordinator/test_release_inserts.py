"""Every insert of releases goes through ``insert_releases`` (catalog/batch_store.py), which indexes
them for search on SQLite (migration 0012). Two inserts that went around it (a joined burst, a probe's
split) were never indexed and broke the index at their next update (migration 0015)."""

from __future__ import annotations

import re
from pathlib import Path

import usenet_indexer

SOURCE = Path(usenet_indexer.__file__).parent


def test_release_insert_is_sent_only_by_insert_releases() -> None:
    senders = sorted(
        str(path.relative_to(SOURCE))
        for path in SOURCE.rglob("*.py")
        if re.search(r"""["']release_insert["']""", path.read_text())
    )
    assert senders == ["catalog/batch_store.py"]
    text = (SOURCE / "catalog/batch_store.py").read_text()
    assert text.count('"release_insert"') == 1
    assert (
        'tx.executemany("release_insert", rows)' in text.split("def insert_releases", 1)[1].split("\ndef ")[0]
    )

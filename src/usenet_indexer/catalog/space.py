"""Is the catalog at its space cap? Then only tail and stored ranges are leased (seed 000), and loose
runs and files waiting on history that will not be read are let go (indexing/grouping.py
``Retention``)."""

from __future__ import annotations

import threading
import time

from usenet_indexer.db import Database

CHECK_EVERY_SECONDS = 30.0  # sizing the database on every lease would cost more than the lease


class CatalogSpace:
    def __init__(self, db: Database, cap_bytes: int | None) -> None:
        self.db = db
        self.cap_bytes = cap_bytes
        self._checked = float("-inf")
        self._full = False
        self._lock = threading.Lock()

    def size(self) -> int:
        with self.db.transaction(write=False) as tx:
            row = tx.one("database_size")
        return int(row["bytes"]) if row else 0

    def full(self) -> bool:
        if self.cap_bytes is None:
            return False
        with self._lock:
            if time.monotonic() - self._checked >= CHECK_EVERY_SECONDS:
                self._full = self.size() >= self.cap_bytes
                self._checked = time.monotonic()
            return self._full

    def history_allowed(self) -> bool:
        return not self.full()

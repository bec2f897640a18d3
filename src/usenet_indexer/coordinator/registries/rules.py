"""Rule sets in the store: versioned; a change makes a new version; ranges record the one they used."""

from __future__ import annotations

import threading

from usenet_indexer.db import Database
from usenet_indexer.indexing.rules import RuleSet, default_rules


class RuleStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._cache: dict[int, RuleSet] = {}
        self._lock = threading.Lock()

    def ensure_default(self) -> int:
        """The built-in rule set as version 1 when the store has none yet; the current version."""
        with self.db.transaction() as tx:
            row = tx.one("rules_current")
            if row is not None:
                return int(row["version"])
            rules = default_rules()
            tx.execute("rules_insert", {"version": 1, "rules": rules.to_json(), "note": "built-in default"})
            return 1

    def current(self) -> tuple[int, RuleSet]:
        with self.db.transaction(write=False) as tx:
            row = tx.one("rules_current")
        if row is None:
            return 0, default_rules()
        return int(row["version"]), self.get(int(row["version"]))

    def get(self, version: int) -> RuleSet:
        """A stored version (version 0: the built-in default); KeyError when there is none."""
        with self._lock:
            if version in self._cache:
                return self._cache[version]
        if version == 0:
            rules = default_rules()
        else:
            with self.db.transaction(write=False) as tx:
                row = tx.one("rules_get", {"version": version})
            if row is None:
                raise KeyError(f"no rule set version {version}")
            rules = RuleSet.from_json(row["rules"])
        with self._lock:
            self._cache[version] = rules
        return rules

    def add(self, rules: RuleSet, note: str = "") -> int:
        """Store ``rules`` as the next version (validated already: RuleSet refuses bad patterns)."""
        with self.db.transaction() as tx:
            row = tx.one("rules_current")
            version = 1 if row is None else int(row["version"]) + 1
            stored = RuleSet(version=version, rules=rules.rules)
            tx.execute("rules_insert", {"version": version, "rules": stored.to_json(), "note": note})
        return version

    def versions(self) -> list[tuple[int, str, float, int]]:
        with self.db.transaction(write=False) as tx:
            return [
                (
                    int(r["version"]),
                    r["note"],
                    float(r["created_at"]),
                    len(RuleSet.from_json(r["rules"]).rules),
                )
                for r in tx.run("rules_all")
            ]

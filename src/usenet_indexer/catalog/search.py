"""Searching the catalog: one interface over PostgreSQL full text and SQLite FTS5.

A query names words (all must be in the release's name), categories (a parent, x000, stands for all of
x000-x999, as newznab clients expect), an age, sizes, a group, and the TV and movie ids; results come
newest first (posted_at, then id: the same order on every page, so paging by offset is stable while
the catalog does not change). The SQL is in ``db/sql/*/catalog_search.sql``: the page and count
statements completed with only the conditions a query uses.

Words are reduced to letters and digits before they reach either engine (``words``): nothing a user
types is ever query syntax, in FTS5 or in ``plainto_tsquery``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from usenet_indexer.db import Database, Row, Tx
from usenet_indexer.db.queries import queries
from usenet_indexer.indexing.categories import NAMES
from usenet_indexer.indexing.naming import normalise

__all__ = ["COUNT_CAP", "MAX_LIMIT", "ReleaseHit", "Search", "SearchPage", "SearchQuery", "words"]

MAX_LIMIT = 100
# Totals are counted up to this many matches past the offset (``total`` then reads "at least"): a
# client pages on while ``offset + limit < total``, which a capped count keeps true, and counting
# every match of a frequent word costs more than the page (10,000 of "1080p" at 1,000,000 releases:
# 22 ms by itself).
COUNT_CAP = 1_000
MAX_WORDS = 16
MAX_OFFSET = 1_000_000

_WORD = re.compile(r"\w+")


def words(text: str | None) -> list[str]:
    """The searchable words of ``text``, as the catalog's ``search_name`` holds them (lower case, split
    at everything that is not a letter or digit), at most MAX_WORDS, each at most 64 characters."""
    if not text:
        return []
    found = [w for w in _WORD.findall(normalise(text)) if w.strip("_")]
    return [w[:64] for w in found[:MAX_WORDS]]


@dataclass(frozen=True, slots=True)
class SearchQuery:
    text: str | None = None
    categories: tuple[int, ...] = ()
    max_age_days: float | None = None
    min_size: int | None = None
    max_size: int | None = None
    group: str | None = None
    season: int | None = None
    episode: int | None = None
    imdb: str | None = None
    tvdbid: int | None = None
    complete: bool | None = None
    limit: int = MAX_LIMIT
    offset: int = 0


@dataclass(frozen=True, slots=True)
class ReleaseHit:
    """A release as search shows it (no segments)."""

    id: int
    guid: str
    name: str
    poster: str
    group: str
    groups: tuple[str, ...]
    files: int
    file_total: int
    parts_seen: int
    parts_expected: int
    completion: float
    complete: bool
    size: int
    posted_at: float
    listed_at: float  # when listed, or listed again on becoming complete (what feeds sync by)
    first_date: int | None
    last_date: int | None
    obfuscated: bool
    password: bool | None
    category: int
    season: int | None
    episode: int | None
    episode_last: int | None
    year: int | None
    resolution: str | None
    imdb: str | None
    tvdbid: int | None
    grabs: int

    @classmethod
    def from_row(cls, row: Row) -> ReleaseHit:
        return cls(
            id=int(row["id"]),
            guid=str(row["key"]),
            name=str(row["name"]),
            poster=str(row["poster"]),
            group=str(row["group_name"]),
            groups=tuple(str(row["groups"]).split()),
            files=int(row["files_seen"]),
            file_total=int(row["file_total"]),
            parts_seen=int(row["parts_seen"]),
            parts_expected=int(row["parts_expected"]),
            completion=float(row["completion"]),
            complete=bool(row["complete"]),
            size=int(row["size"]),
            posted_at=float(row["posted_at"]),
            listed_at=float(row["listed_at"] if row["listed_at"] is not None else row["posted_at"]),
            first_date=row["first_date"],
            last_date=row["last_date"],
            obfuscated=bool(row["obfuscated"]),
            password=None if row["password"] is None else bool(row["password"]),
            category=int(row["category"]),
            season=row["season"],
            episode=row["episode"],
            episode_last=row["episode_last"],
            year=row["year"],
            resolution=row["resolution"],
            imdb=row["imdb"],
            tvdbid=row["tvdbid"],
            grabs=int(row["grabs"]),
        )


@dataclass(frozen=True, slots=True)
class SearchPage:
    total: int  # matches counted up to COUNT_CAP (+ offset)
    offset: int
    hits: list[ReleaseHit] = field(default_factory=list)
    capped: bool = False


def category_ids(categories: Sequence[int]) -> list[int]:
    """The ids a category filter stands for: a parent (x000) itself and its known subcategories, any
    other itself.

    One list of exact ids, not ``category / 1000`` against the parents: the (category, posted_at)
    index answers ``category = ANY(...)`` (counting a category of 300,000 releases at 1,000,000 took
    89 ms through the expression, which no index holds, and ~2 ms through the index). Only the ids the
    catalog can hold (indexing/categories.py): each parent stood for 1,000 ids, and ``cat=`` naming 64
    parents made a query of 64,000 (170 ms on an empty catalog; issue 15).
    """
    ids: set[int] = set()
    for c in categories:
        ids.add(c)
        if c % 1000 == 0:
            ids.update(known for known in NAMES if c <= known < c + 1000)
    return sorted(ids)


class Search:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._id_kinds: tuple[frozenset[str], float] | None = None

    def _where(self, tx: Tx, query: SearchQuery) -> tuple[str, dict[str, Any]]:
        sql = queries(tx.dialect)
        conditions: list[str] = []
        params: dict[str, Any] = {}

        def add(name: str, **values: Any) -> None:
            conditions.append(sql[f"search_where_{name}"])
            params.update(values)

        found = words(query.text)
        if found:
            text = " ".join(found) if tx.dialect == "postgresql" else " ".join(f'"{w}"' for w in found)
            add("text", text=text)
        if query.categories:
            ids = category_ids(query.categories)
            add("categories", categories=tx.array(ids))
        if query.max_age_days is not None:
            add("since", max_age_seconds=float(query.max_age_days) * 86400.0)
        if query.min_size is not None:
            add("min_size", min_size=query.min_size)
        if query.max_size is not None:
            add("max_size", max_size=query.max_size)
        if query.group:
            add("group", group=query.group)
        if query.season is not None:
            add("season", season=query.season)
        if query.episode is not None:
            add("episode", episode=query.episode)
        if query.imdb:
            add("imdb", imdb=query.imdb)
        if query.tvdbid is not None:
            add("tvdbid", tvdbid=query.tvdbid)
        if query.complete is not None:
            add("complete", complete=query.complete)
        if not conditions:
            conditions.append(sql["search_where_all"])
        return " AND ".join(f"({c})" for c in conditions), params

    def search(self, query: SearchQuery) -> SearchPage:
        """One page of matches, newest first, and how many there are (counted up to COUNT_CAP past the
        offset). ``limit`` is clamped to 0..MAX_LIMIT and ``offset`` to 0..MAX_OFFSET."""
        limit = max(0, min(int(query.limit), MAX_LIMIT))
        offset = max(0, min(int(query.offset), MAX_OFFSET))
        # A feed without words (what Sonarr and Radarr sync, down to the last item they saw) by when
        # each release was listed or became complete; a search with words by when it was posted.
        order = "posted_at" if words(query.text) else "listed_at"
        with self.db.transaction(write=False) as tx:
            where, params = self._where(tx, query)
            sql = queries(tx.dialect)
            cap = offset + COUNT_CAP
            hits: list[ReleaseHit] = []
            total: int | None = None
            if limit and "search_page_counted" in sql:
                # PostgreSQL: the page and the count in one statement.
                rows = tx.sql(
                    sql["search_page_counted"].replace("{where}", where).replace("{order}", order),
                    {**params, "limit": limit, "offset": offset, "count_cap": cap},
                )
                hits = [ReleaseHit.from_row(r) for r in rows]
                total = int(rows[0]["total"]) if rows else None
            elif limit:
                page_sql = sql["search_page"].replace("{where}", where).replace("{order}", order)
                rows = tx.sql(page_sql, {**params, "limit": limit, "offset": offset})
                hits = [ReleaseHit.from_row(r) for r in rows]
                if 0 < len(hits) < limit:
                    total = offset + len(hits)  # the last page: nothing to count
            if total is None:
                count_sql = sql["search_count"].replace("{where}", where).replace("{order}", order)
                counted = tx.sql(count_sql, {**params, "count_cap": cap})
                total = int(counted[0]["n"]) if counted else 0
            capped = total >= cap
        return SearchPage(total=total, offset=offset, hits=hits, capped=capped)

    def get(self, guid: str) -> ReleaseHit | None:
        if not _GUID.match(guid):
            return None
        with self.db.transaction(write=False) as tx:
            row = tx.one("release_by_key", {"key": guid})
        return None if row is None else ReleaseHit.from_row(row)

    def id_kinds(self) -> frozenset[str]:
        """The id parameters a search can match: ``imdbid``, ``tvdbid``, each once any release carries
        one (kept for a minute: caps is asked often, and ids appear rarely)."""
        now = time.monotonic()
        if self._id_kinds is None or now - self._id_kinds[1] > 60.0:
            with self.db.transaction(write=False) as tx:
                row = tx.one("release_id_kinds")
            assert row is not None
            kinds = {name for name, column in (("imdbid", "imdb"), ("tvdbid", "tvdbid")) if row[column]}
            self._id_kinds = (frozenset(kinds), now)
        return self._id_kinds[0]

    def segments_row(self, guid: str) -> Row | None:
        """The release's row with its segment blob (what an NZB is written from)."""
        if not _GUID.match(guid):
            return None
        with self.db.transaction(write=False) as tx:
            return tx.one("release_segments_by_key", {"key": guid})

    def count_grab(self, release_id: int) -> None:
        """One more download of the release (web UI downloads; API downloads count with the user's)."""
        with self.db.transaction() as tx:
            tx.execute("release_grab", {"id": release_id})


# Release keys are BLAKE2b-128 in hex (indexing.release_key); anything else names no release.
_GUID = re.compile(r"^[0-9a-f]{32}$")

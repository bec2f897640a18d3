"""t=search latency: p50 and p95 of newznab searches over 1,000,000 releases on PostgreSQL and 100,000
on SQLite (``--quick``: 100,000 and 20,000).

Releases are generated (scene-style movie, TV, music and software names from word lists, so a title
word matches ~0.1-1 % of releases and a genre word ~10 %), bulk-loaded (COPY on PostgreSQL), and
searched through the whole API in-process (parameter parsing, key check and request counting,
search, count, the RSS document) with the mix a Sonarr/Radarr/Prowlarr install sends: RSS polls by
category without words, title searches with and without categories, season/episode searches,
frequent and missing words, and later pages.

Target: PostgreSQL p95 < 50 ms at 1,000,000 releases. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import io
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg
from fastapi.testclient import TestClient

from _common import emit, percentile, postgres_database, sqlite_database
from usenet_indexer.catalog.batch_store import search_name
from usenet_indexer.coordinator.http.app import create_app
from usenet_indexer.coordinator.wiring import open_services
from usenet_indexer.db.database import sqlite_path
from usenet_indexer.settings import Settings

ADJECTIVES = [
    "Silent",
    "Broken",
    "Golden",
    "Hidden",
    "Last",
    "Dark",
    "Bright",
    "Lost",
    "Frozen",
    "Burning",
    "Crimson",
    "Hollow",
    "Distant",
    "Savage",
    "Quiet",
    "Restless",
    "Iron",
    "Paper",
    "Glass",
    "Electric",
    "Midnight",
    "Northern",
    "Southern",
    "Eternal",
    "Wild",
    "Fallen",
    "Secret",
    "Wicked",
    "Lonely",
]
NOUNS = [
    "River",
    "Empire",
    "Signal",
    "Harbor",
    "Garden",
    "Kingdom",
    "Machine",
    "Witness",
    "Circuit",
    "Orchard",
    "Frontier",
    "Horizon",
    "Tower",
    "Station",
    "Mirror",
    "Canyon",
    "Forest",
    "Harvest",
    "Island",
    "Voyage",
    "Citadel",
    "Thunder",
    "Lantern",
    "Covenant",
    "Archive",
    "Meadow",
]
TAGS = [
    "SPARKS",
    "NTb",
    "FLUX",
    "GGEZ",
    "EDITH",
    "NOGRP",
    "AMZN",
    "CAKES",
    "RARBG",
    "YIFY",
    "TGx",
    "KOGi",
    "SiGMA",
    "DEFLATE",
]
RESOLUTIONS = ("720p", "1080p", "2160p", "480p")
SOURCES = ("BluRay.x264", "WEB-DL.h264", "WEBRip.x265", "HDTV.x264", "BluRay.REMUX.AVC")
CATEGORIES = {"movie": (2030, 2040, 2045), "tv": (5030, 5040, 5045), "music": (3000,), "pc": (4000,)}
COLUMNS = (
    "key",
    "name",
    "search_name",
    "poster",
    "group_name",
    "groups",
    "file_total",
    "files_seen",
    "files_expected",
    "parts_seen",
    "parts_expected",
    "completion",
    "complete",
    "size",
    "first_article",
    "last_article",
    "first_date",
    "last_date",
    "posted_at",
    "obfuscated",
    "category",
    "season",
    "episode",
    "year",
    "resolution",
    "segments",
    "created_at",
    "updated_at",
)
NOW = time.time()
SPAN = 3 * 365 * 86400  # three years of posts


def title(rng: random.Random) -> str:
    return f"{rng.choice(ADJECTIVES)}.{rng.choice(NOUNS)}"


def rows(count: int, seed: int = 1, shuffled: bool = False) -> Iterator[tuple[Any, ...]]:
    """Releases in the order a catalog stores them: by and large in posting order (the tail adds the
    newest; history ranges are taken oldest era first), a day of jitter; ``shuffled``: posting times
    in no relation to the storage order (the worst case for reading pages newest first)."""
    rng = random.Random(seed)
    for n in range(count):
        kind = rng.choices(("movie", "tv", "music", "pc"), weights=(4, 5, 1, 1))[0]
        season = episode = year = None
        resolution: str | None = rng.choice(RESOLUTIONS)
        tag = rng.choice(TAGS)
        if kind == "movie":
            year = 1980 + rng.randrange(46)
            name = f"{title(rng)}.{year}.{resolution}.{rng.choice(SOURCES)}-{tag}"
        elif kind == "tv":
            season, episode = 1 + rng.randrange(12), 1 + rng.randrange(24)
            name = f"{title(rng)}.S{season:02d}E{episode:02d}.{resolution}.{rng.choice(SOURCES)}-{tag}"
        elif kind == "music":
            resolution = None
            name = (
                f"{rng.choice(ADJECTIVES)}.Band-{rng.choice(NOUNS)}.Sessions-{1990 + rng.randrange(36)}-FLAC"
            )
        else:
            resolution = None
            name = f"{rng.choice(NOUNS)}.Studio.v{rng.randrange(20)}.{rng.randrange(10)}.x64-{tag}"
        category = rng.choice(CATEGORIES[kind])
        size = rng.randrange(50_000_000, 60_000_000_000)
        if shuffled:
            posted = NOW - rng.random() * SPAN
        else:
            posted = NOW - SPAN * (1 - n / count) - rng.random() * 86400
        files = rng.randrange(3, 80)
        yield (
            f"{n:032x}",
            name,
            search_name(name),
            f"poster{rng.randrange(500)}@example.invalid",
            "alt.binaries.bench",
            "alt.binaries.bench",
            files,
            files,
            files,
            files * 40,
            files * 40,
            100.0,
            True,
            size,
            n * 100,
            n * 100 + 99,
            int(posted),
            int(posted) + 600,
            posted,
            False,
            category,
            season,
            episode,
            year,
            resolution,
            b"\x00",  # no segments: search never reads them
            posted,
            posted,
        )


def load_postgres(url: str, count: int, shuffled: bool = False) -> float:
    started = time.perf_counter()
    with psycopg.connect(url) as conn:
        with conn.cursor() as cursor, cursor.copy(f"COPY releases ({', '.join(COLUMNS)}) FROM STDIN") as copy:
            for row in rows(count, shuffled=shuffled):
                copy.write_row(row)
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE releases")
    return time.perf_counter() - started


def load_sqlite(url: str, count: int, shuffled: bool = False) -> float:
    started = time.perf_counter()
    conn = sqlite3.connect(sqlite_path(url))
    placeholders = ", ".join("?" for _ in COLUMNS)
    with conn:
        conn.executemany(
            f"INSERT INTO releases ({', '.join(COLUMNS)}) VALUES ({placeholders})",
            rows(count, shuffled=shuffled),
        )
        # Indexed for full-text search after the rows, as the batch store does (migration 0012).
        conn.execute("INSERT INTO releases_fts (rowid, search_name) SELECT id, search_name FROM releases")
    conn.execute("ANALYZE")
    conn.close()
    return time.perf_counter() - started


def queries(count: int, seed: int = 2) -> list[tuple[str, dict[str, str]]]:
    """The request mix: (kind, parameters)."""
    rng = random.Random(seed)
    kinds = [
        ("rss_category", 3),
        ("rss_all", 1),
        ("title", 3),
        ("title_category", 2),
        ("tv_episode", 2),
        ("frequent_word", 1),
        ("missing", 1),
        ("page", 1),
    ]
    names = [k for k, _ in kinds]
    weights = [w for _, w in kinds]
    out = []
    for _ in range(count):
        kind = rng.choices(names, weights=weights)[0]
        params: dict[str, str] = {"t": "search"}
        if kind == "rss_category":
            params["cat"] = rng.choice(("5000", "2000", "5030,5040", "2040,2045"))
        elif kind == "title":
            params["q"] = title(rng).replace(".", " ")
        elif kind == "title_category":
            params.update(q=title(rng).replace(".", " "), cat=rng.choice(("5000", "2000")))
        elif kind == "tv_episode":
            params.update(
                t="tvsearch",
                q=title(rng).replace(".", " "),
                season=str(1 + rng.randrange(12)),
                ep=str(1 + rng.randrange(24)),
                cat="5000",
            )
        elif kind == "frequent_word":
            params["q"] = rng.choice(("1080p", "x264", "BluRay", "WEB DL"))
        elif kind == "missing":
            params["q"] = f"zzq{rng.randrange(10**6)} nothing"
        elif kind == "page":
            params.update(cat="5000", offset=str(100 * rng.randrange(1, 10)))
        out.append((kind, params))
    return out


def measure(url: str, count: int, data_dir: Path) -> dict[str, Any]:
    settings = Settings(database_url=url, data_dir=data_dir)
    services = open_services(settings, migrate=False)
    try:
        _, key = services.users.add("bench")
        mix = queries(count)
        timings: dict[str, list[float]] = {}
        with TestClient(create_app(services)) as client:
            for _, params in mix[:20]:  # warm the caches and the prepared statements
                client.get("/api", params={**params, "apikey": key})
            for kind, params in mix:
                started = time.perf_counter()
                response = client.get("/api", params={**params, "apikey": key})
                elapsed = (time.perf_counter() - started) * 1000
                if response.status_code != 200 or b"<rss" not in response.content[:300]:
                    raise RuntimeError(f"{params}: {response.status_code} {response.text[:300]}")
                timings.setdefault(kind, []).append(elapsed)
    finally:
        services.close()
    every = sorted(t for ts in timings.values() for t in ts)
    return {
        "p50": percentile(every, 50),
        "p95": percentile(every, 95),
        "kinds": {
            k: {"p50": percentile(sorted(v), 50), "p95": percentile(sorted(v), 95)}
            for k, v in timings.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="100,000 releases on PostgreSQL, 20,000 on SQLite"
    )
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument(
        "--shuffled", action="store_true", help="posting times in no relation to the storage order"
    )
    args = parser.parse_args()
    pg_rows, sqlite_rows = (100_000, 20_000) if args.quick else (1_000_000, 100_000)
    count = args.queries or (200 if args.quick else 600)
    result: dict[str, Any] = {
        "quick": args.quick,
        "pg_rows": pg_rows,
        "sqlite_rows": sqlite_rows,
        "queries": count,
        "shuffled": args.shuffled,
    }
    with tempfile.TemporaryDirectory(prefix="uibench-search") as folder:
        with postgres_database() as url:
            loaded = load_postgres(url, pg_rows, args.shuffled)
            print(f"postgresql: {pg_rows:,} releases loaded in {loaded:.0f} s", flush=True)
            pg = measure(url, count, Path(folder) / "pg")
        print_figures("postgresql", pg_rows, pg)
        with sqlite_database() as url:
            loaded = load_sqlite(url, sqlite_rows, args.shuffled)
            print(f"sqlite: {sqlite_rows:,} releases loaded in {loaded:.0f} s", flush=True)
            lite = measure(url, count, Path(folder) / "sqlite")
        print_figures("sqlite", sqlite_rows, lite)
    result.update(
        pg_p50_ms_1m=round(pg["p50"], 2),
        pg_p95_ms_1m=round(pg["p95"], 2),
        sqlite_p50_ms_100k=round(lite["p50"], 2),
        sqlite_p95_ms_100k=round(lite["p95"], 2),
        pg_target_p95_ms=50,
        pg_kinds={k: {q: round(v, 2) for q, v in f.items()} for k, f in pg["kinds"].items()},
        sqlite_kinds={k: {q: round(v, 2) for q, v in f.items()} for k, f in lite["kinds"].items()},
    )
    emit(result)


def print_figures(name: str, count: int, figures: dict[str, Any]) -> None:
    out = io.StringIO()
    out.write(f"{name} ({count:,} releases): p50 {figures['p50']:.1f} ms, p95 {figures['p95']:.1f} ms\n")
    for kind, f in sorted(figures["kinds"].items()):
        out.write(f"  {kind:<16} p50 {f['p50']:7.1f} ms  p95 {f['p95']:7.1f} ms\n")
    print(out.getvalue(), end="", flush=True)


if __name__ == "__main__":
    main()

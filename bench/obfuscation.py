"""Obfuscated posts found (issue 16): how well the indexer finds and names the releases the sample news
server posts, per style (named, noisy, PAR2-obfuscated, per-file random names, fully random subjects;
and the cross-posted ones, of any style).

It runs the real pipeline as ``demo`` does: the sample news server (a thread of this process, the
demo's sample at ``--scale``), ``usenet-indexer groups add`` for each sample group, then ``usenet-indexer
run --exit-when-done`` on SQLite in a temporary data directory, with the demo's sizes (ranges, chunks,
a probe pass every 2 s): run ends when every group is indexed and no probe is pending. Then it reads
the catalog and compares it with what the sample posted (``SampleFeed.truth()``), matching catalog
releases to posted ones by the message-ids of their segments.

Per style, of the releases posted:

- **complete as posted**: every part was posted (the sample leaves one part in a thousand out);
- **found once**: exactly one catalog release holds its articles, and it holds no other release's;
- **complete**: found once, and the catalog says it is complete;
- **named right**: every catalog release holding its articles is named as the real name's release
  name (compared as the indexer compares names: case and punctuation aside, ``naming.normalise``);
- **complete and named**: both of the above — the issue's figure, "found complete and correctly
  named as a share of those posted";
- **files right**: found once, and its NZB (``catalog/nzbs.py``, what ``t=get`` serves) names exactly
  the real files: the name a downloader reads from each file's subject, between the first quotes;
- **named wrongly**: some catalog release holding its articles carries a wrong name without saying it
  is obfuscated (``obfuscated`` false): a wrong name given with confidence, the worst outcome.

    uv run python bench/obfuscation.py            # the demo's sample (~360,000 articles), 2 workers
    uv run python bench/obfuscation.py --quick    # a tenth of it

The last line printed is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT), str(ROOT.parent)]

from tests.e2e.processes import settings_env

from _common import cpu_with_reaped, emit
from usenet_indexer.catalog.nzbs import nzb_bytes
from usenet_indexer.indexing import unpack_segments
from usenet_indexer.indexing.naming import clean_name, normalise
from usenet_indexer.indexing.sample import STYLES, TrueRelease
from usenet_indexer.local.demo import DEMO_SETTINGS
from usenet_indexer.newsservers.sample_server import SampleFeed, SampleServer, sample_groups
from usenet_indexer.wire.nzb import NZB_NAMESPACE

CROSS_POSTED = "cross-posted"  # a row of its own: releases of any style posted to two groups
_QUOTED = re.compile(r'"([^"]+)"')


@dataclass
class Indexed:
    """One ``run --exit-when-done``: its SQLite file, seconds, and CPU seconds per process: run's own
    (the coordinator), its workers' (reaped by run: read from run's zombie, as bench/e2e.py does), and
    the sample news server's (a thread of this process, which only waits meanwhile)."""

    database: Path
    seconds: float
    coordinator_s: float
    workers_s: float
    news_server_s: float


def index_sample(feed: SampleFeed, folder: Path, workers: int, *, probe: bool = True) -> Indexed:
    """``groups add`` and ``run --exit-when-done`` against the feed (``probe``: the probe loop on)."""
    database = folder / "catalog.db"
    env = settings_env(f"sqlite:///{database}", folder / "data", **DEMO_SETTINGS, probe_bodies=probe)
    with SampleServer(feed) as server:
        for name in feed.groups:
            subprocess.run(
                [sys.executable, "-m", "usenet_indexer", "groups", "add", name, "--all-history"],
                env=env,
                check=True,
                capture_output=True,
            )
        began = time.monotonic()
        served = time.process_time()
        log = folder / "run.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "usenet_indexer",
                    "run",
                    "--nntp-host=127.0.0.1",
                    f"--nntp-port={server.port}",
                    "--port=0",
                    f"--workers={workers}",
                    f"--batch-articles={DEMO_SETTINGS['range_articles']}",
                    "--exit-when-done",
                    "--view=plain",
                    "--status-seconds=30",
                ],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        # Wait without reaping (WNOWAIT): run's zombie still shows its own CPU and its reaped workers'.
        while os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            if time.monotonic() - began > 1800:
                process.kill()
            time.sleep(0.05)
        seconds = time.monotonic() - began
        times = cpu_with_reaped(process.pid)
        code = process.wait()
        news_server = time.process_time() - served
    if code != 0 or times is None:
        raise SystemExit(f"run failed ({code}):\n{log.read_text()[-4000:]}")
    return Indexed(database, seconds, times[0], times[1], news_server)


@dataclass
class Row:
    key: str
    name: str
    obfuscated: bool
    complete: bool
    columns: dict[str, Any]
    releases: set[str] = field(default_factory=set)  # ids of the posted releases whose articles it holds


def read_catalog(
    database: Path, feed: SampleFeed
) -> tuple[list[Row], dict[str, set[str]], int, dict[str, int]]:
    """The catalog's releases, which posted releases each holds, the rows holding each posted release,
    how many segments matched no posted article, and the probe queue by status."""
    db = sqlite3.connect(database)
    db.row_factory = sqlite3.Row
    try:
        # The probes that name releases apart from the password probes of releases named by their
        # subjects (priority 1, migration 0014; a store from before it has none).
        columns = {str(r[1]) for r in db.execute("PRAGMA table_info(probe_queue)")}
        naming = "WHERE priority = 0" if "priority" in columns else ""
        probes = {
            str(s): int(n)
            for s, n in db.execute(f"SELECT status, count(*) FROM probe_queue {naming} GROUP BY status")
        }
        # What the probes cost: the articles and bytes they fetched (issue 16's "articles per release named").
        articles, fetched = db.execute(
            f"SELECT COALESCE(SUM(articles), 0), COALESCE(SUM(bytes), 0) FROM probe_queue {naming}"
        ).fetchone()
        probes["articles"], probes["bytes"] = int(articles), int(fetched)
        if naming:
            done, articles, fetched, told = db.execute(
                "SELECT count(*), COALESCE(SUM(p.articles), 0), COALESCE(SUM(p.bytes), 0), "
                "COALESCE(SUM(r.password IS NOT NULL), 0) FROM probe_queue p "
                "LEFT JOIN releases r ON r.key = p.release_key WHERE p.priority = 1 AND p.status = 'done'"
            ).fetchone()
            probes |= {
                "password_done": int(done),
                "password_articles": int(articles),
                "password_bytes": int(fetched),
                "password_known": int(told),
            }
        found = db.execute(
            "SELECT key, name, obfuscated, complete, groups, segments, poster, first_date, posted_at, "
            "category FROM releases"
        ).fetchall()
    finally:
        db.close()
    rows: list[Row] = []
    holders: dict[str, set[str]] = defaultdict(set)
    strays = 0
    for r in found:
        row = Row(str(r["key"]), str(r["name"]), bool(r["obfuscated"]), bool(r["complete"]), dict(r))
        for f in unpack_segments(bytes(r["segments"])):
            for message_id in f.message_id_list():
                release = feed.release_of(message_id)
                if release is None:
                    strays += 1
                else:
                    row.releases.add(release)
        for release in row.releases:
            holders[release].add(row.key)
        rows.append(row)
    return rows, holders, strays, probes


def nzb_file_names(row: Row) -> list[str]:
    """The file names a downloader reads from the release's NZB: each file's subject between quotes."""
    root = ET.fromstring(nzb_bytes(row.columns))
    names = []
    for f in root.iter(f"{{{NZB_NAMESPACE}}}file"):
        subject = f.get("subject", "")
        quoted = _QUOTED.search(subject)
        names.append(quoted.group(1) if quoted else subject)
    return names


OUTCOMES = (
    "posted",
    "complete_as_posted",
    "found_once",
    "complete",
    "named_right",
    "complete_and_named",
    "files_right",
    "named_wrongly",
)


def judge(
    truth: list[TrueRelease], rows: list[Row], holders: dict[str, set[str]]
) -> dict[str, dict[str, int]]:
    by_key = {row.key: row for row in rows}
    table: dict[str, dict[str, int]] = {
        style: dict.fromkeys(OUTCOMES, 0) for style in (*STYLES, CROSS_POSTED, "all")
    }
    for t in truth:
        held = [by_key[key] for key in holders.get(t.id, ())]
        once = len(held) == 1 and held[0].releases == {t.id}
        real = normalise(clean_name(t.name))
        outcome = {
            "posted": True,
            "complete_as_posted": t.complete,
            "found_once": once,
            "complete": once and held[0].complete,
            "named_right": bool(held) and all(normalise(row.name) == real for row in held),
            "complete_and_named": once and held[0].complete and normalise(held[0].name) == real,
            "files_right": once and sorted(nzb_file_names(held[0])) == sorted(f.name for f in t.files),
            "named_wrongly": any(normalise(row.name) != real and not row.obfuscated for row in held),
        }
        for style in (t.style, "all", *([CROSS_POSTED] if len(t.groups) > 1 else [])):
            for name, value in outcome.items():
                table[style][name] += int(value)
    return table


HEADS = {
    "posted": "posted",
    "complete_as_posted": "complete posted",
    "found_once": "found once",
    "complete": "complete",
    "named_right": "named right",
    "complete_and_named": "complete+named",
    "files_right": "files right",
    "named_wrongly": "named wrongly",
}


def show(table: dict[str, dict[str, int]]) -> None:
    print(f"{'style':<16}" + "".join(f"{HEADS[name]:>16}" for name in OUTCOMES))
    for style, counts in table.items():
        posted = counts["posted"]
        cells = [f"{posted:>16,}"]
        for name in OUTCOMES[1:]:
            share = 100.0 * counts[name] / posted if posted else 0.0
            cells.append(f"{counts[name]:>9,} {share:5.1f}%")
        print(f"{style:<16}" + "".join(cells))


def per_header(run: Indexed, headers: int) -> dict[str, float]:
    """Core-µs per header posted, per process (and the run's seconds, as ``run_s``)."""
    figures = {
        "coordinator": run.coordinator_s,
        "workers": run.workers_s,
        "news_server": run.news_server_s,
    }
    out = {k: v / headers * 1e6 for k, v in figures.items()}
    out["ours"] = out["coordinator"] + out["workers"]
    out["run_s"] = run.seconds
    return out


def share(counts: dict[str, int], name: str) -> float:
    return round(counts[name] / counts["posted"], 3) if counts["posted"] else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the demo's sample")
    parser.add_argument("--scale", type=float, default=None, help="sample size relative to the demo's")
    parser.add_argument("--workers", type=int, default=2, help="edge worker processes")
    parser.add_argument("--keep", type=Path, default=None, help="copy the catalog (SQLite) to this file")
    parser.add_argument(
        "--probe-compare",
        action="store_true",
        help="run once more first with the probe off (probe_bodies=false): CPU per header, on / off",
    )
    args = parser.parse_args()
    scale = args.scale or (0.1 if args.quick else 1.0)
    began = time.process_time()
    feed = SampleFeed(sample_groups(scale), block_articles=int(DEMO_SETTINGS["chunk_articles"]))
    generated = time.process_time() - began
    truth = feed.truth()
    print(
        f"sample: {feed.articles():,} articles in {len(feed.groups)} groups, {len(truth):,} releases "
        f"(generated in {generated:.2f} s CPU)"
    )
    with tempfile.TemporaryDirectory(prefix="uibench-obfuscation") as tmp:
        if args.probe_compare:  # first, so that the run judged below is the last one (warm caches alike)
            (Path(tmp) / "off").mkdir()
            off = index_sample(feed, Path(tmp) / "off", args.workers, probe=False)
            without = judge(truth, *read_catalog(off.database, feed)[:2])["all"]  # what the probe buys
        indexed = index_sample(feed, Path(tmp), args.workers)
        seconds = indexed.seconds
        rows, holders, strays, probes = read_catalog(indexed.database, feed)
        if args.keep is not None:
            shutil.copyfile(indexed.database, args.keep)
    cpu = {"probe": per_header(indexed, feed.articles())}
    if args.probe_compare:
        cpu["no_probe"] = per_header(off, feed.articles())
    for mode, figures in cpu.items():
        print(
            f"{mode}: core-µs per header: "
            + ", ".join(f"{process} {value:.2f}" for process, value in figures.items() if process != "run_s")
            + f"; run {figures['run_s']:.1f} s"
        )
    if args.probe_compare:
        ratios = {k: cpu["probe"][k] / cpu["no_probe"][k] for k in cpu["probe"] if cpu["no_probe"][k]}
        print("probe on / off: " + ", ".join(f"{k} {v:.2f}" for k, v in ratios.items()))
    table = judge(truth, rows, holders)
    if args.probe_compare:
        print(
            "complete and named, of all posted: probe on "
            f"{table['all']['complete_and_named']:,}, off {without['complete_and_named']:,} "
            f"(of {table['all']['posted']:,}); named wrongly: on {table['all']['named_wrongly']:,}, "
            f"off {without['named_wrongly']:,}"
        )
    mixed = sum(len(row.releases) > 1 for row in rows)
    print(
        f"run --exit-when-done: {seconds:.1f} s, {args.workers} workers; the catalog holds {len(rows):,} "
        f"releases ({mixed:,} of them mixing articles of several posted releases; {strays:,} segments "
        "of no posted release)"
    )
    cost = {key: probes.pop(key) for key in ("articles", "bytes")}
    passwords = {key: probes.pop(key) for key in list(probes) if key.startswith("password_")}
    print(f"probes: {', '.join(f'{n:,} {status}' for status, n in sorted(probes.items())) or 'none'}")
    done = probes.get("done", 0)
    print(
        f"probe cost: {cost['articles']:,} articles, {cost['bytes'] / 1e6:,.1f} MB; "
        f"{cost['articles'] / max(done, 1):.2f} articles a release named"
    )
    if passwords:
        print(
            f"password probes (releases named by their subjects): {passwords['password_done']:,} done, "
            f"{passwords['password_articles']:,} articles, {passwords['password_bytes'] / 1e6:,.1f} MB; "
            f"{passwords['password_articles'] / max(passwords['password_done'], 1):.2f} articles a release; "
            f"password known for {passwords['password_known']:,}"
        )
    probes.update(cost)
    probes.update(passwords)
    print("\nreleases posted, and of them (share of posted):")
    show(table)
    emit(
        {
            "scale": scale,
            "quick": args.quick,
            "articles": feed.articles(),
            "releases_posted": len(truth),
            "catalog_releases": len(rows),
            "catalog_releases_mixed": mixed,
            "run_s": round(seconds, 1),
            # The figure: found once, complete and correctly named, as a share of those posted.
            "ratio_complete_and_named": share(table["all"], "complete_and_named"),
            **{f"complete_and_named_{style}": share(table[style], "complete_and_named") for style in table},
            "named_wrongly": table["all"]["named_wrongly"],
            "probes": probes,
            **({"complete_and_named_probe_off": without["complete_and_named"]} if args.probe_compare else {}),
            "cpu_us_per_header": {mode: {k: round(v, 2) for k, v in f.items()} for mode, f in cpu.items()},
            "styles": table,
        }
    )


if __name__ == "__main__":
    main()

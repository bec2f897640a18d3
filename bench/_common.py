"""Shared by the benchmarks: throw-away databases, percentiles, the closing JSON line."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from usenet_indexer.db import upgrade

TICK = os.sysconf("SC_CLK_TCK")
CORES = os.cpu_count() or 1
PG_ADMIN_URL = os.environ.get("USENET_INDEXER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


@contextmanager
def postgres_database() -> Iterator[str]:
    name = f"uibench_{uuid.uuid4().hex[:10]}"
    base = PG_ADMIN_URL.rpartition("/")[0]
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = f"{base}/{name}"
    try:
        upgrade(url)
        yield url
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@contextmanager
def sqlite_database() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="uibench") as folder:
        url = f"sqlite:///{Path(folder) / 'bench.db'}"
        upgrade(url)
        yield url


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def emit(result: dict[str, Any]) -> None:
    """The last line of every benchmark: one JSON object (bench/run_all.py collects it)."""
    sys.stdout.flush()
    print(json.dumps(result, sort_keys=True), flush=True)


# ---- CPU from /proc: where a benchmark's time went -------------------------------------------


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of one process (its threads, not its children)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK


def cpu_with_reaped(pid: int) -> tuple[float, float] | None:
    """(utime + stime, cutime + cstime) of one process: its own CPU and its children's that it has
    waited for. A zombie still shows both, until its parent reaps it."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK, (int(fields[13]) + int(fields[14])) / TICK


def peak_rss_mb(pid: int) -> float | None:
    """VmHWM (peak resident memory) of a live process, in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                found.append(int(entry.name))
    return found


def machine_ticks() -> tuple[float, float]:
    """(busy, idle) CPU seconds of the whole machine since boot, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values[:8]) - idle) / TICK, idle / TICK


def tree_arguments(
    doc: str | None, rounds: int, quick_rounds: int, what: str
) -> tuple[list[tuple[str, str]], int]:
    """The command line of a bench that runs source trees in turn (an A/B in one run: ``git archive
    <commit> src`` unpacked, its accelerator copied in): ``--rounds``, ``--quick`` and ``--tree
    NAME=SRC``. The source trees (NAME, SRC), this checkout's ``src`` without any, and the rounds to
    run; SystemExit for a tree without the package."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=None, help=f"{what} of each tree (default {rounds})")
    parser.add_argument("--quick", action="store_true", help=f"{quick_rounds} rounds (make bench)")
    parser.add_argument("--tree", action="append", default=[], help="NAME=SRC (repeatable): a source tree")
    args = parser.parse_args()
    chosen = args.rounds if args.rounds is not None else (quick_rounds if args.quick else rounds)
    here = str(Path(__file__).parents[1] / "src")
    trees: list[tuple[str, str]] = []
    for spec in args.tree:
        name, _, source = spec.partition("=")
        trees.append((name, source))
    for name, source in trees:
        if not (Path(source) / "usenet_indexer").is_dir():
            raise SystemExit(f"--tree {name}={source}: no usenet_indexer package there")
    return trees or [("here", here)], int(chosen)

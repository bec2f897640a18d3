"""The whole system (issue 17): headers from the news server to the searchable catalog, as a user runs it.

1. **The corpus.** N bulk articles posted to the test INN2 (scripts/inn2-setup.sh) in a group of their
   own, by streaming (MODE STREAM + TAKETHIS, tests/support/inn2.py: ~18k articles/s). They are
   indexing/sample.py's plan: multi-file rar + par2 sets, music, books, single files in the usual
   subject styles, several posters at once, some parts out of order, some never posted (no
   PAR2-obfuscated sets: their names are in bodies these articles do not carry). The group's
   name carries N and the seed: a later run that finds it holding N articles reuses it (posting 1M
   takes about a minute), and a posting cut short is resumed where it stopped.
2. **The news server's own speed.** A bare OVER reader (bench/fetch.py's: blocking sockets, nothing
   parsed) over 2 connections, the group in chunks of the default ``chunk_articles``: twice before
   each store's run and once after it, the best of the three that run's baseline (``bare_s_sqlite``,
   ``bare_s_pg``; ``bare_s`` the best of all).
3. **The indexer as a user runs it.** ``usenet-indexer groups add GROUP --all-history``, then
   ``usenet-indexer run --exit-when-done --nntp-host … --nntp-port …`` as subprocesses with a data
   directory of their own and default settings (``--port 0`` aside: other sessions may hold the
   default port), on SQLite (the default file in the data directory) and on PostgreSQL (a fresh
   database); the time is the whole command's. Then the catalog must hold every posted article
   exactly once (the message-ids of the releases' segments).

Each run also prints its **phases**, seconds from the command's start (the log's timestamps): the plan,
the first lease, ``auto``'s compression choice (and what it chose: compressed on loopback costs INN2 ~3
times its CPU), the last range done, and the exit.

The coordinator's **fixed cost** (start-up, starting the workers, shutdown) is measured apart, by a
whole run over a corpus of ``FIXED_N`` articles (a group of its own) just before each store's run, and
printed with the run's coordinator CPU per header without it (``…_after_startup``).

CPU per header from /proc, per process: the **coordinator** (run's own process), the **workers** (run's
children: they are reaped by run, so their CPU is read from run's ``cutime + cstime`` while it is a
zombie, before this script reaps it), the **news server** (an nnrpd daemon of this benchmark's own on
a private port with its per-connection children, so that other sessions' readers are not counted; a
reader does not go through innd, printed apart as ``innd``: other sessions post to it meanwhile).
The machine has 2 cores shared with other sessions: wall-clock ratios are noisy, CPU per header is
the steadier figure.

    uv run python bench/e2e.py --quick     # 200,000 articles
    uv run python bench/e2e.py             # 1,000,000
    uv run python bench/e2e.py --stores sqlite
    uv run python bench/e2e.py --stores sqlite --kill 2   # and again with 2 workers SIGKILLed mid-run

``--kill K`` runs each store a second time and SIGKILLs a worker holding a range K times, at evenly
spaced moments of the clean run's time (issue 17: two ``kill -9`` made a 1M run take 150 s instead of
11, its leases waiting out the TTL): it prints that run's time against the clean one's and, per kill,
how long the killed lease stayed held (from the kill to its end in the lease log).

Needs INN2 (scripts/inn2-setup.sh, run here: root) and, for PostgreSQL, the server of the tests. The
last line printed is one JSON object with the figures (unsuffixed per-process figures are SQLite's).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT), str(ROOT.parent)]

from tests.e2e.processes import child, free_port, settings_env
from tests.support import inn2
from tests.support.store import query

import fetch
from _common import children, cpu_with_reaped, emit, peak_rss_mb, postgres_database
from usenet_indexer.db import connect
from usenet_indexer.indexing import sample, unpack_segments

SEED = 17
CHUNK = 20_000  # the default chunk_articles: what the bare reader asks per OVER
CONNECTIONS = 2
# The run that measures the coordinator's fixed cost apart: this few articles' own work is ~0.01 core-s.
FIXED_N = 1_000
_OURS = re.compile(r"<?e2e(\d{8})\.")


def group_name(n: int) -> str:
    return f"alt.binaries.bench.e2e.v3.s{SEED}.n{n}"


def corpus(n: int, group: str, start_time: int) -> Iterator[inn2.Article]:
    """The ``n`` articles, in posting order; the same ones (message-ids, subjects) on every call.

    Every message-id starts with the article's place in this order (``e2e00000042.``), which is how
    the catalog check knows each one without keeping a million of them in memory."""
    rng = random.Random(SEED)
    # One plan for the whole corpus (release names are numbered within a plan: two plans would post
    # releases of the same name and poster, whose parts then merge as reposts), posted a slice of
    # releases at a time (the Posting of a million articles would be a large list).
    releases = []
    names: set[str] = set()
    for release in sample.plan(rng, n // 40 + 100, group):
        # Obfuscated sets left out: their names are in PAR2 bodies, which these articles do not carry,
        # so the probe would retry them for minutes (bench/obfuscation.py measures those). A name
        # planned twice is left out too: the second set's parts are the first's reposted (the same
        # files, the same one-part .par2), and the catalog rightly keeps one of each.
        if release.scheme == "named" and release.collection not in names:
            names.add(release.collection)
            releases.append(release)
    index = 0
    for first in range(0, len(releases), 200):
        batch = releases[first : first + 200]
        posting = sample.post(batch, rng, start_time=start_time + index, duplicate=0.0, cancelled=0.0)
        for article in posting.articles:
            if index == n:
                return
            f = batch[article.release].files[article.file]
            yield inn2.Article(
                message_id=f"<e2e{index:08d}.{article.message_id}>",
                subject=article.subject,
                poster=article.poster,
                body=(
                    f"=ybegin part={article.part} total={f.parts_total} line=128 size={f.part_size} "
                    f"name={f.yenc}\r\n=ypart begin=1 end={article.size}\r\n"
                    f"=yend size={article.size} part={article.part}\r\n"
                ).encode(),
                date=sample._date(article.date),
            )
            index += 1
    raise SystemExit(f"the plan ran out at {index:,} articles, short of {n:,}")


def group_state(group: str) -> tuple[int, int, int] | None:
    """(count, low, high) of the group (GROUP), None when the server has no such group."""
    with socket.create_connection((inn2.HOST, inn2.PLAIN_PORT), timeout=30) as sock:
        reader = sock.makefile("rb")
        reader.readline()
        sock.sendall(f"GROUP {group}\r\nQUIT\r\n".encode())
        parts = reader.readline().split()
        reader.close()
    if parts[0] != b"211":
        return None
    return int(parts[1]), int(parts[2]), int(parts[3])


def ensure_corpus(n: int) -> tuple[str, int, int]:
    """The corpus group, posted as needed; (group, low, high)."""
    group = group_name(n)
    inn2.ensure_inn2([group])
    state = group_state(group)
    have = state[0] if state else 0
    if have > n:
        raise SystemExit(f"{group} holds {have:,} articles, more than {n:,}: remove it (ctlinnd rmgroup)")
    if have < n:
        print(f"posting {n - have:,} articles to {group} (holds {have:,})", flush=True)
        began = time.perf_counter()
        # Dates about one second apart, ending now (as a day's posts would, a little spread out).
        articles = itertools.islice(corpus(n, group, int(time.time()) - n), have, None)
        accepted = inn2.post_articles(group, articles, timeout=120)
        print(f"  posted {accepted:,} in {time.perf_counter() - began:.1f} s", flush=True)
    else:
        print(f"reusing {group}: it holds {n:,} articles", flush=True)
    state = group_state(group)
    assert state is not None and state[0] == n, f"{group}: {state}, expected {n:,} articles"
    return group, state[1], state[2]


# ---- CPU from /proc -----------------------------------------------------------------------------


def news_server_cpu(daemon: int) -> tuple[float, float]:
    """CPU seconds so far of our nnrpd daemon with its children (live and reaped), and of innd."""
    readers = 0.0
    for pid in (daemon, *children(daemon)):
        times = cpu_with_reaped(pid)
        if times is not None:
            readers += sum(times)
    innd = cpu_with_reaped(int(Path("/run/news/innd.pid").read_text().split()[0]))
    return readers, sum(innd) if innd else 0.0


@dataclass
class Run:
    store: str
    seconds: float
    coordinator_s: float
    workers_s: float
    news_server_s: float
    innd_s: float
    peak_rss_mb: float
    articles: int
    held_after_kill_s: list[float]
    worker_stages: dict[str, float]  # the workers' CPU seconds by stage, from their log lines
    phases: dict[str, float]  # seconds from the command's start to each moment of the run (run_phases)
    compression: str | None  # what ``auto`` chose (None: not logged, or not auto)


class Killer:
    """SIGKILLs a worker of ``run`` that holds a range, at each of ``at`` (seconds into the run), and
    measures how long each killed lease stayed held: until the lease log ends it (given back, taken
    over, finished), or the range is leased again."""

    def __init__(self, url: str, supervisor: int, at: list[float]) -> None:
        self.db = connect(url) if at else None
        self.supervisor = supervisor
        self.at = sorted(at)
        self.pending: list[tuple[int, int, float]] = []  # range, epoch, killed at
        self.held_s: list[float] = []

    def poll(self, elapsed: float) -> None:
        if self.db is None:
            return
        if self.at and elapsed >= self.at[0] and self._kill():
            self.at.pop(0)
        for pending in list(self.pending):
            range_id, epoch, killed_at = pending
            ended = query(
                self.db,
                "SELECT 1 FROM lease_log WHERE range_id = :r AND epoch >= :e "
                "AND (epoch > :e OR ended_at IS NOT NULL)",
                {"r": range_id, "e": epoch},
            )
            if ended:
                self.pending.remove(pending)
                self.held_s.append(time.monotonic() - killed_at)

    def _kill(self) -> bool:
        assert self.db is not None
        rows = query(
            self.db,
            "SELECT r.id, r.epoch, n.name FROM ranges r JOIN nodes n ON n.id = r.node_id "
            "WHERE r.status = 'leased' ORDER BY r.id",
        )
        for row in rows:
            slot = int(str(row["name"]).rsplit("-", 1)[1])  # run's workers are <host>-worker-N
            pid = child(self.supervisor, slot)
            if pid is None:
                continue
            os.kill(pid, signal.SIGKILL)
            self.pending.append((int(row["id"]), int(row["epoch"]), time.monotonic()))
            print(f"  killed worker {slot} (pid {pid}) holding range {row['id']}", flush=True)
            return True
        return False

    def close(self) -> None:
        if self.db is not None:
            self.db.close()


def run_indexer(
    store: str,
    url: str,
    data_dir: Path,
    group: str,
    port: int,
    daemon: int,
    n: int,
    compression: str | None,
    kill_at: list[float] | None = None,
    pythonpath: str | None = None,
) -> Run:
    env = settings_env(url, data_dir, **({"nntp_compression": compression} if compression else {}))
    if pythonpath is not None:  # another source tree (bench/coordinator_start.py's baseline)
        env["PYTHONPATH"] = pythonpath
    subprocess.run(
        [sys.executable, "-m", "usenet_indexer", "groups", "add", group, "--all-history"],
        env=env,
        check=True,
        capture_output=True,
    )
    command = [
        sys.executable,
        "-m",
        "usenet_indexer",
        "run",
        "--exit-when-done",
        f"--nntp-host={inn2.HOST}",
        f"--nntp-port={port}",
        "--port=0",
        "--view=plain",
    ]
    log = data_dir / "run.log"
    server_before = news_server_cpu(daemon)
    began = time.perf_counter()
    started = time.time()
    deadline = time.monotonic() + 1800
    peak = 0.0
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    killer = Killer(url, process.pid, kill_at or [])
    # Wait without reaping (WNOWAIT): run's zombie still shows its own CPU and its reaped workers'.
    while os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        peak = max(peak, peak_rss_mb(process.pid) or 0.0)
        if time.monotonic() > deadline:
            process.kill()
            break
        killer.poll(time.perf_counter() - began)
        time.sleep(0.02)
    seconds = time.perf_counter() - began
    killer.poll(seconds)
    killer.close()
    times = cpu_with_reaped(process.pid)
    code = process.wait()
    server, innd = (
        after - before for after, before in zip(news_server_cpu(daemon), server_before, strict=True)
    )
    if code != 0 or times is None:
        raise SystemExit(f"run on {store} ended with {code}:\n{log.read_text()[-4000:]}")
    articles = check_catalog(url, n)
    if killer.at:
        raise SystemExit(f"run on {store} ended before {len(killer.at)} of its kills")
    phases, chosen = run_phases(log, started)
    phases["exit"] = seconds
    return Run(
        store,
        seconds,
        times[0],
        times[1],
        server,
        innd,
        peak,
        articles,
        killer.held_s,
        worker_stages(log),
        phases,
        chosen,
    )


def log_events(log: Path) -> Iterator[dict[str, Any]]:
    """The JSON events of a run's log (its other lines are the plain view's)."""
    for line in log.read_text(errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event


def run_phases(log: Path, started: float) -> tuple[dict[str, float], str | None]:
    """Seconds from the command's start (``started``, wall clock) to the plan, the first lease, the
    compression choice and the last range done, from the log's timestamps; and the mode ``auto``
    chose (a run that read INN2 compressed on loopback spent ~3 times its CPU: say so in the output)."""
    phases: dict[str, float] = {}
    chosen = None
    names = {
        "planner.planned": "planned",
        "lease.granted": "first lease",
        "nntp.compression_chosen": "compression chosen",
    }
    for event in log_events(log):
        stamp = event.get("timestamp")
        if not isinstance(stamp, str):
            continue
        at = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() - started
        name = names.get(str(event.get("event")))
        if name is not None and name not in phases:
            phases[name] = at
        if event.get("event") == "nntp.compression_chosen" and chosen is None:
            chosen = str(event.get("chosen"))
        if event.get("event") == "range.done":
            phases["last range done"] = at
    return phases, chosen


def worker_stages(log: Path) -> dict[str, float]:
    """The workers' CPU seconds by stage, added up from their log lines: each process's start-up
    (``edge.indexing``) and each range's inflate, index, take and encode (``range.done``)."""
    stages = dict.fromkeys(("start-up", "inflate", "index", "take", "encode"), 0.0)
    for event in log_events(log):
        if event.get("event") == "edge.indexing":
            stages["start-up"] += float(event.get("startup_cpu", 0.0))
        elif event.get("event") == "range.done":
            for stage, seconds in event.get("cpu", {}).items():
                stages[stage] += float(seconds)
    return stages


def check_catalog(url: str, n: int) -> int:
    """Every posted article in the catalog's releases exactly once; how many it holds."""
    seen = bytearray(n)
    duplicates = strays = held = 0
    db = connect(url)
    try:
        for row in query(db, "SELECT segments FROM releases"):
            for f in unpack_segments(bytes(row["segments"])):
                for message_id in f.message_id_list():
                    held += 1
                    match = _OURS.match(message_id)
                    if match is None or int(match.group(1)) >= n:
                        strays += 1
                    elif seen[int(match.group(1))]:
                        duplicates += 1
                    else:
                        seen[int(match.group(1))] = 1
    finally:
        db.close()
    missing = n - sum(seen)
    if missing or duplicates or strays:
        first_missing = [index for index, flag in enumerate(seen) if not flag][:5]
        raise SystemExit(
            f"the catalog holds {held:,} segments: {missing:,} posted articles missing (in posting order: "
            f"{first_missing}…), {duplicates:,} held twice, {strays:,} not posted"
        )
    return held


# ---- main ---------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="200,000 articles (default 1,000,000)")
    parser.add_argument("--articles", type=int, default=None, help="articles in the corpus")
    parser.add_argument("--keep", action="store_true", help="keep the data directories and logs")
    parser.add_argument(
        "--nntp-compression",
        default=None,
        help="the run's nntp_compression (default: the default, auto; deflate is what auto did before "
        "issue 17 with INN2)",
    )
    parser.add_argument(
        "--stores", nargs="+", choices=("sqlite", "postgresql"), default=["sqlite", "postgresql"]
    )
    parser.add_argument(
        "--kill", type=int, default=0, metavar="K", help="run each store again with K workers SIGKILLed"
    )
    args = parser.parse_args()
    n = args.articles or (200_000 if args.quick else 1_000_000)
    group, low, high = ensure_corpus(n)
    small, _, _ = ensure_corpus(FIXED_N)
    result: dict[str, object] = {"n": n, "group": group, "nntp_compression": args.nntp_compression or "auto"}
    keep = contextlib.nullcontext(tempfile.mkdtemp(prefix="uibench-e2e")) if args.keep else None
    with keep or tempfile.TemporaryDirectory(prefix="uibench-e2e") as folder:
        if args.keep:
            print(f"data directories and logs kept in {folder}", flush=True)
        port = free_port()
        daemon = inn2.ReaderDaemon(port, Path(folder) / "nnrpd.log")
        daemon.start()
        try:
            assert daemon.pgid is not None
            chunks = fetch.chunks_of(high, CHUNK)
            chunks = [(max(first, low), last) for first, last in chunks if last >= low]

            def bare(times: int) -> list[tuple[float, float]]:
                """The bare reader ``times`` over: (seconds, the news server's core-seconds) each."""
                assert daemon.pgid is not None
                readings = []
                for _ in range(times):
                    server_before = news_server_cpu(daemon.pgid)
                    seconds, lines = fetch.run_bare(CONNECTIONS, chunks, False, group, port)
                    if lines != n:
                        raise SystemExit(f"the bare reader got {lines:,} overview lines, expected {n:,}")
                    readings.append((seconds, news_server_cpu(daemon.pgid)[0] - server_before[0]))
                return readings

            baselines: list[float] = []
            for store in args.stores:

                def run_on(
                    data_dir: Path,
                    kill_at: list[float] | None = None,
                    store: str = store,
                    group: str = group,
                    n: int = n,
                ) -> Run:
                    assert daemon.pgid is not None
                    if store == "sqlite":
                        url = f"sqlite:///{data_dir / 'usenet-indexer.db'}"
                        return run_indexer(
                            store, url, data_dir, group, port, daemon.pgid, n, args.nntp_compression, kill_at
                        )
                    with postgres_database() as url:
                        return run_indexer(
                            store, url, data_dir, group, port, daemon.pgid, n, args.nntp_compression, kill_at
                        )

                fixed = run_on(Path(folder) / f"{store}-fixed", group=small, n=FIXED_N)
                before = bare(2)
                run = run_on(Path(folder) / store)
                readings = before + bare(1)
                report_bare(readings, n, store, result)
                baselines.append(min(readings)[0])
                report(run, n, baselines[-1], result)
                report_fixed(fixed, run, n, result)
                if args.kill:
                    at = [run.seconds * (i + 1) / (args.kill + 1) for i in range(args.kill)]
                    killed = run_on(Path(folder) / f"{store}-kill", at)
                    report_kills(killed, run, n, result)
        finally:
            daemon.stop()
    result["bare_s"] = round(min(baselines), 2)
    if "sqlite" in args.stores:
        for key in (
            "us_per_header_coordinator",
            "us_per_header_coordinator_after_startup",
            "coordinator_fixed_s",
            "us_per_header_workers",
            "us_per_header_news_server",
            "us_per_header_ours",
            "edge_cores_per_coordinator_core",
            "coordinator_peak_rss_mb",
        ):
            result[key] = result[f"{key}_sqlite"]
    emit(result)


def report_fixed(fixed: Run, run: Run, n: int, result: dict[str, object]) -> None:
    """The coordinator's fixed cost (a whole run over FIXED_N articles: start-up, the workers started,
    shutdown), and its CPU per header without it: a one-shot run's ~1 core-s of start-up is by itself
    1 µs a header at 1,000,000, and a long-running coordinator pays it once."""
    suffix = "sqlite" if run.store == "sqlite" else "pg"
    after = (run.coordinator_s - fixed.coordinator_s) / n * 1e6
    print(
        f"  coordinator's fixed cost (a whole run over {FIXED_N:,} articles): {fixed.coordinator_s:.2f} "
        f"core-s; the run's coordinator without it: {after:.2f} core-µs per header",
        flush=True,
    )
    result[f"coordinator_fixed_s_{suffix}"] = round(fixed.coordinator_s, 3)
    result[f"us_per_header_coordinator_after_startup_{suffix}"] = round(after, 2)


def report_kills(killed: Run, clean: Run, n: int, result: dict[str, object]) -> None:
    suffix = "sqlite" if killed.store == "sqlite" else "pg"
    kills = len(killed.held_after_kill_s)
    held = ", ".join(f"{s:.2f}" for s in killed.held_after_kill_s)
    print(
        f"run on {killed.store} with {kills} workers SIGKILLed: {killed.seconds:.2f} s "
        f"({killed.seconds / clean.seconds:.2f} × the clean run's {clean.seconds:.2f} s); each killed "
        f"lease held for {held} s after its kill; catalog holds all {killed.articles:,} articles once",
        flush=True,
    )
    result[f"run_s_{suffix}_kill{kills}"] = round(killed.seconds, 2)
    result[f"kill_ratio_{suffix}"] = round(killed.seconds / clean.seconds, 2)
    result[f"held_after_kill_s_{suffix}"] = [round(s, 2) for s in killed.held_after_kill_s]


def report_bare(readings: list[tuple[float, float]], n: int, store: str, result: dict[str, object]) -> None:
    """The bare reader around one store's run (two readings before it, one after): its best is that
    run's baseline. One reading at the start swung 1.13-2.71 s between consecutive runs on a shared
    machine (session 12), so a run is measured against readings taken beside it, and their spread is
    printed with them."""
    suffix = "sqlite" if store == "sqlite" else "pg"
    bare_s, bare_server = min(readings)
    spread = ", ".join(f"{seconds:.2f}" for seconds, _ in readings)
    print(
        f"bare OVER reader around the {store} run, {CONNECTIONS} connections: best {bare_s:.2f} s "
        f"({n / bare_s:,.0f} headers/s) of {spread} s; news server {bare_server / n * 1e6:.2f} "
        "core-µs/header",
        flush=True,
    )
    result[f"bare_s_{suffix}"] = round(bare_s, 2)
    result[f"bare_readings_s_{suffix}"] = [round(seconds, 2) for seconds, _ in readings]
    result[f"us_per_header_news_server_bare_{suffix}"] = round(bare_server / n * 1e6, 2)


def report(run: Run, n: int, bare_s: float, result: dict[str, object]) -> None:
    suffix = "sqlite" if run.store == "sqlite" else "pg"
    per = {
        "coordinator": run.coordinator_s / n * 1e6,
        "workers": run.workers_s / n * 1e6,
        "news_server": run.news_server_s / n * 1e6,
        "innd": run.innd_s / n * 1e6,
    }
    edge_per_coordinator = run.workers_s / run.coordinator_s if run.coordinator_s else float("inf")
    print(
        f"run on {run.store}: {run.seconds:.2f} s ({n / run.seconds:,.0f} headers/s), "
        f"{run.seconds / bare_s:.2f} × the bare reader; core-µs per header: coordinator "
        f"{per['coordinator']:.2f}, workers {per['workers']:.2f}, news server {per['news_server']:.2f} "
        f"(innd {per['innd']:.2f}); "
        f"edge cores per coordinator core {edge_per_coordinator:.2f}; coordinator peak RSS "
        f"{run.peak_rss_mb:.0f} MB; catalog holds all {run.articles:,} articles once",
        flush=True,
    )
    stages = {stage: seconds / n * 1e6 for stage, seconds in run.worker_stages.items()}
    rest = per["workers"] - sum(stages.values())
    print(
        "  workers' core-µs per header by stage: "
        + ", ".join(f"{stage} {value:.2f}" for stage, value in stages.items())
        + f", the rest {rest:.2f} (streams, HTTP, threads, exit)",
        flush=True,
    )
    order = sorted(run.phases.items(), key=lambda item: item[1])
    print(
        "  phases, seconds from the command's start: "
        + ", ".join(f"{name} {at:.2f}" for name, at in order)
        + (f"; auto chose {run.compression}" if run.compression else ""),
        flush=True,
    )
    result[f"phases_s_{suffix}"] = {name: round(at, 2) for name, at in order}
    result[f"compression_chosen_{suffix}"] = run.compression
    result[f"us_per_header_worker_stages_{suffix}"] = {
        **{stage: round(value, 2) for stage, value in stages.items()},
        "rest": round(rest, 2),
    }
    result[f"run_s_{suffix}"] = round(run.seconds, 2)
    result[f"ratio_{suffix}"] = round(run.seconds / bare_s, 2)
    for name, value in per.items():
        result[f"us_per_header_{name}_{suffix}"] = round(value, 2)
    result[f"us_per_header_ours_{suffix}"] = round(per["coordinator"] + per["workers"], 2)
    result[f"edge_cores_per_coordinator_core_{suffix}"] = round(edge_per_coordinator, 2)
    result[f"coordinator_peak_rss_mb_{suffix}"] = round(run.peak_rss_mb)


if __name__ == "__main__":
    main()

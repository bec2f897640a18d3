"""``usenet-indexer run`` as a user runs it, against the sample news server: Ctrl-C (SIGINT) in the middle
gives every range back and keeps every stored batch, and a second ``run`` finishes with the same
catalog as a run never interrupted — on SQLite and on PostgreSQL."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.processes import reaped, settings_env, supervised_by
from tests.support.generated import stored_catalog
from tests.support.store import query
from usenet_indexer.db import connect
from usenet_indexer.leases.audit import audit
from usenet_indexer.newsservers.fake_server import Script
from usenet_indexer.newsservers.sample_server import SampleFeed, SampleServer, sample_groups

pytestmark = pytest.mark.slow

SIZES = {
    "range_articles": 10_000,
    "chunk_articles": 2_000,
    "planner_period_seconds": 5,
    "probe_period_seconds": 1,
    "prefetch_idle_seconds": 0.3,
    "nntp_connections": 2,
}
SCALE = 0.15  # ~50,000 articles in the three sample groups


@pytest.fixture(scope="module")
def feed() -> SampleFeed:
    return SampleFeed(sample_groups(SCALE), block_articles=int(SIZES["chunk_articles"]))


@pytest.fixture
def slow_server(feed: SampleFeed) -> Iterator[SampleServer]:
    # Each overview reply a little late: the workers are paced by the prefetcher, so the run lasts
    # long enough to be interrupted in its middle.
    with SampleServer(feed, script=Script(reply_delay=0.25)) as server:
        yield server


@pytest.fixture
def fast_server(feed: SampleFeed) -> Iterator[SampleServer]:
    with SampleServer(feed) as server:
        yield server


def start_run(
    database_url: str, data_dir: Path, news_port: int, log: Path, *extra: str, **settings: object
) -> subprocess.Popen[bytes]:
    """``run`` with the test's sizes (``settings`` added to them, or replacing them)."""
    env = settings_env(database_url, data_dir, **{**SIZES, **settings})
    command = [
        sys.executable,
        "-m",
        "usenet_indexer",
        "run",
        "--nntp-host=127.0.0.1",
        f"--nntp-port={news_port}",
        "--port=0",
        "--workers=2",
        "--batch-articles=2000",
        "--view=plain",
        "--status-seconds=1",
        *extra,
    ]
    with log.open("ab") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)


def add_groups(database_url: str, data_dir: Path, feed: SampleFeed) -> None:
    env = settings_env(database_url, data_dir, **SIZES)
    for name in feed.groups:
        subprocess.run(
            [sys.executable, "-m", "usenet_indexer", "groups", "add", name, "--all-history"],
            env=env,
            check=True,
            capture_output=True,
        )


def finish(process: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    try:
        code = process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)
        raise AssertionError(f"run did not end within {timeout:.0f} s:\n{log.read_text()[-4000:]}") from None
    assert code == 0, log.read_text()[-4000:]


def counts(database_url: str) -> dict[str, int]:
    db = connect(database_url)
    try:
        rows = query(db, "SELECT status, count(*) AS n FROM ranges GROUP BY status")
        batches = query(db, "SELECT count(*) AS n FROM batch_log")[0]["n"]
    finally:
        db.close()
    return {**{str(r["status"]): int(r["n"]) for r in rows}, "batches": int(batches)}


def catalog_and_audit(database_url: str, ttl: float = 120.0) -> dict[str, dict[str, object]]:
    db = connect(database_url)
    try:
        report = audit(db, ttl=ttl, max_per_group=2)
        assert report.ok, report.problems
        return stored_catalog(db)
    finally:
        db.close()


@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_run_interrupted_by_ctrl_c_resumes_to_the_same_catalog(
    store: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    feed: SampleFeed,
    slow_server: SampleServer,
    fast_server: SampleServer,
) -> None:
    if store == "sqlite":
        urls = [f"sqlite:///{tmp_path / name}.db" for name in ("interrupted", "reference")]
    else:
        template = request.getfixturevalue("pg_template")
        contexts = [template.database(), template.database()]
        urls = [context.__enter__() for context in contexts]
        request.addfinalizer(lambda: [context.__exit__(None, None, None) for context in contexts])
    interrupted, reference = urls
    for url, folder in ((interrupted, "a"), (reference, "b")):
        add_groups(url, tmp_path / folder, feed)

    # Interrupted: SIGINT once a few batches are stored, long before the end.
    log = tmp_path / "interrupted.log"
    with reaped(start_run(interrupted, tmp_path / "a", slow_server.port, log)) as first:
        deadline = time.monotonic() + 120
        while counts(interrupted).get("batches", 0) < 3:
            assert first.poll() is None, log.read_text()[-4000:]
            assert time.monotonic() < deadline, f"no batches stored:\n{log.read_text()[-4000:]}"
            time.sleep(0.05)
        first.send_signal(signal.SIGINT)
        finish(first, log, 60)
    after = counts(interrupted)
    assert after.get("leased", 0) == 0, after  # every range given back
    assert after.get("planned", 0) > 0, f"the run was not interrupted in its middle: {after}"
    output = log.read_text()
    assert "stopping: the workers give their ranges back" in output
    assert "run `usenet-indexer run` again" in output
    db = connect(interrupted)
    try:
        assert stored_catalog(db)  # what the first run stored is kept
    finally:
        db.close()

    # Resumed: to the end.
    second = start_run(
        interrupted, tmp_path / "a", fast_server.port, tmp_path / "resumed.log", "--exit-when-done"
    )
    finish(second, tmp_path / "resumed.log", 180)
    assert "all caught up" in (tmp_path / "resumed.log").read_text()

    # Never interrupted.
    third = start_run(
        reference, tmp_path / "b", fast_server.port, tmp_path / "reference.log", "--exit-when-done"
    )
    finish(third, tmp_path / "reference.log", 180)

    resumed, expected = catalog_and_audit(interrupted), catalog_and_audit(reference)
    assert counts(interrupted).get("planned", 0) == 0
    assert len(resumed) == len(expected) > 100
    assert resumed == expected
    # Obfuscated releases were named by the probe in both (the PAR2 index files name them).
    db = connect(interrupted)
    try:
        named = query(db, "SELECT count(*) AS n FROM releases WHERE name_source = 'par2'")
    finally:
        db.close()
    assert named[0]["n"] > 0


def test_workers_do_not_outlive_a_killed_run(
    tmp_path: Path, feed: SampleFeed, slow_server: SampleServer
) -> None:
    """``run`` killed outright (SIGKILL: no clean stop) leaves no worker behind retrying its coordinator."""
    url = f"sqlite:///{tmp_path / 'killed.db'}"
    add_groups(url, tmp_path / "k", feed)
    log = tmp_path / "killed.log"
    with reaped(start_run(url, tmp_path / "k", slow_server.port, log)) as process:
        deadline = time.monotonic() + 60
        while counts(url).get("leased", 0) == 0:
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-4000:]
            time.sleep(0.05)
        workers = supervised_by(process.pid)
        assert len(workers) == 2
        process.kill()
        process.wait(10)
    deadline = time.monotonic() + 20
    while supervised_by(process.pid):
        assert time.monotonic() < deadline, f"workers still running: {supervised_by(process.pid)}"
        time.sleep(0.2)


def test_a_second_run_of_the_machine_on_one_database_refuses_to_start(
    tmp_path: Path, feed: SampleFeed, slow_server: SampleServer
) -> None:
    """A second ``run`` on the database a running one uses (another data directory, the same
    PostgreSQL, or the same SQLite file) would replace the first's workers' tokens and give their
    leases back: it refuses, and the first goes on."""
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    add_groups(url, tmp_path / "a", feed)
    log = tmp_path / "first.log"
    with reaped(start_run(url, tmp_path / "a", slow_server.port, log)) as first:
        deadline = time.monotonic() + 120
        while counts(url).get("batches", 0) < 1:
            assert first.poll() is None and time.monotonic() < deadline, log.read_text()[-4000:]
            time.sleep(0.05)
        second_log = tmp_path / "second.log"
        started = start_run(url, tmp_path / "b", slow_server.port, second_log, "--exit-when-done")
        with reaped(started) as second:
            code = second.wait(120)
        refused = second_log.read_text()
        assert code != 0, refused[-3000:]
        assert "another `usenet-indexer run` on this machine uses this database" in refused
        # Nothing given back on the refused run's behalf: its server never served, and its supervisor
        # used to retry each exited worker's give-back against the closed socket (15 s, not 4).
        assert "edge.node_leases_failed" not in refused and "edge.give_back_failed" not in refused
        deadline = time.monotonic() + 180
        while set(counts(url)) - {"batches"} != {"done"}:  # the first goes on to the end, its tokens kept
            assert first.poll() is None and time.monotonic() < deadline, log.read_text()[-4000:]
            time.sleep(0.1)
        first.send_signal(signal.SIGINT)
        finish(first, log, 60)
    db = connect(url)
    try:
        assert audit(db, ttl=120.0, max_per_group=2).ok
        assert query(db, "SELECT count(*) AS n FROM lease_log WHERE end_reason = 'reclaimed'") == [{"n": 0}]
    finally:
        db.close()

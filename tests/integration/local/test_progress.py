"""What `run` shows and when it stops: progress read from the store (both dialects), its rates, the
done rule, node tokens reissued at every start, and the view rendered to text."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from rich.console import Console

from tests.support.store import query, services_for
from usenet_indexer.coordinator.registries.nodes import Unauthorized
from usenet_indexer.local.live import render
from usenet_indexer.local.progress import (
    GroupProgress,
    Lane,
    ProgressReader,
    Snapshot,
    WorkerProgress,
    _Rates,
)
from usenet_indexer.local.view import plain_lines

GROUP = "alt.binaries.progress"


def test_progress_from_the_store(database_url: str, tmp_path: Path) -> None:
    services = services_for(database_url, tmp_path)
    reader = ProgressReader(services, {"w-1"})
    services.groups.add(GROUP)
    snapshot = reader.read()
    (group,) = snapshot.groups
    assert not group.planned and not snapshot.done  # not read from the news server yet
    services.groups.plan(GROUP, 1, 2_500)
    node_id, token = services.nodes.issue("w-1")
    lease = services.ranges.lease(node_id)
    assert lease is not None
    query(
        services.db,
        "INSERT INTO batch_log (range_id, epoch, node_id, from_id, to_id, headers, result, stored_at) "
        "VALUES (:r, :e, :n, :f, :t, 300, '{\"new\": 12}', :now)",
        {
            "r": lease.range_id,
            "e": lease.epoch,
            "n": node_id,
            "f": lease.start,
            "t": lease.start + 299,
            "now": time.time(),
        },
    )
    query(services.db, "UPDATE ranges SET next_id = start_id + 300 WHERE id = :id", {"id": lease.range_id})
    snapshot = reader.read()
    (group,) = snapshot.groups
    assert group.history.articles == 2_500 and group.history.read == 300
    assert group.releases == 12
    assert snapshot.average_rate > 0  # 300 articles since the first read
    assert group.pending_ranges == 3 and not snapshot.done
    assert [(w.name, w.headers, w.live_leases) for w in snapshot.workers] == [("w-1", 300, 1)]
    # Everything done, nothing to probe: done.
    query(services.db, "UPDATE ranges SET status = 'done', next_id = end_id + 1")
    assert reader.read().done
    # A release named by its subject whose password is still to be read: shown, not waited for.
    query(
        services.db,
        "INSERT INTO probe_queue (release_key, par2_message_id, archive_message_id, priority, status, "
        " attempts, created_at, updated_at) VALUES ('p', '', 'a@x', 1, 'queued', 0, :now, :now)",
        {"now": time.time()},
    )
    snapshot = reader.read()
    assert snapshot.done and snapshot.passwords_pending == 1 and snapshot.probes_pending == 0
    query(
        services.db,
        "INSERT INTO probe_queue (release_key, par2_message_id, status, attempts, created_at, updated_at) "
        "VALUES ('k', 'm@x', 'queued', 0, :now, :now)",
        {"now": time.time()},
    )
    assert not reader.read().done  # an obfuscated release still to be named
    services.settings.probe_bodies = False  # no probe loop runs: nothing queued is waited for
    assert reader.read().done
    services.settings.probe_bodies = True
    # A node's token is reissued: the old one stops working.
    again_id, again = services.nodes.issue("w-1")
    assert again_id == node_id and again != token
    with pytest.raises(Unauthorized):
        services.nodes.authenticate(token)
    assert services.nodes.authenticate(again) == node_id
    services.close()


def test_rates_over_a_sliding_window() -> None:
    rates = _Rates(window=10.0)
    assert rates.add(0.0, {"a": 0.0})("a") == 0.0
    assert rates.add(2.0, {"a": 200.0})("a") == pytest.approx(100.0)
    rate = rates.add(4.0, {"a": 200.0, "b": 50.0})
    assert rate("a") == pytest.approx(50.0) and rate("b") == pytest.approx(12.5)  # b from nothing
    rates.add(20.0, {"a": 1200.0, "b": 50.0})
    # The base is the newest sample at least a window old: 4.0, not 0.0 or 2.0.
    assert rates.add(22.0, {"a": 1400.0, "b": 50.0})("a") == pytest.approx(1200.0 / 18)


def snapshot(done: bool) -> Snapshot:
    lane = Lane(ranges=3, articles=120_000, read=120_000 if done else 45_000, rate=0 if done else 61_000)
    group = GroupProgress(
        id=1,
        name=GROUP,
        enabled=True,
        low=1,
        high=120_000,
        error=None,
        statuses={"done": 3} if done else {"done": 1, "leased": 1, "planned": 1},
        tail=Lane(),
        history=lane,
        releases=321,
    )
    unplanned = GroupProgress(2, "alt.binaries.new", True, None, None, None, {}, Lane(), Lane(), 0)
    workers = [WorkerProgress("host-worker-1", 1, 45_000, 61_000.0, None)]
    return Snapshot(
        at=0.0,
        groups=[group] if done else [group, unplanned],
        workers=workers,
        releases=321,
        complete=100,
        probes={} if done else {"queued": 4},
    )


def test_the_live_view_renders_groups_workers_and_totals() -> None:
    console = Console(record=True, width=160, color_system=None)
    console.print(render(snapshot(False), ["usenet-indexer: web UI at http://127.0.0.1:8710/"]))
    text = console.export_text()
    row = next(line for line in text.splitlines() if GROUP in line)
    assert "38% 45,000/120,000" in row and "61k/s" in row and "321" in row and "2 ranges left" in row
    assert "asking the news server" in text  # a group not planned yet
    assert "host-worker-1" in text and "61k/s" in text.split("host-worker-1", 1)[1]
    assert "4 obfuscated releases to probe" in text
    assert "all caught up" not in text
    console = Console(record=True, width=160, color_system=None)
    console.print(render(snapshot(True), []))
    assert "all caught up" in console.export_text()


def test_plain_lines() -> None:
    lines = plain_lines(snapshot(False))
    assert lines[0].startswith(f"group {GROUP}: history=45,000/120,000(38%,61k/s) releases=321")
    assert "nothing planned yet" in lines[1]
    assert (
        lines[-1].startswith("total: read=45,000 rate=61k/s releases=321")
        and "host-worker-1 61k/s" in lines[-1]
    )
    assert plain_lines(snapshot(True))[-1].endswith("(all caught up)")


def test_the_dashboard_and_runs_view_count_probes_alike(database_url: str, tmp_path: Path) -> None:
    """One progress model (coordinator/progress.py): the dashboard reads the probes with what they
    fetched, `run`'s view only counts them (a quarter of the cost); the counts are the same."""
    from usenet_indexer.coordinator.progress import read_progress

    services = services_for(database_url, tmp_path)
    rows = [  # (key, priority, status)
        ("a", 0, "queued"),
        ("b", 0, "working"),
        ("c", 0, "done"),
        ("d", 0, "failed"),
        ("e", 1, "queued"),
        ("f", 1, "done"),
        ("g", 1, "done"),
    ]
    for key, priority, status in rows:
        query(
            services.db,
            "INSERT INTO probe_queue (release_key, par2_message_id, archive_message_id, priority, "
            " status, attempts, articles, created_at, updated_at)"
            " VALUES (:k, 'm@x', 'a@x', :p, :s, 0, 2, :now, :now)",
            {"k": key, "p": priority, "s": status, "now": time.time()},
        )
    read = []
    for costs in (True, False):
        with services.db.transaction(write=False) as tx:
            read.append(read_progress(tx, [], ttl=60.0, window=300.0, costs=costs).probes)
    dashboard, view = read
    counts = ("named", "pending", "failed", "passwords", "names", "passwords_pending")
    assert [getattr(dashboard, c) for c in counts] == [getattr(view, c) for c in counts]
    assert (view.named, view.pending, view.failed, view.passwords, view.passwords_pending) == (1, 3, 1, 2, 1)
    assert view.names == {"queued": 1, "working": 1, "done": 1, "failed": 1}
    assert dashboard.articles == 14 and view.articles == 0  # what probes fetched: the dashboard's only
    services.close()

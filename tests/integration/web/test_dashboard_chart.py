"""The dashboard's headers/s over the last hour, per group, from the batches a worker really stored
(the lease and batch path, the store's clock moved between them), on both stores: the figures, and
the chart in the page."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient

from tests.integration.web.conftest import GROUP
from tests.support.store import query
from usenet_indexer.coordinator.http.charts import CHART_BUCKETS, CHART_WINDOW_SECONDS
from usenet_indexer.coordinator.http.dashboard import dashboard
from usenet_indexer.coordinator.wiring import Services

IDLE = "alt.binaries.idle"
BUCKET = CHART_WINDOW_SECONDS / CHART_BUCKETS


def work_a_lease(services: Services) -> tuple[int, list[tuple[float, int]]]:
    """A node leases a range of GROUP and stores three batches, 40 s apart (the test TTL is 60 s);
    the range's id and (stored_at, headers) of each batch."""
    services.groups.add(GROUP)
    services.groups.add(IDLE)
    services.groups.plan(GROUP, 1, 5_999)
    node_id = services.nodes.authenticate(services.nodes.add("edge-chart")[1])
    lease = services.ranges.lease(node_id)
    assert lease is not None and lease.end - lease.start + 1 >= 550
    stored: list[tuple[float, int]] = []
    at = lease.start
    for headers, articles in ((120, 150), (300, 300), (60, 100)):
        services.db.move_clock(40.0)
        services.ranges.commit_batch(lease.range_id, node_id, lease.epoch, at, at + articles - 1, headers)
        at += articles
        row = query(
            services.db,
            "SELECT max(stored_at) AS t FROM batch_log WHERE range_id = :r",
            {"r": lease.range_id},
        )
        stored.append((float(row[0]["t"]), headers))
    # A batch of an earlier lease of the range, two hours ago: not in the hour.
    query(
        services.db,
        "INSERT INTO batch_log (range_id, epoch, node_id, from_id, to_id, headers, result, stored_at) "
        "VALUES (:r, 0, :n, :f, :f, 1, '{}', :t)",
        {"r": lease.range_id, "n": node_id, "f": lease.start, "t": services.db.now() - 7200},
    )
    return lease.range_id, stored


def test_headers_per_second_come_from_the_stored_batches(services: Services) -> None:
    _, stored = work_a_lease(services)
    board = dashboard(services)
    by_name = {g.summary.name: g for g in board.groups}
    rates = by_name[GROUP].rate.rates
    assert len(rates) == CHART_BUCKETS
    # Every header of the hour is drawn, once: the batch of two hours ago is not.
    assert sum(rates) * BUCKET == pytest.approx(sum(h for _, h in stored))
    # Each batch is spread over the 40 s since the one before (the first since its lease's grant):
    # the busiest 40 s read 300 headers, 7.5 a second, and no minute holds more than two batches' worth.
    assert 0 < by_name[GROUP].rate.peak <= (300 + 120) / BUCKET
    # All of it within the last 5 minutes (120 s of work), so "now" is their mean over 5 min.
    assert by_name[GROUP].rate.recent == pytest.approx(480 / 300)
    assert sum(1 for r in rates if r > 0) in (2, 3, 4)  # 120 s of work over 2 or 3 minutes (+ edges)
    assert by_name[IDLE].rate.peak == 0


def test_the_dashboard_draws_each_groups_chart(services: Services, client: TestClient) -> None:
    work_a_lease(services)
    peak = {g.summary.name: g for g in dashboard(services).groups}[GROUP].rate.peak
    page = client.get("/")
    assert page.status_code == 200
    charts = re.findall(r'<svg [^>]*class="rate-chart"[^>]*aria-label="([^"]*)"', page.text)
    assert len(charts) == 2
    labels = {html.unescape(label).split(":")[0]: html.unescape(label) for label in charts}
    figures = re.fullmatch(
        rf"{re.escape(GROUP)}: 1\.6 headers/s over the last 5 min, peak ([\d.]+) headers/s in the last hour",
        labels[GROUP],
    )
    assert figures is not None, labels[GROUP]
    # (The page's hour ends a moment after the one read above: the minutes' edges moved by that much.)
    assert float(figures.group(1)) == pytest.approx(peak, abs=0.1)
    assert labels[IDLE] == f"{IDLE}: no headers in the last hour"
    busy = page.text.split(f"<title>{GROUP}:")[1].split("</svg>")[0]
    assert 2 <= busy.count("<rect ") <= 4
    assert "<script" not in page.text
    # The page still refreshes itself (no script): the chart is new on every load.
    assert '<meta http-equiv="refresh" content="15">' in page.text


def test_each_bar_label_is_clipped_to_what_is_behind_it(services: Services, client: TestClient) -> None:
    """The dark copy over the track, the light one over the fill: the two clips meet at the fill's
    edge, for bars not begun, part done and done."""
    services.groups.add(GROUP)
    services.groups.add(IDLE)
    services.groups.plan(GROUP, 1, 3_000)  # history: part read
    services.groups.plan(GROUP, 1, 3_100)  # tail: all read
    services.groups.plan(IDLE, 1, 1_000)  # history: none read
    first = query(
        services.db, "SELECT min(id) AS id FROM ranges WHERE priority >= 0 AND end_id - start_id > 250"
    )[0]["id"]
    query(services.db, "UPDATE ranges SET next_id = start_id + 250 WHERE id = :id", {"id": first})
    query(services.db, "UPDATE ranges SET status = 'done', next_id = end_id + 1 WHERE priority < 0")
    page = client.get("/").text
    bars = re.findall(
        r'<div class="bar"[^>]*><span style="width: ([\d.]+)%"></span>'
        r'<em style="clip-path: inset\(0 0 0 ([\d.]+)%\)">([^<]*)</em>'
        r'<em class="on-fill" aria-hidden="true" style="clip-path: inset\(0 ([\d.]+)% 0 0\)">'
        r"([^<]*)</em></div>",
        page,
    )
    assert bars, page
    for width, track_left, text, fill_right, copy in bars:
        assert float(track_left) == float(width)
        assert float(fill_right) == pytest.approx(100 - float(width), abs=0.05)
        assert text == copy
    assert page.count('role="progressbar"') == len(bars)
    widths = sorted(float(b[0]) for b in bars)
    assert widths[0] == 0 and widths[-1] == 100 and any(0 < w < 100 for w in widths), widths

"""The dashboard's headers/s chart and progress bars in headless Chromium (Debian's ``chromium``, the
page fixture of test_browser.py): an hour of a worker's batches stored through the real lease and batch
path (the store's clock moved a minute at a time), then the page as a browser draws it. The chart is
there with its figures, its bars are painted where the SVG puts them (counted in the screenshot's
pixels), and every progress bar's label is legible over its track and its fill (contrast from the
browser's computed colours). Screenshots go to ``test-artifacts/``."""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.integration.web.conftest import GROUP
from tests.integration.web.test_browser import ARTIFACTS, page  # noqa: F401  (the Chromium page fixture)
from tests.support.catalog import fill_catalog
from tests.support.contrast import AA_TEXT, contrast_ratio
from tests.support.live import live_coordinator
from tests.support.store import ADMIN_PASSWORD, services_for
from usenet_indexer.coordinator.http.charts import CHART_BUCKETS, CHART_HEIGHT, CHART_WIDTH
from usenet_indexer.coordinator.http.dashboard import dashboard
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.leases.ranges import RangeLease

pytestmark = pytest.mark.slow

QUIET = "alt.binaries.sample.quiet"
RANGE = 1_000_000
LOW = 4_100_000_001  # article numbers as a busy server's are


@pytest.fixture
def hour(database_url: str, tmp_path: Path) -> Iterator[Services]:
    """Ranges of a million articles, like the default; a lease lives two minutes without a batch."""
    built = services_for(
        database_url,
        tmp_path,
        admin_password=ADMIN_PASSWORD,
        range_articles=RANGE,
        chunk_articles=20_000,
        era_articles=100 * RANGE,
        tail_min_articles=1_000,
        lease_ttl_seconds=120.0,
    )
    built.rules.ensure_default()
    yield built
    built.close()


def rate_at(minute: int) -> int:
    """Headers a second in the given minute: a slow start, a swell, a pause at 25-29."""
    if 25 <= minute < 30:
        return 0
    return int(600 + 40 * min(minute, 20) + 900 * (1 + math.sin(minute / 6)))


def work_for_an_hour(services: Services, rate: Callable[[int], int] = rate_at) -> int:
    """One node reads GROUP for an hour, a batch a minute of ``rate(minute) * 60`` articles, each a
    header: finishing ranges and leasing the next, giving its range back for a pause and leasing again.
    The store's clock ends an hour on. The headers stored."""
    node_id = services.nodes.authenticate(services.nodes.add("edge-1")[1])
    lease: RangeLease | None = None
    at = 0
    total = 0
    for minute in range(60):
        services.db.move_clock(60.0)
        articles = rate(minute) * 60
        if not articles:
            if lease is not None:
                services.ranges.release(lease.range_id, node_id, lease.epoch)
                lease = None
            continue
        while articles:
            if lease is None:
                lease = services.ranges.lease(node_id)
                assert lease is not None
                at = lease.next
            size = min(articles, lease.end - at + 1)
            services.ranges.commit_batch(lease.range_id, node_id, lease.epoch, at, at + size - 1, size)
            at += size
            articles -= size
            total += size
            if at > lease.end:
                services.ranges.finish(lease.range_id, node_id, lease.epoch)
                lease = None
    return total


def decode_png_pixels(beside: object, png: bytes) -> tuple[int, list[tuple[int, int, int, int]]]:
    """A screenshot's width and pixels (RGBA, row by row), decoded by Chromium itself in a blank page
    (no CSP there) of the context ``beside`` is in."""
    from playwright.sync_api import Page

    assert isinstance(beside, Page)
    blank = beside.context.new_page()
    try:
        width, data = blank.evaluate(
            """async (b64) => {
                const image = new Image();
                image.src = 'data:image/png;base64,' + b64;
                await image.decode();
                const canvas = document.createElement('canvas');
                canvas.width = image.width;
                canvas.height = image.height;
                const context = canvas.getContext('2d');
                context.drawImage(image, 0, 0);
                const pixels = context.getImageData(0, 0, image.width, image.height).data;
                return [image.width, Array.from(pixels)];
            }""",
            base64.b64encode(png).decode("ascii"),
        )
    finally:
        blank.close()
    return int(width), [(data[i], data[i + 1], data[i + 2], data[i + 3]) for i in range(0, len(data), 4)]


BARS_JS = """() => Array.from(document.querySelectorAll('[role=progressbar]')).map((bar) => {
    const [track, fill] = bar.querySelectorAll('em');
    const span = bar.querySelector('span');
    const box = bar.getBoundingClientRect();
    return {
        label: track.textContent, copy: fill.textContent, hidden: fill.getAttribute('aria-hidden'),
        trackText: getComputedStyle(track).color, trackBack: getComputedStyle(bar).backgroundColor,
        fillText: getComputedStyle(fill).color, fillBack: getComputedStyle(span).backgroundColor,
        trackClip: getComputedStyle(track).clipPath, fillClip: getComputedStyle(fill).clipPath,
        filled: span.getBoundingClientRect().width / box.width, value: bar.getAttribute('aria-valuenow'),
    };
})"""


def clip_percent(clip: str, side: int) -> float:
    """``inset(0px 0px 0px 25%)``'s ``side``-th value (0 top, 1 right, 2 bottom, 3 left), in %."""
    values = clip.removeprefix("inset(").removesuffix(")").split()
    values += [values[1]] * (4 - len(values)) if len(values) == 2 else []
    value = values[side]
    return 0.0 if value in ("0", "0px") else float(value.removesuffix("%"))


def test_dashboard_draws_an_hour_of_headers_and_legible_bars_in_chromium(
    hour: Services,
    page: object,  # noqa: F811
) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    fill_catalog(hour, GROUP, releases=60)  # an indexed catalog beside the figures
    hour.groups.add(QUIET)
    hour.groups.plan(GROUP, LOW, LOW + 30 * RANGE)  # history
    hour.groups.plan(GROUP, LOW, LOW + 30 * RANGE + 100_000)  # and a tail, read first
    hour.groups.plan(QUIET, LOW, LOW + 3 * RANGE)  # planned, never read: bars at 0
    stored = work_for_an_hour(hour)

    board = {g.summary.name: g for g in dashboard(hour).groups}
    busy = board[GROUP].rate
    assert sum(busy.rates) * 60 == pytest.approx(stored)  # the hour's headers, all of them
    assert busy.rates[25:30] == (0.0,) * 5  # the pause, with no lease held
    assert board[QUIET].rate.peak == 0
    assert board[GROUP].tail.percent == 100.0 and 0 < board[GROUP].history.percent < 100

    with live_coordinator(hour) as url:
        page.goto(url + "/admin/login")  # the admin sees the dashboard, private catalog or not
        page.fill("input[name=password]", ADMIN_PASSWORD)
        page.click("button:has-text('Log in')")
        page.goto(url + "/")
        row = page.locator("#groups tr", has_text=GROUP)
        chart = row.locator("svg.rate-chart")
        expect(chart).to_have_count(1)
        # The figures of the store's hour (a moment later: the minutes' edges moved by that moment).
        label = chart.get_attribute("aria-label") or ""
        figures = re.fullmatch(
            rf"{re.escape(GROUP)}: ([\d,]+) headers/s over the last 5 min, "
            r"peak ([\d,]+) headers/s in the last hour",
            label,
        )
        assert figures is not None, label
        assert float(figures.group(1).replace(",", "")) == pytest.approx(busy.recent, rel=0.02)
        assert float(figures.group(2).replace(",", "")) == pytest.approx(busy.peak, rel=0.02)
        expect(chart.locator("title")).to_have_text(label)
        box = chart.bounding_box()
        assert box is not None and (box["width"], box["height"]) == (CHART_WIDTH, CHART_HEIGHT)
        rects = chart.locator("rect")
        assert rects.count() == sum(1 for r in busy.rates if r > 0) >= CHART_BUCKETS - 6
        quiet = page.locator("#groups tr", has_text=QUIET).locator("svg.rate-chart")
        expect(quiet).to_have_attribute("aria-label", f"{QUIET}: no headers in the last hour")
        expect(quiet.locator("rect")).to_have_count(0)

        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "dashboard-chart.png"), full_page=True)
        (ARTIFACTS / "dashboard-chart-group.png").write_bytes(row.screenshot())

        # The chart as painted: its bars' pixels where the SVG says, in the accent colour.
        # (The element's box is rounded out to whole pixels: a column and a row more, at most.)
        shot = chart.screenshot()
        (ARTIFACTS / "dashboard-chart-svg.png").write_bytes(shot)
        width, pixels = decode_png_pixels(page, shot)
        assert CHART_WIDTH <= width <= CHART_WIDTH + 1
        assert CHART_WIDTH * CHART_HEIGHT <= len(pixels) <= (CHART_WIDTH + 1) * (CHART_HEIGHT + 1)
        inked = [p for p in pixels if sum(p[:3]) < 3 * 235]  # not the white cell behind
        drawn = sum(
            float(rects.nth(i).get_attribute("width") or 0) * float(rects.nth(i).get_attribute("height") or 0)
            for i in range(rects.count())
        )
        baseline = CHART_WIDTH  # one row of pixels
        assert 0.8 * (drawn + baseline) <= len(inked) <= 1.2 * (drawn + baseline)
        blue = [i for i, p in enumerate(pixels) if p[2] > 180 and p[0] < 90 and p[1] < 140]  # #2563eb
        assert 0.8 * drawn <= len(blue) <= 1.2 * drawn
        columns = {i % width for i in blue}
        pause = range(round(25 / 60 * CHART_WIDTH) + 1, round(30 / 60 * CHART_WIDTH) - 1)
        assert not columns & set(pause)  # nothing drawn in the pause
        assert max(columns) >= CHART_WIDTH - 4  # and the last minute is drawn

        # Every bar's label over the track and over the fill, in every state the page has.
        bars = page.evaluate(BARS_JS)
        states = {"not begun": 0, "part": 0, "done": 0}
        for bar in bars:
            assert bar["label"] == bar["copy"] and bar["hidden"] == "true"
            over_track = contrast_ratio(bar["trackText"], bar["trackBack"])
            over_fill = contrast_ratio(bar["fillText"], bar["fillBack"])
            assert over_track >= AA_TEXT and over_fill >= AA_TEXT, (bar, over_track, over_fill)
            # The dark copy is clipped to the track, the light one to the fill: they meet at its edge.
            assert clip_percent(bar["trackClip"], 3) == pytest.approx(100 * bar["filled"], abs=0.2)
            assert clip_percent(bar["fillClip"], 1) == pytest.approx(100 * (1 - bar["filled"]), abs=0.2)
            value = float(bar["value"])
            states["not begun" if value == 0 else "done" if value >= 100 else "part"] += 1
        assert all(states.values()), states  # QUIET's 0 %, GROUP's done tail, its history and lease

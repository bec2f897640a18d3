"""The dashboard's headers/s chart (coordinator/http/charts.py: batches bucketed by minute, drawn as SVG) and
the contrast of its progress bars' labels in the stylesheet (templates/base.html). No store, no server."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.contrast import AA_TEXT, contrast_ratio
from usenet_indexer.coordinator.http.charts import (
    CHART_BUCKETS,
    CHART_HEIGHT,
    CHART_WIDTH,
    CHART_WINDOW_SECONDS,
    RateSeries,
    Work,
    bucket_headers,
    chart_label,
    format_rate,
    rate_chart_svg,
    rate_series,
)

NOW = 1_700_000_000.0
START = NOW - CHART_WINDOW_SECONDS
SVG = "{http://www.w3.org/2000/svg}"
BASE_HTML = Path(__file__).resolve().parents[3] / "src/usenet_indexer/coordinator/http/templates/base.html"


def inside_share(w: Work, now: float = NOW, window: float = CHART_WINDOW_SECONDS) -> float:
    """What of a batch the hour holds, worked out on its own (the oracle for the bucketing)."""
    if w.headers <= 0:
        return 0.0
    if w.began_at is None or w.began_at >= w.stored_at:
        return float(w.headers) if now - window < w.stored_at <= now else 0.0
    overlap = min(w.stored_at, now) - max(w.began_at, now - window)
    return w.headers * max(0.0, overlap) / (w.stored_at - w.began_at)


# -- bucketing ------------------------------------------------------------------------------------


def test_no_batches_is_an_hour_of_zeros() -> None:
    assert bucket_headers([], NOW) == [0.0] * CHART_BUCKETS
    series = rate_series([], NOW)
    assert series.rates == (0.0,) * CHART_BUCKETS
    assert series.peak == 0.0 and series.recent == 0.0


def test_a_batch_without_a_span_counts_where_it_was_stored() -> None:
    counts = bucket_headers(
        [
            Work(100, NOW),  # the last bucket closes at now
            Work(7, NOW - 60),  # a boundary: the bucket it closes
            Work(5, START + 0.5),  # the first bucket
            Work(1000, START),  # an hour ago exactly: out, as the query's "stored_at > now - window"
            Work(1000, NOW + 1),  # after now (another clock): out
            Work(1000, START - 5),
            Work(3, NOW - 30, began_at=NOW - 30),  # no span: a point
        ],
        NOW,
    )
    assert counts[-1] == 103
    assert counts[-2] == 7
    assert counts[0] == 5
    assert sum(counts) == 115


def test_a_batch_is_spread_over_the_time_since_the_one_before() -> None:
    # 1,200 headers read over the last two minutes: 600 in each, 10 headers/s.
    series = rate_series([Work(1200, NOW, began_at=NOW - 120)], NOW)
    assert series.rates[-2:] == pytest.approx((10.0, 10.0))
    assert sum(series.rates[:-2]) == 0
    # Begun before the hour: only the part within it is drawn.
    counts = bucket_headers([Work(1000, START + 30, began_at=START - 70)], NOW)
    assert counts[0] == pytest.approx(300.0)
    assert sum(counts) == pytest.approx(300.0)
    # A span straddling a bucket boundary.
    counts = bucket_headers([Work(90, START + 80, began_at=START + 50)], NOW)
    assert counts[:2] == pytest.approx([30.0, 60.0])


def test_recent_is_the_mean_of_the_last_five_minutes() -> None:
    series = RateSeries((0.0,) * 55 + (10.0, 20.0, 30.0, 40.0, 50.0))
    assert series.recent == 30.0 and series.peak == 50.0


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="buckets >= 1"):
        bucket_headers([], NOW, buckets=0)
    with pytest.raises(ValueError, match="window > 0"):
        bucket_headers([], NOW, window=0)


times = st.floats(min_value=START - 2 * CHART_WINDOW_SECONDS, max_value=NOW + CHART_WINDOW_SECONDS)
spans = st.one_of(st.none(), st.floats(min_value=0, max_value=3 * CHART_WINDOW_SECONDS))
works = st.builds(
    lambda headers, stored, span: Work(headers, stored, None if span is None else stored - span),
    st.integers(min_value=0, max_value=10**9),
    times,
    spans,
)


@given(st.lists(works, max_size=40))
def test_every_header_of_the_hour_is_drawn_once_and_none_from_outside(batch: list[Work]) -> None:
    counts = bucket_headers(batch, NOW)
    assert len(counts) == CHART_BUCKETS
    assert all(c >= 0 for c in counts)
    expected = sum(inside_share(w) for w in batch)
    assert math.isclose(sum(counts), expected, rel_tol=1e-9, abs_tol=1e-3)


@given(st.lists(works, max_size=40))
def test_batches_wholly_inside_the_hour_keep_their_total(batch: list[Work]) -> None:
    inside = [w for w in batch if START < w.stored_at <= NOW and (w.began_at is None or w.began_at >= START)]
    counts = bucket_headers(inside, NOW)
    assert math.isclose(sum(counts), sum(w.headers for w in inside), rel_tol=1e-9, abs_tol=1e-3)


@given(
    st.integers(min_value=1, max_value=10**6),
    st.floats(min_value=START, max_value=NOW, exclude_min=True),
)
def test_a_point_lands_in_the_bucket_that_holds_it(headers: int, stored: float) -> None:
    counts = bucket_headers([Work(headers, stored)], NOW)
    index = next(i for i, c in enumerate(counts) if c)
    width = CHART_WINDOW_SECONDS / CHART_BUCKETS
    assert START + index * width - 1e-6 < stored <= START + (index + 1) * width + 1e-6
    assert counts[index] == headers


@given(st.lists(works, max_size=20), st.floats(min_value=1, max_value=10**7))
def test_batches_outside_the_hour_change_nothing(batch: list[Work], before: float) -> None:
    outside = [Work(10**6, START - before, began_at=START - before - 60), Work(10**6, NOW + before)]
    assert bucket_headers(batch + outside, NOW) == bucket_headers(batch, NOW)


# -- the SVG --------------------------------------------------------------------------------------


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def test_the_label_states_the_figures() -> None:
    rates = (0.0,) * 50 + (2345.0,) + (0.0,) * 4 + (1234.0,) * 5
    series = RateSeries(rates)
    assert chart_label("alt.binaries.x", series) == (
        "alt.binaries.x: 1,234 headers/s over the last 5 min, peak 2,345 headers/s in the last hour"
    )
    assert chart_label("alt.binaries.x", RateSeries((0.0,) * 60)) == (
        "alt.binaries.x: no headers in the last hour"
    )
    assert [format_rate(r) for r in (0, 0.04, 0.5, 9.94, 9.96, 12.4, 1234567.8)] == [
        "0",
        "0",
        "0.5",
        "9.9",
        "10",
        "12",
        "1,234,568",
    ]


def test_the_chart_is_a_bar_a_busy_minute_scaled_to_the_peak() -> None:
    rates = [0.0] * 60
    rates[10], rates[30], rates[59] = 50.0, 100.0, 0.001
    root = parse(rate_chart_svg("alt.binaries.x", RateSeries(tuple(rates))))
    assert root.get("viewBox") == f"0 0 {CHART_WIDTH} {CHART_HEIGHT}"
    assert root.get("role") == "img"
    title = root.find(f"{SVG}title")
    assert title is not None and title.text == root.get("aria-label")
    bars = root.findall(f"{SVG}rect")
    assert len(bars) == 3
    heights = [float(b.get("height", "")) for b in bars]
    assert heights[1] == pytest.approx(CHART_HEIGHT - 2)  # the peak: the whole height but margins
    assert heights[0] == pytest.approx(heights[1] / 2, abs=0.01)
    assert heights[2] == 1  # a trickle still shows
    xs = [float(b.get("x", "")) for b in bars]
    assert xs == sorted(xs) and xs[2] > CHART_WIDTH * 0.95  # time runs left to right
    for b in bars:
        x, y, width, height = (float(b.get(a, "")) for a in ("x", "y", "width", "height"))
        assert x >= 0 and x + width <= CHART_WIDTH
        assert y >= 0 and y + height <= CHART_HEIGHT


def test_an_idle_hour_is_the_baseline_alone() -> None:
    root = parse(rate_chart_svg("alt.binaries.x", RateSeries((0.0,) * 60)))
    assert root.findall(f"{SVG}rect") == []
    assert root.find(f"{SVG}line") is not None
    assert "no headers in the last hour" in (root.get("aria-label") or "")


def test_a_hostile_group_name_stays_text() -> None:
    name = "<script>alert(1)</script>&\"'<!--]]>"
    svg = rate_chart_svg(name, RateSeries((5.0,) * 60))
    assert "<script" not in svg and "-->" not in svg.split("<title>")[1]
    root = parse(svg)
    title = root.find(f"{SVG}title")
    assert title is not None and title.text is not None and title.text.startswith(name + ": ")
    assert root.get("aria-label") == title.text
    assert {e.tag for e in root.iter()} == {f"{SVG}svg", f"{SVG}title", f"{SVG}line", f"{SVG}rect"}


@given(
    st.text(max_size=80),
    st.lists(st.floats(min_value=0, max_value=1e12), min_size=1, max_size=120),
)
def test_any_name_and_figures_make_a_well_formed_svg_without_script(name: str, rates: list[float]) -> None:
    root = parse(rate_chart_svg(name, RateSeries(tuple(rates))))
    assert {e.tag for e in root.iter()} <= {f"{SVG}svg", f"{SVG}title", f"{SVG}line", f"{SVG}rect"}
    for element in root.iter():
        assert not any(a.lower().startswith("on") or "href" in a for a in element.attrib)
    title = root.find(f"{SVG}title")
    assert title is not None and title.text is not None
    # Control characters, lone surrogates and U+FFFE/U+FFFF are replaced (XML cannot carry them, or
    # changes them); everything else of the name is there as written, in the title and the label.
    shown = "".join(
        "\ufffd" if ord(c) < 0x20 or 0xD800 <= ord(c) <= 0xDFFF or c in "\ufffe\uffff" else c for c in name
    )
    assert title.text.startswith(shown + ": ")
    assert root.get("aria-label") == title.text
    assert len(root.findall(f"{SVG}rect")) == sum(1 for r in rates if r > 0)


# -- the progress bars' labels ------------------------------------------------------------------


def stylesheet() -> dict[str, dict[str, str]]:
    """base.html's rules: selector -> declarations, ``var(--x)`` resolved from ``:root``."""
    style = re.search(r"<style>(.*?)</style>", BASE_HTML.read_text(encoding="utf-8"), re.S)
    assert style is not None
    rules: dict[str, dict[str, str]] = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", style.group(1)):
        declarations = dict(
            (name.strip(), value.strip())
            for name, _, value in (d.partition(":") for d in body.split(";") if ":" in d)
        )
        for selector in selectors.split(","):
            rules.setdefault(" ".join(selector.split()), {}).update(declarations)
    variables = rules[":root"]
    for declarations in rules.values():
        for name, value in declarations.items():
            declarations[name] = re.sub(r"var\((--[\w-]+)\)", lambda m: variables[m.group(1)], value)
    return rules


def background(declarations: dict[str, str]) -> str:
    return declarations.get("background-color") or declarations["background"]


def test_progress_bar_labels_are_legible_over_the_track_and_the_fill() -> None:
    """The label is drawn twice, each copy clipped to what is behind it (templates/_macros.html): the
    tail and history lanes, a leased range and a release's parts all use this one bar, done, partial
    or not begun; the stylesheet has one (light) scheme."""
    css = stylesheet()
    over_track = contrast_ratio(css[".bar em"]["color"], background(css[".bar"]))
    over_fill = contrast_ratio(css[".bar em.on-fill"]["color"], background(css[".bar span"]))
    assert over_track >= AA_TEXT, over_track
    assert over_fill >= AA_TEXT, over_fill


def test_contrast_ratio_matches_wcag_examples() -> None:
    assert contrast_ratio("#000", "#fff") == pytest.approx(21.0)
    assert contrast_ratio("#fff", "#fff") == pytest.approx(1.0)
    assert contrast_ratio("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)  # the AA grey
    assert contrast_ratio("rgb(17, 17, 17)", "#2563eb") == pytest.approx(3.65, abs=0.01)  # the old label

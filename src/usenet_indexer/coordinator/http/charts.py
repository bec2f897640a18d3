"""The dashboard's headers/s over the last hour per group: the batches the store logged, bucketed by
minute (:func:`bucket_headers`), drawn as a small SVG bar chart (:func:`rate_chart_svg`). Both pure:
no I/O, no clock; the SVG is written out whole by the server (no script), every text in it escaped.

A batch only tells when it was stored, not when its headers were read: a worker posts one every few
seconds to a few minutes. Each batch's headers are spread evenly over the time since the batch before
it in the same lease (or, for a lease's first batch, since the lease was granted), so a worker posting
every three minutes draws a steady rate instead of one bar in three.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape

CHART_WINDOW_SECONDS = 3600.0
CHART_BUCKETS = 60  # one a minute
# "Now" on the chart's label: the mean of the last few buckets (the dashboard's card uses 5 min too).
RECENT_BUCKETS = 5

CHART_WIDTH = 120  # 2 a bucket
CHART_HEIGHT = 28

# What XML 1.0 cannot carry at all, even escaped (C0 controls, lone surrogates, U+FFFE/U+FFFF), and
# tab and line ends, which a parser turns into others (CR into LF, any of them into a space in an
# attribute): replaced, so the SVG parses, and says the same in its title and its label, whatever a
# group is called.
_NOT_XML = re.compile("[\x00-\x1f\ud800-\udfff\ufffe\uffff]")


@dataclass(frozen=True, slots=True)
class Work:
    """A batch's headers and when they were read: from ``began_at`` (the batch before it in its lease,
    or the lease's grant; None: not known) to ``stored_at``. Unix seconds, the store's clock."""

    headers: float
    stored_at: float
    began_at: float | None = None


def bucket_headers(
    work: Iterable[Work],
    now: float,
    *,
    window: float = CHART_WINDOW_SECONDS,
    buckets: int = CHART_BUCKETS,
) -> list[float]:
    """Headers per bucket over ``(now - window, now]``, oldest first, each bucket ``(lo, hi]``.

    A batch with a span counts in each bucket by the share of its span that falls there; the share
    outside the window is dropped. A batch with no span (``began_at`` unknown, or not before
    ``stored_at``) counts whole in the bucket it was stored in, or not at all outside the window.
    """
    if buckets < 1 or not window > 0:
        raise ValueError(f"buckets >= 1 and window > 0, not {buckets} and {window}")
    width = window / buckets
    start = now - window
    counts = [0.0] * buckets
    for w in work:
        if w.headers <= 0:
            continue
        if w.began_at is None or not w.began_at < w.stored_at:
            if start < w.stored_at <= now:
                # (lo, hi]: a batch stored on a boundary belongs to the bucket it closes.
                index = min(buckets - 1, max(0, math.ceil((w.stored_at - start) / width) - 1))
                counts[index] += w.headers
            continue
        lo, hi = max(w.began_at, start), min(w.stored_at, now)
        if not lo < hi:
            continue
        density = w.headers / (w.stored_at - w.began_at)
        first = max(0, min(buckets - 1, int((lo - start) // width)))
        last = max(0, min(buckets - 1, math.ceil((hi - start) / width) - 1))
        for index in range(first, last + 1):
            b_lo = start + index * width
            b_hi = now if index == buckets - 1 else b_lo + width
            overlap = min(hi, b_hi) - max(lo, b_lo)
            if overlap > 0:
                counts[index] += density * overlap
    return counts


def headers_per_second(counts: Sequence[float], window: float = CHART_WINDOW_SECONDS) -> list[float]:
    """Bucket counts as rates (each bucket's headers over its seconds)."""
    if not counts:
        return []
    width = window / len(counts)
    return [c / width for c in counts]


@dataclass(frozen=True, slots=True)
class RateSeries:
    """A group's headers/s per bucket over the chart's window, oldest first."""

    rates: tuple[float, ...]

    @property
    def recent(self) -> float:
        """The mean of the last :data:`RECENT_BUCKETS` buckets: what the chart calls now."""
        tail = self.rates[-RECENT_BUCKETS:]
        return sum(tail) / len(tail) if tail else 0.0

    @property
    def peak(self) -> float:
        return max(self.rates, default=0.0)


def rate_series(
    work: Iterable[Work],
    now: float,
    *,
    window: float = CHART_WINDOW_SECONDS,
    buckets: int = CHART_BUCKETS,
) -> RateSeries:
    counts = bucket_headers(work, now, window=window, buckets=buckets)
    return RateSeries(tuple(headers_per_second(counts, window)))


def format_rate(rate: float) -> str:
    """1,234 / 12 / 0.5 headers/s: whole numbers but below 10."""
    if rate >= 9.95:
        return f"{rate:,.0f}"
    return f"{rate:.1f}".removesuffix(".0")


def chart_label(name: str, series: RateSeries, minutes: int = RECENT_BUCKETS) -> str:
    """What the chart shows, in words (its title and aria-label)."""
    if series.peak <= 0:
        return f"{name}: no headers in the last hour"
    return (
        f"{name}: {format_rate(series.recent)} headers/s over the last {minutes} min, "
        f"peak {format_rate(series.peak)} headers/s in the last hour"
    )


def _xml_text(text: str) -> str:
    return escape(_NOT_XML.sub("\ufffd", text), quote=True)


def _n(value: float) -> str:
    """A coordinate: at most two decimals, no trailing zeros."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def rate_chart_svg(
    name: str, series: RateSeries, *, width: int = CHART_WIDTH, height: int = CHART_HEIGHT
) -> str:
    """A bar a bucket, oldest left, scaled to the hour's peak, on a baseline; a bucket with any
    headers is at least one unit tall. Crisp edges: at the default size a unit is a pixel. Colours
    are ``currentColor`` (the page's CSS picks them). The text is escaped for XML and HTML both: the
    result goes into the page as it is."""
    label = _xml_text(chart_label(name, series))
    count = len(series.rates)
    step = width / count if count else float(width)
    bar = step - 1 if step >= 3 else step  # a unit between bars when there is room for it
    top = 1.0  # room above the tallest bar
    usable = height - top - 1.0  # and for the 1-unit baseline below
    peak = series.peak
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="rate-chart" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" shape-rendering="crispEdges" role="img" aria-label="{label}">',
        f"<title>{label}</title>",
        f'<line class="baseline" x1="0" y1="{_n(height - 0.5)}" x2="{width}" y2="{_n(height - 0.5)}" '
        'stroke="currentColor" stroke-width="1" stroke-opacity="0.35"/>',
    ]
    if peak > 0:
        for index, rate in enumerate(series.rates):
            if rate <= 0:
                continue
            tall = max(1.0, usable * rate / peak)
            parts.append(
                f'<rect x="{_n(index * step)}" y="{_n(height - 1 - tall)}" '
                f'width="{_n(bar)}" height="{_n(tall)}" fill="currentColor"/>'
            )
    parts.append("</svg>")
    return "".join(parts)

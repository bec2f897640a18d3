"""Numbers, sizes and times as people read them: the web UI's filters (coordinator/http/pages.py) and
the command line's lists (cli.py). Pure, and light to import: the command line imports it."""

from __future__ import annotations

import math
from datetime import UTC, datetime


def human_bytes(value: float | None) -> str:
    if value is None:
        return "–"
    size = float(value)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(size) < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError("unreachable")


def human_number(value: float | None) -> str:
    if value is None:
        return "–"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{int(value):,}"


def ago(seconds_ago: float | None) -> str:
    """ "3 min ago", "just now", "in 2 h" (clocks disagree): what a person reads at a glance."""
    if seconds_ago is None or math.isnan(seconds_ago):
        return "never"
    future = seconds_ago < 0
    seconds = abs(seconds_ago)
    if seconds < 5:
        return "just now"
    text = f"{seconds:.0f} s"
    for unit, size in (("y", 365 * 86400), ("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            text = f"{seconds / size:.0f} {unit}"
            break
    return f"in {text}" if future else f"{text} ago"


def timestamp(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M UTC")

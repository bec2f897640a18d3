"""WCAG 2 contrast between two colours (relative luminance, sRGB), for tests of the web UI's CSS: from
``#rgb``/``#rrggbb`` as written in a stylesheet or ``rgb(r, g, b)`` as a browser computes them."""

from __future__ import annotations

import re

# WCAG 2.x success criterion 1.4.3 (AA) for text below 18pt (the bars' labels are 11px).
AA_TEXT = 4.5

_HEX = re.compile(r"#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})")
_RGB = re.compile(r"rgba?\(\s*(\d+)[,\s]+(\d+)[,\s]+(\d+)(?:[,\s/]+([\d.]+))?\s*\)")


def parse_colour(text: str) -> tuple[int, int, int]:
    """An opaque colour; a translucent one is refused (its contrast depends on what is behind it)."""
    text = text.strip()
    if found := _HEX.fullmatch(text):
        digits = found.group(1)
        if len(digits) == 3:
            digits = "".join(c * 2 for c in digits)
        return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16)
    if found := _RGB.fullmatch(text):
        if found.group(4) is not None and float(found.group(4)) != 1.0:
            raise ValueError(f"not opaque: {text}")
        return int(found.group(1)), int(found.group(2)), int(found.group(3))
    if text == "white":
        return 255, 255, 255
    if text == "black":
        return 0, 0, 0
    raise ValueError(f"not a colour this knows: {text!r}")


def relative_luminance(colour: tuple[int, int, int]) -> float:
    def channel(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in colour)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(a: str, b: str) -> float:
    """From 1 (the same) to 21 (black on white)."""
    la, lb = sorted((relative_luminance(parse_colour(a)), relative_luminance(parse_colour(b))))
    return (lb + 0.05) / (la + 0.05)

"""Overview chunks as a news server sends them (indexing/overview.py and the range indexer).

Input: two bytes choosing the chunk's span (first article 1..256, up to 1,020 articles), then the
chunk's text. ``parse_overview`` must read any bytes without an exception, count each line once (a
segment, a malformed reason, or a duplicate), and keep its numbers inside the span. The range indexer
must give the same batch on its three paths: the C accelerator (when built), the pure-Python fast loop
and the careful loop it falls back to.

    scripts/uv.sh run python fuzz/overview.py -atheris_runs=100000
"""

from __future__ import annotations

import random
from contextlib import nullcontext
from unittest import mock

import _harness
import atheris  # type: ignore[import-untyped]

with atheris.instrument_imports():
    from usenet_indexer import accelerator
    from usenet_indexer.indexing import indexer as indexer_module
    from usenet_indexer.indexing.indexer import RangeIndexer
    from usenet_indexer.indexing.overview import parse_overview
    from usenet_indexer.indexing.rules import default_rules
    from usenet_indexer.indexing.sample import chunk_text, overview_line, plan, post

GROUP = "alt.binaries.fuzz"
RULES = default_rules()


def span(data: bytes) -> tuple[int, int, bytes]:
    first = 1 + data[0]
    return first, first + 4 * data[1], data[2:]


def index(chunk: bytes, first: int, last: int, path: str) -> object:
    """The batch of one chunk on ``path``: "native", "fast" or "careful" (every line read carefully)."""
    indexer = RangeIndexer(GROUP, first, last, first, RULES, native=path == "native")
    careful = path == "careful"
    with (
        mock.patch.object(indexer_module, "chunk_is_clean", return_value=False) if careful else nullcontext()
    ):
        indexer.add_text(chunk, last + 1)
    indexer.finish()
    return indexer.take()


PATHS = ["fast", "careful", *(["native"] if accelerator.speedups is not None else [])]


def one(data: bytes) -> None:
    if len(data) < 2:
        return
    first, last, chunk = span(data)
    overview = parse_overview(chunk, first, last)
    numbers = [s.number for s in overview.segments]
    assert len(numbers) == len(set(numbers)), "an article read twice"
    assert all(first <= n <= last for n in numbers), "an article outside the chunk's span"
    assert 0 <= overview.gaps <= last - first + 1
    assert all(count > 0 for count in overview.malformed.values())
    batches = {path: index(chunk, first, last, path) for path in PATHS}
    assert batches["careful"] == batches["fast"], "the careful loop and the fast loop disagree"
    if "native" in batches:
        assert batches["native"] == batches["fast"], "the C accelerator and the Python loop disagree"


def seeds() -> list[bytes]:
    rng = random.Random(8)
    posting = post(plan(rng, 3, GROUP, max_parts=12), rng, first=1)
    lines = [overview_line(a) for a in posting.articles if a.number <= 40]
    out = [bytes([0, 10]) + chunk_text(lines)]
    out.append(bytes([0, 10]) + b"\n".join(lines[:20]))  # LF line ends, no last one
    out.append(bytes([9, 3]) + chunk_text(lines[8:22]))  # lines outside the span
    return out


if __name__ == "__main__":
    _harness.main(one, seeds())

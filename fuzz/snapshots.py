"""Window snapshots a lane worker gets back from the coordinator (indexing/window.py): ``restore`` may
refuse with WindowError and nothing else; a window it restores snapshots to bytes that restore to the
same window, and takes a later batch in without an exception.

    scripts/uv.sh run python fuzz/snapshots.py -atheris_runs=100000
"""

from __future__ import annotations

import contextlib
import gzip
import random

import _harness
import atheris  # type: ignore[import-untyped]

with atheris.instrument_imports():
    from usenet_indexer.indexing.fragment import Batch
    from usenet_indexer.indexing.indexer import RangeIndexer
    from usenet_indexer.indexing.rules import default_rules
    from usenet_indexer.indexing.sample import chunk_text, overview_line, plan, post
    from usenet_indexer.indexing.window import Window, WindowError

GROUP = "alt.binaries.fuzz"
MAX_INFLATED = 1 << 20


def one(data: bytes) -> None:
    try:
        window = Window.restore(data, max_inflated=MAX_INFLATED)
    except WindowError:
        return
    again = Window.restore(window.snapshot())
    assert again == window, "a restored window does not survive its own snapshot"
    later = window.position
    with contextlib.suppress(WindowError):  # refused with a reason: fine
        window.absorb(
            Batch(
                from_id=later,
                to_id=later,
                headers=0,
                malformed={},
                gaps=1,
                undated=0,
                unmatched=0,
                fragments=(),
                candidates=(),
            )
        )
    window.flush()


def seeds() -> list[bytes]:
    rng = random.Random(5)
    posting = post(plan(rng, 4, GROUP, max_parts=8), rng, first=1)
    lines = [overview_line(a) for a in posting.articles]
    half = posting.first + (posting.last - posting.first) // 2
    indexer = RangeIndexer(GROUP, posting.first, half, posting.first, default_rules())
    indexer.add_text(
        chunk_text([line for a, line in zip(posting.articles, lines, strict=True) if a.number <= half]),
        half + 1,
    )
    indexer.finish()
    window = Window(GROUP, horizon=10_000, position=posting.first)
    window.absorb(indexer.take())
    deep = [gzip.compress(text, mtime=0) for text in (b"[" * 100_000, b'{"a":' * 5_000 + b"1" + b"}" * 5_000)]
    return [window.snapshot(), Window(GROUP, position=42).snapshot(), *deep]


if __name__ == "__main__":
    _harness.main(one, seeds(), mutator=_harness.gzip_aware_mutator)

"""Process-wide settings of the long-running processes (the coordinator, `run`, edge workers)."""

from __future__ import annotations

import gc

# Young collections every 50,000 allocations instead of 700, and the objects alive after start-up
# (modules, the app, settings) frozen out of every collection. Decoding a batch makes thousands of small
# containers per release and indexing keeps millions of live objects: with the defaults, the collector
# took about half of a batch decode's time (bench/stream.py, this machine), scanning the same old heap
# again and again. Cycles are still collected, only less often.
GC_THRESHOLDS = (50_000, 20, 100)


def tune_gc() -> None:
    """Freeze what start-up made and collect less often; call once, when start-up is done."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


__all__ = ["GC_THRESHOLDS", "tune_gc"]

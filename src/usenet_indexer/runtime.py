"""Process-wide settings of the long-running processes (the coordinator, `run`, edge workers)."""

from __future__ import annotations

import gc

# Young collections every 50,000 allocations instead of 700, and the objects alive after start-up
# (modules, the app, settings) frozen out of every collection. Decoding a batch makes thousands of small
# containers per release and indexing keeps millions of live objects: with the defaults, the collector
# took about half of a batch decode's time (bench/stream.py, this machine), scanning the same old heap
# again and again. Cycles are still collected, only less often.
GC_THRESHOLDS = (50_000, 20, 100)


# The commands that start quietly until tune_gc; the others collect from their first line (cli.py).
# Not `demo`: it generates its sample news server's articles before tune_gc, garbage that must be
# collected, not frozen.
TUNED_COMMANDS = frozenset({"run", "serve"})


def quiet_start() -> None:
    """No collections until ``tune_gc``: start-up (imports, the app) makes a few hundred thousand
    objects that nearly all live on, and the collector scanned them again and again, then once more
    in ``tune_gc``'s collection: ~100 ms of a core at every start of the coordinator and of each
    worker (issue 17). What start-up leaves as garbage (import-time cycles, ~50,000 small objects;
    Alembic's when `run` migrates a new store) is frozen with the rest."""
    gc.disable()


def tune_gc() -> None:
    """Freeze what start-up made and collect less often; call once, when start-up is done."""
    if gc.isenabled():  # not started quietly (tests, an embedding): collect start-up's garbage first
        gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    gc.enable()


__all__ = ["GC_THRESHOLDS", "TUNED_COMMANDS", "quiet_start", "tune_gc"]

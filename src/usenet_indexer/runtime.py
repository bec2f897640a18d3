"""Process-wide settings of the long-running processes (the coordinator, `run`, edge workers)."""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable

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


def absent(*names: str) -> None:
    """Mark modules absent in this process (``import`` then raises ImportError), unless imported
    already: optional imports of our libraries that have a fallback and cost a start-up CPU for
    nothing we use (edge/main.py, coordinator/http/__init__.py)."""
    for name in names:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]


def quiet_start() -> None:
    """No collections until ``tune_gc``: start-up (imports, the app) makes a few hundred thousand
    objects that nearly all live on, and the collector scanned them again and again, then once more
    in ``tune_gc``'s collection: ~100 ms of a core at every start of the coordinator and of each
    worker (issue 17). What start-up leaves as garbage (import-time cycles, ~50,000 small objects;
    Alembic's when `run` migrates a new store) is frozen with the rest."""
    gc.disable()


def tune_gc(young: int = GC_THRESHOLDS[0]) -> None:
    """Freeze what start-up made and collect less often; call once, when start-up is done. ``young``:
    the young generation's threshold (``worker_young`` for an edge worker)."""
    if gc.isenabled():  # not started quietly (tests, an embedding): collect start-up's garbage first
        gc.collect()
    gc.freeze()
    gc.set_threshold(young, *GC_THRESHOLDS[1:])
    gc.enable()


def worker_young(batch_articles: int) -> int:
    """An edge worker's young threshold: one object per article of its batch, at least GC_THRESHOLDS'.

    The collector counts container objects made less those freed, and an edge worker's live ones are
    nearly all its batch's: ~0.45 an article at the peak (the batch's files, releases and their
    tuples, built up by indexing and doubled by take; bench/e2e.py's corpus), all freed once the batch
    is posted. With 50,000, the batch of each 125,000-article range set off one young collection in
    take, over every object the range had made: ~30 ms of a core each, a third of take (issue 17,
    docs/PERFORMANCE.md "Session 11: i17-worker3"). Above a batch's peak, a batch is made and freed
    without one; cyclic garbage (little in a worker) is still collected once this many objects pile up."""
    return max(GC_THRESHOLDS[0], batch_articles)


# glibc's malloc hands a block past its mmap threshold (128 KiB at first, raised to the largest block
# freed, up to 32 MiB) its own mapping, and gives the top of a heap back to the kernel past its trim
# threshold (twice that): each time the pages come back, every 4 KiB page faults and is zeroed again.
# The coordinator makes and drops blocks of megabytes all the time (a chunk's 6 MB reply, deflated,
# written; batch bodies; blobs), and a page fault costs ~2.3 µs on the 2-core VM of issue 17: a 6 MB
# b"".join took 3.4 ms with its 1,488 faults and 0.17 ms without. Fixed thresholds keep such blocks
# in the heaps, which then stay at their high-water mark instead of shrinking between chunks.
MMAP_THRESHOLD = 64 << 20
TRIM_THRESHOLD = 128 << 20
_M_TRIM_THRESHOLD = -1  # mallopt's parameters (malloc.h)
_M_MMAP_THRESHOLD = -3


def tune_malloc() -> bool:
    """Keep large blocks in malloc's heaps (glibc only; elsewhere nothing). True when set."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )


def on_signals(signals: Iterable[signal.Signals], action: Callable[[int], None]) -> None:
    """Run ``action(signum)`` on a thread of its own for each of ``signals`` received.

    Not in the handler: Python runs a handler in the main thread between two of its statements, and
    one that sets an event may land inside that event's own ``wait()``, which holds the event's lock
    there: ``Event.set`` then waits on that lock forever. An edge worker sent SIGTERM in its idle wait
    never exited (gdb: the handler's ``set`` under ``Event.wait``; 1 of ~60 starts stopped at their
    first request, Session 13), and the same wait is in every loop that stops on an event. The handler
    only writes the signal's number to a pipe (a system call, no lock); the thread reads it and acts."""
    read, write = os.pipe()

    def relay() -> None:
        while received := os.read(read, 1):
            action(received[0])

    threading.Thread(target=relay, name="signals", daemon=True).start()
    for sig in signals:
        signal.signal(sig, lambda signum, frame: os.write(write, bytes([signum])))


__all__ = [
    "GC_THRESHOLDS",
    "MMAP_THRESHOLD",
    "TRIM_THRESHOLD",
    "TUNED_COMMANDS",
    "absent",
    "on_signals",
    "quiet_start",
    "tune_gc",
    "tune_malloc",
    "worker_young",
]

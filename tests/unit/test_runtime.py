"""runtime.tune_malloc: large blocks stay in malloc's heaps instead of coming back as fresh pages;
runtime.worker_young: a batch's objects stay below an edge worker's young threshold; runtime.on_signals:
a signal that lands inside an event's wait still sets it."""

from __future__ import annotations

import gc
import platform
import random
import resource
import subprocess
import sys

import pytest

from usenet_indexer import runtime
from usenet_indexer.indexing import sample
from usenet_indexer.indexing.indexer import RangeIndexer
from usenet_indexer.indexing.rules import default_rules
from usenet_indexer.wire.batch import encode_batch

GROUP = "alt.binaries.test.runtime"

# Past glibc's largest dynamic mmap threshold (32 MiB): with the defaults every block this size is a
# mapping of its own, given back when freed, and every page of the next one faults in again.
BLOCK = 40 << 20
PAGES = BLOCK // 4096


def _faults_of_a_block() -> int:
    """Minor page faults of this thread while a BLOCK-sized buffer is made, written and dropped."""
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    block = bytearray(BLOCK)  # calloc'd: written here so that every page is touched
    block[::4096] = b"\x01" * PAGES
    del block
    return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc's mallopt only"
)
def test_a_large_block_made_again_does_not_fault_in_again() -> None:
    assert runtime.MMAP_THRESHOLD > BLOCK
    assert runtime.tune_malloc()
    _faults_of_a_block()  # the heap grows to hold it once
    faults = [_faults_of_a_block() for _ in range(3)]
    # Without the tuning each of these is ~10,240 faults (one per page); kept in the heap, none or few.
    assert min(faults) < PAGES // 10, faults


def test_a_batch_makes_fewer_objects_than_its_articles() -> None:
    """worker_young puts an edge worker's young threshold at its batch's articles, so that a batch's
    objects are made and freed without a young collection over them: indexing a batch, taking and
    encoding it must leave fewer new objects for the collector than the batch has articles."""
    rng = random.Random(17)
    releases = [r for r in sample.plan(rng, 400, GROUP) if r.scheme == "named"]
    lines = [sample.overview_line(a) for a in sample.post(releases, rng, first=1, duplicate=0.0).articles]
    first, last = 1, int(lines[-1].split(b"\t", 1)[0])
    indexer = RangeIndexer(GROUP, first, last, first, default_rules())
    enabled = gc.isenabled()
    gc.disable()  # the count still moves: allocations of tracked objects less their deallocations
    try:
        before = gc.get_count()[0]
        for at in range(0, len(lines), 10_000):
            block = lines[at : at + 10_000]
            indexer.add_text(sample.chunk_text(block), int(block[-1].split(b"\t", 1)[0]) + 1)
        indexer.finish()
        batch = indexer.take()
        body = encode_batch(batch, 1, 1)
        peak = gc.get_count()[0] - before
    finally:
        if enabled:
            gc.enable()
    assert body and batch.headers == len(lines) > 20_000
    assert 0 < peak < len(lines), (peak, len(lines))
    assert runtime.worker_young(len(lines)) == max(len(lines), runtime.GC_THRESHOLDS[0])


# A signal handled where Event.wait holds the event's lock: the main thread inside ``with stop._cond``,
# the statement boundary at which the handler ran in the hung worker (runtime.on_signals). In a child
# process: a handler that sets the event there waits on the lock forever.
SIGNAL_IN_WAIT = """
import signal, threading
from usenet_indexer.edge.main import stop_on_signals
from usenet_indexer.local.run import install_signals

stop = stop_on_signals()
with stop._cond:
    signal.raise_signal(signal.SIGTERM)  # the handler runs here, before raise_signal returns
assert stop.wait(10), "SIGTERM did not set stop"

stop, kill = threading.Event(), threading.Event()
install_signals(stop, kill)  # run's: the first signal stops, a second one kills
with stop._cond:
    signal.raise_signal(signal.SIGINT)
assert stop.wait(10) and not kill.is_set()
with kill._cond:
    signal.raise_signal(signal.SIGINT)
assert kill.wait(10), "a second SIGINT did not set kill"
print("stopped")
"""


def test_a_signal_inside_an_event_s_wait_sets_it() -> None:
    done = subprocess.run([sys.executable, "-c", SIGNAL_IN_WAIT], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout.strip() == "stopped", done.stderr

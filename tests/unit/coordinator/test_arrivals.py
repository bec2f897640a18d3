"""Streams woken by the chunks this process stores (coordinator/arrivals.py, issue 17)."""

from __future__ import annotations

import asyncio
import threading

from usenet_indexer.coordinator.arrivals import Arrivals


async def test_a_chunk_stored_on_another_thread_wakes_the_streams_of_its_range_only() -> None:
    arrivals = Arrivals()
    with arrivals.watch(7) as mine, arrivals.watch(8) as other:
        assert arrivals.waiting() == 2
        thread = threading.Thread(target=arrivals.stored, args=(7,))
        thread.start()
        await asyncio.wait_for(mine.wait(), 10)
        thread.join()
        await asyncio.sleep(0)
        assert not other.is_set()
    assert arrivals.waiting() == 0


async def test_a_chunk_stored_between_the_look_and_the_wait_is_not_missed() -> None:
    """The stream watches before it looks in the spool: a store that lands after the look (nothing
    there yet) and before the wait has set the event already."""
    arrivals = Arrivals()
    with arrivals.watch(3) as arrived:
        # ... the stream looked: nothing yet. Now the prefetcher stores the chunk, before the wait.
        await asyncio.to_thread(arrivals.stored, 3)
        await asyncio.wait_for(arrived.wait(), 10)


async def test_a_stream_that_stopped_watching_is_forgotten() -> None:
    arrivals = Arrivals()
    arrivals.stored(1)  # nobody waits: nothing happens
    with arrivals.watch(1) as left:
        pass
    assert arrivals.waiting() == 0
    arrivals.stored(1)
    await asyncio.sleep(0)
    assert not left.is_set()

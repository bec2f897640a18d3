"""The probe loop: the catalog's Prober (catalog/probe.py), which reads the PAR2 bodies of obfuscated
releases to name them, run as a loop's work on the coordinator's shared news pool."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from usenet_indexer.catalog.probe import Prober
from usenet_indexer.coordinator.loops.news import NewsService
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db.database import Fence
from usenet_indexer.logs import get_logger

log = get_logger(__name__)

PROBE_ROUND_SECONDS = 20.0


def probe_work(services: Services, news: NewsService, fence: Fence | None = None) -> Callable[[], bool]:
    """The catalog's Prober (PAR2 bodies of obfuscated releases) as a loop's work, on the shared pool;
    True when it took a full batch (more may be queued)."""
    prober = Prober(services.db, news.body, fence=fence)
    bound = min(PROBE_ROUND_SECONDS, services.settings.ownership_ttl_seconds / 2)

    def work() -> bool:
        try:
            # Bounded, so that a stop is heard between rounds; probes cut off here are queued again
            # (Prober.run_once), a cut-off counting as an attempt.
            # New probes are started for the first quarter of the round, so that the last ones
            # started have three quarters of it to finish before the cut-off.
            results = asyncio.run(asyncio.wait_for(prober.run_once(refill_seconds=bound / 4), bound))
        except TimeoutError:
            log.warning("probe.round_late", action=f"cut off after {bound:.0f} s")
            return False
        return len(results) >= prober.batch

    return work

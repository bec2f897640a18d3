"""The dashboard's probe card in headless Chromium (issue 16: "count probes and their cost on /metrics
and the dashboard"): obfuscated releases probed against INN2 (one named from its real PAR2 index, one
whose PAR2 article the server does not have, failed after its attempts), one still queued; then the
dashboard as a browser draws it shows the counts /metrics shows, read by the same browser. A
screenshot goes to ``test-artifacts/``.

Needs INN2 (scripts/inn2-setup.sh), ``par2`` and Debian's ``chromium`` (scripts/setup-system.sh)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.catalog.test_probe import HASH, overview, post_par2_index, store_obfuscated
from tests.integration.web.test_browser import ARTIFACTS, page  # noqa: F401  (the Chromium page fixture)
from tests.support import inn2 as inn2_support
from tests.support.live import live_coordinator
from tests.support.store import query, services_for
from usenet_indexer.catalog.batch_store import store_batch
from usenet_indexer.catalog.probe import MAX_ATTEMPTS, Prober
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.indexing import RangeIndexer, default_rules
from usenet_indexer.nntp.pool import NNTPPool, ServerSettings
from usenet_indexer.readable import human_bytes, human_number

pytestmark = [pytest.mark.slow, pytest.mark.inn2]  # posts its PAR2 index to INN2 (test_probe.post_par2_index)

GROUP = "alt.binaries.probe"  # test_probe's overview names it


def store_other(services: Services, tag: str, par2_message_id: str) -> None:
    """Another obfuscated release like test_probe's (its own hex name, ``tag`` repeated, and message-ids),
    queued for a probe."""
    text = overview(par2_message_id).replace(HASH.encode(), tag.encode() * (len(HASH) // len(tag)))
    text = text.replace(b"@probe.test>", f"@{tag}.probe.test>".encode())
    indexer = RangeIndexer(GROUP, 1, 7, 1, default_rules())
    indexer.add_text(text, 8)
    indexer.finish()
    with services.db.transaction() as tx:
        store_batch(tx, 1, GROUP, indexer.take())


async def probe(services: Services, rounds: int) -> None:
    server = ServerSettings(host=inn2_support.HOST, port=inn2_support.PLAIN_PORT, connections=2)
    async with NNTPPool([server]) as pool:
        prober = Prober(services.db, pool.body)
        for _ in range(rounds):
            await prober.run_once()


def metrics_of(text: str) -> dict[str, float]:
    """The probe families of /metrics, summed over their labels where the card sums them."""
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            status = sample.labels.get("status", "")
            name = sample.name
            if name == "usenet_indexer_probes":
                name = {"done": "named", "failed": "failed"}.get(status, "pending")
            values[name] = values.get(name, 0.0) + sample.value
    return values


def test_the_probe_card_shows_what_metrics_shows(
    database_url: str,
    tmp_path: Path,
    page: object,  # noqa: F811
) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    article = post_par2_index(tmp_path)
    services = services_for(database_url, tmp_path / "data", public_catalog=True)
    try:
        store_obfuscated(services, article.message_id)  # named from its PAR2 index
        store_other(services, "dead", "<gone-for-good@probe.test>")  # the server has no such article
        with ThreadPoolExecutor(1) as thread:  # playwright's sync API runs a loop on this one
            thread.submit(asyncio.run, probe(services, MAX_ATTEMPTS)).result()
        store_other(services, "beef", "<not-probed-yet@probe.test>")  # queued after the rounds
        statuses = sorted(r["status"] for r in query(services.db, "SELECT status FROM probe_queue"))
        assert statuses == ["done", "failed", "queued"]

        with live_coordinator(services) as url:
            page.goto(url + "/metrics")
            figures = metrics_of(page.locator("body").inner_text())
            # The figures are the probes': each status seen, bodies fetched.
            assert (figures["named"], figures["failed"], figures["pending"]) == (1, 1, 1)
            articles = figures["usenet_indexer_probe_articles"]
            assert articles >= 1 and figures["usenet_indexer_probe_bytes"] > 1000
            page.goto(url + "/")
            card = page.locator("#card-probes")
            expect(card.locator(".value")).to_have_text(human_number(int(figures["named"])))
            sub = card.locator(".sub")
            expect(sub).to_contain_text(f"{human_number(int(figures['pending']))} to probe")
            expect(sub).to_contain_text(f"{human_number(int(figures['failed']))} failed")
            fetched = human_bytes(figures["usenet_indexer_probe_bytes"])
            expect(sub).to_contain_text(f"{human_number(int(articles))} articles, {fetched} fetched")
            expect(sub).to_contain_text(f"({articles / figures['named']:.1f} a release)")
            joined = human_number(int(figures["usenet_indexer_joined_releases"]))
            expect(sub).to_contain_text(f"{joined} joined from loose files")
            page.screenshot(path=str(ARTIFACTS / "dashboard-probes.png"), full_page=True)
    finally:
        services.close()

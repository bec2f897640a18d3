"""``usenet-indexer demo`` as a newcomer runs it, checked in headless Chromium (Debian's ``chromium``
driven by playwright; no browser is downloaded): once it has indexed the sample groups and printed its
addresses, the web UI's dashboard shows every sample group read to the end, the releases found and
the run's workers; a search finds releases; the printed newznab URL answers with its key and the NZB
it wrote is a real one. Ctrl-C then ends it cleanly. Screenshots go to ``test-artifacts/``."""

from __future__ import annotations

import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.processes import settings_env
from tests.integration.web.test_browser import ARTIFACTS, page  # noqa: F401  (the Chromium page fixture)
from usenet_indexer.local.run import worker_name
from usenet_indexer.newsservers.sample_server import SAMPLE_GROUPS

pytestmark = pytest.mark.slow


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], dict[str, str], list[str]]]:
    env = settings_env("", tmp_path / "data")
    del env["USENET_INDEXER_DATABASE_URL"]  # the demo's own SQLite file under DATA_DIR/demo
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "usenet_indexer",
            "demo",
            "--port=0",
            "--workers=2",
            "--scale=0.1",
            "--live-seconds=6",  # the groups grow: their tail is planned and indexed as it arrives
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    printed: list[str] = []
    found: dict[str, str] = {}
    deadline = time.monotonic() + 180
    try:
        while "probe" not in found:
            assert time.monotonic() < deadline, "\n".join(printed[-40:])
            ready, _, _ = select.select([process.stdout], [], [], 1.0)
            if not ready:
                assert process.poll() is None, "\n".join(printed[-40:])
                continue
            line = process.stdout.readline()
            assert line, "demo ended early:\n" + "\n".join(printed[-40:])
            printed.append(line.rstrip())
            match = re.search(r"(web UI|newznab search|newznab API key|an NZB|probe):\s+(\S+)", line)
            if match:
                found[match.group(1).split()[-1]] = match.group(2)
        yield process, found, printed
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        process.stdout.close()


def test_demo_dashboard_search_and_nzb_in_chromium(
    demo: tuple[subprocess.Popen[str], dict[str, str], list[str]],
    page: object,  # noqa: F811
    tmp_path: Path,
) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    process, found, printed = demo
    url = found["UI"].rstrip("/")
    assert url.startswith("http://127.0.0.1:")
    assert any("sample data" in line for line in printed)

    # The dashboard while the demo serves: every sample group read to the end (its history, and the
    # tail that arrived meanwhile), releases, the workers.
    page.goto(url + "/")
    expect(page.locator("#groups")).to_be_visible()
    for group in SAMPLE_GROUPS:
        row = page.locator("#groups tr", has_text=group.name)
        expect(row).to_have_count(1)
        bars = row.locator("[role=progressbar]")
        expect(bars).to_have_count(2)  # tail and history
        for i in range(2):
            expect(bars.nth(i)).to_have_attribute("aria-valuenow", "100.0")
    releases = int(page.locator("#card-releases .value").inner_text().replace(",", ""))
    assert releases > 100
    headers_per_second = float(page.locator("#card-rate .value").inner_text().replace(",", ""))
    assert headers_per_second > 0  # the batches of the last 5 minutes
    for slot in (1, 2):
        expect(page.locator("#workers")).to_contain_text(worker_name(slot))
    expect(page.locator("#no-failed")).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "demo-dashboard.png"), full_page=True)

    # Search in the web UI: obfuscated releases carry the names their PAR2 files gave them.
    page.click("text=Releases")
    page.fill("input[name=q]", "harbor")
    page.click("button:has-text('Search')")
    expect(page.locator("#results tr").first).to_be_visible()
    assert page.locator("#results tr").count() > 5
    page.screenshot(path=str(ARTIFACTS / "demo-search.png"), full_page=True)

    # The newznab URL it printed works with its key; the NZB it wrote is one.
    answer = httpx.get(found["search"], timeout=30)
    assert answer.status_code == 200 and b"<item>" in answer.content
    nzb = Path(found["NZB"])
    assert nzb.is_file() and nzb.is_relative_to(tmp_path / "data" / "demo")
    content = nzb.read_bytes()
    assert content.startswith(b"<?xml") and b"<segment " in content
    assert int(found["probe"]) > 0  # obfuscated releases named from their bodies

    process.send_signal(signal.SIGINT)
    assert process.wait(60) == 0

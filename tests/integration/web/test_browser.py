"""The web UI in headless Chromium (Debian's ``chromium``, driven by playwright's Python package; no
browser is downloaded): a user signs in (the catalog is private), the dashboard shows live figures, a
search finds an indexed release and its NZB link downloads, an admin logs in and retries a failed range
and adds a user. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.web.conftest import GROUP
from tests.support.live import live_coordinator
from tests.support.store import ADMIN_PASSWORD, query
from usenet_indexer.catalog.search import SearchQuery
from usenet_indexer.coordinator.wiring import Services

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
READER_PASSWORD = "a reader's password for the browser test"
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@pytest.fixture
def page(tmp_path: Path) -> Iterator[object]:
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        pytest.fail("Debian's chromium is not installed: run scripts/setup-system.sh")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        context = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 900})
        try:
            yield context.new_page()
        finally:
            context.close()
            browser.close()


def live_figures(services: Services) -> int:
    """A node holding a live lease with a batch stored just now, and a failed range; the failed id."""
    services.groups.plan(GROUP, 1, 5_000)
    node_id = services.nodes.authenticate(services.nodes.add("edge-browser")[1])
    lease = services.ranges.lease(node_id)
    assert lease is not None
    query(
        services.db,
        "INSERT INTO batch_log (range_id, epoch, node_id, from_id, to_id, headers, result, stored_at) "
        "VALUES (:r, :e, :n, :f, :t, 150000, '{}', unix_now())",
        {"r": lease.range_id, "e": lease.epoch, "n": node_id, "f": lease.start, "t": lease.start + 99},
    )
    failed = query(services.db, "SELECT min(id) AS id FROM ranges WHERE status = 'planned'")[0]["id"]
    query(
        services.db,
        "UPDATE ranges SET status = 'failed', error = 'chunk 2001 does not inflate after a plain fetch' "
        "WHERE id = :id",
        {"id": failed},
    )
    return int(failed)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_dashboard_search_download_and_admin_in_chromium(filled: Services, page: object) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    failed = live_figures(filled)
    hit = filled.search.search(SearchQuery(categories=(2000,), limit=1)).hits[0]
    filled.users.add("reader", password=READER_PASSWORD)
    with live_coordinator(filled) as url:
        # The catalog is private: a user signs in, and comes back to the page they asked for.
        page.goto(url + "/")
        expect(page.locator("h1")).to_have_text("Sign in")
        page.fill("input[name=name]", "reader")
        page.fill("input[name=password]", READER_PASSWORD)
        page.click("button:has-text('Sign in')")
        expect(page.locator("#signed-in")).to_have_text("reader")
        assert page.url == url + "/"
        # The dashboard with live figures.
        expect(page.locator("#card-workers .value")).to_have_text("1")
        expect(page.locator("#card-rate .value")).to_have_text("500")  # 150,000 headers over 5 min
        releases = query(filled.db, "SELECT count(*) AS n FROM releases")[0]["n"]
        expect(page.locator("#card-releases .value")).to_have_text(f"{releases:,}")
        expect(page.locator("#groups")).to_contain_text(GROUP)
        expect(page.locator("#workers")).to_contain_text("working")
        expect(page.locator("#failed")).to_contain_text("does not inflate after a plain fetch")
        assert page.locator("[role=progressbar]").count() >= 2
        page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)

        # Search finds the release; its NZB link downloads.
        page.click("text=Releases")
        words = " ".join(hit.name.split(".")[:2])
        page.fill("input[name=q]", words)
        page.click("button:has-text('Search')")
        row = page.locator("#results tr", has_text=hit.name)
        expect(row).to_have_count(1)
        page.screenshot(path=str(ARTIFACTS / "search.png"), full_page=True)
        with page.expect_download() as download_info:
            row.locator("a.nzb").click()
        download = download_info.value
        assert download.suggested_filename.endswith(".nzb")
        saved = ARTIFACTS / "downloaded.nzb"
        download.save_as(str(saved))
        content = saved.read_bytes()
        assert content.startswith(b"<?xml")
        assert b"<segment " in content
        assert filled.search.get(hit.guid).grabs == 1  # type: ignore[union-attr]
        reader = next(u for u in filled.users.all() if u.name == "reader")
        # Counted: the releases page, the search, the NZB (not the dashboard, which refreshes itself).
        assert (reader.downloads_today, reader.requests_today) == (1, 3)

        # An admin logs in, retries the failed range from the dashboard and adds a user.
        page.goto(url + "/admin/login")
        page.fill("input[name=password]", ADMIN_PASSWORD)
        page.click("button:has-text('Log in')")
        expect(page.locator("h1")).to_have_text("Groups")
        page.goto(url + "/")
        page.locator("#failed button:has-text('Retry')").click()
        expect(page.locator("#no-failed")).to_be_visible()
        status = query(filled.db, "SELECT status FROM ranges WHERE id = :id", {"id": failed})
        assert status == [{"status": "planned"}]
        page.screenshot(path=str(ARTIFACTS / "dashboard-after-retry.png"), full_page=True)
        page.goto(url + "/admin/users")
        page.fill("#add-user input[name=name]", "browser-user")
        page.fill("#add-user input[name=requests_per_day]", "1000")
        page.click("#add-user button")
        key = page.locator("#secret").inner_text().strip()
        assert filled.users.authenticate(key).name == "browser-user"
        expect(page.locator("#admin-users")).to_contain_text("0 / 1,000")
        page.screenshot(path=str(ARTIFACTS / "admin-users.png"), full_page=True)

"""``usenet-indexer demo``: ``run`` against the sample news server (nntp/sample_server.py), in
``DATA_DIR/demo`` so that sample data never mixes with a real catalog.

It starts the sample server on a free loopback port, adds its groups, gives the user ``demo`` a new API
key, and runs everything until the groups are indexed and the obfuscated releases named. Then, through
the newznab API as a client would, it searches and fetches one NZB into the data directory, prints the
addresses, and serves on until Ctrl-C (or stops, with ``--exit-when-done``).

The demo's sizes differ from the defaults, for a sample of ~300,000 articles: ranges of 50,000 articles
(several per group, so the workers share every group), chunks of 10,000 (the sample server's blocks,
served without re-compressing), a probe and planning pass every few seconds.
"""

from __future__ import annotations

import contextlib
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import urlencode

import httpx

from usenet_indexer.coordinator.groups import GroupError
from usenet_indexer.coordinator.services import Services, open_services
from usenet_indexer.coordinator.users import UserError
from usenet_indexer.local.run import LocalRun, RunOptions, run_until_stopped
from usenet_indexer.local.view import View
from usenet_indexer.nntp.sample_server import SampleFeed, SampleServer, sample_groups
from usenet_indexer.settings import Settings

DEMO_USER = "demo"
SEARCH_WORDS = "harbor"  # in the sample's movie and TV titles ("Quiet.Harbor", "Harbor.Watch")
DEMO_SETTINGS = {
    "range_articles": 50_000,
    "chunk_articles": 10_000,
    "planner_period_seconds": 10.0,
    "probe_period_seconds": 2.0,
    "prefetch_idle_seconds": 0.5,
}
NEWZNAB = "{http://www.newznab.com/DTD/2010/feeds/attributes/}"


def demo_settings(settings: Settings, news_port: int, port: int | None) -> Settings:
    """The demo's settings: the sample server, the demo's sizes, its own data directory (and SQLite
    file, unless a database was given)."""
    data_dir = settings.data_dir / "demo"
    default_db = f"sqlite:///{(settings.data_dir / 'usenet-indexer.db').as_posix()}"
    values = {
        **settings.model_dump(),
        **DEMO_SETTINGS,
        "data_dir": data_dir,
        "database_url": "" if settings.database_url == default_db else settings.database_url,
        "nntp_host": "127.0.0.1",
        "nntp_port": news_port,
        "nntp_ssl": False,
        "nntp_starttls": False,
        "nntp_user": None,
        "nntp_password": None,
        "nntp_connections": 4,
        "nntp_fill_servers": [],
    }
    if port is not None:
        values["port"] = port
    return Settings.model_validate(values)


def prepare(services: Services, feed: SampleFeed) -> str:
    """Add the sample groups (once) and give the demo user a new key; the key."""
    for name in feed.groups:
        with contextlib.suppress(GroupError):  # added by an earlier demo: it goes on from there
            services.groups.add(name)
    try:
        return services.users.add(DEMO_USER)[1]
    except UserError:
        return services.users.new_key(DEMO_USER)


def nzb_file_name(title: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", title).strip("._")[:150] + ".nzb"


def show_results(local: LocalRun, view: View, key: str, data_dir: Path) -> None:
    """Search and fetch an NZB through the newznab API, as Sonarr or SABnzbd would; print where."""
    search = f"{local.url}/api?" + urlencode({"t": "search", "q": SEARCH_WORDS, "apikey": key})
    with httpx.Client(timeout=30) as client:
        feed = ET.fromstring(client.get(search).content)
        response = feed.find(f"channel/{NEWZNAB}response")
        total = response.get("total", "0") if response is not None else "0"
        item = feed.find("channel/item")
        lines = [
            "",
            "The sample groups are indexed (sample data from a generator, not Usenet).",
            f"  web UI:          {local.url}/",
            f"  newznab search:  {search}   ({total} results)",
            f"  newznab API key: {key}   (user {DEMO_USER}; Sonarr, Radarr, Prowlarr: add a Newznab "
            f"indexer with URL {local.url} and this key)",
        ]
        if item is not None:
            title = item.findtext("title") or "release"
            enclosure = item.find("enclosure")
            url = enclosure.get("url", "") if enclosure is not None else ""
            got = client.get(url)
            got.raise_for_status()
            folder = data_dir / "nzb"
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / nzb_file_name(title)
            path.write_bytes(got.content)
            lines.append(f"  an NZB:          {path} ({title}, fetched with t=get)")
    named = local.services.db.transaction(write=False)
    with named as tx:
        probes = {str(r["status"]): int(r["n"]) for r in tx.run("dashboard_probes")}
    lines.append(
        f"  probe:           {probes.get('done', 0)} obfuscated releases named from their PAR2 files"
    )
    lines.append("Ctrl-C stops. Next, index a real provider: see README.md, `usenet-indexer run`.")
    view.print("\n".join(lines))


def run_demo(
    settings: Settings,
    *,
    workers: int | None = None,
    port: int | None = None,
    exit_when_done: bool = False,
    view_mode: str = "auto",
    scale: float = 1.0,
) -> int:
    chunk = int(DEMO_SETTINGS["chunk_articles"])
    print(f"generating the sample news server's groups (~{300_000 * scale:,.0f} articles) …", flush=True)
    feed = SampleFeed(sample_groups(scale), block_articles=chunk)
    with SampleServer(feed) as news:
        print(
            f"sample news server on 127.0.0.1:{news.port}: {feed.articles():,} articles in "
            f"{', '.join(feed.groups)}",
            flush=True,
        )
        demo = demo_settings(settings, news.port, port)
        services = open_services(demo)
        try:
            key = prepare(services, feed)
            options = RunOptions(idle_seconds=1.0)
            if workers is not None:
                options.workers = workers
            return run_until_stopped(
                services,
                options,
                view_mode=view_mode,
                exit_when_done=exit_when_done,
                status_seconds=5.0,
                when_done=lambda local, view: show_results(local, view, key, demo.data_dir),
            )
        finally:
            services.close()

"""``usenet-indexer demo``: ``run`` against the sample news server (newsservers/sample_server.py), in
``DATA_DIR/demo`` so that sample data never mixes with a real catalog.

It starts the sample server (``usenet-indexer sample-server``, a child process) on a free loopback
port, adds its groups, gives the user ``demo`` a new API
key, and runs everything until the groups are indexed and the obfuscated releases named. Then, through
the newznab API as a client would, it searches and fetches one NZB into the data directory, prints the
addresses, and serves on until Ctrl-C (or stops, with ``--exit-when-done``).

The demo's sizes differ from the defaults, for a sample of ~300,000 articles: ranges of 50,000 articles
(several per group, so the workers share every group), chunks of 10,000 (the sample server's blocks,
served without re-compressing), a probe and planning pass every few seconds.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import urlencode

import httpx

from usenet_indexer.coordinator.registries.groups import GroupError
from usenet_indexer.coordinator.registries.users import UserError
from usenet_indexer.coordinator.wiring import Services, open_services
from usenet_indexer.local.run import LocalRun, RunError, RunOptions, run_until_stopped
from usenet_indexer.local.view import View
from usenet_indexer.newsservers.sample_server import sample_groups
from usenet_indexer.settings import Settings

DEMO_USER = "demo"
SEARCH_WORDS = "harbor"  # in the sample's movie and TV titles ("Quiet.Harbor", "Harbor.Watch")
DEMO_SETTINGS = {
    "range_articles": 50_000,
    "chunk_articles": 10_000,
    # The groups grow while the demo runs (the sample server's live part): their tail is planned
    # every few seconds, whatever arrived (a real group waits for tail_min_articles).
    "tail_min_articles": 1,
    "planner_period_seconds": 3.0,
    "probe_period_seconds": 2.0,
    "grouping_period_seconds": 2.0,
    "prefetch_idle_seconds": 0.5,
    # Sample data on loopback: the catalog is open, to look at without an account (a real indexer's
    # is private: users sign in).
    "public_catalog": True,
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


def prepare(services: Services, groups: list[str]) -> str:
    """Add the sample groups (once) and give the demo user a new key; the key."""
    for name in groups:
        with contextlib.suppress(GroupError):  # added by an earlier demo: it goes on from there
            services.groups.add(name)
    try:
        return services.users.add(DEMO_USER)[1]
    except UserError:
        return services.users.new_key(DEMO_USER)


class SampleServerProcess:
    """``usenet-indexer sample-server`` as a child process: a news server is a process of its own, and
    generating the sample there overlaps with the coordinator's start (2 cores: each its own)."""

    def __init__(self, scale: float, block_articles: int, live_seconds: float) -> None:
        from usenet_indexer.edge.parent import PARENT_PID_VARIABLE

        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "usenet_indexer",
                "sample-server",
                "--port=0",
                f"--scale={scale}",
                f"--block-articles={block_articles}",
                f"--live-seconds={live_seconds}",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, PARENT_PID_VARIABLE: str(os.getpid())},
            process_group=0,  # a terminal's Ctrl-C reaches the demo, which stops this last
        )
        self.port = 0
        self.articles = 0
        self.highs: dict[str, int] = {}  # each group's high watermark once everything is posted

    def wait_ready(self, timeout: float = 300.0) -> int:
        """Wait for it to listen; its port."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            if match := re.match(r"(\S+): (\d+) articles, \d+-(\d+)", line):
                self.articles += int(match.group(2))
                self.highs[match.group(1)] = int(match.group(3))
            if match := re.search(r"listening on [^:]+:(\d+)", line):
                self.port = int(match.group(1))
                return self.port
        self.stop()
        raise RunError(f"the sample news server did not start (exit code {self.process.poll()})")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        if self.process.stdout is not None:
            self.process.stdout.close()


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
            f"  web UI:          {local.url}/   (the demo's catalog is open; a real one takes a sign-in)",
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
    assert local.services is not None  # started
    named = local.services.db.transaction(write=False)
    with named as tx:
        done = [r for r in tx.run("metrics_probes") if r["status"] == "done"]
    passwords = sum(int(r["passwords"]) for r in done)
    lines.append(
        f"  probe:           {sum(int(r['n']) for r in done) - passwords} obfuscated releases named from "
        f"their bodies (PAR2, yEnc names); {passwords} releases' archives read for a password"
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
    batch_articles: int = int(DEMO_SETTINGS["range_articles"]),
    live_seconds: float = 20.0,
) -> int:
    chunk = int(DEMO_SETTINGS["chunk_articles"])
    groups = [g.name for g in sample_groups(scale)]
    print(f"starting the sample news server: generating ~{300_000 * scale:,.0f} articles …", flush=True)
    news = SampleServerProcess(scale, chunk, live_seconds)
    try:
        # The store is migrated while the sample is generated; both need a core for a few seconds.
        demo = demo_settings(settings, 0, port)
        services = open_services(demo)
        try:
            news_port = news.wait_ready()
            live = f"; a tenth more arrive over {live_seconds:.0f} s" if live_seconds else ""
            print(
                f"sample news server on 127.0.0.1:{news_port}: {news.articles:,} articles in "
                f"{', '.join(groups)} (sample data, not Usenet{live})",
                flush=True,
            )
            # Now that the port is known (the store's parts do not depend on the news server).
            services.settings = demo_settings(settings, news_port, port)
            key = prepare(services, groups)
            options = RunOptions(batch_articles=batch_articles, idle_seconds=1.0)
            if workers is not None:
                options.workers = workers
            return run_until_stopped(
                services,
                options,
                view_mode=view_mode,
                exit_when_done=exit_when_done,
                status_seconds=5.0,
                when_done=lambda local, view: show_results(local, view, key, demo.data_dir),
                # Done when the groups are indexed up to what the sample server will have posted.
                done=lambda snapshot: (
                    snapshot.done and all(g.high == news.highs.get(g.name, g.high) for g in snapshot.groups)
                ),
            )
        finally:
            services.close()
    finally:
        news.stop()

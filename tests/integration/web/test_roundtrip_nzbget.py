"""Round trip with a real downloader: files and their PAR2 set (made by the real ``par2``) are posted
to INN2 as multi-part yEnc, the group's overview is fetched with the project's NNTP client into the
spool, edge workers index it into the catalog through a live coordinator, ``t=search`` finds the
release, ``t=get`` writes its NZB, and NZBGet — given the ``t=get`` link, so it fetches the NZB itself —
downloads every article from INN2, checks the yEnc CRCs and the PAR2 set, and writes files
byte-identical to the originals.

Needs INN2 (scripts/inn2-setup.sh), ``par2`` and ``nzbget`` (scripts/setup-system.sh).
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
import threading
import time
import uuid
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path

import httpx
import pytest
from lxml import etree

from tests.support import inn2 as support
from tests.support.databases import SqliteTemplate
from tests.support.live import live_coordinator
from tests.support.nzbget import NZBGet, wait_for_history
from tests.support.store import query, services_for
from usenet_indexer.articles import chunk_spans
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.edge.client import NodeClient
from usenet_indexer.edge.worker import EdgeWorker
from usenet_indexer.nntp import yenc
from usenet_indexer.nntp.client import NNTPClient
from usenet_indexer.nntp.errors import NNTPReplyError
from usenet_indexer.wire.chunks import deflate_plain

pytestmark = pytest.mark.slow

NS = {"newznab": "http://www.newznab.com/DTD/2010/feeds/attributes/"}
PART_BYTES = 120_000
POSTER = "roundtrip@usenet-indexer.test"


@pytest.fixture(scope="module")
def inn2_ready(inn2: None) -> None:
    for tool in ("par2", "nzbget"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed: run scripts/setup-system.sh")


def make_files(folder: Path, base: str) -> dict[str, bytes]:
    """Two data files and a PAR2 set (index and volumes) made by the real par2."""
    rng = random.Random(2026)
    originals = {
        f"{base}.mkv": rng.randbytes(610_000),
        f"{base}.nfo": b"A round trip through INN2 and NZBGet.\r\n" * 40,
    }
    for name, data in originals.items():
        (folder / name).write_bytes(data)
    subprocess.run(
        ["par2", "create", "-q", "-r10", "-n2", f"{base}.par2", *originals],
        cwd=folder,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def articles(base: str, files: dict[str, bytes]) -> list[support.Article]:
    """Each file in yEnc parts with subjects as posting tools write them."""
    out = []
    names = sorted(files, key=lambda n: (n.endswith(".par2"), n))
    date = format_datetime(datetime.now(UTC), usegmt=True)
    for index, name in enumerate(names, start=1):
        data = files[name]
        parts = max(1, -(-len(data) // PART_BYTES))
        crc = zlib.crc32(data)
        for part in range(1, parts + 1):
            begin = (part - 1) * PART_BYTES
            piece = data[begin : begin + PART_BYTES]
            body = yenc.encode(
                piece, name, part=part, total=parts, begin=begin + 1, file_size=len(data), file_crc32=crc
            )
            subject = f'{base} - [{index:02d}/{len(names):02d}] - "{name}" yEnc ({part}/{parts})'
            message_id = f"<{uuid.uuid4().hex}.{index}.{part}@usenet-indexer.test>"
            out.append(support.Article(message_id, subject, POSTER, body, date))
    return out


def spool_overview(services: Services, group: str) -> None:
    """The group's ranges planned from INN2's watermarks and every chunk fetched with OVER."""

    async def fetch() -> None:
        async with NNTPClient(support.HOST, support.PLAIN_PORT, timeout=30.0) as client:
            info = await client.group(group)
            services.groups.add(group)
            services.groups.plan(group, info.low, info.high)
            ranges = query(services.db, "SELECT id, start_id, end_id FROM ranges ORDER BY id")
            for r in ranges:
                spans = chunk_spans(int(r["start_id"]), int(r["end_id"]), services.settings.chunk_articles)
                for span in spans:
                    text = b""
                    if span.first <= info.high and span.last >= info.low:
                        try:
                            chunk = await client.over_chunk(span.first, span.last, compress=False)
                            text = chunk.plain()
                        except NNTPReplyError:
                            text = b""  # 423: no article in the span
                    services.spool.write(int(r["id"]), span, deflate_plain(text))
                query(
                    services.db,
                    "UPDATE ranges SET spooled_chunks = :n WHERE id = :id",
                    {"n": len(spans), "id": r["id"]},
                )

    asyncio.run(fetch())


def index_with_workers(services: Services, url: str) -> None:
    tokens = [services.nodes.add(f"edge-{i}")[1] for i in range(2)]
    workers = [EdgeWorker(NodeClient(url, t), batch_articles=1_000, idle_seconds=0.1) for t in tokens]
    threads = [threading.Thread(target=w.run, kwargs={"max_ranges": 10}) for w in workers]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if query(services.db, "SELECT count(*) AS n FROM ranges WHERE status <> 'done'")[0]["n"] == 0:
            break
        time.sleep(0.2)
    for w in workers:
        w.stop.set()
    for t in threads:
        t.join(30)
    for w in workers:
        w.close()
        w.client.close()


@pytest.fixture
def nzbget(tmp_path: Path) -> Iterator[NZBGet]:
    folder = tmp_path / "nzbget"
    folder.mkdir()
    client = NZBGet(folder)
    yield client
    client.close()


def test_nzbget_downloads_a_release_found_and_fetched_through_the_api(
    inn2_ready: None, sqlite_template: SqliteTemplate, tmp_path: Path, nzbget: NZBGet
) -> None:
    group = support.new_group("alt.binaries.roundtrip")
    base = f"Roundtrip.Check.{uuid.uuid4().hex[:6]}.2026.1080p.WEB-DL.x264-UIX"
    source = tmp_path / "source"
    source.mkdir()
    files = make_files(source, base)
    assert any(n.endswith(".par2") and ".vol" in n for n in files)
    posted = articles(base, files)
    assert support.post_articles(group, posted) == len(posted)

    with sqlite_template.database(tmp_path) as url:
        services = services_for(url, tmp_path / "data", range_articles=1_000, chunk_articles=100)
        services.rules.ensure_default()
        try:
            spool_overview(services, group)
            _, api_key = services.users.add("downloader")
            with live_coordinator(services) as coordinator:
                index_with_workers(services, coordinator)
                assert query(services.db, "SELECT DISTINCT status FROM ranges") == [{"status": "done"}]
                release = query(services.db, "SELECT name, complete, files_seen FROM releases")
                assert release == [{"name": base, "complete": 1, "files_seen": len(files)}]

                words = " ".join(base.split(".")[:3])
                found = httpx.get(f"{coordinator}/api", params={"t": "search", "q": words, "apikey": api_key})
                root = etree.fromstring(found.content)
                items = root.findall("channel/item")
                assert [i.findtext("title") for i in items] == [base]
                link = items[0].findtext("link")
                size = int(items[0].find("newznab:attr[@name='size']", NS).get("value"))
                # The sum of the articles' sizes (overview Bytes): the data, yEnc's overhead and headers.
                assert sum(len(d) for d in files.values()) < size < 2 * sum(len(a.body) for a in posted)
                nzb = httpx.get(link)
                assert nzb.status_code == 200
                assert nzb.content.count(b"<segment ") == len(posted)

                nzbget.call("append", f"{base}.nzb", link, "", 0, False, False, "", 0, "SCORE", [])
                entry = wait_for_history(nzbget)
            assert entry["Status"].startswith("SUCCESS"), (entry, nzbget.log())
            assert entry["ParStatus"] == "SUCCESS", nzbget.log()
            assert entry["FailedArticles"] == 0
            assert entry["SuccessArticles"] == len(posted)
            log = nzbget.log()
            assert "par" in log.lower()
            downloaded = Path(entry["DestDir"])
            for name, data in files.items():
                got = downloaded / name
                assert got.exists(), (sorted(os.listdir(downloaded)), log)
                assert got.read_bytes() == data, name
            grabs = query(services.db, "SELECT grabs FROM releases")[0]["grabs"]
            assert grabs == 2  # the test's t=get and NZBGet's
        finally:
            services.close()

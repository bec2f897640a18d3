"""The sample news server through our own NNTP client: watermarks, overview (a block's stored zlib
stream, any other range cut from it), yEnc bodies made from message-ids, real PAR2 index files that
name obfuscated releases, and ARTICLE/HEAD/STAT."""

from __future__ import annotations

import hashlib
import re
import shutil
import socket
import subprocess
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from usenet_indexer.catalog.probe import name_from_par2
from usenet_indexer.indexing import sample
from usenet_indexer.indexing.naming import FileKind, file_kind
from usenet_indexer.indexing.par2 import read_par2, recovery_head
from usenet_indexer.newsservers.fake_server import Script
from usenet_indexer.newsservers.sample_server import PART_BYTES, SampleFeed, SampleServer, sample_groups
from usenet_indexer.nntp import Command, NoSuchArticle
from usenet_indexer.nntp.client import NNTPClient
from usenet_indexer.nntp.yenc import decode

BLOCK = 2_000


@pytest.fixture(scope="module")
def feed() -> SampleFeed:
    return SampleFeed(sample_groups(0.05), block_articles=BLOCK)


@pytest.fixture(scope="module")
def server(feed: SampleFeed) -> Iterator[SampleServer]:
    with SampleServer(feed) as running:
        yield running


def client(server: SampleServer, **options: object) -> NNTPClient:
    return NNTPClient("127.0.0.1", server.port, timeout=10.0, **options)  # type: ignore[arg-type]


@pytest.mark.slow
def test_the_same_seed_makes_the_same_groups(feed: SampleFeed) -> None:
    again = SampleFeed(sample_groups(0.05), block_articles=BLOCK, start_time=feed.start_time)
    for name in feed.groups:
        low, high = feed.watermarks(name)
        assert again.overview(name, low, high) == feed.overview(name, low, high)
    other = SampleFeed(sample_groups(0.05), block_articles=BLOCK, seed=1, start_time=feed.start_time)
    low, high = feed.watermarks(feed.groups[0])
    assert other.overview(feed.groups[0], low, high) != feed.overview(feed.groups[0], low, high)


async def test_group_and_overview_compressed_and_plain(feed: SampleFeed, server: SampleServer) -> None:
    name = feed.groups[0]
    low, high = feed.watermarks(name)
    async with client(server) as gzip_client, client(server, compression="none") as plain_client:
        info = await gzip_client.group(name)
        assert (info.low, info.high) == (low, high)
        await plain_client.group(name)
        block = low - low % BLOCK + BLOCK  # a whole block: the stored stream, as it is
        whole = await gzip_client.over_chunk(block, block + BLOCK - 1)
        assert whole.encoding == "zlib"
        assert whole.data == feed.overview_zlib(name, block, block + BLOCK - 1)
        plain = await plain_client.over_chunk(block, block + BLOCK - 1)
        assert whole.plain() == plain.data
        # The group's first, partial block, and a range across two blocks, cut from them.
        first = await gzip_client.over_chunk(low, low - low % BLOCK + BLOCK - 1)
        assert first.data == feed.overview_zlib(name, low, low - low % BLOCK + BLOCK - 1)
        across = await gzip_client.over_chunk(block + 500, block + BLOCK + 499)
        numbers = across.article_numbers()
        assert numbers == sorted(numbers)
        assert numbers[0] >= block + 500 and numbers[-1] <= block + BLOCK + 499
        assert len(numbers) > BLOCK * 0.9
    everything = feed.overview(name, low, high).split(b"\r\n")[:-1]
    assert len(everything) == feed.group(name)[0]  # type: ignore[index]
    assert zlib.decompress(whole.data).split(b"\r\n")[:-1] == [
        line for line in everything if block <= int(line.split(b"\t", 1)[0]) < block + BLOCK
    ]


async def test_bodies_decode_and_a_reposted_part_carries_the_same_bytes(
    feed: SampleFeed, server: SampleServer
) -> None:
    name = feed.groups[1]
    low, _high = feed.watermarks(name)
    lines = [line.split(b"\t") for line in feed.overview(name, low, low + 3000).split(b"\r\n")[:-1]]
    by_part: dict[tuple[str, int, int], list[bytes]] = {}
    for fields in lines:
        found = feed.carried(fields[4].decode())
        assert found is not None
        by_part.setdefault((found[0], found[2], found[3]), []).append(fields[4])
    reposted = next(ids for ids in by_part.values() if len(ids) > 1)
    styles: dict[str, int] = {}
    async with client(server) as c:
        for fields in lines:
            found = feed.carried(fields[4].decode())
            assert found is not None
            if styles.get(found[1].scheme, 0) >= 10:
                continue
            styles[found[1].scheme] = styles.get(found[1].scheme, 0) + 1
            decoded = decode(await c.body(fields[4].decode()))  # the CRC is checked
            _, release, index, part = found
            f = release.files[index]
            # The yEnc name: the quoted one where the subject quotes the file's name, else the real
            # name (per_file_random) or a random one (fully_random), never the subject's.
            assert (decoded.name, decoded.part, decoded.total) == (f.yenc, part, f.parts_total)
            subject = fields[1].decode()
            assert (f'"{decoded.name}"' in subject) == (
                release.scheme in ("named", "noisy", "par2_obfuscated")
            )
            if file_kind(f.real) is not FileKind.PAR2:
                assert decoded.part is not None
                assert decoded.begin == (decoded.part - 1) * PART_BYTES + 1
        assert set(styles) == set(sample.STYLES)
        copies = {decode(await c.body(mid.decode())).data for mid in reposted}
        assert len(copies) == 1
        with pytest.raises(NoSuchArticle):
            await c.body("<part1of1.5.0@sample.usenet-indexer.invalid>")
        with pytest.raises(NoSuchArticle):
            await c.body("<nothing@example.com>")


def _articles(feed: SampleFeed, name: str) -> dict[str, dict[int, dict[int, str]]]:
    """Release id -> file index -> part -> message-id (the first posted), from the group's overview."""
    low, high = feed.watermarks(name)
    out: dict[str, dict[int, dict[int, str]]] = {}
    for line in feed.overview(name, low, high).split(b"\r\n")[:-1]:
        message_id = line.split(b"\t")[4].decode()
        found = feed.carried(message_id)
        assert found is not None
        out.setdefault(found[0], {}).setdefault(found[2], {}).setdefault(found[3], message_id)
    return out


@pytest.mark.parametrize("style", sorted(sample.OBFUSCATED))
async def test_an_obfuscated_release_is_named_by_its_par2_index(
    feed: SampleFeed, server: SampleServer, tmp_path: Path, style: str
) -> None:
    name = feed.groups[0]
    articles = _articles(feed, name)
    truth = {t.id: t for t in feed.truth()}
    # A release of the style of which every part was posted.
    rid = next(r for r, t in truth.items() if t.style == style and t.complete and r in articles)
    hidden = feed.releases(name)[int(rid.split(":")[1])]
    index = next(i for i, f in enumerate(hidden.files) if file_kind(f.real) is FileKind.PAR2)
    async with client(server) as c:
        par2 = decode(await c.body(articles[rid][index][1])).data
        release_name, _files = name_from_par2(par2)
        assert release_name == sample.unobfuscated(hidden) == truth[rid].name
        assert release_name not in {hidden.collection, *(f.name for f in hidden.files)}
        # The PAR2 describes the files exactly as their parts decode: par2cmdline verifies them.
        rar = next(
            i
            for i, f in enumerate(hidden.files)
            if file_kind(f.real) is FileKind.RAR or f.real.endswith(".mkv")
        )
        parts = [decode(await c.body(articles[rid][rar][p])).data for p in sorted(articles[rid][rar])]
    real = hidden.files[rar].real
    data = b"".join(parts)
    described = {f.name: f for f in read_par2(par2).files}
    assert described[real].hash_full == hashlib.md5(data).digest()
    assert described[real].size == len(data) == truth[rid].files[rar].size
    tool = shutil.which("par2")
    assert tool is not None, "the par2 command is missing: apt-get install -y par2"
    (tmp_path / real).write_bytes(data)
    (tmp_path / "x.par2").write_bytes(par2)
    done = subprocess.run([tool, "verify", "x.par2"], cwd=tmp_path, capture_output=True, text=True)
    assert f'Target: "{real}" - found.' in done.stdout, done.stdout
    assert set(described) == {
        f.real for f in hidden.files if file_kind(f.real) not in (FileKind.PAR2, FileKind.PAR2_VOLUME)
    }
    assert len(par2) == truth[rid].files[index].size


async def test_article_head_and_stat_by_number(feed: SampleFeed, server: SampleServer) -> None:
    name = feed.groups[2]
    low, _ = feed.watermarks(name)
    first = feed.overview(name, low, low).split(b"\t")
    async with client(server) as c:
        await c.group(name)
        article = await c.multiline(_command(f"ARTICLE {low}", 220))
        head, _, body = article.partition(b"\r\n\r\n")
        assert f"Message-ID: {first[4].decode()}".encode() in head
        assert f"Subject: {first[1].decode()}".encode() in head
        assert decode(body).data
        stat = await c.simple(Command(f"STAT {first[4].decode()}"))
        assert stat.code == 223
        listed = await c.multiline(_command("LIST ACTIVE", 215))
        assert name.encode() in listed


def _command(text: str, code: int) -> Command:
    return Command(text, frozenset({code}))


async def test_a_recovery_volume_is_laid_out_as_par2cmdline_lays_it_out(
    feed: SampleFeed, server: SampleServer
) -> None:
    """A recovery volume's first part starts with the Recovery Slice packet its name's first exponent
    says, and the whole volume holds as many as its name's count, with the index's packets (so that
    its size tells the count, indexing/volumes.py): what the probe names volumes by."""
    name = feed.groups[0]
    low, high = feed.watermarks(name)
    lines = [ln.split(b"\t") for ln in feed.overview(name, low, high).split(b"\r\n")[:-1]]
    volume = re.compile(rb'\.vol(\d+)\+(\d+)\.par2" yEnc \((\d+)/(\d+)\)')
    firsts = [(m, cols) for cols in lines if (m := volume.search(cols[1])) and m[3] == b"1"]
    assert firsts
    async with client(server) as c:
        for match, cols in firsts[:8]:
            decoded = decode(await c.body(cols[4].decode()))
            assert decoded.part == 1
            head = recovery_head(decoded.data, whole=len(decoded.data) == decoded.size)
            assert head is not None and head.exponents[0] == int(match[1])
            if match[4] == b"1":  # a volume of one part: read whole
                index = read_par2(decoded.data)
                assert index.files and index.recovery_slices == int(match[2]) == len(head.exponents)


def test_a_live_feed_grows_while_the_server_runs() -> None:
    now = [0.0]
    feed = SampleFeed(
        sample_groups(0.05), block_articles=BLOCK, live_fraction=0.2, live_seconds=10.0, clock=lambda: now[0]
    )
    name = feed.groups[0]
    low, last = feed.watermarks(name)
    count, _, high = feed.group(name)  # type: ignore[misc]
    assert high < last and not feed.posted()
    feed.start_live()
    now[0] = 5.0
    count_later, _, later = feed.group(name)  # type: ignore[misc]
    assert high < later < last and count < count_later
    text = feed.overview(name, low, last)
    assert int(text.split(b"\r\n")[-2].split(b"\t", 1)[0]) <= later  # nothing past the high watermark
    block = later - later % BLOCK
    assert feed.overview_zlib(name, block, block + BLOCK - 1) is None  # a block not all posted
    assert feed.message_id(name, last) is None
    now[0] = 10.0
    assert feed.group(name)[2] == last and feed.posted()  # type: ignore[index]
    assert feed.overview_zlib(name, block, block + BLOCK - 1) is not None


def test_stopping_while_a_reply_is_delayed_ends_cleanly(feed: SampleFeed) -> None:
    # CI, a teardown: stop() woke the thread's loop, which ended and cancelled stop() itself and the
    # session still waiting out its delay (CancelledError from stop's future).
    server = SampleServer(feed, script=Script(reply_delay=2.0))
    port = server.start()
    name = feed.groups[0]
    low, _ = feed.watermarks(name)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn, conn.makefile("rb") as reader:
        assert reader.readline().startswith(b"20")
        conn.sendall(f"GROUP {name}\r\nXOVER {low}-{low + 5}\r\n".encode())
        assert reader.readline().startswith(b"211")
        time.sleep(0.3)  # the session is in its reply delay
        server.stop()  # raised CancelledError before the fix
    assert server.server is not None and server.server.stopped.is_set()

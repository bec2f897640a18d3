"""What INN2 cannot produce, against the scripted fake server: XZVER, XFEATURE COMPRESS GZIP,
cut-short compressed replies, dropped connections, replies that never end, 502 limits, garbage."""

from __future__ import annotations

import asyncio
import zlib

import pytest
from structlog.testing import capture_logs

from tests.support.fake_nntp import FakeNNTPServer, Script, fill_group
from usenet_indexer.nntp import (
    AuthRejected,
    CompressedReplyCorrupt,
    CompressedReplyTruncated,
    NNTPProtocolError,
    NNTPTimeout,
    NoSuchArticle,
    TooManyConnections,
)
from usenet_indexer.nntp.client import NNTPClient, inflate
from usenet_indexer.nntp.pool import NNTPPool, ServerSettings

GROUP = "alt.binaries.fake"


def _client(server: FakeNNTPServer, **kwargs: object) -> NNTPClient:
    return NNTPClient("127.0.0.1", server.port, timeout=5.0, **kwargs)  # type: ignore[arg-type]


def _settings(server: FakeNNTPServer, **kwargs: object) -> ServerSettings:
    return ServerSettings(host="127.0.0.1", port=server.port, timeout=5.0, **kwargs)  # type: ignore[arg-type]


async def test_xzver_chunk_is_raw_deflate_as_sent_and_checked() -> None:
    async with FakeNNTPServer(Script(support_gzip=False)) as server:
        lines = fill_group(server, GROUP, 1, 3000)
        async with _client(server, compression="xzver") as client:
            await client.group(GROUP)
            chunk = await client.over_chunk(1, 3000)
        assert "XZVER 1-3000" in server.commands
    expected = b"".join(line + b"\r\n" for line in lines)
    assert chunk.encoding == "deflate"
    assert chunk.lines == 3000
    assert chunk.plain_size == len(expected)
    assert zlib.decompress(chunk.data, -zlib.MAX_WBITS) == expected
    assert chunk.article_numbers() == list(range(1, 3001))


@pytest.mark.parametrize("terminator", [True, False])
async def test_xfeature_gzip_with_and_without_terminator(terminator: bool) -> None:
    async with FakeNNTPServer(Script(support_xzver=False)) as server:
        lines = fill_group(server, GROUP, 1, 2000)
        mode = "gzip-terminator" if terminator else "gzip"
        async with _client(server, compression=mode) as client:
            await client.group(GROUP)
            chunk = await client.over_chunk(1, 1000)
            # The next reply on the same connection must still parse: the end was found exactly.
            streamed = b"".join([piece async for piece in client.over(1001, 2000)])
            info = await client.group(GROUP)
        wanted = "XFEATURE COMPRESS GZIP TERMINATOR" if terminator else "XFEATURE COMPRESS GZIP"
        assert wanted in server.commands
    assert chunk.encoding == "zlib"
    assert inflate("zlib", chunk.data) == b"".join(line + b"\r\n" for line in lines[:1000])
    assert streamed == b"".join(line + b"\r\n" for line in lines[1000:])
    assert info == (2000, 1, 2000)


async def test_auto_falls_back_from_gzip_to_xzver_to_plain() -> None:
    async with FakeNNTPServer(Script(support_gzip=False, support_xzver=False)) as server:
        lines = fill_group(server, GROUP, 1, 50)
        async with _client(server) as client:
            await client.group(GROUP)
            chunk = await client.over_chunk(1, 50)
            again = await client.over_chunk(1, 50)
        # Each refusal is learned once: the second chunk goes straight to OVER.
        assert server.commands.count("XZVER 1-50") == 1
        assert server.commands.count("XFEATURE COMPRESS GZIP TERMINATOR") == 1
    assert chunk.encoding == again.encoding == "plain"
    assert chunk.data == b"".join(line + b"\r\n" for line in lines)


@pytest.mark.parametrize("mode", ["xzver", "gzip-terminator", "gzip"])
async def test_cut_short_compressed_reply_raises_truncated_then_plain_refetch_works(mode: str) -> None:
    script = Script(cut_short=1, support_xzver=mode == "xzver", support_gzip=mode != "xzver")
    async with FakeNNTPServer(script) as server:
        lines = fill_group(server, GROUP, 1, 2000)
        client = NNTPClient(
            "127.0.0.1",
            server.port,
            timeout=5.0,
            compression=mode,  # type: ignore[arg-type]
            cut_short_grace=0.3,
        )
        async with client:
            await client.group(GROUP)
            with pytest.raises(CompressedReplyTruncated):
                await client.over_chunk(1, 2000)
        async with _settings_pool(server, compression=mode) as pool:
            chunk = await pool.over_chunk(GROUP, 1, 2000, compress=False)
    assert chunk.encoding == "plain"
    assert chunk.data == b"".join(line + b"\r\n" for line in lines)
    assert issubclass(CompressedReplyTruncated, CompressedReplyCorrupt)


def _settings_pool(server: FakeNNTPServer, **kwargs: object) -> NNTPPool:
    return NNTPPool([_settings(server, **kwargs)], backoff_initial=0.01, backoff_max=0.05)


async def test_dropped_connection_mid_reply_is_retried_nothing_lost_nothing_twice() -> None:
    async with FakeNNTPServer(Script(drop_mid_reply=2)) as server:
        lines = fill_group(server, GROUP, 1, 5000)
        with capture_logs() as logged:
            async with _settings_pool(server, compression="none") as pool:
                pieces = [piece async for piece in pool.over(GROUP, 1, 5000)]
                chunk = await pool.over_chunk(GROUP, 1, 5000)
                stats = pool.stats()
    got = b"".join(pieces).split(b"\r\n")[:-1]
    assert got == lines  # in order, each exactly once
    assert chunk.data.split(b"\r\n")[:-1] == lines
    assert stats.dropped == 2
    assert stats.retries == 2
    # Each drop is in the log with the server and the error, not only in the pool's counters.
    drops = [e for e in logged if e["event"] == "nntp.connection_dropped"]
    assert len(drops) == 2
    assert all(e["server"] == f"127.0.0.1:{server.port}" and e["log_level"] == "warning" for e in drops)
    assert all(e["error"] and e["action"] == "retrying after a pause" for e in drops)


async def test_too_many_connections_backs_off_and_stays_within_the_limit() -> None:
    async with FakeNNTPServer(Script(max_connections=3, reply_delay=0.02)) as server:
        lines = fill_group(server, GROUP, 1, 4000)
        with capture_logs() as logged:
            async with NNTPPool(
                [_settings(server, connections=8, compression="none")], backoff_initial=0.01, backoff_max=0.1
            ) as pool:
                chunks = await asyncio.gather(
                    *(pool.over_chunk(GROUP, n, n + 99) for n in range(1, 4001, 100))
                )
                refused = pool.stats().refused_too_many
                limit = pool.limit()
    limits = [e["limit"] for e in logged if e["event"] == "nntp.too_many_connections"]
    # Each refusal is logged with the limit the pool then keeps to, coming down to what was accepted.
    assert len(limits) == refused and limits[-1] == limit and all(n >= 1 for n in limits)
    assert b"".join(c.data for c in chunks).split(b"\r\n")[:-1] == lines
    assert server.peak_connections <= 3
    assert refused >= 1
    assert limit <= 3
    # Once the ceiling is learned, the pool stops knocking: few refusals, not one per chunk.
    assert server.refused == refused <= 8


async def test_refused_with_no_connection_open_gives_up_with_a_clear_error() -> None:
    async with FakeNNTPServer(Script(max_connections=0)) as server:
        fill_group(server, GROUP, 1, 10)
        async with NNTPPool(
            [_settings(server)], backoff_initial=0.001, backoff_max=0.002, max_refusals=3
        ) as pool:
            with pytest.raises(TooManyConnections, match="refused 4 times"):
                await pool.group(GROUP)


async def test_reply_that_never_ends_times_out() -> None:
    async with FakeNNTPServer(Script(stall_mid_reply=1)) as server:
        fill_group(server, GROUP, 1, 1000)
        client = NNTPClient("127.0.0.1", server.port, timeout=0.5, compression="none")
        async with client:
            await client.group(GROUP)
            with pytest.raises(NNTPTimeout, match="sent nothing"):
                await client.over_chunk(1, 1000)
            assert not client.connected


async def test_garbage_raises_protocol_error_and_pool_recovers() -> None:
    async with FakeNNTPServer(Script(garbage_replies=1)) as server:
        fill_group(server, GROUP, 1, 10)
        with pytest.raises(NNTPProtocolError, match="not an NNTP status line"):
            async with _client(server, compression="none"):
                pass  # the garbage answers CAPABILITIES, during connect
        server.script.garbage_replies = 1
        async with _settings_pool(server, compression="none") as pool:
            assert await pool.group(GROUP) == (10, 1, 10)


async def test_fill_server_answers_what_the_primary_lacks() -> None:
    async with FakeNNTPServer() as primary, FakeNNTPServer() as fill:
        primary.add_article("<a@x>", b"from primary\r\n")
        fill.add_article("<a@x>", b"from fill\r\n")
        fill.add_article("<b@x>", b"only on fill\r\n")
        async with NNTPPool([_settings(fill, priority=1), _settings(primary, priority=0)]) as pool:
            assert await pool.body("<a@x>") == b"from primary\r\n"
            assert await pool.body("<b@x>") == b"only on fill\r\n"
            with pytest.raises(NoSuchArticle):
                await pool.body("<c@x>")


async def test_authinfo_against_fake_server() -> None:
    async with FakeNNTPServer(Script(require_auth=("u", "p"))) as server:
        fill_group(server, GROUP, 1, 5)
        async with _client(server, user="u", password="p") as client:
            assert await client.group(GROUP) == (5, 1, 5)
        with pytest.raises(AuthRejected):
            async with _client(server, user="u", password="wrong"):
                pass


async def test_auto_compression_over_a_slow_link_compresses_by_measurement() -> None:
    # 4 MB/s: a plain reply of ~150 kB takes ~40 ms on the wire, its gzip stream a tenth of that.
    async with FakeNNTPServer(Script(support_xzver=False, link_bytes_per_second=4_000_000)) as server:
        lines = fill_group(server, GROUP, 1, 6000)
        with capture_logs() as logged:
            async with _settings_pool(server, connections=1) as pool:
                choice = pool.compression_choice()
                assert choice is not None
                chunks = [await pool.over_chunk(GROUP, n, n + 999) for n in range(1, 5001, 1000)]
                assert choice.chosen == "compressed"
                chunks.append(await pool.over_chunk(GROUP, 5001, 6000))
                assert choice.open == {"plain": 0, "compressed": 1}
    assert b"".join(chunk.plain() for chunk in chunks) == b"".join(line + b"\r\n" for line in lines)
    assert chunks[-1].encoding != "plain"  # stored as it came, compressed
    chosen = [e for e in logged if e["event"] == "nntp.compression_chosen"]
    assert len(chosen) == 1
    assert chosen[0]["chosen"] == "compressed"
    assert chosen[0]["compressed_as"] in ("gzip", "zlib")
    assert chosen[0]["compressed_mb_per_s"] > chosen[0]["plain_mb_per_s"] > 0


async def test_auto_compression_reads_plain_from_a_server_that_compresses_nothing() -> None:
    async with FakeNNTPServer(Script(support_xzver=False, support_gzip=False)) as server:
        fill_group(server, GROUP, 1, 3000)
        async with _settings_pool(server, connections=2) as pool:
            choice = pool.compression_choice()
            assert choice is not None
            for n in range(1, 3001, 1000):
                assert (await pool.over_chunk(GROUP, n, n + 999)).lines == 1000
    assert choice.chosen == "plain"

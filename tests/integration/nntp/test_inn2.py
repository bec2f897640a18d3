"""The client and pool against a real news server: INN2 on loopback (scripts/inn2-setup.sh)."""

from __future__ import annotations

import asyncio
import os
import zlib
from collections.abc import Callable

import pytest
from structlog.testing import capture_logs

from tests.support import inn2 as support
from usenet_indexer.nntp import (
    AuthRejected,
    AuthRequired,
    EncryptionRequired,
    NNTPTLSError,
    NoSuchArticle,
    NoSuchGroup,
    yenc,
)
from usenet_indexer.nntp.client import Compression, NNTPClient
from usenet_indexer.nntp.pool import PROBE_ARTICLES, NNTPPool, ServerSettings

ClientFactory = Callable[..., NNTPClient]


def _message_ids(overview: bytes) -> list[str]:
    # Overview fields: number, subject, from, date, message-id, references, bytes, lines, xref.
    return [line.split(b"\t")[4].decode() for line in overview.split(b"\r\n") if line]


async def test_group_and_overview_fmt(inn2_group: str, inn2_client: ClientFactory) -> None:
    support.post_articles(inn2_group, [support.yenc_article(i) for i in range(1, 11)])
    async with inn2_client() as client:
        assert await client.group(inn2_group) == (10, 1, 10)
        fields = await client.overview_fmt()
    assert fields[:7] == ["Subject:", "From:", "Date:", "Message-ID:", "References:", "Bytes:", "Lines:"]
    assert fields[7].lower().startswith("xref:")


async def test_missing_group_raises_no_such_group(inn2_client: ClientFactory) -> None:
    async with inn2_client() as client:
        with pytest.raises(NoSuchGroup, match="411"):
            await client.group("alt.binaries.does-not-exist.usenet-indexer")
        # The connection is still good after an error reply.
        assert client.ready


@pytest.mark.parametrize("compression", ["none", "deflate"])
async def test_over_returns_every_posted_article_exactly_once(
    inn2_group: str, compression: Compression
) -> None:
    articles = [support.yenc_article(i) for i in range(1, 3001)]
    assert support.post_articles(inn2_group, articles) == 3000
    server = ServerSettings(
        host=support.HOST, port=support.PLAIN_PORT, connections=4, compression=compression
    )
    async with NNTPPool([server]) as pool:
        info = await pool.group(inn2_group)
        assert info == (3000, 1, 3000)
        chunks = [await pool.over_chunk(inn2_group, n, min(n + 699, 3000)) for n in range(1, 3001, 700)]
        streamed = b"".join([piece async for piece in pool.over(inn2_group, 1, 3000)])
    # COMPRESS DEFLATE is per session: the chunks arrive inflated, for the caller to deflate.
    assert all(chunk.encoding == "plain" for chunk in chunks)
    ids = [mid for chunk in chunks for mid in _message_ids(chunk.plain())]
    assert sorted(ids) == sorted(a.message_id for a in articles)
    assert len(set(ids)) == len(ids) == 3000
    assert [n for chunk in chunks for n in chunk.article_numbers()] == list(range(1, 3001))
    assert _message_ids(streamed) == ids


async def test_compress_deflate_is_negotiated_with_inn2(inn2_group: str, inn2_client: ClientFactory) -> None:
    support.post_articles(inn2_group, [support.yenc_article(i) for i in range(1, 201)])
    async with inn2_client(compression="auto") as client:
        assert client.session_compression == "deflate"
        await client.group(inn2_group)
        chunk = await client.over_chunk(1, 200)
    assert chunk.lines == 200


async def test_body_of_a_posted_yenc_article_decodes_to_the_original(
    inn2_group: str, inn2_client: ClientFactory
) -> None:
    payload = os.urandom(200_000)
    article = support.yenc_article(1, payload=payload)
    support.post_articles(inn2_group, [article])
    async with inn2_client() as client:
        body = await client.body(article.message_id)
        with pytest.raises(NoSuchArticle):
            await client.body("<not-posted.usenet-indexer@example.test>")
    decoded = yenc.decode(body)
    assert decoded.data == payload
    assert decoded.crc32 == zlib.crc32(payload)


async def test_overview_line_of_one_megabyte_passes(inn2_group: str, inn2_client: ClientFactory) -> None:
    # A folded Subject header: the overview unfolds it into one line of over 1 MB.
    chunk_text = "x" * 990
    folded = "\r\n ".join(f"long{i:04d}{chunk_text}" for i in range(1060))
    article = support.yenc_article(1)
    big = support.Article(article.message_id, folded, article.poster, article.body, article.date)
    support.post_articles(inn2_group, [big, support.yenc_article(2)])
    async with inn2_client() as client:
        await client.group(inn2_group)
        overview = b"".join([piece async for piece in client.over(1, 2)])
    lines = overview.split(b"\r\n")
    assert len(lines[0]) > 1_048_576
    assert lines[0].startswith(b"1\t")
    assert lines[1].startswith(b"2\t")


async def test_authinfo_with_the_password_file(inn2_group: str) -> None:
    async with NNTPClient(
        support.HOST, support.AUTH_PORT, user=support.AUTH_USER, password=support.AUTH_PASSWORD
    ) as client:
        assert (await client.group(inn2_group)).articles == 0


async def test_authinfo_wrong_password_and_no_password(inn2_group: str) -> None:
    with pytest.raises(AuthRejected, match="481"):
        async with NNTPClient(support.HOST, support.AUTH_PORT, user=support.AUTH_USER, password="wrong"):
            pass
    async with NNTPClient(support.HOST, support.AUTH_PORT) as client:
        with pytest.raises(AuthRequired, match="480"):
            await client.group(inn2_group)


async def test_plain_port_refuses_passwords_without_tls(inn2: None) -> None:
    # INN2 answers 483 to AUTHINFO on an unencrypted connection unless readers.conf allows it there.
    with pytest.raises(EncryptionRequired, match="483"):
        async with NNTPClient(support.HOST, support.PLAIN_PORT, user="someone", password="secret"):
            pass


async def test_implicit_tls_with_the_test_ca(inn2_group: str) -> None:
    async with NNTPClient(support.HOST, support.TLS_PORT, ssl=True, ca_file=str(support.CA_FILE)) as client:
        assert (await client.group(inn2_group)).articles == 0


async def test_starttls_with_the_test_ca_then_authinfo_is_allowed(inn2_group: str) -> None:
    async with NNTPClient(
        "localhost", support.PLAIN_PORT, starttls=True, ca_file=str(support.CA_FILE)
    ) as client:
        assert (await client.group(inn2_group)).articles == 0


@pytest.mark.parametrize("starttls", [False, True])
async def test_untrusted_certificate_is_a_clear_error(inn2: None, starttls: bool) -> None:
    port = support.PLAIN_PORT if starttls else support.TLS_PORT
    with pytest.raises(NNTPTLSError, match=r"not trusted.*ca_file"):
        async with NNTPClient(support.HOST, port, ssl=not starttls, starttls=starttls):
            pass


async def test_pool_fetches_chunks_in_parallel_within_its_limit(inn2_group: str) -> None:
    support.post_articles(inn2_group, [support.yenc_article(i) for i in range(1, 2001)])
    server = ServerSettings(host=support.HOST, port=support.PLAIN_PORT, connections=3)
    import asyncio

    async with NNTPPool([server]) as pool:
        chunks = await asyncio.gather(*(pool.over_chunk(inn2_group, n, n + 99) for n in range(1, 2001, 100)))
        stats = pool.stats()
    assert sum(chunk.lines for chunk in chunks) == 2000
    assert stats.peak_open <= 3
    assert stats.dropped == 0


async def test_auto_compression_reads_inn2_on_loopback_plain_by_measurement(inn2_group: str) -> None:
    # INN2 advertises COMPRESS DEFLATE; on loopback, its deflating costs more time than the bytes it
    # saves (issue 17: 9.8 core-seconds instead of 2.6 per million lines, the whole run slower).
    assert support.post_articles(inn2_group, [support.yenc_article(i) for i in range(1, 17_501)]) == 17_500
    server = ServerSettings(host=support.HOST, port=support.PLAIN_PORT, connections=1)
    with capture_logs() as logged:
        async with NNTPPool([server]) as pool:
            choice = pool.compression_choice()
            assert choice is not None
            # One connection, replies of ~500 kB one after the other (smaller than a probe): the pool
            # alternates the modes until each has delivered its replies, then keeps the faster.
            for first in range(1, 2 * choice.replies * 2500, 2500):
                chunk = await pool.over_chunk(inn2_group, first, first + 2499)
                assert chunk.lines == 2500
            assert choice.chosen == "plain"
            await pool.over_chunk(inn2_group, 15_001, 17_500)
            assert choice.open == {"plain": 1, "compressed": 0}
    chosen = [e for e in logged if e["event"] == "nntp.compression_chosen"]
    assert len(chosen) == 1
    assert chosen[0]["chosen"] == "plain"
    assert chosen[0]["compressed_as"] == "deflate"
    assert chosen[0]["plain_mb_per_s"] > chosen[0]["compressed_mb_per_s"] > 0
    assert chosen[0]["server"] == f"{support.HOST}:{support.PLAIN_PORT}"


async def test_auto_compression_measures_on_probes_not_whole_chunks(inn2_group: str) -> None:
    # Measured on whole chunks, INN2's compressed reply of one held one of two connections for ~2 s
    # under load at every run's start, and the range waiting for that chunk with it: each mode is
    # timed on a chunk's first PROBE_ARTICLES, and the slower one fetches no chunk.
    size = 4 * PROBE_ARTICLES  # the default chunk_articles
    total = 2 * size
    assert support.post_articles(inn2_group, [support.yenc_article(i) for i in range(1, total + 1)]) == total
    server = ServerSettings(host=support.HOST, port=support.PLAIN_PORT, connections=2)
    async with NNTPPool([server]) as pool:
        choice = pool.compression_choice()
        assert choice is not None
        with capture_logs() as logged:
            chunks = await asyncio.gather(
                *(pool.over_chunk(inn2_group, n, n + size - 1) for n in range(1, total + 1, size))
            )
        assert [chunk.lines for chunk in chunks] == [size] * 2
        assert choice.chosen == "plain"
    chosen = [e for e in logged if e["event"] == "nntp.compression_chosen"]
    assert len(chosen) == 1
    decision_sizes = chosen[0]["measured_bytes"]
    # The compressed mode was timed on probes only: less than one chunk's overview.
    assert 0 < decision_sizes["compressed"] < min(len(chunk.plain()) for chunk in chunks)
    assert size > PROBE_ARTICLES  # the chunks were bigger than a probe


async def test_explicit_compression_is_used_as_set(inn2_group: str) -> None:
    support.post_articles(inn2_group, [support.yenc_article(i) for i in range(1, 101)])
    choices: tuple[tuple[Compression, str], ...] = (("deflate", "deflate"), ("none", "none"))
    for compression, session in choices:
        server = ServerSettings(
            host=support.HOST, port=support.PLAIN_PORT, connections=1, compression=compression
        )
        seen: list[NNTPClient] = []

        def factory(settings: ServerSettings, seen: list[NNTPClient] = seen) -> NNTPClient:
            seen.append(settings.client())
            return seen[-1]

        async with NNTPPool([server], client_factory=factory) as pool:
            assert pool.compression_choice() is None
            for _ in range(3):
                assert (await pool.over_chunk(inn2_group, 1, 100)).lines == 100
        assert [client.compression for client in seen] == [compression]
        assert seen[0].session_compression == session

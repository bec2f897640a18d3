"""A scripted asyncio NNTP server for what INN2 cannot produce, and for demos.

It serves a :class:`Feed`: by default groups of overview lines and article bodies held in memory
(``server.groups``, ``server.bodies``), or any other feed — the sample news server
(newsservers/sample_server.py) generates its articles. It speaks the reader commands the client uses
(CAPABILITIES, MODE READER, AUTHINFO, GROUP, LIST, LIST OVERVIEW.FMT, OVER/XOVER, ARTICLE, HEAD, BODY,
STAT, QUIT) plus the provider extensions INN2 lacks (XZVER; XFEATURE COMPRESS GZIP with and without
TERMINATOR), and misbehaves on request through :class:`Script`: "502 too many connections" past a
limit, compressed replies cut short, connections dropped mid-reply, replies that never end, garbage.

Framing it uses (the client must accept all of these):
- XFEATURE COMPRESS GZIP: an overview reply's status line ends with ``[COMPRESS=GZIP]``; its body is
  one zlib stream of the dot-stuffed lines; with TERMINATOR a ``.`` line follows the stream, without
  it the stream's end is the reply's end.
- XZVER: a dot-terminated body of yEnc lines (=ybegin/=yend with crc32) encoding the raw deflate
  stream of the overview lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from usenet_indexer.nntp import yenc

__all__ = ["FakeNNTPServer", "Feed", "FeedArticle", "MemoryFeed", "Script", "overview_line"]

OVERVIEW_FMT = ["Subject:", "From:", "Date:", "Message-ID:", "References:", "Bytes:", "Lines:", "Xref:full"]


def overview_line(
    number: int, subject: str, poster: str, date: str, message_id: str, size: int, lines: int, group: str
) -> bytes:
    """One overview line in INN2's field order (article number first, tab-separated, no CRLF)."""
    fields = [
        str(number),
        subject,
        poster,
        date,
        message_id,
        "",
        str(size),
        str(lines),
        f"Xref: fake.test {group}:{number}",
    ]
    return "\t".join(fields).encode("utf-8")


@dataclass
class Script:
    """How the server misbehaves. Counters go down as faults are used up."""

    max_connections: int | None = None  # past this many open: "502 Too many connections", close
    advertise_compress_deflate: bool = False  # listed in CAPABILITIES, but answered 403 (not implemented)
    support_xzver: bool = True
    support_gzip: bool = True
    cut_short: int = 0  # the next N compressed overview replies are cut short (then properly ended)
    drop_mid_reply: int = 0  # the next N overview replies stop half-way and the connection closes
    stall_mid_reply: int = 0  # the next N overview replies stop half-way and never end
    garbage_replies: int = 0  # the next N commands get bytes that are not NNTP
    require_auth: tuple[str, str] | None = None  # (user, password)
    reply_delay: float = 0.0  # seconds before each overview reply (to make connections overlap)
    # Overview replies trickle out at this many bytes per second, as over a slow link (0: at once).
    link_bytes_per_second: float = 0.0


@dataclass(frozen=True, slots=True)
class FeedArticle:
    """An article as ARTICLE, HEAD and BODY send it (CRLF lines, not dot-stuffed)."""

    message_id: str  # with brackets
    head: bytes  # header lines, each ending CRLF
    body: bytes


class Feed(Protocol):
    """What the server serves. Overview text is CRLF lines in number order, not dot-stuffed."""

    def names(self) -> list[str]: ...

    def group(self, name: str) -> tuple[int, int, int] | None:
        """(count, low, high) of a group, None when there is no such group."""
        ...

    def overview(self, name: str, first: int, last: int) -> bytes: ...

    def overview_zlib(self, name: str, first: int, last: int) -> bytes | None:
        """The same text as one zlib stream when the feed has it ready (else None: compressed here)."""
        ...

    def article(self, message_id: str, *, head: bool = True) -> FeedArticle | None:
        """The article (``head=False``: its head may be left empty, for BODY and STAT)."""
        ...

    def message_id(self, name: str, number: int) -> str | None:
        """The message-id of article ``number`` of a group (ARTICLE/BODY by number)."""
        ...


class MemoryFeed:
    """Groups of overview lines (number -> full line) and bodies (message-id -> body) in dicts, which
    tests change as they go."""

    def __init__(self, groups: dict[str, dict[int, bytes]], bodies: dict[str, bytes]) -> None:
        self.groups = groups
        self.bodies = bodies

    def names(self) -> list[str]:
        return sorted(self.groups)

    def group(self, name: str) -> tuple[int, int, int] | None:
        articles = self.groups.get(name)
        if articles is None:
            return None
        return (len(articles), min(articles), max(articles)) if articles else (0, 1, 0)

    def overview(self, name: str, first: int, last: int) -> bytes:
        articles = self.groups.get(name, {})
        return b"".join(articles[n] + b"\r\n" for n in sorted(articles) if first <= n <= last)

    def overview_zlib(self, name: str, first: int, last: int) -> bytes | None:
        return None

    def article(self, message_id: str, *, head: bool = True) -> FeedArticle | None:
        body = self.bodies.get(message_id)
        if body is None:
            return None
        return FeedArticle(message_id, f"Message-ID: {message_id}\r\n".encode(), body)

    def message_id(self, name: str, number: int) -> str | None:
        line = self.groups.get(name, {}).get(number)
        if line is None:
            return None
        fields = line.split(b"\t")
        return fields[4].decode("utf-8", "replace") if len(fields) > 4 else None


class FakeNNTPServer:
    """``async with FakeNNTPServer(script) as server:`` then connect to ``server.port`` on 127.0.0.1."""

    def __init__(
        self,
        script: Script | None = None,
        host: str = "127.0.0.1",
        *,
        feed: Feed | None = None,
        port: int = 0,
    ) -> None:
        self.script = script or Script()
        self.host = host
        self.port = port
        self.groups: dict[str, dict[int, bytes]] = {}
        self.bodies: dict[str, bytes] = {}
        self.feed: Feed = feed if feed is not None else MemoryFeed(self.groups, self.bodies)
        self.open_connections = 0
        self.peak_connections = 0
        self.refused = 0
        self.commands: list[str] = []
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.stopping = asyncio.Event()
        self.stopped = asyncio.Event()

    # -- content ---------------------------------------------------------------------------------

    def add_group(self, name: str, lines: Iterable[bytes] = ()) -> None:  # the memory feed's
        """Add a group; each line is a full overview line starting with its article number."""
        group = self.groups.setdefault(name, {})
        for line in lines:
            number = int(line.split(b"\t", 1)[0])
            group[number] = line

    def add_article(self, message_id: str, body: bytes) -> None:
        self.bodies[message_id] = body

    # -- life ------------------------------------------------------------------------------------

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        # Sessions are ended by closing their sockets, not by cancelling their tasks: asyncio's
        # stream server logs a cancelled connection task as an error (Python 3.11).
        self.stopping.set()
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5.0)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        self.stopped.set()

    async def __aenter__(self) -> FakeNNTPServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- one connection ----------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        self.open_connections += 1
        try:
            limit = self.script.max_connections
            if limit is not None and self.open_connections > limit:
                self.refused += 1
                writer.write(b"502 Too many connections from your account\r\n")
                await writer.drain()
                return
            self.peak_connections = max(self.peak_connections, self.open_connections)
            await _Session(self, reader, writer).run()
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            pass
        finally:
            self.open_connections -= 1
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            self._tasks.discard(task)


class _Session:
    def __init__(
        self, server: FakeNNTPServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.server = server
        self.script = server.script
        self.reader = reader
        self.writer = writer
        self.group: str | None = None
        self.gzip: bool | None = None  # None off, else terminator
        self.user: str | None = None
        self.article_number: int | None = None
        self.authenticated = server.script.require_auth is None

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def run(self) -> None:
        await self.send(b"200 fake.test usenet-indexer scripted news server ready\r\n")
        while True:
            raw = await self.reader.readline()
            if not raw:
                return
            line = raw.decode("utf-8", "replace").strip()
            self.server.commands.append(line)
            if self.script.garbage_replies > 0:
                self.script.garbage_replies -= 1
                await self.send(b"\x00\xff garbage \x01\r\nmore garbage\r\n")
                continue
            words = line.split()
            verb = words[0].upper() if words else ""
            if verb == "QUIT":
                await self.send(b"205 bye\r\n")
                return
            if not await self.dispatch(verb, words[1:]):
                return

    async def dispatch(self, verb: str, args: list[str]) -> bool:
        if verb == "CAPABILITIES":
            caps = ["VERSION 2", "READER", "OVER", "LIST OVERVIEW.FMT"]
            if self.script.require_auth and not self.authenticated:
                caps.append("AUTHINFO USER")
            if self.script.support_xzver:
                caps.append("XZVER")
            if self.script.advertise_compress_deflate:
                caps.append("COMPRESS DEFLATE")
            await self.send(b"101 Capability list:\r\n" + "\r\n".join(caps).encode() + b"\r\n.\r\n")
        elif verb == "MODE":
            await self.send(b"200 reader mode\r\n")
        elif verb == "AUTHINFO" and len(args) == 2:
            await self.authinfo(args[0].upper(), args[1])
        elif verb == "COMPRESS":
            await self.send(b"403 compression not available here\r\n")
        elif verb == "XFEATURE" and [a.upper() for a in args[:2]] == ["COMPRESS", "GZIP"]:
            if not self.script.support_gzip:
                await self.send(b"500 What?\r\n")
            else:
                self.gzip = len(args) > 2 and args[2].upper() == "TERMINATOR"
                await self.send(b"290 feature enabled\r\n")
        elif not self.authenticated:
            await self.send(b"480 Authentication required\r\n")
        elif verb == "GROUP" and len(args) == 1:
            await self.select(args[0])
        elif verb == "LIST" and [a.upper() for a in args] == ["OVERVIEW.FMT"]:
            await self.send(b"215 Order of fields\r\n" + "\r\n".join(OVERVIEW_FMT).encode() + b"\r\n.\r\n")
        elif verb == "LIST" and [a.upper() for a in args] in ([], ["ACTIVE"]):
            await self.list_active()
        elif verb in ("OVER", "XOVER", "XZVER") and len(args) == 1:
            if verb == "XZVER" and not self.script.support_xzver:
                await self.send(b"500 What?\r\n")
                return True
            return await self.overview(verb, args[0])
        elif verb in ("ARTICLE", "HEAD", "BODY", "STAT") and len(args) <= 1:
            await self.article(verb, args[0] if args else None)
        else:
            await self.send(b"500 What?\r\n")
        return True

    async def authinfo(self, kind: str, value: str) -> None:
        expected = self.script.require_auth
        if kind == "USER":
            self.user = value
            await self.send(b"381 Password required\r\n")
        elif kind == "PASS" and self.user is not None:
            if expected is None or (self.user, value) == expected:
                self.authenticated = True
                await self.send(b"281 Authentication accepted\r\n")
            else:
                await self.send(b"481 Authentication failed\r\n")
        else:
            await self.send(b"482 Authentication commands issued out of sequence\r\n")

    async def select(self, name: str) -> None:
        info = self.server.feed.group(name)
        if info is None:
            await self.send(f"411 No such group {name}\r\n".encode())
            return
        self.group = name
        self.article_number = None
        count, low, high = info
        await self.send(f"211 {count} {low} {high} {name}\r\n".encode())

    async def list_active(self) -> None:
        lines = []
        for name in self.server.feed.names():
            info = self.server.feed.group(name)
            if info is not None:
                lines.append(f"{name} {info[2]} {info[1]} n".encode())
        await self.send(
            b"215 list of newsgroups follows\r\n" + b"".join(x + b"\r\n" for x in lines) + b".\r\n"
        )

    async def article(self, verb: str, spec: str | None) -> None:
        """ARTICLE, HEAD, BODY and STAT by message-id, by number in the group, or the current article."""
        feed = self.server.feed
        number = 0
        if spec is not None and spec.startswith("<"):
            message_id: str | None = spec
        else:
            if self.group is None:
                await self.send(b"412 No newsgroup selected\r\n")
                return
            try:
                number = int(spec) if spec is not None else (self.article_number or 0)
            except ValueError:
                await self.send(b"501 Bad article number\r\n")
                return
            message_id = feed.message_id(self.group, number)
            if message_id is None:
                await self.send(b"423 No article with that number\r\n")
                return
            self.article_number = number
        wants_head = verb in ("ARTICLE", "HEAD")
        found = feed.article(message_id, head=wants_head) if message_id is not None else None
        if found is None:
            await self.send(b"430 No such article\r\n")
            return
        code, content = {
            "ARTICLE": (220, found.head + b"\r\n" + found.body),
            "HEAD": (221, found.head),
            "BODY": (222, found.body),
            "STAT": (223, None),
        }[verb]
        status = f"{code} {number} {found.message_id}\r\n".encode()
        await self.send(status if content is None else status + _stuff(content) + b".\r\n")

    async def overview(self, verb: str, spec: str) -> bool:
        if self.group is None:
            await self.send(b"412 No newsgroup selected\r\n")
            return True
        first_text, dash, last_text = spec.partition("-")
        feed = self.server.feed
        info = feed.group(self.group)
        try:
            first = int(first_text)
            high = info[2] if info is not None else first
            last = int(last_text) if last_text else (high if dash else first)
        except ValueError:
            await self.send(b"501 Bad range\r\n")
            return True
        fast = self.gzip is not None and verb != "XZVER" and not self.script.cut_short
        ready = feed.overview_zlib(self.group, first, last) if fast else None
        text = b"" if ready is not None else feed.overview(self.group, first, last)
        if ready is None and not text:
            await self.send(b"423 No articles in that range\r\n")
            return True
        if self.script.reply_delay:
            await asyncio.sleep(self.script.reply_delay)
        if ready is not None:
            # The feed's own zlib stream of exactly this text: sent as it is (overview lines start
            # with their article number, so there is nothing to dot-stuff).
            status = b"224 overview follows [COMPRESS=GZIP]\r\n"
            body = ready + (b".\r\n" if self.gzip else b"")
        elif verb == "XZVER":
            status = b"224 compressed overview follows\r\n"
            deflater = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
            stream = deflater.compress(text) + deflater.flush()
            if self.script.cut_short > 0:
                self.script.cut_short -= 1
                stream = stream[: len(stream) // 2]
            body = _stuff(yenc.encode(stream, "xzver", line_length=128)) + b".\r\n"
        elif self.gzip is not None:
            status = b"224 overview follows [COMPRESS=GZIP]\r\n"
            stream = zlib.compress(_stuff(text))
            if self.script.cut_short > 0:
                self.script.cut_short -= 1
                # Cut short, then ended the way a TERMINATOR reply ends (what a proxy that gave up
                # half-way would send).
                body = stream[: len(stream) // 2] + b".\r\n"
            else:
                body = stream + (b".\r\n" if self.gzip else b"")
        else:
            status = b"224 overview follows\r\n"
            body = _stuff(text) + b".\r\n"
        if self.script.drop_mid_reply > 0:
            self.script.drop_mid_reply -= 1
            await self.send(status + body[: len(body) // 2])
            self.writer.transport.abort()
            return False
        if self.script.stall_mid_reply > 0:
            self.script.stall_mid_reply -= 1
            await self.send(status + body[: len(body) // 2])
            await self.server.stopping.wait()  # never ends (until the server stops): the client must time out
            return False
        await self.send_over_link(status + body)
        return True

    async def send_over_link(self, data: bytes) -> None:
        """``data`` at the script's link speed: pieces of ~20 ms each, each followed by its time."""
        rate = self.script.link_bytes_per_second
        if rate <= 0:
            await self.send(data)
            return
        piece = max(1024, int(rate / 50))
        for start in range(0, len(data), piece):
            sent = data[start : start + piece]
            await self.send(sent)
            await asyncio.sleep(len(sent) / rate)


def _stuff(text: bytes) -> bytes:
    """Dot-stuff CRLF lines (RFC 3977 3.1.1)."""
    if text.startswith(b"."):
        text = b"." + text
    return text.replace(b"\r\n.", b"\r\n..")

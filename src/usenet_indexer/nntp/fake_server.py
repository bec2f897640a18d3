"""A scripted asyncio NNTP server for what INN2 cannot produce, and for demos.

It serves groups of overview lines and article bodies held in memory, speaks the reader commands the
client uses (CAPABILITIES, MODE READER, AUTHINFO, GROUP, LIST OVERVIEW.FMT, OVER/XOVER, BODY,
QUIT) plus the provider extensions INN2 lacks (XZVER; XFEATURE COMPRESS GZIP with and without
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
from dataclasses import dataclass, field

from usenet_indexer.nntp import yenc

__all__ = ["FakeNNTPServer", "Script", "overview_line"]

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


@dataclass
class _Group:
    articles: dict[int, bytes] = field(default_factory=dict)  # number -> overview line (no number prefix)


class FakeNNTPServer:
    """``async with FakeNNTPServer(script) as server:`` then connect to ``server.port`` on 127.0.0.1."""

    def __init__(self, script: Script | None = None, host: str = "127.0.0.1") -> None:
        self.script = script or Script()
        self.host = host
        self.port = 0
        self.groups: dict[str, dict[int, bytes]] = {}
        self.bodies: dict[str, bytes] = {}
        self.open_connections = 0
        self.peak_connections = 0
        self.refused = 0
        self.commands: list[str] = []
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.stopping = asyncio.Event()

    # -- content ---------------------------------------------------------------------------------

    def add_group(self, name: str, lines: Iterable[bytes] = ()) -> None:
        """Add a group; each line is a full overview line starting with its article number."""
        group = self.groups.setdefault(name, {})
        for line in lines:
            number = int(line.split(b"\t", 1)[0])
            group[number] = line

    def add_article(self, message_id: str, body: bytes) -> None:
        self.bodies[message_id] = body

    # -- life ------------------------------------------------------------------------------------

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, 0)
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
        elif verb in ("OVER", "XOVER", "XZVER") and len(args) == 1:
            if verb == "XZVER" and not self.script.support_xzver:
                await self.send(b"500 What?\r\n")
                return True
            return await self.overview(verb, args[0])
        elif verb == "BODY" and len(args) == 1:
            body = self.server.bodies.get(args[0])
            if body is None:
                await self.send(b"430 No such article\r\n")
            else:
                await self.send(b"222 0 " + args[0].encode() + b"\r\n" + _stuff(body) + b".\r\n")
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
        articles = self.server.groups.get(name)
        if articles is None:
            await self.send(f"411 No such group {name}\r\n".encode())
            return
        self.group = name
        low, high = (min(articles), max(articles)) if articles else (1, 0)
        await self.send(f"211 {len(articles)} {low} {high} {name}\r\n".encode())

    async def overview(self, verb: str, spec: str) -> bool:
        if self.group is None:
            await self.send(b"412 No newsgroup selected\r\n")
            return True
        first_text, _, last_text = spec.partition("-")
        try:
            first = int(first_text)
            articles = self.server.groups[self.group]
            last = int(last_text) if last_text else max(articles, default=first)
        except ValueError:
            await self.send(b"501 Bad range\r\n")
            return True
        lines = [articles[n] for n in sorted(articles) if first <= n <= last]
        if not lines:
            await self.send(b"423 No articles in that range\r\n")
            return True
        if self.script.reply_delay:
            await asyncio.sleep(self.script.reply_delay)
        text = b"".join(line + b"\r\n" for line in lines)
        if verb == "XZVER":
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
        await self.send(status + body)
        return True


def _stuff(text: bytes) -> bytes:
    """Dot-stuff CRLF lines (RFC 3977 3.1.1)."""
    if text.startswith(b"."):
        text = b"." + text
    return text.replace(b"\r\n.", b"\r\n..")

"""Connections to one or more news servers, kept within each server's limit and retried politely.

- Each server has a maximum connection count. A "too many connections" refusal (502, or a 4xx that
  says so) lowers that server's ceiling to the connections that are open at that moment and backs
  off (exponentially, capped) before opening another: providers count connections per account, and
  some are held by other programs.
- A dropped connection, a timeout or a broken stream drops that client; the command is retried on
  a fresh one after a back-off. Whole replies are retried whole; a streamed overview resumes after
  the last article it already handed out, so nothing is lost and nothing comes twice.
- ``compression = "auto"`` reads overview plain or compressed, whichever a server delivers faster,
  measured per server (nntp/choice.py): COMPRESS DEFLATE on loopback cost INN2 four times the CPU and
  made the whole run slower (issue 17); over a slow link it is the faster. The choice is logged
  (``nntp.compression_chosen``, with the rates) and measured again now and then. While it measures, a
  chunk's fetch first times a probe of its first ``PROBE_ARTICLES`` (then fetches the whole chunk, or,
  when the probe decided for the other mode, leaves it to a connection of that mode):
  measured on whole chunks, INN2's compressed reply of 20,000 lines held one of two connections for
  ~2 s under load at every run's start, and the range waiting for that chunk with it. Any other
  setting is used as it is.
- Servers are tried by ``priority`` (lower first). Overview and GROUP come from the primary (the
  first server): article numbers are per server. BODY falls through to the fill servers when a
  server does not have the article (423/430).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from usenet_indexer.logs import get_logger
from usenet_indexer.nntp.choice import CompressionChoice, Decision, Mode
from usenet_indexer.nntp.client import Compression, GroupInfo, NNTPClient, OverviewChunk
from usenet_indexer.nntp.errors import (
    ArticleNotFound,
    NNTPConnectionError,
    NNTPProtocolError,
    NNTPTimeout,
    TooManyConnections,
)

__all__ = ["NNTPPool", "ServerSettings", "ServerStats"]

T = TypeVar("T")

log = get_logger(__name__)

# Errors after which the connection is gone (or cannot be trusted) but the command may succeed on a
# new one. A corrupt compressed reply is not among them: the caller's corrupt path decides.
_RETRYABLE = (NNTPConnectionError, NNTPTimeout, NNTPProtocolError)

# "auto" measuring: a chunk's first articles fetched to time the connection's mode (~1.5 MB of overview,
# over the choice's min_bytes). 1,000 (~300 kB, ~1.5 ms plain on loopback) were shorter than one
# scheduler slice on a busy machine. A probed connection does not wait for the other mode's probe:
# waiting (up to 2 s) stalled the plain connection while INN2's compressed one was still connecting
# under load.
PROBE_ARTICLES = 5_000
# A chunk's probes: enough for its mode's replies (CompressionChoice.replies), so that a mode a stalled
# probe made look slow is probed again rather than timed on a whole chunk (INN2's compressed chunk held
# a connection ~2 s under load).
MAX_PROBES = 3


class ServerSettings(BaseModel):
    """One news server. ``priority``: lower is asked first; higher ones are fill servers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str
    port: int = Field(default=0, ge=0, le=65535, description="0: 563 with ssl, else 119")
    ssl: bool = False
    starttls: bool = False
    user: str | None = None
    password: SecretStr | None = None
    connections: int = Field(default=8, ge=1, le=500)
    priority: int = 0
    ca_file: str | None = None
    timeout: float = Field(default=30.0, gt=0)
    compression: Compression = "auto"
    name: str = ""

    @model_validator(mode="after")
    def _check(self) -> ServerSettings:
        if self.ssl and self.starttls:
            raise ValueError(f"server {self.host}: set ssl (implicit TLS) or starttls, not both")
        if (self.user is None) != (self.password is None):
            raise ValueError(f"server {self.host}: set both user and password, or neither")
        if self.port == 0:
            object.__setattr__(self, "port", 563 if self.ssl else 119)
        if not self.name:
            object.__setattr__(self, "name", f"{self.host}:{self.port}")
        return self

    def client(self) -> NNTPClient:
        return NNTPClient(
            self.host,
            self.port,
            ssl=self.ssl,
            starttls=self.starttls,
            ca_file=self.ca_file,
            user=self.user,
            password=self.password.get_secret_value() if self.password is not None else None,
            timeout=self.timeout,
            compression=self.compression,
        )


@dataclass(slots=True)
class ServerStats:
    opened: int = 0  # connections opened successfully
    peak_open: int = 0  # most connections open (or being opened) at once
    refused_too_many: int = 0  # "too many connections" refusals seen
    dropped: int = 0  # connections lost, timed out or broken
    retries: int = 0  # commands retried on a new connection


class _Server:
    def __init__(
        self,
        settings: ServerSettings,
        factory: Callable[[ServerSettings], NNTPClient],
        backoff_initial: float,
        backoff_max: float,
        max_refusals: int,
        choice: CompressionChoice | None,
    ) -> None:
        self.settings = settings
        # "auto": each new connection plain or compressed as the choice says (None: as set).
        self.choice = choice
        self._plain = settings.model_copy(update={"compression": "none"})
        self._compressed_as = "none"  # what a compressed connection got from this server, for the log
        self.limit = settings.connections
        self.stats = ServerStats()
        self._factory = factory
        self._idle: list[NNTPClient] = []
        self._open = 0
        self._cond = asyncio.Condition()
        self._backoff_until = 0.0
        self._backoff = backoff_initial
        self._backoff_initial = backoff_initial
        self._backoff_max = backoff_max
        self._max_refusals = max_refusals
        self._refusals_in_a_row = 0
        self._closed = False

    @property
    def open(self) -> int:
        return self._open

    def _delay(self) -> float:
        delay = self._backoff * (0.75 + random.random() / 2)
        self._backoff = min(self._backoff * 2, self._backoff_max)
        return delay

    async def acquire(self) -> NNTPClient:
        while True:
            mode: Mode | None = None
            async with self._cond:
                while True:
                    if self._closed:
                        raise NNTPConnectionError(f"the pool for {self.settings.name} is closed")
                    if self._idle:
                        return self._idle.pop()
                    wait = self._backoff_until - time.monotonic()
                    if self._open < self.limit and wait <= 0:
                        self._open += 1
                        self.stats.peak_open = max(self.stats.peak_open, self._open)
                        if self.choice is not None:
                            mode = self.choice.mode_to_open()
                            # Counted from now: connections opened at once must not all take one mode.
                            self.choice.opened(mode)
                        break
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(wait if wait > 0 else None):
                            await self._cond.wait()
            client = self._factory(self._plain if mode == "plain" else self.settings)
            try:
                await client.connect()
            except TooManyConnections:
                self._closed_mode(mode)
                await self._refused()
                continue
            except BaseException:
                self._closed_mode(mode)
                await self._forget()
                raise
            self._refusals_in_a_row = 0
            self._backoff = self._backoff_initial
            self.stats.opened += 1
            return client

    async def _refused(self) -> None:
        async with self._cond:
            self._open -= 1
            self.stats.refused_too_many += 1
            self._refusals_in_a_row += 1
            # The server counts connections we cannot see (other programs on the account): keep to
            # what it accepted so far.
            self.limit = max(1, self._open)
            self._backoff_until = time.monotonic() + self._delay()
            self._cond.notify_all()
            self._log_limit()
            if self._open == 0 and self._refusals_in_a_row > self._max_refusals:
                raise TooManyConnections(
                    502,
                    f"refused {self._refusals_in_a_row} times in a row with no connection of ours open",
                    f"connect to {self.settings.name}",
                )

    async def _forget(self) -> None:
        async with self._cond:
            self._open -= 1
            self._cond.notify_all()

    @staticmethod
    def mode_of(client: NNTPClient) -> Mode:
        return "plain" if client.compression == "none" else "compressed"

    def _closed_mode(self, mode: Mode | None) -> None:
        if self.choice is not None and mode is not None:
            self.choice.closed(mode)

    async def release(self, client: NNTPClient, *, healthy: bool) -> None:
        if healthy and client.connected and not self._closed:
            if self.keeps(client):
                async with self._cond:
                    self._idle.append(client)
                    self._cond.notify()
                return
            # Of the mode not chosen (or making room to measure the other): a new one replaces it.
            self._closed_mode(self.mode_of(client))
            await client.close()
            await self._forget()
            return
        self._closed_mode(self.mode_of(client))
        await client.abort()
        await self._forget()

    def measured(self, client: NNTPClient, chunk: OverviewChunk, seconds: float) -> None:
        """An overview reply read in ``seconds``: the choice's measurement (with "auto")."""
        if self.choice is None:
            return
        mode = self.mode_of(client)
        on_wire = client.session_compression if client.session_compression != "none" else chunk.encoding
        compressed = on_wire != "plain" and on_wire != "none"
        if mode == "compressed" and compressed:
            self._compressed_as = on_wire
        decision = self.choice.record(mode, chunk.plain_size, seconds, compressed=compressed)
        if decision is not None:
            self._log_choice(decision)

    def measuring(self) -> bool:
        return self.choice is not None and self.choice.measuring

    def wants_probe(self, client: NNTPClient) -> bool:
        """Whether ``client``'s mode still needs a timed reply (with "auto", while measuring)."""
        return self.choice is not None and self.choice.wants(self.mode_of(client))

    def keeps(self, client: NNTPClient) -> bool:
        """Whether ``client`` goes on serving as the choice stands (see ``release``)."""
        return self.choice is None or self.choice.keep(self.mode_of(client))

    def _log_choice(self, decision: Decision) -> None:
        log.info(
            "nntp.compression_chosen",
            server=self.settings.name,
            chosen=decision.chosen,
            plain_mb_per_s=round(decision.rates["plain"] / 1e6, 1),
            compressed_mb_per_s=round(decision.rates["compressed"] / 1e6, 1),
            compressed_as=self._compressed_as,
            replies=f"{decision.replies['plain']} plain, {decision.replies['compressed']} compressed",
            measured_bytes=decision.sizes,
            reason=decision.reason,
        )

    async def dropped(self, client: NNTPClient) -> None:
        self.stats.dropped += 1
        await self.release(client, healthy=False)
        async with self._cond:
            self._backoff_until = max(self._backoff_until, time.monotonic() + self._delay())

    async def pause(self) -> None:
        async with self._cond:
            delay = self._delay()
            self._backoff_until = max(self._backoff_until, time.monotonic() + delay)
        await asyncio.sleep(delay)

    async def lower_limit(self) -> None:
        async with self._cond:
            self.stats.refused_too_many += 1
            self.limit = max(1, self._open)
            self._backoff_until = max(self._backoff_until, time.monotonic() + self._delay())
            self._log_limit()

    def _log_limit(self) -> None:
        log.warning(
            "nntp.too_many_connections",
            server=self.settings.name,
            limit=self.limit,
            action="kept to this many connections; backing off before the next",
        )

    async def close(self) -> None:
        async with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._cond.notify_all()
        for client in idle:
            self._closed_mode(self.mode_of(client))
            await client.close()
            self._open -= 1


def _log_retry(event: str, server: str, error: BaseException, attempt: int, retries: int) -> None:
    log.warning(
        event,
        server=server,
        error=f"{type(error).__name__}: {error}",
        attempt=attempt,
        action="retrying after a pause" if attempt <= retries else f"given up after {retries} retries",
    )


class NNTPPool:
    """Connections to several servers; see the module documentation. ``async with NNTPPool(servers)``."""

    def __init__(
        self,
        servers: Sequence[ServerSettings],
        *,
        retries: int = 3,
        backoff_initial: float = 0.5,
        backoff_max: float = 30.0,
        max_refusals: int = 6,
        client_factory: Callable[[ServerSettings], NNTPClient] | None = None,
        choice_factory: Callable[[], CompressionChoice] = CompressionChoice,
    ) -> None:
        if not servers:
            raise ValueError("NNTPPool needs at least one server")
        factory = client_factory or (lambda settings: settings.client())
        ordered = sorted(servers, key=lambda s: s.priority)
        self._servers = [
            _Server(
                s,
                factory,
                backoff_initial,
                backoff_max,
                max_refusals,
                choice_factory() if s.compression == "auto" else None,
            )
            for s in ordered
        ]
        self.retries = retries

    @property
    def primary(self) -> ServerSettings:
        return self._servers[0].settings

    def stats(self, name: str | None = None) -> ServerStats:
        return self._server(name).stats

    def compression_choice(self, name: str | None = None) -> CompressionChoice | None:
        """The measured choice of plain or compressed overview of a server (None: not "auto")."""
        return self._server(name).choice

    def _server(self, name: str | None) -> _Server:
        return self._servers[0] if name is None else next(s for s in self._servers if s.settings.name == name)

    def limit(self, name: str | None = None) -> int:
        """The current connection ceiling of a server (lowered after "too many connections")."""
        return self._server(name).limit

    async def __aenter__(self) -> NNTPPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        for server in self._servers:
            await server.close()

    async def _run(self, server: _Server, operation: Callable[[NNTPClient], Awaitable[T]]) -> T:
        attempt = 0
        name = server.settings.name
        while True:
            try:
                client = await server.acquire()
            except _RETRYABLE as error:
                # Could not connect (refused, reset, timed out, garbage greeting): back off, retry.
                attempt += 1
                _log_retry("nntp.connect_failed", name, error, attempt, self.retries)
                if attempt > self.retries:
                    raise
                server.stats.retries += 1
                await server.pause()
                continue
            try:
                result = await operation(client)
            except _RETRYABLE as error:
                # Retried whole on a new connection: a provider dropping connections would otherwise be
                # seen only as a slower fetch.
                await server.dropped(client)
                attempt += 1
                _log_retry("nntp.connection_dropped", name, error, attempt, self.retries)
                if attempt > self.retries:
                    raise
                server.stats.retries += 1
                continue
            except TooManyConnections:
                # Said in the middle of a session (some providers do): same as at connect.
                await server.dropped(client)
                await server.lower_limit()
                continue
            except BaseException:
                await server.release(client, healthy=client.ready)
                raise
            await server.release(client, healthy=True)
            return result

    @staticmethod
    async def _select(client: NNTPClient, group: str) -> None:
        if client.current_group != group:
            await client.group(group)

    async def group(self, group: str) -> GroupInfo:
        """GROUP on the primary server: (count, low, high)."""

        async def operation(client: NNTPClient) -> GroupInfo:
            return await client.group(group)

        return await self._run(self._servers[0], operation)

    async def overview_fmt(self) -> list[str]:
        async def operation(client: NNTPClient) -> list[str]:
            return await client.overview_fmt()

        return await self._run(self._servers[0], operation)

    async def over_chunk(self, group: str, first: int, last: int, *, compress: bool = True) -> OverviewChunk:
        """One range's overview as a blob (see :class:`OverviewChunk`), retried whole on a dropped
        connection. Raises CompressedReplyCorrupt/-Truncated for a compressed reply that does not
        inflate: fetch it again with ``compress=False``."""

        server = self._servers[0]
        probes = 0

        async def timed(client: NNTPClient, to: int) -> OverviewChunk:
            began = time.perf_counter()
            chunk = await client.over_chunk(first, to, compress=compress)
            if compress:
                server.measured(client, chunk, time.perf_counter() - began)
            return chunk

        async def operation(client: NNTPClient) -> OverviewChunk | None:
            nonlocal probes
            await self._select(client, group)
            # Probes until the connection's mode has its replies (a mode is rated by its best: one
            # probe may have waited on the GIL), at most MAX_PROBES per chunk.
            while (
                compress
                and probes < MAX_PROBES
                and last - first >= PROBE_ARTICLES
                and (server.wants_probe(client) or (not probes and server.measuring()))
            ):
                probes += 1
                await timed(client, first + PROBE_ARTICLES - 1)
                if not server.keeps(client):
                    return None  # the other mode chosen: the chunk from one of its connections
            return await timed(client, last)

        while True:
            chunk = await self._run(server, operation)
            if chunk is not None:
                return chunk

    async def over(self, group: str, first: int, last: int, *, compress: bool = True) -> AsyncIterator[bytes]:
        """Stream a range's overview as plain whole lines; a dropped connection resumes after the
        last article handed out (nothing lost, nothing twice)."""
        server = self._servers[0]
        next_first = first
        attempt = 0
        while next_first <= last:
            client = await server.acquire()
            outcome = "broken"  # until the reply was read to its end
            try:
                await self._select(client, group)
                async for piece in client.over(next_first, last, compress=compress):
                    number = _last_article_number(piece)
                    yield piece
                    if number is not None:
                        next_first = number + 1
                outcome = "healthy"
                next_first = last + 1
            except _RETRYABLE as error:
                outcome = "dropped"
                await server.dropped(client)
                attempt += 1
                _log_retry("nntp.connection_dropped", server.settings.name, error, attempt, self.retries)
                if attempt > self.retries:
                    raise
                server.stats.retries += 1
            finally:
                if outcome != "dropped":
                    await server.release(client, healthy=outcome == "healthy")

    async def body(self, message_id: str) -> bytes:
        """BODY from the first server (by priority) that has the article; fill servers are asked
        when the primary answers 423/430. Raises ArticleNotFound when none has it."""
        missing: ArticleNotFound | None = None
        for server in self._servers:

            async def operation(client: NNTPClient) -> bytes:
                return await client.body(message_id)

            try:
                return await self._run(server, operation)
            except ArticleNotFound as error:
                missing = error
        assert missing is not None
        raise missing


def _last_article_number(piece: bytes) -> int | None:
    end = len(piece)
    while end > 0:
        start = piece.rfind(b"\n", 0, end - 1) + 1
        line = piece[start:end]
        field = line.split(b"\t", 1)[0].strip()
        if field.isdigit():
            return int(field)
        end = start
    return None

"""The coordinator's HTTP server as it faces the network: uvicorn's configuration, and the limits every
request is held to whatever it claims about itself (issue 15).

- **Bodies** are counted as they are read, chunked or not: past the route's cap the request is refused
  with 413 at that byte (a chunked ``POST /admin/login`` of 90 MB was read whole before its 400, the
  cap having been checked on Content-Length only). Batches and flushes may be ``batch_max_bytes``,
  snapshots ``snapshot_max_bytes``, anything else ``request_max_bytes``.
- **A body that stops coming** is refused with 408 after ``request_body_idle_seconds`` without a byte.
- **Headers** must be complete within ``request_header_seconds`` of the connection (or of the last
  response on a kept-alive one), however slowly they trickle in: 40 half-sent requests held their
  connections open 40 s and more (``HeaderDeadline``).
- **Connections** are capped (``http_max_connections``, uvicorn's ``limit_concurrency``: 503 past it).
- **TLS**: with ``tls_certfile`` and ``tls_keyfile`` uvicorn speaks HTTPS. Listening beyond loopback
  without them is refused unless ``insecure_http`` says a proxy in front terminates TLS: node tokens,
  API keys and the admin password cross that link.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import uvicorn
from fastapi import HTTPException
from uvicorn.protocols.http.h11_impl import H11Protocol

from usenet_indexer.coordinator.http.exposure import ServeError, check_exposure, is_loopback
from usenet_indexer.settings import Settings

__all__ = ["RequestLimits", "RequestRefused", "ServeError", "check_exposure", "http_config", "is_loopback"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

BATCH_ROUTES = re.compile(r"^/api/v1/node/(ranges/\d+/batches|groups/\d+/flush)$")
SNAPSHOT_ROUTE = re.compile(r"^/api/v1/node/groups/\d+/snapshot$")


class RequestRefused(HTTPException):
    """A request cut off by the limits below (413 too large, 408 too slow). Its connection is closed
    with the answer: kept open, uvicorn would read (and drop) the rest of the body, however long."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(status, detail, headers={"Connection": "close"})


def body_cap(settings: Settings, method: str, path: str) -> int:
    """The most bytes a request to ``path`` may carry."""
    if method == "POST" and BATCH_ROUTES.match(path):
        return settings.batch_max_bytes
    if method == "PUT" and SNAPSHOT_ROUTE.match(path):
        return settings.snapshot_max_bytes
    return settings.request_max_bytes


class RequestLimits:
    """ASGI middleware: each request's body counted as read and timed between reads."""

    def __init__(self, app: App, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cap = body_cap(self.settings, scope["method"], scope["path"])
        idle = self.settings.request_body_idle_seconds
        received = 0
        complete = False

        async def limited() -> Message:
            nonlocal received, complete
            if complete:  # the body is in: what is left is waiting for a disconnect, however long
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), idle)
            except TimeoutError:
                raise RequestRefused(408, f"no byte of the request's body for {idle:.0f} s") from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > cap:
                    raise RequestRefused(413, f"the request's body is over this route's {cap:,}-byte cap")
                complete = not message.get("more_body", False)
            else:
                complete = True
            return message

        await self.app(scope, limited, send)


class HeaderDeadline(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a deadline for each request's headers: uvicorn's own keep-alive
    timer is reset by every byte received, so a client sending its headers a byte at a time held its
    connection for as long as it liked."""

    header_seconds = 10.0  # set per server by http_config

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.header_seconds, self._too_slow)

    def _disarm(self) -> None:
        if getattr(self, "_deadline", None) is not None:
            assert self._deadline is not None
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
            self.logger.warning("Closing a connection whose request headers did not come in time.")
            self.transport.close()

    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle:  # a request's headers were read
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request on this connection has its own deadline

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def http_config(app: Any, settings: Settings, *, port: int | None = None) -> uvicorn.Config:
    """uvicorn's configuration for ``app`` (whose requests RequestLimits holds to their caps): the
    connection cap, TLS, the header deadline; ``port`` instead of the settings' (tests: 0)."""
    check_exposure(settings)
    protocol = type("Protocol", (HeaderDeadline,), {"header_seconds": settings.request_header_seconds})
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port if port is None else port,
        log_config=None,
        access_log=False,
        http=protocol,
        limit_concurrency=settings.http_max_connections,
        timeout_keep_alive=5,
        ssl_certfile=None if settings.tls_certfile is None else str(settings.tls_certfile),
        ssl_keyfile=None if settings.tls_keyfile is None else str(settings.tls_keyfile),
        # X-Forwarded-Proto and -For from the proxies named (this machine's by default): the session
        # cookie is then Secure behind a TLS proxy, and a client's address is its own.
        proxy_headers=True,
        forwarded_allow_ips=settings.trusted_proxies,
    )


class PromptServer(uvicorn.Server):
    """uvicorn's server, stopped at once by ``stop()`` from another thread (``run``'s).

    uvicorn looks at ``should_exit`` every 0.1 s, and its shutdown sleeps 0.1 s for its connections to
    finish before it waits on them: 0.17 s of a 4-second, 1,000,000-header ``run``'s end, after its
    workers had exited (session 13). Here the main loop wakes when stopped, and a server with no
    connection and no task left shuts down without the sleep; any other gets uvicorn's graceful
    shutdown, as before."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Event | None = None

    async def main_loop(self) -> None:
        self._loop, self._stopped = asyncio.get_running_loop(), asyncio.Event()
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864_000  # on_tick's own count: the date header once a second
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopped.wait(), 0.1)

    def stop(self) -> None:
        """Stop serving (from any thread)."""
        self.should_exit = True
        loop, stopped = self._loop, self._stopped
        if loop is not None and stopped is not None:
            with contextlib.suppress(RuntimeError):  # its loop has closed: it stopped already
                loop.call_soon_threadsafe(stopped.set)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.server_state.connections or self.server_state.tasks:
            await super().shutdown(sockets)
            return
        for server in self.servers:
            server.close()
        for listening in sockets or []:
            listening.close()
        if not self.force_exit:
            await self.lifespan.shutdown()

"""run's HTTP server (coordinator/http/network.py PromptServer) stops at once when nothing is in flight,
and still lets a request in flight finish: uvicorn's own stop took 0.13-0.16 s at the end of every run
(a tick of 0.1 s, then a fixed sleep of 0.1 s), after the workers had exited (session 13)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.support.live import served
from tests.support.store import test_settings as settings_for
from usenet_indexer.coordinator.http.network import PromptServer, http_config

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


ARRIVED = threading.Event()  # set when a request reaches slow_app


async def slow_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers after the seconds its path names (``/0.5``)."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    ARRIVED.set()
    await asyncio.sleep(float(scope["path"].strip("/") or 0))
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


@contextmanager
def serving(tmp_path: Path) -> Iterator[tuple[PromptServer, threading.Thread, str]]:
    settings = settings_for(f"sqlite:///{tmp_path / 'unused.db'}", tmp_path)
    server = PromptServer(http_config(slow_app, settings, port=0))
    with served(server) as (thread, url):
        yield server, thread, url


def test_an_idle_server_stops_at_once(tmp_path: Path) -> None:
    with serving(tmp_path) as (server, thread, url):
        with httpx.Client() as client:  # served, then its connection closed: nothing in flight
            assert client.get(f"{url}/0").text == "ok"
        time.sleep(0.05)
        began = time.perf_counter()
        server.stop()
        thread.join(5)
        stopped_in = time.perf_counter() - began
    assert not thread.is_alive()
    # uvicorn's own stop sleeps 0.1 s whatever is left, after a tick of up to 0.1 s.
    assert stopped_in < 0.1, f"stopped in {stopped_in:.3f} s"


def test_a_request_in_flight_is_answered_before_the_server_stops(tmp_path: Path) -> None:
    with serving(tmp_path) as (server, thread, url):
        answers: list[str] = []

        def ask() -> None:
            with httpx.Client() as client:
                answers.append(client.get(f"{url}/0.5", timeout=10).text)

        ARRIVED.clear()
        asking = threading.Thread(target=ask)
        asking.start()
        # Stopped once the request is in the app: a fixed sleep of 0.2 s was too short on a loaded
        # machine (the stop came first, and the request was refused).
        assert ARRIVED.wait(10)
        server.stop()
        asking.join(10)
        thread.join(10)
    assert answers == ["ok"]
    assert not thread.is_alive()

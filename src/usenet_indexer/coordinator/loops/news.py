"""The news servers as the coordinator's loops see them: one connection pool on one asyncio loop.

Why one pool for every loop: providers count connections per account, so the planner, the prefetcher
and the corpus fill together must keep within ``nntp_connections``; a pool per loop would open three
times that and meet "502 too many connections". The loops themselves run in threads (loops/runner.py,
each under its ownership lease) and hand their NNTP work to this loop with :meth:`run`.

It also keeps the set of chunks being fetched, so that no chunk is ever fetched twice at once, by
whichever loop (the prefetcher and the corpus fill can both want a captured range's chunk).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Hashable, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from usenet_indexer.logs import get_logger
from usenet_indexer.nntp.pool import NNTPPool, ServerSettings

log = get_logger(__name__)

T = TypeVar("T")


class NewsService:
    """``run(lambda pool: pool.group(name))`` from any thread but the service's own.

    ``pool_factory`` builds the pool (on the service's loop: asyncio objects belong to one loop);
    by default an :class:`NNTPPool` over ``servers``.
    """

    def __init__(
        self,
        servers: Sequence[ServerSettings],
        *,
        pool_factory: Callable[[], NNTPPool] | None = None,
        **pool_options: Any,
    ) -> None:
        if not servers and pool_factory is None:
            raise ValueError("no news server: set nntp_host (--nntp-host, USENET_INDEXER_NNTP_HOST)")
        self.servers = list(servers)
        self._pool_factory = pool_factory or (lambda: NNTPPool(self.servers, **pool_options))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pool: NNTPPool | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopped: asyncio.Event | None = None
        self._start_lock = threading.Lock()
        self._failure: BaseException | None = None
        self._claims: set[Hashable] = set()
        self._claims_lock = threading.Lock()

    @property
    def connections(self) -> int:
        """The primary server's connection limit (the prefetcher sizes its workers by it)."""
        return self.servers[0].connections if self.servers else 1

    # -- life ------------------------------------------------------------------------------------

    def start(self) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._main, name="news", daemon=True)
                self._thread.start()
        self._ready.wait()  # also when another thread started it a moment ago
        if self._failure is not None:
            raise RuntimeError(f"the news service did not start: {self._failure}") from self._failure

    def _main(self) -> None:
        async def serve() -> None:
            self._loop = asyncio.get_running_loop()
            self._stopped = asyncio.Event()
            try:
                self._pool = self._pool_factory()
            except BaseException as error:
                self._failure = error
                self._ready.set()
                return
            self._ready.set()
            try:
                await self._stopped.wait()
            finally:
                await self._pool.close()

        asyncio.run(serve())

    def close(self, timeout: float = 10.0) -> None:
        thread, loop, stopped = self._thread, self._loop, self._stopped
        if thread is None or loop is None or stopped is None:
            return
        if not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(stopped.set)
        thread.join(timeout)
        self._thread = None

    def __enter__(self) -> NewsService:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- work ------------------------------------------------------------------------------------

    def submit(self, work: Callable[[NNTPPool], Awaitable[T]]) -> Future[T]:
        self.start()
        assert self._loop is not None and self._pool is not None
        if threading.current_thread() is self._thread:
            raise RuntimeError("NewsService.run called from its own loop: await the work instead")
        pool = self._pool

        async def call() -> T:
            return await work(pool)

        return asyncio.run_coroutine_threadsafe(call(), self._loop)

    def run(self, work: Callable[[NNTPPool], Awaitable[T]], timeout: float | None = None) -> T:
        """Run ``work(pool)`` on the service's loop and wait for its result (or exception)."""
        future = self.submit(work)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    async def body(self, message_id: str) -> bytes:
        """BODY through the shared pool (fill servers asked when the primary lacks it), awaitable from
        another thread's event loop: the probe loop runs the catalog's Prober on its own loop, so its
        store calls never stall the connections' loop."""
        return await asyncio.wrap_future(self.submit(lambda pool: pool.body(message_id)))

    @property
    def pool(self) -> NNTPPool:
        """The pool, for code already running on the service's loop."""
        self.start()
        assert self._pool is not None
        return self._pool

    # -- chunks in flight ------------------------------------------------------------------------

    def claim(self, key: Hashable) -> bool:
        """True when nobody is fetching ``key`` (a range and chunk) now; then it is ours until release."""
        with self._claims_lock:
            if key in self._claims:
                return False
            self._claims.add(key)
            return True

    def release(self, key: Hashable) -> None:
        with self._claims_lock:
            self._claims.discard(key)

    def claimed(self, key: Hashable) -> bool:
        with self._claims_lock:
            return key in self._claims

    def busy_ranges(self) -> set[int]:
        """Ranges with a chunk being fetched (keys are ``(range_id, chunk_from)``)."""
        with self._claims_lock:
            return {int(k[0]) for k in self._claims if isinstance(k, tuple)}

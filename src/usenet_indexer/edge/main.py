"""One edge worker process: ``usenet-indexer edge`` with one process, and each child a supervisor
starts (``run``, ``edge --processes N``) through ``python -m usenet_indexer.edge``.

The children start without the command line: its Typer app, the settings model (pydantic), the
coordinator's planning and the extras structlog and httpx import when installed (rich, click,
pygments) were 0.46 core-seconds at each worker's start, more than indexing 200,000 headers, where a
worker needs its options and a log level. The supervisor passes the options it was given and the log
settings it resolved (``child_options``).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from usenet_indexer.runtime import absent, on_signals

DEFAULT_BATCH_ARTICLES = 500_000  # ~4% of releases get a second fragment at this size (seed 003)
DEFAULT_IDLE_SECONDS = 30.0


class EdgeFailure(Exception):
    """The worker cannot start (its environment is incomplete); the message says what to set."""


@dataclass(frozen=True, slots=True)
class EdgeOptions:
    batch_articles: int = DEFAULT_BATCH_ARTICLES
    ranges: int | None = None
    idle_seconds: float = DEFAULT_IDLE_SECONDS
    lane: str | None = None
    complete_first: bool = False

    def child_options(self, log_level: str, log_format: str) -> list[str]:
        """The arguments of ``python -m usenet_indexer.edge`` for a child that works as these say."""
        return [
            f"--batch-articles={self.batch_articles}",
            f"--idle-seconds={self.idle_seconds}",
            *([f"--ranges={self.ranges}"] if self.ranges is not None else []),
            *([f"--lane={self.lane}"] if self.lane is not None else []),
            *(["--complete-first"] if self.complete_first else []),
            f"--log-level={log_level}",
            f"--log-format={log_format}",
        ]


def check(options: EdgeOptions) -> None:
    if options.lane is not None and options.lane not in ("history", "tail"):
        raise EdgeFailure(f"--lane: history or tail, not {options.lane!r}")


def coordinator_environment() -> tuple[str, str, str | None]:
    """COORDINATOR_URL, NODE_TOKEN and COORDINATOR_CA (a private CA's certificate, or None)."""
    url = os.environ.get("COORDINATOR_URL", "").strip()
    token = os.environ.get("NODE_TOKEN", "").strip()
    authority = os.environ.get("COORDINATOR_CA", "").strip() or None
    if not url:
        raise EdgeFailure("COORDINATOR_URL is not set: the coordinator's address, e.g. http://127.0.0.1:8710")
    if not token:
        raise EdgeFailure(
            "NODE_TOKEN is not set: create one on the coordinator with `usenet-indexer nodes add NAME`"
        )
    return url, token, authority


def stop_on_signals() -> threading.Event:
    """An event set on SIGTERM or SIGINT (from a thread: runtime.on_signals says why)."""
    stop = threading.Event()
    on_signals((signal.SIGTERM, signal.SIGINT), lambda signum: stop.set())
    return stop


def work(options: EdgeOptions, stop: threading.Event) -> None:
    """Lease, index and post until ``stop`` (or ``options.ranges`` ranges)."""
    check(options)
    url, token, authority = coordinator_environment()
    from usenet_indexer.edge.client import NodeClient
    from usenet_indexer.edge.held import HeldFile
    from usenet_indexer.edge.parent import watch_parent
    from usenet_indexer.edge.worker import EdgeWorker
    from usenet_indexer.runtime import tune_gc, tune_malloc, worker_young

    watch_parent(stop)  # a supervised child stops when its supervisor is gone

    def pause(seconds: float) -> None:
        # Backoff between retries ends early once stopping: a worker whose supervisor (or `run`) is
        # gone must not spend minutes retrying a coordinator that went with it.
        stop.wait(seconds)

    tune_gc(worker_young(options.batch_articles))
    # Each chunk inflates into a fresh 6 MB block (and a batch's body is megabytes): with glibc's
    # defaults half of a worker's page faults came back for them, ~2 µs each (issue 17, Session 11).
    tune_malloc()
    held = HeldFile.from_environment()  # supervised: what this worker holds, for its supervisor
    with NodeClient(url, token, sleep=pause, ca_file=authority, held=held) as client:
        worker = EdgeWorker(
            client,
            batch_articles=options.batch_articles,
            stop=stop,
            idle_seconds=options.idle_seconds,
            complete_first=options.complete_first,
        )
        try:
            if options.lane is None:
                worker.run(max_ranges=options.ranges)
            else:
                from usenet_indexer.edge.lanes import run_lanes

                run_lanes(worker, options.lane, max_ranges=options.ranges)
        finally:
            worker.close()
            # A lease request that failed for good and was not settled since: what it was granted
            # goes back now, not after the TTL (edge/client.py).
            client.settle_claims()


def without_extras() -> None:
    """Mark rich, click, pygments, greenlet and anyio absent in this process: structlog imports rich
    for its tracebacks and greenlet for its (deprecated) thread-local context, httpx rich, click and
    pygments for its own command line, and httpcore anyio for its async locks, whenever they are
    installed (Typer brings the first three, SQLAlchemy greenlet, the coordinator's web stack anyio);
    ~0.15 core-seconds at a worker's start for what a worker never uses (anyio ~1 ms of it: a worker's
    client is synchronous). Each falls back without."""
    absent("rich", "click", "pygments", "greenlet", "anyio")


def main(argv: Sequence[str] | None = None) -> int:
    """A supervised child's entry: the options ``EdgeOptions.child_options`` wrote."""
    without_extras()
    parser = argparse.ArgumentParser(prog="python -m usenet_indexer.edge", description=__doc__)
    parser.add_argument("--batch-articles", type=int, default=DEFAULT_BATCH_ARTICLES)
    parser.add_argument("--ranges", type=int, default=None)
    parser.add_argument("--idle-seconds", type=float, default=DEFAULT_IDLE_SECONDS)
    parser.add_argument("--lane", default=None)
    parser.add_argument("--complete-first", action="store_true")
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--log-format", default="auto")
    args = parser.parse_args(argv)
    stop = stop_on_signals()
    from usenet_indexer.logs import configure_logging

    configure_logging(args.log_level, args.log_format)
    options = EdgeOptions(args.batch_articles, args.ranges, args.idle_seconds, args.lane, args.complete_first)
    try:
        work(options, stop)
    except EdgeFailure as failure:
        print(failure, file=sys.stderr)
        return 1
    return 0

"""``usenet-indexer run``: the whole system on one machine, in one command.

In this process: the coordinator's HTTP app (uvicorn, on a thread) and its background loops (planner,
prefetcher, corpus fill, probe, clean-up, finish-abandoned: ``coordinator/server.py``), exactly as
``serve`` runs them. As child processes: ``--workers`` edge workers (``usenet-indexer edge``, under the
edge supervisor), each with a node and token of its own, talking to the coordinator over loopback the
way a worker on another machine would — the same node API, the same leases, the same fencing.

Stopping (Ctrl-C, SIGTERM) goes in this order, so that nothing is lost and the next ``run`` resumes
where this one stopped:

1. the workers get SIGTERM: each posts what it indexed since its last batch (moving its range's
   resume point) and gives its range back (``release``) while the coordinator still answers;
2. the HTTP server stops;
3. the loops stop (the probe finishes its round), releasing their ownership leases.

A second Ctrl-C kills workers still running: their leases are then given back on their behalf
(edge/supervisor.py), and everything their batches stored is kept (a batch and its resume point are
one transaction). A worker that dies while the run goes on is handled the same way, and restarted.
"""

from __future__ import annotations

import math
import os
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from usenet_indexer.coordinator.loops.background import background_loops
from usenet_indexer.coordinator.loops.news import NewsService
from usenet_indexer.coordinator.loops.runner import LoopRunner
from usenet_indexer.coordinator.registries.nodes import new_token
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db.database import redacted
from usenet_indexer.edge.main import DEFAULT_BATCH_ARTICLES, EdgeOptions
from usenet_indexer.edge.supervisor import GIVE_BACK_RETRIES, supervise
from usenet_indexer.leases.errors import LeaseLost
from usenet_indexer.local.progress import ProgressReader, Snapshot
from usenet_indexer.local.view import View
from usenet_indexer.logs import get_logger, without_rich
from usenet_indexer.runtime import on_signals, tune_gc, tune_malloc
from usenet_indexer.settings import Settings

if TYPE_CHECKING:
    from usenet_indexer.coordinator.http.network import PromptServer
    from usenet_indexer.edge.client import NodeClient

log = get_logger(__name__)


DONE_POLL_SECONDS = 0.2  # how soon `run --exit-when-done` sees that everything is indexed
WAKE_SECONDS = 1.0  # how often, once every range is read, the grouping and probe loops are woken (watch)


class RunError(Exception):
    """``run`` could not start (the port is taken, …): the message says what to do."""


@dataclass
class RunOptions:
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    batch_articles: int = DEFAULT_BATCH_ARTICLES
    # Workers ask for a range this often when there is none: the planner plans a new group's ranges
    # a moment after start, and a worker that found nothing must not sleep through them (edge's
    # default is 30 s).
    idle_seconds: float = 5.0
    grace_seconds: float = 120.0  # after SIGTERM, how long a worker may take to give its range back


# A stretch planned under `run` makes at least this many ranges per worker (settings.range_spread):
# the ranges of a 1,000,000-article group were one of 999,999 articles and one of a single article, and
# one of two workers indexed the whole group (issue 17). Four: the last ranges end within a quarter of
# a worker's share of each other, and a range still costs little beside its indexing.
RANGES_PER_WORKER = 4


def run_settings(settings: Settings, workers: int) -> Settings:
    """``settings`` with a plan cut for ``workers`` (RANGES_PER_WORKER each, or more if set so)."""
    spread = min(1000, max(settings.range_spread, RANGES_PER_WORKER * workers))
    return settings.model_copy(update={"range_spread": spread})


def machine_name() -> str:
    """This machine's name as ``run`` uses it: in its workers' node names and its own lease."""
    return (re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname().split(".")[0]) or "local")[:48]


def worker_name(slot: int) -> str:
    """The node name of worker ``slot`` of this machine's ``run``."""
    return f"{machine_name()}-worker-{slot}"


def reclaim_earlier_run(services: Services, node_id: int, name: str) -> None:
    """Give back what a worker slot's node still holds from an earlier ``run`` that was killed
    outright (SIGKILL, the OOM killer, a power cut). Its token was just replaced, so no worker can
    call with it again: the leases are dead. Waiting out their TTL, they held both of a group's lease
    slots and the next run indexed nothing for 120 s where the whole group took 12 (issue 17).

    Each give-back is conditional on node and epoch, as a supervisor's is (a range read to its end is
    finished instead); called before the server answers, so none of this run's own leases can be in
    the list. Ranges first: a lane's next holder waits while the lane's range is held."""
    given = 0
    for range_id, epoch in services.ranges.of_node(node_id):
        try:
            services.ranges.release(range_id, node_id, epoch, reclaim=True)
            given += 1
        except LeaseLost:
            pass  # ended meanwhile (expired and taken over): nothing to give back
    for group_id, lane, epoch in services.lanes.of_node(node_id):
        try:
            services.lanes.release(group_id, node_id, lane, epoch, reclaim=True)
            given += 1
        except LeaseLost:
            pass
    if given:
        log.info("run.earlier_leases_given_back", node=name, leases=given)


class LocalRun:
    """The coordinator in this process and its workers in children: ``start(services)``, then
    ``stop()``. The workers may be started first (``start_workers``), before the store is even open:
    a worker takes about a second of a core to start (imports), the coordinator two of another
    (imports, migrations), and started after it the workers took 2-4 s to ask for their first range
    while the prefetcher and the news server had the cores; the first chunks waited for them
    (issue 17). Started first, they are ready when the coordinator is: their first requests wait in
    the listening socket's queue until it answers, and their tokens are stored before it does."""

    def __init__(
        self,
        settings: Settings,
        options: RunOptions,
        *,
        news: NewsService | None = None,
        worker_logs: Path | None = None,
    ) -> None:
        if options.workers < 1:
            raise RunError(f"--workers must be at least 1, not {options.workers}")
        self.settings = settings
        self.services: Services | None = None
        self.options = options
        self.news = news
        self.worker_logs = worker_logs  # None: workers write to this process's stderr
        self.url = ""
        self.worker_names = [worker_name(slot) for slot in range(1, options.workers + 1)]
        self.worker_pids: dict[int, int] = {}
        self.kill = threading.Event()
        self._socket: socket.socket | None = None
        self._tokens: dict[int, str] = {}
        self._server: PromptServer | None = None
        self._server_thread: threading.Thread | None = None
        self._serving = False  # set before the server's thread starts: no lease is granted before
        self._loops: LoopRunner | None = None
        self._stop_workers = threading.Event()
        self._supervisor: threading.Thread | None = None
        self._outputs: list[IO[bytes]] = []
        self.workers_exit: int | None = None

    # -- start -----------------------------------------------------------------------------------

    def start_workers(self) -> None:
        """The listening socket and the workers, before the coordinator (see the class)."""
        if self._socket is None:
            self._listen()
        if self._supervisor is None:
            self._start_workers()

    def start(self, services: Services) -> None:
        self.services = services
        tune_gc()
        tune_malloc()
        # One `run` of this machine per database: a second would replace the first's workers' tokens
        # and give back their leases (reclaim_earlier_run). Held for the run's life; a run killed
        # outright left it to a process that no longer exists, and it is taken over at once.
        self._loops = background_loops(services, self.news)
        held = self._loops.hold(f"run:{machine_name()}")
        if not held.ok:
            raise RunError(
                f"another `usenet-indexer run` on this machine uses this database ({held.holder}): "
                "stop it first, or give this one a database of its own (--database-url)"
            )
        tokens = self._worker_tokens()
        for slot, name in enumerate(self.worker_names, start=1):
            # A node of its own per worker slot, with this run's token: a worker of an earlier run
            # cannot post. Stored before the server answers the workers' first requests.
            node_id, _ = services.nodes.issue(name, tokens[slot])
            reclaim_earlier_run(services, node_id, name)
        if self._socket is None:
            self._listen()
        # The web stack before the loops, not beside them: started first, the loops had `auto` time
        # plain and compressed overview while the main thread imported uvicorn and FastAPI, the plain
        # reply's reading starved of the GIL, and on loopback it chose compressed in 2 of 12 runs, 0 of
        # 12 this way (INN2 7.1 core-µs a header instead of 2.4; bench/e2e.py, session 12).
        self._start_server()
        self._loops.start()
        if self._supervisor is None:
            self._start_workers()

    def wake(self, loop: str) -> None:
        """The background loop ``loop`` works now (``LoopRunner.wake``)."""
        if self._loops is not None:
            self._loops.wake(loop)

    def _listen(self) -> None:
        settings = self.settings
        try:
            listening = socket.create_server(
                (settings.host, settings.port),
                family=socket.AF_INET6 if ":" in settings.host else socket.AF_INET,
                backlog=2048,
            )
        except OSError as error:
            raise RunError(
                f"the coordinator could not listen on {settings.host}:{settings.port}: {error.strerror} "
                "(is another `serve` or `run` using it? pass --port, or --port 0 for any free one)"
            ) from None
        host, port = listening.getsockname()[:2]
        self._socket = listening
        # Workers always come in over loopback, whatever address the HTTP server listens on.
        local = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        self.url = f"http://{local}:{port}" if ":" not in local else f"http://[{local}]:{port}"

    def _start_server(self) -> None:
        assert self.services is not None and self._socket is not None
        from usenet_indexer.coordinator.http import import_fastapi

        with without_rich():
            import_fastapi()
            from usenet_indexer.coordinator.http.app import create_app
            from usenet_indexer.coordinator.http.network import PromptServer, http_config
        server = PromptServer(http_config(create_app(self.services), self.services.settings))
        # Not the main thread: uvicorn then leaves the signals to us (stop order matters, see above).
        listening = self._socket
        self._serving = True
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [listening]}, name="http", daemon=True
        )
        thread.start()
        while not server.started and thread.is_alive():
            time.sleep(0.02)
        if not server.started:
            raise RunError(f"the coordinator's HTTP server did not start on {self.url}: see the log above")
        self._server, self._server_thread = server, thread

    def _worker_tokens(self) -> dict[int, str]:
        """This run's token of each worker slot, made once (before the store is open, if need be)."""
        if not self._tokens:
            self._tokens = {slot: new_token() for slot in range(1, len(self.worker_names) + 1)}
        return self._tokens

    def _start_workers(self) -> None:
        tokens = self._worker_tokens()
        # Not complete_first (edge/worker.py), though a completing range holds one of its group's two
        # leases: with it, tests/e2e/test_run.py's resumed catalog differed from an uninterrupted run's
        # (which copy of a reposted part a release keeps) in 3 runs of 3 in session 11, against 0 of 3
        # without; in session 13 it passed 7 runs of 7 with it (the cause was never found). Either way
        # one worker waits while a range completes (~0.3 s at 1M headers: here the other worker, for
        # the group's second lease; with it, this one).
        options = EdgeOptions(
            batch_articles=self.options.batch_articles, idle_seconds=self.options.idle_seconds
        )
        args = options.child_options(self.settings.log_level, self.settings.log_format)

        def env_for(slot: int) -> dict[str, str]:
            return {"COORDINATOR_URL": self.url, "NODE_TOKEN": tokens[slot]}

        def client_for(slot: int) -> NodeClient | None:
            # A dead worker's leases given back with its own token (edge/supervisor.py). None when the
            # server never started (a refused run): no lease was granted, and each exited worker's
            # give-back retried against the closed socket, a refusal taking 15 s instead of 2.
            if not self._serving:
                return None
            # Imported at a worker's exit, not at the start: httpx is ~30 ms of a core.
            with without_rich():
                from usenet_indexer.edge.client import NodeClient

            return NodeClient(self.url, tokens[slot], retries=GIVE_BACK_RETRIES)

        output_for: Callable[[int], IO[bytes] | None] | None = None
        if self.worker_logs is not None:
            self.worker_logs.mkdir(parents=True, exist_ok=True)

            def output_for(slot: int) -> IO[bytes] | None:
                assert self.worker_logs is not None
                out = (self.worker_logs / f"worker-{slot}.log").open("ab")
                self._outputs.append(out)
                return out

        def run() -> None:
            self.workers_exit = supervise(
                self.options.workers,
                args,
                stop=self._stop_workers,
                until_done=False,
                env_for=env_for,
                output_for=output_for,
                detach=True,
                grace_seconds=self.options.grace_seconds,
                kill=self.kill,
                on_start=lambda slot, pid: self.worker_pids.__setitem__(slot, pid),
                client_for=client_for,
                own_nodes=True,  # a node per worker: a dead one's grant it had not read is its too
            )

        self._supervisor = threading.Thread(target=run, name="edge-supervisor", daemon=True)
        self._supervisor.start()

    # -- stop ------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Workers first (they give their ranges back), then the HTTP server, then the loops."""
        self._stop_workers.set()
        if self._server is None and self._socket is not None:
            # Never served (the store failed to open): the workers' requests waiting in its queue fail
            # now, and the workers, told to stop, do not retry them.
            self._socket.close()
        if self._supervisor is not None:
            self._supervisor.join()
            self._supervisor = None
        for out in self._outputs:
            out.close()
        self._outputs.clear()
        if self._server is not None and self._server_thread is not None:
            self._server.stop()
            self._server_thread.join(15)
            self._server = None
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        if self._loops is not None:
            self._loops.stop()
            self._loops = None

    def header(self) -> list[str]:
        settings = self.services.settings if self.services is not None else self.settings
        servers = settings.news_servers()
        news = (
            f"{servers[0].host}:{servers[0].port or (563 if servers[0].ssl else 119)}" if servers else "none"
        )
        return [
            f"usenet-indexer: web UI and newznab API at {self.url}/  ·  news server {news}  ·  "
            f"{len(self.worker_names)} workers",
            f"database {redacted(settings.database_url)}  ·  data {settings.data_dir}  ·  Ctrl-C stops "
            "(run again to resume)",
        ]


def is_live(view_mode: str) -> bool:
    """The live view (a terminal's): log lines then go to files, the workers' too."""
    return view_mode == "live" or (view_mode == "auto" and sys.stdout.isatty())


def early_run(settings: Settings, options: RunOptions, view_mode: str) -> LocalRun:
    """``run``'s workers started before its store is opened (see LocalRun); ``stop()`` it if what
    follows fails."""
    logs = settings.data_dir / "logs" if is_live(view_mode) else None
    local = LocalRun(settings, options, worker_logs=logs)
    local.start_workers()
    return local


def watch(
    reader: ProgressReader,
    view: View,
    stop: threading.Event,
    *,
    until_done: bool = False,
    refresh_seconds: float = 1.0,
    done: Callable[[Snapshot], bool] = lambda snapshot: snapshot.done,
    wake: Callable[[str], None] | None = None,
) -> Snapshot | None:
    """Refresh the view until ``stop`` is set, or (``until_done``) until everything is indexed (``done``);
    the last snapshot read. ``wake`` (``LoopRunner.wake``): once every range is read, the grouping and
    probe loops are woken (at most every WAKE_SECONDS) while they have work left: `run` waited up to
    their periods, 10 and 30 s, for the last loose files and probes. Not before: woken at each
    range's end, the probe loop read archives' headers for password probes while the workers indexed,
    and a 1M run's coordinator spent twice its CPU."""
    last: Snapshot | None = None
    woke = -math.inf
    # Until done, looked at more often than the view needs: a run's end was seen up to a second late
    # (half a second on average of a 1M run's ~8), and a look costs under a millisecond of a core.
    wait = min(refresh_seconds, DONE_POLL_SECONDS) if until_done else refresh_seconds
    while True:
        try:
            last = reader.read()
            view.update(last)
        except Exception as error:  # the view must not end the run: a busy store, a migration
            log.warning("run.progress_failed", error=f"{type(error).__name__}: {error}")
        if until_done and last is not None and done(last):
            return last
        if (
            wake is not None
            and last is not None
            and last.read_through
            and time.monotonic() - woke > WAKE_SECONDS
        ):
            if last.grouping_pending:
                wake("grouping")
            if last.probes_pending:
                wake("probe")
            woke = time.monotonic()
        if stop.wait(wait):
            return last


def live_view(header: list[str]) -> View:
    """The live view on this terminal (rich, imported only for it: local/view.py)."""
    from rich.console import Console

    from usenet_indexer.local.live import LiveView

    return LiveView(Console(), header)


def install_signals(stop: threading.Event, kill: threading.Event) -> None:
    """SIGINT, SIGTERM and SIGHUP (the terminal closed) stop in order; a second one kills the workers
    still running."""

    def handle(signum: int) -> None:
        if stop.is_set():
            kill.set()
        stop.set()

    on_signals((signal.SIGINT, signal.SIGTERM, signal.SIGHUP), handle)


def summary(first: Snapshot | None, last: Snapshot | None, seconds: float) -> str:
    if last is None:
        return "stopped"
    read = last.read - (first.read if first is not None else 0)
    return (
        f"{read:,} articles read in {seconds:,.0f} s; the catalog holds {last.releases:,} releases "
        f"({last.complete:,} complete)"
    )


def run_until_stopped(
    services: Services,
    options: RunOptions,
    *,
    view_mode: str = "auto",
    exit_when_done: bool = False,
    status_seconds: float = 10.0,
    news: NewsService | None = None,
    when_done: Callable[[LocalRun, View], None] | None = None,
    done: Callable[[Snapshot], bool] = lambda snapshot: snapshot.done,
    local: LocalRun | None = None,
) -> int:
    """``run`` (and ``demo``): start, show progress until Ctrl-C — or until everything is indexed with
    ``exit_when_done`` — and stop in order. ``when_done`` is called once when everything is indexed
    the first time. ``local``: a LocalRun whose workers were started already (``early_run``).
    Returns the exit code."""
    from usenet_indexer.local.view import PlainView
    from usenet_indexer.logs import configure_logging

    settings = services.settings
    live = is_live(view_mode)
    logs = settings.data_dir / "logs"
    log_file: IO[str] | None = None
    if live:
        # The view owns the terminal: log lines go to a file, warnings are shown above the view.
        logs.mkdir(parents=True, exist_ok=True)
        log_file = (logs / "run.log").open("a", buffering=1)
        configure_logging(settings.log_level, "json", file=log_file)
    stop = threading.Event()
    if local is None:
        local = LocalRun(settings, options, news=news, worker_logs=logs if live else None)
    install_signals(stop, local.kill)
    try:
        local.start(services)
    except RunError:
        local.stop()
        raise
    header = local.header()
    if live:
        header.append(f"logs in {logs}/ (run.log, worker-N.log)")
    view: View = live_view(header) if live else PlainView(sys.stdout, header, every=status_seconds)
    reader = ProgressReader(services, set(local.worker_names))
    began = time.monotonic()
    first: Snapshot | None = None
    last: Snapshot | None = None
    view.start()
    try:
        first = reader.read()
        if exit_when_done or when_done is not None:
            last = watch(reader, view, stop, until_done=True, done=done, wake=local.wake)
            if last is not None and done(last) and not stop.is_set():
                if when_done is not None:
                    when_done(local, view)
                if not exit_when_done:
                    last = watch(reader, view, stop, wake=local.wake) or last
        else:
            last = watch(reader, view, stop, wake=local.wake)
        finished = last is not None and done(last) and not stop.is_set()
        view.print("all caught up; stopping" if finished else "stopping: the workers give their ranges back…")
    finally:
        local.stop()
        try:
            last = reader.read(fresh=True)
            view.update(last)
        except Exception as error:  # the summary is not worth a traceback
            log.warning("run.progress_failed", error=str(error))
        view.stop()
        if log_file is not None:
            configure_logging(settings.log_level, settings.log_format)
            log_file.close()
    print(summary(first, last, time.monotonic() - began), flush=True)
    if last is not None and not last.done:
        print("run `usenet-indexer run` again to go on from here", flush=True)
    return 0 if local.workers_exit in (0, None) else 1

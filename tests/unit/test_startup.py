"""What a process imports to start (issue 17): the libraries a role never uses stay out of its start-up.

Each check runs a role's start-up in a fresh interpreter and lists the modules it loaded: an edge
worker (``python -m usenet_indexer.edge``, run whole until its first lease request, so that what it
imports lazily counts too: httpcore when its client is made) needs the indexer, the wire and the HTTP
client, not the coordinator's web stack or the store (each worker's start is paid once per core, at
every `run`); the coordinator (``run``, ``serve``) loads its templates at the first page and never the
pydantic v1 shim, nor the extras httpx imports for its command line. A module named here that comes
back fails the check.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

# `python -m usenet_indexer.edge` as a supervisor starts it (edge/supervisor.py), told to work one range
# (``--ranges=1``): the stand-in coordinator has none, so the worker stops after its first lease request.
WORKER = """
import runpy, sys
sys.argv = ["usenet_indexer.edge", "--ranges=1", *sys.argv[1:]]
try:
    runpy.run_module("usenet_indexer.edge", run_name="__main__", alter_sys=True)
except SystemExit as exit:
    assert exit.code == 0, exit.code
"""

# The imports of `usenet-indexer run` (cli.py's run) before it opens the store.
COORDINATOR = """
from usenet_indexer.runtime import quiet_start
quiet_start()
import usenet_indexer.cli
from usenet_indexer.logs import without_rich
with without_rich():
    import usenet_indexer.local.run
    # LocalRun._start_server's, once the loops are started
    from usenet_indexer.coordinator.http import import_fastapi
    import_fastapi()
    import uvicorn
    import usenet_indexer.coordinator.http.app
    import usenet_indexer.coordinator.http.network
"""

# What no edge worker loads: the coordinator's web stack, its settings model, the command line, the
# store, what structlog, httpx and httpcore import for output or async code a worker never has
# (edge/main.py), the supervisor (edge/parent.py) and the archive readers (indexing/archive_names.py).
NOT_IN_A_WORKER = (
    "fastapi",
    "starlette",
    "uvicorn",
    "pydantic",
    "pydantic_settings",
    "jinja2",
    "prometheus_client",
    "typer",
    "click",
    "rich",
    "pygments",
    "greenlet",
    "anyio",
    "sqlalchemy",
    "alembic",
    "psycopg",
    "boto3",
    "usenet_indexer.coordinator",
    "usenet_indexer.db",
    "usenet_indexer.catalog",
    "usenet_indexer.settings",
    "usenet_indexer.storage",
    "usenet_indexer.edge.supervisor",
    "usenet_indexer.indexing.archives",
)
NOT_IN_A_COORDINATOR = (
    "jinja2",
    "pydantic.v1",
    "rich",
    "pygments",
    "alembic",
    "sqlalchemy",
    "boto3",
    "httpx",  # at a worker's exit, for its give-back (local/run.py)
    "usenet_indexer.wire.nzb",  # at the first NZB download (coordinator/http/newznab.py)
)


def loaded(code: str, args: list[str] | None = None, env: dict[str, str] | None = None) -> set[str]:
    """The modules a fresh interpreter holds after ``code`` (its ``sys.argv[1:]``: ``args``; not the
    modules marked absent: None)."""
    listing = "\nimport json, sys\nprint(json.dumps([n for n, m in sys.modules.items() if m is not None]))"
    command = [sys.executable, "-c", code + listing, *(args or [])]
    out = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    return set(json.loads(out.stdout.splitlines()[-1]))


class NoWork(http.server.ThreadingHTTPServer):
    """A coordinator with nothing to lease: 204 to every request, each one's path noted."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _NoWorkHandler)
        self.paths: list[str] = []


class _NoWorkHandler(http.server.BaseHTTPRequestHandler):
    server: NoWork

    def _answer(self) -> None:
        self.server.paths.append(self.path)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(204)
        self.end_headers()

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def no_work() -> Iterator[NoWork]:
    server = NoWork()
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def worker_modules(args: list[str], tmp_path: Path) -> tuple[set[str], list[str]]:
    """The modules an edge worker started with ``args`` loaded by the end of its first lease request,
    and the paths it asked for."""
    with no_work() as coordinator:
        env = {
            **os.environ,
            "COORDINATOR_URL": f"http://127.0.0.1:{coordinator.server_address[1]}",
            "NODE_TOKEN": "start-up",
            "SUPERVISOR_PID": str(os.getpid()),
            "EDGE_HELD_FILE": str(tmp_path / "held.json"),
        }
        modules = loaded(WORKER, args, env)
        return modules, coordinator.paths


def present(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(m == n or m.startswith(n + ".") for m in modules))


@pytest.mark.parametrize("args", [[], ["--lane=history"]], ids=["ranges", "lanes"])
def test_an_edge_worker_starts_without_the_coordinator_s_libraries(args: list[str], tmp_path: Path) -> None:
    modules, paths = worker_modules(args, tmp_path)
    # the check ran the whole start: the client was made and asked for work
    assert "usenet_indexer.edge.worker" in modules and "httpcore" in modules
    assert len(paths) == 1 and paths[0].startswith("/api/v1/node/" + ("groups/lease" if args else "lease"))
    assert present(modules, NOT_IN_A_WORKER) == []


def test_the_coordinator_starts_without_templates_or_pydantic_v1() -> None:
    modules = loaded(COORDINATOR)
    assert "fastapi" in modules and "usenet_indexer.coordinator.http.app" in modules
    assert present(modules, NOT_IN_A_COORDINATOR) == []


# `run`'s coordinator started for real on a new SQLite store (LocalRun.start: its loops, its HTTP server,
# one worker), then asked for its OpenAPI document: whether FastAPI's OpenAPI models were built before.
SERVING = """
import json, sys, urllib.request
from pathlib import Path
from usenet_indexer.coordinator.wiring import open_services
from usenet_indexer.local.run import LocalRun, RunOptions
from usenet_indexer.settings import Settings
folder = Path(sys.argv[1])
settings = Settings(database_url=f"sqlite:///{folder / 'store.db'}", data_dir=folder, port=0)
services = open_services(settings)
local = LocalRun(settings, RunOptions(workers=1))
local.start(services)
try:
    from fastapi.openapi.models import OpenAPI
    built_at_start = OpenAPI.__pydantic_complete__
    with urllib.request.urlopen(local.url + "/openapi.json", timeout=30) as reply:
        paths = json.load(reply)["paths"]
    print(json.dumps([built_at_start, OpenAPI.__pydantic_complete__, "/api/v1/node/lease" in paths]))
finally:
    local.stop()
    services.close()
"""


def test_run_s_coordinator_builds_fastapi_s_openapi_models_at_the_first_openapi_json(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("USENET_INDEXER_")}
    command = [sys.executable, "-c", SERVING, str(tmp_path)]
    out = subprocess.run(command, capture_output=True, text=True, check=True, env=env, timeout=120)
    built_at_start, built_after, document = json.loads(out.stdout.splitlines()[-1])
    assert document, "/openapi.json lists the node API"
    assert built_after, "validating the document built the models"
    # ~80 ms of a core at every start of `run` and `serve` (coordinator/http/__init__.py, import_fastapi)
    assert not built_at_start

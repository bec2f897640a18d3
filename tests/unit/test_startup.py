"""What a process imports to start (issue 17): the libraries a role never uses stay out of its start-up.

Each check imports a role's start-up path in a fresh interpreter and lists the modules it loaded: an
edge worker (``python -m usenet_indexer.edge``: edge/main.py's imports) needs the indexer, the wire
and the HTTP client, not the coordinator's web stack or the store (each worker's start is paid once
per core, at every `run`); the coordinator (``run``, ``serve``) loads its templates at the first page
and never the pydantic v1 shim, nor the extras httpx imports for its command line. A module named
here that comes back fails the check.
"""

from __future__ import annotations

import json
import subprocess
import sys

# The imports of `python -m usenet_indexer.edge` up to its first request (edge/__main__.py, edge/main.py).
WORKER = """
from usenet_indexer.runtime import quiet_start
quiet_start()
from usenet_indexer.edge.main import without_extras
without_extras()
from usenet_indexer.logs import configure_logging
from usenet_indexer.edge.client import NodeClient
from usenet_indexer.edge.held import HeldFile
from usenet_indexer.edge.supervisor import watch_parent
from usenet_indexer.edge.worker import EdgeWorker
from usenet_indexer.edge.lanes import run_lanes
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
    import uvicorn
    import usenet_indexer.coordinator.http.app
    import usenet_indexer.coordinator.http.network
"""

# What no edge worker loads: the coordinator's web stack, its settings model, the command line, the
# store, and what structlog and httpx import for output a worker never makes (edge/main.py).
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
    "sqlalchemy",
    "alembic",
    "psycopg",
    "boto3",
    "usenet_indexer.coordinator",
    "usenet_indexer.db",
    "usenet_indexer.catalog",
    "usenet_indexer.settings",
    "usenet_indexer.storage",
)
NOT_IN_A_COORDINATOR = ("jinja2", "pydantic.v1", "rich", "pygments", "alembic", "sqlalchemy", "boto3")


def loaded(code: str) -> set[str]:
    """The modules a fresh interpreter holds after ``code`` (not the ones marked absent: None)."""
    listing = "\nimport json, sys\nprint(json.dumps([n for n, m in sys.modules.items() if m is not None]))"
    out = subprocess.run([sys.executable, "-c", code + listing], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def present(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(m == n or m.startswith(n + ".") for m in modules))


def test_an_edge_worker_starts_without_the_coordinator_s_libraries() -> None:
    modules = loaded(WORKER)
    assert "usenet_indexer.edge.worker" in modules and "httpx" in modules  # the check ran the path
    assert present(modules, NOT_IN_A_WORKER) == []


def test_the_coordinator_starts_without_templates_or_pydantic_v1() -> None:
    modules = loaded(COORDINATOR)
    assert "fastapi" in modules and "usenet_indexer.coordinator.http.app" in modules
    assert present(modules, NOT_IN_A_COORDINATOR) == []

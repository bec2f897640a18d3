"""An edge worker's start-up (issue 17): CPU from exec to its first request to the coordinator.

Each round starts one worker exactly as a supervisor does (``python -m usenet_indexer.edge`` with the
options ``run`` passes, ``SUPERVISOR_PID`` and a held-leases file, its output to a file) against a
stand-in coordinator on loopback that answers every request 204 ("no work"). When the first request
arrives the worker is blocked on it, and its CPU is read from /proc: the sum of its threads'
``schedstat`` run time (nanoseconds; ``stat``'s utime + stime count 10 ms ticks), then it is stopped.

``--tree NAME=SRC`` (repeatable) runs the worker with ``PYTHONPATH=SRC``, the trees alternating round
by round, so that a baseline (``git archive main src | tar -x -C /tmp/base``) and this tree share the
machine's noise (2 cores shared with other sessions):

    uv run python bench/worker_start.py --rounds 20 --tree base=/tmp/base/src --tree ours=src
"""

from __future__ import annotations

import http.server
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from _common import emit, tree_arguments
from usenet_indexer.edge.main import EdgeOptions


def run_time_ns(pid: int) -> int:
    """The CPU a process's live threads ran, from ``/proc/PID/task/*/schedstat`` (nanoseconds)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue  # the thread ended meanwhile
    return total


class StandIn(http.server.ThreadingHTTPServer):
    """A coordinator with no work: 204 to every request; the first one's moment is noted."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.worker_pid = 0
        self.cpu_ns: int | None = None
        self.first_path = ""
        self.arrived = threading.Event()


class _Handler(http.server.BaseHTTPRequestHandler):
    server: StandIn

    def _answer(self) -> None:
        if not self.server.arrived.is_set():
            self.server.cpu_ns = run_time_ns(self.server.worker_pid)
            self.server.first_path = self.path
            self.server.arrived.set()
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.send_response(204)
        self.end_headers()

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


def one_start(source: str, folder: Path) -> tuple[float, str]:
    """Milliseconds of CPU from exec to the first request of a worker importing from ``source``."""
    server = StandIn()
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    env = {
        **os.environ,
        "PYTHONPATH": source,
        "COORDINATOR_URL": f"http://127.0.0.1:{server.server_address[1]}",
        "NODE_TOKEN": "bench",
        "EDGE_CHILD": "0",
        "SUPERVISOR_PID": str(os.getpid()),
        "EDGE_HELD_FILE": str(folder / "held.json"),
    }
    args = EdgeOptions().child_options("INFO", "auto")
    with (folder / "worker.log").open("wb") as output:
        child = subprocess.Popen(
            [sys.executable, "-m", "usenet_indexer.edge", *args],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        server.worker_pid = child.pid
        try:
            if not server.arrived.wait(60):
                raise SystemExit(f"no request from the worker in 60 s: see {folder / 'worker.log'}")
        finally:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:  # main before Session 13: a SIGTERM in the idle wait hung
                print(f"  worker {child.pid} still running 10 s after SIGTERM: killed", file=sys.stderr)
                child.kill()
                child.wait()
            server.shutdown()
            server.server_close()
    assert server.cpu_ns is not None
    return server.cpu_ns / 1e6, server.first_path


def main() -> None:
    trees, rounds = tree_arguments(__doc__, 20, 5, "starts")
    results: dict[str, list[float]] = {name: [] for name, _ in trees}
    with tempfile.TemporaryDirectory(prefix="worker-start-") as folder:
        for round_ in range(rounds):
            for name, source in trees:
                ms, path = one_start(source, Path(folder))
                results[name].append(ms)
                print(f"round {round_ + 1:>2} {name:>8}: {ms:6.1f} ms of CPU to the first request ({path})")
    summary: dict[str, float] = {}
    first = trees[0][0]
    for name, values in results.items():
        summary[f"{name}_median_ms"] = round(statistics.median(values), 1)
        summary[f"{name}_min_ms"] = round(min(values), 1)
        median = statistics.median(values)
        line = f"{name:>8}: median {median:6.1f} ms, min {min(values):6.1f} ms, n={len(values)}"
        if name != first:
            # Round by round against the first tree: the pairs share the machine's load of the moment.
            paired = statistics.median(v - b for v, b in zip(values, results[first], strict=True))
            summary[f"{name}_minus_{first}_paired_median_ms"] = round(paired, 1)
            line += f"; paired median against {first}: {paired:+.1f} ms"
        print(line)
    emit(summary)


if __name__ == "__main__":
    main()

"""How work reaches the workers under ``run`` (issue 17: "keep every core busy from the first second").

bench/e2e.py's corpus (posted to the test INN2 once, reused), then ``usenet-indexer groups add`` and
``usenet-indexer run --exit-when-done`` on SQLite as a user runs them, while /proc is sampled. Printed:

- the wall time of ``run``, the machine's busy cores over it (``/proc/stat``: other sessions count too)
  and our processes' (run and its workers, from their own CPU time), and per second the machine's;
- from the store, on the database's clock, relative to ``run``'s start: the first chunk fetched, the
  first range leased, the first batch stored, the last chunk fetched and the last batch stored;
- the ranges planned, the ranges each worker was granted, and each worker's **lease-held share**: the
  time it held a lease over the window from the first grant to the last lease's end (1.0: it always
  had a range; a worker that never got one: 0). This one depends little on how busy the machine is.

    uv run python bench/flow.py --quick          # 200,000 articles
    uv run python bench/flow.py                  # 1,000,000
    uv run python bench/flow.py --group NAME     # a group already on the test INN2, all of it
    PYTHONPATH=/path/to/other/checkout/src uv run python bench/flow.py   # another version of the code

Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT), str(ROOT.parent)]

from tests.e2e.processes import settings_env
from tests.support import inn2
from tests.support.store import query

from _common import CORES, children, cpu_with_reaped, emit, machine_ticks
from e2e import ensure_corpus
from usenet_indexer.db import connect


def held_shares(grants: list[dict[str, object]]) -> dict[str, float]:
    """Each node's time holding a lease over the window of all leases (overlaps counted once)."""
    if not grants:
        return {}
    begin = min(float(str(g["granted_at"])) for g in grants)

    def ended(g: dict[str, object]) -> float:
        return float(str(g["ended_at"] if g["ended_at"] is not None else g["granted_at"]))

    end = max(ended(g) for g in grants)
    spans: dict[str, list[tuple[float, float]]] = {}
    for g in grants:
        spans.setdefault(str(g["name"]), []).append((float(str(g["granted_at"])), ended(g)))
    shares = {}
    for name, intervals in spans.items():
        held, reach = 0.0, begin
        for start, stop in sorted(intervals):
            held += max(0.0, stop - max(start, reach))
            reach = max(reach, stop)
        shares[name] = round(held / (end - begin), 2) if end > begin else 1.0
    return shares


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200,000 articles (default 1,000,000)")
    parser.add_argument("--articles", type=int, default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the data directory and log")
    parser.add_argument("--group", default=None, help="a group on the test INN2 instead of the corpus")
    args = parser.parse_args()
    n = args.articles or (200_000 if args.quick else 1_000_000)
    group = args.group or ensure_corpus(n)[0]
    folder = tempfile.mkdtemp(prefix="uibench-flow")
    data_dir = Path(folder)
    url = f"sqlite:///{data_dir / 'bench.db'}"
    env = settings_env(url, data_dir)
    usenet_indexer = [sys.executable, "-m", "usenet_indexer"]
    subprocess.run([*usenet_indexer, "groups", "add", group, "--all-history"], env=env, check=True)
    samples: list[tuple[float, float, float]] = []
    ours: dict[int, float] = {}
    stop = threading.Event()
    log = data_dir / "run.log"
    machine_before = machine_ticks()
    began = time.time()  # the store's clock is the wall clock anchored at its first connection
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                *usenet_indexer,
                "run",
                "--exit-when-done",
                f"--nntp-host={inn2.HOST}",
                f"--nntp-port={inn2.PLAIN_PORT}",
                "--port=0",
                f"--workers={args.workers}",
                "--view=plain",
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )

    def sample() -> None:
        while not stop.wait(0.1):
            busy, idle = machine_ticks()
            samples.append((time.time() - began, busy, idle))
            for pid in children(process.pid):  # the workers' own CPU, while they live
                times = cpu_with_reaped(pid)
                if times is not None:
                    ours[pid] = times[0]

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    # Without reaping (WNOWAIT): run's zombie still shows its CPU and that of the workers it reaped.
    while os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        time.sleep(0.02)
    wall = time.time() - began
    run_times = cpu_with_reaped(process.pid)
    stop.set()
    sampler.join()
    code = process.wait()
    machine_after = machine_ticks()
    if code != 0 or run_times is None:
        raise SystemExit(f"run ended with {code}:\n{log.read_text()[-4000:]}")
    our_cpu = run_times[0] + max(run_times[1], sum(ours.values()))
    machine_busy = machine_after[0] - machine_before[0]

    db = connect(url)
    try:
        ranges = query(db, "SELECT id, start_id, end_id FROM ranges")
        grants = query(
            db,
            "SELECT l.range_id, l.granted_at, l.ended_at, n.name FROM lease_log l "
            "JOIN nodes n ON n.id = l.node_id",
        )
        fetched = query(db, "SELECT min(fetched_at) AS a, max(fetched_at) AS b FROM fetched_chunks")[0]
        stored = query(
            db, "SELECT min(stored_at) AS a, max(stored_at) AS b, sum(headers) AS n FROM batch_log"
        )[0]
    finally:
        db.close()
    n = int(stored["n"])  # every article of the group (or corpus) was indexed by then
    per_worker: dict[str, int] = {}
    for g in grants:
        per_worker[str(g["name"])] = per_worker.get(str(g["name"]), 0) + 1
    shares = held_shares(grants)
    first_lease = min(float(g["granted_at"]) for g in grants) - began

    def at(value: object) -> float:
        return round(float(str(value)) - began, 2)

    per_second = []
    for second in range(1, int(wall) + 1):
        inside = [x for x in samples if second - 1 <= x[0] < second]
        if len(inside) > 1:
            busy, idle = inside[-1][1] - inside[0][1], inside[-1][2] - inside[0][2]
            per_second.append(round(CORES * busy / (busy + idle), 1) if busy + idle > 0 else 0.0)
    print(
        f"run --exit-when-done, {n:,} articles, {args.workers} workers: {wall:.2f} s; machine busy "
        f"{machine_busy / wall:.2f} of {CORES} cores (other sessions included), our processes "
        f"{our_cpu / wall:.2f} ({our_cpu:.2f} core-s)"
    )
    print(f"machine's busy cores, per second: {' '.join(map(str, per_second))}")
    print(
        f"from run's start: first chunk fetched {at(fetched['a'])} s, first range leased "
        f"{first_lease:.2f} s, first batch stored {at(stored['a'])} s; last chunk fetched "
        f"{at(fetched['b'])} s, last batch stored {at(stored['b'])} s"
    )
    print(f"{len(ranges)} ranges; granted per worker {per_worker}; lease-held share per worker {shares}")
    if args.keep:
        print(f"kept: {folder}")
    else:
        shutil.rmtree(folder, ignore_errors=True)
    emit(
        {
            "n": n,
            "workers": args.workers,
            "wall_s": round(wall, 2),
            "machine_cores_busy": round(machine_busy / wall, 2),
            "our_cores_busy": round(our_cpu / wall, 2),
            "our_core_s": round(our_cpu, 2),
            "first_chunk_s": at(fetched["a"]),
            "first_lease_s": round(first_lease, 2),
            "first_batch_s": at(stored["a"]),
            "last_chunk_s": at(fetched["b"]),
            "last_batch_s": at(stored["b"]),
            "ranges": len(ranges),
            "workers_granted": len(per_worker),
            "lease_held_share_min": min(shares.values()) if len(shares) == args.workers else 0.0,
        }
    )


if __name__ == "__main__":
    main()

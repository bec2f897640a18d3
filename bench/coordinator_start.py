"""The coordinator's start (issue 17): what ``usenet-indexer run`` costs whatever the number of headers.

Each round, for each source tree in turn:

1. **the imports**: a fresh interpreter imports what ``run``'s coordinator imports before it serves
   (tests/unit/test_startup.py's ``COORDINATOR``: the command line, ``local.run``, the web app and
   uvicorn; ``import_fastapi`` where the tree has it); its CPU (user + system, from ``wait4``);
2. **a whole run**: ``groups add`` then ``run --exit-when-done --view=plain`` over bench/e2e.py's
   ``FIXED_N``-article corpus on SQLite (bench/e2e.py's ``run_indexer``, its own nnrpd): the
   coordinator's CPU (its process, without its reaped workers), and from its log the seconds from the
   command's start to the plan and to the first lease (the first range a worker got), and to the exit.

``--tree NAME=SRC`` (repeatable) runs both with ``PYTHONPATH=SRC``, the trees alternating (in reverse
order every other round) so that a baseline (``git archive main src | tar -x -C /tmp/base``, the built
``_speedups*.so`` copied in) and this tree share the machine's noise (2 cores shared with other sessions):

    uv run python bench/coordinator_start.py --rounds 8 --tree base=/tmp/base/src --tree ours=src
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from tests.e2e.processes import free_port
from tests.support import inn2
from tests.unit.test_startup import COORDINATOR

import e2e
from _common import emit, tree_arguments

# tests/unit/test_startup.py's COORDINATOR (what `run`'s coordinator imports before it serves), its
# import_fastapi called only where the tree has it: a tree from before session 14 has not.
_CALL = "    from usenet_indexer.coordinator.http import import_fastapi\n    import_fastapi()\n"
_IF_THERE = (
    "    try:\n        from usenet_indexer.coordinator.http import import_fastapi\n"
    "    except ImportError:\n        pass\n    else:\n        import_fastapi()\n"
)
assert _CALL in COORDINATOR, "tests/unit/test_startup.py's COORDINATOR changed: update _CALL"
IMPORTS = COORDINATOR.replace(_CALL, _IF_THERE)


def import_cpu(source: str) -> float:
    """Core-seconds of a fresh interpreter importing the coordinator's start-up path from ``source``."""
    env = {**os.environ, "PYTHONPATH": source}
    process = subprocess.Popen([sys.executable, "-c", IMPORTS], env=env)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"importing the coordinator from {source} failed ({process.returncode})")
    return usage.ru_utime + usage.ru_stime


def whole_run(source: str, folder: Path, group: str, port: int, daemon: int) -> dict[str, float]:
    """One ``run`` over the FIXED_N corpus: its coordinator's CPU and its phases (seconds)."""
    folder.mkdir(parents=True)
    url = f"sqlite:///{folder / 'usenet-indexer.db'}"
    run = e2e.run_indexer("sqlite", url, folder, group, port, daemon, e2e.FIXED_N, None, pythonpath=source)
    missing = {"planned", "first lease"} - run.phases.keys()
    if missing:
        raise SystemExit(f"no {', '.join(sorted(missing))} in the run's log: see {folder / 'run.log'}")
    return {
        "coordinator_s": run.coordinator_s,
        "planned_s": run.phases["planned"],
        "first_lease_s": run.phases["first lease"],
        "exit_s": run.phases["exit"],
    }


def main() -> None:
    trees, rounds = tree_arguments(__doc__, 8, 3, "rounds")
    group, _, _ = e2e.ensure_corpus(e2e.FIXED_N)
    results: dict[str, dict[str, list[float]]] = {name: {} for name, _ in trees}
    with tempfile.TemporaryDirectory(prefix="coordinator-start-") as folder:
        port = free_port()
        daemon = inn2.ReaderDaemon(port, Path(folder) / "nnrpd.log")
        daemon.start()
        try:
            assert daemon.pgid is not None
            for round_ in range(rounds):
                # Every other round in the reverse order: a tree always run second would always start
                # right after the other's run (its workers' exit, the store's files still cached).
                for name, source in trees if round_ % 2 == 0 else trees[::-1]:
                    figures = {"import_s": import_cpu(source)}
                    run_folder = Path(folder) / f"{name}-{round_}"
                    figures |= whole_run(source, run_folder, group, port, daemon.pgid)
                    for key, value in figures.items():
                        results[name].setdefault(key, []).append(value)
                    print(
                        f"round {round_ + 1:>2} {name:>8}: imports {figures['import_s']:.3f} core-s; run: "
                        f"coordinator {figures['coordinator_s']:.2f} core-s, "
                        f"planned +{figures['planned_s']:.2f} s, "
                        f"first lease +{figures['first_lease_s']:.2f} s, exit +{figures['exit_s']:.2f} s",
                        flush=True,
                    )
        finally:
            daemon.stop()
    summary: dict[str, float] = {}
    first = trees[0][0]
    for name, by_figure in results.items():
        parts = []
        for key, values in by_figure.items():
            median = statistics.median(values)
            summary[f"{name}_{key}_median"] = round(median, 3)
            text = f"{key} median {median:.3f} ({min(values):.3f}-{max(values):.3f})"
            if name != first:
                # Round by round against the first tree: the pairs share the machine's load of the moment.
                paired = statistics.median(v - b for v, b in zip(values, results[first][key], strict=True))
                summary[f"{name}_minus_{first}_{key}_paired_median"] = round(paired, 3)
                text += f" paired {paired:+.3f}"
            parts.append(text)
        print(f"{name:>8}, n={rounds}: " + "; ".join(parts))
    emit(summary)


if __name__ == "__main__":
    main()

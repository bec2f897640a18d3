"""How often ``nntp_compression = "auto"`` reads the test INN2 on loopback plain, on a busy machine.

On loopback INN2's compressing costs more than the bytes it saves (issue 17: the whole run slower, INN2
three times the CPU), so "auto" must choose plain; its measurement is wall-clock time, which anything
else on the machine can stretch. Each trial opens a new pool of 2 connections (the default
measurement: probes of both modes) and reads 4 chunks of the default size from the e2e corpus, while

- ``--busy-processes P`` processes spin on the cores (other work on the machine: the workers, the
  database), and
- ``--gil-busy S``: a thread of this process holds the GIL in bursts of S seconds (the coordinator's
  own other work: an import, the batch route), 5 ms apart.

It prints how many trials chose each mode, the wrong choices' measured rates, and one JSON line. For a
before/after, run it with ``PYTHONPATH`` pointing at the other tree's ``src``, alternately.

    uv run python bench/compression_choice.py --trials 50 --busy-processes 5 --gil-busy 0.2
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT), str(ROOT.parent)]

from tests.support import inn2

from _common import emit
from e2e import CHUNK, ensure_corpus
from usenet_indexer.nntp.pool import NNTPPool, ServerSettings

CORPUS = 200_000


def spin() -> None:
    while True:
        pass


def hold_gil(stop: threading.Event, seconds: float) -> None:
    while not stop.is_set():
        began = time.perf_counter()
        while time.perf_counter() - began < seconds:
            pass
        time.sleep(0.005)


async def trial(group: str, first: int) -> tuple[str, dict[str, float]]:
    server = ServerSettings(host=inn2.HOST, port=inn2.PLAIN_PORT, connections=2)
    async with NNTPPool([server]) as pool:
        choice = pool.compression_choice()
        assert choice is not None
        starts = range(first, first + 4 * CHUNK, CHUNK)
        await asyncio.gather(*(pool.over_chunk(group, n, n + CHUNK - 1) for n in starts))
        decision = getattr(choice, "last_decision", None)  # None in a tree from before it
        rates = {} if decision is None else {str(mode): rate / 1e6 for mode, rate in decision.rates.items()}
        return str(choice.chosen), rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="10 trials (make bench)")
    parser.add_argument("--busy-processes", type=int, default=0)
    parser.add_argument("--gil-busy", type=float, default=0.0, metavar="S")
    args = parser.parse_args()
    if args.quick:
        args.trials = 10
    group, low, high = ensure_corpus(CORPUS)
    spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.busy_processes)]
    for process in spinners:
        process.start()
    stop = threading.Event()
    if args.gil_busy > 0:
        threading.Thread(target=hold_gil, args=(stop, args.gil_busy), daemon=True).start()
    chosen: dict[str, int] = {}
    wrong: list[dict[str, float]] = []
    span = high - low + 1 - 4 * CHUNK
    try:
        for index in range(args.trials):
            mode, rates = asyncio.run(trial(group, low + (index * 4 * CHUNK) % span))
            chosen[mode] = chosen.get(mode, 0) + 1
            if mode != "plain":
                wrong.append(rates)
    finally:
        stop.set()
        for process in spinners:
            process.kill()
    print(
        f"{args.trials} trials, {args.busy_processes} busy processes, GIL held in bursts of "
        f"{args.gil_busy:.3f} s: " + ", ".join(f"{mode} {count}" for mode, count in sorted(chosen.items())),
        flush=True,
    )
    for rates in wrong:
        print("  a wrong choice's best rates (MB/s): " + ", ".join(f"{m} {r:.1f}" for m, r in rates.items()))
    emit(
        {
            "trials": args.trials,
            "busy_processes": args.busy_processes,
            "gil_busy_s": args.gil_busy,
            "chosen": chosen,
            "wrong": len(wrong),
        }
    )


if __name__ == "__main__":
    main()

"""The burst walk (issue 16, indexing/bursts.py) on generated bursts: files placed wrongly (must be 0),
files left unplaced, and headers fetched per file, per swap rate and swap model.

Bursts are generated as tests/unit/indexing/test_bursts.py's property does (its ``posting``: each file's
parts in order, neighbours swapped at a rate; ``carried``: an article swapped on and on is carried
several places, as the sample news server posts), from Python's own random numbers rather than
Hypothesis's (which seeks the corners): these are the figures of ordinary bursts.

    uv run python bench/walk.py                  # 60 CPU-seconds per configuration
    uv run python bench/walk.py --quick          # 3 CPU-seconds per configuration

The last line printed is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT), str(ROOT.parent)]

from tests.unit.indexing.test_bursts import Planned, parts_of, posting, walk

from _common import emit

PART_SIZES = (384_000, 640_000, 716_800, 768_000)


def burst(rng: random.Random) -> list[Planned]:
    """Files as the property's ``shapes_of`` draws them: one part size, 1-12 files of 1-40 parts."""
    part = rng.choice(PART_SIZES)
    files = []
    for i in range(rng.randint(1, 12)):
        n = rng.randint(1, 40)
        last = max(1, int(rng.random() * (part * 0.9 if n == 1 else part - 1)))
        files.append(Planned(f"f{i}", (n - 1) * part + last, part))
    return files


def measure(swaps: float, carried: bool, seconds: float, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    bursts = files_posted = placed = wrong = fetched = worst = 0
    start = time.process_time()
    while time.process_time() - start < seconds:
        files = burst(rng)
        pieces, where = posting(files, rng, swaps, carried)
        w = walk(files, pieces, where)
        expected = {
            frozenset(n for n, (i, _) in where.items() if i == index): f.name for index, f in enumerate(files)
        }
        for f in w.files:
            index = int(f.head.name[1:])
            n = parts_of(files[index])
            right = expected.get(frozenset(f.pieces)) == f.head.name and where[f.pieces[0]] == (index, 1)
            if files[index].size - (n - 1) * files[index].part < 0.98 * files[index].part:
                right = right and where[f.pieces[-1]] == (index, n)
            wrong += not right
        bursts += 1
        files_posted += len(files)
        placed += len(w.files)
        fetched += w.fetched
        worst = max(worst, -(-w.fetched // len(files)))
    return {
        "bursts": bursts,
        "files": files_posted,
        "placed": placed,
        "wrong": wrong,
        "unplaced_share": 1 - placed / files_posted,
        "headers_per_file": fetched / files_posted,
        "worst_headers_per_file": worst,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="CPU seconds per configuration")
    parser.add_argument("--quick", action="store_true", help="3 CPU-seconds per configuration")
    parser.add_argument("--seed", type=int, default=16)
    args = parser.parse_args()
    seconds = 3.0 if args.quick else args.seconds
    figures = {}
    print(
        f"{'swaps':>6} {'carried':>8} {'bursts':>8} {'files':>9} {'wrong':>6} {'unplaced':>9} "
        f"{'headers/file':>13} {'worst':>6}"
    )
    for carried in (False, True):
        for swaps in (0.0, 0.05, 0.2):
            m = measure(swaps, carried, seconds, args.seed)
            figures[f"swaps={swaps},carried={carried}"] = m
            print(
                f"{swaps:>6} {carried!s:>8} {m['bursts']:>8,} {m['files']:>9,} {m['wrong']:>6} "
                f"{m['unplaced_share']:>8.2%} {m['headers_per_file']:>13.3f} "
                f"{m['worst_headers_per_file']:>6}",
                flush=True,
            )
    emit(figures)


if __name__ == "__main__":
    main()

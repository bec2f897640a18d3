"""Indexing speed and memory: realistic overview lines as zlib chunks -> batches, against a floor.

The floor is measured in the same run on the same chunks: inflate each chunk, split it into lines and
every line into its tab fields, nothing else. Indexing has to do that too, so the ratio of the two rates
says how much the indexing itself costs (target: at least 0.5). The indexer runs its C accelerator when
it is built (usenet_indexer/accelerator/) and, in the same run, its pure-Python path
(``ratio_to_floor_pure``). The worker's two stages after indexing, ``take`` and ``encode_batch`` (the
body it posts), are timed apart (thread CPU, µs a header: ``take_us``, ``encode_us``).
Peak memory is measured in a child process that indexes 1,000,000 headers into ONE batch and takes it
(tracemalloc's peak, input chunks excluded, plus the child's peak RSS), on the default path.

    uv run python bench/index.py           # 1,000,000 lines, 20,000 per chunk
    uv run python bench/index.py --quick   # a short version (~10 s)

The last line printed is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import pickle
import random
import subprocess
import sys
import tempfile
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from usenet_indexer import accelerator
from usenet_indexer.indexing import sample
from usenet_indexer.indexing.indexer import RangeIndexer
from usenet_indexer.indexing.rules import default_rules
from usenet_indexer.wire.batch import encode_batch

Result = TypeVar("Result")

GROUP = "alt.binaries.test"


def make_chunks(
    lines_wanted: int, per_chunk: int, seed: int = 7
) -> tuple[int, int, list[tuple[int, int, bytes]]]:
    """Realistic overview as (from, to, zlib-compressed text) chunks: first, last and the chunks."""
    rng = random.Random(seed)
    lines: list[bytes] = []
    first = 5_000_000_000  # a modern group's article numbers do not fit 32 bits
    number = first
    while len(lines) < lines_wanted:
        plan = sample.plan(rng, 200, GROUP, max_parts=120)
        posting = sample.post(plan, rng, first=number, concurrent=6)
        lines += [sample.overview_line(a) for a in posting.articles]
        number = posting.last + 1
    del lines[lines_wanted:]
    numbers = [int(line.split(b"\t", 1)[0]) for line in lines]
    last = numbers[-1]
    chunks = []
    for start in range(0, len(lines), per_chunk):
        block = lines[start : start + per_chunk]
        low = numbers[start]
        high = numbers[min(start + per_chunk, len(lines)) - 1]
        chunks.append((low, high, zlib.compress(sample.chunk_text(block), 6)))
    # Chunks cover contiguous spans: each from the article after the previous chunk's last.
    spans = []
    at = first
    for _, high, data in chunks:
        spans.append((at, high, data))
        at = high + 1
    return first, last, spans


def floor(chunks: list[tuple[int, int, bytes]]) -> int:
    """Inflate, split lines, split fields: the least any indexer must do."""
    count = 0
    for _, _, data in chunks:
        for line in zlib.decompress(data).split(b"\n"):
            line.split(b"\t")
            count += 1
    return count


def index(
    first: int,
    last: int,
    chunks: list[tuple[int, int, bytes]],
    batch_articles: int,
    native: bool | None = None,
) -> tuple[int, int]:
    """What a worker does: inflate and index each chunk, take a batch every ``batch_articles``."""
    indexer = RangeIndexer(GROUP, first, last, first, default_rules(), native=native)
    headers = fragments = 0
    for _ in batch_points(indexer, first, last, chunks, batch_articles):
        batch = indexer.take()
        headers += batch.headers
        fragments += len(batch.fragments)
    return headers, fragments


def batch_points(
    indexer: RangeIndexer, first: int, last: int, chunks: list[tuple[int, int, bytes]], batch_articles: int
) -> Iterator[None]:
    """Inflates and feeds each chunk to ``indexer``; yields where a worker takes a batch (every
    ``batch_articles``, and after the last chunk)."""
    batch_from = first
    for _, high, data in chunks:
        indexer.add_text(zlib.decompress(data), high + 1)
        if high == last:
            indexer.finish()
        if high == last or high + 1 - batch_from >= batch_articles:
            yield
            batch_from = high + 1


def take_and_encode(
    first: int, last: int, chunks: list[tuple[int, int, bytes]], batch_articles: int
) -> tuple[float, float, int]:
    """What a worker does after indexing, timed apart: each batch's take() and its encode_batch, in
    thread CPU seconds, and the headers."""
    indexer = RangeIndexer(GROUP, first, last, first, default_rules())
    take = encode = 0.0
    headers = 0
    gc.collect()
    for _ in batch_points(indexer, first, last, chunks, batch_articles):
        began = time.thread_time()
        batch = indexer.take()
        taken = time.thread_time()
        encode_batch(batch, 1, 1)
        encode += time.thread_time() - taken
        take += taken - began
        headers += batch.headers
    return take, encode, headers


def timed(fn: Callable[..., Result], *args: object) -> tuple[float, Result]:
    """CPU seconds of the call: both sides are single-threaded and do no I/O, and on a shared machine the
    wall clock also counts the time other processes held the core."""
    gc.collect()
    start = time.process_time()
    result = fn(*args)
    return time.process_time() - start, result


def _status_mb(field: str) -> float:
    """A memory figure of this process from /proc (VmHWM is reset by exec, unlike ru_maxrss)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def memory_child(path: str, traced: bool) -> None:
    """In a fresh process: index every chunk into one batch, take it; print peak figures as JSON.

    Traced (tracemalloc) for the Python heap's peak; untraced for the process's RSS, which tracemalloc's
    own bookkeeping would inflate.
    """
    with open(path, "rb") as f:
        first, last, chunks = pickle.load(f)
    baseline_rss = _status_mb("VmRSS")
    if not traced:
        indexer = RangeIndexer(GROUP, first, last, first, default_rules())
        for _, high, data in chunks:
            indexer.add_text(zlib.decompress(data), high + 1)
        indexer.finish()
        batch = indexer.take()
        after_take = _status_mb("VmHWM")
        encode_batch(batch, 1, 1)
        print(
            json.dumps(
                {
                    "rss_baseline_mb": baseline_rss,
                    "rss_take_mb": after_take,
                    "rss_peak_mb": _status_mb("VmHWM"),
                }
            )
        )
        return
    tracemalloc.start()
    indexer = RangeIndexer(GROUP, first, last, first, default_rules())
    for _, high, data in chunks:
        indexer.add_text(zlib.decompress(data), high + 1)
    indexer.finish()
    batch = indexer.take()
    traced_after_take = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    body = encode_batch(batch, 1, 1)
    encode_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(
        json.dumps(
            {
                "headers": batch.headers,
                "segments": sum(r.segment_count for r in batch.fragments),
                "peak_mb": traced_after_take[1] / 1e6,
                "held_mb": traced_after_take[0] / 1e6,
                "encode_peak_mb": encode_peak / 1e6,
                "body_mb": len(body) / 1e6,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short version (~10 s)")
    parser.add_argument("--lines", type=int, default=None)
    parser.add_argument("--chunk", type=int, default=20_000)
    parser.add_argument("--batch-articles", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    parser.add_argument("--untraced", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.memory_child, traced=not args.untraced)
        return
    lines = args.lines or (150_000 if args.quick else 1_000_000)
    rounds = args.rounds or (2 if args.quick else 3)

    start = time.perf_counter()
    first, last, chunks = make_chunks(lines, args.chunk)
    compressed = sum(len(c[2]) for c in chunks)
    print(
        f"generated {lines:,} overview lines in {len(chunks)} chunks ({compressed / 1e6:.1f} MB compressed) "
        f"in {time.perf_counter() - start:.1f} s"
    )

    # The default path (the accelerator when built) and, when that is native, the pure-Python one too.
    paths = {"default": None, "pure": False} if accelerator.speedups is not None else {"default": None}
    print(f"indexing path: {accelerator.PATH} ({accelerator.REASON})")
    floor_times: list[float] = []
    index_times: dict[str, list[float]] = {name: [] for name in paths}
    headers = fragments = 0
    for _ in range(rounds):  # alternate, best of each: the machine's noise hits all alike
        t, _ = timed(floor, chunks)
        floor_times.append(t)
        for name, native in paths.items():
            t, (headers, fragments) = timed(index, first, last, chunks, args.batch_articles, native)
            index_times[name].append(t)
            assert headers == lines, (headers, lines)
    take_times: list[float] = []
    encode_times: list[float] = []
    for _ in range(rounds):
        take_s, encode_s, stage_headers = take_and_encode(first, last, chunks, args.batch_articles)
        assert stage_headers == lines, (stage_headers, lines)
        take_times.append(take_s)
        encode_times.append(encode_s)
    # For the edge worker's choice, not the library's: the same run with the collector off (a worker
    # process may gc.freeze() after start-up and raise the gen-0 threshold; a library must not).
    gc.collect()
    gc.disable()
    try:
        gc_off_time, _ = timed(index, first, last, chunks, args.batch_articles)
    finally:
        gc.enable()
    floor_rate = lines / min(floor_times)
    rate = lines / min(index_times["default"])
    pure_rate = lines / min(index_times["pure"]) if "pure" in index_times else rate
    print(f"floor (inflate + split lines and fields): {floor_rate:,.0f} lines/s (CPU time, best of {rounds})")
    print(
        f"{f'indexing to batches ({accelerator.PATH}):':42}{rate:,.0f} lines/s "
        f"(CPU time, best of {rounds}), {fragments} fragments"
    )
    print(f"ratio to floor: {rate / floor_rate:.3f} (target >= 0.5)")
    if "pure" in index_times:
        print(
            f"{'indexing to batches (pure Python):':42}{pure_rate:,.0f} lines/s (CPU time, best of {rounds})"
        )
        print(f"ratio to floor, pure Python: {pure_rate / floor_rate:.3f}")
    print(f"indexing, garbage collector off:          {lines / gc_off_time:,.0f} lines/s (one run)")
    take_us = min(take_times) / lines * 1e6
    encode_us = min(encode_times) / lines * 1e6
    print(
        f"take: {take_us:.3f} µs a header, encode_batch: {encode_us:.3f} µs a header "
        f"(thread CPU, best of {rounds}; {fragments} fragments, batches of {args.batch_articles:,} articles)"
    )

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chunks.pickle"
        path.write_bytes(pickle.dumps((first, last, chunks)))
        memory: dict[str, float] = {}
        for extra in ([], ["--untraced"]):
            child = subprocess.run(
                [sys.executable, __file__, "--memory-child", str(path), *extra],
                capture_output=True,
                text=True,
                check=True,
            )
            memory.update(json.loads(child.stdout.strip().splitlines()[-1]))
    print(
        f"one batch of {memory['headers']:,} headers ({memory['segments']:,} segments): "
        f"peak {memory['peak_mb']:.0f} MB "
        f"while indexing and taking (held after take: {memory['held_mb']:.0f} MB); encoding it: peak "
        f"{memory['encode_peak_mb']:.0f} MB, body {memory['body_mb']:.1f} MB; untraced child RSS: "
        f"{memory['rss_baseline_mb']:.0f} MB before indexing (input chunks loaded), peak "
        f"{memory['rss_take_mb']:.0f} MB after take, {memory['rss_peak_mb']:.0f} MB after encoding"
    )
    print(
        json.dumps(
            {
                "lines": lines,
                "chunk_lines": args.chunk,
                "lines_per_s": round(rate),
                "floor_lines_per_s": round(floor_rate),
                "ratio_to_floor": round(rate / floor_rate, 3),
                "path": accelerator.PATH,
                "lines_per_s_pure": round(pure_rate),
                "ratio_to_floor_pure": round(pure_rate / floor_rate, 3),
                "lines_per_s_gc_off": round(lines / gc_off_time),
                "take_us": round(take_us, 3),
                "encode_us": round(encode_us, 3),
                "peak_mb_1m_batch": round(memory["peak_mb"], 1),
                "batch_headers": memory["headers"],
                "encode_peak_mb": round(memory["encode_peak_mb"], 1),
                "rss_peak_mb_1m_batch": round(memory["rss_take_mb"], 1),
                "rss_peak_mb_with_encode": round(memory["rss_peak_mb"], 1),
                "quick": args.quick,
            }
        )
    )


if __name__ == "__main__":
    main()

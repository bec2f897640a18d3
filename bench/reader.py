"""The edge worker's index stage, CPU per header, and its subject reading, CPU per new file.

What a worker does between inflating a chunk and taking a batch (``add_text``: the C scan, and Python
once per new file, where the rules read its subject), in one process on the overview of bench/e2e.py's
corpus (its named releases, as sample.py posts them) or bench/index.py's noisier one, the chunks
inflated before the clock starts. It prints thread CPU per header of add_text ("index", the stage
the worker logs), of take, and of ``RuleSet.match`` alone on the corpus's distinct file subjects (the
first of each file's parts). Run it with another tree first on PYTHONPATH to compare two codes
alternately (docs/PERFORMANCE.md, "Session 10: i17-reader").

    uv run python bench/reader.py                    # bench/e2e.py's corpus, 400,000 headers
    uv run python bench/reader.py --corpus index     # bench/index.py's

The last line printed is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
import zlib

from usenet_indexer import runtime
from usenet_indexer.indexing import sample
from usenet_indexer.indexing.indexer import RangeIndexer
from usenet_indexer.indexing.rules import RuleSet, default_rules

GROUP = "alt.binaries.bench.reader"
E2E_SEED = 17  # bench/e2e.py's SEED: the same plan, hence the same subjects
BATCH_ARTICLES = 100_000  # what a worker indexes between two takes at most (its batch)


def e2e_lines(n: int) -> list[bytes]:
    """bench/e2e.py's corpus as overview lines: its plan's named releases, posted 200 at a time."""
    rng = random.Random(E2E_SEED)
    releases, names = [], set()
    for release in sample.plan(rng, n // 40 + 100, GROUP):
        if release.scheme == "named" and release.collection not in names:
            names.add(release.collection)
            releases.append(release)
    lines: list[bytes] = []
    number = 1
    for first in range(0, len(releases), 200):
        posting = sample.post(releases[first : first + 200], rng, first=number, duplicate=0.0, cancelled=0.0)
        lines += [sample.overview_line(a) for a in posting.articles]
        number = posting.last + 1
        if len(lines) >= n:
            break
    return lines[:n]


def index_lines(n: int) -> list[bytes]:
    """bench/index.py's corpus (make_chunks): plans of 200 releases, 6 posters at a time."""
    rng = random.Random(7)
    lines: list[bytes] = []
    number = 5_000_000_000
    while len(lines) < n:
        posting = sample.post(sample.plan(rng, 200, GROUP, max_parts=120), rng, first=number, concurrent=6)
        lines += [sample.overview_line(a) for a in posting.articles]
        number = posting.last + 1
    return lines[:n]


def chunks_of(lines: list[bytes], per_chunk: int) -> list[tuple[int, bytes]]:
    """(the article after the chunk's last, its text): the chunks a worker inflates, already inflated."""
    out = []
    for start in range(0, len(lines), per_chunk):
        block = lines[start : start + per_chunk]
        last = int(block[-1].split(b"\t", 1)[0])
        out.append((last + 1, zlib.decompress(zlib.compress(sample.chunk_text(block), 1))))
    return out


def worker_rules() -> RuleSet:
    """The built-in rules as an edge worker has them: the coordinator's JSON read anew (edge/worker.py),
    equal to default_rules() but new objects (issue 17: with them every new file took the Python
    regexes, which a bench on default_rules() did not see)."""
    return RuleSet.from_json(default_rules().to_json())


def index_once(chunks: list[tuple[int, bytes]], first: int, last: int) -> tuple[float, float, int]:
    """CPU seconds of add_text and of take over the chunks, and the headers the batches held."""
    indexer = RangeIndexer(GROUP, first, last, first, worker_rules())
    adding = taking = 0.0
    headers = 0
    since = first
    for after, text in chunks:
        start = time.thread_time()
        indexer.add_text(text, after)
        adding += time.thread_time() - start
        if after > last:
            indexer.finish()
        if after > last or after - since >= BATCH_ARTICLES:
            start = time.thread_time()
            headers += indexer.take().headers
            taking += time.thread_time() - start
            since = after
    return adding, taking, headers


def read_once(subjects: list[str]) -> float:
    """CPU seconds of the rules reading each subject once."""
    rules = worker_rules()
    start = time.thread_time()
    for subject in subjects:
        rules.match(subject, GROUP)
    return time.thread_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=("e2e", "index"), default="e2e")
    parser.add_argument("--lines", type=int, default=400_000)
    parser.add_argument("--chunk", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--label", default="", help="a name for this run in the JSON line")
    args = parser.parse_args()
    lines = (e2e_lines if args.corpus == "e2e" else index_lines)(args.lines)
    chunks = chunks_of(lines, args.chunk)
    first, last = int(lines[0].split(b"\t", 1)[0]), int(lines[-1].split(b"\t", 1)[0])
    # The first part's subject of each file: what reaches the rules (later parts take the fast loops).
    files: dict[str, str] = {}
    for line in lines:
        subject = line.split(b"\t", 2)[1].decode("utf-8", "replace")
        files.setdefault(subject.rpartition("(")[0], subject)
    subjects = list(files.values())
    runtime.tune_gc()  # the worker's collector thresholds
    index_times, take_times, read_times = [], [], []
    for _ in range(args.rounds):
        adding, taking, headers = index_once(chunks, first, last)
        assert headers == len(lines), (headers, len(lines))
        index_times.append(adding)
        take_times.append(taking)
        read_times.append(read_once(subjects))
    n = len(lines)
    result = {
        "label": args.label,
        "corpus": args.corpus,
        "lines": n,
        "files": len(subjects),
        "index_us_per_header_min": round(min(index_times) / n * 1e6, 3),
        "index_us_per_header_median": round(statistics.median(index_times) / n * 1e6, 3),
        "take_us_per_header_min": round(min(take_times) / n * 1e6, 3),
        "read_us_per_file_min": round(min(read_times) / len(subjects) * 1e6, 3),
        "read_us_per_file_median": round(statistics.median(read_times) / len(subjects) * 1e6, 3),
    }
    print(
        f"{args.corpus} corpus, {n:,} headers, {len(subjects):,} file subjects, best of {args.rounds}: "
        f"index {result['index_us_per_header_min']} µs a header (median "
        f"{result['index_us_per_header_median']}), take {result['take_us_per_header_min']}, "
        f"reading {result['read_us_per_file_min']} µs a file subject"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()

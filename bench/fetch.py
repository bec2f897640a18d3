"""Overview fetch speed from INN2: our pool/client and the prefetcher against a bare-socket reader,
same commands, same run.

For 1, 4 and 8 connections, plain and compressed (COMPRESS DEFLATE, what INN2 offers), all readers
fetch the same group split into the same chunks (OVER first-last):

- **bare**: one blocking socket per connection in threads and no parsing beyond finding each reply's
  end (the server's own limit), quick ACKs after every read and our inflater (ISA-L) for COMPRESS
  DEFLATE, so that it pays for nothing our client avoids;
- **client**: ours through NNTPPool.over_chunk, nothing stored;
- **prefetcher**: the coordinator's prefetcher (coordinator/loops/prefetcher.py) on ranges planned over the
  same articles: fetch, pack (a plain reply deflated at ``spool_deflate_level``), write each chunk
  atomically into a spool on disk (fsync'd), record it in the store (SQLite, or PostgreSQL with
  ``--store postgresql``). Its clock runs from its first round to its last; the store is reset between
  passes with the clock stopped.

Each reader's CPU (this process, all threads, while its clock runs) is printed as µs per overview line:
INN2 shares this machine's cores, so a reader's CPU is taken from the server, and that figure holds
where the throughput ratios swing with the load of whoever else uses the machine.

Prints a table, then one JSON line whose ``ratio_vs_bare_{1,4,8}`` are the prefetcher's (the worse of
plain and compressed), the figure issue 5 asks for (>= 0.9); ``client_ratio_vs_bare_*`` the client's.

    uv run python bench/fetch.py [--quick] [--articles N] [--chunk N] [--rounds N] [--store sqlite]

Needs INN2 (scripts/inn2-setup.sh, run here as needed: root). It posts its own articles to a
dedicated group when that group holds fewer than asked for.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tests.support import inn2

from _common import postgres_database, sqlite_database
from usenet_indexer import runtime
from usenet_indexer.compression import Inflater, decompressobj
from usenet_indexer.coordinator.loops.news import NewsService
from usenet_indexer.coordinator.loops.prefetcher import Prefetcher
from usenet_indexer.coordinator.wiring import Services, open_services
from usenet_indexer.nntp.pool import NNTPPool, ServerSettings
from usenet_indexer.settings import Settings

GROUP = "alt.binaries.bench.fetch"
# CPU seconds (this process, every thread) the last run_* spent while its clock ran: INN2 shares the
# machine, so what a reader costs in CPU is taken from the server; µs per line is the robust figure.
LAST_CPU = [0.0]


def ensure_articles(wanted: int) -> int:
    inn2.ensure_inn2([GROUP])
    have = _group_high(GROUP)
    if have < wanted:
        print(f"posting {wanted - have} articles to {GROUP} (has {have})", file=sys.stderr)
        started = time.perf_counter()
        inn2.post_articles(GROUP, (inn2.yenc_article(i) for i in range(have + 1, wanted + 1)))
        print(f"  posted in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    return _group_high(GROUP)


def _group_high(group: str) -> int:
    with socket.create_connection((inn2.HOST, inn2.PLAIN_PORT), timeout=30) as sock:
        reader = sock.makefile("rb")
        reader.readline()
        sock.sendall(f"GROUP {group}\r\n".encode())
        parts = reader.readline().split()
        sock.sendall(b"QUIT\r\n")
        reader.readline()
        reader.close()
    return int(parts[3]) if parts[0] == b"211" else 0


def chunks_of(last: int, size: int) -> list[tuple[int, int]]:
    return [(first, min(first + size - 1, last)) for first in range(1, last + 1, size)]


# -- the bare reader: the server's own limit ---------------------------------------------------------


class _Bare:
    """One blocking socket: sends OVER, reads until the reply's terminator; counts lines roughly."""

    def __init__(self, compressed: bool, group: str = GROUP, port: int = inn2.PLAIN_PORT) -> None:
        self.sock = socket.create_connection((inn2.HOST, port), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.inflater: Inflater | None = None
        self.deflater: zlib._Compress | None = None
        self._read_line()  # greeting
        self.command(b"GROUP " + group.encode())
        if compressed:
            self.command(b"COMPRESS DEFLATE")
            # The inflater our client uses (ISA-L when installed): the baseline must not pay for a
            # slower library than ours.
            self.inflater = decompressobj(-zlib.MAX_WBITS)
            self.deflater = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        self.pending = b""

    def _read_line(self) -> bytes:
        data = b""
        while not data.endswith(b"\r\n"):
            data += self.sock.recv(4096)
        return data

    def _send(self, data: bytes) -> None:
        if self.deflater is not None:
            data = self.deflater.compress(data) + self.deflater.flush(zlib.Z_SYNC_FLUSH)
        self.sock.sendall(data)

    def _recv(self) -> bytes:
        data = self.sock.recv(262144)
        # Quick ACKs after every read: INN2 writes a compressed session in small pieces, and with
        # delayed ACKs here each reply's last piece waited for our ACK (Nagle on the server); this
        # reader was ~25% slower than our client there until it did this (our client sets it too).
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        if not data:
            raise ConnectionError("closed")
        return self.inflater.decompress(data) if self.inflater is not None else data

    def command(self, line: bytes) -> None:
        self._send(line + b"\r\n")
        data = b""
        while not data.endswith(b"\r\n"):
            data += self._recv() if self.inflater is not None else self.sock.recv(4096)

    def over(self, first: int, last: int) -> int:
        self._send(b"OVER %d-%d\r\n" % (first, last))
        tail = b""
        newlines = 0
        while True:
            data = self._recv()
            newlines += data.count(b"\n")
            tail = (tail + data)[-5:]
            if tail.endswith(b"\r\n.\r\n"):
                return newlines - 2  # minus the status line and the terminator

    def close(self) -> None:
        self.sock.close()


def run_bare(
    connections: int,
    chunks: list[tuple[int, int]],
    compressed: bool,
    group: str = GROUP,
    port: int = inn2.PLAIN_PORT,
) -> tuple[float, int]:
    """(seconds, overview lines) for ``connections`` bare readers taking ``chunks`` from one queue."""
    readers = [_Bare(compressed, group, port) for _ in range(connections)]
    queue = list(reversed(chunks))
    lock = threading.Lock()
    counts = [0] * connections

    def work(index: int) -> None:
        while True:
            with lock:
                if not queue:
                    return
                first, last = queue.pop()
            counts[index] += readers[index].over(first, last)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(connections)]
    started, cpu = time.perf_counter(), time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    LAST_CPU[0] = time.process_time() - cpu
    for reader in readers:
        reader.close()
    return elapsed, sum(counts)


# -- ours -------------------------------------------------------------------------------------------


async def run_ours(connections: int, chunks: list[tuple[int, int]], compressed: bool) -> tuple[float, int]:
    server = ServerSettings(
        host=inn2.HOST,
        port=inn2.PLAIN_PORT,
        connections=connections,
        compression="auto" if compressed else "none",
        timeout=60,
    )
    async with NNTPPool([server]) as pool:
        # Open the connections first, as the bare reader does before its clock starts.
        await asyncio.gather(*(pool.over_chunk(GROUP, 1, 1) for _ in range(connections * 2)))
        queue = list(reversed(chunks))
        total = 0

        async def work() -> None:
            nonlocal total
            while queue:
                first, last = queue.pop()
                chunk = await pool.over_chunk(GROUP, first, last)
                total += chunk.lines

        started, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(work() for _ in range(connections)))
        elapsed = time.perf_counter() - started
        LAST_CPU[0] = time.process_time() - cpu
    return elapsed, total


# -- the prefetcher -------------------------------------------------------------------------------


def run_prefetcher(
    connections: int, last: int, chunk: int, passes: int, per_pass: int, compressed: bool, store: str
) -> tuple[float, int]:
    """Prefetch articles 1..last ``passes`` times into a fresh spool (``per_pass`` overview lines each);
    (seconds, overview lines)."""
    database = postgres_database() if store == "postgresql" else sqlite_database()
    with database as url, tempfile.TemporaryDirectory(prefix="uibench-spool") as folder:
        settings = Settings(
            database_url=url,
            data_dir=Path(folder),
            chunk_articles=chunk,
            range_articles=chunk * 50,
            spool_cap_bytes=1 << 40,
            prefetch_round_seconds=3600.0,
        )
        services = open_services(settings, migrate=False)
        server = ServerSettings(
            host=inn2.HOST,
            port=inn2.PLAIN_PORT,
            connections=connections,
            compression="auto" if compressed else "none",
            timeout=60,
        )
        news = NewsService([server])
        prefetcher = Prefetcher(services, news)
        try:
            services.groups.add(GROUP)
            services.groups.plan(GROUP, 1, last)

            async def warm(pool: NNTPPool) -> None:
                # Open the connections first, as the bare reader does before its clock starts.
                await asyncio.gather(*(pool.over_chunk(GROUP, 1, 1) for _ in range(connections * 2)))

            news.run(warm)
            elapsed = used = 0.0
            lines = 0
            for _ in range(passes):
                # The clock stops when the pass's last chunk is stored: the round that then finds
                # nothing left is the next pass's business in a running coordinator.
                started, cpu = time.perf_counter(), time.process_time()
                got = 0
                while got < per_pass and (report := news.run(prefetcher.round)).fetched:
                    got += report.lines
                elapsed += time.perf_counter() - started
                used += time.process_time() - cpu
                lines += got
                reset(services)
            LAST_CPU[0] = used
            return elapsed, lines
        finally:
            prefetcher.close()
            news.close()
            services.close()


def reset(services: Services) -> None:
    """Every range back to nothing fetched (between passes, the clock stopped)."""
    with services.db.transaction() as tx:
        tx.sql("UPDATE ranges SET spooled_chunks = 0")
        tx.sql("DELETE FROM fetched_chunks")
    for range_id in services.spool.ranges():
        services.spool.remove(range_id)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="50k articles, one round")
    parser.add_argument(
        "--articles", type=int, default=None, help="articles in the bench group (default 300k)"
    )
    parser.add_argument("--chunk", type=int, default=20_000, help="articles per OVER command")
    parser.add_argument("--rounds", type=int, default=None, help="best of N rounds per figure")
    parser.add_argument(
        "--store", choices=("sqlite", "postgresql"), default="sqlite", help="the prefetcher's store"
    )
    parser.add_argument(
        "--malloc-defaults", action="store_true", help="leave malloc's thresholds as glibc sets them"
    )
    parser.add_argument(
        "--passes",
        type=int,
        default=None,
        help="fetch the range this many times per measurement (so it lasts long enough)",
    )
    args = parser.parse_args()
    # malloc's thresholds as `run` and `serve` set them (runtime.py; absent from code before issue 17's
    # session 10, for an A/B), or glibc's defaults with --malloc-defaults.
    tuned = not args.malloc_defaults and getattr(runtime, "tune_malloc", lambda: False)()
    print(
        f"malloc thresholds {'set (runtime.tune_malloc)' if tuned else 'at their defaults'}", file=sys.stderr
    )
    wanted = args.articles or (50_000 if args.quick else 300_000)
    rounds = args.rounds or 3
    passes = args.passes or (4 if args.quick else 1)
    high = ensure_articles(wanted)
    last = min(high, wanted)
    chunks = chunks_of(last, min(args.chunk, max(1, last // 8))) * passes
    # The group may have gaps (articles innd refused keep no number), so the expected count is what
    # a single bare pass returns; every later run of either reader must return exactly that.
    expected = run_bare(1, chunks_of(last, min(args.chunk, max(1, last // 8))), False)[1] * passes
    print(
        f"group {GROUP}: articles 1-{last}, {passes} pass(es) in {len(chunks)} chunks, best of {rounds}",
        file=sys.stderr,
    )
    results: dict[str, float] = {}
    chunk = chunks[0][1]
    header = f"{'mode':<11}{'conns':>6}{'bare art/s':>14}{'client art/s':>14}{'ratio':>8}"
    print(f"{header}{'prefetch art/s':>16}{'ratio':>8}   CPU µs/line bare/client/prefetch")
    for compressed in (False, True):
        mode = "compressed" if compressed else "plain"
        for connections in (1, 4, 8):
            bare_best = ours_best = prefetch_best = 0.0
            cpu_per_line = {"bare": 1e9, "client": 1e9, "prefetch": 1e9}
            for _ in range(rounds):
                elapsed, count = run_bare(connections, chunks, compressed)
                if count != expected:
                    raise SystemExit(f"bare reader got {count} overview lines, expected {expected}")
                bare_best = max(bare_best, count / elapsed)
                cpu_per_line["bare"] = min(cpu_per_line["bare"], LAST_CPU[0] / count * 1e6)
                elapsed, count = asyncio.run(run_ours(connections, chunks, compressed))
                if count != expected:
                    raise SystemExit(f"our client got {count} overview lines, expected {expected}")
                ours_best = max(ours_best, count / elapsed)
                cpu_per_line["client"] = min(cpu_per_line["client"], LAST_CPU[0] / count * 1e6)
                elapsed, count = run_prefetcher(
                    connections, last, chunk, passes, expected // passes, compressed, args.store
                )
                if count != expected:
                    raise SystemExit(f"the prefetcher stored {count} overview lines, expected {expected}")
                prefetch_best = max(prefetch_best, count / elapsed)
                cpu_per_line["prefetch"] = min(cpu_per_line["prefetch"], LAST_CPU[0] / count * 1e6)
            ratio = ours_best / bare_best
            prefetch_ratio = prefetch_best / bare_best
            cpu = "/".join(f"{cpu_per_line[k]:.2f}" for k in ("bare", "client", "prefetch"))
            print(
                f"{mode:<11}{connections:>6}{bare_best:>14,.0f}{ours_best:>14,.0f}{ratio:>8.2f}"
                f"{prefetch_best:>16,.0f}{prefetch_ratio:>8.2f}   {cpu}"
            )
            for reader, value in cpu_per_line.items():
                results[f"{mode}_cpu_us_per_line_{reader}_{connections}"] = round(value, 3)
            results[f"{mode}_bare_{connections}"] = round(bare_best)
            results[f"{mode}_ours_{connections}"] = round(ours_best)
            results[f"{mode}_prefetch_{connections}"] = round(prefetch_best)
            results[f"ratio_{mode}_{connections}"] = round(ratio, 3)
            results[f"prefetch_ratio_{mode}_{connections}"] = round(prefetch_ratio, 3)
    summary: dict[str, object] = {
        "articles": last,
        "passes": passes,
        "chunk": chunk,
        "rounds": rounds,
        "store": args.store,
        "malloc_tuned": tuned,
    }
    for connections in (1, 4, 8):
        # The headline ratios are the prefetcher's, the worse of plain and compressed.
        summary[f"ratio_vs_bare_{connections}"] = min(
            results[f"prefetch_ratio_plain_{connections}"],
            results[f"prefetch_ratio_compressed_{connections}"],
        )
        summary[f"client_ratio_vs_bare_{connections}"] = min(
            results[f"ratio_plain_{connections}"], results[f"ratio_compressed_{connections}"]
        )
    summary.update(results)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

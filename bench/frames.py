"""Decode speed of the chunk stream (wire/frames.py) against a bare copy of the same bytes, in one run.

The stream is what a worker receives: incompressible payloads (compressed chunks) cut into 64 KB pieces
the way an HTTP client hands a body over. The baseline is ``b"".join(pieces)``: one memcpy of every byte,
the least any receiver that keeps the payload must do. Decoding copies each payload byte once too (into a
buffer allocated at the frame's size), so with the checksum off it should run near the baseline, and
the CRC-32 costs what zlib's crc32 costs. Frames of two sizes show that time grows linearly with the
frame size (a decoder that re-joined its buffer on every piece would be quadratic).

    uv run python bench/frames.py [--quick]

The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import zlib
from collections.abc import Callable

from usenet_indexer.wire.frames import STREAM_HEADER, FrameDecoder, encode_end, encode_frame

PIECE = 64 * 1024
MB = 1_000_000


def stream_of(payloads: list[bytes]) -> bytes:
    frames = [encode_frame(i * 10_000, i * 10_000 + 9_999, p) for i, p in enumerate(payloads)]
    return STREAM_HEADER + b"".join(frames) + encode_end()


def pieces_of(stream: bytes, size: int) -> list[bytes]:
    return [stream[i : i + size] for i in range(0, len(stream), size)]


def best_seconds(run: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def decode(pieces: list[bytes], verify: bool) -> int:
    # Frames beyond the default 64 MiB limit, to show how time grows with the frame size.
    decoder = FrameDecoder(max_payload=2**32 - 1, verify_checksum=verify)
    total = 0
    for piece in pieces:
        for frame in decoder.feed(piece):
            total += frame.data.nbytes
    decoder.close()
    return total


def measure(name: str, stream: bytes, pieces: list[bytes], repeat: int) -> dict[str, float]:
    size = len(stream) / MB
    join = best_seconds(lambda: b"".join(pieces), repeat)
    crc = best_seconds(lambda: decode(pieces, True), repeat)
    nocrc = best_seconds(lambda: decode(pieces, False), repeat)
    row = {
        "mb": round(size, 1),
        "join_mb_s": round(size / join),
        "decode_mb_s": round(size / crc),
        "decode_nocrc_mb_s": round(size / nocrc),
        "decode_vs_join": round(join / crc, 3),
        "decode_nocrc_vs_join": round(join / nocrc, 3),
        "decode_s": crc,
    }
    print(
        f"{name:<26} {size:6.1f} MB   join {row['join_mb_s']:>5} MB/s   decode {row['decode_mb_s']:>5} MB/s "
        f"(x{row['decode_vs_join']:.2f})   without CRC {row['decode_nocrc_mb_s']:>5} MB/s "
        f"(x{row['decode_nocrc_vs_join']:.2f})"
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller streams, fewer repeats")
    args = parser.parse_args()
    repeat = 3 if args.quick else 7
    # Both sizes well beyond the L3 cache (32 MiB here), so neither measures a cache-resident copy.
    small_mb, big_mb = (40, 80) if args.quick else (50, 200)
    print(f"python {sys.version.split()[0]}, pieces of {PIECE // 1024} KiB, best of {repeat}")

    rows = {}
    for label, mb in (("small", small_mb), ("big", big_mb)):
        s = stream_of([os.urandom(mb * MB)])
        rows[label] = measure(f"1 frame of {mb} MB", s, pieces_of(s, PIECE), repeat)
        del s
    many = [os.urandom(256 * 1024) for _ in range(100 if args.quick else 400)]
    s = stream_of(many)
    rows["many"] = measure(f"{len(many)} frames of 256 KiB", s, pieces_of(s, PIECE), repeat)
    del s, many

    # One feed holding the whole frame: the payload is a view, so decoding is the CRC and nothing else.
    payload = os.urandom(small_mb * MB)
    s = stream_of([payload])
    one_feed = best_seconds(lambda: decode([s], True), repeat)
    crc_only = best_seconds(lambda: zlib.crc32(payload), repeat)
    print(
        f"1 frame of {small_mb} MB in one feed: decode {small_mb / one_feed:.0f} MB/s, "
        f"zlib.crc32 alone {small_mb / crc_only:.0f} MB/s (zero-copy: the CRC is the whole cost)"
    )

    # Linear: 4x (or 2x) the bytes take that many times as long; a decoder re-joining its buffer on
    # every piece would take 16x (4x).
    time_ratio = rows["big"]["decode_s"] / rows["small"]["decode_s"]
    print(
        f"decode time at {big_mb} MB / at {small_mb} MB: {time_ratio:.2f} (linear = {big_mb / small_mb:.1f})"
    )
    result = {
        "piece_kib": PIECE // 1024,
        "frame_mb": big_mb,
        "decode_mb_s": rows["big"]["decode_mb_s"],
        "decode_nocrc_mb_s": rows["big"]["decode_nocrc_mb_s"],
        "join_mb_s": rows["big"]["join_mb_s"],
        "decode_vs_join": rows["big"]["decode_vs_join"],
        "decode_nocrc_vs_join": rows["big"]["decode_nocrc_vs_join"],
        "many_frames_decode_mb_s": rows["many"]["decode_mb_s"],
        "many_frames_join_mb_s": rows["many"]["join_mb_s"],
        "one_feed_decode_mb_s": round(small_mb / one_feed),
        "crc32_mb_s": round(small_mb / crc_only),
        "time_ratio": round(time_ratio, 2),
        "size_ratio": big_mb / small_mb,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()

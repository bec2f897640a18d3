"""The chunk stream a worker reads from the coordinator (wire/frames.py's FrameDecoder).

Input: one byte of options, then the stream. Option bit 0: fix every frame's CRC before decoding, so
the fuzzer also reaches what lies behind the check (spans, types, lengths, END); the other bits choose
the size of the pieces the stream is fed in. The decoder may refuse with FrameError only; it must decode
the same frames whatever the split; and what it accepts, encoded again, is the same stream.

    scripts/uv.sh run python fuzz/frames.py -atheris_runs=100000
"""

from __future__ import annotations

import struct
import zlib

import _harness
import atheris  # type: ignore[import-untyped]

with atheris.instrument_imports():
    from usenet_indexer.wire.frames import (
        FRAME_HEADER_SIZE,
        STREAM_HEADER,
        Frame,
        FrameDecoder,
        FrameError,
        FrameType,
        encode_end,
        encode_frame,
        encode_keepalive,
    )

MAX_PAYLOAD = 1 << 16  # small, so the fuzzer meets the cap too


def fix_crcs(stream: bytes) -> bytes:
    """The stream with each frame's CRC made right, walking the frames as the lengths say."""
    out = bytearray(stream)
    pos = len(STREAM_HEADER)
    while pos + FRAME_HEADER_SIZE <= len(out):
        length = struct.unpack_from(">I", out, pos + 17)[0]
        end = pos + FRAME_HEADER_SIZE + length
        crc = zlib.crc32(out[pos + FRAME_HEADER_SIZE : end], zlib.crc32(out[pos : pos + 21]))
        struct.pack_into(">I", out, pos + 21, crc)
        pos = end
    return bytes(out)


def decode(stream: bytes, piece: int) -> tuple[list[tuple[int, int, int, bytes]], str | None]:
    """The frames decoded (copied out of their views) and the FrameError's message, if one."""
    decoder = FrameDecoder(max_payload=MAX_PAYLOAD)
    frames: list[tuple[int, int, int, bytes]] = []

    def keep(batch: list[Frame]) -> None:
        frames.extend((int(f.type), f.first, f.last, bytes(f.data)) for f in batch)

    try:
        for at in range(0, len(stream), piece):
            keep(decoder.feed(stream[at : at + piece]))
        decoder.close()
    except FrameError as error:
        return frames, str(error)
    return frames, None


def encode(frames: list[tuple[int, int, int, bytes]]) -> bytes:
    out = [STREAM_HEADER]
    for kind, first, last, data in frames:
        if kind == FrameType.CHUNK:
            out.append(encode_frame(first, last, data))
        elif kind == FrameType.KEEPALIVE:
            out.append(encode_keepalive())
        else:
            out.append(encode_end())
    return b"".join(out)


def one(data: bytes) -> None:
    if not data:
        return
    options, stream = data[0], data[1:]
    if options & 1:
        stream = fix_crcs(stream)
    piece = 1 + (options >> 1) * 3  # 1 to 382 bytes at a time
    whole = decode(stream, max(len(stream), 1))
    pieces = decode(stream, piece)
    assert (whole[1] is None) == (pieces[1] is None), "acceptance depends on how the stream was split"
    # A feed() that raises returns none of the frames it completed before the fault: fed whole, a
    # refused stream gives fewer frames than fed in pieces, never other ones.
    assert pieces[0][: len(whole[0])] == whole[0], "frames depend on how the stream was split"
    if whole[1] is None:
        assert whole[0] == pieces[0], "frames depend on how the stream was split"
        assert whole[0] and whole[0][-1][0] == FrameType.END
        assert encode(whole[0]) == stream, "an accepted stream is not what its frames encode to"


def seeds() -> list[bytes]:
    chunk = encode_frame(1, 100, zlib.compress(b"1\tsubject\tposter\tdate\t<id>\t\t10\t1\r\n" * 3))
    streams = [
        STREAM_HEADER + chunk + encode_keepalive() + encode_frame(101, 200, b"") + encode_end(),
        STREAM_HEADER + encode_end(),
        STREAM_HEADER + chunk,  # no END: cut short
    ]
    return [bytes([options]) + s for s in streams for options in (0, 1, 7)]


if __name__ == "__main__":
    _harness.main(one, seeds())

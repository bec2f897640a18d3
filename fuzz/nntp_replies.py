"""What a news server sends, read by the sans-I/O NNTP client core (nntp/_connection.py, _readers.py).

Input: a mode byte, a piece-size byte, then the server's bytes. Modes: a plain session (the greeting
included, then GROUP, OVER, BODY and LIST OVERVIEW.FMT pipelined), OVER after XFEATURE COMPRESS GZIP
with and without TERMINATOR, XZVER, and a COMPRESS DEFLATE session given the bytes either deflated by
the harness (to reach the readers behind it) or as they stand. The core may refuse with an NNTPError
only, and must give the same events, and the same refusal, whatever the split of the bytes (read in small
pieces, what came before a fault may come out before the refusal; never other events).

    scripts/uv.sh run python fuzz/nntp_replies.py -atheris_runs=100000
"""

from __future__ import annotations

import zlib

import _harness
import atheris  # type: ignore[import-untyped]

with atheris.instrument_imports():
    from usenet_indexer.nntp import (
        NEED_DATA,
        CompressedReplyCorrupt,
        Data,
        NNTPConnection,
        NNTPError,
        commands,
        yenc,
    )

MODES = ("plain", "gzip-terminator", "gzip", "xzver", "deflate", "deflate-raw")


def session(mode: str) -> tuple[NNTPConnection, bool]:
    """A connection past its handshake for ``mode``, its commands sent; whether to deflate the input."""
    conn = NNTPConnection()
    if mode != "plain":
        conn.receive_data(b"200 ready\r\n")
        assert conn.next_event().code == 200  # type: ignore[union-attr]
    if mode.startswith("gzip"):
        conn.send(commands.xfeature_compress_gzip(terminator=mode == "gzip-terminator"))
        conn.receive_data(b"290 ok\r\n")
        conn.next_event()
    elif mode.startswith("deflate"):
        conn.send(commands.compress_deflate())
        conn.receive_data(b"206 ok\r\n")
        conn.next_event()
    if mode == "xzver":
        conn.send(commands.xzver(1, 100))
    else:
        conn.send(commands.group("alt.binaries.fuzz"))
        conn.send(commands.over(1, 100))
        conn.send(commands.body("<fuzz@example.test>"))
        conn.send(commands.list_overview_fmt())
    return conn, mode == "deflate"


def events(mode: str, data: bytes, piece: int) -> tuple[list[object], str | None]:
    """The events (Data merged: how a body is cut into pieces is not part of the contract; line
    counts checked, then dropped) and the class of the NNTPError that ended them, if one."""
    conn, deflate = session(mode)
    if deflate:
        deflater = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        data = deflater.compress(data) + deflater.flush(zlib.Z_SYNC_FLUSH)
    out: list[object] = []

    def drain() -> None:
        while (event := conn.next_event()) is not NEED_DATA:
            if isinstance(event, Data):
                # A piece's line count, where the reader gives one, is its LF bytes; then dropped.
                assert event.lines in (-1, event.data.count(b"\n")), f"{mode}: wrong line count"
                event = Data(event.data, event.compressed)
            if isinstance(event, Data) and out and isinstance(out[-1], Data):
                event = Data(out[-1].data + event.data, out[-1].compressed + event.compressed)
                out.pop()
            out.append(event)

    try:
        for at in range(0, len(data), piece):
            conn.receive_data(data[at : at + piece])
            drain()
        conn.receive_data(b"")
        drain()
    except CompressedReplyCorrupt:
        # Truncated is a kind of Corrupt (callers handle both alike: fetch again, plain); a reply
        # both cut short and damaged is called one or the other by which the split shows first.
        return out, "CompressedReplyCorrupt"
    except NNTPError as error:
        return out, type(error).__name__
    return out, None


def one(data: bytes) -> None:
    if len(data) < 2:
        return
    mode, piece, wire = MODES[data[0] % len(MODES)], 1 + data[1] * 16, data[2:]
    whole = events(mode, wire, max(len(wire), 1))
    pieces = events(mode, wire, piece)
    assert whole[1] == pieces[1], f"{mode}: the refusal depends on how the bytes were split"
    if whole[1] is None:
        assert whole[0] == pieces[0], f"{mode}: the events depend on how the bytes were split"
    else:
        # Read in small pieces, what came before a fault may come out before the refusal: data of
        # the reply refused part-way, and (a corrupt COMPRESS DEFLATE stream fails the whole read it
        # came in) whole replies. Fewer events when read at once, then, but never other ones.
        kept = [[e for e in run[0] if not isinstance(e, Data)] for run in (whole, pieces)]
        assert kept[1][: len(kept[0])] == kept[0], f"{mode}: the events depend on how the bytes were split"


def seeds() -> list[bytes]:
    overview = b"".join(
        b"%d\tsubject %d\tposter\tdate\t<%d@x>\t\t%d\t%d\r\n" % (i, i, i, i, i) for i in range(1, 9)
    )
    plain = (
        b"211 8 1 8 alt.binaries.fuzz\r\n224 overview\r\n" + overview + b".\r\n"
        b"222 0 <fuzz@example.test>\r\n..dot\r\nbody\r\n.\r\n"
        b"215 fmt\r\nSubject:\r\nFrom:\r\n.\r\n"
    )
    deflated = zlib.compressobj(9, zlib.DEFLATED, -15)
    stream = deflated.compress(overview) + deflated.flush()
    xzver = b"224 ok\r\n" + yenc.encode(stream, "xzver") + b".\r\n"
    gz = b"211 8 1 8 g\r\n224 ok [COMPRESS=GZIP]\r\n" + zlib.compress(overview)
    return [
        b"\x00\x00200 hi\r\n" + plain,
        b"\x01\x00" + gz + b".\r\n",
        b"\x02\x05" + gz,
        b"\x03\x01" + xzver,
        b"\x04\x00" + plain,
        b"\x05\x00" + zlib.compress(plain)[2:-4],  # raw deflate of a plain session
    ]


if __name__ == "__main__":
    _harness.main(one, seeds())

"""The sans-I/O core: any split of the byte stream gives the same events; garbage raises, never crashes."""

from __future__ import annotations

import contextlib
import dataclasses
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from usenet_indexer import accelerator
from usenet_indexer.nntp import (
    NEED_DATA,
    AccessDenied,
    ArticleNotFound,
    AuthRequired,
    CompressedReplyCorrupt,
    CompressedReplyTruncated,
    ConnectionClosed,
    Data,
    EncryptionRequired,
    EndOfData,
    NNTPConnection,
    NNTPConnectionLost,
    NNTPError,
    NNTPProtocolError,
    NoSuchArticle,
    NoSuchArticleNumber,
    NoSuchGroup,
    Response,
    ServiceDiscontinued,
    TooManyConnections,
    UnknownCommand,
    _readers,
    commands,
    error_for_reply,
    yenc,
)

OVERVIEW = b"".join(
    b"%d\tsubject %d\tposter\tdate\t<%d@x>\t\t%d\t%d\txref\r\n" % (i, i, i, i, i) for i in range(1, 300)
)


def run(conn: NNTPConnection, pieces: list[bytes], eof: bool = False) -> list[object]:
    events: list[object] = []
    for piece in [*pieces, None]:
        if piece is None:
            if not eof:
                pass
            else:
                conn.receive_data(b"")
        else:
            conn.receive_data(piece)
        while True:
            event = conn.next_event()
            if event is NEED_DATA:
                break
            events.append(event)
    return events


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    out, last = [], 0
    for point in points:
        out.append(data[last:point])
        last = point
    out.append(data[last:])
    return [p for p in out if p]


def normalise(events: list[object]) -> list[object]:
    """Merge consecutive Data events: how a body is split into pieces is not part of the contract.
    A piece's line count, where the reader gives one, must be its LF bytes (then it is dropped)."""
    merged: list[object] = []
    for event in events:
        if isinstance(event, Data):
            assert event.lines in (-1, event.data.count(b"\n")), event
            event = Data(event.data, event.compressed)
        if isinstance(event, Data) and merged and isinstance(merged[-1], Data):
            previous = merged.pop()
            assert isinstance(previous, Data)
            event = Data(previous.data + event.data, previous.compressed + event.compressed)
        merged.append(event)
    return merged


def stuffed(text: bytes) -> bytes:
    return (b"." + text if text.startswith(b".") else text).replace(b"\r\n.", b"\r\n..")


def plain_session() -> tuple[NNTPConnection, bytes]:
    conn = NNTPConnection()
    conn.send(commands.group("a.b"))
    conn.send(commands.over(1, 299))
    conn.send(commands.body("<x@y>"))
    conn.send(commands.group("nope"))
    body = b".starts with a dot\r\n..two dots\r\nmiddle . dot\r\n.\tdot tab\r\n"
    wire = (
        b"200 server ready\r\n211 299 1 299 a.b\r\n224 overview\r\n"
        + stuffed(OVERVIEW)
        + b".\r\n"
        + b"222 0 <x@y>\r\n"
        + stuffed(body)
        + b".\r\n"
        + b"411 no such group\r\n"
    )
    return conn, wire


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(min_value=0, max_value=100_000), max_size=40))
def test_any_split_of_a_plain_session_gives_the_same_events(cuts: list[int]) -> None:
    conn, wire = plain_session()
    expected = normalise(run(conn, [wire]))
    conn2, _ = plain_session()
    assert normalise(run(conn2, split(wire, cuts))) == expected


# Lines built from the bytes that matter to the dot reader (dots, CR) and two that do not (digit, tab).
_ONLY_DOTS = bytes([(0x2E, 0x2E, 0x31, 0x09, 0x0D)[i % 5] for i in range(256)])
_BODY_LINES = st.lists(
    st.tuples(
        st.binary(max_size=12).map(lambda b: b.translate(_ONLY_DOTS)), st.sampled_from([b"\r\n", b"\n"])
    ),
    max_size=30,
)


@pytest.fixture(params=["native", "pure"])
def line_scan_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The dot reader on the C accelerator's line_scan and on its Python twin."""
    if request.param == "native":
        if accelerator.speedups is None:
            pytest.skip("the C extension is not built")
        monkeypatch.setattr(_readers, "line_scan", accelerator.speedups.line_scan)
        monkeypatch.setattr(_readers, "scan_block", accelerator.speedups.line_scan)
    else:
        monkeypatch.setattr(_readers, "line_scan", _readers._line_scan)
        monkeypatch.setattr(_readers, "scan_block", _readers._scan_without_count)
    return str(request.param)


@settings(max_examples=500)
@given(
    st.binary(max_size=200).map(lambda b: b.translate(bytes([(0x0A, 0x2E, 0x41)[i % 3] for i in range(256)])))
)
def test_line_scan_native_and_pure_agree(data: bytes) -> None:
    if accelerator.speedups is None:
        pytest.skip("the C extension is not built")
    assert accelerator.speedups.line_scan(data) == _readers._line_scan(data)
    assert accelerator.speedups.line_scan(bytearray(data)) == _readers._line_scan(data)


@pytest.mark.fuzz
@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_BODY_LINES, st.lists(st.integers(min_value=0, max_value=2_000), max_size=12))
def test_dot_stuffed_bodies_any_split(
    line_scan_path: str, lines: list[tuple[bytes, bytes]], cuts: list[int]
) -> None:
    # Whatever the lines (dot first, dots only, ".\r" without LF, bare LF ends), the body comes back
    # exactly as it was before stuffing, and the reply after it is read as a status line.
    body = b"".join(text + end for text, end in lines)
    wire_body = b"".join((b"." if text.startswith(b".") else b"") + text + end for text, end in lines)
    conn = NNTPConnection()
    conn.send(commands.body("<x@y>"))
    conn.send(commands.group("a.b"))
    wire = b"200 hi\r\n222 0 <x@y>\r\n" + wire_body + b".\r\n211 1 1 1 a.b\r\n"
    events = normalise(run(conn, split(wire, cuts)))
    expected_body = [Data(body)] if body else []
    assert events[2:] == [
        *expected_body,
        EndOfData(),
        Response(211, "1 1 1 a.b", False, commands.group("a.b")),
    ]


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_BODY_LINES, st.lists(st.integers(min_value=0, max_value=2_000), max_size=12))
def test_gathered_bodies_any_split(
    line_scan_path: str, lines: list[tuple[bytes, bytes]], cuts: list[int]
) -> None:
    # A body gathered whole (over_chunk) is the same body, in one Data with its LF count, and the
    # reply after it is read as a status line, whatever the split.
    body = b"".join(text + end for text, end in lines)
    wire_body = b"".join((b"." if text.startswith(b".") else b"") + text + end for text, end in lines)
    conn = NNTPConnection()
    conn.send(dataclasses.replace(commands.over(1, 9), whole=True))
    conn.send(commands.group("a.b"))
    wire = b"200 hi\r\n224 overview\r\n" + wire_body + b".\r\n211 1 1 1 a.b\r\n"
    events = run(conn, split(wire, cuts))
    expected_body = [Data(body, lines=body.count(b"\n"))] if body else []
    assert events[2:] == [
        *expected_body,
        EndOfData(),
        Response(211, "1 1 1 a.b", False, commands.group("a.b")),
    ]


def test_gathered_body_with_a_line_longer_than_a_piece() -> None:
    long = b"1\t" + b"x" * (_readers.PIECE + 1000) + b"\r\n"
    body = b"2\tshort\r\n" + long + b".stuffed\r\n" + long + b"3\tend\r\n"
    wire_body = body.replace(b"\n.", b"\n..")
    wire = b"200 hi\r\n224 overview\r\n" + wire_body + b".\r\n"
    for cuts in ([], [40, 5000, 300_000, 300_001, len(wire) - 4], list(range(0, len(wire), 65536))):
        conn = NNTPConnection()
        conn.send(dataclasses.replace(commands.over(1, 3), whole=True))
        events = run(conn, split(wire, cuts))
        assert events[2:] == [Data(body, lines=5), EndOfData()], cuts
        gathered = events[2]
        assert isinstance(gathered, Data)
        assert isinstance(gathered.data, bytearray)  # handed over as gathered, not copied into bytes


def test_plain_session_events() -> None:
    conn, wire = plain_session()
    events = normalise(run(conn, [wire]))
    assert [type(e).__name__ for e in events] == [
        "Response",
        "Response",
        "Response",
        "Data",
        "EndOfData",
        "Response",
        "Data",
        "EndOfData",
        "Response",
    ]
    assert events[3] == Data(OVERVIEW)
    assert events[6] == Data(b".starts with a dot\r\n..two dots\r\nmiddle . dot\r\n.\tdot tab\r\n")
    last = events[-1]
    assert isinstance(last, Response)
    with pytest.raises(NoSuchGroup):
        last.raise_for_error()


def test_plain_pieces_carry_their_line_count(line_scan_path: str) -> None:
    # The C scan counts a block's lines while it looks for dot lines; the client uses that count
    # instead of its own pass. The pure path leaves it to the client (-1).
    # Whole in one read (the terminator's block) and cut in the middle of the overview.
    for cuts in ([], [len(OVERVIEW) // 2]):
        conn, wire = plain_session()
        pieces = [e for e in run(conn, split(wire, cuts)) if isinstance(e, Data)]
        overview = pieces[: len(pieces) - 1]
        assert b"".join(p.data for p in overview) == OVERVIEW
        for piece in overview:
            assert piece.lines == (piece.data.count(b"\n") if line_scan_path == "native" else -1)


def test_one_byte_at_a_time() -> None:
    conn, wire = plain_session()
    expected = normalise(run(conn, [wire]))
    conn2, _ = plain_session()
    assert normalise(run(conn2, [wire[i : i + 1] for i in range(len(wire))])) == expected


def test_empty_body_and_lone_dot_lines() -> None:
    conn = NNTPConnection()
    conn.send(commands.over(5, 6))
    conn.send(commands.over(7, 8))
    events = normalise(run(conn, [b"200 hi\r\n224 none\r\n.\r\n224 one\r\n..\r\n.\r\n"]))
    assert events[1:] == [
        Response(224, "none", True, commands.over(5, 6)),
        EndOfData(),
        Response(224, "one", True, commands.over(7, 8)),
        Data(b".\r\n"),
        EndOfData(),
    ]


def test_long_line_streams_in_pieces() -> None:
    line = b"1\t" + b"s" * 3_000_000 + b"\r\n"
    conn = NNTPConnection()
    conn.send(commands.over(1, 1))
    conn.receive_data(b"200 hi\r\n224 ok\r\n")
    assert isinstance(conn.next_event(), Response)
    assert isinstance(conn.next_event(), Response)
    pieces = []
    for start in range(0, len(line), 100_000):
        conn.receive_data(line[start : start + 100_000])
        while (event := conn.next_event()) is not NEED_DATA:
            assert isinstance(event, Data)
            pieces.append(event.data)
    # Delivered before the line ended: never held whole.
    assert len(pieces) > 1
    conn.receive_data(b".\r\n")
    assert isinstance(conn.next_event(), EndOfData)
    assert b"".join(pieces) == line


def test_compress_deflate_both_directions() -> None:
    conn = NNTPConnection()
    run(conn, [b"200 hi\r\n"])
    conn.send(commands.compress_deflate())
    deflater = zlib.compressobj(6, zlib.DEFLATED, -15)
    # The 206 line is plain; everything after it is compressed, even in the same read.
    first = deflater.compress(b"211 3 1 3 a.b\r\n") + deflater.flush(zlib.Z_SYNC_FLUSH)
    assert run(conn, [b"206 compression active\r\n"]) == [
        Response(206, "compression active", False, commands.compress_deflate())
    ]
    sent = conn.send(commands.group("a.b"))
    assert zlib.decompressobj(-15).decompress(sent) == b"GROUP a.b\r\n"
    assert conn.compress_deflate_active
    events = run(conn, [first])
    assert events == [Response(211, "3 1 3 a.b", False, commands.group("a.b"))]


def test_compress_deflate_response_and_data_in_one_read() -> None:
    conn = NNTPConnection()
    run(conn, [b"200 hi\r\n"])
    conn.send(commands.compress_deflate())
    conn.receive_data(b"206 ok\r\n")
    assert isinstance(conn.next_event(), Response)
    conn.send(commands.over(1, 299))
    deflater = zlib.compressobj(6, zlib.DEFLATED, -15)
    wire = deflater.compress(b"224 ok\r\n" + OVERVIEW + b".\r\n") + deflater.flush(zlib.Z_SYNC_FLUSH)
    events = normalise(run(conn, split(wire, [7, 50, 51, 52])))
    assert events[1:] == [Data(OVERVIEW), EndOfData()]


@pytest.mark.parametrize("piece", [1, 7, 10_000])
def test_a_deflate_stream_that_ends_gives_its_replies_then_fails_whatever_the_split(piece: int) -> None:
    """Found by fuzz/nntp_replies.py: when the stream's end came in the same read as the replies
    before it, those replies were lost with the error; read in small pieces, they came out first."""
    conn = NNTPConnection()
    run(conn, [b"200 hi\r\n"])
    conn.send(commands.compress_deflate())
    run(conn, [b"206 ok\r\n"])
    conn.send(commands.group("a.b"))
    conn.send(commands.over(1, 299))
    ended = zlib.compressobj(6, zlib.DEFLATED, -15)
    wire = ended.compress(b"211 3 1 3 a.b\r\n224 ok\r\n" + OVERVIEW + b".\r\n") + ended.flush()
    events: list[object] = []

    def read_all() -> None:
        for at in range(0, len(wire), piece):
            conn.receive_data(wire[at : at + piece])
            while (event := conn.next_event()) is not NEED_DATA:
                events.append(event)

    with pytest.raises(NNTPProtocolError, match="ended its COMPRESS DEFLATE stream"):
        read_all()
    assert [type(e) for e in normalise(events)] == [Response, Response, Data, EndOfData]
    assert normalise(events)[2] == Data(OVERVIEW)


def gzip_session(
    terminator: bool, data_inside_terminator: bool = False
) -> tuple[NNTPConnection, bytes, bytes]:
    conn = NNTPConnection()
    run(conn, [b"200 hi\r\n"])
    conn.send(commands.xfeature_compress_gzip(terminator=terminator))
    run(conn, [b"290 feature enabled\r\n"])
    conn.send(commands.over(1, 299))
    conn.send(commands.group("a.b"))
    inner = stuffed(OVERVIEW) + (b".\r\n" if data_inside_terminator else b"")
    stream = zlib.compress(inner)
    wire = (
        b"224 ok [COMPRESS=GZIP]\r\n"
        + stream
        + (b".\r\n" if terminator and not data_inside_terminator else b"")
    )
    return conn, wire + b"211 3 1 3 a.b\r\n", stream


@settings(max_examples=100)
@given(st.booleans(), st.booleans(), st.lists(st.integers(min_value=0, max_value=50_000), max_size=20))
def test_gzip_bodies_any_split(terminator: bool, inside: bool, cuts: list[int]) -> None:
    conn, wire, stream = gzip_session(terminator, inside)
    events = normalise(run(conn, split(wire, cuts)))
    assert events[1] == Data(OVERVIEW, stream)
    assert events[2] == EndOfData("zlib")
    assert isinstance(events[3], Response)
    assert events[3].code == 211


def test_gzip_stray_terminator_after_a_no_terminator_stream_is_skipped() -> None:
    conn, wire, _ = gzip_session(False)
    head, _, tail = wire.partition(b"211 ")
    events = normalise(run(conn, [head + b".\r\n211 " + tail]))
    assert isinstance(events[-1], Response)
    assert events[-1].code == 211


def test_gzip_plain_reply_when_the_server_does_not_compress() -> None:
    conn = NNTPConnection()
    run(conn, [b"200 hi\r\n"])
    conn.send(commands.xfeature_compress_gzip(terminator=True))
    run(conn, [b"290 ok\r\n"])
    conn.send(commands.over(1, 299))
    events = normalise(run(conn, [b"224 ok\r\n" + OVERVIEW + b".\r\n"]))
    assert events[1:] == [Data(OVERVIEW), EndOfData()]


def test_gzip_cut_short_is_suspected_then_declared() -> None:
    conn, _wire, stream = gzip_session(True)
    conn.receive_data(b"224 ok [COMPRESS=GZIP]\r\n" + stream[: len(stream) // 2] + b".\r\n")
    while conn.next_event() is not NEED_DATA:
        pass
    assert conn.suspect_cut_short
    error = conn.declare_cut_short()
    assert isinstance(error, CompressedReplyTruncated)
    with pytest.raises(CompressedReplyTruncated):
        conn.next_event()


def test_gzip_garbage_body_is_corrupt() -> None:
    conn, _, _ = gzip_session(True)
    conn.receive_data(b"224 ok [COMPRESS=GZIP]\r\nx\x9cTHIS IS NOT DEFLATE AT ALL\r\n.\r\n")
    with pytest.raises(CompressedReplyCorrupt):
        run(conn, [])


def xzver_wire(stream: bytes) -> bytes:
    return b"224 ok\r\n" + stuffed(yenc.encode(stream, "xzver")) + b".\r\n"


@settings(max_examples=100)
@given(st.lists(st.integers(min_value=0, max_value=50_000), max_size=20))
def test_xzver_any_split(cuts: list[int]) -> None:
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
    stream = deflater.compress(OVERVIEW) + deflater.flush()
    conn = NNTPConnection()
    conn.send(commands.xzver(1, 299))
    events = normalise(run(conn, split(b"200 hi\r\n" + xzver_wire(stream), cuts)))
    assert events[2] == Data(OVERVIEW, stream)
    assert events[3] == EndOfData("deflate")


def test_xzver_truncated_and_crc_failures() -> None:
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
    stream = deflater.compress(OVERVIEW) + deflater.flush()
    conn = NNTPConnection()
    conn.send(commands.xzver(1, 299))
    with pytest.raises(CompressedReplyTruncated):
        run(conn, [b"200 hi\r\n" + xzver_wire(stream[:-20])])
    bad_crc = xzver_wire(stream).replace(b"crc32=", b"crc32=0")[:-3] + b".\r\n"
    wire = bad_crc.rsplit(b"crc32=", 1)[0] + b"crc32=deadbeef\r\n.\r\n"
    conn = NNTPConnection()
    conn.send(commands.xzver(1, 299))
    with pytest.raises(CompressedReplyCorrupt, match="crc32"):
        run(conn, [b"200 hi\r\n" + wire])


def test_connection_lost_mid_reply_and_clean_close() -> None:
    conn = NNTPConnection()
    conn.send(commands.over(1, 299))
    with pytest.raises(NNTPConnectionLost, match="middle of the reply"):
        run(conn, [b"200 hi\r\n224 ok\r\n1\tpartial"], eof=True)
    conn = NNTPConnection()
    conn.send(commands.quit())
    events = run(conn, [b"200 hi\r\n205 bye\r\n"], eof=True)
    assert isinstance(events[-1], ConnectionClosed)


def test_state_changing_commands_cannot_be_pipelined() -> None:
    conn = NNTPConnection()
    with pytest.raises(ValueError, match="no reply is outstanding"):
        conn.send(commands.starttls())
    run(conn, [b"200 hi\r\n"])
    conn.send(commands.compress_deflate())
    with pytest.raises(ValueError, match="pipeline"):
        conn.send(commands.group("a"))


def test_starttls_with_bytes_after_382_is_refused() -> None:
    conn = NNTPConnection()
    run(conn, [b"200 hi\r\n"])
    conn.send(commands.starttls())
    with pytest.raises(NNTPProtocolError, match="before the TLS handshake"):
        run(conn, [b"382 go ahead\r\n\x16\x03"])


@settings(max_examples=300)
@given(st.binary(max_size=3000), st.sampled_from(["plain", "gzip", "xzver", "deflate"]))
def test_garbage_never_crashes(garbage: bytes, mode: str) -> None:
    conn = NNTPConnection()
    try:
        run(conn, [b"200 hi\r\n"])
        if mode == "gzip":
            conn.send(commands.xfeature_compress_gzip(terminator=True))
            run(conn, [b"290 ok\r\n"])
        elif mode == "deflate":
            conn.send(commands.compress_deflate())
            run(conn, [b"206 ok\r\n"])
        conn.send(commands.xzver(1, 2) if mode == "xzver" else commands.over(1, 2))
        run(conn, [b"224 ok\r\n" + garbage], eof=True)
        run(conn, [], eof=False)
    except NNTPError:
        pass  # the only acceptable failure: a protocol-level error with a message


@settings(max_examples=200)
@given(st.binary(max_size=600))
def test_garbage_status_lines_raise_protocol_errors(garbage: bytes) -> None:
    conn = NNTPConnection()
    with contextlib.suppress(NNTPError):
        run(conn, [garbage + b"\r\n"], eof=True)


def test_status_line_without_end_is_bounded() -> None:
    conn = NNTPConnection()
    with pytest.raises(NNTPProtocolError, match="no line end"):
        run(conn, [b"200 " + b"x" * 10_000])


@pytest.mark.parametrize(
    ("code", "text", "cls"),
    [
        (400, "service discontinued", ServiceDiscontinued),
        (400, "too many connections", TooManyConnections),
        (411, "no such group", NoSuchGroup),
        (423, "no article with that number", NoSuchArticleNumber),
        (430, "no such article", NoSuchArticle),
        (480, "authentication required", AuthRequired),
        (481, "Too many connections for your user", TooManyConnections),
        (483, "encryption required", EncryptionRequired),
        (500, "What?", UnknownCommand),
        (502, "access denied", AccessDenied),
        (502, "Too many connections", TooManyConnections),
    ],
)
def test_error_codes_map_to_classes(code: int, text: str, cls: type[NNTPError]) -> None:
    error = error_for_reply(code, text, "GROUP x")
    assert type(error) is cls
    assert str(code) in str(error)
    assert "GROUP x" in str(error)
    assert issubclass(NoSuchArticle, ArticleNotFound)
    assert issubclass(NoSuchArticleNumber, ArticleNotFound)


def test_passwords_never_appear_in_errors() -> None:
    command = commands.authinfo_pass("hunter2")
    conn = NNTPConnection()
    conn.send(command)
    events = run(conn, [b"200 hi\r\n481 rejected\r\n"])
    response = events[-1]
    assert isinstance(response, Response)
    with pytest.raises(NNTPError) as caught:
        response.raise_for_error()
    assert "hunter2" not in str(caught.value)


@pytest.mark.parametrize("bad", ["a b", "a\r\nQUIT", "", "x\x00"])
def test_arguments_cannot_inject_commands(bad: str) -> None:
    with pytest.raises(ValueError, match=r"NNTP arguments|empty"):
        commands.group(bad)


@pytest.mark.parametrize("wbits", [-15, 15, 31, 47])
def test_the_core_inflater_reads_what_zlib_writes_and_refuses_garbage(wbits: int) -> None:
    # ISA-L inflates for the core when installed; it must agree with zlib on every format the readers
    # ask for, keep what follows the stream, and raise one of ERRORS (not zlib.error) on garbage.
    from usenet_indexer import compression as _inflate

    compressor = zlib.compressobj(6, zlib.DEFLATED, 31 if wbits == 47 else wbits)
    stream = compressor.compress(OVERVIEW) + compressor.flush()
    inflater = _inflate.decompressobj(wbits)
    out = inflater.decompress(stream[:100], 50)
    rest = inflater.unconsumed_tail + stream[100:] + b"NEXT"
    while not inflater.eof:
        out += inflater.decompress(rest, 1000)
        rest = inflater.unconsumed_tail
    assert out == OVERVIEW
    assert inflater.unused_data == b"NEXT"
    with pytest.raises(_inflate.ERRORS):
        _inflate.decompressobj(wbits).decompress(b"\xff\xfe garbage, not a deflate stream")

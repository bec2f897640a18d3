"""yEnc: round trips for any bytes and line length, escaping rules, and CRC/size failures."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from usenet_indexer.nntp import yenc


@given(st.binary(max_size=5000), st.integers(min_value=2, max_value=300))
def test_round_trip_single_part(data: bytes, line_length: int) -> None:
    encoded = yenc.encode(data, "file.bin", line_length=line_length)
    decoded = yenc.decode(encoded)
    assert decoded.data == data
    assert decoded.crc32 == zlib.crc32(data)
    assert decoded.name == "file.bin"
    assert decoded.size == len(data)


@given(st.binary(min_size=1, max_size=3000), st.integers(min_value=1, max_value=9))
def test_round_trip_part(data: bytes, part: int) -> None:
    encoded = yenc.encode(
        data, "big.rar", part=part, total=9, begin=1000 * part + 1, file_size=9000 + len(data)
    )
    decoded = yenc.decode(encoded)
    assert (decoded.data, decoded.part, decoded.total, decoded.begin) == (data, part, 9, 1000 * part + 1)
    assert decoded.end == 1000 * part + len(data)


@given(st.binary(max_size=3000), st.lists(st.integers(min_value=0, max_value=10_000), max_size=10))
def test_stream_decoder_any_split(data: bytes, cuts: list[int]) -> None:
    encoded = yenc.encode(data, "f")
    decoder = yenc.YEncStreamDecoder()
    out, last = [], 0
    for cut in sorted({c % (len(encoded) + 1) for c in cuts}):
        out.append(decoder.feed(encoded[last:cut]))
        last = cut
    out.append(decoder.feed(encoded[last:]))
    out.append(decoder.finish())
    assert b"".join(out) == data


@given(st.lists(st.integers(min_value=0, max_value=60), max_size=6))
def test_an_escape_at_a_line_end_decodes_alike_whatever_the_split(cuts: list[int]) -> None:
    """Found by fuzz/nntp_replies.py: decode_data pairs a line's last "=" with the next line's first
    byte when both lines come in one read, but the stream decoder refused the "=" when the read ended
    right after its line."""
    data = yenc.encode_data(b"abcdef", 128)[0]
    body = b"=ybegin line=128 size=7 name=f\r\n" + data[:3] + b"=\r\n}" + data[3:] + b"\r\n=yend size=7\r\n"
    results = []
    for pieces in ([body], split_at(body, cuts), split_at(body, [body.index(b"=\r\n}") + 3])):
        decoder = yenc.YEncStreamDecoder()
        got = b"".join(decoder.feed(piece) for piece in pieces)
        results.append(got + decoder.finish())
    assert results[0] == results[1] == results[2] == yenc.decode_data(data[:3] + b"=}" + data[3:])


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@given(st.binary(max_size=2000), st.integers(min_value=2, max_value=200))
def test_encoded_lines_are_safe_for_nntp(data: bytes, line_length: int) -> None:
    for line in yenc.encode_data(data, line_length):
        assert b"\r" not in line
        assert b"\n" not in line
        assert b"\x00" not in line
        assert not line.startswith((b".", b" ", b"\t"))
        assert not line.endswith((b" ", b"\t")) or line[-2:-1] == b"="
        assert len(line) <= line_length + 2


def test_crc_mismatch_is_reported() -> None:
    encoded = yenc.encode(b"hello world", "f")
    broken = encoded.replace(b"hello"[0:1].translate(bytes((i + 42) % 256 for i in range(256))), b"Z", 1)
    with pytest.raises(yenc.YEncError):
        yenc.decode(broken)
    good_crc = b"crc32=%08x" % zlib.crc32(b"hello world")
    with pytest.raises(yenc.YEncCRCError, match="crc32 mismatch"):
        yenc.decode(encoded.replace(good_crc, b"crc32=00000000"))


def test_part_crc_mismatch_and_truncation() -> None:
    data = bytes(range(256)) * 10
    encoded = yenc.encode(data, "f", part=1, total=2, begin=1, file_size=5120)
    with pytest.raises(yenc.YEncCRCError):
        yenc.decode(encoded.replace(b"pcrc32=", b"pcrc32=1"))
    cut = encoded[: len(encoded) // 2]
    with pytest.raises(yenc.YEncError, match="cut short"):
        yenc.decode(cut)
    lines = encoded.split(b"\r\n")
    missing_line = b"\r\n".join(lines[:3] + lines[4:])
    with pytest.raises(yenc.YEncError, match="size="):
        yenc.decode(missing_line)


def test_not_yenc() -> None:
    with pytest.raises(yenc.YEncError, match="no =ybegin"):
        yenc.decode(b"just some text\r\n")


def test_text_before_the_header_is_skipped() -> None:
    assert yenc.decode(b"preamble\r\n" + yenc.encode(b"data", "f")).data == b"data"


def test_any_byte_may_be_escaped_even_to_an_equals_sign() -> None:
    # yEnc lets encoders escape any byte; escaping the byte that encodes to 0xFD gives "==".
    raw = bytes([(0xFD - 42) % 256, 65])
    text = b"=" + bytes([(0xFD + 64) % 256]) + bytes([(65 + 42) % 256])
    assert text.startswith(b"==")
    assert yenc.decode_data(text) == raw
    with pytest.raises(yenc.YEncError, match="ends with an escape"):
        yenc.decode_data(b"abc=")

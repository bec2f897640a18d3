"""The chunk stream's frames: the wire layout, round trips under any split, and every refusal."""

from __future__ import annotations

import contextlib
import itertools
import struct
import zlib
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from usenet_indexer.wire.frames import (
    DEFAULT_MAX_PAYLOAD,
    FRAME_HEADER_SIZE,
    MAGIC,
    STREAM_HEADER,
    VERSION,
    BytesLike,
    Frame,
    FrameDecoder,
    FrameError,
    FrameType,
    encode_end,
    encode_frame,
    encode_frame_parts,
    encode_keepalive,
)

U64 = 2**64 - 1

# A frame as the tests describe it: ("chunk", first, last, data) or ("keepalive",).
Spec = tuple[str, int, int, bytes]


def encode(specs: list[Spec], *, end: bool = True) -> bytes:
    out = [STREAM_HEADER]
    for kind, first, last, data in specs:
        out.append(encode_frame(first, last, data) if kind == "chunk" else encode_keepalive())
    if end:
        out.append(encode_end())
    return b"".join(out)


def as_specs(frames: list[Frame]) -> list[Spec]:
    return [
        ("chunk" if f.type is FrameType.CHUNK else f.type.name.lower(), f.first, f.last, bytes(f.data))
        for f in frames
    ]


def decode(
    stream: bytes,
    cuts: Sequence[int] = (),
    kind: type[BytesLike] = bytes,
    *,
    max_payload: int = DEFAULT_MAX_PAYLOAD,
    verify_checksum: bool = True,
) -> list[Frame]:
    """Decode ``stream`` fed in the pieces between ``cuts``, each piece as a ``kind`` object."""
    decoder = FrameDecoder(max_payload=max_payload, verify_checksum=verify_checksum)
    frames: list[Frame] = []
    points = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    for a, b in itertools.pairwise(points):
        piece: BytesLike = stream[a:b]
        if kind is bytearray:
            piece = bytearray(piece)
        elif kind is memoryview:
            piece = memoryview(bytearray(piece))
        frames += decoder.feed(piece)
    decoder.close()
    return frames


def error_of(stream: bytes, *, max_payload: int = DEFAULT_MAX_PAYLOAD) -> str:
    with pytest.raises(FrameError) as raised:
        decode(stream, max_payload=max_payload)
    return str(raised.value)


chunk_specs = st.builds(
    lambda a, b, data: ("chunk", min(a, b), max(a, b), data),
    st.integers(0, U64),
    st.integers(0, U64),
    st.binary(max_size=300),
)
keepalive_specs = st.just(("keepalive", 0, 0, b""))
frame_lists = st.lists(st.one_of(chunk_specs, keepalive_specs), max_size=12)


# -- the wire layout is the contract: a change here needs a version bump -------------------------


def test_stream_header_is_magic_then_version() -> None:
    assert STREAM_HEADER == b"UIXF\x01"
    assert (MAGIC, VERSION) == (b"UIXF", 1)


def test_chunk_frame_layout_matches_the_documented_format() -> None:
    data = b"compressed overview bytes"
    frame = encode_frame(1_000_000, 1_009_999, data)
    assert len(frame) == FRAME_HEADER_SIZE + len(data) == 25 + len(data)
    frame_type, first, last, length, crc = struct.unpack(">BQQII", frame[:25])
    assert (frame_type, first, last, length) == (1, 1_000_000, 1_009_999, len(data))
    assert crc == zlib.crc32(frame[:21] + data)
    assert frame[25:] == data


def test_keepalive_and_end_frames_are_empty_frames_of_their_type() -> None:
    for frame, frame_type in ((encode_keepalive(), 2), (encode_end(), 3)):
        header = bytes([frame_type]) + bytes(20)
        assert frame == header + zlib.crc32(header).to_bytes(4, "big")


def test_encode_frame_parts_does_not_copy_the_payload() -> None:
    data = bytearray(b"x" * 1000)
    header, payload = encode_frame_parts(1, 2, data)
    assert payload.obj is data
    assert header + payload == encode_frame(1, 2, bytes(data))


@pytest.mark.parametrize(("first", "last"), [(5, 4), (-1, 3), (0, 2**64), (2**64, 2**64)])
def test_encoder_refuses_spans_the_format_cannot_carry(first: int, last: int) -> None:
    with pytest.raises(FrameError, match="chunk span"):
        encode_frame(first, last, b"data")


# -- round trips -------------------------------------------------------------------------------


@settings(max_examples=300)
@given(
    specs=frame_lists,
    cuts=st.lists(st.integers(0, 10_000), max_size=20),
    kind=st.sampled_from([bytes, bytearray, memoryview]),
)
def test_any_frames_split_anywhere_decode_to_the_same_frames(
    specs: list[Spec], cuts: list[int], kind: type[BytesLike]
) -> None:
    frames = decode(encode(specs), cuts, kind)
    assert as_specs(frames) == [*specs, ("end", 0, 0, b"")]


def test_byte_by_byte_feeding_decodes_every_frame() -> None:
    specs: list[Spec] = [("chunk", 1, 10, b"a" * 40), ("keepalive", 0, 0, b""), ("chunk", 11, 20, b"")]
    stream = encode(specs)
    frames = decode(stream, list(range(len(stream))))
    assert as_specs(frames) == [*specs, ("end", 0, 0, b"")]


def test_a_frame_fed_whole_as_bytes_is_a_view_of_those_bytes() -> None:
    stream = encode([("chunk", 1, 2, b"payload")])
    decoder = FrameDecoder()
    (chunk, _end) = decoder.feed(stream)
    assert chunk.data.obj is stream
    assert chunk.data.readonly


def test_a_payload_never_aliases_a_buffer_the_caller_may_reuse() -> None:
    buffer = bytearray(encode([("chunk", 1, 2, b"payload")]))
    decoder = FrameDecoder()
    (chunk, _end) = decoder.feed(buffer)
    buffer[:] = bytes(len(buffer))
    assert bytes(chunk.data) == b"payload"


def test_a_large_frame_fed_in_small_pieces_is_assembled_intact() -> None:
    data = bytes(range(256)) * 40_000  # 10 MB
    stream = encode([("chunk", 1, 50_000, data)])
    decoder = FrameDecoder()
    frames = []
    for at in range(0, len(stream), 65_536):
        frames += decoder.feed(stream[at : at + 65_536])
    decoder.close()
    assert [f.type for f in frames] == [FrameType.CHUNK, FrameType.END]
    assert frames[0].data == data


def test_counters_report_frames_and_chunks() -> None:
    decoder = FrameDecoder()
    decoder.feed(encode([("chunk", 1, 2, b"a"), ("keepalive", 0, 0, b""), ("chunk", 3, 4, b"b")]))
    assert (decoder.frames, decoder.chunks, decoder.ended) == (4, 2, True)


# -- refusals ----------------------------------------------------------------------------------


def test_bad_magic_is_refused_at_once_with_a_hint() -> None:
    decoder = FrameDecoder()
    with pytest.raises(FrameError, match=r"not a frame stream.*<htm"):
        decoder.feed(b"<html><body>502 Bad Gateway")


def test_bad_magic_is_refused_even_before_the_whole_header_arrived() -> None:
    with pytest.raises(FrameError, match="not a frame stream"):
        FrameDecoder().feed(b"UX")


def test_unknown_version_is_refused() -> None:
    assert "version 2 is not supported" in error_of(MAGIC + b"\x02" + encode_end())


def test_unknown_frame_type_is_refused() -> None:
    header = struct.pack(">BQQI", 9, 0, 0, 0)
    stream = STREAM_HEADER + header + zlib.crc32(header).to_bytes(4, "big")
    assert "unknown frame type 9" in error_of(stream)


def test_from_after_to_is_refused() -> None:
    header = struct.pack(">BQQI", 1, 10, 9, 0)
    stream = STREAM_HEADER + header + zlib.crc32(header).to_bytes(4, "big")
    assert "from 10 > to 9" in error_of(stream)


def test_keepalive_with_a_payload_is_refused() -> None:
    header = struct.pack(">BQQI", 2, 0, 0, 3)
    stream = STREAM_HEADER + header + zlib.crc32(header + b"abc").to_bytes(4, "big") + b"abc"
    assert "KEEPALIVE frame with from/to/length 0/0/3" in error_of(stream)


def test_oversize_payload_is_refused_as_soon_as_its_header_arrives() -> None:
    frame = encode_frame(1, 2, b"x" * 1001)
    decoder = FrameDecoder(max_payload=1000)
    decoder.feed(STREAM_HEADER)
    with pytest.raises(FrameError, match="payload of 1001 bytes exceeds the limit of 1000"):
        decoder.feed(frame[:FRAME_HEADER_SIZE])


def test_payload_at_the_limit_is_accepted() -> None:
    assert decode(encode([("chunk", 1, 2, b"x" * 1000)]), max_payload=1000)[0].data.nbytes == 1000


def test_damaged_payload_fails_its_checksum() -> None:
    stream = bytearray(encode([("chunk", 7, 8, b"some payload")]))
    stream[len(STREAM_HEADER) + FRAME_HEADER_SIZE + 2] ^= 0x01
    message = error_of(bytes(stream))
    assert "frame 1 (chunk 7–8, 12 bytes): checksum" in message
    assert "damaged in transit" in message


def test_damaged_span_fails_the_checksum_too() -> None:
    stream = bytearray(encode([("chunk", 7, 8, b"p")]))
    stream[len(STREAM_HEADER) + 16] ^= 0x10  # the low byte of `last`
    assert "checksum" in error_of(bytes(stream))


def test_checksum_can_be_skipped_for_measurement() -> None:
    stream = bytearray(encode([("chunk", 7, 8, b"some payload")]))
    stream[-FRAME_HEADER_SIZE - 1] ^= 0x01
    assert bytes(decode(bytes(stream), verify_checksum=False)[0].data) == b"some payloae"


@pytest.mark.parametrize(
    ("cut", "message"),
    [
        (0, "the stream is empty"),
        (3, "inside its 5-byte header"),
        (5 + 10, "inside the header of frame 1 (10 of 25 bytes"),
        (5 + 25 + 4, "inside frame 1 (chunk 1–2): 4 of 9 payload bytes"),
        (5 + 25 + 9, "after 1 frames (1 chunks) without its END frame"),
    ],
)
def test_truncated_streams_are_refused_at_close(cut: int, message: str) -> None:
    stream = encode([("chunk", 1, 2, b"123456789")])
    assert message in error_of(stream[:cut])


def test_bytes_after_the_end_frame_are_refused() -> None:
    stream = encode([]) + encode_keepalive()
    assert "25 bytes after the END frame" in error_of(stream)


def test_a_failed_decoder_keeps_refusing() -> None:
    decoder = FrameDecoder()
    with pytest.raises(FrameError) as first:
        decoder.feed(b"nope!")
    with pytest.raises(FrameError) as again:
        decoder.feed(STREAM_HEADER)
    assert again.value is first.value
    with pytest.raises(FrameError):
        decoder.close()


def test_max_payload_must_fit_the_length_field() -> None:
    with pytest.raises(ValueError, match="max_payload"):
        FrameDecoder(max_payload=2**32)


@pytest.mark.fuzz
@settings(max_examples=500)
@given(garbage=st.binary(max_size=400), cuts=st.lists(st.integers(0, 400), max_size=8), framed=st.booleans())
def test_random_garbage_only_ever_raises_frame_error(garbage: bytes, cuts: list[int], framed: bool) -> None:
    # With the stream header in front, the garbage reaches the frame parser instead of the magic check.
    stream = STREAM_HEADER + garbage if framed else garbage
    with contextlib.suppress(FrameError):
        decode(stream, cuts)


@pytest.mark.fuzz
@settings(max_examples=300)
@given(specs=frame_lists.filter(bool), data=st.data())
def test_any_single_damaged_byte_is_detected(specs: list[Spec], data: st.DataObject) -> None:
    stream = bytearray(encode(specs))
    at = data.draw(st.integers(0, len(stream) - 1), label="at")
    stream[at] ^= data.draw(st.integers(1, 255), label="xor")
    with pytest.raises(FrameError):
        decode(bytes(stream), data.draw(st.lists(st.integers(0, 2000), max_size=5), label="cuts"))

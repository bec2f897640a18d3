"""The choice between plain and compressed overview (nntp/choice.py), without servers: which mode new
connections take, which connections are kept, when it decides, and when it measures again."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from usenet_indexer.nntp.choice import CompressionChoice, Mode

MB = 1_000_000


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_new_connections_alternate_while_measuring() -> None:
    choice = CompressionChoice(replies=2)
    modes = []
    for _ in range(4):
        mode = choice.mode_to_open()
        choice.opened(mode)
        modes.append(mode)
    assert modes == ["plain", "compressed", "plain", "compressed"]
    assert choice.open == {"plain": 2, "compressed": 2}


@pytest.mark.parametrize(
    ("plain_seconds", "compressed_seconds", "chosen"),
    [(0.010, 0.015, "plain"), (0.015, 0.010, "compressed")],
)
def test_the_mode_that_delivers_more_bytes_per_second_is_chosen(
    plain_seconds: float, compressed_seconds: float, chosen: str
) -> None:
    choice = CompressionChoice(replies=2)
    assert choice.record("plain", MB, plain_seconds, compressed=False) is None
    assert choice.record("compressed", MB, compressed_seconds, compressed=True) is None
    assert choice.record("plain", MB, plain_seconds, compressed=False) is None
    decision = choice.record("compressed", MB, compressed_seconds, compressed=True)
    assert decision is not None
    assert decision.chosen == chosen == choice.chosen
    assert decision.rates["plain"] == pytest.approx(MB / plain_seconds)
    assert decision.rates["compressed"] == pytest.approx(MB / compressed_seconds)
    assert decision.replies == {"plain": 2, "compressed": 2}
    assert f"{chosen}: plain {MB / plain_seconds / 1e6:.1f} MB/s (2 replies)" in decision.describe()
    # From now on: new connections in the chosen mode, the other mode's closed as they come back.
    assert choice.mode_to_open() == chosen
    assert choice.keep(chosen)
    assert not choice.keep("plain" if chosen == "compressed" else "compressed")
    assert choice.record("plain", MB, 0.001, compressed=False) is None  # not measuring


@pytest.mark.parametrize(("plain_seconds", "compressed_seconds"), [(0.01, 0.03), (0.05, 0.01)])
def test_the_slower_modes_second_reply_decides_when_one_mode_is_clearly_faster(
    plain_seconds: float, compressed_seconds: float
) -> None:
    choice = CompressionChoice(replies=2, clear_margin=2.0)
    chosen: Mode = "plain" if plain_seconds < compressed_seconds else "compressed"
    other: Mode = "compressed" if chosen == "plain" else "plain"
    faster, slower = sorted((plain_seconds, compressed_seconds))
    # The faster mode's replies alone decide nothing: the other is not measured yet.
    assert choice.record(chosen, MB, faster, compressed=chosen == "compressed") is None
    # One slow reply may have been a stall: the slower mode gets a second chance.
    assert choice.record(other, MB, slower, compressed=other == "compressed") is None
    decision = choice.record(other, MB, slower, compressed=other == "compressed")
    assert decision is not None and decision.chosen == chosen == choice.chosen
    assert decision.replies == {chosen: 1, other: 2}
    assert f"{slower / faster:.1f} times faster" in decision.reason
    assert not choice.measuring


def test_a_reply_slowed_by_a_stall_does_not_decide() -> None:
    """Session 12's misread on loopback, in its sizes: a plain probe (300 kB) that waited on the GIL
    for 80 ms beside INN2's compressed one, then each connection's chunk. Every mode is rated by its
    best reply, and the stalled one had its second chance."""
    choice = CompressionChoice(replies=2, clear_margin=2.0)
    probe, chunk = 300_000, 6_000_000
    assert choice.record("plain", probe, 0.100, compressed=False) is None  # 3 MB/s: stalled
    assert choice.record("compressed", probe, 0.040, compressed=True) is None  # 7.5 MB/s
    assert choice.record("plain", chunk, 0.030, compressed=False) is None  # 200 MB/s
    decision = choice.record("compressed", chunk, 0.800, compressed=True)
    assert decision is not None and decision.chosen == "plain"
    assert decision.rates == {"plain": pytest.approx(200e6), "compressed": pytest.approx(7.5e6)}


def test_a_mode_is_rated_by_its_best_reply() -> None:
    choice = CompressionChoice(replies=3, clear_margin=100.0)
    for seconds in (0.05, 0.01, 0.02):
        choice.record("compressed", MB, seconds, compressed=True)
    for seconds in (0.02, 0.04):
        assert choice.record("plain", MB, seconds, compressed=False) is None
    decision = choice.record("plain", MB, 0.03, compressed=False)
    assert decision is not None and decision.chosen == "compressed"
    assert decision.rates == {"plain": pytest.approx(MB / 0.02), "compressed": pytest.approx(MB / 0.01)}


def test_a_close_race_waits_for_every_reply() -> None:
    choice = CompressionChoice(replies=2, clear_margin=2.0)
    assert choice.record("plain", MB, 0.010, compressed=False) is None
    assert choice.record("compressed", MB, 0.019, compressed=True) is None  # 1.9 times: not clear
    assert choice.record("plain", MB, 0.010, compressed=False) is None
    decision = choice.record("compressed", MB, 0.019, compressed=True)
    assert decision is not None and decision.chosen == "plain"
    assert decision.replies == {"plain": 2, "compressed": 2}


def test_small_replies_measure_latency_and_are_not_counted() -> None:
    choice = CompressionChoice(replies=1, min_bytes=65_536)
    assert choice.record("plain", 1000, 0.001, compressed=False) is None
    assert choice.record("compressed", 1000, 0.5, compressed=True) is None
    assert choice.measuring
    decision = choice.record("plain", 100_000, 0.01, compressed=False)
    assert decision is None  # the compressed mode has no reply that counts yet
    decision = choice.record("compressed", 100_000, 0.001, compressed=True)
    assert decision is not None and decision.chosen == "compressed"


def test_a_server_that_compresses_nothing_is_read_plain_at_once() -> None:
    choice = CompressionChoice(replies=3)
    decision = choice.record("compressed", MB, 0.01, compressed=False)
    assert decision is not None
    assert decision.chosen == "plain"
    assert "compresses nothing" in decision.reason
    assert choice.mode_to_open() == "plain"


def test_a_pool_of_one_mode_makes_room_for_the_other_while_measuring() -> None:
    choice = CompressionChoice(replies=2)
    choice.opened("plain")
    choice.record("plain", 1000, 0.001, compressed=False)
    assert choice.keep("plain")  # a small reply, not counted: no reason to reconnect
    choice.record("plain", MB, 0.01, compressed=False)
    # Nothing of the compressed mode is open, and it still needs replies: the plain one is closed on
    # return, so the next connection opened is compressed.
    assert not choice.keep("plain")
    choice.closed("plain")
    assert choice.mode_to_open() == "compressed"
    choice.opened("compressed")
    choice.opened("plain")
    assert choice.keep("plain") and choice.keep("compressed")


def test_it_measures_again_after_recheck_seconds() -> None:
    clock = Clock()
    choice = CompressionChoice(replies=1, recheck_seconds=600, clock=clock)
    choice.record("plain", MB, 0.01, compressed=False)
    assert choice.record("compressed", MB, 0.02, compressed=True) is not None
    choice.opened("plain")
    choice.opened("plain")
    assert choice.chosen == "plain" and not choice.measuring
    clock.now += 599
    assert choice.keep("plain")
    assert choice.record("compressed", MB, 0.001, compressed=True) is None
    clock.now += 1
    # Measuring again: once a plain reply is counted, a plain connection coming back makes room for
    # a compressed one.
    assert choice.keep("plain")
    assert choice.measuring
    assert choice.record("plain", MB, 0.01, compressed=False) is None
    assert not choice.keep("plain")
    choice.closed("plain")
    assert choice.mode_to_open() == "compressed"
    choice.opened("compressed")
    decision = choice.record("compressed", MB, 0.001, compressed=True)
    assert decision is not None and decision.chosen == "compressed"  # the link got slower


def test_closed_never_counts_below_zero() -> None:
    choice = CompressionChoice()
    choice.closed("plain")
    assert choice.open == {"plain": 0, "compressed": 0}
    with pytest.raises(ValueError, match="at least 1"):
        CompressionChoice(replies=0)


def test_a_near_tie_is_read_plain() -> None:
    """Compressing costs CPU at both ends: it must be compressed_margin times faster. With the client
    short of CPU (five busy processes on two cores) INN2's best rates on loopback came 33.9 MB/s
    compressed and 31.0 plain, and the choice had been a coin toss."""
    choice = CompressionChoice(replies=1, compressed_margin=1.25)
    choice.record("plain", 31 * MB, 1.0, compressed=False)
    decision = choice.record("compressed", int(33.9 * MB), 1.0, compressed=True)
    assert decision is not None and decision.chosen == "plain"
    choice = CompressionChoice(replies=1, compressed_margin=1.25)
    choice.record("plain", 31 * MB, 1.0, compressed=False)
    decision = choice.record("compressed", 40 * MB, 1.0, compressed=True)
    assert decision is not None and decision.chosen == "compressed"


replies_strategy = st.lists(
    st.tuples(
        st.sampled_from(["plain", "compressed"]),
        st.integers(min_value=65_536, max_value=50 * MB),
        st.floats(min_value=1e-4, max_value=10.0),
    ),
    max_size=12,
)


@given(replies=replies_strategy, needed=st.integers(min_value=1, max_value=4))
def test_any_decision_rests_on_each_modes_best_reply(
    replies: list[tuple[Mode, int, float]], needed: int
) -> None:
    """Whatever the replies and their order: no decision before both modes were timed (and the slower
    had its replies), the rates are each mode's best, and compressed only when clearly faster."""
    choice = CompressionChoice(replies=needed, clear_margin=2.0, compressed_margin=1.25)
    best: dict[str, float] = {"plain": 0.0, "compressed": 0.0}
    count = {"plain": 0, "compressed": 0}
    for mode, size, seconds in replies:
        was_measuring = choice.measuring
        decision = choice.record(mode, size, seconds, compressed=mode == "compressed")
        if not was_measuring:
            assert decision is None
            continue
        best[mode] = max(best[mode], size / seconds)
        count[mode] += 1
        if decision is None:
            continue
        assert decision.rates == pytest.approx(best)
        assert min(count.values()) >= 1
        slower = "plain" if decision.chosen == "compressed" else "compressed"
        assert count[slower] >= needed
        if decision.chosen == "compressed":
            assert best["compressed"] >= 1.25 * best["plain"]
        else:
            assert best["compressed"] < 1.25 * best["plain"]

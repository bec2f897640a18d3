"""The held-leases file a supervised worker keeps for its supervisor (edge/held.py), and the restart
backoff (edge/supervisor.py): pure, no servers."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from usenet_indexer.edge.held import HeldFile, read_held
from usenet_indexer.edge.supervisor import restart_delay
from usenet_indexer.wire.held import Held, HeldFileError, decode_held

ids = st.integers(1, 2**63 - 1)
helds = st.builds(
    Held,
    st.frozensets(st.tuples(ids, ids), max_size=8),
    st.frozensets(st.tuples(ids, st.sampled_from(["history", "tail"]), ids), max_size=4),
    st.frozensets(st.from_regex(r"[0-9a-f]{16,64}", fullmatch=True), max_size=3),
)


@given(helds)
def test_what_is_written_is_read_back(held: Held) -> None:
    assert decode_held(held.encode()) == held


@given(st.binary(max_size=300))
def test_any_bytes_are_a_held_file_or_a_clear_error(data: bytes) -> None:
    try:
        held = decode_held(data)
    except HeldFileError as error:
        message = str(error)
    else:
        message = "read"
        assert all(r > 0 and e > 0 for r, e in held.ranges)
    assert message


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not JSON"),
        (b"[]", "version 1"),
        (b'{"version": 2, "ranges": [], "lanes": []}', "version 1"),
        (b'{"version": 1, "ranges": {}, "lanes": []}', "lists"),
        (b'{"version": 1, "ranges": [[1]], "lanes": []}', "positive integers"),
        (b'{"version": 1, "ranges": [[1, 0]], "lanes": []}', "positive integers"),
        (b'{"version": 1, "ranges": [[1, true]], "lanes": []}', "positive integers"),
        (b'{"version": 1, "ranges": [[1, 1.5]], "lanes": []}', "positive integers"),
        (b'{"version": 1, "ranges": [], "lanes": [[1, "sideways", 1]]}', "history"),
        (b'{"version": 1, "ranges": [], "lanes": [], "claims": "abc"}', "claims"),
        (b'{"version": 1, "ranges": [], "lanes": [], "claims": ["XYZ0123456789abcdef"]}', "claims"),
        (b'{"version": 1, "ranges": [], "lanes": [], "claims": ["0123"]}', "claims"),
        (b" " * (2 << 20), "cap"),
    ],
)
def test_a_file_that_is_not_ours_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(HeldFileError, match=message):
        decode_held(data)


def test_the_file_holds_what_is_held_now(tmp_path: Path) -> None:
    path = tmp_path / "worker-1.json"
    path.write_bytes(b"left by the worker before")  # the supervisor read it before this start
    held = HeldFile(path)
    assert read_held(path) == Held()
    held.hold_range(7, 3)
    held.hold_range(8, 1)
    held.hold_lane(2, "history", 5)
    assert read_held(path) == Held(frozenset({(7, 3), (8, 1)}), frozenset({(2, "history", 5)}))
    held.drop_range(7, 3)
    held.drop_range(7, 4)  # not held: nothing changes
    held.drop_lane(2, "history", 5)
    assert read_held(path) == Held(frozenset({(8, 1)}))
    assert read_held(tmp_path / "none.json") == Held()
    assert [p.name for p in tmp_path.iterdir()] == ["worker-1.json"]  # no temporary file left


def test_a_claim_tag_is_written_before_its_request_and_replaced_by_its_lease_in_one_write(
    tmp_path: Path,
) -> None:
    """A lease request's tag is in the file before the request is sent, so that a grant whose answer
    never came is found by it (leases/claims.py); once the answer is read, the lease takes its place
    in the same write (no state where the file names neither)."""
    path = tmp_path / "worker-1.json"
    held = HeldFile(path)
    first, second = held.claim(), held.claim()
    assert first != second and len(first) == 32
    assert read_held(path) == Held(claims=frozenset({first, second}))
    held.hold_range(7, 3, first)
    assert read_held(path) == Held(frozenset({(7, 3)}), claims=frozenset({second}))
    held.hold_lane(2, "tail", 4, second)
    assert read_held(path) == Held(frozenset({(7, 3)}), frozenset({(2, "tail", 4)}))
    third = held.claim()
    held.drop_claim(third)  # answered with no grant, or failed
    assert read_held(path) == Held(frozenset({(7, 3)}), frozenset({(2, "tail", 4)}))
    assert b"claims" not in path.read_bytes()  # a file without tags reads as it did before them


def test_threads_holding_and_dropping_at_once_leave_the_file_exact(tmp_path: Path) -> None:
    path = tmp_path / "worker-1.json"
    held = HeldFile(path)

    def work(base: int) -> None:
        for n in range(base, base + 50):
            held.hold_range(n, 1)
            if n % 2:
                held.drop_range(n, 1)

    threads = [threading.Thread(target=work, args=(base,)) for base in (1, 1_001, 2_001)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = {(n, 1) for base in (1, 1_001, 2_001) for n in range(base, base + 50) if n % 2 == 0}
    assert read_held(path).ranges == expected


def test_a_child_is_restarted_at_once_then_later_each_time_it_dies_again() -> None:
    assert [restart_delay(n, cap=10) for n in range(1, 9)] == [0, 0.5, 1, 2, 4, 8, 10, 10]

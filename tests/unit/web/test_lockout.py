"""The admin login's lockout, on a moved clock (coordinator/http/lockout.py)."""

from __future__ import annotations

from usenet_indexer.coordinator.http.lockout import FREE_FAILURES, MAX_LOCK_SECONDS, LoginLockout


def test_the_lockout_doubles_and_a_success_forgets() -> None:
    now = [0.0]
    lockout = LoginLockout(clock=lambda: now[0])
    assert [lockout.failed("a") for _ in range(FREE_FAILURES)] == [0.0] * FREE_FAILURES
    assert lockout.failed("a") == 1.0
    assert lockout.locked("a") == 1.0
    assert lockout.locked("b") == 0.0  # another client is not locked out
    now[0] += 1.0
    assert lockout.failed("a") == 2.0
    assert lockout.failed("a") == 4.0
    for _ in range(30):
        lockout.failed("a")
    assert lockout.locked("a") == MAX_LOCK_SECONDS
    lockout.succeeded("a")
    assert lockout.locked("a") == 0.0
    assert lockout.failed("a") == 0.0

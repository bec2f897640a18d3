"""Plain or compressed overview, per news server, by measurement: what ``compression = "auto"`` does.

Compression saves bytes on the wire and costs CPU at both ends. On loopback, COMPRESS DEFLATE made INN2
spend 9.8 core-seconds instead of 2.6 on 1,000,000 overview lines and the whole run slower (issue 17);
over a slow link the saved bytes win. Which is faster depends on the link and the server, so the pool
measures both: while measuring, new connections alternate between plain and compressed, and each
overview reply of at least ``min_bytes`` is timed (command to last byte, the client's inflating
included; the pool times probes of a chunk's first articles, nntp/pool.py).

- A mode's rate is its **best** reply's (plain overview bytes per second): whatever else runs — an
  import holding the coordinator's GIL, other processes on the cores — can only slow a reply down.
  Rated by the mean of one or two replies, a stalled plain probe made "auto" read INN2 compressed on
  loopback (2 of 12 runs in session 12: INN2 then spent 7.1 core-µs a header instead of 2.4).
- Once each mode has ``replies`` replies the faster is chosen, **compressed only when
  ``compressed_margin`` times faster**: compressing costs CPU at both ends, and with both modes bound
  by a client short of CPU (five busy processes on a 2-core machine) the best rates came within 10 % of
  each other and the choice was a coin toss.
- Earlier, once one mode is ``clear_margin`` times faster and the slower has had its ``replies``
  (one slow reply may have been a stall), the faster's further replies are not waited for: on loopback
  INN2's compressed replies came 3 times slower than plain, and under load a compressed chunk held
  one of the two connections for seconds.

New connections then use the chosen mode, and connections of the other are closed as they come back.
Every ``recheck_seconds`` it measures again (a link's speed changes). A server that compresses nothing
(a "compressed" connection got a plain reply) is read plain at once.

Pure logic: the pool (nntp/pool.py) tells it what it opened, closed and measured; the clock is given.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

__all__ = ["MODES", "CompressionChoice", "Decision", "Mode"]

Mode = Literal["plain", "compressed"]
MODES: tuple[Mode, Mode] = ("plain", "compressed")


def _other(mode: Mode) -> Mode:
    return "compressed" if mode == "plain" else "plain"


@dataclass(frozen=True, slots=True)
class Decision:
    """A choice made: the measured rates (plain overview bytes per second of reply) behind it."""

    chosen: Mode
    rates: dict[Mode, float]  # each mode's best reply's
    replies: dict[Mode, int]
    sizes: dict[Mode, int]  # overview bytes (plain) measured in each mode
    reason: str  # "measured", or why not

    def describe(self) -> str:
        def rate(mode: Mode) -> str:
            if not self.replies[mode]:
                return f"{mode} not measured"
            return f"{mode} {self.rates[mode] / 1e6:.1f} MB/s ({self.replies[mode]} replies)"

        return f"{self.chosen}: {rate('plain')}, {rate('compressed')}; {self.reason}"


class CompressionChoice:
    """Per server: which mode new connections use, which connections to keep, and when to decide."""

    def __init__(
        self,
        *,
        replies: int = 3,
        clear_margin: float = 2.0,
        compressed_margin: float = 1.25,
        min_bytes: int = 65_536,
        recheck_seconds: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if replies < 1:
            raise ValueError("replies must be at least 1")
        self.replies = replies
        self.clear_margin = clear_margin
        self.compressed_margin = compressed_margin
        self.min_bytes = min_bytes
        self.recheck_seconds = recheck_seconds
        self._clock = clock
        self.chosen: Mode | None = None  # None until the first decision
        self.last_decision: Decision | None = None
        self.measuring = True
        self.open: dict[Mode, int] = dict.fromkeys(MODES, 0)
        self._bytes: dict[Mode, int] = dict.fromkeys(MODES, 0)
        self._best: dict[Mode, float] = dict.fromkeys(MODES, 0.0)
        self._count: dict[Mode, int] = dict.fromkeys(MODES, 0)
        self._recheck_at = math.inf

    def _tick(self) -> None:
        if not self.measuring and self._clock() >= self._recheck_at:
            self.measuring = True
            for mode in MODES:
                self._bytes[mode], self._best[mode], self._count[mode] = 0, 0.0, 0

    def _needs(self, mode: Mode) -> bool:
        return self._count[mode] < self.replies

    # -- what the pool asks ------------------------------------------------------------------------

    def mode_to_open(self) -> Mode:
        """The mode of the next new connection."""
        self._tick()
        if not self.measuring:
            assert self.chosen is not None
            return self.chosen
        wanted = [mode for mode in MODES if self._needs(mode)] or list(MODES)
        return min(wanted, key=lambda mode: (self.open[mode], self._count[mode]))

    def wants(self, mode: Mode) -> bool:
        """Whether ``mode`` still needs a reply timed (while measuring)."""
        self._tick()
        return self.measuring and self._needs(mode)

    def keep(self, mode: Mode) -> bool:
        """Whether a healthy connection of ``mode`` coming back goes on serving (else: close it)."""
        self._tick()
        if not self.measuring:
            return mode == self.chosen
        # A pool whose connections are all of one mode never opens one of the other: make room, once
        # this mode is ahead (else a pool of one connection would reconnect for every small reply).
        other = _other(mode)
        return not (self._needs(other) and self.open[other] == 0 and self._count[mode] > self._count[other])

    # -- what the pool tells -------------------------------------------------------------------------

    def opened(self, mode: Mode) -> None:
        self.open[mode] += 1

    def closed(self, mode: Mode) -> None:
        self.open[mode] = max(0, self.open[mode] - 1)

    def record(self, mode: Mode, plain_bytes: int, seconds: float, *, compressed: bool) -> Decision | None:
        """One overview reply read on a connection of ``mode``: ``plain_bytes`` of overview in
        ``seconds``, ``compressed`` on the wire or not. Returns the decision when this reply made one."""
        self._tick()
        if not self.measuring:
            return None
        if mode == "compressed" and not compressed:
            return self._decide("plain", "the server compresses nothing")
        if plain_bytes < self.min_bytes or seconds <= 0:
            return None  # small replies measure latency, not delivery
        self._bytes[mode] += plain_bytes
        self._best[mode] = max(self._best[mode], plain_bytes / seconds)
        self._count[mode] += 1
        rates = self._best
        # Compression costs CPU at both ends: it must pay for itself by a margin, and a near tie (both
        # modes bound by a busy client) is read plain.
        faster: Mode = (
            "compressed" if rates["compressed"] >= self.compressed_margin * rates["plain"] else "plain"
        )
        if not any(self._needs(m) for m in MODES):
            return self._decide(faster, "measured")
        slower = _other(faster)
        # Only once the slower mode had all its replies: one slow reply alone may have been a stall.
        if (
            self._count[faster]
            and not self._needs(slower)
            and rates[faster] >= self.clear_margin * rates[slower]
        ):
            return self._decide(faster, f"measured, {rates[faster] / rates[slower]:.1f} times faster")
        return None

    def _decide(self, chosen: Mode, reason: str) -> Decision:
        self.chosen = chosen
        self.measuring = False
        self._recheck_at = self._clock() + self.recheck_seconds
        self.last_decision = Decision(
            chosen,
            dict(self._best),
            dict(self._count),
            dict(self._bytes),
            f"{reason}; measured again in {self.recheck_seconds:.0f} s",
        )
        return self.last_decision

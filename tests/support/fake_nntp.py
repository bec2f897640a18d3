"""Helpers around the scripted fake server (src/usenet_indexer/nntp/fake_server.py) for tests."""

from __future__ import annotations

from usenet_indexer.nntp.fake_server import FakeNNTPServer, Script, overview_line

__all__ = ["FakeNNTPServer", "Script", "fill_group", "overview_lines"]


def overview_lines(group: str, first: int, last: int) -> list[bytes]:
    """Overview lines for articles first..last, each distinct (subject and message-id carry the number)."""
    return [
        overview_line(
            n,
            f'[{n % 97}/97] - "release.{n // 97}.part{n % 97:03d}.rar" yEnc (1/1)',
            "poster@example.test",
            "Mon, 30 Nov 2026 12:00:00 GMT",
            f"<part{n}.fake@usenet-indexer.test>",
            4000 + n % 1000,
            31,
            group,
        )
        for n in range(first, last + 1)
    ]


def fill_group(server: FakeNNTPServer, group: str, first: int, last: int) -> list[bytes]:
    lines = overview_lines(group, first, last)
    server.add_group(group, lines)
    return lines

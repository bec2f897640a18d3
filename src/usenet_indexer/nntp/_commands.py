"""NNTP commands as values: the line to send and which reply codes carry a multi-line body.

Whether a reply has a body depends on the command *and* the code (211 is single-line after GROUP but
multi-line after LISTGROUP), so each command carries the set of codes that start a body. Arguments
are checked here: a CR, LF, NUL or space inside one would let a value inject a second command.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "BodyKind",
    "Command",
    "authinfo_pass",
    "authinfo_user",
    "body",
    "capabilities",
    "compress_deflate",
    "group",
    "list_overview_fmt",
    "mode_reader",
    "over",
    "quit",
    "starttls",
    "xfeature_compress_gzip",
    "xzver",
]

# "overview": the body may come compressed per reply once XFEATURE COMPRESS GZIP is on;
# "xzver": the body is yEnc-wrapped raw deflate.
BodyKind = Literal["plain", "overview", "xzver"]

# RFC 3977 3.1: a command line is at most 512 octets including the CRLF.
MAX_COMMAND_LINE = 512


@dataclass(frozen=True, slots=True)
class Command:
    line: str
    multiline_codes: frozenset[int] = frozenset()
    body: BodyKind = "plain"
    shown: str | None = None  # what errors and logs show instead of ``line`` (passwords hidden)
    # The caller wants a plain body in one piece (over_chunk): it is gathered in one buffer and comes
    # as one Data (nntp/_readers.py GatheredBody). Compressed bodies come in pieces all the same.
    whole: bool = False

    @property
    def verb(self) -> str:
        return self.line.split(" ", 1)[0].upper()

    def wire(self) -> bytes:
        return self.line.encode("utf-8") + b"\r\n"

    def __str__(self) -> str:
        return self.shown if self.shown is not None else self.line


def _argument(value: str, what: str) -> str:
    if not value:
        raise ValueError(f"{what} is empty")
    bad = next((c for c in value if c in " \t\r\n\x00"), None)
    if bad is not None:
        raise ValueError(f"{what} {value!r} holds {bad!r}: NNTP arguments cannot contain whitespace or NUL")
    return value


def _make(
    line: str, multiline: tuple[int, ...] = (), body: BodyKind = "plain", shown: str | None = None
) -> Command:
    if len(line.encode("utf-8")) + 2 > MAX_COMMAND_LINE:
        raise ValueError(f"command line longer than {MAX_COMMAND_LINE} octets: {line[:60]!r}…")
    return Command(line, frozenset(multiline), body, shown)


def _range(first: int, last: int | None) -> str:
    if first < 0 or (last is not None and last < first):
        raise ValueError(f"bad article range {first}-{last}")
    return f"{first}-" if last is None else f"{first}-{last}"


def capabilities() -> Command:
    return _make("CAPABILITIES", (101,))


def mode_reader() -> Command:
    return _make("MODE READER")


def authinfo_user(user: str) -> Command:
    return _make(f"AUTHINFO USER {_argument(user, 'user name')}")


def authinfo_pass(password: str) -> Command:
    return _make(f"AUTHINFO PASS {_argument(password, 'password')}", shown="AUTHINFO PASS ********")


def group(name: str) -> Command:
    return _make(f"GROUP {_argument(name, 'group name')}")


def list_overview_fmt() -> Command:
    return _make("LIST OVERVIEW.FMT", (215,))


def over(first: int, last: int | None, *, verb: Literal["OVER", "XOVER"] = "OVER") -> Command:
    return _make(f"{verb} {_range(first, last)}", (224,), "overview")


def xzver(first: int, last: int | None) -> Command:
    return _make(f"XZVER {_range(first, last)}", (224,), "xzver")


def body(message_id: str) -> Command:
    mid = _argument(message_id, "message-id")
    if not (mid.startswith("<") and mid.endswith(">") and "@" in mid):
        raise ValueError(f"message-id {message_id!r} is not of the form <local@domain>")
    return _make(f"BODY {mid}", (222,))


def starttls() -> Command:
    return _make("STARTTLS")


def compress_deflate() -> Command:
    return _make("COMPRESS DEFLATE")


def xfeature_compress_gzip(*, terminator: bool) -> Command:
    return _make("XFEATURE COMPRESS GZIP TERMINATOR" if terminator else "XFEATURE COMPRESS GZIP")


def quit() -> Command:
    return _make("QUIT")

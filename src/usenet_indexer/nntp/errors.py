"""Every way an NNTP exchange can fail, as one exception class each.

The server's error replies map to :class:`NNTPReplyError` subclasses by code (:func:`error_for_reply`);
failures below the reply level are :class:`NNTPProtocolError` (the bytes make no sense),
:class:`NNTPConnectionError` (the connection could not be made or was lost), :class:`NNTPTimeout`
and the compression errors. Messages say what happened and, where there is one, what to do.
"""

from __future__ import annotations

import re

__all__ = [
    "AccessDenied",
    "ArticleNotFound",
    "AuthOutOfSequence",
    "AuthRejected",
    "AuthRequired",
    "AuthenticationError",
    "CommandSyntaxError",
    "CommandUnavailable",
    "CompressedReplyCorrupt",
    "CompressedReplyTruncated",
    "CompressionError",
    "EncryptionRequired",
    "NNTPConnectionError",
    "NNTPConnectionLost",
    "NNTPError",
    "NNTPPermanentError",
    "NNTPProtocolError",
    "NNTPReplyError",
    "NNTPTLSError",
    "NNTPTemporaryError",
    "NNTPTimeout",
    "NoCurrentArticle",
    "NoGroupSelected",
    "NoSuchArticle",
    "NoSuchArticleNumber",
    "NoSuchGroup",
    "ServiceDiscontinued",
    "TLSUnavailable",
    "TooManyConnections",
    "UnknownCommand",
    "error_for_reply",
]


class NNTPError(Exception):
    """Base of every error raised by the NNTP client."""


class NNTPProtocolError(NNTPError):
    """The server sent bytes that do not follow the protocol (garbage, an impossible status line)."""


class NNTPConnectionError(NNTPError):
    """The connection could not be made, or it broke."""


class NNTPConnectionLost(NNTPConnectionError):
    """The server closed the connection (possibly in the middle of a reply)."""


class NNTPTLSError(NNTPConnectionError):
    """TLS could not be set up: most often the server's certificate is not trusted."""


class NNTPTimeout(NNTPError):
    """The server did not answer (or did not finish a reply) within the timeout."""


class CompressionError(NNTPError):
    """A compressed reply could not be decoded."""


class CompressedReplyCorrupt(CompressionError):
    """A compressed reply does not inflate (bad deflate data, bad yEnc, CRC mismatch).

    Fetch the same range again without compression: the callers' corrupt path.
    """


class CompressedReplyTruncated(CompressedReplyCorrupt):
    """A compressed reply ended (by its framing) before its compressed stream did: it was cut short."""


class NNTPReplyError(NNTPError):
    """The server answered a command with an error status."""

    hint = ""

    def __init__(self, code: int, text: str, command: str = "") -> None:
        self.code = code
        self.text = text
        self.command = command
        to = f" to {command}" if command else ""
        message = f"NNTP server answered {code} {text!r}{to}"
        if self.hint:
            message += f": {self.hint}"
        super().__init__(message)


class NNTPTemporaryError(NNTPReplyError):
    """A 4xx reply: the command was understood but cannot be done now or here."""


class NNTPPermanentError(NNTPReplyError):
    """A 5xx reply: the command is not understood, not allowed or not implemented."""


class ServiceDiscontinued(NNTPTemporaryError):
    hint = "the server refuses service (400); try again later or check the account"


class NoSuchGroup(NNTPTemporaryError):
    hint = "the group does not exist on this server; check its name"


class NoGroupSelected(NNTPTemporaryError):
    hint = "no group is selected; send GROUP first"


class NoCurrentArticle(NNTPTemporaryError):
    hint = "no current article is selected"


class ArticleNotFound(NNTPTemporaryError):
    """423 or 430: the server does not have the article (a fill server may)."""


class NoSuchArticleNumber(ArticleNotFound):
    hint = "no article with that number (or none in that range) in the group"


class NoSuchArticle(ArticleNotFound):
    hint = "the server does not have that article; a fill server may"


class AuthenticationError(NNTPReplyError):
    """480-483: authentication is needed, failed, or is not possible on this connection."""


class AuthRequired(AuthenticationError, NNTPTemporaryError):
    hint = "the server needs AUTHINFO; set the user and password for this server"


class AuthRejected(AuthenticationError, NNTPTemporaryError):
    hint = "the user name or password was rejected; check them"


class AuthOutOfSequence(AuthenticationError, NNTPTemporaryError):
    hint = "AUTHINFO was sent out of sequence (PASS before USER, or a second login)"


class EncryptionRequired(AuthenticationError, NNTPTemporaryError):
    hint = "the server accepts passwords only over TLS; enable ssl (port 563) or starttls"


class UnknownCommand(NNTPPermanentError):
    hint = "the server does not know this command"


class CommandSyntaxError(NNTPPermanentError):
    hint = "the server rejected the command's arguments"


class AccessDenied(NNTPPermanentError):
    hint = "the server refuses this (502): permission denied or the account is not allowed"


class TooManyConnections(AccessDenied):
    """The server's connection limit was reached (502, or a 4xx that says so): back off, use fewer."""

    hint = "the account's connection limit is reached; lower the connection count for this server"


class CommandUnavailable(NNTPPermanentError):
    hint = "the server supports this command but not here or not now (503)"


class TLSUnavailable(NNTPPermanentError):
    hint = "the server cannot start TLS (580); check its certificate set-up or use implicit TLS"


_BY_CODE: dict[int, type[NNTPReplyError]] = {
    400: ServiceDiscontinued,
    411: NoSuchGroup,
    412: NoGroupSelected,
    420: NoCurrentArticle,
    423: NoSuchArticleNumber,
    430: NoSuchArticle,
    480: AuthRequired,
    481: AuthRejected,
    482: AuthOutOfSequence,
    483: EncryptionRequired,
    500: UnknownCommand,
    501: CommandSyntaxError,
    502: AccessDenied,
    503: CommandUnavailable,
    580: TLSUnavailable,
}

# Providers say "too many connections" with 502 (the RFC's code), but also with 400, 481 or 482.
_TOO_MANY = re.compile(
    r"too many|connection limit|max(imum)?[ _-]*conn|limit reached|already connected|connections? exceeded",
    re.IGNORECASE,
)


def error_for_reply(code: int, text: str, command: str = "") -> NNTPReplyError:
    """The exception for an error reply (code >= 400) to ``command`` (passwords already hidden)."""
    if code in (400, 481, 482, 502) and _TOO_MANY.search(text):
        return TooManyConnections(code, text, command)
    cls = _BY_CODE.get(code)
    if cls is None:
        cls = NNTPTemporaryError if code < 500 else NNTPPermanentError
    return cls(code, text, command)

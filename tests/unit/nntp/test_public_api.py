"""The names the rest of the project imports from usenet_indexer.nntp (guarded, as httpx does)."""

from __future__ import annotations

from pydantic import SecretStr

import usenet_indexer.nntp as nntp
from usenet_indexer.nntp import client, pool


def test_exported_names_exist_and_are_listed() -> None:
    for name in nntp.__all__:
        assert hasattr(nntp, name), name
    assert {"NNTPConnection", "Response", "Data", "EndOfData", "NEED_DATA", "commands"} <= set(nntp.__all__)
    assert {"NNTPClient", "OverviewChunk", "GroupInfo", "Compression"} <= set(client.__all__)
    assert {"NNTPPool", "ServerSettings", "ServerStats"} <= set(pool.__all__)


def test_every_error_derives_from_nntp_error() -> None:
    errors = [getattr(nntp, name) for name in nntp.__all__ if isinstance(getattr(nntp, name), type)]
    for cls in errors:
        if issubclass(cls, Exception):
            assert issubclass(cls, nntp.NNTPError), cls


def test_server_settings_defaults() -> None:
    plain = pool.ServerSettings(host="news.example.test")
    tls = pool.ServerSettings(
        host="news.example.test", ssl=True, user="u", password=SecretStr("hunter2-secret")
    )
    assert (plain.port, plain.name, plain.connections) == (119, "news.example.test:119", 8)
    assert tls.port == 563
    assert "hunter2" not in repr(tls)  # the password is a SecretStr

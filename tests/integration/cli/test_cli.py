"""The operator's commands, run as a user runs them (on SQLite and PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from usenet_indexer.cli import app


@pytest.fixture
def run(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("USENET_INDEXER_DATABASE_URL", database_url)
    monkeypatch.setenv("USENET_INDEXER_DATA_DIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def invoke(*args: str, code: int = 0, input: str | None = None) -> str:
        result = runner.invoke(app, list(args), input=input)
        assert result.exit_code == code, result.output
        return result.output

    return invoke


def test_nodes(run) -> None:  # type: ignore[no-untyped-def]
    token = run("nodes", "add", "edge-1").splitlines()[0]
    assert token.startswith("uin_")
    assert "edge-1\tenabled\tlast seen never" in run("nodes", "list")
    assert "exists already" in run("nodes", "add", "edge-1", code=1)
    run("nodes", "disable", "edge-1")
    assert "disabled" in run("nodes", "list")


def test_groups(run) -> None:  # type: ignore[no-untyped-def]
    run("groups", "add", "alt.binaries.cli", "--backfill-articles", "2500000")
    assert "planned 4 ranges" in run("groups", "plan", "alt.binaries.cli", "--low", "1", "--high", "9000000")
    assert "4 planned" in run("groups", "list")
    assert "not a newsgroup name" in run("groups", "add", "../etc", code=1)


def test_rules(run) -> None:  # type: ignore[no-untyped-def]
    out = run("rules", "test", '[03/12] - "Quiet.Harbor.2023.1080p.part02.rar" yEnc (14/87)')
    assert "part p/t:   14/87" in out
    assert "does not compile" in run("rules", "add", "bad", "(?P<name>foo", code=1)
    assert "version 2" in run(
        "rules", "add", "mine", r"^MINE (?P<name>\S+) (?P<p>\d+)/(?P<t>\d+)$", "--first"
    )
    assert "rule:       mine (version 2)" in run("rules", "test", "MINE hello 3/9")
    assert "version 3" in run("rules", "remove", "mine")
    assert "no rule of version 3" in run("rules", "test", "MINE hello 3/9", code=1)


def test_db_upgrade(run) -> None:  # type: ignore[no-untyped-def]
    assert "database at revision" in run("db", "upgrade")


def test_users_key_replaces_the_old_key(run) -> None:  # type: ignore[no-untyped-def]
    first = run("users", "add", "carol").splitlines()[0]
    second = run("users", "key", "carol").splitlines()[0]
    assert first != second and len(second) == 32
    assert "no user nobody" in run("users", "key", "nobody", code=1)


def test_users_passwords_for_the_web_ui(run, database_url: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tests.support.store import services_for

    password = "dana's password, long enough"
    run("users", "add", "dana", "--password", input=f"{password}\n{password}\n")
    assert "at least 12 characters" in run("users", "passwd", "dana", input="short\nshort\n", code=1)
    assert "no user nobody" in run("users", "passwd", "nobody", input=f"{password}\n{password}\n", code=1)
    services = services_for(database_url, tmp_path)
    try:
        assert services.users.check_password("dana", password) is not None
        assert services.users.check_password("dana", password + "x") is None
        run("users", "passwd", "dana", input="a new one for dana\na new one for dana\n")
        assert services.users.check_password("dana", password) is None
        assert services.users.check_password("dana", "a new one for dana") is not None
        run("users", "disable", "dana")
        assert services.users.check_password("dana", "a new one for dana") is None
    finally:
        services.close()


def test_run_needs_a_news_server(run) -> None:  # type: ignore[no-untyped-def]
    out = run("run", "--workers", "1", code=1)
    assert "no news server" in out and "usenet-indexer demo" in out


def test_a_bad_setting_is_one_line_naming_it(run, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    # Was a pydantic traceback: a person had to find the setting's name in it.
    monkeypatch.setenv("USENET_INDEXER_WEB_SESSION_HOURS", "-1")
    out = run("groups", "list", code=1)
    assert out.strip() == "settings: web_session_hours: Input should be greater than 0 (given: '-1')"
    monkeypatch.delenv("USENET_INDEXER_WEB_SESSION_HOURS")
    monkeypatch.setenv("USENET_INDEXER_ADMIN_PASSWORD", "short")  # too weak; never echoed back
    out = run("groups", "list", code=1)
    assert out.strip() == (
        "settings: the admin password must be at least 12 characters (a few words will do), not 5"
    )

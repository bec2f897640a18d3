"""The loops' commands: backfill targets on `groups add` / `groups backfill`, `reindex`, `serve`'s
news-server flags."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from usenet_indexer.cli import app
from usenet_indexer.coordinator.wiring import open_services
from usenet_indexer.settings import Settings


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.delenv("USENET_INDEXER_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def invoke(*args: str) -> tuple[int, str]:
        result = runner.invoke(app, ["--data-dir", str(tmp_path / "data"), *args])
        return result.exit_code, result.output

    return invoke


def group(tmp_path: Path, name: str) -> dict[str, object]:
    services = open_services(Settings(data_dir=tmp_path / "data"))
    try:
        return services.groups.get(name)
    finally:
        services.close()


def test_backfill_targets(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code, out = run("groups", "add", "alt.binaries.a", "--backfill-days", "30")
    assert code == 0, out
    assert group(tmp_path, "alt.binaries.a")["backfill_days"] == 30.0
    code, out = run("groups", "backfill", "alt.binaries.a", "--since", "2026-01-02")
    assert code == 0, out
    row = group(tmp_path, "alt.binaries.a")
    assert (row["backfill_days"], row["backfill_since"]) == (None, 1767312000.0)
    code, out = run("groups", "add", "alt.binaries.b", "--backfill-days", "3", "--backfill-articles", "9")
    assert code == 1 and "one backfill target" in out
    code, out = run("groups", "backfill", "alt.binaries.a", "--days", "-1")
    assert code == 1 and "days > 0" in out


def test_a_bare_add_backfills_a_week_not_the_whole_retention(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code, out = run("groups", "add", "alt.binaries.a")
    assert code == 0, out
    assert "posted in the last 7 days" in out and "--all-history" in out
    row = group(tmp_path, "alt.binaries.a")
    assert (row["backfill_articles"], row["backfill_days"], row["backfill_since"]) == (None, 7.0, None)
    code, out = run("groups", "add", "alt.binaries.b", "--all-history")
    assert code == 0 and "all of the history" in out, out
    row = group(tmp_path, "alt.binaries.b")
    assert (row["backfill_articles"], row["backfill_days"], row["backfill_since"]) == (None, None, None)
    code, out = run("groups", "add", "alt.binaries.c", "--all-history", "--backfill-days", "3")
    assert code == 1 and "not both" in out
    code, out = run("groups", "backfill", "alt.binaries.a")
    assert code == 1 and "--all-history" in out
    code, out = run("groups", "backfill", "alt.binaries.a", "--all-history")
    assert code == 0, out
    assert group(tmp_path, "alt.binaries.a")["backfill_days"] is None


def test_reindex_without_stored_ranges_says_why(run) -> None:  # type: ignore[no-untyped-def]
    run("groups", "add", "alt.binaries.a")
    code, out = run("reindex", "alt.binaries.a")
    assert code == 1
    assert "--capture" in out
    code, out = run("reindex", "alt.binaries.nope")
    assert code == 1 and "no group" in out


def test_serve_refuses_a_user_without_password(run) -> None:  # type: ignore[no-untyped-def]
    code, out = run("serve", "--nntp-host", "127.0.0.1", "--nntp-user", "me", "--port", "0")
    assert code == 1
    assert "nntp_user and nntp_password" in out

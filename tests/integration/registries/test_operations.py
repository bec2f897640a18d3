"""The operations on nodes, users, groups and rules (coordinator/registries/operations.py): what each
says it did, what each refuses and why, and that the command line and the web admin, which both call
them, say the same."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.support.store import ADMIN_PASSWORD, query
from usenet_indexer.cli import app as cli_app
from usenet_indexer.coordinator.http.app import create_app
from usenet_indexer.coordinator.registries.operations import Operations, Refused
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.leases.planning import Backfill

GROUP = "alt.binaries.ops"


@pytest.fixture
def ops(services: Services) -> Operations:
    return Operations.of(services)


def test_nodes(ops: Operations, services: Services) -> None:
    added = ops.add_node("edge-1")
    assert added.message == "node edge-1 added"
    assert added.secret is not None and services.nodes.authenticate(added.secret) > 0
    with pytest.raises(Refused, match="exists already"):
        ops.add_node("edge-1")
    with pytest.raises(Refused, match="not a node name"):
        ops.add_node("../edge")
    assert ops.enable_node("edge-1", False).message == "node edge-1 disabled"
    assert [(n.name, n.enabled) for n in ops.list_nodes()] == [("edge-1", False)]
    with pytest.raises(Refused, match="no node ghost"):
        ops.enable_node("ghost", True)


def test_users(ops: Operations, services: Services) -> None:
    added = ops.add_user("carol", requests_per_day=5)
    assert added.message == "user carol added" and added.secret is not None
    assert services.users.authenticate(added.secret).requests_per_day == 5
    with pytest.raises(Refused, match="a count from 0 to 2,147,483,647"):
        ops.add_user("dave", downloads_per_day=-1)
    with pytest.raises(Refused, match="at least 12 characters"):
        ops.add_user("erin", password="short")
    assert [u.name for u in ops.list_users()] == ["carol"]  # nothing half-added
    renewed = ops.new_key("carol")
    assert renewed.secret is not None and renewed.secret != added.secret
    assert ops.set_password("carol", "carol's long enough password").message.startswith("user carol:")
    limited = ops.set_limits("carol", 1000, None)
    assert limited.message == "user carol: requests a day 1,000, downloads a day no limit"
    assert [(u.requests_per_day, u.downloads_per_day) for u in ops.list_users()] == [(1000, None)]
    with pytest.raises(Refused, match="downloads per day is a count from 0"):
        ops.set_limits("carol", None, 2**31)
    with pytest.raises(Refused, match="no user ghost"):
        ops.set_limits("ghost", 1, 1)
    assert [(u.requests_per_day, u.downloads_per_day) for u in ops.list_users()] == [(1000, None)]
    assert ops.enable_user("carol", False).message == "user carol disabled"
    with pytest.raises(Refused, match="no user ghost"):
        ops.enable_user("ghost", False)


def test_groups_and_ranges(ops: Operations, services: Services) -> None:
    added = ops.add_group(GROUP, Backfill.chosen(articles=2500))
    assert added.message == f"group {GROUP} added: history back to the newest 2,500 articles"
    with pytest.raises(Refused, match="already added"):
        ops.add_group(GROUP, Backfill.chosen())
    with pytest.raises(Refused, match="give both watermarks"):
        ops.plan_group(GROUP, 1, None)
    with pytest.raises(Refused, match="low watermark"):
        ops.plan_group(GROUP, -1, 10)
    assert ops.plan_group(GROUP, 1, 2500).message == f"group {GROUP}: planned 3 ranges (0 tail, 3 history)"
    with pytest.raises(Refused, match="no group alt.binaries.none"):
        ops.plan_group("alt.binaries.none", 1, 10)
    range_id = int(query(services.db, "SELECT min(id) AS id FROM ranges")[0]["id"])
    with pytest.raises(Refused, match=f"range {range_id} is not a failed range"):
        ops.retry_range(range_id)
    query(services.db, "UPDATE ranges SET status = 'failed', error = 'boom' WHERE id = :id", {"id": range_id})
    assert ops.retry_range(range_id).message == f"range {range_id} planned again"
    assert ops.enable_group(GROUP, False).message == f"group {GROUP} disabled"
    with pytest.raises(Refused, match="no group alt.binaries.none"):
        ops.enable_group("alt.binaries.none", True)
    (summary,) = ops.list_groups()
    assert (summary.name, summary.enabled, summary.ranges) == (GROUP, False, {"planned": 3})


def test_rules(ops: Operations) -> None:
    subject = "MINE hello 3/9"
    assert ops.test_rules(subject, GROUP).match is None
    with pytest.raises(Refused, match="does not compile"):
        ops.add_rule("bad", "(?P<name>foo")
    added = ops.add_rule("mine", r"^MINE (?P<name>\S+) (?P<p>\d+)/(?P<t>\d+)$", first=True)
    assert added.message == "rule mine added: rule set version 2"
    tested = ops.test_rules(subject, GROUP)
    assert tested.version == 2 and tested.match is not None and tested.match.rule == "mine"
    with pytest.raises(Refused, match="no rule ghost"):
        ops.remove_rule("ghost")
    with pytest.raises(Refused, match="not saved"):
        ops.save_rules("{")
    version, text = ops.current_rules_json()
    assert ops.save_rules(text, "the same again").message == f"saved as version {version + 1}"
    assert ops.remove_rule("mine").message == f"rule mine removed: rule set version {version + 2}"
    assert [v for v, *_ in ops.rule_versions()] == [1, 2, 3, 4]


def admin(services: Services) -> tuple[TestClient, str]:
    client = TestClient(create_app(services))
    page = client.get("/admin/login")
    token = re.search(r'name="csrf" value="([^"]+)"', page.text[page.text.index('action="/admin/login"') :])
    assert token is not None
    signed = client.post("/admin/login", data={"csrf": token.group(1), "password": ADMIN_PASSWORD})
    csrf = re.search(r'name="csrf" value="([^"]+)"', signed.text)
    assert csrf is not None
    return client, csrf.group(1)


def test_the_command_line_and_the_web_admin_say_the_same(
    services: Services, database_url: str, tmp_path: Path
) -> None:
    """One operation, two front ends: the same refusal in both (the command line's `groups disable` of
    an unknown group was a traceback), and what each did in the same words."""
    client, csrf = admin(services)
    runner = CliRunner()
    base = ["--database-url", database_url, "--data-dir", str(tmp_path)]

    def cli(*args: str, code: int) -> str:
        result = runner.invoke(cli_app, [*base, *args])
        assert result.exit_code == code, result.output
        return result.output.strip()

    def web(path: str, **form: str) -> tuple[int, str, str]:
        page = client.post(path, data={**form, "csrf": csrf})
        found = re.search(r'id="(message|error)">([^<]*)<', page.text)
        assert found is not None, page.text
        return page.status_code, found.group(1), html.unescape(found.group(2))

    for kind, name in (("groups", "alt.binaries.none"), ("nodes", "ghost"), ("users", "ghost")):
        refusal = cli(kind, "disable", name, code=1)
        assert refusal.startswith(f"no {kind[:-1]} {name}")
        assert web(f"/admin/{kind}", action="disable", name=name) == (400, "error", refusal)
    cli("groups", "add", GROUP, "--backfill-articles", "2500", code=0)
    said = cli("groups", "plan", GROUP, "--low", "1", "--high", "2500", code=0)
    assert said == f"group {GROUP}: planned 1 ranges (0 tail, 1 history)"  # the default sizes
    shown = web("/admin/groups", action="plan", name=GROUP, low="2501", high="5000")
    assert shown == (200, "message", f"Group {GROUP}: planned 4 ranges (4 tail, 0 history).")
    assert cli("nodes", "disable", "edge-2", code=1) == "no node edge-2"
    status, kind, message = web("/admin/nodes", action="add", name="edge-2")
    assert (status, kind, message) == (200, "message", "Node edge-2 added.")
    assert cli("nodes", "disable", "edge-2", code=0) == "node edge-2 disabled"
    # A user's limits, set after adding them: from the command line, then from their row's form.
    cli("users", "add", "frank", code=0)
    said = cli("users", "limits", "frank", "--requests-per-day", "500", code=0)
    assert said == "user frank: requests a day 500, downloads a day no limit"
    shown = web("/admin/users", action="limits", name="frank", requests_per_day="", downloads_per_day="20")
    assert shown == (200, "message", "User frank: requests a day no limit, downloads a day 20.")
    assert cli("users", "limits", "ghost", code=1) == "no user ghost"
    assert web("/admin/users", action="limits", name="ghost") == (400, "error", "no user ghost")
    (frank,) = [u for u in services.users.all() if u.name == "frank"]
    assert (frank.requests_per_day, frank.downloads_per_day) == (None, 20)

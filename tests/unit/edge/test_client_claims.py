"""The edge client's lease requests when an answer is lost after the coordinator committed the grant
(issue 17, leases/claims.py, edge/client.py): against the real coordinator app in-process, on a SQLite
store, through an httpx transport that hands the request to the app and then loses the answer.

A retry under the request's claim tag gets the grant the first try made, not a second one; a request
that failed for good has its tag revoked and its grant given back before the next lease request (or
once the coordinator answers again), not after the TTL. The audit is the oracle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.support.databases import SqliteTemplate
from tests.support.store import TTL, query, services_for
from usenet_indexer.coordinator.http.app import create_app
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.edge.client import ApiError, NodeClient, Refused
from usenet_indexer.edge.held import HeldFile, read_held
from usenet_indexer.leases.audit import audit

GROUP = "alt.binaries.retried"


class LosesAnswers(httpx.BaseTransport):
    """Every request goes to the coordinator app; the answer of one that ``lose`` picks is lost after
    the app handled it (the grant committed), as a connection reset after the commit. ``away``: the
    coordinator unreachable, nothing reaches it."""

    def __init__(self, app: TestClient) -> None:
        self.app = app
        self.lose: Callable[[httpx.Request], bool] = lambda request: False
        self.away = False
        self.paths: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.away:
            raise httpx.ConnectError("connection refused", request=request)
        self.paths.append(request.url.path)
        answer = self.app.request(
            request.method, str(request.url), headers=dict(request.headers), content=request.read()
        )
        if self.lose(request):
            raise httpx.ReadError("connection reset by peer", request=request)
        headers = [
            (k, v) for k, v in answer.headers.items() if k not in ("content-encoding", "content-length")
        ]
        return httpx.Response(answer.status_code, headers=headers, content=answer.content)


@pytest.fixture
def services(sqlite_template: SqliteTemplate, tmp_path: Path) -> Iterator[Services]:
    with sqlite_template.database(tmp_path) as url:
        built = services_for(url, tmp_path)
        built.groups.add(GROUP)
        built.groups.plan(GROUP, 1, 2_999)  # three history ranges; two live leases at most
        yield built
        built.close()


@pytest.fixture
def transport(services: Services) -> Iterator[LosesAnswers]:
    with TestClient(create_app(services)) as app:
        yield LosesAnswers(app)


def client_of(services: Services, transport: LosesAnswers, held: HeldFile | None = None) -> NodeClient:
    _, token = services.nodes.add(f"edge-{len(query(services.db, 'SELECT id FROM nodes'))}")
    return NodeClient(
        "http://coordinator", token, transport=transport, sleep=lambda s: None, held=held, retries=3
    )


def first_answer_lost(path: str) -> Callable[[httpx.Request], bool]:
    lost: list[str] = []

    def lose(request: httpx.Request) -> bool:
        if request.url.path.endswith(path) and not lost:
            lost.append(request.url.params.get("claim", ""))
            return True
        return False

    return lose


def live_ranges(services: Services) -> list[tuple[int, int]]:
    rows = query(services.db, "SELECT id, epoch FROM ranges WHERE status = 'leased' ORDER BY id")
    return [(int(r["id"]), int(r["epoch"])) for r in rows]


def check_audit(services: Services) -> None:
    report = audit(services.db, ttl=TTL, max_per_group=services.settings.max_leases_per_group)
    assert report.problems == []


@pytest.mark.parametrize("supervised", [False, True])
@pytest.mark.parametrize("request_kind", ["range", "lane", "lane's next range"])
def test_a_retry_after_a_lost_answer_gets_the_grant_the_first_try_made(
    services: Services, transport: LosesAnswers, tmp_path: Path, request_kind: str, supervised: bool
) -> None:
    """Supervised or not (a plain ``usenet-indexer edge`` sends claim tags too), the retry carries the
    first try's tag and is answered with its grant: one lease, not two."""
    held = HeldFile(tmp_path / "held.json") if supervised else None
    with client_of(services, transport, held) as client:
        if request_kind == "range":
            transport.lose = first_answer_lost("/lease")
            lease = client.lease()
            assert lease is not None
            assert live_ranges(services) == [(lease.range_id, lease.epoch)]
            granted: object = (lease.range_id, lease.epoch)
        elif request_kind == "lane":
            transport.lose = first_answer_lost("/groups/lease")
            lane = client.lease_group("history")
            assert lane is not None
            lanes = query(services.db, "SELECT group_id, epoch FROM group_leases WHERE node_id IS NOT NULL")
            assert [(int(r["group_id"]), int(r["epoch"])) for r in lanes] == [
                (lane["group"]["id"], lane["group"]["epoch"])
            ]
            granted = (lane["group"]["id"], "history", lane["group"]["epoch"])
        else:
            lane = client.lease_group("history")
            assert lane is not None
            transport.lose = first_answer_lost("/next")
            lease = client.next_range(lane["group"]["id"], "history", lane["group"]["epoch"])
            assert lease is not None
            assert live_ranges(services) == [(lease.range_id, lease.epoch)]
            granted = (lease.range_id, lease.epoch)
        assert not any("revoke" in path for path in transport.paths)  # answered: nothing to settle
        assert client.unsettled == []
    assert len(query(services.db, "SELECT * FROM lease_log")) == (0 if request_kind == "lane" else 1)
    assert len(query(services.db, "SELECT * FROM lane_log")) == (0 if request_kind == "range" else 1)
    if held is not None:
        on_file = read_held(held.path)
        assert on_file.claims == frozenset()
        assert granted in (on_file.ranges | on_file.lanes)
    check_audit(services)


@pytest.mark.parametrize("supervised", [False, True])
def test_a_request_that_failed_for_good_gives_its_grant_back_before_the_next_request(
    services: Services, transport: LosesAnswers, tmp_path: Path, supervised: bool
) -> None:
    """Every answer of the request lost: it fails, the grant its first try made stays leased and its
    tag stays in the held file. The coordinator away at the next lease request: the tags are kept. Once
    the coordinator answers, the tag is revoked and the grant given back (fenced by its tag) before
    the next lease is asked for: the group's two live leases are not one short for the TTL."""
    held = HeldFile(tmp_path / "held.json") if supervised else None
    with client_of(services, transport, held) as client:
        transport.lose = lambda request: request.url.path.endswith("/lease")
        with pytest.raises(ApiError, match="gave up after 3 tries"):
            client.lease()
        (lost,) = live_ranges(services)  # one grant, whatever the number of tries
        (tag,) = client.unsettled
        if held is not None:
            assert read_held(held.path).claims == {tag}
        transport.lose = lambda request: False
        transport.away = True
        with pytest.raises(ApiError):
            client.lease()  # its revoke did not reach the coordinator; nor did this request
        away = client.unsettled[1]
        assert client.unsettled == [tag, away]
        if held is not None:
            assert read_held(held.path).claims == {tag, away}
        assert live_ranges(services) == [lost]
        transport.away = False
        lease = client.lease()
        assert lease is not None
        assert client.unsettled == []
        assert live_ranges(services) == [(lease.range_id, lease.epoch)]
        assert (lease.range_id, lease.epoch) != lost
    ends = query(
        services.db,
        "SELECT end_reason, claim FROM lease_log WHERE range_id = :r AND epoch = :e",
        {"r": lost[0], "e": lost[1]},
    )
    assert [(r["end_reason"], r["claim"]) for r in ends] == [("released", tag)]
    revoked = query(services.db, "SELECT claim FROM claims_revoked")
    assert {r["claim"] for r in revoked} == {tag, away}
    if held is not None:
        assert read_held(held.path).claims == frozenset()
    check_audit(services)


def test_a_worker_that_stops_settles_what_is_left(services: Services, transport: LosesAnswers) -> None:
    """A request that failed for good and no lease request after it (the worker stopping): the tag is
    settled when the worker ends (edge/main.py calls ``settle_claims``)."""
    with client_of(services, transport) as client:
        transport.lose = lambda request: request.url.path.endswith("/groups/lease")
        with pytest.raises(ApiError):
            client.lease_group("tail")  # nothing in the tail: answered 204, lost
        (nothing,) = client.unsettled
        with pytest.raises(ApiError):
            client.lease_group("history")  # its tag settled first: nothing was granted under it
        (lane,) = client.unsettled
        assert lane != nothing
        assert query(services.db, "SELECT node_id FROM group_leases WHERE node_id IS NOT NULL") != []
        transport.lose = lambda request: False
        given = client.settle_claims()
        assert (given.lanes, client.unsettled) == (1, [])
        assert query(services.db, "SELECT node_id FROM group_leases WHERE node_id IS NOT NULL") == []
        # A request refused at its only try (the node disabled) was granted nothing: no tag to keep,
        # so a disabled node's worker does not pile them up, one per request.
        services.nodes.set_enabled(str(query(services.db, "SELECT name FROM nodes")[0]["name"]), False)
        with pytest.raises(Refused, match="HTTP 403"):
            client.lease_group("history")
        assert client.unsettled == []
    check_audit(services)

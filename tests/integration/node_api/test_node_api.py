"""The node API over HTTP (in-process ASGI): leases, the stream, lanes, snapshots, errors."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.support.store import TTL, backdate, query
from usenet_indexer.articles import chunk_spans
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.wire.chunks import deflate_plain, inflate_chunk
from usenet_indexer.wire.frames import FrameDecoder, FrameError, FrameType

API = "/api/v1/node"


def plan(services: Services, high: int = 999) -> None:
    services.groups.add("alt.binaries.test")
    services.groups.plan("alt.binaries.test", 1, high)


def lease(client: TestClient, auth: dict[str, str]) -> dict[str, int]:
    response = client.post(f"{API}/lease", headers=auth)
    assert response.status_code == 200, response.text
    return response.json()["range"]  # type: ignore[no-any-return]


def overview(first: int, last: int) -> bytes:
    return b"".join(
        b"%d\tsubject %d\tposter\tdate\t<m%d@x>\t\t100\t2\r\n" % (n, n, n) for n in range(first, last + 1)
    )


def decode(body: bytes) -> list[tuple[FrameType, int, int, bytes]]:
    decoder = FrameDecoder()
    out = [(f.type, f.first, f.last, bytes(f.data)) for f in decoder.feed(body)]
    decoder.close()
    return out


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic x"}])
def test_no_or_wrong_token_is_401(client: TestClient, headers: dict[str, str]) -> None:
    response = client.post(f"{API}/lease", headers=headers)
    assert response.status_code == 401
    assert "token" in response.json()["detail"]


def test_disabled_node_is_403(client: TestClient, services: Services, auth: dict[str, str]) -> None:
    services.nodes.set_enabled("edge-1", False)
    response = client.post(f"{API}/lease", headers=auth)
    assert response.status_code == 403
    assert "disabled" in response.json()["detail"]


def test_lease_then_204_when_nothing_is_left(
    client: TestClient, services: Services, auth: dict[str, str]
) -> None:
    assert client.post(f"{API}/lease", headers=auth).status_code == 204
    plan(services)
    granted = lease(client, auth)
    assert (granted["start"], granted["end"], granted["next"], granted["epoch"]) == (1, 999, 1, 1)
    assert client.post(f"{API}/lease", headers=auth).status_code == 204


def test_lifecycle_calls_name_the_epoch_and_a_lost_lease_is_409(
    client: TestClient, services: Services, auth: dict[str, str]
) -> None:
    plan(services)
    granted = lease(client, auth)
    rid, epoch = granted["id"], granted["epoch"]
    assert client.post(f"{API}/ranges/{rid}/heartbeat", params={"epoch": epoch}, headers=auth).json() == {
        "ok": True
    }
    wrong = client.post(f"{API}/ranges/{rid}/heartbeat", params={"epoch": epoch + 1}, headers=auth)
    assert wrong.status_code == 409
    assert "epoch" in wrong.json()["error"]
    early = client.post(f"{API}/ranges/{rid}/finish", params={"epoch": epoch}, headers=auth)
    assert early.status_code == 400
    assert "not past its end" in early.json()["error"]
    assert client.post(f"{API}/ranges/{rid}/release", params={"epoch": epoch}, headers=auth).json() == {
        "ok": True,
        "outcome": "released",
    }
    gone = client.post(f"{API}/ranges/{rid}/heartbeat", params={"epoch": epoch}, headers=auth)
    assert (gone.status_code, gone.json()) == (409, {"error": f"range {rid} was released"})
    unknown = client.post(f"{API}/ranges/987654/heartbeat", params={"epoch": 1}, headers=auth)
    assert (unknown.status_code, unknown.json()) == (409, {"error": "unknown range 987654"})


def test_a_node_lists_its_live_leases_in_the_held_format(
    client: TestClient, services: Services, auth: dict[str, str]
) -> None:
    """For the supervisor of a worker that died (issue 17): the node's own live leases, nobody else's."""
    from usenet_indexer.wire.held import Held, decode_held

    assert decode_held(client.get(f"{API}/leases", headers=auth).content) == Held()
    plan(services, high=1_999)
    mine = lease(client, auth)
    other_node = services.nodes.add("edge-2")[0]
    assert services.ranges.lease(other_node) is not None
    assert decode_held(client.get(f"{API}/leases", headers=auth).content) == Held(
        frozenset({(mine["id"], mine["epoch"])})
    )
    client.post(f"{API}/ranges/{mine['id']}/release", params={"epoch": mine["epoch"]}, headers=auth)
    assert decode_held(client.get(f"{API}/leases", headers=auth).content) == Held()


def test_a_grant_asked_under_a_claim_tag_is_found_by_its_revoke_and_given_back_only_with_it(
    client: TestClient, services: Services, auth: dict[str, str]
) -> None:
    """For the supervisor of a worker that died before reading a grant (issue 17, leases/claims.py):
    the tag is optional, checked, and revoked per node; a revoked tag is granted nothing."""
    from usenet_indexer.wire.held import Held, decode_held

    plan(services, high=2_999)
    tag = "ab" * 16
    response = client.post(f"{API}/lease", params={"claim": tag}, headers=auth)
    claimed = response.json()["range"]
    untagged = lease(client, auth)  # an older worker of the same node
    assert client.post(f"{API}/lease", params={"claim": "NOT-HEX"}, headers=auth).status_code == 422
    revoked = client.post(f"{API}/claims/{tag}/revoke", headers=auth)
    assert decode_held(revoked.content) == Held(frozenset({(claimed["id"], claimed["epoch"])}))
    assert client.post(f"{API}/claims/{tag}/revoke").status_code == 401
    release = f"{API}/ranges/{untagged['id']}/release"
    wrong = client.post(release, params={"epoch": untagged["epoch"], "claim": tag}, headers=auth)
    assert wrong.status_code == 409
    assert client.post(f"{API}/lease", params={"claim": tag}, headers=auth).status_code == 204
    params = {"epoch": claimed["epoch"], "claim": tag, "reclaim": "true"}
    given = client.post(f"{API}/ranges/{claimed['id']}/release", params=params, headers=auth)
    assert given.json() == {"ok": True, "outcome": "released"}
    other_node = services.nodes.add("edge-2")[0]
    assert services.ranges.lease(other_node, tag) is not None  # revoked for its node only


def test_another_node_presenting_a_nodes_claim_tag_gets_neither_its_grant_nor_its_revoke(
    client: TestClient, services: Services, auth: dict[str, str]
) -> None:
    """A retry is answered with the grant its tag already holds (migration 0019), but only for the node
    that asked: a node that learned another's tag (a log, the held file) and sends it as a retry is
    granted a range of its own, and its revoke of that tag finds and ends nothing of the other's."""
    from usenet_indexer.wire.held import Held, decode_held

    plan(services, high=2_999)
    tag = "cd" * 16
    first = client.post(f"{API}/lease", params={"claim": tag}, headers=auth).json()
    other = {"Authorization": f"Bearer {services.nodes.add('edge-hostile')[1]}"}
    stolen = client.post(f"{API}/lease", params={"claim": tag}, headers=other).json()
    assert stolen["replayed"] is False
    assert stolen["range"]["id"] != first["range"]["id"]
    revoked = client.post(f"{API}/claims/{tag}/revoke", headers=other)
    assert decode_held(revoked.content) == Held(
        frozenset({(stolen["range"]["id"], stolen["range"]["epoch"])})
    )
    retry = client.post(f"{API}/lease", params={"claim": tag}, headers=auth).json()
    assert retry["replayed"] is True
    assert (retry["range"]["id"], retry["range"]["epoch"]) == (first["range"]["id"], first["range"]["epoch"])
    heartbeat = f"{API}/ranges/{first['range']['id']}/heartbeat"
    assert client.post(heartbeat, params={"epoch": first["range"]["epoch"]}, headers=auth).status_code == 200


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/ranges/0/heartbeat", {"epoch": 1}),
        ("/ranges/abc/heartbeat", {"epoch": 1}),
        ("/ranges/1/heartbeat", {"epoch": 0}),
        ("/ranges/1/heartbeat", {}),
        ("/ranges/99999999999999999999999/heartbeat", {"epoch": 1}),
    ],
)
def test_malformed_ids_are_4xx(
    client: TestClient, auth: dict[str, str], path: str, params: dict[str, int]
) -> None:
    response = client.post(f"{API}{path}", params=params, headers=auth)
    assert 400 <= response.status_code < 500


def test_stream_sends_spooled_chunks_from_the_resume_point(
    client: TestClient, services: Services, auth: dict[str, str]
) -> None:
    plan(services)
    granted = lease(client, auth)
    spans = chunk_spans(granted["start"], granted["end"], services.settings.chunk_articles)
    for span in spans:
        services.spool.write(granted["id"], span, deflate_plain(overview(span.first, span.last)))
    services.ranges.commit_batch(granted["id"], 1, granted["epoch"], 1, 299, 299)
    response = client.get(
        f"{API}/ranges/{granted['id']}/stream", params={"epoch": granted["epoch"]}, headers=auth
    )
    assert response.status_code == 200
    frames = decode(response.content)
    assert [(f[1], f[2]) for f in frames if f[0] == FrameType.CHUNK] == [(s.first, s.last) for s in spans[3:]]
    assert frames[-1][0] == FrameType.END
    assert inflate_chunk(frames[0][3]) == overview(300, 399)


def test_stream_waits_for_the_spool_with_keepalives(
    client: TestClient, services: Services, auth: dict[str, str]
) -> None:
    plan(services, high=199)
    granted = lease(client, auth)
    spans = chunk_spans(granted["start"], granted["end"], services.settings.chunk_articles)
    services.spool.write(granted["id"], spans[0], deflate_plain(overview(1, 99)))

    def later() -> None:
        time.sleep(0.7)
        services.spool.write(granted["id"], spans[1], deflate_plain(overview(100, 199)))

    threading.Thread(target=later).start()
    response = client.get(
        f"{API}/ranges/{granted['id']}/stream", params={"epoch": granted["epoch"]}, headers=auth
    )
    kinds = [f[0] for f in decode(response.content)]
    assert kinds[0] == FrameType.CHUNK
    assert FrameType.KEEPALIVE in kinds
    assert kinds[-2:] == [FrameType.CHUNK, FrameType.END]


def test_stream_gives_up_after_the_wait_without_an_end_frame(
    client: TestClient, services: Services, auth: dict[str, str]
) -> None:
    plan(services, high=99)
    granted = lease(client, auth)
    response = client.get(
        f"{API}/ranges/{granted['id']}/stream", params={"epoch": granted["epoch"]}, headers=auth
    )
    decoder = FrameDecoder()
    decoder.feed(response.content)
    with pytest.raises(FrameError):
        decoder.close()


def test_stream_of_a_lost_lease_is_409(client: TestClient, services: Services, auth: dict[str, str]) -> None:
    plan(services)
    granted = lease(client, auth)
    backdate(services.db, granted["id"], TTL + 1)
    response = client.get(
        f"{API}/ranges/{granted['id']}/stream", params={"epoch": granted["epoch"]}, headers=auth
    )
    assert response.status_code == 409
    assert "expired" in response.json()["error"]


def test_corrupt_drops_the_chunk_and_replans(
    client: TestClient, services: Services, auth: dict[str, str]
) -> None:
    plan(services)
    granted = lease(client, auth)
    span = chunk_spans(granted["start"], granted["end"], services.settings.chunk_articles)[2]
    services.spool.write(granted["id"], span, b"UIC\x01garbage")
    report = client.post(
        f"{API}/ranges/{granted['id']}/corrupt",
        params={"epoch": granted["epoch"]},
        json={"from": span.first},
        headers=auth,
    )
    assert report.status_code == 200
    assert report.json()["failed"] is False
    assert not services.spool.has(granted["id"], span)
    assert services.ranges.plain_chunks(granted["id"]) == [span.first]
    bad = client.post(
        f"{API}/ranges/{granted['id']}/corrupt",
        params={"epoch": granted["epoch"]},
        json={"from": "x"},
        headers=auth,
    )
    assert bad.status_code in (409, 422)


def test_corrupt_leaves_a_copy_stored_since_the_stream(
    client: TestClient, services: Services, auth: dict[str, str]
) -> None:
    import zlib

    plan(services)
    granted = lease(client, auth)
    span = chunk_spans(granted["start"], granted["end"], services.settings.chunk_articles)[2]
    streamed = b"UIC\x01garbage"
    plain = deflate_plain(overview(span.first, span.last), 1)
    services.spool.write(granted["id"], span, plain)  # the prefetcher's plain copy, after the stream
    report = client.post(
        f"{API}/ranges/{granted['id']}/corrupt",
        params={"epoch": granted["epoch"]},
        json={"from": span.first, "crc": zlib.crc32(streamed)},
        headers=auth,
    )
    assert report.status_code == 200
    assert services.spool.read(granted["id"], span) == plain


def test_lanes_and_snapshots(client: TestClient, services: Services, auth: dict[str, str]) -> None:
    plan(services, high=2_999)
    bad = client.post(f"{API}/groups/lease", params={"lane": "sideways"}, headers=auth)
    assert (bad.status_code, bad.json()) == (400, {"error": "lane: history or tail, not 'sideways'"})
    held = client.post(f"{API}/groups/lease", params={"lane": "history"}, headers=auth).json()
    group, epoch = held["group"]["id"], held["group"]["epoch"]
    assert held["snapshot"] is None
    lane = {"lane": "history", "epoch": epoch}
    assert client.get(f"{API}/groups/{group}/snapshot", params=lane, headers=auth).status_code == 404
    first = client.post(f"{API}/groups/{group}/next", params=lane, headers=auth).json()["range"]
    assert first["start"] == 1
    body = b"window-state" * 1000
    put = client.put(
        f"{API}/groups/{group}/snapshot", params={**lane, "next": 1000}, content=body, headers=auth
    )
    assert put.json() == {"ok": True, "next": 1000, "size": len(body)}
    got = client.get(f"{API}/groups/{group}/snapshot", params=lane, headers=auth)
    assert got.content == body
    assert got.headers["X-Snapshot-Next"] == "1000"
    assert got.headers["Content-Length"] == str(len(body))
    assert client.post(f"{API}/groups/{group}/heartbeat", params=lane, headers=auth).json() == {"ok": True}
    stale = client.post(f"{API}/groups/{group}/heartbeat", params={**lane, "epoch": epoch + 1}, headers=auth)
    assert stale.status_code == 409
    assert client.post(f"{API}/groups/{group}/release", params=lane, headers=auth).json() == {"ok": True}


def test_snapshot_over_the_cap_is_413_and_stores_nothing(
    database_url: str,
    tmp_path: Path,
    auth: dict[str, str],
) -> None:
    from tests.support.store import services_for
    from usenet_indexer.coordinator.http.app import create_app

    services = services_for(database_url, tmp_path, snapshot_max_bytes=2048)
    try:
        _, token = services.nodes.add("edge-cap")
        headers = {"Authorization": f"Bearer {token}"}
        plan(services)
        with TestClient(create_app(services)) as client:
            held = client.post(f"{API}/groups/lease", params={"lane": "history"}, headers=headers).json()
            params = {"lane": "history", "epoch": held["group"]["epoch"], "next": 5}
            response = client.put(
                f"{API}/groups/{held['group']['id']}/snapshot",
                params=params,
                content=b"x" * 5000,
                headers=headers,
            )
            assert response.status_code == 413
            assert services.blobs.list("snapshots") == []
    finally:
        services.close()


def test_metrics_count_what_the_node_api_did(
    client: TestClient, services: Services, auth: dict[str, str]
) -> None:
    plan(services)
    granted = lease(client, auth)
    client.post(
        f"{API}/ranges/{granted['id']}/heartbeat", params={"epoch": granted["epoch"] + 5}, headers=auth
    )
    scraper = TestClient(client.app, client=("127.0.0.1", 9090))  # /metrics is for this machine
    text = scraper.get("/metrics").text
    assert 'usenet_indexer_leases_granted_total{took_over="false"} 1.0' in text
    assert "usenet_indexer_leases_lost_total 1.0" in text
    assert 'usenet_indexer_ranges{status="leased"} 1.0' in text
    assert "usenet_indexer_live_leases 1.0" in text
    assert "usenet_indexer_node_api_seconds_count" in text


def test_a_server_error_is_a_500_never_a_lost_lease(services: Services, auth: dict[str, str]) -> None:
    """Issue 14.6: a read that failed on the server (an undefined table or function, a privilege; a
    rolling deploy one migration apart) was read as "no rows": a batch was answered 409 "unknown range"
    and the worker dropped its range. It is a 500 now, which the worker retries."""
    from usenet_indexer.coordinator.http.app import create_app
    from usenet_indexer.indexing import Batch
    from usenet_indexer.wire.batch import encode_batch

    plan(services)
    with TestClient(create_app(services), raise_server_exceptions=False) as client:
        granted = lease(client, auth)
        migrate(services, "ALTER TABLE groups RENAME TO groups_elsewhere")
        batch = Batch(
            from_id=granted["next"],
            to_id=granted["next"] + 9,
            headers=0,
            malformed={},
            gaps=10,
            undated=0,
            unmatched=0,
            fragments=(),
            candidates=(),
        )
        response = client.post(
            f"{API}/ranges/{granted['id']}/batches",
            params={"epoch": granted["epoch"]},
            content=encode_batch(batch, granted["id"], granted["epoch"]),
            headers=auth,
        )
        assert response.status_code == 500
    migrate(services, "ALTER TABLE groups_elsewhere RENAME TO groups")
    with TestClient(create_app(services)) as client:
        # Nothing was stored, and the lease is still the worker's: its retry goes through.
        again = client.post(
            f"{API}/ranges/{granted['id']}/batches",
            params={"epoch": granted["epoch"]},
            content=encode_batch(batch, granted["id"], granted["epoch"]),
            headers=auth,
        )
        assert again.status_code == 200, again.text
        assert again.json()["next"] == granted["next"] + 10


def migrate(services: Services, ddl: str) -> None:
    """DDL from a connection of its own, as a migration run by another process would be. (Through the
    pool's pipelined connections psycopg 3.3 sends DEALLOCATE ALL after a DDL result and behind a
    statement it has just prepared: the next use of that statement fails on the server.)"""
    if services.db.dialect == "sqlite":
        query(services.db, ddl)
        return
    import psycopg

    with psycopg.connect(services.db.url, autocommit=True) as conn:
        conn.execute(ddl)


def test_a_hostile_batch_is_refused_before_it_costs_anything(
    client: TestClient, services: Services, auth: dict[str, str]
) -> None:
    """Issue 15.1: a 73 KB body inflating to 75 MB of empty lists cost 1.95 GB before its 400; and any
    node could post it, to a range that does not exist."""
    import struct
    import zlib

    from usenet_indexer.wire.batch import MAGIC

    text = b'{"range_id":1,"epoch":1,"batch":{"fragments":[' + b"[]," * 25_000_000 + b"[]]}}"
    head = zlib.compress(text, 9)
    body = MAGIC + struct.pack("<I", len(head)) + head
    unleased = client.post(f"{API}/ranges/1/batches", params={"epoch": 1}, content=body, headers=auth)
    assert (unleased.status_code, unleased.json()) == (409, {"error": "unknown range 1"})
    plan(services)
    granted = lease(client, auth)
    began = time.monotonic()
    refused = client.post(
        f"{API}/ranges/{granted['id']}/batches",
        params={"epoch": granted["epoch"]},
        content=body,
        headers=auth,
    )
    assert refused.status_code == 400
    assert "inflates to 16 times its size at most" in refused.json()["error"]
    assert time.monotonic() - began < 2.0
    nested = zlib.compress(b"[" * 200_000 + b"]" * 200_000, 9)  # a RecursionError, answered 500
    deep = client.post(
        f"{API}/ranges/{granted['id']}/batches",
        params={"epoch": granted["epoch"]},
        content=MAGIC + struct.pack("<I", len(nested)) + nested,
        headers=auth,
    )
    assert deep.status_code == 400


def _fragment(group: str, poster: str, collection: str, articles: range, key: str | None = None) -> object:
    from usenet_indexer.indexing import FileFragment, ReleaseFragment
    from usenet_indexer.indexing.fragment import int_array
    from usenet_indexer.indexing.indexer import release_key

    parts = list(range(1, len(articles) + 1))
    file = FileFragment(
        name=f"{collection}.rar",
        index=1,
        parts_total=len(parts),
        parts=int_array(parts),
        sizes=int_array([700_000] * len(parts)),
        articles=int_array(articles),
        message_ids=b"\n".join(b"%s-%d@post" % (poster.encode(), a) for a in articles),
    )
    return ReleaseFragment(
        key=key or release_key(poster, collection, 1),
        name=collection,
        poster=poster,
        groups=(group,),
        file_total=1,
        first_article=articles[0],
        first_date=1_700_000_000,
        last_article=articles[-1],
        last_date=1_700_000_000,
        obfuscated=False,
        request_id=None,
        files=(file,),
        collection=collection,
    )


def _post(
    client: TestClient, auth: dict[str, str], granted: dict[str, int], fragments: list[object]
) -> object:
    from usenet_indexer.indexing import Batch
    from usenet_indexer.wire.batch import encode_batch

    batch = Batch(
        from_id=granted["next"],
        to_id=granted["end"],
        headers=0,
        malformed={},
        gaps=0,
        undated=0,
        unmatched=0,
        fragments=tuple(fragments),  # type: ignore[arg-type]
        candidates=(),
    )
    return client.post(
        f"{API}/ranges/{granted['id']}/batches",
        params={"epoch": granted["epoch"]},
        content=encode_batch(batch, granted["id"], granted["epoch"]),
        headers=auth,
    )


def test_a_node_cannot_write_into_a_release_others_built(client: TestClient, services: Services) -> None:
    """Issue 15.2: a node posted a fragment under the key of an existing release, with another poster
    and files pointing at its own message-ids; it was merged, and t=get listed the node's files."""
    from tests.support.store import query

    plan(services, high=1_999)
    group = "alt.binaries.test"
    honest = {"Authorization": f"Bearer {services.nodes.add('honest')[1]}"}
    hostile = {"Authorization": f"Bearer {services.nodes.add('hostile')[1]}"}
    first = lease(client, honest)
    built = _fragment(
        group, "uploader@example.com", "Popular.Release.2024", range(first["start"], first["start"] + 5)
    )
    assert _post(client, honest, first, [built]).status_code == 200  # type: ignore[attr-defined]
    before = query(services.db, "SELECT name, poster, segments FROM releases")
    second = lease(client, hostile)
    assert second["id"] != first["id"]
    forged = _fragment(
        group,
        "hostile@evil",
        "whatever",
        range(second["start"], second["start"] + 3),
        key=built.key,  # type: ignore[attr-defined]
    )
    refused = _post(client, hostile, second, [forged])
    assert refused.status_code == 400  # type: ignore[attr-defined]
    assert "makes release keys itself" in refused.json()["error"]  # type: ignore[attr-defined]
    outside = _fragment(group, "hostile@evil", "Own.Release", range(first["start"], first["start"] + 3))
    refused = _post(client, hostile, second, [outside])
    assert refused.status_code == 400  # type: ignore[attr-defined]
    assert "outside this lease's articles" in refused.json()["error"]  # type: ignore[attr-defined]
    assert query(services.db, "SELECT name, poster, segments FROM releases") == before
    own = _fragment(group, "hostile@evil", "Own.Release", range(second["start"], second["start"] + 3))
    assert _post(client, hostile, second, [own]).status_code == 200  # type: ignore[attr-defined]
